/* Hugepage pools: plan per node and page size from [hugepages] (decide), and
 * set them through sysfs under a root (act) with verification, compaction and
 * retries. The act step goes through a small ops table so tests can put a fake
 * kernel (one that grants only part of a request) in place of sysfs.
 *
 * Sysfs files, per node N and size (2048kB or 1048576kB):
 *   DIR/sys/devices/system/node/nodeN/hugepages/hugepages-SIZEkB/
 *       nr_hugepages  free_hugepages  surplus_hugepages (optional)
 *   DIR/sys/devices/system/node/nodeN/compact   written "1" before a retry,
 *   DIR/proc/sys/vm/compact_memory   or this one when the node has no compact file
 *   DIR/proc/sys/kernel/osrelease    decides the boot command line syntax
 *   DIR/proc/mounts, DIR/proc/meminfo  hugetlbfs mounts and their page sizes */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kvmtune/conf.h"
#include "kvmtune/topo.h"

/* Writes of nr_hugepages per pool: the first, then retries after compaction. */
#define HUGEPAGES_MAX_TRIES 3
/* Linux 5.16 added the per-node "hugepages=0:N,1:M" boot syntax (commit
 * b5389086ad7b, Documentation/admin-guide/mm/hugetlbpage.rst). */
#define HUGEPAGES_NODE_SYNTAX_MAJOR 5
#define HUGEPAGES_NODE_SYNTAX_MINOR 16

/* One pool as sysfs shows it. nr includes surplus pages. */
struct hugepages_pool {
        uint64_t nr;                    /* nr_hugepages */
        uint64_t free;                  /* free_hugepages */
        uint64_t surplus;               /* surplus_hugepages, 0 when absent */
};

/* Pages not free, surplus pages included. */
static inline uint64_t hugepages_pool_in_use(const struct hugepages_pool *p) {
        return p->nr > p->free ? p->nr - p->free : 0;
}
/* Persistent pages: what nr_hugepages is set to, surplus pages not counted. */
static inline uint64_t hugepages_pool_persistent(const struct hugepages_pool *p) {
        return p->nr > p->surplus ? p->nr - p->surplus : 0;
}
/* Persistent pages in use: the pages in use that are not surplus pages. The
 * floor below which a pool's persistent size is never set (a page in use stays
 * in the pool); surplus pages go back to the kernel when freed whatever the
 * persistent size, so they do not raise it. */
static inline uint64_t hugepages_pool_persistent_in_use(const struct hugepages_pool *p) {
        uint64_t used = hugepages_pool_in_use(p);

        return used > p->surplus ? used - p->surplus : 0;
}

struct hugepages_target {
        unsigned node_os;
        int size;                       /* TOPO_PAGE_2M or TOPO_PAGE_1G */
        uint64_t count;
};

/* What to set, in node order within each size. targets owned by the plan. */
struct hugepages_plan {
        int ntarget;
        struct hugepages_target *targets;
};

/* Outcome for one pool. */
struct hugepages_result {
        unsigned node_os;
        int size;
        uint64_t requested;             /* count asked for */
        uint64_t target;                /* requested, raised to in_use (which is at
                                         * most before: asking less never grows) */
        uint64_t in_use;                /* persistent pages in use before any write:
                                         * nr - free - surplus, at least 0 */
        uint64_t before;                /* persistent pages before */
        uint64_t reserved;              /* persistent pages after, read back */
        int writes;                     /* nr_hugepages writes (0: already there) */
        int compactions;                /* compact (or compact_memory) writes */
        bool clamped;                   /* target raised to in_use */
        int error;                      /* 0 or negative errno; then reserved == before */
};

static inline bool hugepages_result_short(const struct hugepages_result *r) {
        return r->error == 0 && r->reserved < r->target;
}

/* The act step. root is the sysfs root the hostfs ops work under; userdata is
 * for other implementations (tests). All return 0 or negative errno. */
struct hugepages_host;
struct hugepages_ops {
        int (*read_pool)(const struct hugepages_host *h, unsigned node_os, int size,
                         struct hugepages_pool *ret);
        int (*write_pool)(const struct hugepages_host *h, unsigned node_os, int size,
                          uint64_t count);
        int (*compact)(const struct hugepages_host *h, unsigned node_os);
};

struct hugepages_host {
        const struct hugepages_ops *ops;
        const char *root;               /* NULL or "/" is the real host */
        void *userdata;
};

/* The real thing: hostfs reads and writes under h->root. */
extern const struct hugepages_ops hugepages_ops_hostfs;

/* "2M", "1G" for a size index; NULL for anything else. */
const char *hugepages_size_name(int size);
/* Page size in KiB for a size index (2048, 1048576); 0 for anything else. */
uint64_t hugepages_size_kib(int size);
/* "2M"/"2048k"/"2MiB", "1G"/"1GiB"/"1048576k" to a size index, else -EINVAL. */
int hugepages_size_from_string(const char *s);

/* Decide: targets from c->hugepages[] and the host's nodes. Per-node counts are
 * taken as given (nodes not named are left alone); a plain total is spread
 * evenly over the nodes with memory and CPUs (memory-only nodes, such as HBM
 * or CXL, hold no guest's memory; when no node with memory has CPUs, over all
 * nodes with memory; all nodes when no memory size is known), the remainder
 * one page each to the lowest-numbered nodes. A node named in
 * the config that the host does not have, or named twice, is an error: returns
 * -EINVAL with a message in err. *ret owned by the caller (hugepages_plan_done). */
int hugepages_plan(const struct conf *c, const struct topo *t, struct hugepages_plan *ret,
                   char *err, size_t errlen);
void hugepages_plan_done(struct hugepages_plan *p);

/* The run-time change behind "kvmtunectl hugepages reserve": the same checks as
 * hugepages_apply_pool on the real sysfs ops under sysfs_root. */
int hugepages_set_pool(const char *sysfs_root, unsigned node_os, int size_index,
                       uint64_t count, struct hugepages_result *ret);

/* Applies a whole plan; ret_results has p->ntarget slots. Returns the number
 * of pools short or failed (0: everything reserved). */
int hugepages_apply_plan(const struct hugepages_host *h, const struct hugepages_plan *p,
                         struct hugepages_result *ret_results);

/* "node 1 1G: 16 requested, 12 reserved (short by 4 after 3 tries with
 * compaction)". Returns buf. */
const char *hugepages_format_result(const struct hugepages_result *r, char *buf, size_t len);

/* True when the osrelease string ("6.1.0-18-amd64") is at least 5.16. */
bool hugepages_kernel_has_node_syntax(const char *osrelease);
/* Kernel command line reserving at boot every size that came out short, with
 * all of that size's targets: "hugepagesz=1G hugepages=0:16,1:16", or with
 * node_syntax false the plain total "hugepagesz=1G hugepages=32". NULL when
 * nothing is short. Caller frees. */
char *hugepages_boot_cmdline(const struct hugepages_result *results, int n, bool node_syntax);

/* hugetlbfs mounts by page size, from /proc/mounts text. A mount without a
 * pagesize= option has default_kib pages (Hugepagesize in /proc/meminfo).
 * ret_paths[size] is the first mount point of that size or NULL; caller frees
 * each. Returns the number of sizes found. */
int hugepages_find_mounts(const char *mounts, uint64_t default_kib,
                          char *ret_paths[TOPO_PAGE_SIZES]);
/* Where we would mount a missing size: /dev/hugepages for 2M unless taken by
 * another size, /dev/hugepages1G for 1G. Returns a static string. */
const char *hugepages_mount_point(int size, char *const paths[TOPO_PAGE_SIZES]);
