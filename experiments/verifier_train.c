/* verifier_train.c - collect (hidden, q, p, label) data, fit the verifier, cache it. */
#include "verifier_train.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <gsl/gsl_multimin.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dataset.h"
#include "decoding.h"
#include "h5util.h"
#include "jsonutil.h"
#include "hashutil.h"
#include "model.h"
#include "setup.h"
#include "tokenizer.h"
#include "verifier.h"


/* ------------------------------------------------------------------ collect */

typedef struct Cols {
    float *hidden, *hidden_prefix, *q, *p; /* hidden, hidden_prefix: [n, d] */
    int8_t *label;
    int32_t *token, *pos, *prompt;
    int64_t n, cap;
    int d;
    /* each row's prefix (the pos tokens before its drafted token), flat: row r's at
     * prefix_at[r] .. prefix_at[r] + pos[r] of prefix_tok (written as /prefix_ids [n, W]) */
    int32_t *prefix_tok;
    int64_t *prefix_at, n_tok, cap_tok;
    int width; /* W = the longest prefix */
} Cols;

static int cols_reserve(Cols *c, int64_t more) {
    if (c->n + more <= c->cap) return 0;
    int64_t nc = c->cap ? c->cap : 1024;
    while (nc < c->n + more) nc *= 2;
    float *h = realloc(c->hidden, (size_t)nc * c->d * sizeof *h);
    if (h) c->hidden = h;
    float *hp = realloc(c->hidden_prefix, (size_t)nc * c->d * sizeof *hp);
    if (hp) c->hidden_prefix = hp;
    float *q = realloc(c->q, (size_t)nc * sizeof *q);
    if (q) c->q = q;
    float *p = realloc(c->p, (size_t)nc * sizeof *p);
    if (p) c->p = p;
    int8_t *l = realloc(c->label, (size_t)nc);
    if (l) c->label = l;
    int32_t *t = realloc(c->token, (size_t)nc * sizeof *t);
    if (t) c->token = t;
    int32_t *po = realloc(c->pos, (size_t)nc * sizeof *po);
    if (po) c->pos = po;
    int32_t *pr = realloc(c->prompt, (size_t)nc * sizeof *pr);
    if (pr) c->prompt = pr;
    int64_t *pa = realloc(c->prefix_at, (size_t)nc * sizeof *pa);
    if (pa) c->prefix_at = pa;
    if (!h || !hp || !q || !p || !l || !t || !po || !pr || !pa) return -1;
    c->cap = nc;
    return 0;
}

/* Appends n prefix tokens; -1 when out of memory. */
static int cols_add_prefix(Cols *c, const int32_t *a, int na, const int32_t *b, int nb) {
    if (c->n_tok + na + nb > c->cap_tok) {
        int64_t nc = c->cap_tok ? c->cap_tok : 4096;
        while (nc < c->n_tok + na + nb) nc *= 2;
        int32_t *t = realloc(c->prefix_tok, (size_t)nc * sizeof *t);
        if (!t) return -1;
        c->prefix_tok = t, c->cap_tok = nc;
    }
    memcpy(c->prefix_tok + c->n_tok, a, (size_t)na * sizeof *a);
    if (nb) memcpy(c->prefix_tok + c->n_tok + na, b, (size_t)nb * sizeof *b);
    c->n_tok += na + nb;
    if (na + nb > c->width) c->width = na + nb;
    return 0;
}

static void cols_free(Cols *c) {
    free(c->hidden), free(c->hidden_prefix), free(c->q), free(c->p), free(c->label), free(c->token), free(c->pos), free(c->prompt);
    free(c->prefix_tok), free(c->prefix_at);
}

/* [n, W] prefix ids, -1 after each row's pos tokens; NULL when out of memory. */
static int32_t *prefix_matrix(const Cols *c) {
    int32_t *m = malloc((size_t)(c->n ? c->n : 1) * (size_t)c->width * sizeof *m);
    if (!m) return NULL;
    for (int64_t r = 0; r < c->n; r++) {
        int32_t *row = m + (size_t)r * c->width;
        memcpy(row, c->prefix_tok + c->prefix_at[r], (size_t)c->pos[r] * sizeof *row);
        for (int j = c->pos[r]; j < c->width; j++) row[j] = -1;
    }
    return m;
}

static int write_collect(const char *out, const CollectSpec *s, const Cols *c, const char *dsha, const char *tsha,
                         const char *datasha, int n_prompts, SpErr *err) {
    int judge = s->source == VS_TARGET;
    const H5ColSpec cols[] = {
        {"hidden", H5C_F32, c->d, NULL,
         judge ? "TARGET last-layer hidden state (after the final norm) at the drafted token (after reading it)"
               : "draft last-layer hidden state (after the final norm) of the drafted token"},
        {"hidden_prefix", H5C_F32, c->d, NULL,
         "version 2: the same at the position before the drafted token (the state whose logits gave q)"},
        {"q", H5C_F32, 1, "probability", "draft probability of the drafted token"},
        {"p", H5C_F32, 1, "probability", "target probability of the drafted token"},
        {"label", H5C_I8, 1, NULL,
         judge ? "judge label: 1 if p(x) >= judge_rho * max_v p(v), else 0"
               : "1 if q/p <= lambda (acceptable), else 0; q and p as the attribute label_rule says (rules.h)"},
        {"token", H5C_I32, 1, "token id", "drafted token"},
        {"pos", H5C_I32, 1, "position", "position of the drafted token in its sequence"},
        {"prompt_index", H5C_I32, 1, NULL, "index of the prompt in the dataset"},
        {"prefix_ids", H5C_I32, c->width, "token id",
         "version 3: the pos tokens before the drafted token (the prompt as fed, then the context), -1 after"},
    };
    int32_t *prefix = prefix_matrix(c);
    if (!prefix) return sp_fail(err, "out of memory");
    H5Table t;
    if (h5t_create(&t, out, cols, (int)(sizeof cols / sizeof *cols), 1024, err)) {
        free(prefix);
        return -1;
    }
    const void *data[] = {c->hidden, c->hidden_prefix, c->q, c->p, c->label, c->token, c->pos, c->prompt, prefix};
    int rc = h5t_append(&t, c->n, data, err) || h5t_attr_str(&t, "format", "sprinter-collect", err) ||
             h5t_attr_i64(&t, "version", 3, err) || h5t_attr_f64(&t, "lambda", s->lambda, err) ||
             h5t_attr_str(&t, "draft", s->draft_dir, err) || h5t_attr_str(&t, "target", s->target_dir, err) ||
             h5t_attr_str(&t, "draft_sha256", dsha, err) || h5t_attr_str(&t, "target_sha256", tsha, err) ||
             h5t_attr_str(&t, "data", s->data_path, err) || h5t_attr_str(&t, "data_sha256", datasha, err) ||
             h5t_attr_i64(&t, "n_prompts", n_prompts, err) || h5t_attr_i64(&t, "max_new", s->max_new, err) ||
             h5t_attr_f64(&t, "temperature", s->sampling.temperature, err) ||
             h5t_attr_i64(&t, "top_k", s->sampling.top_k, err) || h5t_attr_f64(&t, "top_p", s->sampling.top_p, err) ||
             h5t_attr_i64(&t, "seed", (int64_t)s->seed, err) ||
             h5t_attr_str(&t, "label_rule", protocol_name(s->label_rule), err) ||
             h5t_attr_str(&t, "feature_source", verifier_source_name(s->source), err) ||
             (judge && h5t_attr_f64(&t, "judge_rho", s->judge_rho, err));
    free(prefix);
    if (rc) {
        h5t_abort(&t);
        return -1;
    }
    return h5t_commit(&t, err);
}

/* Appends one prompt's decode (prompt index i, its prompt tokens use[0..use_n)) to c: a row per
 * drafted token, with its prefix. */
static int cols_take(Cols *c, const DecodeOutput *o, const int32_t *use, int use_n, int i, const char *data_path,
                     CollectSummary *sum, SpErr *err) {
    if (cols_reserve(c, o->n_events)) return sp_fail(err, "out of memory");
    for (int k = 0; k < o->n_events; k++) {
        const TokenEvent *e = &o->events[k];
        if (e->draft_token < 0) continue;
        int64_t r = c->n++;
        memcpy(c->hidden + (size_t)r * c->d, o->hidden + (size_t)k * c->d, (size_t)c->d * sizeof *c->hidden);
        memcpy(c->hidden_prefix + (size_t)r * c->d, o->hidden_prefix + (size_t)k * c->d,
               (size_t)c->d * sizeof *c->hidden_prefix);
        c->q[r] = e->q, c->p[r] = e->p, c->label[r] = e->label;
        c->token[r] = e->draft_token, c->pos[r] = e->pos, c->prompt[r] = i;
        c->prefix_at[r] = c->n_tok;
        if (e->pos < use_n || e->pos > use_n + k || cols_add_prefix(c, use, use_n, o->tokens, e->pos - use_n))
            return sp_fail(err, "%s: prompt %d: event %d at position %d (prompt of %d tokens): %s", data_path, i, k,
                           e->pos, use_n, e->pos < use_n || e->pos > use_n + k ? "position out of order" : "out of memory");
        sum->n_acceptable += e->label == 1;
    }
    return 0;
}

/* Decodes prompts [i0, i1) of ds, one decoder each (dec[0..i1-i0)), in lock step when there are
 * several (decoder_run_batch: each prompt's tokens, events and hidden states are those of its decode
 * alone), and appends them to c in prompt order: the collection does not depend on the group size.
 * Over-long prompts keep their last max_prompt tokens (the part that conditions the draft); an empty
 * one is skipped (nothing to condition on). */
static int collect_group(const CollectSpec *s, const Dataset *ds, Tokenizer *tok, int max_prompt,
                         const DecodeConfig *cfg, Decoder *const *dec, int i0, int i1, Cols *c, CollectSummary *sum,
                         SpErr *err) {
    int32_t *ids[COLLECT_MAX_BATCH] = {0};
    int use_at[COLLECT_MAX_BATCH] = {0}, use_n[COLLECT_MAX_BATCH] = {0}, job_of[COLLECT_MAX_BATCH];
    DecodeJob jobs[COLLECT_MAX_BATCH];
    int n_jobs = 0, rc = 0;
    for (int i = i0; i < i1 && !rc; i++) {
        int g = i - i0;
        size_t n;
        job_of[g] = -1;
        if (tokenizer_encode_text(tok, ds->ex[i].prompt, strlen(ds->ex[i].prompt), &ids[g], &n, err)) {
            rc = sp_err_prefix(err, "%s: prompt %d", s->data_path, i);
            break;
        }
        use_at[g] = n > (size_t)max_prompt ? (int)(n - (size_t)max_prompt) : 0;
        use_n[g] = (int)n - use_at[g];
        if (use_n[g] == 0) continue;
        int j = job_of[g] = n_jobs++;
        jobs[j] = (DecodeJob){.decoder = dec[j], .cfg = cfg, .prompt = ids[g] + use_at[g], .n_prompt = use_n[g],
                              .rng = sampler_rng_new(prompt_seed(s->seed, i))};
    }
    if (!rc && n_jobs == 1) {
        jobs[0].rc = decoder_run(jobs[0].decoder, cfg, jobs[0].prompt, jobs[0].n_prompt, jobs[0].rng, &jobs[0].out,
                                 &jobs[0].err);
    } else if (!rc && n_jobs > 1) {
        rc = decoder_run_batch(jobs, n_jobs, err);
    }
    for (int i = i0; i < i1 && !rc; i++) {
        int g = i - i0, j = job_of[g];
        if (j < 0) continue;
        if (jobs[j].rc) {
            *err = jobs[j].err;
            rc = -1;
            break;
        }
        rc = cols_take(c, &jobs[j].out, ids[g] + use_at[g], use_n[g], i, s->data_path, sum, err);
        sum->n_prompts += !rc;
    }
    for (int j = 0; j < n_jobs; j++) {
        decode_output_free(&jobs[j].out);
        gsl_rng_free(jobs[j].rng);
    }
    for (int g = 0; g < i1 - i0; g++) free(ids[g]);
    return rc;
}

int collect_run(const CollectSpec *s, const char *out_h5, CollectSummary *sum, SpErr *err) {
    memset(sum, 0, sizeof *sum);
    char dsha[SP_SHA256_HEX], tsha[SP_SHA256_HEX], datasha[SP_SHA256_HEX];
    if (sha256_model_dir(s->draft_dir, dsha, err) || sha256_model_dir(s->target_dir, tsha, err) ||
        sha256_file(s->data_path, datasha, err))
        return -1;
    Dataset ds = {0};
    RunModels rm = {0};
    Decoder *dec[COLLECT_MAX_BATCH] = {0};
    Cols c = {0};
    int rc = -1;
    if (dataset_load(s->data_path, s->data_format, s->n_prompts, &ds, err)) return -1;
    RunSetup rs = {s->draft_dir, s->target_dir, 1, NULL}; /* the target's tokenizer */
    if (run_models_open(&rm, &rs, err)) goto done;
    Tokenizer *tok = rm.tokenizer;
    DecodeConfig cfg;
    decode_config_default(&cfg);
    cfg.method = DM_COLLECT;
    cfg.sampling = s->sampling;
    cfg.max_new = s->max_new;
    cfg.lambda = s->lambda;
    cfg.label_rule = s->label_rule;
    cfg.capture_hidden = 1;
    if (s->source == VS_TARGET) { /* a judge head's data: SD (gamma 1, the judge never keeps), target states */
        if (s->label_rule != PROTOCOL_SOUND) {
            sp_fail(err, "judge data: label_rule must be sound");
            goto done;
        }
        cfg.method = DM_JUDGE;
        cfg.gamma = 1;
        cfg.tau_judge = 2;
        cfg.judge_rho = s->judge_rho;
        cfg.capture_target_hidden = 1;
        if (decode_config_check(&cfg, err)) goto done;
    }
    /* the context rule (decoding.h) with cfg's gamma (the default 5, which decoder_run checks): the
     * models' context - max_new - 6 */
    int ctx = rm.max_pos, max_prompt = decode_prompt_room_of(&cfg, ctx);
    if (max_prompt < 1) {
        sp_fail(err, "max_new %d + gamma %d + 1 leaves no room for a prompt in a context of %d", s->max_new, cfg.gamma,
                ctx);
        goto done;
    }
    int batch = s->batch > 1 ? (s->batch < COLLECT_MAX_BATCH ? s->batch : COLLECT_MAX_BATCH) : 1;
    for (int k = 0; k < batch; k++)
        if (!(dec[k] = decoder_new(rm.draft, rm.target, NULL, ctx, err))) goto done;
    c.d = model_config(s->source == VS_TARGET ? rm.target : rm.draft)->d_model;
    for (int i0 = 0; i0 < ds.n;) {
        int i1 = i0 + batch < ds.n ? i0 + batch : ds.n;
        if (collect_group(s, &ds, tok, max_prompt, &cfg, dec, i0, i1, &c, sum, err)) goto done;
        i0 = i1;
    }
    sum->n_tokens = c.n;
    if (c.n == 0) {
        sp_fail(err, "%s: collected no draft tokens", s->data_path);
        goto done;
    }
    rc = write_collect(out_h5, s, &c, dsha, tsha, datasha, sum->n_prompts, err);
done:
    cols_free(&c);
    for (int k = 0; k < COLLECT_MAX_BATCH; k++) decoder_free(dec[k]);
    run_models_close(&rm);
    dataset_free(&ds);
    return rc;
}

/* ------------------------------------------------------------------ training */

void train_spec_default(TrainSpec *t) {
    t->l2 = 1e-3;
    t->val_fraction = 0.2;
    t->tau = SP_DEFAULT_TAU;
    t->seed = 0;
    t->feature = VF_TOKEN;
    t->recipe = PROTOCOL_SOUND;
    t->padded_batches = 0;
}

/* Logistic regression on standardised features x[i] = (h[i] - mu) / sd over rows idx[0..n).
 * params theta = (w[0..d), b); loss = mean log(1 + exp(-y' z)) + l2 |w|^2, y' = +-1. */
typedef struct Problem {
    const float *h;
    const int8_t *y;
    const int64_t *idx;
    int64_t n;
    int d;
    const double *mu, *sd;
    double l2;
    double *x; /* [d] scratch */
} Problem;

static double logistic_fdf(const gsl_vector *th, Problem *P, gsl_vector *grad) {
    int d = P->d;
    double loss = 0, gb = 0;
    if (grad) gsl_vector_set_zero(grad);
    for (int64_t k = 0; k < P->n; k++) {
        const float *hr = P->h + (size_t)P->idx[k] * d;
        double z = gsl_vector_get(th, (size_t)d);
        for (int j = 0; j < d; j++) z += gsl_vector_get(th, (size_t)j) * ((hr[j] - P->mu[j]) / P->sd[j]);
        double y = P->y[P->idx[k]] == 1 ? 1.0 : -1.0, m = y * z;
        loss += m > 0 ? log1p(exp(-m)) : -m + log1p(exp(m)); /* stable log(1 + e^-m) */
        if (grad) {
            double g = -y / (1.0 + exp(m)); /* d loss / d z */
            for (int j = 0; j < d; j++) *gsl_vector_ptr(grad, (size_t)j) += g * ((hr[j] - P->mu[j]) / P->sd[j]);
            gb += g;
        }
    }
    double inv = 1.0 / (double)P->n, reg = 0;
    for (int j = 0; j < d; j++) reg += gsl_vector_get(th, (size_t)j) * gsl_vector_get(th, (size_t)j);
    if (grad) {
        for (int j = 0; j < d; j++) {
            double *g = gsl_vector_ptr(grad, (size_t)j);
            *g = *g * inv + 2 * P->l2 * gsl_vector_get(th, (size_t)j);
        }
        gsl_vector_set(grad, (size_t)d, gb * inv);
    }
    return loss * inv + P->l2 * reg;
}

static double f_only(const gsl_vector *th, void *p) { return logistic_fdf(th, p, NULL); }
static void df_only(const gsl_vector *th, void *p, gsl_vector *g) { logistic_fdf(th, p, g); }
static void fdf_both(const gsl_vector *th, void *p, double *f, gsl_vector *g) { *f = logistic_fdf(th, p, g); }

/* AUC = P(score of a positive > score of a negative), ties count 1/2 (rank-sum form). */
typedef struct ScoreLab {
    double s;
    int y;
} ScoreLab;

static int cmp_score(const void *a, const void *b) {
    double x = ((const ScoreLab *)a)->s, y = ((const ScoreLab *)b)->s;
    return (x > y) - (x < y);
}

static double auc_sorted(ScoreLab *v, int64_t n) {
    qsort(v, (size_t)n, sizeof *v, cmp_score);
    double rank_sum = 0;
    int64_t pos = 0;
    for (int64_t i = 0; i < n;) {
        int64_t j = i;
        while (j < n && v[j].s == v[i].s) j++;
        double avg = (double)(i + j + 1) / 2.0; /* ranks i+1..j */
        for (int64_t k = i; k < j; k++)
            if (v[k].y) rank_sum += avg, pos++;
        i = j;
    }
    int64_t neg = n - pos;
    if (pos == 0 || neg == 0) return NAN;
    return (rank_sum - (double)pos * (pos + 1) / 2.0) / ((double)pos * (double)neg);
}

double roc_auc(const double *score, const int8_t *label, int64_t n) {
    ScoreLab *v = malloc((size_t)(n ? n : 1) * sizeof *v);
    if (!v) return NAN;
    for (int64_t i = 0; i < n; i++) v[i] = (ScoreLab){score[i], label[i] == 1};
    double a = auc_sorted(v, n);
    free(v);
    return a;
}

/* Accuracy is reported at the usual classification cut, whatever tau is. */
static const double kAccuracyCut = 0.5;

/* Evaluates the folded verifier on rows idx: log loss, accuracy at kAccuracyCut, AUC, eta at tau (the
 * decoder's rule, engine/decode/rules.h). */
static void evaluate(const Verifier *v, const float *h, const int8_t *y, const int64_t *idx, int64_t n, double tau,
                     VerifierMetrics *m, int val) {
    ScoreLab *sl = malloc((size_t)(n ? n : 1) * sizeof *sl);
    double loss = 0;
    int64_t correct = 0, tp = 0, pos = 0, fp = 0, neg = 0;
    for (int64_t k = 0; k < n; k++) {
        double s = verifier_score(v, h + (size_t)idx[k] * v->d);
        int lab = y[idx[k]] == 1;
        double sc = fmin(fmax(s, 1e-12), 1 - 1e-12);
        loss -= lab ? log(sc) : log(1 - sc);
        correct += verifier_accepts(s, kAccuracyCut) == lab;
        if (lab) pos++, tp += verifier_accepts(s, tau);
        else neg++, fp += verifier_accepts(s, tau);
        if (sl) sl[k] = (ScoreLab){s, lab};
    }
    if (val) {
        m->val_loss = n ? loss / (double)n : NAN;
        m->val_acc = n ? (double)correct / (double)n : NAN;
        m->val_auc = sl ? auc_sorted(sl, n) : NAN;
        m->eta_tp = pos ? (double)tp / (double)pos : NAN;
        m->eta_fp = neg ? (double)fp / (double)neg : NAN;
        m->pos_rate_val = n ? (double)pos / (double)n : NAN;
    } else {
        m->train_loss = n ? loss / (double)n : NAN;
        m->pos_rate_train = n ? (double)pos / (double)n : NAN;
    }
    free(sl);
}

/* Splits rows by prompt: a seeded shuffle of the distinct prompt ids, the first val_fraction held out. */
static int split_rows(const int32_t *prompt, int64_t n, double val_fraction, uint64_t seed, int64_t **tr, int64_t *ntr,
                      int64_t **va, int64_t *nva) {
    int32_t maxp = 0;
    for (int64_t i = 0; i < n; i++) maxp = prompt[i] > maxp ? prompt[i] : maxp;
    int32_t np = maxp + 1;
    int32_t *perm = malloc((size_t)np * sizeof *perm);
    uint8_t *is_val = calloc((size_t)np, 1);
    *tr = malloc((size_t)n * sizeof **tr);
    *va = malloc((size_t)n * sizeof **va);
    if (!perm || !is_val || !*tr || !*va) {
        free(perm), free(is_val);
        return -1;
    }
    for (int32_t i = 0; i < np; i++) perm[i] = i;
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(r, (unsigned long)(seed ^ (seed >> 32)));
    for (int32_t i = np - 1; i > 0; i--) { /* Fisher-Yates */
        int32_t j = (int32_t)gsl_rng_uniform_int(r, (unsigned long)i + 1), t = perm[i];
        perm[i] = perm[j], perm[j] = t;
    }
    gsl_rng_free(r);
    int32_t n_val = (int32_t)(val_fraction * np + 0.5);
    if (n_val < 1 && np > 1) n_val = 1;
    for (int32_t i = 0; i < n_val; i++) is_val[perm[i]] = 1;
    *ntr = *nva = 0;
    for (int64_t i = 0; i < n; i++) {
        if (is_val[prompt[i]]) (*va)[(*nva)++] = i;
        else (*tr)[(*ntr)++] = i;
    }
    free(perm);
    free(is_val);
    return 0;
}

/* Splits rows at random, token by token (the authors' train_test_split(test_size=val_fraction)): a
 * seeded shuffle of all rows, the first round(val_fraction * n) held out. */
static int split_rows_by_token(int64_t n, double val_fraction, uint64_t seed, int64_t **tr, int64_t *ntr,
                               int64_t **va, int64_t *nva) {
    int64_t *perm = malloc((size_t)n * sizeof *perm);
    *tr = malloc((size_t)n * sizeof **tr);
    *va = malloc((size_t)n * sizeof **va);
    if (!perm || !*tr || !*va) {
        free(perm);
        return -1;
    }
    for (int64_t i = 0; i < n; i++) perm[i] = i;
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(r, (unsigned long)(seed ^ (seed >> 32)));
    gsl_ran_shuffle(r, perm, (size_t)n, sizeof *perm);
    gsl_rng_free(r);
    int64_t n_val = (int64_t)(val_fraction * (double)n + 0.5);
    if (n_val < 1) n_val = 1;
    if (n_val >= n) n_val = n - 1;
    *nva = *ntr = 0;
    for (int64_t i = 0; i < n; i++) {
        if (i < n_val) (*va)[(*nva)++] = perm[i];
        else (*tr)[(*ntr)++] = perm[i];
    }
    free(perm);
    return 0;
}

/* ------------------------------------------------------------------ the authors' padded batches */

enum { kPaperEpochs = 20, kPaperBatch = 10 };

/* The features of PROTOCOL_PAPER_CODE's batches. Without padding a row's feature is its own state
 * (h[row]); with padded_batches, in a batch whose longest prefix has L tokens, a row with pos < L
 * reads the state at position L - 1 of its prefix right-padded with eos (session_probe),
 * precomputed for every (row, L) the epochs' batches will ask for. */
typedef struct BatchFeats {
    const float *h;      /* [n, d] the rows' own features */
    const int32_t *pos;  /* [n] prefix length; NULL: no padding */
    int d;
    int64_t *first;      /* [n + 1] row r's padded features: entries first[r] .. first[r + 1] */
    int32_t *len;        /* [entries] the batch's longest prefix L, ascending within a row */
    float *feat;         /* [entries, d] */
} BatchFeats;

static const float *batch_feature(const BatchFeats *B, int64_t row, int L) {
    if (!B->pos || B->pos[row] >= L) return B->h + (size_t)row * B->d;
    int64_t lo = B->first[row], hi = B->first[row + 1] - 1;
    while (lo < hi) { /* the entry with len == L (it exists: batch_feats_build saw this batch) */
        int64_t mid = (lo + hi) / 2;
        if (B->len[mid] < L) lo = mid + 1;
        else hi = mid;
    }
    return B->feat + (size_t)lo * B->d;
}

/* The longest prefix of rows order[at .. at + nb). */
static int batch_len(const BatchFeats *B, const int64_t *order, int64_t at, int64_t nb) {
    int L = 0;
    for (int64_t k = at; B->pos && k < at + nb; k++) L = B->pos[order[k]] > L ? B->pos[order[k]] : L;
    return L;
}

typedef struct Need {
    int64_t row;
    int32_t len;
} Need;

static int cmp_need(const void *a, const void *b) {
    const Need *x = a, *y = b;
    if (x->row != y->row) return (x->row > y->row) - (x->row < y->row);
    return (x->len > y->len) - (x->len < y->len);
}

/* Every (row, L) of the batches of the given orders (n_orders arrays of n_each rows). */
static int collect_needs(const BatchFeats *B, int64_t *const *orders, int n_orders, int64_t n_each, Need **needs,
                         int64_t *n_needs, int64_t *cap) {
    for (int e = 0; e < n_orders; e++)
        for (int64_t at = 0; at < n_each; at += kPaperBatch) {
            int64_t nb = n_each - at < kPaperBatch ? n_each - at : kPaperBatch;
            int L = batch_len(B, orders[e], at, nb);
            for (int64_t k = at; k < at + nb; k++) {
                int64_t row = orders[e][k];
                if (B->pos[row] >= L) continue;
                if (*n_needs == *cap) {
                    Need *nn = realloc(*needs, (size_t)(*cap = *cap ? 2 * *cap : 4096) * sizeof *nn);
                    if (!nn) return -1;
                    *needs = nn;
                }
                (*needs)[(*n_needs)++] = (Need){row, L};
            }
        }
    return 0;
}

/* Computes the padded features of the needs (sorted, deduplicated) with the draft: per prompt one
 * prefill of its longest prefix, then per row (longest first) a truncation to its prefix and one
 * probe per L. prefix: [n, W] ids; prompt: [n]. */
static int batch_feats_compute(BatchFeats *B, const Need *nd, int64_t m, int64_t n, const int32_t *prefix, int W,
                               const int32_t *prompt, const Model *draft, SpErr *err) {
    int32_t pad = model_config(draft)->eos_id;
    if (pad < 0) return sp_fail(err, "padded batches: the draft has no eos_token_id to pad with");
    B->first = calloc((size_t)n + 1, sizeof *B->first);
    B->len = malloc((size_t)(m ? m : 1) * sizeof *B->len);
    B->feat = malloc((size_t)(m ? m : 1) * (size_t)B->d * sizeof *B->feat);
    int64_t *by_pos = malloc((size_t)n * sizeof *by_pos);
    Session *s = session_new(draft, W, W, err);
    int rc = s ? 0 : -1;
    if (rc == 0 && (!B->first || !B->len || !B->feat || !by_pos)) rc = sp_fail(err, "out of memory (padded features)");
    for (int64_t i = 0; rc == 0 && i < m; i++) B->first[nd[i].row + 1]++, B->len[i] = nd[i].len;
    for (int64_t r = 0; rc == 0 && r < n; r++) B->first[r + 1] += B->first[r];
    /* rows ordered by (prompt, pos descending): one prefill per prompt */
    for (int64_t r = 0; rc == 0 && r < n; r++) by_pos[r] = r;
    for (int64_t a = 1; rc == 0 && a < n; a++) { /* insertion sort: rows come grouped by prompt already */
        int64_t x = by_pos[a], b = a;
        while (b > 0 && (prompt[by_pos[b - 1]] > prompt[x] ||
                         (prompt[by_pos[b - 1]] == prompt[x] && B->pos[by_pos[b - 1]] < B->pos[x])))
            by_pos[b] = by_pos[b - 1], b--;
        by_pos[b] = x;
    }
    int64_t head = -1; /* the row whose prefix is prefilled */
    for (int64_t a = 0; rc == 0 && a < n; a++) {
        int64_t r = by_pos[a];
        if (B->first[r] == B->first[r + 1]) continue;
        const int32_t *ids = prefix + (size_t)r * W;
        int same = head >= 0 && prompt[head] == prompt[r] &&
                   !memcmp(prefix + (size_t)head * W, ids, (size_t)B->pos[r] * sizeof *ids);
        if (!same) {
            head = r;
            if (session_truncate(s, 0, err) || session_prefill(s, ids, B->pos[r], NULL, NULL, err)) rc = -1;
        }
        if (rc == 0 && session_truncate(s, B->pos[r], err)) rc = -1;
        for (int64_t i = B->first[r]; rc == 0 && i < B->first[r + 1]; i++) {
            const float *hid;
            if (session_probe(s, pad, B->len[i] - 1, &hid, err)) rc = -1;
            else memcpy(B->feat + (size_t)i * B->d, hid, (size_t)B->d * sizeof *hid);
        }
    }
    free(by_pos);
    session_free(s);
    return rc;
}

static void batch_feats_free(BatchFeats *B) { free(B->first), free(B->len), free(B->feat); }

/* Accuracy at kAccuracyCut of (w, b) on the rows of order (the authors' checkpoint criterion), each
 * scored on the feature of its batch of kPaperBatch (their test loader's shuffled batches; without
 * padding a row's own feature, so the order does not matter). */
static double batch_accuracy(const Verifier *v, const BatchFeats *B, const int8_t *y, const int64_t *order, int64_t n) {
    int64_t correct = 0;
    for (int64_t at = 0; at < n; at += kPaperBatch) {
        int64_t nb = n - at < kPaperBatch ? n - at : kPaperBatch;
        int L = batch_len(B, order, at, nb);
        for (int64_t k = at; k < at + nb; k++)
            correct += verifier_accepts(verifier_score(v, batch_feature(B, order[k], L)), kAccuracyCut) == (y[order[k]] == 1);
    }
    return n ? (double)correct / (double)n : 0;
}

/* The authors' recipe (PROTOCOL_PAPER_CODE, verifier_train.h) into v (raw features: w, b used as they are).
 * Adam on mean BCE over shuffled batches of kPaperBatch rows for kPaperEpochs epochs; after each epoch the
 * test accuracy, and the parameters of the best epoch (strictly better, as theirs) are kept. The
 * epochs' orders are drawn first (train from r after the init, test from its own stream), so that
 * padded features can be computed for exactly the batches that will be seen. */
static const double kPaperLr = 5e-4, kAdamB1 = 0.9, kAdamB2 = 0.999, kAdamEps = 1e-8;

typedef struct PadInput { /* padded_batches: what batch_feats_compute needs */
    const int32_t *pos, *prefix, *prompt; /* [n], [n, W], [n] */
    int W;
    int64_t n;
    const Model *draft;
    Model *owned_draft;
} PadInput;

static int fit_paper_code(const float *h, const int8_t *y, const int64_t *tr, int64_t ntr, const int64_t *va,
                          int64_t nva, uint64_t seed, const PadInput *pad, Verifier *v, SpErr *err) {
    int d = v->d;
    size_t np = (size_t)d + 1; /* theta = (w[0..d), b) */
    double *th = calloc(np, sizeof *th), *m = calloc(np, sizeof *m), *s2 = calloc(np, sizeof *s2);
    double *g = calloc(np, sizeof *g), *best = calloc(np, sizeof *best);
    int64_t *orders[kPaperEpochs], *tests[kPaperEpochs];
    int ok = th && m && s2 && g && best;
    for (int e = 0; e < kPaperEpochs; e++) {
        orders[e] = malloc((size_t)(ntr ? ntr : 1) * sizeof **orders);
        tests[e] = malloc((size_t)(nva ? nva : 1) * sizeof **tests);
        ok &= orders[e] && tests[e];
    }
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937), *rt = gsl_rng_alloc(gsl_rng_mt19937);
    BatchFeats B = {.h = h, .d = d, .pos = pad ? pad->pos : NULL};
    Need *needs = NULL;
    int64_t n_needs = 0, cap = 0;
    int rc = ok && r && rt ? 0 : sp_fail(err, "out of memory");
    if (rc == 0) {
        gsl_rng_set(r, (unsigned long)(seed ^ (seed >> 32)) + 1);
        gsl_rng_set(rt, (unsigned long)(seed ^ (seed >> 32)) + 2);
        double bound = 1.0 / sqrt((double)d); /* nn.Linear's default init, weight and bias */
        for (size_t j = 0; j < np; j++) th[j] = (2 * gsl_rng_uniform(r) - 1) * bound;
        memcpy(best, th, np * sizeof *th);
        for (int e = 0; e < kPaperEpochs; e++) { /* each epoch reshuffles the previous order */
            memcpy(orders[e], e ? orders[e - 1] : tr, (size_t)ntr * sizeof **orders);
            gsl_ran_shuffle(r, orders[e], (size_t)ntr, sizeof **orders);
            memcpy(tests[e], e ? tests[e - 1] : va, (size_t)nva * sizeof **tests);
            gsl_ran_shuffle(rt, tests[e], (size_t)nva, sizeof **tests);
        }
    }
    if (rc == 0 && pad) {
        if (collect_needs(&B, orders, kPaperEpochs, ntr, &needs, &n_needs, &cap) ||
            collect_needs(&B, tests, kPaperEpochs, nva, &needs, &n_needs, &cap)) {
            rc = sp_fail(err, "out of memory (padded batches)");
        } else {
            qsort(needs, (size_t)n_needs, sizeof *needs, cmp_need);
            int64_t u = 0;
            for (int64_t i = 0; i < n_needs; i++)
                if (u == 0 || needs[i].row != needs[u - 1].row || needs[i].len != needs[u - 1].len) needs[u++] = needs[i];
            rc = batch_feats_compute(&B, needs, u, pad->n, pad->prefix, pad->W, pad->prompt, pad->draft, err);
        }
    }
    double best_acc = 0;
    int64_t step = 0;
    for (int epoch = 0; rc == 0 && epoch < kPaperEpochs; epoch++) {
        const int64_t *order = orders[epoch];
        for (int64_t at = 0; at < ntr; at += kPaperBatch) {
            int64_t nb = ntr - at < kPaperBatch ? ntr - at : kPaperBatch;
            int L = batch_len(&B, order, at, nb);
            memset(g, 0, np * sizeof *g);
            for (int64_t k = at; k < at + nb; k++) { /* d BCE(sigmoid(z), y) / d z = sigmoid(z) - y */
                const float *x = batch_feature(&B, order[k], L);
                double z = th[d];
                for (int j = 0; j < d; j++) z += th[j] * x[j];
                double e = 1.0 / (1.0 + exp(-z)) - (y[order[k]] == 1);
                for (int j = 0; j < d; j++) g[j] += e * x[j];
                g[d] += e;
            }
            step++;
            double c1 = 1 - pow(kAdamB1, (double)step), c2 = 1 - pow(kAdamB2, (double)step);
            for (size_t j = 0; j < np; j++) {
                double gj = g[j] / (double)nb;
                m[j] = kAdamB1 * m[j] + (1 - kAdamB1) * gj;
                s2[j] = kAdamB2 * s2[j] + (1 - kAdamB2) * gj * gj;
                th[j] -= kPaperLr * (m[j] / c1) / (sqrt(s2[j] / c2) + kAdamEps);
            }
        }
        for (int j = 0; j < d; j++) v->w[j] = (float)th[j];
        v->b = (float)th[d];
        double acc = batch_accuracy(v, &B, y, tests[epoch], nva);
        if (acc > best_acc) {
            best_acc = acc;
            memcpy(best, th, np * sizeof *th);
        }
    }
    for (int j = 0; rc == 0 && j < d; j++) v->w[j] = (float)best[j];
    if (rc == 0) v->b = (float)best[d];
    free(th), free(m), free(s2), free(g), free(best), free(needs);
    for (int e = 0; e < kPaperEpochs; e++) free(orders[e]), free(tests[e]);
    if (r) gsl_rng_free(r);
    if (rt) gsl_rng_free(rt);
    batch_feats_free(&B);
    return rc;
}

static int fit(Problem *P, gsl_vector *th, SpErr *err) {
    int dim = P->d + 1;
    gsl_multimin_function_fdf fn = {f_only, df_only, fdf_both, (size_t)dim, P};
    gsl_multimin_fdfminimizer *mz = gsl_multimin_fdfminimizer_alloc(gsl_multimin_fdfminimizer_vector_bfgs2, (size_t)dim);
    if (!mz) return sp_fail(err, "out of memory");
    gsl_multimin_fdfminimizer_set(mz, &fn, th, 0.1, 0.1);
    int status = GSL_CONTINUE;
    for (int it = 0; it < 1000 && status == GSL_CONTINUE; it++) {
        if (gsl_multimin_fdfminimizer_iterate(mz)) break; /* no further progress possible */
        status = gsl_multimin_test_gradient(mz->gradient, 1e-6);
    }
    gsl_vector_memcpy(th, mz->x);
    gsl_multimin_fdfminimizer_free(mz);
    return 0;
}

/* Metrics as JSON (cJSON writes NaN as null, so the text always parses). */
static void metrics_json(const VerifierMetrics *m, double l2, char *buf, size_t cap) {
    cJSON *j = cJSON_CreateObject();
    cJSON_AddNumberToObject(j, "d", (double)m->d);
    cJSON_AddNumberToObject(j, "n_train", (double)m->n_train);
    cJSON_AddNumberToObject(j, "n_val", (double)m->n_val);
    cJSON_AddNumberToObject(j, "pos_rate_train", m->pos_rate_train);
    cJSON_AddNumberToObject(j, "pos_rate_val", m->pos_rate_val);
    cJSON_AddNumberToObject(j, "train_loss", m->train_loss);
    cJSON_AddNumberToObject(j, "val_loss", m->val_loss);
    cJSON_AddNumberToObject(j, "val_acc", m->val_acc);
    cJSON_AddNumberToObject(j, "val_auc", m->val_auc);
    cJSON_AddNumberToObject(j, "tau", m->tau);
    cJSON_AddNumberToObject(j, "eta_fp", m->eta_fp);
    cJSON_AddNumberToObject(j, "eta_tp", m->eta_tp);
    cJSON_AddNumberToObject(j, "l2", l2);
    char *t = cJSON_PrintUnformatted(j);
    snprintf(buf, cap, "%s", t ? t : "{}");
    free(t);
    cJSON_Delete(j);
}

/* The collect file's every attribute and dataset that the readers below touch, read once in a checked
 * child first (h5util.h h5_checked_probe): libhdf5 crashing on a damaged file (issue 27, class 1) is
 * then a one-line error naming it, never a crash of sprinter. */
static int collect_probe(const char *path, const char *hidden, int padded, SpErr *err) {
    static const char *const attrs[] = {"format", "feature_source", "lambda", "judge_rho", "draft_sha256", "draft"};
    H5Probe d[5] = {{"label", H5C_I8}, {"prompt_index", H5C_I32}};
    int n = 2;
    if (hidden) d[n++] = (H5Probe){hidden, H5C_F32};
    if (padded) d[n++] = (H5Probe){"pos", H5C_I32}, d[n++] = (H5Probe){"prefix_ids", H5C_I32};
    return h5_checked_probe(path, attrs, (int)(sizeof attrs / sizeof *attrs), d, n, err);
}

/* The prefixes and the draft model for padded_batches, from a version-3 collect file of n rows. */
static int pad_input_load(hid_t f, const char *path, int64_t n, const char *draft_sha, PadInput *pad, SpErr *err) {
    char draft[4096], sha[SP_SHA256_HEX];
    int64_t np, nx;
    int w, W;
    int32_t *pos = NULL, *prefix = NULL;
    if (h5_read_attr_str(f, path, "draft", draft, sizeof draft, err) ||
        h5_read_column(f, path, "pos", H5C_I32, (void **)&pos, &np, &w, err))
        return -1;
    pad->pos = pos;
    if (h5_read_column(f, path, "prefix_ids", H5C_I32, (void **)&prefix, &nx, &W, err))
        return sp_err_prefix(err, "padded batches need a version-3 collect file (collect again)");
    pad->prefix = prefix, pad->W = W, pad->n = n;
    if (np != n || nx != n || w != 1) return sp_fail(err, "%s: pos and prefix_ids disagree with the other columns in length", path);
    for (int64_t i = 0; i < n; i++)
        if (pos[i] < 1 || pos[i] > W || prefix[(size_t)i * W + pos[i] - 1] < 0)
            return sp_fail(err, "%s: row %lld: pos %d does not fit its prefix_ids (width %d)", path, (long long)i, pos[i], W);
    if (sha256_model_dir(draft, sha, err)) return sp_err_prefix(err, "%s: attribute draft", path);
    if (strcmp(sha, draft_sha))
        return sp_fail(err, "%s: the draft at %s has sha256 %.12s..., the collect file was made with %.12s...", path, draft,
                       sha, draft_sha);
    if (!(pad->owned_draft = model_load(draft, err))) return sp_err_prefix(err, "%s", draft);
    pad->draft = pad->owned_draft;
    return 0;
}

static void pad_input_free(PadInput *pad) {
    free((void *)pad->pos), free((void *)pad->prefix);
    model_free(pad->owned_draft);
}

int collect_padded_features(const char *path, const int64_t *rows, const int32_t *lens, int64_t m, float *out,
                            SpErr *err) {
    if (collect_probe(path, NULL, 1, err)) return -1;
    hid_t f = h5_open_read(path, err);
    if (f < 0) return -1;
    char draft_sha[SP_SHA256_HEX];
    PadInput pad = {0};
    int32_t *prompt = NULL;
    int64_t n = 0;
    int w, rc = -1;
    Need *nd = malloc((size_t)(m ? m : 1) * sizeof *nd);
    BatchFeats B = {0};
    if (!nd || h5_read_attr_str(f, path, "draft_sha256", draft_sha, sizeof draft_sha, err) ||
        h5_read_column(f, path, "prompt_index", H5C_I32, (void **)&prompt, &n, &w, err) ||
        pad_input_load(f, path, n, draft_sha, &pad, err))
        goto done;
    for (int64_t i = 0; i < m; i++) {
        if (rows[i] < 0 || rows[i] >= n || lens[i] <= pad.pos[rows[i]] || lens[i] > pad.W) {
            sp_fail(err, "%s: (row %lld, L %d): needs a row and pos < L <= %d", path, (long long)rows[i], lens[i], pad.W);
            goto done;
        }
        nd[i] = (Need){rows[i], lens[i]};
    }
    qsort(nd, (size_t)m, sizeof *nd, cmp_need);
    B.d = model_config(pad.draft)->d_model, B.pos = pad.pos;
    if (batch_feats_compute(&B, nd, m, n, pad.prefix, pad.W, prompt, pad.draft, err)) goto done;
    for (int64_t i = 0; i < m; i++) {
        const float *x = batch_feature(&B, rows[i], lens[i]);
        memcpy(out + (size_t)i * B.d, x, (size_t)B.d * sizeof *x);
    }
    rc = 0;
done:
    batch_feats_free(&B);
    pad_input_free(&pad);
    free(prompt), free(nd);
    H5Fclose(f);
    return rc;
}

int verifier_train(const char *path, const TrainSpec *t, const char *out_path, VerifierMetrics *m, SpErr *err) {
    memset(m, 0, sizeof *m);
    if (!(t->val_fraction > 0 && t->val_fraction < 1)) return sp_fail(err, "val_fraction %g must be in (0, 1)", t->val_fraction);
    if (!(t->l2 >= 0)) return sp_fail(err, "l2 %g must be >= 0", t->l2);
    if (collect_probe(path, t->feature == VF_PREFIX ? "hidden_prefix" : "hidden", t->padded_batches, err)) return -1;
    hid_t f = h5_open_read(path, err);
    if (f < 0) return -1;
    float *h = NULL;
    int8_t *y = NULL;
    int32_t *prompt = NULL;
    int64_t n, ny, np, *tr = NULL, *va = NULL, ntr = 0, nva = 0;
    int d, w1, w2, rc = -1;
    double lambda, *mu = NULL, *sd = NULL;
    char fmt[64], dsha[SP_SHA256_HEX], draft_sha[SP_SHA256_HEX] = "";
    gsl_vector *th = NULL;
    Verifier v = {0};
    if (t->padded_batches && (t->recipe != PROTOCOL_PAPER_CODE || t->feature != VF_PREFIX)) {
        sp_fail(err, "padded batches are the authors' recipe on the prefix feature: need recipe paper-code and feature "
                     "prefix");
        goto done;
    }
    if (h5_read_attr_str(f, path, "format", fmt, sizeof fmt, err)) goto done;
    if (strcmp(fmt, "sprinter-collect") != 0) {
        sp_fail(err, "%s: attribute format is \"%s\", expected \"sprinter-collect\"", path, fmt);
        goto done;
    }
    char source_name[32] = "draft";
    VerifierSource source = VS_DRAFT;
    if (H5Aexists(f, "feature_source") > 0) { /* absent in older files: the draft's */
        if (h5_read_attr_str(f, path, "feature_source", source_name, sizeof source_name, err)) goto done;
        if (verifier_source_parse(source_name, &source)) {
            sp_fail(err, "%s: attribute feature_source \"%s\" is not draft or target", path, source_name);
            goto done;
        }
    }
    if (source == VS_TARGET && (t->feature != VF_TOKEN || t->padded_batches)) {
        sp_fail(err, "%s: judge data (the target's states at drafted tokens): feature must be token, no padded batches", path);
        goto done;
    }
    if (h5_read_attr_f64(f, path, source == VS_TARGET ? "judge_rho" : "lambda", &lambda, err) ||
        h5_read_attr_str(f, path, "draft_sha256", draft_sha, sizeof draft_sha, err) ||
        h5_read_column(f, path, t->feature == VF_PREFIX ? "hidden_prefix" : "hidden", H5C_F32, (void **)&h, &n, &d,
                       err) ||
        h5_read_column(f, path, "label", H5C_I8, (void **)&y, &ny, &w1, err) ||
        h5_read_column(f, path, "prompt_index", H5C_I32, (void **)&prompt, &np, &w2, err))
        goto done;
    if (ny != n || np != n || w1 != 1 || w2 != 1 || n < 2) {
        sp_fail(err, "%s: datasets hidden, label, prompt_index disagree in length (%lld, %lld, %lld)", path, (long long)n,
                (long long)ny, (long long)np);
        goto done;
    }
    for (int64_t i = 0; i < n; i++)
        if (prompt[i] < 0 || (y[i] != 0 && y[i] != 1)) {
            sp_fail(err, "%s: row %lld has prompt_index %d, label %d", path, (long long)i, prompt[i], y[i]);
            goto done;
        }
    if (t->recipe == PROTOCOL_PAPER_CODE ? split_rows_by_token(n, t->val_fraction, t->seed, &tr, &ntr, &va, &nva)
                                       : split_rows(prompt, n, t->val_fraction, t->seed, &tr, &ntr, &va, &nva)) {
        sp_fail(err, "out of memory");
        goto done;
    }
    if (ntr == 0 || nva == 0) {
        sp_fail(err, "%s: need at least two prompts to split into train and validation", path);
        goto done;
    }
    /* standardise on the training rows */
    mu = calloc((size_t)d, sizeof *mu);
    sd = calloc((size_t)d, sizeof *sd);
    double *scratch = NULL;
    Problem P = {h, y, tr, ntr, d, mu, sd, t->l2, scratch};
    th = gsl_vector_calloc((size_t)d + 1);
    v.d = d;
    v.w = malloc((size_t)d * sizeof *v.w);
    if (!mu || !sd || !th || !v.w) {
        sp_fail(err, "out of memory");
        goto done;
    }
    if (t->recipe == PROTOCOL_PAPER_CODE) {
        PadInput pad = {0};
        if (t->padded_batches && pad_input_load(f, path, n, draft_sha, &pad, err)) goto done;
        pad.prompt = prompt;
        int frc = fit_paper_code(h, y, tr, ntr, va, nva, t->seed, t->padded_batches ? &pad : NULL, &v, err);
        pad_input_free(&pad);
        if (frc) goto done;
        goto fitted;
    }
    for (int64_t k = 0; k < ntr; k++)
        for (int j = 0; j < d; j++) mu[j] += h[(size_t)tr[k] * d + j];
    for (int j = 0; j < d; j++) mu[j] /= (double)ntr;
    for (int64_t k = 0; k < ntr; k++)
        for (int j = 0; j < d; j++) {
            double z = h[(size_t)tr[k] * d + j] - mu[j];
            sd[j] += z * z;
        }
    for (int j = 0; j < d; j++) sd[j] = sd[j] > 0 ? sqrt(sd[j] / (double)ntr) : 1.0;
    if (fit(&P, th, err)) goto done;
    /* fold the standardisation into (w, b) */
    double b = gsl_vector_get(th, (size_t)d);
    for (int j = 0; j < d; j++) {
        double wj = gsl_vector_get(th, (size_t)j) / sd[j];
        v.w[j] = (float)wj;
        b -= wj * mu[j];
    }
    v.b = (float)b;
fitted:
    v.lambda = lambda; /* a judge head: its judge_rho */
    v.feature = t->feature;
    v.source = source;
    m->d = d;
    m->n_train = ntr;
    m->n_val = nva;
    m->tau = t->tau;
    evaluate(&v, h, y, tr, ntr, t->tau, m, 0);
    evaluate(&v, h, y, va, nva, t->tau, m, 1);
    char metrics[1024], l2s[32], seeds[32];
    metrics_json(m, t->l2, metrics, sizeof metrics);
    if (sha256_file(path, dsha, err)) goto done;
    snprintf(l2s, sizeof l2s, "%.17g", t->l2);
    snprintf(seeds, sizeof seeds, "%llu", (unsigned long long)t->seed);
    const char *meta[] = {"metrics", metrics, "data_sha256", dsha, "draft_sha256", draft_sha, "l2", l2s,
                          "split_seed", seeds, "recipe", protocol_name(t->recipe), NULL, NULL};
    rc = verifier_save(out_path, &v, meta, err);
done:
    H5Fclose(f);
    if (th) gsl_vector_free(th);
    free(h), free(y), free(prompt), free(tr), free(va), free(mu), free(sd), free(v.w);
    return rc;
}

/* ------------------------------------------------------------------ cache */

static int metrics_from_file(const char *path, VerifierMetrics *m, SpErr *err) {
    char buf[1024];
    if (verifier_read_meta(path, "metrics", buf, sizeof buf, err)) return -1;
    cJSON *j = cJSON_Parse(buf);
    if (!j) return sp_fail(err, "%s: __metadata__.metrics is not JSON", path);
#define NUM(k) (cJSON_IsNumber(cJSON_GetObjectItem(j, k)) ? cJSON_GetObjectItem(j, k)->valuedouble : NAN)
    m->d = (int64_t)NUM("d"), m->n_train = (int64_t)NUM("n_train"), m->n_val = (int64_t)NUM("n_val");
    m->pos_rate_train = NUM("pos_rate_train"), m->pos_rate_val = NUM("pos_rate_val");
    m->train_loss = NUM("train_loss"), m->val_loss = NUM("val_loss"), m->val_acc = NUM("val_acc");
    m->val_auc = NUM("val_auc"), m->tau = NUM("tau"), m->eta_fp = NUM("eta_fp"), m->eta_tp = NUM("eta_tp");
#undef NUM
    cJSON_Delete(j);
    return 0;
}

int verifier_ensure(const CollectSpec *c, const TrainSpec *t, const char *cache_dir, char *out_path, size_t cap,
                    VerifierMetrics *m, SpErr *err) {
    char dsha[SP_SHA256_HEX], tsha[SP_SHA256_HEX], datasha[SP_SHA256_HEX], ckey[SP_SHA256_HEX], vkey[SP_SHA256_HEX];
    if (sha256_model_dir(c->draft_dir, dsha, err) || sha256_model_dir(c->target_dir, tsha, err) ||
        sha256_file(c->data_path, datasha, err))
        return -1;
    char desc[1024];
    int k = snprintf(desc, sizeof desc, "collect-v3 %s %s %s %s %d %d %.17g %.9g %d %.9g %llu", dsha, tsha, datasha,
                     c->data_format ? c->data_format : "auto", c->n_prompts, c->max_new, c->lambda,
                     (double)c->sampling.temperature, c->sampling.top_k, (double)c->sampling.top_p,
                     (unsigned long long)c->seed);
    if (c->label_rule != PROTOCOL_SOUND) /* absent for the default: keys of older caches stay valid */
        k += snprintf(desc + k, sizeof desc - (size_t)k, " label_rule=%s", protocol_name(c->label_rule));
    if (c->source == VS_TARGET) /* a judge head's data (likewise absent for the draft's) */
        k += snprintf(desc + k, sizeof desc - (size_t)k, " judge rho=%.17g", c->judge_rho);
    sha256_str(desc, (size_t)k, ckey);
    k += snprintf(desc + k, sizeof desc - (size_t)k, " train-v1 %.17g %.17g %.17g %llu%s%s%s", t->l2, t->val_fraction,
                  t->tau, (unsigned long long)t->seed, t->feature == VF_PREFIX ? " feature=prefix" : "",
                  t->recipe == PROTOCOL_PAPER_CODE ? " recipe=paper-code" : "", t->padded_batches ? " padded" : "");
    sha256_str(desc, strlen(desc), vkey);
    if (sp_mkdir_p(cache_dir, err)) return -1;
    char collect_path[4096];
    snprintf(collect_path, sizeof collect_path, "%s/%s-%.16s.h5", cache_dir,
             c->source == VS_TARGET ? "collect-judge" : "collect", ckey);
    int n = snprintf(out_path, cap, "%s/%s-%.16s.safetensors", cache_dir, c->source == VS_TARGET ? "judge" : "verifier",
                     vkey);
    if (n < 0 || (size_t)n >= cap) return sp_fail(err, "%s: path too long", cache_dir);
    if (access(out_path, F_OK) == 0) return metrics_from_file(out_path, m, err);
    if (access(collect_path, F_OK) != 0) {
        CollectSummary sum;
        if (collect_run(c, collect_path, &sum, err)) return -1;
    }
    return verifier_train(collect_path, t, out_path, m, err);
}
