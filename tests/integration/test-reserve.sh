#!/bin/sh
# The boot-time reservation program, on this machine's real 2 MiB pages:
# `kvmtuned --reserve-hugepages` (what kvmtuned-hugepages.service runs) sets
# node 0's pool from [hugepages], reads back what the kernel granted, mounts
# hugetlbfs for the size when no mount exists, is idempotent, shrinks a pool
# on request, and never sets a pool below the pages in use.
#
# Puts back what it changes, also on failure: every node's 2 MiB nr_hugepages,
# and a hugetlbfs mount the program made. No libvirtd is needed.
. "$(dirname "$0")/lib.sh"

[ "$(id -u)" = 0 ] || skip_all "needs root (run: sudo make check-integration)"
t_lock
[ -x "$BUILDDIR/daemon/kvmtuned" ] || skip_all "$BUILDDIR/daemon/kvmtuned is not built"
HP_SYS=/sys/devices/system/node
HP_DIR=$HP_SYS/node0/hugepages/hugepages-2048kB
[ -w "$HP_DIR/nr_hugepages" ] || skip_all "no writable 2 MiB pool on node 0 ($HP_DIR)"

HP_SAVED=""
for f in $HP_SYS/node*/hugepages/hugepages-2048kB/nr_hugepages; do
        HP_SAVED="$HP_SAVED$f $(cat "$f")
"
done
mounts_2m() {   # hugetlbfs mount points of 2 MiB pages (the default size here)
        awk '$3 == "hugetlbfs" && ($4 ~ /pagesize=2M/ || $4 !~ /pagesize=/) {print $2}' /proc/mounts | sort
}
MOUNTS_BEFORE=$(mounts_2m)

rs_cleanup() {
        printf '%s' "$HP_SAVED" | while read -r f count; do
                [ -n "$f" ] && echo "$count" > "$f" 2>/dev/null
        done
        for m in $(mounts_2m); do
                echo "$MOUNTS_BEFORE" | grep -qx "$m" && continue
                umount "$m" 2>/dev/null && rmdir "$m" 2>/dev/null
        done
        t_cleanup
}
trap rs_cleanup EXIT

reserve() {     # reserve CONFIG_TEXT: runs the program, output in $T_TMP/out
        printf '%s\n' "$1" > "$T_CONF"
        "$BUILDDIR/daemon/kvmtuned" --config "$T_CONF" --reserve-hugepages > "$T_TMP/out" 2>&1
}
nr() { cat "$HP_DIR/nr_hugepages"; }

# Start from an empty pool and no 2M mount of ours.
echo 0 > "$HP_DIR/nr_hugepages"

reserve "$(printf '[hugepages]\n2M = 0:24')"
ok $? "--reserve-hugepages with 2M = 0:24 exits 0"
sed 's/^/#   /' "$T_TMP/out"
is "$(nr)" 24 "node 0's 2 MiB pool has the 24 pages asked for"
grep -q "node 0.*2M.*24" "$T_TMP/out"
ok $? "it reports node 0, 2M, 24"
[ -n "$(mounts_2m)" ]
ok $? "a hugetlbfs mount for 2 MiB pages exists afterwards ($(mounts_2m | tr '\n' ' '))"
if [ -z "$MOUNTS_BEFORE" ]; then
        grep -q "mounted hugetlbfs pagesize=2M" "$T_TMP/out"
        ok $? "it mounted hugetlbfs itself and said so"
fi

cp "$T_TMP/out" "$T_TMP/first"
reserve "$(printf '[hugepages]\n2M = 0:24')"
ok $? "run again: exits 0"
is "$(nr)" 24 "run again: the pool is unchanged (idempotent)"
grep -q "mounted hugetlbfs" "$T_TMP/out"
ok "$([ $? -ne 0 ] && echo 0 || echo 1)" "run again: no second mount"

reserve "$(printf '[hugepages]\n2M = 0:8')"
ok $? "2M = 0:8: exits 0"
is "$(nr)" 8 "the pool shrinks to 8 on request"

# Pages in use: a pool is never set below them. Hold 4 pages through a file on
# the 2 MiB hugetlbfs mount (its pages stay allocated while the file exists).
m=$(mounts_2m | head -1)
if [ -n "$m" ] && fallocate -l 8M "$m/kvmtuned-test-reserve" 2>/dev/null; then
        reserve "$(printf '[hugepages]\n2M = 0:0')"
        is "$(nr)" 4 "2M = 0:0 with 4 pages in use: the pool stops at the 4 in use"
        sed 's/^/#   /' "$T_TMP/out"
        rm -f "$m/kvmtuned-test-reserve"
        reserve "$(printf '[hugepages]\n2M = 0:0')"
        is "$(nr)" 0 "once they are freed, 2M = 0:0 empties the pool"
else
        T_N=$((T_N + 1))
        echo "ok $T_N - pages in use # SKIP cannot hold pages through $m"
fi

reserve "$(printf '[hugepages]\n2M = 0:nonsense')"
ok "$([ $? -ne 0 ] && echo 0 || echo 1)" "a bad [hugepages] value: exits non-zero"
grep -q "nonsense" "$T_TMP/out"
ok $? "and names the bad value"

done_testing
