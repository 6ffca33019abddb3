/* verifier.h - SPRINTER's approximate verifier: one linear layer + sigmoid on a draft model's
 * last-layer hidden state (d + 1 parameters):
 *     score(h) = sigmoid(w . h + b) ~ P(token acceptable | h),   acceptable := q(x) / p(x) <= lambda.
 * The decoder accepts the token without calling the target when score >= tau. Which hidden state
 * is its feature: VF_TOKEN, the draft's state at the drafted token (after it: it has seen x; this
 * harness's default), or VF_PREFIX, the state at the last prefix position (before x: the state whose
 * logits gave q, so the decision is the same for every candidate x; the SPRINTER authors' code).
 *
 * On disk: a safetensors file with tensors "weight" F32 [d] and "bias" F32 [1], and __metadata__
 * {"format": "sprinter-verifier", "version": "1", "lambda": "...", "feature": "token" | "prefix"
 * (absent: token), "source": "draft" | "target" (absent: draft; see VerifierSource), plus free-form keys such as metrics and the training data hash}. A Verifier owns
 * its arrays. */
#ifndef SP_VERIFIER_H
#define SP_VERIFIER_H

#include <stddef.h>

#include "error.h"

typedef enum { VF_TOKEN = 0, VF_PREFIX = 1 } VerifierFeature;
/* Whose hidden state a head scores: the draft's (SPRINTER's verifier, specdecpp's stopping head) or
 * the target's (Judge Decoding's judge: the target's state at the drafted token, after reading it).
 * On disk __metadata__ "source": "draft" | "target" (absent: draft). */
typedef enum { VS_DRAFT = 0, VS_TARGET = 1 } VerifierSource;
const char *verifier_source_name(VerifierSource s);
int verifier_source_parse(const char *s, VerifierSource *out);

/* "token" / "prefix"; and back (0, or -1 for another name). */
const char *verifier_feature_name(VerifierFeature f);
int verifier_feature_parse(const char *s, VerifierFeature *f);

typedef struct Verifier {
    int d;
    float *w;   /* [d] */
    float b;
    double lambda;           /* the acceptance threshold its labels were made with */
    VerifierFeature feature; /* which hidden state it scores */
    VerifierSource source;   /* whose hidden state (draft: d = the draft's d_model; target: the judge) */
} Verifier;

/* score = sigmoid(w . h + b) for h[d]. */
double verifier_score(const Verifier *v, const float *h);

int verifier_load(const char *path, Verifier *v, SpErr *err);
/* meta: NULL-terminated key/value pairs added to __metadata__ (may be NULL). Atomic write. */
int verifier_save(const char *path, const Verifier *v, const char *const *meta, SpErr *err);
void verifier_free(Verifier *v);
/* Reads the string __metadata__[key] of a verifier file into buf (cap bytes). */
int verifier_read_meta(const char *path, const char *key, char *buf, size_t cap, SpErr *err);

#endif
