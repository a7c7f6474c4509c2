/* daemon/cgroup.c: the domain's cgroup directory from /proc/PID/cgroup (v1
 * and v2), and the order of the cpuset writes checked against a model of the
 * cgroup v1 kernel, which refuses a child's set outside its parent's (EINVAL)
 * and a parent narrowed below a child's (EBUSY). */
#include "config.h"

#include <errno.h>

#include "../../daemon/cgroup.h"
#include "kvmtune/hostfs.h"
#include "kvmtune/util.h"
#include "tap.h"

#define DIR_V1 "/sys/fs/cgroup/cpuset/machine/qemu-3-db1.libvirt-qemu"

/* ---- a cgroup v1 cpuset hierarchy in memory ----------------------------------- */

#define NFILE 16

struct kernel {
        int nfile;
        char *path[NFILE];              /* "DIR[/child]/cpuset.{cpus,mems}" */
        hwloc_bitmap_t set[NFILE];
        char log[2048];                 /* every write, in order: "child file=value;" */
        bool v2;                        /* an empty parent set means: inherit */
};

static int kernel_find(struct kernel *k, const char *path) {
        for (int i = 0; i < k->nfile; i++)
                if (streq(k->path[i], path))
                        return i;
        return -1;
}

static void kernel_add(struct kernel *k, const char *child, const char *file, const char *value) {
        k->path[k->nfile] = xasprintf("%s%s%s/%s", DIR_V1, child ? "/" : "", child ? child : "", file);
        k->set[k->nfile] = hwloc_bitmap_alloc();
        hwloc_bitmap_list_sscanf(k->set[k->nfile], value);
        k->nfile++;
}

static const char *kernel_file(const char *path) {
        return strrchr(path, '/') + 1;
}

/* Whether path names the domain's own file (not a child's). */
static bool kernel_is_parent(const char *path) {
        return strncmp(path, DIR_V1 "/cpuset.", strlen(DIR_V1 "/cpuset.")) == 0;
}

static int kernel_check(struct kernel *k, const char *path, hwloc_const_bitmap_t want) {
        int parent = -1;

        for (int i = 0; i < k->nfile; i++) {
                if (!streq(kernel_file(k->path[i]), kernel_file(path)) || streq(k->path[i], path))
                        continue;
                if (kernel_is_parent(path) && !hwloc_bitmap_isincluded(k->set[i], want))
                        return -EBUSY;  /* a child would be outside its parent */
                if (kernel_is_parent(k->path[i]))
                        parent = i;
        }
        if (!kernel_is_parent(path) && parent >= 0 && !(k->v2 && hwloc_bitmap_iszero(k->set[parent])) &&
            !hwloc_bitmap_isincluded(want, k->set[parent]))
                return -EINVAL;
        return 0;
}

static int kernel_read(void *userdata, const char *path, char **ret) {
        struct kernel *k = userdata;
        int i = kernel_find(k, path);

        if (i < 0)
                return -ENOENT;
        hwloc_bitmap_list_asprintf(ret, k->set[i]);
        return 0;
}

static int kernel_write(void *userdata, const char *path, const char *value) {
        struct kernel *k = userdata;
        _cleanup_bitmap_ hwloc_bitmap_t want = hwloc_bitmap_alloc();
        int i = kernel_find(k, path), r;

        if (i < 0)
                return -ENOENT;
        hwloc_bitmap_list_sscanf(want, value);
        r = kernel_check(k, path, want);
        snprintf(k->log + strlen(k->log), sizeof k->log - strlen(k->log), "%s=%s%s;",
                 path + strlen(DIR_V1) + 1, value, r < 0 ? "(refused)" : "");
        if (r < 0)
                return r;
        hwloc_bitmap_copy(k->set[i], want);
        return 0;
}

static const struct cgroup_ops kernel_ops = { .read = kernel_read, .write = kernel_write };

static void kernel_done(struct kernel *k) {
        for (int i = 0; i < k->nfile; i++) {
                free(k->path[i]);
                hwloc_bitmap_free(k->set[i]);
        }
}

static const char *kernel_get(struct kernel *k, const char *rel, char buf[64]) {
        _cleanup_free_ char *path = xasprintf("%s/%s", DIR_V1, rel), *s = NULL;
        int i = kernel_find(k, path);

        if (i < 0)
                return "(missing)";
        hwloc_bitmap_list_asprintf(&s, k->set[i]);
        snprintf(buf, 64, "%s", s);
        return buf;
}

/* ---- the pinset of the tests ---------------------------------------------------- */

static hwloc_bitmap_t list(const char *s) {
        hwloc_bitmap_t m = hwloc_bitmap_alloc();

        hwloc_bitmap_list_sscanf(m, s);
        return m;
}

/* vCPU 0 on 2, vCPU 1 on 3, emulator on 2, iothread 1 on 3, memory on node 1. */
static void pins_moved(struct pinset *p) {
        static const int ids[] = { 1 };

        pinset_init(p, 2, 1, ids);
        p->vcpu[0] = list("2");
        p->vcpu[1] = list("3");
        p->emulator = list("2");
        p->iothread[0] = list("3");
        p->mems = list("1");
        p->numa = POLICY_NUMA_STRICT;
}

/* The domain as libvirt left it: everything on CPUs 0-1 and node 0. */
static void kernel_setup(struct kernel *k, const char *parent_cpus, const char *parent_mems) {
        static const char *const children[] = { "emulator", "vcpu0", "vcpu1", "iothread1" };

        *k = (struct kernel){};
        kernel_add(k, NULL, "cpuset.cpus", parent_cpus);
        kernel_add(k, NULL, "cpuset.mems", parent_mems);
        for (size_t i = 0; i < ELEMENTSOF(children); i++) {
                kernel_add(k, children[i], "cpuset.cpus", i % 2 ? "1" : "0");
                kernel_add(k, children[i], "cpuset.mems", "0");
        }
}

static void test_order_v1(void) {
        struct kernel k;
        struct pinset p;
        struct cgroup cg = { &kernel_ops, &k, (char *)DIR_V1 };
        char buf[64];

        kernel_setup(&k, "0-1", "0");
        pins_moved(&p);
        is_int(cgroup_apply(&cg, &p, CGROUP_CPUS | CGROUP_MEMS), 0, "v1: the kernel model accepts every write");
        printf("# %s\n", k.log);
        is_str(k.log,
               "cpuset.cpus=0-3;emulator/cpuset.cpus=2;vcpu0/cpuset.cpus=2;vcpu1/cpuset.cpus=3;"
               "iothread1/cpuset.cpus=3;"
               "cpuset.mems=0-1;emulator/cpuset.mems=1;vcpu0/cpuset.mems=1;vcpu1/cpuset.mems=1;"
               "iothread1/cpuset.mems=1;cpuset.mems=1;",
               "order: parent cpus widened, children; parent mems widened, children, parent narrowed");
        is_str(kernel_get(&k, "cpuset.cpus", buf), "0-3", "the parent's cpus are only widened (libvirt owns them)");
        is_str(kernel_get(&k, "cpuset.mems", buf), "1", "the parent's mems end on node 1");
        is_str(kernel_get(&k, "vcpu1/cpuset.cpus", buf), "3", "vCPU 1 on CPU 3");
        is_str(kernel_get(&k, "iothread1/cpuset.mems", buf), "1", "iothread 1 memory on node 1");
        kernel_done(&k);

        kernel_setup(&k, "0-3", "0-1");
        is_int(cgroup_apply(&cg, &p, CGROUP_MEMS), 0, "mems only, the parent already wide");
        is_str(k.log, "emulator/cpuset.mems=1;vcpu0/cpuset.mems=1;vcpu1/cpuset.mems=1;iothread1/cpuset.mems=1;"
               "cpuset.mems=1;", "no widening needed: children first, then the parent narrowed");
        kernel_done(&k);

        p.numa = POLICY_NUMA_PREFERRED;
        kernel_setup(&k, "0-3", "0");
        is_int(cgroup_apply(&cg, &p, CGROUP_MEMS), 0, "numa preferred");
        is_str(k.log, "", "binds no memory");
        kernel_done(&k);
        pinset_done(&p);
}

static void test_order_v2(void) {
        struct kernel k;
        struct pinset p;
        struct cgroup cg = { &kernel_ops, &k, (char *)DIR_V1 };

        kernel_setup(&k, "", "");
        k.v2 = true;
        pins_moved(&p);
        is_int(cgroup_apply(&cg, &p, CGROUP_CPUS | CGROUP_MEMS), 0, "v2 with inherited parent sets");
        is_str(k.log,
               "emulator/cpuset.cpus=2;vcpu0/cpuset.cpus=2;vcpu1/cpuset.cpus=3;iothread1/cpuset.cpus=3;"
               "emulator/cpuset.mems=1;vcpu0/cpuset.mems=1;vcpu1/cpuset.mems=1;iothread1/cpuset.mems=1;"
               "cpuset.mems=1;",
               "an empty (inherited) parent set is not widened");
        kernel_done(&k);
        pinset_done(&p);
}

/* ---- the directory of a QEMU, on a fixture tree --------------------------------- */

static void write_at(const char *root, const char *rel, const char *text) {
        _cleanup_free_ char *path = xasprintf("%s%s", root, rel);
        _cleanup_fclose_ FILE *f = fopen(path, "w");

        if (f)
                fputs(text, f);
}

static void test_read_dir(void) {
        char root[] = "/tmp/kvmtuned-test-cgroup.XXXXXX";
        _cleanup_free_ char *dir = NULL, *dir2 = NULL, *none = NULL, *cmd = NULL;

        if (!mkdtemp(root)) {
                ok(0, "mkdtemp");
                return;
        }
        cmd = xasprintf("mkdir -p %s/proc/42 %s/proc/43 %s/proc/45", root, root, root);
        is_int(system(cmd), 0, "fixture tree");
        write_at(root, "/proc/42/cgroup",
                 "9:name=systemd:/machine/qemu-3-db1.libvirt-qemu/emulator\n"
                 "3:cpuset:/machine/qemu-3-db1.libvirt-qemu/emulator\n0::/\n");
        write_at(root, "/proc/43/cgroup", "0::/machine.slice/machine-qemu\\x2d3\\x2ddb1.scope/libvirt/emulator\n");
        write_at(root, "/proc/45/cgroup", "9:name=systemd:/x\n");
        is_int(cgroup_read_dir(root, 42, &dir), 0, "v1: cgroup found");
        is_str(dir, DIR_V1, "v1: the domain's cpuset directory, not the emulator child");
        is_int(cgroup_read_dir(root, 43, &dir2), 0, "v2: cgroup found");
        is_str(dir2, "/sys/fs/cgroup/machine.slice/machine-qemu\\x2d3\\x2ddb1.scope/libvirt", "v2: the domain directory");
        is_int(cgroup_read_dir(root, 44, &none), -ENOENT, "no such pid: -ENOENT");
        is_int(cgroup_read_dir(root, 45, &none), -ENOENT, "no cpuset and no v2 line: -ENOENT");
        ok(none == NULL, "and nothing returned");
        free(cmd);
        cmd = xasprintf("rm -rf %s", root);
        is_int(system(cmd), 0, "fixture removed");
}

/* libvirt's child names, which both the writes and the drift check use. */
static void test_child_names(void) {
        char name[CGROUP_CHILD_MAX];

        is_str(cgroup_child_name(CGROUP_CHILD_EMULATOR, 7, name), "emulator", "the emulator child");
        is_str(cgroup_child_name(CGROUP_CHILD_VCPU, 0, name), "vcpu0", "vCPU 0's child");
        is_str(cgroup_child_name(CGROUP_CHILD_VCPU, 127, name), "vcpu127", "vCPU 127's child");
        is_str(cgroup_child_name(CGROUP_CHILD_IOTHREAD, 3, name), "iothread3", "iothread id 3's child");
}

int main(void) {
        test_child_names();
        test_order_v1();
        test_order_v2();
        test_read_dir();
        return tap_done();
}
