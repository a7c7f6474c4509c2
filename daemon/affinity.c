/* The applier of the hook path: QEMU's threads pinned with
 * sched_setaffinity() and its cgroup cpuset written, without libvirt (libvirt
 * holds the domain locked while its hook runs, so no libvirt call may touch
 * the domain then). The threads are read from /proc (lib/qemuproc.c). */
#include "config.h"

#include <errno.h>
#include <sched.h>

#include "affinity.h"
#include "cgroup.h"
#include "kvmtune/log.h"
#include "kvmtune/qemuproc.h"
#include "kvmtune/util.h"

int affinity_set(pid_t tid, hwloc_const_bitmap_t cpus) {
        int last = hwloc_bitmap_last(cpus), cpu, r = 0;
        size_t size;
        cpu_set_t *set;

        if (last < 0 || hwloc_bitmap_iszero(cpus))
                return -EINVAL;
        set = CPU_ALLOC(last + 1);
        size = CPU_ALLOC_SIZE(last + 1);
        CPU_ZERO_S(size, set);
        hwloc_bitmap_foreach_begin(cpu, cpus) {
                CPU_SET_S(cpu, size, set);
        } hwloc_bitmap_foreach_end();
        if (sched_setaffinity(tid, size, set) < 0)
                r = -errno;
        CPU_FREE(set);
        return r;
}

/* ---- apply -------------------------------------------------------------------- */

static int affinity_apply_cgroup(const char *root, pid_t pid, const struct pinset *p,
                                 char reason[PLACEMENT_REASON_MAX]) {
        _cleanup_free_ char *dir = NULL;
        int r = cgroup_read_dir(root, pid, &dir);

        if (r >= 0) {
                struct cgroup cg = { &cgroup_ops_hostfs, (void *)root, dir };

                r = cgroup_apply(&cg, p, CGROUP_CPUS | CGROUP_MEMS);
        }
        if (r == -ENOENT) {
                log_debug("QEMU %d: no cpuset cgroup to write, affinity only", (int)pid);
                return 0;
        }
        if (r < 0)
                return error_set(reason, PLACEMENT_REASON_MAX, r, "writing the cpuset cgroup %s failed: %s",
                                     dir ? dir : "?", strerror(-r));
        return 0;
}

static int affinity_apply_thread(const char *root, const struct qemuproc *q,
                                 const struct qemuproc_thread *t, const struct pinset *p,
                                 char reason[PLACEMENT_REASON_MAX]) {
        hwloc_const_bitmap_t want = qemuproc_thread_cpus(t, p);
        _cleanup_bitmap_ hwloc_bitmap_t got = NULL;
        _cleanup_free_ char *s = NULL;
        int r = affinity_set(t->tid, want);

        if (r == -ESRCH)
                return 0;
        if (r < 0)
                return error_set(reason, PLACEMENT_REASON_MAX, r, "setting the affinity of thread %d (%s) failed: %s",
                                     (int)t->tid, t->comm, strerror(-r));
        r = qemuproc_read_affinity(root, q->pid, t->tid, &got);
        if (r == -ENOENT || r == -ESRCH)
                return 0;
        if (r >= 0 && hwloc_bitmap_isequal(got, want))
                return 0;
        hwloc_bitmap_list_asprintf(&s, want);
        return error_set(reason, PLACEMENT_REASON_MAX, r < 0 ? r : -EPERM, "thread %d (%s) is not on CPUs %s after setting it%s",
                             (int)t->tid, t->comm, s ? s : "?",
                             r < 0 ? ": cannot read its status" : " (outside its cgroup?)");
}

int affinity_apply(const char *root, pid_t pid, const struct pinset *p,
                   char reason[PLACEMENT_REASON_MAX], long *ret_vcpu_ticks, int *ret_moved) {
        _cleanup_(qemuproc_freep) struct qemuproc *q = NULL;
        int r = qemuproc_scan(root, pid, &q), moved = 0;

        if (r < 0)
                return error_set(reason, PLACEMENT_REASON_MAX, r, "cannot list the threads of QEMU %d: %s", (int)pid, strerror(-r));
        if (ret_vcpu_ticks)
                *ret_vcpu_ticks = qemuproc_vcpu_ticks(root, q);
        /* before the cgroup: writing a v1 cpuset moves its threads too */
        for (int i = 0; ret_moved && i < q->nthread; i++) {
                _cleanup_bitmap_ hwloc_bitmap_t before = NULL;
                const struct qemuproc_thread *t = &q->threads[i];

                if (qemuproc_read_affinity(root, pid, t->tid, &before) < 0 ||
                    !hwloc_bitmap_isequal(before, qemuproc_thread_cpus(t, p)))
                        moved++;
        }
        r = affinity_apply_cgroup(root, pid, p, reason);
        for (int i = 0; r >= 0 && i < q->nthread; i++)
                r = affinity_apply_thread(root, q, &q->threads[i], p, reason);
        if (ret_moved)
                *ret_moved = moved;
        return r;
}

int affinity_pin_helpers(const char *root, pid_t pid, hwloc_const_bitmap_t cpus) {
        _cleanup_(qemuproc_freep) struct qemuproc *q = NULL;
        int r = qemuproc_scan(root, pid, &q);

        for (int i = 0; r >= 0 && i < q->nthread; i++) {
                const struct qemuproc_thread *t = &q->threads[i];

                if (t->kind == QEMUPROC_EMULATOR && t->tid != pid) {
                        r = affinity_set(t->tid, cpus);
                        if (r == -ESRCH)        /* gone meanwhile */
                                r = 0;
                }
        }
        return r < 0 ? r : 0;
}
