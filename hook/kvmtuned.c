/* kvmtuned's libvirt qemu hook, installed as /etc/libvirt/hooks/qemu.d/kvmtuned.
 * libvirt runs it as "kvmtuned NAME STAGE SUBSTAGE EXTRA" with the domain XML
 * on stdin. At "started" it hands the XML and the QEMU pid to kvmtuned, which
 * places and pins the threads right after libvirt resumed the vCPUs (a few ms
 * unpinned, see kvmtune/hook.h); at "release" it tells kvmtuned to free the
 * domain's allocation. Protocol and contract: include/kvmtune/hook.h.
 *
 * Fail-open: whatever goes wrong (daemon down, slow, an error), it prints one
 * line on stderr and exits 0, and the guest starts; kvmtuned's event path
 * places it afterwards. It exits 1 only when kvmtuned answers "refuse". Every
 * wait is bounded by KVMTUNED_HOOK_TIMEOUT_MS (default 2000) in total, the
 * connect included (an alarm ends the program when it runs out). */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <string.h>

#include "kvmtune/hook.h"
#include "kvmtune/proto.h"
#include "kvmtune/qemupid.h"
#include "kvmtune/util.h"

#define PROG "kvmtuned hook"
#define NEXT_STARTED "starting unplaced, kvmtuned places it after start"
#define NEXT_RELEASE "kvmtuned frees it on the stop event"

/* What happens when we give up: said on every fail-open line. */
static const char *next_step = NEXT_STARTED;

static void usage(void) {
        printf("Usage: kvmtuned NAME STAGE SUBSTAGE EXTRA   (run by libvirt, domain XML on stdin)\n"
               "libvirt qemu hook of kvmtuned: at 'started' asks kvmtuned to place and pin the\n"
               "domain's QEMU threads at once; at 'release' frees its allocation.\n"
               "Other stages exit 0 at once. Fails open: exits 0 unless kvmtuned refuses the domain.\n\n"
               "Environment:\n"
               "  %-26s control socket (default %s)\n"
               "  %-26s total wait for kvmtuned in ms (default %d, at most %d)\n"
               "  %-26s libvirt's NAME.xml (status) and NAME.pid (default %s; tests)\n",
               PROTO_SOCKET_ENV, PROTO_SOCKET_DEFAULT, HOOK_TIMEOUT_ENV, HOOK_TIMEOUT_DEFAULT_MS,
               HOOK_TIMEOUT_MAX_MS, HOOK_PID_DIR_ENV, HOOK_PID_DIR);
}

/* Fail-open exit: the guest starts, the event path places it. */
static _printf_(1, 2) int give_up(const char *fmt, ...) {
        va_list ap;

        fputs(PROG ": ", stderr);
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fprintf(stderr, "; %s\n", next_step);
        return 0;
}

static void on_alarm(int sig) {
        static const char msg[] = PROG ": kvmtuned did not answer in time; ";

        (void)sig;
        (void)!write(STDERR_FILENO, msg, sizeof msg - 1);
        (void)!write(STDERR_FILENO, next_step, strlen(next_step));
        (void)!write(STDERR_FILENO, "\n", 1);
        _exit(0);
}

static int timeout_ms(void) {
        const char *s = getenv(HOOK_TIMEOUT_ENV);
        int v;

        if (!s || !*s)
                return HOOK_TIMEOUT_DEFAULT_MS;
        if (safe_atoi(s, 1, HOOK_TIMEOUT_MAX_MS, &v) < 0) {
                fprintf(stderr, PROG ": ignoring %s=%s (1..%d), using %d\n", HOOK_TIMEOUT_ENV, s,
                        HOOK_TIMEOUT_MAX_MS, HOOK_TIMEOUT_DEFAULT_MS);
                return HOOK_TIMEOUT_DEFAULT_MS;
        }
        return v;
}

/* The whole program gets timeout + 1 s: connect() on a full backlog blocks. */
static void arm_alarm(int ms) {
        struct sigaction sa = { .sa_handler = on_alarm };

        sigaction(SIGALRM, &sa, NULL);
        alarm((unsigned)(ms / 1000 + 1));
}

static const char *pid_dir(void) {
        const char *s = getenv(HOOK_PID_DIR_ENV);

        return s && *s ? s : HOOK_PID_DIR;
}

/* "<uuid>...</uuid>" of the domain (the first one is the domain's own). */
static void xml_uuid(const char *xml, char uuid[37]) {
        const char *p = strstr(xml, "<uuid>");

        uuid[0] = '\0';
        if (p && strlen(p + 6) >= 36 && p[6 + 36] == '<')
                snprintf(uuid, 37, "%.36s", p + 6);
}

/* Sends the request; 0 with *ret filled, or a negative errno (already told). */
static int call_daemon(struct json_object *params, int ms, struct proto_reply *ret) {
        const char *path = proto_socket_path(NULL);
        _cleanup_free_ char *req = proto_request_format(HOOK_METHOD, params);
        _cleanup_close_ int fd = -1;
        int r;

        if (strlen(req) > PROTO_MAX_REQUEST)
                return give_up("the domain XML is too large for kvmtuned's socket (%zu > %u bytes)",
                               strlen(req), PROTO_MAX_REQUEST), -EMSGSIZE;
        fd = proto_connect(path);
        if (fd < 0)
                return give_up("cannot reach kvmtuned at %s: %s", path, strerror(-fd)), fd;
        r = proto_call_formatted(fd, req, ms, ret);
        if (r == -ETIMEDOUT)
                return give_up("kvmtuned did not answer within %d ms", ms), r;
        if (r < 0)
                return give_up("no answer from kvmtuned: %s", strerror(-r)), r;
        return 0;
}

/* Exit status from the answer: 1 only for a refusal. */
static int answer_status(const struct proto_reply *rep, const char *name) {
        struct json_object *v;

        if (rep->error_code)
                return give_up("kvmtuned answered %s: %s", rep->error_code,
                               rep->error_message ? rep->error_message : "");
        if (json_object_object_get_ex(rep->result, "refuse", &v) && json_object_is_type(v, json_type_string)) {
                fprintf(stderr, PROG ": kvmtuned refuses to start domain '%s': %s\n", name,
                        json_object_get_string(v));
                return 1;
        }
        return 0;
}

/* "started" also carries the QEMU pid and the whole XML. */
static int add_started(struct json_object *params, const char *name, const char *xml, size_t len) {
        pid_t pid = 0;
        int r = qemupid_read(NULL, pid_dir(), name, &pid);

        if (r < 0)
                return give_up("cannot read the QEMU pid from %s/%s.xml or .pid: %s", pid_dir(), name,
                               strerror(-r)), r;
        json_object_object_add(params, "pid", json_object_new_int((int)pid));
        json_object_object_add(params, "xml", json_object_new_string_len(xml, (int)len));
        return 0;
}

static int run(const char *name, const char *stage) {
        _cleanup_json_ struct json_object *params = json_object_new_object();
        _cleanup_free_ char *xml = NULL;
        struct proto_reply rep = {};
        size_t len = 0;
        char uuid[37];
        int ms = timeout_ms(), r;

        arm_alarm(ms);
        r = read_fd_all(STDIN_FILENO, HOOK_XML_MAX, &xml);
        if (r < 0)
                return give_up("cannot read the domain XML on stdin: %s", strerror(-r));
        len = (size_t)r;
        xml_uuid(xml, uuid);
        json_object_object_add(params, "stage", json_object_new_string(stage));
        json_object_object_add(params, "name", json_object_new_string(name));
        if (uuid[0])
                json_object_object_add(params, "uuid", json_object_new_string(uuid));
        if (streq(stage, "started") && add_started(params, name, xml, len) < 0)
                return 0;
        if (call_daemon(params, ms, &rep) < 0)
                return 0;
        r = answer_status(&rep, name);
        proto_reply_done(&rep);
        return r;
}

int main(int argc, char **argv) {
        if (argc == 2 && (streq(argv[1], "--help") || streq(argv[1], "-h")))
                return usage(), 0;
        if (argc < 3)
                return give_up("expected NAME STAGE SUBSTAGE EXTRA from libvirt, got %d argument%s",
                               argc - 1, argc == 2 ? "" : "s");
        if (!streq(argv[2], "started") && !streq(argv[2], "release"))
                return 0;
        signal(SIGPIPE, SIG_IGN);
        if (streq(argv[2], "release"))
                next_step = NEXT_RELEASE;
        return run(argv[1], argv[2]);
}
