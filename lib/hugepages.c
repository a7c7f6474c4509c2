#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "kvmtune/hostfs.h"
#include "kvmtune/hugepages.h"
#include "hugepages-priv.h"
#include "kvmtune/log.h"
#include "kvmtune/util.h"

static const struct {
        const char *name;
        uint64_t kib;
} hugepages_sizes[TOPO_PAGE_SIZES] = {
        [TOPO_PAGE_2M] = { "2M", 2048 },
        [TOPO_PAGE_1G] = { "1G", 1048576 },
};

static bool hugepages_size_valid(int size) {
        return size >= 0 && size < TOPO_PAGE_SIZES;
}

const char *hugepages_size_name(int size) {
        return hugepages_size_valid(size) ? hugepages_sizes[size].name : NULL;
}

uint64_t hugepages_size_kib(int size) {
        return hugepages_size_valid(size) ? hugepages_sizes[size].kib : 0;
}

int hugepages_size_from_string(const char *s) {
        unsigned long long kib;

        if (!s)
                return -EINVAL;
        if (parse_size_kib(s, &kib) < 0)
                return -EINVAL;
        for (int i = 0; i < TOPO_PAGE_SIZES; i++)
                if (kib == hugepages_sizes[i].kib)
                        return i;
        return -EINVAL;
}

/* --- sysfs access --------------------------------------------------------- */

static char *hugepages_pool_path(unsigned node_os, int size, const char *file) {
        return xasprintf("/sys/devices/system/node/node%u/hugepages/hugepages-%" PRIu64 "kB/%s",
                         node_os, hugepages_sizes[size].kib, file);
}

/* Tells a missing node from a node without that page size. */
static int hugepages_classify_enoent(const char *root, unsigned node_os) {
        _cleanup_free_ char *rel = xasprintf("/sys/devices/system/node/node%u", node_os);
        _cleanup_free_ char *p = hostfs_path(root, rel);

        return access(p, F_OK) == 0 ? -EOPNOTSUPP : -ENODEV;
}

static int hugepages_read_file(const char *root, unsigned node_os, int size, const char *file,
                               uint64_t *ret) {
        _cleanup_free_ char *p = hugepages_pool_path(node_os, size, file);

        return hostfs_read_u64(root, p, ret);
}

int hugepages_read_pool(const char *root, unsigned node_os, int size, struct hugepages_pool *ret) {
        struct hugepages_pool pool = { 0 };
        int r;

        if (!hugepages_size_valid(size))
                return -EINVAL;
        r = hugepages_read_file(root, node_os, size, "nr_hugepages", &pool.nr);
        if (r == -ENOENT)
                return hugepages_classify_enoent(root, node_os);
        if (r < 0)
                return r;
        r = hugepages_read_file(root, node_os, size, "free_hugepages", &pool.free);
        if (r < 0)
                return r;
        /* surplus_hugepages is optional: absent means no overcommit pages. */
        r = hugepages_read_file(root, node_os, size, "surplus_hugepages", &pool.surplus);
        if (r < 0 && r != -ENOENT)
                return r;
        *ret = pool;
        return 0;
}

int hugepages_write_pool(const char *root, unsigned node_os, int size, uint64_t count) {
        _cleanup_free_ char *p = NULL;

        if (!hugepages_size_valid(size))
                return -EINVAL;
        p = hugepages_pool_path(node_os, size, "nr_hugepages");
        return hostfs_write_u64(root, p, count);
}

int hugepages_compact(const char *root, unsigned node_os) {
        _cleanup_free_ char *node = xasprintf("/sys/devices/system/node/node%u/compact", node_os);
        int r = hostfs_write(root, node, "1\n");

        /* Only the node that is short needs room; a kernel without the
         * per-node file (no CONFIG_NUMA) compacts everything instead. */
        if (r != -ENOENT)
                return r;
        return hostfs_write(root, "/proc/sys/vm/compact_memory", "1\n");
}

static int hostfs_ops_read(const struct hugepages_host *h, unsigned node_os, int size,
                           struct hugepages_pool *ret) {
        return hugepages_read_pool(h->root, node_os, size, ret);
}

static int hostfs_ops_write(const struct hugepages_host *h, unsigned node_os, int size,
                            uint64_t count) {
        return hugepages_write_pool(h->root, node_os, size, count);
}

static int hostfs_ops_compact(const struct hugepages_host *h, unsigned node_os) {
        return hugepages_compact(h->root, node_os);
}

const struct hugepages_ops hugepages_ops_hostfs = {
        .read_pool = hostfs_ops_read,
        .write_pool = hostfs_ops_write,
        .compact = hostfs_ops_compact,
};

/* --- decide: the plan ----------------------------------------------------- */

static int hugepages_node_index(const struct topo *t, unsigned os) {
        for (int i = 0; i < t->nnode; i++)
                if (t->nodes[i].os == os)
                        return i;
        return -1;
}

static void hugepages_plan_add(struct hugepages_plan *p, unsigned node_os, int size,
                               uint64_t count) {
        p->targets = xrealloc(p->targets, (size_t)(p->ntarget + 1) * sizeof *p->targets);
        p->targets[p->ntarget++] = (struct hugepages_target){ node_os, size, count };
}

#define hugepages_plan_error(err, errlen, ...) error_set((err), (errlen), -EINVAL, __VA_ARGS__)

static bool hugepages_plan_has(const struct hugepages_plan *p, unsigned node_os, int size) {
        for (int i = 0; i < p->ntarget; i++)
                if (p->targets[i].node_os == node_os && p->targets[i].size == size)
                        return true;
        return false;
}

static int hugepages_plan_per_node(const struct conf_hugepages *ch, const struct topo *t,
                                   int size, struct hugepages_plan *p, char *err, size_t errlen) {
        const char *name = hugepages_sizes[size].name;

        if (ch->nnode < 0 || ch->nnode > (int)ELEMENTSOF(ch->node_os))
                return hugepages_plan_error(err, errlen, "[hugepages] %s: bad node list", name);
        for (int i = 0; i < ch->nnode; i++) {
                unsigned os = ch->node_os[i];

                if (hugepages_node_index(t, os) < 0)
                        return hugepages_plan_error(err, errlen,
                                "[hugepages] %s: NUMA node %u does not exist on this host (%d node%s)",
                                name, os, t->nnode, t->nnode == 1 ? "" : "s");
                if (hugepages_plan_has(p, os, size))
                        return hugepages_plan_error(err, errlen,
                                "[hugepages] %s: NUMA node %u listed twice", name, os);
                hugepages_plan_add(p, os, size, ch->count[i]);
        }
        return 0;
}

static bool hugepages_node_has_memory(const struct topo *t, int i) {
        return t->nodes[i].memory_known && t->nodes[i].memory_kib > 0;
}

/* A node that can take a share: it has memory, or no node's memory is known. */
static bool hugepages_node_eligible(const struct topo *t, int i, bool any_known) {
        return !any_known || hugepages_node_has_memory(t, i);
}

/* Nodes that take a share of a plain total: those with memory, or all of them
 * when no node's memory size is known; of those, only the ones with CPUs when
 * any has some, since placement puts a guest's memory only on the nodes of its
 * CPUs: memory-only nodes (HBM, CXL, GPU memory) would hold pages no guest
 * gets. Nodes are visited in os order. */
static int hugepages_spread_nodes(const struct topo *t, unsigned *ret_os) {
        bool any_known = false, any_cpus = false;
        int n = 0;

        for (int i = 0; i < t->nnode; i++)
                any_known |= t->nodes[i].memory_known;
        for (int i = 0; i < t->nnode; i++)
                any_cpus |= hugepages_node_eligible(t, i, any_known) && t->nodes[i].npu > 0;
        for (int i = 0; i < t->nnode; i++)
                if (hugepages_node_eligible(t, i, any_known) && (!any_cpus || t->nodes[i].npu > 0))
                        ret_os[n++] = t->nodes[i].os;
        /* topo lists nodes in os order already; sort anyway, n is tiny. */
        for (int i = 1; i < n; i++)
                for (int j = i; j > 0 && ret_os[j - 1] > ret_os[j]; j--) {
                        unsigned tmp = ret_os[j];
                        ret_os[j] = ret_os[j - 1];
                        ret_os[j - 1] = tmp;
                }
        return n;
}

static int hugepages_plan_total(const struct conf_hugepages *ch, const struct topo *t, int size,
                                struct hugepages_plan *p, char *err, size_t errlen) {
        _cleanup_free_ unsigned *nodes = xcalloc((size_t)t->nnode + 1, sizeof *nodes);
        int n = hugepages_spread_nodes(t, nodes);

        if (n == 0)
                return ch->total == 0 ? 0 : hugepages_plan_error(err, errlen,
                        "[hugepages] %s: no NUMA node with memory to spread %llu pages over",
                        hugepages_sizes[size].name, ch->total);
        for (int i = 0; i < n; i++) {
                uint64_t share = ch->total / (unsigned)n + ((uint64_t)i < ch->total % (unsigned)n);
                hugepages_plan_add(p, nodes[i], size, share);
        }
        return 0;
}

int hugepages_plan(const struct conf *c, const struct topo *t, struct hugepages_plan *ret,
                   char *err, size_t errlen) {
        struct hugepages_plan p = { 0 };
        int r = 0;

        if (!c || !t || !ret)
                return -EINVAL;
        for (int size = 0; size < TOPO_PAGE_SIZES && r == 0; size++) {
                const struct conf_hugepages *ch = &c->hugepages[size];

                if (!ch->set)
                        continue;
                r = ch->per_node ? hugepages_plan_per_node(ch, t, size, &p, err, errlen)
                                 : hugepages_plan_total(ch, t, size, &p, err, errlen);
        }
        if (r < 0) {
                hugepages_plan_done(&p);
                return r;
        }
        *ret = p;
        return 0;
}

void hugepages_plan_done(struct hugepages_plan *p) {
        if (!p)
                return;
        free(p->targets);
        p->targets = NULL;
        p->ntarget = 0;
}

/* --- act ------------------------------------------------------------------ */

static int hugepages_result_fail(struct hugepages_result *r, int error) {
        r->error = error;
        r->reserved = r->before;
        return error;
}

/* Writes the target, reads back; while short, compacts and tries again. */
static int hugepages_write_verify(const struct hugepages_host *h, struct hugepages_result *r) {
        struct hugepages_pool pool;
        int k;

        for (;;) {
                k = h->ops->write_pool(h, r->node_os, r->size, r->target);
                r->writes++;
                if (k < 0)
                        return k;
                k = h->ops->read_pool(h, r->node_os, r->size, &pool);
                if (k < 0)
                        return k;
                r->reserved = hugepages_pool_persistent(&pool);
                if (r->reserved >= r->target || r->writes >= HUGEPAGES_MAX_TRIES)
                        return 0;
                log_debug("node %u %s: %" PRIu64 " of %" PRIu64 " pages, compacting and retrying",
                          r->node_os, hugepages_sizes[r->size].name, r->reserved, r->target);
                /* Compaction may be missing (CONFIG_COMPACTION=n): retry anyway. */
                if (h->ops->compact(h, r->node_os) >= 0)
                        r->compactions++;
        }
}

int hugepages_apply_pool(const struct hugepages_host *h, unsigned node_os, int size,
                         uint64_t count, struct hugepages_result *ret) {
        struct hugepages_pool pool;
        int k;

        *ret = (struct hugepages_result){ .node_os = node_os, .size = size,
                                          .requested = count, .target = count };
        if (!h || !h->ops || !hugepages_size_valid(size))
                return hugepages_result_fail(ret, -EINVAL);
        k = h->ops->read_pool(h, node_os, size, &pool);
        if (k < 0)
                return hugepages_result_fail(ret, k);
        ret->before = ret->reserved = hugepages_pool_persistent(&pool);
        ret->in_use = hugepages_pool_persistent_in_use(&pool);
        if (ret->target < ret->in_use) {
                ret->target = ret->in_use;
                ret->clamped = true;
        }
        if (ret->before == ret->target)
                return 0;
        k = hugepages_write_verify(h, ret);
        if (k < 0)
                ret->error = k;
        return k;
}

int hugepages_set_pool(const char *sysfs_root, unsigned node_os, int size_index,
                       uint64_t count, struct hugepages_result *ret) {
        struct hugepages_host h = { .ops = &hugepages_ops_hostfs, .root = sysfs_root };

        return hugepages_apply_pool(&h, node_os, size_index, count, ret);
}

int hugepages_apply_plan(const struct hugepages_host *h, const struct hugepages_plan *p,
                         struct hugepages_result *ret_results) {
        int bad = 0;

        for (int i = 0; i < p->ntarget; i++) {
                const struct hugepages_target *t = &p->targets[i];
                struct hugepages_result *r = &ret_results[i];

                if (hugepages_apply_pool(h, t->node_os, t->size, t->count, r) < 0 ||
                    hugepages_result_short(r))
                        bad++;
        }
        return bad;
}

/* --- report --------------------------------------------------------------- */

/* Short message for a hugepages error code. */
static const char *hugepages_strerror(int error) {
        switch (error) {
        case -ENODEV:
                return "no such NUMA node";
        case -EOPNOTSUPP:
                return "page size not supported on this node";
        case -EINVAL:
                return "invalid node or page size";
        default:
                return strerror(-error);
        }
}

static void hugepages_format_note(const struct hugepages_result *r, char *buf, size_t len) {
        if (hugepages_result_short(r))
                snprintf(buf, len, " (short by %" PRIu64 " after %d tr%s with %d compaction%s)",
                         r->target - r->reserved, r->writes, r->writes == 1 ? "y" : "ies",
                         r->compactions, r->compactions == 1 ? "" : "s");
        else if (r->clamped)
                snprintf(buf, len, " (clamped: %" PRIu64 " pages in use, not shrinking below)",
                         r->in_use);
        else if (r->reserved > r->target)
                snprintf(buf, len, " (%" PRIu64 " pages could not be freed: in use)",
                         r->reserved - r->target);
        else if (r->writes == 0)
                snprintf(buf, len, " (unchanged)");
        else
                buf[0] = '\0';
}

const char *hugepages_format_result(const struct hugepages_result *r, char *buf, size_t len) {
        const char *name = hugepages_size_name(r->size);
        char note[128];

        if (!name)
                name = "?";
        if (r->error < 0) {
                snprintf(buf, len, "node %u %s: %" PRIu64 " requested, error: %s", r->node_os,
                         name, r->requested, hugepages_strerror(r->error));
                return buf;
        }
        hugepages_format_note(r, note, sizeof note);
        snprintf(buf, len, "node %u %s: %" PRIu64 " requested, %" PRIu64 " reserved%s",
                 r->node_os, name, r->requested, r->reserved, note);
        return buf;
}

bool hugepages_kernel_has_node_syntax(const char *osrelease) {
        unsigned major = 0, minor = 0;

        if (!osrelease || sscanf(osrelease, "%u.%u", &major, &minor) != 2)
                return false;
        if (major != HUGEPAGES_NODE_SYNTAX_MAJOR)
                return major > HUGEPAGES_NODE_SYNTAX_MAJOR;
        return minor >= HUGEPAGES_NODE_SYNTAX_MINOR;
}

static bool hugepages_size_short(const struct hugepages_result *results, int n, int size) {
        for (int i = 0; i < n; i++)
                if (results[i].size == size && hugepages_result_short(&results[i]))
                        return true;
        return false;
}

/* Appends " hugepagesz=1G hugepages=..." for one size to *s. */
static char *hugepages_cmdline_size(char *s, const struct hugepages_result *results, int n,
                                    int size, bool node_syntax) {
        uint64_t total = 0;
        char *list = xstrdup(""), *out;

        for (int i = 0; i < n; i++) {
                char *next;

                if (results[i].size != size || results[i].target == 0)
                        continue;
                total += results[i].target;
                next = xasprintf("%s%s%u:%" PRIu64, list, *list ? "," : "",
                                 results[i].node_os, results[i].target);
                free(list);
                list = next;
        }
        if (!node_syntax) {
                free(list);
                list = xasprintf("%" PRIu64, total);
        }
        out = xasprintf("%s%shugepagesz=%s hugepages=%s", s, *s ? " " : "",
                        hugepages_sizes[size].name, list);
        free(list);
        free(s);
        return out;
}

char *hugepages_boot_cmdline(const struct hugepages_result *results, int n, bool node_syntax) {
        char *s = xstrdup("");

        for (int size = 0; size < TOPO_PAGE_SIZES; size++)
                if (hugepages_size_short(results, n, size))
                        s = hugepages_cmdline_size(s, results, n, size, node_syntax);
        if (!*s) {
                free(s);
                return NULL;
        }
        return s;
}

/* --- hugetlbfs mounts ------------------------------------------------------ */

/* /proc/mounts escapes space, tab, newline and backslash as \ooo. */
static void hugepages_unescape(char *s) {
        char *w = s;

        for (char *p = s; *p; p++) {
                if (p[0] == '\\' && p[1] >= '0' && p[1] <= '3' && p[2] >= '0' && p[2] <= '7' &&
                    p[3] >= '0' && p[3] <= '7') {
                        *w++ = (char)((p[1] - '0') * 64 + (p[2] - '0') * 8 + (p[3] - '0'));
                        p += 3;
                } else
                        *w++ = *p;
        }
        *w = '\0';
}

/* The page size of a hugetlbfs mount from its options, in KiB. */
static uint64_t hugepages_mount_kib(const char *opts, uint64_t default_kib) {
        _cleanup_free_ char *copy = xstrdup(opts);
        char *save = NULL;

        for (char *o = strtok_r(copy, ",", &save); o; o = strtok_r(NULL, ",", &save)) {
                unsigned long long kib;

                if (strncmp(o, "pagesize=", 9) == 0)
                        return parse_size_kib(o + 9, &kib) == 0 ? kib : 0;
        }
        return default_kib;
}

static void hugepages_mount_line(char *line, uint64_t default_kib, char *paths[TOPO_PAGE_SIZES]) {
        char *save = NULL, *dev, *dir, *type, *opts;
        uint64_t kib;

        dev = strtok_r(line, " \t", &save);
        dir = strtok_r(NULL, " \t", &save);
        type = strtok_r(NULL, " \t", &save);
        opts = strtok_r(NULL, " \t", &save);
        if (!dev || !dir || !type || !opts || !streq(type, "hugetlbfs"))
                return;
        kib = hugepages_mount_kib(opts, default_kib);
        for (int size = 0; size < TOPO_PAGE_SIZES; size++)
                if (kib == hugepages_sizes[size].kib && !paths[size]) {
                        hugepages_unescape(dir);
                        paths[size] = xstrdup(dir);
                }
}

int hugepages_find_mounts(const char *mounts, uint64_t default_kib,
                          char *ret_paths[TOPO_PAGE_SIZES]) {
        _cleanup_free_ char *copy = xstrdup(mounts ? mounts : "");
        char *paths[TOPO_PAGE_SIZES] = { NULL };
        char *save = NULL;
        int found = 0;

        for (char *l = strtok_r(copy, "\n", &save); l; l = strtok_r(NULL, "\n", &save))
                hugepages_mount_line(l, default_kib, paths);
        for (int size = 0; size < TOPO_PAGE_SIZES; size++) {
                ret_paths[size] = paths[size];
                found += paths[size] != NULL;
        }
        return found;
}

const char *hugepages_mount_point(int size, char *const paths[TOPO_PAGE_SIZES]) {
        if (size == TOPO_PAGE_1G)
                return "/dev/hugepages1G";
        if (paths[TOPO_PAGE_1G] && streq(paths[TOPO_PAGE_1G], "/dev/hugepages"))
                return "/dev/hugepages2M";
        return "/dev/hugepages";
}
