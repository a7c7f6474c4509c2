/* lib/schedstat.c's exports for its tests only: the daemon reads a thread's
 * counters through schedstat.h. */
#pragma once

#include "kvmtune/schedstat.h"

/* Parses "RUN DELAY SLICES\n". 0, or -EINVAL for anything else. */
int schedstat_parse(const char *text, struct schedstat *ret);
