/* The libvirt connection: open with keepalive and a close callback, domain
 * lifecycle and metadata events, reconnect with backoff when libvirtd goes
 * away (the control socket keeps serving meanwhile), and a full resync of the
 * running domains after every (re)connect. */
#include "config.h"

#include <errno.h>
#include <time.h>
#include <libvirt/virterror.h>
#include <systemd/sd-daemon.h>

#include "daemon.h"
#include "kvmtune/domxml.h"
#include "kvmtune/log.h"
#include "kvmtune/util.h"

#define RECONNECT_MIN_USEC (1ULL * 1000000ULL)
#define RECONNECT_MAX_USEC (30ULL * 1000000ULL)
#define PREPLACE_GRACE_USEC (2ULL * 1000000ULL)

static void watch_schedule_reconnect(struct daemon *d);
static int watch_resync(struct daemon *d);

/* libvirt prints every error to stderr by default; we log what matters ourselves. */
static void watch_on_libvirt_error(_unused_ void *userdata, virErrorPtr e) {
        if (e && e->message)
                log_debug("libvirt: %s", e->message);
}

static void watch_domain_uuid(virDomainPtr dom, char uuid[VIR_UUID_STRING_BUFLEN]) {
        if (virDomainGetUUIDString(dom, uuid) < 0)
                uuid[0] = '\0';
}

/* A start places the domain on STARTED (see watch_on_lifecycle for RESUMED);
 * a domain the qemu hook placed is confirmed through libvirt then. A restore
 * or an incoming migration re-places it even when it is known. */
static void watch_on_started(struct daemon *d, virDomainPtr dom, bool force) {
        char uuid[VIR_UUID_STRING_BUFLEN];

        watch_domain_uuid(dom, uuid);
        metrics_event_begin(&d->metrics, uuid);
        if (!force && domains_find_uuid(d, uuid)) {
                domains_confirm(d, dom);
                metrics_event_end(&d->metrics);
                return;
        }
        domains_update(d, dom, false);
        metrics_event_end(&d->metrics);
        domains_notify_status(d);
}

/* ---- inactive domains: their definition written after a grace ---------------------
 *
 * Writing a definition (pins with AFFECT_CONFIG, metadata) waits for the
 * domain's job. A start that begins meanwhile holds that job while its started
 * hook waits for this loop: the hook would give up at its timeout. So an
 * inactive domain is pre-placed PREPLACE_GRACE_USEC after its last define or
 * policy event, and only if it is still inactive then; one started meanwhile
 * is placed by its hook, and the event path writes its definition once it runs. */

static void watch_arm_preplace(struct daemon *d) {
        uint64_t next = UINT64_MAX;

        for (int i = 0; i < d->npreplace; i++)
                if (d->preplace[i].usec < next)
                        next = d->preplace[i].usec;
        if (!d->npreplace) {
                sd_event_source_set_enabled(d->preplace_timer, SD_EVENT_OFF);
                return;
        }
        sd_event_source_set_time(d->preplace_timer, next);
        sd_event_source_set_enabled(d->preplace_timer, SD_EVENT_ONESHOT);
}

/* Takes the first entry due at now out of the table into uuid; false: none. */
static bool watch_take_due(struct daemon *d, uint64_t now, char uuid[VIR_UUID_STRING_BUFLEN]) {
        for (int i = 0; i < d->npreplace; i++) {
                if (d->preplace[i].usec > now)
                        continue;
                memcpy(uuid, d->preplace[i].uuid, VIR_UUID_STRING_BUFLEN);
                memmove(d->preplace + i, d->preplace + i + 1, (d->npreplace - i - 1) * sizeof *d->preplace);
                d->npreplace--;
                return true;
        }
        return false;
}

static int watch_on_preplace(_unused_ sd_event_source *s, _unused_ uint64_t usec, void *userdata) {
        struct daemon *d = userdata;
        char uuid[VIR_UUID_STRING_BUFLEN];
        uint64_t now = 0;

        sd_event_now(d->event, CLOCK_MONOTONIC, &now);
        while (watch_take_due(d, now, uuid)) {
                virDomainPtr dom = d->connected ? virDomainLookupByUUIDString(d->conn, uuid) : NULL;

                if (!dom)
                        continue;
                if (virDomainIsActive(dom) == 0)
                        domains_preplace(d, dom);
                virDomainFree(dom);
        }
        watch_arm_preplace(d);
        return 0;
}

static void watch_defer_preplace(struct daemon *d, virDomainPtr dom) {
        char uuid[VIR_UUID_STRING_BUFLEN];
        uint64_t now = 0;
        int i;

        watch_domain_uuid(dom, uuid);
        if (!d->conf->persist_placement || !uuid[0])
                return;
        if (!d->preplace_timer &&
            sd_event_add_time(d->event, &d->preplace_timer, CLOCK_MONOTONIC, UINT64_MAX, 10000,
                              watch_on_preplace, d) < 0) {
                log_error("Cannot schedule writing the definition of %s", virDomainGetName(dom));
                return;
        }
        for (i = 0; i < d->npreplace && !streq(d->preplace[i].uuid, uuid); i++)
                ;
        if (i == d->npreplace) {
                d->preplace = xrealloc(d->preplace, (d->npreplace + 1) * sizeof *d->preplace);
                memcpy(d->preplace[d->npreplace++].uuid, uuid, sizeof uuid);
        }
        sd_event_now(d->event, CLOCK_MONOTONIC, &now);
        d->preplace[i].usec = now + PREPLACE_GRACE_USEC;
        log_debug("%s: not running, its definition is written in %llu ms unless it starts first",
                  virDomainGetName(dom), (unsigned long long)(PREPLACE_GRACE_USEC / 1000));
        watch_arm_preplace(d);
}

static void watch_on_gone(struct daemon *d, virDomainPtr dom, bool forget) {
        char uuid[VIR_UUID_STRING_BUFLEN];

        watch_domain_uuid(dom, uuid);
        domains_release(d, uuid, forget);
        domains_notify_status(d);
}

static int watch_on_lifecycle(_unused_ virConnectPtr conn, virDomainPtr dom, int event, int detail,
                              void *opaque) {
        struct daemon *d = opaque;

        log_debug("libvirt event %d/%d for %s", event, detail, virDomainGetName(dom));
        switch (event) {
        case VIR_DOMAIN_EVENT_STARTED:           /* booted, restored, migrated in */
                watch_on_started(d, dom, detail != VIR_DOMAIN_EVENT_STARTED_BOOTED);
                break;
        case VIR_DOMAIN_EVENT_RESUMED:           /* also the end of an incoming migration */
                /* A booting domain is resumed just before libvirt runs its started
                 * hook with the domain locked: a libvirt call for it now would
                 * block until the hook gives up (kvmtune/hook.h). STARTED follows the hook. */
                if (detail == VIR_DOMAIN_EVENT_RESUMED_MIGRATED)
                        watch_on_started(d, dom, true);
                break;
        case VIR_DOMAIN_EVENT_STOPPED:           /* shutdown, destroyed, crashed, migrated out */
                watch_on_gone(d, dom, false);
                break;
        case VIR_DOMAIN_EVENT_CRASHED:
                if (virDomainIsActive(dom) != 1)
                        watch_on_gone(d, dom, false);
                break;
        case VIR_DOMAIN_EVENT_DEFINED:           /* a new or changed definition, not running */
                if (virDomainIsActive(dom) == 0)
                        watch_defer_preplace(d, dom);
                break;
        case VIR_DOMAIN_EVENT_UNDEFINED:         /* a running domain stays, now transient */
                if (virDomainIsActive(dom) != 1)
                        watch_on_gone(d, dom, true);
                break;
        default:
                break;
        }
        return 0;
}

/* Our own placement record changes the metadata too: only the policy matters.
 * An active domain the table does not know is starting (every running one is
 * in the table from the resync, its hook or its started event): a libvirt
 * call for it would wait for the start, which waits for its started hook,
 * which waits for us. Its hook or its started event reads the new policy. */
static void watch_on_metadata(_unused_ virConnectPtr conn, virDomainPtr dom, int type,
                              const char *nsuri, void *opaque) {
        struct daemon *d = opaque;
        char uuid[VIR_UUID_STRING_BUFLEN];

        if (type != VIR_DOMAIN_METADATA_ELEMENT || !nsuri || !streq(nsuri, DOMXML_POLICY_NS))
                return;
        switch (virDomainIsActive(dom)) {
        case 0:
                watch_defer_preplace(d, dom);
                return;
        case 1:
                watch_domain_uuid(dom, uuid);
                if (domains_find_uuid(d, uuid))
                        break;
                log_debug("%s: policy changed while it starts, left to its started hook and event",
                          virDomainGetName(dom));
                return;
        default:
                return;
        }
        domains_policy_event(d, dom);
        domains_notify_status(d);
}

static void watch_on_close(_unused_ virConnectPtr conn, int reason, void *opaque) {
        struct daemon *d = opaque;

        log_warning("Lost the connection to libvirt (%s, reason %d), reconnecting",
                    d->uri, reason);
        d->connected = false;
        watch_schedule_reconnect(d);
}

static void watch_unregister(struct daemon *d) {
        if (d->cb_lifecycle >= 0)
                virConnectDomainEventDeregisterAny(d->conn, d->cb_lifecycle);
        if (d->cb_metadata >= 0)
                virConnectDomainEventDeregisterAny(d->conn, d->cb_metadata);
        d->cb_lifecycle = d->cb_metadata = -1;
        virConnectUnregisterCloseCallback(d->conn, watch_on_close);
}

static void watch_disconnect(struct daemon *d) {
        if (!d->conn)
                return;
        watch_unregister(d);
        virConnectClose(d->conn);
        d->conn = NULL;
        d->connected = false;
}

static int watch_register(struct daemon *d) {
        d->cb_lifecycle = virConnectDomainEventRegisterAny(
                d->conn, NULL, VIR_DOMAIN_EVENT_ID_LIFECYCLE,
                VIR_DOMAIN_EVENT_CALLBACK(watch_on_lifecycle), d, NULL);
        d->cb_metadata = virConnectDomainEventRegisterAny(
                d->conn, NULL, VIR_DOMAIN_EVENT_ID_METADATA_CHANGE,
                VIR_DOMAIN_EVENT_CALLBACK(watch_on_metadata), d, NULL);
        if (d->cb_lifecycle < 0 || d->cb_metadata < 0)
                return -EIO;
        if (virConnectRegisterCloseCallback(d->conn, watch_on_close, d, NULL) < 0)
                return -EIO;
        return 0;
}

static int watch_connect(struct daemon *d) {
        d->cb_lifecycle = d->cb_metadata = -1;
        d->conn = virConnectOpen(d->uri);
        if (!d->conn)
                return log_warning("Cannot connect to libvirt at %s: %s", d->uri,
                                   daemon_libvirt_error()), -ECONNREFUSED;
        if (virConnectSetKeepAlive(d->conn, 5, 3) < 0)
                log_warning("Cannot enable libvirt keepalive: %s", daemon_libvirt_error());
        if (watch_register(d) < 0) {
                log_error("Cannot register for libvirt events: %s", daemon_libvirt_error());
                watch_disconnect(d);
                return -EIO;
        }
        d->connected = true;
        d->reconnect_delay_usec = 0;
        metrics_observe_connect(&d->metrics);
        log_info("Connected to libvirt at %s", d->uri);
        return 0;
}

static int watch_on_reconnect(_unused_ sd_event_source *s, _unused_ uint64_t usec, void *userdata) {
        struct daemon *d = userdata;

        watch_disconnect(d);
        if (watch_connect(d) < 0 || watch_resync(d) < 0) {
                /* A connection that fails its first resync is no connection:
                 * drop it and try again rather than serve a stale table. */
                watch_disconnect(d);
                watch_schedule_reconnect(d);
                return 0;
        }
        return 0;
}

static uint64_t watch_next_delay(struct daemon *d) {
        uint64_t delay = d->reconnect_delay_usec;

        d->reconnect_delay_usec = delay ? delay * 2 : RECONNECT_MIN_USEC;
        if (d->reconnect_delay_usec > RECONNECT_MAX_USEC)
                d->reconnect_delay_usec = RECONNECT_MAX_USEC;
        return delay;
}

/* The first retry is immediate (the close callback runs inside libvirt, so the
 * reconnect itself always happens from our own timer), then 1 s doubling to 30 s. */
static void watch_schedule_reconnect(struct daemon *d) {
        uint64_t now = 0, delay = watch_next_delay(d);

        sd_event_now(d->event, CLOCK_MONOTONIC, &now);
        if (delay)
                log_info("Retrying the libvirt connection in %llus",
                         (unsigned long long)(delay / 1000000ULL));
        if (!d->reconnect) {
                if (sd_event_add_time(d->event, &d->reconnect, CLOCK_MONOTONIC, now + delay,
                                      100000, watch_on_reconnect, d) < 0)
                        log_error("Cannot schedule the libvirt reconnect");
                return;
        }
        sd_event_source_set_time(d->reconnect, now + delay);
        sd_event_source_set_enabled(d->reconnect, SD_EVENT_ONESHOT);
}

static void watch_mark_unseen(struct daemon *d) {
        for (int i = 0; i < d->ndomain; i++)
                d->domains[i]->seen = false;
}

/* Domains that stopped while we were not listening. */
static void watch_drop_unseen(struct daemon *d) {
        for (int i = d->ndomain - 1; i >= 0; i--)
                if (!d->domains[i]->seen) {
                        char uuid[37];

                        memcpy(uuid, d->domains[i]->uuid, sizeof uuid);
                        domains_release(d, uuid, false);
                }
}

/* Two passes: domains with a placement record or hand pins first, so the
 * PUs they already hold are taken before anything new is placed. */
static int watch_resync(struct daemon *d) {
        virDomainPtr *doms = NULL;
        int n;

        n = virConnectListAllDomains(d->conn, &doms, VIR_CONNECT_LIST_DOMAINS_ACTIVE);
        if (n < 0)
                return log_error("Cannot list libvirt domains: %s", daemon_libvirt_error()), -EIO;
        watch_mark_unseen(d);
        domains_batch_begin(d);
        for (int pass = 0; pass < 2; pass++)
                for (int i = 0; i < n; i++)
                        if (domains_resync_pass(d, doms[i], pass) < 0 && pass == 1)
                                log_dom(LOG_WARNING, virDomainGetName(doms[i]), NULL,
                                        "not tuned, continuing with the others");
        domains_batch_end(d);
        for (int i = 0; i < n; i++)
                virDomainFree(doms[i]);
        free(doms);
        watch_drop_unseen(d);
        d->scanned = true;
        domains_follow_pool(d);
        domains_notify_status(d);
        log_info("Resynchronised %d running domain%s", n, n == 1 ? "" : "s");
        return n;
}

int watch_start(struct daemon *d) {
        virSetErrorFunc(NULL, watch_on_libvirt_error);
        if (watch_connect(d) < 0) {
                watch_schedule_reconnect(d);
                return 0;
        }
        return watch_resync(d);
}

void watch_stop(struct daemon *d) {
        d->reconnect = sd_event_source_disable_unref(d->reconnect);
        d->preplace_timer = sd_event_source_disable_unref(d->preplace_timer);
        free(d->preplace);
        d->preplace = NULL;
        d->npreplace = 0;
        watch_disconnect(d);
}
