/* The placement record: what kvmtuned applied to a domain, kept in its
 * metadata (namespace urn:kvmtuned:placement:1, see lib/record.c for the
 * format), so a restarted daemon rebuilds its allocations without moving a
 * running guest. Pure: format and parse only, libvirt stores it. */
#pragma once

#include <stdbool.h>

#include "kvmtune/pinset.h"
#include "kvmtune/placement.h"
#include "kvmtune/policy.h"
#include "kvmtune/topo.h"

#define RECORD_KEY "kvmtuned-placement"         /* the element's prefix */

struct record {
        bool dedicated;
        bool foreign;                   /* dedicated on CPUs or nodes this host lacks
                                         * (made on another host): no plan */
        struct pinset vcpus;            /* the recorded vCPU cpusets (vCPUs only) */
        struct plan plan;               /* dedicated, not foreign: the placement to commit */
        bool has_policy;                /* older records name no policy */
        bool policy_readable;           /* else it matches no policy */
        struct policy policy;           /* the policy it was made for */
};

/* The record of a domain whose vCPUs got pins->vcpu[]: dedicated with the
 * plan's PUs, nodes and memory when plan is not NULL, else shared. The
 * iothreads are named by pins->iothread_id. Caller frees. */
char *record_format(const struct topo *t, const struct plan *dedicated, const struct pinset *pins,
                    const struct policy *policy);

/* Parses a record once, for every later question. A dedicated record naming
 * CPUs or nodes t does not have (made on another host) parses as foreign,
 * without a plan: it can never be adopted here. 0 or -EINVAL (not a record,
 * malformed); *ret untouched on failure, else freed with record_done(). */
int record_parse(const struct topo *t, const char *xml, struct record *ret);
void record_done(struct record *r);

/* Whether the record was made for this policy (one naming none: yes). */
bool record_policy_matches(const struct record *r, const struct policy *p);
