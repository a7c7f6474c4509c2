/* A QEMU process as /proc shows it (through hostfs, so tests use fixture
 * trees): its threads told apart by name, their affinity, their CPU time and
 * the memory its mappings hold per node. Read only; daemon/affinity.c changes
 * affinities and daemon/cgroup.c the cgroup.
 *
 * Threads are told apart by their names (/proc/PID/task/TID/comm):
 *   "CPU N/KVM", "CPU N/TCG"   vCPU N
 *   "IO iothreadN"             the iothread libvirt numbers N (object iothreadN)
 *   anything else              emulator: the main thread (tid == pid) and
 *                              QEMU's helpers (call_rcu, worker threads,
 *                              "IO mon_iothread", ...). libvirt keeps these in
 *                              the domain's "emulator" cgroup, so they follow
 *                              the emulator pin there too. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <hwloc.h>

#include "kvmtune/pinset.h"
#include "kvmtune/topo.h"

enum qemuproc_kind { QEMUPROC_EMULATOR, QEMUPROC_VCPU, QEMUPROC_IOTHREAD };

struct qemuproc_thread {
        pid_t tid;
        enum qemuproc_kind kind;
        int id;                         /* vCPU number or iothread id; 0 for emulator */
        char comm[32];
};

struct qemuproc {
        pid_t pid;
        int nthread;
        struct qemuproc_thread *threads;
};

/* Lists the threads of pid below root (NULL: the host). Returns the number of
 * threads, -ESRCH when the process is gone, or another negative errno. *ret is
 * owned by the caller (qemuproc_free). */
int qemuproc_scan(const char *root, pid_t pid, struct qemuproc **ret);
struct qemuproc *qemuproc_free(struct qemuproc *q);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct qemuproc *, qemuproc_free)

/* The cpuset of one thread of p: vCPU N -> p->vcpu[N], iothread id ->
 * its set, everything else (and unknown ids) -> p->emulator. Borrowed. */
hwloc_const_bitmap_t qemuproc_thread_cpus(const struct qemuproc_thread *t, const struct pinset *p);

/* CPU time (utime + stime, clock ticks) the vCPU threads of q have used so
 * far, from /proc/PID/task/TID/stat below root; threads that vanished count 0. */
long qemuproc_vcpu_ticks(const char *root, const struct qemuproc *q);

/* Cpus_allowed_list of /proc/PID/task/TID/status below root. *ret is a new
 * bitmap. 0, -ENODATA (no such line), -EINVAL, or the read error. */
int qemuproc_read_affinity(const char *root, pid_t pid, pid_t tid, hwloc_bitmap_t *ret);

/* What the threads of QEMU pid below root really have, as a pinset of
 * nvcpu vCPUs and the iothreads iothread_ids: each vCPU's and iothread's
 * affinity (a vanished thread: an empty set) and the main thread's as the
 * emulator set (NULL when unreadable). 0, -ESRCH (no such process, pid <= 0
 * or nvcpu <= 0: *ret untouched) or another qemuproc_scan() error. */
int qemuproc_read_pins(const char *root, pid_t pid, int nvcpu, int niothread, const int *iothread_ids,
                       struct pinset *ret);

/* The same from /proc/PID/numa_maps below root. 0 or the read error. */
int qemuproc_read_numa_maps(const char *root, pid_t pid, const struct topo *t,
                            uint64_t (*ret_pages)[TOPO_PAGE_SIZES], uint64_t *ret_base_kib);
