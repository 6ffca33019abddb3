/* theorycheck.h - Theorem 3.1 / 3.3 / 3.4 predictions against measurements for one verifier run
 * (sprinter, oracle-iid, oracle-markov), from its blocks (verseq.h).
 *
 * Measured (blocks cut short by an EOS are left out of the capped quantities):
 *   eta_FP, eta_TP  accepts / labelled decisions of each class (audit labels)
 *   TQ_MEAN_N   mean observed N = min(N, c_b) with the block's own cap
 *               c_b = min(max_run, max_new - tokens emitted before the block)
 *   TQ_MEAN_T   mean draft steps (verifier decisions) per block: Thm 3.4's stopping time
 *   TQ_P_N0     fraction of blocks whose first drafted token goes to the target
 *   TQ_KM       E[min(N, H)] of the uncapped law of N, from a Kaplan-Meier estimate of P(N >= k)
 *               that treats truncated and max_run-capped blocks as censored (horizon H: max_new - 1,
 *               or max_run when 0 < max_run < max_new)
 *   TQ_DTV      Thm 3.1: d_TV(p, p_SPRINTER) averaged over the prefixes the decoder visited,
 *               estimated without bias by the mean over decisions of decision * max(0, 1 - p/q)
 *               (E_{x~q}[a(x) (1 - p(x)/q(x))^+] = d_TV(p, p_SPRINTER) at a prefix) when the
 *               drafted token x is a sample from q; under greedy decoding (temperature 0) the logged
 *               p and q are one-hot and the report gives this row no verdict (report.c)
 *   TQ_FA       false accepts per block: accepted tokens with an unacceptable label (theory.h; the
 *               overshoot past r under the paper's labels), same blocks and caps as TQ_MEAN_N
 *   TQ_TOKENS   tokens emitted per block (per target call): TQ_MEAN_T plus 1 for a block followed
 *               by a bonus token; its prediction adds the measured bonus share (RunEst.bonus_rate),
 *               which no theorem predicts
 * Predicted from the measured eta_FP, eta_TP under two label models (theory.h):
 *   TC_IID    the i.i.d. verifier on labels from a two-state Markov chain estimated from the
 *             audited labels (the theorems' assumption about the verifier, not the paper's about
 *             the labels);
 *   TC_PAPER  the paper's closed form: the first r drafted tokens acceptable, all later ones not,
 *             r ~ its Kaplan-Meier distribution (censored where all labels seen are acceptable).
 * Caps are applied per block to the predictions as well, so truncation is accounted for. Thm 3.1's
 * prediction is eta_FP * mean (1 - p/q)^+ (the same estimator applied to d_TV(p, q)) under both.
 * A chi-square goodness-of-fit test compares the counts of min(N, c_b) with each model's expected
 * counts (cells pooled to >= 5 expected). Uncertainty: a bootstrap over prompts (a prompt's blocks
 * stay together) that recomputes the whole estimate, predictions included; se_diff is the standard
 * error of measured - predicted, the statistic of the checks. For TQ_MEAN_T the model variance of
 * the "a target call ends the block" indicators is added (they vary only in the last block of a
 * prompt, which the bootstrap sees too rarely).
 * Needs labels on accepted tokens (audit on); returns an error otherwise. */
#ifndef SP_THEORYCHECK_H
#define SP_THEORYCHECK_H

#include "error.h"
#include "theory.h"
#include "verseq.h"

enum { TC_IID = 0, TC_PAPER = 1, TC_MODELS = 2 };
#define TC_MIN_PROMPTS 5 /* fewer prompts: no bootstrap, standard errors NaN (checks without verdict) */
/* TQ_ETA_FP / TQ_ETA_TP: the measured rates (no model prediction: pred is NaN), with bootstrap
 * standard errors that stay honest when decisions are correlated. */
enum { TQ_MEAN_N = 0, TQ_MEAN_T, TQ_P_N0, TQ_KM, TQ_DTV, TQ_ETA_FP, TQ_ETA_TP, TQ_FA, TQ_TOKENS, TQ_N };

/* Design curves (Figs. 5-6): predictions over the eta_FP grid j / TC_DESIGN, j = 0..TC_DESIGN-1, at
 * the run's measured eta_TP under the paper's label model (r ~ its Kaplan-Meier law): */
#define TC_DESIGN 50
enum {
    TD_EN = 0,      /* E[min(N, c_b)] with the run's per-block caps (comparable to TQ_MEAN_N) */
    TD_T,           /* E[T] per block, caps as TQ_MEAN_T */
    TD_FA,          /* E[false accepts] per block, caps as TQ_FA */
    TD_EN_UNCAPPED, /* E[N] without caps (Thm 3.3's closed form, mixed over r) */
    TD_FA_UNCAPPED, /* E[FA] without caps: E_r[eta_TP^r] eta_FP / (1 - eta_FP) */
    TD_N
};

/* RunEst.fallback bits: a value the data could not estimate, replaced by a stand-in (the report
 * marks it as such): no transition out of an acceptable (T11) / unacceptable (T01) label seen, so
 * the chain's t11 / t01 is pi1 (labels independent); no acceptable (ETA_TP) / unacceptable (ETA_FP)
 * labelled decision, so the predictions use eta = 0. */
enum { TC_FB_T11 = 1, TC_FB_T01 = 2, TC_FB_ETA_TP = 4, TC_FB_ETA_FP = 8 };

typedef struct RunEst {
    double npos, nneg, tp, fp; /* labelled decisions (bootstrap-weighted) */
    double eta_tp, eta_fp;
    LabelChain chain;
    unsigned fallback;         /* TC_FB_* bits */
    double blocks;             /* blocks used for the capped quantities */
    double dtv_pq;             /* mean (1 - p/q)^+ over decisions: d_TV(p, q) averaged over prefixes */
    double bonus_rate;         /* E[B]: share of the blocks used followed by a bonus token */
    double meas[TQ_N];
    double pred[TC_MODELS][TQ_N];
} RunEst;

typedef struct TcOpts {
    int bootstrap;      /* replicates (>= 2) */
    unsigned long seed; /* of the bootstrap */
    double shift;       /* tests only: added to every predicted mean of N and T (TQ_MEAN_N, _T, _KM) */
} TcOpts;

typedef struct TcResult {
    RunEst est;
    double se_meas[TQ_N];             /* bootstrap standard error of the measured value */
    double se_diff[TC_MODELS][TQ_N];  /* ... of measured - predicted */
    double en_uncapped[TC_MODELS];    /* predicted E[N] with no cap at all */
    double fa_uncapped[TC_MODELS];    /* predicted E[false accepts] per block with no cap at all */
    double design[TD_N][TC_DESIGN];   /* the design curves (TD_*) at eta_FP = j / TC_DESIGN */
    double gof_stat[TC_MODELS], gof_p[TC_MODELS];
    int gof_df[TC_MODELS];
    int horizon, kmax;                /* H; kmax = max_new */
    double *S[TC_MODELS];             /* [kmax + 1] predicted P(N >= k) */
    double *S_km;                     /* [kmax + 1] Kaplan-Meier P(N >= k) */
    double *obs_hist, *exp_hist[TC_MODELS]; /* [kmax + 1] counts of min(N, c_b) */
    double *r_weight;                 /* [kmax + 1] distribution of r (TC_PAPER) */
} TcResult;

const char *tq_name(int q);    /* "E[min(N,c)]", ... */
/* "t01 = pi1 (no transition from an unacceptable label)" ... for the bits of fallback, "; "-separated
 * into buf ("" when none). */
void tc_fallback_text(unsigned fallback, char *buf, size_t cap);
const char *tc_model_name(int m); /* "iid", "paper" */

int theory_check_run(const VerSeq *v, const TcOpts *o, TcResult *r, SpErr *err);
void tc_result_free(TcResult *r);

#endif
