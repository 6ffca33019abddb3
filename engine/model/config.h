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
typedef enum { ARCH_GPT2 = 1, ARCH_GPTNEO = 2, ARCH_LLAMA = 3 } Arch;
/* MLP activation: tanh-approximated GELU (gelu_new), exact erf GELU, or SiLU (Llama SwiGLU). */
typedef enum { ACT_GELU_TANH = 1, ACT_GELU_ERF = 2, ACT_SILU = 3 } Act;

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
    float rope_theta; /* Llama only */
    int tie_embeddings;
    Act act;
    int scale_attn_by_layer; /* GPT-2 scale_attn_by_inverse_layer_idx (its parse_quirks): scale /= layer + 1 */
    float init_std;        /* initializer_range: used only by init-random */
    int window_size;       /* GPT-Neo local attention window */
    uint8_t *layer_local;  /* [L] 1 where the layer uses local attention (GPT-Neo's parse_quirks); else NULL */
    int bos_id, eos_id;    /* -1 when absent */
} ModelConfig;

/* Parses a Hugging Face config.json object (`file` names it in errors). On success the caller owns
 * cfg->layer_local (free with config_free). */
struct cJSON;
int config_parse(const struct cJSON *json, const char *file, ModelConfig *cfg, SpErr *err);
int config_load(const char *path, ModelConfig *cfg, SpErr *err);
void config_free(ModelConfig *cfg);

const char *arch_name(Arch a);

#endif
