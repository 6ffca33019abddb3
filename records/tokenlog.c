/* tokenlog.c - per-token HDF5 logs: layout, writer and reader (see tokenlog.h). */
#include "tokenlog.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <string.h>

#include "fnv.h"
#include "methods.h"
#include "sqlutil.h"

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

static int known_version(double v) { return v == 1 || v == 2 || v == 3 || v == TOKENLOG_VERSION; }

/* ---- the content digest (version 4) ----
 * FNV-1a 64 over each kept column's bytes (prompt_index, then the event columns, native little-endian
 * values as written), then FNV-1a 64 over those per-column digests (8 bytes each, in file order). */

static size_t col_size(H5ColType t) {
    return t == H5C_F64 || t == H5C_I64 ? 8 : t == H5C_I8 ? 1 : 4;
}

/* The digest of per-column states h[TOKENLOG_COL_PROMPT_INDEX .. TOKENLOG_N_COLS), as 16 hex digits. */
static void digest_hex(const uint64_t *h, char out[17]) {
    uint64_t d = SP_FNV1A64_OFFSET;
    for (int c = TOKENLOG_COL_PROMPT_INDEX; c < TOKENLOG_N_COLS; c++) {
        unsigned char b[8];
        for (int k = 0; k < 8; k++) b[k] = (unsigned char)(h[c] >> (8 * k));
        d = sp_fnv1a64(d, b, 8);
    }
    snprintf(out, 17, "%016llx", (unsigned long long)d);
}

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
    for (int c = 0; c < TOKENLOG_N_COLS; c++) l->col_hash[c] = SP_FNV1A64_OFFSET;
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
        for (int c = TOKENLOG_COL_PROMPT_INDEX; rc == 0 && c < TOKENLOG_N_COLS; c++)
            l->col_hash[c] = sp_fnv1a64(l->col_hash[c], cols[c], N * col_size(kCols[c].type));
    }
    for (int c = 0; c < TOKENLOG_N_COLS; c++) free(cols[c]);
    return rc;
}

int tokenlog_commit(TokenLog *l, SpErr *err) {
    char hex[17];
    digest_hex(l->col_hash, hex);
    memcpy(l->content_hash, hex, sizeof hex);
    if (h5t_attr_str(&l->t, "content_fnv1a64", hex, err)) {
        tokenlog_abort(l);
        return -1;
    }
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

static int read_direct(const char *path, TokenRows *t, SpErr *err) {
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
    if (t->version >= 4 && h5_read_attr_str(f, path, "content_fnv1a64", t->content_hash, sizeof t->content_hash, NULL))
        rc = sp_fail(err, "%s: attribute content_fnv1a64 is missing (a version-%d log stores it)", path, t->version);
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

/* ---- the checked reader ---- */

/* The blob a checked child sends: the header, then each kept column's n values in file order. */
typedef struct Blob {
    int64_t n;
    int version, capped_derived, raw_missing;
    char run_hash[80], method[32], content_hash[24];
} Blob;

static int read_in_child(void *arg, void **out, size_t *len, SpErr *err) {
    const char *path = arg;
    TokenRows t;
    if (read_direct(path, &t, err)) return -1;
    size_t n = (size_t)t.n, total = sizeof(Blob);
    for (int c = TOKENLOG_COL_PROMPT_INDEX; c < TOKENLOG_N_COLS; c++) total += n * col_size(kCols[c].type);
    char *b = malloc(total);
    if (!b) {
        tokrows_free(&t);
        return sp_fail(err, "%s: out of memory", path);
    }
    Blob h = {.n = t.n, .version = t.version, .capped_derived = t.capped_derived, .raw_missing = t.raw_missing};
    memcpy(h.run_hash, t.run_hash, sizeof h.run_hash);
    memcpy(h.method, t.method, sizeof h.method);
    memcpy(h.content_hash, t.content_hash, sizeof h.content_hash);
    memcpy(b, &h, sizeof h);
    size_t k = sizeof h;
    for (int c = TOKENLOG_COL_PROMPT_INDEX; c < TOKENLOG_N_COLS; c++) {
        size_t m = n * col_size(kCols[c].type);
        if (m) memcpy(b + k, *column_dst(&t, c), m);
        k += m;
    }
    tokrows_free(&t);
    *out = b, *len = total;
    return 0;
}

static int from_blob(const char *path, const char *b, size_t len, TokenRows *t, SpErr *err) {
    Blob h;
    if (len < sizeof h) return sp_fail(err, "%s: the checked reader's answer is incomplete", path);
    memcpy(&h, b, sizeof h);
    size_t n = h.n >= 0 ? (size_t)h.n : 0, total = sizeof h;
    for (int c = TOKENLOG_COL_PROMPT_INDEX; c < TOKENLOG_N_COLS; c++) total += n * col_size(kCols[c].type);
    if (h.n < 0 || total != len) return sp_fail(err, "%s: the checked reader's answer is incomplete", path);
    t->n = h.n, t->version = h.version, t->capped_derived = h.capped_derived, t->raw_missing = h.raw_missing;
    memcpy(t->run_hash, h.run_hash, sizeof t->run_hash);
    memcpy(t->method, h.method, sizeof t->method);
    memcpy(t->content_hash, h.content_hash, sizeof t->content_hash);
    t->run_hash[sizeof t->run_hash - 1] = t->method[sizeof t->method - 1] = t->content_hash[sizeof t->content_hash - 1] = '\0';
    size_t k = sizeof h;
    for (int c = TOKENLOG_COL_PROMPT_INDEX; c < TOKENLOG_N_COLS; c++) {
        size_t m = n * col_size(kCols[c].type);
        void **dst = column_dst(t, c);
        if (!(*dst = malloc(m ? m : 1))) return sp_fail(err, "%s: out of memory", path);
        if (m) memcpy(*dst, b + k, m);
        k += m;
    }
    return 0;
}

/* The stored digest (version 4 on) against the content read. */
static int check_digest(const char *path, const TokenRows *t, SpErr *err) {
    if (t->version < 4) return 0; /* older logs stored none: the other checks only */
    uint64_t h[TOKENLOG_N_COLS];
    TokenRows *m = (TokenRows *)t;
    for (int c = TOKENLOG_COL_PROMPT_INDEX; c < TOKENLOG_N_COLS; c++)
        h[c] = sp_fnv1a64(SP_FNV1A64_OFFSET, *column_dst(m, c), (size_t)t->n * col_size(kCols[c].type));
    char hex[17];
    digest_hex(h, hex);
    if (strcmp(hex, t->content_hash))
        return sp_fail(err, "%s: content does not match its attribute content_fnv1a64 (%s, read %s): the file is damaged",
                       path, t->content_hash, hex);
    return 0;
}

static int cmp_i32(const void *a, const void *b) {
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* The log against what the database says: the run hash, the digest recorded at commit, and per
 * prompt the number of rows. */
static int check_expect(const char *path, const TokenRows *t, const TokenLogExpect *x, SpErr *err) {
    if (x->run_hash && strcmp(t->run_hash, x->run_hash))
        return sp_fail(err, "%s: attribute run_hash is %.16s..., the run is %.16s... (another run's log?)", path,
                       t->run_hash[0] ? t->run_hash : "(none)", x->run_hash);
    if (x->content_hash[0] && strcmp(t->content_hash, x->content_hash))
        return sp_fail(err, "%s: content digest %s, but runs.token_log_fnv1a64 recorded %s when the run was committed "
                            "(another run's log, or changed after the run)",
                       path, t->content_hash[0] ? t->content_hash : "(none: a version-3 log)", x->content_hash);
    if (x->n_prompts < 0) return 0;
    int64_t want = 0;
    for (int i = 0; i < x->n_prompts; i++) want += x->tokens[i];
    if (want != t->n)
        return sp_fail(err, "%s: %lld rows, the database has %lld tokens", path, (long long)t->n, (long long)want);
    /* rows come one prompt after another: each stretch of one prompt_index has that prompt's tokens */
    for (int64_t i = 0; i < t->n;) {
        int64_t j = i;
        while (j < t->n && t->prompt_index[j] == t->prompt_index[i]) j++;
        int32_t pi = t->prompt_index[i];
        const int32_t *hit = x->prompt_index && x->n_prompts > 0
                                 ? bsearch(&pi, x->prompt_index, (size_t)x->n_prompts, sizeof pi, cmp_i32)
                                 : NULL;
        if (!hit)
            return sp_fail(err, "%s: dataset /prompt_index: row %lld is prompt %d, which the database has no row for", path,
                           (long long)i, (int)pi);
        int64_t have = j - i, w = x->tokens[hit - x->prompt_index];
        if (have != w)
            return sp_fail(err, "%s: prompt %d has %lld rows, the database has %lld tokens", path, (int)pi,
                           (long long)have, (long long)w);
        i = j;
    }
    return 0;
}

int tokrows_read(const char *path, const TokenLogExpect *x, TokenRows *t, SpErr *err) {
    memset(t, 0, sizeof *t);
    if (access(path, F_OK) != 0) return sp_fail(err, "%s: missing", path);
    void *blob;
    size_t len;
    if (h5_checked(path, read_in_child, (void *)path, &blob, &len, err)) return -1;
    int rc = from_blob(path, blob, len, t, err);
    free(blob);
    if (rc == 0) rc = check_digest(path, t, err);
    if (rc == 0 && x) rc = check_expect(path, t, x, err);
    if (rc) tokrows_free(t);
    return rc;
}

/* runs.token_log_fnv1a64 of run_hash into buf ("" when the file predates schema 10 or holds NULL). */
static int recorded_digest(sqlite3 *h, const char *db_path, const char *run_hash, char *buf, size_t cap, SpErr *err) {
    buf[0] = '\0';
    if (!sql_has_column(h, "main", "runs", "token_log_fnv1a64")) return 0;
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(h, "SELECT token_log_fnv1a64 FROM runs WHERE run_hash = ?", -1, &st, NULL) != SQLITE_OK)
        return sql_fail(h, db_path, "read runs.token_log_fnv1a64", err);
    sqlite3_bind_text(st, 1, run_hash, -1, SQLITE_STATIC);
    int s = sqlite3_step(st), rc = 0;
    const unsigned char *v = s == SQLITE_ROW ? sqlite3_column_text(st, 0) : NULL;
    if (v) snprintf(buf, cap, "%s", (const char *)v);
    if (s != SQLITE_ROW && s != SQLITE_DONE) rc = sql_fail(h, db_path, "read runs.token_log_fnv1a64", err);
    sqlite3_finalize(st);
    return rc;
}

int tokenlog_expect_db(sqlite3 *h, const char *db_path, const char *run_hash, TokenLogExpect *x, SpErr *err) {
    memset(x, 0, sizeof *x);
    x->run_hash = run_hash;
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(h, "SELECT prompt_index, tokens FROM prompts WHERE run_hash = ? ORDER BY prompt_index", -1,
                           &st, NULL) != SQLITE_OK)
        return sql_fail(h, db_path, "read prompts", err);
    sqlite3_bind_text(st, 1, run_hash, -1, SQLITE_STATIC);
    int cap = 0, rc = 0;
    for (int s; (s = sqlite3_step(st)) != SQLITE_DONE;) {
        if (s != SQLITE_ROW) {
            rc = sql_fail(h, db_path, "read prompts", err);
            break;
        }
        if (x->n_prompts == cap) {
            cap = cap ? 2 * cap : 64;
            int32_t *pi = realloc(x->prompt_index, (size_t)cap * sizeof *pi);
            if (pi) x->prompt_index = pi;
            int64_t *tk = pi ? realloc(x->tokens, (size_t)cap * sizeof *tk) : NULL;
            if (tk) x->tokens = tk;
            if (!pi || !tk) {
                rc = sp_fail(err, "out of memory");
                break;
            }
        }
        x->prompt_index[x->n_prompts] = (int32_t)sqlite3_column_int(st, 0);
        x->tokens[x->n_prompts++] = sqlite3_column_int64(st, 1);
    }
    sqlite3_finalize(st);
    if (rc == 0) rc = recorded_digest(h, db_path, run_hash, x->content_hash, sizeof x->content_hash, err);
    if (rc) tokenlog_expect_free(x);
    x->run_hash = run_hash;
    return rc;
}

void tokenlog_expect_free(TokenLogExpect *x) {
    free(x->prompt_index);
    free(x->tokens);
    x->prompt_index = NULL, x->tokens = NULL, x->n_prompts = 0;
    x->content_hash[0] = '\0';
}
