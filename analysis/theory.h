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
 * Thm 3.1: p_SPRINTER = (1 - eta_FP) p + eta_FP q, so d_TV(p, p_SPRINTER) = eta_FP d_TV(p, q).
 * Theorem 3.2 is not modelled here: the paper's body is not reachable from this harness and the
 * public review it checks names only Theorems 3.1, 3.3 and 3.4, so what 3.2 states is not known. */
#ifndef SP_THEORY_H
#define SP_THEORY_H

/* P(N >= k) under the model above. */
double thm33_tail(double eta_tp, double eta_fp, int r, int k);
/* E[N] (cap <= 0: uncapped; the paper's closed form) or E[min(N, cap)]. eta_fp must be < 1 when
 * uncapped. */
double thm33_expected_n(double eta_tp, double eta_fp, int r, int cap);
/* E[N] averaged over an empirical distribution of r: weight[r] for r = 0..max_r. */
double thm33_expected_n_mix(double eta_tp, double eta_fp, const double *weight, int max_r, int cap);

/* ---- label processes beyond the paper's model ----
 * The tokens a draft proposes within one block (between two target calls) carry labels
 * L_1, L_2, ... (1 acceptable, 0 not). The theorems' verifier accepts token j with probability
 * eta_TP or eta_FP by L_j, independently of everything else; then P(N >= k) = E[prod_{j<=k} eta_{L_j}].
 * The paper's label model is "L = 1^r 0 0 0 ...". The harness also uses a two-state Markov chain
 * for L, estimated from audited labels: */
typedef struct LabelChain {
    double pi1; /* P(L_1 = 1): the block's first drafted token is acceptable */
    double t11; /* P(L_{j+1} = 1 | L_j = 1) */
    double t01; /* P(L_{j+1} = 1 | L_j = 0); the paper's model has t01 = 0 */
} LabelChain;

/* S[k] = P(N >= k) for k = 0..kmax under an i.i.d. verifier on chain-c labels (S[0] = 1). */
void thm33_chain_tail(double eta_tp, double eta_fp, const LabelChain *c, int kmax, double *S);
/* S[k] = P(N >= k) for k = 0..kmax under the paper's model with r ~ weight[0..max_r] (normalised
 * here; all zero gives NaN). */
void thm33_mix_tail(double eta_tp, double eta_fp, const double *weight, int max_r, int kmax, double *S);
/* E[min(N, cap)] = sum_{k=1..cap} S[k] for a tail S[0..cap]. */
double tail_capped_mean(const double *S, int cap);

/* ---- false accepts: the verifier's overshoot (Figs. 5-6's design claims) ----
 * FA = the accepted tokens of a block whose label is unacceptable (the verifier's false accepts
 * among its N accepts; the token log has the label of every decision). Under the paper's labels
 * 1^r 0 0 ... (r = acceptable tokens before the first unacceptable one) FA = max(N - r, 0), the
 * overshoot past r, and
 *     E[FA] = sum_{k>r} P(N >= k) = eta_TP^r eta_FP / (1 - eta_FP)   (= E[N](eta_FP) - E[N](0)),
 * at most eta_FP / (1 - eta_FP) <= 1 while eta_FP <= 1/2 ("gap <= 1 token"; each false accept costs
 * one draft step, so the time gap is <= one step's cost then). With a cap c on N,
 * E[FA among the first min(N, c) tokens] = sum_{k=1..c} F[k], F[k] = P(N >= k, L_k = 0). */
/* The closed form eta_TP^r eta_FP / (1 - eta_FP) (INFINITY when eta_FP >= 1 and eta_TP^r > 0). */
double thm33_overshoot(double eta_tp, double eta_fp, int r);
/* F[k] = P(N >= k, L_k = 0), k = 0..kmax (F[0] = 0), under the i.i.d. verifier on chain-c labels. */
void thm33_chain_fa(double eta_tp, double eta_fp, const LabelChain *c, int kmax, double *F);
/* The same under the paper's model with r ~ weight[0..max_r] (normalised here; all zero gives NaN). */
void thm33_mix_fa(double eta_tp, double eta_fp, const double *weight, int max_r, int kmax, double *F);

/* ---- Thm 3.4 (the harness's reading; the paper's text is not available here) ----
 * Stopping time T = draft steps (verifier decisions) per target call = N + 1: the N accepted
 * tokens and the one the verifier rejects (or the one after max_run accepts), which the target
 * then decides. With caps, a block that starts with `left` tokens still to generate has
 *   T = min(N, max_run) + 1                       when 0 < max_run < left,
 *   T = min(N, left) + [N < left]                 otherwise (the run may end the generation).
 * S must reach index min(left, kmax); left > kmax is treated as left = kmax. */
double thm34_block_steps(const double *S, int kmax, int max_run, int left);
/* Expected latency per emitted token (renewal-reward): every block costs T draft forwards and
 * verifier evaluations and one target call. Without a bonus it emits T tokens (the N accepted ones
 * and the one the target decides); with the authors' bonus (bonus = 1: after the target accepts the
 * draft it decides, it emits one more token of its own, free) it emits T + B, B = [the target
 * accepted the tested draft], so
 *   latency = (E[T](c_draft + c_verifier) + c_target) / (E[T] + E[B]),
 * which is c_draft + c_verifier + c_target / E[T] when E[B] = 0. c_* are the measured seconds per
 * draft forward, verifier evaluation and target call, E[T] the predicted mean stopping time (E[N] + 1
 * uncapped; thm34_block_steps with caps), E[B] the share of target calls followed by a bonus token
 * (the theorems do not predict it: it is the target's acceptance of the tested draft). NaN unless
 * e_t > 0. */
double thm34_latency(double e_t, double e_b, double c_draft, double c_verifier, double c_target);

#endif
