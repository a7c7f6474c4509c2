#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "kvmtune/hostfs.h"
#include "kvmtune/topo.h"
#include "kvmtune/util.h"

/* ACPI SLIT values: 10 is local; 20 is the kernel's default for a remote node
 * when firmware gives no table, so that is what we assume without a matrix. */
#define TOPO_DISTANCE_LOCAL 10
#define TOPO_DISTANCE_REMOTE 20

static const uint64_t topo_page_bytes[TOPO_PAGE_SIZES] = {
        [TOPO_PAGE_2M] = 2ULL << 20,
        [TOPO_PAGE_1G] = 1ULL << 30,
};
static const char *const topo_page_dir[TOPO_PAGE_SIZES] = {
        [TOPO_PAGE_2M] = "hugepages-2048kB",
        [TOPO_PAGE_1G] = "hugepages-1048576kB",
};

/* A core while the model is built: the hwloc Core, or a lone PU when hwloc
 * found no Core level above it. */
struct core_tmp {
        hwloc_obj_t obj;
        hwloc_obj_t key;                /* L3, else Package, else NULL: the group key */
        unsigned order;                 /* logical index of the first PU */
        int npu, node, group, kind;
};

struct build {
        hwloc_topology_t hw;
        hwloc_obj_t *nodes;             /* sorted by os index */
        int nnode, ncore, ngroup;
        struct core_tmp *cores;
        hwloc_obj_t *group_key;
};

static void topo_destroy_hwlocp(hwloc_topology_t *hw) {
        if (*hw)
                hwloc_topology_destroy(*hw);
}

static void build_done(struct build *b) {
        free(b->nodes);
        free(b->cores);
        free(b->group_key);
}

/* --- loading hwloc ---------------------------------------------------------- */

static int topo_set_source(hwloc_topology_t hw, enum topo_source source, const char *arg,
                           unsigned long *flags) {
        switch (source) {
        case TOPO_SOURCE_LIVE:
                *flags |= HWLOC_TOPOLOGY_FLAG_IS_THISSYSTEM;
                return arg ? -EINVAL : 0;
        case TOPO_SOURCE_XML:
                if (!arg)
                        return -EINVAL;
                /* hwloc reports a missing file as a generic failure: check first. */
                if (access(arg, R_OK) < 0)
                        return -errno_or(ENOENT);
                return hwloc_topology_set_xml(hw, arg) < 0 ? -errno_or(EINVAL) : 0;
        case TOPO_SOURCE_SYNTHETIC:
                if (!arg)
                        return -EINVAL;
                return hwloc_topology_set_synthetic(hw, arg) < 0 ? -EINVAL : 0;
        }
        return -EINVAL;
}

static int topo_open_hwloc(enum topo_source source, const char *arg, hwloc_topology_t *ret) {
        _cleanup_(topo_destroy_hwlocp) hwloc_topology_t hw = NULL;
        unsigned long flags = 0;
        int r;

        if (hwloc_topology_init(&hw) < 0) {
                hw = NULL;
                return -ENOMEM;
        }
        /* Keep PCI devices so that they carry their NUMA locality. */
        hwloc_topology_set_io_types_filter(hw, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
        r = topo_set_source(hw, source, arg, &flags);
        if (r < 0)
                return r;
        if (hwloc_topology_set_flags(hw, flags) < 0)
                return -errno_or(EINVAL);
        errno = 0;
        if (hwloc_topology_load(hw) < 0)
                return -errno_or(EINVAL);
        *ret = hw;
        hw = NULL;
        return 0;
}

/* --- NUMA nodes ------------------------------------------------------------- */

static int cmp_node_os(const void *a, const void *b) {
        hwloc_obj_t x = *(const hwloc_obj_t *)a, y = *(const hwloc_obj_t *)b;

        return (x->os_index > y->os_index) - (x->os_index < y->os_index);
}

static void build_nodes(struct build *b) {
        hwloc_obj_t o = NULL;
        int n = 0;

        b->nnode = hwloc_get_nbobjs_by_type(b->hw, HWLOC_OBJ_NUMANODE);
        b->nodes = xcalloc(b->nnode, sizeof *b->nodes);
        while ((o = hwloc_get_next_obj_by_type(b->hw, HWLOC_OBJ_NUMANODE, o)) && n < b->nnode)
                b->nodes[n++] = o;
        b->nnode = n;
        qsort(b->nodes, n, sizeof *b->nodes, cmp_node_os);
}

/* Is node a a better home than node b for a core both contain? The smaller
 * cpuset is the more local one (POWER9 GPU memory spans the machine); on equal
 * cpusets (Xeon Max flat mode: DDR and HBM) the node with more memory wins, so
 * the small HBM node keeps npu = 0. Equal again: the lower os index (a). */
static bool node_better(const struct hwloc_obj * a, const struct hwloc_obj * b) {
        int wa = hwloc_bitmap_weight(a->cpuset), wb = hwloc_bitmap_weight(b->cpuset);

        if (wa != wb)
                return wa < wb;
        return a->attr->numanode.local_memory > b->attr->numanode.local_memory;
}

static int node_local_to(const struct build *b, hwloc_const_cpuset_t set) {
        int best = -1;

        for (int i = 0; i < b->nnode; i++) {
                hwloc_obj_t n = b->nodes[i];

                if (hwloc_bitmap_iszero(n->cpuset) || !hwloc_bitmap_isincluded(set, n->cpuset))
                        continue;
                if (best < 0 || node_better(n, b->nodes[best]))
                        best = i;
        }
        return best;
}

/* Lowest-os node of a nodeset, only among nodes with memory if need_memory. */
static int node_in_nodeset(const struct build *b, hwloc_const_nodeset_t ns, bool need_memory) {
        for (int i = 0; i < b->nnode; i++) {
                if (!hwloc_bitmap_isset(ns, b->nodes[i]->os_index))
                        continue;
                if (!need_memory || b->nodes[i]->attr->numanode.local_memory > 0)
                        return i;
        }
        return -1;
}

/* A core with no local NUMA node (2990WX memory-less dies; the Haswell file
 * whose node 0 is offline) is attached to the nearest node that has memory:
 * walking up from the core, the first ancestor whose nodeset holds a node
 * with memory gives it, the lowest os index first. Without any memory size
 * known, the nearest node at all. Placement then treats that memory as local,
 * which is what the kernel's default policy does for these CPUs too. */
static int node_nearest(const struct build *b, const struct hwloc_obj * obj) {
        for (int need_memory = 1; need_memory >= 0; need_memory--)
                for (const struct hwloc_obj * a = obj->parent; a; a = a->parent) {
                        int i = a->nodeset ? node_in_nodeset(b, a->nodeset, need_memory) : -1;

                        if (i >= 0)
                                return i;
                }
        return 0;
}

static int build_core_node(const struct build *b, const struct hwloc_obj * obj) {
        int i = node_local_to(b, obj->cpuset);

        return i >= 0 ? i : node_nearest(b, obj);
}

/* --- cores ------------------------------------------------------------------ */

static hwloc_const_cpuset_t allowed(const struct build *b) {
        return hwloc_topology_get_allowed_cpuset(b->hw);
}

/* Allowed PUs of a core in logical order; prev NULL starts. A core's PUs are
 * consecutive cousins, the first one reached through first children. */
static hwloc_obj_t core_next_pu(const struct build *b, hwloc_obj_t core, hwloc_obj_t prev) {
        hwloc_obj_t pu = prev ? prev->next_cousin : core;

        if (!prev)
                while (pu->type != HWLOC_OBJ_PU && pu->first_child)
                        pu = pu->first_child;
        for (; pu && pu->type == HWLOC_OBJ_PU; pu = pu->next_cousin) {
                if (!hwloc_bitmap_isincluded(pu->cpuset, core->cpuset))
                        return NULL;
                if (hwloc_bitmap_isset(allowed(b), pu->os_index))
                        return pu;
        }
        return NULL;
}

static hwloc_obj_t core_group_key(hwloc_topology_t hw, hwloc_obj_t core) {
        hwloc_obj_t o = hwloc_get_ancestor_obj_by_type(hw, HWLOC_OBJ_L3CACHE, core);

        return o ? o : hwloc_get_ancestor_obj_by_type(hw, HWLOC_OBJ_PACKAGE, core);
}

static int core_kind(hwloc_topology_t hw, hwloc_obj_t core) {
        return hwloc_cpukinds_get_by_cpuset(hw, core->cpuset, 0);
}

static void build_add_core(struct build *b, hwloc_obj_t obj) {
        struct core_tmp *c;
        hwloc_obj_t pu = core_next_pu(b, obj, NULL);

        if (!pu)
                return;
        c = &b->cores[b->ncore++];
        *c = (struct core_tmp) {
                .obj = obj,
                .key = core_group_key(b->hw, obj),
                .order = pu->logical_index,
                .node = build_core_node(b, obj),
                .group = -1,
                .kind = core_kind(b->hw, obj),
        };
        for (; pu; pu = core_next_pu(b, obj, pu))
                c->npu++;
}

static void build_cores(struct build *b) {
        int npu = hwloc_get_nbobjs_by_type(b->hw, HWLOC_OBJ_PU);
        hwloc_obj_t o = NULL;

        b->cores = xcalloc(npu, sizeof *b->cores);
        while ((o = hwloc_get_next_obj_by_type(b->hw, HWLOC_OBJ_CORE, o)) && b->ncore < npu)
                build_add_core(b, o);
        /* PUs hwloc could not put under a Core become cores of their own. */
        while ((o = hwloc_get_next_obj_by_type(b->hw, HWLOC_OBJ_PU, o)) && b->ncore < npu)
                if (!hwloc_get_ancestor_obj_by_type(b->hw, HWLOC_OBJ_CORE, o) &&
                    hwloc_bitmap_isset(allowed(b), o->os_index))
                        build_add_core(b, o);
}

/* --- groups ----------------------------------------------------------------- */

static int cmp_core_order(const void *a, const void *b) {
        const struct core_tmp *x = a, *y = b;

        return (x->order > y->order) - (x->order < y->order);
}

static int cmp_core_group(const void *a, const void *b) {
        const struct core_tmp *x = a, *y = b;

        if (x->group != y->group)
                return x->group - y->group;
        return cmp_core_order(a, b);
}

static int group_find(const struct build *b, int first, hwloc_obj_t key) {
        for (int g = first; g < b->ngroup; g++)
                if (b->group_key[g] == key)
                        return g;
        return -1;
}

/* Groups are numbered node by node, in the order their first core appears, so
 * sorting cores by group makes groups contiguous per node. */
static void build_groups(struct build *b) {
        b->group_key = xcalloc(b->ncore, sizeof *b->group_key);
        qsort(b->cores, b->ncore, sizeof *b->cores, cmp_core_order);
        for (int n = 0; n < b->nnode; n++) {
                int first = b->ngroup;

                for (int i = 0; i < b->ncore; i++) {
                        struct core_tmp *c = &b->cores[i];

                        if (c->node != n)
                                continue;
                        c->group = group_find(b, first, c->key);
                        if (c->group < 0) {
                                c->group = b->ngroup++;
                                b->group_key[c->group] = c->key;
                        }
                }
        }
        qsort(b->cores, b->ncore, sizeof *b->cores, cmp_core_group);
}

/* --- filling the model ------------------------------------------------------ */

static void fill_node_hwloc_memory(struct topo_node *tn, const struct hwloc_obj * o) {
        const struct hwloc_numanode_attr_s *a = &o->attr->numanode;

        tn->memory_kib = a->local_memory >> 10;
        tn->memory_known = a->local_memory > 0;
        for (int p = 0; p < TOPO_PAGE_SIZES; p++) {
                tn->hp[p] = (struct topo_hpool) { 0, 0 };
                for (unsigned i = 0; i < a->page_types_len; i++)
                        if (a->page_types[i].size == topo_page_bytes[p])
                                tn->hp[p] = (struct topo_hpool) {
                                        a->page_types[i].count, a->page_types[i].count };
        }
}

static void fill_nodes(struct topo *t, const struct build *b) {
        t->nnode = b->nnode;
        t->nodes = xcalloc(b->nnode, sizeof *t->nodes);
        for (int i = 0; i < b->nnode; i++) {
                t->nodes[i].os = b->nodes[i]->os_index;
                t->nodes[i].first_group = -1;
                fill_node_hwloc_memory(&t->nodes[i], b->nodes[i]);
        }
}

static void fill_group(struct topo *t, const struct build *b, int c) {
        const struct core_tmp *ct = &b->cores[c];
        struct topo_group *g = &t->groups[ct->group];
        struct topo_node *n = &t->nodes[ct->node];

        if (g->ncore++ == 0) {
                g->first_core = c;
                g->node = ct->node;
                g->l3 = ct->key && ct->key->type == HWLOC_OBJ_L3CACHE ?
                        (int)ct->key->logical_index : -1;
                if (n->ngroup++ == 0)
                        n->first_group = ct->group;
        }
        n->npu += ct->npu;
}

static void fill_core(struct topo *t, const struct build *b, int c) {
        const struct core_tmp *ct = &b->cores[c];
        struct topo_core *tc = &t->cores[c];

        *tc = (struct topo_core) {
                .first_pu = t->npu, .group = ct->group, .node = ct->node, .kind = ct->kind,
        };
        for (hwloc_obj_t pu = core_next_pu(b, ct->obj, NULL); pu;
             pu = core_next_pu(b, ct->obj, pu)) {
                t->pus[t->npu++] = (struct topo_pu) { .os = pu->os_index, .core = c };
                tc->npu++;
        }
        if (tc->npu > t->smt)
                t->smt = tc->npu;
        fill_group(t, b, c);
}

/* A CPU-less node owns no group; its first_group still points where its
 * groups would start, so loops over [first_group, first_group + ngroup) and
 * "groups before this node" arithmetic stay valid. */
static void fill_empty_nodes(struct topo *t) {
        int next = 0;

        for (int n = 0; n < t->nnode; n++) {
                if (t->nodes[n].ngroup == 0)
                        t->nodes[n].first_group = next;
                next = t->nodes[n].first_group + t->nodes[n].ngroup;
        }
}

static void fill_cores(struct topo *t, const struct build *b) {
        int npu = 0;

        for (int c = 0; c < b->ncore; c++)
                npu += b->cores[c].npu;
        t->ncore = b->ncore;
        t->ngroup = b->ngroup;
        t->cores = xcalloc(b->ncore, sizeof *t->cores);
        t->groups = xcalloc(b->ngroup, sizeof *t->groups);
        t->pus = xcalloc(npu, sizeof *t->pus);
        for (int c = 0; c < b->ncore; c++)
                fill_core(t, b, c);
        fill_empty_nodes(t);
}

static void fill_pu_by_os(struct topo *t) {
        t->max_os = 0;
        for (int i = 0; i < t->npu; i++)
                if (t->pus[i].os + 1 > t->max_os)
                        t->max_os = t->pus[i].os + 1;
        t->pu_by_os = xmalloc((t->max_os ? t->max_os : 1) * sizeof *t->pu_by_os);
        for (unsigned os = 0; os < t->max_os; os++)
                t->pu_by_os[os] = -1;
        for (int i = 0; i < t->npu; i++)
                t->pu_by_os[t->pus[i].os] = i;
}

/* --- distances -------------------------------------------------------------- */

static unsigned distance_lookup(struct hwloc_distances_s *d, hwloc_obj_t a, hwloc_obj_t b) {
        hwloc_uint64_t ab, ba;

        if (hwloc_distances_obj_pair_values(d, a, b, &ab, &ba) < 0)
                return a == b ? TOPO_DISTANCE_LOCAL : TOPO_DISTANCE_REMOTE;
        return ab > UINT_MAX ? UINT_MAX : (unsigned)ab;
}

/* The first NUMA latency matrix hwloc has, reordered like nodes[]. Pairs it
 * does not cover get the SLIT defaults. */
static void fill_distances(struct topo *t, const struct build *b) {
        struct hwloc_distances_s *d = NULL;
        unsigned nr = 1;
        int n = b->nnode;

        if (hwloc_distances_get_by_type(b->hw, HWLOC_OBJ_NUMANODE, &nr, &d,
                                        HWLOC_DISTANCES_KIND_MEANS_LATENCY, 0) < 0 || nr < 1)
                return;
        t->distance = xcalloc((size_t)n * n, sizeof *t->distance);
        for (int i = 0; i < n; i++)
                for (int j = 0; j < n; j++)
                        t->distance[i * n + j] = distance_lookup(d, b->nodes[i], b->nodes[j]);
        hwloc_distances_release(b->hw, d);
}

/* --- PCI -------------------------------------------------------------------- */

/* The node of a device: among the nodes of its first non-I/O ancestor, the
 * one with CPUs. Several such nodes (a device attached above them) leave it
 * unknown (-1); a single node, even CPU-less, is taken. */
static int pci_node(const struct topo *t, const struct build *b, hwloc_obj_t dev) {
        hwloc_obj_t a = hwloc_get_non_io_ancestor_obj(b->hw, dev);
        int found = -1, any = -1, nany = 0;

        for (int i = 0; a && a->nodeset && i < b->nnode; i++) {
                if (!hwloc_bitmap_isset(a->nodeset, b->nodes[i]->os_index))
                        continue;
                any = i;
                nany++;
                if (t->nodes[i].npu == 0)
                        continue;
                if (found >= 0)
                        return -1;
                found = i;
        }
        return found >= 0 ? found : nany == 1 ? any : -1;
}

static void fill_pcis(struct topo *t, const struct build *b) {
        int n = hwloc_get_nbobjs_by_type(b->hw, HWLOC_OBJ_PCI_DEVICE);
        hwloc_obj_t o = NULL;

        t->pcis = xcalloc(n, sizeof *t->pcis);
        while ((o = hwloc_get_next_pcidev(b->hw, o)) && t->npci < n) {
                struct topo_pci *p = &t->pcis[t->npci++];
                const struct hwloc_pcidev_attr_s *a = &o->attr->pcidev;

                snprintf(p->busid, sizeof p->busid, "%04x:%02x:%02x.%x",
                         (unsigned)a->domain, a->bus, a->dev, a->func);
                p->node = pci_node(t, b, o);
        }
}

/* --- memory from sysfs ------------------------------------------------------ */

static int read_node_u64(const char *root, unsigned node, const char *rel, uint64_t *ret) {
        _cleanup_free_ char *path = NULL;

        path = xasprintf("/sys/devices/system/node/node%u/%s", node, rel);
        return hostfs_read_u64(root, path, ret);
}

/* A pool with no sysfs file is empty (the kernel lacks that page size). */
static int read_pool(const char *root, unsigned node, int page, struct topo_hpool *ret) {
        _cleanup_free_ char *nr = NULL, *fr = NULL;
        struct topo_hpool hp = { 0, 0 };
        int r;

        nr = xasprintf("hugepages/%s/nr_hugepages", topo_page_dir[page]);
        fr = xasprintf("hugepages/%s/free_hugepages", topo_page_dir[page]);
        r = read_node_u64(root, node, nr, &hp.total);
        if (r < 0 && r != -ENOENT)
                return r;
        r = read_node_u64(root, node, fr, &hp.free);
        if (r < 0 && r != -ENOENT)
                return r;
        if (hp.free > hp.total)
                hp.free = hp.total;
        *ret = hp;
        return 0;
}

/* Free now, or given back by the kernel on demand: MemFree, the page cache
 * that is not shmem, reclaimable slab. Keys a kernel lacks count as 0. */
static void node_avail(const char *text, struct topo_node *n) {
        uint64_t free, file = 0, shmem = 0, slab = 0;

        n->avail_known = hostfs_meminfo_get(text, "MemFree", &free) == 0;
        if (!n->avail_known)
                return;
        hostfs_meminfo_get(text, "FilePages", &file);
        hostfs_meminfo_get(text, "Shmem", &shmem);
        hostfs_meminfo_get(text, "SReclaimable", &slab);
        n->avail_kib = free + (file > shmem ? file - shmem : 0) + slab;
}

static int read_node_memory(const char *root, struct topo_node *n) {
        _cleanup_free_ char *path = NULL, *text = NULL;
        uint64_t kib;
        int r;

        path = xasprintf("/sys/devices/system/node/node%u/meminfo", n->os);
        r = hostfs_read(root, path, &text);
        if (r == -ENOENT)
                return 0;       /* keep hwloc's size */
        if (r < 0)
                return r;
        r = hostfs_meminfo_get(text, "MemTotal", &kib);
        if (r == -ENODATA)
                return 0;
        if (r < 0)
                return r;
        n->memory_kib = kib;
        n->memory_known = true;
        node_avail(text, n);
        return 0;
}

static int refresh_node(const char *root, struct topo_node *n) {
        int r = read_node_memory(root, n);

        for (int p = 0; r >= 0 && p < TOPO_PAGE_SIZES; p++)
                r = read_pool(root, n->os, p, &n->hp[p]);
        return r;
}

int topo_refresh_memory(struct topo *t, const char *sysfs_root) {
        int r;

        if (!t)
                return -EINVAL;
        for (int i = 0; i < t->nnode; i++) {
                hwloc_obj_t o = hwloc_get_numanode_obj_by_os_index(t->hw, t->nodes[i].os);

                if (o)
                        fill_node_hwloc_memory(&t->nodes[i], o);
                if (!sysfs_root)
                        continue;
                r = refresh_node(sysfs_root, &t->nodes[i]);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* --- public ----------------------------------------------------------------- */

static const char *plural(int n) {
        return n == 1 ? "" : "s";
}

static char *describe(const struct topo *t) {
        bool l3 = t->ngroup > 0;

        for (int g = 0; g < t->ngroup; g++)
                l3 = l3 && t->groups[g].l3 >= 0;
        return xasprintf("%d node%s, %d %sgroup%s, %d core%s, %d PU%s",
                         t->nnode, plural(t->nnode), t->ngroup, l3 ? "L3 " : "",
                         plural(t->ngroup), t->ncore, plural(t->ncore), t->npu, plural(t->npu));
}

static struct topo *topo_build(hwloc_topology_t hw) {
        struct build b = { .hw = hw };
        struct topo *t = xcalloc(1, sizeof *t);

        t->hw = hw;
        t->is_this_system = hwloc_topology_is_thissystem(hw);
        build_nodes(&b);
        build_cores(&b);
        build_groups(&b);
        fill_nodes(t, &b);
        fill_cores(t, &b);
        fill_pu_by_os(t);
        fill_distances(t, &b);
        fill_pcis(t, &b);
        t->description = describe(t);
        build_done(&b);
        return t;
}

int topo_load(enum topo_source source, const char *arg, const char *sysfs_root,
              struct topo **ret) {
        _cleanup_(topo_freep) struct topo *t = NULL;
        hwloc_topology_t hw = NULL;
        int r;

        if (!ret)
                return -EINVAL;
        r = topo_open_hwloc(source, arg, &hw);
        if (r < 0)
                return r;
        t = topo_build(hw);
        if (t->npu == 0 || t->nnode == 0)
                return -ENODEV;
        if (sysfs_root) {
                r = topo_refresh_memory(t, sysfs_root);
                if (r < 0)
                        return r;
        }
        *ret = t;
        t = NULL;
        return 0;
}

struct topo *topo_free(struct topo *t) {
        if (!t)
                return NULL;
        if (t->hw)
                hwloc_topology_destroy(t->hw);
        free(t->pus);
        free(t->cores);
        free(t->groups);
        free(t->nodes);
        free(t->pcis);
        free(t->distance);
        free(t->pu_by_os);
        free(t->description);
        free(t);
        return NULL;
}

int topo_node_by_os(const struct topo *t, unsigned os) {
        for (int i = 0; i < t->nnode; i++)
                if (t->nodes[i].os == os)
                        return i;
        return -1;
}

int topo_pu_by_os(const struct topo *t, unsigned os) {
        return os < t->max_os ? t->pu_by_os[os] : -1;
}

unsigned topo_distance(const struct topo *t, int a, int b) {
        if (a < 0 || b < 0 || a >= t->nnode || b >= t->nnode)
                return UINT_MAX;
        if (t->distance)
                return t->distance[a * t->nnode + b];
        return a == b ? TOPO_DISTANCE_LOCAL : TOPO_DISTANCE_REMOTE;
}

hwloc_bitmap_t topo_pus_to_bitmap(const struct topo *t, const int *pus, int n) {
        hwloc_bitmap_t set = bitmap_new();

        for (int i = 0; i < n; i++) {
                if (pus[i] < 0 || pus[i] >= t->npu) {
                        hwloc_bitmap_free(set);
                        return NULL;
                }
                hwloc_bitmap_set(set, t->pus[pus[i]].os);
        }
        return set;
}

hwloc_bitmap_t topo_cpuset(const struct topo *t) {
        hwloc_bitmap_t m = hwloc_bitmap_alloc();

        for (int i = 0; i < t->npu; i++)
                hwloc_bitmap_set(m, t->pus[i].os);
        return m;
}
