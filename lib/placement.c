/* The placement engine: pure functions from (host model, allocations, request)
 * to a plan. Nothing here reads the system.
 *
 * Capacity is counted in "units" that depend on threads=:
 *   prefer   free PUs (a core partly held by another prefer domain counts);
 *   isolate  whole free cores (the vCPU takes the first PU, the siblings idle);
 *   require  PUs on whole free cores with 2 or more PUs (full sibling sets).
 * The emulator (isolate) and dedicated iothreads are "extra" units on the home
 * node: whole cores under isolate, plain PUs otherwise.
 *
 * Decision order: one node if any can hold vCPUs, extras and memory (best fit,
 * PCI node first); else one node for the vCPUs and memory with the extras
 * apart (what is left at home, then the nearest nodes with room): the vCPUs
 * and memory matter far more than where the emulator runs; else the fewest
 * nodes closest to a home node, split evenly (under require in whole cores),
 * the extras at home or, when that is what stops the split, apart again.
 * Within a node: the fewest L3 groups, best fit (fullest group that fits). */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "kvmtune/placement.h"
#include "kvmtune/util.h"

#define MEM_ANY UINT64_MAX              /* memory does not constrain this node */
#define KIB_2M 2048ULL
#define KIB_1G 1048576ULL

enum mode { MODE_PREFER, MODE_ISOLATE, MODE_REQUIRE };

struct need {
        enum mode mode;
        int v;                          /* vCPUs (PUs, or whole cores under isolate) */
        int e;                          /* extra units: emulator + dedicated iothreads */
        bool mem;                       /* memory constrains the choice */
        uint64_t m;                     /* memory in page units (KiB for base pages) */
        int page;                       /* TOPO_PAGE_* or -1 for base pages */
        uint64_t page_kib;              /* 1 for base pages */
};

struct cap {
        int pus;                        /* free PUs */
        int cores;                      /* whole free cores */
        int smt_pus;                    /* PUs on whole free cores with >= 2 PUs */
        int whole_pus;                  /* PUs on whole free cores */
        uint64_t mem;                   /* free memory in page units, MEM_ANY */
};

/* Working state of one placement_place() call. */
struct ctx {
        const struct topo *t;
        const struct alloc *a;
        const struct request *req;
        struct need need;
        struct cap *ncap;               /* per node */
        unsigned char *taken;           /* per PU: picked by this call */
        int *gcap;                      /* per group: free units (scratch) */
        bool *gused;                    /* per group (scratch) */
        int *vcpu, nv;
        int *idle, nidle;
        int *extra, nextra;
        int idle_mark;                  /* idle[] entries below this are not reusable */
        bool extras_apart;              /* the extras are not counted on the home node:
                                         * they go where there is room, nearest first */
};

static void *scratch_free(void *p) {
        free(p);
        return NULL;
}

/* --- struct alloc ----------------------------------------------------------- */

struct alloc *alloc_new(const struct topo *t) {
        struct alloc *a;

        if (!t)
                return NULL;
        a = xcalloc(1, sizeof *a);
        a->npu = t->npu;
        a->nnode = t->nnode;
        a->pu_owner = xcalloc(t->npu, sizeof *a->pu_owner);
        a->pu_idle = xcalloc(t->npu, sizeof *a->pu_idle);
        a->mem_kib = xcalloc(t->nnode, sizeof *a->mem_kib);
        a->hp_pages = xcalloc(t->nnode, sizeof *a->hp_pages);
        return a;
}

struct alloc *alloc_free(struct alloc *a) {
        if (!a)
                return NULL;
        free(a->pu_owner);
        free(a->pu_idle);
        free(a->mem_kib);
        free(a->hp_pages);
        free(a);
        return NULL;
}

struct alloc *alloc_dup(const struct alloc *a) {
        struct alloc *d;

        if (!a)
                return NULL;
        d = xcalloc(1, sizeof *d);
        d->npu = a->npu;
        d->nnode = a->nnode;
        d->pu_owner = xcalloc(a->npu, sizeof *d->pu_owner);
        d->pu_idle = xcalloc(a->npu, sizeof *d->pu_idle);
        d->mem_kib = xcalloc(a->nnode, sizeof *d->mem_kib);
        d->hp_pages = xcalloc(a->nnode, sizeof *d->hp_pages);
        memcpy(d->pu_owner, a->pu_owner, a->npu * sizeof *d->pu_owner);
        memcpy(d->pu_idle, a->pu_idle, a->npu * sizeof *d->pu_idle);
        memcpy(d->mem_kib, a->mem_kib, a->nnode * sizeof *d->mem_kib);
        memcpy(d->hp_pages, a->hp_pages, a->nnode * sizeof *d->hp_pages);
        return d;
}

static bool alloc_matches(const struct alloc *a, const struct topo *t) {
        return a && t && a->npu == t->npu && a->nnode == t->nnode;
}

static int reserve_core(struct alloc *a, const struct topo *t, int core) {
        const struct topo_core *c = &t->cores[core];
        int n = 0;

        for (int pu = c->first_pu; pu < c->first_pu + c->npu; pu++)
                if (a->pu_owner[pu] == ALLOC_FREE) {
                        a->pu_owner[pu] = ALLOC_RESERVED;
                        n++;
                }
        return n;
}

int alloc_reserve(struct alloc *a, const struct topo *t, hwloc_const_bitmap_t cpus) {
        int n = 0;

        if (!alloc_matches(a, t) || !cpus)
                return -EINVAL;
        /* Walk the host's PUs, not the bitmap: CPUs absent or offline here are
         * ignored, and an infinite bitmap cannot loop forever. */
        for (int pu = 0; pu < t->npu; pu++)
                if (hwloc_bitmap_isset(cpus, t->pus[pu].os))
                        n += reserve_core(a, t, t->pus[pu].core);
        return n;
}

/* The default housekeeping set is the first core of the host (all its PUs):
 * the kernel's own work (timers, RCU, most IRQs) lands on CPU 0 first. A host
 * with a single core gets an empty set, so it can still run dedicated domains. */
hwloc_bitmap_t placement_default_reserved(const struct topo *t) {
        hwloc_bitmap_t set = bitmap_new();

        if (!t || t->ncore < 2)
                return set;
        for (int pu = t->cores[0].first_pu; pu < t->cores[0].first_pu + t->cores[0].npu; pu++)
                hwloc_bitmap_set(set, t->pus[pu].os);
        return set;
}

static void own_pus(struct alloc *a, const int *pus, int n, int id, bool idle) {
        for (int i = 0; pus && i < n; i++)
                if (pus[i] >= 0 && pus[i] < a->npu) {
                        a->pu_owner[pus[i]] = id;
                        a->pu_idle[pus[i]] = idle;
                }
}

/* Memory is counted in pages of the policy's size; base pages by the KiB. */
static uint64_t page_kib(enum policy_page page) {
        return policy_page_kib(page) ?: 1;
}

static int page_index(enum policy_page page) {
        return topo_page_index(policy_page_kib(page));
}

/* sign: +1 commits the plan's memory, -1 gives it back (saturating at 0). */
static void account_memory(struct alloc *a, const struct plan *p, int sign) {
        int pi = page_index(p->page);

        for (int n = 0; p->node_mem_kib && n < a->nnode; n++) {
                uint64_t *slot = pi < 0 ? &a->mem_kib[n] : &a->hp_pages[n][pi];
                uint64_t amount = p->node_mem_kib[n] / page_kib(p->page);

                if (sign > 0)
                        *slot += amount;
                else
                        *slot = *slot > amount ? *slot - amount : 0;
        }
}

void alloc_commit(struct alloc *a, const struct topo *t, const struct plan *p, int id) {
        if (!alloc_matches(a, t) || !p || id <= 0)
                return;
        if (p->dedicated) {
                own_pus(a, p->vcpu_pu, p->nvcpu, id, false);
                own_pus(a, p->idle_pus, p->nidle, id, true);
        }
        if (p->emulator.kind == PLACE_DEDICATED)
                own_pus(a, p->emulator.pus, p->emulator.npu, id, false);
        for (int i = 0; i < p->niothread; i++)
                if (p->iothreads[i].kind == PLACE_DEDICATED)
                        own_pus(a, p->iothreads[i].pus, p->iothreads[i].npu, id, false);
        account_memory(a, p, +1);
}

void alloc_release(struct alloc *a, const struct topo *t, const struct plan *p, int id) {
        if (!alloc_matches(a, t) || id <= 0)
                return;
        for (int pu = 0; pu < a->npu; pu++)
                if (a->pu_owner[pu] == id) {
                        a->pu_owner[pu] = ALLOC_FREE;
                        a->pu_idle[pu] = false;
                }
        if (p)
                account_memory(a, p, -1);
}

/* --- bitmaps ---------------------------------------------------------------- */

hwloc_bitmap_t alloc_reserved_cpus(const struct alloc *a, const struct topo *t) {
        hwloc_bitmap_t set = bitmap_new();

        for (int pu = 0; alloc_matches(a, t) && pu < t->npu; pu++)
                if (a->pu_owner[pu] == ALLOC_RESERVED)
                        hwloc_bitmap_set(set, t->pus[pu].os);
        return set;
}

hwloc_bitmap_t placement_absent_cpus(const struct topo *t, hwloc_const_bitmap_t cpus) {
        hwloc_bitmap_t set = bitmap_new();

        if (!cpus)
                return set;
        hwloc_bitmap_copy(set, cpus);
        for (int pu = 0; t && pu < t->npu; pu++)
                hwloc_bitmap_clr(set, t->pus[pu].os);
        return set;
}

static void pool_add_node(const struct topo *t, const struct alloc *a, int node, hwloc_bitmap_t set) {
        for (int pu = 0; pu < t->npu; pu++)
                if (a->pu_owner[pu] == ALLOC_FREE && (node < 0 || topo_pu_node(t, pu) == node))
                        hwloc_bitmap_set(set, t->pus[pu].os);
}

hwloc_bitmap_t placement_shared_pool(const struct topo *t, const struct alloc *a, int node) {
        hwloc_bitmap_t set = bitmap_new();

        if (!alloc_matches(a, t))
                return set;
        if (node >= t->nnode)
                node = -1;
        pool_add_node(t, a, node, set);
        if (node >= 0 && hwloc_bitmap_iszero(set))
                pool_add_node(t, a, -1, set);
        return set;
}

static hwloc_bitmap_t pus_bitmap(const struct topo *t, const int *pus, int n) {
        hwloc_bitmap_t set = bitmap_new();

        for (int i = 0; pus && i < n; i++)
                if (pus[i] >= 0 && pus[i] < t->npu)
                        hwloc_bitmap_set(set, t->pus[pus[i]].os);
        return set;
}

static int plan_home(const struct plan *p) {
        return p->nnode > 0 ? p->nodes[0] : -1;
}

hwloc_bitmap_t plan_resolve(const struct topo *t, const struct alloc *a, const struct plan *p,
                            const struct place_set *s) {
        if (!t || !p || !s)
                return bitmap_new();
        if (s->kind == PLACE_DEDICATED)
                return pus_bitmap(t, s->pus, s->npu);
        if (s->kind == PLACE_VCPUS && p->dedicated)
                return pus_bitmap(t, p->vcpu_pu, p->nvcpu);
        return placement_shared_pool(t, a, plan_home(p));
}

hwloc_bitmap_t plan_vcpu_cpus(const struct topo *t, const struct alloc *a, const struct plan *p,
                              int vcpu) {
        if (!t || !p || vcpu < 0 || vcpu >= p->nvcpu)
                return bitmap_new();
        if (p->dedicated)
                return pus_bitmap(t, &p->vcpu_pu[vcpu], 1);
        return placement_shared_pool(t, a, plan_home(p));
}

void plan_done(struct plan *p) {
        if (!p)
                return;
        free(p->vcpu_pu);
        free(p->idle_pus);
        free(p->emulator.pus);
        for (int i = 0; p->iothreads && i < p->niothread; i++)
                free(p->iothreads[i].pus);
        free(p->iothreads);
        free(p->node_mem_kib);
        memset(p, 0, sizeof *p);
}

/* --- reasons ---------------------------------------------------------------- */

static _printf_(2, 3) void say(char reason[PLACEMENT_REASON_MAX], const char *fmt, ...) {
        size_t len = strlen(reason);
        va_list ap;

        if (len >= PLACEMENT_REASON_MAX - 1)
                return;
        va_start(ap, fmt);
        vsnprintf(reason + len, PLACEMENT_REASON_MAX - len, fmt, ap);
        va_end(ap);
        if (strlen(reason) == PLACEMENT_REASON_MAX - 1)
                memcpy(reason + PLACEMENT_REASON_MAX - 4, "...", 4);
}

static int refuse(char reason[PLACEMENT_REASON_MAX], int err, const char *fmt, ...) _printf_(3, 4);
static int refuse(char reason[PLACEMENT_REASON_MAX], int err, const char *fmt, ...) {
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(reason, PLACEMENT_REASON_MAX, fmt, ap);
        va_end(ap);
        return -err;
}

/* "16 GiB", "512 MiB", else exact KiB ("2052 KiB"): never rounded, so a
 * size just above a page does not read as the page. */
static const char *fmt_kib(uint64_t kib, char *buf, size_t len) {
        if (kib >= KIB_1G && kib % KIB_1G == 0)
                snprintf(buf, len, "%llu GiB", (unsigned long long)(kib / KIB_1G));
        else if (kib >= 1024 && kib % 1024 == 0)
                snprintf(buf, len, "%llu MiB", (unsigned long long)(kib / 1024));
        else
                snprintf(buf, len, "%llu KiB", (unsigned long long)kib);
        return buf;
}

/* --- capacity ----------------------------------------------------------------- */

static bool pu_free(const struct ctx *c, int pu) {
        return c->a->pu_owner[pu] == ALLOC_FREE && !c->taken[pu];
}

static int core_free_pus(const struct ctx *c, int core) {
        const struct topo_core *k = &c->t->cores[core];
        int n = 0;

        for (int pu = k->first_pu; pu < k->first_pu + k->npu; pu++)
                n += pu_free(c, pu);
        return n;
}

static void cap_add_core(const struct ctx *c, int core, struct cap *cap) {
        int npu = c->t->cores[core].npu, n = core_free_pus(c, core);

        cap->pus += n;
        if (n == npu && npu > 0) {
                cap->cores++;
                cap->whole_pus += n;
                if (npu >= 2)
                        cap->smt_pus += n;
        }
}

static struct cap group_cap(const struct ctx *c, int g) {
        const struct topo_group *tg = &c->t->groups[g];
        struct cap cap = { 0 };

        for (int k = tg->first_core; k < tg->first_core + tg->ncore; k++)
                cap_add_core(c, k, &cap);
        return cap;
}

static int units(enum mode mode, const struct cap *cap) {
        return mode == MODE_ISOLATE ? cap->cores : mode == MODE_REQUIRE ? cap->smt_pus : cap->pus;
}

static uint64_t sat_sub(uint64_t a, uint64_t b) {
        return a > b ? a - b : 0;
}

static uint64_t sat_add(uint64_t a, uint64_t b) {
        return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/* Free memory of a node in units of the request's page size. */
static uint64_t node_mem_free(const struct topo *t, const struct alloc *a, int node, int page) {
        const struct topo_node *tn = &t->nodes[node];
        uint64_t pools, room;

        if (!tn->memory_known)
                return MEM_ANY;
        if (page >= 0)
                return sat_sub(tn->hp[page].free, a->hp_pages[node][page]);
        pools = tn->hp[TOPO_PAGE_2M].total * KIB_2M + tn->hp[TOPO_PAGE_1G].total * KIB_1G;
        room = sat_sub(tn->memory_kib, sat_add(pools, a->mem_kib[node]));
        /* what is free or reclaimable now also bounds it (the host's own use) */
        if (tn->avail_known && sat_sub(tn->avail_kib, a->mem_kib[node]) < room)
                room = sat_sub(tn->avail_kib, a->mem_kib[node]);
        return room;
}

static void node_caps(struct ctx *c) {
        const struct topo *t = c->t;

        for (int n = 0; n < t->nnode; n++) {
                c->ncap[n] = (struct cap) { 0 };
                c->ncap[n].mem = c->need.mem ? node_mem_free(t, c->a, n, c->need.page) : MEM_ANY;
        }
        for (int k = 0; k < t->ncore; k++)
                cap_add_core(c, k, &c->ncap[t->cores[k].node]);
}

/* vCPUs a node can hold when it also holds 'e' extra units. Under require the
 * extras fill whole free cores too (the domain's leftover sibling first), so
 * a require domain never shares a core. */
static int node_vcpu_room(const struct need *nd, const struct cap *cap, int e) {
        if (nd->mode == MODE_REQUIRE) {
                int any = cap->whole_pus - e;
                return cap->smt_pus < any ? cap->smt_pus : any;
        }
        return units(nd->mode, cap) - e;
}

/* The extras counted on the home node beside its vCPUs. */
static int home_extras(const struct ctx *c) {
        return c->extras_apart ? 0 : c->need.e;
}

static bool node_fits(const struct ctx *c, int n) {
        const struct cap *cap = &c->ncap[n];

        return c->t->nodes[n].npu > 0 && node_vcpu_room(&c->need, cap, home_extras(c)) >= c->need.v &&
               cap->mem >= c->need.m;
}

/* What a split gives each node in whole steps of: under threads=require the
 * SMT width, so every node gets whole cores and guest vCPU pairs (2i, 2i+1)
 * stay host siblings; 1 otherwise. */
static int split_granule(const struct ctx *c) {
        return c->need.mode == MODE_REQUIRE && c->t->smt > 1 ? c->t->smt : 1;
}

/* vCPUs a node can take in a split beside e extras, in whole granules. */
static int split_room(const struct ctx *c, int node, int e) {
        int room = node_vcpu_room(&c->need, &c->ncap[node], e);

        return room > 0 ? room - room % split_granule(c) : 0;
}

/* --- choosing nodes ------------------------------------------------------------ */

static int group_units(const struct ctx *c, int g);

/* How few L3 groups of the node can hold the vCPUs: its largest ones first. */
static int node_groups_needed(const struct ctx *c, int node) {
        const struct topo_node *tn = &c->t->nodes[node];
        int first = tn->first_group, ng = tn->ngroup, k = 0, sum = 0;
        int *cap = c->gcap + first;     /* scratch, as choose_groups uses it */

        for (int g = 0; g < ng; g++)
                cap[g] = group_units(c, first + g);
        while (sum < c->need.v && k < ng) {
                int best = 0;
                for (int g = 1; g < ng; g++)
                        if (cap[g] > cap[best])
                                best = g;
                if (cap[best] <= 0)
                        break;
                sum += cap[best];
                cap[best] = 0;
                k++;
        }
        return sum >= c->need.v ? k : ng + 1;
}

/* Among the nodes in list[] (or all nodes when list is NULL) that fit: best
 * fit (fewest free units left), then the one whose L3 groups hold the vCPUs in
 * the fewest groups, then the lower index. Best fit comes first on purpose:
 * putting L3 fit first was measured (bench/placement) to leave 1-2 % more
 * domains split over nodes later, for 0.04-0.08 fewer L3 groups. */
static int best_fit_node(const struct ctx *c, const int *list, int nlist) {
        int best = -1, best_groups = -1, n = list ? nlist : c->t->nnode;

        for (int i = 0; i < n; i++) {
                int node = list ? list[i] : i, groups, u, bu;
                if (node < 0 || node >= c->t->nnode || !node_fits(c, node))
                        continue;
                u = units(c->need.mode, &c->ncap[node]);
                bu = best < 0 ? 0 : units(c->need.mode, &c->ncap[best]);
                if (best >= 0 && u > bu)
                        continue;
                if (best >= 0 && u == bu) {     /* a tie: L3 fit decides (counted only now) */
                        if (best_groups < 0)
                                best_groups = node_groups_needed(c, best);
                        groups = node_groups_needed(c, node);
                        if (groups > best_groups || (groups == best_groups && node > best))
                                continue;
                        best_groups = groups;
                } else
                        best_groups = -1;
                best = node;
        }
        return best;
}

static bool is_pci_node(const struct request *req, int node) {
        for (int i = 0; i < req->npci_nodes; i++)
                if (req->pci_nodes[i] == node)
                        return true;
        return false;
}

/* How a home node ranks the other nodes when growing a set. */
enum grow_order { GROW_NEAREST, GROW_MOST_CPU, GROW_MOST_MEMORY, _GROW_MAX };

static bool node_before(const struct ctx *c, int home, enum grow_order how, int a, int b) {
        unsigned da = topo_distance(c->t, home, a), db = topo_distance(c->t, home, b);
        int ua = units(c->need.mode, &c->ncap[a]), ub = units(c->need.mode, &c->ncap[b]);

        if (how == GROW_MOST_CPU && ua != ub)
                return ua > ub;
        if (how == GROW_MOST_MEMORY && c->ncap[a].mem != c->ncap[b].mem)
                return c->ncap[a].mem > c->ncap[b].mem;
        return da < db;                 /* stable: ties keep the lower index first */
}

/* The other CPU nodes in 'how' order (insertion sort: nnode is small). */
static int nodes_ordered(const struct ctx *c, int home, enum grow_order how, int *ret) {
        int n = 0;

        for (int j = 0; j < c->t->nnode; j++) {
                int i;
                if (j == home || c->t->nodes[j].npu == 0)
                        continue;
                for (i = n++; i > 0 && node_before(c, home, how, j, ret[i - 1]); i--)
                        ret[i] = ret[i - 1];
                ret[i] = j;
        }
        return n;
}

struct nodeset {
        int n;
        int nodes[64];
        unsigned cost;                  /* sum of distances from the home node */
};

static bool node_helps(const struct ctx *c, int node, int room, uint64_t mem) {
        return (room < c->need.v && split_room(c, node, 0) > 0) || (mem < c->need.m && c->ncap[node].mem > 0);
}

/* Grows a set from 'home' with the next nodes (in 'how' order) that add something needed.
 * Returns false when even all nodes do not hold the domain. */
static bool grow_from(const struct ctx *c, int home, enum grow_order how, int *order, struct nodeset *ret) {
        int room = split_room(c, home, home_extras(c)), n;
        uint64_t mem = c->ncap[home].mem;

        if (c->t->nodes[home].npu == 0 || room < 1)
                return false;
        ret->n = 1;
        ret->nodes[0] = home;
        ret->cost = 0;
        n = nodes_ordered(c, home, how, order);
        for (int i = 0; i < n && (room < c->need.v || mem < c->need.m) && ret->n < 64; i++) {
                if (!node_helps(c, order[i], room, mem))
                        continue;
                room += split_room(c, order[i], 0);
                mem = sat_add(mem, c->ncap[order[i]].mem);
                ret->nodes[ret->n++] = order[i];
                ret->cost += topo_distance(c->t, home, order[i]);
        }
        return room >= c->need.v && mem >= c->need.m;
}

static bool set_better(const struct ctx *c, const struct nodeset *a, const struct nodeset *b) {
        bool pa = is_pci_node(c->req, a->nodes[0]), pb = is_pci_node(c->req, b->nodes[0]);

        if (a->n != b->n)
                return a->n < b->n;
        if (pa != pb)
                return pa;
        return a->cost < b->cost;       /* ties: the earlier home node stays */
}

static bool choose_split(const struct ctx *c, struct nodeset *ret) {
        _cleanup_free_ int *order = xcalloc(c->t->nnode, sizeof *order);
        struct nodeset cur = { 0 };
        bool found = false;

        /* Nearest-first usually gives the fewest nodes; most-CPU or most-memory
         * first wins when the near nodes are nearly full. */
        for (int home = 0; home < c->t->nnode; home++)
                for (enum grow_order how = 0; how < _GROW_MAX; how++) {
                        if ((how == GROW_MOST_MEMORY && !c->need.m) || !grow_from(c, home, how, order, &cur))
                                continue;
                        if (!found || set_better(c, &cur, ret))
                                *ret = cur;
                        found = true;
                }
        return found;
}

/* Units the extras can use on a node: whole cores under isolate, PUs on
 * whole free cores under require, free PUs under prefer. */
static int extra_room(const struct ctx *c, int node) {
        const struct cap *cap = &c->ncap[node];

        return c->need.mode == MODE_ISOLATE ? cap->cores : c->need.mode == MODE_REQUIRE ? cap->whole_pus : cap->pus;
}

/* Whether the host has room for the extras beside the vCPUs, anywhere. */
static bool extras_fit_apart(const struct ctx *c) {
        int room = -c->need.v;

        for (int n = 0; n < c->t->nnode; n++)
                room += extra_room(c, n);
        return room >= c->need.e;
}

static int one_node(const struct ctx *c) {
        int one = best_fit_node(c, c->req->pci_nodes, c->req->npci_nodes);

        return one >= 0 ? one : best_fit_node(c, NULL, 0);
}

/* One node, else one node for the vCPUs and memory with the extras apart,
 * else a split with the extras at home, else a split with them apart. */
static bool choose_nodes(struct ctx *c, struct nodeset *ret) {
        int one = one_node(c);

        if (one < 0 && c->need.e > 0 && extras_fit_apart(c)) {
                c->extras_apart = true;
                one = one_node(c);
                c->extras_apart = one >= 0;
        }
        if (one >= 0) {
                *ret = (struct nodeset) { .n = 1, .nodes = { one } };
                return true;
        }
        if (choose_split(c, ret))
                return true;
        if (c->need.e == 0 || !extras_fit_apart(c))
                return false;
        c->extras_apart = true;
        return choose_split(c, ret);
}

/* Spreads 'total' over k slots as evenly as their capacities allow. */
static uint64_t spread(uint64_t total, const uint64_t *cap, uint64_t *out, int k) {
        uint64_t rem = total;

        for (int i = 0; i < k; i++)
                out[i] = 0;
        while (rem > 0) {
                int active = 0;
                uint64_t share;

                for (int i = 0; i < k; i++)
                        active += out[i] < cap[i];
                if (active == 0)
                        break;
                share = rem / active ? rem / active : 1;
                for (int i = 0; i < k && rem > 0; i++) {
                        uint64_t give = cap[i] - out[i] < share ? cap[i] - out[i] : share;
                        give = give < rem ? give : rem;
                        out[i] += give;
                        rem -= give;
                }
        }
        return total - rem;
}

/* --- picking PUs ------------------------------------------------------------- */

static void take(struct ctx *c, int pu, int *list, int *n) {
        c->taken[pu] = 1;
        list[(*n)++] = pu;
}

/* prefer: cores already partly used first (sibling packing keeps whole cores
 * whole), then free cores; within a core, PUs in order. */
static int take_packed(struct ctx *c, int g, int want, int *list, int *n) {
        const struct topo_group *tg = &c->t->groups[g];
        int got = 0;

        for (int pass = 0; pass < 2; pass++)
                for (int k = tg->first_core; k < tg->first_core + tg->ncore && got < want; k++) {
                        const struct topo_core *core = &c->t->cores[k];
                        int nfree = core_free_pus(c, k);
                        if (nfree == 0 || (pass == 0) != (nfree < core->npu))
                                continue;
                        for (int pu = core->first_pu; pu < core->first_pu + core->npu && got < want; pu++)
                                if (pu_free(c, pu)) {
                                        take(c, pu, list, n);
                                        got++;
                                }
                }
        return got;
}

/* isolate: the first PU of each whole free core; the siblings are held idle. */
static int take_cores(struct ctx *c, int g, int want, int *list, int *n) {
        const struct topo_group *tg = &c->t->groups[g];
        int got = 0;

        for (int k = tg->first_core; k < tg->first_core + tg->ncore && got < want; k++) {
                const struct topo_core *core = &c->t->cores[k];
                if (core_free_pus(c, k) != core->npu)
                        continue;
                take(c, core->first_pu, list, n);
                for (int pu = core->first_pu + 1; pu < core->first_pu + core->npu; pu++)
                        take(c, pu, c->idle, &c->nidle);
                got++;
        }
        return got;
}

/* require: whole free cores of at least min_npu PUs, every PU used; a
 * leftover sibling is held idle. */
static int take_siblings(struct ctx *c, int g, int want, int min_npu, int *list, int *n) {
        const struct topo_group *tg = &c->t->groups[g];
        int got = 0;

        for (int k = tg->first_core; k < tg->first_core + tg->ncore && got < want; k++) {
                const struct topo_core *core = &c->t->cores[k];
                if (core->npu < min_npu || core_free_pus(c, k) != core->npu)
                        continue;
                for (int pu = core->first_pu; pu < core->first_pu + core->npu; pu++)
                        if (got < want) {
                                take(c, pu, list, n);
                                got++;
                        } else
                                take(c, pu, c->idle, &c->nidle);
        }
        return got;
}

static int take_vcpus(struct ctx *c, int g, int want) {
        switch (c->need.mode) {
        case MODE_ISOLATE: return take_cores(c, g, want, c->vcpu, &c->nv);
        case MODE_REQUIRE: return take_siblings(c, g, want, 2, c->vcpu, &c->nv);
        default: return take_packed(c, g, want, c->vcpu, &c->nv);
        }
}

static int take_extras(struct ctx *c, int g, int want) {
        if (c->need.mode == MODE_ISOLATE)
                return take_cores(c, g, want, c->extra, &c->nextra);
        if (c->need.mode == MODE_REQUIRE)
                return take_siblings(c, g, want, 1, c->extra, &c->nextra);
        return take_packed(c, g, want, c->extra, &c->nextra);
}

/* require: the emulator and iothreads first use the idle leftover siblings of
 * this domain's own cores on this node. */
static int reuse_idle(struct ctx *c, int node, int want) {
        int got = 0;

        for (int i = c->nidle - 1; i >= c->idle_mark && got < want; i--) {
                if (topo_pu_node(c->t, c->idle[i]) != node)
                        continue;
                c->extra[c->nextra++] = c->idle[i];
                memmove(&c->idle[i], &c->idle[i + 1], (c->nidle - i - 1) * sizeof *c->idle);
                c->nidle--;
                got++;
        }
        return got;
}

static int group_units(const struct ctx *c, int g) {
        struct cap cap = group_cap(c, g);
        return units(c->need.mode, &cap);
}

static int group_pick(const struct ctx *c, int first, int ng, int need, bool smallest) {
        int best = -1;

        for (int g = first; g < first + ng; g++) {
                if (c->gused[g] || c->gcap[g] <= 0 || (smallest && c->gcap[g] < need))
                        continue;
                if (best < 0 || (smallest ? c->gcap[g] < c->gcap[best] : c->gcap[g] > c->gcap[best]))
                        best = g;
        }
        return best;
}

/* The fewest groups of the node that hold 'need' units: the largest ones, the
 * last one chosen by best fit. Returns the number written to order[]. */
static int choose_groups(struct ctx *c, int node, int need, int *order) {
        const struct topo_node *tn = &c->t->nodes[node];
        int k = 0, sum = 0;

        for (int g = tn->first_group; g < tn->first_group + tn->ngroup; g++) {
                c->gcap[g] = group_units(c, g);
                c->gused[g] = false;
        }
        while (sum < need) {
                int g = group_pick(c, tn->first_group, tn->ngroup, need - sum, true);
                if (g < 0)
                        g = group_pick(c, tn->first_group, tn->ngroup, 0, false);
                if (g < 0)
                        break;
                c->gused[g] = true;
                order[k++] = g;
                sum += c->gcap[g];
        }
        return k;
}

static int fill_vcpus(struct ctx *c, int node, const int *order, int k, int want) {
        const struct topo_node *tn = &c->t->nodes[node];
        int got = 0;

        for (int i = 0; i < k && got < want; i++)
                got += take_vcpus(c, order[i], want - got);
        for (int g = tn->first_group; g < tn->first_group + tn->ngroup && got < want; g++)
                got += take_vcpus(c, g, want - got);
        return got;
}

static int fill_extras(struct ctx *c, int node, const int *order, int k, int want) {
        const struct topo_node *tn = &c->t->nodes[node];
        int got = 0;

        if (c->need.mode == MODE_REQUIRE)
                got += reuse_idle(c, node, want);
        for (int i = 0; i < k && got < want; i++)
                got += take_extras(c, order[i], want - got);
        for (int g = tn->first_group; g < tn->first_group + tn->ngroup && got < want; g++)
                got += take_extras(c, g, want - got);
        return got;
}

static bool pick_in_node(struct ctx *c, int node, int v, int e) {
        _cleanup_free_ int *order = xcalloc(c->t->nodes[node].ngroup + 1, sizeof *order);
        int need = c->need.mode == MODE_REQUIRE ? v : v + e;
        int k = choose_groups(c, node, need, order);

        c->idle_mark = c->nidle;
        if (fill_vcpus(c, node, order, k, v) < v)
                return false;
        return fill_extras(c, node, order, k, e) >= e;
}

/* --- building the plan --------------------------------------------------------- */

static void place_dedicated(struct place_set *s, int pu) {
        s->kind = PLACE_DEDICATED;
        s->npu = 1;
        s->pus = xmalloc(sizeof *s->pus);
        s->pus[0] = pu;
}

static enum place_kind emulator_kind(const struct request *req, bool dedicated) {
        if (req->policy.emulator == POLICY_EMULATOR_VCPUS)
                return PLACE_VCPUS;
        if (req->policy.emulator == POLICY_EMULATOR_ISOLATE && dedicated)
                return PLACE_DEDICATED;
        return PLACE_SHARED;
}

static void plan_helpers(struct plan *p, const struct request *req, const int *extra) {
        int next = 0;

        p->emulator.kind = emulator_kind(req, p->dedicated);
        if (p->emulator.kind == PLACE_DEDICATED)
                place_dedicated(&p->emulator, extra[next++]);
        p->niothread = req->iothreads;
        p->iothreads = xcalloc(req->iothreads, sizeof *p->iothreads);
        for (int i = 0; i < req->iothreads; i++) {
                struct place_set *s = &p->iothreads[i];
                if (req->policy.iothreads == POLICY_IOTHREADS_DEDICATED && p->dedicated)
                        place_dedicated(s, extra[next++]);
                else if (req->policy.iothreads == POLICY_IOTHREADS_EMULATOR && p->emulator.kind == PLACE_DEDICATED)
                        place_dedicated(s, p->emulator.pus[0]);
                else if (req->policy.iothreads == POLICY_IOTHREADS_EMULATOR)
                        s->kind = p->emulator.kind;
                else
                        s->kind = PLACE_SHARED;
        }
}

static int count_groups(struct ctx *c) {
        int count = 0;

        memset(c->gused, 0, c->t->ngroup * sizeof *c->gused);
        for (int i = 0; i < c->nv; i++) {
                int g = c->t->cores[c->t->pus[c->vcpu[i]].core].group;
                count += !c->gused[g];
                c->gused[g] = true;
        }
        return count;
}

static void plan_init(struct plan *p, const struct topo *t, const struct request *req) {
        memset(p, 0, sizeof *p);
        p->nvcpu = req->vcpus;
        p->vcpu_pu = xmalloc(req->vcpus * sizeof *p->vcpu_pu);
        for (int i = 0; i < req->vcpus; i++)
                p->vcpu_pu[i] = -1;
        p->numa = req->policy.numa;
        p->page = req->policy.page;
        p->memory_kib = req->memory_kib;
        p->node_mem_kib = xcalloc(t->nnode, sizeof *p->node_mem_kib);
}

/* Records memory per node: m page units spread over the set. */
static void plan_memory(struct plan *p, const struct ctx *c, const struct nodeset *s) {
        uint64_t cap[64] = { 0 }, out[64] = { 0 };

        if (!c->need.m)         /* need_of: base pages with numa=none need nothing */
                return;
        for (int i = 0; i < s->n; i++)
                cap[i] = c->ncap[s->nodes[i]].mem;
        spread(c->need.m, cap, out, s->n);
        for (int i = 0; i < s->n; i++)
                p->node_mem_kib[s->nodes[i]] = out[i] * c->need.page_kib;
}

static void plan_nodes(struct plan *p, const struct ctx *c, const struct nodeset *s) {
        p->nnode = 0;
        for (int i = 0; i < s->n; i++) {
                bool used = p->node_mem_kib[s->nodes[i]] > 0;
                for (int j = 0; j < c->nv && !used; j++)
                        used = topo_pu_node(c->t, c->vcpu[j]) == s->nodes[i];
                if (used || i == 0)
                        p->nodes[p->nnode++] = s->nodes[i];
        }
        p->split = p->nnode > 1;
}

/* --- the request ----------------------------------------------------------- */

static int extra_units(const struct request *req) {
        int e = req->policy.emulator == POLICY_EMULATOR_ISOLATE;

        if (req->policy.iothreads == POLICY_IOTHREADS_DEDICATED)
                e += req->iothreads;
        return e;
}

static struct need need_of(const struct request *req) {
        struct need n = {
                .mode = req->policy.threads == POLICY_THREADS_ISOLATE ? MODE_ISOLATE :
                        req->policy.threads == POLICY_THREADS_REQUIRE ? MODE_REQUIRE : MODE_PREFER,
                .v = req->vcpus,
                .e = extra_units(req),
                .page = page_index(req->policy.page),
                .page_kib = page_kib(req->policy.page),
        };

        /* Hugepages are a hard resource whatever the NUMA policy: counted always.
         * Base pages only when the memory is placed (numa strict or preferred). */
        n.mem = req->memory_kib > 0 && (req->policy.numa != POLICY_NUMA_NONE || n.page >= 0);
        n.m = n.mem ? req->memory_kib / n.page_kib + (req->memory_kib % n.page_kib != 0) : 0;
        return n;
}

static int check_request(const struct topo *t, const struct alloc *a, const struct request *req,
                         char reason[PLACEMENT_REASON_MAX]) {
        const struct policy *pol = &req->policy;

        if (t->npu < 1 || t->nnode < 1)
                return refuse(reason, EINVAL, "host model has no CPUs or no NUMA node");
        if (!alloc_matches(a, t))
                return refuse(reason, EINVAL, "allocations do not match the host model");
        if ((unsigned)pol->cpu >= _POLICY_CPU_MAX || (unsigned)pol->threads >= _POLICY_THREADS_MAX ||
            (unsigned)pol->emulator >= _POLICY_EMULATOR_MAX || (unsigned)pol->iothreads >= _POLICY_IOTHREADS_MAX ||
            (unsigned)pol->numa >= _POLICY_NUMA_MAX || (unsigned)pol->page >= _POLICY_PAGE_MAX)
                return refuse(reason, EINVAL, "invalid policy value");
        if (pol->cpu == POLICY_CPU_NONE)
                return refuse(reason, EINVAL, "cpu=none domains are not placed");
        if (req->vcpus < 1 || req->vcpus > 65536)
                return refuse(reason, EINVAL, "invalid vCPU count %d", req->vcpus);
        if (req->iothreads < 0 || req->iothreads > 1024)
                return refuse(reason, EINVAL, "invalid iothread count %d", req->iothreads);
        if (req->npci_nodes < 0 || req->npci_nodes > (int)ELEMENTSOF(req->pci_nodes))
                return refuse(reason, EINVAL, "invalid PCI node count %d", req->npci_nodes);
        for (int i = 0; i < req->npci_nodes; i++)
                if (req->pci_nodes[i] < -1 || req->pci_nodes[i] >= t->nnode)
                        return refuse(reason, EINVAL, "PCI device on unknown node index %d", req->pci_nodes[i]);
        return 0;
}

static const char *what_units(enum mode mode, int n) {
        if (mode == MODE_ISOLATE)
                return n == 1 ? "whole core (threads=isolate)" : "whole cores (threads=isolate)";
        if (mode == MODE_REQUIRE)
                return n == 1 ? "PU on whole SMT cores (threads=require)" : "PUs on whole SMT cores (threads=require)";
        return n == 1 ? "PU" : "PUs";
}

static const char *what_extras(const struct request *req) {
        bool emu = req->policy.emulator == POLICY_EMULATOR_ISOLATE;
        bool io = req->policy.iothreads == POLICY_IOTHREADS_DEDICATED && req->iothreads > 0;

        return emu && io ? "the emulator and iothreads" : emu ? "the emulator" : "iothreads";
}

static int cpu_total(const struct ctx *c, int *ret_most, int *ret_node) {
        int total = 0;

        *ret_most = -1;
        *ret_node = 0;
        for (int n = 0; n < c->t->nnode; n++) {
                int u = units(c->need.mode, &c->ncap[n]);
                total += u;
                if (u > *ret_most) {
                        *ret_most = u;
                        *ret_node = n;
                }
        }
        return total;
}

/* where: "" or " on one node" (the extras must sit with the vCPUs). */
static int refuse_cpu(const struct ctx *c, const char *where, char reason[PLACEMENT_REASON_MAX]) {
        int most, node, total = cpu_total(c, &most, &node);

        reason[0] = '\0';
        say(reason, "needs %d %s", c->need.v, what_units(c->need.mode, c->need.v));
        if (c->need.e > 0)
                say(reason, " plus %d for %s", c->need.e, what_extras(c->req));
        say(reason, "%s; most free on a node is %d (node %u), %d free in total", where, most,
            c->t->nodes[node].os, total);
        return -ENOSPC;
}

/* "; short by 64 pages on node 0": what the roomiest node (best) lacks, so the
 * operator knows how much to reserve or free there. */
static void refuse_memory_shortfall(const struct ctx *c, int best, char reason[PLACEMENT_REASON_MAX]) {
        char buf[32];

        if (best < 0 || c->ncap[best].mem >= c->need.m)
                return;
        if (c->need.page >= 0)
                say(reason, "; short by %llu page%s on node %u", (unsigned long long)(c->need.m - c->ncap[best].mem),
                    c->need.m - c->ncap[best].mem == 1 ? "" : "s", c->t->nodes[best].os);
        else
                say(reason, "; short by %s on node %u",
                    fmt_kib(c->need.m - c->ncap[best].mem, buf, sizeof buf), c->t->nodes[best].os);
}

/* "needs 8 GiB of memory; free: node 0: 2 GiB, node 1: 4 GiB; short by ...". */
static int refuse_memory(const struct ctx *c, char reason[PLACEMENT_REASON_MAX]) {
        char buf[32];
        bool pages = c->need.page >= 0;
        int best = -1;

        reason[0] = '\0';
        say(reason, "needs %s of %s; free:", fmt_kib(c->req->memory_kib, buf, sizeof buf),
            pages ? (c->need.page == TOPO_PAGE_1G ? "1G pages" : "2M pages") : "memory");
        for (int n = 0; n < c->t->nnode; n++) {
                if (c->t->nodes[n].npu == 0)
                        continue;
                if (pages)
                        say(reason, "%s node %u: %llu", best < 0 ? "" : ",", c->t->nodes[n].os,
                            (unsigned long long)c->ncap[n].mem);
                else
                        say(reason, "%s node %u: %s", best < 0 ? "" : ",", c->t->nodes[n].os,
                            fmt_kib(c->ncap[n].mem, buf, sizeof buf));
                if (best < 0 || c->ncap[n].mem > c->ncap[best].mem)
                        best = n;
        }
        if (pages)
                say(reason, " pages");
        refuse_memory_shortfall(c, best, reason);
        return -ENOSPC;
}

static bool require_impossible(const struct ctx *c) {
        return c->need.mode == MODE_REQUIRE && c->t->smt < 2;
}

static bool some_home(const struct ctx *c) {
        for (int n = 0; n < c->t->nnode; n++)
                if (c->t->nodes[n].npu > 0 && node_vcpu_room(&c->need, &c->ncap[n], c->need.e) >= 1)
                        return true;
        return false;
}

static int explain_refusal(const struct ctx *c, char reason[PLACEMENT_REASON_MAX]) {
        int most, node, any = 0;
        uint64_t mem = 0;

        if (require_impossible(c))
                return refuse(reason, ENOSPC, "threads=require needs full sibling sets but this host has "
                              "no SMT (1 thread per core); use threads=prefer or threads=isolate");
        for (int n = 0; n < c->t->nnode; n++) {
                any += c->need.mode == MODE_REQUIRE ? c->ncap[n].whole_pus : c->ncap[n].pus;
                mem = sat_add(mem, c->t->nodes[n].npu > 0 ? c->ncap[n].mem : 0);
        }
        if (cpu_total(c, &most, &node) < c->need.v + (c->need.mode == MODE_REQUIRE ? 0 : c->need.e) ||
            any < c->need.v + c->need.e)
                return refuse_cpu(c, "", reason);
        if (mem < c->need.m)
                return refuse_memory(c, reason);
        if (!some_home(c))              /* the extras and one vCPU or more fit on no node */
                return refuse_cpu(c, " on one node", reason);
        return refuse(reason, ENOSPC, "no set of up to 64 NUMA nodes holds %d vCPUs and the memory",
                      c->need.v);
}

static int pool_left(const struct ctx *c) {
        int n = 0;

        for (int pu = 0; pu < c->t->npu; pu++)
                n += pu_free(c, pu);
        return n;
}

/* The vCPUs per node of the set: evenly, in whole granules when split (see
 * split_granule); the remainder below a granule goes to the last node with
 * room. Returns that node's slot (to be filled last, so the lone vCPU is the
 * domain's last one), -1 when there is none, -2 when the set is short. */
static int spread_vcpus(const struct ctx *c, const struct nodeset *s, uint64_t *out) {
        uint64_t cap[64] = { 0 }, capg[64] = { 0 }, g = s->n > 1 ? (uint64_t)split_granule(c) : 1;
        uint64_t whole = (uint64_t)c->need.v / g, rem = (uint64_t)c->need.v % g;

        for (int i = 0; i < s->n; i++) {
                int room = node_vcpu_room(&c->need, &c->ncap[s->nodes[i]], i == 0 ? home_extras(c) : 0);
                cap[i] = room > 0 ? (uint64_t)room : 0;
                capg[i] = cap[i] / g;
        }
        if (spread(whole, capg, out, s->n) < whole)
                return -2;
        for (int i = 0; i < s->n; i++)
                out[i] *= g;
        for (int i = s->n - 1; rem > 0 && i >= 0; i--)
                if (cap[i] - out[i] >= rem) {
                        out[i] += rem;
                        return i;
                }
        return rem > 0 ? -2 : -1;
}

/* extras_apart: the extras on what the home node has left after its vCPUs,
 * then on the nearest nodes with room. */
static bool place_extras_apart(struct ctx *c, int home) {
        _cleanup_free_ int *order = xcalloc(c->t->nnode, sizeof *order);
        int n = nodes_ordered(c, home, GROW_NEAREST, order);
        int got = fill_extras(c, home, NULL, 0, c->need.e);

        for (int i = 0; i < n && got < c->need.e; i++)
                got += fill_extras(c, order[i], NULL, 0, c->need.e - got);
        return got >= c->need.e;
}

/* Picks PUs on every node of the set; vCPUs spread evenly, extras at home
 * (or apart). */
static bool pick_all(struct ctx *c, const struct nodeset *s) {
        uint64_t out[64] = { 0 };
        int last = spread_vcpus(c, s, out);

        if (last < -1)
                return false;
        for (int i = 0; i < s->n; i++)
                if (i != last && !pick_in_node(c, s->nodes[i], (int)out[i], i == 0 ? home_extras(c) : 0))
                        return false;
        if (last >= 0 && !pick_in_node(c, s->nodes[last], (int)out[last], last == 0 ? home_extras(c) : 0))
                return false;
        return !c->extras_apart || place_extras_apart(c, s->nodes[0]);
}

static void plan_note_split(struct plan *p, const struct ctx *c) {
        if (!p->split)
                return;
        snprintf(p->note, sizeof p->note, "no single NUMA node holds %d vCPUs%s; split evenly over %d nodes",
                 c->need.v, c->need.m ? " and the memory" : "", p->nnode);
}

/* "node 1 holds the 16 vCPUs and the memory; the emulator runs on node 0,
 * the nearest with room". */
static void plan_note_extras(struct plan *p, const struct ctx *c) {
        char nodes[128] = "";
        bool seen[64] = { false }, several = false;
        bool emu = c->req->policy.emulator == POLICY_EMULATOR_ISOLATE, io = c->need.e > (int)emu;

        if (!c->extras_apart)
                return;
        for (int i = 0; i < c->nextra; i++) {
                int n = topo_pu_node(c->t, c->extra[i]);
                size_t len = strlen(nodes);
                if (n < 0 || n >= 64 || seen[n])
                        continue;
                several = len > 0;
                snprintf(nodes + len, sizeof nodes - len, "%s%u", len ? "," : "", c->t->nodes[n].os);
                seen[n] = true;
        }
        if (!p->split)
                say(p->note, "node %u holds the %d vCPU%s%s", c->t->nodes[p->nodes[0]].os, c->need.v,
                    c->need.v == 1 ? "" : "s", c->need.m ? " and the memory" : "");
        say(p->note, "; %s run%s on node%s %s, the nearest with room", what_extras(c->req),
            emu && !io ? "s" : "", several ? "s" : "", nodes);
}

static int place_dedicated_domain(struct ctx *c, struct plan *p, char reason[PLACEMENT_REASON_MAX]) {
        struct nodeset s = { 0 };

        node_caps(c);
        if (require_impossible(c) || !choose_nodes(c, &s))
                return explain_refusal(c, reason);
        if (!pick_all(c, &s))
                return refuse(reason, ENOSPC, "not enough free CPUs on nodes that hold the memory");
        if (pool_left(c) < 1)
                return refuse(reason, ENOSPC, "would leave no shared CPUs for shared domains and emulator threads");
        p->dedicated = true;
        memcpy(p->vcpu_pu, c->vcpu, c->nv * sizeof *c->vcpu);
        p->nidle = c->nidle;
        p->idle_pus = xmalloc((c->nidle + 1) * sizeof *p->idle_pus);
        memcpy(p->idle_pus, c->idle, c->nidle * sizeof *c->idle);
        p->ngroup = count_groups(c);
        plan_memory(p, c, &s);
        plan_nodes(p, c, &s);
        plan_note_split(p, c);
        plan_note_extras(p, c);
        plan_helpers(p, c->req, c->extra);
        return 0;
}

/* cpu=shared: a home node (most free memory, then most shared PUs) when the
 * memory fits on one; otherwise memory stays unbound. */
static int shared_home(const struct ctx *c) {
        int best = -1;

        for (int n = 0; n < c->t->nnode; n++) {
                const struct cap *x = &c->ncap[n];
                if (c->t->nodes[n].npu == 0 || x->mem < c->need.m)
                        continue;
                if (best < 0 || (x->pus > 0) > (c->ncap[best].pus > 0) ||
                    ((x->pus > 0) == (c->ncap[best].pus > 0) &&
                     (x->mem > c->ncap[best].mem || (x->mem == c->ncap[best].mem && x->pus > c->ncap[best].pus))))
                        best = n;
        }
        return best;
}

/* Hugepages that fit on no single node: spread over the nodes with CPUs (the
 * memory stays unbound), or refused when the host as a whole is short. */
static int shared_spread_pages(struct ctx *c, struct plan *p, char reason[PLACEMENT_REASON_MAX]) {
        struct nodeset s = { 0 };
        uint64_t total = 0;

        for (int n = 0; n < c->t->nnode && s.n < 64; n++)
                if (c->t->nodes[n].npu > 0) {
                        s.nodes[s.n++] = n;
                        total = sat_add(total, c->ncap[n].mem);
                }
        if (total < c->need.m)
                return refuse_memory(c, reason);
        plan_memory(p, c, &s);
        return 0;
}

static int place_shared_domain(struct ctx *c, struct plan *p, char reason[PLACEMENT_REASON_MAX]) {
        bool pages = c->need.page >= 0 && c->need.m > 0;
        bool bind = c->req->policy.numa != POLICY_NUMA_NONE;
        int home;

        node_caps(c);
        if (pool_left(c) < 1)           /* as the daemon would find when it pins */
                return refuse(reason, ENOSPC, "the shared pool is empty: every PU is reserved or dedicated");
        p->dedicated = false;
        p->idle_pus = xmalloc(sizeof *p->idle_pus);
        /* numa=none with hugepages: the pages are still counted on a node, unbound */
        home = bind || pages ? shared_home(c) : -1;
        if (home >= 0) {
                struct nodeset s = { .n = 1, .nodes = { home } };
                plan_memory(p, c, &s);
                if (bind) {             /* unbound: the vCPUs keep the whole pool */
                        p->nnode = 1;
                        p->nodes[0] = home;
                }
        } else {
                if (pages && shared_spread_pages(c, p, reason) < 0)
                        return -ENOSPC;
                if (c->need.m && bind)
                        snprintf(p->note, sizeof p->note, "memory does not fit on one NUMA node; left unbound");
        }
        plan_helpers(p, c->req, NULL);
        return 0;
}

static void ctx_done(struct ctx *c) {
        c->ncap = scratch_free(c->ncap);
        c->taken = scratch_free(c->taken);
        c->gcap = scratch_free(c->gcap);
        c->gused = scratch_free(c->gused);
        c->vcpu = scratch_free(c->vcpu);
        c->idle = scratch_free(c->idle);
        c->extra = scratch_free(c->extra);
}

static void ctx_init(struct ctx *c, const struct topo *t, const struct alloc *a, const struct request *req) {
        *c = (struct ctx) { .t = t, .a = a, .req = req, .need = need_of(req) };
        c->ncap = xcalloc(t->nnode, sizeof *c->ncap);
        c->taken = xcalloc(t->npu, 1);
        c->gcap = xcalloc(t->ngroup, sizeof *c->gcap);
        c->gused = xcalloc(t->ngroup, sizeof *c->gused);
        c->vcpu = xcalloc(req->vcpus, sizeof *c->vcpu);
        c->idle = xcalloc(t->npu, sizeof *c->idle);
        c->extra = xcalloc(c->need.e + 1, sizeof *c->extra);
}

int placement_place(const struct topo *t, const struct alloc *a, const struct request *req,
                    struct plan *ret, char reason[PLACEMENT_REASON_MAX]) {
        char scratch[PLACEMENT_REASON_MAX];
        _cleanup_(ctx_done) struct ctx c = { 0 };
        struct plan p;
        int r;

        if (!reason)
                reason = scratch;
        reason[0] = '\0';
        if (!t || !a || !req || !ret)
                return refuse(reason, EINVAL, "missing host model, allocations or request");
        r = check_request(t, a, req, reason);
        if (r < 0)
                return r;
        ctx_init(&c, t, a, req);
        plan_init(&p, t, req);
        r = req->policy.cpu == POLICY_CPU_DEDICATED ? place_dedicated_domain(&c, &p, reason)
                                                    : place_shared_domain(&c, &p, reason);
        if (r < 0) {
                plan_done(&p);
                return r;
        }
        *ret = p;
        return 0;
}
