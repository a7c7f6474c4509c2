# A real systemd as PID 1 for the integration tests: sourced after lib.sh.
#
# ct_start boots systemd-nspawn on an overlay of the host's own root (which has
# libvirtd and QEMU): the lower layer is a read-only bind mount of /, the upper
# one a tmpfs, so nothing the container writes reaches the host. Host services
# the tests do not want are masked; libvirtd inside uses no cgroup controllers
# (the v1 controllers are read-only in the container), so it can run TCG
# guests. Drive the container with `ct COMMAND...` (nsenter into all its
# namespaces). ct_stop tears everything down: nspawn and every process inside,
# the mounts, the `payload` cgroups and /run/systemd/nspawn* that nspawn leaves
# on a host without systemd. Call it from the EXIT trap, also on failure.

CT_DIR=""
CT_ROOT=""
CT_NSPAWN_PID=""
CT_LEADER=""
CT_NAME=kvmtuned-test-ct
CT_MADE_RUN_NSPAWN=0
CT_MADE_PAYLOAD=""

ct() {          # ct COMMAND...: runs COMMAND inside the container
        nsenter -t "$CT_LEADER" -a -- "$@"
}

require_nspawn() {
        command -v systemd-nspawn >/dev/null || skip_all "systemd-nspawn is not installed (systemd-container)"
        command -v nsenter >/dev/null || skip_all "nsenter is not installed (util-linux)"
        grep -qw overlay /proc/filesystems || modprobe overlay 2>/dev/null
        grep -qw overlay /proc/filesystems || skip_all "the kernel has no overlay file system"
        [ -d /run/systemd/system ] && skip_all "the host runs systemd: run the units there instead"
        return 0
}

# Units of the host image that have no business in the test container.
CT_MASK="postgresql.service libvirt-guests.service e2scrub_reap.service
        apt-daily-upgrade.timer apt-daily.timer dpkg-db-backup.timer e2scrub_all.timer
        fstrim.timer logrotate.timer man-db.timer systemd-timesyncd.service
        getty@tty1.service console-getty.service"

ct_mount() {
        CT_DIR=$(mktemp -d /run/kvmtuned-ct.XXXXXX) || return 1
        CT_ROOT=$CT_DIR/root
        mkdir "$CT_DIR/lower" "$CT_DIR/rw" "$CT_ROOT" || return 1
        mount --bind / "$CT_DIR/lower" && mount -o remount,bind,ro "$CT_DIR/lower" || return 1
        mount -t tmpfs -o mode=0755 ct-rw "$CT_DIR/rw" && mkdir "$CT_DIR/rw/up" "$CT_DIR/rw/work" || return 1
        mount -t overlay ct-root -o "lowerdir=$CT_DIR/lower,upperdir=$CT_DIR/rw/up,workdir=$CT_DIR/rw/work" \
                "$CT_ROOT"
}

ct_prepare() {
        local u
        for u in $CT_MASK; do
                ln -sf /dev/null "$CT_ROOT/etc/systemd/system/$u"
        done
        echo 'cgroup_controllers = [ ]' >> "$CT_ROOT/etc/libvirt/qemu.conf"
        # An image's policy-rc.d (exit 101: "start nothing") would stop
        # maintainer scripts from starting services, as on no real host.
        rm -f "$CT_ROOT/usr/sbin/policy-rc.d"
        # A leftover install on the host must not look like ours.
        rm -rf "$CT_ROOT/etc/kvmtuned" "$CT_ROOT/etc/libvirt/hooks/qemu.d/kvmtuned" \
                "$CT_ROOT"/etc/systemd/system/kvmtuned* "$CT_ROOT"/usr/local/lib/systemd/system/kvmtuned*
}

ct_booted() {
        ct test -S /run/systemd/private 2>/dev/null
}

# ct_start: boots the container, waits for its systemd to finish booting.
ct_start() {
        local d
        [ -d /run/systemd/nspawn ] || CT_MADE_RUN_NSPAWN=1
        for d in /sys/fs/cgroup/*/; do
                [ -d "${d}payload" ] || CT_MADE_PAYLOAD="$CT_MADE_PAYLOAD ${d}payload"
        done
        ct_mount || { diag "cannot mount the container's overlay root"; return 1; }
        ct_prepare
        systemd-nspawn -q -D "$CT_ROOT" -M "$CT_NAME" --register=no --keep-unit --private-network \
                --console=read-only --boot >"$CT_DIR/console.log" 2>&1 9>&- &
        CT_NSPAWN_PID=$!
        wait_for 30 sh -c "pgrep -P $CT_NSPAWN_PID >/dev/null" || return 1
        CT_LEADER=$(pgrep -P "$CT_NSPAWN_PID" | head -1)
        wait_for 30 ct_booted || { diag "no systemd in the container:"; sed 's/^/#   /' "$CT_DIR/console.log"; return 1; }
        timeout 60 nsenter -t "$CT_LEADER" -a -- systemctl is-system-running --wait >/dev/null
        return 0
}

# ct_install_build: `make install` of $BUILDDIR into the container's root.
ct_install_build() {
        make -s -C "$BUILDDIR" install DESTDIR="$CT_ROOT" >"$CT_DIR/install.log" 2>&1 ||
                { sed 's/^/#   /' "$CT_DIR/install.log"; return 1; }
        ct systemctl daemon-reload
}

ct_umount() {   # ct_umount DIR: unmounts, lazily when busy
        mountpoint -q "$1" || return 0
        umount "$1" 2>/dev/null || umount -l "$1"
}

ct_stop() {
        local d
        if [ -n "$CT_NSPAWN_PID" ]; then
                kill -TERM "$CT_NSPAWN_PID" 2>/dev/null
                wait_for 30 sh -c "! kill -0 $CT_NSPAWN_PID 2>/dev/null" || kill -KILL "$CT_NSPAWN_PID" 2>/dev/null
                wait "$CT_NSPAWN_PID" 2>/dev/null
                CT_NSPAWN_PID=""
        fi
        if [ -n "$CT_DIR" ]; then
                ct_umount "$CT_ROOT"
                ct_umount "$CT_DIR/rw"
                ct_umount "$CT_DIR/lower"
                # Only empty directories go: never rm -r over a mount that is still there.
                rmdir "$CT_ROOT" "$CT_DIR/rw" "$CT_DIR/lower" 2>/dev/null
                rm -f "$CT_DIR"/*.log "$CT_DIR"/*.conf "$CT_DIR/.#root.lck"
                rmdir "$CT_DIR" 2>/dev/null || diag "left $CT_DIR behind (still mounted?)"
                CT_DIR=""
        fi
        for d in $CT_MADE_PAYLOAD; do
                [ -d "$d" ] && find "$d" -depth -type d -exec rmdir {} + 2>/dev/null
        done
        [ "$CT_MADE_RUN_NSPAWN" = 1 ] && rm -rf /run/systemd/nspawn
        return 0
}
