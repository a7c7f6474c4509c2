#!/bin/bash
# kvmtuned itself, measured against a real libvirtd: how fast a burst of
# starting guests gets pinned, how much memory the daemon holds, and how often
# it wakes up while nothing happens. Figures only, never pass/fail.
#
# 1. Started event -> pins applied, over a burst of BURST (10) small TCG
#    domains started together (`virsh start` in parallel). One has
#    cpu=dedicated; the others cpu=shared (a 2-PU host holds one dedicated
#    1-vCPU domain next to a non-empty shared pool). Three figures per domain:
#      - queue:    libvirt's Started event, as `virsh event --timestamp` gets
#                  it, to the daemon's debug line "libvirt event 2/0" for it
#                  (the daemon's log lines are timestamped as they arrive
#                  through a pipe: the daemon writes no time of its own);
#      - handling: that line to the daemon's own result line for the domain
#                  ("tuned: ..." / "shared: ..."), logged once its pins are
#                  applied, its placement is recorded in its live metadata
#                  and the other shared domains follow a changed pool: it can
#                  exceed the external figure below;
#      - end to end, external: the Started event to the first /proc sample
#                  from which every vCPU, iothread and main QEMU thread has,
#                  for good, the affinity `kvmtunectl --json show` reports in
#                  the end. A sampler polls /proc/PID/task/*/status every
#                  millisecond. Shared domains placed before the dedicated one
#                  reach their final affinity only when the pool shrinks, so
#                  the same is also given from the deciding Started event:
#                  the later of the domain's own and the dedicated domain's.
#    `kvmtunectl metrics` has no latency figure (only state gauges).
# 2. Daemon VmRSS and VmHWM (/proc/PID/status) with 10 and with MANY (50)
#    domains running (32 MiB, 1 vCPU, no disk, no graphics each).
# 3. Wake-ups while idle: with the 10 domains running and nothing happening,
#    over IDLE (30) seconds: context switches of every daemon thread
#    (voluntary + nonvoluntary, summed over /proc/PID/task/*), and
#    sched:sched_wakeup events whose wakee is a daemon thread (perf, when
#    present). The daemon is event-driven; the libvirt connection's keepalive
#    (a ping every 5 s, virConnectSetKeepAlive(5, 3), and libvirtd's own) is
#    the only expected traffic.
#
# Needs root, libvirtd, QEMU, python3, perl, jq. Holds lib.sh's lock (one
# integration run or benchmark at a time) and defines kvmtuned-bench-d-*
# domains, destroyed and undefined at exit, also on failure. About 2-4 minutes.
#
# usage: [BUILDDIR=DIR] bench/daemon.sh
#   BUILDDIR: the build directory holding kvmtuned and kvmtunectl
#             (default: build/default under the source tree)
#   BURST, MANY, IDLE: override the counts above (environment)
set -u
here=$(cd "$(dirname "$0")" && pwd)
SRCDIR=${SRCDIR:-$(cd "$here/.." && pwd)}
BUILDDIR=${BUILDDIR:-$SRCDIR/build/default}
export SRCDIR BUILDDIR
BURST=${BURST:-10}
MANY=${MANY:-50}
IDLE=${IDLE:-30}
P=kvmtuned-bench-d
T_MANAGED="$P-*"

. "$SRCDIR/tests/integration/lib.sh"
require_env
command -v python3 >/dev/null || skip_all "python3 is not installed"
command -v perl >/dev/null || skip_all "perl is not installed"

SAMPLER=$T_TMP/sampler.py
ANALYZE=$T_TMP/analyze.py
evpid=""
spid=""

# The event listener and the sampler, then lib.sh's cleanup (daemon, domains).
bench_cleanup() {
        [ -n "$spid$evpid" ] && kill $spid $evpid 2>/dev/null
        t_cleanup
}
trap bench_cleanup EXIT

# ---- helpers -----------------------------------------------------------------

# bench_define NAME [POLICY_ATTRIBUTES]: 32 MiB, 1 vCPU, no disk, no graphics.
bench_define() {
        local meta=""
        [ -n "${2:-}" ] && meta="<metadata><kvmtune:policy xmlns:kvmtune='urn:kvmtuned:tuning:1' $2/></metadata>"
        cat > "$T_TMP/$1.xml" <<EOF
<domain type='qemu'>
  <name>$1</name>
  <memory unit='MiB'>32</memory>
  <vcpu>1</vcpu>
  $meta
  <os><type arch='x86_64' machine='pc'>hvm</type></os>
  <on_poweroff>destroy</on_poweroff>
  <devices>
    <emulator>$(command -v qemu-system-x86_64)</emulator>
    <memballoon model='none'/>
  </devices>
</domain>
EOF
        T_DOMAINS="$T_DOMAINS $1"
        $VIRSH define "$T_TMP/$1.xml" >/dev/null
}

# start_all NAME...: `virsh start` for all of them at once; fails if one fails.
start_all() {
        local d pids="" rc=0 p
        for d in "$@"; do
                $VIRSH start "$d" >/dev/null 2>>"$T_TMP/start.err" &
                pids="$pids $!"
        done
        for p in $pids; do
                wait "$p" || rc=1
        done
        [ $rc -eq 0 ] || sed 's/^/virsh start: /' "$T_TMP/start.err" >&2
        return $rc
}

# placed N: the daemon reports at least N of our domains tuned or shared.
placed() {
        [ "$(ctl --json list 2>/dev/null | jq --arg p "$P-" \
                '[.domains[] | select((.name | startswith($p)) and (.state == "tuned" or .state == "shared"))] | length')" \
                -ge "$1" ] 2>/dev/null
}

# The daemon's log, each line prefixed with the wall time it arrived at.
start_daemon_stamped() {
        "$BUILDDIR/daemon/kvmtuned" --config "$T_CONF" --socket "$T_SOCK" --connect "$URI" --debug 9>&- \
                > >(exec 9>&-; exec perl -MTime::HiRes=time -ne \
                        'BEGIN { $| = 1 } printf "%.6f %s", time, $_' >> "$T_LOG") 2>&1 &
        T_DAEMON_PID=$!
        wait_for 20 daemon_up || { echo "kvmtuned did not come up:" >&2; cat "$T_LOG" >&2; exit 1; }
}

status_field() {        # status_field KEY: from the daemon's /proc/PID/status, in kB
        awk -v k="$1:" '$1 == k {print $2}' "/proc/$T_DAEMON_PID/status"
}

ctxt_switches() {       # summed over every thread of the daemon
        cat /proc/"$T_DAEMON_PID"/task/*/status 2>/dev/null |
                awk '/^(non)?voluntary_ctxt_switches:/ {s += $2} END {print s + 0}'
}

cat > "$SAMPLER" <<'EOS'
# sampler OUT SECONDS NAME...: "epoch NAME THREADS" whenever the affinities of
# a domain's threads change; THREADS is "kind id cpus" per thread joined by ";"
# (vcpu N, iothread N, emulator 0 = the main thread), sorted, as lib.sh's
# domain_threads prints them.
import os, sys, time
out, secs, names = sys.argv[1], float(sys.argv[2]), sys.argv[3:]
end = time.time() + secs

def snapshot(name):
    pid = open("/run/libvirt/qemu/%s.pid" % name).read().strip()
    rows = []
    for tid in os.listdir("/proc/%s/task" % pid):
        base = "/proc/%s/task/%s/" % (pid, tid)
        try:
            comm = open(base + "comm").read().rstrip("\n")
            cpus = [l.split()[1] for l in open(base + "status") if l.startswith("Cpus_allowed_list:")][0]
        except (OSError, IndexError):
            continue
        if comm.startswith("CPU ") and (comm.endswith("/TCG") or comm.endswith("/KVM")):
            rows.append("vcpu %s %s" % (comm[4:].split("/")[0], cpus))
        elif comm.startswith("IO iothread"):
            rows.append("iothread %s %s" % (comm[len("IO iothread"):], cpus))
        elif tid == pid:
            rows.append("emulator 0 %s" % cpus)
    return ";".join(sorted(rows))

last = {}
with open(out, "w") as f:
    while time.time() < end:
        for name in names:
            try:
                s = snapshot(name)
            except (OSError, ValueError):
                continue
            if last.get(name) != s:
                f.write("%.6f %s %s\n" % (time.time(), name, s))
                f.flush()
                last[name] = s
        time.sleep(0.001)
EOS

cat > "$ANALYZE" <<'EOS'
# analyze EVENTS DAEMONLOG SAMPLES FINAL DEDICATED: per domain
# "NAME queue_ms handling_ms end_to_end_ms deciding_ms" ("-" where a figure
# could not be measured). deciding_ms counts from the later of the domain's own
# Started event and the dedicated domain's: a shared domain started first gets
# its final (smaller) pool when the dedicated domain is placed.
import datetime, re, sys
events, dlog, samples, final, dedicated = sys.argv[1:6]
started, received, result = {}, {}, {}
for line in open(events):
    m = re.match(r"(.*): event 'lifecycle' for domain '?([^':]+)'?: Started", line)
    if m and m.group(2) not in started:
        stamp = datetime.datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S.%f%z").timestamp()
        started[m.group(2)] = stamp
for line in open(dlog):
    t, _, msg = line.partition(" ")
    m = re.search(r"libvirt event 2/\d+ for (\S+)$", msg.rstrip())
    if m and m.group(1) not in received:
        received[m.group(1)] = float(t)
        continue
    m = re.match(r"kvmtuned: ([^:]+): (tuned|shared|unplaced|failed|ignored): ", msg)
    if m and m.group(1) in received and m.group(1) not in result:
        result[m.group(1)] = float(t)
want = dict(l.rstrip("\n").split(" ", 1) for l in open(final) if l.strip())
rows = {}
for l in open(samples):
    t, name, snap = (l.rstrip("\n").split(" ", 2) + [""])[:3]
    rows.setdefault(name, []).append((float(t), snap))
def ms(a, b):
    return "%.1f" % ((b - a) * 1000) if a is not None and b is not None else "-"
for name in sorted(want):
    s = rows.get(name, [])
    final_at = None
    for i, (t, snap) in enumerate(s):
        if all(x[1] == want[name] for x in s[i:]):
            final_at = t
            break
    ev = started.get(name)
    decide = max(ev, started[dedicated]) if ev is not None and dedicated in started else None
    print(name, ms(ev, received.get(name)), ms(received.get(name), result.get(name)), ms(ev, final_at),
          ms(decide, final_at))
EOS

# ---- run ---------------------------------------------------------------------

others=$(pgrep -x kvmtuned | wc -l)
[ "$others" -gt 0 ] && echo "warning: $others other kvmtuned process(es) running" >&2
need_kb=$((MANY * 200 * 1024))
avail_kb=$(awk '/^MemAvailable:/ {print $2}' /proc/meminfo)
if [ "$avail_kb" -lt "$need_kb" ]; then
        echo "warning: $((avail_kb / 1024)) MiB available, $MANY domains want about $((need_kb / 1024)) MiB: MANY=$BURST" >&2
        MANY=$BURST
fi

write_config
burst=""
for i in $(seq 1 "$BURST"); do burst="$burst $P-$(printf '%02d' "$i")"; done
bench_define "$P-01" 'cpu="dedicated" emulator="share" iothreads="shared" numa="none"' || exit 1
for d in ${burst#* $P-01}; do bench_define "$d" || exit 1; done
start_daemon_stamped
rss0=$(status_field VmRSS)

echo "# 1. burst of $BURST domains started together" >&2
virsh -q -c "$URI" event --event lifecycle --loop --timestamp > "$T_TMP/events" 2>/dev/null 9>&- &
evpid=$!
python3 "$SAMPLER" "$T_TMP/samples" 120 $burst 9>&- &
spid=$!
sleep 0.5
start_all $burst || exit 1
wait_for 60 placed "$BURST" || { echo "the daemon did not place all $BURST domains" >&2; T_FAILED=1; exit 1; }
sleep 2
: > "$T_TMP/final"
for d in $burst; do
        echo "$d $(reported_threads "$d" | paste -sd ';')" >> "$T_TMP/final"
done
kill $spid $evpid 2>/dev/null
wait $spid $evpid 2>/dev/null
spid=""
evpid=""
python3 "$ANALYZE" "$T_TMP/events" "$T_LOG" "$T_TMP/samples" "$T_TMP/final" "$P-01" > "$T_TMP/latency"
states=$(ctl --json list | jq -r --arg p "$P-" \
        '[.domains[] | select(.name | startswith($p)) | .state] | group_by(.) | map("\(length) \(.[0])") | join(", ")')

echo "# 3. idle for ${IDLE}s" >&2
sleep 3
tids=$(ls /proc/"$T_DAEMON_PID"/task)
filter=$(printf 'pid == %s || ' $tids)
filter=${filter% || }
c0=$(ctxt_switches)
wakeups="-"
if command -v perf >/dev/null &&
   perf stat -a -x, -o "$T_TMP/perf" -e sched:sched_wakeup --filter "$filter" sleep "$IDLE" 9>&- 2>/dev/null; then
        wakeups=$(awk -F, '$3 == "sched:sched_wakeup" {print $1}' "$T_TMP/perf")
else
        sleep "$IDLE"
fi
c1=$(ctxt_switches)
rss10=$(status_field VmRSS)
hwm10=$(status_field VmHWM)

echo "# 2. $MANY domains running" >&2
more=""
for i in $(seq $((BURST + 1)) "$MANY"); do more="$more $P-$(printf '%02d' "$i")"; done
for d in $more; do bench_define "$d" || exit 1; done
set -- $more
while [ $# -gt 0 ]; do                  # ten at a time
        start_all "${@:1:10}" || exit 1
        shift $(( $# < 10 ? $# : 10 ))
done
wait_for 60 placed "$MANY" || echo "warning: the daemon did not place all $MANY domains" >&2
sleep 2
rss50=$(status_field VmRSS)
hwm50=$(status_field VmHWM)

# ---- report ------------------------------------------------------------------

read -r q_med q_max q_n <<< "$(stats "$T_TMP/latency" 2)"
read -r h_med h_max h_n <<< "$(stats "$T_TMP/latency" 3)"
read -r e_med e_max e_n <<< "$(stats "$T_TMP/latency" 4)"
read -r x_med x_max x_n <<< "$(stats "$T_TMP/latency" 5)"
ncs=$((c1 - c0))
printf '\nkvmtuned daemon benchmark: %s PUs, libvirt %s, QEMU TCG, %s\n' \
        "$(nproc)" "$(virsh -v)" "$(date -u '+%Y-%m-%d %H:%M UTC')"
printf '\n1. Burst: %s domains (1 vCPU, 32 MiB) started together; 1 cpu=dedicated, the rest cpu=shared\n' "$BURST"
printf '   final states: %s\n' "$states"
printf '   %-59s %9s %9s %6s\n' "" median max "n"
printf '   %-59s %9s %9s %6s\n' "Started event -> daemon receives it (ms)" "$q_med" "$q_max" "$q_n"
printf '   %-59s %9s %9s %6s\n' "daemon: event received -> its pins applied, own log (ms)" "$h_med" "$h_max" "$h_n"
printf '   %-59s %9s %9s %6s\n' "Started event -> /proc affinities final, external (ms)" "$e_med" "$e_max" "$e_n"
printf '   %-59s %9s %9s %6s\n' "  the same from the deciding Started event (ms)" "$x_med" "$x_max" "$x_n"
printf '   (deciding event: its own, or the dedicated %s'"'"'s when that came later and shrank the pool)\n' "$P-01"
printf '   (kvmtunectl metrics exposes no latency figure)\n'
printf '   per domain (ms): %-23s %9s %9s %10s %9s\n' "" queue handling "end to end" deciding
awk '{printf "   %-40s %9s %9s %10s %9s\n", $1, $2, $3, $4, $5}' "$T_TMP/latency"
printf '\n2. Daemon memory (kB)%40s %9s %9s\n' "" VmRSS VmHWM
printf '%-61s %9s %9s\n' "   started, $BURST domains defined, none running" "$rss0" "-"
printf '%-61s %9s %9s\n' "   $BURST domains running" "$rss10" "$hwm10"
printf '%-61s %9s %9s\n' "   $MANY domains running" "$rss50" "$hwm50"
printf '\n3. Idle, %s domains running, nothing happening, %s s (%s thread%s)\n' \
        "$BURST" "$IDLE" "$(echo $tids | wc -w)" "$([ "$(echo $tids | wc -w)" = 1 ] || echo s)"
printf '%-62s %9s %9s\n' "" total "per s"
printf '%-62s %9s %9s\n' "   context switches (voluntary + nonvoluntary)" "$ncs" \
        "$(awk -v n="$ncs" -v s="$IDLE" 'BEGIN {printf "%.2f", n / s}')"
if [ "$wakeups" != "-" ]; then
        printf '%-62s %9s %9s\n' "   sched:sched_wakeup of a daemon thread (perf)" "$wakeups" \
                "$(awk -v n="$wakeups" -v s="$IDLE" 'BEGIN {printf "%.2f", n / s}')"
else
        printf '   sched:sched_wakeup: perf is not available\n'
fi
printf '   (expected: the libvirt keepalive, a ping each way every 5 s, and nothing else)\n'
echo "# cleaning up $MANY domains" >&2
