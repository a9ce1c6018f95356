/* SPDX-License-Identifier: MIT */
/*
 * Fault injection: the Nth heap allocation fails, for every N a session's
 * life makes (create, record from two threads, write, destroy). Each run
 * must end cleanly: a failing call returns an error (ACT_ENOMEM or the
 * write's error), no crash, and whatever was written is either complete
 * valid output or absent. Runs without sanitizers (they own malloc).
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "actrace/actrace.h"
#include "check.h"

/* glibc's own allocator, under the names glibc exports for this purpose. */
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);

static _Atomic long countdown = -1; /* fail when it reaches 0; <0: never */
static _Atomic long failures;

static int should_fail(void)
{
    long c = atomic_load_explicit(&countdown, memory_order_relaxed);
    if (c < 0)
        return 0;
    if (atomic_fetch_sub(&countdown, 1) == 0) {
        atomic_fetch_add(&failures, 1);
        return 1;
    }
    return 0;
}

void *malloc(size_t n)
{
    if (should_fail()) {
        errno = ENOMEM;
        return NULL;
    }
    return __libc_malloc(n);
}

void *calloc(size_t a, size_t b)
{
    if (should_fail()) {
        errno = ENOMEM;
        return NULL;
    }
    return __libc_calloc(a, b);
}

void *realloc(void *p, size_t n)
{
    if (should_fail()) {
        errno = ENOMEM;
        return NULL;
    }
    return __libc_realloc(p, n);
}

void free(void *p)
{
    __libc_free(p);
}

static void *worker(void *arg)
{
    (void)arg;
    for (int i = 0; i < 200; i++) {
        act_span_begin(ACT_CPU_OP, "worker span");
        act_arg_str("k", "v");
        act_span_end();
        act_counter("track", "series", i);
    }
    return NULL;
}

/* One whole session life; returns 1 if everything succeeded. */
static int life(const char *path)
{
    act_session_opts o;
    act_session_opts_init(&o);
    o.config_text = "BUFFER_PREALLOC_MB = 0\n";
    o.config_text_len = strlen(o.config_text);
    act_session *s = NULL;
    int rc = act_session_create(&o, &s);
    if (rc != 0) {
        CHECK(s == NULL);
        CHECK(rc == ACT_ENOMEM || rc == ACT_EINVAL);
        return 0;
    }
    int ok = act_session_start(s) == 0;
    act_name_id id = act_name("interned");
    pthread_t th;
    int started = pthread_create(&th, NULL, worker, NULL) == 0;
    int64_t t0 = act_now_ns(); /* supplied times must be near the clock */
    for (int i = 0; i < 300; i++) {
        act_span_record_id(ACT_CPU_OP, id, t0 + i, t0 + i + 1);
        act_instant(ACT_CPU_INSTANT_EVENT, "tick");
    }
    if (started)
        pthread_join(th, NULL);
    rc = act_session_write(s, path);
    if (rc != 0) {
        CHECK(access(path, F_OK) != 0); /* nothing half-written */
        ok = 0;
    }
    act_session_destroy(s);
    return ok && rc == 0;
}

int main(void)
{
    act_log_set_level(ACT_LOG_OFF);
    char dir[] = "/tmp/act_alloc_XXXXXX";
    CHECK_FATAL(mkdtemp(dir) != NULL);
    char path[128];
    snprintf(path, sizeof path, "%s/trace.json", dir);

    /* A clean run, to know how many allocations a life makes. */
    CHECK(life(path));
    unlink(path);
    int complete = 0;
    long n;
    for (n = 0; n < 5000; n++) {
        atomic_store(&failures, 0);
        atomic_store(&countdown, n);
        int ok = life(path);
        atomic_store(&countdown, -1);
        unlink(path);
        if (atomic_load(&failures) == 0) {
            /* N is past the last allocation: the loop covered them all. */
            CHECK(ok);
            complete = 1;
            break;
        }
    }
    printf("injected failures at allocations 0..%ld\n", n - 1);
    CHECK(complete);
    rmdir(dir);
    return check_done();
}
