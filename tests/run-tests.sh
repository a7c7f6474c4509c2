#!/bin/bash
# The whole test suite: unit tests (a normal build and an ASan+UBSan build), the
# call-cycle check, make distcheck, the fuzz targets and the integration tests
# against a real libvirtd + QEMU (needs root; skipped otherwise).
# Prints "N passed, N failed" last. Extra configure flags come from $CONFIGURE_FLAGS.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
builddir=${BUILDDIR_BASE:-$top/build}
jobs=$(nproc 2>/dev/null || echo 2)
passed=0 failed=0 skipped=0

count() {       # sums automake's test-suite summary of one build dir
        local log=$1/test-suite.log p f e s
        [ -f "$log" ] || { failed=$((failed + 1)); echo "no $log"; return; }
        p=$(sed -n 's/^# PASS: *//p' "$log" | head -1)
        f=$(sed -n 's/^# FAIL: *//p' "$log" | head -1)
        e=$(sed -n 's/^# ERROR: *//p' "$log" | head -1)
        s=$(sed -n 's/^# SKIP: *//p' "$log" | head -1)
        passed=$((passed + ${p:-0})); failed=$((failed + ${f:-0} + ${e:-0})); skipped=$((skipped + ${s:-0}))
}

configured_with() {     # the configure arguments of the build in . (config.status drops -q)
        ./config.status --config 2>/dev/null | tr -d "'"
}

build() {       # build DIR [configure flags...]
        local dir=$1 want; shift
        want=$(echo ${CONFIGURE_FLAGS:-} "$@")
        mkdir -p "$dir" && cd "$dir" || return 1
        # An earlier run may have configured DIR with other flags (CI's
        # CONFIGURE_FLAGS=--enable-werror after a plain run): configure again,
        # and rebuild everything, since new flags alone recompile nothing.
        if [ ! -f Makefile ] || [ "$(configured_with)" != "$want" ]; then
                "$top/configure" -q ${CONFIGURE_FLAGS:-} "$@" || return 1
                make -s clean >/dev/null || return 1
        fi
        make -s -j"$jobs" || return 1
}

[ -x "$top/configure" ] || (cd "$top" && ./autogen.sh) || exit 1

echo "== unit tests"
if build "$builddir/default"; then
        make -s -j"$jobs" check >/dev/null 2>&1; count "$builddir/default"
        grep -E '^(FAIL|ERROR):' "$builddir/default/test-suite.log" || true
else
        failed=$((failed + 1)); echo "build failed"
fi

echo "== unit tests under ASan + UBSan"
if build "$builddir/asan" --enable-asan --enable-ubsan; then
        ASAN_OPTIONS=detect_leaks=1 make -s -j"$jobs" check >/dev/null 2>&1; count "$builddir/asan"
        grep -E '^(FAIL|ERROR):' "$builddir/asan/test-suite.log" || true
else
        failed=$((failed + 1)); echo "asan build failed"
fi

echo "== call cycles between source files (tests/check-call-cycles.py)"
cycles=$("$top/tests/check-call-cycles.py" "$top" 2>&1)
case $? in
0)      passed=$((passed + 1)); echo "PASS: no source files call into each other" ;;
77)     skipped=$((skipped + 1)); echo "skipped: $cycles" ;;
*)      failed=$((failed + 1)); echo "FAIL: call cycles"; printf '%s\n' "$cycles" ;;
esac

echo "== make distcheck (release tarball builds, passes its unit tests, installs)"
if (cd "$builddir/default" && make -s distcheck >distcheck.log 2>&1); then
        passed=$((passed + 1)); echo "PASS: make distcheck"
else
        failed=$((failed + 1)); echo "FAIL: make distcheck"; tail -30 "$builddir/default/distcheck.log"
fi

# -timeout: an input that takes over 10 s is a finding (libFuzzer's default, 1200 s,
# would stall CI: max_total_time is only checked between inputs).
echo "== fuzzing smoke run: each libFuzzer target ${FUZZ_SECONDS:-15} s under ASan (clang)"
fuzzers=(domxml conf proto advise isolate)
if ! command -v clang >/dev/null; then
        skipped=$((skipped + ${#fuzzers[@]})); echo "skipped: clang is not installed"
elif ! build "$builddir/fuzz" CC=clang --enable-fuzzing --enable-asan \
        || ! make -s -j"$jobs" "${fuzzers[@]/#/tests/fuzz/fuzz-}"; then
        failed=$((failed + 1)); echo "FAIL: the fuzz build (clang is installed)"
else
        for t in "${fuzzers[@]}"; do
                corpus=$(mktemp -d)
                seeds=$top/tests/fixtures/$t; [ -d "$seeds" ] || seeds=
                if ASAN_OPTIONS=detect_leaks=1 "$builddir/fuzz/tests/fuzz/fuzz-$t" \
                        -max_total_time="${FUZZ_SECONDS:-15}" -timeout=10 "$corpus" $seeds >"$builddir/fuzz/fuzz-$t.log" 2>&1; then
                        passed=$((passed + 1)); echo "PASS: fuzz-$t ($(grep -o 'Done [0-9]* runs' "$builddir/fuzz/fuzz-$t.log"))"
                else
                        failed=$((failed + 1)); echo "FAIL: fuzz-$t"; tail -30 "$builddir/fuzz/fuzz-$t.log"
                fi
                rm -rf "$corpus"
        done
fi

echo "== integration tests (real libvirtd + QEMU)"
if [ "$(id -u)" = 0 ]; then
        cd "$builddir/default" && rm -f test-suite.log && make -s check-integration >/dev/null 2>&1
        count "$builddir/default"
        grep -E '^(FAIL|ERROR):' "$builddir/default/test-suite.log" || true
else
        n=$(cd "$top" && ls tests/integration/test-*.sh | wc -l)
        skipped=$((skipped + n)); echo "skipped: $n integration tests need root"
fi

echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" = 0 ]
