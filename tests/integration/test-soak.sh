#!/bin/bash
# The short soak (the long one is bench/soak.sh): 4 TCG guests through
# SOAK_CYCLES (60) seeded random start / destroy / policy-change cycles, after
# a 10-cycle warm-up. With the guests still running: kvmtuned lists exactly
# the guests libvirt runs, every placed guest's threads are where kvmtunectl
# says and no PU is in two dedicated guests' vCPU affinity (/proc). With every
# guest stopped, compared with the same after the warm-up: no file descriptor
# leaked, RSS grew by less than 2 MiB, no PU is held and the shared pool is
# every PU again.
. "$(dirname "$0")/lib.sh"

require_env
. "$(dirname "$0")/soak-lib.sh"
trap soak_cleanup EXIT
CYCLES=${SOAK_CYCLES:-60}

soak_setup || { ok 1 "kvmtuned starts"; done_testing; }
soak_cycles 10 "$SOAK_SEED"
soak_stop_all
fds0=$(soak_fds)
rss0=$(soak_rss_kib)
t0=$(date +%s)
soak_cycles "$CYCLES" "$((SOAK_SEED + 1))"
diag "$CYCLES cycles in $(( $(date +%s) - t0 )) s: $SOAK_STARTS starts, $SOAK_STOPS stops," \
        "$SOAK_POLICIES policy changes, $SOAK_FAILED_OPS refused by libvirt; $(soak_running | wc -l) running"

wait_for 30 soak_settled
diag "kvmtuned's states now: $(ctl --json status | jq -c .domains)"
ok $? "after $CYCLES cycles kvmtuned lists exactly the guests libvirt runs"
is "$(soak_mismatches)" 0 "every placed guest's threads are where kvmtunectl says (/proc)"
check_proc_disjoint "no PU is in the vCPU affinity of two dedicated guests (/proc)" $(soak_tuned)

soak_stop_all
ok $? "every guest stopped: kvmtuned counts no domain"
fds1=$(soak_fds)
rss1=$(soak_rss_kib)
diag "kvmtuned: $fds0 -> $fds1 open fds, VmRSS $rss0 -> $rss1 KiB"
is "$fds1" "$fds0" "no file descriptor leaked"
ok "$([ $((rss1 - rss0)) -lt 2048 ] && echo 0 || echo 1)" "RSS grew by less than 2 MiB ($((rss1 - rss0)) KiB)"
is "$(pu_owners)" "" "no PU is held"
is "$(ctl --json status | jq -c .pools.shared)" "[$(cpu_list_expand "$(online_cpus)" | tr ' ' ',')]" \
        "the shared pool is every PU again"
ok "$(kill -0 "$T_DAEMON_PID" 2>/dev/null && echo 0 || echo 1)" "kvmtuned still runs"

done_testing
