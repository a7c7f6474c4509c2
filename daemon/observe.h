/* What the guests get on the live system, read for the operator: their vCPU
 * threads' scheduler counters (run time, run-queue delay) for show, list and
 * the metrics, and the drift of threads, cgroup cpusets and memory nodes from
 * the placement kvmtuned applied (kvmtune.v1.Verify). Reads /proc and the
 * cgroup files through hostfs; changes nothing. */
#pragma once

#include "daemon.h"
#include "kvmtune/schedstat.h"

struct json_object;

/* Fills ret[N] with vCPU N's counters (ret has dm->vcpus entries, zeroed for
 * vCPUs whose thread is not found). Returns how many vCPUs were read, or a
 * negative errno when the QEMU process cannot be scanned. */
int observe_vcpu_stats(const struct daemon *d, const struct domain *dm, struct schedstat *ret);
/* Adds "run_ns" and "delay_ns" to each element of a show/list "vcpus" array. */
void observe_vcpus_json(const struct daemon *d, const struct domain *dm, struct json_object *vcpus);
/* Whether verify compares this domain: kvmtuned placed it (tuned, shared,
 * unplaced on the shared pool) and it runs. */
bool observe_verifiable(const struct domain *dm);
/* {"name", "state", "checked": N, "drift": [{"what", "want", "got"}]}. */
struct json_object *observe_verify_json(const struct daemon *d, const struct domain *dm);
