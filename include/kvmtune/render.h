/* Rendering shared by kvmtunectl, the daemon's replies and offline planning:
 * a placed domain as JSON in the SPEC.md `show --json` shape, CPU sets as JSON
 * arrays or compact lists, and a small aligned-table printer for human output. */
#pragma once

#include <stdarg.h>
#include <stdio.h>
#include <hwloc.h>
#include <json-c/json.h>

#include "kvmtune/advise.h"
#include "kvmtune/placement.h"
#include "kvmtune/policy.h"
#include "kvmtune/topo.h"
#include "kvmtune/util.h"

/* JSON array of the bitmap's indexes in increasing order ([] for an empty or
 * infinite bitmap). New reference, owned by the caller. */
struct json_object *render_bitmap_json(hwloc_const_bitmap_t b);
/* Compact list "0-3,8" ("" when empty). malloc'd, owned by the caller. */
char *render_bitmap_list(hwloc_const_bitmap_t b);

/* {"cpu": ..., "threads": ..., "emulator": ..., "iothreads": ..., "numa": ...,
 *  "hugepages": ..., "source": ...}: every key, resolved. New reference. */
struct json_object *render_policy_json(const struct policy *p);

/* A placed domain: {"name", "policy", "vcpus": [{"vcpu", "cpus": [os...]}],
 * "emulator": {"cpus"}, "iothreads": [{"id", "cpus"}], "numa": {"nodes": [os],
 * "mode"}, "memory": {"kib", "page_kib"}}, iothread ids 1..N. CPU sets are
 * resolved against 'a' (shared-pool threads float over the pool as it is now).
 * name may be NULL (no "name" key). New reference, owned by the caller. */
struct json_object *render_domain_json(const struct topo *t, const struct alloc *a, const struct plan *p,
                                       const struct policy *pol, const char *name);

/* An audit (SPEC.md advise): {"name", "policy", "findings": [{"id", "severity",
 * "target", "message", "fix", "source", "applied"}], "counts": {"warning",
 * "info"}, "applied": n} plus "skipped" when a check could not run (why). New reference. */
struct json_object *render_advise_json(const struct advise_result *res);

/* Aligned text table: columns are as wide as their widest cell, separated by
 * two spaces, no trailing blanks. The header is row 0; rows may have fewer
 * cells than the header. */
struct table;

struct table *table_new(void);
struct table *table_free(struct table *tb);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct table *, table_free)
/* Appends a row of strings, NULL-terminated: table_add_row(tb, "a", "b", NULL). */
void table_add_row(struct table *tb, ...);
/* Starts an empty row; table_add_cell()/table_add_cellf() append to the last row. */
void table_new_row(struct table *tb);
void table_add_cell(struct table *tb, const char *s);
void table_add_cellf(struct table *tb, const char *fmt, ...) _printf_(2, 3);
void table_print(const struct table *tb, FILE *f);
