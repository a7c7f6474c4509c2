/* Placement benchmark: kvmtuned's engine against a naive first-fit baseline
 * (each vCPU on the lowest free CPU number, as hand-written <vcpupin> scripts
 * do) over the shared topologies and a few small synthetic hosts, with seeded
 * workloads. Prints figures; never passes or fails on time.
 *
 *   bench/placement [TOPOLOGY_DIR]   (default: $TOPOLOGIES, then ../shared/topologies)
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
#define MAXDOM 1024

struct stats {
        double *us;                     /* decision times */
        int nus;
        int placed, one_node;
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

        engine_free_map(e, scratch);
        min = min_groups(e->t, scratch, q->vcpus);
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

        for (int pu = 0; pu < f->t->npu; pu++)
                scratch[pu] = f->owner[pu] == 0;
        min = min_groups(f->t, scratch, q->vcpus);
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
                st->groups += groups_of(f->t, f->pus[id], q->vcpus, (bool *)scratch);
                st->min_groups += min;
        }
        return 0;
}

static void firstfit_remove(struct firstfit *f, int id) {
        for (int i = 0; i < f->npus[id]; i++)
                f->owner[f->pus[id][i]] = 0;
        f->pus[id] = scratch_free_int(f->pus[id]);
}
