/* Host isolation decisions and the restore record (see isolate.h). Pure. */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <strings.h>

#include "kvmtune/isolate.h"
#include "kvmtune/topo.h"
#include "kvmtune/util.h"

#define RECORD_HEADER "# kvmtuned isolation record 1\n"

static const char *const what_names[] = { "tasks", "guests", "irqs", "workqueues" };
static const char *const kind_names[_ISOLATE_KIND_MAX] = {
        [ISOLATE_KIND_TASK] = "task",
        [ISOLATE_KIND_GUEST] = "guest",
        [ISOLATE_KIND_IRQ] = "irq",
        [ISOLATE_KIND_WORKQUEUE] = "workqueue",
        [ISOLATE_KIND_UNIT] = "unit",
        [ISOLATE_KIND_IRQBALANCE] = "irqbalance",
};

const char *isolate_kind_to_string(enum isolate_kind k) {
        return k >= 0 && k < _ISOLATE_KIND_MAX ? kind_names[k] : "?";
}

static hwloc_bitmap_t bitmap_dup(hwloc_const_bitmap_t src) {
        hwloc_bitmap_t m = src ? hwloc_bitmap_dup(src) : hwloc_bitmap_alloc();

        if (!m)
                abort();
        return m;
}

/* ---- [host] isolation -------------------------------------------------------- */

static bool is_yes(const char *s) {
        return !strcasecmp(s, "yes") || !strcasecmp(s, "true") || !strcasecmp(s, "on") || streq(s, "1");
}

static bool is_no(const char *s) {
        return !strcasecmp(s, "no") || !strcasecmp(s, "false") || !strcasecmp(s, "off") || streq(s, "0");
}

static int what_bit(const char *word) {
        for (size_t i = 0; i < ELEMENTSOF(what_names); i++)
                if (!strcasecmp(word, what_names[i]))
                        return 1 << i;
        return -EINVAL;
}

int isolate_parse_what(const char *value, unsigned *ret) {
        _cleanup_free_ char *copy = NULL;
        char *save = NULL, *tok;
        unsigned what = 0;

        if (!value)
                return -EINVAL;
        if (is_yes(value))
                return *ret = ISOLATE_ALL, 0;
        if (is_no(value))
                return *ret = 0, 0;
        copy = xstrdup(value);
        for (tok = strtok_r(copy, ", \t", &save); tok; tok = strtok_r(NULL, ", \t", &save)) {
                int bit = what_bit(tok);

                if (bit < 0)
                        return -EINVAL;
                what |= (unsigned)bit;
        }
        if (what == 0)
                return -EINVAL;
        *ret = what;
        return 0;
}

const char *isolate_format_what(unsigned what, char *buf, size_t len) {
        size_t n = 0;

        buf[0] = '\0';
        for (size_t i = 0; i < ELEMENTSOF(what_names); i++)
                if (what & (1u << i) && n < len)
                        n += (size_t)snprintf(buf + n, len - n, "%s%s", n ? "," : "", what_names[i]);
        if (n == 0)
                snprintf(buf, len, "none");
        return buf;
}

/* ---- decisions ----------------------------------------------------------------- */

enum isolate_action isolate_decide(hwloc_const_bitmap_t cur, hwloc_const_bitmap_t dedicated,
                                   struct isolate_entry *e, hwloc_bitmap_t ret_mask) {
        if (!e) {
                if (!hwloc_bitmap_intersects(cur, dedicated))
                        return ISOLATE_NONE;
                hwloc_bitmap_andnot(ret_mask, cur, dedicated);
                return hwloc_bitmap_iszero(ret_mask) ? ISOLATE_ONLY_DEDICATED : ISOLATE_SET;
        }
        if (!hwloc_bitmap_isequal(cur, e->applied)) {
                hwloc_bitmap_copy(e->orig, cur);
                hwloc_bitmap_copy(e->applied, cur);
        }
        hwloc_bitmap_andnot(ret_mask, e->orig, dedicated);
        if (hwloc_bitmap_iszero(ret_mask) || hwloc_bitmap_isequal(ret_mask, e->orig)) {
                hwloc_bitmap_copy(ret_mask, e->orig);
                return ISOLATE_RESTORE;
        }
        return hwloc_bitmap_isequal(ret_mask, cur) ? ISOLATE_NONE : ISOLATE_SET;
}

hwloc_bitmap_t isolate_effective(hwloc_const_bitmap_t online, hwloc_const_bitmap_t dedicated) {
        hwloc_bitmap_t left = bitmap_new(), ret = bitmap_new();

        hwloc_bitmap_andnot(left, online, dedicated);
        if (!hwloc_bitmap_iszero(left))
                hwloc_bitmap_and(ret, online, dedicated);
        hwloc_bitmap_free(left);
        return ret;
}

/* ---- the record ------------------------------------------------------------------ */

static int entry_cmp(enum isolate_kind ka, long ia, const char *na, const struct isolate_entry *b) {
        if (ka != b->kind)
                return ka < b->kind ? -1 : 1;
        if (ia != b->id)
                return ia < b->id ? -1 : 1;
        return strcmp(na ? na : "", b->name);
}

/* Index of the first entry >= (kind, id, name). */
static int record_lower(const struct isolate_record *r, enum isolate_kind kind, long id, const char *name) {
        int lo = 0, hi = r->n;

        while (lo < hi) {
                int mid = lo + (hi - lo) / 2;

                if (entry_cmp(kind, id, name, &r->e[mid]) > 0)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return lo;
}

struct isolate_entry *isolate_record_find(const struct isolate_record *r, enum isolate_kind kind,
                                          long id, const char *name) {
        int i = record_lower(r, kind, id, name);

        return i < r->n && entry_cmp(kind, id, name, &r->e[i]) == 0 ? &r->e[i] : NULL;
}

struct isolate_entry *isolate_record_add(struct isolate_record *r, enum isolate_kind kind, long id,
                                         unsigned long long start, const char *name,
                                         hwloc_const_bitmap_t orig, hwloc_const_bitmap_t applied) {
        int i = record_lower(r, kind, id, name);
        struct isolate_entry *e;

        if (i < r->n && entry_cmp(kind, id, name, &r->e[i]) == 0)
                isolate_record_del(r, &r->e[i]);
        r->e = xrealloc(r->e, (size_t)(r->n + 1) * sizeof *r->e);
        memmove(&r->e[i + 1], &r->e[i], (size_t)(r->n - i) * sizeof *r->e);
        r->n++;
        e = &r->e[i];
        *e = (struct isolate_entry){ .kind = kind, .id = id, .start = start,
                                     .orig = bitmap_dup(orig), .applied = bitmap_dup(applied) };
        snprintf(e->name, sizeof e->name, "%s", name ? name : "");
        return e;
}

void isolate_record_del(struct isolate_record *r, struct isolate_entry *e) {
        int i = (int)(e - r->e);

        hwloc_bitmap_free(e->orig);
        hwloc_bitmap_free(e->applied);
        memmove(&r->e[i], &r->e[i + 1], (size_t)(r->n - i - 1) * sizeof *r->e);
        r->n--;
}

void isolate_record_clear(struct isolate_record *r) {
        while (r->n > 0)
                isolate_record_del(r, &r->e[r->n - 1]);
        free(r->e);
        r->e = NULL;
}

static char *list_or_dash(hwloc_const_bitmap_t m) {
        char *s = NULL;

        if (!m || hwloc_bitmap_iszero(m))
                return xstrdup("-");
        if (hwloc_bitmap_list_asprintf(&s, m) < 0)
                abort();
        return s;
}

/* Linear in the number of entries: it runs on every rescan. */
char *isolate_record_format(const struct isolate_record *r) {
        char *text = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&text, &len);

        if (!f)
                abort();
        fputs(RECORD_HEADER, f);
        for (int i = 0; i < r->n; i++) {
                const struct isolate_entry *e = &r->e[i];
                _cleanup_free_ char *o = list_or_dash(e->orig), *a = list_or_dash(e->applied);

                fprintf(f, "%s %ld %llu %s %s %s\n", kind_names[e->kind], e->id, e->start,
                        e->name[0] ? e->name : "-", o, a);
        }
        if (fclose(f) != 0)
                abort();
        return text;
}

static int kind_parse(const char *s) {
        for (int k = 0; k < _ISOLATE_KIND_MAX; k++)
                if (streq(s, kind_names[k]))
                        return k;
        return -EINVAL;
}

/* "-" is the empty set. */
static int list_or_dash_parse(const char *s, hwloc_bitmap_t ret) {
        if (streq(s, "-"))
                return hwloc_bitmap_zero(ret), 0;
        return isolate_list_parse(s, ret);
}

static int record_line(struct isolate_record *r, char *line) {
        char kind[16], name[64], orig[4096], applied[4096];
        long id;
        unsigned long long start;
        _cleanup_bitmap_ hwloc_bitmap_t o = bitmap_new(), a = bitmap_new();
        int k;

        if (sscanf(line, "%15s %ld %llu %63s %4095s %4095s", kind, &id, &start, name, orig, applied) != 6)
                return -EINVAL;
        k = kind_parse(kind);
        if (k < 0 || list_or_dash_parse(orig, o) < 0 || list_or_dash_parse(applied, a) < 0)
                return -EINVAL;
        isolate_record_add(r, (enum isolate_kind)k, id, start, streq(name, "-") ? "" : name, o, a);
        return 0;
}

int isolate_record_parse(const char *text, struct isolate_record *r) {
        _cleanup_free_ char *copy = xstrdup(text);
        struct isolate_record tmp = {};
        char *save = NULL, *line;

        for (line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
                if (line[0] == '#' || line[0] == '\0')
                        continue;
                if (record_line(&tmp, line) < 0) {
                        isolate_record_clear(&tmp);
                        return -EINVAL;
                }
        }
        isolate_record_clear(r);
        *r = tmp;
        return r->n;
}

/* ---- kernel text forms ----------------------------------------------------------- */

int isolate_mask_parse(const char *text, hwloc_bitmap_t ret) {
        _cleanup_free_ char *copy = xstrdup(text);
        char *groups[1024], *save = NULL, *g;
        int n = 0;

        copy[strcspn(copy, "\n")] = '\0';
        for (g = strtok_r(copy, ",", &save); g; g = strtok_r(NULL, ",", &save)) {
                size_t len = strlen(g);

                if (n == (int)ELEMENTSOF(groups) || len == 0 || len > 8 || strspn(g, "0123456789abcdefABCDEF") != len)
                        return -EINVAL;
                groups[n++] = g;
        }
        if (n == 0)
                return -EINVAL;
        hwloc_bitmap_zero(ret);
        for (int i = 0; i < n; i++) {
                unsigned long v = strtoul(groups[n - 1 - i], NULL, 16);

                for (int b = 0; b < 32; b++)
                        if (v & (1UL << b))
                                hwloc_bitmap_set(ret, (unsigned)(i * 32 + b));
        }
        return 0;
}

char *isolate_mask_format(hwloc_const_bitmap_t set) {
        int last = hwloc_bitmap_last(set), ngroup = last < 0 ? 1 : last / 32 + 1;
        char *s = xmalloc((size_t)ngroup * 9 + 1);
        size_t n = 0;

        for (int i = ngroup - 1; i >= 0; i--) {
                unsigned long v = 0;

                for (int b = 0; b < 32; b++)
                        if (hwloc_bitmap_isset(set, (unsigned)(i * 32 + b)))
                                v |= 1UL << b;
                n += (size_t)sprintf(s + n, "%s%08lx", i == ngroup - 1 ? "" : ",", v);
        }
        return s;
}

/* Every number of a CPU list is a CPU that can exist (hwloc would allocate
 * a bitmap up to the largest one). */
int isolate_list_parse(const char *text, hwloc_bitmap_t ret) {
        _cleanup_bitmap_ hwloc_bitmap_t m = bitmap_new();

        if (bitmap_parse_list(text, ISOLATE_CPU_MAX, m) < 0 || hwloc_bitmap_iszero(m))
                return -EINVAL;
        hwloc_bitmap_copy(ret, m);
        return 0;
}

const char *isolate_status_value(const char *status, const char *key) {
        size_t klen = strlen(key);

        for (const char *p = status; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
                if (strncmp(p, key, klen) == 0 && p[klen] == ':')
                        return p + klen + 1;
        return NULL;
}

static pid_t status_field(const char *status, const char *key) {
        const char *v = isolate_status_value(status, key);
        uint64_t id;

        if (!v || safe_atou64_prefix(v + strspn(v, " \t"), &id, NULL) < 0 || id > INT_MAX)
                return 0;
        return (pid_t)id;
}

void isolate_status_ids(const char *status, pid_t *ret_tgid, pid_t *ret_ppid) {
        *ret_tgid = status_field(status, "Tgid");
        *ret_ppid = status_field(status, "PPid");
}

int isolate_stat_start(const char *stat, unsigned long long *ret) {
        const char *p = strrchr(stat, ')');     /* comm may hold spaces and parentheses */
        unsigned long long v;

        /* after ") ": state is field 3, starttime field 22 */
        if (!p || sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu",
                         &v) != 1)
                return -EINVAL;
        *ret = v;
        return 0;
}

bool isolate_cgroup_skip(const char *relpath) {
        const char *base = strrchr(relpath, '/');

        base = base ? base + 1 : relpath;
        return streq(base, "machine.slice") || streq(base, "machine");
}
