/* Live facts of the guests for the operator (observe.h). */
#include "config.h"

#include <errno.h>
#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>

#include "kvmtune/drift.h"
#include "kvmtune/hostfs.h"
#include "kvmtune/util.h"
#include "cgroup.h"
#include "observe.h"
#include "kvmtune/qemuproc.h"

int observe_vcpu_stats(const struct daemon *d, const struct domain *dm, struct schedstat *ret) {
        _cleanup_(qemuproc_freep) struct qemuproc *q = NULL;
        int n = 0;

        memset(ret, 0, dm->vcpus * sizeof *ret);
        if (dm->pid <= 0 || qemuproc_scan(d->sysfs_root, dm->pid, &q) < 0)
                return -ESRCH;
        for (int i = 0; i < q->nthread; i++) {
                const struct qemuproc_thread *t = &q->threads[i];

                if (t->kind == QEMUPROC_VCPU && t->id >= 0 && t->id < dm->vcpus &&
                    schedstat_read(d->sysfs_root, dm->pid, t->tid, &ret[t->id]) == 0)
                        n++;
        }
        return n;
}

void observe_vcpus_json(const struct daemon *d, const struct domain *dm, struct json_object *vcpus) {
        _cleanup_free_ struct schedstat *st = xcalloc(dm->vcpus + 1, sizeof *st);

        if (dm->vcpus <= 0 || observe_vcpu_stats(d, dm, st) <= 0)
                return;
        for (size_t i = 0; i < json_object_array_length(vcpus); i++) {
                struct json_object *v = json_object_array_get_idx(vcpus, i), *id;
                int n;

                if (!json_object_object_get_ex(v, "vcpu", &id))
                        continue;
                n = json_object_get_int(id);
                if (n < 0 || n >= dm->vcpus)
                        continue;
                json_object_object_add(v, "run_ns", json_object_new_int64((int64_t)st[n].run_ns));
                json_object_object_add(v, "delay_ns", json_object_new_int64((int64_t)st[n].delay_ns));
        }
}

bool observe_verifiable(const struct domain *dm) {
        return dm->pid > 0 && dm->pins.nvcpu > 0 &&
               (dm->state == DOMAIN_TUNED || dm->state == DOMAIN_SHARED || dm->state == DOMAIN_UNPLACED);
}

/* ---- verify ------------------------------------------------------------------ */

static char *observe_thread_name(const struct qemuproc_thread *t) {
        switch (t->kind) {
        case QEMUPROC_VCPU:
                return xasprintf("vcpu %d thread %d", t->id, (int)t->tid);
        case QEMUPROC_IOTHREAD:
                return xasprintf("iothread %d thread %d", t->id, (int)t->tid);
        default:
                return xasprintf("emulator thread %d (%s)", (int)t->tid, t->comm);
        }
}

static void observe_threads(const struct daemon *d, const struct domain *dm, const struct qemuproc *q,
                            struct drift_report *r) {
        for (int i = 0; i < q->nthread; i++) {
                const struct qemuproc_thread *t = &q->threads[i];
                _cleanup_free_ char *what = observe_thread_name(t);
                _cleanup_bitmap_ hwloc_bitmap_t got = NULL;
                int e = qemuproc_read_affinity(d->sysfs_root, dm->pid, t->tid, &got);

                if (e == -ENOENT || e == -ESRCH)
                        continue;       /* the thread exited meanwhile */
                if (e < 0)
                        drift_unreadable(r, what, qemuproc_thread_cpus(t, &dm->pins), strerror(-e));
                else
                        drift_check(r, what, DRIFT_EQUAL, qemuproc_thread_cpus(t, &dm->pins), got);
        }
}

/* 1 when dir/file was compared, 0 when it does not exist (no such child, no
 * cpuset controller). */
static int observe_cgroup_file(const struct daemon *d, const char *dir, const char *child, const char *file,
                               enum drift_rule rule, hwloc_const_bitmap_t want, struct drift_report *r) {
        _cleanup_free_ char *path = xasprintf("%s%s%s/%s", dir, child ? "/" : "", child ? child : "", file);
        _cleanup_free_ char *text = NULL, *what = xasprintf("cgroup %s%s%s", child ? child : "",
                                                            child ? " " : "", file);
        _cleanup_bitmap_ hwloc_bitmap_t got = NULL;
        int e = hostfs_read(d->sysfs_root, path, &text);

        if (e == -ENOENT)
                return 0;
        if (e >= 0)
                e = drift_parse_list(text, &got);
        if (e < 0)
                drift_unreadable(r, what, want, strerror(-e));
        else
                drift_check(r, what, rule, want, got);
        return 1;
}

static void observe_cgroup_cpus(const struct daemon *d, const struct domain *dm, const char *dir,
                                struct drift_report *r) {
        const struct pinset *p = &dm->pins;
        _cleanup_bitmap_ hwloc_bitmap_t all = hwloc_bitmap_dup(p->emulator);
        char name[CGROUP_CHILD_MAX];

        for (int v = 0; v < p->nvcpu; v++) {
                hwloc_bitmap_or(all, all, p->vcpu[v]);
                observe_cgroup_file(d, dir, cgroup_child_name(CGROUP_CHILD_VCPU, v, name), "cpuset.cpus",
                                    DRIFT_EQUAL, p->vcpu[v], r);
        }
        for (int i = 0; i < p->niothread; i++) {
                hwloc_bitmap_or(all, all, p->iothread[i]);
                observe_cgroup_file(d, dir, cgroup_child_name(CGROUP_CHILD_IOTHREAD, p->iothread_id[i], name),
                                    "cpuset.cpus", DRIFT_EQUAL, p->iothread[i], r);
        }
        observe_cgroup_file(d, dir, cgroup_child_name(CGROUP_CHILD_EMULATOR, 0, name), "cpuset.cpus", DRIFT_EQUAL,
                            p->emulator, r);
        observe_cgroup_file(d, dir, NULL, "cpuset.cpus", DRIFT_COVERS, all, r);
}

/* numa=strict binds memory: the QEMU process may allocate only on those nodes,
 * through the cgroup's cpuset.mems (libvirt's <numatune>, kvmtuned's writes). */
static void observe_memory(const struct daemon *d, const struct domain *dm, const char *dir,
                           struct drift_report *r) {
        _cleanup_free_ char *path = xasprintf("/proc/%d/status", (int)dm->pid), *text = NULL;
        _cleanup_bitmap_ hwloc_bitmap_t got = NULL;
        const hwloc_const_bitmap_t want = dm->pins.mems;
        int e;

        if (!want || dm->pins.numa != POLICY_NUMA_STRICT)
                return;
        if (dir)
                observe_cgroup_file(d, dir, NULL, "cpuset.mems", DRIFT_EQUAL, want, r);
        e = hostfs_read(d->sysfs_root, path, &text);
        if (e >= 0)
                e = drift_status_list(text, "Mems_allowed_list", &got);
        if (e < 0)
                drift_unreadable(r, "memory nodes (Mems_allowed_list)", want, strerror(-e));
        else
                drift_check(r, "memory nodes (Mems_allowed_list)", DRIFT_EQUAL, want, got);
}

static struct json_object *observe_drift_json(const struct drift_report *r) {
        struct json_object *arr = json_object_new_array();

        for (int i = 0; i < r->n; i++) {
                struct json_object *o = json_object_new_object();

                json_object_object_add(o, "what", json_object_new_string(r->items[i].what));
                json_object_object_add(o, "want", json_object_new_string(r->items[i].want));
                json_object_object_add(o, "got", json_object_new_string(r->items[i].got));
                json_object_array_add(arr, o);
        }
        return arr;
}

struct json_object *observe_verify_json(const struct daemon *d, const struct domain *dm) {
        _cleanup_(qemuproc_freep) struct qemuproc *q = NULL;
        _cleanup_free_ char *dir = NULL;
        struct drift_report r = { 0 };
        struct json_object *o = json_object_new_object();
        int e = qemuproc_scan(d->sysfs_root, dm->pid, &q);

        if (e < 0)
                drift_unreadable(&r, "QEMU threads", NULL, strerror(-e));
        else
                observe_threads(d, dm, q, &r);
        if (cgroup_read_dir(d->sysfs_root, dm->pid, &dir) < 0)
                dir = NULL;
        if (dir)
                observe_cgroup_cpus(d, dm, dir, &r);
        observe_memory(d, dm, dir, &r);
        json_object_object_add(o, "name", json_object_new_string(dm->name));
        json_object_object_add(o, "state", json_object_new_string(domain_state_to_string(dm->state)));
        json_object_object_add(o, "checked", json_object_new_int(r.checked));
        json_object_object_add(o, "drift", observe_drift_json(&r));
        drift_report_done(&r);
        return o;
}
