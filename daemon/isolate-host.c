/* Host isolation on the real host: the ops (sched_*affinity, /proc and /sys
 * writes, systemd's D-Bus API, irqbalance's control socket) and the daemon's
 * side: the dedicated set from the placements, the periodic rescan. */
#include "config.h"

#include <errno.h>
#include <json-c/json.h>
#include <glob.h>
#include <libgen.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-daemon.h>

#include "daemon.h"
#include "isolate.h"
#include "affinity.h"
#include "kvmtune/hostfs.h"
#include "kvmtune/log.h"
#include "kvmtune/proto.h"
#include "kvmtune/render.h"
#include "kvmtune/util.h"

#define ISOLATE_RESCAN_USEC (1000 * 1000ULL)    /* kvmtuned.conf(5) documents it */
#define AFFINITY_CPUS_MAX (ISOLATE_CPU_MAX + 1)
#define IRQBALANCE_SOCKETS "/run/irqbalance/irqbalance*.sock"

/* ---- affinity and files --------------------------------------------------------------- */

/* Runs every rescan for every task: the mask is taken a word at a time. */
static int host_get_affinity(_unused_ void *ud, pid_t tid, hwloc_bitmap_t ret) {
        unsigned long words[AFFINITY_CPUS_MAX / (8 * sizeof(unsigned long))];

        if (sched_getaffinity(tid, sizeof words, (cpu_set_t *)words) < 0)
                return -errno;
        hwloc_bitmap_zero(ret);
        for (unsigned i = 0; i < ELEMENTSOF(words); i++)
                if (words[i])
                        hwloc_bitmap_set_ith_ulong(ret, i, words[i]);
        return 0;
}

static int host_set_affinity(_unused_ void *ud, pid_t tid, hwloc_const_bitmap_t cpus) {
        return affinity_set(tid, cpus);
}

static int host_write_file(_unused_ void *ud, const char *path, const char *value) {
        return hostfs_write(NULL, path, value);
}

/* ---- systemd ---------------------------------------------------------------------------- */

static inline void message_unrefp(sd_bus_message **m) { sd_bus_message_unref(*m); }

/* PID 1 is systemd and the unified hierarchy has the cpuset controller (on
 * hybrid hosts cpusets stay in v1, where AllowedCPUs= does nothing). */
static bool host_systemd(_unused_ void *ud) {
        _cleanup_free_ char *controllers = NULL;

        if (sd_booted() <= 0 || hostfs_read(NULL, "/sys/fs/cgroup/cgroup.controllers", &controllers) < 0)
                return false;
        return strstr(controllers, "cpuset") != NULL;
}

/* One system bus connection, kept between rescans (borrowed by callers),
 * opened again once it is closed, closed by isolate_stop(). */
static sd_bus *host_bus;

static int bus_get(sd_bus **ret) {
        int r;

        if (host_bus && sd_bus_is_open(host_bus) > 0)
                return *ret = host_bus, 0;
        host_bus = sd_bus_flush_close_unref(host_bus);
        r = sd_bus_open_system(&host_bus);
        if (r < 0)
                return log_error_errno(r, "Cannot connect to the system bus");
        *ret = host_bus;
        return 0;
}

static void bytes_to_bitmap(const uint8_t *b, size_t n, hwloc_bitmap_t ret) {
        hwloc_bitmap_zero(ret);
        for (size_t i = 0; i < n * 8; i++)
                if (b[i / 8] & (1u << (i % 8)))
                        hwloc_bitmap_set(ret, (unsigned)i);
}

static int host_unit_get(_unused_ void *ud, const char *unit, hwloc_bitmap_t ret) {
        _cleanup_(message_unrefp) sd_bus_message *reply = NULL;
        sd_bus *bus = NULL;
        _cleanup_free_ char *path = NULL;
        sd_bus_error error = SD_BUS_ERROR_NULL;
        const void *bytes = NULL;
        size_t n = 0;
        int r;

        if ((r = bus_get(&bus)) < 0)
                return r;
        if ((r = sd_bus_path_encode("/org/freedesktop/systemd1/unit", unit, &path)) < 0)
                return r;
        r = sd_bus_get_property(bus, "org.freedesktop.systemd1", path,
                                strstr(unit, ".slice") ? "org.freedesktop.systemd1.Slice" :
                                                         "org.freedesktop.systemd1.Scope",
                                "AllowedCPUs", &error, &reply, "ay");
        if (r >= 0)
                r = sd_bus_message_read_array(reply, 'y', &bytes, &n);
        if (r < 0)
                log_debug("Cannot read AllowedCPUs of %s: %s", unit, error.message ? error.message : strerror(-r));
        sd_bus_error_free(&error);
        if (r < 0)
                return r;
        bytes_to_bitmap(bytes, n, ret);
        return 0;
}

/* What `systemctl set-property --runtime UNIT AllowedCPUs=LIST` sends. */
static int unit_message(sd_bus *bus, const char *unit, hwloc_const_bitmap_t cpus, sd_bus_message **ret) {
        int last = hwloc_bitmap_last(cpus), r;
        size_t n = last < 0 ? 0 : (size_t)last / 8 + 1;
        _cleanup_free_ uint8_t *b = xcalloc(n + 1, 1);

        for (int i = 0; i <= last; i++)
                if (hwloc_bitmap_isset(cpus, (unsigned)i))
                        b[i / 8] |= (uint8_t)(1u << (i % 8));
        r = sd_bus_message_new_method_call(bus, ret, "org.freedesktop.systemd1", "/org/freedesktop/systemd1",
                                           "org.freedesktop.systemd1.Manager", "SetUnitProperties");
        if (r >= 0)
                r = sd_bus_message_append(*ret, "sb", unit, 1);
        if (r >= 0)
                r = sd_bus_message_open_container(*ret, 'a', "(sv)");
        if (r >= 0)
                r = sd_bus_message_open_container(*ret, 'r', "sv");
        if (r >= 0)
                r = sd_bus_message_append(*ret, "s", "AllowedCPUs");
        if (r >= 0)
                r = sd_bus_message_open_container(*ret, 'v', "ay");
        if (r >= 0)
                r = sd_bus_message_append_array(*ret, 'y', b, n);
        for (int i = 0; i < 3 && r >= 0; i++)
                r = sd_bus_message_close_container(*ret);
        return r;
}

static int host_unit_set(_unused_ void *ud, const char *unit, hwloc_const_bitmap_t cpus) {
        _cleanup_(message_unrefp) sd_bus_message *m = NULL;
        sd_bus *bus = NULL;
        sd_bus_error error = SD_BUS_ERROR_NULL;
        int r;

        if ((r = bus_get(&bus)) < 0)
                return r;
        r = unit_message(bus, unit, cpus, &m);
        if (r >= 0)
                r = sd_bus_call(bus, m, 0, &error, NULL);
        if (r < 0)
                log_warning("Cannot set AllowedCPUs of %s: %s", unit, error.message ? error.message : strerror(-r));
        sd_bus_error_free(&error);
        return r;
}

/* ---- irqbalance ----------------------------------------------------------------------------- */

/* The socket of the running irqbalance and its pid (from the name). */
static int irqbalance_socket(char *path, size_t len, pid_t *ret_pid) {
        glob_t g = {};
        int r = glob(IRQBALANCE_SOCKETS, 0, NULL, &g), pid = 0;

        if (r == 0 && g.gl_pathc > 0 && sscanf(strrchr(g.gl_pathv[0], '/'), "/irqbalance%d.sock", &pid) == 1 &&
            pid > 0 && kill(pid, 0) == 0) {
                snprintf(path, len, "%s", g.gl_pathv[0]);
                *ret_pid = pid;
                r = 0;
        } else
                r = -ENOENT;
        globfree(&g);
        return r;
}

/* irqbalance accepts commands from root only, told by SCM_CREDENTIALS. */
static int irqbalance_send(int fd, const char *cmd) {
        struct ucred cred = { .pid = getpid(), .uid = getuid(), .gid = getgid() };
        char control[CMSG_SPACE(sizeof cred)] = {};
        struct iovec iov = { .iov_base = (void *)cmd, .iov_len = strlen(cmd) };
        struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = control,
                              .msg_controllen = sizeof control };
        struct cmsghdr *c = CMSG_FIRSTHDR(&msg);

        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_CREDENTIALS;
        c->cmsg_len = CMSG_LEN(sizeof cred);
        memcpy(CMSG_DATA(c), &cred, sizeof cred);
        return sendmsg(fd, &msg, 0) < 0 ? -errno : 0;
}

static int irqbalance_read(int fd, char *reply, size_t len) {
        size_t n = 0;
        ssize_t k;

        while (n + 1 < len && (k = recv(fd, reply + n, len - n - 1, 0)) > 0)
                n += (size_t)k;
        reply[n] = '\0';
        return 0;
}

static int host_irqbalance(_unused_ void *ud, const char *cmd, pid_t *ret_pid, char *reply, size_t len) {
        struct sockaddr_un addr = { .sun_family = AF_UNIX };
        struct timeval tv = { .tv_sec = 1 };
        _cleanup_close_ int fd = -1;
        int r = irqbalance_socket(addr.sun_path, sizeof addr.sun_path, ret_pid);

        if (r < 0)
                return r;
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
        if (connect(fd, (struct sockaddr *)&addr, sizeof addr) < 0)
                return -errno;
        if ((r = irqbalance_send(fd, cmd)) < 0)
                return r;
        return reply ? irqbalance_read(fd, reply, len) : 0;
}

const struct isolate_ops isolate_host_ops = {
        .get_affinity = host_get_affinity,
        .set_affinity = host_set_affinity,
        .write_file = host_write_file,
        .systemd = host_systemd,
        .unit_get = host_unit_get,
        .unit_set = host_unit_set,
        .irqbalance = host_irqbalance,
};

/* ---- the daemon's side ------------------------------------------------------------------------ */

/* Why isolation is not applied at all, NULL when it is. */
static const char *isolate_inactive_reason(const struct daemon *d) {
        if (d->topology_path)
                return "--topology: the CPU numbers are not the host's";
        if (d->sysfs_root && *d->sysfs_root && !streq(d->sysfs_root, "/"))
                return "--sysfs-root: not the live host";
        if (d->uri && strncmp(d->uri, "test:", 5) == 0)
                return "the libvirt test driver runs no real guests";
        if (geteuid() != 0)
                return "not running as root";
        return NULL;
}

static const struct domain *domain_by_id(const struct daemon *d, int id) {
        for (int i = 0; i < d->ndomain; i++)
                if (d->domains[i]->id == id)
                        return d->domains[i];
        return NULL;
}

/* PUs held by placed dedicated domains (vCPUs, idle siblings, dedicated
 * emulator and iothread PUs); hand pins and reserved PUs are not. */
static hwloc_bitmap_t daemon_dedicated(const struct daemon *d) {
        hwloc_bitmap_t set = bitmap_new();

        for (int pu = 0; d->alloc && pu < d->alloc->npu; pu++) {
                const struct domain *dm = d->alloc->pu_owner[pu] > 0 ? domain_by_id(d, d->alloc->pu_owner[pu]) : NULL;

                if (dm && dm->placed && dm->plan.dedicated)
                        hwloc_bitmap_set(set, d->topo->pus[pu].os);
        }
        return set;
}

static hwloc_bitmap_t daemon_online(const struct daemon *d) {
        hwloc_bitmap_t set = bitmap_new();

        for (int pu = 0; pu < d->topo->npu; pu++)
                hwloc_bitmap_set(set, d->topo->pus[pu].os);
        return set;
}

/* Running guests, placed or not; returns how many (*ret: a new array). A
 * hooked guest waits for its started event: placed. */
static int daemon_guests(const struct daemon *d, struct isolate_guest **ret) {
        struct isolate_guest *g = xcalloc((size_t)d->ndomain + 1, sizeof *g);
        int n = 0;

        for (int i = 0; i < d->ndomain; i++) {
                const struct domain *dm = d->domains[i];
                bool alone = dm->state == DOMAIN_IGNORED || dm->state == DOMAIN_FAILED ||
                             dm->state == DOMAIN_UNPLACED;

                if (dm->pid > 0)
                        g[n++] = (struct isolate_guest){ .name = dm->name, .pid = dm->pid, .hand = dm->hand_cpus,
                                                         .placed = dm->hooked || !alone };
        }
        *ret = g;
        return n;
}

/* What [host] isolation asks for, unless kvmtunectl isolation switched it:
 * on is the configured list, or everything when the config says no. */
static unsigned daemon_isolation(const struct daemon *d) {
        if (d->isolation_switch == 0)
                return 0;
        if (d->isolation_switch > 0 && d->conf->isolation == 0)
                return ISOLATE_ALL;
        return d->conf->isolation;
}

static char *record_path(const struct daemon *d) {
        _cleanup_free_ char *sock = xstrdup(proto_socket_path(d->socket_path));

        return xasprintf("%s/isolation", dirname(sock));
}

static void isolate_run_now(struct daemon *d);

static int on_rescan(_unused_ sd_event_source *s, _unused_ uint64_t usec, void *userdata) {
        struct daemon *d = userdata;

        d->isolate_timer = sd_event_source_unref(d->isolate_timer);
        isolate_run_now(d);
        return 0;
}

/* The next pass in usec (0: as soon as the loop is back, after the event
 * being handled: the hook's answer is not delayed by a pass). */
static int rescan_arm(struct daemon *d, uint64_t usec) {
        uint64_t now = 0;
        int r = sd_event_now(d->event, CLOCK_MONOTONIC, &now);

        if (r < 0)
                return r;
        if (d->isolate_timer)
                return sd_event_source_set_time(d->isolate_timer, now + usec);
        return sd_event_add_time(d->event, &d->isolate_timer, CLOCK_MONOTONIC, now + usec,
                                 usec ? 100 * 1000 : 0, on_rescan, d);
}

static void isolate_run(struct daemon *d, unsigned what) {
        _cleanup_bitmap_ hwloc_bitmap_t ded = daemon_dedicated(d), online = daemon_online(d);
        _cleanup_free_ struct isolate_guest *g = NULL;
        int n = daemon_guests(d, &g);

        isolate_pass(d->isolate, what, d->conf->isolation_scope, online, ded, g, n);
}

/* A pass, then the next one in a second while anything is in force. */
static void isolate_run_now(struct daemon *d) {
        _cleanup_free_ char *path = NULL;

        if (!d->scanned || isolate_inactive_reason(d))
                return;
        if (!d->isolate) {
                path = record_path(d);
                isolate_new(NULL, path, &isolate_host_ops, NULL, &d->isolate);
        }
        isolate_run(d, daemon_isolation(d));
        if (d->event && isolate_busy(d->isolate) && rescan_arm(d, ISOLATE_RESCAN_USEC) < 0)
                log_warning("Cannot arm the isolation rescan; new host tasks are confined at the next change");
}

void isolate_update(struct daemon *d) {
        if (!d->scanned || isolate_inactive_reason(d))
                return;
        if (!d->event || rescan_arm(d, 0) < 0)
                isolate_run_now(d);
}

/* Stopped before the first scan (libvirt never answered): what a killed
 * daemon's record says is put back all the same. */
void isolate_stop(struct daemon *d) {
        _cleanup_free_ char *path = NULL;

        d->isolate_timer = sd_event_source_disable_unref(d->isolate_timer);
        if (!d->isolate && !isolate_inactive_reason(d)) {
                path = record_path(d);
                isolate_new(NULL, path, &isolate_host_ops, NULL, &d->isolate);
        }
        if (!d->isolate)
                return;
        if (isolate_busy(d->isolate))
                log_info("Putting back the host isolation (%d change%s)", d->isolate->rec.n,
                         d->isolate->rec.n == 1 ? "" : "s");
        isolate_run(d, 0);
        d->isolate = isolate_free(d->isolate);
        host_bus = sd_bus_flush_close_unref(host_bus);
}

void isolate_switch(struct daemon *d, int on) {
        d->isolation_switch = on;
        isolate_run_now(d);             /* kvmtunectl's answer shows the result */
}

static unsigned in_force(const struct daemon *d) {
        return d->isolate && !isolate_inactive_reason(d) ? d->isolate->what : 0;
}

static const char *switch_name(int sw) {
        return sw < 0 ? "config" : sw ? "on" : "off";
}

static struct json_object *skipped_json(const struct isolate_report *r) {
        struct json_object *a = json_object_new_array();

        for (int i = 0; i < r->nskipped; i++)
                json_object_array_add(a, json_object_new_string(r->skipped[i]));
        return a;
}

static void add_int(struct json_object *o, const char *k, int v) {
        json_object_object_add(o, k, json_object_new_int(v));
}

static void add_bool(struct json_object *o, const char *k, bool v) {
        json_object_object_add(o, k, json_object_new_boolean(v));
}

static void report_json(struct json_object *o, const struct isolate_report *r) {
        add_int(o, "tasks", r->tasks);
        add_int(o, "units", r->units);
        add_int(o, "guest_threads", r->guest_threads);
        add_int(o, "kept", r->kept);
        add_int(o, "refused", r->refused);
        add_int(o, "irqs", r->irqs);
        add_int(o, "irqs_managed", r->irqs_managed);
        add_bool(o, "default_irq", r->default_irq);
        add_bool(o, "workqueues", r->workqueues);
        add_bool(o, "irqbalance", r->irqbalance);
        json_object_object_add(o, "mode", json_object_new_string(r->systemd ? "systemd" : "per-task"));
        json_object_object_add(o, "skipped", skipped_json(r));
}

/* The CPUs taken off host work now, and the housekeeping CPUs left to it. */
static void sets_json(struct json_object *o, const struct daemon *d) {
        _cleanup_bitmap_ hwloc_bitmap_t online = daemon_online(d), ded = bitmap_new(), hk = bitmap_new();

        if (d->isolate)
                hwloc_bitmap_copy(ded, d->isolate->dedicated);
        hwloc_bitmap_andnot(hk, online, ded);
        json_object_object_add(o, "dedicated", render_bitmap_json(ded));
        json_object_object_add(o, "housekeeping", render_bitmap_json(hk));
}

struct json_object *isolate_status_json(const struct daemon *d) {
        struct json_object *o = json_object_new_object();
        const char *why = isolate_inactive_reason(d);
        char buf[64];

        json_object_object_add(o, "configured", json_object_new_string(isolate_format_what(d->conf->isolation, buf,
                                                                                            sizeof buf)));
        json_object_object_add(o, "switch", json_object_new_string(switch_name(d->isolation_switch)));
        json_object_object_add(o, "scope", json_object_new_string(d->conf->isolation_scope));
        json_object_object_add(o, "in_force", json_object_new_string(isolate_format_what(in_force(d), buf,
                                                                                          sizeof buf)));
        json_object_object_add(o, "inactive", why ? json_object_new_string(why) : NULL);
        sets_json(o, d);
        if (d->isolate)
                report_json(o, &d->isolate->report);
        return o;
}

char *isolate_conflict(const struct daemon *d, const struct domain *dm) {
        char *list = NULL, *s;

        if (!(in_force(d) & ISOLATE_GUESTS) || !dm->hand_cpus ||
            !hwloc_bitmap_intersects(dm->hand_cpus, d->isolate->dedicated))
                return NULL;
        if (hwloc_bitmap_list_asprintf(&list, dm->hand_cpus) < 0)
                abort();
        s = xasprintf("its own pins (%s) name CPUs dedicated to other guests: left there", list);
        free(list);
        return s;
}
