/* lib/qemuproc.c (thread names, /proc readers) and the hook path's applier
 * daemon/affinity.c: real affinity on this process's own threads (named like
 * QEMU's), and the cgroup cpuset writes on fixture trees (v1 and v2) under a
 * sysfs root whose proc/PID/task links to the real /proc. No libvirt. */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "../../daemon/affinity.h"
#include "../../lib/qemuproc-priv.h"
#include "kvmtune/hostfs.h"
#include "kvmtune/util.h"
#include "tap.h"

static const char *const thread_names[] = { "CPU 0/TCG", "CPU 1/TCG", "IO iothread1", "IO mon_iothread" };
#define NTHREAD ELEMENTSOF(thread_names)

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int started, stop;
static pid_t tids[NTHREAD];

static void *thread_main(void *arg) {
        int i = (int)(long)arg;

        pthread_setname_np(pthread_self(), thread_names[i]);
        pthread_mutex_lock(&lock);
        tids[i] = (pid_t)syscall(SYS_gettid);
        started++;
        pthread_cond_broadcast(&cond);
        while (!stop)
                pthread_cond_wait(&cond, &lock);
        pthread_mutex_unlock(&lock);
        return NULL;
}

static void test_classify(void) {
        static const struct { const char *comm; enum qemuproc_kind kind; int id; } cases[] = {
                { "CPU 0/KVM", QEMUPROC_VCPU, 0 }, { "CPU 17/TCG", QEMUPROC_VCPU, 17 },
                { "IO iothread3", QEMUPROC_IOTHREAD, 3 }, { "IO mon_iothread", QEMUPROC_EMULATOR, 0 },
                { "qemu-system-x86", QEMUPROC_EMULATOR, 0 }, { "call_rcu", QEMUPROC_EMULATOR, 0 },
                { "CPU 1/KVMX", QEMUPROC_EMULATOR, 0 }, { "CPU x/KVM", QEMUPROC_EMULATOR, 0 },
                { "CPU 2/HVF", QEMUPROC_EMULATOR, 0 }, { "IO iothread0", QEMUPROC_EMULATOR, 0 },
                { "IO iothread2x", QEMUPROC_EMULATOR, 0 }, { "", QEMUPROC_EMULATOR, 0 },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                int id = -5;
                enum qemuproc_kind k = qemuproc_classify(cases[i].comm, &id);
                ok(k == cases[i].kind && id == cases[i].id, "classify '%s': kind %d id %d", cases[i].comm, k, id);
        }
}

static void put(const char *root, const char *rel, const char *text) {
        _cleanup_free_ char *p = xasprintf("%s/%s", root, rel), *cmd = NULL;
        FILE *f;

        cmd = xasprintf("mkdir -p \"$(dirname '%s')\"", p);
        if (system(cmd) != 0)
                abort();
        f = fopen(p, "w");
        if (!f)
                abort();
        fputs(text, f);
        fclose(f);
}

static char *get(const char *root, const char *rel) {
        char *text = NULL;

        if (hostfs_read(root, rel, &text) < 0)
                return xstrdup("(missing)");
        text[strcspn(text, "\n")] = '\0';
        return text;
}

static void check_file(const char *root, const char *dir, const char *file, const char *want) {
        _cleanup_free_ char *rel = xasprintf("%s/%s", dir, file), *got = get(root, rel);

        is_str(got, want, "%s = %s", file, want);
}

/* A fixture root: proc/PID/task links to the real threads, proc/PID/cgroup
 * and the cgroup tree are files. */
static char *make_root(const char *cgroup_line, const char *dir, bool cpuset_files, const char *parent_cpus) {
        char tmpl[] = "/tmp/test-qemuproc.XXXXXX";
        char *root = xstrdup(mkdtemp(tmpl));
        _cleanup_free_ char *procdir = xasprintf("%s/proc/%d", root, (int)getpid());
        _cleanup_free_ char *task = xasprintf("%s/task", procdir), *real = xasprintf("/proc/%d/task", (int)getpid());
        static const char *const children[] = { "", "/vcpu0", "/vcpu1", "/emulator", "/iothread1" };

        _cleanup_free_ char *cg = xasprintf("proc/%d/cgroup", (int)getpid());

        put(root, cg, cgroup_line);
        if (symlink(real, task) < 0)
                abort();
        for (size_t i = 0; cpuset_files && i < ELEMENTSOF(children); i++) {
                _cleanup_free_ char *c = xasprintf("%s%s/cpuset.cpus", dir + 1, children[i]);
                _cleanup_free_ char *m = xasprintf("%s%s/cpuset.mems", dir + 1, children[i]);
                put(root, c, i == 0 ? parent_cpus : "");
                put(root, m, i == 0 ? "0\n" : "");
        }
        return root;
}

static void rm_root(char *root) {
        _cleanup_free_ char *cmd = xasprintf("rm -rf '%s'", root);

        if (system(cmd) != 0)
                fprintf(stderr, "cannot remove %s\n", root);
        free(root);
}

static hwloc_bitmap_t one(int cpu) {
        hwloc_bitmap_t m = hwloc_bitmap_alloc();

        hwloc_bitmap_set(m, cpu);
        return m;
}

/* vCPU 0 on b, vCPU 1 on a, iothread 1 on b, emulator on a; mems node 0. */
static void make_pins(struct pinset *p, int a, int b) {
        *p = (struct pinset){ .nvcpu = 2, .niothread = 1, .numa = POLICY_NUMA_STRICT };
        p->vcpu = xcalloc(2, sizeof *p->vcpu);
        p->vcpu[0] = one(b);
        p->vcpu[1] = one(a);
        p->iothread = xcalloc(1, sizeof *p->iothread);
        p->iothread[0] = one(b);
        p->iothread_id = xcalloc(1, sizeof(int));
        p->iothread_id[0] = 1;
        p->emulator = one(a);
        p->mems = one(0);
}

static void free_pins(struct pinset *p) {
        for (int i = 0; i < p->nvcpu; i++)
                hwloc_bitmap_free(p->vcpu[i]);
        hwloc_bitmap_free(p->iothread[0]);
        hwloc_bitmap_free(p->emulator);
        hwloc_bitmap_free(p->mems);
        free(p->vcpu);
        free(p->iothread);
        free(p->iothread_id);
}

static int affinity_of(pid_t tid) {
        hwloc_bitmap_t m = NULL;
        int cpu;

        if (qemuproc_read_affinity(NULL, getpid(), tid, &m) < 0)
                return -1;
        cpu = hwloc_bitmap_weight(m) == 1 ? hwloc_bitmap_first(m) : -2;
        hwloc_bitmap_free(m);
        return cpu;
}

static void test_scan(void) {
        struct qemuproc *q = NULL;
        int n = qemuproc_scan(NULL, getpid(), &q), seen = 0;

        ok(n >= (int)NTHREAD + 1, "scan lists this process's threads (%d)", n);
        for (int i = 0; q && i < q->nthread; i++) {
                const struct qemuproc_thread *t = &q->threads[i];
                if (t->tid == tids[0])
                        seen += t->kind == QEMUPROC_VCPU && t->id == 0;
                else if (t->tid == tids[1])
                        seen += t->kind == QEMUPROC_VCPU && t->id == 1;
                else if (t->tid == tids[2])
                        seen += t->kind == QEMUPROC_IOTHREAD && t->id == 1;
                else if (t->tid == tids[3] || t->tid == getpid())
                        seen += t->kind == QEMUPROC_EMULATOR;
        }
        is_int(seen, NTHREAD + 1, "vCPU, iothread, mon_iothread and main thread recognised");
        qemuproc_free(q);
        is_int(qemuproc_scan(NULL, 0, &q), -ESRCH, "pid 0 is -ESRCH");
}

/* What qemuproc_read_pins() reports for the real threads is each one's
 * affinity: vCPU 0 and 1, iothread 1; vCPU 2 has no thread (empty). */
static void test_read_pins(void) {
        static const int ids[] = { 1 };
        struct pinset p;

        is_int(qemuproc_read_pins(NULL, getpid(), 3, 1, ids, &p), 0, "read_pins of this process");
        is_int(p.nvcpu, 3, "three vCPU slots");
        is_int(hwloc_bitmap_weight(p.vcpu[0]) == 1 ? hwloc_bitmap_first(p.vcpu[0]) : -2, affinity_of(tids[0]),
               "vCPU 0: its thread's affinity");
        is_int(hwloc_bitmap_weight(p.vcpu[1]) == 1 ? hwloc_bitmap_first(p.vcpu[1]) : -2, affinity_of(tids[1]),
               "vCPU 1: its thread's affinity");
        ok(hwloc_bitmap_iszero(p.vcpu[2]), "vCPU 2 without a thread: the empty set");
        is_int(hwloc_bitmap_weight(p.iothread[0]) == 1 ? hwloc_bitmap_first(p.iothread[0]) : -2,
               affinity_of(tids[2]), "iothread 1: its thread's affinity");
        ok(p.emulator && !hwloc_bitmap_iszero(p.emulator), "the main thread's affinity as the emulator set");
        pinset_done(&p);
        is_int(qemuproc_read_pins(NULL, 0, 3, 0, NULL, &p), -ESRCH, "no QEMU pid: -ESRCH");
}

static void test_apply_v1(int a, int b) {
        const char *dir = "/sys/fs/cgroup/cpuset/machine/qemu-1-t.libvirt-qemu";
        _cleanup_free_ char *parent_cpus = xasprintf("%d\n", a);
        char *root = make_root("3:cpuset:/machine/qemu-1-t.libvirt-qemu/emulator\n0::/\n", dir, true, parent_cpus);
        _cleanup_free_ char *sa = xasprintf("%d", a), *sb = xasprintf("%d", b);
        _cleanup_free_ char *both = xasprintf(a == b ? "%d" : "%d-%d", a, b);
        char reason[PLACEMENT_REASON_MAX] = "";
        struct pinset p;
        long ticks = -1;
        int r, moved = -1;

        make_pins(&p, a, b);
        r = affinity_apply(root, getpid(), &p, reason, &ticks, &moved);
        is_int(r, 0, "apply (cgroup v1 fixture, real threads): %s", reason);
        ok(moved > 0, "threads were moved (%d)", moved);
        is_int(ticks, 0, "the idle vCPU threads have used no CPU time");
        is_int(affinity_of(tids[0]), b, "vCPU 0 thread on CPU %d", b);
        is_int(affinity_of(tids[1]), a, "vCPU 1 thread on CPU %d", a);
        is_int(affinity_of(tids[2]), b, "iothread 1 on CPU %d", b);
        is_int(affinity_of(tids[3]), a, "mon_iothread (emulator helper) on CPU %d", a);
        is_int(affinity_of(getpid()), a, "main thread (emulator) on CPU %d", a);
        check_file(root, dir, "cpuset.cpus", both);
        check_file(root, dir, "vcpu0/cpuset.cpus", sb);
        check_file(root, dir, "vcpu1/cpuset.cpus", sa);
        check_file(root, dir, "emulator/cpuset.cpus", sa);
        check_file(root, dir, "iothread1/cpuset.cpus", sb);
        check_file(root, dir, "emulator/cpuset.mems", "0");
        check_file(root, dir, "vcpu1/cpuset.mems", "0");
        check_file(root, dir, "cpuset.mems", "0");
        is_int(affinity_apply(root, getpid(), &p, reason, NULL, &moved), 0, "apply again: %s", reason);
        is_int(moved, 0, "applied again: every thread was already on its final CPUs");
        {
                hwloc_bitmap_t hb = hwloc_bitmap_alloc();

                hwloc_bitmap_only(hb, b);
                is_int(affinity_pin_helpers(root, getpid(), hb), 0, "pin helpers onto CPU %d", b);
                is_int(affinity_of(tids[3]), b, "the helper thread (mon_iothread) is on CPU %d", b);
                is_int(affinity_of(getpid()), a, "the main thread is left to libvirt (CPU %d)", a);
                is_int(affinity_of(tids[1]), a, "vCPU 1 is not a helper (CPU %d)", a);
                is_int(affinity_of(tids[2]), b, "iothread 1 is not a helper (CPU %d)", b);
                hwloc_bitmap_free(hb);
        }
        free_pins(&p);
        rm_root(root);
}

static void test_apply_v2(int a, int b) {
        const char *dir = "/sys/fs/cgroup/machine.slice/machine-qemu\\x2d1\\x2dt.scope/libvirt";
        char *root = make_root("0::/machine.slice/machine-qemu\\x2d1\\x2dt.scope/libvirt/emulator\n", dir, true, "\n");
        char *bare = make_root("0::/machine.slice/machine-qemu\\x2d1\\x2dt.scope/libvirt/emulator\n", dir, false, "");
        _cleanup_free_ char *sb = xasprintf("%d", b);
        char reason[PLACEMENT_REASON_MAX] = "";
        struct pinset p;

        make_pins(&p, a, b);
        is_int(affinity_apply(root, getpid(), &p, reason, NULL, NULL), 0, "apply (cgroup v2 fixture): %s", reason);
        check_file(root, dir, "vcpu0/cpuset.cpus", sb);
        check_file(root, dir, "cpuset.cpus", "");
        is_int(affinity_of(tids[0]), b, "vCPU 0 thread on CPU %d", b);
        is_int(affinity_apply(bare, getpid(), &p, reason, NULL, NULL), 0,
               "v2 without the cpuset controller: affinity only: %s", reason);
        is_int(affinity_of(tids[2]), b, "iothread 1 on CPU %d", b);
        free_pins(&p);
        rm_root(root);
        rm_root(bare);
}

static void test_errors(int a) {
        char reason[PLACEMENT_REASON_MAX] = "";
        struct pinset p;
        hwloc_bitmap_t empty = hwloc_bitmap_alloc(), m = NULL;

        make_pins(&p, a, a);
        is_int(affinity_apply(NULL, 999999999, &p, reason, NULL, NULL), -ESRCH, "a pid that does not exist: -ESRCH");
        ok(strstr(reason, "999999999") != NULL, "reason names the pid: %s", reason);
        is_int(affinity_set(getpid(), empty), -EINVAL, "empty cpuset refused");
        is_int(qemuproc_read_affinity(NULL, getpid(), 999999999, &m), -ENOENT, "status of a missing thread: -ENOENT");
        hwloc_bitmap_free(empty);
        free_pins(&p);
}

int main(void) {
        pthread_t th[NTHREAD];
        cpu_set_t set;
        int a = -1, b = -1;

        test_classify();
        if (sched_getaffinity(0, sizeof set, &set) < 0)
                tap_skip_all("cannot read this process's affinity");
        for (int c = 0; c < CPU_SETSIZE; c++)
                if (CPU_ISSET(c, &set)) {
                        if (a < 0)
                                a = c;
                        b = c;
                }
        for (size_t i = 0; i < NTHREAD; i++)
                pthread_create(&th[i], NULL, thread_main, (void *)(long)i);
        pthread_mutex_lock(&lock);
        while (started < (int)NTHREAD)
                pthread_cond_wait(&cond, &lock);
        pthread_mutex_unlock(&lock);

        test_scan();
        test_apply_v1(a, b);
        test_read_pins();
        test_apply_v2(a, b);
        test_errors(a);

        pthread_mutex_lock(&lock);
        stop = 1;
        pthread_cond_broadcast(&cond);
        pthread_mutex_unlock(&lock);
        for (size_t i = 0; i < NTHREAD; i++)
                pthread_join(th[i], NULL);
        return tap_done();
}
