/* iidtest.h - tests of the theorems' assumption that the verifier's errors are i.i.d.: given its
 * true label, each decision is an independent Bernoulli(eta_TP or eta_FP) draw, whatever came before
 * and whatever the token. On the labelled decisions of one run (verseq.h), in log order:
 *   lb        Ljung-Box Q over lags 1..h (h = min(20, n/5)) of the standardised residuals
 *             (decision - eta_label) / sqrt(eta_label (1 - eta_label)); their ACF with the
 *             white-noise band +-z/sqrt(n) (z at 1 - alpha/2)
 *   runs[c]   Wald-Wolfowitz runs test on the decisions of label class c (0 unacceptable,
 *             1 acceptable) in order; lag1[c] their lag-1 autocorrelation
 *   pos[c]    chi-square homogeneity of the class's acceptance rate over the position in the
 *             block (1, 2, 3, 4, 5+)
 *   diff[c]   the same over quartiles of difficulty: the margin |ln(q/p) - ln(lambda)| of the
 *             token's ratio from the label threshold (quartile 1 = hardest, nearest lambda)
 *             (both homogeneity tests take Monte Carlo p-values, 2000 tables with the observed
 *             margins, so small cells do not inflate the rejection rate; seeded by `seed`)
 * The verdict rejects i.i.d. when any of the (up to 7) p-values is below alpha / (number of tests)
 * (Bonferroni: family-wise error <= alpha under i.i.d.). */
#ifndef SP_IIDTEST_H
#define SP_IIDTEST_H

#include <stdint.h>

#include "error.h"
#include "stats.h"
#include "verseq.h"

#define IID_MAX_LAG 20
#define IID_POS_BUCKETS 10 /* positions 1..9 and 10+ for tables and plots */
#define IID_MC_TABLES 2000 /* Monte Carlo tables per homogeneity test */

typedef struct IidResult {
    int64_t n;            /* labelled decisions */
    int h;                /* Ljung-Box lags (0: too few decisions) */
    double acf[IID_MAX_LAG];
    double band;          /* +- z / sqrt(n) */
    TestResult lb;
    TestResult runs[2], pos[2], diff[2];
    double lag1[2];
    int64_t pos_acc[2][IID_POS_BUCKETS], pos_n[2][IID_POS_BUCKETS];
    int64_t diff_acc[2][4], diff_n[2][4];
    int n_tests;
    double min_p;         /* smallest p-value of the tests */
    int rejected;         /* 1: i.i.d. rejected at alpha (Bonferroni) */
    char which[256];      /* names of the tests that rejected */
} IidResult;

int iid_tests(const VerSeq *v, double eta_tp, double eta_fp, double lambda, double alpha, unsigned long seed, IidResult *r,
              SpErr *err);

#endif
