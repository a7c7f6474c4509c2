/* The QEMU process of a libvirt domain: see qemupid.h. */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <strings.h>

#include "kvmtune/hostfs.h"
#include "kvmtune/qemupid.h"
#include "qemupid-priv.h"
#include "kvmtune/util.h"

/* A pid as text: 1..INT_MAX. */
static int pid_parse(const char *s, pid_t *ret) {
        uint64_t v;

        if (safe_atou64(s, &v) < 0 || v < 1 || v > INT_MAX)
                return -EINVAL;
        *ret = (pid_t)v;
        return 0;
}

/* The value of attribute attr (" pid=") inside the tag [tag, end), quoted
 * either way, copied into buf. 0 or -EINVAL. */
static int tag_attr(const char *tag, const char *end, const char *attr, char *buf, size_t len) {
        size_t n = strlen(attr), k;
        const char *p, *q;

        for (p = tag; (p = memmem(p, end - p, attr, n)); p += n) {
                if (p[-1] != ' ' && p[-1] != '\t' && p[-1] != '\n')
                        continue;
                p += n;
                if (p >= end || (*p != '\'' && *p != '"'))
                        return -EINVAL;
                q = memchr(p + 1, *p, end - p - 1);
                k = q ? (size_t)(q - p - 1) : len;
                if (k >= len)
                        return -EINVAL;
                memcpy(buf, p + 1, k);
                buf[k] = '\0';
                return 0;
        }
        return -EINVAL;
}

int qemupid_parse_status(const char *xml, pid_t *ret) {
        const char *tag = strstr(xml, "<domstatus"), *end;
        char value[16];

        if (!tag || !(end = strchr(tag, '>')))
                return -EINVAL;
        tag += strlen("<domstatus");
        if (tag[0] != ' ' && tag[0] != '\t' && tag[0] != '\n')
                return -EINVAL;
        if (tag_attr(tag, end, "pid=", value, sizeof value) < 0)
                return -EINVAL;
        return pid_parse(value, ret);
}

/* Argument [p, p + n) equals s (case-insensitively when nocase). */
static bool arg_is(const char *p, size_t n, const char *s, bool nocase) {
        return n == strlen(s) && (nocase ? strncasecmp(p, s, n) : strncmp(p, s, n)) == 0;
}

bool qemupid_cmdline_has_uuid(const char *cmd, size_t len, const char *uuid) {
        const char *end = cmd + len;
        bool after_option = false;

        for (const char *p = cmd; p < end;) {
                size_t n = strnlen(p, end - p);

                if (after_option && arg_is(p, n, uuid, true))
                        return true;
                after_option = arg_is(p, n, "-uuid", false);
                p += n + 1;
        }
        return false;
}

/* The pid in a pid file's text ("1234\n"). */
static int pidfile_read(const char *root, const char *path, pid_t *ret) {
        _cleanup_free_ char *text = NULL;
        int r = hostfs_read(root, path, &text);

        return r < 0 ? r : pid_parse(text, ret);
}

int qemupid_read(const char *root, const char *dir, const char *name, pid_t *ret) {
        _cleanup_free_ char *status = xasprintf("%s/%s.xml", dir, name);
        _cleanup_free_ char *pidfile = xasprintf("%s/%s.pid", dir, name);
        _cleanup_free_ char *text = NULL;
        int r;

        if (!*name || strchr(name, '/'))
                return -EINVAL;
        r = hostfs_read(root, status, &text);
        if (r >= 0)
                r = qemupid_parse_status(text, ret);
        if (r >= 0)
                return 0;
        return pidfile_read(root, pidfile, ret);
}

bool qemupid_is_domain(const char *root, pid_t pid, const char *uuid) {
        _cleanup_free_ char *path = xasprintf("/proc/%d/cmdline", (int)pid), *cmd = NULL;
        int len;

        if (pid <= 1 || (len = hostfs_read(root, path, &cmd)) < 0)
                return false;
        return qemupid_cmdline_has_uuid(cmd, (size_t)len, uuid);
}
