/* A QEMU process as /proc shows it (see qemuproc.h). Reads only, through
 * hostfs. */
#include "config.h"

#include <dirent.h>
#include <errno.h>

#include "kvmtune/drift.h"
#include "kvmtune/hostfs.h"
#include "kvmtune/hugepages.h"
#include "kvmtune/qemuproc.h"
#include "qemuproc-priv.h"
#include "kvmtune/util.h"

/* ---- threads ------------------------------------------------------------------ */

/* "CPU 12/KVM" -> 12; -1 when the name is not a vCPU's. */
static int classify_vcpu(const char *comm) {
        int n = 0, len = 0;
        char accel[8] = "";

        if (sscanf(comm, "CPU %d/%7[A-Z]%n", &n, accel, &len) != 2 || comm[len] != '\0' || n < 0)
                return -1;
        return streq(accel, "KVM") || streq(accel, "TCG") ? n : -1;
}

/* "IO iothread3" -> 3 (libvirt's iothread ids start at 1); -1 otherwise,
 * "IO mon_iothread" included. */
static int classify_iothread(const char *comm) {
        int n = 0, len = 0;

        if (sscanf(comm, "IO iothread%d%n", &n, &len) != 1 || comm[len] != '\0' || n < 1)
                return -1;
        return n;
}

enum qemuproc_kind qemuproc_classify(const char *comm, int *ret_id) {
        int id = classify_vcpu(comm);

        if (id >= 0)
                return *ret_id = id, QEMUPROC_VCPU;
        id = classify_iothread(comm);
        if (id >= 0)
                return *ret_id = id, QEMUPROC_IOTHREAD;
        *ret_id = 0;
        return QEMUPROC_EMULATOR;
}

static void scan_add(const char *root, struct qemuproc *q, pid_t tid) {
        _cleanup_free_ char *path = xasprintf("/proc/%d/task/%d/comm", (int)q->pid, (int)tid);
        _cleanup_free_ char *comm = NULL;
        struct qemuproc_thread *t;

        if (hostfs_read(root, path, &comm) < 0)
                return;                 /* exited meanwhile */
        comm[strcspn(comm, "\n")] = '\0';
        q->threads = xrealloc(q->threads, (q->nthread + 1) * sizeof *q->threads);
        t = &q->threads[q->nthread++];
        *t = (struct qemuproc_thread){ .tid = tid };
        snprintf(t->comm, sizeof t->comm, "%s", comm);
        t->kind = qemuproc_classify(t->comm, &t->id);
}

int qemuproc_scan(const char *root, pid_t pid, struct qemuproc **ret) {
        _cleanup_free_ char *rel = xasprintf("/proc/%d/task", (int)pid);
        _cleanup_free_ char *dir = hostfs_path(root, rel);
        _cleanup_closedir_ DIR *dh = NULL;
        struct qemuproc *q;
        struct dirent *e;
        int tid;

        if (pid <= 0)
                return -ESRCH;
        dh = opendir(dir);
        if (!dh)
                return errno == ENOENT ? -ESRCH : -errno;
        q = xcalloc(1, sizeof *q);
        q->pid = pid;
        while ((e = readdir(dh)))
                if (safe_atoi(e->d_name, 1, INT32_MAX, &tid) == 0)
                        scan_add(root, q, (pid_t)tid);
        if (q->nthread == 0) {
                qemuproc_free(q);
                return -ESRCH;
        }
        *ret = q;
        return q->nthread;
}

struct qemuproc *qemuproc_free(struct qemuproc *q) {
        if (!q)
                return NULL;
        free(q->threads);
        free(q);
        return NULL;
}

hwloc_const_bitmap_t qemuproc_thread_cpus(const struct qemuproc_thread *t, const struct pinset *p) {
        if (t->kind == QEMUPROC_VCPU && t->id < p->nvcpu && p->vcpu[t->id])
                return p->vcpu[t->id];
        if (t->kind == QEMUPROC_IOTHREAD)
                for (int i = 0; i < p->niothread; i++)
                        if (p->iothread_id[i] == t->id && p->iothread[i])
                                return p->iothread[i];
        return p->emulator;
}

static long thread_ticks(const char *root, pid_t pid, pid_t tid) {
        _cleanup_free_ char *path = xasprintf("/proc/%d/task/%d/stat", (int)pid, (int)tid);
        _cleanup_free_ char *text = NULL;
        unsigned long utime = 0, stime = 0;
        const char *p;

        if (hostfs_read(root, path, &text) < 0)
                return 0;
        p = strrchr(text, ')');         /* comm may hold spaces and parentheses */
        /* after ") ": state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime */
        if (!p || sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &utime, &stime) != 2)
                return 0;
        return (long)(utime + stime);
}

long qemuproc_vcpu_ticks(const char *root, const struct qemuproc *q) {
        long sum = 0;

        for (int i = 0; i < q->nthread; i++)
                if (q->threads[i].kind == QEMUPROC_VCPU)
                        sum += thread_ticks(root, q->pid, q->threads[i].tid);
        return sum;
}

/* ---- affinity ----------------------------------------------------------------- */

int qemuproc_read_affinity(const char *root, pid_t pid, pid_t tid, hwloc_bitmap_t *ret) {
        _cleanup_free_ char *path = xasprintf("/proc/%d/task/%d/status", (int)pid, (int)tid);
        _cleanup_free_ char *text = NULL;
        int r = hostfs_read(root, path, &text);

        return r < 0 ? r : drift_status_list(text, "Cpus_allowed_list", ret);
}

/* The slot of pins thread t's affinity goes to: its vCPU, its iothread, or
 * the main thread's emulator set; NULL for QEMU's other helpers. */
static hwloc_bitmap_t *read_pins_slot(const struct qemuproc *q, const struct qemuproc_thread *t,
                                      struct pinset *pins) {
        if (t->kind == QEMUPROC_VCPU && t->id >= 0 && t->id < pins->nvcpu)
                return &pins->vcpu[t->id];
        if (t->kind == QEMUPROC_EMULATOR && t->tid == q->pid)
                return &pins->emulator;
        for (int k = 0; t->kind == QEMUPROC_IOTHREAD && k < pins->niothread; k++)
                if (pins->iothread_id[k] == t->id)
                        return &pins->iothread[k];
        return NULL;
}

int qemuproc_read_pins(const char *root, pid_t pid, int nvcpu, int niothread, const int *iothread_ids,
                       struct pinset *ret) {
        _cleanup_(qemuproc_freep) struct qemuproc *q = NULL;
        int r;

        if (pid <= 0 || nvcpu <= 0)
                return -ESRCH;
        r = qemuproc_scan(root, pid, &q);
        if (r < 0)
                return r;
        pinset_init(ret, nvcpu, niothread, iothread_ids);
        for (int i = 0; i < q->nthread; i++) {
                hwloc_bitmap_t *slot = read_pins_slot(q, &q->threads[i], ret);

                if (slot && !*slot && qemuproc_read_affinity(root, pid, q->threads[i].tid, slot) < 0)
                        *slot = NULL;
        }
        for (int i = 0; i < ret->nvcpu; i++)            /* a vanished thread: an empty list */
                if (!ret->vcpu[i])
                        ret->vcpu[i] = hwloc_bitmap_alloc();
        for (int i = 0; i < ret->niothread; i++)
                if (!ret->iothread[i])
                        ret->iothread[i] = hwloc_bitmap_alloc();
        return 0;
}

/* ---- memory per node ---------------------------------------------------------- */

/* " kernelpagesize_kB=2048" -> 2048; 0 when the line has none. */
static uint64_t numa_maps_page_kib(const char *line) {
        const char *k = strstr(line, " kernelpagesize_kB=");
        uint64_t kib = 0;

        if (!k || safe_atou64_prefix(k + strlen(" kernelpagesize_kB="), &kib, NULL) < 0)
                return 0;
        return kib;
}

static int numa_maps_huge_size(uint64_t page_kib) {
        for (int s = 0; s < TOPO_PAGE_SIZES; s++)
                if (hugepages_size_kib(s) == page_kib)
                        return s;
        return -1;
}

/* One mapping: each "N<node>=<pages>" goes to the hugepages of its size (a
 * "huge" mapping of 2M/1G) or, for base pages, to the node's KiB. */
static uint64_t numa_maps_line(const char *line, const struct topo *t,
                               uint64_t (*ret_pages)[TOPO_PAGE_SIZES], uint64_t *ret_base_kib) {
        uint64_t page_kib = numa_maps_page_kib(line), found = 0;
        bool huge = strstr(line, " huge") != NULL;
        int size = huge ? numa_maps_huge_size(page_kib) : -1;

        if (!page_kib || (huge ? size < 0 || !ret_pages : page_kib >= 2048 || !ret_base_kib))
                return 0;
        for (const char *p = strstr(line, " N"); p; p = strstr(p + 1, " N")) {
                unsigned node;
                unsigned long long pages;
                int idx;

                if (sscanf(p, " N%u=%llu", &node, &pages) != 2 || (idx = topo_node_by_os(t, node)) < 0)
                        continue;
                if (huge) {
                        ret_pages[idx][size] += pages;
                        found += pages;
                } else
                        ret_base_kib[idx] += pages * page_kib;
        }
        return found;
}

uint64_t qemuproc_parse_numa_maps(const char *text, const struct topo *t,
                                  uint64_t (*ret_pages)[TOPO_PAGE_SIZES], uint64_t *ret_base_kib) {
        uint64_t found = 0;

        while (text && *text) {
                size_t len = strcspn(text, "\n");
                _cleanup_free_ char *line = xasprintf("%.*s", (int)len, text);

                found += numa_maps_line(line, t, ret_pages, ret_base_kib);
                text += len + (text[len] == '\n');
        }
        return found;
}

int qemuproc_read_numa_maps(const char *root, pid_t pid, const struct topo *t,
                            uint64_t (*ret_pages)[TOPO_PAGE_SIZES], uint64_t *ret_base_kib) {
        _cleanup_free_ char *path = xasprintf("/proc/%d/numa_maps", (int)pid), *text = NULL;
        int r = hostfs_read(root, path, &text);

        if (r < 0)
                return r;
        qemuproc_parse_numa_maps(text, t, ret_pages, ret_base_kib);
        return 0;
}
