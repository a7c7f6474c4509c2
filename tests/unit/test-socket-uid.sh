#!/bin/sh
# The control socket of a real kvmtuned (libvirt's test:///default driver) seen
# from another uid: as root, clients dropped to uid 65534 with setpriv must be
# refused every mutating method (and allowed the read-only ones), and however
# many connections they hold, root is still served and they are told why they
# were refused. A server that took the peer uid from its own listening socket
# (root) instead of the client would fail here. Needs root. TAP output.

TEST_NAME=test-socket-uid
. "$(dirname "$0")/cli-lib.sh"

[ "$(id -u)" -eq 0 ] || { echo "1..0 # SKIP needs root to run clients as another uid"; exit 0; }
command -v setpriv >/dev/null || { echo "1..0 # SKIP setpriv is not installed"; exit 0; }
nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
# A python3 that uid 65534 can run (root's PATH may lead into /root).
PY=
for p in python3 /usr/bin/python3 /usr/local/bin/python3; do
        nobody "$p" -c '' 2>/dev/null && { PY=$p; break; }
done
[ -n "$PY" ] || { echo "1..0 # SKIP no python3 that uid 65534 can run"; exit 0; }
chmod 755 "$TMP"
HOLD_PID=
trap '[ -n "$HOLD_PID" ] && kill "$HOLD_PID" 2>/dev/null; cli_cleanup' EXIT

SOCK=$TMP/sock
ctl() { "$CTL" --socket "$SOCK" "$@"; }

# call.py METHOD...: one request per method on a fresh connection, prints
# "METHOD CODE" (CODE "ok" for a result).
cat > "$TMP/call.py" <<'PY'
import json, socket, sys
for m in sys.argv[2:]:
    s = socket.socket(socket.AF_UNIX)
    s.connect(sys.argv[1])
    s.sendall((json.dumps({"method": m, "params": {}}) + "\n").encode())
    buf = b""
    while not buf.endswith(b"\n"):
        chunk = s.recv(65536)
        if not chunk:
            break
        buf += chunk
    rep = json.loads(buf)
    print(m, rep["error"]["code"] if "error" in rep else "ok")
    s.close()
PY
chmod 644 "$TMP/call.py"

start_kvmtuned "$SOCK" "$TMP/log"
ok "kvmtuned answers root" ctl status

# Every method the protocol names; the mutating ones are root's.
methods=$(sed -n 's/^#define [A-Z_]*METHOD[A-Z_]* "\(kvmtune\.v1\.[A-Za-z]*\)"$/\1/p' \
        "$SRCDIR/include/kvmtune/proto.h" "$SRCDIR/include/kvmtune/hook.h")
mutating="kvmtune.v1.HugepagesReserve kvmtune.v1.Rebalance kvmtune.v1.Reload kvmtune.v1.AdviseApply kvmtune.v1.IsolationSet kvmtune.v1.Hook"
for m in $mutating; do
        ok "$m is named in the protocol headers" sh -c "echo '$methods' | grep -qx '$m'"
done
nobody "$PY" "$TMP/call.py" "$SOCK" $methods > "$TMP/nobody" 2>&1
"$PY" "$TMP/call.py" "$SOCK" $methods > "$TMP/root" 2>&1
for m in $methods; do
        case " $mutating " in
        *" $m "*)
                ok "uid 65534 is refused $m" grep -qx "$m permission-denied" "$TMP/nobody"
                ok "root is not refused $m" sh -c "grep -q '^$m ' '$TMP/root' && ! grep -qx '$m permission-denied' '$TMP/root'" ;;
        *)
                ok "uid 65534 may call $m" sh -c "grep -q '^$m ' '$TMP/nobody' && ! grep -qx '$m permission-denied' '$TMP/nobody'" ;;
        esac
done
nobody "$CTL" --socket "$SOCK" reload >/dev/null 2>"$TMP/err"
ok "kvmtunectl reload as uid 65534: exit 1" test $? -eq 1
ok "... permission denied" grep -q "permission denied: kvmtune.v1.Reload needs root" "$TMP/err"

# uid 65534 holds 40 idle connections: root and the hook are not locked out.
# setpriv itself in the background (not the function) so that $! is the holder.
setpriv --reuid=65534 --regid=65534 --clear-groups "$PY" -c 'import socket, sys, time
held = []
for _ in range(40):
    s = socket.socket(socket.AF_UNIX)
    s.connect(sys.argv[1])
    held.append(s)
print("held", flush=True)
time.sleep(60)' "$SOCK" > "$TMP/held" &
HOLD_PID=$!
i=0; while ! grep -q held "$TMP/held" && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
sleep 0.3
ok "with 40 connections of uid 65534 open, root's status is served" ctl status
ok "... and root's mutating calls" sh -c "'$CTL' --socket '$SOCK' reload >/dev/null"
nobody "$CTL" --socket "$SOCK" status >/dev/null 2>"$TMP/err"
ok "uid 65534's next client is refused: exit 1" test $? -eq 1
ok "... and told why" grep -qx "kvmtunectl: too many connections from uid 65534 (limit 8 per user), try again later" "$TMP/err"
kill "$HOLD_PID"; wait "$HOLD_PID" 2>/dev/null; HOLD_PID=
# the daemon frees them as it reads each EOF, on its own time
nobody_served() { nobody "$CTL" --socket "$SOCK" status >/dev/null 2>&1; }
ok "once they are closed, uid 65534 is served again" wait_until nobody_served

kill -TERM "$DAEMON_PID"; wait "$DAEMON_PID"
ok "kvmtuned exits 0" test $? -eq 0
DAEMON_PID=
[ $failed -eq 0 ] || sed 's/^/# log: /' "$TMP/log"
echo "1..$n"
[ $failed -eq 0 ]
