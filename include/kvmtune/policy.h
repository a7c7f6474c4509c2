/* Per-domain tuning policy (SPEC.md "Per-domain policy"). */
#pragma once

#include <stdbool.h>

enum policy_cpu { POLICY_CPU_SHARED, POLICY_CPU_DEDICATED, POLICY_CPU_NONE, _POLICY_CPU_MAX };
enum policy_threads { POLICY_THREADS_PREFER, POLICY_THREADS_ISOLATE, POLICY_THREADS_REQUIRE, _POLICY_THREADS_MAX };
enum policy_emulator { POLICY_EMULATOR_SHARE, POLICY_EMULATOR_ISOLATE, POLICY_EMULATOR_VCPUS, _POLICY_EMULATOR_MAX };
enum policy_iothreads { POLICY_IOTHREADS_SHARED, POLICY_IOTHREADS_DEDICATED, POLICY_IOTHREADS_EMULATOR, _POLICY_IOTHREADS_MAX };
enum policy_numa { POLICY_NUMA_STRICT, POLICY_NUMA_PREFERRED, POLICY_NUMA_NONE, _POLICY_NUMA_MAX };
enum policy_page { POLICY_PAGE_NONE, POLICY_PAGE_2M, POLICY_PAGE_1G, _POLICY_PAGE_MAX };
/* best-effort: a domain that cannot be placed runs on the shared pool (unplaced);
 * strict: the libvirt hook refuses to start it instead. */
enum policy_placement { POLICY_PLACEMENT_BEST_EFFORT, POLICY_PLACEMENT_STRICT, _POLICY_PLACEMENT_MAX };

/* request: options of a what-if plan (kvmtunectl plan --cpu ...) */
enum policy_source { POLICY_SOURCE_DEFAULTS, POLICY_SOURCE_CONFIG, POLICY_SOURCE_METADATA, POLICY_SOURCE_REQUEST,
                     _POLICY_SOURCE_MAX };

/* Bit per key: which keys a layer (metadata, config section) sets explicitly. */
enum {
        POLICY_KEY_CPU = 1 << 0,
        POLICY_KEY_THREADS = 1 << 1,
        POLICY_KEY_EMULATOR = 1 << 2,
        POLICY_KEY_IOTHREADS = 1 << 3,
        POLICY_KEY_NUMA = 1 << 4,
        POLICY_KEY_PAGE = 1 << 5,
        POLICY_KEY_PLACEMENT = 1 << 6,
};

struct policy {
        enum policy_cpu cpu;
        enum policy_threads threads;
        enum policy_emulator emulator;
        enum policy_iothreads iothreads;
        enum policy_numa numa;
        enum policy_page page;
        enum policy_placement placement;
        unsigned set;                   /* POLICY_KEY_* given explicitly */
        enum policy_source source;
};

/* Built-in defaults: cpu=shared threads=prefer emulator=share iothreads=shared
 * numa=preferred hugepages=none placement=best-effort. */
void policy_init_default(struct policy *ret);

/* Keys set in 'over' replace those of 'base'; source becomes over's. */
void policy_merge(struct policy *base, const struct policy *over);

/* Lookup by key name ("cpu", "threads", "emulator", "iothreads", "numa",
 * "hugepages"/"page", "placement"). Returns 0, -ENOENT for an unknown key, -EINVAL for a bad
 * value. */
int policy_set(struct policy *p, const char *key, const char *value);

const char *policy_cpu_to_string(enum policy_cpu v);
const char *policy_threads_to_string(enum policy_threads v);
const char *policy_emulator_to_string(enum policy_emulator v);
const char *policy_iothreads_to_string(enum policy_iothreads v);
const char *policy_numa_to_string(enum policy_numa v);
const char *policy_page_to_string(enum policy_page v);
const char *policy_placement_to_string(enum policy_placement v);
const char *policy_source_to_string(enum policy_source v);
int policy_cpu_from_string(const char *s);          /* value or -EINVAL */
int policy_threads_from_string(const char *s);
int policy_emulator_from_string(const char *s);
int policy_iothreads_from_string(const char *s);
int policy_numa_from_string(const char *s);
int policy_page_from_string(const char *s);         /* "1G", "2M", "none" */
int policy_placement_from_string(const char *s);
/* The one page-size mapping: KiB per page of a policy value (0 for none:
 * base pages, whose size the caller knows), and back from a page size QEMU
 * really uses: 1G or 2M for those sizes, none for any other (base pages named
 * as a size, or a size not counted). */
unsigned long policy_page_kib(enum policy_page v);
enum policy_page policy_page_of_kib(unsigned long kib);

/* The same effective policy: every key (cpu, threads, emulator, iothreads,
 * numa, hugepages, placement); where the keys came from does not count. */
bool policy_equal(const struct policy *a, const struct policy *b);
/* "cpu=dedicated threads=prefer emulator=share iothreads=shared numa=strict
 * hugepages=none placement=best-effort": every key. Caller frees. */
char *policy_format_line(const struct policy *p);
/* Parses policy_format_line()'s text (keys in any order, missing ones default)
 * into *ret. 0, -EINVAL (bad value, not key=value) or -ENOENT (unknown key). */
int policy_parse_line(const char *s, struct policy *ret);
