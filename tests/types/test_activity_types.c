/* SPDX-License-Identifier: MIT */
/*
 * Activity types (DESIGN.md section 2): codes and names, parsing with
 * aliases, retired codes, the default set, sets, and run-time registration
 * (including from several threads at once and past the limit).
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "actrace/actrace.h"
#include "check.h"

typedef struct row {
    int code;
    const char *name;
    int is_default;
    act_activity_shape shape;
} row;

/* DESIGN.md section 2, written out independently of the library's table. */
static const row types[] = {
    {0, "cpu_op", 1, ACT_SHAPE_HOST_SPAN},
    {1, "user_annotation", 1, ACT_SHAPE_HOST_SPAN},
    {2, "gpu_user_annotation", 1, ACT_SHAPE_DEVICE_SPAN},
    {3, "gpu_memcpy", 1, ACT_SHAPE_DEVICE_SPAN},
    {4, "gpu_memset", 1, ACT_SHAPE_DEVICE_SPAN},
    {5, "kernel", 1, ACT_SHAPE_DEVICE_SPAN},
    {6, "external_correlation", 1, ACT_SHAPE_CORRELATION},
    {7, "runtime", 1, ACT_SHAPE_HOST_SPAN},
    {8, "driver", 1, ACT_SHAPE_HOST_SPAN},
    {9, "cpu_instant_event", 1, ACT_SHAPE_INSTANT},
    {10, "python_function", 1, ACT_SHAPE_HOST_SPAN},
    {11, "overhead", 1, ACT_SHAPE_HOST_SPAN},
    {14, "mtia_insight", 1, ACT_SHAPE_HOST_SPAN},
    {15, "cuda_sync", 1, ACT_SHAPE_DEVICE_SPAN},
    {16, "cuda_event", 1, ACT_SHAPE_INSTANT},
    {19, "cuda_profiler_range", 0, ACT_SHAPE_HOST_SPAN},
    {23, "collective_comm", 0, ACT_SHAPE_HOST_SPAN},
    {26, "xpu_scope_profiler", 0, ACT_SHAPE_COUNTER},
    {27, "xpu_sync", 0, ACT_SHAPE_DEVICE_SPAN},
    {28, "gpu_pm_counter", 1, ACT_SHAPE_COUNTER},
};

typedef struct retired {
    int code;
    const char *name;
    int canonical;
} retired;

static const retired retireds[] = {
    {12, "mtia_runtime", 7}, {13, "mtia_ccp_events", 5},
    {17, "mtia_counters", 28}, {18, "glow_runtime", 7},
    {20, "hpu_op", 7},         {21, "xpu_runtime", 7},
    {22, "xpu_driver", 8},     {24, "privateuse1_runtime", 7},
    {25, "privateuse1_driver", 8},
};

/* Every alias of DESIGN.md with its canonical code. */
static const struct {
    const char *name;
    int canonical;
} aliases[] = {
    {"mtia_ccp_events", 5},    {"cuda_runtime", 7},   {"mtia_runtime", 7},
    {"glow_runtime", 7},       {"hpu_op", 7},         {"xpu_runtime", 7},
    {"privateuse1_runtime", 7}, {"cuda_driver", 8},   {"xpu_driver", 8},
    {"privateuse1_driver", 8}, {"hardware_counters", 28},
    {"mtia_counters", 28},
};

static void test_codes_and_names(void)
{
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        act_activity_type t = (act_activity_type)types[i].code;
        CHECK_STR(act_activity_type_name(t), types[i].name);
        CHECK_INT(act_activity_type_is_default(t), types[i].is_default);
        act_activity_shape s = (act_activity_shape)99;
        CHECK_INT(act_activity_type_shape(t, &s), 0);
        CHECK_INT(s, types[i].shape);
        CHECK_INT(act_activity_type_is_retired(types[i].code), 0);
        act_activity_type c;
        CHECK_INT(act_activity_type_canonical(types[i].code, &c), 0);
        CHECK_INT(c, types[i].code);
    }
    for (size_t i = 0; i < sizeof retireds / sizeof retireds[0]; i++) {
        int code = retireds[i].code;
        CHECK(act_activity_type_name((act_activity_type)code) == NULL);
        CHECK_INT(act_activity_type_is_retired(code), 1);
        CHECK_STR(act_activity_type_retired_name(code), retireds[i].name);
        act_activity_type c = (act_activity_type)-1;
        CHECK_INT(act_activity_type_canonical(code, &c), 0);
        CHECK_INT(c, retireds[i].canonical);
        act_activity_shape s;
        CHECK_INT(act_activity_type_shape((act_activity_type)code, &s),
                  ACT_EINVAL);
    }
    /* The four decodings the issue names explicitly. */
    act_activity_type c;
    CHECK_INT(act_activity_type_canonical(12, &c), 0);
    CHECK_INT(c, ACT_RUNTIME);
    CHECK_INT(act_activity_type_canonical(13, &c), 0);
    CHECK_INT(c, ACT_CONCURRENT_KERNEL);
    CHECK_INT(act_activity_type_canonical(17, &c), 0);
    CHECK_INT(c, ACT_GPU_PM_COUNTER);
    CHECK_INT(act_activity_type_canonical(22, &c), 0);
    CHECK_INT(c, ACT_DRIVER);
    /* Codes never issued. */
    int never[] = {-1, 29, 30, 100, 1023, 1024, 5000, 0x7fffffff};
    for (size_t i = 0; i < sizeof never / sizeof never[0]; i++) {
        CHECK_INT(act_activity_type_canonical(never[i], &c), ACT_EUNKNOWN);
        CHECK(act_activity_type_name((act_activity_type)never[i]) == NULL);
        CHECK(act_activity_type_retired_name(never[i]) == NULL);
        CHECK_INT(act_activity_type_is_retired(never[i]), 0);
    }
    CHECK_INT(act_activity_type_canonical(0, NULL), ACT_EINVAL);
    CHECK(act_activity_type_retired_name(7) == NULL);
    CHECK_STR(act_activity_shape_name(ACT_SHAPE_HOST_SPAN), "host_span");
    CHECK_STR(act_activity_shape_name(ACT_SHAPE_DEVICE_SPAN), "device_span");
    CHECK_STR(act_activity_shape_name(ACT_SHAPE_INSTANT), "instant");
    CHECK_STR(act_activity_shape_name(ACT_SHAPE_COUNTER), "counter");
    CHECK_STR(act_activity_shape_name(ACT_SHAPE_CORRELATION), "correlation");
    CHECK(act_activity_shape_name((act_activity_shape)5) == NULL);
}

static void test_parse(void)
{
    act_activity_type t;
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        const char *n = types[i].name;
        t = (act_activity_type)-1;
        CHECK_INT(act_activity_type_parse(n, strlen(n), &t), 0);
        CHECK_INT(t, types[i].code);
    }
    for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++) {
        const char *n = aliases[i].name;
        t = (act_activity_type)-1;
        CHECK_INT(act_activity_type_parse(n, strlen(n), &t), 0);
        CHECK_INT(t, aliases[i].canonical);
    }
    /* Case-insensitive, surrounding blanks ignored, length respected. */
    const char *s = " \t KeRnEl \r\n";
    CHECK_INT(act_activity_type_parse(s, strlen(s), &t), 0);
    CHECK_INT(t, ACT_CONCURRENT_KERNEL);
    CHECK_INT(act_activity_type_parse("CUDA_Runtime", 12, &t), 0);
    CHECK_INT(t, ACT_RUNTIME);
    CHECK_INT(act_activity_type_parse("driverXYZ", 6, &t), 0);
    CHECK_INT(t, ACT_DRIVER);
    CHECK_INT(act_activity_type_parse("GPU_PM_COUNTER", 14, &t), 0);
    CHECK_INT(t, ACT_GPU_PM_COUNTER);
    /* Anything else. */
    const char *bad[] = {"",        "   ",          "memcopy", "kern",
                         "kernels", "cuda runtime", "7",       "runtime,",
                         "ACT_RUNTIME", "concurrent_kernel"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK_INT(act_activity_type_parse(bad[i], strlen(bad[i]), &t),
                  ACT_EUNKNOWN);
    CHECK_INT(act_activity_type_parse("run\0time", 8, &t), ACT_EUNKNOWN);
    char longname[200];
    memset(longname, 'a', sizeof longname);
    CHECK_INT(act_activity_type_parse(longname, sizeof longname, &t),
              ACT_EUNKNOWN);
    CHECK_INT(act_activity_type_parse(NULL, 3, &t), ACT_EINVAL);
    CHECK_INT(act_activity_type_parse("kernel", 6, NULL), ACT_EINVAL);
}

static void test_aliases_and_enumerators(void)
{
    const char *names[16];
    size_t n = act_activity_type_aliases(ACT_RUNTIME, names, 16);
    CHECK_INT(n, 6);
    CHECK_STR(names[0], "cuda_runtime");
    CHECK_STR(names[5], "privateuse1_runtime");
    CHECK_INT(act_activity_type_aliases(ACT_DRIVER, NULL, 0), 3);
    CHECK_INT(act_activity_type_aliases(ACT_CPU_OP, names, 16), 0);
    n = act_activity_type_aliases(ACT_GPU_PM_COUNTER, names, 1);
    CHECK_INT(n, 2);
    CHECK_STR(names[0], "hardware_counters");
    n = act_activity_type_deprecated_enumerators(ACT_RUNTIME, names, 16);
    CHECK_INT(n, 6);
    CHECK_STR(names[0], "ACT_CUDA_RUNTIME");
    n = act_activity_type_deprecated_enumerators(ACT_CONCURRENT_KERNEL, names,
                                                 16);
    CHECK_INT(n, 1);
    CHECK_STR(names[0], "ACT_MTIA_CCP_EVENTS");
    CHECK_INT(act_activity_type_deprecated_enumerators(ACT_GPU_PM_COUNTER,
                                                       NULL, 0),
              2);
}

static void test_default_set(void)
{
    static const int expect[] = {0, 1, 2, 3, 4, 5, 6, 7,
                                 8, 9, 10, 11, 14, 15, 16, 28};
    CHECK_INT(act_activity_types_default_count, 16);
    for (size_t i = 0; i < act_activity_types_default_count && i < 16; i++)
        CHECK_INT(act_activity_types_default[i], expect[i]);
    act_activity_set set;
    act_activity_set_default(&set);
    CHECK_INT(act_activity_set_count(&set), 16);
    for (int code = 0; code <= ACT_ACTIVITY_TYPE_MAX_BUILTIN; code++) {
        act_activity_type c;
        act_activity_type_canonical(code, &c);
        CHECK_INT(act_activity_set_has(&set, (act_activity_type)code),
                  act_activity_type_is_default(c));
    }
    /* Iteration yields the members in ascending order. */
    size_t cur = 0, i = 0;
    act_activity_type t;
    while (act_activity_set_next(&set, &cur, &t)) {
        CHECK(i < 16);
        if (i < 16)
            CHECK_INT(t, expect[i]);
        i++;
    }
    CHECK_INT(i, 16);
    CHECK_INT(act_activity_set_next(&set, &cur, &t), 0);
}

static void test_sets(void)
{
    act_activity_set set;
    act_activity_set_clear(&set);
    CHECK_INT(act_activity_set_count(&set), 0);
    size_t cur = 0;
    act_activity_type t;
    CHECK_INT(act_activity_set_next(&set, &cur, &t), 0);
    CHECK_INT(act_activity_set_add(&set, ACT_XPU_SYNC), 0);
    CHECK_INT(act_activity_set_add(&set, ACT_XPU_SYNC), 0);
    CHECK_INT(act_activity_set_count(&set), 1);
    /* A retired code is added as its canonical type. */
    CHECK_INT(act_activity_set_add(&set, (act_activity_type)21), 0);
    CHECK_INT(act_activity_set_has(&set, ACT_RUNTIME), 1);
    CHECK_INT(act_activity_set_has(&set, (act_activity_type)12), 1);
    CHECK_INT(act_activity_set_count(&set), 2);
    CHECK_INT(act_activity_set_add(&set, (act_activity_type)29), ACT_EINVAL);
    CHECK_INT(act_activity_set_add(&set, (act_activity_type)-3), ACT_EINVAL);
    CHECK_INT(act_activity_set_add(&set, (act_activity_type)1024 + 200),
              ACT_EINVAL);
    CHECK_INT(act_activity_set_has(&set, (act_activity_type)29), 0);
    CHECK_INT(act_activity_set_remove(&set, (act_activity_type)24), 0);
    CHECK_INT(act_activity_set_has(&set, ACT_RUNTIME), 0);
    CHECK_INT(act_activity_set_remove(&set, ACT_CPU_OP), 0);
    CHECK_INT(act_activity_set_remove(&set, (act_activity_type)29),
              ACT_EINVAL);
    CHECK_INT(act_activity_set_count(&set), 1);
    cur = 0;
    CHECK_INT(act_activity_set_next(&set, &cur, &t), 1);
    CHECK_INT(t, ACT_XPU_SYNC);
    CHECK_INT(act_activity_set_next(&set, &cur, &t), 0);
    /* A plain value. */
    act_activity_set copy = set;
    CHECK_INT(act_activity_set_has(&copy, ACT_XPU_SYNC), 1);
}

static void test_register(void)
{
    int before = act_activity_type_registered_count();
    CHECK_INT(before, 0);
    act_activity_type a, b;
    CHECK(act_activity_type_name((act_activity_type)1024) == NULL);
    CHECK_INT(act_activity_type_register("npu_kernel", ACT_SHAPE_DEVICE_SPAN,
                                         &a),
              0);
    CHECK_INT(a, ACT_ACTIVITY_TYPE_FIRST_CUSTOM);
    CHECK_INT(act_activity_type_register("npu_kernel", ACT_SHAPE_DEVICE_SPAN,
                                         &b),
              0);
    CHECK_INT(b, a);
    CHECK_INT(act_activity_type_register("npu_kernel", ACT_SHAPE_HOST_SPAN,
                                         &b),
              ACT_EEXIST);
    CHECK_STR(act_activity_type_name(a), "npu_kernel");
    act_activity_shape s;
    CHECK_INT(act_activity_type_shape(a, &s), 0);
    CHECK_INT(s, ACT_SHAPE_DEVICE_SPAN);
    CHECK_INT(act_activity_type_is_default(a), 0);
    act_activity_type c;
    CHECK_INT(act_activity_type_canonical((int)a, &c), 0);
    CHECK_INT(c, a);
    CHECK_INT(act_activity_type_canonical((int)a + 1, &c), ACT_EUNKNOWN);
    /* Registered names parse like built-ins. */
    CHECK_INT(act_activity_type_parse(" NPU_Kernel ", 12, &c), 0);
    CHECK_INT(c, a);

    /* Built-in names and aliases are refused. */
    const char *taken[] = {"kernel", "runtime", "cuda_runtime", "hpu_op",
                           "mtia_counters", "cuda_profiler_range"};
    for (size_t i = 0; i < sizeof taken / sizeof taken[0]; i++)
        CHECK_INT(act_activity_type_register(taken[i], ACT_SHAPE_HOST_SPAN,
                                             &b),
                  ACT_EEXIST);
    /* Malformed names. */
    char n64[65], n63[64];
    memset(n64, 'x', 64);
    n64[64] = '\0';
    memset(n63, 'y', 63);
    n63[63] = '\0';
    const char *badnames[] = {"",     "Npu",  "9npu", "_npu", "npu-op",
                              "npu op", "npu\xc3\xa9", n64};
    for (size_t i = 0; i < sizeof badnames / sizeof badnames[0]; i++)
        CHECK_INT(act_activity_type_register(badnames[i], ACT_SHAPE_HOST_SPAN,
                                             &b),
                  ACT_EINVAL);
    CHECK_INT(act_activity_type_register(NULL, ACT_SHAPE_HOST_SPAN, &b),
              ACT_EINVAL);
    CHECK_INT(act_activity_type_register("npu_x", ACT_SHAPE_HOST_SPAN, NULL),
              ACT_EINVAL);
    CHECK_INT(act_activity_type_register("npu_x", (act_activity_shape)5, &b),
              ACT_EINVAL);
    CHECK_INT(act_activity_type_register(n63, ACT_SHAPE_COUNTER, &b), 0);
    CHECK_INT(b, a + 1);
    CHECK_INT(act_activity_type_register("a", ACT_SHAPE_INSTANT, &b), 0);
    CHECK_INT(act_activity_type_registered_count(), 3);

    /* Sets hold registered types. */
    act_activity_set set;
    act_activity_set_default(&set);
    CHECK_INT(act_activity_set_add(&set, a), 0);
    CHECK_INT(act_activity_set_has(&set, a), 1);
    CHECK_INT(act_activity_set_count(&set), 17);
    size_t cur = 0, n = 0;
    act_activity_type t, last = ACT_CPU_OP;
    while (act_activity_set_next(&set, &cur, &t)) {
        last = t;
        n++;
    }
    CHECK_INT(n, 17);
    CHECK_INT(last, a);
    CHECK_INT(act_activity_set_remove(&set, a), 0);
    CHECK_INT(act_activity_set_has(&set, a), 0);
}

/* Several threads register overlapping names at once: each name gets one
 * code, every thread sees the same code for it. */
#define NTHREADS 8
#define NNAMES 20

static act_activity_type seen[NTHREADS][NNAMES];

static void *register_many(void *arg)
{
    int id = (int)(size_t)arg;
    for (int k = 0; k < NNAMES; k++) {
        int i = (k + id) % NNAMES; /* different orders in each thread */
        char name[32];
        snprintf(name, sizeof name, "thread_type_%d", i);
        if (act_activity_type_register(name, ACT_SHAPE_HOST_SPAN,
                                       &seen[id][i]) != 0)
            seen[id][i] = (act_activity_type)-1;
        /* Lookups run concurrently with registrations. */
        act_activity_type p;
        if (act_activity_type_parse(name, strlen(name), &p) != 0 ||
            p != seen[id][i])
            seen[id][i] = (act_activity_type)-2;
    }
    return NULL;
}

static void test_register_threads(void)
{
    int before = act_activity_type_registered_count();
    pthread_t th[NTHREADS];
    for (int i = 0; i < NTHREADS; i++)
        pthread_create(&th[i], NULL, register_many, (void *)(size_t)i);
    for (int i = 0; i < NTHREADS; i++)
        pthread_join(th[i], NULL);
    CHECK_INT(act_activity_type_registered_count(), before + NNAMES);
    for (int i = 0; i < NNAMES; i++) {
        CHECK((int)seen[0][i] >= ACT_ACTIVITY_TYPE_FIRST_CUSTOM + before);
        for (int t = 1; t < NTHREADS; t++)
            CHECK_INT(seen[t][i], seen[0][i]);
        char name[32];
        snprintf(name, sizeof name, "thread_type_%d", i);
        CHECK_STR(act_activity_type_name(seen[0][i]), name);
    }
}

static void test_register_limit(void)
{
    int n = act_activity_type_registered_count();
    act_activity_type t = ACT_CPU_OP;
    for (int i = n; i < ACT_ACTIVITY_TYPE_MAX_REGISTERED; i++) {
        char name[32];
        snprintf(name, sizeof name, "fill_%d", i);
        CHECK_INT(act_activity_type_register(name, ACT_SHAPE_HOST_SPAN, &t),
                  0);
    }
    CHECK_INT(t, ACT_ACTIVITY_TYPE_FIRST_CUSTOM +
                     ACT_ACTIVITY_TYPE_MAX_REGISTERED - 1);
    CHECK_INT(act_activity_type_registered_count(),
              ACT_ACTIVITY_TYPE_MAX_REGISTERED);
    act_activity_type u;
    CHECK_INT(act_activity_type_register("one_too_many", ACT_SHAPE_HOST_SPAN,
                                         &u),
              ACT_ELIMIT);
    /* An existing name still answers. */
    CHECK_INT(act_activity_type_register("npu_kernel", ACT_SHAPE_DEVICE_SPAN,
                                         &u),
              0);
    CHECK_INT(u, ACT_ACTIVITY_TYPE_FIRST_CUSTOM);
    /* The last registered code fits a set. */
    act_activity_set set;
    act_activity_set_clear(&set);
    CHECK_INT(act_activity_set_add(&set, t), 0);
    CHECK_INT(act_activity_set_has(&set, t), 1);
    size_t cur = 0;
    act_activity_type got;
    CHECK_INT(act_activity_set_next(&set, &cur, &got), 1);
    CHECK_INT(got, t);
}

int main(void)
{
    test_codes_and_names();
    test_parse();
    test_aliases_and_enumerators();
    test_default_set();
    test_sets();
    test_register();
    test_register_threads();
    test_register_limit();
    return check_exit();
}
