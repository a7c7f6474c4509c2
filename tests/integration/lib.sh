# Integration test helpers: sourced by tests/integration/test-*.sh.
#
# Runs as root against a real libvirtd + QEMU (TCG is enough). Starts virtlogd
# and libvirtd when they are not running, defines small domains named
# kvmtuned-test-*, starts kvmtuned from $BUILDDIR with a temporary config and
# socket, and puts everything back in an EXIT trap, also on failure: domains it
# defined are destroyed and undefined, daemons it started are stopped.
#
# Truth comes from /proc/PID/task/TID/status (Cpus_allowed_list), compared
# with what `kvmtunectl show --json` reports.

set -u

BUILDDIR=${BUILDDIR:-$(pwd)}
SRCDIR=${SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
URI=qemu:///system
VIRSH="virsh -q -c $URI"
T_TMP=$(mktemp -d /tmp/kvmtuned-it.XXXXXX)
T_SOCK=$T_TMP/kvmtuned.sock
T_CONF=$T_TMP/kvmtuned.conf
T_LOG=$T_TMP/kvmtuned.log
T_DOMAINS=""
T_STARTED_LIBVIRTD=0
T_STARTED_VIRTLOGD=0
T_DAEMON_PID=""
T_N=0
T_FAILED=0
T_START=""

# ---- one integration run at a time --------------------------------------------

# Tests (and benchmarks sourcing this file) share one libvirtd, the qemu hook
# folder and the host's CPUs: two daemons managing the same domains fight over
# their pins. Every user of lib.sh holds this lock for its whole run; the lock
# is released when the process exits (daemons started here do not inherit it).
T_LOCK=${KVMTUNED_TEST_LOCK:-/tmp/kvmtuned-integration.lock}
t_lock() {
        command -v flock >/dev/null || return 0
        exec 9>>"$T_LOCK"
        if ! flock -n 9; then
                echo "# waiting for another kvmtuned integration run to finish ($T_LOCK)"
                flock -w 3600 9 || { echo "Bail out! $T_LOCK is held for over an hour"; exit 1; }
        fi
        T_START=$(date +%s)
}

# ---- TAP ---------------------------------------------------------------------

ok() {          # ok COND_STATUS DESCRIPTION
        T_N=$((T_N + 1))
        if [ "$1" -eq 0 ]; then
                echo "ok $T_N - $2"
        else
                echo "not ok $T_N - $2"
                T_FAILED=$((T_FAILED + 1))
        fi
}

is() {          # is GOT EXPECTED DESCRIPTION
        if [ "$1" = "$2" ]; then
                ok 0 "$3"
        else
                ok 1 "$3"
                echo "#   got:      '$1'"
                echo "#   expected: '$2'"
        fi
}

diag() {
        echo "# $*"
}

skip_all() {
        echo "1..0 # SKIP $*"
        exit 0
}

done_testing() {
        [ -n "$T_START" ] && diag "wall time: $(( $(date +%s) - T_START )) s (the lock held)"
        echo "1..$T_N"
        [ "$T_FAILED" -eq 0 ]
        exit $?
}

# ---- preconditions -----------------------------------------------------------

require_env() {
        [ "$(id -u)" = 0 ] || skip_all "needs root (run: sudo make check-integration)"
        t_lock
        command -v virsh >/dev/null || skip_all "virsh is not installed"
        command -v jq >/dev/null || skip_all "jq is not installed"
        [ -x /usr/sbin/libvirtd ] || skip_all "libvirtd is not installed"
        command -v qemu-system-x86_64 >/dev/null || skip_all "qemu-system-x86_64 is not installed"
        [ -x "$BUILDDIR/daemon/kvmtuned" ] || skip_all "$BUILDDIR/daemon/kvmtuned is not built"
        [ -x "$BUILDDIR/cli/kvmtunectl" ] || skip_all "$BUILDDIR/cli/kvmtunectl is not built"
        start_libvirtd
}

# ---- libvirtd ----------------------------------------------------------------

libvirt_up() {
        $VIRSH list >/dev/null 2>&1
}

wait_for() {    # wait_for SECONDS COMMAND...: polls every 0.2 s
        local deadline=$(( $(date +%s) + $1 ))
        shift
        while ! "$@"; do
                [ "$(date +%s)" -ge "$deadline" ] && return 1
                sleep 0.2
        done
        return 0
}

# This machine image has /dev/kvm as root:root 0600 (no udev), while the QEMU
# capabilities libvirt cached were probed with KVM: libvirt then decides on
# every define/start that its cache is stale and probes QEMU again (30-60 s
# each). Give /dev/kvm the owner and mode Debian's udev rule gives it, and put
# the original back at exit.
T_KVM_MODE=""
fix_kvm_perms() {
        [ -c /dev/kvm ] && getent group kvm >/dev/null || return 0
        [ -n "$T_KVM_MODE" ] && return 0
        T_KVM_MODE=$(stat -c '%U:%G %a' /dev/kvm)
        chgrp kvm /dev/kvm && chmod 0660 /dev/kvm
}
restore_kvm_perms() {
        [ -n "$T_KVM_MODE" ] || return 0
        chown "${T_KVM_MODE% *}" /dev/kvm && chmod "${T_KVM_MODE#* }" /dev/kvm
}

# A kvmtuned already running on the host (a system service, the demo) would
# manage the test's domains too: stop it for the run, start it again at exit.
T_SYSTEM_DAEMON=""
# The kvmtuned serving the system socket (a service or the demo): not the
# daemons other tests start on sockets of their own (unit tests may run
# meanwhile on a developer's machine).
system_daemon_pid() {
        local pid cmd
        for pid in $(pgrep -x kvmtuned); do
                cmd=" $(tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null)"
                case "$cmd" in
                *" --socket /run/kvmtuned/"*) ;;
                *" --socket "*|*" --socket="*) continue ;;
                esac
                echo "$pid"
                return 0
        done
}
stop_system_daemon() {
        local pid
        pid=$(system_daemon_pid)
        [ -n "$pid" ] || return 0
        if [ -d /run/systemd/system ] && systemctl -q is-active kvmtuned 2>/dev/null; then
                T_SYSTEM_DAEMON=systemd
                systemctl stop kvmtuned
                return 0
        fi
        T_SYSTEM_DAEMON=$(tr '\0' ' ' < "/proc/$pid/cmdline")
        kill "$pid"
        wait_for 10 sh -c "! kill -0 $pid 2>/dev/null"
}
restart_system_daemon() {
        case "$T_SYSTEM_DAEMON" in
        "") ;;
        systemd) systemctl start kvmtuned ;;
        *) nohup $T_SYSTEM_DAEMON >>/var/log/kvmtuned-demo.log 2>&1 9>&- & ;;
        esac
}

# stop_pid PID: SIGTERM, then wait for the process to be gone (SIGKILL after
# 30 s). A libvirtd or virtlogd that is still exiting holds its pid file, so a
# new one started too early exits at once.
stop_pid() {
        [ -n "$1" ] || return 0
        kill "$1" 2>/dev/null || return 0
        wait_for 30 sh -c "! kill -0 $1 2>/dev/null" && return 0
        kill -9 "$1" 2>/dev/null
        wait_for 5 sh -c "! kill -0 $1 2>/dev/null"
}

# ensure_daemon NAME VAR: start /usr/sbin/NAME when none runs; sets VAR=1 when
# this test started it. A NAME still exiting (a previous test's cleanup) is
# waited for rather than trusted.
ensure_daemon() {
        local deadline=$(( $(date +%s) + 60 ))
        while :; do
                if pgrep -x "$1" >/dev/null; then
                        [ "$1" = libvirtd ] && libvirt_up && return 0
                        [ "$1" = virtlogd ] && [ -S /run/libvirt/virtlogd-sock ] && return 0
                else
                        /usr/sbin/"$1" -d 9>&- && eval "$2=1"
                fi
                [ "$(date +%s)" -ge "$deadline" ] && return 1
                sleep 0.2
        done
}

start_libvirtd() {
        fix_kvm_perms
        stop_system_daemon
        ensure_daemon virtlogd T_STARTED_VIRTLOGD || { echo "Bail out! virtlogd does not start"; exit 1; }
        ensure_daemon libvirtd T_STARTED_LIBVIRTD || { echo "Bail out! libvirtd does not answer"; exit 1; }
}

# Kills libvirtd (whoever started it) and starts a new one: the test restores a
# running libvirtd, and stops it at exit only if none ran before the test.
restart_libvirtd() {
        stop_pid "$(pgrep -x libvirtd | head -1)"
        local started=0
        ensure_daemon libvirtd started
}

# ---- domains -----------------------------------------------------------------

# xml_escape TEXT: & < > ' " as XML entities (domain names may hold them).
xml_escape() {
        printf '%s' "$1" | sed -e 's/&/\&amp;/g' -e 's/</\&lt;/g' -e 's/>/\&gt;/g' \
                -e "s/'/\&apos;/g" -e 's/"/\&quot;/g'
}

# domain_xml NAME VCPUS IOTHREADS [POLICY_ATTRIBUTES]
domain_xml() {
        local meta=""
        if [ -n "${4:-}" ]; then
                meta="<metadata><kvmtune:policy xmlns:kvmtune='urn:kvmtuned:tuning:1' $4/></metadata>"
        fi
        cat <<EOF
<domain type='qemu'>
  <name>$(xml_escape "$1")</name>
  <memory unit='MiB'>64</memory>
  <vcpu>$2</vcpu>
  <iothreads>$3</iothreads>
  $meta
  <os><type arch='x86_64' machine='pc'>hvm</type></os>
  <on_poweroff>destroy</on_poweroff>
  <devices>
    <emulator>$(command -v qemu-system-x86_64)</emulator>
    <graphics type='vnc' autoport='yes' listen='127.0.0.1'/>
    <memballoon model='none'/>
  </devices>
</domain>
EOF
}

# spin_kernel DIR: builds bench/guest/spin.S (a multiboot kernel that counts in
# a loop forever, a byte to COM1 per round) as DIR/spin.elf.
spin_kernel() {
        gcc -m32 -c -o "$T_TMP/spin.o" "$SRCDIR/bench/guest/spin.S" &&
                ld -m elf_i386 -Ttext=0x100000 -e _start -o "$1/spin.elf" "$T_TMP/spin.o"
}

# spin_domain_xml NAME KERNEL [POLICY_ATTRIBUTES] [SERIAL_LOG]: a 1-vCPU guest
# booting KERNEL (spin_kernel), its serial port written to SERIAL_LOG.
spin_domain_xml() {
        local meta="" serial=""
        [ -n "${3:-}" ] && meta="<metadata><kvmtune:policy xmlns:kvmtune='urn:kvmtuned:tuning:1' $3/></metadata>"
        [ -n "${4:-}" ] && serial="<serial type='file'><source path='$4'/></serial>"
        cat <<XML
<domain type='qemu'>
  <name>$1</name>
  $meta
  <memory unit='MiB'>32</memory>
  <vcpu>1</vcpu>
  <os><type arch='x86_64' machine='pc'>hvm</type><kernel>$2</kernel></os>
  <devices>$serial<memballoon model='none'/></devices>
</domain>
XML
}

# define_domain NAME VCPUS IOTHREADS [POLICY_ATTRIBUTES]
define_domain() {
        domain_xml "$@" > "$T_TMP/$1.xml"
        T_DOMAINS="$T_DOMAINS $1"
        $VIRSH define "$T_TMP/$1.xml" >/dev/null
}

start_domain() {
        $VIRSH start "$1" >/dev/null
}

# The QEMU pid from libvirt's status XML, which is saved under the raw name for
# every name (libvirt 9.0 XML-escapes the pid file's name: "a&amp;b.pid").
domain_pid() {
        local pid
        pid=$(sed -n "s/^<domstatus .* pid='\([0-9]*\)'.*/\1/p" "/run/libvirt/qemu/$1.xml" 2>/dev/null)
        [ -n "$pid" ] && echo "$pid" && return 0
        cat "/run/libvirt/qemu/$1.pid" 2>/dev/null
}

# Destroys and undefines every domain whose name matches $T_MANAGED (only the
# calling test's glob), whatever the name holds (spaces, quotes): for tests that
# define domains with odd names or in bulk, in their EXIT trap.
cleanup_managed() {
        local u n
        for u in $($VIRSH list --all --uuid 2>/dev/null); do
                n=$($VIRSH domname "$u" 2>/dev/null) || continue
                case "$n" in $T_MANAGED) ;; *) continue ;; esac
                $VIRSH destroy "$u" >/dev/null 2>&1
                $VIRSH undefine --managed-save "$u" >/dev/null 2>&1
        done
}

cleanup_domains() {
        local d
        for d in $T_DOMAINS; do
                $VIRSH destroy "$d" >/dev/null 2>&1
                $VIRSH undefine "$d" >/dev/null 2>&1
        done
}

# ---- /proc truth -------------------------------------------------------------

# Prints "KIND ID CPUS" per thread of the domain's QEMU: "vcpu 0 1",
# "iothread 1 0", and "emulator 0 0" for the main thread and every other
# helper thread (call_rcu, vnc_worker, ...), once per distinct cpuset: a helper
# left elsewhere shows as a second emulator line.
domain_threads() {
        local pid tid comm cpus
        pid=$(domain_pid "$1") || return 1
        for tid in $(ls "/proc/$pid/task"); do
                comm=$(cat "/proc/$pid/task/$tid/comm" 2>/dev/null) || continue
                cpus=$(awk '/^Cpus_allowed_list:/ {print $2}' "/proc/$pid/task/$tid/status")
                case "$comm" in
                "CPU "*"/TCG"|"CPU "*"/KVM")
                        echo "vcpu $(echo "$comm" | sed 's/^CPU \([0-9]*\)\/.*/\1/') $cpus" ;;
                "IO iothread"*)
                        echo "iothread ${comm#IO iothread} $cpus" ;;
                *)
                        echo "emulator 0 $cpus" ;;
                esac
        done | sort -u
}

# Expands "0-2,5" to "0 1 2 5".
cpu_list_expand() {
        echo "$1" | tr ',' '\n' | while IFS=- read -r a b; do
                [ -z "$a" ] && continue
                seq "$a" "${b:-$a}"
        done | tr '\n' ' ' | sed 's/ $//'
}

# Normalises "0 1 2 5" back to a canonical "0-2,5".
cpu_list_canon() {
        echo "$1" | tr ' ' '\n' | sort -n | uniq | awk '
                NF { if (start == "") { start = $1; prev = $1; next }
                     if ($1 == prev + 1) { prev = $1; next }
                     out = out sep (start == prev ? start : start "-" prev); sep = ","
                     start = $1; prev = $1 }
                END { if (start != "") out = out sep (start == prev ? start : start "-" prev); print out }'
}

# ---- kvmtuned ----------------------------------------------------------------

# write_config [EXTRA_SECTIONS]: reserved_cpus empty (tiny host). Only this
# test's domains are managed (cpu = shared unless EXTRA_SECTIONS or metadata
# say otherwise): every other domain on the host (another test, a benchmark)
# is left alone, so tests and daemons running side by side do not fight.
# Set T_MANAGED to the glob of the test's domain names before calling it.
# Host isolation is off unless a test sets T_ISOLATION (and T_ISOLATION_SCOPE,
# a cgroup it creates): a test never moves processes it did not start.
T_MANAGED=${T_MANAGED:-kvmtuned-test-*}
T_ISOLATION=${T_ISOLATION:-no}
T_ISOLATION_SCOPE=${T_ISOLATION_SCOPE:-/kvmtuned-test}
write_config() {
        {
                echo "[libvirt]"
                echo "uri = $URI"
                echo "[host]"
                echo "reserved_cpus ="
                echo "isolation = $T_ISOLATION"
                echo "isolation_scope = $T_ISOLATION_SCOPE"
                echo "[defaults]"
                echo "cpu = none"
                printf '%s\n' "${1:-}"
                echo "[domain \"$T_MANAGED\"]"
                echo "cpu = shared"
        } > "$T_CONF"
}

ctl() {
        "$BUILDDIR/cli/kvmtunectl" --socket "$T_SOCK" "$@"
}

daemon_up() {
        ctl --json status >/dev/null 2>&1
}

start_daemon() {
        "$BUILDDIR/daemon/kvmtuned" --config "$T_CONF" --socket "$T_SOCK" --connect "$URI" --debug \
                >>"$T_LOG" 2>&1 9>&- &
        T_DAEMON_PID=$!
        wait_for 20 daemon_up || { diag "kvmtuned did not come up:"; sed 's/^/#   /' "$T_LOG"; return 1; }
}

stop_daemon() {
        [ -n "$T_DAEMON_PID" ] || return 0
        kill -TERM "$T_DAEMON_PID" 2>/dev/null
        wait "$T_DAEMON_PID" 2>/dev/null
        local rc=$?
        T_DAEMON_PID=""
        return $rc
}

show() {                # show NAME [JQ_FILTER]
        ctl --json show "$1" 2>/dev/null | jq -r "select(.error == null) | ${2:-.}"
}

domain_state() {
        show "$1" .state 2>/dev/null
}

# wait_state NAME STATE [SECONDS]
wait_state() {
        wait_for "${3:-20}" sh -c "[ \"\$('$BUILDDIR/cli/kvmtunectl' --socket '$T_SOCK' --json show '$1' 2>/dev/null | jq -r .state)\" = '$2' ]"
}

# What the daemon reports, in the domain_threads format.
reported_threads() {
        ctl --json show "$1" | jq -r '
                (.vcpus[] | "vcpu \(.vcpu) \(.cpus | map(tostring) | join(" "))"),
                (.iothreads[] | "iothread \(.id) \(.cpus | map(tostring) | join(" "))"),
                "emulator 0 \(.emulator.cpus | map(tostring) | join(" "))"' |
        while read -r kind id cpus; do
                echo "$kind $id $(cpu_list_canon "$cpus")"
        done | sort
}

# Every vCPU, emulator and iothread thread has the affinity the daemon reports
# (and there is something to compare: a running QEMU with vCPU threads).
check_affinity() {      # check_affinity NAME
        local got want
        got=$(domain_threads "$1")
        want=$(reported_threads "$1")
        case "$got" in
        *vcpu*) is "$got" "$want" "$1: /proc affinity of every vCPU, emulator and iothread matches kvmtunectl show" ;;
        *) ok 1 "$1: /proc affinity of every vCPU, emulator and iothread matches kvmtunectl show"
           diag "no vCPU thread found for $1 (not running?)" ;;
        esac
}

# The host's online CPUs as a canonical list ("0-1" here): what an unpinned
# thread is allowed on.
online_cpus() {
        cpu_list_canon "$(cpu_list_expand "$(cat /sys/devices/system/cpu/online)")"
}

cpus_contain() {         # cpus_contain LIST CPU
        case " $(cpu_list_expand "$1") " in
        *" $2 "*) return 0 ;;
        esac
        return 1
}

# The PUs tuned domains' vCPUs hold are exclusive: no thread of another
# domain in the list is allowed on them.
check_exclusive() {     # check_exclusive DOMAIN...
        local d o cpu held kind id cpus bad=0 tuned=0
        for d in "$@"; do
                [ "$(domain_state "$d")" = tuned ] || continue
                tuned=$((tuned + 1))
                # Its vCPU PUs, and the emulator's when not on the shared pool.
                held=$(show "$d" '[.vcpus[].cpus[]] | map(tostring) | join(" ")')
                [ "$(show "$d" .policy.emulator)" = isolate ] &&
                        held="$held $(show "$d" '.emulator.cpus | map(tostring) | join(" ")')"
                for o in "$@"; do
                        [ "$o" = "$d" ] && continue
                        while read -r kind id cpus; do
                                for cpu in $held; do
                                        if cpus_contain "$cpus" "$cpu"; then
                                                diag "CPU $cpu of $d is allowed for $o $kind $id ($cpus)"
                                                bad=1
                                        fi
                                done
                        done <<EOF
$(domain_threads "$o")
EOF
                done
        done
        [ "$tuned" -gt 0 ] || { bad=1; diag "none of $* is tuned: nothing to check"; }
        ok $bad "dedicated PUs are used by nothing else of any domain ($*)"
}

# ---- host isolation: a cgroup of busy processes the caller starts ----------------

# busy_start CGROUP N [NICE]: creates CGROUP below the cpuset hierarchy (v1) or
# the unified one and starts N busy loops in it; T_BUSY lists their pids,
# T_BUSY_CG the cgroup's directory. busy_stop [CGROUP] kills every process in
# it and removes it (also from t_cleanup; a caller that ran busy_start in a
# subshell names the cgroup). This is what isolation_scope = CGROUP confines,
# and nothing else: a test never moves processes it did not start.
T_BUSY=""
T_BUSY_CG=""
busy_cgroup() {         # busy_cgroup CGROUP: its directory
        if [ -d /sys/fs/cgroup/cpuset ]; then echo "/sys/fs/cgroup/cpuset$1"; else echo "/sys/fs/cgroup$1"; fi
}

busy_start() {
        local i
        T_BUSY_CG=$(busy_cgroup "$1")
        mkdir -p "$T_BUSY_CG"
        if [ -d /sys/fs/cgroup/cpuset ]; then
                cat /sys/fs/cgroup/cpuset/cpuset.cpus > "$T_BUSY_CG/cpuset.cpus"
                cat /sys/fs/cgroup/cpuset/cpuset.mems > "$T_BUSY_CG/cpuset.mems"
        fi
        for i in $(seq "$2"); do
                nice -n "${3:-0}" sh -c 'while :; do :; done' 9>&- &
                T_BUSY="$T_BUSY $!"
                echo $! > "$T_BUSY_CG/cgroup.procs"
        done
}

busy_stop() {
        local p cg=$T_BUSY_CG
        [ -n "${1:-}" ] && cg=$(busy_cgroup "$1")
        [ -n "$cg" ] && [ -d "$cg" ] && T_BUSY="$T_BUSY $(cat "$cg/cgroup.procs")"
        for p in $T_BUSY; do kill "$p" 2>/dev/null; done
        for p in $T_BUSY; do wait "$p" 2>/dev/null; done
        [ -n "$cg" ] && wait_for 5 rmdir "$cg" 2>/dev/null
        T_BUSY=""
        T_BUSY_CG=""
}

allowed() {             # allowed PID: its Cpus_allowed_list
        awk '/^Cpus_allowed_list:/ {print $2}' "/proc/$1/status"
}

# ---- guests seen from /proc --------------------------------------------------------

# Every thread of every running domain of this test ($T_MANAGED), one line
# each: "NAME TID CPUS" from /proc, sorted. Two snapshots are equal when no
# thread of any guest moved.
guest_threads() {
        local n pid t
        $VIRSH list --name | while IFS= read -r n; do
                case "$n" in $T_MANAGED) ;; *) continue ;; esac
                pid=$(domain_pid "$n") || continue
                for t in /proc/"$pid"/task/*; do
                        echo "$n ${t##*/} $(awk '/^Cpus_allowed_list:/ {print $2}' "$t/status" 2>/dev/null)"
                done
        done | sort
}

# The CPUs the vCPU threads of NAME are allowed on (/proc), as one canonical list.
proc_vcpu_cpus() {
        cpu_list_canon "$(domain_threads "$1" | awk '$1 == "vcpu" {print $3}' |
                while read -r l; do cpu_list_expand "$l"; echo; done)"
}

# What the daemon's allocation table says: "PU OWNER" per PU a domain holds.
pu_owners() {
        ctl --json topology | jq -r '.nodes[].groups[].cores[].pus[] | select(.owner != null) | "\(.os) \(.owner)"'
}

# No PU is allowed for the vCPUs of two of the given domains, from /proc only
# (dedicated guests: each vCPU thread pinned to PUs nobody else's vCPUs have).
check_proc_disjoint() {  # check_proc_disjoint DESCRIPTION DOMAIN...
        local desc=$1 d all="" cpus bad=0
        shift
        for d in "$@"; do
                cpus=$(cpu_list_expand "$(proc_vcpu_cpus "$d")")
                for c in $cpus; do
                        case " $all " in *" $c "*) bad=1; diag "PU $c is in the vCPU affinity of $d and another" ;; esac
                done
                all="$all $cpus"
        done
        ok $bad "$desc"
}

# ---- benchmarks ----------------------------------------------------------------

# stats FILE COLUMN: "median max count" of a column, lines with "-" there skipped
# ("- - 0" when none is left). For the benchmarks in bench/.
stats() {
        awk -v c="$2" '$c != "-" {print $c}' "$1" | sort -g | awk '
                { v[NR] = $1 }
                END { if (NR == 0) { print "- - 0"; exit }
                      m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
                      printf "%.1f %.1f %d\n", m, v[NR], NR }'
}

# ---- cleanup -----------------------------------------------------------------

t_cleanup() {
        busy_stop
        stop_daemon
        cleanup_domains
        restart_system_daemon
        restore_kvm_perms
        [ "$T_STARTED_LIBVIRTD" = 1 ] && stop_pid "$(pgrep -x libvirtd | head -1)"
        [ "$T_STARTED_VIRTLOGD" = 1 ] && stop_pid "$(pgrep -x virtlogd | head -1)"
        if [ "$T_FAILED" -gt 0 ] && [ -f "$T_LOG" ]; then
                diag "kvmtuned log:"
                sed 's/^/#   /' "$T_LOG"
        fi
        rm -rf "$T_TMP"
}

trap t_cleanup EXIT
trap 'exit 130' INT TERM
