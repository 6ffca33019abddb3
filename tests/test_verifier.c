/* test_verifier.c - verifier training and data collection against known answers.
 *  1. roc_auc equals the brute-force pair count (with ties) on random data.
 *  2. Logistic regression recovers a planted model: labels ~ Bernoulli(sigmoid(w*.h + b*)) on
 *     synthetic features; the fitted (w, b) is close to (w*, b*) and its validation AUC is close to
 *     the planted model's AUC on the same rows.
 *  3. A verifier file round-trips (weights, bias, lambda, metadata).
 *  4. collect on two random tiny models: every row's label equals [q <= lambda p], 0 < q <= 1,
 *     0 <= p <= 1, and hidden rows are not all zero.
 * usage: test_verifier WORKDIR TOKENIZER_FIXTURE_DIR */
#include <gsl/gsl_randist.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "h5util.h"
#include "jsonutil.h"
#include "presets.h"
#include "sampling.h"
#include "verifier.h"
#include "verifier_train.h"

#include "check.h"

static void test_auc(void) {
    gsl_rng *r = sampler_rng_new(1);
    enum { N = 400 };
    double s[N];
    int8_t y[N];
    for (int i = 0; i < N; i++) {
        s[i] = (double)gsl_rng_uniform_int(r, 50); /* many ties */
        y[i] = (int8_t)(gsl_rng_uniform(r) < 0.3 + s[i] / 100);
    }
    double num = 0, pos = 0, neg = 0;
    for (int i = 0; i < N; i++) {
        if (y[i]) pos++;
        else neg++;
        for (int j = 0; j < N; j++)
            if (y[i] == 1 && y[j] == 0) num += s[i] > s[j] ? 1.0 : s[i] == s[j] ? 0.5 : 0.0;
    }
    double brute = num / (pos * neg), fast = roc_auc(s, y, N);
    check_close(fast, brute, 1e-12, 0, "roc_auc == brute-force pair count");
    int8_t ones[3] = {1, 1, 1};
    check(isnan(roc_auc(s, ones, 3)), "roc_auc of a single class is NaN");
    gsl_rng_free(r);
}

/* Writes a collect-format file with planted labels; returns the planted model's AUC over all rows. */
static int write_planted(const char *path, int d, int64_t n, const double *w, double b, SpErr *err) {
    gsl_rng *r = sampler_rng_new(42);
    float *h = malloc((size_t)n * d * sizeof *h);
    float *q = malloc((size_t)n * sizeof *q), *p = malloc((size_t)n * sizeof *p);
    int8_t *lab = malloc((size_t)n);
    int32_t *tok = calloc((size_t)n, sizeof *tok), *pos = calloc((size_t)n, sizeof *pos), *pr = malloc((size_t)n * sizeof *pr);
    for (int64_t i = 0; i < n; i++) {
        double z = b;
        for (int j = 0; j < d; j++) {
            h[i * d + j] = (float)(gsl_ran_gaussian(r, 1.0 + j) + 0.5 * j); /* unequal scales and offsets */
            z += w[j] * h[i * d + j];
        }
        lab[i] = (int8_t)(gsl_rng_uniform(r) < 1.0 / (1.0 + exp(-z)));
        q[i] = 0.5f, p[i] = lab[i] ? 0.6f : 0.1f;
        pr[i] = (int32_t)(i / 40);
    }
    H5ColSpec cols[] = {{"hidden", H5C_F32, d, NULL, NULL}, {"q", H5C_F32, 1, NULL, NULL},
                        {"p", H5C_F32, 1, NULL, NULL},      {"label", H5C_I8, 1, NULL, NULL},
                        {"token", H5C_I32, 1, NULL, NULL},  {"pos", H5C_I32, 1, NULL, NULL},
                        {"prompt_index", H5C_I32, 1, NULL, NULL}};
    H5Table t;
    const void *data[] = {h, q, p, lab, tok, pos, pr};
    int rc = h5t_create(&t, path, cols, 7, 512, err) || h5t_append(&t, n, data, err) ||
             h5t_attr_str(&t, "format", "sprinter-collect", err) || h5t_attr_f64(&t, "lambda", 1.0, err) ||
             h5t_attr_str(&t, "draft_sha256", "synthetic", err) || h5t_commit(&t, err);
    free(h), free(q), free(p), free(lab), free(tok), free(pos), free(pr);
    gsl_rng_free(r);
    return rc;
}

static void test_planted(const char *work) {
    enum { D = 6 };
    const double w[D] = {1.2, -0.8, 0.5, 0.0, 0.3, -0.25}, b = 0.4;
    char path[1024], vpath[1024];
    snprintf(path, sizeof path, "%s/planted.h5", work);
    snprintf(vpath, sizeof vpath, "%s/planted.safetensors", work);
    SpErr err = {{0}};
    if (write_planted(path, D, 20000, w, b, &err)) {
        check(0, "write planted data: %s", err.msg);
        return;
    }
    TrainSpec t;
    train_spec_default(&t);
    t.l2 = 0;
    VerifierMetrics m;
    if (verifier_train(path, &t, vpath, &m, &err)) {
        check(0, "train on planted data: %s", err.msg);
        return;
    }
    Verifier v;
    if (verifier_load(vpath, &v, &err)) {
        check(0, "load trained verifier: %s", err.msg);
        return;
    }
    double maxerr = fabs(v.b - b);
    for (int j = 0; j < D; j++) maxerr = fmax(maxerr, fabs(v.w[j] - w[j]));
    check(maxerr < 0.12, "planted (w*, b*) recovered: max |coef - true| = %.4f (n_train %lld)", maxerr, (long long)m.n_train);
    check(m.n_train + m.n_val == 20000 && m.n_val > 3000 && m.n_val < 5000, "split by prompt: %lld train, %lld val",
          (long long)m.n_train, (long long)m.n_val);
    check(m.val_auc > 0.75 && m.val_auc <= 1, "validation AUC %.4f is well above chance", m.val_auc);
    check(v.lambda == 1.0, "lambda carried into the verifier (%g)", v.lambda);
    char buf[128];
    check(verifier_read_meta(vpath, "data_sha256", buf, sizeof buf, &err) == 0 && strlen(buf) == 64,
          "data hash recorded in metadata");
    /* l2 shrinks the weights */
    t.l2 = 1.0;
    VerifierMetrics m2;
    Verifier v2;
    int ok = verifier_train(path, &t, vpath, &m2, &err) == 0 && verifier_load(vpath, &v2, &err) == 0;
    double n1 = 0, n2 = 0;
    for (int j = 0; ok && j < D; j++) n1 += v.w[j] * v.w[j], n2 += v2.w[j] * v2.w[j];
    check(ok && n2 < 0.5 * n1, "L2 penalty shrinks |w|^2 (%.4f -> %.4f)", n1, n2);
    if (ok) verifier_free(&v2);
    /* the authors' recipe (Adam, 20 epochs, batches of 10, token-level 70/30 split, best test accuracy):
     * learns the planted direction, splits by token (the test rows are 30% of all rows, not of the
     * prompts), and is repeatable with the same seed */
    t = (TrainSpec){0};
    train_spec_default(&t);
    t.recipe = PROTOCOL_PAPER_CODE;
    t.val_fraction = 0.3;
    VerifierMetrics m3, m4;
    Verifier v3 = {0}, v4 = {0};
    ok = verifier_train(path, &t, vpath, &m3, &err) == 0 && verifier_load(vpath, &v3, &err) == 0 &&
         verifier_train(path, &t, vpath, &m4, &err) == 0 && verifier_load(vpath, &v4, &err) == 0;
    double cosine = 0, nw = 0, nt = 0;
    for (int j = 0; ok && j < D; j++) cosine += v3.w[j] * w[j], nw += v3.w[j] * v3.w[j], nt += w[j] * w[j];
    cosine = ok && nw > 0 ? cosine / sqrt(nw * nt) : 0;
    check(ok && m3.n_val == 6000 && m3.n_train == 14000, "paper-code recipe: token-level 70/30 split (%lld / %lld): %s",
          (long long)m3.n_train, (long long)m3.n_val, err.msg);
    check(ok && cosine > 0.95 && m3.val_auc > m.val_auc - 0.03, "paper-code recipe learns the planted direction: "
          "cos(w, w*) = %.4f, test AUC %.4f (sound recipe %.4f)", cosine, m3.val_auc, m.val_auc);
    int same = ok && v3.b == v4.b;
    for (int j = 0; same && j < D; j++) same &= v3.w[j] == v4.w[j];
    check(same, "paper-code recipe: the same seed gives the same verifier");
    char rec[32];
    check(ok && verifier_read_meta(vpath, "recipe", rec, sizeof rec, &err) == 0 && !strcmp(rec, "paper-code"),
          "the recipe is recorded in the verifier's metadata");
    if (ok) verifier_free(&v3), verifier_free(&v4);
    verifier_free(&v);
}

/* The collect file's /prefix_ids (version 3) are the contexts the draft saw: consecutive rows of a
 * prompt extend each other by one token; a fresh forward of a row's prefix gives its /hidden_prefix;
 * and the trainer's padded-batch features (one prefill per prompt, probes) equal a fresh prefill of
 * the row's prefix followed by session_probe of the draft's eos at position L - 1. */
static void test_prefixes(const char *path, const char *draft_dir) {
    SpErr err = {{0}};
    hid_t h = h5_open_read(path, &err);
    int32_t *pos = NULL, *pre = NULL, *pr = NULL;
    float *hp = NULL;
    int64_t n1 = 0, n2 = 0, n3 = 0, n4 = 0;
    int w1, W = 0, w3, d = 0;
    int ok = h >= 0 && h5_read_column(h, path, "pos", H5C_I32, (void **)&pos, &n1, &w1, &err) == 0 &&
             h5_read_column(h, path, "prefix_ids", H5C_I32, (void **)&pre, &n2, &W, &err) == 0 &&
             h5_read_column(h, path, "prompt_index", H5C_I32, (void **)&pr, &n3, &w3, &err) == 0 &&
             h5_read_column(h, path, "hidden_prefix", H5C_F32, (void **)&hp, &n4, &d, &err) == 0;
    if (h >= 0) H5Fclose(h);
    Model *dm = ok ? model_load(draft_dir, &err) : NULL;
    Session *s = dm ? session_new(dm, W + 1, W + 1, &err) : NULL;
    check(ok && s && n1 == n2 && n2 == n3 && n3 == n4, "collect v3: pos, prefix_ids [%lld, %d], prompt_index: %s",
          (long long)n2, W, ok && s ? "read" : err.msg);
    if (!(ok && s)) goto done;
    int bad_chain = 0;
    for (int64_t r = 1; r < n1; r++)
        if (pr[r] == pr[r - 1])
            bad_chain += pos[r] != pos[r - 1] + 1 || memcmp(pre + (size_t)r * W, pre + (size_t)(r - 1) * W,
                                                            (size_t)pos[r - 1] * sizeof *pre) != 0 ||
                         (pos[r] < W && pre[(size_t)r * W + pos[r]] != -1);
    check(bad_chain == 0, "prefix_ids: each row extends the previous row of its prompt by one token, -1 after (%d bad)",
          bad_chain);
    double max_h = 0;
    const int64_t some[] = {0, 7, 14, 15, 33, n1 - 1};
    for (size_t k = 0; k < sizeof some / sizeof *some; k++) {
        const float *H;
        int64_t r = some[k];
        if (session_truncate(s, 0, &err) || session_prefill(s, pre + (size_t)r * W, pos[r], NULL, &H, &err)) break;
        for (int j = 0; j < d; j++) max_h = fmax(max_h, fabs((double)H[j] - hp[(size_t)r * d + j]));
    }
    check(max_h < 1e-4, "a fresh forward of prefix_ids[r] gives hidden_prefix[r] (max |diff| %.2e over 6 rows)", max_h);
    /* padded features: rows of one prompt (longest first and not), several L, another prompt */
    int64_t rows[] = {16, 18, 18, 20, 3, 29};
    int32_t lens[6];
    for (int k = 0; k < 6; k++) lens[k] = pos[rows[k]] + 1 + (k * 5) % (W - pos[rows[k]] > 0 ? W - pos[rows[k]] : 1);
    float *got = malloc(6 * (size_t)d * sizeof *got);
    int rc = got ? collect_padded_features(path, rows, lens, 6, got, &err) : -1;
    double max_p = 0, max_vs_plain = 0;
    int32_t eos = model_config(dm)->eos_id;
    for (int k = 0; rc == 0 && k < 6; k++) {
        const float *H;
        int64_t r = rows[k];
        if (session_truncate(s, 0, &err) || session_prefill(s, pre + (size_t)r * W, pos[r], NULL, NULL, &err) ||
            session_probe(s, eos, lens[k] - 1, &H, &err)) {
            rc = -1;
            break;
        }
        for (int j = 0; j < d; j++) {
            max_p = fmax(max_p, fabs((double)H[j] - got[(size_t)k * d + j]));
            max_vs_plain = fmax(max_vs_plain, fabs((double)got[(size_t)k * d + j] - hp[(size_t)r * d + j]));
        }
    }
    check(rc == 0 && max_p < 1e-5 && max_vs_plain > 1e-3,
          "padded-batch features as the trainer computes them == fresh prefill + probe of eos at L - 1 (max |diff| "
          "%.2e over 6 (row, L)); they differ from the row's own state (%.2e)%s%s", max_p, max_vs_plain, rc ? ": " : "",
          rc ? err.msg : "");
    free(got);
    /* training: padded features change the authors' verifier; the option needs their recipe and feature */
    TrainSpec t;
    train_spec_default(&t);
    t.recipe = PROTOCOL_PAPER_CODE, t.feature = VF_PREFIX, t.val_fraction = 0.3;
    char v0[4096], v1[4096];
    snprintf(v0, sizeof v0, "%s.plain.safetensors", path);
    snprintf(v1, sizeof v1, "%s.padded.safetensors", path);
    VerifierMetrics m0, m1;
    int ok0 = verifier_train(path, &t, v0, &m0, &err) == 0;
    t.padded_batches = 1;
    int ok1 = verifier_train(path, &t, v1, &m1, &err) == 0;
    Verifier a = {0}, b = {0};
    double dw = 0;
    if (ok0 && ok1 && verifier_load(v0, &a, &err) == 0 && verifier_load(v1, &b, &err) == 0) {
        for (int j = 0; j < a.d; j++) dw = fmax(dw, fabs((double)a.w[j] - b.w[j]));
        verifier_free(&a), verifier_free(&b);
    }
    check(ok0 && ok1 && dw > 1e-6, "paper-code recipe with padded batches trains, and to other weights (max |dw| %.2e)%s%s",
          dw, ok0 && ok1 ? "" : ": ", ok0 && ok1 ? "" : err.msg);
    t.recipe = PROTOCOL_SOUND;
    int refused = verifier_train(path, &t, v1, &m1, &err) != 0 && strstr(err.msg, "paper-code");
    check(refused, "padded batches with the sound recipe are refused: %s", err.msg);
done:
    session_free(s);
    model_free(dm);
    free(pos), free(pre), free(pr), free(hp);
}

static void test_collect(const char *work, const char *tokdir) {
    char dd[1024], td[1024], data[1024], out[1024];
    snprintf(dd, sizeof dd, "%s/draft", work);
    snprintf(td, sizeof td, "%s/target", work);
    snprintf(data, sizeof data, "%s/prompts.jsonl", work);
    snprintf(out, sizeof out, "%s/collect.h5", work);
    SpErr err = {{0}};
    const char *dirs[2] = {dd, td};
    for (int i = 0; i < 2; i++) {
        cJSON *cfg = preset_config("gpt2", "tiny", &err);
        cJSON_ReplaceItemInObject(cfg, "vocab_size", cJSON_CreateNumber(269));
        cJSON_ReplaceItemInObject(cfg, "bos_token_id", cJSON_CreateNumber(268));
        cJSON_ReplaceItemInObject(cfg, "eos_token_id", cJSON_CreateNumber(268));
        cJSON_ReplaceItemInObject(cfg, "initializer_range", cJSON_CreateNumber(0.2));
        int rc = init_random_model(cfg, "config", DT_F32, 7 + (uint64_t)i, dirs[i], &err);
        cJSON_Delete(cfg);
        char cmd[4096];
        snprintf(cmd, sizeof cmd, "cp %s/vocab.json %s/merges.txt %s/", tokdir, tokdir, dirs[i]);
        if (rc || system(cmd) != 0) {
            check(0, "make tiny model: %s", err.msg);
            return;
        }
    }
    FILE *f = fopen(data, "w");
    for (int i = 0; i < 12; i++) fprintf(f, "{\"id\": \"%d\", \"prompt\": \"hello world number %d is here\"}\n", i, i);
    fclose(f);
    CollectSpec s = {dd, td, data, NULL, 0, 15, 1.5, {1.0f, 0, 1.0f}, 3, PROTOCOL_SOUND, VS_DRAFT, 0, 1};
    CollectSummary sum;
    if (collect_run(&s, out, &sum, &err)) {
        check(0, "collect: %s", err.msg);
        return;
    }
    check(sum.n_prompts == 12 && sum.n_tokens == 12 * 15, "collect: %d prompts, %lld rows (1 per drafted token)",
          sum.n_prompts, (long long)sum.n_tokens);
    hid_t h = h5_open_read(out, &err);
    float *q = NULL, *p = NULL, *hid = NULL;
    int8_t *lab = NULL;
    int64_t n1, n2, n3, n4;
    int w1, w2, w3, d;
    int ok = h >= 0 && h5_read_column(h, out, "q", H5C_F32, (void **)&q, &n1, &w1, &err) == 0 &&
             h5_read_column(h, out, "p", H5C_F32, (void **)&p, &n2, &w2, &err) == 0 &&
             h5_read_column(h, out, "label", H5C_I8, (void **)&lab, &n3, &w3, &err) == 0 &&
             h5_read_column(h, out, "hidden", H5C_F32, (void **)&hid, &n4, &d, &err) == 0;
    int bad = !ok;
    double hsum = 0;
    for (int64_t i = 0; ok && i < n1; i++) {
        bad += lab[i] != (q[i] <= 1.5 * p[i]);
        bad += !(q[i] > 0 && q[i] <= 1 && p[i] >= 0 && p[i] <= 1);
    }
    for (int64_t i = 0; ok && i < n4 * d; i++) hsum += fabs(hid[i]);
    check(ok && bad == 0 && n1 == sum.n_tokens && hsum > 0, "collect rows: label == [q <= lambda p], q, p in range (%d bad)",
          bad);
    if (h >= 0) H5Fclose(h);
    free(q), free(p), free(lab), free(hid);
    test_prefixes(out, dd);
    /* batched collection (groups of 5, 5 and 2 prompts, lock step): the same file, dataset for
     * dataset and attribute for attribute (h5diff exits 1 on any difference) */
    for (int rule = 0; rule < 2; rule++) {
        CollectSpec sb = s;
        char one[1024], many[1024], cmd[4096];
        snprintf(one, sizeof one, "%s/collect-r%d-b1.h5", work, rule);
        snprintf(many, sizeof many, "%s/collect-r%d-b5.h5", work, rule);
        sb.label_rule = rule ? PROTOCOL_PAPER_CODE : PROTOCOL_SOUND;
        sb.sampling.temperature = rule ? 0.0f : 1.0f;
        CollectSummary s1, s5;
        sb.batch = 1;
        int ok1 = collect_run(&sb, one, &s1, &err) == 0;
        sb.batch = 5;
        int ok5 = ok1 && collect_run(&sb, many, &s5, &err) == 0;
        snprintf(cmd, sizeof cmd, "h5diff -c '%s' '%s' > /dev/null", one, many);
        check(ok5 && s1.n_tokens == s5.n_tokens && s1.n_acceptable == s5.n_acceptable && system(cmd) == 0,
              "collect (%s) at batch 5 writes the file of batch 1 (%lld rows)%s", rule ? "paper-code" : "sound",
              ok5 ? (long long)s5.n_tokens : -1LL, ok5 ? "" : err.msg);
    }
    /* a verifier trains on it and the cache finds it again without recomputing */
    TrainSpec t;
    train_spec_default(&t);
    char cache[1024], v1[4096], v2[4096];
    snprintf(cache, sizeof cache, "%s/cache", work);
    VerifierMetrics m;
    ok = verifier_ensure(&s, &t, cache, v1, sizeof v1, &m, &err) == 0;
    check(ok, "verifier_ensure trains a verifier (%s)", ok ? v1 : err.msg);
    struct stat st1, st2;
    ok = ok && stat(v1, &st1) == 0 && verifier_ensure(&s, &t, cache, v2, sizeof v2, &m, &err) == 0 && stat(v2, &st2) == 0;
    check(ok && !strcmp(v1, v2) && st1.st_mtim.tv_nsec == st2.st_mtim.tv_nsec && st1.st_mtime == st2.st_mtime,
          "verifier_ensure reuses the cached verifier");
    s.lambda = 2.0;
    ok = verifier_ensure(&s, &t, cache, v2, sizeof v2, &m, &err) == 0;
    check(ok && strcmp(v1, v2) != 0, "another lambda gives another cache entry");
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: test_verifier WORKDIR TOKENIZER_FIXTURE_DIR\n");
        return 2;
    }
    SpErr merr;
    if (sp_mkdir_p(argv[1], &merr)) {
        fprintf(stderr, "%s\n", merr.msg);
        return 1;
    }
    test_auc();
    test_planted(argv[1]);
    test_collect(argv[1], argv[2]);
    return check_summary("verifier");
}
