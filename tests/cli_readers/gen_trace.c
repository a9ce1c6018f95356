/* SPDX-License-Identifier: MIT */
/*
 * gen_trace [-n ITERATIONS | -m MEGABYTES] [-z]: write a Kineto-layout GPU
 * trace of known content to standard output, fast enough to feed
 * multi-GB traces through a pipe (the reader's bounded-memory test and
 * the read benchmark). Each iteration i (ts in us, T = 100 * i):
 *   host pid 1 tid 1: X "ProfilerStep" cpu_op [T, T+90]
 *                     X "aten::mm" cpu_op [T+1, T+41] (inside it)
 *                     X "cudaLaunchKernel" cuda_runtime [T+2, T+7]
 *                     s flow id i at T+2
 *   device pid 0 tid 7: X "gemm_kernel" kernel [T+20, T+30] (device 0)
 *                       f flow id i at T+20 (bp e)   -> latency 18 us
 *   device pid 0 tid 8: X "Memcpy HtoD (Pageable -> Device)" gpu_memcpy
 *                       [T+50, T+54], 1048576 bytes, every 4th iteration
 *   host pid 1: C "memory" {"rss": i % 100} at T, every 10th iteration
 * Every event has two args, as Kineto's do.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *u64(char *p, uint64_t v)
{
    char t[24];
    int n = 0;
    do {
        t[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    while (n)
        *p++ = t[--n];
    return p;
}

static char *lit(char *p, const char *s)
{
    size_t n = strlen(s);
    memcpy(p, s, n);
    return p + n;
}

int main(int argc, char **argv)
{
    uint64_t iters = 1000, mb = 0;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "-n") == 0)
            iters = strtoull(argv[i + 1], NULL, 10);
        else if (strcmp(argv[i], "-m") == 0)
            mb = strtoull(argv[i + 1], NULL, 10);
    }
    static char buf[1 << 20];
    char *p = buf;
    p = lit(p, "{\"schemaVersion\":1,\"deviceProperties\":[{\"id\":0,\"name\":\"Gen GPU\"}],"
               "\"traceName\":\"generated\",\"traceEvents\":[\n"
               "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":0,\"tid\":0,\"args\":{\"name\":\"GPU 0\"}},\n"
               "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":1,\"tid\":0,\"args\":{\"name\":\"host\"}}");
    uint64_t written = 0, limit = mb << 20;
    for (uint64_t i = 0; mb ? written + (size_t)(p - buf) < limit : i < iters; i++) {
        uint64_t T = 1000000 + 100 * i;
        p = lit(p, ",\n{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"ProfilerStep\",\"pid\":1,\"tid\":1,\"ts\":");
        p = u64(p, T);
        p = lit(p, ".000,\"dur\":90.000,\"args\":{\"External id\":");
        p = u64(p, i);
        p = lit(p, ",\"Step\":");
        p = u64(p, i);
        p = lit(p, "}},\n{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::mm\",\"pid\":1,\"tid\":1,\"ts\":");
        p = u64(p, T + 1);
        p = lit(p, ".000,\"dur\":40.000,\"args\":{\"External id\":");
        p = u64(p, i);
        p = lit(p, ",\"Sequence number\":");
        p = u64(p, i);
        p = lit(p, "}},\n{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\",\"pid\":1,\"tid\":1,\"ts\":");
        p = u64(p, T + 2);
        p = lit(p, ".000,\"dur\":5.000,\"args\":{\"correlation\":");
        p = u64(p, i);
        p = lit(p, ",\"cbid\":211}},\n{\"ph\":\"s\",\"id\":");
        p = u64(p, i);
        p = lit(p, ",\"pid\":1,\"tid\":1,\"ts\":");
        p = u64(p, T + 2);
        p = lit(p, ".000,\"cat\":\"ac2g\",\"name\":\"ac2g\"},\n{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"gemm_kernel\",\"pid\":0,\"tid\":7,\"ts\":");
        p = u64(p, T + 20);
        p = lit(p, ".000,\"dur\":10.000,\"args\":{\"device\":0,\"correlation\":");
        p = u64(p, i);
        p = lit(p, "}},\n{\"ph\":\"f\",\"id\":");
        p = u64(p, i);
        p = lit(p, ",\"pid\":0,\"tid\":7,\"ts\":");
        p = u64(p, T + 20);
        p = lit(p, ".000,\"cat\":\"ac2g\",\"name\":\"ac2g\",\"bp\":\"e\"}");
        if (i % 4 == 0) {
            p = lit(p, ",\n{\"ph\":\"X\",\"cat\":\"gpu_memcpy\",\"name\":\"Memcpy HtoD (Pageable -> Device)\",\"pid\":0,\"tid\":8,\"ts\":");
            p = u64(p, T + 50);
            p = lit(p, ".000,\"dur\":4.000,\"args\":{\"device\":0,\"bytes\":1048576}}");
        }
        if (i % 10 == 0) {
            p = lit(p, ",\n{\"ph\":\"C\",\"cat\":\"host_counter\",\"name\":\"memory\",\"pid\":1,\"tid\":0,\"ts\":");
            p = u64(p, T);
            p = lit(p, ".000,\"args\":{\"rss\":");
            p = u64(p, i % 100);
            p = lit(p, "}}");
        }
        if (p - buf > (long)sizeof buf - 4096) {
            if (fwrite(buf, 1, (size_t)(p - buf), stdout) != (size_t)(p - buf))
                return 1;
            written += (uint64_t)(p - buf);
            p = buf;
        }
    }
    p = lit(p, "\n]}\n");
    if (fwrite(buf, 1, (size_t)(p - buf), stdout) != (size_t)(p - buf))
        return 1;
    return fflush(stdout) != 0;
}
