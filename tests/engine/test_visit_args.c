/* SPDX-License-Identifier: MIT */
/*
 * The writers' arg walk (visit.h): act__vuniq (one pass, interned keys
 * compared by their cached ids) and act__vargs_next_unique through the
 * walk's key cache must give exactly what the byte-by-byte walk gives
 * (act__vargs_next_unique with no cache): the same args, in the same
 * order, of a duplicated key the last, reserved keys skipped. Checked on
 * every event of a session with duplicates, reserved keys, empty and NULL
 * keys, ids act_name never returned, keys too long to intern, and more
 * args than act__vuniq gathers at once; and each case's result against
 * what it must be.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "engine/trace_util.h"
#include "writer/visit.h"

#define NCASES 16
#define DESC_CAP 8192

/* Per case (event name "caseN"): the args act__vuniq gave for
 * ACT__ARGS_HOST, as "key=value;" pairs (long keys as their length). */
static char desc[NCASES][DESC_CAP];
static int events_with_args, compared;

static void describe(char *out, size_t cap, const act__varg *a)
{
    uint32_t kn, vn = 0;
    const char *k = act__visit_ref(a->c, a->key, &kn);
    const char *v = a->kind == ACT__V_STR ? act__visit_ref(a->c, (uint32_t)a->val, &vn) : "";
    size_t at = strlen(out);
    if (kn > 64)
        snprintf(out + at, cap - at, "<%u bytes>", kn);
    else
        snprintf(out + at, cap - at, "%.*s", (int)kn, k);
    at = strlen(out);
    if (a->kind == ACT__V_STR)
        snprintf(out + at, cap - at, "=%.*s;", (int)vn, v);
    else
        snprintf(out + at, cap - at, "=%llu;", (unsigned long long)a->val);
}

/* The args of @p args for @p which, three ways; 1 when all agree. */
static int same_three(const act__vargs *args, int which, char *host_desc)
{
    char a[DESC_CAP] = "", b[DESC_CAP] = "", c[DESC_CAP] = "";
    act__varg x;
    act__vuniq u;
    act__vuniq_start(&u, args, which);
    while (act__vuniq_next(&u, &x))
        describe(a, sizeof a, &x);
    act__vargs it = *args;
    while (act__vargs_next_unique(&it, which, &x))
        describe(b, sizeof b, &x);
    it = *args;
    it.keys = NULL; /* every key by its bytes: the reference */
    while (act__vargs_next_unique(&it, which, &x))
        describe(c, sizeof c, &x);
    if (host_desc)
        snprintf(host_desc, DESC_CAP, "%s", a);
    int ok = strcmp(a, c) == 0 && strcmp(b, c) == 0;
    if (!ok)
        fprintf(stderr, "which %d:\n  vuniq   %s\n  cached  %s\n  bytes   %s\n", which, a, b, c);
    return ok;
}

static void on_event(void *ctx, const act__vevent *e)
{
    (void)ctx;
    if (!e->has_args)
        return;
    events_with_args++;
    CHECK(e->args.keys != NULL); /* the walk hands its cache out */
    uint32_t nl;
    const char *name = act__visit_ref(e->c, e->name, &nl);
    int k = -1;
    if (nl > 4 && memcmp(name, "case", 4) == 0)
        k = atoi(name + 4);
    for (int which = ACT__ARGS_ALL; which <= ACT__ARGS_PLUGIN; which++) {
        CHECK(same_three(&e->args, which,
                         which == ACT__ARGS_HOST && k >= 0 && k < NCASES ? desc[k] : NULL));
        compared++;
    }
}

static void span(int k)
{
    char nm[16];
    snprintf(nm, sizeof nm, "case%d", k);
    act_span_record_id(ACT_USER_ANNOTATION, act_name(nm), 1000 + k * 100, 1050 + k * 100);
}

int main(void)
{
    act_session *s = tu_session("MAX_BUFFER_SIZE_MB = 64\n");
    static char big1[70000], big2[70000];
    memset(big1, 'k', sizeof big1 - 1);
    memset(big2, 'k', sizeof big2 - 1);
    big2[5] = 'z';
    /* 0: Kineto's two args. */
    span(0);
    act_arg_int("Sequence number", 7);
    act_arg_str("Input Dims", "[[32, 64], [64, 128]]");
    /* 1: a key given twice (string keys and act_key ids): the last wins. */
    span(1);
    act_arg_int("a", 1);
    act_arg_int("b", 2);
    act_arg_int_k(act_key("a"), 3);
    /* 2: reserved keys among others. */
    span(2);
    act_arg_int("External id", 9);
    act_arg_int("x", 1);
    act_arg_bool("unfinished", 1);
    act_arg_int("device", 4);
    /* 3: empty keys, NULL keys and ids act_name never returned all read
     * as "": one arg. */
    span(3);
    act_arg_int("", 1);
    act_arg_int(NULL, 2);
    act_arg_int_k(0x00fedcbau, 3);
    act_arg_int_k(0x00fedcbbu, 4);
    act_arg_int("y", 5);
    /* 4: keys too long to intern (local to the chunk), duplicated. */
    span(4);
    act_arg_int(big1, 1);
    act_arg_int(big2, 2);
    act_arg_int("z", 3);
    act_arg_int(big1, 4);
    /* 5: more args than act__vuniq gathers, a duplicate far apart. */
    span(5);
    for (int i = 0; i < ACT__VUNIQ_MAX + 4; i++) {
        char key[16];
        snprintf(key, sizeof key, "k%d", i % (ACT__VUNIQ_MAX + 2));
        act_arg_int(key, (int64_t)i);
    }
    /* 6: exactly ACT__VUNIQ_MAX args, first and last the same key. */
    span(6);
    for (int i = 0; i < ACT__VUNIQ_MAX; i++) {
        char key[16];
        snprintf(key, sizeof key, "m%d", i == ACT__VUNIQ_MAX - 1 ? 0 : i);
        act_arg_int(key, (int64_t)i);
    }
    /* 7: two args, the same key. */
    span(7);
    act_arg_str("Input Dims", "first");
    act_arg_str("Input Dims", "second");
    CHECK_OK(act_session_stop(s));

    act__visitor v;
    memset(&v, 0, sizeof v);
    v.struct_size = sizeof v;
    v.event = on_event;
    char err[256];
    CHECK_OK(act__visit(s, &v, err, sizeof err));
    CHECK_EQ_INT(events_with_args, 8);
    CHECK_EQ_INT(compared, 24);
    CHECK_EQ_STR(desc[0], "Sequence number=7;Input Dims=[[32, 64], [64, 128]];");
    CHECK_EQ_STR(desc[1], "b=2;a=3;");
    CHECK_EQ_STR(desc[2], "x=1;device=4;");
    CHECK_EQ_STR(desc[3], "=4;y=5;");
    CHECK_EQ_STR(desc[4], "<65535 bytes>=2;z=3;<65535 bytes>=4;");
    CHECK_EQ_STR(desc[5], "k2=2;k3=3;k4=4;k5=5;k6=6;k7=7;k8=8;k9=9;k10=10;k11=11;k12=12;k13=13;"
                          "k14=14;k15=15;k16=16;k17=17;k0=18;k1=19;");
    CHECK_EQ_STR(desc[6], "m1=1;m2=2;m3=3;m4=4;m5=5;m6=6;m7=7;m8=8;m9=9;m10=10;m11=11;m12=12;"
                          "m13=13;m14=14;m0=15;");
    CHECK_EQ_STR(desc[7], "Input Dims=second;");
    act_session_destroy(s);
    return check_done();
}
