/* The hook path's applier: QEMU's threads and cgroup changed directly,
 * without libvirt (see affinity.c). */
#pragma once

#include <sys/types.h>
#include <hwloc.h>

#include "kvmtune/pinset.h"
#include "kvmtune/placement.h"

/* sched_setaffinity(tid) to the os indexes in cpus. 0 or negative errno. */
int affinity_set(pid_t tid, hwloc_const_bitmap_t cpus);

/* Applies p to the QEMU process below root: cgroup first (so the affinities
 * are allowed, see cgroup.h), then every thread's affinity, then reads the
 * affinities back from /proc and compares. Returns 0 or negative errno with
 * reason[] filled. A thread that exits meanwhile is not an error.
 * ret_vcpu_ticks (may be NULL) gets the vCPU time used before the threads were
 * pinned (qemuproc_vcpu_ticks); ret_moved (may be NULL) how many threads were
 * not on their final CPUs yet (0: libvirt already pinned them at launch from
 * the persistent definition). */
int affinity_apply(const char *root, pid_t pid, const struct pinset *p,
                   char reason[PLACEMENT_REASON_MAX], long *ret_vcpu_ticks, int *ret_moved);

/* The emulator's helper threads (every thread but the vCPUs, the iothreads and
 * the main thread) onto cpus: libvirt's live emulator pin moves only the main
 * thread and the cgroup. 0 or negative errno. */
int affinity_pin_helpers(const char *root, pid_t pid, hwloc_const_bitmap_t cpus);
