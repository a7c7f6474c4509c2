/* lib/decide.c, the daemon's decision core, on plain facts: every action
 * (adopt, hand-pins, ignore, unpin, place) and what keeps a record from being
 * adopted; and three defects of issue #10: a record naming CPUs this host lacks
 * is never adopted nor taken for hand pins; a record rebuilds exactly the PUs,
 * memory and hugepages per node its placement committed; releasing hand pins
 * never frees a PU another domain holds. */
#include "config.h"

#include <errno.h>

#include "kvmtune/decide.h"
#include "kvmtune/util.h"
#include "tap.h"

#define HOST "Package:2 [NUMANode(memory=64GiB)] L3Cache:1 Core:4 PU:2(indexes=core)"

/* ---- facts ---------------------------------------------------------------------- */

/* A running domain's definition: vcpus vCPUs, memory_kib, pins[i] per vCPU
 * (NULL: none). */
static struct domxml *xml_new(int vcpus, uint64_t memory_kib, const char *const *pins) {
        struct domxml *x = xcalloc(1, sizeof *x);

        x->name = xstrdup("db1");
        x->vcpus = vcpus;
        x->memory_kib = memory_kib;
        x->vcpupin = xcalloc(vcpus + 1, sizeof *x->vcpupin);
        for (int i = 0; pins && i < vcpus; i++)
                if (pins[i])
                        x->vcpupin[x->nvcpupin++] = (struct domxml_pin){ .id = i, .cpuset = xstrdup(pins[i]) };
        return x;
}

static void xml_pins_from(struct domxml *x, const struct pinset *p) {
        for (int i = 0; i < x->nvcpupin; i++)
                free(x->vcpupin[i].cpuset);
        x->nvcpupin = 0;
        for (int i = 0; i < p->nvcpu; i++) {
                char *s = NULL;

                hwloc_bitmap_list_asprintf(&s, p->vcpu[i]);
                x->vcpupin[x->nvcpupin++] = (struct domxml_pin){ .id = i, .cpuset = s };
        }
}

static struct policy policy_of(const char *cpu) {
        struct policy p;

        policy_init_default(&p);
        policy_set(&p, "cpu", cpu);
        policy_set(&p, "numa", "strict");
        return p;
}

/* Where the vCPU threads run when libvirt pinned them from x: each on its
 * <vcpupin>, the unpinned ones on every PU of the host. */
static void threads_from_pins(const struct domxml *x, struct pinset *ret) {
        pinset_init(ret, x->vcpus, 0, NULL);
        for (int i = 0; i < x->vcpus; i++)
                ret->vcpu[i] = hwloc_bitmap_alloc();
        for (int i = 0; i < x->vcpus; i++)
                hwloc_bitmap_set_range(ret->vcpu[i], 0, 15);
        for (int i = 0; i < x->nvcpupin; i++)
                if (x->vcpupin[i].id >= 0 && x->vcpupin[i].id < x->vcpus)
                        hwloc_bitmap_list_sscanf(ret->vcpu[x->vcpupin[i].id], x->vcpupin[i].cpuset);
}

static enum decide_action decide_threads(const struct topo *t, const struct alloc *a, const struct domxml *x,
                                         const struct record *rec, struct policy p, enum decide_when when,
                                         const struct pinset *threads, struct decision *ret) {
        struct decide_facts f = { .xml = x, .record = rec, .policy = p, .when = when, .threads = threads };

        decide_domain(t, a, &f, ret);
        return ret->action;
}

/* The usual case: the threads run where the definition pinned them. */
static enum decide_action decide(const struct topo *t, const struct alloc *a, const struct domxml *x,
                                 const struct record *rec, struct policy p, enum decide_when when,
                                 bool pinned, struct decision *ret) {
        struct decide_facts f = { .xml = x, .record = rec, .policy = p, .when = when, .pinned = pinned };
        struct pinset threads;

        threads_from_pins(x, &threads);
        f.threads = &threads;
        decide_domain(t, a, &f, ret);
        pinset_done(&threads);
        return ret->action;
}

/* Places a dedicated domain (policy p, memory) into a as id 1 and returns its
 * record parsed back; *ret_x gets a definition pinned as the record says. */
static void placed_record(const struct topo *t, struct alloc *a, struct policy p, uint64_t memory_kib,
                          struct record *ret, struct domxml **ret_x) {
        struct request req = { .vcpus = 2, .policy = p, .memory_kib = memory_kib };
        char reason[PLACEMENT_REASON_MAX] = "";
        _cleanup_free_ char *xml = NULL;
        struct plan plan = {};
        struct pinset pins;

        is_int(placement_place(t, a, &req, &plan, reason), 0, "a dedicated domain places (%s)", reason);
        alloc_commit(a, t, &plan, 1);
        pinset_init(&pins, 2, 0, NULL);
        pinset_resolve(t, a, &plan, &pins);
        xml = record_format(t, &plan, &pins, &p);
        is_int(record_parse(t, xml, ret), 0, "its record parses");
        *ret_x = xml_new(2, memory_kib, NULL);
        xml_pins_from(*ret_x, &pins);
        pinset_done(&pins);
        plan_done(&plan);
}

/* ---- the actions ------------------------------------------------------------------ */

static void test_policy(void) {
        struct domxml *x = xml_new(1, 0, NULL);
        struct policy p;

        x->has_policy = true;
        policy_set(&x->policy, "cpu", "dedicated");
        policy_set(&x->policy, "hugepages", "1G");
        decide_policy(NULL, x, 0, &p);
        ok(p.cpu == POLICY_CPU_DEDICATED && p.page == POLICY_PAGE_1G, "metadata keys over the defaults");
        is_int(p.source, POLICY_SOURCE_METADATA, "source: metadata");
        decide_policy(NULL, x, 2048, &p);
        is_int(p.page, POLICY_PAGE_2M, "the page size QEMU uses wins over the key");
        decide_policy(NULL, x, 4, &p);
        is_int(p.page, POLICY_PAGE_NONE, "base pages named as a size: none");
        domxml_free(x);
}

static void test_place_and_hand_pins(const struct topo *t) {
        struct alloc *a = alloc_new(t);
        static const char *const all[] = { "0-15", "0-15" };
        static const char *const hand[] = { "3", NULL };
        struct domxml *x = xml_new(2, 0, NULL), *pinned_all = xml_new(2, 0, all), *by_hand = xml_new(2, 0, hand);
        struct decision dec;

        is_int(decide(t, a, x, NULL, policy_of("dedicated"), DECIDE_START, false, &dec), DECIDE_PLACE,
               "no record, no pins: place");
        decision_done(&dec);
        is_int(decide(t, a, pinned_all, NULL, policy_of("shared"), DECIDE_UPDATE, false, &dec), DECIDE_PLACE,
               "pins on every PU are no restriction: place");
        decision_done(&dec);
        is_int(decide(t, a, by_hand, NULL, policy_of("dedicated"), DECIDE_UPDATE, false, &dec), DECIDE_HAND_PINS,
               "a vCPU pinned by hand: hand-pins");
        ok(dec.hand_cpus && hwloc_bitmap_weight(dec.hand_cpus) == 1 && hwloc_bitmap_isset(dec.hand_cpus, 3),
           "its PUs are CPU 3");
        decision_done(&dec);
        x->emulatorpin = xstrdup("5-6");
        is_int(decide(t, a, x, NULL, policy_of("shared"), DECIDE_UPDATE, false, &dec), DECIDE_HAND_PINS,
               "an emulator pinned by hand: hand-pins");
        ok(dec.hand_cpus && hwloc_bitmap_weight(dec.hand_cpus) == 2, "its PUs are CPUs 5-6");
        decision_done(&dec);
        domxml_free(x);
        domxml_free(pinned_all);
        domxml_free(by_hand);
        alloc_free(a);
}

static void test_cpu_none(const struct topo *t) {
        struct alloc *a = alloc_new(t), *b = alloc_new(t);
        struct policy none = policy_of("none");
        struct record rec;
        struct domxml *x, *bare = xml_new(2, 0, NULL);
        struct decision dec;

        placed_record(t, a, policy_of("dedicated"), 0, &rec, &x);
        is_int(decide(t, b, bare, NULL, none, DECIDE_UPDATE, false, &dec), DECIDE_IGNORE, "cpu=none: ignore");
        decision_done(&dec);
        is_int(decide(t, b, bare, NULL, none, DECIDE_UPDATE, true, &dec), DECIDE_UNPIN,
               "cpu=none on a domain the daemon pinned: unpin");
        decision_done(&dec);
        is_int(decide(t, b, x, &rec, none, DECIDE_START, false, &dec), DECIDE_UNPIN,
               "cpu=none, started on our recorded pins: unpin");
        decision_done(&dec);
        is_int(decide(t, b, x, &rec, none, DECIDE_RESYNC, true, &dec), DECIDE_IGNORE,
               "a resync never unpins: ignore");
        decision_done(&dec);
        is_int(decide(t, b, x, NULL, none, DECIDE_UPDATE, false, &dec), DECIDE_IGNORE,
               "cpu=none with pins not ours: ignore (left alone, not held)");
        decision_done(&dec);
        record_done(&rec);
        domxml_free(x);
        domxml_free(bare);
        alloc_free(a);
        alloc_free(b);
}

static void test_adopt(const struct topo *t) {
        struct alloc *a = alloc_new(t), *b = alloc_new(t);
        struct policy p = policy_of("dedicated"), other = p;
        struct record rec;
        struct domxml *x;
        struct decision dec;

        placed_record(t, a, p, 1 << 20, &rec, &x);
        is_int(decide(t, b, x, &rec, p, DECIDE_START, false, &dec), DECIDE_ADOPT,
               "a start on its recorded pins, PUs free, same policy: adopt");
        ok(dec.plan == &rec.plan, "the record's plan is what to commit");
        decision_done(&dec);
        is_int(decide(t, b, x, &rec, p, DECIDE_RESYNC, false, &dec), DECIDE_ADOPT, "a resync adopts too");
        decision_done(&dec);
        is_int(decide(t, b, x, &rec, p, DECIDE_UPDATE, false, &dec), DECIDE_PLACE,
               "an update never adopts: place (the pins are ours, not hand pins)");
        decision_done(&dec);
        policy_set(&other, "threads", "isolate");
        is_int(decide(t, b, x, &rec, other, DECIDE_START, false, &dec), DECIDE_PLACE, "a changed policy: place");
        decision_done(&dec);
        other = p;
        policy_set(&other, "placement", "strict");
        is_int(decide(t, b, x, &rec, other, DECIDE_START, false, &dec), DECIDE_PLACE,
               "a changed placement key too: place");
        decision_done(&dec);
        x->memory_kib = 2 << 20;
        is_int(decide(t, b, x, &rec, p, DECIDE_START, false, &dec), DECIDE_PLACE, "a start with more memory: place");
        decision_done(&dec);
        is_int(decide(t, b, x, &rec, p, DECIDE_RESYNC, false, &dec), DECIDE_ADOPT,
               "a resync does not compare memory (a balloon moves it): adopt");
        decision_done(&dec);
        x->memory_kib = 1 << 20;
        b->pu_owner[rec.plan.vcpu_pu[1]] = 7;
        is_int(decide(t, b, x, &rec, p, DECIDE_START, false, &dec), DECIDE_PLACE,
               "one of its PUs held by another domain: place");
        decision_done(&dec);
        b->pu_owner[rec.plan.vcpu_pu[1]] = ALLOC_FREE;
        free(x->vcpupin[1].cpuset);
        x->vcpupin[1].cpuset = xstrdup("15");
        is_int(decide(t, b, x, &rec, p, DECIDE_START, false, &dec), DECIDE_HAND_PINS,
               "live pins that differ from the record: hand-pins");
        decision_done(&dec);
        record_done(&rec);
        domxml_free(x);
        alloc_free(a);
        alloc_free(b);
}

/* The storm's libvirtd restart: d3's definition carries a record (and pins)
 * naming PU 0, libvirt copied them into its live XML at start, but the hook,
 * with PU 0 taken, kept its threads on the shared pool. Its live pins and
 * record agree with each other, not with where it runs: never adopted. */
static void test_adopt_needs_threads(const struct topo *t) {
        struct alloc *a = alloc_new(t), *b = alloc_new(t);
        struct policy p = policy_of("dedicated");
        struct record rec;
        struct domxml *x;
        struct decision dec;
        struct pinset threads;

        placed_record(t, a, p, 1 << 20, &rec, &x);
        threads_from_pins(x, &threads);
        is_int(decide_threads(t, b, x, &rec, p, DECIDE_RESYNC, &threads, &dec), DECIDE_ADOPT,
               "threads on the recorded PUs: adopt");
        decision_done(&dec);
        hwloc_bitmap_only(threads.vcpu[1], hwloc_bitmap_first(rec.vcpus.vcpu[1]) == 15 ? 14 : 15);
        is_int(decide_threads(t, b, x, &rec, p, DECIDE_RESYNC, &threads, &dec), DECIDE_PLACE,
               "a resync with one vCPU thread elsewhere than its record: placed anew, not adopted");
        decision_done(&dec);
        is_int(decide_threads(t, b, x, &rec, p, DECIDE_START, &threads, &dec), DECIDE_PLACE,
               "a start with it elsewhere: placed anew too");
        decision_done(&dec);
        hwloc_bitmap_zero(threads.vcpu[1]);
        is_int(decide_threads(t, b, x, &rec, p, DECIDE_RESYNC, &threads, &dec), DECIDE_PLACE,
               "a vCPU thread gone (empty set): placed anew");
        decision_done(&dec);
        is_int(decide_threads(t, b, x, &rec, p, DECIDE_RESYNC, NULL, &dec), DECIDE_PLACE,
               "threads not read: the record alone is not adopted");
        decision_done(&dec);
        pinset_done(&threads);
        record_done(&rec);
        domxml_free(x);
        alloc_free(a);
        alloc_free(b);
}

/* ---- issue #10 -------------------------------------------------------------------- */

/* (a) A guest defined on another host: its record names CPU 40. */
static void test_foreign_record(const struct topo *t) {
        static const char *const pins[] = { "1", "40" };
        struct alloc *a = alloc_new(t);
        struct domxml *x = xml_new(2, 0, pins);
        struct record rec;
        struct decision dec;

        is_int(record_parse(t, "<placement cpu=\"dedicated\" vcpus=\"0:1 1:40\" idle=\"\" emulator=\"shared\" "
                               "iothreads=\"\" nodes=\"0\" mode=\"strict\" page=\"none\"/>", &rec), 0,
               "a record naming CPU 40 parses");
        ok(rec.foreign, "as one made on another host");
        is_int(decide(t, a, x, &rec, policy_of("dedicated"), DECIDE_START, false, &dec), DECIDE_PLACE,
               "it is not adopted, nor are its pins taken for hand pins: place");
        decision_done(&dec);
        is_int(decide(t, a, x, &rec, policy_of("dedicated"), DECIDE_RESYNC, false, &dec), DECIDE_PLACE,
               "a resync places it too");
        decision_done(&dec);
        record_done(&rec);
        domxml_free(x);
        alloc_free(a);
}

/* (b) A restarted daemon rebuilds from the record the PUs, the memory and
 * the hugepages per node that the placement committed. */
static void test_rebuild_memory(struct topo *t) {
        struct alloc *a = alloc_new(t), *b = alloc_new(t);
        struct policy p = policy_of("dedicated");
        struct record rec;
        struct domxml *x;
        struct decision dec;
        uint64_t hp_a = 0;

        for (int n = 0; n < t->nnode; n++)
                t->nodes[n].hp[TOPO_PAGE_2M] = (struct topo_hpool){ .total = 4096, .free = 4096 };
        policy_set(&p, "hugepages", "2M");
        placed_record(t, a, p, 4 << 20, &rec, &x);
        for (int n = 0; n < t->nnode; n++)
                hp_a += a->hp_pages[n][TOPO_PAGE_2M];
        is_int((int)hp_a, 2048, "the placement committed 4 GiB of 2M pages");
        is_int(decide(t, b, x, &rec, p, DECIDE_RESYNC, false, &dec), DECIDE_ADOPT, "the restarted daemon adopts it");
        alloc_commit(b, t, dec.plan, 1);
        ok(memcmp(a->pu_owner, b->pu_owner, t->npu * sizeof *a->pu_owner) == 0, "the same PUs");
        ok(memcmp(a->pu_idle, b->pu_idle, t->npu * sizeof *a->pu_idle) == 0, "the same idle PUs");
        ok(memcmp(a->hp_pages, b->hp_pages, t->nnode * sizeof *a->hp_pages) == 0, "the same hugepages per node");
        ok(memcmp(a->mem_kib, b->mem_kib, t->nnode * sizeof *a->mem_kib) == 0, "the same base memory per node");
        decision_done(&dec);
        record_done(&rec);
        domxml_free(x);
        policy_set(&p, "hugepages", "none");
        alloc_free(a);
        alloc_free(b);
        a = alloc_new(t);
        b = alloc_new(t);
        placed_record(t, a, p, 4 << 20, &rec, &x);
        is_int(decide(t, b, x, &rec, p, DECIDE_RESYNC, false, &dec), DECIDE_ADOPT, "base pages: adopted");
        alloc_commit(b, t, dec.plan, 1);
        ok(memcmp(a->mem_kib, b->mem_kib, t->nnode * sizeof *a->mem_kib) == 0 && b->mem_kib[rec.plan.nodes[0]] > 0,
           "the same base memory per node");
        decision_done(&dec);
        record_done(&rec);
        domxml_free(x);
        for (int n = 0; n < t->nnode; n++)
                t->nodes[n].hp[TOPO_PAGE_2M] = (struct topo_hpool){};
        alloc_free(a);
        alloc_free(b);
}

/* (c) Domain 2 holds PU 3 by its placement; domain 1 is pinned by hand on
 * CPUs 3-4: releasing domain 1 must leave PU 3 to domain 2. */
static void test_release_hand_pins(const struct topo *t) {
        struct alloc *a = alloc_new(t);
        hwloc_bitmap_t hand = hwloc_bitmap_alloc();
        int pu3 = topo_pu_by_os(t, 3), pu4 = topo_pu_by_os(t, 4);

        a->pu_owner[pu3] = 2;
        hwloc_bitmap_set_range(hand, 3, 4);
        decide_hold_cpus(a, t, hand, 1);
        is_int(a->pu_owner[pu3], 2, "holding hand pins leaves another domain's PU alone");
        is_int(a->pu_owner[pu4], 1, "and takes the free one");
        decide_release_cpus(a, t, hand, 1);
        is_int(a->pu_owner[pu3], 2, "releasing them never frees another domain's PU");
        is_int(a->pu_owner[pu4], ALLOC_FREE, "only its own");
        hwloc_bitmap_free(hand);
        alloc_free(a);
}

int main(void) {
        struct topo *t = NULL;

        if (topo_load(TOPO_SOURCE_SYNTHETIC, HOST, NULL, &t) < 0) {
                ok(0, "synthetic topology loads");
                return tap_done();
        }
        test_policy();
        test_place_and_hand_pins(t);
        test_cpu_none(t);
        test_adopt(t);
        test_adopt_needs_threads(t);
        test_foreign_record(t);
        test_rebuild_memory(t);
        test_release_hand_pins(t);
        topo_free(t);
        return tap_done();
}
