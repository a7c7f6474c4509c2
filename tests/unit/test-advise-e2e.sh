#!/bin/sh
# kvmtunectl advise end to end: offline (--xml, no daemon) on the SQL-Server-like
# fixture, then against the real kvmtuned on libvirt's in-process test driver:
# its built-in domain "test" has a virtio disk with no <driver>, so the audit
# finds disk-cache and disk-iothread; --all lists it with its counts; --apply
# (root) defines the tuned XML and the next audit finds nothing. TAP output.

TEST_NAME=test-advise
. "$(dirname "$0")/cli-lib.sh"
CTL_SOCKET="$TMP/s.sock"

run advise
ok "advise without DOMAIN: exit 2" rc_is 2
run list --apply
ok "--apply on another command: exit 2" rc_is 2
ok "--apply on another command: says so" err_has "only applies to advise"

# ---- usage --------------------------------------------------------------------
run advise x --all
ok "advise DOMAIN --all: exit 2" rc_is 2
ok "advise DOMAIN --all: one of them" err_has "give one of DOMAIN, --xml FILE|- or --all"
run advise --all --apply
ok "advise --all --apply: exit 2" rc_is 2
run advise x --cpu dedicated
ok "policy options without --xml: exit 2" rc_is 2
ok "policy options without --xml: says so" err_has "only apply to advise --xml"
run advise --xml - --vcpus 4
ok "plan options on advise: exit 2" rc_is 2
run list --xml x
ok "--xml on another command: exit 2" rc_is 2

# ---- offline: no daemon, no libvirt ----------------------------------------------
SQL="$FIXTURES/advise/golden/sql1.xml"
run advise --xml "$SQL" --config "$TMP/empty.conf"
ok "advise --xml: exit 0" rc_is 0
ok "advise --xml: dedicated from the metadata, display advised" out_has "^info  *graphics  *display  *remove <graphics>"
ok "advise --xml: no topology, the NUMA view says why not" out_has "^sql1: guest NUMA view not checked: no host topology"
ok "advise --xml: each reason points at a source" out_has "^  interface 52:54:00:5a:10:01 net-model: emulated e1000 NIC.*\[[0-9]\]$"
ok "advise --xml: the sources, with their figures" out_has "^  \[[0-9]\] seeds/000 (KubeVirt, SQL Server 2022, HammerDB): 41,620 -> 94,406 TPM"
# README's advise example is this output, as printed (its table and sources).
sed -n '/^Why:/q;p' "$TMP/out" >"$TMP/table"
sed -n '/^Sources:/,$p' "$TMP/out" >>"$TMP/table"
ok "README shows advise --xml sql1.xml as printed" sh -c '
        while IFS= read -r line; do
                [ -z "$line" ] && continue
                grep -qxF "    $line" "$1/README.md" || { echo "#   README lacks: $line"; exit 1; }
        done <"$2"' _ "$SRCDIR" "$TMP/table"
run --json advise --xml - --config "$TMP/empty.conf" --cpu shared <"$SQL"
ok "advise --json --xml -: exit 0" rc_is 0
ok "advise --xml -: options win over the metadata" json_is \
        '(d["policy"]["cpu"], d["policy"]["source"], [f["id"] for f in d["findings"] if f["id"] == "display"])' \
        "('shared', 'request', [])"
ok "advise --xml -: counts by severity" json_is '(d["counts"]["warning"], d["counts"]["info"])' "(11, 3)"
printf '[domain "sql*"]\ncpu = shared\n' >"$TMP/shared.conf"
run --json advise --xml "$SQL" --config "$TMP/shared.conf"
ok "advise --xml --config: the metadata wins over the config" json_is 'd["policy"]["source"]' "metadata"
run advise --xml "$SQL" --config "$TMP/empty.conf" --apply
ok "advise --xml --apply: exit 0" rc_is 0
ok "advise --xml --apply: the fixed XML on stdout" out_has '<controller type="scsi" index="0" model="virtio-scsi">'
ok "advise --xml --apply: the findings on stderr" err_has "^warning  *controller scsi0  *scsi-iothread  *.*  *yes$"
cp "$TMP/out" "$TMP/fixed.xml"
run --json advise --xml "$TMP/fixed.xml" --config "$TMP/empty.conf"
ok "advise --xml of the fixed XML: only advice left" json_is \
        '[f["id"] for f in d["findings"] if f["applied"] or f["id"] in ("disk-cache", "disk-io", "scsi-iothread", "hyperv", "hyperv-clock", "serial-console")]' "[]"
run advise --xml "$SQL" --config "$TMP/empty.conf" --topology "$TOPOLOGIES/2s-xeon-platinum8168-skylake-smt.xml"
ok "advise --xml --topology: exit 0" rc_is 0
ok "advise --xml --topology: the audit is printed" out_has "^warning  *disk sda  *disk-cache  *<driver cache='none'/>$"
ok "advise --xml --topology: fits one node, no cells, nothing skipped" sh -c "! grep -q 'numa-cells\|not checked' '$TMP/out'"
run --json advise --xml "$FIXTURES/advise/golden/big1.xml" --topology "$TOPOLOGIES/2s-xeon-platinum8168-skylake-smt.xml"
ok "advise --xml --topology: a 2-node placement, one cell per node" json_is \
        '[f["message"].split("(")[1].split(")")[0] for f in d["findings"] if f["id"] == "numa-cells"]' \
        "['vCPUs 0-15 and 32G on host node 0, vCPUs 16-31 and 32G on host node 1']"
run advise --xml "$TMP/nosuch.xml"
ok "advise --xml of a missing file: exit 1" rc_is 1
ok "advise --xml of a missing file: says so" err_has "nosuch.xml: cannot read: No such file"
run advise --xml "$FIXTURES/advise/garbage.xml" --config "$TMP/empty.conf"
ok "advise --xml of garbage: exit 1, why" sh -c "[ $rc -eq 1 ] && grep -q 'not well-formed XML' '$TMP/err'"

start_kvmtuned "$TMP/s.sock" "$TMP/kvmtuned.log" \
        --topology "$TOPOLOGIES/1s-xeon-silver4215-cascadelake-smt-small.xml"
ok "kvmtuned listening" test -S "$TMP/s.sock"

run --json advise test
ok "advise test: exit 0" rc_is 0
ok "advise test: the answer's shape" json_is \
        'sorted(d) + sorted(d["findings"][0])' \
        "['applied', 'counts', 'findings', 'name', 'policy', 'applied', 'fix', 'id', 'message', 'severity', 'source', 'target']"
ok "advise test: disk findings, nothing applied" json_is \
        '[(f["id"], f["target"], f["applied"]) for f in d["findings"]] + [d["applied"]]' \
        "[('disk-cache', 'disk vda', False), ('disk-iothread', 'disk vda', False), 0]"
run advise test
ok "advise test: table header" out_has "^SEVERITY  *TARGET  *FINDING  *FIX$"
ok "advise test: a row" out_has "^warning  *disk vda  *disk-cache  *<driver cache='none'/>$"
ok "advise test: why, with the measured effect" out_has "disk vda disk-cache: .*measured"
run advise --all
ok "advise --all: exit 0" rc_is 0
ok "advise --all: one line per domain" out_has "^test  *2  *0  *shared/defaults$"
ok "advise --all: the total" out_has "^total: 1 domains, 2 warnings, 0 info$"
run --json advise --all
ok "advise --all --json: the audits and the total" json_is \
        '([x["name"] for x in d["domains"]], d["total"])' \
        "(['test'], {'domains': 1, 'warning': 2, 'info': 0, 'failed': 0})"
run advise nosuch
ok "advise of an unknown domain: exit 1" rc_is 1
ok "advise of an unknown domain: named" err_has "no domain 'nosuch'"

# ---- the guest NUMA view of the daemon's own placement --------------------------
FIRST_PID=$DAEMON_PID
printf '[host]\nreserved_cpus =\n[domain "test"]\ncpu = dedicated\nnuma = strict\n' >"$TMP/numa.conf"
KVMTUNED_CONF="$TMP/numa.conf" start_kvmtuned "$TMP/numa.sock" "$TMP/numa.log" \
        --topology "$FIXTURES/advise-hosts/3node-1pu.xml"
CTL_SOCKET="$TMP/numa.sock"
run --json advise test
ok "advise on 3 one-PU nodes: one guest cell per host node the engine splits it over" json_is \
        '[f["message"].split("(")[1].split(")")[0] for f in d["findings"] if f["id"] == "numa-cells"]' \
        "['vCPUs 0 and 4G on host node 0, vCPUs 1 and 4G on host node 1']"
if [ "$(id -u)" -eq 0 ]; then
        run --json advise test --apply
        ok "advise --apply: the cells written" json_is \
                '[f["applied"] for f in d["findings"] if f["id"] == "numa-cells"]' "[True]"
        run --json advise test
        ok "advise after --apply: the cells match the placement" json_is \
                '[f["id"] for f in d["findings"] if f["id"] == "numa-cells"]' "[]"
fi
stop_daemon
DAEMON_PID=$FIRST_PID
CTL_SOCKET="$TMP/s.sock"

if [ "$(id -u)" -ne 0 ]; then
        run advise test --apply
        ok "advise --apply as a user: exit 1" rc_is 1
        ok "advise --apply as a user: refused" err_has "ermission"
        echo "1..$n"
        [ "$failed" -eq 0 ]
        exit
fi
run advise test --apply
ok "advise --apply: exit 0" rc_is 0
ok "advise --apply: APPLIED column" out_has "^warning  *disk vda  *disk-cache  *<driver cache='none'/>  *yes$"
ok "advise --apply: note" out_has "applied 2 safe fixes to the persistent definition; applies at the next guest start"
run --json advise test
ok "advise after --apply: the definition changed, nothing left" json_is 'len(d["findings"])' 0
run advise test
ok "advise after --apply: says so" out_has "^test: nothing to advise$"
run --json advise test --apply
ok "advise --apply again: nothing applied, no note" json_is '(d["applied"], "note" in d)' "(0, False)"

echo "1..$n"
[ "$failed" -eq 0 ]
