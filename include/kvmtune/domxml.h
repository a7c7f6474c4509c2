/* Domain XML (libvirt's virDomainGetXMLDesc output, or what the qemu hook reads on
 * stdin) parsed with libxml2 into the facts kvmtuned needs. Pure: no libvirt calls. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kvmtune/policy.h"
#include "kvmtune/util.h"

#define DOMXML_POLICY_NS "urn:kvmtuned:tuning:1"
#define DOMXML_PLACEMENT_NS "urn:kvmtuned:placement:1"

struct domxml_pin {
        int id;                         /* vcpu number or iothread id */
        char *cpuset;                   /* as written: "2-3,6" */
};

struct domxml {
        char *name;
        char uuid[37];
        char *type;                     /* "kvm", "qemu" */
        int id;                         /* running domain id, -1 when inactive */
        int vcpus;                      /* current vCPUs */
        int niothread;
        int *iothread_ids;              /* ids as libvirt numbers them (from 1) */
        uint64_t memory_kib;            /* <currentMemory> or <memory> */
        unsigned long page_kib;         /* <memoryBacking><hugepages><page size>, 0 none
                                         * or the host's default size (see hugepages) */
        bool hugepages;                 /* <memoryBacking><hugepages> present */
        bool has_policy;
        struct policy policy;           /* <metadata><kvmtune:policy>, set keys only */
        char *placement;                /* <metadata> our own placement record, raw XML */
        int npci;
        char (*pci)[16];                /* hostdev PCI addresses "0000:3b:00.0" */
        /* pins already in <cputune>, as libvirt reports them */
        int nvcpupin;
        struct domxml_pin *vcpupin;
        char *emulatorpin;
        int niothreadpin;
        struct domxml_pin *iothreadpin;
        char *numatune_mode;            /* "strict", ... or NULL */
        char *numatune_nodeset;
};

/* Returns 0 or negative errno (-EINVAL for XML that is not a domain, with a
 * message in err). *ret is owned by the caller. */
int domxml_parse(const char *xml, size_t len, struct domxml **ret, char *err, size_t errlen);
struct domxml *domxml_free(struct domxml *d);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct domxml *, domxml_free)
#define _cleanup_domxml_ _cleanup_(domxml_freep)
