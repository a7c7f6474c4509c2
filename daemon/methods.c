/* The control-socket methods (daemon/ctl.h has the table type and the result
 * shapes). Read-only methods render the daemon's state; Rebalance and Reload
 * (privileged) change it. What a domain reports is what was applied: the
 * cpusets come from the pinset the appliers wrote. */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <time.h>
#include <libvirt/virterror.h>

#include "ctl.h"
#include "daemon.h"
#include "isolate.h"
#include "hugepages.h"
#include "observe.h"
#include "kvmtune/pools.h"
#include "kvmtune/qemuproc.h"
#include "kvmtune/advise.h"
#include "kvmtune/domxml.h"
#include "kvmtune/hook.h"
#include "kvmtune/log.h"
#include "kvmtune/proto.h"
#include "kvmtune/render.h"
#include "kvmtune/util.h"

static void jadd(struct json_object *o, const char *key, struct json_object *v) {
        json_object_object_add(o, key, v);
}

static struct json_object *jstr(const char *s) {
        return s ? json_object_new_string(s) : NULL;
}

/* ---- a domain ------------------------------------------------------------------ */

static struct json_object *methods_vcpus_json(const struct pinset *p) {
        struct json_object *arr = json_object_new_array();

        for (int i = 0; i < p->nvcpu; i++) {
                struct json_object *v = json_object_new_object();
                jadd(v, "vcpu", json_object_new_int(i));
                jadd(v, "cpus", render_bitmap_json(p->vcpu[i]));
                json_object_array_add(arr, v);
        }
        return arr;
}

static struct json_object *methods_iothreads_json(const struct pinset *p) {
        struct json_object *arr = json_object_new_array();

        for (int i = 0; i < p->niothread; i++) {
                struct json_object *v = json_object_new_object();
                jadd(v, "id", json_object_new_int(p->iothread_id[i]));
                jadd(v, "cpus", render_bitmap_json(p->iothread[i]));
                json_object_array_add(arr, v);
        }
        return arr;
}

static struct json_object *methods_numa_json(const struct pinset *p) {
        struct json_object *o = json_object_new_object();
        bool managed = p->mems && p->numa != POLICY_NUMA_NONE;

        jadd(o, "nodes", render_bitmap_json(managed ? p->mems : NULL));
        jadd(o, "mode", jstr(policy_numa_to_string(managed ? p->numa : POLICY_NUMA_NONE)));
        return o;
}

static struct json_object *methods_emulator_json(const struct pinset *p) {
        struct json_object *o = json_object_new_object();

        jadd(o, "cpus", render_bitmap_json(p->emulator));
        return o;
}

static struct json_object *methods_memory_json(const struct domain *dm) {
        struct json_object *o = json_object_new_object();

        jadd(o, "kib", json_object_new_int64((int64_t)dm->memory_kib));
        jadd(o, "page_kib", json_object_new_int64((int64_t)(dm->page_kib ? dm->page_kib : base_page_kib())));
        return o;
}

/* A domain left alone (cpu=none, pinned by hand) has no pins of ours: show
 * what its threads really have, from /proc (vCPUs, iothreads, main thread). */
static void methods_observed_pins(const struct daemon *d, const struct domain *dm, struct pinset *ret) {
        if (qemuproc_read_pins(d->sysfs_root, dm->pid, dm->vcpus, dm->niothread, dm->iothread_ids, ret) < 0)
                *ret = (struct pinset){ .numa = POLICY_NUMA_NONE };
}

static struct json_object *methods_domain_json(const struct daemon *d, const struct domain *dm) {
        struct json_object *o = json_object_new_object();
        struct pinset observed = {};
        const struct pinset *pins = &dm->pins;
        _cleanup_free_ char *conflict = NULL;

        jadd(o, "name", jstr(dm->name));
        jadd(o, "uuid", jstr(dm->uuid));
        jadd(o, "state", jstr(domain_state_to_string(dm->state)));
        if (dm->reason[0])
                jadd(o, "reason", jstr(dm->reason));
        if ((conflict = isolate_conflict(d, dm)))
                jadd(o, "isolation_conflict", jstr(conflict));
        jadd(o, "id", json_object_new_int(dm->libvirt_id));
        jadd(o, "pid", json_object_new_int(dm->pid));
        jadd(o, "policy", dm->policy_known ? render_policy_json(&dm->policy) : NULL);
        if (dm->pins.nvcpu == 0 && dm->state == DOMAIN_IGNORED) {
                methods_observed_pins(d, dm, &observed);
                pins = &observed;
        }
        jadd(o, "vcpus", methods_vcpus_json(pins));
        observe_vcpus_json(d, dm, json_object_object_get(o, "vcpus"));
        jadd(o, "emulator", methods_emulator_json(pins));
        jadd(o, "iothreads", methods_iothreads_json(pins));
        jadd(o, "numa", methods_numa_json(pins));
        jadd(o, "memory", methods_memory_json(dm));
        pinset_done(&observed);
        return o;
}

/* ---- Status -------------------------------------------------------------------- */

static struct json_object *methods_owned_json(const struct daemon *d, bool reserved) {
        struct json_object *arr = json_object_new_array();

        for (int pu = 0; pu < d->topo->npu; pu++) {
                int owner = d->alloc->pu_owner[pu];
                if (reserved ? owner == ALLOC_RESERVED : owner > 0)
                        json_object_array_add(arr, json_object_new_int(d->topo->pus[pu].os));
        }
        return arr;
}

static struct json_object *methods_pools_json(struct daemon *d) {
        struct json_object *o = json_object_new_object();
        hwloc_bitmap_t pool = placement_shared_pool(d->topo, d->alloc, -1);

        jadd(o, "reserved", methods_owned_json(d, true));
        jadd(o, "shared", render_bitmap_json(pool));
        jadd(o, "dedicated", methods_owned_json(d, false));
        hwloc_bitmap_free(pool);
        return o;
}

static struct json_object *methods_counts_json(struct daemon *d) {
        struct json_object *o = json_object_new_object();
        int c[_DOMAIN_STATE_MAX];

        domains_count(d, c);
        for (int s = 0; s < _DOMAIN_STATE_MAX; s++)
                jadd(o, domain_state_to_string(s), json_object_new_int(c[s]));
        return o;
}

static uint64_t methods_uptime_sec(const struct daemon *d) {
        uint64_t now = 0;

        sd_event_now(d->event, CLOCK_MONOTONIC, &now);
        return (now - d->start_usec) / 1000000ULL;
}

static int methods_status(void *userdata, _unused_ struct json_object *params,
                          struct json_object **ret_result, _unused_ char **ret_error) {
        struct daemon *d = userdata;
        struct json_object *o = json_object_new_object(), *lv = json_object_new_object();

        jadd(o, "version", jstr(PACKAGE_VERSION));
        jadd(o, "uptime_sec", json_object_new_int64((int64_t)methods_uptime_sec(d)));
        jadd(lv, "uri", jstr(d->uri));
        jadd(lv, "connected", json_object_new_boolean(d->connected));
        jadd(o, "libvirt", lv);
        jadd(o, "host", jstr(d->topo->description));
        jadd(o, "pools", methods_pools_json(d));
        jadd(o, "domains", methods_counts_json(d));
        jadd(o, "isolation", isolate_status_json(d));
        *ret_result = o;
        return 0;
}

/* ---- List, Show ---------------------------------------------------------------- */

static int methods_list(void *userdata, _unused_ struct json_object *params,
                        struct json_object **ret_result, _unused_ char **ret_error) {
        struct daemon *d = userdata;
        struct json_object *o = json_object_new_object(), *arr = json_object_new_array();

        for (int i = 0; i < d->ndomain; i++)
                json_object_array_add(arr, methods_domain_json(d, d->domains[i]));
        jadd(o, "domains", arr);
        *ret_result = o;
        return 0;
}

static const char *methods_param_string(struct json_object *params, const char *key) {
        struct json_object *v;

        if (!json_object_object_get_ex(params, key, &v) || !json_object_is_type(v, json_type_string))
                return NULL;
        return json_object_get_string(v);
}

static int methods_show(void *userdata, struct json_object *params,
                        struct json_object **ret_result, char **ret_error) {
        struct daemon *d = userdata;
        const char *name = methods_param_string(params, "name");
        struct domain *dm;

        if (!name) {
                *ret_error = xstrdup("Show needs a domain \"name\"");
                return -EINVAL;
        }
        dm = domains_find(d, name);
        if (!dm) {
                *ret_error = xasprintf("no running domain '%s' known to kvmtuned", name);
                return -ENOENT;
        }
        *ret_result = methods_domain_json(d, dm);
        return 0;
}

/* ---- Topology ------------------------------------------------------------------ */

static struct json_object *methods_pu_json(struct daemon *d, int pu) {
        struct json_object *o = json_object_new_object();
        int owner = d->alloc->pu_owner[pu];
        const char *name = NULL;

        for (int i = 0; owner > 0 && i < d->ndomain; i++)
                if (d->domains[i]->id == owner)
                        name = d->domains[i]->name;
        jadd(o, "os", json_object_new_int(d->topo->pus[pu].os));
        jadd(o, "owner", jstr(name));
        jadd(o, "reserved", json_object_new_boolean(owner == ALLOC_RESERVED));
        jadd(o, "idle", json_object_new_boolean(d->alloc->pu_idle[pu]));
        return o;
}

static struct json_object *methods_core_json(struct daemon *d, int core) {
        const struct topo_core *c = &d->topo->cores[core];
        struct json_object *o = json_object_new_object(), *pus = json_object_new_array();

        for (int i = 0; i < c->npu; i++)
                json_object_array_add(pus, methods_pu_json(d, c->first_pu + i));
        jadd(o, "pus", pus);
        return o;
}

static struct json_object *methods_group_json(struct daemon *d, int group) {
        const struct topo_group *g = &d->topo->groups[group];
        struct json_object *o = json_object_new_object(), *cores = json_object_new_array();

        for (int i = 0; i < g->ncore; i++)
                json_object_array_add(cores, methods_core_json(d, g->first_core + i));
        jadd(o, "l3", json_object_new_int(g->l3));
        jadd(o, "cores", cores);
        return o;
}

static int methods_topology(void *userdata, _unused_ struct json_object *params,
                            struct json_object **ret_result, _unused_ char **ret_error) {
        struct daemon *d = userdata;
        struct json_object *o = json_object_new_object(), *nodes = json_object_new_array();

        for (int n = 0; n < d->topo->nnode; n++) {
                const struct topo_node *tn = &d->topo->nodes[n];
                struct json_object *no = json_object_new_object(), *groups = json_object_new_array();

                for (int g = 0; g < tn->ngroup; g++)
                        json_object_array_add(groups, methods_group_json(d, tn->first_group + g));
                jadd(no, "os", json_object_new_int(tn->os));
                jadd(no, "memory_kib", json_object_new_int64((int64_t)tn->memory_kib));
                jadd(no, "groups", groups);
                json_object_array_add(nodes, no);
        }
        jadd(o, "description", jstr(d->topo->description));
        jadd(o, "nodes", nodes);
        *ret_result = o;
        return 0;
}

/* ---- Plan ---------------------------------------------------------------------- */

static const char *methods_hp_root(const struct daemon *d) {
        return pools_daemon_root(d->sysfs_root, d->topology_path);
}

static int methods_param_int(struct json_object *params, const char *key, int64_t def, int64_t *ret) {
        struct json_object *v;

        if (!json_object_object_get_ex(params, key, &v)) {
                *ret = def;
                return 0;
        }
        if (!json_object_is_type(v, json_type_int))
                return -EINVAL;
        *ret = json_object_get_int64(v);
        return *ret < 0 ? -EINVAL : 0;
}

static int methods_plan_policy(struct daemon *d, struct json_object *params, struct policy *ret,
                               char **ret_error) {
        static const char *const keys[] = { "cpu", "threads", "emulator", "iothreads", "numa", "hugepages" };
        const char *name = methods_param_string(params, "name");
        struct policy over;

        conf_policy_for(d->conf, name ? name : "", NULL, ret);
        policy_init_default(&over);
        over.set = 0;
        for (size_t i = 0; i < ELEMENTSOF(keys); i++) {
                const char *v = methods_param_string(params, keys[i]);
                if (v && policy_set(&over, keys[i], v) < 0) {
                        *ret_error = xasprintf("invalid %s value '%s'", keys[i], v);
                        return -EINVAL;
                }
        }
        over.source = POLICY_SOURCE_REQUEST;
        if (over.set)
                policy_merge(ret, &over);
        return 0;
}

static int methods_plan_request(struct daemon *d, struct json_object *params, struct request *req,
                                char **ret_error) {
        int64_t vcpus, mem, io;

        *req = (struct request){};
        if (methods_param_int(params, "vcpus", 0, &vcpus) < 0 || vcpus <= 0 || vcpus > 4096 ||
            methods_param_int(params, "memory_kib", 0, &mem) < 0 ||
            methods_param_int(params, "iothread_count", 0, &io) < 0 || io > 256) {
                *ret_error = xstrdup("Plan needs \"vcpus\" (1-4096), optional \"memory_kib\" and \"iothread_count\" (0-256)");
                return -EINVAL;
        }
        req->vcpus = (int)vcpus;
        req->memory_kib = (uint64_t)mem;
        req->iothreads = (int)io;
        return methods_plan_policy(d, params, &req->policy, ret_error);
}

/* What-if against a copy of the live allocations: nothing is committed. */
static int methods_plan(void *userdata, struct json_object *params,
                        struct json_object **ret_result, char **ret_error) {
        struct daemon *d = userdata;
        struct request req;
        struct plan p = {};
        char reason[PLACEMENT_REASON_MAX] = "";
        struct alloc *a;
        int r;

        r = methods_plan_request(d, params, &req, ret_error);
        if (r < 0)
                return r;
        if (req.policy.page != POLICY_PAGE_NONE)
                pools_refresh(d->topo, d->alloc, methods_hp_root(d), 0);
        a = alloc_dup(d->alloc);
        r = placement_place(d->topo, a, &req, &p, reason);
        if (r < 0) {
                *ret_result = json_object_new_object();
                jadd(*ret_result, "refused", jstr(reason[0] ? reason : strerror(-r)));
        } else {
                alloc_commit(a, d->topo, &p, d->next_id + 1);
                *ret_result = render_domain_json(d->topo, a, &p, &req.policy, NULL);
                if (p.note[0])
                        jadd(*ret_result, "note", jstr(p.note));
        }
        plan_done(&p);
        alloc_free(a);
        return 0;
}

/* ---- Hugepages, Metrics -------------------------------------------------------- */

/* The placed domains holding pages of size s on node n, and how many each. */
static struct json_object *methods_hp_domains_json(struct daemon *d, int n, int s) {
        struct json_object *arr = json_object_new_array();

        for (int i = 0; i < d->ndomain; i++) {
                const struct domain *dm = d->domains[i];
                struct json_object *o;
                uint64_t pages;

                if (!dm->placed || topo_page_index(policy_page_kib(dm->plan.page)) != s || !dm->plan.node_mem_kib)
                        continue;
                pages = dm->plan.node_mem_kib[n] / hugepages_size_kib(s);
                if (pages == 0)
                        continue;
                o = json_object_new_object();
                jadd(o, "name", jstr(dm->name));
                jadd(o, "pages", json_object_new_int64((int64_t)pages));
                json_object_array_add(arr, o);
        }
        return arr;
}

/* free: the pages a new placement can take, not the kernel's free_hugepages:
 * the topology's free count (free_hugepages with the pages committed to placed
 * domains added back, capped at the pool's total: daemon/hugepages.h) minus
 * those committed pages, that is min(free_hugepages, total - committed). */
static struct json_object *methods_hp_node_json(struct daemon *d, int n) {
        struct json_object *o = json_object_new_object(), *pages = json_object_new_array();

        for (int s = 0; s < TOPO_PAGE_SIZES; s++) {
                const struct topo_hpool *hp = &d->topo->nodes[n].hp[s];
                uint64_t held = d->alloc->hp_pages[n][s];
                struct json_object *pg = json_object_new_object();

                jadd(pg, "page_kib", json_object_new_int64((int64_t)hugepages_size_kib(s)));
                jadd(pg, "size", jstr(hugepages_size_name(s)));
                jadd(pg, "total", json_object_new_int64((int64_t)hp->total));
                jadd(pg, "free", json_object_new_int64((int64_t)(hp->free > held ? hp->free - held : 0)));
                jadd(pg, "reserved", json_object_new_int64((int64_t)held));
                jadd(pg, "domains", methods_hp_domains_json(d, n, s));
                json_object_array_add(pages, pg);
        }
        jadd(o, "node", json_object_new_int(d->topo->nodes[n].os));
        jadd(o, "pages", pages);
        return o;
}

static int methods_hugepages(void *userdata, _unused_ struct json_object *params,
                             struct json_object **ret_result, char **ret_error) {
        struct daemon *d = userdata;
        struct json_object *o, *nodes;
        int r = pools_refresh(d->topo, d->alloc, methods_hp_root(d), 0);

        if (r < 0) {
                *ret_error = xasprintf("cannot read the hugepage pools: %s", strerror(-r));
                return r == -EINVAL ? -EIO : r;
        }
        o = json_object_new_object();
        nodes = json_object_new_array();
        for (int n = 0; n < d->topo->nnode; n++)
                json_object_array_add(nodes, methods_hp_node_json(d, n));
        jadd(o, "nodes", nodes);
        *ret_result = o;
        return 0;
}

/* ---- HugepagesReserve (privileged) ---------------------------------------------- */

struct methods_reserve_args {
        int size;
        unsigned node;
        uint64_t count;
};

static int methods_reserve_args(struct daemon *d, struct json_object *params,
                                struct methods_reserve_args *ret, char **ret_error) {
        const char *size = methods_param_string(params, "size");
        const struct topo_node *tn;
        int64_t node, count;

        ret->size = size ? hugepages_size_from_string(size) : -EINVAL;
        if (ret->size < 0 || methods_param_int(params, "node", -1, &node) < 0 || node < 0 ||
            node > 65535 || methods_param_int(params, "count", -1, &count) < 0 || count < 0 ||
            count > (INT64_C(1) << 32)) {
                *ret_error = xstrdup("HugepagesReserve needs \"size\" (\"2M\" or \"1G\"), \"node\" "
                                     "(a NUMA node number) and \"count\" (pages, 0 or more)");
                return -EINVAL;
        }
        if (topo_node_by_os(d->topo, (unsigned)node) < 0) {
                *ret_error = xasprintf("no NUMA node %" PRId64 " on this host", node);
                return -EINVAL;
        }
        /* More pages than the node has memory would only keep the daemon (and
         * every hook waiting on it) busy in the kernel's reclaim and compaction. */
        tn = &d->topo->nodes[topo_node_by_os(d->topo, (unsigned)node)];
        if (tn->memory_kib && (uint64_t)count > tn->memory_kib / hugepages_size_kib(ret->size)) {
                *ret_error = xasprintf("node %" PRId64 " has %" PRIu64 " MiB of memory: at most %" PRIu64
                                       " %s pages", node, tn->memory_kib / 1024,
                                       tn->memory_kib / hugepages_size_kib(ret->size), size);
                return -EINVAL;
        }
        ret->node = (unsigned)node;
        ret->count = (uint64_t)count;
        return 0;
}

static struct json_object *methods_reserve_json(const struct hugepages_result *res) {
        struct json_object *o = json_object_new_object();
        char line[256];

        jadd(o, "node", json_object_new_int((int)res->node_os));
        jadd(o, "size", jstr(hugepages_size_name(res->size)));
        jadd(o, "page_kib", json_object_new_int64((int64_t)hugepages_size_kib(res->size)));
        jadd(o, "requested", json_object_new_int64((int64_t)res->requested));
        jadd(o, "target", json_object_new_int64((int64_t)res->target));
        jadd(o, "in_use", json_object_new_int64((int64_t)res->in_use));
        jadd(o, "before", json_object_new_int64((int64_t)res->before));
        jadd(o, "reserved", json_object_new_int64((int64_t)res->reserved));
        jadd(o, "short", json_object_new_int64((int64_t)(hugepages_result_short(res) ?
                                                          res->target - res->reserved : 0)));
        jadd(o, "clamped", json_object_new_boolean(res->clamped));
        jadd(o, "writes", json_object_new_int(res->writes));
        jadd(o, "compactions", json_object_new_int(res->compactions));
        jadd(o, "message", jstr(hugepages_format_result(res, line, sizeof line)));
        return o;
}

/* What the reservation leaves to do by hand, as the boot-time run says it: a
 * hugetlbfs mount for the size, and when the kernel fell short the command
 * line that reserves the pages at boot. */
static void methods_reserve_advice(const char *root, const struct hugepages_result *res,
                                   struct json_object *o) {
        _cleanup_free_ char *warning = hugepages_reserve_mount_warning(res, root);
        _cleanup_free_ char *note = NULL;
        _cleanup_free_ char *cmdline = hugepages_reserve_cmdline(res, 1, root, &note);

        if (warning) {
                log_warning("Hugepages reserve: %s", warning);
                jadd(o, "warning", jstr(warning));
        }
        if (cmdline)
                jadd(o, "boot_cmdline", jstr(cmdline));
        if (note)
                jadd(o, "boot_note", jstr(note));
}

static int methods_hugepages_reserve(void *userdata, struct json_object *params,
                                     struct json_object **ret_result, char **ret_error) {
        struct daemon *d = userdata;
        const char *root = methods_hp_root(d);
        struct methods_reserve_args a;
        struct hugepages_result res;
        char line[256];
        int r = methods_reserve_args(d, params, &a, ret_error);

        if (r < 0)
                return r;
        if (!root) {
                *ret_error = xstrdup("kvmtuned runs on a --topology file without --sysfs-root: "
                                     "there are no pools to change");
                return -EOPNOTSUPP;
        }
        r = hugepages_set_pool(root, a.node, a.size, a.count, &res);
        hugepages_format_result(&res, line, sizeof line);
        if (r < 0) {
                log_error("Hugepages reserve: %s", line);
                *ret_error = xstrdup(line);
                return r == -ENODEV || r == -EOPNOTSUPP ? -EINVAL : r;
        }
        log_info("Hugepages reserve: %s", line);
        pools_refresh(d->topo, d->alloc, root, 0);
        if (res.reserved > res.before && d->connected)
                domains_retry_unplaced(d);
        *ret_result = methods_reserve_json(&res);
        methods_reserve_advice(root, &res, *ret_result);
        return 0;
}

static int methods_metrics(void *userdata, _unused_ struct json_object *params,
                           struct json_object **ret_result, _unused_ char **ret_error) {
        _cleanup_free_ char *text = metrics_render(userdata);

        *ret_result = json_object_new_object();
        jadd(*ret_result, "text", jstr(text));
        return 0;
}

/* ---- Verify -------------------------------------------------------------------- */

static int methods_verify(void *userdata, _unused_ struct json_object *params,
                          struct json_object **ret_result, _unused_ char **ret_error) {
        struct daemon *d = userdata;
        struct json_object *o = json_object_new_object(), *arr = json_object_new_array();
        int checked = 0, drifted = 0;

        for (int i = 0; i < d->ndomain; i++) {
                struct json_object *v;

                if (!observe_verifiable(d->domains[i]))
                        continue;
                v = observe_verify_json(d, d->domains[i]);
                checked += json_object_get_int(json_object_object_get(v, "checked"));
                drifted += (int)json_object_array_length(json_object_object_get(v, "drift"));
                json_object_array_add(arr, v);
        }
        jadd(o, "domains", arr);
        jadd(o, "checked", json_object_new_int(checked));
        jadd(o, "drifted", json_object_new_int(drifted));
        *ret_result = o;
        return 0;
}

/* ---- Advise, AdviseApply (privileged) ------------------------------------------ */

static inline void methods_domainp(virDomainPtr *dom) { if (*dom) virDomainFree(*dom); }

/* The persistent definition of a domain, as a malloc'd string. */
static int methods_advise_xml(virDomainPtr dom, const char *name, char **ret, char **ret_error) {
        *ret = virDomainGetXMLDesc(dom, VIR_DOMAIN_XML_INACTIVE | VIR_DOMAIN_XML_SECURE);
        if (*ret)
                return 0;
        *ret_error = xasprintf("cannot read the definition of '%s': %s", name, daemon_libvirt_error());
        return -EIO;
}

static int methods_advise_define(struct daemon *d, const char *name, const char *xml, char **ret_error) {
        virDomainPtr dom = virDomainDefineXML(d->conn, xml);

        if (dom) {
                virDomainFree(dom);
                log_info("Advise: applied safe tuning to the definition of %s", name);
                return 0;
        }
        *ret_error = xasprintf("libvirt refused the tuned definition of '%s': %s", name,
                               daemon_libvirt_error());
        return -EIO;
}

/* Audits one domain against the configuration and the host: its own dedicated
 * placement when it has one, else where the engine would put it now. */
static int methods_advise_one(struct daemon *d, virDomainPtr dom, const char *name, bool apply,
                              struct advise_result *ret, char **ret_error) {
        const struct domain *dm = domains_find(d, name);
        struct advise_request req = {
                .conf = d->conf, .apply = apply, .topo = d->topo, .alloc = d->alloc,
                .plan = dm && dm->placed && dm->plan.dedicated ? &dm->plan : NULL,
        };
        _cleanup_free_ char *xml = NULL;
        char err[256] = "";
        int r = methods_advise_xml(dom, name, &xml, ret_error);

        if (r < 0)
                return r;
        r = advise_audit(xml, strlen(xml), &req, ret, err, sizeof err);
        if (r < 0)
                *ret_error = xasprintf("definition of '%s': %s", name, err);
        return r;
}

static int methods_advise_connected(struct daemon *d, char **ret_error) {
        if (d->conn && d->connected)
                return 0;
        *ret_error = xstrdup("libvirt is not connected, retrying in the background");
        return -ENOTCONN;
}

static int methods_advise_run(struct daemon *d, const char *name, bool apply,
                              struct json_object **ret_result, char **ret_error) {
        _cleanup_(methods_domainp) virDomainPtr dom = NULL;
        struct advise_result res;
        int r = methods_advise_connected(d, ret_error);

        if (r < 0)
                return r;
        if (!(dom = virDomainLookupByName(d->conn, name))) {
                *ret_error = xasprintf("no domain '%s' defined in libvirt", name);
                return -ENOENT;
        }
        r = methods_advise_one(d, dom, name, apply, &res, ret_error);
        if (r < 0)
                return r;
        if (apply && res.napplied > 0)
                r = methods_advise_define(d, name, res.xml, ret_error);
        if (r >= 0) {
                *ret_result = render_advise_json(&res);
                if (apply && res.napplied > 0)
                        jadd(*ret_result, "note", jstr("applies at the next guest start"));
        }
        advise_result_done(&res);
        return r < 0 ? r : 0;
}

/* {"domains", "warning", "info", "failed"} summed over the audits. */
static struct json_object *methods_advise_total(struct json_object *arr) {
        int64_t warning = 0, info = 0, failed = 0;
        struct json_object *o = json_object_new_object(), *counts, *v;
        size_t n = json_object_array_length(arr);

        for (size_t i = 0; i < n; i++) {
                if (!json_object_object_get_ex(json_object_array_get_idx(arr, i), "counts", &counts)) {
                        failed++;
                        continue;
                }
                warning += json_object_object_get_ex(counts, "warning", &v) ? json_object_get_int64(v) : 0;
                info += json_object_object_get_ex(counts, "info", &v) ? json_object_get_int64(v) : 0;
        }
        jadd(o, "domains", json_object_new_int64((int64_t) n));
        jadd(o, "warning", json_object_new_int64(warning));
        jadd(o, "info", json_object_new_int64(info));
        jadd(o, "failed", json_object_new_int64(failed));
        return o;
}

/* Every defined domain: its audit, or why it could not be audited. */
static struct json_object *methods_advise_all_json(struct daemon *d, virDomainPtr *doms, int n) {
        struct json_object *arr = json_object_new_array();

        for (int i = 0; i < n; i++) {
                const char *name = virDomainGetName(doms[i]);
                _cleanup_free_ char *error = NULL;
                struct advise_result res;
                struct json_object *o;

                if (methods_advise_one(d, doms[i], name, false, &res, &error) < 0) {
                        o = json_object_new_object();
                        jadd(o, "name", jstr(name));
                        jadd(o, "error", jstr(error));
                } else {
                        o = render_advise_json(&res);
                        advise_result_done(&res);
                }
                json_object_array_add(arr, o);
        }
        return arr;
}

static int methods_advise_all(struct daemon *d, struct json_object **ret_result, char **ret_error) {
        virDomainPtr *doms = NULL;
        int n, r = methods_advise_connected(d, ret_error);

        if (r < 0)
                return r;
        n = virConnectListAllDomains(d->conn, &doms, VIR_CONNECT_LIST_DOMAINS_PERSISTENT);
        if (n < 0) {
                *ret_error = xasprintf("cannot list the domains: %s", daemon_libvirt_error());
                return -EIO;
        }
        *ret_result = json_object_new_object();
        jadd(*ret_result, "domains", methods_advise_all_json(d, doms, n));
        jadd(*ret_result, "total", methods_advise_total(json_object_object_get(*ret_result, "domains")));
        for (int i = 0; i < n; i++)
                virDomainFree(doms[i]);
        free(doms);
        return 0;
}

static int methods_advise(void *userdata, struct json_object *params,
                          struct json_object **ret_result, char **ret_error) {
        const char *name = methods_param_string(params, "name");
        struct json_object *all = NULL;

        if (json_object_object_get_ex(params, "all", &all) && json_object_get_boolean(all))
                return methods_advise_all(userdata, ret_result, ret_error);
        if (!name) {
                *ret_error = xstrdup("Advise needs a domain \"name\" or \"all\": true");
                return -EINVAL;
        }
        return methods_advise_run(userdata, name, false, ret_result, ret_error);
}

static int methods_advise_apply(void *userdata, struct json_object *params,
                                struct json_object **ret_result, char **ret_error) {
        const char *name = methods_param_string(params, "name");

        if (!name) {
                *ret_error = xstrdup("AdviseApply needs a domain \"name\"");
                return -EINVAL;
        }
        return methods_advise_run(userdata, name, true, ret_result, ret_error);
}

/* ---- Rebalance, Reload (privileged) -------------------------------------------- */

static int methods_rebalance(void *userdata, struct json_object *params,
                             struct json_object **ret_result, char **ret_error) {
        struct daemon *d = userdata;
        const char *name = methods_param_string(params, "name");
        struct json_object *arr;
        int r = domains_rebalance(d, name);

        if (r == -ENOENT)
                *ret_error = xasprintf("no running domain '%s' known to kvmtuned", name);
        if (r == -ENOTCONN)
                *ret_error = xstrdup("libvirt is not connected, retrying in the background");
        if (r < 0)
                return r;
        domains_notify_status(d);
        arr = json_object_new_array();
        for (int i = 0; i < d->ndomain; i++) {
                struct json_object *o;
                if (name && !streq(d->domains[i]->name, name))
                        continue;
                o = json_object_new_object();
                jadd(o, "name", jstr(d->domains[i]->name));
                jadd(o, "state", jstr(domain_state_to_string(d->domains[i]->state)));
                json_object_array_add(arr, o);
        }
        *ret_result = json_object_new_object();
        jadd(*ret_result, "domains", arr);
        return 0;
}

/* ---- Isolation -------------------------------------------------------------------- */

static int methods_isolation(void *userdata, _unused_ struct json_object *params,
                             struct json_object **ret_result, _unused_ char **ret_error) {
        *ret_result = isolate_status_json(userdata);
        return 0;
}

static int methods_isolation_set(void *userdata, struct json_object *params,
                                 struct json_object **ret_result, char **ret_error) {
        struct daemon *d = userdata;
        const char *to = methods_param_string(params, "set");

        if (!to || (!streq(to, "on") && !streq(to, "off") && !streq(to, "config")))
                return *ret_error = xstrdup("set: on, off or config"), -EINVAL;
        log_info("Host isolation switched %s by kvmtunectl", to);
        isolate_switch(d, streq(to, "config") ? -1 : streq(to, "on"));
        *ret_result = isolate_status_json(d);
        return 0;
}

static void methods_add_changed(const char *name, void *ud) {
        json_object_array_add(ud, json_object_new_string(name));
}

static int methods_reload(void *userdata, _unused_ struct json_object *params,
                          struct json_object **ret_result, char **ret_error) {
        struct daemon *d = userdata;
        struct json_object *changed = json_object_new_array();
        char err[512] = "";
        int r = reload_config(d, methods_add_changed, changed, err, sizeof err);

        if (r < 0) {
                json_object_put(changed);
                *ret_error = xstrdup(err[0] ? err : strerror(-r));
                return r;
        }
        *ret_result = json_object_new_object();
        jadd(*ret_result, "changed", changed);
        return 0;
}

static const struct ctl_method methods_table[] = {
        { PROTO_METHOD_STATUS, false, methods_status },
        { PROTO_METHOD_LIST, false, methods_list },
        { PROTO_METHOD_SHOW, false, methods_show },
        { PROTO_METHOD_TOPOLOGY, false, methods_topology },
        { PROTO_METHOD_PLAN, false, methods_plan },
        { PROTO_METHOD_HUGEPAGES, false, methods_hugepages },
        { PROTO_METHOD_HUGEPAGES_RESERVE, true, methods_hugepages_reserve },
        { PROTO_METHOD_METRICS, false, methods_metrics },
        { PROTO_METHOD_REBALANCE, true, methods_rebalance },
        { PROTO_METHOD_RELOAD, true, methods_reload },
        { PROTO_METHOD_ADVISE, false, methods_advise },
        { PROTO_METHOD_ADVISE_APPLY, true, methods_advise_apply },
        { PROTO_METHOD_VERIFY, false, methods_verify },
        { PROTO_METHOD_ISOLATION, false, methods_isolation },
        { PROTO_METHOD_ISOLATION_SET, true, methods_isolation_set },
        { HOOK_METHOD, true, hook_method },     /* the libvirt qemu hook (hook.c) */
};
const struct ctl_method *const daemon_methods = methods_table;
const int daemon_nmethods = ELEMENTSOF(methods_table);
