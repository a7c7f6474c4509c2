/* Property tests: seeded random workloads (arrivals and departures, mixed sizes
 * and policies) on every export in tests/data/topologies and a few synthetic hosts. The
 * invariants are checked after every step; one TAP line per topology and property. */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "kvmtune/placement.h"
#include "kvmtune/util.h"
#include "tap.h"
#include "test-data.h"

#define STEPS 3000
#define MAXDOM 512
#define GIB (1024ULL * 1024)

enum prop {
        PROP_EXCLUSIVE,                 /* no PU double-booked; alloc agrees with the plans */
        PROP_ISOLATE,                   /* no core shared with an isolate domain */
        PROP_EMULATOR,                  /* emulator=isolate: off the vCPU PUs */
        PROP_MEMORY,                    /* committed memory within each node's free pages */
        PROP_ONE_NODE,                  /* one node whenever one node could hold it */
        PROP_RESERVED,                  /* reserved CPUs untouched */
        PROP_POOL,                      /* shared pool non-empty */
        PROP_SHAPE,                     /* plan shape: counts, require on SMT cores, refusals explained */
        PROP_REQUIRE,                   /* threads=require: whole cores, guest pairs on host siblings */
        _PROP_MAX,
};

static const char *const prop_names[] = {
        "no PU double-booked", "no core shared with an isolate domain",
        "emulator=isolate off the vCPU PUs", "memory within each node's free pages",
        "one node whenever one node can hold the domain", "reserved CPUs untouched",
        "shared pool never empty", "plans well formed, refusals explained",
        "threads=require: whole cores per node, guest vCPU pairs on host siblings",
};

struct dom {
        bool live;
        struct request req;
        struct plan plan;
};

struct run {
        struct topo *t;
        struct alloc *a;
        unsigned char *reserved;        /* per PU */
        struct dom doms[MAXDOM];
        int fails[_PROP_MAX];
        char first[_PROP_MAX][200];
        uint64_t rng;
        int placed, refused, split, require_split;
        bool last_refused;
};

static _printf_(3, 4) void fail(struct run *r, enum prop p, const char *fmt, ...) {
        va_list ap;

        if (r->fails[p]++ == 0) {
                va_start(ap, fmt);
                vsnprintf(r->first[p], sizeof r->first[p], fmt, ap);
                va_end(ap);
        }
}

static uint32_t rnd(struct run *r, uint32_t n) {
        r->rng ^= r->rng << 13;
        r->rng ^= r->rng >> 7;
        r->rng ^= r->rng << 17;
        return n ? (uint32_t)(r->rng % n) : 0;
}

/* --- independent capacity model (brute force per node) ------------------------- */

struct ncap {
        int pus, cores, smt_pus, whole_pus;
};

static struct ncap node_capacity(const struct topo *t, const struct alloc *a, int node) {
        struct ncap c = { 0 };

        for (int k = 0; k < t->ncore; k++) {
                int nfree = 0;
                if (t->cores[k].node != node)
                        continue;
                for (int i = 0; i < t->cores[k].npu; i++)
                        nfree += a->pu_owner[t->cores[k].first_pu + i] == ALLOC_FREE;
                c.pus += nfree;
                if (nfree == t->cores[k].npu) {
                        c.cores++;
                        c.whole_pus += nfree;
                        if (nfree >= 2)
                                c.smt_pus += nfree;
                }
        }
        return c;
}

static uint64_t page_kib(enum policy_page p) {
        return p == POLICY_PAGE_1G ? GIB : p == POLICY_PAGE_2M ? 2048 : 1;
}

static int page_idx(enum policy_page p) {
        return p == POLICY_PAGE_1G ? TOPO_PAGE_1G : p == POLICY_PAGE_2M ? TOPO_PAGE_2M : -1;
}

/* Free memory of a node in page units; UINT64_MAX when unknown. */
static uint64_t node_free_mem(const struct topo *t, const struct alloc *a, int n, enum policy_page page) {
        const struct topo_node *tn = &t->nodes[n];
        uint64_t used;
        int pi = page_idx(page);

        if (!tn->memory_known)
                return UINT64_MAX;
        if (pi >= 0)
                return tn->hp[pi].free > a->hp_pages[n][pi] ? tn->hp[pi].free - a->hp_pages[n][pi] : 0;
        used = tn->hp[0].total * 2048 + tn->hp[1].total * GIB + a->mem_kib[n];
        return tn->memory_kib > used ? tn->memory_kib - used : 0;
}

static int extras(const struct request *q) {
        return (q->policy.emulator == POLICY_EMULATOR_ISOLATE) +
               (q->policy.iothreads == POLICY_IOTHREADS_DEDICATED ? q->iothreads : 0);
}

/* Units the extras can use on a node (see extras_room). */
static int node_extra_units(const struct topo *t, const struct alloc *a, int n, const struct request *q) {
        struct ncap c = node_capacity(t, a, n);

        switch (q->policy.threads) {
        case POLICY_THREADS_ISOLATE: return c.cores;
        case POLICY_THREADS_REQUIRE: return c.whole_pus;
        default: return c.pus;
        }
}

/* Whether the host has room for the extras beside the vCPUs, on any node. */
static bool extras_room(const struct topo *t, const struct alloc *a, const struct request *q) {
        int room = -q->vcpus;

        for (int n = 0; n < t->nnode; n++)
                room += node_extra_units(t, a, n, q);
        return room >= extras(q);
}

/* e: the extras counted on the node beside the vCPUs. */
static bool node_can_hold(const struct topo *t, const struct alloc *a, int n, const struct request *q, int e) {
        struct ncap c = node_capacity(t, a, n);
        int v = q->vcpus;
        bool cpu;

        if (t->nodes[n].npu == 0)
                return false;
        switch (q->policy.threads) {
        case POLICY_THREADS_ISOLATE: cpu = c.cores >= v + e; break;
        case POLICY_THREADS_REQUIRE: cpu = c.smt_pus >= v && c.whole_pus >= v + e; break;
        default: cpu = c.pus >= v + e; break;
        }
        if (!cpu)
                return false;
        /* hugepages count whatever the NUMA policy; base pages only when placed */
        if (!q->memory_kib || (q->policy.numa == POLICY_NUMA_NONE && page_idx(q->policy.page) < 0))
                return true;
        return node_free_mem(t, a, n, q->policy.page) >=
               q->memory_kib / page_kib(q->policy.page) + (q->memory_kib % page_kib(q->policy.page) != 0);
}

/* --- checks ---------------------------------------------------------------- */

static void add_pus(int *owner, const int *pus, int n, int id, struct run *r, const char *what) {
        for (int i = 0; pus && i < n; i++) {
                if (pus[i] < 0 || pus[i] >= r->t->npu) {
                        fail(r, PROP_SHAPE, "domain %d %s PU index %d out of range", id, what, pus[i]);
                        continue;
                }
                if (owner[pus[i]] && owner[pus[i]] != id)
                        fail(r, PROP_EXCLUSIVE, "PU os %u held by domains %d and %d (%s)",
                             r->t->pus[pus[i]].os, owner[pus[i]], id, what);
                owner[pus[i]] = id;
        }
}

static void check_exclusive(struct run *r) {
        _cleanup_free_ int *owner = xcalloc(r->t->npu, sizeof *owner);

        for (int id = 1; id < MAXDOM; id++) {
                const struct plan *p = &r->doms[id].plan;
                if (!r->doms[id].live)
                        continue;
                if (p->dedicated) {
                        add_pus(owner, p->vcpu_pu, p->nvcpu, id, r, "vcpu");
                        add_pus(owner, p->idle_pus, p->nidle, id, r, "idle");
                }
                if (p->emulator.kind == PLACE_DEDICATED)
                        add_pus(owner, p->emulator.pus, p->emulator.npu, id, r, "emulator");
                for (int i = 0; i < p->niothread; i++)
                        if (p->iothreads[i].kind == PLACE_DEDICATED)
                                add_pus(owner, p->iothreads[i].pus, p->iothreads[i].npu, id, r, "iothread");
        }
        for (int pu = 0; pu < r->t->npu; pu++) {
                int want = r->reserved[pu] ? ALLOC_RESERVED : owner[pu];
                if (r->reserved[pu] && owner[pu])
                        fail(r, PROP_RESERVED, "reserved PU os %u given to domain %d", r->t->pus[pu].os, owner[pu]);
                if (r->a->pu_owner[pu] != want)
                        fail(r, PROP_EXCLUSIVE, "alloc says PU os %u is %d, plans say %d",
                             r->t->pus[pu].os, r->a->pu_owner[pu], want);
        }
}

static void check_isolate(struct run *r) {
        for (int pu = 0; pu < r->t->npu; pu++) {
                int id = r->a->pu_owner[pu];
                const struct topo_core *k = &r->t->cores[r->t->pus[pu].core];
                if (id <= 0 || id >= MAXDOM || r->doms[id].req.policy.threads == POLICY_THREADS_PREFER)
                        continue;
                for (int i = 0; i < k->npu; i++)
                        if (r->a->pu_owner[k->first_pu + i] != id)
                                fail(r, PROP_ISOLATE, "core of PU os %u (domain %d, %s) shared with %d",
                                     r->t->pus[pu].os, id,
                                     policy_threads_to_string(r->doms[id].req.policy.threads),
                                     r->a->pu_owner[k->first_pu + i]);
        }
}

static void check_emulator(struct run *r, int id) {
        const struct plan *p = &r->doms[id].plan;

        if (!p->dedicated || r->doms[id].req.policy.emulator != POLICY_EMULATOR_ISOLATE)
                return;
        if (p->emulator.kind != PLACE_DEDICATED || p->emulator.npu != 1)
                return fail(r, PROP_EMULATOR, "domain %d: emulator not dedicated", id);
        for (int i = 0; i < p->nvcpu; i++)
                if (p->vcpu_pu[i] == p->emulator.pus[0])
                        fail(r, PROP_EMULATOR, "domain %d: emulator on vCPU %d's PU", id, i);
}

static void check_memory(struct run *r) {
        for (int n = 0; n < r->t->nnode; n++) {
                const struct topo_node *tn = &r->t->nodes[n];
                uint64_t base = 0, hp[TOPO_PAGE_SIZES] = { 0 }, pools;

                for (int id = 1; id < MAXDOM; id++) {
                        const struct plan *p = &r->doms[id].plan;
                        int pi = page_idx(p->page);
                        if (!r->doms[id].live || !p->node_mem_kib)
                                continue;
                        if (pi < 0)
                                base += p->node_mem_kib[n];
                        else
                                hp[pi] += p->node_mem_kib[n] / page_kib(p->page);
                }
                if (!tn->memory_known)
                        continue;
                pools = tn->hp[0].total * 2048 + tn->hp[1].total * GIB;
                if (base > (tn->memory_kib > pools ? tn->memory_kib - pools : 0))
                        fail(r, PROP_MEMORY, "node %u: %llu KiB base memory committed", tn->os, (unsigned long long)base);
                for (int pi = 0; pi < TOPO_PAGE_SIZES; pi++)
                        if (hp[pi] > tn->hp[pi].free)
                                fail(r, PROP_MEMORY, "node %u: %llu pages of size %d committed, %llu free", tn->os,
                                     (unsigned long long)hp[pi], pi, (unsigned long long)tn->hp[pi].free);
        }
}

static void check_pool(struct run *r) {
        hwloc_bitmap_t pool = placement_shared_pool(r->t, r->a, -1);

        if (hwloc_bitmap_iszero(pool))
                fail(r, PROP_POOL, "shared pool empty with %d domains placed", r->placed);
        hwloc_bitmap_free(pool);
}

static int plan_node_of(const struct topo *t, const struct plan *p, bool *ret_one) {
        int node = -1;

        *ret_one = true;
        for (int i = 0; i < p->nvcpu; i++) {
                int n = topo_pu_node(t, p->vcpu_pu[i]);
                *ret_one = *ret_one && (node < 0 || n == node);
                node = n;
        }
        for (int n = 0; n < t->nnode; n++)
                if (p->node_mem_kib[n] && n != node)
                        *ret_one = false;
        return node;
}

/* Called before committing: 'fits' says whether some node could hold it. */
static void check_one_node(struct run *r, const struct request *q, const struct plan *p, int rc,
                           const char *why, bool fits) {
        bool one;

        if (q->policy.cpu != POLICY_CPU_DEDICATED)
                return;
        if (rc < 0) {
                if (fits && !strstr(why, "no shared CPUs"))
                        fail(r, PROP_ONE_NODE, "refused although a node fits: %s", why);
                return;
        }
        plan_node_of(r->t, p, &one);
        if (fits && (!one || p->split))
                fail(r, PROP_ONE_NODE, "%d vCPUs (%s) split over %d nodes although one node fits", q->vcpus,
                     policy_threads_to_string(q->policy.threads), p->nnode);
        if (!fits && (q->policy.numa != POLICY_NUMA_NONE || page_idx(q->policy.page) >= 0) && !p->split)
                fail(r, PROP_ONE_NODE, "no node fits yet the plan is on one node");
}

/* threads=require: every core holding vCPUs of the domain is full of them,
 * except one holding its last vCPU (an odd count), and vCPUs 2i and 2i+1 are
 * siblings: a split that gave a node half a core broke both. */
static void check_require(struct run *r, const struct request *q, const struct plan *p) {
        _cleanup_free_ int *on_core = xcalloc(r->t->ncore, sizeof *on_core);
        int partial = 0, last_core = -1;

        if (!p->dedicated || q->policy.threads != POLICY_THREADS_REQUIRE)
                return;
        for (int i = 0; i < p->nvcpu; i++)
                on_core[r->t->pus[p->vcpu_pu[i]].core]++;
        last_core = r->t->pus[p->vcpu_pu[p->nvcpu - 1]].core;
        for (int k = 0; k < r->t->ncore; k++)
                if (on_core[k] > 0 && on_core[k] < r->t->cores[k].npu)
                        partial += k == last_core ? 1 : 2;
        if (partial > 1)
                fail(r, PROP_REQUIRE, "%d vCPUs over %d nodes: a core other than the last vCPU's is half used",
                     p->nvcpu, p->nnode);
        for (int i = 0; i + 1 < p->nvcpu; i += 2)
                if (r->t->pus[p->vcpu_pu[i]].core != r->t->pus[p->vcpu_pu[i + 1]].core)
                        return fail(r, PROP_REQUIRE, "%d vCPUs over %d nodes: vCPUs %d and %d not siblings",
                                    p->nvcpu, p->nnode, i, i + 1);
}

static void check_shape(struct run *r, const struct request *q, const struct plan *p, int rc, const char *why) {
        if (rc < 0) {
                if (rc != -ENOSPC || strlen(why) < 10)
                        fail(r, PROP_SHAPE, "refusal %d without a reason: '%s'", rc, why);
                return;
        }
        if (p->nvcpu != q->vcpus || p->niothread != q->iothreads)
                fail(r, PROP_SHAPE, "plan has %d vCPUs / %d iothreads, asked %d / %d", p->nvcpu, p->niothread,
                     q->vcpus, q->iothreads);
        if (p->dedicated != (q->policy.cpu == POLICY_CPU_DEDICATED))
                fail(r, PROP_SHAPE, "dedicated flag wrong");
        for (int i = 0; p->dedicated && i < p->nvcpu; i++)
                if (q->policy.threads == POLICY_THREADS_REQUIRE && r->t->cores[r->t->pus[p->vcpu_pu[i]].core].npu < 2)
                        fail(r, PROP_SHAPE, "threads=require vCPU on a core without SMT");
        if (p->nnode > 0 && p->nodes[0] >= r->t->nnode)
                fail(r, PROP_SHAPE, "home node out of range");
}

/* --- the workload ------------------------------------------------------------- */

static struct request random_request(struct run *r) {
        static const int sizes[] = { 1, 1, 2, 2, 2, 4, 4, 4, 6, 8, 8, 12, 16, 24, 32 };
        struct request q = { 0 };
        int maxv = r->t->npu / 3 > 1 ? r->t->npu / 3 : 1;

        policy_init_default(&q.policy);
        q.vcpus = sizes[rnd(r, ELEMENTSOF(sizes))];
        q.vcpus = q.vcpus > maxv ? 1 + (int)rnd(r, maxv) : q.vcpus;
        q.policy.cpu = rnd(r, 5) == 0 ? POLICY_CPU_SHARED : POLICY_CPU_DEDICATED;
        q.policy.threads = rnd(r, _POLICY_THREADS_MAX);
        q.policy.emulator = rnd(r, _POLICY_EMULATOR_MAX);
        q.policy.iothreads = rnd(r, _POLICY_IOTHREADS_MAX);
        q.policy.numa = rnd(r, _POLICY_NUMA_MAX);
        q.policy.page = rnd(r, _POLICY_PAGE_MAX);
        q.iothreads = rnd(r, 3);
        q.memory_kib = rnd(r, 4) == 0 ? 0 : (1 + rnd(r, 48)) * GIB;
        if (rnd(r, 6) == 0 && r->t->nnode > 0) {
                q.npci_nodes = 1;
                q.pci_nodes[0] = rnd(r, r->t->nnode);
        }
        return q;
}

static void depart(struct run *r) {
        int live[MAXDOM], n = 0, id;

        for (int i = 1; i < MAXDOM; i++)
                if (r->doms[i].live)
                        live[n++] = i;
        if (n == 0)
                return;
        id = live[rnd(r, n)];
        alloc_release(r->a, r->t, &r->doms[id].plan, id);
        plan_done(&r->doms[id].plan);
        r->doms[id].live = false;
}

static int free_slot(const struct run *r) {
        for (int id = 1; id < MAXDOM; id++)
                if (!r->doms[id].live)
                        return id;
        return -1;
}

/* Some node holds the vCPUs and memory, with the extras there too or, when
 * the host has room for them elsewhere, apart. */
static bool any_node_fits(const struct run *r, const struct request *q) {
        bool apart = extras(q) > 0 && extras_room(r->t, r->a, q);

        for (int n = 0; n < r->t->nnode; n++)
                if (node_can_hold(r->t, r->a, n, q, extras(q)) || (apart && node_can_hold(r->t, r->a, n, q, 0)))
                        return true;
        return false;
}

static void arrive(struct run *r) {
        char why[PLACEMENT_REASON_MAX] = "";
        struct request q = random_request(r);
        int id = free_slot(r), rc;
        struct plan p = { 0 };
        bool fits;

        if (id < 0)
                return;
        fits = any_node_fits(r, &q);
        rc = placement_place(r->t, r->a, &q, &p, why);
        check_shape(r, &q, &p, rc, why);
        check_one_node(r, &q, &p, rc, why, fits);
        if (rc == 0)
                check_require(r, &q, &p);
        r->last_refused = rc < 0;
        if (rc < 0) {
                r->refused++;
                return;
        }
        r->split += p.split;
        r->require_split += p.split && q.policy.threads == POLICY_THREADS_REQUIRE;
        alloc_commit(r->a, r->t, &p, id);
        r->doms[id] = (struct dom) { .live = true, .req = q, .plan = p };
        r->placed++;
        check_emulator(r, id);
}

static void check_all(struct run *r) {
        check_exclusive(r);
        check_isolate(r);
        check_memory(r);
        check_pool(r);
}

/* Gives memory-known nodes hugepage pools so 2M/1G requests are exercised. */
static void add_pools(struct topo *t) {
        for (int n = 0; n < t->nnode; n++) {
                uint64_t gib = t->nodes[n].memory_kib / GIB;
                if (!t->nodes[n].memory_known || gib < 8)
                        continue;
                t->nodes[n].hp[TOPO_PAGE_1G] = (struct topo_hpool) { gib / 4, gib / 4 };
                t->nodes[n].hp[TOPO_PAGE_2M] = (struct topo_hpool) { gib * 64, gib * 64 };
        }
}

static void reserve_default(struct run *r) {
        hwloc_bitmap_t set = placement_default_reserved(r->t);

        alloc_reserve(r->a, r->t, set);
        hwloc_bitmap_free(set);
        r->reserved = xcalloc(r->t->npu, 1);
        for (int pu = 0; pu < r->t->npu; pu++)
                r->reserved[pu] = r->a->pu_owner[pu] == ALLOC_RESERVED;
}

static void run_done(struct run *r) {
        for (int id = 1; id < MAXDOM; id++)
                if (r->doms[id].live)
                        plan_done(&r->doms[id].plan);
        free(r->reserved);
        alloc_free(r->a);
        topo_free(r->t);
}

static void report(struct run *r, const char *name) {
        printf("# %s: %d placed (%d split over nodes, %d of them threads=require), %d refused\n", name, r->placed,
               r->split, r->require_split, r->refused);
        for (int p = 0; p < _PROP_MAX; p++) {
                ok(r->fails[p] == 0, "%s: %s", name, prop_names[p]);
                if (r->fails[p])
                        printf("#   %d failures, first: %s\n", r->fails[p], r->first[p]);
        }
}

static void run_topology(enum topo_source src, const char *arg, const char *name, uint64_t seed) {
        static struct run r;
        int rc;

        memset(&r, 0, sizeof r);
        rc = topo_load(src, arg, NULL, &r.t);
        if (rc < 0) {
                ok(0, "%s: loads (%s)", name, strerror(-rc));
                return;
        }
        add_pools(r.t);
        r.a = alloc_new(r.t);
        r.rng = seed;
        reserve_default(&r);
        for (int step = 0; step < STEPS; step++) {
                if (rnd(&r, 100) < (r.last_refused ? 70 : 35))
                        depart(&r);
                else
                        arrive(&r);
                check_all(&r);
        }
        report(&r, name);
        run_done(&r);
}

static int cmp_str(const void *a, const void *b) {
        return strcmp(*(char *const *)a, *(char *const *)b);
}

static void run_exports(void) {
        const char *dir = test_topologies_dir();
        char *names[64];
        int n = 0;
        DIR *d;
        struct dirent *de;

        if (!(d = opendir(dir))) {
                ok(0, "topologies directory readable (%s)", dir);
                return;
        }
        while ((de = readdir(d)) && n < 64)
                if (strstr(de->d_name, ".xml"))
                        names[n++] = xstrdup(de->d_name);
        closedir(d);
        qsort(names, n, sizeof *names, cmp_str);
        ok(n >= 16, "found %d topologies", n);
        for (int i = 0; i < n; i++) {
                _cleanup_free_ char *path = xasprintf("%s/%s", dir, names[i]);
                run_topology(TOPO_SOURCE_XML, path, names[i], 0x9e3779b97f4a7c15ULL + i);
                free(names[i]);
        }
}

int main(void) {
        static const char *const synthetic[] = {
                "Package:2 [NUMANode(memory=64GiB)] L3Cache:2 Core:4 PU:2(indexes=core)",
                "Package:4 [NUMANode(memory=32GiB)] L3Cache:2 Core:3 PU:1",
                "Package:2 Group:2 [NUMANode(memory=16GiB)] L3Cache:2 Core:2 PU:4(indexes=core)",
                "Package:1 [NUMANode(memory=4GiB)] L3Cache:1 Core:1 PU:2",
                "Package:2 [NUMANode] L3Cache:1 Core:6 PU:2(indexes=package:core)",
                /* Gold 6230-like with SNC2; the first core reserved is PUs 0,40 */
                "Package:2 Group:2 [NUMANode(memory=96GiB)] L3Cache:1 Core:10 PU:2(indexes=core)",
        };

        run_exports();
        for (unsigned i = 0; i < ELEMENTSOF(synthetic); i++)
                run_topology(TOPO_SOURCE_SYNTHETIC, synthetic[i], synthetic[i], 12345 + i);
        return tap_done();
}
