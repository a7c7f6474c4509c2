/* Host isolation, the pure half: which CPU masks to narrow so that host work
 * stays off the PUs dedicated to guests, and the restore record that says what
 * was changed (kept in /run/kvmtuned/, so a restarted daemon adopts or puts
 * back what an earlier one did). Nothing here reads or writes the system;
 * daemon/isolate.c acquires the masks and applies the decisions.
 *
 * A mask is kept in an entry as two cpusets: orig, what it was before we
 * touched it (what a restore writes back), and applied, what we wrote. A mask
 * that differs from applied was changed by its owner since: its new value is
 * its new orig, decided again. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <hwloc.h>

/* [host] isolation: what is kept off dedicated PUs. */
enum {
        ISOLATE_TASKS = 1 << 0,         /* host tasks in isolation_scope */
        ISOLATE_GUESTS = 1 << 1,        /* threads of guests kvmtuned does not place */
        ISOLATE_IRQS = 1 << 2,          /* /proc/irq/N/smp_affinity_list, default_smp_affinity */
        ISOLATE_WORKQUEUES = 1 << 3,    /* unbound workqueues' cpumask */
        ISOLATE_ALL = (1 << 4) - 1,
};

/* "yes" (all), "no" (none), or a list of tasks, guests, irqs, workqueues
 * separated by commas and/or blanks. Returns 0 or -EINVAL. */
int isolate_parse_what(const char *value, unsigned *ret);
/* "tasks,guests,irqs,workqueues", "none". buf >= 64 bytes. */
const char *isolate_format_what(unsigned what, char *buf, size_t len);

/* What is recorded about one changed mask. */
enum isolate_kind {
        ISOLATE_KIND_TASK,              /* id: tid; start: starttime (stat field 22) */
        ISOLATE_KIND_GUEST,             /* a thread of a guest left alone; as TASK */
        ISOLATE_KIND_IRQ,               /* id: IRQ number, -1: default_smp_affinity */
        ISOLATE_KIND_WORKQUEUE,         /* id 0: the unbound workqueues' cpumask */
        ISOLATE_KIND_UNIT,              /* name: systemd unit, AllowedCPUs (empty orig: unset) */
        ISOLATE_KIND_IRQBALANCE,        /* id: irqbalance pid, masks: its banned CPUs */
        _ISOLATE_KIND_MAX,
};

struct isolate_entry {
        enum isolate_kind kind;
        long id;
        unsigned long long start;
        char name[64];
        hwloc_bitmap_t orig, applied;
        bool seen;                      /* in memory only: visited by the current pass */
};

/* "task", "guest", "irq", "workqueue", "unit", "irqbalance". */
const char *isolate_kind_to_string(enum isolate_kind k);

struct isolate_record {
        int n;
        struct isolate_entry *e;        /* sorted by kind, id, name */
};

/* What isolate_decide() says to do with one mask. */
enum isolate_action {
        ISOLATE_NONE,                   /* leave it as it is */
        ISOLATE_SET,                    /* write *ret_mask; the entry stays, or a new one
                                         * (orig = cur) is made, with applied = *ret_mask */
        ISOLATE_RESTORE,                /* write *ret_mask (orig) when it differs from cur;
                                         * drop the entry */
        ISOLATE_ONLY_DEDICATED,         /* on dedicated PUs only (on purpose): left alone */
};

/* Decides for one mask cur under the dedicated set (empty: put everything
 * back). e is its entry, NULL when there is none. When cur differs from
 * e->applied, the owner changed the mask since: e->orig and e->applied become
 * cur first (its new wish), then the mask is narrowed again from orig, or
 * restored when nothing is dedicated or nothing of orig stays off the
 * dedicated PUs. Never yields an empty mask. Pure but for that update of e. */
enum isolate_action isolate_decide(hwloc_const_bitmap_t cur, hwloc_const_bitmap_t dedicated,
                                   struct isolate_entry *e, hwloc_bitmap_t ret_mask);

/* The dedicated set that may be taken off host work: dedicated unless that
 * would leave no online PU (the last housekeeping PU is never taken), then
 * empty. Returns a new bitmap. */
hwloc_bitmap_t isolate_effective(hwloc_const_bitmap_t online, hwloc_const_bitmap_t dedicated);

/* Record handling. find returns the entry or NULL; add inserts (kept sorted)
 * and returns the new entry (masks copied); del removes one; clear empties. */
struct isolate_entry *isolate_record_find(const struct isolate_record *r, enum isolate_kind kind,
                                          long id, const char *name);
struct isolate_entry *isolate_record_add(struct isolate_record *r, enum isolate_kind kind, long id,
                                         unsigned long long start, const char *name,
                                         hwloc_const_bitmap_t orig, hwloc_const_bitmap_t applied);
void isolate_record_del(struct isolate_record *r, struct isolate_entry *e);
void isolate_record_clear(struct isolate_record *r);

/* Text form, one entry a line after a "# kvmtuned isolation record 1" header:
 *   KIND ID START NAME ORIG APPLIED
 * KIND task|guest|irq|workqueue|unit|irqbalance, NAME "-" when empty, masks as
 * CPU lists ("0-3,8", "-" for empty). format returns a new string; parse
 * replaces *r and returns the number of entries or -EINVAL (r untouched). */
char *isolate_record_format(const struct isolate_record *r);
int isolate_record_parse(const char *text, struct isolate_record *r);

/* Kernel cpumask text (/proc/irq/default_smp_affinity, the workqueue cpumask):
 * comma-separated 32-bit hex groups, "00000000,0000000f". Returns 0/-EINVAL. */
int isolate_mask_parse(const char *text, hwloc_bitmap_t ret);
char *isolate_mask_format(hwloc_const_bitmap_t set);
/* CPU list text ("0-3,8\n", as smp_affinity_list and Cpus_allowed_list):
 * 0/-EINVAL. An empty list, or a CPU above ISOLATE_CPU_MAX, is -EINVAL. */
#define ISOLATE_CPU_MAX 8191              /* the kernel's NR_CPUS at most (MAXSMP) */
int isolate_list_parse(const char *text, hwloc_bitmap_t ret);

/* From /proc/PID/status text: what follows "KEY:" at the start of a line (the
 * rest of the text, blanks included), or NULL when there is no such line. */
const char *isolate_status_value(const char *status, const char *key);
/* From /proc/PID/status text: Tgid and PPid (0 when absent). */
void isolate_status_ids(const char *status, pid_t *ret_tgid, pid_t *ret_ppid);
/* From /proc/PID/stat text: starttime (field 22). 0 or -EINVAL. */
int isolate_stat_start(const char *stat, unsigned long long *ret);

/* Whether a cgroup directory name below the scope belongs to libvirt's machine
 * tree (machine.slice on systemd hosts, machine on cgroup v1 without systemd),
 * which kvmtuned never confines: placement owns those threads. */
bool isolate_cgroup_skip(const char *relpath);
