# TAP helpers for the shell unit tests (sourced): ok DESCRIPTION COMMAND...
# passes when COMMAND succeeds; tap_done prints the plan and sets the status.
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
