#include "presets.h"

#include "fsutil.h"

#include <errno.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "jsonutil.h"
#include "kernels.h"
#include "safetensors.h"

static cJSON *gpt2(int V, int d, int L, int H, int npos, double std) {
    cJSON *c = cJSON_CreateObject();
    cJSON_AddStringToObject(c, "model_type", "gpt2");
    cJSON *a = cJSON_AddArrayToObject(c, "architectures");
    cJSON_AddItemToArray(a, cJSON_CreateString("GPT2LMHeadModel"));
    cJSON_AddNumberToObject(c, "vocab_size", V);
    cJSON_AddNumberToObject(c, "n_embd", d);
    cJSON_AddNumberToObject(c, "n_layer", L);
    cJSON_AddNumberToObject(c, "n_head", H);
    cJSON_AddNumberToObject(c, "n_positions", npos);
    cJSON_AddNumberToObject(c, "n_ctx", npos);
    cJSON_AddNullToObject(c, "n_inner");
    cJSON_AddStringToObject(c, "activation_function", "gelu_new");
    cJSON_AddNumberToObject(c, "layer_norm_epsilon", 1e-5);
    cJSON_AddNumberToObject(c, "initializer_range", std);
    cJSON_AddNumberToObject(c, "bos_token_id", V - 1);
    cJSON_AddNumberToObject(c, "eos_token_id", V - 1);
    return c;
}

static cJSON *neo(int V, int d, int L, int H, int npos, int window, double std) {
    cJSON *c = cJSON_CreateObject();
    cJSON_AddStringToObject(c, "model_type", "gpt_neo");
    cJSON *a = cJSON_AddArrayToObject(c, "architectures");
    cJSON_AddItemToArray(a, cJSON_CreateString("GPTNeoForCausalLM"));
    cJSON_AddNumberToObject(c, "vocab_size", V);
    cJSON_AddNumberToObject(c, "hidden_size", d);
    cJSON_AddNumberToObject(c, "num_layers", L);
    cJSON_AddNumberToObject(c, "num_heads", H);
    cJSON_AddNumberToObject(c, "max_position_embeddings", npos);
    cJSON_AddNumberToObject(c, "window_size", window);
    cJSON_AddNullToObject(c, "intermediate_size");
    /* [[["global", "local"], L/2]]: alternating, as the released GPT-Neo models. */
    cJSON *types = cJSON_AddArrayToObject(c, "attention_types");
    cJSON *grp = cJSON_CreateArray();
    cJSON *kinds = cJSON_CreateArray();
    cJSON_AddItemToArray(kinds, cJSON_CreateString("global"));
    cJSON_AddItemToArray(kinds, cJSON_CreateString("local"));
    cJSON_AddItemToArray(grp, kinds);
    cJSON_AddItemToArray(grp, cJSON_CreateNumber(L / 2));
    cJSON_AddItemToArray(types, grp);
    cJSON_AddStringToObject(c, "activation_function", "gelu_new");
    cJSON_AddNumberToObject(c, "layer_norm_epsilon", 1e-5);
    cJSON_AddNumberToObject(c, "initializer_range", std);
    cJSON_AddNumberToObject(c, "bos_token_id", V - 1);
    cJSON_AddNumberToObject(c, "eos_token_id", V - 1);
    return c;
}

static cJSON *llama(int V, int d, int L, int H, int Hkv, int ff, int npos, int tie, double std) {
    cJSON *c = cJSON_CreateObject();
    cJSON_AddStringToObject(c, "model_type", "llama");
    cJSON *a = cJSON_AddArrayToObject(c, "architectures");
    cJSON_AddItemToArray(a, cJSON_CreateString("LlamaForCausalLM"));
    cJSON_AddNumberToObject(c, "vocab_size", V);
    cJSON_AddNumberToObject(c, "hidden_size", d);
    cJSON_AddNumberToObject(c, "num_hidden_layers", L);
    cJSON_AddNumberToObject(c, "num_attention_heads", H);
    cJSON_AddNumberToObject(c, "num_key_value_heads", Hkv);
    cJSON_AddNumberToObject(c, "intermediate_size", ff);
    cJSON_AddNumberToObject(c, "max_position_embeddings", npos);
    cJSON_AddStringToObject(c, "hidden_act", "silu");
    cJSON_AddNumberToObject(c, "rms_norm_eps", 1e-6);
    cJSON_AddNumberToObject(c, "rope_theta", 10000.0);
    cJSON_AddNullToObject(c, "rope_scaling");
    cJSON_AddBoolToObject(c, "tie_word_embeddings", tie);
    cJSON_AddNumberToObject(c, "initializer_range", std);
    cJSON_AddNumberToObject(c, "bos_token_id", 1);
    cJSON_AddNumberToObject(c, "eos_token_id", 2);
    return c;
}

/* Real shapes are those of the public checkpoints' config.json files. */
static cJSON *presets_gpt2(const char *p) {
    if (!strcmp(p, "tiny")) return gpt2(96, 32, 2, 4, 64, 0.1);
    if (!strcmp(p, "gpt2")) return gpt2(50257, 768, 12, 12, 1024, 0.02);
    if (!strcmp(p, "gpt2-medium")) return gpt2(50257, 1024, 24, 16, 1024, 0.02);
    if (!strcmp(p, "gpt2-xl")) return gpt2(50257, 1600, 48, 25, 1024, 0.02);
    return NULL;
}

static cJSON *presets_neo(const char *p) {
    if (!strcmp(p, "tiny")) return neo(96, 32, 2, 4, 64, 8, 0.1);
    if (!strcmp(p, "gpt-neo-125m")) return neo(50257, 768, 12, 12, 2048, 256, 0.02);
    if (!strcmp(p, "gpt-neo-1.3b")) return neo(50257, 2048, 24, 16, 2048, 256, 0.02);
    return NULL;
}

static cJSON *presets_llama(const char *p) {
    if (!strcmp(p, "tiny")) return llama(128, 32, 2, 4, 2, 64, 64, 0, 0.1);
    if (!strcmp(p, "vicuna-68m")) return llama(32000, 768, 2, 12, 12, 3072, 2048, 0, 0.02);
    if (!strcmp(p, "vicuna-7b")) return llama(32000, 4096, 32, 32, 32, 11008, 2048, 0, 0.02);
    return NULL;
}

/* One row per architecture init-random knows: its --arch spelling, the model_type of its arch.c row,
 * its preset names (as presets_*() accepts them) and the builder. */
typedef struct PresetArch {
    const char *arch, *model_type;
    const char *const *names;
    cJSON *(*make)(const char *preset);
} PresetArch;

static const char *const kGpt2Presets[] = {"tiny", "gpt2", "gpt2-medium", "gpt2-xl", NULL};
static const char *const kNeoPresets[] = {"tiny", "gpt-neo-125m", "gpt-neo-1.3b", NULL};
static const char *const kLlamaPresets[] = {"tiny", "vicuna-68m", "vicuna-7b", NULL};

static const PresetArch kPresetArchs[] = {
    {"gpt2", "gpt2", kGpt2Presets, presets_gpt2},
    {"gpt-neo", "gpt_neo", kNeoPresets, presets_neo},
    {"llama", "llama", kLlamaPresets, presets_llama},
};

static const PresetArch *preset_arch(const char *arch) {
    for (size_t i = 0; i < sizeof kPresetArchs / sizeof *kPresetArchs; i++)
        if (!strcmp(kPresetArchs[i].arch, arch)) return &kPresetArchs[i];
    return NULL;
}

const char *const *preset_names(const char *arch) {
    const PresetArch *pa = preset_arch(arch);
    return pa ? pa->names : NULL;
}

const char *preset_model_type(const char *arch) {
    const PresetArch *pa = preset_arch(arch);
    return pa ? pa->model_type : NULL;
}

const char *preset_arch_list(void) {
    static char list[256];
    if (!list[0])
        for (size_t i = 0; i < sizeof kPresetArchs / sizeof *kPresetArchs; i++) {
            strncat(list, i ? ", " : "", sizeof list - strlen(list) - 1);
            strncat(list, kPresetArchs[i].arch, sizeof list - strlen(list) - 1);
        }
    return list;
}

cJSON *preset_config(const char *arch, const char *p, SpErr *err) {
    const PresetArch *pa = preset_arch(arch);
    if (!pa) {
        sp_fail(err, "--arch: unknown architecture \"%s\" (%s)", arch, preset_arch_list());
        return NULL;
    }
    cJSON *c = pa->make(p);
    if (!c) {
        const char *const *names = pa->names;
        char list[256] = "";
        for (int i = 0; names[i]; i++) {
            strncat(list, i ? ", " : "", sizeof list - strlen(list) - 1);
            strncat(list, names[i], sizeof list - strlen(list) - 1);
        }
        sp_fail(err, "--preset: unknown preset \"%s\" for %s (%s)", p, arch, list);
    }
    return c;
}

/* ---- random weights ---- */

typedef struct FillCtx {
    const TensorSpec *specs;
    gsl_rng *rng;
    double std;
    DType dtype;
    float *scratch; /* one tensor in f32 */
} FillCtx;

static int fill_tensor(void *vctx, int i, void *buf, size_t nbytes, SpErr *err) {
    (void)err;
    FillCtx *c = vctx;
    const TensorSpec *s = &c->specs[i];
    size_t n = (size_t)s->shape[0] * (size_t)(s->ndim == 2 ? s->shape[1] : 1);
    float *v = c->dtype == DT_F32 ? buf : c->scratch;
    for (size_t k = 0; k < n; k++) {
        double z = gsl_ran_gaussian_ziggurat(c->rng, c->std);
        v[k] = (float)(s->role == TR_NORM_WEIGHT ? 1.0 + z : z);
    }
    if (c->dtype != DT_F32) narrow(v, n, c->dtype, buf);
    (void)nbytes;
    return 0;
}

static int write_text_atomic(const char *path, const char *text, SpErr *err) {
    char tmp[4200];
    FILE *f = sp_output_fopen_tmp(path, tmp, sizeof tmp, err);
    if (!f) return -1;
    int bad = fputs(text, f) == EOF || fputc('\n', f) == EOF;
    bad |= fclose(f) != 0;
    if (bad) {
        sp_output_discard(tmp);
        return sp_fail(err, "%s: write failed: %s", tmp, strerror(errno ? errno : EIO));
    }
    return sp_output_commit(tmp, path, err);
}

int init_random_model(const cJSON *config, const char *name, DType dtype, uint64_t seed, const char *out_dir, SpErr *err) {
    ModelConfig cfg;
    if (config_parse(config, name, &cfg, err)) return -1;
    TensorSpec *specs = NULL;
    StWriteSpec *ws = NULL;
    FillCtx ctx = {0};
    int n = 0, rc = -1;
    char path[4096];
    if (sp_mkdir_p(out_dir, err)) goto done;
    if (model_tensor_specs(&cfg, &specs, &n, err)) goto done;
    ws = calloc((size_t)n, sizeof *ws);
    size_t largest = 0;
    for (int i = 0; ws && i < n; i++) {
        ws[i].name = specs[i].name;
        ws[i].dtype = dtype == DT_F32 ? ST_F32 : dtype == DT_F16 ? ST_F16 : ST_BF16;
        ws[i].ndim = specs[i].ndim;
        ws[i].shape[0] = specs[i].shape[0];
        ws[i].shape[1] = specs[i].shape[1];
        size_t ne = (size_t)specs[i].shape[0] * (size_t)(specs[i].ndim == 2 ? specs[i].shape[1] : 1);
        if (ne > largest) largest = ne;
    }
    ctx.specs = specs;
    ctx.rng = gsl_rng_alloc(gsl_rng_mt19937);
    ctx.std = cfg.init_std;
    ctx.dtype = dtype;
    ctx.scratch = dtype == DT_F32 ? NULL : malloc(largest * sizeof(float));
    if (!ws || !ctx.rng || (dtype != DT_F32 && !ctx.scratch)) {
        sp_fail(err, "out of memory");
        goto done;
    }
    gsl_rng_set(ctx.rng, (unsigned long)(seed ^ (seed >> 32)));
    char seedbuf[32];
    snprintf(seedbuf, sizeof seedbuf, "%llu", (unsigned long long)seed);
    const char *meta[] = {"format", "pt", "sprinter_init_seed", seedbuf, NULL, NULL};
    if (sp_path_join(path, sizeof path, out_dir, "model.safetensors", err)) goto done;
    if (st_write_file(path, ws, n, meta, fill_tensor, &ctx, err)) goto done;
    char *text = cJSON_Print(config);
    if (!text) {
        sp_fail(err, "out of memory");
        goto done;
    }
    int wrc = sp_path_join(path, sizeof path, out_dir, "config.json", err) || write_text_atomic(path, text, err);
    free(text);
    if (wrc) goto done;
    rc = 0;
done:
    if (ctx.rng) gsl_rng_free(ctx.rng);
    free(ctx.scratch);
    free(ws);
    free(specs);
    config_free(&cfg);
    return rc;
}
