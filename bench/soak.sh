#!/bin/bash
# The soak: GUESTS (4) small TCG guests through CYCLES (500) seeded random
# cycles of start, destroy and policy change (a random cpu, emulator,
# iothreads, numa and threads policy through `virsh metadata`, live and
# persistent when the guest runs), after a 10-cycle warm-up, against a real
# libvirtd with kvmtuned watching. Prints the figures: cycles, operations and
# time; kvmtuned's open fds and VmRSS with every guest stopped after the
# warm-up and after the cycles; how many guests' threads disagreed with
# kvmtunectl (/proc) before the final stop; and the allocation table at the
# end (PUs held, domains counted, the shared pool). Never pass/fail; the short
# run that passes or fails is tests/integration/test-soak.sh.
#
# usage: [BUILDDIR=DIR] bench/soak.sh [CYCLES [SEED]]
# Needs root, libvirtd, QEMU, jq. Holds lib.sh's lock; defines kvmtuned-test-sk-*
# guests, destroyed and undefined at exit. About 1 s per cycle here.
here=$(cd "$(dirname "$0")" && pwd)
SRCDIR=${SRCDIR:-$(cd "$here/.." && pwd)}
BUILDDIR=${BUILDDIR:-$SRCDIR/build/default}
export SRCDIR BUILDDIR
CYCLES=${1:-500}
SOAK_SEED=${2:-1}

. "$SRCDIR/tests/integration/lib.sh"
require_env
. "$SRCDIR/tests/integration/soak-lib.sh"
trap soak_cleanup EXIT

soak_setup || exit 1
soak_cycles 10 "$SOAK_SEED"
soak_stop_all
fds0=$(soak_fds)
rss0=$(soak_rss_kib)
t0=$(date +%s)
SOAK_STARTS=0 SOAK_STOPS=0 SOAK_POLICIES=0 SOAK_FAILED_OPS=0
soak_cycles "$CYCLES" "$((SOAK_SEED + 1))"
t1=$(date +%s)
wait_for 30 soak_settled && settled=yes || settled=no
running=$(soak_running | wc -l)
states=$(ctl --json status | jq -c .domains)
mism=$(soak_mismatches)
soak_stop_all
fds1=$(soak_fds)
rss1=$(soak_rss_kib)

printf 'soak: %d guests, seed %d, %d cycles in %d s (%.2f s per cycle)\n' "$SOAK_GUESTS" "$SOAK_SEED" \
        "$CYCLES" $((t1 - t0)) "$(awk -v t=$((t1 - t0)) -v n="$CYCLES" 'BEGIN { print t / n }')"
printf '  operations: %d starts, %d destroys, %d policy changes, %d refused by libvirt\n' \
        "$SOAK_STARTS" "$SOAK_STOPS" "$SOAK_POLICIES" "$SOAK_FAILED_OPS"
printf '  at the end: %d running, kvmtuned lists exactly those: %s, threads not where kvmtunectl says: %d\n' \
        "$running" "$settled" "$mism"
printf '  states then: %s\n' "$states"
printf '  kvmtuned open fds (all guests stopped): %d after warm-up, %d after the cycles\n' "$fds0" "$fds1"
printf '  kvmtuned VmRSS (all guests stopped):    %d KiB after warm-up, %d KiB after the cycles (%+d KiB)\n' \
        "$rss0" "$rss1" $((rss1 - rss0))
printf '  allocation table at the end: %d PUs held, %d domains counted, shared pool %s\n' \
        "$(pu_owners | wc -l)" "$(ctl --json status | jq '.domains | [.[]] | add')" \
        "$(ctl --json status | jq -c .pools.shared)"
