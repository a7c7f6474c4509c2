#!/bin/bash
# The effect of kvmtuned on a guest, measured.
#
# A guest that does countable work (bench/guest/spin.S: a multiboot kernel that
# counts in a loop and writes one byte to its serial port, a file, every 2M
# iterations) runs alone, then next to two spinning guests with nothing pinned,
# then next to the same two guests with kvmtuned placing it (cpu=dedicated; the
# neighbours on the shared pool); then next to two busy host processes (shell
# loops in the cgroup /kvmtuned-bench), with nothing pinned and with kvmtuned
# (cpu=dedicated, [host] isolation = tasks with isolation_scope = that cgroup:
# only the benchmark's own processes are moved). Scheduler autogroups are off
# for the run, as on a server whose services live in cgroups, and put back.
# Prints the guest's throughput in each phase and the share it kept, side by
# side. Figures only: never pass/fail.
#
# Needs root, libvirtd and QEMU (TCG is enough); shares tests/integration/lib.sh
# with the integration tests (one run at a time, everything cleaned up at exit).
# usage: [BUILDDIR=build/default] bench/guest-effect.sh [SECONDS_PER_PHASE (30)]
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
secs=${1:-30}
export BUILDDIR=${BUILDDIR:-$top/build/default}
export SRCDIR=$top
T_MANAGED=kvmtuned-bench-*
. "$top/tests/integration/lib.sh"
require_env
images=/var/lib/libvirt/images/kvmtuned-bench
autogroup=/proc/sys/kernel/sched_autogroup_enabled
autogroup_was=$(cat "$autogroup" 2>/dev/null)
trap 'busy_stop /kvmtuned-bench; t_cleanup; rm -rf "$images"
      [ -n "$autogroup_was" ] && echo "$autogroup_was" > "$autogroup"' EXIT
[ -n "$autogroup_was" ] && echo 0 > "$autogroup"

mkdir -p "$images"
spin_kernel "$images" || exit 1

start_guest() {         # start_guest NAME [POLICY_ATTRIBUTES]
        spin_domain_xml "$1" "$images/spin.elf" "${2:-}" "$images/$1.log" > "$T_TMP/$1.xml"
        T_DOMAINS="$T_DOMAINS $1"
        rm -f "$images/$1.log"
        $VIRSH create "$T_TMP/$1.xml" >/dev/null
}

stop_guests() { cleanup_domains; T_DOMAINS=""; }

rate() {        # bytes per second the victim writes over $secs, after 2 s to settle
        local log=$images/kvmtuned-bench-victim.log a b
        sleep 2
        a=$(stat -c %s "$log"); sleep "$secs"; b=$(stat -c %s "$log")
        echo $(( (b - a) / secs ))
}

phase_alone() { start_guest kvmtuned-bench-victim; rate; stop_guests; }

phase_noisy() {
        start_guest kvmtuned-bench-noisy1; start_guest kvmtuned-bench-noisy2
        start_guest kvmtuned-bench-victim; rate; stop_guests
}

phase_kvmtuned() {
        local r
        write_config
        start_daemon >&2 || return 1
        start_guest kvmtuned-bench-noisy1; start_guest kvmtuned-bench-noisy2
        start_guest kvmtuned-bench-victim 'cpu="dedicated" emulator="share"'
        wait_state kvmtuned-bench-victim tuned 20 || diag "victim not tuned: $(domain_state kvmtuned-bench-victim)" >&2
        r=$(rate); stop_guests; stop_daemon; echo "$r"
}

phase_host() {           # phase_host placed|none: next to 2 busy host processes
        local r
        busy_start /kvmtuned-bench 2
        if [ "$1" = placed ]; then
                T_ISOLATION=tasks T_ISOLATION_SCOPE=/kvmtuned-bench write_config
                start_daemon >&2 || return 1
                start_guest kvmtuned-bench-victim 'cpu="dedicated" emulator="share"'
                wait_state kvmtuned-bench-victim tuned 20 || diag "victim not tuned" >&2
        else
                start_guest kvmtuned-bench-victim
        fi
        r=$(rate); stop_guests; stop_daemon; busy_stop; echo "$r"
}

alone=$(phase_alone)
noisy=$(phase_noisy)
tuned=$(phase_kvmtuned)
host=$(phase_host none)
host_tuned=$(phase_host placed)
share() { awk -v a="$1" -v b="$alone" 'BEGIN { printf "%.1f%%", b ? 100 * a / b : 0 }'; }
printf '%-42s %10s %8s\n' "guest throughput, $(nproc) host PUs, TCG" "bytes/s" "kept"
printf '%-42s %10s %8s\n' "alone" "$alone" "100.0%"
printf '%-42s %10s %8s\n' "2 spinning neighbours, nothing pinned" "$noisy" "$(share "$noisy")"
printf '%-42s %10s %8s\n' "2 spinning neighbours, placed by kvmtuned" "$tuned" "$(share "$tuned")"
printf '%-42s %10s %8s\n' "2 busy host processes, nothing pinned" "$host" "$(share "$host")"
printf '%-42s %10s %8s\n' "2 busy host processes, kvmtuned isolation" "$host_tuned" "$(share "$host_tuned")"
