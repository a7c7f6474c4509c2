#!/bin/sh
# Restarts: a daemon restart leaves every pin unchanged (the placement record
# rebuilds the allocations), a domain pinned by hand is reported and never
# overridden, and a libvirtd restart is survived.
. "$(dirname "$0")/lib.sh"

require_env

A=kvmtuned-test-rs-ded
B=kvmtuned-test-rs-shr
E=kvmtuned-test-rs-hand
F=kvmtuned-test-rs-new

T_MANAGED='kvmtuned-test-rs-*'
write_config
define_domain $A 1 1 'cpu="dedicated"'
define_domain $B 1 1
define_domain $E 1 0
define_domain $F 1 1
start_daemon || { ok 1 "kvmtuned starts"; done_testing; }
start_domain $A && start_domain $B
wait_state $A tuned
wait_state $B shared
is "$(domain_state $A)/$(domain_state $B)" tuned/shared "$A tuned, $B shared"
before=$(domain_threads $A; domain_threads $B)

stop_daemon
is "$?" 0 "SIGTERM: kvmtuned exits with status 0"
is "$(domain_threads $A; domain_threads $B)" "$before" "pins stay in place while the daemon is down"

start_daemon
wait_state $A tuned
is "$(domain_state $A)" tuned "$A is tuned again after the restart"
is "$(domain_threads $A; domain_threads $B)" "$before" "the restart left every pin unchanged"
grep -q "$A: kept its recorded placement" "$T_LOG"
ok $? "$A kept its recorded placement (log)"
check_affinity $A
check_affinity $B

# Pinned by hand while the daemon is down: reported, never overridden.
stop_daemon
$VIRSH destroy $A >/dev/null
start_domain $E
$VIRSH vcpupin $E 0 1 --live >/dev/null
start_daemon
wait_state $E ignored
is "$(domain_state $E)" ignored "$E pinned by hand is ignored"
is "$(show $E .reason)" "pinned by hand" "$E: reason says pinned by hand"
is "$(domain_threads $E | awk '$1 == "vcpu" {print $3}')" 1 "$E keeps its hand pin"
is "$(show $E '.vcpus[0].cpus | map(tostring) | join(",")')" 1 "kvmtunectl show reports $E's hand pin as the kernel has it"
is "$(ctl --json status | jq -c .pools.dedicated)" "[1]" "the hand-pinned PU counts as taken"
is "$(domain_threads $B | awk '{print $3}' | sort -u)" 0 "$B (shared) stays off the hand-pinned PU"
$VIRSH destroy $E >/dev/null
wait_for 10 sh -c "[ \"\$($BUILDDIR/cli/kvmtunectl --socket $T_SOCK --json status | jq -c .pools.shared)\" = '[0,1]' ]"
is "$(ctl --json status | jq -c .pools.shared)" "[0,1]" "stopping $E gives its PU back to the shared pool"

# An emulator pinned by hand is the operator's too.
stop_daemon
start_domain $E
$VIRSH emulatorpin $E 1 --live >/dev/null
start_daemon
wait_state $E ignored
is "$(domain_state $E)/$(show $E .reason)" "ignored/pinned by hand" "$E with a hand emulator pin is ignored"
is "$(domain_threads $E | awk '$1 == "emulator" {print $3}')" 1 "$E keeps its hand emulator pin"
$VIRSH destroy $E >/dev/null
wait_for 10 sh -c "[ \"\$($BUILDDIR/cli/kvmtunectl --socket $T_SOCK --json status | jq -c .pools.shared)\" = '[0,1]' ]"

# libvirtd restart: the daemon keeps serving, reconnects and resyncs.
start_domain $A
wait_state $A tuned
before=$(domain_threads $A; domain_threads $B)
resyncs=$(grep -c 'Resynchronised' "$T_LOG")
restart_libvirtd
ok "$?" "libvirtd restarted"
wait_for 40 sh -c "[ \$(grep -c 'Resynchronised' '$T_LOG') -gt $resyncs ]"
is "$(ctl --json status | jq -r .libvirt.connected)" true "kvmtuned reconnected to libvirt"
is "$(domain_state $A)" tuned "$A is still tuned after the libvirtd restart"
is "$(domain_threads $A; domain_threads $B)" "$before" "pins unchanged across the libvirtd restart"
start_domain $F
wait_state $F shared
is "$(domain_state $F)" shared "a domain started after the libvirtd restart is placed"
check_affinity $F
check_exclusive $A $B $F

# SIGHUP: the new config is swapped in and changed domains re-evaluated; a
# domain we pinned that becomes cpu=none floats over every CPU again.
write_config "[domain \"$F\"]
cpu = none"
kill -HUP "$T_DAEMON_PID"
wait_state $F ignored
is "$(domain_state $F)" ignored "SIGHUP: $F follows the new config (cpu=none)"
is "$(domain_threads $F | awk '{print $3}' | sort -u)" "$(online_cpus)" "$F is unpinned (floats over every CPU)"
is "$(domain_state $A)" tuned "$A is untouched by the reload"
is "$(domain_threads $A; domain_threads $B)" "$before" "the reload moved no other domain"

done_testing
