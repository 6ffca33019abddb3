/* stats.h - the statistics the analysis step needs, on plain arrays (GSL for distributions).
 *
 * Intervals for a binomial proportion k/n: Wilson score and Clopper-Pearson (exact).
 * Tests of the i.i.d. assumption on a 0/1 (or real) sequence x[0..n):
 *   - sample autocorrelation r_k, k = 1..max_lag, with the white-noise band +-z/sqrt(n);
 *   - Ljung-Box Q = n(n+2) sum_{k=1..h} r_k^2 / (n-k) ~ chi2(h) under i.i.d.;
 *   - Wald-Wolfowitz runs test on a binary sequence (normal approximation, two-sided).
 * No allocation unless stated; no global state. */
#ifndef SP_STATS_H
#define SP_STATS_H

#include <stddef.h>
#include <stdint.h>

#include "metrics.h" /* Interval, wilson_interval (records/: the summary uses it too) */

/* conf: e.g. 0.95. n = 0 gives [0, 1]. */
Interval clopper_pearson_interval(int64_t k, int64_t n, double conf);

/* r[k-1] = lag-k sample autocorrelation for k = 1..max_lag (biased estimator, as Box-Jenkins):
 * r_k = sum_{t<n-k} (x_t - m)(x_{t+k} - m) / sum_t (x_t - m)^2. Returns -1 if n <= max_lag or the
 * sequence is constant (r undefined). */
int acf(const double *x, size_t n, int max_lag, double *r);

typedef struct TestResult {
    double statistic; /* Q for Ljung-Box, z for the runs test */
    double p_value;
    int df;           /* degrees of freedom (Ljung-Box), 0 otherwise */
} TestResult;

/* Ljung-Box over lags 1..h from precomputed r (as acf()). */
TestResult ljung_box(const double *r, size_t n, int h);

/* Runs test on x[i] in {0, 1}: R = number of runs; under i.i.d. given n1 ones and n0 zeros,
 * E[R] = 2 n0 n1 / n + 1, Var[R] = 2 n0 n1 (2 n0 n1 - n) / (n^2 (n - 1)). p is two-sided.
 * Returns p = NaN when either symbol is absent. */
TestResult runs_test(const int8_t *x, size_t n);

/* ---- tests of fit and homogeneity ---- */

/* Pearson chi-square goodness of fit of observed counts obs[0..k) to expected counts exp[0..k)
 * (same total). Neighbouring cells are pooled left to right until every pooled cell expects at
 * least min_expected (the last pooled cell joins its left neighbour if it falls short). df =
 * cells - 1 - n_params (at least 1). p = NaN when fewer than 2 cells remain. */
TestResult chisq_gof(const double *obs, const double *exp, int k, double min_expected, int n_params);

/* Chi-square test that k groups share one success probability: succ[i] of n[i]. Groups with n = 0
 * are skipped; df = (groups used) - 1. p = NaN with fewer than 2 groups or no variation possible
 * (all successes or none). */
TestResult chisq_homogeneity(const int64_t *succ, const int64_t *n, int k);
/* The same statistic with a Monte Carlo p-value that stays valid with small expected counts: tables
 * with the observed margins (group sizes, total successes) drawn from their multivariate
 * hypergeometric law under homogeneity (seeded RNG), p = (1 + #{chi2* >= chi2}) / (reps + 1). */
TestResult chisq_homogeneity_mc(const int64_t *succ, const int64_t *n, int k, int reps, unsigned long seed);

/* ---- survival of a discrete time under right censoring ---- */

/* Kaplan-Meier for a count T >= 0 observed as t[i] with event[i] = 1 (T = t[i]) or 0 (censored:
 * T >= t[i], status at t[i] unknown), observation i counted weight[i] times (weight NULL: once).
 * S[k] = P(T >= k) for k = 0..kmax (S[0] = 1); times above kmax count as kmax. Where no observation
 * is at risk any more S stays flat (the estimate is undefined beyond the data). Allocates. */
void km_discrete(const int *t, const int8_t *event, const double *weight, size_t n, int kmax, double *S);

/* ---- classifier curves ---- */

/* Area under the ROC curve of score s for labels y in {0, 1} (entries with y < 0 or NaN s are
 * skipped), as the Mann-Whitney probability P(s_pos > s_neg) + P(tie)/2. *n_pos, *n_neg get the
 * counts used (may be NULL). NaN when a class is empty. Allocates a sorted copy. */
double auc_scores(const float *s, const int8_t *y, size_t n, int64_t *n_pos, int64_t *n_neg);
/* The ROC curve: thresholds at every distinct score, from above the largest (0, 0) down to (1, 1).
 * fpr/tpr are malloc'd arrays of *m points (caller frees). Returns -1 when a class is empty or
 * allocation fails. */
int roc_curve(const float *s, const int8_t *y, size_t n, double **fpr, double **tpr, int *m);
/* Hanley-McNeil standard error of an AUC estimated from n_pos positives and n_neg negatives. */
double auc_se(double auc, int64_t n_pos, int64_t n_neg);

/* ---- small helpers ---- */
/* Two-sided standard normal quantile for confidence conf (1.959964 for 0.95). */
double z_of_conf(double conf);

#endif
