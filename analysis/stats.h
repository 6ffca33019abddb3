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

typedef struct Interval {
    double lo, hi;
} Interval;

/* conf: e.g. 0.95. n = 0 gives [0, 1]. */
Interval wilson_interval(int64_t k, int64_t n, double conf);
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

/* Total variation distance 1/2 sum |a - b| over V entries. */
double tv_distance(const double *a, const double *b, int V);

#endif
