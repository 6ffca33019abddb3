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

/* Removes a directory that holds only files (a staging or retired report directory); a missing one is
 * fine. */
int sp_remove_flat_dir(const char *path, SpErr *err);

/* ---- outputs: every file a command writes goes through these (write to PATH.tmp, rename) ----
 * An output path may name nothing yet or a regular file (replaced as a whole at the rename); anything
 * else (a symbolic link, a directory, a device, a FIFO, a socket) is refused with one line before
 * anything is written, and checked again right before the rename, so a write never turns a device
 * or a link into a regular file. */
int sp_output_check(const char *path, SpErr *err);
/* Checks path, removes a stale PATH.tmp (a regular file or a link, never what a link points to)
 * and creates PATH.tmp exclusively, without following links. tmp receives the name (cap bytes).
 * Returns the descriptor, or -1 with err set. */
int sp_output_create_tmp(const char *path, char *tmp, size_t cap, SpErr *err);
/* The same as a stdio stream ("wb"); NULL with err set. */
FILE *sp_output_fopen_tmp(const char *path, char *tmp, size_t cap, SpErr *err);
/* Re-checks path, then renames tmp onto it; on failure removes tmp. */
int sp_output_commit(const char *tmp, const char *path, SpErr *err);

#endif
