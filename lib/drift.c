/* Placement compared with the live system (drift.h). */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "kvmtune/drift.h"
#include "kvmtune/isolate.h"
#include "kvmtune/topo.h"
#include "kvmtune/util.h"

static char *drift_list(hwloc_const_bitmap_t set) {
        char *s = NULL;

        if (!set || hwloc_bitmap_iszero(set))
                return xstrdup("");
        if (hwloc_bitmap_list_asprintf(&s, set) < 0)
                abort();                /* allocation failure (STYLE.md) */
        return s;
}

static void drift_add(struct drift_report *r, const char *what, char *want, char *got) {
        r->items = xrealloc(r->items, (r->n + 1) * sizeof *r->items);
        r->items[r->n++] = (struct drift){ .what = xstrdup(what), .want = want, .got = got };
}

int drift_check(struct drift_report *r, const char *what, enum drift_rule rule,
                hwloc_const_bitmap_t want, hwloc_const_bitmap_t got) {
        bool same = rule == DRIFT_COVERS ? hwloc_bitmap_isincluded(want, got)
                                         : hwloc_bitmap_isequal(want, got);

        r->checked++;
        if (same)
                return 0;
        drift_add(r, what, drift_list(want), drift_list(got));
        return 1;
}

void drift_unreadable(struct drift_report *r, const char *what, hwloc_const_bitmap_t want, const char *why) {
        r->checked++;
        drift_add(r, what, drift_list(want), xasprintf("(%s)", why));
}

void drift_report_done(struct drift_report *r) {
        for (int i = 0; i < r->n; i++) {
                free(r->items[i].what);
                free(r->items[i].want);
                free(r->items[i].got);
        }
        free(r->items);
        *r = (struct drift_report){ 0 };
}

/* The one checked list parser (topo.h); empty text or a blank line is the
 * empty set. */
int drift_parse_list(const char *text, hwloc_bitmap_t *ret) {
        hwloc_bitmap_t m = bitmap_new();

        if (bitmap_parse_list(text, CPU_LIST_MAX, m) < 0) {
                hwloc_bitmap_free(m);
                return -EINVAL;
        }
        *ret = m;
        return 0;
}

int drift_status_list(const char *status, const char *key, hwloc_bitmap_t *ret) {
        const char *p = isolate_status_value(status, key);

        if (!p)
                return -ENODATA;
        p += strspn(p, " \t");
        if (*p == '\n' || !*p)
                return -EINVAL;
        return drift_parse_list(p, ret);
}
