/* The resolved cpusets of one domain (os indexes): what the appliers write.
 * A plan names PUs and place kinds (dedicated, shared pool, with the vCPUs);
 * pinset_resolve() turns a plan and the allocations into concrete cpusets. */
#pragma once

#include <stdbool.h>
#include <hwloc.h>

#include "kvmtune/placement.h"
#include "kvmtune/policy.h"
#include "kvmtune/topo.h"

struct pinset {
        int nvcpu;
        hwloc_bitmap_t *vcpu;           /* NULL entry: no pin for that vCPU */
        hwloc_bitmap_t emulator;
        int niothread;
        int *iothread_id;               /* libvirt's iothread ids */
        hwloc_bitmap_t *iothread;
        hwloc_bitmap_t mems;            /* NUMA node os indexes, NULL: not managed */
        enum policy_numa numa;
};

/* An empty pinset (no cpusets yet) of nvcpu vCPUs and the given iothreads
 * (ids copied), numa none. Free with pinset_done(). */
void pinset_init(struct pinset *ret, int nvcpu, int niothread, const int *iothread_ids);
void pinset_done(struct pinset *p);

/* Every vCPU, the emulator and every iothread get a copy of cpus. */
void pinset_fill(struct pinset *p, hwloc_const_bitmap_t cpus);

bool pinset_equal(const struct pinset *a, const struct pinset *b);
/* Every cpuset is there and non-empty (libvirt refuses an empty one). */
bool pinset_usable(const struct pinset *p);
/* The union of every vCPU, emulator and iothread cpuset; a new bitmap. */
hwloc_bitmap_t pinset_cpus(const struct pinset *p);

/* plan (NULL: not placed) + allocations -> cpusets, into a pinset from
 * pinset_init(): the plan's PUs resolved against a (shared pool, the vCPUs'
 * PUs), vCPUs and iothreads the plan does not cover on the shared pool, and
 * the plan's nodes as mems with its numa mode. Without a plan everything is
 * on the shared pool. */
void pinset_resolve(const struct topo *t, const struct alloc *a, const struct plan *plan,
                    struct pinset *p);
