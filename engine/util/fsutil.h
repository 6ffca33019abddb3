/* fsutil.h - file-system helpers shared by every layer (compiled into the engine and into records/,
 * like error.c, so the analysis can use them without linking model code). One piece of global state:
 * the process's list of input files (below). */
#ifndef SP_FSUTIL_H
#define SP_FSUTIL_H

#include <stdio.h>

#include "error.h"

/* mkdir -p: creates path and any missing parents (mode 0755); existing directories are fine; fails
 * when path exists but is not a directory. */
int sp_mkdir_p(const char *path, SpErr *err);

/* Opens an input file for reading without ever blocking: opened O_NONBLOCK (a FIFO or a device does
 * not hang the open), then refused unless it is a regular file ("PATH: not a regular file (a
 * directory)"), then switched back to blocking reads. Returns the descriptor, or -1 with err set.
 * Every file opened here is an input of the command: its device and inode are noted, and no output
 * may replace it (sp_output_check). */
int sp_open_input(const char *path, SpErr *err);
/* 1 when a model path names a GGUF file alone (a regular file, links followed, whose name ends in
 * ".gguf") rather than a model directory: the one rule the loader, the tokenizer, the model hash and
 * the report's model origin share. */
int sp_is_gguf_file(const char *path);
/* The same as a stdio stream ("rb"); NULL with err set. */
FILE *sp_fopen_input(const char *path, SpErr *err);

/* The process's inputs: every file sp_open_input opened (a model's config, weights and tokenizer
 * files, a data set, a spec, an HDF5 file read), by device and inode, so a link, "./x" or another
 * spelling of the same file is the same input (sp_output_check_inputs below adds the ones a command
 * names before reading them). sp_input_forget removes one that was read only to check this command's
 * own earlier output (a token log the sweep found corrupt and rewrites). Inputs are noted only once
 * sp_inputs_track was called: a process is one command (cli/main.c calls it); a library user or a
 * test that plays several commands in one process, rewriting what it read, does not call it. */
void sp_inputs_track(void);
void sp_input_forget(const char *path);
/* Notes path (when it is a regular file) as one of the command's inputs without opening it: a file
 * that a library opens itself (the SQLite database files, records/sqlutil.h sql_note_inputs). */
void sp_input_note(const char *path);

/* Removes a directory that holds only files (a staging or retired report directory); a missing one is
 * fine. */
int sp_remove_flat_dir(const char *path, SpErr *err);

/* ---- outputs: every file a command writes goes through these (write to PATH.tmp, rename) ----
 * An output path may name nothing yet or a regular file (replaced as a whole at the rename); anything
 * else (a symbolic link, a directory, a device, a FIFO, a socket) is refused with one line before
 * anything is written, and checked again right before the rename, so a write never turns a device
 * or a link into a regular file. So is an empty path, and a file that is one of the command's inputs
 * (sp_open_input above): "M/model.safetensors: is the command's input (M/model.safetensors); give
 * another path", so a command never writes its output over its own input. */
int sp_output_check(const char *path, SpErr *err);
/* sp_output_check, after noting the command's inputs it has not read yet (each a file, or a directory
 * whose regular files are all inputs: a model directory; NULL entries and missing paths are skipped),
 * so a command refuses an output over its own input before any work:
 * "c.h5: is the command's input (c.h5); give another path". */
int sp_output_check_inputs(const char *path, const char *const *inputs, size_t n, SpErr *err);
/* Checks path, removes a stale PATH.tmp (a regular file or a link, never what a link points to)
 * and creates PATH.tmp exclusively, without following links. tmp receives the name (cap bytes).
 * Returns the descriptor, or -1 with err set. */
int sp_output_create_tmp(const char *path, char *tmp, size_t cap, SpErr *err);
/* The same as a stdio stream ("wb"); NULL with err set. */
FILE *sp_output_fopen_tmp(const char *path, char *tmp, size_t cap, SpErr *err);
/* Re-checks path, then renames tmp onto it; on failure removes tmp. */
int sp_output_commit(const char *tmp, const char *path, SpErr *err);
/* Gives up an output: removes tmp (a writer's error path; never unlink a PATH.tmp directly). */
void sp_output_discard(const char *tmp);

/* A PATH.tmp between sp_output_create_tmp and its commit or discard is pending (up to 16 at a time;
 * more go untracked). sp_output_cleanup_on_signal() installs a SIGINT, SIGTERM and SIGHUP handler
 * (where the disposition is the default) that removes every pending PATH.tmp, then dies of the same
 * signal: an interrupted command (export-gguf, collect, ...) leaves no PATH.tmp behind. The CLI installs
 * it once for every command; the sweep's own handler replaces it while a sweep runs. */
void sp_output_cleanup_on_signal(void);

#endif
