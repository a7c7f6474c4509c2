/* The running daemon's view of node memory and hugepage pools (pools.h). */
#include "config.h"

#include "kvmtune/pools.h"
#include "kvmtune/qemuproc.h"
#include "kvmtune/util.h"

static void add_back_pages(struct topo *t, uint64_t (*held)[TOPO_PAGE_SIZES]) {
        for (int n = 0; n < t->nnode; n++)
                for (int s = 0; s < TOPO_PAGE_SIZES; s++) {
                        struct topo_hpool *hp = &t->nodes[n].hp[s];
                        uint64_t free = hp->free + held[n][s];

                        hp->free = free < hp->total ? free : hp->total;
                }
}

void pools_add_back_memory(struct topo *t, const uint64_t *held_kib) {
        for (int n = 0; n < t->nnode; n++)
                if (t->nodes[n].avail_known)
                        t->nodes[n].avail_kib += held_kib[n];
}

int pools_refresh(struct topo *t, const struct alloc *a, const char *root, pid_t self_pid) {
        _cleanup_free_ uint64_t (*held)[TOPO_PAGE_SIZES] = NULL;
        _cleanup_free_ uint64_t *base = NULL;
        int r = topo_refresh_memory(t, root);

        if (r < 0 || !root)
                return r;
        held = xcalloc((size_t)t->nnode, sizeof *held);
        base = xcalloc((size_t)t->nnode, sizeof *base);
        for (int n = 0; a && n < t->nnode && n < a->nnode; n++)
                for (int s = 0; s < TOPO_PAGE_SIZES; s++)
                        held[n][s] += a->hp_pages[n][s];
        if (self_pid > 0)
                qemuproc_read_numa_maps(root, self_pid, t, held, base);
        add_back_pages(t, held);
        /* What the domain being placed already uses is its own, not taken. */
        pools_add_back_memory(t, base);
        return 0;
}
