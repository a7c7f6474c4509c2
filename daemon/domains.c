/* The domain table: per running domain its facts (acquired from libvirt), its
 * effective policy, its plan (decided by the pure placement engine) and its
 * state, and the calls into the appliers. A failure of one domain is logged
 * with its name and never stops the others. */
#include "config.h"

#include <errno.h>
#include <libvirt/virterror.h>
#include <systemd/sd-daemon.h>

#include "daemon.h"
#include "hugepages.h"
#include "isolate.h"
#include "kvmtune/domxml.h"
#include "kvmtune/hostfs.h"
#include "kvmtune/qemupid.h"
#include "kvmtune/log.h"
#include "kvmtune/util.h"

#define dlog(dm, level, ...) log_full((level), (dm)->name, (dm)->uuid, 0, __VA_ARGS__)

static inline void domxml_freep(struct domxml **x) { domxml_free(*x); }

static const char *const state_names[_DOMAIN_STATE_MAX] = {
        [DOMAIN_TUNED] = "tuned", [DOMAIN_SHARED] = "shared", [DOMAIN_IGNORED] = "ignored",
        [DOMAIN_UNPLACED] = "unplaced", [DOMAIN_FAILED] = "failed",
};

const char *domain_state_to_string(enum domain_state s) {
        return s >= 0 && s < _DOMAIN_STATE_MAX ? state_names[s] : "unknown";
}

struct domain *domains_find(struct daemon *d, const char *name) {
        for (int i = 0; i < d->ndomain; i++)
                if (streq(d->domains[i]->name, name))
                        return d->domains[i];
        return NULL;
}

struct domain *domains_find_uuid(struct daemon *d, const char *uuid) {
        for (int i = 0; i < d->ndomain; i++)
                if (streq(d->domains[i]->uuid, uuid))
                        return d->domains[i];
        return NULL;
}

static struct domain *domain_add(struct daemon *d, const char *name, const char *uuid) {
        struct domain *dm = xcalloc(1, sizeof *dm);

        dm->id = ++d->next_id;
        dm->name = xstrdup(name);
        snprintf(dm->uuid, sizeof dm->uuid, "%s", uuid);
        d->domains = xrealloc(d->domains, (d->ndomain + 1) * sizeof *d->domains);
        d->domains[d->ndomain++] = dm;
        return dm;
}

static void domain_set_state(struct domain *dm, enum domain_state s, const char *reason) {
        dm->state = s;
        snprintf(dm->reason, sizeof dm->reason, "%s", reason ? reason : "");
}

/* ---- holding and releasing PUs ---------------------------------------------- */

static void domain_release_hold(struct daemon *d, struct domain *dm) {
        int cpu;

        if (dm->placed) {
                alloc_release(d->alloc, d->topo, &dm->plan, dm->id);
                plan_done(&dm->plan);
                dm->placed = false;
        }
        if (!dm->hand_cpus)
                return;
        hwloc_bitmap_foreach_begin(cpu, dm->hand_cpus) {
                int pu = topo_pu_by_os(d->topo, cpu);
                if (pu >= 0 && d->alloc->pu_owner[pu] == dm->id)
                        d->alloc->pu_owner[pu] = ALLOC_FREE;
        } hwloc_bitmap_foreach_end();
        hwloc_bitmap_free(dm->hand_cpus);
        dm->hand_cpus = NULL;
}

/* A domain pinned by hand keeps its PUs: nobody else is placed there. */
static void domain_hold_hand(struct daemon *d, struct domain *dm, hwloc_bitmap_t cpus) {
        int cpu;

        hwloc_bitmap_foreach_begin(cpu, cpus) {
                int pu = topo_pu_by_os(d->topo, cpu);
                if (pu >= 0 && d->alloc->pu_owner[pu] == ALLOC_FREE)
                        d->alloc->pu_owner[pu] = dm->id;
        } hwloc_bitmap_foreach_end();
        dm->hand_cpus = cpus;
}

static void domain_free(struct domain *dm) {
        if (dm->placed)
                plan_done(&dm->plan);
        if (dm->hand_cpus)
                hwloc_bitmap_free(dm->hand_cpus);
        pinset_done(&dm->pins);
        free(dm->persisted_record);
        free(dm->iothread_ids);
        free(dm->name);
        free(dm);
}

static void domain_remove(struct daemon *d, struct domain *dm) {
        for (int i = 0; i < d->ndomain; i++)
                if (d->domains[i] == dm) {
                        memmove(d->domains + i, d->domains + i + 1,
                                (d->ndomain - i - 1) * sizeof *d->domains);
                        d->ndomain--;
                        break;
                }
        domain_free(dm);
}

void domains_drop_holds(struct daemon *d) {
        for (int i = 0; i < d->ndomain; i++)
                domain_release_hold(d, d->domains[i]);
}

void domains_free_all(struct daemon *d) {
        for (int i = 0; i < d->ndomain; i++)
                domain_free(d->domains[i]);
        free(d->domains);
        d->domains = NULL;
        d->ndomain = 0;
}

/* ---- acquire ------------------------------------------------------------------ */

static pid_t domain_read_pid(const char *name) {
        pid_t pid = 0;

        return qemupid_read(NULL, QEMUPID_STATE_DIR, name, &pid) < 0 ? 0 : pid;
}

/* The size <hugepages/> without a <page> means: the kernel's default (read
 * once: it is fixed at boot). */
static unsigned long host_default_hugepage_kib(void) {
        static uint64_t kib;

        if (!kib && (hostfs_read_meminfo(NULL, "/proc/meminfo", "Hugepagesize", &kib) < 0 || !kib))
                kib = 2048;
        return (unsigned long)kib;
}

static void domain_facts(struct domain *dm, const struct domxml *x, pid_t pid) {
        dm->libvirt_id = x->id;
        dm->pid = pid;
        dm->vcpus = x->vcpus;
        dm->niothread = x->niothread;
        free(dm->iothread_ids);
        dm->iothread_ids = xcalloc(x->niothread + 1, sizeof(int));
        memcpy(dm->iothread_ids, x->iothread_ids, x->niothread * sizeof(int));
        dm->memory_kib = x->memory_kib;
        dm->page_kib = x->page_kib ? x->page_kib : x->hugepages ? host_default_hugepage_kib() : 0;
}

static int domain_acquire(virDomainPtr dom, struct domain *dm, struct domxml **ret) {
        _cleanup_free_ char *xml = virDomainGetXMLDesc(dom, 0);
        char err[256] = "";
        struct domxml *x = NULL;

        if (!xml) {
                virErrorPtr e = virGetLastError();
                snprintf(dm->reason, sizeof dm->reason, "cannot read the domain XML: %s",
                         e && e->message ? e->message : "unknown error");
                return -EIO;
        }
        if (domxml_parse(xml, strlen(xml), &x, err, sizeof err) < 0) {
                snprintf(dm->reason, sizeof dm->reason, "domain XML: %s", err);
                dm->policy_known = false;       /* an invalid policy is none, not the defaults */
                return -EINVAL;
        }
        domain_facts(dm, x, domain_read_pid(dm->name));
        *ret = x;
        return 0;
}

/* ---- decide ------------------------------------------------------------------- */

static void domain_policy(struct daemon *d, struct domain *dm, const struct domxml *x) {
        conf_policy_for(d->conf, dm->name, x->has_policy ? &x->policy : NULL, &dm->policy);
        dm->policy_known = true;
        /* The page size QEMU really uses wins over any policy key: it is a fact. */
        if (dm->page_kib)
                dm->policy.page = policy_page_of_kib(dm->page_kib);
}

static hwloc_bitmap_t domain_live_vcpu_pins(const struct topo *t, const struct domxml *x,
                                            struct pinset *ret) {
        hwloc_bitmap_t all = hwloc_bitmap_alloc();

        *ret = (struct pinset){ .nvcpu = x->vcpus };
        ret->vcpu = xcalloc(x->vcpus + 1, sizeof *ret->vcpu);
        for (int i = 0; i < x->nvcpupin; i++) {
                int v = x->vcpupin[i].id;
                if (v < 0 || v >= x->vcpus || ret->vcpu[v])
                        continue;
                ret->vcpu[v] = hwloc_bitmap_alloc();
                if (hwloc_bitmap_list_sscanf(ret->vcpu[v], x->vcpupin[i].cpuset) < 0) {
                        hwloc_bitmap_free(ret->vcpu[v]);   /* unreadable: not a pin we know */
                        ret->vcpu[v] = NULL;
                        continue;
                }
                hwloc_bitmap_or(all, all, ret->vcpu[v]);
        }
        return all;
}

/* Every live vCPU pin is the recorded one. A domain whose vCPU count changed
 * since (its definition edited while it was off) still matches on the vCPUs
 * the record knows; a pin on a vCPU the record does not know is not ours. */
static bool domain_pins_match(const struct pinset *live, const struct pinset *rec) {
        for (int i = 0; i < live->nvcpu; i++)
                if (live->vcpu[i] && (i >= rec->nvcpu || !hwloc_bitmap_isequal(live->vcpu[i], rec->vcpu[i])))
                        return false;
        return true;
}

static hwloc_bitmap_t topo_online(const struct topo *t) {
        hwloc_bitmap_t m = hwloc_bitmap_alloc();

        for (int i = 0; i < t->npu; i++)
                hwloc_bitmap_set(m, t->pus[i].os);
        return m;
}

/* Adds a pinned cpuset to 'all' when it is a real restriction (readable, and
 * not every online PU). */
static void hand_pin_add(hwloc_bitmap_t all, const char *cpuset, hwloc_const_bitmap_t online) {
        _cleanup_bitmap_ hwloc_bitmap_t b = hwloc_bitmap_alloc();

        if (!cpuset || hwloc_bitmap_list_sscanf(b, cpuset) < 0 || hwloc_bitmap_iszero(b) ||
            hwloc_bitmap_isincluded(online, b))
                return;
        hwloc_bitmap_or(all, all, b);
}

/* Hand pins: cputune vCPU pins that are a real restriction (not every PU) and
 * do not match our own placement record, and emulator or iothread pins of a
 * domain we hold no record for. Returns their union, or NULL. */
static hwloc_bitmap_t domain_hand_pins(struct daemon *d, const struct domxml *x) {
        struct pinset live, rec = {};
        struct plan p = {};
        bool dedicated;
        hwloc_bitmap_t all = domain_live_vcpu_pins(d->topo, x, &live);
        _cleanup_bitmap_ hwloc_bitmap_t online = topo_online(d->topo);
        bool ours = false;

        if (x->placement && record_parse(d->topo, x->placement, &dedicated, &p, &rec) == 0) {
                ours = domain_pins_match(&live, &rec);
                plan_done(&p);
                pinset_done(&rec);
        }
        pinset_done(&live);
        if (ours) {
                hwloc_bitmap_free(all);
                return NULL;
        }
        if (hwloc_bitmap_isincluded(online, all))
                hwloc_bitmap_zero(all);
        /* An operator's emulator or iothread pin is theirs too. */
        hand_pin_add(all, x->emulatorpin, online);
        for (int i = 0; i < x->niothreadpin; i++)
                hand_pin_add(all, x->iothreadpin[i].cpuset, online);
        if (hwloc_bitmap_iszero(all)) {
                hwloc_bitmap_free(all);
                return NULL;
        }
        return all;
}

static void domain_request(struct daemon *d, const struct domain *dm, const struct domxml *x,
                           struct request *ret) {
        *ret = (struct request){ .vcpus = dm->vcpus, .policy = dm->policy,
                                 .iothreads = dm->niothread, .memory_kib = dm->memory_kib };
        for (int i = 0; i < x->npci && ret->npci_nodes < (int)ELEMENTSOF(ret->pci_nodes); i++)
                for (int j = 0; j < d->topo->npci; j++)
                        if (streq(d->topo->pcis[j].busid, x->pci[i]) && d->topo->pcis[j].node >= 0)
                                ret->pci_nodes[ret->npci_nodes++] = d->topo->pcis[j].node;
}

/* Hugepage pools as they are now (daemon/hugepages.h): the pages placed
 * domains hold, and those this domain's QEMU already holds, count as free for
 * the engine, which subtracts what is committed. */
static void domain_refresh_pools(struct daemon *d, const struct domain *dm) {
        const char *root = hugepages_daemon_root(d->sysfs_root, d->topology_path);
        int r = hugepages_refresh_topo(d->topo, d->alloc, root, dm->pid);
        _cleanup_free_ pid_t *placed = xcalloc(d->ndomain + 1, sizeof *placed);
        int n = 0;

        for (int i = 0; i < d->ndomain; i++)
                if (d->domains[i] != dm && d->domains[i]->placed && d->domains[i]->pid > 0)
                        placed[n++] = d->domains[i]->pid;
        if (r >= 0 && root)
                hugepages_add_back_base(d->topo, root, placed, n);

        if (r < 0)
                dlog(dm, LOG_WARNING, "cannot read the hugepage pools under %s: %s, placing on the last known counts",
                     root ? root : "hwloc", strerror(-r));
}

static int domain_place(struct daemon *d, struct domain *dm, const struct domxml *x) {
        struct request req;
        char reason[PLACEMENT_REASON_MAX] = "";
        int r;

        domain_request(d, dm, x, &req);
        if (req.memory_kib && (req.policy.page != POLICY_PAGE_NONE || req.policy.numa != POLICY_NUMA_NONE))
                domain_refresh_pools(d, dm);
        r = placement_place(d->topo, d->alloc, &req, &dm->plan, reason);
        if (r < 0) {
                metrics_observe_unplaced(&d->metrics);
                domain_set_state(dm, DOMAIN_UNPLACED, reason[0] ? reason : strerror(-r));
                if (dm->policy.cpu != POLICY_CPU_DEDICATED)
                        return dlog(dm, LOG_ERR, "cannot place it on the shared pool: %s", dm->reason), r;
                dlog(dm, LOG_WARNING, "cannot place it (%s): kept on the shared pool; free CPUs or "
                     "memory, or relax its policy, then run 'kvmtunectl rebalance %s'", dm->reason, dm->name);
                return r;
        }
        alloc_commit(d->alloc, d->topo, &dm->plan, dm->id);
        dm->placed = true;
        domain_set_state(dm, dm->plan.dedicated ? DOMAIN_TUNED : DOMAIN_SHARED, dm->plan.note);
        return 0;
}

/* ---- resolve: plan + allocations -> cpusets ----------------------------------- */

static void pinset_alloc(struct pinset *p, const struct domain *dm) {
        *p = (struct pinset){ .nvcpu = dm->vcpus, .niothread = dm->niothread, .numa = POLICY_NUMA_NONE };
        p->vcpu = xcalloc(dm->vcpus + 1, sizeof *p->vcpu);
        p->iothread = xcalloc(dm->niothread + 1, sizeof *p->iothread);
        p->iothread_id = xcalloc(dm->niothread + 1, sizeof *p->iothread_id);
        memcpy(p->iothread_id, dm->iothread_ids, dm->niothread * sizeof(int));
}

static void pinset_resolve_shared(struct daemon *d, const struct domain *dm, struct pinset *p) {
        _cleanup_bitmap_ hwloc_bitmap_t pool = placement_shared_pool(d->topo, d->alloc, -1);

        pinset_alloc(p, dm);
        for (int i = 0; i < p->nvcpu; i++)
                p->vcpu[i] = hwloc_bitmap_dup(pool);
        for (int i = 0; i < p->niothread; i++)
                p->iothread[i] = hwloc_bitmap_dup(pool);
        p->emulator = hwloc_bitmap_dup(pool);
}

static void pinset_resolve_plan(struct daemon *d, const struct domain *dm, struct pinset *p) {
        const struct plan *pl = &dm->plan;
        _cleanup_bitmap_ hwloc_bitmap_t pool = placement_shared_pool(d->topo, d->alloc, -1);

        pinset_alloc(p, dm);
        for (int i = 0; i < p->nvcpu; i++)
                p->vcpu[i] = i < pl->nvcpu ? plan_vcpu_cpus(d->topo, d->alloc, pl, i) : hwloc_bitmap_dup(pool);
        for (int i = 0; i < p->niothread; i++)
                p->iothread[i] = i < pl->niothread ? plan_resolve(d->topo, d->alloc, pl, &pl->iothreads[i])
                                                   : hwloc_bitmap_dup(pool);
        p->emulator = plan_resolve(d->topo, d->alloc, pl, &pl->emulator);
        p->numa = pl->numa;
        if (pl->numa == POLICY_NUMA_NONE || pl->nnode == 0)
                return;
        p->mems = hwloc_bitmap_alloc();
        for (int i = 0; i < pl->nnode; i++)
                hwloc_bitmap_set(p->mems, d->topo->nodes[pl->nodes[i]].os);
}

/* Every cpuset must be non-empty: libvirt would refuse an empty one anyway. */
static bool pinset_usable(const struct pinset *p) {
        for (int i = 0; i < p->nvcpu; i++)
                if (!p->vcpu[i] || hwloc_bitmap_iszero(p->vcpu[i]))
                        return false;
        for (int i = 0; i < p->niothread; i++)
                if (!p->iothread[i] || hwloc_bitmap_iszero(p->iothread[i]))
                        return false;
        return p->emulator && !hwloc_bitmap_iszero(p->emulator);
}

static void domain_resolve(struct daemon *d, const struct domain *dm, struct pinset *ret) {
        if (dm->placed)
                pinset_resolve_plan(d, dm, ret);
        else
                pinset_resolve_shared(d, dm, ret);
}

/* ---- act ---------------------------------------------------------------------- */

/* Applying failed part way: the domain's threads may already run on its
 * dedicated PUs, so it keeps holding them (nobody else gets them as
 * "exclusive") until it stops or is rebalanced. */
static void domain_fail(struct daemon *d, struct domain *dm, const char *reason) {
        domain_set_state(dm, DOMAIN_FAILED, reason);
        if (dm->placed && dm->plan.dedicated)
                dlog(dm, LOG_WARNING, "keeps its dedicated PUs held until it stops or 'kvmtunectl rebalance %s'",
                     dm->name);
}

/* The persistent definition follows: a dedicated placement is written there
 * (libvirt pins the next start before its vCPUs run), anything else takes our
 * old pins out of it. */
static void domain_persist(struct daemon *d, virDomainPtr dom, struct domain *dm) {
        if (!d->conf->persist_placement)
                return;
        if (dm->state == DOMAIN_TUNED && dm->placed && dm->plan.dedicated) {
                /* The record names the dedicated PUs, not the shared pool: a pool
                 * change alone does not rewrite the definition. */
                char *rec = record_format(d->topo, dm);

                if (dm->persisted_record && streq(dm->persisted_record, rec)) {
                        free(rec);
                        return;
                }
                /* Even a failure may have left part of it (the record goes first):
                 * persisted. Not retried until the placement changes. */
                apply_persist(d, dom, dm, &dm->pins);
                dm->persisted = true;
                free(dm->persisted_record);
                dm->persisted_record = rec;
        } else if (dm->persisted && apply_unpersist(d, dom, dm) == 0) {
                dm->persisted = false;
                free(dm->persisted_record);
                dm->persisted_record = NULL;
        }
}

static int domain_apply(struct daemon *d, virDomainPtr dom, struct domain *dm) {
        struct pinset p;
        char reason[PLACEMENT_REASON_MAX] = "";
        int r;

        domain_resolve(d, dm, &p);
        if (!pinset_usable(&p)) {
                pinset_done(&p);
                domain_fail(d, dm, "the shared pool is empty: every PU is reserved or dedicated");
                metrics_observe_apply(&d->metrics, -ENOSPC);
                return dlog(dm, LOG_ERR, "%s, leaving its pins as they are", dm->reason), -ENOSPC;
        }
        r = apply_pins(d, dom, dm, &p, reason);
        metrics_observe_pinned(&d->metrics, dm->uuid, r);
        if (r >= 0)
                r = apply_numa(d, dom, dm, &p, reason);
        metrics_observe_apply(&d->metrics, r);
        if (r < 0) {
                pinset_done(&p);
                domain_fail(d, dm, reason);
                return r;
        }
        pinset_done(&dm->pins);
        dm->pins = p;
        if (record_store(d, dom, dm, VIR_DOMAIN_AFFECT_LIVE) < 0)
                dlog(dm, LOG_WARNING, "cannot store the placement record; a restarted daemon will place it anew");
        domain_persist(d, dom, dm);
        return 0;
}

/* A domain we pinned whose policy became cpu=none floats over every PU again
 * (its old PUs may be dedicated to someone else next), and loses its record. */
static void domain_unpin(struct daemon *d, virDomainPtr dom, struct domain *dm) {
        _cleanup_bitmap_ hwloc_bitmap_t all = topo_online(d->topo);
        struct pinset p;
        char reason[PLACEMENT_REASON_MAX] = "";

        pinset_alloc(&p, dm);
        for (int i = 0; i < p.nvcpu; i++)
                p.vcpu[i] = hwloc_bitmap_dup(all);
        for (int i = 0; i < p.niothread; i++)
                p.iothread[i] = hwloc_bitmap_dup(all);
        p.emulator = hwloc_bitmap_dup(all);
        if (apply_pins(d, dom, dm, &p, reason) >= 0)
                dlog(dm, LOG_INFO, "policy cpu=none: unpinned, it floats over every CPU");
        pinset_done(&p);
        pinset_done(&dm->pins);
        if (virDomainSetMetadata(dom, VIR_DOMAIN_METADATA_ELEMENT, NULL, NULL, DOMXML_PLACEMENT_NS,
                                 VIR_DOMAIN_AFFECT_LIVE) < 0)
                dlog(dm, LOG_WARNING, "cannot remove its placement record");
        domain_persist(d, dom, dm);
}

static void domain_log_result(const struct domain *dm) {
        _cleanup_free_ char *cpus = NULL;
        hwloc_bitmap_t all;

        if (dm->state == DOMAIN_IGNORED || dm->state == DOMAIN_FAILED) {
                dlog(dm, LOG_INFO, "%s: %s", domain_state_to_string(dm->state), dm->reason);
                return;
        }
        all = hwloc_bitmap_alloc();
        for (int i = 0; i < dm->pins.nvcpu; i++)
                hwloc_bitmap_or(all, all, dm->pins.vcpu[i]);
        hwloc_bitmap_list_asprintf(&cpus, all);
        hwloc_bitmap_free(all);
        dlog(dm, LOG_INFO, "%s: %d vCPU%s on CPUs %s%s%s", domain_state_to_string(dm->state),
             dm->vcpus, dm->vcpus == 1 ? "" : "s", cpus ? cpus : "?",
             dm->reason[0] ? ", " : "", dm->reason);
}

/* Domains left alone: cpu=none, or pinned by hand (their PUs count as taken).
 * Returns true when the domain is left alone. */
static bool domain_decide_keep(struct daemon *d, struct domain *dm, const struct domxml *x) {
        hwloc_bitmap_t hand;

        if (dm->policy.cpu == POLICY_CPU_NONE) {
                domain_set_state(dm, DOMAIN_IGNORED, "policy cpu=none");
                return true;
        }
        hand = domain_hand_pins(d, x);
        if (!hand)
                return false;
        domain_hold_hand(d, dm, hand);
        domain_set_state(dm, DOMAIN_IGNORED, "pinned by hand");
        dlog(dm, LOG_NOTICE, "pinned by hand, not overriding it; its PUs count as taken");
        return true;
}

static int domain_adopt_record(struct daemon *d, struct domain *dm, const struct domxml *x, bool fresh);

/* Decides what the domain gets; returns true when pins must be applied. A
 * domain that just started (fresh) with the record of an earlier run in its
 * definition keeps those PUs when they are free and its policy is unchanged:
 * libvirt already pinned it there before its vCPUs ran. */
static bool domain_decide(struct daemon *d, struct domain *dm, const struct domxml *x, bool fresh) {
        domain_policy(d, dm, x);
        /* only a dedicated placement is ever written into the definition */
        dm->persisted = dm->persisted || record_is_dedicated(x->placement);
        if (fresh && domain_adopt_record(d, dm, x, true) > 0) {
                dlog(dm, LOG_INFO, "started on the PUs recorded in its definition, keeping them");
                return true;
        }
        if (domain_decide_keep(d, dm, x))
                return false;
        domain_place(d, dm, x);
        return true;
}

static struct domain *domain_get(struct daemon *d, virDomainPtr dom) {
        char uuid[VIR_UUID_STRING_BUFLEN] = "";
        const char *name = virDomainGetName(dom);
        struct domain *dm;

        if (virDomainGetUUIDString(dom, uuid) < 0 || !name)
                return NULL;
        dm = domains_find_uuid(d, uuid);
        return dm ? dm : domain_add(d, name, uuid);
}

/* A domain that started with our record and pins from its definition (it was
 * dedicated when it last ran): its threads sit on PUs that are no longer held. */
static bool domain_started_on_record(struct daemon *d, const struct domxml *x) {
        struct pinset live, rec = {};
        struct plan p = {};
        bool dedicated, ours = false;

        if (!x->placement || record_parse(d->topo, x->placement, &dedicated, &p, &rec) < 0)
                return false;
        hwloc_bitmap_free(domain_live_vcpu_pins(d->topo, x, &live));
        for (int i = 0; i < live.nvcpu; i++)
                ours = ours || live.vcpu[i];
        ours = ours && domain_pins_match(&live, &rec);
        pinset_done(&live);
        pinset_done(&rec);
        plan_done(&p);
        return ours;
}

int domains_update(struct daemon *d, virDomainPtr dom, bool rescan) {
        _cleanup_(domxml_freep) struct domxml *x = NULL;
        char uuid[VIR_UUID_STRING_BUFLEN] = "";
        bool fresh = !rescan && virDomainGetUUIDString(dom, uuid) == 0 && !domains_find_uuid(d, uuid);
        struct domain *dm = domain_get(d, dom);
        int r;

        if (!dm)
                return log_error("Cannot identify a libvirt domain, skipping it"), -EIO;
        dm->seen = true;
        dm->hooked = false;
        r = domain_acquire(dom, dm, &x);
        if (r < 0) {            /* keeps what it holds: its threads may run there */
                dm->state = DOMAIN_FAILED;
                return dlog(dm, LOG_ERR, "%s, leaving it alone", dm->reason), r;
        }
        domain_release_hold(d, dm);
        if (domain_decide(d, dm, x, fresh)) {
                r = domain_apply(d, dom, dm);
                domains_follow_pool(d);
        } else if (dm->policy.cpu == POLICY_CPU_NONE && (dm->pins.nvcpu > 0 || domain_started_on_record(d, x)))
                domain_unpin(d, dom, dm);
        domain_log_result(dm);
        return r;
}

/* ---- resync: keep what a previous daemon applied ------------------------------ */

static bool place_set_free(struct daemon *d, const struct place_set *s) {
        if (s->kind != PLACE_DEDICATED)
                return true;
        for (int i = 0; i < s->npu; i++)
                if (s->pus[i] < 0 || d->alloc->pu_owner[s->pus[i]] != ALLOC_FREE)
                        return false;
        return true;
}

static bool domain_record_free(struct daemon *d, const struct plan *p) {
        for (int i = 0; i < p->nvcpu; i++)
                if (p->vcpu_pu[i] < 0 || d->alloc->pu_owner[p->vcpu_pu[i]] != ALLOC_FREE)
                        return false;
        for (int i = 0; i < p->nidle; i++)
                if (d->alloc->pu_owner[p->idle_pus[i]] != ALLOC_FREE)
                        return false;
        if (!place_set_free(d, &p->emulator))
                return false;
        for (int i = 0; i < p->niothread; i++)
                if (!place_set_free(d, &p->iothreads[i]))
                        return false;
        return true;
}

/* A dedicated record that matches the live pins and the current policy is
 * committed as it is: the guest does not move. */
static int domain_adopt_record(struct daemon *d, struct domain *dm, const struct domxml *x, bool fresh) {
        struct pinset live, rec;
        struct plan p;
        bool dedicated, match;

        if (!x->placement || dm->policy.cpu != POLICY_CPU_DEDICATED ||
            !record_policy_matches(x->placement, &dm->policy) ||
            record_parse(d->topo, x->placement, &dedicated, &p, &rec) < 0)
                return 0;
        hwloc_bitmap_free(domain_live_vcpu_pins(d->topo, x, &live));
        match = dedicated && domain_pins_match(&live, &rec) && p.nvcpu == dm->vcpus &&
                p.niothread == dm->niothread && (!fresh || p.memory_kib == dm->memory_kib) &&
                domain_record_free(d, &p);
        pinset_done(&live);
        pinset_done(&rec);
        if (!match) {
                plan_done(&p);
                return 0;
        }
        alloc_commit(d->alloc, d->topo, &p, dm->id);
        dm->plan = p;
        dm->placed = true;
        domain_set_state(dm, DOMAIN_TUNED, NULL);
        pinset_done(&dm->pins);
        domain_resolve(d, dm, &dm->pins);
        return 1;
}

/* pass 0: domains that keep what they have (recorded placement, hand pins,
 * cpu=none); pass 1: everything else, placed against what pass 0 took. */
int domains_resync_pass(struct daemon *d, virDomainPtr dom, int pass) {
        _cleanup_(domxml_freep) struct domxml *x = NULL;
        struct domain *dm = domain_get(d, dom);

        if (!dm)
                return -EIO;
        if (pass == 1)
                return dm->seen ? 0 : domains_update(d, dom, true);
        domain_release_hold(d, dm);
        if (domain_acquire(dom, dm, &x) < 0)
                return 0;
        domain_policy(d, dm, x);
        if (domain_adopt_record(d, dm, x, false) > 0) {   /* a balloon may have moved <currentMemory> */
                dm->seen = true;
                dlog(dm, LOG_INFO, "kept its recorded placement");
                return 1;
        }
        if (!domain_decide_keep(d, dm, x))
                return 0;
        dm->seen = true;
        domain_log_result(dm);
        return 1;
}

/* ---- the qemu hook: placed from the XML, before start, without libvirt -------- */

int domains_place_xml(struct daemon *d, const struct domxml *x, pid_t pid, struct domain **ret) {
        struct domain *dm = domains_find_uuid(d, x->uuid);

        if (!dm)
                dm = domain_add(d, x->name, x->uuid);
        *ret = dm;
        dm->seen = true;
        dm->hooked = false;
        domain_release_hold(d, dm);
        domain_facts(dm, x, pid);
        if (!domain_decide(d, dm, x, true)) {
                domain_log_result(dm);
                return 0;
        }
        pinset_done(&dm->pins);
        domain_resolve(d, dm, &dm->pins);
        if (!pinset_usable(&dm->pins)) {
                pinset_done(&dm->pins);
                domain_fail(d, dm, "the shared pool is empty: every PU is reserved or dedicated");
                return dlog(dm, LOG_ERR, "%s, leaving its pins as they are", dm->reason), -ENOSPC;
        }
        dm->hooked = true;
        return 1;
}

int domains_confirm(struct daemon *d, virDomainPtr dom) {
        char uuid[VIR_UUID_STRING_BUFLEN] = "";
        struct domain *dm;
        int r;

        if (virDomainGetUUIDString(dom, uuid) < 0 || !(dm = domains_find_uuid(d, uuid)))
                return 0;
        if (!dm->hooked) {
                /* left alone by the hook: cpu=none on pins of an earlier run */
                if (dm->policy.cpu == POLICY_CPU_NONE && dm->persisted)
                        return domains_update(d, dom, false);
                return 0;
        }
        dm->hooked = false;
        r = domain_apply(d, dom, dm);
        domains_follow_pool(d);
        domain_log_result(dm);
        return r;
}

/* ---- inactive domains: the first start pinned by libvirt too ------------------ */

/* A dedicated domain that is defined (or gets a dedicated policy) while it
 * does not run gets a placement written into its definition, computed against
 * what runs now and held by nobody: libvirt then pins even its first start
 * before the vCPUs run, and the start keeps those PUs when they are still
 * free (domain_decide adopts the record), else places it anew. A definition
 * already carrying our record for the same policy, or pinned by hand, is left
 * as it is; one whose policy is no longer dedicated loses our pins. */
int domains_preplace(struct daemon *d, virDomainPtr dom) {
        _cleanup_(domxml_freep) struct domxml *x = NULL;
        _cleanup_free_ char *xml = NULL;
        char uuid[VIR_UUID_STRING_BUFLEN] = "", reason[PLACEMENT_REASON_MAX] = "";
        const char *name = virDomainGetName(dom);
        struct domain tmp = { .id = ++d->next_id, .name = (char *)(name ? name : "?") };
        struct alloc *real = d->alloc, *dry;
        struct request req;
        hwloc_bitmap_t hand;
        int r;

        if (!d->conf->persist_placement || virDomainIsActive(dom) != 0 || virDomainIsPersistent(dom) != 1 ||
            virDomainGetUUIDString(dom, uuid) < 0)
                return 0;
        snprintf(tmp.uuid, sizeof tmp.uuid, "%s", uuid);
        xml = virDomainGetXMLDesc(dom, VIR_DOMAIN_XML_INACTIVE);
        if (!xml || domxml_parse(xml, strlen(xml), &x, NULL, 0) < 0)
                return -EIO;
        domain_facts(&tmp, x, 0);
        domain_policy(d, &tmp, x);
        if (tmp.policy.cpu != POLICY_CPU_DEDICATED) {
                r = x->placement && domain_started_on_record(d, x) ? apply_unpersist(d, dom, &tmp) : 0;
                free(tmp.iothread_ids);
                return r;
        }
        hand = domain_hand_pins(d, x);
        if (hand || (x->placement && record_policy_matches(x->placement, &tmp.policy) &&
                     domain_started_on_record(d, x))) {
                if (hand)
                        hwloc_bitmap_free(hand);
                free(tmp.iothread_ids);
                return 0;
        }
        domain_request(d, &tmp, x, &req);
        r = placement_place(d->topo, d->alloc, &req, &tmp.plan, reason);
        if (r < 0) {
                dlog(&tmp, LOG_INFO, "not running; no room to pre-place it now (%s): its start is placed by the hook",
                     reason);
                free(tmp.iothread_ids);
                return 0;
        }
        tmp.placed = true;
        tmp.state = DOMAIN_TUNED;
        dry = alloc_dup(real);
        alloc_commit(dry, d->topo, &tmp.plan, tmp.id);
        d->alloc = dry;
        domain_resolve(d, &tmp, &tmp.pins);
        d->alloc = real;
        alloc_free(dry);
        r = pinset_usable(&tmp.pins) ? apply_persist(d, dom, &tmp, &tmp.pins) : -ENOSPC;
        if (r == 0)
                dlog(&tmp, LOG_INFO, "not running: its definition now pins its next start (PUs free now, not held)");
        pinset_done(&tmp.pins);
        plan_done(&tmp.plan);
        free(tmp.iothread_ids);
        return r;
}

/* ---- events from outside ------------------------------------------------------ */

void domains_retry_unplaced(struct daemon *d) {
        for (int i = 0; i < d->ndomain; i++) {
                struct domain *dm = d->domains[i];
                virDomainPtr dom;

                if (dm->state != DOMAIN_UNPLACED || !(dom = watch_lookup(d, dm->uuid)))
                        continue;
                if (virDomainIsActive(dom) != 1) {
                        virDomainFree(dom);
                        continue;
                }
                dlog(dm, LOG_INFO, "PUs were released, trying to place it again");
                domains_update(d, dom, false);
                virDomainFree(dom);
        }
}

bool domains_forget(struct daemon *d, const char *uuid) {
        struct domain *dm = domains_find_uuid(d, uuid);
        bool held;

        if (!dm)
                return false;
        /* hugepages committed count too: an unplaced domain may fit now */
        held = (dm->placed && (dm->plan.dedicated || dm->plan.page != POLICY_PAGE_NONE)) || dm->hand_cpus;
        domain_release_hold(d, dm);
        domain_remove(d, dm);
        return held;
}

void domains_release(struct daemon *d, const char *uuid, bool undefined) {
        struct domain *dm = domains_find_uuid(d, uuid);
        bool held;

        if (!dm)
                return;
        dlog(dm, LOG_INFO, "%s, releasing what it holds", undefined ? "undefined" : "stopped");
        held = domains_forget(d, uuid);
        if (!held)
                return;
        domains_retry_unplaced(d);
        domains_follow_pool(d);
}

static void domain_follow(struct daemon *d, struct domain *dm) {
        struct pinset p;
        virDomainPtr dom;

        if (!dm->policy_known ||        /* not decided yet, or its definition unreadable */
            (dm->state != DOMAIN_SHARED && dm->state != DOMAIN_UNPLACED && dm->state != DOMAIN_TUNED))
                return;
        if (dm->hooked)                 /* its started event applies the current pool */
                return;
        domain_resolve(d, dm, &p);
        if (!pinset_usable(&p) || pinset_equal(&p, &dm->pins)) {
                pinset_done(&p);
                return;
        }
        pinset_done(&p);
        dom = watch_lookup(d, dm->uuid);
        if (!dom)
                return;
        dlog(dm, LOG_INFO, "the shared pool changed, following it");
        domain_apply(d, dom, dm);
        virDomainFree(dom);
}

void domains_follow_pool(struct daemon *d) {
        for (int i = 0; i < d->ndomain; i++)
                domain_follow(d, d->domains[i]);
        isolate_update(d);              /* the dedicated PUs may have changed */
}

int domains_rebalance(struct daemon *d, const char *name) {
        int n = 0;

        if (!d->connected)
                return -ENOTCONN;
        /* Two passes, as a resync: domains left alone (hand pins hold their
         * PUs) first, then the others are placed around them. */
        _cleanup_free_ bool *alone = xcalloc(d->ndomain + 1, sizeof *alone);
        int ndomain = d->ndomain;

        for (int i = 0; i < ndomain; i++) {
                alone[i] = d->domains[i]->state == DOMAIN_IGNORED;
                /* everything is placed anew: free the PUs first, so hand pins
                 * held again in pass 0 get theirs back */
                if (!name && !alone[i])
                        domain_release_hold(d, d->domains[i]);
        }
        for (int pass = 0; pass < 2; pass++)
                for (int i = 0; i < ndomain && i < d->ndomain; i++) {
                        struct domain *dm = d->domains[i];
                        virDomainPtr dom;

                        if ((name && !streq(dm->name, name)) || alone[i] != (pass == 0))
                                continue;
                        dom = watch_lookup(d, dm->uuid);
                        if (!dom)
                                continue;
                        domains_update(d, dom, false);
                        virDomainFree(dom);
                        n++;
                }
        return name && n == 0 ? -ENOENT : n;
}

static bool policy_same(const struct policy *a, const struct policy *b);

int domains_policy_event(struct daemon *d, virDomainPtr dom) {
        _cleanup_(domxml_freep) struct domxml *x = NULL;
        _cleanup_free_ char *xml = NULL;
        char uuid[VIR_UUID_STRING_BUFLEN] = "";
        struct domain *dm;
        struct policy old;

        if (virDomainGetUUIDString(dom, uuid) < 0 || !(dm = domains_find_uuid(d, uuid)))
                return domains_update(d, dom, false);
        old = dm->policy;
        xml = virDomainGetXMLDesc(dom, 0);
        if (!xml || domxml_parse(xml, strlen(xml), &x, NULL, 0) < 0)
                return domains_update(d, dom, false);
        domain_policy(d, dm, x);
        if (policy_same(&old, &dm->policy)) {
                dlog(dm, LOG_DEBUG, "policy metadata changed, the effective policy did not: nothing to do");
                return 0;
        }
        dlog(dm, LOG_INFO, "policy changed, re-placing");
        return domains_update(d, dom, false);
}

static bool policy_same(const struct policy *a, const struct policy *b) {
        return a->cpu == b->cpu && a->threads == b->threads && a->emulator == b->emulator &&
               a->iothreads == b->iothreads && a->numa == b->numa && a->page == b->page &&
               a->source == b->source;
}

/* The metadata policy is re-read with the domain's XML: only the config changed. */
int domains_reevaluate(struct daemon *d, void (*changed)(const char *name, void *ud), void *ud) {
        int n = 0;

        for (int i = 0; i < d->ndomain; i++) {
                struct domain *dm = d->domains[i];
                _cleanup_(domxml_freep) struct domxml *x = NULL;
                _cleanup_free_ char *xml = NULL;
                struct policy old = dm->policy;
                virDomainPtr dom = watch_lookup(d, dm->uuid);

                if (!dom)
                        continue;
                xml = virDomainGetXMLDesc(dom, 0);
                if (xml && domxml_parse(xml, strlen(xml), &x, NULL, 0) == 0) {
                        domain_policy(d, dm, x);
                        if (!policy_same(&old, &dm->policy)) {
                                dlog(dm, LOG_INFO, "policy changed by the new configuration, re-placing");
                                if (changed)
                                        changed(dm->name, ud);
                                domains_update(d, dom, false);
                                n++;
                        }
                }
                virDomainFree(dom);
        }
        return n;
}

void domains_count(struct daemon *d, int counts[_DOMAIN_STATE_MAX]) {
        memset(counts, 0, sizeof(int) * _DOMAIN_STATE_MAX);
        for (int i = 0; i < d->ndomain; i++)
                counts[d->domains[i]->state]++;
}

void domains_notify_status(struct daemon *d) {
        int c[_DOMAIN_STATE_MAX];

        domains_count(d, c);
        sd_notifyf(0, "STATUS=%d domain%s tuned, %d shared, %d unplaced, %d failed%s",
                   c[DOMAIN_TUNED], c[DOMAIN_TUNED] == 1 ? "" : "s", c[DOMAIN_SHARED],
                   c[DOMAIN_UNPLACED], c[DOMAIN_FAILED], d->connected ? "" : " (libvirt disconnected)");
}
