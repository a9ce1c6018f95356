# SPDX-License-Identifier: MIT
"""A small OpenCL workload through ctypes against the system ICD loader
(libOpenCL.so.1, ocl-icd, with pocl here): per round a write, a fill, a
kernel and a blocking read, finished before the round returns. Through the
system loader, as a real program's OpenCL would be: actrace's OpenCL
backend is a layer of that loader (a wheel's bundled loader would not
read OPENCL_LAYERS the same way). The queue is created without
profiling, as most programs create theirs."""
import ctypes as C

cl = C.CDLL("libOpenCL.so.1")
P = C.c_void_p
cl.clGetPlatformIDs.argtypes = [C.c_uint, C.POINTER(P), C.POINTER(C.c_uint)]
cl.clGetDeviceIDs.argtypes = [P, C.c_uint64, C.c_uint, C.POINTER(P), C.POINTER(C.c_uint)]
cl.clCreateContext.argtypes = [P, C.c_uint, C.POINTER(P), P, P, C.POINTER(C.c_int)]
cl.clCreateContext.restype = P
cl.clCreateCommandQueue.argtypes = [P, P, C.c_uint64, C.POINTER(C.c_int)]
cl.clCreateCommandQueue.restype = P
cl.clCreateBuffer.argtypes = [P, C.c_uint64, C.c_size_t, P, C.POINTER(C.c_int)]
cl.clCreateBuffer.restype = P
cl.clCreateProgramWithSource.argtypes = [P, C.c_uint, C.POINTER(C.c_char_p), C.POINTER(C.c_size_t), C.POINTER(C.c_int)]
cl.clCreateProgramWithSource.restype = P
cl.clBuildProgram.argtypes = [P, C.c_uint, C.POINTER(P), C.c_char_p, P, P]
cl.clCreateKernel.argtypes = [P, C.c_char_p, C.POINTER(C.c_int)]
cl.clCreateKernel.restype = P
cl.clSetKernelArg.argtypes = [P, C.c_uint, C.c_size_t, P]
cl.clEnqueueWriteBuffer.argtypes = [P, P, C.c_uint, C.c_size_t, C.c_size_t, P, C.c_uint, P, P]
cl.clEnqueueReadBuffer.argtypes = [P, P, C.c_uint, C.c_size_t, C.c_size_t, P, C.c_uint, P, P]
cl.clEnqueueFillBuffer.argtypes = [P, P, P, C.c_size_t, C.c_size_t, C.c_size_t, C.c_uint, P, P]
cl.clEnqueueNDRangeKernel.argtypes = [P, P, C.c_uint, P, C.POINTER(C.c_size_t), P, C.c_uint, P, P]
cl.clFinish.argtypes = [P]

SRC = b"__kernel void scale(__global float *x, float a) { size_t i = get_global_id(0); x[i] = x[i] * a + 1.0f; }"
N = 4096


def check(rc, what):
    if rc != 0:
        raise RuntimeError("%s failed: %d" % (what, rc))


class Ocl:
    def __init__(self):
        plat = P()
        n = C.c_uint()
        check(cl.clGetPlatformIDs(1, C.byref(plat), C.byref(n)), "clGetPlatformIDs")
        dev = P()
        check(cl.clGetDeviceIDs(plat, 0xFFFFFFFF, 1, C.byref(dev), C.byref(n)), "clGetDeviceIDs")
        err = C.c_int()
        self.ctx = cl.clCreateContext(None, 1, C.byref(dev), None, None, C.byref(err))
        check(err.value, "clCreateContext")
        self.q = cl.clCreateCommandQueue(self.ctx, dev, 0, C.byref(err))  # no profiling asked
        check(err.value, "clCreateCommandQueue")
        self.buf = cl.clCreateBuffer(self.ctx, 1, N * 4, None, C.byref(err))
        check(err.value, "clCreateBuffer")
        src = C.c_char_p(SRC)
        prog = cl.clCreateProgramWithSource(self.ctx, 1, C.byref(src), None, C.byref(err))
        check(err.value, "clCreateProgramWithSource")
        check(cl.clBuildProgram(prog, 1, C.byref(dev), None, None, None), "clBuildProgram")
        self.k = cl.clCreateKernel(prog, b"scale", C.byref(err))
        check(err.value, "clCreateKernel")
        self.host = (C.c_float * N)(*range(N))

    def round(self, a=2.0):
        """One write, fill, kernel and read; finished before it returns."""
        check(cl.clEnqueueWriteBuffer(self.q, self.buf, 0, 0, N * 4, C.cast(self.host, P), 0, None, None), "write")
        pat = C.c_float(0.5)
        check(cl.clEnqueueFillBuffer(self.q, self.buf, C.cast(C.pointer(pat), P), 4, 0, N * 2, 0, None, None), "fill")
        b = P(self.buf)
        check(cl.clSetKernelArg(self.k, 0, C.sizeof(P), C.cast(C.pointer(b), P)), "arg0")
        fa = C.c_float(a)
        check(cl.clSetKernelArg(self.k, 1, 4, C.cast(C.pointer(fa), P)), "arg1")
        g = (C.c_size_t * 1)(N)
        check(cl.clEnqueueNDRangeKernel(self.q, self.k, 1, None, g, None, 0, None, None), "kernel")
        out = (C.c_float * N)()
        check(cl.clEnqueueReadBuffer(self.q, self.buf, 1, 0, N * 4, C.cast(out, P), 0, None, None), "read")
        check(cl.clFinish(self.q), "clFinish")
        return out[N - 1]
