/* model.c - loading a checkpoint and the batched forward pass.
 *
 * Notation: n = tokens in this call, p0 = first position, T = p0 + n keys visible at most,
 * d = hidden size, H / Hkv = query / key-value heads, hd = head size, V = vocab.
 *
 *   GPT-2 / GPT-Neo:  x = wte[tok] + wpe[pos]
 *                     x += Attn(LN1(x));  x += MLP(LN2(x))        MLP = proj(act(fc(.)))
 *   Llama, Qwen2/3:   x = embed[tok]
 *                     x += Attn(RMS1(x)); x += down(silu(gate(.)) * up(.))   (RoPE on q, k, its
 *                     frequencies rescaled by rope_scaling; Qwen3: RMSNorm on each head's q, k first)
 *   all:              hidden = final_norm(x);  logits = hidden lm_head^T
 *
 * Which of these a model runs comes from its row in arch.c's table (ArchInfo: norm, positions, qkv
 * layout, MLP kind, attention scale, biases, tensor names); nothing here compares architecture ids.
 */
#include "model.h"

#include <cblas.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "arch.h"
#include "fsutil.h"
#include "jsonutil.h"
#include "kernels.h"
#include "gguf.h"
#include "safetensors.h"

typedef struct Layer {
    const float *ln1_w, *ln1_b, *ln2_w, *ln2_b; /* f32 copies, owned by Model.owned */
    LinearW qkv;                                /* GPT-2: fused [d, 3d] */
    LinearW q, k, v, o;                         /* GPT-Neo, Llama */
    const float *qn_w, *kn_w;                   /* [hd] per-head q / k RMSNorm weights (Qwen3), f32 copies */
    LinearW fc, proj;                           /* GPT-2, GPT-Neo MLP */
    LinearW gate, up, down;                     /* Llama MLP */
} Layer;

struct Model {
    ModelConfig cfg;
    const ArchInfo *ai; /* cfg.arch's row */
    StArchive st;
    Tensor wte; /* [V, d] */
    Tensor wpe; /* [max_pos, d], GPT-2 / GPT-Neo */
    Layer *layers;
    const float *lnf_w, *lnf_b;
    LinearW lm_head; /* logical [d, V] */
    float **owned;
    int n_owned;
    int64_t n_params, weight_bytes;
    int bf16_dot; /* bf16 matrices by bf16 dot products (model_bf16_dot_default), else widened exactly */
    int q8_vnni;  /* Q8_0 panels by int8 dot products (model_q8_vnni_default), else widened exactly */
    const float *rope_divisors; /* [head_dim / 2] ROPE_SCALE_FREQS: rope_freqs.weight in the file map; else NULL */
};

/* ------------------------------------------------------------------ tensor table */

typedef struct SpecList {
    TensorSpec *v;
    int n, cap;
} SpecList;

static int add_spec(SpecList *l, TensorRole role, int64_t d0, int64_t d1, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

#include <stdarg.h>
static int add_spec(SpecList *l, TensorRole role, int64_t d0, int64_t d1, const char *fmt, ...) {
    if (l->n == l->cap) {
        int ncap = l->cap ? l->cap * 2 : 64;
        TensorSpec *nv = realloc(l->v, (size_t)ncap * sizeof *nv);
        if (!nv) return -1;
        l->v = nv;
        l->cap = ncap;
    }
    TensorSpec *s = &l->v[l->n++];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->name, sizeof s->name, fmt, ap);
    va_end(ap);
    s->role = role;
    s->ndim = d1 > 0 ? 2 : 1;
    s->shape[0] = d0;
    s->shape[1] = d1 > 0 ? d1 : 0;
    return 0;
}

/* One slot of a layer: a norm (weight [+ bias]) or a matrix (weight [+ bias]) that the row's traits
 * imply. The tensor table, the loader and the GGUF export all walk this list, in this order (which is
 * also init-random's: it draws the weights in table order). */
typedef enum { S_ATTN_NORM, S_QKV, S_Q, S_K, S_V, S_O, S_Q_NORM, S_K_NORM, S_MLP_NORM, S_GATE, S_UP, S_DOWN, S_COUNT } SlotId;
typedef struct Slot {
    SlotId id;
    const char *name; /* the row's pattern */
    int64_t out, in;  /* a matrix's logical shape; a norm's length in out (in = 0) */
    int bias;
    int rope_heads;   /* q / k under RoPE: heads (GGUF export permutes their rows) */
} Slot;

/* llama.cpp's names for the slots (blk.N.<name>.weight / .bias). */
static const char *const slot_gguf[S_COUNT] = {"attn_norm",   "attn_qkv",    "attn_q",      "attn_k",
                                               "attn_v",      "attn_output", "attn_q_norm", "attn_k_norm",
                                               "ffn_norm",    "ffn_gate",    "ffn_up",      "ffn_down"};

static int layer_slots(const ArchInfo *a, const ModelConfig *c, Slot *s) {
    int64_t d = c->d_model, f = c->d_ff, qd = (int64_t)c->n_heads * c->head_dim, kvd = (int64_t)c->n_kv_heads * c->head_dim;
    int nb = a->norm == NORM_LAYER, rope = a->pos == POS_ROPE, n = 0;
    const ArchNames *N = &a->names;
    s[n++] = (Slot){S_ATTN_NORM, N->attn_norm, d, 0, nb, 0};
    if (a->qkv == QKV_FUSED) {
        s[n++] = (Slot){S_QKV, N->qkv, 3 * d, d, a->qkv_bias, 0};
    } else {
        s[n++] = (Slot){S_Q, N->q, qd, d, a->qkv_bias, rope ? c->n_heads : 0};
        s[n++] = (Slot){S_K, N->k, kvd, d, a->qkv_bias, rope ? c->n_kv_heads : 0};
        s[n++] = (Slot){S_V, N->v, kvd, d, a->qkv_bias, 0};
    }
    s[n++] = (Slot){S_O, N->o, d, qd, a->o_bias, 0};
    if (a->qk_norm == QK_NORM_HEAD_RMS) { /* one [hd] weight each, shared by the heads */
        s[n++] = (Slot){S_Q_NORM, N->q_norm, c->head_dim, 0, 0, 0};
        s[n++] = (Slot){S_K_NORM, N->k_norm, c->head_dim, 0, 0, 0};
    }
    s[n++] = (Slot){S_MLP_NORM, N->mlp_norm, d, 0, nb, 0};
    if (a->mlp == MLP_SWIGLU) s[n++] = (Slot){S_GATE, N->gate, f, d, a->mlp_bias, 0};
    s[n++] = (Slot){S_UP, N->up, f, d, a->mlp_bias, 0};
    s[n++] = (Slot){S_DOWN, N->down, d, f, a->mlp_bias, 0};
    return n;
}

/* pattern with "%d" replaced by layer, then suffix. */
static void expand(char *out, size_t cap, const char *pattern, int layer, const char *suffix) {
    const char *at = strstr(pattern, "%d");
    if (at) snprintf(out, cap, "%.*s%d%s%s", (int)(at - pattern), pattern, layer, at + 2, suffix);
    else snprintf(out, cap, "%s%s", pattern, suffix);
}

/* Adds one tensor: name from pattern/layer/suffix, GGUF name from gpattern (NULL: none). */
static int add_tensor(SpecList *l, TensorRole role, int64_t d0, int64_t d1, const char *pattern, int layer,
                      const char *suffix, const char *gpattern, int conv1d, int rope_heads) {
    char name[96], g[64] = "";
    expand(name, sizeof name, pattern, layer, suffix);
    if (gpattern) expand(g, sizeof g, gpattern, layer, suffix);
    if (add_spec(l, role, d0, d1, "%s", name)) return -1;
    TensorSpec *t = &l->v[l->n - 1];
    snprintf(t->gguf_name, sizeof t->gguf_name, "%s", g);
    t->conv1d = conv1d;
    t->rope_heads = rope_heads;
    return 0;
}

/* An embedding-like [rows, d] matrix or a final-norm vector (no layer index). */
static int add_global(SpecList *l, TensorRole role, int64_t d0, int64_t d1, const char *pattern, const char *suffix,
                      const char *gname) {
    return add_tensor(l, role, d0, d1, pattern, 0, suffix, gname, 0, 0);
}

static int specs_from_row(const ArchInfo *a, const ModelConfig *c, SpecList *l) {
    int64_t d = c->d_model;
    const ArchNames *N = &a->names;
    int conv = a->weights == W_CONV1D, rc = add_global(l, TR_MATRIX, c->vocab_size, d, N->embed, ".weight", "token_embd");
    if (a->pos == POS_LEARNED) rc |= add_global(l, TR_MATRIX, c->max_pos, d, N->pos_embed, ".weight", "position_embd");
    Slot s[S_COUNT];
    int ns = layer_slots(a, c, s);
    for (int i = 0; i < c->n_layers; i++) {
        for (int k = 0; k < ns; k++) {
            char g[32];
            snprintf(g, sizeof g, "blk.%%d.%s", slot_gguf[s[k].id]);
            if (s[k].in == 0) { /* a norm */
                rc |= add_tensor(l, TR_NORM_WEIGHT, s[k].out, 0, s[k].name, i, ".weight", g, 0, 0);
            } else if (conv) { /* Conv1D stores [in, out] */
                rc |= add_tensor(l, TR_MATRIX, s[k].in, s[k].out, s[k].name, i, ".weight", g, 1, s[k].rope_heads);
            } else {
                rc |= add_tensor(l, TR_MATRIX, s[k].out, s[k].in, s[k].name, i, ".weight", g, 0, s[k].rope_heads);
            }
            if (s[k].bias) rc |= add_tensor(l, TR_BIAS, s[k].out, 0, s[k].name, i, ".bias", g, 0, 0);
        }
    }
    rc |= add_global(l, TR_NORM_WEIGHT, d, 0, N->final_norm, ".weight", "output_norm");
    if (a->norm == NORM_LAYER) rc |= add_global(l, TR_BIAS, d, 0, N->final_norm, ".bias", "output_norm");
    if (!c->tie_embeddings) rc |= add_global(l, TR_MATRIX, c->vocab_size, d, N->lm_head, ".weight", "output");
    return rc;
}

int model_tensor_specs(const ModelConfig *cfg, TensorSpec **out, int *n, SpErr *err) {
    const ArchInfo *a = arch_info(cfg->arch);
    if (!a) return sp_fail(err, "internal: unknown architecture id %d", (int)cfg->arch);
    SpecList l = {0};
    int rc = specs_from_row(a, cfg, &l);
    if (rc != 0) {
        free(l.v);
        return sp_fail(err, "out of memory listing tensors");
    }
    *out = l.v;
    *n = l.n;
    return 0;
}

/* ------------------------------------------------------------------ loading */

/* Finds a tensor under its canonical name or the prefix variants real checkpoints use
 * (original gpt2 files have no "transformer." prefix; some exports drop "model."). */
const StEntry *model_find_tensor(const StArchive *st, const char *name) {
    const StEntry *e = st_find(st, name);
    if (e) return e;
    static const char *const prefixes[] = {"transformer.", "model."};
    for (size_t i = 0; i < 2; i++) {
        size_t k = strlen(prefixes[i]);
        if (strncmp(name, prefixes[i], k) == 0 && (e = st_find(st, name + k))) return e;
    }
    return NULL;
}

static const char *st_label(const Model *m) {
    if (m->st.gguf) { /* DIR/model.gguf or a GGUF file alone: the file's name */
        const char *slash = strrchr(m->st.files[0].path, '/');
        return slash ? slash + 1 : m->st.files[0].path;
    }
    return m->st.n_files > 1 ? "model.safetensors.index.json" : "model.safetensors";
}

static void shape_str(char *buf, size_t cap, const int64_t *shape, int ndim) {
    size_t k = (size_t)snprintf(buf, cap, "[");
    for (int i = 0; i < ndim && k < cap; i++) k += (size_t)snprintf(buf + k, cap - k, "%s%lld", i ? "," : "", (long long)shape[i]);
    if (k < cap) snprintf(buf + k, cap - k, "]");
}

static int own(Model *m, float *v, SpErr *err);

/* Llama's q / k rows as llama.cpp stores them (gguf.h: within each head of d rows, GGUF row 2i + j is
 * Hugging Face row j d/2 + i) back in Hugging Face's rotate-half order, into an owned copy. */
static const void *unpermute_rope_rows(Model *m, const StEntry *e, int heads, SpErr *err) {
    size_t rows = (size_t)e->shape[0], row_bytes = e->nbytes / rows, d = rows / (size_t)heads, half = d / 2;
    char *dst = malloc(e->nbytes);
    if (own(m, (float *)dst, err)) return NULL;
    const char *src = e->data;
    for (size_t h = 0; h < (size_t)heads; h++)
        for (size_t i = 0; i < half; i++)
            for (size_t j = 0; j < 2; j++)
                memcpy(dst + (h * d + j * half + i) * row_bytes, src + (h * d + 2 * i + j) * row_bytes, row_bytes);
    return dst;
}

/* Looks up spec (under its GGUF name in a GGUF file, where every matrix is stored [out, in]: a
 * Conv1D's shape is the spec's transposed), checks dtype and shape, returns a view. */
static int bind(Model *m, const TensorSpec *spec, Tensor *t, SpErr *err) {
    int gguf = m->st.gguf, flip = gguf && spec->conv1d && spec->ndim == 2;
    const char *name = gguf ? spec->gguf_name : spec->name;
    const StEntry *e = gguf ? st_find(&m->st, name) : model_find_tensor(&m->st, name);
    if (!e) return sp_fail(err, "%s: missing tensor %s", st_label(m), name);
    const char *file = st_entry_file(&m->st, e);
    if (e->dtype == ST_F32) t->dtype = DT_F32;
    else if (e->dtype == ST_F16) t->dtype = DT_F16;
    else if (e->dtype == ST_BF16) t->dtype = DT_BF16;
    else if (e->dtype == ST_Q8_0 && spec->ndim == 2) t->dtype = DT_Q8_0;
    else return sp_fail(err, "%s: tensor %s has dtype %s; supported: F32, F16, BF16 (and Q8_0 matrices from GGUF)", file, e->name, st_dtype_name(e->dtype));
    int same = e->ndim == spec->ndim;
    for (int i = 0; same && i < spec->ndim; i++) same = e->shape[i] == spec->shape[flip ? spec->ndim - 1 - i : i];
    if (!same) {
        char have[128], want[128];
        shape_str(have, sizeof have, e->shape, e->ndim);
        int64_t ws[2] = {spec->shape[flip], spec->shape[!flip]};
        shape_str(want, sizeof want, spec->ndim == 2 ? ws : spec->shape, spec->ndim);
        return sp_fail(err, "%s: tensor %s has shape %s, config says %s", file, e->name, have, want);
    }
    t->data = e->data;
    if (gguf && spec->rope_heads && m->ai->gguf_permute_qk && !(t->data = unpermute_rope_rows(m, e, spec->rope_heads, err)))
        return -1;
    t->ndim = e->ndim;
    for (int i = 0; i < e->ndim && i < 4; i++) t->shape[i] = e->shape[i];
    m->n_params += e->numel;
    m->weight_bytes += (int64_t)e->nbytes;
    return 0;
}

/* Takes ownership of v (freed by model_free); frees it and fails when the list cannot grow. */
static int own(Model *m, float *v, SpErr *err) {
    float **no = v ? realloc(m->owned, (size_t)(m->n_owned + 1) * sizeof *no) : NULL;
    if (!no) {
        free(v);
        return sp_fail(err, "out of memory");
    }
    m->owned = no;
    m->owned[m->n_owned++] = v;
    return 0;
}

/* Small vectors (norm weights, biases) are widened once to owned f32 copies. */
static const float *own_f32(Model *m, const Tensor *t, SpErr *err) {
    size_t n = (size_t)t->shape[0];
    float *v = malloc(n * sizeof *v);
    if (own(m, v, err)) return NULL;
    widen(t->data, t->dtype, 0, n, v);
    return v;
}

/* Drops this process's copies of the whole pages inside [p, p + n) of a read-only file mapping
 * (the stored layout of a matrix the loader has copied), so peak RSS does not count both. */
static void drop_pages(const void *p, size_t n) {
    long pg = sysconf(_SC_PAGESIZE);
    if (pg <= 0) return;
    uintptr_t a = ((uintptr_t)p + (uintptr_t)pg - 1) / (uintptr_t)pg * (uintptr_t)pg;
    uintptr_t b = ((uintptr_t)p + n) / (uintptr_t)pg * (uintptr_t)pg;
    if (b > a) (void)madvise((void *)a, b - a, MADV_DONTNEED);
}

/* A cursor over the spec table in the order specs_*() emitted it. */
typedef struct Binder {
    Model *m;
    const TensorSpec *specs;
    int i, n;
    SpErr *err;
} Binder;

static int next_tensor(Binder *b, Tensor *t) {
    if (b->i >= b->n) return sp_fail(b->err, "internal: tensor table exhausted");
    return bind(b->m, &b->specs[b->i++], t, b->err);
}

static int next_vec(Binder *b, const float **out) {
    Tensor t;
    if (next_tensor(b, &t)) return -1;
    *out = own_f32(b->m, &t, b->err);
    return *out ? 0 : -1;
}

/* out_major: stored [out, in] (nn.Linear) or [in, out] (Conv1D). */
static int next_linear(Binder *b, int out_major, LinearW *L) {
    Tensor t;
    if (next_tensor(b, &t)) return -1;
    L->w = t.data;
    L->dtype = t.dtype;
    L->out_major = out_major;
    L->in = (int)(out_major ? t.shape[1] : t.shape[0]);
    L->out = (int)(out_major ? t.shape[0] : t.shape[1]);
    L->bias = NULL;
    L->few_rows = 0; /* relayout_weights decides both */
    L->panels = 0;
    return 0;
}

/* Where a slot's tensors go in a Layer. */
static int bind_slot(Binder *b, const Slot *s, int out_major, Layer *Ly, int swiglu) {
    if (s->id == S_Q_NORM || s->id == S_K_NORM) return next_vec(b, s->id == S_Q_NORM ? &Ly->qn_w : &Ly->kn_w);
    if (s->id == S_ATTN_NORM || s->id == S_MLP_NORM) {
        const float **w = s->id == S_ATTN_NORM ? &Ly->ln1_w : &Ly->ln2_w, **bias = s->id == S_ATTN_NORM ? &Ly->ln1_b : &Ly->ln2_b;
        return next_vec(b, w) || (s->bias && next_vec(b, bias));
    }
    LinearW *L = s->id == S_QKV ? &Ly->qkv : s->id == S_Q ? &Ly->q : s->id == S_K ? &Ly->k : s->id == S_V ? &Ly->v
               : s->id == S_O ? &Ly->o : s->id == S_GATE ? &Ly->gate : s->id == S_UP ? (swiglu ? &Ly->up : &Ly->fc)
               : (swiglu ? &Ly->down : &Ly->proj);
    return next_linear(b, out_major, L) || (s->bias && next_vec(b, &L->bias));
}

static int bind_layers(Binder *b) {
    Model *m = b->m;
    const ModelConfig *c = &m->cfg;
    const ArchInfo *a = m->ai;
    if (next_tensor(b, &m->wte)) return -1;
    if (a->pos == POS_LEARNED && next_tensor(b, &m->wpe)) return -1;
    Slot s[S_COUNT];
    int ns = layer_slots(a, c, s), out_major = a->weights == W_LINEAR || m->st.gguf; /* GGUF: all [out, in] */
    for (int i = 0; i < c->n_layers; i++)
        for (int k = 0; k < ns; k++)
            if (bind_slot(b, &s[k], out_major, &m->layers[i], a->mlp == MLP_SWIGLU)) return -1;
    if (next_vec(b, &m->lnf_w)) return -1;
    if (a->norm == NORM_LAYER && next_vec(b, &m->lnf_b)) return -1;
    if (c->tie_embeddings) {
        m->lm_head =
            (LinearW){.w = m->wte.data, .dtype = m->wte.dtype, .in = c->d_model, .out = c->vocab_size, .out_major = 1};
    } else if (next_linear(b, 1, &m->lm_head)) {
        return -1;
    }
    return 0;
}

/* Bytes of matrix L as stored. */
static size_t matrix_bytes(const LinearW *L) { return dtype_row_bytes(L->dtype, (size_t)L->in * (size_t)L->out); }

/* A matrix the few-row kernel takes (f32 always; bf16/f16 where this CPU has the instructions). */
static int kernel_takes(const LinearW *L) { return L->w && kernel_half_supported(ISA_AUTO, L->dtype); }

/* Every weight matrix the few-row kernel takes (and the tied embedding, which is the LM head),
 * in layer order. */
static int kernel_matrices(Model *m, LinearW **out) {
    int n = 0;
    for (int i = 0; i < m->cfg.n_layers; i++) {
        Layer *Ly = &m->layers[i];
        LinearW *all[] = {&Ly->qkv, &Ly->q, &Ly->k, &Ly->v, &Ly->o, &Ly->fc, &Ly->proj, &Ly->gate, &Ly->up, &Ly->down};
        for (size_t k = 0; k < sizeof all / sizeof *all; k++)
            if (kernel_takes(all[k])) {
                if (out) out[n] = all[k];
                n++;
            }
    }
    if (kernel_takes(&m->lm_head)) {
        if (out) out[n] = &m->lm_head;
        n++;
    }
    return n;
}

#define ARENA_ALIGN ((size_t)64)
#define HUGE_PAGE ((size_t)1 << 21)

/* Matrices below this many bytes stay out-major: they live in L2 between tokens, and there the
 * few-row kernel's one-row path (tuned for the default draft's 96-wide rows) decodes ~25% faster than
 * the panel kernel's per-panel passes (measured on the default draft: 27.5k vs 21.6k tokens/s). */
#define PANEL_MIN_BYTES ((size_t)256 << 10)

/* The packed layout a matrix gets: panels of its own dtype (f32, or f16 / bf16 widened in registers)
 * on an AVX-512 CPU (the broadcast kernel, any row count) when it is not L2-sized. Q8_0 matrices the
 * int8 dot products take (Model.q8_vnni) are packed whatever their size: the few-row kernel would widen
 * the small ones with f32 activations, so one model would mix two numerics, and the VNNI panels are
 * faster at every size (bench/README.md: the regime draft's Q8_0 decode 1.75x, the regime target's
 * 1.30x, closer to llama.cpp's logits). A tied LM head is packed too; the embedding lookup then keeps
 * reading its rows from the file map (a few rows per token). */
/* A Q8_0 matrix the int8 dot-product kernels take (the model's choice, on a CPU with AVX512_VNNI). */
static int takes_q8_vnni(const Model *m, const LinearW *L) { return m->q8_vnni && L->dtype == DT_Q8_0; }

static int packs_to_panels(const Model *m, const LinearW *L) {
    if (takes_q8_vnni(m, L)) return kernel_panel_supported();
    return kernel_panel_supported() && matrix_bytes(L) >= PANEL_MIN_BYTES;
}

/* A bf16 matrix the bf16 dot-product kernels take (the model's choice, on a CPU with AVX512_BF16). */
static int takes_bf16_dot(const Model *m, const LinearW *L) { return m->bf16_dot && L->dtype == DT_BF16; }

/* Arena bytes of matrix L in its new layout, rounded up to ARENA_ALIGN. */
static size_t arena_bytes(const Model *m, const LinearW *L) {
    size_t bytes = !packs_to_panels(m, L)  ? matrix_bytes(L)
                   : takes_bf16_dot(m, L) ? panel_bytes_bf16_dot(L->in, L->out)
                                          : panel_bytes(L->dtype, L->in, L->out);
    return (bytes + ARENA_ALIGN - 1) / ARENA_ALIGN * ARENA_ALIGN;
}

/* The kernel's matrices move from the file map into one owned arena in their stored dtype, 64-byte
 * aligned, backed by transparent huge pages where the kernel allows: matrices of >= PANEL_MIN_BYTES
 * (f32, f16, bf16, Q8_0; Q8_0 of any size when the model takes int8 dot products: packs_to_panels)
 * packed into panels for the broadcast kernel (kernels.h) where the CPU has
 * AVX-512 (bf16 as pair panels for the bf16 dot products, Q8_0 in 4-input groups for the int8 ones,
 * where the model takes those paths: takes_bf16_dot, Model.q8_vnni),
 * every other one out-major (GPT-2's
 * Conv1D [in, out] is transposed) for the few-row kernel. Both kernels stream their layout
 * sequentially, and 4 kB pages cost them ~20% of their bandwidth (TLB misses; hardware prefetchers
 * stop at page boundaries). The stored pages are dropped as each matrix is copied, so peak RSS stays
 * ~1x the weights. Matrices no kernel takes (f16/bf16 on a CPU without AVX2) stay mapped and are
 * widened tile by tile. */
static int relayout_weights(Model *m, SpErr *err) {
    int n = kernel_matrices(m, NULL);
    if (n == 0) return 0;
    LinearW **mats = malloc((size_t)n * sizeof *mats);
    if (!mats) return sp_fail(err, "out of memory");
    kernel_matrices(m, mats);
    size_t total = 0;
    for (int i = 0; i < n; i++) total += arena_bytes(m, mats[i]);
    size_t align = total >= HUGE_PAGE ? HUGE_PAGE : ARENA_ALIGN;
    float *arena = aligned_alloc(align, (total + align - 1) / align * align); /* float* only for Model.owned */
    if (own(m, arena, err)) {
        free(mats);
        return -1;
    }
    if (align == HUGE_PAGE) (void)madvise(arena, total, MADV_HUGEPAGE);
    char *at = (char *)arena;
    for (int i = 0; i < n; i++) {
        LinearW *L = mats[i];
        size_t bytes = matrix_bytes(L), step = arena_bytes(m, L);
        void *dst = at;
        int panels = packs_to_panels(m, L), bf16_dot = takes_bf16_dot(m, L);
        int q8_vnni = panels && takes_q8_vnni(m, L);
        if (q8_vnni)
            panel_pack_q8_vnni(L->w, L->in, L->out, dst);
        else if (panels && bf16_dot)
            panel_pack_bf16_dot(L->w, L->in, L->out, L->out_major, dst);
        else if (panels)
            panel_pack(L->w, L->dtype, L->in, L->out, L->out_major, dst);
        else if (L->out_major)
            memcpy(dst, L->w, bytes);
        else
            transpose_elems(L->w, L->in, L->out, dtype_row_bytes(L->dtype, 1), dst); /* [in, out] -> [out, in] (never Q8_0) */
        if (st_is_mapped(&m->st, L->w)) drop_pages(L->w, bytes);
        if (L == &m->lm_head && m->wte.data == L->w && !panels) m->wte.data = dst; /* tied: same [V, d] bytes */
        L->w = dst;
        L->out_major = 1;
        L->panels = panels;
        L->few_rows = !panels;
        L->bf16_dot = bf16_dot;
        L->q8_vnni = q8_vnni;
        at += step;
    }
    free(mats);
    return 0;
}

int model_q8_vnni_default(void) {
    const char *v = getenv(Q8_ENV);
    return kernel_q8_vnni_supported() && !(v && !strcmp(v, "widen"));
}

int model_bf16_dot_default(void) {
    const char *v = getenv(BF16_ENV);
    return kernel_bf16_dot_supported() && !(v && !strcmp(v, "exact"));
}

int model_open(const char *path, ModelConfig *cfg, StArchive *st, SpErr *err) {
    memset(cfg, 0, sizeof *cfg);
    memset(st, 0, sizeof *st);
    if (sp_is_gguf_file(path)) {
        GgufMeta meta;
        if (gguf_open(path, st, err) || gguf_meta_read(st, &meta, err)) return -1;
        int rc = gguf_config_read(st, &meta, cfg, err);
        gguf_meta_free(&meta);
        return rc;
    }
    char file[4096];
    if (sp_path_join(file, sizeof file, path, "config.json", err) || config_load(file, cfg, err) ||
        sp_path_join(file, sizeof file, path, GGUF_MODEL_FILE, err))
        return -1;
    return access(file, F_OK) == 0 ? gguf_open(file, st, err) : st_open_dir(path, st, err);
}

Model *model_load(const char *dir, SpErr *err) {
    Model *m = calloc(1, sizeof *m);
    if (!m) {
        sp_fail(err, "out of memory");
        return NULL;
    }
    TensorSpec *specs = NULL;
    int n_specs = 0;
    if (model_open(dir, &m->cfg, &m->st, err)) goto fail;
    if (m->cfg.rope_scaling.kind == ROPE_SCALE_FREQS) /* checked by gguf_config_read */
        m->rope_divisors = st_find(&m->st, GGUF_ROPE_FREQS)->data;
    m->ai = arch_info(m->cfg.arch);
    m->bf16_dot = model_bf16_dot_default();
    m->q8_vnni = model_q8_vnni_default();
    m->layers = calloc((size_t)m->cfg.n_layers, sizeof *m->layers);
    if (!m->layers) {
        sp_fail(err, "out of memory");
        goto fail;
    }
    if (model_tensor_specs(&m->cfg, &specs, &n_specs, err)) goto fail;
    Binder b = {m, specs, 0, n_specs, err};
    if (bind_layers(&b) || relayout_weights(m, err)) goto fail;
    free(specs);
    return m;
fail:
    free(specs);
    model_free(m);
    return NULL;
}

void model_free(Model *m) {
    if (!m) return;
    for (int i = 0; i < m->n_owned; i++) free(m->owned[i]);
    free(m->owned);
    free(m->layers);
    st_close(&m->st);
    config_free(&m->cfg);
    free(m);
}

const ModelConfig *model_config(const Model *m) { return &m->cfg; }
int64_t model_n_params(const Model *m) { return m->n_params; }
int64_t model_weight_bytes(const Model *m) { return m->weight_bytes; }

int suggest_threads(int64_t weight_bytes, int n_cores) {
    return weight_bytes < SMALL_MODEL_BYTES || n_cores < 1 ? 1 : n_cores;
}

/* ------------------------------------------------------------------ session */

/* The activations of one forward call: `rows` rows stacked, each session's rows contiguous (a Session
 * owns one for its own calls, a ForwardBatch one for many sessions'). R = rows capacity. */
typedef struct Acts {
    int rows;
    float *x;      /* [R, d] residual stream */
    float *xn;     /* [R, max(d, H*hd)] normed input / projection output */
    float *q;      /* [R, H*hd] queries (GPT-2: [R, 3d] fused qkv) */
    float *k, *v;  /* [R, Hkv*hd] new keys / values before they go to each session's cache */
    float *att;    /* [R, H*hd] attention output */
    float *ff_a;   /* [R, d_ff] */
    float *ff_b;   /* [R, d_ff] Llama up projection */
    float *hidden; /* [R, d] final-norm output */
    float *logits; /* [R, V] */
    float *tile;   /* [tile_elems] widened f16/bf16 weights */
    size_t tile_elems;
} Acts;

struct Session {
    const Model *m;
    int max_ctx, max_batch, len;
    Acts a;        /* activations, R = max_batch */
    float *scores; /* [max_batch, max_ctx] one head's attention weights */
    float *kc, *vc;             /* [L, max_ctx, Hkv*hd] */
    float *rope_cos, *rope_sin; /* [max_ctx, hd/2] Llama */
    /* session_probe: >= 0 while a probe runs: the query attends to cache positions [0, probe_keys)
     * only, and its own keys/values go to probe_k / probe_v [Hkv*hd] (never read), not the cache */
    int probe_keys;
    float *probe_k, *probe_v;
    /* session_candidates: 1 while candidates run: every row sits at position len, its keys/values go
     * to cand_k / cand_v [cand_cap rows, Hkv*hd] (row i attends to the cache and to its own row only) */
    int cand;
    float *cand_k, *cand_v;
    int cand_cap;
};

/* One session's rows in a forward call: rows [row0, row0 + n) of the Acts, at positions p0 .. p0 + n - 1
 * (candidates: all at p0). */
typedef struct Seg {
    Session *s;
    int row0, n, p0;
} Seg;

/* The rows of one call and how linear() may take them (see rows_linear). */
typedef struct Call {
    const Model *m;
    Acts *a;
    const Seg *seg;
    int n_seg, rows;
    int n_multi; /* rows [0, n_multi) belong to sessions of >= 2 rows; each later row is a one-row session */
} Call;

/* Zeroed floats, 64-byte aligned (cache lines: the few-row kernel's x rows are full-width loads), freed
 * by free_f. Buffers of at least MAP_MIN_BYTES are mapped: zero pages that cost nothing until touched
 * (a session's buffers are sized for its longest call, [max_batch, V] logits and the KV cache, of
 * which a decode touches a few rows; B decoders of a batched sweep would otherwise zero B times all
 * of it). A 64-byte header before the floats holds the mapping's size (0: aligned_alloc). */
#define MAP_MIN_BYTES ((size_t)1 << 20)
#define ALLOC_HEADER ((size_t)64)

static float *alloc_f(size_t n, int *ok) {
    size_t bytes = ((n ? n : 1) * sizeof(float) + 63) / 64 * 64, total = bytes + ALLOC_HEADER;
    char *base;
    if (bytes >= MAP_MIN_BYTES) {
        base = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (base == MAP_FAILED) base = NULL;
        else memcpy(base, &total, sizeof total);
    } else {
        base = aligned_alloc(64, total);
        if (base) {
            memset(base, 0, total);
        }
    }
    if (!base) {
        *ok = 0;
        return NULL;
    }
    return (float *)(base + ALLOC_HEADER);
}

static void free_f(float *p) {
    if (!p) return;
    char *base = (char *)p - ALLOC_HEADER;
    size_t mapped;
    memcpy(&mapped, base, sizeof mapped);
    if (mapped) munmap(base, mapped);
    else free(base);
}

/* Activations for R rows; 0 into *ok (left 1 otherwise) when out of memory. */
static int acts_alloc(const Model *m, int R, Acts *a) {
    const ModelConfig *c = &m->cfg;
    size_t B = (size_t)R, d = (size_t)c->d_model, qd = (size_t)c->n_heads * c->head_dim,
           kvd = (size_t)c->n_kv_heads * c->head_dim, f = (size_t)c->d_ff;
    size_t qbuf = m->ai->qkv == QKV_FUSED ? 3 * d : qd;
    size_t longest = 3 * d > f ? 3 * d : f;
    if (qd > longest) longest = qd;
    int ok = 1;
    a->rows = R;
    a->tile_elems = longest * 64 > (1u << 18) ? longest * 64 : (1u << 18);
    a->x = alloc_f(B * d, &ok);
    a->xn = alloc_f(B * (d > qd ? d : qd), &ok);
    a->q = alloc_f(B * qbuf, &ok);
    a->k = alloc_f(B * kvd, &ok);
    a->v = alloc_f(B * kvd, &ok);
    a->att = alloc_f(B * qd, &ok);
    a->ff_a = alloc_f(B * f, &ok);
    a->ff_b = m->ai->mlp == MLP_SWIGLU ? alloc_f(B * f, &ok) : NULL;
    a->hidden = alloc_f(B * d, &ok);
    a->logits = alloc_f(B * (size_t)c->vocab_size, &ok);
    a->tile = alloc_f(a->tile_elems, &ok);
    return ok;
}

static void acts_free(Acts *a) {
    float *bufs[] = {a->x, a->xn, a->q, a->k, a->v, a->att, a->ff_a, a->ff_b, a->hidden, a->logits, a->tile};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) free_f(bufs[i]);
}

static void rope_tables(Session *s) {
    const ModelConfig *c = &s->m->cfg;
    int half = c->head_dim / 2;
    for (int i = 0; i < half; i++) {
        /* As Hugging Face: inv_freq (rescaled by rope_scaling) in float32, angle = float32(pos * inv_freq). */
        double unscaled = rope_inv_freq(c, i);
        double divisor = s->m->rope_divisors ? (double)s->m->rope_divisors[i] : rope_freq_divisor(&c->rope_scaling, unscaled);
        float inv_freq = (float)(unscaled / divisor);
        for (int p = 0; p < s->max_ctx; p++) {
            float ang = (float)p * inv_freq;
            s->rope_cos[(size_t)p * half + i] = (float)cos((double)ang);
            s->rope_sin[(size_t)p * half + i] = (float)sin((double)ang);
        }
    }
}

Session *session_new(const Model *m, int max_ctx, int max_batch, SpErr *err) {
    const ModelConfig *c = &m->cfg;
    if (max_ctx <= 0) max_ctx = c->max_pos;
    if (max_ctx > c->max_pos) {
        sp_fail(err, "context of %d positions exceeds the model's %d position embeddings", max_ctx, c->max_pos);
        return NULL;
    }
    if (max_batch <= 0 || max_batch > max_ctx) max_batch = max_batch <= 0 ? 1 : max_ctx;
    Session *s = calloc(1, sizeof *s);
    if (!s) {
        sp_fail(err, "out of memory");
        return NULL;
    }
    s->m = m;
    s->max_ctx = max_ctx;
    s->max_batch = max_batch;
    size_t B = (size_t)max_batch, d = (size_t)c->d_model, kvd = (size_t)c->n_kv_heads * c->head_dim;
    int ok = acts_alloc(m, max_batch, &s->a);
    s->scores = alloc_f(B * (size_t)max_ctx, &ok);
    s->kc = alloc_f((size_t)c->n_layers * max_ctx * kvd, &ok);
    s->vc = alloc_f((size_t)c->n_layers * max_ctx * kvd, &ok);
    s->probe_keys = -1;
    s->probe_k = alloc_f(kvd > d ? kvd : d, &ok);
    s->probe_v = alloc_f(kvd > d ? kvd : d, &ok);
    if (m->ai->pos == POS_ROPE) {
        s->rope_cos = alloc_f((size_t)max_ctx * (c->head_dim / 2), &ok);
        s->rope_sin = alloc_f((size_t)max_ctx * (c->head_dim / 2), &ok);
        if (ok) rope_tables(s);
    }
    if (!ok) {
        session_free(s);
        sp_fail(err, "out of memory allocating a session (context %d, batch %d)", max_ctx, max_batch);
        return NULL;
    }
    return s;
}

void session_free(Session *s) {
    if (!s) return;
    acts_free(&s->a);
    float *bufs[] = {s->scores, s->kc, s->vc, s->rope_cos, s->rope_sin, s->probe_k, s->probe_v, s->cand_k, s->cand_v};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) free_f(bufs[i]);
    free(s);
}

int session_max_ctx(const Session *s) { return s->max_ctx; }
int session_max_batch(const Session *s) { return s->max_batch; }
int session_len(const Session *s) { return s->len; }

size_t session_kv_floats(const Session *s, int n) {
    const ModelConfig *c = &s->m->cfg;
    return 2 * (size_t)c->n_layers * (size_t)n * (size_t)c->n_kv_heads * (size_t)c->head_dim;
}

/* Layer l's cached keys (kv 0) or values (kv 1): [max_ctx, kvd], position 0 first. */
static float *kv_layer(const Session *s, int kv, int l) {
    const ModelConfig *c = &s->m->cfg;
    size_t kvd = (size_t)c->n_kv_heads * c->head_dim;
    return (kv ? s->vc : s->kc) + (size_t)l * s->max_ctx * kvd;
}

void session_kv_save(const Session *s, int n, float *out) {
    const ModelConfig *c = &s->m->cfg;
    size_t rows = (size_t)n * c->n_kv_heads * c->head_dim; /* floats per layer; n <= len (model.h) */
    for (int kv = 0; kv < 2; kv++)
        for (int l = 0; l < c->n_layers; l++)
            memcpy(out + ((size_t)kv * c->n_layers + l) * rows, kv_layer(s, kv, l), rows * sizeof *out);
}

int session_kv_load(Session *s, const float *in, int n, SpErr *err) {
    if (s->len != 0 || n < 0 || n > s->max_ctx)
        return sp_fail(err, "cannot load %d cached positions into a session of context %d holding %d", n, s->max_ctx,
                       s->len);
    const ModelConfig *c = &s->m->cfg;
    size_t rows = (size_t)n * c->n_kv_heads * c->head_dim;
    for (int kv = 0; kv < 2; kv++)
        for (int l = 0; l < c->n_layers; l++)
            memcpy(kv_layer(s, kv, l), in + ((size_t)kv * c->n_layers + l) * rows, rows * sizeof *in);
    s->len = n;
    return 0;
}

int session_truncate(Session *s, int pos, SpErr *err) {
    if (pos < 0 || pos > s->len) return sp_fail(err, "cannot truncate the cache to %d positions (it holds %d)", pos, s->len);
    s->len = pos; /* entries past len are never read and are overwritten by the next forward */
    return 0;
}

/* ------------------------------------------------------------------ forward
 *
 * One code path for a session's own call and for a batch of many sessions' rows (ForwardBatch): a Call
 * is rows stacked in an Acts, each session's rows contiguous (a Seg); the matrices run once over all
 * rows; embedding positions, RoPE, the keys/values and attention are per Seg, on its own session.
 * Bit-identity of a batched row with the same row in its session's own call rests on two facts: every
 * step but the matrix products is computed row by row (or per session, on that session's rows only),
 * and linear()'s arithmetic for a row depends only on whether its call has one row or more
 * (kernels.h: linear_row_rule). A batch keeps that: the rows of sessions with >= 2 rows are stacked
 * first and run in one product, each one-row session's row in its own (rows_linear). */

/* y = x W (+ bias) for the call's rows [0, rows) (x, y of row strides ldx, ldy). */
static void rows_linear(const Call *c, const LinearW *L, const float *x, int ldx, float *y, int ldy) {
    const Acts *a = c->a;
    if (linear_rows_independent(L) || c->n_seg == 1) {
        linear(L, x, c->rows, ldx, y, ldy, a->tile, a->tile_elems);
        return;
    }
    if (c->n_multi > 0) linear(L, x, c->n_multi, ldx, y, ldy, a->tile, a->tile_elems);
    for (int r = c->n_multi; r < c->rows; r++)
        linear(L, x + (size_t)r * ldx, 1, ldx, y + (size_t)r * ldy, ldy, a->tile, a->tile_elems);
}

/* x[row0 .. row0 + n) = embedding rows (+ learned positions from p0; candidates all at p0). */
static void embed(const Call *c, const Seg *g, const int32_t *tok) {
    const Model *m = c->m;
    size_t d = (size_t)m->cfg.d_model;
    for (int i = 0; i < g->n; i++) {
        float *row = c->a->x + (size_t)(g->row0 + i) * d;
        widen(m->wte.data, m->wte.dtype, (size_t)tok[i] * d, d, row);
        if (m->ai->pos != POS_LEARNED) continue;
        float *pos = c->a->hidden; /* scratch row (the final norm writes it later) */
        widen(m->wpe.data, m->wpe.dtype, (size_t)(g->p0 + (g->s->cand ? 0 : i)) * d, d, pos);
        for (size_t j = 0; j < d; j++) row[j] += pos[j];
    }
}

/* Decode and short verification batches: a BLAS call per head costs more than the arithmetic,
 * so loop directly, and only over the visible keys [lo, pos]. Same math as the sgemm path. */
#define ATTN_DIRECT_MAX_ROWS 8

static void attention_direct(Session *s, const float *q, int ldq, int n, int p0, int window, float scale,
                             const float *K, const float *V, float *att) {
    const ModelConfig *c = &s->m->cfg;
    int H = c->n_heads, hd = c->head_dim, kvd = c->n_kv_heads * hd, group = c->n_heads / c->n_kv_heads;
    /* head-major: a head's keys and values stay in L1 for every row (row-major streamed the layer's
     * whole cache from L2 once per row). Several rows (a verification block): the heads are split over
     * the BLAS thread count, each thread with its own row of s->scores ([max_batch >= n, max_ctx]); a
     * (row, head) pair's arithmetic is the same whichever thread runs it. */
    int nt = n >= 2 ? openblas_get_num_threads() : 1;
    if (nt > n) nt = n;
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1)
    for (int h = 0; h < H; h++) {
        float *sc = s->scores + (size_t)omp_get_thread_num() * (size_t)s->max_ctx; /* [T] */
        for (int i = 0; i < n; i++) {
            int pos = p0 + i, lo = window && pos - window + 1 > 0 ? pos - window + 1 : 0;
            int last = s->probe_keys >= 0 ? s->probe_keys - 1 : pos, m = last - lo + 1; /* keys [lo, last] */
            const float *qh = q + (size_t)i * ldq + (size_t)h * hd;
            const float *Kg = K + (size_t)(h / group) * hd, *Vg = V + (size_t)(h / group) * hd;
            attn_scores(qh, Kg + (size_t)lo * kvd, (size_t)kvd, m, hd, scale, sc);
            softmax_inplace(sc, m);
            attn_mix(sc, Vg + (size_t)lo * kvd, (size_t)kvd, m, hd, NULL, att + (size_t)i * H * hd + (size_t)h * hd);
        }
    }
}

/* session_candidates: n queries all at position p0; row i attends to the cache [lo, p0) and then to
 * its own key/value (cand_k / cand_v row i), in the order a one-token forward at p0 visits them. */
static void attention_candidates(Session *s, const float *q, int ldq, int n, int p0, int window, float scale,
                                 const float *K, const float *V, float *att) {
    const ModelConfig *c = &s->m->cfg;
    int H = c->n_heads, hd = c->head_dim, kvd = c->n_kv_heads * hd, group = c->n_heads / c->n_kv_heads;
    int lo = window && p0 - window + 1 > 0 ? p0 - window + 1 : 0, m = p0 - lo + 1; /* cache keys, then self */
    float *sc = s->scores;
    for (int h = 0; h < H; h++) /* head-major, as attention_direct */
        for (int i = 0; i < n; i++) {
            const float *Ki = s->cand_k + (size_t)i * kvd, *Vi = s->cand_v + (size_t)i * kvd;
            const float *qh = q + (size_t)i * ldq + (size_t)h * hd;
            const float *Kg = K + (size_t)(h / group) * hd, *Vg = V + (size_t)(h / group) * hd;
            attn_scores(qh, Kg + (size_t)lo * kvd, (size_t)kvd, m - 1, hd, scale, sc);
            attn_scores(qh, Ki + (size_t)(h / group) * hd, 0, 1, hd, scale, sc + m - 1);
            softmax_inplace(sc, m);
            attn_mix(sc, Vg + (size_t)lo * kvd, (size_t)kvd, m, hd, Vi + (size_t)(h / group) * hd,
                     att + (size_t)i * H * hd + (size_t)h * hd);
        }
}

/* Causal (optionally windowed) multi-head attention of one session's queries at p0..p0+n-1 over its
 * cache. q: [n, ldq] with head h at columns h*hd; K, V: [max_ctx, kvd] of this layer; att [n, H*hd]. */
static void attention(Session *s, int layer, const float *q, int ldq, int n, int p0, float *att) {
    const ModelConfig *c = &s->m->cfg;
    int H = c->n_heads, hd = c->head_dim, kvd = c->n_kv_heads * hd, group = c->n_heads / c->n_kv_heads;
    int T = p0 + n, window = (c->layer_local && c->layer_local[layer]) ? c->window_size : 0;
    float scale = 1.0f;
    if (s->m->ai->scale == SCALE_INV_SQRT_HD) scale = 1.0f / sqrtf((float)hd);
    if (c->scale_attn_by_layer) scale /= (float)(layer + 1);
    const float *K = kv_layer(s, 0, layer), *V = kv_layer(s, 1, layer);
    if (s->cand) {
        attention_candidates(s, q, ldq, n, p0, window, scale, K, V, att);
        return;
    }
    if (n <= ATTN_DIRECT_MAX_ROWS) {
        attention_direct(s, q, ldq, n, p0, window, scale, K, V, att);
        return;
    }
    for (int h = 0; h < H; h++) {
        int g = h / group;
        /* scores[n, T] = scale * Q_h[n, hd] K_g[T, hd]^T */
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, T, hd, scale, q + (size_t)h * hd, ldq, K + (size_t)g * hd,
                    kvd, 0.0f, s->scores, T);
        for (int i = 0; i < n; i++) {
            float *row = s->scores + (size_t)i * T;
            int pos = p0 + i, lo = window ? pos - window + 1 : 0;
            for (int j = 0; j < lo; j++) row[j] = -INFINITY;
            for (int j = pos + 1; j < T; j++) row[j] = -INFINITY;
            softmax_inplace(row, T);
        }
        /* att_h[n, hd] = scores[n, T] V_g[T, hd] */
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, hd, T, 1.0f, s->scores, T, V + (size_t)g * hd, kvd, 0.0f,
                    att + (size_t)h * hd, H * hd);
    }
}

static void norm(const Model *m, const float *w, const float *b, const float *x, int n, float *out) {
    const ModelConfig *c = &m->cfg;
    if (m->ai->norm == NORM_RMS) rmsnorm(x, w, n, c->d_model, c->norm_eps, out);
    else layernorm(x, w, b, n, c->d_model, c->norm_eps, out);
}

static void act_inplace(const ModelConfig *c, float *x, size_t n) {
    if (c->act == ACT_GELU_ERF) gelu_erf_inplace(x, n);
    else gelu_tanh_inplace(x, n);
}

static void add_inplace(float *x, const float *y, size_t n) {
    for (size_t i = 0; i < n; i++) x[i] += y[i];
}

/* Where a Seg's new keys/values of layer l go: its cache at p0, or a probe's / candidates' scratch. */
static void kv_dest(const Seg *g, int l, float **K, float **V) {
    Session *s = g->s;
    size_t kvd = (size_t)s->m->cfg.n_kv_heads * s->m->cfg.head_dim;
    if (s->cand) *K = s->cand_k, *V = s->cand_v;
    else if (s->probe_keys >= 0) *K = s->probe_k, *V = s->probe_v; /* never attended to: scratch */
    else *K = kv_layer(s, 0, l) + (size_t)g->p0 * kvd, *V = kv_layer(s, 1, l) + (size_t)g->p0 * kvd;
}

/* One Seg's attention block of layer l: its keys/values (rows of k, v of stride ldk) into its cache with
 * RoPE, then its queries (q, stride ldq) against its cache into att. */
static void seg_attention(const Call *c, const Seg *g, int l, float *q, int ldq, const float *k, const float *v,
                          int ldk) {
    const ModelConfig *mc = &c->m->cfg;
    Session *s = g->s;
    int hd = mc->head_dim, qd = mc->n_heads * hd, kvd = mc->n_kv_heads * hd;
    float *K, *V;
    kv_dest(g, l, &K, &V);
    for (int i = 0; i < g->n; i++) {
        memcpy(K + (size_t)i * kvd, k + (size_t)(g->row0 + i) * ldk, (size_t)kvd * sizeof(float));
        memcpy(V + (size_t)i * kvd, v + (size_t)(g->row0 + i) * ldk, (size_t)kvd * sizeof(float));
    }
    float *qs = q + (size_t)g->row0 * ldq;
    if (c->m->ai->pos == POS_ROPE) {
        int half = hd / 2;
        for (int i = 0; i < g->n; i++) {
            int at = g->p0 + (s->cand ? 0 : i); /* candidates all sit at p0 */
            const float *cr = s->rope_cos + (size_t)at * half, *sr = s->rope_sin + (size_t)at * half;
            rope_apply(qs + (size_t)i * ldq, mc->n_heads, hd, hd, cr, sr);
            rope_apply(K + (size_t)i * kvd, mc->n_kv_heads, hd, hd, cr, sr);
        }
    }
    attention(s, l, qs, ldq, g->n, g->p0, c->a->att + (size_t)g->row0 * qd);
}

static void layer_forward(const Call *c, int l) {
    const Model *m = c->m;
    const ModelConfig *mc = &m->cfg;
    const Layer *Ly = &m->layers[l];
    Acts *a = c->a;
    int n = c->rows, d = mc->d_model, hd = mc->head_dim, qd = mc->n_heads * hd, kvd = mc->n_kv_heads * hd;

    norm(m, Ly->ln1_w, Ly->ln1_b, a->x, n, a->xn);
    if (m->ai->qkv == QKV_FUSED) { /* qkv[n, 3d] = xn c_attn: q, k, v at columns 0, d, 2d */
        rows_linear(c, &Ly->qkv, a->xn, d, a->q, 3 * d);
        for (int g = 0; g < c->n_seg; g++) seg_attention(c, &c->seg[g], l, a->q, 3 * d, a->q + d, a->q + 2 * d, 3 * d);
    } else {
        rows_linear(c, &Ly->q, a->xn, d, a->q, qd);
        rows_linear(c, &Ly->k, a->xn, d, a->k, kvd);
        rows_linear(c, &Ly->v, a->xn, d, a->v, kvd);
        if (m->ai->qk_norm == QK_NORM_HEAD_RMS) { /* q [n*H, hd], k [n*Hkv, hd]: rows contiguous, in place */
            rmsnorm(a->q, Ly->qn_w, n * mc->n_heads, hd, mc->norm_eps, a->q);
            rmsnorm(a->k, Ly->kn_w, n * mc->n_kv_heads, hd, mc->norm_eps, a->k);
        }
        for (int g = 0; g < c->n_seg; g++) seg_attention(c, &c->seg[g], l, a->q, qd, a->k, a->v, kvd);
    }
    rows_linear(c, &Ly->o, a->att, qd, a->xn, d);
    add_inplace(a->x, a->xn, (size_t)n * d);

    norm(m, Ly->ln2_w, Ly->ln2_b, a->x, n, a->xn);
    size_t nf = (size_t)n * mc->d_ff;
    if (m->ai->mlp == MLP_SWIGLU) {
        rows_linear(c, &Ly->gate, a->xn, d, a->ff_a, mc->d_ff);
        rows_linear(c, &Ly->up, a->xn, d, a->ff_b, mc->d_ff);
        swiglu_inplace(a->ff_a, a->ff_b, nf);
        rows_linear(c, &Ly->down, a->ff_a, mc->d_ff, a->xn, d);
    } else {
        rows_linear(c, &Ly->fc, a->xn, d, a->ff_a, mc->d_ff);
        act_inplace(mc, a->ff_a, nf);
        rows_linear(c, &Ly->proj, a->ff_a, mc->d_ff, a->xn, d);
    }
    add_inplace(a->x, a->xn, (size_t)n * d);
}

/* The transformer over the call's rows (embedded already): hidden [rows, d] = final_norm(x). */
static void call_layers(const Call *c) {
    for (int l = 0; l < c->m->cfg.n_layers; l++) layer_forward(c, l);
    norm(c->m, c->m->lnf_w, c->m->lnf_b, c->a->x, c->rows, c->a->hidden);
}

/* A call of one session on its own activations: n rows at p0. */
static Call own_call(Session *s, Seg *g, int n, int p0) {
    *g = (Seg){s, 0, n, p0};
    return (Call){s->m, &s->a, g, 1, n, n > 1 ? n : 0};
}

static int check_tokens(const Session *s, const int32_t *tokens, int n, SpErr *err) {
    for (int i = 0; i < n; i++)
        if (tokens[i] < 0 || tokens[i] >= s->m->cfg.vocab_size)
            return sp_fail(err, "token id %d at index %d is out of range [0, %d)", tokens[i], i, s->m->cfg.vocab_size);
    return 0;
}

static int check_call(const Session *s, const int32_t *tokens, int n, SpErr *err) {
    if (n < 1 || n > s->max_batch) return sp_fail(err, "forward of %d tokens: must be 1..%d (the session's batch)", n, s->max_batch);
    if (s->len + n > s->max_ctx)
        return sp_fail(err, "forward of %d tokens at position %d exceeds the context of %d positions", n, s->len, s->max_ctx);
    return check_tokens(s, tokens, n, err);
}

/* Runs n tokens; computes hidden for all rows and logits for the last n_logits rows. */
static int forward_impl(Session *s, const int32_t *tokens, int n, int n_logits, SpErr *err) {
    if (check_call(s, tokens, n, err)) return -1;
    const ModelConfig *mc = &s->m->cfg;
    Seg g;
    Call c = own_call(s, &g, n, s->len);
    embed(&c, &g, tokens);
    call_layers(&c);
    /* the LM head on the last n_logits rows: a call of n_logits rows (linear's row rule) */
    Call tail = own_call(s, &g, n_logits, s->len);
    rows_linear(&tail, &s->m->lm_head, s->a.hidden + (size_t)(n - n_logits) * mc->d_model, mc->d_model, s->a.logits,
                mc->vocab_size);
    s->len += n;
    return 0;
}

int session_forward(Session *s, const int32_t *tokens, int n, const float **logits, const float **hidden, SpErr *err) {
    if (forward_impl(s, tokens, n, n, err)) return -1;
    if (logits) *logits = s->a.logits;
    if (hidden) *hidden = s->a.hidden;
    return 0;
}

int session_forward_tail(Session *s, const int32_t *tokens, int n, int n_tail, const float **logits,
                         const float **hidden, SpErr *err) {
    if (n_tail < 1 || n_tail > n) return sp_fail(err, "forward of %d tokens cannot return logits for %d rows", n, n_tail);
    if (forward_impl(s, tokens, n, n_tail, err)) return -1;
    if (logits) *logits = s->a.logits;
    if (hidden) *hidden = s->a.hidden;
    return 0;
}

int session_probe(Session *s, int32_t token, int pos, const float **hidden, SpErr *err) {
    const ModelConfig *c = &s->m->cfg;
    if (s->len < 1) return sp_fail(err, "probe: the cache is empty, there is nothing to attend to");
    if (pos < s->len || pos >= s->max_ctx)
        return sp_fail(err, "probe at position %d: must be in [%d, %d) (cache length, context)", pos, s->len, s->max_ctx);
    if (token < 0 || token >= c->vocab_size)
        return sp_fail(err, "probe token id %d is out of range [0, %d)", token, c->vocab_size);
    if (c->layer_local && c->window_size > 0 && pos - c->window_size + 1 > s->len - 1)
        for (int l = 0; l < c->n_layers; l++)
            if (c->layer_local[l])
                return sp_fail(err, "probe at position %d: no cached key within the local window of %d", pos, c->window_size);
    s->probe_keys = s->len;
    Seg g;
    Call call = own_call(s, &g, 1, pos);
    embed(&call, &g, &token);
    call_layers(&call);
    s->probe_keys = -1;
    if (hidden) *hidden = s->a.hidden;
    return 0;
}

int session_candidates(Session *s, const int32_t *tokens, int n, const float **logits, const float **hidden,
                       SpErr *err) {
    const Model *m = s->m;
    const ModelConfig *c = &m->cfg;
    if (n < 1 || n > s->max_batch) return sp_fail(err, "candidates: %d rows, must be 1..%d (the session's batch)", n, s->max_batch);
    if (s->len >= s->max_ctx) return sp_fail(err, "candidates at position %d: the context of %d is full", s->len, s->max_ctx);
    for (int i = 0; i < n; i++)
        if (tokens[i] < 0 || tokens[i] >= c->vocab_size)
            return sp_fail(err, "candidate token id %d at index %d is out of range [0, %d)", tokens[i], i, c->vocab_size);
    if (n > s->cand_cap) { /* made on first use: most sessions never run candidates */
        size_t kvd = (size_t)c->n_kv_heads * c->head_dim, d = (size_t)c->d_model, w = kvd > d ? kvd : d;
        int ok = 1;
        float *k = alloc_f((size_t)s->max_batch * w, &ok), *v = alloc_f((size_t)s->max_batch * w, &ok);
        if (!ok) {
            free_f(k), free_f(v);
            return sp_fail(err, "out of memory");
        }
        free_f(s->cand_k), free_f(s->cand_v);
        s->cand_k = k, s->cand_v = v, s->cand_cap = s->max_batch;
    }
    s->cand = 1;
    Seg g;
    Call call = own_call(s, &g, n, s->len);
    embed(&call, &g, tokens);
    call_layers(&call);
    if (logits) rows_linear(&call, &m->lm_head, s->a.hidden, c->d_model, s->a.logits, c->vocab_size);
    s->cand = 0;
    if (logits) *logits = s->a.logits;
    if (hidden) *hidden = s->a.hidden;
    return 0;
}

int session_prefill(Session *s, const int32_t *tokens, int n, const float **logits, const float **hidden, SpErr *err) {
    if (n < 1) return sp_fail(err, "prefill needs at least one token");
    int last = 0;
    for (int i = 0; i < n; i += s->max_batch) {
        last = n - i < s->max_batch ? n - i : s->max_batch;
        if (forward_impl(s, tokens + i, last, 1, err)) return -1;
    }
    if (logits) *logits = s->a.logits;
    if (hidden) *hidden = s->a.hidden + (size_t)(last - 1) * s->m->cfg.d_model;
    return 0;
}

/* ------------------------------------------------------------------ many sessions' rows */

struct ForwardBatch {
    const Model *m;
    Acts a;      /* R = max_rows */
    Seg *seg;    /* [max_rows] */
    int *order;  /* [max_rows] the requests in stacking order */
    Seg *tseg;   /* [max_rows] the LM head's rows of each, by stacking position */
    float *tail; /* [max_rows, d] the LM head's input rows, gathered */
};

ForwardBatch *forward_batch_new(const Model *m, int max_rows, SpErr *err) {
    if (max_rows < 1) {
        sp_fail(err, "a forward batch needs room for at least one row (asked for %d)", max_rows);
        return NULL;
    }
    ForwardBatch *b = calloc(1, sizeof *b);
    int ok = b != NULL;
    if (b) {
        b->m = m;
        ok = acts_alloc(m, max_rows, &b->a);
        b->seg = malloc((size_t)max_rows * sizeof *b->seg);
        b->order = malloc((size_t)max_rows * sizeof *b->order);
        b->tseg = malloc((size_t)max_rows * sizeof *b->tseg);
        b->tail = alloc_f((size_t)max_rows * m->cfg.d_model, &ok);
        ok = ok && b->seg && b->order && b->tseg;
    }
    if (!ok) {
        forward_batch_free(b);
        sp_fail(err, "out of memory allocating a forward batch of %d rows", max_rows);
        return NULL;
    }
    return b;
}

void forward_batch_free(ForwardBatch *b) {
    if (!b) return;
    if (b->a.x) acts_free(&b->a);
    free(b->seg);
    free(b->order);
    free(b->tseg);
    free_f(b->tail);
    free(b);
}

int forward_batch_rows(const ForwardBatch *b) { return b->a.rows; }

/* Checks one request as session_forward_tail does, and that its session is of the batch's model and
 * in no other request of the call. */
static int check_request(const ForwardBatch *b, const SessionRows *req, int i, const SessionRows *all, SpErr *err) {
    Session *s = req->session;
    if (!s || s->m != b->m) return sp_fail(err, "forward batch: request %d is not a session of the batch's model", i);
    for (int j = 0; j < i; j++)
        if (all[j].session == s) return sp_fail(err, "forward batch: requests %d and %d name the same session", j, i);
    if (req->n_tail < 1 || req->n_tail > req->n)
        return sp_fail(err, "forward batch: request %d: %d tokens cannot return logits for %d rows", i, req->n, req->n_tail);
    if (check_call(s, req->tokens, req->n, err)) return sp_err_prefix(err, "forward batch: request %d", i);
    return 0;
}

/* Runs requests [0, n) whose rows fit the batch: sessions of >= 2 rows stacked first, then the one-row
 * ones; each result copied to its session's own buffers (as its own call leaves them). */
static void batch_run(ForwardBatch *b, SessionRows *req, int n) {
    const ModelConfig *mc = &b->m->cfg;
    size_t d = (size_t)mc->d_model, V = (size_t)mc->vocab_size;
    int k = 0, rows = 0, n_multi = 0;
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < n; i++)
            if ((req[i].n > 1) == (pass == 0)) b->order[k++] = i;
    for (int j = 0; j < n; j++) {
        SessionRows *r = &req[b->order[j]];
        b->seg[j] = (Seg){r->session, rows, r->n, r->session->len};
        rows += r->n;
        if (r->n > 1) n_multi = rows;
    }
    Call c = {b->m, &b->a, b->seg, n, rows, n_multi};
    for (int j = 0; j < n; j++) embed(&c, &b->seg[j], req[b->order[j]].tokens);
    call_layers(&c);
    /* the LM head on each request's last n_tail rows, gathered: tails of >= 2 rows first, then the
     * one-row ones (a request of many rows may want one), as the layers stack them */
    Seg *tseg = b->tseg; /* [n] by stacking position j: where request order[j]'s tail rows went */
    int trows = 0, t_multi = 0;
    for (int pass = 0; pass < 2; pass++)
        for (int j = 0; j < n; j++) {
            const SessionRows *r = &req[b->order[j]];
            if ((r->n_tail > 1) != (pass == 0)) continue;
            memcpy(b->tail + (size_t)trows * d, b->a.hidden + (size_t)(b->seg[j].row0 + r->n - r->n_tail) * d,
                   (size_t)r->n_tail * d * sizeof(float));
            tseg[j] = (Seg){r->session, trows, r->n_tail, 0};
            trows += r->n_tail;
            if (r->n_tail > 1) t_multi = trows;
        }
    Call tc = {b->m, &b->a, tseg, n, trows, t_multi};
    rows_linear(&tc, &b->m->lm_head, b->tail, (int)d, b->a.logits, (int)V);
    for (int j = 0; j < n; j++) {
        SessionRows *r = &req[b->order[j]];
        Session *s = r->session;
        memcpy(s->a.hidden, b->a.hidden + (size_t)b->seg[j].row0 * d, (size_t)r->n * d * sizeof(float));
        memcpy(s->a.logits, b->a.logits + (size_t)tseg[j].row0 * V, (size_t)r->n_tail * V * sizeof(float));
        s->len += r->n;
        r->logits = s->a.logits;
        r->hidden = s->a.hidden;
    }
}

int forward_batch(ForwardBatch *b, SessionRows *req, int n, SpErr *err) {
    for (int i = 0; i < n; i++)
        if (check_request(b, &req[i], i, req, err)) return -1;
    /* consecutive requests in calls of at most max_rows rows; a request of more runs as its own call */
    for (int i = 0; i < n;) {
        if (req[i].n > b->a.rows) {
            SessionRows *r = &req[i++];
            if (session_forward_tail(r->session, r->tokens, r->n, r->n_tail, &r->logits, &r->hidden, err)) return -1;
            continue;
        }
        int j = i, rows = 0;
        while (j < n && req[j].n <= b->a.rows && rows + req[j].n <= b->a.rows) rows += req[j++].n;
        batch_run(b, req + i, j - i);
        i = j;
    }
    return 0;
}
