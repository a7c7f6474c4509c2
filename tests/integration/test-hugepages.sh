#!/bin/sh
# Hugepages on this machine, real 2 MiB pages: reserve a pool through
# `kvmtunectl hugepages reserve`, see `kvmtunectl --json hugepages` agree with
# /sys/devices/system/node/node0/hugepages/hugepages-2048kB, start a
# hugepage-backed TCG guest and see the pool's free count drop by its pages
# and kvmtunectl name it as their user; stop it and see them come back. A
# guest that asks for more 2M pages than are free is left unplaced with a
# reason naming the node, the size and what is free; a guest holding most of
# the pool is placed although the kernel counts its pages as taken.
#
# Puts back what it changes, also on failure: nr_hugepages of every node, a
# hugetlbfs mount it made at /dev/hugepages (libvirtd is restarted after the
# mount so it uses it, and again after the unmount).
. "$(dirname "$0")/lib.sh"

require_env
HP_SYS=/sys/devices/system/node
HP_DIR=$HP_SYS/node0/hugepages/hugepages-2048kB
[ -w "$HP_DIR/nr_hugepages" ] || skip_all "no writable 2 MiB pool on node 0 ($HP_DIR)"

A=kvmtuned-test-hp-guest        # <memoryBacking><hugepages/>, 64 MiB: 32 pages
B=kvmtuned-test-hp-big          # policy hugepages=2M, 256 MiB: more than is free
C=kvmtuned-test-hp-most         # <memoryBacking><hugepages/>, 96 MiB: 48 of 64 pages
T_MANAGED='kvmtuned-test-hp-*'

# ---- what to put back ---------------------------------------------------------

HP_SAVED=""                     # "NODE_DIR COUNT" lines
for f in $HP_SYS/node*/hugepages/hugepages-2048kB/nr_hugepages; do
        HP_SAVED="$HP_SAVED$f $(cat "$f")
"
done
HP_MOUNTED=0
HP_RESTARTED=0

hp_cleanup() {
        t_cleanup               # daemon stopped, domains destroyed: pages free again
        printf '%s' "$HP_SAVED" | while read -r f count; do
                [ -n "$f" ] && echo "$count" > "$f" 2>/dev/null
        done
        if [ "$HP_MOUNTED" = 1 ]; then
                umount /dev/hugepages 2>/dev/null
                rmdir /dev/hugepages 2>/dev/null
        fi
        # A libvirtd of the host that saw our mount forgets it again; one this
        # test started was stopped by t_cleanup.
        if [ "$HP_RESTARTED" = 1 ] && [ "$T_STARTED_LIBVIRTD" = 0 ]; then
                restart_libvirtd
        fi
}
trap hp_cleanup EXIT

if ! awk '$3 == "hugetlbfs" && $2 == "/dev/hugepages" { f = 1 } END { exit !f }' /proc/mounts; then
        mkdir -p /dev/hugepages
        if mount -t hugetlbfs hugetlbfs /dev/hugepages; then
                HP_MOUNTED=1
        else
                echo "Bail out! cannot mount hugetlbfs at /dev/hugepages"
                exit 1
        fi
        HP_RESTARTED=1
        restart_libvirtd || { echo "Bail out! libvirtd does not come back after the mount"; exit 1; }
fi
ok 0 "hugetlbfs mounted at /dev/hugepages"

# ---- helpers ------------------------------------------------------------------

sys_nr() { cat "$HP_DIR/nr_hugepages"; }
sys_free() { cat "$HP_DIR/free_hugepages"; }
# ctl_pool FIELD: node 0, 2 MiB, from kvmtunectl --json hugepages
ctl_pool() {
        ctl --json hugepages | jq -r ".nodes[] | select(.node == 0) | .pages[] | select(.page_kib == 2048) | .$1"
}
# ctl_used_by NAME: pages of node 0's 2 MiB pool kvmtunectl says NAME holds
ctl_used_by() {
        ctl --json hugepages | jq -r "[.nodes[] | select(.node == 0) | .pages[] | select(.page_kib == 2048)
                | .domains[] | select(.name == \"$1\") | .pages] | add // 0"
}

# hugepage_domain NAME MIB BACKED POLICY
hugepage_domain() {
        domain_xml "$1" 1 0 "$4" | sed "s|<memory unit='MiB'>64</memory>|<memory unit='MiB'>$2</memory>|" |
                if [ "$3" = backed ]; then
                        sed "s|</memory>|</memory><memoryBacking><hugepages/></memoryBacking>|"
                else
                        cat
                fi > "$T_TMP/$1.xml"
        T_DOMAINS="$T_DOMAINS $1"
        $VIRSH define "$T_TMP/$1.xml" >/dev/null
}

write_config
start_daemon || { ok 1 "kvmtuned starts"; done_testing; }
ok 0 "kvmtuned starts and answers on its socket"

# ---- reserve through the CLI --------------------------------------------------

echo 0 > "$HP_DIR/nr_hugepages"
out=$(ctl hugepages reserve --size 2M --node 0 --count 64 2>&1)
ok $? "kvmtunectl hugepages reserve --size 2M --node 0 --count 64 exits 0 ($out)"
is "$out" "node 0 2M: 64 requested, 64 reserved" "reserve says what it got"
is "$(sys_nr)" 64 "sysfs nr_hugepages is 64"
is "$(ctl_pool total)" "$(sys_nr)" "kvmtunectl hugepages total agrees with nr_hugepages"
is "$(ctl_pool free)" "$(sys_free)" "kvmtunectl hugepages free agrees with free_hugepages"
is "$(ctl_pool reserved)" 0 "no domain holds pages yet"
out=$(ctl hugepages reserve --size 2M --node 0 --count 64 2>&1)
is "$out" "node 0 2M: 64 requested, 64 reserved (unchanged)" "reserve again: idempotent"
ctl hugepages reserve --size 2M --node 99 --count 1 >/dev/null 2>"$T_TMP/err"
ok $([ $? -eq 1 ] && grep -q "no NUMA node 99" "$T_TMP/err"; echo $?) "reserve on a node the host lacks: exit 1, named"
out=$(ctl hugepages | awk '$1 == 0 && $2 == "2M"')
ok $(echo "$out" | grep -q "^0  *2M  *64  *64  *0  *-$"; echo $?) "kvmtunectl hugepages table row ($out)"

# ---- more pages than are free: refused, and why -------------------------------
# (A dedicated, strict NUMA policy: a shared domain whose memory does not fit
# is left unbound instead.)

out=$(ctl --json plan --vcpus 1 --memory 256M --cpu dedicated --numa strict --hugepages 2M)
ok $([ $? -eq 1 ]; echo $?) "plan for 128 pages with 64 free: refused (exit 1)"
reason=$(echo "$out" | jq -r .refused)
ok $(echo "$reason" | grep -q "needs 256 MiB of 2M pages; free: node 0: 64 pages; short by 64 pages on node 0"; echo $?) \
        "plan refusal names size, node and free pages: $reason"

hugepage_domain $B 256 policy 'cpu="dedicated" numa="strict" hugepages="2M"'
start_domain $B
wait_state $B unplaced
is "$(domain_state $B)" unplaced "$B (policy hugepages=2M, 128 pages, 64 free) is unplaced"
reason=$(show $B .reason)
ok $(echo "$reason" | grep -q "needs 256 MiB of 2M pages; free: node 0: 64 pages; short by 64 pages on node 0"; echo $?) \
        "$B says why, naming size, node and free pages: $reason"
is "$(ctl_used_by $B)" 0 "$B holds no pages in kvmtunectl hugepages"
$VIRSH destroy $B >/dev/null
wait_for 10 sh -c "[ \"\$('$BUILDDIR/cli/kvmtunectl' --socket '$T_SOCK' show $B 2>/dev/null)\" = '' ]"

# ---- a hugepage-backed guest --------------------------------------------------

free0=$(sys_free)
hugepage_domain $A 64 backed 'cpu="dedicated"'
start_domain $A
wait_state $A tuned
is "$(domain_state $A)" tuned "$A (dedicated, hugepage-backed) is tuned"
is "$(show $A .memory.page_kib)" 2048 "$A memory is in 2M pages"
wait_for 10 sh -c "[ \$(cat $HP_DIR/free_hugepages) -le $((free0 - 32)) ]"
is "$(sys_free)" "$((free0 - 32))" "the kernel's free count dropped by 32 pages"
is "$(ctl_pool free)" "$(sys_free)" "kvmtunectl hugepages free agrees with free_hugepages"
is "$(ctl_pool total)" "$(sys_nr)" "kvmtunectl hugepages total agrees with nr_hugepages"
is "$(ctl_used_by $A)" 32 "kvmtunectl hugepages: 32 pages used by $A"
is "$(ctl_pool reserved)" 32 "reserved by domains: 32"
out=$(ctl hugepages | awk '$1 == 0 && $2 == "2M"')
ok $(echo "$out" | grep -q " $A:32$"; echo $?) "kvmtunectl hugepages table names $A ($out)"

# ---- stop: released -----------------------------------------------------------

$VIRSH destroy $A >/dev/null
wait_for 10 sh -c "[ \$(cat $HP_DIR/free_hugepages) -eq $free0 ]"
is "$(sys_free)" "$free0" "stopped: the kernel's free count is back"
wait_for 10 sh -c "[ \"\$('$BUILDDIR/cli/kvmtunectl' --socket '$T_SOCK' show $A 2>/dev/null)\" = '' ]"
is "$(ctl_used_by $A)" 0 "stopped: kvmtunectl hugepages shows 0 pages used by $A"
is "$(ctl_pool reserved)" 0 "stopped: nothing reserved by domains"
is "$(ctl_pool free)" "$(sys_free)" "stopped: kvmtunectl hugepages free agrees with free_hugepages"

# ---- a guest holding most of the pool ------------------------------------------
# When the daemon places it, its QEMU already holds 48 of the 64 pages and the
# kernel says 16 free: its own pages count as free for it.

hugepage_domain $C 96 backed 'cpu="dedicated" numa="strict"'
start_domain $C
wait_state $C tuned
is "$(domain_state $C)" tuned "$C (48 of 64 pages, placed after its QEMU took them) is tuned"
is "$(sys_free)" "$((free0 - 48))" "the kernel's free count dropped by 48 pages"
is "$(ctl_used_by $C)" 48 "kvmtunectl hugepages: 48 pages used by $C"
is "$(ctl_pool free)" "$(sys_free)" "kvmtunectl hugepages free agrees with free_hugepages"
$VIRSH destroy $C >/dev/null
wait_for 10 sh -c "[ \$(cat $HP_DIR/free_hugepages) -eq $free0 ]"
wait_for 10 sh -c "[ \"\$('$BUILDDIR/cli/kvmtunectl' --socket '$T_SOCK' show $C 2>/dev/null)\" = '' ]"
is "$(ctl_pool reserved)" 0 "$C stopped: nothing reserved by domains"

# ---- shrink back through the CLI ---------------------------------------------

out=$(ctl hugepages reserve --size 2M --node 0 --count 0 2>&1)
is "$out" "node 0 2M: 0 requested, 0 reserved" "reserve --count 0 empties the pool"
is "$(ctl_pool total)" 0 "kvmtunectl hugepages total is 0 again"

stop_daemon
ok $? "kvmtuned stops cleanly"
done_testing
