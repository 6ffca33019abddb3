/* resultsdir.h - a results directory (OUT/: runs.sqlite, tokens/, verifiers/) as its writers open it:
 * the sweep and merge. One writer at a time: an flock on OUT/.sweep.lock, released by the kernel when
 * the process (and the workers sharing the descriptor) ends, however it ends. */
#ifndef SP_RESULTSDIR_H
#define SP_RESULTSDIR_H

#include "error.h"

/* Creates dir and dir/tokens (mkdir -p; both must be writable) and takes the writer's lock: *lock_fd
 * receives the descriptor (the caller closes it; -1 when none was taken). Errors name --out. */
int results_dir_open(const char *dir, int *lock_fd, SpErr *err);

#endif
