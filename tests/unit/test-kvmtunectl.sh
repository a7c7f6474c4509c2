#!/bin/sh
# kvmtunectl end to end: exit codes, --help, every command against a stand-in
# daemon (tests/unit/ctl-fake-daemon: the real control server with canned
# results), and offline planning. TAP output.

TEST_NAME=test-kvmtunectl
. "$(dirname "$0")/cli-lib.sh"
FAKE="$BUILDDIR/tests/unit/ctl-fake-daemon"

# --- usage ---------------------------------------------------------------------
run --help
ok "--help exits 0" rc_is 0
ok "--help shows the synopsis" out_has "Usage: kvmtunectl \[--socket PATH\] \[--json\] COMMAND"
for c in status list show topology hugepages plan rebalance reload advise metrics top verify isolation; do
        ok "--help lists $c" out_has "^  $c"
done
ok "--help documents exit status 3" out_has "3 the daemon cannot be reached"
run --version
ok "--version exits 0" rc_is 0
ok "--version prints the version" out_has "^kvmtunectl [0-9]"

run
ok "no command: exit 2" rc_is 2
ok "no command: says so" err_has "no command given"
run frobnicate
ok "unknown command: exit 2" rc_is 2
ok "unknown command: named" err_has "unknown command 'frobnicate'"
run --frob status
ok "unknown option: exit 2" rc_is 2
run show
ok "show without DOMAIN: exit 2" rc_is 2
run show a b
ok "show with two domains: exit 2" rc_is 2
run list --vcpus 2
ok "plan option on list: exit 2" rc_is 2
run --socket "$TMP/none.sock" plan
ok "plan without --vcpus: exit 2" rc_is 2
run --socket "$TMP/none.sock" plan --vcpus zero
ok "plan --vcpus zero: exit 2" rc_is 2
run --socket "$TMP/none.sock" plan --vcpus 2 --memory lots
ok "plan --memory lots: exit 2" rc_is 2
run --socket "$TMP/none.sock" plan --vcpus 2 --cpu exclusive
ok "plan --cpu exclusive: exit 2" rc_is 2
ok "bad policy value named" err_has "--cpu: invalid value 'exclusive'"
run plan --topology x.xml
ok "plan --topology without --workload: exit 2" rc_is 2
run plan --topology x.xml --workload y.json --vcpus 2
ok "offline and live plan options mixed: exit 2" rc_is 2
run hugepages reserve --size 2M --node 0
ok "hugepages reserve without --count: exit 2" rc_is 2
ok "hugepages reserve without --count: says what is needed" err_has "--count K are required"
run hugepages reserve --size 3M --node 0 --count 1
ok "hugepages reserve --size 3M: exit 2" rc_is 2
run hugepages reserve --size 2M --node -1 --count 1
ok "hugepages reserve --node -1: exit 2" rc_is 2
run hugepages reserve --size 2M --node 0 --count lots
ok "hugepages reserve --count lots: exit 2" rc_is 2
run hugepages grow
ok "hugepages with an unknown sub-command: exit 2" rc_is 2
run status --count 3
ok "reserve options on another command: exit 2" rc_is 2
run hugepages --size 2M
ok "reserve options on the hugepages listing: exit 2" rc_is 2

# --- no daemon -----------------------------------------------------------------
run --socket "$TMP/none.sock" status
ok "no daemon: exit 3" rc_is 3
ok "no daemon: the path is named" err_has "cannot reach kvmtuned at $TMP/none.sock"
KVMTUNED_SOCKET="$TMP/env.sock" run list
ok "KVMTUNED_SOCKET is used" err_has "$TMP/env.sock"
: >"$TMP/notasocket"
run --socket "$TMP/notasocket" list
ok "a plain file as socket: exit 3" rc_is 3

# --- against the stand-in daemon -------------------------------------------------
SOCK="$TMP/kvmtuned.sock"
uid=$(id -u)
"$FAKE" "$SOCK" $((uid + 1)) &
DAEMON_PID=$!
wait_socket "$SOCK"
ok "stand-in daemon listening" test -S "$SOCK"
export KVMTUNED_SOCKET="$SOCK"

run status
ok "status: exit 0" rc_is 0
ok "status: libvirt" out_has "^libvirt: *qemu:///system (connected)"
ok "status: shared pool as a CPU list" out_has "^shared CPUs: *2-3,8-11$"
ok "status: domain counts" out_has "1 tuned, 1 shared, 0 ignored"
ok "status: uptime" out_has "1h 2m 5s"
ok "status: the host" out_has "^host: *2 nodes, 2 L3 groups, 12 PUs$"
ok "status: the isolation in force" \
        out_has "^isolation: *tasks,guests,irqs,workqueues off 4-7 (housekeeping 0-3,8-11): 120 tasks, 4 guest threads, 12 IRQs$"
ok "status: what isolation skipped and why" out_has "^  skipped: *task 812: on dedicated CPUs 5 only, left alone$"
run isolation
ok "isolation: exit 0" rc_is 0
ok "isolation: dedicated and housekeeping CPUs" out_has "^dedicated: *4-7$" && out_has "^housekeeping: *0-3,8-11$"
ok "isolation: task counts and why skipped" out_has "^tasks: *120 confined, 1 kept (on dedicated CPUs only), 30 refused (per-CPU)$"
ok "isolation: IRQs" out_has "^IRQs: *12 moved, 3 refused (managed), default affinity moved$"
ok "isolation: what was skipped, one a line" out_has "^  skipped: *task 812: on dedicated CPUs 5 only" && \
        out_has "^ *guest batch: its own pins (4) name dedicated CPUs"
run --json isolation
ok "isolation --json: the object" json_is 'd["in_force"]' "tasks,guests,irqs,workqueues"
run isolation sideways
ok "isolation with a bad switch: exit 2" rc_is 2
run --json status
ok "status --json: valid JSON" json_ok
ok "status --json: the result object" json_is 'd["libvirt"]["uri"]' "qemu:///system"

run list
ok "list: exit 0" rc_is 0
ok "list: header" out_has "^NAME  *STATE  *POLICY  *VCPUS  *CPUS  *EMULATOR  *NUMA$"
ok "list: dedicated vCPU map in vCPU order" out_has "^db1  *tuned  *dedicated/metadata  *3  *4-6  *7  *0 (strict)$"
ok "list: shared domain floats over the pool" out_has "^web  *shared  *shared/defaults  *2  *2-3,8-11 "
run list --json
ok "list --json (option after the command): valid JSON" json_ok
ok "list --json: domains array" json_is 'len(d["domains"])' 2

run show db1
ok "show: exit 0" rc_is 0
ok "show: state" out_has "^state: *tuned$"
ok "show: policy" out_has "^policy: *cpu=dedicated threads=isolate emulator=isolate iothreads=dedicated numa=strict (from metadata)$"
ok "show: memory" out_has "^memory: *8G in 1G pages$"
ok "show: iothreads" out_has "^iothread CPUs: *1: 7$"
ok "show: vCPU table" out_has "^  2  *6$"
run --json show db1
ok "show --json: SPEC fields" json_is 'sorted(d)' "['emulator', 'iothreads', 'memory', 'name', 'numa', 'policy', 'state', 'uuid', 'vcpus']"
ok "show --json: vcpus" json_is 'd["vcpus"][1]' "{'vcpu': 1, 'cpus': [5]}"
run show nosuch
ok "show of an unknown domain: exit 1" rc_is 1
ok "show of an unknown domain: daemon's message" err_has "no domain 'nosuch'"
run --json show nosuch
ok "--json show of an unknown domain: exit 1" rc_is 1
ok "--json show of an unknown domain: the error as one JSON document on stdout" \
        sh -c "python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if d[\"error\"][\"code\"] and \"nosuch\" in d[\"error\"][\"message\"] else 1)' '$TMP/out'"

run topology
ok "topology: exit 0" rc_is 0
ok "topology: header" out_has "^NODE  *MEMORY  *L3  *CORE  *PUS$"
ok "topology: reserved PUs marked" out_has "0\* 1\*$"
ok "topology: owner of each PU" out_has "4:db1 5:db1$"
ok "topology: second node" out_has "^1  *16G$"

run hugepages
ok "hugepages: exit 0" rc_is 0
ok "hugepages: rows per node and size, with the domains using them" out_has "^0  *1G  *8  *0  *8  *db1:6,db2:2$"
ok "hugepages: a pool nobody uses shows -" out_has "^1  *2M  *0  *0  *0  *-$"

run metrics
ok "metrics: exit 0" rc_is 0
ok "metrics: Prometheus text as is" out_has '^kvmtuned_domains{state="tuned"} 1$'
mkdir "$TMP/textfile"
echo "old" > "$TMP/textfile/kvmtuned.prom"
run metrics --output "$TMP/textfile/kvmtuned.prom"
ok "metrics --output: exit 0" rc_is 0
ok "metrics --output: nothing on stdout" test ! -s "$TMP/out"
ok "metrics --output: the file holds the text" grep -q '^kvmtuned_domains{state="tuned"} 1$' "$TMP/textfile/kvmtuned.prom"
ok "metrics --output: replaced, no temporary file left" test "$(ls "$TMP/textfile")" = kvmtuned.prom
run metrics --output "$TMP/nodir/kvmtuned.prom"
ok "metrics --output to a missing directory: exit 1" rc_is 1
ok "metrics --output to a missing directory: says so" err_has "cannot write $TMP/nodir/kvmtuned.prom"
run status --output "$TMP/x"
ok "--output on another command: exit 2" rc_is 2
run list --once
ok "--once on another command: exit 2" rc_is 2

run show db1
ok "show: per-vCPU run and delay columns only with counters (none here)" sh -c "! grep -q DELAY_S '$TMP/out'"
run verify
ok "verify: drift exits 1" rc_is 1
ok "verify: what drifted, live value, placement" out_has "^  vcpu 0 thread 4242: 0-7, placed 4$"
ok "verify: a domain as placed" out_has "^web: as placed (3 checks)$"
ok "verify: the total" out_has "^2 guests, 8 checks, 1 drifted$"
run --json verify
ok "verify --json: drift exits 1" rc_is 1
ok "verify --json: the document" json_is "d['domains'][0]['drift'][0]['got']" "0-7"

run top --once
ok "top --once: exit 0" rc_is 0
ok "top --once: a header line" out_has "^kvmtuned: 2 guests"
ok "top --once: no terminal escapes" sh -c "! grep -q \"\$(printf '\\033')\" '$TMP/out'"
ok "top --once: columns" out_has "^NAME  *STATE  *POLICY  *VCPUS  *PUS  *BUSY%  *DELAY%$"
ok "top --once: the dedicated guest's line, no delay" out_has "^db1  *tuned  *dedicated  *3  *4-6  *[0-9.]*  *0.0$"
web=$(awk '$1 == "web" {print $7}' "$TMP/out")
ok "top --once: the shared guest waits about half the time ($web%)" \
        awk -v v="$web" 'BEGIN { exit !(v > 35 && v < 55) }'
run --json top
ok "top --json: exit 2" rc_is 2

run plan --vcpus 4 --memory 8G --cpu dedicated --threads isolate --iothread-count 1 --hugepages 1G
ok "plan: exit 0" rc_is 0
ok "plan: placement shown" out_has "^vcpu CPUs: *4-6$"
run --json plan --vcpus 4 --memory 8G --cpu dedicated --hugepages 1G
ok "plan: memory sent in KiB" json_is 'd["params"]["memory_kib"]' 8388608
ok "plan: policy keys sent" json_is 'd["params"]["cpu"] + d["params"]["hugepages"]' "dedicated1G"
run --json plan --vcpus 2 --cpu shared --threads require --emulator vcpus --iothreads emulator \
        --numa none --hugepages 2M
ok "plan: every policy option sent" json_is \
        '" ".join(d["params"][k] for k in ["cpu","threads","emulator","iothreads","numa","hugepages"])' \
        "shared require vcpus emulator none 2M"
run --json plan --vcpus 2 --name db-7 --iothread-count 2
ok "plan --name: the name sent for the config lookup" json_is 'd["params"]["name"]' "db-7"
ok "plan --iothread-count sent" json_is 'd["params"]["iothread_count"]' 2
run plan --vcpus 2 --iothread-count 300
ok "plan --iothread-count 300: exit 2" rc_is 2
run plan --vcpus 100
ok "plan that does not fit: exit 1" rc_is 1
ok "plan that does not fit: reason" out_has "refused: not enough free PUs"

# A uid holding its 8 connections: the next one is refused, and told why.
python3 -c 'import socket, sys, time
held = [socket.socket(socket.AF_UNIX) for _ in range(8)]
for s in held:
    s.connect(sys.argv[1])
print("held", flush=True)
time.sleep(30)' "$SOCK" >"$TMP/held" &
HOLD_PID=$!
i=0; while ! grep -q held "$TMP/held" && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
run status
ok "status with the uid's 8 connections taken: exit 1" rc_is 1
ok "... the daemon's reason printed" err_has "^kvmtunectl: too many connections from uid $uid (limit 8 per user), try again later$"
ok "... not 'cannot reach'" sh -c "! grep -q 'cannot reach\|no reply' '$TMP/err'"
kill $HOLD_PID; wait $HOLD_PID 2>/dev/null
served() { run status; [ "$rc" -eq 0 ]; }
# the daemon frees them as it reads each EOF, on its own time
ok "status once they are closed: exit 0" wait_until served

run rebalance
ok "rebalance as a non-privileged uid: exit 1" rc_is 1
ok "rebalance: permission denied" err_has "permission denied"
run reload
ok "reload as a non-privileged uid: exit 1" rc_is 1
run isolation off
ok "isolation off as a non-privileged uid: exit 1" rc_is 1
ok "isolation off: permission denied" err_has "permission denied"
stop_daemon
ok "stand-in daemon removed its socket" test ! -e "$SOCK"

"$FAKE" "$SOCK" "$uid" &
DAEMON_PID=$!
wait_socket "$SOCK"
run rebalance db1
ok "rebalance as the privileged uid: exit 0" rc_is 0
ok "rebalance: what moved" out_has "^rebalanced 1 domain$"
run reload
ok "reload as the privileged uid: exit 0" rc_is 0
ok "reload: changed domains" out_has "configuration reloaded; policy changed for web"
run rebalance a b
ok "rebalance with two domains: exit 2" rc_is 2
run isolation off
ok "isolation off as the privileged uid: exit 0" rc_is 0
ok "isolation off: nothing in force" out_has "^in force: *none$" && out_has "^configured: *tasks,guests,irqs,workqueues (switch: off)$"

stop_daemon

# --- against the real kvmtuned, on libvirt's in-process test driver ---------------
# The result shapes kvmtunectl renders are the ones the daemon sends.
start_kvmtuned "$TMP/real.sock" "$TMP/kvmtuned.log" \
        --topology "$TOPOLOGIES/1s-xeon-silver4215-cascadelake-smt-small.xml"
ok "kvmtuned listening" test -S "$TMP/real.sock"
run --socket "$TMP/real.sock" --json status
ok "kvmtuned status: exit 0" rc_is 0
ok "kvmtuned status: the shape kvmtunectl renders" json_is \
        'sorted(d["libvirt"]) + sorted(d["pools"]) + sorted(d["domains"])' \
        "['connected', 'uri', 'dedicated', 'reserved', 'shared', 'failed', 'ignored', 'shared', 'tuned', 'unplaced']"
run --socket "$TMP/real.sock" --json list
ok "kvmtuned list: the test driver's domain" json_is '[x["name"] for x in d["domains"]]' "['test']"
run --socket "$TMP/real.sock" --json show test
ok "kvmtuned show: SPEC fields" json_is \
        'all(k in d for k in ["name","uuid","state","policy","vcpus","emulator","iothreads","numa","memory"])' True
run --socket "$TMP/real.sock" show test
ok "kvmtuned show: rendered" out_has "^name: *test$"
run --socket "$TMP/real.sock" --json topology
ok "kvmtuned topology: 16 PUs in nodes/groups/cores/pus" json_is \
        'sum(len(c["pus"]) for n in d["nodes"] for g in n["groups"] for c in g["cores"])' 16
run --socket "$TMP/real.sock" topology
ok "kvmtuned topology: rendered, reserved PUs marked" out_has "0\* 8\*$"
run --socket "$TMP/real.sock" --json plan --vcpus 2 --cpu dedicated --memory 1G
ok "kvmtuned plan: two dedicated vCPUs" json_is 'len(d["vcpus"])' 2
run --socket "$TMP/real.sock" show nosuch
ok "kvmtuned show of an unknown domain: exit 1" rc_is 1
run --socket "$TMP/real.sock" metrics
ok "kvmtuned metrics: Prometheus text" out_has "^# TYPE "
run --socket "$TMP/real.sock" --json isolation
ok "kvmtuned isolation: never on the test driver" json_is 'd["in_force"]' "none"
ok "kvmtuned isolation: says why" json_is 'd["inactive"] is not None' True
stop_daemon
ok "kvmtuned removed its socket at exit" test ! -e "$TMP/real.sock"

# --- hugepages against the real kvmtuned on a fixture sysfs tree -----------------
# hp-2node: node 1 2M 512 pages (500 free), node 1 1G 4 pages (2 free).
cp -R "$FIXTURES/hp-2node" "$TMP/hp"
HP2M=sys/devices/system/node/node0/hugepages/hugepages-2048kB
HP1G=sys/devices/system/node/node1/hugepages/hugepages-1048576kB
start_kvmtuned "$TMP/hp.sock" "$TMP/kvmtuned-hp.log" \
        --sysfs-root "$TMP/hp" --topology "$TOPOLOGIES/2s-xeon-platinum8168-skylake-smt.xml"
ok "kvmtuned on hp-2node listening" test -S "$TMP/hp.sock"
run --socket "$TMP/hp.sock" --json hugepages
ok "kvmtuned hugepages: exit 0" rc_is 0
ok "kvmtuned hugepages: node 1 2M as sysfs says" json_is \
        '[(p["total"], p["free"], p["reserved"], p["domains"]) for n in d["nodes"] if n["node"] == 1 for p in n["pages"] if p["size"] == "2M"]' \
        "[(512, 500, 0, [])]"
run --socket "$TMP/hp.sock" hugepages
ok "kvmtuned hugepages: table with the domains column" out_has "^1  *2M  *512  *500  *0  *-$"
if [ "$uid" -eq 0 ]; then
        run --socket "$TMP/hp.sock" hugepages reserve --size 2M --node 0 --count 64
        ok "hugepages reserve: exit 0" rc_is 0
        ok "hugepages reserve: the result line" out_has "^node 0 2M: 64 requested, 64 reserved$"
        ok "hugepages reserve: written under the sysfs root" test "$(cat "$TMP/hp/$HP2M/nr_hugepages")" = 64
        run --socket "$TMP/hp.sock" --json hugepages
        ok "hugepages after reserve: the pool is re-read" json_is \
                '[p["total"] for n in d["nodes"] if n["node"] == 0 for p in n["pages"] if p["size"] == "2M"]' "[64]"
        run --socket "$TMP/hp.sock" hugepages reserve --size 1G --node 1 --count 0
        ok "hugepages reserve below the pages in use: exit 0" rc_is 0
        ok "hugepages reserve below the pages in use: clamped" out_has "0 requested, 2 reserved (clamped: 2 pages in use"
        ok "clamped pool written as 2" test "$(cat "$TMP/hp/$HP1G/nr_hugepages")" = 2
        run --socket "$TMP/hp.sock" --json hugepages reserve --size 1G --node 0 --count 3
        ok "hugepages reserve --json: the result object" json_is \
                '(d["node"], d["size"], d["requested"], d["reserved"], d["short"], d["clamped"])' \
                "(0, '1G', 3, 3, 0, False)"
        # hp-2node mounts hugetlbfs for 2M pages only (its proc/mounts, not the host's).
        ok "hugepages reserve --json: a 1G pool without a 1G mount warns" json_is \
                '"hugetlbfs -o pagesize=1G hugetlbfs /dev/hugepages1G" in d["warning"]' True
        run --socket "$TMP/hp.sock" hugepages reserve --size 1G --node 0 --count 4
        ok "hugepages reserve 1G: exit 0" rc_is 0
        ok "hugepages reserve 1G: the warning says libvirt cannot use the pages, and the fix" out_has \
                "^warning: no hugetlbfs mount for 1G pages: libvirt cannot back guests with 1G pages until one is mounted: mkdir -p /dev/hugepages1G && mount -t hugetlbfs -o pagesize=1G hugetlbfs /dev/hugepages1G, then restart virtqemud"
        run --socket "$TMP/hp.sock" --json hugepages reserve --size 2M --node 0 --count 64
        ok "hugepages reserve 2M with a 2M mount: no warning" json_is '"warning" in d' False
        ok "hugepages reserve that is not short: no boot command line" json_is '"boot_cmdline" in d' False
        # A kernel that grants fewer pages: 4 of them stay surplus (nr_hugepages
        # counts them, so the persistent pool read back is 4 short).
        echo 4 >"$TMP/hp/$HP2M/surplus_hugepages"
        run --socket "$TMP/hp.sock" hugepages reserve --size 2M --node 0 --count 100
        ok "hugepages reserve, kernel grants fewer: exit 1" rc_is 1
        ok "hugepages reserve, kernel grants fewer: short line" out_has "^node 0 2M: 100 requested, 96 reserved (short by 4"
        ok "hugepages reserve, kernel grants fewer: the boot command line (kernel 6.1: per node)" out_has \
                "^to reserve these pages at boot, add to the kernel command line: hugepagesz=2M hugepages=0:100$"
        ok "hugepages reserve, kernel 6.1: no old-kernel note" sh -c "! grep -q '^(kernel' '$TMP/out'"
        echo 5.10.0-28-amd64 >"$TMP/hp/proc/sys/kernel/osrelease"
        run --socket "$TMP/hp.sock" --json hugepages reserve --size 2M --node 0 --count 100
        ok "hugepages reserve --json, kernel grants fewer: exit 1" rc_is 1
        ok "hugepages reserve --json: boot_cmdline, a plain total before 5.16" json_is \
                '(d["short"], d["boot_cmdline"])' "(4, 'hugepagesz=2M hugepages=100')"
        ok "hugepages reserve --json: boot_note names the kernel" json_is \
                '"kernel 5.10.0-28-amd64 takes no per-node counts before 5.16" in d["boot_note"]' True
        run --socket "$TMP/hp.sock" hugepages reserve --size 2M --node 0 --count 100
        ok "hugepages reserve, old kernel: the note in the human output" out_has \
                "^(kernel 5.10.0-28-amd64 takes no per-node counts before 5.16: the boot-time total is spread evenly over the nodes)$"
        echo 0 >"$TMP/hp/$HP2M/surplus_hugepages"
        run --socket "$TMP/hp.sock" hugepages reserve --size 2M --node 5 --count 1
        ok "hugepages reserve on a missing node: exit 1" rc_is 1
        ok "hugepages reserve on a missing node: named" err_has "no NUMA node 5"
        rm "$TMP/hp/$HP2M/nr_hugepages"
        run --socket "$TMP/hp.sock" hugepages reserve --size 2M --node 0 --count 8
        ok "hugepages reserve on a pool sysfs lacks: exit 1" rc_is 1
        ok "hugepages reserve on a pool sysfs lacks: says so" err_has "node 0 2M: 8 requested, error: "
else
        run --socket "$TMP/hp.sock" hugepages reserve --size 2M --node 0 --count 64
        ok "hugepages reserve as a non-root user: exit 1" rc_is 1
        ok "hugepages reserve as a non-root user: permission denied" err_has "permission denied"
        ok "hugepages reserve as a non-root user: nothing written" test "$(cat "$TMP/hp/$HP2M/nr_hugepages")" = 0
fi
stop_daemon

start_kvmtuned "$TMP/hp.sock" "$TMP/kvmtuned-hp2.log" \
        --topology "$TOPOLOGIES/2s-xeon-platinum8168-skylake-smt.xml"
if [ "$uid" -eq 0 ]; then
        run --socket "$TMP/hp.sock" hugepages reserve --size 2M --node 0 --count 1
        ok "hugepages reserve on a --topology file without --sysfs-root: exit 1" rc_is 1
        ok "hugepages reserve without live pools: says why" err_has "no pools to change"
fi
stop_daemon

# --- bash completion (without the bash-completion package's helpers) -------------
"$FAKE" "$SOCK" "$uid" &
DAEMON_PID=$!
wait_socket "$SOCK"
COMPLETION="$SRCDIR/contrib/bash-completion/kvmtunectl"
complete_words() {  # complete_words WORD...: the last word is the one completed
        PATH="$BUILDDIR/cli:$PATH" bash -c '. "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1));
                _kvmtunectl; echo "${COMPREPLY[*]}"' _ "$COMPLETION" "$@" >"$TMP/out" 2>"$TMP/err"
}
if command -v bash >/dev/null; then
        complete_words kvmtunectl ""
        ok "completion: every command" out_has "status list show topology hugepages plan rebalance reload metrics advise"
        complete_words kvmtunectl advise --a
        ok "completion: advise --apply, --all" out_has "^--apply --all$"
        complete_words kvmtunectl advise --xml sql1.xml --to
        ok "completion: advise --xml takes --topology" out_has "^--topology$"
        complete_words kvmtunectl advise db1 --
        ok "completion: advise DOMAIN: no offline options" out_has "^--apply --json$"
        complete_words kvmtunectl top --o
        ok "completion: top --once" out_has "^--once$"
        complete_words kvmtunectl metrics --o
        ok "completion: metrics --output" out_has "^--output$"
        complete_words kvmtunectl --so
        ok "completion: global options" out_has "^--socket$"
        complete_words kvmtunectl plan --vcpus 4 --thr
        ok "completion: plan options" out_has "^--threads$"
        complete_words kvmtunectl plan --emulator ""
        ok "completion: policy values" out_has "^isolate share vcpus$"
        complete_words kvmtunectl show ""
        ok "completion: domain names from the daemon" out_has "^db1 web$"
        complete_words kvmtunectl plan --name ""
        ok "completion: --name offers domain names" out_has "^db1 web$"
        complete_words kvmtunectl hugepages ""
        ok "completion: hugepages sub-command" out_has "^reserve$"
        complete_words kvmtunectl hugepages reserve --s
        ok "completion: hugepages reserve options" out_has "^--size$"
        complete_words kvmtunectl hugepages reserve --size ""
        ok "completion: page sizes" out_has "^1G 2M$"
        complete_words kvmtunectl show db1 ""
        ok "completion: nothing after the domain" test ! -s "$TMP/out" -o "$(cat "$TMP/out")" = ""
else
        echo "# skipping completion tests: no bash"
fi

# --- offline plan ---------------------------------------------------------------
TOPO="$TOPOLOGIES/2s-xeon-platinum8168-skylake-smt.xml"
WL="$FIXTURES/workloads/skylake-mix.json"
run plan --topology "$TMP/missing.xml" --workload "$WL"
ok "offline plan, missing topology: exit 1" rc_is 1
run --socket "$TMP/none.sock" plan --topology "$TOPO" --workload "$WL"
ok "offline plan needs no daemon: exit 0" rc_is 0
ok "offline plan: a table" out_has "db1"
run --json plan --topology "$TOPO" --workload "$WL"
ok "offline plan --json: valid JSON" json_ok
ok "offline plan --json: results and summary" json_is '"results" in d and "summary" in d' True
run plan --topology "$TOPO" --workload "$FIXTURES/workloads/not-json.json"
ok "offline plan, workload not JSON: exit 1" rc_is 1
HP="$FIXTURES/workloads/skylake-hugepages.json"
run --json plan --topology "$TOPO" --workload "$HP"
ok "offline plan without --sysfs-root: no hugepage pools in the XML, every hugepage domain refused" \
        json_is 'd["summary"]["placed"]' 0
ok "offline plan without --sysfs-root: a shared 2M domain is refused too, naming the pages" \
        json_is '[r["refused"] for r in d["results"] if r.get("name") == "small"][0]' \
        "needs 512 MiB of 2M pages; free: node 0: 0, node 1: 0 pages; short by 256 pages on node 0"
run --json plan --topology "$TOPO" --workload "$HP" --sysfs-root "$FIXTURES/sysfs-2node"
ok "offline plan --sysfs-root: hugepage pools read below it" json_is 'd["summary"]["placed"]' 3

echo "1..$n"
[ "$failed" -eq 0 ]
