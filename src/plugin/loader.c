/* SPDX-License-Identifier: MIT */
/*
 * The plugin loader: turns the explicit list of plugins (config PLUGINS,
 * $ACTRACE_PLUGINS, the session options / --plugin) into loaded,
 * initialised plugins, and drives their lifecycle for the session.
 *
 * Nothing is searched for: an entry with a '/' must be an absolute path;
 * a bare name ("example") means <plugindir>/<name>.so, where <plugindir>
 * is $ACTRACE_PLUGIN_DIR if set (absolute), else the build tree's plugin
 * folder when libactrace itself lies in the build tree, else the installed
 * <libdir>/actrace/plugins. Every refusal is logged naming the file and the
 * reason, and never stops the session or the other plugins.
 *
 * The path is checked as given, component by component (symlinks
 * included), and then canonical, before dlopen() runs any of its code.
 * Plugins stay mapped (RTLD_NODELETE), so a plugin thread that outlives
 * finalize cannot crash the program. A plugin's stop, flush and finalize
 * run on a helper thread and are waited for PLUGIN_TIMEOUT_MSECS at most:
 * a plugin that does not return is reported as stuck and skipped from then
 * on, and the trace is written without waiting for it.
 *
 * Default plugins: when $ACTRACE_DEFAULT_PLUGINS is 1 (set by `actrace
 * record` unless --plugin or --no-default-plugins is given), no list names
 * any plugin and the config's DEFAULT_PLUGINS is not false, every plugin
 * file of the plugin directory is loaded except `example` (a template, not
 * a backend): `host` and whatever backends are installed or built. One of
 * them that declines (its runtime is absent) is logged at info level only.
 */
#include <ctype.h>
#include <dirent.h>
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "actrace/log.h"
#include "plugin/host.h"
#include "plugin/loader.h"

#ifndef ACT_PLUGIN_INSTALL_DIR
#define ACT_PLUGIN_INSTALL_DIR "/usr/local/lib/actrace/plugins"
#endif
#ifndef ACT_PLUGIN_BUILD_DIR
#define ACT_PLUGIN_BUILD_DIR ""
#endif

#define MAX_PLUGINS 64
#define WHY_MAX 512
/* PLUGIN_TIMEOUT_MSECS when the config has no value (docs/config.md). */
#define PLUGIN_TIMEOUT_DEFAULT_MS 5000

struct act__plugins {
    size_t n;
    struct act_plugin_ctx *v[MAX_PLUGINS];
};

/* ---- the list of requested plugins ------------------------------------ */

typedef struct name_list {
    char *v[MAX_PLUGINS * 2];
    size_t n;
    int overflow;
} name_list;

static int list_add(name_list *l, const char *s, size_t len)
{
    while (len && isspace((unsigned char)*s)) {
        s++;
        len--;
    }
    while (len && isspace((unsigned char)s[len - 1]))
        len--;
    if (!len)
        return 0;
    for (size_t i = 0; i < l->n; i++)
        if (strlen(l->v[i]) == len && memcmp(l->v[i], s, len) == 0)
            return 0; /* the same text twice: once */
    if (l->n == ACT_ARRAY_SIZE(l->v)) {
        l->overflow = 1;
        return 0;
    }
    char *d = strndup(s, len);
    if (!d)
        return ACT_ENOMEM;
    l->v[l->n++] = d;
    return 0;
}

static int list_split(name_list *l, const char *text, char sep)
{
    if (!text)
        return 0;
    for (;;) {
        const char *e = strchr(text, sep);
        size_t len = e ? (size_t)(e - text) : strlen(text);
        int rc = list_add(l, text, len);
        if (rc)
            return rc;
        if (!e)
            return 0;
        text = e + 1;
    }
}

static void list_free(name_list *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i]);
}

/* ---- resolving a name to a file --------------------------------------- */

static int is_bare_name(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 64)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)s[i]) && s[i] != '_' && s[i] != '-')
            return 0;
    return 1;
}

#ifdef ACT_PLUGIN_REL_DIR
static pthread_once_t near_once = PTHREAD_ONCE_INIT;
static char near_dir[PATH_MAX];

/* <the folder of the loaded libactrace>/ACT_PLUGIN_REL_DIR, if it is a
 * directory; else near_dir stays "". */
static void near_find(void)
{
    Dl_info info;
    if (!dladdr((void *)(uintptr_t)act__plugins_load, &info) || !info.dli_fname)
        return;
    char *self = realpath(info.dli_fname, NULL);
    char *cut = self ? strrchr(self, '/') : NULL;
    struct stat st;
    if (cut && (size_t)snprintf(near_dir, sizeof near_dir, "%.*s/%s", (int)(cut - self),
                                self, ACT_PLUGIN_REL_DIR) < sizeof near_dir &&
        stat(near_dir, &st) == 0 && S_ISDIR(st.st_mode)) {
        free(self);
        return;
    }
    near_dir[0] = '\0';
    free(self);
}
#endif

/* The folder bare names resolve in. The build tree wins when libactrace
 * (this very code, found with dladdr) lies below the build directory;
 * else <the library's own folder>/actrace/plugins when that folder exists,
 * so an install that moved (a wheel in a venv, `cmake --install --prefix`)
 * finds its plugins; else the configured install folder. */
static const char *plugin_dir(void)
{
    const char *env = secure_getenv("ACTRACE_PLUGIN_DIR");
    if (env && *env) {
        if (env[0] == '/')
            return env;
        act_log(ACT_LOG_WARN,
                "ACTRACE_PLUGIN_DIR='%s' ignored: not an absolute path", env);
    }
    const char *build = ACT_PLUGIN_BUILD_DIR;
    const char *slash = strrchr(build, '/');
    Dl_info info;
    char *self = NULL;
    if (dladdr((void *)(uintptr_t)act__plugins_load, &info) && info.dli_fname)
        self = realpath(info.dli_fname, NULL);
    if (self && slash && slash != build) {
        /* Both sides canonical, so a symlinked build folder still counts. */
        char root[PATH_MAX];
        snprintf(root, sizeof root, "%.*s", (int)(slash - build), build);
        char *rroot = realpath(root, NULL);
        const char *r = rroot ? rroot : root;
        size_t n = strlen(r);
        int inside = strncmp(self, r, n) == 0 && self[n] == '/';
        free(rroot);
        if (inside) {
            free(self);
            return build;
        }
    }
#ifdef ACT_PLUGIN_REL_DIR
    /* Computed once: the library does not move while it is loaded. (Not
     * thread-local: libactrace's static TLS must stay small for dlopen.) */
    pthread_once(&near_once, near_find);
    if (near_dir[0]) {
        free(self);
        return near_dir;
    }
#endif
    free(self);
    return ACT_PLUGIN_INSTALL_DIR;
}

const char *act__plugins_dir(void)
{
    return plugin_dir();
}

/* ---- safety of the file and of every directory above it ---------------- */

static int owner_ok(const struct stat *st)
{
    return st->st_uid == 0 || st->st_uid == geteuid();
}

static int check_node(const char *path, const struct stat *st,
                      const char *what, char *why)
{
    if (!owner_ok(st)) {
        snprintf(why, WHY_MAX, "%s %.400s is owned by uid %u, neither root nor "
                 "the current user", what, path, (unsigned)st->st_uid);
        return ACT_EUNSAFE;
    }
    /* A sticky directory owned by root or the user (like /tmp) is safe on
     * the path: others may create entries in it but not rename or remove
     * ours, and every entry below is checked in turn. A sticky file means
     * nothing, so files are never let through this way. */
    int sticky_dir = S_ISDIR(st->st_mode) && (st->st_mode & S_ISVTX);
    if ((st->st_mode & (S_IWGRP | S_IWOTH)) && !sticky_dir) {
        snprintf(why, WHY_MAX, "%s %.400s is writable by group or others "
                 "(mode %04o)", what, path, (unsigned)(st->st_mode & 07777));
        return ACT_EUNSAFE;
    }
    return 0;
}

/* Walks @p given (absolute) as the kernel resolves it, with lstat on each
 * component: every directory crossed must pass check_node, and every
 * symlink must be owned by root or the current user. realpath() and the
 * canonical check below see only where links lead, never the links: an
 * attacker's link in a sticky world-writable directory (such as /tmp,
 * with protected_symlinks off) would otherwise pass. A missing component
 * is left for realpath() to report. */
static int check_walk(const char *given, char *why)
{
    char cur[PATH_MAX] = "";  /* resolved so far, without the final '/' */
    char rest[PATH_MAX * 2]; /* still to walk */
    snprintf(rest, sizeof rest, "%s", given);
    int links = 0;
    char *p = rest;
    while (*p) {
        while (*p == '/')
            p++;
        if (!*p)
            break;
        char *end = strchr(p, '/');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len == 1 && p[0] == '.') {
            p += len;
            continue;
        }
        if (len == 2 && p[0] == '.' && p[1] == '.') {
            char *slash = strrchr(cur, '/');
            if (slash)
                *slash = '\0';
            p += len;
            continue;
        }
        size_t cl = strlen(cur);
        if (cl + 1 + len >= sizeof cur) {
            snprintf(why, WHY_MAX, "path too long");
            return ACT_EUNSAFE;
        }
        char cand[PATH_MAX];
        memcpy(cand, cur, cl);
        cand[cl] = '/';
        memcpy(cand + cl + 1, p, len);
        cand[cl + 1 + len] = '\0';
        p += len;
        struct stat st;
        if (lstat(cand, &st) != 0)
            return 0; /* realpath() reports it, with its errno */
        if (S_ISLNK(st.st_mode)) {
            if (!owner_ok(&st)) {
                snprintf(why, WHY_MAX, "symlink %.400s is owned by uid %u, "
                         "neither root nor the current user", cand,
                         (unsigned)st.st_uid);
                return ACT_EUNSAFE;
            }
            if (++links > 40) {
                snprintf(why, WHY_MAX, "too many levels of symbolic links");
                return ACT_EUNSAFE;
            }
            char target[PATH_MAX];
            ssize_t n = readlink(cand, target, sizeof target - 1);
            if (n < 0)
                return 0;
            target[n] = '\0';
            char next[PATH_MAX * 2];
            if (snprintf(next, sizeof next, "%s/%s", target, p) >=
                (int)sizeof next) {
                snprintf(why, WHY_MAX, "path too long");
                return ACT_EUNSAFE;
            }
            memcpy(rest, next, strlen(next) + 1);
            p = rest;
            if (target[0] == '/')
                cur[0] = '\0';
            continue;
        }
        if (S_ISDIR(st.st_mode)) {
            int rc = check_node(cand, &st, "directory", why);
            if (rc)
                return rc;
        }
        memcpy(cur, cand, strlen(cand) + 1);
    }
    return 0;
}

/* @p real is canonical (realpath), so no component is a symlink. */
static int check_safe(const char *real, char *why, struct stat *file)
{
    struct stat st;
    if (stat(real, &st) != 0) {
        snprintf(why, WHY_MAX, "cannot stat: %s", strerror(errno));
        return ACT_ENOENT;
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(why, WHY_MAX, "not a regular file");
        return ACT_EPLUGIN;
    }
    int rc = check_node(real, &st, "file", why);
    if (rc)
        return rc;
    *file = st;
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", real);
    for (;;) {
        char *slash = strrchr(dir, '/');
        if (!slash)
            return 0;
        if (slash == dir)
            slash[1] = '\0'; /* "/" itself */
        else
            *slash = '\0';
        if (stat(dir, &st) != 0) {
            snprintf(why, WHY_MAX, "cannot stat directory %.400s: %s", dir,
                     strerror(errno));
            return ACT_EUNSAFE;
        }
        rc = check_node(dir, &st, "directory", why);
        if (rc)
            return rc;
        if (slash == dir)
            return 0;
    }
}

/* Checks the ELF header: an ELF shared object of this machine's class and
 * byte order. dlopen() would fail on anything else too, but with a message
 * that does not say what is wrong. */
static int check_elf_fd(int fd, char *why);

static int check_elf(const char *real, char *why)
{
    int fd = open(real, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(why, WHY_MAX, "cannot open: %s", strerror(errno));
        return ACT_EIO;
    }
    int rc = check_elf_fd(fd, why);
    close(fd);
    return rc;
}

static int check_elf_fd(int fd, char *why)
{
    unsigned char h[EI_NIDENT + 4];
    ssize_t got = pread(fd, h, sizeof h, 0);
    if (got < (ssize_t)sizeof h || memcmp(h, ELFMAG, SELFMAG) != 0) {
        snprintf(why, WHY_MAX, "not a shared object (no ELF header)");
        return ACT_EPLUGIN;
    }
    unsigned want_class = sizeof(void *) == 8 ? ELFCLASS64 : ELFCLASS32;
    if (h[EI_CLASS] != want_class) {
        snprintf(why, WHY_MAX, "not a shared object for this process "
                 "(ELF class %u, expected %u)", h[EI_CLASS], want_class);
        return ACT_EPLUGIN;
    }
    const uint16_t one = 1;
    unsigned want_data =
        *(const unsigned char *)&one == 1 ? ELFDATA2LSB : ELFDATA2MSB;
    if (h[EI_DATA] != want_data) {
        snprintf(why, WHY_MAX, "not a shared object for this process "
                 "(wrong byte order)");
        return ACT_EPLUGIN;
    }
    /* e_type follows e_ident in both classes. */
    unsigned type = want_data == ELFDATA2LSB
                        ? (unsigned)(h[EI_NIDENT] | h[EI_NIDENT + 1] << 8)
                        : (unsigned)(h[EI_NIDENT] << 8 | h[EI_NIDENT + 1]);
    if (type != ET_DYN) {
        snprintf(why, WHY_MAX, "not a shared object (ELF type %u, expected "
                 "ET_DYN)", type);
        return ACT_EPLUGIN;
    }
    return 0;
}

/* ---- the checks, once per record ---------------------------------------- */

/*
 * Under `actrace record` the path walk and checks above run once: in the
 * first process that loads plugins (record's own child). It passes the
 * files that passed them to its descendants in ACTRACE_PLUGINS_CHECKED,
 * with what identifies each (device, inode, size, mtime and ctime in ns,
 * mode, owner) and a key of the request it answered (the lists, the
 * default flag, the plugin folder variable, this library's path, the
 * euid). A descendant with the same request opens each file, compares
 * its fstat with the identity record checked, and refuses a file that
 * differs in any of them (replaced, rewritten, chmod'ed: "changed since
 * ..."); only then is it read (its ELF header, from that descriptor) and
 * loaded. A different request, or no list, walks and checks in full.
 */
static int load_one(act_session *s, const act_config *cfg, const act__plugins *set,
                    const char *real, struct act_plugin_ctx **out, char *why, int checked);

#define CHECKED_ENV "ACTRACE_PLUGINS_CHECKED"
#define CHECKED_MAX 8192

static char checked_buf[CHECKED_MAX]; /* the list being built (one load) */
static size_t checked_len;
static int checked_bad; /* a path the list cannot carry, or it overflowed */

static uint64_t fnv_add(uint64_t h, const char *str)
{
    for (const unsigned char *p = (const unsigned char *)(str ? str : ""); *p; p++)
        h = (h ^ *p) * 1099511628211ull;
    return (h ^ 0xff) * 1099511628211ull; /* a separator */
}

static uint64_t request_key(const act_config *cfg, const char *const *extra, size_t nextra,
                            int want_defaults)
{
    uint64_t h = 14695981039346656037ull;
    h = fnv_add(h, cfg ? act_config_get_str(cfg, "PLUGINS") : NULL);
    h = fnv_add(h, secure_getenv("ACTRACE_PLUGINS"));
    for (size_t i = 0; i < nextra; i++)
        h = fnv_add(h, extra[i]);
    h = fnv_add(h, want_defaults ? "defaults" : "none");
    h = fnv_add(h, secure_getenv("ACTRACE_PLUGIN_DIR"));
    Dl_info info;
    h = fnv_add(h, dladdr((void *)(uintptr_t)act__plugins_load, &info) ? info.dli_fname : NULL);
    char uid[24];
    snprintf(uid, sizeof uid, "%u", (unsigned)geteuid());
    return fnv_add(h, uid);
}

/* Appends a checked file to the list (a path with ';' or a newline, or a
 * full list, makes the list unusable: descendants then check in full). */
static void checked_add(const char *real, const struct stat *st)
{
    if (checked_bad || strpbrk(real, ";\n")) {
        checked_bad = 1;
        return;
    }
    int n = snprintf(checked_buf + checked_len, sizeof checked_buf - checked_len,
                     ";%llu,%llu,%lld,%lld.%09ld,%lld.%09ld,%o,%u,%s",
                     (unsigned long long)st->st_dev, (unsigned long long)st->st_ino,
                     (long long)st->st_size, (long long)st->st_mtim.tv_sec, st->st_mtim.tv_nsec,
                     (long long)st->st_ctim.tv_sec, st->st_ctim.tv_nsec,
                     (unsigned)st->st_mode, (unsigned)st->st_uid, real);
    if (n < 0 || (size_t)n >= sizeof checked_buf - checked_len)
        checked_bad = 1;
    else
        checked_len += (size_t)n;
}

/* One entry of the inherited list: "dev,ino,size,mtime,ctime,mode,uid,path". */
typedef struct checked_file {
    unsigned long long dev, ino;
    long long size, mts, cts;
    long mtn, ctn;
    unsigned mode, uid;
    const char *path;
} checked_file;

static int checked_parse(char *e, checked_file *f)
{
    int used = 0;
    if (sscanf(e, "%llu,%llu,%lld,%lld.%ld,%lld.%ld,%o,%u,%n", &f->dev, &f->ino, &f->size,
               &f->mts, &f->mtn, &f->cts, &f->ctn, &f->mode, &f->uid, &used) != 9 || !used ||
        e[used] != '/')
        return -1;
    f->path = e + used;
    return 0;
}

/* Loads an entry of the inherited list: the file must be the one record
 * checked (its descriptor's fstat against the identity), still owned and
 * moded safely, an ELF shared object; then it is loaded as usual. */
static void load_checked(act_session *s, const act_config *cfg, act__plugins *set,
                         const checked_file *f, int quiet)
{
    char why[WHY_MAX] = "";
    int fd = open(f->path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        act_log(ACT_LOG_WARN, "plugin %s: refused: %s", f->path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return;
    }
    if ((unsigned long long)st.st_dev != f->dev || (unsigned long long)st.st_ino != f->ino ||
        (long long)st.st_size != f->size || (long long)st.st_mtim.tv_sec != f->mts ||
        st.st_mtim.tv_nsec != f->mtn || (long long)st.st_ctim.tv_sec != f->cts ||
        st.st_ctim.tv_nsec != f->ctn || (unsigned)st.st_mode != f->mode ||
        (unsigned)st.st_uid != f->uid) {
        close(fd);
        act_log(ACT_LOG_WARN, "plugin %s: refused: the file changed since `actrace record` "
                "checked it (another file, or rewritten, or its mode or owner changed)", f->path);
        return;
    }
    int rc = S_ISREG(st.st_mode) ? check_node(f->path, &st, "file", why) : ACT_EPLUGIN;
    if (!rc)
        rc = check_elf_fd(fd, why);
    close(fd);
    for (size_t i = 0; !rc && i < set->n; i++)
        if (strcmp(set->v[i]->path, f->path) == 0)
            return; /* listed twice: loaded once */
    if (!rc && set->n == MAX_PLUGINS) {
        snprintf(why, WHY_MAX, "more than %d plugins", MAX_PLUGINS);
        rc = ACT_ELIMIT;
    }
    struct act_plugin_ctx *c = NULL;
    if (!rc)
        rc = load_one(s, cfg, set, f->path, &c, why, 1);
    if (rc) {
        act_log(quiet && rc == ACT_EDECLINED ? ACT_LOG_INFO : ACT_LOG_WARN,
                "plugin %s: refused: %s", f->path, *why ? why : act_strerror(rc));
        return;
    }
    set->v[set->n++] = c;
    act_log(ACT_LOG_INFO, "plugin %s: loaded '%s' %s", f->path, c->name,
            c->table.version ? c->table.version : "");
}

/* Loads what ACTRACE_PLUGINS_CHECKED lists when it answers request @p key:
 * 1 if it did (the set is then complete), 0 to walk and check in full. */
static int load_inherited(act_session *s, const act_config *cfg, act__plugins *set,
                          uint64_t key)
{
    const char *env = secure_getenv(CHECKED_ENV);
    char want[40];
    snprintf(want, sizeof want, "v1:%016llx:", (unsigned long long)key);
    if (!env || strncmp(env, want, strlen(want)) != 0)
        return 0;
    const char *rest = env + strlen(want);
    int quiet = rest[0] == 'q';
    char *copy = strdup(rest + (rest[0] ? 1 : 0));
    if (!copy)
        return 0;
    for (char *save = NULL, *e = strtok_r(copy, ";", &save); e; e = strtok_r(NULL, ";", &save)) {
        checked_file f;
        if (checked_parse(e, &f) == 0)
            load_checked(s, cfg, set, &f, quiet);
    }
    free(copy);
    return 1;
}

/* Passes the files checked in this load on to descendants (under record
 * only, and only a list that holds every file). */
static void checked_export(uint64_t key, int quiet)
{
    if (checked_bad || !secure_getenv("ACTRACE_RECORD_DIR"))
        return;
    char *v = malloc(checked_len + 48);
    if (!v)
        return;
    snprintf(v, checked_len + 48, "v1:%016llx:%c%s", (unsigned long long)key, quiet ? 'q' : '-',
             checked_buf);
    setenv(CHECKED_ENV, v, 1);
    free(v);
}

/* ---- loading one plugin ------------------------------------------------ */

static int types_explicit_visit(void *user, const char *key,
                                const char *value)
{
    (void)value;
    if (strcasecmp(key, "ACTIVITY_TYPES") == 0)
        *(int *)user = 1;
    return 0;
}

static int valid_plugin_name(const char *s)
{
    if (!s)
        return 0;
    size_t n = strnlen(s, 65);
    if (n == 0 || n > 64)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!(islower((unsigned char)s[i]) || isdigit((unsigned char)s[i]) ||
              s[i] == '_' || s[i] == '-'))
            return 0;
    return 1;
}

static void ctx_free(struct act_plugin_ctx *c)
{
    if (!c)
        return;
    if (atomic_load(&c->stuck)) {
        /* A helper thread may still be inside the plugin, holding c: the
         * host table refuses its calls from now on, and c is left. */
        atomic_store(&c->dead, 1);
        return;
    }
    if (c->dl)
        dlclose(c->dl);
    pthread_mutex_destroy(&c->lock);
    for (uint32_t i = 0; i < c->nwarnings; i++)
        free(c->warnings[i]);
    free(c->track_map);
    free(c->path);
    free(c);
}

/* Replaces bytes that could garble a log line (controls, non-ASCII) in a
 * plugin-supplied reason. */
static void sanitize(char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || (unsigned char)*s >= 0x7f)
            *s = '?';
}

/* Loads @p real. Returns 0 and the plugin, or a negative code with the
 * reason in @p why. */
static int load_one(act_session *s, const act_config *cfg,
                    const act__plugins *set, const char *real,
                    struct act_plugin_ctx **out, char *why, int checked)
{
    int rc = 0;
    if (!checked) {
        struct stat st;
        rc = check_safe(real, why, &st);
        if (!rc)
            rc = check_elf(real, why);
        if (!rc)
            checked_add(real, &st);
    }
    if (rc)
        return rc;

    struct act_plugin_ctx *c = calloc(1, sizeof *c);
    if (!c)
        return ACT_ENOMEM;
    c->magic = ACT__PLUGIN_MAGIC;
    c->fork_gen = act__fork_gen;
    c->session = s;
    c->cfg = cfg;
    pthread_mutex_init(&c->lock, NULL);
    c->path = strdup(real);
    c->track_map = calloc(ACT_PLUGIN_TRACKS_MAX, sizeof *c->track_map);
    snprintf(c->name, sizeof c->name, "?");
    if (!c->path || !c->track_map) {
        ctx_free(c);
        return ACT_ENOMEM;
    }
    if (cfg)
        act_config_foreach(cfg, types_explicit_visit, &c->types_explicit);
    int64_t tmo = PLUGIN_TIMEOUT_DEFAULT_MS;
    if (cfg && act_config_get_int(cfg, "PLUGIN_TIMEOUT_MSECS", &tmo) != 0)
        tmo = PLUGIN_TIMEOUT_DEFAULT_MS;
    c->timeout_ms = tmo;
    act__phost_init(c);

    dlerror();
    /* RTLD_NODELETE: dlclose() leaves the code mapped, so a plugin thread
     * still running after finalize (a plugin bug) cannot SIGSEGV the
     * program. */
    c->dl = dlopen(real, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (!c->dl) {
        const char *e = dlerror();
        snprintf(why, WHY_MAX, "dlopen failed: %s", e ? e : "unknown error");
        ctx_free(c);
        return ACT_EPLUGIN;
    }
    act_plugin_entry_fn entry;
    void *sym = dlsym(c->dl, ACT_PLUGIN_ENTRY_SYMBOL);
    if (!sym) {
        snprintf(why, WHY_MAX, "missing entry symbol %s",
                 ACT_PLUGIN_ENTRY_SYMBOL);
        ctx_free(c);
        return ACT_EPLUGIN;
    }
    /* POSIX guarantees a dlsym result converts to a function pointer. */
    memcpy(&entry, &sym, sizeof entry);

    const act_plugin *t =
        entry(&c->host, ACT_PLUGIN_ABI_MAJOR, ACT_PLUGIN_ABI_MINOR);
    if (!t) {
        snprintf(why, WHY_MAX, "declined: %s returned NULL",
                 ACT_PLUGIN_ENTRY_SYMBOL);
        ctx_free(c);
        return ACT_EDECLINED;
    }
    /* The major is read only when the struct holds it. */
    if (t->struct_size >= 8 && t->abi_major != ACT_PLUGIN_ABI_MAJOR) {
        snprintf(why, WHY_MAX, "unsupported plugin ABI %u.%u (this host "
                 "speaks %d.0 to %d.%d)", t->abi_major, t->abi_minor,
                 ACT_PLUGIN_ABI_MAJOR, ACT_PLUGIN_ABI_MAJOR,
                 ACT_PLUGIN_ABI_MINOR);
        ctx_free(c);
        return ACT_EABI;
    }
    if (t->struct_size < ACT_PLUGIN_SIZE_1_0) {
        snprintf(why, WHY_MAX, "plugin table struct_size %u is smaller than "
                 "ABI 1.0's (%u)", t->struct_size, ACT_PLUGIN_SIZE_1_0);
        ctx_free(c);
        return ACT_EABI;
    }
    /* Read only what the plugin's size covers; the rest stays zero. */
    memcpy(&c->table, t,
           t->struct_size < sizeof c->table ? t->struct_size
                                            : sizeof c->table);
    if (!valid_plugin_name(c->table.name)) {
        snprintf(why, WHY_MAX, "invalid plugin name (want [a-z0-9_-]{1,64})");
        ctx_free(c);
        return ACT_EPLUGIN;
    }
    snprintf(c->name, sizeof c->name, "%s", c->table.name);
    const char *backend = c->table.backend ? c->table.backend : c->name;
    if (!valid_plugin_name(backend)) {
        snprintf(why, WHY_MAX, "invalid backend name (want [a-z0-9_-]{1,64})");
        ctx_free(c);
        return ACT_EPLUGIN;
    }
    for (size_t i = 0; i < set->n; i++)
        if (strcmp(set->v[i]->name, c->name) == 0) {
            snprintf(why, WHY_MAX, "a plugin named '%s' is already loaded "
                     "from %.300s", c->name, set->v[i]->path);
            ctx_free(c);
            return ACT_EEXIST;
        }
    rc = act__source_add(s, c->name, backend, &c->source);
    if (rc) {
        snprintf(why, WHY_MAX, "no record source left: %s", act_strerror(rc));
        ctx_free(c);
        return rc;
    }
    if (c->table.init) {
        char reason[256] = {0};
        int32_t r = c->table.init(&c->host, &c->state, reason, sizeof reason);
        reason[sizeof reason - 1] = '\0';
        sanitize(reason);
        if (r != ACT_PLUGIN_OK) {
            if (r == ACT_PLUGIN_DECLINE)
                snprintf(why, WHY_MAX, "init declined: %s",
                         *reason ? reason : "(no reason given)");
            else
                snprintf(why, WHY_MAX, "init failed (%d): %s", (int)r,
                         *reason ? reason : "(no reason given)");
            act__source_retire(s, c->source);
            ctx_free(c);
            return r == ACT_PLUGIN_DECLINE ? ACT_EDECLINED : ACT_EPLUGIN;
        }
    }
    c->initialised = 1;
    *out = c;
    return 0;
}

/* ---- the set ----------------------------------------------------------- */

static void load_entry(act_session *s, const act_config *cfg,
                       act__plugins *set, const char *entry,
                       const char *dir, int quiet)
{
    char why[WHY_MAX] = "";
    char given[PATH_MAX];
    if (strchr(entry, '/')) {
        if (entry[0] != '/') {
            act_log(ACT_LOG_WARN,
                    "plugin %s: refused: relative path (give an absolute "
                    "path, or a bare name for the plugin directory %s)",
                    entry, dir);
            return;
        }
        snprintf(given, sizeof given, "%s", entry);
    } else if (is_bare_name(entry)) {
        snprintf(given, sizeof given, "%s/%s.so", dir, entry);
    } else {
        act_log(ACT_LOG_WARN,
                "plugin %s: refused: neither an absolute path nor a bare "
                "name ([A-Za-z0-9_-]{1,64})", entry);
        return;
    }
    int wrc = check_walk(given, why);
    if (wrc) {
        act_log(ACT_LOG_WARN, "plugin %s: refused: %s", given, why);
        return;
    }
    char *real = realpath(given, NULL);
    if (!real) {
        act_log(ACT_LOG_WARN, "plugin %s: refused: %s: %s", entry, given,
                strerror(errno));
        return;
    }
    for (size_t i = 0; i < set->n; i++)
        if (strcmp(set->v[i]->path, real) == 0) {
            free(real); /* listed twice: loaded once */
            return;
        }
    if (set->n == MAX_PLUGINS) {
        act_log(ACT_LOG_WARN, "plugin %s: refused: more than %d plugins",
                real, MAX_PLUGINS);
        free(real);
        return;
    }
    struct act_plugin_ctx *c = NULL;
    int rc = load_one(s, cfg, set, real, &c, why, 0);
    if (rc) {
        act_log(quiet && rc == ACT_EDECLINED ? ACT_LOG_INFO : ACT_LOG_WARN,
                "plugin %s: refused: %s", real, *why ? why : act_strerror(rc));
    } else {
        set->v[set->n++] = c;
        act_log(ACT_LOG_INFO, "plugin %s: loaded '%s' %s", real, c->name,
                c->table.version ? c->table.version : "");
    }
    free(real);
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The default list: <dir>/<name>.so for every such file but example.so,
 * sorted by name so the load order is stable. */
static int list_defaults(name_list *l, const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    int rc = 0;
    struct dirent *e;
    while (!rc && (e = readdir(d)) != NULL) {
        size_t n = strlen(e->d_name);
        if (n < 4 || strcmp(e->d_name + n - 3, ".so") != 0 ||
            strcmp(e->d_name, "example.so") == 0)
            continue;
        char name[80];
        if (n - 3 >= sizeof name)
            continue;
        snprintf(name, sizeof name, "%.*s", (int)(n - 3), e->d_name);
        if (is_bare_name(name))
            rc = list_add(l, name, strlen(name));
    }
    closedir(d);
    if (l->n > 1)
        qsort(l->v, l->n, sizeof l->v[0], by_name);
    return rc;
}

/* One load or destroy at a time in a process: the list of checked files
 * above is the loader's, and plugins' init and finalize calls touch their
 * own process-wide state (an NVTX injection, an ICD layer). Two sessions
 * may be made at once: record's at load while the on-demand poller takes
 * a request, or a program's own beside either. Not held across a fork: the
 * child starts with it free (a load in another thread of the parent is not
 * the child's), and a plugin may fork from its init. */
static pthread_mutex_t load_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t load_fork_once = PTHREAD_ONCE_INIT;

static void load_lock_child(void)
{
    pthread_mutex_init(&load_lock, NULL);
}

static void load_fork_install(void)
{
    pthread_atfork(NULL, NULL, load_lock_child);
}

static int plugins_load(act_session *s, const act_config *cfg, const char *const *extra,
                        size_t nextra, act__plugins **out);

int act__plugins_load(act_session *s, const act_config *cfg,
                      const char *const *extra, size_t nextra,
                      act__plugins **out)
{
    pthread_once(&load_fork_once, load_fork_install);
    pthread_mutex_lock(&load_lock);
    int rc = plugins_load(s, cfg, extra, nextra, out);
    pthread_mutex_unlock(&load_lock);
    return rc;
}

static int plugins_load(act_session *s, const act_config *cfg, const char *const *extra,
                        size_t nextra, act__plugins **out)
{
    *out = NULL;
    act__plugins *set = calloc(1, sizeof *set);
    if (!set)
        return ACT_ENOMEM;
    name_list l = {0};
    int rc = 0;
    if (cfg)
        rc = list_split(&l, act_config_get_str(cfg, "PLUGINS"), ',');
    if (!rc)
        rc = list_split(&l, secure_getenv("ACTRACE_PLUGINS"), ':');
    for (size_t i = 0; !rc && i < nextra; i++)
        if (extra[i])
            rc = list_add(&l, extra[i], strlen(extra[i]));
    if (rc) {
        list_free(&l);
        free(set);
        return rc;
    }
    if (l.overflow)
        act_log(ACT_LOG_WARN, "plugins: more than %zu entries listed; the "
                "rest are ignored", l.n);
    int quiet = 0;
    const char *def = secure_getenv("ACTRACE_DEFAULT_PLUGINS");
    int want = 1;
    if (cfg && act_config_get_bool(cfg, "DEFAULT_PLUGINS", &want) != 0)
        want = 1;
    int defaults = !l.n && want && def && strcmp(def, "1") == 0;
    uint64_t key = request_key(cfg, extra, nextra, defaults);
    if ((l.n || defaults) && load_inherited(s, cfg, set, key)) {
        list_free(&l);
        *out = set;
        return 0;
    }
    checked_len = 0;
    checked_bad = 0;
    if (defaults) {
        rc = list_defaults(&l, plugin_dir());
        if (rc) {
            list_free(&l);
            free(set);
            return rc;
        }
        quiet = 1;
    }
    if (l.n) {
        const char *dir = plugin_dir();
        for (size_t i = 0; i < l.n; i++)
            load_entry(s, cfg, set, l.v[i], dir, quiet);
        checked_export(key, quiet);
    }
    list_free(&l);
    *out = set;
    return 0;
}

/* ---- bounded calls into a plugin ---------------------------------------- */

/*
 * A plugin's stop, flush and finalize run on a helper thread and are
 * waited for PLUGIN_TIMEOUT_MSECS each at most. One helper runs the calls
 * of every plugin in turn (every stop, then every flush): one thread per
 * batch, not per call, so a process pays one thread creation at its end,
 * however many plugins it loaded. The waiter sees which call runs (at) and since when; a call
 * past its deadline marks its plugin stuck, the helper is abandoned (it
 * runs nothing more once that call returns, and frees the batch), and the
 * rest of the batch goes to a new helper.
 */
typedef enum { CALL_STOP, CALL_FLUSH, CALL_FINALIZE } call_kind;

static void (*call_fn(const struct act_plugin_ctx *c, call_kind k))(void *)
{
    return k == CALL_STOP ? c->table.stop : k == CALL_FLUSH ? c->table.flush : c->table.finalize;
}

static const char *const call_what[] = {"stop", "flush", "finalize"};

typedef struct pbatch {
    pthread_mutex_t m;
    pthread_cond_t cv;
    struct act_plugin_ctx *v[2 * MAX_PLUGINS];
    call_kind kinds[2 * MAX_PLUGINS];
    size_t pos[2 * MAX_PLUGINS]; /* each call's place in call_all's order */
    size_t n;
    size_t at;        /* the call running (or next): an index into v */
    int64_t since_ns; /* when call `at` began (CLOCK_MONOTONIC) */
    int done;         /* every call returned */
    int abandoned;    /* the waiter left: the helper frees */
} pbatch;

static int64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void pbatch_free(pbatch *b)
{
    pthread_cond_destroy(&b->cv);
    pthread_mutex_destroy(&b->m);
    free(b);
}

static void *pbatch_main(void *arg)
{
    pbatch *b = arg;
    pthread_mutex_lock(&b->m);
    while (b->at < b->n && !b->abandoned) {
        struct act_plugin_ctx *c = b->v[b->at];
        b->since_ns = mono_ns();
        pthread_cond_broadcast(&b->cv);
        pthread_mutex_unlock(&b->m);
        call_fn(c, b->kinds[b->at])(c->state);
        pthread_mutex_lock(&b->m);
        if (!b->abandoned)
            b->at++;
    }
    b->done = 1;
    int abandoned = b->abandoned;
    pthread_cond_broadcast(&b->cv);
    pthread_mutex_unlock(&b->m);
    if (abandoned)
        pbatch_free(b);
    return NULL;
}

/* Runs, for each of @p nk kinds in turn, that call of every plugin of @p p
 * that has one (and is not stuck), in order, each bounded by its
 * PLUGIN_TIMEOUT_MSECS (0: for ever, on the calling thread). A call that
 * does not return in time marks its plugin stuck: reported once and
 * skipped from then on (its later calls too); its helper thread is left
 * to finish (or not) on its own. */
static void call_all(act__plugins *p, const call_kind *kinds, size_t nk)
{
    size_t i = 0, total = p ? p->n * nk : 0;
    while (i < total) {
        /* The calls from i on (i = kind index * n + plugin index) that a
         * helper runs; unbounded ones here. */
        pbatch *b = calloc(1, sizeof *b);
        for (; i < total; i++) {
            struct act_plugin_ctx *c = p->v[i % p->n];
            call_kind kind = kinds[i / p->n];
            if (!call_fn(c, kind) || atomic_load(&c->stuck))
                continue;
            if (c->timeout_ms <= 0 || !b) {
                if (b && b->n)
                    break; /* the batch first, in order */
                call_fn(c, kind)(c->state);
                continue;
            }
            b->pos[b->n] = i;
            b->kinds[b->n] = kind;
            b->v[b->n++] = c;
        }
        if (!b)
            return;
        if (!b->n) {
            free(b);
            continue;
        }
        pthread_mutex_init(&b->m, NULL);
        pthread_condattr_t ca;
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_init(&b->cv, &ca);
        pthread_condattr_destroy(&ca);
        pthread_attr_t ta;
        pthread_attr_init(&ta);
        pthread_attr_setdetachstate(&ta, PTHREAD_CREATE_DETACHED);
        /* No signal is delivered to the helper: the program's handlers
         * run on its own threads. */
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        pthread_t t;
        b->since_ns = mono_ns();
        int ok = pthread_create(&t, &ta, pbatch_main, b) == 0;
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        pthread_attr_destroy(&ta);
        if (!ok) {
            /* No thread to spare: unbounded, as before. */
            for (size_t k = 0; k < b->n; k++)
                call_fn(b->v[k], b->kinds[k])(b->v[k]->state);
            pbatch_free(b);
            continue;
        }
        pthread_mutex_lock(&b->m);
        struct act_plugin_ctx *late = NULL;
        while (!b->done) {
            struct act_plugin_ctx *c = b->v[b->at];
            int64_t dl_ns = b->since_ns + c->timeout_ms * 1000000;
            struct timespec dl = {(time_t)(dl_ns / 1000000000), (long)(dl_ns % 1000000000)};
            size_t at = b->at;
            int64_t since = b->since_ns;
            if (pthread_cond_timedwait(&b->cv, &b->m, &dl) == ETIMEDOUT && !b->done &&
                b->at == at && b->since_ns == since) {
                late = c;
                b->abandoned = 1;
                break;
            }
        }
        /* The rest of the batch (after the stuck call) goes round again;
         * read before the lock goes: an abandoned batch is the helper's. */
        size_t next = late && b->at + 1 < b->n ? b->pos[b->at + 1] : total;
        call_kind late_kind = late ? b->kinds[b->at] : CALL_STOP;
        int free_it = !late;
        pthread_mutex_unlock(&b->m);
        if (late) {
            atomic_store(&late->stuck, 1);
            act_log(ACT_LOG_ERROR, "plugin '%s' (%s): %s did not return within %lld "
                    "ms (PLUGIN_TIMEOUT_MSECS): the plugin is stuck and skipped from "
                    "now on; the trace is written without it", late->name, late->path,
                    call_what[late_kind], (long long)late->timeout_ms);
            i = next; /* the call after the stuck one */
        }
        if (free_it)
            pbatch_free(b);
    }
}

void act__plugins_start(act__plugins *p)
{
    /* Start is not bounded: it runs before the program's work, on the
     * thread that starts the session, which some plugins need. */
    for (size_t i = 0; p && i < p->n; i++)
        if (p->v[i]->table.start && !atomic_load(&p->v[i]->stuck))
            p->v[i]->table.start(p->v[i]->state);
}

/* Cancels every tick (act_plugin_host.every) of every plugin of @p p,
 * waiting for one that runs (PLUGIN_TIMEOUT_MSECS at most: a tick that
 * does not return by then marks its plugin stuck), so that none runs
 * after the plugin's stop or finalize. */
static void ticks_cancel(act__plugins *p)
{
    for (size_t i = 0; p && i < p->n; i++) {
        struct act_plugin_ctx *c = p->v[i];
        if (act__tick_cancel(c->session, c, 0, c->timeout_ms) == ACT_EBUSY &&
            !atomic_exchange(&c->stuck, 1))
            act_log(ACT_LOG_ERROR, "plugin '%s' (%s): a tick did not return within %lld "
                    "ms (PLUGIN_TIMEOUT_MSECS): the plugin is stuck and skipped from "
                    "now on; the trace is written without it", c->name, c->path,
                    (long long)c->timeout_ms);
    }
}

void act__plugins_stop(act__plugins *p)
{
    /* All stop first, then all flush: no plugin produces while another
     * one drains. No tick runs from here on. */
    static const call_kind k[] = {CALL_STOP, CALL_FLUSH};
    ticks_cancel(p);
    call_all(p, k, 2);
}

static void plugins_destroy(act__plugins *p);

void act__plugins_destroy(act__plugins *p)
{
    if (!p)
        return;
    pthread_once(&load_fork_once, load_fork_install);
    pthread_mutex_lock(&load_lock);
    plugins_destroy(p);
    pthread_mutex_unlock(&load_lock);
}

static void plugins_destroy(act__plugins *p)
{
    ticks_cancel(p); /* registered after a stop, or never stopped */
    static const call_kind k[] = {CALL_FINALIZE};
    call_all(p, k, 1);
    for (size_t i = 0; i < p->n; i++) {
        struct act_plugin_ctx *c = p->v[i];
        uint64_t rej = act__phost_rejected(c);
        if (rej)
            act_log(ACT_LOG_WARN, "plugin '%s' (%s): %llu records or calls "
                    "rejected in total", c->name, c->path,
                    (unsigned long long)rej);
        ctx_free(c);
    }
    free(p);
}

int act__plugins_all_lazy(const act__plugins *p)
{
    for (size_t i = 0; p && i < p->n; i++)
        if (!p->v[i]->dl || !dlsym(p->v[i]->dl, ACT_PLUGIN_LAZY_SYMBOL))
            return 0;
    return 1;
}

size_t act__plugins_count(const act__plugins *p)
{
    return p ? p->n : 0;
}

const char *act__plugins_name(const act__plugins *p, size_t i)
{
    return p && i < p->n ? p->v[i]->name : "";
}

const char *act__plugins_path(const act__plugins *p, size_t i)
{
    return p && i < p->n ? p->v[i]->path : "";
}

uint64_t act__plugins_rejected(const act__plugins *p, size_t i)
{
    return p && i < p->n ? act__phost_rejected(p->v[i]) : 0;
}

uint64_t act__plugins_filtered(const act__plugins *p, size_t i)
{
    return p && i < p->n ? atomic_load(&p->v[i]->filtered) : 0;
}

uint64_t act__plugins_dropped(const act__plugins *p, size_t i)
{
    return p && i < p->n ? atomic_load(&p->v[i]->dropped) : 0;
}

/* Read without c->lock: the writer holds the session lock, and a plugin
 * thread may hold c->lock while it waits for the session lock (lock order:
 * plugin context, then session). A warning's slot is filled before the
 * release store of nwarnings that publishes it, and never changes after. */
size_t act__plugins_warning_count(const act__plugins *p, size_t i)
{
    if (!p || i >= p->n)
        return 0;
    return atomic_load_explicit(&p->v[i]->nwarnings, memory_order_acquire);
}

const char *act__plugins_warning(const act__plugins *p, size_t i, size_t k)
{
    if (!p || i >= p->n)
        return "";
    uint32_t n = atomic_load_explicit(&p->v[i]->nwarnings, memory_order_acquire);
    return k < n ? p->v[i]->warnings[k] : "";
}

size_t act__plugins_reason_count(void)
{
    return ACT__PREJ_COUNT - 1; /* ACT__PREJ_NONE is not a reason */
}

uint64_t act__plugins_rejected_by(const act__plugins *p, size_t i, size_t k,
                                  const char **key)
{
    act__prej r = (act__prej)(k + 1);
    *key = act__prej_name(r);
    return p && i < p->n && k < act__plugins_reason_count() ? atomic_load(&p->v[i]->rejected[r]) : 0;
}
