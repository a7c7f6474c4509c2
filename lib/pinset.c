/* Resolved cpusets of a domain (see pinset.h). Pure: no system access. */
#include "config.h"

#include "kvmtune/pinset.h"
#include "kvmtune/util.h"

void pinset_init(struct pinset *ret, int nvcpu, int niothread, const int *iothread_ids) {
        *ret = (struct pinset){ .nvcpu = nvcpu, .niothread = niothread, .numa = POLICY_NUMA_NONE };
        ret->vcpu = xcalloc(nvcpu + 1, sizeof *ret->vcpu);
        ret->iothread = xcalloc(niothread + 1, sizeof *ret->iothread);
        ret->iothread_id = xcalloc(niothread + 1, sizeof *ret->iothread_id);
        if (niothread > 0)
                memcpy(ret->iothread_id, iothread_ids, niothread * sizeof(int));
}

void pinset_done(struct pinset *p) {
        for (int i = 0; p->vcpu && i < p->nvcpu; i++)
                hwloc_bitmap_free(p->vcpu[i]);
        for (int i = 0; p->iothread && i < p->niothread; i++)
                hwloc_bitmap_free(p->iothread[i]);
        free(p->vcpu);
        free(p->iothread);
        free(p->iothread_id);
        hwloc_bitmap_free(p->emulator);
        hwloc_bitmap_free(p->mems);
        *p = (struct pinset){};
}

void pinset_fill(struct pinset *p, hwloc_const_bitmap_t cpus) {
        for (int i = 0; i < p->nvcpu; i++) {
                hwloc_bitmap_free(p->vcpu[i]);
                p->vcpu[i] = hwloc_bitmap_dup(cpus);
        }
        for (int i = 0; i < p->niothread; i++) {
                hwloc_bitmap_free(p->iothread[i]);
                p->iothread[i] = hwloc_bitmap_dup(cpus);
        }
        hwloc_bitmap_free(p->emulator);
        p->emulator = hwloc_bitmap_dup(cpus);
}

static bool bitmap_eq(hwloc_const_bitmap_t a, hwloc_const_bitmap_t b) {
        if (!a || !b)
                return a == b;
        return hwloc_bitmap_isequal(a, b);
}

bool pinset_equal(const struct pinset *a, const struct pinset *b) {
        if (a->nvcpu != b->nvcpu || a->niothread != b->niothread || a->numa != b->numa)
                return false;
        for (int i = 0; i < a->nvcpu; i++)
                if (!bitmap_eq(a->vcpu[i], b->vcpu[i]))
                        return false;
        for (int i = 0; i < a->niothread; i++)
                if (a->iothread_id[i] != b->iothread_id[i] || !bitmap_eq(a->iothread[i], b->iothread[i]))
                        return false;
        return bitmap_eq(a->emulator, b->emulator) && bitmap_eq(a->mems, b->mems);
}

static bool usable(hwloc_const_bitmap_t m) {
        return m && !hwloc_bitmap_iszero(m);
}

bool pinset_usable(const struct pinset *p) {
        for (int i = 0; i < p->nvcpu; i++)
                if (!usable(p->vcpu[i]))
                        return false;
        for (int i = 0; i < p->niothread; i++)
                if (!usable(p->iothread[i]))
                        return false;
        return usable(p->emulator);
}

hwloc_bitmap_t pinset_cpus(const struct pinset *p) {
        hwloc_bitmap_t all = p->emulator ? hwloc_bitmap_dup(p->emulator) : hwloc_bitmap_alloc();

        for (int i = 0; i < p->nvcpu; i++)
                if (p->vcpu[i])
                        hwloc_bitmap_or(all, all, p->vcpu[i]);
        for (int i = 0; i < p->niothread; i++)
                if (p->iothread[i])
                        hwloc_bitmap_or(all, all, p->iothread[i]);
        return all;
}

static void resolve_mems(const struct topo *t, const struct plan *pl, struct pinset *p) {
        p->numa = pl->numa;
        if (pl->numa == POLICY_NUMA_NONE || pl->nnode == 0)
                return;
        p->mems = hwloc_bitmap_alloc();
        for (int i = 0; i < pl->nnode; i++)
                hwloc_bitmap_set(p->mems, t->nodes[pl->nodes[i]].os);
}

void pinset_resolve(const struct topo *t, const struct alloc *a, const struct plan *pl, struct pinset *p) {
        _cleanup_bitmap_ hwloc_bitmap_t pool = placement_shared_pool(t, a, -1);

        pinset_fill(p, pool);
        if (!pl)
                return;
        for (int i = 0; i < p->nvcpu && i < pl->nvcpu; i++) {
                hwloc_bitmap_free(p->vcpu[i]);
                p->vcpu[i] = plan_vcpu_cpus(t, a, pl, i);
        }
        for (int i = 0; i < p->niothread && i < pl->niothread; i++) {
                hwloc_bitmap_free(p->iothread[i]);
                p->iothread[i] = plan_resolve(t, a, pl, &pl->iothreads[i]);
        }
        hwloc_bitmap_free(p->emulator);
        p->emulator = plan_resolve(t, a, pl, &pl->emulator);
        resolve_mems(t, pl, p);
}
