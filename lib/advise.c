/* Domain definition audit (include/kvmtune/advise.h). Reads the libxml2 tree,
 * records findings, and for the safe ones edits the tree in place when asked. */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <libxml/parser.h>
#include <libxml/tree.h>

#include "kvmtune/advise.h"
#include "kvmtune/util.h"
#include "xmltree.h"

#define ADVISE_PARSE_FLAGS (XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING | XML_PARSE_NOCDATA)
#define ADVISE_MAX_FINDINGS 1024
#define ADVISE_HUGEPAGE_MIN_KIB (4ull * 1024 * 1024)

static inline void xmlFreeDocp(xmlDoc **d) { if (*d) xmlFreeDoc(*d); }
static inline void xmlFreep(xmlChar **s) { if (*s) xmlFree(*s); }
#define _cleanup_xmlchar_ _cleanup_(xmlFreep)

struct advise {
        xmlNode *dom;
        const struct policy *policy;
        bool apply;
        struct advise_finding *f;
        size_t n;
        int napplied;
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

/* Integer text content, or def when absent or not a number. */
static long long text_ll(const xmlNode *n, long long def) {
        _cleanup_xmlchar_ xmlChar *v = n ? xmlNodeGetContent(n) : NULL;
        char *end;
        long long x;

        if (!v)
                return def;
        errno = 0;
        x = strtoll((const char *) v, &end, 10);
        while (*end == ' ' || *end == '\n' || *end == '\t')
                end++;
        return errno || end == (char *) v || *end ? def : x;
}

/* ---- findings ------------------------------------------------------------------ */

static struct advise_finding *advise_add(struct advise *a, const char *id, const char *severity,
                                         const char *target, char *message, char *fix) {
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
        advise_add(a, "disk-bus", scsi ? "info" : "warning", d->target,
                   xasprintf("emulated %s bus: virtio-blk measured 45k vs 28k random 4K write IOPS "
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
        f = advise_add(a, "disk-cache", "warning", d->target,
                       xasprintf("cache=%s goes through the host page cache: raw/qcow2 with "
                                 "cache=none,io=native measured 2-3x block write throughput",
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
        f = advise_add(a, "disk-io", "warning", d->target,
                       xasprintf("io=%s with a %s image: io=native (with cache=none) measured "
                                 "~2.8x rewrite throughput and lower latency",
                                 d->io[0] ? d->io : "threads", d->format),
                       xstrdup("<driver cache='none' io='native'/>"));
        if (a->apply && streq(d->cache, "none")) {
                set_attr(d->driver, "io", "native");
                advise_applied(a, f);
        }
}

/* Makes sure the domain has at least one iothread for iothread='1'. */
static void advise_ensure_iothreads(struct advise *a) {
        xmlNode *io = child(a->dom, "iothreads");
        xmlNode *vcpu;

        if (io && text_ll(io, 0) >= 1)
                return;
        if (io) {
                xmlNodeSetContent(io, BAD_CAST "1");
                return;
        }
        io = xmlNewNode(NULL, BAD_CAST "iothreads");
        xmlNodeSetContent(io, BAD_CAST "1");
        vcpu = child(a->dom, "vcpu");
        if (vcpu)
                xmlAddNextSibling(vcpu, io);
        else
                xmlAddChild(a->dom, io);
}

static void advise_disk_iothread(struct advise *a, struct advise_disk *d) {
        char buf[16];
        struct advise_finding *f;

        if (!streq(d->bus, "virtio") || attr(d->driver, "iothread", buf, sizeof buf)[0])
                return;
        f = advise_add(a, "disk-iothread", "warning", d->target,
                       xstrdup("virtio disk served by the QEMU main loop: a dedicated iothread keeps "
                               "disk I/O off the emulator thread (gains grow with several busy disks)"),
                       xstrdup("<iothreads>1</iothreads> and <driver iothread='1'/>"));
        if (a->apply) {
                advise_ensure_iothreads(a);
                set_attr(advise_disk_driver(d), "iothread", "1");
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
                advise_disk_iothread(a, &d);
        }
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
        f = advise_add(a, "hyperv-clock", "warning", "clock",
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

static void advise_hyperv(struct advise *a) {
        char missing[256];
        struct advise_finding *f;

        if (!advise_is_windows(a->dom))
                return;
        if (advise_hyperv_missing(child(child(a->dom, "features"), "hyperv"), missing, sizeof missing) > 0) {
                f = advise_add(a, "hyperv", "warning", "features",
                               xasprintf("Windows guest without Hyper-V enlightenments (%s): enabling "
                                         "them took SQL Server from 38%% to 87%% of bare-metal TPM",
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
        advise_add(a, "cpu-mode", streq(mode, "host-model") ? "info" : "warning", "cpu",
                   xasprintf("cpu mode %s hides host CPU features from the guest; host-passthrough "
                             "(with hugepages and no balloon) brought SQL Server to 98%% of bare metal",
                             mode[0] ? mode : "default"),
                   xstrdup("<cpu mode='host-passthrough'/> (not applied: blocks migration to "
                           "hosts with other CPUs)"));
}

/* KiB of a libvirt memory element (unit attribute, default KiB); 0 when unknown. */
static unsigned long long advise_memory_kib(const xmlNode *dom) {
        static const struct { const char *unit; unsigned long long mul, div; } units[] = {
                { "", 1, 1 }, { "k", 1, 1 }, { "KiB", 1, 1 }, { "b", 1, 1024 }, { "bytes", 1, 1024 },
                { "KB", 1000, 1024 }, { "M", 1024, 1 }, { "MiB", 1024, 1 }, { "MB", 1000000, 1024 },
                { "G", 1048576, 1 }, { "GiB", 1048576, 1 }, { "GB", 1000000000, 1024 },
                { "T", 1073741824, 1 }, { "TiB", 1073741824, 1 },
        };
        xmlNode *m = child(dom, "memory");
        long long v = text_ll(m, -1);
        char unit[16];

        if (v <= 0 || v > LLONG_MAX / 1073741824)
                return 0;
        attr(m, "unit", unit, sizeof unit);
        for (size_t i = 0; i < ELEMENTSOF(units); i++)
                if (streq(units[i].unit, unit))
                        return (unsigned long long) v * units[i].mul / units[i].div;
        return 0;
}

static void advise_hugepages(struct advise *a, unsigned long long kib) {
        if (child(child(a->dom, "memoryBacking"), "hugepages") || kib < ADVISE_HUGEPAGE_MIN_KIB)
                return;
        advise_add(a, "hugepages", "warning", "memory",
                   xasprintf("dedicated %llu GiB guest on 4K pages: 1G hugepages cut TLB misses "
                             "(part of the last step to 98%% of bare-metal TPM)", kib / 1048576),
                   xstrdup("reserve 1G pages on the host, then <memoryBacking><hugepages><page "
                           "size='1' unit='G'/></hugepages></memoryBacking> (not applied: needs host pages)"));
}

static void advise_memballoon(struct advise *a) {
        xmlNode *b = child(child(a->dom, "devices"), "memballoon");

        if (!b || attr_is(b, "model", "none"))
                return;
        advise_add(a, "memballoon", "info", "memballoon",
                   xstrdup("a balloon can take memory back from a dedicated guest; the field "
                           "report disabled it for consistent performance"),
                   xstrdup("<memballoon model='none'/> (not applied: removes the device)"));
}

static void advise_topology(struct advise *a) {
        xmlNode *t = child(child(a->dom, "cpu"), "topology");
        long long vcpus = text_ll(child(a->dom, "vcpu"), 1);
        char s[16], c[16], th[16];
        long long prod;

        attr(t, "sockets", s, sizeof s);
        attr(t, "cores", c, sizeof c);
        attr(t, "threads", th, sizeof th);
        prod = t ? atoll(s[0] ? s : "1") * atoll(c[0] ? c : "1") * atoll(th[0] ? th : "1") : 0;
        if (prod == vcpus)
                return;
        advise_add(a, "cpu-topology", "info", "cpu",
                   t ? xasprintf("<topology> gives %lld vCPUs but the domain has %lld", prod, vcpus)
                     : xasprintf("no <topology> for %lld dedicated vCPUs: the guest sees sockets, "
                                 "not the cores and threads it is pinned to", vcpus),
                   xasprintf("<cpu><topology sockets='1' cores='%lld' threads='1'/></cpu> (or the "
                             "host's threads per core)", vcpus));
}

static void advise_dedicated(struct advise *a) {
        if (!a->policy || a->policy->cpu != POLICY_CPU_DEDICATED)
                return;
        advise_hugepages(a, advise_memory_kib(a->dom));
        advise_memballoon(a);
        advise_topology(a);
}

/* ---- entry ---------------------------------------------------------------------- */

static char *advise_serialize(xmlDoc *doc, xmlNode *root) {
        xmlBuffer *buf = xmlBufferCreate();
        char *s;

        xmlNodeDump(buf, doc, root, 0, 0);
        s = xstrdup((const char *) xmlBufferContent(buf));
        xmlBufferFree(buf);
        return s;
}

static int advise_parse(const char *xml, size_t len, xmlDoc **ret, char *err, size_t errlen) {
        xmlDoc *doc;
        xmlNode *root;

        if (!xml || len == 0)
                return error_set(err, errlen, -EINVAL, "empty domain XML");
        if (len > ADVISE_MAX_XML)
                return error_set(err, errlen, -EINVAL, "domain XML over %u bytes", ADVISE_MAX_XML);
        doc = xmlReadMemory(xml, (int) len, "domain.xml", NULL, ADVISE_PARSE_FLAGS);
        if (!doc)
                return error_set(err, errlen, -EINVAL, "domain XML is not well-formed");
        root = xmlDocGetRootElement(doc);
        if (!is_elem(root, "domain")) {
                xmlFreeDoc(doc);
                return error_set(err, errlen, -EINVAL, "not a <domain> definition");
        }
        *ret = doc;
        return 0;
}

int advise_audit(const char *xml, size_t len, const struct policy *policy, bool apply,
                 struct advise_result *ret, char *err, size_t errlen) {
        _cleanup_(xmlFreeDocp) xmlDoc *doc = NULL;
        struct advise a = { .policy = policy, .apply = apply };
        int r = advise_parse(xml, len, &doc, err, errlen);

        if (r < 0)
                return r;
        a.dom = xmlDocGetRootElement(doc);
        advise_disks(&a);
        advise_hyperv(&a);
        advise_cpu_mode(&a);
        advise_dedicated(&a);
        *ret = (struct advise_result) {
                .findings = a.f, .nfinding = a.n, .napplied = a.napplied,
                .xml = apply ? advise_serialize(doc, a.dom) : NULL,
        };
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
        free(r->xml);
        *r = (struct advise_result) {};
}
