# Installing kvmtuned's libvirt hook for a test or benchmark: sourced after
# lib.sh by tests/integration/test-hook.sh and bench/hook-window.sh.
#
# The hooks go into /etc/libvirt/hooks/qemu.d: anything there under our names
# is backed up and put back by hooks_remove, and folders we create are removed.
# libvirtd caches whether any hook exists when it starts and on SIGHUP (its
# daemon reload re-runs virHookInitialize); the qemu.d entries themselves are
# listed at every call. So a SIGHUP after installing and after removing is
# enough, no restart. libvirtd runs hooks with a clean environment, so each
# hook is a small wrapper that sets the test's socket and acts only on the
# caller's domains (names matching $H_PATTERN). With H_STDERR set, kvmtuned's
# hook appends its stderr there (libvirt then sees none of it): what it says
# when it gives up waiting ("did not answer within 2000 ms") is a fact to count.

HOOKS=/etc/libvirt/hooks
QEMUD=$HOOKS/qemu.d
H_PATTERN=${H_PATTERN:-kvmtuned-test-hook-*}
H_STDERR=${H_STDERR:-}
H_CREATED_HOOKS=0
H_CREATED_QEMUD=0
H_INSTALLED=0

hooks_reload() {
        local pid
        pid=$(pgrep -x libvirtd | head -1)
        [ -n "$pid" ] && kill -HUP "$pid"
        sleep 1
        wait_for 30 libvirt_up
}

# hooks_install [PROBE_DIR]: kvmtuned's hook, and the probe when PROBE_DIR is given.
hooks_install() {
        [ -d $HOOKS ] || { mkdir -p $HOOKS && H_CREATED_HOOKS=1; }
        [ -d $QEMUD ] || { mkdir -p $QEMUD && H_CREATED_QEMUD=1; }
        mkdir -p "$T_TMP/hook-backup"
        for f in kvmtuned zz-probe; do
                [ -e "$QEMUD/$f" ] && [ ! -e "$T_TMP/hook-backup/$f" ] && mv "$QEMUD/$f" "$T_TMP/hook-backup/$f"
        done
        cat > $QEMUD/kvmtuned <<EOS
#!/bin/sh
case "\$1" in $H_PATTERN) ;; *) cat >/dev/null; exit 0 ;; esac
KVMTUNED_SOCKET='$T_SOCK' exec '$BUILDDIR/hook/kvmtuned' "\$@" ${H_STDERR:+2>>'$H_STDERR'}
EOS
        chmod 755 $QEMUD/kvmtuned
        if [ -n "${1:-}" ]; then
                mkdir -p "$1"
                cat > $QEMUD/zz-probe <<EOS
#!/bin/sh
case "\$1" in $H_PATTERN) ;; *) cat >/dev/null; exit 0 ;; esac
KVMTUNED_PROBE_DIR='$1' exec '$SRCDIR/tests/integration/hook-probe' "\$@"
EOS
                chmod 755 $QEMUD/zz-probe
        fi
        H_INSTALLED=1
        hooks_reload
}

hooks_remove() {
        [ "$H_INSTALLED" = 1 ] || return 0
        rm -f $QEMUD/kvmtuned $QEMUD/zz-probe
        for f in kvmtuned zz-probe; do
                [ -e "$T_TMP/hook-backup/$f" ] && mv "$T_TMP/hook-backup/$f" "$QEMUD/$f"
        done
        [ "$H_CREATED_QEMUD" = 1 ] && rmdir $QEMUD 2>/dev/null && H_CREATED_QEMUD=0
        [ "$H_CREATED_HOOKS" = 1 ] && rmdir $HOOKS 2>/dev/null && H_CREATED_HOOKS=0
        H_INSTALLED=0
        hooks_reload
}

# Cleanup for the EXIT trap: domains first (their release hooks run while the
# hook is still there), then the hooks, then lib.sh's own cleanup.
hooks_cleanup() {
        [ -n "$T_DAEMON_PID" ] && kill -CONT "$T_DAEMON_PID" 2>/dev/null
        stop_daemon
        cleanup_domains
        T_DOMAINS=""
        hooks_remove
        t_cleanup
}
