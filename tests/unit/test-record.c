/* The placement record (lib/record.c): a record written for a placed domain
 * parses back into the same plan and cpusets, so a restarted daemon commits
 * exactly the same PUs, memory and hugepages; the policy it was made for is
 * compared key by key (placement included); bad records are refused. */
#include "config.h"

#include <errno.h>
#include <sys/stat.h>

#include "kvmtune/pinset.h"
#include "kvmtune/record.h"
#include "kvmtune/util.h"
#include "tap.h"

#define HOST "Package:2 [NUMANode(memory=64GiB)] L3Cache:1 Core:4 PU:2(indexes=core)"


static void test_roundtrip(struct topo *t) {
        struct alloc *a = alloc_new(t), *b = alloc_new(t);
        struct request req = { .vcpus = 3, .iothreads = 1, .memory_kib = 4ULL << 20 };
        char reason[PLACEMENT_REASON_MAX] = "";
        int ids[1] = { 7 };
        struct plan plan = {};
        struct pinset applied;
        struct record rec = {};
        _cleanup_free_ char *xml = NULL;

        policy_init_default(&req.policy);
        policy_set(&req.policy, "cpu", "dedicated");
        policy_set(&req.policy, "threads", "isolate");
        policy_set(&req.policy, "emulator", "isolate");
        policy_set(&req.policy, "iothreads", "dedicated");
        policy_set(&req.policy, "numa", "strict");
        is_int(placement_place(t, a, &req, &plan, reason), 0, "a dedicated domain places (%s)", reason);
        alloc_commit(a, t, &plan, 1);
        pinset_init(&applied, 3, 1, ids);
        pinset_resolve(t, a, &plan, &applied);
        xml = record_format(t, &plan, &applied, &req.policy);
        printf("# %s\n", xml);
        ok(strstr(xml, "cpu=\"dedicated\"") != NULL, "record says dedicated");
        ok(strstr(xml, "iothreads=\"7:") != NULL, "record names the iothread by its libvirt id");
        ok(strstr(xml, "placement=best-effort\"") != NULL, "the policy it names has the placement key");
        is_int(record_parse(t, xml, &rec), 0, "record parses back");
        ok(rec.dedicated, "parsed as dedicated");
        ok(record_policy_matches(&rec, &req.policy), "the record matches the policy it was made for");
        {
                struct policy other = req.policy;

                policy_set(&other, "threads", "prefer");
                ok(!record_policy_matches(&rec, &other), "a record does not match a changed threads policy");
                other = req.policy;
                policy_set(&other, "numa", "preferred");
                ok(!record_policy_matches(&rec, &other), "nor a changed numa policy");
                other = req.policy;
                policy_set(&other, "placement", "strict");
                ok(!record_policy_matches(&rec, &other), "nor a changed placement policy");
        }
        is_int(rec.plan.nvcpu, 3, "three vCPUs");
        for (int i = 0; i < 3; i++)
                is_int(rec.plan.vcpu_pu[i], plan.vcpu_pu[i], "vCPU %d on the same PU", i);
        is_int(rec.plan.nidle, plan.nidle, "same idle siblings");
        is_int(rec.plan.emulator.kind, PLACE_DEDICATED, "emulator dedicated");
        is_int(rec.plan.emulator.npu, plan.emulator.npu, "emulator PU count");
        is_int(rec.plan.niothread, 1, "one iothread");
        is_int(rec.plan.iothreads[0].kind, plan.iothreads[0].kind, "iothread placement kind");
        is_int(rec.plan.nnode, plan.nnode, "same node count");
        is_int(rec.plan.nodes[0], plan.nodes[0], "same home node");
        is_int(rec.plan.numa, POLICY_NUMA_STRICT, "numa strict");
        is_int(rec.vcpus.nvcpu, 3, "three recorded vCPU cpusets");
        for (int i = 0; i < rec.vcpus.nvcpu && i < 3; i++)
                ok(hwloc_bitmap_isequal(rec.vcpus.vcpu[i], applied.vcpu[i]), "vCPU %d cpuset recorded", i);
        alloc_commit(b, t, &rec.plan, 1);
        ok(memcmp(a->pu_owner, b->pu_owner, t->npu * sizeof(int)) == 0,
           "committing the parsed record takes exactly the same PUs");
        ok(memcmp(a->pu_idle, b->pu_idle, t->npu * sizeof(bool)) == 0, "and the same idle PUs");
        ok(memcmp(a->mem_kib, b->mem_kib, t->nnode * sizeof *a->mem_kib) == 0 && a->mem_kib[plan.nodes[0]] > 0,
           "and the same memory per node");
        record_done(&rec);
        pinset_done(&applied);
        plan_done(&plan);
        alloc_free(a);
        alloc_free(b);
}

static void test_shared_record(struct topo *t) {
        struct alloc *a = alloc_new(t);
        struct policy policy = {};
        struct pinset pins;
        struct record rec = {};
        _cleanup_free_ char *xml = NULL;

        pinset_init(&pins, 2, 0, NULL);
        pinset_resolve(t, a, NULL, &pins);
        xml = record_format(t, NULL, &pins, &policy);
        is_str(xml, "<placement cpu=\"shared\" vcpus=\"0:0-15 1:0-15\" policy=\"cpu=shared threads=prefer "
               "emulator=share iothreads=shared numa=strict hugepages=none placement=best-effort\"/>",
               "shared record lists the pool per vCPU and the policy it was made for");
        is_int(record_parse(t, xml, &rec), 0, "shared record parses");
        ok(!rec.dedicated, "parsed as shared");
        ok(rec.vcpus.nvcpu == 2 && hwloc_bitmap_isequal(rec.vcpus.vcpu[1], pins.vcpu[1]), "cpusets come back");
        ok(rec.has_policy && rec.policy_readable && policy_equal(&rec.policy, &policy), "and the policy");
        record_done(&rec);
        pinset_done(&pins);
        alloc_free(a);
}

/* Records of older daemons, and policies this one cannot read. */
static void test_record_policies(struct topo *t) {
        struct policy p;
        struct record rec = {};

        policy_init_default(&p);
        policy_set(&p, "placement", "strict");
        is_int(record_parse(t, "<placement cpu=\"shared\" vcpus=\"0:1\"/>", &rec), 0, "a record without a policy");
        ok(record_policy_matches(&rec, &p), "a record without a policy (older daemon) matches any");
        record_done(&rec);
        is_int(record_parse(t, "<placement cpu=\"shared\" vcpus=\"0:1\" policy=\"cpu=shared threads=prefer "
                               "emulator=share iothreads=shared numa=preferred hugepages=none\"/>", &rec), 0,
               "a record without the placement key");
        ok(!record_policy_matches(&rec, &p), "is best-effort: it does not match placement=strict");
        policy_set(&p, "placement", "best-effort");
        ok(record_policy_matches(&rec, &p), "and matches best-effort");
        record_done(&rec);
        is_int(record_parse(t, "<placement cpu=\"shared\" vcpus=\"0:1\" policy=\"cpu=shared gpu=yes\"/>", &rec), 0,
               "a record with a policy this daemon cannot read still parses");
        ok(!record_policy_matches(&rec, &p), "and matches no policy");
        record_done(&rec);
}

static void test_bad_records(struct topo *t) {
        static const char *const bad[] = {
                "", "<nope/>", "not xml", "<placement/>",
                "<placement cpu=\"dedicated\" vcpus=\"0:1-2\" idle=\"\" emulator=\"shared\" iothreads=\"\" "
                "nodes=\"0\" mode=\"strict\" page=\"none\"/>",                     /* two PUs for one vCPU */
                "<placement cpu=\"dedicated\" vcpus=\"1:1\" idle=\"\" emulator=\"shared\" iothreads=\"\" "
                "nodes=\"0\" mode=\"strict\" page=\"none\"/>",                     /* vCPUs out of order */
                "<placement cpu=\"dedicated\" vcpus=\"0:1\" idle=\"\" emulator=\"shared\" iothreads=\"\" "
                "nodes=\"0\" mode=\"bogus\" page=\"none\"/>",
                "<placement cpu=\"dedicated\" vcpus=\"0:1\"/>",                    /* missing fields */
                "<placement cpu=\"dedicated\" vcpus=\"0:1\" idle=\"\" emulator=\"shared\" iothreads=\"\" "
                "nodes=\"0\" node_mem=\"0:12x\" mode=\"strict\" page=\"none\"/>",   /* not a number */
                "<placement cpu=\"dedicated\" vcpus=\" 0:1\" idle=\"\" emulator=\"shared\" iothreads=\"\" "
                "nodes=\"-1\" mode=\"strict\" page=\"none\"/>",                    /* a signed node */
                "<placement cpu=\"shared\" vcpus=\"0x0:1\"/>",                       /* not a vCPU number */
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                struct record rec = { .dedicated = true };

                is_int(record_parse(t, bad[i], &rec), -EINVAL, "bad record %zu refused", i);
                ok(rec.dedicated && !rec.vcpus.vcpu, "and *ret left untouched");
        }
        is_int(record_parse(t, NULL, &(struct record){}), -EINVAL, "no record");
}

/* Records made on another host name CPUs or nodes this one lacks. */
static void test_foreign_records(struct topo *t) {
        static const char *const foreign[] = {
                "<placement cpu=\"dedicated\" vcpus=\"0:99\" idle=\"\" emulator=\"shared\" iothreads=\"\" "
                "nodes=\"0\" mode=\"strict\" page=\"none\"/>",                     /* no such CPU */
                "<placement cpu=\"dedicated\" vcpus=\"0:1\" idle=\"\" emulator=\"shared\" iothreads=\"\" "
                "nodes=\"9\" mode=\"strict\" page=\"none\"/>",                     /* no such node */
                "<placement cpu=\"dedicated\" vcpus=\"0:1\" idle=\"64\" emulator=\"shared\" iothreads=\"\" "
                "nodes=\"0\" mode=\"strict\" page=\"none\"/>",                     /* no such idle CPU */
                "<placement cpu=\"dedicated\" vcpus=\"0:1\" idle=\"\" emulator=\"shared\" iothreads=\"1:70\" "
                "nodes=\"0\" node_mem=\"0:1 5:1\" mode=\"strict\" page=\"none\"/>", /* iothread and memory */
        };
        for (size_t i = 0; i < ELEMENTSOF(foreign); i++) {
                struct record rec = {};

                is_int(record_parse(t, foreign[i], &rec), 0, "foreign record %zu parses", i);
                ok(rec.dedicated && rec.foreign && rec.plan.nvcpu == 0 && !rec.plan.node_mem_kib,
                   "as dedicated on another host, without a plan to commit");
                ok(rec.vcpus.nvcpu == 1, "its vCPU cpusets are kept (the pins are still ours)");
                record_done(&rec);
        }
}

int main(void) {
        struct topo *t = NULL;

        if (topo_load(TOPO_SOURCE_SYNTHETIC, HOST, NULL, &t) < 0) {
                ok(0, "synthetic topology loads");
                return tap_done();
        }
        test_roundtrip(t);
        test_shared_record(t);
        test_record_policies(t);
        test_bad_records(t);
        test_foreign_records(t);
        topo_free(t);
        return tap_done();
}
