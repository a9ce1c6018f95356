/* SPDX-License-Identifier: MIT */
/*
 * actrace types [--json]: every activity type code ever issued, with its
 * name, default membership, shape and aliases; retired codes with the type
 * they decode to; then the types registered in this process. Uses only the
 * public API.
 */
#include <stdio.h>
#include <string.h>

#include "actrace/actrace.h"
#include "cli.h"

#define MAX_NAMES 16

/* Type names and enumerators are plain ASCII identifiers, but escape
 * anyway so the output stays valid JSON whatever a plugin registers. */
static void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p < 0x20)
            fprintf(f, "\\u%04x", *p);
        else
            fputc(*p, f);
    }
    fputc('"', f);
}

static void json_names(FILE *f, const char *const *names, size_t n)
{
    fputc('[', f);
    for (size_t i = 0; i < n; i++) {
        if (i)
            fputs(", ", f);
        json_str(f, names[i]);
    }
    fputc(']', f);
}

static void json_type(FILE *f, int code, int registered)
{
    act_activity_type t = (act_activity_type)code;
    act_activity_shape shape = ACT_SHAPE_HOST_SPAN;
    const char *names[MAX_NAMES];
    act_activity_type_shape(t, &shape);
    fprintf(f, "{\"code\": %d, \"name\": ", code);
    json_str(f, act_activity_type_name(t));
    fprintf(f, ", \"default\": %s, \"shape\": ",
            act_activity_type_is_default(t) ? "true" : "false");
    json_str(f, act_activity_shape_name(shape));
    size_t n = act_activity_type_aliases(t, names, MAX_NAMES);
    fputs(", \"aliases\": ", f);
    json_names(f, names, n < MAX_NAMES ? n : MAX_NAMES);
    n = act_activity_type_deprecated_enumerators(t, names, MAX_NAMES);
    fputs(", \"deprecated_enumerators\": ", f);
    json_names(f, names, n < MAX_NAMES ? n : MAX_NAMES);
    if (registered)
        fputs(", \"registered\": true", f);
    fputc('}', f);
}

static int print_json(FILE *f)
{
    int first = 1;
    int nreg = act_activity_type_registered_count();
    fputs("[\n", f);
    for (int code = 0; code <= ACT_ACTIVITY_TYPE_MAX_BUILTIN + nreg; code++) {
        int c = code <= ACT_ACTIVITY_TYPE_MAX_BUILTIN
                    ? code
                    : ACT_ACTIVITY_TYPE_FIRST_CUSTOM +
                          (code - ACT_ACTIVITY_TYPE_MAX_BUILTIN - 1);
        act_activity_type canon;
        if (act_activity_type_canonical(c, &canon) != 0)
            continue; /* never issued */
        if (!first)
            fputs(",\n", f);
        first = 0;
        if (act_activity_type_is_retired(c)) {
            fprintf(f, "{\"code\": %d, \"name\": ", c);
            json_str(f, act_activity_type_retired_name(c));
            fputs(", \"retired\": true, \"canonical\": ", f);
            json_str(f, act_activity_type_name(canon));
            fputc('}', f);
        } else {
            json_type(f, c, c >= ACT_ACTIVITY_TYPE_FIRST_CUSTOM);
        }
    }
    fputs("\n]\n", f);
    return 0;
}

static int print_table(FILE *f)
{
    int nreg = act_activity_type_registered_count();
    fprintf(f, "%5s  %-22s %-8s %-12s %s\n", "CODE", "NAME", "DEFAULT",
            "SHAPE", "ALIASES");
    for (int code = 0; code <= ACT_ACTIVITY_TYPE_MAX_BUILTIN + nreg; code++) {
        int c = code <= ACT_ACTIVITY_TYPE_MAX_BUILTIN
                    ? code
                    : ACT_ACTIVITY_TYPE_FIRST_CUSTOM +
                          (code - ACT_ACTIVITY_TYPE_MAX_BUILTIN - 1);
        act_activity_type t;
        if (act_activity_type_canonical(c, &t) != 0)
            continue;
        if (act_activity_type_is_retired(c)) {
            fprintf(f, "%5d  %-22s %-8s %-12s retired: decodes to %s\n", c,
                    act_activity_type_retired_name(c), "-", "-",
                    act_activity_type_name(t));
            continue;
        }
        act_activity_shape shape = ACT_SHAPE_HOST_SPAN;
        act_activity_type_shape(t, &shape);
        const char *names[MAX_NAMES];
        size_t n = act_activity_type_aliases(t, names, MAX_NAMES);
        int tail = n > 0 || c >= ACT_ACTIVITY_TYPE_FIRST_CUSTOM;
        fprintf(f, "%5d  %-22s %-8s %-*s", c, act_activity_type_name(t),
                act_activity_type_is_default(t) ? "yes" : "no", tail ? 12 : 0,
                act_activity_shape_name(shape));
        for (size_t i = 0; i < n && i < MAX_NAMES; i++)
            fprintf(f, "%s%s", i ? ", " : " ", names[i]);
        if (c >= ACT_ACTIVITY_TYPE_FIRST_CUSTOM)
            fputs(" (registered)", f);
        fputc('\n', f);
    }
    return 0;
}

#define TYPES_USAGE "usage: actrace types [--json] [--plugin PATH]...\n"

int act_cmd_types(int argc, char **argv)
{
    int json = 0;
    const char *plugins[64];
    size_t nplugins = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0) {
            json = 1;
        } else if (strcmp(argv[i], "--plugin") == 0 && i + 1 < argc) {
            if (nplugins == sizeof plugins / sizeof *plugins) {
                fprintf(stderr, "actrace types: too many plugins\n");
                return 2;
            }
            plugins[nplugins++] = argv[++i];
        } else if (strcmp(argv[i], "-h") == 0 ||
                   strcmp(argv[i], "--help") == 0) {
            printf(TYPES_USAGE);
            return 0;
        } else {
            fprintf(stderr, "actrace types: unknown argument '%s'\n" TYPES_USAGE, argv[i]);
            return 2;
        }
    }
    /* Plugins register their types in init: a session that is created
     * (never started) loads and initialises them; refusals go to the log. */
    act_session *s = NULL;
    if (nplugins) {
        act_session_opts o;
        act_session_opts_init(&o);
        o.plugins = plugins;
        o.plugin_count = nplugins;
        int err = act_session_create(&o, &s);
        if (err != 0) {
            fprintf(stderr, "actrace types: cannot load plugins: %s\n", act_strerror(err));
            return 1;
        }
    }
    int rc = json ? print_json(stdout) : print_table(stdout);
    act_session_destroy(s);
    if (fflush(stdout) != 0)
        return 1;
    return rc;
}
