/* kvmtunectl top (top.h). */
#include "config.h"

#include <hwloc.h>
#include <json-c/json.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "kvmtune/render.h"
#include "kvmtune/schedstat.h"
#include "kvmtune/topo.h"
#include "kvmtune/util.h"
#include "top.h"

#define TOP_INTERVAL_USEC 1000000ULL

static void top_jsonp(struct json_object **o) { json_object_put(*o); }
static void top_tablep(struct table **t) { table_free(*t); }

static struct json_object *top_get(struct json_object *o, const char *key) {
        struct json_object *v = NULL;

        return o && json_object_object_get_ex(o, key, &v) ? v : NULL;
}

static const char *top_str(struct json_object *o, const char *key) {
        const char *s = json_object_get_string(top_get(o, key));

        return s ? s : "-";
}

static uint64_t top_now_usec(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * 1000000ULL + (uint64_t)ts.tv_nsec / 1000;
}

/* The summed counters of a domain's vCPUs; returns how many vCPUs have them. */
static int top_sum(struct json_object *dom, struct schedstat *ret) {
        struct json_object *vcpus = top_get(dom, "vcpus");
        int n = 0;

        *ret = (struct schedstat){ 0 };
        for (size_t i = 0; vcpus && i < json_object_array_length(vcpus); i++) {
                struct json_object *v = json_object_array_get_idx(vcpus, i);

                if (!top_get(v, "run_ns"))
                        continue;
                schedstat_add(ret, &(struct schedstat){
                        .run_ns = (uint64_t)json_object_get_int64(top_get(v, "run_ns")),
                        .delay_ns = (uint64_t)json_object_get_int64(top_get(v, "delay_ns")) });
                n++;
        }
        return n;
}

static struct json_object *top_find(struct json_object *domains, const char *uuid) {
        for (size_t i = 0; domains && i < json_object_array_length(domains); i++)
                if (streq(top_str(json_object_array_get_idx(domains, i), "uuid"), uuid))
                        return json_object_array_get_idx(domains, i);
        return NULL;
}

/* The PUs a domain's vCPUs may run on, "0-3,8". */
static char *top_pus(struct json_object *dom) {
        _cleanup_bitmap_ hwloc_bitmap_t set = hwloc_bitmap_alloc();
        struct json_object *vcpus = top_get(dom, "vcpus");
        char *s = NULL;

        for (size_t i = 0; vcpus && i < json_object_array_length(vcpus); i++) {
                struct json_object *cpus = top_get(json_object_array_get_idx(vcpus, i), "cpus");

                for (size_t k = 0; cpus && k < json_object_array_length(cpus); k++)
                        hwloc_bitmap_set(set, json_object_get_int(json_object_array_get_idx(cpus, k)));
        }
        if (hwloc_bitmap_iszero(set))
                return xstrdup("-");
        if (hwloc_bitmap_list_asprintf(&s, set) < 0)
                abort();
        return s;
}

static void top_add_rates(struct table *tb, struct json_object *now, struct json_object *prev,
                          uint64_t interval_usec) {
        struct schedstat a, b;
        struct schedstat_rate r;
        int n = top_sum(now, &b);

        if (!prev || top_sum(prev, &a) != n ||
            schedstat_rate(&a, &b, n, interval_usec * 1000ULL, &r) < 0) {
                table_add_cell(tb, "-");
                table_add_cell(tb, "-");
                return;
        }
        table_add_cellf(tb, "%.1f", r.busy_pct);
        table_add_cellf(tb, "%.1f", r.delay_pct);
}

static void top_frame(struct json_object *now, struct json_object *prev, uint64_t interval_usec, FILE *f) {
        __attribute__((cleanup(top_tablep))) struct table *tb = table_new();
        struct json_object *domains = top_get(now, "domains");
        size_t n = domains ? json_object_array_length(domains) : 0;

        fprintf(f, "kvmtuned: %zu guest%s; BUSY%% and DELAY%% (run-queue delay): per vCPU, "
                "over the last %.1f s\n\n", n, n == 1 ? "" : "s", (double)interval_usec / 1e6);
        table_add_row(tb, "NAME", "STATE", "POLICY", "VCPUS", "PUS", "BUSY%", "DELAY%", NULL);
        for (size_t i = 0; i < n; i++) {
                struct json_object *d = json_object_array_get_idx(domains, i);
                _cleanup_free_ char *pus = top_pus(d);

                table_new_row(tb);
                table_add_cell(tb, top_str(d, "name"));
                table_add_cell(tb, top_str(d, "state"));
                table_add_cell(tb, top_str(top_get(d, "policy"), "cpu"));
                table_add_cellf(tb, "%zu", json_object_array_length(top_get(d, "vcpus")));
                table_add_cell(tb, pus);
                top_add_rates(tb, d, prev ? top_find(top_get(prev, "domains"), top_str(d, "uuid")) : NULL,
                              interval_usec);
        }
        table_print(tb, f);
}

static void top_sleep_until(uint64_t usec) {
        uint64_t now = top_now_usec();

        if (usec > now)
                usleep((useconds_t)(usec - now));
}

int top_run(top_fetch_fn fetch, void *userdata, bool once, FILE *f) {
        __attribute__((cleanup(top_jsonp))) struct json_object *prev = NULL;
        bool tty = isatty(fileno(f));
        uint64_t prev_usec = 0;

        for (;;) {
                struct json_object *now = NULL;
                uint64_t t = top_now_usec();
                int r = fetch(userdata, &now);

                if (r != 0)
                        return r;
                if (!once || prev) {
                        if (tty && !once)
                                fputs("\033[H\033[2J", f);
                        top_frame(now, prev, prev ? t - prev_usec : TOP_INTERVAL_USEC, f);
                        fflush(f);
                }
                json_object_put(prev);
                prev = now;
                if (once && prev_usec)
                        return 0;
                prev_usec = t;
                top_sleep_until(t + TOP_INTERVAL_USEC);
        }
}
