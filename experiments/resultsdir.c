/* resultsdir.c - opening a results directory for writing (resultsdir.h). */
#include "resultsdir.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsutil.h"

/* mkdir -p, and the directory must be writable */
static int mkdirs(const char *path, SpErr *err) {
    if (sp_mkdir_p(path, err)) return -1;
    if (access(path, W_OK | X_OK) != 0) return sp_fail(err, "%s: not writable: %s", path, strerror(errno));
    return 0;
}

/* The levels of dir, as sp_mkdir_p walks them: the prefix lengths ending at each '/' and the end. */
static int is_level_end(const char *dir, size_t i) { return i > 0 && (dir[i] == '/' || dir[i] == '\0'); }

/* The length of dir's topmost prefix that does not exist (0: dir exists). */
static size_t first_missing(const char *dir) {
    char buf[4200];
    size_t n = strlen(dir);
    if (n >= sizeof buf) return 0;
    memcpy(buf, dir, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (!is_level_end(dir, i)) continue;
        struct stat st;
        buf[i] = '\0';
        int missing = stat(buf, &st) != 0;
        buf[i] = dir[i];
        if (missing) return i;
    }
    return 0;
}

void results_dir_remove_created(const char *dir, size_t created) {
    char buf[4200];
    size_t n = strlen(dir);
    if (created == 0 || n >= sizeof buf) return;
    memcpy(buf, dir, n + 1);
    for (size_t i = n + 1; i-- > created;) { /* deepest level first; stops at the first one not empty */
        if (!is_level_end(dir, i)) continue;
        buf[i] = '\0';
        if (rmdir(buf) != 0 && errno != ENOENT) return;
    }
}

int results_dir_open(const char *dir, size_t *created, int *lock_fd, SpErr *err) {
    char tokens[4200], lock[4200];
    *lock_fd = -1;
    *created = first_missing(dir);
    snprintf(tokens, sizeof tokens, "%s/tokens", dir);
    snprintf(lock, sizeof lock, "%s/.sweep.lock", dir);
    if (mkdirs(dir, err) || mkdirs(tokens, err)) return sp_err_prefix(err, "--out");
    if ((*lock_fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0644)) < 0)
        return sp_fail(err, "--out: %s: cannot create: %s", lock, strerror(errno));
    if (flock(*lock_fd, LOCK_EX | LOCK_NB) != 0)
        return sp_fail(err, "--out: %s: another sweep or merge is writing this directory (use --jobs, or --shard with "
                            "its own directory)", dir);
    return 0;
}
