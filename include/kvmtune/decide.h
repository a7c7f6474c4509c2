/* What the daemon does with one domain, decided from plain facts: its
 * definition (parsed once), its placement record (parsed once), the effective
 * policy, the host and the allocations. Pure: no libvirt, no /proc; the
 * daemon acquires the facts, calls decide_domain() and applies the result.
 *
 *   ADOPT      a dedicated record that matches the live pins, the threads'
 *              real affinity and the policy, whose PUs are all free:
 *              committed as it is, the guest does not move (a start from a
 *              pinned definition, a restarted daemon)
 *   HAND_PINS  pinned by someone else: left alone, its PUs count as taken
 *   IGNORE     policy cpu=none: left alone
 *   UNPIN      policy cpu=none on a domain that carries our pins: it floats
 *              over every CPU again and loses its record
 *   PLACE      everything else: the placement engine decides where */
#pragma once

#include <stdbool.h>
#include <hwloc.h>

#include "kvmtune/conf.h"
#include "kvmtune/domxml.h"
#include "kvmtune/placement.h"
#include "kvmtune/record.h"
#include "kvmtune/topo.h"

enum decide_action { DECIDE_ADOPT, DECIDE_HAND_PINS, DECIDE_IGNORE, DECIDE_UNPIN, DECIDE_PLACE };

/* When the decision is taken: a record is adopted only at a start (memory
 * size checked too) and by a resync of running domains (a balloon may have
 * moved <currentMemory> since, so memory is not compared). */
enum decide_when { DECIDE_START, DECIDE_RESYNC, DECIDE_UPDATE };

struct decide_facts {
        const struct domxml *xml;       /* the definition */
        const struct record *record;    /* its placement record, NULL: none or unreadable */
        struct policy policy;           /* decide_policy() */
        enum decide_when when;
        bool pinned;                    /* the daemon applied pins to it before */
        /* Where its vCPU threads really run (/proc), NULL: not read (no QEMU
         * yet). The live XML carries the record its definition held at start
         * even when the threads were placed elsewhere since (the hook, while
         * libvirt was away): a record is adopted only when they agree. */
        const struct pinset *threads;
};

struct decision {
        enum decide_action action;
        const struct plan *plan;        /* ADOPT: the record's plan to commit (borrowed) */
        hwloc_bitmap_t hand_cpus;       /* HAND_PINS: the CPUs pinned by hand (caller's) */
};

/* The effective policy: config and metadata (conf_policy_for), then the page
 * size QEMU really uses (page_kib: the definition's, or the host's default for
 * <hugepages/> without a size; 0 none) wins over any key: it is a fact. */
void decide_policy(const struct conf *c, const struct domxml *x, unsigned long page_kib,
                   struct policy *ret);

/* Decides; *ret is freed with decision_done(). */
void decide_domain(const struct topo *t, const struct alloc *a, const struct decide_facts *f,
                   struct decision *ret);
void decision_done(struct decision *d);
const char *decide_action_to_string(enum decide_action a);

/* Hand pins: vCPU pins that are a real restriction (not every PU) and do not
 * match our record, and emulator or iothread pins when the vCPU pins are not
 * ours. Their union, or NULL. */
hwloc_bitmap_t decide_hand_pins(const struct topo *t, const struct domxml *x, const struct record *rec);
/* The definition carries our record and vCPU pins that match it: the domain
 * was dedicated when the record was written (libvirt pinned it from there). */
bool decide_pinned_by_record(const struct domxml *x, const struct record *rec);

/* Holding the PUs of hand pins for owner id: only free PUs are taken; the
 * release frees only the PUs id owns, never another domain's. */
void decide_hold_cpus(struct alloc *a, const struct topo *t, hwloc_const_bitmap_t cpus, int id);
void decide_release_cpus(struct alloc *a, const struct topo *t, hwloc_const_bitmap_t cpus, int id);
