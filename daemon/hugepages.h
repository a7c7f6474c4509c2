/* kvmtuned --reserve-hugepages: the boot-time run of kvmtuned-hugepages.service. */
#pragma once

#include <sys/types.h>

#include "kvmtune/conf.h"
#include "kvmtune/hugepages.h"
#include "kvmtune/topo.h"

/* Plans the pools from c->hugepages[] over t's nodes, sets them under
 * sysfs_root (NULL or "/": the host), prints one line per node and size on
 * stdout, the boot command line for any shortfall, and checks that a hugetlbfs
 * mount exists for each reserved size: on the real host ("/") a missing one is
 * mounted, under any other root it is only reported. Returns the exit status:
 * 0 when every pool holds its target, 1 when a pool is short, a configured
 * node does not exist, sysfs cannot be read or written, or a mount fails. */
int hugepages_reserve_main(const struct conf *c, const struct topo *t, const char *sysfs_root);

/* The same over any pool ops (tests put a fake kernel here); host->root is
 * still where osrelease, mounts and meminfo are read. */
int hugepages_reserve_run(const struct conf *c, const struct topo *t,
                          const struct hugepages_host *host);

/* The pieces of the boot-time run that "kvmtunectl hugepages reserve" (the
 * kvmtune.v1.HugepagesReserve method) shares, all reading under root (NULL or
 * "/": the host). */

/* The kernel command line that reserves at boot every size of res[0..n) that
 * came out short (hugepages_boot_cmdline), per node when the kernel whose
 * /proc/sys/kernel/osrelease is under root takes that syntax. NULL when
 * nothing is short. *ret_note: NULL, or why the line holds plain totals (a
 * kernel before 5.16, or one of unknown version). Caller frees both. */
char *hugepages_reserve_cmdline(const struct hugepages_result *res, int n, const char *root,
                                char **ret_note);

/* The hugetlbfs mount point of each size under root (/proc/mounts; a mount
 * without pagesize= has the Hugepagesize of /proc/meminfo), NULL where there
 * is none. Caller frees each. */
void hugepages_read_mounts(const char *root, char *ret_paths[TOPO_PAGE_SIZES]);

/* "mkdir -p DIR && mount -t hugetlbfs -o pagesize=SIZE hugetlbfs DIR" for the
 * mount point hugepages_mount_point() picks. Caller frees. */
char *hugepages_mount_command(int size, char *const paths[TOPO_PAGE_SIZES]);

/* When res left pages of its size reserved (no error, target above 0) and no
 * hugetlbfs mount under root has that page size: the warning that libvirt
 * cannot back guests with them, with the command that mounts one. Else NULL.
 * Nothing is mounted. Caller frees. */
char *hugepages_reserve_mount_warning(const struct hugepages_result *res, const char *root);

/* ---- the running daemon's view of the pools -----------------------------------
 *
 * topo_hpool.free means "free pages not held by a placed domain": the placement
 * engine subtracts alloc->hp_pages (pages committed to placed domains) from it.
 * The kernel's free_hugepages already lacks the pages a running QEMU holds, so
 * a refresh from sysfs adds back the pages committed to placed domains, and
 * those the QEMU of the domain being (re)placed holds now (its pages are its
 * own, not someone else's). Between a domain's placement and its QEMU taking
 * the pages the view is briefly optimistic by that domain's own pages. */

struct alloc;

/* Where the daemon reads and writes pools: its --sysfs-root, else the real
 * host ("/") unless it runs on a --topology file (NULL: no live pools). */
static inline const char *hugepages_daemon_root(const char *sysfs_root, const char *topology_path) {
        return sysfs_root ? sysfs_root : topology_path ? NULL : "/";
}

/* Adds to ret[node index][size] the hugepages a process maps, from the text of
 * /proc/PID/numa_maps ("... huge ... N0=32 kernelpagesize_kB=2048"). Nodes t
 * does not have and sizes other than 2M/1G are skipped. Returns pages found. */
uint64_t hugepages_parse_numa_maps(const char *text, const struct topo *t,
                                   uint64_t (*ret)[TOPO_PAGE_SIZES]);
/* Base-page memory per node (KiB, indexed like t->nodes) that the mappings of
 * a /proc/PID/numa_maps text hold, added to ret_kib. */
void hugepages_parse_numa_maps_base(const char *text, const struct topo *t, uint64_t *ret_kib);

/* Re-reads the pools under root (topo_refresh_memory) and adds back a's
 * committed pages and the pages process self_pid (0: none) holds, capped at
 * the pool's total. root NULL: hwloc's counts, nothing added. 0 or negative
 * errno from topo_refresh_memory. */
int hugepages_refresh_topo(struct topo *t, const struct alloc *a, const char *root, pid_t self_pid);
/* Base memory the given (placed) QEMUs really hold now, from their numa_maps,
 * added to each node's avail_kib: the placement engine subtracts what they
 * committed, so memory they have not touched yet stays reserved for them. */
void hugepages_add_back_base(struct topo *t, const char *root, const pid_t *pids, int npid);
