/* test_dtv.c - `sprinter dtv` (experiments/dtv.h) against the real decoder and against Theorem 3.1.
 *
 * Fixture: two random tiny GPT-2 models (vocab 269, peaky init so p and q differ clearly) carrying
 * the GPT-2 BPE tokenizer fixture, a JSONL dataset, and a verifier learned on them (collect_run +
 * verifier_train at lambda 1). Checks:
 *  1. Decisions: a(v) from the cached prefix + one single-token forward equals the decision from a
 *     full forward of prefix + v (scores within 1e-5, no decision differs).
 *  2. Exact law vs decoder_run (chi-square, computed here, not by dtv.c): 20,000 first tokens of the
 *     sprinter method at one prefix are distributed as sprinter_next_token_law(p, q, a) with dtv's
 *     a(v) (pass: p-value > 0.001); negative controls: the same draws against p (a = 0) and against
 *     the law with every decision flipped must be rejected (p-value < 0.001).
 *  3. dtv_run at lambda 1 (8 prefixes, M = 3000 draws each): every prefix's chi-square p-value >
 *     0.001 / 8 (Bonferroni); the unbiased estimate within 4.5 standard errors of the exact d_TV and
 *     the empirical accept rate within 4.5 SE of sum_v q a (normal approximation); the identity
 *     d_TV(p, p_S) = eta_excess d_TV(p, q) to 1e-9; the oracle at lambda = 1: d_TV(p, p_oracle) ==
 *     eta_FP d_TV(p, q) to 1e-6 (Theorem 3.1 exact); the naive histogram estimate is biased upward
 *     and the bootstrap correction reduces its error.
 *  4. dtv_run at lambda 2 (temperature 0.8, top-k 50) with an oracle of rates 0.2 / 0.9: Thm 3.1
 *     still exact at lambda 1, but at lambda 2 the oracle's d_TV exceeds eta_FP d_TV(p, q) (by how
 *     much is printed; required: > 1e-3 at some prefix, never below it); same seed -> same file.
 *  5. CLI: --help, missing options (exit 2), a verifier of the wrong width (exit 1, one line), a
 *     small run that writes the file; --method: typical without a verifier writes a file, judge
 *     without --judge, sd, typical with --verifier and a bad --fsd-divergence exit 2.
 *  6. The other methods (dtv --method; a random judge head on the target's state, tau_judge 0.5):
 *     for typical, fsd (TV, threshold between the prefixes' d_TV(p, q), so some prefixes accept
 *     outright), optimal-lossy and judge, dtv_run with M draws per prefix: the law is not trivial
 *     (mean d_TV(p, law) > 0.01), every prefix's chi-square p-value > 0.001 / N and Fisher's
 *     combination of them > 0.001 (the decoder implements the law), the kept share within 4.5 SE of
 *     accept_mass, the SPRINTER columns NaN, attributes method and params the sweep label; negative
 *     controls (draws of another method against the law: fsd vs typical, typical vs fsd,
 *     optimal-lossy and judge vs sd) give Fisher p < 0.001; lossless limits (typical eps 1 alpha
 *     1e9, fsd threshold 0, lossy_kl 0, tau_judge 1.5 without a head): d_TV(p, law) < 1e-6 where
 *     d_TV(p, q) is large. dtvread: method and params of a version-2 file, and of the sprinter file
 *     turned into a version-1 file (attributes removed): "sprinter" and the version-2 file's params.
 * With the fixed seeds the outcome is deterministic; on fresh seeds the statistical checks would
 * fail with probability < 1% together (0.001 per chi-square check, 0.001 for each Bonferroni family,
 * ~1e-5 per z check). Prints "dtv: N passed, M failed".
 * usage: test_dtv WORKDIR TOKENIZER_FIXTURE_DIR SPRINTER */
#include <cblas.h>
#include <gsl/gsl_cdf.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dataset.h"
#include "decoding.h"
#include "dtv.h"
#include "dtvread.h"
#include "h5util.h"
#include "jsonutil.h"
#include "presets.h"
#include "tokenizer.h"
#include "verifier_train.h"

#include "check.h"

enum { V = 269, N_DRAWS = 12000 };

typedef struct Fix {
    char work[1024], draft[1024], target[1024], data[1024], ver_path[1024], judge_path[1024];
    Model *dm, *tm;
    Verifier ver;
    double tau; /* the q-weighted median verifier score at prompt 20: accept mass ~ 1/2 there */
    Tokenizer *tok;
} Fix;

static int make_model(const char *dir, const char *tokdir, int d, int layers, uint64_t seed) {
    SpErr err = {{0}};
    cJSON *cfg = preset_config("gpt2", "tiny", &err);
    cJSON_ReplaceItemInObject(cfg, "vocab_size", cJSON_CreateNumber(V));
    cJSON_ReplaceItemInObject(cfg, "n_embd", cJSON_CreateNumber(d));
    cJSON_ReplaceItemInObject(cfg, "n_layer", cJSON_CreateNumber(layers));
    cJSON_ReplaceItemInObject(cfg, "initializer_range", cJSON_CreateNumber(0.2));
    cJSON_ReplaceItemInObject(cfg, "bos_token_id", cJSON_CreateNumber(V - 1));
    cJSON_ReplaceItemInObject(cfg, "eos_token_id", cJSON_CreateNumber(V - 1));
    int rc = init_random_model(cfg, "config", DT_F32, seed, dir, &err);
    cJSON_Delete(cfg);
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "cp '%s/vocab.json' '%s/merges.txt' '%s/'", tokdir, tokdir, dir);
    if (rc || system(cmd) != 0) {
        fprintf(stderr, "make model %s: %s\n", dir, err.msg);
        return -1;
    }
    return 0;
}

static int setup(Fix *f, const char *work, const char *tokdir) {
    SpErr err = {{0}};
    snprintf(f->work, sizeof f->work, "%s", work);
    snprintf(f->draft, sizeof f->draft, "%s/draft", work);
    snprintf(f->target, sizeof f->target, "%s/target", work);
    snprintf(f->data, sizeof f->data, "%s/data.jsonl", work);
    snprintf(f->ver_path, sizeof f->ver_path, "%s/verifier.safetensors", work);
    if (sp_mkdir_p(work, &err) || make_model(f->draft, tokdir, 32, 2, 101) || make_model(f->target, tokdir, 48, 3, 202))
        return -1;
    static const char *const words[] = {"hello", "the", "test", "sprinter", "draft", "target", "token", "verifier", "all", "well"};
    FILE *fp = fopen(f->data, "w");
    if (!fp) return -1;
    for (int i = 0; i < 40; i++) {
        fprintf(fp, "{\"id\": \"ex%02d\", \"prompt\": \"", i);
        for (int k = 0; k < 2 + i % 5; k++) fprintf(fp, "%s%s", k ? " " : "", words[(i * 7 + k * 3) % 10]);
        fprintf(fp, "\", \"reference\": \"\"}\n");
    }
    fclose(fp);
    /* verifier on the first 20 prompts; the checks use prompts 20.. */
    char collect[1100];
    snprintf(collect, sizeof collect, "%s/collect.h5", work);
    CollectSpec cs = {f->draft, f->target, f->data, NULL, 20, 24, 1.0, {1.0f, 0, 1.0f}, 3, PROTOCOL_SOUND, VS_DRAFT, 0, 1};
    CollectSummary sum;
    TrainSpec ts;
    train_spec_default(&ts);
    VerifierMetrics m;
    if (collect_run(&cs, collect, &sum, &err) || verifier_train(collect, &ts, f->ver_path, &m, &err) ||
        verifier_load(f->ver_path, &f->ver, &err)) {
        fprintf(stderr, "verifier: %s\n", err.msg);
        return -1;
    }
    printf("learned verifier on %lld rows: validation AUC %.3f, eta_TP %.3f, eta_FP %.3f at tau 0.5\n",
           (long long)sum.n_tokens, m.val_auc, m.eta_tp, m.eta_fp);
    if (!(f->dm = model_load(f->draft, &err)) || !(f->tm = model_load(f->target, &err)) ||
        !(f->tok = tokenizer_load_dir(f->target, &err))) {
        fprintf(stderr, "load: %s\n", err.msg);
        return -1;
    }
    return 0;
}

/* Chi-square p-value (bins merged in token order until each expects >= 5); written here so the
 * check does not rest on dtv_chisq_pvalue. */
static double chisq(const long *counts, const double *law, long n) {
    double stat = 0, e = 0;
    long o = 0;
    int df = -1;
    for (int v = 0; v < V; v++) {
        e += law[v] * (double)n;
        o += counts[v];
        if (e >= 5 || v == V - 1) {
            if (e > 0) stat += ((double)o - e) * ((double)o - e) / e, df++;
            else if (o > 0) return 0;
            e = 0, o = 0;
        }
    }
    return df < 1 ? 1 : gsl_cdf_chisq_Q(stat, df);
}

/* ------------------------------------------------------------------ 1 + 2 */

typedef struct Prefix {
    int32_t ids[64];
    int n;
    float p[V], q[V];
    double a[V], law[V];
    float score[V];
    float h_last[256]; /* the draft's state at the prefix's last position */
    DtvExact e;
} Prefix;

static int prefix_at(Fix *f, Session *sd, Session *st, int prompt_index, Prefix *x, SpErr *err) {
    Dataset ds;
    if (dataset_load(f->data, NULL, 0, &ds, err)) return -1;
    int32_t *ids;
    size_t n;
    int rc = tokenizer_encode(f->tok, ds.ex[prompt_index].prompt, strlen(ds.ex[prompt_index].prompt), 0, &ids, &n, err);
    dataset_free(&ds);
    if (rc) return -1;
    x->n = (int)(n < 40 ? n : 40);
    memcpy(x->ids, ids, (size_t)x->n * sizeof *ids);
    free(ids);
    int32_t work[V];
    SamplerParams sp = {1.0f, 0, 1.0f};
    if (dtv_next_probs(st, &sp, x->ids, x->n, V, x->p, NULL, 0, work, err) ||
        dtv_next_probs(sd, &sp, x->ids, x->n, V, x->q, x->h_last, f->ver.d, work, err) ||
        dtv_verifier_decisions(sd, &f->ver, x->h_last, f->tau, V, x->a, x->score, err))
        return -1;
    dtv_exact(x->p, x->q, x->a, V, 1.0, x->law, &x->e);
    return 0;
}

/* The learned verifier of these random models is weak, so tau comes from its scores: the q-weighted
 * median at prompt 20, which makes the decisions at the prefixes non-trivial. */
static int choose_tau(Fix *f, Session *sd, Session *st, SpErr *err) {
    static Prefix x;
    f->tau = 0.5;
    if (prefix_at(f, sd, st, 20, &x, err)) return -1;
    double mass = 0;
    for (int k = 0; k < V && mass < 0.5; k++) { /* highest score first */
        int best = -1;
        for (int v = 0; v < V; v++)
            if (x.score[v] >= -1 && (best < 0 || x.score[v] > x.score[best])) best = v;
        mass += x.q[best];
        f->tau = x.score[best];
        x.score[best] = -2; /* taken */
    }
    /* halfway to the next lower score, so no score of this prefix sits within rounding of tau: the
     * incremental and the full forward sum in different orders (last-bit differences), and a score
     * equal to tau would decide by that bit rather than by the verifier */
    float next = -1;
    for (int v = 0; v < V; v++)
        if (x.score[v] >= -1 && x.score[v] < f->tau && x.score[v] > next) next = x.score[v];
    if (next >= 0) f->tau = 0.5 * (f->tau + next);
    printf("tau = %.6f (q-weighted median verifier score at prompt 20, moved halfway to the next score)\n", f->tau);
    return 0;
}

static void test_decisions_and_law(Fix *f) {
    SpErr err = {{0}};
    Session *sd = session_new(f->dm, 64, 64, &err), *st = session_new(f->tm, 64, 64, &err);
    static Prefix x;
    int found = -1;
    if (choose_tau(f, sd, st, &err)) {
        check(0, "choose tau: %s", err.msg);
        goto done;
    }
    /* a prefix where the verifier's decisions matter: accept mass away from 0 and 1 */
    for (int pi = 20; pi < 40 && found < 0; pi++) {
        if (prefix_at(f, sd, st, pi, &x, &err)) {
            check(0, "prefix %d: %s", pi, err.msg);
            goto done;
        }
        if (x.e.accept_mass > 0.2 && x.e.accept_mass < 0.8 && x.e.dtv_pq > 0.15) found = pi;
    }
    check(found >= 0, "found a prefix with verifier accept mass in (0.2, 0.8) (prompt %d: accept mass %.3f, d_TV(p,q) %.3f, "
          "exact d_TV(p,p_S) %.4f, %d of %d tokens accepted)", found, x.e.accept_mass, x.e.dtv_pq, x.e.dtv_p_ps,
          x.e.n_accepted, V);
    if (found < 0) goto done;

    /* 1. incremental decisions == decisions from a full forward of prefix + v */
    double max_ds = 0;
    int differ = 0;
    for (int v = 0; v < V; v++) {
        int32_t seq[65];
        memcpy(seq, x.ids, (size_t)x.n * sizeof *seq);
        seq[x.n] = v;
        const float *L, *H;
        session_truncate(sd, 0, &err);
        session_forward(sd, seq, x.n + 1, &L, &H, &err);
        float s = (float)verifier_score(&f->ver, H + (size_t)x.n * f->ver.d);
        max_ds = fmax(max_ds, fabs((double)s - x.score[v]));
        differ += (s >= f->tau) != (x.a[v] > 0);
    }
    check(max_ds < 1e-5 && differ == 0, "a(v) from the cached prefix + 1 token == full forward of prefix + v (max |score diff| "
          "%.2e, %d of %d decisions differ)", max_ds, differ, V);

    /* 1b. the prefix feature: one decision, from the full forward's state at the prefix's last position,
     * for every v; the exact law is then the mixture a q + (1 - a) p, so d_TV(p, P_S) = a d_TV(p, q) */
    {
        const float *L, *H;
        session_truncate(sd, 0, &err);
        session_forward(sd, x.ids, x.n, &L, &H, &err);
        Verifier pre = f->ver;
        pre.feature = VF_PREFIX;
        double sc = verifier_score(&pre, H + (size_t)(x.n - 1) * f->ver.d);
        for (int want = 0; want <= 1; want++) {
            double tau = want ? sc - 1e-6 : sc + 1e-6; /* thresholds on either side of the score */
            static double a[V], law[V];
            DtvExact e;
            int n_bad = 0;
            if (dtv_verifier_decisions(sd, &pre, x.h_last, tau, V, a, NULL, &err)) {
                check(0, "prefix decisions: %s", err.msg);
                break;
            }
            for (int v = 0; v < V; v++) n_bad += a[v] != (double)want;
            dtv_exact(x.p, x.q, a, V, 1.0, law, &e);
            check(n_bad == 0 && fabs(e.dtv_p_ps - want * e.dtv_pq) < 1e-7,
                  "prefix feature, tau on the %s side of the score %.4f: a(v) = %d for all v (%d differ), d_TV(p, P_S) "
                  "%.3g = a d_TV(p, q) %.6f to 1e-7", want ? "low" : "high", sc, want, n_bad, e.dtv_p_ps, want * e.dtv_pq);
        }
        session_truncate(sd, 0, &err);
    }

    /* 2. the exact law against 20,000 first tokens of the real decoder */
    Decoder *dec = decoder_new(f->dm, f->tm, &f->ver, 64, &err);
    gsl_rng *rng = sampler_rng_new(2024);
    static long counts[V];
    DecodeConfig cfg;
    decode_config_default(&cfg);
    cfg.method = DM_SPRINTER;
    cfg.max_new = 1;
    cfg.gamma = 1;
    cfg.tau = f->tau;
    int bad = !dec;
    for (int i = 0; !bad && i < N_DRAWS; i++) {
        DecodeOutput o;
        if (decoder_run(dec, &cfg, x.ids, x.n, rng, &o, &err)) bad = 1;
        else counts[o.tokens[0]]++, decode_output_free(&o);
    }
    if (bad) {
        check(0, "decoder_run: %s", err.msg);
    } else {
        double pv = chisq(counts, x.law, N_DRAWS);
        check(pv > 0.001, "%d decoder first tokens ~ dtv's exact law (chi-square p-value %.4f)", N_DRAWS, pv);
        static double lp[V], flip[V], law_flip[V];
        for (int v = 0; v < V; v++) lp[v] = x.p[v], flip[v] = 1 - x.a[v];
        sprinter_next_token_law(x.p, x.q, flip, V, law_flip);
        double p0 = chisq(counts, lp, N_DRAWS), p1 = chisq(counts, law_flip, N_DRAWS);
        check(p0 < 0.001, "negative control: the draws are rejected against p, i.e. a = 0 (p-value %.2e)", p0);
        check(p1 < 0.001, "negative control: the draws are rejected against the law with flipped decisions (p-value %.2e)", p1);
    }
    gsl_rng_free(rng);
    decoder_free(dec);
done:
    session_free(sd);
    session_free(st);
}

/* ------------------------------------------------------------------ 3 + 4: dtv_run and its file */

enum { N_PREF = 6 };

typedef struct Cols {
    int64_t rows;
    double *c[32];
    const char *names[32];
    int n;
} Cols;

static const char *const kRead[] = {"dtv_pq", "dtv_p_ps", "dtv_q_ps", "accept_mass", "eta_fp", "eta_excess", "pred_local",
                                    "pred_global", "oracle_dtv", "oracle_pred", "oracle_dtv_l1", "emp_accept",
                                    "emp_dtv_naive", "emp_dtv_bc", "emp_noise_floor", "emp_chisq_p", "emp_dtv_unbiased",
                                    "emp_dtv_unbiased_se", NULL};

static double *col(Cols *c, const char *name) {
    for (int i = 0; i < c->n; i++)
        if (!strcmp(c->names[i], name)) return c->c[i];
    return NULL;
}

static void cols_free(Cols *c) {
    for (int i = 0; i < c->n; i++) free(c->c[i]);
    c->n = 0;
}

static int read_cols(const char *path, Cols *c, char *fmt, size_t cap, SpErr *err) {
    memset(c, 0, sizeof *c);
    hid_t h = h5_open_read(path, err);
    if (h < 0) return -1;
    int rc = h5_read_attr_str(h, path, "format", fmt, cap, err);
    for (int i = 0; rc == 0 && kRead[i]; i++) {
        int w;
        int64_t rows;
        if (h5_read_column(h, path, kRead[i], H5C_F64, (void **)&c->c[c->n], &rows, &w, err)) rc = -1;
        else c->names[c->n++] = kRead[i], c->rows = rows;
    }
    H5Fclose(h);
    return rc;
}

/* The attributes method and params of a dtv file ("" where missing). */
static void read_attr2(const char *path, char *meth, size_t cm, char *params, size_t cp) {
    SpErr err = {{0}};
    meth[0] = params[0] = '\0';
    hid_t h = h5_open_read(path, &err);
    if (h < 0) return;
    (void)h5_read_attr_str(h, path, "method", meth, cm, NULL);
    (void)h5_read_attr_str(h, path, "params", params, cp, NULL);
    H5Fclose(h);
}

static void fill_spec(Fix *f, DtvSpec *s) {
    dtv_spec_default(s);
    s->draft_dir = f->draft;
    s->target_dir = f->target;
    s->verifier_path = f->ver_path;
    s->data_path = f->data;
    s->n_prefixes = N_PREF;
    s->offset = 20;
    s->max_continue = 4;
    s->seed = 5;
    s->tau = f->tau;
    s->bootstrap = 100;
}

static void test_run_lambda1(Fix *f) {
    DtvSpec s;
    fill_spec(f, &s);
    s.samples = 2000;
    char out[1100], tmp[1200], fmt[64];
    snprintf(out, sizeof out, "%s/res/dtv1.h5", f->work);
    snprintf(tmp, sizeof tmp, "%s.tmp", out);
    SpErr err = {{0}};
    DtvSummary m;
    Cols c;
    if (dtv_run(&s, out, &m, &err) || read_cols(out, &c, fmt, sizeof fmt, &err)) {
        check(0, "dtv_run lambda 1: %s", err.msg);
        return;
    }
    check(c.rows == N_PREF && !strcmp(fmt, "sprinter-dtv") && access(tmp, F_OK) != 0,
          "dtv file: %lld rows, format %s, no .tmp left", (long long)c.rows, fmt);
    {
        char meth[32] = "", params[512] = "", want[512];
        read_attr2(out, meth, sizeof meth, params, sizeof params);
        snprintf(want, sizeof want, "lambda=1 tau=%g max_run=0", f->tau);
        check(!strcmp(meth, "sprinter") && !strcmp(params, want), "sprinter file: method \"%s\", params \"%s\" (want \"%s\")",
              meth, params, want);
    }
    double *pq = col(&c, "dtv_pq"), *ps = col(&c, "dtv_p_ps"), *ex = col(&c, "eta_excess"), *or1 = col(&c, "oracle_dtv_l1");
    double *orl = col(&c, "oracle_dtv"), *chi = col(&c, "emp_chisq_p"), *unb = col(&c, "emp_dtv_unbiased");
    double *se = col(&c, "emp_dtv_unbiased_se"), *acc = col(&c, "accept_mass"), *eacc = col(&c, "emp_accept");
    double *naive = col(&c, "emp_dtv_naive"), *bc = col(&c, "emp_dtv_bc"), *pl = col(&c, "pred_local");
    double min_chi = 1, max_z = 0, max_za = 0, max_id = 0, max_or = 0, max_same = 0, err_n = 0, err_b = 0, mean_ps = 0,
           mean_n = 0, max_pl = 0;
    for (int i = 0; i < N_PREF; i++) {
        min_chi = fmin(min_chi, chi[i]);
        /* se = 0: every draw gave the same value (e.g. no accepted token with q > p); then exact to rounding */
        max_z = fmax(max_z, se[i] > 0 ? fabs(unb[i] - ps[i]) / se[i] : fabs(unb[i] - ps[i]) > 1e-7 ? INFINITY : 0);
        double sa = sqrt(acc[i] * (1 - acc[i]) / s.samples);
        max_za = fmax(max_za, sa > 0 ? fabs(eacc[i] - acc[i]) / sa : 0);
        max_id = fmax(max_id, fabs(ps[i] - ex[i] * pq[i]));
        max_or = fmax(max_or, fabs(or1[i] - m.oracle_eta_fp * pq[i]));
        max_same = fmax(max_same, fabs(orl[i] - or1[i]));
        err_n += fabs(naive[i] - ps[i]) / N_PREF, err_b += fabs(bc[i] - ps[i]) / N_PREF;
        mean_ps += ps[i] / N_PREF, mean_n += naive[i] / N_PREF;
        max_pl = fmax(max_pl, fabs(ps[i] - pl[i]));
    }
    check(min_chi > 0.001 / N_PREF, "every prefix: %d decoder first tokens ~ exact law (min chi-square p-value %.4f > %.5f)",
          s.samples, min_chi, 0.001 / N_PREF);
    check(max_z < 4.5, "unbiased estimate E_q[a (1 - p/q)+] within 4.5 SE of the exact d_TV (max |z| %.2f; mean |err| %.5f)",
          max_z, m.mean_abs_err_unbiased);
    check(max_za < 4.5, "empirical verifier-accept rate within 4.5 SE of sum_v q a (max |z| %.2f)", max_za);
    check(max_id < 1e-7, "identity d_TV(p, p_S) = eta_excess d_TV(p, q) to 1e-7, the rounding of float32 p and q "
          "(max |diff| %.2e)", max_id);
    check(max_or < 1e-6, "oracle at lambda 1 (eta_FP %.4f, eta_TP %.4f): d_TV(p, p_oracle) == eta_FP d_TV(p, q) "
          "(Thm 3.1 exact; max |diff| %.2e)", m.oracle_eta_fp, m.oracle_eta_tp, max_or);
    check(max_same < 1e-12, "at lambda 1 oracle_dtv == oracle_dtv_l1 (max |diff| %.2e)", max_same);
    check(mean_n > mean_ps && err_b < err_n, "naive histogram d_TV is biased upward (mean %.4f vs exact %.4f, noise floor "
          "%.4f); the bootstrap correction cuts its mean |error| from %.4f to %.4f", mean_n, mean_ps, m.mean_noise_floor,
          err_n, err_b);
    printf("learned verifier, lambda 1, tau %.4f: mean exact d_TV(p,p_S) %.5f; Thm 3.1 with the prefix's eta_FP %.5f "
           "(max |diff| %.5f), with the global eta_FP %.4f: %.5f; mean eta_excess %.4f vs global eta_FP %.4f\n",
           f->tau, m.mean_dtv_p_ps, m.mean_pred_local, max_pl, m.eta_fp_global, m.mean_pred_global, m.mean_eta_excess,
           m.eta_fp_global);
    cols_free(&c);
}

static void test_run_lambda2(Fix *f) {
    DtvSpec s;
    fill_spec(f, &s);
    s.lambda = 2.0;
    s.sampling = (SamplerParams){0.8f, 50, 1.0f};
    s.samples = 1500;
    s.n_prefixes = 4;
    s.oracle_eta_fp = 0.2;
    s.oracle_eta_tp = 0.9;
    char out[1100], out2[1100], fmt[64];
    snprintf(out, sizeof out, "%s/res/dtv2.h5", f->work);
    snprintf(out2, sizeof out2, "%s/res/dtv2-again.h5", f->work);
    SpErr err = {{0}};
    DtvSummary m, m2;
    Cols c = {0}, c2 = {0};
    if (dtv_run(&s, out, &m, &err) || read_cols(out, &c, fmt, sizeof fmt, &err)) {
        check(0, "dtv_run lambda 2: %s", err.msg);
        return;
    }
    double *pq = col(&c, "dtv_pq"), *or2 = col(&c, "oracle_dtv"), *pred = col(&c, "oracle_pred"), *or1 = col(&c, "oracle_dtv_l1");
    double *ps = col(&c, "dtv_p_ps"), *ex = col(&c, "eta_excess"), *chi = col(&c, "emp_chisq_p");
    double max_l1 = 0, max_d = 0, sum_d = 0, sum_pred = 0, min_d = INFINITY, max_id = 0, min_chi = 1;
    int n = s.n_prefixes;
    for (int i = 0; i < n; i++) {
        max_l1 = fmax(max_l1, fabs(or1[i] - 0.2 * pq[i]));
        double d = or2[i] - pred[i];
        max_d = fmax(max_d, d), min_d = fmin(min_d, d), sum_d += d, sum_pred += pred[i];
        max_id = fmax(max_id, fabs(ps[i] - ex[i] * pq[i]));
        min_chi = fmin(min_chi, chi[i]);
    }
    check(max_l1 < 1e-6, "T 0.8 top-k 50, oracle eta_FP 0.2 eta_TP 0.9 at lambda 1: d_TV == 0.2 d_TV(p, q) (max |diff| %.2e)",
          max_l1);
    check(max_d > 1e-3 && min_d > -1e-7,
          "oracle at lambda 2 differs from Thm 3.1: d_TV - 0.2 d_TV(p,q) is %.5f on average (%.1f%% of the prediction "
          "%.5f), max %.5f, min %.2e (it is (eta_TP - eta_FP) sum_{p<q<=2p} (q - p) >= 0)",
          sum_d / n, 100 * sum_d / sum_pred, sum_pred / n, max_d, min_d);
    check(max_id < 1e-7, "identity d_TV(p, p_S) = eta_excess d_TV(p, q) at lambda 2 (max |diff| %.2e)", max_id);
    check(min_chi > 0.001 / n, "T 0.8 top-k 50: decoder first tokens ~ exact law at every prefix (min p-value %.4f)",
          min_chi);
    cols_free(&c);
    /* determinism on a smaller run: the same spec twice */
    s.n_prefixes = 2;
    s.samples = 200;
    int same = dtv_run(&s, out, &m, &err) == 0 && read_cols(out, &c, fmt, sizeof fmt, &err) == 0 &&
               dtv_run(&s, out2, &m2, &err) == 0 && read_cols(out2, &c2, fmt, sizeof fmt, &err) == 0;
    for (int k = 0; same && k < c.n; k++) same = memcmp(c.c[k], c2.c[k], (size_t)c.rows * sizeof(double)) == 0;
    check(same, "same seed -> bit-identical columns (%d columns x %lld rows)", c.n, (long long)c.rows);
    cols_free(&c);
    cols_free(&c2);
}

/* Several tau in one pass (dtv_run_taus): each file bit-identical, column for column, to dtv_run at
 * that tau alone, the decoder draws included (each tau draws from the rng as it stands after the
 * prefix), and labelled with its own tau. */
static void test_run_taus(Fix *f) {
    DtvSpec s;
    fill_spec(f, &s);
    s.n_prefixes = 3;
    s.samples = 120;
    s.bootstrap = 20;
    double taus[3] = {f->tau, 0.5 * f->tau, fmin(0.97, f->tau + 0.2)};
    char paths[3][1100], alone[1100], fmt[64];
    const char *outs[3];
    for (int k = 0; k < 3; k++) snprintf(paths[k], sizeof paths[k], "%s/res/taus-%d.h5", f->work, k), outs[k] = paths[k];
    snprintf(alone, sizeof alone, "%s/res/taus-alone.h5", f->work);
    SpErr err = {{0}};
    DtvSummary sums[3], m;
    if (dtv_run_taus(&s, taus, outs, 3, sums, &err)) {
        check(0, "dtv_run_taus: %s", err.msg);
        return;
    }
    int differ = 0, compared = 0, labelled = 0;
    double accept[3];
    for (int k = 0; k < 3; k++) {
        Cols a = {0}, b = {0};
        s.tau = taus[k];
        if (dtv_run(&s, alone, &m, &err) || read_cols(outs[k], &a, fmt, sizeof fmt, &err) ||
            read_cols(alone, &b, fmt, sizeof fmt, &err)) {
            check(0, "dtv_run at tau %g: %s", taus[k], err.msg);
            cols_free(&a), cols_free(&b);
            return;
        }
        for (int j = 0; j < a.n; j++, compared++) differ += memcmp(a.c[j], b.c[j], (size_t)a.rows * sizeof(double)) != 0;
        accept[k] = sums[k].mean_accept_mass;
        differ += memcmp(&sums[k], &m, sizeof m) != 0;
        char meth[32], params[512], want[512];
        read_attr2(outs[k], meth, sizeof meth, params, sizeof params);
        snprintf(want, sizeof want, "lambda=1 tau=%g max_run=0", taus[k]);
        labelled += !strcmp(params, want);
        cols_free(&a), cols_free(&b);
    }
    check(differ == 0 && compared == 3 * 18, "3 tau in one pass: %d of %d columns (and summaries) differ from runs at each "
          "tau alone", differ, compared);
    check(labelled == 3, "each file's params name its own tau (%d of 3)", labelled);
    check(accept[1] >= accept[0] && accept[0] >= accept[2] && accept[1] > accept[2],
          "the taus are different runs: mean accept mass %.4f (tau %g) >= %.4f (tau %g) >= %.4f (tau %g)", accept[1],
          taus[1], accept[0], taus[0], accept[2], taus[2]);
    double dup[2] = {taus[0], taus[0]};
    const char *two[2] = {outs[0], outs[1]};
    check(dtv_run_taus(&s, dup, two, 2, sums, &err) != 0 && strstr(err.msg, "twice"), "a tau given twice is refused (%s)",
          err.msg);
}

/* ------------------------------------------------------------------ 5: CLI */

static int run_cmd(const char *cmd, char *errbuf, size_t cap, const char *errfile) {
    int st = system(cmd);
    errbuf[0] = '\0';
    FILE *fp = fopen(errfile, "r");
    if (fp) {
        size_t n = fread(errbuf, 1, cap - 1, fp);
        errbuf[n] = '\0';
        fclose(fp);
    }
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int lines(const char *s) {
    int n = 0;
    for (; *s; s++) n += *s == '\n';
    return n;
}

static void test_cli(Fix *f, const char *sprinter) {
    char cmd[8192], e[4096], ef[1100], out[1100];
    snprintf(ef, sizeof ef, "%s/cli.err", f->work);
    snprintf(out, sizeof out, "%s/res/cli.h5", f->work);
    snprintf(cmd, sizeof cmd, "'%s' dtv --help >/dev/null 2>'%s'", sprinter, ef);
    check(run_cmd(cmd, e, sizeof e, ef) == 0, "dtv --help exits 0");
    snprintf(cmd, sizeof cmd, "'%s' dtv --draft '%s' 2>'%s'", sprinter, f->draft, ef);
    int rc = run_cmd(cmd, e, sizeof e, ef);
    check(rc == 2 && lines(e) == 1, "missing options: exit 2, one line (%d: %s)", rc, e);
    snprintf(cmd, sizeof cmd, "'%s' dtv --draft '%s' --target '%s' --verifier '%s' --data '%s' --n-prefixes 2 --out '%s' 2>'%s'",
             sprinter, f->target, f->draft, f->ver_path, f->data, out, ef);
    rc = run_cmd(cmd, e, sizeof e, ef);
    check(rc == 1 && lines(e) == 1 && strstr(e, "verifier.safetensors") && strstr(e, "hidden size"),
          "verifier of the wrong width: exit 1, one line naming the file (%s)", e);
    snprintf(cmd, sizeof cmd,
             "'%s' dtv --draft '%s' --target '%s' --verifier '%s' --data '%s' --offset 20 --n-prefixes 2 --samples 100 "
             "--quiet --out '%s' >/dev/null 2>'%s'",
             sprinter, f->draft, f->target, f->ver_path, f->data, out, ef);
    rc = run_cmd(cmd, e, sizeof e, ef);
    check(rc == 0 && access(out, R_OK) == 0, "sprinter dtv writes %s (exit %d %s)", out, rc, e);
    char pat[1100], t1[1100], t2[1100];
    snprintf(pat, sizeof pat, "%s/res/cli-t{tau}.h5", f->work);
    snprintf(t1, sizeof t1, "%s/res/cli-t0.3.h5", f->work);
    snprintf(t2, sizeof t2, "%s/res/cli-t0.55.h5", f->work);
    snprintf(cmd, sizeof cmd,
             "'%s' dtv --draft '%s' --target '%s' --verifier '%s' --data '%s' --offset 20 --n-prefixes 1 --tau 0.3,0.55 "
             "--quiet --out '%s' >/dev/null 2>'%s'",
             sprinter, f->draft, f->target, f->ver_path, f->data, pat, ef);
    rc = run_cmd(cmd, e, sizeof e, ef);
    check(rc == 0 && access(t1, R_OK) == 0 && access(t2, R_OK) == 0, "sprinter dtv --tau 0.3,0.55 --out ...-t{tau}.h5 "
          "writes one file per tau (exit %d %s)", rc, e);
    snprintf(cmd, sizeof cmd,
             "'%s' dtv --draft '%s' --target '%s' --verifier '%s' --data '%s' --n-prefixes 1 --tau 0.3,0.55 --out '%s' 2>'%s'",
             sprinter, f->draft, f->target, f->ver_path, f->data, out, ef);
    rc = run_cmd(cmd, e, sizeof e, ef);
    check(rc == 2 && lines(e) == 1 && strstr(e, "{tau}"), "several --tau without {tau} in --out: exit 2, one line (%d: %s)",
          rc, e);
    char outm[1100];
    snprintf(outm, sizeof outm, "%s/res/cli-typical.h5", f->work);
    snprintf(cmd, sizeof cmd,
             "'%s' dtv --method typical --typical-eps 0.2 --draft '%s' --target '%s' --data '%s' --offset 20 --n-prefixes 1 "
             "--samples 50 --quiet --out '%s' >/dev/null 2>'%s'",
             sprinter, f->draft, f->target, f->data, outm, ef);
    rc = run_cmd(cmd, e, sizeof e, ef);
    char meth[32], params[512];
    read_attr2(outm, meth, sizeof meth, params, sizeof params);
    check(rc == 0 && !strcmp(meth, "typical") && !strcmp(params, "gamma=5 typical_eps=0.2 typical_alpha=0.3"),
          "sprinter dtv --method typical --typical-eps 0.2 (no verifier) writes method \"%s\", params \"%s\" (exit %d %s)",
          meth, params, rc, e);
    static const char *const bad[][2] = {
        {"--method judge", "judge without --judge"},
        {"--method sd", "a method without an exact law here"},
        {"--method fsd --fsd-divergence hellinger", "a bad --fsd-divergence"},
        {"--method typical --verifier VER", "--verifier with typical"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
        char opts[1200];
        snprintf(opts, sizeof opts, "%s", bad[k][0]);
        char *vp = strstr(opts, "VER");
        if (vp) snprintf(vp, sizeof opts - (size_t)(vp - opts), "'%s'", f->ver_path);
        snprintf(cmd, sizeof cmd, "'%s' dtv %s --draft '%s' --target '%s' --data '%s' --n-prefixes 1 --out '%s' 2>'%s'",
                 sprinter, opts, f->draft, f->target, f->data, outm, ef);
        rc = run_cmd(cmd, e, sizeof e, ef);
        check(rc == 2 && lines(e) == 1, "%s: exit 2, one line (%d: %s)", bad[k][1], rc, e);
    }
}

/* ------------------------------------------------------------------ 6: the other methods */

/* A random judge head on the target's final state (d 48): w uniform with variance 1/d, b 0, so scores spread
 * around 1/2 and tau_judge 0.5 keeps about half the candidates. */
static int make_judge(Fix *f) {
    SpErr err = {{0}};
    snprintf(f->judge_path, sizeof f->judge_path, "%s/judge.safetensors", f->work);
    enum { D = 48 };
    static float w[D];
    gsl_rng *rng = sampler_rng_new(77);
    for (int i = 0; i < D; i++) w[i] = (float)((gsl_rng_uniform(rng) - 0.5) * sqrt(12.0 / D)); /* variance 1/d */
    gsl_rng_free(rng);
    Verifier v = {D, w, 0.0f, 1.0, VF_TOKEN, VS_TARGET};
    if (verifier_save(f->judge_path, &v, NULL, &err)) {
        fprintf(stderr, "judge head: %s\n", err.msg);
        return -1;
    }
    return 0;
}

/* Fisher's combination of n p-values: P(chi2(2n) >= -2 sum log p). */
static double fisher(const double *pv, int n) {
    double x = 0;
    for (int i = 0; i < n; i++) x += -2 * log(fmax(pv[i], 1e-300));
    return gsl_cdf_chisq_Q(x, 2 * n);
}

typedef struct MethodCase {
    DecodeMethod m;
    DecodeConfig params;
    const char *judge;
} MethodCase;

static int method_run(Fix *f, const MethodCase *mc, int n, int samples, int fault, DecodeMethod fm, const char *name, Cols *c,
                      DtvSummary *sum, char *meth, char *params) {
    DtvSpec s;
    fill_spec(f, &s);
    s.method = mc->m;
    s.params = mc->params;
    s.judge_path = mc->judge;
    s.verifier_path = NULL;
    s.n_prefixes = n;
    s.samples = samples;
    s.bootstrap = 20;
    s.fault_draw = fault;
    s.fault_draw_method = fm;
    char out[1100], fmt[64];
    snprintf(out, sizeof out, "%s/res/m-%s.h5", f->work, name);
    SpErr err = {{0}};
    if (dtv_run(&s, out, sum, &err) || read_cols(out, c, fmt, sizeof fmt, &err)) {
        check(0, "dtv_run %s: %s", name, err.msg);
        return -1;
    }
    read_attr2(out, meth, 32, params, 512);
    return 0;
}

enum { N_M = 6, M_DRAWS = 1500 };

static void test_methods(Fix *f) {
    if (!check(make_judge(f) == 0, "random judge head written")) return;
    DecodeConfig dflt;
    decode_config_default(&dflt);
    MethodCase cases[4] = {{DM_TYPICAL, dflt, NULL}, {DM_FSD, dflt, NULL}, {DM_OPTIMAL_LOSSY, dflt, NULL}, {DM_JUDGE, dflt, f->judge_path}};
    const char *names[4] = {"typical", "fsd", "optimal-lossy", "judge"};
    Cols c;
    DtvSummary sum;
    char meth[32], params[512];
    double thr = 0;
    for (int k = 0; k < 4; k++) {
        MethodCase *mc = &cases[k];
        if (mc->m == DM_FSD) { /* TV, threshold between the prefixes' d_TV(p, q): some accept outright, some not */
            mc->params.fsd_divergence = FSD_TV;
            mc->params.fsd_threshold = thr;
        }
        if (method_run(f, mc, N_M, M_DRAWS, 0, DM_SD, names[k], &c, &sum, meth, params)) continue;
        double *pq = col(&c, "dtv_pq"), *ps = col(&c, "dtv_p_ps"), *chi = col(&c, "emp_chisq_p"), *acc = col(&c, "accept_mass");
        double *eacc = col(&c, "emp_accept");
        if (mc->m == DM_TYPICAL) { /* the fsd threshold for the next case: the median of d_TV(p, q) */
            double sorted[N_M];
            memcpy(sorted, pq, sizeof sorted);
            for (int i = 0; i < N_M; i++)
                for (int j = i + 1; j < N_M; j++)
                    if (sorted[j] < sorted[i]) { double t = sorted[i]; sorted[i] = sorted[j]; sorted[j] = t; }
            thr = 0.5 * (sorted[N_M / 2 - 1] + sorted[N_M / 2]);
        }
        double mean_ps = 0, min_chi = 1, max_za = 0;
        int nan_ok = 1;
        static const char *const sprinter_only[] = {"eta_fp", "eta_excess", "pred_local", "pred_global", "oracle_dtv",
                                                    "oracle_pred", "oracle_dtv_l1", "emp_dtv_unbiased", "emp_dtv_unbiased_se"};
        for (int i = 0; i < N_M; i++) {
            mean_ps += ps[i] / N_M;
            min_chi = fmin(min_chi, chi[i]);
            double sa = sqrt(fmax(0.0, acc[i] * (1 - acc[i])) / M_DRAWS);
            /* sa ~ 0 (accept_mass 0 or 1, e.g. fsd accepting outright): the draws must agree to rounding */
            max_za = fmax(max_za, sa > 1e-9 ? fabs(eacc[i] - acc[i]) / sa : fabs(eacc[i] - acc[i]) > 1e-9 ? INFINITY : 0);
            for (size_t j = 0; j < sizeof sprinter_only / sizeof *sprinter_only; j++) nan_ok &= isnan(col(&c, sprinter_only[j])[i]);
        }
        char want[512];
        dtv_params_label(mc->m, &mc->params, NAN, NAN, want, sizeof want);
        check(!strcmp(meth, names[k]) && !strcmp(params, want) && strstr(params, "gamma=5"),
              "%s: attributes method \"%s\", params \"%s\"", names[k], meth, params);
        double fp = fisher(chi, N_M);
        check(mean_ps > 0.01, "%s: the law is not p (mean exact d_TV(p, law) %.4f, d_TV(p, q) %.4f)", names[k], mean_ps,
              sum.mean_dtv_pq);
        check(min_chi > 0.001 / N_M && fp > 0.001,
              "%s: %d decoder first tokens per prefix ~ exact law (min chi-square p %.4f > %.5f, Fisher %.4f > 0.001)",
              names[k], M_DRAWS, min_chi, 0.001 / N_M, fp);
        check(max_za < 4.5, "%s: kept share of the draws within 4.5 SE of accept_mass (max |z| %.2f, mean accept_mass %.4f)",
              names[k], max_za, sum.mean_accept_mass);
        check(nan_ok, "%s: the SPRINTER columns are NaN", names[k]);
        if (mc->m == DM_FSD) {
            int outright = 0, tested = 0;
            /* n_accepted is V (outright) or 0 (SD's test) */
            int32_t *na = NULL;
            int64_t rows;
            int w;
            SpErr err = {{0}};
            char path[1100];
            snprintf(path, sizeof path, "%s/res/m-fsd.h5", f->work);
            hid_t h = h5_open_read(path, &err);
            if (h >= 0 && h5_read_column(h, path, "n_accepted", H5C_I32, (void **)&na, &rows, &w, &err) == 0) {
                for (int i = 0; i < rows; i++) outright += na[i] == V, tested += na[i] == 0;
                free(na);
            }
            if (h >= 0) H5Fclose(h);
            check(outright > 0 && tested > 0, "fsd TV threshold %.4f: %d prefixes accept outright, %d take SD's test", thr,
                  outright, tested);
        }
        cols_free(&c);
        if (k == 0) { /* dtvread on a version-2 file */
            DtvFile d;
            SpErr err = {{0}};
            char path[1100];
            snprintf(path, sizeof path, "%s/res/m-typical.h5", f->work);
            int rc = dtv_file_read(path, &d, &err);
            check(rc == 0 && d.version == 2 && !strcmp(d.method, "typical") && !strcmp(d.params, want) && d.temperature == 1 &&
                      isnan(d.pred_global),
                  "dtvread of the typical file: version %d, method %s, params \"%s\", temperature %g (%s)", d.version, d.method,
                  d.params, d.temperature, rc ? err.msg : "ok");
        }
    }
    /* negative controls: the draws of another method against the law */
    static const DecodeMethod draws[4] = {DM_FSD, DM_TYPICAL, DM_SD, DM_SD};
    for (int k = 0; k < 4; k++) {
        MethodCase mc = cases[k];
        /* the fsd control draws typical's tokens, and typical's fsd's with the threshold above */
        char nm[64];
        snprintf(nm, sizeof nm, "%s-control", names[k]);
        if (method_run(f, &mc, 4, 1000, 1, draws[k], nm, &c, &sum, meth, params)) continue;
        double *chi = col(&c, "emp_chisq_p");
        double fp = fisher(chi, 4);
        check(fp < 0.001, "negative control: %s's draws against %s's exact law are rejected (Fisher p %.2e)",
              decode_method_name(draws[k]), names[k], fp);
        cols_free(&c);
    }
    /* lossless limits: d_TV(p, law) = 0 up to float rounding */
    MethodCase lim[4] = {{DM_TYPICAL, dflt, NULL}, {DM_FSD, dflt, NULL}, {DM_OPTIMAL_LOSSY, dflt, NULL}, {DM_JUDGE, dflt, NULL}};
    lim[0].params.typical_eps = 1, lim[0].params.typical_alpha = 1e9;
    lim[1].params.fsd_divergence = FSD_TV, lim[1].params.fsd_threshold = 0;
    lim[2].params.lossy_kl = 0;
    lim[3].params.tau_judge = 1.5;
    static const char *const what[4] = {"typical eps 1 alpha 1e9 (accepts nothing)", "fsd TV threshold 0",
                                        "optimal-lossy lossy_kl 0", "judge tau_judge 1.5, no head"};
    for (int k = 0; k < 4; k++) {
        char nm[64];
        snprintf(nm, sizeof nm, "%s-lossless", names[k]);
        if (method_run(f, &lim[k], 4, 400, 0, DM_SD, nm, &c, &sum, meth, params)) continue;
        double *pq = col(&c, "dtv_pq"), *ps = col(&c, "dtv_p_ps"), *chi = col(&c, "emp_chisq_p");
        double max_ps = 0, min_pq = 1;
        for (int i = 0; i < 4; i++) max_ps = fmax(max_ps, ps[i]), min_pq = fmin(min_pq, pq[i]);
        double fp = fisher(chi, 4);
        check(max_ps < 1e-6 && min_pq > 0.1 && fp > 0.001,
              "lossless limit, %s: max d_TV(p, law) %.2e (< 1e-6) where min d_TV(p, q) %.3f; draws ~ law (Fisher %.3f)",
              what[k], max_ps, min_pq, fp);
        cols_free(&c);
    }
}

/* dtvread of a version-1 file: the lambda-1 sprinter file with method and params removed, version 1. */
static void test_read_v1(Fix *f) {
    char path[1100], meth[32], params[512];
    snprintf(path, sizeof path, "%s/res/dtv1.h5", f->work);
    read_attr2(path, meth, sizeof meth, params, sizeof params);
    hid_t h = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
    int ok = h >= 0 && H5Adelete(h, "method") >= 0 && H5Adelete(h, "params") >= 0 && H5Adelete(h, "version") >= 0;
    if (ok) {
        hid_t sp = H5Screate(H5S_SCALAR);
        hid_t a = H5Acreate2(h, "version", H5T_STD_I64LE, sp, H5P_DEFAULT, H5P_DEFAULT);
        int64_t one = 1;
        ok = a >= 0 && H5Awrite(a, H5T_NATIVE_INT64, &one) >= 0;
        if (a >= 0) H5Aclose(a);
        H5Sclose(sp);
    }
    if (h >= 0) H5Fclose(h);
    DtvFile d;
    SpErr err = {{0}};
    int rc = ok ? dtv_file_read(path, &d, &err) : -1;
    check(ok && rc == 0 && d.version == 1 && !strcmp(d.method, "sprinter") && !strcmp(d.params, params) &&
              fabs(d.dtv_p_ps) >= 0,
          "dtvread of a version-1 file: method %s, params \"%s\" == the version-2 file's \"%s\" (%s)", ok ? d.method : "?",
          ok ? d.params : "?", params, rc ? err.msg : "ok");
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: test_dtv WORKDIR TOKENIZER_FIXTURE_DIR SPRINTER\n");
        return 2;
    }
    openblas_set_num_threads(1); /* tiny matrices: extra threads only spin */
    char cmd[2100];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", argv[1]);
    if (system(cmd) != 0) return 1;
    static Fix f;
    if (!check(setup(&f, argv[1], argv[2]) == 0, "fixture: models, dataset and verifier")) return check_summary("dtv");
    test_decisions_and_law(&f);
    test_run_lambda1(&f);
    test_run_lambda2(&f);
    test_run_taus(&f);
    test_cli(&f, argv[3]);
    test_methods(&f);
    test_read_v1(&f);
    verifier_free(&f.ver);
    tokenizer_free(f.tok);
    model_free(f.dm);
    model_free(f.tm);
    return check_summary("dtv");
}
