/* kvmtuned --reserve-hugepages: the boot-time run of kvmtuned-hugepages.service. */
#pragma once

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
