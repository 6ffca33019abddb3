/* method_single.c - one model alone, one token per forward: ar (the target, the baseline) and
 * draft (the draft, the control SPRINTER degrades towards as eta_FP -> 1). */
#include "decoder_int.h"

/* One token from the target (use_target) or the draft. */
static int single_step(RunState *state, int use_target) {
    Decoder *decoder = state->decoder;
    const float *logits;
    float *probs = decoder->target_probs;
    int rc = use_target ? target_advance(state, state->n_committed, 1, &logits)
                        : draft_advance(state, state->n_committed, 1, &logits, NULL);
    if (rc || decode_probs(state, logits, probs)) return -1;
    int32_t token = sampler_draw(probs, decoder->vocab_size, state->rng);
    TokenEvent event = blank_event();
    event.kind = use_target ? EV_TARGET_SAMPLE : EV_DRAFT_SAMPLE;
    event.target_called = (int8_t)use_target;
    emit(state, token, event, NULL);
    return 0;
}

static int target_step(RunState *state) { return single_step(state, 1); }
static int draft_step(RunState *state) { return single_step(state, 0); }

const DecodeMethodOps kDecodeTarget = {.step = target_step};
const DecodeMethodOps kDecodeDraft = {.step = draft_step};
