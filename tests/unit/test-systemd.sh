#!/bin/sh
# kvmtuned under systemd's protocols, without systemd: sd_notify through a
# datagram socket passed as NOTIFY_SOCKET (READY, STATUS, RELOADING on SIGHUP,
# WATCHDOG pings when WATCHDOG_USEC is set, STOPPING on SIGTERM, exit 0), and
# socket activation through systemd-socket-activate (LISTEN_FDS). The daemon
# talks to libvirt's in-process test driver (test:///default). TAP output.

BUILDDIR=${BUILDDIR:-.}
. "$(dirname "$0")/../tap.sh"

command -v python3 >/dev/null || { echo "1..0 # SKIP python3 is not installed"; exit 0; }
TMP=$(mktemp -d /tmp/test-systemd.XXXXXX) || exit 99
PIDS=
cleanup() {
        for p in $PIDS; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
        rm -rf "$TMP"
}
trap cleanup EXIT
: > "$TMP/empty.conf"

# A notify listener: prints every datagram it receives, one per line, until killed.
cat > "$TMP/listen.py" <<'PY'
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
print("listening", flush=True)
while True:
    for line in s.recv(4096).decode().split("\n"):
        if line:
            print(line, flush=True)
PY
python3 "$TMP/listen.py" "$TMP/notify" > "$TMP/notes" 2>&1 &
PIDS="$PIDS $!"
i=0; while [ ! -S "$TMP/notify" ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done

has() { grep -q "$1" "$TMP/notes"; }
count() { grep -c "$1" "$TMP/notes"; }
wait_note() { wait_until has "$1"; }    # wait_note REGEX
more_than() { test "$(count "$1")" -gt "$2"; }   # more_than REGEX N

NOTIFY_SOCKET=$TMP/notify WATCHDOG_USEC=200000 "$BUILDDIR/daemon/kvmtuned" --socket "$TMP/sock" \
        --connect test:///default --config "$TMP/empty.conf" 2>"$TMP/log" &
DPID=$!
PIDS="$PIDS $DPID"
ok "READY=1 once the first scan is done" wait_note '^READY=1$'
ok "STATUS= says how many domains are tuned and unplaced" wait_note '^STATUS=.*tuned.*unplaced'
ok "the socket answers once READY was sent" sh -c "'$BUILDDIR/cli/kvmtunectl' --socket '$TMP/sock' status >/dev/null"
ok "WATCHDOG=1 pings while WATCHDOG_USEC is set" wait_note '^WATCHDOG=1$'
pings=$(count '^WATCHDOG=1$')
ok "watchdog pings keep coming" wait_until more_than '^WATCHDOG=1$' "$pings"
kill -HUP $DPID
ok "SIGHUP: RELOADING=1" wait_note '^RELOADING=1$'
ok "SIGHUP: READY=1 again after the reload" wait_until more_than '^READY=1$' 1
echo "[defaults]" > "$TMP/bad.conf"; echo "cpu = fastest" >> "$TMP/bad.conf"
cp "$TMP/bad.conf" "$TMP/empty.conf"
kill -HUP $DPID
ok "an invalid configuration on SIGHUP is refused with FILE:LINE in the log" \
        wait_until grep -q "empty.conf:2:" "$TMP/log"
ok "... and the daemon keeps running and answering" \
        sh -c "kill -0 $DPID && '$BUILDDIR/cli/kvmtunectl' --socket '$TMP/sock' status >/dev/null"
kill -TERM $DPID
wait $DPID
rc=$?
ok "SIGTERM: exit status 0" test $rc -eq 0
# the daemon sent it before it exited; the listener may not have printed it yet
ok "SIGTERM: STOPPING=1" wait_note '^STOPPING=1$'
ok "the socket file is removed at exit" test ! -e "$TMP/sock"

# Socket activation: systemd-socket-activate binds the socket and passes it as fd 3.
if command -v systemd-socket-activate >/dev/null; then
        : > "$TMP/empty.conf"
        systemd-socket-activate -l "$TMP/act.sock" "$BUILDDIR/daemon/kvmtuned" --socket "$TMP/act.sock" \
                --connect test:///default --config "$TMP/empty.conf" 2>"$TMP/act.log" &
        APID=$!
        PIDS="$PIDS $APID"
        i=0; while [ ! -S "$TMP/act.sock" ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
        ok "socket activation: kvmtunectl reaches the daemon on the passed socket" \
                sh -c "'$BUILDDIR/cli/kvmtunectl' --socket '$TMP/act.sock' status >/dev/null"
        kill -TERM $APID; wait $APID
        ok "socket activation: the passed socket file is left for systemd" test -S "$TMP/act.sock"
else
        skip "socket activation" "systemd-socket-activate is not installed"
fi

# --check-config: a named file must exist; a valid one prints "configuration OK".
ok "--check-config exits 1 on a --config file that is not there, naming it" \
        sh -c "'$BUILDDIR/daemon/kvmtuned' --check-config --config '$TMP/nope.conf' 2>'$TMP/nope.err'; [ \$? -eq 1 ] &&
               grep -q 'nope.conf: cannot read: No such file or directory' '$TMP/nope.err'"
printf '[defaults]\ncpu = dedicated\n' > "$TMP/good.conf"
ok "--check-config prints 'configuration OK' for a valid file" \
        sh -c "'$BUILDDIR/daemon/kvmtuned' --check-config --config '$TMP/good.conf' | grep -qx 'configuration OK'"
ok "--check-config prints FILE:LINE and exits 1 for a bad one" \
        sh -c "! '$BUILDDIR/daemon/kvmtuned' --check-config --config '$TMP/bad.conf' 2>'$TMP/err' && grep -q 'bad.conf:2:' '$TMP/err'"

echo "1..$n"
[ $failed -eq 0 ]
