/* Audit of a domain definition against proven tuning (SPEC.md `advise`).
 * Pure: libxml2 and the placement engine, no libvirt. Every finding carries its
 * measured effect and the report it comes from (the field reports in
 * shared/seeds: which report, which figure).
 *
 * Safe fixes (disk cache/io mode, one iothread per virtio disk and virtio-scsi
 * controller, virtio-net multiqueue, Hyper-V enlightenments on a Windows guest,
 * a serial console beside a display, the guest NUMA cells of a placement that
 * spans host nodes) are applied on request; advisory ones (disk and NIC model,
 * CPU mode, hugepages, balloon, topology, display removal) never are: they need
 * guest drivers, block migration, need host resources or remove a device. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "kvmtune/conf.h"
#include "kvmtune/placement.h"
#include "kvmtune/policy.h"
#include "kvmtune/topo.h"

#define ADVISE_MAX_XML (4u * 1024 * 1024)
#define ADVISE_NOTE_MAX 256

struct advise_finding {
        char id[32];                    /* stable: "disk-cache", "hyperv", ... */
        const char *severity;           /* "warning" or "info" (static) */
        char target[64];                /* "disk vda", "interface 52:54:00:..", "cpu" */
        char *message;                  /* what is wrong + measured effect */
        char *fix;                      /* what to change */
        const char *source;             /* the report and figure behind it (static) */
        bool applied;
};

/* What to audit against. Every member may be zero/NULL. */
struct advise_request {
        const struct conf *conf;        /* [defaults] and [domain] layers; NULL: built-in */
        const struct policy *options;   /* keys in options->set win over every layer */
        bool apply;                     /* make the safe fixes */
        /* The guest NUMA view of a dedicated domain: its placement 'plan' when it
         * has one, else a what-if placement on 'topo' with 'alloc' (NULL: an empty
         * host less the configured or default reserved CPUs). topo NULL: no view. */
        const struct topo *topo;
        const struct alloc *alloc;
        const struct plan *plan;
};

struct advise_result {
        char *name;                     /* the domain's <name> */
        struct policy policy;           /* the policy the audit used */
        struct advise_finding *findings;
        size_t nfinding;
        int nwarning, ninfo;
        int napplied;
        char note[ADVISE_NOTE_MAX];     /* a check that could not run and why, or "" */
        char *xml;                      /* modified definition when apply, else NULL */
};

/* Audits len bytes of domain XML, parsed once through the hardened reader of
 * domxml.c (the same facts and metadata policy). The policy is built-in
 * defaults, then req->conf, then the definition's metadata, then
 * req->options. With req->apply the safe fixes are made and ret->xml receives
 * the serialised definition (also when nothing changed). Returns the number of
 * findings, or -EINVAL (not XML / not a domain / over ADVISE_MAX_XML / a
 * definition libvirt would refuse, message in err); *ret untouched on failure,
 * owned by the caller on success (advise_result_done). req may be NULL. */
int advise_audit(const char *xml, size_t len, const struct advise_request *req,
                 struct advise_result *ret, char *err, size_t errlen);

void advise_result_done(struct advise_result *r);
