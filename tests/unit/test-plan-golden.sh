#!/bin/sh
# Golden files: `kvmtunectl plan --json` replays of workloads over the
# topologies, compared byte for byte with the expected output kept beside each
# workload: tests/fixtures/workloads/NAME.json is replayed on TOPOLOGY.xml into
# tests/fixtures/workloads/NAME/TOPOLOGY.json (TOPOLOGY+SYSFS.json with
# --sysfs-root tests/fixtures/SYSFS). A difference fails with the diff.
# KVMTUNED_TEST_REGENERATE=1 rewrites the expected files instead (as libvirt's
# VIR_TEST_REGENERATE_OUTPUT): review the change with git diff. TAP output.

TEST_NAME=test-plan-golden
. "$(dirname "$0")/cli-lib.sh"

WORKLOADS="$FIXTURES/workloads"
cases=0

# check_golden EXPECTED ARGS...: kvmtunectl ARGS against the file EXPECTED.
check_golden() {
        expected=$1
        shift
        cases=$((cases + 1))
        run "$@"
        if [ "$rc" -gt 1 ]; then
                ok "$(basename "$(dirname "$expected")")/$(basename "$expected")" rc_is 0
                return
        fi
        if [ "${KVMTUNED_TEST_REGENERATE:-0}" = 1 ]; then
                mkdir -p "$(dirname "$expected")"
                cp "$TMP/out" "$expected"
                echo "# regenerated $expected"
        fi
        diff -u "$expected" "$TMP/out" >"$TMP/diff" 2>&1
        same=$?
        ok "$(basename "$(dirname "$expected")")/$(basename "$expected")" test "$same" -eq 0
        [ "$same" -eq 0 ] || sed 's/^/#   /' "$TMP/diff"
}

# golden WORKLOAD TOPOLOGY [SYSFS]: one replay.
golden() {
        set -- "$1" "$2" "${3:-}"
        name=$(basename "$2" .xml)${3:+"+$3"}
        check_golden "$WORKLOADS/$1/$name.json" --json plan --workload "$WORKLOADS/$1.json" \
                --topology "$TOPOLOGIES/$2" ${3:+--sysfs-root "$FIXTURES/$3"}
}

# mixed.json on every export: dedicated (isolate, require, prefer), shared,
# ignored, 1G pages, a stop and a restart, a request too big for small hosts.
for t in "$TOPOLOGIES"/*.xml; do
        golden mixed "$(basename "$t")"
done
golden skylake-mix 2s-xeon-platinum8168-skylake-smt.xml
golden rome-split 2s-epyc-7402-rome-nps4-smt-3coreccx-gpu-ib.xml
golden skylake-hugepages 2s-xeon-platinum8168-skylake-smt.xml sysfs-2node

# README's offline example, as printed there: the table kvmtunectl prints for
# `plan --topology tests/data/topologies/...skylake-smt.xml --workload
# tests/fixtures/workloads/skylake-mix.json`.
readme_example="$WORKLOADS/skylake-mix/2s-xeon-platinum8168-skylake-smt.txt"
check_golden "$readme_example" plan --workload "$WORKLOADS/skylake-mix.json" \
        --topology "$TOPOLOGIES/2s-xeon-platinum8168-skylake-smt.xml"
sed 's/^/    /; s/^    $//' "$readme_example" >"$TMP/indented"
ok "README.md shows the skylake-mix table as kvmtunectl prints it" python3 -c '
import sys
readme, table = (open(f).read() for f in sys.argv[1:])
sys.exit(0 if table in readme else 1)' "$SRCDIR/README.md" "$TMP/indented"

# Every expected file belongs to a case above (none left behind by a rename).
ok "no stray expected files" test "$(find "$WORKLOADS" -mindepth 2 -type f | wc -l)" -eq "$cases"

echo "1..$n"
[ "$failed" -eq 0 ]
