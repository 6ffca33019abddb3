/* fsutil.h - file-system helpers shared by every layer (compiled into the engine and into records/,
 * like error.c, so the analysis can use them without linking model code). No global state. */
#ifndef SP_FSUTIL_H
#define SP_FSUTIL_H

#include <stdio.h>

#include "error.h"

/* mkdir -p: creates path and any missing parents (mode 0755); existing directories are fine; fails
 * when path exists but is not a directory. */
int sp_mkdir_p(const char *path, SpErr *err);

/* Opens an input file for reading without ever blocking: opened O_NONBLOCK (a FIFO or a device does
 * not hang the open), then refused unless it is a regular file ("PATH: not a regular file (a
 * directory)"), then switched back to blocking reads. Returns the descriptor, or -1 with err set. */
int sp_open_input(const char *path, SpErr *err);
/* The same as a stdio stream ("rb"); NULL with err set. */
FILE *sp_fopen_input(const char *path, SpErr *err);

#endif
