#!/bin/sh
# systemd units under systemd/ pass `systemd-analyze verify`, warnings included
# (verify exits 0 on unknown keys and bad values, so any output fails the test).
# *.service.in get @sbindir@/@bindir@ pointed at the build tree, where the
# binaries exist; man pages are not installed yet, hence --man=no.
# Skips (TAP "1..0 # SKIP reason") without systemd-analyze.
set -u
srcdir=${SRCDIR:-$(dirname "$0")/../..}
builddir=${BUILDDIR:-.}

if ! command -v systemd-analyze >/dev/null 2>&1; then
        echo "1..0 # SKIP systemd-analyze not installed"
        exit 0
fi
tmp=$(mktemp -d /tmp/test-units.XXXXXX) || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM

n=0
failed=0
check() {
        n=$((n + 1))
        if [ -z "$2" ]; then
                echo "ok $n - $1"
        else
                echo "not ok $n - $1"
                printf '%s\n' "$2" | sed 's/^/#   /'
                failed=1
        fi
}

for in in "$srcdir"/systemd/*.service.in; do
        [ -e "$in" ] || continue
        unit=$(basename "$in" .in)
        sed -e "s|@sbindir@|$builddir/daemon|g" -e "s|@bindir@|$builddir/cli|g" "$in" >"$tmp/$unit"
        check "$unit: no unsubstituted @...@" "$(grep -n '@[a-z_]*@' "$tmp/$unit")"
        check "$unit: systemd-analyze verify" \
                "$(systemd-analyze verify --man=no "$tmp/$unit" 2>&1)"
done

# Timers, beside the services they start (generated above).
for timer in "$srcdir"/systemd/*.timer; do
        [ -e "$timer" ] || continue
        cp "$timer" "$tmp/"
        check "$(basename "$timer"): systemd-analyze verify" \
                "$(systemd-analyze verify --man=no "$tmp/$(basename "$timer")" 2>&1)"
done
built="$builddir/systemd/kvmtuned-metrics.service"
if [ -e "$built" ]; then
        check "generated kvmtuned-metrics.service writes the textfile collector's file atomically" \
                "$(grep -q '^ExecStart=/.*/kvmtunectl metrics --output /var/lib/prometheus/node-exporter/kvmtuned.prom$' \
                        "$built" || echo 'no ExecStart line')"
fi

# The units make generates carry the install path: check the substitution.
for unit in kvmtuned-hugepages.service kvmtuned.service kvmtuned-metrics.service; do
        built="$builddir/systemd/$unit"
        [ -e "$built" ] || continue
        check "generated $unit has no @...@" "$(grep -n '@[a-z_]*@' "$built")"
done
built="$builddir/systemd/kvmtuned-hugepages.service"
if [ -e "$built" ]; then
        check "generated unit runs kvmtuned --reserve-hugepages" \
                "$(grep -q '^ExecStart=/.*/kvmtuned --reserve-hugepages$' "$built" || echo 'no ExecStart line')"
fi
built="$builddir/systemd/kvmtuned.service"
if [ -e "$built" ]; then
        check "generated kvmtuned.service runs the daemon and checks the config first" \
                "$(grep -q '^ExecStart=/.*/kvmtuned$' "$built" || echo 'no ExecStart line';
                   grep -q '^ExecStartPre=/.*/kvmtuned --check-config$' "$built" || echo 'no ExecStartPre line')"
        check "kvmtuned.service is Type=notify with a watchdog" \
                "$(grep -q '^Type=notify$' "$built" || echo 'not Type=notify';
                   grep -q '^WatchdogSec=' "$built" || echo 'no WatchdogSec=')"
        # The isolation record in /run/kvmtuned must outlive a crash restart,
        # or the restarted daemon takes the narrowed masks for the originals.
        check "kvmtuned.service keeps /run/kvmtuned across restarts" \
                "$(grep -q '^RuntimeDirectory=kvmtuned$' "$built" || echo 'no RuntimeDirectory=kvmtuned';
                   grep -q '^RuntimeDirectoryPreserve=\(restart\|yes\)$' "$built" ||
                        echo 'no RuntimeDirectoryPreserve=restart')"
fi
echo "1..$n"
exit $failed
