/* Domain definition audit (include/kvmtune/advise.h). Reads the libxml2 tree,
 * records findings, and for the safe ones edits the tree in place when asked. */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/param.h>
#include <libxml/parser.h>
#include <libxml/tree.h>

#include "kvmtune/advise.h"
#include "kvmtune/util.h"
#include "xmltree.h"

#define ADVISE_MAX_FINDINGS 1024
#define ADVISE_HUGEPAGE_MIN_KIB (4ull * 1024 * 1024)
#define ADVISE_NET_MAX_QUEUES 16

/* The field reports behind the findings (shared/seeds), with their figures. */
#define SRC_SQL_HYPERV "seeds/000 (KubeVirt, SQL Server 2022, HammerDB): 41,620 -> 94,406 TPM, " \
        "38% -> 87% of the same SQL Server in a container"
#define SRC_SQL_FINAL "seeds/000 (KubeVirt, SQL Server 2022, HammerDB): 94,406 -> 108,184 TPM, " \
        "87% -> 98%, with dedicated CPUs, host-passthrough, 1G hugepages, guest NUMA passthrough, " \
        "an iothread per disk, no display, no balloon and NIC multiqueue together (not measured one by one)"
#define SRC_DISK_BUS "seeds/001 (Harvester, DISKSPD, Windows Server 2022): random 4K write 28,240 IOPS " \
        "SCSI vs 45,226 VirtIO (31.46 vs 22.61 ms); seeds/002: IDE and SCSI measured alike"
#define SRC_DISK_CACHE "seeds/004 (bonnie++, raw LVM and qcow2): block write 25,510 -> 47,621 K/s (raw) " \
        "and 26,790 -> 63,779 K/s (qcow2), rewrite 27,107 -> 57,720 K/s (raw) and " \
        "20,073 -> 58,150 K/s (qcow2) with cache=none,io=native"
#define SRC_IOTHREAD "seeds/001: with one disk an iothread pool measured within noise (44,206 vs " \
        "43,397 IOPS), the gain needs several busy disks; seeds/000 gave the data, log and system " \
        "disks each their own (dedicatedIOThread), part of 87% -> 98%"

struct advise {
        xmlNode *dom;
        const struct domxml *facts;
        const struct advise_request *req;
        struct policy policy;
        bool apply;
        struct advise_finding *f;
        size_t n;
        int napplied;
        char note[ADVISE_NOTE_MAX];
};

/* ---- tree helpers: libvirt's own elements carry no namespace ---------------- */

/* Copies the attribute into buf ("" when absent or too long). */
static const char *attr(const xmlNode *n, const char *name, char *buf, size_t len) {
        _cleanup_xmlchar_ xmlChar *v = n ? xmlGetNoNsProp(n, BAD_CAST name) : NULL;

        buf[0] = '\0';
        if (v && strlen((const char *) v) < len)
                strcpy(buf, (const char *) v);
        return buf;
}

static bool attr_is(const xmlNode *n, const char *name, const char *value) {
        char buf[64];

        return streq(attr(n, name, buf, sizeof buf), value);
}

static xmlNode *child_or_new(xmlNode *parent, const char *name) {
        xmlNode *c = child(parent, name);

        return c ? c : xmlNewChild(parent, NULL, BAD_CAST name, NULL);
}

static void set_attr(xmlNode *n, const char *name, const char *value) {
        xmlSetProp(n, BAD_CAST name, BAD_CAST value);
}

static void set_attr_int(xmlNode *n, const char *name, unsigned long long value) {
        char buf[32];

        snprintf(buf, sizeof buf, "%llu", value);
        set_attr(n, name, buf);
}

/* A whole-number attribute or text (n NULL or attr NULL: the text), or def. */
static uint64_t number_of(const xmlNode *n, const char *name, uint64_t def) {
        _cleanup_xmlchar_ xmlChar *v = !n ? NULL : name ? xmlGetNoNsProp(n, BAD_CAST name) : xmlNodeGetContent(n);
        char buf[32];
        uint64_t x;

        if (!v || snprintf(buf, sizeof buf, "%s", (const char *) v) >= (int) sizeof buf)
                return def;
        for (size_t i = strlen(buf); i > 0 && strchr(" \t\r\n", buf[i - 1]); i--)
                buf[i - 1] = '\0';
        return safe_atou64(buf + strspn(buf, " \t\r\n"), &x) < 0 ? def : x;
}

/* Inserts n as parent's child after its first element called after (else last). */
static xmlNode *insert_after(xmlNode *parent, const char *after, xmlNode *n) {
        xmlNode *prev = child(parent, after);

        return prev ? xmlAddNextSibling(prev, n) : xmlAddChild(parent, n);
}

/* ---- findings ------------------------------------------------------------------ */

static struct advise_finding *advise_add(struct advise *a, const char *id, const char *severity,
                                         const char *target, const char *source, char *message, char *fix) {
        struct advise_finding *f;

        if (a->n >= ADVISE_MAX_FINDINGS) {
                free(message);
                free(fix);
                return NULL;
        }
        a->f = xrealloc(a->f, (a->n + 1) * sizeof *a->f);
        f = &a->f[a->n++];
        memset(f, 0, sizeof *f);
        snprintf(f->id, sizeof f->id, "%s", id);
        snprintf(f->target, sizeof f->target, "%s", target);
        f->severity = severity;
        f->source = source;
        f->message = message;
        f->fix = fix;
        return f;
}

static void advise_applied(struct advise *a, struct advise_finding *f) {
        if (!f)
                return;
        f->applied = true;
        a->napplied++;
}

static bool advise_dedicated_cpu(const struct advise *a) {
        return a->policy.cpu == POLICY_CPU_DEDICATED;
}

/* ---- disks ------------------------------------------------------------------- */

struct advise_disk {
        xmlNode *disk, *driver;
        char target[64];
        char bus[16], type[16], format[16], cache[32], io[16];
};

static void advise_disk_read(xmlNode *disk, struct advise_disk *d) {
        char dev[32];
        xmlNode *t = child(disk, "target");

        d->disk = disk;
        d->driver = child(disk, "driver");
        attr(t, "bus", d->bus, sizeof d->bus);
        attr(disk, "type", d->type, sizeof d->type);
        attr(d->driver, "type", d->format, sizeof d->format);
        attr(d->driver, "cache", d->cache, sizeof d->cache);
        attr(d->driver, "io", d->io, sizeof d->io);
        snprintf(d->target, sizeof d->target, "disk %s", attr(t, "dev", dev, sizeof dev)[0] ? dev : "?");
}

static void advise_disk_bus(struct advise *a, const struct advise_disk *d) {
        bool scsi = streq(d->bus, "scsi");

        if (!scsi && !streq(d->bus, "ide") && !streq(d->bus, "sata"))
                return;
        advise_add(a, "disk-bus", scsi ? "info" : "warning", d->target, SRC_DISK_BUS,
                   xasprintf("emulated %s bus: virtio-blk measured 45,226 vs 28,240 random 4K write IOPS "
                             "(+60%%) over SCSI, and only virtio disks take an iothread", d->bus),
                   xstrdup("install virtio drivers in the guest, then <target bus='virtio'> "
                           "(not applied: the guest may not boot without them)"));
}

/* The disk's <driver>, added when missing. A new one names no format, as the
 * disk did not before: libvirt's choice of format stays the same. */
static xmlNode *advise_disk_driver(struct advise_disk *d) {
        if (!d->driver) {
                d->driver = xmlNewChild(d->disk, NULL, BAD_CAST "driver", NULL);
                set_attr(d->driver, "name", "qemu");
        }
        return d->driver;
}

static void advise_disk_cache(struct advise *a, struct advise_disk *d) {
        struct advise_finding *f;

        if (streq(d->cache, "none") || streq(d->cache, "directsync"))
                return;
        f = advise_add(a, "disk-cache", "warning", d->target, SRC_DISK_CACHE,
                       xasprintf("cache=%s goes through the host page cache: cache=none,io=native "
                                 "measured 1.9-2.4x block write and 2.1-2.9x rewrite throughput",
                                 d->cache[0] ? d->cache : "default"),
                       xstrdup("<driver cache='none'/>"));
        if (a->apply) {
                set_attr(advise_disk_driver(d), "cache", "none");
                strcpy(d->cache, "none");
                advise_applied(a, f);
        }
}

static void advise_disk_io(struct advise *a, struct advise_disk *d) {
        struct advise_finding *f;

        if (!streq(d->type, "file") && !streq(d->type, "block"))
                return;
        if (!streq(d->format, "raw") && !streq(d->format, "qcow2"))
                return;
        if (streq(d->io, "native") || streq(d->io, "io_uring"))
                return;
        f = advise_add(a, "disk-io", "warning", d->target, SRC_DISK_CACHE,
                       xasprintf("io=%s with a %s image: io=native (with cache=none) measured "
                                 "2.1-2.9x rewrite throughput and lower latency",
                                 d->io[0] ? d->io : "threads", d->format),
                       xstrdup("<driver cache='none' io='native'/>"));
        if (a->apply && streq(d->cache, "none")) {
                set_attr(d->driver, "io", "native");
                advise_applied(a, f);
        }
}

static void advise_disks(struct advise *a) {
        FOREACH_CHILD(disk, child(a->dom, "devices"), "disk") {
                struct advise_disk d;

                if (!attr_is(disk, "device", "disk") && !attr_is(disk, "device", ""))
                        continue;       /* cdrom, floppy, lun */
                advise_disk_read(disk, &d);
                advise_disk_bus(a, &d);
                advise_disk_cache(a, &d);
                advise_disk_io(a, &d);
        }
}

/* ---- one iothread per busy device ------------------------------------------ */

/* The devices an iothread can serve: virtio disks and virtio-scsi controllers. */
static bool advise_iothread_device(const xmlNode *n) {
        if (is_elem(n, "disk"))
                return (attr_is(n, "device", "disk") || attr_is(n, "device", "")) &&
                       attr_is(child(n, "target"), "bus", "virtio");
        return is_elem(n, "controller") && attr_is(n, "type", "scsi") && attr_is(n, "model", "virtio-scsi");
}

static void advise_iothread_target(const xmlNode *n, char *buf, size_t len) {
        char v[32];

        if (is_elem(n, "disk"))
                snprintf(buf, len, "disk %s", attr(child(n, "target"), "dev", v, sizeof v)[0] ? v : "?");
        else
                snprintf(buf, len, "controller scsi%s", attr(n, "index", v, sizeof v)[0] ? v : "0");
}

/* The iothread ids the domain defines: <iothreadids> or 1..<iothreads>. */
static int advise_iothread_count(const xmlNode *dom) {
        xmlNode *ids = child(dom, "iothreadids");
        int n = 0;

        if (!ids)
                return (int) MIN(number_of(child(dom, "iothreads"), NULL, 0), (uint64_t) INT_MAX);
        FOREACH_CHILD(c, ids, "iothread")
                n = MAX(n, (int) MIN(number_of(c, "id", 0), (uint64_t) INT_MAX));
        return n;
}

/* Defines iothread id (and those below it) in <iothreads>/<iothreadids>. */
static void advise_iothread_define(struct advise *a, int id) {
        xmlNode *io = child(a->dom, "iothreads"), *ids = child(a->dom, "iothreadids");

        if (!io)
                io = insert_after(a->dom, "vcpu", xmlNewNode(NULL, BAD_CAST "iothreads"));
        if (number_of(io, NULL, 0) < (uint64_t) id) {
                char buf[16];

                snprintf(buf, sizeof buf, "%d", id);
                xmlNodeSetContent(io, BAD_CAST buf);
        }
        if (ids)
                set_attr_int(xmlNewChild(ids, NULL, BAD_CAST "iothread", NULL), "id", (unsigned) id);
}

/* Whether an earlier device in the list already uses iothread id. */
static bool advise_iothread_taken(xmlNode *const *devs, int upto, int id) {
        for (int i = 0; i < upto; i++)
                if (number_of(child(devs[i], "driver"), "iothread", 0) == (uint64_t) id)
                        return true;
        return false;
}

static void advise_iothread_one(struct advise *a, xmlNode *const *devs, int i, int *next) {
        uint64_t id = number_of(child(devs[i], "driver"), "iothread", 0);
        struct advise_finding *f;
        xmlNode *drv;
        char target[64];

        if (id > 0 && !advise_iothread_taken(devs, i, (int) id))
                return;
        advise_iothread_target(devs[i], target, sizeof target);
        f = advise_add(a, is_elem(devs[i], "disk") ? "disk-iothread" : "scsi-iothread", "warning",
                       target, SRC_IOTHREAD,
                       id ? xasprintf("shares iothread %llu with another disk: a busy disk holds "
                                      "back the other's I/O", (unsigned long long) id)
                          : xstrdup("served by the QEMU main loop: an iothread of its own keeps its I/O "
                                    "off the emulator thread and apart from the other disks"),
                       xasprintf("<iothreads>%d</iothreads> and <driver iothread='%d'/>", *next, *next));
        if (!a->apply)
                return;
        advise_iothread_define(a, *next);
        if (!(drv = child(devs[i], "driver"))) {
                drv = xmlNewChild(devs[i], NULL, BAD_CAST "driver", NULL);
                if (is_elem(devs[i], "disk"))
                        set_attr(drv, "name", "qemu");
        }
        set_attr_int(drv, "iothread", (unsigned) *next);
        (*next)++;
        advise_applied(a, f);
}

/* Each virtio disk and virtio-scsi controller its own iothread (the field
 * report's dedicatedIOThread), so iothreads=dedicated gives each its own PU. */
static void advise_iothreads(struct advise *a) {
        xmlNode *devices = child(a->dom, "devices");
        _cleanup_free_ xmlNode **devs = NULL;
        int n = 0, next = advise_iothread_count(a->dom) + 1;

        for (xmlNode *c = devices ? devices->children : NULL; c; c = c->next)
                n += advise_iothread_device(c);
        devs = xcalloc(n + 1, sizeof *devs);
        n = 0;
        for (xmlNode *c = devices ? devices->children : NULL; c; c = c->next)
                if (advise_iothread_device(c))
                        devs[n++] = c;
        for (int i = 0; i < n; i++)     /* above every id in use, defined or not */
                next = (int) MAX((uint64_t) next, MIN(number_of(child(devs[i], "driver"), "iothread", 0) + 1,
                                                     (uint64_t) INT_MAX));
        for (int i = 0; i < n; i++)
                advise_iothread_one(a, devs, i, &next);
}

/* ---- network ------------------------------------------------------------------ */

static void advise_net_target(const xmlNode *nic, int index, char *buf, size_t len) {
        char mac[32];

        if (attr(child(nic, "mac"), "address", mac, sizeof mac)[0])
                snprintf(buf, len, "interface %s", mac);
        else
                snprintf(buf, len, "interface %d", index);
}

/* Emulated NIC models; no <model>: libvirt's x86 default, rtl8139. */
static void advise_net_model(struct advise *a, const xmlNode *nic, const char *target) {
        char model[32];

        attr(child(nic, "model"), "type", model, sizeof model);
        if (!model[0] && !attr_is(a->dom, "type", "kvm") && !attr_is(a->dom, "type", "qemu"))
                return;         /* another hypervisor's default */
        if (streq(model, "virtio") || strncmp(model, "virtio-", 7) == 0 || attr_is(nic, "type", "hostdev"))
                return;
        advise_add(a, "net-model", "warning", target, SRC_SQL_FINAL,
                   xasprintf("emulated %s NIC: every packet is an emulated register access; the field "
                             "report used virtio-net (with multiqueue)", model[0] ? model : "rtl8139 (default)"),
                   xstrdup("install the virtio-net driver in the guest (NetKVM on Windows), then "
                           "<model type='virtio'/> (not applied: the guest loses its network without it)"));
}

/* The interface types whose virtio-net backend (tap, macvtap) takes queues. */
static bool advise_net_multiqueue_type(const xmlNode *nic) {
        static const char *const types[] = { "network", "bridge", "direct", "ethernet" };
        char type[32];

        attr(nic, "type", type, sizeof type);
        for (size_t i = 0; i < ELEMENTSOF(types); i++)
                if (streq(type, types[i]))
                        return true;
        return false;
}

/* A virtio NIC on a multi-vCPU guest: one queue pair per vCPU (as KubeVirt's
 * networkInterfaceMultiqueue), at most ADVISE_NET_MAX_QUEUES. The backend is
 * left to libvirt, which takes vhost when the host has /dev/vhost-net: naming
 * it refuses the start where the host has not. */
static void advise_net_queues(struct advise *a, xmlNode *nic, const char *target) {
        int want = MIN(a->facts->vcpus, ADVISE_NET_MAX_QUEUES);
        xmlNode *drv = child(nic, "driver");
        struct advise_finding *f;

        if (want < 2 || !attr_is(child(nic, "model"), "type", "virtio") || !advise_net_multiqueue_type(nic))
                return;
        if (number_of(drv, "queues", 1) >= (uint64_t) want)
                return;
        f = advise_add(a, "net-multiqueue", "warning", target, SRC_SQL_FINAL,
                       xasprintf("virtio NIC with one queue on %d vCPUs: all its traffic goes through one "
                                 "vCPU and one vhost thread; the field report enabled "
                                 "networkInterfaceMultiqueue (one queue pair per vCPU)", a->facts->vcpus),
                       xasprintf("<driver queues='%d'/> (safe for virtio guests: the driver uses what "
                                 "it is offered; libvirt takes vhost where the host has it)", want));
        if (!a->apply)
                return;
        set_attr_int(child_or_new(nic, "driver"), "queues", (unsigned) want);
        advise_applied(a, f);
}

static void advise_network(struct advise *a) {
        int i = 0;

        FOREACH_CHILD(nic, child(a->dom, "devices"), "interface") {
                char target[64];

                advise_net_target(nic, i++, target, sizeof target);
                advise_net_model(a, nic, target);
                advise_net_queues(a, nic, target);
        }
}

/* ---- display and serial console (dedicated guests) ------------------------- */

static bool advise_has_display(const xmlNode *dom) {
        xmlNode *devices = child(dom, "devices");

        if (child(devices, "graphics"))
                return true;
        FOREACH_CHILD(v, devices, "video")
                if (!attr_is(child(v, "model"), "type", "none"))
                        return true;
        return false;
}

static void advise_serial_console(struct advise *a) {
        xmlNode *devices = child(a->dom, "devices");
        struct advise_finding *f;
        xmlNode *serial, *console;

        if (child(devices, "serial") || child(devices, "console"))
                return;
        f = advise_add(a, "serial-console", "info", "serial", SRC_SQL_FINAL,
                       xstrdup("no serial console to reach the guest without a display "
                               "(the field report's autoattachSerialConsole)"),
                       xstrdup("<serial type='pty'/> and <console type='pty'/> (virsh console)"));
        if (!a->apply)
                return;
        serial = xmlNewChild(devices, NULL, BAD_CAST "serial", NULL);
        set_attr(serial, "type", "pty");
        console = xmlNewChild(devices, NULL, BAD_CAST "console", NULL);
        set_attr(console, "type", "pty");
        set_attr(xmlNewChild(console, NULL, BAD_CAST "target", NULL), "type", "serial");
        advise_applied(a, f);
}

static void advise_display(struct advise *a) {
        if (!advise_dedicated_cpu(a) || !advise_has_display(a->dom))
                return;
        advise_add(a, "display", "info", "graphics", SRC_SQL_FINAL,
                   xstrdup("a dedicated guest with an emulated display: QEMU keeps emulating and "
                           "redrawing it; the field report removed it (autoattachGraphicsDevice: false)"),
                   xstrdup("remove <graphics> and <video> (not applied: removes the console; use "
                           "the serial console, RDP or SSH)"));
        advise_serial_console(a);
}

/* ---- Hyper-V enlightenments (Windows guests) ---------------------------------- */

static const char *const advise_hyperv_features[] = {
        "relaxed", "vapic", "spinlocks", "vpindex", "runtime", "synic", "stimer", "frequencies", "tlbflush",
};

static bool advise_libosinfo_windows(const xmlNode *dom) {
        for (xmlNode *m = child(dom, "metadata"), *c = m ? m->children : NULL; c; c = c->next) {
                if (c->type != XML_ELEMENT_NODE || !xmlStrEqual(c->name, BAD_CAST "libosinfo"))
                        continue;
                for (xmlNode *os = c->children; os; os = os->next) {
                        _cleanup_xmlchar_ xmlChar *id = NULL;
                        if (os->type != XML_ELEMENT_NODE || !xmlStrEqual(os->name, BAD_CAST "os"))
                                continue;
                        id = xmlGetNoNsProp(os, BAD_CAST "id");
                        if (id && strstr((const char *) id, "microsoft.com/win"))
                                return true;
                }
        }
        return false;
}

static xmlNode *advise_hyperv_timer(const xmlNode *dom) {
        FOREACH_CHILD(t, child(dom, "clock"), "timer")
                if (attr_is(t, "name", "hypervclock"))
                        return t;
        return NULL;
}

static bool advise_is_windows(const xmlNode *dom) {
        if (child(child(dom, "features"), "hyperv") || advise_libosinfo_windows(dom))
                return true;
        return attr_is(child(dom, "clock"), "offset", "localtime") && advise_hyperv_timer(dom);
}

/* Missing enlightenments as "relaxed, vapic, ..." into buf; returns how many.
 * mode='passthrough' turns them all on; an explicit state='off' is respected. */
static int advise_hyperv_missing(const xmlNode *hv, char *buf, size_t len) {
        int n = 0;

        buf[0] = '\0';
        if (hv && attr_is(hv, "mode", "passthrough"))
                return 0;
        for (size_t i = 0; i < ELEMENTSOF(advise_hyperv_features); i++) {
                if (child(hv, advise_hyperv_features[i]))
                        continue;
                snprintf(buf + strlen(buf), len - strlen(buf), "%s%s", n ? ", " : "",
                         advise_hyperv_features[i]);
                n++;
        }
        return n;
}

static void advise_hyperv_add(xmlNode *dom) {
        xmlNode *hv = child(child(dom, "features"), "hyperv");

        if (!hv) {
                hv = xmlNewChild(child_or_new(dom, "features"), NULL, BAD_CAST "hyperv", NULL);
                set_attr(hv, "mode", "custom");
        }
        for (size_t i = 0; i < ELEMENTSOF(advise_hyperv_features); i++) {
                xmlNode *e;
                if (child(hv, advise_hyperv_features[i]))
                        continue;
                e = xmlNewChild(hv, NULL, BAD_CAST advise_hyperv_features[i], NULL);
                set_attr(e, "state", "on");
                if (streq(advise_hyperv_features[i], "spinlocks"))
                        set_attr(e, "retries", "8191");
        }
}

static void advise_hyperv_clock(struct advise *a) {
        struct advise_finding *f;
        xmlNode *clock, *t;

        if (advise_hyperv_timer(a->dom))
                return;
        f = advise_add(a, "hyperv-clock", "warning", "clock", SRC_SQL_HYPERV,
                       xstrdup("no hypervclock timer: Windows falls back to emulated timers; the "
                               "stimer enlightenment needs it"),
                       xstrdup("<clock><timer name='hypervclock' present='yes'/></clock>"));
        if (!a->apply)
                return;
        clock = child(a->dom, "clock");
        if (!clock) {
                clock = xmlNewChild(a->dom, NULL, BAD_CAST "clock", NULL);
                set_attr(clock, "offset", "utc");       /* libvirt's default, unchanged */
        }
        t = xmlNewChild(clock, NULL, BAD_CAST "timer", NULL);
        set_attr(t, "name", "hypervclock");
        set_attr(t, "present", "yes");
        advise_applied(a, f);
}

/* KVM implements the enlightenments: QEMU's TCG refuses some of them at start
 * ("kernel doesn't allow setting HyperV VP_INDEX"), so only KVM guests get them. */
static void advise_hyperv(struct advise *a) {
        char missing[256];
        struct advise_finding *f;

        if (!attr_is(a->dom, "type", "kvm") || !advise_is_windows(a->dom))
                return;
        if (advise_hyperv_missing(child(child(a->dom, "features"), "hyperv"), missing, sizeof missing) > 0) {
                f = advise_add(a, "hyperv", "warning", "features", SRC_SQL_HYPERV,
                               xasprintf("Windows guest without Hyper-V enlightenments (%s): enabling "
                                         "them took SQL Server from 38%% to 87%% of its TPM in a container",
                                         missing),
                               xasprintf("<hyperv mode='custom'> with %s", missing));
                if (a->apply) {
                        advise_hyperv_add(a->dom);
                        advise_applied(a, f);
                }
        }
        advise_hyperv_clock(a);
}

/* ---- CPU and memory (advisory only) ------------------------------------------- */

static void advise_cpu_mode(struct advise *a) {
        char mode[32];
        xmlNode *cpu = child(a->dom, "cpu");

        if (!attr_is(a->dom, "type", "kvm"))
                return;
        attr(cpu, "mode", mode, sizeof mode);
        if (streq(mode, "host-passthrough") || streq(mode, "maximum"))
                return;
        advise_add(a, "cpu-mode", streq(mode, "host-model") ? "info" : "warning", "cpu", SRC_SQL_FINAL,
                   xasprintf("cpu mode %s hides host CPU features from the guest; host-passthrough "
                             "(with hugepages and no balloon) brought SQL Server to 98%% of its TPM in a container",
                             mode[0] ? mode : "default"),
                   xstrdup("<cpu mode='host-passthrough'/> (not applied: blocks migration to "
                           "hosts with other CPUs)"));
}

static void advise_hugepages(struct advise *a) {
        uint64_t kib = a->facts->memory_kib;

        if (a->facts->hugepages || kib < ADVISE_HUGEPAGE_MIN_KIB)
                return;
        advise_add(a, "hugepages", "warning", "memory", SRC_SQL_FINAL,
                   xasprintf("dedicated %llu GiB guest on 4K pages: 1G hugepages cut TLB misses "
                             "(part of the last step to 98%% of its TPM in a container)",
                             (unsigned long long) (kib / 1048576)),
                   xstrdup("reserve 1G pages on the host, then <memoryBacking><hugepages><page "
                           "size='1' unit='G'/></hugepages></memoryBacking> (not applied: needs host pages)"));
}

static void advise_memballoon(struct advise *a) {
        xmlNode *b = child(child(a->dom, "devices"), "memballoon");

        if (!b || attr_is(b, "model", "none"))
                return;
        advise_add(a, "memballoon", "info", "memballoon", SRC_SQL_FINAL,
                   xstrdup("a balloon can take memory back from a dedicated guest; the field "
                           "report disabled it for consistent performance (autoattachMemBalloon: false)"),
                   xstrdup("<memballoon model='none'/> (not applied: removes the device)"));
}

static void advise_topology(struct advise *a) {
        xmlNode *t = child(child(a->dom, "cpu"), "topology");
        long long vcpus = (long long) number_of(child(a->dom, "vcpu"), NULL, 1);
        long long prod = t ? (long long) (number_of(t, "sockets", 1) * number_of(t, "dies", 1) *
                                          number_of(t, "cores", 1) * number_of(t, "threads", 1)) : 0;

        if (prod == vcpus)
                return;
        advise_add(a, "cpu-topology", "info", "cpu", SRC_SQL_FINAL,
                   t ? xasprintf("<topology> gives %lld vCPUs but the domain has %lld", prod, vcpus)
                     : xasprintf("no <topology> for %lld dedicated vCPUs: the guest sees sockets, "
                                 "not the cores and threads it is pinned to", vcpus),
                   xasprintf("<cpu><topology sockets='1' cores='%lld' threads='1'/></cpu> (or the "
                             "host's threads per core)", vcpus));
}

/* ---- the guest NUMA view of a placement that spans host nodes ---------------- */

#define ADVISE_MAX_CELLS 64

struct advise_cell {
        int node;                       /* host node index */
        hwloc_bitmap_t vcpus;           /* guest vCPU numbers */
        uint64_t kib;
};

struct advise_view {
        int ncell;
        struct advise_cell cell[ADVISE_MAX_CELLS];
};

static void advise_view_done(struct advise_view *v) {
        for (int i = 0; i < v->ncell; i++)
                hwloc_bitmap_free(v->cell[i].vcpus);
        v->ncell = 0;
}

static struct advise_cell *advise_view_cell(struct advise_view *v, int node) {
        for (int i = 0; i < v->ncell; i++)
                if (v->cell[i].node == node)
                        return &v->cell[i];
        if (v->ncell == ADVISE_MAX_CELLS)
                return NULL;
        v->cell[v->ncell] = (struct advise_cell) { .node = node, .vcpus = hwloc_bitmap_alloc() };
        if (!v->cell[v->ncell].vcpus)
                abort();
        return &v->cell[v->ncell++];
}

/* Cell memory: what the plan put on each node, else (memory not placed) in
 * proportion to the vCPUs; rounded down to align, the rest on the first cell.
 * Returns -ERANGE when a cell with vCPUs would get no memory. */
static int advise_view_memory(struct advise_view *v, const struct plan *p, uint64_t total, uint64_t align) {
        uint64_t placed = 0, sum = 0;

        for (int i = 0; p->node_mem_kib && i < v->ncell; i++)
                placed += p->node_mem_kib[v->cell[i].node];
        for (int i = 0; i < v->ncell; i++) {
                struct advise_cell *c = &v->cell[i];
                uint64_t share = placed ? (uint64_t) ((unsigned __int128) p->node_mem_kib[c->node] * total / placed)
                                        : total / (uint64_t) p->nvcpu * (uint64_t) hwloc_bitmap_weight(c->vcpus);

                c->kib = share / align * align;
                sum += c->kib;
        }
        if (sum > total)
                return -ERANGE;
        v->cell[0].kib += total - sum;
        for (int i = 0; i < v->ncell; i++)
                if (v->cell[i].kib == 0)
                        return -ERANGE;
        return 0;
}

/* One cell per host node the plan uses, in the order of their first vCPU. */
static int advise_view_build(const struct topo *t, const struct plan *p, uint64_t total,
                             struct advise_view *ret) {
        uint64_t align = policy_page_kib(p->page) ?: 2048;

        *ret = (struct advise_view) {};
        for (int i = 0; i < p->nvcpu; i++) {
                struct advise_cell *c = advise_view_cell(ret, topo_pu_node(t, p->vcpu_pu[i]));
                if (!c)
                        return -E2BIG;
                hwloc_bitmap_set(c->vcpus, (unsigned) i);
        }
        for (int n = 0; p->node_mem_kib && n < t->nnode; n++)
                if (p->node_mem_kib[n] > 0 && !advise_view_cell(ret, n))
                        return -E2BIG;
        return ret->ncell > 1 ? advise_view_memory(ret, p, total, align) : 0;
}

/* The cells the definition has now, compared with the view. */
static bool advise_view_matches(const xmlNode *numa, const struct advise_view *v) {
        int i = 0;

        FOREACH_CHILD(cell, numa, "cell") {
                char cpus[1024], mem[32];
                hwloc_bitmap_t b;
                uint64_t kib;
                bool same;

                if (i >= v->ncell || number_of(cell, "id", UINT64_MAX) != (uint64_t) i)
                        return false;
                attr(cell, "cpus", cpus, sizeof cpus);
                if (size_kib(cell, attr(cell, "memory", mem, sizeof mem), "cell", &kib, NULL, 0) < 0 ||
                    kib != v->cell[i].kib || !(b = hwloc_bitmap_alloc()))
                        return false;
                same = bitmap_parse_list(cpus, CPU_LIST_MAX, b) == 0 && hwloc_bitmap_isequal(b, v->cell[i].vcpus);
                hwloc_bitmap_free(b);
                if (!same)
                        return false;
                i++;
        }
        return i == v->ncell;
}

/* "vCPUs 0-3 and 8 GiB on host node 0, vCPUs 4-7 and 8 GiB on host node 1" */
static char *advise_view_describe(const struct topo *t, const struct advise_view *v) {
        char *s = xstrdup("");

        for (int i = 0; i < v->ncell; i++) {
                char *list = NULL, size[32], *next;

                hwloc_bitmap_list_asprintf(&list, v->cell[i].vcpus);
                next = xasprintf("%s%svCPUs %s and %s on host node %u", s, i ? ", " : "",
                                 list && *list ? list : "none", format_size_kib(v->cell[i].kib, size, sizeof size),
                                 t->nodes[v->cell[i].node].os);
                free(list);
                free(s);
                s = next;
        }
        return s;
}

static void advise_view_write(xmlNode *dom, const struct advise_view *v) {
        xmlNode *cpu = child(dom, "cpu"), *numa;

        if (!cpu)
                cpu = insert_after(dom, "features", xmlNewNode(NULL, BAD_CAST "cpu"));
        if ((numa = child(cpu, "numa"))) {
                xmlUnlinkNode(numa);
                xmlFreeNode(numa);
        }
        numa = xmlNewChild(cpu, NULL, BAD_CAST "numa", NULL);
        for (int i = 0; i < v->ncell; i++) {
                xmlNode *cell = xmlNewChild(numa, NULL, BAD_CAST "cell", NULL);
                char *list = NULL;

                set_attr_int(cell, "id", (unsigned) i);
                hwloc_bitmap_list_asprintf(&list, v->cell[i].vcpus);
                if (list && *list)
                        set_attr(cell, "cpus", list);
                free(list);
                set_attr_int(cell, "memory", v->cell[i].kib);
                set_attr(cell, "unit", "KiB");
        }
}

/* A what-if placement of this domain on req->topo, as the daemon would place it. */
static int advise_whatif(const struct advise *a, struct plan *ret, char reason[PLACEMENT_REASON_MAX]) {
        const struct topo *t = a->req->topo;
        struct request rq = {
                .vcpus = a->facts->vcpus, .policy = a->policy,
                .iothreads = advise_iothread_count(a->dom), .memory_kib = a->facts->memory_kib,
        };
        struct alloc *own = NULL;
        hwloc_bitmap_t reserved = NULL;
        int r;

        if (!a->req->alloc) {
                own = alloc_new(t);
                if (conf_reserved_cpus(a->req->conf, &reserved) < 0 || !reserved)
                        reserved = placement_default_reserved(t);
                alloc_reserve(own, t, reserved);
                hwloc_bitmap_free(reserved);
        }
        r = placement_place(t, own ? own : a->req->alloc, &rq, ret, reason);
        alloc_free(own);
        return r;
}

static void advise_numa_finding(struct advise *a, const struct advise_view *v, bool memnodes) {
        _cleanup_free_ char *where = advise_view_describe(a->req->topo, v);
        struct advise_finding *f;

        f = advise_add(a, "numa-cells", "warning", "cpu", SRC_SQL_FINAL,
                       xasprintf("the placement spans %d host nodes (%s) but the guest does not see "
                                 "them: its scheduler and allocator mix remote and local memory; the "
                                 "field report mirrored the host (guestMappingPassthrough)", v->ncell, where),
                       xasprintf("<cpu><numa> with %d <cell>s, one per host node%s", v->ncell,
                                 memnodes ? " (not applied: <numatune><memnode> refers to the old cells)" : ""));
        if (!a->apply || memnodes)
                return;
        advise_view_write(a->dom, v);
        advise_applied(a, f);
}

/* When did the checks below not run, in a->note. */
static bool advise_numa_checkable(struct advise *a, uint64_t *ret_total) {
        xmlNode *vcpu = child(a->dom, "vcpu"), *mem = child(a->dom, "memory");
        _cleanup_xmlchar_ xmlChar *text = mem ? xmlNodeGetContent(mem) : NULL;

        if (!advise_dedicated_cpu(a))
                return false;
        if (!a->req->topo)
                return snprintf(a->note, sizeof a->note, "guest NUMA view not checked: no host "
                                "topology (--topology FILE.xml)"), false;
        if (number_of(vcpu, "current", 0) && number_of(vcpu, "current", 0) != number_of(vcpu, NULL, 1))
                return snprintf(a->note, sizeof a->note, "guest NUMA view not checked: fewer vCPUs "
                                "online than defined"), false;
        if (!text || size_kib(mem, (const char *) text, "memory", ret_total, NULL, 0) < 0)
                return snprintf(a->note, sizeof a->note, "guest NUMA view not checked: no <memory>"), false;
        return true;
}

static void advise_numa(struct advise *a) {
        char reason[PLACEMENT_REASON_MAX] = "";
        struct plan whatif = {};
        const struct plan *p;
        struct advise_view v = {};
        uint64_t total;
        int r;

        if (!advise_numa_checkable(a, &total))
                return;
        p = a->req->plan;
        if (!p && advise_whatif(a, &whatif, reason) < 0) {
                snprintf(a->note, sizeof a->note, "guest NUMA view not checked: no placement (%s)", reason);
                return;
        }
        p = p ? p : &whatif;
        r = p->dedicated ? advise_view_build(a->req->topo, p, total, &v) : 0;
        if (r < 0)
                snprintf(a->note, sizeof a->note, "guest NUMA view not checked: %s",
                         r == -ERANGE ? "too little memory for one cell per node" : "too many nodes");
        else if (v.ncell > 1 && !advise_view_matches(child(child(a->dom, "cpu"), "numa"), &v))
                advise_numa_finding(a, &v, child(child(a->dom, "numatune"), "memnode") != NULL);
        advise_view_done(&v);
        plan_done(&whatif);
}

static void advise_dedicated(struct advise *a) {
        if (!advise_dedicated_cpu(a))
                return;
        advise_hugepages(a);
        advise_memballoon(a);
        advise_topology(a);
}

/* ---- entry ---------------------------------------------------------------------- */

/* Drops whitespace-only text, so the fixed definition comes out indented
 * throughout, new elements included. */
static void advise_strip_blanks(xmlNode *n) {
        xmlNode *c = n->children, *next;

        for (; c; c = next) {
                next = c->next;
                if (c->type == XML_TEXT_NODE && xmlIsBlankNode(c)) {
                        xmlUnlinkNode(c);
                        xmlFreeNode(c);
                } else if (c->type == XML_ELEMENT_NODE)
                        advise_strip_blanks(c);
        }
}

static char *advise_serialize(xmlDoc *doc, xmlNode *root) {
        xmlBuffer *buf = xmlBufferCreate();
        char *s;

        advise_strip_blanks(root);
        xmlNodeDump(buf, doc, root, 0, 1);
        s = xstrdup((const char *) xmlBufferContent(buf));
        xmlBufferFree(buf);
        return s;
}

/* Built-in defaults, the configuration, the metadata, then the options. */
static void advise_policy(const struct advise_request *req, const struct domxml *x, struct policy *ret) {
        conf_policy_for(req ? req->conf : NULL, x->name, x->has_policy ? &x->policy : NULL, ret);
        if (req && req->options && req->options->set)
                policy_merge(ret, req->options);
}

static void advise_run(struct advise *a) {
        advise_disks(a);
        advise_iothreads(a);
        advise_network(a);
        advise_hyperv(a);
        advise_cpu_mode(a);
        advise_dedicated(a);
        advise_display(a);
        advise_numa(a);
}

static void advise_result_fill(struct advise *a, xmlDoc *doc, struct advise_result *ret) {
        *ret = (struct advise_result) {
                .name = xstrdup(a->facts->name), .policy = a->policy,
                .findings = a->f, .nfinding = a->n, .napplied = a->napplied,
                .xml = a->apply ? advise_serialize(doc, a->dom) : NULL,
        };
        memcpy(ret->note, a->note, sizeof ret->note);
        for (size_t i = 0; i < a->n; i++) {
                ret->nwarning += streq(a->f[i].severity, "warning");
                ret->ninfo += streq(a->f[i].severity, "info");
        }
}

int advise_audit(const char *xml, size_t len, const struct advise_request *req,
                 struct advise_result *ret, char *err, size_t errlen) {
        static const struct advise_request none = {};
        _cleanup_xmldoc_ xmlDoc *doc = read_xml(xml, len, err, errlen);
        _cleanup_domxml_ struct domxml *facts = NULL;
        struct advise a = { .req = req ? req : &none, .apply = req && req->apply };

        if (!doc)
                return -EINVAL;
        a.dom = xmlDocGetRootElement(doc);
        if (domxml_read_root(a.dom, &facts, err, errlen) < 0)
                return -EINVAL;
        a.facts = facts;
        advise_policy(req, facts, &a.policy);
        advise_run(&a);
        advise_result_fill(&a, doc, ret);
        return (int) a.n;
}

void advise_result_done(struct advise_result *r) {
        if (!r)
                return;
        for (size_t i = 0; i < r->nfinding; i++) {
                free(r->findings[i].message);
                free(r->findings[i].fix);
        }
        free(r->findings);
        free(r->name);
        free(r->xml);
        *r = (struct advise_result) {};
}
