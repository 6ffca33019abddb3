/* decoding.c - the decoding loop of decoding.h: the decoder's buffers, the checks before a run, and
 * decoder_run, which steps the method's family (method_*.c, decoder_int.h) until the run is done. */
#include "decoding.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "decoder_int.h"

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
    if (c->label_rule != PROTOCOL_SOUND && c->label_rule != PROTOCOL_PAPER_CODE) return sp_fail(err, "label_rule: unknown");
    if (c->finish_round && c->max_run < 1)
        return sp_fail(err, "finish_round needs max_run >= 1 (a round must end; the authors' code caps it at 20 drafts)");
    return 0;
}

/* ------------------------------------------------------------------ setup */

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
    if (verifier && verifier->source != VS_DRAFT) {
        sp_fail(err, "the verifier scores the target's state (a judge head): set it with decoder_set_judge");
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
        (target && lane_init(&decoder->target, target, max_ctx, err)))
        goto fail;
    size_t V = (size_t)decoder->vocab_size, rows = (size_t)decoder->gamma_cap + 1;
    decoder->seq = malloc((size_t)max_ctx * sizeof *decoder->seq);
    decoder->draft_probs = malloc(rows * V * sizeof *decoder->draft_probs);
    decoder->target_probs = malloc(rows * V * sizeof *decoder->target_probs);
    decoder->sprinter_draft_probs[0] = malloc(V * sizeof *decoder->sprinter_draft_probs[0]);
    decoder->sprinter_draft_probs[1] = malloc(V * sizeof *decoder->sprinter_draft_probs[1]);
    decoder->audit_probs = malloc(V * sizeof *decoder->audit_probs);
    decoder->residual = malloc(V * sizeof *decoder->residual);
    decoder->lossy_work = malloc(OPTIMAL_LOSSY_WORK(V) * sizeof *decoder->lossy_work);
    decoder->lossy_r = malloc(V * sizeof *decoder->lossy_r);
    decoder->lossy_rf = malloc(V * sizeof *decoder->lossy_rf);
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
        !decoder->lossy_work || !decoder->lossy_r || !decoder->lossy_rf ||
        !decoder->draft_hidden || !decoder->prefix_hidden) {
        sp_fail(err, "out of memory");
        goto fail;
    }
    return decoder;
fail:
    decoder_free(decoder);
    return NULL;
}

void decoder_set_prefill_memo(Decoder *decoder, PrefillMemo *memo) { decoder->prefill_memo = memo; }

int decoder_set_judge(Decoder *decoder, const Verifier *judge, SpErr *err) {
    if (judge) {
        if (!decoder->target.model) return sp_fail(err, "a judge head needs a decoder with a target model");
        if (judge->source != VS_TARGET)
            return sp_fail(err, "the judge head must score the target's state (its source is %s)",
                           verifier_source_name(judge->source));
        int d = model_config(decoder->target.model)->d_model;
        if (judge->d != d) return sp_fail(err, "judge head has d = %d but the target's hidden size is %d", judge->d, d);
    }
    decoder->judge = judge;
    return 0;
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
    free(decoder->lossy_work);
    free(decoder->lossy_r);
    free(decoder->lossy_rf);
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

/* ------------------------------------------------------------------ entry */

int decode_max_tokens(const DecodeConfig *cfg) {
    return cfg->max_new + (cfg->finish_round ? cfg->max_run + 1 : 0);
}

/* gamma 0: a method that does not draft; its need is the prompt and what it emits. */
static int draft_rows(int gamma) { return gamma > 0 ? gamma + 1 : 0; }

int decode_context_need(int n_prompt, int max_out, int gamma) { return n_prompt + max_out + draft_rows(gamma); }

/* The gamma the context rule counts for a run of c: c->gamma when its method drafts, else 0. */
static int drafting_gamma(const DecodeConfig *c) { return method_is(c->method, MC_USES_DRAFT) ? c->gamma : 0; }

int decode_context_of(const DecodeConfig *c, int n_prompt) {
    return decode_context_need(n_prompt, decode_max_tokens(c), drafting_gamma(c));
}

int decode_prompt_room(int context, int max_out, int gamma) { return context - max_out - draft_rows(gamma); }

int decode_prompt_room_of(const DecodeConfig *c, int context) {
    return decode_prompt_room(context, decode_max_tokens(c), drafting_gamma(c));
}

/* The family that runs each method (methods.h SP_METHODS). */
#define SP_METHOD_FAMILY_(id, name, classes, family) [DM_##id] = &kDecode##family,
static const DecodeMethodOps *const kFamilyOf[DM_COUNT] = {SP_METHODS(SP_METHOD_FAMILY_)};
#undef SP_METHOD_FAMILY_

/* Checks that the decoder can run cfg on the prompt: models and verifier present, context, ids. */
static int check_run(const Decoder *decoder, const DecodeConfig *cfg, const int32_t *prompt, int n_prompt,
                     SpErr *err) {
    if (decode_config_check(cfg, err)) return -1;
    DecodeMethod method = cfg->method;
    int needs_draft = method_is(method, MC_USES_DRAFT), needs_target = method_is(method, MC_USES_TARGET);
    if (needs_draft && !decoder->draft.session)
        return sp_fail(err, "method %s needs a draft model", decode_method_name(method));
    if (needs_target && !decoder->target.session)
        return sp_fail(err, "method %s needs a target model", decode_method_name(method));
    if (method_is(method, MC_NEEDS_VERIFIER) && !decoder->verifier)
        return sp_fail(err, "method %s needs a verifier", decode_method_name(method));
    if (method_is(method, MC_NEEDS_JUDGE) && !decoder->judge && cfg->tau_judge <= 1)
        return sp_fail(err, "method %s needs a judge head (decoder_set_judge), unless tau_judge > 1", decode_method_name(method));
    if (cfg->capture_target_hidden && method != DM_JUDGE)
        return sp_fail(err, "capture_target_hidden: the target's states at drafted tokens are captured by method judge only");
    if (method == DM_SPECDECPP && decoder->verifier->feature != VF_TOKEN)
        return sp_fail(err, "method specdecpp needs a verifier of the token feature (this one scores the prefix)");
    if (n_prompt < 1) return sp_fail(err, "empty prompt");
    if (decode_context_of(cfg, n_prompt) > decoder->max_ctx) {
        if (!method_is(method, MC_USES_DRAFT))
            return sp_fail(err, "prompt (%d tokens) + at most %d new tokens exceeds the decoder's context of %d",
                           n_prompt, decode_max_tokens(cfg), decoder->max_ctx);
        return sp_fail(err, "prompt (%d tokens) + at most %d new tokens + gamma %d exceeds the decoder's context of %d",
                       n_prompt, decode_max_tokens(cfg), cfg->gamma, decoder->max_ctx);
    }
    for (int i = 0; i < n_prompt; i++)
        if (prompt[i] < 0 || prompt[i] >= decoder->vocab_size)
            return sp_fail(err, "prompt token %d = %d out of range", i, prompt[i]);
    return 0;
}

/* The output's buffers for at most decode_max_tokens(cfg) events. */
static int output_alloc(const Decoder *decoder, const DecodeConfig *cfg, DecodeOutput *out, SpErr *err) {
    int max_out = decode_max_tokens(cfg);
    out->tokens = malloc((size_t)max_out * sizeof *out->tokens);
    out->events = malloc((size_t)max_out * sizeof *out->events);
    if (cfg->capture_hidden && decoder->draft.session) {
        out->d_hidden = model_config(cfg->capture_target_hidden ? decoder->target.model : decoder->draft.model)->d_model;
        out->hidden = malloc((size_t)max_out * out->d_hidden * sizeof *out->hidden);
        out->hidden_prefix = malloc((size_t)max_out * out->d_hidden * sizeof *out->hidden_prefix);
    }
    if (!out->tokens || !out->events ||
        (cfg->capture_hidden && decoder->draft.session && (!out->hidden || !out->hidden_prefix))) {
        decode_output_free(out);
        return sp_fail(err, "out of memory");
    }
    return 0;
}

/* decoder_run, with the sequential methods' decisions from script when it is not NULL. */
static int run(Decoder *decoder, const DecodeConfig *cfg, const DecisionScript *script, const int32_t *prompt,
               int n_prompt, gsl_rng *rng, DecodeOutput *out, SpErr *err) {
    memset(out, 0, sizeof *out);
    if (check_run(decoder, cfg, prompt, n_prompt, err) || output_alloc(decoder, cfg, out, err)) return -1;
    const DecodeMethodOps *family = kFamilyOf[cfg->method];
    void *method_state = family->state_size ? calloc(1, family->state_size) : NULL;
    if (family->state_size && !method_state) {
        decode_output_free(out);
        return sp_fail(err, "out of memory");
    }
    memcpy(decoder->seq, prompt, (size_t)n_prompt * sizeof *prompt);
    Lane *lanes[] = {&decoder->draft, &decoder->target, &decoder->audit};
    for (int i = 0; i < 3; i++)
        if (lanes[i]->session) session_truncate(lanes[i]->session, 0, NULL);
    RunState state = {.decoder = decoder, .cfg = cfg, .rng = rng, .out = out, .n_committed = n_prompt,
                      .script = script, .method_state = method_state, .err = err};
    double t0 = sp_now_s();
    int rc = 0;
    while (!state.done && rc == 0) rc = family->step(&state);
    out->stats.t_total = sp_now_s() - t0 - out->stats.t_audit;
    free(method_state);
    if (rc) decode_output_free(out);
    return rc == 0 ? 0 : state.nonfinite ? DECODE_ERR_NONFINITE : -1;
}

int decoder_run(Decoder *decoder, const DecodeConfig *cfg, const int32_t *prompt, int n_prompt, gsl_rng *rng,
                DecodeOutput *out, SpErr *err) {
    return run(decoder, cfg, NULL, prompt, n_prompt, rng, out, err);
}

int decoder_run_scripted(Decoder *decoder, const DecodeConfig *cfg, const DecisionScript *script,
                         const int32_t *prompt, int n_prompt, gsl_rng *rng, DecodeOutput *out, SpErr *err) {
    if (!method_is(cfg->method, MC_SEQUENTIAL) && cfg->method != DM_COLLECT)
        return sp_fail(err, "decoder_run_scripted: method %s makes no sequential decisions",
                       decode_method_name(cfg->method));
    return run(decoder, cfg, script, prompt, n_prompt, rng, out, err);
}
