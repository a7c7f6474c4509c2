/* Scheduler statistics of a thread (/proc/PID/task/TID/schedstat) and what an
 * operator reads from them: how busy a guest's vCPUs were and how long they
 * waited, runnable, for a CPU (run-queue delay: what the guest feels as
 * steal time). Parsing and the rates are pure; schedstat_read goes through
 * hostfs, so tests use fixture trees. */
#pragma once

#include <stdint.h>
#include <sys/types.h>

/* The kernel's three counters, since the thread started. */
struct schedstat {
        uint64_t run_ns;                /* time on a CPU */
        uint64_t delay_ns;              /* time runnable, waiting on a run queue */
        uint64_t slices;                /* times it was scheduled in */
};

/* Reads /proc/PID/task/TID/schedstat below root (NULL: the host). 0, -EINVAL,
 * or the read error (-ENOENT: the thread is gone, or no CONFIG_SCHED_INFO). */
int schedstat_read(const char *root, pid_t pid, pid_t tid, struct schedstat *ret);
/* sum += s. */
void schedstat_add(struct schedstat *sum, const struct schedstat *s);

/* Per cent of the interval, averaged over nvcpu vCPUs. */
struct schedstat_rate {
        double busy_pct;                /* running: 100 = every vCPU always on a CPU */
        double delay_pct;               /* runnable but waiting for a CPU */
};

/* The rates between two samples of the summed counters of nvcpu vCPUs taken
 * interval_ns apart. -EINVAL for no vCPU or no interval, -ERANGE when a
 * counter went backwards (the guest restarted, its threads are new). */
int schedstat_rate(const struct schedstat *before, const struct schedstat *after, int nvcpu,
                   uint64_t interval_ns, struct schedstat_rate *ret);
