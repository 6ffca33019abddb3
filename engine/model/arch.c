/* arch.c - the architecture table (see arch.h): one row per architecture, and beside its row the
 * parser of the config keys only that architecture has.
 *
 * Adding an architecture (as Qwen2 was: Llama + q/k/v biases, a row and a parse_quirks only):
 *   1. Add its id to the Arch enum in config.h and its row to kArchs below: model_type, traits,
 *      checkpoint tensor-name patterns, config.json key names and defaults, GGUF fields. A row
 *      that differs from an existing one only in traits the table already has (biases, names,
 *      keys, defaults) is the whole change: config.c, model.c (tensor table, loader, forward) and
 *      gguf.c follow the row.
 *   2. If it needs a trait no row has yet (as Qwen3's per-head RMSNorm on q and k did: ArchInfo.qk_norm,
 *      read by layer_slots() and layer_forward()), add the trait to ArchInfo (arch.h), give every existing row its old behaviour, and
 *      write the one place that reads it: tensors in layer_slots() (model.c; its order is the
 *      checkpoint/init-random order and the loader's), the arithmetic in layer_forward() /
 *      attention() / session_new() (model.c), config keys in config_parse() (config.c) or the row's
 *      parse_quirks, GGUF names in slot_gguf[] (model.c) and metadata in write_metadata() (gguf.c).
 *      A rule of the config rather than of the architecture (rope_scaling, for every RoPE row) is a
 *      ModelConfig field parsed in config.c. Genuinely one-architecture quirks may be a ModelConfig field set by parse_quirks (GPT-Neo's
 *      layer_local/window_size, GPT-2's scale_attn_by_layer) rather than a trait.
 *   3. init-random: a config builder, preset shapes and a kPresetArchs row (its --arch spelling and
 *      model_type) in presets.c; the init-random help text in cli/cmd_engine.c.
 *   4. Check: init-random a tiny model, compare logits against the PyTorch oracle (tests/oracle).
 */
#include "arch.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "jsonutil.h"

/* ------------------------------------------------------------------ per-architecture config keys */

static int quirks_gpt2(const cJSON *j, const char *file, ModelConfig *m, SpErr *err) {
    if (sp_json_bool(j, file, "scale_attn_by_inverse_layer_idx", 1, 0, &m->scale_attn_by_layer, err)) return -1;
    int scale_weights;
    if (sp_json_bool(j, file, "scale_attn_weights", 1, 1, &scale_weights, err)) return -1;
    if (!scale_weights) return sp_fail(err, "%s: key \"scale_attn_weights\" = false is not supported", file);
    return 0;
}

/* attention_types: [[["global","local"], 12]] -> per-layer flags, must cover num_layers exactly. */
static int parse_neo_layers(const cJSON *j, const char *file, ModelConfig *m, SpErr *err) {
    m->layer_local = calloc((size_t)m->n_layers, 1);
    if (!m->layer_local) return sp_fail(err, "%s: out of memory", file);
    const cJSON *types = cJSON_GetObjectItemCaseSensitive(j, "attention_types");
    const cJSON *layers = cJSON_GetObjectItemCaseSensitive(j, "attention_layers");
    int n = 0;
    /* attention_types is the source of truth in Hugging Face's config; attention_layers is derived. */
    if (cJSON_IsArray(types)) {
        const cJSON *grp;
        int gi = 0;
        cJSON_ArrayForEach(grp, types) {
            const cJSON *kinds = cJSON_GetArrayItem(grp, 0), *reps = cJSON_GetArrayItem(grp, 1);
            if (!cJSON_IsArray(grp) || !cJSON_IsArray(kinds) || !cJSON_IsNumber(reps) || reps->valuedouble < 0 ||
                reps->valuedouble > CFG_MAX_LAYERS)
                return sp_fail(err, "%s: attention_types[%d] must be [[\"global\"|\"local\", ...], count]", file, gi);
            for (int r = 0; r < (int)reps->valuedouble; r++) {
                const cJSON *t;
                cJSON_ArrayForEach(t, kinds) {
                    if (!cJSON_IsString(t) || (strcmp(t->valuestring, "global") && strcmp(t->valuestring, "local")))
                        return sp_fail(err, "%s: attention_types[%d] has an entry that is not \"global\" or \"local\"",
                                       file, gi);
                    if (n >= m->n_layers)
                        return sp_fail(err, "%s: attention_types describes more than num_layers = %d layers", file,
                                       m->n_layers);
                    m->layer_local[n++] = strcmp(t->valuestring, "local") == 0;
                }
            }
            gi++;
        }
    } else if (cJSON_IsArray(layers)) {
        const cJSON *t;
        cJSON_ArrayForEach(t, layers) {
            if (!cJSON_IsString(t) || (strcmp(t->valuestring, "global") && strcmp(t->valuestring, "local")))
                return sp_fail(err, "%s: attention_layers[%d] must be \"global\" or \"local\"", file, n);
            if (n >= m->n_layers)
                return sp_fail(err, "%s: attention_layers lists more than num_layers = %d layers", file, m->n_layers);
            m->layer_local[n++] = strcmp(t->valuestring, "local") == 0;
        }
    } else {
        return sp_fail(err, "%s: missing required key \"attention_types\"", file);
    }
    if (n != m->n_layers)
        return sp_fail(err, "%s: attention_types/attention_layers describe %d layers, num_layers = %d", file, n,
                       m->n_layers);
    return 0;
}

/* GPT-Neo: some layers attend only to the last window_size positions. */
static int quirks_neo(const cJSON *j, const char *file, ModelConfig *m, SpErr *err) {
    long long w;
    if (sp_json_int(j, file, "window_size", 1, CFG_MAX_POS, 1, 256, &w, err)) return -1;
    m->window_size = (int)w;
    return parse_neo_layers(j, file, m, err);
}

static int quirks_llama(const cJSON *j, const char *file, ModelConfig *m, SpErr *err) {
    (void)m;
    int bias = 0, mlp_bias = 0;
    if (sp_json_bool(j, file, "attention_bias", 1, 0, &bias, err) || sp_json_bool(j, file, "mlp_bias", 1, 0, &mlp_bias, err))
        return -1;
    if (bias || mlp_bias) return sp_fail(err, "%s: key \"attention_bias\"/\"mlp_bias\" = true is not supported", file);
    return 0;
}

/* Qwen2 / Qwen3: sliding-window attention is off in every released config (use_sliding_window
 * false; Qwen2Config / Qwen3Config derive layer_types from it). A config that turns it on is refused. */
static int refuse_sliding_window(const cJSON *j, const char *file, SpErr *err) {
    int sliding = 0;
    if (sp_json_bool(j, file, "use_sliding_window", 1, 0, &sliding, err)) return -1;
    if (sliding)
        return sp_fail(err, "%s: key \"use_sliding_window\" = true is not supported (sliding-window attention)", file);
    const cJSON *types = cJSON_GetObjectItemCaseSensitive(j, "layer_types"), *t;
    if (cJSON_IsArray(types))
        cJSON_ArrayForEach(t, types) if (cJSON_IsString(t) && strcmp(t->valuestring, "full_attention"))
            return sp_fail(err, "%s: key \"layer_types\" has \"%.40s\": only \"full_attention\" is supported", file,
                           t->valuestring);
    return 0;
}

static int quirks_qwen2(const cJSON *j, const char *file, ModelConfig *m, SpErr *err) {
    (void)m;
    return refuse_sliding_window(j, file, err);
}

/* Qwen3's attention_bias puts a bias on q, k, v and o; false in every released config. */
static int quirks_qwen3(const cJSON *j, const char *file, ModelConfig *m, SpErr *err) {
    (void)m;
    int bias = 0;
    if (sp_json_bool(j, file, "attention_bias", 1, 0, &bias, err)) return -1;
    if (bias) return sp_fail(err, "%s: key \"attention_bias\" = true is not supported", file);
    return refuse_sliding_window(j, file, err);
}

/* ------------------------------------------------------------------ the table */

static const ArchInfo kArchs[] = {
    {
        .id = ARCH_GPT2, .model_type = "gpt2", .title = "GPT-2",
        .norm = NORM_LAYER, .pos = POS_LEARNED, .qkv = QKV_FUSED, .weights = W_CONV1D, .mlp = MLP_GELU2,
        .scale = SCALE_INV_SQRT_HD, .qkv_bias = 1, .o_bias = 1, .mlp_bias = 1,
        .names = {.embed = "transformer.wte", .pos_embed = "transformer.wpe", .final_norm = "transformer.ln_f",
                  .lm_head = "lm_head", .attn_norm = "transformer.h.%d.ln_1", .qkv = "transformer.h.%d.attn.c_attn",
                  .o = "transformer.h.%d.attn.c_proj", .mlp_norm = "transformer.h.%d.ln_2",
                  .up = "transformer.h.%d.mlp.c_fc", .down = "transformer.h.%d.mlp.c_proj"},
        .key = {.hidden = "n_embd", .layers = "n_layer", .heads = "n_head", .ff = "n_inner", .max_pos = "n_positions",
                .norm_eps = "layer_norm_epsilon", .act = "activation_function"},
        .ff_default_x4 = 1, .eps_default = 1e-5, .act_default = "gelu_new", .tie_default = 1,
        .parse_quirks = quirks_gpt2,
        .gguf_arch = "gpt2",
    },
    {
        .id = ARCH_GPTNEO, .model_type = "gpt_neo", .title = "GPT-Neo",
        .norm = NORM_LAYER, .pos = POS_LEARNED, .qkv = QKV_SEPARATE, .weights = W_LINEAR, .mlp = MLP_GELU2,
        .scale = SCALE_NONE, .qkv_bias = 0, .o_bias = 1, .mlp_bias = 1,
        .names = {.embed = "transformer.wte", .pos_embed = "transformer.wpe", .final_norm = "transformer.ln_f",
                  .lm_head = "lm_head", .attn_norm = "transformer.h.%d.ln_1",
                  .q = "transformer.h.%d.attn.attention.q_proj", .k = "transformer.h.%d.attn.attention.k_proj",
                  .v = "transformer.h.%d.attn.attention.v_proj", .o = "transformer.h.%d.attn.attention.out_proj",
                  .mlp_norm = "transformer.h.%d.ln_2", .up = "transformer.h.%d.mlp.c_fc",
                  .down = "transformer.h.%d.mlp.c_proj"},
        .key = {.hidden = "hidden_size", .layers = "num_layers", .heads = "num_heads", .ff = "intermediate_size",
                .max_pos = "max_position_embeddings", .norm_eps = "layer_norm_epsilon", .act = "activation_function"},
        .ff_default_x4 = 1, .eps_default = 1e-5, .act_default = "gelu_new", .tie_default = 1,
        .parse_quirks = quirks_neo,
        .gguf_arch = NULL, /* llama.cpp has no GPT-Neo */
    },
    {
        .id = ARCH_LLAMA, .model_type = "llama", .title = "Llama",
        .norm = NORM_RMS, .pos = POS_ROPE, .qkv = QKV_SEPARATE, .weights = W_LINEAR, .mlp = MLP_SWIGLU,
        .scale = SCALE_INV_SQRT_HD, .qkv_bias = 0, .o_bias = 0, .mlp_bias = 0,
        .names = {.embed = "model.embed_tokens", .final_norm = "model.norm", .lm_head = "lm_head",
                  .attn_norm = "model.layers.%d.input_layernorm", .q = "model.layers.%d.self_attn.q_proj",
                  .k = "model.layers.%d.self_attn.k_proj", .v = "model.layers.%d.self_attn.v_proj",
                  .o = "model.layers.%d.self_attn.o_proj", .mlp_norm = "model.layers.%d.post_attention_layernorm",
                  .gate = "model.layers.%d.mlp.gate_proj", .up = "model.layers.%d.mlp.up_proj",
                  .down = "model.layers.%d.mlp.down_proj"},
        .key = {.hidden = "hidden_size", .layers = "num_hidden_layers", .heads = "num_attention_heads",
                .kv_heads = "num_key_value_heads", .ff = "intermediate_size", .max_pos = "max_position_embeddings",
                .norm_eps = "rms_norm_eps", .act = "hidden_act"},
        .max_pos_default = 2048, .eps_default = 1e-6, .act_default = "silu", .tie_default = 0, .head_dim_free = 1,
        .parse_quirks = quirks_llama,
        .gguf_arch = "llama", .gguf_permute_qk = 1, .gguf_vocab_size = 1, .gguf_rope_freqs = 1,
    },
    {
        /* modeling_qwen2.py: Llama with biases on q, k, v (not o); head_dim = hidden / heads */
        .id = ARCH_QWEN2, .model_type = "qwen2", .title = "Qwen2",
        .norm = NORM_RMS, .pos = POS_ROPE, .qkv = QKV_SEPARATE, .weights = W_LINEAR, .mlp = MLP_SWIGLU,
        .scale = SCALE_INV_SQRT_HD, .qkv_bias = 1, .o_bias = 0, .mlp_bias = 0,
        .names = {.embed = "model.embed_tokens", .final_norm = "model.norm", .lm_head = "lm_head",
                  .attn_norm = "model.layers.%d.input_layernorm", .q = "model.layers.%d.self_attn.q_proj",
                  .k = "model.layers.%d.self_attn.k_proj", .v = "model.layers.%d.self_attn.v_proj",
                  .o = "model.layers.%d.self_attn.o_proj", .mlp_norm = "model.layers.%d.post_attention_layernorm",
                  .gate = "model.layers.%d.mlp.gate_proj", .up = "model.layers.%d.mlp.up_proj",
                  .down = "model.layers.%d.mlp.down_proj"},
        .key = {.hidden = "hidden_size", .layers = "num_hidden_layers", .heads = "num_attention_heads",
                .kv_heads = "num_key_value_heads", .ff = "intermediate_size", .max_pos = "max_position_embeddings",
                .norm_eps = "rms_norm_eps", .act = "hidden_act"},
        .max_pos_default = 32768, .eps_default = 1e-6, .act_default = "silu", .tie_default = 0,
        .parse_quirks = quirks_qwen2,
        .gguf_arch = "qwen2", /* llama.cpp's qwen2 rotates halves as HF does: no q/k permutation */
    },
    {
        /* modeling_qwen3.py: no biases, RMSNorm on each head's q and k before RoPE, head_dim free
         * (default 128) */
        .id = ARCH_QWEN3, .model_type = "qwen3", .title = "Qwen3",
        .norm = NORM_RMS, .pos = POS_ROPE, .qkv = QKV_SEPARATE, .weights = W_LINEAR, .mlp = MLP_SWIGLU,
        .scale = SCALE_INV_SQRT_HD, .qkv_bias = 0, .o_bias = 0, .mlp_bias = 0, .qk_norm = QK_NORM_HEAD_RMS,
        .names = {.embed = "model.embed_tokens", .final_norm = "model.norm", .lm_head = "lm_head",
                  .attn_norm = "model.layers.%d.input_layernorm", .q = "model.layers.%d.self_attn.q_proj",
                  .k = "model.layers.%d.self_attn.k_proj", .v = "model.layers.%d.self_attn.v_proj",
                  .o = "model.layers.%d.self_attn.o_proj", .q_norm = "model.layers.%d.self_attn.q_norm",
                  .k_norm = "model.layers.%d.self_attn.k_norm",
                  .mlp_norm = "model.layers.%d.post_attention_layernorm", .gate = "model.layers.%d.mlp.gate_proj",
                  .up = "model.layers.%d.mlp.up_proj", .down = "model.layers.%d.mlp.down_proj"},
        .key = {.hidden = "hidden_size", .layers = "num_hidden_layers", .heads = "num_attention_heads",
                .kv_heads = "num_key_value_heads", .ff = "intermediate_size", .max_pos = "max_position_embeddings",
                .norm_eps = "rms_norm_eps", .act = "hidden_act"},
        .max_pos_default = 32768, .eps_default = 1e-6, .act_default = "silu", .tie_default = 0, .head_dim_free = 1,
        .head_dim_default = 128,
        .parse_quirks = quirks_qwen3,
        .gguf_arch = "qwen3",
    },
};

#define N_ARCHS ((int)(sizeof kArchs / sizeof kArchs[0]))

const ArchInfo *arch_info(Arch a) {
    for (int i = 0; i < N_ARCHS; i++)
        if (kArchs[i].id == a) return &kArchs[i];
    return NULL;
}

const ArchInfo *arch_by_model_type(const char *s) {
    for (int i = 0; i < N_ARCHS; i++)
        if (!strcmp(kArchs[i].model_type, s)) return &kArchs[i];
    return NULL;
}

int arch_count(void) { return N_ARCHS; }
const ArchInfo *arch_at(int i) { return i >= 0 && i < N_ARCHS ? &kArchs[i] : NULL; }
