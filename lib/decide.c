/* The decision core of the daemon (see decide.h). Pure. */
#include "config.h"

#include "kvmtune/decide.h"
#include "kvmtune/util.h"

static const char *const action_names[] = {
        [DECIDE_ADOPT] = "adopt", [DECIDE_HAND_PINS] = "hand-pins", [DECIDE_IGNORE] = "ignore",
        [DECIDE_UNPIN] = "unpin", [DECIDE_PLACE] = "place",
};

const char *decide_action_to_string(enum decide_action a) {
        return a >= 0 && a < (int)ELEMENTSOF(action_names) ? action_names[a] : "?";
}

void decide_policy(const struct conf *c, const struct domxml *x, unsigned long page_kib,
                   struct policy *ret) {
        conf_policy_for(c, x->name, x->has_policy ? &x->policy : NULL, ret);
        if (page_kib)                   /* base pages named as a size, or a size we do not count: none */
                ret->page = policy_page_of_kib(page_kib);
}

/* ---- pins in the definition ----------------------------------------------------- */

/* The <vcpupin> cpusets by vCPU (an unreadable one is not a pin we know). */
static void live_vcpu_pins(const struct domxml *x, struct pinset *ret) {
        pinset_init(ret, x->vcpus, 0, NULL);
        for (int i = 0; i < x->nvcpupin; i++) {
                int v = x->vcpupin[i].id;

                if (v < 0 || v >= x->vcpus || ret->vcpu[v])
                        continue;
                ret->vcpu[v] = hwloc_bitmap_alloc();
                if (bitmap_parse_list(x->vcpupin[i].cpuset, CPU_LIST_MAX, ret->vcpu[v]) < 0) {
                        hwloc_bitmap_free(ret->vcpu[v]);
                        ret->vcpu[v] = NULL;
                }
        }
}

/* Every live vCPU pin is the recorded one. A domain whose vCPU count changed
 * since (its definition edited while it was off) still matches on the vCPUs
 * the record knows; a pin on a vCPU the record does not know is not ours. */
static bool pins_match(const struct pinset *live, const struct pinset *rec) {
        for (int i = 0; i < live->nvcpu; i++)
                if (live->vcpu[i] && (i >= rec->nvcpu || !hwloc_bitmap_isequal(live->vcpu[i], rec->vcpu[i])))
                        return false;
        return true;
}

static bool pins_ours(const struct pinset *live, const struct record *rec) {
        return rec && pins_match(live, &rec->vcpus);
}

bool decide_pinned_by_record(const struct domxml *x, const struct record *rec) {
        struct pinset live;
        bool any = false, ours;

        live_vcpu_pins(x, &live);
        for (int i = 0; i < live.nvcpu; i++)
                any = any || live.vcpu[i];
        ours = any && pins_ours(&live, rec);
        pinset_done(&live);
        return ours;
}

/* Adds a pinned cpuset to 'all' when it is a real restriction (readable, and
 * not every online PU). */
static void hand_pin_add(hwloc_bitmap_t all, const char *cpuset, hwloc_const_bitmap_t online) {
        _cleanup_bitmap_ hwloc_bitmap_t b = hwloc_bitmap_alloc();

        if (!cpuset || bitmap_parse_list(cpuset, CPU_LIST_MAX, b) < 0 || hwloc_bitmap_iszero(b) ||
            hwloc_bitmap_isincluded(online, b))
                return;
        hwloc_bitmap_or(all, all, b);
}

hwloc_bitmap_t decide_hand_pins(const struct topo *t, const struct domxml *x, const struct record *rec) {
        _cleanup_bitmap_ hwloc_bitmap_t online = topo_cpuset(t);
        hwloc_bitmap_t all;
        struct pinset live;

        live_vcpu_pins(x, &live);
        if (pins_ours(&live, rec)) {
                pinset_done(&live);
                return NULL;
        }
        all = pinset_cpus(&live);
        pinset_done(&live);
        if (hwloc_bitmap_isincluded(online, all))
                hwloc_bitmap_zero(all);
        /* An operator's emulator or iothread pin is theirs too. */
        hand_pin_add(all, x->emulatorpin, online);
        for (int i = 0; i < x->niothreadpin; i++)
                hand_pin_add(all, x->iothreadpin[i].cpuset, online);
        if (hwloc_bitmap_iszero(all)) {
                hwloc_bitmap_free(all);
                return NULL;
        }
        return all;
}

/* ---- adopting a record ------------------------------------------------------------ */

static bool pus_free(const struct alloc *a, const int *pus, int n) {
        for (int i = 0; i < n; i++)
                if (pus[i] < 0 || pus[i] >= a->npu || a->pu_owner[pus[i]] != ALLOC_FREE)
                        return false;
        return true;
}

static bool place_set_is_free(const struct alloc *a, const struct place_set *s) {
        return s->kind != PLACE_DEDICATED || pus_free(a, s->pus, s->npu);
}

static bool plan_is_free(const struct alloc *a, const struct plan *p) {
        if (!pus_free(a, p->vcpu_pu, p->nvcpu) || !pus_free(a, p->idle_pus, p->nidle) ||
            !place_set_is_free(a, &p->emulator))
                return false;
        for (int i = 0; i < p->niothread; i++)
                if (!place_set_is_free(a, &p->iothreads[i]))
                        return false;
        return true;
}

/* Every vCPU thread runs exactly on the recorded set. */
static bool threads_match(const struct pinset *threads, const struct pinset *rec) {
        if (!threads || threads->nvcpu != rec->nvcpu)
                return false;
        for (int i = 0; i < rec->nvcpu; i++)
                if (!threads->vcpu[i] || !rec->vcpu[i] || !hwloc_bitmap_isequal(threads->vcpu[i], rec->vcpu[i]))
                        return false;
        return true;
}

static bool record_adoptable(const struct alloc *a, const struct decide_facts *f) {
        const struct record *rec = f->record;
        const struct domxml *x = f->xml;
        struct pinset live;
        bool match;

        if (f->when == DECIDE_UPDATE || !rec || !rec->dedicated || rec->foreign ||
            f->policy.cpu != POLICY_CPU_DEDICATED ||
            !record_policy_matches(rec, &f->policy))
                return false;
        live_vcpu_pins(x, &live);
        match = pins_match(&live, &rec->vcpus) && threads_match(f->threads, &rec->vcpus) &&
                rec->plan.nvcpu == x->vcpus &&
                rec->plan.niothread == x->niothread &&
                (f->when != DECIDE_START || rec->plan.memory_kib == x->memory_kib) && plan_is_free(a, &rec->plan);
        pinset_done(&live);
        return match;
}

/* ---- the decision --------------------------------------------------------------- */

void decide_domain(const struct topo *t, const struct alloc *a, const struct decide_facts *f,
                   struct decision *ret) {
        *ret = (struct decision){ .action = DECIDE_PLACE };
        if (record_adoptable(a, f)) {
                ret->action = DECIDE_ADOPT;
                ret->plan = &f->record->plan;
                return;
        }
        if (f->policy.cpu == POLICY_CPU_NONE) {
                bool ours = f->pinned || decide_pinned_by_record(f->xml, f->record);

                ret->action = f->when != DECIDE_RESYNC && ours ? DECIDE_UNPIN : DECIDE_IGNORE;
                return;
        }
        ret->hand_cpus = decide_hand_pins(t, f->xml, f->record);
        if (ret->hand_cpus)
                ret->action = DECIDE_HAND_PINS;
}

void decision_done(struct decision *d) {
        hwloc_bitmap_free(d->hand_cpus);
        *d = (struct decision){};
}

/* ---- holding hand pins ------------------------------------------------------------ */

/* Every PU of cpus that 'from' owns goes to 'to'. */
static void pus_hand_over(struct alloc *a, const struct topo *t, hwloc_const_bitmap_t cpus, int from, int to) {
        int cpu;

        hwloc_bitmap_foreach_begin(cpu, cpus) {
                int pu = topo_pu_by_os(t, cpu);
                if (pu >= 0 && a->pu_owner[pu] == from)
                        a->pu_owner[pu] = to;
        } hwloc_bitmap_foreach_end();
}

void decide_hold_cpus(struct alloc *a, const struct topo *t, hwloc_const_bitmap_t cpus, int id) {
        pus_hand_over(a, t, cpus, ALLOC_FREE, id);
}

void decide_release_cpus(struct alloc *a, const struct topo *t, hwloc_const_bitmap_t cpus, int id) {
        pus_hand_over(a, t, cpus, id, ALLOC_FREE);
}
