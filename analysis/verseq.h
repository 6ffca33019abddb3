/* verseq.h - the verifier's decisions of one run, cut into blocks, from its token log.
 *
 * Methods sprinter, oracle-iid and oracle-markov (engine/decode/decoding.h) draft one token at a time;
 * the verifier accepts it (event kind 2, no target) or the target decides it (target_called = 1),
 * which ends the block. A block is the run of drafted tokens between two target calls:
 *   N        verifier accepts in the block (tokens emitted before the target is invoked);
 *   ended    1 when a target call ended it, 0 when the generation ended first (censored: the
 *            true N is >= the observed one);
 *   run_cap  it ended because max_run accepts were reached (the target decided the next token
 *            whatever the verifier said): the token log's capped column;
 *   left     max_new - (tokens the prompt had emitted before the block): the cap on N from
 *            max_new; eos_cut marks the last block of a prompt that stopped before max_new.
 * Each decision keeps its true label (1 acceptable, 0 not, -1 unknown without the audit), its
 * position in the block (1 = first drafted token after a target call), the verifier score and
 * the ratio q/p (NaN when p is unknown, +inf when p = 0). Blocks and decisions are in log order; the blocks and
 * decisions of prompt i are contiguous, and prompt indices (0..n_prompts) number the prompts in
 * log order (the clusters the bootstrap resamples).
 * finish_round (the authors' code, engine/decode/decoding.h): a round drafts until the verifier rejects or
 * max_run + 1 drafts, the target decides its last draft, a bonus token (kind 5, no decision) may
 * follow, and generation stops only between rounds: no block is cut by max_new (left = max_new,
 * raised to max_run + 1 when that is larger, so that max_run is the only cap). A block whose target
 * call was followed by a bonus token has bonus = 1: it emitted n_dec + 1 tokens (N + 2), not N + 1. */
#ifndef SP_VERSEQ_H
#define SP_VERSEQ_H

#include <stdint.h>

#include "error.h"
#include "tokenlog.h"

typedef struct VDecision {
    int8_t label, decision;
    int pos_in_block;
    int prompt;
    float score, ratio;
} VDecision;

typedef struct VBlock {
    int prompt;
    int start, left;
    int n, ended, run_cap, eos_cut;
    int bonus;        /* a bonus token (kind 5) followed the target call that ended it */
    int first, n_dec; /* decisions dec[first .. first + n_dec) */
} VBlock;

typedef struct VerSeq {
    VDecision *dec;
    int64_t n_dec;
    VBlock *blk;
    int n_blk;
    int n_prompts;
    int max_new, max_run; /* max_new: raised to max_run + 1 for finish_round (see above) */
    int finish_round;
    int n_bonus;          /* blocks with bonus = 1 */
    int64_t n_unlabelled; /* decisions without a label (audit off: only target-called ones have one) */
} VerSeq;

/* Builds the blocks of a sprinter / oracle run; max_run 0 = uncapped. Errors name the log. */
int verseq_build(const TokenRows *t, const char *path, int max_new, int max_run, int stop_at_eos, int finish_round,
                 VerSeq *v, SpErr *err);
void verseq_free(VerSeq *v);

#endif
