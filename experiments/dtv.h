/* dtv.h - `sprinter dtv`: how far SPRINTER's output law is from the target's, exactly, prefix by
 * prefix, against Theorem 3.1's prediction  d_TV(p, p_SPRINTER) = eta_FP d_TV(p, q).
 *
 * Per prefix (a dataset prompt continued by k ~ Uniform{0..max_continue} tokens sampled from the
 * target, with the RNG seeded prompt_seed(seed, prefix index)):
 *   p, q       target and draft next-token distributions (sampler_probs with the given sampling)
 *   a(v)       the verifier's decision [score(h_draft(prefix + v)) >= tau] for EVERY vocab token v:
 *              one single-token draft forward per v on top of the cached prefix (the decoder's own
 *              computation path, so a(v) is the decision decoder_run would make)
 *   P_S        the exact law of SPRINTER's first token, sprinter_next_token_law(p, q, a)
 * and from them (U = unacceptable tokens, q(v) > lambda p(v); A = the rest):
 *   eta_FP(prefix) = sum_U q a / sum_U q,   eta_TP(prefix) = sum_A q a / sum_A q
 *              (the rates the audit measures on drafted tokens, at this prefix)
 *   eta_excess = sum_{q>p} a (q - p) / sum_{q>p} (q - p):  for EVERY a and lambda,
 *              d_TV(p, P_S) = eta_excess d_TV(p, q)  (for q(v) > p(v), P_S(v) - p(v) = a(v)(q - p);
 *              below p, P_S <= p). Thm 3.1 is exact when eta_excess = eta_FP, i.e. when a is
 *              constant on {q > p}: the oracle at lambda = 1.
 *   pred_local = eta_FP(prefix) d_TV(p, q);  pred_global = eta_FP_global d_TV(p, q), where
 *   eta_FP_global = sum_i sum_U q a / sum_i sum_U q over prefixes i: each prefix weighted by its
 *              probability of drafting an unacceptable token, i.e. the eta_FP the sweep's audit
 *              reports (false positives / unacceptable drafts) restricted to these prefixes.
 *   oracle: a(v) = eta_TP^or if acceptable else eta_FP^or (given, or by default the verifier's
 *              measured global rates): its exact d_TV at lambda and at lambda = 1.
 * Sampling estimate (samples M > 0): M first tokens from decoder_run (method sprinter, max_new 1,
 * audit off) at the prefix; naive plug-in d_TV(p, empirical), which is biased upward by sampling
 * noise; a parametric-bootstrap bias correction 2 naive - mean_b d_TV(p, resample_b) (B multinomial
 * resamples of M from the empirical law, clipped at 0); the noise floor mean_b d_TV(p, M-sample of
 * p) (what the naive estimate reads for a lossless method); the chi-square p-value of the counts
 * against the exact law, and the empirical verifier-accept rate (expected: sum_v q a). And an
 * UNBIASED estimate that needs no histogram: since d_TV(p, P_S) = sum_{q>p} a (q - p)
 *              = E_{x~q}[ a(x) max(0, 1 - p(x)/q(x)) ],
 * the mean over the M draws of decision * max(0, 1 - p(x)/q(x)) at the drafted token x (values in
 * [0, 1]: standard error <= 0.5/sqrt(M) at any vocabulary size). The same mean over the sprinter
 * events of an audited token log (q, p, decision columns) estimates the d_TV averaged over the
 * prefixes the decoder visited.
 *
 * Other methods (DtvSpec.method typical, fsd, optimal-lossy, judge): P_S is the method's exact
 * first-token law (dtv_method_exact) with DtvSpec.params' parameters (judge: j(v) the judge head's
 * decision for every candidate, judge_candidate_decisions); no verifier; dtv_p_ps / dtv_q_ps / accept_mass
 * are the method's, the SPRINTER columns (q_unacc .. oracle_dtv_l1, emp_dtv_unbiased*) NaN; the M draws
 * are the method's decoder_run (max_new 1, params' gamma), checked against the law by chi-square.
 *
 * Output: an HDF5 file (written to OUT.tmp, renamed when complete) with one row per prefix (columns
 * in records/dtvlog.h and results/README.md) and root attributes: format, version (DTVLOG_VERSION 2),
 * method, params (dtv_params_label: the sweep label of the method's parameters), draft, draft_sha256,
 * target, target_sha256, verifier, verifier_sha256 ("" unless sprinter), judge, judge_sha256 (""
 * unless judge with a head), data, data_sha256, data_format, seed, oracle_rates (measured, given;
 * none unless sprinter), created_at, definitions; n_prefixes, offset, max_continue, top_k, samples,
 * bootstrap, vocab_size; tau, lambda, verifier_lambda (NaN where they do not apply), temperature,
 * top_p, the global rates and the means of DtvSummary (written in dtv.c write_attrs). p and q of every prefix are kept in memory for the oracle pass (2 N V floats).
 * Not thread-safe (HDF5 serial build). */
#ifndef SP_DTV_H
#define SP_DTV_H

#include <stdint.h>

#include "decoding.h"
#include "error.h"
#include "model.h"
#include "sampling.h"
#include "verifier.h"

typedef struct DtvSpec {
    DecodeMethod method;                 /* sprinter (default), typical, fsd, optimal-lossy or judge */
    DecodeConfig params;                 /* the method's grid parameters (typical_eps, fsd_divergence,
                                          * fsd_threshold, lossy_kl, tau_judge, judge_rho, gamma; defaults
                                          * decode_config_default's). sprinter reads tau and lambda below */
    const char *draft_dir, *target_dir, *verifier_path; /* verifier: sprinter only */
    const char *judge_path;              /* judge head (judge; may be NULL when params.tau_judge > 1) */
    const char *data_path, *data_format; /* format NULL = infer */
    int n_prefixes;                      /* N; prompts offset, offset+1, ... (cycling through the file) */
    int offset;                          /* first prompt index */
    int max_continue;                    /* k ~ Uniform{0..max_continue} target tokens after the prompt */
    double tau;                          /* verifier threshold */
    double lambda;                       /* label threshold q/p <= lambda; <= 0: the verifier's own */
    SamplerParams sampling;              /* applied to p and q (and the continuation) */
    uint64_t seed;
    int samples;                         /* M decoder_run draws per prefix; 0 = exact part only */
    int bootstrap;                       /* B resamples for the bias correction */
    double oracle_eta_fp, oracle_eta_tp; /* < 0: the verifier's measured global rates */
    int progress;                        /* one line per prefix on stderr */
    int fault_draw;                      /* tests only (negative control): the M draws use method
                                          * fault_draw_method (same params) while the exact law stays the
                                          * spec's method's */
    DecodeMethod fault_draw_method;
} DtvSpec;

/* method sprinter, params decode_config_default's, N 100, offset 0, max_continue 8, tau 0.5, lambda
 * from the verifier, T = 1, seed 0, M 0, B 200, oracle rates measured. */
void dtv_spec_default(DtvSpec *s);

typedef struct DtvSummary {
    int n, V;
    double lambda, eta_fp_global, eta_tp_global, oracle_eta_fp, oracle_eta_tp;
    double mean_dtv_pq, mean_dtv_p_ps, mean_pred_local, mean_pred_global, mean_eta_excess;
    double mean_oracle_dtv, mean_oracle_pred, mean_oracle_dtv_l1;
    double max_oracle_l1_err;     /* max_i |oracle_dtv_l1 - oracle_eta_fp d_TV(p, q)| (0 up to rounding) */
    double mean_accept_mass;      /* P(verifier accepts the first drafted token), averaged */
    double mean_emp_naive, mean_emp_bc, mean_noise_floor, mean_emp_unbiased; /* NaN without samples */
    double mean_abs_err_naive, mean_abs_err_bc, mean_abs_err_unbiased, min_chisq_p;
    double max_abs_z_unbiased; /* max_i |emp_dtv_unbiased - dtv_p_ps| / its standard error */
} DtvSummary;

int dtv_run(const DtvSpec *s, const char *out_h5, DtvSummary *sum, SpErr *err);

/* sprinter at several thresholds in one pass: file out_h5[k] and sums[k] at taus[k] (s->tau unused),
 * each the same as dtv_run's at that tau alone (created_at aside); the prefixes, p, q and the
 * verifier's scores, which do not depend on tau, are computed once. 1 <= n <= DTV_MAX_TAUS, the taus
 * distinct; the other methods take n = 1. */
#define DTV_MAX_TAUS 64
int dtv_run_taus(const DtvSpec *s, const double *taus, const char *const *out_h5, int n, DtvSummary *sums, SpErr *err);

/* ---- building blocks (dtv_run's steps, exposed for the tests) ---- */

/* probs[V]: the next-token distribution of s's model after prefix[0..n), the prefix run in one
 * call from an empty cache (as decoder_run does); the prefix stays cached. hidden_last[d] (may be
 * NULL; d = the model's hidden size): its last-layer state at position n - 1. work[V] is scratch. */
int dtv_next_probs(Session *s, const SamplerParams *sp, const int32_t *prefix, int n, int V, float *probs,
                   float *hidden_last, int d, int32_t *work, SpErr *err);

/* a[v] = [verifier_score(h) >= tau] for v in [0, V), scores[v] (may be NULL) the scores. The token
 * feature: h = h(prefix + v), one draft forward per v; draft must hold exactly the prefix
 * (dtv_next_probs) and holds it again on return. The prefix feature: h = h_prefix, the draft's
 * state at the prefix's last position (dtv_next_probs' hidden_last), the same decision for every v. */
int dtv_verifier_decisions(Session *draft, const Verifier *ver, const float *h_prefix, double tau, int V, double *a,
                           float *scores, SpErr *err);

/* The oracle's acceptance probabilities: eta_tp where q(v) <= lambda p(v), else eta_fp. */
void dtv_oracle_decisions(const float *p, const float *q, int V, double lambda, double eta_tp, double eta_fp, double *a);

typedef struct DtvExact {
    double dtv_pq, dtv_p_ps, dtv_q_ps;
    double accept_mass;         /* sum_v q a: P(the drafted token is accepted by the verifier) */
    double q_unacc, fp_mass, tp_mass; /* sum_U q, sum_U q a, sum_A q a */
    double eta_fp, eta_tp;      /* per prefix; NaN when sum_U q (sum_A q) is 0 */
    double eta_excess;          /* sum_{q>p} a (q - p) / d_TV(p, q); NaN when p == q */
    int n_accepted;             /* tokens with a(v) > 0 */
} DtvExact;

/* law[V] = sprinter_next_token_law(p, q, a) and the quantities above. */
void dtv_exact(const float *p, const float *q, const double *a, int V, double lambda, double *law, DtvExact *e);

/* The first-token law of a method other than sprinter (typical, fsd, optimal-lossy, judge) at a
 * prefix with target law p and draft law q, with params' parameters: law[V] = typical_next_token_law,
 * fsd_next_token_law, optimal_lossy_next_token_law or judge_next_token_law (j[V]: the judge's decision
 * for every candidate, judge_candidate_decisions; NULL for the others), and in e: dtv_pq, dtv_p_ps =
 * d_TV(p, law), dtv_q_ps = d_TV(q, law), accept_mass = P(the drafted token is kept without replacement)
 * (typical: sum q [p > threshold]; fsd: 1 when D(p, q) <= threshold, else sum q min(1, p/q);
 * optimal-lossy: sum min(q, r), r optimal_lossy_row; judge: sum q [m + (1 - m) j], m = min(1, p/q)),
 * n_accepted = tokens the method's rule keeps outright if drafted (typical: p(v) > threshold; fsd: V
 * when D(p, q) <= threshold, else 0; judge: j(v) = 1; optimal-lossy: -1, no such rule); the
 * SPRINTER-specific fields NaN. work: OPTIMAL_LOSSY_WORK(V) doubles, rf: V floats (optimal-lossy). */
void dtv_method_exact(DecodeMethod m, const DecodeConfig *params, const float *p, const float *q, const double *j, int V,
                      double *work, float *rf, double *law, DtvExact *e);

/* The `params` attribute of a dtv file: run_params_format of the method's applicable parameters
 * (method_params), NaN for the others, i.e. the label a sweep run of the method with these values gets;
 * for sprinter tau and lambda are the given ones (dtv's own, not params'). buf of cap bytes. */
void dtv_params_label(DecodeMethod m, const DecodeConfig *params, double tau, double lambda, char *buf, int cap);

/* Chi-square goodness-of-fit p-value of counts[V] (n draws) against law[V]; adjacent bins (in
 * token order) are merged until each expects >= 5. 0 when a count falls where the law has no mass. */
double dtv_chisq_pvalue(const long *counts, const double *law, int V, long n);

#endif
