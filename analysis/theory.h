/* theory.h - the SPRINTER paper's predictions, as functions of the verifier's operating point.
 *
 * Model (Thm 3.3): the draft proposes tokens whose true labels are: the first r acceptable, every
 * later one unacceptable; the verifier accepts an acceptable token with prob eta_TP and an
 * unacceptable one with prob eta_FP, independently. N = verifier accepts before the first reject
 * (i.e. tokens emitted before the target is invoked). Then
 *     P(N >= k) = eta_TP^k                      for k <= r,
 *               = eta_TP^r eta_FP^(k - r)       for k > r,
 *     E[N]      = (eta_TP - eta_TP^r)/(1 - eta_TP) + eta_TP^r/(1 - eta_FP)
 *               (= sum_k P(N >= k); equal to the paper's expression).
 * With a cap c on N (max_run, or the tokens left before max_new), E[min(N, c)] = sum_{k<=c} P(N >= k).
 * Thm 3.1: p_SPRINTER = (1 - eta_FP) p + eta_FP q, so d_TV(p, p_SPRINTER) = eta_FP d_TV(p, q). */
#ifndef SP_THEORY_H
#define SP_THEORY_H

/* P(N >= k) under the model above. */
double thm33_tail(double eta_tp, double eta_fp, int r, int k);
/* E[N] (cap <= 0: uncapped; the paper's closed form) or E[min(N, cap)]. eta_fp must be < 1 when
 * uncapped. */
double thm33_expected_n(double eta_tp, double eta_fp, int r, int cap);
/* E[N] averaged over an empirical distribution of r: weight[r] for r = 0..max_r. */
double thm33_expected_n_mix(double eta_tp, double eta_fp, const double *weight, int max_r, int cap);

#endif
