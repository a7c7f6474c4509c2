/* Host model: the machine as placement sees it, filled from hwloc (live host, XML
 * export or synthetic string) and from sysfs under a root for memory and hugepages.
 *
 * Everything is plain arrays indexed by our own dense indexes; os indexes (the
 * numbers in /proc and sysfs) are kept beside them. Only online, allowed PUs are
 * listed. A "group" is the set of cores sharing one L3 cache AND one NUMA node
 * (on SNC hosts one L3 spans several nodes; on NPS1 EPYC one node has many L3s). */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <hwloc.h>

#include "kvmtune/util.h"

DEFINE_TRIVIAL_CLEANUP_FUNC(hwloc_bitmap_t, hwloc_bitmap_free)
#define _cleanup_bitmap_ _cleanup_(hwloc_bitmap_freep)

/* hwloc_bitmap_alloc() that aborts on allocation failure, like xmalloc(). */
static inline hwloc_bitmap_t bitmap_new(void) {
        hwloc_bitmap_t m = hwloc_bitmap_alloc();

        if (!m)
                abort();
        return m;
}

/* A CPU (or node) list, "0-3,8", into ret: items N or N-M (N <= M <= max), commas
 * between, blanks around items, ending at '\0' or the first newline (what follows
 * it is not read: kernel files hold one line). Empty text is the
 * empty set. 0, or -EINVAL with ret untouched. hwloc's own list parser takes
 * "-5" or "3-" and builds sets that hang or never end, so outside input (config,
 * metadata records, domain XML, /proc, cgroup files) comes through here. */
#define CPU_LIST_MAX 65535U
int bitmap_parse_list(const char *s, unsigned max, hwloc_bitmap_t ret);

#define TOPO_PAGE_SIZES 2               /* index 0: 2 MiB, 1: 1 GiB */
#define TOPO_PAGE_2M 0
#define TOPO_PAGE_1G 1

/* The pool index of a page size in KiB (2048, 1048576), -1 for any other. */
static inline int topo_page_index(unsigned long page_kib) {
        return page_kib == 2048 ? TOPO_PAGE_2M : page_kib == 1048576 ? TOPO_PAGE_1G : -1;
}

struct topo_pu {
        unsigned os;                    /* logical CPU number, as in /proc */
        int core;                       /* index into host->cores */
};

struct topo_core {
        int first_pu, npu;              /* PUs are contiguous in host->pus */
        int group;                      /* index into host->groups */
        int node;                       /* index into host->nodes */
        int kind;                       /* hwloc cpukind index, -1 when unknown */
};

struct topo_group {
        int first_core, ncore;          /* cores are contiguous in host->cores */
        int node;
        int l3;                         /* L3 os/logical index, -1 when no L3 */
};

struct topo_hpool {
        uint64_t total;                 /* pages in the pool (nr_hugepages) */
        uint64_t free;                  /* free pages not held by a placed domain */
};

struct topo_node {
        unsigned os;                    /* NUMA node number, as in sysfs */
        uint64_t memory_kib;            /* local memory, 0 when unknown */
        bool memory_known;
        uint64_t avail_kib;             /* memory free or reclaimable now (MemFree +
                                         * FilePages - Shmem + SReclaimable of the
                                         * node's meminfo), plus what placed domains
                                         * hold (the daemon adds that back) */
        bool avail_known;               /* read from sysfs: a limit for placement */
        int first_group, ngroup;        /* groups are contiguous in host->groups; a
                                         * CPU-less node has ngroup 0 and first_group
                                         * where its groups would start */
        int npu;                        /* online PUs local to the node (0: CPU-less) */
        struct topo_hpool hp[TOPO_PAGE_SIZES];
};

struct topo_pci {
        char busid[16];                 /* "0000:3b:00.0" */
        int node;                       /* index into host->nodes, -1 unknown */
};

struct topo {
        hwloc_topology_t hw;            /* kept for bitmap helpers and drawing */
        int npu, ncore, ngroup, nnode, npci;
        struct topo_pu *pus;
        struct topo_core *cores;
        struct topo_group *groups;
        struct topo_node *nodes;
        struct topo_pci *pcis;
        unsigned *distance;             /* nnode * nnode, NULL when unknown */
        unsigned max_os;                /* largest PU os index + 1 */
        int *pu_by_os;                  /* os index -> PU index, -1 when absent */
        int smt;                        /* max PUs per core */
        bool is_this_system;
        char *description;              /* "2 nodes, 4 L3 groups, 48 cores, 96 PUs"
                                         * ("groups" when some group has no L3) */
};

enum topo_source { TOPO_SOURCE_LIVE, TOPO_SOURCE_XML, TOPO_SOURCE_SYNTHETIC };

/* Loads a host model. arg is the XML path or synthetic string (NULL for live).
 * sysfs_root: when non-NULL, memory and hugepage pools are read from
 * DIR/sys/devices/system/node/nodeN/ (and override hwloc's memory sizes); a
 * missing file is an empty pool (or hwloc's size for meminfo), not an error.
 * NULL: hwloc's sizes and page counts only (free = total).
 * A core whose PUs no NUMA node covers (memory-less dies, offline node) is
 * attached to the nearest node with memory: the first ancestor whose nodeset
 * holds one, lowest os index first. A core covered by several nodes belongs to
 * the one with the smallest cpuset, then the most memory (DDR beats HBM).
 * Returns 0 or negative errno (-ENOENT missing file, -EINVAL bad XML, bad
 * synthetic string or argument, -ENODEV no PU); *ret is owned by the caller
 * (topo_free) and untouched on failure. */
int topo_load(enum topo_source source, const char *arg, const char *sysfs_root,
              struct topo **ret);
struct topo *topo_free(struct topo *t);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct topo *, topo_free)

/* Re-reads hugepage pools and node memory under sysfs_root (NULL: back to
 * hwloc's values). 0 or negative errno (-EINVAL for a malformed file). */
int topo_refresh_memory(struct topo *t, const char *sysfs_root);

int topo_node_by_os(const struct topo *t, unsigned os);      /* index or -1 */
int topo_pu_by_os(const struct topo *t, unsigned os);        /* index or -1 */
static inline int topo_pu_node(const struct topo *t, int pu) {
        return t->cores[t->pus[pu].core].node;
}
/* NUMA latency from the matrix; without one 10 for a == b and 20 (the
 * kernel's default remote SLIT value) otherwise. UINT_MAX for a bad index. */
unsigned topo_distance(const struct topo *t, int a, int b);

/* hwloc bitmap of the os indexes of PU indexes (caller frees with
 * hwloc_bitmap_free); NULL when an index is out of range. */
hwloc_bitmap_t topo_pus_to_bitmap(const struct topo *t, const int *pus, int n);
/* Every PU of t (os indexes), a new bitmap. */
hwloc_bitmap_t topo_cpuset(const struct topo *t);
