/* test_judge.c - the judge method (Judge Decoding, engine/decode/method_sd.c) and its parts.
 *
 *   candidates  session_candidates (V candidate tokens at one position, each attending to the cached
 *               prefix and itself) equals one-token forwards one at a time (hidden and logits, |diff|
 *               <= 1e-4), on GPT-2, GPT-Neo (a prefix longer than the local window) and Llama (RoPE,
 *               grouped kv heads); judge_candidate_decisions' states equal them too
 *   law         the first token of `judge` (max_new 1) at a fixed prefix against judge_next_token_law
 *               with j(v) from the candidate states: chi-square (GSL) on 20,000 seeded draws, pass at
 *               p > 0.001, with gamma 1 and 3, two sampling settings; negative controls (the law with
 *               j = 0, i.e. p; the law with j flipped) must fail (p < 1e-6)
 *   lossless    tau_judge > 1 (the judge never keeps): judge emits exactly sd's tokens under the same
 *               seed (token for token, 20 prompts x 40 tokens, gamma 4), with and without a head
 *   rows        the judge's input row: the score in each event equals the head applied to the target's
 *               state after reading the drafted token (a one-token forward over the committed prefix
 *               and the drafted token), and the label is p(x) >= rho * max p
 *   training    a planted linear rule on synthetic target-source data is recovered (val AUC > 0.95), the
 *               head is saved with source target, decoder_set_judge takes it and decoder_new refuses it
 *               as a draft verifier
 * usage: test_judge WORKDIR */
#include <gsl/gsl_cdf.h>
#include <gsl/gsl_randist.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decoding.h"
#include "h5util.h"
#include "jsonutil.h"
#include "presets.h"
#include "verifier_train.h"

#include "check.h"

#define V_TINY 96
enum { N_DRAWS = 20000 };
#include "decode_fixture.h"


/* ------------------------------------------------------------------ candidates */

static void test_candidates(const char *work, const char *arch, int n_prefix) {
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/cand-%s", work, arch);
    SpErr err = {{0}};
    if (make_model(arch, dir, 32, 2, 0.1, 7)) {
        check(0, "%s: model", arch);
        return;
    }
    Model *m = model_load(dir, &err);
    if (!m) {
        check(0, "%s: load: %s", arch, err.msg);
        return;
    }
    const ModelConfig *c = model_config(m);
    int V = c->vocab_size, d = c->d_model;
    int32_t prefix[32], tokens[256];
    for (int i = 0; i < n_prefix; i++) prefix[i] = (int32_t)((i * 37 + 11) % V);
    Session *s = session_new(m, 64, 64, &err), *one = session_new(m, 64, 64, &err);
    float *hb = malloc((size_t)V * d * sizeof *hb), *lb = malloc((size_t)V * V * sizeof *lb);
    const float *H, *L;
    int ok = s && one && hb && lb && !session_prefill(s, prefix, n_prefix, NULL, NULL, &err) &&
             !session_prefill(one, prefix, n_prefix, NULL, NULL, &err);
    /* the batch in chunks of the session's batch (64) */
    for (int v0 = 0; ok && v0 < V; v0 += 64) {
        int k = V - v0 < 64 ? V - v0 : 64;
        for (int i = 0; i < k; i++) tokens[i] = v0 + i;
        ok = !session_candidates(s, tokens, k, &L, &H, &err);
        if (ok) memcpy(hb + (size_t)v0 * d, H, (size_t)k * d * sizeof *H), memcpy(lb + (size_t)v0 * V, L, (size_t)k * V * sizeof *L);
    }
    check(ok && session_len(s) == n_prefix, "%s: candidates ran, the cache unchanged (%s)", arch, err.msg);
    double worst_h = 0, worst_l = 0;
    for (int v = 0; ok && v < V; v++) {
        int32_t t = v;
        if (session_forward(one, &t, 1, &L, &H, &err) || session_truncate(one, n_prefix, &err)) {
            ok = 0;
            break;
        }
        for (int i = 0; i < d; i++) worst_h = fmax(worst_h, fabs((double)H[i] - hb[(size_t)v * d + i]));
        for (int i = 0; i < V; i++) worst_l = fmax(worst_l, fabs((double)L[i] - lb[(size_t)v * V + i]));
    }
    check(ok && worst_h <= 1e-4 && worst_l <= 1e-4,
          "%s (prefix %d): batched candidates == one at a time: max |diff| hidden %.2g, logits %.2g", arch, n_prefix,
          worst_h, worst_l);
    /* judge_candidate_decisions: the same states, and decisions of the head on them */
    Verifier judge = {.d = d, .w = calloc((size_t)d, sizeof(float)), .b = 0, .lambda = 0.5, .source = VS_TARGET};
    for (int i = 0; i < d; i++) judge.w[i] = (float)((i % 5) - 2) * 0.3f;
    double *j = malloc((size_t)V * sizeof *j);
    float *hj = malloc((size_t)V * d * sizeof *hj);
    double worst_j = 0;
    int agree = 1;
    if (ok && j && hj && !judge_candidate_decisions(m, &judge, 0.5, prefix, n_prefix, j, hj, &err)) {
        for (size_t i = 0; i < (size_t)V * d; i++) worst_j = fmax(worst_j, fabs((double)hj[i] - hb[i]));
        for (int v = 0; v < V; v++) agree &= j[v] == verifier_accepts(verifier_score(&judge, hj + (size_t)v * d), 0.5);
    } else {
        agree = 0;
    }
    check(agree && worst_j <= 1e-4, "%s: judge_candidate_decisions' states == candidates (%.2g), decisions by the head",
          arch, worst_j);
    free(judge.w), free(j), free(hj), free(hb), free(lb);
    session_free(s), session_free(one);
    model_free(m);
}

/* ------------------------------------------------------------------ fixture for the decode tests */

static void test_law(Fixture *f, int gamma, uint64_t seed) {
    SpErr err = {{0}};
    double j[V_TINY], law[V_TINY], bad[V_TINY], flipped[V_TINY];
    long counts[V_TINY];
    if (judge_candidate_decisions(f->target, &f->judge, 0.5, f->prefix, f->n_prefix, j, NULL, &err)) {
        check(0, "judge decisions: %s", err.msg);
        return;
    }
    judge_next_token_law(f->p, f->q, j, V_TINY, law);
    double sum = 0, dtv_p = 0, n_keep = 0;
    for (int v = 0; v < V_TINY; v++) {
        sum += law[v], dtv_p += fabs(law[v] - f->p[v]) / 2, n_keep += j[v];
        bad[v] = f->p[v];
        flipped[v] = 1 - j[v];
    }
    double law_flip[V_TINY];
    judge_next_token_law(f->p, f->q, flipped, V_TINY, law_flip);
    check(fabs(sum - 1) < 1e-6 && dtv_p > 0.02, "judge law sums to 1 (%.9f), differs from p (d_TV %.4f, judge keeps %g of %d)",
          sum, dtv_p, n_keep, V_TINY);
    DecodeConfig cfg;
    decode_config_default(&cfg);
    cfg.method = DM_JUDGE;
    cfg.gamma = gamma;
    cfg.tau_judge = 0.5;
    if (first_token_hist(f, &cfg, seed, counts)) {
        check(0, "judge runs");
        return;
    }
    double pv = chisq_pvalue(counts, law, V_TINY, N_DRAWS), pv_bad = chisq_pvalue(counts, bad, V_TINY, N_DRAWS),
           pv_flip = chisq_pvalue(counts, law_flip, V_TINY, N_DRAWS);
    check(pv > 0.001, "judge (gamma %d, T %g, top-k %d) first token ~ judge_next_token_law: chi-square p = %.4g", gamma,
          (double)f->sp.temperature, f->sp.top_k, pv);
    check(pv_bad < 1e-6, "negative control: the same draws against p (j = 0) rejected: p = %.3g", pv_bad);
    check(pv_flip < 1e-6, "negative control: the same draws against the law with j flipped rejected: p = %.3g", pv_flip);
}

/* tau_judge > 1: judge == sd token for token under the same seed */
static void test_lossless(Fixture *f, int with_head) {
    SpErr err = {{0}};
    if (decoder_set_judge(f->dec, with_head ? &f->judge : NULL, &err)) {
        check(0, "set judge: %s", err.msg);
        return;
    }
    DecodeConfig sd, judge;
    decode_config_default(&sd);
    sd.method = DM_SD;
    sd.gamma = 4;
    sd.max_new = 40;
    sd.sampling = (SamplerParams){1.0f, 0, 1.0f};
    judge = sd;
    judge.method = DM_JUDGE;
    judge.tau_judge = 1.5;
    int same = 1, judged = 0;
    long tokens = 0;
    for (int k = 0; k < 20 && same; k++) {
        int32_t prompt[3] = {(int32_t)(k * 7 % V_TINY), (int32_t)(k * 13 % V_TINY), 5};
        DecodeOutput a, b;
        gsl_rng *ra = sampler_rng_new(900 + k), *rb = sampler_rng_new(900 + k);
        int rc = decoder_run(f->dec, &sd, prompt, 3, ra, &a, &err) || decoder_run(f->dec, &judge, prompt, 3, rb, &b, &err);
        /* the same tokens, rounds, and the generators left in the same state (the same draws consumed) */
        same = !rc && a.n_tokens == b.n_tokens && !memcmp(a.tokens, b.tokens, (size_t)a.n_tokens * sizeof *a.tokens) &&
               a.stats.rounds == b.stats.rounds && gsl_rng_get(ra) == gsl_rng_get(rb);
        gsl_rng_free(ra), gsl_rng_free(rb);
        if (rc) {
            check(0, "lossless runs: %s", err.msg);
            return;
        }
        for (int i = 0; i < b.n_events; i++) judged += b.events[i].decision == 0;
        tokens += a.n_tokens;
        decode_output_free(&a), decode_output_free(&b);
    }
    check(same && (with_head ? judged > 0 : judged == 0),
          "tau_judge 1.5 %s: judge == sd token for token (%ld tokens, %d judge rejections)",
          with_head ? "with a head" : "without a head", tokens, judged);
    decoder_set_judge(f->dec, &f->judge, &err);
}

/* The row: each event's score is the head on the target's state after reading the drafted token. */
static void test_rows(Fixture *f) {
    SpErr err = {{0}};
    DecodeConfig cfg;
    decode_config_default(&cfg);
    cfg.method = DM_JUDGE;
    cfg.gamma = 4;
    cfg.max_new = 50;
    cfg.tau_judge = 0.5;
    cfg.judge_rho = 0.3;
    int32_t prompt[3] = {3, 9, 27};
    gsl_rng *r = sampler_rng_new(77);
    DecodeOutput o;
    if (decoder_run(f->dec, &cfg, prompt, 3, r, &o, &err)) {
        gsl_rng_free(r);
        check(0, "rows run: %s", err.msg);
        return;
    }
    gsl_rng_free(r);
    Session *s = session_new(f->target, 64, 64, &err);
    int32_t seq[96];
    memcpy(seq, prompt, sizeof prompt);
    int n = 3, checked = 0, score_ok = 1, label_ok = 1, judge_kept = 0;
    int32_t work[V_TINY];
    float p[V_TINY];
    for (int k = 0; k < o.n_events; k++) {
        const TokenEvent *e = &o.events[k];
        if (e->draft_token >= 0) {
            const float *L, *H;
            seq[n] = e->draft_token; /* prefix seq[0..n) then the drafted token at position n */
            session_truncate(s, 0, &err);
            session_forward(s, seq, n + 1, &L, &H, &err);
            sampler_probs(&cfg.sampling, L + (size_t)(n - 1) * V_TINY, V_TINY, p, work, &err);
            float want = (float)verifier_score(&f->judge, H + (size_t)n * f->judge.d);
            score_ok &= fabs(want - e->score) < 1e-4 && e->decision == verifier_accepts(e->score, cfg.tau_judge);
            label_ok &= e->label == judge_label_acceptable(p[e->draft_token], p[sampler_argmax(p, V_TINY)], cfg.judge_rho);
            judge_kept += e->kind == EV_VERIFIER_ACCEPT;
            checked++;
        }
        seq[n++] = o.tokens[k];
    }
    check(checked > 10 && score_ok && label_ok && judge_kept > 0,
          "judge rows: %d drafted events, score = head(target state after reading x) and label = p(x) >= rho max p; "
          "%d kept by the judge alone",
          checked, judge_kept);
    session_free(s);
    decode_output_free(&o);
}

/* ------------------------------------------------------------------ training */

static int planted_file(const char *path, int d, int n, const float *w_true, SpErr *err) {
    gsl_rng *r = sampler_rng_new(5);
    float *h = malloc((size_t)n * d * sizeof *h), *q = malloc((size_t)n * sizeof *q), *p = malloc((size_t)n * sizeof *p);
    int8_t *lab = malloc((size_t)n);
    int32_t *tok = malloc((size_t)n * sizeof *tok), *pos = malloc((size_t)n * sizeof *pos), *pr = malloc((size_t)n * sizeof *pr);
    for (int i = 0; i < n; i++) {
        double z = 0.2;
        for (int k = 0; k < d; k++) {
            h[(size_t)i * d + k] = (float)gsl_ran_gaussian(r, 1.0);
            z += w_true[k] * h[(size_t)i * d + k];
        }
        lab[i] = gsl_rng_uniform(r) < 1 / (1 + exp(-4 * z)); /* a noisy planted linear rule */
        q[i] = p[i] = 0.5f, tok[i] = i % V_TINY, pos[i] = 3, pr[i] = i / 20;
    }
    H5ColSpec cols[] = {{"hidden", H5C_F32, d, NULL, NULL}, {"q", H5C_F32, 1, NULL, NULL},
                        {"p", H5C_F32, 1, NULL, NULL},      {"label", H5C_I8, 1, NULL, NULL},
                        {"token", H5C_I32, 1, NULL, NULL},  {"pos", H5C_I32, 1, NULL, NULL},
                        {"prompt_index", H5C_I32, 1, NULL, NULL}};
    const void *data[] = {h, q, p, lab, tok, pos, pr};
    H5Table t;
    int rc = h5t_create(&t, path, cols, 7, 512, err) || h5t_append(&t, n, data, err) ||
             h5t_attr_str(&t, "format", "sprinter-collect", err) || h5t_attr_f64(&t, "lambda", 1.0, err) ||
             h5t_attr_str(&t, "draft_sha256", "synthetic", err) || h5t_attr_str(&t, "feature_source", "target", err) ||
             h5t_attr_f64(&t, "judge_rho", 0.4, err) || h5t_commit(&t, err);
    free(h), free(q), free(p), free(lab), free(tok), free(pos), free(pr);
    gsl_rng_free(r);
    return rc;
}

static void test_training(Fixture *f, const char *work) {
    SpErr err = {{0}};
    int d = model_config(f->target)->d_model;
    float *w = malloc((size_t)d * sizeof *w);
    for (int k = 0; k < d; k++) w[k] = k < 6 ? (k % 2 ? -0.6f : 0.6f) : 0.0f;
    char data[1024], out[1024];
    snprintf(data, sizeof data, "%s/planted-judge.h5", work);
    snprintf(out, sizeof out, "%s/planted-judge.safetensors", work);
    TrainSpec t;
    train_spec_default(&t);
    VerifierMetrics m;
    Verifier v = {0};
    int ok = !planted_file(data, d, 4000, w, &err) && !verifier_train(data, &t, out, &m, &err) &&
             !verifier_load(out, &v, &err);
    check(ok && m.val_auc > 0.95 && v.source == VS_TARGET && v.d == d && fabs(v.lambda - 0.4) < 1e-12,
          "planted judge rule recovered: val AUC %.4f, source %s, rho %g (%s)", m.val_auc,
          verifier_source_name(v.source), v.lambda, err.msg);
    /* the planted direction: cosine of w_hat with w_true */
    double dot = 0, na = 0, nb = 0;
    for (int k = 0; ok && k < d; k++) dot += v.w[k] * w[k], na += v.w[k] * v.w[k], nb += w[k] * w[k];
    check(ok && dot / sqrt(na * nb) > 0.9, "judge head direction ~ the planted one: cosine %.3f", dot / sqrt(na * nb));
    TrainSpec bad = t;
    bad.feature = VF_PREFIX;
    check(verifier_train(data, &bad, out, &m, &err) != 0 && strstr(err.msg, "feature must be token"),
          "judge data refuses the prefix feature: %s", err.msg);
    if (ok) {
        Decoder *dd = decoder_new(f->draft, f->target, &v, 64, &err);
        check(!dd && strstr(err.msg, "decoder_set_judge"), "decoder_new refuses a target-source head as the verifier: %s",
              err.msg);
        decoder_free(dd);
        check(decoder_set_judge(f->dec, &v, &err) == 0, "decoder_set_judge takes the trained head");
        Verifier wrong = v;
        wrong.d = d - 1;
        check(decoder_set_judge(f->dec, &wrong, &err) != 0 && strstr(err.msg, "hidden size"),
              "decoder_set_judge checks d: %s", err.msg);
        Verifier drafty = v;
        drafty.source = VS_DRAFT;
        check(decoder_set_judge(f->dec, &drafty, &err) != 0, "decoder_set_judge refuses a draft-source head: %s", err.msg);
        decoder_set_judge(f->dec, &f->judge, &err);
    }
    verifier_free(&v);
    free(w);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: test_judge WORKDIR\n");
        return 2;
    }
    SpErr err = {{0}};
    if (sp_mkdir_p(argv[1], &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    test_candidates(argv[1], "gpt2", 5);
    test_candidates(argv[1], "gpt-neo", 12); /* longer than the local window of 8 */
    test_candidates(argv[1], "llama", 5);

    char dd[1024], td[1024];
    snprintf(dd, sizeof dd, "%s/draft", argv[1]);
    snprintf(td, sizeof td, "%s/target", argv[1]);
    if (make_model("gpt2", dd, 32, 2, 0.2, 101) || make_model("gpt2", td, 48, 3, 0.2, 202)) return 1;
    Fixture f = {0};
    f.draft = model_load(dd, &err);
    f.target = model_load(td, &err);
    f.dec = f.draft && f.target ? decoder_new(f.draft, f.target, NULL, 64, &err) : NULL;
    if (!f.dec) {
        fprintf(stderr, "setup: %s\n", err.msg);
        return 1;
    }
    f.prefix[0] = 5, f.prefix[1] = 17, f.prefix[2] = 42;
    f.n_prefix = 3;
    /* a judge head on the target's d_model: a fixed direction, its bias set so that about half of the
     * candidates at the prefix are kept */
    int d = model_config(f.target)->d_model;
    f.judge = (Verifier){.d = d, .w = calloc((size_t)d, sizeof(float)), .b = 0, .lambda = 0.5, .source = VS_TARGET};
    for (int i = 0; i < d; i++) f.judge.w[i] = (float)sin(1.7 * i + 0.3);
    float *H = malloc((size_t)V_TINY * d * sizeof *H);
    double j[V_TINY], z[V_TINY];
    if (judge_candidate_decisions(f.target, &f.judge, 0.5, f.prefix, f.n_prefix, j, H, &err)) {
        fprintf(stderr, "setup: %s\n", err.msg);
        return 1;
    }
    for (int v = 0; v < V_TINY; v++) {
        z[v] = 0;
        for (int i = 0; i < d; i++) z[v] += f.judge.w[i] * H[(size_t)v * d + i];
    }
    double zs[V_TINY];
    memcpy(zs, z, sizeof zs);
    for (int a = 0; a < V_TINY; a++) /* median by insertion sort */
        for (int b = a; b > 0 && zs[b - 1] > zs[b]; b--) {
            double t = zs[b];
            zs[b] = zs[b - 1], zs[b - 1] = t;
        }
    f.judge.b = (float)(-(zs[V_TINY / 2 - 1] + zs[V_TINY / 2]) / 2);
    free(H);
    if (decoder_set_judge(f.dec, &f.judge, &err)) {
        fprintf(stderr, "setup: %s\n", err.msg);
        return 1;
    }
    DecodeConfig none;
    decode_config_default(&none);
    none.method = DM_JUDGE;
    decoder_set_judge(f.dec, NULL, &err);
    DecodeOutput o;
    gsl_rng *r = sampler_rng_new(1);
    check(decoder_run(f.dec, &none, f.prefix, f.n_prefix, r, &o, &err) != 0 && strstr(err.msg, "judge head"),
          "judge without a head at tau_judge <= 1 refused: %s", err.msg);
    gsl_rng_free(r);
    decoder_set_judge(f.dec, &f.judge, &err);

    f.sp = (SamplerParams){1.0f, 0, 1.0f};
    dists(&f);
    test_law(&f, 1, 11);
    test_law(&f, 3, 22);
    f.sp = (SamplerParams){0.8f, 30, 1.0f};
    dists(&f);
    test_law(&f, 3, 33);
    test_lossless(&f, 1);
    test_lossless(&f, 0);
    test_rows(&f);
    test_training(&f, argv[1]);

    decoder_free(f.dec);
    model_free(f.draft);
    model_free(f.target);
    free(f.judge.w);
    return check_summary("judge");
}
