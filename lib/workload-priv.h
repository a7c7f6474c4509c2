/* lib/workload.c's exports for its tests only: the CLI runs the whole command
 * through workload_plan_main() (workload.h). */
#pragma once

#include "kvmtune/workload.h"

/* Parses a workload document. Checks the events against each other too (start
 * of a name already running, stop of a name not running). Returns 0, or -EINVAL
 * with a message such as `event 3: unknown op "pause"` in err. *ret is owned by
 * the caller. */
int workload_parse(const char *json, size_t len, struct workload **ret, char *err, size_t errlen);

/* Reads and parses a file (-errno when unreadable, message in err). */
int workload_load(const char *path, struct workload **ret, char *err, size_t errlen);

struct workload *workload_free(struct workload *w);

/* Replays w on t and returns the report as JSON:
 *   {"results": [one per event, in order], "summary": {...}}
 * A placed start is render_domain_json() plus "event", "op", "l3_groups",
 * "split" (and "note" when the engine says why); a refused start is
 * {"event", "op", "name", "refused": reason}; a stop is {"event", "op": "stop",
 * "name"}. summary: {"placed", "refused", "one_node" (placed on a single node),
 * "mean_l3_groups" (over placed domains with dedicated vCPUs), "free_pus_per_node": {"<node os>": n}
 * after the last event}. Returns 0, or -EINVAL when reserved_cpus is not a CPU
 * list of this host (message in err). */
int workload_replay(const struct topo *t, const struct workload *w, struct json_object **ret,
                    char *err, size_t errlen);
