/* SPDX-License-Identifier: MIT */
/*
 * actrace record [-o FILE] [-c CONFIG] [--plugin PATH]... [--no-default-plugins]
 *                [--force] [-v] -- CMD [ARGS]
 *
 * Runs CMD with libactrace preloaded; the library's auto-started session
 * (src/session/autostart.c) records it and writes FILE when CMD exits. The
 * config is checked here first, and so is FILE (its directory exists and
 * is writable; an existing trace is not replaced without --force), so a
 * mistake is reported before CMD runs.
 * Exit status: CMD's (128+N if it died of signal N), whether or not a
 * trace was written; 127 if CMD could not be run; 2 for a usage or config
 * error; 1 if the merged trace could not be written and CMD exited 0.
 */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "actrace/actrace.h"
#include "check_pftrace.h"
#include "cli.h"
#include "engine/spool.h"
#include "record_light.h"
#include "record_merge.h"
#include "session/rebuild.h"

static void record_usage(FILE *f)
{
    fprintf(f, "usage: actrace record [-o FILE | --per-process DIR] [-c CONFIG] [--plugin PATH]...\n"
               "                      [--no-default-plugins] [--no-python-ops] [--force] [-v]\n"
               "                      -- CMD [ARGS]\n"
               "  -o FILE         trace to write; %%pid%% is replaced by the program's pid\n"
               "                  (default: the config's ACTIVITIES_LOG_FILE, else\n"
               "                  actrace-%%pid%%.json; a .gz name compresses)\n"
               "  --per-process DIR  one trace per process instead of one merged trace:\n"
               "                  DIR/rank-R_<pid>.pt.trace.json, R its rank (what HTA\n"
               "                  and TensorBoard's torch-tb-profiler read);\n"
               "                  -o DIR/ (a trailing '/') does the same\n"
               "  -c CONFIG       config file (Kineto syntax; see docs/config.md)\n"
               "  --plugin PATH   load a plugin: a path, or a bare name from the plugin\n"
               "                  directory (example, host, ...); repeatable. Without\n"
               "                  it, host and every installed backend are loaded\n"
               "  --no-default-plugins  load no plugin unless one is named\n"
               "  --no-python-ops  do not record PyTorch's aten ops and record_function\n"
               "                  regions in Python processes that import torch (on by\n"
               "                  default when the actrace package is importable there)\n"
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

/*
 * PyTorch ops with no change to the program: a sitecustomize.py that
 * record puts first on PYTHONPATH. A Python process that starts (any,
 * at any depth below record) runs it at startup; it takes itself off
 * sys.path, runs the sitecustomize it hides (if any), and, when the
 * actrace package is on that Python's path, runs its _autotorch.py (by
 * file: the package itself is imported only with torch), whose import
 * hook acts once `torch` is imported, its aten ops
 * and record_function regions are recorded (actrace.torch.record_ops()).
 * The folder is private (0700, mkdtemp) and removed when record ends.
 */
static const char py_hook_src[] =
    "# Written by `actrace record` (turn off with --no-python-ops).\n"
    "def _actrace_record_hook():\n"
    "    import os, sys\n"
    "    try:  # already loaded by CPython; importlib.machinery costs 2 ms\n"
    "        from _frozen_importlib_external import PathFinder, SourceFileLoader\n"
    "    except ImportError:\n"
    "        from importlib.machinery import PathFinder, SourceFileLoader\n"
    "    here = os.path.dirname(os.path.abspath(__file__))\n"
    "    sys.path[:] = [p for p in sys.path if os.path.abspath(p or '.') != here]\n"
    "    mine = sys.modules.pop('sitecustomize', None)\n"
    "    try:\n"
    "        if PathFinder.find_spec('sitecustomize') is not None:\n"
    "            import sitecustomize\n"
    "    except Exception as e:\n"
    "        sys.stderr.write('Error in sitecustomize: %r\\n' % (e,))\n"
    "    sys.modules.setdefault('sitecustomize', mine)\n"
    /* The hook's file, not the package: a process that never imports
     * torch never imports actrace either (nor importlib.util, 12 ms). */
    "    try:\n"
    "        spec = PathFinder.find_spec('actrace')\n"
    "        if spec is None or not spec.submodule_search_locations:\n"
    "            return\n"
    "        f = os.path.join(list(spec.submodule_search_locations)[0], '_autotorch.py')\n"
    "        m = type(sys)('_actrace_autotorch')\n"
    "        m.__file__ = f\n"
    "        SourceFileLoader(m.__name__, f).exec_module(m)\n"  /* its .pyc when cached */
    "    except Exception:\n"
    "        return\n"
    "    m.install()\n"
    "_actrace_record_hook()\n"
    "del _actrace_record_hook\n";

static char rec_py_dir[PATH_MAX];

static void py_hook_remove(void)
{
    if (!rec_py_dir[0])
        return;
    char p[PATH_MAX + 64];
    snprintf(p, sizeof p, "%s/__pycache__", rec_py_dir);
    DIR *d = opendir(p);
    if (d) {
        struct dirent *de;
        while ((de = readdir(d))) {
            if (de->d_name[0] == '.')
                continue;
            char f[PATH_MAX + 400];
            snprintf(f, sizeof f, "%s/%s", p, de->d_name);
            unlink(f);
        }
        closedir(d);
        rmdir(p);
    }
    snprintf(p, sizeof p, "%s/sitecustomize.py", rec_py_dir);
    unlink(p);
    rmdir(rec_py_dir);
    rec_py_dir[0] = '\0';
}

/* Makes the hook's folder and puts it first on PYTHONPATH. A failure
 * costs only the Python ops (said once). */
static void py_hook_install(const char *tmpd)
{
    snprintf(rec_py_dir, sizeof rec_py_dir, "%s/actrace-py-XXXXXX", tmpd);
    if (!mkdtemp(rec_py_dir)) {
        fprintf(stderr, "actrace record: cannot create %s (%s): PyTorch ops are not recorded\n",
                rec_py_dir, strerror(errno));
        rec_py_dir[0] = '\0';
        return;
    }
    char abs[PATH_MAX];
    if (rec_py_dir[0] != '/' && realpath(rec_py_dir, abs))
        snprintf(rec_py_dir, sizeof rec_py_dir, "%s", abs);
    char p[PATH_MAX + 64];
    snprintf(p, sizeof p, "%s/sitecustomize.py", rec_py_dir);
    int fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0 || write(fd, py_hook_src, sizeof py_hook_src - 1) != (ssize_t)(sizeof py_hook_src - 1) ||
        close(fd) != 0 || append_env("PYTHONPATH", rec_py_dir, ':') != 0) {
        fprintf(stderr, "actrace record: cannot write %s (%s): PyTorch ops are not recorded\n",
                p, strerror(errno));
        py_hook_remove();
    }
}

/* 1 if the process that named file @p name ("<pid>-...") still runs. */
static int file_live(const char *name)
{
    long pid = strtol(name, NULL, 10);
    return pid > 0 && (kill((pid_t)pid, 0) == 0 || errno == EPERM);
}

/* Removes @p dir and the files in it (no subdirectories are made there),
 * but for the spools of processes that still run: they use the directory
 * (through a descriptor; autostart.c), so it is left to them, in place,
 * and said so. A directory removed under them would make them stop
 * recording; one re-created at the path by someone else is never used. */
static act__light_set rec_light; /* the light log's processes, once the program ended */

static void remove_dir(const char *dir)
{
    DIR *d = opendir(dir);
    int kept = 0;
    if (d) {
        struct dirent *de;
        while ((de = readdir(d))) {
            if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                continue;
            size_t l = strlen(de->d_name);
            int spool = (l > 5 && strcmp(de->d_name + l - 5, ".meta") == 0) ||
                        (l > 6 && strcmp(de->d_name + l - 6, ".spool") == 0);
            if ((spool && file_live(de->d_name)) ||
                (strcmp(de->d_name, ACT__LIGHT_LOG) == 0 && act__light_live(&rec_light))) {
                kept++;
                continue;
            }
            char p[PATH_MAX + 300];
            snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
            unlink(p);
        }
        closedir(d);
    }
    if (kept)
        fprintf(stderr, "actrace record: processes still running use %s: left in place for "
                "them (remove it once they end)\n", dir);
    else
        rmdir(dir);
}

/* A sanitizer runtime must come first in LD_PRELOAD. When the program
 * (looked up on PATH) names libasan/libtsan/... in its dynamic section,
 * its soname goes before libactrace. Found by scanning the file's bytes
 * for the soname (the dynamic string table holds it), no readelf. */
static void sanitizer_first(const char *prog, const char *lib)
{
    char path[PATH_MAX];
    if (strchr(prog, '/')) {
        snprintf(path, sizeof path, "%s", prog);
    } else {
        const char *pathenv = getenv("PATH");
        path[0] = '\0';
        while (pathenv && *pathenv) {
            const char *c = strchr(pathenv, ':');
            size_t l = c ? (size_t)(c - pathenv) : strlen(pathenv);
            snprintf(path, sizeof path, "%.*s/%s", (int)l, pathenv, prog);
            if (access(path, X_OK) == 0)
                break;
            path[0] = '\0';
            pathenv = c ? c + 1 : NULL;
        }
    }
    int fd = path[0] ? open(path, O_RDONLY | O_CLOEXEC) : -1;
    if (fd < 0)
        return;
    static const char *const rts[] = {"libasan.so.", "libtsan.so.", "libhwasan.so.", "libubsan.so.",
                                      NULL};
    char buf[65536 + 32];
    size_t keep = 0;
    char found[64] = "";
    ssize_t n;
    unsigned char magic[4] = {0};
    int first = 1;
    while (!found[0] && (n = read(fd, buf + keep, sizeof buf - 32 - keep)) > 0) {
        if (first) {
            memcpy(magic, buf, n >= 4 ? 4 : (size_t)n);
            if (memcmp(magic, "\177ELF", 4) != 0)
                break; /* a script: its interpreter is not sanitized */
            first = 0;
        }
        size_t len = keep + (size_t)n;
        for (size_t r = 0; rts[r] && !found[0]; r++) {
            size_t rl = strlen(rts[r]);
            /* memmem: a byte-by-byte memcmp over a 1 MB shell costs more
             * than all of record's work for a short command. */
            for (const char *hit = memmem(buf, len, rts[r], rl); hit;
                 hit = memmem(hit + 1, len - (size_t)(hit + 1 - buf), rts[r], rl)) {
                size_t k = (size_t)(hit - buf);
                if (k + rl + 2 > len)
                    break;
                size_t e = k + rl;
                while (e < len && e - k < sizeof found - 1 && buf[e] >= '0' && buf[e] <= '9')
                    e++;
                if (e > k + rl && e < len && buf[e] == '\0') {
                    memcpy(found, buf + k, e - k);
                    found[e - k] = '\0';
                    break;
                }
            }
        }
        keep = len > 32 ? 32 : len;
        memmove(buf, buf + len - keep, keep);
    }
    close(fd);
    if (!found[0])
        return;
    const char *pre = getenv("LD_PRELOAD");
    if (pre && strstr(pre, found) == pre)
        return;
    /* LD_PRELOAD is "lib[:old]": rebuild it as "runtime:lib[:old]". */
    size_t nl = strlen(found) + (pre ? strlen(pre) : 0) + 2;
    char *v = malloc(nl);
    if (!v)
        return;
    snprintf(v, nl, "%s:%s", found, pre ? pre : lib);
    setenv("LD_PRELOAD", v, 1);
    free(v);
    if (getenv("ACTRACE_LOG"))
        fprintf(stderr, "actrace record: %s uses %s: preloading it first\n", prog, found);
}

/* --per-process DIR (absolute), or NULL for one merged trace; --force. */
static const char *rec_per_dir;
static int rec_force;

/* Makes @p dir (one level) if absent and checks that it is a writable
 * directory; its absolute path into @p abs. Returns 0, or 2 after saying
 * why. */
static int per_process_dir(const char *dir, char *abs, size_t cap)
{
    struct stat st;
    if (stat(dir, &st) != 0 && (errno != ENOENT || mkdir(dir, 0777) != 0 || stat(dir, &st) != 0)) {
        fprintf(stderr, "actrace record: --per-process %s: %s\n", dir, strerror(errno));
        return 2;
    }
    if (!S_ISDIR(st.st_mode)) {
        fprintf(stderr, "actrace record: --per-process %s: not a directory\n", dir);
        return 2;
    }
    if (access(dir, W_OK | X_OK) != 0 || !realpath(dir, abs) || strlen(abs) >= cap) {
        fprintf(stderr, "actrace record: --per-process %s: %s\n", dir, strerror(errno));
        return 2;
    }
    return 0;
}

static volatile sig_atomic_t rec_signals;
static volatile pid_t rec_child;

/* record's own SIGINT/SIGTERM/SIGHUP: a signal sent to record alone (kill,
 * timeout) is passed to the program; a terminal's Ctrl-C already reached
 * the whole group. record itself keeps going and merges what is there. */
static void rec_on_signal(int sig, siginfo_t *si, void *uc)
{
    (void)uc;
    rec_signals++;
    if (si && (si->si_code == SI_USER || si->si_code == SI_QUEUE) && rec_child > 0 &&
        si->si_pid != rec_child) {
        int e = errno;
        kill(rec_child, sig);
        errno = e;
    }
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static size_t count_json(const char *dir)
{
    size_t n = 0;
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        size_t l = strlen(de->d_name);
        if (l > 5 && strcmp(de->d_name + l - 5, ".json") == 0)
            n++;
    }
    closedir(d);
    return n;
}

static int is_light(const char *base);

/* The per-process traces in @p dir and the light logs the merge reads
 * (no trace and no BASE.spool beside them). */
static size_t count_traces(const char *dir)
{
    size_t n = count_json(dir);
    DIR *d = opendir(dir);
    if (!d)
        return n;
    struct dirent *de;
    while ((de = readdir(d))) {
        size_t l = strlen(de->d_name);
        char p[PATH_MAX + 8];
        struct stat st;
        if (l <= 5 || strcmp(de->d_name + l - 5, ".meta") != 0 ||
            (size_t)snprintf(p, sizeof p, "%s/%.*s.json", dir, (int)(l - 5), de->d_name) >= sizeof p ||
            stat(p, &st) == 0)
            continue;
        p[strlen(p) - 5] = '\0';
        if (is_light(p))
            n++;
    }
    closedir(d);
    for (size_t i = 0; i < rec_light.n; i++)
        n += !rec_light.v[i].dropped;
    return n;
}

/* The processes' files in record's directory, as (pid, ns) of each
 * "<pid>-<ns>.json" or ".meta", sorted: read once, so that finding
 * whether an image exec'd costs a binary search, not a directory scan per
 * process (thousands of processes in a build). */
typedef struct img {
    long long pid, ns, start; /* start: the process's identity (act__proc_id), 0 if unknown */
} img;

/* A file name's "<pid>-<ns>-<identity>" (autostart.c, auto_dir_path). */
static img img_of(const char *name)
{
    img m = {strtoll(name, NULL, 10), 0, 0};
    const char *dd = strchr(name, '-');
    if (dd) {
        char *end;
        m.ns = strtoll(dd + 1, &end, 10);
        if (*end == '-')
            m.start = strtoll(end + 1, NULL, 10);
    }
    return m;
}

static int img_cmp(const void *a, const void *b)
{
    const img *x = a, *y = b;
    if (x->pid != y->pid)
        return x->pid < y->pid ? -1 : 1;
    return x->ns < y->ns ? -1 : x->ns > y->ns;
}

/* Appends the image named @p name to *@p v: 0 when out of memory. */
static int img_add(img **v, size_t *n, size_t *cap, const char *name)
{
    if (*n == *cap) {
        size_t nc = *cap ? *cap * 2 : 256;
        img *nv = realloc(*v, nc * sizeof *nv);
        if (!nv)
            return 0;
        *v = nv;
        *cap = nc;
    }
    (*v)[(*n)++] = img_of(name);
    return 1;
}

static img *images_read(const char *dir, size_t *n)
{
    *n = 0;
    DIR *d = opendir(dir);
    if (!d)
        return NULL;
    img *v = NULL;
    size_t cap = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        const char *dd = strchr(de->d_name, '-');
        if (!dd || !(strstr(de->d_name, ".json") || strstr(de->d_name, ".meta")))
            continue;
        if (!img_add(&v, n, &cap, de->d_name))
            break;
    }
    closedir(d);
    for (size_t i = 0; i < rec_light.n; i++)
        if (!img_add(&v, n, &cap, rec_light.v[i].base))
            break;
    if (*n > 1)
        qsort(v, *n, sizeof *v, img_cmp);
    return v;
}

/* 1 if process NAME ("<pid>-<ns>-<start>.meta") exec'd: a later image of
 * the same process (same pid and identity: a pid the kernel gave to
 * another process since has another) left a trace or a spool of its
 * own. */
static int exec_d(const img *v, size_t n, const char *name)
{
    img key = img_of(name);
    size_t lo = 0, hi = n;
    while (lo < hi) { /* the first entry after key */
        size_t mid = lo + (hi - lo) / 2;
        if (img_cmp(&v[mid], &key) <= 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (; lo < n && v[lo].pid == key.pid; lo++)
        if (v[lo].start == key.start || !v[lo].start || !key.start)
            return 1;
    return 0;
}

/* Rebuild the trace of every process that left a spool and no trace
 * (_exit, abort, a crash, SIGKILL, exec; spool.h). Each rebuild runs in a
 * child process of its own: a spool a program scribbled over can crash
 * it without taking record down, and the dead process's names and thread
 * names never mix with another's. Returns how many were rebuilt. */
static size_t rebuild_pass(const char *dir, int light, const img *v, size_t nv);

static void drop_exec_d_light(const char *dir, const img *v, size_t nv);

/* @p light_direct: the merge reads the light logs itself (record_merge.c),
 * so only those of images that exec'd (nothing to show) are removed here;
 * otherwise (--per-process, which moves traces) they are rebuilt too. */
static size_t rebuild_spools(const char *dir, int light_direct)
{
    /* Light logs (no BASE.spool: processes that recorded nothing, lazy
     * start) are ours alone to read, so one child turns them all into
     * traces; each full spool gets a child of its own. */
    size_t nv;
    img *v = images_read(dir, &nv);
    size_t n = 0;
    if (light_direct)
        drop_exec_d_light(dir, v, nv);
    else
        n = rebuild_pass(dir, 1, v, nv);
    n += rebuild_pass(dir, 0, v, nv);
    free(v);
    return n;
}

/* 1 if BASE.spool is absent (a light log), for @p base a path. */
static int is_light(const char *base)
{
    char p[PATH_MAX + 8];
    snprintf(p, sizeof p, "%s.spool", base);
    struct stat st;
    return lstat(p, &st) != 0 && errno == ENOENT;
}

/* The light logs (no trace, no BASE.spool) of images that exec'd: a later
 * image of the process shows it, this one recorded nothing. Removed, so
 * that the merge does not list the process twice. */
static void drop_exec_d_light(const char *dir, const img *v, size_t nv)
{
    for (size_t i = 0; i < rec_light.n; i++)
        if (exec_d(v, nv, rec_light.v[i].base))
            rec_light.v[i].dropped = 1;
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *de;
    while ((de = readdir(d))) {
        size_t len = strlen(de->d_name);
        char base[PATH_MAX], p[PATH_MAX + 8];
        if (len <= 5 || strcmp(de->d_name + len - 5, ".meta") != 0 ||
            !exec_d(v, nv, de->d_name) ||
            (size_t)snprintf(base, sizeof base, "%s/%.*s", dir, (int)(len - 5), de->d_name) >=
                sizeof base)
            continue;
        struct stat st;
        snprintf(p, sizeof p, "%s.json", base);
        if (stat(p, &st) == 0 || !is_light(base))
            continue;
        snprintf(p, sizeof p, "%s.meta", base);
        unlink(p);
    }
    closedir(d);
}

static size_t rebuild_pass(const char *dir, int light, const img *v, size_t nv)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    size_t n = 0;
    pid_t batch = -1; /* the child that rebuilds the light logs */
    int bpipe[2] = {-1, -1};
    if (light) {
        fflush(stderr);
        if (pipe(bpipe) != 0) {
            closedir(d);
            return 0;
        }
        batch = fork();
        if (batch < 0) {
            close(bpipe[0]);
            close(bpipe[1]);
            closedir(d);
            return 0;
        }
        if (batch > 0) {
            /* The parent counts what the child rebuilt. */
            close(bpipe[1]);
            closedir(d);
            char buf[64];
            ssize_t r = read(bpipe[0], buf, sizeof buf - 1);
            close(bpipe[0]);
            int st2 = 0;
            waitpid(batch, &st2, 0);
            if (WIFSIGNALED(st2))
                fprintf(stderr, "actrace record: rebuilding the traces of processes that "
                        "recorded nothing died of signal %d\n", WTERMSIG(st2));
            buf[r > 0 ? r : 0] = '\0';
            return (size_t)strtoull(buf, NULL, 10);
        }
        close(bpipe[0]);
        unsetenv("ACTRACE_PLUGINS");
        unsetenv("ACTRACE_DEFAULT_PLUGINS");
        unsetenv("ACTRACE_CONFIG");
    }
    struct dirent *de;
    while ((de = readdir(d))) {
        size_t len = strlen(de->d_name);
        if (len <= 5 || strcmp(de->d_name + len - 5, ".meta") != 0)
            continue;
        char base[PATH_MAX], out[PATH_MAX + 8];
        if (strlen(dir) + len + 2 > sizeof base)
            continue;
        memcpy(base, dir, strlen(dir));
        base[strlen(dir)] = '/';
        memcpy(base + strlen(dir) + 1, de->d_name, len - 5);
        base[strlen(dir) + 1 + len - 5] = '\0';
        snprintf(out, sizeof out, "%s.json", base);
        struct stat st;
        if (stat(out, &st) == 0)
            continue; /* written by the process itself */
        if (is_light(base) != light)
            continue;
        if (light) {
            char err[PATH_MAX * 2];
            int rc = act__spool_rebuild(base, out, exec_d(v, nv, de->d_name) ? ACT__SPOOL_SKIP_EMPTY : 0,
                                        err, sizeof err);
            if (rc == 0)
                n++;
            else if (rc < 0)
                fprintf(stderr, "actrace record: cannot rebuild the trace of pid %.*s from its "
                        "log: %s\n", (int)strcspn(de->d_name, "-"), de->d_name, err);
            continue;
        }
        fflush(stderr);
        pid_t c = fork();
        if (c == 0) {
            /* Nothing of the user's configuration applies to a rebuild. */
            unsetenv("ACTRACE_PLUGINS");
            unsetenv("ACTRACE_DEFAULT_PLUGINS");
            unsetenv("ACTRACE_CONFIG");
            char err[PATH_MAX * 2];
            int rc = act__spool_rebuild(base, out, exec_d(v, nv, de->d_name) ? ACT__SPOOL_SKIP_EMPTY : 0,
                                        err, sizeof err);
            if (rc == 1)
                _exit(3); /* nothing to show (an image that exec'd at once) */
            if (rc != 0)
                fprintf(stderr, "actrace record: cannot rebuild the trace of pid %.*s from its "
                        "spool: %s\n", (int)strcspn(de->d_name, "-"), de->d_name, err);
            _exit(rc ? 1 : 0);
        }
        int st2 = 0;
        if (c < 0 || waitpid(c, &st2, 0) != c)
            continue;
        if (WIFEXITED(st2) && WEXITSTATUS(st2) == 0)
            n++;
        else if (WIFSIGNALED(st2))
            fprintf(stderr, "actrace record: cannot rebuild the trace of pid %.*s from its "
                    "spool: the rebuild died of signal %d\n", (int)strcspn(de->d_name, "-"),
                    de->d_name, WTERMSIG(st2));
    }
    closedir(d);
    if (light) {
        dprintf(bpipe[1], "%zu", n);
        _exit(0);
    }
    return n;
}

/* Pids of our children still running (orphans reparented to us). */
static void report_running(void)
{
    DIR *d = opendir("/proc");
    if (!d)
        return;
    struct dirent *de;
    char list[1024] = "";
    size_t used = 0;
    while ((de = readdir(d))) {
        if (de->d_name[0] < '0' || de->d_name[0] > '9')
            continue;
        char p[300], b[512];
        snprintf(p, sizeof p, "/proc/%s/stat", de->d_name);
        int fd = open(p, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            continue;
        ssize_t n = read(fd, b, sizeof b - 1);
        close(fd);
        if (n <= 0)
            continue;
        b[n] = '\0';
        const char *rp = strrchr(b, ')');
        char state;
        int ppid;
        if (!rp || sscanf(rp + 1, " %c %d", &state, &ppid) != 2 || ppid != (int)getpid() ||
            state == 'Z')
            continue;
        if (used + strlen(de->d_name) + 3 < sizeof list)
            used += (size_t)snprintf(list + used, sizeof list - used, "%s%s", used ? ", " : "",
                                     de->d_name);
    }
    closedir(d);
    if (used)
        fprintf(stderr,
                "actrace record: still running after the program ended: pid %s (what it had "
                "recorded by now is in the trace)\n",
                list);
}

static void fmt_count(char *out, size_t cap, uint64_t v)
{
    char raw[32];
    int n = snprintf(raw, sizeof raw, "%llu", (unsigned long long)v);
    size_t o = 0;
    for (int k = 0; k < n && o + 2 < cap; k++) {
        if (k && (n - k) % 3 == 0)
            out[o++] = ',';
        out[o++] = raw[k];
    }
    out[o] = '\0';
}

/* Waits for the program and its descendants (up to the grace period after
 * the program's end), merges the per-process traces into @p final_out,
 * removes @p spool and prints the result. Returns record's exit status. */
static int record_wait(pid_t pid, const char *prog, const char *spool, const char *final_out,
                       const char *shown, int special, const struct stat *before)
{
    rec_child = pid;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = rec_on_signal;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    double grace = 2.0;
    const char *g = getenv("ACTRACE_RECORD_GRACE_MS");
    if (g && *g)
        grace = strtod(g, NULL) / 1000.0;
    int tty = isatty(2);
    double t0 = now_s(), last_status = 0, deadline = 0;
    int status = 0, main_done = 0, shown_status = 0;
    /* SIGCHLD is blocked while we wait and taken with sigtimedwait: a
     * child that ends between waitpid and the wait leaves it pending, so
     * the wait returns at once. A fixed nap here (20 ms) cost every
     * record run up to that much after its last process ended. */
    sigset_t chld, old_mask;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    sigprocmask(SIG_BLOCK, &chld, &old_mask);
    for (;;) {
        int st;
        pid_t w = waitpid(-1, &st, WNOHANG);
        if (w == pid) {
            status = st;
            main_done = 1;
            rec_child = 0;
            deadline = now_s() + grace;
            continue;
        }
        if (w > 0)
            continue;
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0) /* ECHILD: no descendant left */
            break;
        if (main_done && now_s() >= deadline)
            break;
        double t = now_s();
        if (tty && t - last_status >= 0.5) {
            fprintf(stderr, "\ractrace record: %.1f s, %zu process trace(s) written\033[K",
                    t - t0, count_json(spool));
            shown_status = 1;
            last_status = t;
        }
        /* Until a child changes state, the next status line or the end
         * of the grace period; at most 1 s, in case SIGCHLD is ignored
         * (then the kernel reaps, and waitpid says ECHILD). */
        double until = t + 1.0;
        if (tty && last_status + 0.5 < until)
            until = last_status + 0.5;
        if (main_done && deadline < until)
            until = deadline;
        double left = until - t;
        if (left < 0.001)
            left = 0.001;
        struct timespec nap = {(time_t)left, (long)((left - (double)(time_t)left) * 1e9)};
        sigtimedwait(&chld, NULL, &nap);
    }
    sigprocmask(SIG_SETMASK, &old_mask, NULL);
    if (shown_status)
        fprintf(stderr, "\r\033[K");
    if (main_done)
        report_running();
    int rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    act__light_load(spool, &rec_light);
    if (rec_per_dir) {
        /* --per-process rebuilds each light log to a trace of its own. */
        act__light_write_logs(spool, &rec_light);
        act__light_free(&rec_light);
    }
    size_t rebuilt = rebuild_spools(spool, !rec_per_dir);
    if (main_done && WIFEXITED(status) && WEXITSTATUS(status) == 127 && !count_traces(spool)) {
        remove_dir(spool);
        return 127;
    }
    if (!count_traces(spool)) {
        remove_dir(spool);
        if (main_done && WIFSIGNALED(status))
            fprintf(stderr, "actrace record: no trace written: '%s' was killed by signal %d\n",
                    prog, WTERMSIG(status));
        else
            fprintf(stderr, "actrace record: no trace written to %s (no process loaded "
                    "libactrace)\n", shown);
        return rc;
    }
    /* Written as the library writes a trace (src/writer/out_sink.c): a
     * temporary file renamed over the output, mode and owner kept, devices
     * and FIFOs in place, gzip for ".gz". */
    const char *base = strrchr(shown, '/');
    act__merge_result res;
    char err[PATH_MAX * 3];
    /* A Perfetto name: merge to JSON beside the per-process traces, then
     * convert that (the code path of `actrace convert`, streaming). */
    if (rec_per_dir) {
        int src = act__record_split(spool, rec_per_dir, rec_force, &res, err, sizeof err);
        if (src != 0)
            fprintf(stderr, "actrace record: cannot move a process's trace: %s\n", err);
        remove_dir(spool);
        fprintf(stderr, "actrace record: wrote %zu process trace%s to %s (rank-R_<pid>.pt.trace.json, %llu "
                "events, %llu dropped); `actrace merge` joins them\n", res.files,
                res.files == 1 ? "" : "s", rec_per_dir, (unsigned long long)res.events,
                (unsigned long long)res.dropped);
        return src != 0 && !rc ? 1 : rc;
    }
    int pf = act_cli_is_pftrace(final_out);
    char tmpjson[PATH_MAX + 32];
    snprintf(tmpjson, sizeof tmpjson, "%s/merged.tmp", spool);
    int mrc = act__record_merge(spool, &rec_light, pf ? tmpjson : final_out,
                                base ? base + 1 : shown, &res, err, sizeof err);
    if (mrc == 0 && pf && act_cli_convert(tmpjson, final_out) != 0) {
        snprintf(err, sizeof err, "converting the merged trace to %s failed", shown);
        mrc = -1;
    }
    if (mrc != 0) {
        fprintf(stderr, "actrace record: cannot write the trace: %s\n", err);
        remove_dir(spool);
        return rc ? rc : 1;
    }
    remove_dir(spool);
    struct stat after;
    double mb = stat(final_out, &after) == 0 && S_ISREG(after.st_mode) ? after.st_size / 1e6 : 0;
    char ev[40], dr[40];
    fmt_count(ev, sizeof ev, res.events);
    fmt_count(dr, sizeof dr, res.dropped);
    char rb[96] = "";
    rebuilt += res.light_recovered;
    if (rebuilt)
        snprintf(rb, sizeof rb, ", %zu rebuilt after an abnormal end", rebuilt);
    fprintf(stderr,
            "actrace record: wrote %s (%.1f MB, %s events, %s dropped, %zu process%s%s); open it "
            "in https://ui.perfetto.dev or `actrace %s %s`\n",
            shown, mb, ev, dr, res.files, res.files == 1 ? "" : "es", rb, pf ? "check" : "summary",
            shown);
    return rc;
}

int act_cmd_record(int argc, char **argv)
{
    const char *out = NULL, *cfg = NULL;
    int i = 1, force = 0;
    char plugins[8192] = "";
    int no_defaults = 0, python_ops = 1;
    for (; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--") == 0) {
            i++;
            break;
        } else if (strcmp(a, "-o") == 0 && i + 1 < argc) {
            out = argv[++i];
        } else if (strcmp(a, "--per-process") == 0 && i + 1 < argc) {
            rec_per_dir = argv[++i];
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
        } else if (strcmp(a, "--no-python-ops") == 0) {
            python_ops = 0;
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
        /* Quiet about keys no built-in knows: each traced process's
         * session warns for those none of its loaded plugins reads. */
        act_config_parse_opts po;
        act_config_parse_opts_init(&po);
        po.flags = ACT_CONFIG_QUIET_UNKNOWN;
        if (act_config_parse_file(cfg, &po, &c, &err) != 0) {
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

    static char per_abs[PATH_MAX];
    if (!rec_per_dir && out && *out && out[strlen(out) - 1] == '/')
        rec_per_dir = out;
    if (rec_per_dir) {
        int prc = per_process_dir(rec_per_dir, per_abs, sizeof per_abs);
        if (prc != 0)
            return prc;
        rec_per_dir = per_abs;
        rec_force = force;
        out = NULL;
    }
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
    const char *slash = strrchr(out, '/');
    if (!strstr(out, "%pid%"))
        setenv("ACTRACE_RECORD_NAME", slash ? slash + 1 : out, 1);
    unsetenv("ACTRACE_RECORD_OUTPUT");
    /* Every recorded process writes its own trace into this private
     * directory (0700); they are merged into the output at the end. */
    const char *tmpd = getenv("TMPDIR");
    char spool[PATH_MAX];
    snprintf(spool, sizeof spool, "%s/actrace-record-XXXXXX", tmpd && *tmpd ? tmpd : "/tmp");
    if (!mkdtemp(spool)) {
        snprintf(spool, sizeof spool, "/tmp/actrace-record-XXXXXX");
        if (!mkdtemp(spool)) {
            fprintf(stderr, "actrace record: cannot create a directory in /tmp: %s\n",
                    strerror(errno));
            return 1;
        }
    }
    /* Absolute: the library refuses a relative one (a process that starts
     * in, or changes to, another directory would look elsewhere). */
    char spool_abs[PATH_MAX];
    if (spool[0] != '/') {
        if (!realpath(spool, spool_abs)) {
            fprintf(stderr, "actrace record: %s: %s\n", spool, strerror(errno));
            rmdir(spool);
            return 1;
        }
        snprintf(spool, sizeof spool, "%s", spool_abs);
    }
    /* The light log every process that records nothing appends to
     * (record_light.h); without it they fall back to a file each. */
    if (act__light_create(spool) != 0)
        fprintf(stderr, "actrace record: cannot create %s/%s: %s\n", spool, ACT__LIGHT_LOG,
                strerror(errno));
    setenv("ACTRACE_RECORD_DIR", spool, 1);
    /* Read by actrace._autotorch (also under an outer record's hook). */
    setenv("ACTRACE_PYTHON_OPS", python_ops ? "1" : "0", 1);
    if (python_ops)
        py_hook_install(tmpd && *tmpd ? tmpd : "/tmp");
    /* This record checks the plugins anew, and decides anew whether every
     * process starts at load (autostart.c, loader.c): nothing of an outer
     * record's. */
    unsetenv("ACTRACE_PLUGINS_CHECKED");
    unsetenv("ACTRACE_RECORD_EAGER");
    unsetenv("ACTRACE_RECORD_HOST");
    /* The program's parent is this process: its descendants know they are
     * descendants (a smaller buffer pre-allocation, autostart.c). */
    char self[24];
    snprintf(self, sizeof self, "%ld", (long)getpid());
    setenv("ACTRACE_RECORD_PARENT", self, 1);
    sanitizer_first(argv[i], lib);
    /* Orphaned grandchildren (daemons) come back to us, so waitpid(-1)
     * sees every descendant. */
    prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    /* The child's pid names the file when the path holds %pid%: stat
     * before and after needs the same name, so block the child until the
     * parent has looked. */
    int gate[2];
    if (pipe(gate) != 0) {
        fprintf(stderr, "actrace record: pipe: %s\n", strerror(errno));
        remove_dir(spool);
        py_hook_remove();
        return 1;
    }
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "actrace record: fork: %s\n", strerror(errno));
        py_hook_remove();
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
    /* record's own writes (the merged trace) under a file-size limit fail
     * with EFBIG and are reported, rather than kill record; the program
     * started with the default action. */
    signal(SIGXFSZ, SIG_IGN);
    char final_out[sizeof abs_out + 32];
    expand_pid(final_out, sizeof final_out, abs_out, (int)pid);
    char shown[PATH_MAX + 32];
    expand_pid(shown, sizeof shown, out, (int)pid);
    /* The output is checked before the program runs (it waits at the
     * gate): a typo must not cost an hours-long run. */
    int orc = rec_per_dir ? 0 : check_output(final_out, shown, force);
    if (orc != 0) {
        kill(pid, SIGKILL);
        close(gate[1]);
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {
        }
        remove_dir(spool);
        py_hook_remove();
        return orc;
    }
    struct stat before;
    int existed = stat(final_out, &before) == 0;
    /* A device or FIFO is written in place and may show no change. */
    int special = existed && !S_ISREG(before.st_mode);
    close(gate[1]); /* let the child run */
    int rc = record_wait(pid, argv[i], spool, final_out, shown, special, existed ? &before : NULL);
    py_hook_remove();
    return rc;
}
