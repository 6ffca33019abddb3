/* test_decoding.c - the decoding methods against exact next-token laws.
 *
 * Two random tiny GPT-2 models with a shared vocabulary (V = 96) act as draft and target. At a fixed
 * prefix we know p (target) and q (draft) exactly, so the law of the first generated token is
 * known in closed form for each method:
 *   sd, pmin, specdecpp   p                              (lossless)
 *   oracle-iid, lambda=1  (1 - eta_FP) p + eta_FP q       (Theorem 3.1; holds exactly at lambda = 1)
 *   oracle-iid, lambda>1  sprinter_next_token_law with a(v) = eta_TP or eta_FP by the true label
 *   sprinter              sprinter_next_token_law with a(v) = [score(h(prefix + v)) >= tau], for a
 *                         verifier learned (collect + verifier_train) on these two models
 *   draft / ar            q / p
 *   typical, fsd, optimal-lossy   their exact laws (typical_next_token_law, fsd_next_token_law,
 *                         optimal_lossy_next_token_law in lossy_law.c), each with a negative control:
 *                         the same draws against the law with 0.02 of mass moved between its two
 *                         largest entries must be rejected
 * Each is checked by a chi-square goodness-of-fit test (GSL) on 15,000 seeded draws (power >= 0.999
 * against a 0.02 mass shift, see N_DRAWS; the gross negative control, residual := p, on 5,000), bins with
 * expected count < 5 merged, pass when p-value > 0.001. With the fixed seeds below the outcome is
 * deterministic; for a correct sampler each check would fail with probability 0.001 on fresh
 * seeds (union bound over the checks here: < 4%). Negative controls must be rejected: the SD
 * residual replaced by p (fault_broken_residual), and oracle-iid tested against p alone.
 * Also: greedy sd / pmin / specdecpp equal greedy ar token for token on 50 prompts; fsd at threshold 0
 * and optimal-lossy at lossy_kl 0 equal sd token for token and event for event under sd's seeds (20
 * prompts x 4 settings x 30 tokens), and the lossy runs' counters match their events; non-finite logits
 * return DECODE_ERR_NONFINITE, other errors -1; the authors' round (paper-code protocol: bonus,
 * finish_round, max_run 19, greedy) equals a step-by-step hand computation of their loop.
 * usage: test_decoding WORKDIR [laws|lossy|rest|all] (CTest: decoding_laws, decoding_laws_lossy,
 * decoding_laws_rest) */
#include <gsl/gsl_cdf.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "decoding.h"
#include "h5util.h"
#include "jsonutil.h"
#include "presets.h"
#include "verifier_train.h"

#include "check.h"

#define V_TINY 96
/* N_DRAWS per law check: the smallest round count at which every check keeps power >= 0.999 against
 * the near miss the negative controls use (0.02 of mass moved between the law's two largest entries),
 * at the 0.001 level after bin merging. Power = P(noncentral chi-square(df, lambda) > the central
 * quantile), lambda = N sum (shifted - law)^2 / law over the merged bins, per check: the weakest check
 * (oracle-iid at temperature 0.8, top-k 30: df 51, lambda 98 at 15,000) has 0.9990 at 15,000, 0.9914
 * at 12,500, 0.99999 at 20,000 (the count before). The gross negative control (sd with residual :=
 * p, a law far from p) needs far fewer: at 5,000 draws it is rejected with p-values <= 2e-24. */
enum { N_DRAWS = 15000, N_DRAWS_GROSS = 5000 };
#include "decode_fixture.h"
#include "prefill_memo.h"

static double dtv(const float *a, const float *b) {
    double s = 0;
    for (int v = 0; v < V_TINY; v++) s += fabs((double)a[v] - b[v]);
    return s / 2;
}

/* full = 0 runs a reduced set (the second sampling setting) to keep the suite fast. */
static void test_laws(Fixture *f, const Verifier *ver, int full) {
    long counts[V_TINY];
    double law[V_TINY], a[V_TINY];
    const uint64_t seeds[] = {11, 22, 33};
    DecodeConfig cfg;
    printf("prefix law: d_TV(p, q) = %.3f\n", dtv(f->p, f->q));

    /* lossless methods: law p */
    for (int v = 0; v < V_TINY; v++) law[v] = f->p[v];
    const DecodeMethod lossless[] = {DM_SD, DM_PMIN, DM_SPECDECPP, DM_AR};
    for (size_t m = 0; m < 4; m++)
        for (int s = 0; s < (m == 0 ? 3 : full); s++) {
            decode_config_default(&cfg);
            cfg.method = lossless[m];
            cfg.gamma = 2;
            cfg.p_min = 0.05;
            cfg.tau = 0.5;
            if (first_token_hist(f, &cfg, seeds[s] + m, counts)) return;
            double pv = chisq_pvalue(counts, law, V_TINY, N_DRAWS);
            check(pv > 0.001, "%s seed %d: first token ~ p (chi-square p-value %.4f)", decode_method_name(cfg.method), s, pv);
        }

    /* negative control: broken residual must be detected */
    for (int s = 0; s < (full ? 3 : 1); s++) {
        decode_config_default(&cfg);
        cfg.method = DM_SD;
        cfg.gamma = 3;
        cfg.fault_broken_residual = 1;
        if (first_token_hist_n(f, &cfg, seeds[s], N_DRAWS_GROSS, counts)) return;
        double pv = chisq_pvalue(counts, law, V_TINY, N_DRAWS_GROSS);
        check(pv < 0.001, "negative control: sd with residual := p is rejected (p-value %.2e)", pv);
    }

    /* draft-only: law q */
    for (int v = 0; v < V_TINY; v++) law[v] = f->q[v];
    decode_config_default(&cfg);
    cfg.method = DM_DRAFT;
    if (first_token_hist(f, &cfg, 44, counts) == 0) {
        double pv = chisq_pvalue(counts, law, V_TINY, N_DRAWS);
        check(pv > 0.001, "draft: first token ~ q (p-value %.4f)", pv);
    }

    /* oracle-iid at lambda = 1: Theorem 3.1's mixture */
    const double fps[] = {0.2, 0.6}, tps[] = {0.9, 0.5};
    for (int k = 0; k < (full ? 2 : 1); k++) {
        for (int v = 0; v < V_TINY; v++) law[v] = (1 - fps[k]) * f->p[v] + fps[k] * f->q[v];
        decode_config_default(&cfg);
        cfg.method = DM_ORACLE_IID;
        cfg.lambda = 1.0;
        cfg.eta_fp = fps[k];
        cfg.eta_tp = tps[k];
        if (first_token_hist(f, &cfg, 55 + (uint64_t)k, counts)) return;
        double pv = chisq_pvalue(counts, law, V_TINY, N_DRAWS);
        check(pv > 0.001, "oracle-iid lambda=1 eta_FP=%.1f: first token ~ (1-eta_FP) p + eta_FP q (p-value %.4f)", fps[k], pv);
        /* negative control: the same draws are not distributed as p */
        double lp[V_TINY];
        for (int v = 0; v < V_TINY; v++) lp[v] = f->p[v];
        double pv0 = chisq_pvalue(counts, lp, V_TINY, N_DRAWS);
        check(pv0 < 0.001, "negative control: oracle-iid eta_FP=%.1f draws are rejected against p (p-value %.2e)", fps[k], pv0);
    }

    /* oracle-markov: the first decision of a run is a fresh draw, so the first token's law is the
     * i.i.d. one; the correlation only shows across tokens (tested in test_bookkeeping) */
    if (full) {
        for (int v = 0; v < V_TINY; v++) law[v] = (1 - 0.3) * f->p[v] + 0.3 * f->q[v];
        decode_config_default(&cfg);
        cfg.method = DM_ORACLE_MARKOV;
        cfg.eta_fp = 0.3;
        cfg.eta_tp = 0.8;
        cfg.oracle_stay = 0.7;
        if (first_token_hist(f, &cfg, 57, counts) == 0) {
            double pv = chisq_pvalue(counts, law, V_TINY, N_DRAWS);
            check(pv > 0.001, "oracle-markov lambda=1: first token ~ (1-eta_FP) p + eta_FP q (p-value %.4f)", pv);
        }
    }

    /* oracle-iid at lambda = 2: the exact law by label */
    decode_config_default(&cfg);
    cfg.method = DM_ORACLE_IID;
    cfg.lambda = 2.0;
    cfg.eta_fp = 0.4;
    cfg.eta_tp = 0.8;
    for (int v = 0; v < V_TINY; v++) a[v] = (f->q[v] <= cfg.lambda * f->p[v]) ? cfg.eta_tp : cfg.eta_fp;
    sprinter_next_token_law(f->p, f->q, a, V_TINY, law);
    if (first_token_hist(f, &cfg, 66, counts) == 0) {
        double pv = chisq_pvalue(counts, law, V_TINY, N_DRAWS);
        check(pv > 0.001, "oracle-iid lambda=2: first token ~ exact law by label (p-value %.4f)", pv);
    }

    /* sprinter with a verifier: decisions a(v) from the draft hidden state of prefix + v */
    SpErr err = {{0}};
    Session *s = session_new(f->draft, 16, 16, &err);
    int n_acc = 0;
    for (int v = 0; v < V_TINY; v++) {
        int32_t seq[9];
        memcpy(seq, f->prefix, (size_t)f->n_prefix * sizeof *seq);
        seq[f->n_prefix] = v;
        const float *H;
        session_truncate(s, 0, &err);
        session_forward(s, seq, f->n_prefix + 1, NULL, &H, &err);
        a[v] = verifier_score(ver, H + (size_t)f->n_prefix * ver->d) >= 0.5;
        n_acc += (int)a[v];
    }
    session_free(s);
    printf("verifier accepts %d of %d vocab tokens at this prefix\n", n_acc, V_TINY);
    sprinter_next_token_law(f->p, f->q, a, V_TINY, law);
    for (int k = 0; k < (full ? 2 : 1); k++) {
        decode_config_default(&cfg);
        cfg.method = DM_SPRINTER;
        cfg.tau = 0.5;
        if (first_token_hist(f, &cfg, 77 + (uint64_t)k, counts)) return;
        double pv = chisq_pvalue(counts, law, V_TINY, N_DRAWS);
        check(pv > 0.001, "sprinter seed %d: first token ~ exact mixture from per-token decisions (p-value %.4f)", k, pv);
    }
}

/* Moves mass delta from the law's largest entry to its second largest: a near miss the chi-square test
 * must reject (the negative control of the lossy laws). */
static void perturbed(const double *law, double delta, double *out) {
    int a = 0, b = -1;
    for (int v = 0; v < V_TINY; v++) out[v] = law[v], a = law[v] > law[a] ? v : a;
    for (int v = 0; v < V_TINY; v++)
        if (v != a && (b < 0 || law[v] > law[b])) b = v;
    out[a] -= delta, out[b] += delta;
}

/* The lossy block methods (typical, fsd, optimal-lossy): the first token against each method's exact
 * law at the prefix (lossy_law.c), each with a negative control (the law with 0.02 of mass moved
 * between its two largest entries must be rejected on the same draws). */
static void test_lossy_laws(Fixture *f, int full) {
    long counts[V_TINY];
    double law[V_TINY], bad[V_TINY], work[OPTIMAL_LOSSY_WORK(V_TINY)];
    DecodeConfig cfg;
    const char *names[] = {"kl", "js", "tv"};
    struct {
        DecodeMethod method;
        double eps, alpha; /* typical */
        int div;           /* fsd */
        double thr_scale;  /* fsd: threshold = D(p, q) * thr_scale */
        double kl;         /* optimal-lossy */
    } cases[] = {
        {DM_TYPICAL, 0.09, 0.3, 0, 0, 0}, {DM_TYPICAL, 0.004, 0.3, 0, 0, 0},
        {DM_FSD, 0, 0, FSD_KL, 1.01, 0},  {DM_FSD, 0, 0, FSD_JS, 0.99, 0},
        {DM_FSD, 0, 0, FSD_TV, 1.01, 0},  {DM_OPTIMAL_LOSSY, 0, 0, 0, 0, 0.05},
        {DM_OPTIMAL_LOSSY, 0, 0, 0, 0, 0.5},
    };
    int n_cases = full ? (int)(sizeof cases / sizeof *cases) : 3;
    for (int k = 0; k < n_cases; k++) {
        int c = full ? k : (k == 0 ? 0 : k == 1 ? 4 : 5); /* KL is infinite under top-k: tv */
        decode_config_default(&cfg);
        cfg.method = cases[c].method;
        cfg.gamma = 2;
        cfg.typical_eps = cases[c].eps, cfg.typical_alpha = cases[c].alpha;
        char what[96];
        if (cfg.method == DM_TYPICAL) {
            typical_next_token_law(f->p, f->q, V_TINY, cfg.typical_eps, cfg.typical_alpha, law);
            snprintf(what, sizeof what, "typical eps %g alpha %g (threshold %.4f)", cfg.typical_eps, cfg.typical_alpha,
                     typical_threshold(f->p, V_TINY, cfg.typical_eps, cfg.typical_alpha));
        } else if (cfg.method == DM_FSD) {
            cfg.fsd_divergence = cases[c].div;
            double D = fsd_divergence_value(f->p, f->q, V_TINY, cfg.fsd_divergence);
            cfg.fsd_threshold = D * cases[c].thr_scale;
            fsd_next_token_law(f->p, f->q, V_TINY, cfg.fsd_divergence, cfg.fsd_threshold, law);
            snprintf(what, sizeof what, "fsd %s D %.4f threshold %.4f (law %s)", names[cfg.fsd_divergence], D,
                     cfg.fsd_threshold, cases[c].thr_scale > 1 ? "q" : "p");
        } else {
            cfg.lossy_kl = cases[c].kl;
            optimal_lossy_next_token_law(f->p, f->q, V_TINY, cfg.lossy_kl, work, law);
            double acc = 0, acc_sd = 0;
            for (int v = 0; v < V_TINY; v++) acc += fmin(law[v], f->q[v]), acc_sd += fmin(f->p[v], f->q[v]);
            snprintf(what, sizeof what, "optimal-lossy D %g (acceptance %.3f, sd's %.3f)", cfg.lossy_kl, acc, acc_sd);
        }
        if (first_token_hist(f, &cfg, 300 + (uint64_t)c, counts)) return;
        double pv = chisq_pvalue(counts, law, V_TINY, N_DRAWS);
        check(pv > 0.001, "%s: first token ~ exact law (chi-square p-value %.4f)", what, pv);
        perturbed(law, 0.02, bad);
        double pv_bad = chisq_pvalue(counts, bad, V_TINY, N_DRAWS);
        check(pv_bad < 0.001, "negative control: %s draws rejected against the law with 0.02 moved (p-value %.2e)", what,
              pv_bad);
    }
    /* typical that accepts nothing (eps 1, alpha 1e9 >= e^H): lossless in law, p, but not sd's tokens */
    decode_config_default(&cfg);
    cfg.method = DM_TYPICAL;
    cfg.gamma = 2;
    cfg.typical_eps = 1, cfg.typical_alpha = 1e9;
    for (int v = 0; v < V_TINY; v++) law[v] = f->p[v];
    if (full && first_token_hist(f, &cfg, 399, counts) == 0) {
        double pv = chisq_pvalue(counts, law, V_TINY, N_DRAWS);
        check(pv > 0.001, "typical eps 1 alpha 1e9 (accepts nothing): first token ~ p (p-value %.4f)", pv);
    }
}

/* The lossless limits of the lossy methods are sd draw for draw: fsd at threshold 0 (each divergence)
 * and optimal-lossy at lossy_kl 0 emit sd's tokens and events under the same seeds; and every lossy
 * run's counters match its events (accepted = kinds 3 + 6, rejected = kinds 4 + 7). */
static void test_lossy_limits(Fixture *f) {
    SpErr err = {{0}};
    int prompts = 20, mismatched = 0, runs = 0, inconsistent = 0;
    long lossy_accepts = 0, lossy_resamples = 0;
    struct {
        DecodeMethod method;
        int div;
        double thr, kl;
    } limits[] = {{DM_FSD, FSD_KL, 0, 0}, {DM_FSD, FSD_JS, 0, 0}, {DM_FSD, FSD_TV, 0, 0}, {DM_OPTIMAL_LOSSY, 0, 0, 0},
                  /* lossy settings: only the counters are checked */
                  {DM_FSD, FSD_JS, 0.2, 0}, {DM_OPTIMAL_LOSSY, 0, 0, 0.3}, {DM_TYPICAL, 0, 0, 0}};
    for (int i = 0; i < prompts; i++) {
        int32_t prompt[4] = {(int32_t)(i % V_TINY), (int32_t)((i * 7 + 3) % V_TINY), (int32_t)((i * 13 + 1) % V_TINY),
                             (int32_t)((i * 29 + 5) % V_TINY)};
        DecodeConfig cfg;
        decode_config_default(&cfg);
        cfg.max_new = 30;
        cfg.gamma = 1 + i % 5;
        cfg.method = DM_SD;
        DecodeOutput ref, o;
        gsl_rng *rng = sampler_rng_new(1000 + (uint64_t)i);
        int rc = decoder_run(f->dec, &cfg, prompt, 4, rng, &ref, &err);
        gsl_rng_free(rng);
        if (rc) {
            fprintf(stderr, "%s\n", err.msg);
            mismatched++;
            continue;
        }
        for (size_t m = 0; m < sizeof limits / sizeof *limits; m++) {
            cfg.method = limits[m].method;
            cfg.fsd_divergence = limits[m].div;
            cfg.fsd_threshold = limits[m].thr;
            cfg.lossy_kl = limits[m].kl;
            rng = sampler_rng_new(1000 + (uint64_t)i);
            rc = decoder_run(f->dec, &cfg, prompt, 4, rng, &o, &err);
            gsl_rng_free(rng);
            if (rc) {
                mismatched++;
                continue;
            }
            int lossless = m < 4;
            if (lossless) {
                runs++;
                int same = o.n_tokens == ref.n_tokens &&
                           !memcmp(o.tokens, ref.tokens, (size_t)ref.n_tokens * sizeof *o.tokens) &&
                           o.stats.accepted == ref.stats.accepted && o.stats.rejected == ref.stats.rejected;
                for (int e = 0; same && e < o.n_events; e++) same &= o.events[e].kind == ref.events[e].kind;
                mismatched += !same;
            }
            int64_t acc = 0, rej = 0;
            for (int e = 0; e < o.n_events; e++) {
                int kd = o.events[e].kind;
                acc += kd == EV_SD_ACCEPT || kd == EV_LOSSY_ACCEPT, rej += kd == EV_SD_RESAMPLE || kd == EV_LOSSY_RESAMPLE;
                lossy_accepts += kd == EV_LOSSY_ACCEPT, lossy_resamples += kd == EV_LOSSY_RESAMPLE;
                if (lossless) inconsistent += kd == EV_LOSSY_ACCEPT || kd == EV_LOSSY_RESAMPLE;
            }
            inconsistent += acc != o.stats.accepted || rej != o.stats.rejected || o.stats.tokens != 30 ||
                            o.stats.accepted + o.stats.rejected > o.stats.drafted;
            decode_output_free(&o);
        }
        decode_output_free(&ref);
    }
    check(mismatched == 0, "fsd threshold 0 (kl, js, tv) and optimal-lossy lossy_kl 0 == sd token for token and event for "
                           "event on %d runs of 30 tokens under sd's seeds (%d mismatches)",
          runs, mismatched);
    check(inconsistent == 0 && lossy_accepts > 0 && lossy_resamples > 0,
          "lossy runs: accepted = kinds 3 + 6, rejected = kinds 4 + 7, no lossy kind in the lossless limits "
          "(%d inconsistent; %ld lossy accepts, %ld lossy resamples seen)",
          inconsistent, lossy_accepts, lossy_resamples);
}

/* Greedy lossless methods must reproduce greedy ar exactly. */
static void test_greedy(Fixture *f) {
    SpErr err = {{0}};
    int mismatched = 0, prompts = 50;
    gsl_rng *rng = sampler_rng_new(5);
    for (int i = 0; i < prompts; i++) {
        int32_t prompt[4] = {(int32_t)(i % V_TINY), (int32_t)((i * 7 + 3) % V_TINY), (int32_t)((i * 13 + 1) % V_TINY),
                             (int32_t)((i * 29 + 5) % V_TINY)};
        DecodeConfig cfg;
        decode_config_default(&cfg);
        cfg.sampling = (SamplerParams){0.0f, 0, 1.0f};
        cfg.max_new = 24;
        cfg.method = DM_AR;
        DecodeOutput ref, o;
        if (decoder_run(f->dec, &cfg, prompt, 4, rng, &ref, &err)) {
            fprintf(stderr, "%s\n", err.msg);
            mismatched++;
            continue;
        }
        const DecodeMethod ms[] = {DM_SD, DM_PMIN, DM_SPECDECPP};
        for (int m = 0; m < 3; m++) {
            cfg.method = ms[m];
            cfg.gamma = 2 + i % 5;
            cfg.p_min = 0.3;
            if (decoder_run(f->dec, &cfg, prompt, 4, rng, &o, &err) || o.n_tokens != ref.n_tokens ||
                memcmp(o.tokens, ref.tokens, (size_t)ref.n_tokens * sizeof *o.tokens) != 0)
                mismatched++;
            decode_output_free(&o);
        }
        decode_output_free(&ref);
    }
    gsl_rng_free(rng);
    check(mismatched == 0, "greedy sd/pmin/specdecpp == greedy ar on %d prompts x 24 tokens (%d mismatches)", prompts,
          mismatched);
}

/* pmin and bild test the draft's confidence on its plain softmax (temperature 1, nothing cut), not on
 * the decoding distribution: under greedy decoding that one is one-hot, so its top probability is
 * always 1 and pmin would equal sd, bild draft-only (issue 25). Each bild decision is checked against
 * the top probability of the plain softmax of the draft's logits, computed here from a session of
 * its own; pmin must stop drafting early somewhere and stay equal to ar. */
static void test_confidence(Fixture *f) {
    SpErr err = {{0}};
    gsl_rng *rng = sampler_rng_new(31);
    Session *s = session_new(f->draft, 64, 64, &err);
    int bild_tokens = 0, bild_wrong = 0, fallbacks = 0, kept = 0, pmin_short = 0, pmin_wrong = 0;
    for (int i = 0; i < 20 && s; i++) {
        int32_t prompt[3] = {(int32_t)((i * 5 + 1) % V_TINY), (int32_t)((i * 11 + 2) % V_TINY), 7};
        DecodeConfig cfg;
        decode_config_default(&cfg);
        cfg.sampling = (SamplerParams){0.0f, 0, 1.0f};
        cfg.max_new = 12;
        cfg.method = DM_BILD;
        cfg.alpha = 0.2;
        DecodeOutput o, ar, pm;
        if (decoder_run(f->dec, &cfg, prompt, 3, rng, &o, &err)) {
            bild_wrong++;
            continue;
        }
        int32_t seq[64];
        memcpy(seq, prompt, sizeof prompt);
        for (int k = 0; k < o.n_events; k++) {
            const float *logits;
            session_truncate(s, 0, NULL);
            seq[3 + k] = o.tokens[k];
            if (session_forward(s, seq, 3 + k, &logits, NULL, &err)) break;
            float probs[V_TINY];
            int32_t work[V_TINY];
            const SamplerParams plain = {1.0f, 0, 1.0f};
            sampler_probs(&plain, logits + (size_t)(2 + k) * V_TINY, V_TINY, probs, work, &err);
            float top = probs[sampler_argmax(probs, V_TINY)];
            bild_tokens++;
            /* the decoder fed the tokens one at a time, this session all at once: equal to float rounding */
            bild_wrong += fabsf(o.events[k].score - top) > 1e-5f || o.events[k].decision != (o.events[k].score >= cfg.alpha);
            fallbacks += o.events[k].kind == EV_TARGET_SAMPLE;
            kept += o.events[k].kind == EV_DRAFT_SAMPLE;
        }
        decode_output_free(&o);
        cfg.method = DM_AR;
        if (decoder_run(f->dec, &cfg, prompt, 3, rng, &ar, &err)) continue;
        cfg.method = DM_PMIN;
        cfg.gamma = 4;
        cfg.p_min = 0.2;
        if (decoder_run(f->dec, &cfg, prompt, 3, rng, &pm, &err) == 0) {
            pmin_wrong += pm.n_tokens != ar.n_tokens || memcmp(pm.tokens, ar.tokens, (size_t)ar.n_tokens * sizeof *ar.tokens);
            pmin_short += pm.stats.drafted < (int64_t)cfg.gamma * pm.stats.rounds;
            decode_output_free(&pm);
        }
        decode_output_free(&ar);
    }
    session_free(s);
    gsl_rng_free(rng);
    check(bild_tokens > 0 && bild_wrong == 0 && fallbacks > 0 && kept > 0,
          "greedy bild: every decision is [top of the draft's plain softmax >= alpha] (within 1e-5; %d tokens, %d wrong; "
          "%d target fallbacks, %d draft tokens kept)", bild_tokens, bild_wrong, fallbacks, kept);
    check(pmin_wrong == 0 && pmin_short > 0,
          "greedy pmin: equal to ar on every prompt (%d differ) and stops drafting early on %d of 20 prompts", pmin_wrong,
          pmin_short);
}

/* One method of each family (test_bookkeeping, test_prefill_memo), decoded by audited_config. */
static const DecodeMethod kFamilyMethods[] = {DM_AR,  DM_DRAFT, DM_SD,        DM_SPRINTER,
                                              DM_BILD, DM_PMIN, DM_SPECDECPP, DM_ORACLE_IID};
#define N_FAMILY_METHODS ((int)(sizeof kFamilyMethods / sizeof *kFamilyMethods))

/* method's defaults, max_new tokens, audited (every decision labelled), oracle rates 0.3 / 0.9. */
static DecodeConfig audited_config(DecodeMethod method, int max_new) {
    DecodeConfig cfg;
    decode_config_default(&cfg);
    cfg.method = method;
    cfg.max_new = max_new;
    cfg.audit = 1;
    cfg.eta_fp = 0.3;
    cfg.eta_tp = 0.9;
    return cfg;
}

/* Counters and events are consistent with the emitted tokens. */
static void test_bookkeeping(Fixture *f) {
    SpErr err = {{0}};
    gsl_rng *rng = sampler_rng_new(9);
    const DecodeMethod *ms = kFamilyMethods;
    for (int m = 0; m < N_FAMILY_METHODS; m++) {
        DecodeConfig cfg = audited_config(ms[m], 40);
        DecodeOutput o;
        int rc = decoder_run(f->dec, &cfg, f->prefix, f->n_prefix, rng, &o, &err);
        int ok = rc == 0 && o.n_tokens == 40 && o.n_events == 40 && o.stats.tokens == 40;
        int64_t target_events = 0;
        for (int i = 0; ok && i < o.n_events; i++) {
            ok &= o.events[i].pos == f->n_prefix + i && o.events[i].token == o.tokens[i];
            target_events += o.events[i].target_called;
            if (ms[m] == DM_SPRINTER || ms[m] == DM_ORACLE_IID) /* audit: every decision has a label */
                ok &= o.events[i].label == 0 || o.events[i].label == 1;
        }
        if (ms[m] == DM_AR) ok &= o.stats.target_forwards == 40 && o.stats.draft_forwards == 0;
        if (ms[m] == DM_DRAFT) ok &= o.stats.target_forwards == 0;
        if (ms[m] == DM_SPRINTER || ms[m] == DM_ORACLE_IID)
            ok &= o.stats.target_forwards == target_events && o.stats.audit_forwards > 0;
        check(ok, "%s: 40 tokens, events and counters consistent (target calls %lld, accepted %lld)",
              decode_method_name(ms[m]), rc == 0 ? (long long)o.stats.target_forwards : -1LL,
              rc == 0 ? (long long)o.stats.accepted : -1LL);
        if (rc == 0) decode_output_free(&o);
    }
    gsl_rng_free(rng);
}

/* Two decodes are the same decode: every token, every event field (floats bit for bit) and every count
 * (timings aside). */
static int same_decode(const DecodeOutput *a, const DecodeOutput *b) {
    if (a->n_tokens != b->n_tokens || a->n_events != b->n_events ||
        memcmp(a->tokens, b->tokens, (size_t)a->n_tokens * sizeof *a->tokens))
        return 0;
    for (int i = 0; i < a->n_events; i++) {
        const TokenEvent *x = &a->events[i], *y = &b->events[i];
        float fx[5] = {x->q, x->p, x->score, x->q_raw, x->p_raw}, fy[5] = {y->q, y->p, y->score, y->q_raw, y->p_raw};
        if (x->pos != y->pos || x->token != y->token || x->draft_token != y->draft_token || memcmp(fx, fy, sizeof fx) ||
            x->decision != y->decision || x->label != y->label || x->target_called != y->target_called ||
            x->kind != y->kind || x->capped != y->capped)
            return 0;
    }
    const DecodeStats *u = &a->stats, *v = &b->stats;
    return u->tokens == v->tokens && u->draft_forwards == v->draft_forwards && u->draft_tokens == v->draft_tokens &&
           u->target_forwards == v->target_forwards && u->target_tokens == v->target_tokens &&
           u->audit_forwards == v->audit_forwards && u->audit_tokens == v->audit_tokens &&
           u->verifier_evals == v->verifier_evals && u->drafted == v->drafted && u->accepted == v->accepted &&
           u->rounds == v->rounds && u->rejected == v->rejected && u->flops_draft == v->flops_draft &&
           u->flops_target == v->flops_target && u->flops_verifier == v->flops_verifier;
}

/* The prefill memo (prefill_memo.h): for every method family, at temperature 1 with audits, a decode
 * whose lanes' first calls are loaded from the memo is the decode without it, on the decoder that filled
 * the memo and on another decoder of a different context (its caches laid out at another stride). A call
 * is kept at its second making: the first method's first two decodes load nothing, later decodes load
 * calls (hits), and a memo whose budget holds nothing keeps nothing. */
static void test_prefill_memo(Fixture *f, const Verifier *ver) {
    SpErr err = {{0}};
    const DecodeMethod *ms = kFamilyMethods;
    Decoder *other = decoder_new(f->draft, f->target, ver, 48, &err);
    PrefillMemo *memo = prefill_memo_new((size_t)64 << 20), *none = prefill_memo_new(0);
    check(other && memo && none, "prefill memo: setup (%s)", err.msg);
    for (int m = 0; other && memo && none && m < N_FAMILY_METHODS; m++) {
        DecodeConfig cfg = audited_config(ms[m], 24);
        DecodeOutput plain, seen, kept, loaded, elsewhere, unkept;
        Decoder *decs[6] = {f->dec, f->dec, f->dec, f->dec, other, f->dec};
        PrefillMemo *memos[6] = {NULL, memo, memo, memo, memo, none};
        DecodeOutput *outs[6] = {&plain, &seen, &kept, &loaded, &elsewhere, &unkept};
        int64_t hits_first = 0, hits_before = 0, hits_after, misses, none_hits, none_misses;
        int rc = 0, done = 0; /* outs[0..done) hold decodes */
        if (m == 0) prefill_memo_counts(memo, &hits_first, &misses);
        for (; done < 6 && rc == 0; done += rc == 0) {
            if (done == 3) prefill_memo_counts(memo, &hits_before, &misses);
            gsl_rng *rng = sampler_rng_new(31 + (uint64_t)m);
            decoder_set_prefill_memo(decs[done], memos[done]);
            rc = decoder_run(decs[done], &cfg, f->prefix, f->n_prefix, rng, outs[done], &err);
            decoder_set_prefill_memo(decs[done], NULL);
            gsl_rng_free(rng);
        }
        prefill_memo_counts(memo, &hits_after, &misses);
        prefill_memo_counts(none, &none_hits, &none_misses);
        check(rc == 0 && same_decode(&plain, &seen) && same_decode(&plain, &kept) && same_decode(&plain, &loaded) &&
                  same_decode(&plain, &elsewhere) && same_decode(&plain, &unkept),
              "%s: the same decode with and without the prefill memo, on two decoders (%s)", decode_method_name(ms[m]),
              rc ? err.msg : "ok");
        check(rc == 0 && hits_after - hits_before >= 2 && none_hits == 0 && none_misses > 0,
              "%s: the third and fourth decodes loaded first calls (%lld hits), the empty budget none (%lld)",
              decode_method_name(ms[m]), (long long)(hits_after - hits_before), (long long)none_hits);
        if (m == 0) /* a call is kept at its second making: the first two decodes load nothing */
            check(rc == 0 && hits_before == hits_first, "%s: the first two decodes with the memo loaded nothing (%lld hits)",
                  decode_method_name(ms[m]), (long long)(hits_before - hits_first));
        for (int k = 0; k < done; k++) decode_output_free(outs[k]);
    }
    prefill_memo_free(memo);
    prefill_memo_free(none);
    decoder_free(other);
}

/* The verifier's two features as the decoder captures them (collect, SD with gamma 1): for every drafted
 * token k, hidden[k] is the draft's last-layer state at the drafted token and hidden_prefix[k] the state
 * at the position before it, recomputed here by a fresh forward of the committed sequence (+ the draft
 * token); both within 1e-5 of the decoder's (batched vs incremental sums differ in the last bits). */
static void test_features(Fixture *f) {
    SpErr err = {{0}};
    gsl_rng *rng = sampler_rng_new(11);
    DecodeConfig cfg;
    decode_config_default(&cfg);
    cfg.method = DM_COLLECT;
    cfg.max_new = 24;
    cfg.capture_hidden = 1;
    DecodeOutput o;
    int rc = decoder_run(f->dec, &cfg, f->prefix, f->n_prefix, rng, &o, &err);
    gsl_rng_free(rng);
    if (!check(rc == 0 && o.hidden && o.hidden_prefix, "collect run with captured features: %s", err.msg)) return;
    const int d = o.d_hidden;
    Session *s = session_new(f->draft, 64, 64, &err);
    int32_t seq[64];
    memcpy(seq, f->prefix, (size_t)f->n_prefix * sizeof *seq);
    double err_token = 0, err_prefix = 0;
    int rows = 0, resampled = 0;
    for (int k = 0; k < o.n_events && s; k++) {
        int n = f->n_prefix + k; /* committed length before event k */
        const float *H;
        session_truncate(s, 0, &err);
        seq[n] = o.events[k].draft_token;
        session_forward(s, seq, n + 1, NULL, &H, &err); /* rows n - 1 (prefix state) and n (token state) */
        for (int j = 0; j < d; j++) {
            err_prefix = fmax(err_prefix, fabs(H[(size_t)(n - 1) * d + j] - o.hidden_prefix[(size_t)k * d + j]));
            err_token = fmax(err_token, fabs(H[(size_t)n * d + j] - o.hidden[(size_t)k * d + j]));
        }
        resampled += o.events[k].kind == EV_SD_RESAMPLE;
        seq[n] = o.tokens[k];
        rows++;
    }
    check(rows == o.n_events && resampled > 0 && err_prefix < 1e-5 && err_token < 1e-5,
          "captured features == recomputed states at %d drafted tokens (%d after a resample): max |diff| prefix %.2g, "
          "token %.2g", rows, resampled, err_prefix, err_token);
    session_free(s);
    decode_output_free(&o);
}

/* decoder_run's return values: DECODE_ERR_NONFINITE for non-finite logits (fault_nan_logits stands in
 * for a NaN weight; it reads the first forward's logit 0 as NaN), -1 for any other error; after either,
 * the same decoder decodes normally again. */
static void test_nonfinite(Fixture *f) {
    gsl_rng *rng = sampler_rng_new(11);
    const DecodeMethod ms[] = {DM_AR, DM_DRAFT, DM_SD, DM_SPRINTER};
    for (int m = 0; m < 4; m++) {
        SpErr err = {{0}};
        DecodeConfig cfg;
        decode_config_default(&cfg);
        cfg.method = ms[m];
        cfg.max_new = 8;
        cfg.fault_nan_logits = 1;
        DecodeOutput o;
        int rc = decoder_run(f->dec, &cfg, f->prefix, f->n_prefix, rng, &o, &err);
        const char *model = ms[m] == DM_AR ? "target model" : "draft model";
        check(rc == DECODE_ERR_NONFINITE && strstr(err.msg, model) && strstr(err.msg, "contain NaN at index 0") &&
                  o.tokens == NULL && o.n_tokens == 0,
              "%s with NaN logits: rc %d (want %d), \"%s\"", decode_method_name(ms[m]), rc, DECODE_ERR_NONFINITE, err.msg);
        cfg.fault_nan_logits = 0;
        rc = decoder_run(f->dec, &cfg, f->prefix, 0, rng, &o, &err);
        check(rc == -1, "%s on an empty prompt: rc %d, want -1 (not a non-finite failure)", decode_method_name(ms[m]), rc);
        rc = decoder_run(f->dec, &cfg, f->prefix, f->n_prefix, rng, &o, &err);
        check(rc == 0 && o.n_tokens == 8, "%s decodes again after the failures (rc %d)", decode_method_name(ms[m]), rc);
        if (rc == 0) decode_output_free(&o);
    }
    gsl_rng_free(rng);
}

/* Learns a verifier for the fixture's models: collect (hidden, label) rows with the collect method
 * on 60 random prompts, write them in the collect format, fit with verifier_train. */
static int learned_verifier(Fixture *f, const char *work, Verifier *out) {
    SpErr err = {{0}};
    DecodeConfig cfg;
    decode_config_default(&cfg);
    cfg.method = DM_COLLECT;
    cfg.max_new = 24;
    cfg.capture_hidden = 1;
    gsl_rng *rng = sampler_rng_new(17);
    enum { P = 60, T = 24, D = 32 };
    static float hid[P * T * D];
    static int8_t lab[P * T];
    static int32_t prm[P * T];
    int64_t n = 0;
    for (int i = 0; i < P; i++) {
        int32_t prompt[3] = {(int32_t)gsl_rng_uniform_int(rng, V_TINY), (int32_t)gsl_rng_uniform_int(rng, V_TINY),
                             (int32_t)gsl_rng_uniform_int(rng, V_TINY)};
        DecodeOutput o;
        if (decoder_run(f->dec, &cfg, prompt, 3, rng, &o, &err)) break;
        for (int k = 0; k < o.n_events; k++) {
            memcpy(hid + n * D, o.hidden + (size_t)k * D, sizeof(float) * D);
            lab[n] = o.events[k].label;
            prm[n++] = i;
        }
        decode_output_free(&o);
    }
    gsl_rng_free(rng);
    char path[1024], vpath[1024];
    snprintf(path, sizeof path, "%s/collect.h5", work);
    snprintf(vpath, sizeof vpath, "%s/verifier.safetensors", work);
    H5ColSpec cols[] = {{"hidden", H5C_F32, D, NULL, NULL}, {"label", H5C_I8, 1, NULL, NULL},
                        {"prompt_index", H5C_I32, 1, NULL, NULL}};
    const void *data[] = {hid, lab, prm};
    H5Table t;
    TrainSpec ts;
    train_spec_default(&ts);
    VerifierMetrics m;
    if (h5t_create(&t, path, cols, 3, 256, &err) || h5t_append(&t, n, data, &err) ||
        h5t_attr_str(&t, "format", "sprinter-collect", &err) || h5t_attr_f64(&t, "lambda", 1.0, &err) ||
        h5t_attr_str(&t, "draft_sha256", "test", &err) || h5t_commit(&t, &err) ||
        verifier_train(path, &ts, vpath, &m, &err) || verifier_load(vpath, out, &err)) {
        fprintf(stderr, "learned verifier: %s\n", err.msg);
        return -1;
    }
    printf("learned verifier on %lld rows: validation AUC %.3f, eta_TP %.3f, eta_FP %.3f at tau 0.5\n", (long long)n,
           m.val_auc, m.eta_tp, m.eta_fp);
    return 0;
}

/* oracle-markov keeps its marginal rates but correlates consecutive decisions within a class;
 * oracle-iid does not. Measured on the decision sequence of unacceptable tokens over many runs. */
static void test_markov(Fixture *f) {
    SpErr err = {{0}};
    gsl_rng *rng = sampler_rng_new(21);
    for (int markov = 0; markov < 2; markov++) {
        DecodeConfig cfg;
        decode_config_default(&cfg);
        cfg.method = markov ? DM_ORACLE_MARKOV : DM_ORACLE_IID;
        cfg.eta_fp = 0.4;
        cfg.eta_tp = 0.9;
        cfg.oracle_stay = 0.8;
        cfg.max_new = 48;
        long n = 0, acc = 0, pairs = 0, same = 0;
        for (int i = 0; i < 150; i++) {
            int32_t prompt[2] = {(int32_t)(i % V_TINY), (int32_t)((i * 11 + 7) % V_TINY)};
            DecodeOutput o;
            if (decoder_run(f->dec, &cfg, prompt, 2, rng, &o, &err)) break;
            int prev = -1;
            for (int k = 0; k < o.n_events; k++) {
                const TokenEvent *e = &o.events[k];
                if (e->label != 0 || e->decision < 0) continue;
                n++, acc += e->decision;
                if (prev >= 0) pairs++, same += e->decision == prev;
                prev = e->decision;
            }
            decode_output_free(&o);
        }
        double rate = (double)acc / (double)n, agree = (double)same / (double)pairs;
        /* i.i.d.: P(same) = r^2 + (1-r)^2 = 0.52 at r = 0.4; Markov(0.8): 0.8 + 0.2 * 0.52 = 0.904 */
        double want = markov ? 0.8 + 0.2 * 0.52 : 0.52;
        check_close(rate, 0.4, 0.04, 0, "%s: eta_FP measured (set 0.4)", decode_method_name(cfg.method));
        check_close(agree, want, 0.05, 0, "%s: consecutive-decision agreement (%ld pairs)",
                    decode_method_name(cfg.method), pairs);
    }
    gsl_rng_free(rng);
}

/* The greedy next token of model m after seq[0..n) by a fresh forward of the whole sequence. */
static int32_t greedy_next(Model *m, const int32_t *seq, int n) {
    SpErr err = {{0}};
    const float *L;
    Session *s = session_new(m, 64, 64, &err);
    int32_t best = -1;
    if (s && session_forward(s, seq, n, &L, NULL, &err) == 0) {
        const float *row = L + (size_t)(n - 1) * V_TINY;
        best = 0;
        for (int v = 1; v < V_TINY; v++)
            if (row[v] > row[best]) best = v;
    }
    session_free(s);
    return best;
}

/* The plain softmax (T = 1) of model m's logits after seq[0..n) at token x, and the greedy token. */
static double raw_prob_at(Model *m, const int32_t *seq, int n, int32_t x, int32_t *greedy) {
    SpErr err = {{0}};
    const float *L;
    Session *s = session_new(m, 64, 64, &err);
    double px = NAN;
    if (s && session_forward(s, seq, n, &L, NULL, &err) == 0) {
        const float *row = L + (size_t)(n - 1) * V_TINY;
        *greedy = 0;
        for (int v = 1; v < V_TINY; v++)
            if (row[v] > row[*greedy]) *greedy = v;
        double mx = row[*greedy], z = 0;
        for (int v = 0; v < V_TINY; v++) z += exp((double)row[v] - mx);
        px = exp((double)row[x] - mx) / z;
    }
    session_free(s);
    return px;
}

/* The authors' label rule in collection (dataset.py), by hand on full forwards: x = the draft's greedy
 * token, label = [q(x) <= lambda p(x)] with q, p the plain softmax of the raw logits, and the context
 * goes on with x when the label is 1, else with the target's greedy token. The decoder's collect under
 * label_rule paper-code (temperature 0) must give the same tokens and labels; a label of the sound rule
 * (one-hot q, p at temperature 0: "target argmax == x") differs somewhere, so the check can fail. */
static void test_paper_code_labels(Fixture *f) {
    SpErr err = {{0}};
    int cases = 0, agree = 0, rule_matters = 0;
    for (int pr = 0; pr < 6; pr++) {
        int32_t prompt[3] = {(int32_t)(3 + 13 * pr), 29, (int32_t)(7 + pr)};
        const double lambda = pr % 2 ? 1.0 : 1.5;
        DecodeConfig cfg;
        decode_config_default(&cfg);
        cfg.method = DM_COLLECT;
        cfg.sampling = (SamplerParams){0.0f, 0, 1.0f};
        cfg.max_new = 20;
        cfg.lambda = lambda;
        cfg.label_rule = PROTOCOL_PAPER_CODE;
        gsl_rng *rng = sampler_rng_new(1);
        DecodeOutput o;
        int rc = decoder_run(f->dec, &cfg, prompt, 3, rng, &o, &err);
        gsl_rng_free(rng);
        cases++;
        if (rc) {
            fprintf(stderr, "paper-code collect: %s\n", err.msg);
            continue;
        }
        int32_t seq[64];
        memcpy(seq, prompt, sizeof prompt);
        int n = 3, ok = o.n_events == 20;
        for (int k = 0; ok && k < o.n_events; k++) {
            int32_t x = -1, target_greedy = -1, unused = -1;
            raw_prob_at(f->draft, seq, n, 0, &x); /* the draft's greedy token */
            double q = raw_prob_at(f->draft, seq, n, x, &unused), p = raw_prob_at(f->target, seq, n, x, &target_greedy);
            int label = q <= lambda * p;
            int32_t next = label ? x : target_greedy;
            ok &= o.events[k].draft_token == x && o.events[k].label == label && o.tokens[k] == next;
            rule_matters += label != (target_greedy == x);
            seq[n++] = next;
        }
        agree += ok;
        decode_output_free(&o);
    }
    check(agree == cases && rule_matters > 0,
          "collect under the authors' label rule == dataset.py by hand in %d/%d prompts x 20 tokens (tokens, labels); "
          "the rule decides differently from target-argmax agreement at %d tokens", agree, cases, rule_matters);
}

/* The authors' sprinter.py loop, written out step by step on full forwards: draft greedily until a
 * decision is 0 or 20 tokens were drafted; the target's greedy token at the LAST draft's position
 * decides it alone (earlier drafts are kept unchecked); equal -> keep all and add the target's next
 * greedy token (bonus), else keep all but the last and add the target's token; repeat while fewer
 * than max_new tokens were generated. Returns the token count; *rounds, *kept as in DecodeStats. */
static int paper_code_by_hand(Fixture *f, Model *target, const int32_t *prompt, int n_prompt, int max_new,
                              const int8_t *decisions, int n_decisions, int32_t *out, int64_t *rounds,
                              int64_t *kept) {
    int32_t seq[128];
    memcpy(seq, prompt, (size_t)n_prompt * sizeof *seq);
    int n = n_prompt, k = 0;
    *rounds = *kept = 0;
    while (n - n_prompt < max_new) {
        int drafted = 0;
        for (;;) {
            seq[n + drafted] = greedy_next(f->draft, seq, n + drafted);
            drafted++;
            int accept = k < n_decisions ? decisions[k] : 0;
            k++;
            if (!accept || drafted == 20) break;
        }
        int32_t last = seq[n + drafted - 1];
        int32_t y = greedy_next(target, seq, n + drafted - 1);
        (*rounds)++;
        if (y == last) {
            n += drafted;
            seq[n] = greedy_next(target, seq, n);
            n++;
            *kept += drafted;
        } else {
            n += drafted - 1;
            seq[n++] = y;
            *kept += drafted - 1;
        }
    }
    memcpy(out, seq + n_prompt, (size_t)(n - n_prompt) * sizeof *out);
    return n - n_prompt;
}

/* The paper-code round (bonus, finish_round, max_run 19, greedy) against the hand computation above,
 * with scripted verifier decisions: emitted tokens, target calls, rounds and kept drafts must agree
 * exactly. Draft and target differ (the last draft mostly fails: resample branch) or are the same
 * model (it always passes: bonus branch); the scripts include a run of 25 accepts (the 20-draft cap)
 * and end rounds past max_new (overshoot). */
static void test_paper_code_round(Fixture *f, const Verifier *ver) {
    SpErr err = {{0}};
    int8_t script[3][64];
    for (int i = 0; i < 64; i++) {
        script[0][i] = (int8_t)(i % 3 != 2);                 /* accept, accept, reject, ... */
        script[1][i] = (int8_t)(i >= 4 && i < 29 ? 1 : i % 2); /* 25 accepts in a row: the cap */
        script[2][i] = (int8_t)(i < 17 || (i >= 18 && i < 40)); /* a capped round crossing max_new */
    }
    int cases = 0, agree = 0, overshoot = 0, capped = 0, bonus = 0, resampled = 0;
    Decoder *same = decoder_new(f->draft, f->draft, ver, 64, &err);
    if (!same) fprintf(stderr, "paper-code decoder: %s\n", err.msg);
    for (int pair = 0; pair < 2 && same; pair++) {
        Decoder *dec = pair == 0 ? f->dec : same;
        Model *target = pair == 0 ? f->target : f->draft;
        for (int sc = 0; sc < 3; sc++)
            for (int pr = 0; pr < 4; pr++) {
                int32_t prompt[3] = {(int32_t)(5 + 11 * pr), 17, (int32_t)(42 + pr)};
                DecodeConfig cfg;
                decode_config_default(&cfg);
                cfg.method = DM_SPRINTER;
                cfg.sampling = (SamplerParams){0.0f, 0, 1.0f};
                cfg.max_new = 20;
                cfg.max_run = 19;
                cfg.bonus = 1;
                cfg.finish_round = 1;
                DecisionScript decisions = {script[sc], 64};
                int32_t want[128];
                int64_t rounds, kept;
                int n_want = paper_code_by_hand(f, target, prompt, 3, 20, script[sc], 64, want, &rounds, &kept);
                gsl_rng *rng = sampler_rng_new(3);
                DecodeOutput o;
                int rc = decoder_run_scripted(dec, &cfg, &decisions, prompt, 3, rng, &o, &err);
                gsl_rng_free(rng);
                cases++;
                if (rc) {
                    fprintf(stderr, "paper-code run: %s\n", err.msg);
                    continue;
                }
                int ok = o.n_tokens == n_want && !memcmp(o.tokens, want, (size_t)n_want * sizeof *want) &&
                         o.stats.target_forwards == rounds && o.stats.rounds == rounds && o.stats.round_kept == kept;
                if (!ok)
                    fprintf(stderr, "paper-code pair %d script %d prompt %d: tokens %d/%d, target calls %lld/%lld, "
                            "kept %lld/%lld\n", pair, sc, pr, o.n_tokens, n_want, (long long)o.stats.target_forwards,
                            (long long)rounds, (long long)o.stats.round_kept, (long long)kept);
                agree += ok;
                overshoot += o.n_tokens > 20;
                for (int i = 0; i < o.n_events; i++) {
                    capped += o.events[i].capped;
                    bonus += o.events[i].kind == EV_BONUS;
                    resampled += o.events[i].kind == EV_SD_RESAMPLE;
                }
                decode_output_free(&o);
            }
    }
    decoder_free(same);
    check(cases == 24 && agree == cases && overshoot > 0 && capped > 0 && bonus > 0 && resampled > 0,
          "paper-code round == the authors' loop by hand in %d/%d cases (tokens, target calls, rounds, kept drafts); "
          "covered: %d outputs past max_new, %d capped rounds, %d bonus and %d resampled tokens", agree, cases,
          overshoot, capped, bonus, resampled);
    /* the switch is checked: finish_round without a cap cannot end */
    DecodeConfig bad;
    decode_config_default(&bad);
    bad.method = DM_SPRINTER;
    bad.finish_round = 1;
    check(decode_config_check(&bad, &err) != 0 && strstr(err.msg, "max_run"), "finish_round with max_run 0 refused: %s",
          err.msg);
}

int main(int argc, char **argv) {
    /* PART: laws (test_laws at both sampling settings), lossy (test_lossy_laws at both), rest (every
     * other check, at the second setting), or all (default): CTest runs the three as three tests, side
     * by side (each check runs in exactly one part, with the same fixture and seeds as in all) */
    const char *part = argc >= 3 ? argv[2] : "all";
    int all = !strcmp(part, "all"), part_laws = all || !strcmp(part, "laws");
    int part_lossy = all || !strcmp(part, "lossy"), part_rest = all || !strcmp(part, "rest");
    if (argc < 2 || (!part_laws && !part_lossy && !part_rest)) {
        fprintf(stderr, "usage: test_decoding WORKDIR [laws|lossy|rest|all]\n");
        return 2;
    }
    char dd[1024], td[1024];
    SpErr merr;
    if (sp_mkdir_p(argv[1], &merr)) {
        fprintf(stderr, "%s\n", merr.msg);
        return 1;
    }
    snprintf(dd, sizeof dd, "%s/draft", argv[1]);
    snprintf(td, sizeof td, "%s/target", argv[1]);
    /* peaky random models (larger init) so p and q differ clearly */
    if (make_model("gpt2", dd, 32, 2, 0.2, 101) || make_model("gpt2", td, 48, 3, 0.2, 202)) return 1;
    SpErr err = {{0}};
    Fixture f = {0};
    f.draft = model_load(dd, &err);
    f.target = model_load(td, &err);
    /* the decoder reads the verifier through this pointer: learned below, before any sprinter run */
    Verifier ver = {.d = 32, .w = NULL, .b = 0.0f, .lambda = 1.0, .feature = VF_TOKEN};
    f.dec = f.draft && f.target ? decoder_new(f.draft, f.target, &ver, 64, &err) : NULL;
    if (!f.dec) {
        fprintf(stderr, "setup: %s\n", err.msg);
        return 1;
    }
    if (learned_verifier(&f, argv[1], &ver)) return 1;
    f.prefix[0] = 5, f.prefix[1] = 17, f.prefix[2] = 42;
    f.n_prefix = 3;
    f.sp = (SamplerParams){1.0f, 0, 1.0f};
    dists(&f);
    if (part_laws) test_laws(&f, &ver, 1);
    if (part_lossy) test_lossy_laws(&f, 1);
    /* a second sampling setting: temperature 0.8 with top-k 30 */
    f.sp = (SamplerParams){0.8f, 30, 1.0f};
    dists(&f);
    if (part_laws) test_laws(&f, &ver, 0);
    if (part_lossy) test_lossy_laws(&f, 0);
    if (part_rest) {
        test_greedy(&f);
        test_confidence(&f);
        test_lossy_limits(&f);
        test_bookkeeping(&f);
        test_prefill_memo(&f, &ver);
        test_features(&f);
        test_nonfinite(&f);
        test_markov(&f);
        test_paper_code_round(&f, &ver);
        test_paper_code_labels(&f);
    }
    decoder_free(f.dec);
    model_free(f.draft);
    model_free(f.target);
    verifier_free(&ver);
    return check_summary("decoding");
}
