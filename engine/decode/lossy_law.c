/* lossy_law.c - the rules of the lossy block methods (typical, fsd, optimal-lossy: methods.h) and
 * their exact next-token laws at one position, from the target's p and the draft's q there
 * (decoding.h). The decoder (method_sd.c) calls the same functions the laws are built from, so a
 * rule and its law cannot drift apart.
 *
 * optimal-lossy (Tran-Thien's mentored decoding). Its output law r at a position solves
 *     max_r  A(r) = sum_x min(q(x), r(x))    subject to  KL(r || p) <= D,  r a distribution,
 * and SD is then run with r in place of p (accept x w.p. min(1, r(x)/q(x)), else draw from
 * norm(max(r - q, 0))), whose output law is exactly r and whose acceptance is A(r). The direction
 * KL(r || p) (the produced law against the target) is the one whose finiteness keeps r inside the
 * target's support: a token the target gives no mass (top-k / top-p cut) is never emitted.
 * Derivation. A is concave, the constraint convex and, for D > 0, strictly feasible (r = p), so the
 * KKT conditions characterise the optimum. Stationarity of A - mu KL(r || p) - nu sum r, with g(x)
 * in the superdifferential of min(q(x), .) at r(x) (1 below q(x), 0 above, [0, 1] at q(x)), reads
 *     log(r(x)/p(x)) = (g(x) - nu)/mu - 1,
 * so r(x) = b p(x) where r(x) > q(x), r(x) = a p(x) where r(x) < q(x) (a = b e^{1/mu} >= b) and
 * r(x) = q(x) where b p(x) <= q(x) <= a p(x):
 *     r_a(x) = p(x) clamp(q(x)/p(x), b, a),  b = b(a) <= 1 <= a fixed by sum_x r_a(x) = 1
 * (r_a = 0 where p = 0). At a = 1, b = 1 and r = p; as a grows, r_a moves every coordinate
 * monotonically from p towards q without passing it, so A(r_a) is non-decreasing and KL(r_a || p) is
 * non-decreasing (dKL = sum dr log(r/p) with dr >= 0 where r > p and dr <= 0 where r < p). The
 * optimum is r_a at the largest a with KL(r_a || p) <= D (a bisection on log a; the constraint is
 * active unless even a = max q/p is feasible, where r = q on p's support); b(a) is exact, from the
 * ratios q/p sorted once. D = 0 gives r = p exactly. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "decoding.h"

/* ---- the SD step with a law p, as the decoder samples it (float rows, as given) ---- */

void sd_next_token_law(const float *p, const float *q, int V, double *out) {
    double accepted = 0, residual_mass = 0;
    for (int v = 0; v < V; v++) {
        out[v] = fmin((double)q[v], (double)p[v]);
        accepted += out[v];
        residual_mass += fmax((double)p[v] - q[v], 0.0);
    }
    double qsum = 0;
    for (int v = 0; v < V; v++) qsum += q[v];
    double reject = qsum - accepted; /* R = sum q (1 - min(1, p/q)) */
    if (!(reject > 0)) return;
    if (residual_mass > 0) {
        for (int v = 0; v < V; v++) out[v] += reject * fmax((double)p[v] - q[v], 0.0) / residual_mass;
    } else { /* p == q: draw_residual draws from p */
        double psum = 0;
        for (int v = 0; v < V; v++) psum += p[v];
        for (int v = 0; v < V; v++) out[v] += reject * p[v] / psum;
    }
}

/* ---- typical ---- */

double entropy_nats(const float *p, int V) {
    double h = 0;
    for (int v = 0; v < V; v++)
        if (p[v] > 0) h -= (double)p[v] * log((double)p[v]);
    return h;
}

double typical_threshold(const float *p, int V, double eps, double alpha) {
    return fmin(eps, alpha * exp(-entropy_nats(p, V)));
}

int typical_accepts(float px, double threshold) { return (double)px > threshold; }

void typical_next_token_law(const float *p, const float *q, int V, double eps, double alpha, double *out) {
    double threshold = typical_threshold(p, V, eps, alpha), reject = 0, psum = 0;
    for (int v = 0; v < V; v++) psum += p[v];
    for (int v = 0; v < V; v++) {
        int a = typical_accepts(p[v], threshold);
        out[v] = a ? (double)q[v] : 0.0;
        reject += a ? 0.0 : (double)q[v];
    }
    for (int v = 0; v < V; v++) out[v] += reject * p[v] / psum;
}

/* ---- fsd ---- */

/* KL(a || b) over the support of a; +inf where b = 0 < a. */
static double kl_float(const float *a, const float *b, int V) {
    double d = 0;
    for (int v = 0; v < V; v++) {
        if (!(a[v] > 0)) continue;
        if (!(b[v] > 0)) return INFINITY;
        d += (double)a[v] * log((double)a[v] / b[v]);
    }
    return d;
}

double fsd_divergence_value(const float *p, const float *q, int V, int kind) {
    double d = 0;
    switch (kind) {
    case FSD_KL: d = kl_float(p, q, V); break;
    case FSD_JS:
        for (int v = 0; v < V; v++) {
            double m = 0.5 * ((double)p[v] + q[v]);
            if (p[v] > 0) d += 0.5 * p[v] * log(p[v] / m);
            if (q[v] > 0) d += 0.5 * q[v] * log(q[v] / m);
        }
        break;
    default: /* FSD_TV */
        for (int v = 0; v < V; v++) d += 0.5 * fabs((double)p[v] - q[v]);
        break;
    }
    return d > 0 ? d : 0; /* rounding below 0 */
}

int fsd_accepts_outright(const float *p, const float *q, int V, int kind, double threshold) {
    return fsd_divergence_value(p, q, V, kind) <= threshold;
}

void fsd_next_token_law(const float *p, const float *q, int V, int kind, double threshold, double *out) {
    if (fsd_accepts_outright(p, q, V, kind, threshold)) {
        for (int v = 0; v < V; v++) out[v] = q[v];
    } else {
        sd_next_token_law(p, q, V, out);
    }
}

/* ---- optimal-lossy ---- */

typedef struct RatioTok {
    double t, p, q, index; /* t = q/p (p > 0), normalised p and q, the vocab index */
} RatioTok;

static int by_ratio(const void *x, const void *y) {
    double a = ((const RatioTok *)x)->t, b = ((const RatioTok *)y)->t;
    return (a > b) - (a < b);
}

/* The tokens of p's support sorted by q/p, with prefix sums P[k] = sum_{i<k} p_i, Q[k] likewise. */
typedef struct Ratios {
    RatioTok *tok;
    double *P, *Q;
    int n;
} Ratios;

/* b(a) of the family r_a (see the top of the file): sum_i p_i clamp(t_i, b, a) = 1, b in [0, 1]. */
static double solve_b(const Ratios *R, double a, int *J_out) {
    int n = R->n, J = 0;
    /* J = #{t_i < a} */
    int lo = 0, hi = n;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (R->tok[mid].t < a) lo = mid + 1;
        else hi = mid;
    }
    J = lo;
    *J_out = J;
    double T = 1.0 - a * (R->P[n] - R->P[J]); /* what the tokens below a must sum to */
    double QJ = R->Q[J];
    /* g(b) = sum_{i<J} max(q_i, b p_i) = b P[k] + QJ - Q[k] for b in [t_{k-1}, t_k] */
    int k = 0;
    while (k < J && R->tok[k].t * R->P[k] + QJ - R->Q[k] < T) k++;
    double b = R->P[k] > 0 ? (T - (QJ - R->Q[k])) / R->P[k] : 0.0;
    double b_lo = k > 0 ? R->tok[k - 1].t : 0.0, b_hi = k < J ? R->tok[k].t : 1.0;
    if (b < b_lo) b = b_lo;
    if (b > b_hi) b = b_hi;
    return b > 1.0 ? 1.0 : b;
}

/* KL(r_a || p) of the family member a (b from solve_b); its law into r (vocab order) when r != NULL. */
static double family_member(const Ratios *R, double a, double *r) {
    int J;
    double b = solve_b(R, a, &J), kl = 0;
    for (int i = 0; i < R->n; i++) {
        const RatioTok *x = &R->tok[i];
        double c = i < J ? fmax(x->t, b) : a; /* r_i / p_i */
        if (c > 0) kl += x->p * c * log(c);
        if (r) r[(int)x->index] = x->p * c;
    }
    return kl;
}

void optimal_lossy_law(const float *p, const float *q, int V, double D, double *work, double *r) {
    double psum = 0, qsum = 0;
    for (int v = 0; v < V; v++) psum += p[v], qsum += q[v];
    for (int v = 0; v < V; v++) r[v] = p[v] / psum;
    if (!(D > 0) || !(qsum > 0)) return;
    Ratios R = {(RatioTok *)work, work + 4 * (size_t)V, work + 5 * (size_t)V + 1, 0};
    for (int v = 0; v < V; v++)
        if (p[v] > 0) R.tok[R.n++] = (RatioTok){(q[v] / qsum) / (p[v] / psum), p[v] / psum, q[v] / qsum, v};
    qsort(R.tok, (size_t)R.n, sizeof *R.tok, by_ratio);
    R.P[0] = R.Q[0] = 0;
    for (int i = 0; i < R.n; i++) R.P[i + 1] = R.P[i] + R.tok[i].p, R.Q[i + 1] = R.Q[i] + R.tok[i].q;
    double a_max = R.n ? R.tok[R.n - 1].t : 1.0;
    if (!(a_max > 1.0)) return; /* q <= p on p's support: min(q, p) = q already, r = p */
    double lo = 0, hi = log(a_max); /* log a; KL(r_lo || p) <= D throughout */
    if (family_member(&R, a_max, NULL) <= D) lo = hi;
    else
        for (int it = 0; it < 200 && hi - lo > 1e-15 * (1 + hi); it++) {
            double mid = 0.5 * (lo + hi);
            if (family_member(&R, exp(mid), NULL) <= D) lo = mid;
            else hi = mid;
        }
    for (int v = 0; v < V; v++) r[v] = 0;
    family_member(&R, exp(lo), r);
    double rsum = 0; /* b(a) is exact up to rounding (~1e-12 at large a): renormalise */
    for (int v = 0; v < V; v++) rsum += r[v];
    for (int v = 0; v < V; v++) r[v] /= rsum;
}

void optimal_lossy_next_token_law(const float *p, const float *q, int V, double D, double *work, double *out) {
    float *rf = malloc((size_t)V * sizeof *rf);
    if (!rf) {
        for (int v = 0; v < V; v++) out[v] = NAN;
        return;
    }
    sd_next_token_law(optimal_lossy_row(p, q, V, D, work, out, rf), q, V, out);
    free(rf);
}

const float *optimal_lossy_row(const float *p, const float *q, int V, double D, double *work, double *r, float *rf) {
    if (!(D > 0)) return p; /* r = p exactly, SD's own arithmetic */
    optimal_lossy_law(p, q, V, D, work, r);
    for (int v = 0; v < V; v++) rf[v] = (float)r[v];
    return rf;
}
