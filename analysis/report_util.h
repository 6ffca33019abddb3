/* report_util.h - the helpers the report's writers (report_md.c, tables.c, plots.c) share: output
 * files under RESULTS/report, number formatting, run classification. Not a public API.
 * report.c calls the writers, the writers call these; nothing here calls back into either. */
#ifndef SP_REPORT_UTIL_H
#define SP_REPORT_UTIL_H

#include <stddef.h>
#include <stdio.h>

#include "methods.h"
#include "report_int.h"

/* R->dir/name opened for writing, or NULL with err set. */
FILE *report_open(const Report *R, const char *name, SpErr *err);
/* Closes f; -1 with err set when any write to it or the close failed. */
int report_close(FILE *f, const Report *R, const char *name, SpErr *err);
const char *fmt_num(char *buf, size_t cap, double v, const char *fmt); /* "-" for NaN */
/* 1 if name (a method as the results database stores it) is method m: for picking the runs of one
 * specific method (ar as the speed and drift reference, sd for speed-up, FLOPs and win-tie, sprinter
 * for the deployed point and its tables); classes of methods go through method_name_is (methods.h). */
int method_name_eq(const char *name, DecodeMethod m);
/* 1 for a sprinter run at the deployed lambda and tau (R->o). */
int is_deployed(const Report *R, const RunAn *a);
/* Two runs comparable as reference and subject: the same data, decoded at the same temperature (a
 * results directory may hold greedy and sampled runs side by side, e.g. make paper's two protocols). */
int same_cell(const RunInfo *x, const RunInfo *y);

/* The quality figure of FINDINGS.md and the Pareto plot: the mean over prompts of the target's
 * log-likelihood per token of x's output (outputs.target_logprob / n_tokens) minus y's on the same
 * prompt (y NULL: x's alone), over the prompts both have scored, with a 95% t interval; NaN when
 * none (interval NaN below 2 prompts). */
/* The target's mean log-likelihood per token of one prompt's output, NaN if not scored. */
double prompt_llpt(const PromptInfo *p);
/* Run r's row of prompt prompt_index, or NULL. */
const PromptInfo *run_prompt(const RunInfo *r, int prompt_index);
typedef struct PairedMean {
    double mean, lo, hi;
    int n;
} PairedMean;
PairedMean paired_llpt(const RunInfo *x, const RunInfo *y);

/* Speed from runs timed alone (runs.sqlite table timings, the spec's [timing]). */
#define TIMING_MAX_REPS 1000 /* repetitions read (the spec allows [timing] reps <= 1000) */
#define TIMING_MIN_REPS 2    /* paired repetitions a speed figure needs to come from the timings (row 6, lossy.md) */
/* ms per token of run a in its timing of repetition rep, NaN when it has none. */
double timed_ms(const RunAn *a, int rep);
/* Speed ratios slow / fast over the repetitions both runs were timed in alone (paired: one
 * repetition times every run in one stretch of time): their count, and the median, min and max. */
int paired_ratios(const RunAn *slow, const RunAn *fast, double *median, double *lo, double *hi);
/* The exact two-sided sign test over the same repetitions: H0, a repetition's ratio slow / fast is as
 * likely above 1 as below (ties dropped). *above = repetitions with fast faster, *n = those not tied;
 * returns p = min(1, 2 P(Binomial(n, 1/2) <= min(above, n - above))), 1 when n = 0. */
double paired_sign_p(const RunAn *slow, const RunAn *fast, int *above, int *n);
#define SPEED_VERDICT_P 0.05  /* a speed verdict (row 6) needs the sign test at this level */
#define TIMING_VERDICT_REPS 6 /* the fewest repetitions that can reach it: all one way, p = 2 / 2^6 = 0.031 */

#endif
