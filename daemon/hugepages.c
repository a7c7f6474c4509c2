#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include "hugepages.h"
#include "kvmtune/hostfs.h"
#include "kvmtune/hugepages.h"
#include "kvmtune/log.h"
#include "kvmtune/placement.h"
#include "kvmtune/util.h"

static bool reserve_is_host(const char *root) {
        return !root || !*root || streq(root, "/");
}

static void reserve_print_results(const struct hugepages_result *res, int n) {
        char line[256];

        for (int i = 0; i < n; i++)
                printf("%s\n", hugepages_format_result(&res[i], line, sizeof line));
}

char *hugepages_reserve_cmdline(const struct hugepages_result *res, int n, const char *root,
                                char **ret_note) {
        _cleanup_free_ char *release = NULL;
        bool node_syntax;
        char *cmdline;

        *ret_note = NULL;
        if (hostfs_read(root, "/proc/sys/kernel/osrelease", &release) < 0)
                release = NULL;
        if (release)
                release[strcspn(release, "\n")] = '\0';
        node_syntax = hugepages_kernel_has_node_syntax(release);
        cmdline = hugepages_boot_cmdline(res, n, node_syntax);
        if (cmdline && !node_syntax)
                *ret_note = xasprintf("kernel %s takes no per-node counts before %d.%d: the boot-time "
                                      "total is spread evenly over the nodes",
                                      release ? release : "of unknown version",
                                      HUGEPAGES_NODE_SYNTAX_MAJOR, HUGEPAGES_NODE_SYNTAX_MINOR);
        return cmdline;
}

/* The boot command line that would have reserved what the kernel refused. */
static void reserve_print_cmdline(const struct hugepages_result *res, int n, const char *root) {
        _cleanup_free_ char *note = NULL;
        _cleanup_free_ char *cmdline = hugepages_reserve_cmdline(res, n, root, &note);

        if (!cmdline)
                return;
        printf("to reserve these pages at boot, add to the kernel command line: %s\n", cmdline);
        if (note)
                printf("(%s)\n", note);
}

static bool reserve_size_wanted(const struct hugepages_result *res, int n, int size) {
        for (int i = 0; i < n; i++)
                if (res[i].size == size && res[i].error == 0 && res[i].target > 0)
                        return true;
        return false;
}

static void reserve_free_paths(char *paths[TOPO_PAGE_SIZES]) {
        for (int size = 0; size < TOPO_PAGE_SIZES; size++)
                free(paths[size]);
}

void hugepages_read_mounts(const char *root, char *ret_paths[TOPO_PAGE_SIZES]) {
        _cleanup_free_ char *mounts = NULL;
        uint64_t default_kib;

        if (hostfs_read(root, "/proc/mounts", &mounts) < 0)
                mounts = NULL;
        if (hostfs_read_meminfo(root, "/proc/meminfo", "Hugepagesize", &default_kib) < 0)
                default_kib = 2048;
        hugepages_find_mounts(mounts, default_kib, ret_paths);
}

char *hugepages_mount_command(int size, char *const paths[TOPO_PAGE_SIZES]) {
        const char *name = hugepages_size_name(size);
        const char *dir = hugepages_mount_point(size, paths);

        return xasprintf("mkdir -p %s && mount -t hugetlbfs -o pagesize=%s hugetlbfs %s", dir, name, dir);
}

char *hugepages_reserve_mount_warning(const struct hugepages_result *res, const char *root) {
        char *paths[TOPO_PAGE_SIZES] = { NULL };
        _cleanup_free_ char *cmd = NULL;
        const char *name = hugepages_size_name(res->size);
        char *warning = NULL;

        if (!reserve_size_wanted(res, 1, res->size))
                return NULL;
        hugepages_read_mounts(root, paths);
        if (!paths[res->size]) {
                cmd = hugepages_mount_command(res->size, paths);
                warning = xasprintf("no hugetlbfs mount for %s pages: libvirt cannot back guests with "
                                    "%s pages until one is mounted: %s, then restart virtqemud (or "
                                    "libvirtd), which finds hugetlbfs mounts when it starts",
                                    name, name, cmd);
        }
        reserve_free_paths(paths);
        return warning;
}

static int reserve_mount(const char *dir, int size) {
        _cleanup_free_ char *opts = xasprintf("pagesize=%s", hugepages_size_name(size));

        if (mkdir(dir, 0755) < 0 && errno != EEXIST)
                return -errno;
        if (mount("hugetlbfs", dir, "hugetlbfs", MS_NOSUID | MS_NODEV, opts) < 0)
                return -errno;
        return 0;
}

/* Mounts (on the host) or reports a missing hugetlbfs mount of one size.
 * Returns 0, or negative errno when the mount failed. */
static int reserve_fix_mount(int size, char *paths[TOPO_PAGE_SIZES], const char *root) {
        const char *name = hugepages_size_name(size);
        const char *dir = hugepages_mount_point(size, paths);
        int r;

        if (!reserve_is_host(root)) {
                _cleanup_free_ char *cmd = hugepages_mount_command(size, paths);

                printf("missing hugetlbfs mount for %s pages; to add it: %s\n", name, cmd);
                paths[size] = xstrdup(dir);
                return 0;
        }
        r = reserve_mount(dir, size);
        if (r < 0) {
                fprintf(stderr, "kvmtuned: cannot mount hugetlbfs pagesize=%s on %s: %s\n",
                        name, dir, strerror(-r));
                return r;
        }
        printf("mounted hugetlbfs pagesize=%s on %s\n", name, dir);
        paths[size] = xstrdup(dir);
        return 0;
}

static void reserve_print_libvirt(char *paths[TOPO_PAGE_SIZES]) {
        printf("libvirt: virtqemud (or libvirtd) finds hugetlbfs mounts when it starts, restart it "
               "if it runs; if qemu.conf sets hugetlbfs_mount, it needs: hugetlbfs_mount = [");
        for (int size = 0, first = 1; size < TOPO_PAGE_SIZES; size++)
                if (paths[size]) {
                        printf("%s\"%s\"", first ? "" : ", ", paths[size]);
                        first = 0;
                }
        printf("]\n");
}

/* Returns the number of mounts that are missing and could not be made. */
static int reserve_check_mounts(const struct hugepages_result *res, int n, const char *root) {
        char *paths[TOPO_PAGE_SIZES] = { NULL };
        int failed = 0, missing = 0;

        hugepages_read_mounts(root, paths);
        for (int size = 0; size < TOPO_PAGE_SIZES; size++) {
                if (!reserve_size_wanted(res, n, size) || paths[size])
                        continue;
                missing++;
                failed += reserve_fix_mount(size, paths, root) < 0;
        }
        if (missing > failed)
                reserve_print_libvirt(paths);
        reserve_free_paths(paths);
        return failed;
}

int hugepages_reserve_run(const struct conf *c, const struct topo *t,
                          const struct hugepages_host *host) {
        struct hugepages_plan plan = { 0 };
        _cleanup_free_ struct hugepages_result *res = NULL;
        char err[256] = "";
        int bad;

        if (hugepages_plan(c, t, &plan, err, sizeof err) < 0) {
                fprintf(stderr, "kvmtuned: %s\n", err[0] ? err : "cannot plan hugepages");
                return 1;
        }
        if (plan.ntarget == 0) {
                printf("no pools configured in [hugepages], nothing to reserve\n");
                hugepages_plan_done(&plan);
                return 0;
        }
        res = xcalloc((size_t)plan.ntarget, sizeof *res);
        bad = hugepages_apply_plan(host, &plan, res);
        reserve_print_results(res, plan.ntarget);
        reserve_print_cmdline(res, plan.ntarget, host->root);
        bad += reserve_check_mounts(res, plan.ntarget, host->root);
        hugepages_plan_done(&plan);
        fflush(stdout);
        return bad > 0 ? 1 : 0;
}

int hugepages_reserve_main(const struct conf *c, const struct topo *t, const char *sysfs_root) {
        struct hugepages_host host = { .ops = &hugepages_ops_hostfs, .root = sysfs_root };

        return hugepages_reserve_run(c, t, &host);
}

/* ---- the running daemon's view of the pools --------------------------------- */

static int numa_maps_size(const char *line) {
        const char *k = strstr(line, " kernelpagesize_kB=");
        unsigned long long kib;

        if (!k || sscanf(k, " kernelpagesize_kB=%llu", &kib) != 1)
                return -1;
        for (int s = 0; s < TOPO_PAGE_SIZES; s++)
                if (hugepages_size_kib(s) == kib)
                        return s;
        return -1;
}

/* One mapping: "7f..000 bind:0 file=/dev/hugepages/... huge dirty=32 N0=32 kernelpagesize_kB=2048". */
static uint64_t numa_maps_line(const char *line, const struct topo *t, uint64_t (*ret)[TOPO_PAGE_SIZES]) {
        int size = numa_maps_size(line);
        uint64_t found = 0;

        if (size < 0 || !strstr(line, " huge"))
                return 0;
        for (const char *p = strstr(line, " N"); p; p = strstr(p + 1, " N")) {
                unsigned node;
                unsigned long long pages;
                int idx;

                if (sscanf(p, " N%u=%llu", &node, &pages) != 2 || (idx = topo_node_by_os(t, node)) < 0)
                        continue;
                ret[idx][size] += pages;
                found += pages;
        }
        return found;
}

/* One mapping of base pages: "... anon=512 dirty=512 N0=512 kernelpagesize_kB=4". */
static void numa_maps_base_line(const char *line, const struct topo *t, uint64_t *ret_kib) {
        const char *k = strstr(line, " kernelpagesize_kB=");
        unsigned long long page_kib;

        if (!k || sscanf(k, " kernelpagesize_kB=%llu", &page_kib) != 1 || strstr(line, " huge") ||
            page_kib >= 2048)
                return;
        for (const char *p = strstr(line, " N"); p; p = strstr(p + 1, " N")) {
                unsigned node;
                unsigned long long pages;
                int idx;

                if (sscanf(p, " N%u=%llu", &node, &pages) == 2 && (idx = topo_node_by_os(t, node)) >= 0)
                        ret_kib[idx] += pages * page_kib;
        }
}

void hugepages_parse_numa_maps_base(const char *text, const struct topo *t, uint64_t *ret_kib) {
        while (text && *text) {
                size_t len = strcspn(text, "\n");
                _cleanup_free_ char *line = xasprintf("%.*s", (int)len, text);

                numa_maps_base_line(line, t, ret_kib);
                text += len + (text[len] == '\n');
        }
}

uint64_t hugepages_parse_numa_maps(const char *text, const struct topo *t,
                                   uint64_t (*ret)[TOPO_PAGE_SIZES]) {
        uint64_t found = 0;

        while (text && *text) {
                size_t len = strcspn(text, "\n");
                _cleanup_free_ char *line = xasprintf("%.*s", (int)len, text);

                found += numa_maps_line(line, t, ret);
                text += len + (text[len] == '\n');
        }
        return found;
}

static void refresh_add_back(struct topo *t, uint64_t (*held)[TOPO_PAGE_SIZES]) {
        for (int n = 0; n < t->nnode; n++)
                for (int s = 0; s < TOPO_PAGE_SIZES; s++) {
                        struct topo_hpool *hp = &t->nodes[n].hp[s];
                        uint64_t free = hp->free + held[n][s];

                        hp->free = free < hp->total ? free : hp->total;
                }
}

int hugepages_refresh_topo(struct topo *t, const struct alloc *a, const char *root, pid_t self_pid) {
        _cleanup_free_ uint64_t (*held)[TOPO_PAGE_SIZES] = NULL;
        _cleanup_free_ uint64_t *base = NULL;
        int r = topo_refresh_memory(t, root);

        if (r < 0 || !root)
                return r;
        held = xcalloc((size_t)t->nnode, sizeof *held);
        base = xcalloc((size_t)t->nnode, sizeof *base);
        for (int n = 0; a && n < t->nnode && n < a->nnode; n++)
                for (int s = 0; s < TOPO_PAGE_SIZES; s++)
                        held[n][s] += a->hp_pages[n][s];
        if (self_pid > 0) {
                _cleanup_free_ char *path = xasprintf("/proc/%d/numa_maps", (int)self_pid), *text = NULL;

                if (hostfs_read(root, path, &text) >= 0) {
                        hugepages_parse_numa_maps(text, t, held);
                        hugepages_parse_numa_maps_base(text, t, base);
                }
        }
        refresh_add_back(t, held);
        /* What the domain being placed already uses is its own, not taken. */
        for (int n = 0; n < t->nnode; n++)
                if (t->nodes[n].avail_known)
                        t->nodes[n].avail_kib += base[n];
        return 0;
}

void hugepages_add_back_base(struct topo *t, const char *root, const pid_t *pids, int npid) {
        _cleanup_free_ uint64_t *base = xcalloc((size_t)t->nnode + 1, sizeof *base);

        for (int i = 0; i < npid; i++) {
                _cleanup_free_ char *path = xasprintf("/proc/%d/numa_maps", (int)pids[i]), *text = NULL;

                if (pids[i] > 0 && hostfs_read(root, path, &text) >= 0)
                        hugepages_parse_numa_maps_base(text, t, base);
        }
        for (int n = 0; n < t->nnode; n++)
                if (t->nodes[n].avail_known)
                        t->nodes[n].avail_kib += base[n];
}
