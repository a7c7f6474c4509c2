#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include "hugepages.h"
#include "hugepages-priv.h"
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

/* The hugetlbfs mount point of each size under root (/proc/mounts; a mount
 * without pagesize= has the Hugepagesize of /proc/meminfo), NULL where there
 * is none. Caller frees each. */
static void hugepages_read_mounts(const char *root, char *ret_paths[TOPO_PAGE_SIZES]) {
        _cleanup_free_ char *mounts = NULL;
        uint64_t default_kib;

        if (hostfs_read(root, "/proc/mounts", &mounts) < 0)
                mounts = NULL;
        if (hostfs_read_meminfo(root, "/proc/meminfo", "Hugepagesize", &default_kib) < 0)
                default_kib = 2048;
        hugepages_find_mounts(mounts, default_kib, ret_paths);
}

/* "mkdir -p DIR && mount -t hugetlbfs -o pagesize=SIZE hugetlbfs DIR" for the
 * mount point hugepages_mount_point() picks. Caller frees. */
static char *hugepages_mount_command(int size, char *const paths[TOPO_PAGE_SIZES]) {
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
