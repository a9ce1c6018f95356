/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target for the config parser (act_config_parse). Beyond "no crash,
 * no leak, no overread", it checks the parser's promises:
 *   - a failed parse reports an error with a code and, when tied to a line,
 *     a position inside the input, and changes nothing;
 *   - a successful parse's canonical output (act_config_format) parses
 *     again to the same output.
 * The first byte picks strict mode, so both modes are explored.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "actrace/actrace.h"

static void quiet(void *user, act_log_level level, const char *msg)
{
    (void)user;
    (void)level;
    (void)msg;
}

static char *format(const act_config *cfg, size_t *len)
{
    size_t need = act_config_format(cfg, NULL, 0);
    char *buf = malloc(need + 1);
    if (!buf)
        abort();
    if (act_config_format(cfg, buf, need + 1) != need ||
        strlen(buf) != need)
        abort();
    *len = need;
    return buf;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    act_log_set(quiet, NULL);
    act_config_parse_opts opts;
    act_config_parse_opts_init(&opts);
    if (size > 0 && (data[0] & 1))
        opts.flags |= ACT_CONFIG_STRICT;
    const char *text = (const char *)data;

    /* Parse on top of a config that already has a value, to see that a
     * failed parse leaves it alone. */
    act_config *cfg = NULL;
    if (act_config_parse("ACTIVITIES_ITERATIONS = 77\n", 27, NULL, &cfg,
                         NULL) != 0)
        abort();
    size_t before_len;
    char *before = format(cfg, &before_len);

    act_parse_error err;
    int rc = act_config_parse(text, size, &opts, &cfg, &err);
    if (rc != 0) {
        if (err.code != rc || rc >= 0)
            abort();
        if (err.line < 0 || err.column < 0 ||
            memchr(err.message, '\0', sizeof err.message) == NULL)
            abort();
        if (err.line > 0) {
            /* The line exists and the column is on it (or just past it). */
            size_t line = 1, start = 0;
            for (size_t i = 0; i < size && line < (size_t)err.line; i++)
                if (data[i] == '\n') {
                    line++;
                    start = i + 1;
                }
            if (line != (size_t)err.line)
                abort();
            size_t end = start;
            while (end < size && data[end] != '\n')
                end++;
            if (err.column < 1 || (size_t)err.column > end - start + 1)
                abort();
        }
        size_t after_len;
        char *after = format(cfg, &after_len);
        if (after_len != before_len || memcmp(before, after, after_len) != 0)
            abort(); /* all-or-nothing */
        free(after);
    } else {
        size_t out_len;
        char *out = format(cfg, &out_len);
        act_config *again = NULL;
        act_config_parse_opts plain;
        act_config_parse_opts_init(&plain);
        /* Not strict: unknown keys the input set are in the output. */
        if (act_config_parse(out, out_len, &plain, &again, &err) != 0)
            abort();
        size_t again_len;
        char *out2 = format(again, &again_len);
        if (again_len != out_len || memcmp(out, out2, out_len) != 0)
            abort();
        free(out);
        free(out2);
        act_config_destroy(again);
    }
    free(before);
    act_config_destroy(cfg);
    return 0;
}
