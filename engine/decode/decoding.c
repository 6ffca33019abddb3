/* decoding.c - the decoding methods of decoding.h.
 *
 * Sequence bookkeeping: seq[0..n) is committed (prompt + emitted). Each model "lane" owns a
 * session whose cache holds some prefix of seq; lane_advance() feeds it the missing tokens in one
 * batched call and returns logits for the last rows. After a commit, every lane is truncated to
 * at most n - 1 positions: cached positions before n - 1 always hold committed tokens, and the
 * position n - 1 may hold a rejected draft token, so it is recomputed.
 */
#include "decoding.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"

typedef struct Lane {
    const Model *model;
    Session *session;
    double params; /* for FLOPs */
} Lane;

struct Decoder {
    Lane draft, target, audit;
    const Verifier *verifier;
    /* shapes below: V = vocab_size */
    int vocab_size, max_ctx, gamma_cap;
    int32_t *seq;                   /* [max_ctx] prompt + emitted tokens, then the current drafts */
    float *draft_probs;             /* [gamma_cap + 1, V] draft distributions q of the current block */
    float *sprinter_draft_probs[2]; /* [2][V] current and next draft distribution q (sprinter) */
    float *target_probs;            /* [gamma_cap + 1, V] target distributions p */
    float *audit_probs;             /* [V] audit distribution p */
    float *residual;                /* [V] max(p - q, 0), the residual before normalising */
    int32_t *sampler_work;          /* [V] sampler scratch */
    float *draft_hidden;            /* [d_draft] copy of a draft hidden state */
    float *prefix_hidden;           /* [d_draft] the draft's state at the position before the drafted token */
    /* LABEL_PAPER_CODE: the plain softmax (T = 1) of the same logits, for the label */
    float *draft_raw[2];            /* [2][V] beside sprinter_draft_probs */
    float *target_raw;              /* [V] of the target's row for the decided token */
    float *audit_raw;               /* [V] beside audit_probs */
};

void decode_config_default(DecodeConfig *c) {
    memset(c, 0, sizeof *c);
    c->method = DM_SD;
    c->sampling = (SamplerParams){1.0f, 0, 1.0f};
    c->max_new = 20;
#define RP_DEFAULT_(ID, name, type, dflt, ...) c->name = dflt;
    RUN_PARAMS(RP_DEFAULT_) /* the grid parameters' defaults (params_table.h) */
#undef RP_DEFAULT_
    c->stop_at_eos = 0;
}

int decode_config_check(const DecodeConfig *c, SpErr *err) {
    if (c->method < 0 || c->method >= DM_COUNT) return sp_fail(err, "method: unknown");
    if (sampler_params_check(&c->sampling, err)) return -1;
    if (c->max_new < 1) return sp_fail(err, "max_new = %d must be >= 1", c->max_new);
#define RP_CHECK_(ID, name, ...) if (run_param_check(RP_##ID, c->name, err)) return -1;
    RUN_PARAMS(RP_CHECK_) /* the grid parameters' ranges (params_table.h) */
#undef RP_CHECK_
    if (c->label_rule != LABEL_SOUND && c->label_rule != LABEL_PAPER_CODE) return sp_fail(err, "label_rule: unknown");
    if (c->finish_round && c->max_run < 1)
        return sp_fail(err, "finish_round needs max_run >= 1 (a round must end; the authors' code caps it at 20 drafts)");
    return 0;
}

/* ------------------------------------------------------------------ setup */

static int lane_init(Lane *lane, const Model *model, int max_ctx, SpErr *err) {
    lane->model = model;
    lane->params = (double)model_n_params(model);
    lane->session = session_new(model, max_ctx, max_ctx, err);
    return lane->session ? 0 : -1;
}

Decoder *decoder_new(const Model *draft, const Model *target, const Verifier *verifier, int max_ctx, SpErr *err) {
    if (!draft && !target) {
        sp_fail(err, "decoder needs a draft or a target model");
        return NULL;
    }
    const ModelConfig *draft_config = draft ? model_config(draft) : NULL;
    const ModelConfig *target_config = target ? model_config(target) : NULL;
    if (draft_config && target_config && draft_config->vocab_size != target_config->vocab_size) {
        sp_fail(err, "draft vocab_size %d differs from target vocab_size %d", draft_config->vocab_size,
                target_config->vocab_size);
        return NULL;
    }
    if (verifier && draft_config && verifier->d != draft_config->d_model) {
        sp_fail(err, "verifier has d = %d but the draft's hidden size is %d", verifier->d, draft_config->d_model);
        return NULL;
    }
    Decoder *decoder = calloc(1, sizeof *decoder);
    if (!decoder) {
        sp_fail(err, "out of memory");
        return NULL;
    }
    decoder->vocab_size = draft_config ? draft_config->vocab_size : target_config->vocab_size;
    decoder->max_ctx = max_ctx;
    decoder->gamma_cap = SP_GAMMA_MAX;
    decoder->verifier = verifier;
    if ((draft && lane_init(&decoder->draft, draft, max_ctx, err)) ||
        (target && lane_init(&decoder->target, target, max_ctx, err)) ||
        (target && lane_init(&decoder->audit, target, max_ctx, err)))
        goto fail;
    size_t V = (size_t)decoder->vocab_size, rows = (size_t)decoder->gamma_cap + 1;
    decoder->seq = malloc((size_t)max_ctx * sizeof *decoder->seq);
    decoder->draft_probs = malloc(rows * V * sizeof *decoder->draft_probs);
    decoder->target_probs = malloc(rows * V * sizeof *decoder->target_probs);
    decoder->sprinter_draft_probs[0] = malloc(V * sizeof *decoder->sprinter_draft_probs[0]);
    decoder->sprinter_draft_probs[1] = malloc(V * sizeof *decoder->sprinter_draft_probs[1]);
    decoder->audit_probs = malloc(V * sizeof *decoder->audit_probs);
    decoder->residual = malloc(V * sizeof *decoder->residual);
    decoder->sampler_work = malloc(V * sizeof *decoder->sampler_work);
    decoder->draft_hidden = malloc((size_t)(draft_config ? draft_config->d_model : 1) * sizeof *decoder->draft_hidden);
    decoder->prefix_hidden = malloc((size_t)(draft_config ? draft_config->d_model : 1) * sizeof *decoder->prefix_hidden);
    decoder->draft_raw[0] = malloc(V * sizeof *decoder->draft_raw[0]);
    decoder->draft_raw[1] = malloc(V * sizeof *decoder->draft_raw[1]);
    decoder->target_raw = malloc(V * sizeof *decoder->target_raw);
    decoder->audit_raw = malloc(V * sizeof *decoder->audit_raw);
    if (!decoder->draft_raw[0] || !decoder->draft_raw[1] || !decoder->target_raw || !decoder->audit_raw) {
        sp_fail(err, "out of memory");
        goto fail;
    }
    if (!decoder->seq || !decoder->draft_probs || !decoder->target_probs || !decoder->sprinter_draft_probs[0] ||
        !decoder->sprinter_draft_probs[1] || !decoder->audit_probs || !decoder->residual || !decoder->sampler_work ||
        !decoder->draft_hidden || !decoder->prefix_hidden) {
        sp_fail(err, "out of memory");
        goto fail;
    }
    return decoder;
fail:
    decoder_free(decoder);
    return NULL;
}

void decoder_free(Decoder *decoder) {
    if (!decoder) return;
    session_free(decoder->draft.session);
    session_free(decoder->target.session);
    session_free(decoder->audit.session);
    free(decoder->seq);
    free(decoder->draft_probs);
    free(decoder->target_probs);
    free(decoder->sprinter_draft_probs[0]);
    free(decoder->sprinter_draft_probs[1]);
    free(decoder->audit_probs);
    free(decoder->residual);
    free(decoder->sampler_work);
    free(decoder->draft_hidden);
    free(decoder->prefix_hidden);
    free(decoder->draft_raw[0]);
    free(decoder->draft_raw[1]);
    free(decoder->target_raw);
    free(decoder->audit_raw);
    free(decoder);
}

void decode_output_free(DecodeOutput *o) {
    free(o->tokens);
    free(o->events);
    free(o->hidden);
    free(o->hidden_prefix);
    memset(o, 0, sizeof *o);
}

/* ------------------------------------------------------------------ run state */

/* What one decoder_run works on. */
typedef struct RunState {
    Decoder *decoder;
    const DecodeConfig *cfg;
    gsl_rng *rng;
    DecodeOutput *out;
    int n_committed; /* committed length of decoder->seq (prompt + emitted) */
    int done;        /* max_new reached (at a round's end under finish_round) or eos emitted */
    int round_kept;  /* sprinter-type: drafts emitted since the last round ended */
    int decisions;   /* tests only: scripted decisions used so far (indexes cfg->test_decisions) */
    int nonfinite;   /* the error in err is non-finite logits (decoder_run returns DECODE_ERR_NONFINITE) */
    int forwards;    /* forward passes so far (fault_nan_logits poisons the first) */
    const float *prefix_hidden; /* the drafted token's prefix state (sprinter-type methods), else NULL */
    SpErr *err;
} RunState;

/* Feeds the lane the tokens seq[cached..upto) (after truncating a stale tail) and returns the logits
 * of the last n_tail positions upto-n_tail .. upto-1 ([n_tail, V]) and their hidden states. */
static int lane_advance(RunState *state, Lane *lane, int upto, int n_tail, const float **logits, const float **hidden,
                        int64_t *calls, int64_t *toks, double *secs, double *flops) {
    int cached = session_len(lane->session);
    if (cached > upto - n_tail) {
        if (session_truncate(lane->session, upto - n_tail, state->err)) return -1;
        cached = upto - n_tail;
    }
    int n_new = upto - cached;
    double t0 = sp_now_s();
    const float *hidden_all;
    if (session_forward_tail(lane->session, state->decoder->seq + cached, n_new, n_tail, logits, &hidden_all,
                             state->err))
        return -1;
    if (hidden) *hidden = hidden_all + (size_t)(n_new - n_tail) * model_config(lane->model)->d_model;
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
    return 0;
}

static int draft_advance(RunState *state, int upto, int n_tail, const float **logits, const float **hidden) {
    DecodeStats *stats = &state->out->stats;
    return lane_advance(state, &state->decoder->draft, upto, n_tail, logits, hidden, &stats->draft_forwards,
                        &stats->draft_tokens, &stats->t_draft, &stats->flops_draft);
}

static int target_advance(RunState *state, int upto, int n_tail, const float **logits) {
    DecodeStats *stats = &state->out->stats;
    return lane_advance(state, &state->decoder->target, upto, n_tail, logits, NULL, &stats->target_forwards,
                        &stats->target_tokens, &stats->t_target, &stats->flops_target);
}

/* The plain softmax (temperature 1, no top-k / top-p) of logits [V] into out, for LABEL_PAPER_CODE
 * labels; nothing to do under LABEL_SOUND. */
static int raw_probs(RunState *state, const float *logits, float *out) {
    if (state->cfg->label_rule != LABEL_PAPER_CODE) return 0;
    const SamplerParams plain = {1.0f, 0, 1.0f};
    return sampler_probs(&plain, logits, state->decoder->vocab_size, out, state->decoder->sampler_work, state->err);
}

/* p for the token at position pos (logits of position pos - 1) from the audit lane, into
 * decoder->audit_probs. */
static int audit_p(RunState *state, int pos) {
    DecodeStats *stats = &state->out->stats;
    Decoder *decoder = state->decoder;
    double flops = 0;
    const float *logits;
    if (lane_advance(state, &decoder->audit, pos, 1, &logits, NULL, &stats->audit_forwards, &stats->audit_tokens,
                     &stats->t_audit, &flops))
        return -1;
    return sampler_probs(&state->cfg->sampling, logits, decoder->vocab_size, decoder->audit_probs,
                         decoder->sampler_work, state->err) ||
           raw_probs(state, logits, decoder->audit_raw);
}

/* The verifier's score of a drafted token from the draft's hidden state [d_draft], rounded to float
 * (as stored in its TokenEvent); counts the evaluation's time and FLOPs. */
static float verifier_eval(RunState *state, const float *hidden) {
    DecodeStats *stats = &state->out->stats;
    const Verifier *verifier = state->decoder->verifier;
    double t0 = sp_now_s();
    float score = (float)verifier_score(verifier, hidden);
    stats->t_verifier += sp_now_s() - t0;
    stats->verifier_evals++;
    stats->flops_verifier += 2.0 * verifier->d;
    return score;
}

static void truncate_lanes(RunState *state) {
    Lane *lanes[] = {&state->decoder->draft, &state->decoder->target, &state->decoder->audit};
    for (int i = 0; i < 3; i++)
        if (lanes[i]->session && session_len(lanes[i]->session) > state->n_committed - 1)
            session_truncate(lanes[i]->session, state->n_committed - 1, NULL);
}

static TokenEvent blank_event(void) {
    TokenEvent event = {0};
    event.draft_token = -1;
    event.q = event.p = event.score = NAN;
    event.decision = -1;
    event.label = -1;
    return event;
}

static int8_t true_label(const RunState *state, float q, float p) {
    if (isnan(p)) return -1;
    return (int8_t)label_acceptable(q, p, state->cfg->lambda);
}

/* The label of draft token x by cfg->label_rule: from the decoding distributions q, p ([V] each) or
 * from their raw (T = 1) counterparts q_raw, p_raw. */
static int8_t rule_label(const RunState *state, int32_t x, const float *q, const float *p, const float *q_raw,
                         const float *p_raw) {
    return state->cfg->label_rule == LABEL_PAPER_CODE ? true_label(state, q_raw[x], p_raw[x])
                                                      : true_label(state, q[x], p[x]);
}

/* Appends the token and its event (and the draft hidden state when captured). */
static void emit(RunState *state, int32_t token, TokenEvent event, const float *hidden) {
    DecodeOutput *out = state->out;
    Decoder *decoder = state->decoder;
    if (state->done) return;
    decoder->seq[state->n_committed] = token;
    event.pos = state->n_committed;
    event.token = token;
    state->n_committed++;
    out->tokens[out->n_tokens++] = token;
    if (out->hidden) {
        const float *from[2] = {hidden, state->prefix_hidden};
        float *rows[2] = {out->hidden + (size_t)out->n_events * out->d_hidden,
                          out->hidden_prefix + (size_t)out->n_events * out->d_hidden};
        for (int k = 0; k < 2; k++)
            if (from[k]) memcpy(rows[k], from[k], (size_t)out->d_hidden * sizeof *rows[k]);
            else memset(rows[k], 0, (size_t)out->d_hidden * sizeof *rows[k]);
    }
    out->events[out->n_events++] = event;
    out->stats.tokens++;
    if (event.kind == EV_VERIFIER_ACCEPT || event.kind == EV_SD_ACCEPT) out->stats.accepted++;
    if (event.kind == EV_VERIFIER_ACCEPT || event.kind == EV_SD_ACCEPT) state->round_kept++;
    if (event.kind == EV_SD_RESAMPLE) out->stats.rejected++;
    int eos = model_config(decoder->target.model ? decoder->target.model : decoder->draft.model)->eos_id;
    if ((out->n_tokens >= state->cfg->max_new && !state->cfg->finish_round) ||
        (state->cfg->stop_at_eos && token == eos))
        state->done = 1;
}

/* A sprinter-type round ends with the target's decision (and the bonus token, if any). */
static void end_round(RunState *state) {
    DecodeStats *stats = &state->out->stats;
    stats->rounds++;
    stats->round_kept += state->round_kept;
    state->round_kept = 0;
    if (state->out->n_tokens >= state->cfg->max_new) state->done = 1;
}

/* Residual norm(max(p - q, 0)) into decoder->residual and a draw from it; falls back to p if p == q. */
static int32_t draw_residual(RunState *state, const float *p, const float *q) {
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

/* The SD accept test for draft token x: accept with probability min(1, p(x) / q(x)). */
static int sd_accept(RunState *state, float px, float qx) {
    double u = gsl_rng_uniform(state->rng);
    return u * (double)qx < (double)px;
}

/* ------------------------------------------------------------------ ar, draft, bild */

static int run_single(RunState *state, int use_target) {
    Decoder *decoder = state->decoder;
    const float *logits;
    float *probs = decoder->target_probs;
    while (!state->done) {
        int rc = use_target ? target_advance(state, state->n_committed, 1, &logits)
                            : draft_advance(state, state->n_committed, 1, &logits, NULL);
        if (rc ||
            sampler_probs(&state->cfg->sampling, logits, decoder->vocab_size, probs, decoder->sampler_work, state->err))
            return -1;
        int32_t token = sampler_draw(probs, decoder->vocab_size, state->rng);
        TokenEvent event = blank_event();
        event.kind = use_target ? EV_TARGET_SAMPLE : EV_DRAFT_SAMPLE;
        event.target_called = (int8_t)use_target;
        emit(state, token, event, NULL);
    }
    return 0;
}

static int run_bild(RunState *state) {
    Decoder *decoder = state->decoder;
    const DecodeConfig *cfg = state->cfg;
    const float *logits;
    int V = decoder->vocab_size;
    float *draft_probs = decoder->draft_probs, *target_probs = decoder->target_probs;
    while (!state->done) {
        if (draft_advance(state, state->n_committed, 1, &logits, NULL) ||
            sampler_probs(&cfg->sampling, logits, V, draft_probs, decoder->sampler_work, state->err))
            return -1;
        float top_prob = 0;
        for (int i = 0; i < V; i++) top_prob = draft_probs[i] > top_prob ? draft_probs[i] : top_prob;
        TokenEvent event = blank_event();
        event.score = top_prob;
        event.decision = top_prob >= cfg->alpha;
        if (event.decision) {
            int32_t x = sampler_draw(draft_probs, V, state->rng);
            event.kind = EV_DRAFT_SAMPLE;
            event.draft_token = x;
            event.q = draft_probs[x];
            emit(state, x, event, NULL);
        } else {
            if (target_advance(state, state->n_committed, 1, &logits) ||
                sampler_probs(&cfg->sampling, logits, V, target_probs, decoder->sampler_work, state->err))
                return -1;
            event.kind = EV_TARGET_SAMPLE;
            event.target_called = 1;
            emit(state, sampler_draw(target_probs, V, state->rng), event, NULL);
        }
        truncate_lanes(state);
    }
    return 0;
}

/* ------------------------------------------------------------------ sd, pmin, specdecpp */

/* One block: draft up to gamma tokens (stopping rule per method), verify them in one target pass. */
static int sd_block(RunState *state) {
    Decoder *decoder = state->decoder;
    const DecodeConfig *cfg = state->cfg;
    int V = decoder->vocab_size, n = state->n_committed, n_drafted = 0;
    const float *logits, *hidden = NULL;
    if (draft_advance(state, n, 1, &logits, NULL)) return -1;
    float scores[SP_GAMMA_MAX + 1];
    for (int i = 0; i < cfg->gamma; i++) {
        float *draft_row = decoder->draft_probs + (size_t)i * V;
        if (sampler_probs(&cfg->sampling, logits, V, draft_row, decoder->sampler_work, state->err)) return -1;
        if (cfg->method == DM_PMIN) {
            float top_prob = 0;
            for (int v = 0; v < V; v++) top_prob = draft_row[v] > top_prob ? draft_row[v] : top_prob;
            if (top_prob < cfg->p_min) break;
        }
        int32_t x = sampler_draw(draft_row, V, state->rng);
        decoder->seq[n + n_drafted++] = x;
        scores[i] = NAN;
        int need_next = i + 1 < cfg->gamma || cfg->method == DM_SPECDECPP;
        if (!need_next) break;
        if (draft_advance(state, n + n_drafted, 1, &logits, &hidden)) return -1;
        if (cfg->method == DM_SPECDECPP) {
            scores[i] = verifier_eval(state, hidden);
            if (!verifier_accepts(scores[i], cfg->tau)) break;
        }
    }
    state->out->stats.drafted += n_drafted;
    /* target rows p_0..p_k for positions n..n+k (k = n_drafted) */
    if (target_advance(state, n + n_drafted, n_drafted + 1, &logits)) return -1;
    for (int i = 0; i <= n_drafted; i++)
        if (sampler_probs(&cfg->sampling, logits + (size_t)i * V, V, decoder->target_probs + (size_t)i * V,
                          decoder->sampler_work, state->err))
            return -1;
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
        if (sd_accept(state, event.p, event.q)) {
            event.kind = EV_SD_ACCEPT;
            emit(state, x, event, NULL);
        } else {
            event.kind = EV_SD_RESAMPLE;
            emit(state, draw_residual(state, target_row, draft_row), event, NULL);
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

static int run_sd(RunState *state) {
    while (!state->done)
        if (sd_block(state)) return -1;
    return 0;
}

/* ------------------------------------------------------------------ sprinter, oracle-iid, collect */

static int run_sprinter(RunState *state) {
    Decoder *decoder = state->decoder;
    const DecodeConfig *cfg = state->cfg;
    int V = decoder->vocab_size;
    int accept_streak = 0;    /* verifier accepts in a row (max_run caps it) */
    int have_draft_probs = 0; /* sprinter_draft_probs[current] already holds q at position n */
    int current = 0;
    int8_t last_decision[2] = {-1, -1}; /* oracle-markov: previous decision per true label */
    const float *logits, *hidden;
    while (!state->done) {
        int n = state->n_committed;
        float *draft_probs = decoder->sprinter_draft_probs[current];
        float *next_draft_probs = decoder->sprinter_draft_probs[1 - current];
        float *draft_raw = decoder->draft_raw[current], *next_draft_raw = decoder->draft_raw[1 - current];
        size_t d_draft = (size_t)model_config(decoder->draft.model)->d_model;
        if (!have_draft_probs) {
            if (draft_advance(state, n, 1, &logits, &hidden) ||
                sampler_probs(&cfg->sampling, logits, V, draft_probs, decoder->sampler_work, state->err) ||
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
        if (sampler_probs(&cfg->sampling, logits, V, next_draft_probs, decoder->sampler_work, state->err) ||
            raw_probs(state, logits, next_draft_raw))
            return -1;

        TokenEvent event = blank_event();
        event.draft_token = x;
        event.q = draft_probs[x];
        int is_oracle = cfg->method == DM_ORACLE_IID || cfg->method == DM_ORACLE_MARKOV;
        int need_p = cfg->audit || is_oracle;
        if (need_p) {
            if (audit_p(state, n)) return -1;
            event.p = decoder->audit_probs[x];
            event.label = rule_label(state, x, draft_probs, decoder->audit_probs, draft_raw, decoder->audit_raw);
        }
        int capped = cfg->max_run > 0 && accept_streak >= cfg->max_run;
        if (cfg->test_decisions) { /* tests only */
            int k = state->decisions++;
            event.decision = k < cfg->n_test_decisions ? cfg->test_decisions[k] : 0;
        } else if (cfg->method == DM_SPRINTER) {
            event.score = verifier_eval(state, decoder->verifier->feature == VF_PREFIX ? decoder->prefix_hidden
                                                                                    : decoder->draft_hidden);
            event.decision = (int8_t)verifier_accepts(event.score, cfg->tau);
        } else if (is_oracle) {
            double rate = event.label == 1 ? cfg->eta_tp : cfg->eta_fp;
            int8_t *last = &last_decision[event.label == 1];
            if (cfg->method == DM_ORACLE_MARKOV && *last >= 0 && gsl_rng_uniform(state->rng) < cfg->oracle_stay)
                event.decision = *last;
            else
                event.decision = (int8_t)(gsl_rng_uniform(state->rng) < rate);
            *last = event.decision;
        } else { /* collect: the target decides every token */
            event.decision = 0;
        }
        if (event.decision == 1 && !capped) {
            event.kind = EV_VERIFIER_ACCEPT;
            emit(state, x, event, decoder->draft_hidden);
            accept_streak++;
        } else {
            /* target over everything since its last call: the row for position n, and with a bonus
             * also the row after x (the target then runs over x too) */
            int rows = cfg->bonus ? 2 : 1;
            if (target_advance(state, n + rows - 1, rows, &logits)) return -1;
            for (int i = 0; i < rows; i++)
                if (sampler_probs(&cfg->sampling, logits + (size_t)i * V, V, decoder->target_probs + (size_t)i * V,
                                  decoder->sampler_work, state->err))
                    return -1;
            if (raw_probs(state, logits, decoder->target_raw)) return -1;
            event.p = decoder->target_probs[x];
            event.label = rule_label(state, x, draft_probs, decoder->target_probs, draft_raw, decoder->target_raw);
            event.target_called = 1;
            event.capped = (int8_t)(event.decision == 1 && capped);
            accept_streak = 0;
            /* collect under the authors' label rule: the context goes on with x when its label is 1, else
             * with the target's greedy token (dataset.py); otherwise the SD test decides */
            int follow_label = cfg->method == DM_COLLECT && cfg->label_rule == LABEL_PAPER_CODE;
            if (follow_label && event.label != 1) {
                int32_t greedy = 0;
                for (int v = 1; v < V; v++)
                    if (decoder->target_raw[v] > decoder->target_raw[greedy]) greedy = v;
                event.kind = EV_SD_RESAMPLE;
                emit(state, greedy, event, decoder->draft_hidden);
                end_round(state);
                truncate_lanes(state);
                have_draft_probs = 0;
                continue;
            }
            if (follow_label || sd_accept(state, event.p, event.q)) {
                event.kind = EV_SD_ACCEPT;
                emit(state, x, event, decoder->draft_hidden);
                if (cfg->bonus) {
                    TokenEvent bonus = blank_event();
                    bonus.kind = EV_BONUS;
                    bonus.target_called = 1;
                    state->prefix_hidden = NULL;
                    emit(state, sampler_draw(decoder->target_probs + V, V, state->rng), bonus, NULL);
                }
                end_round(state);
                if (cfg->bonus) { /* the draft has not seen the bonus token: q comes from a fresh step */
                    truncate_lanes(state);
                    have_draft_probs = 0;
                    continue;
                }
            } else {
                event.kind = EV_SD_RESAMPLE;
                emit(state, draw_residual(state, decoder->target_probs, draft_probs), event, decoder->draft_hidden);
                end_round(state);
                truncate_lanes(state);
                have_draft_probs = 0;
                continue;
            }
        }
        current = 1 - current; /* x survived: the draft's next distribution is already computed */
        have_draft_probs = 1;
    }
    return 0;
}

/* ------------------------------------------------------------------ entry */

int decode_max_tokens(const DecodeConfig *cfg) {
    return cfg->max_new + (cfg->finish_round ? cfg->max_run + 1 : 0);
}

int decoder_run(Decoder *decoder, const DecodeConfig *cfg, const int32_t *prompt, int n_prompt, gsl_rng *rng,
                DecodeOutput *out, SpErr *err) {
    memset(out, 0, sizeof *out);
    if (decode_config_check(cfg, err)) return -1;
    DecodeMethod method = cfg->method;
    int needs_draft = method_is(method, MC_USES_DRAFT), needs_target = method_is(method, MC_USES_TARGET);
    if (needs_draft && !decoder->draft.session)
        return sp_fail(err, "method %s needs a draft model", decode_method_name(method));
    if (needs_target && !decoder->target.session)
        return sp_fail(err, "method %s needs a target model", decode_method_name(method));
    if (method_is(method, MC_NEEDS_VERIFIER) && !decoder->verifier)
        return sp_fail(err, "method %s needs a verifier", decode_method_name(method));
    if (method == DM_SPECDECPP && decoder->verifier->feature != VF_TOKEN)
        return sp_fail(err, "method specdecpp needs a verifier of the token feature (this one scores the prefix)");
    if (n_prompt < 1) return sp_fail(err, "empty prompt");
    int max_out = decode_max_tokens(cfg);
    if (n_prompt + max_out + cfg->gamma + 1 > decoder->max_ctx)
        return sp_fail(err, "prompt (%d tokens) + at most %d new tokens + gamma %d exceeds the decoder's context of %d",
                       n_prompt, max_out, cfg->gamma, decoder->max_ctx);
    for (int i = 0; i < n_prompt; i++)
        if (prompt[i] < 0 || prompt[i] >= decoder->vocab_size)
            return sp_fail(err, "prompt token %d = %d out of range", i, prompt[i]);
    out->tokens = malloc((size_t)max_out * sizeof *out->tokens);
    out->events = malloc((size_t)max_out * sizeof *out->events);
    if (cfg->capture_hidden && decoder->draft.session) {
        out->d_hidden = model_config(decoder->draft.model)->d_model;
        out->hidden = malloc((size_t)max_out * out->d_hidden * sizeof *out->hidden);
        out->hidden_prefix = malloc((size_t)max_out * out->d_hidden * sizeof *out->hidden_prefix);
    }
    if (!out->tokens || !out->events ||
        (cfg->capture_hidden && decoder->draft.session && (!out->hidden || !out->hidden_prefix))) {
        decode_output_free(out);
        return sp_fail(err, "out of memory");
    }
    memcpy(decoder->seq, prompt, (size_t)n_prompt * sizeof *prompt);
    Lane *lanes[] = {&decoder->draft, &decoder->target, &decoder->audit};
    for (int i = 0; i < 3; i++)
        if (lanes[i]->session) session_truncate(lanes[i]->session, 0, NULL);
    RunState state = {.decoder = decoder, .cfg = cfg, .rng = rng, .out = out, .n_committed = n_prompt, .err = err};
    double t0 = sp_now_s();
    int rc;
    switch (method) {
    case DM_AR: rc = run_single(&state, 1); break;
    case DM_DRAFT: rc = run_single(&state, 0); break;
    case DM_BILD: rc = run_bild(&state); break;
    case DM_SD:
    case DM_PMIN:
    case DM_SPECDECPP: rc = run_sd(&state); break;
    default: rc = run_sprinter(&state); break;
    }
    out->stats.t_total = sp_now_s() - t0 - out->stats.t_audit;
    if (rc) decode_output_free(out);
    return rc == 0 ? 0 : state.nonfinite ? DECODE_ERR_NONFINITE : -1;
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
