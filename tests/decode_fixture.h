/* decode_fixture.h - what the decoding tests share (test_decoding.c, test_judge.c): tiny random
 * models, a fixed prefix with its target and draft laws p and q, the histogram of the first token
 * over N_DRAWS (or n) decodes, and a chi-square p-value of such a histogram against an exact law.
 * Header-only (each test is one .c file that includes it once). Needs V_TINY (the models' vocabulary)
 * and N_DRAWS defined before it. */
#ifndef SP_TESTS_DECODE_FIXTURE_H
#define SP_TESTS_DECODE_FIXTURE_H

#include <cjson/cJSON.h>
#include <gsl/gsl_cdf.h>
#include <stdio.h>
#include <string.h>

#include "decoding.h"
#include "presets.h"

/* Chi-square p-value of counts[V] against law[V] (merging small-expectation bins). */
static double chisq_pvalue(const long *counts, const double *law, int V, long n) {
    double stat = 0, exp_acc = 0;
    long obs_acc = 0;
    int df = -1;
    for (int v = 0; v < V; v++) {
        exp_acc += law[v] * n;
        obs_acc += counts[v];
        if (exp_acc >= 5 || v == V - 1) {
            if (exp_acc > 0) {
                stat += (obs_acc - exp_acc) * (obs_acc - exp_acc) / exp_acc;
                df++;
            } else if (obs_acc > 0) {
                return 0.0; /* mass where the law has none */
            }
            exp_acc = 0;
            obs_acc = 0;
        }
    }
    if (df < 1) return 1.0;
    return gsl_cdf_chisq_Q(stat, df);
}

static int make_model(const char *arch, const char *dir, int d, int layers, double std, uint64_t seed) {
    SpErr err = {{0}};
    cJSON *cfg = preset_config(arch, "tiny", &err);
    if (!strcmp(arch, "gpt2")) {
        cJSON_ReplaceItemInObject(cfg, "n_embd", cJSON_CreateNumber(d));
        cJSON_ReplaceItemInObject(cfg, "n_layer", cJSON_CreateNumber(layers));
        cJSON_ReplaceItemInObject(cfg, "initializer_range", cJSON_CreateNumber(std));
    }
    int rc = init_random_model(cfg, "config", DT_F32, seed, dir, &err);
    if (rc) fprintf(stderr, "init: %s\n", err.msg);
    cJSON_Delete(cfg);
    return rc;
}

/* The two models, the decoder over them, a prefix and its laws p (target) and q (draft) at the
 * sampling settings sp; judge is the judge head of test_judge.c (unused elsewhere). */
typedef struct Fixture {
    Model *draft, *target;
    Decoder *dec;
    int32_t prefix[8];
    int n_prefix;
    float p[V_TINY], q[V_TINY];
    SamplerParams sp;
    Verifier judge;
} Fixture;

static void dists(Fixture *f) {
    SpErr err = {{0}};
    int32_t work[V_TINY];
    const float *L;
    Session *s = session_new(f->target, 16, 16, &err);
    session_forward(s, f->prefix, f->n_prefix, &L, NULL, &err);
    sampler_probs(&f->sp, L + (size_t)(f->n_prefix - 1) * V_TINY, V_TINY, f->p, work, &err);
    session_free(s);
    s = session_new(f->draft, 16, 16, &err);
    session_forward(s, f->prefix, f->n_prefix, &L, NULL, &err);
    sampler_probs(&f->sp, L + (size_t)(f->n_prefix - 1) * V_TINY, V_TINY, f->q, work, &err);
    session_free(s);
}

/* The first token of n decodes at the prefix, seeded with seed (first_token_hist: N_DRAWS of them). */
static int first_token_hist_n(Fixture *f, DecodeConfig *cfg, uint64_t seed, long n, long *counts) {
    memset(counts, 0, V_TINY * sizeof *counts);
    gsl_rng *rng = sampler_rng_new(seed);
    SpErr err = {{0}};
    cfg->max_new = 1;
    cfg->sampling = f->sp;
    for (long i = 0; i < n; i++) {
        DecodeOutput out;
        if (decoder_run(f->dec, cfg, f->prefix, f->n_prefix, rng, &out, &err)) {
            fprintf(stderr, "decode: %s\n", err.msg);
            gsl_rng_free(rng);
            return -1;
        }
        counts[out.tokens[0]]++;
        decode_output_free(&out);
    }
    gsl_rng_free(rng);
    return 0;
}

static int first_token_hist(Fixture *f, DecodeConfig *cfg, uint64_t seed, long *counts) {
    return first_token_hist_n(f, cfg, seed, N_DRAWS, counts);
}

#endif
