#include "stats.h"

#include <gsl/gsl_cdf.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdlib.h>

Interval clopper_pearson_interval(int64_t k, int64_t n, double conf) {
    if (n <= 0) return (Interval){0, 1};
    double a = 1 - conf;
    double lo = k == 0 ? 0.0 : gsl_cdf_beta_Pinv(a / 2, (double)k, (double)(n - k + 1));
    double hi = k == n ? 1.0 : gsl_cdf_beta_Pinv(1 - a / 2, (double)(k + 1), (double)(n - k));
    return (Interval){lo, hi};
}

int acf(const double *x, size_t n, int max_lag, double *r) {
    if (max_lag < 1 || n <= (size_t)max_lag) return -1;
    double m = 0;
    for (size_t t = 0; t < n; t++) m += x[t];
    m /= (double)n;
    double c0 = 0;
    for (size_t t = 0; t < n; t++) c0 += (x[t] - m) * (x[t] - m);
    if (!(c0 > 0)) return -1;
    for (int k = 1; k <= max_lag; k++) {
        double ck = 0;
        for (size_t t = 0; t + (size_t)k < n; t++) ck += (x[t] - m) * (x[t + (size_t)k] - m);
        r[k - 1] = ck / c0;
    }
    return 0;
}

TestResult ljung_box(const double *r, size_t n, int h) {
    double q = 0, nn = (double)n;
    for (int k = 1; k <= h; k++) q += r[k - 1] * r[k - 1] / (nn - k);
    q *= nn * (nn + 2);
    return (TestResult){q, gsl_cdf_chisq_Q(q, h), h};
}

TestResult runs_test(const int8_t *x, size_t n) {
    double n1 = 0, runs = n ? 1 : 0;
    for (size_t i = 0; i < n; i++) {
        n1 += x[i] != 0;
        if (i && (x[i] != 0) != (x[i - 1] != 0)) runs++;
    }
    double n0 = (double)n - n1, nn = (double)n;
    if (n1 == 0 || n0 == 0 || n < 3) return (TestResult){NAN, NAN, 0};
    double mean = 2 * n0 * n1 / nn + 1;
    double var = 2 * n0 * n1 * (2 * n0 * n1 - nn) / (nn * nn * (nn - 1));
    double z = (runs - mean) / sqrt(var);
    return (TestResult){z, 2 * gsl_cdf_ugaussian_Q(fabs(z)), 0};
}

/* ------------------------------------------------------------------ fit and homogeneity */

TestResult chisq_gof(const double *obs, const double *exp, int k, double min_expected, int n_params) {
    double o_acc = 0, e_acc = 0, chi2 = 0, last_o = 0, last_e = 0;
    int cells = 0;
    for (int i = 0; i < k; i++) {
        o_acc += obs[i], e_acc += exp[i];
        if (e_acc < min_expected) continue;
        if (cells) chi2 += (last_o - last_e) * (last_o - last_e) / last_e;
        last_o = o_acc, last_e = e_acc, cells++;
        o_acc = e_acc = 0;
    }
    if (e_acc > 0 || o_acc > 0) { /* a short tail joins the last full cell */
        if (cells) last_o += o_acc, last_e += e_acc;
        else last_o = o_acc, last_e = e_acc, cells = 1;
    }
    if (last_e > 0) chi2 += (last_o - last_e) * (last_o - last_e) / last_e;
    if (cells < 2) return (TestResult){NAN, NAN, 0};
    int df = cells - 1 - n_params;
    if (df < 1) df = 1;
    return (TestResult){chi2, gsl_cdf_chisq_Q(chi2, df), df};
}

TestResult chisq_homogeneity(const int64_t *succ, const int64_t *n, int k) {
    double S = 0, N = 0;
    int used = 0;
    for (int i = 0; i < k; i++)
        if (n[i] > 0) S += (double)succ[i], N += (double)n[i], used++;
    if (used < 2 || S <= 0 || S >= N) return (TestResult){NAN, NAN, 0};
    double p = S / N, chi2 = 0;
    for (int i = 0; i < k; i++) {
        if (n[i] <= 0) continue;
        double e1 = (double)n[i] * p, e0 = (double)n[i] * (1 - p), o1 = (double)succ[i], o0 = (double)(n[i] - succ[i]);
        chi2 += (o1 - e1) * (o1 - e1) / e1 + (o0 - e0) * (o0 - e0) / e0;
    }
    return (TestResult){chi2, gsl_cdf_chisq_Q(chi2, used - 1), used - 1};
}

TestResult chisq_homogeneity_mc(const int64_t *succ, const int64_t *n, int k, int reps, unsigned long seed) {
    TestResult obs = chisq_homogeneity(succ, n, k);
    if (isnan(obs.statistic) || reps < 1) return obs;
    int64_t *sim = calloc((size_t)k, sizeof *sim);
    gsl_rng *g = gsl_rng_alloc(gsl_rng_mt19937);
    if (!sim || !g) {
        free(sim);
        if (g) gsl_rng_free(g);
        return (TestResult){obs.statistic, NAN, obs.df};
    }
    gsl_rng_set(g, seed);
    int64_t S = 0, N = 0;
    for (int i = 0; i < k; i++) S += n[i] > 0 ? succ[i] : 0, N += n[i] > 0 ? n[i] : 0;
    long ge = 0;
    for (int r = 0; r < reps; r++) {
        int64_t s_left = S, n_left = N;
        for (int i = 0; i < k; i++) {
            if (n[i] <= 0) {
                sim[i] = 0;
                continue;
            }
            sim[i] = (int64_t)gsl_ran_hypergeometric(g, (unsigned)s_left, (unsigned)(n_left - s_left), (unsigned)n[i]);
            s_left -= sim[i], n_left -= n[i];
        }
        ge += chisq_homogeneity(sim, n, k).statistic >= obs.statistic - 1e-9;
    }
    free(sim);
    gsl_rng_free(g);
    return (TestResult){obs.statistic, (double)(ge + 1) / (double)(reps + 1), obs.df};
}

/* ------------------------------------------------------------------ survival */

void km_discrete(const int *t, const int8_t *event, const double *weight, size_t n, int kmax, double *S) {
    /* ev[k], cen[k]: events / censorings at time k (times >= kmax pooled at kmax) */
    double *ev = calloc((size_t)kmax + 1, sizeof *ev), *cen = calloc((size_t)kmax + 1, sizeof *cen);
    S[0] = 1;
    if (!ev || !cen) {
        for (int k = 1; k <= kmax; k++) S[k] = NAN;
        free(ev), free(cen);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        int k = t[i] < 0 ? 0 : t[i] > kmax ? kmax : t[i];
        (event[i] ? ev : cen)[k] += weight ? weight[i] : 1;
    }
    /* at risk at k: events at >= k, censorings at > k (a censoring at k leaves the status at k unknown) */
    double at_risk = 0;
    for (int k = 0; k <= kmax; k++) at_risk += ev[k] + cen[k];
    for (int k = 0; k < kmax; k++) {
        at_risk -= cen[k];
        S[k + 1] = at_risk > 0 ? S[k] * (1 - ev[k] / at_risk) : S[k];
        at_risk -= ev[k];
    }
    free(ev), free(cen);
}

/* ------------------------------------------------------------------ ROC */

typedef struct Scored {
    float s;
    int8_t y;
} Scored;

static int by_score_desc(const void *a, const void *b) {
    float x = ((const Scored *)a)->s, y = ((const Scored *)b)->s;
    return (x < y) - (x > y);
}

/* Valid (score, label) pairs sorted by descending score; NULL on allocation failure. */
static Scored *sorted_pairs(const float *s, const int8_t *y, size_t n, size_t *m, int64_t *np, int64_t *nn) {
    Scored *v = malloc((n ? n : 1) * sizeof *v);
    *m = 0, *np = 0, *nn = 0;
    if (!v) return NULL;
    for (size_t i = 0; i < n; i++) {
        if (y[i] < 0 || isnan(s[i])) continue;
        v[(*m)++] = (Scored){s[i], (int8_t)(y[i] != 0)};
        *np += y[i] != 0, *nn += y[i] == 0;
    }
    qsort(v, *m, sizeof *v, by_score_desc);
    return v;
}

double auc_scores(const float *s, const int8_t *y, size_t n, int64_t *n_pos, int64_t *n_neg) {
    size_t m;
    int64_t np, nn;
    Scored *v = sorted_pairs(s, y, n, &m, &np, &nn);
    if (n_pos) *n_pos = np;
    if (n_neg) *n_neg = nn;
    if (!v || np == 0 || nn == 0) {
        free(v);
        return NAN;
    }
    /* walk tie groups from the top: each negative beats nothing above it */
    double wins = 0, neg_below = (double)nn;
    for (size_t i = 0; i < m;) {
        size_t j = i;
        double p = 0, q = 0;
        for (; j < m && v[j].s == v[i].s; j++) p += v[j].y, q += !v[j].y;
        neg_below -= q;
        wins += p * (neg_below + q / 2);
        i = j;
    }
    free(v);
    return wins / ((double)np * (double)nn);
}

int roc_curve(const float *s, const int8_t *y, size_t n, double **fpr, double **tpr, int *m) {
    size_t k;
    int64_t np, nn;
    Scored *v = sorted_pairs(s, y, n, &k, &np, &nn);
    *fpr = *tpr = NULL;
    *m = 0;
    if (!v || np == 0 || nn == 0) {
        free(v);
        return -1;
    }
    *fpr = malloc((k + 1) * sizeof **fpr);
    *tpr = malloc((k + 1) * sizeof **tpr);
    if (!*fpr || !*tpr) {
        free(v), free(*fpr), free(*tpr);
        *fpr = *tpr = NULL;
        return -1;
    }
    double tp = 0, fp = 0;
    (*fpr)[0] = (*tpr)[0] = 0;
    int c = 1;
    for (size_t i = 0; i < k;) {
        size_t j = i;
        for (; j < k && v[j].s == v[i].s; j++) tp += v[j].y, fp += !v[j].y;
        (*fpr)[c] = fp / (double)nn, (*tpr)[c] = tp / (double)np, c++;
        i = j;
    }
    *m = c;
    free(v);
    return 0;
}

double auc_se(double a, int64_t n_pos, int64_t n_neg) {
    if (n_pos <= 0 || n_neg <= 0 || isnan(a)) return NAN;
    double q1 = a / (2 - a), q2 = 2 * a * a / (1 + a), np = (double)n_pos, nn = (double)n_neg;
    double v = (a * (1 - a) + (np - 1) * (q1 - a * a) + (nn - 1) * (q2 - a * a)) / (np * nn);
    return v > 0 ? sqrt(v) : 0;
}

/* ------------------------------------------------------------------ helpers */

double z_of_conf(double conf) { return gsl_cdf_ugaussian_Pinv(0.5 + conf / 2); }
