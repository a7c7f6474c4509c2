/* CPU and node lists into hwloc bitmaps: the one checked parser (see topo.h). */
#include "config.h"

#include <ctype.h>
#include <errno.h>

#include "kvmtune/topo.h"

static const char *list_blanks(const char *s) {
        while (*s == ' ' || *s == '\t')
                s++;
        return s;
}

static int list_number(const char **s, unsigned max, unsigned *ret) {
        unsigned long v = 0;
        const char *c = *s;

        if (!isdigit((unsigned char)*c))
                return -EINVAL;
        for (; isdigit((unsigned char)*c); c++) {
                v = v * 10 + (unsigned long)(*c - '0');
                if (v > max)
                        return -EINVAL;
        }
        *s = c;
        *ret = (unsigned)v;
        return 0;
}

/* One "N" or "N-M" item into set; *s moves past it and the blanks after it. */
static int list_item(const char **s, unsigned max, hwloc_bitmap_t set) {
        unsigned a, b;

        *s = list_blanks(*s);
        if (list_number(s, max, &a) < 0)
                return -EINVAL;
        *s = list_blanks(*s);
        b = a;
        if (**s == '-') {
                *s = list_blanks(*s + 1);
                if (list_number(s, max, &b) < 0 || b < a)
                        return -EINVAL;
                *s = list_blanks(*s);
        }
        hwloc_bitmap_set_range(set, a, (int)b);
        return 0;
}

int bitmap_parse_list(const char *s, unsigned max, hwloc_bitmap_t ret) {
        _cleanup_bitmap_ hwloc_bitmap_t set = bitmap_new();

        if (*list_blanks(s) != '\0' && *list_blanks(s) != '\n')
                for (;;) {
                        if (list_item(&s, max, set) < 0)
                                return -EINVAL;
                        if (*s == '\0' || *s == '\n')
                                break;
                        if (*s++ != ',')
                                return -EINVAL;
                }
        hwloc_bitmap_copy(ret, set);
        return 0;
}
