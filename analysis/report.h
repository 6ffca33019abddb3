/* report.h - `sprinter analyze RESULTS`: reads RESULTS/runs.sqlite and RESULTS/tokens/RUNHASH.h5 (and,
 * when present, the outputs table of `sprinter score` and RESULTS/dtv.h5, RESULTS/dtv/NAME.h5 of `sprinter dtv`) and
 * writes RESULTS/report/:
 *   index.md      the report: deployed operating point, theorem checks, i.i.d. tests, quality,
 *                 drift, links to every table and plot (sections without data say "not computed")
 *   tables.md     the paper's Tables 1-4 regenerated (quality / win-tie; latency and tokens per
 *                 target call; FLOPs; cross-dataset transfer) and the deployed-point table
 *   checks.tsv    one row per check: run, check, model, predicted, measured, standard error,
 *                 interval, p-value, pass (1 / 0 / -1 no verdict) and no_verdict_reason (why the
 *                 check's assumptions do not hold for that run, "-" when it has a verdict)
 *   iid.tsv       one row per verifier run: the i.i.d. tests' statistics, p-values and verdict
 *   runs.tsv      one row per run: operating point, AUC, speed, FLOPs, quality, drift
 *   *.dat, *.gp   plot data and gnuplot scripts; *.png and *.svg rendered by gnuplot: roc, en
 *                 (E[N] measured vs predicted over the eta grid), pareto (speed-up vs quality),
 *                 acf (verifier-error autocorrelation), position (acceptance by position in the run),
 *                 design (Figs. 5-6: E[N], false accepts and latency over eta_FP at each run's eta_TP,
 *                 with the measured points)
 * Statistical conventions: alpha (default 0.05) is family-wise. Theorem checks pass when the
 * prediction lies inside the measured value's simultaneous (1 - alpha) interval, Bonferroni over
 * every check of the report: measured +- z * SE(measured - predicted), SE from a bootstrap over
 * prompts; the goodness-of-fit checks pass when p >= alpha / (number of checks). The i.i.d. verdict
 * of a run is Bonferroni over its own tests (iidtest.h). The analysis links no model code; dataset
 * references come through a callback. */
#ifndef SP_REPORT_H
#define SP_REPORT_H

/* The lambda of the authors' label rule (their dataset.py: q <= p). */
#define REPORT_CODE_LAMBDA 1.0

#include <stdio.h>

#include "error.h"

/* The reference text of prompt prompt_index of the dataset file a run names (runs.dataset,
 * data_format; sha256 = runs.dataset_sha256, for the caller to check it has the same file), or NULL
 * when there is none; several acceptable answers are separated by REPORT_REFERENCE_SEPARATOR (ROUGE
 * scores each and keeps the best per measure). The string must stay valid until report_write returns. */
#define REPORT_REFERENCE_SEPARATOR '\x1e'
typedef const char *(*RefLookup)(void *ctx, const char *dataset, const char *format, const char *sha256,
                                 int prompt_index);

typedef struct ReportOpts {
    const char *results_dir;
    double alpha;                         /* family-wise level of the checks and tests (0.05) */
    int bootstrap;                        /* bootstrap replicates over prompts (200) */
    unsigned long seed;                   /* bootstrap seed (1) */
    double deployed_lambda, deployed_tau; /* the paper's deployed setting (SP_PAPER_LAMBDA, SP_PAPER_TAU) */
    /* the paper-code protocol's own lambda (REPORT_CODE_LAMBDA: the authors' code labels with q <= 1 p,
     * whatever its verifier's file name says); FINDINGS rows 4-6 use it for paper-code cells and
     * deployed_lambda for sound ones */
    double code_lambda;
    double tie_margin;                    /* win-tie: a tie is within this many nats per token (0.05) */
    double shift;                         /* tests only: added to every predicted E[N] / E[T] (0) */
    int plots;                            /* 1: render the plots with gnuplot (required) */
    const char *gnuplot;                  /* the gnuplot program ("gnuplot", looked up in PATH) */
    RefLookup refs;                       /* may be NULL: no ROUGE */
    void *refs_ctx;
    FILE *log;                            /* progress lines, or NULL */
} ReportOpts;

void report_opts_default(ReportOpts *o);

typedef struct ReportSummary {
    int runs, verifier_runs;
    int checks, checks_failed; /* theorem checks with a verdict (pass 0 / 1) */
    int iid_runs, iid_rejected;
    char index_path[4200];     /* RESULTS/report/index.md */
} ReportSummary;

int report_write(const ReportOpts *o, ReportSummary *s, SpErr *err);

#endif
