/* SPDX-License-Identifier: MIT */
/*
 * The grace period of act_session_stop (engine.h, act__grace_*): after
 * stop unpublishes a session (act__recording), it waits until no
 * recording call that may have loaded the session is still running, so
 * that destroy can free it.
 *
 * The read side (record.c) is an asymmetric-fence RCU: every public
 * recording call counts itself in its thread's word (act__rd_word, a
 * thread-local) before it loads act__recording a second time and uses the
 * session, and restores the word when it returns; only compiler barriers,
 * no atomic instruction or fence. The write side pays instead: stop
 * stores NULL, then membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) runs a
 * full barrier on every CPU that runs a thread of the process, so each
 * reader either counted itself before that barrier (stop then sees its
 * count, below, and waits until the count is zero) or loads the session
 * after it and sees NULL.
 *
 * Stop can read only the words of threads it knows: the registry here. A
 * thread registers in its first recording call that finds a session, with
 * its count already raised and before it touches the session; it loads
 * act__recording again after registering (the registry's lock orders the
 * two against stop's scan). It leaves the registry in a key destructor at
 * exit (its thread-local word is freed with it); a recording call after
 * that, from a later destructor of the same thread, records nothing.
 *
 * The lock is a spin lock owned by a word's address, so that a signal
 * handler that interrupted its own thread holding it gives up instead of
 * waiting for itself, and the registry grows with mmap (async-signal-safe).
 */
#include <errno.h>
#include <linux/membarrier.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "engine/engine.h"

static _Atomic(void *) reg_owner;
static _Atomic uint32_t **reg; /* the registered words, under the lock */
static size_t reg_n, reg_cap;
static pthread_key_t reg_key;
static int reg_key_ok;
static pthread_once_t reg_once = PTHREAD_ONCE_INIT;

/* Take the lock as @p me: 0, or -1 when this thread holds it already. */
static int reg_lock(void *me)
{
    for (unsigned i = 0;; i++) {
        void *expect = NULL;
        if (atomic_compare_exchange_weak_explicit(&reg_owner, &expect, me, memory_order_acquire,
                                                  memory_order_relaxed))
            return 0;
        if (expect == me)
            return -1;
        if (i >= 16)
            sched_yield();
    }
}

static void reg_unlock(void)
{
    atomic_store_explicit(&reg_owner, NULL, memory_order_release);
}

/* Remove @p w (lock held). */
static void reg_remove(_Atomic uint32_t *w)
{
    for (size_t i = 0; i < reg_n; i++)
        if (reg[i] == w) {
            reg[i] = reg[--reg_n];
            return;
        }
}

/* Thread exit: the word is freed with the thread. */
static void reg_exit(void *v)
{
    _Atomic uint32_t *w = v;
    if (reg_lock(w) == 0) {
        reg_remove(w);
        reg_unlock();
    }
    uint32_t x = atomic_load_explicit(w, memory_order_relaxed);
    atomic_store_explicit(w, (x & ~ACT__RD_REG) | ACT__RD_GONE, memory_order_relaxed);
}

static void reg_init(void)
{
    reg_key_ok = pthread_key_create(&reg_key, reg_exit) == 0;
}

void act__grace_init(void)
{
    pthread_once(&reg_once, reg_init);
}

int act__grace_register(_Atomic uint32_t *w)
{
    act__grace_init();
    if (!reg_key_ok || pthread_setspecific(reg_key, (void *)w) != 0)
        return -1;
    if (reg_lock(w) != 0)
        return -1;
    /* A signal handler may have registered the thread between its
     * caller's load of the word and its store (which lost the bit). */
    for (size_t i = 0; i < reg_n; i++)
        if (reg[i] == w)
            goto mark;
    if (reg_n == reg_cap) {
        size_t cap = reg_cap ? reg_cap * 2 : 512;
        void *m = mmap(NULL, cap * sizeof *reg, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED) {
            reg_unlock();
            return -1;
        }
        if (reg) {
            memcpy(m, reg, reg_n * sizeof *reg);
            munmap(reg, reg_cap * sizeof *reg);
        }
        reg = m;
        reg_cap = cap;
    }
    reg[reg_n++] = w;
mark:;
    uint32_t x = atomic_load_explicit(w, memory_order_relaxed);
    atomic_store_explicit(w, x | ACT__RD_REG, memory_order_relaxed);
    reg_unlock();
    return 0;
}

static int membarrier_cmd(int cmd)
{
#ifdef __NR_membarrier
    return (int)syscall(__NR_membarrier, cmd, 0, 0);
#else
    (void)cmd;
    errno = ENOSYS;
    return -1;
#endif
}

void act__grace_prepare(void)
{
    /* Once per process (a forked child registers again in its first
     * act__grace_wait: registration belongs to the address space). */
    static _Atomic int done;
    if (!atomic_exchange(&done, 1))
        membarrier_cmd(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED);
}

/* The writer's barrier: 0, or -1 when the kernel has no membarrier. */
static int barrier_all(void)
{
    if (membarrier_cmd(MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0)
        return 0;
    if (errno == EPERM && membarrier_cmd(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0 &&
        membarrier_cmd(MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0)
        return 0;
    return -1;
}

void act__grace_wait(void)
{
    _Atomic uint32_t *me = act__rd_word();
    if (barrier_all() != 0) {
        /* No membarrier (a kernel before 4.14, a sandbox that refuses
         * it): a bounded wait instead. A reader's count sits in its
         * store buffer for nanoseconds, not a millisecond. */
        atomic_thread_fence(memory_order_seq_cst);
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
        atomic_thread_fence(memory_order_seq_cst);
    }
    if (reg_lock(me) != 0)
        return; /* (cannot happen: stop is no recording call) */
    for (size_t i = 0; i < reg_n; i++) {
        _Atomic uint32_t *w = reg[i];
        if (w == me)
            continue; /* a stop from inside a recording call of this thread */
        for (unsigned k = 0;
             atomic_load_explicit(w, memory_order_acquire) & ACT__RD_COUNT; k++) {
            if (k < 64) {
                sched_yield();
            } else {
                struct timespec ts = {0, 20000};
                nanosleep(&ts, NULL);
            }
        }
    }
    reg_unlock();
}

/* Whether prepare took the lock (not when fork() comes from a signal
 * handler that interrupted this thread holding it). */
static int fork_locked;

void act__grace_atfork_prepare(void)
{
    fork_locked = reg_lock(act__rd_word()) == 0;
}

void act__grace_atfork_parent(void)
{
    if (fork_locked)
        reg_unlock();
}

void act__grace_atfork_child(void)
{
    /* Only the forking thread lives on. */
    _Atomic uint32_t *me = act__rd_word();
    reg_n = 0;
    if ((atomic_load_explicit(me, memory_order_relaxed) & ACT__RD_REG) && reg_cap)
        reg[reg_n++] = me;
    reg_unlock();
}
