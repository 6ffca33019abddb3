/* tokenlog.h - the per-token event log of one run: results/X/tokens/RUNHASH.h5.
 *
 * One row per emitted token (one TokenEvent), all prompts of the run one after another in prompt
 * order. Columns are 1-D chunked, deflate-compressed datasets at the file root with an unlimited
 * first dimension, written through h5util (to RUNHASH.h5.tmp, renamed by tokenlog_commit, so a
 * file named RUNHASH.h5 is always complete):
 *
 *   run_id        i64  first 15 hex digits of the run hash as an integer (same in every row)
 *   prompt_index  i32  index of the prompt in the dataset file (offset included)
 *   pos           i32  position of the emitted token in the full sequence (prompt included)
 *   token         i32  emitted token id
 *   draft_token   i32  token the draft proposed at this position, -1 if none
 *   q             f32  draft probability of draft_token, NaN if none
 *   p             f32  target probability of draft_token (target call or audit), NaN if unknown
 *   score         f32  verifier score in [0, 1], NaN if no verifier ran
 *   decision      i8   verifier / stopping-head decision: 1 accept, 0 reject, -1 none
 *   label         i8   true label q/p <= lambda: 1, 0, -1 when p is unknown
 *   target_called i8   1 if the target ran to decide this token
 *   kind          i8   EventKind: 0 target_sample, 1 draft_sample, 2 verifier_accept,
 *                      3 sd_accept, 4 sd_resample, 5 bonus
 *
 * Root attributes: format "sprinter-tokens", version 1, run_hash, method, config (the run's
 * canonical configuration text, what run_hash hashes), spec_name, spec_sha256, n_prompts, kinds
 * (the legend above).
 * Not thread-safe (HDF5 serial build); one TokenLog per process at a time.
 */
#ifndef SP_TOKENLOG_H
#define SP_TOKENLOG_H

#include <stdint.h>

#include "decoding.h"
#include "error.h"
#include "h5util.h"

#define TOKENLOG_VERSION 1
#define TOKENLOG_N_COLS 12

typedef struct TokenLog {
    H5Table t;
    int64_t run_id;
    int open;
} TokenLog;

/* run_id from a run hash (64 hex digits). */
int64_t tokenlog_run_id(const char *run_hash);

/* What the root attributes say about the run (strings borrowed). */
typedef struct TokenLogMeta {
    const char *run_hash, *method, *config; /* config: the run's canonical configuration text */
    const char *spec_name, *spec_sha256;
    int n_prompts;
} TokenLogMeta;

/* Creates path.tmp with the columns and attributes above. */
int tokenlog_create(TokenLog *l, const char *path, const TokenLogMeta *m, SpErr *err);
/* Appends the n events of one prompt. */
int tokenlog_append(TokenLog *l, int32_t prompt_index, const TokenEvent *ev, int n, SpErr *err);
/* Closes and renames path.tmp -> path. */
int tokenlog_commit(TokenLog *l, SpErr *err);
/* Closes and deletes path.tmp (no-op when not open). */
void tokenlog_abort(TokenLog *l);

/* Names, types and widths of the columns, in file order. */
const H5ColSpec *tokenlog_columns(void);

#endif
