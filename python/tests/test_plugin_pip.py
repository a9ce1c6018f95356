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


CMAKE_APP = r'''
cmake_minimum_required(VERSION 3.25)
project(uses_actrace LANGUAGES C)
find_package(actrace 0.1 REQUIRED)
add_executable(app app.c)
target_link_libraries(app PRIVATE actrace::actrace)
'''

APP_C = r'''
#include <stdio.h>
#include <actrace/actrace.h>
int main(void) { printf("%s\n", act_activity_type_name(ACT_RUNTIME)); return 0; }
'''


def _cmake_build(venv, src, build, define):
    """Configure @p src into @p build with one -D @p define, then build it;
    either step failing fails the test with CMake's output."""
    for cmd in (["cmake", "-S", str(src), "-B", str(build), define], ["cmake", "--build", str(build)]):
        r = subprocess.run(cmd, env=venv.env(), stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)
        assert r.returncode == 0, r.stdout


def test_find_package_from_the_wheel(venv, tmp_path):
    """find_package(actrace) works against the pip-installed package (its
    CMake package is inside it): a program links libactrace and runs, and
    the example plugin builds out of tree with act_add_plugin()."""
    if not shutil.which("cmake"):
        import pytest
        pytest.skip("no cmake")
    prefix = subprocess.check_output([venv.python, "-m", "actrace", "--cmake-prefix-path"],
                                     text=True).strip()
    cmdir = subprocess.check_output([venv.python, "-m", "actrace", "--cmake-dir"],
                                    text=True).strip()
    assert os.path.isfile(os.path.join(cmdir, "actraceConfig.cmake")), cmdir
    app = tmp_path / "app"
    app.mkdir()
    (app / "CMakeLists.txt").write_text(CMAKE_APP)
    (app / "app.c").write_text(APP_C)
    b = tmp_path / "app-build"
    _cmake_build(venv, app, b, "-DCMAKE_PREFIX_PATH=" + prefix)
    r = subprocess.run([str(b / "app")], stdout=subprocess.PIPE, text=True)
    assert r.returncode == 0 and r.stdout.strip() == "runtime", r.stdout
    src = tmp_path / "example"
    shutil.copytree(os.path.join(ROOT, "plugins", "example"), src)
    eb = tmp_path / "example-build"
    _cmake_build(venv, src, eb, "-Dactrace_DIR=" + cmdir)
    assert (eb / "plugins" / "example.so").exists()


def test_enable_needs_no_compiler(venv, tmp_path):
    """The wheel ships the torch shims prebuilt for the torch it was built
    against: with no C++ compiler anywhere (PATH holds none, CXX names
    none) and an empty shim cache, enable() and record_ops() work and
    build nothing (before: enable() said 'no C++ compiler' and was off)."""
    nocc = tmp_path / "bin"
    nocc.mkdir()
    cache = tmp_path / "cache"
    out = tmp_path / "k.json"
    r = venv.run(r'''
import sys, torch, actrace, actrace.torch
from torch.profiler import profile, ProfilerActivity
print("enabled", actrace.torch.enable(plugins=["example"], config="EXAMPLE_LAUNCHES = 2\n"))
with profile(activities=[ProfilerActivity.CPU]) as prof:
    torch.ones(4) * 2
    import time; time.sleep(0.2)
prof.export_chrome_trace(sys.argv[1])
with actrace.session(output=sys.argv[1] + ".ops.json"):
    print("ops", actrace.torch.record_ops())
    torch.ones(4) * 2
''', args=[str(out)], env=venv.env(PATH=str(nocc), CXX="/nonexistent/c++",
                                   ACTRACE_CACHE_DIR=cache))
    assert "enabled True" in r.stdout and "ops True" in r.stdout, r.stdout + r.stderr
    assert "compiler" not in r.stderr and "building" not in r.stderr, r.stderr
    assert not cache.exists() or not any(cache.rglob("*.so")), list(cache.rglob("*"))
    import json
    with open(out) as f:
        k = json.load(f)
    assert any(isinstance(e.get("pid"), int) and e["pid"] >= 0x40000000
               for e in k["traceEvents"] if e.get("ph") == "X"), "the example's device work"
    t = venv.check_trace(str(out) + ".ops.json")
    assert any(e.get("cat") == "cpu_op" for e in events(t, ph="X"))
