/* SPDX-License-Identifier: MIT */
/*
 * The bundled example for `make demo`: a small "training loop" instrumented
 * with the actrace API. A data-loader thread produces batches; the main
 * thread runs forward/backward/optimizer steps made of operators (cpu_op
 * spans with shapes as args, inside user annotations), each operator under
 * an external correlation id so device work launched by a plugin links
 * back to it; loss and memory are counter tracks; every step calls
 * act_step().
 *
 * Run it under `actrace record` (which starts the session), or alone: then
 * the recording calls cost one load and a branch and record nothing.
 */
#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "actrace/actrace.h"

#define STEPS 20

static _Atomic int batches_ready;
static _Atomic int done;

/* Burn roughly @p us microseconds of CPU, like an operator would. */
static double work(int us)
{
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    double acc = 0;
    do {
        for (int i = 0; i < 200; i++)
            acc += sqrt((double)i + acc * 1e-9);
        clock_gettime(CLOCK_MONOTONIC, &t);
    } while ((t.tv_sec - t0.tv_sec) * 1000000 + (t.tv_nsec - t0.tv_nsec) / 1000 < us);
    return acc;
}

static void *loader(void *arg)
{
    (void)arg;
    act_thread_name("data loader");
    for (int b = 0; b < STEPS && !atomic_load(&done); b++) {
        act_span_begin(ACT_USER_ANNOTATION, "load batch");
        act_arg_int("batch", b);
        act_span_begin(ACT_CPU_OP, "decode");
        work(300);
        act_span_end();
        act_span_begin(ACT_CPU_OP, "augment");
        work(200);
        act_span_end();
        act_span_end();
        atomic_fetch_add(&batches_ready, 1);
    }
    return NULL;
}

static uint64_t next_correlation = 1;

static void op(act_name_id name, const char *shape, int us)
{
    uint64_t corr = next_correlation++;
    act_correlation_push(corr);
    act_span_begin_id(ACT_CPU_OP, name);
    act_arg_str("Input Dims", shape);
    /* What a framework does at a kernel launch: a runtime call inside the
     * operator (a device plugin records the device side). */
    act_span_begin(ACT_RUNTIME, "launch");
    work(20);
    act_span_end();
    work(us);
    act_span_end();
    act_correlation_pop();
}

static double rss_mib(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    long pages = 0, rss = 0;
    if (f) {
        if (fscanf(f, "%ld %ld", &pages, &rss) != 2)
            rss = 0;
        fclose(f);
    }
    return (double)rss * (double)sysconf(_SC_PAGESIZE) / (1024.0 * 1024.0);
}

int main(void)
{
    act_process_name("actrace demo: training loop");
    act_thread_name("trainer");
    act_name_id matmul = act_name("aten::matmul"), relu = act_name("aten::relu"),
                softmax = act_name("aten::softmax"), mm_bw = act_name("aten::mm_backward"),
                adam = act_name("optim::adam_step");
    pthread_t th;
    pthread_create(&th, NULL, loader, NULL);
    double loss = 2.5;
    for (int step = 0; step < STEPS; step++) {
        while (atomic_load(&batches_ready) <= step)
            usleep(100);
        /* Kineto's step name, which HTA and TensorBoard key on. */
        char step_name[32];
        snprintf(step_name, sizeof step_name, "ProfilerStep#%d", step);
        act_span_begin(ACT_USER_ANNOTATION, step_name);
        act_arg_int("step", step);
        act_span_begin(ACT_USER_ANNOTATION, "forward");
        op(matmul, "[[64, 512], [512, 512]]", 400);
        op(relu, "[[64, 512]]", 80);
        op(matmul, "[[64, 512], [512, 10]]", 150);
        op(softmax, "[[64, 10]]", 60);
        act_span_end();
        act_span_begin(ACT_USER_ANNOTATION, "backward");
        op(mm_bw, "[[64, 10], [512, 10]]", 500);
        op(mm_bw, "[[64, 512], [512, 512]]", 700);
        act_span_end();
        op(adam, "[]", 250);
        act_span_end();
        loss = loss * 0.9 + 0.02 * sin(step);
        act_counter_unit("training", "loss", NULL, loss);
        act_counter_unit("memory", "rss_mib", "MiB", rss_mib());
        if (step % 5 == 4)
            act_instant(ACT_CPU_INSTANT_EVENT, "checkpoint");
        act_step();
    }
    atomic_store(&done, 1);
    pthread_join(th, NULL);
    printf("demo: %d steps, final loss %.4f\n", STEPS, loss);
    return 0;
}
