/* The cost of kvmtuned's isolation rescan (daemon/isolate.c) on this host:
 * one pass over every task of the cgroup scope (default /, the whole host),
 * the IRQs and the workqueue cpumask, with the last online CPU taken as
 * dedicated. Read-only: the masks are read from the live host, the changes a
 * pass decides are kept in this process (a later pass sees them as applied),
 * nothing is written. Prints the first pass (decides and records every mask)
 * and the steady pass that runs every second (nothing to change), median of
 * RUNS. Figures only, never pass/fail.
 *
 *   make bench && ./bench/isolate [SCOPE] [RUNS]                     */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <time.h>

#include "../daemon/isolate.h"
#include "kvmtune/log.h"
#include "kvmtune/topo.h"
#include "kvmtune/util.h"

#define BUCKETS 65536

/* The masks "applied", by tid. */
struct applied {
        pid_t tid;
        hwloc_bitmap_t mask;
        struct applied *next;
};

static struct applied *table[BUCKETS];
static long nset, nwrite;

static struct applied *applied_find(pid_t tid) {
        for (struct applied *a = table[(unsigned)tid % BUCKETS]; a; a = a->next)
                if (a->tid == tid)
                        return a;
        return NULL;
}

static int bench_get(void *ud, pid_t tid, hwloc_bitmap_t ret) {
        struct applied *a = applied_find(tid);

        if (!a)
                return isolate_host_ops.get_affinity(ud, tid, ret);
        hwloc_bitmap_copy(ret, a->mask);
        return 0;
}

static int bench_set(_unused_ void *ud, pid_t tid, hwloc_const_bitmap_t cpus) {
        struct applied *a = applied_find(tid);

        nset++;
        if (!a) {
                a = xcalloc(1, sizeof *a);
                a->tid = tid;
                a->mask = hwloc_bitmap_alloc();
                a->next = table[(unsigned)tid % BUCKETS];
                table[(unsigned)tid % BUCKETS] = a;
        }
        hwloc_bitmap_copy(a->mask, cpus);
        return 0;
}

static int bench_write(_unused_ void *ud, _unused_ const char *path, _unused_ const char *value) {
        nwrite++;
        return 0;
}

static bool bench_systemd(_unused_ void *ud) {
        return false;
}

static int bench_unit(_unused_ void *ud, _unused_ const char *unit, _unused_ hwloc_bitmap_t ret) {
        return -ENOENT;
}

static int bench_unit_set(_unused_ void *ud, _unused_ const char *unit, _unused_ hwloc_const_bitmap_t cpus) {
        return -ENOENT;
}

static int bench_irqbalance(_unused_ void *ud, _unused_ const char *cmd, _unused_ pid_t *ret_pid, _unused_ char *reply, _unused_ size_t len) {
        return -ENOENT;
}

static const struct isolate_ops bench_ops = {
        .get_affinity = bench_get, .set_affinity = bench_set, .write_file = bench_write,
        .systemd = bench_systemd, .unit_get = bench_unit, .unit_set = bench_unit_set,
        .irqbalance = bench_irqbalance,
};

static double now_ms(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b) {
        double x = *(const double *)a, y = *(const double *)b;

        return x < y ? -1 : x > y;
}

static double pass_ms(struct isolate *s, unsigned what, const char *scope, hwloc_const_bitmap_t online,
                      hwloc_const_bitmap_t ded) {
        double t = now_ms();

        isolate_pass(s, what, scope, online, ded, NULL, 0);
        return now_ms() - t;
}

/* Median of runs passes, sorted into t. */
static double median_ms(struct isolate *s, unsigned what, const char *scope, hwloc_const_bitmap_t online,
                        hwloc_const_bitmap_t ded, double *t, int runs) {
        for (int i = 0; i < runs; i++)
                t[i] = pass_ms(s, what, scope, online, ded);
        qsort(t, (size_t)runs, sizeof *t, cmp_double);
        return t[runs / 2];
}

int main(int argc, char **argv) {
        const char *scope = argc > 1 ? argv[1] : "/";
        int runs = argc > 2 ? atoi(argv[2]) : 20, ncpu = (int)sysconf(_SC_NPROCESSORS_ONLN);
        char dir[] = "/tmp/bench-isolate.XXXXXX";
        _cleanup_bitmap_ hwloc_bitmap_t online = hwloc_bitmap_alloc(), ded = hwloc_bitmap_alloc();
        _cleanup_free_ char *record = NULL;
        _cleanup_free_ double *t = NULL;
        struct isolate *s = NULL;
        double first, steady;
        long tasks, changed;

        if (runs < 1 || ncpu < 2 || !mkdtemp(dir))
                return fprintf(stderr, "usage: bench/isolate [SCOPE] [RUNS >= 1]; needs 2 online CPUs\n"), 2;
        log_setup(LOG_TARGET_STDERR, LOG_WARNING);
        hwloc_bitmap_set_range(online, 0, ncpu - 1);
        hwloc_bitmap_set(ded, (unsigned)ncpu - 1);
        record = xasprintf("%s/isolation", dir);
        isolate_new(NULL, record, &bench_ops, NULL, &s);
        first = pass_ms(s, ISOLATE_TASKS, scope, online, ded);
        tasks = s->nknown;
        changed = nset;
        t = xcalloc((size_t)runs, sizeof *t);
        steady = median_ms(s, ISOLATE_TASKS, scope, online, ded, t, runs);
        printf("isolation rescan, scope %s, CPU %d taken as dedicated (nothing written)\n", scope, ncpu - 1);
        printf("%-46s %8ld\n", "tasks in scope", tasks);
        printf("%-46s %8ld\n", "task masks the first pass would change", changed);
        printf("%-46s %8.1f\n", "task masks a steady pass changes (new tasks)", (double)(nset - changed) / runs);
        printf("%-46s %8.2f ms\n", "first pass over the tasks", first);
        printf("%-46s %8.2f ms\n", "steady pass over the tasks, median", steady);
        printf("%-46s %8.2f ms\n", "steady pass over the tasks, max", t[runs - 1]);
        printf("%-46s %8.2f us\n", "per task", tasks ? 1e3 * steady / (double)tasks : 0);
        /* IRQ files are read back as they were (nothing is written), so every
         * pass decides them again: an upper bound. */
        printf("%-46s %8.2f ms\n", "IRQs and workqueue cpumask, per pass (bound)",
               median_ms(s, ISOLATE_IRQS | ISOLATE_WORKQUEUES, scope, online, ded, t, runs));
        isolate_pass(s, 0, scope, online, ded, NULL, 0);       /* empties the record (nothing written) */
        isolate_free(s);
        rmdir(dir);
        return 0;
}
