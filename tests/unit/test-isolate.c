/* lib/isolate.c: the isolation decisions, the restore record and the kernel
 * mask formats. */
#include "config.h"

#include <errno.h>

#include "kvmtune/isolate.h"
#include "kvmtune/topo.h"
#include "kvmtune/util.h"
#include "tap.h"

static hwloc_bitmap_t set(const char *list) {
        hwloc_bitmap_t m = hwloc_bitmap_alloc();

        if (*list)
                hwloc_bitmap_list_sscanf(m, list);
        return m;
}

static char *str(hwloc_const_bitmap_t m) {
        char *s = NULL;

        hwloc_bitmap_list_asprintf(&s, m);
        return s;
}

static void test_what(void) {
        unsigned w = 99;
        char buf[64];

        ok(isolate_parse_what("yes", &w) == 0 && w == ISOLATE_ALL, "yes is everything");
        ok(isolate_parse_what("no", &w) == 0 && w == 0, "no is nothing");
        ok(isolate_parse_what("tasks, guests", &w) == 0 && w == (ISOLATE_TASKS | ISOLATE_GUESTS), "a list");
        ok(isolate_parse_what("irqs workqueues", &w) == 0 && w == (ISOLATE_IRQS | ISOLATE_WORKQUEUES),
           "blanks separate too");
        is_int(isolate_parse_what("tasks,bogus", &w), -EINVAL, "unknown word refused");
        is_int(isolate_parse_what("", &w), -EINVAL, "empty refused");
        is_int(isolate_parse_what(" , ", &w), -EINVAL, "only separators refused");
        is_str(isolate_format_what(ISOLATE_ALL, buf, sizeof buf), "tasks,guests,irqs,workqueues", "format all");
        is_str(isolate_format_what(ISOLATE_GUESTS | ISOLATE_IRQS, buf, sizeof buf), "guests,irqs", "format some");
        is_str(isolate_format_what(0, buf, sizeof buf), "none", "format none");
}

/* One decision: returns the action, *ret_mask as a list in out. */
static enum isolate_action decide(const char *cur, const char *ded, struct isolate_entry *e, char **out) {
        _cleanup_bitmap_ hwloc_bitmap_t c = set(cur), d = set(ded), m = hwloc_bitmap_alloc();
        enum isolate_action a = isolate_decide(c, d, e, m);

        *out = str(m);
        return a;
}

static void test_decide_new(void) {
        _cleanup_free_ char *a = NULL, *b = NULL, *c = NULL;

        is_int(decide("0-3", "2", NULL, &a), ISOLATE_SET, "a wide mask is narrowed");
        is_str(a, "0-1,3", "... to everything but the dedicated PU");
        is_int(decide("0-1", "2-3", NULL, &b), ISOLATE_NONE, "a mask off the dedicated PUs is left alone");
        is_int(decide("2-3", "2-3", NULL, &c), ISOLATE_ONLY_DEDICATED, "a mask on dedicated PUs only is kept");
}

static void test_decide_entry(void) {
        _cleanup_bitmap_ hwloc_bitmap_t o = set("0-3"), ap = set("0-1,3");
        _cleanup_free_ char *a = NULL, *b = NULL, *c = NULL, *d = NULL, *e2 = NULL, *no = NULL;
        struct isolate_record r = {};
        struct isolate_entry *e = isolate_record_add(&r, ISOLATE_KIND_TASK, 42, 7, NULL, o, ap);

        is_int(decide("0-1,3", "2", e, &a), ISOLATE_NONE, "still ours and right: nothing to do");
        is_int(decide("0-1,3", "2-3", e, &b), ISOLATE_SET, "the dedicated set grew: narrowed further");
        is_str(b, "0-1", "... from the original mask");
        hwloc_bitmap_list_sscanf(e->applied, "0-1");
        is_int(decide("0-1", "", e, &c), ISOLATE_RESTORE, "nothing dedicated: put back");
        is_str(c, "0-3", "... the original mask");
        is_int(decide("0-7", "2", e, &d), ISOLATE_SET, "the owner widened its mask: caught again");
        is_str(d, "0-1,3-7", "... narrowed from its new wish");
        no = str(e->orig);
        is_str(no, "0-7", "the owner's new mask is the new original");
        hwloc_bitmap_list_sscanf(e->applied, "0-1,3-7");
        is_int(decide("4", "2", e, &e2), ISOLATE_RESTORE, "the owner narrowed it off the dedicated PUs: dropped");
        is_str(e2, "4", "... with its own mask");
        isolate_record_clear(&r);
}

static void test_effective(void) {
        _cleanup_bitmap_ hwloc_bitmap_t on = set("0-3"), d1 = set("2-3"), d2 = set("0-3"), d3 = set("3-5");
        _cleanup_bitmap_ hwloc_bitmap_t e1 = isolate_effective(on, d1), e2 = isolate_effective(on, d2),
                                        e3 = isolate_effective(on, d3);
        _cleanup_free_ char *s1 = str(e1), *s3 = str(e3);

        is_str(s1, "2-3", "dedicated PUs are taken off host work");
        ok(hwloc_bitmap_iszero(e2), "never the last housekeeping PU: nothing taken");
        is_str(s3, "3", "only online PUs count");
}

static void test_record(void) {
        _cleanup_bitmap_ hwloc_bitmap_t a = set("0-3"), b = set("0-1"), z = hwloc_bitmap_alloc();
        _cleanup_free_ char *text = NULL, *again = NULL;
        struct isolate_record r = {}, p = {};

        isolate_record_add(&r, ISOLATE_KIND_TASK, 300, 12345, NULL, a, b);
        isolate_record_add(&r, ISOLATE_KIND_TASK, 20, 99, NULL, a, b);
        isolate_record_add(&r, ISOLATE_KIND_UNIT, 0, 0, "system.slice", z, b);
        isolate_record_add(&r, ISOLATE_KIND_IRQ, -1, 0, NULL, a, b);
        is_int(r.n, 4, "four entries");
        ok(r.e[0].kind == ISOLATE_KIND_TASK && r.e[0].id == 20, "kept sorted");
        ok(isolate_record_find(&r, ISOLATE_KIND_TASK, 300, NULL) != NULL, "found by id");
        ok(isolate_record_find(&r, ISOLATE_KIND_GUEST, 300, NULL) == NULL, "kind matters");
        ok(isolate_record_find(&r, ISOLATE_KIND_UNIT, 0, "system.slice") != NULL, "found by name");
        text = isolate_record_format(&r);
        is_str(text, "# kvmtuned isolation record 1\n"
                     "task 20 99 - 0-3 0-1\n"
                     "task 300 12345 - 0-3 0-1\n"
                     "irq -1 0 - 0-3 0-1\n"
                     "unit 0 0 system.slice - 0-1\n", "text form");
        is_int(isolate_record_parse(text, &p), 4, "parsed back");
        again = isolate_record_format(&p);
        is_str(again, text, "round trip");
        ok(hwloc_bitmap_iszero(isolate_record_find(&p, ISOLATE_KIND_UNIT, 0, "system.slice")->orig),
           "an unset AllowedCPUs stays empty");
        is_int(isolate_record_parse("task 1 2 - 0-3\n", &p), -EINVAL, "short line refused");
        is_int(isolate_record_parse("bogus 1 2 - 0 0\n", &p), -EINVAL, "unknown kind refused");
        is_int(isolate_record_parse("task 1 2 - 0-x 0\n", &p), -EINVAL, "bad list refused");
        is_int(p.n, 4, "a refused text leaves the record as it was");
        isolate_record_del(&p, isolate_record_find(&p, ISOLATE_KIND_TASK, 20, NULL));
        is_int(p.n, 3, "deleted");
        isolate_record_clear(&r);
        isolate_record_clear(&p);
}

static void test_mask(void) {
        _cleanup_bitmap_ hwloc_bitmap_t m = hwloc_bitmap_alloc(), big = set("0,33,63");
        _cleanup_free_ char *s1 = NULL, *s2 = NULL, *l = NULL;

        ok(isolate_mask_parse("3\n", m) == 0 && hwloc_bitmap_weight(m) == 2, "\"3\" is CPUs 0-1");
        ok(isolate_mask_parse("00000001,00000004\n", m) == 0 && hwloc_bitmap_isset(m, 2) &&
           hwloc_bitmap_isset(m, 32) && hwloc_bitmap_weight(m) == 2, "groups: high word first");
        is_int(isolate_mask_parse("xyz", m), -EINVAL, "not hex refused");
        is_int(isolate_mask_parse("123456789", m), -EINVAL, "group too long refused");
        is_int(isolate_mask_parse("", m), -EINVAL, "empty refused");
        s1 = isolate_mask_format(big);
        is_str(s1, "80000002,00000001", "format two groups");
        hwloc_bitmap_zero(m);
        s2 = isolate_mask_format(m);
        is_str(s2, "00000000", "format empty");
        ok(isolate_list_parse("0-3,8\n", m) == 0 && (l = str(m)) && streq(l, "0-3,8"), "list parsed");
        is_int(isolate_list_parse("\n", m), -EINVAL, "empty list refused");
        is_int(isolate_list_parse("0-a", m), -EINVAL, "bad list refused");
        is_int(isolate_list_parse("0-2000000000", m), -EINVAL, "a CPU number no host has refused");
        ok(isolate_list_parse("8191", m) == 0 && hwloc_bitmap_isset(m, 8191), "the highest CPU number taken");
        is_int(isolate_list_parse("8192", m), -EINVAL, "one more refused");
}

static void test_proc(void) {
        pid_t tgid = 0, ppid = 0;
        unsigned long long st = 0;

        isolate_status_ids("Name:\tbash\nTgid:\t100\nPid:\t101\nPPid:\t1\n", &tgid, &ppid);
        ok(tgid == 100 && ppid == 1, "Tgid and PPid read");
        isolate_status_ids("Name:\tPPid:\t7\nTgid:\tx\n", &tgid, &ppid);
        ok(tgid == 0 && ppid == 0, "a key only at the start of a line; a value that is no number is 0");
        ok(isolate_status_value("Name:\tx\nCpus_allowed_list:\t0-3\n", "Cpus_allowed") == NULL,
           "status value: the whole key before ':'");
        is_str(isolate_status_value("Cpus_allowed_list:\t0-3\n", "Cpus_allowed_list"), "\t0-3\n",
               "status value: on the first line too");
        is_int(isolate_stat_start("101 (a b) c) S 1 101 101 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 777 0 0", &st), 0,
               "stat parsed past a comm with ') '");
        is_int((long long)st, 777, "starttime is field 22");
        is_int(isolate_stat_start("garbage", &st), -EINVAL, "bad stat refused");
        ok(isolate_cgroup_skip("machine.slice") && isolate_cgroup_skip("/machine"), "libvirt's machine tree skipped");
        ok(!isolate_cgroup_skip("system.slice") && !isolate_cgroup_skip("/kvmtuned-test"), "other cgroups kept");
}

int main(void) {
        test_what();
        test_decide_new();
        test_decide_entry();
        test_effective();
        test_record();
        test_mask();
        test_proc();
        return tap_done();
}
