/* fsutil.h - file-system helpers shared by every layer (compiled into the engine and into records/,
 * like error.c, so the analysis can use them without linking model code). No global state. */
#ifndef SP_FSUTIL_H
#define SP_FSUTIL_H

#include "error.h"

/* mkdir -p: creates path and any missing parents (mode 0755); existing directories are fine; fails
 * when path exists but is not a directory. */
int sp_mkdir_p(const char *path, SpErr *err);

#endif
