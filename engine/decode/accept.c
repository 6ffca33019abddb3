/* accept.c - the events a decode emits and the speculative-sampling accept step, with the exact
 * next-token law of the sprinter method beside it (decoding.h, decoder_int.h). */
#include <math.h>
#include <string.h>

#include "decoder_int.h"

TokenEvent blank_event(void) {
    TokenEvent event = {0};
    event.draft_token = -1;
    event.q = event.p = event.score = NAN;
    event.q_raw = event.p_raw = NAN;
    event.decision = -1;
    event.label = -1;
    return event;
}

int8_t true_label(const RunState *state, float q, float p) {
    if (isnan(p)) return -1;
    return (int8_t)label_acceptable(q, p, state->cfg->lambda);
}

int8_t rule_label(const RunState *state, int32_t x, const float *q, const float *p, const float *q_raw,
                  const float *p_raw) {
    return state->cfg->label_rule == PROTOCOL_PAPER_CODE ? true_label(state, q_raw[x], p_raw[x])
                                                      : true_label(state, q[x], p[x]);
}

void set_rule_label(const RunState *state, TokenEvent *event, int32_t x, const float *q, const float *p,
                    const float *q_raw, const float *p_raw) {
    event->label = rule_label(state, x, q, p, q_raw, p_raw);
    if (state->cfg->label_rule == PROTOCOL_PAPER_CODE) event->q_raw = q_raw[x], event->p_raw = p_raw[x];
}

/* Copies the drafted token's states (token and prefix feature) into row n_events of the output, or
 * zeros where a state is absent. */
static void capture_hidden(RunState *state, const float *hidden) {
    DecodeOutput *out = state->out;
    const float *from[2] = {hidden, state->prefix_hidden};
    float *rows[2] = {out->hidden + (size_t)out->n_events * out->d_hidden,
                      out->hidden_prefix + (size_t)out->n_events * out->d_hidden};
    for (int k = 0; k < 2; k++)
        if (from[k]) memcpy(rows[k], from[k], (size_t)out->d_hidden * sizeof *rows[k]);
        else memset(rows[k], 0, (size_t)out->d_hidden * sizeof *rows[k]);
}

void emit(RunState *state, int32_t token, TokenEvent event, const float *hidden) {
    DecodeOutput *out = state->out;
    Decoder *decoder = state->decoder;
    if (state->done) return;
    decoder->seq[state->n_committed] = token;
    event.pos = state->n_committed;
    event.token = token;
    state->n_committed++;
    out->tokens[out->n_tokens++] = token;
    if (out->hidden) capture_hidden(state, hidden);
    out->events[out->n_events++] = event;
    out->stats.tokens++;
    if (event.kind == EV_VERIFIER_ACCEPT || event.kind == EV_SD_ACCEPT) {
        out->stats.accepted++;
        state->round_kept++;
    }
    if (event.kind == EV_SD_RESAMPLE) out->stats.rejected++;
    int eos = model_config(decoder->target.model ? decoder->target.model : decoder->draft.model)->eos_id;
    if ((out->n_tokens >= state->cfg->max_new && !state->cfg->finish_round) ||
        (state->cfg->stop_at_eos && token == eos))
        state->done = 1;
}

void end_round(RunState *state) {
    DecodeStats *stats = &state->out->stats;
    stats->rounds++;
    stats->round_kept += state->round_kept;
    state->round_kept = 0;
    if (state->out->n_tokens >= state->cfg->max_new) state->done = 1;
}

int32_t draw_residual(RunState *state, const float *p, const float *q) {
    Decoder *decoder = state->decoder;
    int V = decoder->vocab_size;
    double mass = 0;
    for (int i = 0; i < V; i++) {
        float diff = p[i] - q[i];
        decoder->residual[i] = diff > 0 ? diff : 0;
        mass += decoder->residual[i];
    }
    if (!(mass > 0) || state->cfg->fault_broken_residual) return sampler_draw(p, V, state->rng);
    return sampler_draw(decoder->residual, V, state->rng);
}

int sd_accept(RunState *state, float px, float qx) {
    double u = gsl_rng_uniform(state->rng);
    return u * (double)qx < (double)px;
}

void sprinter_next_token_law(const float *p, const float *q, const double *a, int V, double *out) {
    double reject_mass = 0, residual_mass = 0; /* R and the normaliser of r in decoding.h */
    for (int v = 0; v < V; v++) {
        double accept_prob = q[v] > 0 ? fmin(1.0, (double)p[v] / q[v]) : 1.0;
        out[v] = q[v] * a[v] + q[v] * (1 - a[v]) * accept_prob;
        reject_mass += q[v] * (1 - a[v]) * (1 - accept_prob);
        double residual = (double)p[v] - q[v];
        residual_mass += residual > 0 ? residual : 0;
    }
    for (int v = 0; v < V; v++) {
        double residual = (double)p[v] - q[v];
        if (residual_mass > 0 && residual > 0) out[v] += reject_mass * residual / residual_mass;
    }
}
