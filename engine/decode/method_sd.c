/* method_sd.c - the block methods: draft up to gamma tokens, then one target pass verifies them
 * token by token up to the first rejection, a bonus token from p when every draft is accepted.
 * The lossless ones verify with the SD test (accept x w.p. min(1, p(x)/q(x)), else resample from
 * norm(max(p - q, 0))) and differ only in when drafting stops:
 *   sd         after gamma drafts
 *   pmin       also before a draft whose confidence, the top probability of the draft's plain
 *              softmax (sampler_top_prob), is below p_min (llama.cpp)
 *   specdecpp  also after a draft the learned head scores below tau (SpecDec++-style)
 * The lossy ones draft as sd does and differ in the rule that verifies a draft (verify_* below; the
 * rules' arithmetic and exact laws are lossy_law.c's):
 *   typical        accept iff p(x) > min(typical_eps, typical_alpha exp(-H(p))), else a draw from p
 *   fsd            accept outright iff D(p, q) <= fsd_threshold, else SD's test and residual
 *   optimal-lossy  SD's test and residual against r (optimal_lossy_row) in place of p
 *   judge          SD's test OR the judge head (score >= tau_judge on the TARGET's hidden state at the
 *                  drafted token; Judge Decoding) keeps it, else SD's residual
 * Every rule draws SD's uniform u first, once per verified draft, as sd_accept does: so the runs
 * consume the RNG as sd's do, fsd at threshold 0 and optimal-lossy at lossy_kl 0 are sd draw for
 * draw, and the kind of each event says whether SD's test with that u (u q(x) < p(x)) would have
 * accepted the token (EV_SD_ACCEPT) or only the lossy rule did (EV_LOSSY_ACCEPT, events.h; the
 * judge's keep is EV_VERIFIER_ACCEPT with target_called 1). The judge draws nothing, so a judge that
 * never accepts (tau_judge > 1) is sd exactly.
 */
#include <math.h>
#include <string.h>

#include "decoder_int.h"

/* pmin: no draft from logits [V] whose plain softmax's top probability is below p_min. */
static int stop_before_draft(const RunState *state, const float *logits) {
    return state->cfg->method == DM_PMIN && sampler_top_prob(logits, state->decoder->vocab_size) < state->cfg->p_min;
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
        if (stop_before_draft(state, logits)) break;
        int32_t x = sampler_draw(draft_row, V, state->rng);
        decoder->seq[n + n_drafted++] = x;
        scores[i] = NAN;
        /* the draft runs on x for the next q, and for the head's input */
        if (i + 1 == cfg->gamma && !scored) break;
        if (draft_advance(state, n + n_drafted, 1, &logits, &hidden)) return -1;
        if (scored) {
            scores[i] = head_eval(state, state->decoder->verifier, hidden);
            if (!verifier_accepts(scores[i], cfg->tau)) break;
        }
    }
    return n_drafted;
}

/* The verdict on draft x at one position: the token to emit and the event's kind. */
typedef struct Verdict {
    int32_t token;
    int8_t kind;
} Verdict;

/* What a rule sees of one drafted token besides x, p and q: its event (a rule may record its
 * decision there) and the target's hidden state after reading x (judge only, else NULL). */
typedef struct DraftAt {
    TokenEvent *event;
    const float *target_state; /* [d_target] */
} DraftAt;

/* sd, pmin, specdecpp: SD's test, else a draw from the residual norm(max(p - q, 0)). */
static Verdict verify_sd(RunState *state, int32_t x, const float *p, const float *q, DraftAt at) {
    (void)at;
    if (sd_accept(state, p[x], q[x])) return (Verdict){x, EV_SD_ACCEPT};
    return (Verdict){draw_residual(state, p, q), EV_SD_RESAMPLE};
}

/* An accept of a lossy rule: sd_accept if SD's test with the same u accepts x too. */
static Verdict lossy_accept(double u, int32_t x, const float *p, const float *q) {
    return (Verdict){x, sd_test(u, p[x], q[x]) ? EV_SD_ACCEPT : EV_LOSSY_ACCEPT};
}

/* typical: accept iff p(x) > min(eps, alpha exp(-H(p))); a rejected draft is replaced from p. */
static Verdict verify_typical(RunState *state, int32_t x, const float *p, const float *q, DraftAt at) {
    (void)at;
    const DecodeConfig *cfg = state->cfg;
    int V = state->decoder->vocab_size;
    double u = gsl_rng_uniform(state->rng); /* SD's draw: the same RNG stream as sd, and the kind */
    if (typical_accepts(p[x], typical_threshold(p, V, cfg->typical_eps, cfg->typical_alpha)))
        return lossy_accept(u, x, p, q);
    return (Verdict){sampler_draw(p, V, state->rng), EV_LOSSY_RESAMPLE};
}

/* fsd: accept outright iff D(p, q) <= threshold; otherwise SD's test with u, else SD's residual. */
static Verdict verify_fsd(RunState *state, int32_t x, const float *p, const float *q, DraftAt at) {
    (void)at;
    const DecodeConfig *cfg = state->cfg;
    int V = state->decoder->vocab_size;
    double u = gsl_rng_uniform(state->rng);
    if (sd_test(u, p[x], q[x]) || fsd_accepts_outright(p, q, V, cfg->fsd_divergence, cfg->fsd_threshold))
        return lossy_accept(u, x, p, q);
    return (Verdict){draw_residual(state, p, q), EV_SD_RESAMPLE};
}

/* optimal-lossy: SD's test and residual against r; r >= p wherever q > p (lossy_law.c), so every
 * token SD's test accepts is accepted. At lossy_kl 0, r is p itself: sd's verdict. */
static Verdict verify_optimal_lossy(RunState *state, int32_t x, const float *p, const float *q, DraftAt at) {
    (void)at;
    Decoder *decoder = state->decoder;
    const float *r = optimal_lossy_row(p, q, decoder->vocab_size, state->cfg->lossy_kl, decoder->lossy_work,
                                       decoder->lossy_r, decoder->lossy_rf);
    double u = gsl_rng_uniform(state->rng);
    if (sd_test(u, r[x], q[x])) return lossy_accept(u, x, p, q);
    return (Verdict){draw_residual(state, r, q), r == p ? EV_SD_RESAMPLE : EV_LOSSY_RESAMPLE};
}

/* judge: the judge's label and decision on drafted x from the target's row p [V] and its state h [d_target]
 * at x (into event); 1 if the judge keeps x. Without a head (allowed when tau_judge > 1) it never does. */
static int judge_decides(RunState *state, const float *p, int32_t x, const float *h, TokenEvent *event) {
    const DecodeConfig *cfg = state->cfg;
    int V = state->decoder->vocab_size;
    event->label = (int8_t)judge_label_acceptable(p[x], p[sampler_argmax(p, V)], cfg->judge_rho);
    if (!state->decoder->judge) return 0;
    event->score = head_eval(state, state->decoder->judge, h);
    event->decision = (int8_t)verifier_accepts(event->score, cfg->tau_judge);
    return event->decision == 1;
}

/* judge: SD's test first (the same uniforms as sd), then the judge on every checked token (its score
 * and decision are logged either way); x is kept if either keeps it, else SD's residual. */
static Verdict verify_judge(RunState *state, int32_t x, const float *p, const float *q, DraftAt at) {
    int sd_keeps = sd_accept(state, p[x], q[x]);
    int judge_keeps = judge_decides(state, p, x, at.target_state, at.event);
    if (sd_keeps) return (Verdict){x, EV_SD_ACCEPT};
    if (judge_keeps) return (Verdict){x, EV_VERIFIER_ACCEPT}; /* kept by the judge alone (the target did run) */
    return (Verdict){draw_residual(state, p, q), EV_SD_RESAMPLE};
}

static Verdict verify_draft(RunState *state, int32_t x, const float *p, const float *q, DraftAt at) {
    switch (state->cfg->method) {
    case DM_TYPICAL: return verify_typical(state, x, p, q, at);
    case DM_FSD: return verify_fsd(state, x, p, q, at);
    case DM_OPTIMAL_LOSSY: return verify_optimal_lossy(state, x, p, q, at);
    case DM_JUDGE: return verify_judge(state, x, p, q, at);
    default: return verify_sd(state, x, p, q, at);
    }
}

/* A verdict that keeps the drafted token (the block goes on). */
static int keeps(Verdict v) { return v.kind == EV_SD_ACCEPT || v.kind == EV_LOSSY_ACCEPT || v.kind == EV_VERIFIER_ACCEPT; }

/* One block: draft, one target pass over the drafts, the method's rule token by token. */
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
        Verdict verdict = verify_draft(state, x, target_row, draft_row, (DraftAt){&event, at_x});
        event.kind = verdict.kind;
        emit(state, verdict.token, event, captured);
        if (!keeps(verdict)) {
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
