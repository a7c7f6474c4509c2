/* lib/hugepages.c's exports for its tests only: the daemon reserves through
 * hugepages_apply_plan() and hugepages_set_pool() (hugepages.h). */
#pragma once

#include "kvmtune/hugepages.h"

/* hostfs implementations, usable by fake ops that wrap a fixture tree.
 * read: -ENODEV when node N does not exist, -EOPNOTSUPP when the node has no
 * pool of that size, other negative errno when a file is unreadable. */
int hugepages_read_pool(const char *root, unsigned node_os, int size, struct hugepages_pool *ret);
int hugepages_write_pool(const char *root, unsigned node_os, int size, uint64_t count);

/* Compacts node N's memory (nodeN/compact), or all memory (compact_memory)
 * when the kernel has no per-node file. */
int hugepages_compact(const char *root, unsigned node_os);

/* Act on one pool: read it, raise count to the persistent pages in use (never
 * shrink below them; a request to shrink never grows the pool), write nothing
 * when the pool already holds the target, else
 * write, read back, and while short compact and retry, HUGEPAGES_MAX_TRIES
 * writes at most. *ret is filled in every case, failures included, so the
 * caller can report it. Returns 0 (pool at target or short: see
 * hugepages_result_short) or negative errno (also in ret->error). */
int hugepages_apply_pool(const struct hugepages_host *h, unsigned node_os, int size,
                         uint64_t count, struct hugepages_result *ret);
