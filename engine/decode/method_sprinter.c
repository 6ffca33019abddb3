/* method_sprinter.c - the sequential methods (SPRINTER's Algorithm 2 and its controls): the draft
 * proposes one token at a time; a decision on that token accepts it without the target, or the
 * target runs once over everything since its last call and the SD test decides (a round). They
 * differ only in who decides:
 *   sprinter       the verifier head: score >= tau accepts
 *   oracle-iid     a synthetic verifier that knows the true label q/p <= lambda and accepts with
 *                  prob eta_TP if acceptable, eta_FP if not, independently (the theorems' model)
 *   oracle-markov  the same, each label class's decisions a Markov chain (repeat the class's last
 *                  decision w.p. oracle_stay): the same marginal rates, correlated errors
 *   collect        nobody: the target decides every token (verifier-data collection)
 * decoder_run_scripted replaces any of them with a script (tests).
 */
#include <string.h>

#include "decoder_int.h"

/* What a sequential run keeps from one step to the next. */
typedef struct Sequential {
    int accept_streak;    /* decisions to accept in a row (max_run caps it) */
    int have_draft_probs; /* sprinter_draft_probs[current] already holds q at position n */
    int current;          /* which of the two q buffers is the current one */
    int8_t last_decision[2]; /* oracle-markov: the previous decision per true label, -1 before any */
    int started;
} Sequential;

/* ---- who decides: each returns the decision (1 accept, 0 reject) on event's drafted token ---- */

static int8_t decide_by_verifier(RunState *state, Sequential *seq, const TokenEvent *event, float *score) {
    (void)seq;
    (void)event;
    Decoder *decoder = state->decoder;
    const float *feature = decoder->verifier->feature == VF_PREFIX ? decoder->prefix_hidden : decoder->draft_hidden;
    *score = head_eval(state, decoder->verifier, feature);
    return (int8_t)verifier_accepts(*score, state->cfg->tau);
}

static int8_t decide_by_oracle(RunState *state, Sequential *seq, const TokenEvent *event, float *score) {
    (void)score;
    const DecodeConfig *cfg = state->cfg;
    double rate = event->label == 1 ? cfg->eta_tp : cfg->eta_fp;
    int8_t *last = &seq->last_decision[event->label == 1];
    int8_t decision;
    if (cfg->method == DM_ORACLE_MARKOV && *last >= 0 && gsl_rng_uniform(state->rng) < cfg->oracle_stay)
        decision = *last;
    else
        decision = (int8_t)(gsl_rng_uniform(state->rng) < rate);
    *last = decision;
    return decision;
}

static int8_t decide_never(RunState *state, Sequential *seq, const TokenEvent *event, float *score) {
    (void)state, (void)seq, (void)event, (void)score;
    return 0;
}

static int8_t decide_by_script(RunState *state, Sequential *seq, const TokenEvent *event, float *score) {
    (void)seq, (void)event, (void)score;
    int k = state->script_used++;
    return k < state->script->n ? state->script->decisions[k] : 0;
}

typedef int8_t (*Decide)(RunState *state, Sequential *seq, const TokenEvent *event, float *score);

static Decide decider(const RunState *state) {
    if (state->script) return decide_by_script;
    switch (state->cfg->method) {
    case DM_SPRINTER: return decide_by_verifier;
    case DM_ORACLE_IID:
    case DM_ORACLE_MARKOV: return decide_by_oracle;
    default: return decide_never; /* collect */
    }
}

/* ---- the round ---- */

/* The target decides the drafted token x of event (drawn from q = draft_probs, raw draft_raw): it runs
 * over everything since its last call (and over x too when a bonus follows), then the SD test, or
 * under collect with the authors' label rule the label, keeps x or replaces it. Returns 1 when x was
 * kept and the round goes on with the draft's next distribution, 0 when the round ended, -1 on error. */
static int target_decides(RunState *state, TokenEvent *event, int32_t x, const float *draft_probs,
                          const float *draft_raw) {
    Decoder *decoder = state->decoder;
    const DecodeConfig *cfg = state->cfg;
    int V = decoder->vocab_size, n = state->n_committed;
    const float *logits;
    /* the row for position n, and with a bonus also the row after x */
    int rows = cfg->bonus ? 2 : 1;
    if (target_advance(state, n + rows - 1, rows, &logits)) return -1;
    for (int i = 0; i < rows; i++)
        if (decode_probs(state, logits + (size_t)i * V, decoder->target_probs + (size_t)i * V)) return -1;
    if (raw_probs(state, logits, decoder->target_raw)) return -1;
    event->p = decoder->target_probs[x];
    set_rule_label(state, event, x, draft_probs, decoder->target_probs, draft_raw, decoder->target_raw);
    event->target_called = 1;
    /* collect under the authors' label rule: the context goes on with x when its label is 1, else
     * with the target's greedy token (dataset.py); otherwise the SD test decides */
    int follow_label = cfg->method == DM_COLLECT && cfg->label_rule == PROTOCOL_PAPER_CODE;
    if (follow_label && event->label != 1) {
        event->kind = EV_SD_RESAMPLE;
        emit(state, sampler_argmax(decoder->target_raw, V), *event, decoder->draft_hidden);
    } else if (follow_label || sd_accept(state, event->p, event->q)) {
        event->kind = EV_SD_ACCEPT;
        emit(state, x, *event, decoder->draft_hidden);
        if (cfg->bonus) {
            TokenEvent bonus = blank_event();
            bonus.kind = EV_BONUS;
            bonus.target_called = 1;
            state->prefix_hidden = NULL;
            emit(state, sampler_draw(decoder->target_probs + V, V, state->rng), bonus, NULL);
        }
        end_round(state);
        /* without a bonus the draft has seen x: its next distribution is ready */
        if (!cfg->bonus) return 1;
        truncate_lanes(state); /* the draft has not seen the bonus token: q comes from a fresh step */
        return 0;
    } else {
        event->kind = EV_SD_RESAMPLE;
        emit(state, draw_residual(state, decoder->target_probs, draft_probs), *event, decoder->draft_hidden);
    }
    end_round(state);
    truncate_lanes(state);
    return 0;
}

/* One drafted token: draft x ~ q, decide, and either emit x or let the target decide it. */
static int sequential_step(RunState *state) {
    Decoder *decoder = state->decoder;
    const DecodeConfig *cfg = state->cfg;
    Sequential *seq = state->method_state;
    if (!seq->started) {
        seq->last_decision[0] = seq->last_decision[1] = -1;
        seq->started = 1;
    }
    int V = decoder->vocab_size, n = state->n_committed;
    float *draft_probs = decoder->sprinter_draft_probs[seq->current];
    float *next_draft_probs = decoder->sprinter_draft_probs[1 - seq->current];
    float *draft_raw = decoder->draft_raw[seq->current], *next_draft_raw = decoder->draft_raw[1 - seq->current];
    size_t d_draft = (size_t)model_config(decoder->draft.model)->d_model;
    const float *logits, *hidden;
    if (!seq->have_draft_probs) {
        if (draft_advance(state, n, 1, &logits, &hidden) || decode_probs(state, logits, draft_probs) ||
            raw_probs(state, logits, draft_raw))
            return -1;
        memcpy(decoder->prefix_hidden, hidden, d_draft * sizeof *decoder->prefix_hidden);
    } else { /* q came from the previous drafted token's state */
        memcpy(decoder->prefix_hidden, decoder->draft_hidden, d_draft * sizeof *decoder->prefix_hidden);
    }
    state->prefix_hidden = decoder->prefix_hidden;
    /* draft x ~ q, then run the draft on x: its hidden state is the verifier's input and its
     * logits are the next q if x survives */
    int32_t x = sampler_draw(draft_probs, V, state->rng);
    decoder->seq[n] = x;
    state->out->stats.drafted++;
    if (draft_advance(state, n + 1, 1, &logits, &hidden)) return -1;
    memcpy(decoder->draft_hidden, hidden, d_draft * sizeof *decoder->draft_hidden);
    if (decode_probs(state, logits, next_draft_probs) || raw_probs(state, logits, next_draft_raw)) return -1;

    TokenEvent event = blank_event();
    event.draft_token = x;
    event.q = draft_probs[x];
    int is_oracle = cfg->method == DM_ORACLE_IID || cfg->method == DM_ORACLE_MARKOV;
    if (cfg->audit || is_oracle) {
        if (audit_p(state, n)) return -1;
        event.p = decoder->audit_probs[x];
        set_rule_label(state, &event, x, draft_probs, decoder->audit_probs, draft_raw, decoder->audit_raw);
    }
    int capped = cfg->max_run > 0 && seq->accept_streak >= cfg->max_run;
    event.decision = decider(state)(state, seq, &event, &event.score);
    int kept;
    if (event.decision == 1 && !capped) {
        event.kind = EV_VERIFIER_ACCEPT;
        emit(state, x, event, decoder->draft_hidden);
        seq->accept_streak++;
        kept = 1;
    } else {
        event.capped = (int8_t)(event.decision == 1 && capped);
        seq->accept_streak = 0;
        kept = target_decides(state, &event, x, draft_probs, draft_raw);
        if (kept < 0) return -1;
    }
    seq->have_draft_probs = kept;
    if (kept) seq->current = 1 - seq->current; /* x survived: the draft's next distribution is ready */
    return 0;
}

const DecodeMethodOps kDecodeSequential = {.step = sequential_step, .state_size = sizeof(Sequential)};
