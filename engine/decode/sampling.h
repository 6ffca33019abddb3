/* sampling.h - turning logits into the probability vector actually sampled from, and drawing.
 *
 * Speculative decoding needs the full distributions p (target) and q (draft) after temperature,
 * top-k and top-p, not just a token, so sampler_probs() returns the whole vector.
 * Randomness comes only from a caller-owned gsl_rng, so a seed fixes every draw. No global state.
 */
#ifndef SP_SAMPLING_H
#define SP_SAMPLING_H

#include <gsl/gsl_rng.h>
#include <stdint.h>

#include "error.h"

typedef struct SamplerParams {
    float temperature; /* 0 = greedy (one-hot at the argmax, lowest id wins ties) */
    int top_k;         /* 0 = off; keep the k most probable tokens */
    float top_p;       /* 1 = off; keep the smallest set whose mass >= top_p */
} SamplerParams;

/* Checks ranges: temperature >= 0, top_k >= 0, 0 < top_p <= 1. */
int sampler_params_check(const SamplerParams *sp, SpErr *err);

/* logits[V] -> probs[V]: softmax(logits / T) restricted by top-k then top-p and renormalised;
 * tokens outside the kept set get exactly 0. work[V] is caller-owned scratch (int32 indices).
 * Returns 0, or -1 if logits hold NaN/Inf. */
int sampler_probs(const SamplerParams *sp, const float *logits, int V, float *probs, int32_t *work,
                  SpErr *err);

/* Draws one token from probs[V] (need not be exactly normalised) with one uniform from rng. */
int32_t sampler_draw(const float *probs, int V, gsl_rng *rng);

/* Index of the largest of x[V] (logits or probabilities), the lowest id on ties: greedy decoding's
 * token, and where a distribution's top probability sits. */
int32_t sampler_argmax(const float *x, int V);

/* The largest probability of the plain softmax of logits[V] (temperature 1, nothing cut): the
 * draft's confidence that pmin and bild test, whatever the decoding temperature (llama.cpp's p_min
 * reads the softmax probability of the top candidate whatever its sampler does; under greedy
 * decoding the decoding distribution is one-hot and its top probability always 1). The same float
 * as entry argmax of sampler_probs with {1, 0, 1}. */
float sampler_top_prob(const float *logits, int V);

/* A new RNG (gsl_rng_mt19937) seeded with seed; caller frees with gsl_rng_free. */
gsl_rng *sampler_rng_new(uint64_t seed);

#endif
