/* decoder_int.h - what the decoding loop (decoding.c) shares with the method families
 * (method_*.c): the decoder's state, one run's state, the steps every method is built from, and the
 * interface a method family implements. Private to engine/decode.
 *
 * Sequence bookkeeping: seq[0..n) is committed (prompt + emitted). Each model "lane" owns a
 * session whose cache holds some prefix of seq; lane_advance() feeds it the missing tokens in one
 * batched call and returns logits for the last rows. After a commit, every lane is truncated to
 * at most n - 1 positions: cached positions before n - 1 always hold committed tokens, and the
 * position n - 1 may hold a rejected draft token, so it is recomputed.
 *
 * A method family is one DecodeMethodOps: step() advances the run by one block (one target call's
 * worth of tokens, or one token for the single-model methods) and returns; the loop in decoder_run
 * calls it until the run is done. What a family keeps between its steps lives in its own state
 * (state_size bytes, zeroed before the first step, at RunState.method_state).
 */
#ifndef SP_DECODER_INT_H
#define SP_DECODER_INT_H

#include "decoding.h"
#include "prefill_memo.h"

typedef struct Lane {
    const Model *model;
    Session *session;
    double params; /* for FLOPs */
} Lane;

struct Decoder {
    Lane draft, target, audit;
    const Verifier *verifier;
    const Verifier *judge;          /* the judge head on the target's d_model (decoder_set_judge), or NULL */
    /* shapes below: V = vocab_size */
    int vocab_size, max_ctx, gamma_cap;
    int32_t *seq;                   /* [max_ctx] prompt + emitted tokens, then the current drafts */
    float *draft_probs;             /* [gamma_cap + 1, V] draft distributions q of the current block */
    float *sprinter_draft_probs[2]; /* [2][V] current and next draft distribution q (sprinter) */
    float *target_probs;            /* [gamma_cap + 1, V] target distributions p */
    float *audit_probs;             /* [V] audit distribution p */
    float *residual;                /* [V] max(p - q, 0), the residual before normalising */
    double *lossy_work;             /* [OPTIMAL_LOSSY_WORK(V)] optimal-lossy's solver scratch */
    double *lossy_r;                /* [V] optimal-lossy's law r at the position being verified */
    float *lossy_rf;                /* [V] its float copy, the row SD runs against */
    int32_t *sampler_work;          /* [V] sampler scratch */
    float *draft_hidden;            /* [d_draft] copy of a draft hidden state */
    float *prefix_hidden;           /* [d_draft] the draft's state at the position before the drafted token */
    /* PROTOCOL_PAPER_CODE: the plain softmax (T = 1) of the same logits, for the label */
    float *draft_raw[2];            /* [2][V] beside sprinter_draft_probs */
    float *target_raw;              /* [V] of the target's row for the decided token */
    float *audit_raw;               /* [V] beside audit_probs */
    /* decoder_run_batch (batch.c): while this decoder is one decode of a batch, its forwards are
     * requests to the batch (link, its index there), else NULL */
    struct BatchLink *link;
    int link_index;
    /* decoder_set_prefill_memo: the lanes' first calls of a decode are looked up there first and kept
     * there (prefill_memo.h; borrowed), else NULL */
    PrefillMemo *prefill_memo;
};

/* What one decoder_run works on. */
typedef struct RunState {
    Decoder *decoder;
    const DecodeConfig *cfg;
    gsl_rng *rng;
    DecodeOutput *out;
    int n_committed; /* committed length of decoder->seq (prompt + emitted) */
    int done;        /* max_new reached (at a round's end under finish_round) or eos emitted */
    int round_kept;  /* sprinter-type: drafts emitted since the last round ended */
    int nonfinite;   /* the error in err is non-finite logits (decoder_run returns DECODE_ERR_NONFINITE) */
    int forwards;    /* forward passes so far (fault_nan_logits poisons the first) */
    const float *prefix_hidden; /* the drafted token's prefix state (sprinter-type methods), else NULL */
    const DecisionScript *script; /* decoder_run_scripted: decisions that replace the verifier's, else NULL */
    int script_used;              /* decisions taken from script so far */
    void *method_state;           /* the family's own state between steps (DecodeMethodOps.state_size) */
    SpErr *err;
} RunState;

/* A family of decoding methods (one file each): its step and the state it keeps between steps. */
typedef struct DecodeMethodOps {
    int (*step)(RunState *state); /* one block; 0, or -1 with state->err set */
    size_t state_size;            /* bytes of method_state, 0 if none */
} DecodeMethodOps;

/* The families, kDecode<Family> for each family a row of methods.h SP_METHODS names (defined in
 * method_*.c; decoding.c maps each method to its family from the same rows). */
#define SP_METHOD_FAMILY_DECL_(id, name, classes, family) extern const DecodeMethodOps kDecode##family;
SP_METHODS(SP_METHOD_FAMILY_DECL_)
#undef SP_METHOD_FAMILY_DECL_

/* ---- the batch a decoder may run in (batch.c) ---- */

/* What session_forward_tail(session, tokens, n, n_tail) gives, computed in the batch's next round
 * together with the other decodes' requests (bit-identical); called from decode index's thread. */
int batch_link_forward(struct BatchLink *link, int index, const Model *model, Session *session, const int32_t *tokens,
                       int n, int n_tail, const float **logits, const float **hidden, SpErr *err);

/* ---- model lanes (lanes.c) ---- */

/* A lane of model with a session of max_ctx positions (one batch may fill it). */
int lane_init(Lane *lane, const Model *model, int max_ctx, SpErr *err);

/* Feeds the lane the tokens seq[cached..upto) (after truncating a stale tail) and returns the logits
 * of the last n_tail positions upto-n_tail .. upto-1 ([n_tail, V]) and their hidden states. */
int lane_advance(RunState *state, Lane *lane, int upto, int n_tail, const float **logits, const float **hidden,
                 int64_t *calls, int64_t *toks, double *secs, double *flops);
/* lane_advance on the draft / the target, counted in the run's statistics. */
int draft_advance(RunState *state, int upto, int n_tail, const float **logits, const float **hidden);
int target_advance(RunState *state, int upto, int n_tail, const float **logits);
/* target_advance that also returns the hidden states [n_tail, d_target] of the same rows. */
int target_advance_hidden(RunState *state, int upto, int n_tail, const float **logits, const float **hidden);
/* The decoding distribution (cfg->sampling) of logits [V] into out [V]. */
int decode_probs(RunState *state, const float *logits, float *out);
/* The plain softmax (temperature 1, no top-k / top-p) of logits [V] into out, for PROTOCOL_PAPER_CODE
 * labels; nothing to do under PROTOCOL_SOUND. */
int raw_probs(RunState *state, const float *logits, float *out);
/* p for the token at position pos (logits of position pos - 1) from the audit lane, into
 * decoder->audit_probs (and audit_raw). Never counted as a target call. */
int audit_p(RunState *state, int pos);
/* A head's score of a drafted token, rounded to float (as stored in its TokenEvent): the verifier
 * (or SpecDec++'s stopping head) on the draft's hidden state [d_draft], the judge on the target's
 * [d_target]; counts the evaluation's time and FLOPs as verifier work. */
float head_eval(RunState *state, const Verifier *head, const float *hidden);
/* Truncates every lane to at most n_committed - 1 cached positions (see above). */
void truncate_lanes(RunState *state);

/* ---- events and the accept step (accept.c) ---- */

/* An event with nothing known: no draft token, NaN q / p / score, no decision, no label. */
TokenEvent blank_event(void);
/* The label q/p <= lambda of a drafted token, -1 when p is unknown (NaN). */
int8_t true_label(const RunState *state, float q, float p);
/* The label of draft token x by cfg->label_rule: from the decoding distributions q, p ([V] each) or
 * from their raw (T = 1) counterparts q_raw, p_raw. */
int8_t rule_label(const RunState *state, int32_t x, const float *q, const float *p, const float *q_raw,
                  const float *p_raw);
/* event->label = rule_label(...), and under the paper-code rule event->q_raw / p_raw = q_raw[x] /
 * p_raw[x], the figures the label came from (the token log keeps them: records/tokenlog.h). */
void set_rule_label(const RunState *state, TokenEvent *event, int32_t x, const float *q, const float *p,
                    const float *q_raw, const float *p_raw);
/* Appends the token and its event (and the draft hidden state when captured); sets done at max_new
 * (unless finish_round) or at eos. A no-op once done. */
void emit(RunState *state, int32_t token, TokenEvent event, const float *hidden);
/* A round (the drafts up to the target's decision, and a bonus token) ends: counts it; done at max_new. */
void end_round(RunState *state);
/* The SD accept test for draft token x: accept with probability min(1, p(x) / q(x)) (one uniform u,
 * accept iff sd_test(u, p(x), q(x))). */
int sd_accept(RunState *state, float px, float qx);
int sd_test(double u, float px, float qx);
/* A draw from the residual norm(max(p - q, 0)) (built in decoder->residual); from p when p == q. */
int32_t draw_residual(RunState *state, const float *p, const float *q);

#endif
