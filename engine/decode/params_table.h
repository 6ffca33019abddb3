/* params_table.h - the grid parameters of a sweep (the decoding parameters a [grid] may list), defined
 * ONCE, in the table below. Header-only (no code to link), so records/ and analysis/ may include it.
 *
 * Everything about a parameter is generated from its row:
 *   RunParam           RP_<ID>, in table order (engine/decode/params_table.h, this file)
 *   DecodeConfig       its field <name> of C type <type> (decoding.h)
 *   decode_config_default / decode_config_check   its default and its range (decoding.c)
 *   run_param_check    the one range check; every CLI option (cli/args.c arg_param), the spec's
 *                      [grid] and [verifier] tau (experiments/spec.c), dtv (experiments/dtv.c) and
 *                      the engine (decode_config_check) take the range from the row
 *   method_params      which methods use it (the grid expands it only for them)
 *   [grid] <name>      the spec's INI key; its values' range and whole-number rule
 *   run hash           the canonical text "name %.17g" line, in table order (experiments/spec.c)
 *   labels             "name=value" (records/params.c run_params_format)
 *   runs.<name>        the results database column, INTEGER for int, REAL for double, NULL where it
 *                      does not apply (records/schema.h RUNS_COLUMNS)
 *   RunInfo.<name>     the analysis' field (analysis/runsdb.h)
 *
 * Adding a parameter = ONE row at the end of RUN_PARAMS_ADDED below (the one place to edit), plus
 * what the database needs: DB_SCHEMA_VERSION raised to the row's `since` in records/schema.h (a
 * static assertion there fails until it is; say what the version adds in the version list above it)
 * and the column's row in results/README.md (tests/check_schema_doc.py checks it). Rows go at the END:
 * table order is the order of the run's canonical text, so earlier rows keep their place and every
 * old run its hash. A parameter that applies to methods that existed before must default to 0 and
 * carry RPF_ZERO_UNNAMED, so that those methods' runs keep their names (hashes). The method's decoding
 * reads cfg-><name>. Optional: a `sprinter decode` option (cli/cmd_decode.c, through arg_param). A NEW
 * METHOD that uses existing parameters adds its RP_M(DM_x) bit to their rows' methods (it has no
 * runs yet, so no hash changes).
 *
 * Row: X(A, ID, name, type, default, lo, hi, flags, methods, since)
 *   A          pass-through (write A): lets records/schema.h expand the rows as runs columns
 *   ID         RunParam RP_<ID>
 *   name       INI key in [grid], DecodeConfig field, runs column, RunInfo field, label key
 *   type       int (whole numbers, SQL INTEGER) or double (SQL REAL): the DecodeConfig field's type
 *   default    decode_config_default's value (also what a run uses when the grid does not list it)
 *   lo, hi     allowed range, inclusive unless a flag opens an end
 *   flags      0 or RPF_LO_OPEN | RPF_HI_OPEN | RPF_ZERO_UNNAMED (a value of 0 is left out of the
 *              canonical text and labels: for parameters whose 0 is the behaviour before they existed)
 *   methods    RP_M(DM_x) | ...: the methods that use it
 *   since      the results-database schema version whose runs table has its column
 */
#ifndef SP_PARAMS_TABLE_H
#define SP_PARAMS_TABLE_H

#include <math.h>
#include <stdio.h>

#include "error.h"
#include "methods.h"
#include "rules.h"

#define RPF_LO_OPEN 1u
#define RPF_HI_OPEN 2u
#define RPF_ZERO_UNNAMED 4u
#define RP_M(m) (1u << (m))
/* SPRINTER's scheme: one draft at a time, verifier accept or target call (methods.h MC_SEQUENTIAL) */
#define RP_SEQUENTIAL (RP_M(DM_SPRINTER) | RP_M(DM_ORACLE_IID) | RP_M(DM_ORACLE_MARKOV))
#define RP_ORACLES (RP_M(DM_ORACLE_IID) | RP_M(DM_ORACLE_MARKOV))
/* the lossy block methods (sd's block, a lossy rule at each drafted token: lossy_law.c) */
#define RP_LOSSY (RP_M(DM_TYPICAL) | RP_M(DM_FSD) | RP_M(DM_OPTIMAL_LOSSY))

/* The parameters whose runs columns schemas 1 to 7 placed (records/schema.h lists those columns by
 * hand, in their historical order). Closed: add nothing here. */
#define RUN_PARAMS_SCHEMA7(X, A)                                                                              \
    /* label threshold for oracle-iid and the audit: acceptable iff q/p <= lambda */                         \
    X(A, LAMBDA, lambda, double, SP_DEFAULT_LAMBDA, 0, 1e9, RPF_LO_OPEN, RP_SEQUENTIAL | RP_M(DM_SPECDECPP), 1) \
    /* sprinter / specdecpp: verifier threshold (accept iff score >= tau) */                                 \
    X(A, TAU, tau, double, SP_DEFAULT_TAU, 0, 1, 0, RP_M(DM_SPRINTER) | RP_M(DM_SPECDECPP), 1)                \
    /* sd / pmin / specdecpp: max draft tokens per target call */                                            \
    X(A, GAMMA, gamma, int, SP_DEFAULT_GAMMA, 1, SP_GAMMA_MAX, 0,                                             \
      RP_M(DM_SD) | RP_M(DM_PMIN) | RP_M(DM_SPECDECPP) | RP_LOSSY | RP_M(DM_JUDGE), 1)                                                    \
    /* sprinter-type: cap on consecutive verifier accepts, 0 = none */                                       \
    X(A, MAX_RUN, max_run, int, 0, 0, 1 << 20, 0, RP_SEQUENTIAL, 1)                                           \
    /* bild: the target samples the token when the draft's top probability < alpha */                       \
    X(A, ALPHA, alpha, double, 0.5, 0, 1, 0, RP_M(DM_BILD), 1)                                                \
    /* pmin: stop drafting when the draft's top probability < p_min */                                       \
    X(A, P_MIN, p_min, double, 0.5, 0, 1, 0, RP_M(DM_PMIN), 1)                                                \
    /* oracle-iid / oracle-markov: accept rates of unacceptable and acceptable tokens */                     \
    X(A, ETA_FP, eta_fp, double, 0.0, 0, 1, 0, RP_ORACLES, 1)                                                 \
    X(A, ETA_TP, eta_tp, double, 1.0, 0, 1, 0, RP_ORACLES, 1)                                                 \
    /* oracle-markov: probability of repeating the class's last decision */                                  \
    X(A, ORACLE_STAY, oracle_stay, double, 0.0, 0, 1, RPF_HI_OPEN, RP_M(DM_ORACLE_MARKOV), 3)                 \
    /* Round structure of the sprinter-type methods (a round = the drafts up to and including the one the   \
     * target decides). Both 0 is the harness's reading of Algorithm 2; both 1 with max_run 19 is what the   \
     * authors' code runs (sprinter.py: at most 20 drafts a round, bonus, ">= 20 tokens").                   \
     * bonus: after the target SD-accepts the token it decides, also emit a bonus token from the same       \
     * target pass (over the drafts and that token) */                                                       \
    X(A, BONUS, bonus, int, 0, 0, 1, RPF_ZERO_UNNAMED, RP_SEQUENTIAL, 6)                                      \
    /* finish_round: max_new is checked only when a round ends: a round that starts below max_new runs to   \
     * its end, so up to max_run + 1 tokens more are emitted (needs max_run >= 1); eos still stops at once */ \
    X(A, FINISH_ROUND, finish_round, int, 0, 0, 1, RPF_ZERO_UNNAMED, RP_SEQUENTIAL, 6)

/* Parameters added after schema 7: their runs columns are appended at the end of the runs table
 * (records/schema.h RUNS_COLUMNS expands this list there). New rows go at the end of this list. */
#define RUN_PARAMS_ADDED(X, A)                                                                                \
    /* typical (Medusa's typical acceptance, defaults Medusa's): accept drafted x iff                       \
     * p(x) > min(typical_eps, typical_alpha exp(-H(p))), H the entropy (nats) of the target's p there;     \
     * a rejected token is replaced by a draw from p. No value is SD; typical_eps = 1 with typical_alpha    \
     * >= V accepts nothing, so every token comes from p (lossless, ar's law, sd's drafts wasted) */         \
    X(A, TYPICAL_EPS, typical_eps, double, 0.09, 0, 1, 0, RP_M(DM_TYPICAL), 8)                                \
    X(A, TYPICAL_ALPHA, typical_alpha, double, 0.3, 0, 1e9, 0, RP_M(DM_TYPICAL), 8)                           \
    /* fsd (fuzzy speculative decoding): the divergence D(p, q) of the target's p and the draft's q at a    \
     * drafted token, by code: 0 KL(p || q), 1 Jensen-Shannon (natural log, <= ln 2), 2 total variation;    \
     * a draft with D <= fsd_threshold is accepted outright, else by SD's test. fsd_threshold 0 is sd      \
     * (token for token under a seed: D = 0 only where p == q, where SD accepts anyway) */                   \
    X(A, FSD_DIVERGENCE, fsd_divergence, int, 1, 0, 2, 0, RP_M(DM_FSD), 8)                                    \
    X(A, FSD_THRESHOLD, fsd_threshold, double, 0.1, 0, 1e9, 0, RP_M(DM_FSD), 8)                               \
    /* optimal-lossy (mentored decoding): the bound D on KL(r || p) of its output law r at each drafted     \
     * position (lossy_law.c optimal_lossy_law); 0 is sd token for token */                                 \
    X(A, LOSSY_KL, lossy_kl, double, 0.1, 0, 1e9, 0, RP_M(DM_OPTIMAL_LOSSY), 8)                                \
    /* judge: the judge head keeps a drafted token the SD test rejected iff its score >= tau_judge (> 1:      \
     * never, the method is then sd token for token) */                                                      \
    X(A, TAU_JUDGE, tau_judge, double, 0.5, 0, 2, 0, RP_M(DM_JUDGE), 8)                                      \
    /* judge: the judge's label (what its head was trained on and what the audit compares its decisions     \
     * with): drafted x is acceptable iff p(x) >= judge_rho * max_v p(v), p the target's decoding law */     \
    X(A, JUDGE_RHO, judge_rho, double, 0.5, 0, 1, RPF_LO_OPEN, RP_M(DM_JUDGE), 8)

#define RP_CALL_(X, ...) X(__VA_ARGS__)
/* Every row, in table order, as X(ID, name, type, default, lo, hi, flags, methods, since). */
#define RUN_PARAMS(X) RUN_PARAMS_SCHEMA7(RP_CALL_, X) RUN_PARAMS_ADDED(RP_CALL_, X)

/* The grid parameters besides the seed, in the order the grid is expanded and labels and the run's
 * canonical text are written. */
#define RP_ENUM_(ID, ...) RP_##ID,
typedef enum { RUN_PARAMS(RP_ENUM_) RP_COUNT } RunParam;
#undef RP_ENUM_

/* int 1 / double 0; the SQL declaration of the column */
#define RP_INTEGER_int 1
#define RP_INTEGER_double 0
#define RP_SQL_int "INTEGER"
#define RP_SQL_double "REAL"

typedef struct ParamInfo {
    const char *name; /* INI key in [grid], runs column, label key, DecodeConfig / RunInfo field */
    double lo, hi;    /* allowed range, inclusive unless open */
    int integer;      /* values must be whole numbers (stored as INTEGER) */
    int lo_open;      /* lo itself is excluded */
    int hi_open;      /* hi itself is excluded */
    int zero_unnamed; /* a value of 0 is left out of the run's canonical text and of labels: parameters
                       * added later whose 0 is the behaviour before them, so runs keep their names */
    double dflt;      /* decode_config_default's value */
    unsigned methods; /* RP_M(DecodeMethod) bits of the methods that use it */
    int since;        /* schema version that added its runs column */
} ParamInfo;

#define RP_INFO_(ID, name, type, dflt, lo, hi, flags, methods, since)                                        \
    [RP_##ID] = {#name,                                                                                       \
                 lo,                                                                                          \
                 hi,                                                                                          \
                 RP_INTEGER_##type,                                                                           \
                 !!((flags) & RPF_LO_OPEN),                                                                   \
                 !!((flags) & RPF_HI_OPEN),                                                                   \
                 !!((flags) & RPF_ZERO_UNNAMED),                                                              \
                 dflt,                                                                                        \
                 methods,                                                                                     \
                 since},
static const ParamInfo kRunParams[RP_COUNT] = {RUN_PARAMS(RP_INFO_)};
#undef RP_INFO_

/* The row of parameter p (p in [0, RP_COUNT)). */
static inline const ParamInfo *run_param_info(RunParam p) {
    return &kRunParams[((int)p >= 0 && p < RP_COUNT) ? p : 0];
}

/* Bit mask (1u << RunParam) of the parameters method m uses. */
static inline unsigned method_params(DecodeMethod m) {
    unsigned mask = 0;
    if (method_valid(m))
        for (int p = 0; p < RP_COUNT; p++)
            if (kRunParams[p].methods & RP_M(m)) mask |= 1u << p;
    return mask;
}

/* 1 if v is in p's range (NaN is not). Whole numbers are run_param_whole's business. */
static inline int run_param_in_range(RunParam p, double v) {
    const ParamInfo *pi = run_param_info(p);
    return v >= pi->lo && v <= pi->hi && !(pi->lo_open && v == pi->lo) && !(pi->hi_open && v == pi->hi);
}

/* 1 unless p takes whole numbers and v is not one. */
static inline int run_param_whole(RunParam p, double v) { return !run_param_info(p)->integer || v == floor(v); }

/* p's range as text, "[0, 1]", "(0, 1000000000]", "[0, 1)", into buf (48 bytes); returns buf. */
static inline const char *run_param_range(RunParam p, char buf[48]) {
    const ParamInfo *pi = run_param_info(p);
    snprintf(buf, 48, "%c%.10g, %.10g%c", pi->lo_open ? '(' : '[', pi->lo, pi->hi, pi->hi_open ? ')' : ']');
    return buf;
}

/* The one range check of a parameter's value: 0, or -1 and err = "tau = 1.5 must be in [0, 1]" (or
 * "gamma = 2.5 must be a whole number"). */
static inline int run_param_check(RunParam p, double v, SpErr *err) {
    char range[48];
    if (!run_param_in_range(p, v))
        return sp_fail(err, "%s = %g must be in %s", run_param_info(p)->name, v, run_param_range(p, range));
    if (!run_param_whole(p, v)) return sp_fail(err, "%s = %g must be a whole number", run_param_info(p)->name, v);
    return 0;
}

#endif
