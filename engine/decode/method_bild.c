/* method_bild.c - BiLD-style fallback: the draft emits its token when its confidence, the top
 * probability of its plain softmax (sampler_top_prob: temperature 1, nothing cut), is at least alpha;
 * otherwise the target samples the token instead (lossy, no rollback). */
#include "decoder_int.h"

static int bild_step(RunState *state) {
    Decoder *decoder = state->decoder;
    const float *logits;
    int V = decoder->vocab_size;
    float *draft_probs = decoder->draft_probs, *target_probs = decoder->target_probs;
    if (draft_advance(state, state->n_committed, 1, &logits, NULL) || decode_probs(state, logits, draft_probs))
        return -1;
    float top_prob = sampler_top_prob(logits, V);
    TokenEvent event = blank_event();
    event.score = top_prob;
    event.decision = top_prob >= state->cfg->alpha;
    if (event.decision) {
        int32_t x = sampler_draw(draft_probs, V, state->rng);
        event.kind = EV_DRAFT_SAMPLE;
        event.draft_token = x;
        event.q = draft_probs[x];
        emit(state, x, event, NULL);
    } else {
        if (target_advance(state, state->n_committed, 1, &logits) || decode_probs(state, logits, target_probs))
            return -1;
        event.kind = EV_TARGET_SAMPLE;
        event.target_called = 1;
        emit(state, sampler_draw(target_probs, V, state->rng), event, NULL);
    }
    truncate_lanes(state);
    return 0;
}

const DecodeMethodOps kDecodeBild = {.step = bild_step};
