#!/bin/sh
# Faults from outside, truth from /proc and virsh: kvmtuned killed with SIGKILL
# and restarted (no thread of any guest moves), a guest's QEMU killed (its PU
# is freed and goes back to the shared pool), kvmtuned stopped with SIGSTOP
# while a guest starts (the hook fails open after its timeout, the guest runs,
# and is placed once kvmtuned continues), broken configurations reloaded
# (rejected, the running one kept, nothing moves), and abuse of the control
# socket: garbage, binary, oversized and malformed requests, a stalled client,
# and more idle clients from uid 65534 than the connection cap while root's
# kvmtunectl and the hook must still be served.
. "$(dirname "$0")/lib.sh"

require_env
[ -x "$BUILDDIR/hook/kvmtuned" ] || skip_all "$BUILDDIR/hook/kvmtuned is not built"
command -v setpriv >/dev/null || skip_all "setpriv is not installed"
[ -x /usr/bin/python3 ] || skip_all "/usr/bin/python3 is not installed"

T_MANAGED='kvmtuned-test-ft-*'
H_PATTERN=$T_MANAGED
. "$(dirname "$0")/hook-lib.sh"
RAW=$SRCDIR/tests/integration/ctl-raw
HOLD_PID=""
faults_cleanup() {
        [ -n "$HOLD_PID" ] && kill "$HOLD_PID" 2>/dev/null
        stop_daemon
        cleanup_managed
        hooks_cleanup
}
trap faults_cleanup EXIT

D=kvmtuned-test-ft-ded          # dedicated: holds one of the two PUs
S=kvmtuned-test-ft-shr          # shared: floats over the other (or both)
H=kvmtuned-test-ft-late         # shared, started while the socket is flooded

DEDICATED='cpu="dedicated" emulator="share" iothreads="shared" numa="none"'
hooks_install
write_config
define_domain $D 1 1 "$DEDICATED"
define_domain $S 1 0
define_domain $H 1 0
start_daemon || { ok 1 "kvmtuned starts"; done_testing; }
start_domain $D && start_domain $S
wait_state $D tuned && wait_state $S shared
is "$(domain_state $D)/$(domain_state $S)" tuned/shared "$D tuned, $S shared"
d_pu=$(show $D '.vcpus[0].cpus[0]')

daemon_alive() {
        [ -n "$T_DAEMON_PID" ] && kill -0 "$T_DAEMON_PID" 2>/dev/null && daemon_up
}

# ---- SIGKILL and restart: no pin moves ------------------------------------------
before=$(guest_threads)
kill -KILL "$T_DAEMON_PID"
wait "$T_DAEMON_PID" 2>/dev/null
T_DAEMON_PID=""
is "$(guest_threads)" "$before" "SIGKILL: every guest thread keeps its CPUs while kvmtuned is gone"
start_daemon
ok $? "kvmtuned starts again after SIGKILL (its stale socket file is replaced)"
wait_state $D tuned && wait_state $S shared
is "$(domain_state $D)/$(domain_state $S)" tuned/shared "after the restart: $D tuned, $S shared"
is "$(guest_threads)" "$before" "SIGKILL + restart: no thread of any guest moved (/proc, every thread)"
is "$(pu_owners)" "$d_pu $D" "the rebuilt allocation table: PU $d_pu held by $D, nothing else held"
check_affinity $D
check_affinity $S

# ---- QEMU killed: its PU is freed ---------------------------------------------
kill -KILL "$(domain_pid $D)"
wait_for 20 sh -c "[ \"\$($VIRSH domstate $D 2>/dev/null)\" = 'shut off' ]"
ok $? "$D's QEMU killed: libvirt sees it shut off"
wait_for 20 sh -c "! '$BUILDDIR/cli/kvmtunectl' --socket '$T_SOCK' show $D >/dev/null 2>&1"
ok $? "kvmtuned dropped $D"
is "$(pu_owners)" "" "no PU is held any more (allocation table)"
wait_for 20 sh -c "[ \"\$(proc_vcpu_cpus $S)\" = '$(online_cpus)' ]" 2>/dev/null
is "$(proc_vcpu_cpus $S)" "$(online_cpus)" "$S's vCPU gets the freed PU back (/proc)"

# ---- SIGSTOP while a guest starts: the hook fails open ----------------------------
kill -STOP "$T_DAEMON_PID"
t0=$(date +%s%N)
start_domain $D
rc=$?
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
ok $rc "$D starts while kvmtuned is stopped"
is "$($VIRSH domstate $D)" running "... and runs (virsh)"
ok "$([ "$ms" -ge 1900 ] && [ "$ms" -lt 20000 ] && echo 0 || echo 1)" \
        "... after the hook waited out its 2000 ms timeout and let it go ($ms ms)"
kill -CONT "$T_DAEMON_PID"
wait_state $D tuned 30
is "$(domain_state $D)" tuned "$D is placed once kvmtuned continues"
d_pu=$(show $D '.vcpus[0].cpus[0]')
is "$(pu_owners)" "$d_pu $D" "$D holds exactly one PU, $d_pu, and nothing else is held"
check_affinity $D
check_affinity $S
check_exclusive $D $S

# ---- bad reloads: rejected, the running configuration kept -------------------------
cp "$T_CONF" "$T_TMP/good.conf"
before=$(guest_threads)
pools=$(ctl --json status | jq -c .pools)
# bad_reload DESCRIPTION: T_CONF holds a broken configuration; reload must fail.
bad_reload() {
        local out rc
        out=$(ctl reload 2>&1)
        rc=$?
        is "$rc" 1 "reload refused: $1"
        [ $rc -eq 1 ] || diag "kvmtunectl reload said: $out"
        cp "$T_TMP/good.conf" "$T_CONF"
}
printf '[host]\nreserved_cpus = 0-x\n' > "$T_CONF"; bad_reload "reserved_cpus = 0-x"
printf '[defaults]\nbogus = 1\n' > "$T_CONF"; bad_reload "an unknown key"
printf '[defaults]\ncpu = sideways\n' > "$T_CONF"; bad_reload "cpu = sideways"
printf '[nosuch]\n' > "$T_CONF"; bad_reload "an unknown section"
printf '[domain "x\ncpu = shared\n' > "$T_CONF"; bad_reload "an unterminated section header"
printf 'this is not ini\n' > "$T_CONF"; bad_reload "a line that is no key = value"
printf '\000\001\377[defaults\n\000' > "$T_CONF"; bad_reload "binary bytes"
python3 -c "print('[defaults]\ncpu = ' + 'x' * 200000)" > "$T_CONF"; bad_reload "a 200 kB line"
rm -f "$T_CONF" && mkdir "$T_CONF"; out=$(ctl reload 2>&1); is "$?" 1 "reload refused: the config path is a directory"
rmdir "$T_CONF"; out=$(ctl reload 2>&1); is "$?" 1 "reload refused: the --config file is gone"
cp "$T_TMP/good.conf" "$T_CONF"
printf '[defaults]\ncpu = sideways\n' > "$T_CONF"
kill -HUP "$T_DAEMON_PID"
sleep 1
ok "$(daemon_alive && echo 0 || echo 1)" "SIGHUP with a broken configuration: kvmtuned still runs and answers"
cp "$T_TMP/good.conf" "$T_CONF"
is "$(ctl --json status | jq -c .pools)" "$pools" "the pools are those of the running configuration"
is "$(guest_threads)" "$before" "no thread of any guest moved through the rejected reloads"
is "$(domain_state $D)/$(domain_state $S)" tuned/shared "$D still tuned, $S still shared"
ctl reload >/dev/null
is "$?" 0 "the good configuration reloads again"
is "$(guest_threads)" "$before" "... and an unchanged configuration moves nothing"

# ---- socket abuse ------------------------------------------------------------------
raw() {         # raw [send-close]: stdin to the socket as is, prints the reply
        "$RAW" "$T_SOCK" "${1:-send}"
}
# answers_error DESCRIPTION REPLY
answers_error() {
        case "$2" in
        *'"error"'*|closed) ok 0 "$1" ;;
        *) ok 1 "$1"; diag "reply: $2" ;;
        esac
        ok "$(daemon_alive && echo 0 || echo 1)" "... and kvmtuned still answers"
}
answers_error "a line of garbage: an error reply" "$(printf 'this is not json\n' | raw)"
answers_error "binary bytes and NULs: an error reply" "$(printf '\000\377\376{{{\n' | raw)"
answers_error "a JSON array, not an object" "$(printf '[1, 2, 3]\n' | raw)"
answers_error "method not a string" "$(printf '{"method": 5}\n' | raw)"
answers_error "an unknown method" "$(printf '{"method": "kvmtune.v1.Nope"}\n' | raw)"
answers_error "params not an object" "$(printf '{"method": "kvmtune.v1.Show", "params": "x"}\n' | raw)"
answers_error "a domain name that is an array" "$(printf '{"method": "kvmtune.v1.Show", "params": {"name": ["a"]}}\n' | raw)"
answers_error "JSON nested 100000 deep" "$(python3 -c "print('[' * 100000)" | raw)"
answers_error "a request over the 1 MiB cap" "$(python3 -c "print('{\"method\": \"' + 'x' * 2000000 + '\"}')" | raw)"
answers_error "a hook request whose pid is no QEMU (pid 1)" \
        "$(jq -cn --arg xml "$($VIRSH dumpxml $S)" --arg n $S '{method: "kvmtune.v1.Hook", params: {stage: "started", name: $n, pid: 1, xml: $xml}}' | raw)"
answers_error "a hook request with broken XML" \
        "$(printf '{"method": "kvmtune.v1.Hook", "params": {"stage": "started", "name": "x", "pid": 2, "xml": "<domain"}}\n' | raw)"
answers_error "half a request, then the client closes" "$(printf '{"method": "kvmtune.v1.St' | raw send-close)"
is "$(guest_threads)" "$before" "no thread of any guest moved through the malformed requests"

fds_before=$(ls /proc/"$T_DAEMON_PID"/fd | wc -l)
"$RAW" "$T_SOCK" stall 15 > "$T_TMP/stall" &
stall_pid=$!

# More idle clients from uid 65534 than the connection cap, reconnecting as
# soon as the daemon closes one: root and the hook must still be served.
nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
PY=/usr/bin/python3             # root's PATH may lead into /root, closed to uid 65534
chmod 755 "$T_TMP"
nobody "$BUILDDIR/cli/kvmtunectl" --socket "$T_SOCK" reload >/dev/null 2>"$T_TMP/err"
is "$?" 1 "uid 65534 is refused reload"
grep -q "permission denied" "$T_TMP/err"
ok $? "... as a permission matter: $(cat "$T_TMP/err")"
nobody $PY "$RAW" "$T_SOCK" hold 40 15 > "$T_TMP/hold" 2>&1 &
HOLD_PID=$!
wait_for 10 grep -q connected "$T_TMP/hold"
diag "uid 65534: $(head -1 "$T_TMP/hold") idle connections"
ctl status >/dev/null 2>"$T_TMP/err"
rc=$?
is "$rc" 0 "root's kvmtunectl status is answered while uid 65534 holds 40 idle connections"
[ $rc -eq 0 ] || diag "$(cat "$T_TMP/err")"
nobody "$BUILDDIR/cli/kvmtunectl" --socket "$T_SOCK" status >/dev/null 2>"$T_TMP/err"
is "$?" 1 "uid 65534's own kvmtunectl is refused meanwhile"
grep -q "too many connections from uid 65534" "$T_TMP/err"
ok $? "... and told why: $(cat "$T_TMP/err")"
start_domain $H
wait_state $H shared
grep -qF "$H: shared by the started hook" "$T_LOG"
ok $? "a guest started meanwhile is placed by the started hook"
wait "$HOLD_PID"
HOLD_PID=""
diag "uid 65534: $(tail -1 "$T_TMP/hold")"
wait "$stall_pid"
case "$(cat "$T_TMP/stall")" in
"closed after "*) ok 0 "a client stalled mid-request is closed ($(cat "$T_TMP/stall"))" ;;
*) ok 1 "a client stalled mid-request is closed"; diag "$(cat "$T_TMP/stall")" ;;
esac
wait_for 15 sh -c "[ \$(ls /proc/$T_DAEMON_PID/fd | wc -l) -le $fds_before ]"
ok $? "every connection is closed afterwards: kvmtuned holds $fds_before fds again"
ok "$(daemon_alive && echo 0 || echo 1)" "kvmtuned survived the socket abuse"
check_affinity $D
check_affinity $S
check_affinity $H
check_exclusive $D $S $H

# ---- everything stopped: every PU free ---------------------------------------------
$VIRSH destroy $D >/dev/null; $VIRSH destroy $S >/dev/null; $VIRSH destroy $H >/dev/null
wait_for 20 sh -c "[ \"\$('$BUILDDIR/cli/kvmtunectl' --socket '$T_SOCK' --json status | jq -c '.domains | [.[]] | add')\" = 0 ]"
ok $? "every guest stopped: kvmtuned counts no domain"
is "$(pu_owners)" "" "... and holds no PU"
is "$(ctl --json status | jq -c .pools.shared)" "[$(cpu_list_expand "$(online_cpus)" | tr ' ' ',')]" \
        "... and the shared pool is every PU again"

done_testing
