/* report_md.c - report/index.md and the machine-readable checks.tsv, iid.tsv, runs.tsv, n_dist.tsv. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "peers.h"
#include "report_int.h"
#include "report_util.h"
#include "rules.h"
#include "stats.h"

/* Rotating number buffers: each F() in one printf call gets its own (at most 24 per call). */
typedef struct Fmt {
    char b[24][48];
    int i;
} Fmt;

static const char *fnum(Fmt *s, double v, const char *fmt) { return fmt_num(s->b[s->i++ % 24], 48, v, fmt); }

static const char *fauc(Fmt *s, double auc, double se) {
    char *o = s->b[s->i++ % 24];
    if (isnan(auc)) snprintf(o, 48, "-");
    else snprintf(o, 48, "%.3f +- %.3f", auc, se);
    return o;
}

#define F(x, fmt) fnum(&fb, (x), (fmt))
#define BUFS Fmt fb = {.i = 0}

static const char *run_name(const Report *R, int i, char *buf, size_t cap) {
    if (i < 0) snprintf(buf, cap, "(dtv file)");
    else snprintf(buf, cap, "%s %s [%s, %.8s]", R->an[i].ri->method, R->an[i].setting, R->an[i].dataset, R->an[i].ri->hash);
    return buf;
}

/* ------------------------------------------------------------------ TSV files */

static int write_checks_tsv(Report *R, SpErr *err) {
    FILE *f = report_open(R, "checks.tsv", err);
    if (!f) return -1;
    fprintf(f, "run_hash\tmethod\tsetting\tdataset\tcheck\tmodel\tpredicted\tmeasured\tse_diff\tlo\thi\tp_value\tpass"
               "\tno_verdict_reason\n");
    for (int i = 0; i < R->n_ck; i++) {
        const Check *c = &R->ck[i];
        const RunAn *a = c->run >= 0 ? &R->an[c->run] : NULL;
        fprintf(f, "%s\t%s\t%s\t%s\t%s\t%s\t%.9g\t%.9g\t%.9g\t%.9g\t%.9g\t%.9g\t%d\t%s\n", a ? a->ri->hash : R->dtv[0].path,
                a ? a->ri->method : "dtv", a ? a->setting : "-", a ? a->dataset : "-", c->name, c->model, c->pred,
                c->meas, c->se, c->lo, c->hi, c->p_value, c->pass, c->why[0] ? c->why : "-");
    }
    return report_close(f, R, "checks.tsv", err);
}

static int write_iid_tsv(Report *R, SpErr *err) {
    FILE *f = report_open(R, "iid.tsv", err);
    if (!f) return -1;
    fprintf(f, "run_hash\tmethod\tsetting\tdataset\tn\tlb_q\tlb_h\tlb_p\truns_acc_z\truns_acc_p\truns_unacc_z\truns_unacc_p"
               "\tlag1_acc\tlag1_unacc\tpos_tp_p\tpos_fp_p\tdiff_tp_p\tdiff_fp_p\tn_tests\tmin_p\trejected\n");
    for (int i = 0; i < R->rs.n; i++) {
        const RunAn *a = &R->an[i];
        if (!a->has_iid) continue;
        const IidResult *t = &a->iid;
        fprintf(f, "%s\t%s\t%s\t%s\t%lld\t%.9g\t%d\t%.9g\t%.9g\t%.9g\t%.9g\t%.9g\t%.9g\t%.9g\t%.9g\t%.9g\t%.9g\t%.9g\t%d\t%.9g\t%d\n",
                a->ri->hash, a->ri->method, a->setting, a->dataset, (long long)t->n, t->lb.statistic, t->h, t->lb.p_value,
                t->runs[1].statistic, t->runs[1].p_value, t->runs[0].statistic, t->runs[0].p_value, t->lag1[1],
                t->lag1[0], t->pos[1].p_value, t->pos[0].p_value, t->diff[1].p_value, t->diff[0].p_value, t->n_tests,
                t->min_p, t->rejected);
    }
    return report_close(f, R, "iid.tsv", err);
}

static int write_runs_tsv(Report *R, SpErr *err) {
    FILE *f = report_open(R, "runs.tsv", err);
    if (!f) return -1;
    fprintf(f, "run_hash\tmethod\tsetting\tdataset\tseed\ttokens\tms_per_token\tspeedup_ar\tspeedup_sd\ttokens_per_call"
               "\taccept_rate\taccept_rate_lo\taccept_rate_hi\tchecked_drafts\taccepted_per_drafted\taccept_rate_from_tpc\tavg_tokens_paper\tlabel_rule\ttemperature\tflops_draft_tok\tflops_verifier_tok\tflops_target_tok\tflops_tok\teta_fp\teta_tp\tn_neg\tn_pos\tauc"
               "\trouge1\trouge2\trougeL\tppl\twin_tie\tdtv_unigram\tdtv_bigram\tiid_rejected\tnote\texec_batch\ttokens_per_s_batched\n");
    for (int i = 0; i < R->rs.n; i++) {
        const RunAn *a = &R->an[i];
        double efp = a->nneg ? (double)a->fp / (double)a->nneg : NAN, etp = a->npos ? (double)a->tp / (double)a->npos : NAN;
        fprintf(f, "%s\t%s\t%s\t%s\t%lld\t%lld\t%.9g\t%.9g\t%.9g\t%.9g\t%.9g\t%.9g\t%.9g\t%lld\t%.9g\t%.9g\t%.9g\t%s\t%g"
                   "\t%.9g\t%.9g\t%.9g\t%.9g\t%.9g\t%.9g\t%lld\t%lld"
                   "\t%.9g\t%.9g\t%.9g\t%.9g\t%.9g\t%.9g\t%.9g\t%.9g\t%d\t%s\t%d\t%.9g\n",
                a->ri->hash, a->ri->method, a->setting, a->dataset, (long long)a->ri->seed, (long long)a->ri->tokens,
                a->ms_per_token, a->speedup_ar, a->speedup_sd, a->tok_per_call, a->acc.alpha,
                isnan(a->acc.alpha) ? NAN : a->acc.ci95.lo, isnan(a->acc.alpha) ? NAN : a->acc.ci95.hi,
                (long long)a->acc.checked, a->acc_per_drafted, a->alpha_tpc, a->ri->avg_tokens_paper,
                a->ri->label_rule[0] ? a->ri->label_rule : "-", a->ri->temperature, a->flops_tok[0], a->flops_tok[1],
                a->flops_tok[2], a->flops_tok[3], efp, etp, (long long)a->nneg, (long long)a->npos, a->auc, a->rouge[0],
                a->rouge[1], a->rouge[2], a->ppl, a->win_tie, a->has_drift ? a->d_uni : NAN,
                a->has_drift ? a->d_bi : NAN, a->has_iid ? a->iid.rejected : -1, a->note, a->ri->exec_batch,
                a->ri->tokens_per_s_batched);
    }
    return report_close(f, R, "runs.tsv", err);
}

static int write_ndist_tsv(Report *R, SpErr *err) {
    FILE *f = report_open(R, "n_dist.tsv", err);
    if (!f) return -1;
    fprintf(f, "run_hash\tmethod\tsetting\tdataset\tn\tobserved\texpected_iid\texpected_paper\tS_km\tS_iid\tS_paper"
               "\tr_weight\n");
    for (int i = 0; i < R->rs.n; i++) {
        const RunAn *a = &R->an[i];
        if (!a->has_tc) continue;
        const TcResult *t = &a->tc;
        for (int k = 0; k <= t->kmax; k++)
            fprintf(f, "%s\t%s\t%s\t%s\t%d\t%.9g\t%.9g\t%.9g\t%.9g\t%.9g\t%.9g\t%.9g\n", a->ri->hash, a->ri->method,
                    a->setting, a->dataset, k, t->obs_hist[k], t->exp_hist[TC_IID][k], t->exp_hist[TC_PAPER][k],
                    t->S_km[k], t->S[TC_IID][k], t->S[TC_PAPER][k], t->r_weight[k]);
    }
    return report_close(f, R, "n_dist.tsv", err);
}

static int write_checks_md(const Report *R, SpErr *err);

int write_tsvs(Report *R, SpErr *err) {
    return write_checks_tsv(R, err) || write_checks_md(R, err) || write_iid_tsv(R, err) || write_runs_tsv(R, err) ||
                   write_ndist_tsv(R, err)
               ? -1
               : 0;
}

/* ------------------------------------------------------------------ index.md sections */

static void pooled_rates(const Report *R, int64_t *c, int want_deployed) {
    memset(c, 0, 4 * sizeof *c);
    for (int i = 0; i < R->rs.n; i++) {
        const RunAn *a = &R->an[i];
        if (!a->has_op || (want_deployed && !is_deployed(R, a))) continue;
        c[0] += a->fp, c[1] += a->nneg, c[2] += a->tp, c[3] += a->npos;
    }
}

static void sec_deployed(FILE *f, const Report *R) {
    BUFS;
    const ReportOpts *o = R->o;
    fprintf(f, "## Deployed operating point (lambda = %g, tau = %g)\n\n", o->deployed_lambda, o->deployed_tau);
    int n = 0;
    for (int i = 0; i < R->rs.n; i++) {
        const RunAn *a = &R->an[i];
        if (!is_deployed(R, a)) continue;
        n++;
        if (!a->has_op) {
            fprintf(f, "- %s (%s, seed %lld): not computed (%s)\n", a->setting, a->dataset, (long long)a->ri->seed, a->note);
            continue;
        }
        Interval fp = wilson_interval(a->fp, a->nneg, 0.95), tp = wilson_interval(a->tp, a->npos, 0.95);
        fprintf(f, "- **%s** (seed %lld, verifier trained on %s): eta_FP = **%s** [%s, %s] (%lld of %lld unacceptable drafts accepted), "
                   "eta_TP = **%s** [%s, %s] (%lld of %lld), AUC %s. i.i.d. errors: **%s**%s%s%s.\n",
                a->dataset, (long long)a->ri->seed, a->ri->verifier_data_sha256[0] ? a->ver_data : "-",
                F(a->nneg ? (double)a->fp / a->nneg : NAN, "%.3f"), F(fp.lo, "%.3f"), F(fp.hi, "%.3f"), (long long)a->fp,
                (long long)a->nneg, F(a->npos ? (double)a->tp / a->npos : NAN, "%.3f"), F(tp.lo, "%.3f"),
                F(tp.hi, "%.3f"), (long long)a->tp, (long long)a->npos, F(a->auc, "%.3f"),
                !a->has_iid ? "not tested" : a->iid.rejected ? "rejected" : "not rejected",
                a->has_iid && a->iid.rejected ? " (" : "", a->has_iid && a->iid.rejected ? a->iid.which : "",
                a->has_iid && a->iid.rejected ? ")" : "");
    }
    if (n == 0) {
        fprintf(f, "Not computed: no sprinter run at lambda = %g, tau = %g in this results directory.\n\n",
                o->deployed_lambda, o->deployed_tau);
        return;
    }
    int64_t c[4];
    pooled_rates(R, c, 1);
    if (c[1] > 0) {
        Interval fp = wilson_interval(c[0], c[1], 0.95);
        double bound = SP_REVIEW_ETA_FP_BOUND;
        fprintf(f, "\nPooled over these runs: eta_FP = %s [%s, %s] (Wilson 95%%), eta_TP = %s. The public review's "
                   "arithmetic implies eta_FP >= %.2f at this setting for the paper's own model pairs; for the pair "
                   "measured here the interval lies %s that bound (a statement about these models only: the "
                   "paper's checkpoints are not available to this harness).\n",
                F((double)c[0] / c[1], "%.3f"), F(fp.lo, "%.3f"), F(fp.hi, "%.3f"),
                F(c[3] ? (double)c[2] / c[3] : NAN, "%.3f"), bound,
                fp.lo >= bound ? "above" : fp.hi < bound ? "below" : "across");
    }
    fprintf(f, "\n(Intervals here are per-run 95%%; eta_FP = P(verifier accepts | q/p > lambda), eta_TP = P(accepts | "
               "q/p <= lambda), on the audited drafted tokens.)\n\n");
}

static void check_summary(FILE *f, const Report *R) {
    int k[2] = {0, 0}, m[2] = {0, 0}, info = 0;
    for (int i = 0; i < R->n_ck; i++) {
        const Check *c = &R->ck[i];
        if (c->pass < 0) {
            info++;
            continue;
        }
        int paper = !strcmp(c->model, "paper");
        m[paper]++, k[paper] += c->pass;
    }
    fprintf(f, "- i.i.d.-verifier predictions (oracle rates, Thm 3.3 / 3.4 under model `iid`, Thm 3.1): **%d of %d "
               "inside**\n- the paper's label model (model `paper`: the first r drafted tokens acceptable, all later "
               "ones not): **%d of %d inside**\n- %d rows without a verdict, each with its reason in "
               "[checks.md](checks.md) (Thm 3.1 at lambda != 1 or under greedy decoding; false accepts where the "
               "i.i.d. tests reject; tokens per target call in bonus rounds; missing data)\n\n",
            k[0], m[0], k[1], m[1], info);
    /* per method, i.i.d.-verifier model only */
    const char *seen[16];
    int ns = 0;
    for (int i = 0; i < R->n_ck; i++) {
        const char *meth = R->ck[i].run >= 0 ? R->an[R->ck[i].run].ri->method : "dtv";
        int dup = 0;
        for (int j = 0; j < ns; j++) dup |= !strcmp(seen[j], meth);
        if (!dup && ns < 16) seen[ns++] = meth;
    }
    fprintf(f, "By method (i.i.d.-verifier checks):");
    for (int j = 0; j < ns; j++) {
        int kk = 0, mm = 0;
        for (int i = 0; i < R->n_ck; i++) {
            const Check *c = &R->ck[i];
            const char *meth = c->run >= 0 ? R->an[c->run].ri->method : "dtv";
            if (strcmp(meth, seen[j]) || c->pass < 0 || !strcmp(c->model, "paper")) continue;
            mm++, kk += c->pass;
        }
        fprintf(f, "%s %s %d of %d", j ? ";" : "", seen[j], kk, mm);
    }
    fprintf(f, ".\n\n");
}

/* The full table of checks (checks.md). */
static int write_checks_md(const Report *R, SpErr *err) {
    BUFS;
    char nm[512];
    FILE *f = report_open(R, "checks.md", err);
    if (!f) return -1;
    fprintf(f, "# Every check: %s\n\nSimultaneous level %.6f (alpha %g, Bonferroni over %d checks). Interval: measured "
               "+- z SE(measured - predicted); the prediction must lie inside. Chi-square rows: p must be >= %.3g.\n\n"
               "| run | check | model | predicted | measured | interval / p | pass (or why no verdict) |\n|---|---|---|---|---|---|---|\n",
            R->o->results_dir, R->conf_sim, R->o->alpha, R->m_tests, R->o->alpha / (R->m_tests ? R->m_tests : 1));
    for (int i = 0; i < R->n_ck; i++) {
        const Check *c = &R->ck[i];
        char iv[96];
        if (c->kind == CK_PVALUE)
            snprintf(iv, sizeof iv, "chi2 %s, df %d: p = %s", F(c->meas, "%.1f"), (int)c->pred, F(c->p_value, "%.2g"));
        else snprintf(iv, sizeof iv, "[%s, %s]", F(c->lo, "%.4f"), F(c->hi, "%.4f"));
        fprintf(f, "| %s | %s | %s | %s | %s | %s | %s |\n", run_name(R, c->run, nm, sizeof nm), c->name, c->model,
                c->kind == CK_PVALUE ? "-" : F(c->pred, "%.4f"), c->kind == CK_PVALUE ? "-" : F(c->meas, "%.4f"), iv,
                c->pass < 0 ? (c->why[0] ? c->why : "n/a") : c->pass ? "yes" : "**NO**");
    }
    return report_close(f, R, "checks.md", err);
}

static void sec_checks(FILE *f, const Report *R) {
    char nm[512];
    fprintf(f, "## Theorem checks\n\nChecked here: Theorems 3.1 (d_TV(p, p_SPRINTER) = eta_FP d_TV(p, q)), 3.3 "
               "(E[N] and the law of N) and 3.4 (the stopping time T per target call, in this harness's reading), "
               "and Figs. 5-6's overshoot. Theorem 3.2 is not checked: the paper's body is not reachable from this "
               "harness and the public review names only Theorems 3.1, 3.3 and 3.4, so what 3.2 states is not "
               "known here.\n\n");
    if (R->n_ck == 0) {
        fprintf(f, "Not computed: no audited verifier run (sprinter, oracle-iid, oracle-markov with audit on).\n\n");
        return;
    }
    fprintf(f, "Each prediction uses the run's measured eta_FP, eta_TP. A check passes when the prediction lies in "
               "measured +- z SE(measured - predicted) at the simultaneous level %.6f (alpha %g, Bonferroni over %d "
               "checks; SE from %d bootstrap replicates over prompts); chi-square checks pass when p >= %.3g. Every "
               "check: [checks.md](checks.md) ([checks.tsv](checks.tsv)); the distribution of N per run: "
               "[n_dist.tsv](n_dist.tsv).\n\n",
            R->conf_sim, R->o->alpha, R->m_tests, R->o->bootstrap, R->o->alpha / (R->m_tests ? R->m_tests : 1));
    check_summary(f, R);
    fprintf(f, "| run | i.i.d.-verifier checks inside | paper's label model inside | checks outside |\n|---|---|---|---|\n");
    for (int r = -1; r < R->rs.n; r++) {
        int k[2] = {0, 0}, m[2] = {0, 0};
        char failed[1024] = "";
        size_t fl = 0;
        for (int i = 0; i < R->n_ck; i++) {
            const Check *c = &R->ck[i];
            if (c->run != r || c->pass < 0) continue;
            int paper = !strcmp(c->model, "paper");
            m[paper]++, k[paper] += c->pass;
            if (!c->pass && fl < sizeof failed) {
                int w = snprintf(failed + fl, sizeof failed - fl, "%s%s (%s)", fl ? "; " : "", c->name, c->model);
                if (w > 0) fl += (size_t)w;
            }
        }
        if (m[0] + m[1] == 0) continue;
        fprintf(f, "| %s | %d / %d | %d / %d | %s |\n", run_name(R, r, nm, sizeof nm), k[0], m[0], k[1], m[1],
                fl ? failed : "-");
    }
    fprintf(f, "\n");
}

static void sec_operating(FILE *f, const Report *R) {
    BUFS;
    fprintf(f, "## Operating points and ROC\n\n");
    fprintf(f, "| method | setting | data | eta_FP [95%% Wilson] | eta_TP [95%% Wilson] | unacceptable | acceptable | AUC |\n"
               "|---|---|---|---|---|---|---|---|\n");
    int any = 0;
    for (int i = 0; i < R->rs.n; i++) {
        const RunAn *a = &R->an[i];
        if (!a->has_op) continue;
        any = 1;
        Interval fp = wilson_interval(a->fp, a->nneg, 0.95), tp = wilson_interval(a->tp, a->npos, 0.95);
        fprintf(f, "| %s | %s | %s | %s [%s, %s] | %s [%s, %s] | %lld | %lld | %s |\n", a->ri->method, a->setting,
                a->dataset, F(a->nneg ? (double)a->fp / a->nneg : NAN, "%.3f"), F(fp.lo, "%.3f"), F(fp.hi, "%.3f"),
                F(a->npos ? (double)a->tp / a->npos : NAN, "%.3f"), F(tp.lo, "%.3f"), F(tp.hi, "%.3f"),
                (long long)a->nneg, (long long)a->npos, fauc(&fb, a->auc, a->auc_se));
    }
    if (!any) fprintf(f, "| (none) | | | | | | | |\n");
    fprintf(f, "\nROC of the learned verifier (scores vs audit labels, runs pooled per lambda; points: operating points "
               "at their tau): ![ROC](roc.png) ([SVG](roc.svg))\n\n");
}

static void sec_thm33(FILE *f, const Report *R) {
    BUFS;
    fprintf(f, "## Theorem 3.3: tokens accepted before the target is invoked\n\n");
    fprintf(f, "N per block (drafted tokens between two target calls). `iid`: the i.i.d. verifier on a two-state Markov "
               "chain of labels (pi1 = P(first drafted token acceptable), t11, t01 = P(acceptable | previous "
               "(un)acceptable)); `paper`: t01 = 0 with r ~ its Kaplan-Meier law. E[N] uncapped is the prediction "
               "without any cap; E[min(N,c)] uses each block's cap (max_run, tokens left).\n\n");
    fprintf(f, "| run | blocks | pi1 | t11 | t01 | E[min(N,c)] measured | iid | paper | E[N] uncapped iid | paper | "
               "KM E[min(N,H)] (H) |\n|---|---|---|---|---|---|---|---|---|---|---|\n");
    char nm[512];
    for (int i = 0; i < R->rs.n; i++) {
        const RunAn *a = &R->an[i];
        if (!a->has_tc) continue;
        const TcResult *t = &a->tc;
        unsigned fallback = t->est.fallback;
        fprintf(f, "| %s | %.0f | %s | %s%s | %s%s | %s +- %s | %s | %s | %s | %s | %s (%d) |\n", run_name(R, i, nm, sizeof nm),
                t->est.blocks, F(t->est.chain.pi1, "%.3f"), F(t->est.chain.t11, "%.3f"), fallback & TC_FB_T11 ? " (fallback)" : "",
                F(t->est.chain.t01, "%.3f"), fallback & TC_FB_T01 ? " (fallback)" : "",
                F(t->est.meas[TQ_MEAN_N], "%.3f"), F(t->se_meas[TQ_MEAN_N], "%.3f"), F(t->est.pred[TC_IID][TQ_MEAN_N], "%.3f"),
                F(t->est.pred[TC_PAPER][TQ_MEAN_N], "%.3f"), F(t->en_uncapped[TC_IID], "%.3f"),
                F(t->en_uncapped[TC_PAPER], "%.3f"), F(t->est.meas[TQ_KM], "%.3f"), t->horizon);
    }
    int n_fb = 0;
    for (int i = 0; i < R->rs.n; i++) {
        const RunAn *a = &R->an[i];
        if (!a->has_tc || !a->tc.est.fallback) continue;
        char why[512];
        tc_fallback_text(a->tc.est.fallback, why, sizeof why);
        fprintf(f, "%s- fallback, not an estimate, in %s: %s\n", n_fb++ ? "" : "\nValues marked (fallback) are stand-ins where "
                "the data had nothing to estimate from:\n\n", run_name(R, i, nm, sizeof nm), why);
    }
    fprintf(f, "\nE[N] measured vs predicted over the eta grid: ![E[N]](en.png) ([SVG](en.svg))\n\n");
}

static void sec_thm34(FILE *f, const Report *R) {
    BUFS;
    char nm[512];
    fprintf(f, "## Theorem 3.4: stopping time and latency\n\n"
               "The harness's reading (the paper's text is not available here): the stopping time T is the number of "
               "draft steps per target call, T = N + 1 (the N accepted tokens and the one the target decides); with "
               "caps, min(N, c) + [a target call ends the block]. Without a bonus a block emits T tokens. In the "
               "authors' rounds (bonus = 1) a block emits T + B tokens, B = [the target accepted the tested draft] "
               "(then it adds a token of its own): N + 1 or N + 2. T (steps) is checked in both; tokens per target "
               "call get no verdict in bonus rounds, because E[B] is the target's acceptance of the tested draft, "
               "which no theorem predicts (it is measured). Implied latency per token = (E[T](c_draft + c_verifier) + "
               "c_target) / (E[T] + E[B]) with the run's measured seconds per draft forward, verifier evaluation and "
               "target call and E[B] measured (0 without a bonus: c_draft + c_verifier + c_target / E[T]); the "
               "measured latency also holds sampling and bookkeeping (overhead).\n\n");
    fprintf(f, "| run | E[T] measured | E[T] predicted (iid) | E[B] measured (bonus share) | tokens / target call | "
               "ms/token measured | ms/token implied (Thm 3.4) |\n|---|---|---|---|---|---|---|\n");
    for (int i = 0; i < R->rs.n; i++) {
        const RunAn *a = &R->an[i];
        if (!a->has_tc) continue;
        const TcResult *t = &a->tc;
        fprintf(f, "| %s | %s +- %s | %s | %s | %s | %s | %s |\n", run_name(R, i, nm, sizeof nm),
                F(t->est.meas[TQ_MEAN_T], "%.3f"), F(t->se_meas[TQ_MEAN_T], "%.3f"), F(t->est.pred[TC_IID][TQ_MEAN_T], "%.3f"),
                F(t->est.bonus_rate, "%.3f"), F(t->est.meas[TQ_TOKENS], "%.3f"), F(a->ms_per_token, "%.4f"),
                F(a->lat_pred_ms, "%.4f"));
    }
    fprintf(f, "\n");
}

static void sec_overshoot(FILE *f, const Report *R) {
    BUFS;
    char nm[512];
    fprintf(f, "## Figs. 5-6: the verifier's overshoot and the design curves\n\n"
               "False accepts per block: the accepted tokens whose label is unacceptable. Under the paper's labels "
               "(the first r drafted tokens acceptable, all later ones not) they are max(N - r, 0), the overshoot past "
               "r, with E = eta_TP^r eta_FP / (1 - eta_FP) = E[N](eta_FP) - E[N](0) uncapped: at most 1 token while "
               "eta_FP <= 0.5 (Figs. 5-6's \"gap <= 1 token\"; each false accept costs one draft step, so the time "
               "gap is at most one step, t_d, then). Measured and predicted use the same blocks and caps as "
               "E[min(N,c)]. A verdict only where the run's i.i.d. tests do not reject (rows `Thm3.3 false "
               "accepts/block` in [checks.md](checks.md)).\n\n");
    fprintf(f, "| run | eta_FP | eta_TP | false accepts/block measured | iid | paper | uncapped iid | uncapped paper "
               "(E_r[eta_TP^r] eta_FP/(1-eta_FP)) | i.i.d. |\n|---|---|---|---|---|---|---|---|---|\n");
    for (int i = 0; i < R->rs.n; i++) {
        const RunAn *a = &R->an[i];
        if (!a->has_tc) continue;
        const TcResult *t = &a->tc;
        fprintf(f, "| %s | %s | %s | %s +- %s | %s | %s | %s | %s | %s |\n", run_name(R, i, nm, sizeof nm),
                F(t->est.eta_fp, "%.3f"), F(t->est.eta_tp, "%.3f"), F(t->est.meas[TQ_FA], "%.3f"),
                F(t->se_meas[TQ_FA], "%.3f"), F(t->est.pred[TC_IID][TQ_FA], "%.3f"), F(t->est.pred[TC_PAPER][TQ_FA], "%.3f"),
                F(t->fa_uncapped[TC_IID], "%.3f"), F(t->fa_uncapped[TC_PAPER], "%.3f"),
                !a->has_iid ? "not tested" : a->iid.rejected ? "rejected (no verdict)" : "not rejected");
    }
    fprintf(f, "\nDesign curves at each run's measured eta_TP and r law (the paper's model, the run's caps), over "
               "eta_FP in [0, 1), with the run's measured point: E[min(N,c)] (Thm 3.3), false accepts per block, and "
               "the latency per token (Thm 3.4 with the run's measured costs and bonus share): "
               "![design](design.png) ([SVG](design.svg); data: design_curves.dat, design_points.dat)\n\n");
}

static void sec_thm31(FILE *f, const Report *R) {
    BUFS;
    fprintf(f, "## Theorem 3.1 and d_TV\n\n"
               "From the token logs (rows `Thm3.1 d_TV(p,p_S)` above): d_TV(p, p_SPRINTER) averaged over the prefixes "
               "the decoder visited, estimated without bias as the mean of decision * (1 - p/q)^+ over drafted tokens, "
               "against eta_FP times the same estimate of d_TV(p, q). Exact only at lambda = 1 for an i.i.d. oracle. "
               "No verdict for greedy runs (temperature 0): the drafted token is q's argmax, not a sample from q, "
               "and the logged p and q are one-hot, so the estimate is the share of accepted drafts that differ "
               "from the target's greedy token; with sound labels that equals eta_FP times the share of "
               "unacceptable drafts by the definition of eta_FP (a check that cannot fail), with the paper-code "
               "labels (softmax) it compares different events.\n\n");
    if (R->n_dtv == 0) {
        fprintf(f, "Exact per-prefix d_TV (`sprinter dtv`): not computed (no %s/dtv.h5 nor .h5 file in %s/dtv; write one "
                   "with `sprinter dtv ... --out %s/dtv.h5`).\n\n", R->o->results_dir, R->o->results_dir, R->o->results_dir);
        return;
    }
    fprintf(f, "| file | lambda | tau | prefixes | d_TV(p,q) | d_TV(p,p_S) exact | eta_FP global | Thm 3.1 prediction | "
               "oracle at lambda=1: exact | Thm 3.1 | max error |\n|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (int i = 0; i < R->n_dtv; i++) {
        const DtvFile *d = &R->dtv[i];
        const char *s = strrchr(d->path, '/');
        fprintf(f, "| %s | %g | %g | %d | %s | %s +- %s | %s | %s | %s | %s | %s |\n", s ? s + 1 : d->path, d->lambda,
                d->tau, d->n, F(d->dtv_pq, "%.4f"), F(d->dtv_p_ps, "%.4f"), F(d->se_dtv_p_ps, "%.4f"),
                F(d->eta_fp_global, "%.3f"), F(d->pred_global, "%.4f"), F(d->oracle_l1, "%.4f"), F(d->oracle_pred, "%.4f"),
                F(d->oracle_max_err, "%.2g"));
    }
    fprintf(f, "\n");
}

static void sec_iid(FILE *f, const Report *R) {
    BUFS;
    char nm[512];
    fprintf(f, "## Are the verifier's errors i.i.d.?\n\n"
               "On the labelled decisions of each run, in order: Ljung-Box on the standardised residuals "
               "(decision - eta_label) / sd (lags 1..h); runs tests on the decisions of each label class; acceptance "
               "vs position in the run (1, 2, 3, 4, 5+) and vs difficulty (quartiles of |ln(q/p) - ln lambda|), "
               "chi-square homogeneity. Verdict: rejected when a p-value < alpha / (tests) = %g / k. Table: "
               "[iid.tsv](iid.tsv).\n\n", R->o->alpha);
    fprintf(f, "| run | n | Ljung-Box p | runs acc p | runs unacc p | lag-1 acc | lag-1 unacc | position TP p | position "
               "FP p | difficulty TP p | difficulty FP p | verdict |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    int any = 0;
    for (int i = 0; i < R->rs.n; i++) {
        const RunAn *a = &R->an[i];
        if (!a->has_iid) continue;
        const IidResult *t = &a->iid;
        any = 1;
        fprintf(f, "| %s | %lld | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", run_name(R, i, nm, sizeof nm),
                (long long)t->n, F(t->lb.p_value, "%.2g"), F(t->runs[1].p_value, "%.2g"), F(t->runs[0].p_value, "%.2g"),
                F(t->lag1[1], "%.3f"), F(t->lag1[0], "%.3f"), F(t->pos[1].p_value, "%.2g"), F(t->pos[0].p_value, "%.2g"),
                F(t->diff[1].p_value, "%.2g"), F(t->diff[0].p_value, "%.2g"),
                t->rejected ? "**rejected**" : "holds");
    }
    if (!any) fprintf(f, "| not computed (no audited verifier run) | | | | | | | | | | | |\n");
    fprintf(f, "\nOne line per run:\n\n");
    for (int i = 0; i < R->rs.n; i++) {
        const RunAn *a = &R->an[i];
        if (!a->has_iid) continue;
        fprintf(f, "- %s: i.i.d. %s at alpha = %g (%d tests%s%s)\n", run_name(R, i, nm, sizeof nm),
                a->iid.rejected ? "**rejected**" : "holds", R->o->alpha, a->iid.n_tests, a->iid.rejected ? ": " : "",
                a->iid.rejected ? a->iid.which : "");
    }
    fprintf(f, "\nAutocorrelation of the verifier errors: ![ACF](acf.png) ([SVG](acf.svg)); acceptance by position in the "
               "run: ![position](position.png) ([SVG](position.svg))\n\n");
    fprintf(f, "Acceptance by difficulty (Q1 = hardest: q/p nearest lambda; Q4 = easiest):\n\n"
               "| run | eta_TP Q1 | Q2 | Q3 | Q4 | eta_FP Q1 | Q2 | Q3 | Q4 |\n|---|---|---|---|---|---|---|---|---|\n");
    for (int i = 0; i < R->rs.n; i++) {
        const IidResult *t = &R->an[i].iid;
        if (!R->an[i].has_iid) continue;
        fprintf(f, "| %s", run_name(R, i, nm, sizeof nm));
        for (int c = 1; c >= 0; c--)
            for (int q = 0; q < 4; q++)
                fprintf(f, " | %s", F(t->diff_n[c][q] ? (double)t->diff_acc[c][q] / (double)t->diff_n[c][q] : NAN, "%.3f"));
        fprintf(f, " |\n");
    }
    fprintf(f, "\n");
}

static void sec_quality(FILE *f, const Report *R) {
    BUFS;
    fprintf(f, "## Quality and output drift\n\n");
    if (!R->has_refs) fprintf(f, "ROUGE: not computed (no references in the datasets).\n\n");
    if (!R->rs.has_outputs)
        fprintf(f, "Target perplexity and win-tie rate: not computed (run `sprinter score %s` first).\n\n", R->o->results_dir);
    fprintf(f, "ROUGE-1/2/L: F1 against the dataset's reference, lowercased words, mean over prompts. PPL: the target's "
               "perplexity of the outputs. Win-tie: share of prompts whose output the target scores (mean log-prob per "
               "token) no worse than the sd output's minus %g nats. Drift: d_TV between the unigram / bigram "
               "distributions of the run's outputs and of the ar runs' on the same data (the sd row is the noise "
               "floor: sd is lossless).\n\n", R->o->tie_margin);
    fprintf(f, "| method | setting | data | ROUGE-1 | ROUGE-2 | ROUGE-L | PPL | win-tie vs sd | d_TV unigram | d_TV bigram |\n"
               "|---|---|---|---|---|---|---|---|---|---|\n");
    for (int i = 0; i < R->rs.n; i++) {
        const RunAn *a = &R->an[i];
        fprintf(f, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", a->ri->method, a->setting, a->dataset,
                F(a->rouge[0], "%.4f"), F(a->rouge[1], "%.4f"), F(a->rouge[2], "%.4f"), F(a->ppl, "%.2f"),
                F(a->win_tie, "%.3f"), F(a->has_drift ? a->d_uni : NAN, "%.3f"), F(a->has_drift ? a->d_bi : NAN, "%.3f"));
    }
    fprintf(f, "\nSpeed-up vs quality across methods: ![Pareto](pareto.png) ([SVG](pareto.svg))\n\n");
}

static void sec_files(FILE *f, const Report *R) {
    fprintf(f, "## Files\n\n- [tables.md](tables.md): the paper's Tables 1-4 regenerated and the deployed-point table\n");
    if (peers_present(R))
        fprintf(f, "- [lossy.md](lossy.md), [lossy.tsv](lossy.tsv): SPRINTER beside its lossy peers at equal shift "
                   "(speed-up over ar against exact d_TV(p, p_method): lossy.png)\n");
    fprintf(f,
               "- [checks.md](checks.md), [checks.tsv](checks.tsv), [iid.tsv](iid.tsv), [runs.tsv](runs.tsv), "
               "[n_dist.tsv](n_dist.tsv)\n"
               "- plots (PNG and SVG, from the `.gp` scripts and `.dat` files here):");
    const char *const *names;
    int n = plot_names(&names);
    for (int i = 0; i < n; i++) fprintf(f, " [%s.png](%s.png) [%s.svg](%s.svg)%s", names[i], names[i], names[i], names[i], i + 1 < n ? "," : "\n");
    fprintf(f, "\n");
}

int write_index(Report *R, SpErr *err) {
    FILE *f = report_open(R, "index.md", err);
    if (!f) return -1;
    int nv = 0;
    for (int i = 0; i < R->rs.n; i++) nv += R->an[i].is_ver;
    fprintf(f, "# SPRINTER harness report: %s\n\n%d finished runs (%d with a verifier), database schema version %d. "
               "alpha = %g, %d bootstrap replicates (seed %lu). Generated by `sprinter analyze`.%s\n\n",
            R->o->results_dir, R->rs.n, nv, R->rs.schema_version, R->o->alpha, R->o->bootstrap, R->o->seed,
            R->o->shift != 0 ? " **TEST MODE: every predicted mean is shifted by --test-shift; the checks are meant to "
                               "fail.**" : "");
    sec_models(f, R);
    sec_deployed(f, R);
    sec_findings(f, R);
    sec_checks(f, R);
    sec_operating(f, R);
    sec_thm33(f, R);
    sec_thm34(f, R);
    sec_overshoot(f, R);
    sec_thm31(f, R);
    sec_iid(f, R);
    sec_quality(f, R);
    fprintf(f, "## Paper tables\n\nSee [tables.md](tables.md).\n\n");
    sec_files(f, R);
    return report_close(f, R, "index.md", err);
}
