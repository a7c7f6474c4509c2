/* Drift: what the live system has (thread affinities, cgroup cpusets, the
 * memory nodes a process may use) compared with the placement kvmtuned
 * applied. Pure: the callers read both sides (kvmtunectl verify asks the
 * daemon, which reads /proc and the cgroup files). */
#pragma once

#include <stdbool.h>
#include <hwloc.h>

enum drift_rule {
        DRIFT_EQUAL,                    /* got must be want (a thread, a child cgroup) */
        DRIFT_COVERS,                   /* got must hold want: the domain's own cgroup,
                                         * which kvmtuned widens and never narrows */
};

struct drift {
        char *what;                     /* "vcpu 0 (tid 1234)", "cgroup emulator cpuset.cpus" */
        char *want;                     /* list syntax, "0-3,8" */
        char *got;                      /* list syntax, "" for an empty set */
};

struct drift_report {
        int checked;                    /* comparisons made */
        int n;
        struct drift *items;            /* the ones that drifted */
};

/* Compares one want/got pair under rule and records it in r when it drifted.
 * Returns 1 drifted, 0 as placed. */
int drift_check(struct drift_report *r, const char *what, enum drift_rule rule,
                hwloc_const_bitmap_t want, hwloc_const_bitmap_t got);
/* Records a side that could not be read (got: why) as drifted. */
void drift_unreadable(struct drift_report *r, const char *what, hwloc_const_bitmap_t want, const char *why);
void drift_report_done(struct drift_report *r);

/* A list file's text ("0-3,8\n", a cgroup's cpuset.cpus; "\n": the empty
 * set). *ret is a new bitmap. 0 or -EINVAL. */
int drift_parse_list(const char *text, hwloc_bitmap_t *ret);
/* The list after "KEY:" in /proc/PID/status text ("Cpus_allowed_list",
 * "Mems_allowed_list"). *ret is a new bitmap. 0, -ENODATA, -EINVAL. */
int drift_status_list(const char *status, const char *key, hwloc_bitmap_t *ret);
