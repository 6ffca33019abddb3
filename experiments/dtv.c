/* dtv.c - exact per-prefix d_TV of SPRINTER's first-token law, Thm 3.1's prediction, the oracle,
 * and the sampling estimate (see dtv.h). */
#include "dtv.h"

#include <gsl/gsl_cdf.h>
#include <gsl/gsl_randist.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#include "dataset.h"
#include "decoding.h"
#include "dtvlog.h"
#include "h5util.h"
#include "hashutil.h"
#include "jsonutil.h"
#include "params.h"
#include "setup.h"
#include "spec.h"
#include "tokenizer.h"

void dtv_spec_default(DtvSpec *s) {
    memset(s, 0, sizeof *s);
    s->n_prefixes = 100;
    s->max_continue = 8;
    s->tau = SP_DEFAULT_TAU;
    s->lambda = -1;
    s->sampling = (SamplerParams){1.0f, 0, 1.0f};
    s->bootstrap = 200;
    s->oracle_eta_fp = s->oracle_eta_tp = -1;
    s->method = DM_SPRINTER;
    decode_config_default(&s->params);
}

/* ------------------------------------------------------------------ building blocks */

int dtv_next_probs(Session *s, const SamplerParams *sp, const int32_t *prefix, int n, int V, float *probs,
                   float *hidden_last, int d, int32_t *work, SpErr *err) {
    const float *L, *H;
    if (session_truncate(s, 0, err) || session_forward_tail(s, prefix, n, 1, &L, &H, err)) return -1;
    if (hidden_last) memcpy(hidden_last, H + (size_t)(n - 1) * d, (size_t)d * sizeof *H);
    return sampler_probs(sp, L, V, probs, work, err);
}

int dtv_verifier_decisions(Session *draft, const Verifier *ver, const float *h_prefix, double tau, int V, double *a,
                           float *scores, SpErr *err) {
    if (ver->feature == VF_PREFIX) { /* the state before the candidate: one decision for every v */
        float sc = (float)verifier_score(ver, h_prefix);
        for (int v = 0; v < V; v++) {
            a[v] = verifier_accepts(sc, tau) ? 1.0 : 0.0;
            if (scores) scores[v] = sc;
        }
        return 0;
    }
    int n = session_len(draft);
    for (int32_t v = 0; v < V; v++) {
        const float *L, *H;
        if (session_forward_tail(draft, &v, 1, 1, &L, &H, err)) return -1;
        float sc = (float)verifier_score(ver, H); /* stored as a float, as the decoder does */
        a[v] = verifier_accepts(sc, tau) ? 1.0 : 0.0;
        if (scores) scores[v] = sc;
        if (session_truncate(draft, n, err)) return -1;
    }
    return 0;
}

void dtv_oracle_decisions(const float *p, const float *q, int V, double lambda, double eta_tp, double eta_fp, double *a) {
    for (int v = 0; v < V; v++) a[v] = label_acceptable(q[v], p[v], lambda) ? eta_tp : eta_fp;
}

static double ratio_or_nan(double num, double den) { return den > 0 ? num / den : NAN; }

void dtv_exact(const float *p, const float *q, const double *a, int V, double lambda, double *law, DtvExact *e) {
    sprinter_next_token_law(p, q, a, V, law);
    memset(e, 0, sizeof *e);
    double q_acc = 0, excess = 0;
    for (int v = 0; v < V; v++) {
        double pv = p[v], qv = q[v];
        e->dtv_pq += fabs(pv - qv);
        e->dtv_p_ps += fabs(pv - law[v]);
        e->dtv_q_ps += fabs(qv - law[v]);
        e->accept_mass += qv * a[v];
        e->n_accepted += a[v] > 0;
        if (qv > lambda * pv) e->q_unacc += qv, e->fp_mass += qv * a[v];
        else q_acc += qv, e->tp_mass += qv * a[v];
        if (qv > pv) excess += a[v] * (qv - pv);
    }
    e->dtv_pq /= 2, e->dtv_p_ps /= 2, e->dtv_q_ps /= 2;
    e->eta_fp = ratio_or_nan(e->fp_mass, e->q_unacc);
    e->eta_tp = ratio_or_nan(e->tp_mass, q_acc);
    e->eta_excess = ratio_or_nan(excess, e->dtv_pq);
}

void dtv_method_exact(DecodeMethod m, const DecodeConfig *params, const float *p, const float *q, const double *j, int V,
                      double *work, float *rf, double *law, DtvExact *e) {
    memset(e, 0, sizeof *e);
    e->q_unacc = e->fp_mass = e->tp_mass = e->eta_fp = e->eta_tp = e->eta_excess = NAN;
    e->n_accepted = -1;
    double kept = 0;
    switch (m) {
    case DM_TYPICAL: {
        typical_next_token_law(p, q, V, params->typical_eps, params->typical_alpha, law);
        double thr = typical_threshold(p, V, params->typical_eps, params->typical_alpha);
        e->n_accepted = 0;
        for (int v = 0; v < V; v++)
            if (typical_accepts(p[v], thr)) kept += q[v], e->n_accepted++;
        break;
    }
    case DM_FSD: {
        fsd_next_token_law(p, q, V, params->fsd_divergence, params->fsd_threshold, law);
        int outright = fsd_accepts_outright(p, q, V, params->fsd_divergence, params->fsd_threshold);
        e->n_accepted = outright ? V : 0;
        if (outright) kept = 1.0; /* every draft kept (not sum q, whose float rounding may pass 1) */
        else
            for (int v = 0; v < V; v++) kept += q[v] > 0 ? q[v] * fmin(1.0, (double)p[v] / q[v]) : 0;
        break;
    }
    case DM_OPTIMAL_LOSSY: {
        /* the row the decoder runs SD against (p itself at lossy_kl 0), and SD's law against it */
        const float *r = optimal_lossy_row(p, q, V, params->lossy_kl, work, law, rf);
        sd_next_token_law(r, q, V, law);
        for (int v = 0; v < V; v++) kept += fmin((double)q[v], (double)r[v]);
        break;
    }
    default: /* DM_JUDGE */
        judge_next_token_law(p, q, j, V, law);
        e->n_accepted = 0;
        for (int v = 0; v < V; v++) {
            double mv = q[v] > 0 ? fmin(1.0, (double)p[v] / q[v]) : 1.0;
            kept += q[v] * (mv + (1 - mv) * j[v]);
            e->n_accepted += j[v] > 0;
        }
        break;
    }
    e->accept_mass = kept;
    for (int v = 0; v < V; v++) {
        e->dtv_pq += fabs((double)p[v] - q[v]);
        e->dtv_p_ps += fabs((double)p[v] - law[v]);
        e->dtv_q_ps += fabs((double)q[v] - law[v]);
    }
    e->dtv_pq /= 2, e->dtv_p_ps /= 2, e->dtv_q_ps /= 2;
}

void dtv_params_label(DecodeMethod m, const DecodeConfig *params, double tau, double lambda, char *buf, int cap) {
    double values[RP_COUNT];
    unsigned applies = method_params(m);
    for (int k = 0; k < RP_COUNT; k++) values[k] = (applies & (1u << k)) ? run_param_value(params, (RunParam)k) : NAN;
    if (m == DM_SPRINTER) values[RP_TAU] = tau, values[RP_LAMBDA] = lambda;
    run_params_format(values, buf, cap);
}

double dtv_chisq_pvalue(const long *counts, const double *law, int V, long n) {
    double stat = 0, exp_acc = 0;
    long obs_acc = 0;
    int df = -1;
    for (int v = 0; v < V; v++) {
        exp_acc += law[v] * (double)n;
        obs_acc += counts[v];
        if (exp_acc >= 5 || v == V - 1) {
            if (exp_acc > 0) {
                stat += ((double)obs_acc - exp_acc) * ((double)obs_acc - exp_acc) / exp_acc;
                df++;
            } else if (obs_acc > 0) {
                return 0.0; /* draws where the law has no mass */
            }
            exp_acc = 0;
            obs_acc = 0;
        }
    }
    return df < 1 ? 1.0 : gsl_cdf_chisq_Q(stat, df);
}

/* ------------------------------------------------------------------ the output table (records/dtvlog.h) */

static const char kDefinitions[] =
    "p, q: target / draft next-token law at the prefix (sampling settings applied); a(v) = "
    "[verifier score of the draft hidden state of prefix+v >= tau]; p_SPRINTER = "
    "sprinter_next_token_law(p, q, a); unacceptable: q(v) > lambda p(v); eta_fp_global = sum_i fp_mass_i / "
    "sum_i q_unacc_i (each prefix weighted by its probability of drafting an unacceptable token: the rate the "
    "audit measures); identity: dtv_p_ps = eta_excess * dtv_pq for every a and lambda; oracle: a(v) = "
    "oracle_eta_tp if acceptable else oracle_eta_fp; emp_*: M draws of the first token with decoder_run "
    "(sprinter, max_new 1, audit off), bootstrap with B multinomial resamples; emp_dtv_unbiased uses the identity "
    "dtv_p_ps = E_{x~q}[a(x) max(0, 1 - p(x)/q(x))] on the drafted tokens x and the decoder's decisions";

/* the definitions attribute of the other methods (sprinter's is above, unchanged since version 1) */
static const char kDefinitionsMethod[] =
    "p, q: target / draft next-token law at the prefix (sampling settings applied); p_method: the exact law of the "
    "method's first token at the prefix with the parameters of attribute params (typical_next_token_law, "
    "fsd_next_token_law, optimal_lossy_next_token_law, judge_next_token_law with j(v) the judge head's decision "
    "for every candidate v, judge_candidate_decisions); dtv_p_ps = d_TV(p, p_method), dtv_q_ps = d_TV(q, p_method); "
    "accept_mass = P(the drafted token is kept without replacement): typical sum q [p > threshold], fsd 1 if "
    "D(p, q) <= fsd_threshold else sum q min(1, p/q), optimal-lossy sum min(q, r), judge sum q [m + (1 - m) j] "
    "with m = min(1, p/q); the SPRINTER columns (q_unacc, fp/tp mass, eta_*, pred_*, oracle_*, "
    "emp_dtv_unbiased*) are NaN; emp_*: M draws of the first token with decoder_run (the method, max_new 1, "
    "audit off), emp_accept the share whose drafted token was kept; bootstrap with B multinomial resamples";

/* ------------------------------------------------------------------ state */

/* One output file: its tau, the params label (dtv_params_label) and its columns [n_prefixes]. The
 * prefixes, p, q and the verifier's scores are shared by every tau of a run. */
typedef struct TauOut {
    double tau;
    char params_label[512];
    int32_t *icol[DTV_N_INT];
    double *dcol[DTV_N_REAL];
} TauOut;

typedef struct Ctx {
    const DtvSpec *s;
    RunModels m; /* draft, target, the target's tokenizer (engine/decode/setup.h) */
    Verifier ver, judge;
    int have_ver, have_judge;
    int sprinter;        /* the method is sprinter (the verifier, Thm 3.1 columns, the oracle) */
    Dataset ds;
    Session *sd, *st;
    Decoder *dec;
    int V, cap, max_prompt;
    double lambda;
    char sha_draft[SP_SHA256_HEX], sha_target[SP_SHA256_HEX], sha_ver[SP_SHA256_HEX], sha_data[SP_SHA256_HEX];
    char sha_judge[SP_SHA256_HEX];
    double *jd, *lwork;     /* other methods: [V] the judge's decisions, OPTIMAL_LOSSY_WORK(V) scratch */
    float *rf;              /* [V] optimal-lossy's row */
    float *P, *Q;        /* [N, V] p and q of every prefix (the oracle pass) */
    double *a, *law;     /* [V] */
    double *hat;         /* [V] empirical law */
    unsigned int *cnt;   /* [V] bootstrap counts */
    long *counts;        /* [V] first-token counts */
    int32_t *work, *prefix; /* [V], [cap] */
    float *h_prefix;        /* [d] the draft's state at the prefix's last position */
    float *scores;          /* [V] sprinter: the verifier's score of every candidate at the prefix */
    TauOut *outs;           /* [n_outs] one output file per tau (one for the other methods) */
    int n_outs;
    TauOut *cur;            /* the one being filled or written */
} Ctx;

static void ctx_free(Ctx *c) {
    decoder_free(c->dec);
    session_free(c->sd);
    session_free(c->st);
    if (c->have_ver) verifier_free(&c->ver);
    if (c->have_judge) verifier_free(&c->judge);
    free(c->jd), free(c->lwork), free(c->rf);
    dataset_free(&c->ds);
    run_models_close(&c->m);
    free(c->P), free(c->Q), free(c->a), free(c->law), free(c->hat), free(c->cnt), free(c->counts);
    free(c->work), free(c->prefix), free(c->h_prefix), free(c->scores);
    for (int o = 0; c->outs && o < c->n_outs; o++) {
        for (int k = 0; k < DTV_N_INT; k++) free(c->outs[o].icol[k]);
        for (int k = 0; k < DTV_N_REAL; k++) free(c->outs[o].dcol[k]);
    }
    free(c->outs);
}

/* The methods dtv computes the exact law of. */
static int dtv_method_supported(DecodeMethod m) {
    return m == DM_SPRINTER || m == DM_TYPICAL || m == DM_FSD || m == DM_OPTIMAL_LOSSY || m == DM_JUDGE;
}

static int check_spec(const DtvSpec *s, SpErr *err) {
    if (!dtv_method_supported(s->method))
        return sp_fail(err, "dtv: method %s has no exact law here (sprinter, typical, fsd, optimal-lossy, judge)",
                       method_valid(s->method) ? decode_method_name(s->method) : "?");
    if (!s->draft_dir || !s->target_dir || !s->data_path) return sp_fail(err, "dtv needs a draft, a target and a dataset");
    if (s->method == DM_SPRINTER && !s->verifier_path) return sp_fail(err, "dtv of sprinter needs a verifier");
    if (s->method == DM_JUDGE && !s->judge_path && s->params.tau_judge <= 1)
        return sp_fail(err, "dtv of judge needs a judge head, unless tau_judge > 1");
    if (s->fault_draw && !method_valid(s->fault_draw_method)) return sp_fail(err, "fault_draw_method is not a method");
    unsigned applies = method_params(s->method);
    for (int k = 0; k < RP_COUNT; k++)
        if (s->method != DM_SPRINTER && (applies & (1u << k)) &&
            run_param_check((RunParam)k, run_param_value(&s->params, (RunParam)k), err))
            return -1;
    if (s->n_prefixes < 1) return sp_fail(err, "n_prefixes = %d must be >= 1", s->n_prefixes);
    if (s->offset < 0 || s->max_continue < 0) return sp_fail(err, "offset and max_continue must be >= 0");
    if (s->samples < 0 || s->bootstrap < 0) return sp_fail(err, "samples and bootstrap must be >= 0");
    if (s->oracle_eta_fp > 1 || s->oracle_eta_tp > 1) return sp_fail(err, "oracle rates must be in [0, 1]");
    return sampler_params_check(&s->sampling, err);
}

/* The decode sample_at runs from a prefix: the method's first token (max_new 1, audit off). sprinter:
 * gamma 1, tau and lambda dtv's; the block methods: the params (gamma included: the first token's law
 * does not depend on it, so the draws check the decoder as a sweep runs it). */
static void first_token_config(const Ctx *c, DecodeConfig *cfg) {
    const DtvSpec *s = c->s;
    if (c->sprinter) {
        decode_config_default(cfg);
    } else {
        *cfg = s->params;
        cfg->label_rule = PROTOCOL_SOUND;
        cfg->stop_at_eos = cfg->capture_hidden = cfg->capture_target_hidden = 0;
        cfg->fault_broken_residual = cfg->fault_nan_logits = 0;
    }
    cfg->method = s->method;
    cfg->sampling = s->sampling;
    cfg->max_new = 1;
    if (c->sprinter) {
        cfg->gamma = 1;
        cfg->tau = c->cur->tau;
        cfg->lambda = c->lambda;
    }
    cfg->audit = 0;
}

static int load_models(Ctx *c, SpErr *err) {
    const DtvSpec *s = c->s;
    RunSetup rs = {s->draft_dir, s->target_dir, 1, NULL}; /* the target's tokenizer */
    if (run_models_open(&c->m, &rs, err)) return -1;
    const ModelConfig *cd = model_config(c->m.draft);
    if (c->sprinter) {
        if (verifier_load(s->verifier_path, &c->ver, err)) return -1;
        c->have_ver = 1;
        if (c->ver.d != cd->d_model)
            return sp_fail(err, "%s: weight has d = %d, the draft %s has hidden size %d", s->verifier_path, c->ver.d,
                           s->draft_dir, cd->d_model);
    }
    if (s->method == DM_JUDGE && s->judge_path) {
        if (verifier_load(s->judge_path, &c->judge, err)) return -1;
        c->have_judge = 1;
        const ModelConfig *ct = model_config(c->m.target);
        if (c->judge.source != VS_TARGET)
            return sp_fail(err, "%s: the judge head must score the target's state (its source is %s)", s->judge_path,
                           verifier_source_name(c->judge.source));
        if (c->judge.d != ct->d_model)
            return sp_fail(err, "%s: weight has d = %d, the target %s has hidden size %d", s->judge_path, c->judge.d,
                           s->target_dir, ct->d_model);
    }
    c->V = c->m.vocab_size;
    c->cap = c->m.max_pos;
    /* lambda: the label threshold of sprinter's columns; no other method uses it */
    c->lambda = c->sprinter ? (s->lambda > 0 ? s->lambda : c->ver.lambda) : (s->lambda > 0 ? s->lambda : NAN);
    /* a prefix is the prompt and up to max_continue target tokens; sample_at decodes from it (the
     * context rule with max_new 1, gamma 1: cap - max_continue - 3) */
    DecodeConfig first;
    first_token_config(c, &first);
    c->max_prompt = decode_prompt_room_of(&first, c->cap) - s->max_continue;
    if (c->max_prompt < 1)
        return sp_fail(err, "max_continue %d leaves no room for a prompt in the context of %d", s->max_continue, c->cap);
    return 0;
}

static int alloc_buffers(Ctx *c, SpErr *err) {
    size_t V = (size_t)c->V, N = (size_t)c->s->n_prefixes;
    c->P = malloc(N * V * sizeof *c->P);
    c->Q = malloc(N * V * sizeof *c->Q);
    c->a = malloc(V * sizeof *c->a);
    c->law = malloc(V * sizeof *c->law);
    c->hat = malloc(V * sizeof *c->hat);
    c->cnt = malloc(V * sizeof *c->cnt);
    c->counts = malloc(V * sizeof *c->counts);
    c->work = malloc(V * sizeof *c->work);
    c->prefix = malloc((size_t)c->cap * sizeof *c->prefix);
    c->h_prefix = malloc((size_t)model_config(c->m.draft)->d_model * sizeof *c->h_prefix);
    c->scores = malloc(V * sizeof *c->scores);
    int ok = c->h_prefix && c->P && c->Q && c->a && c->law && c->hat && c->cnt && c->counts && c->work && c->prefix &&
             c->scores;
    if (!c->sprinter) {
        c->jd = calloc(V, sizeof *c->jd);
        c->lwork = malloc(OPTIMAL_LOSSY_WORK(V) * sizeof *c->lwork);
        c->rf = malloc(V * sizeof *c->rf);
        ok &= c->jd && c->lwork && c->rf;
    }
    for (int o = 0; o < c->n_outs; o++) {
        TauOut *t = &c->outs[o];
        for (int k = 0; k < DTV_N_INT; k++) ok &= (t->icol[k] = calloc(N, sizeof **t->icol)) != NULL;
        for (int k = 0; k < DTV_N_REAL; k++) ok &= (t->dcol[k] = malloc(N * sizeof **t->dcol)) != NULL;
        for (int k = 0; ok && k < DTV_N_REAL; k++)
            for (size_t i = 0; i < N; i++) t->dcol[k][i] = NAN;
    }
    return ok ? 0 : sp_fail(err, "out of memory (p and q of %zu prefixes x %zu tokens)", N, V);
}

static int open_inputs(Ctx *c, SpErr *err) {
    const DtvSpec *s = c->s;
    c->sprinter = s->method == DM_SPRINTER;
    if (check_spec(s, err) || load_models(c, err)) return -1;
    if (dataset_load(s->data_path, s->data_format, s->offset + s->n_prefixes, &c->ds, err)) return -1;
    if (c->ds.n <= s->offset)
        return sp_fail(err, "%s: has %d prompts, offset %d needs more", s->data_path, c->ds.n, s->offset);
    if (sha256_model_dir(s->draft_dir, c->sha_draft, err) || sha256_model_dir(s->target_dir, c->sha_target, err) ||
        (c->have_ver && sha256_file(s->verifier_path, c->sha_ver, err)) ||
        (c->have_judge && sha256_file(s->judge_path, c->sha_judge, err)) || sha256_file(s->data_path, c->sha_data, err))
        return -1;
    for (int o = 0; o < c->n_outs; o++)
        dtv_params_label(s->method, &s->params, c->outs[o].tau, c->lambda, c->outs[o].params_label,
                         sizeof c->outs[o].params_label);
    if (!(c->sd = session_new(c->m.draft, c->cap, c->cap, err)) || !(c->st = session_new(c->m.target, c->cap, c->cap, err)))
        return -1;
    if (s->samples > 0) {
        if (!(c->dec = decoder_new(c->m.draft, c->m.target, c->have_ver ? &c->ver : NULL, c->cap, err))) return -1;
        if (c->have_judge && decoder_set_judge(c->dec, &c->judge, err)) return sp_err_prefix(err, "%s", s->judge_path);
    }
    return alloc_buffers(c, err);
}

/* ------------------------------------------------------------------ one prefix */

/* prompt (last max_prompt tokens) + k ~ U{0..max_continue} tokens sampled from the target: c->prefix[0..*n). */
static int make_prefix(Ctx *c, int i, gsl_rng *rng, int *n, SpErr *err) {
    const DtvSpec *s = c->s;
    int avail = c->ds.n - s->offset, pi = s->offset + i % avail;
    const Example *ex = &c->ds.ex[pi];
    const ModelConfig *mc = model_config(c->m.target);
    int32_t *ids;
    size_t len;
    if (tokenizer_encode_text(c->m.tokenizer, ex->prompt, strlen(ex->prompt), &ids, &len, err))
        return sp_err_prefix(err, "%s: prompt %d", s->data_path, pi);
    if (len == 0) {
        free(ids);
        if (mc->bos_id < 0) return sp_fail(err, "%s: prompt %d (id %s) encodes to no tokens", s->data_path, pi, ex->id);
        c->prefix[0] = mc->bos_id;
        len = 1;
    } else {
        size_t keep = len > (size_t)c->max_prompt ? (size_t)c->max_prompt : len;
        memcpy(c->prefix, ids + (len - keep), keep * sizeof *ids);
        len = keep;
        free(ids);
    }
    int k = (int)gsl_rng_uniform_int(rng, (unsigned long)s->max_continue + 1);
    float *probs = c->P + (size_t)i * c->V; /* scratch: overwritten by p below */
    const float *L;
    *n = (int)len;
    if (k > 0 && (session_truncate(c->st, 0, err) || session_forward_tail(c->st, c->prefix, *n, 1, &L, NULL, err)))
        return -1;
    for (int j = 0; j < k; j++) {
        if (sampler_probs(&s->sampling, L, c->V, probs, c->work, err)) return -1;
        int32_t x = sampler_draw(probs, c->V, rng);
        c->prefix[(*n)++] = x;
        if (j + 1 < k && session_forward_tail(c->st, &x, 1, 1, &L, NULL, err)) return -1;
    }
    for (int o = 0; o < c->n_outs; o++) {
        int32_t **ic = c->outs[o].icol;
        ic[DTV_prefix_index][i] = i, ic[DTV_prompt_index][i] = pi, ic[DTV_n_prefix][i] = *n, ic[DTV_n_continued][i] = k;
    }
    return 0;
}

/* p, q and, for sprinter, the verifier's score of every candidate (c->scores): what every tau shares. The
 * other methods: also their law and its quantities (into c->cur, their only output). */
static int probs_at(Ctx *c, int i, int n, SpErr *err) {
    float *p = c->P + (size_t)i * c->V, *q = c->Q + (size_t)i * c->V;
    const DtvSpec *s = c->s;
    if (!c->sprinter) { /* the method's law; the judge's decision for every candidate first */
        if (dtv_next_probs(c->st, &s->sampling, c->prefix, n, c->V, p, NULL, 0, c->work, err) ||
            dtv_next_probs(c->sd, &s->sampling, c->prefix, n, c->V, q, NULL, 0, c->work, err))
            return -1;
        if (s->method == DM_JUDGE && c->have_judge &&
            judge_candidate_decisions(c->m.target, &c->judge, s->params.tau_judge, c->prefix, n, c->jd, NULL, err))
            return sp_err_prefix(err, "prefix %d", i);
        DtvExact e;
        dtv_method_exact(s->method, &s->params, p, q, c->jd, c->V, c->lwork, c->rf, c->law, &e);
        double **d = c->cur->dcol;
        d[DTV_dtv_pq][i] = e.dtv_pq, d[DTV_dtv_p_ps][i] = e.dtv_p_ps, d[DTV_dtv_q_ps][i] = e.dtv_q_ps;
        d[DTV_accept_mass][i] = e.accept_mass;
        c->cur->icol[DTV_n_accepted][i] = e.n_accepted;
        return 0;
    }
    return dtv_next_probs(c->st, &s->sampling, c->prefix, n, c->V, p, NULL, 0, c->work, err) ||
                   dtv_next_probs(c->sd, &s->sampling, c->prefix, n, c->V, q, c->h_prefix, c->ver.d, c->work, err) ||
                   dtv_verifier_decisions(c->sd, &c->ver, c->h_prefix, c->cur->tau, c->V, c->a, c->scores, err)
               ? -1
               : 0;
}

/* sprinter at c->cur's tau: a(v) = [score(v) >= tau], the exact law (c->law) and its quantities. */
static void exact_at(Ctx *c, int i) {
    const float *p = c->P + (size_t)i * c->V, *q = c->Q + (size_t)i * c->V;
    for (int v = 0; v < c->V; v++) c->a[v] = verifier_accepts(c->scores[v], c->cur->tau) ? 1.0 : 0.0;
    DtvExact e;
    dtv_exact(p, q, c->a, c->V, c->lambda, c->law, &e);
    double **d = c->cur->dcol;
    d[DTV_dtv_pq][i] = e.dtv_pq, d[DTV_dtv_p_ps][i] = e.dtv_p_ps, d[DTV_dtv_q_ps][i] = e.dtv_q_ps;
    d[DTV_accept_mass][i] = e.accept_mass, d[DTV_q_unacc][i] = e.q_unacc, d[DTV_fp_mass][i] = e.fp_mass;
    d[DTV_tp_mass][i] = e.tp_mass, d[DTV_eta_fp][i] = e.eta_fp, d[DTV_eta_tp][i] = e.eta_tp;
    d[DTV_eta_excess][i] = e.eta_excess;
    d[DTV_pred_local][i] = e.eta_fp * e.dtv_pq;
    c->cur->icol[DTV_n_accepted][i] = e.n_accepted;
}

/* 0.5 sum_v |p(v) - cnt(v) / m| */
static double tv_counts_u(const float *p, const unsigned int *cnt, int V, double m) {
    double s = 0;
    for (int v = 0; v < V; v++) s += fabs((double)p[v] - cnt[v] / m);
    return s / 2;
}

/* M first tokens from decoder_run, the naive and bias-corrected d_TV, noise floor, chi-square.
 * Needs c->law of this prefix (exact_at). */
static int sample_at(Ctx *c, int i, int n, gsl_rng *rng, SpErr *err) {
    const DtvSpec *s = c->s;
    int V = c->V, M = s->samples;
    const float *p = c->P + (size_t)i * V;
    DecodeConfig cfg;
    first_token_config(c, &cfg);
    if (s->fault_draw) cfg.method = s->fault_draw_method; /* tests: the negative control */
    const float *q = c->Q + (size_t)i * V;
    memset(c->counts, 0, (size_t)V * sizeof *c->counts);
    long acc = 0;
    double u_sum = 0, u_sq = 0; /* decision * (1 - p(x)/q(x))^+ at the drafted token */
    for (int m = 0; m < M; m++) {
        DecodeOutput out;
        if (decoder_run(c->dec, &cfg, c->prefix, n, rng, &out, err)) return sp_err_prefix(err, "prefix %d", i);
        const TokenEvent *e = &out.events[0];
        c->counts[out.tokens[0]]++;
        /* sprinter: the verifier's accepts; the others: the drafted token kept (accept_mass) */
        acc += c->sprinter ? e->kind == EV_VERIFIER_ACCEPT
                           : e->kind == EV_SD_ACCEPT || e->kind == EV_LOSSY_ACCEPT || e->kind == EV_VERIFIER_ACCEPT;
        if (c->sprinter && e->decision == 1 && e->draft_token >= 0) {
            double u = fmax(0.0, 1.0 - (double)p[e->draft_token] / (double)q[e->draft_token]);
            u_sum += u, u_sq += u * u;
        }
        decode_output_free(&out);
    }
    double u_mean = u_sum / M;
    if (c->sprinter) { /* the identity behind it is SPRINTER's */
        c->cur->dcol[DTV_emp_dtv_unbiased][i] = u_mean;
        c->cur->dcol[DTV_emp_dtv_unbiased_se][i] = M > 1 ? sqrt(fmax(0.0, (u_sq - M * u_mean * u_mean) / (M - 1)) / M) : NAN;
    }
    for (int v = 0; v < V; v++) c->hat[v] = (double)c->counts[v] / M, c->cnt[v] = (unsigned int)c->counts[v];
    double naive = tv_counts_u(p, c->cnt, V, M), boot = 0, floor = 0;
    double *pd = c->a; /* p as double for the multinomial (a is free again after exact_at) */
    for (int v = 0; v < V; v++) pd[v] = p[v];
    for (int b = 0; b < s->bootstrap; b++) {
        gsl_ran_multinomial(rng, (size_t)V, (unsigned int)M, c->hat, c->cnt);
        boot += tv_counts_u(p, c->cnt, V, M);
        gsl_ran_multinomial(rng, (size_t)V, (unsigned int)M, pd, c->cnt);
        floor += tv_counts_u(p, c->cnt, V, M);
    }
    double **d = c->cur->dcol;
    d[DTV_emp_accept][i] = (double)acc / M;
    d[DTV_emp_dtv_naive][i] = naive;
    if (s->bootstrap > 0) {
        d[DTV_emp_dtv_bc][i] = fmax(0.0, 2 * naive - boot / s->bootstrap);
        d[DTV_emp_noise_floor][i] = floor / s->bootstrap;
    }
    d[DTV_emp_chisq_p][i] = dtv_chisq_pvalue(c->counts, c->law, V, M);
    return 0;
}

/* ------------------------------------------------------------------ after all prefixes */

static double col_mean(const double *x, int n) {
    double s = 0;
    int k = 0;
    for (int i = 0; i < n; i++)
        if (!isnan(x[i])) s += x[i], k++;
    return k ? s / k : NAN;
}

/* Global rates, pred_global, and the oracle's exact laws at lambda and at 1. */
static void global_pass(Ctx *c, DtvSummary *sum) {
    const DtvSpec *s = c->s;
    int N = s->n_prefixes, V = c->V;
    double **d = c->cur->dcol, fp = 0, un = 0, tp = 0, ac = 0;
    if (!c->sprinter) { /* no verifier, no Thm 3.1: the oracle columns stay NaN */
        sum->eta_fp_global = sum->eta_tp_global = sum->oracle_eta_fp = sum->oracle_eta_tp = NAN;
        sum->max_oracle_l1_err = NAN;
        return;
    }
    for (int i = 0; i < N; i++) fp += d[DTV_fp_mass][i], un += d[DTV_q_unacc][i], tp += d[DTV_tp_mass][i], ac += 1 - d[DTV_q_unacc][i];
    sum->eta_fp_global = ratio_or_nan(fp, un);
    sum->eta_tp_global = ratio_or_nan(tp, ac);
    /* measured rates unless given; an empty class falls back to the ideal verifier's rate */
    sum->oracle_eta_fp = s->oracle_eta_fp >= 0 ? s->oracle_eta_fp : isnan(sum->eta_fp_global) ? 0.0 : sum->eta_fp_global;
    sum->oracle_eta_tp = s->oracle_eta_tp >= 0 ? s->oracle_eta_tp : isnan(sum->eta_tp_global) ? 1.0 : sum->eta_tp_global;
    sum->max_oracle_l1_err = 0;
    for (int i = 0; i < N; i++) {
        const float *p = c->P + (size_t)i * V, *q = c->Q + (size_t)i * V;
        DtvExact e;
        d[DTV_pred_global][i] = sum->eta_fp_global * d[DTV_dtv_pq][i];
        dtv_oracle_decisions(p, q, V, c->lambda, sum->oracle_eta_tp, sum->oracle_eta_fp, c->a);
        dtv_exact(p, q, c->a, V, c->lambda, c->law, &e);
        d[DTV_oracle_dtv][i] = e.dtv_p_ps;
        d[DTV_oracle_pred][i] = sum->oracle_eta_fp * e.dtv_pq;
        dtv_oracle_decisions(p, q, V, 1.0, sum->oracle_eta_tp, sum->oracle_eta_fp, c->a);
        dtv_exact(p, q, c->a, V, 1.0, c->law, &e);
        d[DTV_oracle_dtv_l1][i] = e.dtv_p_ps;
        sum->max_oracle_l1_err = fmax(sum->max_oracle_l1_err, fabs(e.dtv_p_ps - d[DTV_oracle_pred][i]));
    }
}

static void summarize(Ctx *c, DtvSummary *sum) {
    int N = c->s->n_prefixes;
    double **d = c->cur->dcol;
    sum->n = N;
    sum->V = c->V;
    sum->lambda = c->lambda;
    sum->mean_dtv_pq = col_mean(d[DTV_dtv_pq], N);
    sum->mean_dtv_p_ps = col_mean(d[DTV_dtv_p_ps], N);
    sum->mean_pred_local = col_mean(d[DTV_pred_local], N);
    sum->mean_pred_global = col_mean(d[DTV_pred_global], N);
    sum->mean_eta_excess = col_mean(d[DTV_eta_excess], N);
    sum->mean_oracle_dtv = col_mean(d[DTV_oracle_dtv], N);
    sum->mean_oracle_pred = col_mean(d[DTV_oracle_pred], N);
    sum->mean_oracle_dtv_l1 = col_mean(d[DTV_oracle_dtv_l1], N);
    sum->mean_accept_mass = col_mean(d[DTV_accept_mass], N);
    sum->mean_emp_naive = col_mean(d[DTV_emp_dtv_naive], N);
    sum->mean_emp_bc = col_mean(d[DTV_emp_dtv_bc], N);
    sum->mean_noise_floor = col_mean(d[DTV_emp_noise_floor], N);
    sum->mean_emp_unbiased = col_mean(d[DTV_emp_dtv_unbiased], N);
    double en = 0, eb = 0, eu = 0;
    int kn = 0, kb = 0, ku = 0;
    sum->min_chisq_p = sum->max_abs_z_unbiased = NAN;
    for (int i = 0; i < N; i++) {
        double exact = d[DTV_dtv_p_ps][i];
        if (!isnan(d[DTV_emp_dtv_naive][i])) en += fabs(d[DTV_emp_dtv_naive][i] - exact), kn++;
        if (!isnan(d[DTV_emp_dtv_bc][i])) eb += fabs(d[DTV_emp_dtv_bc][i] - exact), kb++;
        if (!isnan(d[DTV_emp_dtv_unbiased][i])) eu += fabs(d[DTV_emp_dtv_unbiased][i] - exact), ku++;
        if (!isnan(d[DTV_emp_chisq_p][i]) && !(d[DTV_emp_chisq_p][i] >= sum->min_chisq_p)) sum->min_chisq_p = d[DTV_emp_chisq_p][i];
        double se = d[DTV_emp_dtv_unbiased_se][i];
        /* se = 0 (every draw gave the same value): the estimate is exact up to rounding */
        double z = se > 0 ? fabs(d[DTV_emp_dtv_unbiased][i] - exact) / se : 0;
        if (!isnan(d[DTV_emp_dtv_unbiased][i]) && !(z <= sum->max_abs_z_unbiased)) sum->max_abs_z_unbiased = z;
    }
    sum->mean_abs_err_naive = kn ? en / kn : NAN;
    sum->mean_abs_err_bc = kb ? eb / kb : NAN;
    sum->mean_abs_err_unbiased = ku ? eu / ku : NAN;
}

/* ------------------------------------------------------------------ the file */

static void now_iso(char *buf, size_t cap) {
    struct timeval tv;
    gettimeofday(&tv, NULL);
    struct tm tm;
    gmtime_r(&tv.tv_sec, &tm);
    strftime(buf, cap, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static int write_attrs(Ctx *c, H5Table *t, const DtvSummary *m, SpErr *err) {
    const DtvSpec *s = c->s;
    char seed[32], now[40];
    snprintf(seed, sizeof seed, "%llu", (unsigned long long)s->seed);
    now_iso(now, sizeof now);
    const char *str[][2] = {{"format", DTVLOG_FORMAT},
                            {"method", decode_method_name(s->method)},
                            {"params", c->cur->params_label},
                            {"draft", s->draft_dir},
                            {"draft_sha256", c->sha_draft},
                            {"target", s->target_dir},
                            {"target_sha256", c->sha_target},
                            {"verifier", c->have_ver ? s->verifier_path : ""},
                            {"verifier_sha256", c->have_ver ? c->sha_ver : ""},
                            {"judge", c->have_judge ? s->judge_path : ""},
                            {"judge_sha256", c->have_judge ? c->sha_judge : ""},
                            {"data", s->data_path},
                            {"data_sha256", c->sha_data},
                            {"data_format", s->data_format ? s->data_format : "auto"},
                            {"seed", seed},
                            {"oracle_rates", !c->sprinter                                    ? "none"
                                             : s->oracle_eta_fp >= 0 || s->oracle_eta_tp >= 0 ? "given"
                                                                                              : "measured"},
                            {"created_at", now},
                            {"definitions", c->sprinter ? kDefinitions : kDefinitionsMethod}};
    for (size_t k = 0; k < sizeof str / sizeof *str; k++)
        if (h5t_attr_str(t, str[k][0], str[k][1], err)) return -1;
    const struct {
        const char *name;
        int64_t v;
    } ints[] = {{"version", DTVLOG_VERSION}, {"n_prefixes", s->n_prefixes}, {"offset", s->offset},
                {"max_continue", s->max_continue}, {"top_k", s->sampling.top_k}, {"samples", s->samples},
                {"bootstrap", s->bootstrap}, {"vocab_size", c->V}};
    for (size_t k = 0; k < sizeof ints / sizeof *ints; k++)
        if (h5t_attr_i64(t, ints[k].name, ints[k].v, err)) return -1;
    const struct {
        const char *name;
        double v;
    } dbl[] = {{"tau", c->sprinter ? c->cur->tau : NAN},
               {"lambda", c->lambda},
               {"verifier_lambda", c->have_ver ? c->ver.lambda : NAN},
               {"temperature", s->sampling.temperature},
               {"top_p", s->sampling.top_p},
               {"eta_fp_global", m->eta_fp_global},
               {"eta_tp_global", m->eta_tp_global},
               {"oracle_eta_fp", m->oracle_eta_fp},
               {"oracle_eta_tp", m->oracle_eta_tp},
               {"mean_dtv_pq", m->mean_dtv_pq},
               {"mean_dtv_p_ps", m->mean_dtv_p_ps},
               {"mean_pred_local", m->mean_pred_local},
               {"mean_pred_global", m->mean_pred_global},
               {"mean_eta_excess", m->mean_eta_excess},
               {"mean_oracle_dtv", m->mean_oracle_dtv},
               {"mean_oracle_pred", m->mean_oracle_pred},
               {"mean_oracle_dtv_l1", m->mean_oracle_dtv_l1},
               {"max_oracle_l1_err", m->max_oracle_l1_err},
               {"mean_accept_mass", m->mean_accept_mass},
               {"mean_emp_dtv_naive", m->mean_emp_naive},
               {"mean_emp_dtv_bc", m->mean_emp_bc},
               {"mean_emp_noise_floor", m->mean_noise_floor},
               {"mean_abs_err_naive", m->mean_abs_err_naive},
               {"mean_abs_err_bc", m->mean_abs_err_bc},
               {"mean_emp_dtv_unbiased", m->mean_emp_unbiased},
               {"mean_abs_err_unbiased", m->mean_abs_err_unbiased},
               {"max_abs_z_unbiased", m->max_abs_z_unbiased},
               {"min_chisq_p", m->min_chisq_p}};
    for (size_t k = 0; k < sizeof dbl / sizeof *dbl; k++)
        if (h5t_attr_f64(t, dbl[k].name, dbl[k].v, err)) return -1;
    return 0;
}

static int write_file(Ctx *c, const char *out, const DtvSummary *m, SpErr *err) {
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", out);
    char *slash = strrchr(dir, '/');
    if (slash && slash != dir) {
        *slash = '\0';
        if (sp_mkdir_p(dir, err)) return sp_err_prefix(err, "--out");
    }
    H5Table t;
    if (h5t_create(&t, out, dtvlog_columns(), DTVLOG_N_COLS, 1024, err)) return -1;
    const void *data[DTVLOG_N_COLS];
    for (int k = 0; k < DTV_N_INT; k++) data[k] = c->cur->icol[k];
    for (int k = 0; k < DTV_N_REAL; k++) data[DTV_N_INT + k] = c->cur->dcol[k];
    if (h5t_append(&t, c->s->n_prefixes, data, err) || write_attrs(c, &t, m, err)) {
        h5t_abort(&t);
        return -1;
    }
    return h5t_commit(&t, err);
}

/* ------------------------------------------------------------------ entry */

/* One line on stderr about prefix i (n tokens) at c->cur. */
static void print_prefix(const Ctx *c, int i, int n) {
    char tau[48] = ""; /* which file, when there are several */
    if (c->n_outs > 1) snprintf(tau, sizeof tau, ", tau %g", c->cur->tau);
    if (!c->sprinter) {
        double **d = c->cur->dcol;
        fprintf(stderr, "dtv: prefix %d/%d (%d tokens): d_TV(p,q) %.4f  d_TV(p,p_%s) %.4f  d_TV(q,p_%s) %.4f  kept %.3f%s",
                i + 1, c->s->n_prefixes, n, d[DTV_dtv_pq][i], decode_method_name(c->s->method), d[DTV_dtv_p_ps][i],
                decode_method_name(c->s->method), d[DTV_dtv_q_ps][i], d[DTV_accept_mass][i], c->s->samples > 0 ? "" : "\n");
        if (c->s->samples > 0)
            fprintf(stderr, "  sampled: naive %.4f, bc %.4f, kept %.3f, chi2 p %.3f\n", d[DTV_emp_dtv_naive][i],
                    d[DTV_emp_dtv_bc][i], d[DTV_emp_accept][i], d[DTV_emp_chisq_p][i]);
    } else {
        double **d = c->cur->dcol;
        fprintf(stderr, "dtv: prefix %d/%d (%d tokens%s): d_TV(p,q) %.4f  d_TV(p,p_S) %.4f  eta_FP %.3f  eta_TP %.3f  "
                        "pred_local %.4f%s",
                i + 1, c->s->n_prefixes, n, tau, d[DTV_dtv_pq][i], d[DTV_dtv_p_ps][i], d[DTV_eta_fp][i], d[DTV_eta_tp][i],
                d[DTV_pred_local][i], c->s->samples > 0 ? "" : "\n");
        if (c->s->samples > 0)
            fprintf(stderr, "  sampled: unbiased %.4f +- %.4f, naive %.4f, bc %.4f, chi2 p %.3f\n", d[DTV_emp_dtv_unbiased][i],
                    d[DTV_emp_dtv_unbiased_se][i], d[DTV_emp_dtv_naive][i], d[DTV_emp_dtv_bc][i], d[DTV_emp_chisq_p][i]);
    }
}

/* Prefix i: the prefix and p, q (and the verifier's scores) once; then at each tau its exact law and,
 * with samples, its decoder draws, each from the rng as it stands after the prefix was drawn (so that
 * a file is the same whether its tau ran alone or beside others). */
static int one_prefix(Ctx *c, int i, SpErr *err) {
    gsl_rng *rng = sampler_rng_new(prompt_seed(c->s->seed, i));
    if (!rng) return sp_fail(err, "out of memory");
    int n = 0;
    c->cur = &c->outs[0];
    int rc = make_prefix(c, i, rng, &n, err) || probs_at(c, i, n, err) ? -1 : 0;
    for (int o = 0; rc == 0 && o < c->n_outs; o++) {
        c->cur = &c->outs[o];
        if (c->sprinter) exact_at(c, i);
        gsl_rng *draws = c->s->samples > 0 ? (o + 1 < c->n_outs ? gsl_rng_clone(rng) : rng) : NULL;
        if (c->s->samples > 0 && !draws) rc = sp_fail(err, "out of memory");
        else if (draws && sample_at(c, i, n, draws, err)) rc = -1;
        if (draws && draws != rng) gsl_rng_free(draws);
        if (rc == 0 && c->s->progress) print_prefix(c, i, n);
    }
    gsl_rng_free(rng);
    return rc;
}

/* c->outs: one per tau (taus[0..n)), checked. */
static int make_outs(Ctx *c, const double *taus, int n, SpErr *err) {
    if (n < 1 || n > DTV_MAX_TAUS) return sp_fail(err, "dtv: %d thresholds (1 to %d)", n, DTV_MAX_TAUS);
    if (n > 1 && c->s->method != DM_SPRINTER) return sp_fail(err, "dtv: several tau are for sprinter only");
    if (!(c->outs = calloc((size_t)n, sizeof *c->outs))) return sp_fail(err, "out of memory");
    c->n_outs = n;
    for (int k = 0; k < n; k++) {
        if (run_param_check(RP_TAU, taus[k], err)) return -1;
        for (int j = 0; j < k; j++)
            if (taus[j] == taus[k]) return sp_fail(err, "dtv: tau %g is given twice", taus[k]);
        c->outs[k].tau = taus[k];
    }
    c->cur = &c->outs[0];
    return 0;
}

int dtv_run_taus(const DtvSpec *s, const double *taus, const char *const *out_h5, int n, DtvSummary *sums, SpErr *err) {
    memset(sums, 0, (size_t)(n > 0 ? n : 0) * sizeof *sums);
    Ctx c = {0};
    c.s = s;
    int rc = make_outs(&c, taus, n, err) || open_inputs(&c, err) ? -1 : 0;
    for (int i = 0; rc == 0 && i < s->n_prefixes; i++) rc = one_prefix(&c, i, err);
    for (int k = 0; rc == 0 && k < n; k++) {
        c.cur = &c.outs[k];
        global_pass(&c, &sums[k]);
        summarize(&c, &sums[k]);
        rc = write_file(&c, out_h5[k], &sums[k], err);
    }
    ctx_free(&c);
    return rc;
}

int dtv_run(const DtvSpec *s, const char *out_h5, DtvSummary *sum, SpErr *err) {
    return dtv_run_taus(s, &s->tau, &out_h5, 1, sum, err);
}
