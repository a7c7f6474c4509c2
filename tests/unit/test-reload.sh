#!/bin/sh
# Reloading with the --config file gone: kvmtunectl reload and SIGHUP must both
# refuse, say why, and keep the running configuration (reserved CPUs and the
# policy the config gave). The daemon talks to libvirt's in-process test driver
# (test:///default, one running domain "test") on a real topology. TAP output.

TEST_NAME=test-reload
. "$(dirname "$0")/cli-lib.sh"
CTL_SOCKET="$TMP/sock"
TOPO=$TOPOLOGIES/2s-xeon-platinum8168-skylake-smt.xml

ctl() { "$CTL" --socket "$TMP/sock" "$@"; }
# The default would reserve the first core (0,48): 2,50 tells them apart.
reserved_kept() { ctl status | grep -qx 'reserved CPUs:  2,50'; }
policy_kept() { ctl list | grep -q '^test .*dedicated/defaults'; }

printf '[host]\nreserved_cpus = 2,50\n[defaults]\ncpu = dedicated\n' > "$TMP/k.conf"
KVMTUNED_CONF="$TMP/k.conf" start_kvmtuned "$TMP/sock" "$TMP/log" --topology "$TOPO"
ok "the daemon runs with reserved CPUs 2,50" reserved_kept
ok "... and the domain has the config's policy" policy_kept

mv "$TMP/k.conf" "$TMP/away.conf"
run reload
ok "reload with the --config file gone: exit 1" rc_is 1
ok "... naming the file and why" grep -q "k.conf: cannot read: No such file or directory" "$TMP/err"
ok "... nothing printed as reloaded" test ! -s "$TMP/out"
ok "... reserved CPUs kept" reserved_kept
ok "... the domain's policy kept" policy_kept

kill -HUP $DAEMON_PID
i=0; while ! grep -q "Reload refused" "$TMP/log" && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
ok "SIGHUP with the --config file gone: refused in the log, naming the file" \
        grep -q "Reload refused, keeping the running configuration: .*k.conf: cannot read" "$TMP/log"
ok "... the daemon keeps running" kill -0 $DAEMON_PID
ok "... reserved CPUs kept" reserved_kept
ok "... the domain's policy kept" policy_kept

mv "$TMP/away.conf" "$TMP/k.conf"
printf '[host]\nreserved_cpus = 4,52\n' > "$TMP/k.conf"
run reload
ok "with the file back, reload succeeds" rc_is 0
run status
ok "... and swaps the new configuration in" out_has '^reserved CPUs:  4,52$'
ok "... logging what is reserved" grep -q "2 CPUs reserved for housekeeping: 4,52$" "$TMP/log"

# reserved_cpus naming CPUs the host lacks: the log says what is really
# reserved (whole cores, only CPUs that exist) and warns about the rest.
printf '[host]\nreserved_cpus = 64-127\n' > "$TMP/k.conf"
run reload
ok "reserved_cpus = 64-127 on a 96-PU host: reload succeeds" rc_is 0
ok "... warns about CPUs 96-127" grep -q "reserved_cpus: this host has no CPU 96-127, ignoring those$" "$TMP/log"
ok "... logs the whole cores really reserved" grep -q "64 CPUs reserved for housekeeping: 16-47,64-95$" "$TMP/log"
run status
ok "... which status shows" out_has '^reserved CPUs:  16-47,64-95$'
printf '[host]\nreserved_cpus = 200-300\n' > "$TMP/k.conf"
run reload
ok "reserved_cpus = 200-300: reload succeeds" rc_is 0
ok "... warns that no CPU is reserved" \
        grep -q "reserved_cpus: this host has no CPU 200-300, ignoring them: no CPU is reserved for housekeeping$" "$TMP/log"
ok "... and logs none, not 101" grep -q "0 CPUs reserved for housekeeping$" "$TMP/log"

kill -TERM $DAEMON_PID
wait $DAEMON_PID
ok "SIGTERM: exit status 0" test $? -eq 0
DAEMON_PID=
[ $failed -eq 0 ] || sed 's/^/# log: /' "$TMP/log"
echo "1..$n"
[ $failed -eq 0 ]
