# TAP helpers for the shell unit tests (sourced): ok DESCRIPTION COMMAND...
# passes when COMMAND succeeds; ok_rc STATUS DESCRIPTION passes when STATUS
# (say $?) is 0; skip DESCRIPTION WHY stands for a block of checks that
# cannot run here. wait_until COMMAND... waits for a condition on a loaded
# machine: true as soon as COMMAND succeeds, false if it still fails after 10 s
# (a fixed sleep is either slow or racy).
n=0
failed=0
ok() {
        desc=$1; shift
        n=$((n + 1))
        if "$@"; then
                echo "ok $n - $desc"
        else
                echo "not ok $n - $desc"
                failed=$((failed + 1))
        fi
}
ok_rc() {
        ok "$2" test "$1" -eq 0
}
skip() {
        n=$((n + 1))
        echo "ok $n - $1 # SKIP $2"
}
wait_until() {
        _w=0
        while ! "$@" && [ $_w -lt 100 ]; do sleep 0.1; _w=$((_w + 1)); done
        "$@"
}
