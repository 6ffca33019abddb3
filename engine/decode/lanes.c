/* lanes.c - the models a decode runs (draft, target, audit copy of the target) and the verifier
 * head, each call counted in the run's statistics (decoder_int.h). */
#include <math.h>
#include <string.h>

#include "clock.h"
#include "decoder_int.h"

int lane_init(Lane *lane, const Model *model, int max_ctx, SpErr *err) {
    lane->model = model;
    lane->params = (double)model_n_params(model);
    lane->session = session_new(model, max_ctx, max_ctx, err);
    return lane->session ? 0 : -1;
}

/* The lane's rows tokens[0..n) at its next positions (this decode's share of a batch, or its own call):
 * *logits [n_tail, V], *hidden_tail [n_tail, d] (the session's). */
static int forward(RunState *state, Lane *lane, const int32_t *tokens, int n, int n_tail, const float **logits,
                   const float **hidden_tail) {
    const float *hidden_all; /* [n, d] */
    struct BatchLink *link = state->decoder->link;
    if (link ? batch_link_forward(link, state->decoder->link_index, lane->model, lane->session, tokens, n, n_tail,
                                  logits, &hidden_all, state->err)
             : session_forward_tail(lane->session, tokens, n, n_tail, logits, &hidden_all, state->err))
        return -1;
    *hidden_tail = hidden_all + (size_t)(n - n_tail) * model_config(lane->model)->d_model;
    return 0;
}

int lane_advance(RunState *state, Lane *lane, int upto, int n_tail, const float **logits, const float **hidden,
                 int64_t *calls, int64_t *toks, double *secs, double *flops) {
    int cached = session_len(lane->session);
    if (cached > upto - n_tail) {
        if (session_truncate(lane->session, upto - n_tail, state->err)) return -1;
        cached = upto - n_tail;
    }
    int n_new = upto - cached;
    double t0 = sp_now_s();
    const float *hidden_tail; /* [n_tail, d] */
    const int32_t *tokens = state->decoder->seq + cached;
    /* a first call (the session empty) the memo holds is loaded, not run; one it lacks is kept below */
    PrefillMemo *memo = cached == 0 ? state->decoder->prefill_memo : NULL;
    int loaded = memo ? prefill_memo_load(memo, lane->model, lane->session, tokens, n_new, n_tail, logits,
                                          &hidden_tail, state->err)
                      : 0;
    if (loaded < 0) return -1;
    if (!loaded && forward(state, lane, tokens, n_new, n_tail, logits, &hidden_tail)) return -1;
    if (hidden) *hidden = hidden_tail;
    *secs += sp_now_s() - t0;
    *calls += 1;
    *toks += n_new;
    *flops += 2.0 * lane->params * n_new;
    /* A NaN/Inf weight surfaces here: name the model and the position (the sampler could not). */
    int V = model_config(lane->model)->vocab_size;
    int poison = state->cfg->fault_nan_logits && state->forwards++ == 0; /* tests only */
    for (size_t i = 0; i < (size_t)n_tail * (size_t)V; i++) {
        float x = poison && i == 0 ? NAN : (*logits)[i];
        if (!isfinite(x)) {
            state->nonfinite = 1;
            const Decoder *decoder = state->decoder;
            return sp_fail(state->err, "%s model: logits at position %d contain %s at index %d",
                           lane == &decoder->draft ? "draft" : lane == &decoder->target ? "target" : "target (audit)",
                           upto - n_tail + (int)(i / (size_t)V), isnan(x) ? "NaN" : x > 0 ? "+Inf" : "-Inf",
                           (int)(i % (size_t)V));
        }
    }
    if (memo && !loaded) prefill_memo_keep(memo, lane->model, lane->session, tokens, n_new, n_tail, *logits, hidden_tail);
    return 0;
}

int draft_advance(RunState *state, int upto, int n_tail, const float **logits, const float **hidden) {
    DecodeStats *stats = &state->out->stats;
    return lane_advance(state, &state->decoder->draft, upto, n_tail, logits, hidden, &stats->draft_forwards,
                        &stats->draft_tokens, &stats->t_draft, &stats->flops_draft);
}

int target_advance(RunState *state, int upto, int n_tail, const float **logits) {
    return target_advance_hidden(state, upto, n_tail, logits, NULL);
}

int target_advance_hidden(RunState *state, int upto, int n_tail, const float **logits, const float **hidden) {
    DecodeStats *stats = &state->out->stats;
    return lane_advance(state, &state->decoder->target, upto, n_tail, logits, hidden, &stats->target_forwards,
                        &stats->target_tokens, &stats->t_target, &stats->flops_target);
}

int decode_probs(RunState *state, const float *logits, float *out) {
    Decoder *decoder = state->decoder;
    return sampler_probs(&state->cfg->sampling, logits, decoder->vocab_size, out, decoder->sampler_work, state->err);
}

int raw_probs(RunState *state, const float *logits, float *out) {
    if (state->cfg->label_rule != PROTOCOL_PAPER_CODE) return 0;
    const SamplerParams plain = {1.0f, 0, 1.0f};
    return sampler_probs(&plain, logits, state->decoder->vocab_size, out, state->decoder->sampler_work, state->err);
}

int audit_p(RunState *state, int pos) {
    DecodeStats *stats = &state->out->stats;
    Decoder *decoder = state->decoder;
    double flops = 0;
    const float *logits;
    /* the audit copy's cache is made on first use: most runs never audit */
    if (!decoder->audit.session && lane_init(&decoder->audit, decoder->target.model, decoder->max_ctx, state->err))
        return -1;
    if (lane_advance(state, &decoder->audit, pos, 1, &logits, NULL, &stats->audit_forwards, &stats->audit_tokens,
                     &stats->t_audit, &flops))
        return -1;
    return decode_probs(state, logits, decoder->audit_probs) || raw_probs(state, logits, decoder->audit_raw);
}

float head_eval(RunState *state, const Verifier *head, const float *hidden) {
    DecodeStats *stats = &state->out->stats;
    double t0 = sp_now_s();
    float score = (float)verifier_score(head, hidden);
    stats->t_verifier += sp_now_s() - t0;
    stats->verifier_evals++;
    stats->flops_verifier += 2.0 * head->d;
    return score;
}

void truncate_lanes(RunState *state) {
    Lane *lanes[] = {&state->decoder->draft, &state->decoder->target, &state->decoder->audit};
    for (int i = 0; i < 3; i++)
        if (lanes[i]->session && session_len(lanes[i]->session) > state->n_committed - 1)
            session_truncate(lanes[i]->session, state->n_committed - 1, NULL);
}
