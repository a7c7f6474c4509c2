# TAP helpers for the shell unit tests (sourced): ok DESCRIPTION COMMAND...
# passes when COMMAND succeeds; ok_rc STATUS DESCRIPTION passes when STATUS
# (say $?) is 0; skip DESCRIPTION WHY stands for a block of checks that
# cannot run here.
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
