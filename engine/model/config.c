/* config.c - Hugging Face config.json -> ModelConfig for gpt2, gpt_neo and llama.
 * Field names and defaults follow the transformers configuration classes. Every size is bounded
 * so that a hostile config cannot make us allocate absurd amounts. */
#include "config.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "jsonutil.h"

#define MAX_VOCAB (1LL << 22)
#define MAX_DIM 65536
#define MAX_LAYERS 1024
#define MAX_HEADS 1024
#define MAX_POS (1LL << 20)

typedef struct {
    const cJSON *j;
    const char *file;
    SpErr *err;
} Cfg;

static int geti(Cfg *c, const char *key, long long lo, long long hi, int def_ok, long long def, int *out) {
    long long v;
    if (sp_json_int(c->j, c->file, key, lo, hi, def_ok, def, &v, c->err) != 0) return -1;
    *out = (int)v;
    return 0;
}

static int getf(Cfg *c, const char *key, double lo, double hi, double def, float *out) {
    double v;
    if (sp_json_float(c->j, c->file, key, lo, hi, 1, def, &v, c->err) != 0) return -1;
    *out = (float)v;
    return 0;
}

static int parse_act(Cfg *c, const char *key, const char *def, Act *out) {
    const char *s;
    if (sp_json_str(c->j, c->file, key, 1, &s, c->err) != 0) return -1;
    if (!s) s = def;
    if (!strcmp(s, "gelu_new") || !strcmp(s, "gelu_pytorch_tanh") || !strcmp(s, "gelu_fast"))
        *out = ACT_GELU_TANH;
    else if (!strcmp(s, "gelu"))
        *out = ACT_GELU_ERF;
    else if (!strcmp(s, "silu") || !strcmp(s, "swish"))
        *out = ACT_SILU;
    else
        return sp_fail(c->err, "%s: key \"%s\" = \"%s\" is not a supported activation", c->file, key, s);
    return 0;
}

static int parse_gpt2(Cfg *c, ModelConfig *m) {
    m->arch = ARCH_GPT2;
    if (geti(c, "vocab_size", 1, MAX_VOCAB, 0, 0, &m->vocab_size) || geti(c, "n_embd", 1, MAX_DIM, 0, 0, &m->d_model) ||
        geti(c, "n_layer", 1, MAX_LAYERS, 0, 0, &m->n_layers) || geti(c, "n_head", 1, MAX_HEADS, 0, 0, &m->n_heads) ||
        geti(c, "n_positions", 1, MAX_POS, 0, 0, &m->max_pos) ||
        geti(c, "n_inner", 1, 4 * MAX_DIM, 1, 4LL * m->d_model, &m->d_ff) ||
        getf(c, "layer_norm_epsilon", 0, 1, 1e-5, &m->norm_eps) || parse_act(c, "activation_function", "gelu_new", &m->act) ||
        sp_json_bool(c->j, c->file, "scale_attn_by_inverse_layer_idx", 1, 0, &m->scale_attn_by_layer, c->err) ||
        sp_json_bool(c->j, c->file, "tie_word_embeddings", 1, 1, &m->tie_embeddings, c->err))
        return -1;
    int scale_weights;
    if (sp_json_bool(c->j, c->file, "scale_attn_weights", 1, 1, &scale_weights, c->err)) return -1;
    if (!scale_weights)
        return sp_fail(c->err, "%s: key \"scale_attn_weights\" = false is not supported", c->file);
    m->n_kv_heads = m->n_heads;
    return 0;
}

/* attention_types: [[["global","local"], 12]] -> per-layer flags, must cover num_layers exactly. */
static int parse_neo_layers(Cfg *c, ModelConfig *m) {
    m->layer_local = calloc((size_t)m->n_layers, 1);
    if (!m->layer_local) return sp_fail(c->err, "%s: out of memory", c->file);
    const cJSON *types = cJSON_GetObjectItemCaseSensitive(c->j, "attention_types");
    const cJSON *layers = cJSON_GetObjectItemCaseSensitive(c->j, "attention_layers");
    int n = 0;
    /* attention_types is the source of truth in Hugging Face's config; attention_layers is derived. */
    if (cJSON_IsArray(types)) {
        const cJSON *grp;
        int gi = 0;
        cJSON_ArrayForEach(grp, types) {
            const cJSON *kinds = cJSON_GetArrayItem(grp, 0), *reps = cJSON_GetArrayItem(grp, 1);
            if (!cJSON_IsArray(grp) || !cJSON_IsArray(kinds) || !cJSON_IsNumber(reps) || reps->valuedouble < 0 ||
                reps->valuedouble > MAX_LAYERS)
                return sp_fail(c->err, "%s: attention_types[%d] must be [[\"global\"|\"local\", ...], count]", c->file, gi);
            for (int r = 0; r < (int)reps->valuedouble; r++) {
                const cJSON *t;
                cJSON_ArrayForEach(t, kinds) {
                    if (!cJSON_IsString(t) || (strcmp(t->valuestring, "global") && strcmp(t->valuestring, "local")))
                        return sp_fail(c->err, "%s: attention_types[%d] has an entry that is not \"global\" or \"local\"",
                                       c->file, gi);
                    if (n >= m->n_layers)
                        return sp_fail(c->err, "%s: attention_types describes more than num_layers = %d layers", c->file,
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
                return sp_fail(c->err, "%s: attention_layers[%d] must be \"global\" or \"local\"", c->file, n);
            if (n >= m->n_layers)
                return sp_fail(c->err, "%s: attention_layers lists more than num_layers = %d layers", c->file, m->n_layers);
            m->layer_local[n++] = strcmp(t->valuestring, "local") == 0;
        }
    } else {
        return sp_fail(c->err, "%s: missing required key \"attention_types\"", c->file);
    }
    if (n != m->n_layers)
        return sp_fail(c->err, "%s: attention_types/attention_layers describe %d layers, num_layers = %d", c->file, n,
                       m->n_layers);
    return 0;
}

static int parse_neo(Cfg *c, ModelConfig *m) {
    m->arch = ARCH_GPTNEO;
    if (geti(c, "vocab_size", 1, MAX_VOCAB, 0, 0, &m->vocab_size) || geti(c, "hidden_size", 1, MAX_DIM, 0, 0, &m->d_model) ||
        geti(c, "num_layers", 1, MAX_LAYERS, 0, 0, &m->n_layers) || geti(c, "num_heads", 1, MAX_HEADS, 0, 0, &m->n_heads) ||
        geti(c, "max_position_embeddings", 1, MAX_POS, 0, 0, &m->max_pos) ||
        geti(c, "intermediate_size", 1, 4 * MAX_DIM, 1, 4LL * m->d_model, &m->d_ff) ||
        geti(c, "window_size", 1, MAX_POS, 1, 256, &m->window_size) ||
        getf(c, "layer_norm_epsilon", 0, 1, 1e-5, &m->norm_eps) || parse_act(c, "activation_function", "gelu_new", &m->act) ||
        sp_json_bool(c->j, c->file, "tie_word_embeddings", 1, 1, &m->tie_embeddings, c->err))
        return -1;
    m->n_kv_heads = m->n_heads;
    return parse_neo_layers(c, m);
}

static int parse_llama(Cfg *c, ModelConfig *m) {
    m->arch = ARCH_LLAMA;
    if (geti(c, "vocab_size", 1, MAX_VOCAB, 0, 0, &m->vocab_size) || geti(c, "hidden_size", 1, MAX_DIM, 0, 0, &m->d_model) ||
        geti(c, "num_hidden_layers", 1, MAX_LAYERS, 0, 0, &m->n_layers) ||
        geti(c, "num_attention_heads", 1, MAX_HEADS, 0, 0, &m->n_heads) ||
        geti(c, "num_key_value_heads", 1, MAX_HEADS, 1, m->n_heads, &m->n_kv_heads) ||
        geti(c, "intermediate_size", 1, 4 * MAX_DIM, 0, 0, &m->d_ff) ||
        geti(c, "max_position_embeddings", 1, MAX_POS, 1, 2048, &m->max_pos) ||
        getf(c, "rms_norm_eps", 0, 1, 1e-6, &m->norm_eps) || getf(c, "rope_theta", 1, 1e12, 10000.0, &m->rope_theta) ||
        parse_act(c, "hidden_act", "silu", &m->act) ||
        sp_json_bool(c->j, c->file, "tie_word_embeddings", 1, 0, &m->tie_embeddings, c->err))
        return -1;
    if (m->act != ACT_SILU) return sp_fail(c->err, "%s: key \"hidden_act\" must be \"silu\" for llama", c->file);
    const cJSON *rs = cJSON_GetObjectItemCaseSensitive(c->j, "rope_scaling");
    if (rs && !cJSON_IsNull(rs)) return sp_fail(c->err, "%s: key \"rope_scaling\" is not supported (must be null)", c->file);
    int bias = 0, mlp_bias = 0;
    if (sp_json_bool(c->j, c->file, "attention_bias", 1, 0, &bias, c->err) ||
        sp_json_bool(c->j, c->file, "mlp_bias", 1, 0, &mlp_bias, c->err))
        return -1;
    if (bias || mlp_bias) return sp_fail(c->err, "%s: key \"attention_bias\"/\"mlp_bias\" = true is not supported", c->file);
    if (m->n_heads % m->n_kv_heads != 0)
        return sp_fail(c->err, "%s: num_attention_heads = %d is not a multiple of num_key_value_heads = %d", c->file,
                       m->n_heads, m->n_kv_heads);
    return 0;
}

int config_parse(const cJSON *json, const char *file, ModelConfig *m, SpErr *err) {
    memset(m, 0, sizeof *m);
    Cfg c = {json, file, err};
    if (!cJSON_IsObject(json)) return sp_fail(err, "%s: not a JSON object", file);
    const char *type;
    if (sp_json_str(json, file, "model_type", 0, &type, err)) return -1;
    int rc;
    if (!strcmp(type, "gpt2")) rc = parse_gpt2(&c, m);
    else if (!strcmp(type, "gpt_neo")) rc = parse_neo(&c, m);
    else if (!strcmp(type, "llama")) rc = parse_llama(&c, m);
    else return sp_fail(err, "%s: key \"model_type\" = \"%s\" is not supported (gpt2, gpt_neo, llama)", file, type);
    if (rc != 0) goto fail;
    const char *heads_key = m->arch == ARCH_GPT2 ? "n_head" : m->arch == ARCH_GPTNEO ? "num_heads" : "num_attention_heads";
    if (m->d_model % m->n_heads != 0) {
        sp_fail(err, "%s: key \"%s\" = %d does not divide the hidden size %d", file, heads_key, m->n_heads, m->d_model);
        goto fail;
    }
    if (geti(&c, "head_dim", 1, MAX_DIM, 1, m->d_model / m->n_heads, &m->head_dim)) goto fail;
    if (m->arch != ARCH_LLAMA && m->head_dim * m->n_heads != m->d_model) {
        sp_fail(err, "%s: key \"head_dim\" must equal hidden size / heads for %s", file, arch_name(m->arch));
        goto fail;
    }
    if (m->arch == ARCH_LLAMA && m->head_dim % 2 != 0) {
        sp_fail(err, "%s: head_dim = %d must be even for rotary embeddings", file, m->head_dim);
        goto fail;
    }
    double std;
    long long bos, eos;
    if (sp_json_float(json, file, "initializer_range", 0, 10, 1, 0.02, &std, err) ||
        sp_json_int(json, file, "bos_token_id", -1, m->vocab_size - 1, 1, -1, &bos, err) ||
        sp_json_int(json, file, "eos_token_id", -1, m->vocab_size - 1, 1, -1, &eos, err))
        goto fail;
    m->init_std = (float)std;
    m->bos_id = (int)bos;
    m->eos_id = (int)eos;
    return 0;
fail:
    config_free(m);
    return -1;
}

int config_load(const char *path, ModelConfig *cfg, SpErr *err) {
    memset(cfg, 0, sizeof *cfg);
    cJSON *j = sp_json_load(path, 16u << 20, err);
    if (!j) return -1;
    const char *base = strrchr(path, '/');
    int rc = config_parse(j, base ? base + 1 : path, cfg, err);
    cJSON_Delete(j);
    return rc;
}

void config_free(ModelConfig *cfg) {
    free(cfg->layer_local);
    cfg->layer_local = NULL;
}

const char *arch_name(Arch a) {
    switch (a) {
    case ARCH_GPT2: return "gpt2";
    case ARCH_GPTNEO: return "gpt_neo";
    case ARCH_LLAMA: return "llama";
    }
    return "?";
}
