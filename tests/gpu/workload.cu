// SPDX-License-Identifier: MIT
// The GPU workload tests/gpu/run.sh records: an idle lead-in, host-to-device
// copies on two streams, a memset, busy kernels (spinning on the GPU's
// global timer so they last long enough for PM samples) on stream A and
// short kernels on stream B, device-to-host copies, a device-wide
// synchronisation, an idle tail. It writes a manifest (argv[1]) of what
// it launched for check_trace.py.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>
#include <unistd.h>

#define CK(x)                                                                  \
    do {                                                                       \
        cudaError_t e_ = (x);                                                  \
        if (e_ != cudaSuccess) {                                               \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x,         \
                    cudaGetErrorString(e_));                                   \
            exit(3);                                                           \
        }                                                                      \
    } while (0)

__device__ unsigned long long gtimer()
{
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

__global__ void busy_kernel(float *x, int n, unsigned long long ns)
{
    unsigned long long t0 = gtimer();
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = i < n ? x[i] : 0.f;
    while (gtimer() - t0 < ns)
        v = v * 1.000001f + 0.5f;
    if (i < n)
        x[i] = v;
}

__global__ void scale_kernel(float *x, int n, float a)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        x[i] *= a;
}

int main(int argc, char **argv)
{
    const char *manifest = argc > 1 ? argv[1] : "manifest.json";
    const int n = 16 << 20; /* 64 MiB of floats */
    const int busy = 3, scale = 4;
    const unsigned long long busy_ns = 60ull * 1000 * 1000;
    CK(cudaSetDevice(0));
    CK(cudaFree(0)); /* context */
    int sms = 0;
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    usleep(150 * 1000); /* idle: the PM baseline */

    cudaStream_t a, b;
    CK(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
    CK(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));
    float *h, *dx, *dy;
    CK(cudaMallocHost(&h, n * sizeof(float)));
    for (int i = 0; i < n; i++)
        h[i] = (float)(i % 1000);
    CK(cudaMalloc(&dx, n * sizeof(float)));
    CK(cudaMalloc(&dy, n * sizeof(float)));
    CK(cudaMemcpyAsync(dx, h, n * sizeof(float), cudaMemcpyHostToDevice, a));
    CK(cudaMemcpyAsync(dy, h, n * sizeof(float), cudaMemcpyHostToDevice, b));
    CK(cudaMemsetAsync(dy, 0, n / 2 * sizeof(float), b));
    for (int i = 0; i < busy; i++)
        busy_kernel<<<sms * 8, 256, 0, a>>>(dx, n, busy_ns);
    for (int i = 0; i < scale; i++)
        scale_kernel<<<(n + 255) / 256, 256, 0, b>>>(dy, n, 1.5f);
    CK(cudaGetLastError());
    CK(cudaMemcpyAsync(h, dx, n * sizeof(float), cudaMemcpyDeviceToHost, a));
    CK(cudaMemcpyAsync(h, dy, n * sizeof(float), cudaMemcpyDeviceToHost, b));
    CK(cudaDeviceSynchronize());
    usleep(150 * 1000); /* idle tail */

    FILE *f = fopen(manifest, "w");
    if (!f) {
        perror(manifest);
        return 4;
    }
    fprintf(f,
            "{\"kernels\":[{\"name\":\"busy_kernel\",\"stream\":\"A\","
            "\"count\":%d},{\"name\":\"scale_kernel\",\"stream\":\"B\","
            "\"count\":%d}],\"memcpy\":[{\"kind\":\"HtoD\",\"stream\":\"A\","
            "\"count\":1},{\"kind\":\"HtoD\",\"stream\":\"B\",\"count\":1},"
            "{\"kind\":\"DtoH\",\"stream\":\"A\",\"count\":1},{\"kind\":"
            "\"DtoH\",\"stream\":\"B\",\"count\":1}],\"memset\":[{\"stream\":"
            "\"B\",\"count\":1}],\"busy_kernel\":\"busy_kernel\"}\n",
            busy, scale);
    fclose(f);
    CK(cudaFreeHost(h));
    CK(cudaFree(dx));
    CK(cudaFree(dy));
    CK(cudaStreamDestroy(a));
    CK(cudaStreamDestroy(b));
    printf("workload: %d busy + %d scale kernels, 4 copies, 1 memset\n", busy,
           scale);
    return 0;
}
