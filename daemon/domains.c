/* The domain table and the lifecycle of one domain, top-down: acquire its
 * facts (the definition and the placement record, each parsed once, and the
 * QEMU pid), decide (decide_domain() and the placement engine, both pure),
 * apply (apply.c) and record. A failure of one domain is logged with its name
 * and never stops the others. */
#include "config.h"

#include <errno.h>
#include <systemd/sd-daemon.h>

#include "daemon.h"
#include "isolate.h"
#include "kvmtune/decide.h"
#include "kvmtune/domxml.h"
#include "kvmtune/hostfs.h"
#include "kvmtune/qemupid.h"
#include "kvmtune/log.h"
#include "kvmtune/pools.h"
#include "kvmtune/qemuproc.h"
#include "kvmtune/record.h"
#include "kvmtune/util.h"

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


/* A domain's libvirt handle, NULL when libvirt is not connected or it is gone. */
static virDomainPtr domain_lookup(struct daemon *d, const char *uuid) {
        if (!d->conn || !d->connected)
                return NULL;
        return virDomainLookupByUUIDString(d->conn, uuid);
}

/* ---- holding and releasing PUs ---------------------------------------------- */

static void domain_release_hold(struct daemon *d, struct domain *dm) {
        if (dm->placed) {
                alloc_release(d->alloc, d->topo, &dm->plan, dm->id);
                plan_done(&dm->plan);
                dm->placed = false;
        }
        if (!dm->hand_cpus)
                return;
        decide_release_cpus(d->alloc, d->topo, dm->hand_cpus, dm->id);
        hwloc_bitmap_free(dm->hand_cpus);
        dm->hand_cpus = NULL;
}

/* A domain pinned by hand keeps its PUs: nobody else is placed there. */
static void domain_hold_hand(struct daemon *d, struct domain *dm, hwloc_bitmap_t cpus) {
        decide_hold_cpus(d->alloc, d->topo, cpus, dm->id);
        dm->hand_cpus = cpus;
}

static void domain_free(struct domain *dm) {
        if (dm->placed)
                plan_done(&dm->plan);
        hwloc_bitmap_free(dm->hand_cpus);
        pinset_done(&dm->pins);
        free(dm->persisted_record);
        free(dm->held_base_kib);
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

/* What one update knows of a domain, each read and parsed once. */
struct facts {
        const struct domxml *xml;
        struct domxml *owned;           /* xml, when read here */
        bool has_record;
        struct record record;           /* its placement record, when readable */
        bool has_threads;
        struct pinset threads;          /* where its vCPU threads run (/proc), read when
                                         * it has a dedicated record to check */
        pid_t pid;
        unsigned long page_kib;         /* the page size QEMU uses, 0 base pages */
};

static void facts_done(struct facts *f) {
        domxml_free(f->owned);
        if (f->has_record)
                record_done(&f->record);
        if (f->has_threads)
                pinset_done(&f->threads);
        *f = (struct facts){};
}

static const struct record *facts_record(const struct facts *f) {
        return f->has_record ? &f->record : NULL;
}

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

/* Facts from a parsed definition (borrowed: the hook's, or owned by f). */
static void facts_from_xml(struct daemon *d, const struct domxml *x, pid_t pid, struct facts *ret) {
        *ret = (struct facts){ .xml = x, .pid = pid };
        ret->has_record = x->placement && record_parse(d->topo, x->placement, &ret->record) == 0;
        /* a record is adopted only where the threads really run */
        ret->has_threads = ret->has_record && ret->record.dedicated &&
                qemuproc_read_pins(d->sysfs_root, pid, x->vcpus, x->niothread, x->iothread_ids,
                                   &ret->threads) == 0;
        ret->page_kib = x->page_kib ? x->page_kib : x->hugepages ? host_default_hugepage_kib() : 0;
}

/* Reads the definition (flags: 0 live, VIR_DOMAIN_XML_INACTIVE) and, for a
 * running domain, its QEMU pid. On failure reason says why. */
static int domain_acquire(struct daemon *d, virDomainPtr dom, unsigned flags, char reason[PLACEMENT_REASON_MAX],
                          struct facts *ret) {
        _cleanup_free_ char *xml = virDomainGetXMLDesc(dom, flags);
        char err[256] = "";
        struct domxml *x = NULL;

        if (!xml)
                return error_set(reason, PLACEMENT_REASON_MAX, -EIO, "cannot read the domain XML: %s",
                                 daemon_libvirt_error());
        if (domxml_parse(xml, strlen(xml), &x, err, sizeof err) < 0)
                return error_set(reason, PLACEMENT_REASON_MAX, -EINVAL, "domain XML: %s", err);
        facts_from_xml(d, x, flags & VIR_DOMAIN_XML_INACTIVE ? 0 : domain_read_pid(x->name), ret);
        ret->owned = x;
        return 0;
}

static void domain_set_facts(struct domain *dm, const struct facts *f) {
        const struct domxml *x = f->xml;

        dm->libvirt_id = x->id;
        dm->pid = f->pid;
        dm->vcpus = x->vcpus;
        dm->niothread = x->niothread;
        free(dm->iothread_ids);
        dm->iothread_ids = xcalloc(x->niothread + 1, sizeof(int));
        memcpy(dm->iothread_ids, x->iothread_ids, x->niothread * sizeof(int));
        dm->memory_kib = x->memory_kib;
        dm->page_kib = f->page_kib;
}

/* ---- decide ------------------------------------------------------------------- */

static void domain_decide(struct daemon *d, struct domain *dm, const struct facts *f, enum decide_when when,
                          struct decision *ret) {
        struct decide_facts df = { .xml = f->xml, .record = facts_record(f), .when = when,
                                   .pinned = dm->pins.nvcpu > 0,
                                   .threads = f->has_threads ? &f->threads : NULL };

        decide_policy(d->conf, f->xml, f->page_kib, &dm->policy);
        dm->policy_known = true;
        df.policy = dm->policy;
        decide_domain(d->topo, d->alloc, &df, ret);
        dlog(dm, LOG_DEBUG, "decided: %s", decide_action_to_string(ret->action));
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

void domains_batch_begin(struct daemon *d) {
        d->pools_gen++;
        d->pools_batch = true;
}

void domains_batch_end(struct daemon *d) {
        d->pools_batch = false;
}

/* Base memory a placed domain's QEMU holds per node: read once per batch. */
static const uint64_t *domain_held_base(struct daemon *d, struct domain *dm, const char *root) {
        if (dm->held_base_kib && d->pools_batch && dm->held_gen == d->pools_gen)
                return dm->held_base_kib;
        free(dm->held_base_kib);
        dm->held_base_kib = xcalloc((size_t)d->topo->nnode + 1, sizeof *dm->held_base_kib);
        qemuproc_read_numa_maps(root, dm->pid, d->topo, NULL, dm->held_base_kib);
        dm->held_gen = d->pools_gen;
        return dm->held_base_kib;
}

/* Hugepage pools and node memory as they are now (pools.h): the pages placed
 * domains hold, and what this domain's QEMU already holds, count as free for
 * the engine, which subtracts what is committed. */
static void domain_refresh_pools(struct daemon *d, const struct domain *dm) {
        const char *root = pools_daemon_root(d->sysfs_root, d->topology_path);
        int r = pools_refresh(d->topo, d->alloc, root, dm->pid);

        for (int i = 0; r >= 0 && root && i < d->ndomain; i++)
                if (d->domains[i] != dm && d->domains[i]->placed && d->domains[i]->pid > 0)
                        pools_add_back_memory(d->topo, domain_held_base(d, d->domains[i], root));
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

/* plan (when placed) + allocations -> the cpusets to apply. */
static void domain_resolve(struct daemon *d, const struct domain *dm, const struct alloc *a,
                           struct pinset *ret) {
        pinset_init(ret, dm->vcpus, dm->niothread, dm->iothread_ids);
        pinset_resolve(d->topo, a, dm->placed ? &dm->plan : NULL, ret);
}

/* The recorded placement is committed as it is: the guest does not move. */
static void domain_adopt(struct daemon *d, struct domain *dm, struct facts *f) {
        dm->plan = f->record.plan;
        f->record.plan = (struct plan){};
        alloc_commit(d->alloc, d->topo, &dm->plan, dm->id);
        dm->placed = true;
        domain_set_state(dm, DOMAIN_TUNED, NULL);
        pinset_done(&dm->pins);
        domain_resolve(d, dm, d->alloc, &dm->pins);
}

/* Takes what the decision gives the domain: its holds and its state.
 * Returns true when pins must be applied. */
static bool domain_take(struct daemon *d, struct domain *dm, struct facts *f, struct decision *dec) {
        switch (dec->action) {
        case DECIDE_ADOPT:
                domain_adopt(d, dm, f);
                return true;
        case DECIDE_HAND_PINS:
                domain_hold_hand(d, dm, dec->hand_cpus);
                dec->hand_cpus = NULL;
                domain_set_state(dm, DOMAIN_IGNORED, "pinned by hand");
                dlog(dm, LOG_NOTICE, "pinned by hand, not overriding it; its PUs count as taken");
                return false;
        case DECIDE_IGNORE:
        case DECIDE_UNPIN:
                domain_set_state(dm, DOMAIN_IGNORED, "policy cpu=none");
                return false;
        case DECIDE_PLACE:
        default:
                domain_place(d, dm, f->xml);
                return true;
        }
}

/* ---- apply and record --------------------------------------------------------- */

/* Applying failed part way: the domain's threads may already run on its
 * dedicated PUs, so it keeps holding them (nobody else gets them as
 * "exclusive") until it stops or is rebalanced. */
static void domain_fail(struct domain *dm, const char *reason) {
        domain_set_state(dm, DOMAIN_FAILED, reason);
        if (dm->placed && dm->plan.dedicated)
                dlog(dm, LOG_WARNING, "keeps its dedicated PUs held until it stops or 'kvmtunectl rebalance %s'",
                     dm->name);
}

static bool domain_dedicated(const struct domain *dm) {
        return dm->state == DOMAIN_TUNED && dm->placed && dm->plan.dedicated;
}

static char *domain_format_record(struct daemon *d, const struct domain *dm) {
        return record_format(d->topo, dm->placed && dm->plan.dedicated ? &dm->plan : NULL, &dm->pins,
                             &dm->policy);
}

/* The persistent definition follows: a dedicated placement is written there
 * (libvirt pins the next start before its vCPUs run), anything else takes our
 * old pins out of it. */
static void domain_persist(struct daemon *d, virDomainPtr dom, struct domain *dm) {
        char *rec;

        if (!d->conf->persist_placement)
                return;
        if (!domain_dedicated(dm)) {
                if (dm->persisted && (virDomainIsPersistent(dom) != 1 || apply_unpersist(d, dom, dm) == 0)) {
                        dm->persisted = false;
                        free(dm->persisted_record);
                        dm->persisted_record = NULL;
                }
                return;
        }
        /* The record names the dedicated PUs, not the shared pool: a pool
         * change alone does not rewrite the definition. */
        rec = domain_format_record(d, dm);
        if (dm->persisted_record && streq(dm->persisted_record, rec)) {
                free(rec);
                return;
        }
        /* Even a failure may have left part of it (the record goes first):
         * persisted. Not retried until the placement changes; a transient
         * domain, without a definition to write, is remembered the same way. */
        if (virDomainIsPersistent(dom) == 1)
                apply_persist(d, dom, dm, rec, &dm->pins);
        dm->persisted = true;
        free(dm->persisted_record);
        dm->persisted_record = rec;
}

static int domain_apply(struct daemon *d, virDomainPtr dom, struct domain *dm) {
        _cleanup_free_ char *rec = NULL;
        struct pinset p;
        char reason[PLACEMENT_REASON_MAX] = "";
        int r;

        domain_resolve(d, dm, d->alloc, &p);
        if (!pinset_usable(&p)) {
                pinset_done(&p);
                domain_fail(dm, "the shared pool is empty: every PU is reserved or dedicated");
                metrics_observe_apply(&d->metrics, -ENOSPC);
                return dlog(dm, LOG_ERR, "%s, leaving its pins as they are", dm->reason), -ENOSPC;
        }
        r = apply_pins(d, dom, dm, &p, APPLY_LIVE, reason);
        metrics_observe_pinned(&d->metrics, dm->uuid, r);
        if (r >= 0)
                r = apply_numa(d, dom, dm, &p, reason);
        metrics_observe_apply(&d->metrics, r);
        if (r < 0) {
                pinset_done(&p);
                domain_fail(dm, reason);
                return r;
        }
        pinset_done(&dm->pins);
        dm->pins = p;
        rec = domain_format_record(d, dm);
        if (apply_record(dom, rec, APPLY_LIVE) < 0)
                dlog(dm, LOG_WARNING, "cannot store the placement record; a restarted daemon will place it anew");
        domain_persist(d, dom, dm);
        return 0;
}

/* A domain we pinned whose policy became cpu=none floats over every PU again
 * (its old PUs may be dedicated to someone else next), and loses its record. */
static void domain_unpin(struct daemon *d, virDomainPtr dom, struct domain *dm) {
        _cleanup_bitmap_ hwloc_bitmap_t all = topo_cpuset(d->topo);
        struct pinset p;
        char reason[PLACEMENT_REASON_MAX] = "";

        pinset_init(&p, dm->vcpus, dm->niothread, dm->iothread_ids);
        pinset_fill(&p, all);
        if (apply_pins(d, dom, dm, &p, APPLY_LIVE, reason) >= 0)
                dlog(dm, LOG_INFO, "policy cpu=none: unpinned, it floats over every CPU");
        pinset_done(&p);
        pinset_done(&dm->pins);
        if (apply_record(dom, NULL, APPLY_LIVE) < 0)
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
        all = pinset_cpus(&(struct pinset){ .nvcpu = dm->pins.nvcpu, .vcpu = dm->pins.vcpu });
        hwloc_bitmap_list_asprintf(&cpus, all);
        hwloc_bitmap_free(all);
        dlog(dm, LOG_INFO, "%s: %d vCPU%s on CPUs %s%s%s", domain_state_to_string(dm->state),
             dm->vcpus, dm->vcpus == 1 ? "" : "s", cpus ? cpus : "?",
             dm->reason[0] ? ", " : "", dm->reason);
}

/* ---- the lifecycle of one domain ---------------------------------------------- */

static struct domain *domain_get(struct daemon *d, virDomainPtr dom) {
        char uuid[VIR_UUID_STRING_BUFLEN] = "";
        const char *name = virDomainGetName(dom);
        struct domain *dm;

        if (virDomainGetUUIDString(dom, uuid) < 0 || !name)
                return NULL;
        dm = domains_find_uuid(d, uuid);
        return dm ? dm : domain_add(d, name, uuid);
}

/* Takes the facts already read, releases what the domain held, decides and
 * takes the decision (holds, state). Returns true when pins must be applied.
 * A domain that just started (DECIDE_START) with the record of an earlier
 * run in its definition keeps those PUs when they are free and its policy is
 * unchanged: libvirt already pinned it there before its vCPUs ran. */
static bool domain_settle(struct daemon *d, struct domain *dm, struct facts *f, enum decide_when when,
                          enum decide_action *ret_action) {
        struct decision dec;
        bool apply;

        dm->seen = true;
        dm->hooked = false;
        domain_set_facts(dm, f);
        domain_release_hold(d, dm);
        domain_decide(d, dm, f, when, &dec);
        /* only a dedicated placement is ever written into the definition */
        dm->persisted = dm->persisted || (f->has_record && f->record.dedicated);
        if (dec.action == DECIDE_ADOPT)
                dlog(dm, LOG_INFO, "started on the PUs recorded in its definition, keeping them");
        apply = domain_take(d, dm, f, &dec);
        *ret_action = dec.action;
        decision_done(&dec);
        return apply;
}

static int domain_update(struct daemon *d, virDomainPtr dom, struct domain *dm, struct facts *f,
                         enum decide_when when) {
        enum decide_action action;
        int r = 0;

        if (domain_settle(d, dm, f, when, &action)) {
                r = domain_apply(d, dom, dm);
                domains_follow_pool(d);
        } else if (action == DECIDE_UNPIN)
                domain_unpin(d, dom, dm);
        domain_log_result(dm);
        return r;
}

int domains_update(struct daemon *d, virDomainPtr dom, bool rescan) {
        char uuid[VIR_UUID_STRING_BUFLEN] = "";
        bool fresh = !rescan && virDomainGetUUIDString(dom, uuid) == 0 && !domains_find_uuid(d, uuid);
        struct domain *dm = domain_get(d, dom);
        struct facts f;
        int r;

        if (!dm)
                return log_error("Cannot identify a libvirt domain, skipping it"), -EIO;
        r = domain_acquire(d, dom, 0, dm->reason, &f);
        if (r < 0) {            /* keeps what it holds: its threads may run there */
                dm->policy_known = dm->policy_known && r != -EINVAL;   /* an invalid policy is none */
                dm->seen = true;
                dm->hooked = false;
                dm->state = DOMAIN_FAILED;
                return dlog(dm, LOG_ERR, "%s, leaving it alone", dm->reason), r;
        }
        r = domain_update(d, dom, dm, &f, fresh ? DECIDE_START : DECIDE_UPDATE);
        facts_done(&f);
        return r;
}

/* ---- resync: keep what a previous daemon applied ------------------------------ */

/* A domain this daemon already tracks as running, in the same QEMU, with the
 * same vCPUs and policy: libvirt went away, the daemon did not, so its table
 * is the truth (the hook's placements made meanwhile too), not the record in
 * the live XML, which libvirt copied from the definition at start. */
static bool resync_tracked(struct daemon *d, const struct domain *dm, const struct facts *f) {
        struct policy now;

        if (!dm->policy_known || dm->state == DOMAIN_FAILED || dm->pid <= 0 || dm->pid != f->pid ||
            dm->vcpus != f->xml->vcpus)
                return false;
        decide_policy(d->conf, f->xml, f->page_kib, &now);
        return policy_equal(&now, &dm->policy);
}

/* Keeps a tracked domain as it is; one the hook placed while libvirt was
 * away lost its started event: its placement is applied through libvirt now
 * (pins, record), as domains_confirm() would have. */
static void resync_keep(struct daemon *d, virDomainPtr dom, struct domain *dm) {
        dm->seen = true;
        if (dm->hooked) {
                dm->hooked = false;
                domain_apply(d, dom, dm);
        }
        dlog(dm, LOG_INFO, "kept its placement across the libvirt reconnect");
        domain_log_result(dm);
}

/* pass 0: domains that keep what they have (tracked as running, recorded
 * placement, hand pins, cpu=none); pass 1: everything else, placed against
 * what pass 0 took. */
int domains_resync_pass(struct daemon *d, virDomainPtr dom, int pass) {
        struct domain *dm = domain_get(d, dom);
        struct decision dec;
        struct facts f;
        bool kept;
        int r;

        if (!dm)
                return -EIO;
        if (pass == 1)
                return dm->seen ? 0 : domains_update(d, dom, true);
        r = domain_acquire(d, dom, 0, dm->reason, &f);
        if (r < 0) {
                domain_release_hold(d, dm);
                dm->policy_known = dm->policy_known && r != -EINVAL;   /* an invalid policy is none */
                return 0;
        }
        if (resync_tracked(d, dm, &f)) {
                resync_keep(d, dom, dm);
                facts_done(&f);
                return 1;
        }
        domain_release_hold(d, dm);
        domain_set_facts(dm, &f);
        domain_decide(d, dm, &f, DECIDE_RESYNC, &dec);
        kept = dec.action != DECIDE_PLACE;
        if (kept) {
                domain_take(d, dm, &f, &dec);
                dm->seen = true;
                if (dec.action == DECIDE_ADOPT)        /* a balloon may have moved <currentMemory> */
                        dlog(dm, LOG_INFO, "kept its recorded placement");
                else
                        domain_log_result(dm);
        }
        decision_done(&dec);
        facts_done(&f);
        return kept;
}

/* ---- the qemu hook: placed from the XML, before start, without libvirt -------- */

int domains_place_xml(struct daemon *d, const struct domxml *x, pid_t pid, struct domain **ret) {
        struct domain *dm = domains_find_uuid(d, x->uuid);
        enum decide_action action;
        struct facts f;
        bool apply;

        if (!dm)
                dm = domain_add(d, x->name, x->uuid);
        *ret = dm;
        facts_from_xml(d, x, pid, &f);
        apply = domain_settle(d, dm, &f, DECIDE_START, &action);
        facts_done(&f);
        if (!apply) {
                domain_log_result(dm);
                return 0;
        }
        pinset_done(&dm->pins);
        domain_resolve(d, dm, d->alloc, &dm->pins);
        if (!pinset_usable(&dm->pins)) {
                pinset_done(&dm->pins);
                domain_fail(dm, "the shared pool is empty: every PU is reserved or dedicated");
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

/* Whether an inactive domain's definition is to be left as it is: pinned by
 * hand, or carrying our record for this policy with its pins. */
static bool preplace_keep(struct daemon *d, const struct facts *f, const struct policy *p) {
        hwloc_bitmap_t hand = decide_hand_pins(d->topo, f->xml, facts_record(f));

        if (hand) {
                hwloc_bitmap_free(hand);
                return true;
        }
        return f->has_record && !f->record.foreign && record_policy_matches(&f->record, p) &&
               decide_pinned_by_record(f->xml, &f->record);
}

/* Places tmp against what runs now into a dry copy of the allocations: its
 * PUs are not held. Then writes it into the definition. */
static int preplace_write(struct daemon *d, virDomainPtr dom, struct domain *tmp, const struct domxml *x) {
        _cleanup_free_ char *rec = NULL;
        char reason[PLACEMENT_REASON_MAX] = "";
        struct alloc *dry;
        struct request req;
        int r;

        domain_request(d, tmp, x, &req);
        r = placement_place(d->topo, d->alloc, &req, &tmp->plan, reason);
        if (r < 0)
                return dlog(tmp, LOG_INFO, "not running; no room to pre-place it now (%s): its start is placed "
                            "by the hook", reason), 0;
        tmp->placed = true;
        tmp->state = DOMAIN_TUNED;
        dry = alloc_dup(d->alloc);
        alloc_commit(dry, d->topo, &tmp->plan, tmp->id);
        domain_resolve(d, tmp, dry, &tmp->pins);
        alloc_free(dry);
        rec = domain_format_record(d, tmp);
        r = pinset_usable(&tmp->pins) ? apply_persist(d, dom, tmp, rec, &tmp->pins) : -ENOSPC;
        if (r == 0)
                dlog(tmp, LOG_INFO, "not running: its definition now pins its next start (PUs free now, not held)");
        pinset_done(&tmp->pins);
        plan_done(&tmp->plan);
        return r;
}

/* A dedicated domain that is defined (or gets a dedicated policy) while it
 * does not run gets a placement written into its definition, computed against
 * what runs now and held by nobody: libvirt then pins even its first start
 * before the vCPUs run, and the start keeps those PUs when they are still
 * free (decide_domain adopts the record), else places it anew. A definition
 * already carrying our record for the same policy, or pinned by hand, is left
 * as it is; one whose policy is no longer dedicated loses our pins. */
int domains_preplace(struct daemon *d, virDomainPtr dom) {
        char uuid[VIR_UUID_STRING_BUFLEN] = "", reason[PLACEMENT_REASON_MAX] = "";
        const char *name = virDomainGetName(dom);
        struct domain tmp = { .id = ++d->next_id, .name = (char *)(name ? name : "?") };
        struct facts f;
        int r;

        if (!d->conf->persist_placement || virDomainIsActive(dom) != 0 || virDomainIsPersistent(dom) != 1 ||
            virDomainGetUUIDString(dom, uuid) < 0)
                return 0;
        snprintf(tmp.uuid, sizeof tmp.uuid, "%s", uuid);
        if (domain_acquire(d, dom, VIR_DOMAIN_XML_INACTIVE, reason, &f) < 0)
                return -EIO;
        domain_set_facts(&tmp, &f);
        decide_policy(d->conf, f.xml, f.page_kib, &tmp.policy);
        if (tmp.policy.cpu != POLICY_CPU_DEDICATED)
                r = decide_pinned_by_record(f.xml, facts_record(&f)) ? apply_unpersist(d, dom, &tmp) : 0;
        else
                r = preplace_keep(d, &f, &tmp.policy) ? 0 : preplace_write(d, dom, &tmp, f.xml);
        facts_done(&f);
        free(tmp.iothread_ids);
        return r;
}

/* ---- events from outside ------------------------------------------------------ */

void domains_retry_unplaced(struct daemon *d) {
        for (int i = 0; i < d->ndomain; i++) {
                struct domain *dm = d->domains[i];
                virDomainPtr dom;

                if (dm->state != DOMAIN_UNPLACED || !(dom = domain_lookup(d, dm->uuid)))
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
        domain_resolve(d, dm, d->alloc, &p);
        if (!pinset_usable(&p) || pinset_equal(&p, &dm->pins)) {
                pinset_done(&p);
                return;
        }
        pinset_done(&p);
        dom = domain_lookup(d, dm->uuid);
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

static int domains_rebalance_passes(struct daemon *d, const char *name) {
        /* Two passes, as a resync: domains left alone (hand pins hold their
         * PUs) first, then the others are placed around them. */
        _cleanup_free_ bool *alone = xcalloc(d->ndomain + 1, sizeof *alone);
        int ndomain = d->ndomain, n = 0;

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
                        dom = domain_lookup(d, dm->uuid);
                        if (!dom)
                                continue;
                        domains_update(d, dom, false);
                        virDomainFree(dom);
                        n++;
                }
        return n;
}

int domains_rebalance(struct daemon *d, const char *name) {
        int n;

        if (!d->connected)
                return -ENOTCONN;
        domains_batch_begin(d);
        n = domains_rebalance_passes(d, name);
        domains_batch_end(d);
        return name && n == 0 ? -ENOENT : n;
}

/* ---- policy changes -------------------------------------------------------------- */

/* Reads the domain once; when its effective policy changed, re-places it with
 * what was read. Returns 1 when re-placed, 0 when the policy is the same,
 * negative errno when the domain cannot be read. */
static int domain_policy_changed(struct daemon *d, virDomainPtr dom, struct domain *dm, const char *why) {
        struct policy now;
        struct facts f;

        if (domain_acquire(d, dom, 0, dm->reason, &f) < 0)
                return -EIO;
        decide_policy(d->conf, f.xml, dm->page_kib, &now);
        if (policy_equal(&now, &dm->policy)) {
                dm->policy = now;
                dm->policy_known = true;
                facts_done(&f);
                return 0;
        }
        dlog(dm, LOG_INFO, "%s, re-placing", why);
        domain_update(d, dom, dm, &f, DECIDE_UPDATE);
        facts_done(&f);
        return 1;
}

int domains_policy_event(struct daemon *d, virDomainPtr dom) {
        char uuid[VIR_UUID_STRING_BUFLEN] = "";
        struct domain *dm;
        int r;

        if (virDomainGetUUIDString(dom, uuid) < 0 || !(dm = domains_find_uuid(d, uuid)))
                return domains_update(d, dom, false);
        r = domain_policy_changed(d, dom, dm, "policy changed");
        if (r < 0)
                return domains_update(d, dom, false);
        if (r == 0)
                dlog(dm, LOG_DEBUG, "policy metadata changed, the effective policy did not: nothing to do");
        return 0;
}

/* The metadata policy is re-read with the domain's XML: only the config changed. */
int domains_reevaluate(struct daemon *d, void (*changed)(const char *name, void *ud), void *ud) {
        int n = 0;

        for (int i = 0; i < d->ndomain; i++) {
                struct domain *dm = d->domains[i];
                virDomainPtr dom = domain_lookup(d, dm->uuid);

                if (!dom)
                        continue;
                if (domain_policy_changed(d, dom, dm, "policy changed by the new configuration") > 0) {
                        if (changed)
                                changed(dm->name, ud);
                        n++;
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
