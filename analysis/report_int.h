/* report_int.h - what report.c, report_md.c, tables.c and plots.c share (not a public API): the
 * report's state and the writers report.c calls. The writers' shared helpers are in report_util.h. */
#ifndef SP_REPORT_INT_H
#define SP_REPORT_INT_H

#include <stdint.h>
#include <stdio.h>

#include "dtvread.h"
#include "iidtest.h"
#include "report.h"
#include "runsdb.h"
#include "theorycheck.h"
#include "tokenlog.h"

/* The analysis of one run. */
/* SD's per-token acceptance beta_SD against 1 - d_TV(p, q) on the prefixes SD visited: over the
 * checked drafts of an sd token log (kind sd_accept or sd_resample, finite q and p), the accepted
 * share and the mean of min(1, p/q), whose expectation at a prefix is 1 - d_TV(p, q) when the draft
 * token is sampled from q (at the decoding law). Their difference has mean 0 under the identity; its
 * SE is clustered by prompt. n = 0: not computed. */
typedef struct SdIdentity {
    int64_t n, accepted;
    int n_prompts;
    double beta, expect, diff, se_diff; /* accepted / n, mean min(1, p/q), beta - expect, its SE */
} SdIdentity;

typedef struct RunAn {
    const RunInfo *ri;
    char setting[256];  /* "lambda=1.2 tau=0.5" or "-" */
    char dataset[256];  /* basename of the evaluation data */
    char ver_data[256]; /* basename of the verifier's training data, "" if none */
    int is_ver;         /* a MC_SEQUENTIAL method: sprinter, oracle-iid, oracle-markov */
    int is_oracle;      /* a sequential one without a trained verifier: oracle-iid, oracle-markov */
    char note[512];     /* why a part is missing */
    /* emitted tokens (drift) */
    int32_t *tok;
    int *tok_prompt;
    int64_t n_tok;
    /* operating point (audit labels) and ROC (learned verifier) */
    int has_op;
    int64_t npos, nneg, tp, fp;
    float *scores;
    int8_t *labels;
    int64_t n_scored;
    double auc, auc_se;
    /* theorems, i.i.d. */
    int has_tc, has_iid;
    TcResult tc;
    IidResult iid;
    double lat_pred_ms; /* Thm 3.4's implied latency per token (model iid; with the measured bonus share) */
    double c_step_ms, c_target_ms; /* measured ms per draft step (draft forward + verifier evaluation), per target call */
    /* speed, cost, quality, drift */
    double ms_per_token, tok_per_call, speedup_ar, speedup_sd;
    /* acceptance (records/metrics.h): alpha over the checked drafts (NaN when not recorded or none
     * checked), accepted / drafted, and the alpha that sd's tokens per call imply at its gamma */
    Acceptance acc;
    double acc_per_drafted, alpha_tpc;
    double flops_tok[4]; /* draft, verifier, target, total per emitted token */
    double rouge[3];
    int n_rouge;
    double *rouge_l; /* [ri->n_rows] each prompt's ROUGE-L F1, NaN where it has no reference */
    double ppl;
    int has_ppl;
    double win_tie;
    int n_win_tie;
    double d_uni, d_bi;
    int has_drift;
    SdIdentity sdid; /* sd runs: acceptance against 1 - d_TV(p, q) on the visited prefixes (findings.c) */
} RunAn;

enum { CK_CI = 0, CK_PVALUE = 1, CK_INFO = 2 };

typedef struct Check {
    int run;
    char name[64], model[16];
    int kind;
    double pred, meas, se; /* se: of measured - predicted (CK_CI) */
    double lo, hi;         /* the interval the prediction must lie in (CK_CI) */
    double p_value;        /* CK_PVALUE */
    int64_t n;             /* oracle rate checks: labelled decisions of the class */
    int pass;              /* 1, 0, -1 not applicable */
    char why[240];         /* kind CK_INFO: why the row has no verdict ("" otherwise) */
} Check;

struct FindRow; /* findings.c */

typedef struct Report {
    const ReportOpts *o;
    RunSet rs;
    RunAn *an;
    char dir[4200];     /* RESULTS/report */
    Check *ck;
    int n_ck, cap_ck;
    int m_tests;        /* checks with a verdict: the Bonferroni count */
    double conf_sim;    /* 1 - alpha / m_tests */
    DtvFile *dtv;
    int n_dtv;
    int has_refs;
    struct FindRow *findings; /* FINDINGS.md's rows (write_findings), for index.md's section */
    int n_findings;
} Report;

/* report_md.c */
int write_index(Report *R, SpErr *err);
int write_tsvs(Report *R, SpErr *err);
/* findings.c: FINDINGS.md, FINDINGS.tsv (before write_index, which shows the same table) */
int write_findings(Report *R, SpErr *err);
void sec_findings(FILE *f, const Report *R);
/* The models the runs name, each "random-init (seed N)" (records/modelorigin.h), a checkpoint, or not
 * found; with a random-init one, the line "**No verdict: random-init models.**" and why, first. */
void sec_models(FILE *f, const Report *R);
/* The review's bound from Thm 3.3 (findings.c): eta_FP >= 1 - 1/(en - r + 1); NaN where en <= r
 * (no constraint). */
double findings_review_bound(double en, double r);
/* Row 2's verdict on a measured eta_FP v [lo, hi] at the label model's mean r, under both readings
 * of avg tokens (E[N] = 11.10 and 10.10); "no verdict: ..." where tau_star, r or v is NaN or the
 * bound constrains nothing. */
void findings_bound_verdict(char *buf, size_t cap, double v, double lo, double hi, double r, double tau_star);
/* SdIdentity of an sd token log (findings.c); n = 0 when it has no checked draft. */
void sd_identity_of(const TokenRows *t, SdIdentity *out);
/* Row 7's verdict: beta_SD - mean min(1, p/q) = diff with SE se, over n checked drafts of a run
 * decoded at temperature; "no verdict: ..." where the identity does not apply (greedy) or n = 0. */
void findings_sd_verdict(char *buf, size_t cap, double temperature, int64_t n, double diff, double se);
/* Row 8's verdict on eta_FP(training prompts) - eta_FP(held out) = diff [lo, hi]; "no verdict: ..."
 * without a held-out twin or an interval. */
void findings_overlap_verdict(char *buf, size_t cap, int has_twin, double diff, double lo, double hi);
/* tables.c */
int write_tables(Report *R, SpErr *err);
/* plots.c: data files and scripts; then gnuplot renders them (when R->o->plots) */
int write_plots(Report *R, SpErr *err);
int plot_names(const char *const **names); /* the plots every report has, e.g. "roc" */

#endif
