/* daemon/hugepages.c's exports for its tests only. */
#pragma once

#include "hugepages.h"

/* The same over any pool ops (tests put a fake kernel here); host->root is
 * still where osrelease, mounts and meminfo are read. */
int hugepages_reserve_run(const struct conf *c, const struct topo *t,
                          const struct hugepages_host *host);
