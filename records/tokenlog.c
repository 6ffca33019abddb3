/* tokenlog.c - per-token HDF5 logs: layout, writer and reader (see tokenlog.h). */
#include "tokenlog.h"

#include <math.h>
#include <stdlib.h>
#include <unistd.h>
#include <string.h>

#include "methods.h"

static const H5ColSpec kCols[TOKENLOG_N_COLS] = {
    {"run_id", H5C_I64, 1, NULL, "first 15 hex digits of the run hash as an integer"},
    {"prompt_index", H5C_I32, 1, NULL, "index of the prompt in the dataset file (offset included)"},
#define TOKENLOG_SPEC(field, ctype, type, units, doc) {#field, type, 1, units, doc},
    TOKENLOG_EVENT_COLUMNS(TOKENLOG_SPEC)
#undef TOKENLOG_SPEC
};

const H5ColSpec *tokenlog_columns(void) { return kCols; }

int tokenlog_n_cols(int version) {
    return version == 1 ? TOKENLOG_COL_capped : version == 2 ? TOKENLOG_COL_q_raw : TOKENLOG_N_COLS;
}

static int known_version(double v) { return v == 1 || v == 2 || v == TOKENLOG_VERSION; }

int64_t tokenlog_run_id(const char *run_hash) {
    char h[16];
    memcpy(h, run_hash, 15);
    h[15] = '\0';
    return (int64_t)strtoll(h, NULL, 16);
}

int tokenlog_create(TokenLog *l, const char *path, const TokenLogMeta *m, SpErr *err) {
    memset(l, 0, sizeof *l);
    if (h5t_create(&l->t, path, kCols, TOKENLOG_N_COLS, 4096, err)) return -1;
    l->open = 1;
    l->run_id = tokenlog_run_id(m->run_hash);
    if (h5t_attr_str(&l->t, "format", TOKENLOG_FORMAT, err) || h5t_attr_i64(&l->t, "version", TOKENLOG_VERSION, err) ||
        h5t_attr_str(&l->t, "run_hash", m->run_hash, err) || h5t_attr_str(&l->t, "method", m->method, err) ||
        h5t_attr_str(&l->t, "config", m->config, err) || h5t_attr_str(&l->t, "spec_name", m->spec_name, err) ||
        h5t_attr_str(&l->t, "spec_sha256", m->spec_sha256, err) || h5t_attr_i64(&l->t, "n_prompts", m->n_prompts, err) ||
        h5t_attr_str(&l->t, "kinds", EV_KIND_LEGEND, err)) {
        tokenlog_abort(l);
        return -1;
    }
    return 0;
}

/* Column buffers for one batch of n events: one malloc'd array per column, in file order. */
typedef struct Batch {
    int64_t *run_id;
    int32_t *prompt_index;
#define TOKENLOG_FIELD(field, ctype, type, units, doc) ctype *field;
    TOKENLOG_EVENT_COLUMNS(TOKENLOG_FIELD)
#undef TOKENLOG_FIELD
} Batch;

int tokenlog_append(TokenLog *l, int32_t prompt_index, const TokenEvent *ev, int n, SpErr *err) {
    if (n <= 0) return 0;
    size_t N = (size_t)n;
    Batch b = {.run_id = malloc(N * sizeof *b.run_id), .prompt_index = malloc(N * sizeof *b.prompt_index)};
    void *cols[TOKENLOG_N_COLS] = {b.run_id, b.prompt_index};
    int ok = b.run_id && b.prompt_index;
#define TOKENLOG_ALLOC(field, ctype, type, units, doc)                                                        \
    b.field = malloc(N * sizeof(ctype));                                                                      \
    cols[TOKENLOG_COL_##field] = b.field;                                                                     \
    ok = ok && b.field;
    TOKENLOG_EVENT_COLUMNS(TOKENLOG_ALLOC)
#undef TOKENLOG_ALLOC
    int rc;
    if (!ok) {
        rc = sp_fail(err, "%s: out of memory", l->t.tmp);
    } else {
        for (size_t i = 0; i < N; i++) b.run_id[i] = l->run_id, b.prompt_index[i] = prompt_index;
#define TOKENLOG_FILL(field, ctype, type, units, doc) \
    for (size_t i = 0; i < N; i++) b.field[i] = ev[i].field;
        TOKENLOG_EVENT_COLUMNS(TOKENLOG_FILL)
#undef TOKENLOG_FILL
        rc = h5t_append(&l->t, n, (const void *const *)cols, err);
    }
    for (int c = 0; c < TOKENLOG_N_COLS; c++) free(cols[c]);
    return rc;
}

int tokenlog_commit(TokenLog *l, SpErr *err) {
    l->open = 0;
    return h5t_commit(&l->t, err);
}

void tokenlog_abort(TokenLog *l) {
    if (l->open) h5t_abort(&l->t);
    l->open = 0;
}

/* ------------------------------------------------------------------ reading */

/* The reader's destination for column c: &t->prompt_index, &t->pos, ... (run_id is not kept). */
static void **column_dst(TokenRows *t, int c) {
    switch (c) {
    case TOKENLOG_COL_PROMPT_INDEX: return (void **)&t->prompt_index;
#define TOKENLOG_DST(field, ctype, type, units, doc) \
    case TOKENLOG_COL_##field: return (void **)&t->field;
        TOKENLOG_EVENT_COLUMNS(TOKENLOG_DST)
#undef TOKENLOG_DST
    default: return NULL;
    }
}

/* Versions 1 and 2 stored no q_raw, p_raw: NaN. */
static int missing_raw(TokenRows *t, SpErr *err, const char *path) {
    size_t n = (size_t)(t->n ? t->n : 1);
    t->q_raw = malloc(n * sizeof *t->q_raw), t->p_raw = malloc(n * sizeof *t->p_raw);
    if (!t->q_raw || !t->p_raw) return sp_fail(err, "%s: out of memory", path);
    for (int64_t i = 0; i < t->n; i++) t->q_raw[i] = t->p_raw[i] = NAN;
    t->raw_missing = 1;
    return 0;
}

/* Version 1 stored no capped column: a target-called token the verifier had accepted was capped
 * (the only way the target decides an accepted token in a sequential method); 0 for other methods. */
static int derive_capped(TokenRows *t, SpErr *err, const char *path) {
    t->capped = malloc((size_t)(t->n ? t->n : 1));
    if (!t->capped) return sp_fail(err, "%s: out of memory", path);
    int sequential = method_name_is(t->method, MC_SEQUENTIAL);
    for (int64_t i = 0; i < t->n; i++) t->capped[i] = (int8_t)(sequential && t->target_called[i] && t->decision[i] == 1);
    t->capped_derived = 1;
    return 0;
}

int tokrows_read(const char *path, TokenRows *t, SpErr *err) {
    memset(t, 0, sizeof *t);
    hid_t f = h5_open_read(path, err);
    if (f < 0) return -1;
    double version = 1;
    char fmt[64] = "";
    /* attributes: format and version are required from version 2 on; a version-1 file may lack them */
    (void)h5_read_attr_str(f, path, "format", fmt, sizeof fmt, NULL);
    if (fmt[0] && strcmp(fmt, TOKENLOG_FORMAT)) {
        H5Fclose(f);
        return sp_fail(err, "%s: attribute format is \"%s\", not %s", path, fmt, TOKENLOG_FORMAT);
    }
    if (fmt[0]) (void)h5_read_attr_f64(f, path, "version", &version, NULL);
    if (!known_version(version)) {
        H5Fclose(f);
        return sp_fail(err, "%s: attribute version is %g, this sprinter reads token logs of version 1 to %d", path,
                       version, TOKENLOG_VERSION);
    }
    t->version = (int)version;
    (void)h5_read_attr_str(f, path, "run_hash", t->run_hash, sizeof t->run_hash, NULL);
    (void)h5_read_attr_str(f, path, "method", t->method, sizeof t->method, NULL);
    int rc = 0;
    for (int c = TOKENLOG_COL_PROMPT_INDEX; rc == 0 && c < tokenlog_n_cols(t->version); c++) {
        int64_t rows = 0;
        int width = 1;
        void **dst = column_dst(t, c);
        rc = h5_read_column(f, path, kCols[c].name, kCols[c].type, dst, &rows, &width, err);
        if (rc == 0 && width != 1)
            rc = sp_fail(err, "%s: dataset /%s has %d columns, expected 1", path, kCols[c].name, width);
        else if (rc == 0 && c > TOKENLOG_COL_PROMPT_INDEX && rows != t->n)
            rc = sp_fail(err, "%s: dataset /%s has %lld rows, /prompt_index has %lld", path, kCols[c].name,
                         (long long)rows, (long long)t->n);
        if (rc == 0) t->n = rows;
    }
    H5Fclose(f);
    if (rc == 0 && t->version == 1) rc = derive_capped(t, err, path);
    if (rc == 0 && t->version < 3) rc = missing_raw(t, err, path);
    if (rc) tokrows_free(t);
    return rc;
}

void tokrows_free(TokenRows *t) {
    free(t->prompt_index);
#define TOKENLOG_FREE(field, ctype, type, units, doc) free(t->field);
    TOKENLOG_EVENT_COLUMNS(TOKENLOG_FREE)
#undef TOKENLOG_FREE
    memset(t, 0, sizeof *t);
}

int tokenlog_row_count(const char *path, int64_t *rows, SpErr *err) {
    *rows = -1;
    if (access(path, F_OK) != 0) return sp_fail(err, "%s: missing", path);
    hid_t f = h5_open_read(path, err);
    if (f < 0) return -1;
    char fmt[64] = "";
    double version = 0;
    int rc = 0;
    if (h5_read_attr_str(f, path, "format", fmt, sizeof fmt, NULL) || strcmp(fmt, TOKENLOG_FORMAT) ||
        h5_read_attr_f64(f, path, "version", &version, NULL) || !known_version(version))
        rc = sp_fail(err, "%s: not a %s file of version 1 to %d", path, TOKENLOG_FORMAT, TOKENLOG_VERSION);
    for (int c = TOKENLOG_COL_PROMPT_INDEX; rc == 0 && c < tokenlog_n_cols((int)version); c++) {
        hid_t d = H5Dopen2(f, kCols[c].name, H5P_DEFAULT);
        hid_t sp = d >= 0 ? H5Dget_space(d) : -1;
        hsize_t dims[2] = {0, 0};
        int nd = sp >= 0 ? H5Sget_simple_extent_ndims(sp) : -1;
        if (nd == 1) H5Sget_simple_extent_dims(sp, dims, NULL);
        if (sp >= 0) H5Sclose(sp);
        if (d >= 0) H5Dclose(d);
        if (nd != 1) rc = sp_fail(err, "%s: dataset /%s missing or not a column", path, kCols[c].name);
        else if (*rows >= 0 && (int64_t)dims[0] != *rows)
            rc = sp_fail(err, "%s: dataset /%s has %llu rows, /prompt_index has %lld", path, kCols[c].name,
                         (unsigned long long)dims[0], (long long)*rows);
        else *rows = (int64_t)dims[0];
    }
    H5Fclose(f);
    return rc;
}
