/* lib/conf.c's exports for its tests and fuzzer only: the daemon loads files
 * (conf_load) and asks conf_policy_for() (conf.h). */
#pragma once

#include "kvmtune/conf.h"

/* Parses one buffer as if it were file 'name' (tests, fuzzing). */
int conf_load_string(const char *name, const char *text, struct conf **ret, char *err, size_t errlen);

/* The first [domain] section whose glob matches name, or NULL. */
const struct conf_domain *conf_domain_match(const struct conf *c, const char *name);
