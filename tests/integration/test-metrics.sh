#!/bin/sh
# kvmtunectl metrics against a real libvirtd: the started event of a domain is
# observed in the event-to-pinned histogram, placements and unplaced attempts
# are counted, the node gauges add up, and a libvirtd restart counts as one
# reconnect.
. "$(dirname "$0")/lib.sh"

require_env

A=kvmtuned-test-mx-ded         # metadata: dedicated
B=kvmtuned-test-mx-shr         # config glob: shared
D=kvmtuned-test-mx-late        # metadata: dedicated, no room left

T_MANAGED='kvmtuned-test-mx-*'
write_config
define_domain $A 1 0 'cpu="dedicated" emulator="share"'
define_domain $B 1 0
define_domain $D 1 0 'cpu="dedicated" emulator="share"'
start_daemon || { ok 1 "kvmtuned starts"; done_testing; }
ok 0 "kvmtuned starts and answers on its socket"

metric() {      # metric 'NAME{LABELS}': its value, empty when absent
        ctl metrics | awk -v k="$1" '$1 == k { print $2 }'
}
metric_is() {   # metric_is NAME VALUE: polls up to 20 s
        wait_for 20 sh -c "[ \"\$('$BUILDDIR/cli/kvmtunectl' --socket '$T_SOCK' metrics |
                awk -v k='$1' '\$1 == k { print \$2 }')\" = '$2' ]"
}

is "$(metric kvmtuned_libvirt_connected)" 1 "connected to libvirt"
events0=$(metric 'kvmtuned_pin_latency_seconds_count{path="event"}')
placed0=$(metric kvmtuned_placements_total)

start_domain $A && start_domain $B
wait_state $A tuned
wait_state $B shared
is "$(domain_state $A)" tuned "$A is tuned"
events=$(metric 'kvmtuned_pin_latency_seconds_count{path="event"}')
ok "$([ "$events" -ge $((events0 + 2)) ] && echo 0 || echo 1)" \
        "both started events observed in the event histogram ($events0 -> $events)"
inf=$(metric 'kvmtuned_pin_latency_seconds_bucket{path="event",le="+Inf"}')
is "$inf" "$events" "+Inf bucket equals _count"
sum=$(metric 'kvmtuned_pin_latency_seconds_sum{path="event"}')
ok "$(awk -v s="$sum" -v n="$events" 'BEGIN { exit !(s > 0 && s / n < 2.5) }'; echo $?)" \
        "event-to-pinned latency measured: $sum s over $events events"
placed=$(metric kvmtuned_placements_total)
ok "$([ "$placed" -ge $((placed0 + 2)) ] && echo 0 || echo 1)" "placements counted ($placed0 -> $placed)"
is "$(metric 'kvmtuned_domains{state="tuned"}')" 1 "one tuned domain"
is "$(metric 'kvmtuned_domains{state="shared"}')" 1 "one shared domain"
node0() { metric "$1{node=\"0\"}"; }
used=$(node0 kvmtuned_node_dedicated_pus_used)
ok "$([ "$used" -ge 1 ] && echo 0 || echo 1)" "node 0: $A's dedicated PU is used ($used)"
is "$((used + $(node0 kvmtuned_node_shared_pus) + $(node0 kvmtuned_node_reserved_pus)))" \
        "$(( $(node0 kvmtuned_node_dedicated_pus) + $(node0 kvmtuned_node_reserved_pus) ))" \
        "node 0: used + shared + reserved = every online PU"
is "$(show $A '.vcpus[0].cpus | length')" 1 "$A has its own PU (as the gauges say)"

unplaced0=$(metric kvmtuned_unplaced_total)
start_domain $D
wait_state $D unplaced
is "$(domain_state $D)" unplaced "$D is unplaced: no room"
ok "$([ "$(metric kvmtuned_unplaced_total)" -gt "$unplaced0" ] && echo 0 || echo 1)" "the refusal is counted"
is "$(metric 'kvmtuned_domains{state="unplaced"}')" 1 "one unplaced domain"

is "$(metric kvmtuned_libvirt_reconnects_total)" 0 "no reconnect yet"
restart_libvirtd
metric_is kvmtuned_libvirt_reconnects_total 1
is "$(metric kvmtuned_libvirt_reconnects_total)" 1 "a libvirtd restart is one reconnect"
is "$(metric kvmtuned_libvirt_connected)" 1 "connected again"

done_testing
