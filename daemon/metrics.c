/* Counters, histograms and the Prometheus text exposition (format 0.0.4).
 * Pure: nothing here reads the system or libvirt (metrics.h). */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kvmtune/hugepages.h"
#include "kvmtune/util.h"
#include "metrics.h"
#include "metrics-priv.h"

const double metrics_buckets[METRICS_NBUCKET] = {
        0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5,
};

static const char *const metrics_path_names[_METRICS_PATH_MAX] = {
        [METRICS_PATH_EVENT] = "event", [METRICS_PATH_HOOK] = "hook",
};

void metrics_histogram_observe(struct metrics_histogram *h, double seconds) {
        int i = 0;

        if (!(seconds > 0))             /* negative, zero or NaN */
                seconds = 0;
        while (i < METRICS_NBUCKET && seconds > metrics_buckets[i])
                i++;
        h->bucket[i]++;
        h->count++;
        h->sum += seconds;
}

static void metrics_observe_since(struct metrics_histogram *h, uint64_t start_usec) {
        uint64_t now = now_usec();

        metrics_histogram_observe(h, now > start_usec ? (double)(now - start_usec) / 1e6 : 0);
}

/* ---- observation points ------------------------------------------------------- */

void metrics_event_begin(struct metrics *m, const char *uuid) {
        m->event_usec = now_usec();
        snprintf(m->event_uuid, sizeof m->event_uuid, "%s", uuid ? uuid : "");
}

void metrics_event_end(struct metrics *m) {
        m->event_usec = 0;
        m->event_uuid[0] = '\0';
}

/* Only the domain of the event, once: the pool that follows re-pins others. */
void metrics_observe_pinned(struct metrics *m, const char *uuid, int r) {
        if (r < 0 || m->event_usec == 0 || !uuid || !streq(uuid, m->event_uuid))
                return;
        metrics_observe_since(&m->latency[METRICS_PATH_EVENT], m->event_usec);
        metrics_event_end(m);
}

void metrics_observe_apply(struct metrics *m, int r) {
        if (r < 0)
                m->placement_failures++;
        else
                m->placements++;
}

void metrics_observe_unplaced(struct metrics *m) {
        m->unplaced++;
}

void metrics_observe_connect(struct metrics *m) {
        if (m->ever_connected)
                m->reconnects++;
        m->ever_connected = true;
}

void metrics_hook_begin(struct metrics *m) {
        m->hook_usec = now_usec();
}

void metrics_observe_hook(struct metrics *m) {
        if (m->hook_usec == 0)
                return;
        metrics_observe_since(&m->latency[METRICS_PATH_HOOK], m->hook_usec);
        m->hook_usec = 0;
}

/* ---- exposition ----------------------------------------------------------------- */

char *metrics_escape_label(const char *value) {
        size_t n = 0;
        char *ret, *p;

        for (const char *s = value; *s; s++)
                n += (*s == '\\' || *s == '"' || *s == '\n') ? 2 : 1;
        ret = p = xmalloc(n + 1);
        for (const char *s = value; *s; s++) {
                if (*s == '\\' || *s == '"' || *s == '\n')
                        *p++ = '\\';
                *p++ = *s == '\n' ? 'n' : *s;
        }
        *p = '\0';
        return ret;
}

static void metrics_family(FILE *f, const char *name, const char *type, const char *help) {
        fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void metrics_format_info(FILE *f, const struct metrics_input *in) {
        _cleanup_free_ char *version = metrics_escape_label(in->version ? in->version : "");

        metrics_family(f, "kvmtuned_build_info", "gauge", "The kvmtuned version, as a label; always 1.");
        fprintf(f, "kvmtuned_build_info{version=\"%s\"} 1\n", version);
        metrics_family(f, "kvmtuned_uptime_seconds", "gauge", "Seconds since kvmtuned started.");
        fprintf(f, "kvmtuned_uptime_seconds %" PRIu64 "\n", in->uptime_sec);
        metrics_family(f, "kvmtuned_libvirt_connected", "gauge", "1 when kvmtuned is connected to libvirt, else 0.");
        fprintf(f, "kvmtuned_libvirt_connected %d\n", in->connected ? 1 : 0);
}

/* One gauge family with a value per node; field selects the value. */
static void metrics_format_node_gauge(FILE *f, const struct metrics_input *in, const char *name,
                                      const char *help, int (*field)(const struct metrics_node *)) {
        metrics_family(f, name, "gauge", help);
        for (int n = 0; n < in->nnode; n++)
                fprintf(f, "%s{node=\"%u\"} %d\n", name, in->nodes[n].os, field(&in->nodes[n]));
}

static int metrics_node_dedicated(const struct metrics_node *n) { return n->dedicated; }
static int metrics_node_used(const struct metrics_node *n) { return n->dedicated_used; }
static int metrics_node_shared(const struct metrics_node *n) { return n->shared; }
static int metrics_node_reserved(const struct metrics_node *n) { return n->reserved; }

static void metrics_format_hugepages(FILE *f, const struct metrics_input *in, const char *name,
                                     const char *help, bool free_pages) {
        metrics_family(f, name, "gauge", help);
        for (int n = 0; n < in->nnode; n++)
                for (int s = 0; s < TOPO_PAGE_SIZES; s++)
                        fprintf(f, "%s{node=\"%u\",size=\"%s\"} %" PRIu64 "\n", name, in->nodes[n].os,
                                hugepages_size_name(s),
                                free_pages ? in->nodes[n].hp_free[s] : in->nodes[n].hp_total[s]);
}

static void metrics_format_nodes(FILE *f, const struct metrics_input *in) {
        metrics_format_node_gauge(f, in, "kvmtuned_node_dedicated_pus",
                                  "Online PUs of the node that are not reserved (may be dedicated).",
                                  metrics_node_dedicated);
        metrics_format_node_gauge(f, in, "kvmtuned_node_dedicated_pus_used",
                                  "PUs of the node held by dedicated domains, idle siblings included.",
                                  metrics_node_used);
        metrics_format_node_gauge(f, in, "kvmtuned_node_shared_pus",
                                  "PUs of the node in the shared pool.", metrics_node_shared);
        metrics_format_node_gauge(f, in, "kvmtuned_node_reserved_pus",
                                  "Housekeeping PUs of the node, never given to domains.",
                                  metrics_node_reserved);
        metrics_format_hugepages(f, in, "kvmtuned_node_hugepages",
                                 "Hugepages in the node's pool, by page size.", false);
        metrics_format_hugepages(f, in, "kvmtuned_node_hugepages_free",
                                 "Free hugepages in the node's pool, by page size.", true);
}

static void metrics_format_domains(FILE *f, const struct metrics_input *in) {
        metrics_family(f, "kvmtuned_domains", "gauge", "Running domains known to kvmtuned, by state.");
        for (int s = 0; s < in->nstate; s++) {
                _cleanup_free_ char *state = metrics_escape_label(in->state_names[s]);

                fprintf(f, "kvmtuned_domains{state=\"%s\"} %d\n", state, in->state_counts[s]);
        }
}

static void metrics_counter(FILE *f, const char *name, const char *help, uint64_t value) {
        metrics_family(f, name, "counter", help);
        fprintf(f, "%s %" PRIu64 "\n", name, value);
}

static void metrics_format_counters(FILE *f, const struct metrics *m) {
        metrics_counter(f, "kvmtuned_placements_total",
                        "Placements applied to a domain successfully.", m->placements);
        metrics_counter(f, "kvmtuned_placement_failures_total",
                        "Placements whose application to a domain failed.", m->placement_failures);
        metrics_counter(f, "kvmtuned_unplaced_total",
                        "Placement attempts that found no room for a domain's policy.", m->unplaced);
        metrics_counter(f, "kvmtuned_libvirt_reconnects_total",
                        "Connections to libvirt made again after the first one.", m->reconnects);
}

static void metrics_format_histogram(FILE *f, const char *name, const char *path,
                                     const struct metrics_histogram *h) {
        uint64_t cumulative = 0;

        for (int i = 0; i < METRICS_NBUCKET; i++) {
                cumulative += h->bucket[i];
                fprintf(f, "%s_bucket{path=\"%s\",le=\"%g\"} %" PRIu64 "\n", name, path,
                        metrics_buckets[i], cumulative);
        }
        fprintf(f, "%s_bucket{path=\"%s\",le=\"+Inf\"} %" PRIu64 "\n", name, path, h->count);
        fprintf(f, "%s_sum{path=\"%s\"} %.9f\n", name, path, h->sum);
        fprintf(f, "%s_count{path=\"%s\"} %" PRIu64 "\n", name, path, h->count);
}

static void metrics_format_latency(FILE *f, const struct metrics *m) {
        static const char name[] = "kvmtuned_pin_latency_seconds";

        metrics_family(f, name, "histogram",
                       "Seconds from a domain's start (path=\"event\": libvirt started event; "
                       "path=\"hook\": qemu hook request) to its threads pinned.");
        for (int p = 0; p < _METRICS_PATH_MAX; p++)
                metrics_format_histogram(f, name, metrics_path_names[p], &m->latency[p]);
}

/* The per-vCPU counters (as KubeVirt's kubevirt_vmi_vcpu_delay_seconds_total):
 * the families are always there, with a sample per running vCPU. */
static void metrics_format_vcpu_family(FILE *f, const struct metrics_input *in, const char *name,
                                       const char *help, bool delay) {
        metrics_family(f, name, "counter", help);
        for (int i = 0; i < in->nvcpu; i++) {
                const struct metrics_vcpu *v = &in->vcpus[i];
                _cleanup_free_ char *dom = metrics_escape_label(v->domain);

                fprintf(f, "%s{domain=\"%s\",vcpu=\"%d\"} %.9f\n", name, dom, v->vcpu,
                        (double)(delay ? v->delay_ns : v->run_ns) / 1e9);
        }
}

static void metrics_format_vcpus(FILE *f, const struct metrics_input *in) {
        metrics_format_vcpu_family(f, in, "kvmtuned_vcpu_run_seconds_total",
                                   "Seconds a guest's vCPU thread ran on a host CPU.", false);
        metrics_format_vcpu_family(f, in, "kvmtuned_vcpu_delay_seconds_total",
                                   "Seconds a guest's vCPU thread was runnable but waited for a host CPU "
                                   "(run-queue delay, what the guest sees as steal).", true);
}

char *metrics_format(const struct metrics_input *in) {
        static const struct metrics zero;
        const struct metrics *m = in->m ? in->m : &zero;
        char *text = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&text, &len);

        if (!f)
                abort();                /* allocation failure (STYLE.md) */
        metrics_format_info(f, in);
        metrics_format_nodes(f, in);
        metrics_format_domains(f, in);
        metrics_format_counters(f, m);
        metrics_format_latency(f, m);
        metrics_format_vcpus(f, in);
        if (fclose(f) != 0)
                abort();
        return text;
}
