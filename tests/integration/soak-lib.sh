# The soak, shared by tests/integration/test-soak.sh (a short run that passes
# or fails) and bench/soak.sh (the long run that prints its figures). Sourced
# after lib.sh, by bash. A few TCG guests go through seeded random cycles: each
# cycle picks a guest and starts it, destroys it, or gives it a new random
# policy (live and persistent when it runs, persistent when it does not). The
# figures are taken from /proc and kvmtunectl with every guest stopped: after a
# warm-up (before) and after the cycles (after).

SOAK_PREFIX=kvmtuned-test-sk
SOAK_GUESTS=${SOAK_GUESTS:-4}
SOAK_SEED=${SOAK_SEED:-1}
T_MANAGED="$SOAK_PREFIX-*"
SOAK_STARTS=0
SOAK_STOPS=0
SOAK_POLICIES=0
SOAK_FAILED_OPS=0

soak_cleanup() {
        stop_daemon
        cleanup_managed
        t_cleanup
}

# soak_policy R1 R2 R3 R4 R5: a policy element from five numbers in [0, 1).
soak_policy() {
        awk -v a="$1" -v b="$2" -v c="$3" -v d="$4" -v e="$5" 'BEGIN {
                split("dedicated shared none", cpu); split("share vcpus isolate", emu)
                split("shared emulator dedicated", io); split("none preferred strict", numa)
                split("prefer isolate require", thr)
                printf "<policy cpu=\"%s\" emulator=\"%s\" iothreads=\"%s\" numa=\"%s\" threads=\"%s\"/>\n",
                        cpu[int(a * 3) + 1], emu[int(b * 3) + 1], io[int(c * 3) + 1],
                        numa[int(d * 3) + 1], thr[int(e * 3) + 1] }'
}

soak_setup() {
        local i
        write_config
        for i in $(seq "$SOAK_GUESTS"); do
                define_domain "$SOAK_PREFIX-$i" 1 1
        done
        start_daemon
}

soak_running() {        # the guests libvirt runs, sorted
        $VIRSH list --name | grep "^$SOAK_PREFIX-" | sort
}

soak_known() {          # the guests kvmtuned lists, sorted
        ctl --json list | jq -r '.domains[].name' | grep "^$SOAK_PREFIX-" | sort
}

soak_settled() {
        [ "$(soak_running)" = "$(soak_known)" ]
}

soak_tuned() {          # running guests with a dedicated placement
        local d
        for d in $(soak_running); do
                [ "$(domain_state "$d")" = tuned ] && echo "$d"
        done
}

# soak_cycles N SEED: N seeded random cycles.
soak_cycles() {
        local g r op pol
        awk -v n="$1" -v seed="$2" -v guests="$SOAK_GUESTS" 'BEGIN { srand(seed)
                for (i = 0; i < n; i++)
                        printf "%d %.4f %.4f %.4f %.4f %.4f %.4f\n", int(rand() * guests) + 1,
                                rand(), rand(), rand(), rand(), rand(), rand() }' > "$T_TMP/soak.ops"
        while read -r g r p1 p2 p3 p4 p5; do
                g=$SOAK_PREFIX-$g
                pol=$(soak_policy "$p1" "$p2" "$p3" "$p4" "$p5")
                if [ "$($VIRSH domstate "$g" 2>/dev/null)" = running ]; then
                        op=$(awk -v r="$r" 'BEGIN { print r < 0.5 ? "stop" : "policy-live" }')
                else
                        op=$(awk -v r="$r" 'BEGIN { print r < 0.7 ? "start" : "policy" }')
                fi
                case $op in
                start) $VIRSH start "$g" >/dev/null 2>&1 && SOAK_STARTS=$((SOAK_STARTS + 1)) ||
                        SOAK_FAILED_OPS=$((SOAK_FAILED_OPS + 1)) ;;
                stop) $VIRSH destroy "$g" >/dev/null 2>&1 && SOAK_STOPS=$((SOAK_STOPS + 1)) ||
                        SOAK_FAILED_OPS=$((SOAK_FAILED_OPS + 1)) ;;
                policy*)
                        flags=--config
                        [ $op = policy-live ] && flags="--live --config"
                        $VIRSH metadata "$g" --uri urn:kvmtuned:tuning:1 --key kvmtune --set "$pol" $flags \
                                >/dev/null 2>&1 && SOAK_POLICIES=$((SOAK_POLICIES + 1)) ||
                                SOAK_FAILED_OPS=$((SOAK_FAILED_OPS + 1)) ;;
                esac
        done < "$T_TMP/soak.ops"
}

# Every guest destroyed; waits until kvmtuned counts none.
soak_stop_all() {
        local i
        for i in $(seq "$SOAK_GUESTS"); do
                $VIRSH destroy "$SOAK_PREFIX-$i" >/dev/null 2>&1
        done
        wait_for 30 sh -c "[ \"\$('$BUILDDIR/cli/kvmtunectl' --socket '$T_SOCK' --json status | jq -c '.domains | [.[]] | add')\" = 0 ]"
}

soak_fds() {
        ls /proc/"$T_DAEMON_PID"/fd | wc -l
}

soak_rss_kib() {
        awk '/^VmRSS:/ {print $2}' /proc/"$T_DAEMON_PID"/status
}

# Placed guests whose threads are not where kvmtunectl says (/proc): 0 when all agree.
soak_mismatches() {
        local d n=0
        for d in $(soak_running); do
                case "$(domain_state "$d")" in tuned|shared) ;; *) continue ;; esac
                [ "$(domain_threads "$d")" = "$(reported_threads "$d")" ] || n=$((n + 1))
        done
        echo $n
}
