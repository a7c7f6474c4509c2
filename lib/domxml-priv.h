/* lib/domxml.c's exports for its tests and fuzzer only: the daemon reads the
 * policy as part of the whole definition (domxml_parse, domxml.h). */
#pragma once

#include "kvmtune/domxml.h"

/* Parses the policy element alone (what virDomainGetMetadata returns for our
 * namespace). Unknown attributes are ignored, bad values are -EINVAL. */
int domxml_parse_policy(const char *xml, struct policy *ret, char *err, size_t errlen);

/* Formats a policy element for virDomainSetMetadata (keys in p->set only). */
char *domxml_format_policy(const struct policy *p);
