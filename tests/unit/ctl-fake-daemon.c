/* A stand-in for kvmtuned in the kvmtunectl tests: the real control server
 * (daemon/ctl.c) with canned method results, no libvirt.
 *
 *   ctl-fake-daemon SOCKET [PRIVILEGED_UID]
 *
 * Serves until SIGTERM. Show knows only "db1" and "web" (else not-found); List
 * adds vCPU counters that grow by call (db1 runs 0.9 s and waits 0 per vCPU
 * and call, web runs 0.3 s and waits 0.5 s), for top; Verify reports one
 * drifted vCPU of db1; Plan
 * echoes its params under "params" and refuses more than 64 vCPUs; Rebalance,
 * Reload and IsolationSet are privileged (root, or PRIVILEGED_UID). */
#include "config.h"

#include <errno.h>
#include <signal.h>

#include "../../daemon/ctl-priv.h"
#include "kvmtune/util.h"

static const char status_json[] =
        "{\"version\":\"0.1.0\",\"uptime_sec\":3725,\"host\":\"2 nodes, 2 L3 groups, 12 PUs\","
        "\"libvirt\":{\"uri\":\"qemu:///system\",\"connected\":true},"
        "\"pools\":{\"reserved\":[0,1],\"shared\":[2,3,8,9,10,11],\"dedicated\":[4,5,6,7]},"
        "\"domains\":{\"tuned\":1,\"shared\":1,\"ignored\":0,\"unplaced\":0,\"failed\":0},"
        "\"isolation\":{\"configured\":\"tasks,guests,irqs,workqueues\",\"switch\":\"config\",\"scope\":\"/\","
        "\"in_force\":\"tasks,guests,irqs,workqueues\",\"inactive\":null,\"dedicated\":[4,5,6,7],"
        "\"housekeeping\":[0,1,2,3,8,9,10,11],\"mode\":\"per-task\",\"tasks\":120,\"units\":0,"
        "\"guest_threads\":4,\"kept\":1,\"refused\":30,\"irqs\":12,\"irqs_managed\":3,"
        "\"default_irq\":true,\"workqueues\":true,\"irqbalance\":false,"
        "\"skipped\":[\"task 812: on dedicated CPUs 5 only, left alone\","
        "\"guest batch: its own pins (4) name dedicated CPUs: conflict, left alone\"]}}";

static const char db1_json[] =
        "{\"name\":\"db1\",\"uuid\":\"6f1c7c8e-3d2a-4b52-9a77-0f5f0c6f2a11\",\"state\":\"tuned\","
        "\"policy\":{\"cpu\":\"dedicated\",\"threads\":\"isolate\",\"emulator\":\"isolate\","
        "\"iothreads\":\"dedicated\",\"numa\":\"strict\",\"source\":\"metadata\"},"
        "\"vcpus\":[{\"vcpu\":0,\"cpus\":[4]},{\"vcpu\":1,\"cpus\":[5]},{\"vcpu\":2,\"cpus\":[6]}],"
        "\"emulator\":{\"cpus\":[7]},\"iothreads\":[{\"id\":1,\"cpus\":[7]}],"
        "\"numa\":{\"nodes\":[0],\"mode\":\"strict\"},"
        "\"memory\":{\"kib\":8388608,\"page_kib\":1048576}}";

static const char web_json[] =
        "{\"name\":\"web\",\"uuid\":\"0b6d1f4e-8a7c-4e7e-a1d2-5c3b2a1f0e99\",\"state\":\"shared\","
        "\"policy\":{\"cpu\":\"shared\",\"threads\":\"prefer\",\"emulator\":\"share\","
        "\"iothreads\":\"shared\",\"numa\":\"preferred\",\"source\":\"defaults\"},"
        "\"vcpus\":[{\"vcpu\":0,\"cpus\":[2,3,8,9,10,11]},{\"vcpu\":1,\"cpus\":[2,3,8,9,10,11]}],"
        "\"emulator\":{\"cpus\":[2,3,8,9,10,11]},\"iothreads\":[],"
        "\"numa\":{\"nodes\":[],\"mode\":\"none\"},\"memory\":{\"kib\":2097152,\"page_kib\":0}}";

static const char topology_json[] =
        "{\"nodes\":[{\"os\":0,\"memory_kib\":16777216,\"groups\":[{\"l3\":0,\"cores\":["
        "{\"pus\":[{\"os\":0,\"owner\":null,\"reserved\":true},{\"os\":1,\"owner\":null,\"reserved\":true}]},"
        "{\"pus\":[{\"os\":4,\"owner\":\"db1\",\"reserved\":false},{\"os\":5,\"owner\":\"db1\",\"reserved\":false}]}"
        "]}]},{\"os\":1,\"memory_kib\":16777216,\"groups\":[{\"l3\":1,\"cores\":["
        "{\"pus\":[{\"os\":2,\"owner\":null,\"reserved\":false},{\"os\":3,\"owner\":null,\"reserved\":false}]}"
        "]}]}]}";

static const char hugepages_json[] =
        "{\"nodes\":[{\"node\":0,\"pages\":[{\"page_kib\":2048,\"total\":512,\"free\":100,\"reserved\":400},"
        "{\"page_kib\":1048576,\"total\":8,\"free\":0,\"reserved\":8,"
        "\"domains\":[{\"name\":\"db1\",\"pages\":6},{\"name\":\"db2\",\"pages\":2}]}]},"
        "{\"node\":1,\"pages\":[{\"page_kib\":2048,\"total\":0,\"free\":0,\"reserved\":0}]}]}";

static const char metrics_json[] =
        "{\"text\":\"# HELP kvmtuned_domains Domains by state.\\n"
        "# TYPE kvmtuned_domains gauge\\nkvmtuned_domains{state=\\\"tuned\\\"} 1\\n\"}";

static int canned(const char *json, struct json_object **ret) {
        *ret = json_tokener_parse(json);
        return *ret ? 0 : -EIO;
}

static int m_status(_unused_ void *u, _unused_ struct json_object *p, struct json_object **ret, _unused_ char **err) {
        return canned(status_json, ret);
}

/* run_ns and delay_ns on every vCPU of d. */
static void add_counters(struct json_object *d, int64_t run_ns, int64_t delay_ns) {
        struct json_object *vcpus;

        json_object_object_get_ex(d, "vcpus", &vcpus);
        for (size_t i = 0; i < json_object_array_length(vcpus); i++) {
                json_object_object_add(json_object_array_get_idx(vcpus, i), "run_ns", json_object_new_int64(run_ns));
                json_object_object_add(json_object_array_get_idx(vcpus, i), "delay_ns", json_object_new_int64(delay_ns));
        }
}

static int m_list(_unused_ void *u, _unused_ struct json_object *p, struct json_object **ret, _unused_ char **err) {
        static int64_t calls;
        struct json_object *arr = json_object_new_array();
        struct json_object *d;

        calls++;
        canned(db1_json, &d);
        add_counters(d, calls * 900000000, 0);
        json_object_array_add(arr, d);
        canned(web_json, &d);
        add_counters(d, calls * 300000000, calls * 500000000);
        json_object_array_add(arr, d);
        *ret = json_object_new_object();
        json_object_object_add(*ret, "domains", arr);
        return 0;
}

static int m_show(_unused_ void *u, struct json_object *p, struct json_object **ret, char **err) {
        struct json_object *name;

        if (!json_object_object_get_ex(p, "name", &name) || !json_object_is_type(name, json_type_string)) {
                *err = xstrdup("Show needs a \"name\"");
                return -EINVAL;
        }
        if (streq(json_object_get_string(name), "db1"))
                return canned(db1_json, ret);
        if (streq(json_object_get_string(name), "web"))
                return canned(web_json, ret);
        *err = xasprintf("no domain '%s'", json_object_get_string(name));
        return -ENOENT;
}

static int m_topology(_unused_ void *u, _unused_ struct json_object *p, struct json_object **ret, _unused_ char **err) {
        return canned(topology_json, ret);
}

static int m_hugepages(_unused_ void *u, _unused_ struct json_object *p, struct json_object **ret, _unused_ char **err) {
        return canned(hugepages_json, ret);
}

static int m_metrics(_unused_ void *u, _unused_ struct json_object *p, struct json_object **ret, _unused_ char **err) {
        return canned(metrics_json, ret);
}

static int m_plan(_unused_ void *u, struct json_object *p, struct json_object **ret, _unused_ char **err) {
        struct json_object *vcpus;

        json_object_object_get_ex(p, "vcpus", &vcpus);
        if (json_object_get_int(vcpus) > 64) {
                *ret = json_object_new_object();
                json_object_object_add(*ret, "refused", json_object_new_string("not enough free PUs"));
                return 0;
        }
        canned(db1_json, ret);
        json_object_object_del(*ret, "name");
        json_object_object_del(*ret, "uuid");
        json_object_object_del(*ret, "state");
        json_object_object_add(*ret, "params", json_object_get(p));
        return 0;
}

static int m_verify(_unused_ void *u, _unused_ struct json_object *p, struct json_object **ret, _unused_ char **err) {
        return canned("{\"domains\":[{\"name\":\"db1\",\"state\":\"tuned\",\"checked\":5,\"drift\":"
                      "[{\"what\":\"vcpu 0 thread 4242\",\"want\":\"4\",\"got\":\"0-7\"}]},"
                      "{\"name\":\"web\",\"state\":\"shared\",\"checked\":3,\"drift\":[]}],"
                      "\"checked\":8,\"drifted\":1}", ret);
}

static int m_rebalance(_unused_ void *u, _unused_ struct json_object *p, struct json_object **ret, _unused_ char **err) {
        return canned("{\"domains\":[{\"name\":\"db1\",\"state\":\"tuned\"}]}", ret);
}

/* The isolation object of the status above. */
static int m_isolation(_unused_ void *u, _unused_ struct json_object *p, struct json_object **ret, _unused_ char **err) {
        struct json_object *status, *iso;
        int r = canned(status_json, &status);

        if (r < 0)
                return r;
        json_object_object_get_ex(status, "isolation", &iso);
        *ret = json_object_get(iso);
        json_object_put(status);
        return 0;
}

/* Switched off: nothing in force. */
static int m_isolation_set(_unused_ void *u, _unused_ struct json_object *p, struct json_object **ret, _unused_ char **err) {
        return canned("{\"configured\":\"tasks,guests,irqs,workqueues\",\"switch\":\"off\",\"scope\":\"/\","
                      "\"in_force\":\"none\",\"inactive\":null,\"dedicated\":[],\"housekeeping\":[0,1,2,3,4,5,6,7,8,9,10,11],"
                      "\"mode\":\"per-task\",\"tasks\":0,\"units\":0,\"guest_threads\":0,\"kept\":0,\"refused\":0,"
                      "\"irqs\":0,\"irqs_managed\":0,\"default_irq\":false,\"workqueues\":false,"
                      "\"irqbalance\":false,\"skipped\":[]}", ret);
}

static int m_reload(_unused_ void *u, _unused_ struct json_object *p, struct json_object **ret, _unused_ char **err) {
        return canned("{\"changed\":[\"web\"]}", ret);
}

static const struct ctl_method methods[] = {
        { "kvmtune.v1.Status", false, m_status },
        { "kvmtune.v1.List", false, m_list },
        { "kvmtune.v1.Show", false, m_show },
        { "kvmtune.v1.Topology", false, m_topology },
        { "kvmtune.v1.Hugepages", false, m_hugepages },
        { "kvmtune.v1.Metrics", false, m_metrics },
        { "kvmtune.v1.Plan", false, m_plan },
        { "kvmtune.v1.Verify", false, m_verify },
        { "kvmtune.v1.Rebalance", true, m_rebalance },
        { "kvmtune.v1.Reload", true, m_reload },
        { "kvmtune.v1.Isolation", false, m_isolation },
        { "kvmtune.v1.IsolationSet", true, m_isolation_set },
};

static int on_term(sd_event_source *s, _unused_ const struct signalfd_siginfo *si, _unused_ void *u) {
        return sd_event_exit(sd_event_source_get_event(s), 0);
}

int main(int argc, char **argv) {
        _cleanup_(ctl_server_freep) struct ctl_server *server = NULL;
        sd_event *e = NULL;
        sigset_t ss;
        int r;

        if (argc < 2 || argc > 3) {
                fprintf(stderr, "usage: ctl-fake-daemon SOCKET [PRIVILEGED_UID]\n");
                return 2;
        }
        sigemptyset(&ss);
        sigaddset(&ss, SIGTERM);
        sigaddset(&ss, SIGINT);
        sigprocmask(SIG_BLOCK, &ss, NULL);
        r = sd_event_new(&e);
        if (r >= 0)
                r = sd_event_add_signal(e, NULL, SIGTERM, on_term, NULL);
        if (r >= 0)
                r = sd_event_add_signal(e, NULL, SIGINT, on_term, NULL);
        if (r >= 0)
                r = ctl_server_new(e, argv[1], -1, methods, ELEMENTSOF(methods), NULL, &server);
        if (r < 0) {
                fprintf(stderr, "ctl-fake-daemon: %s: %s\n", argv[1], strerror(-r));
                return 1;
        }
        if (argc == 3)
                ctl_server_set_privileged_uid(server, (uid_t) strtoul(argv[2], NULL, 10));
        r = sd_event_loop(e);
        server = ctl_server_free(server);
        sd_event_unref(e);
        return r < 0 ? 1 : 0;
}
