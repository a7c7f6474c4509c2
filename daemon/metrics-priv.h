/* daemon/metrics.c's exports for its tests only. */
#pragma once

#include "metrics.h"

/* Adds one observation; negative or NaN seconds count as 0. */
void metrics_histogram_observe(struct metrics_histogram *h, double seconds);

/* value escaped as a Prometheus label value (\\, \", newline). Caller frees. */
char *metrics_escape_label(const char *value);
