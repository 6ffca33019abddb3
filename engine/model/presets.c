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

#include "arch.h"
#include "rules.h"
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

/* The shapes and settings of a Llama-style config (Llama, Qwen2, Qwen3): what config.json says. */
typedef struct RopeLlama3 {
    double factor, low_freq_factor, high_freq_factor;
    int original_max_pos;
} RopeLlama3;
typedef struct LlamaShape {
    int V, d, L, H, Hkv, hd, ff, npos, tie; /* hd = 0: not written (hidden / heads) */
    double eps, theta, std;
    int bos, eos;
    const RopeLlama3 *rope; /* NULL: rope_scaling null */
} LlamaShape;

static cJSON *llama_like(const char *model_type, const char *arch_class, const LlamaShape *s) {
    cJSON *c = cJSON_CreateObject();
    cJSON_AddStringToObject(c, "model_type", model_type);
    cJSON *a = cJSON_AddArrayToObject(c, "architectures");
    cJSON_AddItemToArray(a, cJSON_CreateString(arch_class));
    cJSON_AddNumberToObject(c, "vocab_size", s->V);
    cJSON_AddNumberToObject(c, "hidden_size", s->d);
    cJSON_AddNumberToObject(c, "num_hidden_layers", s->L);
    cJSON_AddNumberToObject(c, "num_attention_heads", s->H);
    cJSON_AddNumberToObject(c, "num_key_value_heads", s->Hkv);
    if (s->hd) cJSON_AddNumberToObject(c, "head_dim", s->hd);
    cJSON_AddNumberToObject(c, "intermediate_size", s->ff);
    cJSON_AddNumberToObject(c, "max_position_embeddings", s->npos);
    cJSON_AddStringToObject(c, "hidden_act", "silu");
    cJSON_AddNumberToObject(c, "rms_norm_eps", s->eps);
    cJSON_AddNumberToObject(c, "rope_theta", s->theta);
    if (s->rope) {
        cJSON *r = cJSON_AddObjectToObject(c, "rope_scaling");
        cJSON_AddNumberToObject(r, "factor", s->rope->factor);
        cJSON_AddNumberToObject(r, "low_freq_factor", s->rope->low_freq_factor);
        cJSON_AddNumberToObject(r, "high_freq_factor", s->rope->high_freq_factor);
        cJSON_AddNumberToObject(r, "original_max_position_embeddings", s->rope->original_max_pos);
        cJSON_AddStringToObject(r, "rope_type", "llama3");
    } else {
        cJSON_AddNullToObject(c, "rope_scaling");
    }
    if (strcmp(model_type, "llama")) { /* Qwen2 / Qwen3: sliding window off, as released */
        cJSON_AddBoolToObject(c, "use_sliding_window", 0);
        cJSON_AddNumberToObject(c, "sliding_window", s->npos);
        cJSON_AddNumberToObject(c, "max_window_layers", s->L);
    }
    cJSON_AddBoolToObject(c, "tie_word_embeddings", s->tie);
    cJSON_AddNumberToObject(c, "initializer_range", s->std);
    cJSON_AddNumberToObject(c, "bos_token_id", s->bos);
    cJSON_AddNumberToObject(c, "eos_token_id", s->eos);
    return c;
}

static cJSON *llama(int V, int d, int L, int H, int Hkv, int ff, int npos, int tie, double std) {
    LlamaShape s = {V, d, L, H, Hkv, 0, ff, npos, tie, 1e-6, 10000.0, std, 1, 2, NULL};
    return llama_like("llama", "LlamaForCausalLM", &s);
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

/* The tiny variants of the new families have vocab 269, the GPT-2 BPE test tokenizer's
 * (tests/tokenizer/fixtures/gpt2: 256 bytes, 12 merges, <|endoftext|> = 268), so a tiny pair runs
 * end to end with it; their other traits are the family's: GQA, tied embeddings, theta, and for
 * Llama 3 its rope scaling with original_max_position_embeddings scaled down to 64 (within a short
 * test sequence; its three frequency bands all occur at head_dim 16). */
#define TINY_V 269
static const RopeLlama3 kLlama3Tiny = {4.0, 1.0, 4.0, 64};
static const RopeLlama3 kLlama31 = {8.0, 1.0, 4.0, 8192};  /* Llama-3.1-8B config.json */
static const RopeLlama3 kLlama32 = {32.0, 1.0, 4.0, 8192}; /* Llama-3.2-1B config.json */

static cJSON *presets_llama(const char *p) {
    if (!strcmp(p, "tiny")) return llama(128, 32, 2, 4, 2, 64, 64, 0, 0.1);
    if (!strcmp(p, "vicuna-68m")) return llama(32000, 768, 2, 12, 12, 3072, 2048, 0, 0.02);
    if (!strcmp(p, "vicuna-7b")) return llama(32000, 4096, 32, 32, 32, 11008, 2048, 0, 0.02);
    const LlamaShape *s = NULL;
    static const LlamaShape tiny3 = {TINY_V, 64, 2, 4, 2, 16, 128, 256, 1, 1e-5, 500000.0, 0.1, TINY_V - 1, TINY_V - 1,
                                     &kLlama3Tiny};
    static const LlamaShape l1b = {128256, 2048, 16, 32, 8, 64, 8192, 131072, 1, 1e-5, 500000.0, 0.02, 128000, 128001,
                                   &kLlama32};
    static const LlamaShape l8b = {128256, 4096, 32, 32, 8, 128, 14336, 131072, 0, 1e-5, 500000.0, 0.02, 128000, 128001,
                                   &kLlama31};
    if (!strcmp(p, "llama-3-tiny")) s = &tiny3;
    if (!strcmp(p, "llama-3.2-1b")) s = &l1b;
    if (!strcmp(p, "llama-3.1-8b")) s = &l8b;
    return s ? llama_like("llama", "LlamaForCausalLM", s) : NULL;
}

/* Qwen2.5 (model_type qwen2): the published config.json shapes. */
static cJSON *presets_qwen2(const char *p) {
    static const LlamaShape tiny = {TINY_V, 64, 2, 4, 2, 0, 128, 128, 1, 1e-6, 1e6, 0.1, TINY_V - 1, TINY_V - 1, NULL};
    static const LlamaShape q05 = {151936, 896, 24, 14, 2, 0, 4864, 32768, 1, 1e-6, 1e6, 0.02, 151643, 151643, NULL};
    static const LlamaShape q7 = {152064, 3584, 28, 28, 4, 0, 18944, 131072, 0, 1e-6, 1e6, 0.02, 151643, 151643, NULL};
    const LlamaShape *s = !strcmp(p, "tiny") ? &tiny : !strcmp(p, "qwen2.5-0.5b") ? &q05 : !strcmp(p, "qwen2.5-7b") ? &q7 : NULL;
    return s ? llama_like("qwen2", "Qwen2ForCausalLM", s) : NULL;
}

/* Qwen3: head_dim 128 whatever hidden / heads (tiny: 16 with hidden 32 and 4 heads). */
static cJSON *presets_qwen3(const char *p) {
    static const LlamaShape tiny = {TINY_V, 32, 2, 4, 2, 16, 96, 128, 1, 1e-6, 1e6, 0.1, TINY_V - 1, TINY_V - 1, NULL};
    static const LlamaShape q06 = {151936, 1024, 28, 16, 8, 128, 3072, 40960, 1, 1e-6, 1e6, 0.02, 151643, 151645, NULL};
    static const LlamaShape q8 = {151936, 4096, 36, 32, 8, 128, 12288, 40960, 0, 1e-6, 1e6, 0.02, 151643, 151645, NULL};
    const LlamaShape *s = !strcmp(p, "tiny") ? &tiny : !strcmp(p, "qwen3-0.6b") ? &q06 : !strcmp(p, "qwen3-8b") ? &q8 : NULL;
    return s ? llama_like("qwen3", "Qwen3ForCausalLM", s) : NULL;
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
static const char *const kLlamaPresets[] = {"tiny",         "vicuna-68m",   "vicuna-7b", "llama-3-tiny",
                                            "llama-3.2-1b", "llama-3.1-8b", NULL};
static const char *const kQwen2Presets[] = {"tiny", "qwen2.5-0.5b", "qwen2.5-7b", NULL};
static const char *const kQwen3Presets[] = {"tiny", "qwen3-0.6b", "qwen3-8b", NULL};

static const PresetArch kPresetArchs[] = {
    {"gpt2", "gpt2", kGpt2Presets, presets_gpt2},
    {"gpt-neo", "gpt_neo", kNeoPresets, presets_neo},
    {"llama", "llama", kLlamaPresets, presets_llama},
    {"qwen2", "qwen2", kQwen2Presets, presets_qwen2},
    {"qwen3", "qwen3", kQwen3Presets, presets_qwen3},
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

const char *preset_arch_of(const char *preset, const char *arch, SpErr *err) {
    const char *found = NULL;
    int n = 0;
    char list[256] = "";
    for (size_t i = 0; i < sizeof kPresetArchs / sizeof *kPresetArchs; i++) {
        const PresetArch *pa = &kPresetArchs[i];
        if (arch && strcmp(pa->arch, arch)) continue;
        for (int k = 0; pa->names[k]; k++)
            if (!strcmp(pa->names[k], preset)) {
                strncat(list, n++ ? ", " : "", sizeof list - strlen(list) - 1);
                strncat(list, pa->arch, sizeof list - strlen(list) - 1);
                found = pa->arch;
            }
    }
    if (n > 1) {
        sp_fail(err, "--preset: \"%s\" is a preset of several architectures (%s): give --arch", preset, list);
        return NULL;
    }
    if (!found) {
        if (arch && !preset_arch(arch)) sp_fail(err, "--arch: unknown architecture \"%s\" (%s)", arch, preset_arch_list());
        else sp_fail(err, "--preset: unknown preset \"%s\"%s%s", preset, arch ? " for " : "", arch ? arch : "");
    }
    return found;
}

int config_param_count(const ModelConfig *cfg, ParamCount *out, SpErr *err) {
    TensorSpec *specs = NULL;
    int n = 0;
    if (model_tensor_specs(cfg, &specs, &n, err)) return -1;
    const ArchInfo *a = arch_info(cfg->arch);
    char embed[96], head[96];
    snprintf(embed, sizeof embed, "%s.weight", a->names.embed);
    snprintf(head, sizeof head, "%s.weight", a->names.lm_head);
    *out = (ParamCount){0, 0};
    for (int i = 0; i < n; i++) {
        int64_t k = specs[i].shape[0] * (specs[i].ndim == 2 ? specs[i].shape[1] : 1);
        out->total += k;
        if (strcmp(specs[i].name, embed) && strcmp(specs[i].name, head)) out->non_embedding += k;
    }
    free(specs);
    return 0;
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
    const char *meta[] = {"format", "pt", SP_INIT_SEED_KEY, seedbuf, NULL, NULL}; /* rules.h */
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
