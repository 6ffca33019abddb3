/* rules.h - the decision rules and defaults every part of the harness shares, each defined once.
 * Header-only (no code to link), so the analysis may include it without linking model code.
 *
 *   verifier decision   accept a drafted token without the target iff score >= tau, with the score
 *                       rounded to float first (the decoder stores it as a float in every
 *                       TokenEvent, and the token log holds that float), so training metrics, the
 *                       exact d_TV law and the decoder agree at the boundary
 *   acceptable label    q(x) / p(x) <= lambda, written q <= lambda * p so that p = 0 is unacceptable
 *                       and no division happens; in double, from the float probabilities
 */
#ifndef SP_RULES_H
#define SP_RULES_H

#include <string.h>

/* tau: the verifier threshold (SPRINTER's deployed 0.5). */
#define SP_DEFAULT_TAU 0.5
/* lambda: the label threshold q/p <= lambda (1 = the target would accept the token with certainty). */
#define SP_DEFAULT_LAMBDA 1.0
/* The paper's deployed operating point (Section 5: lambda = 1.2, tau = 0.5), the analysis default. */
#define SP_PAPER_LAMBDA 1.2
#define SP_PAPER_TAU 0.5
/* The paper's Table 2 "avg tokens" (E[N] in the public review's reading) at the deployed point, and the
 * review's bound on eta_FP derived from it for the paper's pairs (the analysis' FINDINGS.md). */
#define SP_PAPER_AVG_TOKENS 11.10
#define SP_REVIEW_ETA_FP_BOUND 0.86
/* The model.safetensors __metadata__ key in which `sprinter init-random` records its seed: the mark of a
 * random-init checkpoint, whose acceptance measures the harness and not a model pair (the analysis
 * reads it: records/modelorigin.h, "no verdict: random-init models"). */
#define SP_INIT_SEED_KEY "sprinter_init_seed"
/* gamma: draft tokens per target call, default and the largest the decoder allocates for. */
#define SP_DEFAULT_GAMMA 5
#define SP_GAMMA_MAX 64

/* A default as text, for help messages: "(default " SP_STR(SP_DEFAULT_TAU) ")". */
#define SP_STR_(x) #x
#define SP_STR(x) SP_STR_(x)

/* 1 if the verifier accepts a drafted token with this score at threshold tau. */
static inline int verifier_accepts(double score, double tau) { return (double)(float)score >= tau; }

/* The harness's two protocols. Three settings follow one of them, each under the same two names:
 * the label rule (DecodeConfig.label_rule), a spec's [decode] protocol (experiments/spec.h, the
 * defaults it starts from) and the verifier's training recipe (experiments/verifier_train.h).
 *   PROTOCOL_SOUND       "sound": labels compare the decoding distributions (temperature, top-k,
 *                        top-p applied), so a label is about the tokens this decoder draws
 *   PROTOCOL_PAPER_CODE  "paper-code": as the SPRINTER authors' public code does; labels compare the
 *                        plain softmax of the raw logits (temperature 1, nothing cut), whatever the
 *                        decoding temperature (their dataset.py, with greedy decoding, for the draft's
 *                        greedy token); in collection the context then goes on with the draft token
 *                        when its label is 1, else with the target's greedy token */
typedef enum { PROTOCOL_SOUND = 0, PROTOCOL_PAPER_CODE } Protocol;
static inline const char *protocol_name(Protocol p) { return p == PROTOCOL_PAPER_CODE ? "paper-code" : "sound"; }
/* 0 and *p set when s is "sound" or "paper-code", else -1. */
static inline int protocol_parse(const char *s, Protocol *p) {
    if (!strcmp(s, "sound")) *p = PROTOCOL_SOUND;
    else if (!strcmp(s, "paper-code")) *p = PROTOCOL_PAPER_CODE;
    else return -1;
    return 0;
}

/* 1 if a drafted token with draft probability q and target probability p is acceptable at lambda. */
static inline int label_acceptable(float q, float p, double lambda) { return (double)q <= lambda * (double)p; }

/* The judge's label (method judge, judge heads' training data): drafted x is acceptable iff
 * p(x) >= rho * max_v p(v), p the target's decoding distribution; in double from the floats. */
static inline int judge_label_acceptable(float px, float p_max, double rho) { return (double)px >= rho * (double)p_max; }

#endif
