#!/bin/sh
# Reloading with the --config file gone: kvmtunectl reload and SIGHUP must both
# refuse, say why, and keep the running configuration (reserved CPUs and the
# policy the config gave). The daemon talks to libvirt's in-process test driver
# (test:///default, one running domain "test") on a real topology. TAP output.

BUILDDIR=${BUILDDIR:-.}
SRCDIR=${SRCDIR:-$(dirname "$0")/../..}
TOPOLOGIES=${TOPOLOGIES:-$SRCDIR/../shared/topologies}
. "$(dirname "$0")/../tap.sh"

TOPO=$TOPOLOGIES/2s-xeon-platinum8168-skylake-smt.xml
[ -f "$TOPO" ] || { echo "1..0 # SKIP no topology at $TOPO"; exit 0; }
TMP=$(mktemp -d /tmp/test-reload.XXXXXX) || exit 99
DPID=
cleanup() {
        [ -n "$DPID" ] && kill "$DPID" 2>/dev/null && wait "$DPID" 2>/dev/null
        rm -rf "$TMP"
}
trap cleanup EXIT

ctl() { "$BUILDDIR/cli/kvmtunectl" --socket "$TMP/sock" "$@"; }
# The default would reserve the first core (0,48): 2,50 tells them apart.
reserved_kept() { ctl status | grep -qx 'reserved CPUs:  2,50'; }
policy_kept() { ctl list | grep -q '^test .*dedicated/defaults'; }

printf '[host]\nreserved_cpus = 2,50\n[defaults]\ncpu = dedicated\n' > "$TMP/k.conf"
"$BUILDDIR/daemon/kvmtuned" --socket "$TMP/sock" --connect test:///default --config "$TMP/k.conf" \
        --topology "$TOPO" 2>"$TMP/log" &
DPID=$!
i=0; while ! ctl status >/dev/null 2>&1 && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
ok "the daemon runs with reserved CPUs 2,50" reserved_kept
ok "... and the domain has the config's policy" policy_kept

mv "$TMP/k.conf" "$TMP/away.conf"
ctl reload >"$TMP/out" 2>"$TMP/err"
ok "reload with the --config file gone: exit 1" test $? -eq 1
ok "... naming the file and why" grep -q "k.conf: cannot read: No such file or directory" "$TMP/err"
ok "... nothing printed as reloaded" test ! -s "$TMP/out"
ok "... reserved CPUs kept" reserved_kept
ok "... the domain's policy kept" policy_kept

kill -HUP $DPID
i=0; while ! grep -q "Reload refused" "$TMP/log" && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
ok "SIGHUP with the --config file gone: refused in the log, naming the file" \
        grep -q "Reload refused, keeping the running configuration: .*k.conf: cannot read" "$TMP/log"
ok "... the daemon keeps running" kill -0 $DPID
ok "... reserved CPUs kept" reserved_kept
ok "... the domain's policy kept" policy_kept

mv "$TMP/away.conf" "$TMP/k.conf"
printf '[host]\nreserved_cpus = 4,52\n' > "$TMP/k.conf"
ok "with the file back, reload succeeds" sh -c "'$BUILDDIR/cli/kvmtunectl' --socket '$TMP/sock' reload >/dev/null"
ok "... and swaps the new configuration in" sh -c "'$BUILDDIR/cli/kvmtunectl' --socket '$TMP/sock' status | grep -qx 'reserved CPUs:  4,52'"

kill -TERM $DPID
wait $DPID
ok "SIGTERM: exit status 0" test $? -eq 0
DPID=
[ $failed -eq 0 ] || sed 's/^/# log: /' "$TMP/log"
echo "1..$n"
[ $failed -eq 0 ]
