/* sqlutil.h - SQLite helpers every owner of a query uses: errors as values that name the file, the
 * step and SQLite's extended result code (plus the errno SQLite saw), and schema introspection.
 * Stateless; each function takes the connection and the path for messages. */
#ifndef SP_SQLUTIL_H
#define SP_SQLUTIL_H

#include <sqlite3.h>
#include <stddef.h>

#include "error.h"

/* " (SQLITE_IOERR_WRITE, errno 28: No space left on device)" for the connection's last error; ""
 * when there is none. */
void sql_detail(sqlite3 *h, char *buf, size_t cap);
/* err = "PATH: WHAT: MESSAGE (CODE[, errno N: TEXT])" from the connection's last error; returns -1. */
int sql_fail(sqlite3 *h, const char *path, const char *what, SpErr *err);
/* Runs sql (one or more statements); on error "PATH: [WHAT: ]MESSAGE (CODE...)"; a short single
 * statement ("BEGIN IMMEDIATE", "COMMIT") names itself when what is NULL. err may be NULL. */
int sql_exec(sqlite3 *h, const char *path, const char *sql, const char *what, SpErr *err);
/* The first column of the first row as text into buf ("" when there is no row). */
int sql_scalar_text(sqlite3 *h, const char *path, const char *sql, char *buf, size_t cap, SpErr *err);
/* Opens an existing database for reading only, so read-only commands work on read-only media: opened
 * SQLITE_OPEN_READONLY and probed with a read of the schema; when the probe fails and the file's
 * directory is not writable (a read-only mount, no permission: SQLite cannot create the WAL index
 * there, and no writer can be at work in it), reopened immutable (file:PATH?immutable=1). Any other
 * failure is reported as it is ("PATH: open for reading: MESSAGE (CODE, errno N: TEXT)"), never as
 * a file of the wrong kind. Returns the connection (sqlite3_close it), or NULL with err set. */
sqlite3 *sql_open_read(const char *path, SpErr *err);

/* The files SQLite opens itself for the database at path: path, path-wal, path-journal, path-shm.
 * They are under the same input-over-output rule as every other file (engine/util/fsutil.h):
 * sql_note_inputs notes those that exist as the command's inputs (sql_open_read calls it, as does a
 * writer for the databases it will read, before it opens its own), so no output of the command may
 * replace them; sql_check_output, run by a writer before SQLite opens path (experiments/db.c
 * db_open), refuses a database whose file or sidecar is a symbolic link, a device, a FIFO or a
 * directory (SQLite would write through it) or one of the command's inputs ("OUT/runs.sqlite: is the
 * command's input (SHARD/runs.sqlite); give another path"). sql_forget_inputs undoes the note (a
 * reader that then opens the same database to upgrade it). */
void sql_note_inputs(const char *path);
int sql_check_output(const char *path, SpErr *err);
void sql_forget_inputs(const char *path);
/* Reads every row of the prepared statement st into a growing array: for each row, one zeroed
 * element of item_size bytes is appended to *items (*n counts them; the caller frees *items, which
 * may hold elements read before an error) and read_row(st, element, ctx, err) fills it. A step that
 * is neither a row nor the end is "PATH: WHAT: MESSAGE (CODE...)". st stays the caller's. Returns 0,
 * or -1 with err set (from SQLite, out of memory, or read_row's own -1). */
typedef int (*SqlReadRow)(sqlite3_stmt *st, void *item, void *ctx, SpErr *err);
int sql_read_rows(sqlite3 *h, const char *path, sqlite3_stmt *st, const char *what, size_t item_size, void **items,
                  int *n, SqlReadRow read_row, void *ctx, SpErr *err);
/* 1 if schema ("main", "src") has table `table` / table `table` has column `col`, else 0. */
int sql_has_table(sqlite3 *h, const char *schema, const char *table);
int sql_has_column(sqlite3 *h, const char *schema, const char *table, const char *col);

#endif
