/* h5util.h - small helpers over the HDF5 C API for append-only, chunked, deflate-compressed
 * datasets (the per-token logs and verifier training data), and for reading them back.
 *
 * An H5Table is a set of columns that grow together: each column is a dataset of shape
 * [N] or [N, width] with an unlimited first dimension. Rows are appended in batches.
 * Files are written to "<path>.tmp" and renamed to <path> by h5t_commit(), so a reader never
 * sees a half-written file. HDF5's automatic error printing is turned off; errors come back as
 * SpErr with the file and dataset named. Not thread-safe (HDF5 serial build).
 */
#ifndef SP_H5UTIL_H
#define SP_H5UTIL_H

#include <hdf5.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

typedef enum { H5C_F32, H5C_F64, H5C_I32, H5C_I64, H5C_I8 } H5ColType;

typedef struct H5ColSpec {
    const char *name;  /* dataset name at the file root */
    H5ColType type;
    int width;         /* 1 for [N]; > 1 for [N, width] */
    const char *units; /* stored as the "units" attribute (may be NULL) */
    const char *doc;   /* stored as the "description" attribute (may be NULL) */
} H5ColSpec;

typedef struct H5Table {
    hid_t file;
    char path[4096], tmp[4200];
    int n_cols;
    hid_t *dsets;
    H5ColSpec *cols;
    int64_t rows;
} H5Table;

/* Creates path.tmp with the given columns (chunk_rows rows per chunk, deflate level 4). */
int h5t_create(H5Table *t, const char *path, const H5ColSpec *cols, int n_cols, int chunk_rows, SpErr *err);
/* Appends n rows; data[c] points at n * width values of column c's type. */
int h5t_append(H5Table *t, int64_t n, const void *const *data, SpErr *err);
/* String / number attributes on the file root. */
int h5t_attr_str(H5Table *t, const char *name, const char *value, SpErr *err);
int h5t_attr_f64(H5Table *t, const char *name, double value, SpErr *err);
int h5t_attr_i64(H5Table *t, const char *name, int64_t value, SpErr *err);
/* Flushes, closes and renames path.tmp -> path. */
int h5t_commit(H5Table *t, SpErr *err);
/* Closes and deletes path.tmp (on error or interruption). */
void h5t_abort(H5Table *t);

/* ---- reading ---- */
/* Reads a whole dataset as type `type` into a malloc'd buffer: *rows x *width values. */
int h5_read_column(hid_t file, const char *path_for_errors, const char *name, H5ColType type, void **out,
                   int64_t *rows, int *width, SpErr *err);
int h5_read_attr_f64(hid_t file, const char *path_for_errors, const char *name, double *out, SpErr *err);
/* Reads a string attribute into buf (truncated to cap-1). */
int h5_read_attr_str(hid_t file, const char *path_for_errors, const char *name, char *buf, size_t cap, SpErr *err);
/* Opens read-only with errors silenced; returns a negative hid on failure (err filled). */
hid_t h5_open_read(const char *path, SpErr *err);

/* ---- reading untrusted files in a checked child ----
 * libhdf5 can crash (SIGFPE, SIGSEGV, a sanitizer abort) on damaged bytes, and no signal guard can
 * leave its global state usable afterwards. h5_checked runs fn in a forked child that only reads:
 * fn returns 0 and a malloc'd blob (*blob, *len), or -1 with err; the child sends either back over
 * a pipe and _exits (no atexit handler, no stdio flush, the parent's open HDF5 files untouched).
 * The parent gets the blob (malloc'd, the caller frees it) or the child's error; a child killed by
 * a signal, or one that exited without an answer, is the one-line error
 * "PATH: HDF5 crashed reading it (signal N): the file is damaged"; a child that has not answered within
 * SPRINTER_H5_READ_TIMEOUT seconds (default 600) is killed, and the error says so. The child's stderr
 * is /dev/null (a contained crash's report would otherwise reach the caller's); SPRINTER_H5_CHILD_STDERR=1
 * keeps it, to see what a child died of. In sanitized builds the child's address space may grow by at
 * most 448 MB (records/h5util.c, cap_sanitized_child_growth). */
typedef int (*H5CheckedFn)(void *arg, void **blob, size_t *len, SpErr *err);
int h5_checked(const char *path, H5CheckedFn fn, void *arg, void **blob, size_t *len, SpErr *err);

/* A checked pass over a file that an in-process reader then reads (readers whose reads are interleaved
 * with other work, e.g. the verifier's collect files): in a checked child, opens path and reads every
 * listed root attribute that exists and every listed dataset that exists, all of it, as the given type,
 * exactly as the reader will. Errors that are not crashes are left to the in-process reader (it reports
 * them in its own words); 0 when the child came through, else h5_checked's one-line crash error.
 * (A file replaced between the pass and the read is not covered: the inputs are not being written.) */
typedef struct H5Probe {
    const char *name;
    H5ColType type;
} H5Probe;
int h5_checked_probe(const char *path, const char *const *attrs, int n_attrs, const H5Probe *dsets, int n_dsets,
                     SpErr *err);

#endif
