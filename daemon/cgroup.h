/* The domain's cgroup cpuset: the one place that knows libvirt's child names
 * (vcpuN, emulator, iothreadN) and the order in which the kernel accepts
 * cpuset.cpus and cpuset.mems changes, for cgroup v1 (cpuset hierarchy) and
 * v2 (unified, with or without the cpuset controller).
 *
 * cgroup v1 refuses a child's set outside its parent's (EINVAL) and a parent
 * narrowed below a child's (EBUSY), so: the parent is widened first (to the
 * union of the old and the new sets), then each child gets its own set, then
 * the parent is narrowed (mems only: the parent's cpuset.cpus belongs to
 * libvirt and is only ever widened). An empty parent set means "inherit" on
 * v2: nothing to widen there. Every read and write goes through the ops, so a
 * test can check the order against a model of the kernel. */
#pragma once

#include <sys/types.h>

#include "kvmtune/pinset.h"

struct cgroup_ops {
        /* path is "DIR/FILE"; read returns the file's text (caller frees) */
        int (*read)(void *userdata, const char *path, char **ret);
        int (*write)(void *userdata, const char *path, const char *value);
};

/* Reads and writes through hostfs; userdata is the root (const char *, NULL: the host). */
extern const struct cgroup_ops cgroup_ops_hostfs;

struct cgroup {
        const struct cgroup_ops *ops;
        void *userdata;
        char *dir;                      /* the domain's cgroup directory */
};

/* The cgroup of QEMU pid, from /proc/PID/cgroup below root: the v1 cpuset
 * line, else the v2 "0::" line, mounted at /sys/fs/cgroup[/cpuset], as the
 * parent of its "emulator" child. Only reads. 0, -ENOENT (no such line) or the
 * read error. *ret_dir is the caller's. */
int cgroup_read_dir(const char *root, pid_t pid, char **ret_dir);

enum cgroup_child {
        CGROUP_CHILD_EMULATOR,          /* "emulator" (id unused) */
        CGROUP_CHILD_VCPU,              /* "vcpuN", N the vCPU index */
        CGROUP_CHILD_IOTHREAD,          /* "iothreadN", N the iothread id */
};
#define CGROUP_CHILD_MAX 32

/* libvirt's name of a child of the domain's cgroup, written into buf and
 * returned. */
const char *cgroup_child_name(enum cgroup_child kind, int id, char buf[static CGROUP_CHILD_MAX]);

enum {
        CGROUP_CPUS = 1 << 0,           /* cpuset.cpus of the parent (widened) and each child */
        CGROUP_MEMS = 1 << 1,           /* cpuset.mems, when p->mems is set with numa strict */
};

/* Writes p into the domain's cgroup, what = CGROUP_* flags. A child that does
 * not exist is skipped; a parent without cpuset files is -ENOENT (callers
 * take it as "nothing to do"). 0 or negative errno. */
int cgroup_apply(const struct cgroup *cg, const struct pinset *p, unsigned what);
