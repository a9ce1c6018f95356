/* SPDX-License-Identifier: MIT */
/*
 * `actrace types` and `actrace types --json`: the JSON is parsed with
 * jansson and checked entry by entry; the table is checked for its rows.
 * The command is also run in-process (tools/actrace/cmd_types.c is compiled
 * into this test) after registering a type, to check that registered types
 * are listed.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "actrace/actrace.h"
#include "check.h"
#include "cli.h"

#define CLI ACT_BINARY_DIR "/bin/actrace"

/* Output and exit status of a shell command. */
static char *run(const char *cmd, int *status)
{
    FILE *p = popen(cmd, "r");
    if (!p)
        return NULL;
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    size_t got;
    while (buf && (got = fread(buf + n, 1, cap - n - 1, p)) > 0) {
        n += got;
        if (n + 1 == cap) {
            cap *= 2;
            char *nb = realloc(buf, cap);
            if (!nb) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = nb;
        }
    }
    int st = pclose(p);
    *status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    if (buf)
        buf[n] = '\0';
    return buf;
}

static json_t *find_code(json_t *arr, int code)
{
    size_t i;
    json_t *v;
    json_array_foreach(arr, i, v)
    {
        if (json_integer_value(json_object_get(v, "code")) == code)
            return v;
    }
    return NULL;
}

static int array_has(json_t *arr, const char *s)
{
    size_t i;
    json_t *v;
    json_array_foreach(arr, i, v)
    {
        if (json_is_string(v) && strcmp(json_string_value(v), s) == 0)
            return 1;
    }
    return 0;
}

static void check_builtin_json(json_t *root)
{
    CHECK(json_is_array(root));
    /* Every code 0..28 exactly once, in order. */
    for (int code = 0; code <= ACT_ACTIVITY_TYPE_MAX_BUILTIN; code++) {
        json_t *e = json_array_get(root, (size_t)code);
        CHECK(json_is_object(e));
        CHECK_INT(json_integer_value(json_object_get(e, "code")), code);
        if (act_activity_type_is_retired(code)) {
            act_activity_type c;
            act_activity_type_canonical(code, &c);
            CHECK(json_is_true(json_object_get(e, "retired")));
            CHECK_STR(json_string_value(json_object_get(e, "name")),
                      act_activity_type_retired_name(code));
            CHECK_STR(json_string_value(json_object_get(e, "canonical")),
                      act_activity_type_name(c));
            CHECK(json_object_get(e, "shape") == NULL);
        } else {
            act_activity_type t = (act_activity_type)code;
            CHECK_STR(json_string_value(json_object_get(e, "name")),
                      act_activity_type_name(t));
            CHECK(json_is_boolean(json_object_get(e, "default")));
            CHECK_INT(json_is_true(json_object_get(e, "default")),
                      act_activity_type_is_default(t));
            CHECK(json_is_string(json_object_get(e, "shape")));
            CHECK(json_is_array(json_object_get(e, "aliases")));
            CHECK(json_is_array(json_object_get(e, "deprecated_enumerators")));
            CHECK(json_object_get(e, "retired") == NULL);
        }
    }
    /* The examples of the issue, spelled out. */
    json_t *rt = find_code(root, 7);
    CHECK(rt != NULL);
    if (rt) {
        CHECK_STR(json_string_value(json_object_get(rt, "name")), "runtime");
        CHECK(json_is_true(json_object_get(rt, "default")));
        CHECK_STR(json_string_value(json_object_get(rt, "shape")),
                  "host_span");
        json_t *al = json_object_get(rt, "aliases");
        CHECK_INT(json_array_size(al), 6);
        CHECK(array_has(al, "cuda_runtime"));
        CHECK(array_has(al, "privateuse1_runtime"));
        CHECK(array_has(json_object_get(rt, "deprecated_enumerators"),
                        "ACT_CUDA_RUNTIME"));
        CHECK(array_has(json_object_get(rt, "deprecated_enumerators"),
                        "ACT_HPU_OP"));
    }
    json_t *r12 = find_code(root, 12);
    CHECK(r12 != NULL);
    if (r12) {
        CHECK_STR(json_string_value(json_object_get(r12, "name")),
                  "mtia_runtime");
        CHECK_STR(json_string_value(json_object_get(r12, "canonical")),
                  "runtime");
        CHECK_INT(json_object_size(r12), 4);
    }
    json_t *pm = find_code(root, 28);
    if (pm) {
        CHECK_STR(json_string_value(json_object_get(pm, "shape")), "counter");
        CHECK(array_has(json_object_get(pm, "aliases"), "hardware_counters"));
        CHECK(array_has(json_object_get(pm, "deprecated_enumerators"),
                        "ACT_MTIA_COUNTERS"));
    }
    json_t *rng = find_code(root, 19);
    if (rng)
        CHECK(json_is_false(json_object_get(rng, "default")));
}

static void test_cli_json(void)
{
    int st;
    char *out = run(CLI " types --json", &st);
    CHECK(out != NULL);
    CHECK_INT(st, 0);
    if (!out)
        return;
    json_error_t jerr;
    json_t *root = json_loads(out, 0, &jerr);
    if (!root)
        fprintf(stderr, "invalid JSON: %s (line %d)\n", jerr.text, jerr.line);
    CHECK(root != NULL);
    if (root) {
        CHECK_INT(json_array_size(root), ACT_ACTIVITY_TYPE_MAX_BUILTIN + 1);
        check_builtin_json(root);
        json_decref(root);
    }
    free(out);
}

static void test_cli_table(void)
{
    int st;
    char *out = run(CLI " types", &st);
    CHECK(out != NULL);
    CHECK_INT(st, 0);
    if (!out)
        return;
    CHECK(strncmp(out, " CODE  NAME", 11) == 0);
    char *line = strstr(out, "\n    7  runtime ");
    CHECK(line != NULL);
    if (line) {
        char *end = strchr(line + 1, '\n');
        CHECK(end != NULL);
        if (end)
            *end = '\0';
        CHECK(strstr(line, " yes ") != NULL);
        CHECK(strstr(line, "host_span") != NULL);
        CHECK(strstr(line, "cuda_runtime, mtia_runtime") != NULL);
        if (end)
            *end = '\n';
    }
    CHECK(strstr(out, "\n   22  xpu_driver ") != NULL);
    CHECK(strstr(out, "retired: decodes to driver\n") != NULL);
    CHECK(strstr(out, "\n   26  xpu_scope_profiler     no       counter\n") !=
          NULL);
    int lines = 0;
    for (char *p = out; *p; p++)
        lines += *p == '\n';
    CHECK_INT(lines, 1 + ACT_ACTIVITY_TYPE_MAX_BUILTIN + 1);
    free(out);

    out = run(CLI " types --bogus 2>&1", &st);
    CHECK_INT(st, 2);
    CHECK(out && strstr(out, "unknown argument '--bogus'") != NULL);
    free(out);
}

/* Runs act_cmd_types in this process with stdout captured in a file. */
static char *capture_types_json(void)
{
    char path[] = "/tmp/actrace_types_XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0)
        return NULL;
    fflush(stdout);
    int saved = dup(STDOUT_FILENO);
    dup2(fd, STDOUT_FILENO);
    char a0[] = "types", a1[] = "--json";
    char *argv[] = {a0, a1, NULL};
    int rc = act_cmd_types(2, argv);
    fflush(stdout);
    dup2(saved, STDOUT_FILENO);
    close(saved);
    CHECK_INT(rc, 0);
    off_t size = lseek(fd, 0, SEEK_END);
    char *buf = malloc((size_t)size + 1);
    if (buf && pread(fd, buf, (size_t)size, 0) == size)
        buf[size] = '\0';
    close(fd);
    unlink(path);
    return buf;
}

static void test_registered_listed(void)
{
    act_activity_type a, b;
    CHECK_INT(act_activity_type_register("npu_kernel", ACT_SHAPE_DEVICE_SPAN,
                                         &a),
              0);
    CHECK_INT(act_activity_type_register("npu_counters", ACT_SHAPE_COUNTER,
                                         &b),
              0);
    char *out = capture_types_json();
    CHECK(out != NULL);
    if (!out)
        return;
    json_error_t jerr;
    json_t *root = json_loads(out, 0, &jerr);
    CHECK(root != NULL);
    if (root) {
        CHECK_INT(json_array_size(root), ACT_ACTIVITY_TYPE_MAX_BUILTIN + 3);
        check_builtin_json(root);
        json_t *e = find_code(root, (int)a);
        CHECK(e != NULL);
        if (e) {
            CHECK_STR(json_string_value(json_object_get(e, "name")),
                      "npu_kernel");
            CHECK_STR(json_string_value(json_object_get(e, "shape")),
                      "device_span");
            CHECK(json_is_false(json_object_get(e, "default")));
            CHECK(json_is_true(json_object_get(e, "registered")));
            CHECK_INT(json_array_size(json_object_get(e, "aliases")), 0);
        }
        e = find_code(root, (int)b);
        CHECK(e != NULL);
        if (e)
            CHECK_STR(json_string_value(json_object_get(e, "shape")),
                      "counter");
        json_decref(root);
    }
    free(out);
}

int main(void)
{
    test_cli_json();
    test_cli_table();
    test_registered_listed();
    return check_exit();
}
