/* Hugepage reservation: plan from config, act on fixture sysfs trees
 * (tests/fixtures/hp-*) copied to a temporary directory, and a fake kernel
 * (an ops table over the same files) that grants only part of a request. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>

#include "../../daemon/hugepages-priv.h"
#include "kvmtune/hostfs.h"
#include "kvmtune/hugepages.h"
#include "kvmtune/placement.h"
#include "kvmtune/pools.h"
#include "../../lib/hugepages-priv.h"
#include "../../lib/qemuproc-priv.h"
#include "kvmtune/util.h"
#include "../../lib/conf-priv.h"
#include "tap.h"
#include "test-data.h"

#define POOL_DIR "/sys/devices/system/node/node%u/hugepages/hugepages-%skB/%s"

/* --- helpers -------------------------------------------------------------- */

/* Copies $FIXTURES/name to a fresh temporary directory; caller frees. */
static char *fixture_copy(const char *name) {
        char tmpl[] = "/tmp/test-hugepages.XXXXXX";
        _cleanup_free_ char *cmd = NULL;

        if (!mkdtemp(tmpl))
                return NULL;
        cmd = xasprintf("cp -R '%s/%s/.' '%s'", test_fixtures_dir(), name, tmpl);
        if (system(cmd) != 0)
                return NULL;
        return xstrdup(tmpl);
}

static void fixture_remove(char *dir) {
        _cleanup_free_ char *cmd = NULL;

        if (!dir)
                return;
        cmd = xasprintf("rm -rf '%s'", dir);
        if (system(cmd) != 0)
                printf("# could not remove %s\n", dir);
        free(dir);
}

static const char *kb(int size) {
        return size == TOPO_PAGE_1G ? "1048576" : "2048";
}

static uint64_t pool_file(const char *root, unsigned node, int size, const char *file) {
        _cleanup_free_ char *p = xasprintf(POOL_DIR, node, kb(size), file);
        uint64_t v = UINT64_MAX;

        return hostfs_read_u64(root, p, &v) < 0 ? UINT64_MAX : v;
}

/* Sets a pool file's mtime to the epoch and returns it back later, so a test
 * can tell "nothing was written" from "the same value was written". */
static void pool_age(const char *root, unsigned node, int size) {
        _cleanup_free_ char *rel = xasprintf(POOL_DIR, node, kb(size), "nr_hugepages");
        _cleanup_free_ char *p = hostfs_path(root, rel);
        struct timeval tv[2] = { { 1, 0 }, { 1, 0 } };

        if (utimes(p, tv) < 0)
                printf("# utimes %s: %s\n", p, strerror(errno));
}

static long pool_mtime(const char *root, unsigned node, int size) {
        _cleanup_free_ char *rel = xasprintf(POOL_DIR, node, kb(size), "nr_hugepages");
        _cleanup_free_ char *p = hostfs_path(root, rel);
        struct stat st;

        return stat(p, &st) < 0 ? -1 : (long)st.st_mtime;
}

/* A fake kernel over the fixture files: grants at most limit[node][size]
 * persistent pages; each compaction frees room for 'per_compaction' more. Like
 * the kernel, nr_hugepages then shows the surplus pages on top. */
struct fake_kernel {
        uint64_t limit[4][TOPO_PAGE_SIZES];
        uint64_t per_compaction;
        uint64_t max_written;           /* largest persistent count asked for */
        int writes, compactions;
        unsigned compacted_node;        /* node of the last compaction */
};

static int fake_read(const struct hugepages_host *h, unsigned node, int size,
                     struct hugepages_pool *ret) {
        return hugepages_read_pool(h->root, node, size, ret);
}

static int fake_write(const struct hugepages_host *h, unsigned node, int size, uint64_t count) {
        struct fake_kernel *k = h->userdata;
        uint64_t lim = node < 4 ? k->limit[node][size] : 0;
        struct hugepages_pool pool = { 0 };
        int r = hugepages_read_pool(h->root, node, size, &pool);

        if (r < 0)
                return r;
        k->writes++;
        if (count > k->max_written)
                k->max_written = count;
        return hugepages_write_pool(h->root, node, size, (count < lim ? count : lim) + pool.surplus);
}

static int fake_compact(const struct hugepages_host *h, unsigned node) {
        struct fake_kernel *k = h->userdata;

        k->compactions++;
        k->compacted_node = node;
        for (int n = 0; n < 4; n++)
                for (int s = 0; s < TOPO_PAGE_SIZES; s++)
                        k->limit[n][s] += k->per_compaction;
        return hugepages_compact(h->root, node);
}

static const struct hugepages_ops fake_ops = { fake_read, fake_write, fake_compact };

static void fake_init(struct fake_kernel *k, uint64_t limit) {
        memset(k, 0, sizeof *k);
        for (int n = 0; n < 4; n++)
                for (int s = 0; s < TOPO_PAGE_SIZES; s++)
                        k->limit[n][s] = limit;
}

/* A host of n nodes, os numbers 0..n-1; memkib[i] == 0 marks a memoryless node.
 * No node has CPUs (topo_cpus gives them some). */
static struct topo *topo_nodes(int n, const uint64_t *memkib) {
        struct topo *t = xcalloc(1, sizeof *t);

        t->nnode = n;
        t->nodes = xcalloc((size_t)n, sizeof *t->nodes);
        for (int i = 0; i < n; i++) {
                t->nodes[i].os = (unsigned)i;
                t->nodes[i].memory_known = memkib != NULL;
                t->nodes[i].memory_kib = memkib ? memkib[i] : 0;
        }
        return t;
}

/* Sets each node's PU count; npu[i] == 0 marks a memory-only node. */
static struct topo *topo_cpus(struct topo *t, const int *npu) {
        for (int i = 0; i < t->nnode; i++)
                t->nodes[i].npu = npu[i];
        return t;
}

static void topo_nodes_free(struct topo *t) {
        free(t->nodes);
        free(t);
}

static void conf_per_node(struct conf *c, int size, int n, const unsigned *os,
                          const unsigned long long *count) {
        struct conf_hugepages *h = &c->hugepages[size];

        h->set = true;
        h->per_node = true;
        h->nnode = n;
        for (int i = 0; i < n; i++) {
                h->node_os[i] = os[i];
                h->count[i] = count[i];
        }
}

static void conf_total(struct conf *c, int size, unsigned long long total) {
        c->hugepages[size].set = true;
        c->hugepages[size].per_node = false;
        c->hugepages[size].total = total;
}

/* Runs hugepages_reserve_run with stdout captured; returns the exit status. */
static int reserve_capture(const struct conf *c, const struct topo *t,
                           const struct hugepages_host *h, char **ret_out) {
        char path[] = "/tmp/test-hugepages-out.XXXXXX";
        int fd, saved, status;

        fflush(stdout);
        fd = mkstemp(path);
        saved = dup(STDOUT_FILENO);
        if (fd < 0 || saved < 0)
                return -1;
        dup2(fd, STDOUT_FILENO);
        status = hugepages_reserve_run(c, t, h);
        fflush(stdout);
        dup2(saved, STDOUT_FILENO);
        close(saved);
        close(fd);
        if (hostfs_read(NULL, path, ret_out) < 0)
                *ret_out = xstrdup("");
        unlink(path);
        return status;
}

/* --- plan ----------------------------------------------------------------- */

static void test_sizes(void) {
        is_str(hugepages_size_name(TOPO_PAGE_2M), "2M", "size 0 is 2M");
        is_str(hugepages_size_name(TOPO_PAGE_1G), "1G", "size 1 is 1G");
        ok(hugepages_size_name(2) == NULL && hugepages_size_name(-1) == NULL, "bad size index has no name");
        is_int(hugepages_size_kib(TOPO_PAGE_1G), 1048576, "1G is 1048576 KiB");
        is_int(hugepages_size_from_string("1G"), TOPO_PAGE_1G, "\"1G\" parses");
        is_int(hugepages_size_from_string("2MiB"), TOPO_PAGE_2M, "\"2MiB\" parses");
        is_int(hugepages_size_from_string("2048kB"), TOPO_PAGE_2M, "\"2048kB\" parses");
        is_int(hugepages_size_from_string("4M"), -EINVAL, "4M is not a hugepage size");
        is_int(hugepages_size_from_string("big"), -EINVAL, "garbage refused");
        is_int(hugepages_size_from_string(NULL), -EINVAL, "NULL refused");
}

static void test_plan_per_node(void) {
        struct topo *t = topo_nodes(2, (const uint64_t[]){ 16 << 20, 16 << 20 });
        struct conf c = { 0 };
        struct hugepages_plan p = { 0 };
        char err[256] = "";

        conf_per_node(&c, TOPO_PAGE_1G, 2, (const unsigned[]){ 0, 1 },
                      (const unsigned long long[]){ 16, 12 });
        is_int(hugepages_plan(&c, t, &p, err, sizeof err), 0, "per-node plan");
        is_int(p.ntarget, 2, "two targets");
        ok(p.ntarget == 2 && p.targets[0].node_os == 0 && p.targets[0].count == 16 &&
           p.targets[1].node_os == 1 && p.targets[1].count == 12 &&
           p.targets[1].size == TOPO_PAGE_1G, "counts as given: 0:16 1:12");
        hugepages_plan_done(&p);
        topo_nodes_free(t);
}

static void test_plan_total(void) {
        struct topo *t = topo_nodes(4, (const uint64_t[]){ 32 << 20, 32 << 20, 32 << 20, 0 });
        struct conf c = { 0 };
        struct hugepages_plan p = { 0 };
        char err[256] = "";

        conf_total(&c, TOPO_PAGE_2M, 10);
        is_int(hugepages_plan(&c, t, &p, err, sizeof err), 0, "total plan");
        is_int(p.ntarget, 3, "memoryless node 3 gets no share");
        ok(p.ntarget == 3 && p.targets[0].count == 4 && p.targets[1].count == 3 &&
           p.targets[2].count == 3 && p.targets[2].node_os == 2,
           "10 pages over 3 nodes: remainder to the lowest node (4,3,3)");
        hugepages_plan_done(&p);
        topo_nodes_free(t);

        t = topo_nodes(2, NULL);
        c = (struct conf){ 0 };
        conf_total(&c, TOPO_PAGE_1G, 7);
        is_int(hugepages_plan(&c, t, &p, err, sizeof err), 0, "total plan, memory unknown");
        ok(p.ntarget == 2 && p.targets[0].count == 4 && p.targets[1].count == 3,
           "memory unknown: spread over all nodes (4,3)");
        hugepages_plan_done(&p);
        topo_nodes_free(t);
}

/* Flat-mode HBM, CXL, GPU memory: nodes with memory and no CPUs. Placement
 * never puts a guest's memory there, so a total goes to the nodes with CPUs. */
static void test_plan_total_memory_only(void) {
        struct topo *t = topo_cpus(topo_nodes(4, (const uint64_t[]){ 32 << 20, 32 << 20, 16 << 20, 0 }),
                                   (const int[]){ 8, 8, 0, 4 });
        struct conf c = { 0 };
        struct hugepages_plan p = { 0 };
        char err[256] = "";

        conf_total(&c, TOPO_PAGE_1G, 33);
        is_int(hugepages_plan(&c, t, &p, err, sizeof err), 0, "total plan with a memory-only node");
        is_int(p.ntarget, 2, "memory-only node 2 and memoryless node 3 get no share");
        ok(p.ntarget == 2 && p.targets[0].node_os == 0 && p.targets[0].count == 17 &&
           p.targets[1].node_os == 1 && p.targets[1].count == 16,
           "33 pages over the nodes with CPUs: 17,16");
        hugepages_plan_done(&p);

        topo_cpus(t, (const int[]){ 0, 0, 0, 4 });
        is_int(hugepages_plan(&c, t, &p, err, sizeof err), 0, "no node with memory has CPUs");
        ok(p.ntarget == 3 && p.targets[0].count == 11 && p.targets[2].node_os == 2 &&
           p.targets[2].count == 11, "then every node with memory: 11,11,11");
        hugepages_plan_done(&p);
        topo_nodes_free(t);
}

/* The real flat-mode HBM export: DDR nodes 0-7 hold the CPUs, HBM nodes 8-15
 * share their cpusets but no core belongs to them. */
static void test_plan_total_hbmflat(void) {
        _cleanup_free_ char *xml = test_topology("2s-xeon-max9462-sapphirerapids-snc4-smt-hbmflat.xml");
        struct hugepages_plan p = { 0 };
        struct conf c = { 0 };
        struct topo *t = NULL;
        char err[256] = "";
        bool ddr_only = true;

        if (!ok(topo_load(TOPO_SOURCE_XML, xml, NULL, &t) == 0 && t->nnode == 16,
                "hbmflat: 16 NUMA nodes")) {
                topo_free(t);
                return;
        }
        conf_total(&c, TOPO_PAGE_1G, 32);
        is_int(hugepages_plan(&c, t, &p, err, sizeof err), 0, "hbmflat: 1G = 32");
        is_int(p.ntarget, 8, "hbmflat: spread over the 8 DDR nodes");
        for (int i = 0; i < p.ntarget; i++)
                ddr_only &= p.targets[i].node_os == (unsigned)i && p.targets[i].count == 4;
        ok(ddr_only, "hbmflat: 4 pages on each of nodes 0-7, none on the HBM nodes 8-15");
        hugepages_plan_done(&p);
        topo_free(t);
}

static void test_plan_errors(void) {
        struct topo *t = topo_nodes(2, NULL);
        struct conf c = { 0 };
        struct hugepages_plan p = { .ntarget = 99 };
        char err[256] = "";

        conf_per_node(&c, TOPO_PAGE_1G, 2, (const unsigned[]){ 0, 5 },
                      (const unsigned long long[]){ 4, 4 });
        is_int(hugepages_plan(&c, t, &p, err, sizeof err), -EINVAL, "node 5 on a 2-node host refused");
        ok(strstr(err, "NUMA node 5 does not exist") != NULL, "error names the node: %s", err);
        is_int(p.ntarget, 99, "plan untouched on error");

        conf_per_node(&c, TOPO_PAGE_1G, 2, (const unsigned[]){ 1, 1 },
                      (const unsigned long long[]){ 4, 4 });
        is_int(hugepages_plan(&c, t, &p, err, sizeof err), -EINVAL, "node listed twice refused");
        ok(strstr(err, "listed twice") != NULL, "error says so: %s", err);

        c = (struct conf){ 0 };
        is_int(hugepages_plan(&c, t, &p, err, sizeof err), 0, "no [hugepages]: empty plan");
        is_int(p.ntarget, 0, "nothing to do");
        hugepages_plan_done(&p);
        topo_nodes_free(t);
}

/* --- act on fixture files ------------------------------------------------- */

static void test_set_pool_files(void) {
        char *root = fixture_copy("hp-2node");
        struct hugepages_result r;
        char line[256];

        if (!ok(root != NULL, "copied hp-2node"))
                return;
        is_int(hugepages_set_pool(root, 0, TOPO_PAGE_2M, 100, &r), 0, "node 0 2M: set 100");
        ok(r.reserved == 100 && r.writes == 1 && !hugepages_result_short(&r), "reserved 100 in one write");
        is_int(pool_file(root, 0, TOPO_PAGE_2M, "nr_hugepages"), 100, "nr_hugepages file holds 100");
        is_str(hugepages_format_result(&r, line, sizeof line), "node 0 2M: 100 requested, 100 reserved",
               "report line");

        pool_age(root, 0, TOPO_PAGE_2M);
        is_int(hugepages_set_pool(root, 0, TOPO_PAGE_2M, 100, &r), 0, "set 100 again");
        is_int(r.writes, 0, "idempotent: no write counted");
        is_int(pool_mtime(root, 0, TOPO_PAGE_2M), 1, "idempotent: file not written (mtime kept)");
        is_str(hugepages_format_result(&r, line, sizeof line),
               "node 0 2M: 100 requested, 100 reserved (unchanged)", "unchanged report line");

        /* node1 2M: 512 pages, 500 free: 12 in use. */
        is_int(hugepages_set_pool(root, 1, TOPO_PAGE_2M, 0, &r), 0, "node 1 2M: shrink to 0");
        ok(r.clamped && r.target == 12 && r.in_use == 12, "clamped to the 12 pages in use");
        is_int(pool_file(root, 1, TOPO_PAGE_2M, "nr_hugepages"), 12, "file holds 12, not 0");
        is_str(hugepages_format_result(&r, line, sizeof line),
               "node 1 2M: 0 requested, 12 reserved (clamped: 12 pages in use, not shrinking below)",
               "clamp is reported");
        is_int(hugepages_set_pool(root, 1, TOPO_PAGE_2M, 20, &r), 0, "node 1 2M: shrink to 20");
        ok(!r.clamped && r.reserved == 20, "20 >= in use: no clamp");
        fixture_remove(root);
}

static void test_set_pool_errors(void) {
        char *root = fixture_copy("hp-4node");
        _cleanup_free_ char *dir = NULL, *cmd = NULL;
        struct hugepages_result r;
        char line[256];

        if (!ok(root != NULL, "copied hp-4node"))
                return;
        is_int(hugepages_set_pool(root, 7, TOPO_PAGE_1G, 4, &r), -ENODEV, "node 7 does not exist");
        is_int(r.error, -ENODEV, "error kept in the result");
        is_str(hugepages_format_result(&r, line, sizeof line),
               "node 7 1G: 4 requested, error: no such NUMA node", "error line");
        is_int(hugepages_set_pool(root, 0, 5, 4, &r), -EINVAL, "size index 5 refused");
        dir = xasprintf("%s/sys/devices/system/node/node3/hugepages/hugepages-1048576kB", root);
        cmd = xasprintf("rm -rf '%s'", dir);
        ok(system(cmd) == 0, "removed node3's 1G pool");
        is_int(hugepages_set_pool(root, 3, TOPO_PAGE_1G, 1, &r), -EOPNOTSUPP, "node without that size");
        /* node2 1G: 8 pages, 2 free: 6 in use. */
        is_int(hugepages_set_pool(root, 2, TOPO_PAGE_1G, 2, &r), 0, "node 2 1G: shrink to 2");
        ok(r.clamped && r.reserved == 6, "clamped to 6 in use");
        fixture_remove(root);
}

/* --- the fake kernel: partial grants, compaction, retries ------------------ */

static void test_partial_grant(void) {
        char *root = fixture_copy("hp-2node");
        struct fake_kernel k;
        struct hugepages_host h = { &fake_ops, root, &k };
        struct hugepages_result r;
        char line[256];
        _cleanup_free_ char *compact = NULL;

        if (!ok(root != NULL, "copied hp-2node"))
                return;
        fake_init(&k, 12);
        is_int(hugepages_apply_pool(&h, 1, TOPO_PAGE_1G, 16, &r), 0, "node 1 1G: 16 asked, kernel grants 12");
        ok(hugepages_result_short(&r) && r.reserved == 12, "short: 12 reserved");
        is_int(r.writes, HUGEPAGES_MAX_TRIES, "bounded retries");
        is_int(k.compactions, HUGEPAGES_MAX_TRIES - 1, "compacted before each retry");
        is_str(hugepages_format_result(&r, line, sizeof line),
               "node 1 1G: 16 requested, 12 reserved (short by 4 after 3 tries with 2 compactions)",
               "short report line");
        ok(hostfs_read(root, "/proc/sys/vm/compact_memory", &compact) >= 0 && streq(compact, "1\n"),
           "compact_memory written with 1");

        fake_init(&k, 10);
        k.per_compaction = 4;
        is_int(hugepages_apply_pool(&h, 0, TOPO_PAGE_1G, 16, &r), 0, "node 0 1G: 16 asked, 10 at first");
        ok(!hugepages_result_short(&r) && r.reserved == 16, "compaction freed enough: 16 reserved");
        ok(r.writes == 3 && k.compactions == 2, "three writes, two compactions (10, 14, 16)");

        fake_init(&k, 100);
        is_int(hugepages_apply_pool(&h, 0, TOPO_PAGE_1G, 16, &r), 0, "again with a willing kernel");
        ok(r.writes == 0 && k.writes == 0 && k.compactions == 0, "idempotent: the kernel saw no write");
        fixture_remove(root);
}

/* Compaction: the node's own compact file where the kernel has one, else
 * the host-wide compact_memory. */
static void test_compact_per_node(void) {
        char *root = fixture_copy("hp-hbm");
        _cleanup_free_ char *node0 = NULL, *node1 = NULL, *host = NULL, *node2 = NULL, *rm = NULL;
        struct fake_kernel k;
        struct hugepages_host h = { &fake_ops, root, &k };
        struct hugepages_result r;

        if (!ok(root != NULL, "copied hp-hbm"))
                return;
        is_int(hugepages_compact(root, 0), 0, "compact node 0");
        ok(hostfs_read(root, "/sys/devices/system/node/node0/compact", &node0) >= 0 &&
           streq(node0, "1\n"), "node0/compact written with 1");
        ok(hostfs_read(root, "/proc/sys/vm/compact_memory", &host) >= 0 && streq(host, ""),
           "compact_memory left alone");

        fake_init(&k, 12);
        is_int(hugepages_apply_pool(&h, 1, TOPO_PAGE_1G, 16, &r), 0, "node 1 1G: 16 asked, 12 granted");
        ok(k.compactions == HUGEPAGES_MAX_TRIES - 1 && k.compacted_node == 1 && r.compactions == 2,
           "the short node is the one compacted");
        ok(hostfs_read(root, "/sys/devices/system/node/node1/compact", &node1) >= 0 &&
           streq(node1, "1\n"), "node1/compact written");
        free(host);
        host = NULL;
        ok(hostfs_read(root, "/proc/sys/vm/compact_memory", &host) >= 0 && streq(host, ""),
           "compact_memory still untouched");

        rm = xasprintf("rm '%s/sys/devices/system/node/node2/compact'", root);
        ok(system(rm) == 0, "a kernel without node2/compact");
        is_int(hugepages_compact(root, 2), 0, "compact node 2");
        free(host);
        host = NULL;
        ok(hostfs_read(root, "/proc/sys/vm/compact_memory", &host) >= 0 && streq(host, "1\n"),
           "no per-node file: compact_memory written instead");
        ok(hostfs_read(root, "/sys/devices/system/node/node2/compact", &node2) == -ENOENT,
           "no per-node file created");
        fixture_remove(root);
}

static void test_cmdline(void) {
        struct hugepages_result res[4] = {
                { .node_os = 0, .size = TOPO_PAGE_1G, .requested = 16, .target = 16, .reserved = 16 },
                { .node_os = 1, .size = TOPO_PAGE_1G, .requested = 16, .target = 16, .reserved = 12 },
                { .node_os = 0, .size = TOPO_PAGE_2M, .requested = 8, .target = 8, .reserved = 8 },
                { .node_os = 1, .size = TOPO_PAGE_2M, .requested = 8, .target = 8, .reserved = 8 },
        };
        char *s;

        s = hugepages_boot_cmdline(res, 4, true);
        is_str(s, "hugepagesz=1G hugepages=0:16,1:16", "per-node boot syntax for the short size only");
        free(s);
        s = hugepages_boot_cmdline(res, 4, false);
        is_str(s, "hugepagesz=1G hugepages=32", "plain total on old kernels");
        free(s);
        res[3].reserved = 2;
        s = hugepages_boot_cmdline(res, 4, true);
        is_str(s, "hugepagesz=2M hugepages=0:8,1:8 hugepagesz=1G hugepages=0:16,1:16", "both sizes short");
        free(s);
        res[1].reserved = 16;
        res[3].reserved = 8;
        ok(hugepages_boot_cmdline(res, 4, true) == NULL, "nothing short: no command line");

        ok(hugepages_kernel_has_node_syntax("5.16.0"), "5.16 has per-node syntax");
        ok(hugepages_kernel_has_node_syntax("6.1.0-18-amd64"), "6.1 has it");
        ok(hugepages_kernel_has_node_syntax("10.2"), "10.2 has it");
        ok(!hugepages_kernel_has_node_syntax("5.15.0-91-generic"), "5.15 has not");
        ok(!hugepages_kernel_has_node_syntax("4.19.0"), "4.19 has not");
        ok(!hugepages_kernel_has_node_syntax("linux"), "garbage: assume not");
        ok(!hugepages_kernel_has_node_syntax(NULL), "unknown: assume not");
}

static void test_mounts(void) {
        _cleanup_free_ char *dir = test_fixture("hp-4node");
        _cleanup_free_ char *text = NULL;
        char *paths[TOPO_PAGE_SIZES];

        ok(hostfs_read(dir, "/proc/mounts", &text) > 0, "read hp-4node mounts");
        is_int(hugepages_find_mounts(text, 2048, paths), 2, "two hugetlbfs mounts");
        is_str(paths[TOPO_PAGE_2M], "/dev/hugepages", "no pagesize option: default size (2M)");
        is_str(paths[TOPO_PAGE_1G], "/dev/huge pages1G", "pagesize=1024M is 1G, \\040 unescaped");
        free(paths[0]);
        free(paths[1]);
        is_int(hugepages_find_mounts("hugetlbfs /mnt/h hugetlbfs rw 0 0\n", 1048576, paths), 1,
               "default size 1G");
        ok(paths[TOPO_PAGE_2M] == NULL && paths[TOPO_PAGE_1G] && streq(paths[TOPO_PAGE_1G], "/mnt/h"),
           "bare mount counts as the default size");
        is_str(hugepages_mount_point(TOPO_PAGE_2M, paths), "/dev/hugepages", "2M mount point");
        is_str(hugepages_mount_point(TOPO_PAGE_1G, paths), "/dev/hugepages1G", "1G mount point");
        free(paths[1]);
        is_int(hugepages_find_mounts("garbage\n\n tmpfs /x\n", 2048, paths), 0, "garbage: none");
        is_int(hugepages_find_mounts(NULL, 2048, paths), 0, "no mounts text: none");
}

/* --- the --reserve-hugepages run ------------------------------------------- */

static void test_reserve_files(void) {
        char *root = fixture_copy("hp-2node");
        struct topo *t = topo_nodes(2, (const uint64_t[]){ 16 << 20, 16 << 20 });
        struct hugepages_host h = { &hugepages_ops_hostfs, root, NULL };
        struct conf c = { 0 };
        char *out = NULL;

        if (!ok(root != NULL, "copied hp-2node"))
                return;
        conf_per_node(&c, TOPO_PAGE_1G, 2, (const unsigned[]){ 0, 1 },
                      (const unsigned long long[]){ 2, 4 });
        conf_total(&c, TOPO_PAGE_2M, 101);
        is_int(reserve_capture(&c, t, &h, &out), 0, "reserve on hp-2node: exit 0");
        ok(strstr(out, "node 0 2M: 51 requested, 51 reserved\n") &&
           strstr(out, "node 1 2M: 50 requested, 50 reserved\n") &&
           strstr(out, "node 0 1G: 2 requested, 2 reserved\n") &&
           strstr(out, "node 1 1G: 4 requested, 4 reserved (unchanged)\n"), "one line per node and size");
        ok(!strstr(out, "kernel command line"), "nothing short: no command line");
        ok(strstr(out, "missing hugetlbfs mount for 1G pages; to add it: mkdir -p /dev/hugepages1G && "
                       "mount -t hugetlbfs -o pagesize=1G hugetlbfs /dev/hugepages1G\n") != NULL,
           "missing 1G mount reported with the command");
        ok(strstr(out, "hugetlbfs_mount = [\"/dev/hugepages\", \"/dev/hugepages1G\"]") != NULL,
           "qemu.conf line lists both mounts");
        ok(!strstr(out, "missing hugetlbfs mount for 2M"), "2M mount exists");
        is_int(pool_file(root, 0, TOPO_PAGE_2M, "nr_hugepages"), 51, "node 0 2M file: 51");
        is_int(pool_file(root, 0, TOPO_PAGE_1G, "nr_hugepages"), 2, "node 0 1G file: 2");
        free(out);

        for (int n = 0; n < 2; n++)
                for (int s = 0; s < TOPO_PAGE_SIZES; s++)
                        pool_age(root, (unsigned)n, s);
        is_int(reserve_capture(&c, t, &h, &out), 0, "second run: exit 0");
        ok(strstr(out, "node 0 2M: 51 requested, 51 reserved (unchanged)") &&
           strstr(out, "node 0 1G: 2 requested, 2 reserved (unchanged)"), "second run changes nothing");
        ok(pool_mtime(root, 0, TOPO_PAGE_2M) == 1 && pool_mtime(root, 1, TOPO_PAGE_2M) == 1 &&
           pool_mtime(root, 0, TOPO_PAGE_1G) == 1 && pool_mtime(root, 1, TOPO_PAGE_1G) == 1,
           "second run wrote no file");
        free(out);

        conf_per_node(&c, TOPO_PAGE_1G, 1, (const unsigned[]){ 3 }, (const unsigned long long[]){ 2 });
        is_int(reserve_capture(&c, t, &h, &out), 1, "node 3 on a 2-node host: exit 1");
        ok(!strstr(out, "requested"), "nothing applied after a plan error");
        free(out);
        topo_nodes_free(t);
        fixture_remove(root);
}

static void test_reserve_short(void) {
        char *root = fixture_copy("hp-4node");
        struct topo *t = topo_nodes(4, (const uint64_t[]){ 32 << 20, 32 << 20, 32 << 20, 0 });
        struct fake_kernel k;
        struct hugepages_host h = { &fake_ops, root, &k };
        struct conf c = { 0 };
        char *out = NULL;

        if (!ok(root != NULL, "copied hp-4node"))
                return;
        fake_init(&k, 16);
        k.limit[1][TOPO_PAGE_1G] = 12;
        conf_total(&c, TOPO_PAGE_1G, 48);
        is_int(reserve_capture(&c, t, &h, &out), 1, "reserve with a stingy node 1: exit 1");
        ok(strstr(out, "node 0 1G: 16 requested, 16 reserved\n") &&
           strstr(out, "node 1 1G: 16 requested, 12 reserved (short by 4 after 3 tries with 2 compactions)\n") &&
           strstr(out, "node 2 1G: 16 requested, 16 reserved\n"), "48 over nodes 0-2, node 1 short by 4");
        ok(strstr(out, "kernel command line: hugepagesz=1G hugepages=48\n") != NULL,
           "kernel 5.10: plain total on the command line");
        ok(strstr(out, "(kernel 5.10.0-28-amd64 takes no per-node counts before 5.16") != NULL,
           "says why there are no per-node counts");
        ok(!strstr(out, "missing hugetlbfs mount"), "both mounts exist on hp-4node");
        ok(!strstr(out, "node 3"), "memoryless node 3 untouched");
        free(out);
        topo_nodes_free(t);
        fixture_remove(root);
}

/* The boot-time run on the HBM host: the memory-only node keeps its pool. */
static void test_reserve_memory_only(void) {
        char *root = fixture_copy("hp-hbm");
        struct topo *t = topo_cpus(topo_nodes(3, (const uint64_t[]){ 32 << 20, 32 << 20, 16 << 20 }),
                                   (const int[]){ 8, 8, 0 });
        struct hugepages_host h = { &hugepages_ops_hostfs, root, NULL };
        struct conf c = { 0 };
        char *out = NULL;

        if (!ok(root != NULL, "copied hp-hbm"))
                return;
        conf_total(&c, TOPO_PAGE_1G, 8);
        is_int(reserve_capture(&c, t, &h, &out), 0, "reserve 1G = 8 on hp-hbm: exit 0");
        ok(strstr(out, "node 0 1G: 4 requested, 4 reserved\n") &&
           strstr(out, "node 1 1G: 4 requested, 4 reserved\n") && !strstr(out, "node 2"),
           "4 pages on each DDR node, none asked of the HBM node");
        is_int(pool_file(root, 2, TOPO_PAGE_1G, "nr_hugepages"), 0, "node 2 1G file untouched: 0");
        free(out);
        topo_nodes_free(t);
        fixture_remove(root);
}

static void test_reserve_node_syntax(void) {
        char *root = fixture_copy("hp-2node");
        struct topo *t = topo_nodes(2, (const uint64_t[]){ 16 << 20, 16 << 20 });
        struct fake_kernel k;
        struct hugepages_host h = { &fake_ops, root, &k };
        struct conf c = { 0 };
        char *out = NULL;

        if (!ok(root != NULL, "copied hp-2node"))
                return;
        fake_init(&k, 100);
        k.limit[0][TOPO_PAGE_1G] = 1;
        conf_per_node(&c, TOPO_PAGE_1G, 2, (const unsigned[]){ 0, 1 },
                      (const unsigned long long[]){ 2, 4 });
        is_int(reserve_capture(&c, t, &h, &out), 1, "reserve, node 0 grants 1 of 2: exit 1");
        ok(strstr(out, "node 0 1G: 2 requested, 1 reserved (short by 1 after 3 tries with 2 compactions)\n") &&
           strstr(out, "node 1 1G: 4 requested, 4 reserved (unchanged)\n"), "node 0 short by 1");
        ok(strstr(out, "kernel command line: hugepagesz=1G hugepages=0:2,1:4\n") != NULL,
           "kernel 6.1: per-node counts on the command line");
        ok(!strstr(out, "(kernel"), "no old-kernel note");
        free(out);
        topo_nodes_free(t);
        fixture_remove(root);
}

static void test_surplus(void) {
        struct hugepages_pool p = { .nr = 10, .free = 2, .surplus = 3 };
        char *root = fixture_copy("hp-4node");
        _cleanup_free_ char *rel = xasprintf(POOL_DIR, 0u, "2048", "surplus_hugepages");
        _cleanup_free_ char *rel_free = xasprintf(POOL_DIR, 0u, "2048", "free_hugepages");
        struct hugepages_result r;

        is_int(hugepages_pool_in_use(&p), 8, "in use: nr - free");
        is_int(hugepages_pool_persistent(&p), 7, "persistent: nr - surplus");
        p = (struct hugepages_pool){ .nr = 1, .free = 3 };
        is_int(hugepages_pool_in_use(&p), 0, "free > nr (racing read): 0 in use");
        if (!ok(root != NULL, "copied hp-4node"))
                return;
        ok(hugepages_write_pool(root, 0, TOPO_PAGE_2M, 10) == 0 && hostfs_write(root, rel, "3\n") == 0 &&
           hostfs_write(root, rel_free, "5\n") == 0, "node 0 2M: 10 pages, 5 free, 3 surplus");
        is_int(hugepages_set_pool(root, 0, TOPO_PAGE_2M, 7, &r), 0, "ask for 7 persistent pages");
        ok(r.before == 7 && r.writes == 0 && !r.clamped, "surplus pages not counted: already 7, nothing written");
        /* 5 of the 10 pages are in use, 3 of them surplus: 2 persistent in use. */
        is_int(hugepages_pool_persistent_in_use(&(struct hugepages_pool){ .nr = 10, .free = 5, .surplus = 3 }),
               2, "persistent in use: nr - free - surplus");
        is_int(hugepages_pool_persistent_in_use(&(struct hugepages_pool){ .nr = 10, .free = 8, .surplus = 3 }),
               0, "more surplus than pages in use: 0");
        ok(hugepages_set_pool(root, 0, TOPO_PAGE_2M, 2, &r) == 0 && r.in_use == 2 && r.target == 2 &&
           !r.clamped, "ask for 2: surplus pages in use are no floor, 2 written");
        fixture_remove(root);
}

/* nr 10, 2 free, 3 surplus: 7 persistent, 8 in use of which 5 persistent.
 * Asking for 2 shrinks the persistent pool to those 5, never grows it to 8. */
static void test_surplus_shrink(void) {
        char *root = fixture_copy("hp-4node");
        _cleanup_free_ char *sur = xasprintf(POOL_DIR, 0u, "2048", "surplus_hugepages");
        _cleanup_free_ char *fr = xasprintf(POOL_DIR, 0u, "2048", "free_hugepages");
        struct fake_kernel k;
        struct hugepages_host h = { &fake_ops, root, &k };
        struct hugepages_result r;
        char line[256];

        if (!ok(root != NULL, "copied hp-4node"))
                return;
        ok(hugepages_write_pool(root, 0, TOPO_PAGE_2M, 10) == 0 && hostfs_write(root, sur, "3\n") == 0 &&
           hostfs_write(root, fr, "2\n") == 0, "node 0 2M: 10 pages, 2 free, 3 surplus");
        fake_init(&k, 100);
        is_int(hugepages_apply_pool(&h, 0, TOPO_PAGE_2M, 2, &r), 0, "ask for 2");
        ok(r.before == 7 && r.in_use == 5, "7 persistent, 5 of them in use");
        ok(r.clamped && r.target == 5, "clamped to the 5 persistent pages in use, not 8");
        ok(k.max_written == 5 && k.max_written <= r.before, "5 written: never above the 7 there were");
        ok(r.reserved == 5 && !hugepages_result_short(&r), "the pool holds 5 persistent pages");
        is_int(pool_file(root, 0, TOPO_PAGE_2M, "nr_hugepages"), 8, "nr_hugepages: 5 + 3 surplus");
        is_str(hugepages_format_result(&r, line, sizeof line),
               "node 0 2M: 2 requested, 5 reserved (clamped: 5 pages in use, not shrinking below)",
               "clamp line");
        fixture_remove(root);
}

/* The whole path with the real parsers: config text, an hwloc XML host whose
 * memory and pools come from the fixture tree, plan, reserve. */
static void test_real_config_and_topology(void) {
        _cleanup_free_ char *xml = test_topology("2s-xeon-platinum8168-skylake-smt.xml");
        char *root = fixture_copy("hp-2node");
        struct hugepages_host h = { &hugepages_ops_hostfs, root, NULL };
        struct hugepages_plan p = { 0 };
        struct conf *c = NULL;
        struct topo *t = NULL;
        char err[256] = "", *out = NULL;

        if (!ok(root, "copy of hp-2node"))
                return;
        is_int(conf_load_string("t.conf", "[hugepages]\n1G = 1:3\n2M = 9\n", &c, err, sizeof err), 0,
               "config with [hugepages] parses");
        is_int(topo_load(TOPO_SOURCE_XML, xml, root, &t), 0, "2-socket Skylake with hp-2node sysfs");
        if (!c || !t)
                goto out;
        is_int(hugepages_plan(c, t, &p, err, sizeof err), 0, "plan");
        ok(p.ntarget == 3 && p.targets[0].size == TOPO_PAGE_2M && p.targets[0].count == 5 &&
           p.targets[1].count == 4 && p.targets[2].node_os == 1 && p.targets[2].count == 3,
           "2M 9 spread 5+4, 1G 1:3");
        is_int(reserve_capture(c, t, &h, &out), 0, "reserve: exit 0");
        ok(strstr(out, "node 1 1G: 3 requested, 3 reserved\n") != NULL, "node 1 1G reserved");
        is_int(pool_file(root, 1, TOPO_PAGE_1G, "nr_hugepages"), 3, "node 1 1G file: 3");
        free(out);
        conf_free(c);
        c = NULL;
        is_int(conf_load_string("t.conf", "[hugepages]\n1G = 0:1 2:1\n", &c, err, sizeof err), 0,
               "config naming node 2");
        is_int(reserve_capture(c, t, &h, &out), 1, "node 2 on a 2-node host: exit 1");
        free(out);
out:
        hugepages_plan_done(&p);
        conf_free(c);
        topo_free(t);
        fixture_remove(root);
}

/* --- the running daemon's view of the pools -------------------------------- */

static const char numa_maps[] =
        "55aa00000000 default file=/usr/bin/qemu-system-x86_64 mapped=10 N0=10 kernelpagesize_kB=4\n"
        "7f0000000000 bind:1 file=/dev/hugepages/libvirt/qemu/1-db/qemu_back_mem.pc.ram huge "
        "dirty=6 N1=6 kernelpagesize_kB=2048\n"
        "7f1000000000 default file=/dev/hugepages1G/x huge dirty=2 N0=1 N1=1 kernelpagesize_kB=1048576\n"
        "7f2000000000 default file=/dev/hugepages/y huge dirty=5 N7=5 kernelpagesize_kB=2048\n"
        "7f3000000000 default anon=512 dirty=512 N1=512 kernelpagesize_kB=4\n"
        "garbage\n";

static int write_file(const char *path, const char *text) {
        _cleanup_fclose_ FILE *f = fopen(path, "w");

        if (!f || fputs(text, f) < 0)
                return -errno;
        return 0;
}

static void test_numa_maps(const struct topo *t) {
        uint64_t (*held)[TOPO_PAGE_SIZES] = xcalloc((size_t)t->nnode, sizeof *held);

        is_int((int)qemuproc_parse_numa_maps(numa_maps, t, held, NULL), 8,
               "numa_maps: 8 hugepages on known nodes (base pages, node 7, garbage skipped)");
        ok(held[1][TOPO_PAGE_2M] == 6 && held[0][TOPO_PAGE_2M] == 0, "numa_maps: 6 2M pages on node 1");
        ok(held[0][TOPO_PAGE_1G] == 1 && held[1][TOPO_PAGE_1G] == 1, "numa_maps: one 1G page per node");
        is_int((int)qemuproc_parse_numa_maps("", t, held, NULL), 0, "numa_maps: empty text");
        is_int((int)qemuproc_parse_numa_maps(NULL, t, held, NULL), 0, "numa_maps: NULL text");
        free(held);
        {
                uint64_t *base = xcalloc((size_t)t->nnode, sizeof *base);

                qemuproc_parse_numa_maps(numa_maps, t, NULL, base);
                ok(base[0] == 40 && base[1] == 2048,
                   "numa_maps: base pages 40 KiB on node 0, 2 MiB on node 1 (hugepages not counted), got %llu/%llu",
                   (unsigned long long)base[0], (unsigned long long)base[1]);
                qemuproc_parse_numa_maps(NULL, t, NULL, base);
                ok(base[0] == 40, "numa_maps: NULL text adds nothing");
                free(base);
        }
}

static void test_refresh_topo(void) {
        _cleanup_free_ char *xml = test_topology("2s-xeon-platinum8168-skylake-smt.xml");
        _cleanup_free_ char *maps = NULL, *dir = NULL, *cmd = NULL;
        char *root = fixture_copy("hp-2node");
        struct topo *t = NULL;
        struct alloc *a = NULL;

        if (!ok(root, "copy of hp-2node"))
                return;
        if (topo_load(TOPO_SOURCE_XML, xml, root, &t) < 0) {
                ok(0, "2-socket Skylake with hp-2node sysfs");
                fixture_remove(root);
                return;
        }
        test_numa_maps(t);
        a = alloc_new(t);
        is_int(pools_daemon_root(NULL, NULL) != NULL && streq(pools_daemon_root(NULL, NULL), "/"),
               1, "daemon root: live host without --sysfs-root is /");
        ok(pools_daemon_root(NULL, xml) == NULL, "daemon root: a --topology file has no live pools");
        ok(streq(pools_daemon_root(root, xml), root), "daemon root: --sysfs-root wins");

        is_int(pools_refresh(t, a, root, 0), 0, "refresh, nothing committed");
        ok(t->nodes[1].avail_known && t->nodes[1].avail_kib == 16777216,
           "node 1: available memory read from its meminfo (MemFree)");
        a->mem_kib[1] = 1048576;
        pools_refresh(t, a, root, 0);
        is_int((int)(t->nodes[1].avail_kib / 1024), 16384,
               "memory committed to placed domains is not added back by itself (they may not use it yet)");
        a->mem_kib[1] = 0;
        ok(t->nodes[1].hp[TOPO_PAGE_2M].total == 512 && t->nodes[1].hp[TOPO_PAGE_2M].free == 500,
           "node 1 2M: 512 pages, 500 free as sysfs says");
        a->hp_pages[1][TOPO_PAGE_2M] = 10;
        a->hp_pages[1][TOPO_PAGE_1G] = 1;
        is_int(pools_refresh(t, a, root, 0), 0, "refresh with pages committed to placed domains");
        is_int((int)t->nodes[1].hp[TOPO_PAGE_2M].free, 510, "committed 2M pages are added back: 510");
        is_int((int)t->nodes[1].hp[TOPO_PAGE_1G].free, 3, "committed 1G page is added back: 3");
        a->hp_pages[1][TOPO_PAGE_2M] = 20;
        pools_refresh(t, a, root, 0);
        is_int((int)t->nodes[1].hp[TOPO_PAGE_2M].free, 512, "never more free than the pool holds");

        dir = xasprintf("%s/proc/4242", root);
        maps = xasprintf("%s/numa_maps", dir);
        cmd = xasprintf("mkdir -p '%s'", dir);
        ok(system(cmd) == 0, "fake /proc/4242");
        is_int(write_file(maps, numa_maps), 0, "fake numa_maps");
        a->hp_pages[1][TOPO_PAGE_2M] = 0;
        a->hp_pages[1][TOPO_PAGE_1G] = 0;
        is_int(pools_refresh(t, a, root, 4242), 0, "refresh for the domain of pid 4242");
        is_int((int)t->nodes[1].hp[TOPO_PAGE_2M].free, 506, "its own 6 pages on node 1 count as free for it");
        is_int((int)t->nodes[1].hp[TOPO_PAGE_1G].free, 3, "its own 1G page on node 1 too");
        is_int((int)t->nodes[1].avail_kib, 16777216 + 2048, "and its own 2 MiB of base pages on node 1");
        {
                pid_t placed[] = { 4242, 4343 };
                _cleanup_free_ uint64_t *base = xcalloc((size_t)t->nnode, sizeof *base);

                pools_refresh(t, a, root, 0);
                for (size_t i = 0; i < ELEMENTSOF(placed); i++)
                        qemuproc_read_numa_maps(root, placed[i], t, NULL, base);
                pools_add_back_memory(t, base);
                is_int((int)t->nodes[1].avail_kib, 16777216 + 2048,
                       "placed QEMUs: what they really hold is added back (4242: 2 MiB; 4343: no numa_maps)");
        }
        is_int(pools_refresh(t, a, root, 4343), 0, "a pid without numa_maps: nothing added");
        is_int((int)t->nodes[1].hp[TOPO_PAGE_2M].free, 500, "back to sysfs' 500");

        free(cmd);
        cmd = xasprintf("echo many > '%s/sys/devices/system/node/node1/hugepages/"
                                    "hugepages-2048kB/free_hugepages'", root);
        ok(system(cmd) == 0, "corrupt free_hugepages");
        is_int(pools_refresh(t, a, root, 0), -EINVAL, "a corrupt pool file: -EINVAL");
        alloc_free(a);
        topo_free(t);
        fixture_remove(root);
}

int main(void) {
        test_sizes();
        test_plan_per_node();
        test_plan_total();
        test_plan_total_memory_only();
        test_plan_total_hbmflat();
        test_plan_errors();
        test_set_pool_files();
        test_set_pool_errors();
        test_partial_grant();
        test_compact_per_node();
        test_cmdline();
        test_mounts();
        test_reserve_files();
        test_reserve_short();
        test_reserve_node_syntax();
        test_reserve_memory_only();
        test_surplus();
        test_surplus_shrink();
        test_real_config_and_topology();
        test_refresh_topo();
        return tap_done();
}
