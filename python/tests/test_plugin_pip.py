# SPDX-License-Identifier: MIT
"""A plugin author with a pip-installed actrace: the example plugin's
Makefile finds actrace-plugin.pc through `python -m actrace
--pkg-config-path`, and the plugin it builds records under `actrace
record` (docs/plugin-guide.md, the pip route)."""
import os
import shutil
import subprocess

from conftest import ROOT, events


def test_example_plugin_builds_against_the_wheel(venv, tmp_path):
    def ask(flag):
        return subprocess.check_output([venv.python, "-m", "actrace", flag], text=True).strip()
    pc = ask("--pkg-config-path")
    assert os.path.isfile(os.path.join(pc, "actrace-plugin.pc")), pc
    assert os.path.isdir(ask("--plugin-dir"))
    assert ask("--cflags") == "-I" + ask("--include-dir")
    src = tmp_path / "example"
    shutil.copytree(os.path.join(ROOT, "plugins", "example"), src)
    env = venv.env(PKG_CONFIG_PATH=pc)
    r = subprocess.run(["make", "-C", str(src)], env=env, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True)
    assert r.returncode == 0, r.stdout
    so = src / "example.so"
    assert so.exists()
    r = subprocess.run(["pkg-config", "--variable=plugindir", "actrace-plugin"], env=env,
                       stdout=subprocess.PIPE, text=True)
    assert os.path.realpath(r.stdout.strip()) == os.path.realpath(ask("--plugin-dir"))
    out = tmp_path / "t.json"
    r = subprocess.run([venv.actrace, "record", "--no-default-plugins", "--plugin", str(so),
                        "-o", str(out), "--", "sleep", "0.2"], env=venv.env(),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert r.returncode == 0, r.stderr
    t = venv.check_trace(str(out))
    assert any(isinstance(e.get("pid"), int) and e["pid"] >= 0x40000000
               for e in events(t, ph="X")), "the example's device work"
