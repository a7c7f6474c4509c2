#!/bin/sh
# The Debian package, built and installed for real: dpkg-buildpackage -us -uc
# -b on a copy of the sources builds kvmtuned_*.deb, lintian finds no error
# (every warning kept has an override saying why), and installed into a
# container booting a real systemd (nspawn-lib.sh) it enables and starts the
# units, keeps the configuration as a conffile, and libvirtd runs its hook;
# removing it stops the daemon and takes the hook away (guests still start);
# purging removes /etc/kvmtuned. Prints the build and test times.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/nspawn-lib.sh"

[ "$(id -u)" = 0 ] || skip_all "needs root (run: sudo make check-integration)"
require_nspawn
command -v dpkg-buildpackage >/dev/null || skip_all "dpkg-buildpackage is not installed (dpkg-dev)"
command -v dh >/dev/null || skip_all "debhelper is not installed"
[ -d "$SRCDIR/debian" ] || skip_all "no debian/ in $SRCDIR"
[ -x /usr/sbin/libvirtd ] || skip_all "libvirtd is not installed"
command -v jq >/dev/null || skip_all "jq is not installed"
t_lock

trap 'ct_stop; t_cleanup' EXIT
trap 'exit 129' HUP
G=kvmtuned-test-deb-guest
HOOK=/etc/libvirt/hooks/qemu.d/kvmtuned

# ---- build -----------------------------------------------------------------
# A copy without build trees or generated files, so the package builds from
# the sources alone (and the checkout is left as it was).
t0=$(date +%s)
mkdir "$T_TMP/src"
tar -C "$SRCDIR" --exclude=./build --exclude='./build-*' --exclude=./.git --exclude=./autom4te.cache \
        --exclude=./config.status --exclude=./config.log --exclude=./Makefile -cf - . | tar -C "$T_TMP/src" -xf -
(cd "$T_TMP/src" && DEB_BUILD_OPTIONS=nocheck DEB_BUILD_PROFILES=nocheck \
        dpkg-buildpackage -us -uc -b >"$T_TMP/build.log" 2>&1)
ok $? "dpkg-buildpackage -us -uc -b" || sed 's/^/#   /' "$T_TMP/build.log" | tail -40
DEB=$(ls "$T_TMP"/kvmtuned_*.deb 2>/dev/null | head -1)
ok "$([ -f "$DEB" ]; echo $?)" "it builds $(basename "${DEB:-kvmtuned_*.deb}")"
[ -f "$DEB" ] || done_testing
t1=$(date +%s)
is "$(dpkg-deb -f "$DEB" Package)" kvmtuned "the package is kvmtuned"
is "$(dpkg-deb -c "$DEB" | awk '$6 == "./etc/libvirt/hooks/qemu.d/kvmtuned" {print $1 " " $8}')" \
        "lrwxrwxrwx /usr/libexec/kvmtuned/kvmtuned" "the hook in /etc is a symlink to the program in /usr/libexec"
is "$(dpkg-deb -c "$DEB" | awk '{print $6}' | sed -n 's|^./lib/systemd/system/\(..*\)|\1|p' | sort | tr '\n' ' ')" \
        "kvmtuned-hugepages.service kvmtuned-metrics.service kvmtuned-metrics.timer kvmtuned.service " \
        "the units are in /lib/systemd/system"

if command -v lintian >/dev/null; then
        lintian --fail-on error "$T_TMP"/kvmtuned_*.changes >"$T_TMP/lintian.log" 2>&1
        ok $? "lintian: no errors" || sed 's/^/#   /' "$T_TMP/lintian.log"
        is "$(grep -c '^[EW]:' "$T_TMP/lintian.log")" 0 \
                "lintian: no error or warning without an override ($(grep -c '^[EW]:' "$T_TMP/lintian.log"))"
        grep '^[EW]:' "$T_TMP/lintian.log" | sed 's/^/#   /'
else
        ok 0 "# SKIP lintian is not installed"; ok 0 "# SKIP lintian is not installed"
fi
t2=$(date +%s)

# ---- install into a real systemd ---------------------------------------------
ct_start || { ok 1 "the container boots systemd"; done_testing; }
cp "$DEB" "$CT_ROOT/root/kvmtuned.deb"
ct dpkg -i /root/kvmtuned.deb >"$T_TMP/dpkg.log" 2>&1
ok $? "dpkg -i in the container" || sed 's/^/#   /' "$T_TMP/dpkg.log"
is "$(ct systemctl is-enabled kvmtuned)" enabled "kvmtuned.service is enabled"
is "$(ct systemctl is-active kvmtuned)" active "kvmtuned.service is started"
is "$(ct systemctl is-enabled kvmtuned-hugepages)" enabled "kvmtuned-hugepages.service is enabled (runs at boot)"
is "$(ct systemctl is-enabled kvmtuned-metrics.timer)/$(ct systemctl is-active kvmtuned-metrics.timer)" enabled/active \
        "kvmtuned-metrics.timer is enabled and started"
is "$(ct dpkg-query -W -f='${Conffiles}' kvmtuned | awk '{print $1}')" /etc/kvmtuned/kvmtuned.conf \
        "/etc/kvmtuned/kvmtuned.conf is a conffile"
ok "$(ct test -x $HOOK; echo $?)" "$HOOK is there and executable"
ok "$([ "$(ct kvmtunectl --json status | jq -r .libvirt.connected)" = true ]; echo $?)" \
        "the installed daemon answers kvmtunectl and is connected to libvirt"

# libvirtd was reloaded by postinst: a guest start runs the hook.
cat > "$CT_ROOT/etc/kvmtuned/kvmtuned.conf.d/test.conf" <<EOF
[host]
reserved_cpus =
isolation = no
[domain "kvmtuned-test-deb-*"]
cpu = dedicated
emulator = share
numa = none
EOF
ct systemctl reload kvmtuned
domain_xml $G 1 0 > "$CT_ROOT/root/$G.xml"
ct virsh -q define "/root/$G.xml" >/dev/null
hooked() {
        ct kvmtunectl metrics | awk '$1 == "kvmtuned_pin_latency_seconds_count{path=\"hook\"}" {print $2}'
}
h0=$(hooked)
if ct virsh -q start $G >"$T_TMP/guest.log" 2>&1; then
        ct journalctl --sync
        ok "$(ct journalctl -q -b -u kvmtuned -o cat DOMAIN=$G | grep -q 'hook'; echo $?)" \
                "libvirtd ran the hook at the guest's start: $(ct journalctl -q -b -u kvmtuned -o cat DOMAIN=$G | grep -m1 hook)"
        is "$(hooked)" "$((h0 + 1))" "the hook's request placed it (pin latency count, path=hook: $h0 -> $(hooked))"
        ct virsh -q destroy $G >/dev/null
else
        ok 1 "the guest starts with the hook installed"
        sed 's/^/#   /' "$T_TMP/guest.log"
fi

# ---- remove ------------------------------------------------------------------
ct dpkg -r kvmtuned >"$T_TMP/dpkg.log" 2>&1
ok $? "dpkg -r kvmtuned" || sed 's/^/#   /' "$T_TMP/dpkg.log"
is "$(ct systemctl is-active kvmtuned)" inactive "removed: kvmtuned.service is stopped"
is "$(ct systemctl is-active kvmtuned-metrics.timer)" inactive "removed: the metrics timer is stopped"
is "$(ct pgrep -x kvmtuned)" "" "removed: no kvmtuned process"
ok "$(ct test -e $HOOK -o -L $HOOK; [ $? -ne 0 ]; echo $?)" "removed: the hook is gone"
ok "$(ct test -f /etc/kvmtuned/kvmtuned.conf; echo $?)" "removed: the configuration stays (conffile)"
is "$(ct systemctl is-active libvirtd)" active "libvirtd still runs"
ct virsh -q start $G >"$T_TMP/guest.log" 2>&1
ok $? "a guest starts after the removal" || sed 's/^/#   /' "$T_TMP/guest.log"
ct virsh -q destroy $G >/dev/null 2>&1

# ---- purge -------------------------------------------------------------------
ct dpkg -P kvmtuned >"$T_TMP/dpkg.log" 2>&1
ok $? "dpkg -P kvmtuned" || sed 's/^/#   /' "$T_TMP/dpkg.log"
ok "$(ct test -e /etc/kvmtuned; [ $? -ne 0 ]; echo $?)" "purged: /etc/kvmtuned is gone (drop-ins too)"
is "$(ct dpkg-query -W -f='${Status}' kvmtuned 2>/dev/null)" "" "purged: dpkg knows no kvmtuned"
is "$(ct sh -c 'ls /etc/systemd/system/*/kvmtuned* 2>/dev/null')" "" "purged: no unit links left"
ct virsh -q undefine $G >/dev/null 2>&1
t3=$(date +%s)
diag "times: package build $((t1 - t0)) s, lintian $((t2 - t1)) s, container install/remove/purge $((t3 - t2)) s"

done_testing
