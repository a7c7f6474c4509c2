/* The placement record: what kvmtuned applied, kept in the domain's live
 * metadata (namespace urn:kvmtuned:placement:1), so a restarted daemon rebuilds
 * its allocations from libvirt without moving any running guest:
 *
 *   <placement cpu="dedicated" vcpus="0:4 1:6" idle="5" emulator="2"
 *              iothreads="1:2" nodes="0" mode="strict" node_mem="0:65536"
 *              memory_kib="65536" page="none"
 *              policy="cpu=dedicated threads=prefer emulator=isolate iothreads=shared
 *                      numa=strict hugepages=none placement=best-effort"/>
 *
 * The same record goes into the persistent definition with the pins (see
 * apply_persist): libvirt then applies them itself when it creates the
 * threads, and the next start adopts the record when its PUs are still free
 * and the policy it was made for is still the domain's.
 *
 * vcpus lists each vCPU's cpuset (one PU when dedicated); emulator and each
 * iothread are a PU list (dedicated), "shared" or "vcpus". CPU and node numbers
 * are the host's (os indexes). Records written before the placement key was
 * recorded name no placement= (it reads as best-effort), older ones no policy. */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <libxml/parser.h>
#include <libxml/tree.h>

#include "kvmtune/record.h"
#include "kvmtune/util.h"

#define sb_add strbuf_add

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

static void record_dedicated(struct strbuf *b, const struct topo *t, const struct plan *p,
                             const struct pinset *pins) {
        sb_add(b, " idle=\"");
        sb_pus(b, t, p->idle_pus, p->nidle);
        sb_add(b, "\" emulator=\"");
        sb_place(b, t, &p->emulator);
        sb_add(b, "\" iothreads=\"");
        for (int i = 0; i < p->niothread && i < pins->niothread; i++) {
                sb_add(b, "%s%d:", i ? " " : "", pins->iothread_id[i]);
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

char *record_format(const struct topo *t, const struct plan *dedicated, const struct pinset *pins,
                    const struct policy *policy) {
        _cleanup_free_ char *text = policy_format_line(policy);
        struct strbuf b = {};

        sb_add(&b, "<placement cpu=\"%s\" vcpus=\"", dedicated ? "dedicated" : "shared");
        for (int i = 0; i < pins->nvcpu; i++) {
                sb_add(&b, "%s%d:", i ? " " : "", i);
                sb_bitmap(&b, pins->vcpu[i]);
        }
        sb_add(&b, "\"");
        if (dedicated)
                record_dedicated(&b, t, dedicated, pins);
        sb_add(&b, " policy=\"%s\"/>", text);
        return b.s;
}

/* ---- parsing ------------------------------------------------------------------ */

static char *rec_attr(xmlNode *n, const char *name) {
        xmlChar *v = xmlGetProp(n, BAD_CAST name);
        char *r = v ? xstrdup((const char *)v) : NULL;

        xmlFree(v);
        return r;
}

/* "2,4-5" -> PU indexes; every CPU must exist on this host (else -ENXIO). */
static int rec_pus(const struct topo *t, const char *list, int **ret, int *ret_n) {
        hwloc_bitmap_t m = hwloc_bitmap_alloc();
        int n = 0, *pus, cpu, r = 0;

        if (bitmap_parse_list(list, CPU_LIST_MAX, m) < 0) {
                hwloc_bitmap_free(m);
                return -EINVAL;
        }
        pus = xcalloc(hwloc_bitmap_weight(m) + 1, sizeof *pus);
        hwloc_bitmap_foreach_begin(cpu, m) {
                int pu = topo_pu_by_os(t, cpu);
                if (pu < 0)
                        r = -ENXIO;
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

/* A node by its os index: -EINVAL when not a number, -ENXIO when this host
 * has no such node. */
static int rec_node(const struct topo *t, const char *s) {
        int os, node;

        if (safe_atoi(s, 0, INT32_MAX, &os) < 0)
                return -EINVAL;
        node = topo_node_by_os(t, (unsigned)os);
        return node < 0 ? -ENXIO : node;
}

/* "0:0-1 1:3" -> one bitmap per entry, in order. */
static int rec_vcpus(const char *v, struct pinset *ret) {
        _cleanup_free_ char *copy = xstrdup(v);
        char *save = NULL;

        for (char *tok = strtok_r(copy, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
                char *colon = strchr(tok, ':');
                hwloc_bitmap_t m;
                int n;

                if (!colon)
                        return -EINVAL;
                *colon = '\0';
                if (safe_atoi(tok, 0, ret->nvcpu, &n) < 0 || n != ret->nvcpu)
                        return -EINVAL;
                m = hwloc_bitmap_alloc();
                if (bitmap_parse_list(colon + 1, CPU_LIST_MAX, m) < 0) {
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
                int r;

                if (!colon)
                        return -EINVAL;
                p->iothreads = xrealloc(p->iothreads, (p->niothread + 1) * sizeof *p->iothreads);
                r = rec_place(t, colon + 1, &p->iothreads[p->niothread]);
                p->niothread++;
                if (r < 0)
                        return r;
        }
        return 0;
}

static int rec_nodes(const struct topo *t, const char *v, struct plan *p) {
        _cleanup_free_ char *copy = xstrdup(v);
        char *save = NULL;

        for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
                int node = rec_node(t, tok);

                if (node < 0)
                        return node;
                if (p->nnode >= (int)ELEMENTSOF(p->nodes))
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
                int node;

                if (!colon)
                        return -EINVAL;
                *colon = '\0';
                node = rec_node(t, tok);
                if (node < 0)
                        return node;
                if (safe_atou64(colon + 1, &p->node_mem_kib[node]) < 0)
                        return -EINVAL;
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

/* The PU lists and nodes of a dedicated record: the first error wins. */
static int rec_plan_sets(const struct topo *t, const struct rec_attrs *a, struct plan *p) {
        int r = a->idle && *a->idle ? rec_pus(t, a->idle, &p->idle_pus, &p->nidle) : 0;

        if (r >= 0)
                r = rec_place(t, a->emulator, &p->emulator);
        if (r >= 0)
                r = rec_iothreads(t, a->iothreads, p);
        if (r >= 0)
                r = rec_nodes(t, a->nodes, p);
        if (r >= 0)
                r = rec_node_mem(t, a->node_mem ? a->node_mem : "", p);
        return r;
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
        *p = (struct plan){ .dedicated = true, .numa = numa, .page = page };
        if (a->memory && safe_atou64(a->memory, &p->memory_kib) < 0)
                return -EINVAL;
        p->nvcpu = pins->nvcpu;
        p->vcpu_pu = xcalloc(pins->nvcpu + 1, sizeof *p->vcpu_pu);
        for (int i = 0; i < pins->nvcpu; i++) {
                if (hwloc_bitmap_weight(pins->vcpu[i]) != 1)
                        return -EINVAL;
                p->vcpu_pu[i] = topo_pu_by_os(t, hwloc_bitmap_first(pins->vcpu[i]));
                if (p->vcpu_pu[i] < 0)
                        return -ENXIO;
        }
        return rec_plan_sets(t, a, p);
}

/* A policy this daemon cannot read (a newer key, a typo) matches nothing. */
static int rec_policy(const struct rec_attrs *a, struct record *r) {
        r->has_policy = a->policy != NULL;
        r->policy_readable = a->policy && policy_parse_line(a->policy, &r->policy) == 0;
        return 0;
}

int record_parse(const struct topo *t, const char *xml, struct record *ret) {
        struct rec_attrs a = {};
        struct record rec = {};
        int r;

        if (!xml)
                return -EINVAL;
        r = rec_read_attrs(xml, &a);
        if (r >= 0)
                r = rec_vcpus(a.vcpus, &rec.vcpus);
        if (r >= 0)
                r = rec_policy(&a, &rec);
        rec.dedicated = r >= 0 && streq(a.cpu, "dedicated");
        if (r >= 0 && rec.dedicated)
                r = rec_plan(t, &a, &rec.vcpus, &rec.plan);
        if (r == -ENXIO) {              /* written on another host: ours, but not here */
                plan_done(&rec.plan);
                rec.foreign = true;
                r = 0;
        }
        rec_attrs_done(&a);
        if (r < 0) {
                record_done(&rec);
                return r;
        }
        *ret = rec;
        return 0;
}

void record_done(struct record *r) {
        plan_done(&r->plan);
        pinset_done(&r->vcpus);
        *r = (struct record){};
}

bool record_policy_matches(const struct record *r, const struct policy *p) {
        return !r->has_policy || (r->policy_readable && policy_equal(&r->policy, p));
}
