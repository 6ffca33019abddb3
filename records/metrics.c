/* metrics.c - figures computed from the record (see metrics.h). */
#include "metrics.h"

#include <gsl/gsl_cdf.h>
#include <math.h>

Interval wilson_interval(int64_t k, int64_t n, double conf) {
    if (n <= 0) return (Interval){0, 1};
    double z = gsl_cdf_ugaussian_Pinv(0.5 + conf / 2), p = (double)k / (double)n, nn = (double)n;
    double denom = 1 + z * z / nn, centre = (p + z * z / (2 * nn)) / denom;
    double half = z * sqrt(p * (1 - p) / nn + z * z / (4 * nn * nn)) / denom;
    return (Interval){fmax(0, centre - half), fmin(1, centre + half)};
}

double metric_ratio(double num, double den) { return den > 0 ? num / den : NAN; }

Acceptance acceptance_of(int64_t accepted, int64_t verifier_accepts, int64_t rejected) {
    Acceptance a = {0};
    a.sd_accepted = accepted - verifier_accepts;
    a.checked = a.sd_accepted + rejected;
    a.alpha = metric_ratio((double)a.sd_accepted, (double)a.checked);
    a.ci95 = wilson_interval(a.sd_accepted, a.checked, 0.95);
    return a;
}

/* E[tokens per call] of full gamma-blocks with i.i.d. acceptance a: 1 + a + ... + a^gamma. */
static double tokens_per_call_of(double a, int gamma) {
    double s = 1, t = 1;
    for (int i = 0; i < gamma; i++) s += (t *= a);
    return s;
}

double alpha_from_tokens_per_call(double tpc, int gamma) {
    if (gamma < 1 || !(tpc >= 1) || !(tpc <= gamma + 1)) return NAN;
    double lo = 0, hi = 1; /* tokens_per_call_of is increasing in a */
    for (int it = 0; it < 60; it++) {
        double mid = 0.5 * (lo + hi);
        if (tokens_per_call_of(mid, gamma) < tpc) lo = mid;
        else hi = mid;
    }
    return 0.5 * (lo + hi);
}
