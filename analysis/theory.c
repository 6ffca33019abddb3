#include "theory.h"

#include <math.h>

double thm33_tail(double eta_tp, double eta_fp, int r, int k) {
    if (k <= 0) return 1.0;
    if (k <= r) return pow(eta_tp, k);
    return pow(eta_tp, r) * pow(eta_fp, k - r);
}

double thm33_expected_n(double eta_tp, double eta_fp, int r, int cap) {
    if (cap > 0) {
        double s = 0;
        for (int k = 1; k <= cap; k++) s += thm33_tail(eta_tp, eta_fp, r, k);
        return s;
    }
    double head = eta_tp < 1 ? (eta_tp - pow(eta_tp, r)) / (1 - eta_tp) : (double)(r - 1);
    return head + pow(eta_tp, r) / (1 - eta_fp);
}

double thm33_expected_n_mix(double eta_tp, double eta_fp, const double *weight, int max_r, int cap) {
    double s = 0, w = 0;
    for (int r = 0; r <= max_r; r++) {
        if (!(weight[r] > 0)) continue;
        s += weight[r] * thm33_expected_n(eta_tp, eta_fp, r, cap);
        w += weight[r];
    }
    return w > 0 ? s / w : NAN;
}

void thm33_chain_tail(double eta_tp, double eta_fp, const LabelChain *c, int kmax, double *S) {
    S[0] = 1;
    if (kmax < 1) return;
    double f1 = c->pi1 * eta_tp, f0 = (1 - c->pi1) * eta_fp; /* P(D_1..D_k = 1, L_k = l) */
    S[1] = f1 + f0;
    for (int k = 2; k <= kmax; k++) {
        double n1 = (f1 * c->t11 + f0 * c->t01) * eta_tp;
        double n0 = (f1 * (1 - c->t11) + f0 * (1 - c->t01)) * eta_fp;
        f1 = n1, f0 = n0;
        S[k] = f1 + f0;
    }
}

void thm33_mix_tail(double eta_tp, double eta_fp, const double *weight, int max_r, int kmax, double *S) {
    double w = 0;
    for (int r = 0; r <= max_r; r++) w += weight[r] > 0 ? weight[r] : 0;
    for (int k = 0; k <= kmax; k++) {
        double s = 0;
        for (int r = 0; r <= max_r; r++)
            if (weight[r] > 0) s += weight[r] * thm33_tail(eta_tp, eta_fp, r, k);
        S[k] = w > 0 ? s / w : NAN;
    }
}

double tail_capped_mean(const double *S, int cap) {
    double s = 0;
    for (int k = 1; k <= cap; k++) s += S[k];
    return s;
}

double thm34_block_steps(const double *S, int kmax, int max_run, int left) {
    if (left > kmax) left = kmax;
    if (max_run > 0 && max_run < left) return tail_capped_mean(S, max_run) + 1;
    return tail_capped_mean(S, left) + (1 - S[left]);
}

double thm34_latency(double e_t, double e_b, double c_draft, double c_verifier, double c_target) {
    return e_t > 0 && e_b >= 0 ? (e_t * (c_draft + c_verifier) + c_target) / (e_t + e_b) : NAN;
}

double thm33_overshoot(double eta_tp, double eta_fp, int r) {
    double h = pow(eta_tp, r);
    if (eta_fp >= 1) return h > 0 ? INFINITY : 0;
    return h * eta_fp / (1 - eta_fp);
}

void thm33_chain_fa(double eta_tp, double eta_fp, const LabelChain *c, int kmax, double *F) {
    F[0] = 0;
    double f1 = c->pi1 * eta_tp, f0 = (1 - c->pi1) * eta_fp; /* P(D_1..D_k = 1, L_k = l) */
    for (int k = 1; k <= kmax; k++) {
        F[k] = f0;
        double n1 = (f1 * c->t11 + f0 * c->t01) * eta_tp;
        double n0 = (f1 * (1 - c->t11) + f0 * (1 - c->t01)) * eta_fp;
        f1 = n1, f0 = n0;
    }
}

void thm33_mix_fa(double eta_tp, double eta_fp, const double *weight, int max_r, int kmax, double *F) {
    double w = 0;
    for (int k = 0; k <= kmax; k++) F[k] = 0;
    for (int r = 0; r <= max_r; r++) {
        if (!(weight[r] > 0)) continue;
        w += weight[r];
        double t = weight[r] * pow(eta_tp, r); /* P(N >= k, L_k = 0 | r) = eta_TP^r eta_FP^(k - r), k > r */
        for (int k = r + 1; k <= kmax; k++) F[k] += t *= eta_fp;
    }
    for (int k = 1; k <= kmax; k++) F[k] = w > 0 ? F[k] / w : NAN;
}
