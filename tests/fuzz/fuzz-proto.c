/* libFuzzer target for the control protocol as the daemon reads it: the input
 * is a byte stream from a client, split into lines by proto_buf with the
 * request cap, each line parsed as a request (and as a reply, as kvmtunectl
 * would), with the invariants daemon/ctl.c relies on. Build with
 * --enable-fuzzing (clang). */
#include "config.h"

#include <assert.h>
#include <errno.h>
#include <stdint.h>

#include "kvmtune/proto.h"
#include "kvmtune/util.h"
#include "../../lib/proto-priv.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A parsed request formats and parses back to the same method. */
static void check_request(const struct proto_request *req) {
        _cleanup_free_ char *line = NULL;
        struct proto_request again = { 0 };

        assert(req->method);
        assert(json_object_is_type(req->params, json_type_object));
        line = proto_request_format(req->method, req->params);
        assert(strlen(line) > 0 && line[strlen(line) - 1] == '\n');
        assert(memchr(line, '\n', strlen(line) - 1) == NULL);      /* framing holds */
        if (strlen(line) <= PROTO_MAX_REQUEST) {
                assert(proto_request_parse(line, strlen(line) - 1, &again, NULL) == 0);
                assert(streq(again.method, req->method));
                proto_request_done(&again);
        }
}

static void check_line(const char *line, size_t len) {
        struct proto_request req = { 0 };
        struct proto_reply rep = { 0 };
        char *error = NULL;
        int r;

        r = proto_request_parse(line, len, &req, &error);
        assert(r == 0 || r == -EBADMSG || r == -EINVAL || r == -EMSGSIZE);
        assert((r == 0) == (error == NULL));
        if (r == 0)
                check_request(&req);
        proto_request_done(&req);
        free(error);
        if (proto_reply_parse(line, len, &rep) == 0)
                assert(!rep.result != !rep.error_code);
        proto_reply_done(&rep);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        struct proto_buf b = { 0 };
        const char *line;
        size_t len;
        int r;

        proto_buf_append(&b, data, size);
        while ((r = proto_buf_line(&b, PROTO_MAX_REQUEST, &line, &len)) > 0) {
                check_line(line, len);
                proto_buf_consume(&b, len + 1);
        }
        assert(r == 0 || r == -EMSGSIZE);
        /* What is left has no newline: parse it too, as at end of stream. */
        if (r == 0 && b.len > 0)
                check_line(b.data, b.len);
        proto_buf_done(&b);
        return 0;
}
