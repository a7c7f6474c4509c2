/* The domain's cgroup cpuset (see cgroup.h). */
#include "config.h"

#include <errno.h>
#include <stdio.h>

#include "cgroup.h"
#include "kvmtune/hostfs.h"
#include "kvmtune/util.h"

static int hostfs_ops_read(void *userdata, const char *path, char **ret) {
        int r = hostfs_read(userdata, path, ret);

        return r < 0 ? r : 0;
}

static int hostfs_ops_write(void *userdata, const char *path, const char *value) {
        return hostfs_write(userdata, path, value);
}

const struct cgroup_ops cgroup_ops_hostfs = { .read = hostfs_ops_read, .write = hostfs_ops_write };

/* ---- where ---------------------------------------------------------------------- */

/* "3:cpuset:/machine/qemu-1-x.libvirt-qemu/emulator" (v1) or
 * "0::/machine.slice/machine-qemu\x2d1\x2dx.scope/libvirt/emulator" (v2) ->
 * the mounted directory of the domain's cgroup (the emulator's parent). */
static char *cgroup_dir_from_line(const char *line, bool v1) {
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

int cgroup_read_dir(const char *root, pid_t pid, char **ret_dir) {
        _cleanup_free_ char *path = xasprintf("/proc/%d/cgroup", (int)pid), *text = NULL;
        char *v2 = NULL, *dir = NULL, *save = NULL;
        int r = hostfs_read(root, path, &text);

        if (r < 0)
                return r;
        for (char *l = strtok_r(text, "\n", &save); l && !dir; l = strtok_r(NULL, "\n", &save)) {
                const char *c = strchr(l, ':');

                if (c && strncmp(c, ":cpuset:", 8) == 0)
                        dir = cgroup_dir_from_line(l, true);
                else if (strncmp(l, "0::", 3) == 0 && !v2)
                        v2 = cgroup_dir_from_line(l, false);
        }
        if (!dir)
                dir = v2, v2 = NULL;
        free(v2);
        if (!dir)
                return -ENOENT;
        *ret_dir = dir;
        return 0;
}

/* ---- sets ----------------------------------------------------------------------- */

static int cgroup_read_set(const struct cgroup *cg, const char *file, hwloc_bitmap_t *ret) {
        _cleanup_free_ char *path = xasprintf("%s/%s", cg->dir, file), *text = NULL;
        int r = cg->ops->read(cg->userdata, path, &text);

        if (r < 0)
                return r;
        text[strcspn(text, "\n")] = '\0';
        *ret = hwloc_bitmap_alloc();
        if (bitmap_parse_list(text, CPU_LIST_MAX, *ret) < 0) {
                hwloc_bitmap_free(*ret);
                return -EINVAL;
        }
        return 0;
}

/* dir[/child]/file = set; a child that does not exist is skipped (1). */
static int cgroup_write_set(const struct cgroup *cg, const char *child, const char *file,
                            hwloc_const_bitmap_t set) {
        _cleanup_free_ char *path = xasprintf("%s%s%s/%s", cg->dir, child ? "/" : "", child ? child : "", file);
        _cleanup_free_ char *value = NULL;
        int r;

        hwloc_bitmap_list_asprintf(&value, set);
        r = cg->ops->write(cg->userdata, path, value);
        return r == -ENOENT && child ? 1 : r;
}

/* The parent must allow every child's set. */
static int cgroup_widen(const struct cgroup *cg, const char *file, hwloc_const_bitmap_t want) {
        _cleanup_bitmap_ hwloc_bitmap_t cur = NULL;
        int r = cgroup_read_set(cg, file, &cur);

        if (r < 0)
                return r;
        if (hwloc_bitmap_iszero(cur) || hwloc_bitmap_isincluded(want, cur))
                return 0;
        hwloc_bitmap_or(cur, cur, want);
        return cgroup_write_set(cg, NULL, file, cur);
}

const char *cgroup_child_name(enum cgroup_child kind, int id, char buf[static CGROUP_CHILD_MAX]) {
        switch (kind) {
        case CGROUP_CHILD_VCPU:
                snprintf(buf, CGROUP_CHILD_MAX, "vcpu%d", id);
                break;
        case CGROUP_CHILD_IOTHREAD:
                snprintf(buf, CGROUP_CHILD_MAX, "iothread%d", id);
                break;
        case CGROUP_CHILD_EMULATOR:
        default:
                snprintf(buf, CGROUP_CHILD_MAX, "emulator");
                break;
        }
        return buf;
}

/* Writes 'file' of every child: emulator, vcpuN, iothreadN. When set is not
 * NULL every child gets it, else each its own cpuset from p. */
static int cgroup_children(const struct cgroup *cg, const struct pinset *p, const char *file,
                           hwloc_const_bitmap_t set) {
        char name[CGROUP_CHILD_MAX];
        int r = cgroup_write_set(cg, cgroup_child_name(CGROUP_CHILD_EMULATOR, 0, name), file,
                                 set ? set : p->emulator);

        for (int i = 0; r >= 0 && i < p->nvcpu; i++)
                r = cgroup_write_set(cg, cgroup_child_name(CGROUP_CHILD_VCPU, i, name), file,
                                     set ? set : p->vcpu[i]);
        for (int i = 0; r >= 0 && i < p->niothread; i++)
                r = cgroup_write_set(cg, cgroup_child_name(CGROUP_CHILD_IOTHREAD, p->iothread_id[i], name), file,
                                     set ? set : p->iothread[i]);
        return r < 0 ? r : 0;
}

static int cgroup_apply_cpus(const struct cgroup *cg, const struct pinset *p) {
        _cleanup_bitmap_ hwloc_bitmap_t all = pinset_cpus(p);
        int r = cgroup_widen(cg, "cpuset.cpus", all);

        return r < 0 ? r : cgroup_children(cg, p, "cpuset.cpus", NULL);
}

static int cgroup_apply_mems(const struct cgroup *cg, const struct pinset *p) {
        int r;

        if (!p->mems || p->numa != POLICY_NUMA_STRICT)
                return 0;
        r = cgroup_widen(cg, "cpuset.mems", p->mems);
        if (r >= 0)
                r = cgroup_children(cg, p, "cpuset.mems", p->mems);
        if (r >= 0)
                r = cgroup_write_set(cg, NULL, "cpuset.mems", p->mems);
        return r;
}

int cgroup_apply(const struct cgroup *cg, const struct pinset *p, unsigned what) {
        int r = 0;

        if (what & CGROUP_CPUS)
                r = cgroup_apply_cpus(cg, p);
        if (r >= 0 && (what & CGROUP_MEMS))
                r = cgroup_apply_mems(cg, p);
        return r;
}
