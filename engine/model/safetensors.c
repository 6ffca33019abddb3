#include "safetensors.h"

#include "fsutil.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "jsonutil.h"
#include "mapguard.h"

/* A header larger than this is refused before allocating it (real ones are well under 10 MB). */
#define ST_MAX_HEADER ((uint64_t)256 << 20)
#define ST_MAX_ENTRIES 1000000

static const struct {
    const char *name;
    StDType t;
    size_t size;
} kDTypes[] = {
    {"F32", ST_F32, 4},   {"F16", ST_F16, 2},   {"BF16", ST_BF16, 2},         {"F64", ST_F64, 8},
    {"I64", ST_I64, 8},   {"I32", ST_I32, 4},   {"I16", ST_I16, 2},           {"I8", ST_I8, 1},
    {"U8", ST_U8, 1},     {"BOOL", ST_BOOL, 1}, {"F8_E4M3", ST_F8_E4M3, 1}, {"F8_E5M2", ST_F8_E5M2, 1},
};
#define N_DTYPES (sizeof kDTypes / sizeof kDTypes[0])

const char *st_dtype_name(StDType t) {
    if (t == ST_Q8_0) return "Q8_0";
    for (size_t i = 0; i < N_DTYPES; i++)
        if (kDTypes[i].t == t) return kDTypes[i].name;
    return "?";
}

size_t st_dtype_size(StDType t) {
    for (size_t i = 0; i < N_DTYPES; i++)
        if (kDTypes[i].t == t) return kDTypes[i].size;
    return 0;
}

static int dtype_parse(const char *s, StDType *t) {
    for (size_t i = 0; i < N_DTYPES; i++)
        if (strcmp(kDTypes[i].name, s) == 0) {
            *t = kDTypes[i].t;
            return 0;
        }
    return -1;
}

static const char *base_name(const char *path) {
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

static int cmp_entry(const void *a, const void *b) {
    return strcmp(((const StEntry *)a)->name, ((const StEntry *)b)->name);
}

/* Validates one header entry against the data buffer [0, data_size) and fills e. */
static int parse_entry(const cJSON *item, const char *fname, size_t data_size, StEntry *e,
                       SpErr *err) {
    const char *name = item->string;
    const cJSON *dt = cJSON_GetObjectItemCaseSensitive(item, "dtype");
    const cJSON *sh = cJSON_GetObjectItemCaseSensitive(item, "shape");
    const cJSON *off = cJSON_GetObjectItemCaseSensitive(item, "data_offsets");
    if (!cJSON_IsObject(item)) return sp_fail(err, "%s: tensor %s: entry is not an object", fname, name);
    if (!cJSON_IsString(dt)) return sp_fail(err, "%s: tensor %s: missing dtype", fname, name);
    if (dtype_parse(dt->valuestring, &e->dtype) != 0)
        return sp_fail(err, "%s: tensor %s: unknown dtype \"%s\"", fname, name, dt->valuestring);
    if (!cJSON_IsArray(sh)) return sp_fail(err, "%s: tensor %s: missing shape", fname, name);
    int nd = cJSON_GetArraySize(sh);
    if (nd > ST_MAX_DIMS)
        return sp_fail(err, "%s: tensor %s: shape has %d dims (max %d)", fname, name, nd, ST_MAX_DIMS);
    e->ndim = nd;
    int64_t numel = 1;
    for (int i = 0; i < nd; i++) {
        const cJSON *d = cJSON_GetArrayItem(sh, i);
        if (!cJSON_IsNumber(d) || d->valuedouble < 0 || d->valuedouble > 1e15 ||
            d->valuedouble != (double)(int64_t)d->valuedouble)
            return sp_fail(err, "%s: tensor %s: shape[%d] is not a non-negative integer", fname, name, i);
        e->shape[i] = (int64_t)d->valuedouble;
        if (e->shape[i] != 0 && numel > INT64_MAX / 16 / e->shape[i])
            return sp_fail(err, "%s: tensor %s: shape overflows", fname, name);
        numel *= e->shape[i];
    }
    e->numel = numel;
    if (!cJSON_IsArray(off) || cJSON_GetArraySize(off) != 2)
        return sp_fail(err, "%s: tensor %s: data_offsets must be [begin, end]", fname, name);
    if (!cJSON_IsNumber(cJSON_GetArrayItem(off, 0)) || !cJSON_IsNumber(cJSON_GetArrayItem(off, 1)))
        return sp_fail(err, "%s: tensor %s: data_offsets must be two integers", fname, name);
    double b = cJSON_GetArrayItem(off, 0)->valuedouble, en = cJSON_GetArrayItem(off, 1)->valuedouble;
    /* range first: casting a double beyond int64_t (1e300) to an integer is undefined */
    if (!(b >= 0 && en >= b && en <= (double)data_size))
        return sp_fail(err, "%s: tensor %s: data_offsets [%.0f, %.0f] outside the data buffer of %zu bytes",
                       fname, name, b, en, data_size);
    if (b != (double)(int64_t)b || en != (double)(int64_t)en)
        return sp_fail(err, "%s: tensor %s: data_offsets [%.17g, %.17g] are not integers", fname, name, b, en);
    size_t begin = (size_t)b, end = (size_t)en;
    size_t want = (size_t)numel * st_dtype_size(e->dtype);
    if (end - begin != want)
        return sp_fail(err, "%s: tensor %s: data_offsets span %zu bytes, shape and dtype need %zu",
                       fname, name, end - begin, want);
    e->nbytes = want;
    e->data = (const void *)(uintptr_t)begin; /* made absolute by the caller */
    return 0;
}

/* A tensor's byte range in the data buffer, for the tiling check. */
typedef struct Span {
    size_t begin, end;
    const char *name;
} Span;

static int span_cmp(const void *x, const void *y) {
    const Span *a = x, *b = y;
    return a->begin < b->begin ? -1 : a->begin > b->begin ? 1 : a->end < b->end ? -1 : a->end > b->end;
}

/* The tensors must tile the data buffer exactly, as the format's reference loader requires: no two
 * overlap, no gap between them, no unused bytes before the first or after the last. Sorts spans. */
static int check_tiling(Span *spans, int n, size_t data_size, const char *fname, SpErr *err) {
    qsort(spans, (size_t)n, sizeof *spans, span_cmp);
    size_t at = 0;
    for (int i = 0; i < n; i++) {
        if (spans[i].begin < at)
            return sp_fail(err, "%s: tensors %s and %s overlap in the data buffer (bytes %zu..%zu)", fname,
                           spans[i - 1].name, spans[i].name, spans[i].begin, at);
        if (spans[i].begin > at)
            return sp_fail(err, "%s: %zu unused bytes in the data buffer before tensor %s (offset %zu)", fname,
                           spans[i].begin - at, spans[i].name, at);
        at = spans[i].end;
    }
    if (at != data_size)
        return sp_fail(err, "%s: %zu unused bytes at the end of the data buffer (tensors end at %zu of %zu)", fname,
                       data_size - at, at, data_size);
    return 0;
}

int st_map_input(const char *path, size_t min_size, const char *kind, void **map, size_t *size, SpErr *err) {
    int fd = sp_open_input(path, err);
    if (fd < 0) return -1;
    struct stat st;
    if (fstat(fd, &st) != 0) {
        close(fd);
        return sp_fail(err, "%s: cannot stat: %s", path, strerror(errno));
    }
    *size = (size_t)st.st_size;
    if (*size < min_size) {
        close(fd);
        return sp_fail(err, "%s: file of %zu bytes is too short for a %s header", base_name(path), *size, kind);
    }
    *map = mmap(NULL, *size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (*map == MAP_FAILED) return sp_fail(err, "%s: mmap failed: %s", path, strerror(errno));
    mapguard_add(*map, *size, path); /* a truncation from now on is reported, not a silent SIGBUS */
    return 0;
}

int st_open_file(StArchive *a, const char *path, SpErr *err) {
    const char *fname = base_name(path);
    void *map;
    size_t size;
    if (st_map_input(path, 8, "safetensors", &map, &size, err)) return -1;
    const unsigned char *p = map;
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--) hlen = (hlen << 8) | p[i];
    cJSON *hdr = NULL;
    StEntry *fresh = NULL;
    Span *spans = NULL; /* [count] byte ranges, for check_tiling */
    int n_fresh = 0;
    if (hlen > ST_MAX_HEADER || hlen > size - 8) {
        sp_fail(err, "%s: header length %llu exceeds the file size of %zu bytes", fname,
                (unsigned long long)hlen, size);
        goto fail;
    }
    const char *hjson = (const char *)p + 8, *hend = NULL;
    hdr = cJSON_ParseWithLengthOpts(hjson, (size_t)hlen, &hend, 0);
    if (!hdr || !cJSON_IsObject(hdr)) {
        sp_fail(err, "%s: header is not a JSON object", fname);
        goto fail;
    }
    for (const char *c = hend; c < hjson + hlen; c++) /* only padding may follow the object */
        if (*c != ' ' && *c != '\t' && *c != '\n' && *c != '\r') {
            sp_fail(err, "%s: header has data after its JSON object at byte %zu", fname, (size_t)(c - hjson) + 8);
            goto fail;
        }
    size_t data_off = 8 + (size_t)hlen, data_size = size - data_off;
    int count = cJSON_GetArraySize(hdr);
    if (count > ST_MAX_ENTRIES) {
        sp_fail(err, "%s: header lists %d tensors (limit %d)", fname, count, ST_MAX_ENTRIES);
        goto fail;
    }
    fresh = calloc((size_t)count + 1, sizeof *fresh);
    spans = calloc((size_t)count + 1, sizeof *spans);
    if (!fresh || !spans) {
        sp_fail(err, "%s: out of memory", fname);
        goto fail;
    }
    const cJSON *item;
    cJSON_ArrayForEach(item, hdr) {
        if (strcmp(item->string, "__metadata__") == 0) continue;
        StEntry *e = &fresh[n_fresh];
        if (parse_entry(item, fname, data_size, e, err) != 0) goto fail;
        e->name = strdup(item->string);
        if (!e->name) {
            sp_fail(err, "%s: out of memory", fname);
            goto fail;
        }
        n_fresh++;
        size_t begin = (size_t)(uintptr_t)e->data;
        spans[n_fresh - 1] = (Span){begin, begin + e->nbytes, e->name};
        const unsigned char *src = p + data_off + begin;
        size_t align = st_dtype_size(e->dtype);
        if (((uintptr_t)src % align) != 0) {
            /* Misaligned storage (a writer that did not pad its header): copy out once. */
            e->owned = malloc(e->nbytes ? e->nbytes : 1);
            if (!e->owned) {
                sp_fail(err, "%s: tensor %s: out of memory", fname, e->name);
                goto fail;
            }
            memcpy(e->owned, src, e->nbytes);
            src = e->owned;
        }
        e->data = src;
        e->file_index = a->n_files;
    }
    if (check_tiling(spans, n_fresh, data_size, fname, err)) goto fail;
    free(spans);
    spans = NULL;
    cJSON_Delete(hdr);
    hdr = NULL;

    /* Append the file and its entries; reject a tensor name defined twice. */
    StFile *nf = realloc(a->files, (size_t)(a->n_files + 1) * sizeof *nf);
    if (!nf) {
        sp_fail(err, "%s: out of memory", fname);
        goto fail;
    }
    a->files = nf;
    StEntry *ne = realloc(a->entries, (size_t)(a->n_entries + n_fresh + 1) * sizeof *ne);
    if (!ne) {
        sp_fail(err, "%s: out of memory", fname);
        goto fail;
    }
    a->entries = ne;
    a->files[a->n_files].path = strdup(path);
    a->files[a->n_files].map = map;
    a->files[a->n_files].size = size;
    a->n_files++;
    memcpy(a->entries + a->n_entries, fresh, (size_t)n_fresh * sizeof *fresh);
    a->n_entries += n_fresh;
    free(fresh);
    qsort(a->entries, (size_t)a->n_entries, sizeof *a->entries, cmp_entry);
    for (int i = 1; i < a->n_entries; i++)
        if (strcmp(a->entries[i - 1].name, a->entries[i].name) == 0)
            return sp_fail(err, "%s: tensor %s is defined twice", fname, a->entries[i].name);
    return 0;
fail:
    free(spans);
    cJSON_Delete(hdr);
    for (int i = 0; i < n_fresh; i++) {
        free(fresh[i].name);
        free(fresh[i].owned);
    }
    free(fresh);
    mapguard_remove(map);
    munmap(map, size);
    return -1;
}

/* dir/model.safetensors.index.json: {"weight_map": {tensor: shard file}}. Opens each shard once. */
static int open_sharded(StArchive *a, const char *dir, const char *index_path, SpErr *err) {
    cJSON *idx = sp_json_load(index_path, 64u << 20, err);
    if (!idx) return -1;
    const char *fname = "model.safetensors.index.json";
    int rc = -1;
    const cJSON *wm = cJSON_GetObjectItemCaseSensitive(idx, "weight_map");
    if (!cJSON_IsObject(wm)) {
        sp_fail(err, "%s: missing object \"weight_map\"", fname);
        goto done;
    }
    /* Collect distinct shard names in first-seen order. */
    const cJSON *item;
    cJSON_ArrayForEach(item, wm) {
        if (!cJSON_IsString(item)) {
            sp_fail(err, "%s: weight_map.%s must be a file name", fname, item->string);
            goto done;
        }
        const char *shard = item->valuestring;
        if (strchr(shard, '/') || strcmp(shard, "..") == 0 || !*shard) {
            sp_fail(err, "%s: weight_map.%s names \"%s\", not a file in the model directory", fname,
                    item->string, shard);
            goto done;
        }
        int seen = 0;
        for (int i = 0; i < a->n_files && !seen; i++) seen = strcmp(base_name(a->files[i].path), shard) == 0;
        if (seen) continue;
        char path[4096];
        if (sp_path_join(path, sizeof path, dir, shard, err) != 0) goto done;
        if (st_open_file(a, path, err) != 0) {
            sp_err_prefix(err, "%s: weight_map.%s", fname, item->string);
            goto done;
        }
    }
    /* Every mapped tensor must be present in its shard. */
    cJSON_ArrayForEach(item, wm) {
        if (!st_find(a, item->string)) {
            sp_fail(err, "%s: weight_map names tensor %s, which is not in %s", fname, item->string,
                    item->valuestring);
            goto done;
        }
    }
    rc = 0;
done:
    cJSON_Delete(idx);
    return rc;
}

int st_open_dir(const char *dir, StArchive *a, SpErr *err) {
    memset(a, 0, sizeof *a);
    char path[4096];
    if (sp_path_join(path, sizeof path, dir, "model.safetensors", err) != 0) return -1;
    int rc;
    if (access(path, F_OK) == 0) {
        rc = st_open_file(a, path, err);
    } else {
        if (sp_path_join(path, sizeof path, dir, "model.safetensors.index.json", err) != 0) return -1;
        if (access(path, F_OK) != 0)
            return sp_fail(err, "%s: no model.safetensors or model.safetensors.index.json", dir);
        rc = open_sharded(a, dir, path, err);
    }
    if (rc != 0) st_close(a);
    return rc;
}

int st_is_mapped(const StArchive *a, const void *p) {
    for (int i = 0; i < a->n_files; i++) {
        const char *m = a->files[i].map;
        if (m && (const char *)p >= m && (const char *)p < m + a->files[i].size) return 1;
    }
    return 0;
}

void st_close(StArchive *a) {
    for (int i = 0; i < a->n_entries; i++) {
        free(a->entries[i].name);
        free(a->entries[i].owned);
    }
    for (int i = 0; i < a->n_files; i++) {
        mapguard_remove(a->files[i].map);
        munmap(a->files[i].map, a->files[i].size);
        free(a->files[i].path);
    }
    free(a->entries);
    free(a->files);
    memset(a, 0, sizeof *a);
}

const StEntry *st_find(const StArchive *a, const char *name) {
    int lo = 0, hi = a->n_entries - 1;
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2;
        int c = strcmp(a->entries[mid].name, name);
        if (c == 0) return &a->entries[mid];
        if (c < 0) lo = mid + 1;
        else hi = mid - 1;
    }
    return NULL;
}

const char *st_entry_file(const StArchive *a, const StEntry *e) {
    return base_name(a->files[e->file_index].path);
}

/* ---- writer ---- */

static int64_t spec_numel(const StWriteSpec *s) {
    int64_t n = 1;
    for (int i = 0; i < s->ndim; i++) n *= s->shape[i];
    return n;
}

static int write_all(FILE *f, const void *buf, size_t n, const char *path, SpErr *err) {
    if (n && fwrite(buf, 1, n, f) != n) return sp_fail(err, "%s: write failed: %s", path, strerror(errno));
    return 0;
}

int st_write_file(const char *path, const StWriteSpec *specs, int n, const char *const *metadata,
                  StFillFn fill, void *ctx, SpErr *err) {
    cJSON *hdr = cJSON_CreateObject();
    if (!hdr) return sp_fail(err, "%s: out of memory", path);
    if (metadata && metadata[0]) {
        cJSON *md = cJSON_AddObjectToObject(hdr, "__metadata__");
        for (int i = 0; metadata[i] && metadata[i + 1]; i += 2) cJSON_AddStringToObject(md, metadata[i], metadata[i + 1]);
    }
    size_t off = 0, max_bytes = 0;
    for (int i = 0; i < n; i++) {
        size_t nb = (size_t)spec_numel(&specs[i]) * st_dtype_size(specs[i].dtype);
        cJSON *e = cJSON_AddObjectToObject(hdr, specs[i].name);
        cJSON_AddStringToObject(e, "dtype", st_dtype_name(specs[i].dtype));
        cJSON *sh = cJSON_AddArrayToObject(e, "shape");
        for (int d = 0; d < specs[i].ndim; d++) cJSON_AddItemToArray(sh, cJSON_CreateNumber((double)specs[i].shape[d]));
        cJSON *o = cJSON_AddArrayToObject(e, "data_offsets");
        cJSON_AddItemToArray(o, cJSON_CreateNumber((double)off));
        cJSON_AddItemToArray(o, cJSON_CreateNumber((double)(off + nb)));
        off += nb;
        if (nb > max_bytes) max_bytes = nb;
    }
    char *text = cJSON_PrintUnformatted(hdr);
    cJSON_Delete(hdr);
    if (!text) return sp_fail(err, "%s: out of memory", path);
    size_t hlen = strlen(text);
    size_t padded = (hlen + 7) / 8 * 8; /* keeps every tensor 8-byte aligned in an mmap */

    char tmp[4200];
    FILE *f = sp_output_fopen_tmp(path, tmp, sizeof tmp, err);
    void *buf = NULL;
    int rc = -1;
    if (!f) {
        tmp[0] = '\0'; /* nothing created: nothing to remove */
        goto done;
    }
    unsigned char le[8];
    for (int i = 0; i < 8; i++) le[i] = (unsigned char)((uint64_t)padded >> (8 * i));
    if (write_all(f, le, 8, tmp, err) || write_all(f, text, hlen, tmp, err)) goto done;
    for (size_t i = hlen; i < padded; i++)
        if (fputc(' ', f) == EOF) {
            sp_fail(err, "%s: write failed", tmp);
            goto done;
        }
    buf = malloc(max_bytes ? max_bytes : 1);
    if (!buf) {
        sp_fail(err, "%s: out of memory for a tensor of %zu bytes", path, max_bytes);
        goto done;
    }
    for (int i = 0; i < n; i++) {
        size_t nb = (size_t)spec_numel(&specs[i]) * st_dtype_size(specs[i].dtype);
        if (fill(ctx, i, buf, nb, err) != 0) goto done;
        if (write_all(f, buf, nb, tmp, err)) goto done;
    }
    if (fflush(f) != 0 || fsync(fileno(f)) != 0) {
        sp_fail(err, "%s: write failed: %s", tmp, strerror(errno));
        goto done;
    }
    if (fclose(f) != 0) {
        f = NULL;
        sp_fail(err, "%s: close failed: %s", tmp, strerror(errno));
        goto done;
    }
    f = NULL;
    if (sp_output_commit(tmp, path, err)) goto done;
    rc = 0;
done:
    if (f) fclose(f);
    if (rc != 0) sp_output_discard(tmp);
    free(buf);
    free(text);
    return rc;
}
