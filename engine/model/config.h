/* config.h - a checkpoint's shapes and architecture, parsed from a Hugging Face config.json
 * (engine/model/config.c). The forward pass (model.h) and the exporters read it; nothing here
 * touches weights.
 */
#ifndef SP_CONFIG_H
#define SP_CONFIG_H

#include <stdint.h>

#include "error.h"

/* An architecture's id: its row in arch.c's table (ArchInfo, arch.h) says what it means. Code reads
 * the row's traits (arch_info(cfg->arch)), not these ids. */
typedef enum { ARCH_GPT2 = 1, ARCH_GPTNEO = 2, ARCH_LLAMA = 3, ARCH_QWEN2 = 4, ARCH_QWEN3 = 5 } Arch;
/* MLP activation: tanh-approximated GELU (gelu_new), exact erf GELU, or SiLU (Llama SwiGLU). */
typedef enum { ACT_GELU_TANH = 1, ACT_GELU_ERF = 2, ACT_SILU = 3 } Act;

/* The most ids an eos_token_id list may hold. */
#define CFG_MAX_EOS 8

/* config.json "rope_scaling" (Hugging Face modeling_rope_utils.py): how RoPE's inverse frequencies
 * inv_freq[i] = theta^(-2i/hd) are rescaled. None: as they are. Linear: all divided by factor.
 * Llama3 (_compute_llama3_parameters): with wavelen = 2 pi / inv_freq, L = original_max_pos,
 *   wavelen < L / high_freq_factor: unchanged;  wavelen > L / low_freq_factor: / factor;
 *   else, s = (L / wavelen - low) / (high - low):  inv_freq ((1 - s) / factor + s). */
/* Freqs: a divisor per frequency given as a table, not as parameters: a GGUF file alone whose llama3
 * scaling is stored as llama.cpp's rope_freqs.weight (gguf.h); the model holds the table and
 * rope_freq_divisor says 1. */
typedef enum { ROPE_SCALE_NONE = 0, ROPE_SCALE_LINEAR = 1, ROPE_SCALE_LLAMA3 = 2, ROPE_SCALE_FREQS = 3 } RopeScaleKind;
typedef struct RopeScaling {
    RopeScaleKind kind;
    float factor;                             /* linear, llama3 */
    float low_freq_factor, high_freq_factor;  /* llama3 */
    int original_max_pos;                     /* llama3: original_max_position_embeddings */
} RopeScaling;

/* What RopeScaling divides the inverse frequency inv_freq by (1 when none): also llama.cpp's
 * rope_freqs factor, by which its RoPE divides the same frequency. */
double rope_freq_divisor(const RopeScaling *r, double inv_freq);

typedef struct ModelConfig {
    Arch arch;
    int vocab_size;   /* V */
    int d_model;      /* d: hidden size */
    int n_layers;     /* L */
    int n_heads;      /* H: query heads */
    int n_kv_heads;   /* Hkv: key/value heads (= H except Llama GQA) */
    int head_dim;     /* hd = d / H unless the config says otherwise */
    int d_ff;         /* inner MLP width */
    int max_pos;      /* n_positions / max_position_embeddings */
    float norm_eps;   /* layer_norm_epsilon / rms_norm_eps */
    float rope_theta; /* RoPE architectures only */
    RopeScaling rope_scaling;
    int tie_embeddings;
    Act act;
    int scale_attn_by_layer; /* GPT-2 scale_attn_by_inverse_layer_idx (its parse_quirks): scale /= layer + 1 */
    float init_std;        /* initializer_range: used only by init-random */
    int window_size;       /* GPT-Neo local attention window */
    uint8_t *layer_local;  /* [L] 1 where the layer uses local attention (GPT-Neo's parse_quirks); else NULL */
    int bos_id, eos_id;    /* -1 when absent; eos_id is the first of eos_ids */
    int eos_ids[CFG_MAX_EOS], n_eos; /* eos_token_id, an id or a list (Llama 3.1 Instruct: 3); 0 when absent */
} ModelConfig;

/* Parses a Hugging Face config.json object (`file` names it in errors). On success the caller owns
 * cfg->layer_local (free with config_free). */
struct cJSON;
int config_parse(const struct cJSON *json, const char *file, ModelConfig *cfg, SpErr *err);
int config_load(const char *path, ModelConfig *cfg, SpErr *err);
/* 1 when tok is one of the config's end-of-sequence ids (generation stops at any of them, as
 * transformers' generate does). */
int config_is_eos(const ModelConfig *cfg, int32_t tok);
/* RoPE's unscaled inverse frequency i < head_dim / 2: rope_theta^(-2i / head_dim), in double. The
 * forward pass uses it / rope_freq_divisor(&cfg->rope_scaling, it). */
double rope_inv_freq(const ModelConfig *cfg, int i);
void config_free(ModelConfig *cfg);

const char *arch_name(Arch a);

#endif
