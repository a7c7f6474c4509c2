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

/* The whole `kvmtunectl plan --topology --workload` command. sysfs_root may be
 * NULL. With json it prints the report of workload_replay() (its format: lib/workload-priv.h),
 * else a table. Returns the CLI exit status: 0 ok (refusals are results, not
 * failures), 1 unreadable or invalid input, 2 usage error (a path missing). */
int workload_plan_main(const char *topology_path, const char *workload_path, const char *sysfs_root,
                       bool json, FILE *out, FILE *errout);
