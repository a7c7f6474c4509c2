#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <poll.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>

#include "kvmtune/proto.h"
#include "proto-priv.h"
#include "kvmtune/util.h"


void proto_request_done(struct proto_request *r) {
        free(r->method);
        json_object_put(r->params);
        *r = (struct proto_request) { 0 };
}

void proto_reply_done(struct proto_reply *r) {
        json_object_put(r->result);
        free(r->error_code);
        free(r->error_message);
        *r = (struct proto_reply) { 0 };
}

static void tokener_freep(struct json_tokener **t) {
        if (*t)
                json_tokener_free(*t);
}

static bool only_space(const char *p, size_t n) {
        for (size_t i = 0; i < n; i++)
                if (!strchr(" \t\r\n", p[i]))
                        return false;
        return true;
}

static struct json_object *fail_parse(struct json_object *o, char **ret_error, const char *msg) {
        if (ret_error)
                *ret_error = xstrdup(msg);
        json_object_put(o);
        return NULL;
}

/* Parse len bytes as one JSON object; trailing bytes other than whitespace are
 * an error (two objects on one line is not a request). */
static struct json_object *parse_object(const char *buf, size_t len, char **ret_error) {
        _cleanup_(tokener_freep) struct json_tokener *tok = json_tokener_new();
        enum json_tokener_error e;
        struct json_object *o;
        size_t end;

        if (!tok)
                abort();
        o = json_tokener_parse_ex(tok, buf, (int) len);
        e = json_tokener_get_error(tok);
        end = json_tokener_get_parse_end(tok);
        if (!o && e == json_tokener_continue) {
                /* A NUL ends a pending bare value ("12"); an open object stays open. */
                o = json_tokener_parse_ex(tok, "", 1);
                e = json_tokener_get_error(tok);
        }
        if (!o || e != json_tokener_success) {
                char msg[128];

                snprintf(msg, sizeof(msg), "malformed JSON: %s", json_tokener_error_desc(e));
                return fail_parse(o, ret_error, msg);
        }
        if (!only_space(buf + end, len - end))
                return fail_parse(o, ret_error, "trailing data after the JSON object");
        if (!json_object_is_type(o, json_type_object))
                return fail_parse(o, ret_error, "message is not a JSON object");
        return o;
}

static int set_error(char **ret_error, int r, const char *msg) {
        if (ret_error)
                *ret_error = xstrdup(msg);
        return r;
}

int proto_request_parse(const char *buf, size_t len, struct proto_request *ret,
                        char **ret_error) {
        _cleanup_json_ struct json_object *o = NULL;
        struct json_object *method, *params;

        if (len > PROTO_MAX_REQUEST)
                return set_error(ret_error, -EMSGSIZE, "request too large");
        if (memchr(buf, '\0', len))
                return set_error(ret_error, -EBADMSG, "NUL byte in request");
        o = parse_object(buf, len, ret_error);
        if (!o)
                return -EBADMSG;
        if (!json_object_object_get_ex(o, "method", &method) ||
            !json_object_is_type(method, json_type_string))
                return set_error(ret_error, -EINVAL, "request has no \"method\" string");
        if (json_object_object_get_ex(o, "params", &params) && params &&
            !json_object_is_type(params, json_type_object))
                return set_error(ret_error, -EINVAL, "\"params\" is not an object");

        ret->method = xstrdup(json_object_get_string(method));
        ret->params = params ? json_object_get(params) : json_object_new_object();
        return 0;
}

static int reply_parse_error(struct json_object *err, struct proto_reply *ret) {
        struct json_object *code, *msg;

        if (!json_object_is_type(err, json_type_object) ||
            !json_object_object_get_ex(err, "code", &code) ||
            !json_object_is_type(code, json_type_string))
                return -EBADMSG;
        ret->error_code = xstrdup(json_object_get_string(code));
        ret->error_message = xstrdup(
                json_object_object_get_ex(err, "message", &msg) &&
                json_object_is_type(msg, json_type_string)
                ? json_object_get_string(msg) : ret->error_code);
        return 0;
}

int proto_reply_parse(const char *buf, size_t len, struct proto_reply *ret) {
        _cleanup_json_ struct json_object *o = NULL;
        struct proto_reply r = { 0 };
        struct json_object *v;

        if (len > PROTO_MAX_REPLY)
                return -EMSGSIZE;
        o = parse_object(buf, len, NULL);
        if (!o)
                return -EBADMSG;
        if (json_object_object_get_ex(o, "error", &v) && v) {
                if (reply_parse_error(v, &r) < 0)
                        return -EBADMSG;
        } else if (json_object_object_get_ex(o, "result", &v) &&
                   json_object_is_type(v, json_type_object)) {
                r.result = json_object_get(v);
        } else
                return -EBADMSG;
        *ret = r;
        return 0;
}

static char *format_line(struct json_object *o) {
        return xasprintf("%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
}

char *proto_request_format(const char *method, struct json_object *params) {
        _cleanup_json_ struct json_object *o = json_object_new_object();

        json_object_object_add(o, "method", json_object_new_string(method));
        json_object_object_add(o, "params",
                               params ? json_object_get(params) : json_object_new_object());
        return format_line(o);
}

char *proto_result_format(struct json_object *result) {
        _cleanup_json_ struct json_object *o = json_object_new_object();

        json_object_object_add(o, "result",
                               result ? json_object_get(result) : json_object_new_object());
        return format_line(o);
}

char *proto_error_format(const char *code, const char *message) {
        _cleanup_json_ struct json_object *o = json_object_new_object();
        struct json_object *e = json_object_new_object();

        json_object_object_add(e, "code", json_object_new_string(code));
        json_object_object_add(e, "message", json_object_new_string(message ? message : code));
        json_object_object_add(o, "error", e);
        return format_line(o);
}

const char *proto_error_from_errno(int err) {
        switch (err < 0 ? -err : err) {
        case ENOENT: return PROTO_ERROR_NOT_FOUND;
        case EINVAL: return PROTO_ERROR_INVALID_PARAMS;
        case EPERM: case EACCES: return PROTO_ERROR_PERMISSION_DENIED;
        case EBUSY: case EAGAIN: return PROTO_ERROR_BUSY;
        case ENOSPC: return PROTO_ERROR_NO_ROOM;
        case ENOTCONN: return PROTO_ERROR_LIBVIRT;
        case EMSGSIZE: return PROTO_ERROR_TOO_LARGE;
        default: return PROTO_ERROR_FAILED;
        }
}

void proto_buf_done(struct proto_buf *b) {
        free(b->data);
        *b = (struct proto_buf) { 0 };
}

void proto_buf_append(struct proto_buf *b, const void *p, size_t n) {
        if (b->len + n > b->alloc) {
                b->alloc = (b->len + n) * 2;
                b->data = xrealloc(b->data, b->alloc);
        }
        memcpy(b->data + b->len, p, n);
        b->len += n;
}

void proto_buf_consume(struct proto_buf *b, size_t n) {
        if (n >= b->len) {
                b->len = 0;
                return;
        }
        memmove(b->data, b->data + n, b->len - n);
        b->len -= n;
}

int proto_buf_line(const struct proto_buf *b, size_t max, const char **ret_line,
                   size_t *ret_len) {
        const char *nl = b->len ? memchr(b->data, '\n', b->len) : NULL;

        if (!nl)
                return b->len >= max ? -EMSGSIZE : 0;
        if ((size_t) (nl - b->data) + 1 > max)
                return -EMSGSIZE;
        *ret_line = b->data;
        *ret_len = (size_t) (nl - b->data);
        return 1;
}

const char *proto_socket_path(const char *explicit_path) {
        const char *e;

        if (explicit_path)
                return explicit_path;
        e = getenv(PROTO_SOCKET_ENV);
        return e && *e ? e : PROTO_SOCKET_DEFAULT;
}

int proto_sockaddr(const char *path, struct sockaddr_un *ret) {
        if (strlen(path) >= sizeof(ret->sun_path))
                return -ENAMETOOLONG;
        *ret = (struct sockaddr_un){ .sun_family = AF_UNIX };
        strcpy(ret->sun_path, path);
        return 0;
}

int proto_connect(const char *path) {
        struct sockaddr_un sa;
        _cleanup_close_ int fd = -1;
        int r;

        if (proto_sockaddr(path, &sa) < 0)
                return -ENAMETOOLONG;
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        if (connect(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0)
                return -errno;
        r = fd;
        fd = -1;
        return r;
}

static int64_t now_ms(void) {
        return (int64_t)(now_usec() / 1000);
}

/* Wait until fd is ready for events or the deadline (-1: none) passes. */
static int wait_fd(int fd, short events, int64_t deadline) {
        struct pollfd p = { .fd = fd, .events = events };
        int timeout = -1, r;

        if (deadline >= 0) {
                int64_t left = deadline - now_ms();
                timeout = left > 0 ? (int) left : 0;
        }
        r = poll(&p, 1, timeout);
        if (r < 0)
                return errno == EINTR ? 0 : -errno;
        return r == 0 ? -ETIMEDOUT : 0;
}

static int send_all(int fd, const char *p, size_t n, int64_t deadline) {
        while (n > 0) {
                ssize_t k;
                int r = wait_fd(fd, POLLOUT, deadline);

                if (r < 0)
                        return r;
                k = send(fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
                if (k < 0 && (errno == EAGAIN || errno == EINTR))
                        continue;
                if (k < 0)
                        return -errno;
                p += k;
                n -= (size_t) k;
        }
        return 0;
}

static int recv_line(int fd, struct proto_buf *b, int64_t deadline, size_t *ret_len) {
        for (;;) {
                char chunk[16384];
                const char *line;
                ssize_t k;
                int r = proto_buf_line(b, PROTO_MAX_REPLY, &line, ret_len);

                if (r != 0)
                        return r < 0 ? r : 0;
                r = wait_fd(fd, POLLIN, deadline);
                if (r < 0)
                        return r;
                k = recv(fd, chunk, sizeof(chunk), MSG_DONTWAIT);
                if (k < 0 && (errno == EAGAIN || errno == EINTR))
                        continue;
                if (k < 0)
                        return -errno;
                if (k == 0)
                        return -ECONNRESET;
                proto_buf_append(b, chunk, (size_t) k);
        }
}

int proto_call_formatted(int fd, const char *req, int timeout_ms, struct proto_reply *ret) {
        int64_t deadline = timeout_ms > 0 ? now_ms() + timeout_ms : -1;
        struct proto_buf b = { 0 };
        size_t len;
        int r;

        r = send_all(fd, req, strlen(req), deadline);
        /* A server that refuses the connection says why in one line before it
         * closes, maybe before the request went out: read that line. */
        if (r >= 0 || r == -EPIPE || r == -ECONNRESET)
                r = recv_line(fd, &b, deadline, &len);
        if (r >= 0)
                r = proto_reply_parse(b.data, len, ret);
        proto_buf_done(&b);
        return r;
}

int proto_call(int fd, const char *method, struct json_object *params,
               int timeout_ms, struct proto_reply *ret) {
        _cleanup_free_ char *req = proto_request_format(method, params);

        return proto_call_formatted(fd, req, timeout_ms, ret);
}
