# SPDX-License-Identifier: MIT
"""python -m actrace: the actrace command; and, for building plugins and
programs against a pip-installed actrace, where its files are:

    python -m actrace --cflags            -I<include folder>
    python -m actrace --libs              the flags that link libactrace
    python -m actrace --include-dir       the public headers' folder
    python -m actrace --plugin-dir        the bundled plugins' folder
    python -m actrace --pkg-config-path   for PKG_CONFIG_PATH (actrace.pc,
                                          actrace-plugin.pc)
    python -m actrace --cmake-prefix-path for CMAKE_PREFIX_PATH: find_package(actrace)
    python -m actrace --cmake-dir         the CMake package's folder (actrace_DIR)
"""
import os
import sys

from ._cli import main

_HERE = os.path.dirname(os.path.abspath(__file__))
_LIB = os.path.join(_HERE, "lib")
_WHERE = {
    "--include-dir": os.path.join(_HERE, "include"),
    "--plugin-dir": os.path.join(_LIB, "actrace", "plugins"),
    "--pkg-config-path": os.path.join(_LIB, "pkgconfig"),
    "--cmake-prefix-path": _HERE,
    "--cmake-dir": os.path.join(_LIB, "cmake", "actrace"),
    "--cflags": "-I" + os.path.join(_HERE, "include"),
    "--libs": "-L%s -l:libactrace.so.0 -Wl,-rpath,%s" % (_LIB, _LIB),
}

if len(sys.argv) == 2 and sys.argv[1] in _WHERE:
    print(_WHERE[sys.argv[1]])
    sys.exit(0)
sys.exit(main())
