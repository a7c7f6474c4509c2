/* Hand-worked placement cases on small synthetic hosts, with exact PU numbers.
 *
 * The main host, H2 = "Package:2 [NUMANode(memory=64GiB)] L3Cache:2 Core:4 PU:2(indexes=core)":
 * node 0 = cores 0-7 (L3 groups: cores 0-3 and 4-7), node 1 = cores 8-15;
 * core i has PUs i and i+16 (os numbers). The first core (PUs 0,16) is reserved. */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "kvmtune/placement.h"
#include "kvmtune/util.h"
#include "tap.h"
#include "test-data.h"

#define H2 "Package:2 [NUMANode(memory=64GiB)] L3Cache:2 Core:4 PU:2(indexes=core)"
#define GIB (1024ULL * 1024)

struct host {
        struct topo *t;
        struct alloc *a;
        struct plan plans[16];
        int nplan;
};

static int host_open(struct host *h, const char *synthetic, bool reserve) {
        int r = topo_load(TOPO_SOURCE_SYNTHETIC, synthetic, NULL, &h->t);

        h->nplan = 0;
        if (r < 0)
                return r;
        h->a = alloc_new(h->t);
        if (reserve) {
                hwloc_bitmap_t set = placement_default_reserved(h->t);
                alloc_reserve(h->a, h->t, set);
                hwloc_bitmap_free(set);
        }
        return 0;
}

/* Reserves the CPUs of a list such as "0,40" (reserved_cpus). */
static void host_reserve(struct host *h, const char *cpus) {
        hwloc_bitmap_t set = hwloc_bitmap_alloc();

        hwloc_bitmap_list_sscanf(set, cpus);
        alloc_reserve(h->a, h->t, set);
        hwloc_bitmap_free(set);
}

static void host_close(struct host *h) {
        for (int i = 0; i < h->nplan; i++)
                plan_done(&h->plans[i]);
        h->a = alloc_free(h->a);
        h->t = topo_free(h->t);
}

static struct request req_new(int vcpus, const char *policy) {
        struct request r = { .vcpus = vcpus };
        char buf[256], *save = NULL;

        policy_init_default(&r.policy);
        r.policy.cpu = POLICY_CPU_DEDICATED;
        snprintf(buf, sizeof buf, "%s", policy);
        for (char *kv = strtok_r(buf, " ", &save); kv; kv = strtok_r(NULL, " ", &save)) {
                char *eq = strchr(kv, '=');
                if (!eq)
                        continue;
                *eq = '\0';
                if (policy_set(&r.policy, kv, eq + 1) < 0)
                        printf("# bad policy %s=%s\n", kv, eq + 1);
        }
        return r;
}

/* Places and commits as domain nplan+1; returns the placement result. */
static int host_place(struct host *h, const struct request *req, char *reason) {
        struct plan *p = &h->plans[h->nplan];
        int r = placement_place(h->t, h->a, req, p, reason);

        if (r < 0)
                return r;
        alloc_commit(h->a, h->t, p, h->nplan + 1);
        h->nplan++;
        return 0;
}

static struct plan *last(struct host *h) {
        return &h->plans[h->nplan - 1];
}

/* "1 17 2 18": os numbers of a PU index list. */
static const char *os_list(const struct topo *t, const int *pus, int n) {
        static char buf[4][512];
        static int which;
        char *s = buf[which++ % 4];

        s[0] = '\0';
        for (int i = 0; i < n; i++)
                snprintf(s + strlen(s), 512 - strlen(s), "%s%u", i ? " " : "", t->pus[pus[i]].os);
        return s;
}

static const char *bitmap_list(hwloc_bitmap_t set) {
        static char buf[256];

        hwloc_bitmap_list_snprintf(buf, sizeof buf, set);
        hwloc_bitmap_free(set);
        return buf;
}

static void test_reserve(void) {
        struct host h;
        hwloc_bitmap_t set;

        if (host_open(&h, H2, false) < 0)
                return (void)ok(0, "load H2");
        set = placement_default_reserved(h.t);
        is_str(bitmap_list(set), "0,16", "default reserved set is the first core");
        set = hwloc_bitmap_alloc();
        hwloc_bitmap_set(set, 17);
        hwloc_bitmap_set(set, 999);
        is_int(alloc_reserve(h.a, h.t, set), 2, "reserving PU 17 widens to its core (2 PUs), unknown CPU ignored");
        hwloc_bitmap_free(set);
        is_int(h.a->pu_owner[topo_pu_by_os(h.t, 1)], ALLOC_RESERVED, "PU 1 (sibling of 17) reserved");
        is_str(bitmap_list(placement_shared_pool(h.t, h.a, 0)), "0,2-7,16,18-23", "shared pool of node 0 excludes core 1");
        is_str(bitmap_list(alloc_reserved_cpus(h.a, h.t)), "1,17", "alloc_reserved_cpus: what was really taken");
        set = hwloc_bitmap_alloc();
        hwloc_bitmap_set_range(set, 30, 40);
        is_str(bitmap_list(placement_absent_cpus(h.t, set)), "32-40", "placement_absent_cpus: CPUs the host lacks");
        hwloc_bitmap_free(set);
        is_int(alloc_reserve(h.a, NULL, NULL), -EINVAL, "alloc_reserve without a host is -EINVAL");
        host_close(&h);
}

static void test_prefer(void) {
        char why[PLACEMENT_REASON_MAX];
        struct request r;
        struct host h;

        if (host_open(&h, H2, true) < 0)
                return (void)ok(0, "load H2");
        r = req_new(4, "threads=prefer");
        is_int(host_place(&h, &r, why), 0, "prefer 4 vCPUs placed");
        is_str(os_list(h.t, last(&h)->vcpu_pu, 4), "1 17 2 18", "prefer packs siblings, best-fit node 0 group 0");
        is_int(last(&h)->nnode, 1, "one node");
        is_int(last(&h)->nodes[0], 0, "node 0 (fewest free PUs that fit)");
        is_int(last(&h)->ngroup, 1, "one L3 group");
        is_int(last(&h)->emulator.kind, PLACE_SHARED, "emulator=share: shared pool");
        is_str(bitmap_list(plan_resolve(h.t, h.a, last(&h), &last(&h)->emulator)), "3-7,19-23",
               "emulator resolves to node 0's shared pool");
        r = req_new(1, "threads=prefer");
        is_int(host_place(&h, &r, why), 0, "prefer 1 vCPU placed");
        is_str(os_list(h.t, last(&h)->vcpu_pu, 1), "3", "next prefer domain takes the next free core of group 0");
        r = req_new(1, "threads=prefer");
        is_int(host_place(&h, &r, why), 0, "another prefer 1 vCPU placed");
        is_str(os_list(h.t, last(&h)->vcpu_pu, 1), "19", "prefer uses the free sibling of a core partly used by a prefer domain");
        {
                struct alloc *d = alloc_dup(h.a);
                ok(d && memcmp(d->pu_owner, h.a->pu_owner, h.t->npu * sizeof *d->pu_owner) == 0 &&
                   d->pu_owner != h.a->pu_owner, "alloc_dup copies the owners");
                alloc_free(d);
        }
        r = req_new(7, "threads=prefer");
        is_int(host_place(&h, &r, why), 0, "prefer 7 vCPUs placed");
        is_str(os_list(h.t, last(&h)->vcpu_pu, 7), "4 20 5 21 6 22 7", "7 vCPUs fill group 1 of node 0 (best fit: 8 free)");
        host_close(&h);
}

static void test_isolate(void) {
        char why[PLACEMENT_REASON_MAX];
        struct request r;
        struct host h;
        struct plan *p;

        if (host_open(&h, H2, true) < 0)
                return (void)ok(0, "load H2");
        r = req_new(2, "threads=isolate emulator=isolate");
        is_int(host_place(&h, &r, why), 0, "isolate 2 vCPUs + emulator placed");
        p = last(&h);
        is_str(os_list(h.t, p->vcpu_pu, 2), "1 2", "one vCPU per whole core");
        is_str(os_list(h.t, p->idle_pus, p->nidle), "17 18 19", "siblings held idle, emulator core too");
        is_int(p->emulator.kind, PLACE_DEDICATED, "emulator dedicated");
        is_str(os_list(h.t, p->emulator.pus, p->emulator.npu), "3", "emulator on its own whole core");
        is_int(h.a->pu_idle[topo_pu_by_os(h.t, 17)], 1, "idle sibling marked idle in alloc");
        r = req_new(1, "threads=prefer");
        is_int(host_place(&h, &r, why), 0, "prefer 1 vCPU next to an isolate domain");
        is_str(os_list(h.t, last(&h)->vcpu_pu, 1), "4", "prefer does not use an isolate domain's idle sibling");
        r = req_new(1, "threads=isolate");
        is_int(host_place(&h, &r, why), 0, "isolate 1 vCPU");
        is_str(os_list(h.t, last(&h)->vcpu_pu, 1), "5", "isolate skips the core partly used by a prefer domain");
        r = req_new(15, "threads=isolate emulator=isolate");
        is_int(placement_place(h.t, h.a, &r, &h.plans[15], why), -ENOSPC, "isolate 15 + emulator refused");
        is_str(why, "needs 15 whole cores (threads=isolate) plus 1 for the emulator; most free on a node is 8 "
               "(node 1), 10 free in total", "refusal counts whole cores per node and in total");
        host_close(&h);
}

static void test_require(void) {
        char why[PLACEMENT_REASON_MAX];
        struct request r;
        struct host h;
        struct plan *p;

        if (host_open(&h, H2, true) < 0)
                return (void)ok(0, "load H2");
        r = req_new(3, "threads=require emulator=isolate");
        is_int(host_place(&h, &r, why), 0, "require 3 vCPUs + emulator placed");
        p = last(&h);
        is_str(os_list(h.t, p->vcpu_pu, 3), "1 17 2", "require fills full sibling sets");
        is_str(os_list(h.t, p->emulator.pus, 1), "18", "emulator takes the domain's leftover sibling");
        is_int(p->nidle, 0, "nothing left idle");
        r = req_new(27, "threads=require");
        is_int(placement_place(h.t, h.a, &r, &h.plans[15], why), -ENOSPC, "require 27 refused");
        is_str(why, "needs 27 PUs on whole SMT cores (threads=require); most free on a node is 16 (node 1), "
               "26 free in total", "require refusal counts PUs on whole SMT cores");
        r = req_new(40, "threads=prefer");
        is_int(placement_place(h.t, h.a, &r, &h.plans[15], why), -ENOSPC, "prefer 40 refused");
        is_str(why, "needs 40 PUs; most free on a node is 16 (node 1), 26 free in total", "prefer refusal");
        r = req_new(1, "threads=require");
        is_int(host_place(&h, &r, why), 0, "require 1 vCPU");
        is_str(os_list(h.t, last(&h)->vcpu_pu, 1), "3", "require with 1 vCPU");
        is_str(os_list(h.t, last(&h)->idle_pus, last(&h)->nidle), "19", "its sibling is held idle");
        host_close(&h);

        if (host_open(&h, "Package:1 [NUMANode(memory=8GiB)] L3Cache:1 Core:4 PU:1", true) < 0)
                return (void)ok(0, "load no-SMT host");
        r = req_new(2, "threads=require");
        is_int(placement_place(h.t, h.a, &r, &h.plans[0], why), -ENOSPC, "require refused on a no-SMT host");
        is_str(why, "threads=require needs full sibling sets but this host has no SMT (1 thread per core); "
               "use threads=prefer or threads=isolate", "no-SMT reason");
        r = req_new(2, "threads=isolate");
        is_int(host_place(&h, &r, why), 0, "isolate works on a no-SMT host");
        is_str(os_list(h.t, last(&h)->vcpu_pu, 2), "1 2", "isolate on single-PU cores");
        is_int(last(&h)->nidle, 0, "no idle siblings without SMT");
        host_close(&h);
}

/* A Gold 6230-like host with SNC2: 2 sockets x 2 nodes x 10 cores, core i
 * has PUs i and i+40; reserved 0,40 leaves node 0 nine cores. */
#define GOLD6230_SNC2 "Package:2 Group:2 [NUMANode(memory=96GiB)] L3Cache:1 Core:10 PU:2(indexes=core)"

static int vcpus_on_node(const struct topo *t, const struct plan *p, int node) {
        int n = 0;

        for (int i = 0; i < p->nvcpu; i++)
                n += topo_pu_node(t, p->vcpu_pu[i]) == node;
        return n;
}

/* Guest vCPU pairs (2i, 2i+1) whose PUs are not siblings on one core. */
static int broken_pairs(const struct topo *t, const struct plan *p) {
        int n = 0;

        for (int i = 0; i + 1 < p->nvcpu; i += 2)
                n += t->pus[p->vcpu_pu[i]].core != t->pus[p->vcpu_pu[i + 1]].core;
        return n;
}

/* threads=require split over nodes: each node gets whole cores and guest
 * vCPU pairs stay host siblings (an even split, 11/11, broke both). */
static void test_require_split(void) {
        char why[PLACEMENT_REASON_MAX];
        struct request r;
        struct host h;
        struct plan *p;

        if (host_open(&h, GOLD6230_SNC2, false) < 0)
                return (void)ok(0, "load the Gold 6230 SNC2 host");
        host_reserve(&h, "0,40");
        r = req_new(22, "threads=require emulator=share");
        is_int(host_place(&h, &r, why), 0, "22 vCPUs require emulator=share (%s)", why);
        p = last(&h);
        ok(p->split, "split: no node holds 22");
        is_int(vcpus_on_node(h.t, p, 0), 12, "node 0 gets 12 vCPUs: 6 whole cores");
        is_int(vcpus_on_node(h.t, p, 1), 10, "node 1 gets 10 vCPUs: 5 whole cores");
        is_int(broken_pairs(h.t, p), 0, "every guest pair (2i, 2i+1) on host siblings");
        is_int(p->nidle, 0, "no sibling left idle");
        alloc_release(h.a, h.t, p, h.nplan);

        r = req_new(22, "threads=require emulator=share iothreads=dedicated");
        r.iothreads = 1;
        is_int(host_place(&h, &r, why), 0, "the same with a dedicated iothread (%s)", why);
        p = last(&h);
        ok(vcpus_on_node(h.t, p, 0) % 2 == 0 && vcpus_on_node(h.t, p, 1) % 2 == 0, "whole cores on each node (%d + %d)",
           vcpus_on_node(h.t, p, 0), vcpus_on_node(h.t, p, 1));
        is_int(broken_pairs(h.t, p), 0, "every guest pair on host siblings");
        for (int i = 0; i < p->nvcpu; i++)
                if (h.t->pus[p->vcpu_pu[i]].core == h.t->pus[p->iothreads[0].pus[0]].core)
                        ok(0, "the iothread shares vCPU %d's core", i);
        alloc_release(h.a, h.t, p, h.nplan);

        r = req_new(21, "threads=require emulator=share");
        is_int(host_place(&h, &r, why), 0, "21 vCPUs require (%s)", why);
        p = last(&h);
        is_int(broken_pairs(h.t, p), 0, "odd count: the pairs still on siblings");
        is_int(p->nidle, 1, "only the last vCPU's sibling idle");
        is_int(h.t->pus[p->idle_pus[0]].core, h.t->pus[p->vcpu_pu[20]].core, "... beside vCPU 20");
        host_close(&h);
}

static void test_helpers(void) {
        char why[PLACEMENT_REASON_MAX];
        struct request r;
        struct host h;
        struct plan *p;

        if (host_open(&h, H2, true) < 0)
                return (void)ok(0, "load H2");
        r = req_new(2, "threads=prefer emulator=isolate iothreads=dedicated");
        r.iothreads = 2;
        is_int(host_place(&h, &r, why), 0, "prefer + emulator isolate + 2 dedicated iothreads");
        p = last(&h);
        is_str(os_list(h.t, p->vcpu_pu, 2), "1 17", "vCPUs");
        is_str(os_list(h.t, p->emulator.pus, 1), "2", "emulator PU");
        is_int(p->niothread, 2, "two iothreads");
        is_str(os_list(h.t, p->iothreads[0].pus, 1), "18", "iothread 1 PU");
        is_str(os_list(h.t, p->iothreads[1].pus, 1), "3", "iothread 2 PU");
        r = req_new(2, "threads=prefer emulator=isolate iothreads=emulator");
        r.iothreads = 1;
        is_int(host_place(&h, &r, why), 0, "iothreads=emulator with emulator=isolate");
        p = last(&h);
        is_str(os_list(h.t, p->vcpu_pu, 2), "4 20", "vCPUs + emulator (3 PUs) go to the group that holds them");
        is_str(os_list(h.t, p->emulator.pus, 1), "5", "emulator next to them");
        is_int(p->iothreads[0].kind, PLACE_DEDICATED, "iothread dedicated like the emulator");
        is_int(p->iothreads[0].pus[0], p->emulator.pus[0], "iothread shares the emulator PU");
        r = req_new(2, "threads=prefer emulator=vcpus iothreads=emulator");
        r.iothreads = 1;
        is_int(host_place(&h, &r, why), 0, "emulator=vcpus");
        p = last(&h);
        is_int(p->emulator.kind, PLACE_VCPUS, "emulator over the vCPUs");
        is_int(p->iothreads[0].kind, PLACE_VCPUS, "iothread follows the emulator");
        is_str(bitmap_list(plan_resolve(h.t, h.a, p, &p->emulator)), "6,21", "emulator resolves to the vCPU PUs");
        r = req_new(2, "threads=isolate emulator=share iothreads=shared");
        r.iothreads = 1;
        is_int(host_place(&h, &r, why), 0, "isolate with shared helpers");
        p = last(&h);
        is_int(p->emulator.kind, PLACE_SHARED, "emulator=share");
        is_int(p->iothreads[0].kind, PLACE_SHARED, "iothreads=shared");
        is_int(p->nodes[0], 1, "node 0 has one whole core left: node 1");
        is_str(bitmap_list(plan_resolve(h.t, h.a, p, &p->iothreads[0])), "10-15,26-31",
               "shared iothread on node 1's shared pool");
        host_close(&h);
}

static void test_isolate_helpers_whole_cores(void) {
        char why[PLACEMENT_REASON_MAX];
        struct request r;
        struct host h;
        struct plan *p;

        if (host_open(&h, H2, true) < 0)
                return (void)ok(0, "load H2");
        r = req_new(1, "threads=isolate emulator=isolate iothreads=dedicated");
        r.iothreads = 1;
        is_int(host_place(&h, &r, why), 0, "isolate + emulator + iothread");
        p = last(&h);
        is_str(os_list(h.t, p->vcpu_pu, 1), "1", "vCPU core");
        is_str(os_list(h.t, p->emulator.pus, 1), "2", "emulator core");
        is_str(os_list(h.t, p->iothreads[0].pus, 1), "3", "iothread core");
        is_str(os_list(h.t, p->idle_pus, p->nidle), "17 18 19", "all three siblings idle");
        host_close(&h);
}

static void test_memory(void) {
        char why[PLACEMENT_REASON_MAX];
        struct request r;
        struct host h;
        struct plan *p;

        if (host_open(&h, H2, true) < 0)
                return (void)ok(0, "load H2");
        r = req_new(2, "numa=strict");
        r.memory_kib = 8 * GIB;
        is_int(host_place(&h, &r, why), 0, "8 GiB base pages");
        p = last(&h);
        is_int(p->node_mem_kib[0], 8 * GIB, "memory on node 0");
        is_int(h.a->mem_kib[0], 8 * GIB, "committed on node 0");
        r = req_new(2, "numa=strict");
        r.memory_kib = 60 * GIB;
        is_int(host_place(&h, &r, why), 0, "60 GiB: node 0 has only 56 left");
        is_int(last(&h)->nodes[0], 1, "goes to node 1");
        is_str(os_list(h.t, last(&h)->vcpu_pu, 2), "8 24", "on node 1's first core");
        r = req_new(1, "numa=preferred");
        r.memory_kib = 2 * GIB;
        is_int(host_place(&h, &r, why), 0, "numa=preferred 2 GiB");
        is_int(last(&h)->numa, POLICY_NUMA_PREFERRED, "plan says preferred");
        is_int(last(&h)->node_mem_kib[last(&h)->nodes[0]], 2 * GIB, "memory counted on the home node");
        alloc_release(h.a, h.t, last(&h), h.nplan);
        is_int(h.a->mem_kib[0] + h.a->mem_kib[1], 68 * GIB, "released again");
        r = req_new(2, "numa=none");
        r.memory_kib = 500 * GIB;
        is_int(host_place(&h, &r, why), 0, "numa=none: memory does not constrain");
        is_int(last(&h)->nnode, 1, "still one node for the vCPUs");
        is_int(last(&h)->node_mem_kib[0] + last(&h)->node_mem_kib[1], 0, "no memory bound");
        r = req_new(2, "numa=strict");
        r.memory_kib = 200 * GIB;
        is_int(placement_place(h.t, h.a, &r, &h.plans[15], why), -ENOSPC, "200 GiB refused");
        is_str(why, "needs 200 GiB of memory; free: node 0: 56 GiB, node 1: 4 GiB; short by 144 GiB on node 0", "base memory refusal");
        alloc_release(h.a, h.t, &h.plans[1], 2);
        is_int(h.a->mem_kib[1], 0, "release gives node 1's memory back");
        host_close(&h);
}

/* H2 with 4 free 1G pages on node 0 and 8 on node 1. */
static int host_open_1g_pools(struct host *h) {
        if (host_open(h, H2, true) < 0)
                return -1;
        h->t->nodes[0].hp[TOPO_PAGE_1G] = (struct topo_hpool) { 4, 4 };
        h->t->nodes[1].hp[TOPO_PAGE_1G] = (struct topo_hpool) { 8, 8 };
        return 0;
}

static void test_hugepages(void) {
        char why[PLACEMENT_REASON_MAX];
        struct request r;
        struct host h;

        if (host_open_1g_pools(&h) < 0)
                return (void)ok(0, "load H2");
        r = req_new(4, "hugepages=1G numa=strict");
        r.memory_kib = 16 * GIB;
        is_int(placement_place(h.t, h.a, &r, &h.plans[15], why), -ENOSPC, "16 GiB of 1G pages refused");
        is_str(why, "needs 16 GiB of 1G pages; free: node 0: 4, node 1: 8 pages; short by 8 pages on node 1", "hugepage refusal");
        r.memory_kib = 6 * GIB;
        is_int(host_place(&h, &r, why), 0, "6 GiB of 1G pages");
        is_int(last(&h)->nodes[0], 1, "on node 1, the only node with 6 free pages");
        is_int(h.a->hp_pages[1][TOPO_PAGE_1G], 6, "6 pages committed on node 1");
        r.memory_kib = 5 * GIB;
        is_int(host_place(&h, &r, why), 0, "5 GiB of 1G pages: split");
        is_int(last(&h)->split, 1, "split over two nodes");
        is_int(last(&h)->node_mem_kib[0], 3 * GIB, "3 pages on node 0");
        is_int(last(&h)->node_mem_kib[1], 2 * GIB, "2 pages on node 1 (all it has left)");
        is_int(strlen(last(&h)->note) > 0, 1, "split explained in the note");
        r = req_new(2, "hugepages=2M numa=strict");
        r.memory_kib = 4 * GIB;
        is_int(placement_place(h.t, h.a, &r, &h.plans[15], why), -ENOSPC, "2M pages with no 2M pool refused");
        is_str(why, "needs 4 GiB of 2M pages; free: node 0: 0, node 1: 0 pages; short by 2048 pages on node 0", "2M refusal");
        r = req_new(2, "hugepages=none numa=strict");
        r.memory_kib = 61 * GIB;
        is_int(placement_place(h.t, h.a, &r, &h.plans[15], why), 0, "base pages exclude the 1G pools");
        is_int(h.plans[15].split, 1, "61 GiB base: node 0 has 60, node 1 56 outside the pools: split");
        plan_done(&h.plans[15]);
        host_close(&h);
}

/* Memory that is not a whole number of pages takes the page it starts: a
 * 2 MiB + 4 KiB guest needs two 2M pages, is refused when one is free (and
 * says so exactly), and when placed holds both, so none is booked twice. */
static void test_hugepages_partial_page(void) {
        char why[PLACEMENT_REASON_MAX];
        struct request r;
        struct host h;

        if (host_open(&h, H2, true) < 0)
                return (void)ok(0, "load H2");
        h.t->nodes[0].hp[TOPO_PAGE_2M] = (struct topo_hpool) { 1, 1 };
        r = req_new(1, "hugepages=2M numa=strict");
        r.memory_kib = 2048 + 4;
        is_int(placement_place(h.t, h.a, &r, &h.plans[15], why), -ENOSPC, "2052 KiB with one free 2M page refused");
        is_str(why, "needs 2052 KiB of 2M pages; free: node 0: 1, node 1: 0 pages; short by 1 page on node 0",
               "the refusal gives the exact size and the one page short");
        h.t->nodes[0].hp[TOPO_PAGE_2M] = (struct topo_hpool) { 2, 2 };
        is_int(host_place(&h, &r, why), 0, "placed with two free pages (%s)", why);
        is_int(h.a->hp_pages[0][TOPO_PAGE_2M], 2, "both pages committed");
        is_int(last(&h)->node_mem_kib[0], 4096, "the plan counts 2 pages on node 0");
        r = req_new(1, "cpu=shared hugepages=2M numa=none");
        r.memory_kib = 2048;
        is_int(placement_place(h.t, h.a, &r, &h.plans[15], why), -ENOSPC, "no page left for a 2 MiB guest");
        alloc_release(h.a, h.t, last(&h), h.nplan);
        is_int(h.a->hp_pages[0][TOPO_PAGE_2M], 0, "release gives both pages back");
        host_close(&h);
}

/* A node whose free memory equals the need exactly is a fit: neither skipped
 * for another node nor split. */
static void test_exact_memory_fit(void) {
        char why[PLACEMENT_REASON_MAX];
        struct request r;
        struct host h;

        if (host_open_1g_pools(&h) < 0)
                return (void)ok(0, "load H2");
        r = req_new(2, "hugepages=1G numa=strict");
        r.memory_kib = 4 * GIB;
        is_int(host_place(&h, &r, why), 0, "4 GiB of 1G pages (%s)", why);
        is_int(last(&h)->nodes[0], 0, "on node 0, whose 4 free pages fit exactly (best fit over node 1's 8)");
        is_int(last(&h)->split, 0, "not split");
        host_close(&h);

        if (host_open(&h, H2, true) < 0)
                return (void)ok(0, "load H2");
        h.a->mem_kib[0] = 2 * GIB;
        r = req_new(2, "numa=strict");
        r.memory_kib = 62 * GIB;
        is_int(host_place(&h, &r, why), 0, "62 GiB of base pages (%s)", why);
        is_int(last(&h)->nodes[0], 0, "on node 0, which has exactly 62 GiB free (best fit over node 1's 64)");
        is_int(last(&h)->split, 0, "not split");
        host_close(&h);
}

/* What the host itself uses (the node's available memory from sysfs) bounds
 * base-page placement too, not only MemTotal minus what domains committed. */
static void test_available_memory(void) {
        char why[PLACEMENT_REASON_MAX];
        struct request r;
        struct host h;

        if (host_open(&h, H2, true) < 0)
                return (void)ok(0, "load H2");
        h.t->nodes[0].avail_known = true;
        h.t->nodes[0].avail_kib = 2 * GIB;
        r = req_new(2, "numa=strict");
        r.memory_kib = 4 * GIB;
        is_int(host_place(&h, &r, why), 0, "4 GiB numa=strict (%s)", why);
        is_int(last(&h)->nodes[0], 1, "on node 1: node 0 has 64 GiB but only 2 GiB available");
        r.memory_kib = 1 * GIB;
        is_int(host_place(&h, &r, why), 0, "1 GiB (%s)", why);
        is_int(last(&h)->nodes[0], 0, "fits node 0's available memory");
        r = req_new(1, "numa=strict");
        r.memory_kib = 2 * GIB;
        h.t->nodes[1].avail_known = true;
        h.t->nodes[1].avail_kib = 5 * GIB;
        is_int(placement_place(h.t, h.a, &r, &h.plans[15], why), 0, "2 GiB more: split (%s)", why);
        ok(h.plans[15].split, "node 0 has 1 GiB left of its available memory, node 1 1 GiB: split");
        plan_done(&h.plans[15]);
        host_close(&h);
}

/* Between nodes that fit equally well (same free units), L3 fit decides: the
 * node where the vCPUs fit in one L3 group wins over a lower-numbered node
 * whose free PUs are split over two groups. */
static void test_l3_fit_node(void) {
        static const int taken[] = { 0, 1, 4, 5, 8, 9, 10, 11 };
        char why[PLACEMENT_REASON_MAX];
        struct request r;
        struct host h;

        if (host_open(&h, "Package:2 [NUMANode(memory=64GiB)] L3Cache:2 Core:4 PU:1", false) < 0)
                return (void)ok(0, "load 2 nodes x 2 L3 x 4 cores");
        /* node 0: 2 free PUs in each of its groups; node 1: one whole group free */
        for (size_t i = 0; i < ELEMENTSOF(taken); i++)
                h.a->pu_owner[taken[i]] = 99;
        r = req_new(3, "emulator=share");
        is_int(host_place(&h, &r, why), 0, "3 vCPUs (%s)", why);
        is_int(last(&h)->nodes[0], 1, "on node 1: 4 free PUs like node 0, but in one L3 group");
        is_int(last(&h)->ngroup, 1, "in one L3 group");
        host_close(&h);
}

/* Hugepages are counted whatever the NUMA policy or CPU policy: numa=none and
 * shared domains take pages too, and are refused when the host is short. */
static void test_hugepages_any_policy(void) {
        char why[PLACEMENT_REASON_MAX];
        struct request r;
        struct host h;

        if (host_open_1g_pools(&h) < 0)
                return (void)ok(0, "load H2");
        r = req_new(2, "cpu=dedicated hugepages=1G numa=none");
        r.memory_kib = 64 * GIB;
        is_int(placement_place(h.t, h.a, &r, &h.plans[15], why), -ENOSPC,
               "dedicated, numa=none: 64 GiB of 1G pages on a host with 12 refused");
        is_str(why, "needs 64 GiB of 1G pages; free: node 0: 4, node 1: 8 pages; short by 56 pages on node 1",
               "numa=none hugepage refusal names the pages");
        r.memory_kib = 3 * GIB;
        is_int(host_place(&h, &r, why), 0, "dedicated, numa=none, 3 GiB of 1G pages placed (%s)", why);
        is_int(h.a->hp_pages[0][TOPO_PAGE_1G] + h.a->hp_pages[1][TOPO_PAGE_1G], 3, "its 3 pages are committed");
        r = req_new(1, "cpu=shared hugepages=1G numa=strict");
        r.memory_kib = 64 * GIB;
        is_int(placement_place(h.t, h.a, &r, &h.plans[15], why), -ENOSPC, "shared: 64 GiB of 1G pages refused");
        is_str(why, "needs 64 GiB of 1G pages; free: node 0: 1, node 1: 8 pages; short by 56 pages on node 1",
               "shared hugepage refusal names the pages");
        r = req_new(1, "cpu=shared hugepages=1G numa=none");
        r.memory_kib = 64 * GIB;
        is_int(placement_place(h.t, h.a, &r, &h.plans[15], why), -ENOSPC, "shared, numa=none: refused too");
        r.memory_kib = 7 * GIB;
        is_int(host_place(&h, &r, why), 0, "shared, numa=none, 7 GiB of 1G pages: fits on no node, spread (%s)", why);
        is_int(last(&h)->node_mem_kib[0] + last(&h)->node_mem_kib[1], 7 * GIB, "all 7 pages counted");
        is_int(h.a->hp_pages[0][TOPO_PAGE_1G] + h.a->hp_pages[1][TOPO_PAGE_1G], 10, "10 of 12 pages committed");
        r = req_new(1, "cpu=shared hugepages=1G numa=strict");
        r.memory_kib = 2 * GIB;
        is_int(host_place(&h, &r, why), 0, "shared, numa=strict, the last 2 pages (%s)", why);
        r.memory_kib = 1 * GIB;
        is_int(placement_place(h.t, h.a, &r, &h.plans[15], why), -ENOSPC, "and then no page is left");
        r = req_new(1, "cpu=shared hugepages=none numa=none");
        r.memory_kib = 500 * GIB;
        is_int(host_place(&h, &r, why), 0, "base pages with numa=none still do not constrain");
        host_close(&h);

        if (host_open_1g_pools(&h) < 0)
                return (void)ok(0, "load H2");
        r = req_new(1, "cpu=shared hugepages=1G numa=none");
        r.memory_kib = 2 * GIB;
        is_int(host_place(&h, &r, why), 0, "shared, numa=none, 2 GiB of 1G pages (%s)", why);
        is_int(last(&h)->nnode, 0, "unbound: no node set, so its vCPUs keep the whole shared pool");
        is_int(last(&h)->node_mem_kib[0] + last(&h)->node_mem_kib[1], 2 * GIB, "but its pages are counted");
        host_close(&h);
}

static void test_split_and_pool(void) {
        char why[PLACEMENT_REASON_MAX];
        struct request r;
        struct host h;
        struct plan *p;

        if (host_open(&h, H2, true) < 0)
                return (void)ok(0, "load H2");
        r = req_new(20, "threads=prefer");
        is_int(host_place(&h, &r, why), 0, "20 vCPUs split");
        p = last(&h);
        is_int(p->split, 1, "split");
        is_int(p->nnode, 2, "two nodes");
        is_int(p->nodes[0], 0, "home node 0");
        is_str(os_list(h.t, p->vcpu_pu, 20), "4 20 5 21 6 22 7 23 1 17 8 24 9 25 10 26 11 27 12 28",
               "10 vCPUs per node, fewest groups per node");
        is_int(p->ngroup, 4, "4 L3 groups");
        r = req_new(10, "threads=prefer");
        is_int(placement_place(h.t, h.a, &r, &h.plans[15], why), -ENOSPC, "taking the last 10 PUs refused");
        is_str(why, "would leave no shared CPUs for shared domains and emulator threads", "shared pool reason");
        r = req_new(9, "threads=prefer");
        is_int(host_place(&h, &r, why), 0, "9 of the last 10 PUs");
        host_close(&h);

        if (host_open(&h, "Package:1 [NUMANode(memory=4GiB)] L3Cache:1 Core:1 PU:2", true) < 0)
                return (void)ok(0, "load 2-PU host");
        is_str(bitmap_list(placement_default_reserved(h.t)), "", "single-core host: nothing reserved by default");
        r = req_new(2, "threads=prefer");
        is_int(placement_place(h.t, h.a, &r, &h.plans[15], why), -ENOSPC, "2 vCPUs on a 2-PU host refused");
        r = req_new(1, "threads=prefer");
        is_int(host_place(&h, &r, why), 0, "1 vCPU on a 2-PU host");
        is_str(os_list(h.t, last(&h)->vcpu_pu, 1), "0", "on PU 0");
        is_str(bitmap_list(placement_shared_pool(h.t, h.a, -1)), "1", "PU 1 stays shared");
        host_close(&h);
}

static void test_distance_split(void) {
        static unsigned dist[16] = { 10, 30, 20, 30,  30, 10, 30, 20,  20, 30, 10, 30,  30, 20, 30, 10 };
        char why[PLACEMENT_REASON_MAX];
        struct request r;
        struct host h;
        unsigned *saved;

        if (host_open(&h, "Package:4 [NUMANode(memory=16GiB)] L3Cache:1 Core:4 PU:1", true) < 0)
                return (void)ok(0, "load 4-node host");
        saved = h.t->distance;
        h.t->distance = dist;
        r = req_new(6, "threads=prefer");
        is_int(host_place(&h, &r, why), 0, "6 vCPUs on 4-PU nodes");
        is_int(last(&h)->nnode, 2, "two nodes");
        is_int(last(&h)->nodes[0], 0, "home node 0 (fullest: nodes 1 and 3 stay whole)");
        is_int(last(&h)->nodes[1], 2, "node 2 is closest to node 0");
        is_str(os_list(h.t, last(&h)->vcpu_pu, 6), "1 2 3 8 9 10", "3 vCPUs on each");
        r = req_new(2, "threads=prefer");
        r.npci_nodes = 1;
        r.pci_nodes[0] = 3;
        is_int(host_place(&h, &r, why), 0, "PCI domain");
        is_int(last(&h)->nodes[0], 3, "placed on its device's node 3 (node 1 would tie)");
        h.t->distance = saved;
        host_close(&h);
}

/* Nearest-first growth would take 3 nodes here; the fewest is 2. */
static void test_fewest_nodes(void) {
        static unsigned dist[16] = { 10, 20, 30, 30,  20, 10, 30, 30,  30, 30, 10, 20,  30, 30, 20, 10 };
        char why[PLACEMENT_REASON_MAX];
        struct request r;
        struct host h;
        unsigned *saved;
        hwloc_bitmap_t set;

        if (host_open(&h, "Package:4 [NUMANode(memory=16GiB)] L3Cache:1 Core:4 PU:1", true) < 0)
                return (void)ok(0, "load 4-node host");
        saved = h.t->distance;
        h.t->distance = dist;
        set = hwloc_bitmap_alloc();
        hwloc_bitmap_set_range(set, 4, 6);
        hwloc_bitmap_set_range(set, 12, 14);
        is_int(alloc_reserve(h.a, h.t, set), 6, "reserve 3 PUs on nodes 1 and 3");
        hwloc_bitmap_free(set);
        r = req_new(7, "threads=prefer");
        is_int(host_place(&h, &r, why), 0, "7 vCPUs: free 3, 1, 4, 1 per node");
        is_int(last(&h)->nnode, 2, "two nodes, not three");
        is_int(last(&h)->nodes[0], 0, "home node 0");
        is_int(last(&h)->nodes[1], 2, "with node 2 (farther, but it has room)");
        is_str(os_list(h.t, last(&h)->vcpu_pu, 7), "1 2 3 8 9 10 11", "3 + 4 vCPUs");
        is_str(last(&h)->note, "no single NUMA node holds 7 vCPUs; split evenly over 2 nodes", "note says why");
        h.t->distance = saved;
        host_close(&h);
}

static void test_refuse_one_node(void) {
        char why[PLACEMENT_REASON_MAX];
        struct request r;
        struct host h;

        if (host_open(&h, "Package:2 [NUMANode(memory=8GiB)] L3Cache:1 Core:3 PU:2(indexes=core)", true) < 0)
                return (void)ok(0, "load 2x3-core host");
        r = req_new(1, "threads=prefer");
        r.npci_nodes = 1;
        is_int(host_place(&h, &r, why), 0, "prefer 1 vCPU on node 0");
        r = req_new(2, "threads=isolate");
        r.npci_nodes = 1;
        r.pci_nodes[0] = 1;
        is_int(host_place(&h, &r, why), 0, "isolate 2 vCPUs on node 1 (its PCI node)");
        is_str(os_list(h.t, last(&h)->vcpu_pu, 2), "3 4", "cores 3 and 4");
        r = req_new(2, "threads=isolate emulator=isolate");
        is_int(placement_place(h.t, h.a, &r, &h.plans[15], why), -ENOSPC, "2 vCPUs + emulator: 3 cores, 2 free");
        is_str(why, "needs 2 whole cores (threads=isolate) plus 1 for the emulator; most free on a node "
               "is 1 (node 0), 2 free in total", "the refusal counts the emulator's core");
        r = req_new(1, "threads=isolate emulator=isolate");
        is_int(host_place(&h, &r, why), 0, "1 vCPU + emulator, one whole core free per node: placed (%s)", why);
        is_int(topo_pu_node(h.t, last(&h)->vcpu_pu[0]), 0, "the vCPU on node 0");
        is_int(topo_pu_node(h.t, last(&h)->emulator.pus[0]), 1, "the emulator on node 1, the nearest with room");
        is_int(last(&h)->split, 0, "not a split");
        is_str(last(&h)->note, "node 0 holds the 1 vCPU; the emulator runs on node 1, the nearest with room",
               "the note says where the emulator went");
        host_close(&h);
}

/* An isolated emulator or dedicated iothread that does not fit beside the
 * vCPUs: the vCPUs and memory stay on one node, the extras go to the nearest
 * node with room (they used to split the vCPUs 3/3). EPYC 7402 NPS4: 6 cores
 * per node, reserved 0,48 (core 0 of node 0). */
static void test_extras_apart(void) {
        _cleanup_free_ char *path = test_topology("2s-epyc-7402-rome-nps4-smt-3coreccx-gpu-ib.xml");
        char why[PLACEMENT_REASON_MAX];
        struct request r;
        struct host h = { 0 };
        struct plan *p;

        if (topo_load(TOPO_SOURCE_XML, path, NULL, &h.t) < 0)
                return (void)ok(0, "load %s", path);
        h.a = alloc_new(h.t);
        host_reserve(&h, "0,48");
        r = req_new(6, "threads=isolate emulator=isolate numa=strict");
        r.memory_kib = 32 * GIB;
        is_int(host_place(&h, &r, why), 0, "6 vCPUs isolate + isolated emulator, 32 GiB (%s)", why);
        p = last(&h);
        is_int(p->split, 0, "not split");
        is_int(vcpus_on_node(h.t, p, 1), 6, "all 6 vCPUs on node 1");
        is_int(p->node_mem_kib[1], 32 * GIB, "the memory on node 1 too");
        is_int(topo_pu_node(h.t, p->emulator.pus[0]), 0, "the emulator on node 0, the nearest with room");
        is_str(p->note, "node 1 holds the 6 vCPUs and the memory; the emulator runs on node 0, the nearest with room",
               "the note says so");
        r = req_new(6, "threads=isolate iothreads=dedicated numa=strict");
        r.iothreads = 2;
        r.memory_kib = 32 * GIB;
        is_int(host_place(&h, &r, why), 0, "6 vCPUs isolate + 2 dedicated iothreads (%s)", why);
        p = last(&h);
        is_int(p->split, 0, "not split either");
        is_int(vcpus_on_node(h.t, p, 2), 6, "all 6 vCPUs on node 2");
        ok(topo_pu_node(h.t, p->iothreads[0].pus[0]) != 2 && topo_pu_node(h.t, p->iothreads[1].pus[0]) != 2,
           "the iothreads on other nodes");
        ok(strstr(p->note, "; iothreads run on node") != NULL, "the note says where: %s", p->note);
        host_close(&h);
}

static void test_shared(void) {
        char why[PLACEMENT_REASON_MAX];
        struct request r;
        struct host h;
        struct plan *p;

        if (host_open(&h, H2, true) < 0)
                return (void)ok(0, "load H2");
        r = req_new(4, "cpu=shared numa=strict emulator=isolate iothreads=dedicated");
        r.iothreads = 1;
        r.memory_kib = 4 * GIB;
        is_int(host_place(&h, &r, why), 0, "shared domain placed");
        p = last(&h);
        is_int(p->dedicated, 0, "no dedicated PUs");
        is_int(p->nodes[0], 1, "home: node 1 (same memory, more shared PUs)");
        is_int(p->node_mem_kib[1], 4 * GIB, "memory on node 1");
        is_int(p->emulator.kind, PLACE_SHARED, "emulator on the shared pool");
        is_int(p->iothreads[0].kind, PLACE_SHARED, "iothread on the shared pool");
        is_str(bitmap_list(plan_vcpu_cpus(h.t, h.a, p, 0)), "8-15,24-31", "vCPU 0 floats over node 1's pool");
        for (int pu = 0; pu < h.t->npu; pu++)
                if (h.a->pu_owner[pu] > 0)
                        return (void)ok(0, "shared domain owns no PU");
        ok(1, "shared domain owns no PU");
        r = req_new(4, "cpu=shared numa=none");
        is_int(host_place(&h, &r, why), 0, "shared numa=none");
        is_int(last(&h)->nnode, 0, "no home node");
        is_str(bitmap_list(plan_vcpu_cpus(h.t, h.a, last(&h), 3)), "1-15,17-31", "whole pool");
        r = req_new(4, "cpu=none");
        is_int(placement_place(h.t, h.a, &r, &h.plans[15], why), -EINVAL, "cpu=none is -EINVAL");
        host_close(&h);
}

/* A shared domain needs a shared pool: with every PU reserved or dedicated
 * the engine refuses it, as the daemon does (and as plan must say). */
static void test_shared_empty_pool(void) {
        char why[PLACEMENT_REASON_MAX];
        hwloc_bitmap_t all;
        struct request r;
        struct host h;

        if (host_open(&h, H2, false) < 0)
                return (void)ok(0, "load H2");
        all = hwloc_bitmap_alloc();
        hwloc_bitmap_set_range(all, 0, 31);
        alloc_reserve(h.a, h.t, all);
        hwloc_bitmap_free(all);
        r = req_new(1, "cpu=shared numa=none");
        is_int(placement_place(h.t, h.a, &r, &h.plans[15], why), -ENOSPC, "every PU reserved: shared domain refused");
        is_str(why, "the shared pool is empty: every PU is reserved or dedicated", "... saying why");
        r = req_new(2, "cpu=shared numa=strict");
        r.memory_kib = GIB;
        is_int(placement_place(h.t, h.a, &r, &h.plans[15], why), -ENOSPC, "with memory to place too");
        host_close(&h);

        if (host_open(&h, H2, true) < 0)
                return (void)ok(0, "load H2");
        for (int pu = 0; pu < h.t->npu; pu++)
                if (h.a->pu_owner[pu] == ALLOC_FREE)
                        h.a->pu_owner[pu] = 7;
        r = req_new(4, "cpu=shared");
        is_int(placement_place(h.t, h.a, &r, &h.plans[15], why), -ENOSPC, "every other PU dedicated: refused");
        h.a->pu_owner[topo_pu_by_os(h.t, 5)] = ALLOC_FREE;
        is_int(placement_place(h.t, h.a, &r, &h.plans[15], why), 0, "one shared PU left: placed (%s)", why);
        is_str(bitmap_list(plan_vcpu_cpus(h.t, h.a, &h.plans[15], 0)), "5", "on that PU");
        plan_done(&h.plans[15]);
        host_close(&h);
}

static void test_invalid(void) {
        char why[PLACEMENT_REASON_MAX];
        struct request r;
        struct host h;
        struct plan p;

        if (host_open(&h, H2, true) < 0)
                return (void)ok(0, "load H2");
        r = req_new(0, "");
        is_int(placement_place(h.t, h.a, &r, &p, why), -EINVAL, "0 vCPUs is -EINVAL");
        r = req_new(2, "");
        r.policy.threads = 42;
        is_int(placement_place(h.t, h.a, &r, &p, why), -EINVAL, "bad enum is -EINVAL");
        r = req_new(2, "");
        r.npci_nodes = 1;
        r.pci_nodes[0] = 7;
        is_int(placement_place(h.t, h.a, &r, &p, why), -EINVAL, "unknown PCI node is -EINVAL");
        r = req_new(2, "");
        is_int(placement_place(h.t, NULL, &r, &p, why), -EINVAL, "no alloc is -EINVAL");
        is_int(placement_place(h.t, h.a, &r, &p, NULL), 0, "NULL reason buffer is fine");
        plan_done(&p);
        plan_done(NULL);
        ok(alloc_free(NULL) == NULL, "alloc_free(NULL)");
        host_close(&h);
}

/* Garbage requests get -EINVAL or -ENOSPC with a reason, never a crash. */
static void test_garbage(void) {
        char why[PLACEMENT_REASON_MAX];
        uint64_t x = 88172645463325252ULL;
        int bad = 0, placed = 0;
        struct host h;

        if (host_open(&h, H2, true) < 0)
                return (void)ok(0, "load H2");
        for (int i = 0; i < 3000; i++) {
                struct request r = { 0 };
                struct plan p;
                int rc;
                x ^= x << 13, x ^= x >> 7, x ^= x << 17;
                r.vcpus = (int)(x % 40) - 4;
                r.iothreads = (int)(x >> 8) % 6 - 1;
                r.memory_kib = (x >> 12) % 3 ? (x >> 16) % (200 * GIB) : UINT64_MAX - (x % 5);
                r.policy.cpu = (x >> 20) % 4;
                r.policy.threads = (x >> 22) % 4;
                r.policy.emulator = (x >> 24) % 4;
                r.policy.iothreads = (x >> 26) % 4;
                r.policy.numa = (x >> 28) % 4;
                r.policy.page = (x >> 30) % 4;
                r.npci_nodes = (int)((x >> 32) % 11) - 1;
                for (int k = 0; k < 8; k++)
                        r.pci_nodes[k] = (int)((x >> (34 + k)) % 4) - 1;
                rc = placement_place(h.t, h.a, &r, &p, why);
                if (rc == 0) {
                        placed++;
                        plan_done(&p);
                } else if ((rc != -EINVAL && rc != -ENOSPC) || why[0] == '\0')
                        bad++;
        }
        is_int(bad, 0, "3000 random requests: only 0, -EINVAL or -ENOSPC with a reason");
        ok(placed > 10, "some of them placed (%d)", placed);
        host_close(&h);
}

int main(void) {
        test_reserve();
        test_prefer();
        test_isolate();
        test_require();
        test_require_split();
        test_helpers();
        test_isolate_helpers_whole_cores();
        test_memory();
        test_hugepages();
        test_hugepages_any_policy();
        test_l3_fit_node();
        test_available_memory();
        test_hugepages_partial_page();
        test_exact_memory_fit();
        test_split_and_pool();
        test_distance_split();
        test_fewest_nodes();
        test_refuse_one_node();
        test_extras_apart();
        test_shared();
        test_shared_empty_pool();
        test_invalid();
        test_garbage();
        return tap_done();
}
