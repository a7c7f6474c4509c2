/* Offline planning: `kvmtunectl plan --topology FILE.xml --workload FILE.json`
 * replays a list of start/stop events through the placement engine and reports
 * where each domain lands (SPEC.md "Offline planning workload"). Parsing is
 * strict: any unknown key, wrong type or inconsistent event is an error naming
 * the event (numbered from 1, in file order). */
#pragma once

#include <stdbool.h>
#include <stdio.h>
#include <json-c/json.h>

#include "kvmtune/placement.h"
#include "kvmtune/topo.h"

#define WORKLOAD_MAX_SIZE (16u * 1024 * 1024)   /* bytes of JSON */
#define WORKLOAD_MAX_EVENTS 100000
#define WORKLOAD_ERR_MAX 512

enum workload_op { WORKLOAD_START, WORKLOAD_STOP };

struct workload_event {
        enum workload_op op;
        char *name;
        struct request req;             /* start only; policy over policy_init_default() */
};

struct workload {
        char *reserved_cpus;            /* as written; NULL: placement_default_reserved() */
        int nevent;
        struct workload_event *events;
};

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

/* Prints a report from workload_replay() as an aligned table with a summary. */
void workload_print_human(struct json_object *report, FILE *out);

/* The whole `kvmtunectl plan --topology --workload` command. sysfs_root may be
 * NULL. Returns the CLI exit status: 0 ok (refusals are results, not failures),
 * 1 unreadable or invalid input, 2 usage error (a path missing). */
int workload_plan_main(const char *topology_path, const char *workload_path, const char *sysfs_root,
                       bool json, FILE *out, FILE *errout);
