/* The kvmtuned control protocol, shared by the daemon (daemon/ctl.c) and
 * kvmtunectl.
 *
 * Transport: AF_UNIX stream socket (default /run/kvmtuned/kvmtuned.sock).
 * Framing: one JSON object per line. Each message is the json-c plain
 * serialisation of an object (which never contains a raw newline: newlines in
 * strings are escaped) followed by a single '\n'. A request is at most
 * PROTO_MAX_REQUEST bytes including the newline; the server answers a longer
 * one with error "too-large" and closes the connection. Replies may be larger
 * (up to PROTO_MAX_REPLY). A client sends one request and reads one reply; it
 * may send the next request on the same connection afterwards.
 *
 * Request: {"method": "kvmtune.v1.List", "params": {...}}
 *          params is optional (an empty object is assumed).
 * Reply:   {"result": {...}}
 *     or   {"error": {"code": "not-found", "message": "no domain 'db9'"}}
 * Unknown fields are ignored on both sides. Error codes are stable strings
 * (PROTO_ERROR_*); messages are for humans.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include <json-c/json.h>

#include "kvmtune/util.h"

/* json_object_put() for _cleanup_json_ (json_object_put accepts NULL). */
static inline void json_object_putp(struct json_object **o) { json_object_put(*o); }
#define _cleanup_json_ _cleanup_(json_object_putp)

/* 1 MiB: room for a large domain XML in a kvmtune.v1.Hook request; with at
 * most 32 clients that bounds the daemon's buffers at 32 MiB. */
#define PROTO_MAX_REQUEST (1024U * 1024U)
#define PROTO_MAX_REPLY (16U * 1024U * 1024U)
#define PROTO_SOCKET_DEFAULT "/run/kvmtuned/kvmtuned.sock"
#define PROTO_SOCKET_ENV "KVMTUNED_SOCKET"

#define PROTO_METHOD_STATUS "kvmtune.v1.Status"
#define PROTO_METHOD_LIST "kvmtune.v1.List"
#define PROTO_METHOD_SHOW "kvmtune.v1.Show"
#define PROTO_METHOD_TOPOLOGY "kvmtune.v1.Topology"
#define PROTO_METHOD_PLAN "kvmtune.v1.Plan"
#define PROTO_METHOD_HUGEPAGES "kvmtune.v1.Hugepages"
#define PROTO_METHOD_HUGEPAGES_RESERVE "kvmtune.v1.HugepagesReserve"
#define PROTO_METHOD_METRICS "kvmtune.v1.Metrics"
#define PROTO_METHOD_REBALANCE "kvmtune.v1.Rebalance"
#define PROTO_METHOD_RELOAD "kvmtune.v1.Reload"
#define PROTO_METHOD_ADVISE "kvmtune.v1.Advise"
#define PROTO_METHOD_ADVISE_APPLY "kvmtune.v1.AdviseApply"
#define PROTO_METHOD_VERIFY "kvmtune.v1.Verify"
#define PROTO_METHOD_ISOLATION "kvmtune.v1.Isolation"
#define PROTO_METHOD_ISOLATION_SET "kvmtune.v1.IsolationSet"

#define PROTO_ERROR_INVALID_REQUEST "invalid-request"   /* not JSON / no method */
#define PROTO_ERROR_TOO_LARGE "too-large"
#define PROTO_ERROR_UNKNOWN_METHOD "unknown-method"
#define PROTO_ERROR_INVALID_PARAMS "invalid-params"
#define PROTO_ERROR_PERMISSION_DENIED "permission-denied"
#define PROTO_ERROR_NOT_FOUND "not-found"
#define PROTO_ERROR_BUSY "busy"
#define PROTO_ERROR_NO_ROOM "no-room"
#define PROTO_ERROR_LIBVIRT "libvirt-unavailable"
#define PROTO_ERROR_TOO_MANY_CLIENTS "too-many-clients"
#define PROTO_ERROR_FAILED "failed"

/* A parsed request. Owns both members. */
struct proto_request {
        char *method;
        struct json_object *params;     /* always an object */
};

void proto_request_done(struct proto_request *r);

/* A parsed reply: exactly one of result / error_code is set. Owns all members. */
struct proto_reply {
        struct json_object *result;     /* object */
        char *error_code;
        char *error_message;
};

void proto_reply_done(struct proto_reply *r);

/* Parse one request line (len bytes, no terminating newline required, no NUL
 * required). Unknown fields are ignored. Returns 0, -EMSGSIZE when len exceeds
 * PROTO_MAX_REQUEST, -EBADMSG when it is not a JSON object, -EINVAL when
 * "method" is missing or not a string or "params" is present but not an object.
 * When ret_error is not NULL it receives a malloc'd human message on failure. */
int proto_request_parse(const char *buf, size_t len, struct proto_request *ret,
                        char **ret_error);

/* Serialise a message, newline included; the caller frees the string. params
 * and result may be NULL (an empty object is sent); they are not consumed. */
char *proto_request_format(const char *method, struct json_object *params);
char *proto_result_format(struct json_object *result);
char *proto_error_format(const char *code, const char *message);

/* The error code for a negative errno returned by a method (see daemon/ctl.h). */
const char *proto_error_from_errno(int err);

/* Line framing over a byte stream. */
struct proto_buf {
        char *data;
        size_t len;
        size_t alloc;
};

void proto_buf_done(struct proto_buf *b);
void proto_buf_append(struct proto_buf *b, const void *p, size_t n);
/* Drop the first n bytes. */
void proto_buf_consume(struct proto_buf *b, size_t n);
/* If a complete line is buffered, point *ret_line at it (inside the buffer,
 * valid until the next append/consume), set *ret_len to its length without the
 * newline, and return 1; the caller consumes *ret_len + 1 bytes. Return 0 when
 * no complete line is there yet, -EMSGSIZE when the pending line is already
 * longer than max (newline included). */
int proto_buf_line(const struct proto_buf *b, size_t max, const char **ret_line,
                   size_t *ret_len);

/* The socket path: explicit (when not NULL), else $KVMTUNED_SOCKET when set and
 * non-empty, else PROTO_SOCKET_DEFAULT. Never NULL; not to be freed. */
const char *proto_socket_path(const char *explicit_path);

/* Client side: connect to the daemon at path. Returns a connected (blocking)
 * fd, or a negative errno (-ENOENT, -ECONNREFUSED, -EACCES, -ENAMETOOLONG...). */
int proto_connect(const char *path);
/* Fills an AF_UNIX address for path: 0, or -ENAMETOOLONG. */
struct sockaddr_un;
int proto_sockaddr(const char *path, struct sockaddr_un *ret);

/* Send one request on fd and read its reply, giving up after timeout_ms (for the
 * whole exchange; <= 0: no limit). Returns 0 with *ret filled (a daemon error is
 * still 0: look at ret->error_code, also for a connection the daemon refused
 * before the request went out), -ETIMEDOUT, -ECONNRESET when the daemon
 * closed the connection without a reply, -EBADMSG for a malformed reply, or
 * another negative errno from the socket. */
int proto_call(int fd, const char *method, struct json_object *params,
               int timeout_ms, struct proto_reply *ret);
/* proto_call() with the request already formatted (proto_request_format()),
 * for a caller that measures it first. */
int proto_call_formatted(int fd, const char *req, int timeout_ms, struct proto_reply *ret);
