/* Host isolation, one pass over what [host] isolation names (see isolate.h).
 * Every mask is read under the sysfs root, decided by lib/isolate.c, recorded
 * on disk, and only then changed through the ops. */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <sys/stat.h>

#include "isolate.h"
#include "kvmtune/hostfs.h"
#include "kvmtune/log.h"
#include "kvmtune/topo.h"
#include "kvmtune/util.h"

#define CGROUP_DEPTH_MAX 32

static const char *const systemd_units[] = { "system.slice", "user.slice", "init.scope" };

/* One change decided in a pass, applied after the record is on disk. */
struct change {
        enum isolate_kind kind;
        long id;
        char name[64];
        char path[64];                  /* the file of an IRQ or the workqueues */
        bool hex;                       /* the file takes a kernel cpumask */
        bool restore;                   /* the entry goes once written */
        hwloc_bitmap_t mask;
};

struct pass {
        struct isolate *s;
        hwloc_const_bitmap_t online, ded;
        hwloc_bitmap_t none;            /* the empty set: put back */
        pid_t *seen;                    /* tids visited */
        int nseen, cseen;
        pid_t *skip;                    /* placed guests' threads, sorted */
        int nskip, cskip;
        pid_t *refused;
        int nrefused, crefused;
        struct change *ch;
        int nch;
        bool *visited;                  /* per record entry, by the end of the pass */
};

static char *list_of(hwloc_const_bitmap_t m) {
        char *s = NULL;

        if (hwloc_bitmap_list_asprintf(&s, m) < 0)
                abort();
        return s;
}

static void report_skip(struct isolate *s, const char *fmt, ...) _printf_(2, 3);
static void report_skip(struct isolate *s, const char *fmt, ...) {
        va_list ap;

        if (s->report.nskipped >= ISOLATE_SKIPPED_MAX)
                return;
        va_start(ap, fmt);
        vsnprintf(s->report.skipped[s->report.nskipped++], sizeof s->report.skipped[0], fmt, ap);
        va_end(ap);
}

/* ---- tid sets ---------------------------------------------------------------------- */

static int tid_cmp(const void *a, const void *b) {
        pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;

        return x < y ? -1 : x > y;
}

static bool tid_in(const pid_t *v, int n, pid_t t) {
        return n > 0 && bsearch(&t, v, (size_t)n, sizeof *v, tid_cmp);
}

/* qsort() must not get NULL, even for no element. */
static void tid_sort(pid_t *v, int n) {
        if (n > 0)
                qsort(v, (size_t)n, sizeof *v, tid_cmp);
}

static void tid_push(pid_t **v, int *n, int *cap, pid_t t) {
        if (*n == *cap) {
                *cap = *cap ? *cap * 2 : 256;
                *v = xrealloc(*v, (size_t)*cap * sizeof **v);
        }
        (*v)[(*n)++] = t;
}

/* ---- the record on disk ------------------------------------------------------------ */

static int record_load(struct isolate *s) {
        _cleanup_free_ char *text = NULL;
        int r = hostfs_read(NULL, s->record_path, &text);

        if (r == -ENOENT)
                return 0;
        if (r >= 0)
                r = isolate_record_parse(text, &s->rec);
        if (r < 0)
                return log_full(LOG_WARNING, NULL, NULL, r, "Cannot read the isolation record %s, ignoring it",
                                s->record_path), 0;
        s->written = text;
        text = NULL;
        return 0;
}

static int record_write(const char *path, const char *text) {
        _cleanup_free_ char *tmp = xasprintf("%s.tmp", path);
        _cleanup_close_ int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        size_t len = strlen(text);

        if (fd < 0)
                return -errno;
        if (write(fd, text, len) != (ssize_t)len || fsync(fd) < 0) {
                unlink(tmp);
                return -EIO;
        }
        return rename(tmp, path) < 0 ? -errno : 0;
}

/* Writes the record when it changed; an empty record removes the file. */
static int record_save(struct isolate *s) {
        _cleanup_free_ char *text = s->rec.n > 0 ? isolate_record_format(&s->rec) : NULL;
        int r = 0;

        if ((!text && !s->written) || (text && s->written && streq(text, s->written)))
                return 0;
        if (text)
                r = record_write(s->record_path, text);
        else if (unlink(s->record_path) < 0 && errno != ENOENT)
                r = -errno;
        if (r < 0 && !s->save_failed) {
                s->save_failed = true;
                return log_error_errno(r, "Cannot write the isolation record %s: nothing is confined until it "
                                       "can be, only put back", s->record_path);
        }
        if (r < 0)
                return r;
        s->save_failed = false;
        free(s->written);
        s->written = text;
        text = NULL;
        return 0;
}

/* ---- tasks ----------------------------------------------------------------------------- */

static int task_start(const char *root, pid_t tid, unsigned long long *ret) {
        _cleanup_free_ char *path = xasprintf("/proc/%d/stat", (int)tid), *text = NULL;
        int r = hostfs_read(root, path, &text);

        return r < 0 ? r : isolate_stat_start(text, ret);
}

static struct change *change_add(struct pass *p, enum isolate_kind kind, long id, const char *name,
                                 hwloc_const_bitmap_t mask, bool restore) {
        struct change *c;

        p->ch = xrealloc(p->ch, (size_t)(p->nch + 1) * sizeof *p->ch);
        c = &p->ch[p->nch++];
        *c = (struct change){ .kind = kind, .id = id, .restore = restore, .mask = hwloc_bitmap_dup(mask) };
        snprintf(c->name, sizeof c->name, "%s", name ? name : "");
        if (!c->mask)
                abort();
        return c;
}

/* A task new to us whose mask is the one its parent (the thread group leader,
 * or the parent process) got from us inherited it: it gets the parent's
 * original mask back on restore too. */
static struct isolate_entry *task_inherit(struct pass *p, enum isolate_kind kind, pid_t tid,
                                          hwloc_const_bitmap_t cur) {
        _cleanup_free_ char *path = xasprintf("/proc/%d/status", (int)tid), *text = NULL;
        const struct isolate_entry *parent;
        unsigned long long start = 0;
        pid_t tgid, ppid;

        if (hostfs_read(p->s->root, path, &text) < 0)
                return NULL;
        isolate_status_ids(text, &tgid, &ppid);
        parent = isolate_record_find(&p->s->rec, kind, tgid != tid ? tgid : ppid, NULL);
        if (!parent || !hwloc_bitmap_isequal(cur, parent->applied) || task_start(p->s->root, tid, &start) < 0)
                return NULL;
        return isolate_record_add(&p->s->rec, kind, tid, start, NULL, parent->orig, cur);
}

static void task_new_entry(struct pass *p, enum isolate_kind kind, pid_t tid, hwloc_const_bitmap_t cur,
                           hwloc_const_bitmap_t mask) {
        unsigned long long start = 0;

        if (task_start(p->s->root, tid, &start) < 0)
                return;                 /* gone */
        isolate_record_add(&p->s->rec, kind, tid, start, NULL, cur, mask)->seen = true;
        change_add(p, kind, tid, NULL, mask, false);
}

static void task_decide(struct pass *p, enum isolate_kind kind, pid_t tid, hwloc_const_bitmap_t ded,
                        hwloc_const_bitmap_t cur, struct isolate_entry *e) {
        _cleanup_bitmap_ hwloc_bitmap_t mask = bitmap_new();
        _cleanup_free_ char *list = NULL;

        if (e)
                e->seen = true;
        switch (isolate_decide(cur, ded, e, mask)) {
        case ISOLATE_NONE:
                break;
        case ISOLATE_SET:
                if (!e)
                        return task_new_entry(p, kind, tid, cur, mask);
                hwloc_bitmap_copy(e->applied, mask);
                change_add(p, kind, tid, NULL, mask, false);
                break;
        case ISOLATE_RESTORE:
                change_add(p, kind, tid, NULL, mask, true);
                break;
        case ISOLATE_ONLY_DEDICATED:
                p->s->report.kept++;
                list = list_of(cur);
                report_skip(p->s, "%s %d: on dedicated CPUs %s only, left alone",
                            kind == ISOLATE_KIND_GUEST ? "guest thread" : "task", (int)tid, list);
                break;
        }
}

static void task_visit(struct pass *p, enum isolate_kind kind, pid_t tid, hwloc_const_bitmap_t ded) {
        _cleanup_bitmap_ hwloc_bitmap_t cur = bitmap_new();
        struct isolate_entry *e;

        if (tid_in(p->skip, p->nskip, tid))
                return;                 /* a placed guest's thread */
        if (tid_in(p->s->refused, p->s->nrefused, tid)) {
                tid_push(&p->refused, &p->nrefused, &p->crefused, tid);
                p->s->report.refused++;
                return;
        }
        e = isolate_record_find(&p->s->rec, kind, tid, NULL);
        if ((e && e->seen) || p->s->ops->get_affinity(p->s->ud, tid, cur) < 0)
                return;                 /* listed twice (a cgroup moved meanwhile), or gone */
        tid_push(&p->seen, &p->nseen, &p->cseen, tid);
        if (!e && !tid_in(p->s->known, p->s->nknown, tid))
                e = task_inherit(p, kind, tid, cur);
        task_decide(p, kind, tid, ded, cur, e);
}

/* ---- the scope's cgroups ------------------------------------------------------------------ */

/* The hierarchy the scope is a path in, and its per-cgroup thread list file:
 * the v1 cpuset hierarchy when mounted, else the unified one. */
static const char *cgroup_base(const char *root, const char **ret_file) {
        _cleanup_free_ char *v1 = hostfs_path(root, "/sys/fs/cgroup/cpuset/tasks");
        _cleanup_free_ char *v2 = hostfs_path(root, "/sys/fs/cgroup/cgroup.threads");

        if (access(v1, F_OK) == 0)
                return *ret_file = "tasks", "/sys/fs/cgroup/cpuset";
        if (access(v2, F_OK) == 0)
                return *ret_file = "cgroup.threads", "/sys/fs/cgroup";
        return NULL;
}

static void cgroup_tasks(struct pass *p, const char *dir, const char *file) {
        _cleanup_free_ char *path = xasprintf("%s/%s", dir, file), *text = NULL;
        char *save = NULL;

        if (hostfs_read(p->s->root, path, &text) < 0)
                return;                 /* removed meanwhile */
        for (char *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
                int tid;

                if (safe_atoi(l, 1, INT_MAX, &tid) == 0)
                        task_visit(p, ISOLATE_KIND_TASK, (pid_t)tid, p->ded);
        }
}

/* dir is a path below the root; recurse below it unless flat. */
static void cgroup_walk(struct pass *p, const char *dir, const char *file, bool flat, int depth) {
        _cleanup_free_ char *full = hostfs_path(p->s->root, dir);
        _cleanup_closedir_ DIR *dh = NULL;
        struct dirent *de;

        cgroup_tasks(p, dir, file);
        if (flat || depth >= CGROUP_DEPTH_MAX || !(dh = opendir(full)))
                return;
        while ((de = readdir(dh))) {
                _cleanup_free_ char *sub = NULL;

                if (de->d_type != DT_DIR || de->d_name[0] == '.' || isolate_cgroup_skip(de->d_name))
                        continue;
                sub = xasprintf("%s/%s", dir, de->d_name);
                cgroup_walk(p, sub, file, false, depth + 1);
        }
}

static bool systemd_mode(const struct isolate *s) {
        return streq(s->scope, "/") && s->ops->systemd(s->ud);
}

static void tasks_pass(struct pass *p) {
        const char *file = NULL, *base = cgroup_base(p->s->root, &file);
        _cleanup_free_ char *dir = NULL, *full = NULL;

        if (!base) {
                report_skip(p->s, "tasks: no cpuset or unified cgroup hierarchy under /sys/fs/cgroup");
                return;
        }
        dir = streq(p->s->scope, "/") ? xstrdup(base) : xasprintf("%s%s", base, p->s->scope);
        full = hostfs_path(p->s->root, dir);
        if (access(full, F_OK) < 0) {
                report_skip(p->s, "tasks: no cgroup %s", full);
                return;
        }
        /* systemd hosts: the slices carry AllowedCPUs=, the root cgroup's own
         * tasks (kernel threads) are done one by one */
        cgroup_walk(p, dir, file, systemd_mode(p->s), 0);
}

/* ---- systemd units ----------------------------------------------------------------------------- */

/* An unset AllowedCPUs (empty) means every online CPU. */
static void unit_effective(hwloc_bitmap_t m, hwloc_const_bitmap_t online) {
        if (hwloc_bitmap_iszero(m))
                hwloc_bitmap_copy(m, online);
}

static void unit_visit(struct pass *p, const char *unit, hwloc_const_bitmap_t ded) {
        _cleanup_bitmap_ hwloc_bitmap_t raw = bitmap_new(), cur = NULL, mask = bitmap_new();
        struct isolate_entry *e = isolate_record_find(&p->s->rec, ISOLATE_KIND_UNIT, 0, unit);
        struct isolate_entry eff = {};

        if (p->s->ops->unit_get(p->s->ud, unit, raw) < 0)
                return;
        if (e && !hwloc_bitmap_isequal(raw, e->applied)) {
                hwloc_bitmap_copy(e->orig, raw);
                hwloc_bitmap_copy(e->applied, raw);
        }
        cur = hwloc_bitmap_dup(raw);
        unit_effective(cur, p->online);
        if (e) {
                e->seen = true;
                eff.orig = hwloc_bitmap_dup(e->orig);
                eff.applied = hwloc_bitmap_dup(cur);
                unit_effective(eff.orig, p->online);
        }
        switch (isolate_decide(cur, ded, e ? &eff : NULL, mask)) {
        case ISOLATE_SET:
                if (!e)
                        isolate_record_add(&p->s->rec, ISOLATE_KIND_UNIT, 0, 0, unit, raw, mask)->seen = true;
                else
                        hwloc_bitmap_copy(e->applied, mask);
                change_add(p, ISOLATE_KIND_UNIT, 0, unit, mask, false);
                break;
        case ISOLATE_RESTORE:
                change_add(p, ISOLATE_KIND_UNIT, 0, unit, e->orig, true);
                break;
        case ISOLATE_NONE:
                break;
        case ISOLATE_ONLY_DEDICATED:
                report_skip(p->s, "%s: AllowedCPUs on dedicated CPUs only, left alone", unit);
                break;
        }
        if (e) {
                hwloc_bitmap_free(eff.orig);
                hwloc_bitmap_free(eff.applied);
        }
}

static void units_pass(struct pass *p, hwloc_const_bitmap_t ded) {
        for (size_t i = 0; i < ELEMENTSOF(systemd_units); i++)
                unit_visit(p, systemd_units[i], ded);
}

/* ---- files: IRQs and the workqueue cpumask ------------------------------------------------------ */

static int file_read_mask(const char *root, const char *path, bool hex, hwloc_bitmap_t ret) {
        _cleanup_free_ char *text = NULL;
        int r = hostfs_read(root, path, &text);

        if (r < 0)
                return r;
        return hex ? isolate_mask_parse(text, ret) : isolate_list_parse(text, ret);
}

static void file_visit(struct pass *p, enum isolate_kind kind, long id, const char *path, bool hex,
                       hwloc_const_bitmap_t ded) {
        _cleanup_bitmap_ hwloc_bitmap_t cur = bitmap_new(), mask = bitmap_new();
        struct isolate_entry *e = isolate_record_find(&p->s->rec, kind, id, NULL);
        struct change *c;
        enum isolate_action a;

        if (file_read_mask(p->s->root, path, hex, cur) < 0)
                return;
        if (e)
                e->seen = true;
        a = isolate_decide(cur, ded, e, mask);
        if (a == ISOLATE_SET && !e)
                isolate_record_add(&p->s->rec, kind, id, 0, NULL, cur, mask)->seen = true;
        else if (a == ISOLATE_SET)
                hwloc_bitmap_copy(e->applied, mask);
        if (a != ISOLATE_SET && a != ISOLATE_RESTORE)
                return;
        c = change_add(p, kind, id, NULL, mask, a == ISOLATE_RESTORE);
        snprintf(c->path, sizeof c->path, "%s", path);
        c->hex = hex;
}

static void irqs_pass(struct pass *p, hwloc_const_bitmap_t ded) {
        _cleanup_free_ char *dir = hostfs_path(p->s->root, "/proc/irq");
        _cleanup_closedir_ DIR *dh = opendir(dir);
        struct dirent *de;

        file_visit(p, ISOLATE_KIND_IRQ, -1, "/proc/irq/default_smp_affinity", true, ded);
        while (dh && (de = readdir(dh))) {
                _cleanup_free_ char *path = NULL;
                int irq;

                if (safe_atoi(de->d_name, 0, INT_MAX, &irq) < 0)
                        continue;
                if (tid_in(p->s->irqs_refused, p->s->nirqs_refused, (pid_t)irq)) {
                        p->s->report.irqs_managed++;
                        continue;
                }
                path = xasprintf("/proc/irq/%d/smp_affinity_list", irq);
                file_visit(p, ISOLATE_KIND_IRQ, irq, path, false, ded);
        }
}

static void workqueues_pass(struct pass *p, hwloc_const_bitmap_t ded) {
        file_visit(p, ISOLATE_KIND_WORKQUEUE, 0, "/sys/devices/virtual/workqueue/cpumask", true, ded);
}

/* ---- irqbalance ------------------------------------------------------------------------------------- */

static struct isolate_entry *record_first(const struct isolate_record *r, enum isolate_kind kind) {
        for (int i = 0; i < r->n; i++)
                if (r->e[i].kind == kind)
                        return &r->e[i];
        return NULL;
}

/* "SLEEP 10 ... BANNED 00000000,0000000c": the CPUs it keeps IRQs off. */
static int irqbalance_banned(struct pass *p, pid_t *ret_pid, hwloc_bitmap_t ret) {
        char reply[8192] = "";
        const char *b;
        int r = p->s->ops->irqbalance(p->s->ud, "setup", ret_pid, reply, sizeof reply);

        if (r < 0)
                return r;
        b = strstr(reply, "BANNED ");
        return b ? isolate_mask_parse(b + strlen("BANNED "), ret) : -EBADMSG;
}

static int irqbalance_ban(struct pass *p, hwloc_const_bitmap_t cpus) {
        _cleanup_free_ char *list = hwloc_bitmap_iszero(cpus) ? xstrdup("NULL") : list_of(cpus);
        _cleanup_free_ char *cmd = xasprintf("settings cpus %s", list);
        pid_t pid;

        return p->s->ops->irqbalance(p->s->ud, cmd, &pid, NULL, 0);
}

/* irqbalance owns the IRQ affinities while it runs: it is told to ban the
 * dedicated CPUs (on top of what it bans already) instead of being fought.
 * Returns whether it runs. */
static bool irqbalance_pass(struct pass *p, hwloc_const_bitmap_t ded) {
        _cleanup_bitmap_ hwloc_bitmap_t banned = bitmap_new(), want = bitmap_new();
        struct isolate_entry *e = record_first(&p->s->rec, ISOLATE_KIND_IRQBALANCE);
        pid_t pid = 0;

        if (irqbalance_banned(p, &pid, banned) < 0) {
                if (e)
                        isolate_record_del(&p->s->rec, e);      /* it stopped: its ban went with it */
                return false;
        }
        if (e && e->id != pid) {
                isolate_record_del(&p->s->rec, e);              /* restarted with its own settings */
                e = NULL;
        }
        if (e)
                e->seen = true;
        if (hwloc_bitmap_iszero(ded)) {
                if (e)
                        change_add(p, ISOLATE_KIND_IRQBALANCE, pid, NULL, e->orig, true);
                return true;
        }
        hwloc_bitmap_or(want, e ? e->orig : banned, ded);
        if (!e)
                e = isolate_record_add(&p->s->rec, ISOLATE_KIND_IRQBALANCE, pid, 0, NULL, banned, banned);
        e->seen = true;
        if (!hwloc_bitmap_isequal(banned, want) || !hwloc_bitmap_isequal(e->applied, want)) {
                hwloc_bitmap_copy(e->applied, want);
                change_add(p, ISOLATE_KIND_IRQBALANCE, pid, NULL, want, false);
        }
        return true;
}

/* Back to what it banned: "NULL" drops our setting (it falls back to its
 * environment and the isolated CPUs); if that is not what it had, the old
 * list is set again. */
static int irqbalance_restore(struct pass *p, hwloc_const_bitmap_t orig) {
        _cleanup_bitmap_ hwloc_bitmap_t now = bitmap_new();
        pid_t pid;
        int r = irqbalance_ban(p, now);

        if (r >= 0 && irqbalance_banned(p, &pid, now) >= 0 && !hwloc_bitmap_isequal(now, orig))
                r = irqbalance_ban(p, orig);
        return r;
}

/* ---- applying the changes ------------------------------------------------------------------------- */

static int change_write_file(struct pass *p, const struct change *c) {
        _cleanup_free_ char *text = c->hex ? isolate_mask_format(c->mask) : list_of(c->mask);
        _cleanup_free_ char *line = xasprintf("%s\n", text);

        return p->s->ops->write_file(p->s->ud, c->path, line);
}

static int change_apply(struct pass *p, const struct change *c) {
        switch (c->kind) {
        case ISOLATE_KIND_TASK:
        case ISOLATE_KIND_GUEST:
                return p->s->ops->set_affinity(p->s->ud, (pid_t)c->id, c->mask);
        case ISOLATE_KIND_UNIT:
                return p->s->ops->unit_set(p->s->ud, c->name, c->mask);
        case ISOLATE_KIND_IRQBALANCE:
                return c->restore ? irqbalance_restore(p, c->mask) : irqbalance_ban(p, c->mask);
        default:
                return change_write_file(p, c);
        }
}

/* A refusal is remembered (tasks while they live, IRQs for good), so that
 * later passes neither retry it nor rewrite the record for it. */
static void change_failed(struct pass *p, const struct change *c, int r) {
        struct isolate *s = p->s;
        bool task = c->kind == ISOLATE_KIND_TASK || c->kind == ISOLATE_KIND_GUEST;
        bool irq = c->kind == ISOLATE_KIND_IRQ && c->id >= 0;

        if (c->restore || (task && r == -ESRCH))
                return;
        if (task) {
                tid_push(&p->refused, &p->nrefused, &p->crefused, (pid_t)c->id);
                s->report.refused++;
        } else if (irq) {
                tid_push(&s->irqs_refused, &s->nirqs_refused, &s->cirqs_refused, (pid_t)c->id);
                tid_sort(s->irqs_refused, s->nirqs_refused);
                s->report.irqs_managed++;
        }
        /* per-CPU kernel threads and managed IRQs refuse with EINVAL/EIO: expected */
        if ((!task && !irq) || (r != -EINVAL && r != -EIO))
                report_skip(s, "%s %ld%s%s: %s", isolate_kind_to_string(c->kind), c->id,
                            c->name[0] ? " " : "", c->name, strerror(-r));
}

/* Without the record on disk (narrow false) only what puts things back is
 * applied. */
static void changes_apply(struct pass *p, bool narrow) {
        for (int i = 0; i < p->nch; i++) {
                struct change *c = &p->ch[i];
                struct isolate_entry *e = isolate_record_find(&p->s->rec, c->kind, c->id, c->name);
                int r;

                if (!narrow && !c->restore)
                        continue;
                r = change_apply(p, c);

                if (r < 0)
                        change_failed(p, c, r);
                if (e && (c->restore || r < 0))
                        isolate_record_del(&p->s->rec, e);
        }
}

static void changes_free(struct pass *p) {
        for (int i = 0; i < p->nch; i++)
                hwloc_bitmap_free(p->ch[i].mask);
        free(p->ch);
}

/* ---- the pass ------------------------------------------------------------------------------------------ */

/* A task entry the walk did not reach: the task left the scope (put back if
 * the mask is still ours) or is gone; a guest's thread whose guest is now
 * placed (placement owns it) or gone, or is not known (stopped before the
 * first scan: put back like a task when nothing is dedicated); an IRQ that
 * went away. */
static void sweep_entry(struct pass *p, struct isolate_entry *e) {
        _cleanup_bitmap_ hwloc_bitmap_t cur = bitmap_new();
        unsigned long long start = 0;

        e->seen = true;
        if ((e->kind != ISOLATE_KIND_TASK && (e->kind != ISOLATE_KIND_GUEST || !hwloc_bitmap_iszero(p->ded))) || p->s->ops->get_affinity(p->s->ud, (pid_t)e->id, cur) < 0 ||
            task_start(p->s->root, (pid_t)e->id, &start) < 0 || start != e->start ||
            !hwloc_bitmap_isequal(cur, e->applied)) {
                isolate_record_del(&p->s->rec, e);
                return;
        }
        change_add(p, e->kind, e->id, NULL, e->orig, true);
}

static void sweep(struct pass *p) {
        for (int i = 0; i < p->s->rec.n; )
                if (p->s->rec.e[i].seen || p->s->rec.e[i].kind == ISOLATE_KIND_UNIT) {
                        i++;
                } else {
                        int n = p->s->rec.n;

                        sweep_entry(p, &p->s->rec.e[i]);
                        i += n == p->s->rec.n;
                }
}

static bool record_has(const struct isolate_record *r, enum isolate_kind kind) {
        return record_first(r, kind) != NULL;
}

/* The threads of a guest's QEMU (none when it is gone). Returns how many,
 * *ret a new array. */
static int guest_tids(const char *root, pid_t pid, pid_t **ret) {
        _cleanup_free_ char *rel = xasprintf("/proc/%d/task", (int)pid);
        _cleanup_free_ char *dir = hostfs_path(root, rel);
        _cleanup_closedir_ DIR *dh = opendir(dir);
        struct dirent *de;
        int n = 0, cap = 0, tid;

        *ret = NULL;
        while (dh && (de = readdir(dh)))
                if (safe_atoi(de->d_name, 1, INT_MAX, &tid) == 0)
                        tid_push(ret, &n, &cap, (pid_t)tid);
        return n;
}

/* Placed guests' threads are skipped by the task walk. */
static void guests_skip(struct pass *p, const struct isolate_guest *g, int n) {
        for (int i = 0; i < n; i++) {
                _cleanup_free_ pid_t *t = NULL;
                int nt = g[i].placed ? guest_tids(p->s->root, g[i].pid, &t) : 0;

                for (int k = 0; k < nt; k++)
                        tid_push(&p->skip, &p->nskip, &p->cskip, t[k]);
        }
        tid_sort(p->skip, p->nskip);
}

static void guests_pass(struct pass *p, const struct isolate_guest *g, int n, hwloc_const_bitmap_t ded) {
        for (int i = 0; i < n; i++) {
                _cleanup_free_ pid_t *t = NULL;
                _cleanup_free_ char *hand = NULL;
                bool conflict = g[i].hand && hwloc_bitmap_intersects(g[i].hand, ded);
                int nt = g[i].placed ? 0 : guest_tids(p->s->root, g[i].pid, &t);

                if (conflict && !g[i].placed) {
                        hand = list_of(g[i].hand);
                        report_skip(p->s, "guest %s: its own pins (%s) name dedicated CPUs: conflict, left alone",
                                    g[i].name, hand);
                }
                for (int k = 0; k < nt; k++)
                        task_visit(p, ISOLATE_KIND_GUEST, t[k], conflict ? p->none : ded);
        }
}

/* Counts in the report come from the record: what is in force now. */
static void report_from_record(struct isolate *s) {
        for (int i = 0; i < s->rec.n; i++) {
                const struct isolate_entry *e = &s->rec.e[i];

                s->report.tasks += e->kind == ISOLATE_KIND_TASK;
                s->report.guest_threads += e->kind == ISOLATE_KIND_GUEST;
                s->report.units += e->kind == ISOLATE_KIND_UNIT;
                s->report.irqs += e->kind == ISOLATE_KIND_IRQ && e->id >= 0;
                s->report.default_irq |= e->kind == ISOLATE_KIND_IRQ && e->id < 0;
                s->report.workqueues |= e->kind == ISOLATE_KIND_WORKQUEUE;
                s->report.irqbalance |= e->kind == ISOLATE_KIND_IRQBALANCE;
        }
}

static void pass_visit(struct pass *p, unsigned what, const struct isolate_guest *g, int ng) {
        hwloc_const_bitmap_t ded = p->ded, none = p->none;
        bool any = !hwloc_bitmap_iszero(ded);

        p->s->report.systemd = what & ISOLATE_TASKS && systemd_mode(p->s);
        guests_skip(p, g, ng);
        if (what & ISOLATE_TASKS && any)
                tasks_pass(p);
        if ((what & ISOLATE_TASKS && any && systemd_mode(p->s)) || record_has(&p->s->rec, ISOLATE_KIND_UNIT))
                units_pass(p, what & ISOLATE_TASKS ? ded : none);
        if (((what & ISOLATE_GUESTS) && any) || record_has(&p->s->rec, ISOLATE_KIND_GUEST))
                guests_pass(p, g, ng, what & ISOLATE_GUESTS ? ded : none);
        if ((what & ISOLATE_IRQS && any) || record_has(&p->s->rec, ISOLATE_KIND_IRQ) ||
            record_has(&p->s->rec, ISOLATE_KIND_IRQBALANCE)) {
                hwloc_const_bitmap_t d = what & ISOLATE_IRQS ? ded : none;

                if (!irqbalance_pass(p, d) || record_has(&p->s->rec, ISOLATE_KIND_IRQ))
                        irqs_pass(p, d);
        }
        if ((what & ISOLATE_WORKQUEUES && any) || record_has(&p->s->rec, ISOLATE_KIND_WORKQUEUE))
                workqueues_pass(p, what & ISOLATE_WORKQUEUES ? ded : none);
        sweep(p);
}

/* The tids seen become the known ones (a new tid is looked at for an
 * inherited mask once); refusals are remembered while the task lives. */
static void pass_done(struct pass *p) {
        tid_sort(p->seen, p->nseen);
        tid_sort(p->refused, p->nrefused);
        free(p->s->known);
        p->s->known = p->seen;
        p->s->nknown = p->nseen;
        free(p->s->refused);
        p->s->refused = p->refused;
        p->s->nrefused = p->nrefused;
        changes_free(p);
        free(p->skip);
        hwloc_bitmap_free(p->none);
}

int isolate_pass(struct isolate *s, unsigned what, const char *scope, hwloc_const_bitmap_t online,
                 hwloc_const_bitmap_t dedicated, const struct isolate_guest *guests, int nguest) {
        struct pass p = { .s = s, .online = online, .none = bitmap_new() };
        _cleanup_bitmap_ hwloc_bitmap_t ded = isolate_effective(online, what ? dedicated : p.none);
        _cleanup_free_ char *before = NULL;
        int r;

        free(s->scope);
        s->scope = xstrdup(scope ? scope : "/");
        s->what = what;
        s->report = (struct isolate_report){};
        for (int i = 0; i < s->rec.n; i++)
                s->rec.e[i].seen = false;
        if (what && hwloc_bitmap_iszero(ded) && hwloc_bitmap_intersects(online, dedicated))
                report_skip(s, "every online CPU is dedicated: nothing confined (the last housekeeping CPU "
                               "is never taken)");
        p.ded = ded;
        before = isolate_record_format(&s->rec);
        pass_visit(&p, what, guests, nguest);
        r = record_save(s);             /* what is about to change is on disk first */
        if (r < 0) {                    /* or nothing is narrowed: the record stays as it was */
                report_skip(s, "the isolation record %s cannot be written: nothing confined", s->record_path);
                isolate_record_parse(before, &s->rec);
        }
        changes_apply(&p, r >= 0);
        if (r >= 0)
                r = record_save(s);
        report_from_record(s);
        hwloc_bitmap_copy(s->dedicated, ded);
        pass_done(&p);
        return r;
}

bool isolate_busy(const struct isolate *s) {
        return s->rec.n > 0 || !hwloc_bitmap_iszero(s->dedicated);
}

/* Task entries of an earlier kvmtuned whose task is gone or is another one
 * now (the tid was reused) are dropped. */
static void adopt(struct isolate *s) {
        for (int i = 0; i < s->rec.n; ) {
                struct isolate_entry *e = &s->rec.e[i];
                unsigned long long start = 0;
                bool task = e->kind == ISOLATE_KIND_TASK || e->kind == ISOLATE_KIND_GUEST;

                if (task && (task_start(s->root, (pid_t)e->id, &start) < 0 || start != e->start))
                        isolate_record_del(&s->rec, e);
                else
                        i++;
        }
}

int isolate_new(const char *root, const char *record_path, const struct isolate_ops *ops, void *ud,
                struct isolate **ret) {
        struct isolate *s = xcalloc(1, sizeof *s);

        s->root = root;
        s->record_path = xstrdup(record_path);
        s->ops = ops;
        s->ud = ud;
        s->scope = xstrdup("/");
        s->dedicated = bitmap_new();
        record_load(s);
        adopt(s);
        if (s->rec.n > 0)
                log_info("Adopted %d isolation change%s recorded in %s", s->rec.n, s->rec.n == 1 ? "" : "s",
                         record_path);
        *ret = s;
        return 0;
}

struct isolate *isolate_free(struct isolate *s) {
        if (!s)
                return NULL;
        isolate_record_clear(&s->rec);
        hwloc_bitmap_free(s->dedicated);
        free(s->record_path);
        free(s->scope);
        free(s->known);
        free(s->refused);
        free(s->irqs_refused);
        free(s->written);
        free(s);
        return NULL;
}
