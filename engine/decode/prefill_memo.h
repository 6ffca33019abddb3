/* prefill_memo.h - the results of a lane's first forward of a decode, kept for the next decode that
 * makes the same call.
 *
 * A lane's first call of a decode runs on an empty session: its keys/values, its tail logits and its
 * tail hidden states are a function of (model, tokens, n_tail) alone (model.h: a row's arithmetic never
 * depends on other requests; a session's first call depends on nothing before it). The prompts of a
 * sweep repeat from run to run, and so do those calls: the audit copy's prefill of the prompt, the
 * draft's, ar's. A PrefillMemo keeps each such call's results; a decoder given one
 * (decoder_set_prefill_memo, decoding.h) loads a call it holds instead of running it: the same bits,
 * the same counted calls, tokens and FLOPs, no time. So it serves only decodes whose timings nobody
 * reads as latency (experiments/runner.c: a batched statistics run).
 *
 * A call is kept the second time it is made, not the first: a sweep whose runs never repeat a first call
 * (ar beside sd on gpt2-124m: the target's first calls differ) would otherwise write every prefill's
 * cache into fresh memory for nothing, and that cost it 10% of its wall time (bench/README.md); a call
 * made k times runs twice and loads k - 2 times. Entries are kept until the memo is freed; one that
 * would take the memo past its byte budget is not kept (the call runs each time). Not thread-safe: one decode (or one decoder_run_batch) at a time. */
#ifndef SP_PREFILL_MEMO_H
#define SP_PREFILL_MEMO_H

#include <stddef.h>
#include <stdint.h>

#include "model.h"

typedef struct PrefillMemo PrefillMemo;

/* A memo that keeps at most max_bytes of results, or NULL (out of memory). */
PrefillMemo *prefill_memo_new(size_t max_bytes);
void prefill_memo_free(PrefillMemo *memo);

/* If the memo holds (model, tokens[0..n), n_tail): loads its keys/values into the empty session s
 * (session_len 0), points *logits at its [n_tail, V] logits and *hidden at its [n_tail, d] final-norm
 * states (the memo's own, valid while it lives) and returns 1. Returns 0 when it holds no such call,
 * -1 (err) when the session cannot take it. */
int prefill_memo_load(PrefillMemo *memo, const Model *model, Session *s, const int32_t *tokens, int n, int n_tail,
                      const float **logits, const float **hidden, SpErr *err);

/* Keeps the call session_forward_tail(s, tokens, n, n_tail) just made on an empty session, if it was
 * made before (else only notes that it was made): its cache [0, n), logits [n_tail, V], hidden
 * [n_tail, d] (the tail's). Does nothing when the memo holds it, when its bytes would pass the budget,
 * or when out of memory (the memo is a shortcut, not a result). */
void prefill_memo_keep(PrefillMemo *memo, const Model *model, const Session *s, const int32_t *tokens, int n,
                       int n_tail, const float *logits, const float *hidden);

/* Calls loaded (hits) and calls looked up and not held (misses) so far. */
void prefill_memo_counts(const PrefillMemo *memo, int64_t *hits, int64_t *misses);

#endif
