/* SPDX-License-Identifier: MIT */
/*
 * The recording program the trace fuzzers share (fuzz_trace.c,
 * fuzz_pftrace.c): recording calls (span begin/end, complete spans,
 * instants, counters, args of every kind, correlation push/pop, device
 * spans and stream names) whose names, keys, values and times come from
 * the input bytes, run on the current default session.
 */
#ifndef ACT_FUZZ_RECORD_PROGRAM_H
#define ACT_FUZZ_RECORD_PROGRAM_H

#include <stdint.h>
#include <string.h>

#include "actrace/actrace.h"

/* ---- the program ---------------------------------------------------------- */

typedef struct in {
    const uint8_t *p;
    size_t n;
} in;

static uint8_t byte(in *s)
{
    if (!s->n)
        return 0;
    s->n--;
    return *s->p++;
}

/* A NUL-terminated string of up to 40 input bytes, in @p buf. */
static const char *str(in *s, char *buf)
{
    size_t n = byte(s) % 41;
    size_t i = 0;
    for (; i < n && s->n; i++) {
        buf[i] = (char)byte(s);
        if (!buf[i])
            buf[i] = '?';
    }
    buf[i] = '\0';
    return buf;
}

static int64_t i64(in *s)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = (v << 8) | byte(s);
    return (int64_t)v;
}

/* A started session for one input, logging off; NULL if it cannot start. */
static act_session *fuzz_session(void)
{
    static int quiet;
    if (!quiet) {
        act_log_set_level(ACT_LOG_OFF);
        quiet = 1;
    }
    act_session_opts o;
    act_session_opts_init(&o);
    o.config_text = "MAX_BUFFER_SIZE_MB = 2\nBUFFER_PREALLOC_MB = 0\n";
    o.config_text_len = strlen(o.config_text);
    act_session *s = NULL;
    if (act_session_create(&o, &s) != 0 || act_session_start(s) != 0) {
        act_session_destroy(s);
        return NULL;
    }
    return s;
}

/* Run the program in @p data (the session must be started). */
static void run_program(const uint8_t *data, size_t size)
{
    in src = {data, size};
    char a[48], b[48], c[48];
    uint64_t calls = 0;
    int64_t base = act_now_ns();
    uint32_t dev = 0;
    int have_dev = act_device_add("fuzz device", "fuzz", &dev) == 0;
    while (src.n) {
        uint8_t op = byte(&src);
        act_activity_type type = (act_activity_type)(byte(&src) % 32);
        switch (op % 16) {
        case 0: act_span_begin(type, str(&src, a)); calls++; break;
        case 1: act_span_end(); break;
        case 2: {
            /* Mostly near now; sometimes anything at all (extremes must be
             * refused, never overflow). */
            int64_t raw = i64(&src);
            int64_t t0 = byte(&src) == 0xff ? raw : base + (raw % 1000000000);
            /* Wrapping arithmetic: the harness itself must have no UB. */
            int64_t t1 = byte(&src) == 0xfe
                             ? i64(&src)
                             : (int64_t)((uint64_t)t0 + (uint64_t)byte(&src) * 1000 - 10000);
            act_span_record(type, str(&src, a), t0, t1);
            calls++;
            break;
        }
        case 3: act_instant(type, str(&src, a)); calls++; break;
        case 4: {
            str(&src, a);
            str(&src, b);
            int64_t bits = i64(&src);
            double d;
            memcpy(&d, &bits, sizeof d);
            act_counter(a, b, d);
            calls++;
            break;
        }
        case 5: act_arg_int(str(&src, a), i64(&src)); calls++; break;
        case 6: act_arg_uint(str(&src, a), (uint64_t)i64(&src)); calls++; break;
        case 7: {
            int64_t bits = i64(&src);
            double d;
            memcpy(&d, &bits, sizeof d);
            act_arg_double(str(&src, a), d);
            calls++;
            break;
        }
        case 8: act_arg_bool(str(&src, a), byte(&src) & 1); calls++; break;
        case 9: str(&src, a); act_arg_str(a, str(&src, b)); calls++; break;
        case 10: act_correlation_push((uint64_t)i64(&src)); break;
        case 11: act_correlation_pop(); break;
        case 12:
            if (have_dev) {
                int64_t t0 = base + (i64(&src) % 1000000);
                /* Mostly small stream ids; sometimes any 64-bit id (streams
                 * that share their low 31 bits must not share a track),
                 * sometimes a name for the stream instead of a span. */
                uint8_t sb = byte(&src);
                uint64_t stream = sb >= 0xf0 ? (uint64_t)i64(&src) : sb % 4;
                if ((sb & 0x0f) == 0x0e)
                    act_stream_name(dev, stream, str(&src, c));
                else
                    act_device_span_record(type, dev, stream, str(&src, c), t0,
                                           t0 + byte(&src) * 100);
            }
            break;
        case 13: act_name(str(&src, a)); break;
        case 14: act_instant_id(type, (act_name_id)i64(&src)); calls++; break;
        case 15: act_span_begin_id(type, (act_name_id)(byte(&src) % 8)); calls++; break;
        }
    }
    (void)calls;
}

#endif
