/* resultsdir.c - opening a results directory for writing (resultsdir.h). */
#include "resultsdir.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "fsutil.h"

/* mkdir -p, and the directory must be writable */
static int mkdirs(const char *path, SpErr *err) {
    if (sp_mkdir_p(path, err)) return -1;
    if (access(path, W_OK | X_OK) != 0) return sp_fail(err, "%s: not writable: %s", path, strerror(errno));
    return 0;
}

int results_dir_open(const char *dir, int *lock_fd, SpErr *err) {
    char tokens[4200], lock[4200];
    *lock_fd = -1;
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
