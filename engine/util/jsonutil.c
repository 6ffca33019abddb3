#include "jsonutil.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

char *sp_read_file(const char *path, size_t max_bytes, size_t *len, SpErr *err) {
    FILE *f = sp_fopen_input(path, err);
    if (!f) return NULL;
    char *buf = NULL;
    size_t cap = 0, n = 0;
    for (;;) {
        if (n == cap) {
            size_t ncap = cap ? cap * 2 : 65536;
            if (cap >= max_bytes + 1) {
                sp_fail(err, "%s: larger than the limit of %zu bytes", path, max_bytes);
                goto fail;
            }
            char *nb = realloc(buf, ncap + 1);
            if (!nb) {
                sp_fail(err, "%s: out of memory reading file", path);
                goto fail;
            }
            buf = nb;
            cap = ncap;
        }
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0) break;
        if (n > max_bytes) {
            sp_fail(err, "%s: larger than the limit of %zu bytes", path, max_bytes);
            goto fail;
        }
    }
    if (ferror(f)) {
        sp_fail(err, "%s: read error: %s", path, strerror(errno ? errno : EIO));
        goto fail;
    }
    fclose(f);
    if (!buf) buf = malloc(1);
    if (!buf) {
        sp_fail(err, "%s: out of memory", path);
        return NULL;
    }
    buf[n] = '\0';
    if (len) *len = n;
    return buf;
fail:
    fclose(f);
    free(buf);
    return NULL;
}

/* The deepest nesting of arrays and objects in text[0..n) (strings skipped). */
static int json_depth(const char *text, size_t n) {
    int depth = 0, deepest = 0, in_string = 0;
    for (size_t i = 0; i < n; i++) {
        char c = text[i];
        if (in_string) {
            if (c == '\\') i++;
            else if (c == '"') in_string = 0;
        } else if (c == '"') {
            in_string = 1;
        } else if (c == '[' || c == '{') {
            if (++depth > deepest) deepest = depth;
        } else if (c == ']' || c == '}') {
            depth--;
        }
    }
    return deepest;
}

/* The byte offset of the first \\u0000 escape inside a string of text[0..n), or n when none: cJSON
 * decodes it into a NUL, and every C string would silently end there. */
static size_t json_nul_escape(const char *text, size_t n) {
    int in_string = 0;
    for (size_t i = 0; i < n; i++) {
        char c = text[i];
        if (in_string) {
            if (c == '\\') {
                if (i + 5 < n && text[i + 1] == 'u' && !strncmp(text + i + 2, "0000", 4)) return i;
                i++;
            } else if (c == '"') {
                in_string = 0;
            }
        } else if (c == '"') {
            in_string = 1;
        }
    }
    return n;
}

cJSON *sp_json_parse(const char *path, const char *text, size_t n, SpErr *err) {
    size_t nul = json_nul_escape(text, n);
    if (nul < n) {
        size_t line = 1;
        for (size_t i = 0; i < nul; i++) line += text[i] == '\n';
        sp_fail(err, "%s: line %zu (byte %zu): a string holds \\u0000 (NUL), which would cut the text there", path, line,
                nul);
        return NULL;
    }
    const char *end = NULL;
    /* n + 1 includes the NUL, so content after the value is rejected */
    cJSON *j = cJSON_ParseWithLengthOpts(text, n + 1, &end, 1);
    if (j) return j;
    int depth = json_depth(text, n);
    if (depth > CJSON_NESTING_LIMIT) {
        sp_fail(err, "%s: JSON nested %d levels deep; the parser's limit is %d", path, depth, CJSON_NESTING_LIMIT);
        return NULL;
    }
    size_t at = end && end >= text && end <= text + n ? (size_t)(end - text) : n, line = 1;
    for (size_t i = 0; i < at; i++) line += text[i] == '\n';
    sp_fail(err, "%s: malformed JSON at line %zu (byte %zu)", path, line, at);
    return NULL;
}

cJSON *sp_json_load(const char *path, size_t max_bytes, SpErr *err) {
    size_t n = 0;
    char *text = sp_read_file(path, max_bytes, &n, err);
    if (!text) return NULL;
    cJSON *j = sp_json_parse(path, text, n, err);
    free(text);
    return j;
}

static const cJSON *field(const cJSON *obj, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    return (v && !cJSON_IsNull(v)) ? v : NULL;
}

int sp_json_int(const cJSON *obj, const char *file, const char *key, long long lo, long long hi,
                int def_ok, long long def, long long *out, SpErr *err) {
    const cJSON *v = field(obj, key);
    if (!v) {
        if (def_ok) {
            *out = def;
            return 0;
        }
        return sp_fail(err, "%s: missing required key \"%s\"", file, key);
    }
    if (!cJSON_IsNumber(v)) return sp_fail(err, "%s: key \"%s\" must be an integer", file, key);
    double d = v->valuedouble;
    if (!isfinite(d) || d != floor(d))
        return sp_fail(err, "%s: key \"%s\" must be an integer, got %g", file, key, d);
    if (d < (double)lo || d > (double)hi)
        return sp_fail(err, "%s: key \"%s\" = %.0f out of range [%lld, %lld]", file, key, d, lo, hi);
    *out = (long long)d;
    return 0;
}

int sp_json_float(const cJSON *obj, const char *file, const char *key, double lo, double hi,
                  int def_ok, double def, double *out, SpErr *err) {
    const cJSON *v = field(obj, key);
    if (!v) {
        if (def_ok) {
            *out = def;
            return 0;
        }
        return sp_fail(err, "%s: missing required key \"%s\"", file, key);
    }
    if (!cJSON_IsNumber(v)) return sp_fail(err, "%s: key \"%s\" must be a number", file, key);
    double d = v->valuedouble;
    if (!isfinite(d) || d < lo || d > hi)
        return sp_fail(err, "%s: key \"%s\" = %g out of range [%g, %g]", file, key, d, lo, hi);
    *out = d;
    return 0;
}

int sp_json_bool(const cJSON *obj, const char *file, const char *key, int def_ok, int def, int *out,
                 SpErr *err) {
    const cJSON *v = field(obj, key);
    if (!v) {
        if (def_ok) {
            *out = def;
            return 0;
        }
        return sp_fail(err, "%s: missing required key \"%s\"", file, key);
    }
    if (!cJSON_IsBool(v)) return sp_fail(err, "%s: key \"%s\" must be true or false", file, key);
    *out = cJSON_IsTrue(v);
    return 0;
}

int sp_json_str(const cJSON *obj, const char *file, const char *key, int def_ok, const char **out,
                SpErr *err) {
    const cJSON *v = field(obj, key);
    if (!v) {
        if (def_ok) {
            *out = NULL;
            return 0;
        }
        return sp_fail(err, "%s: missing required key \"%s\"", file, key);
    }
    if (!cJSON_IsString(v)) return sp_fail(err, "%s: key \"%s\" must be a string", file, key);
    *out = v->valuestring;
    return 0;
}

int sp_path_join(char *buf, size_t cap, const char *dir, const char *name, SpErr *err) {
    int k = snprintf(buf, cap, "%s/%s", dir, name);
    if (k < 0 || (size_t)k >= cap) return sp_fail(err, "%s/%s: path too long", dir, name);
    return 0;
}

