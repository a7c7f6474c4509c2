#!/bin/sh
# A guest whose policy metadata is invalid: kvmtuned marks it failed, says
# why, reports no policy (not the defaults it never had) and leaves its threads
# alone; a valid guest beside it is unaffected. The daemon talks to libvirt's
# test driver loaded from a node file with both guests. TAP output.

TEST_NAME=test-bad-policy
. "$(dirname "$0")/cli-lib.sh"
CTL_SOCKET="$TMP/sock"

cat > "$TMP/node.xml" <<'XML'
<node>
  <domain type='test'>
    <name>turbo</name>
    <uuid>33333333-4444-5555-6666-777777777777</uuid>
    <metadata>
      <k:policy xmlns:k="urn:kvmtuned:tuning:1" cpu="dedicated" threads="sometimes"/>
    </metadata>
    <memory unit='KiB'>1048576</memory>
    <vcpu placement='static'>2</vcpu>
    <os><type>hvm</type></os>
  </domain>
  <domain type='test'>
    <name>good</name>
    <uuid>33333333-4444-5555-6666-777777777778</uuid>
    <metadata>
      <k:policy xmlns:k="urn:kvmtuned:tuning:1" cpu="shared" numa="none"/>
    </metadata>
    <memory unit='KiB'>1048576</memory>
    <vcpu placement='static'>2</vcpu>
    <os><type>hvm</type></os>
  </domain>
</node>
XML

start_kvmtuned "$TMP/sock" "$TMP/log" --connect "test://$TMP/node.xml"
run --json show turbo
ok "show turbo: exit 0" rc_is 0
ok "... failed" json_is 'd["state"]' failed
ok "... saying why" json_is 'd["reason"]' 'domain XML: policy: invalid value "sometimes" for attribute threads'
ok "... with no policy, not one it never had" json_is 'd["policy"]' None
ok "... and no CPUs given to its threads" json_is 'd["emulator"]["cpus"] + [c for v in d["vcpus"] for c in v["cpus"]]' '[]'
run show turbo
ok "show turbo (table): no policy line" sh -c "! grep -q '^policy:' '$TMP/out'"
run list
ok "list: turbo's policy is -" out_has '^turbo  *failed  *-  '
ok "list: good keeps its own policy" out_has '^good  .*shared/metadata'
ok "the log says it is left alone" grep -q 'turbo: domain XML: policy: invalid value "sometimes" for attribute threads, leaving it alone' "$TMP/log"
ok "its threads are not moved to the shared pool" sh -c "! grep -q 'turbo: the shared pool changed' '$TMP/log'"
stop_daemon
[ $failed -eq 0 ] || sed 's/^/# log: /' "$TMP/log"
echo "1..$n"
[ $failed -eq 0 ]
