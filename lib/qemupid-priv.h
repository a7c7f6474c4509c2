/* lib/qemupid.c's exports for its tests only: the daemon asks qemupid.h for
 * a domain's QEMU pid. */
#pragma once

#include "kvmtune/qemupid.h"

/* The pid attribute of the <domstatus> root element of status XML text.
 * 0, or -EINVAL when there is no such element or attribute or it is not a
 * pid (1..INT_MAX). */
int qemupid_parse_status(const char *xml, pid_t *ret);

/* Whether a command line as /proc/PID/cmdline holds it (len bytes of
 * NUL-separated arguments) carries "-uuid" followed by uuid (any case). */
bool qemupid_cmdline_has_uuid(const char *cmd, size_t len, const char *uuid);
