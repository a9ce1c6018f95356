#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Checks a .pftrace written by actrace (tests/perfetto/tests.cmake).

1. Decodes it with `protoc --decode` against actrace_trace.proto, our own
   subset of Perfetto's schema: protoc prints a field the subset does not
   name as a bare number and still exits 0, so any such line fails.
2. Runs `actrace check` on it (trace_processor's rules).
3. With --json, compares it with the JSON trace of the same data: per
   track (pid, tid) the same slices (name, start, duration, args), instants,
   counter samples per series, and flows (id, track, time).

Exit 0 when all hold, 1 with the differences, 77 (skip) without protoc.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys

UNKNOWN = re.compile(r'^\s*[0-9]+(: | \{)')


def parse_text(text):
    """protoc's text format into nested lists of (key, value) pairs."""
    root = []
    stack = [root]
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        if line == '}':
            stack.pop()
            continue
        if line.endswith('{'):
            node = []
            stack[-1].append((line[:-1].strip(), node))
            stack.append(node)
            continue
        key, _, val = line.partition(': ')
        stack[-1].append((key, val))
    return root


def get(msg, key, default=None):
    for k, v in msg:
        if k == key:
            return v
    return default


def getall(msg, key):
    return [v for k, v in msg if k == key]


def unquote(v):
    """A protoc string literal (C escapes, octal for bytes) into text."""
    assert v.startswith('"') and v.endswith('"'), v
    raw = v[1:-1].encode('latin-1', 'backslashreplace')
    return raw.decode('unicode_escape').encode('latin-1').decode('utf-8', 'replace')


def num(v):
    return float(v) if any(c in v for c in '.eEn') else int(v)


def decode_pftrace(protoc, proto, path):
    import os
    with open(path, 'rb') as f:
        data = f.read()
    if data[:2] == b'\x1f\x8b':
        import gzip
        data = gzip.decompress(data)
    r = subprocess.run([protoc, '--decode=actrace.pf.Trace', '-I', os.path.dirname(proto), proto],
                       input=data, capture_output=True)
    if r.returncode != 0:
        sys.exit(f'{path}: protoc failed: {r.stderr.decode(errors="replace")}')
    if r.stderr.strip():
        sys.exit(f'{path}: protoc warned: {r.stderr.decode(errors="replace")}')
    text = r.stdout.decode('utf-8')
    bad = [l for l in text.splitlines() if UNKNOWN.match(l)]
    if bad:
        sys.exit(f'{path}: fields outside the schema (numbered by protoc):\n' + '\n'.join(bad[:20]))
    return parse_text(text)


def model_pftrace(tree):
    """Slices, instants, counters and flows per track, times in ns since
    the first clock snapshot's MONOTONIC reading."""
    tracks, seqs, base = {}, {}, None
    slices, instants, counters, flows = {}, {}, {}, set()
    open_ = {}
    for _, pkt in tree:
        seq = int(get(pkt, 'trusted_packet_sequence_id', '0'))
        st = seqs.setdefault(seq, {'names': {}, 'cats': {}, 'keys': {}, 'vals': {}, 'ts': 0,
                                   'track': 0})
        if int(get(pkt, 'sequence_flags', '0')) & 1:
            for k in ('names', 'cats', 'keys', 'vals'):
                st[k] = {}
        cs = get(pkt, 'clock_snapshot')
        if cs is not None:
            for c in getall(cs, 'clocks'):
                cid, ts = int(get(c, 'clock_id')), int(get(c, 'timestamp'))
                if cid == 3 and base is None:
                    base = ts
                if cid == 64:
                    st['ts'] = ts
        d = get(pkt, 'trace_packet_defaults')
        if d is not None:
            ted = get(d, 'track_event_defaults')
            if ted is not None:
                st['track'] = int(get(ted, 'track_uuid'))
        idata = get(pkt, 'interned_data')
        if idata is not None:
            for field, key in (('event_names', 'names'), ('event_categories', 'cats'),
                               ('debug_annotation_names', 'keys')):
                for e in getall(idata, field):
                    st[key][int(get(e, 'iid'))] = unquote(get(e, 'name'))
            for e in getall(idata, 'debug_annotation_string_values'):
                st['vals'][int(get(e, 'iid'))] = unquote(get(e, 'str'))
        td = get(pkt, 'track_descriptor')
        if td is not None:
            uuid = int(get(td, 'uuid'))
            tracks[uuid] = td
        if get(pkt, 'timestamp') is not None:
            st['ts'] += int(get(pkt, 'timestamp'))
        te = get(pkt, 'track_event')
        if te is None:
            continue
        ts = st['ts'] - base
        uuid = int(get(te, 'track_uuid', str(st['track'])))
        typ = get(te, 'type')
        if typ == 'TYPE_COUNTER':
            name = unquote(get(tracks[uuid], 'name'))
            counters.setdefault(name, []).append((ts, float(get(te, 'double_counter_value'))))
            continue
        # actrace's uuids: pid << 32 | 1 << 31 | tid (bit 61: pid 0).
        key = (0 if uuid & (1 << 61) else uuid >> 32, uuid & 0x7fffffff)
        if typ == 'TYPE_SLICE_END':
            name, t0, args = open_[uuid].pop()
            slices.setdefault(key, []).append((name, t0, ts - t0, args))
            continue
        name = get(te, 'name')
        name = unquote(name) if name else st['names'][int(get(te, 'name_iid'))]
        args = {}
        for a in getall(te, 'debug_annotations'):
            k = get(a, 'name')
            k = unquote(k) if k else st['keys'][int(get(a, 'name_iid'))]
            for vk, v in a:
                if vk in ('name', 'name_iid'):
                    continue
                if vk == 'string_value':
                    args[k] = unquote(v)
                elif vk == 'string_value_iid':
                    args[k] = st['vals'][int(v)]
                elif vk == 'bool_value':
                    args[k] = v == 'true'
                elif vk == 'legacy_json_value':
                    args[k] = json.loads(unquote(v))
                else:
                    args[k] = num(v)
        for f in getall(te, 'flow_ids'):
            flows.add((int(f), key, ts, 's'))
        for f in getall(te, 'terminating_flow_ids'):
            flows.add((int(f), key, ts, 'f'))
        if typ == 'TYPE_SLICE_BEGIN':
            open_.setdefault(uuid, []).append((name, ts, args))
        else:
            instants.setdefault(key, []).append((name, ts, args))
    left = {u: v for u, v in open_.items() if v}
    if left:
        sys.exit(f'slices never ended on tracks {sorted(left)}')
    # Counter tracks' units: CounterDescriptor.unit (3) and unit_name (6),
    # decoded by those numbers through actrace_trace.proto.
    units = {}
    for td in tracks.values():
        cd = get(td, 'counter')
        if cd is not None and get(td, 'name') is not None:
            un = get(cd, 'unit_name')
            units[unquote(get(td, 'name'))] = (get(cd, 'unit'), unquote(un) if un else None)
    return slices, instants, counters, flows, units


def model_json(path):
    import gzip
    opener = gzip.open if path.endswith('.gz') else open
    with opener(path, 'rt', encoding='utf-8') as f:
        doc = json.load(f)
    slices, instants, counters, flows = {}, {}, {}, set()

    def ns(v):
        return round(v * 1000)
    for e in doc['traceEvents']:
        ph = e.get('ph')
        key = (e.get('pid'), e.get('tid'))
        if not isinstance(key[0], int) or (ph != 'C' and not isinstance(key[1], int)):
            continue  # convert skips (and counts) events without integer ids
        if ph == 'X':
            slices.setdefault(key, []).append((e['name'], ns(e['ts']), ns(e['dur']),
                                               e.get('args', {})))
        elif ph == 'i':
            instants.setdefault(key, []).append((e['name'], ns(e['ts']), e.get('args', {})))
        elif ph == 'C':
            for k, v in e['args'].items():
                counters.setdefault(f"{e['name']} {k}", []).append((ns(e['ts']), float(v)))
        elif ph in ('s', 'f'):
            flows.add((e['id'], key, ns(e['ts']), ph))
    return doc, slices, instants, counters, flows


def compare(pf, js, dur_slack):
    errors = []
    pslices, pinst, pcount, pflows, punits = pf
    doc, jslices, jinst, jcount, jflows = js
    # Trace metadata: one instant on the "actrace" track (uuid 1).
    meta = pinst.pop((0, 1), [])
    if len(meta) != 1 or meta[0][0] != 'actraceMetadata':
        errors.append(f'no single actraceMetadata instant: {meta}')
    else:
        m = meta[0][2]
        for k in ('baseTimeNanoseconds', 'host_name', 'trace_id', 'group_trace_id',
                  'actraceProcessStart', 'actraceProcessId', 'actraceStats', 'deviceProperties', 'actraceRecovered'):
            if m.get(k) != doc.get(k):
                errors.append(f'metadata {k}: {m.get(k)!r} != {doc.get(k)!r}')
    for key in sorted(set(pslices) | set(jslices), key=str):
        a = sorted(pslices.get(key, []), key=lambda s: (s[1], -s[2], s[0]))
        b = sorted(jslices.get(key, []), key=lambda s: (s[1], -s[2], s[0]))
        if len(a) != len(b):
            errors.append(f'track {key}: {len(a)} slices in the .pftrace, {len(b)} in the JSON')
            continue
        for x, y in zip(a, b):
            if x[0] != y[0] or x[1] != y[1] or not (0 <= x[2] - y[2] <= dur_slack) or x[3] != y[3]:
                errors.append(f'track {key}: slice {x} != {y}')
    for key in sorted(set(pinst) | set(jinst), key=str):
        a = sorted(pinst.get(key, []), key=lambda s: (s[1], s[0]))
        b = sorted(jinst.get(key, []), key=lambda s: (s[1], s[0]))
        if a != b:
            errors.append(f'track {key}: instants {a} != {b}')
    # JSON repeats every series' latest value at each time of its track; the
    # .pftrace has only the samples: each must be in the JSON.
    for name in sorted(set(pcount) | set(jcount)):
        a, b = set(pcount.get(name, [])), set(jcount.get(name, []))
        if not a or not a <= b:
            errors.append(f'counter {name!r}: {sorted(a)} not within {sorted(b)}')
    # Every series' unit (actraceStats.counters) on its counter track: the
    # text as unit_name, and the enum where one fits.
    enum = {'bytes': 'UNIT_SIZE_BYTES', 'B': 'UNIT_SIZE_BYTES', 'ns': 'UNIT_TIME_NS',
            'count': 'UNIT_COUNT'}
    series = (doc.get('actraceStats') or {}).get('counters', [])
    matched = 0
    for s in series:
        name = f"{s['track'] or '(unnamed)'} {s['series'] or 'value'}"
        if name not in punits:
            continue  # a renamed track (a clash): its samples are compared above
        matched += 1
        want = (enum.get(s['unit']), s['unit'] or None)
        if punits[name] != want:
            errors.append(f'counter track {name!r}: unit {punits[name]} != {want}')
    if series and not matched:
        errors.append(f'no counter track of the {len(series)} series in actraceStats')
    if pflows != jflows:
        errors.append(f'flows differ: only in .pftrace {sorted(pflows - jflows)}, '
                      f'only in JSON {sorted(jflows - pflows)}')
    return errors


def json_arg_kinds(slices, what):
    """gen_pftrace's JSON args (act_arg_json): keys "json ok ..." hold JSON
    values (a legacy_json_value; a JSON value in the JSON trace), keys
    "json bad ..." strings (their text is no valid JSON); aten::mm's
    "Input Dims" and "Input type" are Kineto's arrays."""
    errs, seen, named = [], 0, None
    for evs in slices.values():
        for name, _t0, _dur, args in evs:
            if name == 'json args':
                named = args
            for k, v in args.items():
                if not (k.startswith('json ') or (name == 'aten::mm' and k.startswith('Input '))):
                    continue
                seen += 1
                want_str = k.startswith('json bad')
                if isinstance(v, str) != want_str:
                    errs.append(f'{what}: {name!r} arg {k!r} = {v!r}: '
                                f'{"a string" if want_str else "a JSON value"} expected')
    want = {'json ok obj': {'a': [1, -2500, True, None], '\u00e9\U0001f600': {}},
            'json ok num': 42, 'json bad open': '[[1, 2], [3',
            'json bad inject': '1}, {"ph": "X"', 'json bad utf8': '["\ufffd"]',
            'json bad surrogate': '["\\ud800"]', 'json bad empty': ''}
    if named != want:
        errs.append(f'{what}: "json args" has {named!r}, expected {want!r}')
    if seen < 50 * 2:
        errs.append(f'{what}: {seen} JSON args found')
    return errs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--protoc', default='')
    ap.add_argument('--proto', required=True)
    ap.add_argument('--actrace')
    ap.add_argument('--json')
    ap.add_argument('--dur-slack', type=int, default=2)
    ap.add_argument('--convert', action='store_true',
                    help='first write each PFTRACE with `actrace convert JSON PFTRACE`')
    ap.add_argument('pftrace', nargs='+')
    a = ap.parse_args()
    protoc = a.protoc if a.protoc and not a.protoc.endswith('NOTFOUND') else shutil.which('protoc')
    if not protoc:
        print('SKIP: protoc not found (apt-get install protobuf-compiler; scripts/deps.sh does)')
        return 77
    errors = []
    for path in a.pftrace:
        if a.convert:
            r = subprocess.run([a.actrace, 'convert', a.json, path], capture_output=True, text=True)
            if r.returncode != 0:
                sys.exit(f'actrace convert {a.json} {path} failed:\n{r.stdout}{r.stderr}')
        tree = decode_pftrace(protoc, a.proto, path)
        if a.actrace:
            r = subprocess.run([a.actrace, 'check', path], capture_output=True, text=True)
            if r.returncode != 0:
                errors.append(f'actrace check {path} failed:\n{r.stdout}{r.stderr}')
        if a.json:
            pf = model_pftrace(tree)
            js = model_json(a.json)
            errors += [f'{path}: {e}' for e in compare(pf, js, a.dur_slack)]
            if os.path.basename(a.json) == 'gen.json':
                errors += json_arg_kinds(pf[0], path) + json_arg_kinds(js[1], a.json)
        print(f'{path}: {len(tree)} packets decoded')
    for e in errors[:50]:
        print(e)
    return 1 if errors else 0


if __name__ == '__main__':
    sys.exit(main())
