#!/bin/sh
# A dedicated guest started at once after `virsh define`, or after its policy
# was changed while it was stopped (`virsh metadata --config && virsh start`):
# kvmtuned must answer its started hook, not leave it to give up after its
# 2000 ms timeout because the daemon's loop is inside a libvirt call that waits
# for the starting domain (writing the placement into the definition,
# persist_placement). The fact checked is what the hook says on stderr when it
# gives up ("did not answer within 2000 ms"), never a wall time (printed only).
# Each start must also be placed by the started hook, its threads must be
# where kvmtunectl says (/proc), and its placement must reach its persistent
# definition once it runs (or leave it, once no longer dedicated).
. "$(dirname "$0")/lib.sh"

require_env
[ -x "$BUILDDIR/hook/kvmtuned" ] || skip_all "$BUILDDIR/hook/kvmtuned is not built"

T_MANAGED='kvmtuned-test-ds-*'
H_PATTERN=$T_MANAGED
H_STDERR=$T_TMP/hook.stderr
. "$(dirname "$0")/hook-lib.sh"
ds_cleanup() {
        stop_daemon
        cleanup_managed
        hooks_cleanup
}
trap ds_cleanup EXIT

ROUNDS=4
DEDICATED='cpu="dedicated" emulator="share" iothreads="shared" numa="none"'
TIMES=""

# The started-hook requests that gave up waiting for kvmtuned so far (a release
# hook that gives up says "kvmtuned frees it on the stop event" instead: that
# one is not what this test is about, and is only reported at the end).
hook_gave_up() {
        grep -c "did not answer.*starting unplaced" "$H_STDERR" || true
}

# timed COMMAND...: runs it, adds its wall time to TIMES, returns its status.
# GAVE_UP is the count of hook give-ups before it.
timed() {
        local t0 rc
        GAVE_UP=$(hook_gave_up)
        t0=$(date +%s%N)
        "$@"
        rc=$?
        TIMES="$TIMES $(( ($(date +%s%N) - t0) / 1000000 ))"
        return $rc
}

# One virsh, one connection: the start follows the define (or the policy
# change) as closely as any script's can, so the daemon is still handling that
# event when the start takes the domain. NAME is a plain word here.
define_start() {
        $VIRSH "define '$T_TMP/$1.xml'; start '$1'" >/dev/null
}

policy_start() {        # policy_start NAME POLICY_XML (no single quote in it)
        $VIRSH "metadata '$1' --uri urn:kvmtuned:tuning:1 --key kvmtune --set '$2' --config; start '$1'" >/dev/null
}

# check_started NAME STATE: placed by its started hook, which was answered.
check_started() {
        wait_state "$1" "$2"
        is "$(domain_state "$1")" "$2" "$1 is $2"
        grep -qF "$1: $2 by the started hook" "$T_LOG"
        ok $? "$1 was placed by its started hook, not left to the event path"
        is "$(hook_gave_up)" "$GAVE_UP" "$1: its started hook was answered, it did not give up waiting (hook stderr)"
        check_affinity "$1"
}

# definition_pins NAME: the PU its persistent definition pins vCPU 0 on.
definition_pins() {
        $VIRSH dumpxml --inactive "$1" | sed -n "s/.*<vcpupin vcpu='0' cpuset='\([^']*\)'.*/\1/p"
}

stop_guest() {
        $VIRSH destroy "$1" >/dev/null
        wait_for 20 sh -c "! '$BUILDDIR/cli/kvmtunectl' --socket '$T_SOCK' show \"\$1\" >/dev/null 2>&1" sh "$1"
        ok $? "$1 is gone from the daemon once stopped"
}

: > "$H_STDERR"
hooks_install
write_config
start_daemon || { ok 1 "kvmtuned starts"; done_testing; }

# ---- defined and started at once ----------------------------------------------------
i=1
while [ $i -le $ROUNDS ]; do
        n=kvmtuned-test-ds-$i
        domain_xml "$n" 1 0 "$DEDICATED" > "$T_TMP/$n.xml"
        timed define_start "$n"
        ok $? "$n is defined and started at once"
        check_started "$n" tuned
        pu=$(show "$n" '.vcpus[0].cpus[0]')
        wait_for 10 sh -c "[ \"\$($VIRSH dumpxml --inactive \"\$1\" | grep -c \"<vcpupin vcpu='0' cpuset='$pu'/>\")\" = 1 ]" sh "$n"
        ok $? "$n: once running, its placement (PU $pu) reached its persistent definition"
        stop_guest "$n"
        $VIRSH undefine "$n" >/dev/null
        i=$((i + 1))
done

# ---- the policy changed while stopped, started at once ------------------------------
n=kvmtuned-test-ds-meta
domain_xml "$n" 1 0 > "$T_TMP/$n.xml"
$VIRSH define "$T_TMP/$n.xml" >/dev/null
i=1
while [ $i -le $ROUNDS ]; do
        timed policy_start "$n" '<policy cpu="dedicated" emulator="share" iothreads="shared" numa="none"/>'
        ok $? "$n: set dedicated while stopped and started at once"
        check_started "$n" tuned
        wait_for 10 sh -c "$VIRSH dumpxml --inactive \"\$1\" | grep -q \"<vcpupin vcpu='0'\"" sh "$n"
        ok $? "$n: its placement reached its persistent definition"
        stop_guest "$n"
        timed policy_start "$n" '<policy cpu="shared"/>'
        ok $? "$n: set shared while stopped and started at once"
        check_started "$n" shared
        wait_for 10 sh -c "! $VIRSH metadata \"\$1\" --uri urn:kvmtuned:placement:1 --config 2>/dev/null | grep -q '<placement'" sh "$n"
        ok $? "$n: no longer dedicated, its placement record left its persistent definition"
        case "$(definition_pins "$n")" in
        "" | "$(online_cpus)") ok 0 "$n: ... and so did its dedicated pins" ;;
        *) ok 1 "$n: ... and so did its dedicated pins"; diag "vCPU 0 pinned to $(definition_pins "$n")" ;;
        esac
        stop_guest "$n"
        i=$((i + 1))
done

# ---- defined, started later: the definition pins even the first start -------------
n=kvmtuned-test-ds-later
domain_xml "$n" 1 0 "$DEDICATED" > "$T_TMP/$n.xml"
$VIRSH define "$T_TMP/$n.xml" >/dev/null
wait_for 10 sh -c "$VIRSH dumpxml --inactive \"\$1\" | grep -q \"<vcpupin vcpu='0'\"" sh "$n"
ok $? "$n, defined and left stopped, has a placement in its definition before it ever ran"
pu=$(definition_pins "$n")
timed start_domain "$n"
check_started "$n" tuned
is "$(show "$n" '.vcpus[0].cpus[0]')" "$pu" "$n keeps the PU its definition named ($pu)"
stop_guest "$n"

is "$(hook_gave_up)" 0 "no started hook gave up waiting for kvmtuned in this test (hook stderr)"
diag "release hooks that gave up waiting: $(grep -c "did not answer.*stop event" "$H_STDERR" || true)"
if [ -s "$H_STDERR" ]; then
        diag "the hook's stderr:"
        sed 's/^/#   /' "$H_STDERR"
fi
diag "start wall times (ms, lock held; ~600 when the hook is answered, ~2600 when it gives up):$TIMES"
done_testing
