#!/bin/sh
# Start/stop storms with the hook installed: 12 guests (3 dedicated competing
# for the one PU a 2-PU host can dedicate, since the shared pool keeps at least
# one; 6 shared; 3 left alone) started all at once and destroyed all at once,
# twice; then started all at once while libvirtd is restarted under them.
# After each storm, truth from /proc and virsh: exactly one PU is held, by a
# dedicated guest whose vCPU is on it, and every thread of every other managed
# guest is off it (cpu=none guests float: host isolation is off); no PU is in the vCPU affinity of two placed dedicated guests; the
# dedicated guests left without a PU and the shared ones have their threads
# where kvmtunectl says (the shared pool); kvmtuned knows exactly the guests
# libvirt runs. After each stop: no PU held, no domain counted, the shared pool
# whole again.
. "$(dirname "$0")/lib.sh"

require_env
[ -x "$BUILDDIR/hook/kvmtuned" ] || skip_all "$BUILDDIR/hook/kvmtuned is not built"

T_MANAGED='kvmtuned-test-st-*'
H_PATTERN=$T_MANAGED
. "$(dirname "$0")/hook-lib.sh"
storm_cleanup() {
        stop_daemon
        cleanup_managed
        hooks_cleanup
}
trap storm_cleanup EXIT

P=kvmtuned-test-st
DED="$P-d1 $P-d2 $P-d3"
SHR="$P-s1 $P-s2 $P-s3 $P-s4 $P-s5 $P-s6"
NON="$P-n1 $P-n2 $P-n3"
ALL="$DED $SHR $NON"
ALL_JSON="[$(cpu_list_expand "$(online_cpus)" | tr ' ' ',')]"

hooks_install
write_config "[domain \"$P-n*\"]
cpu = none"
for d in $DED; do define_domain "$d" 1 0 'cpu="dedicated" emulator="share" iothreads="shared" numa="none"'; done
for d in $SHR $NON; do define_domain "$d" 1 0; done
start_daemon || { ok 1 "kvmtuned starts"; done_testing; }
sleep 2         # the daemon writes dedicated placements into the definitions

running() {     # the test's guests libvirt runs, sorted
        $VIRSH list --name | grep -x "$P-.*" | sort
}

known() {       # the test's guests kvmtuned lists, sorted
        ctl --json list | jq -r '.domains[].name' | grep -x "$P-.*" | sort
}

# Every running guest has a state in kvmtuned, and kvmtuned lists no other.
settled() {
        [ "$(running)" = "$(known)" ] || return 1
        for d in $(running); do
                [ -n "$(domain_state "$d")" ] || return 1
        done
}

# storm_check LABEL: the checks after a storm of starts (8 TAP lines).
storm_check() {
        local ded="" tuned="" d pu owner bad=0 mism=0 n=0
        wait_for 60 settled
        ok $? "$1: kvmtuned lists exactly the $(running | wc -l) guests libvirt runs, each with a state"
        for d in $DED; do running | grep -qx "$d" && ded="$ded $d"; done
        for d in $ded; do [ "$(domain_state "$d")" = tuned ] && tuned="$tuned $d"; done
        diag "$1: placed dedicated:${tuned:- none}; states $(ctl --json status | jq -c .domains)"
        check_proc_disjoint "$1: no PU is in the vCPU affinity of two placed dedicated guests (/proc)" $tuned
        is "$(pu_owners | wc -l)" "$(pu_owners | awk '{print $1}' | sort -u | wc -l)" "$1: no PU has two owners in kvmtuned's table"
        pu_owners > "$T_TMP/owners"
        while read -r pu owner; do
                case " $tuned " in *" $owner "*) ;; *) bad=1; diag "PU $pu held by $owner, not a placed dedicated guest" ;; esac
                [ "$(proc_vcpu_cpus "$owner")" = "$pu" ] || { bad=1; diag "$owner holds PU $pu, its vCPU is on $(proc_vcpu_cpus "$owner")"; }
                # cpu=none guests float over every PU (host isolation is off here)
                guest_threads | awk -v o="$owner" -v n="$P-n" '$1 != o && index($1, n) != 1 {print $1, $3}' \
                        > "$T_TMP/others"
                while read -r d cpus; do
                        cpus_contain "$cpus" "$pu" && { bad=1; diag "PU $pu of $owner is allowed for a thread of $d ($cpus)"; }
                done < "$T_TMP/others"
        done < "$T_TMP/owners"
        ok $bad "$1: every held PU is its owner's vCPU PU and off every thread of every other managed guest (/proc)"
        is "$(pu_owners | wc -l)" "$([ -n "$ded" ] && echo 1 || echo 0)" "$1: the one PU that can be dedicated is held exactly when a dedicated guest runs"
        for d in $(running); do
                case "$(domain_state "$d")" in tuned|shared|unplaced) ;; *) continue ;; esac
                n=$((n + 1))
                [ "$(domain_threads "$d")" = "$(reported_threads "$d")" ] || { mism=$((mism + 1)); diag "$d: /proc $(domain_threads "$d" | tr '\n' ';') kvmtunectl $(reported_threads "$d" | tr '\n' ';')"; }
        done
        is "$mism" 0 "$1: the threads of all $n tuned, shared and unplaced guests are where kvmtunectl says (/proc)"
        bad=0
        for d in $NON; do
                running | grep -qx "$d" || continue
                [ "$(domain_state "$d")" = ignored ] || { bad=1; diag "$d: $(domain_state "$d")"; }
        done
        ok $bad "$1: the cpu=none guests are left alone"
        ok "$(kill -0 "$T_DAEMON_PID" 2>/dev/null && daemon_up && echo 0 || echo 1)" "$1: kvmtuned still runs"
}

# stop_check LABEL: every guest destroyed at once, then nothing held (3 TAP lines).
stop_check() {
        local d pids=""
        for d in $ALL; do $VIRSH destroy "$d" >/dev/null 2>&1 & pids="$pids $!"; done
        wait $pids      # not a bare wait: kvmtuned is a child too
        wait_for 30 sh -c "[ -z \"\$($VIRSH list --name | grep -x '$P-.*')\" ] &&
                [ \"\$('$BUILDDIR/cli/kvmtunectl' --socket '$T_SOCK' --json status | jq -c '.domains | [.[]] | add')\" = 0 ]"
        ok $? "$1, all destroyed at once: libvirt runs none, kvmtuned counts none"
        is "$(pu_owners)" "" "$1: no PU held"
        is "$(ctl --json status | jq -c .pools.shared)" "$ALL_JSON" "$1: the shared pool is every PU again"
}

start_all() {
        local d pids=""
        for d in $ALL; do start_domain "$d" 2>/dev/null & pids="$pids $!"; done
        wait $pids
}

for round in 1 2; do
        t0=$(date +%s)
        start_all
        diag "storm $round: $(running | wc -l) of 12 started in $(( $(date +%s) - t0 )) s"
        storm_check "storm $round"
        stop_check "storm $round"
done

# libvirtd restarted while 12 guests start.
resyncs=$(grep -c 'Resynchronised' "$T_LOG")
start_all &
starts=$!
sleep 1
restart_libvirtd
ok $? "libvirtd restarted in the middle of the storm"
wait $starts
wait_for 60 sh -c "[ \$(grep -c 'Resynchronised' '$T_LOG') -gt $resyncs ]"
ok $? "kvmtuned resynchronised with the new libvirtd"
is "$(ctl --json status | jq -r .libvirt.connected)" true "kvmtuned is connected to libvirt"
diag "$(running | wc -l) of 12 running after the libvirtd restart"
storm_check "libvirtd restart"
stop_check "libvirtd restart"

done_testing
