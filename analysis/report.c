/* report.c - `sprinter analyze`: per-run analysis, cross-run comparisons, the checks; the files
 * are written by report_md.c, tables.c and plots.c (see report.h), which share report_util.c. */
#include <dirent.h>
#include <signal.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "methods.h"
#include "fsutil.h"
#include "peers.h"
#include "report_int.h"
#include "report_util.h"
#include "rouge.h"
#include "rules.h"
#include "stats.h"
#include "theory.h"
#include "tokenlog.h"
#include "verseq.h"

void report_opts_default(ReportOpts *o) {
    memset(o, 0, sizeof *o);
    o->alpha = 0.05;
    o->bootstrap = 200;
    o->seed = 1;
    o->deployed_lambda = SP_PAPER_LAMBDA;
    o->deployed_tau = SP_PAPER_TAU;
    o->code_lambda = REPORT_CODE_LAMBDA;
    o->tie_margin = 0.05;
    o->plots = 1;
    o->gnuplot = "gnuplot";
}

/* ------------------------------------------------------------------ helpers */

static const char *base(const char *p) {
    const char *b = strrchr(p, '/');
    return b ? b + 1 : p;
}

static void note(RunAn *a, const char *what) {
    size_t k = strlen(a->note);
    snprintf(a->note + k, sizeof a->note - k, "%s%s", k ? "; " : "", what);
}

/* ------------------------------------------------------------------ one run: token log */

static int keep_tokens(RunAn *a, const TokenRows *t) {
    a->tok = malloc((size_t)(t->n ? t->n : 1) * sizeof *a->tok);
    a->tok_prompt = malloc((size_t)(t->n ? t->n : 1) * sizeof *a->tok_prompt);
    if (!a->tok || !a->tok_prompt) return -1;
    memcpy(a->tok, t->token, (size_t)t->n * sizeof *a->tok);
    for (int64_t i = 0; i < t->n; i++) a->tok_prompt[i] = t->prompt_index[i];
    a->n_tok = t->n;
    return 0;
}

/* Operating point: the audit's confusion counts as the sweep stored them (runs.sqlite prompts.tp ...);
 * and the score / label pairs of the labelled decisions (only the token log has them) for the ROC. */
static int operating_point(RunAn *a, const VerSeq *v) {
    const RunInfo *ri = a->ri;
    a->has_op = ri->audited_prompts > 0 && ri->audited > 0;
    a->npos = ri->audited_pos, a->nneg = ri->audited_neg, a->tp = ri->tp, a->fp = ri->fp;
    a->scores = malloc((size_t)(v->n_dec ? v->n_dec : 1) * sizeof *a->scores);
    a->labels = malloc((size_t)(v->n_dec ? v->n_dec : 1));
    if (!a->scores || !a->labels) return -1;
    for (int64_t i = 0; i < v->n_dec; i++) {
        const VDecision *d = &v->dec[i];
        if (d->label >= 0 && !isnan(d->score)) a->scores[a->n_scored] = d->score, a->labels[a->n_scored++] = d->label;
    }
    int64_t np = 0, nn = 0;
    a->auc = a->n_scored ? auc_scores(a->scores, a->labels, (size_t)a->n_scored, &np, &nn) : NAN;
    a->auc_se = auc_se(a->auc, np, nn);
    return 0;
}

/* Thm 3.4's implied latency per token (ms; thm34_latency, generalised to the bonus token: e_b is the
 * measured share of target calls followed by one) with the run's measured seconds per draft forward,
 * verifier evaluation and target call; keeps the per-step and per-call costs for the design curves. */
static double implied_latency(RunAn *a, double e_t, double e_b) {
    const RunInfo *ri = a->ri;
    double cd = ri->draft_calls ? ri->t_draft / (double)ri->draft_calls : 0;
    double cv = ri->verifier_evals ? ri->t_verifier / (double)ri->verifier_evals : 0;
    double ct = ri->target_calls ? ri->t_target / (double)ri->target_calls : 0;
    a->c_step_ms = 1000 * (cd + cv), a->c_target_ms = 1000 * ct;
    return 1000 * thm34_latency(e_t, isnan(e_b) ? 0 : e_b, cd, cv, ct);
}

static int analyze_verifier(const Report *R, RunAn *a, const TokenRows *t, const char *path, SpErr *err) {
    const RunInfo *ri = a->ri;
    VerSeq v;
    int max_run = isnan(ri->max_run) ? 0 : (int)ri->max_run;
    int finish_round = !isnan(ri->finish_round) && ri->finish_round != 0;
    if (verseq_build(t, path, ri->max_new, max_run, ri->stop_at_eos, finish_round, &v, err)) return -1;
    int rc = 0;
    if (!ri->audit) /* only target-called decisions have labels then: a biased sample, not used */
        note(a, "audit off: no operating point, theorem or i.i.d. checks");
    else if (operating_point(a, &v))
        rc = sp_fail(err, "out of memory");
    else if (!a->has_op)
        note(a, "no labelled decisions: no operating point, theorem or i.i.d. checks");
    TcOpts to = {R->o->bootstrap, R->o->seed, R->o->shift};
    SpErr e2 = {{0}};
    if (rc == 0 && a->has_op) {
        if (theory_check_run(&v, &to, &a->tc, &e2) == 0) {
            a->has_tc = 1;
            a->lat_pred_ms = implied_latency(a, a->tc.est.pred[TC_IID][TQ_MEAN_T], a->tc.est.bonus_rate);
        } else {
            char m[600];
            snprintf(m, sizeof m, "theorem checks: %s", e2.msg);
            note(a, m);
        }
        double etp = (double)a->tp / (double)(a->npos ? a->npos : 1), efp = (double)a->fp / (double)(a->nneg ? a->nneg : 1);
        if (iid_tests(&v, etp, efp, isnan(ri->lambda) ? 1 : ri->lambda, R->o->alpha, R->o->seed, &a->iid, &e2) == 0)
            a->has_iid = 1;
    }
    verseq_free(&v);
    return rc;
}

typedef struct ExpectRow {
    int32_t pi;
    int64_t tokens;
} ExpectRow;

static int cmp_expect(const void *a, const void *b) {
    int32_t x = ((const ExpectRow *)a)->pi, y = ((const ExpectRow *)b)->pi;
    return (x > y) - (x < y);
}

static int analyze_log(const Report *R, RunAn *a, SpErr *err) {
    char path[4400];
    snprintf(path, sizeof path, "%s/%s", R->o->results_dir, a->ri->token_log);
    TokenRows t;
    /* the log must hold what the run's prompts rows say (records/tokenlog.h tokrows_read) */
    const RunInfo *ri = a->ri;
    size_t np = (size_t)(ri->n_rows > 0 ? ri->n_rows : 1);
    ExpectRow *er = malloc(np * sizeof *er);
    TokenLogExpect x = {ri->hash, ri->n_rows, malloc(np * sizeof(int32_t)), malloc(np * sizeof(int64_t)), ""};
    snprintf(x.content_hash, sizeof x.content_hash, "%s", ri->token_log_fnv1a64);
    int rc = er && x.prompt_index && x.tokens ? 0 : sp_fail(err, "out of memory");
    for (int i = 0; rc == 0 && i < ri->n_rows; i++) er[i].pi = ri->prompts[i].prompt_index, er[i].tokens = ri->prompts[i].tokens;
    if (rc == 0) qsort(er, (size_t)ri->n_rows, sizeof *er, cmp_expect);
    for (int i = 0; rc == 0 && i < ri->n_rows; i++) x.prompt_index[i] = er[i].pi, x.tokens[i] = er[i].tokens;
    free(er);
    if (rc == 0) rc = tokrows_read(path, &x, &t, err);
    tokenlog_expect_free(&x);
    if (rc) return -1;
    if (rc == 0 && keep_tokens(a, &t)) rc = sp_fail(err, "out of memory");
    if (rc == 0 && a->is_ver) rc = analyze_verifier(R, a, &t, path, err);
    if (rc == 0 && method_name_eq(a->ri->method, DM_SD)) sd_identity_of(&t, &a->sdid);
    tokrows_free(&t);
    return rc;
}

/* ------------------------------------------------------------------ one run: speed, cost, quality */

static void speed_and_cost(RunAn *a) {
    const RunInfo *ri = a->ri;
    double n = (double)ri->tokens;
    a->ms_per_token = n > 0 ? 1000 * ri->t_total / n : NAN;
    a->tok_per_call = ri->target_calls > 0 ? n / (double)ri->target_calls : NAN;
    a->acc = acceptance_of(ri->accepted, ri->verifier_accepts, ri->rejected);
    if (ri->rejected_prompts != ri->n_rows) a->acc.alpha = NAN; /* rows of a file older than schema 5 */
    a->acc_per_drafted = metric_ratio((double)ri->accepted, (double)ri->drafted);
    a->alpha_tpc = method_name_eq(ri->method, DM_SD) && !isnan(ri->gamma)
                       ? alpha_from_tokens_per_call(a->tok_per_call, (int)ri->gamma)
                       : NAN;
    a->flops_tok[0] = n > 0 ? ri->flops_draft / n : NAN;
    a->flops_tok[1] = n > 0 ? ri->flops_verifier / n : NAN;
    a->flops_tok[2] = n > 0 ? ri->flops_target / n : NAN;
    a->flops_tok[3] = a->flops_tok[0] + a->flops_tok[1] + a->flops_tok[2];
}

static int quality(const Report *R, RunAn *a, SpErr *err) {
    const RunInfo *ri = a->ri;
    double lp = 0, nt = 0;
    if (!(a->rouge_l = malloc((size_t)(ri->n_rows ? ri->n_rows : 1) * sizeof *a->rouge_l))) return sp_fail(err, "out of memory");
    for (int i = 0; i < ri->n_rows; i++) {
        const PromptInfo *p = &ri->prompts[i];
        a->rouge_l[i] = NAN;
        if (p->scored) lp += p->target_logprob, nt += (double)p->scored_tokens;
        const char *ref =
            R->o->refs ? R->o->refs(R->o->refs_ctx, ri->dataset, ri->data_format, ri->dataset_sha256, p->prompt_index)
                       : NULL;
        if (!ref || !p->output_text) continue;
        Rouge g;
        if (rouge_f1_best(p->output_text, ref, REPORT_REFERENCE_SEPARATOR, &g, err)) return -1;
        a->rouge[0] += g.r1, a->rouge[1] += g.r2, a->rouge[2] += g.rl, a->n_rouge++;
        a->rouge_l[i] = g.rl;
    }
    for (int k = 0; k < 3; k++) a->rouge[k] = a->n_rouge ? a->rouge[k] / a->n_rouge : NAN;
    a->has_ppl = nt > 0;
    a->ppl = nt > 0 ? exp(-lp / nt) : NAN;
    return 0;
}

static int analyze_run(Report *R, RunAn *a, SpErr *err) {
    const RunInfo *ri = a->ri;
    run_params_text(ri, a->setting, sizeof a->setting);
    if (!a->setting[0]) snprintf(a->setting, sizeof a->setting, "-");
    /* a run on the verifier's training prompts (the authors' evaluation) is a cell of its own */
    snprintf(a->dataset, sizeof a->dataset, "%s%s", base(ri->dataset),
             ri->on_verifier_prompts ? " (verifier's training prompts)" : "");
    a->is_ver = method_name_is(ri->method, MC_SEQUENTIAL);
    a->is_oracle = a->is_ver && !method_name_is(ri->method, MC_NEEDS_VERIFIER); /* oracle-iid, oracle-markov */
    a->auc = a->auc_se = a->win_tie = a->lat_pred_ms = a->d_uni = a->d_bi = a->ppl = NAN;
    speed_and_cost(a);
    if (analyze_log(R, a, err) || quality(R, a, err)) return sp_err_prefix(err, "run %.12s (%s %s)", ri->hash, ri->method, a->setting);
    if (R->o->log)
        fprintf(R->o->log, "analyze: %s %s %s: %lld tokens%s%s\n", ri->method, a->setting, a->dataset, (long long)a->n_tok,
                a->note[0] ? "; " : "", a->note);
    return 0;
}

/* ------------------------------------------------------------------ cross-run comparisons */

/* The verifier's training data by name: the dataset of a run with that content hash. */
static void name_ver_data(Report *R, RunAn *a) {
    const char *h = a->ri->verifier_data_sha256;
    if (!h[0]) return;
    for (int j = 0; j < R->rs.n; j++)
        if (!strcmp(R->rs.runs[j].dataset_sha256, h)) {
            snprintf(a->ver_data, sizeof a->ver_data, "%s", base(R->rs.runs[j].dataset));
            return;
        }
    snprintf(a->ver_data, sizeof a->ver_data, "sha256:%.12s", h);
}

static double rate(const RunInfo *r) { return r->t_total > 0 ? (double)r->tokens / r->t_total : NAN; }

/* Speed-up over the ar / sd runs on the same data and temperature (the mean of their rates). */
static void speedups(Report *R, RunAn *a) {
    double s[2] = {0, 0};
    int n[2] = {0, 0};
    for (int j = 0; j < R->rs.n; j++) {
        const RunInfo *o = &R->rs.runs[j];
        int k = method_name_eq(o->method, DM_AR) ? 0 : method_name_eq(o->method, DM_SD) ? 1 : -1;
        if (k < 0 || !same_cell(o, a->ri) || isnan(rate(o))) continue;
        s[k] += rate(o), n[k]++;
    }
    a->speedup_ar = n[0] ? rate(a->ri) / (s[0] / n[0]) : NAN;
    a->speedup_sd = n[1] ? rate(a->ri) / (s[1] / n[1]) : NAN;
}

static int cmp_u64(const void *x, const void *y) {
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
    return (a > b) - (a < b);
}

/* Appends the unigram (bigram when bi) keys of a's tokens to keys. */
static void gram_keys(const RunAn *a, int bi, uint64_t *keys, size_t *n) {
    for (int64_t i = 0; i < a->n_tok; i++) {
        if (!bi) keys[(*n)++] = (uint32_t)a->tok[i];
        else if (i > 0 && a->tok_prompt[i] == a->tok_prompt[i - 1])
            keys[(*n)++] = ((uint64_t)(uint32_t)a->tok[i - 1] << 32) | (uint32_t)a->tok[i];
    }
}

/* d_TV between the empirical laws of two sorted key multisets. */
static double dtv_sorted(const uint64_t *a, size_t na, const uint64_t *b, size_t nb) {
    if (!na || !nb) return NAN;
    double s = 0;
    size_t i = 0, j = 0;
    while (i < na || j < nb) {
        uint64_t k = (j >= nb || (i < na && a[i] <= b[j])) ? a[i] : b[j];
        double ca = 0, cb = 0;
        while (i < na && a[i] == k) ca++, i++;
        while (j < nb && b[j] == k) cb++, j++;
        s += fabs(ca / (double)na - cb / (double)nb);
    }
    return s / 2;
}

/* Unigram and bigram d_TV of each run's outputs against the pooled ar outputs on the same data and temperature. */
static int drift(Report *R, SpErr *err) {
    for (int i = 0; i < R->rs.n; i++) {
        RunAn *a = &R->an[i];
        size_t n_ref = 0;
        for (int j = 0; j < R->rs.n; j++)
            if (method_name_eq(R->an[j].ri->method, DM_AR) && same_cell(R->an[j].ri, a->ri))
                n_ref += (size_t)R->an[j].n_tok;
        if (n_ref == 0 || method_name_eq(a->ri->method, DM_AR)) continue;
        uint64_t *ref = malloc(n_ref * sizeof *ref), *mine = malloc((size_t)(a->n_tok ? a->n_tok : 1) * sizeof *mine);
        if (!ref || !mine) {
            free(ref), free(mine);
            return sp_fail(err, "out of memory");
        }
        double d[2];
        for (int bi = 0; bi < 2; bi++) {
            size_t nr = 0, nm = 0;
            for (int j = 0; j < R->rs.n; j++)
                if (method_name_eq(R->an[j].ri->method, DM_AR) && same_cell(R->an[j].ri, a->ri))
                    gram_keys(&R->an[j], bi, ref, &nr);
            gram_keys(a, bi, mine, &nm);
            qsort(ref, nr, sizeof *ref, cmp_u64);
            qsort(mine, nm, sizeof *mine, cmp_u64);
            d[bi] = dtv_sorted(mine, nm, ref, nr);
        }
        a->d_uni = d[0], a->d_bi = d[1], a->has_drift = 1;
        free(ref), free(mine);
    }
    return 0;
}

/* Win-tie rate with the target as judge: the share of prompts where the run's output has a mean
 * target log-probability per token at least that of the sd run's (same data, temperature and seed) minus the
 * tie margin. */
static void win_tie(Report *R, RunAn *a) {
    const RunInfo *ref = NULL;
    for (int j = 0; j < R->rs.n && !ref; j++) {
        const RunInfo *o = &R->rs.runs[j];
        if (method_name_eq(o->method, DM_SD) && same_cell(o, a->ri) && o->seed == a->ri->seed)
            ref = o;
    }
    if (!ref || ref == a->ri) return;
    int wins = 0, n = 0;
    for (int i = 0; i < a->ri->n_rows; i++) {
        const PromptInfo *p = &a->ri->prompts[i];
        for (int k = 0; p->scored && p->scored_tokens > 0 && k < ref->n_rows; k++) {
            const PromptInfo *q = &ref->prompts[k];
            if (q->prompt_index != p->prompt_index || !q->scored || q->scored_tokens <= 0) continue;
            double mp = p->target_logprob / (double)p->scored_tokens, mq = q->target_logprob / (double)q->scored_tokens;
            wins += mp >= mq - R->o->tie_margin, n++;
        }
    }
    a->n_win_tie = n;
    a->win_tie = n ? (double)wins / n : NAN;
}

/* ------------------------------------------------------------------ checks */

static Check *add_check(Report *R, int run, const char *name, const char *model, int kind) {
    if (R->n_ck == R->cap_ck) {
        int nc = R->cap_ck ? 2 * R->cap_ck : 64;
        Check *n = realloc(R->ck, (size_t)nc * sizeof *n);
        if (!n) return NULL;
        R->ck = n, R->cap_ck = nc;
    }
    Check *c = &R->ck[R->n_ck++];
    memset(c, 0, sizeof *c);
    c->run = run, c->kind = kind, c->pass = -1;
    c->p_value = c->lo = c->hi = NAN;
    snprintf(c->name, sizeof c->name, "%s", name);
    snprintf(c->model, sizeof c->model, "%s", model);
    return c;
}

/* The oracle's measured rates against its configured ones. The interval is the bootstrap one over
 * prompts (a Wilson interval would assume independent decisions, which oracle-markov breaks on
 * purpose while keeping the marginal rates); without theorem results, Wilson. */
static int oracle_checks(Report *R, int i) {
    RunAn *a = &R->an[i];
    const double conf[2] = {a->ri->eta_fp, a->ri->eta_tp};
    const int64_t k[2] = {a->fp, a->tp}, n[2] = {a->nneg, a->npos};
    const char *names[2] = {"eta_FP = configured", "eta_TP = configured"};
    for (int j = 0; j < 2; j++) {
        Check *c = add_check(R, i, names[j], a->has_tc ? "oracle" : "oracle-wilson", CK_CI);
        if (!c) return -1;
        c->pred = conf[j];
        c->meas = n[j] ? (double)k[j] / (double)n[j] : NAN;
        c->se = a->has_tc ? a->tc.se_meas[j ? TQ_ETA_TP : TQ_ETA_FP] : NAN;
        c->n = n[j];
    }
    return 0;
}

/* Marks c as a row without a verdict, with its reason. */
static void no_verdict(Check *c, const char *why) {
    c->kind = CK_INFO;
    snprintf(c->why, sizeof c->why, "%s", why);
}

/* Why check q of run a has no verdict, or NULL when its assumptions hold (the verdict rules):
 *   Thm 3.1 (TQ_DTV): none under greedy decoding (temperature 0): the drafted token is q's argmax,
 *     not a sample from q, and the logged p and q are one-hot, so (1 - p/q)^+ is the indicator
 *     "the target's greedy token differs"; with sound labels at lambda >= 1 that is the unacceptable
 *     label itself and the prediction equals the measurement by the definition of eta_FP (a check
 *     that cannot fail), with paper-code labels (the softmax) they are different events. Nor at
 *     lambda != 1, where the theorem is not exact.
 *   false accepts (TQ_FA): only where the run's i.i.d. tests do not reject (the formula assumes
 *     i.i.d. errors; oracle-markov breaks them on purpose).
 *   tokens per target call (TQ_TOKENS): rows only for runs with bonus tokens (otherwise it is
 *     TQ_MEAN_T), and never a verdict: E[B] is measured, not predicted by Thm 3.4. */
static const char *why_no_verdict(const RunAn *a, int q) {
    const RunInfo *ri = a->ri;
    if (q == TQ_DTV && ri->temperature == 0)
        return "greedy decoding (temperature 0): the draft is q's argmax, not a sample from q; p and q in the log are "
               "one-hot, so the estimate is the indicator of a target/draft mismatch and Thm 3.1 does not apply";
    if (q == TQ_DTV && fabs(ri->lambda - 1) > 1e-12) return "Thm 3.1 is exact only at lambda = 1";
    if (q == TQ_FA && !a->has_iid) return "the i.i.d. tests were not run: the overshoot formula assumes i.i.d. errors";
    if (q == TQ_FA && a->iid.rejected) return "i.i.d. rejected by the run's own tests: the overshoot formula assumes i.i.d. errors";
    if (q == TQ_TOKENS)
        return "bonus rounds: tokens per target call = T + B, B = [the target accepted the tested draft]; E[B] is "
               "measured (not predicted by Thm 3.4, which has T = N + 1 tokens), so only E[T] (steps) is checked";
    return NULL;
}

static int theorem_checks(Report *R, int i) {
    RunAn *a = &R->an[i];
    const TcResult *t = &a->tc;
    int bonus = a->tc.est.bonus_rate > 0;
    for (int m = 0; m < TC_MODELS; m++) {
        for (int q = 0; q < TQ_N; q++) {
            if (q == TQ_ETA_FP || q == TQ_ETA_TP) continue; /* measured rates: oracle_checks */
            if (q == TQ_DTV && m != TC_IID) continue;      /* the same prediction under both label models */
            if (q == TQ_TOKENS && (m != TC_IID || !bonus)) continue; /* without a bonus it is TQ_MEAN_T */
            Check *c = add_check(R, i, tq_name(q), q == TQ_DTV ? "-" : tc_model_name(m), CK_CI);
            if (!c) return -1;
            c->pred = t->est.pred[m][q], c->meas = t->est.meas[q], c->se = t->se_diff[m][q];
            const char *why = why_no_verdict(a, q);
            if (why) no_verdict(c, why);
        }
        Check *g = add_check(R, i, "Thm3.3 law of N (chi-square)", tc_model_name(m), CK_PVALUE);
        if (!g) return -1;
        g->meas = t->gof_stat[m], g->pred = t->gof_df[m], g->p_value = t->gof_p[m];
    }
    return 0;
}

/* Thm 3.1 from `sprinter dtv` files: the file whose verifier and tau match a sprinter run. */
static int dtv_checks(Report *R) {
    for (int f = 0; f < R->n_dtv; f++) {
        const DtvFile *d = &R->dtv[f];
        if (strcmp(d->method, "sprinter")) continue; /* Thm 3.1 is SPRINTER's; the other methods' files have no prediction */
        Check *c = add_check(R, -1, "Thm3.1 exact d_TV (sprinter dtv)", "dtv", CK_CI);
        if (!c) return -1;
        c->pred = d->pred_global, c->meas = d->dtv_p_ps, c->se = d->se_diff;
        if (fabs(d->lambda - 1) > 1e-12) no_verdict(c, "Thm 3.1 is exact only at lambda = 1");
    }
    return 0;
}

/* Intervals and verdicts once the number of checks is known. */
static void judge(Report *R) {
    R->m_tests = 0;
    for (int i = 0; i < R->n_ck; i++) R->m_tests += R->ck[i].kind != CK_INFO;
    double a = R->o->alpha / (R->m_tests ? R->m_tests : 1);
    R->conf_sim = 1 - a;
    double z = z_of_conf(R->conf_sim);
    for (int i = 0; i < R->n_ck; i++) {
        Check *c = &R->ck[i];
        if (c->kind == CK_PVALUE) {
            c->pass = isnan(c->p_value) ? -1 : c->p_value >= a;
        } else if (!strcmp(c->model, "oracle-wilson")) {
            int64_t n = c->n;
            Interval w = wilson_interval((int64_t)llround(c->meas * (double)n), n, R->conf_sim);
            c->lo = w.lo, c->hi = w.hi;
            c->pass = n ? c->pred >= w.lo && c->pred <= w.hi : -1;
        } else {
            c->lo = c->meas - z * c->se, c->hi = c->meas + z * c->se;
            if (c->kind == CK_CI)
                c->pass = isnan(c->meas) || isnan(c->pred) || isnan(c->se) ? -1 : c->pred >= c->lo && c->pred <= c->hi;
        }
    }
}

static int build_checks(Report *R, SpErr *err) {
    for (int i = 0; i < R->rs.n; i++) {
        RunAn *a = &R->an[i];
        if (a->is_oracle && a->has_op && oracle_checks(R, i)) return sp_fail(err, "out of memory");
        if (a->has_tc && theorem_checks(R, i)) return sp_fail(err, "out of memory");
    }
    if (dtv_checks(R)) return sp_fail(err, "out of memory");
    judge(R);
    return 0;
}

/* ------------------------------------------------------------------ the whole report */

static int gnuplot_present(const char *prog) {
    if (strchr(prog, '/')) return access(prog, X_OK) == 0;
    const char *path = getenv("PATH");
    char buf[4200];
    for (const char *p = path ? path : ""; *p;) {
        size_t n = strcspn(p, ":");
        snprintf(buf, sizeof buf, "%.*s/%s", (int)n, p, prog);
        if (n && access(buf, X_OK) == 0) return 1;
        p += n + (p[n] == ':');
    }
    return 0;
}

static void report_free(Report *R) {
    for (int i = 0; R->an && i < R->rs.n; i++) {
        RunAn *a = &R->an[i];
        free(a->tok), free(a->tok_prompt), free(a->scores), free(a->labels), free(a->rouge_l);
        if (a->has_tc) tc_result_free(&a->tc);
    }
    free(R->an);
    free(R->ck);
    free(R->dtv);
    free(R->findings);
    runset_free(&R->rs);
}

static int load(Report *R, SpErr *err) {
    const ReportOpts *o = R->o;
    char path[4400];
    struct stat st;
    if (stat(o->results_dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return sp_fail(err, "%s: not a results directory (run sprinter sweep SPEC --out %s first)", o->results_dir,
                       o->results_dir);
    snprintf(path, sizeof path, "%s/runs.sqlite", o->results_dir);
    if (access(path, R_OK) != 0) return sp_fail(err, "%s: no runs.sqlite (not a sweep output directory)", o->results_dir);
    if (runset_load(path, &R->rs, err)) return -1;
    if (R->rs.n == 0) return sp_fail(err, "%s: no finished runs (status 'done')", path);
    snprintf(path, sizeof path, "%s/dtv", o->results_dir);
    if (dtv_files_read(path, &R->dtv, &R->n_dtv, err)) return -1;
    snprintf(path, sizeof path, "%s/dtv.h5", o->results_dir);
    if (access(path, F_OK) == 0) {
        DtvFile *n = realloc(R->dtv, (size_t)(R->n_dtv + 1) * sizeof *n);
        if (!n) return sp_fail(err, "out of memory");
        R->dtv = n;
        if (dtv_file_read(path, &R->dtv[R->n_dtv], err)) return -1;
        R->n_dtv++;
    }
    return 0;
}

static int analyze_all(Report *R, SpErr *err) {
    if (!(R->an = calloc((size_t)R->rs.n, sizeof *R->an))) return sp_fail(err, "out of memory");
    for (int i = 0; i < R->rs.n; i++) {
        R->an[i].ri = &R->rs.runs[i];
        if (analyze_run(R, &R->an[i], err)) return -1;
        R->has_refs |= R->an[i].n_rouge > 0;
    }
    for (int i = 0; i < R->rs.n; i++) {
        name_ver_data(R, &R->an[i]);
        speedups(R, &R->an[i]);
        win_tie(R, &R->an[i]);
    }
    return drift(R, err);
}

static void summarise(const Report *R, ReportSummary *s) {
    s->runs = R->rs.n;
    for (int i = 0; i < R->rs.n; i++) {
        s->verifier_runs += R->an[i].is_ver;
        s->iid_runs += R->an[i].has_iid;
        s->iid_rejected += R->an[i].has_iid && R->an[i].iid.rejected;
    }
    for (int i = 0; i < R->n_ck; i++)
        if (R->ck[i].pass >= 0) s->checks++, s->checks_failed += R->ck[i].pass == 0;
    snprintf(s->index_path, sizeof s->index_path, "%s/index.md", R->dir);
}

/* Removes the staging and retired report directories of analyze processes that no longer run (one
 * killed midway leaves its .report.tmp-PID behind). */
static void remove_stale_staging(const char *results_dir) {
    DIR *d = opendir(results_dir);
    if (!d) return;
    for (struct dirent *e; (e = readdir(d));) {
        long pid = 0;
        if (sscanf(e->d_name, ".report.tmp-%ld", &pid) != 1 && sscanf(e->d_name, ".report.old-%ld", &pid) != 1) continue;
        if (pid <= 0 || pid == (long)getpid() || (kill((pid_t)pid, 0) != 0 && errno == ESRCH)) {
            char path[4600];
            snprintf(path, sizeof path, "%s/%s", results_dir, e->d_name);
            sp_remove_flat_dir(path, NULL);
        }
    }
    closedir(d);
}

/* staging -> final: the old final is moved aside first, then removed (a report directory holds only
 * files). A directory `final` that is not a report (anything but a directory) is refused. */
static int swap_in(const char *staging, const char *final, const char *retired, SpErr *err) {
    struct stat st;
    int had = lstat(final, &st) == 0;
    if (had && !S_ISDIR(st.st_mode)) return sp_fail(err, "%s: exists and is not a directory; remove it", final);
    if (had && rename(final, retired) != 0) return sp_fail(err, "%s: cannot move aside: %s", final, strerror(errno));
    if (rename(staging, final) != 0) {
        int e = errno;
        if (had) (void)rename(retired, final); /* put the old report back */
        return sp_fail(err, "%s: cannot rename to %s: %s", staging, final, strerror(e));
    }
    return had ? sp_remove_flat_dir(retired, err) : 0;
}

int report_write(const ReportOpts *o, ReportSummary *s, SpErr *err) {
    Report R = {.o = o};
    memset(s, 0, sizeof *s);
    if (o->bootstrap < 2 || !(o->alpha > 0 && o->alpha < 1))
        return sp_fail(err, "bootstrap = %d must be >= 2 and alpha = %g in (0, 1)", o->bootstrap, o->alpha);
    if (o->plots && !gnuplot_present(o->gnuplot))
        return sp_fail(err, "%s: not found in PATH; the plots need gnuplot (Debian package gnuplot-nox, see "
                            "scripts/install-deps.sh), or pass --no-plots", o->gnuplot);
    /* the report is built in a staging directory and swapped in as a whole: killed or out of space
     * midway, it leaves the previous report as it was (and no mix of old and new files) */
    char final[4200], retired[4300];
    snprintf(final, sizeof final, "%s/report", o->results_dir);
    snprintf(R.dir, sizeof R.dir, "%s/.report.tmp-%ld", o->results_dir, (long)getpid());
    snprintf(retired, sizeof retired, "%s/.report.old-%ld", o->results_dir, (long)getpid());
    remove_stale_staging(o->results_dir);
    int rc = load(&R, err);
    if (rc == 0) rc = sp_mkdir_p(R.dir, err);
    if (rc == 0) rc = analyze_all(&R, err);
    if (rc == 0) rc = build_checks(&R, err);
    if (rc == 0) rc = write_tsvs(&R, err);
    if (rc == 0) rc = write_tables(&R, err);
    if (rc == 0) rc = write_plots(&R, err);
    if (rc == 0) rc = write_peers(&R, err);
    if (rc == 0) rc = write_findings(&R, err);
    if (rc == 0) rc = write_index(&R, err);
    if (rc == 0) rc = swap_in(R.dir, final, retired, err);
    if (rc == 0) {
        snprintf(R.dir, sizeof R.dir, "%s", final);
        summarise(&R, s);
    } else {
        sp_remove_flat_dir(R.dir, NULL);
    }
    report_free(&R);
    return rc;
}
