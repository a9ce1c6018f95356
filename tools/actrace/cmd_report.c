/* SPDX-License-Identifier: MIT */
/*
 * actrace report [-o OUT.html] [--chartjs FILE] TRACE|DIR: one HTML page
 * to look at instead of summary's tables. Each trace is read once
 * (summary's pass plus report_collect.c's hook); the page holds what the
 * pass computed (binned and bounded, docs/report.md), never the events,
 * and every script and style inline, so it opens offline from a local
 * disk. The charts are drawn by Chart.js, read from the installed Debian
 * package (libjs-chart.js) when the page is written.
 *
 * Exit 0; 2 on bad arguments, an unreadable trace or a missing Chart.js;
 * 1 when the page cannot be written.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "actrace/actrace.h"
#include "cli.h"
#include "report.h"

/* The page's own script and style (report_page.js, report_page.css),
 * embedded at build time. */
extern const char act_report_page_js[];
extern const char act_report_page_css[];


static void usage(FILE *f)
{
    fprintf(f, "usage: actrace report [-o OUT.html] [--chartjs FILE] TRACE|DIR\n");
}

/* Where Chart.js's UMD build is looked for, in order, after --chartjs and
 * $ACTRACE_CHARTJS. */
static const char *const chartjs_paths[] = {
    "/usr/share/javascript/chart.js/chart.min.js", /* Debian, Ubuntu: libjs-chart.js */
    "/usr/share/nodejs/chart.js/dist/chart.min.js", /* Debian: node-chart.js */
    "/usr/local/share/javascript/chart.js/chart.min.js",
    "/usr/share/javascript/chart.js/chart.js",
    NULL};

static int is_trace_name(const char *n)
{
    size_t l = strlen(n);
    return (l > 5 && strcmp(n + l - 5, ".json") == 0) ||
           (l > 8 && strcmp(n + l - 8, ".json.gz") == 0);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The traces of DIR (*.json, *.json.gz), by name. -1 if none. */
static int list_dir(const char *dir, char ***out, size_t *n)
{
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    size_t cap = 0;
    *n = 0;
    *out = NULL;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.' || !is_trace_name(e->d_name))
            continue;
        size_t l = strlen(dir) + strlen(e->d_name) + 2;
        char *p = act_cli_xmalloc(l);
        snprintf(p, l, "%s/%s", dir, e->d_name);
        struct stat st;
        if (stat(p, &st) != 0 || !S_ISREG(st.st_mode)) {
            free(p);
            continue;
        }
        act_cli_grow(out, &cap, *n, sizeof **out);
        (*out)[(*n)++] = p;
    }
    closedir(d);
    if (*n > 1)
        act_cli_sort(*out, *n, sizeof **out, cmp_str);
    return *n ? 0 : -1;
}

/* ---- Chart.js ------------------------------------------------------------------------ */

static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 1 << 20, n = 0;
    char *b = act_cli_xmalloc(cap + 1);
    size_t k;
    while ((k = fread(b + n, 1, cap - n, f)) > 0) {
        n += k;
        if (n == cap) {
            cap *= 2;
            b = act_cli_xrealloc(b, cap + 1);
        }
    }
    int bad = ferror(f);
    fclose(f);
    if (bad || n == 0) {
        free(b);
        return NULL;
    }
    b[n] = '\0';
    *len = n;
    return b;
}

static char *find_chartjs(const char *flag, const char **from)
{
    size_t len;
    const char *env = getenv("ACTRACE_CHARTJS");
    const char *given = flag ? flag : (env && *env ? env : NULL);
    if (given) {
        char *b = read_file(given, &len);
        if (!b) {
            fprintf(stderr, "actrace report: cannot read Chart.js from %s (%s): %s\n", given,
                    flag ? "--chartjs" : "ACTRACE_CHARTJS", errno ? strerror(errno) : "empty");
            return NULL;
        }
        *from = given;
        return b;
    }
    for (size_t i = 0; chartjs_paths[i]; i++) {
        char *b = read_file(chartjs_paths[i], &len);
        if (b) {
            *from = chartjs_paths[i];
            return b;
        }
    }
    fprintf(stderr,
            "actrace report: Chart.js is missing: the page's charts are drawn by it, inlined "
            "from the installed library.\n"
            "  Install Debian's package:  sudo apt-get install libjs-chart.js\n"
            "  or point at chart.min.js (Chart.js 3 or 4, UMD build): "
            "--chartjs FILE or ACTRACE_CHARTJS=FILE\n"
            "  (looked in:");
    for (size_t i = 0; chartjs_paths[i]; i++)
        fprintf(stderr, " %s", chartjs_paths[i]);
    fprintf(stderr, ")\n");
    return NULL;
}

/* Text inside a <script> element must not hold "</script" or "<!--"
 * (Chart.js's build and our script hold neither; a string or regular
 * expression that did reads the same with the backslash). */
static void put_script(FILE *f, const char *s)
{
    for (const char *p = s; *p; p++) {
        if (p[0] == '<' && ((p[1] == '/' && strncasecmp(p + 2, "script", 6) == 0) ||
                            strncmp(p + 1, "!--", 3) == 0))
            fputs("<\\", f);
        else
            fputc(*p, f);
    }
}

static void put_html(FILE *f, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '&': fputs("&amp;", f); break;
        case '"': fputs("&quot;", f); break;
        default: fputc(*s, f);
        }
    }
}

/* ---- command ------------------------------------------------------------------------ */

int act_cmd_report(int argc, char **argv)
{
    const char *out = NULL, *chartjs = NULL, *input = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "-o") == 0 || strcmp(a, "--output") == 0 || strcmp(a, "--chartjs") == 0) {
            if (i + 1 >= argc) {
                fprintf(stderr, "actrace report: %s needs a value\n", a);
                usage(stderr);
                return 2;
            }
            if (strcmp(a, "--chartjs") == 0)
                chartjs = argv[++i];
            else
                out = argv[++i];
        } else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(a, "--") == 0 && i + 1 < argc && !input) {
            input = argv[++i];
        } else if (a[0] == '-' && a[1] != '\0') {
            fprintf(stderr, "actrace report: unknown option '%s'\n", a);
            usage(stderr);
            return 2;
        } else if (input) {
            fprintf(stderr, "actrace report: one TRACE or DIR only\n");
            usage(stderr);
            return 2;
        } else {
            input = a;
        }
    }
    if (!input) {
        usage(stderr);
        return 2;
    }
    const char *lib_from = NULL;
    char *lib = find_chartjs(chartjs, &lib_from);
    if (!lib)
        return 2;

    struct stat st;
    int is_dir = strcmp(input, "-") != 0 && stat(input, &st) == 0 && S_ISDIR(st.st_mode);
    char **files = NULL;
    size_t nf = 0;
    if (is_dir) {
        if (list_dir(input, &files, &nf) != 0) {
            fprintf(stderr, "%s: error: no trace in this directory (*.json, *.json.gz)\n", input);
            free(lib);
            return 2;
        }
    } else {
        files = act_cli_xcalloc(1, sizeof *files);
        files[0] = act_cli_xstrdup(input);
        nf = 1;
    }
    /* Each trace's part of the page, written right after it is read (its
     * statistics then freed: a directory of many ranks holds one trace's
     * statistics at a time). */
    struct {
        char *file, *json;
        size_t jlen;
    } *tr = act_cli_xcalloc(nf, sizeof *tr);
    size_t good = 0;
    for (size_t i = 0; i < nf; i++) {
        char err[600];
        tr[i].file = files[i];
        FILE *m = open_memstream(&tr[i].json, &tr[i].jlen);
        if (!m) {
            fputs("actrace: out of memory\n", stderr);
            exit(1);
        }
        if (act_cli_report_trace(files[i], i, m, err, sizeof err))
            good++;
        else
            fprintf(stderr, "%s: error: %s\n", files[i], err);
        if (fclose(m) != 0) {
            fputs("actrace: out of memory\n", stderr);
            exit(1);
        }
    }
    int rc = 0;
    if (!good) {
        rc = 2;
        goto done;
    }

    /* The page's path: -o, else TRACE with .html for .json(.gz), else
     * DIR/report.html. */
    char *path;
    if (out) {
        path = act_cli_xstrdup(out);
    } else if (is_dir) {
        size_t l = strlen(input) + 16;
        path = act_cli_xmalloc(l);
        snprintf(path, l, "%s/report.html", input);
    } else if (strcmp(input, "-") == 0) {
        path = act_cli_xstrdup("report.html");
    } else {
        size_t l = strlen(input);
        path = act_cli_xmalloc(l + 6);
        memcpy(path, input, l + 1);
        if (l > 8 && strcmp(path + l - 8, ".json.gz") == 0)
            path[l - 8] = '\0';
        else if (l > 5 && strcmp(path + l - 5, ".json") == 0)
            path[l - 5] = '\0';
        strcat(path, ".html");
    }
    /* Never over one of the traces it reads. */
    struct stat ost;
    if (stat(path, &ost) == 0) {
        for (size_t i = 0; i < nf; i++) {
            struct stat ist;
            if (stat(files[i], &ist) == 0 && ist.st_dev == ost.st_dev &&
                ist.st_ino == ost.st_ino) {
                fprintf(stderr, "actrace report: %s is one of the traces read; "
                                "choose another -o\n", path);
                free(path);
                rc = 2;
                goto done;
            }
        }
    }
    /* Written to a fresh temporary beside it, then renamed over it. */
    size_t tl = strlen(path) + 16;
    char *tmp = act_cli_xmalloc(tl);
    snprintf(tmp, tl, "%s.tmpXXXXXX", path);
    int fd = mkstemp(tmp);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f) {
        fprintf(stderr, "actrace report: cannot write %s: %s\n", path, strerror(errno));
        if (fd >= 0) {
            close(fd);
            unlink(tmp);
        }
        free(tmp);
        free(path);
        rc = 1;
        goto done;
    }
    fchmod(fd, 0644 & ~(mode_t)0);
    const char *title = is_dir ? input : input;
    fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n", f);
    /* Nothing may be fetched: a page that tries shows a console error. */
    fputs("<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
          "script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:\">\n", f);
    fputs("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n", f);
    fputs("<meta name=\"generator\" content=\"actrace ", f);
    put_html(f, act_version());
    fputs("\">\n<title>actrace report: ", f);
    put_html(f, title);
    fputs("</title>\n<style>\n", f);
    fputs(act_report_page_css, f);
    fputs("</style>\n</head>\n<body>\n<div id=\"app\"><noscript>This report draws itself "
          "with JavaScript.</noscript></div>\n", f);
    fputs("<script type=\"application/json\" id=\"actrace-data\">", f);
    fprintf(f, "{\"format\":1,\"actrace_version\":");
    act_cli_report_jstr(f, act_version());
    fputs(",\"input\":", f);
    act_cli_report_jstr(f, input);
    fprintf(f, ",\"directory\":%d,\"chart_library\":", is_dir);
    act_cli_report_jstr(f, lib_from);
    fputs(",\"traces\":[", f);
    for (size_t i = 0; i < nf; i++) {
        if (i)
            fputc(',', f);
        fwrite(tr[i].json, 1, tr[i].jlen, f);
    }
    fputs("]}", f);
    fputs("</script>\n<script>\n/* Chart.js, from ", f);
    put_script(f, lib_from);
    fputs(" (MIT license) */\n", f);
    put_script(f, lib);
    fputs("\n</script>\n<script>\n", f);
    put_script(f, act_report_page_js);
    fputs("\n</script>\n</body>\n</html>\n", f);
    int bad = ferror(f);
    if (fclose(f) != 0 || bad || rename(tmp, path) != 0) {
        fprintf(stderr, "actrace report: cannot write %s: %s\n", path, strerror(errno));
        unlink(tmp);
        rc = 1;
    } else {
        printf("actrace report: wrote %s (%zu trace%s)\n", path, good, good == 1 ? "" : "s");
    }
    free(tmp);
    free(path);
done:
    for (size_t i = 0; i < nf; i++) {
        free(tr[i].json);
        free(tr[i].file);
    }
    free(tr);
    free(files);
    free(lib);
    return rc;
}
