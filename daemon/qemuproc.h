/* A QEMU process seen from /proc (through hostfs, so tests use fixture trees)
 * and changed directly, without libvirt: thread affinity with
 * sched_setaffinity() and the domain's cgroup cpuset. The hook path uses it
 * (libvirt holds the domain locked while its hook runs, so no libvirt call may
 * touch the domain then).
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
#include <sys/types.h>
#include <hwloc.h>

#include "kvmtune/placement.h"

struct pinset;

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

/* Kind of a thread by its name; *ret_id gets the vCPU number or iothread id. */
enum qemuproc_kind qemuproc_classify(const char *comm, int *ret_id);

/* Lists the threads of pid below root (NULL: the host). Returns the number of
 * threads, -ESRCH when the process is gone, or another negative errno. *ret is
 * owned by the caller (qemuproc_free). */
int qemuproc_scan(const char *root, pid_t pid, struct qemuproc **ret);
struct qemuproc *qemuproc_free(struct qemuproc *q);
static inline void qemuproc_freep(struct qemuproc **q) { qemuproc_free(*q); }

/* The cpuset of one thread of p: vCPU N -> p->vcpu[N], iothread id ->
 * its set, everything else (and unknown ids) -> p->emulator. Borrowed. */
hwloc_const_bitmap_t qemuproc_thread_cpus(const struct qemuproc_thread *t, const struct pinset *p);

/* CPU time (utime + stime, clock ticks) the vCPU threads of q have used so
 * far, from /proc/PID/task/TID/stat below root; threads that vanished count 0. */
long qemuproc_vcpu_ticks(const char *root, const struct qemuproc *q);

/* The emulator's helper threads (every thread but the vCPUs, the iothreads and
 * the main thread) onto cpus: libvirt's live emulator pin moves only the main
 * thread and the cgroup. 0 or negative errno. */
int qemuproc_pin_helpers(const char *root, pid_t pid, hwloc_const_bitmap_t cpus);

/* sched_setaffinity(tid) to the os indexes in cpus. 0 or negative errno. */
int qemuproc_set_affinity(pid_t tid, hwloc_const_bitmap_t cpus);
/* Cpus_allowed_list of /proc/PID/task/TID/status below root. *ret is a new
 * bitmap. 0, -ENODATA (no such line), -EINVAL, or the read error. */
int qemuproc_read_affinity(const char *root, pid_t pid, pid_t tid, hwloc_bitmap_t *ret);

/* The domain's cgroup (the parent of vcpuN, emulator, iothreadN) gets
 * cpuset.cpus widened to hold the union of p's sets (never narrowed: libvirt
 * owns it), each existing child its own cpuset.cpus, and, when p->mems is set
 * with numa strict, cpuset.mems on the parent and every child (parent widened
 * first, narrowed last: cgroup v1 refuses a child outside its parent).
 * dir is the domain cgroup directory as apply_cgroup_dir() returns it.
 * A hierarchy without cpuset files (cgroup v2 without the cpuset controller)
 * is -ENOENT, which callers treat as "nothing to do". */
int qemuproc_cgroup_apply(const char *root, const char *dir, const struct pinset *p);

/* Applies p to the QEMU process: cgroup first (so the affinities are allowed),
 * then every thread's affinity, then reads the affinities back from /proc and
 * compares. Returns 0 or negative errno with reason[] filled. A thread that
 * exits meanwhile is not an error. ret_vcpu_ticks (may be NULL) gets the vCPU
 * time used before the threads were pinned (qemuproc_vcpu_ticks); ret_moved
 * (may be NULL) how many threads were not on their final CPUs yet (0: libvirt
 * already pinned them at launch from the persistent definition). */
int qemuproc_apply(const char *root, pid_t pid, const struct pinset *p,
                   char reason[PLACEMENT_REASON_MAX], long *ret_vcpu_ticks, int *ret_moved);
