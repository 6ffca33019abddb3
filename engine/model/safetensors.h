/* safetensors.h - read-only access to Hugging Face .safetensors files, single or sharded, and a
 * streaming writer.
 *
 * File format (huggingface/safetensors): u64 little-endian N, then N bytes of JSON
 *   { "NAME": {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]}, ...,
 *     "__metadata__": {"k": "v"} }
 * then the data buffer; offsets are relative to the buffer's start.
 *
 * An StArchive owns its mmap'd files and entry table; entry data pointers borrow from the maps and
 * stay valid until st_close(). Every header field is validated before use: no offset or size from
 * the file is trusted. Read-only after opening, so safe to share across threads.
 */
#ifndef SP_SAFETENSORS_H
#define SP_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"

typedef enum {
    ST_F32,
    ST_F16,
    ST_BF16,
    ST_F64,
    ST_I64,
    ST_I32,
    ST_I16,
    ST_I8,
    ST_U8,
    ST_BOOL,
    ST_F8_E4M3,
    ST_F8_E5M2,
    ST_Q8_0, /* ggml's Q8_0 blocks (GGUF only; see dtype.h): numel values in numel / 32 blocks of 34 bytes */
} StDType;

#define ST_MAX_DIMS 8

typedef struct StEntry {
    char *name;
    StDType dtype;
    int ndim;
    int64_t shape[ST_MAX_DIMS];
    int64_t numel;
    const void *data; /* borrowed from the file map (or from `owned` if it had to be realigned) */
    size_t nbytes;
    int file_index;   /* which shard */
    void *owned;      /* non-NULL only when the stored bytes were misaligned and got copied */
} StEntry;

typedef struct StFile {
    char *path;
    void *map;
    size_t size;
} StFile;

typedef struct StArchive {
    StFile *files;
    int n_files;
    StEntry *entries; /* sorted by name */
    int n_entries;
    int gguf;         /* 1: opened from a GGUF file (gguf_open): llama.cpp's tensor names and layouts */
} StArchive;

const char *st_dtype_name(StDType t);
size_t st_dtype_size(StDType t);

/* Opens dir/model.safetensors, or the shards listed by dir/model.safetensors.index.json. */
int st_open_dir(const char *dir, StArchive *a, SpErr *err);
/* Opens one file (appends it to a, which may already hold shards). */
int st_open_file(StArchive *a, const char *path, SpErr *err);
/* Maps the input file path read-only (opened through sp_open_input; a later truncation is reported by
 * mapguard, not a silent SIGBUS): *map and *size, unmapped by the caller (mapguard_remove, munmap). A
 * file under min_size bytes is "NAME: file of N bytes is too short for a KIND header". */
int st_map_input(const char *path, size_t min_size, const char *kind, void **map, size_t *size, SpErr *err);
void st_close(StArchive *a);
/* 1 when p points into one of the archive's file maps (not into a realigned copy). */
int st_is_mapped(const StArchive *a, const void *p);
/* Binary search by exact name; NULL if absent. */
const StEntry *st_find(const StArchive *a, const char *name);
/* The file an entry lives in (for error messages): the basename. */
const char *st_entry_file(const StArchive *a, const StEntry *e);

/* ---- writer ---- */
typedef struct StWriteSpec {
    const char *name;
    StDType dtype;
    int ndim;
    int64_t shape[ST_MAX_DIMS];
} StWriteSpec;

/* Produces the bytes of tensor i (nbytes = numel * dtype size) into buf. */
typedef int (*StFillFn)(void *ctx, int i, void *buf, size_t nbytes, SpErr *err);

/* Writes path atomically (path.tmp then rename): header for specs[0..n) in the given order, padded
 * to 8 bytes, optional metadata (NULL-terminated key/value pairs), then each tensor's data
 * produced by fill() one tensor at a time (so peak memory is one tensor). */
int st_write_file(const char *path, const StWriteSpec *specs, int n, const char *const *metadata,
                  StFillFn fill, void *ctx, SpErr *err);

#endif
