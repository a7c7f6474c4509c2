/* The control socket inside kvmtuned: accepts kvmtunectl clients, reads one
 * request at a time per connection, dispatches it through a method table the
 * daemon provides, writes the reply. Wire format: include/kvmtune/proto.h.
 *
 * Never blocks the daemon: every socket is nonblocking, each connection has its
 * own buffers, a reply the client does not read yet waits for EPOLLOUT, and a
 * connection that neither completes a request nor takes reply bytes for longer
 * than the idle timeout (default 10 s) is closed: a request trickled in a byte
 * at a time must still arrive whole within it.
 * Connections are capped per peer uid (taken at accept): root, the privileged
 * uid, may use all of them (default 32), which the libvirt hook, running as
 * root, relies on; any other uid at most 8, and all other uids together never
 * more than three quarters, so no local user can lock root or the hook out.
 * A connection beyond a cap gets one line, error "too-many-clients" saying
 * which cap, and is closed.
 *
 * Authorisation: the peer's uid is taken with SO_PEERCRED at accept. Anyone the
 * socket file's mode admits (0666) may call read-only methods; methods marked
 * privileged are answered with error "permission-denied" unless the peer is
 * root (or the uid set with ctl_server_set_privileged_uid(), ctl-priv.h, for tests). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <json-c/json.h>
#include <systemd/sd-event.h>

#define CTL_MAX_CONNECTIONS_DEFAULT 32
#define CTL_MAX_PER_UID_DEFAULT 8
#define CTL_IDLE_TIMEOUT_USEC_DEFAULT (10ULL * 1000000ULL)

struct ctl_server;

/* One entry of the daemon's method table.
 *
 * call() runs on the event loop; keep it short. params is always a JSON object
 * (an empty one when the request had none), borrowed: take a reference with
 * json_object_get() to keep anything. Unknown params keys must be ignored.
 *
 * On success return 0 and set *ret_result to a new JSON object (ownership passes
 * to the server; leaving it NULL sends an empty object). On failure return a
 * negative errno and optionally set *ret_error to a malloc'd human message
 * (freed by the server); the errno chooses the error code sent to the client:
 *     -ENOENT  "not-found"         (e.g. Show of an unknown domain)
 *     -EINVAL  "invalid-params"    (missing or bad parameter)
 *     -EPERM, -EACCES "permission-denied"
 *     -EBUSY, -EAGAIN "busy"
 *     -ENOSPC  "no-room"           (placement refused)
 *     -ENOTCONN "libvirt-unavailable"
 *     other    "failed"
 * When *ret_error is left NULL the message is strerror(-r). */
struct ctl_method {
        const char *name;               /* full name, "kvmtune.v1.List" */
        bool privileged;                /* root only: Rebalance, Reload */
        int (*call)(void *userdata, struct json_object *params,
                    struct json_object **ret_result, char **ret_error);
};

/* Result shapes (the CLI renders these; keep them in sync with SPEC.md):
 *
 * kvmtune.v1.Status  {} ->
 *   {"version": "0.1.0", "uptime_sec": 12,
 *    "libvirt": {"uri": "qemu:///system", "connected": true},
 *    "pools": {"reserved": [0,1], "shared": [2,3,...], "dedicated": [4,5]},
 *    "domains": {"tuned": 2, "shared": 1, "ignored": 0, "unplaced": 0, "failed": 0}}
 *   (pools: host logical CPU numbers; "dedicated" = PUs currently held by
 *    dedicated domains.)
 *
 * kvmtune.v1.List    {} -> {"domains": [SHOW, ...]}
 * kvmtune.v1.Show    {"name": "db1"} -> SHOW, exactly the SPEC.md `show --json`
 *   object; a domain that is unplaced or failed also carries "reason": "...";
 *   "policy" is null while its definition cannot be read (failed).
 *   Each "vcpus" element of a running domain also has "run_ns" and "delay_ns":
 *   its thread's time on a CPU and runnable-but-waiting (run-queue delay), in
 *   ns since the thread started (/proc/PID/task/TID/schedstat).
 *   Unknown domain: -ENOENT.
 *
 * kvmtune.v1.Topology {} ->
 *   {"nodes": [{"os": 0, "memory_kib": 33554432,
 *               "groups": [{"l3": 0,              (L3 index, -1 when none)
 *                           "cores": [{"pus": [{"os": 0, "owner": "db1" | null,
 *                                               "reserved": false}, ...]}, ...]},
 *                          ...]},
 *              ...]}
 *   owner: the domain holding the PU exclusively (dedicated vCPU, isolated
 *   emulator or iothread), null when the PU is free / in the shared pool.
 *   reserved: housekeeping CPU from [host] reserved_cpus.
 *
 * kvmtune.v1.Plan {"vcpus": 4, "memory_kib": 8388608,
 *                  optional "cpu", "threads", "emulator", "iothreads", "numa",
 *                  "hugepages" (policy value strings), "iothread_count": 1,
 *                  "name": "db-7" (policy from the config section matching it)} ->
 *   a SHOW-shaped placement object (without name/uuid/state, optional "note"),
 *   or {"refused": "reason"} when it would not fit.  Bad params: -EINVAL.
 *
 * kvmtune.v1.Hugepages {} ->
 *   {"nodes": [{"node": 0, "pages": [{"page_kib": 2048, "size": "2M", "total": 512,
 *               "free": 100, "reserved": 400,
 *               "domains": [{"name": "db1", "pages": 400}, ...]}, ...]}, ...]}
 *   (counts in pages, read from sysfs at the call; free is the kernel's
 *    free_hugepages; reserved = pages the daemon's placed domains hold, and
 *    domains says which.)
 *
 * kvmtune.v1.HugepagesReserve {"size": "2M"|"1G", "node": 0, "count": 64} ->
 *   privileged; sets the pool with the checks of kvmtuned --reserve-hugepages
 *   (never below the pages in use, compaction and retries, read back):
 *   {"node": 0, "size": "2M", "page_kib": 2048, "requested": 64, "target": 64,
 *    "in_use": 0, "before": 0, "reserved": 64, "short": 0, "clamped": false,
 *    "writes": 1, "compactions": 0, "message": "node 0 2M: ..."}
 *   A node or size the host lacks: -EINVAL; sysfs not writable: "failed".
 *
 * kvmtune.v1.Metrics {} -> {"text": "# HELP ...\n..."}  (Prometheus exposition)
 *
 * kvmtune.v1.Verify {} -> {"domains": [{"name": "db1", "state": "tuned", "checked": 7,
 *     "drift": [{"what": "vcpu 0 thread 1234", "want": "4", "got": "0-7"}]}, ...],
 *   "checked": 7, "drifted": 1}   (every running domain kvmtuned placed: thread
 *   affinities, cgroup cpusets, numa=strict memory nodes vs its placement)
 *
 * kvmtune.v1.Rebalance {"name": "db1"} or {} (all domains) -> privileged;
 *   {"domains": [{"name": "db1", "state": "tuned"}, ...]}  (the domains re-placed)
 * kvmtune.v1.Isolation {} -> ISOLATION:
 *   {"configured": "tasks,guests,irqs,workqueues", "switch": "config"|"on"|"off",
 *    "scope": "/", "in_force": "tasks,guests" | "none", "inactive": null | "why",
 *    "dedicated": [2,3], "housekeeping": [0,1],     (CPUs taken off host work, left to it)
 *    "mode": "per-task"|"systemd", "tasks": 120, "units": 0, "guest_threads": 4,
 *    "kept": 1, "refused": 30, "irqs": 12, "irqs_managed": 3, "default_irq": true,
 *    "workqueues": true, "irqbalance": false, "skipped": ["task 812: ...", ...]}
 *   (counts: what is narrowed now; kept: tasks on dedicated CPUs only, left
 *    alone; refused: per-CPU kernel threads; the report keys appear after the
 *    first pass.) Status carries the same object as "isolation"; a SHOW of a
 *   guest whose hand pins name dedicated CPUs carries "isolation_conflict".
 * kvmtune.v1.IsolationSet {"set": "on"|"off"|"config"} -> privileged; ISOLATION
 *   after the pass it ran. on: the configured list (everything when the
 *   configuration says no); off: everything put back; config: as configured.
 * kvmtune.v1.Reload {} -> privileged; {"changed": ["db1", ...]} (domains whose
 *   policy changed); an invalid config: -EINVAL with "FILE:LINE: message".
 */

/* Listen on path (or on listen_fd, an already bound and listening socket from
 * socket activation, when >= 0; path is then only informative). With a path:
 * creates the parent directory (0755) if missing, replaces a stale socket file
 * (returns -EADDRINUSE if another server still answers on it), binds, sets mode
 * 0666 and listens. The socket file is unlinked by ctl_server_free() (never one
 * given by socket activation). The server owns listen_fd from this call on,
 * even on failure. methods must stay valid for the server's life.
 * Returns 0 or a negative errno; *ret untouched on failure. */
int ctl_server_new(sd_event *e, const char *path, int listen_fd,
                   const struct ctl_method *methods, size_t n_methods,
                   void *userdata, struct ctl_server **ret);

/* Closes every connection and the listening socket. Accepts NULL; returns NULL. */
struct ctl_server *ctl_server_free(struct ctl_server *s);

/* Socket activation: the first fd passed by systemd that is an AF_UNIX stream
 * listening socket, or -1 when none (not activated). Unsets LISTEN_* env. */
int ctl_listen_fd_from_systemd(void);

static inline void ctl_server_freep(struct ctl_server **s) { ctl_server_free(*s); }
