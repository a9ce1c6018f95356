#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""`actrace check` on broken Perfetto traces, one per rule it enforces
(tools/actrace/check_pftrace.c): each is built here byte by byte, written
to DIR/broken_<rule>.pftrace, and must fail (exit 1) with its message.
A well-formed trace built the same way must pass, so a rule that fires on
everything is caught too. Usage: check_broken.py ACTRACE DIR"""
import os
import subprocess
import sys


def varint(v):
    out = bytearray()
    while True:
        b = v & 0x7f
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def fv(field, v):
    return varint(field << 3) + varint(v)


def fb(field, data):
    if isinstance(data, str):
        data = data.encode()
    return varint(field << 3 | 2) + varint(len(data)) + data


def fixed64(field, v):
    return varint(field << 3 | 1) + v.to_bytes(8, 'little')


def packet(*fields):
    return fb(1, b''.join(fields))


SEQ, FLAGS, TS, CLOCK = 10, 13, 8, 58


def proc(uuid, pid):
    return packet(fv(SEQ, 1), fb(60, fv(1, uuid) + fb(3, fv(1, pid))))


def thread(uuid, parent, pid, tid):
    return packet(fv(SEQ, 1), fb(60, fv(1, uuid) + fv(5, parent) + fb(4, fv(1, pid) + fv(2, tid))))


def counter_track(uuid, parent):
    return packet(fv(SEQ, 1), fb(60, fv(1, uuid) + fv(5, parent) + fb(2, 'c') + fb(8, b'')))


def seq_start(seq, t0=1000, track=None):
    defaults = fv(CLOCK, 64) + (fb(11, fv(11, track)) if track else b'')
    snap = fb(6, fb(1, fv(1, 64) + fv(2, t0) + fv(3, 1)) + fb(1, fv(1, 3) + fv(2, t0)))
    return packet(fv(SEQ, seq), fv(FLAGS, 1), fb(59, defaults), snap)


def interned_name(iid, name):
    return fb(12, fb(2, fv(1, iid) + fb(2, name)))


def event(seq, dt, typ, track=None, name=None, extra=b'', flags=2):
    te = fv(9, typ) + (fv(11, track) if track else b'') + (fb(23, name) if name else b'') + extra
    return packet(fv(TS, dt), fv(SEQ, seq), fv(FLAGS, flags), fb(11, te))


HEAD = packet(fv(SEQ, 1), fv(FLAGS, 1),
              fb(6, fb(1, fv(1, 6) + fv(2, 5000)) + fb(1, fv(1, 3) + fv(2, 1000)))) + \
    proc(1 << 32, 7) + thread(2 << 32, 1 << 32, 7, 8)
TR = 2 << 32


def good():
    return HEAD + seq_start(2, track=TR) + event(2, 10, 1, name='a') + event(2, 10, 2)


CASES = {
    'ok': (good(), None),
    'no_sequence': (HEAD + packet(fv(TS, 1), fb(11, fv(9, 3) + fv(11, TR) + fb(23, 'x'))),
                    'without a trusted_packet_sequence_id'),
    'no_clear': (HEAD + event(3, 0, 3, track=TR, name='x'),
                 'does not clear incremental state'),
    'iid_undefined': (HEAD + seq_start(2, track=TR) + event(2, 1, 3, extra=fv(10, 5)),
                      'event name iid 5 is not defined'),
    'iid_after_clear': (HEAD + seq_start(2, track=TR) +
                        packet(fv(SEQ, 2), fv(FLAGS, 2), interned_name(5, 'n')) +
                        seq_start(2, track=TR) + event(2, 1, 3, extra=fv(10, 5)),
                        'event name iid 5 is not defined'),
    'duplicate_uuid': (HEAD + proc(1 << 32, 7), 'is described twice'),
    'undefined_track': (HEAD + seq_start(2, track=TR) + event(2, 1, 3, track=99, name='x'),
                        'used before its TrackDescriptor'),
    'missing_parent': (HEAD + thread(3 << 32, 42, 7, 9), 'is not described before it'),
    'self_parent': (HEAD + thread(3 << 32, 3 << 32, 7, 9), 'is its own parent'),
    'pid_zero': (HEAD + proc(5 << 32, 0), 'process descriptor with pid 0'),
    'tid_zero': (HEAD + thread(3 << 32, 1 << 32, 7, 0), 'thread descriptor with tid 0'),
    'end_without_begin': (HEAD + seq_start(2, track=TR) + event(2, 1, 2),
                          'with no open slice'),
    'unbalanced': (HEAD + seq_start(2, track=TR) + event(2, 1, 1, name='x'),
                   'never end'),
    'counter_on_slice_track': (HEAD + seq_start(2, track=TR) + event(2, 1, 4, extra=fixed64(44, 0)),
                               'which is not a counter track'),
    'counter_without_value': (HEAD + counter_track(9, 1 << 32) + seq_start(2) +
                              event(2, 1, 4, track=9), 'counter event without a value'),
    'slice_on_counter_track': (HEAD + counter_track(9, 1 << 32) + seq_start(2) +
                               event(2, 1, 3, track=9, name='x'), 'on counter track'),
    'lonely_flow': (HEAD + seq_start(2, track=TR) + event(2, 1, 3, name='x', extra=fixed64(47, 77)),
                    'flow id 77 is on one event only'),
    'timestamp_overflow': (HEAD + seq_start(2, track=TR) + event(2, 1 << 63, 3, name='x'),
                           'passes 2^63'),
    'clock_not_in_snapshot': (HEAD + packet(fv(TS, 5), fv(CLOCK, 1), fv(SEQ, 4), fv(FLAGS, 1),
                                            fb(11, fv(9, 3) + fv(11, TR) + fb(23, 'x'))),
                              'clock 1, which no ClockSnapshot defines'),
    'sequence_clock_missing': (HEAD + packet(fv(SEQ, 2), fv(FLAGS, 1), fb(59, fv(CLOCK, 64))) +
                               event(2, 1, 3, track=TR, name='x'),
                               'sequence-scoped clock 64 with no ClockSnapshot'),
    # Flow id 2^64-1: once the map's empty marker (id + 1 wrapped to 0), so
    # a one-ended flow with it passed; on two events it is a flow.
    'lonely_flow_max_id': (HEAD + seq_start(2, track=TR) +
                           event(2, 1, 3, name='x', extra=fixed64(47, 2**64 - 1)),
                           'flow id 18446744073709551615 is on one event only'),
    'flow_max_id_pair': (HEAD + seq_start(2, track=TR) +
                         event(2, 1, 3, name='x', extra=fixed64(47, 2**64 - 1)) +
                         event(2, 1, 3, name='y', extra=fixed64(48, 2**64 - 1)), None),
    # Interned ids of 2^56 or more: once keyed (kind << 56 | iid), so name
    # iid 2^57+5 defined name iid 5, and category iid 2^57+5 defined debug
    # annotation name iid 5.
    'iid_past_2_56_same_kind': (HEAD + seq_start(2, track=TR) +
                                packet(fv(SEQ, 2), fv(FLAGS, 2), interned_name(2**57 + 5, 'n')) +
                                event(2, 1, 3, extra=fv(10, 5)),
                                'event name iid 5 is not defined'),
    'iid_past_2_56_other_kind': (HEAD + seq_start(2, track=TR) +
                                 packet(fv(SEQ, 2), fv(FLAGS, 2),
                                        fb(12, fb(1, fv(1, 2**57 + 5) + fb(2, 'c')))) +
                                 event(2, 1, 3, name='x', extra=fb(4, fv(1, 5) + fv(4, 1))),
                                 'debug annotation name iid 5 is not defined'),
    'iid_past_2_56_ok': (HEAD + seq_start(2, track=TR) +
                         packet(fv(SEQ, 2), fv(FLAGS, 2), interned_name(2**63 + 5, 'n')) +
                         event(2, 1, 3, extra=fv(10, 2**63 + 5)), None),
}


def main():
    actrace, out = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    bad = 0
    for name, (data, msg) in CASES.items():
        path = os.path.join(out, f'broken_{name}.pftrace' if msg else 'ok_built.pftrace')
        with open(path, 'wb') as f:
            f.write(data)
        r = subprocess.run([actrace, 'check', path], capture_output=True, text=True)
        want = 1 if msg else 0
        if r.returncode != want or (msg and msg not in r.stdout):
            bad += 1
            print(f'{name}: exit {r.returncode} (want {want}), wanted {msg!r} in:\n{r.stdout}{r.stderr}')
        else:
            print(f'{name}: ok ({r.stdout.splitlines()[0] if r.stdout else ""})')
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
