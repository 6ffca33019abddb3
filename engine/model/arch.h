/* arch.h - what distinguishes one transformer architecture from another, as data: one ArchInfo row
 * per architecture (the table is in arch.c, with the how-to for adding one). config.c parses a
 * config.json through the row's key names and defaults, model.c builds the tensor table and runs the
 * forward pass from its traits, gguf.c exports from them. Code outside arch.c reads traits, never
 * compares Arch ids.
 */
#ifndef SP_ARCH_H
#define SP_ARCH_H

#include "config.h"

/* Bounds every parsed size stays within (a hostile config must not make us allocate absurd amounts). */
#define CFG_MAX_VOCAB (1LL << 22)
#define CFG_MAX_DIM 65536
#define CFG_MAX_LAYERS 1024
#define CFG_MAX_HEADS 1024
#define CFG_MAX_POS (1LL << 20)

typedef enum { NORM_LAYER = 1 /* LayerNorm: weight + bias */, NORM_RMS = 2 /* RMSNorm: weight only */ } NormKind;
typedef enum { POS_LEARNED = 1 /* x = wte[tok] + wpe[pos] */, POS_ROPE = 2 /* rotary on q and k */ } PosKind;
/* Fused: one [d, 3d] projection whose output rows are q | k | v (needs Hkv = H, hd * H = d).
 * Separate: q [H*hd, d], k and v [Hkv*hd, d]. */
typedef enum { QKV_FUSED = 1, QKV_SEPARATE = 2 } QkvLayout;
/* How layer matrices are stored: nn.Linear [out, in], or GPT-2's Conv1D [in, out]. */
typedef enum { W_LINEAR = 1, W_CONV1D = 2 } WeightLayout;
/* Gelu2: down(act(up(x))), act from the config (GPT-2 "c_fc"/"c_proj").
 * SwiGLU: down(silu(gate(x)) * up(x)); the config's activation must be silu. */
typedef enum { MLP_GELU2 = 1, MLP_SWIGLU = 2 } MlpKind;
/* Scores = q.k * scale: 1/sqrt(hd), or 1 (GPT-Neo). GPT-2's scale_attn_by_inverse_layer_idx further
 * divides by layer + 1 (ModelConfig.scale_attn_by_layer, set only by GPT-2's config quirks). */
typedef enum { SCALE_INV_SQRT_HD = 1, SCALE_NONE = 2 } AttnScale;
/* A norm on each head's query and key after the projections and before RoPE (Qwen3's q_norm /
 * k_norm): none, or RMSNorm over the head's hd values with one weight vector [hd] shared by the
 * heads (eps = the config's norm eps). */
typedef enum { QK_NORM_NONE = 0, QK_NORM_HEAD_RMS = 1 } QkNorm;

/* Checkpoint tensor names: patterns in which "%d" stands for the layer index; the loader appends
 * ".weight" / ".bias". NULL: the architecture has no such tensor. */
typedef struct ArchNames {
    const char *embed, *pos_embed, *final_norm, *lm_head;
    const char *attn_norm, *qkv, *q, *k, *v, *o, *q_norm, *k_norm, *mlp_norm, *gate, *up, *down; /* per layer */
} ArchNames;

/* config.json key names (NULL: the key does not exist for this architecture). */
typedef struct ArchKeys {
    const char *hidden, *layers, *heads, *kv_heads, *ff, *max_pos, *norm_eps, *act;
} ArchKeys;

typedef struct ArchInfo {
    Arch id;
    const char *model_type; /* config.json "model_type" */
    const char *title;      /* for messages: "GPT-2" */

    /* ---- forward-pass traits ---- */
    NormKind norm;
    PosKind pos;
    QkvLayout qkv;
    WeightLayout weights;
    MlpKind mlp;
    AttnScale scale;
    /* biases: norm_bias follows from norm (LayerNorm has one); these are the linear layers' */
    int qkv_bias;     /* on the fused qkv, or on each of q, k, v */
    int o_bias;       /* attention output projection */
    int mlp_bias;     /* every MLP matrix */
    QkNorm qk_norm;   /* names.q_norm / names.k_norm when not QK_NORM_NONE */
    ArchNames names;

    /* ---- config.json ---- */
    ArchKeys key;
    int ff_default_x4;   /* d_ff defaults to 4 * hidden when key.ff is absent or null (0: required) */
    int max_pos_default; /* 0: key.max_pos is required */
    double eps_default;
    const char *act_default;
    int tie_default;   /* tie_word_embeddings when absent */
    int head_dim_free; /* "head_dim" may differ from hidden / heads */
    int head_dim_default; /* "head_dim" when absent (Qwen3Config: 128); 0: hidden / heads */
    /* This architecture's own keys (GPT-2 scale_attn_*, GPT-Neo local attention, ...), called after
     * the common ones are parsed; NULL if none. */
    int (*parse_quirks)(const struct cJSON *json, const char *file, ModelConfig *cfg, SpErr *err);

    /* ---- GGUF export (llama.cpp) ---- */
    const char *gguf_arch;  /* general.architecture; NULL: llama.cpp has no such architecture */
    int gguf_permute_qk;    /* q/k rows permuted to llama.cpp's interleaved RoPE pairs */
    int gguf_vocab_size;    /* writes "<arch>.vocab_size" */
    int gguf_rope_freqs;    /* llama.cpp's graph reads rope_freqs.weight (per-frequency divisors): llama3
                             * rope scaling can be exported (its qwen2 / qwen3 graphs pass none) */
} ArchInfo;

/* The row of an Arch id (never NULL for an id config_parse produced). */
const ArchInfo *arch_info(Arch a);
/* The row whose model_type is s, or NULL. */
const ArchInfo *arch_by_model_type(const char *s);
/* Rows in table order: i in [0, arch_count()). */
int arch_count(void);
const ArchInfo *arch_at(int i);

#endif
