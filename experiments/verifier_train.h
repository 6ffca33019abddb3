/* verifier_train.h - SPRINTER's verifier: data collection, training, and a content-addressed cache.
 *
 * collect: for every draft-proposed token on the dataset's prompts, record the draft's hidden state
 * of that token, q(x), p(x) and the label q(x)/p(x) <= lambda. As in the paper, the context then
 * continues with the draft token if the SD rule accepts it, else with the target's replacement
 * (this is the `collect` decoding method: SD with gamma 1, the draft run on every proposal).
 * HDF5 layout (collect file, format "sprinter-collect" version 2):
 *   /hidden [N, d] f32 (the draft's state at the drafted token), /hidden_prefix [N, d] f32 (version 2:
 *   at the position before it, whose logits gave q), /q [N] f32, /p [N] f32, /label [N] i8, /token [N] i32, /pos [N] i32,
 *   /prompt_index [N] i32, /prefix_ids [N, W] i32 (version 3: the pos tokens before the drafted token,
 *   the prompt as fed then the context, -1 after; W = the longest); root attributes: format, version,
 *   lambda, draft, target, draft_sha256,
 *   target_sha256, data, data_sha256, n_prompts, max_new, temperature, top_k, top_p, seed, and
 *   feature_source ("draft" | "target"; see CollectSpec.source: a judge head's data) and judge_rho.
 *
 * train: logistic regression score = sigmoid(w.h + b) with L2 penalty (on w only) fitted by GSL's
 * multimin BFGS2 on a seeded train/validation split by prompt (no prompt in both), features
 * standardised for the optimiser and folded back into (w, b). Reports accuracy, AUC, eta_FP and
 * eta_TP at tau on the validation split, and saves the verifier with lambda, data hash and metrics.
 */
#ifndef SP_VERIFIER_TRAIN_H
#define SP_VERIFIER_TRAIN_H

#include <stdint.h>
#include <string.h>

#include "error.h"
#include "rules.h"
#include "sampling.h"
#include "verifier.h"

typedef struct CollectSpec {
    const char *draft_dir, *target_dir;
    const char *data_path;   /* dataset file (see data/loaders/dataset.h) */
    const char *data_format; /* NULL = infer */
    int n_prompts;           /* first n prompts (0 = all) */
    int max_new;             /* tokens generated per prompt */
    double lambda;
    SamplerParams sampling;
    uint64_t seed;
    Protocol label_rule;    /* sound, or the authors' (rules.h): labels and, there, how the context goes on */
    /* Whose hidden states are collected (zero: the draft's, as above). VS_TARGET collects a JUDGE head's
     * data (method judge): /hidden is the target's state at the drafted token (after reading it, the row
     * of the verification pass whose logits give the next p), /hidden_prefix zeros, /label the judge
     * label p(x) >= judge_rho * max_v p(v); the run is method judge with gamma 1 and tau_judge 2 (no
     * judge: plain SD, a bonus token after an accepted draft), label_rule sound only. Attributes
     * feature_source "target" and judge_rho (absent in draft files: feature_source draft). */
    VerifierSource source;
    double judge_rho;
    /* How the collection runs, not what it collects: prompts decoded this many at a time, their
     * forward passes batched (decoder_run_batch); every row is that of the prompt's decode alone, so
     * the file is the same for every batch (0 or 1: one at a time; at most COLLECT_MAX_BATCH). Not
     * part of the verifier cache's key. */
    int batch;
} CollectSpec;

#define COLLECT_MAX_BATCH 64

typedef struct CollectSummary {
    int64_t n_tokens, n_acceptable;
    int n_prompts;
} CollectSummary;

int collect_run(const CollectSpec *s, const char *out_h5, CollectSummary *sum, SpErr *err);

/* out[m, d]: the padded-batch feature (TrainSpec.padded_batches) of collect row rows[i] in a batch
 * whose longest prefix has lens[i] > pos tokens, computed the way the trainer does (one prefill
 * per prompt, a probe per (row, L)); for the tests. */
int collect_padded_features(const char *path, const int64_t *rows, const int32_t *lens, int64_t m, float *out,
                            SpErr *err);

/* How the verifier is fitted (a Protocol, engine/decode/rules.h):
 *   PROTOCOL_SOUND       L2-regularised logistic regression on standardised features, to convergence
 *                      (GSL BFGS2), split by prompt (no prompt on both sides)
 *   PROTOCOL_PAPER_CODE  the SPRINTER authors' train.py: Linear(d, 1) + sigmoid on the raw state, PyTorch's
 *                      default init (uniform +-1/sqrt(d)), Adam (lr 5e-4, betas 0.9/0.999, eps 1e-8), BCE
 *                      loss, 20 epochs of shuffled batches of 10, a token-level split (rows of one prompt
 *                      on both sides; theirs is unseeded, this one seeded), the epoch with the best test
 *                      accuracy at 0.5 kept (the test split chooses the checkpoint, so its figures are
 *                      optimistic). Their batches were right-padded, so most training rows' feature
 *                      was the state at a pad position: TrainSpec.padded_batches reproduces that. */

typedef struct TrainSpec {
    double l2;           /* penalty on ||w||^2 (on standardised features), default 1e-3 */
    double val_fraction; /* share of prompts held out, default 0.2 */
    double tau;          /* threshold for the reported eta_FP / eta_TP, default 0.5 */
    uint64_t seed;
    VerifierFeature feature; /* which hidden state: token (default, /hidden) or prefix (/hidden_prefix) */
    Protocol recipe;      /* sound (default) or the authors' (see above; l2 unused there) */
    /* PROTOCOL_PAPER_CODE with the prefix feature only: train (and pick the epoch) on the features the
     * authors' right-padded batches gave: in a batch whose longest prefix has L tokens, a shorter row's
     * feature is the draft's state at position L - 1 of its prefix padded with the draft's eos token,
     * which attends to the row's own tokens only (session_probe; tokenizer padding=True, index -1).
     * Needs a version-3 collect file (/prefix_ids) and the draft model named by its "draft" attribute
     * (its sha256 must match). The reported metrics stay on the inference-time features. */
    int padded_batches;
} TrainSpec;

typedef struct VerifierMetrics {
    int64_t d;                           /* hidden size: the verifier has d + 1 parameters */
    int64_t n_train, n_val;
    double pos_rate_train, pos_rate_val; /* share of acceptable tokens */
    double train_loss, val_loss;         /* mean log loss */
    double val_acc, val_auc, tau, eta_fp, eta_tp;
} VerifierMetrics;

void train_spec_default(TrainSpec *t);
int verifier_train(const char *collect_h5, const TrainSpec *t, const char *out_path, VerifierMetrics *m, SpErr *err);

/* Area under the ROC curve: P(score of a label-1 row > score of a label-0 row), ties 1/2;
 * NaN when either class is empty. O(n log n). */
double roc_auc(const double *score, const int8_t *label, int64_t n);

/* Writes into out_path (cap bytes) the path of a verifier for (c, t) under cache_dir, named by a
 * SHA-256 over the model directories' hashes, the dataset's hash and every parameter; collects
 * and trains only when that file is absent. m is filled from the verifier's metadata. */
int verifier_ensure(const CollectSpec *c, const TrainSpec *t, const char *cache_dir, char *out_path, size_t cap,
                    VerifierMetrics *m, SpErr *err);

#endif
