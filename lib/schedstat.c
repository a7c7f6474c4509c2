/* Scheduler statistics of a thread and the busy/delay rates (schedstat.h). */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "kvmtune/hostfs.h"
#include "kvmtune/schedstat.h"
#include "schedstat-priv.h"
#include "kvmtune/util.h"

int schedstat_parse(const char *text, struct schedstat *ret) {
        _cleanup_free_ char *copy = xstrdup(text);
        uint64_t v[3];
        char *save = NULL, *tok = strtok_r(copy, " \n", &save);
        int n = 0;

        for (; tok && n < 3; tok = strtok_r(NULL, " \n", &save), n++)
                if (safe_atou64(tok, &v[n]) < 0)
                        return -EINVAL;
        if (n != 3 || tok)
                return -EINVAL;
        *ret = (struct schedstat){ .run_ns = v[0], .delay_ns = v[1], .slices = v[2] };
        return 0;
}

int schedstat_read(const char *root, pid_t pid, pid_t tid, struct schedstat *ret) {
        _cleanup_free_ char *path = xasprintf("/proc/%d/task/%d/schedstat", (int)pid, (int)tid);
        _cleanup_free_ char *text = NULL;
        int r = hostfs_read(root, path, &text);

        return r < 0 ? r : schedstat_parse(text, ret);
}

void schedstat_add(struct schedstat *sum, const struct schedstat *s) {
        sum->run_ns += s->run_ns;
        sum->delay_ns += s->delay_ns;
        sum->slices += s->slices;
}

int schedstat_rate(const struct schedstat *before, const struct schedstat *after, int nvcpu,
                   uint64_t interval_ns, struct schedstat_rate *ret) {
        double span;

        if (nvcpu <= 0 || interval_ns == 0)
                return -EINVAL;
        if (after->run_ns < before->run_ns || after->delay_ns < before->delay_ns)
                return -ERANGE;
        span = (double)interval_ns * nvcpu / 100.0;
        ret->busy_pct = (double)(after->run_ns - before->run_ns) / span;
        ret->delay_pct = (double)(after->delay_ns - before->delay_ns) / span;
        return 0;
}
