/* metrics.h - the speculative-decoding figures computed from the record, each defined once, so the
 * sweep's summary, `sprinter decode`, the analysis report and the benchmarks print the same numbers
 * under the same names (results/README.md, "Acceptance"):
 *
 *   alpha                per-token acceptance rate: of the draft tokens the target CHECKED, the
 *                        share it accepted: sd_accepted / (sd_accepted + rejected), where
 *                        sd_accepted = accepted - verifier_accepts (SPRINTER's verifier accepts
 *                        are never checked) and rejected counts the SD resample events. Drafts
 *                        after a block's first rejection are never checked and do not count.
 *   tokens_per_call      emitted tokens per target forward, bonus and resampled tokens included:
 *                        Spec-Bench's "#Mean accepted tokens" (AR = 1.00)
 *   accepted_per_drafted accepted / drafted: counts unchecked drafts as failures, so it falls with
 *                        gamma at a fixed alpha (not an acceptance rate)
 *   alpha_from_tpc       the alpha of i.i.d. acceptances that gives the measured tokens per call
 *                        with full blocks of gamma: solves (1 - a^(gamma+1)) / (1 - a) = tpc
 *                        (gamma-free summary of sd runs; biased where blocks end early: max_new,
 *                        pmin / specdecpp stopping)
 *   avg_tokens_paper     the SPRINTER authors' "avg tokens": drafts kept per target call that decided
 *                        drafts (prompts.round_kept / prompts.rounds, the resampled or bonus token
 *                        excluded), averaged per prompt, then over prompts (a SQL AVG in the summary)
 *   Spec-Bench's task table (its evaluation/speed.py), per task group:
 *   specbench speedup    mean over questions of tokens / seconds (a question's turns summed) of the
 *                        method, divided by the same mean of AR on the same questions: a mean of
 *                        per-question rates, not the ratio of pooled rates (summary's "speedup")
 *   mean accepted tokens tokens / target forwards over the group's turns: tokens_per_call above
 *                        (Spec-Bench averages per decoding step, which pools the same way)
 *   question             a conversation: the prompt rows of one run with the same
 *                        prompt_index - turn (its first turn's index; schema 7's prompts.turn, 0
 *                        when NULL), their counts summed (specbench_question_key)
 *   task groups          mt_bench (its 8 categories: writing, roleplay, reasoning, math, coding,
 *                        extraction, stem, humanities), translation, summarization, qa,
 *                        math_reasoning, rag, and overall (every question, any category)
 * Needs GSL (normal quantile for the Wilson interval). No global state.
 */
#ifndef SP_METRICS_H
#define SP_METRICS_H

#include <stdint.h>

typedef struct Interval {
    double lo, hi;
} Interval;

/* Wilson score interval of a binomial proportion k/n at confidence conf (e.g. 0.95); n = 0 gives
 * [0, 1]. */
Interval wilson_interval(int64_t k, int64_t n, double conf);

/* alpha with its Wilson 95% interval from the counts; NaN (and [0, 1]) when nothing was checked. */
typedef struct Acceptance {
    int64_t checked, sd_accepted;
    double alpha;
    Interval ci95;
} Acceptance;
Acceptance acceptance_of(int64_t accepted, int64_t verifier_accepts, int64_t rejected);

/* num / den, NaN when den <= 0. */
double metric_ratio(double num, double den);

/* See above; NaN when tpc is outside [1, gamma + 1] or gamma < 1. */
double alpha_from_tokens_per_call(double tokens_per_call, int gamma);

/* Spec-Bench's task groups, in its table's order; SB_OVERALL holds every question. */
enum { SB_MT_BENCH, SB_TRANSLATION, SB_SUMMARIZATION, SB_QA, SB_MATH_REASONING, SB_RAG, SB_OVERALL, SB_N_GROUPS };
const char *specbench_group_name(int group);
/* The group (SB_MT_BENCH .. SB_RAG) of a category, -1 when it is not one of Spec-Bench's 13. */
int specbench_group_of(const char *category);

/* The key every turn of a question shares: its first turn's prompt_index. The summary's SQL groups
 * by the same expression, prompt_index - COALESCE(turn, 0). */
static inline int specbench_question_key(int prompt_index, int turn) { return prompt_index - turn; }

/* One question of one run: its turns summed. */
typedef struct SbQuestion {
    const char *category; /* borrowed; NULL or "" = none (counts in overall only) */
    int64_t tokens, target_calls;
    double seconds;
    int turns, truncated; /* its turns, and those whose prompt lost its start to the context (prompts.prompt_truncated) */
} SbQuestion;

/* A configuration's figures in one task group: questions counted, the mean over them of
 * tokens / seconds (NaN if none had time), tokens and target forwards summed. */
typedef struct SbCell {
    int questions;
    double mean_rate;
    int64_t tokens, target_calls;
    int turns, truncated; /* summed over the questions: turns, and turns whose prompt was truncated */
} SbCell;
/* Fills cells[SB_N_GROUPS] from questions q[0..n) (of one configuration, every seed pooled). */
void specbench_cells(const SbQuestion *q, int n, SbCell cells[SB_N_GROUPS]);
/* The same figures over the questions of one category (NULL: every question). */
SbCell specbench_category_cell(const SbQuestion *q, int n, const char *category);
/* 1 when q[i] is the first of q[0..i] in its category: each category once, in the data's order. */
int specbench_category_first(const SbQuestion *q, int i);

#endif
