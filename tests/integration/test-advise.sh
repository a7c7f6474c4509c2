#!/bin/sh
# Every fix `kvmtunectl advise --apply` makes, checked on a real guest (TCG):
#
#   1. A SQL-Server-like definition (Windows by libosinfo, cpu=dedicated in its
#      metadata, SATA + virtio-scsi + virtio disks, an e1000 and a virtio NIC,
#      VNC + qxl, a balloon) is fixed through the daemon (advise DOMAIN
#      --apply), then started: QEMU's command line and threads show the fixes
#      (cache=none/io=native, one iothread per virtio disk and the virtio-scsi
#      controller, virtio-net queues, a serial console; no Hyper-V
#      enlightenment, which are KVM's: this TCG guest does not start with them,
#      "kernel doesn't allow setting HyperV VP_INDEX"), and a re-audit finds
#      none of the applied findings again.
#   2. A dedicated 8-vCPU guest placed over two nodes of an 8-node host
#      (--topology) gets its guest NUMA cells offline (advise --xml --apply),
#      is defined and started with them, and audits clean.
# TAP output.
. "$(dirname "$0")/lib.sh"
require_env
fix_kvm_perms
T_MANAGED='kvmtuned-test-adv-*'
SQL=kvmtuned-test-adv-sql
NUMA=kvmtuned-test-adv-numa
TOPO="$SRCDIR/tests/data/topologies/2s-epyc-7451-naples-8numa-smt-cpuid.xml"

# QEMU runs as its own user: it must reach the images below $T_TMP.
chmod 711 "$T_TMP"
for d in os data log tempdb; do truncate -s 16M "$T_TMP/$d.raw"; done

sql_xml() {
        cat <<EOF
<domain type='qemu'>
  <name>$SQL</name>
  <metadata>
    <libosinfo:libosinfo xmlns:libosinfo="http://libosinfo.org/xmlns/libvirt/domain/1.0">
      <libosinfo:os id="http://microsoft.com/win/2k22"/>
    </libosinfo:libosinfo>
    <kvmtune:policy xmlns:kvmtune='urn:kvmtuned:tuning:1' cpu='dedicated'/>
  </metadata>
  <memory unit='MiB'>256</memory>
  <vcpu>2</vcpu>
  <os><type arch='x86_64' machine='q35'>hvm</type></os>
  <features><acpi/><apic/></features>
  <clock offset='localtime'/>
  <on_poweroff>destroy</on_poweroff>
  <devices>
    <emulator>$(command -v qemu-system-x86_64)</emulator>
    <disk type='file' device='disk'>
      <driver name='qemu' type='raw'/><source file='$T_TMP/os.raw'/><target dev='sda' bus='sata'/>
    </disk>
    <disk type='file' device='disk'>
      <driver name='qemu' type='raw'/><source file='$T_TMP/data.raw'/><target dev='sdb' bus='scsi'/>
    </disk>
    <disk type='file' device='disk'>
      <driver name='qemu' type='raw'/><source file='$T_TMP/log.raw'/><target dev='vda' bus='virtio'/>
    </disk>
    <disk type='file' device='disk'>
      <driver name='qemu' type='raw'/><source file='$T_TMP/tempdb.raw'/><target dev='vdb' bus='virtio'/>
    </disk>
    <controller type='scsi' index='0' model='virtio-scsi'/>
    <interface type='ethernet'><mac address='52:54:00:ad:00:01'/><model type='e1000'/></interface>
    <interface type='ethernet'><mac address='52:54:00:ad:00:02'/><model type='virtio'/></interface>
    <graphics type='vnc' autoport='yes' listen='127.0.0.1'/>
    <video><model type='qxl'/></video>
    <memballoon model='virtio'/>
  </devices>
</domain>
EOF
}

numa_xml() {
        cat <<EOF
<domain type='qemu'>
  <name>$NUMA</name>
  <metadata>
    <kvmtune:policy xmlns:kvmtune='urn:kvmtuned:tuning:1' cpu='dedicated' threads='isolate' numa='strict'/>
  </metadata>
  <memory unit='MiB'>256</memory>
  <vcpu>8</vcpu>
  <os><type arch='x86_64' machine='pc'>hvm</type></os>
  <on_poweroff>destroy</on_poweroff>
  <devices>
    <emulator>$(command -v qemu-system-x86_64)</emulator>
    <serial type='pty'/>
    <memballoon model='none'/>
  </devices>
</domain>
EOF
}

qemu_cmdline() {
        tr '\0' '\n' <"/proc/$(domain_pid "$1")/cmdline"
}

# The "id target" of the findings an advise --json document marks applied.
applied_of() {
        jq -r '.findings[] | select(.applied) | "\(.id) \(.target)"' "$1" | sort
}

# ---- 1. through the daemon: advise DOMAIN --apply, start, re-audit ------------

write_config
start_daemon
sql_xml >"$T_TMP/$SQL.xml"
T_DOMAINS="$T_DOMAINS $SQL"
$VIRSH define "$T_TMP/$SQL.xml" >/dev/null
ok $? "defined the SQL-Server-like guest"

ctl --json advise "$SQL" --apply >"$T_TMP/apply.json"
ok $? "advise --apply through the daemon"
applied_of "$T_TMP/apply.json" >"$T_TMP/applied"
is "$(tr '\n' ',' <"$T_TMP/applied")" \
        "disk-cache disk sda,disk-cache disk sdb,disk-cache disk vda,disk-cache disk vdb,disk-io disk sda,disk-io disk sdb,disk-io disk vda,disk-io disk vdb,disk-iothread disk vda,disk-iothread disk vdb,net-multiqueue interface 52:54:00:ad:00:02,scsi-iothread controller scsi0,serial-console serial," \
        "every safe fix applied, nothing else"
is "$(jq -r '[.findings[] | select(.applied | not) | .id] | sort | join(",")' "$T_TMP/apply.json")" \
        "cpu-topology,disk-bus,disk-bus,display,memballoon,net-model" \
        "advice only: topology, disk bus, display, balloon, NIC model"
is "$(jq -r '(.findings | length) > 0 and ([.findings[] | select(.source | test("^seeds/00[0-4][ :]") | not)] | length) == 0' "$T_TMP/apply.json")" true \
        "there are findings, and every finding names its source report"

start_domain "$SQL"
ok $? "the fixed guest starts"
wait_for 10 test -n "$(domain_pid "$SQL")"
qemu_cmdline "$SQL" >"$T_TMP/cmdline"
is "$(grep -c '^iothread,id=iothread\|"qom-type":"iothread"' "$T_TMP/cmdline")" 3 "QEMU has three iothreads"
is "$(grep '"driver":"file"' "$T_TMP/cmdline" | grep -c '"cache":{"direct":true')" 4 \
        "four disk files opened with cache=none (O_DIRECT)"
is "$(grep -c '"aio":"native"' "$T_TMP/cmdline")" 4 "four disks with io=native"
ok "$(grep -c 'virtio-blk-pci.*"iothread":"iothread[12]"' "$T_TMP/cmdline" | grep -qx 2; echo $?)" \
        "each virtio disk on its own iothread"
ok "$(grep -q 'virtio-scsi-pci.*"iothread":"iothread3"' "$T_TMP/cmdline"; echo $?)" "the virtio-scsi controller on the third"
ok "$(grep -q 'virtio-net-pci.*"mq":true' "$T_TMP/cmdline"; echo $?)" "virtio-net with multiqueue"
ok "$(grep -q 'hv-\|hv_' "$T_TMP/cmdline"; [ $? -ne 0 ]; echo $?)" "TCG: no Hyper-V enlightenment"
ok "$(grep -q 'isa-serial' "$T_TMP/cmdline"; echo $?)" "a serial console"
is "$(domain_threads "$SQL" | grep -c '^iothread ')" 3 "three iothread threads in /proc"

ctl --json advise "$SQL" >"$T_TMP/again.json"
ok $? "re-audit through the daemon"
is "$(jq -r '.findings[] | "\(.id) \(.target)"' "$T_TMP/again.json" | sort | comm -12 - "$T_TMP/applied" | wc -l)" 0 \
        "re-audit: nothing --apply fixed is found again"
ctl --json advise --all >"$T_TMP/all.json"
is "$(jq -r --arg n "$SQL" '.domains[] | select(.name == $n) | .counts.warning + .counts.info' "$T_TMP/all.json")" \
        "$(jq -r '.findings | length' "$T_TMP/again.json")" "advise --all counts what advise finds"
$VIRSH destroy "$SQL" >/dev/null 2>&1

# ---- 2. offline: guest NUMA cells of a two-node placement ----------------------

numa_xml >"$T_TMP/numa.xml"
"$BUILDDIR/cli/kvmtunectl" advise --xml "$T_TMP/numa.xml" --config "$T_CONF" --topology "$TOPO" --apply \
        >"$T_TMP/numa-fixed.xml" 2>"$T_TMP/numa-findings"
ok $? "advise --xml --topology --apply"
ok "$(grep -q '^warning  *cpu  *numa-cells .* yes$' "$T_TMP/numa-findings"; echo $?)" "numa-cells applied"
T_DOMAINS="$T_DOMAINS $NUMA"
$VIRSH define "$T_TMP/numa-fixed.xml" >/dev/null
ok $? "libvirt takes the cells"
is "$($VIRSH dumpxml "$NUMA" | grep -c '<cell ')" 2 "two guest cells"
is "$($VIRSH dumpxml "$NUMA" | grep -o "<cell id='[01]' cpus='[0-9-]*' memory='[0-9]*'" | tr '\n' ' ')" \
        "<cell id='0' cpus='0-3' memory='131072' <cell id='1' cpus='4-7' memory='131072' " \
        "the vCPUs and memory split as the placement"
start_domain "$NUMA"
ok $? "the guest with the cells starts"
wait_for 10 test -n "$(domain_pid "$NUMA")"
is "$(qemu_cmdline "$NUMA" | grep -c '^node,nodeid=')" 2 "QEMU gets two NUMA nodes"
$VIRSH dumpxml --inactive "$NUMA" >"$T_TMP/numa-defined.xml"
"$BUILDDIR/cli/kvmtunectl" --json advise --xml "$T_TMP/numa-defined.xml" --config "$T_CONF" --topology "$TOPO" \
        >"$T_TMP/numa-again.json"
is "$(jq -r '[.findings[] | select(.id == "numa-cells")] | length' "$T_TMP/numa-again.json")" 0 \
        "re-audit of the defined guest: the cells match"

done_testing
