/* config.c - Hugging Face config.json -> ModelConfig for the architectures of arch.c's table: key
 * names and defaults come from the row (they follow the transformers configuration classes), keys only
 * one architecture has from its row's parse_quirks. Every size is bounded
 * so that a hostile config cannot make us allocate absurd amounts. */
#include "config.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "arch.h"
#include "jsonutil.h"

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

/* A float key that must be present. */
static int getf_req(Cfg *c, const char *key, double lo, double hi, float *out) {
    double v;
    if (sp_json_float(c->j, c->file, key, lo, hi, 0, 0, &v, c->err) != 0) return -1;
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

/* RoPE frequency scaling (see RopeScaling in config.h): "rope_scaling" (transformers 4.x), else
 * "rope_parameters" (5.x, which also carries rope_theta); "rope_type" (or the older "type"). */
static int parse_rope_scaling(Cfg *c, ModelConfig *m) {
    const char *key = "rope_scaling";
    const cJSON *rs = cJSON_GetObjectItemCaseSensitive(c->j, key);
    if (!rs || cJSON_IsNull(rs)) {
        key = "rope_parameters";
        rs = cJSON_GetObjectItemCaseSensitive(c->j, key);
    }
    m->rope_scaling = (RopeScaling){.kind = ROPE_SCALE_NONE, .factor = 1};
    if (!rs || cJSON_IsNull(rs)) return 0;
    if (!cJSON_IsObject(rs)) return sp_fail(c->err, "%s: key \"%s\" must be an object or null", c->file, key);
    char label[320];
    snprintf(label, sizeof label, "%s: %s", c->file, key);
    Cfg in = {rs, label, c->err};
    const char *type = NULL;
    if (sp_json_str(rs, label, cJSON_HasObjectItem(rs, "rope_type") ? "rope_type" : "type", 1, &type, c->err)) return -1;
    if (!strcmp(key, "rope_parameters") && getf(&in, "rope_theta", 1, 1e12, m->rope_theta, &m->rope_theta)) return -1;
    RopeScaling *r = &m->rope_scaling;
    if (!type || !strcmp(type, "default")) return 0;
    if (!strcmp(type, "linear")) {
        r->kind = ROPE_SCALE_LINEAR;
        return getf_req(&in, "factor", 1e-6, 1e6, &r->factor);
    }
    if (!strcmp(type, "llama3")) { /* all four required, as transformers' _validate_llama3_parameters */
        r->kind = ROPE_SCALE_LLAMA3;
        if (getf_req(&in, "factor", 1e-6, 1e6, &r->factor) || getf_req(&in, "low_freq_factor", 1e-6, 1e6, &r->low_freq_factor) ||
            getf_req(&in, "high_freq_factor", 1e-6, 1e6, &r->high_freq_factor) ||
            geti(&in, "original_max_position_embeddings", 1, CFG_MAX_POS, 0, 0, &r->original_max_pos))
            return -1;
        if (r->high_freq_factor <= r->low_freq_factor)
            return sp_fail(c->err, "%s: high_freq_factor = %g must exceed low_freq_factor = %g", label,
                           (double)r->high_freq_factor, (double)r->low_freq_factor);
        return 0;
    }
    if (!strcmp(type, "dynamic"))
        return sp_fail(c->err, "%s: rope_type \"dynamic\" is not supported (its frequencies change with the longest "
                               "sequence seen, which a KV cache cannot follow; llama.cpp has no such type)", label);
    return sp_fail(c->err, "%s: rope_type \"%.40s\" is not supported (default, linear, llama3)", label, type);
}

double rope_inv_freq(const ModelConfig *cfg, int i) {
    return 1.0 / pow((double)cfg->rope_theta, (double)(2 * i) / cfg->head_dim);
}

double rope_freq_divisor(const RopeScaling *r, double inv_freq) {
    if (r->kind == ROPE_SCALE_LINEAR) return r->factor;
    if (r->kind != ROPE_SCALE_LLAMA3) return 1.0;
    double wavelen = 2 * M_PI / inv_freq, L = r->original_max_pos;
    if (wavelen < L / r->high_freq_factor) return 1.0;      /* high frequencies: kept */
    if (wavelen > L / r->low_freq_factor) return r->factor; /* low frequencies: interpolated */
    double smooth = (L / wavelen - r->low_freq_factor) / (r->high_freq_factor - r->low_freq_factor);
    return 1.0 / ((1 - smooth) / r->factor + smooth);       /* between: blended */
}

/* eos_token_id: an id, or a list of up to CFG_MAX_EOS ids (Llama-3.1 Instruct: [128001, 128008,
 * 128009]); eos_id is the first. */
static int parse_eos(const cJSON *j, const char *file, ModelConfig *m, SpErr *err) {
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(j, "eos_token_id");
    long long id;
    m->n_eos = 0;
    if (!cJSON_IsArray(e)) {
        if (sp_json_int(j, file, "eos_token_id", -1, m->vocab_size - 1, 1, -1, &id, err)) return -1;
        if (id >= 0) m->eos_ids[m->n_eos++] = (int)id;
    } else {
        int n = cJSON_GetArraySize(e);
        if (n < 1 || n > CFG_MAX_EOS)
            return sp_fail(err, "%s: key \"eos_token_id\" lists %d ids (1 to %d supported)", file, n, CFG_MAX_EOS);
        const cJSON *x;
        cJSON_ArrayForEach(x, e) {
            if (!cJSON_IsNumber(x) || x->valuedouble < 0 || x->valuedouble >= m->vocab_size ||
                x->valuedouble != (double)(long long)x->valuedouble)
                return sp_fail(err, "%s: key \"eos_token_id\" [%d] must be a token id in [0, %d)", file, m->n_eos,
                               m->vocab_size);
            m->eos_ids[m->n_eos++] = (int)x->valuedouble;
        }
    }
    m->eos_id = m->n_eos ? m->eos_ids[0] : -1;
    return 0;
}

int config_is_eos(const ModelConfig *cfg, int32_t tok) {
    for (int i = 0; i < cfg->n_eos; i++)
        if (cfg->eos_ids[i] == tok) return 1;
    return 0;
}

/* The keys every architecture has, under the row's names and defaults. */
static int parse_common(Cfg *c, const ArchInfo *a, ModelConfig *m) {
    const ArchKeys *k = &a->key;
    m->arch = a->id;
    if (geti(c, "vocab_size", 1, CFG_MAX_VOCAB, 0, 0, &m->vocab_size) ||
        geti(c, k->hidden, 1, CFG_MAX_DIM, 0, 0, &m->d_model) ||
        geti(c, k->layers, 1, CFG_MAX_LAYERS, 0, 0, &m->n_layers) ||
        geti(c, k->heads, 1, CFG_MAX_HEADS, 0, 0, &m->n_heads))
        return -1;
    m->n_kv_heads = m->n_heads;
    if ((k->kv_heads && geti(c, k->kv_heads, 1, CFG_MAX_HEADS, 1, m->n_heads, &m->n_kv_heads)) ||
        geti(c, k->ff, 1, 4 * CFG_MAX_DIM, a->ff_default_x4, 4LL * m->d_model, &m->d_ff) ||
        geti(c, k->max_pos, 1, CFG_MAX_POS, a->max_pos_default > 0, a->max_pos_default, &m->max_pos) ||
        getf(c, k->norm_eps, 0, 1, a->eps_default, &m->norm_eps) ||
        (a->pos == POS_ROPE && getf(c, "rope_theta", 1, 1e12, 10000.0, &m->rope_theta)) ||
        parse_act(c, k->act, a->act_default, &m->act) ||
        sp_json_bool(c->j, c->file, "tie_word_embeddings", 1, a->tie_default, &m->tie_embeddings, c->err))
        return -1;
    if (a->mlp == MLP_SWIGLU && m->act != ACT_SILU)
        return sp_fail(c->err, "%s: key \"%s\" must be \"silu\" for %s", c->file, k->act, a->model_type);
    if (a->pos == POS_ROPE && parse_rope_scaling(c, m)) return -1;
    if (a->parse_quirks && a->parse_quirks(c->j, c->file, m, c->err)) return -1;
    if (m->n_heads % m->n_kv_heads != 0)
        return sp_fail(c->err, "%s: %s = %d is not a multiple of %s = %d", c->file, k->heads, m->n_heads, k->kv_heads,
                       m->n_kv_heads);
    return 0;
}

int config_parse(const cJSON *json, const char *file, ModelConfig *m, SpErr *err) {
    memset(m, 0, sizeof *m);
    Cfg c = {json, file, err};
    if (!cJSON_IsObject(json)) return sp_fail(err, "%s: not a JSON object", file);
    const char *type;
    if (sp_json_str(json, file, "model_type", 0, &type, err)) return -1;
    const ArchInfo *a = arch_by_model_type(type);
    if (!a) {
        char list[256] = "";
        for (int i = 0; i < arch_count(); i++) {
            strncat(list, i ? ", " : "", sizeof list - strlen(list) - 1);
            strncat(list, arch_at(i)->model_type, sizeof list - strlen(list) - 1);
        }
        return sp_fail(err, "%s: key \"model_type\" = \"%s\" is not supported (%s)", file, type, list);
    }
    if (parse_common(&c, a, m)) goto fail;
    const char *heads_key = a->key.heads;
    const cJSON *hd_key = cJSON_GetObjectItemCaseSensitive(json, "head_dim");
    int hd_given = hd_key && !cJSON_IsNull(hd_key), hd_free = a->head_dim_free && (hd_given || a->head_dim_default);
    if (!hd_free && m->d_model % m->n_heads != 0) {
        sp_fail(err, "%s: key \"%s\" = %d does not divide the hidden size %d", file, heads_key, m->n_heads, m->d_model);
        goto fail;
    }
    int hd_default = a->head_dim_default ? a->head_dim_default : m->d_model / m->n_heads;
    if (geti(&c, "head_dim", 1, CFG_MAX_DIM, 1, hd_default, &m->head_dim)) goto fail;
    if (!a->head_dim_free && m->head_dim * m->n_heads != m->d_model) {
        sp_fail(err, "%s: key \"head_dim\" must equal hidden size / heads for %s", file, a->model_type);
        goto fail;
    }
    if (a->pos == POS_ROPE && m->head_dim % 2 != 0) {
        sp_fail(err, "%s: head_dim = %d must be even for rotary embeddings", file, m->head_dim);
        goto fail;
    }
    double std;
    long long bos;
    if (sp_json_float(json, file, "initializer_range", 0, 10, 1, 0.02, &std, err) ||
        sp_json_int(json, file, "bos_token_id", -1, m->vocab_size - 1, 1, -1, &bos, err) ||
        parse_eos(json, file, m, err))
        goto fail;
    m->init_std = (float)std;
    m->bos_id = (int)bos;
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
    const ArchInfo *info = arch_info(a);
    return info ? info->model_type : "?";
}
