# SPDX-License-Identifier: MIT
"""Every ```sh and ```python block in README.md and docs/*.md runs as
written (ctest -R DocBlocks; `pytest python/tests/test_doc_blocks.py -k
cli.md` picks one file's blocks).

A block is skipped only when the line before its fence (blank lines
between allowed) is `<!-- notest: REASON -->` with a reason, or
`<!-- example: NAME ... -->`, a block test_docs.py runs with assertions of
its own (it must name the example there). A block that names the reader's
own program runs with `<!-- with: ./app=PROGRAM ... -->` before it: each
`./NAME=PROGRAM` puts a link named NAME in the block's folder to PROGRAM
(a path under the build, e.g. `bin/actrace-demo`), so the block runs as
written on a program of ours. Each block runs in a fresh temporary folder
with:
  - PATH: the build's bin/ (actrace, actrace-demo, ...), then the wheel
    venv's bin/ (python, python3, pip);
  - ACT_SOURCE_DIR and ACT_BUILD_DIR: the source tree and the build;
  - `build` there: a link to the build, so `build/bin/actrace` and
    `build/traces/demo.json` work as in the README after `make demo`.
sh blocks run with `sh -e`, python blocks with the venv's python. A failure
names the file and line of the block's fence.
"""
import glob
import os
import re
import subprocess

import pytest

from conftest import ROOT, WORK

LANGS = {"sh": "sh", "bash": "sh", "python": "python"}
NOTEST = re.compile(r"<!--\s*notest:\s*(\S.*?)\s*-->")
EXAMPLE = re.compile(r"<!--\s*example:\s*(\w+)")
WITH = re.compile(r"<!--\s*with:\s*(\S.*?)\s*-->")
WITH_PAIR = re.compile(r"^\./([\w.-]+)=([\w./-]+)$")
FENCE = re.compile(r"^```(\w*)\s*$")


def _build_dir():
    b = os.environ.get("ACT_BUILD_DIR") or os.path.join(ROOT, "build")
    return os.path.abspath(b)


def blocks(path):
    """(line, lang, text, marker) for each fenced block of @p path; marker
    is the comment line before the fence, or ""."""
    out = []
    lines = open(path, encoding="utf-8").read().split("\n")
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        start, lang = i, m.group(1)
        j = i + 1
        while j < len(lines) and not lines[j].startswith("```"):
            j += 1
        k = start - 1
        while k >= 0 and not lines[k].strip():
            k -= 1
        marker = lines[k].strip() if k >= 0 and lines[k].strip().startswith("<!--") else ""
        if lang in LANGS:
            out.append((start + 1, LANGS[lang], "\n".join(lines[start + 1:j]) + "\n", marker))
        i = j + 1
    return out


def _files():
    return [os.path.join(ROOT, "README.md")] + sorted(glob.glob(os.path.join(ROOT, "docs", "*.md")))


def _cases():
    cases = []
    for f in _files():
        rel = os.path.relpath(f, ROOT)
        for line, lang, text, marker in blocks(f):
            cases.append(pytest.param(rel, line, lang, text, marker, id="%s:%d" % (rel, line)))
    return cases


def test_markers_are_well_formed():
    """A `notest` marker has a reason; an `example` block is one a test runs
    (test_docs.py, or a test under tests/ that names its marker, as
    tests/ondemand/test_ondemand.py does); a marker sits right before a
    block of a language this test runs."""
    import glob
    runners = [os.path.join(os.path.dirname(__file__), "test_docs.py")]
    runners += glob.glob(os.path.join(ROOT, "tests", "**", "test_*.py"), recursive=True)
    test_docs = "\n".join(open(p, encoding="utf-8").read() for p in runners)
    bad = []
    for f in _files():
        rel = os.path.relpath(f, ROOT)
        text = open(f, encoding="utf-8").read().split("\n")
        for n, l in enumerate(text, 1):
            if "<!-- notest" in l and not NOTEST.search(l):
                bad.append("%s:%d: notest without a reason: %s" % (rel, n, l.strip()))
        for line, lang, body, marker in blocks(f):
            m = EXAMPLE.match(marker)
            if m and "example: " + m.group(1) not in test_docs:
                bad.append("%s:%d: example %s is run by no test (test_docs.py, tests/**/test_*.py)"
                           % (rel, line, m.group(1)))
            w = WITH.match(marker)
            for pair in (w.group(1).split() if w else []):
                p = WITH_PAIR.match(pair)
                if not p or ".." in p.group(2).split("/"):
                    bad.append("%s:%d: `with:` wants ./NAME=PATH-UNDER-THE-BUILD, not %r"
                               % (rel, line, pair))
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("rel,line,lang,text,marker", _cases())
def test_block_runs(venv, tmp_path, rel, line, lang, text, marker):
    m = NOTEST.match(marker)
    if m:
        pytest.skip("%s:%d: notest: %s" % (rel, line, m.group(1)))
    if EXAMPLE.match(marker):
        pytest.skip("%s:%d: run by test_docs.py" % (rel, line))
    build = _build_dir()
    os.symlink(build, str(tmp_path / "build"))
    w = WITH.match(marker)
    for pair in (w.group(1).split() if w else []):
        p = WITH_PAIR.match(pair)
        assert p, "%s:%d: bad `with:` pair %r" % (rel, line, pair)
        prog = os.path.join(build, p.group(2))
        if not os.access(prog, os.X_OK):
            pytest.skip("%s:%d: %s is not built here" % (rel, line, p.group(2)))
        os.symlink(prog, str(tmp_path / p.group(1)))
    env = venv.env(ACT_SOURCE_DIR=ROOT, ACT_BUILD_DIR=build, HOME=str(tmp_path),
                   ACTRACE_CACHE_DIR=os.path.join(WORK, "torch-cache"))
    env["PATH"] = os.pathsep.join([os.path.join(build, "bin"), os.path.join(venv.path, "bin"),
                                   env.get("PATH", "/usr/bin:/bin")])
    env.pop("VIRTUAL_ENV", None)
    script = tmp_path / ("block.sh" if lang == "sh" else "block.py")
    script.write_text(text)
    cmd = ["sh", "-e", str(script)] if lang == "sh" else [venv.python, str(script)]
    try:
        r = subprocess.run(cmd, cwd=str(tmp_path), env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, timeout=600)
    except subprocess.TimeoutExpired:
        pytest.fail("%s:%d: the ```%s block ran past 600 s" % (rel, line, lang), pytrace=False)
    if r.returncode != 0:
        pytest.fail("%s:%d: the ```%s block failed (exit %d); mark it `<!-- notest: reason -->` "
                    "only if it cannot run in the tests\n--- block ---\n%s--- output (last 4000 "
                    "chars) ---\n%s" % (rel, line, lang, r.returncode, text, r.stdout[-4000:]),
                    pytrace=False)
