/* Control socket server: see ctl.h for the contract, proto.h for the wire format. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>

#include <systemd/sd-daemon.h>

#include "ctl-priv.h"
#include "kvmtune/log.h"
#include "kvmtune/proto.h"
#include "kvmtune/util.h"

#define CTL_READ_CHUNK 16384
#define CTL_BACKLOG 64

struct ctl_conn {
        struct ctl_server *server;
        struct ctl_conn *prev, *next;
        int fd;
        uid_t uid;
        sd_event_source *io;
        sd_event_source *timer;         /* idle timeout */
        struct proto_buf in;
        char *out;                      /* pending reply, NULL when none */
        size_t out_len, out_off;
        bool eof;                       /* peer shut down its side */
        bool close_after_reply;
};

struct ctl_server {
        sd_event *event;
        char *path;                     /* unlinked at free when not NULL */
        int fd;
        sd_event_source *listen_io;
        sd_event_source *accept_retry;  /* after EMFILE */
        const struct ctl_method *methods;
        size_t n_methods;
        void *userdata;
        struct ctl_conn *conns;
        unsigned n_conns, max_conns, max_per_uid;
        uint64_t idle_usec;
        uid_t privileged_uid;
};

/* --- connections ------------------------------------------------------------ */

/* Root, or the uid a test set: may call privileged methods, has room kept. */
static bool server_is_privileged(const struct ctl_server *s, uid_t uid) {
        return uid == s->privileged_uid;
}


static void conn_free(struct ctl_conn *c) {
        struct ctl_server *s = c->server;

        if (c->prev)
                c->prev->next = c->next;
        else
                s->conns = c->next;
        if (c->next)
                c->next->prev = c->prev;
        s->n_conns--;
        sd_event_source_disable_unref(c->io);
        sd_event_source_disable_unref(c->timer);
        close(c->fd);
        proto_buf_done(&c->in);
        free(c->out);
        free(c);
        /* accept() may have been paused on EMFILE: there is a free fd again. */
        if (s->listen_io)
                sd_event_source_set_enabled(s->listen_io, SD_EVENT_ON);
}

static uint64_t server_now(const struct ctl_server *s) {
        uint64_t now;

        return sd_event_now(s->event, CLOCK_MONOTONIC, &now) >= 0 ? now : now_usec();
}

static void conn_touch(struct ctl_conn *c) {
        sd_event_source_set_time(c->timer, server_now(c->server) + c->server->idle_usec);
}

static const struct ctl_method *server_find_method(const struct ctl_server *s, const char *name) {
        for (size_t i = 0; i < s->n_methods; i++)
                if (streq(s->methods[i].name, name))
                        return &s->methods[i];
        return NULL;
}

static char *conn_call(struct ctl_conn *c, const struct ctl_method *m, struct json_object *params) {
        struct json_object *result = NULL;
        _cleanup_free_ char *error = NULL;
        char *reply;
        int r;

        r = m->call(c->server->userdata, params, &result, &error);
        if (r < 0) {
                json_object_put(result);
                log_debug("ctl: %s failed: %s", m->name, error ? error : strerror(-r));
                return proto_error_format(proto_error_from_errno(r), error ? error : strerror(-r));
        }
        reply = proto_result_format(result);
        json_object_put(result);
        if (strlen(reply) > PROTO_MAX_REPLY) {
                free(reply);
                return proto_error_format(PROTO_ERROR_FAILED, "reply too large");
        }
        return reply;
}

/* Decide the reply to one request line. */
static char *conn_dispatch(struct ctl_conn *c, const char *line, size_t len) {
        struct proto_request req = { 0 };
        _cleanup_free_ char *error = NULL;
        const struct ctl_method *m;
        char *reply;
        int r;

        r = proto_request_parse(line, len, &req, &error);
        if (r < 0)
                return proto_error_format(r == -EMSGSIZE ? PROTO_ERROR_TOO_LARGE
                                          : PROTO_ERROR_INVALID_REQUEST, error);
        m = server_find_method(c->server, req.method);
        if (!m) {
                error = xasprintf("unknown method '%s'", req.method);
                reply = proto_error_format(PROTO_ERROR_UNKNOWN_METHOD, error);
        } else if (m->privileged && !server_is_privileged(c->server, c->uid)) {
                error = xasprintf("permission denied: %s needs root", m->name);
                reply = proto_error_format(PROTO_ERROR_PERMISSION_DENIED, error);
        } else
                reply = conn_call(c, m, req.params);
        proto_request_done(&req);
        return reply;
}

static void conn_set_reply(struct ctl_conn *c, char *reply) {
        c->out = reply;
        c->out_len = strlen(reply);
        c->out_off = 0;
}

/* Take the next complete request from the input buffer, if any. Returns true
 * when a reply is now pending. */
static bool conn_process(struct ctl_conn *c) {
        const char *line;
        size_t len;
        int r;

        if (c->out || c->close_after_reply)
                return c->out != NULL;
        r = proto_buf_line(&c->in, PROTO_MAX_REQUEST, &line, &len);
        if (r < 0) {
                conn_set_reply(c, proto_error_format(PROTO_ERROR_TOO_LARGE, "request too large"));
                c->close_after_reply = true;
                return true;
        }
        if (r == 0)
                return false;
        conn_set_reply(c, conn_dispatch(c, line, len));
        proto_buf_consume(&c->in, len + 1);
        conn_touch(c);
        return true;
}

/* Write as much of the pending reply as the socket takes. Returns 1 when the
 * reply is fully written, 0 when the socket is full, <0 on error. */
static int conn_flush(struct ctl_conn *c) {
        while (c->out_off < c->out_len) {
                ssize_t k = send(c->fd, c->out + c->out_off, c->out_len - c->out_off,
                                 MSG_DONTWAIT | MSG_NOSIGNAL);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0 && errno == EAGAIN)
                        return 0;
                if (k < 0)
                        return -errno;
                c->out_off += (size_t) k;
                conn_touch(c);
        }
        free(c->out);
        c->out = NULL;
        return 1;
}

/* Read what is there. Returns 0, or <0 on a socket error. */
static int conn_read(struct ctl_conn *c) {
        char buf[CTL_READ_CHUNK];
        ssize_t k = recv(c->fd, buf, sizeof(buf), MSG_DONTWAIT);

        if (k < 0)
                return errno == EAGAIN || errno == EINTR ? 0 : -errno;
        /* Bytes alone do not reset the idle timer: a request trickled in a byte
         * at a time must still be complete within the timeout. */
        if (k == 0)
                c->eof = true;
        else
                proto_buf_append(&c->in, buf, (size_t) k);
        return 0;
}

/* Serve requests until a reply is stuck on a full socket or no complete
 * request is left. Returns false when the connection is done. */
static bool conn_advance(struct ctl_conn *c) {
        while (conn_process(c)) {
                int r = conn_flush(c);

                if (r < 0)
                        return false;
                if (r == 0)
                        break;
                if (c->close_after_reply)
                        return false;
        }
        if (c->out)
                return sd_event_source_set_io_events(c->io, EPOLLOUT) >= 0;
        if (c->eof)
                return false;
        return sd_event_source_set_io_events(c->io, EPOLLIN) >= 0;
}

static int conn_on_io(_unused_ sd_event_source *src, _unused_ int fd, uint32_t revents, void *userdata) {
        struct ctl_conn *c = userdata;

        if ((revents & EPOLLIN) && !c->out && conn_read(c) < 0) {
                conn_free(c);
                return 0;
        }
        if ((revents & (EPOLLERR | EPOLLHUP)) && !(revents & EPOLLIN) && !c->out) {
                conn_free(c);
                return 0;
        }
        if (!conn_advance(c))
                conn_free(c);
        return 0;
}

static int conn_on_idle(_unused_ sd_event_source *src, _unused_ uint64_t usec, void *userdata) {
        struct ctl_conn *c = userdata;

        log_debug("ctl: closing connection of uid %u idle for %llus", (unsigned) c->uid,
                  (unsigned long long) (c->server->idle_usec / 1000000));
        conn_free(c);
        return 0;
}

static uid_t peer_uid(int fd) {
        struct ucred uc = { .uid = (uid_t) -1 };
        socklen_t len = sizeof(uc);

        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &uc, &len) < 0)
                return (uid_t) -1;      /* nobody: read-only at most */
        return uc.uid;
}

static int conn_new(struct ctl_server *s, int fd, uid_t uid) {
        struct ctl_conn *c = xcalloc(1, sizeof(*c));
        int r;

        c->server = s;
        c->fd = fd;
        c->uid = uid;
        c->next = s->conns;
        if (s->conns)
                s->conns->prev = c;
        s->conns = c;
        s->n_conns++;
        r = sd_event_add_io(s->event, &c->io, fd, EPOLLIN, conn_on_io, c);
        if (r >= 0)
                r = sd_event_add_time(s->event, &c->timer, CLOCK_MONOTONIC,
                                      server_now(s) + s->idle_usec, 0, conn_on_idle, c);
        if (r < 0) {
                conn_free(c);
                return r;
        }
        return 0;
}

/* --- listening socket ------------------------------------------------------- */

/* Why a client of this uid cannot have one more connection, or NULL when it
 * can. Root (the privileged uid, which the hook also runs as) may use every
 * connection; other uids share all but a quarter kept for root, and none may
 * hold more than max_per_uid, so no local user can lock root or the hook out. */
static char *server_refusal(const struct ctl_server *s, uid_t uid) {
        unsigned mine = 0, unprivileged = 0, kept = (s->max_conns + 3) / 4;

        if (s->n_conns >= s->max_conns)
                return xasprintf("too many clients (limit %u), try again later", s->max_conns);
        if (server_is_privileged(s, uid))
                return NULL;
        for (const struct ctl_conn *c = s->conns; c; c = c->next) {
                mine += c->uid == uid;
                unprivileged += !server_is_privileged(s, c->uid);
        }
        if (mine >= s->max_per_uid)
                return xasprintf("too many connections from uid %u (limit %u per user), try again later",
                                 (unsigned) uid, s->max_per_uid);
        if (unprivileged + kept >= s->max_conns)
                return xasprintf("too many clients (%u, the last %u of %u are kept for root), try again later",
                                 unprivileged, kept, s->max_conns);
        return NULL;
}

/* Tell the client why in one line before closing: best effort, a fresh socket
 * buffer takes this small reply at once. */
static void refuse_client(int fd, const char *why) {
        _cleanup_free_ char *reply = proto_error_format(PROTO_ERROR_TOO_MANY_CLIENTS, why);

        (void) send(fd, reply, strlen(reply), MSG_DONTWAIT | MSG_NOSIGNAL);
        close(fd);
}

static int server_on_accept_retry(_unused_ sd_event_source *src, _unused_ uint64_t usec, void *userdata) {
        struct ctl_server *s = userdata;

        sd_event_source_set_enabled(s->listen_io, SD_EVENT_ON);
        return 0;
}

/* Out of file descriptors: stop accepting (the listening socket would wake us
 * in a loop) until a client leaves or a second has passed. */
static void server_pause_accept(struct ctl_server *s, int err) {
        log_warning("ctl: cannot accept a client: %s, pausing for a second", strerror(err));
        sd_event_source_set_enabled(s->listen_io, SD_EVENT_OFF);
        if (s->accept_retry)
                sd_event_source_set_time(s->accept_retry, server_now(s) + 1000000);
        else
                sd_event_add_time(s->event, &s->accept_retry, CLOCK_MONOTONIC,
                                  server_now(s) + 1000000, 0, server_on_accept_retry, s);
        sd_event_source_set_enabled(s->accept_retry, SD_EVENT_ONESHOT);
}

static void server_admit(struct ctl_server *s, int fd) {
        uid_t uid = peer_uid(fd);
        _cleanup_free_ char *why = server_refusal(s, uid);

        if (why) {
                log_debug("ctl: refusing a client of uid %u: %s", (unsigned) uid, why);
                refuse_client(fd, why);
        } else if (conn_new(s, fd, uid) < 0)
                log_warning("ctl: cannot watch a new client, closing it");
}

static int server_on_accept(_unused_ sd_event_source *src, int lfd, _unused_ uint32_t revents, void *userdata) {
        struct ctl_server *s = userdata;

        for (;;) {
                int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

                if (fd < 0 && (errno == EMFILE || errno == ENFILE)) {
                        server_pause_accept(s, errno);
                        return 0;
                }
                if (fd < 0)
                        return 0;       /* EAGAIN, or the client is gone already */
                server_admit(s, fd);
        }
}

static int mkdir_parents(const char *path) {
        _cleanup_free_ char *p = xstrdup(path);

        for (char *slash = strchr(p + 1, '/'); slash; slash = strchr(slash + 1, '/')) {
                *slash = '\0';
                if (mkdir(p, 0755) < 0 && errno != EEXIST)
                        return -errno;
                *slash = '/';
        }
        return 0;
}

/* Remove a socket file left behind by a dead server; refuse to take over a
 * live one or to delete anything that is not a socket. */
static int remove_stale_socket(const char *path) {
        struct stat st;
        int fd;

        if (lstat(path, &st) < 0)
                return errno == ENOENT ? 0 : -errno;
        if (!S_ISSOCK(st.st_mode))
                return -EEXIST;
        fd = proto_connect(path);
        if (fd >= 0) {
                close(fd);
                return -EADDRINUSE;
        }
        if (unlink(path) < 0 && errno != ENOENT)
                return -errno;
        return 0;
}

static int socket_listen(const char *path, int *ret_fd) {
        struct sockaddr_un sa;
        _cleanup_close_ int fd = -1;
        int r;

        if (proto_sockaddr(path, &sa) < 0)
                return -ENAMETOOLONG;
        r = mkdir_parents(path);
        if (r >= 0)
                r = remove_stale_socket(path);
        if (r < 0)
                return r;
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        if (bind(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0)
                return -errno;
        /* Read-only methods are for everyone; privileged ones check SO_PEERCRED. */
        if (chmod(path, 0666) < 0 || listen(fd, CTL_BACKLOG) < 0) {
                r = -errno;
                unlink(path);
                return r;
        }
        *ret_fd = fd;
        fd = -1;
        return 0;
}

static int adopt_listen_fd(int fd) {
        int flags = fcntl(fd, F_GETFL);

        if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0)
                return -errno;
        return 0;
}

int ctl_server_new(sd_event *e, const char *path, int listen_fd,
                   const struct ctl_method *methods, size_t n_methods,
                   void *userdata, struct ctl_server **ret) {
        _cleanup_(ctl_server_freep) struct ctl_server *s = NULL;
        int r;

        if (!e || (!path && listen_fd < 0) || (n_methods > 0 && !methods))
                return -EINVAL;
        s = xcalloc(1, sizeof(*s));

        s->event = sd_event_ref(e);
        s->fd = -1;
        s->methods = methods;
        s->n_methods = n_methods;
        s->userdata = userdata;
        s->max_conns = CTL_MAX_CONNECTIONS_DEFAULT;
        s->max_per_uid = CTL_MAX_PER_UID_DEFAULT;
        s->idle_usec = CTL_IDLE_TIMEOUT_USEC_DEFAULT;
        if (listen_fd >= 0) {
                r = adopt_listen_fd(listen_fd);
                s->fd = listen_fd;
        } else {
                r = socket_listen(path, &s->fd);
                if (r >= 0)
                        s->path = xstrdup(path);
        }
        if (r >= 0)
                r = sd_event_add_io(e, &s->listen_io, s->fd, EPOLLIN, server_on_accept, s);
        if (r < 0)
                return r;
        *ret = s;
        s = NULL;
        return 0;
}

struct ctl_server *ctl_server_free(struct ctl_server *s) {
        if (!s)
                return NULL;
        sd_event_source_disable_unref(s->listen_io);
        s->listen_io = NULL;
        sd_event_source_disable_unref(s->accept_retry);
        while (s->conns)
                conn_free(s->conns);
        if (s->fd >= 0)
                close(s->fd);
        if (s->path)
                unlink(s->path);
        free(s->path);
        sd_event_unref(s->event);
        free(s);
        return NULL;
}

void ctl_server_set_max_connections(struct ctl_server *s, unsigned max) {
        s->max_conns = max;
}

void ctl_server_set_idle_timeout(struct ctl_server *s, uint64_t usec) {
        s->idle_usec = usec;
}

void ctl_server_set_privileged_uid(struct ctl_server *s, uid_t uid) {
        s->privileged_uid = uid;
}

unsigned ctl_server_connections(const struct ctl_server *s) {
        return s->n_conns;
}

int ctl_listen_fd_from_systemd(void) {
        int n = sd_listen_fds(1);

        if (n <= 0)
                return -1;
        for (int fd = SD_LISTEN_FDS_START; fd < SD_LISTEN_FDS_START + n; fd++)
                if (sd_is_socket_unix(fd, SOCK_STREAM, 1, NULL, 0) > 0)
                        return fd;
        return -1;
}
