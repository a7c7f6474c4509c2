#!/bin/sh
# Odd domain names, through the libvirt hook and the event path: a comma
# (QEMU's command line doubles it: "guest=a,,b"), the XML metacharacters
# ' " & < > (libvirt 9.0 writes the pid file under the XML-escaped name), a
# space, shell syntax and non-ASCII. For each, a dedicated guest must be placed
# by the started hook (not left to the event path), its threads must have the
# PUs kvmtunectl reports (/proc), and the release hook must free them. A hook
# request naming another domain's QEMU pid is refused and moves nothing.
. "$(dirname "$0")/lib.sh"

require_env
[ -x "$BUILDDIR/hook/kvmtuned" ] || skip_all "$BUILDDIR/hook/kvmtuned is not built"

T_MANAGED='kvmtuned-test-nm-*'
H_PATTERN=$T_MANAGED
. "$(dirname "$0")/hook-lib.sh"
names_cleanup() {
        stop_daemon
        cleanup_managed
        hooks_cleanup
}
trap names_cleanup EXIT

NAMES="kvmtuned-test-nm-a,b
kvmtuned-test-nm-q'x
kvmtuned-test-nm-d\"x
kvmtuned-test-nm-a&b
kvmtuned-test-nm-l<x>
kvmtuned-test-nm-sp ace
kvmtuned-test-nm-a,,b;\$(true)\`x\`
kvmtuned-test-nm-äöü-日本"
DEDICATED='cpu="dedicated" emulator="share" iothreads="shared" numa="none"'

# hook_log NAME TEXT: the daemon logged "NAME: TEXT" (fixed strings).
hook_log() {
        grep -qF -- "$1: $2" "$T_LOG"
}

hooks_install
write_config
start_daemon || { ok 1 "kvmtuned starts"; done_testing; }

echo "$NAMES" | while IFS= read -r n; do
        domain_xml "$n" 1 0 "$DEDICATED" > "$T_TMP/dom.xml"
        $VIRSH define "$T_TMP/dom.xml" >/dev/null
        ok $? "'$n' is defined"
        start_domain "$n"
        ok $? "'$n' starts with the hook installed"
        wait_state "$n" tuned
        is "$(domain_state "$n")" tuned "'$n' is tuned"
        hook_log "$n" "tuned by the started hook"
        ok $? "'$n' was placed by the started hook, not left to the event path"
        check_affinity "$n"
        is "$(pu_owners | N="$n" awk 'substr($0, index($0, " ") + 1) == ENVIRON["N"]' | wc -l)" 1 \
                "'$n' holds its PU while it runs"
        $VIRSH destroy "$n" >/dev/null
        wait_for 20 sh -c "! '$BUILDDIR/cli/kvmtunectl' --socket '$T_SOCK' show \"\$1\" >/dev/null 2>&1" sh "$n"
        ok $? "'$n' is gone from the daemon once stopped"
        # The release hook and libvirt's stopped event race: whichever comes first
        # frees the PU. The hook must be answered for this name either way, and no
        # PU may stay held by it.
        hook_log "$n" "stopped (hook), released its PUs" || hook_log "$n" "release hook answered"
        ok $? "'$n': the release hook was answered for it"
        is "$(pu_owners | N="$n" awk 'substr($0, index($0, " ") + 1) == ENVIRON["N"]' | wc -l)" 0 \
                "'$n': no PU is held by it once stopped"
        $VIRSH undefine "$n" >/dev/null
        echo "$T_N $T_FAILED" > "$T_TMP/count"
done
read -r T_N T_FAILED < "$T_TMP/count"

# A hook request for one domain with another domain's QEMU pid: refused, and
# that QEMU's threads stay where they were.
A=kvmtuned-test-nm-a,b
B="kvmtuned-test-nm-q'x"
domain_xml "$A" 1 0 "$DEDICATED" > "$T_TMP/a.xml"
domain_xml "$B" 1 0 > "$T_TMP/b.xml"
$VIRSH define "$T_TMP/a.xml" >/dev/null && $VIRSH define "$T_TMP/b.xml" >/dev/null
start_domain "$B" && wait_state "$B" shared
before=$(domain_threads "$B")
a_xml=$($VIRSH dumpxml "$A")
reply=$(jq -cn --arg xml "$a_xml" --arg name "$A" --argjson pid "$(domain_pid "$B")" \
        '{method: "kvmtune.v1.Hook", params: {stage: "started", name: $name, pid: $pid, xml: $xml}}' |
        "$SRCDIR/tests/integration/ctl-raw" "$T_SOCK" send)
case "$reply" in
*"is not the QEMU of domain"*) ok 0 "a hook request with another domain's QEMU pid is refused" ;;
*) ok 1 "a hook request with another domain's QEMU pid is refused"; diag "reply: $reply" ;;
esac
is "$(domain_threads "$B")" "$before" "... and that QEMU's threads did not move"
is "$(show "$A" .state)" "" "... and the stopped domain was not placed"

done_testing
