/* kvmtunectl top: a live view of the guests, one line each (state, policy,
 * PUs, vCPU busy %, vCPU run-queue delay %), refreshed every second from two
 * samples of kvmtune.v1.List (the vCPUs' run_ns and delay_ns counters). */
#pragma once

#include <stdbool.h>
#include <stdio.h>

struct json_object;

/* Fetches the List result ({"domains": [...]}, owned by the caller); returns 0
 * or the exit status to end with. */
typedef int (*top_fetch_fn)(void *userdata, struct json_object **ret);

/* Until interrupted (or, once, after one frame over a 1 s interval), prints a
 * frame to f each second; a terminal frame starts by clearing the screen.
 * Returns 0 or the exit status fetch returned. */
int top_run(top_fetch_fn fetch, void *userdata, bool once, FILE *f);
