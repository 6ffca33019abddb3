/* dtvlog.h - the output file of `sprinter dtv` (format "sprinter-dtv", one row per prefix): its
 * columns, defined once for the writer (experiments/dtv.c) and the reader (analysis/dtvread.c).
 * Attributes (settings, hashes, global rates and means) are listed in experiments/dtv.h. */
#ifndef SP_DTVLOG_H
#define SP_DTVLOG_H

#include "h5util.h"

#define DTVLOG_FORMAT "sprinter-dtv"
/* 1: sprinter only. 2: attributes method, params, judge, judge_sha256; methods typical, fsd,
 * optimal-lossy, judge (the SPRINTER columns NaN for them). The columns are version 1's. */
#define DTVLOG_VERSION 2

/* X(name, units, description): the int32 columns, then the float64 ones, in file order. */
#define DTVLOG_INT_COLUMNS(X) \
    X(prefix_index, NULL, "row number; the prefix's RNG is prompt_seed(seed, prefix_index)") \
    X(prompt_index, NULL, "index of the prompt in the dataset file") \
    X(n_prefix, "tokens", "prefix length: prompt (kept last tokens) + continuation") \
    X(n_continued, "tokens", "tokens sampled from the target after the prompt") \
    X(n_accepted, "tokens", "vocabulary tokens v the method's rule keeps outright if drafted: sprinter a(v) = 1, typical p(v) > threshold, fsd V or 0, judge j(v) = 1; -1 for optimal-lossy")

#define DTVLOG_REAL_COLUMNS(X) \
    X(dtv_pq, NULL, "d_TV(p, q): target vs draft next-token law") \
    X(dtv_p_ps, NULL, "exact d_TV(p, p_method) of the first token (p_method: the law of attribute method's first token)") \
    X(dtv_q_ps, NULL, "exact d_TV(q, p_method)") \
    X(accept_mass, "probability", "P(the drafted token is kept without replacement): sprinter sum_v q(v) a(v) (the verifier accepts), typical sum q [p > threshold], fsd 1 or sum q min(1, p/q), optimal-lossy sum min(q, r), judge sum q [m + (1 - m) j]") \
    X(q_unacc, "probability", "sum of q over unacceptable tokens (q(v) > lambda p(v)); this and the columns up to oracle_dtv_l1: sprinter only, NaN for other methods") \
    X(fp_mass, "probability", "sum of q a over unacceptable tokens") \
    X(tp_mass, "probability", "sum of q a over acceptable tokens") \
    X(eta_fp, NULL, "eta_FP at this prefix: fp_mass / q_unacc (NaN if q_unacc = 0)") \
    X(eta_tp, NULL, "eta_TP at this prefix: tp_mass / (1 - q_unacc)") \
    X(eta_excess, NULL, "sum_{q>p} a (q - p) / d_TV(p, q); d_TV(p, p_SPRINTER) = eta_excess d_TV(p, q) exactly") \
    X(pred_local, NULL, "Thm 3.1 prediction with this prefix's eta_FP: eta_fp * dtv_pq") \
    X(pred_global, NULL, "Thm 3.1 prediction with the global eta_FP (attribute eta_fp_global) * dtv_pq") \
    X(oracle_dtv, NULL, "exact d_TV(p, p_oracle) at lambda, oracle rates oracle_eta_fp / oracle_eta_tp") \
    X(oracle_pred, NULL, "Thm 3.1 for the oracle: oracle_eta_fp * dtv_pq") \
    X(oracle_dtv_l1, NULL, "exact d_TV(p, p_oracle) at lambda = 1 (equals oracle_pred: Thm 3.1)") \
    X(emp_accept, "probability", "share of the M decoder draws whose token the verifier accepted (other methods: whose drafted token was kept)") \
    X(emp_dtv_naive, NULL, "plug-in d_TV(p, empirical law of M first tokens) (biased upward)") \
    X(emp_dtv_bc, NULL, "bootstrap bias-corrected: max(0, 2 naive - mean_b d_TV(p, resample_b))") \
    X(emp_noise_floor, NULL, "mean_b d_TV(p, empirical law of M draws from p): naive's reading at 0") \
    X(emp_chisq_p, NULL, "chi-square p-value of the M first tokens against the exact law (p_method)") \
    X(emp_dtv_unbiased, NULL, "mean over the M draws of decision * max(0, 1 - p(x)/q(x)) at the drafted token x: unbiased for dtv_p_ps (sprinter only)") \
    X(emp_dtv_unbiased_se, NULL, "standard error of emp_dtv_unbiased (sample sd / sqrt(M))")

#define DTVLOG_ENUM(name, units, doc) DTV_##name,
enum { DTVLOG_INT_COLUMNS(DTVLOG_ENUM) DTV_N_INT };
enum { DTVLOG_REAL_COLUMNS(DTVLOG_ENUM) DTV_N_REAL };
#undef DTVLOG_ENUM
#define DTVLOG_N_COLS (DTV_N_INT + DTV_N_REAL)

/* Names, types, units and descriptions in file order: int column i at i, real column j at DTV_N_INT + j. */
const H5ColSpec *dtvlog_columns(void);
/* The params attribute a version-1 file (sprinter only, no such attribute) stands for: the label
 * (records/params.h run_params_format) of sprinter's parameters (params_table.h method_params) at
 * their defaults, lambda and tau the file's: "lambda=1 tau=0.5 max_run=0", what a version-2 file of
 * the same run writes. */
void dtvlog_v1_params(double lambda, double tau, char *buf, int cap);
/* The name of real column j (DTV_dtv_pq, ...). */
const char *dtvlog_real_name(int j);

#endif
