/* SPDX-License-Identifier: MIT */
/*
 * Replays a libFuzzer corpus without libFuzzer: every regular file under the
 * directories (or files) given on the command line is fed once to
 * LLVMFuzzerTestOneInput. Lets any compiler, and CTest, run the corpus.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "replay: cannot open %s\n", path);
        return 1;
    }
    uint8_t *buf = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (len == cap) {
            cap = cap ? cap * 2 : 4096;
            uint8_t *nb = realloc(buf, cap);
            if (!nb) {
                free(buf);
                fclose(f);
                return 1;
            }
            buf = nb;
        }
        size_t n = fread(buf + len, 1, cap - len, f);
        if (n == 0)
            break;
        len += n;
    }
    fclose(f);
    /* Hand libFuzzer-like exact-size heap memory so ASan sees overreads. */
    uint8_t *exact = malloc(len ? len : 1);
    if (len)
        memcpy(exact, buf, len);
    free(buf);
    LLVMFuzzerTestOneInput(exact, len);
    free(exact);
    return 0;
}

static int run_path(const char *path, int *count)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        fprintf(stderr, "replay: no such file or directory: %s\n", path);
        return 1;
    }
    if (!S_ISDIR(st.st_mode)) {
        ++*count;
        return run_file(path);
    }
    struct dirent **ents;
    int n = scandir(path, &ents, NULL, alphasort);
    if (n < 0)
        return 1;
    int rc = 0;
    for (int i = 0; i < n; i++) {
        if (ents[i]->d_name[0] != '.') {
            char sub[4096];
            snprintf(sub, sizeof sub, "%s/%s", path, ents[i]->d_name);
            rc |= run_path(sub, count);
        }
        free(ents[i]);
    }
    free(ents);
    return rc;
}

int main(int argc, char **argv)
{
    int rc = 0, count = 0;
    for (int i = 1; i < argc; i++)
        rc |= run_path(argv[i], &count);
    printf("replayed %d inputs\n", count);
    if (count == 0) {
        fprintf(stderr, "replay: empty corpus\n");
        return 1;
    }
    return rc;
}
