/* test_stats.c - analysis/stats and analysis/theory against independent answers:
 *  - Wilson and Clopper-Pearson intervals vs published values (k = 8, n = 10, 95%);
 *  - ACF of a simulated AR(1) recovers phi; Ljung-Box and the runs test accept i.i.d. Bernoulli
 *    sequences (several seeds, alpha = 0.001) and reject a two-state Markov chain with the same
 *    marginal rate but persistence (the correlated-verifier case the analysis must catch);
 *  - Thm 3.3: closed form == sum of tails; a Monte Carlo simulation of the model agrees within
 *    5 standard errors; a formula shifted by +0.1 is rejected by the same comparison.
 * usage: test_stats */
#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "stats.h"
#include "theory.h"

#include "check.h"

static void test_intervals(void) {
    Interval w = wilson_interval(8, 10, 0.95), cp = clopper_pearson_interval(8, 10, 0.95);
    /* published values: Wilson [0.4902, 0.9433]; Clopper-Pearson [0.4439, 0.9748] */
    check_close(w.lo, 0.4902, 5e-4, 0, "Wilson(8/10) lower end");
    check_close(w.hi, 0.9433, 5e-4, 0, "Wilson(8/10) upper end");
    check_close(cp.lo, 0.4439, 5e-4, 0, "Clopper-Pearson(8/10) lower end");
    check_close(cp.hi, 0.9748, 5e-4, 0, "Clopper-Pearson(8/10) upper end");
    Interval z = clopper_pearson_interval(0, 20, 0.95);
    check(z.lo == 0, "Clopper-Pearson(0/20) lower end %.4f == 0", z.lo);
    check_close(z.hi, 0.1684, 5e-4, 0, "Clopper-Pearson(0/20) upper end");
}

/* x_t: i.i.d. Bernoulli(rate) if stay < 0, else a two-state chain that keeps its state with
 * probability stay and otherwise redraws from Bernoulli(rate) (stationary marginal = rate). */
static void sequence(gsl_rng *r, double rate, double stay, size_t n, int8_t *b, double *x) {
    int8_t s = gsl_rng_uniform(r) < rate;
    for (size_t t = 0; t < n; t++) {
        if (stay < 0 || gsl_rng_uniform(r) >= stay) s = gsl_rng_uniform(r) < rate;
        b[t] = s;
        x[t] = s;
    }
}

static void test_iid_tests(void) {
    enum { N = 4000, H = 20 };
    static int8_t b[N];
    static double x[N], r[H];
    gsl_rng *g = gsl_rng_alloc(gsl_rng_mt19937);
    for (unsigned long seed = 1; seed <= 3; seed++) {
        gsl_rng_set(g, seed);
        sequence(g, 0.3, -1, N, b, x);
        acf(x, N, H, r);
        TestResult lb = ljung_box(r, N, H), rt = runs_test(b, N);
        check(lb.p_value > 0.001 && rt.p_value > 0.001, "i.i.d. seed %lu: Ljung-Box p %.3f, runs p %.3f (accept)", seed,
              lb.p_value, rt.p_value);
        sequence(g, 0.3, 0.5, N, b, x);
        acf(x, N, H, r);
        lb = ljung_box(r, N, H), rt = runs_test(b, N);
        check(lb.p_value < 1e-6 && rt.p_value < 1e-6, "Markov (stay 0.5) seed %lu: Ljung-Box p %.2e, runs p %.2e (reject)",
              seed, lb.p_value, rt.p_value);
        check_close(r[0], 0.5, 0.05, 0, "Markov (stay 0.5) seed %lu: lag-1 autocorrelation", seed);
    }
    /* AR(1), phi = 0.6 */
    double prev = 0;
    for (size_t t = 0; t < N; t++) {
        prev = 0.6 * prev + (gsl_rng_uniform(g) - 0.5);
        x[t] = prev;
    }
    acf(x, N, H, r);
    check_close(r[0], 0.6, 0.05, 0, "AR(1) phi=0.6: r1");
    check_close(r[1], 0.36, 0.06, 0, "AR(1) phi=0.6: r2");
    gsl_rng_free(g);
}

/* Simulates N under the Thm 3.3 model; returns the sample mean and its standard error. */
static void simulate_n(gsl_rng *g, double tp, double fp, int r, int cap, int reps, double *mean, double *se) {
    double s = 0, s2 = 0;
    for (int i = 0; i < reps; i++) {
        int n = 0;
        while (cap <= 0 || n < cap) {
            double rate = n < r ? tp : fp;
            if (gsl_rng_uniform(g) >= rate) break;
            n++;
        }
        s += n;
        s2 += (double)n * n;
    }
    *mean = s / reps;
    *se = sqrt((s2 / reps - *mean * *mean) / reps);
}

static void test_thm33(void) {
    const double tps[] = {0.9, 0.7, 0.95}, fps[] = {0.3, 0.6, 0.86};
    const int rs[] = {3, 8, 0};
    gsl_rng *g = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(g, 99);
    for (int i = 0; i < 3; i++) {
        double closed = thm33_expected_n(tps[i], fps[i], rs[i], 0), sum = 0;
        for (int k = 1; k < 4000; k++) sum += thm33_tail(tps[i], fps[i], rs[i], k);
        check_close(closed, sum, 1e-9, 0, "Thm 3.3 closed form == sum of tails");
        /* paper's expression, verbatim */
        double paper = (tps[i] - pow(tps[i], rs[i])) / (1 - tps[i]) + pow(tps[i], rs[i]) / (1 - fps[i]);
        check_close(closed, paper, 1e-12, 0, "Thm 3.3 == the paper's expression");
        double mean, se;
        simulate_n(g, tps[i], fps[i], rs[i], 0, 1000000, &mean, &se);
        check_close(mean, closed, 5 * se, 0, "simulated E[N] (se %.4f) within 5 se of the formula", se);
        check(fabs(mean - (closed + 0.1)) > 5 * se, "formula shifted by +0.1 (%.4f) is rejected", closed + 0.1);
        simulate_n(g, tps[i], fps[i], rs[i], 5, 200000, &mean, &se);
        double capped = thm33_expected_n(tps[i], fps[i], rs[i], 5);
        check_close(mean, capped, 5 * se, 0, "capped at 5: simulated E[min(N,5)] (se %.4f) within 5 se of the formula",
                    se);
    }
    gsl_rng_free(g);
}

/* records/metrics.h: the acceptance figures against hand counts and the closed form they invert. */
static void test_acceptance(void) {
    Acceptance a = acceptance_of(10, 3, 3); /* 7 SD accepts + 3 rejections checked, 3 unchecked verifier accepts */
    check(a.sd_accepted == 7 && a.checked == 10 && fabs(a.alpha - 0.7) < 1e-12 && a.ci95.lo < 0.7 && 0.7 < a.ci95.hi,
          "acceptance_of: alpha = 7/10 with the interval around it (got %g [%g, %g])", a.alpha, a.ci95.lo, a.ci95.hi);
    Acceptance none = acceptance_of(0, 0, 0);
    check(isnan(none.alpha) && none.checked == 0, "acceptance_of: nothing checked gives NaN");
    double worst = 0;
    for (int g = 1; g <= 8; g++)
        for (double al = 0.05; al < 1; al += 0.1) {
            double e = 0, t = 1;
            for (int i = 0; i <= g; i++) e += t, t *= al; /* 1 + a + ... + a^g */
            worst = fmax(worst, fabs(alpha_from_tokens_per_call(e, g) - al));
        }
    check(worst < 1e-9, "alpha_from_tokens_per_call inverts 1 + a + ... + a^gamma (max error %.2g)", worst);
    check(isnan(alpha_from_tokens_per_call(0.5, 5)) && isnan(alpha_from_tokens_per_call(7.5, 5)) &&
              alpha_from_tokens_per_call(1, 5) < 1e-9 && alpha_from_tokens_per_call(6, 5) > 1 - 1e-9,
          "alpha_from_tokens_per_call: NaN outside [1, gamma + 1], 0 and 1 at the ends");
}

int main(void) {
    test_intervals();
    test_iid_tests();
    test_thm33();
    test_acceptance();
    return check_summary("stats");
}
