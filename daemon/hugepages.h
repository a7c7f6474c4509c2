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


/* When res left pages of its size reserved (no error, target above 0) and no
 * hugetlbfs mount under root has that page size: the warning that libvirt
 * cannot back guests with them, with the command that mounts one. Else NULL.
 * Nothing is mounted. Caller frees. */
char *hugepages_reserve_mount_warning(const struct hugepages_result *res, const char *root);
