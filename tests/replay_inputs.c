/* replay_inputs.c - replays fuzz inputs through the parsers built normally (CTest fuzz_regressions;
 * under ASan + UBSan in the sanitizer build).
 *
 *   replay_inputs [--fixtures DIR] ROOT...
 *
 * Each ROOT holds one directory per fuzz target (fuzz/regressions, fuzz/corpus); every file in
 * ROOT/TARGET/ goes through the harness of that name (fuzz/harness.c), which must return cleanly:
 * the parser accepts the input or rejects it with a one-line error. A crash, a sanitizer report or
 * a violated property (abort) fails the test. A directory with no harness of its name is an error,
 * so a regression input cannot be skipped silently. Exit 0 when all inputs replayed. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "harness.h"

static int read_all(const char *path, unsigned char **data, size_t *size) {
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    size_t cap = 4096, n = 0;
    unsigned char *buf = malloc(cap);
    for (size_t got; buf && (got = fread(buf + n, 1, cap - n, f)) > 0;) {
        n += got;
        if (n == cap) {
            unsigned char *nb = realloc(buf, cap *= 2);
            if (!nb) free(buf);
            buf = nb;
        }
    }
    int bad = ferror(f) || !buf;
    fclose(f);
    if (bad) {
        free(buf);
        return -1;
    }
    *data = buf;
    *size = n;
    return 0;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Sorted regular file names of dir (malloc'd array of malloc'd strings). */
static int list_dir(const char *dir, int want_dirs, char ***names, int *n) {
    DIR *d = opendir(dir);
    if (!d) return -1;
    int cap = 64;
    *n = 0;
    *names = malloc((size_t)cap * sizeof **names);
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char p[4096];
        struct stat st;
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        if (stat(p, &st) != 0 || (want_dirs ? !S_ISDIR(st.st_mode) : !S_ISREG(st.st_mode))) continue;
        if (*n == cap) *names = realloc(*names, (size_t)(cap *= 2) * sizeof **names);
        (*names)[(*n)++] = strdup(e->d_name);
    }
    closedir(d);
    qsort(*names, (size_t)*n, sizeof **names, cmp_str);
    return 0;
}

static void free_list(char **names, int n) {
    for (int i = 0; i < n; i++) free(names[i]);
    free(names);
}

int main(int argc, char **argv) {
    int first = 1, verbose = getenv("SP_REPLAY_VERBOSE") != NULL;
    if (argc > 2 && !strcmp(argv[1], "--fixtures")) {
        sp_fuzz_set_fixtures(argv[2]);
        first = 3;
    }
    if (first >= argc) {
        fprintf(stderr, "usage: replay_inputs [--fixtures DIR] ROOT...\n");
        return 2;
    }
    long total = 0;
    int bad = 0;
    for (int a = first; a < argc; a++) {
        char **targets;
        int nt;
        if (list_dir(argv[a], 1, &targets, &nt) != 0) {
            fprintf(stderr, "replay_inputs: %s: cannot read the directory\n", argv[a]);
            return 1;
        }
        for (int i = 0; i < nt; i++) {
            const SpFuzzTarget *t = sp_fuzz_find(targets[i]);
            char dir[4096];
            snprintf(dir, sizeof dir, "%s/%s", argv[a], targets[i]);
            if (!t) {
                fprintf(stderr, "replay_inputs: %s: no harness named %s\n", dir, targets[i]);
                bad = 1;
                continue;
            }
            char **files;
            int nf;
            if (list_dir(dir, 0, &files, &nf) != 0) continue;
            for (int k = 0; k < nf; k++) {
                char path[8192];
                unsigned char *data;
                size_t size;
                snprintf(path, sizeof path, "%s/%s", dir, files[k]);
                if (read_all(path, &data, &size) != 0) {
                    fprintf(stderr, "replay_inputs: %s: cannot read\n", path);
                    bad = 1;
                    continue;
                }
                if (verbose) fprintf(stderr, "replay %s\n", path);
                t->fn(data, size); /* aborts on a violated property */
                free(data);
                total++;
            }
            printf("%-16s %4d inputs from %s\n", targets[i], nf, argv[a]);
            free_list(files, nf);
        }
        free_list(targets, nt);
    }
    printf("replay_inputs: %ld inputs replayed cleanly%s\n", total, bad ? " (but see the errors above)" : "");
    return bad;
}
