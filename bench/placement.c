/* Placement benchmark: kvmtuned's engine against a naive first-fit baseline
 * (each vCPU on the lowest free CPU number, as hand-written <vcpupin> scripts
 * do) over the real machines' topologies and a few small synthetic hosts, with seeded
 * workloads. Prints figures; never passes or fails on time.
 *
 *   bench/placement [TOPOLOGY_DIR]   (default: $TOPOLOGIES, then tests/data/topologies)
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "kvmtune/placement.h"
#include "kvmtune/util.h"

#define CHURN_STEPS 3000
#define FILL_RUNS 20
#define MAXDOM 1024

struct stats {
        double *us;                     /* decision times */
        int nus;
        int placed, one_node, one_node_possible;
        long groups, min_groups;
        int admitted;                   /* before the first refusal (fill run) */
};

/* --- workload --------------------------------------------------------------- */

static uint64_t rng_next(uint64_t *s) {
        *s ^= *s << 13;
        *s ^= *s >> 7;
        *s ^= *s << 17;
        return *s;
}

static int rnd(uint64_t *s, int n) {
        return n > 0 ? (int)(rng_next(s) % (uint64_t)n) : 0;
}

/* Dedicated threads=prefer domains of mixed sizes; a third isolate their
 * emulator. Memory does not constrain (the baseline knows nothing of it). */
static struct request bench_request(const struct topo *t, uint64_t *s, bool mixed) {
        static const int sizes[] = { 1, 2, 2, 4, 4, 4, 8, 8, 16 };
        struct request q = { 0 };
        int maxv = t->npu / 4 > 1 ? t->npu / 4 : 1;

        policy_init_default(&q.policy);
        q.policy.cpu = POLICY_CPU_DEDICATED;
        q.vcpus = sizes[rnd(s, ELEMENTSOF(sizes))];
        q.vcpus = q.vcpus > maxv ? 1 + rnd(s, maxv) : q.vcpus;
        q.policy.emulator = rnd(s, 3) == 0 ? POLICY_EMULATOR_ISOLATE : POLICY_EMULATOR_SHARE;
        if (mixed) {
                q.policy.threads = rnd(s, _POLICY_THREADS_MAX);
                q.policy.iothreads = rnd(s, _POLICY_IOTHREADS_MAX);
                q.iothreads = rnd(s, 2);
                q.memory_kib = (uint64_t)(1 + rnd(s, 32)) << 20;
        }
        return q;
}

static int extra_pus(const struct request *q) {
        return q->policy.emulator == POLICY_EMULATOR_ISOLATE;
}

/* Fill runs: sizes up to one L3 group, so the groups fragment. */
static struct request fill_request(const struct topo *t, uint64_t *s) {
        struct request q = bench_request(t, s, false);
        int gmax = 1;

        for (int g = 0; g < t->ngroup; g++) {
                int npu = 0;
                for (int k = t->groups[g].first_core; k < t->groups[g].first_core + t->groups[g].ncore; k++)
                        npu += t->cores[k].npu;
                gmax = npu > gmax ? npu : gmax;
        }
        gmax = gmax < t->npu / 2 ? gmax : t->npu / 2 > 1 ? t->npu / 2 : 1;
        q.vcpus = 1 + rnd(s, gmax);
        q.policy.emulator = POLICY_EMULATOR_SHARE;
        return q;
}

/* --- helpers ------------------------------------------------------------------ */

static double now_us(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b) {
        double x = *(const double *)a, y = *(const double *)b;
        return (x > y) - (x < y);
}

static double percentile(double *v, int n, double p) {
        if (n == 0)
                return 0;
        qsort(v, n, sizeof *v, cmp_double);
        return v[(int)(p * (n - 1))];
}

static int cmp_int_desc(const void *a, const void *b) {
        return *(const int *)b - *(const int *)a;
}

/* Whether some node has free PUs for the vCPUs while the host has room for
 * the extras too (beside them or on another node). */
static bool one_node_possible(const struct topo *t, const bool *free_pu, int vcpus, int extras) {
        _cleanup_free_ int *cap = xcalloc(t->nnode, sizeof *cap);
        int total = 0;

        for (int pu = 0; pu < t->npu; pu++) {
                cap[topo_pu_node(t, pu)] += free_pu[pu];
                total += free_pu[pu];
        }
        for (int n = 0; n < t->nnode; n++)
                if (cap[n] >= vcpus && total >= vcpus + extras)
                        return true;
        return false;
}

/* Fewest groups whose free PUs hold 'need' (largest first: exact for one
 * domain at one moment). free_pu: per PU, whether it is free. */
static int min_groups(const struct topo *t, const bool *free_pu, int need) {
        _cleanup_free_ int *cap = xcalloc(t->ngroup, sizeof *cap);
        int k = 0;

        for (int pu = 0; pu < t->npu; pu++)
                cap[t->cores[t->pus[pu].core].group] += free_pu[pu];
        qsort(cap, t->ngroup, sizeof *cap, cmp_int_desc);
        while (need > 0 && k < t->ngroup)
                need -= cap[k++];
        return k;
}

static int groups_of(const struct topo *t, const int *pus, int n, bool *seen) {
        int count = 0;

        memset(seen, 0, t->ngroup * sizeof *seen);
        for (int i = 0; i < n; i++) {
                int g = t->cores[t->pus[pus[i]].core].group;
                count += !seen[g];
                seen[g] = true;
        }
        return count;
}

static bool on_one_node(const struct topo *t, const int *pus, int n) {
        for (int i = 1; i < n; i++)
                if (topo_pu_node(t, pus[i]) != topo_pu_node(t, pus[0]))
                        return false;
        return true;
}

/* --- the engine ------------------------------------------------------------- */

struct engine {
        const struct topo *t;
        struct alloc *a;
        struct plan plans[MAXDOM];
        bool live[MAXDOM];
};

static void engine_init(struct engine *e, const struct topo *t) {
        hwloc_bitmap_t set = placement_default_reserved(t);

        memset(e, 0, sizeof *e);
        e->t = t;
        e->a = alloc_new(t);
        alloc_reserve(e->a, t, set);
        hwloc_bitmap_free(set);
}

static void engine_done(struct engine *e) {
        for (int id = 1; id < MAXDOM; id++)
                if (e->live[id])
                        plan_done(&e->plans[id]);
        alloc_free(e->a);
}

static void engine_free_map(const struct engine *e, bool *free_pu) {
        for (int pu = 0; pu < e->t->npu; pu++)
                free_pu[pu] = e->a->pu_owner[pu] == ALLOC_FREE;
}

static int engine_place(struct engine *e, int id, const struct request *q, struct stats *st, bool *scratch) {
        char why[PLACEMENT_REASON_MAX];
        double t0, t1;
        int r, min;
        bool possible;

        engine_free_map(e, scratch);
        min = min_groups(e->t, scratch, q->vcpus);
        possible = one_node_possible(e->t, scratch, q->vcpus, extra_pus(q));
        t0 = now_us();
        r = placement_place(e->t, e->a, q, &e->plans[id], why);
        t1 = now_us();
        if (st)
                st->us[st->nus++] = t1 - t0;
        if (r < 0)
                return r;
        alloc_commit(e->a, e->t, &e->plans[id], id);
        e->live[id] = true;
        if (st) {
                st->placed++;
                st->one_node += on_one_node(e->t, e->plans[id].vcpu_pu, q->vcpus);
                st->one_node_possible += possible;
                st->groups += e->plans[id].ngroup;
                st->min_groups += min;
        }
        return 0;
}

static void engine_remove(struct engine *e, int id) {
        alloc_release(e->a, e->t, &e->plans[id], id);
        plan_done(&e->plans[id]);
        e->live[id] = false;
}

/* --- the first-fit baseline ------------------------------------------------- */

struct firstfit {
        const struct topo *t;
        int *by_os;                     /* PU indexes in os order */
        int *owner;                     /* per PU: 0 free, -1 reserved, id */
        int *pus[MAXDOM];
        int npus[MAXDOM];
};

static const struct topo *sort_topo;

static int cmp_pu_os(const void *a, const void *b) {
        unsigned x = sort_topo->pus[*(const int *)a].os, y = sort_topo->pus[*(const int *)b].os;
        return (x > y) - (x < y);
}

static void firstfit_init(struct firstfit *f, const struct topo *t) {
        const struct topo_core *c0 = &t->cores[0];

        memset(f, 0, sizeof *f);
        f->t = t;
        f->by_os = xcalloc(t->npu, sizeof *f->by_os);
        f->owner = xcalloc(t->npu, sizeof *f->owner);
        for (int pu = 0; pu < t->npu; pu++)
                f->by_os[pu] = pu;
        sort_topo = t;
        qsort(f->by_os, t->npu, sizeof *f->by_os, cmp_pu_os);
        for (int pu = c0->first_pu; t->ncore > 1 && pu < c0->first_pu + c0->npu; pu++)
                f->owner[pu] = -1;      /* same housekeeping core as the engine */
}

static void firstfit_done(struct firstfit *f) {
        for (int id = 0; id < MAXDOM; id++)
                free(f->pus[id]);
        free(f->by_os);
        free(f->owner);
}

static int firstfit_free(const struct firstfit *f) {
        int n = 0;

        for (int pu = 0; pu < f->t->npu; pu++)
                n += f->owner[pu] == 0;
        return n;
}

/* vCPU i on the i-th lowest free CPU number, the emulator on the next one;
 * like the engine, it keeps one CPU for the shared pool. */
static int firstfit_place(struct firstfit *f, int id, const struct request *q, struct stats *st, bool *scratch) {
        int need = q->vcpus + extra_pus(q), n = 0, min;
        double t0, t1;
        bool possible;

        for (int pu = 0; pu < f->t->npu; pu++)
                scratch[pu] = f->owner[pu] == 0;
        min = min_groups(f->t, scratch, q->vcpus);
        possible = one_node_possible(f->t, scratch, q->vcpus, extra_pus(q));
        t0 = now_us();
        if (firstfit_free(f) <= need) {
                if (st)
                        st->us[st->nus++] = now_us() - t0;
                return -ENOSPC;
        }
        f->pus[id] = xcalloc(need, sizeof *f->pus[id]);
        for (int i = 0; i < f->t->npu && n < need; i++)
                if (f->owner[f->by_os[i]] == 0) {
                        f->owner[f->by_os[i]] = id;
                        f->pus[id][n++] = f->by_os[i];
                }
        f->npus[id] = n;
        t1 = now_us();
        if (st) {
                st->us[st->nus++] = t1 - t0;
                st->placed++;
                st->one_node += on_one_node(f->t, f->pus[id], q->vcpus);
                st->one_node_possible += possible;
                st->groups += groups_of(f->t, f->pus[id], q->vcpus, (bool *)scratch);
                st->min_groups += min;
        }
        return 0;
}

static void firstfit_remove(struct firstfit *f, int id) {
        for (int i = 0; i < f->npus[id]; i++)
                f->owner[f->pus[id][i]] = 0;
        free(f->pus[id]);
        f->pus[id] = NULL;
}

/* --- exact optimum (small hosts): fewest total groups for a sequence ---------- */

#define MEMO_SIZE (1 << 20)
#define INF 1000000

struct optimum {
        int ngroup, ndom;
        const int *sizes;
        uint64_t *keys;                 /* 0: empty slot */
        int *vals;
        long visits;
};

static uint64_t opt_key(const struct optimum *o, int i, const int *cap) {
        int sorted[16];
        uint64_t key = (uint64_t)i + 1;

        memcpy(sorted, cap, o->ngroup * sizeof *cap);
        qsort(sorted, o->ngroup, sizeof *sorted, cmp_int_desc);
        for (int g = 0; g < o->ngroup; g++)
                key = key << 4 | (uint64_t)sorted[g];
        return key;
}

static int *opt_slot(struct optimum *o, uint64_t key, bool *ret_found) {
        uint64_t h = key * 0x9e3779b97f4a7c15ULL;

        for (uint64_t i = h >> 44;; i = (i + 1) & (MEMO_SIZE - 1)) {
                if (o->keys[i] == key || o->keys[i] == 0) {
                        *ret_found = o->keys[i] == key;
                        o->keys[i] = key;
                        return &o->vals[i];
                }
        }
}

static int opt_best(struct optimum *o, int i, int *cap);

/* Every way to put 'left' vCPUs of domain i on groups g.. ; 'used' groups so far. */
static int opt_spread(struct optimum *o, int i, int *cap, int g, int left, int used) {
        int best = INF;

        if (left == 0) {
                int rest = opt_best(o, i + 1, cap);
                return rest >= INF ? INF : used + rest;
        }
        if (g == o->ngroup)
                return INF;
        o->visits++;
        for (int take = cap[g] < left ? cap[g] : left; take >= 0; take--) {
                int r;
                cap[g] -= take;
                r = opt_spread(o, i, cap, g + 1, left - take, used + (take > 0));
                cap[g] += take;
                best = r < best ? r : best;
        }
        return best;
}

static int opt_best(struct optimum *o, int i, int *cap) {
        bool found;
        uint64_t key;
        int *slot, r;

        if (i == o->ndom)
                return 0;
        key = opt_key(o, i, cap);
        slot = opt_slot(o, key, &found);
        if (found)
                return *slot;
        r = opt_spread(o, i, cap, 0, o->sizes[i], 0);
        slot = opt_slot(o, key, &found);        /* the table may have moved on */
        *slot = r;
        return r;
}

/* Minimum total L3 groups over every assignment of the domains (in PUs, as
 * threads=prefer counts them) to the host's free group capacity; -1 when the
 * host is too big to search. */
static int optimum_groups(const struct topo *t, const int *sizes, int ndom) {
        int cap[16] = { 0 }, r;
        const struct topo_core *c0 = &t->cores[0];
        struct optimum o = { .ngroup = t->ngroup, .ndom = ndom, .sizes = sizes };

        if (t->ngroup > 12 || ndom > 60)
                return -1;
        for (int pu = 0; pu < t->npu; pu++)
                cap[t->cores[t->pus[pu].core].group]++;
        if (t->ncore > 1)
                cap[c0->group] -= c0->npu;
        for (int g = 0; g < t->ngroup; g++)
                if (cap[g] > 15)
                        return -1;
        o.keys = xcalloc(MEMO_SIZE, sizeof *o.keys);
        o.vals = xcalloc(MEMO_SIZE, sizeof *o.vals);
        r = opt_best(&o, 0, cap);
        free(o.keys);
        free(o.vals);
        return r >= INF ? -1 : r;
}

/* --- runs ---------------------------------------------------------------------- */

struct result {
        struct stats churn[2];          /* 0: engine, 1: first-fit */
        struct stats fill[2];
        struct stats mixed;
        int optimum;                    /* total groups over the fill runs, -1: not searched */
};

static void stats_init(struct stats *st, int n) {
        memset(st, 0, sizeof *st);
        st->us = xcalloc(n + 1, sizeof *st->us);
}

/* Arrivals until the first refusal, same requests for both; returns the
 * number the engine admitted and their sizes in sizes[]. */
static int fill_once(const struct topo *t, uint64_t seed, struct result *res, int *sizes) {
        static struct engine e;
        static struct firstfit f;
        _cleanup_free_ bool *scratch = xcalloc(t->npu, sizeof *scratch);
        uint64_t s = seed;
        bool e_open = true, f_open = true;
        int n = 0;

        engine_init(&e, t);
        firstfit_init(&f, t);
        for (int id = 1; id < MAXDOM && (e_open || f_open); id++) {
                struct request q = fill_request(t, &s);
                if (e_open && engine_place(&e, id, &q, &res->fill[0], scratch) == 0) {
                        res->fill[0].admitted++;
                        sizes[n++] = q.vcpus;
                } else
                        e_open = false;
                if (f_open && firstfit_place(&f, id, &q, &res->fill[1], scratch) == 0)
                        res->fill[1].admitted++;
                else
                        f_open = false;
        }
        engine_done(&e);
        firstfit_done(&f);
        return n;
}

static void run_fill(const struct topo *t, uint64_t seed, bool search, struct result *res) {
        int sizes[MAXDOM];

        stats_init(&res->fill[0], FILL_RUNS * MAXDOM);
        stats_init(&res->fill[1], FILL_RUNS * MAXDOM);
        res->optimum = search ? 0 : -1;
        for (int i = 0; i < FILL_RUNS; i++) {
                int n = fill_once(t, seed + 1000 * i, res, sizes), opt;
                if (res->optimum < 0)
                        continue;
                opt = optimum_groups(t, sizes, n);
                res->optimum = opt < 0 ? -1 : res->optimum + opt;
        }
}

struct step {
        bool depart;
        unsigned pick;
        struct request req;
};

static int nth_live(const bool *live, unsigned pick) {
        int n = 0, k;

        for (int id = 1; id < MAXDOM; id++)
                n += live[id];
        if (n == 0)
                return -1;
        k = (int)(pick % (unsigned)n);
        for (int id = 1; id < MAXDOM; id++)
                if (live[id] && k-- == 0)
                        return id;
        return -1;
}

static int free_id(const bool *live) {
        for (int id = 1; id < MAXDOM; id++)
                if (!live[id])
                        return id;
        return -1;
}

static void churn_engine(const struct topo *t, const struct step *steps, struct stats *st) {
        static struct engine e;
        _cleanup_free_ bool *scratch = xcalloc(t->npu, sizeof *scratch);

        engine_init(&e, t);
        stats_init(st, CHURN_STEPS);
        for (int i = 0; i < CHURN_STEPS; i++) {
                int id = steps[i].depart ? nth_live(e.live, steps[i].pick) : free_id(e.live);
                if (id < 0)
                        continue;
                if (steps[i].depart)
                        engine_remove(&e, id);
                else
                        engine_place(&e, id, &steps[i].req, st, scratch);
        }
        engine_done(&e);
}

static void churn_firstfit(const struct topo *t, const struct step *steps, struct stats *st) {
        static struct firstfit f;
        static bool live[MAXDOM];
        _cleanup_free_ bool *scratch = xcalloc(t->npu, sizeof *scratch);

        firstfit_init(&f, t);
        memset(live, 0, sizeof live);
        stats_init(st, CHURN_STEPS);
        for (int i = 0; i < CHURN_STEPS; i++) {
                int id = steps[i].depart ? nth_live(live, steps[i].pick) : free_id(live);
                if (id < 0)
                        continue;
                if (steps[i].depart) {
                        firstfit_remove(&f, id);
                        live[id] = false;
                } else
                        live[id] = firstfit_place(&f, id, &steps[i].req, st, scratch) == 0;
        }
        firstfit_done(&f);
}

static struct step *make_steps(const struct topo *t, uint64_t seed, bool mixed) {
        struct step *steps = xcalloc(CHURN_STEPS, sizeof *steps);
        uint64_t s = seed;

        for (int i = 0; i < CHURN_STEPS; i++) {
                steps[i].depart = rnd(&s, 100) < 40;
                steps[i].pick = (unsigned)rng_next(&s);
                steps[i].req = bench_request(t, &s, mixed);
        }
        return steps;
}

static void run_topology(const struct topo *t, uint64_t seed, bool search, struct result *res) {
        _cleanup_free_ struct step *steps = make_steps(t, seed, false);
        _cleanup_free_ struct step *mixed = make_steps(t, seed + 1, true);

        churn_engine(t, steps, &res->churn[0]);
        churn_firstfit(t, steps, &res->churn[1]);
        churn_engine(t, mixed, &res->mixed);
        run_fill(t, seed + 2, search, res);
}

/* --- output ---------------------------------------------------------------------- */

static double ratio(long a, long b) {
        return b ? (double)a / (double)b : 0;
}

static void print_result(const char *name, const struct topo *t, struct result *res) {
        struct stats *ce = &res->churn[0], *cf = &res->churn[1];

        printf("== %s: %s\n", name, t->description);
        printf("%-42s %10s %10s %10s\n", "", "kvmtuned", "first-fit", "optimum");
        printf("%-42s %10.2f %10.2f %10s\n", "decision time, median (us)",
               percentile(ce->us, ce->nus, 0.5), percentile(cf->us, cf->nus, 0.5), "-");
        printf("%-42s %10.2f %10.2f %10s\n", "decision time, p99 (us)",
               percentile(ce->us, ce->nus, 0.99), percentile(cf->us, cf->nus, 0.99), "-");
        printf("%-42s %10.2f %10s %10s\n", "decision time, p99, mixed policies (us)",
               percentile(res->mixed.us, res->mixed.nus, 0.99), "-", "-");
        printf("%-42s %10.1f %10.1f %10s\n", "domains on one node (%)",
               100 * ratio(ce->one_node, ce->placed), 100 * ratio(cf->one_node, cf->placed), "-");
        printf("%-42s %10.1f %10.1f %10s\n", "  one node possible at each decision (%)",
               100 * ratio(ce->one_node_possible, ce->placed), 100 * ratio(cf->one_node_possible, cf->placed), "-");
        printf("%-42s %10.2f %10.2f %10s\n", "mean L3 groups per domain",
               ratio(ce->groups, ce->placed), ratio(cf->groups, cf->placed), "-");
        printf("%-42s %10.2f %10.2f %10s\n", "  minimum possible at each decision",
               ratio(ce->min_groups, ce->placed), ratio(cf->min_groups, cf->placed), "-");
        printf("%-42s %10.1f %10.1f %10s\n", "fill runs: admitted before the first refusal",
               ratio(res->fill[0].admitted, FILL_RUNS), ratio(res->fill[1].admitted, FILL_RUNS), "-");
        if (res->optimum >= 0)
                printf("%-42s %10.2f %10.2f %10.2f\n", "  mean L3 groups of those",
                       ratio(res->fill[0].groups, res->fill[0].placed),
                       ratio(res->fill[1].groups, res->fill[1].placed),
                       ratio(res->optimum, res->fill[0].admitted));
        printf("\n");
}

static void result_free(struct result *res) {
        for (int i = 0; i < 2; i++) {
                free(res->churn[i].us);
                free(res->fill[i].us);
        }
        free(res->mixed.us);
}

static void bench_one(enum topo_source src, const char *arg, const char *name, uint64_t seed, bool search) {
        static struct result res;
        struct topo *t;
        int r = topo_load(src, arg, NULL, &t);

        if (r < 0) {
                printf("== %s: cannot load: %s\n\n", name, strerror(-r));
                return;
        }
        memset(&res, 0, sizeof res);
        run_topology(t, seed, search, &res);
        print_result(name, t, &res);
        result_free(&res);
        topo_free(t);
}

static int cmp_str(const void *a, const void *b) {
        return strcmp(*(char *const *)a, *(char *const *)b);
}

static int bench_dir(const char *dir) {
        char *names[128];
        int n = 0;
        struct dirent *de;
        DIR *d = opendir(dir);

        if (!d) {
                fprintf(stderr, "placement: cannot open %s: %s\n", dir, strerror(errno));
                return -errno;
        }
        while ((de = readdir(d)) && n < 128)
                if (strstr(de->d_name, ".xml"))
                        names[n++] = xstrdup(de->d_name);
        closedir(d);
        qsort(names, n, sizeof *names, cmp_str);
        for (int i = 0; i < n; i++) {
                _cleanup_free_ char *path = xasprintf("%s/%s", dir, names[i]);
                bench_one(TOPO_SOURCE_XML, path, names[i], 0x5eed0000ULL + i, false);
                free(names[i]);
        }
        return 0;
}

int main(int argc, char **argv) {
        static const char *const small[] = {
                "Package:2 [NUMANode(memory=64GiB)] L3Cache:2 Core:4 PU:2(indexes=core)",
                "Package:1 [NUMANode(memory=32GiB)] L3Cache:3 Core:3 PU:2(indexes=core)",
                "Package:2 [NUMANode(memory=32GiB)] L3Cache:3 Core:2 PU:2(indexes=core)",
        };
        const char *dir = argc > 1 ? argv[1] : getenv("TOPOLOGIES") ?: TEST_TOPOLOGIES;

        if (argc > 2 || (argc == 2 && argv[1][0] == '-')) {
                fprintf(stderr, "usage: %s [TOPOLOGY_DIR]\n", argv[0]);
                return 2;
        }
        printf("kvmtuned placement benchmark: %d churn steps per topology, fixed seeds\n\n", CHURN_STEPS);
        if (bench_dir(dir) < 0)
                return 1;
        for (unsigned i = 0; i < ELEMENTSOF(small); i++)
                bench_one(TOPO_SOURCE_SYNTHETIC, small[i], small[i], 0x5a11ULL + i, true);
        return 0;
}
