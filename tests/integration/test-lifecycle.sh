#!/bin/sh
# Lifecycle events other than boot and destroy, against a real libvirtd (see
# daemon/watch.c watch_on_lifecycle): a save stops the domain (STOPPED/SAVED)
# and the daemon releases it; a restore (STARTED/RESTORED) places it again, and
# not on the PU recorded in its saved definition when another domain holds
# that PU now; a QEMU killed under libvirt (STOPPED/FAILED) is released and the
# dedicated domain that was unplaced for lack of PUs gets them; a transient
# domain (virsh create) is placed from the metadata it was created with and
# released when destroyed; a managed save releases the domain and the start
# that restores it places it again. A shared domain runs throughout, so that
# every dedicated PU is checked against it.
#
# 2 host PUs: one dedicated 1-vCPU domain at a time, the other PU stays the
# shared pool (the daemon never takes the last one).
. "$(dirname "$0")/lib.sh"

require_env

S=kvmtuned-test-lc-shr          # no policy: [domain "kvmtuned-test-lc-*"] cpu = shared
A=kvmtuned-test-lc-save         # metadata: dedicated; virsh save / restore
P=kvmtuned-test-lc-taker        # metadata: dedicated; takes A's PU while A is saved
B=kvmtuned-test-lc-crash        # metadata: dedicated; its QEMU is killed
C=kvmtuned-test-lc-wait         # metadata: dedicated; unplaced until B crashes
T=kvmtuned-test-lc-transient    # metadata: dedicated; virsh create (never defined)
M=kvmtuned-test-lc-msave        # metadata: dedicated; virsh managedsave / start
DED='cpu="dedicated" emulator="share" iothreads="shared" numa="strict"'
SAVE=$T_TMP/$A.save

# lib.sh's cleanup destroys and undefines; an inactive domain with a managed
# save image cannot be undefined, so remove the images first. Save files live
# in $T_TMP, which t_cleanup removes.
lc_cleanup() {
        local d
        for d in $T_DOMAINS; do
                $VIRSH managedsave-remove "$d" >/dev/null 2>&1
        done
        t_cleanup
}
trap lc_cleanup EXIT

# The daemon no longer knows the domain (kvmtunectl show fails).
gone() {
        daemon_up && [ -z "$(show "$1" .state)" ]
}

wait_gone() {   # wait_gone NAME: true once the daemon forgot the domain
        wait_for 20 gone "$1"
}

# The event the daemon received for NAME, from its debug log: "EVENT/DETAIL".
saw_event() {   # saw_event NAME EVENT DETAIL
        grep -q "libvirt event $2/$3 for $1\$" "$T_LOG"
}

dedicated_pus() {
        ctl --json status | jq -c .pools.dedicated
}

managed_save() {        # "yes" or "no", from virsh dominfo
        $VIRSH dominfo "$1" 2>/dev/null | awk -F: '$1 == "Managed save" {gsub(/ /, "", $2); print $2}'
}

write_config
define_domain $S 1 1
define_domain $A 1 1 "$DED"
define_domain $P 1 1 "$DED"
define_domain $B 1 1 "$DED"
define_domain $C 1 1 "$DED"
define_domain $M 1 1 "$DED"
start_daemon || { ok 1 "kvmtuned starts"; done_testing; }
ok 0 "kvmtuned starts and answers on its socket"

start_domain $S
wait_state $S shared
is "$(domain_state $S)" shared "$S (config glob) is shared"
check_affinity $S

# ---- save / restore ---------------------------------------------------------------
start_domain $A
wait_state $A tuned
is "$(domain_state $A)" tuned "$A (metadata cpu=dedicated) is tuned"
check_affinity $A
check_exclusive $A $S
pu=$(show $A '.vcpus[0].cpus[0]')

$VIRSH save $A "$SAVE" >/dev/null
ok $? "virsh save $A stops it into a file"
wait_gone $A
ok $? "$A is released once saved (kvmtunectl show fails)"
ok "$(saw_event $A 5 4 && echo 0 || echo 1)" "the daemon got STOPPED/SAVED (5/4) for $A"
is "$($VIRSH domstate $A 2>/dev/null)" "shut off" "$A is shut off"
is "$(dedicated_pus)" "[]" "no PU is dedicated any more"
wait_for 10 sh -c "[ \"\$('$BUILDDIR/cli/kvmtunectl' --socket '$T_SOCK' --json status | jq -c .pools.shared)\" = '[0,1]' ]"
is "$(ctl --json status | jq -c .pools.shared)" "[0,1]" "PU $pu went back to the shared pool"
check_affinity $S

$VIRSH restore "$SAVE" >/dev/null
ok $? "virsh restore brings $A back"
wait_state $A tuned
is "$(domain_state $A)" tuned "$A is tuned again after the restore"
ok "$(saw_event $A 2 2 && echo 0 || echo 1)" "the daemon got STARTED/RESTORED (2/2) for $A"
check_affinity $A
check_affinity $S
check_exclusive $A $S

# Restored while the PU recorded in its saved definition went to another
# domain: it must not be kept there; no room, so unplaced until that one stops.
$VIRSH save $A "$SAVE" >/dev/null
ok $? "virsh save $A again"
wait_gone $A
ok $? "$A is released once saved"
start_domain $P
wait_state $P tuned
is "$(domain_state $P)" tuned "$P is tuned while $A is saved"
is "$(show $P '.vcpus[0].cpus[0]')" "$pu" "$P got PU $pu, the one recorded in $A's saved definition"
$VIRSH restore "$SAVE" >/dev/null
ok $? "virsh restore brings $A back"
wait_state $A unplaced
is "$(domain_state $A)" unplaced "$A is unplaced: its recorded PU is $P's now, the other one is the shared pool"
check_affinity $A
check_affinity $P
check_exclusive $P $A $S
$VIRSH destroy $P >/dev/null
wait_state $A tuned
is "$(domain_state $A)" tuned "$A is placed once $P released its PU"
check_affinity $A
check_affinity $S
check_exclusive $A $S
rm -f "$SAVE"
ok "$([ ! -e "$SAVE" ] && echo 0 || echo 1)" "the save file is removed"

$VIRSH destroy $A >/dev/null
wait_gone $A
ok $? "$A is released once destroyed"

# ---- crash: QEMU killed under libvirt -------------------------------------------
start_domain $B
wait_state $B tuned
is "$(domain_state $B)" tuned "$B is tuned"
check_affinity $B
start_domain $C
wait_state $C unplaced
is "$(domain_state $C)" unplaced "$C is unplaced: $B holds the only PU that can be dedicated"
check_affinity $C
check_exclusive $B $C $S

pid=$(domain_pid $B)
ok "$([ -n "$pid" ] && kill -9 "$pid" && echo 0 || echo 1)" "kill -9 the QEMU of $B (pid ${pid:-?})"
wait_for 20 sh -c "[ \"\$($VIRSH domstate $B 2>/dev/null)\" = 'shut off' ]"
is "$($VIRSH domstate $B --reason 2>/dev/null)" "shut off (crashed)" "libvirt reports $B stopped (crashed)"
wait_gone $B
ok $? "$B is released once its QEMU died (kvmtunectl show fails)"
ok "$(saw_event $B 5 5 && echo 0 || echo 1)" "the daemon got STOPPED/FAILED (5/5) for $B"
wait_state $C tuned
is "$(domain_state $C)" tuned "$C is placed once $B's PU is free"
check_affinity $C
check_affinity $S
check_exclusive $C $S

$VIRSH destroy $C >/dev/null
wait_gone $C
ok $? "$C is released once destroyed"

# ---- transient domain --------------------------------------------------------------
domain_xml $T 1 1 "$DED" > "$T_TMP/$T.xml"
T_DOMAINS="$T_DOMAINS $T"       # cleanup destroys it
$VIRSH create "$T_TMP/$T.xml" >/dev/null
ok $? "virsh create starts the transient $T"
is "$($VIRSH dominfo $T 2>/dev/null | awk -F: '$1 == "Persistent" {gsub(/ /, "", $2); print $2}')" no \
        "$T is transient"
wait_state $T tuned
is "$(domain_state $T)" tuned "$T (created with metadata cpu=dedicated) is tuned"
is "$(show $T .policy.source)" metadata "$T policy comes from its metadata"
check_affinity $T
check_affinity $S
check_exclusive $T $S

$VIRSH destroy $T >/dev/null
ok $? "virsh destroy $T"
wait_gone $T
ok $? "$T is released once destroyed"
$VIRSH domstate $T >/dev/null 2>&1
ok "$([ $? -ne 0 ] && echo 0 || echo 1)" "$T no longer exists in libvirt"
is "$(dedicated_pus)" "[]" "no PU is dedicated any more"

# ---- managed save -------------------------------------------------------------------
start_domain $M
wait_state $M tuned
is "$(domain_state $M)" tuned "$M is tuned"
check_affinity $M
check_exclusive $M $S

$VIRSH managedsave $M >/dev/null
ok $? "virsh managedsave $M"
wait_gone $M
ok $? "$M is released once saved (kvmtunectl show fails)"
ok "$(saw_event $M 5 4 && echo 0 || echo 1)" "the daemon got STOPPED/SAVED (5/4) for $M"
is "$(managed_save $M)" yes "$M has a managed save image"
is "$(dedicated_pus)" "[]" "no PU is dedicated any more"
check_affinity $S

start_domain $M
ok $? "virsh start $M restores it from the managed save image"
wait_state $M tuned
is "$(domain_state $M)" tuned "$M is tuned again after the restore"
ok "$(saw_event $M 2 2 && echo 0 || echo 1)" "the daemon got STARTED/RESTORED (2/2) for $M"
check_affinity $M
check_affinity $S
check_exclusive $M $S
is "$(managed_save $M)" no "no managed save image is left for $M"

done_testing
