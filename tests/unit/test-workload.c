#include "config.h"

#include <errno.h>

#include "kvmtune/proto.h"
#include "kvmtune/render.h"
#include "kvmtune/util.h"
#include "kvmtune/workload.h"
#include "../../lib/workload-priv.h"
#include "tap.h"
#include "test-data.h"

#define SKYLAKE "2s-xeon-platinum8168-skylake-smt.xml"   /* node 0: 0-23,48-71; siblings i/i+48 */
#define ROME "2s-epyc-7402-rome-nps4-smt-3coreccx-gpu-ib.xml"

static inline void workload_freep(struct workload **w) { workload_free(*w); }

static char *workload_file(const char *name) {
        _cleanup_free_ char *rel = xasprintf("workloads/%s", name);

        return test_fixture(rel);
}

static struct topo *load_topo(const char *name) {
        _cleanup_free_ char *path = test_topology(name);
        struct topo *t = NULL;
        int r = topo_load(TOPO_SOURCE_XML, path, NULL, &t);

        if (r < 0)
                printf("# cannot load %s: %s\n", path, strerror(-r));
        return t;
}

/* ---- JSON access ------------------------------------------------------------------ */

static struct json_object *get(struct json_object *o, const char *key) {
        struct json_object *v = NULL;

        if (o)
                json_object_object_get_ex(o, key, &v);
        return v;
}

static struct json_object *idx(struct json_object *arr, size_t i) {
        return arr && json_object_is_type(arr, json_type_array) && i < json_object_array_length(arr) ?
               json_object_array_get_idx(arr, i) : NULL;
}

/* An int array as "1,2,3" for exact comparisons. */
static const char *ints(struct json_object *arr) {
        static char buf[4][1024];
        static int slot;
        char *s = buf[slot++ % 4];
        size_t off = 0;

        s[0] = '\0';
        if (!arr || !json_object_is_type(arr, json_type_array))
                return "(not an array)";
        for (size_t i = 0; i < json_object_array_length(arr) && off < 1000; i++)
                off += snprintf(s + off, 1024 - off, "%s%d", i ? "," : "", json_object_get_int(idx(arr, i)));
        return s;
}

/* vCPU cpus in vCPU order, one cpu each: "1,2,3,4". */
static const char *vcpu_map(struct json_object *result) {
        static char buf[1024];
        struct json_object *vcpus = get(result, "vcpus");
        size_t off = 0;

        buf[0] = '\0';
        for (size_t i = 0; vcpus && i < json_object_array_length(vcpus) && off < 1000; i++)
                off += snprintf(buf + off, sizeof(buf) - off, "%s%s", i ? ";" : "",
                                ints(get(idx(vcpus, i), "cpus")));
        return buf;
}

static const char *str(struct json_object *o, const char *key) {
        struct json_object *v = get(o, key);

        return v && json_object_is_type(v, json_type_string) ? json_object_get_string(v) : "(missing)";
}

/* ---- parse errors ------------------------------------------------------------------ */

static void check_error(const char *json, const char *expected) {
        _cleanup_(workload_freep) struct workload *w = NULL;
        char err[WORKLOAD_ERR_MAX] = "";
        int r = workload_parse(json, strlen(json), &w, err, sizeof(err));

        ok(r == -EINVAL && !w && strstr(err, expected), "error \"%s\" for %.70s", err, json);
        if (!strstr(err, expected))
                printf("#   expected \"%s\"\n", expected);
}

static void test_document_errors(void) {
        check_error("", "empty workload");
        check_error("{\"events\": [", "invalid JSON at offset 12: unexpected end of input");
        check_error("{\"events\": []} {}", "trailing data");
        check_error("{\"events\": [}", "invalid JSON");
        check_error("[]", "must be a JSON object");
        check_error("{}", "missing \"events\"");
        check_error("{\"events\": {}}", "\"events\" must be an array");
        check_error("{\"events\": [], \"hosts\": 2}", "unknown key \"hosts\"");
        check_error("{\"reserved_cpus\": [0, 1], \"events\": []}", "\"reserved_cpus\" must be a string");
}

static void test_event_errors(void) {
        check_error("{\"events\": [7]}", "event 1: not an object");
        check_error("{\"events\": [{\"name\": \"a\"}]}", "event 1: missing \"op\"");
        check_error("{\"events\": [{\"op\": 1, \"name\": \"a\"}]}", "event 1: \"op\" must be a string");
        check_error("{\"events\": [{\"op\": \"start\", \"name\": \"a\", \"vcpus\": 1},"
                    "{\"op\": \"stop\", \"name\": \"a\"}, {\"op\": \"pause\", \"name\": \"a\"}]}",
                    "event 3: unknown op \"pause\"");
        check_error("{\"events\": [{\"op\": \"start\", \"vcpus\": 1}]}", "event 1: missing \"name\"");
        check_error("{\"events\": [{\"op\": \"start\", \"name\": \"\", \"vcpus\": 1}]}", "event 1: empty \"name\"");
        check_error("{\"events\": [{\"op\": \"start\", \"name\": 5, \"vcpus\": 1}]}",
                    "event 1: \"name\" must be a string");
        check_error("{\"events\": [{\"op\": \"start\", \"name\": \"a\"}]}", "event 1: start of \"a\" has no \"vcpus\"");
        check_error("{\"events\": [{\"op\": \"start\", \"name\": \"a\", \"vcpus\": \"8\"}]}",
                    "event 1: \"vcpus\" must be an integer");
        check_error("{\"events\": [{\"op\": \"start\", \"name\": \"a\", \"vcpus\": 2.5}]}",
                    "event 1: \"vcpus\" must be an integer");
        check_error("{\"events\": [{\"op\": \"start\", \"name\": \"a\", \"vcpus\": 0}]}",
                    "event 1: \"vcpus\" must be at least 1");
        check_error("{\"events\": [{\"op\": \"start\", \"name\": \"a\", \"vcpus\": 5000}]}",
                    "event 1: \"vcpus\" is 5000, must be 0..4096");
        check_error("{\"events\": [{\"op\": \"start\", \"name\": \"a\", \"vcpus\": 1, \"memory_mib\": -1}]}",
                    "event 1: \"memory_mib\" is -1");
        check_error("{\"events\": [{\"op\": \"start\", \"name\": \"a\", \"vcpus\": 1, \"iothread_count\": true}]}",
                    "event 1: \"iothread_count\" must be an integer");
}

static void test_policy_errors(void) {
        check_error("{\"events\": [{\"op\": \"start\", \"name\": \"a\", \"vcpus\": 1, \"cpu\": \"turbo\"}]}",
                    "event 1: invalid cpu \"turbo\"");
        check_error("{\"events\": [{\"op\": \"start\", \"name\": \"a\", \"vcpus\": 1, \"threads\": \"maybe\"}]}",
                    "event 1: invalid threads \"maybe\"");
        check_error("{\"events\": [{\"op\": \"start\", \"name\": \"a\", \"vcpus\": 1, \"page\": \"3M\"}]}",
                    "event 1: invalid page \"3M\"");
        check_error("{\"events\": [{\"op\": \"start\", \"name\": \"a\", \"vcpus\": 1, \"numa\": 1}]}",
                    "event 1: \"numa\" must be a string");
        check_error("{\"events\": [{\"op\": \"start\", \"name\": \"a\", \"vcpus\": 1, \"colour\": \"red\"}]}",
                    "event 1: unknown key \"colour\" in a start event");
        check_error("{\"events\": [{\"op\": \"start\", \"name\": \"a\", \"vcpus\": 1},"
                    "{\"op\": \"stop\", \"name\": \"a\", \"vcpus\": 1}]}",
                    "event 2: unknown key \"vcpus\" in a stop event");
}

static void test_sequence_errors(void) {
        check_error("{\"events\": [{\"op\": \"start\", \"name\": \"a\", \"vcpus\": 1},"
                    "{\"op\": \"start\", \"name\": \"a\", \"vcpus\": 2}]}",
                    "event 2: \"a\" is already running");
        check_error("{\"events\": [{\"op\": \"stop\", \"name\": \"ghost\"}]}",
                    "event 1: stop of \"ghost\", which is not running");
        check_error("{\"events\": [{\"op\": \"start\", \"name\": \"a\", \"vcpus\": 1},"
                    "{\"op\": \"stop\", \"name\": \"a\"}, {\"op\": \"stop\", \"name\": \"a\"}]}",
                    "event 3: stop of \"a\", which is not running");
}

static void test_parse_ok(void) {
        _cleanup_(workload_freep) struct workload *w = NULL;
        const char *json = "{\"reserved_cpus\": \"0,1\", \"events\": ["
                "{\"op\": \"start\", \"name\": \"vm1\", \"vcpus\": 8, \"memory_mib\": 16384, \"page\": \"1G\","
                " \"cpu\": \"dedicated\", \"threads\": \"isolate\", \"emulator\": \"isolate\","
                " \"iothreads\": \"dedicated\", \"iothread_count\": 1, \"numa\": \"strict\"},"
                "{\"op\": \"stop\", \"name\": \"vm1\"},"
                "{\"op\": \"start\", \"name\": \"vm1\", \"vcpus\": 2, \"hugepages\": \"2M\"}]}";
        char err[WORKLOAD_ERR_MAX] = "";
        const struct request *r;

        is_int(workload_parse(json, strlen(json), &w, err, sizeof(err)), 0, "SPEC example parses (%s)", err);
        if (!w)
                return;
        is_str(w->reserved_cpus, "0,1", "reserved_cpus kept as written");
        is_int(w->nevent, 3, "three events");
        r = &w->events[0].req;
        ok(w->events[0].op == WORKLOAD_START && streq(w->events[0].name, "vm1"), "event 1: start vm1");
        ok(r->vcpus == 8 && r->memory_kib == 16384ULL * 1024 && r->iothreads == 1, "event 1: sizes");
        ok(r->policy.cpu == POLICY_CPU_DEDICATED && r->policy.threads == POLICY_THREADS_ISOLATE &&
           r->policy.emulator == POLICY_EMULATOR_ISOLATE && r->policy.iothreads == POLICY_IOTHREADS_DEDICATED &&
           r->policy.numa == POLICY_NUMA_STRICT && r->policy.page == POLICY_PAGE_1G, "event 1: policy");
        ok(w->events[1].op == WORKLOAD_STOP, "event 2: stop");
        r = &w->events[2].req;
        ok(r->policy.cpu == POLICY_CPU_SHARED && r->policy.threads == POLICY_THREADS_PREFER &&
           r->policy.emulator == POLICY_EMULATOR_SHARE && r->policy.numa == POLICY_NUMA_PREFERRED,
           "event 3: absent keys take the built-in defaults");
        ok(r->policy.page == POLICY_PAGE_2M && r->memory_kib == 0 && r->iothreads == 0,
           "event 3: hugepages alias, no memory constraint");
}

/* ---- replay on real topologies ----------------------------------------------------- */

static struct json_object *replay_fixture(const struct topo *t, const char *name) {
        _cleanup_(workload_freep) struct workload *w = NULL;
        _cleanup_free_ char *path = workload_file(name);
        struct json_object *report = NULL;
        char err[WORKLOAD_ERR_MAX] = "";

        if (workload_load(path, &w, err, sizeof(err)) < 0 || workload_replay(t, w, &report, err, sizeof(err)) < 0)
                printf("# %s: %s\n", path, err);
        return report;
}

static void test_skylake_dedicated(struct json_object *results) {
        struct json_object *db1 = idx(results, 0), *db2 = idx(results, 2), *again = idx(results, 6);

        /* Core 0 (PUs 0,48) is reserved; isolate takes whole cores 1-4 in order,
         * the isolated emulator the next core, the dedicated iothread the one after. */
        is_str(vcpu_map(db1), "1;2;3;4", "skylake db1: isolate on cores 1-4");
        is_str(ints(get(get(db1, "emulator"), "cpus")), "5", "skylake db1: emulator isolated on 5");
        is_str(ints(get(idx(get(db1, "iothreads"), 0), "cpus")), "6", "skylake db1: iothread on 6");
        is_int(json_object_get_int(get(idx(get(db1, "iothreads"), 0), "id")), 1, "skylake db1: iothread id 1");
        is_str(ints(get(get(db1, "numa"), "nodes")), "0", "skylake db1: node 0");
        is_str(str(get(db1, "numa"), "mode"), "strict", "skylake db1: numa strict");
        is_int(json_object_get_int64(get(get(db1, "memory"), "kib")), 8388608, "skylake db1: memory kib");
        is_int(json_object_get_int64(get(get(db1, "memory"), "page_kib")), 4, "skylake db1: base pages (4 KiB)");
        /* threads=prefer packs siblings: core 7 is the first free one. */
        is_str(vcpu_map(db2), "7;55;8;56;9;57;10;58", "skylake db2: sibling pairs from core 7");
        is_str(ints(get(get(db2, "emulator"), "cpus")), "7,8,9,10,55,56,57,58", "skylake db2: emulator=vcpus");
        /* After db1 stopped, threads=require takes the freed core 1 as a pair. */
        is_str(vcpu_map(again), "1;49", "skylake db1 again: sibling pair on core 1");
}

static void test_skylake_other(struct json_object *results) {
        struct json_object *web = idx(results, 1), *stop = idx(results, 3);
        struct json_object *huge = idx(results, 4), *legacy = idx(results, 5);
        struct json_object *cpus = get(idx(get(web, "vcpus"), 1), "cpus");

        is_str(str(get(web, "policy"), "cpu"), "shared", "skylake web1: default policy");
        is_str(str(get(web, "policy"), "source"), "defaults", "skylake web1: source defaults");
        ok(cpus && json_object_array_length(cpus) == 48 && json_object_get_int(idx(cpus, 0)) == 24 &&
           json_object_get_int(idx(cpus, 47)) == 95, "skylake web1: floats over node 1's pool: %s", ints(cpus));
        ok(streq(str(stop, "op"), "stop") && streq(str(stop, "name"), "db1") &&
           json_object_get_boolean(get(stop, "released")), "skylake event 4: stop db1 released");
        ok(strstr(str(huge, "refused"), "90") != NULL, "skylake huge: refused: %s", str(huge, "refused"));
        ok(!get(huge, "vcpus"), "skylake huge: no placement fields");
        ok(get(legacy, "ignored") && !get(legacy, "refused"), "skylake legacy: cpu=none ignored");
}

static void test_skylake_summary(struct json_object *summary) {
        struct json_object *free_pus = get(summary, "free_pus_per_node");

        is_int(json_object_get_int(get(summary, "placed")), 4, "skylake summary: placed");
        is_int(json_object_get_int(get(summary, "refused")), 1, "skylake summary: refused");
        is_int(json_object_get_int(get(summary, "ignored")), 1, "skylake summary: ignored");
        is_int(json_object_get_int(get(summary, "one_node")), 4, "skylake summary: one_node");
        ok(json_object_get_double(get(summary, "mean_l3_groups")) == 1.0, "skylake summary: mean_l3_groups 1");
        /* node 0: 48 - reserved core 0 - db2's 8 - db1's pair = 36; shared web1 holds none */
        is_int(json_object_get_int(get(free_pus, "0")), 36, "skylake summary: node 0 free PUs");
        is_int(json_object_get_int(get(free_pus, "1")), 48, "skylake summary: node 1 free PUs");
}

static void test_skylake(void) {
        _cleanup_(topo_freep) struct topo *t = load_topo(SKYLAKE);
        _cleanup_json_ struct json_object *report = t ? replay_fixture(t, "skylake-mix.json") : NULL;
        struct json_object *results = get(report, "results");

        if (!ok(results && json_object_array_length(results) == 7, "skylake: one result per event"))
                return;
        test_skylake_dedicated(results);
        test_skylake_other(results);
        test_skylake_summary(get(report, "summary"));
}

static void test_rome(void) {
        _cleanup_(topo_freep) struct topo *t = load_topo(ROME);
        _cleanup_json_ struct json_object *report = t ? replay_fixture(t, "rome-split.json") : NULL;
        struct json_object *results = get(report, "results");
        struct json_object *wide = idx(results, 1), *hp = idx(results, 2);

        if (!ok(results && json_object_array_length(results) == 6, "rome: one result per event"))
                return;
        /* 6 cores per NUMA node: 16 isolated vCPUs cannot fit one node. */
        ok(json_object_get_boolean(get(wide, "split")) && json_object_array_length(get(get(wide, "numa"), "nodes")) > 1,
           "rome wide: split over nodes %s", ints(get(get(wide, "numa"), "nodes")));
        ok(strlen(str(wide, "note")) > 0 && !streq(str(wide, "note"), "(missing)"), "rome wide: note says why");
        ok(strstr(str(hp, "refused"), "1G") != NULL, "rome hp: no 1G pages without a sysfs root: %s",
           str(hp, "refused"));
        is_int(json_object_get_int(get(get(report, "summary"), "refused")), 1, "rome summary: one refusal");
}

/* ---- reserved_cpus ------------------------------------------------------------------- */

static struct json_object *replay_string(const struct topo *t, const char *json, char *err, size_t errlen) {
        _cleanup_(workload_freep) struct workload *w = NULL;
        struct json_object *report = NULL;

        if (workload_parse(json, strlen(json), &w, err, errlen) < 0)
                return NULL;
        workload_replay(t, w, &report, err, errlen);
        return report;
}

static void test_reserved(void) {
        _cleanup_(topo_freep) struct topo *t = load_topo(SKYLAKE);
        _cleanup_json_ struct json_object *dflt = NULL, *none = NULL, *two = NULL, *bad = NULL, *off = NULL;
        char err[WORKLOAD_ERR_MAX] = "";
#define ONE "\"events\": [{\"op\": \"start\", \"name\": \"a\", \"vcpus\": 1, \"cpu\": \"dedicated\", \"threads\": \"isolate\"}]}"

        if (!t)
                return (void) ok(0, "reserved: topology loads");
        dflt = replay_string(t, "{" ONE, err, sizeof(err));
        none = replay_string(t, "{\"reserved_cpus\": \"\", " ONE, err, sizeof(err));
        two = replay_string(t, "{\"reserved_cpus\": \"0-1\", " ONE, err, sizeof(err));
        is_str(vcpu_map(idx(get(dflt, "results"), 0)), "1", "reserved absent: first core held back");
        is_str(vcpu_map(idx(get(none, "results"), 0)), "0", "reserved \"\": PU 0 usable");
        is_str(vcpu_map(idx(get(two, "results"), 0)), "2", "reserved 0-1: cores 0 and 1 held back");
        is_int(json_object_get_int(get(get(get(two, "summary"), "free_pus_per_node"), "0")), 42,
               "reserved 0-1: 48 - 4 reserved - the isolated core (2 PUs)");
        bad = replay_string(t, "{\"reserved_cpus\": \"0-x\", " ONE, err, sizeof(err));
        ok(!bad && strstr(err, "reserved_cpus: invalid CPU list \"0-x\""), "reserved junk: %s", err);
        off = replay_string(t, "{\"reserved_cpus\": \"200\", " ONE, err, sizeof(err));
        ok(!off && strstr(err, "reserved_cpus: CPU 200 is not on this host"), "reserved off host: %s", err);
#undef ONE
}

/* ---- the command: output and exit codes ------------------------------------------------ */

struct run {
        int rc;
        char *out, *err;
};

static struct run run_plan(const char *topo_name, const char *workload_name, bool json) {
        _cleanup_free_ char *tp = topo_name ? test_topology(topo_name) : NULL;
        _cleanup_free_ char *wp = workload_name ? workload_file(workload_name) : NULL;
        struct run r = { 0 };
        size_t n1, n2;
        FILE *out = open_memstream(&r.out, &n1), *err = open_memstream(&r.err, &n2);

        r.rc = workload_plan_main(tp, wp, NULL, json, out, err);
        fclose(out);
        fclose(err);
        return r;
}

static void run_done(struct run *r) {
        free(r->out);
        free(r->err);
}

static void check_result_shape(struct json_object *res) {
        static const char *const keys[] = { "name", "policy", "vcpus", "emulator", "iothreads", "numa", "memory" };
        static const char *const pkeys[] = { "cpu", "threads", "emulator", "iothreads", "numa", "source" };
        bool all = true;

        for (size_t i = 0; i < ELEMENTSOF(keys); i++)
                all = all && get(res, keys[i]);
        for (size_t i = 0; i < ELEMENTSOF(pkeys); i++)
                all = all && json_object_is_type(get(get(res, "policy"), pkeys[i]), json_type_string);
        ok(all, "json: %s has the show --json fields", str(res, "name"));
        ok(json_object_is_type(get(get(res, "emulator"), "cpus"), json_type_array) &&
           json_object_is_type(get(get(res, "numa"), "nodes"), json_type_array) &&
           json_object_is_type(get(get(res, "memory"), "kib"), json_type_int) &&
           json_object_is_type(get(get(res, "memory"), "page_kib"), json_type_int) &&
           json_object_is_type(get(idx(get(res, "vcpus"), 0), "vcpu"), json_type_int),
           "json: %s nested types", str(res, "name"));
}

static void test_json_output(void) {
        struct run r = run_plan(SKYLAKE, "skylake-mix.json", true);
        _cleanup_json_ struct json_object *doc = json_tokener_parse(r.out);
        struct json_object *results = get(doc, "results");

        is_int(r.rc, 0, "plan --json: exit 0 despite a refusal");
        ok(r.err && !*r.err, "plan --json: nothing on stderr");
        if (ok(json_object_is_type(results, json_type_array) && json_object_array_length(results) == 7,
               "plan --json: parses back, 7 results")) {
                check_result_shape(idx(results, 0));
                check_result_shape(idx(results, 1));
                ok(json_object_is_type(get(idx(results, 4), "refused"), json_type_string), "json: refusal");
                ok(streq(str(idx(results, 3), "op"), "stop") && streq(str(idx(results, 3), "name"), "db1"),
                   "json: stop result");
        }
        ok(json_object_is_type(get(get(doc, "summary"), "mean_l3_groups"), json_type_double) &&
           json_object_is_type(get(get(doc, "summary"), "free_pus_per_node"), json_type_object), "json: summary types");
        run_done(&r);
}

static void test_human_output(void) {
        struct run r = run_plan(SKYLAKE, "skylake-mix.json", false);

        is_int(r.rc, 0, "plan: exit 0");
        ok(r.out && strncmp(r.out, "EVENT  OP     NAME    RESULT  NODES  VCPU->PU", 45) == 0, "plan: aligned header");
        ok(r.out && strstr(r.out, "\n1      start  db1     placed  0      1-4 "), "plan: db1 row");
        ok(r.out && strstr(r.out, "7,55,8,56,9,57,10,58"), "plan: db2 map in vCPU order");
        ok(r.out && strstr(r.out, "\n5      start  huge    REFUSED: "), "plan: refusal row");
        ok(r.out && strstr(r.out, "4 placed, 1 refused, 1 ignored; 4 on one NUMA node"), "plan: summary line");
        ok(r.out && strstr(r.out, "free PUs per node: node 0: 36, node 1: 48"), "plan: free PUs line");
        ok(r.out && !strstr(r.out, " \n"), "plan: no trailing blanks");
        run_done(&r);
}

/* Hugepage pools from a sysfs root (another module's fixture, read only): node 0
 * has 2 free 1G pages and 500 free 2M pages, node 1 one free 1G page. */
static void test_hugepages(void) {
        _cleanup_free_ char *tp = test_topology(SKYLAKE), *wp = workload_file("skylake-hugepages.json");
        _cleanup_free_ char *root = test_fixture("sysfs-2node");
        _cleanup_json_ struct json_object *doc = NULL;
        struct json_object *res;
        char *out = NULL, *err = NULL;
        size_t n1, n2;
        FILE *fo = open_memstream(&out, &n1), *fe = open_memstream(&err, &n2);
        int rc = workload_plan_main(tp, wp, root, true, fo, fe);

        fclose(fo);
        fclose(fe);
        is_int(rc, 0, "hugepages: exit 0");
        doc = json_tokener_parse(out);
        res = get(doc, "results");
        is_int(json_object_get_int64(get(get(idx(res, 0), "memory"), "page_kib")), 1048576, "hugepages: hp1 on 1G pages");
        is_str(ints(get(get(idx(res, 0), "numa"), "nodes")), "0", "hugepages: hp1 where the 1G pages are");
        ok(strstr(str(idx(res, 1), "refused"), "1G pages") != NULL, "hugepages: hp2 refused: %s",
           str(idx(res, 1), "refused"));
        is_int(json_object_get_int64(get(get(idx(res, 2), "memory"), "page_kib")), 2048, "hugepages: small on 2M");
        is_int(json_object_get_int64(get(get(idx(res, 2), "memory"), "kib")), 524288, "hugepages: small 512 MiB");
        ok(get(get(idx(res, 4), "memory"), "kib") != NULL, "hugepages: hp3 fits once hp1 released its pages");
        free(out);
        free(err);
}

static void test_exit_codes(void) {
        struct run r;

        r = run_plan(NULL, "skylake-mix.json", false);
        ok(r.rc == 2 && strstr(r.err, "--topology"), "plan without --topology: exit 2");
        run_done(&r);
        r = run_plan(SKYLAKE, NULL, true);
        ok(r.rc == 2 && strstr(r.err, "--workload"), "plan without --workload: exit 2");
        run_done(&r);
        r = run_plan(SKYLAKE, "bad-op.json", false);
        ok(r.rc == 1 && strstr(r.err, "bad-op.json: event 3: unknown op \"pause\"\n"), "bad op: exit 1 with the event number");
        ok(!*r.out, "bad op: nothing on stdout");
        run_done(&r);
        r = run_plan(SKYLAKE, "not-json.json", true);
        ok(r.rc == 1 && strstr(r.err, "invalid JSON"), "truncated JSON: exit 1");
        run_done(&r);
        r = run_plan(SKYLAKE, "no-such-file.json", true);
        ok(r.rc == 1 && strstr(r.err, "cannot open: No such file or directory"), "missing workload: exit 1");
        run_done(&r);
        r = run_plan(SKYLAKE, ".", true);
        ok(r.rc == 1 && strstr(r.err, "cannot read: Is a directory"), "workload is a directory: exit 1");
        run_done(&r);
        r = run_plan("no-such-topology.xml", "skylake-mix.json", true);
        ok(r.rc == 1 && strstr(r.err, "cannot load topology"), "missing topology: exit 1");
        run_done(&r);
}

/* ---- render helpers ------------------------------------------------------------------ */

static void test_render_lists(void) {
        hwloc_bitmap_t b = hwloc_bitmap_alloc();
        _cleanup_json_ struct json_object *arr = NULL;
        _cleanup_free_ char *empty = NULL, *list = NULL;

        empty = render_bitmap_list(b);
        is_str(empty, "", "render: empty bitmap");
        hwloc_bitmap_list_sscanf(b, "0-3,8");
        list = render_bitmap_list(b);
        is_str(list, "0-3,8", "render: compact list");
        arr = render_bitmap_json(b);
        is_str(json_object_to_json_string_ext(arr, JSON_C_TO_STRING_PLAIN), "[0,1,2,3,8]", "render: json array");
        hwloc_bitmap_free(b);
}

static void test_render_table(void) {
        struct table *tb = table_new();
        char *buf = NULL;
        size_t n;
        FILE *f = open_memstream(&buf, &n);

        table_add_row(tb, "NAME", "STATE", "CPUS", NULL);
        table_add_row(tb, "db1", "tuned", "4-7", NULL);
        table_new_row(tb);
        table_add_cell(tb, "web-frontend");
        table_add_cellf(tb, "%s", "shared");
        table_add_cell(tb, "");
        table_add_row(tb, "x", "a message longer than its column", NULL);
        table_print(tb, f);
        fclose(f);
        is_str(buf, "NAME          STATE   CPUS\n"
                    "db1           tuned   4-7\n"
                    "web-frontend  shared\n"
                    "x             a message longer than its column\n", "table: aligned, no trailing blanks");
        free(buf);
        table_free(tb);
        ok(table_free(NULL) == NULL, "table: free(NULL)");
}

static void test_render_plan(void) {
        _cleanup_(topo_freep) struct topo *t = load_topo(SKYLAKE);
        struct request req = { .vcpus = 4, .iothreads = 1 };
        char reason[PLACEMENT_REASON_MAX];
        struct alloc *a;
        struct plan p;

        if (!t)
                return (void) ok(0, "render plan: topology loads");
        a = alloc_new(t);
        policy_init_default(&req.policy);
        policy_set(&req.policy, "cpu", "dedicated");
        policy_set(&req.policy, "threads", "isolate");
        if (ok(placement_place(t, a, &req, &p, reason) == 0, "render plan: placed (%s)", reason)) {
                _cleanup_json_ struct json_object *o = render_domain_json(t, a, &p, &req.policy, NULL);

                ok(!get(o, "name") && get(o, "vcpus"), "render plan: no name key when name is NULL");
                plan_done(&p);
        }
        alloc_free(a);
}

int main(void) {
        test_document_errors();
        test_event_errors();
        test_policy_errors();
        test_sequence_errors();
        test_parse_ok();
        test_skylake();
        test_rome();
        test_reserved();
        test_json_output();
        test_human_output();
        test_hugepages();
        test_exit_codes();
        test_render_lists();
        test_render_table();
        test_render_plan();
        return tap_done();
}
