/* daemon/isolate.c on the fixture tree tests/fixtures/isolate (see its README):
 * whole-host default, a scope, IRQs, workqueues, guests left alone, systemd
 * units, irqbalance, restart adoption and the exact restore, with every effect
 * recorded by fake ops. */
#include "config.h"

#include <errno.h>
#include <sys/stat.h>

#include "../../daemon/isolate.h"
#include "kvmtune/hostfs.h"
#include "kvmtune/log.h"
#include "kvmtune/topo.h"
#include "kvmtune/util.h"
#include "tap.h"
#include "test-data.h"

#define NTASK 64

struct fake {
        char root[64];
        char record[96];                /* the record file, in root */
        int nt;
        pid_t tid[NTASK];
        hwloc_bitmap_t mask[NTASK];
        char log[16384];
        bool systemd;
        hwloc_bitmap_t unit[3];
        bool irqbalance;
        hwloc_bitmap_t banned, env_banned;
};

static const char *const units[] = { "system.slice", "user.slice", "init.scope" };

static hwloc_bitmap_t set(const char *list) {
        hwloc_bitmap_t m = hwloc_bitmap_alloc();

        if (*list)
                hwloc_bitmap_list_sscanf(m, list);
        return m;
}

/* Appends "VERB WHAT LIST\n" to the call log. */
static void log_call(struct fake *f, const char *verb, const char *what, hwloc_const_bitmap_t m) {
        char *l = NULL;
        size_t n = strlen(f->log);

        hwloc_bitmap_list_asprintf(&l, m);
        snprintf(f->log + n, sizeof f->log - n, "%s %s %s\n", verb, what, l);
        free(l);
}

static int task_index(struct fake *f, pid_t tid) {
        _cleanup_free_ char *path = xasprintf("/proc/%d/status", (int)tid), *text = NULL;
        char *line;

        for (int i = 0; i < f->nt; i++)
                if (f->tid[i] == tid)
                        return i;
        if (hostfs_read(f->root, path, &text) < 0 || !(line = strstr(text, "Cpus_allowed_list:\t")))
                return -ESRCH;
        line += strlen("Cpus_allowed_list:\t");
        line[strcspn(line, "\n")] = '\0';
        f->tid[f->nt] = tid;
        f->mask[f->nt] = set(line);
        return f->nt++;
}

static int fake_get(void *ud, pid_t tid, hwloc_bitmap_t ret) {
        int i = task_index(ud, tid);

        if (i < 0)
                return i;
        hwloc_bitmap_copy(ret, ((struct fake *)ud)->mask[i]);
        return 0;
}

static int fake_set(void *ud, pid_t tid, hwloc_const_bitmap_t cpus) {
        struct fake *f = ud;
        int i = task_index(f, tid);
        char t[16];

        if (tid == 4)
                return -EINVAL;         /* the refusing kworker */
        if (i < 0)
                return i;
        hwloc_bitmap_copy(f->mask[i], cpus);
        snprintf(t, sizeof t, "%d", (int)tid);
        log_call(f, "set", t, cpus);
        return 0;
}

static int fake_write(void *ud, const char *path, const char *value) {
        struct fake *f = ud;
        size_t n = strlen(f->log);

        if (strstr(path, "/26/")) {
                snprintf(f->log + n, sizeof f->log - n, "refused %s\n", path);
                return -EIO;            /* a managed IRQ */
        }
        snprintf(f->log + n, sizeof f->log - n, "write %s %s", path, value);
        return hostfs_write(f->root, path, value);
}

static bool fake_systemd(void *ud) {
        return ((struct fake *)ud)->systemd;
}

static int unit_index(const char *unit) {
        for (int i = 0; i < 3; i++)
                if (streq(units[i], unit))
                        return i;
        return -ENOENT;
}

static int fake_unit_get(void *ud, const char *unit, hwloc_bitmap_t ret) {
        int i = unit_index(unit);

        if (i < 0)
                return i;
        hwloc_bitmap_copy(ret, ((struct fake *)ud)->unit[i]);
        return 0;
}

static int fake_unit_set(void *ud, const char *unit, hwloc_const_bitmap_t cpus) {
        struct fake *f = ud;
        int i = unit_index(unit);

        if (i < 0)
                return i;
        hwloc_bitmap_copy(f->unit[i], cpus);
        log_call(f, "unit", unit, cpus);
        return 0;
}

/* irqbalance's protocol: "setup" answers "... BANNED <mask>", "settings cpus
 * LIST" bans, "settings cpus NULL" falls back to its environment. */
static int fake_irqbalance(void *ud, const char *cmd, pid_t *ret_pid, char *reply, size_t len) {
        struct fake *f = ud;
        size_t n = strlen(f->log);

        if (!f->irqbalance)
                return -ENOENT;
        *ret_pid = 777;
        if (streq(cmd, "setup")) {
                _cleanup_free_ char *hex = isolate_mask_format(f->banned);

                snprintf(reply, len, "SLEEP 10 BANNED %s", hex);
                return 0;
        }
        snprintf(f->log + n, sizeof f->log - n, "irqbalance %s\n", cmd);
        if (streq(cmd, "settings cpus NULL"))
                hwloc_bitmap_copy(f->banned, f->env_banned);
        else
                hwloc_bitmap_list_sscanf(f->banned, cmd + strlen("settings cpus "));
        return 0;
}

static const struct isolate_ops fake_ops = {
        .get_affinity = fake_get, .set_affinity = fake_set, .write_file = fake_write,
        .systemd = fake_systemd, .unit_get = fake_unit_get, .unit_set = fake_unit_set,
        .irqbalance = fake_irqbalance,
};

/* ---- helpers -------------------------------------------------------------------- */

static void fake_init(struct fake *f) {
        _cleanup_free_ char *cmd = NULL;
        const char *fixtures = test_fixtures_dir();

        memset(f, 0, sizeof *f);
        snprintf(f->root, sizeof f->root, "/tmp/test-isolate.XXXXXX");
        if (!mkdtemp(f->root))
                abort();
        /* the source may be read-only (make distcheck): the copy is made writable */
        cmd = xasprintf("cp -r '%s/isolate/proc' '%s/isolate/sys' '%s/' && chmod -R u+w '%s'",
                        fixtures, fixtures, f->root, f->root);
        if (system(cmd) != 0)
                abort();
        for (int i = 0; i < 3; i++)
                f->unit[i] = hwloc_bitmap_alloc();
        f->banned = hwloc_bitmap_alloc();
        f->env_banned = hwloc_bitmap_alloc();
}

static void fake_done(struct fake *f) {
        _cleanup_free_ char *cmd = xasprintf("rm -rf '%s'", f->root);

        for (int i = 0; i < f->nt; i++)
                hwloc_bitmap_free(f->mask[i]);
        for (int i = 0; i < 3; i++)
                hwloc_bitmap_free(f->unit[i]);
        hwloc_bitmap_free(f->banned);
        hwloc_bitmap_free(f->env_banned);
        if (system(cmd) != 0)
                abort();
}

static char *task_list(struct fake *f, pid_t tid) {
        char *s = NULL;
        int i = task_index(f, tid);

        if (i < 0)
                return xstrdup("gone");
        hwloc_bitmap_list_asprintf(&s, f->mask[i]);
        return s;
}

static char *file_text(struct fake *f, const char *path) {
        char *text = NULL;

        if (hostfs_read(f->root, path, &text) < 0)
                return xstrdup("missing");
        text[strcspn(text, "\n")] = '\0';
        return text;
}

#define is_task(f, tid, want, ...) do { _cleanup_free_ char *_s = task_list(f, tid); is_str(_s, want, __VA_ARGS__); } while (0)
#define is_file(f, path, want, ...) do { _cleanup_free_ char *_s = file_text(f, path); is_str(_s, want, __VA_ARGS__); } while (0)

/* A fresh copy of the fixture and an isolate on it (its record in the copy). */
static struct isolate *fake_start(struct fake *f) {
        struct isolate *s = NULL;

        fake_init(f);
        snprintf(f->record, sizeof f->record, "%s/isolation", f->root);
        isolate_new(f->root, f->record, &fake_ops, f, &s);
        return s;
}

static void fake_end(struct fake *f, struct isolate *s) {
        isolate_free(s);
        fake_done(f);
}

static int pass(struct isolate *s, unsigned what, const char *scope, const char *ded,
                const struct isolate_guest *g, int ng) {
        _cleanup_bitmap_ hwloc_bitmap_t online = set("0-3"), d = set(ded);

        return isolate_pass(s, what, scope, online, d, g, ng);
}

/* ---- the whole host -------------------------------------------------------------------- */

static void whole_host_first(struct fake *f, struct isolate *s, const struct isolate_guest *g) {
        is_int(pass(s, ISOLATE_ALL, "/", "2", g, 2), 0, "whole host: pass with CPU 2 dedicated");
        is_task(f, 1, "0-1,3", "init confined off CPU 2");
        is_task(f, 2, "0-1,3", "kthreadd confined");
        is_task(f, 3, "2", "a task on CPU 2 only is left alone");
        is_task(f, 10, "0-1", "a task already off CPU 2 is left alone");
        is_task(f, 30, "0-1,3", "a task in a child cgroup confined");
        is_task(f, 500, "0-1,3", "cpu=none guest's main thread off the dedicated CPU");
        is_task(f, 501, "0-1,3", "... and its vCPU thread");
        ok(!strstr(f->log, "set 600 "), "a guest whose hand pin names CPU 2 is not moved");
        ok(!strstr(f->log, "set 10 ") && !strstr(f->log, "set 3 "), "no write for tasks left alone");
        is_int(s->report.tasks, 3, "report: 3 tasks confined");
        is_int(s->report.guest_threads, 2, "report: 2 guest threads");
        is_int(s->report.refused, 1, "report: the kworker refused");
        is_int(s->report.kept, 1, "report: 1 task on dedicated CPUs only");
        is_file(f, "/proc/irq/24/smp_affinity_list", "0-1,3", "IRQ 24 off CPU 2");
        is_file(f, "/proc/irq/25/smp_affinity_list", "2", "IRQ 25 on CPU 2 only left alone");
        is_file(f, "/proc/irq/0/smp_affinity_list", "0", "IRQ 0 already off");
        is_file(f, "/proc/irq/default_smp_affinity", "0000000b", "default_smp_affinity off CPU 2");
        is_int(s->report.irqs, 1, "report: 1 IRQ moved");
        is_int(s->report.irqs_managed, 1, "report: 1 managed IRQ refused");
        ok(strstr(f->log, "refused /proc/irq/26/") != NULL, "the managed IRQ was tried once");
        is_file(f, "/sys/devices/virtual/workqueue/cpumask", "0000000b", "workqueue cpumask off CPU 2");
        ok(s->report.workqueues && s->report.default_irq, "report: workqueues and default IRQ affinity");
        ok(s->report.nskipped >= 1 && strstr(s->report.skipped[s->report.nskipped - 1], "guest hand"),
           "the hand pin conflict is reported");
}

static void add_task(struct fake *f, const char *cgroup, const char *tid) {
        _cleanup_free_ char *path = xasprintf("%s/sys/fs/cgroup/cpuset%s/tasks", f->root, cgroup);
        FILE *fp = fopen(path, "a");

        if (!fp || fprintf(fp, "%s\n", tid) < 0 || fclose(fp) != 0)
                abort();
}

static void whole_host_follow(struct fake *f, struct isolate *s, const struct isolate_guest *g) {
        f->log[0] = '\0';
        hwloc_bitmap_list_sscanf(f->mask[task_index(f, 1)], "0-3");    /* init widens itself */
        add_task(f, "/sub", "31");      /* a child of 30, with its parent's confined mask */
        pass(s, ISOLATE_ALL, "/", "2", g, 2);
        is_task(f, 1, "0-1,3", "a task that widened its mask is confined again");
        ok(!strstr(f->log, "/26/"), "a managed IRQ that refused is not tried again");
        is_int(s->report.irqs_managed, 1, "... and still counted");
        ok(isolate_record_find(&s->rec, ISOLATE_KIND_TASK, 31, NULL) != NULL, "the child is recorded");
        pass(s, ISOLATE_ALL, "/", "2-3", g, 2);
        is_task(f, 1, "0-1", "more dedicated CPUs: narrowed further");
        is_task(f, 31, "0-1", "... the child too");
        is_file(f, "/proc/irq/24/smp_affinity_list", "0-1", "... IRQ 24 too");
}

static void whole_host_restore(struct fake *f, struct isolate *s, const struct isolate_guest *g) {
        const char *rec = f->record;

        ok(access(rec, F_OK) == 0, "the record is on disk while something is confined");
        pass(s, ISOLATE_ALL, "/", "", g, 2);
        is_task(f, 1, "0-3", "nothing dedicated: init back");
        is_task(f, 2, "0-3", "kthreadd back");
        is_task(f, 30, "0-3", "the busy task back");
        is_task(f, 31, "0-3", "the child gets its parent's original mask");
        is_task(f, 500, "0-3", "the guest's threads back");
        is_task(f, 600, "2", "the hand-pinned guest untouched");
        is_file(f, "/proc/irq/24/smp_affinity_list", "0-3", "IRQ 24 back");
        is_file(f, "/proc/irq/default_smp_affinity", "0000000f", "default_smp_affinity back");
        is_file(f, "/sys/devices/virtual/workqueue/cpumask", "0000000f", "workqueue cpumask back");
        is_int(s->rec.n, 0, "the record is empty");
        ok(access(rec, F_OK) < 0, "the record file is gone");
        ok(!isolate_busy(s), "nothing in force: no rescan needed");
}

static void test_whole_host(void) {
        struct fake f;
        _cleanup_bitmap_ hwloc_bitmap_t hand = set("2");
        struct isolate_guest g[] = { { "vm", 500, NULL, false }, { "hand", 600, hand, false } };
        struct isolate *s = fake_start(&f);

        whole_host_first(&f, s, g);
        whole_host_follow(&f, s, g);
        whole_host_restore(&f, s, g);
        fake_end(&f, s);
}

/* ---- a scope, as the integration test sets it ---------------------------------------------- */

static void test_scope(void) {
        struct fake f;
        struct isolate *s = fake_start(&f);

        struct isolate_guest placed[] = { { "db", 30, NULL, true } };

        pass(s, ISOLATE_TASKS | ISOLATE_GUESTS, "/kvmtuned-test", "2", placed, 1);
        is_task(&f, 30, "0-3", "a placed guest's QEMU inside the scope is never touched");
        pass(s, ISOLATE_TASKS | ISOLATE_GUESTS, "/kvmtuned-test", "2", NULL, 0);
        is_task(&f, 30, "0-1,3", "scope: its task confined");
        ok(!strstr(f.log, "set 1 ") && !strstr(f.log, "set 2 "), "scope: tasks outside it untouched");
        ok(!strstr(f.log, "write "), "scope: no IRQ or workqueue written");
        pass(s, ISOLATE_TASKS | ISOLATE_GUESTS, "/kvmtuned-test", "", NULL, 0);
        is_task(&f, 30, "0-3", "scope: put back");
        pass(s, ISOLATE_TASKS | ISOLATE_GUESTS, "/kvmtuned-test", "2", NULL, 0);
        pass(s, 0, "/kvmtuned-test", "2", NULL, 0);
        is_task(&f, 30, "0-3", "switched off (nothing to isolate) while CPU 2 is dedicated: put back");
        pass(s, ISOLATE_TASKS | ISOLATE_GUESTS, "/kvmtuned-test", "0-3", NULL, 0);
        is_task(&f, 30, "0-3", "every CPU dedicated: the last housekeeping CPU is never taken");
        ok(s->report.nskipped == 1 && strstr(s->report.skipped[0], "last housekeeping"), "... and that is reported");
        pass(s, ISOLATE_TASKS, "/nonexistent", "2", NULL, 0);
        ok(s->report.nskipped == 1 && strstr(s->report.skipped[0], "no cgroup"), "a missing scope is reported");
        fake_end(&f, s);
}

/* ---- a killed daemon's record is adopted ------------------------------------------------------ */

static void test_restart(void) {
        struct fake f;
        struct isolate *s = fake_start(&f);

        pass(s, ISOLATE_ALL, "/", "2", NULL, 0);
        isolate_free(s);                /* killed: nothing put back */
        is_task(&f, 1, "0-1,3", "killed: init stays confined");
        /* tid 2 exited and was reused by another task meanwhile */
        if (hostfs_write(f.root, "/proc/2/stat", "2 (other) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 999 0 0\n") < 0)
                abort();
        isolate_new(f.root, f.record, &fake_ops, &f, &s);
        ok(isolate_record_find(&s->rec, ISOLATE_KIND_TASK, 1, NULL) != NULL, "restart: init's entry adopted");
        ok(!isolate_record_find(&s->rec, ISOLATE_KIND_TASK, 2, NULL), "restart: a reused tid is dropped");
        f.log[0] = '\0';
        pass(s, ISOLATE_ALL, "/", "", NULL, 0);
        is_task(&f, 1, "0-3", "restart, nothing dedicated: init back");
        ok(!strstr(f.log, "set 2 "), "the task that reused a tid is not touched");
        is_file(&f, "/proc/irq/default_smp_affinity", "0000000f", "restart: default IRQ affinity back");
        fake_end(&f, s);
}

/* A daemon stopped before its first libvirt scan: a fresh isolate on a killed
 * one's record, no guest known, one pass with nothing in force puts back all
 * the record says, the guests' threads included. */
static void test_stop_unscanned(void) {
        struct fake f;
        struct isolate *s = fake_start(&f);
        struct isolate_guest g[] = { { "vm", 500, NULL, false } };

        pass(s, ISOLATE_ALL, "/", "2", g, 1);
        isolate_free(s);                /* killed */
        isolate_new(f.root, f.record, &fake_ops, &f, &s);
        is_task(&f, 501, "0-1,3", "killed: the guest's vCPU thread stays confined");
        pass(s, 0, "/", "", NULL, 0);
        is_task(&f, 1, "0-3", "stopped unscanned: init back");
        is_task(&f, 30, "0-3", "stopped unscanned: the busy task back");
        is_task(&f, 500, "0-3", "stopped unscanned: the guest's main thread back, its guest unknown");
        is_task(&f, 501, "0-3", "... and its vCPU thread");
        is_file(&f, "/proc/irq/24/smp_affinity_list", "0-3", "stopped unscanned: IRQ 24 back");
        is_file(&f, "/sys/devices/virtual/workqueue/cpumask", "0000000f", "stopped unscanned: workqueues back");
        ok(access(f.record, F_OK) < 0, "stopped unscanned: the record is gone");
        fake_end(&f, s);
}

/* The record guards every change: when it cannot be written nothing is
 * narrowed, while putting back still goes ahead. */
static void test_record_unwritable(void) {
        struct fake f;
        struct isolate *s = fake_start(&f);

        pass(s, ISOLATE_ALL, "/", "2", NULL, 0);
        is_task(&f, 1, "0-1,3", "record written: init confined");
        free(s->record_path);
        s->record_path = xasprintf("%s/missing/isolation", f.root);
        f.log[0] = '\0';
        ok(pass(s, ISOLATE_ALL, "/", "2-3", NULL, 0) < 0, "unwritable record: the pass says so");
        ok(!strstr(f.log, "set ") && !strstr(f.log, "write "), "unwritable record: nothing narrowed further");
        is_task(&f, 1, "0-1,3", "... init keeps the recorded mask");
        ok(s->report.nskipped >= 1 && strstr(s->report.skipped[s->report.nskipped - 1], "cannot be written"),
           "... and that is reported");
        pass(s, ISOLATE_ALL, "/", "", NULL, 0);
        is_task(&f, 1, "0-3", "unwritable record: putting back still goes ahead");
        is_file(&f, "/proc/irq/24/smp_affinity_list", "0-3", "... IRQ 24 back");
        fake_end(&f, s);

        s = fake_start(&f);
        free(s->record_path);
        s->record_path = xasprintf("%s/missing/isolation", f.root);
        ok(pass(s, ISOLATE_ALL, "/", "2", NULL, 0) < 0, "no record from the start: the pass says so");
        ok(!strstr(f.log, "set ") && !strstr(f.log, "write "), "no record from the start: no set_affinity, no write");
        is_int(s->rec.n, 0, "... and nothing is recorded in memory either");
        ok(pass(s, ISOLATE_ALL, "/", "2", NULL, 0) < 0 && !strstr(f.log, "set "), "... nor at the next pass");
        fake_end(&f, s);
}

/* ---- systemd hosts: AllowedCPUs on the slices ---------------------------------------------- */

static void test_systemd(void) {
        struct fake f;
        struct isolate *s = fake_start(&f);

        f.systemd = true;
        hwloc_bitmap_list_sscanf(f.unit[1], "0-2");     /* user.slice set by the admin */
        pass(s, ISOLATE_TASKS, "/", "2", NULL, 0);
        ok(strstr(f.log, "unit system.slice 0-1,3\n") && strstr(f.log, "unit init.scope 0-1,3\n"),
           "systemd: unset AllowedCPUs become the housekeeping CPUs");
        ok(strstr(f.log, "unit user.slice 0-1\n") != NULL, "systemd: a set AllowedCPUs loses the dedicated CPU");
        ok(!strstr(f.log, "machine.slice"), "systemd: machine.slice never touched");
        is_task(&f, 1, "0-1,3", "systemd: the root cgroup's tasks are done one by one");
        ok(!strstr(f.log, "set 30 "), "systemd: tasks in child cgroups are left to the slices");
        is_int(s->report.units, 3, "report: 3 units");
        pass(s, ISOLATE_TASKS, "/", "", NULL, 0);
        ok(hwloc_bitmap_iszero(f.unit[0]) && hwloc_bitmap_iszero(f.unit[2]), "systemd: unset again");
        {
                _cleanup_bitmap_ hwloc_bitmap_t want = set("0-2");
                ok(hwloc_bitmap_isequal(f.unit[1], want), "systemd: user.slice back to 0-2");
        }
        fake_end(&f, s);
}

/* ---- irqbalance runs: it is told, not fought --------------------------------------------------- */

static void test_irqbalance(void) {
        struct fake f;
        struct isolate *s = fake_start(&f);

        f.irqbalance = true;
        hwloc_bitmap_set(f.banned, 1);  /* banned through its UI before us */
        pass(s, ISOLATE_IRQS, "/", "2", NULL, 0);
        ok(strstr(f.log, "irqbalance settings cpus 1-2\n") != NULL, "irqbalance bans the dedicated CPU too");
        is_file(&f, "/proc/irq/24/smp_affinity_list", "0-3", "IRQ files are left to irqbalance");
        is_file(&f, "/proc/irq/default_smp_affinity", "f", "... all of them");
        ok(s->report.irqbalance, "report: through irqbalance");
        f.log[0] = '\0';
        pass(s, ISOLATE_IRQS, "/", "2", NULL, 0);
        ok(f.log[0] == '\0', "nothing sent again while its ban holds");
        pass(s, ISOLATE_IRQS, "/", "", NULL, 0);
        ok(strstr(f.log, "irqbalance settings cpus NULL\nirqbalance settings cpus 1\n") != NULL,
           "put back: its own setting dropped, then the earlier ban set again");
        is_int(s->rec.n, 0, "record empty");
        fake_end(&f, s);
}

int main(void) {
        log_setup(LOG_TARGET_STDERR, LOG_WARNING);
        test_whole_host();
        test_scope();
        test_restart();
        test_stop_unscanned();
        test_record_unwritable();
        test_systemd();
        test_irqbalance();
        return tap_done();
}
