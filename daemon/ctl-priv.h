/* daemon/ctl.c's exports for its tests and the stand-in daemon only: the
 * daemon runs the server with its defaults (ctl.h). */
#pragma once

#include "ctl.h"

/* Tuning: connection cap, idle timeout of a silent client. */
void ctl_server_set_max_connections(struct ctl_server *s, unsigned max);
void ctl_server_set_idle_timeout(struct ctl_server *s, uint64_t usec);
/* The peer uid allowed to call privileged methods (default 0, root). Tests
 * running as root set another uid to see the refusal, getuid() the success. */
void ctl_server_set_privileged_uid(struct ctl_server *s, uid_t uid);

/* Number of open client connections. */
unsigned ctl_server_connections(const struct ctl_server *s);
