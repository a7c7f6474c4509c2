/* Small helpers shared by lib/, daemon/ and tests/. */
#pragma once

#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <unistd.h>

#define ELEMENTSOF(a) (sizeof(a) / sizeof((a)[0]))
#define _cleanup_(f) __attribute__((cleanup(f)))
#define _unused_ __attribute__((unused))
#define _printf_(a, b) __attribute__((format(printf, a, b)))

/* Allocation failure aborts: systemd restarts us (see STYLE.md). */
void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
char *xasprintf(const char *fmt, ...) _printf_(1, 2);

/* Declares NAMEp(TYPE *p), calling FUNC(*p) when *p is not NULL, for
 * _cleanup_(NAMEp): one per type, beside the type's own declaration. */
#define DEFINE_TRIVIAL_CLEANUP_FUNC(type, func) \
        static inline void func##p(type *p) { if (*p) func(*p); }

static inline void freep(void *p) { free(*(void **)p); }
static inline void closep(int *fd) { if (*fd >= 0) close(*fd); }
DEFINE_TRIVIAL_CLEANUP_FUNC(FILE *, fclose)
DEFINE_TRIVIAL_CLEANUP_FUNC(DIR *, closedir)
#define _cleanup_free_ _cleanup_(freep)
#define _cleanup_fclose_ _cleanup_(fclosep)
#define _cleanup_closedir_ _cleanup_(closedirp)
#define _cleanup_close_ _cleanup_(closep)

/* errno after a call that may fail without setting it (libc or hwloc), else fallback. */
static inline int errno_or(int fallback) { return errno > 0 ? errno : fallback; }
static inline int streq(const char *a, const char *b) { return strcmp(a, b) == 0; }
/* The base page size in KiB (4 on x86), what "page_kib" says of base pages. */
static inline unsigned long base_page_kib(void) { return (unsigned long)sysconf(_SC_PAGESIZE) / 1024; }

/* Writes a message into err (errlen bytes; err may be NULL) and returns r: for
 * "return error_set(err, errlen, -EINVAL, "line %d: ...", n);". */
int error_set(char *err, size_t errlen, int r, const char *fmt, ...) _printf_(4, 5);

/* The one checked number parser: a decimal that starts with a digit (no sign,
 * no blank), -ERANGE past UINT64_MAX. safe_atou64_prefix() stops at the first
 * non-digit (*ret_end, may be NULL); safe_atou64() allows only trailing blanks
 * (" \t\n") after it; safe_atox64() is safe_atou64() in hex, with an optional
 * 0x; safe_atoi() takes an int in [min, max], with no blanks.
 * 0 or -EINVAL/-ERANGE; *ret untouched on failure. */
int safe_atou64_prefix(const char *s, uint64_t *ret, const char **ret_end);
int safe_atou64(const char *s, uint64_t *ret);
int safe_atox64(const char *s, uint64_t *ret);
int safe_atoi(const char *s, int min, int max, int *ret);

/* Reads fd until EOF (sysfs files and pipes say nothing of their size) into *ret,
 * NUL-terminated, caller frees. Returns the length (max <= INT_MAX), -EFBIG when
 * it reaches max bytes, or a negative errno from read(). */
int read_fd_all(int fd, size_t max, char **ret);

/* CLOCK_MONOTONIC in microseconds. */
uint64_t now_usec(void);

/* A growing string: strbuf_add() appends printf-style; b.s is NULL until the
 * first add, then owned by the caller (free). */
struct strbuf {
        char *s;
        size_t len;
};
void strbuf_add(struct strbuf *b, const char *fmt, ...) _printf_(2, 3);
/* Numbers in the given order, consecutive ascending runs as "a-b":
 * {4,5,6,7,52} -> "4-7,52" ("" for none). Caller frees. */
char *format_runs(const int *v, int n);

/* Parse "16G", "512M", "1024k", "4096" (bytes) into KiB. Returns 0 or -EINVAL. */
int parse_size_kib(const char *s, unsigned long long *ret_kib);
/* Format KiB as "16G", "2M", "4k" (exact units only, else KiB). buf >= 32 bytes. */
const char *format_size_kib(unsigned long long kib, char *buf, size_t len);
