/* The placement engine: pure functions from (host, allocations, request) to a plan.
 * Nothing here reads the system or libvirt. See shared/SPEC.md for the policies. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "kvmtune/policy.h"
#include "kvmtune/topo.h"

#define PLACEMENT_REASON_MAX 256

/* Owner of a PU in struct alloc. Domains are numbered from 1 by the caller. */
#define ALLOC_FREE 0
#define ALLOC_RESERVED (-1)

/* Current allocations on a host. */
struct alloc {
        int npu, nnode;
        int *pu_owner;                  /* per PU index: ALLOC_FREE, ALLOC_RESERVED or id */
        bool *pu_idle;                  /* held by its owner but left unused (isolate) */
        uint64_t *mem_kib;              /* per node: base-page memory committed */
        uint64_t (*hp_pages)[TOPO_PAGE_SIZES]; /* per node: hugepages committed */
};

struct request {
        int vcpus;
        struct policy policy;
        int iothreads;                  /* number of iothreads the domain has */
        uint64_t memory_kib;            /* 0: memory does not constrain */
        int npci_nodes;
        int pci_nodes[8];               /* node indexes of the domain's PCI devices */
};

/* Where a set of helper threads (emulator, iothreads) runs. */
enum place_kind {
        PLACE_SHARED,                   /* the shared pool (on 'node' where it has PUs) */
        PLACE_DEDICATED,                /* own PUs listed in pus[] */
        PLACE_VCPUS,                    /* the union of the domain's vCPU PUs */
};

struct place_set {
        enum place_kind kind;
        int npu;
        int *pus;                       /* PU indexes, PLACE_DEDICATED only */
};

struct plan {
        bool dedicated;                 /* vCPUs have their own PUs (else shared pool) */
        int nvcpu;
        int *vcpu_pu;                   /* per vCPU: PU index (dedicated only) */
        int nidle;
        int *idle_pus;                  /* PUs held but unused (isolate/require siblings) */
        struct place_set emulator;
        int niothread;
        struct place_set *iothreads;    /* one per iothread */
        int nnode;
        int nodes[64];                  /* node indexes, first is the home node */
        enum policy_numa numa;
        enum policy_page page;
        uint64_t memory_kib;
        uint64_t *node_mem_kib;         /* per host node: memory placed there */
        int ngroup;                     /* L3 groups the vCPUs span */
        bool split;                     /* spans more than one node */
        char note[PLACEMENT_REASON_MAX]; /* why split, etc.; empty when nothing to say */
};

struct alloc *alloc_new(const struct topo *t);
struct alloc *alloc_free(struct alloc *a);
struct alloc *alloc_dup(const struct alloc *a);

/* Marks reserved PUs (os indexes in the bitmap), widened to whole cores.
 * Returns the number of PUs reserved. */
int alloc_reserve(struct alloc *a, const struct topo *t, hwloc_const_bitmap_t cpus);

/* What alloc_reserve() really took, as os indexes (a new bitmap): the named
 * CPUs widened to whole cores, those the host lacks left out. */
hwloc_bitmap_t alloc_reserved_cpus(const struct alloc *a, const struct topo *t);

/* The CPUs of a set that this host does not have online (a new bitmap). */
hwloc_bitmap_t placement_absent_cpus(const struct topo *t, hwloc_const_bitmap_t cpus);

/* The default housekeeping set: the first core of the host. */
hwloc_bitmap_t placement_default_reserved(const struct topo *t);

/* Takes the plan's PUs and memory for domain 'id' (> 0). The plan must come
 * from placement_place() on the same alloc. */
void alloc_commit(struct alloc *a, const struct topo *t, const struct plan *p, int id);
/* Frees everything owned by 'id'. */
void alloc_release(struct alloc *a, const struct topo *t, const struct plan *p, int id);

/* The shared pool: online PUs neither reserved nor held by a dedicated domain.
 * node >= 0 restricts it to that node (falls back to the whole pool when the
 * node has no shared PU). Returns a new bitmap of os indexes. */
hwloc_bitmap_t placement_shared_pool(const struct topo *t, const struct alloc *a, int node);

/* Places a request. Returns 0 and fills *ret (free with plan_done()), or
 * -ENOSPC / -EINVAL with a reason a person can act on in reason[]. Pure: reads
 * t and a only. Deterministic. */
int placement_place(const struct topo *t, const struct alloc *a, const struct request *req,
                    struct plan *ret, char reason[PLACEMENT_REASON_MAX]);

void plan_done(struct plan *p);

/* Resolves a place_set (emulator, iothread) to a bitmap of os indexes under the
 * current allocations: dedicated PUs, the vCPU PUs, or the shared pool. */
hwloc_bitmap_t plan_resolve(const struct topo *t, const struct alloc *a, const struct plan *p,
                            const struct place_set *s);
/* The vCPU's cpuset: its dedicated PU, or the shared pool near the home node. */
hwloc_bitmap_t plan_vcpu_cpus(const struct topo *t, const struct alloc *a, const struct plan *p,
                              int vcpu);
