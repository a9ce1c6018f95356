/* SPDX-License-Identifier: MIT */
/*
 * A write that fails (no such directory, a file size limit standing in for
 * a full disk) returns an error naming the path, leaves nothing under the
 * final name (an existing file there is untouched), leaves no temporary
 * file behind, and keeps the recorded data: a retry to a good path works.
 */
#include <dirent.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "engine/trace_util.h"

static int dir_entries(const char *dir)
{
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)))
        n += e->d_name[0] != '.';
    if (d)
        closedir(d);
    return n;
}

int main(void)
{
    act_log_set_level(ACT_LOG_ERROR);
    char dir[] = "/tmp/act_wfail_XXXXXX";
    CHECK_FATAL(mkdtemp(dir) != NULL);
    act_session *s = tu_session(NULL);
    for (int i = 0; i < 50000; i++) {
        act_span_begin(ACT_CPU_OP, "some span name");
        act_span_end();
    }
    CHECK_OK(act_session_stop(s));

    /* No such directory. */
    char bad[4200];
    snprintf(bad, sizeof bad, "%s/missing/trace.json", dir);
    int rc = act_session_write(s, bad);
    CHECK(rc == ACT_EIO || rc == ACT_ENOSPC);
    CHECK(strstr(act_session_errmsg(s), bad) != NULL);

    /* A file size limit: writes fail part-way (EFBIG), like a full disk.
     * In a child, so the limit does not leak into this process. */
    char path[4200];
    snprintf(path, sizeof path, "%s/trace.json", dir);
    FILE *f = fopen(path, "w");
    CHECK_FATAL(f != NULL);
    fputs("previous content", f);
    fclose(f);
    pid_t pid = fork();
    if (pid == 0) {
        signal(SIGXFSZ, SIG_IGN);
        struct rlimit rl = {64 * 1024, 64 * 1024};
        setrlimit(RLIMIT_FSIZE, &rl);
        int r = act_session_write(s, path);
        int ok = (r == ACT_ENOSPC || r == ACT_EIO) && strstr(act_session_errmsg(s), path) != NULL;
        if (!ok)
            fprintf(stderr, "child: rc=%d msg=%s\n", r, act_session_errmsg(s));
        _exit(ok ? 0 : 1);
    }
    int status;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    char *prev = tu_slurp(path, NULL);
    CHECK(prev && strcmp(prev, "previous content") == 0);
    free(prev);
    CHECK_EQ_INT(dir_entries(dir), 1); /* no temporary file left */

    /* The data survived: a retry writes the whole trace. */
    CHECK_OK(act_session_write(s, path));
    json_t *root = tu_load(path);
    CHECK_EQ_INT(tu_count(root, "X", "some span name"), 50000);
    json_decref(root);
    CHECK_EQ_INT(dir_entries(dir), 1);
    unlink(path);
    rmdir(dir);
    act_session_destroy(s);
    return check_done();
}
