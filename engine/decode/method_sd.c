/* method_sd.c - the block methods: draft up to gamma tokens, then one target pass verifies them
 * with the lossless SD test (accept x w.p. min(1, p(x)/q(x)), else resample from norm(max(p - q, 0)),
 * a bonus token from p when every draft is accepted). They differ only in when drafting stops:
 *   sd         after gamma drafts
 *   pmin       also before a draft whose distribution's top probability is below p_min (llama.cpp)
 *   specdecpp  also after a draft the learned head scores below tau (SpecDec++-style)
 * and judge differs in who keeps a drafted token: the SD test OR the judge head (score >= tau_judge on
 * the target's hidden state at the drafted token; Judge Decoding, lossy); the first token both reject
 * is replaced by the residual draw, as in sd. The SD test's uniform is drawn first for every checked
 * token and the judge draws nothing, so a judge that never accepts (tau_judge > 1) is sd exactly.
 */
#include <math.h>
#include <string.h>

#include "decoder_int.h"

/* pmin: no draft from a distribution q [V] whose top probability is below p_min. */
static int stop_before_draft(const RunState *state, const float *q) {
    return state->cfg->method == DM_PMIN && q[sampler_argmax(q, state->decoder->vocab_size)] < state->cfg->p_min;
}

/* Drafts up to gamma tokens after seq[0..n) into seq[n..), their distributions into draft_probs and
 * (specdecpp) the head's scores into scores[]; returns how many, or -1. */
static int draft_block(RunState *state, float scores[SP_GAMMA_MAX + 1]) {
    Decoder *decoder = state->decoder;
    const DecodeConfig *cfg = state->cfg;
    int V = decoder->vocab_size, n = state->n_committed, n_drafted = 0;
    int scored = cfg->method == DM_SPECDECPP;
    const float *logits, *hidden = NULL;
    if (draft_advance(state, n, 1, &logits, NULL)) return -1;
    for (int i = 0; i < cfg->gamma; i++) {
        float *draft_row = decoder->draft_probs + (size_t)i * V;
        if (decode_probs(state, logits, draft_row)) return -1;
        if (stop_before_draft(state, draft_row)) break;
        int32_t x = sampler_draw(draft_row, V, state->rng);
        decoder->seq[n + n_drafted++] = x;
        scores[i] = NAN;
        /* the draft runs on x for the next q, and for the head's input */
        if (i + 1 == cfg->gamma && !scored) break;
        if (draft_advance(state, n + n_drafted, 1, &logits, &hidden)) return -1;
        if (scored) {
            scores[i] = verifier_eval(state, hidden);
            if (!verifier_accepts(scores[i], cfg->tau)) break;
        }
    }
    return n_drafted;
}

/* judge: the judge's label and decision on drafted x from the target's row p [V] and its state h [d_target]
 * at x (into event); 1 if the judge keeps x. Without a head (allowed when tau_judge > 1) it never does. */
static int judge_decides(RunState *state, const float *p, int32_t x, const float *h, TokenEvent *event) {
    const DecodeConfig *cfg = state->cfg;
    int V = state->decoder->vocab_size;
    event->label = (int8_t)judge_label_acceptable(p[x], p[sampler_argmax(p, V)], cfg->judge_rho);
    if (!state->decoder->judge) return 0;
    event->score = judge_eval(state, h);
    event->decision = (int8_t)verifier_accepts(event->score, cfg->tau_judge);
    return event->decision == 1;
}

/* One block: draft, one target pass over the drafts, the SD test token by token. */
static int block_step(RunState *state) {
    Decoder *decoder = state->decoder;
    const DecodeConfig *cfg = state->cfg;
    int V = decoder->vocab_size, n = state->n_committed;
    const float *logits;
    float scores[SP_GAMMA_MAX + 1];
    int n_drafted = draft_block(state, scores);
    if (n_drafted < 0) return -1;
    state->out->stats.drafted += n_drafted;
    /* target rows p_0..p_k for positions n..n+k (k = n_drafted): row j is the target's state at position
     * n - 1 + j, so the state AT drafted x_i (position n + i, after reading it) is row i + 1 */
    int judged = cfg->method == DM_JUDGE;
    const float *target_hidden = NULL;
    size_t d_target = judged ? (size_t)model_config(decoder->target.model)->d_model : 0;
    if (target_advance_hidden(state, n + n_drafted, n_drafted + 1, &logits, judged ? &target_hidden : NULL)) return -1;
    for (int i = 0; i <= n_drafted; i++)
        if (decode_probs(state, logits + (size_t)i * V, decoder->target_probs + (size_t)i * V)) return -1;
    int32_t drafted_tokens[SP_GAMMA_MAX + 1];
    memcpy(drafted_tokens, decoder->seq + n, (size_t)n_drafted * sizeof *drafted_tokens);
    for (int i = 0; i < n_drafted && !state->done; i++) {
        const float *target_row = decoder->target_probs + (size_t)i * V;
        const float *draft_row = decoder->draft_probs + (size_t)i * V;
        int32_t x = drafted_tokens[i];
        TokenEvent event = blank_event();
        event.draft_token = x;
        event.q = draft_row[x];
        event.p = target_row[x];
        event.label = true_label(state, event.q, event.p);
        event.score = scores[i];
        event.decision = cfg->method == DM_SPECDECPP ? (int8_t)verifier_accepts(scores[i], cfg->tau) : -1;
        event.target_called = 1;
        const float *at_x = judged ? target_hidden + (size_t)(i + 1) * d_target : NULL;
        const float *captured = cfg->capture_target_hidden ? at_x : NULL;
        int sd_keeps = sd_accept(state, event.p, event.q); /* first, as in sd: the same uniforms */
        int judge_keeps = judged && judge_decides(state, target_row, x, at_x, &event);
        if (sd_keeps) {
            event.kind = EV_SD_ACCEPT;
            emit(state, x, event, captured);
        } else if (judge_keeps) {
            event.kind = EV_VERIFIER_ACCEPT; /* kept by the judge alone (the target did run) */
            emit(state, x, event, captured);
        } else {
            event.kind = EV_SD_RESAMPLE;
            emit(state, draw_residual(state, target_row, draft_row), event, captured);
            end_round(state);
            truncate_lanes(state);
            return 0;
        }
    }
    if (!state->done) {
        TokenEvent event = blank_event();
        event.kind = n_drafted ? EV_BONUS : EV_TARGET_SAMPLE;
        event.target_called = 1;
        emit(state, sampler_draw(decoder->target_probs + (size_t)n_drafted * V, V, state->rng), event, NULL);
    }
    end_round(state);
    truncate_lanes(state);
    return 0;
}

const DecodeMethodOps kDecodeBlock = {.step = block_step};
