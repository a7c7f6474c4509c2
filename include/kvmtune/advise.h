/* Audit of a domain definition against proven tuning (SPEC.md `advise`).
 * Pure: libxml2 only, no libvirt. The findings cite the measured effects of the
 * field reports (virtio vs IDE/SCSI, cache=none + io=native, iothreads,
 * Hyper-V enlightenments, host-passthrough, hugepages).
 *
 * Safe fixes (disk cache/io mode, iothreads, Hyper-V enlightenments on a
 * Windows guest) are applied on request; advisory ones (disk bus, CPU mode,
 * hugepages, balloon, topology) never are: they need guest drivers, block
 * migration or need host resources. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "kvmtune/policy.h"

#define ADVISE_MAX_XML (4u * 1024 * 1024)

struct advise_finding {
        char id[32];                    /* stable: "disk-cache", "hyperv", ... */
        const char *severity;           /* "warning" or "info" (static) */
        char target[64];                /* "disk vda", "domain", "cpu" */
        char *message;                  /* what is wrong + measured effect */
        char *fix;                      /* what to change */
        bool applied;
};

struct advise_result {
        struct advise_finding *findings;
        size_t nfinding;
        int napplied;
        char *xml;                      /* modified definition when apply, else NULL */
};

/* Audits len bytes of domain XML under policy (NULL: defaults). With apply the
 * safe fixes are made and ret->xml receives the serialised definition (also
 * when nothing changed). Returns the number of findings, or -EINVAL (not a
 * domain / not XML / over ADVISE_MAX_XML, message in err); *ret untouched on
 * failure, owned by the caller on success (advise_result_done). */
int advise_audit(const char *xml, size_t len, const struct policy *policy, bool apply,
                 struct advise_result *ret, char *err, size_t errlen);

void advise_result_done(struct advise_result *r);
