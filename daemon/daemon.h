/* kvmtuned internals: the daemon state shared by the event loop bridge
 * (evloop.c), the libvirt watcher (watch.c), the domain table (domains.c), the
 * libvirt appliers (apply.c), the reload (reload.c) and the control
 * methods (methods.c). Single-threaded: everything runs from the sd-event loop.
 *
 * One domain's lifecycle reads top-down: watch.c turns a libvirt event into a
 * domains_*() call; domains.c acquires the facts (definition, record, pid),
 * decides (decide_domain() in lib/decide.c, the engine in lib/placement.c)
 * and calls apply.c, which pins, binds memory and stores the record. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <hwloc.h>
#include <libvirt/libvirt.h>
#include <libvirt/virterror.h>
#include <systemd/sd-event.h>

#include "kvmtune/conf.h"
#include "kvmtune/log.h"
#include "kvmtune/domxml.h"
#include "kvmtune/pinset.h"
#include "kvmtune/placement.h"
#include "kvmtune/policy.h"
#include "kvmtune/topo.h"
#include "metrics.h"

/* A message about one domain, with its DOMAIN= and DOMAIN_UUID= fields. */
#define dlog(dm, level, ...) log_full((level), (dm)->name, (dm)->uuid, 0, __VA_ARGS__)

/* The one way to say why libvirt failed: its last error's message. */
static inline const char *daemon_libvirt_error(void) {
        virErrorPtr e = virGetLastError();

        return e && e->message ? e->message : "unknown libvirt error";
}

enum domain_state {
        DOMAIN_TUNED,                   /* placed on dedicated PUs as its policy says */
        DOMAIN_SHARED,                  /* confined to the shared pool */
        DOMAIN_IGNORED,                 /* cpu=none, or pinned by hand: left alone */
        DOMAIN_UNPLACED,                /* wanted dedicated PUs, no room: on the shared pool */
        DOMAIN_FAILED,                  /* applying failed; reason says what */
        _DOMAIN_STATE_MAX,
};

struct domain {
        int id;                         /* owner id in struct alloc, > 0 */
        char *name;
        char uuid[37];
        int libvirt_id;
        pid_t pid;                      /* QEMU process, 0 unknown */
        int vcpus;
        int niothread;
        int *iothread_ids;
        uint64_t memory_kib;
        unsigned long page_kib;
        struct policy policy;
        bool policy_known;              /* policy resolved from its definition: false
                                         * before that and when it cannot be read */
        bool placed;                    /* plan committed in the alloc */
        struct plan plan;
        hwloc_bitmap_t hand_cpus;       /* pinned by hand: PUs counted as taken */
        struct pinset pins;             /* last applied (nvcpu 0: none) */
        enum domain_state state;
        char reason[PLACEMENT_REASON_MAX];
        bool seen;                      /* marked during a resync */
        bool hooked;                    /* pinned by the qemu hook before start, not
                                         * yet applied through libvirt (no record) */
        bool persisted;                 /* its persistent definition may hold our record */
        char *persisted_record;         /* the record last written there, NULL unknown */
        uint64_t *held_base_kib;        /* base memory its QEMU holds per node (numa_maps) */
        unsigned held_gen;              /* ... as read in pools batch held_gen */
};

/* An inactive domain whose definition kvmtuned writes once the grace after its
 * last define or policy event is over (watch.c). */
struct preplace_due {
        char uuid[37];
        uint64_t usec;                  /* CLOCK_MONOTONIC */
};

struct daemon {
        sd_event *event;
        const char *config_path;
        const char *socket_path;
        const char *connect_uri;        /* --connect, overrides the config */
        const char *sysfs_root;
        const char *topology_path;
        uint64_t start_usec;            /* CLOCK_MONOTONIC */

        struct conf *conf;
        struct topo *topo;
        hwloc_bitmap_t reserved;
        struct alloc *alloc;

        /* libvirt */
        char *uri;
        virConnectPtr conn;
        bool connected;
        int cb_lifecycle, cb_metadata;
        sd_event_source *reconnect;
        uint64_t reconnect_delay_usec;
        bool scanned;                   /* first scan done (READY sent) */
        struct preplace_due *preplace;  /* definitions to write, not yet due */
        int npreplace;
        sd_event_source *preplace_timer;

        /* domains */
        int ndomain;
        struct domain **domains;
        int next_id;

        struct metrics metrics;         /* counters and latencies (metrics.h) */

        /* host isolation (isolate.h) */
        struct isolate *isolate;        /* created at the first update */
        sd_event_source *isolate_timer; /* the periodic rescan */
        int isolation_switch;           /* kvmtunectl isolation: -1 config, 0 off, 1 on */

        /* A rebalance or resync places many domains: the memory each placed
         * QEMU holds is read once per batch, not once per placement. */
        bool pools_batch;
        unsigned pools_gen;
};

/* evloop.c: libvirt's event loop implemented on sd-event. Call before
 * virConnectOpen. */
int evloop_register(sd_event *e);
/* Runs the free callbacks of watches removed after the loop finished. */
void evloop_flush(void);

/* watch.c */
int watch_start(struct daemon *d);      /* connects, or schedules a reconnect */
void watch_stop(struct daemon *d);

/* domains.c */
const char *domain_state_to_string(enum domain_state s);
struct domain *domains_find(struct daemon *d, const char *name);
struct domain *domains_find_uuid(struct daemon *d, const char *uuid);
/* Acquires the domain's facts from libvirt, decides and applies. rescan: the
 * daemon (re)discovers a running domain and keeps a matching placement record. */
int domains_update(struct daemon *d, virDomainPtr dom, bool rescan);
/* A domain stopped or was undefined: releases what it held, drops it from the
 * table, then the shared pool follows and unplaced domains are retried. */
void domains_release(struct daemon *d, const char *uuid, bool undefined);
/* Releases and drops a domain without any libvirt call (the hook); returns
 * whether it held PUs or hugepages (then the caller runs retry_unplaced +
 * follow_pool). */
bool domains_forget(struct daemon *d, const char *uuid);
/* Tries again to place every unplaced domain (libvirt calls). */
void domains_retry_unplaced(struct daemon *d);
/* The qemu hook at "started": decides from the XML alone, without libvirt.
 * *ret is the domain (always set). Returns 1 with dm->pins to apply to the
 * threads, 0 when the domain is left alone, negative errno when it failed
 * (dm->reason says why). The domain stays 'hooked' until domains_confirm(). */
struct domxml;
int domains_place_xml(struct daemon *d, const struct domxml *x, pid_t pid, struct domain **ret);
/* The started event of a hooked domain: applies the same placement through
 * libvirt and stores the record. No-op for other domains. */
int domains_confirm(struct daemon *d, virDomainPtr dom);
/* A policy metadata event: re-places the domain only when its effective policy
 * changed (a --config-only edit or the same policy moves nothing). */
int domains_policy_event(struct daemon *d, virDomainPtr dom);
/* An inactive persistent domain was defined or its policy changed (called by
 * watch.c once the grace after that event is over, never from the event: a
 * start meanwhile would wait for this write): writes a dedicated placement into
 * its definition (persist_placement), so libvirt pins even its first start;
 * holds nothing. */
int domains_preplace(struct daemon *d, virDomainPtr dom);
/* Re-applies the shared pool to every shared/unplaced domain. */
void domains_follow_pool(struct daemon *d);
/* Recomputes and re-applies one domain (NULL name: every domain). */
int domains_rebalance(struct daemon *d, const char *name);
/* Re-evaluates every domain whose effective policy differs under d->conf;
 * changed() is called with each such name. Returns how many. */
int domains_reevaluate(struct daemon *d, void (*changed)(const char *name, void *ud), void *ud);
/* One pass of a resync (watch_resync): 0 adopts recorded placements and hand
 * pins, 1 places the rest. */
int domains_resync_pass(struct daemon *d, virDomainPtr dom, int pass);
/* Brackets a resync or rebalance: inside, what placed QEMUs hold is read once. */
void domains_batch_begin(struct daemon *d);
void domains_batch_end(struct daemon *d);
void domains_count(struct daemon *d, int counts[_DOMAIN_STATE_MAX]);
void domains_free_all(struct daemon *d);
void domains_notify_status(struct daemon *d);

/* apply.c: changes the system through libvirt. 0 or negative errno with a
 * reason (logged as the domain failing). */
enum {
        APPLY_LIVE = 1 << 0,            /* the running domain, QEMU's helper threads too */
        APPLY_CONFIG = 1 << 1,          /* the persistent definition */
};
/* vCPU, emulator and iothread pins (flags: APPLY_*): libvirt's live emulator
 * pin moves only the main thread and the emulator cgroup, so with APPLY_LIVE
 * QEMU's other helper threads follow through sched_setaffinity. */
int apply_pins(struct daemon *d, virDomainPtr dom, const struct domain *dm,
               const struct pinset *p, unsigned flags, char reason[PLACEMENT_REASON_MAX]);
/* Memory onto p->mems: strict through libvirt's live nodeset, else through
 * the cgroup (cgroup.h); pages elsewhere move with libnuma. */
int apply_numa(struct daemon *d, virDomainPtr dom, const struct domain *dm,
               const struct pinset *p, char reason[PLACEMENT_REASON_MAX]);
/* Stores the placement record (NULL: removes it); flags APPLY_*. 0 or -EIO. */
int apply_record(virDomainPtr dom, const char *record, unsigned flags);
/* The persistent definition (config.persist_placement): apply_persist writes
 * the record, the pins and <numatune> there, so libvirt applies them before
 * the vCPUs first run on the next start; apply_unpersist takes them out again
 * when the definition holds our record. The caller knows dom is persistent.
 * 0 or -EIO (logged). */
int apply_persist(struct daemon *d, virDomainPtr dom, const struct domain *dm, const char *record,
                  const struct pinset *p);
int apply_unpersist(struct daemon *d, virDomainPtr dom, const struct domain *dm);

/* Drops every domain's hold on the allocations (before they are rebuilt). */
void domains_drop_holds(struct daemon *d);

/* methods.c */
struct ctl_method;
struct json_object;
extern const struct ctl_method *const daemon_methods;
extern const int daemon_nmethods;

/* hook.c */
/* kvmtune.v1.Hook (privileged), a struct ctl_method call: userdata is the
 * struct daemon. Returns 0 with the result, -EINVAL for bad params.
 * The contract of both sides: kvmtune/hook.h. */
int hook_method(void *userdata, struct json_object *params, struct json_object **ret_result,
                char **ret_error);

/* reload.c */
/* SIGHUP and kvmtune.v1.Reload: swaps in a new config only if it is valid.
 * changed (may be NULL) is called with the name of each re-placed domain. */
int reload_config(struct daemon *d, void (*changed)(const char *name, void *ud), void *ud,
                  char *err, size_t errlen);
/* The reserved CPUs a config asks for (default: the first core). */
int reload_reserved(const struct daemon *d, const struct conf *c, hwloc_bitmap_t *ret);
/* Replaces the allocations with empty ones reserving 'reserved' (taken over). */
void reload_rebuild_alloc(struct daemon *d, hwloc_bitmap_t reserved);
