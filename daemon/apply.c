/* Appliers: take a resolved pinset and change the system. vCPU, emulator and
 * iothread pins go through libvirt (live); NUMA memory through libvirt when it
 * accepts a live change, else through the guest's cgroup cpuset.mems, then
 * libnuma moves pages already sitting on other nodes. */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <numa.h>
#include <stdarg.h>
#include <libvirt/virterror.h>

#include "daemon.h"
#include "qemuproc.h"
#include "kvmtune/domxml.h"
#include "kvmtune/hostfs.h"
#include "kvmtune/log.h"
#include "kvmtune/util.h"

/* ---- pinset helpers ----------------------------------------------------------- */

void pinset_done(struct pinset *p) {
        for (int i = 0; i < p->nvcpu; i++)
                hwloc_bitmap_free(p->vcpu[i]);
        for (int i = 0; i < p->niothread; i++)
                hwloc_bitmap_free(p->iothread[i]);
        free(p->vcpu);
        free(p->iothread);
        free(p->iothread_id);
        hwloc_bitmap_free(p->emulator);
        hwloc_bitmap_free(p->mems);
        *p = (struct pinset){};
}

static bool bitmap_eq(hwloc_const_bitmap_t a, hwloc_const_bitmap_t b) {
        if (!a || !b)
                return a == b;
        return hwloc_bitmap_isequal(a, b);
}

static hwloc_bitmap_t bitmap_dup(hwloc_const_bitmap_t a) {
        return a ? hwloc_bitmap_dup(a) : NULL;
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

void pinset_copy(struct pinset *dst, const struct pinset *src) {
        *dst = (struct pinset){ .nvcpu = src->nvcpu, .niothread = src->niothread, .numa = src->numa };
        dst->vcpu = xcalloc(src->nvcpu + 1, sizeof *dst->vcpu);
        for (int i = 0; i < src->nvcpu; i++)
                dst->vcpu[i] = bitmap_dup(src->vcpu[i]);
        dst->iothread = xcalloc(src->niothread + 1, sizeof *dst->iothread);
        dst->iothread_id = xcalloc(src->niothread + 1, sizeof *dst->iothread_id);
        for (int i = 0; i < src->niothread; i++) {
                dst->iothread[i] = bitmap_dup(src->iothread[i]);
                dst->iothread_id[i] = src->iothread_id[i];
        }
        dst->emulator = bitmap_dup(src->emulator);
        dst->mems = bitmap_dup(src->mems);
}

/* ---- CPU pins through libvirt ------------------------------------------------- */

static const char *apply_libvirt_error(void) {
        virErrorPtr e = virGetLastError();

        return e && e->message ? e->message : "unknown libvirt error";
}

static _printf_(2, 3) int apply_fail(char reason[PLACEMENT_REASON_MAX], const char *fmt, ...) {
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(reason, PLACEMENT_REASON_MAX, fmt, ap);
        va_end(ap);
        return -EIO;
}

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

static int apply_vcpus(virDomainPtr dom, const struct pinset *p, int maxcpus,
                       char reason[PLACEMENT_REASON_MAX]) {
        for (int i = 0; i < p->nvcpu; i++) {
                int len;
                _cleanup_free_ unsigned char *map = apply_cpumap(p->vcpu[i], maxcpus, &len);

                if (virDomainPinVcpuFlags(dom, i, map, len, VIR_DOMAIN_AFFECT_LIVE) < 0)
                        return apply_fail(reason, "pinning vCPU %d failed: %s", i, apply_libvirt_error());
        }
        return 0;
}

static int apply_helpers(virDomainPtr dom, const struct pinset *p, int maxcpus,
                         char reason[PLACEMENT_REASON_MAX]) {
        int len;
        _cleanup_free_ unsigned char *map = apply_cpumap(p->emulator, maxcpus, &len);

        if (virDomainPinEmulator(dom, map, len, VIR_DOMAIN_AFFECT_LIVE) < 0)
                return apply_fail(reason, "pinning the emulator failed: %s", apply_libvirt_error());
        for (int i = 0; i < p->niothread; i++) {
                _cleanup_free_ unsigned char *iomap = apply_cpumap(p->iothread[i], maxcpus, &len);

                if (virDomainPinIOThread(dom, p->iothread_id[i], iomap, len, VIR_DOMAIN_AFFECT_LIVE) < 0)
                        return apply_fail(reason, "pinning iothread %d failed: %s", p->iothread_id[i],
                                          apply_libvirt_error());
        }
        return 0;
}

/* libvirt sizes cpumaps by the host's CPU count; ours may be larger on a
 * simulated topology, in which case libvirt refuses and the domain fails. */
static int apply_maxcpus(struct daemon *d) {
        int n = d->conn ? virNodeGetCPUMap(d->conn, NULL, NULL, 0) : -1;

        return n > 0 ? n : (int)d->topo->max_os;
}

int apply_pins(struct daemon *d, virDomainPtr dom, const struct domain *dm,
               const struct pinset *p, char reason[PLACEMENT_REASON_MAX]) {
        int maxcpus = apply_maxcpus(d), r;

        r = apply_vcpus(dom, p, maxcpus, reason);
        if (r >= 0)
                r = apply_helpers(dom, p, maxcpus, reason);
        if (r < 0) {
                log_full(LOG_ERR, dm->name, dm->uuid, 0, "%s, domain marked failed", reason);
                return r;
        }
        /* libvirt's live emulator pin sets the main thread and the emulator
         * cgroup; QEMU's other helper threads (call_rcu, vnc_worker, the
         * monitor iothread) keep the affinity they had, widening included. */
        if (dm->pid > 0 && (r = qemuproc_pin_helpers(d->sysfs_root, dm->pid, p->emulator)) < 0)
                log_full(LOG_WARNING, dm->name, dm->uuid, -r, "cannot pin QEMU's helper threads, continuing");
        return 0;
}

/* ---- NUMA memory -------------------------------------------------------------- */

/* "3:cpuset:/machine/qemu-1-x.libvirt-qemu/emulator" (v1) or
 * "0::/machine.slice/machine-qemu\x2d1\x2dx.scope/libvirt/emulator" (v2) ->
 * the mounted directory of the domain's cgroup (the emulator's parent). */
static char *apply_cgroup_from_line(const char *line, bool v1) {
        const char *path = strchr(line, ':');
        char *dir, *slash;

        path = path ? strchr(path + 1, ':') : NULL;
        if (!path)
                return NULL;
        dir = xasprintf("%s%s", v1 ? "/sys/fs/cgroup/cpuset" : "/sys/fs/cgroup", path + 1);
        dir[strcspn(dir, "\n")] = '\0';
        slash = strrchr(dir, '/');
        if (slash && streq(slash, "/emulator"))
                *slash = '\0';
        return dir;
}

int apply_cgroup_dir(const char *sysfs_root, pid_t pid, char **ret) {
        _cleanup_free_ char *path = xasprintf("/proc/%d/cgroup", (int)pid), *text = NULL;
        char *v2 = NULL, *dir = NULL, *save = NULL;
        int r = hostfs_read(sysfs_root, path, &text);

        if (r < 0)
                return r;
        for (char *l = strtok_r(text, "\n", &save); l && !dir; l = strtok_r(NULL, "\n", &save)) {
                const char *c = strchr(l, ':');

                if (c && strncmp(c, ":cpuset:", 8) == 0)
                        dir = apply_cgroup_from_line(l, true);
                else if (strncmp(l, "0::", 3) == 0 && !v2)
                        v2 = apply_cgroup_from_line(l, false);
        }
        if (!dir)
                dir = v2, v2 = NULL;
        free(v2);
        if (!dir)
                return -ENOENT;
        *ret = dir;
        return 0;
}

static int apply_mems_write(const char *root, const char *dir, const char *mems) {
        _cleanup_free_ char *path = xasprintf("%s/cpuset.mems", dir);

        return hostfs_write(root, path, mems);
}

/* Children (vcpuN, emulator, iothreadN) must stay inside the parent: widen the
 * parent first, narrow the children, then narrow the parent. */
int apply_mems_set(const char *root, const char *dir, const char *mems) {
        _cleanup_free_ char *full = hostfs_path(root, dir), *old = NULL, *path = NULL, *wide = NULL;
        DIR *dh;
        struct dirent *e;
        int r = 0;

        path = xasprintf("%s/cpuset.mems", dir);
        if (hostfs_read(root, path, &old) < 0)
                return -ENOENT;
        old[strcspn(old, "\n")] = '\0';
        wide = xasprintf("%s%s%s", old, *old ? "," : "", mems);
        apply_mems_write(root, dir, wide);
        dh = opendir(full);
        if (!dh)
                return -errno;
        while ((e = readdir(dh)) && r >= 0)
                if (e->d_type == DT_DIR && e->d_name[0] != '.') {
                        _cleanup_free_ char *child = xasprintf("%s/%s", dir, e->d_name);
                        r = apply_mems_write(root, child, mems);
                }
        closedir(dh);
        if (r >= 0)
                r = apply_mems_write(root, dir, mems);
        return r;
}

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

int apply_numa(struct daemon *d, virDomainPtr dom, const struct domain *dm,
               const struct pinset *p, char reason[PLACEMENT_REASON_MAX]) {
        _cleanup_free_ char *mems = NULL, *dir = NULL;
        int r;

        /* One node: memory has nowhere else to be (strict still binds the cgroup). */
        if (!p->mems || p->numa == POLICY_NUMA_NONE || (d->topo->nnode < 2 && p->numa != POLICY_NUMA_STRICT))
                return 0;
        hwloc_bitmap_list_asprintf(&mems, p->mems);
        /* preferred: move what is elsewhere once, but bind nothing: libvirt's live
         * nodeset change writes cpuset.mems, a hard binding that would turn a
         * full node into an OOM kill instead of a spill to the next node. */
        if (p->numa == POLICY_NUMA_PREFERRED) {
                apply_migrate_pages(dm, p->mems);
                return 0;
        }
        if (apply_numa_libvirt(dom, mems) == 0) {
                apply_migrate_pages(dm, p->mems);
                return 0;
        }
        log_full(LOG_DEBUG, dm->name, dm->uuid, 0, "libvirt refused a live nodeset change (%s), using the cgroup",
                 apply_libvirt_error());
        r = dm->pid > 0 ? apply_cgroup_dir(d->sysfs_root, dm->pid, &dir) : -ESRCH;
        if (r >= 0)
                r = apply_mems_set(d->sysfs_root, dir, mems);
        if (r < 0) {
                snprintf(reason, PLACEMENT_REASON_MAX, "binding memory to nodes %s failed: %s",
                         mems, strerror(-r));
                return log_full(LOG_ERR, dm->name, dm->uuid, 0, "%s, domain marked failed", reason), r;
        }
        apply_migrate_pages(dm, p->mems);
        return 0;
}

/* ---- the persistent definition ---------------------------------------------- */

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

static int apply_config_pins(virDomainPtr dom, const struct pinset *p, int maxcpus,
                             char reason[PLACEMENT_REASON_MAX]) {
        int len;
        _cleanup_free_ unsigned char *emap = apply_cpumap(p->emulator, maxcpus, &len);

        for (int i = 0; i < p->nvcpu; i++) {
                _cleanup_free_ unsigned char *map = apply_cpumap(p->vcpu[i], maxcpus, &len);
                if (virDomainPinVcpuFlags(dom, i, map, len, VIR_DOMAIN_AFFECT_CONFIG) < 0)
                        return apply_fail(reason, "vCPU %d: %s", i, apply_libvirt_error());
        }
        if (virDomainPinEmulator(dom, emap, len, VIR_DOMAIN_AFFECT_CONFIG) < 0)
                return apply_fail(reason, "emulator: %s", apply_libvirt_error());
        for (int i = 0; i < p->niothread; i++) {
                _cleanup_free_ unsigned char *map = apply_cpumap(p->iothread[i], maxcpus, &len);
                if (virDomainPinIOThread(dom, p->iothread_id[i], map, len, VIR_DOMAIN_AFFECT_CONFIG) < 0)
                        return apply_fail(reason, "iothread %d: %s", p->iothread_id[i], apply_libvirt_error());
        }
        return 0;
}

int apply_persist(struct daemon *d, virDomainPtr dom, const struct domain *dm, const struct pinset *p) {
        char reason[PLACEMENT_REASON_MAX] = "";
        int r;

        if (virDomainIsPersistent(dom) != 1)
                return 0;
        /* Several calls, not one atomic change: the record goes first, so a
         * start that catches the definition half written sees our record with
         * pins that do not match it yet and is placed anew, never vCPU pins of
         * ours without the record that says so (which would look hand-made). */
        r = record_store(d, dom, dm, VIR_DOMAIN_AFFECT_CONFIG) < 0 ?
                apply_fail(reason, "placement record: %s", apply_libvirt_error()) : 0;
        if (r >= 0)
                r = apply_config_pins(dom, p, apply_maxcpus(d), reason);
        if (r >= 0 && apply_config_numa(dom, p) < 0)
                r = apply_fail(reason, "numatune: %s", apply_libvirt_error());
        if (r < 0)
                log_full(LOG_WARNING, dm->name, dm->uuid, 0,
                         "cannot write its placement into the persistent definition (%s); "
                         "its next start is pinned by the hook or the started event instead", reason);
        return r;
}

/* Takes our pins out of the persistent definition when it holds our record
 * (the domain is no longer placed on dedicated PUs): every CPU, every node. */
int apply_unpersist(struct daemon *d, virDomainPtr dom, const struct domain *dm) {
        _cleanup_free_ char *rec = NULL;
        _cleanup_bitmap_ hwloc_bitmap_t all = hwloc_bitmap_alloc();
        char reason[PLACEMENT_REASON_MAX] = "";
        struct pinset p = { .nvcpu = dm->vcpus, .niothread = dm->niothread, .numa = POLICY_NUMA_NONE };
        struct pinset old = {};
        struct plan plan = {};
        bool dedicated;
        int r;

        if (virDomainIsPersistent(dom) != 1)
                return 0;
        rec = virDomainGetMetadata(dom, VIR_DOMAIN_METADATA_ELEMENT, DOMXML_PLACEMENT_NS,
                                   VIR_DOMAIN_AFFECT_CONFIG);
        if (!rec)
                return 0;
        for (int i = 0; i < d->topo->npu; i++)
                hwloc_bitmap_set(all, d->topo->pus[i].os);
        /* our <numatune> becomes a binding to every node (no restriction) */
        if (record_parse(d->topo, rec, &dedicated, &plan, &old) == 0 && dedicated &&
            plan.numa != POLICY_NUMA_NONE) {
                p.numa = POLICY_NUMA_STRICT;
                p.mems = hwloc_bitmap_alloc();
                for (int i = 0; i < d->topo->nnode; i++)
                        hwloc_bitmap_set(p.mems, d->topo->nodes[i].os);
        }
        plan_done(&plan);
        pinset_done(&old);
        p.vcpu = xcalloc(p.nvcpu + 1, sizeof *p.vcpu);
        for (int i = 0; i < p.nvcpu; i++)
                p.vcpu[i] = hwloc_bitmap_dup(all);
        p.iothread = xcalloc(p.niothread + 1, sizeof *p.iothread);
        p.iothread_id = xcalloc(p.niothread + 1, sizeof *p.iothread_id);
        for (int i = 0; i < p.niothread; i++) {
                p.iothread[i] = hwloc_bitmap_dup(all);
                p.iothread_id[i] = dm->iothread_ids[i];
        }
        p.emulator = hwloc_bitmap_dup(all);
        r = apply_config_pins(dom, &p, apply_maxcpus(d), reason);
        if (r >= 0 && apply_config_numa(dom, &p) < 0)
                r = apply_fail(reason, "numatune: %s", apply_libvirt_error());
        if (r >= 0 && virDomainSetMetadata(dom, VIR_DOMAIN_METADATA_ELEMENT, NULL, NULL, DOMXML_PLACEMENT_NS,
                                           VIR_DOMAIN_AFFECT_CONFIG) < 0)
                r = apply_fail(reason, "placement record: %s", apply_libvirt_error());
        pinset_done(&p);
        if (r < 0)
                return log_full(LOG_WARNING, dm->name, dm->uuid, 0,
                                "cannot take its old pins out of the persistent definition: %s", reason), r;
        log_full(LOG_INFO, dm->name, dm->uuid, 0, "no longer dedicated: its pins are out of the persistent definition");
        return 0;
}
