/* Control protocol: framing, parsing, size cap, unknown fields. */
#include "config.h"

#include <errno.h>

#include "kvmtune/proto.h"
#include "kvmtune/util.h"
#include "../../lib/proto-priv.h"
#include "tap.h"

static int parse(const char *s, struct proto_request *ret) {
        _cleanup_free_ char *error = NULL;
        int r = proto_request_parse(s, strlen(s), ret, &error);

        if (r < 0 && !error)
                printf("# no error message for '%s'\n", s);
        return r;
}

static void test_request_roundtrip(void) {
        struct json_object *params = json_object_new_object();
        struct proto_request req = { 0 };
        _cleanup_free_ char *line = NULL;
        size_t len;

        json_object_object_add(params, "name", json_object_new_string("db\n1"));
        line = proto_request_format(PROTO_METHOD_SHOW, params);
        len = strlen(line);
        ok(len > 0 && line[len - 1] == '\n', "request ends with a newline");
        ok(memchr(line, '\n', len - 1) == NULL, "no newline inside the message (escaped in strings)");
        is_int(proto_request_parse(line, len - 1, &req, NULL), 0, "formatted request parses");
        is_str(req.method, PROTO_METHOD_SHOW, "method survives");
        is_str(json_object_get_string(json_object_object_get(req.params, "name")), "db\n1",
               "params survive");
        proto_request_done(&req);
        json_object_put(params);
}

static void test_request_parse(void) {
        struct proto_request req = { 0 };

        is_int(parse("{\"method\":\"kvmtune.v1.List\"}", &req), 0, "params are optional");
        ok(req.params && json_object_is_type(req.params, json_type_object) &&
           json_object_object_length(req.params) == 0, "missing params give an empty object");
        proto_request_done(&req);
        is_int(parse("{\"method\":\"kvmtune.v1.List\",\"id\":7,\"x\":[1],\"params\":{\"y\":1}}", &req),
               0, "unknown fields are ignored");
        is_str(req.method, "kvmtune.v1.List", "method read next to unknown fields");
        proto_request_done(&req);
        is_int(parse("  {\"method\":\"m\"}\r", &req), 0, "surrounding whitespace and CR accepted");
        proto_request_done(&req);
        is_int(parse("{\"method\":\"m\",\"params\":null}", &req), 0, "params null taken as empty");
        proto_request_done(&req);
}

static void test_request_errors(void) {
        struct proto_request req = { 0 };

        is_int(parse("", &req), -EBADMSG, "empty line rejected");
        is_int(parse("not json", &req), -EBADMSG, "garbage rejected");
        is_int(parse("{\"method\":", &req), -EBADMSG, "truncated object rejected");
        is_int(parse("[1,2]", &req), -EBADMSG, "array rejected");
        is_int(parse("42", &req), -EBADMSG, "bare number rejected");
        is_int(parse("{\"method\":\"a\"}{\"method\":\"b\"}", &req), -EBADMSG, "two objects on a line rejected");
        is_int(parse("{\"method\":\"a\"} x", &req), -EBADMSG, "trailing garbage rejected");
        is_int(parse("{}", &req), -EINVAL, "missing method rejected");
        is_int(parse("{\"method\":5}", &req), -EINVAL, "non-string method rejected");
        is_int(parse("{\"method\":\"m\",\"params\":[]}", &req), -EINVAL, "array params rejected");
        is_int(proto_request_parse("{\"method\":\"m\"}\0x", 17, &req, NULL), -EBADMSG, "NUL byte rejected");
        ok(req.method == NULL && req.params == NULL, "ret untouched on failure");
}

static void test_request_size(void) {
        size_t n = PROTO_MAX_REQUEST + 1;
        _cleanup_free_ char *big = xmalloc(n + 1);
        struct proto_request req = { 0 };
        const char *head = "{\"method\":\"m\",\"params\":{\"pad\":\"";

        memset(big, 'a', n);
        memcpy(big, head, strlen(head));
        memcpy(big + n - 3, "\"}}", 3);
        big[n] = '\0';
        is_int(proto_request_parse(big, n, &req, NULL), -EMSGSIZE, "request over 1 MiB refused");
        memcpy(big + n - 4, "\"}}", 3);
        is_int(proto_request_parse(big, n - 1, &req, NULL), 0, "request of exactly 1 MiB accepted");
        proto_request_done(&req);
}

static int reply_parse(const char *s, struct proto_reply *ret) {
        return proto_reply_parse(s, strlen(s), ret);
}

static void test_reply(void) {
        struct proto_reply rep = { 0 };
        struct json_object *res = json_object_new_object();
        _cleanup_free_ char *ok_line = NULL, *err_line = NULL;

        json_object_object_add(res, "n", json_object_new_int(3));
        ok_line = proto_result_format(res);
        is_int(proto_reply_parse(ok_line, strlen(ok_line) - 1, &rep), 0, "result reply parses");
        is_int(json_object_get_int(json_object_object_get(rep.result, "n")), 3, "result content");
        ok(rep.error_code == NULL, "no error in a result reply");
        proto_reply_done(&rep);
        json_object_put(res);

        err_line = proto_error_format(PROTO_ERROR_NOT_FOUND, "no domain 'x'");
        is_int(proto_reply_parse(err_line, strlen(err_line), &rep), 0, "error reply parses");
        is_str(rep.error_code, "not-found", "error code");
        is_str(rep.error_message, "no domain 'x'", "error message");
        ok(rep.result == NULL, "no result in an error reply");
        proto_reply_done(&rep);

        is_int(reply_parse("{\"error\":{\"code\":\"x\"}}", &rep), 0, "error without message");
        is_str(rep.error_message, "x", "message defaults to the code");
        proto_reply_done(&rep);
        is_int(reply_parse("{\"result\":1}", &rep), -EBADMSG, "non-object result rejected");
        is_int(reply_parse("{\"error\":{}}", &rep), -EBADMSG, "error without code rejected");
        is_int(reply_parse("{\"other\":1}", &rep), -EBADMSG, "reply without result or error rejected");
        is_int(reply_parse("{\"result\":{},\"extra\":[]}", &rep), 0, "unknown reply fields ignored");
        proto_reply_done(&rep);
}

static void test_buf(void) {
        struct proto_buf b = { 0 };
        const char *line = NULL;
        size_t len = 0;

        is_int(proto_buf_line(&b, 16, &line, &len), 0, "empty buffer: no line");
        proto_buf_append(&b, "abc", 3);
        is_int(proto_buf_line(&b, 16, &line, &len), 0, "partial line: no line yet");
        proto_buf_append(&b, "\nde\n", 4);
        is_int(proto_buf_line(&b, 16, &line, &len), 1, "complete line found");
        ok(len == 3 && memcmp(line, "abc", 3) == 0, "first line is 'abc'");
        proto_buf_consume(&b, len + 1);
        is_int(proto_buf_line(&b, 16, &line, &len), 1, "second line found");
        ok(len == 2 && memcmp(line, "de", 2) == 0, "second line is 'de'");
        proto_buf_consume(&b, len + 1);
        is_int((int) b.len, 0, "buffer drained");
        proto_buf_append(&b, "0123456789abcdef", 16);
        is_int(proto_buf_line(&b, 16, &line, &len), -EMSGSIZE, "unterminated line at the cap is too large");
        proto_buf_consume(&b, 16);
        proto_buf_append(&b, "0123456789abcde\n", 16);
        is_int(proto_buf_line(&b, 16, &line, &len), 1, "line of exactly the cap accepted");
        proto_buf_consume(&b, 16);
        proto_buf_append(&b, "0123456789abcdef\n", 17);
        is_int(proto_buf_line(&b, 16, &line, &len), -EMSGSIZE, "line over the cap refused");
        proto_buf_done(&b);
}

static void test_misc(void) {
        is_str(proto_error_from_errno(-ENOENT), "not-found", "ENOENT maps to not-found");
        is_str(proto_error_from_errno(-EINVAL), "invalid-params", "EINVAL maps to invalid-params");
        is_str(proto_error_from_errno(-EPERM), "permission-denied", "EPERM maps to permission-denied");
        is_str(proto_error_from_errno(-EIO), "failed", "others map to failed");
        is_str(proto_socket_path("/x.sock"), "/x.sock", "explicit socket path wins");
        setenv(PROTO_SOCKET_ENV, "/env.sock", 1);
        is_str(proto_socket_path(NULL), "/env.sock", "KVMTUNED_SOCKET used");
        setenv(PROTO_SOCKET_ENV, "", 1);
        is_str(proto_socket_path(NULL), PROTO_SOCKET_DEFAULT, "empty KVMTUNED_SOCKET ignored");
        unsetenv(PROTO_SOCKET_ENV);
        is_str(proto_socket_path(NULL), "/run/kvmtuned/kvmtuned.sock", "default path");
        is_int(proto_connect("/nonexistent/kvmtuned.sock"), -ENOENT, "connect to a missing socket: -ENOENT");
}

int main(void) {
        test_request_roundtrip();
        test_request_parse();
        test_request_errors();
        test_request_size();
        test_reply();
        test_buf();
        test_misc();
        return tap_done();
}
