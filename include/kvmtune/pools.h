/* The running daemon's view of node memory and hugepage pools.
 *
 * topo_hpool.free means "free pages not held by a placed domain": the placement
 * engine subtracts alloc->hp_pages (pages committed to placed domains) from it.
 * The kernel's free_hugepages already lacks the pages a running QEMU holds, so
 * a refresh from sysfs adds back the pages committed to placed domains, and
 * those the QEMU of the domain being (re)placed holds now (its pages are its
 * own, not someone else's). Between a domain's placement and its QEMU taking
 * the pages the view is briefly optimistic by that domain's own pages. */
#pragma once

#include <stdint.h>
#include <sys/types.h>

#include "kvmtune/placement.h"
#include "kvmtune/topo.h"

/* Where the daemon reads and writes pools: its --sysfs-root, else the real
 * host ("/") unless it runs on a --topology file (NULL: no live pools). */
static inline const char *pools_daemon_root(const char *sysfs_root, const char *topology_path) {
        return sysfs_root ? sysfs_root : topology_path ? NULL : "/";
}

/* Re-reads the pools under root (topo_refresh_memory) and adds back a's
 * committed pages and the pages (and base memory) process self_pid (0: none)
 * holds, capped at the pool's total. root NULL: hwloc's counts, nothing added.
 * 0 or negative errno from topo_refresh_memory. */
int pools_refresh(struct topo *t, const struct alloc *a, const char *root, pid_t self_pid);

/* Base memory placed QEMUs really hold (KiB per node, indexed like t->nodes,
 * from their numa_maps) added to each known node's avail_kib: the engine
 * subtracts what they committed, so memory they have not touched yet stays
 * reserved for them. */
void pools_add_back_memory(struct topo *t, const uint64_t *held_kib);
