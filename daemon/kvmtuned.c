/* kvmtuned: watches libvirt, places every running domain per its policy, applies
 * the placement, and serves its state on the control socket. Runs in the
 * foreground (systemd Type=notify). */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <time.h>
#include <systemd/sd-daemon.h>

#include "ctl.h"
#include "daemon.h"
#include "hugepages.h"
#include "isolate.h"
#include "kvmtune/log.h"
#include "kvmtune/proto.h"
#include "kvmtune/util.h"

struct options {
        const char *config, *socket, *uri, *sysfs_root, *topology;
        bool check_config, debug, reserve_hugepages;
};

static void usage(FILE *f) {
        fprintf(f,
                "Usage: kvmtuned [OPTIONS]\n"
                "Places and pins every running libvirt domain per its tuning policy.\n\n"
                "  -c, --config FILE       configuration file (default %s)\n"
                "  -s, --socket PATH       control socket (default %s, or $%s)\n"
                "  -C, --connect URI       libvirt URI (default: [libvirt] uri, qemu:///system)\n"
                "  -n, --check-config      parse the configuration, print 'configuration OK', exit\n"
                "      --reserve-hugepages reserve the [hugepages] pools and exit (boot time)\n"
                "      --sysfs-root DIR    read and write /sys and /proc below DIR (tests)\n"
                "      --topology FILE.xml use an hwloc XML export instead of the live host\n"
                "  -d, --debug             log debug messages\n"
                "  -V, --version           print the version and exit\n"
                "  -h, --help              print this help and exit\n",
                CONF_PATH_DEFAULT, PROTO_SOCKET_DEFAULT, PROTO_SOCKET_ENV);
}

enum { OPT_SYSFS_ROOT = 0x100, OPT_TOPOLOGY, OPT_RESERVE_HUGEPAGES };

/* Returns -1 to continue, else the exit status. */
static int parse_options(int argc, char **argv, struct options *o) {
        static const struct option opts[] = {
                { "config", required_argument, NULL, 'c' },
                { "socket", required_argument, NULL, 's' },
                { "connect", required_argument, NULL, 'C' },
                { "check-config", no_argument, NULL, 'n' },
                { "reserve-hugepages", no_argument, NULL, OPT_RESERVE_HUGEPAGES },
                { "sysfs-root", required_argument, NULL, OPT_SYSFS_ROOT },
                { "topology", required_argument, NULL, OPT_TOPOLOGY },
                { "debug", no_argument, NULL, 'd' },
                { "version", no_argument, NULL, 'V' },
                { "help", no_argument, NULL, 'h' },
                {}
        };
        int c;

        *o = (struct options){ .config = CONF_PATH_DEFAULT };
        while ((c = getopt_long(argc, argv, "c:s:C:ndVh", opts, NULL)) != -1)
                switch (c) {
                case 'c': o->config = optarg; break;
                case 's': o->socket = optarg; break;
                case 'C': o->uri = optarg; break;
                case 'n': o->check_config = true; break;
                case 'd': o->debug = true; break;
                case OPT_RESERVE_HUGEPAGES: o->reserve_hugepages = true; break;
                case OPT_SYSFS_ROOT: o->sysfs_root = optarg; break;
                case OPT_TOPOLOGY: o->topology = optarg; break;
                case 'V': printf("kvmtuned %s\n", PACKAGE_VERSION); return 0;
                case 'h': usage(stdout); return 0;
                default: usage(stderr); return 2;
                }
        if (optind < argc) {
                fprintf(stderr, "kvmtuned: unexpected argument '%s'\n", argv[optind]);
                return 2;
        }
        return -1;
}

/* ---- setup -------------------------------------------------------------------- */

static int load_config(const char *path, struct conf **ret) {
        char err[512] = "";
        hwloc_bitmap_t m = NULL;
        struct conf *c = NULL;

        if (conf_load(path, streq(path, CONF_PATH_DEFAULT), &c, err, sizeof err) < 0) {
                fprintf(stderr, "%s\n", err[0] ? err : path);
                return -EINVAL;
        }
        if (conf_reserved_cpus(c, &m) < 0) {
                fprintf(stderr, "%s: [host] reserved_cpus is not a CPU list\n", path);
                conf_free(c);
                return -EINVAL;
        }
        if (m)
                hwloc_bitmap_free(m);
        *ret = c;
        return 0;
}

static int load_host(struct daemon *d) {
        hwloc_bitmap_t reserved = NULL;
        int r;

        r = topo_load(d->topology_path ? TOPO_SOURCE_XML : TOPO_SOURCE_LIVE, d->topology_path,
                      d->sysfs_root, &d->topo);
        if (r < 0)
                return log_error_errno(r, "Cannot read the host topology%s%s", d->topology_path ? " from " : "",
                                       d->topology_path ? d->topology_path : "");
        r = reload_reserved(d, d->conf, &reserved);
        if (r < 0)
                return log_error_errno(r, "Invalid reserved_cpus");
        log_info("Host: %s", d->topo->description);
        reload_rebuild_alloc(d, reserved);
        return 0;
}

static int on_sigterm(_unused_ sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        struct daemon *d = userdata;

        sd_notify(0, "STOPPING=1");
        log_info("Received signal %d, exiting; pins stay in place, host isolation is put back",
                 (int)si->ssi_signo);
        sd_event_exit(d->event, 0);
        return 0;
}

static int on_sighup(_unused_ sd_event_source *s, _unused_ const struct signalfd_siginfo *si, void *userdata) {
        struct daemon *d = userdata;
        char err[512] = "";
        uint64_t now = 0;

        sd_event_now(d->event, CLOCK_MONOTONIC, &now);
        sd_notifyf(0, "RELOADING=1\nMONOTONIC_USEC=%llu", (unsigned long long)now);
        reload_config(d, NULL, NULL, err, sizeof err);
        sd_notify(0, "READY=1");
        domains_notify_status(d);
        return 0;
}

static int setup_signals(struct daemon *d) {
        sigset_t ss;
        int r;

        sigemptyset(&ss);
        sigaddset(&ss, SIGTERM);
        sigaddset(&ss, SIGINT);
        sigaddset(&ss, SIGHUP);
        sigprocmask(SIG_BLOCK, &ss, NULL);
        signal(SIGPIPE, SIG_IGN);
        r = sd_event_add_signal(d->event, NULL, SIGTERM, on_sigterm, d);
        if (r >= 0)
                r = sd_event_add_signal(d->event, NULL, SIGINT, on_sigterm, d);
        if (r >= 0)
                r = sd_event_add_signal(d->event, NULL, SIGHUP, on_sighup, d);
        return r;
}

static int setup_loop(struct daemon *d) {
        int r = sd_event_default(&d->event);

        if (r < 0)
                return log_error_errno(r, "Cannot create the event loop");
        r = setup_signals(d);
        if (r < 0)
                return log_error_errno(r, "Cannot watch signals");
        sd_event_set_watchdog(d->event, true);
        sd_event_now(d->event, CLOCK_MONOTONIC, &d->start_usec);
        evloop_register(d->event);
        if (virInitialize() < 0)
                return log_error("Cannot initialise libvirt"), -EIO;
        return 0;
}

static int run(struct daemon *d) {
        _cleanup_(ctl_server_freep) struct ctl_server *srv = NULL;
        const char *path = proto_socket_path(d->socket_path);
        int r;

        r = setup_loop(d);
        if (r < 0)
                return r;
        r = ctl_server_new(d->event, path, ctl_listen_fd_from_systemd(), daemon_methods,
                           daemon_nmethods, d, &srv);
        if (r < 0)
                return log_error_errno(r, "Cannot listen on %s", path);
        log_info("kvmtuned %s listening on %s", PACKAGE_VERSION, path);
        watch_start(d);
        sd_notify(0, "READY=1");
        domains_notify_status(d);
        r = sd_event_loop(d->event);
        isolate_stop(d);
        watch_stop(d);
        evloop_flush();
        return r;
}

static void daemon_done(struct daemon *d) {
        domains_free_all(d);
        alloc_free(d->alloc);
        if (d->reserved)
                hwloc_bitmap_free(d->reserved);
        topo_free(d->topo);
        conf_free(d->conf);
        free(d->uri);
        sd_event_unref(d->event);
}

int main(int argc, char **argv) {
        struct options o;
        struct daemon d = { .cb_lifecycle = -1, .cb_metadata = -1, .isolation_switch = -1 };
        int r = parse_options(argc, argv, &o);

        if (r >= 0)
                return r;
        log_setup(LOG_TARGET_AUTO, o.debug ? LOG_DEBUG : LOG_INFO);
        if (load_config(o.config, &d.conf) < 0)
                return 1;
        if (o.check_config)
                return conf_free(d.conf), printf("configuration OK\n"), 0;
        d.config_path = o.config;
        d.socket_path = o.socket;
        d.sysfs_root = o.sysfs_root;
        d.topology_path = o.topology;
        d.uri = xstrdup(o.uri ? o.uri : d.conf->uri ? d.conf->uri : "qemu:///system");
        r = load_host(&d);
        if (r >= 0 && o.reserve_hugepages) {
                r = hugepages_reserve_main(d.conf, d.topo, d.sysfs_root);
                daemon_done(&d);
                return r;
        }
        if (r >= 0)
                r = run(&d);
        daemon_done(&d);
        return r < 0 ? 1 : 0;
}
