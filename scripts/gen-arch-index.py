#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The index of docs/architecture.md: where each CLI flag, config key,
environment variable and trace field is handled, generated from the code.

    scripts/gen-arch-index.py [--actrace build/bin/actrace]          rewrite the index
    scripts/gen-arch-index.py --check [--actrace build/bin/actrace]  exit 1 naming every
                                                                      item the index lacks

Items come from what the code declares: the flags from `actrace help` and
each command's --help (the built binary), the config keys from
src/config/keys.c's table, the environment variables from string
literals "ACTRACE_*" / "KINETO_*" in the sources, the trace fields from the
JSON keys the writers (src/writer, record/merge in tools/actrace, the
torch bridge in python/src) put in a trace. "Handled in" lists the source
files whose string literals name the item (tests excluded). The index sits
between the markers <!-- index:begin --> and <!-- index:end -->.
"""
import argparse
import glob
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOC = os.path.join(ROOT, "docs", "architecture.md")
BEGIN, END = "<!-- index:begin -->", "<!-- index:end -->"
# Where handling code lives (tests, benches and fuzzers are not handlers).
CODE_DIRS = ["src", "tools", "plugins", "python/actrace", "python/src", "include"]
EXTS = (".c", ".h", ".cpp", ".py")
# Files that write trace fields (JSON keys in C string literals).
WRITER_GLOBS = ["src/writer/*.c", "tools/actrace/record_merge.c", "tools/actrace/merge_meta.c",
                "tools/actrace/cmd_merge.c", "tools/actrace/record_light.c",
                "tools/actrace/record_split.c", "python/src/*.cpp", "python/src/*.c"]


def code_files():
    out = []
    for d in CODE_DIRS:
        for dp, _, fs in os.walk(os.path.join(ROOT, d)):
            out += [os.path.join(dp, f) for f in fs if f.endswith(EXTS)]
    return sorted(out)


_TEXT = {}


def text(path):
    if path not in _TEXT:
        with open(path, encoding="utf-8", errors="replace") as f:
            _TEXT[path] = f.read()
    return _TEXT[path]


def rel(p):
    return os.path.relpath(p, ROOT)


def where(patterns, exclude=()):
    """Files whose text matches any of @p patterns (regexes)."""
    rx = re.compile("|".join(patterns))
    return [rel(f) for f in code_files() if rel(f) not in exclude and rx.search(text(f))]


# ---- items -------------------------------------------------------------------

FLAG = re.compile(r"(?<![\w-])(--[a-z][a-z0-9-]*|-[a-zA-Z])(?![\w-])")


def cli_flags(actrace):
    """{command: [flags]} from the binary's help texts."""
    top = subprocess.run([actrace, "help"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True).stdout
    cmds = []
    for line in top.splitlines():
        m = re.match(r"^  ([a-z]+)\b", line)
        if m and m.group(1) not in cmds:
            cmds.append(m.group(1))
    out = {}
    for c in cmds:
        h = subprocess.run([actrace, c, "--help"], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True).stdout
        flags = []
        for f in FLAG.findall(h):
            if f not in flags and f not in ("-h", "--help"):
                flags.append(f)
        out[c] = flags
    return out


def flag_files(cmd, flag):
    """The command's files (tools/actrace/) that name @p flag, cmd_<cmd>.c first."""
    bare = re.escape(flag.lstrip("-"))
    pats = [r'"%s[="]' % re.escape(flag)]
    if flag.startswith("--"):
        pats.append(r'\{"%s",\s*(no|required|optional)_argument' % bare)  # getopt_long
    files = [f for f in where(pats) if f.startswith("tools/actrace/")]
    own = "tools/actrace/cmd_%s.c" % cmd
    return sorted(files, key=lambda f: (f != own, f))


def config_keys():
    t = text(os.path.join(ROOT, "src", "config", "keys.c"))
    body = t[t.index("act__config_keys[]"):]
    body = body[:body.index("};")]
    keys = []
    for k in re.findall(r'"([A-Z][A-Z0-9_]+)"', body):
        if k not in keys:
            keys.append(k)
    return keys


def env_vars():
    names = set()
    for f in code_files():
        names.update(re.findall(r'"((?:ACTRACE|KINETO)_[A-Z0-9_]+)"', text(f)))
    return sorted(names)


def trace_fields():
    fields = {}
    for g in WRITER_GLOBS:
        for f in sorted(glob.glob(os.path.join(ROOT, g))):
            for k in re.findall(r'\\"([A-Za-z_][A-Za-z0-9_ #]*)\\"\s*:', text(f)):
                fields.setdefault(k, [])
                if rel(f) not in fields[k]:
                    fields[k].append(rel(f))
    return fields


# ---- the index -----------------------------------------------------------------

def files_cell(files, limit=6):
    if not files:
        return "(declared only)"
    shown = ", ".join("`%s`" % f for f in files[:limit])
    return shown + (" and %d more" % (len(files) - limit) if len(files) > limit else "")


def build_index(actrace):
    out = [BEGIN,
           "<!-- generated by scripts/gen-arch-index.py; the ArchIndex test fails when a flag,",
           "     key, variable or field is missing: rerun the script, do not edit by hand -->", ""]
    out += ["### CLI flags", "",
            "Each command is `tools/actrace/cmd_<command>.c` (`main.c` dispatches);",
            "`--help` there and docs/cli.md say what a flag does.", "",
            "| command | flag | handled in |", "|---|---|---|"]
    for cmd, flags in cli_flags(actrace).items():
        for fl in flags:
            out.append("| %s | `%s` | %s |" % (cmd, fl, files_cell(flag_files(cmd, fl))))
    out += ["", "### Config keys", "",
            "Declared (kind, range, default) in `src/config/keys.c`; docs/config.md says",
            "what each does.", "",
            "| key | read in |", "|---|---|"]
    keys_c = text(os.path.join(ROOT, "src", "config", "keys.c"))
    for k in config_keys():
        files = where([r'"%s"' % k], exclude=("src/config/keys.c",))
        compat = re.search(r'(COMPAT_\w+\("%s"|\{"%s",[^}]*ACT__KF_COMPAT)' % (k, k), keys_c)
        cell = files_cell(files) if files or not compat else \
            "(Kineto's key: checked and kept, no effect in actrace)"
        out.append("| `%s` | %s |" % (k, cell))
    out += ["", "### Environment variables", "",
            "| variable | read or set in |", "|---|---|"]
    for v in env_vars():
        out.append("| `%s` | %s |" % (v, files_cell(where([r'"%s"' % v]))))
    out += ["", "### Trace fields", "",
            "JSON keys a trace carries (top level, `args`, `actraceStats`, metadata), with",
            "the files that write them; `actrace summary`/`check` read them in",
            "`tools/actrace/` (summary_collect.c, cmd_check.c).", "",
            "| field | written in |", "|---|---|"]
    for k, files in sorted(trace_fields().items(), key=lambda kv: kv[0].lower()):
        out.append("| `%s` | %s |" % (k, files_cell(files)))
    out += ["", END]
    return "\n".join(out) + "\n"


def items_of(index_text):
    """Every backquoted item in the index's first cells (flags also by command)."""
    out = set()
    for line in index_text.splitlines():
        m = re.match(r"^\| ([a-z]+) \| `([^`]+)` \|", line)
        if m:
            out.add((m.group(1), m.group(2)))
            continue
        m = re.match(r"^\| `([^`]+)` \|", line)
        if m:
            out.add(m.group(1))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--actrace", default=os.path.join(ROOT, "build", "bin", "actrace"))
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--doc", default=DOC)
    a = ap.parse_args()
    doc = open(a.doc, encoding="utf-8").read()
    if BEGIN not in doc or END not in doc:
        sys.exit("%s: no %s ... %s markers" % (a.doc, BEGIN, END))
    new = build_index(a.actrace)
    head, rest = doc.split(BEGIN, 1)
    tail = rest.split(END, 1)[1]
    if a.check:
        have = items_of(doc[doc.index(BEGIN):doc.index(END)])
        want = items_of(new)
        missing = sorted(want - have, key=str)
        stale = sorted(have - want, key=str)
        for m in missing:
            print("%s: index lacks %s" % (rel(a.doc), "flag %s of %s" % (m[1], m[0])
                                          if isinstance(m, tuple) else m))
        for m in stale:
            print("%s: index names %s, which the code no longer has" % (rel(a.doc), m))
        if missing or stale:
            print("rerun: scripts/gen-arch-index.py --actrace %s" % a.actrace)
            return 1
        print("arch index: ok (%d items)" % len(want))
        return 0
    with open(a.doc, "w", encoding="utf-8") as f:
        f.write(head + new.rstrip("\n") + tail)
    return 0


if __name__ == "__main__":
    sys.exit(main())
