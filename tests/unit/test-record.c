/* The daemon's placement record (daemon/record.c) and cgroup helpers
 * (daemon/apply.c): a record written for a placed domain parses back into the
 * same plan and cpusets, so a restarted daemon commits exactly the same PUs;
 * bad records are refused; the QEMU cgroup directory is found from
 * /proc/PID/cgroup (v1 and v2) under a sysfs root and cpuset.mems is written
 * to the domain and every child. No libvirt needed. */
#include "config.h"

#include <errno.h>
#include <sys/stat.h>

#include "../daemon/daemon.h"
#include "kvmtune/hostfs.h"
#include "kvmtune/util.h"
#include "tap.h"

#define HOST "Package:2 [NUMANode(memory=64GiB)] L3Cache:1 Core:4 PU:2(indexes=core)"

static void fill_pins(const struct topo *t, struct alloc *a, struct domain *dm) {
        dm->pins = (struct pinset){ .nvcpu = dm->plan.nvcpu };
        dm->pins.vcpu = xcalloc(dm->plan.nvcpu, sizeof *dm->pins.vcpu);
        for (int i = 0; i < dm->plan.nvcpu; i++)
                dm->pins.vcpu[i] = plan_vcpu_cpus(t, a, &dm->plan, i);
}

static void test_roundtrip(struct topo *t) {
        struct alloc *a = alloc_new(t), *b = alloc_new(t);
        struct request req = { .vcpus = 3, .iothreads = 1, .memory_kib = 4ULL << 20 };
        char reason[PLACEMENT_REASON_MAX] = "";
        int ids[1] = { 7 };
        struct domain dm = { .name = (char *)"db1", .niothread = 1, .iothread_ids = ids };
        struct plan p = {};
        struct pinset pins = {};
        bool dedicated = false;
        _cleanup_free_ char *xml = NULL;

        policy_init_default(&req.policy);
        policy_set(&req.policy, "cpu", "dedicated");
        policy_set(&req.policy, "threads", "isolate");
        policy_set(&req.policy, "emulator", "isolate");
        policy_set(&req.policy, "iothreads", "dedicated");
        policy_set(&req.policy, "numa", "strict");
        is_int(placement_place(t, a, &req, &dm.plan, reason), 0, "a dedicated domain places (%s)", reason);
        dm.policy = req.policy;
        dm.placed = true;
        alloc_commit(a, t, &dm.plan, 1);
        fill_pins(t, a, &dm);
        xml = record_format(t, &dm);
        printf("# %s\n", xml);
        ok(strstr(xml, "cpu=\"dedicated\"") != NULL, "record says dedicated");
        ok(strstr(xml, "iothreads=\"7:") != NULL, "record names the iothread by its libvirt id");
        is_int(record_parse(t, xml, &dedicated, &p, &pins), 0, "record parses back");
        ok(dedicated, "parsed as dedicated");
        ok(record_is_dedicated(xml), "record_is_dedicated: yes");
        ok(!record_is_dedicated(NULL) && !record_is_dedicated("not xml"), "record_is_dedicated: no record, bad record");
        ok(record_policy_matches(xml, &req.policy), "the record matches the policy it was made for");
        {
                struct policy other = req.policy;

                policy_set(&other, "threads", "prefer");
                ok(!record_policy_matches(xml, &other), "a record does not match a changed threads policy");
                other = req.policy;
                policy_set(&other, "numa", "preferred");
                ok(!record_policy_matches(xml, &other), "nor a changed numa policy");
                ok(record_policy_matches("<placement cpu=\"dedicated\" vcpus=\"0:1\"/>", &other),
                   "a record without a policy (older daemon) matches any");
                ok(!record_policy_matches("not xml", &other), "an unreadable record matches nothing");
        }
        is_int(p.nvcpu, 3, "three vCPUs");
        for (int i = 0; i < 3; i++)
                is_int(p.vcpu_pu[i], dm.plan.vcpu_pu[i], "vCPU %d on the same PU", i);
        is_int(p.nidle, dm.plan.nidle, "same idle siblings");
        is_int(p.emulator.kind, PLACE_DEDICATED, "emulator dedicated");
        is_int(p.emulator.npu, dm.plan.emulator.npu, "emulator PU count");
        is_int(p.niothread, 1, "one iothread");
        is_int(p.iothreads[0].kind, dm.plan.iothreads[0].kind, "iothread placement kind");
        is_int(p.nnode, dm.plan.nnode, "same node count");
        is_int(p.nodes[0], dm.plan.nodes[0], "same home node");
        is_int(p.numa, POLICY_NUMA_STRICT, "numa strict");
        is_int(pins.nvcpu, 3, "three recorded vCPU cpusets");
        for (int i = 0; i < pins.nvcpu && i < 3; i++)
                ok(hwloc_bitmap_isequal(pins.vcpu[i], dm.pins.vcpu[i]), "vCPU %d cpuset recorded", i);
        alloc_commit(b, t, &p, 1);
        ok(memcmp(a->pu_owner, b->pu_owner, t->npu * sizeof(int)) == 0,
           "committing the parsed record takes exactly the same PUs");
        ok(memcmp(a->pu_idle, b->pu_idle, t->npu * sizeof(bool)) == 0, "and the same idle PUs");
        plan_done(&p);
        pinset_done(&pins);
        pinset_done(&dm.pins);
        plan_done(&dm.plan);
        alloc_free(a);
        alloc_free(b);
}

static void test_shared_record(struct topo *t) {
        struct alloc *a = alloc_new(t);
        struct domain dm = { .name = (char *)"web" };
        struct plan p = {};
        struct pinset pins = {};
        bool dedicated = true;
        _cleanup_free_ char *xml = NULL;

        dm.pins = (struct pinset){ .nvcpu = 2 };
        dm.pins.vcpu = xcalloc(2, sizeof *dm.pins.vcpu);
        for (int i = 0; i < 2; i++)
                dm.pins.vcpu[i] = placement_shared_pool(t, a, -1);
        xml = record_format(t, &dm);
        is_str(xml, "<placement cpu=\"shared\" vcpus=\"0:0-15 1:0-15\" policy=\"cpu=shared threads=prefer "
               "emulator=share iothreads=shared numa=strict hugepages=none\"/>",
               "shared record lists the pool per vCPU and the policy it was made for");
        is_int(record_parse(t, xml, &dedicated, &p, &pins), 0, "shared record parses");
        ok(!dedicated, "parsed as shared");
        ok(!record_is_dedicated(xml), "record_is_dedicated: not a shared record");
        ok(pins.nvcpu == 2 && hwloc_bitmap_isequal(pins.vcpu[1], dm.pins.vcpu[1]), "cpusets come back");
        plan_done(&p);
        pinset_done(&pins);
        pinset_done(&dm.pins);
        alloc_free(a);
}

static void test_bad_records(struct topo *t) {
        static const char *const bad[] = {
                "", "<nope/>", "not xml", "<placement/>",
                "<placement cpu=\"dedicated\" vcpus=\"0:99\" idle=\"\" emulator=\"shared\" iothreads=\"\" "
                "nodes=\"0\" mode=\"strict\" page=\"none\"/>",                     /* no such CPU */
                "<placement cpu=\"dedicated\" vcpus=\"0:1-2\" idle=\"\" emulator=\"shared\" iothreads=\"\" "
                "nodes=\"0\" mode=\"strict\" page=\"none\"/>",                     /* two PUs for one vCPU */
                "<placement cpu=\"dedicated\" vcpus=\"1:1\" idle=\"\" emulator=\"shared\" iothreads=\"\" "
                "nodes=\"0\" mode=\"strict\" page=\"none\"/>",                     /* vCPUs out of order */
                "<placement cpu=\"dedicated\" vcpus=\"0:1\" idle=\"\" emulator=\"shared\" iothreads=\"\" "
                "nodes=\"9\" mode=\"strict\" page=\"none\"/>",                     /* no such node */
                "<placement cpu=\"dedicated\" vcpus=\"0:1\" idle=\"\" emulator=\"shared\" iothreads=\"\" "
                "nodes=\"0\" mode=\"bogus\" page=\"none\"/>",
                "<placement cpu=\"dedicated\" vcpus=\"0:1\"/>",                    /* missing fields */
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                struct plan p = {};
                struct pinset pins = {};
                bool dedicated;

                is_int(record_parse(t, bad[i], &dedicated, &p, &pins), -EINVAL, "bad record %zu refused", i);
        }
}

static void write_at(const char *root, const char *rel, const char *text) {
        _cleanup_free_ char *path = xasprintf("%s%s", root, rel);
        FILE *f = fopen(path, "w");

        if (f) {
                fputs(text, f);
                fclose(f);
        }
}

static void write_file(const char *path, const char *text) {
        FILE *f = fopen(path, "w");

        if (f) {
                fputs(text, f);
                fclose(f);
        }
}

static void test_cgroup(void) {
        char root[] = "/tmp/kvmtuned-test-record.XXXXXX";
        _cleanup_free_ char *dir = NULL, *dir2 = NULL, *mems = NULL, *path = NULL;
        const char *cg = "/sys/fs/cgroup/cpuset/machine/qemu-3-db1.libvirt-qemu";
        const char *subs[] = { "", "/emulator", "/vcpu0", "/iothread1" };

        if (!mkdtemp(root)) {
                ok(0, "mkdtemp");
                return;
        }
        path = xasprintf("mkdir -p %s/proc/42 %s/proc/43 %s%s/emulator %s%s/vcpu0 %s%s/iothread1",
                         root, root, root, cg, root, cg, root, cg);
        is_int(system(path), 0, "fixture tree");
        for (size_t i = 0; i < ELEMENTSOF(subs); i++) {
                _cleanup_free_ char *f = xasprintf("%s%s%s/cpuset.mems", root, cg, subs[i]);
                write_file(f, "");      /* regular files: hostfs writes do not truncate */
        }
        write_at(root, "/proc/42/cgroup",
                   "9:name=systemd:/machine/qemu-3-db1.libvirt-qemu/emulator\n"
                   "3:cpuset:/machine/qemu-3-db1.libvirt-qemu/emulator\n0::/\n");
        write_at(root, "/proc/43/cgroup",
                   "0::/machine.slice/machine-qemu\\x2d3\\x2ddb1.scope/libvirt/emulator\n");
        is_int(apply_cgroup_dir(root, 42, &dir), 0, "v1: cgroup found");
        is_str(dir, cg, "v1: the domain's cpuset directory, not the emulator child");
        is_int(apply_cgroup_dir(root, 43, &dir2), 0, "v2: cgroup found");
        is_str(dir2, "/sys/fs/cgroup/machine.slice/machine-qemu\\x2d3\\x2ddb1.scope/libvirt", "v2: the domain directory");
        is_int(apply_cgroup_dir(root, 44, &mems), -ENOENT, "no such pid: -ENOENT");
        free(mems);
        mems = NULL;
        is_int(apply_mems_set(root, dir, "1"), 0, "cpuset.mems written");
        for (size_t i = 0; i < ELEMENTSOF(subs); i++) {
                _cleanup_free_ char *f = xasprintf("%s%s/cpuset.mems", cg, subs[i]), *v = NULL;
                if (hostfs_read(root, f, &v) >= 0)
                        v[strcspn(v, "\n")] = '\0';
                is_str(v, "1", "cpuset.mems of %s", subs[i][0] ? subs[i] + 1 : "the domain");
        }
        free(path);
        path = xasprintf("rm -rf %s", root);
        is_int(system(path), 0, "fixture removed");
}

int main(void) {
        struct topo *t = NULL;

        if (topo_load(TOPO_SOURCE_SYNTHETIC, HOST, NULL, &t) < 0) {
                ok(0, "synthetic topology loads");
                return tap_done();
        }
        test_roundtrip(t);
        test_shared_record(t);
        test_bad_records(t);
        test_cgroup();
        topo_free(t);
        return tap_done();
}
