/* resultsdir.h - a results directory (OUT/: runs.sqlite, tokens/, verifiers/) as its writers open it:
 * the sweep and merge. One writer at a time: an flock on OUT/.sweep.lock, released by the kernel when
 * the process (and the workers sharing the descriptor) ends, however it ends. */
#ifndef SP_RESULTSDIR_H
#define SP_RESULTSDIR_H

#include <stddef.h>

#include "error.h"

/* Creates dir and dir/tokens (mkdir -p; both must be writable) and takes the writer's lock: *lock_fd
 * receives the descriptor (the caller closes it; -1 when none was taken). *created receives which
 * levels of dir did not exist before: dir's prefix of that length is the topmost one (`a` of
 * `a/b/c` when only the working directory existed); 0 when dir existed. Errors name --out. */
int results_dir_open(const char *dir, size_t *created, int *lock_fd, SpErr *err);

/* A refused writer's undo, after it removed what it put inside dir: removes dir and every level above
 * it that results_dir_open created (created as it returned), deepest first, each only when empty;
 * never a level that existed before. */
void results_dir_remove_created(const char *dir, size_t created);

#endif
