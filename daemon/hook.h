/* The libvirt qemu hook, both sides.
 *
 * libvirt runs /etc/libvirt/hooks/qemu.d/kvmtuned (daemon/kvmtuned-hook.c) as
 *     kvmtuned NAME STAGE SUBSTAGE EXTRA      (domain XML on stdin)
 * At "started" QEMU is up with every thread created and its vCPUs not yet
 * running; the hook sends
 *     {"method": "kvmtune.v1.Hook",
 *      "params": {"stage": "started", "name": N, "uuid": U, "pid": P, "xml": X}}
 * and waits (KVMTUNED_HOOK_TIMEOUT_MS, default 2000 ms) for the answer:
 *     {"result": {"state": "tuned", "applied": true}}     start goes on
 *     {"result": {"refuse": "reason"}}                    hook exits 1: libvirt
 *                                                         refuses the start and
 *                                                         shows the reason
 * Anything else (daemon down, slow, an error) lets the guest start: the event
 * path places it afterwards. At "release" it sends {"stage": "release", "name",
 * "uuid"} so the allocation is freed even when no event comes.
 *
 * The daemon side (hook.c) never calls libvirt: libvirt holds the domain
 * locked while the hook runs, and any call touching it (even listing all
 * domains) would block until the hook gives up. */
#pragma once

#define HOOK_METHOD "kvmtune.v1.Hook"
#define HOOK_TIMEOUT_ENV "KVMTUNED_HOOK_TIMEOUT_MS"
#define HOOK_TIMEOUT_DEFAULT_MS 2000
#define HOOK_TIMEOUT_MAX_MS 30000
#define HOOK_XML_MAX (4U * 1024U * 1024U)      /* bytes of domain XML read from stdin */
#define HOOK_PID_DIR "/run/libvirt/qemu"        /* NAME.pid, written by libvirt */
#define HOOK_PID_DIR_ENV "KVMTUNED_HOOK_PID_DIR" /* overrides it (tests) */

struct json_object;

/* kvmtune.v1.Hook (privileged), a struct ctl_method call: userdata is the
 * struct daemon. Returns 0 with the result, -EINVAL for bad params. */
int hook_method(void *userdata, struct json_object *params, struct json_object **ret_result,
                char **ret_error);
