/* kvmtunectl: parse arguments, send one request to kvmtuned, render the reply.
 * Exit status (SPEC.md): 0 success, 1 the request failed, 2 usage error,
 * 3 the daemon cannot be reached. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdbool.h>

#include "kvmtune/advise.h"
#include "kvmtune/conf.h"
#include "kvmtune/policy.h"
#include "kvmtune/proto.h"
#include "kvmtune/render.h"
#include "kvmtune/util.h"
#include "kvmtune/workload.h"
#include "top.h"

#define EXIT_FAILED 1
#define EXIT_USAGE 2
#define EXIT_UNREACHABLE 3
#define CALL_TIMEOUT_MS 60000

enum { POL_CPU, POL_THREADS, POL_EMULATOR, POL_IOTHREADS, POL_NUMA, POL_HUGEPAGES, _POL_MAX };

static const char *const policy_keys[_POL_MAX] = {
        "cpu", "threads", "emulator", "iothreads", "numa", "hugepages",
};

static int (*const policy_parsers[_POL_MAX])(const char *) = {
        policy_cpu_from_string, policy_threads_from_string, policy_emulator_from_string,
        policy_iothreads_from_string, policy_numa_from_string, policy_page_from_string,
};

struct args {
        const char *socket;
        bool json;
        /* plan, live */
        const char *vcpus, *memory, *iothread_count, *plan_name;
        const char *policy[_POL_MAX];
        /* plan, offline */
        const char *topology, *workload, *sysfs_root;
        bool live_opts, offline_opts;
        /* hugepages reserve */
        const char *size, *node, *count;
        bool reserve_opts;
        bool plan_only;                 /* --vcpus, --memory, --iothread-count, --name, --workload */
        /* advise */
        bool apply, all;
        const char *xml, *config;
        /* metrics, top */
        const char *output;
        bool once;
        char **pos;                     /* command and its arguments */
        int npos;
};

struct command {
        const char *name;
        const char *method;
        int min_args, max_args;         /* positional arguments after the command */
        int (*params)(const struct args *a, struct json_object **ret);
        int (*render)(struct json_object *result, FILE *f);
};

#define _cleanup_table_ _cleanup_(table_freep)

/* --- JSON access ------------------------------------------------------------ */

static struct json_object *jget(struct json_object *o, const char *key) {
        struct json_object *v = NULL;

        if (!o || !json_object_object_get_ex(o, key, &v))
                return NULL;
        return v;
}

static const char *jstr(struct json_object *o, const char *key) {
        struct json_object *v = jget(o, key);

        return v && !json_object_is_type(v, json_type_null) ? json_object_get_string(v) : "-";
}

static long long jint(struct json_object *o, const char *key) {
        return (long long) json_object_get_int64(jget(o, key));
}

static size_t jlen(struct json_object *arr) {
        return json_object_is_type(arr, json_type_array) ? json_object_array_length(arr) : 0;
}

static struct json_object *jidx(struct json_object *arr, size_t i) {
        return json_object_array_get_idx(arr, i);
}

/* --- formatting helpers ------------------------------------------------------ */

static int cmp_ll(const void *a, const void *b) {
        long long x = *(const long long *) a, y = *(const long long *) b;

        return (x > y) - (x < y);
}

/* Runs of consecutive values, in the given order: "4-7,52". */
static char *runs_format(const long long *v, size_t n) {
        struct proto_buf b = { 0 };

        for (size_t i = 0; i < n;) {
                size_t j = i;
                char item[64];

                while (j + 1 < n && v[j + 1] == v[j] + 1)
                        j++;
                if (j == i)
                        snprintf(item, sizeof(item), "%s%lld", i ? "," : "", v[i]);
                else
                        snprintf(item, sizeof(item), "%s%lld-%lld", i ? "," : "", v[i], v[j]);
                proto_buf_append(&b, item, strlen(item));
                i = j + 1;
        }
        proto_buf_append(&b, "", 1);
        return b.data;
}

/* A JSON array of CPU numbers as a compact set "0-3,8" ("-" when empty). */
static char *cpus_format(struct json_object *arr) {
        size_t n = jlen(arr);
        _cleanup_free_ long long *v = xcalloc(n, sizeof(long long));

        if (n == 0)
                return xstrdup("-");
        for (size_t i = 0; i < n; i++)
                v[i] = json_object_get_int64(jidx(arr, i));
        qsort(v, n, sizeof(v[0]), cmp_ll);
        return runs_format(v, n);
}

static bool vcpus_single(struct json_object *vcpus) {
        for (size_t i = 0; i < jlen(vcpus); i++)
                if (jlen(jget(jidx(vcpus, i), "cpus")) != 1)
                        return false;
        return true;
}

/* The vCPU to PU map: dedicated vCPUs as their PUs in vCPU order ("4-7,52":
 * vCPU 0 on 4 ...), floating vCPUs as the set they float over. */
static char *vcpus_format(struct json_object *vcpus) {
        size_t n = jlen(vcpus);
        _cleanup_free_ long long *v = xcalloc(n, sizeof(long long));

        if (n == 0)
                return xstrdup("-");
        if (!vcpus_single(vcpus))
                return cpus_format(jget(jidx(vcpus, 0), "cpus"));
        for (size_t i = 0; i < n; i++)
                v[i] = json_object_get_int64(jidx(jget(jidx(vcpus, i), "cpus"), 0));
        return runs_format(v, n);
}

/* "16G" when exact, else one decimal in the largest unit: "45.7G". */
static char *size_format(long long kib) {
        static const char units[] = "kMGT";
        double v = (double) kib;
        unsigned i = 0;
        char buf[32];

        if (kib <= 0 || kib % 1024 == 0 || kib < 1024)
                return xstrdup(format_size_kib(kib < 0 ? 0 : (unsigned long long) kib, buf, sizeof(buf)));
        while (i < 3 && v >= 1024) {
                v /= 1024;
                i++;
        }
        return xasprintf("%.1f%c", v, units[i]);
}

static void kv(FILE *f, const char *key, const char *value) {
        fprintf(f, "%-15s %s\n", key, value);
}

static void kv_free(FILE *f, const char *key, char *value) {
        kv(f, key, value);
        free(value);
}

/* --- renderers ------------------------------------------------------------- */

static char *uptime_format(long long s) {
        if (s >= 86400)
                return xasprintf("%lldd %lldh %lldm", s / 86400, s % 86400 / 3600, s % 3600 / 60);
        if (s >= 3600)
                return xasprintf("%lldh %lldm %llds", s / 3600, s % 3600 / 60, s % 60);
        return xasprintf("%lldm %llds", s / 60, s % 60);
}

static char *counts_format(struct json_object *domains) {
        static const char *const states[] = { "tuned", "shared", "ignored", "unplaced", "failed" };
        struct proto_buf b = { 0 };

        for (size_t i = 0; i < ELEMENTSOF(states); i++) {
                _cleanup_free_ char *item = xasprintf("%s%lld %s", i ? ", " : "",
                                                      jint(domains, states[i]), states[i]);
                proto_buf_append(&b, item, strlen(item));
        }
        proto_buf_append(&b, "", 1);
        return b.data;
}

static bool jbool(struct json_object *o, const char *key) {
        return json_object_get_boolean(jget(o, key));
}

/* "tasks,guests on 2-3, housekeeping 0-1: 120 tasks, 4 guest threads, 12 IRQs",
 * "none (off)", or "none (why)". */
static char *isolation_summary(struct json_object *iso) {
        _cleanup_free_ char *ded = cpus_format(jget(iso, "dedicated")), *hk = cpus_format(jget(iso, "housekeeping"));

        if (jget(iso, "inactive"))
                return xasprintf("none (%s)", jstr(iso, "inactive"));
        if (streq(jstr(iso, "in_force"), "none"))
                return xasprintf("none (%s)", streq(jstr(iso, "switch"), "off") ? "switched off" : "configured no");
        if (streq(ded, "-"))
                return xasprintf("%s, nothing dedicated now", jstr(iso, "in_force"));
        return xasprintf("%s off %s (housekeeping %s): %lld task%s, %lld guest thread%s, %lld IRQ%s",
                         jstr(iso, "in_force"), ded, hk, jint(iso, "tasks") + jint(iso, "units"),
                         jint(iso, "tasks") + jint(iso, "units") == 1 ? "" : "s", jint(iso, "guest_threads"),
                         jint(iso, "guest_threads") == 1 ? "" : "s", jint(iso, "irqs"),
                         jint(iso, "irqs") == 1 ? "" : "s");
}

/* What isolation left alone and why, one a line under a "skipped:" key. */
static void isolation_skipped(struct json_object *skipped, FILE *f) {
        for (size_t i = 0; i < jlen(skipped); i++)
                kv(f, i == 0 ? "  skipped:" : "", json_object_get_string(jidx(skipped, i)));
}

static int render_status(struct json_object *r, FILE *f) {
        struct json_object *lv = jget(r, "libvirt"), *pools = jget(r, "pools");

        kv(f, "version:", jstr(r, "version"));
        kv_free(f, "uptime:", uptime_format(jint(r, "uptime_sec")));
        kv_free(f, "libvirt:", xasprintf("%s (%s)", jstr(lv, "uri"),
                json_object_get_boolean(jget(lv, "connected")) ? "connected" : "disconnected"));
        if (jstr(r, "host"))
                kv(f, "host:", jstr(r, "host"));
        kv_free(f, "reserved CPUs:", cpus_format(jget(pools, "reserved")));
        kv_free(f, "shared CPUs:", cpus_format(jget(pools, "shared")));
        kv_free(f, "dedicated CPUs:", cpus_format(jget(pools, "dedicated")));
        kv_free(f, "domains:", counts_format(jget(r, "domains")));
        if (jget(r, "isolation")) {
                kv_free(f, "isolation:", isolation_summary(jget(r, "isolation")));
                isolation_skipped(jget(jget(r, "isolation"), "skipped"), f);
        }
        return 0;
}

static char *nodes_format(struct json_object *d) {
        struct json_object *numa = jget(d, "numa");
        _cleanup_free_ char *nodes = cpus_format(jget(numa, "nodes"));

        if (streq(nodes, "-"))
                return xstrdup("-");
        return xasprintf("%s (%s)", nodes, jstr(numa, "mode"));
}

static char *place_format(struct json_object *place) {
        return cpus_format(jget(place, "cpus"));
}

static void list_add_domain(struct table *tb, struct json_object *d) {
        struct json_object *pol = jget(d, "policy");
        _cleanup_free_ char *vcpus = vcpus_format(jget(d, "vcpus"));
        _cleanup_free_ char *emu = place_format(jget(d, "emulator"));
        _cleanup_free_ char *nodes = nodes_format(d);

        table_new_row(tb);
        table_add_cell(tb, jstr(d, "name"));
        table_add_cell(tb, jstr(d, "state"));
        if (pol)                        /* null: its definition could not be read */
                table_add_cellf(tb, "%s/%s", jstr(pol, "cpu"), jstr(pol, "source"));
        else
                table_add_cell(tb, "-");
        table_add_cellf(tb, "%zu", jlen(jget(d, "vcpus")));
        table_add_cell(tb, vcpus);
        table_add_cell(tb, emu);
        table_add_cell(tb, nodes);
}

static int render_list(struct json_object *r, FILE *f) {
        _cleanup_table_ struct table *tb = table_new();
        struct json_object *domains = jget(r, "domains");

        table_add_row(tb, "NAME", "STATE", "POLICY", "VCPUS", "CPUS", "EMULATOR", "NUMA", NULL);
        for (size_t i = 0; i < jlen(domains); i++)
                list_add_domain(tb, jidx(domains, i));
        if (jlen(domains) == 0) {
                fprintf(f, "no domains\n");
                return 0;
        }
        table_print(tb, f);
        return 0;
}

static char *policy_format(struct json_object *pol) {
        return xasprintf("cpu=%s threads=%s emulator=%s iothreads=%s numa=%s (from %s)",
                         jstr(pol, "cpu"), jstr(pol, "threads"), jstr(pol, "emulator"),
                         jstr(pol, "iothreads"), jstr(pol, "numa"), jstr(pol, "source"));
}

static char *memory_format(struct json_object *mem) {
        _cleanup_free_ char *size = size_format(jint(mem, "kib"));
        _cleanup_free_ char *page = size_format(jint(mem, "page_kib") ? jint(mem, "page_kib") : 4);

        if (!mem)
                return xstrdup("-");
        return xasprintf("%s in %s pages", size, page);
}

static char *iothreads_format(struct json_object *iot) {
        struct proto_buf b = { 0 };

        for (size_t i = 0; i < jlen(iot); i++) {
                _cleanup_free_ char *cpus = place_format(jidx(iot, i));
                _cleanup_free_ char *item = xasprintf("%s%lld: %s", i ? ", " : "",
                                                      jint(jidx(iot, i), "id"), cpus);
                proto_buf_append(&b, item, strlen(item));
        }
        if (b.len == 0)
                proto_buf_append(&b, "-", 1);
        proto_buf_append(&b, "", 1);
        return b.data;
}

/* Seconds from a counter in ns, "-" when absent (a plan, a stopped thread). */
static void add_seconds_cell(struct table *tb, struct json_object *v, const char *key) {
        if (jget(v, key))
                table_add_cellf(tb, "%.3f", (double)jint(v, key) / 1e9);
        else
                table_add_cell(tb, "-");
}

static void render_vcpu_table(struct json_object *vcpus, FILE *f) {
        _cleanup_table_ struct table *tb = table_new();
        bool stats = jget(jidx(vcpus, 0), "run_ns") != NULL;

        table_add_row(tb, "  VCPU", "CPUS", stats ? "RUN_S" : NULL, "DELAY_S", NULL);
        for (size_t i = 0; i < jlen(vcpus); i++) {
                _cleanup_free_ char *cpus = place_format(jidx(vcpus, i));

                table_new_row(tb);
                table_add_cellf(tb, "  %lld", jint(jidx(vcpus, i), "vcpu"));
                table_add_cell(tb, cpus);
                if (stats) {
                        add_seconds_cell(tb, jidx(vcpus, i), "run_ns");
                        add_seconds_cell(tb, jidx(vcpus, i), "delay_ns");
                }
        }
        table_print(tb, f);
}

/* One domain or one planned placement, in full. */
static void render_placement(struct json_object *d, FILE *f) {
        if (jget(d, "policy"))
                kv_free(f, "policy:", policy_format(jget(d, "policy")));
        kv_free(f, "memory:", memory_format(jget(d, "memory")));
        kv_free(f, "numa:", nodes_format(d));
        kv_free(f, "vcpu CPUs:", vcpus_format(jget(d, "vcpus")));
        kv_free(f, "emulator CPUs:", place_format(jget(d, "emulator")));
        kv_free(f, "iothread CPUs:", iothreads_format(jget(d, "iothreads")));
        if (jlen(jget(d, "vcpus")) > 0)
                render_vcpu_table(jget(d, "vcpus"), f);
}

static int render_show(struct json_object *r, FILE *f) {
        kv(f, "name:", jstr(r, "name"));
        kv(f, "uuid:", jstr(r, "uuid"));
        kv(f, "state:", jstr(r, "state"));
        if (jget(r, "reason"))
                kv(f, "reason:", jstr(r, "reason"));
        if (jget(r, "isolation_conflict"))
                kv(f, "isolation:", jstr(r, "isolation_conflict"));
        render_placement(r, f);
        return 0;
}

static int render_plan(struct json_object *r, FILE *f) {
        if (jget(r, "refused")) {
                fprintf(f, "refused: %s\n", jstr(r, "refused"));
                return -ENOSPC;
        }
        render_placement(r, f);
        if (jget(r, "note"))
                kv(f, "note:", jstr(r, "note"));
        return 0;
}

/* "3:db1" for a held PU, "0*" for a reserved one, "5" for a free one. */
static void pu_format(struct json_object *pu, struct proto_buf *b) {
        struct json_object *owner = jget(pu, "owner");
        _cleanup_free_ char *s = NULL;

        if (owner && json_object_is_type(owner, json_type_string))
                s = xasprintf(" %lld:%s", jint(pu, "os"), json_object_get_string(owner));
        else
                s = xasprintf(" %lld%s", jint(pu, "os"),
                              json_object_get_boolean(jget(pu, "reserved")) ? "*" : "");
        proto_buf_append(b, s, strlen(s));
}

static void topo_add_core(struct table *tb, const char *l3, int core, struct json_object *pus) {
        struct proto_buf b = { 0 };

        for (size_t i = 0; i < jlen(pus); i++)
                pu_format(jidx(pus, i), &b);
        proto_buf_append(&b, "", 1);
        table_add_row(tb, "", "", l3, NULL);
        table_add_cellf(tb, "%d", core);
        table_add_cell(tb, b.len > 1 ? b.data + 1 : "-");     /* skip the leading blank */
        proto_buf_done(&b);
}

/* The L3 index is printed once, on the group's first core. */
static void topo_add_group(struct table *tb, struct json_object *g, int *core) {
        struct json_object *cores = jget(g, "cores");
        _cleanup_free_ char *l3 = jint(g, "l3") < 0 ? xstrdup("-") : xasprintf("%lld", jint(g, "l3"));

        for (size_t i = 0; i < jlen(cores); i++)
                topo_add_core(tb, i == 0 ? l3 : "", (*core)++, jget(jidx(cores, i), "pus"));
}

static int render_topology(struct json_object *r, FILE *f) {
        _cleanup_table_ struct table *tb = table_new();
        struct json_object *nodes = jget(r, "nodes");
        int core = 0;

        table_add_row(tb, "NODE", "MEMORY", "L3", "CORE", "PUS", NULL);
        for (size_t n = 0; n < jlen(nodes); n++) {
                struct json_object *node = jidx(nodes, n), *groups = jget(node, "groups");
                _cleanup_free_ char *name = xasprintf("%lld", jint(node, "os"));
                _cleanup_free_ char *mem = jint(node, "memory_kib") > 0
                        ? size_format(jint(node, "memory_kib")) : xstrdup("-");

                table_add_row(tb, name, mem, NULL);
                for (size_t g = 0; g < jlen(groups); g++)
                        topo_add_group(tb, jidx(groups, g), &core);
        }
        table_print(tb, f);
        fprintf(f, "\nPU:DOMAIN held by a domain, PU* reserved for the host, PU free or shared\n");
        return 0;
}

/* "db1:400,web:16" from [{"name": "db1", "pages": 400}, ...]; "-" when none. */
static char *hugepages_users(struct json_object *domains) {
        struct proto_buf b = { 0 };

        for (size_t i = 0; i < jlen(domains); i++) {
                struct json_object *dm = jidx(domains, i);
                _cleanup_free_ char *item = xasprintf("%s%s:%lld", i ? "," : "", jstr(dm, "name"),
                                                      jint(dm, "pages"));
                proto_buf_append(&b, item, strlen(item));
        }
        if (b.len == 0)
                proto_buf_append(&b, "-", 1);
        proto_buf_append(&b, "", 1);
        return b.data;
}

static int render_hugepages(struct json_object *r, FILE *f) {
        _cleanup_table_ struct table *tb = table_new();
        struct json_object *nodes = jget(r, "nodes");

        table_add_row(tb, "NODE", "SIZE", "TOTAL", "FREE", "RESERVED", "USED BY", NULL);
        for (size_t n = 0; n < jlen(nodes); n++) {
                struct json_object *pages = jget(jidx(nodes, n), "pages");

                for (size_t i = 0; i < jlen(pages); i++) {
                        struct json_object *p = jidx(pages, i);
                        _cleanup_free_ char *size = size_format(jint(p, "page_kib"));
                        _cleanup_free_ char *users = hugepages_users(jget(p, "domains"));

                        table_new_row(tb);
                        table_add_cellf(tb, "%lld", jint(jidx(nodes, n), "node"));
                        table_add_cell(tb, size);
                        table_add_cellf(tb, "%lld", jint(p, "total"));
                        table_add_cellf(tb, "%lld", jint(p, "free"));
                        table_add_cellf(tb, "%lld", jint(p, "reserved"));
                        table_add_cell(tb, users);
                }
        }
        table_print(tb, f);
        return 0;
}

/* The result line, then what is left to do by hand: the missing hugetlbfs
 * mount, and for a shortfall the boot command line (as kvmtuned
 * --reserve-hugepages prints it). */
static int render_hugepages_reserve(struct json_object *r, FILE *f) {
        fprintf(f, "%s\n", jstr(r, "message"));
        if (jget(r, "warning"))
                fprintf(f, "warning: %s\n", jstr(r, "warning"));
        if (jget(r, "boot_cmdline"))
                fprintf(f, "to reserve these pages at boot, add to the kernel command line: %s\n",
                        jstr(r, "boot_cmdline"));
        if (jget(r, "boot_note"))
                fprintf(f, "(%s)\n", jstr(r, "boot_note"));
        return 0;
}

static int render_metrics(struct json_object *r, FILE *f) {
        fputs(jstr(r, "text"), f);
        return 0;
}

static void verify_domain(struct json_object *d, FILE *f) {
        struct json_object *drift = jget(d, "drift");

        if (jlen(drift) == 0) {
                fprintf(f, "%s: as placed (%lld checks)\n", jstr(d, "name"), jint(d, "checked"));
                return;
        }
        fprintf(f, "%s: %zu of %lld checks drifted\n", jstr(d, "name"), jlen(drift), jint(d, "checked"));
        for (size_t i = 0; i < jlen(drift); i++) {
                struct json_object *x = jidx(drift, i);

                fprintf(f, "  %s: %s, placed %s\n", jstr(x, "what"),
                        *jstr(x, "got") ? jstr(x, "got") : "(empty)", *jstr(x, "want") ? jstr(x, "want") : "-");
        }
}

/* Exit 1 (the -1 here) when anything drifted: for cron and monitoring. */
static int render_verify(struct json_object *r, FILE *f) {
        struct json_object *domains = jget(r, "domains");

        for (size_t i = 0; i < jlen(domains); i++)
                verify_domain(jidx(domains, i), f);
        fprintf(f, "%zu guest%s, %lld checks, %lld drifted\n", jlen(domains), jlen(domains) == 1 ? "" : "s",
                jint(r, "checked"), jint(r, "drifted"));
        return jint(r, "drifted") > 0 ? -1 : 0;
}

static void isolation_counts(struct json_object *iso, FILE *f) {
        kv_free(f, "tasks:", xasprintf("%lld confined%s, %lld kept (on dedicated CPUs only), %lld refused (per-CPU)",
                                       jint(iso, "tasks"), streq(jstr(iso, "mode"), "systemd") ? " one by one" : "",
                                       jint(iso, "kept"), jint(iso, "refused")));
        if (streq(jstr(iso, "mode"), "systemd"))
                kv_free(f, "units:", xasprintf("%lld with AllowedCPUs= (system.slice, user.slice, init.scope)",
                                               jint(iso, "units")));
        kv_free(f, "guests:", xasprintf("%lld thread%s of guests left alone", jint(iso, "guest_threads"),
                                        jint(iso, "guest_threads") == 1 ? "" : "s"));
        if (jbool(iso, "irqbalance"))
                kv(f, "IRQs:", "through irqbalance (its banned CPUs)");
        else
                kv_free(f, "IRQs:", xasprintf("%lld moved, %lld refused (managed), default affinity %s",
                                              jint(iso, "irqs"), jint(iso, "irqs_managed"),
                                              jbool(iso, "default_irq") ? "moved" : "untouched"));
        kv(f, "workqueues:", jbool(iso, "workqueues") ? "unbound cpumask moved" : "untouched");
}

static int render_isolation(struct json_object *r, FILE *f) {
        struct json_object *skipped = jget(r, "skipped");

        kv_free(f, "configured:", xasprintf("%s (switch: %s)", jstr(r, "configured"), jstr(r, "switch")));
        kv(f, "in force:", jstr(r, "in_force"));
        if (jget(r, "inactive"))
                kv(f, "inactive:", jstr(r, "inactive"));
        kv(f, "scope:", jstr(r, "scope"));
        kv_free(f, "dedicated:", cpus_format(jget(r, "dedicated")));
        kv_free(f, "housekeeping:", cpus_format(jget(r, "housekeeping")));
        if (!jget(r, "mode"))
                return 0;
        kv(f, "mode:", jstr(r, "mode"));
        isolation_counts(r, f);
        isolation_skipped(skipped, f);
        return 0;
}

static int render_rebalance(struct json_object *r, FILE *f) {
        _cleanup_table_ struct table *tb = table_new();
        struct json_object *domains = jget(r, "domains");

        fprintf(f, "rebalanced %zu domain%s\n", jlen(domains), jlen(domains) == 1 ? "" : "s");
        if (jlen(domains) == 0)
                return 0;
        table_add_row(tb, "NAME", "STATE", NULL);
        for (size_t i = 0; i < jlen(domains); i++)
                table_add_row(tb, jstr(jidx(domains, i), "name"), jstr(jidx(domains, i), "state"), NULL);
        table_print(tb, f);
        return 0;
}

static int render_reload(struct json_object *r, FILE *f) {
        struct json_object *changed = jget(r, "changed");

        fprintf(f, "configuration reloaded");
        for (size_t i = 0; i < jlen(changed); i++)
                fprintf(f, "%s%s", i ? ", " : "; policy changed for ",
                        json_object_get_string(jidx(changed, i)) ?: "?");
        fputc('\n', f);
        return 0;
}

static void advise_add_finding(struct table *tb, struct json_object *f, bool apply) {
        table_new_row(tb);
        table_add_cell(tb, jstr(f, "severity"));
        table_add_cell(tb, jstr(f, "target"));
        table_add_cell(tb, jstr(f, "id"));
        table_add_cell(tb, jstr(f, "fix"));
        if (apply)
                table_add_cell(tb, json_object_get_boolean(jget(f, "applied")) ? "yes" : "no");
}

static bool advise_same_source(struct json_object *findings, size_t a, size_t b) {
        return streq(jstr(jidx(findings, a), "source"), jstr(jidx(findings, b), "source"));
}

/* The footnote number of finding i's source: its rank among distinct sources, from 1. */
static size_t advise_source_index(struct json_object *findings, size_t i) {
        size_t first = 0, n = 0;

        while (!advise_same_source(findings, first, i))
                first++;
        for (size_t j = 0; j <= first; j++) {
                size_t k = 0;
                while (k < j && !advise_same_source(findings, k, j))
                        k++;
                n += k == j;
        }
        return n;
}

/* Why, with the measured effect, then each report and figure once. */
static void advise_print_why(struct json_object *findings, FILE *f) {
        size_t last = 0;

        fprintf(f, "\nWhy:\n");
        for (size_t i = 0; i < jlen(findings); i++)
                fprintf(f, "  %s %s: %s [%zu]\n", jstr(jidx(findings, i), "target"), jstr(jidx(findings, i), "id"),
                        jstr(jidx(findings, i), "message"), advise_source_index(findings, i));
        fprintf(f, "\nSources:\n");
        for (size_t i = 0; i < jlen(findings); i++)
                if (advise_source_index(findings, i) > last)
                        fprintf(f, "  [%zu] %s\n", ++last, jstr(jidx(findings, i), "source"));
}

static int render_advise_findings(struct json_object *r, FILE *f, bool apply) {
        _cleanup_table_ struct table *tb = table_new();
        struct json_object *findings = jget(r, "findings");

        if (jlen(findings) == 0)
                fprintf(f, "%s: nothing to advise\n", jstr(r, "name"));
        if (jget(r, "skipped"))
                fprintf(f, "%s: %s\n", jstr(r, "name"), jstr(r, "skipped"));
        if (jlen(findings) == 0)
                return 0;
        table_add_row(tb, "SEVERITY", "TARGET", "FINDING", "FIX", apply ? "APPLIED" : NULL, NULL);
        for (size_t i = 0; i < jlen(findings); i++)
                advise_add_finding(tb, jidx(findings, i), apply);
        table_print(tb, f);
        advise_print_why(findings, f);
        return 0;
}

/* advise --all: one line per domain with its counts, then the total. */
static int render_advise_all(struct json_object *r, FILE *f) {
        _cleanup_table_ struct table *tb = table_new();
        struct json_object *domains = jget(r, "domains"), *total = jget(r, "total");

        if (jlen(domains) == 0)
                return fprintf(f, "no domains\n"), 0;
        table_add_row(tb, "NAME", "WARNINGS", "INFO", "POLICY", NULL);
        for (size_t i = 0; i < jlen(domains); i++) {
                struct json_object *d = jidx(domains, i), *counts = jget(d, "counts");

                table_new_row(tb);
                table_add_cell(tb, jstr(d, "name"));
                if (!counts) {
                        table_add_cellf(tb, "error: %s", jstr(d, "error"));
                        continue;
                }
                table_add_cellf(tb, "%lld", jint(counts, "warning"));
                table_add_cellf(tb, "%lld", jint(counts, "info"));
                table_add_cellf(tb, "%s/%s", jstr(jget(d, "policy"), "cpu"), jstr(jget(d, "policy"), "source"));
        }
        table_print(tb, f);
        fprintf(f, "\ntotal: %lld domains, %lld warnings, %lld info", jint(total, "domains"),
                jint(total, "warning"), jint(total, "info"));
        if (jint(total, "failed") > 0)
                fprintf(f, ", %lld not audited", jint(total, "failed"));
        fprintf(f, "\n");
        return 0;
}

static int render_advise(struct json_object *r, FILE *f) {
        return render_advise_findings(r, f, false);
}

static int render_advise_apply(struct json_object *r, FILE *f) {
        render_advise_findings(r, f, true);
        if (jint(r, "applied") > 0)
                fprintf(f, "\napplied %lld safe fix%s to the persistent definition; %s\n", jint(r, "applied"),
                        jint(r, "applied") == 1 ? "" : "es", jstr(r, "note"));
        else
                fprintf(f, "\nno safe fix to apply; the definition is unchanged\n");
        return 0;
}

/* --- request parameters --------------------------------------------------- */

static int params_name(const struct args *a, struct json_object **ret) {
        *ret = json_object_new_object();
        if (a->npos > 1)
                json_object_object_add(*ret, "name", json_object_new_string(a->pos[1]));
        return 0;
}

static int params_all(_unused_ const struct args *a, struct json_object **ret) {
        *ret = json_object_new_object();
        json_object_object_add(*ret, "all", json_object_new_boolean(true));
        return 0;
}

static int usage_error(const char *fmt, ...) _printf_(1, 2);
static int usage_error(const char *fmt, ...) {
        va_list ap;

        fprintf(stderr, "kvmtunectl: ");
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fprintf(stderr, "\nTry 'kvmtunectl --help'.\n");
        return -EINVAL;
}

/* A whole number from min (>= 0) to max. */
static int parse_count(const char *opt, const char *s, long min, long max, long *ret) {
        uint64_t v;

        if (safe_atou64(s, &v) < 0 || v < (uint64_t)min || v > (uint64_t)max) {
                usage_error("%s: '%s' is not a number from %ld to %ld", opt, s, min, max);
                return -EINVAL;
        }
        *ret = (long)v;
        return 0;
}

static int params_plan_policy(const struct args *a, struct json_object *p) {
        for (int i = 0; i < _POL_MAX; i++) {
                if (!a->policy[i])
                        continue;
                if (policy_parsers[i](a->policy[i]) < 0)
                        return usage_error("--%s: invalid value '%s'", policy_keys[i], a->policy[i]);
                json_object_object_add(p, policy_keys[i], json_object_new_string(a->policy[i]));
        }
        return 0;
}

static int params_plan(const struct args *a, struct json_object **ret) {
        _cleanup_json_ struct json_object *p = json_object_new_object();
        unsigned long long kib = 0;
        long vcpus, iothreads = 0;

        if (!a->vcpus)
                return usage_error("plan: --vcpus N is required (or --topology and --workload)");
        if (parse_count("--vcpus", a->vcpus, 1, 4096, &vcpus) < 0)
                return -EINVAL;
        if (a->memory && parse_size_kib(a->memory, &kib) < 0)
                return usage_error("--memory: invalid size '%s' (e.g. 8G, 512M)", a->memory);
        if (a->iothread_count && parse_count("--iothread-count", a->iothread_count, 0, 256, &iothreads) < 0)
                return -EINVAL;
        if (params_plan_policy(a, p) < 0)
                return -EINVAL;
        json_object_object_add(p, "vcpus", json_object_new_int((int) vcpus));
        json_object_object_add(p, "memory_kib", json_object_new_int64((int64_t) kib));
        json_object_object_add(p, "iothread_count", json_object_new_int((int) iothreads));
        if (a->plan_name)
                json_object_object_add(p, "name", json_object_new_string(a->plan_name));
        *ret = p;
        p = NULL;
        return 0;
}

static int params_isolation_set(const struct args *a, struct json_object **ret) {
        const char *to = a->pos[1];

        if (!streq(to, "on") && !streq(to, "off") && !streq(to, "config"))
                return usage_error("isolation: '%s' is not on, off or config", to);
        *ret = json_object_new_object();
        json_object_object_add(*ret, "set", json_object_new_string(to));
        return 0;
}

static int params_hugepages_reserve(const struct args *a, struct json_object **ret) {
        _cleanup_json_ struct json_object *p = json_object_new_object();
        long node, count;
        int size;

        if (!a->size || !a->node || !a->count)
                return usage_error("hugepages reserve: --size 1G|2M, --node N and --count K are required");
        size = policy_page_from_string(a->size);
        if (size <= POLICY_PAGE_NONE)
                return usage_error("--size: invalid page size '%s' (1G or 2M)", a->size);
        if (parse_count("--node", a->node, 0, 65535, &node) < 0 ||
            parse_count("--count", a->count, 0, LONG_MAX, &count) < 0)
                return -EINVAL;
        json_object_object_add(p, "size", json_object_new_string(policy_page_to_string(size)));
        json_object_object_add(p, "node", json_object_new_int((int) node));
        json_object_object_add(p, "count", json_object_new_int64((int64_t) count));
        *ret = p;
        p = NULL;
        return 0;
}

/* "hugepages reserve": a sub-command of hugepages (see command_check). */
static const struct command hugepages_reserve_command = {
        "hugepages reserve", PROTO_METHOD_HUGEPAGES_RESERVE, 1, 1, params_hugepages_reserve,
        render_hugepages_reserve,
};

/* "isolation on|off|config": the privileged variant of isolation. */
static const struct command isolation_set_command = {
        "isolation", PROTO_METHOD_ISOLATION_SET, 1, 1, params_isolation_set, render_isolation,
};

/* "advise --apply": the privileged variant of advise; "advise --all": every
 * domain (see advise_check). */
static const struct command advise_apply_command = {
        "advise", PROTO_METHOD_ADVISE_APPLY, 1, 1, params_name, render_advise_apply,
};
static const struct command advise_all_command = {
        "advise", PROTO_METHOD_ADVISE, 0, 0, params_all, render_advise_all,
};

static const struct command commands[] = {
        { "status",    PROTO_METHOD_STATUS,    0, 0, NULL,        render_status },
        { "list",      PROTO_METHOD_LIST,      0, 0, NULL,        render_list },
        { "show",      PROTO_METHOD_SHOW,      1, 1, params_name, render_show },
        { "topology",  PROTO_METHOD_TOPOLOGY,  0, 0, NULL,        render_topology },
        { "hugepages", PROTO_METHOD_HUGEPAGES, 0, 1, NULL,        render_hugepages },
        { "plan",      PROTO_METHOD_PLAN,      0, 0, params_plan, render_plan },
        { "rebalance", PROTO_METHOD_REBALANCE, 0, 1, params_name, render_rebalance },
        { "reload",    PROTO_METHOD_RELOAD,    0, 0, NULL,        render_reload },
        { "metrics",   PROTO_METHOD_METRICS,   0, 0, NULL,        render_metrics },
        { "advise",    PROTO_METHOD_ADVISE,    0, 1, params_name, render_advise },
        { "verify",    PROTO_METHOD_VERIFY,    0, 0, NULL,        render_verify },
        { "top",       PROTO_METHOD_LIST,      0, 0, NULL,        render_list },
        { "isolation", PROTO_METHOD_ISOLATION, 0, 1, NULL,        render_isolation },
};

/* --- the request ----------------------------------------------------------- */

static int call_daemon(const char *path, const char *method, struct json_object *params,
                       struct proto_reply *ret) {
        _cleanup_close_ int fd = proto_connect(path);
        int r;

        if (fd < 0) {
                fprintf(stderr, "kvmtunectl: cannot reach kvmtuned at %s: %s\n", path, strerror(-fd));
                return EXIT_UNREACHABLE;
        }
        r = proto_call(fd, method, params, CALL_TIMEOUT_MS, ret);
        if (r == -EBADMSG || r == -EMSGSIZE) {
                fprintf(stderr, "kvmtunectl: malformed reply from kvmtuned at %s\n", path);
                return EXIT_FAILED;
        }
        if (r < 0) {
                fprintf(stderr, "kvmtunectl: no reply from kvmtuned at %s: %s\n", path, strerror(-r));
                return EXIT_UNREACHABLE;
        }
        if (ret->error_code) {
                fprintf(stderr, "kvmtunectl: %s\n", ret->error_message);
                return EXIT_FAILED;
        }
        return 0;
}

static int print_result(const struct command *c, bool json, struct json_object *result) {
        if (json) {
                printf("%s\n", json_object_to_json_string_ext(
                        result, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
                        JSON_C_TO_STRING_NOSLASHESCAPE));
                return jget(result, "refused") || jint(result, "short") > 0 ||
                       jint(result, "drifted") > 0 ? EXIT_FAILED : 0;
        }
        if (c->render(result, stdout) < 0)
                return EXIT_FAILED;
        return jint(result, "short") > 0 ? EXIT_FAILED : 0;
}

static void print_error_json(const char *code, const char *message) {
        _cleanup_json_ struct json_object *o = json_object_new_object(), *e = json_object_new_object();

        json_object_object_add(e, "code", json_object_new_string(code));
        json_object_object_add(e, "message", json_object_new_string(message ? message : ""));
        json_object_object_add(o, "error", json_object_get(e));
        printf("%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
                                                       JSON_C_TO_STRING_NOSLASHESCAPE));
}

static int run_command(const struct command *c, const struct args *a) {
        _cleanup_json_ struct json_object *params = NULL;
        struct proto_reply rep = { 0 };
        int r;

        if (c->params && c->params(a, &params) < 0)
                return EXIT_USAGE;
        r = call_daemon(proto_socket_path(a->socket), c->method, params, &rep);
        if (r == 0)
                r = print_result(c, a->json, rep.result);
        else if (a->json && rep.error_code)     /* --json: still one document on stdout */
                print_error_json(rep.error_code, rep.error_message);
        proto_reply_done(&rep);
        if (fflush(stdout) != 0 && r == 0) {
                fprintf(stderr, "kvmtunectl: cannot write the output: %s\n", strerror(errno));
                r = EXIT_FAILED;
        }
        return r;
}

/* metrics --output FILE: written beside FILE, then renamed over it, so a
 * reader (node_exporter's textfile collector) never sees half a file. */
static int metrics_write(const char *path, const char *text) {
        _cleanup_free_ char *tmp = xasprintf("%s.%d.tmp", path, (int)getpid());
        _cleanup_close_ int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        size_t len = strlen(text);
        int r = 0;

        if (fd < 0)
                return -errno;
        errno = 0;
        if (write(fd, text, len) != (ssize_t)len || fsync(fd) < 0 || rename(tmp, path) < 0)
                r = errno ? -errno : -EIO;
        if (r < 0)
                unlink(tmp);
        return r;
}

static int run_metrics_output(const struct args *a) {
        struct proto_reply rep = { 0 };
        int r = call_daemon(proto_socket_path(a->socket), PROTO_METHOD_METRICS, NULL, &rep), w;

        if (r == 0 && (w = metrics_write(a->output, jstr(rep.result, "text"))) < 0) {
                fprintf(stderr, "kvmtunectl: cannot write %s: %s\n", a->output, strerror(-w));
                r = EXIT_FAILED;
        }
        proto_reply_done(&rep);
        return r;
}

static int top_fetch(void *userdata, struct json_object **ret) {
        const struct args *a = userdata;
        struct proto_reply rep = { 0 };
        int r = call_daemon(proto_socket_path(a->socket), PROTO_METHOD_LIST, NULL, &rep);

        if (r == 0)
                *ret = json_object_get(rep.result);
        proto_reply_done(&rep);
        return r;
}

static int run_plan_offline(const struct args *a) {
        if (a->live_opts)
                return usage_error("plan: --topology/--workload cannot be combined with "
                                   "--vcpus, --memory or policy options"), EXIT_USAGE;
        if (!a->topology || !a->workload)
                return usage_error("plan: offline planning needs both --topology FILE.xml "
                                   "and --workload FILE.json"), EXIT_USAGE;
        return workload_plan_main(a->topology, a->workload, a->sysfs_root, a->json, stdout, stderr);
}

/* advise --xml: the definition from a file or stdin ("-"), up to ADVISE_MAX_XML bytes. */
static int advise_read_xml(const char *path, char **ret, size_t *ret_len) {
        _cleanup_fclose_ FILE *own = streq(path, "-") ? NULL : fopen(path, "re");
        FILE *f = streq(path, "-") ? stdin : own;
        _cleanup_free_ char *buf = NULL;
        size_t n;

        if (!f)
                return -errno;
        buf = xmalloc(ADVISE_MAX_XML + 2);
        n = fread(buf, 1, ADVISE_MAX_XML + 1, f);
        if (ferror(f))
                return -(errno ?: EIO);
        buf[n] = '\0';
        *ret = buf;
        buf = NULL;
        *ret_len = n;
        return 0;
}

static int advise_options(const struct args *a, struct policy *ret) {
        policy_init_default(ret);
        for (int i = 0; i < _POL_MAX; i++)
                if (a->policy[i] && policy_set(ret, policy_keys[i], a->policy[i]) < 0)
                        return usage_error("--%s: invalid value '%s'", policy_keys[i], a->policy[i]);
        ret->source = POLICY_SOURCE_REQUEST;
        return 0;
}

/* The configuration and the host topology an offline audit uses. */
static int advise_offline_inputs(const struct args *a, struct conf **ret_conf, struct topo **ret_topo) {
        char err[512];
        int r;

        r = conf_load(a->config, !a->config, ret_conf, err, sizeof err);
        if (r < 0)
                return fprintf(stderr, "kvmtunectl: %s\n", err), EXIT_FAILED;
        if (!a->topology)
                return 0;
        r = topo_load(TOPO_SOURCE_XML, a->topology, a->sysfs_root, ret_topo);
        if (r < 0)
                return fprintf(stderr, "kvmtunectl: %s: cannot load topology: %s\n", a->topology,
                               strerror(-r)), EXIT_FAILED;
        return 0;
}

/* The findings on stdout; with --apply the fixed XML there and the findings on stderr. */
static int advise_offline_print(const struct args *a, const struct advise_result *res) {
        _cleanup_json_ struct json_object *o = render_advise_json(res);

        if (a->apply) {
                render_advise_findings(o, stderr, true);
                fprintf(stdout, "%s\n", res->xml);
        } else if (a->json)
                printf("%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY |
                       JSON_C_TO_STRING_SPACED | JSON_C_TO_STRING_NOSLASHESCAPE));
        else
                render_advise(o, stdout);
        return fflush(stdout) == 0 ? 0 : EXIT_FAILED;
}

/* advise --xml FILE|-: no daemon, no libvirt. */
static int run_advise_offline(const struct args *a) {
        _cleanup_(conf_freep) struct conf *conf = NULL;
        _cleanup_(topo_freep) struct topo *topo = NULL;
        _cleanup_free_ char *xml = NULL;
        struct advise_result res;
        struct policy opts;
        char err[512];
        size_t len = 0;
        int r;

        if (advise_options(a, &opts) < 0)
                return EXIT_USAGE;
        if ((r = advise_offline_inputs(a, &conf, &topo)) != 0)
                return r;
        if ((r = advise_read_xml(a->xml, &xml, &len)) < 0)
                return fprintf(stderr, "kvmtunectl: %s: cannot read: %s\n", a->xml, strerror(-r)), EXIT_FAILED;
        r = advise_audit(xml, len, &(struct advise_request) { .conf = conf, .options = &opts,
                         .apply = a->apply, .topo = topo }, &res, err, sizeof err);
        if (r < 0)
                return fprintf(stderr, "kvmtunectl: %s: %s\n", a->xml, err), EXIT_FAILED;
        r = advise_offline_print(a, &res);
        advise_result_done(&res);
        return r;
}

/* --- arguments ------------------------------------------------------------- */

enum {
        OPT_SOCKET = 0x100, OPT_JSON, OPT_VCPUS, OPT_MEMORY, OPT_IOTHREAD_COUNT,
        OPT_TOPOLOGY, OPT_WORKLOAD, OPT_SYSFS_ROOT, OPT_NAME, OPT_SIZE, OPT_NODE, OPT_COUNT, OPT_APPLY,
        OPT_ALL, OPT_XML, OPT_CONFIG, OPT_OUTPUT, OPT_ONCE,
        OPT_POLICY,                     /* + POL_* */
};

static const struct option options[] = {
        { "help",           no_argument,       NULL, 'h' },
        { "version",        no_argument,       NULL, 'V' },
        { "socket",         required_argument, NULL, OPT_SOCKET },
        { "json",           no_argument,       NULL, OPT_JSON },
        { "vcpus",          required_argument, NULL, OPT_VCPUS },
        { "memory",         required_argument, NULL, OPT_MEMORY },
        { "iothread-count", required_argument, NULL, OPT_IOTHREAD_COUNT },
        { "name",           required_argument, NULL, OPT_NAME },
        { "cpu",            required_argument, NULL, OPT_POLICY + POL_CPU },
        { "threads",        required_argument, NULL, OPT_POLICY + POL_THREADS },
        { "emulator",       required_argument, NULL, OPT_POLICY + POL_EMULATOR },
        { "iothreads",      required_argument, NULL, OPT_POLICY + POL_IOTHREADS },
        { "numa",           required_argument, NULL, OPT_POLICY + POL_NUMA },
        { "hugepages",      required_argument, NULL, OPT_POLICY + POL_HUGEPAGES },
        { "topology",       required_argument, NULL, OPT_TOPOLOGY },
        { "workload",       required_argument, NULL, OPT_WORKLOAD },
        { "sysfs-root",     required_argument, NULL, OPT_SYSFS_ROOT },
        { "size",           required_argument, NULL, OPT_SIZE },
        { "node",           required_argument, NULL, OPT_NODE },
        { "count",          required_argument, NULL, OPT_COUNT },
        { "apply",          no_argument,       NULL, OPT_APPLY },
        { "all",            no_argument,       NULL, OPT_ALL },
        { "xml",            required_argument, NULL, OPT_XML },
        { "config",         required_argument, NULL, OPT_CONFIG },
        { "output",         required_argument, NULL, OPT_OUTPUT },
        { "once",           no_argument,       NULL, OPT_ONCE },
        {}
};

static void help(void) {
        printf("Usage: kvmtunectl [--socket PATH] [--json] COMMAND [ARGS]\n"
               "\n"
               "Query and steer kvmtuned, the KVM tuning daemon.\n"
               "\n"
               "Commands:\n"
               "  status                 daemon version, uptime, libvirt, CPU pools, domain counts\n"
               "  list                   every domain: state, policy, vCPU to PU map, NUMA nodes\n"
               "  show DOMAIN            one domain in full\n"
               "  topology               NUMA nodes, L3 groups, cores, PUs and the domain holding each\n"
               "  hugepages              hugepages per node and size: total, free, reserved\n"
               "                         and the domains holding them\n"
               "  hugepages reserve --size 1G|2M --node N --count K\n"
               "                         set a node's pool at run time (root)\n"
               "  plan --vcpus N [--memory SIZE] [POLICY OPTIONS]\n"
               "                         where would such a domain go now (asks the daemon)\n"
               "  plan --topology FILE.xml --workload FILE.json [--sysfs-root DIR]\n"
               "                         replay a workload offline (no daemon needed)\n"
               "  rebalance [DOMAIN]     recompute and re-apply placement (root)\n"
               "  reload                 re-read the configuration (root)\n"
               "  metrics [--output FILE]\n"
               "                         Prometheus text exposition, incl. per-vCPU run time\n"
               "                         and run-queue delay; --output replaces FILE atomically\n"
               "                         (node_exporter's textfile collector)\n"
               "  top [--once]           live view, one line per guest: state, policy, PUs,\n"
               "                         vCPU busy %% and run-queue delay %%, each second;\n"
               "                         --once prints one frame over 1 s and exits\n"
               "  verify                 compare every placed guest's threads, cgroup cpusets\n"
               "                         and memory nodes with its placement; exit 1 on drift\n"
               "  advise DOMAIN [--apply]\n"
               "                         audit a domain's definition against proven tuning;\n"
               "                         --apply makes the safe fixes in the persistent\n"
               "                         definition (root)\n"
               "  advise --all           every defined domain: warnings and info per domain,\n"
               "                         then the total\n"
               "  advise --xml FILE|- [--apply] [POLICY OPTIONS] [--config FILE]\n"
               "         [--topology FILE.xml [--sysfs-root DIR]]\n"
               "                         audit a definition offline (no daemon, no libvirt);\n"
               "                         --apply prints the fixed XML\n"
               "  isolation [on|off|config]\n"
               "                         host work kept off dedicated CPUs: what is in force,\n"
               "                         what was skipped; on/off switch it, config goes back\n"
               "                         to [host] isolation (root)\n"
               "\n"
               "Options:\n"
               "  --socket PATH          control socket (default $KVMTUNED_SOCKET or\n"
               "                         " PROTO_SOCKET_DEFAULT ")\n"
               "  --json                 print the result as one JSON document\n"
               "  -h, --help             show this help\n"
               "  -V, --version          show the version\n"
               "\n"
               "Plan options:\n"
               "  --vcpus N              number of vCPUs\n"
               "  --memory SIZE          guest memory, e.g. 8G or 512M (default: not a constraint)\n"
               "  --cpu dedicated|shared|none\n"
               "  --threads prefer|isolate|require\n"
               "  --emulator isolate|share|vcpus\n"
               "  --iothreads dedicated|emulator|shared\n"
               "  --iothread-count N     number of iothreads (default 0)\n"
               "  --name NAME            start from the policy the configuration gives a\n"
               "                         domain of this name (default: [defaults])\n"
               "  --numa strict|preferred|none\n"
               "  --hugepages 1G|2M|none\n"
               "  --topology FILE.xml    hwloc XML export of the host (offline)\n"
               "  --workload FILE.json   start/stop events to replay (offline)\n"
               "  --sysfs-root DIR       read /sys below DIR (offline)\n"
               "\n"
               "Advise options:\n"
               "  --apply                make the safe fixes\n"
               "  --all                  audit every defined domain (asks the daemon)\n"
               "  --xml FILE|-           the definition to audit offline (- for stdin)\n"
               "  --config FILE          offline: policy from this configuration (default\n"
               "                         " CONF_PATH_DEFAULT " if it exists)\n"
               "  --cpu ... --hugepages  offline: policy options, over the definition's metadata\n"
               "  --topology FILE.xml    offline: the host, for the guest NUMA view\n"
               "\n"
               "Hugepages reserve options:\n"
               "  --size 1G|2M           page size of the pool\n"
               "  --node N               NUMA node number\n"
               "  --count K              pages the pool should hold; never set below\n"
               "                         the pages in use\n"
               "\n"
               "Exit status: 0 success, 1 the request failed, 2 usage error,\n"
               "3 the daemon cannot be reached.\n");
}

/* Returns 0 to go on, 1 when done (help, version), <0 on a usage error. */
static int parse_option(int c, struct args *a) {
        switch (c) {
        case 'h': help(); return 1;
        case 'V': printf("kvmtunectl %s\n", PACKAGE_VERSION); return 1;
        case OPT_SOCKET: a->socket = optarg; return 0;
        case OPT_JSON: a->json = true; return 0;
        case OPT_VCPUS: a->vcpus = optarg; a->plan_only = true; break;
        case OPT_MEMORY: a->memory = optarg; a->plan_only = true; break;
        case OPT_IOTHREAD_COUNT: a->iothread_count = optarg; a->plan_only = true; break;
        case OPT_NAME: a->plan_name = optarg; a->plan_only = true; break;
        case OPT_TOPOLOGY: a->topology = optarg; a->offline_opts = true; return 0;
        case OPT_WORKLOAD: a->workload = optarg; a->offline_opts = a->plan_only = true; return 0;
        case OPT_SYSFS_ROOT: a->sysfs_root = optarg; a->offline_opts = true; return 0;
        case OPT_SIZE: a->size = optarg; a->reserve_opts = true; return 0;
        case OPT_NODE: a->node = optarg; a->reserve_opts = true; return 0;
        case OPT_COUNT: a->count = optarg; a->reserve_opts = true; return 0;
        case OPT_APPLY: a->apply = true; return 0;
        case OPT_ALL: a->all = true; return 0;
        case OPT_XML: a->xml = optarg; return 0;
        case OPT_CONFIG: a->config = optarg; return 0;
        case OPT_OUTPUT: a->output = optarg; return 0;
        case OPT_ONCE: a->once = true; return 0;
        default:
                if (c >= OPT_POLICY && c < OPT_POLICY + _POL_MAX) {
                        a->policy[c - OPT_POLICY] = optarg;
                        break;
                }
                return -EINVAL;         /* getopt printed why */
        }
        a->live_opts = true;
        return 0;
}

static int parse_args(int argc, char **argv, struct args *a) {
        int c, r;

        while ((c = getopt_long(argc, argv, "hV", options, NULL)) >= 0) {
                r = parse_option(c, a);
                if (r < 0)
                        fprintf(stderr, "Try 'kvmtunectl --help'.\n");
                if (r != 0)
                        return r;
        }
        a->pos = argv + optind;
        a->npos = argc - optind;
        return 0;
}

static const struct command *command_find(const char *name) {
        for (size_t i = 0; i < ELEMENTSOF(commands); i++)
                if (streq(commands[i].name, name))
                        return &commands[i];
        return NULL;
}

/* advise DOMAIN [--apply] | --all | --xml FILE|- [--apply] [policy options]
 * [--topology FILE.xml [--sysfs-root DIR]] [--config FILE]. */
static const struct command *advise_check(const struct args *a, const struct command *c) {
        if ((a->npos > 1) + !!a->xml + a->all != 1)
                return usage_error("advise: give one of DOMAIN, --xml FILE|- or --all"), NULL;
        if (a->plan_only)
                return usage_error("advise: --vcpus, --memory, --iothread-count, --name and --workload "
                                   "only apply to plan"), NULL;
        if (!a->xml && (a->live_opts || a->offline_opts || a->config))
                return usage_error("advise: policy options, --topology, --sysfs-root and --config only "
                                   "apply to advise --xml"), NULL;
        if (a->reserve_opts)
                return usage_error("advise: --size, --node and --count only apply to hugepages reserve"), NULL;
        if (a->all && a->apply)
                return usage_error("advise: --apply takes one DOMAIN (or --xml), not --all"), NULL;
        if (a->apply && !a->xml)
                return &advise_apply_command;
        return a->all ? &advise_all_command : c;
}

/* The command, or NULL after a usage error was printed. */
static const struct command *command_check(const struct args *a) {
        const struct command *c;

        if (a->npos == 0)
                return usage_error("no command given"), NULL;
        c = command_find(a->pos[0]);
        if (!c)
                return usage_error("unknown command '%s'", a->pos[0]), NULL;
        if (a->npos - 1 < c->min_args)
                return usage_error("%s: missing argument", c->name), NULL;
        if (a->npos - 1 > c->max_args)
                return usage_error("%s: unexpected argument '%s'", c->name, a->pos[c->max_args + 1]), NULL;
        if (streq(c->name, "advise"))
                return advise_check(a, c);
        if (a->all || a->xml || a->config)
                return usage_error("%s: --all, --xml and --config only apply to advise", c->name), NULL;
        if (!streq(c->name, "plan") && (a->live_opts || a->offline_opts))
                return usage_error("%s: plan options only apply to the plan command", c->name), NULL;
        if (streq(c->name, "hugepages") && a->npos > 1) {
                if (!streq(a->pos[1], "reserve"))
                        return usage_error("hugepages: unknown sub-command '%s' (reserve)", a->pos[1]), NULL;
                return &hugepages_reserve_command;
        }
        if (streq(c->name, "isolation") && a->npos > 1)
                return &isolation_set_command;
        if (a->apply)
                return usage_error("%s: --apply only applies to advise", c->name), NULL;
        if (a->output && !streq(c->name, "metrics"))
                return usage_error("%s: --output only applies to metrics", c->name), NULL;
        if (a->once && !streq(c->name, "top"))
                return usage_error("%s: --once only applies to top", c->name), NULL;
        if (a->reserve_opts)
                return usage_error("%s: --size, --node and --count only apply to hugepages reserve",
                                   c->name), NULL;
        return c;
}

int main(int argc, char **argv) {
        struct args a = { 0 };
        const struct command *c;
        int r;

        r = parse_args(argc, argv, &a);
        if (r != 0)
                return r > 0 ? 0 : EXIT_USAGE;
        c = command_check(&a);
        if (!c)
                return EXIT_USAGE;
        if (streq(c->name, "plan") && a.offline_opts)
                return run_plan_offline(&a);
        if (streq(c->name, "advise") && a.xml)
                return run_advise_offline(&a);
        if (streq(c->name, "metrics") && a.output)
                return run_metrics_output(&a);
        if (streq(c->name, "top"))
                return a.json ? usage_error("top: no --json (use list --json)"), EXIT_USAGE
                              : top_run(top_fetch, &a, a.once, stdout);
        return run_command(c, &a);
}
