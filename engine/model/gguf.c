/* gguf.c - Hugging Face checkpoint -> GGUF v3 for llama.cpp (see gguf.h). */
#include "gguf.h"

#include <stdio.h>
#include <stdlib.h>
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "arch.h"
#include "fsutil.h"
#include "jsonutil.h"
#include "kernels.h"
#include "safetensors.h"
#include "tokenizer.h"

#define GGUF_ALIGN 32
#define GGUF_MAX_NAME 64 /* ggml's GGML_MAX_NAME, the terminating NUL included */
enum { FT_F32 = 0, FT_F16 = 1, FT_Q8_0 = 7, FT_BF16 = 32 };                                  /* llama_ftype */
#define GGML_QNT_VERSION 2 /* general.quantization_version of a quantized file */

/* ------------------------------------------------------------------ a growable byte buffer */

typedef struct Buf {
    unsigned char *p;
    size_t n, cap;
    int oom;
} Buf;

static void put(Buf *b, const void *src, size_t n) {
    if (b->oom) return;
    if (b->n + n > b->cap) {
        size_t nc = b->cap ? b->cap : 4096;
        while (nc < b->n + n) nc *= 2;
        unsigned char *q = realloc(b->p, nc);
        if (!q) {
            b->oom = 1;
            return;
        }
        b->p = q, b->cap = nc;
    }
    memcpy(b->p + b->n, src, n);
    b->n += n;
}
static void put_u32(Buf *b, uint32_t v) { put(b, &v, 4); } /* little-endian host (x86-64, aarch64) */
static void put_u64(Buf *b, uint64_t v) { put(b, &v, 8); }
static void put_str(Buf *b, const char *s) {
    put_u64(b, strlen(s));
    put(b, s, strlen(s));
}

/* Metadata: the key, its type, its value. */
typedef struct Meta {
    Buf b;
    uint64_t n_kv;
} Meta;

static void kv_head(Meta *m, const char *key, uint32_t type) {
    put_str(&m->b, key);
    put_u32(&m->b, type);
    m->n_kv++;
}
static void kv_u32(Meta *m, const char *key, uint32_t v) { kv_head(m, key, GGUF_T_U32), put_u32(&m->b, v); }
static void kv_f32(Meta *m, const char *key, float v) { kv_head(m, key, GGUF_T_F32), put(&m->b, &v, 4); }
static void kv_bool(Meta *m, const char *key, int v) {
    unsigned char c = (unsigned char)(v != 0);
    kv_head(m, key, GGUF_T_BOOL), put(&m->b, &c, 1);
}
static void kv_str(Meta *m, const char *key, const char *v) { kv_head(m, key, GGUF_T_STRING), put_str(&m->b, v); }
static void kv_arr_head(Meta *m, const char *key, uint32_t elem, uint64_t n) {
    kv_head(m, key, GGUF_T_ARRAY);
    put_u32(&m->b, elem);
    put_u64(&m->b, n);
}

/* ------------------------------------------------------------------ the tokenizer */

typedef struct Vocab {
    char **tok;    /* [n] byte-level token strings (NULL: no entry for that id) */
    int32_t *type; /* [n] */
    int n;
    char **merges;
    int n_merges;
    int add_bos, add_eos; /* the engine tokenizer's (tokenizer_config.json add_bos_token / add_eos_token) */
    const char *pre;      /* tokenizer.ggml.pre: llama.cpp's name of the pre-tokenizer (tokenizer_pre_name) */
    int32_t bos, eos;     /* the tokenizer's (post_processor, tokenizer_config.json), -1 if none */
} Vocab;

static void vocab_free(Vocab *v) {
    for (int i = 0; v->tok && i < v->n; i++) free(v->tok[i]);
    for (int i = 0; v->merges && i < v->n_merges; i++) free(v->merges[i]);
    free(v->tok), free(v->type), free(v->merges);
    memset(v, 0, sizeof *v);
}

static int set_token(Vocab *v, const char *file, const char *s, long long id, SpErr *err) {
    if (id < 0 || id >= v->n) return sp_fail(err, "%s: token \"%.40s\" has id %lld outside [0, %d)", file, s, id, v->n);
    if (v->tok[id]) return sp_fail(err, "%s: id %lld is given to two tokens", file, id);
    if (!(v->tok[id] = strdup(s))) return sp_fail(err, "out of memory");
    v->type[id] = TOK_TYPE_NORMAL;
    return 0;
}

static int add_merge(Vocab *v, const char *s, int cap) {
    if (v->n_merges == cap) return 0; /* counted beforehand: never reached */
    return (v->merges[v->n_merges++] = strdup(s)) ? 0 : -1;
}

/* vocab.json (token -> id) and merges.txt ("a b" lines after an optional #version line). */
static int read_vocab_merges(const char *dir, Vocab *v, SpErr *err) {
    char path[4200], mpath[4200];
    if (sp_path_join(path, sizeof path, dir, "vocab.json", err) || sp_path_join(mpath, sizeof mpath, dir, "merges.txt", err))
        return -1;
    cJSON *j = sp_json_load(path, (size_t)64 << 20, err);
    if (!j) return -1;
    int rc = 0;
    if (!cJSON_IsObject(j)) rc = sp_fail(err, "%s: not a JSON object of token -> id", path);
    for (const cJSON *e = j->child; rc == 0 && e; e = e->next) {
        if (!cJSON_IsNumber(e)) rc = sp_fail(err, "%s: token \"%.40s\": id is not a number", path, e->string);
        else rc = set_token(v, path, e->string, (long long)e->valuedouble, err);
    }
    cJSON_Delete(j);
    if (rc) return rc;
    size_t len;
    char *text = sp_read_file(mpath, (size_t)256 << 20, &len, err);
    if (!text) return -1;
    int cap = 1;
    for (size_t i = 0; i < len; i++) cap += text[i] == '\n';
    if (!(v->merges = calloc((size_t)cap, sizeof *v->merges))) rc = sp_fail(err, "out of memory");
    int line = 0;
    for (char *s = text, *nl; rc == 0 && s < text + len; s = nl + 1) {
        nl = strchr(s, '\n');
        if (!nl) nl = text + len;
        *nl = '\0';
        line++;
        size_t k = strlen(s);
        if (k && s[k - 1] == '\r') s[--k] = '\0';
        if (k == 0 || (line == 1 && !strncmp(s, "#version", 8))) continue;
        const char *sp = strchr(s + 1, ' ');
        if (!sp || sp[1] == '\0' || strchr(sp + 1, ' ')) rc = sp_fail(err, "%s:%d: not a merge \"a b\"", mpath, line);
        else if (add_merge(v, s, cap)) rc = sp_fail(err, "out of memory");
    }
    free(text);
    return rc;
}

/* tokenizer.json: model.vocab, model.merges ("a b" strings or [a, b] pairs), added_tokens. */
static int read_tokenizer_json(const char *dir, Vocab *v, SpErr *err) {
    char path[4200];
    if (sp_path_join(path, sizeof path, dir, "tokenizer.json", err)) return -1;
    cJSON *j = sp_json_load(path, (size_t)256 << 20, err);
    if (!j) return -1;
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(j, "model");
    const cJSON *vocab = model ? cJSON_GetObjectItemCaseSensitive(model, "vocab") : NULL;
    const cJSON *merges = model ? cJSON_GetObjectItemCaseSensitive(model, "merges") : NULL;
    const cJSON *type = model ? cJSON_GetObjectItemCaseSensitive(model, "type") : NULL;
    int rc = 0;
    if (!cJSON_IsString(type) || strcmp(type->valuestring, "BPE") || !cJSON_IsObject(vocab) || !cJSON_IsArray(merges))
        rc = sp_fail(err, "%s: model: expected a BPE model with a vocab object and a merges array", path);
    for (const cJSON *e = rc ? NULL : vocab->child; rc == 0 && e; e = e->next)
        rc = cJSON_IsNumber(e) ? set_token(v, path, e->string, (long long)e->valuedouble, err)
                               : sp_fail(err, "%s: model.vocab[\"%.40s\"] is not a number", path, e->string);
    int cap = rc ? 0 : cJSON_GetArraySize(merges);
    if (rc == 0 && !(v->merges = calloc((size_t)(cap ? cap : 1), sizeof *v->merges))) rc = sp_fail(err, "out of memory");
    for (const cJSON *m = rc ? NULL : merges->child; rc == 0 && m; m = m->next) {
        char pair[1024];
        if (cJSON_IsString(m)) snprintf(pair, sizeof pair, "%s", m->valuestring);
        else if (cJSON_IsArray(m) && cJSON_GetArraySize(m) == 2 && cJSON_IsString(m->child) && cJSON_IsString(m->child->next))
            snprintf(pair, sizeof pair, "%s %s", m->child->valuestring, m->child->next->valuestring);
        else rc = sp_fail(err, "%s: model.merges[%d]: not \"a b\" nor [a, b]", path, v->n_merges);
        if (rc == 0 && add_merge(v, pair, cap)) rc = sp_fail(err, "out of memory");
    }
    const cJSON *added = cJSON_GetObjectItemCaseSensitive(j, "added_tokens");
    for (const cJSON *a = cJSON_IsArray(added) ? added->child : NULL; rc == 0 && a; a = a->next) {
        long long id;
        const char *content;
        if (sp_json_int(a, path, "id", 0, v->n - 1, 0, 0, &id, err) || sp_json_str(a, path, "content", 0, &content, err)) {
            rc = -1;
            break;
        }
        if (!v->tok[id]) rc = set_token(v, path, content, id, err);
        /* llama.cpp splits both out of the text: control tokens are special (skipped when rendering
         * pieces), user-defined ones are text (Qwen's <think>) */
        const cJSON *special = cJSON_GetObjectItemCaseSensitive(a, "special");
        if (rc == 0) v->type[id] = cJSON_IsTrue(special) ? TOK_TYPE_CONTROL : TOK_TYPE_USER_DEFINED;
    }
    cJSON_Delete(j);
    return rc;
}

/* A GGUF file's tokenizer.ggml.tokens / token_type / merges as they are (re-export: llama-quantize keeps them). */
static int read_vocab_gguf(const char *path, Vocab *v, SpErr *err) {
    StArchive st;
    GgufMeta m = {0};
    const GgufKv *tokens, *types, *merges;
    int rc = gguf_open(path, &st, err) || gguf_meta_read(&st, &m, err) ||
             gguf_meta_array(&m, "tokenizer.ggml.tokens", 1, GGUF_T_STRING, &tokens, err) ||
             gguf_meta_array(&m, "tokenizer.ggml.token_type", 0, GGUF_T_I32, &types, err) ||
             gguf_meta_array(&m, "tokenizer.ggml.merges", 1, GGUF_T_STRING, &merges, err);
    if (rc == 0 && tokens->arr_n > (uint64_t)v->n)
        rc = sp_fail(err, "%s: metadata key tokenizer.ggml.tokens holds %llu entries, the model's vocabulary %d", path,
                     (unsigned long long)tokens->arr_n, v->n);
    if (rc == 0 && types && types->arr_n != tokens->arr_n)
        rc = sp_fail(err, "%s: metadata key tokenizer.ggml.token_type holds %llu entries, tokenizer.ggml.tokens %llu",
                     path, (unsigned long long)types->arr_n, (unsigned long long)tokens->arr_n);
    if (rc == 0 && !(v->merges = calloc((size_t)merges->arr_n + 1, sizeof *v->merges)))
        rc = sp_fail(err, "out of memory");
    const unsigned char *p = rc ? NULL : tokens->val;
    for (uint64_t i = 0; rc == 0 && i < tokens->arr_n; i++) {
        const char *s;
        size_t n;
        p = gguf_next_str(p, &s, &n);
        if (!(v->tok[i] = strndup(s, n))) rc = sp_fail(err, "out of memory");
        else if (types) memcpy(&v->type[i], types->val + 4 * i, 4); /* i32, not necessarily aligned */
        else v->type[i] = TOK_TYPE_NORMAL;
    }
    p = rc ? NULL : merges->val;
    for (uint64_t i = 0; rc == 0 && i < merges->arr_n; i++) {
        const char *s;
        size_t n;
        p = gguf_next_str(p, &s, &n);
        if (!(v->merges[v->n_merges++] = strndup(s, n))) rc = sp_fail(err, "out of memory");
    }
    gguf_meta_free(&m);
    st_close(&st);
    return rc;
}

/* The model's vocabulary as llama.cpp wants it: n = config vocab_size entries; path a tokenizer directory
 * or a GGUF file (model_tokenizer_load's). */
static int read_vocab(const char *path, const ModelConfig *c, Vocab *v, SpErr *err) {
    v->n = c->vocab_size;
    v->tok = calloc((size_t)v->n, sizeof *v->tok);
    v->type = calloc((size_t)v->n, sizeof *v->type);
    if (!v->tok || !v->type) return sp_fail(err, "out of memory");
    /* the tokenizer as the engine loads it: its family, and whether it adds BOS / EOS */
    Tokenizer *tk = model_tokenizer_load(path, err);
    if (!tk) return -1;
    int rc = 0;
    if (tokenizer_kind(tk) != TOK_GPT2_BPE)
        rc = sp_fail(err, "%s: a SentencePiece-style vocabulary (\"\xe2\x96\x81\" spaces, <0xNN> byte tokens): export-gguf "
                          "writes only GPT-2 byte-level BPE (tokenizer.ggml.model \"gpt2\"), as which llama.cpp would "
                          "tokenize it wrongly", tokenizer_source(tk));
    v->pre = tokenizer_pre_name(tk);
    if (rc == 0 && !v->pre)
        rc = sp_fail(err, "%s: pre_tokenizer: the Split regex is none llama.cpp names (llama-bpe, qwen2): "
                          "export-gguf cannot set tokenizer.ggml.pre", tokenizer_source(tk));
    v->add_bos = tokenizer_add_bos(tk), v->add_eos = tokenizer_add_eos(tk);
    v->bos = tokenizer_bos_id(tk), v->eos = tokenizer_eos_id(tk);
    tokenizer_free(tk);
    if (rc) return rc;
    char vocab[4200];
    if (sp_is_gguf_file(path)) rc = read_vocab_gguf(path, v, err);
    else if (sp_path_join(vocab, sizeof vocab, path, "vocab.json", err)) return -1;
    else rc = access(vocab, R_OK) == 0 ? read_vocab_merges(path, v, err) : read_tokenizer_json(path, v, err);
    if (rc) return rc;
    if (c->bos_id >= 0 && c->bos_id < v->n && v->tok[c->bos_id]) v->type[c->bos_id] = TOK_TYPE_CONTROL;
    if (c->eos_id >= 0 && c->eos_id < v->n && v->tok[c->eos_id]) v->type[c->eos_id] = TOK_TYPE_CONTROL;
    if (v->bos >= v->n) v->bos = -1; /* a tokenizer larger than the model: checked by the loader */
    if (v->eos >= v->n) v->eos = -1;
    for (int i = 0; i < v->n; i++) /* an entry per id, with a unique text (llama.cpp asserts it) */
        if (!v->tok[i]) {
            char pad[32];
            snprintf(pad, sizeof pad, "[PAD%d]", i);
            if (!(v->tok[i] = strdup(pad))) return sp_fail(err, "out of memory");
            v->type[i] = TOK_TYPE_UNUSED;
        }
    return 0;
}

/* ------------------------------------------------------------------ tensors */

typedef enum { X_COPY = 0, X_TRANSPOSE, X_ROPE_PERMUTE } Xform;

typedef struct GTensor {
    char name[GGUF_MAX_NAME];
    const StEntry *src; /* NULL: made here (gen) */
    float *gen;         /* [ne[0]] f32 values of a tensor made here (rope_freqs), owned by the plan */
    int ndim;
    int64_t ne[2];  /* ne[0]: the contiguous row length */
    DType dtype;
    Xform xform;
    int heads;      /* X_ROPE_PERMUTE: heads of this projection */
    uint64_t offset, nbytes;
} GTensor;

typedef struct Plan {
    GTensor *t;
    int n, cap;
} Plan;

static uint32_t ggml_type(DType t) {
    return t == DT_F32 ? GGML_T_F32 : t == DT_F16 ? GGML_T_F16 : t == DT_Q8_0 ? GGML_T_Q8_0 : GGML_T_BF16;
}

/* The GGUF dtype of a matrix when the file's dtype is dt. For Q8_0, llama-quantize's choices
 * (llama-quant.cpp tensor_allows_quantization, tensor_type_fallback): the position embedding is not
 * quantized (kept F32, as in the f32 file it quantizes), and a matrix whose rows (ne0) are not whole
 * Q8_0 blocks falls back to F16. */
static DType matrix_dtype(const char *gname, int64_t ne0, DType dt) {
    if (dt != DT_Q8_0) return dt;
    if (!strcmp(gname, "position_embd.weight")) return DT_F32;
    return ne0 % Q8_0_BLOCK ? DT_F16 : DT_Q8_0;
}

static GTensor *plan_slot(Plan *p, SpErr *err) {
    if (p->n == p->cap) {
        GTensor *nt = realloc(p->t, (size_t)(p->cap = p->cap ? 2 * p->cap : 64) * sizeof *nt);
        if (!nt) {
            sp_fail(err, "out of memory");
            return NULL;
        }
        p->t = nt;
    }
    GTensor *t = &p->t[p->n++];
    memset(t, 0, sizeof *t);
    return t;
}

static void plan_free(Plan *p) {
    for (int i = 0; i < p->n; i++) free(p->t[i].gen);
    free(p->t);
}

/* The archive's name for messages: the GGUF file, else model.safetensors. */
static const char *st_label(const StArchive *st) { return st->gguf ? st->files[0].path : "model.safetensors"; }

/* Adds GGUF tensor gname of ne = {ne0, ne1} (ne1 = 0: 1-D) from the checkpoint's tensor hf; from a GGUF
 * source (re-export) the tensor gname itself, already in llama.cpp's layout ([ne1, ne0]: x is X_COPY). */
static int plan_add(Plan *p, const StArchive *st, const char *hf, const char *gname, int64_t ne0, int64_t ne1,
                    DType dtype, Xform x, int heads, SpErr *err) {
    const char *src = st->gguf ? gname : hf;
    const StEntry *e = st->gguf ? st_find(st, gname) : model_find_tensor(st, hf);
    if (!e) return sp_fail(err, "%s: missing tensor %s", st_label(st), src);
    if (e->numel != ne0 * (ne1 ? ne1 : 1) ||
        (st->gguf && (e->ndim != (ne1 ? 2 : 1) || e->shape[0] != (ne1 ? ne1 : ne0))))
        return sp_fail(err, "%s: %s has %lld values in %d dimensions, expected %lld x %lld", st_label(st), src,
                       (long long)e->numel, e->ndim, (long long)(ne1 ? ne1 : 1), (long long)ne0);
    if (e->dtype != ST_F32 && e->dtype != ST_F16 && e->dtype != ST_BF16 && e->dtype != ST_Q8_0)
        return sp_fail(err, "%s: %s has dtype %s (F32, F16, BF16 or Q8_0 expected)", st_label(st), src,
                       st_dtype_name(e->dtype));
    GTensor *t = plan_slot(p, err);
    if (!t) return -1;
    snprintf(t->name, sizeof t->name, "%s", gname);
    t->src = e, t->ndim = ne1 ? 2 : 1, t->ne[0] = ne0, t->ne[1] = ne1;
    t->dtype = ne1 ? matrix_dtype(gname, ne0, dtype) : DT_F32; /* norms and biases stay F32 */
    t->xform = st->gguf ? X_COPY : x, t->heads = heads;
    t->nbytes = (uint64_t)dtype_row_bytes(t->dtype, (size_t)(ne0 * (ne1 ? ne1 : 1)));
    return 0;
}

/* llama3 rope scaling as llama.cpp reads it: rope_freqs.weight [hd/2], f32, the divisor of each
 * inverse frequency (rope_freq_divisor, as its converter's generate_extra_tensors writes them). */
static int plan_rope_freqs(Plan *p, const ModelConfig *c, SpErr *err) {
    int half = c->head_dim / 2;
    GTensor *t = plan_slot(p, err);
    if (!t) return -1;
    if (!(t->gen = malloc((size_t)half * sizeof *t->gen))) return sp_fail(err, "out of memory");
    for (int i = 0; i < half; i++) {
        t->gen[i] = (float)rope_freq_divisor(&c->rope_scaling, rope_inv_freq(c, i));
    }
    snprintf(t->name, sizeof t->name, "%s", GGUF_ROPE_FREQS);
    t->ndim = 1, t->ne[0] = half, t->dtype = DT_F32, t->nbytes = (uint64_t)half * 4;
    return 0;
}

/* Every tensor of the model's tensor table (model.c), in its order, under its GGUF name: ne = {in, out}
 * for matrices (Conv1D [in, out] transposed; RoPE q / k rows permuted where the row asks), norms and
 * biases as they are. */
static int plan_model(Plan *p, const StArchive *st, const ModelConfig *c, const ArchInfo *a, DType dt, SpErr *err) {
    TensorSpec *specs = NULL;
    int n = 0, rc = model_tensor_specs(c, &specs, &n, err);
    for (int i = 0; rc == 0 && i < n; i++) {
        const TensorSpec *t = &specs[i];
        int64_t ne0 = t->shape[0], ne1 = 0;
        Xform x = X_COPY;
        if (t->ndim == 2) {
            ne0 = t->conv1d ? t->shape[0] : t->shape[1];
            ne1 = t->conv1d ? t->shape[1] : t->shape[0];
            if (t->conv1d) x = X_TRANSPOSE;
            else if (t->rope_heads && a->gguf_permute_qk) x = X_ROPE_PERMUTE;
        }
        rc = plan_add(p, st, t->name, t->gguf_name, ne0, ne1, dt, x, x == X_ROPE_PERMUTE ? t->rope_heads : 0, err);
    }
    free(specs);
    if (rc == 0 && c->rope_scaling.kind == ROPE_SCALE_LLAMA3) rc = plan_rope_freqs(p, c, err);
    if (rc == 0 && c->rope_scaling.kind == ROPE_SCALE_FREQS) /* a GGUF source's divisors, as they are */
        rc = plan_add(p, st, GGUF_ROPE_FREQS, GGUF_ROPE_FREQS, c->head_dim / 2, 0, dt, X_COPY, 0, err);
    return rc;
}

static DType st_to_dtype(StDType t) {
    return t == ST_F16 ? DT_F16 : t == ST_BF16 ? DT_BF16 : t == ST_Q8_0 ? DT_Q8_0 : DT_F32;
}

/* The GGUF data of t (rows of ne[0] values, ne[1] rows) into out, via f32 in work / work2. */
static void convert(const GTensor *t, float *work, float *work2, void *out) {
    if (t->gen) {
        memcpy(out, t->gen, (size_t)t->nbytes);
        return;
    }
    size_t n = (size_t)t->src->numel, cols = (size_t)t->ne[0], rows = t->ndim == 2 ? (size_t)t->ne[1] : 1;
    widen(t->src->data, st_to_dtype(t->src->dtype), 0, n, work);
    const float *src = work;
    if (t->xform == X_TRANSPOSE) { /* HF [cols][rows] (Conv1D [in, out]) -> [rows][cols] */
        for (size_t r = 0; r < rows; r++)
            for (size_t k = 0; k < cols; k++) work2[r * cols + k] = work[k * rows + r];
        src = work2;
    } else if (t->xform == X_ROPE_PERMUTE) { /* per head of d rows: row 2i + j <- HF row j d/2 + i */
        size_t d = rows / (size_t)t->heads, half = d / 2;
        for (size_t h = 0; h < (size_t)t->heads; h++)
            for (size_t i = 0; i < half; i++)
                for (size_t j = 0; j < 2; j++)
                    memcpy(work2 + (h * d + 2 * i + j) * cols, work + (h * d + j * half + i) * cols, cols * sizeof *work);
        src = work2;
    }
    narrow(src, n, t->dtype, out);
}

/* ------------------------------------------------------------------ writing */

/* What the metadata holds beyond the config and the vocabulary. */
typedef struct Extra {
    const char *name;          /* general.name */
    const char *chat_template; /* tokenizer.chat_template, NULL: none */
    int32_t eos, eot, eom;     /* tokenizer.ggml.eos / eot / eom_token_id, -1: none */
} Extra;

static int eos_index(const int32_t *ids, int n, int32_t id) {
    for (int i = 0; i < n; i++)
        if (ids[i] == id) return i;
    return -1;
}

/* The end-of-sequence ids under llama.cpp's three keys: config.json's eos_token_id (an id or a list, the
 * first is eos), then the tokenizer's eos when not among them (tokenizer_config.json: Llama 3.x Instruct's
 * <|eot_id|>, Qwen's <|im_end|>). Of the ids after eos, the tokenizer's eos is eot, else the first is; the
 * other is eom (Llama 3.1 Instruct [128001, 128008, 128009], eos <|eot_id|>: eot 128009, eom 128008).
 * More ids than three are refused: llama.cpp has no key for a fourth. */
static int eos_keys(const ModelConfig *c, const Vocab *v, const char *cfg_name, Extra *x, SpErr *err) {
    int32_t ids[CFG_MAX_EOS + 1];
    int n = 0;
    for (int i = 0; i < c->n_eos; i++) ids[n++] = c->eos_ids[i];
    if (v->eos >= 0 && eos_index(ids, n, v->eos) < 0) ids[n++] = v->eos;
    if (n > 3)
        return sp_fail(err,
                       "%s: key eos_token_id: %d end-of-sequence ids (with the tokenizer's eos), GGUF has keys for 3 "
                       "(tokenizer.ggml.eos_token_id, eot_token_id, eom_token_id)",
                       cfg_name, n);
    int k = eos_index(ids, n, v->eos), t = k > 0 ? k : 1; /* eot's index */
    x->eos = n > 0 ? ids[0] : -1;
    x->eot = n > 1 ? ids[t] : -1;
    x->eom = n > 2 ? ids[t == 1 ? 2 : 1] : -1;
    return 0;
}

static void write_metadata(Meta *m, const ModelConfig *c, const ArchInfo *a, DType dt, const Vocab *v, const Extra *x) {
    const char *arch = a->gguf_arch;
    char k[96];
#define KEY(suffix) (snprintf(k, sizeof k, "%s.%s", arch, suffix), k)
    kv_str(m, "general.architecture", arch);
    kv_str(m, "general.name", x->name);
    kv_u32(m, "general.file_type", dt == DT_F32 ? FT_F32 : dt == DT_F16 ? FT_F16 : dt == DT_Q8_0 ? FT_Q8_0 : FT_BF16);
    if (dt == DT_Q8_0) kv_u32(m, "general.quantization_version", GGML_QNT_VERSION);
    kv_u32(m, KEY("context_length"), (uint32_t)c->max_pos);
    kv_u32(m, KEY("embedding_length"), (uint32_t)c->d_model);
    kv_u32(m, KEY("block_count"), (uint32_t)c->n_layers);
    kv_u32(m, KEY("feed_forward_length"), (uint32_t)c->d_ff);
    kv_u32(m, KEY("attention.head_count"), (uint32_t)c->n_heads);
    if (a->key.kv_heads) kv_u32(m, KEY("attention.head_count_kv"), (uint32_t)c->n_kv_heads);
    if (a->norm == NORM_RMS) kv_f32(m, KEY("attention.layer_norm_rms_epsilon"), c->norm_eps);
    else kv_f32(m, KEY("attention.layer_norm_epsilon"), c->norm_eps);
    if (a->pos == POS_ROPE) {
        kv_f32(m, KEY("rope.freq_base"), c->rope_theta);
        kv_u32(m, KEY("rope.dimension_count"), (uint32_t)c->head_dim);
        if (c->rope_scaling.kind == ROPE_SCALE_LINEAR) { /* llama.cpp: freq_scale = 1 / factor */
            kv_str(m, KEY("rope.scaling.type"), "linear");
            kv_f32(m, KEY("rope.scaling.factor"), c->rope_scaling.factor);
        } /* llama3: the rope_freqs.weight tensor (plan_rope_freqs), no scaling keys, as llama.cpp's converter */
    }
    if (a->gguf_vocab_size) kv_u32(m, KEY("vocab_size"), (uint32_t)c->vocab_size);
    if (c->head_dim * c->n_heads != c->d_model) {
        kv_u32(m, KEY("attention.key_length"), (uint32_t)c->head_dim);
        kv_u32(m, KEY("attention.value_length"), (uint32_t)c->head_dim);
    }
#undef KEY
    kv_str(m, "tokenizer.ggml.model", "gpt2");
    kv_str(m, "tokenizer.ggml.pre", v->pre);
    kv_arr_head(m, "tokenizer.ggml.tokens", GGUF_T_STRING, (uint64_t)v->n);
    for (int i = 0; i < v->n; i++) put_str(&m->b, v->tok[i]);
    kv_arr_head(m, "tokenizer.ggml.token_type", GGUF_T_I32, (uint64_t)v->n);
    for (int i = 0; i < v->n; i++) put_u32(&m->b, (uint32_t)v->type[i]);
    kv_arr_head(m, "tokenizer.ggml.merges", GGUF_T_STRING, (uint64_t)v->n_merges);
    for (int i = 0; i < v->n_merges; i++) put_str(&m->b, v->merges[i]);
    /* bos: config.json's, else the tokenizer's; the end-of-sequence ids: eos_keys */
    int32_t bos = c->bos_id >= 0 ? c->bos_id : v->bos;
    if (bos >= 0) kv_u32(m, "tokenizer.ggml.bos_token_id", (uint32_t)bos);
    if (x->eos >= 0) kv_u32(m, "tokenizer.ggml.eos_token_id", (uint32_t)x->eos);
    if (x->eot >= 0) kv_u32(m, "tokenizer.ggml.eot_token_id", (uint32_t)x->eot);
    if (x->eom >= 0) kv_u32(m, "tokenizer.ggml.eom_token_id", (uint32_t)x->eom);
    kv_bool(m, "tokenizer.ggml.add_bos_token", v->add_bos); /* what the engine does, not the architecture's habit */
    kv_bool(m, "tokenizer.ggml.add_eos_token", v->add_eos);
    if (x->chat_template) kv_str(m, "tokenizer.chat_template", x->chat_template);
}

/* general.name: a GGUF source's own (re-export, as llama-quantize keeps it), else the model path's last
 * component, into name[cap]. */
static int model_name(const char *model_path, const StArchive *st, char *name, size_t cap, SpErr *err) {
    const char *base = strrchr(model_path, '/');
    snprintf(name, cap, "%s", base && base[1] ? base + 1 : model_path);
    if (!st->gguf) return 0;
    GgufMeta m = {0};
    const char *s = NULL;
    size_t n = 0;
    int rc = gguf_meta_read(st, &m, err) || gguf_meta_str(&m, "general.name", 0, &s, &n, err);
    if (rc == 0 && s) snprintf(name, cap, "%.*s", (int)(n < cap ? n : cap - 1), s);
    gguf_meta_free(&m);
    return rc;
}

static uint64_t pad_to(uint64_t n) { return (n + GGUF_ALIGN - 1) / GGUF_ALIGN * GGUF_ALIGN; }

static int write_all(FILE *f, const void *p, size_t n) { return fwrite(p, 1, n, f) == n ? 0 : -1; }

static int write_padding(FILE *f, uint64_t n) {
    static const unsigned char zeros[GGUF_ALIGN] = {0};
    return n ? write_all(f, zeros, (size_t)n) : 0;
}

static int write_file(FILE *f, const Meta *m, const Plan *p, SpErr *err, const char *tmp) {
    Buf h = {0};
    put(&h, "GGUF", 4);
    put_u32(&h, 3);
    put_u64(&h, (uint64_t)p->n);
    put_u64(&h, m->n_kv);
    put(&h, m->b.p, m->b.n);
    uint64_t off = 0, max_n = 0;
    for (int i = 0; i < p->n; i++) {
        GTensor *t = &p->t[i];
        put_str(&h, t->name);
        put_u32(&h, (uint32_t)t->ndim);
        for (int d = 0; d < t->ndim; d++) put_u64(&h, (uint64_t)t->ne[d]);
        put_u32(&h, ggml_type(t->dtype));
        put_u64(&h, off);
        t->offset = off;
        off += pad_to(t->nbytes);
        uint64_t numel = t->src ? (uint64_t)t->src->numel : (uint64_t)t->ne[0];
        if (numel > max_n) max_n = numel;
    }
    float *work = malloc(max_n * sizeof *work), *work2 = malloc(max_n * sizeof *work2);
    void *out = malloc(max_n * sizeof(float));
    int rc = h.oom || !work || !work2 || !out ? sp_fail(err, "out of memory") : 0;
    if (rc == 0 && (write_all(f, h.p, h.n) || write_padding(f, pad_to(h.n) - h.n))) rc = sp_fail(err, "%s: write failed: %s", tmp, strerror(errno ? errno : EIO));
    for (int i = 0; rc == 0 && i < p->n; i++) {
        const GTensor *t = &p->t[i];
        convert(t, work, work2, out);
        if (write_all(f, out, (size_t)t->nbytes) || write_padding(f, pad_to(t->nbytes) - t->nbytes))
            rc = sp_fail(err, "%s: write failed (tensor %s): %s", tmp, t->name, strerror(errno ? errno : EIO));
    }
    free(h.p), free(work), free(work2), free(out);
    return rc;
}

/* What llama.cpp's graph for the architecture cannot run is refused; path (config.json or the GGUF file)
 * names the source in messages. */
static int check_exportable(const ModelConfig *c, const ArchInfo *a, const char *path, SpErr *err) {
    if (!a->gguf_arch)
        return sp_fail(err, "%s: %s: llama.cpp has no %s architecture to export to", path, a->title, a->title);
    if (c->scale_attn_by_layer)
        return sp_fail(err, "%s: scale_attn_by_inverse_layer_idx: llama.cpp's %s does not scale by layer", path,
                       a->gguf_arch);
    if (a->pos == POS_ROPE && c->head_dim % 2)
        return sp_fail(err, "%s: head_dim %d is odd: RoPE pairs need an even one", path, c->head_dim);
    if ((c->rope_scaling.kind == ROPE_SCALE_LLAMA3 || c->rope_scaling.kind == ROPE_SCALE_FREQS) && !a->gguf_rope_freqs)
        return sp_fail(err, "%s: rope_scaling llama3: llama.cpp's %s applies no per-frequency factors", path,
                       a->gguf_arch);
    if (!a->head_dim_free && c->head_dim * c->n_heads != c->d_model)
        return sp_fail(err, "%s: head_dim %d x %d heads != hidden size %d: llama.cpp's %s needs them equal", path,
                       c->head_dim, c->n_heads, c->d_model, a->gguf_arch);
    return 0;
}

int gguf_export(const char *model_path, const char *tok_path, const char *chat_template, const char *out_path,
                DType dtype, GgufSummary *sum, SpErr *err) {
    memset(sum, 0, sizeof *sum);
    char path[4200], tmp[4300], name[256];
    ModelConfig c;
    StArchive st;
    Vocab v = {0};
    Plan p = {0};
    Meta m = {0};
    FILE *f = NULL;
    Extra x = {name, chat_template, -1, -1, -1};
    /* the config and weights as every command loads them: a directory, or a GGUF file alone (re-export) */
    int rc = model_open(model_path, &c, &st, err);
    if (sp_is_gguf_file(model_path)) snprintf(path, sizeof path, "%s", model_path);
    else if (rc == 0) rc = sp_path_join(path, sizeof path, model_path, "config.json", err);
    const ArchInfo *a = rc ? NULL : arch_info(c.arch);
    if (rc == 0) rc = check_exportable(&c, a, path, err);
    const char *inputs[] = {model_path, tok_path};
    if (rc == 0)
        rc = sp_output_check_inputs(out_path, inputs, 2, err) ||
             read_vocab(tok_path ? tok_path : model_path, &c, &v, err) || eos_keys(&c, &v, path, &x, err) ||
             model_name(model_path, &st, name, sizeof name, err);
    if (rc == 0) rc = plan_model(&p, &st, &c, a, dtype, err);
    if (rc == 0) {
        write_metadata(&m, &c, a, dtype, &v, &x);
        if (m.b.oom) rc = sp_fail(err, "out of memory");
    }
    if (rc == 0 && !(f = sp_output_fopen_tmp(out_path, tmp, sizeof tmp, err))) rc = -1;
    if (rc == 0) rc = write_file(f, &m, &p, err, tmp);
    if (f) {
        if (fclose(f) != 0 && rc == 0) rc = sp_fail(err, "%s: write failed: %s", tmp, strerror(errno ? errno : EIO));
        if (rc == 0) rc = sp_output_commit(tmp, out_path, err);
        else sp_output_discard(tmp);
    }
    if (rc == 0) {
        sum->n_tensors = p.n, sum->n_tokens = v.n, sum->n_merges = v.n_merges;
        FILE *g = fopen(out_path, "rb");
        if (g && fseek(g, 0, SEEK_END) == 0) sum->bytes = ftell(g);
        if (g) fclose(g);
    }
    free(m.b.p);
    plan_free(&p);
    vocab_free(&v);
    st_close(&st);
    config_free(&c);
    return rc;
}
