/* QEMU threads by name, their affinity set directly, and the domain's cgroup
 * cpuset: the applier of the hook path (see qemuproc.h). No libvirt calls. */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <sched.h>
#include <stdarg.h>

#include "daemon.h"
#include "qemuproc.h"
#include "kvmtune/hostfs.h"
#include "kvmtune/log.h"
#include "kvmtune/util.h"


static inline void closedirp(DIR **d) { if (*d) closedir(*d); }

/* ---- threads ------------------------------------------------------------------ */

/* "CPU 12/KVM" -> 12; -1 when the name is not a vCPU's. */
static int classify_vcpu(const char *comm) {
        int n = 0, len = 0;
        char accel[8] = "";

        if (sscanf(comm, "CPU %d/%7[A-Z]%n", &n, accel, &len) != 2 || comm[len] != '\0' || n < 0)
                return -1;
        return streq(accel, "KVM") || streq(accel, "TCG") ? n : -1;
}

/* "IO iothread3" -> 3 (libvirt's iothread ids start at 1); -1 otherwise,
 * "IO mon_iothread" included. */
static int classify_iothread(const char *comm) {
        int n = 0, len = 0;

        if (sscanf(comm, "IO iothread%d%n", &n, &len) != 1 || comm[len] != '\0' || n < 1)
                return -1;
        return n;
}

enum qemuproc_kind qemuproc_classify(const char *comm, int *ret_id) {
        int id = classify_vcpu(comm);

        if (id >= 0)
                return *ret_id = id, QEMUPROC_VCPU;
        id = classify_iothread(comm);
        if (id >= 0)
                return *ret_id = id, QEMUPROC_IOTHREAD;
        *ret_id = 0;
        return QEMUPROC_EMULATOR;
}

static void scan_add(const char *root, struct qemuproc *q, pid_t tid) {
        _cleanup_free_ char *path = xasprintf("/proc/%d/task/%d/comm", (int)q->pid, (int)tid);
        _cleanup_free_ char *comm = NULL;
        struct qemuproc_thread *t;

        if (hostfs_read(root, path, &comm) < 0)
                return;                 /* exited meanwhile */
        comm[strcspn(comm, "\n")] = '\0';
        q->threads = xrealloc(q->threads, (q->nthread + 1) * sizeof *q->threads);
        t = &q->threads[q->nthread++];
        *t = (struct qemuproc_thread){ .tid = tid };
        snprintf(t->comm, sizeof t->comm, "%s", comm);
        t->kind = qemuproc_classify(t->comm, &t->id);
}

int qemuproc_scan(const char *root, pid_t pid, struct qemuproc **ret) {
        _cleanup_free_ char *rel = xasprintf("/proc/%d/task", (int)pid);
        _cleanup_free_ char *dir = hostfs_path(root, rel);
        _cleanup_(closedirp) DIR *dh = NULL;
        struct qemuproc *q;
        struct dirent *e;

        if (pid <= 0)
                return -ESRCH;
        dh = opendir(dir);
        if (!dh)
                return errno == ENOENT ? -ESRCH : -errno;
        q = xcalloc(1, sizeof *q);
        q->pid = pid;
        while ((e = readdir(dh)))
                if (e->d_name[0] >= '0' && e->d_name[0] <= '9')
                        scan_add(root, q, (pid_t)atoi(e->d_name));
        if (q->nthread == 0) {
                qemuproc_free(q);
                return -ESRCH;
        }
        *ret = q;
        return q->nthread;
}

struct qemuproc *qemuproc_free(struct qemuproc *q) {
        if (!q)
                return NULL;
        free(q->threads);
        free(q);
        return NULL;
}


hwloc_const_bitmap_t qemuproc_thread_cpus(const struct qemuproc_thread *t, const struct pinset *p) {
        if (t->kind == QEMUPROC_VCPU && t->id < p->nvcpu && p->vcpu[t->id])
                return p->vcpu[t->id];
        if (t->kind == QEMUPROC_IOTHREAD)
                for (int i = 0; i < p->niothread; i++)
                        if (p->iothread_id[i] == t->id && p->iothread[i])
                                return p->iothread[i];
        return p->emulator;
}

static long thread_ticks(const char *root, pid_t pid, pid_t tid) {
        _cleanup_free_ char *path = xasprintf("/proc/%d/task/%d/stat", (int)pid, (int)tid);
        _cleanup_free_ char *text = NULL;
        unsigned long utime = 0, stime = 0;
        const char *p;

        if (hostfs_read(root, path, &text) < 0)
                return 0;
        p = strrchr(text, ')');         /* comm may hold spaces and parentheses */
        /* after ") ": state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime */
        if (!p || sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &utime, &stime) != 2)
                return 0;
        return (long)(utime + stime);
}

long qemuproc_vcpu_ticks(const char *root, const struct qemuproc *q) {
        long sum = 0;

        for (int i = 0; i < q->nthread; i++)
                if (q->threads[i].kind == QEMUPROC_VCPU)
                        sum += thread_ticks(root, q->pid, q->threads[i].tid);
        return sum;
}

/* ---- affinity ----------------------------------------------------------------- */

int qemuproc_set_affinity(pid_t tid, hwloc_const_bitmap_t cpus) {
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

int qemuproc_read_affinity(const char *root, pid_t pid, pid_t tid, hwloc_bitmap_t *ret) {
        _cleanup_free_ char *path = xasprintf("/proc/%d/task/%d/status", (int)pid, (int)tid);
        _cleanup_free_ char *text = NULL;
        char *line;
        hwloc_bitmap_t m;
        int r = hostfs_read(root, path, &text);

        if (r < 0)
                return r;
        line = strstr(text, "\nCpus_allowed_list:");
        if (!line)
                return -ENODATA;
        line += strlen("\nCpus_allowed_list:");
        line += strspn(line, " \t");
        line[strcspn(line, "\n")] = '\0';
        m = hwloc_bitmap_alloc();
        if (hwloc_bitmap_list_sscanf(m, line) < 0 || hwloc_bitmap_iszero(m)) {
                hwloc_bitmap_free(m);
                return -EINVAL;
        }
        *ret = m;
        return 0;
}

/* ---- cgroup ------------------------------------------------------------------- */

static int cgroup_read_set(const char *root, const char *dir, const char *file, hwloc_bitmap_t *ret) {
        _cleanup_free_ char *path = xasprintf("%s/%s", dir, file), *text = NULL;
        int r = hostfs_read(root, path, &text);

        if (r < 0)
                return r;
        text[strcspn(text, "\n")] = '\0';
        *ret = hwloc_bitmap_alloc();
        if (*text && hwloc_bitmap_list_sscanf(*ret, text) < 0) {
                hwloc_bitmap_free(*ret);
                return -EINVAL;
        }
        return 0;
}

/* dir/child/file = set; a child that does not exist is skipped (1). */
static int cgroup_write_set(const char *root, const char *dir, const char *child,
                            const char *file, hwloc_const_bitmap_t set) {
        _cleanup_free_ char *path = xasprintf("%s%s%s/%s", dir, child ? "/" : "", child ? child : "", file);
        _cleanup_free_ char *value = NULL;
        int r;

        hwloc_bitmap_list_asprintf(&value, set);
        r = hostfs_write(root, path, value);
        return r == -ENOENT && child ? 1 : r;
}

/* The parent must allow every child's set. An empty parent set means
 * "inherit" on cgroup v2: nothing to widen then. */
static int cgroup_widen(const char *root, const char *dir, const char *file, hwloc_const_bitmap_t want) {
        _cleanup_bitmap_ hwloc_bitmap_t cur = NULL;
        int r = cgroup_read_set(root, dir, file, &cur);

        if (r < 0)
                return r;
        if (hwloc_bitmap_iszero(cur) || hwloc_bitmap_isincluded(want, cur))
                return 0;
        hwloc_bitmap_or(cur, cur, want);
        return cgroup_write_set(root, dir, NULL, file, cur);
}

static hwloc_bitmap_t pinset_union(const struct pinset *p) {
        hwloc_bitmap_t all = hwloc_bitmap_dup(p->emulator);

        for (int i = 0; i < p->nvcpu; i++)
                hwloc_bitmap_or(all, all, p->vcpu[i]);
        for (int i = 0; i < p->niothread; i++)
                hwloc_bitmap_or(all, all, p->iothread[i]);
        return all;
}

/* Writes 'file' of every child: vcpuN, emulator, iothreadN. When set is not
 * NULL every child gets it, else each its own cpuset from p. */
static int cgroup_children(const char *root, const char *dir, const struct pinset *p,
                           const char *file, hwloc_const_bitmap_t set) {
        int r = cgroup_write_set(root, dir, "emulator", file, set ? set : p->emulator);

        for (int i = 0; r >= 0 && i < p->nvcpu; i++) {
                _cleanup_free_ char *child = xasprintf("vcpu%d", i);
                r = cgroup_write_set(root, dir, child, file, set ? set : p->vcpu[i]);
        }
        for (int i = 0; r >= 0 && i < p->niothread; i++) {
                _cleanup_free_ char *child = xasprintf("iothread%d", p->iothread_id[i]);
                r = cgroup_write_set(root, dir, child, file, set ? set : p->iothread[i]);
        }
        return r < 0 ? r : 0;
}

static int cgroup_apply_mems(const char *root, const char *dir, const struct pinset *p) {
        int r;

        if (!p->mems || p->numa != POLICY_NUMA_STRICT)
                return 0;
        r = cgroup_widen(root, dir, "cpuset.mems", p->mems);
        if (r >= 0)
                r = cgroup_children(root, dir, p, "cpuset.mems", p->mems);
        if (r >= 0)
                r = cgroup_write_set(root, dir, NULL, "cpuset.mems", p->mems);
        return r;
}

int qemuproc_cgroup_apply(const char *root, const char *dir, const struct pinset *p) {
        _cleanup_bitmap_ hwloc_bitmap_t all = pinset_union(p);
        int r = cgroup_widen(root, dir, "cpuset.cpus", all);

        if (r >= 0)
                r = cgroup_children(root, dir, p, "cpuset.cpus", NULL);
        if (r >= 0)
                r = cgroup_apply_mems(root, dir, p);
        return r;
}

/* ---- apply -------------------------------------------------------------------- */

static _printf_(3, 4) int qemuproc_fail(int err, char reason[PLACEMENT_REASON_MAX], const char *fmt, ...) {
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(reason, PLACEMENT_REASON_MAX, fmt, ap);
        va_end(ap);
        return err;
}

static int qemuproc_apply_cgroup(const char *root, pid_t pid, const struct pinset *p,
                                 char reason[PLACEMENT_REASON_MAX]) {
        _cleanup_free_ char *dir = NULL;
        int r = apply_cgroup_dir(root, pid, &dir);

        if (r >= 0)
                r = qemuproc_cgroup_apply(root, dir, p);
        if (r == -ENOENT) {
                log_debug("QEMU %d: no cpuset cgroup to write, affinity only", (int)pid);
                return 0;
        }
        if (r < 0)
                return qemuproc_fail(r, reason, "writing the cpuset cgroup %s failed: %s",
                                     dir ? dir : "?", strerror(-r));
        return 0;
}

static int qemuproc_apply_thread(const char *root, const struct qemuproc *q,
                                 const struct qemuproc_thread *t, const struct pinset *p,
                                 char reason[PLACEMENT_REASON_MAX]) {
        hwloc_const_bitmap_t want = qemuproc_thread_cpus(t, p);
        _cleanup_bitmap_ hwloc_bitmap_t got = NULL;
        _cleanup_free_ char *s = NULL;
        int r = qemuproc_set_affinity(t->tid, want);

        if (r == -ESRCH)
                return 0;
        if (r < 0)
                return qemuproc_fail(r, reason, "setting the affinity of thread %d (%s) failed: %s",
                                     (int)t->tid, t->comm, strerror(-r));
        r = qemuproc_read_affinity(root, q->pid, t->tid, &got);
        if (r == -ENOENT || r == -ESRCH)
                return 0;
        if (r >= 0 && hwloc_bitmap_isequal(got, want))
                return 0;
        hwloc_bitmap_list_asprintf(&s, want);
        return qemuproc_fail(r < 0 ? r : -EPERM, reason, "thread %d (%s) is not on CPUs %s after setting it%s",
                             (int)t->tid, t->comm, s ? s : "?",
                             r < 0 ? ": cannot read its status" : " (outside its cgroup?)");
}

int qemuproc_apply(const char *root, pid_t pid, const struct pinset *p,
                   char reason[PLACEMENT_REASON_MAX], long *ret_vcpu_ticks, int *ret_moved) {
        _cleanup_(qemuproc_freep) struct qemuproc *q = NULL;
        int r = qemuproc_scan(root, pid, &q), moved = 0;

        if (r < 0)
                return qemuproc_fail(r, reason, "cannot list the threads of QEMU %d: %s", (int)pid, strerror(-r));
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
        r = qemuproc_apply_cgroup(root, pid, p, reason);
        for (int i = 0; r >= 0 && i < q->nthread; i++)
                r = qemuproc_apply_thread(root, q, &q->threads[i], p, reason);
        if (ret_moved)
                *ret_moved = moved;
        return r;
}

int qemuproc_pin_helpers(const char *root, pid_t pid, hwloc_const_bitmap_t cpus) {
        _cleanup_(qemuproc_freep) struct qemuproc *q = NULL;
        int r = qemuproc_scan(root, pid, &q);

        for (int i = 0; r >= 0 && i < q->nthread; i++) {
                const struct qemuproc_thread *t = &q->threads[i];

                if (t->kind == QEMUPROC_EMULATOR && t->tid != pid) {
                        r = qemuproc_set_affinity(t->tid, cpus);
                        if (r == -ESRCH)        /* gone meanwhile */
                                r = 0;
                }
        }
        return r < 0 ? r : 0;
}
