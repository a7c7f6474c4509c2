/* metrics_render: acquires the metrics inputs from the running daemon (the
 * allocations, the hugepage pools, the domain table) and formats them with
 * the pure metrics_format() (metrics.h). */
#include "config.h"

#include <hwloc.h>
#include <stdlib.h>

#include "daemon.h"
#include "kvmtune/pools.h"
#include "kvmtune/log.h"
#include "kvmtune/util.h"
#include "metrics.h"
#include "observe.h"


static void metrics_collect_pus(const struct daemon *d, struct metrics_node *nodes) {
        _cleanup_bitmap_ hwloc_bitmap_t pool = placement_shared_pool(d->topo, d->alloc, -1);

        for (int pu = 0; pu < d->topo->npu; pu++) {
                struct metrics_node *n = &nodes[topo_pu_node(d->topo, pu)];
                int owner = d->alloc->pu_owner[pu];

                n->reserved += owner == ALLOC_RESERVED;
                n->dedicated += owner != ALLOC_RESERVED;
                n->dedicated_used += owner > 0;
                n->shared += pool && hwloc_bitmap_isset(pool, d->topo->pus[pu].os);
        }
}

/* free: the pages a new placement can take, not the kernel's free_hugepages:
 * the topology's free count (free_hugepages with the pages committed to placed
 * domains added back, capped at the pool's total: daemon/hugepages.h) minus
 * those committed pages, that is min(free_hugepages, total - committed). */
static void metrics_collect_hugepages(struct daemon *d, struct metrics_node *nodes) {
        const char *root = pools_daemon_root(d->sysfs_root, d->topology_path);

        if (pools_refresh(d->topo, d->alloc, root, 0) < 0)
                log_debug("metrics: cannot read the hugepage pools, showing the last known counts");
        for (int n = 0; n < d->topo->nnode; n++)
                for (int s = 0; s < TOPO_PAGE_SIZES; s++) {
                        const struct topo_hpool *hp = &d->topo->nodes[n].hp[s];
                        uint64_t held = d->alloc->hp_pages[n][s];

                        nodes[n].hp_total[s] = hp->total;
                        nodes[n].hp_free[s] = hp->free > held ? hp->free - held : 0;
                }
}

static uint64_t metrics_uptime_sec(const struct daemon *d) {
        uint64_t now = now_usec();

        return now > d->start_usec ? (now - d->start_usec) / 1000000ULL : 0;
}

/* Every running vCPU's scheduler counters; *ret (caller frees) has one entry per
 * vCPU thread found. Returns how many. */
static int metrics_collect_vcpus(const struct daemon *d, struct metrics_vcpu **ret) {
        int total = 0, n = 0;
        struct metrics_vcpu *v;

        for (int i = 0; i < d->ndomain; i++)
                total += d->domains[i]->vcpus > 0 ? d->domains[i]->vcpus : 0;
        v = xcalloc(total + 1, sizeof *v);
        for (int i = 0; i < d->ndomain; i++) {
                const struct domain *dm = d->domains[i];
                _cleanup_free_ struct schedstat *st = xcalloc(dm->vcpus + 1, sizeof *st);

                if (dm->vcpus <= 0 || observe_vcpu_stats(d, dm, st) <= 0)
                        continue;
                for (int c = 0; c < dm->vcpus; c++)
                        v[n++] = (struct metrics_vcpu){ .domain = dm->name, .vcpu = c,
                                                        .run_ns = st[c].run_ns, .delay_ns = st[c].delay_ns };
        }
        *ret = v;
        return n;
}

char *metrics_render(struct daemon *d) {
        _cleanup_free_ struct metrics_node *nodes = xcalloc(d->topo->nnode + 1, sizeof *nodes);
        _cleanup_free_ struct metrics_vcpu *vcpus = NULL;
        int nvcpu = metrics_collect_vcpus(d, &vcpus);
        const char *names[_DOMAIN_STATE_MAX];
        int counts[_DOMAIN_STATE_MAX];

        for (int n = 0; n < d->topo->nnode; n++)
                nodes[n].os = d->topo->nodes[n].os;
        metrics_collect_pus(d, nodes);
        metrics_collect_hugepages(d, nodes);
        domains_count(d, counts);
        for (int s = 0; s < _DOMAIN_STATE_MAX; s++)
                names[s] = domain_state_to_string(s);
        return metrics_format(&(struct metrics_input){
                .version = PACKAGE_VERSION, .connected = d->connected,
                .uptime_sec = metrics_uptime_sec(d), .nnode = d->topo->nnode, .nodes = nodes,
                .nstate = _DOMAIN_STATE_MAX, .state_names = names, .state_counts = counts,
                .m = &d->metrics, .nvcpu = nvcpu, .vcpus = vcpus,
        });
}
