/* Small helpers shared by lib/, daemon/ and tests/. */
#pragma once

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

static inline void freep(void *p) { free(*(void **)p); }
static inline void fclosep(FILE **f) { if (*f) fclose(*f); }
static inline void closep(int *fd) { if (*fd >= 0) close(*fd); }
#define _cleanup_free_ _cleanup_(freep)
#define _cleanup_fclose_ _cleanup_(fclosep)
#define _cleanup_close_ _cleanup_(closep)

static inline int streq(const char *a, const char *b) { return strcmp(a, b) == 0; }
/* The base page size in KiB (4 on x86), what "page_kib" says of base pages. */
static inline unsigned long base_page_kib(void) { return (unsigned long)sysconf(_SC_PAGESIZE) / 1024; }

/* Writes a message into err (errlen bytes; err may be NULL) and returns r: for
 * "return error_set(err, errlen, -EINVAL, "line %d: ...", n);". */
int error_set(char *err, size_t errlen, int r, const char *fmt, ...) _printf_(4, 5);

/* Parse "16G", "512M", "1024k", "4096" (bytes) into KiB. Returns 0 or -EINVAL. */
int parse_size_kib(const char *s, unsigned long long *ret_kib);
/* Format KiB as "16G", "2M", "4k" (exact units only, else KiB). buf >= 32 bytes. */
const char *format_size_kib(unsigned long long kib, char *buf, size_t len);
