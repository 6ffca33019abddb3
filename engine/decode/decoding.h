/* decoding.h - one interface for every decoding method the harness compares.
 *
 *   ar          target only, one token per forward (the baseline)
 *   draft       draft only (the control: what SPRINTER degrades towards as eta_FP -> 1)
 *   sd          speculative sampling (Leviathan et al. / Chen et al.): gamma draft tokens, one
 *               batched target pass, accept x with prob min(1, p(x)/q(x)), on rejection resample
 *               from norm(max(p - q, 0)), bonus token from p when all gamma are accepted.
 *               Temperature 0 makes p and q one-hot, which is the exact-match rule.
 *   sprinter    SPRINTER (Algorithm 2): the draft proposes one token at a time; the verifier scores
 *               the draft's last hidden state of that token; score >= tau accepts it without the
 *               target (at most max_run in a row when max_run > 0); otherwise the target runs once
 *               over all tokens since its last call and the SD accept/resample step decides.
 *   bild        BiLD-style fallback: if the draft's top probability < alpha, the target samples the
 *               token instead (lossy, no rollback).
 *   pmin        llama.cpp's rule: stop drafting when the draft's top probability < p_min, then
 *               lossless SD verification of what was drafted (0 drafted = one target token).
 *   specdecpp   SpecDec++-style: the learned verifier head stops drafting (score < tau ends the
 *               block after that token), then lossless SD verification.
 *   oracle-iid  SPRINTER with a synthetic verifier that knows the true label (q(x)/p(x) <= lambda,
 *               from the target) and accepts with prob eta_TP if acceptable, eta_FP if not, i.i.d.:
 *               the model Theorems 3.1-3.4 assume. Its peeks at p are audit cost, not target calls.
 *   oracle-markov  the same oracle, but each label class's decisions form a Markov chain: with
 *               prob oracle_stay the decision repeats the previous decision made on a token of
 *               the same class, else it is a fresh Bernoulli(eta). The marginal rates stay
 *               eta_TP / eta_FP; the errors are correlated (lag-1 autocorrelation ~ oracle_stay
 *               within a class), violating the theorems' i.i.d. assumption.
 *   typical     sd's block, Medusa's typical acceptance at each draft: accept x iff p(x) > min(typical_eps,
 *               typical_alpha exp(-H(p))); the first rejected one is replaced by a draw from p (lossy).
 *   fsd         sd's block, fuzzy SD: a draft whose position has D(p, q) <= fsd_threshold (KL, JS or TV
 *               by fsd_divergence) is accepted outright, else SD's test and residual (lossy).
 *   optimal-lossy  sd's block, mentored decoding: SD's test and residual against r, the law closest to
 *               q in acceptance with KL(r || p) <= lossy_kl (lossy; lossy_kl = 0 is sd).
 *   judge       Judge Decoding (Bachmann et al., ICLR 2025), lossy: sd's blocks, but a drafted token
 *               x_i is kept if the SD test accepts it OR the judge head accepts it: score =
 *               sigmoid(w . h + b) >= tau_judge, h the TARGET's final-norm hidden state at x_i's
 *               position (the row of the verification pass that has read x_i: the one whose logits
 *               give p for the next token); kept up to the first token both reject, which the SD
 *               residual draw replaces; a bonus token from p when all are kept. The SD test's
 *               uniform is drawn first for every checked token, so with tau_judge > 1 (never) the
 *               run is sd's token for token under the same seed. Events: SD-accepted
 *               EV_SD_ACCEPT; kept by the judge alone EV_VERIFIER_ACCEPT (target_called 1); score and
 *               decision of the judge on every checked token; label = the judge label
 *               p(x) >= judge_rho * max p.
 *
 * Every emitted token gets a TokenEvent; per-run counters go to DecodeStats. The decoder owns
 * sessions for the draft, the target and an audit copy of the target (used to learn p(x) for
 * every verifier decision when cfg.audit is set; never counted as a target call or in latency).
 */
#ifndef SP_DECODING_H
#define SP_DECODING_H

#include <gsl/gsl_rng.h>
#include <stdint.h>

#include "error.h"
#include "events.h"
#include "methods.h"
#include "model.h"
#include "params_table.h"
#include "rules.h"
#include "sampling.h"
#include "verifier.h"


typedef struct DecodeConfig {
    DecodeMethod method;
    SamplerParams sampling; /* applied to both p and q */
    int max_new;            /* tokens to generate */
    /* The grid parameters (gamma, tau, lambda, max_run, alpha, p_min, eta_fp, eta_tp, oracle_stay, bonus,
     * finish_round, ...): one field per row of params_table.h, named and typed there, where each is
     * documented. */
#define RP_DC_FIELD_(ID, name, type, ...) type name;
    RUN_PARAMS(RP_DC_FIELD_)
#undef RP_DC_FIELD_
    Protocol label_rule;   /* sprinter-type methods and collect: which q and p the label compares (rules.h);
                             * sd-type methods always label with the decoding distributions */
    int stop_at_eos;        /* stop after emitting the target's eos id */
    int audit;              /* learn p(x) and the true label for every verifier decision */
    int capture_hidden;     /* store the draft hidden state of every drafted token (collect) */
    int capture_target_hidden; /* with capture_hidden, under judge: store the TARGET's state at every
                                * drafted token the target checked instead (judge collection;
                                * DecodeOutput.hidden is then [n_events, d_target]) */
    int fault_broken_residual; /* tests only: resample from p instead of norm(max(p - q, 0)) */
    int fault_nan_logits;      /* tests only: the first forward's logits read as NaN at index 0, as with a
                                * NaN weight (decoder_run then fails with DECODE_ERR_NONFINITE) */
} DecodeConfig;

/* Fills defaults: greedy off (T = 1), gamma 5, tau 0.5, lambda 1, max_run 0, ... */
void decode_config_default(DecodeConfig *c);
int decode_config_check(const DecodeConfig *c, SpErr *err);
/* The most tokens a run of c emits: max_new, plus max_run + 1 under finish_round. */
int decode_max_tokens(const DecodeConfig *c);

/* The context rule, the one place it is written (decoder_new's max_ctx, decoder_run's check, every
 * command's prompt truncation): a decode of a prompt of n_prompt tokens that emits at most max_out
 * tokens in blocks of at most gamma drafts needs n_prompt + max_out + gamma + 1 positions (a block's
 * drafts and its bonus token may lie beyond the last emitted one); with gamma 0 (a method that does
 * not draft: ar) n_prompt + max_out. */
int decode_context_need(int n_prompt, int max_out, int gamma);
/* The positions a run of c needs: decode_context_need with c->gamma when c's method drafts, else 0. */
int decode_context_of(const DecodeConfig *c, int n_prompt);
/* The rule read backwards: the most prompt tokens a context of `context` positions leaves room for,
 * context - max_out - gamma - 1 (gamma 0: context - max_out; below 1: none; the caller refuses). Longer prompts keep their last
 * that many tokens (the part that conditions the continuation). */
int decode_prompt_room(int context, int max_out, int gamma);
/* decode_prompt_room for a run of c (gamma as in decode_context_of). */
int decode_prompt_room_of(const DecodeConfig *c, int context);


typedef struct DecodeStats {
    int64_t tokens;           /* emitted */
    int64_t draft_forwards, draft_tokens;   /* calls, positions processed */
    int64_t target_forwards, target_tokens;
    int64_t audit_forwards, audit_tokens;
    int64_t verifier_evals;
    int64_t drafted;          /* draft tokens proposed */
    int64_t accepted;         /* draft tokens emitted (by verifier or SD rule) */
    int64_t rounds;           /* target calls that decided drafted tokens (sd-type blocks, sprinter-type
                               * rounds) */
    int64_t round_kept;       /* drafts emitted in those rounds (verifier- and SD-accepted; not the
                               * resampled or bonus token): round_kept / rounds is the authors' "avg
                               * tokens" of one prompt */
    int64_t rejected;         /* draft tokens the target checked and rejected (SD resample events); with
                               * the SD-accepted ones (accepted - verifier accepts) they are the checked
                               * tokens: per-token acceptance alpha = SD-accepted / (SD-accepted + rejected) */
    double t_total;           /* wall seconds, excluding audit */
    double t_draft, t_target, t_verifier, t_audit;
    /* FLOPs at 2 * params per processed position (+ 2d per verifier evaluation). */
    double flops_draft, flops_target, flops_verifier;
} DecodeStats;

typedef struct DecodeOutput {
    int32_t *tokens;    /* [n_tokens] emitted tokens (the prompt excluded) */
    int n_tokens;
    TokenEvent *events; /* [n_events]: one per emitted token */
    int n_events;
    float *hidden;      /* [n_events, d_draft] when capture_hidden (rows of tokens with no draft: 0): the
                         * draft's state at the drafted token (the verifier's token feature) */
    float *hidden_prefix; /* [n_events, d_draft] likewise: the draft's state at the position before it,
                           * whose logits gave q (the prefix feature; sprinter-type methods only, else 0) */
    int d_hidden;
    DecodeStats stats;
} DecodeOutput;

void decode_output_free(DecodeOutput *o);

typedef struct Decoder Decoder;

/* draft may be NULL for ar; target may be NULL for draft; verifier may be NULL unless a method
 * needs it (sprinter, specdecpp). max_ctx bounds the runs' decode_context_of. Models must share a
 * vocabulary size (checked). The audit copy of the target gets its cache on first use. */
Decoder *decoder_new(const Model *draft, const Model *target, const Verifier *verifier, int max_ctx, SpErr *err);
void decoder_free(Decoder *decoder);
/* Sets the judge head of method judge (NULL: none): a verifier of source target whose d is the
 * target's d_model (checked; the decoder must have a target). The decoder reads it through the
 * pointer, which must outlive the runs. */
int decoder_set_judge(Decoder *decoder, const Verifier *judge, SpErr *err);
/* Gives the decoder a memo of first forward calls (prefill_memo.h; NULL: none): each lane's first call
 * of a decode is loaded from it when it holds the call, and kept in it otherwise. Tokens, events and
 * counts are those of a decode without it; its timings are not latencies. The memo must outlive the
 * runs; a memo serves one decoder_run or decoder_run_batch at a time. */
struct PrefillMemo;
void decoder_set_prefill_memo(Decoder *decoder, struct PrefillMemo *memo);

/* decoder_run's return value when a model's logits were not finite (NaN or +-Inf: a NaN/Inf weight,
 * an overflow). It is a property of the models and the input, not of the machine: running the same
 * configuration again fails the same way. err names the model, the position and the index:
 * "draft model: logits at position 5 contain NaN at index 0". Every other failure returns -1. */
#define DECODE_ERR_NONFINITE (-2)

/* Runs cfg on prompt[0..n_prompt); all randomness from rng. out is filled (caller frees).
 * Returns 0, DECODE_ERR_NONFINITE (see above) or -1 (any other error); on error out holds nothing. */
int decoder_run(Decoder *decoder, const DecodeConfig *cfg, const int32_t *prompt, int n_prompt, gsl_rng *rng,
                DecodeOutput *out, SpErr *err);

/* One prompt's decode of a batch: decoder_run's arguments and its results. */
typedef struct DecodeJob {
    Decoder *decoder; /* its own: sessions, KV caches, buffers; every job's draft (target) the same Model */
    const DecodeConfig *cfg;
    const int32_t *prompt;
    int n_prompt;
    gsl_rng *rng;     /* its own stream */
    DecodeOutput out; /* out: as decoder_run's (caller frees) */
    int rc;           /* out: decoder_run's return value */
    SpErr err;        /* out: its error */
} DecodeJob;

/* Runs jobs[0..n) together (batch.c): each job is decoder_run(decoder, cfg, prompt, n_prompt, rng)
 * and gets exactly its tokens, events and statistics (all but the timings, which include the wait
 * for the others), while each round of their forward passes runs as one forward_batch per model.
 * Each job's rc / err / out are its own; returns -1 (err) only if the batch could not be started
 * (out of memory: then no job ran). One call per thread at a time. */
int decoder_run_batch(DecodeJob *jobs, int n, SpErr *err);

/* Decisions given in advance, in drafting order (1 accept, 0 reject); past n: reject. */
typedef struct DecisionScript {
    const int8_t *decisions;
    int n;
} DecisionScript;

/* Tests: decoder_run with the decisions of a sequential method (sprinter, oracle-iid,
 * oracle-markov, collect) taken from script instead of its verifier or oracle, so that a round's
 * structure can be checked against a loop written by hand. */
int decoder_run_scripted(Decoder *decoder, const DecodeConfig *cfg, const DecisionScript *script,
                         const int32_t *prompt, int n_prompt, gsl_rng *rng, DecodeOutput *out, SpErr *err);

/* The exact next-token law of the sprinter method at one prefix, for the theorem checks:
 * given p, q [V] and the verifier's decision a[v] in {0,1} for every vocab token v,
 *   P(v) = q(v) a(v) + q(v)(1 - a(v)) min(1, p(v)/q(v)) + R r(v),
 *   R = sum_x q(x)(1 - a(x))(1 - min(1, p(x)/q(x))),  r = norm(max(p - q, 0)).
 * a may hold fractional acceptance probabilities (oracle-iid). out[V]. */
void sprinter_next_token_law(const float *p, const float *q, const double *a, int V, double *out);

/* ---- the lossy block methods (typical, fsd, optimal-lossy): rules and exact laws (lossy_law.c) ----
 * Each law is that of the first token the method emits at a prefix where the target's law is p and
 * the draft's q ([V] each, as the decoder has them). Where a rule falls back to SD's step, the law is
 * sd_next_token_law's (p itself, up to the rows' float rounding). */

/* SD's step with law p against q: min(q, p) + R norm(max(p - q, 0)), R = sum q - sum min(q, p) (from
 * p itself when p == q, as draw_residual does). */
void sd_next_token_law(const float *p, const float *q, int V, double *out);

/* typical: entropy H(p) in nats; the threshold min(eps, alpha exp(-H(p))); accept iff p(x) > it. */
double entropy_nats(const float *p, int V);
double typical_threshold(const float *p, int V, double eps, double alpha);
int typical_accepts(float px, double threshold);
/* P(v) = q(v) a(v) + R p(v), a(v) = [p(v) > threshold], R = sum_x q(x)(1 - a(x)): a rejected draft is
 * replaced by a draw from p. */
void typical_next_token_law(const float *p, const float *q, int V, double eps, double alpha, double *out);

/* fsd: the divergence of cfg->fsd_divergence between p and q: FSD_KL KL(p || q) (+inf where q = 0 <
 * p), FSD_JS the Jensen-Shannon divergence (natural log), FSD_TV total variation. */
typedef enum { FSD_KL = 0, FSD_JS = 1, FSD_TV = 2 } FsdDivergence;
double fsd_divergence_value(const float *p, const float *q, int V, int kind);
/* 1 when D(p, q) <= threshold: the drafted token is accepted without SD's test. */
int fsd_accepts_outright(const float *p, const float *q, int V, int kind, double threshold);
/* q when D(p, q) <= threshold, else sd_next_token_law(p, q). */
void fsd_next_token_law(const float *p, const float *q, int V, int kind, double threshold, double *out);

/* optimal-lossy (mentored decoding, lossy_law.c's header has the derivation): r = argmax sum_x
 * min(q(x), r(x)) subject to KL(r || p) <= D, for p and q normalised; r = p (normalised) at D = 0.
 * work: OPTIMAL_LOSSY_WORK(V) doubles of scratch; r [V]. */
#define OPTIMAL_LOSSY_WORK(V) (6 * (size_t)(V) + 2)
void optimal_lossy_law(const float *p, const float *q, int V, double D, double *work, double *r);
/* The row the decoder runs SD against: p itself at D = 0 (so that the run is sd's, draw for draw),
 * else optimal_lossy_law into r and its float copy rf [V], returned. */
const float *optimal_lossy_row(const float *p, const float *q, int V, double D, double *work, double *r, float *rf);
/* The first token's law: sd_next_token_law of optimal_lossy_row against q (= r up to float rounding). */
void optimal_lossy_next_token_law(const float *p, const float *q, int V, double D, double *work, double *out);
/* The exact next-token law of the judge method at one prefix: with j[v] in {0,1} the judge's
 * decision had v been drafted there (its score on the target's state after reading v),
 *   P(v) = q(v)[m(v) + (1 - m(v)) j(v)] + R r(v),  m = min(1, p/q),
 *   R = sum_x q(x)(1 - m(x))(1 - j(x)),  r = norm(max(p - q, 0)).
 * (The same algebra as sprinter_next_token_law with a = j: a token is kept if either test keeps it.) */
void judge_next_token_law(const float *p, const float *q, const double *j, int V, double *out);

/* The judge's decision j[v] (1/0) for every candidate v in [0, V) drafted after prefix[0..n): the
 * target's hidden states of all V candidates at position n, batched (session_candidates, chunks of
 * the session's batch), scored by judge at tau_judge. hidden_out, when not NULL, receives them [V, d]. */
int judge_candidate_decisions(const Model *target, const Verifier *judge, double tau_judge, const int32_t *prefix,
                              int n, double *j, float *hidden_out, SpErr *err);

#endif
