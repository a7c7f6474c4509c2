#!/bin/sh
# contrib/grafana/kvmtuned.json against what the real kvmtuned exports (on
# libvirt's in-process test driver): the dashboard is valid JSON, every panel
# has queries, and every expression (panel targets and template variable
# queries) names at least one kvmtuned metric, each one a family that
# `kvmtunectl metrics` declares (histograms with _bucket, _sum, _count). The
# checker is also run on a dashboard naming a metric that does not exist, and
# must reject it. TAP output.

TEST_NAME=test-dashboard
. "$(dirname "$0")/cli-lib.sh"
CTL_SOCKET="$TMP/k.sock"
DASH="$SRCDIR/contrib/grafana/kvmtuned.json"

command -v python3 >/dev/null || { echo "1..0 # SKIP python3 is not installed"; exit 0; }

cat >"$TMP/check.py" <<'PY'
import json, re, sys

exported = set()
for line in open(sys.argv[2]):
    m = re.match(r'# TYPE (\S+) (\S+)$', line)
    if m:
        exported.add(m.group(1))
        if m.group(2) == 'histogram':
            exported.update(m.group(1) + s for s in ('_bucket', '_sum', '_count'))

def expressions(node):
    if isinstance(node, dict):
        for k, v in node.items():
            if k in ('expr', 'definition') and isinstance(v, str):
                yield v
            elif k == 'query' and isinstance(v, dict) and isinstance(v.get('query'), str):
                yield v['query']
            else:
                yield from expressions(v)
    elif isinstance(node, list):
        for v in node:
            yield from expressions(v)

dash = json.load(open(sys.argv[1]))
bad = 0
exprs = list(expressions(dash))
for e in exprs:
    names = set(re.findall(r'\bkvmtuned_[a-zA-Z0-9_:]*', e))
    if not names:
        print('no kvmtuned metric in: %s' % e); bad += 1
    for n in sorted(names - exported):
        print('not exported by kvmtunectl metrics: %s in: %s' % (n, e)); bad += 1
for p in dash.get('panels', []):
    if not p.get('targets'):
        print('panel without queries: %s' % p.get('title')); bad += 1
print('%d expressions, %d exported names' % (len(exprs), len(exported)))
sys.exit(1 if bad or not exprs else 0)
PY

ok "the dashboard is valid JSON" python3 -c "import json, sys; json.load(open(sys.argv[1]))" "$DASH"
start_kvmtuned "$CTL_SOCKET" "$TMP/daemon.log"
run metrics
ok "kvmtunectl metrics from the real daemon" rc_is 0
cp "$TMP/out" "$TMP/metrics.txt"
ok "it declares the per-vCPU delay counter" grep -q '^# TYPE kvmtuned_vcpu_delay_seconds_total counter$' "$TMP/metrics.txt"
python3 "$TMP/check.py" "$DASH" "$TMP/metrics.txt" >"$TMP/check.out" 2>&1
ok_rc $? "every dashboard expression names metrics kvmtunectl metrics exports ($(tail -1 "$TMP/check.out"))"
sed 's/^/#   /' "$TMP/check.out"
ok "the dashboard charts the run-queue delay" grep -q 'kvmtuned_vcpu_delay_seconds_total' "$DASH"

# The checker itself: a misspelt metric and an expression without one fail.
python3 - "$DASH" "$TMP/bad.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d['panels'][0]['targets'][0]['expr'] = 'rate(kvmtuned_vcpu_delay_second_total[1m])'
d['panels'][1]['targets'][0]['expr'] = 'up'
json.dump(d, open(sys.argv[2], 'w'))
PY
python3 "$TMP/check.py" "$TMP/bad.json" "$TMP/metrics.txt" >"$TMP/check.out" 2>&1
rc=$?
ok "the checker rejects a metric the daemon does not export" \
        sh -c "[ $rc -ne 0 ] && grep -q 'not exported by kvmtunectl metrics: kvmtuned_vcpu_delay_second_total' '$TMP/check.out'"
ok "... and an expression naming no kvmtuned metric" grep -q '^no kvmtuned metric in: up$' "$TMP/check.out"
echo "1..$n"
[ "$failed" -eq 0 ]
