#!/bin/sh
# kvmtunectl advise end to end against the real kvmtuned on libvirt's
# in-process test driver: its built-in domain "test" has a virtio disk with no
# <driver>, so the audit finds disk-cache and disk-iothread; --apply (root)
# defines the tuned XML and the next audit finds nothing. TAP output.

TEST_NAME=test-advise
. "$(dirname "$0")/cli-lib.sh"
CTL_SOCKET="$TMP/s.sock"

run advise
ok "advise without DOMAIN: exit 2" rc_is 2
run list --apply
ok "--apply on another command: exit 2" rc_is 2
ok "--apply on another command: says so" err_has "only applies to advise"

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
run advise nosuch
ok "advise of an unknown domain: exit 1" rc_is 1
ok "advise of an unknown domain: named" err_has "no domain 'nosuch'"

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
