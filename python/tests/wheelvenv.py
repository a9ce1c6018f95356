# SPDX-License-Identifier: MIT
"""Build the wheel (`pip wheel .`) and install it into a fresh venv that
borrows the running interpreter's packages (torch, pytest) through a .pth
file, so nothing is downloaded. Used by the tests (conftest.py) and by the
Python bench (bench/python). Run with the cached venv's python:

    python python/tests/wheelvenv.py WORK     # prints the fresh venv's python
"""
import os
import shutil
import subprocess
import sys
import sysconfig

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _sh(cmd):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if r.returncode != 0:
        raise RuntimeError("%s failed (%d):\n%s" % (" ".join(cmd), r.returncode, r.stdout[-6000:]))
    return r.stdout


def make(work, name="venv"):
    """Wheel into WORK/wheelhouse (build folder WORK/wheel-build, kept, so a
    rebuild is incremental), fresh venv WORK/<name>. Returns the venv path."""
    os.makedirs(work, exist_ok=True)
    wheels = os.path.join(work, "wheelhouse")
    shutil.rmtree(wheels, ignore_errors=True)
    _sh([sys.executable, "-m", "pip", "wheel", "-q", ROOT, "--no-build-isolation", "--no-deps",
         "-w", wheels, "-C", "build-dir=" + os.path.join(work, "wheel-build")])
    whl = [f for f in os.listdir(wheels) if f.endswith(".whl")]
    if len(whl) != 1:
        raise RuntimeError("expected one wheel in %s, found %s" % (wheels, whl))
    path = os.path.join(work, name)
    shutil.rmtree(path, ignore_errors=True)
    _sh([sys.executable, "-m", "venv", "--without-pip", path])
    py = os.path.join(path, "bin", "python")
    site = _sh([py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).strip()
    with open(os.path.join(site, "_actrace_borrowed.pth"), "w") as f:
        f.write(sysconfig.get_paths()["purelib"] + "\n")
    _sh([py, "-m", "pip", "install", "-q", "--no-deps", "--no-index",
         os.path.join(wheels, whl[0])])
    return path


if __name__ == "__main__":
    print(os.path.join(make(sys.argv[1], *(sys.argv[2:3])), "bin", "python"))
