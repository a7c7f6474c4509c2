/* Control socket server: a ctl_server with a fake method table runs in a forked
 * child on a temporary socket; the parent talks to it with real clients. */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <grp.h>
#include <time.h>

#include "../../daemon/ctl-priv.h"
#include "kvmtune/proto.h"
#include "kvmtune/util.h"
#include "../../lib/proto-priv.h"
#include "tap.h"

#define BIG_REPLY (4U * 1024U * 1024U)

static char tmpdir[] = "/tmp/test-ctl-XXXXXX";
static struct ctl_server *child_server;

/* --- the fake daemon -------------------------------------------------------- */

static int m_echo(_unused_ void *u, struct json_object *params, struct json_object **ret, _unused_ char **err) {
        *ret = json_object_new_object();
        json_object_object_add(*ret, "params", json_object_get(params));
        return 0;
}

static int m_fail(_unused_ void *u, _unused_ struct json_object *params, _unused_ struct json_object **ret, char **err) {
        *err = xstrdup("no such thing");
        return -ENOENT;
}

static int m_big(_unused_ void *u, _unused_ struct json_object *params, struct json_object **ret, _unused_ char **err) {
        _cleanup_free_ char *s = xmalloc(BIG_REPLY + 1);

        memset(s, 'x', BIG_REPLY);
        s[BIG_REPLY] = '\0';
        *ret = json_object_new_object();
        json_object_object_add(*ret, "data", json_object_new_string(s));
        return 0;
}

static int m_priv(_unused_ void *u, _unused_ struct json_object *params, struct json_object **ret, _unused_ char **err) {
        *ret = json_object_new_object();
        json_object_object_add(*ret, "done", json_object_new_boolean(1));
        return 0;
}

static int m_count(_unused_ void *u, _unused_ struct json_object *params, struct json_object **ret, _unused_ char **err) {
        *ret = json_object_new_object();
        json_object_object_add(*ret, "connections",
                               json_object_new_int((int) ctl_server_connections(child_server)));
        return 0;
}

static const struct ctl_method methods[] = {
        { "test.Echo", false, m_echo },
        { "test.Fail", false, m_fail },
        { "test.Big", false, m_big },
        { "test.Priv", true, m_priv },
        { "test.Count", false, m_count },
};

struct server_opts {
        const char *path;
        int listen_fd;
        uid_t priv_uid;
        unsigned max_conns;
        uint64_t idle_usec;
        int spare_fds;                  /* > 0: RLIMIT_NOFILE just above what is open */
};

static int on_term(sd_event_source *s, _unused_ const struct signalfd_siginfo *si, _unused_ void *u) {
        return sd_event_exit(sd_event_source_get_event(s), 0);
}

static int on_nothing(_unused_ sd_event_source *s, _unused_ uint64_t usec, _unused_ void *u) {
        return 0;
}

/* Leave the child only 'spare' more file descriptors than it has open now. */
static void limit_fds(sd_event *e, int spare) {
        struct rlimit rl;
        int fd;

        /* sd-event opens its monotonic timerfd on the first timer: do it now. */
        sd_event_add_time(e, NULL, CLOCK_MONOTONIC, UINT64_MAX, 0, on_nothing, NULL);
        fd = dup(0);
        close(fd);
        rl.rlim_cur = rl.rlim_max = (rlim_t) (fd + spare);
        setrlimit(RLIMIT_NOFILE, &rl);
}

static void child_run(const struct server_opts *o, int ready_fd) {
        sd_event *e = NULL;
        sigset_t ss;
        int r;

        sigemptyset(&ss);
        sigaddset(&ss, SIGTERM);
        sigprocmask(SIG_BLOCK, &ss, NULL);
        r = sd_event_new(&e);
        if (r >= 0)
                r = sd_event_add_signal(e, NULL, SIGTERM, on_term, NULL);
        if (r >= 0)
                r = ctl_server_new(e, o->path, o->listen_fd, methods, ELEMENTSOF(methods), NULL,
                                   &child_server);
        if (write(ready_fd, &r, sizeof(r)) != sizeof(r) || r < 0)
                _exit(1);
        ctl_server_set_privileged_uid(child_server, o->priv_uid);
        ctl_server_set_max_connections(child_server, o->max_conns);
        ctl_server_set_idle_timeout(child_server, o->idle_usec);
        if (o->spare_fds > 0)
                limit_fds(e, o->spare_fds);
        r = sd_event_loop(e);
        ctl_server_free(child_server);
        sd_event_unref(e);
        _exit(r < 0 ? 1 : 0);
}

/* Fork a server; returns its pid, or -1 when it failed to start. */
static pid_t server_start(const struct server_opts *o) {
        int p[2], r = -EIO;
        pid_t pid;

        if (pipe(p) < 0)
                return -1;
        pid = fork();
        if (pid == 0) {
                close(p[0]);
                child_run(o, p[1]);
        }
        close(p[1]);
        if (read(p[0], &r, sizeof(r)) != sizeof(r) || r < 0) {
                printf("# server failed to start: %s\n", strerror(-r));
                waitpid(pid, NULL, 0);
                pid = -1;
        }
        close(p[0]);
        return pid;
}

static int server_stop(pid_t pid) {
        int st;

        kill(pid, SIGTERM);
        if (waitpid(pid, &st, 0) < 0)
                return -1;
        return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

/* --- client helpers ------------------------------------------------------- */

static char *sock_path(const char *name) {
        return xasprintf("%s/%s", tmpdir, name);
}

/* One call on a fresh connection; returns the error code or "ok". */
static char *call_code(const char *path, const char *method, _unused_ uid_t *unused) {
        struct proto_reply rep = { 0 };
        int fd = proto_connect(path), r;
        char *code;

        if (fd < 0)
                return xasprintf("connect: %s", strerror(-fd));
        r = proto_call(fd, method, NULL, 5000, &rep);
        close(fd);
        if (r < 0)
                return xasprintf("call: %s", strerror(-r));
        code = xstrdup(rep.error_code ? rep.error_code : "ok");
        proto_reply_done(&rep);
        return code;
}

/* call_code() again while the server still counts a client that closed (it
 * frees the slot when it reads the EOF, on its own time), for up to 10 s. */
static char *call_code_once_freed(const char *path, const char *method) {
        char *code = call_code(path, method, NULL);

        for (int i = 0; i < 100 && streq(code, "too-many-clients"); i++) {
                free(code);
                usleep(100000);
                code = call_code(path, method, NULL);
        }
        return code;
}

/* Read until EOF or timeout; returns bytes read, -1 on timeout/error. */
static ssize_t read_to_eof(int fd, int timeout_ms, char **ret) {
        struct proto_buf b = { 0 };
        char chunk[65536];

        for (;;) {
                struct pollfd p = { .fd = fd, .events = POLLIN };
                ssize_t k;

                if (poll(&p, 1, timeout_ms) <= 0)
                        break;
                k = read(fd, chunk, sizeof(chunk));
                if (k <= 0) {
                        proto_buf_append(&b, "", 1);
                        *ret = b.data;
                        return (ssize_t) b.len - 1;
                }
                proto_buf_append(&b, chunk, (size_t) k);
        }
        proto_buf_done(&b);
        return -1;
}

static void cleanup_tmpdir(void) {
        _cleanup_free_ char *cmd = xasprintf("rm -rf '%s'", tmpdir);

        if (system(cmd) != 0)
                printf("# could not remove %s\n", tmpdir);
}

static int64_t now_ms(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* --- tests ------------------------------------------------------------------ */

static void test_basic(const char *path) {
        struct json_object *params = json_object_new_object();
        struct proto_reply rep = { 0 };
        int fd = proto_connect(path);

        ok(fd >= 0, "client connects");
        json_object_object_add(params, "name", json_object_new_string("db1"));
        is_int(proto_call(fd, "test.Echo", params, 5000, &rep), 0, "Echo call succeeds");
        is_str(json_object_get_string(json_object_object_get(
                json_object_object_get(rep.result, "params"), "name")), "db1", "params echoed back");
        proto_reply_done(&rep);
        is_int(proto_call(fd, "kvmtune.v1.Nope", NULL, 5000, &rep), 0, "unknown method answered");
        is_str(rep.error_code, "unknown-method", "unknown method error code");
        proto_reply_done(&rep);
        is_int(proto_call(fd, "test.Fail", NULL, 5000, &rep), 0, "failing method answered");
        is_str(rep.error_code, "not-found", "-ENOENT becomes not-found");
        is_str(rep.error_message, "no such thing", "method's message passed on");
        proto_reply_done(&rep);
        json_object_put(params);
        close(fd);
}

static void test_pipelined(const char *path) {
        const char *two = "{\"method\":\"test.Echo\",\"junk\":1}\n{\"method\":\"test.Fail\"}\n";
        _cleanup_free_ char *all = NULL;
        int fd = proto_connect(path);

        ok(write(fd, two, strlen(two)) == (ssize_t) strlen(two), "two pipelined requests sent");
        shutdown(fd, SHUT_WR);
        ok(read_to_eof(fd, 5000, &all) > 0, "replies read until the server closes");
        ok(all && strstr(all, "{\"result\":{\"params\":{}}}\n{\"error\":{\"code\":\"not-found\""),
           "both replies, in order, after a half-close");
        close(fd);
}

static void test_garbage_reply(const char *path) {
        struct proto_reply rep = { 0 };
        struct proto_buf b = { 0 };
        int fd = proto_connect(path);
        const char *l;
        size_t len;
        char chunk[4096];
        ssize_t k;

        ok(write(fd, "not json\n", 9) == 9, "malformed request sent");
        k = read(fd, chunk, sizeof(chunk));
        if (k > 0)
                proto_buf_append(&b, chunk, (size_t) k);
        ok(proto_buf_line(&b, PROTO_MAX_REPLY, &l, &len) == 1 &&
           proto_reply_parse(l, len, &rep) == 0, "server replies to a malformed request");
        is_str(rep.error_code, "invalid-request", "malformed request: invalid-request");
        proto_reply_done(&rep);
        proto_buf_done(&b);
        is_int(proto_call(fd, "test.Echo", NULL, 5000, &rep), 0, "connection still usable after it");
        ok(rep.result != NULL, "and the next request gets a result");
        proto_reply_done(&rep);
        close(fd);
}

static void test_oversized(const char *path) {
        size_t n = PROTO_MAX_REQUEST + 4096;
        _cleanup_free_ char *big = xmalloc(n), *all = NULL;
        int fd = proto_connect(path);
        ssize_t k;

        memset(big, ' ', n);
        memcpy(big, "{\"method\":\"test.Echo\",\"pad\":\"", 29);
        k = send(fd, big, n, MSG_NOSIGNAL);
        ok(k > 0, "oversized request sent (%zd bytes)", k);
        ok(read_to_eof(fd, 5000, &all) > 0, "server answers and closes");
        ok(all && strstr(all, "\"too-large\""), "oversized request: too-large");
        close(fd);
}

static void test_slow_client(const char *path) {
        _cleanup_free_ char *req = proto_request_format("test.Big", NULL), *all = NULL;
        struct proto_reply rep = { 0 };
        int slow = proto_connect(path), fast, r;
        int64_t t0;
        size_t len;

        ok(write(slow, req, strlen(req)) == (ssize_t) strlen(req), "slow client asks for 4 MiB");
        usleep(200000);         /* let the server fill the socket and block on it */
        fast = proto_connect(path);
        t0 = now_ms();
        /* a server blocked on the slow client would never answer: the slow
         * one reads only after this call; the deadline is only for a loaded host */
        r = proto_call(fast, "test.Echo", NULL, 10000, &rep);
        is_int(r, 0, "another client is served while the slow one does not read (%lld ms)",
               (long long) (now_ms() - t0));
        proto_reply_done(&rep);
        close(fast);
        shutdown(slow, SHUT_WR);
        len = (size_t) read_to_eof(slow, 5000, &all);
        ok(all && proto_reply_parse(all, len, &rep) == 0 &&
           strlen(json_object_get_string(json_object_object_get(rep.result, "data"))) == BIG_REPLY,
           "the slow client still gets its whole reply");
        proto_reply_done(&rep);
        close(slow);
}

static void test_too_many(const char *path) {
        int fds[4], extra;
        _cleanup_free_ char *all = NULL, *code = NULL;

        for (unsigned i = 0; i < ELEMENTSOF(fds); i++)
                fds[i] = proto_connect(path);
        usleep(100000);
        extra = proto_connect(path);
        ok(extra >= 0, "fifth client connects at the socket level");
        ok(read_to_eof(extra, 5000, &all) > 0 && strstr(all, "\"too-many-clients\""),
           "fifth client told too-many-clients and closed");
        close(extra);
        close(fds[0]);
        code = call_code_once_freed(path, "test.Count");
        is_str(code, "ok", "a new client is accepted once one left");
        for (unsigned i = 1; i < ELEMENTSOF(fds); i++)
                close(fds[i]);
}

/* Send a byte every 50 ms; true when the server hangs up before n bytes. */
static bool trickle(int fd, int n) {
        for (int i = 0; i < n; i++) {
                struct pollfd p = { .fd = fd, .events = POLLIN };

                if (poll(&p, 1, 50) > 0 || send(fd, "{", 1, MSG_NOSIGNAL) != 1)
                        return true;
        }
        return false;
}

static void test_idle(void) {
        _cleanup_free_ char *path = sock_path("idle.sock"), *all = NULL;
        struct server_opts o = { .path = path, .listen_fd = -1, .priv_uid = 0,
                                   .max_conns = 32, .idle_usec = 300000 };
        pid_t pid = server_start(&o);
        int64_t t0 = now_ms();          /* before connect: the server's clock starts later */
        int fd = proto_connect(path);

        ok(read_to_eof(fd, 5000, &all) == 0, "idle connection closed by the server");
        ok(now_ms() - t0 >= 250, "after the idle timeout (%lld ms)", (long long) (now_ms() - t0));
        close(fd);

        /* a byte every 50 ms for 2 s: a server that restarted its 300 ms clock on
         * each byte would never hang up while they come */
        t0 = now_ms();
        fd = proto_connect(path);
        ok(trickle(fd, 40), "a request trickled in byte by byte is cut off at the idle timeout (%lld ms)",
           (long long) (now_ms() - t0));
        close(fd);
        server_stop(pid);
}

static void test_out_of_fds(void) {
        _cleanup_free_ char *path = sock_path("nofile.sock"), *all = NULL;
        struct server_opts o = { .path = path, .listen_fd = -1, .priv_uid = 0,
                                   .max_conns = 32, .idle_usec = 10000000, .spare_fds = 2 };
        struct proto_reply rep = { 0 };
        int fds[8], n = 0, r = 0;
        pid_t pid = server_start(&o);

        while (n < (int) ELEMENTSOF(fds)) {
                fds[n] = proto_connect(path);
                r = proto_call(fds[n++], "test.Echo", NULL, 300, &rep);
                proto_reply_done(&rep);
                if (r < 0)
                        break;
        }
        is_int(r, -ETIMEDOUT, "out of fds: a client waits in the backlog (after %d)", n - 1);
        close(fds[0]);
        shutdown(fds[n - 1], SHUT_WR);
        ok(read_to_eof(fds[n - 1], 3000, &all) > 0 && strstr(all, "\"result\""),
           "it is served once a descriptor is free again");
        for (int i = 1; i < n; i++)
                close(fds[i]);
        is_int(server_stop(pid), 0, "server survived running out of descriptors");
}

static void test_permissions(void) {
        _cleanup_free_ char *path = sock_path("priv.sock"), *denied = NULL, *allowed = NULL;
        struct server_opts o = { .path = path, .listen_fd = -1, .priv_uid = getuid() + 1,
                                   .max_conns = 32, .idle_usec = 10000000 };
        pid_t pid;

        pid = server_start(&o);
        denied = call_code(path, "test.Priv", NULL);
        is_str(denied, "permission-denied", "privileged method refused to another uid");
        free(allowed);
        allowed = call_code(path, "test.Echo", NULL);
        is_str(allowed, "ok", "read-only method allowed to that uid");
        server_stop(pid);

        o.priv_uid = getuid();
        pid = server_start(&o);
        free(allowed);
        allowed = call_code(path, "test.Priv", NULL);
        is_str(allowed, "ok", "privileged method allowed to the privileged uid");
        server_stop(pid);
}

/* One call on an open connection, kept open: "ok", or the error code and
 * message of the reply (a refused connection's parting line). */
static char *call_keep(int fd, const char *method) {
        struct proto_reply rep = { 0 };
        int r = proto_call(fd, method, NULL, 5000, &rep);
        char *code;

        if (r < 0)
                return xasprintf("call: %s", strerror(-r));
        code = rep.error_code ? xasprintf("%s: %s", rep.error_code, rep.error_message) : xstrdup("ok");
        proto_reply_done(&rep);
        return code;
}

struct holder {
        pid_t pid;
        int from;                       /* the holder's report: one line per connection */
};

/* A child that becomes uid (root only), opens n connections to path, calls
 * method on each and keeps them open; it reports each call's outcome as one
 * line (see call_keep), then "done", and holds on until killed. */
static struct holder hold_as(uid_t uid, const char *path, int n, const char *method) {
        struct holder h = { -1, -1 };
        int p[2];

        if (pipe(p) < 0)
                return h;
        h.pid = fork();
        if (h.pid == 0) {
                FILE *out = fdopen(p[1], "w");

                close(p[0]);
                if (getuid() != uid && (setgroups(0, NULL) < 0 || setresgid(uid, uid, uid) < 0 ||
                                        setresuid(uid, uid, uid) < 0))
                        _exit(1);
                for (int i = 0; i < n; i++) {
                        _cleanup_free_ char *res = call_keep(proto_connect(path), method);

                        fprintf(out, "%s\n", res);
                }
                fprintf(out, "done\n");
                fclose(out);
                pause();
                _exit(0);
        }
        close(p[1]);
        h.from = p[0];
        return h;
}

/* The holder's report, read to "done"; NULL when it died first. */
static char *holder_report(struct holder *h) {
        _cleanup_free_ char *all = NULL;
        struct proto_buf b = { 0 };
        char chunk[4096];
        ssize_t k;

        while (!(b.len && memmem(b.data, b.len, "done\n", 5)) &&
               (k = read(h->from, chunk, sizeof(chunk))) > 0)
                proto_buf_append(&b, chunk, (size_t) k);
        proto_buf_append(&b, "", 1);
        all = b.data;
        return strstr(all, "done\n") ? xstrdup(all) : NULL;
}

static void holder_stop(struct holder *h) {
        kill(h->pid, SIGTERM);
        waitpid(h->pid, NULL, 0);
        close(h->from);
}

static unsigned count_lines(const char *all, const char *prefix) {
        unsigned n = 0;

        for (const char *l = all; l && *l; l = strchr(l, '\n') + 1)
                n += strncmp(l, prefix, strlen(prefix)) == 0;
        return n;
}

/* One uid gets at most CTL_MAX_PER_UID_DEFAULT connections, and the next is
 * told why. Here the tests' own uid is the unprivileged one. */
static void test_per_uid(void) {
        _cleanup_free_ char *path = sock_path("peruid.sock"), *all = NULL;
        struct server_opts o = { .path = path, .listen_fd = -1, .priv_uid = getuid() + 1,
                                   .max_conns = 32, .idle_usec = 10000000 };
        pid_t pid = server_start(&o);
        struct holder h = hold_as(getuid(), path, CTL_MAX_PER_UID_DEFAULT + 2, "test.Echo");

        all = holder_report(&h);
        is_int(count_lines(all, "ok\n"), CTL_MAX_PER_UID_DEFAULT, "one uid is served %d connections",
               CTL_MAX_PER_UID_DEFAULT);
        is_int(count_lines(all, "too-many-clients: too many connections from uid"), 2,
               "the ones beyond are told the per-user limit");
        if (all && !strstr(all, "(limit 8 per user), try again later"))
                printf("# report:\n%s", all);
        holder_stop(&h);
        server_stop(pid);
}

/* As root: other uids never fill the connections kept for root (and the hook,
 * which runs as root), however many they open, and they are told why. */
static void test_root_room(void) {
        _cleanup_free_ char *path = sock_path("room.sock"), *code = NULL;
        struct server_opts o = { .path = path, .listen_fd = -1, .priv_uid = 0,
                                   .max_conns = 32, .idle_usec = 10000000 };
        struct holder h[5];
        unsigned served = 0, kept = 0;
        pid_t pid;

        if (getuid() != 0) {
                tap_skip("needs root to run clients as other uids", "connections kept for root");
                return;
        }
        pid = server_start(&o);
        for (unsigned i = 0; i < ELEMENTSOF(h); i++) {
                _cleanup_free_ char *all = NULL;

                h[i] = hold_as(65534 - i, path, CTL_MAX_PER_UID_DEFAULT + 1, "test.Echo");
                all = holder_report(&h[i]);
                served += count_lines(all, "ok\n");
                kept += count_lines(all, "too-many-clients: too many clients (24, the last 8 of 32 are kept for root)");
        }
        is_int(served, 24, "five other uids together are served 24 of 32 connections");
        ok(kept >= 1, "those beyond are told the rest is kept for root (%u)", kept);
        code = call_code(path, "test.Priv", NULL);
        is_str(code, "ok", "root is still served");
        for (unsigned i = 0; i < ELEMENTSOF(h); i++)
                holder_stop(&h[i]);
        server_stop(pid);
}

/* As root: the uid is the client's, not the server's own. A server that took
 * it from its listening socket would see root in every client. */
static void test_peer_uid_as_root(void) {
        _cleanup_free_ char *path = sock_path("peer.sock"), *all = NULL, *code = NULL;
        struct server_opts o = { .path = path, .listen_fd = -1, .priv_uid = 0,
                                   .max_conns = 32, .idle_usec = 10000000 };
        struct holder h;
        pid_t pid;

        if (getuid() != 0) {
                tap_skip("needs root to run a client as another uid", "the peer uid is the client's");
                return;
        }
        pid = server_start(&o);
        h = hold_as(65534, path, 1, "test.Priv");
        all = holder_report(&h);
        ok(all && strstr(all, "permission-denied: permission denied: test.Priv needs root"),
           "uid 65534 is refused a privileged method by a root server");
        holder_stop(&h);
        free(all);
        h = hold_as(65534, path, 1, "test.Echo");
        all = holder_report(&h);
        is_str(all, "ok\ndone\n", "uid 65534 may call a read-only method");
        holder_stop(&h);
        code = call_code(path, "test.Priv", NULL);
        is_str(code, "ok", "root may call the privileged method");
        server_stop(pid);
}

static void test_socket_file(void) {
        _cleanup_free_ char *dir = sock_path("run/kvmtuned"), *path = NULL, *code = NULL;
        struct server_opts o = { .path = NULL, .listen_fd = -1, .priv_uid = 0,
                                   .max_conns = 32, .idle_usec = 10000000 };
        struct ctl_server *s = NULL;
        sd_event *e = NULL;
        struct stat st;
        pid_t pid;
        int fd;

        path = xasprintf("%s/kvmtuned.sock", dir);
        o.path = path;
        pid = server_start(&o);
        ok(pid > 0, "server creates missing parent directories");
        ok(stat(path, &st) == 0 && S_ISSOCK(st.st_mode) && (st.st_mode & 0777) == 0666,
           "socket file has mode 0666");
        sd_event_default(&e);
        is_int(ctl_server_new(e, path, -1, methods, 1, NULL, &s), -EADDRINUSE,
               "a second server refuses to steal a live socket");
        is_int(server_stop(pid), 0, "server exits cleanly on SIGTERM");
        ok(access(path, F_OK) < 0, "socket file removed at exit");

        /* A stale socket: bound, never listened on, left behind. */
        {
                struct sockaddr_un sa = { .sun_family = AF_UNIX };
                fd = socket(AF_UNIX, SOCK_STREAM, 0);
                strcpy(sa.sun_path, path);
                ok(bind(fd, (struct sockaddr *) &sa, sizeof(sa)) == 0, "stale socket file created");
                close(fd);
        }
        pid = server_start(&o);
        code = call_code(path, "test.Echo", NULL);
        is_str(code, "ok", "stale socket file replaced");
        server_stop(pid);

        fd = open(path, O_CREAT | O_WRONLY, 0644);
        close(fd);
        is_int(ctl_server_new(e, path, -1, methods, 1, NULL, &s), -EEXIST,
               "a regular file at the socket path is not removed");
        unlink(path);
        sd_event_unref(e);
}

static void test_activation(void) {
        _cleanup_free_ char *path = sock_path("activated.sock"), *code = NULL;
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        struct server_opts o = { .path = NULL, .listen_fd = -1, .priv_uid = 0,
                                   .max_conns = 32, .idle_usec = 10000000 };
        pid_t pid;

        o.listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        strcpy(sa.sun_path, path);
        ok(bind(o.listen_fd, (struct sockaddr *) &sa, sizeof(sa)) == 0 &&
           listen(o.listen_fd, 8) == 0, "activation socket prepared");
        pid = server_start(&o);
        close(o.listen_fd);
        code = call_code(path, "test.Echo", NULL);
        is_str(code, "ok", "server answers on a passed listening fd");
        server_stop(pid);
        ok(access(path, F_OK) == 0, "a passed socket's file is left to its owner");
        unlink(path);
}

static void test_served(void) {
        _cleanup_free_ char *path = sock_path("kvmtuned.sock");
        struct server_opts o = { .path = path, .listen_fd = -1, .priv_uid = 0,
                                   .max_conns = 4, .idle_usec = 10000000 };
        pid_t pid = server_start(&o);

        if (!ok(pid > 0, "server started on %s", path))
                return;
        test_basic(path);
        test_garbage_reply(path);
        test_pipelined(path);
        test_oversized(path);
        test_slow_client(path);
        test_too_many(path);
        is_int(server_stop(pid), 0, "server stops cleanly");
}

int main(void) {
        signal(SIGPIPE, SIG_IGN);
        if (!mkdtemp(tmpdir) || chmod(tmpdir, 0755) < 0)
                tap_skip_all("cannot create a temporary directory");
        test_served();
        test_permissions();
        test_socket_file();
        test_activation();
        test_idle();
        test_out_of_fds();
        test_per_uid();
        test_root_room();
        test_peer_uid_as_root();
        cleanup_tmpdir();
        return tap_done();
}
