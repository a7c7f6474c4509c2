/* Appliers: take a resolved pinset and change the system through libvirt.
 * vCPU, emulator and iothread pins (live or in the persistent definition);
 * NUMA memory through libvirt when it accepts a live change, else through the
 * guest's cgroup cpuset.mems (cgroup.c), then libnuma moves pages already
 * sitting on other nodes; the placement record in the domain's metadata. */
#include "config.h"

#include <errno.h>
#include <numa.h>

#include "affinity.h"
#include "cgroup.h"
#include "daemon.h"
#include "kvmtune/domxml.h"
#include "kvmtune/log.h"
#include "kvmtune/record.h"
#include "kvmtune/util.h"

static unsigned apply_affect(unsigned flags) {
        return (flags & APPLY_LIVE ? VIR_DOMAIN_AFFECT_LIVE : 0) |
               (flags & APPLY_CONFIG ? VIR_DOMAIN_AFFECT_CONFIG : 0);
}

static int apply_fail(char reason[PLACEMENT_REASON_MAX], const char *what) {
        return error_set(reason, PLACEMENT_REASON_MAX, -EIO, "%s: %s", what, daemon_libvirt_error());
}

/* ---- CPU pins through libvirt ------------------------------------------------- */

/* hwloc bitmap of os indexes -> libvirt cpumap bytes (maplen for maxcpus). */
static unsigned char *apply_cpumap(hwloc_const_bitmap_t m, int maxcpus, int *ret_len) {
        int len = VIR_CPU_MAPLEN(maxcpus), cpu;
        unsigned char *map = xcalloc(len, 1);

        hwloc_bitmap_foreach_begin(cpu, m) {
                if (cpu < maxcpus)
                        VIR_USE_CPU(map, cpu);
        } hwloc_bitmap_foreach_end();
        *ret_len = len;
        return map;
}

/* libvirt sizes cpumaps by the host's CPU count; ours may be larger on a
 * simulated topology, in which case libvirt refuses and the domain fails. */
static int apply_maxcpus(struct daemon *d) {
        int n = d->conn ? virNodeGetCPUMap(d->conn, NULL, NULL, 0) : -1;

        return n > 0 ? n : (int)d->topo->max_os;
}

/* Which thread a pin is for: vCPU n (n >= 0), the emulator (-1), iothread id. */
struct pin_target {
        int vcpu;                       /* -1: not a vCPU */
        int iothread;                   /* libvirt id, 0: not an iothread */
};

static int apply_pin_one(virDomainPtr dom, struct pin_target t, hwloc_const_bitmap_t cpus, int maxcpus,
                         unsigned affect, char reason[PLACEMENT_REASON_MAX]) {
        int len, r;
        _cleanup_free_ unsigned char *map = apply_cpumap(cpus, maxcpus, &len);
        char what[64];

        if (t.vcpu >= 0) {
                r = virDomainPinVcpuFlags(dom, t.vcpu, map, len, affect);
                snprintf(what, sizeof what, "pinning vCPU %d failed", t.vcpu);
        } else if (t.iothread > 0) {
                r = virDomainPinIOThread(dom, t.iothread, map, len, affect);
                snprintf(what, sizeof what, "pinning iothread %d failed", t.iothread);
        } else {
                r = virDomainPinEmulator(dom, map, len, affect);
                snprintf(what, sizeof what, "pinning the emulator failed");
        }
        return r < 0 ? apply_fail(reason, what) : 0;
}

static int apply_pin_all(virDomainPtr dom, const struct pinset *p, int maxcpus, unsigned affect,
                         char reason[PLACEMENT_REASON_MAX]) {
        int r = 0;

        for (int i = 0; r >= 0 && i < p->nvcpu; i++)
                r = apply_pin_one(dom, (struct pin_target){ .vcpu = i }, p->vcpu[i], maxcpus, affect, reason);
        if (r >= 0)
                r = apply_pin_one(dom, (struct pin_target){ .vcpu = -1 }, p->emulator, maxcpus, affect, reason);
        for (int i = 0; r >= 0 && i < p->niothread; i++)
                r = apply_pin_one(dom, (struct pin_target){ .vcpu = -1, .iothread = p->iothread_id[i] },
                                  p->iothread[i], maxcpus, affect, reason);
        return r;
}

int apply_pins(struct daemon *d, virDomainPtr dom, const struct domain *dm,
               const struct pinset *p, unsigned flags, char reason[PLACEMENT_REASON_MAX]) {
        int r = apply_pin_all(dom, p, apply_maxcpus(d), apply_affect(flags), reason);

        if (r < 0)
                return dlog(dm, LOG_ERR, "%s, domain marked failed", reason), r;
        if (!(flags & APPLY_LIVE))
                return 0;
        /* libvirt's live emulator pin sets the main thread and the emulator
         * cgroup; QEMU's other helper threads (call_rcu, vnc_worker, the
         * monitor iothread) keep the affinity they had, widening included. */
        if (dm->pid > 0 && (r = affinity_pin_helpers(d->sysfs_root, dm->pid, p->emulator)) < 0)
                log_full(LOG_WARNING, dm->name, dm->uuid, -r, "cannot pin QEMU's helper threads, continuing");
        return 0;
}

/* ---- NUMA memory -------------------------------------------------------------- */

static int apply_numa_libvirt(virDomainPtr dom, const char *mems) {
        virTypedParameter par = {};

        snprintf(par.field, sizeof par.field, "%s", VIR_DOMAIN_NUMA_NODESET);
        par.type = VIR_TYPED_PARAM_STRING;
        par.value.s = (char *)mems;
        return virDomainSetNumaParameters(dom, &par, 1, VIR_DOMAIN_AFFECT_LIVE);
}

/* Pages already elsewhere move to the chosen nodes (a no-op on one node). */
static void apply_migrate_pages(const struct domain *dm, hwloc_const_bitmap_t mems) {
        struct bitmask *from, *to;
        int node;

        if (dm->pid <= 0 || numa_available() < 0 || numa_max_node() == 0)
                return;
        from = numa_allocate_nodemask();
        to = numa_allocate_nodemask();
        for (node = 0; node <= numa_max_node(); node++)
                numa_bitmask_setbit(hwloc_bitmap_isset(mems, node) ? to : from, node);
        if (numa_migrate_pages(dm->pid, from, to) < 0)
                log_full(LOG_WARNING, dm->name, dm->uuid, errno,
                         "moving memory to the chosen nodes failed, continuing");
        numa_free_nodemask(from);
        numa_free_nodemask(to);
}

static int apply_numa_cgroup(struct daemon *d, const struct domain *dm, const struct pinset *p) {
        _cleanup_free_ char *dir = NULL;
        int r = dm->pid > 0 ? cgroup_read_dir(d->sysfs_root, dm->pid, &dir) : -ESRCH;
        struct cgroup cg = { &cgroup_ops_hostfs, (void *)d->sysfs_root, dir };

        return r < 0 ? r : cgroup_apply(&cg, p, CGROUP_MEMS);
}

int apply_numa(struct daemon *d, virDomainPtr dom, const struct domain *dm,
               const struct pinset *p, char reason[PLACEMENT_REASON_MAX]) {
        _cleanup_free_ char *mems = NULL;
        int r;

        /* One node: memory has nowhere else to be (strict still binds the cgroup). */
        if (!p->mems || p->numa == POLICY_NUMA_NONE || (d->topo->nnode < 2 && p->numa != POLICY_NUMA_STRICT))
                return 0;
        hwloc_bitmap_list_asprintf(&mems, p->mems);
        /* preferred: move what is elsewhere once, but bind nothing: libvirt's live
         * nodeset change writes cpuset.mems, a hard binding that would turn a
         * full node into an OOM kill instead of a spill to the next node. */
        if (p->numa == POLICY_NUMA_PREFERRED || apply_numa_libvirt(dom, mems) == 0) {
                apply_migrate_pages(dm, p->mems);
                return 0;
        }
        dlog(dm, LOG_DEBUG, "libvirt refused a live nodeset change (%s), using the cgroup", daemon_libvirt_error());
        r = apply_numa_cgroup(d, dm, p);
        if (r < 0) {
                error_set(reason, PLACEMENT_REASON_MAX, r, "binding memory to nodes %s failed: %s", mems, strerror(-r));
                return dlog(dm, LOG_ERR, "%s, domain marked failed", reason), r;
        }
        apply_migrate_pages(dm, p->mems);
        return 0;
}

/* ---- the record and the persistent definition ---------------------------------- */

int apply_record(virDomainPtr dom, const char *record, unsigned flags) {
        if (virDomainSetMetadata(dom, VIR_DOMAIN_METADATA_ELEMENT, record, record ? RECORD_KEY : NULL,
                                 DOMXML_PLACEMENT_NS, apply_affect(flags)) < 0)
                return -EIO;
        return 0;
}

/* libvirt's qemu hook "started" runs after the vCPUs were resumed
 * (qemuProcessFinishStartup), but the pins of the persistent definition are
 * applied while QEMU's threads are created, before the vCPUs first run, and
 * <numatune> sets the memory policy before QEMU allocates guest memory. So a
 * dedicated placement is written there too: from the next start on the guest
 * never runs a single instruction outside its PUs (when they are still free,
 * the start adopts the record and nothing moves). */
static int apply_config_numa(virDomainPtr dom, const struct pinset *p) {
        _cleanup_free_ char *mems = NULL;
        virTypedParameter par[2] = {};

        /* preferred over several nodes needs libvirt >= 9.3 with preferred-many
         * support, or the next start fails: such a domain gets no <numatune>. */
        if (!p->mems || p->numa == POLICY_NUMA_NONE ||
            (p->numa == POLICY_NUMA_PREFERRED && hwloc_bitmap_weight(p->mems) != 1))
                return 0;
        hwloc_bitmap_list_asprintf(&mems, p->mems);
        snprintf(par[0].field, sizeof par[0].field, "%s", VIR_DOMAIN_NUMA_MODE);
        par[0].type = VIR_TYPED_PARAM_INT;
        par[0].value.i = p->numa == POLICY_NUMA_STRICT ? VIR_DOMAIN_NUMATUNE_MEM_STRICT
                                                       : VIR_DOMAIN_NUMATUNE_MEM_PREFERRED;
        snprintf(par[1].field, sizeof par[1].field, "%s", VIR_DOMAIN_NUMA_NODESET);
        par[1].type = VIR_TYPED_PARAM_STRING;
        par[1].value.s = mems;
        return virDomainSetNumaParameters(dom, par, 2, VIR_DOMAIN_AFFECT_CONFIG);
}

/* Pins and <numatune> into the definition, then the record (NULL: removed). */
static int apply_config(struct daemon *d, virDomainPtr dom, const struct pinset *p,
                        char reason[PLACEMENT_REASON_MAX]) {
        int r = apply_pin_all(dom, p, apply_maxcpus(d), VIR_DOMAIN_AFFECT_CONFIG, reason);

        if (r >= 0 && apply_config_numa(dom, p) < 0)
                r = apply_fail(reason, "numatune");
        return r;
}

int apply_persist(struct daemon *d, virDomainPtr dom, const struct domain *dm, const char *record,
                  const struct pinset *p) {
        char reason[PLACEMENT_REASON_MAX] = "";
        int r;

        /* Several calls, not one atomic change: the record goes first, so a
         * start that catches the definition half written sees our record with
         * pins that do not match it yet and is placed anew, never vCPU pins of
         * ours without the record that says so (which would look hand-made). */
        r = apply_record(dom, record, APPLY_CONFIG) < 0 ? apply_fail(reason, "placement record") : 0;
        if (r >= 0)
                r = apply_config(d, dom, p, reason);
        if (r < 0)
                dlog(dm, LOG_WARNING, "cannot write its placement into the persistent definition (%s); "
                     "its next start is pinned by the hook or the started event instead", reason);
        return r;
}

/* Every CPU and, when our record bound memory, every node: no restriction. */
static void apply_unrestricted(struct daemon *d, const struct domain *dm, const char *rec_xml,
                               struct pinset *ret) {
        _cleanup_bitmap_ hwloc_bitmap_t all = topo_cpuset(d->topo);
        struct record rec;

        pinset_init(ret, dm->vcpus, dm->niothread, dm->iothread_ids);
        pinset_fill(ret, all);
        if (record_parse(d->topo, rec_xml, &rec) < 0)
                return;
        if (rec.dedicated && !rec.foreign && rec.plan.numa != POLICY_NUMA_NONE) {
                ret->numa = POLICY_NUMA_STRICT;
                ret->mems = hwloc_bitmap_alloc();
                for (int i = 0; i < d->topo->nnode; i++)
                        hwloc_bitmap_set(ret->mems, d->topo->nodes[i].os);
        }
        record_done(&rec);
}

/* Takes our pins out of the persistent definition when it holds our record
 * (the domain is no longer placed on dedicated PUs). */
int apply_unpersist(struct daemon *d, virDomainPtr dom, const struct domain *dm) {
        _cleanup_free_ char *rec = NULL;
        char reason[PLACEMENT_REASON_MAX] = "";
        struct pinset p;
        int r;

        rec = virDomainGetMetadata(dom, VIR_DOMAIN_METADATA_ELEMENT, DOMXML_PLACEMENT_NS, VIR_DOMAIN_AFFECT_CONFIG);
        if (!rec)
                return 0;
        apply_unrestricted(d, dm, rec, &p);
        r = apply_config(d, dom, &p, reason);
        if (r >= 0 && apply_record(dom, NULL, APPLY_CONFIG) < 0)
                r = apply_fail(reason, "placement record");
        pinset_done(&p);
        if (r < 0)
                return dlog(dm, LOG_WARNING, "cannot take its old pins out of the persistent definition: %s",
                            reason), r;
        dlog(dm, LOG_INFO, "no longer dedicated: its pins are out of the persistent definition");
        return 0;
}
