/* SPDX-License-Identifier: MIT */
/*
 * actrace record [-o FILE] [-c CONFIG] [--plugin PATH]... [--no-default-plugins]
 *                [--force] [-v] -- CMD [ARGS]
 *
 * Runs CMD with libactrace preloaded; the library's auto-started session
 * (src/engine/autostart.c) records it and writes FILE when CMD exits. The
 * config is checked here first, and so is FILE (its directory exists and
 * is writable; an existing trace is not replaced without --force), so a
 * mistake is reported before CMD runs.
 * Exit status: CMD's (128+N if it died of signal N); 2 for a usage or
 * config error; 1 if CMD could not be run or no trace was written.
 */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "actrace/actrace.h"
#include "cli.h"

static void record_usage(FILE *f)
{
    fprintf(f, "usage: actrace record [-o FILE] [-c CONFIG] [--plugin PATH]... [--no-default-plugins]\n"
               "                      [--force] [-v] -- CMD [ARGS]\n"
               "  -o FILE         trace to write; %%pid%% is replaced by the program's pid\n"
               "                  (default: the config's ACTIVITIES_LOG_FILE, else\n"
               "                  actrace-%%pid%%.json; a .gz name compresses)\n"
               "  -c CONFIG       config file (Kineto syntax; see docs/config.md)\n"
               "  --plugin PATH   load a plugin: a path, or a bare name from the plugin\n"
               "                  directory (example, host, ...); repeatable. Without\n"
               "                  it, host and every installed backend are loaded\n"
               "  --no-default-plugins  load no plugin unless one is named\n"
               "  -v              verbose: log plugin loads and declines (info level)\n"
               "  --force         replace FILE if it exists (it is never overwritten\n"
               "                  otherwise; devices, FIFOs and /dev/stdout need no --force)\n");
}

/* Checks, before the program runs, that the trace can be written at
 * @p path (shown to the user as @p shown): its directory exists and is
 * writable, it is not a directory, and an existing file is replaced only
 * with @p force. Non-regular targets (devices, FIFOs, /dev/fd/N) are
 * written in place and need no --force. Returns 0, or 2 after printing
 * why. */
static int check_output(const char *path, const char *shown, int force)
{
    struct stat st;
    if (stat(path, &st) == 0) {
        if (S_ISDIR(st.st_mode)) {
            fprintf(stderr, "actrace record: cannot write %s: it is a directory\n", shown);
            return 2;
        }
        if (!S_ISREG(st.st_mode)) {
            if (access(path, W_OK) != 0) {
                fprintf(stderr, "actrace record: cannot write %s: %s\n", shown, strerror(errno));
                return 2;
            }
            return 0;
        }
        if (!force) {
            fprintf(stderr, "actrace record: %s exists; use --force to overwrite it\n", shown);
            return 2;
        }
    } else if (errno != ENOENT) {
        fprintf(stderr, "actrace record: cannot write %s: %s\n", shown, strerror(errno));
        return 2;
    }
    char dir[PATH_MAX * 2 + 40];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash == dir)
        slash[1] = '\0';
    else if (slash)
        *slash = '\0';
    else
        snprintf(dir, sizeof dir, ".");
    if (stat(dir, &st) != 0) {
        fprintf(stderr, "actrace record: cannot write %s: directory %s: %s\n", shown, dir,
                strerror(errno));
        return 2;
    }
    if (!S_ISDIR(st.st_mode)) {
        fprintf(stderr, "actrace record: cannot write %s: %s is not a directory\n", shown, dir);
        return 2;
    }
    if (access(dir, W_OK | X_OK) != 0) {
        fprintf(stderr, "actrace record: cannot write %s: directory %s: %s\n", shown, dir,
                strerror(errno));
        return 2;
    }
    return 0;
}

/* Path of the libactrace.so this program runs with, for LD_PRELOAD. */
static int library_path(char *buf, size_t cap)
{
    Dl_info info;
    if (!dladdr((void *)act_version, &info) || !info.dli_fname)
        return -1;
    if (!realpath(info.dli_fname, buf)) {
        snprintf(buf, cap, "%s", info.dli_fname);
    }
    return 0;
}

static int find_log_file(void *user, const char *key, const char *value)
{
    if (strcmp(key, "ACTIVITIES_LOG_FILE") == 0)
        snprintf(user, PATH_MAX, "%s", value);
    return 0;
}

/* @p pattern with "%pid%" replaced by @p pid. */
static void expand_pid(char *out, size_t cap, const char *pattern, int pid)
{
    const char *at = strstr(pattern, "%pid%");
    if (at)
        snprintf(out, cap, "%.*s%d%s", (int)(at - pattern), pattern, pid, at + 5);
    else
        snprintf(out, cap, "%s", pattern);
}

static int append_env(const char *name, const char *value, char sep)
{
    const char *old = getenv(name);
    if (!old || !*old)
        return setenv(name, value, 1);
    size_t n = strlen(old) + strlen(value) + 2;
    char *v = malloc(n);
    if (!v)
        return -1;
    snprintf(v, n, "%s%c%s", value, sep, old);
    int rc = setenv(name, v, 1);
    free(v);
    return rc;
}

/* The closing line: the file, its size, its events and drops (read from
 * the actraceStats object the writer puts after the events, in the file's
 * last 256 KiB; a gzip file shows its size only) and how to open it. */
static void report_written(const char *path, const char *shown)
{
    struct stat st;
    double mb = stat(path, &st) == 0 ? (double)st.st_size / 1e6 : 0;
    char counts[160] = "";
    FILE *f = fopen(path, "rb");
    if (f && S_ISREG(st.st_mode)) {
        static char buf[256 * 1024 + 1];
        long off = st.st_size > 256 * 1024 ? (long)(st.st_size - 256 * 1024) : 0;
        size_t n = 0;
        if (fseek(f, off, SEEK_SET) == 0)
            n = fread(buf, 1, sizeof buf - 1, f);
        buf[n] = '\0';
        const char *key = "\"actraceStats\":{\"recorded\":";
        char *p = NULL;
        for (char *q = buf; (q = strstr(q, key)) != NULL; q++)
            p = q;
        char *d = p ? strstr(p, ",\"dropped\":") : NULL;
        if (p && d) {
            unsigned long long rec = strtoull(p + strlen(key), NULL, 10);
            unsigned long long drop = strtoull(d + 11, NULL, 10);
            char *ad = strstr(p, "\"args_dropped\":");
            unsigned long long adrop = ad ? strtoull(ad + 15, NULL, 10) : 0;
            if (adrop)
                snprintf(counts, sizeof counts, ", %llu events, %llu dropped, %llu args dropped", rec,
                         drop, adrop);
            else
                snprintf(counts, sizeof counts, ", %llu events, %llu dropped", rec, drop);
        }
    }
    if (f)
        fclose(f);
    fprintf(stderr,
            "actrace record: wrote %s (%.1f MB%s); open it in https://ui.perfetto.dev or "
            "chrome://tracing, or run: actrace summary %s\n",
            shown, mb, counts, shown);
}

int act_cmd_record(int argc, char **argv)
{
    const char *out = NULL, *cfg = NULL;
    int i = 1, force = 0;
    char plugins[8192] = "";
    int no_defaults = 0;
    for (; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--") == 0) {
            i++;
            break;
        } else if (strcmp(a, "-o") == 0 && i + 1 < argc) {
            out = argv[++i];
        } else if (strcmp(a, "-c") == 0 && i + 1 < argc) {
            cfg = argv[++i];
        } else if (strcmp(a, "--plugin") == 0 && i + 1 < argc) {
            const char *p = argv[++i];
            if (strchr(p, ':')) {
                fprintf(stderr, "actrace record: --plugin %s: a path may not contain ':'\n", p);
                return 2;
            }
            size_t used = strlen(plugins);
            if (used + strlen(p) + 2 > sizeof plugins) {
                fprintf(stderr, "actrace record: too many plugins\n");
                return 2;
            }
            snprintf(plugins + used, sizeof plugins - used, "%s%s", used ? ":" : "", p);
        } else if (strcmp(a, "--force") == 0) {
            force = 1;
        } else if (strcmp(a, "--no-default-plugins") == 0) {
            no_defaults = 1;
        } else if (strcmp(a, "-v") == 0) {
            setenv("ACTRACE_LOG", "info", 0);
        } else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            record_usage(stdout);
            return 0;
        } else if (a[0] == '-') {
            fprintf(stderr, "actrace record: unknown option '%s'\n", a);
            record_usage(stderr);
            return 2;
        } else {
            break; /* the command, without "--" */
        }
    }
    if (i >= argc) {
        fprintf(stderr, "actrace record: no command given\n");
        record_usage(stderr);
        return 2;
    }

    char log_file[PATH_MAX] = "";
    if (cfg) {
        act_config *c = NULL;
        act_parse_error err;
        memset(&err, 0, sizeof err);
        if (act_config_parse_file(cfg, NULL, &c, &err) != 0) {
            if (err.line)
                fprintf(stderr, "%s:%d:%d: error: %s\n", cfg, err.line, err.column, err.message);
            else
                fprintf(stderr, "actrace record: %s\n", err.message);
            return 2;
        }
        /* Kineto's ACTIVITIES_LOG_FILE names the output when -o does not. */
        act_config_foreach(c, find_log_file, log_file);
        act_config_destroy(c);
        char abs[PATH_MAX];
        if (!realpath(cfg, abs) || setenv("ACTRACE_CONFIG", abs, 1) != 0) {
            fprintf(stderr, "actrace record: %s: %s\n", cfg, strerror(errno));
            return 2;
        }
    }
    char lib[PATH_MAX];
    if (library_path(lib, sizeof lib) != 0) {
        fprintf(stderr, "actrace record: cannot find libactrace.so to preload\n");
        return 1;
    }
    if (plugins[0] && append_env("ACTRACE_PLUGINS", plugins, ':') != 0)
        return 1;
    /* No plugin named: the library loads host and every installed backend
     * (src/plugin/loader.c), unless the config says DEFAULT_PLUGINS=false. */
    if (setenv("ACTRACE_DEFAULT_PLUGINS", plugins[0] || no_defaults ? "0" : "1", 1) != 0)
        return 1;
    if (append_env("LD_PRELOAD", lib, ':') != 0)
        return 1;

    if (!out)
        out = log_file[0] ? log_file : "actrace-%pid%.json";
    /* The trace must be written where the user said, whatever directory
     * the program changes to. */
    char abs_out[PATH_MAX * 2 + 2];
    if (strlen(out) >= PATH_MAX) {
        fprintf(stderr, "actrace record: -o: path too long\n");
        return 2;
    }
    if (out[0] != '/') {
        char cwd[PATH_MAX];
        if (!getcwd(cwd, sizeof cwd)) {
            fprintf(stderr, "actrace record: getcwd: %s\n", strerror(errno));
            return 1;
        }
        snprintf(abs_out, sizeof abs_out, "%s/%.*s", cwd, PATH_MAX, out);
    } else {
        snprintf(abs_out, sizeof abs_out, "%s", out);
    }
    setenv("ACTRACE_RECORD_OUTPUT", abs_out, 1);
    const char *slash = strrchr(out, '/');
    if (!strstr(out, "%pid%"))
        setenv("ACTRACE_RECORD_NAME", slash ? slash + 1 : out, 1);
    /* The child's pid names the file when the path holds %pid%: stat
     * before and after needs the same name, so block the child until the
     * parent has looked. */
    int gate[2];
    if (pipe(gate) != 0) {
        fprintf(stderr, "actrace record: pipe: %s\n", strerror(errno));
        return 1;
    }
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "actrace record: fork: %s\n", strerror(errno));
        return 1;
    }
    if (pid == 0) {
        char c;
        close(gate[1]);
        while (read(gate[0], &c, 1) < 0 && errno == EINTR) {
        }
        close(gate[0]);
        execvp(argv[i], argv + i);
        fprintf(stderr, "actrace record: cannot run '%s': %s\n", argv[i], strerror(errno));
        _exit(127);
    }
    close(gate[0]);
    char final_out[sizeof abs_out + 32];
    expand_pid(final_out, sizeof final_out, abs_out, (int)pid);
    char shown[PATH_MAX + 32];
    expand_pid(shown, sizeof shown, out, (int)pid);
    /* The output is checked before the program runs (it waits at the
     * gate): a typo must not cost an hours-long run. */
    int orc = check_output(final_out, shown, force);
    if (orc != 0) {
        kill(pid, SIGKILL);
        close(gate[1]);
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {
        }
        return orc;
    }
    struct stat before;
    int existed = stat(final_out, &before) == 0;
    /* A device or FIFO is written in place and may show no change. */
    int special = existed && !S_ISREG(before.st_mode);
    close(gate[1]); /* let the child run */
    /* Ctrl-C reaches the whole foreground group: let the program handle it
     * (its trace is written by its own handler) and report its status. */
    signal(SIGINT, SIG_IGN);
    signal(SIGTERM, SIG_IGN);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) {
            fprintf(stderr, "actrace record: waitpid: %s\n", strerror(errno));
            return 1;
        }
    }
    int rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
        return 127;
    struct stat after;
    if (special) {
        fprintf(stderr, "actrace record: wrote %s\n", shown);
        return rc;
    }
    if (stat(final_out, &after) != 0 ||
        (existed && after.st_mtim.tv_sec == before.st_mtim.tv_sec &&
         after.st_mtim.tv_nsec == before.st_mtim.tv_nsec && after.st_ino == before.st_ino)) {
        if (WIFSIGNALED(status))
            fprintf(stderr, "actrace record: no trace written: '%s' was killed by signal %d\n",
                    argv[i], WTERMSIG(status));
        else
            fprintf(stderr, "actrace record: no trace written to %s\n", shown);
        return rc ? rc : 1;
    }
    report_written(final_out, shown);
    return rc;
}
