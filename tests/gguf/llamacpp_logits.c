/* llamacpp_logits.c - the logits llama.cpp (built natively by scripts/llamacpp-native.sh, linked
 * statically) computes for a token-id sequence: the forward oracle of tests/test_llamacpp_native.py.
 *
 *   llamacpp_logits MODEL.gguf IDS OUT.f32 [step]
 *
 * IDS: comma-separated token ids, decoded at positions 0..n-1 as one sequence, no BOS added. OUT
 * receives the logits of every position, [n, V] little-endian float32, row i after ids[0..i]. With
 * "step" the ids go one llama_decode call each (llama.cpp's KV cache), else one batch. The KV cache is
 * F32 and flash attention off, so that llama.cpp's arithmetic stays float32 throughout. Prints
 * "n_vocab V" on stdout; errors go to stderr with exit 1. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llama.h"

static void quiet(enum ggml_log_level level, const char *text, void *user) {
    (void)user;
    if (level == GGML_LOG_LEVEL_ERROR) fputs(text, stderr);
}

static int parse_ids(const char *s, llama_token **out) {
    int n = 1;
    for (const char *p = s; *p; p++) n += *p == ',';
    llama_token *ids = malloc((size_t)n * sizeof *ids);
    if (!ids) return -1;
    char *end;
    for (int i = 0; i < n; i++) {
        long v = strtol(s, &end, 10);
        if (end == s || (*end != ',' && *end != '\0') || v < 0) {
            free(ids);
            return -1;
        }
        ids[i] = (llama_token)v;
        s = end + (*end == ',');
    }
    *out = ids;
    return n;
}

int main(int argc, char **argv) {
    if (argc < 4 || argc > 5 || (argc == 5 && strcmp(argv[4], "step"))) {
        fprintf(stderr, "usage: llamacpp_logits MODEL.gguf IDS OUT.f32 [step]\n");
        return 2;
    }
    int step = argc == 5;
    llama_token *ids = NULL;
    int n = parse_ids(argv[2], &ids);
    if (n < 1) {
        fprintf(stderr, "llamacpp_logits: IDS: not a comma-separated list of token ids\n");
        return 2;
    }
    llama_log_set(quiet, NULL);
    llama_backend_init();
    struct llama_model_params mp = llama_model_default_params();
    mp.n_gpu_layers = 0;
    struct llama_model *model = llama_model_load_from_file(argv[1], mp);
    if (!model) {
        fprintf(stderr, "llamacpp_logits: %s: llama.cpp could not load it\n", argv[1]);
        return 1;
    }
    const struct llama_vocab *vocab = llama_model_get_vocab(model);
    int V = llama_vocab_n_tokens(vocab);
    struct llama_context_params cp = llama_context_default_params();
    cp.n_ctx = (uint32_t)(n < 64 ? 64 : n);
    cp.n_batch = cp.n_ubatch = (uint32_t)(n < 64 ? 64 : n);
    cp.n_seq_max = 1;
    cp.n_threads = cp.n_threads_batch = 1;
    cp.type_k = cp.type_v = GGML_TYPE_F32;
    cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
    cp.no_perf = 1;
    struct llama_context *ctx = llama_init_from_model(model, cp);
    if (!ctx) {
        fprintf(stderr, "llamacpp_logits: could not make a context of %d positions\n", n);
        return 1;
    }
    float *out = malloc((size_t)n * (size_t)V * sizeof *out);
    struct llama_batch batch = llama_batch_init(n, 0, 1);
    int rc = out ? 0 : 1;
    for (int at = 0; rc == 0 && at < n;) {
        int k = step ? 1 : n; /* tokens in this call */
        batch.n_tokens = k;
        for (int i = 0; i < k; i++) {
            batch.token[i] = ids[at + i];
            batch.pos[i] = at + i;
            batch.n_seq_id[i] = 1;
            batch.seq_id[i][0] = 0;
            batch.logits[i] = 1;
        }
        if (llama_decode(ctx, batch) != 0) {
            fprintf(stderr, "llamacpp_logits: llama_decode failed at position %d\n", at);
            rc = 1;
            break;
        }
        for (int i = 0; i < k; i++) {
            const float *row = llama_get_logits_ith(ctx, i);
            if (!row) {
                fprintf(stderr, "llamacpp_logits: no logits for position %d\n", at + i);
                rc = 1;
                break;
            }
            memcpy(out + (size_t)(at + i) * V, row, (size_t)V * sizeof *out);
        }
        at += k;
    }
    if (rc == 0) {
        FILE *f = fopen(argv[3], "wb");
        if (!f || fwrite(out, sizeof *out, (size_t)n * V, f) != (size_t)n * V || fclose(f) != 0) {
            fprintf(stderr, "llamacpp_logits: %s: write failed\n", argv[3]);
            rc = 1;
        } else {
            printf("n_vocab %d\n", V);
        }
    }
    llama_batch_free(batch);
    free(out);
    free(ids);
    llama_free(ctx);
    llama_model_free(model);
    llama_backend_free();
    return rc;
}
