/* config.c - Hugging Face config.json -> ModelConfig for the architectures of arch.c's table: key
 * names and defaults come from the row (they follow the transformers configuration classes), keys only
 * one architecture has from its row's parse_quirks. Every size is bounded
 * so that a hostile config cannot make us allocate absurd amounts. */
#include "config.h"

#include <cjson/cJSON.h>
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
    if (a->pos == POS_ROPE) {
        const cJSON *rs = cJSON_GetObjectItemCaseSensitive(c->j, "rope_scaling");
        if (rs && !cJSON_IsNull(rs))
            return sp_fail(c->err, "%s: key \"rope_scaling\" is not supported (must be null)", c->file);
    }
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
    if (m->d_model % m->n_heads != 0) {
        sp_fail(err, "%s: key \"%s\" = %d does not divide the hidden size %d", file, heads_key, m->n_heads, m->d_model);
        goto fail;
    }
    if (geti(&c, "head_dim", 1, CFG_MAX_DIM, 1, m->d_model / m->n_heads, &m->head_dim)) goto fail;
    if (!a->head_dim_free && m->head_dim * m->n_heads != m->d_model) {
        sp_fail(err, "%s: key \"head_dim\" must equal hidden size / heads for %s", file, a->model_type);
        goto fail;
    }
    if (a->pos == POS_ROPE && m->head_dim % 2 != 0) {
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
    const ArchInfo *info = arch_info(a);
    return info ? info->model_type : "?";
}
