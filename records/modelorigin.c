/* modelorigin.c - see modelorigin.h. */
#include "modelorigin.h"

#include "fsutil.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

/* A safetensors header is u64 n, then n bytes of JSON; random-init files keep it small, and a
 * header this long belongs to a checkpoint too big to be one (their metadata comes first anyway). */
#define HEADER_MAX ((uint64_t)64 << 20)

/* ------------------------------------------------------------------ the weights' dtype */

#define MAX_KINDS 16

/* Tensor counts per storage type: matrices (ndim >= 2) and all tensors. */
typedef struct DtypeTally {
    char name[MAX_KINDS][24];
    long matrices[MAX_KINDS], all[MAX_KINDS];
    int n;
} DtypeTally;

static void tally_add(DtypeTally *t, const char *name, int ndim) {
    int k = 0;
    while (k < t->n && strcmp(t->name[k], name)) k++;
    if (k == t->n) {
        if (t->n == MAX_KINDS) return;
        snprintf(t->name[k], sizeof t->name[k], "%s", name);
        t->matrices[k] = t->all[k] = 0;
        t->n++;
    }
    t->matrices[k] += ndim >= 2;
    t->all[k]++;
}

/* "t" when one type, else "mixed: N1 t1, N2 t2" most common first (ties in order of appearance). */
static void tally_format(const DtypeTally *t, char *buf, size_t cap) {
    long total = 0;
    for (int k = 0; k < t->n; k++) total += t->matrices[k];
    const long *cnt = total ? t->matrices : t->all;
    int order[MAX_KINDS], m = 0;
    for (int k = 0; k < t->n; k++)
        if (cnt[k]) order[m++] = k;
    for (int i = 1; i < m; i++) /* insertion sort, count descending, stable */
        for (int j = i; j > 0 && cnt[order[j]] > cnt[order[j - 1]]; j--) {
            int x = order[j];
            order[j] = order[j - 1], order[j - 1] = x;
        }
    if (m == 1) {
        snprintf(buf, cap, "%s", t->name[order[0]]);
        return;
    }
    size_t at = (size_t)snprintf(buf, cap, "mixed:");
    for (int i = 0; i < m && at < cap; i++)
        at += (size_t)snprintf(buf + at, cap - at, "%s %ld %s", i ? "," : "", cnt[order[i]], t->name[order[i]]);
}

/* model.safetensors' header JSON (malloc'd, NUL-terminated), or NULL. */
static char *st_header(const char *dir) {
    char path[4200];
    if (snprintf(path, sizeof path, "%s/model.safetensors", dir) >= (int)sizeof path) return NULL;
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    unsigned char len8[8];
    uint64_t n = 0;
    char *h = NULL;
    if (fread(len8, 1, 8, f) == 8) {
        for (int i = 7; i >= 0; i--) n = n << 8 | len8[i]; /* little-endian */
        if (n > 0 && n <= HEADER_MAX && (h = malloc((size_t)n + 1)) && fread(h, 1, (size_t)n, f) == (size_t)n) {
            h[n] = '\0';
        } else {
            free(h);
            h = NULL;
        }
    }
    fclose(f);
    return h;
}

/* Each tensor object {"dtype": "F32", "shape": [a, b], "data_offsets": [..]} of a safetensors
 * header (no nested objects: shape and offsets are arrays) tallied by lower-cased dtype and rank. */
static int st_tally(const char *h, DtypeTally *t) {
    for (const char *k = strstr(h, "\"dtype\""); k; k = strstr(k + 1, "\"dtype\"")) {
        const char *open = k, *close = strchr(k, '}');
        while (open > h && *open != '{') open--;
        const char *v = k + 7;
        while (*v == ' ' || *v == ':' || *v == '\t' || *v == '\n' || *v == '\r') v++;
        if (*v != '"' || !close) return -1;
        char name[24];
        size_t n = 0;
        for (v++; *v && *v != '"' && n + 1 < sizeof name; v++) name[n++] = (char)(*v >= 'A' && *v <= 'Z' ? *v - 'A' + 'a' : *v);
        name[n] = '\0';
        int ndim = 0;
        const char *s = strstr(open, "\"shape\"");
        if (s && s < close && (s = strchr(s, '[')) && s < close) {
            const char *end = strchr(s, ']');
            for (const char *c = s + 1; end && c < end; c++)
                if (*c >= '0' && *c <= '9') {
                    ndim++;
                    while (c + 1 < end && *(c + 1) >= '0' && *(c + 1) <= '9') c++;
                }
        }
        tally_add(t, name, ndim);
    }
    return t->n ? 0 : -1;
}

/* A GGUF reader of the header, metadata (skipped) and tensor infos only (the format: gguf.h; records
 * links no model code, so it does not use gguf_open). */
static int rd(FILE *f, void *dst, size_t n) { return fread(dst, 1, n, f) == n ? 0 : -1; }
static int skip_bytes(FILE *f, uint64_t n) { return n > ((uint64_t)1 << 40) || fseeko(f, (off_t)n, SEEK_CUR) ? -1 : 0; }

static int gguf_skip_value(FILE *f, uint32_t t, int depth) {
    static const unsigned char sz[] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8}; /* u8 i8 u16 i16 u32 i32 f32 bool str arr u64 i64 f64 */
    uint64_t n;
    if (t == 8) return rd(f, &n, 8) || skip_bytes(f, n);
    if (t == 9 && depth == 0) {
        uint32_t et;
        if (rd(f, &et, 4) || rd(f, &n, 8)) return -1;
        if (et == 8) {
            for (uint64_t i = 0; i < n; i++)
                if (gguf_skip_value(f, 8, 1)) return -1;
            return 0;
        }
        if (et >= sizeof sz || !sz[et] || n > ((uint64_t)1 << 40)) return -1;
        return skip_bytes(f, n * sz[et]);
    }
    return t < sizeof sz && sz[t] ? skip_bytes(f, sz[t]) : -1;
}

static int gguf_tally(FILE *f, DtypeTally *t) {
    char magic[4];
    uint32_t version;
    uint64_t n_tensors, n_kv;
    if (rd(f, magic, 4) || memcmp(magic, "GGUF", 4) || rd(f, &version, 4) || (version != 2 && version != 3) ||
        rd(f, &n_tensors, 8) || rd(f, &n_kv, 8) || n_tensors > ((uint64_t)1 << 20))
        return -1;
    for (uint64_t i = 0; i < n_kv; i++) {
        uint32_t type;
        if (gguf_skip_value(f, 8, 1) || rd(f, &type, 4) || gguf_skip_value(f, type, 0)) return -1;
    }
    for (uint64_t i = 0; i < n_tensors; i++) {
        uint32_t nd, type;
        uint64_t ne[4], off;
        if (gguf_skip_value(f, 8, 1) || rd(f, &nd, 4) || nd < 1 || nd > 4 || rd(f, ne, 8 * (size_t)nd) ||
            rd(f, &type, 4) || rd(f, &off, 8))
            return -1;
        char name[24];
        if (type == 0) snprintf(name, sizeof name, "f32");
        else if (type == 1) snprintf(name, sizeof name, "f16");
        else if (type == 8) snprintf(name, sizeof name, "q8_0");
        else if (type == 30) snprintf(name, sizeof name, "bf16");
        else snprintf(name, sizeof name, "ggml type %u", type);
        tally_add(t, name, (int)nd);
    }
    return t->n ? 0 : -1;
}

int model_weights_dtype(const char *dir, char *buf, size_t cap) {
    DtypeTally t = {.n = 0};
    char path[4200];
    int rc = -1;
    if (cap) buf[0] = '\0';
    int alone = sp_is_gguf_file(dir); /* a GGUF file alone: its own tensor infos */
    if ((alone ? snprintf(path, sizeof path, "%s", dir) : snprintf(path, sizeof path, "%s/model.gguf", dir)) >= (int)sizeof path)
        return -1;
    FILE *f = fopen(path, "rb");
    if (f) {
        rc = gguf_tally(f, &t);
        fclose(f);
    } else {
        char *h = st_header(dir);
        if (h) rc = st_tally(h, &t);
        free(h);
    }
    if (rc == 0 && cap) tally_format(&t, buf, cap);
    return rc;
}

ModelOrigin model_origin(const char *dir, unsigned long long *seed) {
    if (sp_is_gguf_file(dir)) return ORIGIN_GGUF_FILE;
    char *h = st_header(dir);
    if (!h) return ORIGIN_UNKNOWN;
    ModelOrigin o = ORIGIN_CHECKPOINT;
    const char *k = strstr(h, "\"" SP_INIT_SEED_KEY "\"");
    if (k) { /* "sprinter_init_seed": "123" */
        k += strlen(SP_INIT_SEED_KEY) + 2;
        while (*k == ' ' || *k == ':' || *k == '"') k++;
        if (seed) *seed = strtoull(k, NULL, 10);
        o = ORIGIN_RANDOM_INIT;
    }
    free(h);
    return o;
}
