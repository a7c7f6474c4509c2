/* daemon/metrics.c: histograms, observation points and the Prometheus text
 * exposition rendered from plain inputs. The real daemon's output is checked
 * by tests/unit/test-metrics-cli.sh. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../daemon/metrics-priv.h"
#include "kvmtune/util.h"
#include "tap.h"

static bool has_line(const char *text, const char *line) {
        size_t n = strlen(line);

        for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
                if (strncmp(p, line, n) == 0 && (p[n] == '\n' || p[n] == '\0'))
                        return true;
        return false;
}

static int count_prefix(const char *text, const char *prefix) {
        int c = 0;

        for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
                c += strncmp(p, prefix, strlen(prefix)) == 0;
        return c;
}

static void test_histogram(void) {
        struct metrics_histogram h = { 0 };

        metrics_histogram_observe(&h, 0.001);   /* le is inclusive */
        metrics_histogram_observe(&h, 0.0011);
        metrics_histogram_observe(&h, 3);       /* only +Inf */
        metrics_histogram_observe(&h, -1);      /* clock trouble: 0 */
        metrics_histogram_observe(&h, NAN);
        is_int(h.count, 5, "histogram: five observations");
        is_int(h.bucket[0], 3, "histogram: 0.001, -1 and NaN in le=0.001");
        is_int(h.bucket[1], 1, "histogram: 0.0011 in le=0.0025");
        is_int(h.bucket[METRICS_NBUCKET], 1, "histogram: 3 s only in +Inf");
        ok(fabs(h.sum - 3.0021) < 1e-9, "histogram: sum of the non-negative seconds");
}

static void test_observe_event(void) {
        struct metrics m = { 0 };

        metrics_observe_pinned(&m, "u1", 0);
        is_int(m.latency[METRICS_PATH_EVENT].count, 0, "event: no event being handled, nothing observed");
        metrics_event_begin(&m, "u1");
        metrics_observe_pinned(&m, "u2", 0);
        is_int(m.latency[METRICS_PATH_EVENT].count, 0, "event: another domain's pins do not count");
        metrics_observe_pinned(&m, "u1", -5);
        is_int(m.latency[METRICS_PATH_EVENT].count, 0, "event: failed pins do not count");
        usleep(2000);
        metrics_observe_pinned(&m, "u1", 0);
        is_int(m.latency[METRICS_PATH_EVENT].count, 1, "event: the started domain's pins counted");
        ok(m.latency[METRICS_PATH_EVENT].sum >= 0.002 && m.latency[METRICS_PATH_EVENT].sum < 1,
           "event: latency measured on the monotonic clock (%g s)", m.latency[METRICS_PATH_EVENT].sum);
        metrics_observe_pinned(&m, "u1", 0);
        is_int(m.latency[METRICS_PATH_EVENT].count, 1, "event: observed once per event");
        metrics_event_begin(&m, "u3");
        metrics_event_end(&m);
        metrics_observe_pinned(&m, "u3", 0);
        is_int(m.latency[METRICS_PATH_EVENT].count, 1, "event: nothing after the event was handled");
}

static void test_observe_counters(void) {
        struct metrics m = { 0 };

        metrics_observe_hook(&m);
        is_int(m.latency[METRICS_PATH_HOOK].count, 0, "hook: nothing without a request");
        metrics_hook_begin(&m);
        metrics_observe_hook(&m);
        metrics_observe_hook(&m);
        is_int(m.latency[METRICS_PATH_HOOK].count, 1, "hook: one observation per request");
        metrics_observe_apply(&m, 0);
        metrics_observe_apply(&m, 0);
        metrics_observe_apply(&m, -5);
        metrics_observe_unplaced(&m);
        is_int(m.placements, 2, "apply: two successes");
        is_int(m.placement_failures, 1, "apply: one failure");
        is_int(m.unplaced, 1, "unplaced counted");
        metrics_observe_connect(&m);
        is_int(m.reconnects, 0, "connect: the first connection is no reconnect");
        metrics_observe_connect(&m);
        metrics_observe_connect(&m);
        is_int(m.reconnects, 2, "connect: later ones are");
}

static void test_escape(void) {
        _cleanup_free_ char *e = metrics_escape_label("a\\b\"c\nd");

        is_str(e, "a\\\\b\\\"c\\nd", "label values escape backslash, quote and newline");
}

static char *format_sample(struct metrics *m) {
        static const struct metrics_node nodes[] = {
                { .os = 0, .dedicated = 14, .dedicated_used = 4, .shared = 10, .reserved = 2,
                  .hp_total = { 512, 4 }, .hp_free = { 500, 2 } },
                { .os = 1, .dedicated = 16, .dedicated_used = 0, .shared = 16, .reserved = 0 },
        };
        static const char *const names[] = { "tuned", "shared", "ignored", "unplaced", "failed" };
        static const int counts[] = { 2, 1, 0, 0, 0 };
        static const struct metrics_vcpu vcpus[] = {
                { .domain = "db1", .vcpu = 0, .run_ns = 1500000000, .delay_ns = 2500000 },
                { .domain = "db1", .vcpu = 1, .run_ns = 7, .delay_ns = 0 },
                { .domain = "we\"b", .vcpu = 0, .run_ns = 0, .delay_ns = 42000000000ULL },
        };

        return metrics_format(&(struct metrics_input){
                .version = "1.2\"x", .connected = true, .uptime_sec = 42, .nnode = 2, .nodes = nodes,
                .nstate = 5, .state_names = names, .state_counts = counts, .m = m,
                .nvcpu = 3, .vcpus = vcpus });
}

static void test_format(void) {
        struct metrics m = { .placements = 3, .placement_failures = 1, .unplaced = 2, .reconnects = 1 };
        _cleanup_free_ char *t = NULL;

        metrics_histogram_observe(&m.latency[METRICS_PATH_EVENT], 0.003);
        metrics_histogram_observe(&m.latency[METRICS_PATH_EVENT], 0.2);
        t = format_sample(&m);
        ok(has_line(t, "kvmtuned_build_info{version=\"1.2\\\"x\"} 1"), "build info, version escaped");
        ok(has_line(t, "# HELP kvmtuned_libvirt_connected 1 when kvmtuned is connected to libvirt, else 0."),
           "connected: HELP names the metric itself");
        ok(has_line(t, "kvmtuned_libvirt_connected 1"), "connected gauge");
        ok(has_line(t, "kvmtuned_uptime_seconds 42"), "uptime");
        ok(has_line(t, "kvmtuned_node_dedicated_pus{node=\"0\"} 14"), "node 0 dedicated PUs");
        ok(has_line(t, "kvmtuned_node_dedicated_pus_used{node=\"0\"} 4"), "node 0 dedicated PUs used");
        ok(has_line(t, "kvmtuned_node_shared_pus{node=\"1\"} 16"), "node 1 shared pool");
        ok(has_line(t, "kvmtuned_node_reserved_pus{node=\"0\"} 2"), "node 0 reserved");
        ok(has_line(t, "kvmtuned_node_hugepages{node=\"0\",size=\"2M\"} 512"), "hugepages total per size");
        ok(has_line(t, "kvmtuned_node_hugepages_free{node=\"0\",size=\"1G\"} 2"), "hugepages free per size");
        ok(has_line(t, "kvmtuned_node_hugepages{node=\"1\",size=\"1G\"} 0"), "empty pools shown as 0");
        is_int(count_prefix(t, "kvmtuned_domains{"), 5, "every domain state present");
        ok(has_line(t, "kvmtuned_domains{state=\"unplaced\"} 0"), "a state without domains is 0");
        ok(has_line(t, "# TYPE kvmtuned_placements_total counter"), "placements: a counter");
        ok(has_line(t, "kvmtuned_placements_total 3"), "placements");
        ok(has_line(t, "kvmtuned_placement_failures_total 1"), "failures");
        ok(has_line(t, "kvmtuned_unplaced_total 2"), "unplaced");
        ok(has_line(t, "kvmtuned_libvirt_reconnects_total 1"), "reconnects");
        ok(has_line(t, "# TYPE kvmtuned_pin_latency_seconds histogram"), "latency: a histogram");
        ok(has_line(t, "kvmtuned_pin_latency_seconds_bucket{path=\"event\",le=\"0.0025\"} 0"), "bucket 0.0025");
        ok(has_line(t, "kvmtuned_pin_latency_seconds_bucket{path=\"event\",le=\"0.005\"} 1"), "bucket 0.005");
        ok(has_line(t, "kvmtuned_pin_latency_seconds_bucket{path=\"event\",le=\"0.25\"} 2"),
           "buckets are cumulative");
        ok(has_line(t, "kvmtuned_pin_latency_seconds_bucket{path=\"event\",le=\"+Inf\"} 2"), "+Inf bucket");
        ok(has_line(t, "kvmtuned_pin_latency_seconds_count{path=\"event\"} 2"), "_count");
        ok(has_line(t, "kvmtuned_pin_latency_seconds_sum{path=\"event\"} 0.203000000"), "_sum");
        ok(has_line(t, "kvmtuned_pin_latency_seconds_count{path=\"hook\"} 0"), "hook path present");
        is_int(count_prefix(t, "kvmtuned_pin_latency_seconds_bucket{path=\"hook\""), METRICS_NBUCKET + 1,
               "hook path: every bucket");
        ok(has_line(t, "# TYPE kvmtuned_vcpu_delay_seconds_total counter"), "vCPU delay: a counter");
        ok(has_line(t, "kvmtuned_vcpu_delay_seconds_total{domain=\"db1\",vcpu=\"0\"} 0.002500000"),
           "vCPU delay in seconds, per domain and vCPU");
        ok(has_line(t, "kvmtuned_vcpu_run_seconds_total{domain=\"db1\",vcpu=\"0\"} 1.500000000"),
           "vCPU run time in seconds");
        ok(has_line(t, "kvmtuned_vcpu_run_seconds_total{domain=\"db1\",vcpu=\"1\"} 0.000000007"),
           "nanoseconds kept");
        ok(has_line(t, "kvmtuned_vcpu_delay_seconds_total{domain=\"we\\\"b\",vcpu=\"0\"} 42.000000000"),
           "domain label escaped");
        is_int(count_prefix(t, "kvmtuned_vcpu_delay_seconds_total{"), 3, "one delay sample per vCPU");
        is_int(count_prefix(t, "# TYPE "), count_prefix(t, "# HELP "), "one HELP per TYPE");
        ok(t[strlen(t) - 1] == '\n', "ends with a newline");
}

static void test_format_no_vcpus(void) {
        _cleanup_free_ char *t = metrics_format(&(struct metrics_input){ .version = "1" });

        ok(has_line(t, "# TYPE kvmtuned_vcpu_run_seconds_total counter"),
           "no running vCPU: the run family is still declared");
        is_int(count_prefix(t, "kvmtuned_vcpu_"), 0, "... without samples");
}

/* With METRICS_SAMPLE=FILE the sample is written there for the validator of
 * test-metrics.sh. */
static void write_sample(void) {
        const char *path = getenv("METRICS_SAMPLE");
        struct metrics m = { .placements = 1 };
        _cleanup_free_ char *t = NULL;
        FILE *f;

        if (!path)
                return;
        metrics_histogram_observe(&m.latency[METRICS_PATH_HOOK], 0.0004);
        t = format_sample(&m);
        f = fopen(path, "w");
        ok(f && fputs(t, f) >= 0 && fclose(f) == 0, "sample written to %s", path);
}

int main(void) {
        test_histogram();
        test_observe_event();
        test_observe_counters();
        test_escape();
        test_format();
        test_format_no_vcpus();
        write_sample();
        return tap_done();
}
