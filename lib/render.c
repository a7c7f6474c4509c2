#include "config.h"

#include <errno.h>

#include "kvmtune/render.h"


/* ---- CPU sets ----------------------------------------------------------------- */

struct json_object *render_bitmap_json(hwloc_const_bitmap_t b) {
        struct json_object *arr = json_object_new_array();
        int i;

        if (!b || hwloc_bitmap_weight(b) < 0)   /* infinite: not a CPU list */
                return arr;
        hwloc_bitmap_foreach_begin(i, b)
                json_object_array_add(arr, json_object_new_int(i));
        hwloc_bitmap_foreach_end();
        return arr;
}

char *render_bitmap_list(hwloc_const_bitmap_t b) {
        char *s = NULL;

        if (!b || hwloc_bitmap_iszero(b))
                return xstrdup("");
        if (hwloc_bitmap_list_asprintf(&s, b) < 0 || !s)
                abort();
        return s;
}

/* ---- the domain ----------------------------------------------------------------- */

struct json_object *render_policy_json(const struct policy *p) {
        struct json_object *o = json_object_new_object();

        json_object_object_add(o, "cpu", json_object_new_string(policy_cpu_to_string(p->cpu)));
        json_object_object_add(o, "threads", json_object_new_string(policy_threads_to_string(p->threads)));
        json_object_object_add(o, "emulator", json_object_new_string(policy_emulator_to_string(p->emulator)));
        json_object_object_add(o, "iothreads", json_object_new_string(policy_iothreads_to_string(p->iothreads)));
        json_object_object_add(o, "numa", json_object_new_string(policy_numa_to_string(p->numa)));
        json_object_object_add(o, "hugepages", json_object_new_string(policy_page_to_string(p->page)));
        json_object_object_add(o, "placement", json_object_new_string(policy_placement_to_string(p->placement)));
        json_object_object_add(o, "source", json_object_new_string(policy_source_to_string(p->source)));
        return o;
}

static struct json_object *cpus_json(hwloc_bitmap_t b) {
        struct json_object *o = render_bitmap_json(b);

        hwloc_bitmap_free(b);
        return o;
}

static struct json_object *vcpus_json(const struct topo *t, const struct alloc *a, const struct plan *p) {
        struct json_object *arr = json_object_new_array();

        for (int i = 0; i < p->nvcpu; i++) {
                struct json_object *v = json_object_new_object();

                json_object_object_add(v, "vcpu", json_object_new_int(i));
                json_object_object_add(v, "cpus", cpus_json(plan_vcpu_cpus(t, a, p, i)));
                json_object_array_add(arr, v);
        }
        return arr;
}

static struct json_object *iothreads_json(const struct topo *t, const struct alloc *a, const struct plan *p) {
        struct json_object *arr = json_object_new_array();

        for (int i = 0; i < p->niothread; i++) {
                struct json_object *v = json_object_new_object();

                json_object_object_add(v, "id", json_object_new_int(i + 1));
                json_object_object_add(v, "cpus", cpus_json(plan_resolve(t, a, p, &p->iothreads[i])));
                json_object_array_add(arr, v);
        }
        return arr;
}

static struct json_object *numa_json(const struct topo *t, const struct plan *p) {
        struct json_object *o = json_object_new_object();
        struct json_object *nodes = json_object_new_array();

        for (int i = 0; i < p->nnode; i++)
                json_object_array_add(nodes, json_object_new_int((int) t->nodes[p->nodes[i]].os));
        json_object_object_add(o, "nodes", nodes);
        json_object_object_add(o, "mode", json_object_new_string(policy_numa_to_string(p->numa)));
        return o;
}

static struct json_object *memory_json(const struct plan *p) {
        struct json_object *o = json_object_new_object();

        json_object_object_add(o, "kib", json_object_new_int64((int64_t) p->memory_kib));
        json_object_object_add(o, "page_kib", json_object_new_int64((int64_t) (policy_page_kib(p->page) ?: base_page_kib())));
        return o;
}

struct json_object *render_domain_json(const struct topo *t, const struct alloc *a, const struct plan *p,
                                       const struct policy *pol, const char *name) {
        struct json_object *o = json_object_new_object();
        struct json_object *emu = json_object_new_object();

        if (name)
                json_object_object_add(o, "name", json_object_new_string(name));
        json_object_object_add(o, "policy", render_policy_json(pol));
        json_object_object_add(o, "vcpus", vcpus_json(t, a, p));
        json_object_object_add(emu, "cpus", cpus_json(plan_resolve(t, a, p, &p->emulator)));
        json_object_object_add(o, "emulator", emu);
        json_object_object_add(o, "iothreads", iothreads_json(t, a, p));
        json_object_object_add(o, "numa", numa_json(t, p));
        json_object_object_add(o, "memory", memory_json(p));
        return o;
}

/* ---- aligned tables ---------------------------------------------------------------- */

struct table_row {
        int ncell;
        char **cells;
};

struct table {
        int nrow;
        struct table_row *rows;
};

struct table *table_new(void) {
        return xcalloc(1, sizeof(struct table));
}

struct table *table_free(struct table *tb) {
        if (!tb)
                return NULL;
        for (int r = 0; r < tb->nrow; r++) {
                for (int c = 0; c < tb->rows[r].ncell; c++)
                        free(tb->rows[r].cells[c]);
                free(tb->rows[r].cells);
        }
        free(tb->rows);
        free(tb);
        return NULL;
}

void table_new_row(struct table *tb) {
        tb->rows = xrealloc(tb->rows, (tb->nrow + 1) * sizeof(*tb->rows));
        tb->rows[tb->nrow++] = (struct table_row){ 0 };
}

void table_add_cell(struct table *tb, const char *s) {
        struct table_row *row;

        if (tb->nrow == 0)
                table_new_row(tb);
        row = &tb->rows[tb->nrow - 1];
        row->cells = xrealloc(row->cells, (row->ncell + 1) * sizeof(char *));
        row->cells[row->ncell++] = xstrdup(s ? s : "");
}

void table_add_cellf(struct table *tb, const char *fmt, ...) {
        _cleanup_free_ char *s = NULL;
        va_list ap;

        va_start(ap, fmt);
        if (vasprintf(&s, fmt, ap) < 0)
                abort();
        va_end(ap);
        table_add_cell(tb, s);
}

void table_add_row(struct table *tb, ...) {
        const char *s;
        va_list ap;

        table_new_row(tb);
        va_start(ap, tb);
        while ((s = va_arg(ap, const char *)))
                table_add_cell(tb, s);
        va_end(ap);
}

static int table_ncol(const struct table *tb) {
        int n = 0;

        for (int r = 0; r < tb->nrow; r++)
                if (tb->rows[r].ncell > n)
                        n = tb->rows[r].ncell;
        return n;
}

static void print_row(const struct table_row *row, const size_t *width, FILE *f) {
        int last = row->ncell - 1;

        while (last > 0 && !*row->cells[last])  /* no trailing blanks */
                last--;
        for (int c = 0; c <= last; c++) {
                if (c == last)
                        fprintf(f, "%s", row->cells[c]);
                else
                        fprintf(f, "%-*s  ", (int) width[c], row->cells[c]);
        }
        fputc('\n', f);
}

void table_print(const struct table *tb, FILE *f) {
        int ncol = table_ncol(tb);
        _cleanup_free_ size_t *width = xcalloc(ncol, sizeof(size_t));

        /* The last cell of a short row (a message such as "REFUSED: ...") may
         * run past its column rather than widen it for every row. */
        for (int r = 0; r < tb->nrow; r++)
                for (int c = 0; c < tb->rows[r].ncell - (tb->rows[r].ncell < ncol); c++)
                        if (strlen(tb->rows[r].cells[c]) > width[c])
                                width[c] = strlen(tb->rows[r].cells[c]);
        for (int r = 0; r < tb->nrow; r++)
                print_row(&tb->rows[r], width, f);
}

static struct json_object *render_finding_json(const struct advise_finding *f) {
        struct json_object *o = json_object_new_object();

        json_object_object_add(o, "id", json_object_new_string(f->id));
        json_object_object_add(o, "severity", json_object_new_string(f->severity));
        json_object_object_add(o, "target", json_object_new_string(f->target));
        json_object_object_add(o, "message", json_object_new_string(f->message));
        json_object_object_add(o, "fix", json_object_new_string(f->fix));
        json_object_object_add(o, "source", json_object_new_string(f->source ? f->source : ""));
        json_object_object_add(o, "applied", json_object_new_boolean(f->applied));
        return o;
}

struct json_object *render_advise_json(const struct advise_result *res) {
        struct json_object *o = json_object_new_object();
        struct json_object *arr = json_object_new_array();
        struct json_object *counts = json_object_new_object();

        for (size_t i = 0; i < res->nfinding; i++)
                json_object_array_add(arr, render_finding_json(&res->findings[i]));
        json_object_object_add(counts, "warning", json_object_new_int(res->nwarning));
        json_object_object_add(counts, "info", json_object_new_int(res->ninfo));
        json_object_object_add(o, "name", json_object_new_string(res->name ? res->name : ""));
        json_object_object_add(o, "policy", render_policy_json(&res->policy));
        json_object_object_add(o, "findings", arr);
        json_object_object_add(o, "counts", counts);
        json_object_object_add(o, "applied", json_object_new_int(res->napplied));
        if (res->note[0])
                json_object_object_add(o, "skipped", json_object_new_string(res->note));
        return o;
}
