/* accept.c - the events a decode emits and the speculative-sampling accept step, with the exact
 * next-token law of the sprinter method beside it (decoding.h, decoder_int.h). */
#include <math.h>
#include <stdlib.h>
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
    if (event.kind == EV_VERIFIER_ACCEPT || event.kind == EV_SD_ACCEPT || event.kind == EV_LOSSY_ACCEPT) {
        out->stats.accepted++;
        state->round_kept++;
    }
    if (event.kind == EV_SD_RESAMPLE || event.kind == EV_LOSSY_RESAMPLE) out->stats.rejected++;
    const ModelConfig *eos_of = model_config(decoder->target.model ? decoder->target.model : decoder->draft.model);
    if ((out->n_tokens >= state->cfg->max_new && !state->cfg->finish_round) ||
        (state->cfg->stop_at_eos && config_is_eos(eos_of, token)))
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

int sd_test(double u, float px, float qx) { return u * (double)qx < (double)px; }

int sd_accept(RunState *state, float px, float qx) { return sd_test(gsl_rng_uniform(state->rng), px, qx); }

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

void judge_next_token_law(const float *p, const float *q, const double *j, int V, double *out) {
    /* kept iff the SD test OR the judge keeps it: q(v)[m + (1 - m) j] = q(v)[j + (1 - j) m], the sprinter
     * law with a = j */
    sprinter_next_token_law(p, q, j, V, out);
}

int judge_candidate_decisions(const Model *target, const Verifier *judge, double tau_judge, const int32_t *prefix,
                              int n, double *j, float *hidden_out, SpErr *err) {
    const ModelConfig *c = model_config(target);
    int V = c->vocab_size, d = c->d_model;
    if (judge->d != d) return sp_fail(err, "judge head has d = %d but the target's hidden size is %d", judge->d, d);
    if (n < 1) return sp_fail(err, "judge candidates: empty prefix");
    /* batches of up to 256 candidates (bounded activations), the prefix cached once */
    if (n + 1 > c->max_pos) return sp_fail(err, "judge candidates: prefix of %d tokens fills the context of %d", n, c->max_pos);
    int batch = V < 256 ? V : 256, ctx = n + 1 > batch ? n + 1 : batch;
    if (ctx > c->max_pos) ctx = c->max_pos;
    if (batch > ctx) batch = ctx; /* a session's batch is at most its context */
    Session *s = session_new(target, ctx, batch, err);
    if (!s) return -1;
    int32_t *tokens = malloc((size_t)batch * sizeof *tokens);
    int rc = tokens ? 0 : sp_fail(err, "out of memory");
    const float *hidden;
    if (rc == 0) rc = session_prefill(s, prefix, n, NULL, NULL, err);
    for (int v0 = 0; rc == 0 && v0 < V; v0 += batch) {
        int m = V - v0 < batch ? V - v0 : batch;
        for (int i = 0; i < m; i++) tokens[i] = v0 + i;
        if ((rc = session_candidates(s, tokens, m, NULL, &hidden, err))) break;
        for (int i = 0; i < m; i++) {
            const float *h = hidden + (size_t)i * d;
            j[v0 + i] = verifier_accepts(verifier_score(judge, h), tau_judge);
            if (hidden_out) memcpy(hidden_out + (size_t)(v0 + i) * d, h, (size_t)d * sizeof *h);
        }
    }
    free(tokens);
    session_free(s);
    return rc;
}
