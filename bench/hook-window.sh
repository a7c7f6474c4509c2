#!/bin/bash
# The unpinned window of a starting guest: kvmtuned's definition path (the
# placement persisted in the domain definition, libvirt pins at launch), its
# libvirt hook path and its event path (no hook installed), over STARTS starts
# each (default 20).
#
# A small TCG guest (1 vCPU, 64 MiB, cpu=dedicated, so its vCPU moves from
# every PU to one) is started again and again. A sampler polls the vCPU
# thread's Cpus_allowed_list and CPU time (utime+stime, /proc/PID/task/TID/stat)
# every millisecond from the moment QEMU exists; `virsh event --timestamp`
# gives the libvirt lifecycle events. Per start it derives:
#   resume -> final   wall time from libvirt's Resumed event (the vCPU starts
#                     running) to the first sample with the final affinity
#   started -> final  the same from the Started event (negative: pinned before it)
#   vCPU time         CPU time the vCPU had used when its affinity became final
#                     (clock ticks, 10 ms each)
# and prints median and max of each, both paths side by side. Needs root,
# libvirtd and QEMU; figures only, never pass/fail.
#
# usage: BUILDDIR=DIR bench/hook-window.sh [STARTS]
set -u
here=$(cd "$(dirname "$0")" && pwd)
SRCDIR=${SRCDIR:-$(cd "$here/.." && pwd)}
BUILDDIR=${BUILDDIR:-$(pwd)}
export SRCDIR BUILDDIR
starts=${1:-20}

. "$SRCDIR/tests/integration/lib.sh"
require_env
[ -x "$BUILDDIR/hook/kvmtuned" ] || skip_all "$BUILDDIR/hook/kvmtuned is not built"
H_PATTERN='kvmtuned-bench-hw*'
. "$SRCDIR/tests/integration/hook-lib.sh"
trap hooks_cleanup EXIT

D=kvmtuned-bench-hw
SAMPLER=$T_TMP/sampler.py
ANALYZE=$T_TMP/analyze.py

cat > "$SAMPLER" <<'EOS'
# sampler NAME OUT SECONDS: "epoch cpus ticks" whenever the vCPU 0 thread changes.
import os, sys, time
name, out, secs = sys.argv[1], sys.argv[2], float(sys.argv[3])
end = time.time() + secs
pidfile = "/run/libvirt/qemu/%s.pid" % name

def vcpu_tid(pid):
    for tid in os.listdir("/proc/%s/task" % pid):
        try:
            if open("/proc/%s/task/%s/comm" % (pid, tid)).read().startswith("CPU 0/"):
                return tid
        except OSError:
            pass
    return None

pid = tid = None
with open(out, "w") as f:
    last = None
    while time.time() < end:
        try:
            if tid is None:
                pid = open(pidfile).read().strip()
                tid = vcpu_tid(pid)
                if tid is None:
                    raise OSError
            base = "/proc/%s/task/%s/" % (pid, tid)
            cpus = [l.split()[1] for l in open(base + "status") if l.startswith("Cpus_allowed_list:")][0]
            st = open(base + "stat").read().rsplit(")", 1)[1].split()
            ticks = int(st[11]) + int(st[12])
            if (cpus, ticks) != last:
                f.write("%.6f %s %d\n" % (time.time(), cpus, ticks))
                f.flush()
                last = (cpus, ticks)
        except (OSError, IndexError, ValueError):
            pass
        time.sleep(0.001)
EOS

cat > "$ANALYZE" <<'EOS'
# analyze EVENTS SAMPLES FINAL: prints "resume_ms started_ms ticks" or "- - -".
import datetime, sys
events, samples, final = sys.argv[1], sys.argv[2], sys.argv[3]
t = {}
for line in open(events):
    if ": event 'lifecycle'" not in line:
        continue
    stamp = datetime.datetime.strptime(line.split(": event")[0], "%Y-%m-%d %H:%M:%S.%f%z").timestamp()
    for kind in ("Resumed", "Started"):
        if line.rstrip().split(": ")[-1].startswith(kind) and kind not in t:
            t[kind] = stamp
rows = [l.split() for l in open(samples)]
first = None
for i, (when, cpus, ticks) in enumerate(rows):
    if cpus == final and all(r[1] == final for r in rows[i:]):
        first = (float(when), int(ticks))
        break
if first is None or "Resumed" not in t or "Started" not in t:
    print("- - -")
else:
    print("%.1f %.1f %d" % ((first[0] - t["Resumed"]) * 1000, (first[0] - t["Started"]) * 1000, first[1]))
EOS

vcpu_final() {
        show $D '.vcpus[0].cpus | map(tostring) | join(",")'
}

gone() {
        ! ctl --json show $D >/dev/null 2>&1
}

stop_bench_domain() {
        $VIRSH destroy $D >/dev/null 2>&1
        wait_for 20 gone
}

# one_start: one start and stop; appends "resume_ms started_ms ticks" to $1
# ("- - -" when that start could not be measured).
one_start() {
        local evpid spid final rc=0
        virsh -q -c "$URI" event --domain $D --event lifecycle --loop --timestamp > "$T_TMP/events" 2>/dev/null &
        evpid=$!
        sleep 0.5
        python3 "$SAMPLER" $D "$T_TMP/samples" 90 &
        spid=$!
        if start_domain $D && wait_state $D tuned 30; then
                sleep 1
                final=$(vcpu_final)
        else
                rc=1
        fi
        kill $spid $evpid 2>/dev/null
        wait $spid $evpid 2>/dev/null
        if [ $rc -eq 0 ]; then
                python3 "$ANALYZE" "$T_TMP/events" "$T_TMP/samples" "$final" >> "$1"
        else
                echo "- - -" >> "$1"
        fi
        stop_bench_domain
}

run_path() {    # run_path NAME OUTFILE
        local i
        : > "$2"
        for i in $(seq "$starts"); do
                one_start "$2"
                echo "  $1: start $i/$starts: $(tail -n 1 "$2")" >&2
        done
}

others=$(pgrep -x kvmtuned | wc -l)
[ "$others" -gt 0 ] && echo "warning: $others other kvmtuned process(es) running: they pin this guest too" >&2
# The event and hook paths without persist_placement (each start is placed
# anew), then the definition path: the placement also in the persistent
# definition, so libvirt pins the threads itself before it resumes the vCPUs.
write_config "$(printf '[daemon]\npersist_placement = no')"
define_domain $D 1 0 'cpu="dedicated" emulator="share" iothreads="shared" numa="none"'
start_daemon || exit 1

run_path "event path" "$T_TMP/event"
hooks_install
run_path "hook path" "$T_TMP/hook"
write_config "$(printf '[daemon]\npersist_placement = yes')"
ctl reload >/dev/null || { echo "kvmtuned did not take the new config" >&2; exit 1; }
start_domain $D && wait_state $D tuned 30    # first start: placed, written into the definition
stop_bench_domain
run_path "definition path" "$T_TMP/defn"

cpus=$(nproc)
printf '\nUnpinned window of a starting guest, %s starts per path (TCG, 1 vCPU cpu=dedicated, %s PUs, libvirt %s)\n' \
        "$starts" "$cpus" "$(virsh -v)"
printf '%-44s %21s %21s %21s\n' "" "definition path" "hook path" "event path"
printf '%-44s %10s %10s %10s %10s %10s %10s\n' "" median max median max median max
row() {         # row LABEL COLUMN
        printf '%-44s %10s %10s %10s %10s %10s %10s\n' "$1" \
                $(stats "$T_TMP/defn" "$2" | cut -d' ' -f1,2) $(stats "$T_TMP/hook" "$2" | cut -d' ' -f1,2) \
                $(stats "$T_TMP/event" "$2" | cut -d' ' -f1,2)
}
row "resume -> final vCPU affinity (ms)" 1
row "started event -> final vCPU affinity (ms)" 2
row "vCPU CPU time before final affinity (ticks)" 3
printf '(measured: %s, %s and %s of %s starts per path; a tick is %s ms)\n' \
        "$(grep -vc '^- - -$' "$T_TMP/defn")" "$(grep -vc '^- - -$' "$T_TMP/hook")" "$(grep -vc '^- - -$' "$T_TMP/event")" \
        "$starts" "$((1000 / $(getconf CLK_TCK)))"
