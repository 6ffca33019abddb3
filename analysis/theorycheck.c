/* theorycheck.c - Thm 3.1 / 3.3 / 3.4 checks of one verifier run (see theorycheck.h). */
#include "theorycheck.h"

#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "stats.h"

const char *tq_name(int q) {
    static const char *const n[TQ_N] = {"Thm3.3 E[min(N,c)]", "Thm3.4 E[T]",  "Thm3.3 P(N=0)", "Thm3.3 KM E[min(N,H)]",
                                        "Thm3.1 d_TV(p,p_S)", "eta_FP",       "eta_TP",
                                        "Thm3.3 false accepts/block", "Thm3.4 tokens/target call"};
    return q >= 0 && q < TQ_N ? n[q] : "?";
}

const char *tc_model_name(int m) { return m == TC_IID ? "iid" : m == TC_PAPER ? "paper" : "?"; }

/* Scratch arrays sized for one run, reused by every bootstrap replicate. */
typedef struct Work {
    int kmax, horizon;
    int *t;
    int8_t *ev;
    double *bw, *S[TC_MODELS], *F[TC_MODELS], *S_km, *S_r, *r_weight, *obs, *exp;
} Work;

static void work_free(Work *w) {
    free(w->t), free(w->ev), free(w->bw), free(w->S[0]), free(w->S[1]), free(w->F[0]), free(w->F[1]);
    free(w->S_km), free(w->S_r);
    free(w->r_weight), free(w->obs), free(w->exp);
    memset(w, 0, sizeof *w);
}

static int work_alloc(Work *w, const VerSeq *v) {
    memset(w, 0, sizeof *w);
    w->kmax = v->max_new;
    w->horizon = v->max_run > 0 && v->max_run < v->max_new ? v->max_run : v->max_new - 1;
    size_t nb = (size_t)(v->n_blk ? v->n_blk : 1), nk = (size_t)w->kmax + 1;
    w->t = malloc(nb * sizeof *w->t);
    w->ev = malloc(nb);
    w->bw = malloc(nb * sizeof *w->bw);
    double **d[] = {&w->S[0], &w->S[1], &w->F[0], &w->F[1], &w->S_km, &w->S_r, &w->r_weight, &w->obs, &w->exp};
    int ok = w->t && w->ev && w->bw;
    for (size_t i = 0; i < sizeof d / sizeof *d; i++) ok &= (*d[i] = calloc(nk, sizeof **d[i])) != NULL;
    if (!ok) work_free(w);
    return ok ? 0 : -1;
}

static double wt(const double *w, int prompt) { return w ? w[prompt] : 1.0; }

static int block_cap(const VerSeq *v, const VBlock *b) {
    return v->max_run > 0 && v->max_run < b->left ? v->max_run : b->left;
}

/* eta, the label chain and the Thm 3.1 sums from the labelled decisions. */
static void est_counts(const VerSeq *v, const double *w, RunEst *e) {
    double first[2] = {0, 0}, tr[2][2] = {{0, 0}, {0, 0}}, nd = 0, s_ps = 0, s_pq = 0;
    e->npos = e->nneg = e->tp = e->fp = 0;
    for (int b = 0; b < v->n_blk; b++) {
        const VBlock *B = &v->blk[b];
        double ww = wt(w, B->prompt);
        if (ww == 0) continue;
        const VDecision *d = &v->dec[B->first];
        if (d[0].label >= 0) first[d[0].label] += ww;
        for (int j = 0; j < B->n_dec; j++) {
            if (d[j].label == 1) e->npos += ww, e->tp += ww * d[j].decision;
            if (d[j].label == 0) e->nneg += ww, e->fp += ww * d[j].decision;
            if (j > 0 && d[j].label >= 0 && d[j - 1].label >= 0) tr[d[j - 1].label][d[j].label] += ww;
            if (!isnan(d[j].ratio) && d[j].ratio > 0) {
                double ex = d[j].ratio > 1 ? 1 - 1 / d[j].ratio : 0; /* (1 - p/q)^+, ratio = q/p */
                nd += ww, s_pq += ww * ex, s_ps += ww * ex * d[j].decision;
            }
        }
    }
    e->eta_tp = e->npos > 0 ? e->tp / e->npos : NAN;
    e->eta_fp = e->nneg > 0 ? e->fp / e->nneg : NAN;
    e->meas[TQ_ETA_FP] = e->eta_fp, e->meas[TQ_ETA_TP] = e->eta_tp;
    double f = first[0] + first[1], t1 = tr[1][0] + tr[1][1], t0 = tr[0][0] + tr[0][1];
    e->chain.pi1 = f > 0 ? first[1] / f : NAN;
    e->chain.t11 = t1 > 0 ? tr[1][1] / t1 : e->chain.pi1;
    e->chain.t01 = t0 > 0 ? tr[0][1] / t0 : e->chain.pi1;
    e->fallback = (t1 > 0 ? 0u : TC_FB_T11) | (t0 > 0 ? 0u : TC_FB_T01) | (e->npos > 0 ? 0u : TC_FB_ETA_TP) |
                  (e->nneg > 0 ? 0u : TC_FB_ETA_FP);
    e->dtv_pq = nd > 0 ? s_pq / nd : NAN;
    e->meas[TQ_DTV] = nd > 0 ? s_ps / nd : NAN;
}

void tc_fallback_text(unsigned fallback, char *buf, size_t cap) {
    static const struct {
        unsigned bit;
        const char *text;
    } kText[] = {{TC_FB_T11, "t11 = pi1 (no transition from an acceptable label observed)"},
                 {TC_FB_T01, "t01 = pi1 (no transition from an unacceptable label observed)"},
                 {TC_FB_ETA_TP, "eta_TP = 0 in the predictions (no acceptable labelled decision)"},
                 {TC_FB_ETA_FP, "eta_FP = 0 in the predictions (no unacceptable labelled decision)"}};
    size_t w = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < sizeof kText / sizeof *kText && w < cap; i++)
        if (fallback & kText[i].bit) w += (size_t)snprintf(buf + w, cap - w, "%s%s", w ? "; " : "", kText[i].text);
}

/* Kaplan-Meier estimate of P(N >= k), k = 0..kmax (uncapped law) into W->S_km. */
static void km_of_n(const VerSeq *v, const double *w, Work *W) {
    for (int b = 0; b < v->n_blk; b++) {
        const VBlock *B = &v->blk[b];
        W->t[b] = B->n;
        W->ev[b] = (int8_t)(B->ended && !B->run_cap); /* a reject ended it: N observed exactly */
        W->bw[b] = wt(w, B->prompt);
    }
    km_discrete(W->t, W->ev, W->bw, (size_t)v->n_blk, W->kmax, W->S_km);
}

/* Distribution of r (leading acceptable run) by Kaplan-Meier: r = j - 1 at the first unacceptable
 * label j; censored at the count of leading acceptable labels otherwise. */
static void r_weights(const VerSeq *v, const double *w, Work *W) {
    for (int b = 0; b < v->n_blk; b++) {
        const VBlock *B = &v->blk[b];
        const VDecision *d = &v->dec[B->first];
        int j = 0;
        while (j < B->n_dec && d[j].label == 1) j++;
        W->t[b] = j;
        W->ev[b] = (int8_t)(j < B->n_dec && d[j].label == 0);
        W->bw[b] = wt(w, B->prompt);
    }
    km_discrete(W->t, W->ev, W->bw, (size_t)v->n_blk, W->kmax, W->S_r);
    for (int r = 0; r < W->kmax; r++) W->r_weight[r] = W->S_r[r] - W->S_r[r + 1];
    W->r_weight[W->kmax] = W->S_r[W->kmax]; /* r >= kmax: acceptable beyond every cap */
}

/* False accepts of a block: its accepted tokens (the first n decisions) with an unacceptable label. */
static int block_false_accepts(const VerSeq *v, const VBlock *B) {
    int fa = 0;
    for (int j = 0; j < B->n; j++) fa += v->dec[B->first + j].label == 0;
    return fa;
}

static void est_measured(const VerSeq *v, const double *w, const Work *W, RunEst *e) {
    double nb = 0, sn = 0, st = 0, n0 = 0, sfa = 0, sb = 0;
    for (int b = 0; b < v->n_blk; b++) {
        const VBlock *B = &v->blk[b];
        double ww = wt(w, B->prompt);
        if (B->eos_cut || ww == 0) continue;
        nb += ww, sn += ww * B->n, st += ww * B->n_dec, n0 += ww * (B->n == 0);
        sfa += ww * block_false_accepts(v, B), sb += ww * B->bonus;
    }
    e->blocks = nb;
    e->bonus_rate = nb > 0 ? sb / nb : NAN;
    e->meas[TQ_MEAN_N] = nb > 0 ? sn / nb : NAN;
    e->meas[TQ_MEAN_T] = nb > 0 ? st / nb : NAN;
    e->meas[TQ_FA] = nb > 0 ? sfa / nb : NAN;
    e->meas[TQ_TOKENS] = nb > 0 ? (st + sb) / nb : NAN;
    e->meas[TQ_P_N0] = nb > 0 ? n0 / nb : NAN;
    e->meas[TQ_KM] = tail_capped_mean(W->S_km, W->horizon);
}

/* Predictions of one model from its tail S and false-accept terms F (theory.h): per-block caps,
 * weights w. */
static void predict(const VerSeq *v, const double *w, const double *S, const double *F, const Work *W, double shift,
                    const RunEst *e, double *pred) {
    double nb = 0, sn = 0, st = 0, sfa = 0;
    for (int b = 0; b < v->n_blk; b++) {
        const VBlock *B = &v->blk[b];
        double ww = wt(w, B->prompt);
        if (B->eos_cut || ww == 0) continue;
        int c = block_cap(v, B) < W->kmax ? block_cap(v, B) : W->kmax;
        nb += ww, sn += ww * tail_capped_mean(S, c), st += ww * thm34_block_steps(S, W->kmax, v->max_run, B->left);
        sfa += ww * tail_capped_mean(F, c); /* sum_{k<=c} P(N >= k, L_k = 0) */
    }
    pred[TQ_MEAN_N] = nb > 0 ? sn / nb + shift : NAN;
    pred[TQ_MEAN_T] = nb > 0 ? st / nb + shift : NAN;
    pred[TQ_FA] = nb > 0 ? sfa / nb : NAN;
    pred[TQ_TOKENS] = nb > 0 ? st / nb + shift + e->bonus_rate : NAN; /* E[T] + the measured E[B] */
    pred[TQ_P_N0] = 1 - S[1];
    pred[TQ_KM] = tail_capped_mean(S, W->horizon) + shift;
    pred[TQ_DTV] = e->eta_fp * e->dtv_pq;
    pred[TQ_ETA_FP] = pred[TQ_ETA_TP] = NAN;
}

/* Everything for prompt weights w (NULL: the data as they are). */
static void estimate(const VerSeq *v, const double *w, double shift, Work *W, RunEst *e) {
    est_counts(v, w, e);
    km_of_n(v, w, W);
    r_weights(v, w, W);
    est_measured(v, w, W, e);
    double etp = isnan(e->eta_tp) ? 0 : e->eta_tp, efp = isnan(e->eta_fp) ? 0 : e->eta_fp;
    LabelChain ch = e->chain;
    if (isnan(ch.pi1)) ch = (LabelChain){0, 0, 0};
    thm33_chain_tail(etp, efp, &ch, W->kmax, W->S[TC_IID]);
    thm33_chain_fa(etp, efp, &ch, W->kmax, W->F[TC_IID]);
    thm33_mix_tail(etp, efp, W->r_weight, W->kmax, W->kmax, W->S[TC_PAPER]);
    thm33_mix_fa(etp, efp, W->r_weight, W->kmax, W->kmax, W->F[TC_PAPER]);
    for (int m = 0; m < TC_MODELS; m++) predict(v, w, W->S[m], W->F[m], W, shift, e, e->pred[m]);
}

/* Chi-square fit of the counts of min(N, c_b) to the model with tail S. */
static void goodness_of_fit(const VerSeq *v, const double *S, Work *W, double *obs, double *exp, TcResult *r, int m) {
    int K = W->kmax;
    memset(obs, 0, (size_t)(K + 1) * sizeof *obs);
    memset(exp, 0, (size_t)(K + 1) * sizeof *exp);
    for (int b = 0; b < v->n_blk; b++) {
        const VBlock *B = &v->blk[b];
        if (B->eos_cut) continue;
        int c = block_cap(v, B) < K ? block_cap(v, B) : K;
        obs[B->n < K ? B->n : K] += 1;
        for (int y = 0; y < c; y++) exp[y] += S[y] - S[y + 1];
        exp[c] += S[c];
    }
    TestResult g = chisq_gof(obs, exp, K + 1, 5.0, 0);
    r->gof_stat[m] = g.statistic, r->gof_p[m] = g.p_value, r->gof_df[m] = g.df;
}

/* E[N] (fa = 0) or E[FA] (fa = 1) without caps: the terms summed until they are negligible. */
static double uncapped_chain(double eta_tp, double eta_fp, const LabelChain *c, int fa) {
    double f1 = c->pi1 * eta_tp, f0 = (1 - c->pi1) * eta_fp, s = 0;
    for (long k = 1; k <= 10000000 && f1 + f0 > 1e-13; k++) {
        s += fa ? f0 : f1 + f0;
        double n1 = (f1 * c->t11 + f0 * c->t01) * eta_tp, n0 = (f1 * (1 - c->t11) + f0 * (1 - c->t01)) * eta_fp;
        f1 = n1, f0 = n0;
    }
    return s;
}

/* E_r[eta_TP^r eta_FP / (1 - eta_FP)] over r ~ weight[0..max_r]. */
static double overshoot_mix(double eta_tp, double eta_fp, const double *weight, int max_r) {
    double s = 0, w = 0;
    for (int r = 0; r <= max_r; r++)
        if (weight[r] > 0) s += weight[r] * thm33_overshoot(eta_tp, eta_fp, r), w += weight[r];
    return w > 0 ? s / w : NAN;
}

/* The design curves (TD_*) at eta_FP = j / TC_DESIGN under the paper's model with the run's r law
 * and eta_TP (W->r_weight of the full data); reuses W->S[TC_PAPER] and W->F[TC_PAPER] as scratch. */
static void design_curves(const VerSeq *v, Work *W, double eta_tp, TcResult *r) {
    RunEst e = {.bonus_rate = 0};
    for (int j = 0; j < TC_DESIGN; j++) {
        double eta = (double)j / TC_DESIGN;
        thm33_mix_tail(eta_tp, eta, W->r_weight, W->kmax, W->kmax, W->S[TC_PAPER]);
        thm33_mix_fa(eta_tp, eta, W->r_weight, W->kmax, W->kmax, W->F[TC_PAPER]);
        predict(v, NULL, W->S[TC_PAPER], W->F[TC_PAPER], W, 0, &e, e.pred[TC_PAPER]);
        r->design[TD_EN][j] = e.pred[TC_PAPER][TQ_MEAN_N];
        r->design[TD_T][j] = e.pred[TC_PAPER][TQ_MEAN_T];
        r->design[TD_FA][j] = e.pred[TC_PAPER][TQ_FA];
        r->design[TD_EN_UNCAPPED][j] = thm33_expected_n_mix(eta_tp, eta, W->r_weight, W->kmax, 0);
        r->design[TD_FA_UNCAPPED][j] = overshoot_mix(eta_tp, eta, W->r_weight, W->kmax);
    }
}

static double sd_skip_nan(const double *x, int n, int stride) {
    double m = 0, s = 0;
    int k = 0;
    for (int i = 0; i < n; i++)
        if (!isnan(x[i * stride])) m += x[i * stride], k++;
    if (k < 2) return NAN;
    m /= k;
    for (int i = 0; i < n; i++)
        if (!isnan(x[i * stride])) s += (x[i * stride] - m) * (x[i * stride] - m);
    return sqrt(s / (k - 1));
}

/* Variance of the mean of the per-block indicators "a target call ends the block" under the model:
 * sum_b P_b (1 - P_b) / n^2 with P_b = P(N < left_b) (1 when max_run < left_b). The indicator is 1
 * except for the last block of a prompt, so the data rarely show its variation and a bootstrap over
 * prompts misses it; Thm 3.4's check adds it to the bootstrap variance. */
static double call_variance(const VerSeq *v, const double *S, int kmax) {
    double s = 0, nb = 0;
    for (int b = 0; b < v->n_blk; b++) {
        const VBlock *B = &v->blk[b];
        if (B->eos_cut) continue;
        nb += 1;
        if (v->max_run > 0 && v->max_run < B->left) continue;
        double p = S[B->left < kmax ? B->left : kmax]; /* P(N >= left): the generation ends the block */
        s += p * (1 - p);
    }
    return nb > 0 ? s / (nb * nb) : 0;
}

/* Bootstrap over prompts: standard errors of measured values and of measured - predicted. */
static int bootstrap(const VerSeq *v, const TcOpts *o, Work *W, TcResult *r) {
    enum { NV = TQ_N * (1 + TC_MODELS) };
    int P = v->n_prompts, B = o->bootstrap;
    double *w = malloc((size_t)(P ? P : 1) * sizeof *w), *vals = malloc((size_t)B * NV * sizeof *vals);
    gsl_rng *g = gsl_rng_alloc(gsl_rng_mt19937);
    if (!w || !vals || !g) {
        free(w), free(vals);
        if (g) gsl_rng_free(g);
        return -1;
    }
    gsl_rng_set(g, o->seed);
    for (int b = 0; b < B; b++) {
        memset(w, 0, (size_t)P * sizeof *w);
        for (int i = 0; i < P; i++) w[gsl_rng_uniform_int(g, (unsigned long)P)] += 1;
        RunEst e;
        estimate(v, w, o->shift, W, &e);
        for (int q = 0; q < TQ_N; q++) {
            vals[b * NV + q] = e.meas[q];
            for (int m = 0; m < TC_MODELS; m++) vals[b * NV + TQ_N * (1 + m) + q] = e.meas[q] - e.pred[m][q];
        }
    }
    for (int q = 0; q < TQ_N; q++) {
        r->se_meas[q] = sd_skip_nan(vals + q, B, NV);
        for (int m = 0; m < TC_MODELS; m++) r->se_diff[m][q] = sd_skip_nan(vals + TQ_N * (1 + m) + q, B, NV);
    }
    free(w), free(vals);
    gsl_rng_free(g);
    return 0;
}

/* Copies the full-data arrays of W into r (which owns them from here). */
static int keep_arrays(TcResult *r, const Work *W) {
    size_t n = (size_t)W->kmax + 1;
    double **dst[] = {&r->S[0], &r->S[1], &r->S_km, &r->r_weight, &r->obs_hist, &r->exp_hist[0], &r->exp_hist[1]};
    const double *src[] = {W->S[0], W->S[1], W->S_km, W->r_weight, NULL, NULL, NULL};
    for (size_t i = 0; i < sizeof dst / sizeof *dst; i++) {
        if (!(*dst[i] = calloc(n, sizeof **dst[i]))) return -1;
        if (src[i]) memcpy(*dst[i], src[i], n * sizeof **dst[i]);
    }
    return 0;
}

int theory_check_run(const VerSeq *v, const TcOpts *o, TcResult *r, SpErr *err) {
    memset(r, 0, sizeof *r);
    if (v->n_unlabelled > 0)
        return sp_fail(err, "%lld decisions have no true label (the run was made with audit off)",
                       (long long)v->n_unlabelled);
    if (v->n_blk == 0 || v->max_new < 1) return sp_fail(err, "no verifier decisions");
    Work W;
    if (work_alloc(&W, v)) return sp_fail(err, "out of memory");
    r->kmax = W.kmax, r->horizon = W.horizon;
    estimate(v, NULL, o->shift, &W, &r->est);
    int rc = keep_arrays(r, &W);
    for (int m = 0; rc == 0 && m < TC_MODELS; m++) goodness_of_fit(v, r->S[m], &W, r->obs_hist, r->exp_hist[m], r, m);
    const RunEst *e = &r->est;
    double etp = isnan(e->eta_tp) ? 0 : e->eta_tp, efp = isnan(e->eta_fp) ? 0 : e->eta_fp;
    if (rc == 0 && !isnan(e->chain.pi1)) {
        r->en_uncapped[TC_IID] = uncapped_chain(etp, efp, &e->chain, 0) + o->shift;
        r->fa_uncapped[TC_IID] = uncapped_chain(etp, efp, &e->chain, 1);
    }
    if (rc == 0) {
        r->en_uncapped[TC_PAPER] = (efp < 1 ? thm33_expected_n_mix(etp, efp, r->r_weight, W.kmax, 0) : INFINITY) + o->shift;
        r->fa_uncapped[TC_PAPER] = overshoot_mix(etp, efp, r->r_weight, W.kmax);
        design_curves(v, &W, etp, r);
    }
    if (rc == 0 && v->n_prompts >= TC_MIN_PROMPTS) {
        rc = bootstrap(v, o, &W, r);
        for (int m = 0; rc == 0 && m < TC_MODELS; m++) {
            double cv = call_variance(v, r->S[m], W.kmax);
            r->se_diff[m][TQ_MEAN_T] = sqrt(r->se_diff[m][TQ_MEAN_T] * r->se_diff[m][TQ_MEAN_T] + cv);
        }
    }
    else if (rc == 0) /* too few prompts to resample: no standard errors, so no verdicts */
        for (int q = 0; q < TQ_N; q++) r->se_meas[q] = r->se_diff[TC_IID][q] = r->se_diff[TC_PAPER][q] = NAN;
    work_free(&W);
    if (rc) {
        tc_result_free(r);
        return sp_fail(err, "out of memory");
    }
    return 0;
}

void tc_result_free(TcResult *r) {
    double *a[] = {r->S[0], r->S[1], r->S_km, r->obs_hist, r->exp_hist[0], r->exp_hist[1], r->r_weight};
    for (size_t i = 0; i < sizeof a / sizeof *a; i++) free(a[i]);
    memset(r, 0, sizeof *r);
}
