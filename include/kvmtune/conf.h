/* Configuration: /etc/kvmtuned/kvmtuned.conf plus kvmtuned.conf.d/NAME.conf drop-ins
 * (lexical order), INI, table-driven, errors as "FILE:LINE: message". No file at
 * all is valid (built-in defaults). See SPEC.md and kvmtuned.conf(5). */
#pragma once

#include <stdbool.h>
#include <hwloc.h>

#include "kvmtune/policy.h"
#include "kvmtune/topo.h"

#define CONF_PATH_DEFAULT SYSCONFDIR "/kvmtuned/kvmtuned.conf"
#define CONF_URI_DEFAULT "qemu:///system"
#define CONF_LINE_MAX 4096              /* bytes per line, without the newline */
#define CONF_FILE_MAX (1024 * 1024)     /* bytes per file (and per conf_load_string text) */
#define CONF_HOOK_TIMEOUT_DEFAULT_MS 2000
#define CONF_HOOK_TIMEOUT_MIN_MS 100
#define CONF_HOOK_TIMEOUT_MAX_MS 30000

struct conf_domain {
        char *pattern;                  /* fnmatch glob on the domain name */
        struct policy policy;           /* only keys in policy.set apply */
};

struct conf_hugepages {
        bool set;                       /* the size appears in [hugepages] */
        bool per_node;                  /* "0:16 1:16" rather than a total */
        unsigned long long total;       /* plain total, spread over nodes with memory;
                                           per_node: the sum of count[] */
        int nnode;
        unsigned node_os[256];          /* per_node: NUMA node numbers ... */
        unsigned long long count[256];  /* ... and their page counts */
};

struct conf {
        char *uri;                      /* [libvirt] uri, default qemu:///system */
        char *reserved_cpus;            /* [host] reserved_cpus as written; NULL: default */
        unsigned isolation;             /* [host] isolation: ISOLATE_* bits, default all */
        char *isolation_scope;          /* [host] isolation_scope, default "/" */
        struct policy defaults;         /* [defaults], over the built-in defaults */
        int ndomain;
        struct conf_domain *domains;    /* [domain "glob"] in file order */
        struct conf_hugepages hugepages[TOPO_PAGE_SIZES]; /* [hugepages] 2M, 1G */
        int hook_timeout_ms;            /* [daemon] hook_timeout, default 2000 */
        bool persist_placement;         /* [daemon] persist_placement, default yes: a
                                         * dedicated placement is also written into the
                                         * persistent definition, so libvirt pins the
                                         * threads before the vCPUs first run */
};

/* Parses path (NULL: CONF_PATH_DEFAULT) and then path.d/NAME.conf in byte order
 * (names starting with '.' skipped). A missing .d folder is not an error; a
 * missing main file is one ("FILE: cannot read: ...") unless missing_ok, which
 * the daemon passes only for CONF_PATH_DEFAULT: a file named with --config that
 * went away must not turn a reload into the built-in defaults. A [domain] pattern seen before (same file or an earlier one) reopens
 * that section: its keys are overridden, its position kept; other sections
 * append. Errors without a line (cannot read, too large) are "FILE: message".
 * On error returns negative errno, writes "FILE:LINE: message" into err
 * (errlen bytes) and leaves *ret untouched. *ret is owned by the caller. */
int conf_load(const char *path, bool missing_ok, struct conf **ret, char *err, size_t errlen);
struct conf *conf_free(struct conf *c);
static inline void conf_freep(struct conf **c) { conf_free(*c); }

/* Reserved CPUs as a bitmap of os indexes: reserved_cpus parsed with hwloc's
 * list syntax ("0,1", "0-3,8"), empty string: none, unset: NULL (caller uses
 * placement_default_reserved()). Returns 0 or -EINVAL. */
int conf_reserved_cpus(const struct conf *c, hwloc_bitmap_t *ret);

/* The effective policy for a domain: built-in defaults, then [defaults], then the
 * first matching [domain] section, then the metadata policy (may be NULL), key by
 * key. ret->source is the last layer that set a key: defaults, config, metadata.
 * c may be NULL (built-in defaults only). */
void conf_policy_for(const struct conf *c, const char *name, const struct policy *metadata,
                     struct policy *ret);
