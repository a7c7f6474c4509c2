#!/bin/sh
# kvmtunectl metrics against the real kvmtuned (libvirt's in-process test
# driver, a 2-node topology and a fixture sysfs tree): the output is strict
# Prometheus text (format 0.0.4), checked by the validator below since
# promtool is not available, and shows the pools and counters. TAP output.

TEST_NAME=test-metrics
. "$(dirname "$0")/cli-lib.sh"
CTL_SOCKET="$TMP/k.sock"

# --- the validator: prom_check FILE ----------------------------------------------
# Every sample belongs to a family announced by exactly one HELP and one TYPE
# before its samples, the families are contiguous, names and label names are
# valid, label values are quoted with only \\ \" \n escapes, values are numbers,
# counters end in _total, no sample repeats, and each histogram series has
# buckets with increasing le, cumulative counts, a +Inf bucket equal to _count,
# and a _sum.
cat >"$TMP/prom_check.py" <<'EOF'
import re, sys

NAME = r'[a-zA-Z_:][a-zA-Z0-9_:]*'
LABEL = r'[a-zA-Z_][a-zA-Z0-9_]*'
VALUE = r'"(?:[^"\\\n]|\\[\\"n])*"'
SAMPLE = re.compile(r'^(' + NAME + r')(\{(?:' + LABEL + '=' + VALUE + r'(?:,' + LABEL + '=' + VALUE +
                    r')*,?)?\})? (\S+)(?: -?[0-9]+)?$')
PAIR = re.compile('(' + LABEL + ')=(' + VALUE + ')')
TYPES = ('counter', 'gauge', 'histogram', 'summary', 'untyped')
errors = []

def err(lineno, msg):
    errors.append('line %d: %s' % (lineno, msg))

def number(v):
    if v in ('+Inf', '-Inf', 'NaN'):
        return float(v.replace('Inf', 'inf').replace('NaN', 'nan'))
    if not re.match(r'^[-+]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?$', v):
        raise ValueError(v)
    return float(v)

def family_of(name, types):
    for suffix in ('_bucket', '_sum', '_count'):
        base = name[:-len(suffix)] if name.endswith(suffix) else None
        if base and types.get(base) in ('histogram', 'summary'):
            return base
    return name

help_, types, done, seen, hist = {}, {}, set(), set(), {}
current = None
text = open(sys.argv[1]).read()
if text and not text.endswith('\n'):
    err(0, 'no newline at the end')
for i, line in enumerate(text.split('\n')[:-1], 1):
    if line.startswith('# HELP ') or line.startswith('# TYPE '):
        parts = line.split(' ', 3)
        if len(parts) < 4 or not re.match('^' + NAME + '$', parts[2]):
            err(i, 'malformed ' + line)
            continue
        kind, name, rest = parts[1], parts[2], parts[3]
        table = help_ if kind == 'HELP' else types
        if name in table:
            err(i, 'second %s for %s' % (kind, name))
        if name in done:
            err(i, '%s for %s after its block' % (kind, name))
        if kind == 'TYPE' and rest not in TYPES:
            err(i, 'unknown type ' + rest)
        table[name] = rest
        if current and current != name:
            done.add(current)
        current = name
        continue
    if line.startswith('#') or not line.strip():  # comments and empty lines are ignored
        continue
    m = SAMPLE.match(line)
    if not m:
        err(i, 'not a sample: %r' % line)
        continue
    name, labels, value = m.group(1), m.group(2) or '', m.group(3)
    fam = family_of(name, types)
    if fam not in help_ or fam not in types:
        err(i, '%s: family %s lacks HELP or TYPE' % (name, fam))
    if fam != current:
        err(i, '%s: sample outside its family block (current %s)' % (name, current))
    if fam in done:
        err(i, '%s: family %s is not contiguous' % (name, fam))
    if types.get(fam) == 'counter' and not name.endswith('_total'):
        err(i, 'counter %s does not end in _total' % name)
    pairs = PAIR.findall(labels)
    keys = [k for k, _ in pairs]
    if len(keys) != len(set(keys)):
        err(i, 'repeated label in ' + line)
    try:
        v = number(value)
    except ValueError:
        err(i, 'value %r is not a number' % value)
        continue
    if types.get(fam) == 'counter' and v < 0:
        err(i, 'negative counter')
    ident = (name, tuple(sorted(pairs)))
    if ident in seen:
        err(i, 'repeated sample ' + line)
    seen.add(ident)
    if types.get(fam) == 'histogram':
        le = [val for k, val in pairs if k == 'le']
        series = (fam, tuple(sorted(p for p in pairs if p[0] != 'le')))
        h = hist.setdefault(series, {'buckets': [], 'sum': None, 'count': None, 'line': i})
        if name == fam + '_bucket':
            if len(le) != 1:
                err(i, 'bucket without le')
                continue
            h['buckets'].append((number(le[0][1:-1]), v, i))
        elif name == fam + '_sum':
            h['sum'] = v
        elif name == fam + '_count':
            h['count'] = v
        else:
            err(i, 'histogram sample %s is not _bucket, _sum or _count' % name)
for (fam, labels), h in hist.items():
    where = '%s%s' % (fam, dict(labels))
    b = h['buckets']
    if not b or b[-1][0] != float('inf'):
        err(h['line'], where + ': no +Inf bucket last')
    for (le0, c0, _), (le1, c1, j) in zip(b, b[1:]):
        if le1 <= le0:
            err(j, where + ': le not increasing')
        if c1 < c0:
            err(j, where + ': bucket counts not cumulative')
    if h['count'] is None or h['sum'] is None:
        err(h['line'], where + ': _count or _sum missing')
    elif b and b[-1][1] != h['count']:
        err(h['line'], where + ': +Inf bucket %g != _count %g' % (b[-1][1], h['count']))
for name in set(help_) ^ set(types):
    err(0, '%s has only one of HELP and TYPE' % name)
for e in errors:
    print('#   ' + e)
sys.exit(1 if errors else 0)
EOF
prom_check() { python3 "$TMP/prom_check.py" "$1"; }
prom_bad() { ! python3 "$TMP/prom_check.py" "$1" >/dev/null; }

# --- the validator itself ------------------------------------------------------------
printf '# HELP kvmtuned_up Whether libvirt is connected.\n# TYPE kvmtuned_up gauge\nkvmtuned_libvirt_connected 1\n' \
        >"$TMP/bad1"
ok "validator: rejects HELP/TYPE for another name (the old Metrics bug)" prom_bad "$TMP/bad1"
printf '# HELP x_total X.\n# TYPE x_total counter\nx_total{a="b} 1\n' >"$TMP/bad2"
ok "validator: rejects an unterminated label value" prom_bad "$TMP/bad2"
printf '# HELP h H.\n# TYPE h histogram\nh_bucket{le="1"} 3\nh_bucket{le="2"} 2\nh_bucket{le="+Inf"} 3\nh_sum 1\nh_count 3\n' \
        >"$TMP/bad3"
ok "validator: rejects non-cumulative buckets" prom_bad "$TMP/bad3"
printf '# HELP h H.\n# TYPE h histogram\nh_bucket{le="1"} 3\nh_bucket{le="+Inf"} 4\nh_sum 1\nh_count 3\n' >"$TMP/bad4"
ok "validator: rejects +Inf != _count" prom_bad "$TMP/bad4"
printf '# HELP c C.\n# TYPE c counter\nc 1\n' >"$TMP/bad5"
ok "validator: rejects a counter without _total" prom_bad "$TMP/bad5"
printf '# HELP g G.\n# TYPE g gauge\ng one\n' >"$TMP/bad6"
ok "validator: rejects a value that is not a number" prom_bad "$TMP/bad6"
printf '# HELP h H.\n# TYPE h histogram\nh_bucket{le="1"} 3\nh_bucket{le="+Inf"} 3\nh_sum 1.5\nh_count 3\n# HELP g G\n# TYPE g gauge\ng{a="x\\"y"} -2.5e3\n' \
        >"$TMP/good"
ok "validator: accepts a valid histogram and an escaped label" prom_check "$TMP/good"

# --- metrics_format's sample (every family filled) ----------------------------------
METRICS_SAMPLE="$TMP/sample.prom" "$BUILDDIR/tests/unit/test-metrics" >/dev/null
ok "unit sample: valid Prometheus text" prom_check "$TMP/sample.prom"

# --- the real kvmtuned ----------------------------------------------------------------
# hp-2node: node 1 has 2M 512 pages (500 free) and 1G 4 pages (2 free).
cp -R "$FIXTURES/hp-2node" "$TMP/hp"
start_kvmtuned "$TMP/k.sock" "$TMP/kvmtuned.log" \
        --sysfs-root "$TMP/hp" --topology "$TOPOLOGIES/2s-xeon-platinum8168-skylake-smt.xml"
run metrics
ok "kvmtunectl metrics: exit 0" rc_is 0
ok "kvmtunectl metrics: valid Prometheus text" prom_check "$TMP/out"
has() { grep -qx -- "$1" "$TMP/out" || { echo "#   no line '$1'"; return 1; }; }
ok "libvirt connected" has 'kvmtuned_libvirt_connected 1'
ok "build info" has "kvmtuned_build_info{version=\"$("$CTL" --version | cut -d' ' -f2)\"} 1"
ok "node 0: reserved = the first core" has 'kvmtuned_node_reserved_pus{node="0"} 2'
ok "node 0: dedicated PUs = online - reserved" has 'kvmtuned_node_dedicated_pus{node="0"} 46'
ok "node 1: dedicated PUs" has 'kvmtuned_node_dedicated_pus{node="1"} 48'
ok "node 1: none used" has 'kvmtuned_node_dedicated_pus_used{node="1"} 0'
ok "node 1: shared pool" has 'kvmtuned_node_shared_pus{node="1"} 48'
ok "node 1: 2M pool from sysfs" has 'kvmtuned_node_hugepages{node="1",size="2M"} 512'
ok "node 1: 1G free from sysfs" has 'kvmtuned_node_hugepages_free{node="1",size="1G"} 2'
ok "every domain state" test "$(grep -c '^kvmtuned_domains{state="\(tuned\|shared\|ignored\|unplaced\|failed\)"} [0-9]*$' "$TMP/out")" -eq 5
# The test driver refuses live vCPU pinning: its one domain is a failed apply.
ok "the test domain failed" has 'kvmtuned_domains{state="failed"} 1'
ok "placement failure counted" has 'kvmtuned_placement_failures_total 1'
ok "no reconnect" has 'kvmtuned_libvirt_reconnects_total 0'
ok "latency histogram, event and hook paths" test "$(grep -c '^kvmtuned_pin_latency_seconds_count{path="\(event\|hook\)"}' "$TMP/out")" -eq 2

"$CTL" --socket "$TMP/k.sock" --json metrics >"$TMP/json" 2>"$TMP/err"
ok "--json metrics: the text in a JSON object" python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
sys.exit(0 if d["text"].startswith("# HELP kvmtuned_") else 1)' "$TMP/json"

# The textfile collector recipe of kvmtunectl(1): write aside, then rename.
mkdir "$TMP/textfile"
"$CTL" --socket "$TMP/k.sock" metrics >"$TMP/textfile/kvmtuned.prom.$$" &&
        mv "$TMP/textfile/kvmtuned.prom.$$" "$TMP/textfile/kvmtuned.prom"
ok "textfile collector recipe: one complete .prom file" prom_check "$TMP/textfile/kvmtuned.prom"
ok "textfile collector recipe: no temporary file left" test "$(ls "$TMP/textfile")" = kvmtuned.prom

stop_daemon
run metrics
ok "daemon gone: exit 3, nothing on stdout" test "$rc" -eq 3 -a ! -s "$TMP/out"

echo "1..$n"
[ "$failed" -eq 0 ]
