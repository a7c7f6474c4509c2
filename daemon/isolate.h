/* Host isolation, the applier: keeps host tasks, the threads of guests
 * kvmtuned does not place, IRQs and unbound workqueues off the dedicated PUs
 * and puts them back (kvmtuned.conf(5), [host] isolation). The decisions are
 * lib/isolate.c's; this file acquires the masks (under the sysfs root), calls
 * the ops below to change them, and keeps the restore record on disk. Every
 * effect goes through struct isolate_ops, so a test records them. */
#pragma once

#include <stdbool.h>
#include <sys/types.h>
#include <hwloc.h>

#include "kvmtune/isolate.h"

struct daemon;
struct domain;
struct json_object;

struct isolate_ops {
        /* A task's affinity: 0 or negative errno (-ESRCH: gone). */
        int (*get_affinity)(void *ud, pid_t tid, hwloc_bitmap_t ret);
        int (*set_affinity)(void *ud, pid_t tid, hwloc_const_bitmap_t cpus);
        /* Writes a /proc or /sys file (absolute path, under the sysfs root). */
        int (*write_file)(void *ud, const char *path, const char *value);
        /* systemd: whether it is PID 1 with the cgroup v2 cpuset controller,
         * and a unit's runtime AllowedCPUs= (empty: unset). */
        bool (*systemd)(void *ud);
        int (*unit_get)(void *ud, const char *unit, hwloc_bitmap_t ret);
        int (*unit_set)(void *ud, const char *unit, hwloc_const_bitmap_t cpus);
        /* irqbalance's control socket: *ret_pid is the running irqbalance
         * (-ENOENT: none); cmd is sent, the reply (NUL-terminated) goes into
         * reply when it is not NULL. */
        int (*irqbalance)(void *ud, const char *cmd, pid_t *ret_pid, char *reply, size_t len);
};

/* The real host: sched_*affinity, hostfs writes, sd-bus, irqbalance's socket. */
extern const struct isolate_ops isolate_host_ops;

#define ISOLATE_SKIPPED_MAX 16

/* What the last pass found: kvmtunectl isolation and status. */
struct isolate_report {
        int tasks;                      /* task masks kept narrowed now */
        int units;                      /* systemd units with AllowedCPUs set */
        int guest_threads;              /* threads of guests left alone, narrowed */
        int kept;                       /* on dedicated PUs only, left alone */
        int refused;                    /* tasks that refuse (per-CPU kthreads) */
        int irqs, irqs_managed;         /* IRQs narrowed; refused (managed) */
        bool default_irq, workqueues, irqbalance;
        bool systemd;                   /* tasks through the systemd slices */
        int nskipped;                   /* the first ISOLATE_SKIPPED_MAX: */
        char skipped[ISOLATE_SKIPPED_MAX][128];
};

/* A running guest. One kvmtuned does not place has its threads kept off the
 * dedicated PUs; hand (may be NULL) are the PUs its own pins name. The
 * threads of a placed one are never touched here, not even as tasks of the
 * scope (QEMU outside libvirt's machine cgroups). */
struct isolate_guest {
        const char *name;
        pid_t pid;
        hwloc_const_bitmap_t hand;
        bool placed;
};

struct isolate {
        const char *root;               /* sysfs root, NULL: the host */
        char *record_path;
        const struct isolate_ops *ops;
        void *ud;
        unsigned what;                  /* ISOLATE_* in force */
        char *scope;
        struct isolate_record rec;
        hwloc_bitmap_t dedicated;       /* taken off host work by the last pass */
        pid_t *known;                   /* tids seen by the last pass, sorted */
        int nknown;
        pid_t *refused;                 /* tids that refused, sorted */
        int nrefused;
        pid_t *irqs_refused;            /* managed IRQs (they refuse every change), sorted */
        int nirqs_refused, cirqs_refused;
        char *written;                  /* the record text last written */
        bool save_failed;               /* logged once, until a write works again */
        struct isolate_report report;
};

/* Loads the record at record_path (a missing file is an empty record); task
 * entries whose task is gone or was replaced are dropped. *ret owned by the
 * caller (isolate_free). */
int isolate_new(const char *root, const char *record_path, const struct isolate_ops *ops, void *ud,
                struct isolate **ret);
struct isolate *isolate_free(struct isolate *s);

/* One pass: confines what s->what names to online minus dedicated (never the
 * last online PU), puts back what is no longer needed, and writes the record.
 * dedicated empty (or what 0) puts everything back. Returns 0 or the first
 * negative errno of writing the record. */
int isolate_pass(struct isolate *s, unsigned what, const char *scope, hwloc_const_bitmap_t online,
                 hwloc_const_bitmap_t dedicated, const struct isolate_guest *guests, int nguest);

/* Whether anything is in force or recorded (the rescan timer keeps running). */
bool isolate_busy(const struct isolate *s);

/* The daemon's side (kvmtuned.c, domains.c, methods.c): */
/* The dedicated PUs may have changed: a pass runs as soon as the event loop
 * is back (the dedicated set recomputed from the placements), then every
 * second while anything is in force. No-op until the first libvirt scan. */
void isolate_update(struct daemon *d);
/* Puts everything back (kvmtuned stops). */
void isolate_stop(struct daemon *d);
/* kvmtunectl isolation on|off (switch 1/0; -1: back to the configuration). */
void isolate_switch(struct daemon *d, int on);
/* What is in force and what was skipped: the ISOLATION object of ctl.h. */
struct json_object *isolate_status_json(const struct daemon *d);
/* A guest left alone whose own pins name dedicated CPUs: the conflict as a
 * sentence (new string), or NULL. */
char *isolate_conflict(const struct daemon *d, const struct domain *dm);
