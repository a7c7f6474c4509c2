#!/bin/sh
# The effect, visible, with real spinning guests (bench/guest/spin.S): a guest
# placed on a dedicated PU next to two spinning guests sharing the other PU.
# kvmtunectl top (in tmux: send-keys, capture-pane) shows the shared guests
# waiting for a CPU and the placed one not; show and metrics carry the same
# run-queue delay from /proc/PID/task/TID/schedstat; verify finds nothing,
# then the vCPU someone moved with virsh vcpupin (exit 1), and nothing again
# after rebalance. The comparison of delays needs a host doing nothing else:
# with other work the scheduler may put on the placed guest's PU (other guests,
# builds), it is skipped, saying why; everything else is checked regardless.
. "$(dirname "$0")/lib.sh"

require_env
command -v tmux >/dev/null || skip_all "tmux is not installed"
command -v taskset >/dev/null || skip_all "taskset is not installed (util-linux)"
[ "$(nproc)" -ge 2 ] || skip_all "needs 2 CPUs"

A=kvmtuned-test-top-placed     # metadata: dedicated
B=kvmtuned-test-top-noisy1     # config glob: shared
C=kvmtuned-test-top-noisy2
T_MANAGED='kvmtuned-test-top-*'
TMUX_SESSION=kvmtuned-test-top-$$
trap 'tmux kill-session -t $TMUX_SESSION 2>/dev/null; t_cleanup' EXIT

chmod 0755 "$T_TMP"
spin_kernel "$T_TMP" || skip_all "cannot build the spinning guest kernel (gcc -m32, ld -m elf_i386)"
chmod 0644 "$T_TMP/spin.elf"

start_spinner() {       # start_spinner NAME [POLICY_ATTRIBUTES]
        spin_domain_xml "$1" "$T_TMP/spin.elf" "${2:-}" > "$T_TMP/$1.xml"
        T_DOMAINS="$T_DOMAINS $1"
        $VIRSH create "$T_TMP/$1.xml" >/dev/null
}

write_config
start_daemon || { ok 1 "kvmtuned starts"; done_testing; }
start_spinner $A 'cpu="dedicated" emulator="share" numa="none"'
start_spinner $B
start_spinner $C
wait_state $A tuned
wait_state $B shared
wait_state $C shared
is "$(domain_state $A)" tuned "$A is on a dedicated PU"
is "$(domain_state $B)/$(domain_state $C)" shared/shared "$B and $C share the other PU"
check_exclusive $A $B $C
sleep 2

# CPUs' worth of work on the host besides our three guests' QEMUs, over 2 s:
# busy jiffies of /proc/stat less those of the QEMUs (/proc/PID/stat). Other
# guests or builds running here make the placed guest's PU busy too.
host_jiffies() { awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 }' /proc/stat; }
our_jiffies() {
        local d
        for d in $A $B $C; do awk '{ print $14 + $15 }' "/proc/$(domain_pid $d)/stat"; done |
                awk '{ s += $1 } END { print s }'
}
other_cpus() {
        local h0 o0 h1 o1
        h0=$(host_jiffies) o0=$(our_jiffies)
        sleep 2
        h1=$(host_jiffies) o1=$(our_jiffies)
        awk -v h="$((h1 - h0))" -v o="$((o1 - o0))" -v hz="$(getconf CLK_TCK)" \
                'BEGIN { printf "%.2f", (h - o) / hz / 2 }'
}
quiet() {
        busy=$(other_cpus)
        QUIET_WHY="$busy CPUs busy with other work"
        awk -v b="$busy" 'BEGIN { exit !(b < 0.25) }'
}

# ---- top, as a person sees it --------------------------------------------------
tmux new-session -d -s "$TMUX_SESSION" -x 150 -y 20 \
        "'$BUILDDIR/cli/kvmtunectl' --socket '$T_SOCK' top" || skip_all "tmux cannot start a session"
sleep 2.5
quiet; QUIET=$?         # measured over the 2 s the next frame covers
tmux capture-pane -p -t "$TMUX_SESSION" > "$T_TMP/screen"
sed 's/^/#   | /' "$T_TMP/screen"
col() { awk -v n="$1" -v c="$2" '$1 == n { print $c }' "$T_TMP/screen"; }
ok "$(grep -q '^NAME  *STATE  *POLICY  *VCPUS  *PUS  *BUSY%  *DELAY%' "$T_TMP/screen"; echo $?)" \
        "top draws its header in the terminal"
is "$(col $A 2)/$(col $A 3)" tuned/dedicated "top: $A line shows state and policy"
is "$(col $A 5)" "$(show $A '.vcpus[0].cpus[0]')" "top: $A line shows its PU"
da=$(col $A 7) db=$(col $B 7) dc=$(col $C 7) ba=$(col $A 6)
diag "DELAY%: $A $da, $B $db, $C $dc; BUSY% of $A: $ba"
if [ $QUIET -eq 0 ]; then
        ok "$(awk -v a="$da" -v b="$db" -v c="$dc" 'BEGIN { exit !(b >= 20 && c >= 20 && b > a + 15 && c > a + 15) }'; echo $?)" \
                "top: the guests next to a spinning neighbour wait for a CPU ($db%, $dc%), the placed one does not ($da%)"
        ok "$(awk -v a="$ba" 'BEGIN { exit !(a >= 50) }'; echo $?)" "top: the placed spinning guest is busy ($ba%)"
else
        ok 0 "# SKIP delay comparison: the host is not quiet ($QUIET_WHY)"
        ok 0 "# SKIP busy share: the host is not quiet"
fi
for d in $A $B $C; do
        ok "$(awk -v v="$(col $d 6)" -v w="$(col $d 7)" 'BEGIN { exit !(v ~ /^[0-9.]+$/ && w ~ /^[0-9.]+$/ && v + w > 50 && v + w < 110) }'; echo $?)" \
                "top: $d, a spinning vCPU, is running or waiting most of the second (busy $(col $d 6)% + delay $(col $d 7)%)"
done
sleep 1.2
tmux capture-pane -p -t "$TMUX_SESSION" > "$T_TMP/screen2"
ok "$(! cmp -s "$T_TMP/screen" "$T_TMP/screen2"; echo $?)" "top redraws every second"
tmux send-keys -t "$TMUX_SESSION" C-c
wait_for 5 sh -c "! tmux has-session -t $TMUX_SESSION 2>/dev/null"
ok "$?" "top ends on ^C"

ctl top --once > "$T_TMP/once"
ok "$?" "top --once exits 0"
ok "$(awk -v n=$B '$1 == n && $7 + 0 >= 20 { f = 1 } END { exit !f }' "$T_TMP/once"; echo $?)" \
        "top --once: $B waits ($(awk -v n=$B '$1 == n {print $7}' "$T_TMP/once")%)"

# ---- show and metrics: the same counters ----------------------------------------
ctl show $B > "$T_TMP/show"
ok "$(grep -q 'DELAY_S' "$T_TMP/show"; echo $?)" "show prints per-vCPU run and delay seconds"
dns=$(show $B '.vcpus[0].delay_ns')
ok "$([ "${dns:-0}" -gt 500000000 ]; echo $?)" "show --json: $B vCPU 0 waited ${dns} ns"
pid=$(domain_pid $B)
tid=$(for t in /proc/$pid/task/*; do [ "$(cat $t/comm)" = "CPU 0/TCG" ] && basename $t; done)
k=$(awk '{print $2}' /proc/$pid/task/$tid/schedstat)
ok "$([ "$k" -ge "$dns" ]; echo $?)" "... which is /proc/$pid/task/$tid/schedstat's second field ($dns <= $k)"
metric() { ctl metrics | awk -v k="$1" '$1 == k { print $2 }'; }
mb=$(metric "kvmtuned_vcpu_delay_seconds_total{domain=\"$B\",vcpu=\"0\"}")
ma=$(metric "kvmtuned_vcpu_delay_seconds_total{domain=\"$A\",vcpu=\"0\"}")
diag "kvmtuned_vcpu_delay_seconds_total: $A $ma, $B $mb"
ok "$(awk -v a="${ma:-x}" -v b="${mb:-0}" 'BEGIN { exit !(a != "x" && b > 1) }'; echo $?)" \
        "metrics: per-vCPU delay counters for $A ($ma s) and $B ($mb s)"
if quiet; then
        ok "$(awk -v a="$ma" -v b="$mb" 'BEGIN { exit !(b > a) }'; echo $?)" "metrics: $B waited longer than $A"
else
        ok 0 "# SKIP delay comparison: the host is not quiet ($QUIET_WHY)"
fi
ok "$([ -n "$(metric "kvmtuned_vcpu_run_seconds_total{domain=\"$A\",vcpu=\"0\"}")" ]; echo $?)" \
        "metrics: run time per vCPU too"

# ---- verify: drift --------------------------------------------------------------
ctl verify > "$T_TMP/verify"
ok "$?" "verify: everything as placed, exit 0"
ok "$(grep -q "^$A: as placed" "$T_TMP/verify"; echo $?)" "verify: $(grep "^$A" "$T_TMP/verify")"
pid=$(domain_pid $A)
tid=$(for t in /proc/$pid/task/*; do [ "$(cat $t/comm)" = "CPU 0/TCG" ] && basename $t; done)
placed=$(show $A '.vcpus[0].cpus[0]')
other=$(show $B '.vcpus[0].cpus[0]')
# By hand, behind kvmtuned's back: libvirt moves the thread and its cgroup.
$VIRSH vcpupin $A 0 "$other" --live >/dev/null
ctl verify > "$T_TMP/verify"
ok "$([ $? -eq 1 ]; echo $?)" "verify after virsh vcpupin of $A's vCPU: exit 1"
sed 's/^/#   | /' "$T_TMP/verify"
ok "$(grep -q "^  vcpu 0 thread $tid: $other, placed $placed$" "$T_TMP/verify"; echo $?)" \
        "verify names the thread, what it has and what was placed"
cg=$(grep -c "^  cgroup vcpu0 cpuset.cpus: $other, placed $placed$" "$T_TMP/verify")
[ -d /sys/fs/cgroup/cpuset/machine ] || [ -d /sys/fs/cgroup/machine.slice ] && is "$cg" 1 "verify finds the vcpu0 cgroup's cpuset changed too"
ctl --json verify > "$T_TMP/verify.json"
ok "$(jq -e '.drifted >= 1 and (.domains[] | select(.name == "'$B'") | .drift | length) == 0' "$T_TMP/verify.json" >/dev/null; echo $?)" \
        "verify --json: drift counted, only $A drifted"
ctl rebalance $A >/dev/null
wait_for 10 sh -c "'$BUILDDIR/cli/kvmtunectl' --socket '$T_SOCK' verify >/dev/null"
ok "$?" "rebalance puts it back: verify exits 0 again"

done_testing
