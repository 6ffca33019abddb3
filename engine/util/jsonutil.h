/* jsonutil.h - reading files and typed JSON fields with errors that name the file and the key. */
#ifndef SP_JSONUTIL_H
#define SP_JSONUTIL_H

#include <cjson/cJSON.h>
#include <stddef.h>

#include "error.h"
#include "fsutil.h" /* sp_mkdir_p, for the callers that had it from here */

/* Reads a whole file (at most max_bytes) into a NUL-terminated malloc'd buffer. */
char *sp_read_file(const char *path, size_t max_bytes, size_t *len, SpErr *err);

/* Parses path as JSON; the error names the file and the byte offset of the syntax error. */
cJSON *sp_json_load(const char *path, size_t max_bytes, SpErr *err);

/* Integer field `key` of obj, checked to lie in [lo, hi]. Missing: if def_ok, *out = def.
 * JSON null counts as missing. `file` is used in error text only. */
int sp_json_int(const cJSON *obj, const char *file, const char *key, long long lo, long long hi,
                int def_ok, long long def, long long *out, SpErr *err);
int sp_json_float(const cJSON *obj, const char *file, const char *key, double lo, double hi,
                  int def_ok, double def, double *out, SpErr *err);
int sp_json_bool(const cJSON *obj, const char *file, const char *key, int def_ok, int def, int *out,
                 SpErr *err);
/* Borrowed string (NULL with def_ok when missing). */
int sp_json_str(const cJSON *obj, const char *file, const char *key, int def_ok, const char **out,
                SpErr *err);

/* Parses text[0..n) (NUL at text[n]) as exactly one JSON value; errors name path and the line and
 * byte, or the nesting depth when it exceeds cJSON's limit. */
cJSON *sp_json_parse(const char *path, const char *text, size_t n, SpErr *err);

/* path = dir + "/" + name into buf; error if too long. */
int sp_path_join(char *buf, size_t cap, const char *dir, const char *name, SpErr *err);

#endif
