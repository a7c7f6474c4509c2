#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/uio.h>
#include <systemd/sd-journal.h>

#include "kvmtune/log.h"

static enum log_target log_target = LOG_TARGET_STDERR;
static int log_max_level = LOG_INFO;

void log_setup(enum log_target target, int max_level) {
        if (target == LOG_TARGET_AUTO)
                target = getenv("JOURNAL_STREAM") ? LOG_TARGET_JOURNAL : LOG_TARGET_STDERR;
        log_target = target;
        log_max_level = max_level;
}

static void log_journal(int level, const char *domain, const char *uuid, int err, const char *msg) {
        char *f[6];
        struct iovec iov[6];
        int n = 0;

        f[n++] = xasprintf("MESSAGE=%s", msg);
        f[n++] = xasprintf("PRIORITY=%d", level);
        f[n++] = xstrdup("SYSLOG_IDENTIFIER=kvmtuned");
        if (domain)
                f[n++] = xasprintf("DOMAIN=%s", domain);
        if (uuid)
                f[n++] = xasprintf("DOMAIN_UUID=%s", uuid);
        if (err)
                f[n++] = xasprintf("ERRNO=%d", err);
        for (int i = 0; i < n; i++)
                iov[i] = (struct iovec){ .iov_base = f[i], .iov_len = strlen(f[i]) };
        sd_journal_sendv(iov, n);
        for (int i = 0; i < n; i++)
                free(f[i]);
}

int log_full(int level, const char *domain, const char *uuid, int err, const char *fmt, ...) {
        char msg[1024];
        va_list ap;

        err = err < 0 ? -err : err;
        if (level > log_max_level)
                return -err;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        if (log_target == LOG_TARGET_JOURNAL) {
                log_journal(level, domain, uuid, err, msg);
                return -err;
        }
        if (domain)
                fprintf(stderr, "kvmtuned: %s: %s%s%s\n", domain, msg, err ? ": " : "", err ? strerror(err) : "");
        else
                fprintf(stderr, "kvmtuned: %s%s%s\n", msg, err ? ": " : "", err ? strerror(err) : "");
        return -err;
}
