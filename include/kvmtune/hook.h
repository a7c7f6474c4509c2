/* The libvirt qemu hook, both sides: the program (hook/kvmtuned.c) and the
 * daemon's kvmtune.v1.Hook method (daemon/hook.c).
 *
 * libvirt runs /etc/libvirt/hooks/qemu.d/kvmtuned (hook/kvmtuned.c) as
 *     kvmtuned NAME STAGE SUBSTAGE EXTRA      (domain XML on stdin)
 * At "started" QEMU is up with every thread created, and libvirt has already
 * resumed its vCPUs (see Timing below); the hook reads QEMU's pid from
 * libvirt's status XML (qemupid.h: every name libvirt accepts, commas and XML
 * metacharacters included) and sends
 *     {"method": "kvmtune.v1.Hook",
 *      "params": {"stage": "started", "name": N, "uuid": U, "pid": P, "xml": X}}
 * and waits (KVMTUNED_HOOK_TIMEOUT_MS, default 2000 ms) for the answer:
 *     {"result": {"state": "tuned", "applied": true}}     start goes on
 *     {"result": {"refuse": "reason"}}                    hook exits 1: libvirt
 *                                                         refuses the start and
 *                                                         shows the reason
 * The daemon takes the pid only when QEMU's command line carries "-uuid U" of
 * the XML's domain, so a request never moves another process's threads.
 * Anything else (daemon down, slow, an error) lets the guest start: the event
 * path places it afterwards. At "release" it sends {"stage": "release", "name",
 * "uuid"} so the allocation is freed even when no event comes.
 *
 * The daemon side (hook.c) never calls libvirt: libvirt holds the domain
 * locked while the hook runs, and any call touching it (even listing all
 * domains) would block until the hook gives up. For the same reason the event
 * path does not place a booting domain on its RESUMED event (which libvirt
 * emits before running the hook) but on STARTED (emitted after it).
 *
 * Timing: libvirt 9.0 runs the started hook right after resuming the vCPUs
 * (qemuProcessFinishStartup: start CPUs, save status, hook), not before; the
 * hook path shortens the unpinned window to the hook's own run (a few ms; the
 * daemon logs the vCPU ticks it read just before pinning), it cannot make it
 * zero. bench/hook-window.sh measures it against the event path.
 *
 * Memory: with numa=strict the hook writes cpuset.mems of the domain cgroup
 * and its vcpuN/emulator/iothreadN children, so allocations from then on come
 * from the chosen nodes; pages already elsewhere are moved with
 * numa_migrate_pages when the started event applies the placement through
 * libvirt. (libvirt itself, for <numatune><memory mode='strict'>, restricts
 * the same cpuset.mems and binds QEMU's memory backends with host-nodes and
 * policy=bind from the first touch. kvmtuned writes <numatune> into the
 * persistent definition only for a dedicated domain with persist_placement;
 * libvirt 9.0 refuses a live change of a strict nodeset.)
 *
 * Install: `make install` puts the program at $(libvirthookdir)/kvmtuned
 * (default /etc/libvirt/hooks/qemu.d/kvmtuned with --sysconfdir=/etc).
 * libvirtd checks whether any qemu hook exists when it starts and on SIGHUP
 * only: after installing the first hook, restart libvirtd (or send it SIGHUP).
 * The hook runs with libvirtd's clean environment: KVMTUNED_SOCKET and
 * KVMTUNED_HOOK_TIMEOUT_MS only matter for a wrapper that sets them.
 *
 * Refusal: the daemon answers "refuse" only for a domain whose policy says
 * placement=strict and that cannot be placed; every other start goes on. */
#pragma once

#include "kvmtune/qemupid.h"

#define HOOK_METHOD "kvmtune.v1.Hook"
#define HOOK_TIMEOUT_ENV "KVMTUNED_HOOK_TIMEOUT_MS"
#define HOOK_TIMEOUT_DEFAULT_MS 2000
#define HOOK_TIMEOUT_MAX_MS 30000
#define HOOK_XML_MAX (4U * 1024U * 1024U)      /* bytes of domain XML read from stdin */
#define HOOK_PID_DIR QEMUPID_STATE_DIR          /* NAME.xml (status) or NAME.pid, by libvirt */
#define HOOK_PID_DIR_ENV "KVMTUNED_HOOK_PID_DIR" /* overrides it (tests) */
