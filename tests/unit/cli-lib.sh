# Shared by the shell tests that drive kvmtunectl (sourced after setting
# TEST_NAME): the paths make check exports (with fallbacks for a run by hand
# from the build directory), tap.sh, a temporary directory $TMP removed at exit
# with the daemon it started, and the checks on the last command's output.
#
#   run ARGS...         kvmtunectl ARGS (with --socket $CTL_SOCKET when set):
#                       $rc, $TMP/out, $TMP/err
#   rc_is N, out_has RE, err_has RE, json_ok, json_is PYTHON-EXPR EXPECTED
#   start_kvmtuned SOCKET LOG [ARGS...]   the real kvmtuned on libvirt's
#                       in-process test driver with the config $KVMTUNED_CONF
#                       (default: empty); $DAEMON_PID
#   stop_daemon         stops $DAEMON_PID and waits for it
#   wait_socket PATH    until a server listens on PATH (a connect succeeds), 10 s at most

BUILDDIR=${BUILDDIR:-.}
SRCDIR=${SRCDIR:-.}
TOPOLOGIES=${TOPOLOGIES:-$SRCDIR/tests/data/topologies}
FIXTURES=${FIXTURES:-$SRCDIR/tests/fixtures}
CTL="$BUILDDIR/cli/kvmtunectl"
KVMTUNED="$BUILDDIR/daemon/kvmtuned"

. "$(dirname "$0")/../tap.sh"

TMP=$(mktemp -d "/tmp/${TEST_NAME:-test-cli}.XXXXXX") || exit 99
: >"$TMP/empty.conf"
DAEMON_PID=
CTL_SOCKET=
cli_cleanup() {
        [ -n "$DAEMON_PID" ] && kill "$DAEMON_PID" 2>/dev/null && wait "$DAEMON_PID" 2>/dev/null
        rm -rf "$TMP"
}
trap cli_cleanup EXIT

# A server accepts connections on $1: bind() makes the file before listen(), a
# client in between is refused. Without python3, the file alone.
listening() {
        [ -S "$1" ] || return 1
        command -v python3 >/dev/null || return 0
        python3 -c 'import socket, sys; socket.socket(socket.AF_UNIX).connect(sys.argv[1])' "$1" 2>/dev/null
}
wait_socket() { wait_until listening "$1"; }    # up to 10 s for a server to listen on $1

run() {
        if [ -n "$CTL_SOCKET" ]; then
                "$CTL" --socket "$CTL_SOCKET" "$@" >"$TMP/out" 2>"$TMP/err"
        else
                "$CTL" "$@" >"$TMP/out" 2>"$TMP/err"
        fi
        rc=$?
}
rc_is() { [ "$rc" -eq "$1" ] || { echo "#   exit status $rc, expected $1"; sed 's/^/#   /' "$TMP/err"; return 1; }; }
out_has() { grep -q -- "$1" "$TMP/out" || { echo "#   stdout lacks '$1':"; sed 's/^/#   /' "$TMP/out"; return 1; }; }
err_has() { grep -q -- "$1" "$TMP/err" || { echo "#   stderr lacks '$1':"; sed 's/^/#   /' "$TMP/err"; return 1; }; }
json_ok() { python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$TMP/out"; }
json_is() {  # json_is PYTHON-EXPR EXPECTED: evaluates EXPR on the document d
        got=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$TMP/out" "$1")
        [ "$got" = "$2" ] || { echo "#   $1 = '$got', expected '$2'"; return 1; }
}

start_kvmtuned() {
        sock=$1 log=$2
        shift 2
        "$KVMTUNED" --socket "$sock" --connect test:///default --config "${KVMTUNED_CONF:-$TMP/empty.conf}" \
                "$@" 2>"$log" &
        DAEMON_PID=$!
        wait_socket "$sock"
}

stop_daemon() {
        kill "$DAEMON_PID"
        wait "$DAEMON_PID" 2>/dev/null
        DAEMON_PID=
}
