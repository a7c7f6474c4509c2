/* lib/proto.c's exports for its tests and fuzzer only: clients get replies
 * through proto_call() (proto.h). */
#pragma once

#include "kvmtune/proto.h"

/* Parse one reply line. Returns 0, -EMSGSIZE (over PROTO_MAX_REPLY), -EBADMSG
 * (not a JSON object, or neither "result" object nor "error" object with a
 * string "code"). */
int proto_reply_parse(const char *buf, size_t len, struct proto_reply *ret);
