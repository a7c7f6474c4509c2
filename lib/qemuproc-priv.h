/* lib/qemuproc.c's exports for its tests only (the daemon reads a process
 * through qemuproc.h). */
#pragma once

#include "kvmtune/qemuproc.h"

/* Kind of a thread by its name; *ret_id gets the vCPU number or iothread id. */
enum qemuproc_kind qemuproc_classify(const char *comm, int *ret_id);

/* What the mappings of a /proc/PID/numa_maps text hold per node (indexed like
 * t->nodes; nodes t lacks are skipped): hugepages of 2M/1G by size into
 * ret_pages (may be NULL), base-page memory in KiB into ret_base_kib (may be
 * NULL), both added to. Returns the hugepages found. One line looks like
 * "7f..000 bind:0 file=/dev/hugepages/x huge dirty=32 N0=32 kernelpagesize_kB=2048". */
uint64_t qemuproc_parse_numa_maps(const char *text, const struct topo *t,
                                  uint64_t (*ret_pages)[TOPO_PAGE_SIZES], uint64_t *ret_base_kib);
