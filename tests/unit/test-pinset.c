/* lib/pinset.c: cpusets of a domain, filled, compared and resolved from a
 * plan and the allocations (dedicated PUs, the shared pool, the rest). */
#include "config.h"

#include "kvmtune/pinset.h"
#include "kvmtune/util.h"
#include "tap.h"

#define HOST "Package:2 [NUMANode(memory=64GiB)] L3Cache:1 Core:4 PU:2(indexes=core)"

static char *list(hwloc_const_bitmap_t m) {
        char *s = NULL;

        if (!m)
                return xstrdup("(none)");
        hwloc_bitmap_list_asprintf(&s, m);
        return s;
}

static void test_fill_equal(void) {
        static const int ids[] = { 3 };
        _cleanup_bitmap_ hwloc_bitmap_t a = hwloc_bitmap_alloc(), b = hwloc_bitmap_alloc(), all = NULL;
        struct pinset p, q;
        _cleanup_free_ char *s = NULL;

        pinset_init(&p, 2, 1, ids);
        ok(!pinset_usable(&p), "a new pinset has no cpusets: not usable");
        hwloc_bitmap_set_range(a, 0, 3);
        pinset_fill(&p, a);
        ok(pinset_usable(&p), "filled: usable");
        is_int(p.iothread_id[0], 3, "iothread ids copied");
        pinset_init(&q, 2, 1, ids);
        pinset_fill(&q, a);
        ok(pinset_equal(&p, &q), "the same cpusets: equal");
        hwloc_bitmap_set(b, 5);
        hwloc_bitmap_free(q.vcpu[1]);
        q.vcpu[1] = hwloc_bitmap_dup(b);
        ok(!pinset_equal(&p, &q), "one vCPU elsewhere: not equal");
        all = pinset_cpus(&q);
        s = list(all);
        is_str(s, "0-3,5", "the union of every cpuset");
        hwloc_bitmap_zero(q.emulator);
        ok(!pinset_usable(&q), "an empty emulator cpuset: not usable");
        pinset_done(&p);
        pinset_done(&q);
        ok(p.vcpu == NULL && p.nvcpu == 0, "done resets it");
}

static void test_resolve(const struct topo *t) {
        struct alloc *a = alloc_new(t);
        struct request req = { .vcpus = 2 };
        char reason[PLACEMENT_REASON_MAX] = "";
        struct plan plan = {};
        struct pinset shared, placed;
        _cleanup_free_ char *pool = NULL, *v0 = NULL, *v2 = NULL, *mems = NULL;

        policy_init_default(&req.policy);
        policy_set(&req.policy, "cpu", "dedicated");
        policy_set(&req.policy, "numa", "strict");
        is_int(placement_place(t, a, &req, &plan, reason), 0, "a dedicated domain places (%s)", reason);
        alloc_commit(a, t, &plan, 1);
        pinset_init(&shared, 1, 0, NULL);
        pinset_resolve(t, a, NULL, &shared);
        pool = list(shared.vcpu[0]);
        ok(!hwloc_bitmap_isset(shared.vcpu[0], t->pus[plan.vcpu_pu[0]].os), "no plan: the shared pool (%s), "
           "without the dedicated PUs", pool);
        is_int(shared.numa, POLICY_NUMA_NONE, "no plan: memory not managed");
        pinset_init(&placed, 3, 0, NULL);
        pinset_resolve(t, a, &plan, &placed);
        v0 = list(placed.vcpu[0]);
        ok(hwloc_bitmap_weight(placed.vcpu[0]) == 1 && hwloc_bitmap_isset(placed.vcpu[0], t->pus[plan.vcpu_pu[0]].os),
           "vCPU 0 on its dedicated PU (%s)", v0);
        v2 = list(placed.vcpu[2]);
        ok(hwloc_bitmap_isequal(placed.vcpu[2], shared.vcpu[0]), "a vCPU the plan does not cover: the pool (%s)", v2);
        mems = list(placed.mems);
        ok(placed.numa == POLICY_NUMA_STRICT && hwloc_bitmap_isset(placed.mems, t->nodes[plan.nodes[0]].os),
           "memory on the plan's node (%s), strict", mems);
        pinset_done(&shared);
        pinset_done(&placed);
        plan_done(&plan);
        alloc_free(a);
}

int main(void) {
        struct topo *t = NULL;

        test_fill_equal();
        if (topo_load(TOPO_SOURCE_SYNTHETIC, HOST, NULL, &t) < 0) {
                ok(0, "synthetic topology loads");
                return tap_done();
        }
        test_resolve(t);
        topo_free(t);
        return tap_done();
}
