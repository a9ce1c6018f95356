# SPDX-License-Identifier: MIT
"""The `actrace` console script: execs the command shipped in the wheel
(actrace/bin/actrace), so arguments, environment, exit status and signals
are the command's own."""
import os
import sys


def main():
    exe = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin", "actrace")
    if not os.access(exe, os.X_OK):
        sys.stderr.write("actrace: the command is missing from the installed package "
                         "(%s); reinstall it: pip install --force-reinstall actrace\n" % exe)
        return 127
    os.execv(exe, [exe] + sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
