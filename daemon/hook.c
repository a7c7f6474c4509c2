/* kvmtune.v1.Hook: the daemon side of the libvirt qemu hook (contract in
 * kvmtune/hook.h). At "started" the domain is placed from the XML the hook sent, by
 * the same domain table and engine as the event path (domains_place_xml), and
 * applied directly to the QEMU threads and cgroup (qemuproc); the started event
 * that follows records it through libvirt (domains_confirm). At "release" the
 * allocation is freed.
 *
 * Never a libvirt call here: libvirt holds the domain locked while its hook
 * runs. Work that needs libvirt for the other domains (shrinking the shared
 * pool, retrying unplaced domains) runs from a deferred event after the answer
 * went out; it only touches other domains. Residual risk: when the hook
 * arrives while the loop is inside a libvirt call that waits for this domain
 * (listing all domains during a resync after a libvirtd restart), the answer
 * waits until that call returns, and the hook gives up at its own timeout and
 * lets the guest start (the event path then places it). */
#include "config.h"

#include <errno.h>
#include <json-c/json.h>

#include "daemon.h"
#include "affinity.h"
#include "kvmtune/domxml.h"
#include "kvmtune/hook.h"
#include "kvmtune/hostfs.h"
#include "kvmtune/log.h"
#include "kvmtune/qemupid.h"
#include "kvmtune/util.h"

struct hook_params {
        const char *stage, *name, *uuid, *xml;
        size_t xml_len;
        pid_t pid;
};

/* Borrowed: the follow-up source lives in the loop (floating), re-armed per use. */
static sd_event_source *hook_follow_source;

/* ---- params ------------------------------------------------------------------- */

static const char *param_string(struct json_object *params, const char *key, size_t *ret_len) {
        struct json_object *v;

        if (!json_object_object_get_ex(params, key, &v) || !json_object_is_type(v, json_type_string))
                return NULL;
        if (ret_len)
                *ret_len = (size_t)json_object_get_string_len(v);
        return json_object_get_string(v);
}

static int param_pid(struct json_object *params, pid_t *ret) {
        struct json_object *v;
        int64_t pid;

        if (!json_object_object_get_ex(params, "pid", &v) || !json_object_is_type(v, json_type_int))
                return -EINVAL;
        pid = json_object_get_int64(v);
        if (pid <= 0 || pid > INT32_MAX)
                return -EINVAL;
        *ret = (pid_t)pid;
        return 0;
}

static int hook_parse(struct json_object *params, struct hook_params *ret, char **ret_error) {
        *ret = (struct hook_params){ .stage = param_string(params, "stage", NULL),
                                     .name = param_string(params, "name", NULL),
                                     .uuid = param_string(params, "uuid", NULL) };
        if (!ret->stage || !ret->name || !*ret->name)
                return *ret_error = xstrdup("\"stage\" and \"name\" strings are required"), -EINVAL;
        if (streq(ret->stage, "release"))
                return 0;
        if (!streq(ret->stage, "started"))
                return *ret_error = xasprintf("unknown stage '%s' (started, release)", ret->stage), -EINVAL;
        ret->xml = param_string(params, "xml", &ret->xml_len);
        if (!ret->xml || param_pid(params, &ret->pid) < 0)
                return *ret_error = xstrdup("stage started needs \"xml\" (string) and \"pid\" (> 0)"), -EINVAL;
        return 0;
}

/* ---- after the answer: libvirt work for the other domains --------------------- */

static int hook_on_follow(_unused_ sd_event_source *s, void *userdata) {
        struct daemon *d = userdata;

        domains_retry_unplaced(d);
        domains_follow_pool(d);
        domains_notify_status(d);
        return 0;
}

static void hook_schedule_follow(struct daemon *d) {
        if (hook_follow_source) {
                sd_event_source_set_enabled(hook_follow_source, SD_EVENT_ONESHOT);
                return;
        }
        if (sd_event_add_defer(d->event, &hook_follow_source, hook_on_follow, d) < 0) {
                log_warning("Cannot schedule the shared pool update; it follows at the next event");
                return;
        }
        sd_event_source_set_enabled(hook_follow_source, SD_EVENT_ONESHOT);
        sd_event_source_set_floating(hook_follow_source, true);
        sd_event_source_unref(hook_follow_source);      /* the loop owns it now */
}

/* ---- answers ------------------------------------------------------------------ */

static struct json_object *hook_answer(const struct domain *dm, bool applied, const char *reason) {
        struct json_object *o = json_object_new_object();

        json_object_object_add(o, "name", json_object_new_string(dm->name));
        json_object_object_add(o, "state", json_object_new_string(domain_state_to_string(dm->state)));
        json_object_object_add(o, "applied", json_object_new_boolean(applied));
        if (reason && *reason)
                json_object_object_add(o, "reason", json_object_new_string(reason));
        return o;
}

/* ---- started ------------------------------------------------------------------ */

/* The event path got there first (the hook came late): nothing to redo. */
static bool hook_already_placed(struct daemon *d, const struct domxml *x, pid_t pid) {
        struct domain *dm = domains_find_uuid(d, x->uuid);

        return dm && !dm->hooked && dm->pid == pid && dm->state != DOMAIN_FAILED;
}

/* Applying failed: forget the domain, so the started event places it anew
 * through libvirt as if no hook had run. */
static int hook_fall_back(struct daemon *d, struct domain *dm, const char *reason,
                          struct json_object **ret_result) {
        _cleanup_free_ char *uuid = xstrdup(dm->uuid), *name = xstrdup(dm->name);

        log_dom(LOG_WARNING, name, uuid, "pinning before start failed: %s; placing it after start instead",
                reason);
        *ret_result = hook_answer(dm, false, reason);
        if (domains_forget(d, uuid))
                hook_schedule_follow(d);
        return 0;
}

/* placement=strict and no room: libvirt refuses the start and shows the reason.
 * The allocation is dropped at once; the release hook and the stop event that
 * follow find nothing to free. */
static int hook_refuse(struct daemon *d, struct domain *dm, struct json_object **ret_result) {
        _cleanup_free_ char *uuid = xstrdup(dm->uuid);

        log_dom(LOG_WARNING, dm->name, dm->uuid, "refusing to start (placement=strict): %s", dm->reason);
        *ret_result = hook_answer(dm, false, dm->reason);
        json_object_object_add(*ret_result, "refuse", json_object_new_string(dm->reason[0] ? dm->reason : "no room"));
        domains_forget(d, uuid);
        return 0;
}

static int hook_started(struct daemon *d, const struct hook_params *hp, struct json_object **ret_result,
                        char **ret_error) {
        _cleanup_domxml_ struct domxml *x = NULL;
        char err[256] = "", reason[PLACEMENT_REASON_MAX] = "";
        struct domain *dm = NULL;
        long ticks = 0;
        int r, moved = 0;

        if (domxml_parse(hp->xml, hp->xml_len, &x, err, sizeof err) < 0)
                return *ret_error = xasprintf("domain XML: %s", err), -EINVAL;
        if (!x->name || !streq(x->name, hp->name) || !x->uuid[0])
                return *ret_error = xasprintf("the XML is not domain '%s'", hp->name), -EINVAL;
        /* so that a request can never move the threads of another process */
        if (!qemupid_is_domain(d->sysfs_root, hp->pid, x->uuid))
                return *ret_error = xasprintf("process %d is not the QEMU of domain '%s'", (int)hp->pid,
                                              x->name), -EINVAL;
        if (hook_already_placed(d, x, hp->pid))
                return *ret_result = hook_answer(domains_find_uuid(d, x->uuid), false, "already placed"), 0;
        r = domains_place_xml(d, x, hp->pid, &dm);
        if (r <= 0)                     /* left alone, or failed (logged): fail open */
                return *ret_result = hook_answer(dm, false, dm->reason), 0;
        if (dm->state == DOMAIN_UNPLACED && dm->policy.placement == POLICY_PLACEMENT_STRICT)
                return hook_refuse(d, dm, ret_result);
        r = affinity_apply(d->sysfs_root, hp->pid, &dm->pins, reason, &ticks, &moved);
        if (r < 0)
                return hook_fall_back(d, dm, reason, ret_result);
        metrics_observe_hook(&d->metrics);
        if (moved == 0)
                log_dom(LOG_INFO, dm->name, dm->uuid, "%s by the started hook: every thread was already on "
                        "its final CPUs (pinned by libvirt at launch from its definition)",
                        domain_state_to_string(dm->state));
        else
                log_dom(LOG_INFO, dm->name, dm->uuid, "%s by the started hook: %d thread%s and the cgroup "
                        "pinned after %ld tick%s of vCPU time", domain_state_to_string(dm->state), moved,
                        moved == 1 ? "" : "s", ticks, ticks == 1 ? "" : "s");
        *ret_result = hook_answer(dm, true, dm->reason);
        json_object_object_add(*ret_result, "vcpu_ticks", json_object_new_int64(ticks));
        json_object_object_add(*ret_result, "moved_threads", json_object_new_int(moved));
        hook_schedule_follow(d);
        return 0;
}

/* ---- release ------------------------------------------------------------------ */

static int hook_release(struct daemon *d, const struct hook_params *hp, struct json_object **ret_result) {
        struct domain *dm = hp->uuid ? domains_find_uuid(d, hp->uuid) : domains_find(d, hp->name);
        _cleanup_free_ char *uuid = dm ? xstrdup(dm->uuid) : NULL;
        bool held;

        *ret_result = json_object_new_object();
        if (!dm)
                return json_object_object_add(*ret_result, "released", json_object_new_boolean(false)), 0;
        held = domains_forget(d, uuid);
        log_dom(LOG_INFO, hp->name, uuid, "stopped (hook), released%s", held ? " its PUs" : "");
        json_object_object_add(*ret_result, "released", json_object_new_boolean(held));
        if (held)
                hook_schedule_follow(d);
        return 0;
}

int hook_method(void *userdata, struct json_object *params, struct json_object **ret_result,
                char **ret_error) {
        struct daemon *d = userdata;
        struct hook_params hp;
        uint64_t start = now_usec(), took_ms;
        int r = hook_parse(params, &hp, ret_error);

        if (r < 0)
                return r;
        metrics_hook_begin(&d->metrics);
        r = streq(hp.stage, "release") ? hook_release(d, &hp, ret_result)
                                       : hook_started(d, &hp, ret_result, ret_error);
        took_ms = (now_usec() - start) / 1000;
        if (d->conf && took_ms > (uint64_t)d->conf->hook_timeout_ms)
                log_dom(LOG_WARNING, hp.name, hp.uuid, "the %s hook took %llu ms, over hook_timeout (%d ms)",
                        hp.stage, (unsigned long long)took_ms, d->conf->hook_timeout_ms);
        else
                log_dom(LOG_DEBUG, hp.name, hp.uuid, "%s hook answered in %llu ms", hp.stage,
                        (unsigned long long)took_ms);
        return r;
}
