/* score.h - `sprinter score`: the target model's log-likelihood of every output of a sweep, for the
 * quality metrics of the analysis (perplexity, target-as-judge win-tie rate; ROUGE is computed by
 * the analysis from the text stored here).
 *
 * For every done run of RESULTS/runs.sqlite and every prompts row of it that has no outputs row yet:
 *   - the output tokens y[0..n) are read back from the run's token log (column token of the rows
 *     of that prompt_index, in position order);
 *   - the prompt x is re-tokenized from the dataset exactly as the runner did it (target
 *     tokenizer, BOS for Llama, an empty prompt becomes BOS, the last n_prompt_tokens kept when
 *     prompt_truncated);
 *   - the target scores  target_logprob = sum_t ln p_T(y_t | x, y_<t)  with the softmax of its raw
 *     logits (temperature 1, no top-k / top-p: the model's own likelihood, whatever the run's
 *     sampling settings), target_mean_logprob = target_logprob / n, target_ppl = exp(-mean);
 *   - text = y decoded with the target's tokenizer (special tokens skipped; invalid UTF-8 and NUL
 *     bytes -> '?', so the text is never cut short, unlike prompts.output_text at a NUL byte).
 * The outputs are scored prompt by prompt: the prompt's first n_prompt_tokens - 1 positions are fed
 * once, then each run's output of that prompt from there (positions n_prompt_tokens - 1 on), and an
 * output identical to the one before (same prompt, same tokens: lossless methods at temperature 0)
 * takes its figures instead of being fed again. The chunks fed depend only on the prompt's and the
 * output's lengths, so an output's figures do not depend on which others share its prompt or worker.
 * The rows go to the table outputs (schema in results/README.md), one transaction per prompt, with
 * INSERT OR IGNORE: an interrupted score keeps every finished prompt and a rerun adds only what is
 * missing (a rerun on a complete directory adds nothing).
 *
 * Checked before a run is scored (errors name the file and the field): the dataset's SHA-256 equals
 * runs.dataset_sha256; the prompt re-encodes to n_prompt_tokens tokens (more when truncated); the
 * log's run_hash attribute is the run's, its positions start at n_prompt_tokens and are contiguous,
 * and their count equals prompts.tokens; the target directory's hash (sha256_model_dir) equals
 * runs.target_sha256 of every run that used a target.
 *
 * With jobs > 1 the prompts are dealt to that many forked worker processes by a hash of (dataset,
 * prompt index), each with its own session and database connection; the model is loaded once before
 * the fork.
 * Not thread-safe (HDF5 serial build); one score per process at a time.
 */
#ifndef SP_SCORE_H
#define SP_SCORE_H

#include <stdint.h>
#include <stdio.h>

#include "error.h"
#include "model.h"

typedef struct ScoreOpts {
    const char *results_dir;
    const char *target_dir; /* NULL: the one runs.target_dir of the done runs */
    int jobs;               /* worker processes (>= 1) */
    int progress;           /* one line per worker on stderr */
} ScoreOpts;

typedef struct ScoreCounts {
    int runs_done;        /* done runs in the database */
    int runs_scored;      /* runs that had prompts to score now */
    int64_t rows_added;   /* outputs rows inserted by this call */
    int64_t rows_present; /* outputs rows that were already there */
} ScoreCounts;

/* Scores what is missing in o->results_dir (see above). */
int score_results(const ScoreOpts *o, ScoreCounts *c, SpErr *err);

/* lp[0..n_out) = ln p(out[t] | prompt, out[0..t)) under the model of session s (softmax of the raw
 * logits, in double). The session's cache is reset; it needs max_ctx >= n_prompt + n_out - 1.
 * n_prompt >= 1, n_out >= 0. */
int score_logprobs(Session *s, int V, const int32_t *prompt, int n_prompt, const int32_t *out, int n_out, double *lp,
                   SpErr *err);

/* Prints, per method and parameter setting of the scored done runs: prompts, tokens, the mean
 * target log-probability per token (token-weighted) and its perplexity. */
int score_summary(const char *results_dir, FILE *out, SpErr *err);

#endif
