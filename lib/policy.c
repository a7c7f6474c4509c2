#include "config.h"

#include <errno.h>
#include <strings.h>

#include "kvmtune/policy.h"
#include "kvmtune/util.h"

static const char *const cpu_names[] = { "shared", "dedicated", "none" };
static const char *const threads_names[] = { "prefer", "isolate", "require" };
static const char *const emulator_names[] = { "share", "isolate", "vcpus" };
static const char *const iothreads_names[] = { "shared", "dedicated", "emulator" };
static const char *const numa_names[] = { "strict", "preferred", "none" };
static const char *const page_names[] = { "none", "2M", "1G" };
static const char *const placement_names[] = { "best-effort", "strict" };
static const char *const source_names[] = { "defaults", "config", "metadata", "request" };

static int lookup(const char *const *names, int n, const char *s) {
        for (int i = 0; s && i < n; i++)
                if (strcasecmp(names[i], s) == 0)
                        return i;
        return -EINVAL;
}

static const char *name(const char *const *names, int n, int v) {
        return v >= 0 && v < n ? names[v] : "?";
}

#define TABLE(kind, names) \
        const char *policy_##kind##_to_string(enum policy_##kind v) { return name(names, ELEMENTSOF(names), v); } \
        int policy_##kind##_from_string(const char *s) { return lookup(names, ELEMENTSOF(names), s); }
TABLE(cpu, cpu_names)
TABLE(threads, threads_names)
TABLE(emulator, emulator_names)
TABLE(iothreads, iothreads_names)
TABLE(numa, numa_names)
TABLE(placement, placement_names)
#undef TABLE

const char *policy_page_to_string(enum policy_page v) { return name(page_names, ELEMENTSOF(page_names), v); }
const char *policy_source_to_string(enum policy_source v) { return name(source_names, ELEMENTSOF(source_names), v); }

int policy_page_from_string(const char *s) {
        if (s && (strcasecmp(s, "1GiB") == 0 || strcasecmp(s, "1Gi") == 0))
                return POLICY_PAGE_1G;
        if (s && (strcasecmp(s, "2MiB") == 0 || strcasecmp(s, "2Mi") == 0))
                return POLICY_PAGE_2M;
        return lookup(page_names, ELEMENTSOF(page_names), s);
}

unsigned long policy_page_kib(enum policy_page v) {
        return v == POLICY_PAGE_1G ? 1024UL * 1024 : v == POLICY_PAGE_2M ? 2048UL : 0;
}

enum policy_page policy_page_of_kib(unsigned long kib) {
        return kib == policy_page_kib(POLICY_PAGE_1G) ? POLICY_PAGE_1G :
               kib == policy_page_kib(POLICY_PAGE_2M) ? POLICY_PAGE_2M : POLICY_PAGE_NONE;
}

void policy_init_default(struct policy *ret) {
        *ret = (struct policy){
                .cpu = POLICY_CPU_SHARED,
                .threads = POLICY_THREADS_PREFER,
                .emulator = POLICY_EMULATOR_SHARE,
                .iothreads = POLICY_IOTHREADS_SHARED,
                .numa = POLICY_NUMA_PREFERRED,
                .page = POLICY_PAGE_NONE,
                .placement = POLICY_PLACEMENT_BEST_EFFORT,
                .source = POLICY_SOURCE_DEFAULTS,
        };
}

void policy_merge(struct policy *base, const struct policy *over) {
        if (over->set & POLICY_KEY_CPU) base->cpu = over->cpu;
        if (over->set & POLICY_KEY_THREADS) base->threads = over->threads;
        if (over->set & POLICY_KEY_EMULATOR) base->emulator = over->emulator;
        if (over->set & POLICY_KEY_IOTHREADS) base->iothreads = over->iothreads;
        if (over->set & POLICY_KEY_NUMA) base->numa = over->numa;
        if (over->set & POLICY_KEY_PAGE) base->page = over->page;
        if (over->set & POLICY_KEY_PLACEMENT) base->placement = over->placement;
        base->set |= over->set;
        if (over->set)
                base->source = over->source;
}

int policy_set(struct policy *p, const char *key, const char *value) {
        int v;

#define KEY(k, fn, field, bit) \
        if (streq(key, k)) { \
                if ((v = fn(value)) < 0) return -EINVAL; \
                p->field = v; p->set |= bit; return 0; \
        }
        KEY("cpu", policy_cpu_from_string, cpu, POLICY_KEY_CPU)
        KEY("threads", policy_threads_from_string, threads, POLICY_KEY_THREADS)
        KEY("emulator", policy_emulator_from_string, emulator, POLICY_KEY_EMULATOR)
        KEY("iothreads", policy_iothreads_from_string, iothreads, POLICY_KEY_IOTHREADS)
        KEY("numa", policy_numa_from_string, numa, POLICY_KEY_NUMA)
        KEY("hugepages", policy_page_from_string, page, POLICY_KEY_PAGE)
        KEY("page", policy_page_from_string, page, POLICY_KEY_PAGE)
        KEY("placement", policy_placement_from_string, placement, POLICY_KEY_PLACEMENT)
#undef KEY
        return -ENOENT;
}

bool policy_equal(const struct policy *a, const struct policy *b) {
        return a->cpu == b->cpu && a->threads == b->threads && a->emulator == b->emulator &&
               a->iothreads == b->iothreads && a->numa == b->numa && a->page == b->page &&
               a->placement == b->placement;
}

char *policy_format_line(const struct policy *p) {
        return xasprintf("cpu=%s threads=%s emulator=%s iothreads=%s numa=%s hugepages=%s placement=%s",
                         policy_cpu_to_string(p->cpu), policy_threads_to_string(p->threads),
                         policy_emulator_to_string(p->emulator), policy_iothreads_to_string(p->iothreads),
                         policy_numa_to_string(p->numa), policy_page_to_string(p->page),
                         policy_placement_to_string(p->placement));
}

int policy_parse_line(const char *s, struct policy *ret) {
        _cleanup_free_ char *copy = xstrdup(s);
        char *save = NULL;
        struct policy p;

        policy_init_default(&p);
        for (char *tok = strtok_r(copy, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
                char *eq = strchr(tok, '=');
                int r;

                if (!eq)
                        return -EINVAL;
                *eq = '\0';
                r = policy_set(&p, tok, eq + 1);
                if (r < 0)
                        return r;
        }
        *ret = p;
        return 0;
}
