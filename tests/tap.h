/* Minimal TAP producer for the unit tests: one "ok"/"not ok" line per check. */
#pragma once

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

static int tap_n, tap_failed;

static inline __attribute__((format(printf, 2, 3))) int tap_ok(int cond, const char *fmt, ...) {
        va_list ap;
        printf("%s %d - ", cond ? "ok" : "not ok", ++tap_n);
        va_start(ap, fmt);
        vprintf(fmt, ap);
        va_end(ap);
        putchar('\n');
        fflush(stdout);
        if (!cond)
                tap_failed++;
        return cond;
}

#define ok(cond, ...) tap_ok(!!(cond), __VA_ARGS__)
#define is_int(a, b, ...) do { long long _a = (a), _b = (b); \
        if (!ok(_a == _b, __VA_ARGS__)) printf("#   got %lld, expected %lld\n", _a, _b); } while (0)
#define is_str(a, b, ...) do { const char *_a = (a), *_b = (b); \
        if (!ok(_a && _b && strcmp(_a, _b) == 0, __VA_ARGS__)) \
                printf("#   got '%s', expected '%s'\n", _a ? _a : "(null)", _b ? _b : "(null)"); } while (0)

/* One "ok N - WHAT # SKIP WHY" line standing for a block of checks that cannot run here. */
static inline __attribute__((format(printf, 2, 3))) void tap_skip(const char *why, const char *fmt, ...) {
        va_list ap;
        printf("ok %d - ", ++tap_n);
        va_start(ap, fmt);
        vprintf(fmt, ap);
        va_end(ap);
        printf(" # SKIP %s\n", why);
        fflush(stdout);
}

static inline void tap_skip_all(const char *why) {
        printf("1..0 # SKIP %s\n", why);
        exit(0);
}

static inline int tap_done(void) {
        printf("1..%d\n", tap_n);
        return tap_failed ? 1 : 0;
}
