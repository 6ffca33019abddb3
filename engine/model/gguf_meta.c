/* gguf_meta.c - a GGUF file alone as a model: the engine's config and tokenizer from the file's
 * metadata (gguf.h). The config is written as the config.json object the file's keys stand for and
 * parsed by config_parse, so its rules and defaults are the directory form's. */
#include "gguf.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "arch.h"
#include "config.h"
#include "fsutil.h"
#include "safetensors.h"
#include "tokenizer.h"

#define ABSENT INT64_MIN

typedef struct Ctx {
    const GgufMeta *m;
    const char *arch; /* general.architecture */
    cJSON *j;         /* the config.json object being built */
    SpErr *err;
} Ctx;

static int put_num(Ctx *c, const char *json_key, double v) {
    return cJSON_AddNumberToObject(c->j, json_key, v) ? 0 : sp_fail(c->err, "out of memory");
}

/* <arch>.suffix, an integer in [lo, hi], into json_key (when not NULL); *out = ABSENT when absent. */
static int arch_int(Ctx *c, const char *suffix, const char *json_key, int required, int64_t lo, int64_t hi,
                    int64_t *out) {
    char key[160];
    snprintf(key, sizeof key, "%s.%s", c->arch, suffix);
    *out = ABSENT;
    if (gguf_meta_int(c->m, key, required, lo, hi, out, c->err)) return -1;
    return *out != ABSENT && json_key ? put_num(c, json_key, (double)*out) : 0;
}

/* <arch>.suffix, a float in [lo, hi], into json_key; *found 0 when absent. */
static int arch_float(Ctx *c, const char *suffix, const char *json_key, int required, double lo, double hi, double *out,
                      int *found) {
    char key[160];
    snprintf(key, sizeof key, "%s.%s", c->arch, suffix);
    *found = gguf_meta_find(c->m, key) != NULL;
    if (gguf_meta_float(c->m, key, required, lo, hi, out, c->err)) return -1;
    return *found && json_key ? put_num(c, json_key, *out) : 0;
}

/* The row of general.architecture. */
static const ArchInfo *arch_of(const GgufMeta *m, SpErr *err) {
    const char *s;
    size_t n;
    if (gguf_meta_str(m, "general.architecture", 1, &s, &n, err)) return NULL;
    char list[128] = "";
    for (int i = 0; i < arch_count(); i++) {
        const ArchInfo *a = arch_at(i);
        if (!a->gguf_arch) continue;
        if (strlen(a->gguf_arch) == n && !memcmp(a->gguf_arch, s, n)) return a;
        strncat(list, list[0] ? ", " : "", sizeof list - strlen(list) - 1);
        strncat(list, a->gguf_arch, sizeof list - strlen(list) - 1);
    }
    sp_fail(err, "%s: metadata key general.architecture = \"%.*s\" is not one the engine reads (%s)", m->file,
            (int)(n > 40 ? 40 : n), s, list);
    return NULL;
}

/* Shapes: hidden, layers, heads, kv heads, MLP width, context, norm epsilon, head_dim. */
static int read_shapes(Ctx *c, const ArchInfo *a, int64_t *head_dim) {
    const ArchKeys *k = &a->key;
    int64_t hidden, heads, v, kv_heads, vlen;
    double eps;
    int found;
    if (arch_int(c, "embedding_length", k->hidden, 1, 1, CFG_MAX_DIM, &hidden) ||
        arch_int(c, "block_count", k->layers, 1, 1, CFG_MAX_LAYERS, &v) ||
        arch_int(c, "attention.head_count", k->heads, 1, 1, CFG_MAX_HEADS, &heads) ||
        arch_int(c, "attention.head_count_kv", k->kv_heads, 0, 1, CFG_MAX_HEADS, &kv_heads) ||
        arch_int(c, "feed_forward_length", k->ff, 1, 1, 4 * CFG_MAX_DIM, &v) ||
        arch_int(c, "context_length", k->max_pos, 1, 1, CFG_MAX_POS, &v) ||
        arch_float(c, a->norm == NORM_RMS ? "attention.layer_norm_rms_epsilon" : "attention.layer_norm_epsilon",
                   k->norm_eps, 1, 0, 1, &eps, &found) ||
        arch_int(c, "attention.key_length", NULL, 0, 1, CFG_MAX_DIM, head_dim) ||
        arch_int(c, "attention.value_length", NULL, 0, 1, CFG_MAX_DIM, &vlen))
        return -1;
    if (!k->kv_heads && kv_heads != ABSENT && kv_heads != heads)
        return sp_fail(c->err, "%s: metadata key %s.attention.head_count_kv = %lld: %s has no grouped-query attention",
                       c->m->file, c->arch, (long long)kv_heads, a->title);
    if (*head_dim == ABSENT) {
        if (hidden % heads)
            return sp_fail(c->err,
                           "%s: metadata key %s.attention.key_length is missing and heads %lld do not divide %lld",
                           c->m->file, c->arch, (long long)heads, (long long)hidden);
        *head_dim = hidden / heads;
    }
    if (vlen != ABSENT && vlen != *head_dim)
        return sp_fail(c->err, "%s: metadata key %s.attention.value_length = %lld differs from key_length %lld",
                       c->m->file, c->arch, (long long)vlen, (long long)*head_dim);
    return put_num(c, "head_dim", (double)*head_dim);
}

/* RoPE: freq_base, dimension_count (the whole head), scaling none or linear; rope_freqs.weight refused. */
static int read_rope(Ctx *c, const StArchive *st, int64_t head_dim) {
    double base, factor;
    int found;
    int64_t dims;
    if (arch_float(c, "rope.freq_base", "rope_theta", 0, 1, 1e12, &base, &found) ||
        arch_int(c, "rope.dimension_count", NULL, 0, 1, CFG_MAX_DIM, &dims))
        return -1;
    if (dims != ABSENT && dims != head_dim)
        return sp_fail(
            c->err,
            "%s: metadata key %s.rope.dimension_count = %lld: only a rotation of the whole head (%lld) is supported",
            c->m->file, c->arch, (long long)dims, (long long)head_dim);
    const StEntry *freqs = st_find(st, GGUF_ROPE_FREQS);
    if (freqs && (freqs->dtype != ST_F32 || freqs->ndim != 1 || freqs->numel != head_dim / 2))
        return sp_fail(c->err, "%s: tensor %s: %s of %lld values, expected F32 of head_dim / 2 = %lld", c->m->file,
                       GGUF_ROPE_FREQS, st_dtype_name(freqs->dtype), (long long)freqs->numel,
                       (long long)(head_dim / 2));
    for (int64_t i = 0; freqs && i < freqs->numel; i++) {
        float d = ((const float *)freqs->data)[i];
        if (!(d >= 1e-6f && d <= 1e6f))
            return sp_fail(c->err, "%s: tensor %s: divisor %lld = %g is outside [1e-6, 1e6]", c->m->file,
                           GGUF_ROPE_FREQS, (long long)i, (double)d);
    }
    char key[160];
    const char *type;
    size_t n;
    snprintf(key, sizeof key, "%s.rope.scaling.type", c->arch);
    if (gguf_meta_str(c->m, key, 0, &type, &n, c->err)) return -1;
    if (!type || (n == 4 && !memcmp(type, "none", 4))) return 0;
    if (freqs)
        return sp_fail(c->err, "%s: metadata key %s = \"%.*s\" and tensor %s: two RoPE scalings", c->m->file, key,
                       (int)(n > 40 ? 40 : n), type, GGUF_ROPE_FREQS);
    if (n != 6 || memcmp(type, "linear", 6))
        return sp_fail(c->err, "%s: metadata key %s = \"%.*s\" is not supported (none, linear)", c->m->file, key,
                       (int)(n > 40 ? 40 : n), type);
    if (arch_float(c, "rope.scaling.factor", NULL, 1, 1e-6, 1e6, &factor, &found)) return -1;
    cJSON *rs = cJSON_AddObjectToObject(c->j, "rope_scaling");
    if (!rs || !cJSON_AddStringToObject(rs, "type", "linear") || !cJSON_AddNumberToObject(rs, "factor", factor))
        return sp_fail(c->err, "out of memory");
    return 0;
}

/* bos / eos ids, with eot and eom further end-of-sequence ids (llama.cpp stops at each: config.json's
 * eos_token_id list, Llama 3.1 Instruct's three, as export-gguf writes it); vocab_size from
 * token_embd.weight's rows. */
static int read_ids(Ctx *c, const StArchive *st) {
    static const char *const keys[] = {"tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id",
                                       "tokenizer.ggml.eom_token_id"};
    const StEntry *e = st_find(st, "token_embd.weight");
    if (!e || e->ndim != 2)
        return sp_fail(c->err, "%s: tensor token_embd.weight is missing or not a matrix", c->m->file);
    int64_t vocab = e->shape[0], bos = ABSENT;
    if (vocab > CFG_MAX_VOCAB)
        return sp_fail(c->err, "%s: tensor token_embd.weight has %lld rows", c->m->file, (long long)vocab);
    if (put_num(c, "vocab_size", (double)vocab) ||
        gguf_meta_int(c->m, "tokenizer.ggml.bos_token_id", 0, 0, vocab - 1, &bos, c->err))
        return -1;
    if (bos != ABSENT && put_num(c, "bos_token_id", (double)bos)) return -1;
    double ids[3];
    int n = 0;
    for (int k = 0; k < 3; k++) { /* present ones, each once, in this order */
        int64_t id = ABSENT;
        if (gguf_meta_int(c->m, keys[k], 0, 0, vocab - 1, &id, c->err)) return -1;
        int seen = 0;
        for (int i = 0; i < n; i++) seen |= ids[i] == (double)id;
        if (id != ABSENT && !seen) ids[n++] = (double)id;
    }
    if (n == 0) return 0;
    if (n == 1) return put_num(c, "eos_token_id", ids[0]);
    cJSON *list = cJSON_CreateDoubleArray(ids, n);
    if (!list || !cJSON_AddItemToObject(c->j, "eos_token_id", list)) {
        cJSON_Delete(list);
        return sp_fail(c->err, "out of memory");
    }
    return 0;
}

int gguf_config_read(const StArchive *st, const GgufMeta *m, ModelConfig *cfg, SpErr *err) {
    memset(cfg, 0, sizeof *cfg);
    const ArchInfo *a = arch_of(m, err);
    if (!a) return -1;
    Ctx c = {m, a->gguf_arch, cJSON_CreateObject(), err};
    int64_t head_dim = 0;
    int rc = !c.j || !cJSON_AddStringToObject(c.j, "model_type", a->model_type) ? sp_fail(err, "out of memory") : 0;
    if (rc == 0) rc = read_shapes(&c, a, &head_dim);
    if (rc == 0 && a->pos == POS_ROPE) rc = read_rope(&c, st, head_dim);
    if (rc == 0) rc = read_ids(&c, st);
    if (rc == 0 && !cJSON_AddBoolToObject(c.j, "tie_word_embeddings", st_find(st, "output.weight") == NULL))
        rc = sp_fail(err, "out of memory");
    if (rc == 0) rc = config_parse(c.j, m->file, cfg, err);
    if (rc == 0 && a->pos == POS_ROPE && st_find(st, GGUF_ROPE_FREQS)) cfg->rope_scaling.kind = ROPE_SCALE_FREQS;
    cJSON_Delete(c.j);
    return rc;
}

/* ------------------------------------------------------------------ the tokenizer */

/* The strings of an array into out[0..kv->arr_n). */
static int str_array(const GgufKv *kv, TokStr **out, SpErr *err) {
    *out = calloc((size_t)kv->arr_n + 1, sizeof **out);
    if (!*out) return sp_fail(err, "out of memory");
    const unsigned char *p = kv->val;
    for (uint64_t i = 0; i < kv->arr_n; i++) p = gguf_next_str(p, &(*out)[i].s, &(*out)[i].n);
    return 0;
}

/* tokenizer.ggml.* into tt (tokens / merges / types allocated, the strings borrowed from the map); *types
 * the token types copied out of the map (where i32 values need not be aligned), NULL when absent. */
static int read_tables(const GgufMeta *m, TokTables *tt, char **pre, int32_t **types_out, SpErr *err) {
    const char *model, *p;
    size_t n, pn;
    const GgufKv *tokens, *types, *merges;
    int64_t bos = -1, eos = -1;
    if (gguf_meta_str(m, "tokenizer.ggml.model", 1, &model, &n, err)) return -1;
    if (n != 4 || memcmp(model, "gpt2", 4))
        return sp_fail(
            err,
            "%s: metadata key tokenizer.ggml.model = \"%.*s\": only \"gpt2\" (byte-level BPE) is read from a GGUF "
            "file",
            m->file, (int)(n > 40 ? 40 : n), model);
    if (gguf_meta_str(m, "tokenizer.ggml.pre", 1, &p, &pn, err) ||
        gguf_meta_array(m, "tokenizer.ggml.tokens", 1, GGUF_T_STRING, &tokens, err) ||
        gguf_meta_array(m, "tokenizer.ggml.token_type", 0, GGUF_T_I32, &types, err) ||
        gguf_meta_array(m, "tokenizer.ggml.merges", 1, GGUF_T_STRING, &merges, err))
        return -1;
    if (tokens->arr_n == 0 || tokens->arr_n > CFG_MAX_VOCAB || merges->arr_n > CFG_MAX_VOCAB * 2)
        return sp_fail(
            err, "%s: metadata key tokenizer.ggml.%s holds %llu entries", m->file,
            tokens->arr_n == 0 || tokens->arr_n > CFG_MAX_VOCAB ? "tokens" : "merges",
            (unsigned long long)(tokens->arr_n == 0 || tokens->arr_n > CFG_MAX_VOCAB ? tokens->arr_n : merges->arr_n));
    if (types && types->arr_n != tokens->arr_n)
        return sp_fail(err, "%s: metadata key tokenizer.ggml.token_type holds %llu entries, tokenizer.ggml.tokens %llu",
                       m->file, (unsigned long long)types->arr_n, (unsigned long long)tokens->arr_n);
    tt->n_tokens = (int)tokens->arr_n, tt->n_merges = (int)merges->arr_n;
    if (gguf_meta_int(m, "tokenizer.ggml.bos_token_id", 0, 0, tt->n_tokens - 1, &bos, err) ||
        gguf_meta_int(m, "tokenizer.ggml.eos_token_id", 0, 0, tt->n_tokens - 1, &eos, err) ||
        gguf_meta_bool(m, "tokenizer.ggml.add_bos_token", 0, &tt->add_bos, err) ||
        gguf_meta_bool(m, "tokenizer.ggml.add_eos_token", 0, &tt->add_eos, err))
        return -1;
    tt->bos = (int32_t)bos, tt->eos = (int32_t)eos;
    if (types) {
        if (!(*types_out = malloc((size_t)tt->n_tokens * sizeof **types_out))) return sp_fail(err, "out of memory");
        memcpy(*types_out, types->val, (size_t)tt->n_tokens * sizeof **types_out);
        tt->types = *types_out;
    }
    if (!(*pre = strndup(p, pn))) return sp_fail(err, "out of memory");
    tt->pre = *pre;
    TokStr *tok = NULL, *mer = NULL;
    if (str_array(tokens, &tok, err) || str_array(merges, &mer, err)) {
        free(tok);
        return -1;
    }
    tt->tokens = tok, tt->merges = mer;
    return 0;
}

Tokenizer *gguf_tokenizer_load(const char *path, SpErr *err) {
    StArchive st;
    GgufMeta m = {0};
    TokTables tt = {.source = path, .bos = -1, .eos = -1};
    char *pre = NULL;
    int32_t *types = NULL;
    Tokenizer *t = NULL;
    if (gguf_open(path, &st, err)) return NULL;
    if (gguf_meta_read(&st, &m, err) == 0 && read_tables(&m, &tt, &pre, &types, err) == 0)
        t = tokenizer_from_tables(&tt, err);
    free(types), free(pre), free((void *)tt.tokens), free((void *)tt.merges);
    gguf_meta_free(&m);
    st_close(&st);
    return t;
}

Tokenizer *model_tokenizer_load(const char *path, SpErr *err) {
    return sp_is_gguf_file(path) ? gguf_tokenizer_load(path, err) : tokenizer_load_dir(path, err);
}

/* A malloc'd NUL-terminated copy of s[0..n); a NUL inside is refused (a template is text). */
static int copy_text(const GgufMeta *m, const char *key, const char *s, size_t n, char **out, SpErr *err) {
    if (memchr(s, '\0', n)) return sp_fail(err, "%s: metadata key %s holds a NUL byte", m->file, key);
    return (*out = strndup(s, n)) ? 0 : sp_fail(err, "out of memory");
}

/* The text of token id key names (tokenizer.ggml.bos_token_id ...) into *out; nothing when absent. */
static int token_text(const GgufMeta *m, const char *key, char **out, SpErr *err) {
    const GgufKv *tokens;
    int64_t id = -1;
    if (gguf_meta_array(m, "tokenizer.ggml.tokens", 0, GGUF_T_STRING, &tokens, err)) return -1;
    if (!tokens || tokens->arr_n == 0) return 0;
    if (gguf_meta_int(m, key, 0, 0, (int64_t)tokens->arr_n - 1, &id, err)) return -1;
    if (id < 0) return 0;
    const unsigned char *p = tokens->val;
    const char *s;
    size_t n;
    for (int64_t i = 0; i <= id; i++) p = gguf_next_str(p, &s, &n);
    return copy_text(m, "tokenizer.ggml.tokens", s, n, out, err);
}

int gguf_chat_template(const char *path, char **tmpl, char **bos, char **eos, SpErr *err) {
    *tmpl = *bos = *eos = NULL;
    StArchive st;
    GgufMeta m = {0};
    if (gguf_open(path, &st, err)) return -1;
    const char *s;
    size_t n;
    int rc = gguf_meta_read(&st, &m, err) || gguf_meta_str(&m, "tokenizer.chat_template", 0, &s, &n, err) ||
             (s && copy_text(&m, "tokenizer.chat_template", s, n, tmpl, err)) ||
             token_text(&m, "tokenizer.ggml.bos_token_id", bos, err) ||
             token_text(&m, "tokenizer.ggml.eos_token_id", eos, err);
    gguf_meta_free(&m);
    st_close(&st);
    if (rc) {
        free(*tmpl), free(*bos), free(*eos);
        *tmpl = *bos = *eos = NULL;
        return -1;
    }
    return 0;
}
