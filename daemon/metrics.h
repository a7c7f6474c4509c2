/* kvmtuned metrics: counters and latency histograms kept in struct daemon, and
 * the Prometheus text exposition (format 0.0.4) of kvmtune.v1.Metrics.
 *
 * metrics.c is pure (no libvirt, no daemon state): the observe functions and
 * metrics_format(), which renders plain inputs. metrics-render.c collects
 * those inputs from the running daemon (metrics_render). */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "kvmtune/topo.h"

/* Upper bounds (seconds) of the latency buckets; +Inf follows. */
#define METRICS_NBUCKET 11
extern const double metrics_buckets[METRICS_NBUCKET];

/* Where a placement was applied from. */
enum metrics_path {
        METRICS_PATH_EVENT,             /* libvirt started event -> pins applied */
        METRICS_PATH_HOOK,              /* qemu hook request -> threads pinned */
        _METRICS_PATH_MAX,
};

struct metrics_histogram {
        uint64_t bucket[METRICS_NBUCKET + 1];   /* per bucket, not cumulative; last: +Inf */
        uint64_t count;
        double sum;                     /* seconds */
};

struct metrics {
        uint64_t placements;            /* applies that succeeded */
        uint64_t placement_failures;    /* applies that failed */
        uint64_t unplaced;              /* placements that found no room */
        uint64_t reconnects;            /* libvirt connections after the first */
        bool ever_connected;
        struct metrics_histogram latency[_METRICS_PATH_MAX];
        /* The started event being handled (0: none), and the hook request. */
        uint64_t event_usec;
        char event_uuid[37];
        uint64_t hook_usec;
};

/* watch.c: a started event for uuid arrived now / was handled. */
void metrics_event_begin(struct metrics *m, const char *uuid);
void metrics_event_end(struct metrics *m);
/* domains.c: apply_pins() returned r for domain uuid; on success observes the
 * event-to-pinned latency when a started event for uuid is being handled. */
void metrics_observe_pinned(struct metrics *m, const char *uuid, int r);
/* domains.c: an apply finished with r (0 or negative errno). */
void metrics_observe_apply(struct metrics *m, int r);
/* domains.c: placement found no room. */
void metrics_observe_unplaced(struct metrics *m);
/* watch.c: connected to libvirt (every connect after the first is a reconnect). */
void metrics_observe_connect(struct metrics *m);
/* hook.c: a started hook request arrived now / its threads are pinned now. */
void metrics_hook_begin(struct metrics *m);
void metrics_observe_hook(struct metrics *m);

/* ---- rendering ---------------------------------------------------------------- */

struct metrics_node {
        unsigned os;                    /* NUMA node number */
        int dedicated;                  /* online PUs not reserved */
        int dedicated_used;             /* held by dedicated domains, idle siblings too */
        int shared;                     /* PUs of the shared pool */
        int reserved;                   /* housekeeping PUs */
        uint64_t hp_total[TOPO_PAGE_SIZES];
        uint64_t hp_free[TOPO_PAGE_SIZES];
};

/* The scheduler counters of one vCPU thread (kvmtune/schedstat.h). */
struct metrics_vcpu {
        const char *domain;
        int vcpu;
        uint64_t run_ns;                /* on a CPU, since the thread started */
        uint64_t delay_ns;              /* runnable, waiting on a run queue */
};

struct metrics_input {
        const char *version;
        bool connected;
        uint64_t uptime_sec;
        int nnode;
        const struct metrics_node *nodes;
        int nstate;
        const char *const *state_names; /* label values of kvmtuned_domains */
        const int *state_counts;
        const struct metrics *m;
        int nvcpu;
        const struct metrics_vcpu *vcpus;
};

/* The exposition text (caller frees). Label values are escaped. */
char *metrics_format(const struct metrics_input *in);
struct daemon;
/* metrics-render.c: the daemon's metrics now (caller frees). Re-reads the
 * hugepage pools; on a read error the last known counts are shown. */
char *metrics_render(struct daemon *d);
