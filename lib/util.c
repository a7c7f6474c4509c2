#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "kvmtune/util.h"

static void *check(void *p) {
        if (!p)
                abort();
        return p;
}

void *xmalloc(size_t n) { return check(malloc(n ? n : 1)); }
void *xcalloc(size_t n, size_t size) { return check(calloc(n ? n : 1, size ? size : 1)); }
void *xrealloc(void *p, size_t n) { return check(realloc(p, n ? n : 1)); }
char *xstrdup(const char *s) { return check(strdup(s)); }

char *xasprintf(const char *fmt, ...) {
        va_list ap;
        char *s;

        va_start(ap, fmt);
        if (vasprintf(&s, fmt, ap) < 0)
                abort();
        va_end(ap);
        return s;
}

/* The digits of base (10 or 16) from s, at least one; *ret_end after them. */
static int parse_digits(const char *s, int base, uint64_t *ret, const char **ret_end) {
        size_t n = s ? strspn(s, base == 16 ? "0123456789abcdefABCDEF" : "0123456789") : 0;
        unsigned long long v;
        char *end;

        if (n == 0)
                return -EINVAL;
        errno = 0;
        v = strtoull(s, &end, base);
        if (errno == ERANGE)
                return -ERANGE;
        if (end != s + n)
                return -EINVAL;         /* strtoull's own "0x" after a 0 */
        *ret = v;
        if (ret_end)
                *ret_end = end;
        return 0;
}

/* The whole of s in base, trailing blanks allowed. */
static int parse_whole(const char *s, int base, uint64_t *ret) {
        const char *end;
        uint64_t v;
        int r = parse_digits(s, base, &v, &end);

        if (r < 0)
                return r;
        if (end[strspn(end, " \t\n")])
                return -EINVAL;
        *ret = v;
        return 0;
}

int safe_atou64_prefix(const char *s, uint64_t *ret, const char **ret_end) {
        return parse_digits(s, 10, ret, ret_end);
}

int safe_atou64(const char *s, uint64_t *ret) {
        return parse_whole(s, 10, ret);
}

int safe_atox64(const char *s, uint64_t *ret) {
        if (s && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
                s += 2;
        return parse_whole(s, 16, ret);
}

int safe_atoi(const char *s, int min, int max, int *ret) {
        bool neg = s && *s == '-';
        const char *end;
        uint64_t v;
        int64_t value;
        int r = safe_atou64_prefix(neg ? s + 1 : s, &v, &end);

        if (r < 0)
                return r;
        if (*end)
                return -EINVAL;
        if (v > (uint64_t)INT32_MAX + 1)
                return -ERANGE;
        value = neg ? -(int64_t)v : (int64_t)v;
        if (value < min || value > max)
                return -ERANGE;
        *ret = (int)value;
        return 0;
}

uint64_t now_usec(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * 1000000ULL + (uint64_t)ts.tv_nsec / 1000ULL;
}

void strbuf_add(struct strbuf *b, const char *fmt, ...) {
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

char *format_runs(const int *v, int n) {
        struct strbuf b = {};

        strbuf_add(&b, "%s", "");
        for (int i = 0; i < n;) {
                int j = i;

                while (j + 1 < n && v[j + 1] == v[j] + 1)
                        j++;
                strbuf_add(&b, "%s%d", i ? "," : "", v[i]);
                if (j > i)
                        strbuf_add(&b, "-%d", v[j]);
                i = j + 1;
        }
        return b.s;
}

int error_set(char *err, size_t errlen, int r, const char *fmt, ...) {
        va_list ap;

        if (err && errlen > 0) {
                va_start(ap, fmt);
                vsnprintf(err, errlen, fmt, ap);
                va_end(ap);
        }
        return r;
}

static int unit_shift(char u, unsigned *ret_shift) {
        switch (u) {
        case 'k': case 'K': *ret_shift = 0; return 0;
        case 'm': case 'M': *ret_shift = 10; return 0;
        case 'g': case 'G': *ret_shift = 20; return 0;
        case 't': case 'T': *ret_shift = 30; return 0;
        default: return -EINVAL;
        }
}

int parse_size_kib(const char *s, unsigned long long *ret_kib) {
        unsigned long long v;
        unsigned shift;
        char *end;

        if (!s || *s < '0' || *s > '9')
                return -EINVAL;
        errno = 0;
        v = strtoull(s, &end, 10);
        if (errno || end == s)
                return -EINVAL;
        if (*end == '\0') {             /* plain bytes */
                *ret_kib = v / 1024;
                return 0;
        }
        if (unit_shift(*end, &shift) < 0)
                return -EINVAL;
        end++;
        if (*end == 'i')
                end++;
        if (*end == 'B' || *end == 'b')
                end++;
        if (*end != '\0' || (shift && v > (UINT64_MAX >> shift)))
                return -EINVAL;
        *ret_kib = v << shift;
        return 0;
}

const char *format_size_kib(unsigned long long kib, char *buf, size_t len) {
        static const char units[] = "kMGT";
        unsigned i = 0;

        while (i < 3 && kib >= 1024 && kib % 1024 == 0) {
                kib /= 1024;
                i++;
        }
        snprintf(buf, len, "%llu%c", kib, units[i]);
        return buf;
}

int read_fd_all(int fd, size_t max, char **ret) {
        _cleanup_free_ char *buf = NULL;
        size_t len = 0, cap = 4096;
        ssize_t k;

        buf = xmalloc(cap + 1);
        for (;;) {
                if (len == cap) {
                        if (cap >= max)
                                return -EFBIG;
                        cap *= 2;
                        buf = xrealloc(buf, cap + 1);
                }
                k = read(fd, buf + len, cap - len);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return -errno_or(EIO);
                if (k == 0)
                        break;
                len += (size_t)k;
        }
        buf[len] = '\0';
        *ret = buf;
        buf = NULL;
        return (int)len;
}
