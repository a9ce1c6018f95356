# SPDX-License-Identifier: MIT
"""Python's multiprocessing in fork mode, for test_fork_plugins.c.

usage: mp_fork.py LIB N
The main process initialises OpenCL and NVTX (through LIB, the fork tests'
ctypes library), starts two workers with the fork start method, and each
worker makes N clGetPlatformInfo calls and N NVTX ranges "worker"; then
the main process makes N clGetDeviceIDs calls and N ranges "main". Prints
"main PID" and "worker PID" lines; exits 0 when every call succeeded.
Workers end as multiprocessing ends them (os._exit), so under `actrace
record` their traces are rebuilt from their spools.
"""
import ctypes
import multiprocessing
import os
import sys

FC_PLATFORM_IDS, FC_PLATFORM_INFO, FC_DEVICE_IDS = 0, 1, 2


def work(path, n):
    lib = ctypes.CDLL(path)
    if lib.fc_opencl(FC_PLATFORM_INFO, n) != n:
        sys.exit(3)
    lib.fc_nvtx(b"worker", n)


def main():
    path, n = sys.argv[1], int(sys.argv[2])
    lib = ctypes.CDLL(path)
    if lib.fc_opencl(FC_PLATFORM_IDS, 1) != 1:
        print("no OpenCL platform")
        return 77
    lib.fc_nvtx(b"main before", 10)
    ctx = multiprocessing.get_context("fork")
    workers = [ctx.Process(target=work, args=(path, n)) for _ in range(2)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    if lib.fc_opencl(FC_DEVICE_IDS, n) != n:
        return 4
    lib.fc_nvtx(b"main", n)
    print("main", os.getpid())
    for w in workers:
        print("worker", w.pid)
    return 0 if all(w.exitcode == 0 for w in workers) else 5


if __name__ == "__main__":
    sys.exit(main())
