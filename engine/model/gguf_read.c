/* gguf_read.c - a GGUF v2/v3 file opened as an StArchive (see gguf.h): the header, metadata and
 * tensor infos validated against the file's size before anything is used; tensors of type F32, F16,
 * BF16 and Q8_0 become entries under their GGUF names, shapes in row-major order (ne reversed), data
 * borrowed from the file map. */
#include "gguf.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "fsutil.h"
#include "mapguard.h"
#include "safetensors.h"

#define GGUF_DEFAULT_ALIGN 32
#define GGUF_MAX_DIMS 4
#define GGUF_MAX_TENSORS ((uint64_t)1 << 20)

/* A bounds-checked reading cursor over the mapped file. */
typedef struct Cur {
    const unsigned char *p;
    size_t at, size;
    const char *fname;
    SpErr *err;
} Cur;

static int need(Cur *c, size_t n, const char *what) {
    if (n > c->size - c->at)
        return sp_fail(c->err, "%s: %s at byte %zu runs past the end of the file (%zu bytes)", c->fname, what, c->at,
                       c->size);
    return 0;
}
static int rd(Cur *c, void *dst, size_t n, const char *what) {
    if (need(c, n, what)) return -1;
    memcpy(dst, c->p + c->at, n);
    c->at += n;
    return 0;
}
static int skip(Cur *c, uint64_t n, const char *what) {
    if (n > c->size - c->at) return need(c, (size_t)-1, what);
    c->at += (size_t)n;
    return 0;
}
/* A string: u64 length + bytes; *s points into the map (not NUL-terminated). */
static int rd_str(Cur *c, const char **s, uint64_t *len, const char *what) {
    if (rd(c, len, 8, what) || need(c, *len > c->size ? c->size + 1 : (size_t)*len, what)) return -1;
    *s = (const char *)c->p + c->at;
    c->at += (size_t)*len;
    return 0;
}

static size_t scalar_size(uint32_t t) {
    static const size_t sz[] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
    return t < sizeof sz / sizeof *sz ? sz[t] : 0;
}

/* One metadata value of type t (arrays one level deep, as GGUF allows); general.alignment read. When
 * kv is not NULL, the value's place in the map is recorded there (kv->val, arr_type, arr_n). */
static int skip_value(Cur *c, uint32_t t, const char *key, uint64_t keylen, size_t *align, GgufKv *kv) {
    if (kv) kv->type = t, kv->val = c->p + c->at;
    if (t == GGUF_T_STRING) {
        const char *s;
        uint64_t n;
        return rd_str(c, &s, &n, "a metadata string");
    }
    if (t == GGUF_T_ARRAY) {
        uint32_t et;
        uint64_t n;
        if (rd(c, &et, 4, "an array type") || rd(c, &n, 8, "an array length")) return -1;
        if (kv) kv->arr_type = et, kv->arr_n = n, kv->val = c->p + c->at;
        if (et == GGUF_T_STRING) {
            for (uint64_t i = 0; i < n; i++)
                if (skip_value(c, GGUF_T_STRING, NULL, 0, NULL, NULL)) return -1;
            return 0;
        }
        size_t es = scalar_size(et);
        if (!es) return sp_fail(c->err, "%s: metadata %.*s: array of unknown type %u", c->fname, (int)keylen, key, et);
        if (n > (c->size - c->at) / es) return need(c, (size_t)-1, "a metadata array");
        return skip(c, n * es, "a metadata array");
    }
    size_t es = scalar_size(t);
    if (!es) return sp_fail(c->err, "%s: metadata %.*s: unknown value type %u", c->fname, (int)keylen, key, t);
    if (align && keylen == 17 && !memcmp(key, "general.alignment", 17)) {
        uint32_t v;
        if (t != GGUF_T_U32) return sp_fail(c->err, "%s: general.alignment is not a u32", c->fname);
        if (rd(c, &v, 4, "general.alignment")) return -1;
        if (v == 0 || (v & (v - 1))) return sp_fail(c->err, "%s: general.alignment %u is not a power of two", c->fname, v);
        *align = v;
        return 0;
    }
    return skip(c, es, "a metadata value");
}

/* The n_kv metadata pairs after the header; recorded into kvs[0..n_kv) when kvs is not NULL. */
static int read_kvs(Cur *c, uint64_t n_kv, size_t *align, GgufKv *kvs) {
    for (uint64_t i = 0; i < n_kv; i++) {
        const char *key;
        uint64_t keylen;
        uint32_t t;
        if (rd_str(c, &key, &keylen, "a metadata key") || rd(c, &t, 4, "a metadata type")) return -1;
        GgufKv *kv = kvs ? &kvs[i] : NULL;
        if (kv) kv->key = key, kv->keylen = (size_t)keylen;
        if (skip_value(c, t, key, keylen, align, kv)) return -1;
    }
    return 0;
}

static int cmp_entry(const void *a, const void *b) {
    return strcmp(((const StEntry *)a)->name, ((const StEntry *)b)->name);
}

/* Parses the mapped file into a->entries (a->files already holds the map). */
static int parse(StArchive *a, Cur *c) {
    char magic[4];
    uint32_t version;
    uint64_t n_tensors, n_kv;
    if (rd(c, magic, 4, "the magic") || memcmp(magic, "GGUF", 4))
        return sp_fail(c->err, "%s: not a GGUF file (magic is not \"GGUF\")", c->fname);
    if (rd(c, &version, 4, "the version")) return -1;
    if (version != 2 && version != 3)
        return sp_fail(c->err, "%s: GGUF version %u; supported: 2, 3", c->fname, version);
    if (rd(c, &n_tensors, 8, "the tensor count") || rd(c, &n_kv, 8, "the metadata count")) return -1;
    if (n_tensors > GGUF_MAX_TENSORS) return sp_fail(c->err, "%s: %llu tensors is implausible", c->fname, (unsigned long long)n_tensors);
    size_t align = GGUF_DEFAULT_ALIGN;
    if (read_kvs(c, n_kv, &align, NULL)) return -1;
    /* a tensor info takes at least 32 bytes (name length, one dimension, type, offset): no table is
     * allocated for more tensors than the rest of the file can describe */
    if (n_tensors > (c->size - c->at) / 32)
        return sp_fail(c->err, "%s: %llu tensor infos cannot fit in the %zu bytes after the metadata", c->fname,
                       (unsigned long long)n_tensors, c->size - c->at);
    a->entries = calloc((size_t)n_tensors + 1, sizeof *a->entries);
    if (!a->entries) return sp_fail(c->err, "out of memory");
    uint64_t *offsets = calloc((size_t)n_tensors + 1, sizeof *offsets);
    if (!offsets) return sp_fail(c->err, "out of memory");
    int rc = 0;
    for (uint64_t i = 0; rc == 0 && i < n_tensors; i++) {
        const char *name;
        uint64_t len, ne[GGUF_MAX_DIMS];
        uint32_t nd, type;
        if (rd_str(c, &name, &len, "a tensor name") || rd(c, &nd, 4, "a tensor's dimension count")) {
            rc = -1;
            break;
        }
        if (nd < 1 || nd > GGUF_MAX_DIMS) {
            rc = sp_fail(c->err, "%s: tensor %.*s has %u dimensions (1-%d expected)", c->fname, (int)len, name, nd, GGUF_MAX_DIMS);
            break;
        }
        if (rd(c, ne, 8 * (size_t)nd, "a tensor's shape") || rd(c, &type, 4, "a tensor's type") ||
            rd(c, &offsets[i], 8, "a tensor's offset")) {
            rc = -1;
            break;
        }
        StEntry *e = &a->entries[a->n_entries++];
        if (!(e->name = strndup(name, (size_t)len))) {
            rc = sp_fail(c->err, "out of memory");
            break;
        }
        e->ndim = (int)nd;
        e->numel = 1;
        for (uint32_t d = 0; d < nd; d++) {
            if (ne[d] == 0 || ne[d] > ((uint64_t)1 << 40) || (uint64_t)e->numel > (((uint64_t)1 << 40) / ne[d])) {
                rc = sp_fail(c->err, "%s: tensor %s: dimension %u of %llu is out of range", c->fname, e->name, d,
                             (unsigned long long)ne[d]);
                break;
            }
            e->shape[nd - 1 - d] = (int64_t)ne[d]; /* ne[0] is the contiguous (last row-major) axis */
            e->numel *= (int64_t)ne[d];
        }
        if (rc) break;
        if (type == GGML_T_F32) e->dtype = ST_F32;
        else if (type == GGML_T_F16) e->dtype = ST_F16;
        else if (type == GGML_T_BF16) e->dtype = ST_BF16;
        else if (type == GGML_T_Q8_0) e->dtype = ST_Q8_0;
        else {
            rc = sp_fail(c->err, "%s: tensor %s has ggml type %u; supported: F32 (0), F16 (1), Q8_0 (8), BF16 (30)", c->fname,
                         e->name, type);
            break;
        }
        if (e->dtype == ST_Q8_0 && ne[0] % Q8_0_BLOCK) {
            rc = sp_fail(c->err, "%s: tensor %s: Q8_0 rows of %llu values are not whole 32-value blocks", c->fname, e->name,
                         (unsigned long long)ne[0]);
            break;
        }
        e->nbytes = e->dtype == ST_Q8_0 ? (size_t)e->numel / Q8_0_BLOCK * sizeof(BlockQ8_0)
                                        : (size_t)e->numel * st_dtype_size(e->dtype);
    }
    size_t data = (c->at + align - 1) / align * align;
    for (int i = 0; rc == 0 && i < a->n_entries; i++) {
        StEntry *e = &a->entries[i];
        if (offsets[i] % align)
            rc = sp_fail(c->err, "%s: tensor %s: offset %llu is not a multiple of the alignment %zu", c->fname, e->name,
                         (unsigned long long)offsets[i], align);
        else if (data > c->size || offsets[i] > c->size - data || e->nbytes > c->size - data - offsets[i])
            rc = sp_fail(c->err, "%s: tensor %s: %zu bytes at offset %llu run past the end of the file (%zu bytes)", c->fname,
                         e->name, e->nbytes, (unsigned long long)offsets[i], c->size);
        else if ((data + offsets[i]) % (e->dtype == ST_Q8_0 ? _Alignof(BlockQ8_0) : st_dtype_size(e->dtype)))
            /* the map is page-aligned; a general.alignment of 1 or 2 can leave a tensor's values
             * misaligned for their type, which every reader of an entry assumes they are not */
            rc = sp_fail(c->err, "%s: tensor %s: data at byte %zu is not aligned for its type %s (general.alignment %zu)",
                         c->fname, e->name, data + (size_t)offsets[i], st_dtype_name(e->dtype), align);
        else
            e->data = c->p + data + offsets[i];
    }
    free(offsets);
    if (rc) return rc;
    qsort(a->entries, (size_t)a->n_entries, sizeof *a->entries, cmp_entry);
    for (int i = 1; i < a->n_entries; i++)
        if (!strcmp(a->entries[i - 1].name, a->entries[i].name))
            return sp_fail(c->err, "%s: tensor %s is defined twice", c->fname, a->entries[i].name);
    return 0;
}

int gguf_open(const char *path, StArchive *a, SpErr *err) {
    memset(a, 0, sizeof *a);
    const char *fname = path; /* messages name the file as it was given (dir/model.gguf, or a file alone) */
    void *map;
    size_t size;
    if (st_map_input(path, 24, "GGUF", &map, &size, err)) return -1;
    a->files = calloc(1, sizeof *a->files);
    if (!a->files || !(a->files[0].path = strdup(path))) {
        mapguard_remove(map);
        munmap(map, size);
        free(a->files);
        a->files = NULL;
        return sp_fail(err, "out of memory");
    }
    a->files[0].map = map, a->files[0].size = size;
    a->n_files = 1;
    a->gguf = 1;
    Cur c = {map, 0, size, fname, err};
    if (parse(a, &c)) {
        st_close(a);
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------------ metadata */

int gguf_meta_read(const StArchive *a, GgufMeta *m, SpErr *err) {
    memset(m, 0, sizeof *m);
    if (!a->gguf || a->n_files != 1) return sp_fail(err, "gguf_meta_read: not an archive of one GGUF file");
    const char *path = a->files[0].path;
    m->file = path; /* as gguf_open names it */
    Cur c = {a->files[0].map, 8, a->files[0].size, m->file, err}; /* past the magic and the version */
    uint64_t n_tensors, n_kv;
    size_t align = GGUF_DEFAULT_ALIGN;
    if (rd(&c, &n_tensors, 8, "the tensor count") || rd(&c, &n_kv, 8, "the metadata count")) return -1;
    /* a pair takes at least 12 bytes (key length, type) */
    if (n_kv > c.size / 12) return sp_fail(err, "%s: %llu metadata pairs cannot fit in the file", m->file, (unsigned long long)n_kv);
    if (!(m->kv = calloc((size_t)n_kv + 1, sizeof *m->kv))) return sp_fail(err, "out of memory");
    if (read_kvs(&c, n_kv, &align, m->kv)) {
        gguf_meta_free(m);
        return -1;
    }
    m->n = (int)n_kv;
    return 0;
}

void gguf_meta_free(GgufMeta *m) {
    free(m->kv);
    m->kv = NULL, m->n = 0;
}

const GgufKv *gguf_meta_find(const GgufMeta *m, const char *key) {
    size_t n = strlen(key);
    for (int i = 0; i < m->n; i++)
        if (m->kv[i].keylen == n && !memcmp(m->kv[i].key, key, n)) return &m->kv[i];
    return NULL;
}

static const char *const kTypeName[] = {"u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "string", "array", "u64", "i64", "f64"};
static const char *type_name(uint32_t t) { return t < sizeof kTypeName / sizeof *kTypeName ? kTypeName[t] : "unknown"; }

/* The integer of type t at p; 0 when t is not an integer type. */
static int int_value(uint32_t t, const unsigned char *p, int64_t *v) {
    uint8_t u8; int8_t i8; uint16_t u16; int16_t i16; uint32_t u32; int32_t i32; uint64_t u64; int64_t i64;
    switch (t) {
    case GGUF_T_U8: memcpy(&u8, p, 1), *v = u8; return 1;
    case GGUF_T_I8: memcpy(&i8, p, 1), *v = i8; return 1;
    case GGUF_T_U16: memcpy(&u16, p, 2), *v = u16; return 1;
    case GGUF_T_I16: memcpy(&i16, p, 2), *v = i16; return 1;
    case GGUF_T_U32: memcpy(&u32, p, 4), *v = u32; return 1;
    case GGUF_T_I32: memcpy(&i32, p, 4), *v = i32; return 1;
    case GGUF_T_U64: memcpy(&u64, p, 8), *v = u64 > INT64_MAX ? INT64_MAX : (int64_t)u64; return 1;
    case GGUF_T_I64: memcpy(&i64, p, 8), *v = i64; return 1;
    default: return 0;
    }
}

/* The pair of key, or NULL: an error when required. */
static const GgufKv *lookup(const GgufMeta *m, const char *key, int required, SpErr *err) {
    const GgufKv *kv = gguf_meta_find(m, key);
    if (!kv && required) sp_fail(err, "%s: metadata key %s is missing", m->file, key);
    return kv;
}

int gguf_meta_int(const GgufMeta *m, const char *key, int required, int64_t lo, int64_t hi, int64_t *out, SpErr *err) {
    const GgufKv *kv = lookup(m, key, required, err);
    if (!kv) return required ? -1 : 0;
    int64_t v;
    if (!int_value(kv->type, kv->val, &v))
        return sp_fail(err, "%s: metadata key %s is a %s, not an integer", m->file, key, type_name(kv->type));
    if (v < lo || v > hi)
        return sp_fail(err, "%s: metadata key %s = %lld is outside [%lld, %lld]", m->file, key, (long long)v, (long long)lo,
                       (long long)hi);
    *out = v;
    return 0;
}

int gguf_meta_float(const GgufMeta *m, const char *key, int required, double lo, double hi, double *out, SpErr *err) {
    const GgufKv *kv = lookup(m, key, required, err);
    if (!kv) return required ? -1 : 0;
    double v;
    float f;
    if (kv->type == GGUF_T_F32) memcpy(&f, kv->val, 4), v = f;
    else if (kv->type == GGUF_T_F64) memcpy(&v, kv->val, 8);
    else return sp_fail(err, "%s: metadata key %s is a %s, not a float", m->file, key, type_name(kv->type));
    if (!(v >= lo && v <= hi)) return sp_fail(err, "%s: metadata key %s = %g is outside [%g, %g]", m->file, key, v, lo, hi);
    *out = v;
    return 0;
}

int gguf_meta_bool(const GgufMeta *m, const char *key, int required, int *out, SpErr *err) {
    const GgufKv *kv = lookup(m, key, required, err);
    if (!kv) return required ? -1 : 0;
    if (kv->type != GGUF_T_BOOL || kv->val[0] > 1)
        return sp_fail(err, "%s: metadata key %s is not a bool (type %s)", m->file, key, type_name(kv->type));
    *out = kv->val[0];
    return 0;
}

int gguf_meta_str(const GgufMeta *m, const char *key, int required, const char **s, size_t *len, SpErr *err) {
    const GgufKv *kv = lookup(m, key, required, err);
    *s = NULL, *len = 0;
    if (!kv) return required ? -1 : 0;
    if (kv->type != GGUF_T_STRING) return sp_fail(err, "%s: metadata key %s is a %s, not a string", m->file, key, type_name(kv->type));
    uint64_t n;
    memcpy(&n, kv->val, 8);
    *s = (const char *)kv->val + 8, *len = (size_t)n;
    return 0;
}

int gguf_meta_array(const GgufMeta *m, const char *key, int required, uint32_t elem, const GgufKv **out, SpErr *err) {
    const GgufKv *kv = lookup(m, key, required, err);
    *out = NULL;
    if (!kv) return required ? -1 : 0;
    if (kv->type != GGUF_T_ARRAY || kv->arr_type != elem)
        return sp_fail(err, "%s: metadata key %s is not an array of %s", m->file, key, type_name(elem));
    *out = kv;
    return 0;
}

const unsigned char *gguf_next_str(const unsigned char *p, const char **s, size_t *len) {
    uint64_t n;
    memcpy(&n, p, 8);
    *s = (const char *)p + 8, *len = (size_t)n;
    return p + 8 + n;
}
