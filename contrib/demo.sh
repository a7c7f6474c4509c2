#!/bin/bash
# The README's first command: on a fresh Debian 12 machine, as root, install the
# dependencies, build and install kvmtuned, start libvirt and kvmtuned, start a
# few small TCG guests with different policies and show what kvmtuned did. It
# first measures the effect on a guest (bench/guest-effect.sh, about a minute).
#
# It leaves kvmtuned running (log: /var/log/kvmtuned-demo.log) with guests named
# demo-*; `contrib/demo.sh --clean` destroys them, stops kvmtuned and removes the
# demo's configuration drop-in.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
images=/var/lib/libvirt/images/kvmtuned-demo
dropin=/etc/kvmtuned/kvmtuned.conf.d/50-demo.conf
systemd_running() { [ -d /run/systemd/system ]; }

clean() {
        for d in $(virsh -q list --all --name 2>/dev/null | grep '^demo-' || true); do
                virsh -q destroy "$d" >/dev/null 2>&1 || true
                virsh -q undefine "$d" >/dev/null 2>&1 || true
        done
        if systemd_running; then systemctl stop kvmtuned 2>/dev/null || true
        else pkill -x kvmtuned 2>/dev/null || true; fi
        rm -rf "$images"
        rm -f "$dropin"
}
if [ "${1:-}" = --clean ]; then clean; exit 0; fi

fail() {        # message: says why, undoes what the demo started, exits 1
        printf 'demo.sh: %s\n' "$*" >&2
        echo "demo.sh: cleaning up (guests demo-*, kvmtuned, $images, $dropin)" >&2
        clean
        exit 1
}

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

step "installing dependencies"
"$top/contrib/install-deps.sh"

step "building and installing kvmtuned"
cd "$top"
[ -x configure ] || ./autogen.sh >/dev/null
mkdir -p build/demo && cd build/demo
[ -f Makefile ] || ../../configure -q --prefix=/usr --sysconfdir=/etc --localstatedir=/var
make -s -j"$(nproc)" >/dev/null
make -s install >/dev/null
echo "installed: $(command -v kvmtuned) $(kvmtuned --version)"

step "starting libvirt"
if systemd_running; then
        systemctl start libvirtd
else
        pgrep -x virtlogd >/dev/null || /usr/sbin/virtlogd -d
        pgrep -x libvirtd >/dev/null || /usr/sbin/libvirtd -d
fi
for _ in $(seq 50); do virsh -q list >/dev/null 2>&1 && break; sleep 0.2; done
# libvirtd looks for new hooks (qemu.d/kvmtuned, just installed) when reloaded.
if systemd_running; then systemctl reload libvirtd; else kill -HUP "$(pgrep -x libvirtd | head -1)"; fi
sleep 1
for _ in $(seq 50); do virsh -q list >/dev/null 2>&1 && break; sleep 0.2; done
# Without udev (containers, some VMs) /dev/kvm stays root-only, and libvirt then
# probes QEMU again on every start (30-60 s each): give it Debian's udev mode.
if [ -c /dev/kvm ] && [ "$(stat -c %G /dev/kvm)" != kvm ] && getent group kvm >/dev/null; then
        chgrp kvm /dev/kvm && chmod 0660 /dev/kvm
fi

step "the effect on a guest next to two spinning guests (bench/guest-effect.sh)"
pkill -x kvmtuned 2>/dev/null || true
BUILDDIR="$top/build/demo" "$top/bench/guest-effect.sh" 10 | grep -v "^#"

step "starting kvmtuned"
mkdir -p /etc/kvmtuned/kvmtuned.conf.d
ncpu=$(nproc)
# On a small host keep no housekeeping core, so that a dedicated guest fits.
[ "$ncpu" -le 4 ] && printf '[host]\nreserved_cpus =\n' > "$dropin"
kvmtuned --check-config
if systemd_running; then
        systemctl daemon-reload; systemctl restart kvmtuned
else
        pkill -x kvmtuned 2>/dev/null || true
        nohup kvmtuned > /var/log/kvmtuned-demo.log 2>&1 &
fi
for _ in $(seq 50); do kvmtunectl status >/dev/null 2>&1 && break; sleep 0.2; done

step "starting three small TCG guests: dedicated, shared, unmanaged"
mkdir -p "$images"
gcc -m32 -c -o "$images/spin.o" "$top/bench/guest/spin.S"
ld -m elf_i386 -Ttext=0x100000 -e _start -o "$images/spin.elf" "$images/spin.o"
guest() {       # name policy-attributes
        virsh -q destroy "$1" >/dev/null 2>&1 || true
        virsh -q undefine "$1" >/dev/null 2>&1 || true
        cat > "$images/$1.xml" <<XML
<domain type='qemu'>
  <name>$1</name>
  <metadata><kvmtune:policy xmlns:kvmtune="urn:kvmtuned:tuning:1" $2/></metadata>
  <memory unit='MiB'>32</memory>
  <vcpu>1</vcpu>
  <iothreads>1</iothreads>
  <os><type arch='x86_64' machine='pc'>hvm</type><kernel>$images/spin.elf</kernel></os>
  <devices><serial type='file'><source path='$images/$1.log'/></serial></devices>
</domain>
XML
        local err
        err=$(virsh -q define "$images/$1.xml" 2>&1 >/dev/null) || fail "cannot define $1: ${err:-virsh define failed}"
        # virsh says why: libvirt, QEMU, or kvmtuned's hook refusing a placement=strict guest.
        err=$(virsh -q start "$1" 2>&1 >/dev/null) || fail "cannot start $1 ($2): ${err:-virsh start failed}"
        echo "started $1 ($2)"
}
guest demo-db 'cpu="dedicated" emulator="share" numa="strict"'
guest demo-web 'cpu="shared"'
guest demo-batch 'cpu="none"'
sleep 2         # the isolation rescan (every second) moves demo-batch off demo-db's PU

step "kvmtunectl status"
kvmtunectl status
step "kvmtunectl topology"
kvmtunectl topology
step "kvmtunectl list"
kvmtunectl list
step "kvmtunectl isolation (host tasks and demo-batch kept off demo-db's PU)"
kvmtunectl isolation
step "what the kernel says (Cpus_allowed_list of each guest's threads)"
for d in demo-db demo-web demo-batch; do
        pid=$(cat "/run/libvirt/qemu/$d.pid")
        for t in /proc/"$pid"/task/*; do
                printf '%-12s %-16s %s\n' "$d" "$(cat "$t/comm")" "$(awk '/Cpus_allowed_list/ {print $2}' "$t/status")"
        done
done
echo
echo "kvmtuned is running; try: kvmtunectl show demo-db, virsh vcpupin demo-db."
echo "Clean up with: contrib/demo.sh --clean"
