#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Decodes .pftrace files with Perfetto's own trace schema: the
`perfetto_trace_pb2` module of PyPI's `perfetto` package (the full
perfetto.protos.Trace, not our subset in actrace_trace.proto).

    pf_schema.py FILE.pftrace[.gz] ...

A file passes when it parses as a perfetto.protos.Trace and no message in
it, at any depth, holds a field the schema does not name (a field number we
made up, or one written with the wrong wire type, lands there), and it has
at least one packet. Prints one line per file; exit 1 if any fails, 77
(skip) when the perfetto package is not importable.
"""
import gzip
import sys

try:
    from google.protobuf import unknown_fields
    from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb
except ImportError as e:  # the venv without the package
    print("pf_schema: skipped: %s (pip install perfetto)" % e)
    sys.exit(77)


def unknowns(msg, path, out):
    """Append 'path: field N' for each unknown field under @p msg."""
    for f in unknown_fields.UnknownFieldSet(msg):
        out.append("%s: field %d (wire type %d) is not in Perfetto's schema"
                   % (path, f.field_number, f.wire_type))
    for fd, value in msg.ListFields():
        if fd.type != fd.TYPE_MESSAGE:
            continue
        if fd.is_repeated:
            for i, m in enumerate(value):
                unknowns(m, "%s.%s[%d]" % (path, fd.name, i), out)
        else:
            unknowns(value, "%s.%s" % (path, fd.name), out)


def check(path):
    with open(path, "rb") as f:
        data = f.read()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    t = pb.Trace()
    try:
        t.ParseFromString(data)
    except Exception as e:  # DecodeError and friends
        return ["does not parse as perfetto.protos.Trace: %s" % e], 0
    if not t.packet:
        return ["no packets"], 0
    bad = []
    for i, p in enumerate(t.packet):
        unknowns(p, "packet[%d]" % i, bad)
        if len(bad) > 20:
            bad.append("...")
            break
    return bad, len(t.packet)


def main(argv):
    if len(argv) < 2:
        print(__doc__.strip())
        return 2
    failed = 0
    for path in argv[1:]:
        bad, n = check(path)
        if bad:
            failed += 1
            print("FAIL %s:\n  %s" % (path, "\n  ".join(bad)))
        else:
            print("ok   %s (%d packets, every field in Perfetto's schema)" % (path, n))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
