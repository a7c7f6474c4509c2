#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kvmtune/hostfs.h"
#include "kvmtune/topo.h"
#include "kvmtune/util.h"
#include "tap.h"
#include "test-data.h"

#define SYN_2NODE "Package:2 [NUMANode(memory=8GiB)] L3Cache:1 Core:4 PU:2(indexes=core)"
#define SYN_4NODE "Package:2 Group:2 [NUMANode(memory=4GiB)] L3Cache:1 Core:2 PU:2(indexes=core)"
#define GIB_KIB (1024ULL * 1024)

/* The README table of tests/data/topologies: NUMA as hwloc counts it, L3 domains,
 * online cores and PUs, max PUs per core, PCI devices with I/O kept. */
static const struct expect {
        const char *file;
        int nnode, nl3, ncore, npu, smt, npci;
} expects[] = {
        { "1s-arm64-nvidia-gb10-hybrid-desktop.xml", 1, 2, 20, 20, 1, 0 },
        { "1s-core-i7-1370p-raptorlake-hybrid-laptop.xml", 1, 1, 14, 20, 2, 0 },
        { "1s-threadripper-2990wx-memoryless-dies-2gpu.xml", 2, 8, 32, 64, 2, 9 },
        { "1s-xeon-silver4215-cascadelake-smt-small.xml", 1, 1, 8, 16, 2, 8 },
        { "24s-xeon-e5-4640-sgi-uv2000-smt-384pu.xml", 24, 24, 192, 384, 2, 12 },
        { "2s-epyc-7402-rome-nps4-smt-3coreccx-gpu-ib.xml", 8, 16, 48, 96, 2, 16 },
        { "2s-epyc-7451-naples-8numa-smt-cpuid.xml", 8, 16, 48, 96, 2, 0 },
        { "2s-epyc-7763-milan-nosmt-cpuid.xml", 2, 16, 128, 128, 1, 0 },
        { "2s-epyc-7h12-rome-nps1-smt-4tb.xml", 2, 32, 128, 256, 2, 13 },
        { "2s-power9-smt4-gpu-cpuless-numa.xml", 6, 23, 44, 176, 4, 13 },
        { "2s-xeon-e5-2680v3-haswell-offline-cpus-node0.xml", 1, 2, 17, 17, 1, 0 },
        { "2s-xeon-max9462-sapphirerapids-snc4-smt-hbmcache.xml", 8, 2, 64, 128, 2, 8 },
        { "2s-xeon-max9462-sapphirerapids-snc4-smt-hbmflat.xml", 16, 2, 64, 128, 2, 8 },
        { "2s-xeon-platinum8168-skylake-smt.xml", 2, 2, 48, 96, 2, 8 },
        { "2s-xeon-platinum8480p-sapphirerapids-snc4-smt-h100-ib.xml", 8, 2, 112, 224, 2, 20 },
        { "4s-opteron-6276-bulldozer-8numa.xml", 8, 8, 64, 64, 1, 0 },
};

#define _cleanup_topo_ _cleanup_(topo_freep)

/* NULL, after a failed check, when it does not load. */
static struct topo *load_file(const char *name) {
        _cleanup_free_ char *path = test_topology(name);
        struct topo *t = NULL;
        int r;

        r = topo_load(TOPO_SOURCE_XML, path, NULL, &t);
        if (!ok(r == 0, "%s loads", name))
                printf("#   error %d\n", r);
        return t;
}

static struct topo *load_synthetic(const char *s, const char *root) {
        struct topo *t = NULL;
        int r = topo_load(TOPO_SOURCE_SYNTHETIC, s, root, &t);

        if (!ok(r == 0, "synthetic '%s' loads%s%s", s, root ? " with " : "", root ? root : ""))
                printf("#   error %d\n", r);
        return t;
}

/* --- invariants, on every topology ------------------------------------------ */

/* PUs contiguous per core, cores per group, groups per node; ranges tile. */
static bool check_tiling(const struct topo *t) {
        int pu = 0, core = 0, group = 0;

        for (int n = 0; n < t->nnode; n++) {
                const struct topo_node *tn = &t->nodes[n];
                int npu = 0;

                if (tn->first_group != group || tn->ngroup < 0)
                        return false;
                for (int g = tn->first_group; g < tn->first_group + tn->ngroup; g++, group++) {
                        const struct topo_group *tg = &t->groups[g];

                        if (tg->node != n || tg->first_core != core || tg->ncore < 1)
                                return false;
                        for (int c = tg->first_core; c < tg->first_core + tg->ncore; c++, core++) {
                                const struct topo_core *tc = &t->cores[c];

                                if (tc->group != g || tc->node != n || tc->first_pu != pu || tc->npu < 1)
                                        return false;
                                for (int p = tc->first_pu; p < tc->first_pu + tc->npu; p++, pu++)
                                        if (t->pus[p].core != c)
                                                return false;
                                npu += tc->npu;
                        }
                }
                if (npu != tn->npu)
                        return false;
        }
        return pu == t->npu && core == t->ncore && group == t->ngroup;
}

static bool check_nodes_sorted(const struct topo *t) {
        for (int n = 1; n < t->nnode; n++)
                if (t->nodes[n - 1].os >= t->nodes[n].os)
                        return false;
        return true;
}

static bool check_pu_by_os(const struct topo *t) {
        unsigned max = 0;
        int present = 0;

        for (int i = 0; i < t->npu; i++) {
                if (t->pus[i].os + 1 > max)
                        max = t->pus[i].os + 1;
                if (topo_pu_by_os(t, t->pus[i].os) != i)
                        return false;
        }
        for (unsigned os = 0; os < t->max_os; os++)
                present += t->pu_by_os[os] >= 0;
        return max == t->max_os && present == t->npu && topo_pu_by_os(t, t->max_os) == -1;
}

static bool check_pu_nodes(const struct topo *t) {
        for (int i = 0; i < t->npu; i++) {
                int n = topo_pu_node(t, i);

                if (n < 0 || n >= t->nnode || topo_node_by_os(t, t->nodes[n].os) != n)
                        return false;
        }
        return true;
}

static bool check_smt(const struct topo *t) {
        int max = 0;

        for (int c = 0; c < t->ncore; c++)
                if (t->cores[c].npu > max)
                        max = t->cores[c].npu;
        return max == t->smt;
}

static bool check_kinds(const struct topo *t) {
        int nr = hwloc_cpukinds_get_nr(t->hw, 0);

        for (int c = 0; c < t->ncore; c++)
                if (t->cores[c].kind < -1 || t->cores[c].kind >= nr)
                        return false;
        return true;
}

static bool check_distances(const struct topo *t) {
        for (int a = 0; a < t->nnode; a++)
                for (int b = 0; b < t->nnode; b++) {
                        unsigned d = topo_distance(t, a, b);

                        if (a == b ? d != 10 : d <= 10)
                                return false;
                }
        return topo_distance(t, 0, t->nnode) == UINT_MAX && topo_distance(t, -1, 0) == UINT_MAX;
}

static bool check_pcis(const struct topo *t) {
        for (int i = 0; i < t->npci; i++) {
                unsigned dom, bus, dev, fn;
                char end;

                if (sscanf(t->pcis[i].busid, "%4x:%2x:%2x.%1x%c", &dom, &bus, &dev, &fn, &end) != 4 ||
                    strlen(t->pcis[i].busid) != 12)
                        return false;
                if (t->pcis[i].node < -1 || t->pcis[i].node >= t->nnode)
                        return false;
        }
        return true;
}

static bool check_bitmap(const struct topo *t) {
        _cleanup_bitmap_ hwloc_bitmap_t all = NULL, bad = NULL;
        _cleanup_free_ int *pus = xcalloc(t->npu, sizeof *pus);
        int bogus = t->npu;

        for (int i = 0; i < t->npu; i++)
                pus[i] = i;
        all = topo_pus_to_bitmap(t, pus, t->npu);
        bad = topo_pus_to_bitmap(t, &bogus, 1);
        return all && !bad && hwloc_bitmap_weight(all) == t->npu &&
               hwloc_bitmap_isset(all, t->pus[t->npu - 1].os);
}

static void check_invariants(const struct topo *t, const char *name) {
        ok(t->npu > 0 && t->ncore > 0 && t->ngroup > 0 && t->nnode > 0, "%s: not empty", name);
        ok(check_tiling(t), "%s: PUs/cores/groups/nodes tile contiguously", name);
        ok(check_nodes_sorted(t), "%s: nodes ordered by os index", name);
        ok(check_pu_by_os(t), "%s: pu_by_os consistent", name);
        ok(check_pu_nodes(t), "%s: every PU's node exists", name);
        ok(check_smt(t), "%s: smt is the max PUs per core", name);
        ok(check_kinds(t), "%s: core kinds valid", name);
        ok(check_distances(t), "%s: distances 10 local, > 10 remote", name);
        ok(check_pcis(t), "%s: PCI bus ids and nodes valid", name);
        ok(check_bitmap(t), "%s: topo_pus_to_bitmap", name);
        ok(t->description && strstr(t->description, " cores, "), "%s: description '%s'", name,
           t->description ? t->description : "(null)");
}

/* --- the README table ------------------------------------------------------- */

static int count_l3(const struct topo *t) {
        int max = -1;

        for (int g = 0; g < t->ngroup; g++)
                if (t->groups[g].l3 > max)
                        max = t->groups[g].l3;
        return max + 1;
}

static const struct expect *expect_for(const char *name) {
        for (size_t i = 0; i < ELEMENTSOF(expects); i++)
                if (streq(expects[i].file, name))
                        return &expects[i];
        return NULL;
}

static void test_file(const char *name) {
        _cleanup_topo_ struct topo *t = load_file(name);
        const struct expect *e = expect_for(name);

        if (!t)
                return;
        check_invariants(t, name);
        if (!ok(e, "%s: listed in the test table", name))
                return;
        is_int(t->nnode, e->nnode, "%s: NUMA nodes", name);
        is_int(count_l3(t), e->nl3, "%s: L3 domains", name);
        is_int(t->ncore, e->ncore, "%s: cores", name);
        is_int(t->npu, e->npu, "%s: PUs", name);
        is_int(t->smt, e->smt, "%s: SMT", name);
        is_int(t->npci, e->npci, "%s: PCI devices", name);
        ok(!t->is_this_system, "%s: not this system", name);
}

static int xml_filter(const struct dirent *d) {
        size_t n = strlen(d->d_name);

        return n > 4 && streq(d->d_name + n - 4, ".xml");
}

static void test_all_files(void) {
        const char *topologies = test_topologies_dir();
        struct dirent **list;
        int n;

        n = scandir(topologies, &list, xml_filter, alphasort);
        if (!ok(n >= (int)ELEMENTSOF(expects), "%s has the %zu topologies", topologies,
                ELEMENTSOF(expects)))
                return;
        for (int i = 0; i < n; i++) {
                test_file(list[i]->d_name);
                free(list[i]);
        }
        free(list);
}

/* --- oddities --------------------------------------------------------------- */

static int node_os(const struct topo *t, int n) {
        return (int)t->nodes[n].os;
}

static void test_power9(void) {
        _cleanup_topo_ struct topo *t = load_file("2s-power9-smt4-gpu-cpuless-numa.xml");
        int cpuless = 0;

        if (!t)
                return;
        for (int n = 0; n < t->nnode; n++)
                if (t->nodes[n].npu == 0 && t->nodes[n].ngroup == 0 && node_os(t, n) >= 252)
                        cpuless++;
        is_int(cpuless, 4, "power9: 4 CPU-less nodes P#252-255");
        is_int(t->nodes[0].npu + t->nodes[1].npu, 176, "power9: all PUs on nodes 0 and 8");
        is_int(node_os(t, 1), 8, "power9: sparse node numbering kept");
        is_int(t->nodes[2].first_group, t->ngroup, "power9: CPU-less first_group points past the end");
        ok(t->nodes[5].memory_known && t->nodes[5].memory_kib == 16 * GIB_KIB - 256 * 1024,
           "power9: GPU memory node size (%llu KiB)", (unsigned long long)t->nodes[5].memory_kib);
}

static void test_haswell_offline(void) {
        _cleanup_topo_ struct topo *t = load_file("2s-xeon-e5-2680v3-haswell-offline-cpus-node0.xml");
        static const unsigned offline[] = { 0, 1, 2, 3, 21, 22, 23 };
        int absent = 0;

        if (!t)
                return;
        for (size_t i = 0; i < ELEMENTSOF(offline); i++)
                absent += topo_pu_by_os(t, offline[i]) < 0;
        is_int(absent, 7, "haswell: offline PUs 0-3,21-23 absent");
        is_int(t->nnode, 1, "haswell: offline node 0 absent");
        is_int(node_os(t, 0), 1, "haswell: the node is P#1");
        is_int(t->nodes[0].npu, 17, "haswell: socket 0 cores attached to node 1");
        is_int(t->ngroup, 2, "haswell: one group per socket L3");
        ok(topo_pu_by_os(t, 4) >= 0 && topo_pu_by_os(t, 20) >= 0, "haswell: PUs 4 and 20 online");
}

static void test_2990wx(void) {
        _cleanup_topo_ struct topo *t = load_file("1s-threadripper-2990wx-memoryless-dies-2gpu.xml");
        int attached = 0;

        if (!t)
                return;
        for (int i = 0; i < t->npu; i++) {
                const struct topo_node *n = &t->nodes[topo_pu_node(t, i)];

                attached += n->memory_known && n->memory_kib > 0;
        }
        is_int(attached, 64, "2990wx: all 64 PUs attached to a node with memory");
        is_int(t->nodes[0].npu, 48, "2990wx: memory-less dies go to the lowest node (P#0)");
        is_int(t->nodes[1].npu, 16, "2990wx: node P#2 keeps its own die");
        ok(!t->distance, "2990wx: no distance matrix");
        is_int(topo_distance(t, 0, 1), 20, "2990wx: fallback remote distance");
}

static void test_hbmflat(void) {
        _cleanup_topo_ struct topo *t = load_file("2s-xeon-max9462-sapphirerapids-snc4-smt-hbmflat.xml");
        int ddr = 0, hbm = 0;

        if (!t)
                return;
        for (int n = 0; n < t->nnode; n++) {
                if (node_os(t, n) < 8)
                        ddr += t->nodes[n].npu == 16 && t->nodes[n].ngroup == 1;
                else
                        hbm += t->nodes[n].npu == 0 && t->nodes[n].memory_kib == 16 * GIB_KIB;
        }
        is_int(ddr, 8, "hbmflat: each DDR node P#0-7 owns its SNC domain's 16 PUs");
        is_int(hbm, 8, "hbmflat: HBM nodes P#8-15 have npu=0 and 16 GiB");
        is_int(topo_distance(t, 0, 8), 13, "hbmflat: DDR P#0 to its HBM P#8");
}

static void test_7h12(void) {
        _cleanup_topo_ struct topo *t = load_file("2s-epyc-7h12-rome-nps1-smt-4tb.xml");

        if (!t)
                return;
        is_int(t->nodes[0].ngroup, 16, "7h12: 16 L3 groups on node 0");
        is_int(t->nodes[1].ngroup, 16, "7h12: 16 L3 groups on node 1");
        is_int(t->groups[0].ncore, 4, "7h12: 4 cores per CCX");
        ok(t->nodes[0].memory_kib > 1900 * GIB_KIB, "7h12: ~2 TB on node 0");
}

static int pci_node_os(const struct topo *t, const char *busid) {
        for (int i = 0; i < t->npci; i++)
                if (streq(t->pcis[i].busid, busid))
                        return t->pcis[i].node >= 0 ? node_os(t, t->pcis[i].node) : -1;
        return -2;
}

static void test_8480p(void) {
        _cleanup_topo_ struct topo *t =
                load_file("2s-xeon-platinum8480p-sapphirerapids-snc4-smt-h100-ib.xml");
        bool split = true;

        if (!t)
                return;
        is_int(t->ngroup, 8, "8480p: SNC4 splits each socket L3 into 4 groups");
        for (int n = 0; n < t->nnode; n++)
                split = split && t->nodes[n].ngroup == 1 && t->groups[t->nodes[n].first_group].ncore == 14 &&
                        t->groups[t->nodes[n].first_group].l3 == n / 4;
        ok(split, "8480p: one group of 14 cores per node, L3 shared by 4 nodes");
        is_int(pci_node_os(t, "0000:5f:00.0"), 1, "8480p: H100 0000:5f:00.0 on P#1");
        is_int(pci_node_os(t, "0000:4e:00.0"), 3, "8480p: H100 0000:4e:00.0 on P#3");
        is_int(pci_node_os(t, "0000:db:00.0"), 5, "8480p: H100 0000:db:00.0 on P#5");
        is_int(pci_node_os(t, "0000:cb:00.0"), 7, "8480p: H100 0000:cb:00.0 on P#7");
        is_int(topo_distance(t, 0, 1), 12, "8480p: distance within socket");
        is_int(topo_distance(t, 0, 4), 21, "8480p: distance across sockets");
        ok(t->description && streq(t->description, "8 nodes, 8 L3 groups, 112 cores, 224 PUs"),
           "8480p: description '%s'", t->description);
}

static void test_hybrid(void) {
        _cleanup_topo_ struct topo *t = load_file("1s-core-i7-1370p-raptorlake-hybrid-laptop.xml");
        int pkind, ekind;

        if (!t)
                return;
        pkind = t->cores[0].kind;
        ekind = t->cores[t->ncore - 1].kind;
        ok(pkind >= 0 && ekind >= 0 && pkind != ekind, "i7-1370p: P and E cores differ in kind");
        is_int(t->cores[0].npu, 2, "i7-1370p: P-core has 2 PUs");
        is_int(t->cores[t->ncore - 1].npu, 1, "i7-1370p: E-core has 1 PU");
        is_int(t->pus[1].os, 1, "i7-1370p: P-core siblings adjacent (0,1)");
}

static void test_no_memory_sizes(void) {
        _cleanup_topo_ struct topo *t = load_file("2s-epyc-7451-naples-8numa-smt-cpuid.xml");

        if (!t)
                return;
        ok(!t->nodes[0].memory_known && t->nodes[0].memory_kib == 0, "7451 cpuid: memory unknown");
        ok(!t->distance, "7451 cpuid: no distances");
        is_int(t->nodes[0].ngroup, 2, "7451: 2 CCX L3 per node");
}

static void test_v1_no_numanode(void) {
        _cleanup_topo_ struct topo *t = load_file("1s-xeon-silver4215-cascadelake-smt-small.xml");

        if (!t)
                return;
        is_int(t->nnode, 1, "silver4215 v1: hwloc adds a NUMA node");
        is_int(t->nodes[0].npu, 16, "silver4215: all PUs on it");
        is_int(topo_pu_by_os(t, 8), 1, "silver4215: SMT siblings i/i+8");
}

/* --- synthetic -------------------------------------------------------------- */

static void test_synthetic_readme(void) {
        static const struct { const char *s; int nnode, nl3, ncore, npu, per_node_groups; } syn[] = {
                { "Package:2 [NUMANode(memory=192GiB)] L3Cache:1(size=28160KiB) L2Cache:20(size=1MiB) "
                  "L1dCache:1(size=32KiB) Core:1 PU:2(indexes=core)", 2, 2, 40, 80, 1 },
                { "Package:2 Group:4 [NUMANode(memory=64GiB)] L3Cache:8(size=16MiB) L2Cache:4(size=512KiB) "
                  "Core:1 PU:2(indexes=core)", 8, 64, 256, 512, 8 },
                { "Package:8 [NUMANode(memory=384GiB)] L3Cache:1(size=39424KiB) L2Cache:28(size=1MiB) "
                  "Core:1 PU:2(indexes=core)", 8, 8, 224, 448, 1 },
        };

        for (size_t i = 0; i < ELEMENTSOF(syn); i++) {
                _cleanup_topo_ struct topo *t = load_synthetic(syn[i].s, NULL);

                if (!t)
                        continue;
                check_invariants(t, "synthetic");
                is_int(t->nnode, syn[i].nnode, "synthetic %zu: nodes", i);
                is_int(count_l3(t), syn[i].nl3, "synthetic %zu: L3", i);
                is_int(t->ncore, syn[i].ncore, "synthetic %zu: cores", i);
                is_int(t->npu, syn[i].npu, "synthetic %zu: PUs", i);
                is_int(t->nodes[0].ngroup, syn[i].per_node_groups, "synthetic %zu: groups per node", i);
                ok(!t->distance && topo_distance(t, 0, t->nnode - 1) == 20,
                   "synthetic %zu: no matrix, fallback 20", i);
        }
}

static void test_synthetic_sibling(void) {
        _cleanup_topo_ struct topo *t = load_synthetic("Package:2 [NUMANode(memory=192GiB)] "
                                                       "L3Cache:1 Core:20 PU:2(indexes=core)", NULL);

        if (!t)
                return;
        is_int(t->pus[0].os, 0, "synthetic: core 0 first PU is 0");
        is_int(t->pus[1].os, 40, "synthetic: core 0 sibling is 40");
        is_int(t->nodes[0].memory_kib, 192 * GIB_KIB, "synthetic: memory from hwloc");
        ok(t->nodes[0].memory_known, "synthetic: memory known");
        is_int(t->nodes[0].hp[TOPO_PAGE_1G].total, 0, "synthetic: no hugepages without sysfs");
        ok(t->description && streq(t->description, "2 nodes, 2 L3 groups, 40 cores, 80 PUs"),
           "synthetic: description '%s'", t->description);
}

static void test_no_l3(void) {
        _cleanup_topo_ struct topo *t = load_synthetic("Package:2 [NUMANode] Core:3 PU:1", NULL);

        if (!t)
                return;
        check_invariants(t, "no L3");
        is_int(t->ngroup, 2, "no L3: one group per package");
        is_int(t->groups[0].l3, -1, "no L3: l3 index -1");
        is_int(t->smt, 1, "no SMT: smt 1");
        ok(!t->nodes[0].memory_known && t->nodes[0].memory_kib == 0, "no memory size: unknown");
        ok(t->description && streq(t->description, "2 nodes, 2 groups, 6 cores, 6 PUs"),
           "no L3: description '%s'", t->description);
}

static void test_no_core(void) {
        _cleanup_topo_ struct topo *t =
                load_synthetic("Package:2 [NUMANode(memory=1GiB)] L3Cache:1 PU:4", NULL);

        if (!t)
                return;
        check_invariants(t, "no Core level");
        is_int(t->ncore, 8, "no Core level: each PU is a core");
        is_int(t->nodes[1].npu, 4, "no Core level: PUs still on their node");
}

/* --- sysfs fixtures --------------------------------------------------------- */

static bool node_cpulist_matches(const struct topo *t, const char *root, int n) {
        _cleanup_bitmap_ hwloc_bitmap_t want = hwloc_bitmap_alloc(), got = hwloc_bitmap_alloc();
        _cleanup_free_ char *path = NULL, *list = NULL;

        path = xasprintf("/sys/devices/system/node/node%u/cpulist", t->nodes[n].os);
        if (hostfs_read(root, path, &list) < 0 || hwloc_bitmap_list_sscanf(want, list) < 0)
                return false;
        for (int i = 0; i < t->npu; i++)
                if (topo_pu_node(t, i) == n)
                        hwloc_bitmap_set(got, t->pus[i].os);
        return hwloc_bitmap_isequal(want, got);
}

static bool pool_is(const struct topo *t, int n, int page, uint64_t total, uint64_t free_) {
        return t->nodes[n].hp[page].total == total && t->nodes[n].hp[page].free == free_;
}

static void test_sysfs_2node(void) {
        _cleanup_free_ char *root = test_fixture("sysfs-2node");
        _cleanup_topo_ struct topo *t = load_synthetic(SYN_2NODE, root);

        if (!t)
                return;
        ok(node_cpulist_matches(t, root, 0) && node_cpulist_matches(t, root, 1),
           "2node: fixture cpulists match the synthetic topology");
        is_int(t->nodes[0].memory_kib, 8126464, "2node: node0 MemTotal from sysfs, not hwloc");
        is_int(t->nodes[1].memory_kib, 8257536, "2node: node1 MemTotal from sysfs");
        ok(t->nodes[1].avail_known, "2node: node1 available memory known");
        is_int(t->nodes[1].avail_kib, 4128768, "2node: node1 available = MemFree (no page cache keys)");
        ok(pool_is(t, 0, TOPO_PAGE_2M, 512, 500), "2node: node0 2M pool 512/500");
        ok(pool_is(t, 0, TOPO_PAGE_1G, 2, 2), "2node: node0 1G pool 2/2");
        ok(pool_is(t, 1, TOPO_PAGE_2M, 0, 0), "2node: node1 2M pool empty");
        ok(pool_is(t, 1, TOPO_PAGE_1G, 4, 1), "2node: node1 1G pool partly in use 4/1");
}

static void test_sysfs_4node(void) {
        _cleanup_free_ char *root = test_fixture("sysfs-4node");
        _cleanup_topo_ struct topo *t = load_synthetic(SYN_4NODE, root);
        bool lists = true;

        if (!t)
                return;
        for (int n = 0; n < t->nnode; n++)
                lists = lists && node_cpulist_matches(t, root, n);
        ok(lists, "4node: fixture cpulists match the synthetic topology");
        is_int(t->nnode, 4, "4node: 4 nodes");
        is_int(t->nodes[0].memory_kib, 4063232, "4node: node0 MemTotal from sysfs");
        ok(pool_is(t, 1, TOPO_PAGE_2M, 256, 128), "4node: node1 2M 256/128");
        ok(pool_is(t, 1, TOPO_PAGE_1G, 1, 0), "4node: node1 1G all in use");
        ok(pool_is(t, 2, TOPO_PAGE_1G, 2, 2), "4node: node2 1G 2/2");
        ok(pool_is(t, 3, TOPO_PAGE_2M, 1024, 1024), "4node: node3 2M 1024/1024");
        ok(pool_is(t, 3, TOPO_PAGE_1G, 0, 0), "4node: node3 without 1G directory has an empty pool");
}

static void copy_tree(const char *from, const char *to) {
        _cleanup_free_ char *cmd = xasprintf("cp -R '%s/.' '%s'", from, to);

        if (system(cmd) != 0)
                abort();
}

static void test_refresh(void) {
        _cleanup_free_ char *src = test_fixture("sysfs-2node");
        _cleanup_free_ char *cmd = NULL;
        _cleanup_topo_ struct topo *t = NULL;
        char root[] = "/tmp/test-topo.XXXXXX";
        const char *fr = "/sys/devices/system/node/node1/hugepages/hugepages-1048576kB/free_hugepages";

        if (!mkdtemp(root))
                abort();
        copy_tree(src, root);
        t = load_synthetic(SYN_2NODE, root);
        if (t) {
                is_int(hostfs_write(root, fr, "3\n"), 0, "refresh: pool freed in the fixture copy");
                is_int(topo_refresh_memory(t, root), 0, "refresh: re-read");
                ok(pool_is(t, 1, TOPO_PAGE_1G, 4, 3), "refresh: new free count seen");
                is_int(hostfs_write(root, fr, "9\n"), 0, "refresh: free above total");
                is_int(topo_refresh_memory(t, root), 0, "refresh: re-read again");
                ok(pool_is(t, 1, TOPO_PAGE_1G, 4, 4), "refresh: free capped at total");
                is_int(topo_refresh_memory(t, NULL), 0, "refresh without sysfs");
                is_int(t->nodes[0].memory_kib, 8 * GIB_KIB, "refresh without sysfs: hwloc memory back");
                is_int(hostfs_write(root, fr, "lots\n"), 0, "refresh: corrupt a pool file");
                is_int(topo_refresh_memory(t, root), -EINVAL, "refresh: corrupt file is -EINVAL");
        }
        topo_free(t);
        t = NULL;
        is_int(topo_load(TOPO_SOURCE_SYNTHETIC, SYN_2NODE, root, &t), -EINVAL,
               "load with a corrupt sysfs file fails");
        ok(!t, "load failure leaves ret untouched");
        cmd = xasprintf("rm -rf '%s'", root);
        if (system(cmd) != 0)
                ok(0, "cleanup %s", root);
}

static void test_sysfs_missing(void) {
        _cleanup_topo_ struct topo *t = load_synthetic(SYN_2NODE, "/nonexistent-sysfs-root");

        if (!t)
                return;
        is_int(t->nodes[0].memory_kib, 8 * GIB_KIB, "missing sysfs: hwloc memory kept");
        ok(pool_is(t, 0, TOPO_PAGE_2M, 0, 0) && pool_is(t, 0, TOPO_PAGE_1G, 0, 0),
           "missing sysfs: empty pools");
}

/* --- errors ----------------------------------------------------------------- */

static void test_errors(void) {
        char bad[] = "/tmp/test-topo-bad.XXXXXX";
        struct topo *t = (struct topo *)&t;     /* sentinel: must stay untouched */
        struct topo *const sentinel = t;
        int fd = mkstemp(bad);

        if (fd < 0 || write(fd, "<topology version=\"2.0\"><object type=\"Mach", 43) != 43)
                abort();
        close(fd);
        is_int(topo_load(TOPO_SOURCE_XML, "/nonexistent/topo.xml", NULL, &t), -ENOENT, "missing XML");
        ok(topo_load(TOPO_SOURCE_XML, bad, NULL, &t) < 0, "truncated XML fails");
        is_int(topo_load(TOPO_SOURCE_XML, NULL, NULL, &t), -EINVAL, "XML without a path");
        is_int(topo_load(TOPO_SOURCE_SYNTHETIC, "Package:2 Bogus:3", NULL, &t), -EINVAL, "bad synthetic");
        is_int(topo_load(TOPO_SOURCE_SYNTHETIC, "", NULL, &t), -EINVAL, "empty synthetic");
        is_int(topo_load(TOPO_SOURCE_SYNTHETIC, NULL, NULL, &t), -EINVAL, "synthetic without a string");
        is_int(topo_load(TOPO_SOURCE_LIVE, "x", NULL, &t), -EINVAL, "live with an argument");
        is_int(topo_load((enum topo_source)42, "x", NULL, &t), -EINVAL, "unknown source");
        is_int(topo_load(TOPO_SOURCE_XML, "/tmp", NULL, &t) < 0, 1, "directory as XML");
        ok(t == sentinel, "ret untouched on failure");
        ok(topo_free(NULL) == NULL, "topo_free(NULL)");
        unlink(bad);
}

/* --- this machine ----------------------------------------------------------- */

static void test_live(void) {
        _cleanup_topo_ struct topo *t = NULL;
        cpu_set_t set;
        uint64_t nr = 0;
        int r;

        r = topo_load(TOPO_SOURCE_LIVE, NULL, "/", &t);
        if (!ok(r == 0, "live host loads (%d)", r))
                return;
        check_invariants(t, "live");
        ok(t->is_this_system, "live: is this system");
        if (sched_getaffinity(0, sizeof set, &set) == 0)
                is_int(t->npu, CPU_COUNT(&set), "live: PUs = our allowed CPUs");
        ok(t->nodes[0].memory_known && t->nodes[0].memory_kib > 0, "live: node memory known");
        if (hostfs_read_u64("/", "/sys/devices/system/node/node0/hugepages/hugepages-2048kB/nr_hugepages",
                            &nr) == 0 && t->nodes[0].os == 0)
                is_int(t->nodes[0].hp[TOPO_PAGE_2M].total, nr, "live: 2M pool from sysfs");
        printf("# live: %s\n", t->description);
}

/* bitmap_parse_list: the one checked CPU list parser. hwloc's own parser takes
 * "0-3,-5" (a set whose last CPU is -5: formatting it never ends) and "3-" (an
 * infinite set); each must be refused, with the output left untouched. */
static void test_parse_list(void) {
        static const char *bad[] = { "0-3,-5", "-5", "3-", "0-", "1,,2", "1,", ",1", "5-3",
                                     "1 2", "0x3", "3a", "1-2-3", "70000", "0-65536", "^2" };
        static const struct { const char *in, *out; unsigned max; } good[] = {
                { "0-3,8", "0-3,8", CPU_LIST_MAX }, { " 0 - 3 , 8 ", "0-3,8", CPU_LIST_MAX },
                { "2,4-5\n", "2,4-5", CPU_LIST_MAX }, { "", "", CPU_LIST_MAX }, { "\n", "", CPU_LIST_MAX },
                { "1\n2", "1", CPU_LIST_MAX },
                { "8191", "8191", 8191 }, { "65535", "65535", CPU_LIST_MAX },
        };
        _cleanup_bitmap_ hwloc_bitmap_t m = bitmap_new();

        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                hwloc_bitmap_only(m, 42);
                ok(bitmap_parse_list(bad[i], CPU_LIST_MAX, m) == -EINVAL && hwloc_bitmap_isequal(m, m) &&
                   hwloc_bitmap_weight(m) == 1 && hwloc_bitmap_isset(m, 42),
                   "CPU list \"%s\" refused, the set untouched", bad[i]);
        }
        ok(bitmap_parse_list("8192", 8191, m) == -EINVAL, "a CPU above the bound is refused");
        for (size_t i = 0; i < ELEMENTSOF(good); i++) {
                _cleanup_free_ char *s = NULL;

                ok(bitmap_parse_list(good[i].in, good[i].max, m) == 0, "CPU list \"%s\" parses", good[i].in);
                hwloc_bitmap_list_asprintf(&s, m);
                is_str(s, good[i].out, "... to %s", good[i].out);
        }
}

int main(void) {
        test_parse_list();
        test_all_files();
        test_power9();
        test_haswell_offline();
        test_2990wx();
        test_hbmflat();
        test_7h12();
        test_8480p();
        test_hybrid();
        test_no_memory_sizes();
        test_v1_no_numanode();
        test_synthetic_readme();
        test_synthetic_sibling();
        test_no_l3();
        test_no_core();
        test_sysfs_2node();
        test_sysfs_4node();
        test_refresh();
        test_sysfs_missing();
        test_errors();
        test_live();
        return tap_done();
}
