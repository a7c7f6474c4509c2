#!/bin/bash
# The effect of kvmtuned on a guest, measured (issue: "the effect on a guest").
#
# A guest that does countable work (bench/guest/spin.S: a multiboot kernel that
# counts in a loop and writes one byte to its serial port, a file, every N
# iterations) runs alone, then next to two spinning guests with nothing pinned,
# then next to the same two guests with kvmtuned placing it (cpu=dedicated; the
# neighbours on the shared pool). Prints the guest's throughput in each phase and
# the share it kept, side by side. Needs root, libvirtd and QEMU (TCG is enough).
#
# usage: bench/guest-effect.sh [SECONDS_PER_PHASE]   (default 15)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
secs=${1:-15}
builddir=${BUILDDIR:-$top/build/default}
uri=qemu:///system
work=/var/lib/libvirt/images/kvmtuned-bench
prefix=kvmtuned-bench
daemon_pid=

virsh() { command virsh -q -c "$uri" "$@"; }

cleanup() {
        for d in $(virsh list --all --name 2>/dev/null | grep "^$prefix-" || true); do
                virsh destroy "$d" >/dev/null 2>&1 || true
                virsh undefine "$d" >/dev/null 2>&1 || true
        done
        pkill -f "kvmtuned --config ${tmp:-/nonexistent}/" 2>/dev/null || true
        rm -rf "$work" "${tmp:-/nonexistent}"
}
trap cleanup EXIT

build_guest() {
        mkdir -p "$work"
        gcc -m32 -c -o "$tmp/spin.o" "$here/guest/spin.S"
        ld -m elf_i386 -Ttext=0x100000 -e _start -o "$work/spin.elf" "$tmp/spin.o"
}

guest_xml() {   # name
        cat <<XML
<domain type='qemu'>
  <name>$1</name>
  <memory unit='MiB'>32</memory>
  <vcpu>1</vcpu>
  <os><type arch='x86_64' machine='pc'>hvm</type><kernel>$work/spin.elf</kernel></os>
  <devices><serial type='file'><source path='$work/$1.log'/></serial></devices>
</domain>
XML
}

start() { guest_xml "$prefix-$1" > "$tmp/$1.xml"; virsh create "$tmp/$1.xml" >/dev/null; }
stop_all() {
        for d in $(virsh list --name | grep "^$prefix-" || true); do virsh destroy "$d" >/dev/null; done
}

rate() {        # bytes per second the victim writes over $secs, after 2 s to settle
        local log=$work/$prefix-victim.log a b
        sleep 2
        a=$(stat -c %s "$log"); sleep "$secs"; b=$(stat -c %s "$log")
        echo $(( (b - a) / secs ))
}

phase_alone() { start victim; rate; stop_all; }
phase_noisy() { start noisy1; start noisy2; start victim; rate; stop_all; }

phase_kvmtuned() {
        cat > "$tmp/kvmtuned.conf" <<CONF
[host]
reserved_cpus =
[domain "$prefix-victim"]
cpu = dedicated
emulator = share
CONF
        "$builddir/kvmtuned" --config "$tmp/kvmtuned.conf" --socket "$tmp/sock" 2>"$tmp/daemon.log" &
        daemon_pid=$!
        for _ in $(seq 50); do [ -S "$tmp/sock" ] && break; sleep 0.1; done
        start noisy1; start noisy2; start victim
        for _ in $(seq 50); do
                "$builddir/kvmtunectl" --socket "$tmp/sock" --json show "$prefix-victim" 2>/dev/null |
                        grep -q '"state": *"tuned"' && break
                sleep 0.1
        done
        local r; r=$(rate); stop_all
        kill "$daemon_pid"; wait "$daemon_pid" 2>/dev/null || true
        echo "$r"
}

tmp=$(mktemp -d)
pgrep -x libvirtd >/dev/null || { echo "libvirtd is not running" >&2; exit 1; }
build_guest
alone=$(phase_alone)
noisy=$(phase_noisy)
tuned=$(phase_kvmtuned)
share() { awk -v a="$1" -v b="$alone" 'BEGIN { printf "%.1f%%", b ? 100 * a / b : 0 }'; }
printf '%-40s %12s %8s\n' "guest throughput ($(nproc) host PUs)" "bytes/s" "kept"
printf '%-40s %12s %8s\n' "alone" "$alone" "100.0%"
printf '%-40s %12s %8s\n' "2 spinning neighbours, nothing pinned" "$noisy" "$(share "$noisy")"
printf '%-40s %12s %8s\n' "2 spinning neighbours, kvmtuned" "$tuned" "$(share "$tuned")"
