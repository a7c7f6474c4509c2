/* The daemon's state beside the domain table: the reserved CPUs, the
 * allocations rebuilt around them, and a configuration reload (SIGHUP and
 * kvmtune.v1.Reload). */
#include "config.h"

#include <errno.h>

#include "daemon.h"
#include "isolate.h"
#include "kvmtune/log.h"
#include "kvmtune/util.h"

int reload_reserved(const struct daemon *d, const struct conf *c, hwloc_bitmap_t *ret) {
        hwloc_bitmap_t m = NULL;
        int r = conf_reserved_cpus(c, &m);

        if (r < 0)
                return r;
        *ret = m ? m : placement_default_reserved(d->topo);
        return 0;
}

/* Logs what is really reserved (named CPUs widened to whole cores, those the
 * host lacks ignored) and warns about CPUs that are not there. */
static void reload_log_reserved(const struct daemon *d) {
        hwloc_bitmap_t real = alloc_reserved_cpus(d->alloc, d->topo);
        hwloc_bitmap_t absent = placement_absent_cpus(d->topo, d->reserved);
        _cleanup_free_ char *list = NULL, *missing = NULL;
        int n = hwloc_bitmap_weight(real);

        hwloc_bitmap_list_asprintf(&list, real);
        hwloc_bitmap_list_asprintf(&missing, absent);
        if (!hwloc_bitmap_iszero(absent))
                log_warning("reserved_cpus: this host has no CPU %s, ignoring %s", missing,
                            hwloc_bitmap_isequal(absent, d->reserved) ? "them: no CPU is reserved for housekeeping"
                                                                      : "those");
        log_info("%d CPU%s reserved for housekeeping%s%s", n, n == 1 ? "" : "s", n ? ": " : "", n ? list : "");
        hwloc_bitmap_free(real);
        hwloc_bitmap_free(absent);
}

void reload_rebuild_alloc(struct daemon *d, hwloc_bitmap_t reserved) {
        domains_drop_holds(d);
        alloc_free(d->alloc);
        d->alloc = alloc_new(d->topo);
        if (d->reserved)
                hwloc_bitmap_free(d->reserved);
        d->reserved = reserved;
        alloc_reserve(d->alloc, d->topo, reserved);
        reload_log_reserved(d);
}

/* Parses the configuration into a new struct and swaps it in only when valid;
 * a change of reserved CPUs rebuilds the allocations and re-places everything. */
int reload_config(struct daemon *d, void (*changed)(const char *name, void *ud), void *ud,
                  char *err, size_t errlen) {
        struct conf *c = NULL;
        hwloc_bitmap_t reserved = NULL;
        int r;

        r = conf_load(d->config_path, streq(d->config_path, CONF_PATH_DEFAULT), &c, err, errlen);
        if (r < 0)
                return log_error("Reload refused, keeping the running configuration: %s", err), r;
        r = reload_reserved(d, c, &reserved);
        if (r < 0) {
                snprintf(err, errlen, "%s: invalid [host] reserved_cpus", d->config_path);
                conf_free(c);
                return -EINVAL;
        }
        if (!hwloc_bitmap_isequal(reserved, d->reserved) && !d->connected) {
                /* Re-placing needs libvirt: dropping every hold now would hand
                 * running guests' PUs to others. */
                snprintf(err, errlen, "reserved_cpus changed while libvirt is disconnected; "
                         "reload again once connected");
                hwloc_bitmap_free(reserved);
                conf_free(c);
                return log_error("Reload refused, keeping the running configuration: %s", err), -EAGAIN;
        }
        if (!streq(c->uri ? c->uri : CONF_URI_DEFAULT, d->conf->uri ? d->conf->uri : CONF_URI_DEFAULT))
                log_warning("[libvirt] uri changed to %s: it takes effect when kvmtuned restarts",
                            c->uri ? c->uri : CONF_URI_DEFAULT);
        conf_free(d->conf);
        d->conf = c;
        if (!hwloc_bitmap_isequal(reserved, d->reserved)) {
                log_info("Reserved CPUs changed, re-placing every domain");
                reload_rebuild_alloc(d, reserved);
                domains_rebalance(d, NULL);
        } else {
                hwloc_bitmap_free(reserved);
                domains_reevaluate(d, changed, ud);
        }
        isolate_update(d);
        domains_notify_status(d);
        log_info("Configuration reloaded from %s", d->config_path);
        return 0;
}
