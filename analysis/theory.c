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
