/* test_lossy.c - optimal-lossy's solver (engine/decode/lossy_law.c optimal_lossy_law) and the lossy
 * laws' arithmetic, without models (the laws against sampled tokens are test_decoding's).
 *
 * optimal_lossy_law(p, q, D) must return r = argmax_r sum_x min(q(x), r(x)) s.t. KL(r || p) <= D:
 *   - D = 0: r == p (normalised) exactly;
 *   - every D: r is a distribution (sum 1 within 1e-12, r >= 0, r = 0 where p = 0) and
 *     KL(r || p) <= D + 1e-9;
 *   - the acceptance A(r) = sum min(q, r) is non-decreasing in D, and the constraint is active
 *     (KL(r || p) within 1e-6 of D) unless A(r) is already the most any r on p's support reaches;
 *   - brute force, V = 3, 4, 5: a grid over the simplex (steps 1/600, 1/120, 1/40) plus a random
 *     local refinement around the best feasible point, plus the mixtures (1 - s) p + s q, must not
 *     find a feasible r with A(r) above the solver's by more than 1e-7 (and, so that the search is a
 *     real check, its best comes within 0.01 of the solver's).
 * Also: the typical law at a threshold that accepts nothing is p and at eps = 0 is q; fsd's law at a
 * threshold above D(p, q) is q; sd_next_token_law(p, q) is p; the divergences on a known pair.
 * Deterministic (fixed seeds). usage: test_lossy */
#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decoding.h"

#include "check.h"

enum { VMAX = 96 };

static double kl_rp(const double *r, const double *p, int V) {
    double d = 0;
    for (int v = 0; v < V; v++)
        if (r[v] > 0) d += p[v] > 0 ? r[v] * log(r[v] / p[v]) : INFINITY;
    return d;
}

static double acceptance(const double *q, const double *r, int V) {
    double a = 0;
    for (int v = 0; v < V; v++) a += fmin(q[v], r[v]);
    return a;
}

/* A random distribution (Dirichlet(1) to the power `peak`, renormalised), float. */
static void random_dist(gsl_rng *rng, int V, double peak, float *out) {
    double s = 0, x[VMAX];
    for (int v = 0; v < V; v++) x[v] = pow(-log(1 - gsl_rng_uniform(rng)), peak), s += x[v];
    for (int v = 0; v < V; v++) out[v] = (float)(x[v] / s);
}

static void normalised(const float *a, int V, double *out) {
    double s = 0;
    for (int v = 0; v < V; v++) s += a[v];
    for (int v = 0; v < V; v++) out[v] = a[v] / s;
}

/* The solver's properties on one (p, q) over a list of D. */
static int solver_props(const float *p, const float *q, int V, const char *what) {
    static const double Ds[] = {0, 1e-4, 1e-3, 0.01, 0.03, 0.1, 0.3, 1, 3, 10, 100};
    double work[OPTIMAL_LOSSY_WORK(VMAX)], r[VMAX], ph[VMAX], qh[VMAX];
    normalised(p, V, ph);
    normalised(q, V, qh);
    double a_max = 0; /* the most acceptance any r on p's support reaches: q's mass there */
    for (int v = 0; v < V; v++) a_max += ph[v] > 0 ? qh[v] : 0;
    double prev = -1;
    int ok = 1;
    for (size_t k = 0; k < sizeof Ds / sizeof *Ds; k++) {
        double D = Ds[k];
        optimal_lossy_law(p, q, V, D, work, r);
        double sum = 0, kl = kl_rp(r, ph, V), acc = acceptance(qh, r, V);
        int nonneg = 1, support = 1;
        for (int v = 0; v < V; v++) sum += r[v], nonneg &= r[v] >= 0, support &= ph[v] > 0 || r[v] == 0;
        if (D == 0) ok &= check(memcmp(r, ph, (size_t)V * sizeof *r) == 0, "%s: D = 0 gives r == p exactly", what);
        ok &= check(fabs(sum - 1) < 1e-12 && nonneg && support && kl <= D + 1e-9 && acc >= prev - 1e-12,
                    "%s D = %g: r a distribution on p's support (sum - 1 = %.1e), KL(r||p) = %.9g <= D, "
                    "acceptance %.6f >= %.6f (sd: %.6f)",
                    what, D, sum - 1, kl, acc, prev, acceptance(qh, ph, V));
        if (D > 0 && acc < a_max - 1e-9)
            ok &= check(fabs(kl - D) < 1e-6 * (1 + D), "%s D = %g: constraint active (KL %.9g)", what, D, kl);
        prev = acc;
    }
    return ok;
}

/* Brute force on the simplex for V <= 5: grid of step 1/N plus a local random refinement plus
 * the mixture family; returns the best feasible acceptance. */
static double brute_best(const double *ph, const double *qh, int V, double D, int N, gsl_rng *rng) {
    double best = -1, bestr[5], r[5];
    int idx[5] = {0};
    /* enumerate compositions of N into V parts */
    for (;;) {
        int used = 0;
        for (int v = 0; v < V - 1; v++) used += idx[v];
        if (used <= N) {
            for (int v = 0; v < V - 1; v++) r[v] = (double)idx[v] / N;
            r[V - 1] = (double)(N - used) / N;
            if (kl_rp(r, ph, V) <= D) {
                double a = acceptance(qh, r, V);
                if (a > best) best = a, memcpy(bestr, r, sizeof r);
            }
        }
        int v = 0;
        while (v < V - 1 && ++idx[v] > N) idx[v++] = 0;
        if (v == V - 1) break;
    }
    for (int i = 0; i <= 20000; i++) { /* mixtures (1 - s) p + s q */
        double s = i / 20000.0;
        for (int v = 0; v < V; v++) r[v] = (1 - s) * ph[v] + s * qh[v];
        if (kl_rp(r, ph, V) <= D) {
            double a = acceptance(qh, r, V);
            if (a > best) best = a, memcpy(bestr, r, sizeof r);
        }
    }
    if (best < 0) return best;
    for (int it = 0; it < 200000; it++) { /* local refinement */
        double scale = 0.05 * pow(1e-4, it / 200000.0), s = 0;
        for (int v = 0; v < V; v++) {
            r[v] = ph[v] > 0 ? fmax(0, bestr[v] + scale * (gsl_rng_uniform(rng) - 0.5)) : 0;
            s += r[v];
        }
        for (int v = 0; v < V; v++) r[v] /= s;
        if (kl_rp(r, ph, V) <= D) {
            double a = acceptance(qh, r, V);
            if (a > best) best = a, memcpy(bestr, r, sizeof r);
        }
    }
    return best;
}

static void test_brute_force(gsl_rng *rng) {
    static const int grid[6] = {0, 0, 0, 600, 120, 40};
    static const double Ds[] = {0.01, 0.1, 0.5};
    double work[OPTIMAL_LOSSY_WORK(VMAX)], r[VMAX], ph[VMAX], qh[VMAX];
    double worst_excess = -1, worst_gap = 0;
    int n = 0, ok = 1;
    for (int V = 3; V <= 5; V++)
        for (int inst = 0; inst < 3; inst++) {
            float p[5], q[5];
            random_dist(rng, V, inst == 2 ? 3.0 : 1.0, p);
            random_dist(rng, V, 1.0, q);
            if (inst == 1) { /* q has mass where p has none */
                p[0] = 0;
                double s = 0;
                for (int v = 0; v < V; v++) s += p[v];
                for (int v = 0; v < V; v++) p[v] = (float)(p[v] / s);
            }
            normalised(p, V, ph);
            normalised(q, V, qh);
            for (size_t k = 0; k < sizeof Ds / sizeof *Ds; k++) {
                optimal_lossy_law(p, q, V, Ds[k], work, r);
                double mine = acceptance(qh, r, V), brute = brute_best(ph, qh, V, Ds[k], grid[V], rng);
                int this_ok = brute <= mine + 1e-7 && brute >= mine - 0.01;
                if (!this_ok)
                    printf("  V %d instance %d D %g: solver %.9f, brute force %.9f\n", V, inst, Ds[k], mine, brute);
                ok &= this_ok;
                if (brute - mine > worst_excess) worst_excess = brute - mine;
                if (mine - brute > worst_gap) worst_gap = mine - brute;
                n++;
            }
        }
    check(ok, "brute force (V = 3..5, %d cases): no feasible r beats the solver by > 1e-7 (largest excess %.2e), "
              "and the search comes within 0.01 (largest shortfall %.2e)",
          n, worst_excess, worst_gap);
}

static void test_laws_arithmetic(gsl_rng *rng) {
    enum { V = 8 };
    float p[V], q[V];
    double law[V], ph[V], qh[V];
    random_dist(rng, V, 1.5, p);
    random_dist(rng, V, 1.5, q);
    normalised(p, V, ph);
    normalised(q, V, qh);
    double maxd = 0;
    sd_next_token_law(p, q, V, law);
    for (int v = 0; v < V; v++) maxd = fmax(maxd, fabs(law[v] - ph[v]));
    check(maxd < 1e-7, "sd_next_token_law(p, q) == p (max |diff| %.1e)", maxd);
    typical_next_token_law(p, q, V, 1.0, 1e9, law);
    maxd = 0;
    for (int v = 0; v < V; v++) maxd = fmax(maxd, fabs(law[v] - ph[v]));
    check(maxd < 1e-7, "typical with eps 1, alpha 1e9 (accepts nothing): law p (max |diff| %.1e)", maxd);
    typical_next_token_law(p, q, V, 0.0, 0.3, law);
    maxd = 0;
    for (int v = 0; v < V; v++) maxd = fmax(maxd, fabs(law[v] - qh[v]));
    check(maxd < 1e-7, "typical with eps 0 (accepts every x with p(x) > 0): law q (max |diff| %.1e)", maxd);
    double H = entropy_nats(p, V), thr = typical_threshold(p, V, 0.09, 0.3);
    check(fabs(thr - fmin(0.09, 0.3 * exp(-H))) < 1e-15, "typical threshold min(eps, alpha e^-H) = %.6f", thr);
    double kl = fsd_divergence_value(p, q, V, FSD_KL), js = fsd_divergence_value(p, q, V, FSD_JS),
           tv = fsd_divergence_value(p, q, V, FSD_TV), kl_ref = 0, tv_ref = 0;
    for (int v = 0; v < V; v++) kl_ref += ph[v] * log(ph[v] / qh[v]), tv_ref += 0.5 * fabs(ph[v] - qh[v]);
    check(fabs(kl - kl_ref) < 1e-6 && fabs(tv - tv_ref) < 1e-6 && js > 0 && js <= log(2) && js <= tv * log(2) + 1e-12,
          "divergences: KL %.6f, JS %.6f (<= TV ln 2), TV %.6f", kl, js, tv);
    fsd_next_token_law(p, q, V, FSD_JS, js * 1.001, law);
    maxd = 0;
    for (int v = 0; v < V; v++) maxd = fmax(maxd, fabs(law[v] - q[v]));
    check(maxd == 0, "fsd at threshold > D: law q");
    fsd_next_token_law(p, q, V, FSD_JS, js * 0.999, law);
    maxd = 0;
    for (int v = 0; v < V; v++) maxd = fmax(maxd, fabs(law[v] - ph[v]));
    check(maxd < 1e-7, "fsd at threshold < D: law p (max |diff| %.1e)", maxd);
    float same[V];
    memcpy(same, p, sizeof same);
    check(fsd_divergence_value(p, same, V, FSD_KL) == 0 && fsd_divergence_value(p, same, V, FSD_JS) == 0 &&
              fsd_divergence_value(p, same, V, FSD_TV) == 0,
          "D(p, p) == 0 for kl, js, tv");
}

int main(void) {
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 12345);
    char what[64];
    int ok = 1;
    check_tally.quiet = 1;
    for (int t = 0; t < 40; t++) {
        int V = t < 30 ? 3 + t % 5 : VMAX;
        float p[VMAX], q[VMAX];
        random_dist(rng, V, t % 3 ? 2.0 : 1.0, p);
        random_dist(rng, V, t % 2 ? 2.0 : 0.7, q);
        if (t % 4 == 3) p[t % V] = 0, q[(t + 1) % V] = 0; /* zeros in either support */
        snprintf(what, sizeof what, "instance %d (V %d)", t, V);
        ok &= solver_props(p, q, V, what);
    }
    check_tally.quiet = 0;
    check(ok, "optimal-lossy solver on 40 random (p, q), V 3..7 and 96, D in 0..100: r == p at D = 0, "
              "KL(r||p) <= D + 1e-9, acceptance non-decreasing, constraint active below the maximum");
    test_brute_force(rng);
    test_laws_arithmetic(rng);
    gsl_rng_free(rng);
    return check_summary("lossy");
}
