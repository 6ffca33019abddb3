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
#include <time.h>

typedef struct Lane {
    const Model *m;
    Session *s;
    double params; /* for FLOPs */
} Lane;

struct Decoder {
    Lane draft, target, audit;
    const Verifier *ver;
    int V, max_ctx, gamma_cap;
    int32_t *seq;   /* [max_ctx] */
    float *q;       /* [gamma_cap + 1, V] draft distributions of the current block */
    float *qs[2];   /* [2][V] current and next draft distribution (sprinter) */
    float *p;       /* [gamma_cap + 1, V] target distributions */
    float *pa;      /* [V] audit distribution */
    float *r;       /* [V] residual */
    int32_t *work;  /* [V] sampler scratch */
    float *h;       /* [d_draft] copy of a draft hidden state */
};

void decode_config_default(DecodeConfig *c) {
    memset(c, 0, sizeof *c);
    c->method = DM_SD;
    c->sampling = (SamplerParams){1.0f, 0, 1.0f};
    c->max_new = 20;
    c->gamma = SP_DEFAULT_GAMMA;
    c->tau = SP_DEFAULT_TAU;
    c->lambda = SP_DEFAULT_LAMBDA;
    c->eta_fp = 0.0;
    c->eta_tp = 1.0;
    c->alpha = 0.5;
    c->p_min = 0.5;
    c->stop_at_eos = 0;
}

int decode_config_check(const DecodeConfig *c, SpErr *err) {
    if (c->method < 0 || c->method >= DM_COUNT) return sp_fail(err, "method: unknown");
    if (sampler_params_check(&c->sampling, err)) return -1;
    if (c->max_new < 1) return sp_fail(err, "max_new = %d must be >= 1", c->max_new);
    if (c->gamma < 1 || c->gamma > SP_GAMMA_MAX) return sp_fail(err, "gamma = %d must be in [1, %d]", c->gamma, SP_GAMMA_MAX);
    if (!(c->tau >= 0 && c->tau <= 1)) return sp_fail(err, "tau = %g must be in [0, 1]", c->tau);
    if (!(c->lambda > 0)) return sp_fail(err, "lambda = %g must be > 0", c->lambda);
    if (!(c->eta_fp >= 0 && c->eta_fp <= 1) || !(c->eta_tp >= 0 && c->eta_tp <= 1))
        return sp_fail(err, "eta_fp = %g and eta_tp = %g must be in [0, 1]", c->eta_fp, c->eta_tp);
    if (!(c->alpha >= 0 && c->alpha <= 1)) return sp_fail(err, "alpha = %g must be in [0, 1]", c->alpha);
    if (!(c->p_min >= 0 && c->p_min <= 1)) return sp_fail(err, "p_min = %g must be in [0, 1]", c->p_min);
    if (c->max_run < 0) return sp_fail(err, "max_run = %d must be >= 0", c->max_run);
    if (!(c->oracle_stay >= 0 && c->oracle_stay < 1)) return sp_fail(err, "oracle_stay = %g must be in [0, 1)", c->oracle_stay);
    return 0;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ------------------------------------------------------------------ setup */

static int lane_init(Lane *L, const Model *m, int max_ctx, SpErr *err) {
    L->m = m;
    L->params = (double)model_n_params(m);
    L->s = session_new(m, max_ctx, max_ctx, err);
    return L->s ? 0 : -1;
}

Decoder *decoder_new(const Model *draft, const Model *target, const Verifier *verifier, int max_ctx, SpErr *err) {
    if (!draft && !target) {
        sp_fail(err, "decoder needs a draft or a target model");
        return NULL;
    }
    const ModelConfig *cd = draft ? model_config(draft) : NULL, *ct = target ? model_config(target) : NULL;
    if (cd && ct && cd->vocab_size != ct->vocab_size) {
        sp_fail(err, "draft vocab_size %d differs from target vocab_size %d", cd->vocab_size, ct->vocab_size);
        return NULL;
    }
    if (verifier && cd && verifier->d != cd->d_model) {
        sp_fail(err, "verifier has d = %d but the draft's hidden size is %d", verifier->d, cd->d_model);
        return NULL;
    }
    Decoder *d = calloc(1, sizeof *d);
    if (!d) {
        sp_fail(err, "out of memory");
        return NULL;
    }
    d->V = cd ? cd->vocab_size : ct->vocab_size;
    d->max_ctx = max_ctx;
    d->gamma_cap = SP_GAMMA_MAX;
    d->ver = verifier;
    if ((draft && lane_init(&d->draft, draft, max_ctx, err)) || (target && lane_init(&d->target, target, max_ctx, err)) ||
        (target && lane_init(&d->audit, target, max_ctx, err)))
        goto fail;
    size_t V = (size_t)d->V, rows = (size_t)d->gamma_cap + 1;
    d->seq = malloc((size_t)max_ctx * sizeof *d->seq);
    d->q = malloc(rows * V * sizeof *d->q);
    d->p = malloc(rows * V * sizeof *d->p);
    d->qs[0] = malloc(V * sizeof *d->qs[0]);
    d->qs[1] = malloc(V * sizeof *d->qs[1]);
    d->pa = malloc(V * sizeof *d->pa);
    d->r = malloc(V * sizeof *d->r);
    d->work = malloc(V * sizeof *d->work);
    d->h = malloc((size_t)(cd ? cd->d_model : 1) * sizeof *d->h);
    if (!d->seq || !d->q || !d->p || !d->qs[0] || !d->qs[1] || !d->pa || !d->r || !d->work || !d->h) {
        sp_fail(err, "out of memory");
        goto fail;
    }
    return d;
fail:
    decoder_free(d);
    return NULL;
}

void decoder_free(Decoder *d) {
    if (!d) return;
    session_free(d->draft.s);
    session_free(d->target.s);
    session_free(d->audit.s);
    free(d->seq);
    free(d->q);
    free(d->p);
    free(d->qs[0]);
    free(d->qs[1]);
    free(d->pa);
    free(d->r);
    free(d->work);
    free(d->h);
    free(d);
}

void decode_output_free(DecodeOutput *o) {
    free(o->tokens);
    free(o->events);
    free(o->hidden);
    memset(o, 0, sizeof *o);
}

/* ------------------------------------------------------------------ run state */

typedef struct Run {
    Decoder *d;
    const DecodeConfig *cfg;
    gsl_rng *rng;
    DecodeOutput *out;
    int n;          /* committed length of d->seq */
    int n_prompt;
    int done;       /* max_new reached or eos emitted */
    int nonfinite;  /* the error in err is non-finite logits (decoder_run returns DECODE_ERR_NONFINITE) */
    int forwards;   /* forward passes so far (fault_nan_logits poisons the first) */
    SpErr *err;
} Run;

/* Feeds lane L the tokens seq[len..upto) (after truncating a stale tail) and returns the logits
 * of the last n_tail positions upto-n_tail .. upto-1 ([n_tail, V]) and their hidden states. */
static int lane_advance(Run *R, Lane *L, int upto, int n_tail, const float **logits, const float **hidden,
                        int64_t *calls, int64_t *toks, double *secs, double *flops) {
    int len = session_len(L->s);
    if (len > upto - n_tail) {
        if (session_truncate(L->s, upto - n_tail, R->err)) return -1;
        len = upto - n_tail;
    }
    int c = upto - len;
    double t0 = now_s();
    const float *hid;
    if (session_forward_tail(L->s, R->d->seq + len, c, n_tail, logits, &hid, R->err)) return -1;
    if (hidden) *hidden = hid + (size_t)(c - n_tail) * model_config(L->m)->d_model;
    *secs += now_s() - t0;
    *calls += 1;
    *toks += c;
    *flops += 2.0 * L->params * c;
    /* A NaN/Inf weight surfaces here: name the model and the position (the sampler could not). */
    int V = model_config(L->m)->vocab_size;
    int poison = R->cfg->fault_nan_logits && R->forwards++ == 0; /* tests only */
    for (size_t i = 0; i < (size_t)n_tail * (size_t)V; i++) {
        float x = poison && i == 0 ? NAN : (*logits)[i];
        if (!isfinite(x)) {
            R->nonfinite = 1;
            return sp_fail(R->err, "%s model: logits at position %d contain %s at index %d",
                           L == &R->d->draft ? "draft" : L == &R->d->target ? "target" : "target (audit)",
                           upto - n_tail + (int)(i / (size_t)V), isnan(x) ? "NaN" : x > 0 ? "+Inf" : "-Inf",
                           (int)(i % (size_t)V));
        }
    }
    return 0;
}

static int draft_advance(Run *R, int upto, int n_tail, const float **logits, const float **hidden) {
    DecodeStats *st = &R->out->stats;
    return lane_advance(R, &R->d->draft, upto, n_tail, logits, hidden, &st->draft_forwards, &st->draft_tokens,
                        &st->t_draft, &st->flops_draft);
}

static int target_advance(Run *R, int upto, int n_tail, const float **logits) {
    DecodeStats *st = &R->out->stats;
    return lane_advance(R, &R->d->target, upto, n_tail, logits, NULL, &st->target_forwards, &st->target_tokens,
                        &st->t_target, &st->flops_target);
}

/* p for the token at position pos (logits of position pos - 1) from the audit lane, into d->pa. */
static int audit_p(Run *R, int pos) {
    DecodeStats *st = &R->out->stats;
    double flops = 0;
    const float *L;
    if (lane_advance(R, &R->d->audit, pos, 1, &L, NULL, &st->audit_forwards, &st->audit_tokens, &st->t_audit, &flops))
        return -1;
    return sampler_probs(&R->cfg->sampling, L, R->d->V, R->d->pa, R->d->work, R->err);
}

static void truncate_lanes(Run *R) {
    Lane *lanes[] = {&R->d->draft, &R->d->target, &R->d->audit};
    for (int i = 0; i < 3; i++)
        if (lanes[i]->s && session_len(lanes[i]->s) > R->n - 1) session_truncate(lanes[i]->s, R->n - 1, NULL);
}

static TokenEvent blank_event(void) {
    TokenEvent e = {0};
    e.draft_token = -1;
    e.q = e.p = e.score = NAN;
    e.decision = -1;
    e.label = -1;
    return e;
}

static int8_t true_label(const Run *R, float q, float p) {
    if (isnan(p)) return -1;
    return (int8_t)label_acceptable(q, p, R->cfg->lambda);
}

/* Appends the token and its event (and the draft hidden state when captured). */
static void emit(Run *R, int32_t token, TokenEvent e, const float *hidden) {
    DecodeOutput *o = R->out;
    if (R->done) return;
    R->d->seq[R->n] = token;
    e.pos = R->n;
    e.token = token;
    R->n++;
    o->tokens[o->n_tokens++] = token;
    if (o->hidden) {
        float *row = o->hidden + (size_t)o->n_events * o->d_hidden;
        if (hidden) memcpy(row, hidden, (size_t)o->d_hidden * sizeof *row);
        else memset(row, 0, (size_t)o->d_hidden * sizeof *row);
    }
    o->events[o->n_events++] = e;
    o->stats.tokens++;
    if (e.kind == EV_VERIFIER_ACCEPT || e.kind == EV_SD_ACCEPT) o->stats.accepted++;
    int eos = model_config(R->d->target.m ? R->d->target.m : R->d->draft.m)->eos_id;
    if (o->n_tokens >= R->cfg->max_new || (R->cfg->stop_at_eos && token == eos)) R->done = 1;
}

/* Residual norm(max(p - q, 0)) into d->r and a draw from it; falls back to p if p == q. */
static int32_t draw_residual(Run *R, const float *p, const float *q) {
    int V = R->d->V;
    double mass = 0;
    for (int i = 0; i < V; i++) {
        float v = p[i] - q[i];
        R->d->r[i] = v > 0 ? v : 0;
        mass += R->d->r[i];
    }
    if (!(mass > 0) || R->cfg->fault_broken_residual) return sampler_draw(p, V, R->rng);
    return sampler_draw(R->d->r, V, R->rng);
}

/* The SD accept test for draft token x: accept with probability min(1, p(x) / q(x)). */
static int sd_accept(Run *R, float px, float qx) {
    double u = gsl_rng_uniform(R->rng);
    return u * (double)qx < (double)px;
}

/* ------------------------------------------------------------------ ar, draft, bild */

static int run_single(Run *R, int use_target) {
    const float *L;
    float *probs = R->d->p;
    while (!R->done) {
        int rc = use_target ? target_advance(R, R->n, 1, &L) : draft_advance(R, R->n, 1, &L, NULL);
        if (rc || sampler_probs(&R->cfg->sampling, L, R->d->V, probs, R->d->work, R->err)) return -1;
        int32_t t = sampler_draw(probs, R->d->V, R->rng);
        TokenEvent e = blank_event();
        e.kind = use_target ? EV_TARGET_SAMPLE : EV_DRAFT_SAMPLE;
        e.target_called = (int8_t)use_target;
        emit(R, t, e, NULL);
    }
    return 0;
}

static int run_bild(Run *R) {
    const float *L;
    int V = R->d->V;
    while (!R->done) {
        if (draft_advance(R, R->n, 1, &L, NULL) || sampler_probs(&R->cfg->sampling, L, V, R->d->q, R->d->work, R->err))
            return -1;
        float top = 0;
        for (int i = 0; i < V; i++) top = R->d->q[i] > top ? R->d->q[i] : top;
        TokenEvent e = blank_event();
        e.score = top;
        e.decision = top >= R->cfg->alpha;
        if (e.decision) {
            int32_t x = sampler_draw(R->d->q, V, R->rng);
            e.kind = EV_DRAFT_SAMPLE;
            e.draft_token = x;
            e.q = R->d->q[x];
            emit(R, x, e, NULL);
        } else {
            if (target_advance(R, R->n, 1, &L) || sampler_probs(&R->cfg->sampling, L, V, R->d->p, R->d->work, R->err))
                return -1;
            e.kind = EV_TARGET_SAMPLE;
            e.target_called = 1;
            emit(R, sampler_draw(R->d->p, V, R->rng), e, NULL);
        }
        truncate_lanes(R);
    }
    return 0;
}

/* ------------------------------------------------------------------ sd, pmin, specdecpp */

/* One block: draft up to gamma tokens (stopping rule per method), verify them in one target pass. */
static int sd_block(Run *R) {
    Decoder *d = R->d;
    const DecodeConfig *cfg = R->cfg;
    int V = d->V, n = R->n, k = 0;
    const float *L, *H = NULL;
    if (draft_advance(R, n, 1, &L, NULL)) return -1;
    float scores[SP_GAMMA_MAX + 1];
    for (int i = 0; i < cfg->gamma; i++) {
        float *qi = d->q + (size_t)i * V;
        if (sampler_probs(&cfg->sampling, L, V, qi, d->work, R->err)) return -1;
        if (cfg->method == DM_PMIN) {
            float top = 0;
            for (int v = 0; v < V; v++) top = qi[v] > top ? qi[v] : top;
            if (top < cfg->p_min) break;
        }
        int32_t x = sampler_draw(qi, V, R->rng);
        d->seq[n + k++] = x;
        scores[i] = NAN;
        int need_next = i + 1 < cfg->gamma || cfg->method == DM_SPECDECPP;
        if (!need_next) break;
        if (draft_advance(R, n + k, 1, &L, &H)) return -1;
        if (cfg->method == DM_SPECDECPP) {
            double t0 = now_s();
            scores[i] = (float)verifier_score(d->ver, H);
            R->out->stats.t_verifier += now_s() - t0;
            R->out->stats.verifier_evals++;
            R->out->stats.flops_verifier += 2.0 * d->ver->d;
            if (!verifier_accepts(scores[i], cfg->tau)) break;
        }
    }
    R->out->stats.drafted += k;
    /* target rows p_0..p_k for positions n..n+k */
    if (target_advance(R, n + k, k + 1, &L)) return -1;
    for (int i = 0; i <= k; i++)
        if (sampler_probs(&cfg->sampling, L + (size_t)i * V, V, d->p + (size_t)i * V, d->work, R->err)) return -1;
    int32_t drafts[65];
    memcpy(drafts, d->seq + n, (size_t)k * sizeof *drafts);
    for (int i = 0; i < k && !R->done; i++) {
        const float *pi = d->p + (size_t)i * V, *qi = d->q + (size_t)i * V;
        int32_t x = drafts[i];
        TokenEvent e = blank_event();
        e.draft_token = x;
        e.q = qi[x];
        e.p = pi[x];
        e.label = true_label(R, e.q, e.p);
        e.score = scores[i];
        e.decision = cfg->method == DM_SPECDECPP ? (int8_t)verifier_accepts(scores[i], cfg->tau) : -1;
        e.target_called = 1;
        if (sd_accept(R, e.p, e.q)) {
            e.kind = EV_SD_ACCEPT;
            emit(R, x, e, NULL);
        } else {
            e.kind = EV_SD_RESAMPLE;
            emit(R, draw_residual(R, pi, qi), e, NULL);
            truncate_lanes(R);
            return 0;
        }
    }
    if (!R->done) {
        TokenEvent e = blank_event();
        e.kind = k ? EV_BONUS : EV_TARGET_SAMPLE;
        e.target_called = 1;
        emit(R, sampler_draw(d->p + (size_t)k * V, V, R->rng), e, NULL);
    }
    truncate_lanes(R);
    return 0;
}

static int run_sd(Run *R) {
    while (!R->done)
        if (sd_block(R)) return -1;
    return 0;
}

/* ------------------------------------------------------------------ sprinter, oracle-iid, collect */

static int run_sprinter(Run *R) {
    Decoder *d = R->d;
    const DecodeConfig *cfg = R->cfg;
    int V = d->V, run = 0, have_q = 0, cur = 0;
    int8_t last_decision[2] = {-1, -1}; /* oracle-markov: previous decision per true label */
    const float *L, *H;
    while (!R->done) {
        int n = R->n;
        float *q = d->qs[cur], *qn = d->qs[1 - cur];
        if (!have_q) {
            if (draft_advance(R, n, 1, &L, NULL) || sampler_probs(&cfg->sampling, L, V, q, d->work, R->err)) return -1;
        }
        /* draft x ~ q, then run the draft on x: its hidden state is the verifier's input and its
         * logits are the next q if x survives */
        int32_t x = sampler_draw(q, V, R->rng);
        d->seq[n] = x;
        R->out->stats.drafted++;
        if (draft_advance(R, n + 1, 1, &L, &H)) return -1;
        memcpy(d->h, H, (size_t)model_config(d->draft.m)->d_model * sizeof *d->h);
        if (sampler_probs(&cfg->sampling, L, V, qn, d->work, R->err)) return -1;

        TokenEvent e = blank_event();
        e.draft_token = x;
        e.q = q[x];
        int oracle = cfg->method == DM_ORACLE_IID || cfg->method == DM_ORACLE_MARKOV;
        int need_p = cfg->audit || oracle;
        if (need_p) {
            if (audit_p(R, n)) return -1;
            e.p = d->pa[x];
            e.label = true_label(R, e.q, e.p);
        }
        int capped = cfg->max_run > 0 && run >= cfg->max_run;
        if (cfg->method == DM_SPRINTER) {
            double t0 = now_s();
            e.score = (float)verifier_score(d->ver, d->h);
            R->out->stats.t_verifier += now_s() - t0;
            R->out->stats.verifier_evals++;
            R->out->stats.flops_verifier += 2.0 * d->ver->d;
            e.decision = (int8_t)verifier_accepts(e.score, cfg->tau);
        } else if (oracle) {
            double rate = e.label == 1 ? cfg->eta_tp : cfg->eta_fp;
            int8_t *last = &last_decision[e.label == 1];
            if (cfg->method == DM_ORACLE_MARKOV && *last >= 0 && gsl_rng_uniform(R->rng) < cfg->oracle_stay)
                e.decision = *last;
            else
                e.decision = (int8_t)(gsl_rng_uniform(R->rng) < rate);
            *last = e.decision;
        } else { /* collect: the target decides every token */
            e.decision = 0;
        }
        if (e.decision == 1 && !capped) {
            e.kind = EV_VERIFIER_ACCEPT;
            emit(R, x, e, d->h);
            run++;
        } else {
            /* target over everything since its last call; row for position n */
            if (target_advance(R, n, 1, &L) || sampler_probs(&cfg->sampling, L, V, d->p, d->work, R->err)) return -1;
            e.p = d->p[x];
            e.label = true_label(R, e.q, e.p);
            e.target_called = 1;
            e.capped = (int8_t)(e.decision == 1 && capped);
            run = 0;
            if (sd_accept(R, e.p, e.q)) {
                e.kind = EV_SD_ACCEPT;
                emit(R, x, e, d->h);
            } else {
                e.kind = EV_SD_RESAMPLE;
                emit(R, draw_residual(R, d->p, q), e, d->h);
                truncate_lanes(R);
                have_q = 0;
                continue;
            }
        }
        cur = 1 - cur; /* x survived: the draft's next distribution is already computed */
        have_q = 1;
    }
    return 0;
}

/* ------------------------------------------------------------------ entry */

int decoder_run(Decoder *d, const DecodeConfig *cfg, const int32_t *prompt, int n_prompt, gsl_rng *rng,
                DecodeOutput *out, SpErr *err) {
    memset(out, 0, sizeof *out);
    if (decode_config_check(cfg, err)) return -1;
    DecodeMethod m = cfg->method;
    int needs_draft = method_is(m, MC_USES_DRAFT), needs_target = method_is(m, MC_USES_TARGET);
    if (needs_draft && !d->draft.s) return sp_fail(err, "method %s needs a draft model", decode_method_name(m));
    if (needs_target && !d->target.s) return sp_fail(err, "method %s needs a target model", decode_method_name(m));
    if (method_is(m, MC_NEEDS_VERIFIER) && !d->ver)
        return sp_fail(err, "method %s needs a verifier", decode_method_name(m));
    if (n_prompt < 1) return sp_fail(err, "empty prompt");
    if (n_prompt + cfg->max_new + cfg->gamma + 1 > d->max_ctx)
        return sp_fail(err, "prompt (%d tokens) + max_new %d + gamma %d exceeds the decoder's context of %d", n_prompt,
                       cfg->max_new, cfg->gamma, d->max_ctx);
    for (int i = 0; i < n_prompt; i++)
        if (prompt[i] < 0 || prompt[i] >= d->V) return sp_fail(err, "prompt token %d = %d out of range", i, prompt[i]);
    out->tokens = malloc((size_t)cfg->max_new * sizeof *out->tokens);
    out->events = malloc((size_t)cfg->max_new * sizeof *out->events);
    if (cfg->capture_hidden && d->draft.s) {
        out->d_hidden = model_config(d->draft.m)->d_model;
        out->hidden = malloc((size_t)cfg->max_new * out->d_hidden * sizeof *out->hidden);
    }
    if (!out->tokens || !out->events || (cfg->capture_hidden && d->draft.s && !out->hidden)) {
        decode_output_free(out);
        return sp_fail(err, "out of memory");
    }
    memcpy(d->seq, prompt, (size_t)n_prompt * sizeof *prompt);
    Lane *lanes[] = {&d->draft, &d->target, &d->audit};
    for (int i = 0; i < 3; i++)
        if (lanes[i]->s) session_truncate(lanes[i]->s, 0, NULL);
    Run R = {d, cfg, rng, out, n_prompt, n_prompt, 0, 0, 0, err};
    double t0 = now_s();
    int rc;
    switch (m) {
    case DM_AR: rc = run_single(&R, 1); break;
    case DM_DRAFT: rc = run_single(&R, 0); break;
    case DM_BILD: rc = run_bild(&R); break;
    case DM_SD:
    case DM_PMIN:
    case DM_SPECDECPP: rc = run_sd(&R); break;
    default: rc = run_sprinter(&R); break;
    }
    out->stats.t_total = now_s() - t0 - out->stats.t_audit;
    if (rc) decode_output_free(out);
    return rc == 0 ? 0 : R.nonfinite ? DECODE_ERR_NONFINITE : -1;
}

void sprinter_next_token_law(const float *p, const float *q, const double *a, int V, double *out) {
    double R = 0, mass = 0;
    for (int v = 0; v < V; v++) {
        double acc = q[v] > 0 ? fmin(1.0, (double)p[v] / q[v]) : 1.0;
        out[v] = q[v] * a[v] + q[v] * (1 - a[v]) * acc;
        R += q[v] * (1 - a[v]) * (1 - acc);
        double r = (double)p[v] - q[v];
        mass += r > 0 ? r : 0;
    }
    for (int v = 0; v < V; v++) {
        double r = (double)p[v] - q[v];
        if (mass > 0 && r > 0) out[v] += R * r / mass;
    }
}
