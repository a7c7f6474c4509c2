#!/bin/sh
# Host isolation for real ([host] isolation = tasks, guests): busy processes
# this test starts in its own cgroup (isolation_scope = /kvmtuned-test) are
# kept off a dedicated guest's CPU while the guest runs, caught again when they
# widen their mask, and get their mask back when the guest stops, when
# kvmtuned stops, and after kvmtuned is killed and started again; the threads
# of a cpu=none guest are kept off the dedicated CPU too. Nothing outside the
# test's cgroup and domains is touched (no IRQ, no workqueue, no other task).
. "$(dirname "$0")/lib.sh"

require_env

A=kvmtuned-test-iso-ded         # cpu=dedicated, emulator on the shared pool
C=kvmtuned-test-iso-none        # cpu=none: left alone by placement
T_MANAGED='kvmtuned-test-iso-*'
T_ISOLATION='tasks, guests'
T_ISOLATION_SCOPE=/kvmtuned-test
RECORD=$T_TMP/isolation         # beside the control socket

[ "$(echo "$(online_cpus)" | tr -cd ',-')" != "" ] || skip_all "needs at least 2 online CPUs"
# Guest isolation moves every guest kvmtuned does not place: only when this
# test's guests are the only ones running.
others=$($VIRSH list --name | grep -v '^kvmtuned-test-iso-' | grep -c .)
if [ "$others" -gt 0 ]; then
        diag "$others other running domain(s): guest isolation not tested (it would move their threads)"
        T_ISOLATION=tasks
fi

# ---- the test's cgroup and its busy processes ------------------------------------

# Two busy loops at the lowest priority, in the test's own cgroup.
busy_start "$T_ISOLATION_SCOPE" 2 19
BUSY=$T_BUSY

ORIG=$(for p in $BUSY; do allowed "$p"; done | sort -u)
is "$ORIG" "$(online_cpus)" "the busy processes start on every online CPU"

busy_off() {            # busy_off CPU: no busy process may run there
        local p
        for p in $BUSY; do cpus_contain "$(allowed "$p")" "$1" && return 1; done
        return 0
}

busy_back() {           # every busy process has its original mask again
        [ "$(for p in $BUSY; do allowed "$p"; done | sort -u)" = "$ORIG" ]
}

guest_off() {           # guest_off DOMAIN CPU: none of its threads may run there
        local cpus
        for cpus in $(domain_threads "$1" | awk '{print $3}'); do
                cpus_contain "$cpus" "$2" && return 1
        done
        return 0
}

write_config
define_domain $A 1 0 'cpu="dedicated" emulator="share" numa="none"'
define_domain $C 1 0 'cpu="none"'
start_daemon || { ok 1 "kvmtuned starts"; done_testing; }
ok 0 "kvmtuned starts"

# ---- while the guest runs -------------------------------------------------------------

start_domain $A && start_domain $C
wait_state $A tuned
is "$(domain_state $A)" tuned "$A is tuned"
DED=$(show $A '.vcpus[0].cpus[0]')
wait_for 5 busy_off "$DED"
ok $? "the busy processes are kept off dedicated CPU $DED"
is "$(ctl --json isolation | jq -r .in_force)" "$(echo "$T_ISOLATION" | tr -d ' ')" "isolation in force as configured"
ok "$([ "$(ctl --json isolation | jq .tasks)" -ge 2 ] && echo 0 || echo 1)" "kvmtunectl isolation counts the confined tasks"
ok "$([ -s "$RECORD" ] && echo 0 || echo 1)" "what was changed is recorded in $RECORD"
if [ "$T_ISOLATION" = "tasks, guests" ]; then
        wait_state $C ignored
        wait_for 5 guest_off $C "$DED"
        rc=$?
        ok $rc "the cpu=none guest's threads are off dedicated CPU $DED"
        [ $rc = 0 ] || { diag "$(domain_threads $C)"; diag "$(ctl --json isolation | jq -c .)"; }
fi

# A process that widens its own mask is caught again by the rescan.
set -- $BUSY
taskset -pc "$(online_cpus)" "$1" >/dev/null
wait_for 5 busy_off "$DED"
ok $? "a process that widened its mask is confined again within the rescan period"

# Switched off and back by kvmtunectl (root).
ctl isolation off >/dev/null
busy_back
ok $? "kvmtunectl isolation off: the masks are back when it returns"
is "$(ctl --json isolation | jq -r .in_force)" none "isolation off: nothing in force"
ctl isolation config >/dev/null
busy_off "$DED"
ok $? "kvmtunectl isolation config: confined again when it returns"

# ---- put back: guest stops, kvmtuned stops, kvmtuned killed and restarted -------------

$VIRSH destroy $A >/dev/null
wait_for 5 busy_back
ok $? "guest stopped: the busy processes have their mask back ($ORIG)"
if [ "$T_ISOLATION" = "tasks, guests" ]; then
        is "$(domain_threads $C | awk '{print $3}' | sort -u)" "$(online_cpus)" "guest stopped: the cpu=none guest floats again"
fi
ok "$([ ! -e "$RECORD" ] && echo 0 || echo 1)" "nothing confined: no record left"

start_domain $A
wait_state $A tuned
DED=$(show $A '.vcpus[0].cpus[0]')
wait_for 5 busy_off "$DED"
ok $? "guest started again: confined again"
stop_daemon
ok $? "kvmtuned stops cleanly"
busy_back
ok $? "kvmtuned stopped: the busy processes have their mask back"

start_daemon || { ok 1 "kvmtuned starts again"; done_testing; }
wait_for 10 busy_off "$DED"
ok $? "kvmtuned started with the guest running: confined again"
kill -KILL "$T_DAEMON_PID"
wait "$T_DAEMON_PID" 2>/dev/null
T_DAEMON_PID=""
busy_off "$DED"
ok $? "kvmtuned killed: the confinement stays (recorded)"
start_daemon || { ok 1 "kvmtuned starts after SIGKILL"; done_testing; }
wait_for 10 sh -c "'$BUILDDIR/cli/kvmtunectl' --socket '$T_SOCK' --json isolation | jq -e '.tasks >= 2' >/dev/null"
ok $? "restarted kvmtuned adopts what the killed one confined"
$VIRSH destroy $A >/dev/null
wait_for 5 busy_back
ok $? "after SIGKILL + restart, the guest stops: masks back exactly"

# Killed while the guest runs, the guest stops meanwhile: the restart restores.
start_domain $A
wait_state $A tuned
wait_for 5 busy_off "$(show $A '.vcpus[0].cpus[0]')"
kill -KILL "$T_DAEMON_PID"
wait "$T_DAEMON_PID" 2>/dev/null
T_DAEMON_PID=""
$VIRSH destroy $A >/dev/null
start_daemon || { ok 1 "kvmtuned starts after SIGKILL"; done_testing; }
wait_for 10 busy_back
ok $? "killed, guest stopped meanwhile: the restarted kvmtuned puts the masks back"

# Killed while confined, started again where libvirt never answers and stopped
# before its first scan: stopping puts back what the record says.
start_domain $A
wait_state $A tuned
wait_for 5 busy_off "$(show $A '.vcpus[0].cpus[0]')"
ok $? "confined again before the unscanned restart"
kill -KILL "$T_DAEMON_PID"
wait "$T_DAEMON_PID" 2>/dev/null
T_DAEMON_PID=""
URI_REAL=$URI
URI="qemu+unix:///system?socket=$T_TMP/no-libvirt-sock"
start_daemon || { ok 1 "kvmtuned starts without libvirt"; done_testing; }
URI=$URI_REAL
stop_daemon
busy_back
ok $? "killed, restarted without libvirt, stopped before its first scan: the masks are back"
ok "$([ ! -e "$RECORD" ] && echo 0 || echo 1)" "... and the record is gone"

done_testing
