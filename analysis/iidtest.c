/* iidtest.c - tests of the i.i.d. verifier-error assumption (see iidtest.h). */
#include "iidtest.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static double eta_of(int label, double eta_tp, double eta_fp) { return label ? eta_tp : eta_fp; }

/* ACF and Ljung-Box of the standardised residuals. */
static int residual_tests(const VerSeq *v, double eta_tp, double eta_fp, double alpha, IidResult *r) {
    double *x = malloc((size_t)(v->n_dec ? v->n_dec : 1) * sizeof *x);
    if (!x) return -1;
    size_t n = 0;
    for (int64_t i = 0; i < v->n_dec; i++) {
        const VDecision *d = &v->dec[i];
        if (d->label < 0) continue;
        double e = eta_of(d->label, eta_tp, eta_fp), sd = sqrt(e * (1 - e));
        x[n++] = sd > 0 ? (d->decision - e) / sd : 0;
    }
    r->n = (int64_t)n;
    r->h = n / 5 < IID_MAX_LAG ? (int)(n / 5) : IID_MAX_LAG;
    r->band = n > 0 ? z_of_conf(1 - alpha) / sqrt((double)n) : NAN;
    r->lb = (TestResult){NAN, NAN, 0};
    if (r->h >= 1 && acf(x, n, r->h, r->acf) == 0) r->lb = ljung_box(r->acf, n, r->h);
    else r->h = 0;
    free(x);
    return 0;
}

/* Runs test and lag-1 autocorrelation of the decisions of class c. */
static int class_runs(const VerSeq *v, int c, IidResult *r) {
    int8_t *b = malloc((size_t)(v->n_dec ? v->n_dec : 1));
    double *x = malloc((size_t)(v->n_dec ? v->n_dec : 1) * sizeof *x);
    if (!b || !x) {
        free(b), free(x);
        return -1;
    }
    size_t n = 0;
    for (int64_t i = 0; i < v->n_dec; i++)
        if (v->dec[i].label == c) b[n] = v->dec[i].decision, x[n] = v->dec[i].decision, n++;
    r->runs[c] = runs_test(b, n);
    double a1;
    r->lag1[c] = (n > 2 && acf(x, n, 1, &a1) == 0) ? a1 : NAN;
    free(b), free(x);
    return 0;
}

static int cmp_dbl(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Acceptance by margin quartile within class c. */
static int by_difficulty(const VerSeq *v, int c, double lambda, unsigned long seed, IidResult *r) {
    double *m = malloc((size_t)(v->n_dec ? v->n_dec : 1) * sizeof *m);
    if (!m) return -1;
    size_t n = 0;
    double ll = log(lambda);
    for (int64_t i = 0; i < v->n_dec; i++)
        if (v->dec[i].label == c && isfinite(v->dec[i].ratio) && v->dec[i].ratio > 0)
            m[n++] = fabs(log(v->dec[i].ratio) - ll);
    qsort(m, n, sizeof *m, cmp_dbl);
    double cut[3] = {INFINITY, INFINITY, INFINITY};
    for (int k = 0; n > 0 && k < 3; k++) {
        size_t at = (size_t)(k + 1) * n / 4;
        cut[k] = m[at < n ? at : n - 1];
    }
    for (int64_t i = 0; i < v->n_dec; i++) {
        const VDecision *d = &v->dec[i];
        if (d->label != c || !isfinite(d->ratio) || !(d->ratio > 0)) continue;
        double mg = fabs(log(d->ratio) - ll);
        int q = mg < cut[0] ? 0 : mg < cut[1] ? 1 : mg < cut[2] ? 2 : 3;
        r->diff_n[c][q]++, r->diff_acc[c][q] += d->decision;
    }
    r->diff[c] = chisq_homogeneity_mc(r->diff_acc[c], r->diff_n[c], 4, IID_MC_TABLES, seed);
    free(m);
    return 0;
}

static void by_position(const VerSeq *v, int c, unsigned long seed, IidResult *r) {
    for (int64_t i = 0; i < v->n_dec; i++) {
        const VDecision *d = &v->dec[i];
        if (d->label != c) continue;
        int k = d->pos_in_block < IID_POS_BUCKETS ? d->pos_in_block - 1 : IID_POS_BUCKETS - 1;
        r->pos_n[c][k]++, r->pos_acc[c][k] += d->decision;
    }
    int64_t acc[5] = {0}, n[5] = {0}; /* the test pools positions 5+ */
    for (int k = 0; k < IID_POS_BUCKETS; k++) {
        int j = k < 4 ? k : 4;
        acc[j] += r->pos_acc[c][k], n[j] += r->pos_n[c][k];
    }
    r->pos[c] = chisq_homogeneity_mc(acc, n, 5, IID_MC_TABLES, seed);
}

static void verdict(IidResult *r, double alpha) {
    const TestResult *t[] = {&r->lb, &r->runs[1], &r->runs[0], &r->pos[1], &r->pos[0], &r->diff[1], &r->diff[0]};
    const char *names[] = {"Ljung-Box", "runs(acceptable)", "runs(unacceptable)", "position(eta_TP)",
                           "position(eta_FP)", "difficulty(eta_TP)", "difficulty(eta_FP)"};
    r->n_tests = 0;
    r->min_p = NAN;
    for (int i = 0; i < 7; i++)
        if (!isnan(t[i]->p_value)) {
            r->n_tests++;
            if (isnan(r->min_p) || t[i]->p_value < r->min_p) r->min_p = t[i]->p_value;
        }
    r->rejected = 0;
    r->which[0] = '\0';
    size_t k = 0;
    for (int i = 0; i < 7 && r->n_tests > 0; i++)
        if (!isnan(t[i]->p_value) && t[i]->p_value < alpha / r->n_tests) {
            r->rejected = 1;
            int w = snprintf(r->which + k, sizeof r->which - k, "%s%s", k ? ", " : "", names[i]);
            if (w > 0 && (size_t)w < sizeof r->which - k) k += (size_t)w;
        }
}

int iid_tests(const VerSeq *v, double eta_tp, double eta_fp, double lambda, double alpha, unsigned long seed, IidResult *r,
              SpErr *err) {
    memset(r, 0, sizeof *r);
    if (residual_tests(v, eta_tp, eta_fp, alpha, r)) return sp_fail(err, "out of memory");
    for (int c = 0; c < 2; c++) {
        if (class_runs(v, c, r) || by_difficulty(v, c, lambda, seed + 2 * (unsigned long)c, r))
            return sp_fail(err, "out of memory");
        by_position(v, c, seed + 2 * (unsigned long)c + 1, r);
    }
    verdict(r, alpha);
    return 0;
}
