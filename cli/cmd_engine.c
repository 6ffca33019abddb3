/* cmd_engine.c - subcommands that drive the engine alone: generate, tokenize, logits,
 * init-random, info. */
#include <cblas.h>
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "args.h"
#include "kernels.h"
#include "chat_template.h"
#include "commands.h"
#include "decoding.h"
#include "fsutil.h"
#include "jsonutil.h"
#include "gguf.h"
#include "model.h"
#include "presets.h"
#include "sampling.h"
#include "setup.h"
#include "tokenizer.h"

#define MAX_IDS (1 << 20)

static int fail(const char *cmd, const SpErr *e) {
    fprintf(stderr, "sprinter %s: %s\n", cmd, e->msg);
    return 1;
}


/* Writes n floats to path atomically (raw little-endian float32; fsutil's output rules). */
static int write_f32(const char *path, const float *v, size_t n, SpErr *err) {
    char tmp[4200];
    FILE *f = sp_output_fopen_tmp(path, tmp, sizeof tmp, err);
    if (!f) return -1;
    int bad = fwrite(v, sizeof(float), n, f) != n;
    bad |= fclose(f) != 0;
    if (bad) {
        unlink(tmp);
        return sp_fail(err, "%s: write failed: %s", tmp, strerror(errno ? errno : EIO));
    }
    return sp_output_commit(tmp, path, err);
}

/* ------------------------------------------------------------------ generate */

static const char kGenerateHelp[] =
    "usage: sprinter generate --model DIR (--prompt TEXT | --prompt-ids 1,2,3) [options]\n"
    "  --model DIR        Hugging Face model directory (config.json, model.safetensors), or FILE.gguf alone\n"
    "  --tokenizer DIR    directory with the tokenizer files (default: the model directory)\n"
    "  --prompt TEXT      prompt text (needs a tokenizer)\n"
    "  --prompt-ids IDS   prompt as comma-separated token ids (prints ids when there is no tokenizer)\n"
    "  --max-new N        tokens to generate (default 32)\n"
    "  --temperature T    0 = greedy (default 1)\n"
    "  --top-k K          keep the K most likely tokens, 0 = off (default 0)\n"
    "  --top-p P          nucleus sampling mass, 1 = off (default 1)\n"
    "  --seed S           RNG seed (default 0)\n"
    "  --ignore-eos       keep generating after the end-of-sequence token\n"
    "  --threads N        OpenBLAS threads (default: 1 for models under 32 MB, else all cores)\n"
    "Prints the continuation on stdout and timing on stderr.\n";

int cmd_generate(int argc, char **argv) {
    const char *cmd = "generate", *model_dir = NULL, *tok_dir = NULL, *prompt = NULL, *prompt_ids = NULL;
    long max_new = 32, threads = 0;
    SamplerParams sp = {1.0f, 0, 1.0f};
    uint64_t seed = 0;
    int ignore_eos = 0;
    static const struct option opts[] = {
        {"model", required_argument, 0, 'm'},   {"tokenizer", required_argument, 0, 'T'},
        {"prompt", required_argument, 0, 'p'},  {"prompt-ids", required_argument, 0, 'i'},
        {"max-new", required_argument, 0, 'n'}, ARG_SAMPLING_OPTIONS,
        {"seed", required_argument, 0, 's'},    {"ignore-eos", no_argument, 0, 'e'},
        {"threads", required_argument, 0, 'j'}, {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0}};
    optind = 1;
    for (int c; (c = getopt_long(argc, argv, "", opts, NULL)) != -1;) {
        switch (c) {
        case 'm': model_dir = optarg; break;
        case 'T': tok_dir = optarg; break;
        case 'p': prompt = optarg; break;
        case 'i': prompt_ids = optarg; break;
        case 'n': if (arg_long(cmd, "max-new", optarg, 0, MAX_IDS, &max_new)) return 2; break;
        case 's': if (arg_u64(cmd, "seed", optarg, &seed)) return 2; break;
        case 'e': ignore_eos = 1; break;
        case 'j': if (arg_long(cmd, "threads", optarg, 1, 1024, &threads)) return 2; break;
        case 'h': fputs(kGenerateHelp, stdout); return 0;
        default:
            switch (arg_sampling(cmd, c, optarg, &sp)) {
            case 1: break;
            case 0: return arg_bad_option(cmd, argv);
            default: return 2;
            }
        }
    }
    if (!model_dir || (!prompt == !prompt_ids)) {
        fprintf(stderr, "sprinter generate: need --model and exactly one of --prompt, --prompt-ids\n");
        return 2;
    }
    SpErr err = {{0}};
    int rc = 1;
    RunModels rm = {0};
    Decoder *decoder = NULL;
    gsl_rng *rng = NULL;
    int32_t *ids = NULL;
    size_t n_prompt = 0;
    DecodeOutput out = {0};
    if (sampler_params_check(&sp, &err)) goto done;
    RunSetup rs = {NULL, model_dir, prompt || tok_dir, tok_dir}; /* the tokenizer: --tokenizer, else the model's */
    if (run_models_open(&rm, &rs, &err)) goto done;
    const Model *m = rm.target;
    Tokenizer *tok = rm.tokenizer;
    int n_threads = threads ? (int)threads : suggest_threads(model_weight_bytes(m), (int)sysconf(_SC_NPROCESSORS_ONLN));
    openblas_set_num_threads(n_threads);
    kernels_bind_threads(n_threads); /* one process: each thread on its own CPU (kernels.h) */
    if (prompt) {
        if (tokenizer_encode_text(tok, prompt, strlen(prompt), &ids, &n_prompt, &err)) goto done;
    } else if (arg_ids(cmd, "prompt-ids", prompt_ids, MAX_IDS, &ids, &n_prompt)) {
        rc = 2;
        goto done;
    }
    if (n_prompt == 0) {
        sp_fail(&err, "--prompt: the prompt encodes to no tokens");
        goto done;
    }
    /* the AR method of the decoder, as sweeps run it */
    DecodeConfig ar;
    decode_config_default(&ar);
    ar.method = DM_AR;
    ar.sampling = sp;
    ar.max_new = (int)(max_new > 0 ? max_new : 1);
    ar.stop_at_eos = !ignore_eos;
    int context = max_new > 0 ? decode_context_of(&ar, (int)n_prompt) : (int)n_prompt;
    if (context > model_config(m)->max_pos) {
        sp_fail(&err, "prompt (%zu tokens) + --max-new %ld exceeds the context of %d positions", n_prompt, max_new,
                model_config(m)->max_pos);
        goto done;
    }
    if (max_new > 0) {
        if (!(decoder = decoder_new(NULL, m, NULL, context, &err)) || !(rng = sampler_rng_new(seed))) {
            if (!decoder) sp_err_prefix(&err, "%s", model_dir);
            else sp_fail(&err, "out of memory");
            goto done;
        }
        if (decoder_run(decoder, &ar, ids, (int)n_prompt, rng, &out, &err)) { /* the model and the position */
            sp_err_prefix(&err, "%s", model_dir);
            goto done;
        }
    }
    if (tok) {
        char *text;
        size_t len;
        if (tokenizer_decode(tok, out.tokens, (size_t)out.n_tokens, 1, &text, &len, &err)) goto done;
        fwrite(text, 1, len, stdout);
        fputc('\n', stdout);
        free(text);
    } else {
        for (int i = 0; i < out.n_tokens; i++) printf("%s%d", i ? "," : "", out.tokens[i]);
        printf("\n");
    }
    double secs = out.stats.t_total;
    fprintf(stderr, "prompt %zu tokens, generated %d tokens in %.3f s (%.1f tok/s, the prompt's forward included)\n",
            n_prompt, out.n_tokens, secs, out.n_tokens && secs > 0 ? out.n_tokens / secs : 0.0);
    rc = 0;
done:
    if (rc == 1) fail(cmd, &err);
    if (rng) gsl_rng_free(rng);
    decode_output_free(&out);
    decoder_free(decoder);
    free(ids);
    run_models_close(&rm);
    return rc;
}

/* ------------------------------------------------------------------ tokenize */

static const char kTokenizeHelp[] =
    "usage: sprinter tokenize --model DIR (--text TEXT | --decode IDS) [--bos] [--special-as-text]\n"
    "  --model DIR     directory with the tokenizer, in the first of these layouts it holds:\n"
    "                    tokenizer.json (Hugging Face tokenizers: byte-level BPE as GPT-2, Llama 3.x\n"
    "                      and Qwen2/2.5/3, or SentencePiece-style BPE with byte fallback as\n"
    "                      Llama 1/2 / Mistral);\n"
    "                    vocab.json + merges.txt (GPT-2 as transformers saves it);\n"
    "                    encoder.json + vocab.bpe (GPT-2 as OpenAI published it);\n"
    "                  or a GGUF file (FILE.gguf: its tokenizer.ggml.* byte-level BPE)\n"
    "  --text TEXT     print the token ids of TEXT, space-separated\n"
    "  --decode IDS    print the text of comma-separated token ids\n"
    "  --bos           prepend the BOS token (Llama convention)\n"
    "  --special-as-text  encode special tokens in TEXT (\"<s>\", \"<|endoftext|>\") as plain text;\n"
    "                  by default they are split out as their ids, as Hugging Face tokenizers do\n";

int cmd_tokenize(int argc, char **argv) {
    const char *cmd = "tokenize", *dir = NULL, *text = NULL, *decode = NULL;
    unsigned flags = 0;
    static const struct option opts[] = {{"model", required_argument, 0, 'm'}, {"text", required_argument, 0, 't'},
                                         {"decode", required_argument, 0, 'd'}, {"bos", no_argument, 0, 'b'},
                                         {"special-as-text", no_argument, 0, 's'},
                                         {"help", no_argument, 0, 'h'},         {0, 0, 0, 0}};
    optind = 1;
    for (int c; (c = getopt_long(argc, argv, "", opts, NULL)) != -1;) {
        switch (c) {
        case 'm': dir = optarg; break;
        case 't': text = optarg; break;
        case 'd': decode = optarg; break;
        case 'b': flags |= TOK_ENC_BOS; break;
        case 's': flags |= TOK_ENC_SPECIAL_AS_TEXT; break;
        case 'h': fputs(kTokenizeHelp, stdout); return 0;
        default: return arg_bad_option(cmd, argv);
        }
    }
    if (!dir || (!text == !decode)) {
        fprintf(stderr, "sprinter tokenize: need --model and exactly one of --text, --decode\n");
        return 2;
    }
    SpErr err = {{0}};
    Tokenizer *t = model_tokenizer_load(dir, &err);
    if (!t) return fail(cmd, &err);
    int rc = 1;
    int32_t *ids = NULL;
    size_t n = 0;
    if (text) {
        if (tokenizer_encode_flags(t, text, strlen(text), flags, &ids, &n, &err)) goto done;
        for (size_t i = 0; i < n; i++) printf("%s%d", i ? " " : "", ids[i]);
        printf("\n");
    } else {
        if (arg_ids(cmd, "decode", decode, MAX_IDS, &ids, &n)) {
            rc = 2;
            goto done;
        }
        char *out;
        size_t len;
        if (tokenizer_decode(t, ids, n, 0, &out, &len, &err)) goto done;
        fwrite(out, 1, len, stdout);
        printf("\n");
        free(out);
    }
    rc = 0;
done:
    if (rc == 1) fail(cmd, &err);
    free(ids);
    tokenizer_free(t);
    return rc;
}

/* ------------------------------------------------------------------ logits */

static const char kLogitsHelp[] =
    "usage: sprinter logits --model DIR --ids 1,2,3 [--all] [--step] [--out FILE] [--hidden-out FILE]\n"
    "       sprinter logits --model DIR --ids 1,2,3,PAD,PAD --pad-from K --hidden-out FILE\n"
    "  --ids IDS          comma-separated token ids at positions 0..n-1\n"
    "  --pad-from K       ids K..n-1 are right padding, as in a Hugging Face batch (attention_mask 0 there):\n"
    "                     writes the final-norm state of the last position, which attends to ids 0..K-1 only\n"
    "                     (session_probe; the authors' verifier trained on such states)\n"
    "  --all              output every position ([n, V] logits, [n, d] hidden), not just the last\n"
    "  --step             run one token per forward call instead of one batched call\n"
    "  --out FILE         write raw little-endian float32 logits instead of printing them\n"
    "  --hidden-out FILE  write the final-norm hidden states as raw float32\n";

int cmd_logits(int argc, char **argv) {
    const char *cmd = "logits", *dir = NULL, *ids_s = NULL, *out = NULL, *hout = NULL;
    int all = 0, step = 0;
    long pad_from = 0;
    static const struct option opts[] = {
        {"model", required_argument, 0, 'm'}, {"ids", required_argument, 0, 'i'},
        {"all", no_argument, 0, 'a'},         {"step", no_argument, 0, 's'},
        {"out", required_argument, 0, 'o'},   {"hidden-out", required_argument, 0, 'H'},
        {"pad-from", required_argument, 0, 'P'}, {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    optind = 1;
    for (int c; (c = getopt_long(argc, argv, "", opts, NULL)) != -1;) {
        switch (c) {
        case 'm': dir = optarg; break;
        case 'i': ids_s = optarg; break;
        case 'a': all = 1; break;
        case 's': step = 1; break;
        case 'o': out = optarg; break;
        case 'H': hout = optarg; break;
        case 'P':
            if (arg_long(cmd, "pad-from", optarg, 1, MAX_IDS, &pad_from)) return 2;
            break;
        case 'h': fputs(kLogitsHelp, stdout); return 0;
        default: return arg_bad_option(cmd, argv);
        }
    }
    if (!dir || !ids_s) {
        fprintf(stderr, "sprinter logits: need --model and --ids\n");
        return 2;
    }
    if (pad_from && (!hout || out || all || step)) {
        fprintf(stderr, "sprinter logits: --pad-from writes only --hidden-out (no --out, --all, --step)\n");
        return 2;
    }
    int32_t *ids = NULL;
    size_t n = 0;
    if (arg_ids(cmd, "ids", ids_s, MAX_IDS, &ids, &n)) return 2;
    if (pad_from && (size_t)pad_from >= n) {
        fprintf(stderr, "sprinter logits: --pad-from %ld: must be below the number of ids (%zu)\n", pad_from, n);
        free(ids);
        return 2;
    }
    SpErr err = {{0}};
    int rc = 1;
    Session *s = NULL;
    float *lo = NULL, *hi = NULL;
    Model *m = model_load(dir, &err);
    if (!m) {
        sp_err_prefix(&err, "%s", dir);
        goto done;
    }
    const ModelConfig *c = model_config(m);
    size_t V = (size_t)c->vocab_size, d = (size_t)c->d_model;
    for (size_t i = 0; i < n; i++)
        if (ids[i] >= c->vocab_size) {
            sp_fail(&err, "--ids: entry %zu = %d is not below vocab_size %d", i, ids[i], c->vocab_size);
            goto done;
        }
    if (n > (size_t)c->max_pos) {
        sp_fail(&err, "--ids: %zu ids exceed the context of %d positions", n, c->max_pos);
        goto done;
    }
    if (!(s = session_new(m, (int)n, step ? 1 : (int)n, &err))) goto done;
    lo = malloc(n * V * sizeof *lo);
    hi = malloc(n * d * sizeof *hi);
    if (!lo || !hi) {
        sp_fail(&err, "out of memory");
        goto done;
    }
    const float *L, *Hd;
    if (pad_from) { /* the real tokens, then the last padding position as a probe */
        if (session_forward(s, ids, (int)pad_from, &L, &Hd, &err) ||
            session_probe(s, ids[n - 1], (int)n - 1, &Hd, &err) || write_f32(hout, Hd, d, &err))
            goto done;
        rc = 0;
        goto done;
    }
    if (step) {
        for (size_t i = 0; i < n; i++) {
            if (session_forward(s, ids + i, 1, &L, &Hd, &err)) goto done;
            memcpy(lo + i * V, L, V * sizeof *lo);
            memcpy(hi + i * d, Hd, d * sizeof *hi);
        }
    } else {
        if (session_forward(s, ids, (int)n, &L, &Hd, &err)) goto done;
        memcpy(lo, L, n * V * sizeof *lo);
        memcpy(hi, Hd, n * d * sizeof *hi);
    }
    const float *lsel = all ? lo : lo + (n - 1) * V, *hsel = all ? hi : hi + (n - 1) * d;
    size_t rows = all ? n : 1;
    if (out) {
        if (write_f32(out, lsel, rows * V, &err)) goto done;
    } else {
        for (size_t r = 0; r < rows; r++)
            for (size_t v = 0; v < V; v++) printf("%.9g%c", lsel[r * V + v], v + 1 == V ? '\n' : ' ');
    }
    if (hout && write_f32(hout, hsel, rows * d, &err)) goto done;
    rc = 0;
done:
    if (rc) fail(cmd, &err);
    free(lo);
    free(hi);
    free(ids);
    session_free(s);
    model_free(m);
    return rc;
}

/* ------------------------------------------------------------------ init-random */

static const char kInitHelp[] =
    "usage: sprinter init-random --arch gpt2|gpt-neo|llama|qwen2|qwen3 (--preset NAME | --config FILE) --out DIR\n"
    "                            [--seed S] [--dtype f32|f16|bf16]\n"
    "  presets: gpt2: tiny gpt2 gpt2-medium gpt2-xl; gpt-neo: tiny gpt-neo-125m gpt-neo-1.3b;\n"
    "           llama: tiny vicuna-68m vicuna-7b llama-3-tiny llama-3.2-1b llama-3.1-8b;\n"
    "           qwen2: tiny qwen2.5-0.5b qwen2.5-7b; qwen3: tiny qwen3-0.6b qwen3-8b\n"
    "           (sprinter info --preset NAME prints one without writing it)\n"
    "  --config FILE  a Hugging Face config.json; its model_type must match --arch\n"
    "  Weights ~ N(0, initializer_range^2) (norm weights 1 + that); default seed 0, dtype f32.\n";

int cmd_init_random(int argc, char **argv) {
    const char *cmd = "init-random", *arch = NULL, *preset = NULL, *cfg_path = NULL, *out = NULL, *dt = "f32";
    uint64_t seed = 0;
    static const struct option opts[] = {
        {"arch", required_argument, 0, 'a'}, {"preset", required_argument, 0, 'p'},
        {"config", required_argument, 0, 'c'}, {"out", required_argument, 0, 'o'},
        {"seed", required_argument, 0, 's'}, {"dtype", required_argument, 0, 'd'},
        {"help", no_argument, 0, 'h'},       {0, 0, 0, 0}};
    optind = 1;
    for (int c; (c = getopt_long(argc, argv, "", opts, NULL)) != -1;) {
        switch (c) {
        case 'a': arch = optarg; break;
        case 'p': preset = optarg; break;
        case 'c': cfg_path = optarg; break;
        case 'o': out = optarg; break;
        case 's': if (arg_u64(cmd, "seed", optarg, &seed)) return 2; break;
        case 'd': dt = optarg; break;
        case 'h': fputs(kInitHelp, stdout); return 0;
        default: return arg_bad_option(cmd, argv);
        }
    }
    if (!arch || !out || (!preset == !cfg_path)) {
        fprintf(stderr, "sprinter init-random: need --arch, --out and exactly one of --preset, --config\n");
        return 2;
    }
    DType dtype;
    if (!strcmp(dt, "f32")) dtype = DT_F32;
    else if (!strcmp(dt, "f16")) dtype = DT_F16;
    else if (!strcmp(dt, "bf16")) dtype = DT_BF16;
    else {
        fprintf(stderr, "sprinter init-random: --dtype: \"%s\" is not f32, f16 or bf16\n", dt);
        return 2;
    }
    if (!preset_names(arch)) {
        fprintf(stderr, "sprinter init-random: --arch: unknown architecture \"%s\" (%s)\n", arch, preset_arch_list());
        return 2;
    }
    SpErr err = {{0}};
    cJSON *cfg = preset ? preset_config(arch, preset, &err) : sp_json_load(cfg_path, 16u << 20, &err);
    if (!cfg) return fail(cmd, &err);
    const char *want = preset_model_type(arch);
    const cJSON *mt = cJSON_GetObjectItemCaseSensitive(cfg, "model_type");
    int rc = 1;
    if (!cJSON_IsString(mt) || strcmp(mt->valuestring, want)) {
        sp_fail(&err, "%s: key \"model_type\" must be \"%s\" for --arch %s", cfg_path ? cfg_path : "preset", want, arch);
    } else {
        char name[4200];
        if (cfg_path) snprintf(name, sizeof name, "%s", cfg_path);
        else snprintf(name, sizeof name, "preset %s", preset);
        if (init_random_model(cfg, name, dtype, seed, out, &err) == 0) rc = 0;
    }
    if (rc) fail(cmd, &err);
    cJSON_Delete(cfg);
    return rc;
}

/* ------------------------------------------------------------------ info */

static const char kInfoHelp[] =
    "usage: sprinter info --model DIR|FILE.gguf\n"
    "       sprinter info --preset NAME [--arch A]   (no weights written or read)\n"
    "  Prints the configuration, the parameter count (a tied embedding counted once; params_non_embedding\n"
    "  leaves out the token embedding and the LM head) and the weight bytes (stored dtype; for a preset,\n"
    "  bf16). A preset name two architectures share (\"tiny\") needs --arch.\n";

static const char *rope_scaling_name(RopeScaleKind k) {
    return k == ROPE_SCALE_LINEAR ? "linear" : k == ROPE_SCALE_LLAMA3 ? "llama3" : k == ROPE_SCALE_FREQS ? "freqs (rope_freqs.weight)" : "none";
}

static void print_config(const ModelConfig *c) {
    printf("arch %s\nvocab_size %d\nd_model %d\nn_layers %d\nn_heads %d\nn_kv_heads %d\nhead_dim %d\nd_ff %d\n"
           "max_pos %d\ntied_embeddings %d\n",
           arch_name(c->arch), c->vocab_size, c->d_model, c->n_layers, c->n_heads, c->n_kv_heads, c->head_dim, c->d_ff,
           c->max_pos, c->tie_embeddings);
    if (c->bos_id >= 0) printf("bos_id %d\n", c->bos_id);
    for (int i = 0; i < c->n_eos; i++) /* what config_is_eos stops at */
        printf("%s%d%s", i ? "," : "eos_ids ", c->eos_ids[i], i + 1 < c->n_eos ? "" : "\n");
    if (c->rope_theta > 0) printf("rope_theta %g\nrope_scaling %s\n", (double)c->rope_theta, rope_scaling_name(c->rope_scaling.kind));
    if (c->rope_scaling.kind == ROPE_SCALE_LLAMA3)
        printf("rope_scaling_factor %g\nrope_low_freq_factor %g\nrope_high_freq_factor %g\nrope_original_max_pos %d\n",
               (double)c->rope_scaling.factor, (double)c->rope_scaling.low_freq_factor,
               (double)c->rope_scaling.high_freq_factor, c->rope_scaling.original_max_pos);
    else if (c->rope_scaling.kind == ROPE_SCALE_LINEAR)
        printf("rope_scaling_factor %g\n", (double)c->rope_scaling.factor);
}

/* info --preset: the configuration and the counts its tensor table implies. */
static int info_preset(const char *preset, const char *arch) {
    SpErr err = {{0}};
    const char *pa = preset_arch_of(preset, arch, &err);
    cJSON *json = pa ? preset_config(pa, preset, &err) : NULL;
    if (!json) return fail("info", &err);
    char name[300];
    snprintf(name, sizeof name, "preset %s", preset);
    ModelConfig c;
    ParamCount n;
    int rc = config_parse(json, name, &c, &err);
    cJSON_Delete(json);
    if (rc) return fail("info", &err);
    if (config_param_count(&c, &n, &err)) {
        config_free(&c);
        return fail("info", &err);
    }
    printf("preset %s\n", preset);
    print_config(&c);
    printf("params %lld\nparams_non_embedding %lld\nweight_bytes_bf16 %lld\n", (long long)n.total,
           (long long)n.non_embedding, (long long)(2 * n.total));
    config_free(&c);
    return 0;
}

int cmd_info(int argc, char **argv) {
    const char *dir = NULL, *preset = NULL, *arch = NULL;
    static const struct option opts[] = {{"model", required_argument, 0, 'm'}, {"preset", required_argument, 0, 'p'},
                                         {"arch", required_argument, 0, 'a'}, {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    optind = 1;
    for (int c; (c = getopt_long(argc, argv, "", opts, NULL)) != -1;) {
        switch (c) {
        case 'm': dir = optarg; break;
        case 'p': preset = optarg; break;
        case 'a': arch = optarg; break;
        case 'h': fputs(kInfoHelp, stdout); return 0;
        default: return arg_bad_option("info", argv);
        }
    }
    if (!dir == !preset || (arch && !preset)) {
        fprintf(stderr, "sprinter info: need exactly one of --model, --preset (--arch only with --preset)\n");
        return 2;
    }
    if (preset) return info_preset(preset, arch);
    SpErr err = {{0}};
    Model *m = model_load(dir, &err);
    if (!m) {
        sp_err_prefix(&err, "%s", dir);
        return fail("info", &err);
    }
    print_config(model_config(m));
    printf("params %lld\nweight_bytes %lld\n", (long long)model_n_params(m), (long long)model_weight_bytes(m));
    model_free(m);
    return 0;
}

/* ------------------------------------------------------------------ export-gguf */

static const char kGgufHelp[] =
    "usage: sprinter export-gguf --model DIR|F.gguf --out FILE.gguf [--dtype f32|f16|bf16|q8_0] [--tokenizer DIR]\n"
    "  Writes the checkpoint as GGUF v3 for llama.cpp (GPT-2, Llama, Qwen2, Qwen3; GPT-Neo is refused: llama.cpp\n"
    "  has no such architecture): its tensor names and shapes, Llama's Q/K rows permuted to its RoPE layout,\n"
    "  rope scaling as llama.cpp reads it (llama3: a rope_freqs tensor; linear: rope.scaling.*),\n"
    "  GPT-2's Conv1D weights transposed, the byte-level BPE vocabulary and merges, the end-of-sequence ids\n"
    "  (eos / eot / eom) and the chat template (engine/model/gguf.h). --model F.gguf re-exports a GGUF file\n"
    "  alone in another dtype, as llama-quantize does (from f32: the tensors the directory's export gives).\n"
    "  --dtype      matrices in f32 (default), f16 or bf16 (round to nearest even), or q8_0 (ggml's Q8_0 blocks,\n"
    "               rounded as llama-quantize does; the position embedding stays f32, rows that are not\n"
    "               whole 32-value blocks f16, as llama-quantize leaves them); norms and biases stay f32\n"
    "  --tokenizer  the directory of vocab.json + merges.txt or tokenizer.json (default: the model's); ids\n"
    "               it lacks are written as unused [PADn] tokens (for random-init checkpoints)\n";

int cmd_export_gguf(int argc, char **argv) {
    const char *cmd = "export-gguf", *dir = NULL, *out = NULL, *tok = NULL;
    DType dt = DT_F32;
    static const struct option opts[] = {{"model", required_argument, 0, 'm'}, {"out", required_argument, 0, 'o'},
                                         {"dtype", required_argument, 0, 'd'}, {"tokenizer", required_argument, 0, 't'},
                                         {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    optind = 1;
    for (int c; (c = getopt_long(argc, argv, "", opts, NULL)) != -1;) {
        switch (c) {
        case 'm': dir = optarg; break;
        case 'o': out = optarg; break;
        case 't': tok = optarg; break;
        case 'd':
            if (!strcmp(optarg, "f32")) dt = DT_F32;
            else if (!strcmp(optarg, "f16")) dt = DT_F16;
            else if (!strcmp(optarg, "bf16")) dt = DT_BF16;
            else if (!strcmp(optarg, "q8_0")) dt = DT_Q8_0;
            else {
                fprintf(stderr, "sprinter export-gguf: --dtype: \"%s\" is not f32, f16, bf16 or q8_0\n", optarg);
                return 2;
            }
            break;
        case 'h': fputs(kGgufHelp, stdout); return 0;
        default: return arg_bad_option(cmd, argv);
        }
    }
    if (!dir || !out) {
        fprintf(stderr, "sprinter export-gguf: need --model and --out\n");
        return 2;
    }
    SpErr err = {{0}};
    GgufSummary s;
    ChatTemplate chat; /* the template the engine renders for this tokenizer (prompt_format_init) */
    if (chat_template_load(tok ? tok : dir, &chat, &err)) return fail(cmd, &err);
    int rc = gguf_export(dir, tok, chat.tmpl, out, dt, &s, &err);
    chat_template_free(&chat);
    if (rc) return fail(cmd, &err);
    printf("wrote %s: %d tensors, %d tokens, %d merges, %lld bytes\n", out, s.n_tensors, s.n_tokens, s.n_merges,
           (long long)s.bytes);
    return 0;
}

/* ------------------------------------------------------------------ perplexity */

static const char kPerplexityHelp[] =
    "usage: sprinter perplexity --model DIR --data FILE [--ctx N] [--max-tokens M]\n"
    "  FILE holds one document per non-empty line. Each line is encoded on its own and followed by\n"
    "  the EOS token; the stream is cut into consecutive windows of N tokens (default n_positions);\n"
    "  within each window every token after the first is predicted from the ones before it.\n"
    "  Prints {\"tokens\": predicted, \"nll\": total, \"ppl\": exp(nll / tokens)}.\n";

/* -log softmax(logits)[target], in double. */
static double nll_of(const float *logits, int V, int32_t target) {
    float mx = logits[0];
    for (int i = 1; i < V; i++) mx = logits[i] > mx ? logits[i] : mx;
    double z = 0;
    for (int i = 0; i < V; i++) z += exp((double)logits[i] - mx);
    return log(z) + mx - (double)logits[target];
}

/* Encodes every non-empty line of path followed by eos into *stream (malloc'd). */
static int encode_lines(const Tokenizer *t, const char *path, int32_t eos, size_t max_tokens, int32_t **stream,
                        size_t *n_out, SpErr *err) {
    size_t len = 0;
    char *text = sp_read_file(path, (size_t)1 << 31, &len, err);
    if (!text) return -1;
    size_t cap = 1 << 16, n = 0;
    int32_t *s = malloc(cap * sizeof *s);
    int rc = s ? 0 : sp_fail(err, "out of memory");
    for (char *line = text; rc == 0 && line < text + len && n < max_tokens;) {
        char *nl = memchr(line, '\n', (size_t)(text + len - line));
        size_t ll = nl ? (size_t)(nl - line) : (size_t)(text + len - line);
        if (ll > 0) {
            int32_t *ids;
            size_t k;
            if (tokenizer_encode(t, line, ll, 0, &ids, &k, err)) {
                rc = sp_err_prefix(err, "%s", path);
                break;
            }
            if (n + k + 1 > cap) {
                while (n + k + 1 > cap) cap *= 2;
                int32_t *ns = realloc(s, cap * sizeof *s);
                if (!ns) {
                    free(ids);
                    rc = sp_fail(err, "out of memory");
                    break;
                }
                s = ns;
            }
            memcpy(s + n, ids, k * sizeof *ids);
            n += k;
            s[n++] = eos;
            free(ids);
        }
        line += ll + 1;
    }
    free(text);
    if (rc) {
        free(s);
        return -1;
    }
    if (n > max_tokens) n = max_tokens;
    if (n < 2) {
        free(s);
        return sp_fail(err, "%s: no text to score (fewer than 2 tokens)", path);
    }
    *stream = s;
    *n_out = n;
    return 0;
}

int cmd_perplexity(int argc, char **argv) {
    const char *cmd = "perplexity", *dir = NULL, *data = NULL;
    long ctx = 0, max_tokens = 0;
    static const struct option opts[] = {{"model", required_argument, 0, 'm'}, {"data", required_argument, 0, 'd'},
                                         {"ctx", required_argument, 0, 'c'},   {"max-tokens", required_argument, 0, 'n'},
                                         {"help", no_argument, 0, 'h'},        {0, 0, 0, 0}};
    optind = 1;
    for (int c; (c = getopt_long(argc, argv, "", opts, NULL)) != -1;) {
        switch (c) {
        case 'm': dir = optarg; break;
        case 'd': data = optarg; break;
        case 'c': if (arg_long(cmd, "ctx", optarg, 2, 1 << 20, &ctx)) return 2; break;
        case 'n': if (arg_long(cmd, "max-tokens", optarg, 2, 1L << 40, &max_tokens)) return 2; break;
        case 'h': fputs(kPerplexityHelp, stdout); return 0;
        default: return arg_bad_option(cmd, argv);
        }
    }
    if (!dir || !data) {
        fprintf(stderr, "sprinter perplexity: need --model and --data\n");
        return 2;
    }
    SpErr err = {{0}};
    int rc = 1;
    RunModels rm = {0};
    Session *s = NULL;
    int32_t *stream = NULL;
    size_t n = 0;
    RunSetup rs = {NULL, dir, 1, NULL}; /* the model's tokenizer */
    if (run_models_open(&rm, &rs, &err)) goto done;
    const Model *m = rm.target;
    Tokenizer *t = rm.tokenizer;
    const ModelConfig *c = model_config(m);
    int32_t eos = c->eos_id >= 0 ? c->eos_id : tokenizer_eos_id(t);
    if (eos < 0) {
        sp_fail(&err, "%s%s: no eos_token_id to separate documents", dir,
                sp_is_gguf_file(dir) ? ": metadata key tokenizer.ggml.eos_token_id" : "/config.json");
        goto done;
    }
    if (ctx == 0) ctx = c->max_pos;
    if (ctx > c->max_pos) {
        sp_fail(&err, "--ctx %ld exceeds the model's %d positions", ctx, c->max_pos);
        goto done;
    }
    if (encode_lines(t, data, eos, max_tokens ? (size_t)max_tokens : SIZE_MAX, &stream, &n, &err)) goto done;
    if (!(s = session_new(m, (int)ctx, (int)ctx, &err))) goto done;
    double nll = 0;
    size_t predicted = 0;
    for (size_t w = 0; w < n; w += (size_t)ctx) {
        int len = (int)(n - w < (size_t)ctx ? n - w : (size_t)ctx);
        if (len < 2) break;
        const float *L;
        if (session_truncate(s, 0, &err) || session_forward(s, stream + w, len, &L, NULL, &err)) goto done;
        for (int i = 0; i + 1 < len; i++) nll += nll_of(L + (size_t)i * c->vocab_size, c->vocab_size, stream[w + i + 1]);
        predicted += (size_t)(len - 1);
    }
    printf("{\"tokens\": %zu, \"nll\": %.6f, \"ppl\": %.6f}\n", predicted, nll, exp(nll / (double)predicted));
    rc = 0;
done:
    if (rc) fail(cmd, &err);
    free(stream);
    session_free(s);
    run_models_close(&rm);
    return rc;
}
