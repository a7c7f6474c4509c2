#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <sys/stat.h>

#include "kvmtune/proto.h"
#include "kvmtune/render.h"
#include "kvmtune/util.h"
#include "kvmtune/workload.h"
#include "workload-priv.h"

#define WORKLOAD_MAX_VCPUS 4096
#define WORKLOAD_MAX_IOTHREADS 1024
#define WORKLOAD_MAX_MEMORY_MIB (1ULL << 40)    /* 1 EiB */

static inline void workload_freep(struct workload **w) { workload_free(*w); }

#define fail(err, errlen, ...) error_set((err), (errlen), -EINVAL, __VA_ARGS__)

/* ---- parsing: one event -------------------------------------------------------------- */

struct event_ctx {
        int index;                      /* from 1 */
        char *err;
        size_t errlen;
};

#define EFAIL(c, fmt, ...) fail((c)->err, (c)->errlen, "event %d: " fmt, (c)->index, ##__VA_ARGS__)

static int get_int(const struct event_ctx *c, struct json_object *v, const char *key, int64_t max,
                   int64_t *ret) {
        int64_t n;

        if (!json_object_is_type(v, json_type_int))
                return EFAIL(c, "\"%s\" must be an integer", key);
        n = json_object_get_int64(v);
        if (n < 0 || n > max)
                return EFAIL(c, "\"%s\" is %" PRId64 ", must be 0..%" PRId64, key, n, max);
        *ret = n;
        return 0;
}

static int get_string(const struct event_ctx *c, struct json_object *v, const char *key, const char **ret) {
        if (!json_object_is_type(v, json_type_string))
                return EFAIL(c, "\"%s\" must be a string", key);
        *ret = json_object_get_string(v);
        return 0;
}

static int set_policy_key(const struct event_ctx *c, struct request *req, const char *key,
                          struct json_object *v) {
        const char *s = NULL;

        if (get_string(c, v, key, &s) < 0)
                return -EINVAL;
        if (policy_set(&req->policy, key, s) < 0)
                return EFAIL(c, "invalid %s \"%s\"", key, s);
        req->policy.source = POLICY_SOURCE_CONFIG;
        return 0;
}

static int set_start_key(const struct event_ctx *c, struct request *req, const char *key,
                         struct json_object *v) {
        int64_t n;

        if (streq(key, "vcpus")) {
                if (get_int(c, v, key, WORKLOAD_MAX_VCPUS, &n) < 0)
                        return -EINVAL;
                if (n == 0)
                        return EFAIL(c, "\"vcpus\" must be at least 1");
                req->vcpus = (int) n;
        } else if (streq(key, "memory_mib")) {
                if (get_int(c, v, key, WORKLOAD_MAX_MEMORY_MIB, &n) < 0)
                        return -EINVAL;
                req->memory_kib = (uint64_t) n * 1024;
        } else if (streq(key, "iothread_count")) {
                if (get_int(c, v, key, WORKLOAD_MAX_IOTHREADS, &n) < 0)
                        return -EINVAL;
                req->iothreads = (int) n;
        } else {                /* a policy key: policy_set knows them all */
                struct policy probe;

                policy_init_default(&probe);
                if (policy_set(&probe, key, "") == -ENOENT)
                        return EFAIL(c, "unknown key \"%s\" in a start event", key);
                return set_policy_key(c, req, key, v);
        }
        return 0;
}

static int set_start_keys(const struct event_ctx *c, struct json_object *o, struct request *req) {
        json_object_object_foreach(o, key, v) {
                if (streq(key, "op") || streq(key, "name"))
                        continue;
                if (set_start_key(c, req, key, v) < 0)
                        return -EINVAL;
        }
        return 0;
}

static int parse_start(const struct event_ctx *c, struct json_object *o, struct workload_event *e) {
        policy_init_default(&e->req.policy);
        if (set_start_keys(c, o, &e->req) < 0)
                return -EINVAL;
        if (e->req.vcpus == 0)
                return EFAIL(c, "start of \"%s\" has no \"vcpus\"", e->name);
        return 0;
}

static int parse_stop(const struct event_ctx *c, struct json_object *o) {
        json_object_object_foreach(o, key, v) {
                (void) v;
                if (!streq(key, "op") && !streq(key, "name"))
                        return EFAIL(c, "unknown key \"%s\" in a stop event", key);
        }
        return 0;
}

static int parse_op(const struct event_ctx *c, struct json_object *o, enum workload_op *ret) {
        struct json_object *v;
        const char *op = NULL;

        if (!json_object_object_get_ex(o, "op", &v))
                return EFAIL(c, "missing \"op\"");
        if (get_string(c, v, "op", &op) < 0)
                return -EINVAL;
        if (streq(op, "start"))
                *ret = WORKLOAD_START;
        else if (streq(op, "stop"))
                *ret = WORKLOAD_STOP;
        else
                return EFAIL(c, "unknown op \"%s\"", op);
        return 0;
}

static int parse_name(const struct event_ctx *c, struct json_object *o, char **ret) {
        struct json_object *v;
        const char *name = NULL;

        if (!json_object_object_get_ex(o, "name", &v))
                return EFAIL(c, "missing \"name\"");
        if (get_string(c, v, "name", &name) < 0)
                return -EINVAL;
        if (!name || !*name)
                return EFAIL(c, "empty \"name\"");
        *ret = xstrdup(name);
        return 0;
}

static int parse_event(const struct event_ctx *c, struct json_object *o, struct workload_event *e) {
        if (!json_object_is_type(o, json_type_object))
                return EFAIL(c, "not an object");
        if (parse_op(c, o, &e->op) < 0 || parse_name(c, o, &e->name) < 0)
                return -EINVAL;
        return e->op == WORKLOAD_START ? parse_start(c, o, e) : parse_stop(c, o);
}

/* ---- parsing: the document ---------------------------------------------------------- */

static int find_running(char *const *running, int n, const char *name) {
        for (int i = 0; i < n; i++)
                if (running[i] && streq(running[i], name))
                        return i;
        return -1;
}

/* Starts and stops must pair up by name, in order. */
static int check_sequence(const struct workload *w, char *err, size_t errlen) {
        _cleanup_free_ char **running = xcalloc(w->nevent, sizeof(char *));
        int n = 0;

        for (int i = 0; i < w->nevent; i++) {
                const struct workload_event *e = &w->events[i];
                int r = find_running(running, n, e->name);

                if (e->op == WORKLOAD_START && r >= 0)
                        return fail(err, errlen, "event %d: \"%s\" is already running (started by an "
                                    "earlier event)", i + 1, e->name);
                if (e->op == WORKLOAD_STOP && r < 0)
                        return fail(err, errlen, "event %d: stop of \"%s\", which is not running", i + 1, e->name);
                if (e->op == WORKLOAD_START)
                        running[n++] = e->name;
                else
                        running[r] = NULL;
        }
        return 0;
}

static int parse_reserved(struct json_object *root, struct workload *w, char *err, size_t errlen) {
        struct json_object *v;

        if (!json_object_object_get_ex(root, "reserved_cpus", &v))
                return 0;
        if (!json_object_is_type(v, json_type_string))
                return fail(err, errlen, "\"reserved_cpus\" must be a string such as \"0,1\"");
        w->reserved_cpus = xstrdup(json_object_get_string(v));
        return 0;
}

static int parse_events(struct json_object *root, struct workload *w, char *err, size_t errlen) {
        struct json_object *events;
        size_t n;

        if (!json_object_object_get_ex(root, "events", &events))
                return fail(err, errlen, "missing \"events\"");
        if (!json_object_is_type(events, json_type_array))
                return fail(err, errlen, "\"events\" must be an array");
        n = json_object_array_length(events);
        if (n > WORKLOAD_MAX_EVENTS)
                return fail(err, errlen, "too many events (%zu, limit %d)", n, WORKLOAD_MAX_EVENTS);
        w->events = xcalloc(n, sizeof(*w->events));
        for (size_t i = 0; i < n; i++) {
                struct event_ctx c = { .index = (int) i + 1, .err = err, .errlen = errlen };

                w->nevent++;
                if (parse_event(&c, json_object_array_get_idx(events, i), &w->events[i]) < 0)
                        return -EINVAL;
        }
        return check_sequence(w, err, errlen);
}

static int check_document_keys(struct json_object *root, char *err, size_t errlen) {
        json_object_object_foreach(root, key, v) {
                (void) v;
                if (!streq(key, "reserved_cpus") && !streq(key, "events"))
                        return fail(err, errlen, "unknown key \"%s\"", key);
        }
        return 0;
}

static int parse_document(struct json_object *root, struct workload *w, char *err, size_t errlen) {
        if (!json_object_is_type(root, json_type_object))
                return fail(err, errlen, "the workload must be a JSON object with \"events\"");
        if (check_document_keys(root, err, errlen) < 0)
                return -EINVAL;
        if (parse_reserved(root, w, err, errlen) < 0)
                return -EINVAL;
        return parse_events(root, w, err, errlen);
}

static bool only_blanks(const char *s, size_t len) {
        for (size_t i = 0; i < len; i++)
                if (s[i] != ' ' && s[i] != '\t' && s[i] != '\n' && s[i] != '\r')
                        return false;
        return true;
}

static struct json_object *tokenize(const char *json, size_t len, char *err, size_t errlen) {
        struct json_tokener *tok = json_tokener_new();
        struct json_object *root;
        enum json_tokener_error e;

        if (!tok)
                abort();
        root = json_tokener_parse_ex(tok, json, (int) len);
        e = json_tokener_get_error(tok);
        if (!root || e != json_tokener_success)
                fail(err, errlen, "invalid JSON at offset %zu: %s", json_tokener_get_parse_end(tok),
                     e == json_tokener_continue ? "unexpected end of input" : json_tokener_error_desc(e));
        else if (!only_blanks(json + json_tokener_get_parse_end(tok), len - json_tokener_get_parse_end(tok)))
                fail(err, errlen, "invalid JSON: trailing data at offset %zu", json_tokener_get_parse_end(tok));
        else {
                json_tokener_free(tok);
                return root;
        }
        json_object_put(root);
        json_tokener_free(tok);
        return NULL;
}

int workload_parse(const char *json, size_t len, struct workload **ret, char *err, size_t errlen) {
        _cleanup_(workload_freep) struct workload *w = NULL;
        _cleanup_json_ struct json_object *root = NULL;

        if (!json || len == 0)
                return fail(err, errlen, "empty workload");
        if (len > WORKLOAD_MAX_SIZE)
                return fail(err, errlen, "workload too large (%zu bytes, limit %u)", len, WORKLOAD_MAX_SIZE);
        if (!(root = tokenize(json, len, err, errlen)))
                return -EINVAL;
        w = xcalloc(1, sizeof(*w));
        if (parse_document(root, w, err, errlen) < 0)
                return -EINVAL;
        *ret = w;
        w = NULL;
        return 0;
}

int workload_load(const char *path, struct workload **ret, char *err, size_t errlen) {
        _cleanup_fclose_ FILE *f = fopen(path, "re");
        _cleanup_free_ char *buf = NULL;
        size_t n;
        int e = errno;

        if (!f) {
                fail(err, errlen, "cannot open: %s", strerror(e));
                return -e;
        }
        buf = xmalloc(WORKLOAD_MAX_SIZE + 1);
        errno = 0;
        n = fread(buf, 1, WORKLOAD_MAX_SIZE + 1, f);
        if (ferror(f)) {
                e = errno ?: EIO;       /* EISDIR for a directory */
                fail(err, errlen, "cannot read: %s", strerror(e));
                return -e;
        }
        return workload_parse(buf, n, ret, err, errlen);
}

struct workload *workload_free(struct workload *w) {
        if (!w)
                return NULL;
        for (int i = 0; i < w->nevent; i++)
                free(w->events[i].name);
        free(w->events);
        free(w->reserved_cpus);
        free(w);
        return NULL;
}

/* ---- replay ---------------------------------------------------------------------------- */

struct domain_slot {
        const char *name;
        bool placed;
        struct plan plan;
};

struct replay {
        const struct topo *t;
        struct alloc *a;
        struct domain_slot *slots;      /* per event; id = index + 1 */
        int placed, refused, ignored, one_node, dedicated;
        long groups;
};

static int reserve(const struct topo *t, struct alloc *a, const char *list, char *err, size_t errlen) {
        _cleanup_bitmap_ hwloc_bitmap_t b = NULL;
        unsigned cpu;

        if (!list)
                b = placement_default_reserved(t);
        else if (!(b = hwloc_bitmap_alloc()) || bitmap_parse_list(list, CPU_LIST_MAX, b) < 0)
                return fail(err, errlen, "reserved_cpus: invalid CPU list \"%s\"", list);
        hwloc_bitmap_foreach_begin(cpu, b)
                if (topo_pu_by_os(t, cpu) < 0)
                        return fail(err, errlen, "reserved_cpus: CPU %u is not on this host", cpu);
        hwloc_bitmap_foreach_end();
        alloc_reserve(a, t, b);
        return 0;
}

static struct json_object *result_new(int event, const char *op, const char *name) {
        struct json_object *o = json_object_new_object();

        json_object_object_add(o, "event", json_object_new_int(event));
        json_object_object_add(o, "op", json_object_new_string(op));
        json_object_object_add(o, "name", json_object_new_string(name));
        return o;
}

static struct json_object *placed_json(struct replay *rp, int i, const struct workload_event *e) {
        const struct plan *p = &rp->slots[i].plan;
        struct json_object *o = render_domain_json(rp->t, rp->a, p, &e->req.policy, e->name);

        json_object_object_add(o, "event", json_object_new_int(i + 1));
        json_object_object_add(o, "op", json_object_new_string("start"));
        json_object_object_add(o, "l3_groups", json_object_new_int(p->ngroup));
        json_object_object_add(o, "split", json_object_new_boolean(p->split));
        if (p->note[0])
                json_object_object_add(o, "note", json_object_new_string(p->note));
        return o;
}

static struct json_object *replay_start(struct replay *rp, int i, const struct workload_event *e) {
        struct domain_slot *s = &rp->slots[i];
        char reason[PLACEMENT_REASON_MAX] = "";
        struct json_object *o;

        s->name = e->name;
        if (e->req.policy.cpu == POLICY_CPU_NONE) {
                rp->ignored++;
                o = result_new(i + 1, "start", e->name);
                json_object_object_add(o, "ignored", json_object_new_string("cpu=none: left alone"));
                return o;
        }
        if (placement_place(rp->t, rp->a, &e->req, &s->plan, reason) < 0) {
                rp->refused++;
                o = result_new(i + 1, "start", e->name);
                json_object_object_add(o, "refused", json_object_new_string(reason[0] ? reason : "no placement"));
                return o;
        }
        alloc_commit(rp->a, rp->t, &s->plan, i + 1);
        s->placed = true;
        rp->placed++;
        rp->one_node += s->plan.nnode == 1;
        if (s->plan.dedicated) {        /* shared vCPUs span no groups of their own */
                rp->dedicated++;
                rp->groups += s->plan.ngroup;
        }
        return placed_json(rp, i, e);
}

static struct json_object *replay_stop(struct replay *rp, int i, const struct workload_event *e) {
        struct json_object *o = result_new(i + 1, "stop", e->name);

        for (int j = i - 1; j >= 0; j--) {
                struct domain_slot *s = &rp->slots[j];

                if (!s->name || !streq(s->name, e->name))
                        continue;
                json_object_object_add(o, "released", json_object_new_boolean(s->placed));
                if (s->placed) {
                        alloc_release(rp->a, rp->t, &s->plan, j + 1);
                        plan_done(&s->plan);
                }
                s->name = NULL;
                s->placed = false;
                break;
        }
        return o;
}

static int node_free_pus(const struct topo *t, const struct alloc *a, int node) {
        int n = 0;

        for (int pu = 0; pu < t->npu; pu++)
                n += topo_pu_node(t, pu) == node && a->pu_owner[pu] == ALLOC_FREE;
        return n;
}

static struct json_object *summary_json(const struct replay *rp) {
        struct json_object *o = json_object_new_object();
        struct json_object *free_pus = json_object_new_object();

        json_object_object_add(o, "placed", json_object_new_int(rp->placed));
        json_object_object_add(o, "refused", json_object_new_int(rp->refused));
        json_object_object_add(o, "ignored", json_object_new_int(rp->ignored));
        json_object_object_add(o, "one_node", json_object_new_int(rp->one_node));
        json_object_object_add(o, "mean_l3_groups",
                               json_object_new_double(rp->dedicated ? (double) rp->groups / rp->dedicated : 0.0));
        for (int n = 0; n < rp->t->nnode; n++) {
                char key[16];

                snprintf(key, sizeof(key), "%u", rp->t->nodes[n].os);
                json_object_object_add(free_pus, key, json_object_new_int(node_free_pus(rp->t, rp->a, n)));
        }
        json_object_object_add(o, "free_pus_per_node", free_pus);
        return o;
}

static void replay_done(struct replay *rp, int nevent) {
        for (int i = 0; i < nevent; i++)
                if (rp->slots[i].placed)
                        plan_done(&rp->slots[i].plan);
        free(rp->slots);
        alloc_free(rp->a);
}

int workload_replay(const struct topo *t, const struct workload *w, struct json_object **ret,
                    char *err, size_t errlen) {
        struct replay rp = { .t = t, .a = alloc_new(t), .slots = xcalloc(w->nevent, sizeof(struct domain_slot)) };
        struct json_object *results, *report;

        if (reserve(t, rp.a, w->reserved_cpus, err, errlen) < 0) {
                replay_done(&rp, w->nevent);
                return -EINVAL;
        }
        results = json_object_new_array();
        for (int i = 0; i < w->nevent; i++) {
                const struct workload_event *e = &w->events[i];

                json_object_array_add(results, e->op == WORKLOAD_START ? replay_start(&rp, i, e) :
                                                                         replay_stop(&rp, i, e));
        }
        report = json_object_new_object();
        json_object_object_add(report, "results", results);
        json_object_object_add(report, "summary", summary_json(&rp));
        replay_done(&rp, w->nevent);
        *ret = report;
        return 0;
}

/* ---- human output -------------------------------------------------------------------- */

static struct json_object *get(struct json_object *o, const char *key) {
        struct json_object *v = NULL;

        json_object_object_get_ex(o, key, &v);
        return v;
}

static const char *get_str(struct json_object *o, const char *key) {
        struct json_object *v = get(o, key);

        return v ? json_object_get_string(v) : "";
}

static bool single_cpu(struct json_object *vcpus, size_t i) {
        struct json_object *cpus = get(json_object_array_get_idx(vcpus, i), "cpus");

        return cpus && json_object_is_type(cpus, json_type_array) && json_object_array_length(cpus) == 1;
}

static int vcpu_cpu(struct json_object *vcpus, size_t i) {
        return json_object_get_int(json_object_array_get_idx(get(json_object_array_get_idx(vcpus, i), "cpus"), 0));
}

static hwloc_bitmap_t array_bitmap(struct json_object *arr) {
        hwloc_bitmap_t b = hwloc_bitmap_alloc();
        size_t n = json_object_array_length(arr);

        if (!b)
                abort();
        for (size_t i = 0; i < n; i++)
                hwloc_bitmap_set(b, (unsigned) json_object_get_int(json_object_array_get_idx(arr, i)));
        return b;
}

static char *cpus_list(struct json_object *arr) {
        _cleanup_bitmap_ hwloc_bitmap_t b = arr ? array_bitmap(arr) : NULL;

        return b ? render_bitmap_list(b) : xstrdup("");
}

/* Dedicated vCPUs: their PUs in vCPU order, ascending runs compressed
 * ("4-7,52" = vCPU 0 on 4 ... vCPU 4 on 52); shared: the pool they float over. */
static char *vcpus_text(struct json_object *vcpus) {
        size_t n = vcpus ? json_object_array_length(vcpus) : 0;
        _cleanup_free_ int *cpu = xcalloc(n + 1, sizeof *cpu);

        for (size_t i = 0; i < n; i++) {
                if (!single_cpu(vcpus, i)) {
                        _cleanup_free_ char *l = cpus_list(get(json_object_array_get_idx(vcpus, i), "cpus"));
                        return xasprintf("pool %s", l);
                }
                cpu[i] = vcpu_cpu(vcpus, i);
        }
        return n ? format_runs(cpu, (int)n) : xstrdup("-");
}

static void add_result_row(struct table *tb, struct json_object *r) {
        _cleanup_free_ char *nodes = NULL, *vcpus = NULL, *emu = NULL;
        struct json_object *v;

        table_new_row(tb);
        table_add_cellf(tb, "%d", json_object_get_int(get(r, "event")));
        table_add_cell(tb, get_str(r, "op"));
        table_add_cell(tb, get_str(r, "name"));
        if ((v = get(r, "refused")) || (v = get(r, "ignored"))) {
                table_add_cellf(tb, "%s: %s", get(r, "refused") ? "REFUSED" : "IGNORED", json_object_get_string(v));
                return;
        }
        if (streq(get_str(r, "op"), "stop")) {
                table_add_cell(tb, json_object_get_boolean(get(r, "released")) ? "released" : "was not placed");
                return;
        }
        nodes = cpus_list(get(get(r, "numa"), "nodes"));
        vcpus = vcpus_text(get(r, "vcpus"));
        emu = cpus_list(get(get(r, "emulator"), "cpus"));
        table_add_cell(tb, "placed");
        table_add_cell(tb, nodes);
        table_add_cell(tb, vcpus);
        table_add_cellf(tb, "%s %s", get_str(get(r, "policy"), "emulator"), emu);
        table_add_cell(tb, get_str(r, "note"));
}

/* " node 0: 36, node 1: 48" */
static void print_free_pus(struct json_object *free_pus, FILE *out) {
        const char *sep = "";
        json_object_object_foreach(free_pus, node, n) {
                fprintf(out, "%s node %s: %d", sep, node, json_object_get_int(n));
                sep = ",";
        }
}

static void print_summary(struct json_object *sum, FILE *out) {
        fprintf(out, "\n%d placed, %d refused, %d ignored; %d on one NUMA node; mean L3 groups per domain %.2f\n",
                json_object_get_int(get(sum, "placed")), json_object_get_int(get(sum, "refused")),
                json_object_get_int(get(sum, "ignored")), json_object_get_int(get(sum, "one_node")),
                json_object_get_double(get(sum, "mean_l3_groups")));
        fputs("free PUs per node:", out);
        print_free_pus(get(sum, "free_pus_per_node"), out);
        fputc('\n', out);
}

/* Prints a report from workload_replay() as an aligned table with a summary. */
static void workload_print_human(struct json_object *report, FILE *out) {
        _cleanup_(table_freep) struct table *tb = table_new();
        struct json_object *results = get(report, "results");
        size_t n = results ? json_object_array_length(results) : 0;

        table_add_row(tb, "EVENT", "OP", "NAME", "RESULT", "NODES", "VCPU->PU", "EMULATOR", "NOTE", NULL);
        for (size_t i = 0; i < n; i++)
                add_result_row(tb, json_object_array_get_idx(results, i));
        table_print(tb, out);
        print_summary(get(report, "summary"), out);
}

/* ---- the command ------------------------------------------------------------------------ */

static int plan_run(const struct topo *t, const struct workload *w, bool json, FILE *out, FILE *errout,
                    const char *workload_path) {
        _cleanup_json_ struct json_object *report = NULL;
        char err[WORKLOAD_ERR_MAX];

        if (workload_replay(t, w, &report, err, sizeof(err)) < 0) {
                fprintf(errout, "%s: %s\n", workload_path, err);
                return 1;
        }
        if (json)
                fprintf(out, "%s\n", json_object_to_json_string_ext(report, JSON_C_TO_STRING_PRETTY |
                                                                            JSON_C_TO_STRING_SPACED |
                                                                            JSON_C_TO_STRING_NOSLASHESCAPE));
        else
                workload_print_human(report, out);
        return 0;
}

int workload_plan_main(const char *topology_path, const char *workload_path, const char *sysfs_root,
                       bool json, FILE *out, FILE *errout) {
        _cleanup_(workload_freep) struct workload *w = NULL;
        _cleanup_(topo_freep) struct topo *t = NULL;
        char err[WORKLOAD_ERR_MAX];
        int r;

        if (!topology_path || !workload_path) {
                fprintf(errout, "plan: offline planning needs both --topology FILE.xml and --workload FILE.json\n");
                return 2;
        }
        if (workload_load(workload_path, &w, err, sizeof(err)) < 0) {
                fprintf(errout, "%s: %s\n", workload_path, err);
                return 1;
        }
        if ((r = topo_load(TOPO_SOURCE_XML, topology_path, sysfs_root, &t)) < 0) {
                fprintf(errout, "%s: cannot load topology: %s\n", topology_path, strerror(-r));
                return 1;
        }
        return plan_run(t, w, json, out, errout, workload_path);
}
