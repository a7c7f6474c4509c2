#!/bin/sh
# Placement against a real libvirtd: dedicated, shared and unmanaged policies
# from metadata and from the config; /proc agrees with kvmtunectl show; stop
# releases; a metadata change re-places; no room leaves a domain unplaced on
# the shared pool until PUs free up.
. "$(dirname "$0")/lib.sh"

require_env

A=kvmtuned-test-pl-ded         # metadata: dedicated, strict NUMA (cgroup path)
B=kvmtuned-test-pl-shr         # no policy: [domain "kvmtuned-test-pl-*"] cpu = shared
C=kvmtuned-test-pl-none        # metadata: cpu = none
D=kvmtuned-test-pl-cfg-db      # [domain "kvmtuned-test-pl-cfg-*"]: dedicated

T_MANAGED='kvmtuned-test-pl-*'
write_config '[domain "kvmtuned-test-pl-cfg-*"]
cpu = dedicated
emulator = share'
define_domain $A 1 1 'cpu="dedicated" emulator="share" iothreads="shared" numa="strict"'
define_domain $B 1 1
define_domain $C 1 0 'cpu="none"'
define_domain $D 1 1
start_daemon || { ok 1 "kvmtuned starts"; done_testing; }
ok 0 "kvmtuned starts and answers on its socket"

start_domain $A && start_domain $B && start_domain $C
wait_state $A tuned
is "$(domain_state $A)" tuned "$A (metadata cpu=dedicated) is tuned"
wait_state $B shared
is "$(domain_state $B)" shared "$B (config glob) is shared"
wait_state $C ignored
is "$(domain_state $C)" ignored "$C (metadata cpu=none) is ignored"
is "$(show $A .policy.source)" metadata "$A policy comes from its metadata"
is "$(show $B .policy.source)" config "$B policy comes from its [domain] section"
check_affinity $A
check_affinity $B
check_exclusive $A $B
is "$(domain_threads $C | awk '{print $3}' | sort -u)" "$(online_cpus)" "$C is left alone (floats over every CPU)"
is "$(show $A '.vcpus[0].cpus | length')" 1 "$A vCPU 0 has exactly one PU"
is "$(ctl --json status | jq -c .domains)" '{"tuned":1,"shared":1,"ignored":1,"unplaced":0,"failed":0}' \
        "status counts domains by state"
is "$($VIRSH vcpupin $A --live | awk '$1 == "0" {print $2}')" "$(show $A '.vcpus[0].cpus[0]')" \
        "virsh vcpupin agrees with kvmtunectl show"
is "$($VIRSH metadata $A --uri urn:kvmtuned:placement:1 --live | grep -c '<placement')" 1 \
        "$A has its placement record in the live metadata"

# No room: D wants a dedicated PU but the last one is the shared pool.
start_domain $D
wait_state $D unplaced
is "$(domain_state $D)" unplaced "$D (config: dedicated) is unplaced: no room"
ok "$([ -n "$(show $D .reason)" ] && echo 0 || echo 1)" "$D says why: $(show $D .reason)"
is "$(show $D .policy.source)" config "$D policy comes from its [domain] section"
check_affinity $D
check_exclusive $A $B $D

# Stop releases: A's PU goes back, D gets placed.
$VIRSH destroy $A >/dev/null
wait_state $D tuned
is "$(show $A .state)" "" "$A is gone from the daemon once stopped"
is "$(domain_state $D)" tuned "$D is placed once $A released its PU"
check_affinity $D
check_affinity $B
check_exclusive $B $D

# Metadata changes re-place: D to shared (pool grows), then B to dedicated.
$VIRSH metadata $D --uri urn:kvmtuned:tuning:1 --key kvmtune --set '<policy cpu="shared"/>' --live >/dev/null
wait_state $D shared
is "$(domain_state $D)" shared "$D follows its new metadata policy (shared)"
is "$(show $D .policy.source)" metadata "$D policy now comes from its metadata"
check_affinity $B
check_affinity $D
$VIRSH metadata $B --uri urn:kvmtuned:tuning:1 --key kvmtune --set '<policy cpu="dedicated"/>' --live >/dev/null
wait_state $B tuned
is "$(domain_state $B)" tuned "$B follows its new metadata policy (dedicated)"
check_affinity $B
check_affinity $D
check_exclusive $B $D

# Rebalance is root only and re-places; unknown domains are an error.
ctl rebalance $B >/dev/null
is "$?" 0 "kvmtunectl rebalance DOMAIN succeeds"
ctl rebalance kvmtuned-test-nosuch >/dev/null 2>&1
is "$?" 1 "kvmtunectl rebalance of an unknown domain fails with 1"
check_affinity $B

# Reload: a config error is refused and the running config kept.
echo "[bogus]" >> "$T_CONF"
ctl reload >/dev/null 2>&1
is "$?" 1 "reload of an invalid config fails"
is "$(domain_state $B)" tuned "the running configuration is kept"

done_testing
