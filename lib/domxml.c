#include "config.h"

#include <errno.h>
#include <ctype.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <strings.h>
#include <libxml/parser.h>
#include <libxml/tree.h>

#include "kvmtune/domxml.h"
#include "domxml-priv.h"
#include "kvmtune/util.h"
#include "xmltree.h"

#define DOMXML_MAX_ITEMS 4096           /* vCPUs, iothreads, pins, hostdevs */

#define fail(err, errlen, ...) error_set((err), (errlen), -EINVAL, __VA_ARGS__)

/* ---- tree helpers: libvirt's own elements carry no namespace ---------------- */

/* Attribute without namespace, as a malloc'd string (xmlFree) or NULL. */
static xmlChar *attr(const xmlNode *n, const char *name) {
        return xmlGetNoNsProp(n, BAD_CAST name);
}

static char *attr_dup(const xmlNode *n, const char *name) {
        _cleanup_xmlchar_ xmlChar *v = attr(n, name);

        return v ? xstrdup((const char *) v) : NULL;
}

static char *xstrndup(const char *s, size_t n) {
        char *r = xmalloc(n + 1);

        memcpy(r, s, n);
        r[n] = '\0';
        return r;
}

/* Text content, trimmed of surrounding blanks, as a malloc'd string or NULL. */
static char *text_dup(const xmlNode *n) {
        _cleanup_xmlchar_ xmlChar *v = n ? xmlNodeGetContent(n) : NULL;
        const char *s, *e;

        if (!v)
                return NULL;
        for (s = (const char *) v; *s == ' ' || *s == '\t' || *s == '\n' || *s == '\r'; s++)
                ;
        for (e = s + strlen(s); e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\n' || e[-1] == '\r'); e--)
                ;
        return xstrndup(s, e - s);
}

/* ---- the policy element ------------------------------------------------------ */

static int policy_from_node(const xmlNode *n, struct policy *ret, char *err, size_t errlen) {
        struct policy p;

        policy_init_default(&p);
        p.source = POLICY_SOURCE_METADATA;
        for (const xmlAttr *a = n->properties; a; a = a->next) {
                _cleanup_xmlchar_ xmlChar *v = NULL;
                int r;

                if (a->ns)              /* someone else's attribute */
                        continue;
                v = xmlNodeListGetString(n->doc, a->children, 1);
                r = policy_set(&p, (const char *) a->name, v ? (const char *) v : "");
                if (r == -EINVAL)
                        return fail(err, errlen, "policy: invalid value \"%s\" for attribute %s",
                                    v ? (const char *) v : "", (const char *) a->name);
        }
        *ret = p;
        return 0;
}

int domxml_parse_policy(const char *xml, struct policy *ret, char *err, size_t errlen) {
        _cleanup_xmldoc_ xmlDoc *doc = read_xml(xml, xml ? strlen(xml) : 0, err, errlen);
        xmlNode *root;

        if (!doc)
                return -EINVAL;
        root = xmlDocGetRootElement(doc);
        if (!root || !xmlStrEqual(root->name, BAD_CAST "policy") ||
            (root->ns && !is_ns_elem(root, DOMXML_POLICY_NS, "policy")))
                return fail(err, errlen, "not a policy element in namespace %s", DOMXML_POLICY_NS);
        return policy_from_node(root, ret, err, errlen);
}

char *domxml_format_policy(const struct policy *p) {
        /* Bare element: virDomainSetMetadata() adds the namespace from its key/uri
         * arguments and fails if the element already declares that prefix. */
        static const struct {
                unsigned bit;
                const char *name;
        } keys[] = {
                { POLICY_KEY_CPU, "cpu" }, { POLICY_KEY_THREADS, "threads" },
                { POLICY_KEY_EMULATOR, "emulator" }, { POLICY_KEY_IOTHREADS, "iothreads" },
                { POLICY_KEY_NUMA, "numa" }, { POLICY_KEY_PAGE, "hugepages" },
                { POLICY_KEY_PLACEMENT, "placement" },
        };
        const char *values[ELEMENTSOF(keys)] = {
                policy_cpu_to_string(p->cpu), policy_threads_to_string(p->threads),
                policy_emulator_to_string(p->emulator), policy_iothreads_to_string(p->iothreads),
                policy_numa_to_string(p->numa), policy_page_to_string(p->page),
                policy_placement_to_string(p->placement),
        };
        struct strbuf b = {};

        strbuf_add(&b, "<policy");
        for (size_t i = 0; i < ELEMENTSOF(keys); i++)
                if (p->set & keys[i].bit)
                        strbuf_add(&b, " %s=\"%s\"", keys[i].name, values[i]);
        strbuf_add(&b, "/>");
        return b.s;
}

/* ---- the domain -------------------------------------------------------------- */

static int read_identity(const xmlNode *root, struct domxml *d, char *err, size_t errlen) {
        _cleanup_free_ char *uuid = text_dup(child(root, "uuid"));
        _cleanup_free_ char *id = attr_dup(root, "id");

        d->name = text_dup(child(root, "name"));
        if (!d->name || !*d->name)
                return fail(err, errlen, "domain has no <name>");
        if (uuid && strlen(uuid) != 36)
                return fail(err, errlen, "invalid <uuid> \"%s\"", uuid);
        if (uuid)
                memcpy(d->uuid, uuid, 37);
        d->type = attr_dup(root, "type");
        d->id = -1;
        if (id && safe_atoi(id, -1, INT32_MAX, &d->id) < 0)
                return fail(err, errlen, "invalid domain id \"%s\"", id);
        return 0;
}

static int read_vcpus(const xmlNode *root, struct domxml *d, char *err, size_t errlen) {
        xmlNode *n = child(root, "vcpu");
        _cleanup_free_ char *max = text_dup(n);
        _cleanup_free_ char *cur = n ? attr_dup(n, "current") : NULL;

        d->vcpus = 1;                   /* libvirt's default without <vcpu> */
        if (max && safe_atoi(max, 1, DOMXML_MAX_ITEMS, &d->vcpus) < 0)
                return fail(err, errlen, "invalid <vcpu> count \"%s\"", max);
        if (cur && safe_atoi(cur, 1, d->vcpus, &d->vcpus) < 0)
                return fail(err, errlen, "invalid <vcpu current=\"%s\">", cur);
        return 0;
}

static int iothread_id(const xmlNode *n, int *ret, char *err, size_t errlen) {
        _cleanup_free_ char *id = attr_dup(n, "id");

        if (!id || safe_atoi(id, 1, INT32_MAX, ret) < 0)
                return fail(err, errlen, "invalid <iothread id=\"%s\">", id ? id : "");
        return 0;
}

static int read_iothreads(const xmlNode *root, struct domxml *d, char *err, size_t errlen) {
        xmlNode *ids = child(root, "iothreadids");
        _cleanup_free_ char *count = text_dup(child(root, "iothreads"));
        int n = 0;

        if (ids) {
                FOREACH_CHILD(c, ids, "iothread")
                        n++;
        } else if (count && safe_atoi(count, 0, DOMXML_MAX_ITEMS, &n) < 0)
                return fail(err, errlen, "invalid <iothreads> count \"%s\"", count);
        if (n > DOMXML_MAX_ITEMS)
                return fail(err, errlen, "too many iothreads (%d)", n);
        d->iothread_ids = xcalloc(n, sizeof(int));
        for (int i = 0; !ids && i < n; i++)
                d->iothread_ids[i] = i + 1;
        d->niothread = n;
        if (!ids)
                return 0;
        n = 0;
        FOREACH_CHILD(c, ids, "iothread")
                if (iothread_id(c, &d->iothread_ids[n++], err, errlen) < 0)
                        return -EINVAL;
        return 0;
}

static int read_memory(const xmlNode *root, struct domxml *d, char *err, size_t errlen) {
        xmlNode *n = child(root, "currentMemory") ?: child(root, "memory");
        _cleanup_free_ char *v = text_dup(n);

        if (!n)
                return 0;
        return size_kib(n, v, (const char *) n->name, &d->memory_kib, err, errlen);
}

static int read_hugepages(const xmlNode *root, struct domxml *d, char *err, size_t errlen) {
        xmlNode *hp = child(child(root, "memoryBacking"), "hugepages");
        xmlNode *page = child(hp, "page");
        _cleanup_free_ char *size = page ? attr_dup(page, "size") : NULL;
        uint64_t kib;

        if (!hp)
                return 0;
        d->hugepages = true;
        if (!page)              /* the host's default size (Hugepagesize), resolved by the daemon */
                return 0;
        if (size_kib(page, size, "hugepages page", &kib, err, errlen) < 0)
                return -EINVAL;
        if (kib == 0 || kib > ULONG_MAX)
                return fail(err, errlen, "invalid hugepage size \"%s\"", size);
        d->page_kib = kib;
        return 0;
}

static char *node_serialize(xmlNode *n) {
        /* Copy into its own document so namespaces declared above it come along. */
        _cleanup_xmldoc_ xmlDoc *doc = xmlNewDoc(BAD_CAST "1.0");
        xmlBuffer *buf = xmlBufferCreate();
        xmlNode *copy;
        char *s;

        if (!doc || !buf || !(copy = xmlDocCopyNode(n, doc, 1)))
                abort();
        xmlDocSetRootElement(doc, copy);
        xmlNodeDump(buf, doc, copy, 0, 0);
        s = xstrdup((const char *) xmlBufferContent(buf));
        xmlBufferFree(buf);
        return s;
}

static int read_metadata(const xmlNode *root, struct domxml *d, char *err, size_t errlen) {
        xmlNode *md = child(root, "metadata");

        for (xmlNode *c = md ? md->children : NULL; c; c = c->next) {
                if (!d->has_policy && is_ns_elem(c, DOMXML_POLICY_NS, "policy")) {
                        if (policy_from_node(c, &d->policy, err, errlen) < 0)
                                return -EINVAL;
                        d->has_policy = true;
                } else if (!d->placement && is_ns_elem(c, DOMXML_PLACEMENT_NS, NULL))
                        d->placement = node_serialize(c);
        }
        return 0;
}

static int hex_attr(const xmlNode *n, const char *name, uint64_t max, uint64_t *ret) {
        _cleanup_free_ char *v = attr_dup(n, name);

        if (!v)
                return -ENOENT;
        if (safe_atox64(v, ret) < 0 || *ret > max)
                return -EINVAL;
        return 0;
}

static int pci_address(const xmlNode *addr, char ret[16], char *err, size_t errlen) {
        uint64_t dom = 0, bus, slot, fn;
        int r = hex_attr(addr, "domain", 0xffff, &dom);

        if ((r < 0 && r != -ENOENT) || hex_attr(addr, "bus", 0xff, &bus) < 0 ||
            hex_attr(addr, "slot", 0x1f, &slot) < 0 || hex_attr(addr, "function", 0x7, &fn) < 0)
                return fail(err, errlen, "invalid hostdev PCI address");
        snprintf(ret, 16, "%04" PRIx64 ":%02" PRIx64 ":%02" PRIx64 ".%" PRIx64, dom, bus, slot, fn);
        return 0;
}

static bool is_pci_hostdev(const xmlNode *h) {
        _cleanup_xmlchar_ xmlChar *mode = attr(h, "mode");
        _cleanup_xmlchar_ xmlChar *type = attr(h, "type");

        return type && xmlStrEqual(type, BAD_CAST "pci") && (!mode || xmlStrEqual(mode, BAD_CAST "subsystem"));
}

static int read_hostdevs(const xmlNode *root, struct domxml *d, char *err, size_t errlen) {
        xmlNode *devices = child(root, "devices");
        int n = 0;

        FOREACH_CHILD(h, devices, "hostdev")
                n++;
        if (n > DOMXML_MAX_ITEMS)
                return fail(err, errlen, "too many hostdevs (%d)", n);
        d->pci = xcalloc(n, sizeof(*d->pci));
        FOREACH_CHILD(h, devices, "hostdev") {
                xmlNode *addr = child(child(h, "source"), "address");

                if (!is_pci_hostdev(h) || !addr)
                        continue;
                if (pci_address(addr, d->pci[d->npci], err, errlen) < 0)
                        return -EINVAL;
                d->npci++;
        }
        return 0;
}

static int read_pins(const xmlNode *cputune, const char *elem, const char *idattr,
                     int *ret_n, struct domxml_pin **ret, char *err, size_t errlen) {
        int n = 0;

        FOREACH_CHILD(c, cputune, elem)
                n++;
        if (n > DOMXML_MAX_ITEMS)
                return fail(err, errlen, "too many <%s> (%d)", elem, n);
        *ret = xcalloc(n, sizeof(**ret));
        FOREACH_CHILD(c, cputune, elem) {
                _cleanup_free_ char *id = attr_dup(c, idattr);
                struct domxml_pin *p = &(*ret)[*ret_n];

                if (!id || safe_atoi(id, 0, INT32_MAX, &p->id) < 0)
                        return fail(err, errlen, "invalid <%s %s=\"%s\">", elem, idattr, id ? id : "");
                if (!(p->cpuset = attr_dup(c, "cpuset")))
                        return fail(err, errlen, "<%s %s=\"%s\"> has no cpuset", elem, idattr, id);
                (*ret_n)++;
        }
        return 0;
}

static int read_cputune(const xmlNode *root, struct domxml *d, char *err, size_t errlen) {
        xmlNode *ct = child(root, "cputune");
        xmlNode *emu = child(ct, "emulatorpin");

        if (emu)
                d->emulatorpin = attr_dup(emu, "cpuset");
        if (read_pins(ct, "vcpupin", "vcpu", &d->nvcpupin, &d->vcpupin, err, errlen) < 0)
                return -EINVAL;
        return read_pins(ct, "iothreadpin", "iothread", &d->niothreadpin, &d->iothreadpin, err, errlen);
}

static void read_numatune(const xmlNode *root, struct domxml *d) {
        xmlNode *mem = child(child(root, "numatune"), "memory");

        if (!mem)
                return;
        d->numatune_mode = attr_dup(mem, "mode") ?: xstrdup("strict");  /* libvirt's default */
        d->numatune_nodeset = attr_dup(mem, "nodeset");
}

static int read_domain(const xmlNode *root, struct domxml *d, char *err, size_t errlen) {
        if (read_identity(root, d, err, errlen) < 0 ||
            read_vcpus(root, d, err, errlen) < 0 ||
            read_iothreads(root, d, err, errlen) < 0 ||
            read_memory(root, d, err, errlen) < 0 ||
            read_hugepages(root, d, err, errlen) < 0 ||
            read_metadata(root, d, err, errlen) < 0 ||
            read_hostdevs(root, d, err, errlen) < 0 ||
            read_cputune(root, d, err, errlen) < 0)
                return -EINVAL;
        read_numatune(root, d);
        return 0;
}

int domxml_read_root(const xmlNode *root, struct domxml **ret, char *err, size_t errlen) {
        _cleanup_domxml_ struct domxml *d = NULL;

        if (root && root->ns && xmlStrEqual(root->name, BAD_CAST "domain"))
                return fail(err, errlen, "root element <domain> is in namespace %s, not libvirt's",
                            root->ns->href ? (const char *) root->ns->href : "");
        if (!is_elem(root, "domain"))
                return fail(err, errlen, "root element is <%s>, not <domain>",
                            root ? (const char *) root->name : "");
        d = xcalloc(1, sizeof(*d));
        if (read_domain(root, d, err, errlen) < 0)
                return -EINVAL;
        *ret = d;
        d = NULL;
        return 0;
}

int domxml_parse(const char *xml, size_t len, struct domxml **ret, char *err, size_t errlen) {
        _cleanup_xmldoc_ xmlDoc *doc = read_xml(xml, len, err, errlen);

        if (!doc)
                return -EINVAL;
        return domxml_read_root(xmlDocGetRootElement(doc), ret, err, errlen);
}

static void pins_free(struct domxml_pin *p, int n) {
        for (int i = 0; i < n; i++)
                free(p[i].cpuset);
        free(p);
}

struct domxml *domxml_free(struct domxml *d) {
        if (!d)
                return NULL;
        free(d->name);
        free(d->type);
        free(d->iothread_ids);
        free(d->placement);
        free(d->pci);
        pins_free(d->vcpupin, d->nvcpupin);
        free(d->emulatorpin);
        pins_free(d->iothreadpin, d->niothreadpin);
        free(d->numatune_mode);
        free(d->numatune_nodeset);
        free(d);
        return NULL;
}
