#include "stats.h"

#include <gsl/gsl_cdf.h>
#include <math.h>

Interval wilson_interval(int64_t k, int64_t n, double conf) {
    if (n <= 0) return (Interval){0, 1};
    double z = gsl_cdf_ugaussian_Pinv(0.5 + conf / 2), p = (double)k / (double)n, nn = (double)n;
    double denom = 1 + z * z / nn, centre = (p + z * z / (2 * nn)) / denom;
    double half = z * sqrt(p * (1 - p) / nn + z * z / (4 * nn * nn)) / denom;
    return (Interval){fmax(0, centre - half), fmin(1, centre + half)};
}

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

double tv_distance(const double *a, const double *b, int V) {
    double s = 0;
    for (int i = 0; i < V; i++) s += fabs(a[i] - b[i]);
    return s / 2;
}
