/* The placement record: what kvmtuned applied, kept in the domain's live
 * metadata (namespace urn:kvmtuned:placement:1), so a restarted daemon rebuilds
 * its allocations from libvirt without moving any running guest:
 *
 *   <placement cpu="dedicated" vcpus="0:4 1:6" idle="5" emulator="2"
 *              iothreads="1:2" nodes="0" mode="strict" node_mem="0:65536"
 *              memory_kib="65536" page="none"
 *              policy="cpu=dedicated threads=prefer emulator=isolate iothreads=shared numa=strict hugepages=none"/>
 *
 * The same record goes into the persistent definition with the pins (see
 * apply_persist): libvirt then applies them itself when it creates the
 * threads, and the next start adopts the record when its PUs are still free
 * and the policy it was made for is still the domain's.
 *
 * vcpus lists each vCPU's cpuset (one PU when dedicated); emulator and each
 * iothread are a PU list (dedicated), "shared" or "vcpus". CPU and node numbers
 * are the host's (os indexes). */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <libxml/parser.h>
#include <libxml/tree.h>

#include "daemon.h"
#include "kvmtune/domxml.h"
#include "kvmtune/log.h"
#include "kvmtune/util.h"

struct strbuf {
        char *s;
        size_t len;
};

static _printf_(2, 3) void sb_add(struct strbuf *b, const char *fmt, ...) {
        va_list ap;
        char *piece;
        size_t n;

        va_start(ap, fmt);
        if (vasprintf(&piece, fmt, ap) < 0)
                abort();
        va_end(ap);
        n = strlen(piece);
        b->s = xrealloc(b->s, b->len + n + 1);
        memcpy(b->s + b->len, piece, n + 1);
        b->len += n;
        free(piece);
}

static void sb_bitmap(struct strbuf *b, hwloc_const_bitmap_t m) {
        char *s = NULL;

        hwloc_bitmap_list_asprintf(&s, m);
        sb_add(b, "%s", s ? s : "");
        free(s);
}

static void sb_pus(struct strbuf *b, const struct topo *t, const int *pus, int n) {
        hwloc_bitmap_t m = topo_pus_to_bitmap(t, pus, n);

        sb_bitmap(b, m);
        hwloc_bitmap_free(m);
}

static void sb_place(struct strbuf *b, const struct topo *t, const struct place_set *s) {
        if (s->kind == PLACE_DEDICATED)
                sb_pus(b, t, s->pus, s->npu);
        else
                sb_add(b, "%s", s->kind == PLACE_VCPUS ? "vcpus" : "shared");
}

static void record_dedicated(struct strbuf *b, const struct topo *t, const struct domain *dm) {
        const struct plan *p = &dm->plan;

        sb_add(b, " idle=\"");
        sb_pus(b, t, p->idle_pus, p->nidle);
        sb_add(b, "\" emulator=\"");
        sb_place(b, t, &p->emulator);
        sb_add(b, "\" iothreads=\"");
        for (int i = 0; i < p->niothread && i < dm->niothread; i++) {
                sb_add(b, "%s%d:", i ? " " : "", dm->iothread_ids[i]);
                sb_place(b, t, &p->iothreads[i]);
        }
        sb_add(b, "\" nodes=\"");
        for (int i = 0; i < p->nnode; i++)
                sb_add(b, "%s%u", i ? "," : "", t->nodes[p->nodes[i]].os);
        sb_add(b, "\" node_mem=\"");
        for (int i = 0, k = 0; p->node_mem_kib && i < t->nnode; i++)
                if (p->node_mem_kib[i])
                        sb_add(b, "%s%u:%" PRIu64, k++ ? " " : "", t->nodes[i].os, p->node_mem_kib[i]);
        sb_add(b, "\" mode=\"%s\" memory_kib=\"%" PRIu64 "\" page=\"%s\"",
               policy_numa_to_string(p->numa), p->memory_kib, policy_page_to_string(p->page));
}

char *record_policy(const struct policy *p) {
        return xasprintf("cpu=%s threads=%s emulator=%s iothreads=%s numa=%s hugepages=%s",
                         policy_cpu_to_string(p->cpu), policy_threads_to_string(p->threads),
                         policy_emulator_to_string(p->emulator), policy_iothreads_to_string(p->iothreads),
                         policy_numa_to_string(p->numa), policy_page_to_string(p->page));
}

char *record_format(const struct topo *t, const struct domain *dm) {
        _cleanup_free_ char *policy = record_policy(&dm->policy);
        struct strbuf b = {};

        sb_add(&b, "<placement cpu=\"%s\" vcpus=\"", dm->placed && dm->plan.dedicated ? "dedicated" : "shared");
        for (int i = 0; i < dm->pins.nvcpu; i++) {
                sb_add(&b, "%s%d:", i ? " " : "", i);
                sb_bitmap(&b, dm->pins.vcpu[i]);
        }
        sb_add(&b, "\"");
        if (dm->placed && dm->plan.dedicated)
                record_dedicated(&b, t, dm);
        sb_add(&b, " policy=\"%s\"/>", policy);
        return b.s;
}

int record_store(struct daemon *d, virDomainPtr dom, const struct domain *dm, unsigned flags) {
        _cleanup_free_ char *xml = record_format(d->topo, dm);

        if (virDomainSetMetadata(dom, VIR_DOMAIN_METADATA_ELEMENT, xml, PLACEMENT_RECORD_KEY,
                                 DOMXML_PLACEMENT_NS, flags) < 0)
                return -EIO;
        return 0;
}

/* ---- parsing ------------------------------------------------------------------ */

static char *rec_attr(xmlNode *n, const char *name) {
        xmlChar *v = xmlGetProp(n, BAD_CAST name);
        char *r = v ? xstrdup((const char *)v) : NULL;

        xmlFree(v);
        return r;
}

/* "2,4-5" -> PU indexes; every CPU must exist on this host. */
static int rec_pus(const struct topo *t, const char *list, int **ret, int *ret_n) {
        hwloc_bitmap_t m = hwloc_bitmap_alloc();
        int n = 0, *pus, cpu, r = 0;

        if (hwloc_bitmap_list_sscanf(m, list) < 0 || hwloc_bitmap_weight(m) < 0) {
                hwloc_bitmap_free(m);
                return -EINVAL;
        }
        pus = xcalloc(hwloc_bitmap_weight(m) + 1, sizeof *pus);
        hwloc_bitmap_foreach_begin(cpu, m) {
                int pu = topo_pu_by_os(t, cpu);
                if (pu < 0)
                        r = -EINVAL;
                pus[n++] = pu;
        } hwloc_bitmap_foreach_end();
        hwloc_bitmap_free(m);
        if (r < 0) {
                free(pus);
                return r;
        }
        *ret = pus;
        *ret_n = n;
        return 0;
}

static int rec_place(const struct topo *t, const char *v, struct place_set *ret) {
        *ret = (struct place_set){ .kind = PLACE_SHARED };
        if (streq(v, "shared"))
                return 0;
        if (streq(v, "vcpus")) {
                ret->kind = PLACE_VCPUS;
                return 0;
        }
        ret->kind = PLACE_DEDICATED;
        return rec_pus(t, v, &ret->pus, &ret->npu);
}

/* "0:0-1 1:3" -> one bitmap per entry, in order. */
static int rec_vcpus(const char *v, struct pinset *ret) {
        _cleanup_free_ char *copy = xstrdup(v);
        char *save = NULL;

        for (char *tok = strtok_r(copy, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
                char *colon = strchr(tok, ':');
                hwloc_bitmap_t m;

                if (!colon || atoi(tok) != ret->nvcpu)
                        return -EINVAL;
                m = hwloc_bitmap_alloc();
                if (hwloc_bitmap_list_sscanf(m, colon + 1) < 0) {
                        hwloc_bitmap_free(m);
                        return -EINVAL;
                }
                ret->vcpu = xrealloc(ret->vcpu, (ret->nvcpu + 1) * sizeof *ret->vcpu);
                ret->vcpu[ret->nvcpu++] = m;
        }
        return 0;
}

static int rec_iothreads(const struct topo *t, const char *v, struct plan *p) {
        _cleanup_free_ char *copy = xstrdup(v);
        char *save = NULL;

        for (char *tok = strtok_r(copy, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
                char *colon = strchr(tok, ':');

                if (!colon)
                        return -EINVAL;
                p->iothreads = xrealloc(p->iothreads, (p->niothread + 1) * sizeof *p->iothreads);
                if (rec_place(t, colon + 1, &p->iothreads[p->niothread]) < 0)
                        return -EINVAL;
                p->niothread++;
        }
        return 0;
}

static int rec_nodes(const struct topo *t, const char *v, struct plan *p) {
        _cleanup_free_ char *copy = xstrdup(v);
        char *save = NULL;

        for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
                int node = topo_node_by_os(t, (unsigned)atoi(tok));

                if (node < 0 || p->nnode >= (int)ELEMENTSOF(p->nodes))
                        return -EINVAL;
                p->nodes[p->nnode++] = node;
        }
        return 0;
}

static int rec_node_mem(const struct topo *t, const char *v, struct plan *p) {
        _cleanup_free_ char *copy = xstrdup(v);
        char *save = NULL;

        p->node_mem_kib = xcalloc(t->nnode, sizeof *p->node_mem_kib);
        for (char *tok = strtok_r(copy, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
                char *colon = strchr(tok, ':');
                int node = topo_node_by_os(t, (unsigned)atoi(tok));

                if (!colon || node < 0)
                        return -EINVAL;
                p->node_mem_kib[node] = strtoull(colon + 1, NULL, 10);
        }
        return 0;
}

struct rec_attrs {
        char *cpu, *vcpus, *idle, *emulator, *iothreads, *nodes, *node_mem, *mode, *memory, *page, *policy;
};

static void rec_attrs_done(struct rec_attrs *a) {
        free(a->cpu); free(a->vcpus); free(a->idle); free(a->emulator); free(a->iothreads);
        free(a->nodes); free(a->node_mem); free(a->mode); free(a->memory); free(a->page);
        free(a->policy);
}

static int rec_read_attrs(const char *xml, struct rec_attrs *a) {
        xmlDoc *doc = xmlReadMemory(xml, strlen(xml), "placement.xml", NULL,
                                    XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING);
        xmlNode *root = doc ? xmlDocGetRootElement(doc) : NULL;

        if (!root || !xmlStrEqual(root->name, BAD_CAST "placement")) {
                if (doc)
                        xmlFreeDoc(doc);
                return -EINVAL;
        }
        *a = (struct rec_attrs){
                rec_attr(root, "cpu"), rec_attr(root, "vcpus"), rec_attr(root, "idle"),
                rec_attr(root, "emulator"), rec_attr(root, "iothreads"), rec_attr(root, "nodes"),
                rec_attr(root, "node_mem"), rec_attr(root, "mode"), rec_attr(root, "memory_kib"),
                rec_attr(root, "page"), rec_attr(root, "policy"),
        };
        xmlFreeDoc(doc);
        return a->cpu && a->vcpus ? 0 : -EINVAL;
}

static int rec_plan(const struct topo *t, const struct rec_attrs *a, const struct pinset *pins,
                    struct plan *p) {
        int numa, page;

        if (!a->emulator || !a->iothreads || !a->nodes || !a->mode || !a->page)
                return -EINVAL;
        numa = policy_numa_from_string(a->mode);
        page = policy_page_from_string(a->page);
        if (numa < 0 || page < 0)
                return -EINVAL;
        *p = (struct plan){ .dedicated = true, .numa = numa, .page = page,
                            .memory_kib = a->memory ? strtoull(a->memory, NULL, 10) : 0 };
        p->nvcpu = pins->nvcpu;
        p->vcpu_pu = xcalloc(pins->nvcpu + 1, sizeof *p->vcpu_pu);
        for (int i = 0; i < pins->nvcpu; i++) {
                if (hwloc_bitmap_weight(pins->vcpu[i]) != 1)
                        return -EINVAL;
                p->vcpu_pu[i] = topo_pu_by_os(t, hwloc_bitmap_first(pins->vcpu[i]));
                if (p->vcpu_pu[i] < 0)
                        return -EINVAL;
        }
        if ((a->idle && *a->idle && rec_pus(t, a->idle, &p->idle_pus, &p->nidle) < 0) ||
            rec_place(t, a->emulator, &p->emulator) < 0 || rec_iothreads(t, a->iothreads, p) < 0 ||
            rec_nodes(t, a->nodes, p) < 0 || rec_node_mem(t, a->node_mem ? a->node_mem : "", p) < 0)
                return -EINVAL;
        return 0;
}

int record_parse(const struct topo *t, const char *xml, bool *ret_dedicated,
                 struct plan *ret_plan, struct pinset *ret_pins) {
        struct rec_attrs a = {};
        struct pinset pins = {};
        struct plan p = {};
        bool dedicated;
        int r;

        r = rec_read_attrs(xml, &a);
        if (r >= 0)
                r = rec_vcpus(a.vcpus, &pins);
        dedicated = r >= 0 && streq(a.cpu, "dedicated");
        if (r >= 0 && dedicated)
                r = rec_plan(t, &a, &pins, &p);
        rec_attrs_done(&a);
        if (r < 0) {
                plan_done(&p);
                pinset_done(&pins);
                return r;
        }
        *ret_dedicated = dedicated;
        *ret_plan = p;
        *ret_pins = pins;
        return 0;
}

bool record_is_dedicated(const char *xml) {
        struct rec_attrs a = {};
        bool dedicated;

        if (!xml || rec_read_attrs(xml, &a) < 0)
                return false;
        dedicated = streq(a.cpu, "dedicated");
        rec_attrs_done(&a);
        return dedicated;
}

bool record_policy_matches(const char *xml, const struct policy *p) {
        struct rec_attrs a = {};
        _cleanup_free_ char *want = record_policy(p);
        bool match;

        if (rec_read_attrs(xml, &a) < 0)
                return false;
        match = !a.policy || streq(a.policy, want);     /* older records have none */
        rec_attrs_done(&a);
        return match;
}
