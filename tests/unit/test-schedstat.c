/* lib/schedstat.c and lib/drift.c: schedstat parsing and rates, the drift
 * comparison and the /proc status lists it reads. */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kvmtune/drift.h"
#include "kvmtune/schedstat.h"
#include "kvmtune/topo.h"
#include "kvmtune/util.h"
#include "../../lib/schedstat-priv.h"
#include "tap.h"

static void test_parse(void) {
        struct schedstat s = { 0 };

        is_int(schedstat_parse("1176489 214523 17\n", &s), 0, "parses the kernel's line");
        ok(s.run_ns == 1176489 && s.delay_ns == 214523 && s.slices == 17, "run, delay, slices in order");
        is_int(schedstat_parse("18446744073709551615 0 0", &s), 0, "u64 counters, no newline");
        ok(s.run_ns == UINT64_MAX, "the full u64 range");
        s = (struct schedstat){ .run_ns = 7 };
        is_int(schedstat_parse("1 2\n", &s), -EINVAL, "two fields: -EINVAL");
        is_int(schedstat_parse("1 2 3 4\n", &s), -EINVAL, "four fields: -EINVAL");
        is_int(schedstat_parse("1 -2 3\n", &s), -EINVAL, "a negative field: -EINVAL");
        is_int(schedstat_parse("1 2x 3\n", &s), -EINVAL, "trailing junk in a field: -EINVAL");
        is_int(schedstat_parse("18446744073709551616 0 0\n", &s), -EINVAL, "overflow: -EINVAL");
        is_int(schedstat_parse("", &s), -EINVAL, "empty: -EINVAL");
        is_int((int)s.run_ns, 7, "the output is untouched on failure");
}

static void test_read(void) {
        char root[] = "/tmp/test-schedstat.XXXXXX", path[256];
        struct schedstat s = { 0 };
        FILE *f;

        ok(mkdtemp(root) != NULL, "a temporary root");
        snprintf(path, sizeof path, "%s/proc/42/task/43", root);
        for (char *p = strchr(path + strlen(root) + 1, '/'); p; p = strchr(p + 1, '/')) {
                *p = '\0';
                mkdir(path, 0755);
                *p = '/';
        }
        mkdir(path, 0755);
        strcat(path, "/schedstat");
        f = fopen(path, "w");
        fputs("500 250 3\n", f);
        fclose(f);
        is_int(schedstat_read(root, 42, 43, &s), 0, "reads /proc/PID/task/TID/schedstat below the root");
        ok(s.run_ns == 500 && s.delay_ns == 250 && s.slices == 3, "with the file's counters");
        is_int(schedstat_read(root, 42, 44, &s), -ENOENT, "a thread that is gone: -ENOENT");
        unlink(path);
        snprintf(path, sizeof path, "rm -r %s", root);
        ok(system(path) == 0, "cleaned up");
}

static void test_rate(void) {
        struct schedstat a = { .run_ns = 1000000000, .delay_ns = 0 }, b = a, sum = { 0 };
        struct schedstat_rate r = { 0 };

        b.run_ns += 500000000;          /* 0.5 s of 1 s running */
        b.delay_ns += 250000000;        /* 0.25 s waiting */
        is_int(schedstat_rate(&a, &b, 1, 1000000000, &r), 0, "one vCPU over 1 s");
        ok(fabs(r.busy_pct - 50) < 1e-9 && fabs(r.delay_pct - 25) < 1e-9,
           "busy 50%%, delay 25%% (%.1f, %.1f)", r.busy_pct, r.delay_pct);
        is_int(schedstat_rate(&a, &b, 2, 1000000000, &r), 0, "two vCPUs share the interval");
        ok(fabs(r.busy_pct - 25) < 1e-9 && fabs(r.delay_pct - 12.5) < 1e-9,
           "averaged over the vCPUs: 25%%, 12.5%% (%.1f, %.1f)", r.busy_pct, r.delay_pct);
        is_int(schedstat_rate(&b, &a, 1, 1000000000, &r), -ERANGE, "counters going backwards (new threads): -ERANGE");
        is_int(schedstat_rate(&a, &b, 0, 1000000000, &r), -EINVAL, "no vCPU: -EINVAL");
        is_int(schedstat_rate(&a, &b, 1, 0, &r), -EINVAL, "no interval: -EINVAL");
        schedstat_add(&sum, &a);
        schedstat_add(&sum, &b);
        ok(sum.run_ns == 2500000000ULL && sum.delay_ns == 250000000, "schedstat_add sums the counters");
}

static hwloc_bitmap_t set(const char *list) {
        hwloc_bitmap_t b = hwloc_bitmap_alloc();

        hwloc_bitmap_list_sscanf(b, list);
        return b;
}

static void test_drift(void) {
        struct drift_report r = { 0 };
        _cleanup_bitmap_ hwloc_bitmap_t one = set("1"), both = set("0-1"), none = hwloc_bitmap_alloc();

        is_int(drift_check(&r, "vcpu 0", DRIFT_EQUAL, one, one), 0, "same set: no drift");
        is_int(drift_check(&r, "vcpu 1", DRIFT_EQUAL, one, both), 1, "a wider affinity (taskset) drifted");
        is_int(drift_check(&r, "cgroup cpuset.cpus", DRIFT_COVERS, one, both), 0,
               "a parent cgroup holding the placement is fine");
        is_int(drift_check(&r, "cgroup cpuset.mems", DRIFT_COVERS, both, one), 1,
               "a parent cgroup narrower than the placement drifted");
        is_int(drift_check(&r, "memory", DRIFT_EQUAL, one, none), 1, "an empty set drifted");
        drift_unreadable(&r, "cgroup vcpu0 cpuset.cpus", one, "No such file or directory");
        is_int(r.checked, 6, "every comparison counted");
        is_int(r.n, 4, "the drifted ones recorded");
        is_str(r.items[0].what, "vcpu 1", "what drifted");
        is_str(r.items[0].want, "1", "the placement, as a list");
        is_str(r.items[0].got, "0-1", "the live value, as a list");
        is_str(r.items[2].got, "", "an empty live set is an empty list");
        is_str(r.items[3].got, "(No such file or directory)", "an unreadable side says why");
        drift_report_done(&r);
        ok(r.n == 0 && r.items == NULL && r.checked == 0, "drift_report_done empties the report");
}

static void test_status(void) {
        static const char status[] = "Name:\tqemu-system-x86\nCpus_allowed:\t3\n"
                                     "Cpus_allowed_list:\t0-1\nMems_allowed_list:\t0\n";
        hwloc_bitmap_t b = NULL;
        char *s = NULL;

        is_int(drift_status_list(status, "Cpus_allowed_list", &b), 0, "Cpus_allowed_list found");
        hwloc_bitmap_list_asprintf(&s, b);
        is_str(s, "0-1", "its value (not Cpus_allowed's mask)");
        free(s);
        hwloc_bitmap_free(b);
        is_int(drift_status_list(status, "Mems_allowed_list", &b), 0, "Mems_allowed_list, the last line");
        ok(hwloc_bitmap_weight(b) == 1 && hwloc_bitmap_isset(b, 0), "node 0");
        hwloc_bitmap_free(b);
        is_int(drift_status_list("Name:\tx\n", "Cpus_allowed_list", &b), -ENODATA, "absent: -ENODATA");
        is_int(drift_status_list("Cpus_allowed_list:\t\n", "Cpus_allowed_list", &b), -EINVAL,
               "an empty value, at the start of the text: -EINVAL");
        is_int(drift_parse_list("0-2,5\n", &b), 0, "a cpuset.cpus file");
        is_int(hwloc_bitmap_weight(b), 4, "0-2,5: four CPUs");
        hwloc_bitmap_free(b);
        is_int(drift_parse_list("\n", &b), 0, "an empty cpuset file");
        ok(hwloc_bitmap_iszero(b), "is the empty set");
        hwloc_bitmap_free(b);
        b = NULL;
        is_int(drift_parse_list("zero\n", &b), -EINVAL, "junk: -EINVAL");
        ok(b == NULL, "the output is untouched on failure");
}

int main(void) {
        test_parse();
        test_read();
        test_rate();
        test_drift();
        test_status();
        return tap_done();
}
