#!/bin/sh
# The libvirt hook program (hook/kvmtuned) on its own, against stand-in
# daemons written in Python: what it sends, fail-open (no daemon, a frozen
# daemon, an error, garbage), the bounded wait, and the refusal path. No
# libvirt, no root. TAP output.

BUILDDIR=${BUILDDIR:-.}
HOOK="$BUILDDIR/hook/kvmtuned"

. "$(dirname "$0")/../tap.sh"

command -v python3 >/dev/null || { echo "1..0 # SKIP python3 is not installed"; exit 0; }
[ -x "$HOOK" ] || { echo "1..0 # SKIP $HOOK is not built"; exit 0; }

TMP=$(mktemp -d /tmp/test-hook-program.XXXXXX) || exit 99
SRV_PID=
stop_server() {
        [ -n "$SRV_PID" ] && kill "$SRV_PID" 2>/dev/null && wait "$SRV_PID" 2>/dev/null
        SRV_PID=
        rm -f "$TMP/sock"
}
trap 'stop_server; rm -rf "$TMP"' EXIT

# server MODE: a one-connection stand-in on $TMP/sock that saves the request
# in $TMP/request and answers per MODE: ok, refuse, error, garbage, silent.
# It is ready once it listens ($TMP/ready), not when bind() made the file.
server() {
        stop_server
        rm -f "$TMP/ready"
        python3 - "$TMP/sock" "$TMP/request" "$1" "$TMP/ready" <<'EOF' &
import json, socket, sys, time
path, out, mode, ready = sys.argv[1:5]
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(path)
s.listen(4)
open(ready, "w").close()
while True:
    c, _ = s.accept()
    data = b""
    while not data.endswith(b"\n"):
        chunk = c.recv(65536)
        if not chunk:
            break
        data += chunk
    open(out, "wb").write(data)
    answers = {
        "ok": {"result": {"name": "vm1", "state": "tuned", "applied": True}},
        "refuse": {"result": {"refuse": "no room for 4 dedicated vCPUs"}},
        "error": {"error": {"code": "invalid-params", "message": "bad xml"}},
    }
    if mode == "silent":
        time.sleep(30)
    elif mode == "garbage":
        c.sendall(b"this is not json\n")
    else:
        c.sendall((json.dumps(answers[mode]) + "\n").encode())
    c.close()
EOF
        SRV_PID=$!
        wait_until test -e "$TMP/ready"
}

XML="<domain type='qemu'><name>vm1</name><uuid>0b7e2c9a-7f1e-4a4e-9c51-2f3c3b7a1d11</uuid><vcpu>1</vcpu></domain>"
mkdir -p "$TMP/run"
echo $$ > "$TMP/run/vm1.pid"

# hook STAGE: runs the hook on vm1; leaves $rc, $TMP/err and the time in $ms.
hook() {
        t0=$(date +%s%N)
        echo "$XML" | KVMTUNED_SOCKET="$TMP/sock" KVMTUNED_HOOK_PID_DIR="$TMP/run" \
                "$HOOK" vm1 "$1" begin - 2>"$TMP/err"
        rc=$?
        ms=$(( ($(date +%s%N) - t0) / 1000000 ))
}

req() {  # req PYTHON_EXPR: a field of the last request r
        python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$TMP/request" "$1"
}

"$HOOK" --help > "$TMP/help"
ok "--help documents the timeout variable" grep -q KVMTUNED_HOOK_TIMEOUT_MS "$TMP/help"

# Stages other than started and release exit 0 at once, without the daemon.
for stage in prepare start stopped migrate restore reconnect attach; do
        hook $stage
        ok "stage $stage: exit 0 without asking kvmtuned" sh -c "[ $rc -eq 0 ] && [ ! -s '$TMP/err' ]"
done

server ok
hook started
ok "started, daemon answers: exit 0" [ $rc -eq 0 ]
ok "started sends method kvmtune.v1.Hook" [ "$(req 'r["method"]')" = kvmtune.v1.Hook ]
ok "... stage started" [ "$(req 'r["params"]["stage"]')" = started ]
ok "... the domain name" [ "$(req 'r["params"]["name"]')" = vm1 ]
ok "... the uuid from the XML" [ "$(req 'r["params"]["uuid"]')" = 0b7e2c9a-7f1e-4a4e-9c51-2f3c3b7a1d11 ]
ok "... the QEMU pid from NAME.pid" [ "$(req 'r["params"]["pid"]')" = $$ ]
ok "... the domain XML from stdin" [ "$(req 'r["params"]["xml"].strip()')" = "$XML" ]

# libvirt 9.0 writes the pid file of "kte-a&b" as "kte-a&amp;b.pid", its status
# XML under the raw name: the hook reads the status XML's <domstatus pid=...>.
server ok
echo "<domstatus state='running' reason='booted' pid='$$'>" > "$TMP/run/kte-a&b.xml"
echo 1 > "$TMP/run/kte-a&amp;b.pid"
echo "<domain type='qemu'><name>kte-a&amp;b</name></domain>" | KVMTUNED_SOCKET="$TMP/sock" \
        KVMTUNED_HOOK_PID_DIR="$TMP/run" "$HOOK" 'kte-a&b' started begin - 2>"$TMP/err"
ok "a name with '&': exit 0" [ $? -eq 0 ]
ok "... the QEMU pid from the status XML NAME.xml under the raw name" [ "$(req 'r["params"]["pid"]')" = $$ ]

server ok
hook release
ok "release: exit 0" [ $rc -eq 0 ]
ok "release sends stage release without the XML" [ "$(req 'r["params"]["stage"] + str("xml" in r["params"])')" = releaseFalse ]

server refuse
hook started
ok "a refusal: exit 1 (libvirt refuses the start)" [ $rc -eq 1 ]
ok "... and the reason on stderr" grep -q "refuses to start domain 'vm1': no room for 4 dedicated vCPUs" "$TMP/err"

server error
hook started
ok "a daemon error: fail open (exit 0)" [ $rc -eq 0 ]
ok "... saying why in one line" sh -c "[ \$(wc -l < '$TMP/err') -eq 1 ] && grep -q invalid-params '$TMP/err'"

server garbage
hook started
ok "a malformed answer: fail open" sh -c "[ $rc -eq 0 ] && grep -q 'no answer from kvmtuned' '$TMP/err'"

stop_server
hook started
ok "no daemon: fail open" sh -c "[ $rc -eq 0 ] && grep -q 'cannot reach kvmtuned' '$TMP/err'"

server silent
hook started
ok "a daemon that does not answer: fail open" \
        sh -c "[ $rc -eq 0 ] && grep -q 'did not answer within 2000 ms' '$TMP/err' || { sed 's/^/#   /' '$TMP/err'; false; }"
# the upper bounds only tell a bounded wait from the silent daemon's 30 s (a
# loaded machine may be slow to start the hook); the message says which timeout
ok "... after the 2000 ms default timeout (${ms} ms)" [ "$ms" -ge 1900 -a "$ms" -lt 15000 ]
KVMTUNED_HOOK_TIMEOUT_MS=300
export KVMTUNED_HOOK_TIMEOUT_MS
hook started
ok "KVMTUNED_HOOK_TIMEOUT_MS=300 bounds the wait (${ms} ms)" \
        sh -c "[ $rc -eq 0 -a $ms -ge 300 -a $ms -lt 15000 ] && grep -q 'did not answer within 300 ms' '$TMP/err'"
KVMTUNED_HOOK_TIMEOUT_MS=bogus
hook started
ok "a bad KVMTUNED_HOOK_TIMEOUT_MS is reported and the default used" grep -q "ignoring KVMTUNED_HOOK_TIMEOUT_MS=bogus" "$TMP/err"
unset KVMTUNED_HOOK_TIMEOUT_MS

big=$(python3 -c "print('<domain><name>vm1</name><description>' + 'x' * 1100000 + '</description></domain>')")
server ok
echo "$big" | KVMTUNED_SOCKET="$TMP/sock" KVMTUNED_HOOK_PID_DIR="$TMP/run" "$HOOK" vm1 started begin - 2>"$TMP/err"
ok "an XML over the socket's request cap: fail open, saying so" sh -c "[ $? -eq 0 ] && grep -q 'too large' '$TMP/err'"

rm -f "$TMP/run/vm1.pid"
server ok
hook started
ok "no pid file: fail open" sh -c "[ $rc -eq 0 ] && grep -q 'cannot read the QEMU pid' '$TMP/err'"

echo "1..$n"
[ $failed -eq 0 ]
