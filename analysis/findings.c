/* findings.c - report/FINDINGS.md and FINDINGS.tsv: one row per claim of the SPRINTER paper or its
 * public review, measured on the runs of the results directory, with its 95% interval, a verdict and
 * the run hashes it comes from; and index.md's section "The review's questions, answered on this
 * pair" (the same table). Every figure is recomputable from runs.sqlite, the token logs and the
 * dtv files (results/README.md); the definitions are in the header of FINDINGS.md, written below.
 *
 * Cells: protocol x dataset. A protocol is what the labelled runs (sprinter, the oracles) recorded:
 * their label rule (runs.label_rule; before schema 6, by temperature: 0 paper-code, else sound) at
 * their temperature. A run without labels (ar, draft, sd, ...) does not depend on a label rule: it
 * belongs to every protocol of its temperature, so the ar, sd and sprinter runs of one sweep share a
 * cell at any temperature (make specbench: greedy, label rule sound). A protocol is named
 * "<label rule>, T=<temperature>" (%g). */
#include <gsl/gsl_cdf.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "methods.h"
#include "modelorigin.h"
#include "peers.h"
#include "report_int.h"
#include "report_util.h"
#include "rules.h"
#include "stats.h"

#define FIND_MAX_ROWS 512
#define FIND_POWER 0.80       /* (3): power the i.i.d. tests should have */
#define FIND_LAG1_EFFECT 0.10 /* (3): lag-1 autocorrelation to detect */
#define FIND_GAP_EFFECT 0.10  /* (3): gap in eta between the easiest and hardest quartile to detect */
#define FIND_TOKENS 20        /* (5): FLOPs for this many tokens */
#define FIND_Z95 1.959964     /* two-sided 95% normal quantile: the intervals mean +- FIND_Z95 SE */

typedef struct FindRow {
    char id[8], claim[160], protocol[48], dataset[64];
    char measured[1536], verdict[512], runs[256];
} FindRow;

/* One protocol: a label rule at one temperature (header). */
typedef struct Cell {
    char rule[16], name[48];
    double temperature;
} Cell;

#define FIND_MAX_CELLS 16

typedef struct Findings {
    const Report *R;
    FindRow *rows;
    int n;
    FILE *tsv;
    Cell cells[FIND_MAX_CELLS];
    int n_cells;
} Findings;

/* ------------------------------------------------------------------ helpers */

static void withhold_verdicts(Findings *F);

static int same(double a, double b) { return fabs(a - b) < 1e-9; }

/* 1 for a run that records labels (its method runs the sequential verifier: sprinter, the oracles). */
static int labelled(const RunInfo *r) { return method_name_is(r->method, MC_SEQUENTIAL); }

/* The label rule of a labelled run: runs.label_rule, by temperature before schema 6. */
static const char *rule_of(const RunInfo *r) {
    if (r->label_rule[0]) return r->label_rule;
    return r->temperature == 0 ? "paper-code" : "sound";
}

/* ", T=<temperature>": the end of the name of every protocol at the run's temperature. */
static void temperature_tail(const RunInfo *r, char *buf, size_t cap) { snprintf(buf, cap, ", T=%g", r->temperature); }

/* The protocol of a labelled run: "<label rule>, T=<temperature>". */
static void cell_name(const RunInfo *r, char *buf, size_t cap) {
    char tail[32];
    temperature_tail(r, tail, sizeof tail);
    snprintf(buf, cap, "%s%s", rule_of(r), tail);
}

/* Does run r belong to the protocol named p? A labelled run by its label rule and temperature; any
 * other run by its temperature alone (it belongs to every protocol of its temperature). */
static int in_protocol(const RunInfo *r, const char *p) {
    char buf[48];
    if (labelled(r)) {
        cell_name(r, buf, sizeof buf);
        return !strcmp(buf, p);
    }
    temperature_tail(r, buf, sizeof buf);
    size_t n = strlen(p), k = strlen(buf);
    return n > k && !strcmp(p + n - k, buf);
}

static int cmp_cell(const void *x, const void *y) {
    const Cell *a = x, *b = y;
    int ra = strcmp(a->rule, "paper-code") != 0, rb = strcmp(b->rule, "paper-code") != 0; /* paper-code first */
    if (ra != rb) return ra - rb;
    int c = strcmp(a->rule, b->rule);
    return c ? c : (a->temperature > b->temperature) - (a->temperature < b->temperature);
}

/* The protocols of the directory: one per (label rule, temperature) of its labelled runs. */
static void find_cells(Findings *F) {
    const Report *R = F->R;
    F->n_cells = 0;
    for (int i = 0; i < R->rs.n; i++) {
        const RunInfo *r = R->an[i].ri;
        if (!labelled(r)) continue;
        int seen = 0;
        for (int k = 0; k < F->n_cells; k++) seen |= in_protocol(r, F->cells[k].name);
        if (seen || F->n_cells == FIND_MAX_CELLS) continue;
        Cell *c = &F->cells[F->n_cells++];
        snprintf(c->rule, sizeof c->rule, "%s", rule_of(r));
        c->temperature = r->temperature;
        cell_name(r, c->name, sizeof c->name);
    }
    qsort(F->cells, (size_t)F->n_cells, sizeof *F->cells, cmp_cell);
}

/* The name of the protocol of a labelled run. */
static const char *protocol_of(const Findings *F, const RunInfo *r) {
    for (int k = 0; k < F->n_cells; k++)
        if (in_protocol(r, F->cells[k].name)) return F->cells[k].name;
    return rule_of(r);
}

static FindRow *add_row(Findings *F, const char *id, const char *claim, const char *protocol, const char *dataset) {
    if (F->n == FIND_MAX_ROWS) return NULL;
    FindRow *w = &F->rows[F->n++];
    memset(w, 0, sizeof *w);
    snprintf(w->id, sizeof w->id, "%s", id);
    snprintf(w->claim, sizeof w->claim, "%s", claim);
    snprintf(w->protocol, sizeof w->protocol, "%s", protocol);
    snprintf(w->dataset, sizeof w->dataset, "%s", dataset);
    return w;
}

/* Appends printf text to a fixed buffer. */
static void cat(char *buf, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void cat(char *buf, size_t cap, const char *fmt, ...) {
    size_t k = strlen(buf);
    if (k + 1 >= cap) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + k, cap - k, fmt, ap);
    va_end(ap);
}

static void add_run(FindRow *w, const RunAn *a) { cat(w->runs, sizeof w->runs, "%s%.12s", w->runs[0] ? " " : "", a->ri->hash); }

/* One number of a row, machine-readable. */
static void tsv(Findings *F, const FindRow *w, double lambda, double tau, const char *quantity, double value, double lo,
                double hi, const char *runs) {
    fprintf(F->tsv, "%s\t%s\t%s\t%.9g\t%.9g\t%s\t%.9g\t%.9g\t%.9g\t%s\n", w->id, w->protocol, w->dataset, lambda, tau,
            quantity, value, lo, hi, runs);
}

typedef struct Est {
    double v, lo, hi;
} Est;

/* eta_FP (cls 0) or eta_TP (cls 1) of a run with its 95% interval: the bootstrap over prompts of the
 * theorem checks when there is one (honest under correlated decisions), else Wilson. */
static Est eta_of(const RunAn *a, int cls) {
    int64_t k = cls ? a->tp : a->fp, n = cls ? a->npos : a->nneg;
    Est e = {n ? (double)k / (double)n : NAN, NAN, NAN};
    double se = a->has_tc ? a->tc.se_meas[cls ? TQ_ETA_TP : TQ_ETA_FP] : NAN;
    if (!isnan(se) && !isnan(e.v)) {
        e.lo = fmax(0, e.v - FIND_Z95 * se), e.hi = fmin(1, e.v + FIND_Z95 * se);
    } else if (n) {
        Interval w = wilson_interval(k, n, 0.95);
        e.lo = w.lo, e.hi = w.hi;
    }
    return e;
}

/* v with its normal 95% interval v +- FIND_Z95 se. */
static Est normal_ci(double v, double se) { return (Est){v, v - FIND_Z95 * se, v + FIND_Z95 * se}; }

static void cat_est(char *buf, size_t cap, const char *name, Est e) {
    if (isnan(e.v)) cat(buf, cap, "%s -", name);
    else cat(buf, cap, "%s %.3f [%.3f, %.3f]", name, e.v, e.lo, e.hi);
}

/* The datasets of the runs, in order of first appearance (basenames). */
static int datasets(const Report *R, const char **out, int cap) {
    int n = 0;
    for (int i = 0; i < R->rs.n; i++) {
        int seen = 0;
        for (int j = 0; j < n; j++) seen |= !strcmp(out[j], R->an[i].dataset);
        if (!seen && n < cap) out[n++] = R->an[i].dataset;
    }
    return n;
}

/* A protocol's main verifier data: the verifier_data_sha256 most of its sprinter runs share (the
 * first seen on a tie); "" when none has one. Runs with another verifier (Table 4's other direction,
 * experiments/paper_*_transfer.ini) stay out of the FINDINGS cells. */
static const char *main_ver_data(const Report *R, const char *protocol) {
    const char *best = "";
    int best_n = 0;
    for (int i = 0; i < R->rs.n; i++) {
        const RunInfo *x = R->an[i].ri;
        if (!x->verifier_data_sha256[0] || !in_protocol(x, protocol)) continue;
        int n = 0;
        for (int j = 0; j < R->rs.n; j++)
            n += !strcmp(R->an[j].ri->verifier_data_sha256, x->verifier_data_sha256) &&
                 in_protocol(R->an[j].ri, protocol);
        if (n > best_n) best = x->verifier_data_sha256, best_n = n;
    }
    return best;
}

static int in_cell(const Report *R, const RunAn *a, const char *protocol, const char *dataset) {
    if (!in_protocol(a->ri, protocol) || strcmp(a->dataset, dataset)) return 0;
    return !a->ri->verifier_data_sha256[0] || !strcmp(a->ri->verifier_data_sha256, main_ver_data(R, protocol));
}

/* The first run of method m in the cell (for sprinter: at lambda, tau; NaN = any). */
static const RunAn *find_run(const Report *R, DecodeMethod m, const char *protocol, const char *dataset, double lambda,
                             double tau) {
    for (int i = 0; i < R->rs.n; i++) {
        const RunAn *a = &R->an[i];
        if (!method_name_eq(a->ri->method, m) || !in_cell(R, a, protocol, dataset)) continue;
        if (!isnan(lambda) && !same(a->ri->lambda, lambda)) continue;
        if (!isnan(tau) && !same(a->ri->tau, tau)) continue;
        return a;
    }
    return NULL;
}

/* The dtv file of a sprinter run's verifier, dataset, lambda and tau, or NULL. */
static const DtvFile *dtv_of(const Report *R, const RunAn *a) {
    for (int f = 0; f < R->n_dtv; f++) {
        const DtvFile *d = &R->dtv[f];
        if (a->ri->verifier_sha256[0] && !strcmp(d->verifier_sha256, a->ri->verifier_sha256) &&
            !strcmp(d->data_sha256, a->ri->dataset_sha256) && same(d->lambda, a->ri->lambda) && same(d->tau, a->ri->tau))
            return d;
    }
    return NULL;
}

/* A protocol's own lambda for rows 4-6: the authors' label rule (code_lambda, 1) for paper-code, the
 * paper's deployed setting (deployed_lambda, 1.2) for sound. */
static double lambda_of(const Report *R, const char *protocol) {
    return strncmp(protocol, "paper-code", strlen("paper-code")) ? R->o->deployed_lambda : R->o->code_lambda;
}

/* ------------------------------------------------------------------ the review's bound

 * Thm 3.3: E[N] = (eta_TP - eta_TP^r) / (1 - eta_TP) + eta_TP^r / (1 - eta_FP). The first term is
 * eta_TP + ... + eta_TP^(r-1) <= r - 1 and the second <= 1 / (1 - eta_FP) (eta_TP <= 1), so
 * E[N] <= (r - 1) + 1 / (1 - eta_FP), i.e. eta_FP >= 1 - 1 / (E[N] - r + 1). Both bounds are linear
 * in r, so a random r enters through its mean. The bound says something only when E[N] > r (NaN
 * otherwise: eta_FP >= 0 is no constraint). The authors' avg tokens is N + 1{the target accepts the
 * round's last draft}, so E[N] lies in [avg - 1, avg]: the review read E[N] = avg (the larger bound);
 * E[N] = avg - 1 gives the smaller one. The review's 0.86 is 1 - 1/(12.10 - r) at r = 5 only. */
enum { BOUND_R_LO = 2, BOUND_R_HI = 8, BOUND_R_REVIEW = 5 };

double findings_review_bound(double en, double r) {
    double slack = en - r + 1;
    return slack > 1 ? 1 - 1 / slack : NAN;
}
#define review_bound findings_review_bound

/* "below" / "meets" / "not separable from" of an eta_FP interval against a bound. */
static const char *against(Est fp, double bound) {
    if (isnan(bound) || isnan(fp.v) || isnan(fp.lo)) return "not compared with";
    return fp.hi < bound ? "below" : fp.lo >= bound ? "meets" : "not separable from";
}

/* The bound at r = 2..8 under both readings, into the measured text and the TSV. */
static void bound_table(Findings *F, FindRow *w, double lambda, double tau) {
    const double avg = SP_PAPER_AVG_TOKENS;
    cat(w->measured, sizeof w->measured, "; the review's bound eta_FP >= 1 - 1/(E[N] - r + 1) by r, E[N] = %.2f / %.2f:",
        avg, avg - 1);
    for (int r = BOUND_R_LO; r <= BOUND_R_HI; r++) {
        double hi = review_bound(avg, r), lo = review_bound(avg - 1, r);
        cat(w->measured, sizeof w->measured, " r %d: %.3f / %.3f%s", r, hi, lo, r < BOUND_R_HI ? "," : "");
        char q[64];
        snprintf(q, sizeof q, "review_bound_r%d_en_avg", r);
        tsv(F, w, lambda, tau, q, hi, NAN, NAN, w->runs);
        snprintf(q, sizeof q, "review_bound_r%d_en_avg_minus_1", r);
        tsv(F, w, lambda, tau, q, lo, NAN, NAN, w->runs);
    }
}

/* Row 2's verdict: the bound at the label model's mean r under both readings of avg tokens. */
void findings_bound_verdict(char *buf, size_t cap, double v, double lo_ci, double hi_ci, double r, double tau_star) {
    const double avg = SP_PAPER_AVG_TOKENS;
    Est fp = {v, lo_ci, hi_ci};
    double hi = review_bound(avg, r), lo = review_bound(avg - 1, r);
    if (isnan(tau_star)) {
        snprintf(buf, cap, "no verdict: avg tokens never %.2f on this tau grid, so the review's bound has no E[N] here",
                 avg);
    } else if (isnan(r) || isnan(fp.v)) {
        snprintf(buf, cap, "no verdict: %s", isnan(r) ? "no label-model estimate of r" : "no eta_FP");
    } else if (isnan(lo)) {
        snprintf(buf, cap, "no verdict: at r = %.2f (mean of the label model) E[N] = avg - 1 = %.2f is <= r, so the "
                 "bound constrains nothing under that reading", r, avg - 1);
    } else {
        snprintf(buf, cap, "at r = %.2f (mean of the label model): bound %.3f (E[N] = avg tokens) / %.3f (E[N] = avg - "
                 "1); measured eta_FP %s the first, %s the second%s", r, hi, lo, against(fp, hi), against(fp, lo),
                 fp.hi < lo ? ": outside, avg tokens is not Thm 3.3's E[N] with i.i.d. errors at this r" : "");
    }
}

/* ------------------------------------------------------------------ (1) the deployed point */

static void deployed_row(Findings *F, const RunAn *a) {
    if (!a->has_op) return;
    char claim[160];
    snprintf(claim, sizeof claim, "deployed (eta_FP, eta_TP) at lambda %g, tau %g: never reported", a->ri->lambda,
             a->ri->tau);
    FindRow *w = add_row(F, "1", claim, protocol_of(F, a->ri), a->dataset);
    if (!w) return;
    Est fp = eta_of(a, 0), tp = eta_of(a, 1);
    cat_est(w->measured, sizeof w->measured, "eta_FP", fp);
    cat(w->measured, sizeof w->measured, " (%lld of %lld), ", (long long)a->fp, (long long)a->nneg);
    cat_est(w->measured, sizeof w->measured, "eta_TP", tp);
    cat(w->measured, sizeof w->measured, " (%lld of %lld); AUC %.3f", (long long)a->tp, (long long)a->npos, a->auc);
    double b = SP_REVIEW_ETA_FP_BOUND, lo = review_bound(SP_PAPER_AVG_TOKENS - 1, BOUND_R_REVIEW);
    snprintf(w->verdict, sizeof w->verdict, "measured; eta_FP %s the review's %.2f (1 - 1/(%.2f - r) at r = %d, avg "
             "tokens read as E[N]; %.3f if E[N] = avg - 1; row 2 has r = %d..%d) for the paper's pairs",
             isnan(fp.lo) ? "not comparable with" : fp.lo >= b ? "above" : fp.hi < b ? "below" : "not separable from", b,
             SP_PAPER_AVG_TOKENS + 1, BOUND_R_REVIEW, lo, BOUND_R_LO, BOUND_R_HI);
    add_run(w, a);
    tsv(F, w, a->ri->lambda, a->ri->tau, "eta_fp", fp.v, fp.lo, fp.hi, w->runs);
    tsv(F, w, a->ri->lambda, a->ri->tau, "eta_tp", tp.v, tp.lo, tp.hi, w->runs);
}

/* ------------------------------------------------------------------ (2) tau at avg tokens = 11.10 */

/* Mean of the r distribution of the paper's label model (Kaplan-Meier weights), NaN without one. */
static double mean_r(const RunAn *a) {
    if (!a->has_tc || !a->tc.r_weight) return NAN;
    double s = 0, m = 0;
    for (int k = 0; k <= a->tc.kmax; k++) s += a->tc.r_weight[k], m += k * a->tc.r_weight[k];
    return s > 0 ? m / s : NAN;
}

static int cmp_tau(const void *x, const void *y) {
    double a = (*(const RunAn *const *)x)->ri->tau, b = (*(const RunAn *const *)y)->ri->tau;
    return (a > b) - (a < b);
}

static void avg_tokens_rows(Findings *F, const char *protocol, const char *dataset, double lambda) {
    const Report *R = F->R;
    const RunAn *s[64];
    int n = 0;
    for (int i = 0; i < R->rs.n && n < 64; i++) {
        const RunAn *a = &R->an[i];
        if (method_name_eq(a->ri->method, DM_SPRINTER) && in_cell(R, a, protocol, dataset) && same(a->ri->lambda, lambda) &&
            !isnan(a->ri->avg_tokens_paper))
            s[n++] = a;
    }
    if (n == 0) return;
    qsort(s, (size_t)n, sizeof *s, cmp_tau);
    const double target = SP_PAPER_AVG_TOKENS;
    double tau_star = NAN;
    for (int k = 0; k + 1 < n && isnan(tau_star); k++) {
        double y0 = s[k]->ri->avg_tokens_paper - target, y1 = s[k + 1]->ri->avg_tokens_paper - target;
        if (y0 == 0) tau_star = s[k]->ri->tau;
        else if (y0 * y1 < 0) tau_star = s[k]->ri->tau + (s[k + 1]->ri->tau - s[k]->ri->tau) * y0 / (y0 - y1);
    }
    if (isnan(tau_star) && n && s[n - 1]->ri->avg_tokens_paper == target) tau_star = s[n - 1]->ri->tau;
    /* the grid point nearest tau* (or, not bracketed, the one whose avg tokens is nearest 11.10) */
    const RunAn *at = s[0];
    for (int k = 1; k < n; k++) {
        double dk = isnan(tau_star) ? fabs(s[k]->ri->avg_tokens_paper - target) : fabs(s[k]->ri->tau - tau_star);
        double d0 = isnan(tau_star) ? fabs(at->ri->avg_tokens_paper - target) : fabs(at->ri->tau - tau_star);
        if (dk < d0) at = s[k];
    }
    char claim[160];
    snprintf(claim, sizeof claim, "Table 2: avg tokens %.2f at the deployed point (lambda %g)", target, lambda);
    FindRow *w = add_row(F, "2", claim, protocol, dataset);
    if (!w) return;
    cat(w->measured, sizeof w->measured, "avg tokens by tau:");
    for (int k = 0; k < n; k++) cat(w->measured, sizeof w->measured, " %g: %.2f;", s[k]->ri->tau, s[k]->ri->avg_tokens_paper);
    if (isnan(tau_star))
        cat(w->measured, sizeof w->measured, " %.2f not reached on this tau grid; nearest tau %g (%.2f).", target,
            at->ri->tau, at->ri->avg_tokens_paper);
    else cat(w->measured, sizeof w->measured, " tau* = %.3f (linear between grid points); at tau %g:", tau_star, at->ri->tau);
    Est fp = eta_of(at, 0), tp = eta_of(at, 1);
    cat(w->measured, sizeof w->measured, " ");
    cat_est(w->measured, sizeof w->measured, "eta_FP", fp);
    cat(w->measured, sizeof w->measured, ", ");
    cat_est(w->measured, sizeof w->measured, "eta_TP", tp);
    const DtvFile *d = dtv_of(R, at);
    if (d)
        cat(w->measured, sizeof w->measured, ", d_TV(p, p_S) %.3f +- %.3f, d_TV(q, p_S) %.3f +- %.3f (exact, %d prefixes, "
            "temperature-1 laws; d_TV(p, q) %.3f)", d->dtv_p_ps, FIND_Z95 * d->se_dtv_p_ps, d->dtv_q_ps,
            FIND_Z95 * d->se_dtv_q_ps, d->n, d->dtv_pq);
    else cat(w->measured, sizeof w->measured, ", d_TV: no dtv file for this verifier and tau");
    double r = mean_r(at);
    if (!isnan(r)) cat(w->measured, sizeof w->measured, "; mean r %.2f", r);
    findings_bound_verdict(w->verdict, sizeof w->verdict, fp.v, fp.lo, fp.hi, r, tau_star);
    add_run(w, at);
    tsv(F, w, lambda, NAN, "tau_star", tau_star, NAN, NAN, w->runs);
    tsv(F, w, lambda, at->ri->tau, "avg_tokens_paper", at->ri->avg_tokens_paper, NAN, NAN, w->runs);
    tsv(F, w, lambda, at->ri->tau, "eta_fp", fp.v, fp.lo, fp.hi, w->runs);
    tsv(F, w, lambda, at->ri->tau, "eta_tp", tp.v, tp.lo, tp.hi, w->runs);
    tsv(F, w, lambda, at->ri->tau, "mean_r", r, NAN, NAN, w->runs);
    tsv(F, w, lambda, at->ri->tau, "review_bound_eta_fp", review_bound(target, r), NAN, NAN, w->runs);
    tsv(F, w, lambda, at->ri->tau, "review_bound_eta_fp_en_avg_minus_1", review_bound(target - 1, r), NAN, NAN, w->runs);
    bound_table(F, w, lambda, at->ri->tau);
    if (d) {
        Est ps = normal_ci(d->dtv_p_ps, d->se_dtv_p_ps), qs = normal_ci(d->dtv_q_ps, d->se_dtv_q_ps);
        tsv(F, w, lambda, at->ri->tau, "dtv_p_ps", ps.v, ps.lo, ps.hi, w->runs);
        tsv(F, w, lambda, at->ri->tau, "dtv_q_ps", qs.v, qs.lo, qs.hi, w->runs);
    }
}

/* ------------------------------------------------------------------ (3) i.i.d. tests and their power */

/* Decisions needed to detect a lag-1 autocorrelation rho at level a (two-sided) with power pw: the
 * sample autocorrelation of an i.i.d. sequence has SE 1/sqrt(n). */
static double n_lag1(double rho, double a, double pw) {
    double z = gsl_cdf_ugaussian_Pinv(1 - a / 2) + gsl_cdf_ugaussian_Pinv(pw);
    return ceil(z * z / (rho * rho));
}

/* Decisions per group to detect rates eta -+ gap/2 in two groups (two-proportion z test). */
static double n_gap(double eta, double gap, double a, double pw) {
    double p1 = fmin(fmax(eta - gap / 2, 0.01), 0.99 - gap), p2 = p1 + gap, pb = (p1 + p2) / 2;
    double z = gsl_cdf_ugaussian_Pinv(1 - a / 2) * sqrt(2 * pb * (1 - pb)) +
               gsl_cdf_ugaussian_Pinv(pw) * sqrt(p1 * (1 - p1) + p2 * (1 - p2));
    return ceil(z * z / (gap * gap));
}

static void iid_row(Findings *F, const RunAn *a) {
    const Report *R = F->R;
    if (!a->has_iid) return;
    const IidResult *t = &a->iid;
    double level = R->o->alpha / (t->n_tests ? t->n_tests : 1);
    double need_lag = n_lag1(FIND_LAG1_EFFECT, level, FIND_POWER);
    Est fp = eta_of(a, 0), tp = eta_of(a, 1);
    /* the difficulty test compares quartiles within a class: 4 groups of the per-group size */
    double need_fp = 4 * n_gap(isnan(fp.v) ? 0.5 : fp.v, FIND_GAP_EFFECT, level, FIND_POWER);
    double need_tp = 4 * n_gap(isnan(tp.v) ? 0.5 : tp.v, FIND_GAP_EFFECT, level, FIND_POWER);
    char claim[160];
    snprintf(claim, sizeof claim, "Thm 3.1, 3.3, 3.4 assume i.i.d. verifier errors (lambda %g, tau %g)", a->ri->lambda,
             a->ri->tau);
    FindRow *w = add_row(F, "3", claim, protocol_of(F, a->ri), a->dataset);
    if (!w) return;
    int reach_lag = (double)t->n >= need_lag, reach_gap = (double)a->nneg >= need_fp && (double)a->npos >= need_tp;
    cat(w->measured, sizeof w->measured,
        "%lld labelled decisions (%lld unacceptable, %lld acceptable); lag-1 autocorrelation of the decisions: %.3f "
        "(unacceptable), %.3f (acceptable); Ljung-Box p %.2g; min p %.2g over %d tests. Power %.0f%% at level %.4f "
        "(alpha / tests) needs %.0f decisions for a lag-1 autocorrelation of %.2f, and %.0f unacceptable / %.0f "
        "acceptable ones for a %.2f gap in eta between the easiest and hardest quartile",
        (long long)t->n, (long long)a->nneg, (long long)a->npos, t->lag1[0], t->lag1[1], t->lb.p_value, t->min_p,
        t->n_tests, 100 * FIND_POWER, level, need_lag, FIND_LAG1_EFFECT, need_fp, need_tp, FIND_GAP_EFFECT);
    snprintf(w->verdict, sizeof w->verdict, "i.i.d. %s%s%s; the run %s the lag-1 size and %s the gap size",
             t->rejected ? "rejected (" : "not rejected", t->rejected ? t->which : "", t->rejected ? ")" : "",
             reach_lag ? "reaches" : "does not reach", reach_gap ? "reaches" : "does not reach");
    add_run(w, a);
    tsv(F, w, a->ri->lambda, a->ri->tau, "decisions", (double)t->n, NAN, NAN, w->runs);
    tsv(F, w, a->ri->lambda, a->ri->tau, "needed_lag1", need_lag, NAN, NAN, w->runs);
    tsv(F, w, a->ri->lambda, a->ri->tau, "needed_gap_unacceptable", need_fp, NAN, NAN, w->runs);
    tsv(F, w, a->ri->lambda, a->ri->tau, "needed_gap_acceptable", need_tp, NAN, NAN, w->runs);
    tsv(F, w, a->ri->lambda, a->ri->tau, "iid_min_p", t->min_p, NAN, NAN, w->runs);
    tsv(F, w, a->ri->lambda, a->ri->tau, "iid_rejected", t->rejected, NAN, NAN, w->runs);
}

/* ------------------------------------------------------------------ (4) quality, paired by prompt */

/* paired_llpt as an Est. */
static Est paired(const RunInfo *x, const RunInfo *y, int *n_out) {
    PairedMean m = paired_llpt(x, y);
    *n_out = m.n;
    return (Est){m.mean, m.lo, m.hi};
}

/* Wins, ties, losses of x against y by mean log-likelihood per token, ties within margin. */
static void win_tie_loss(const RunInfo *x, const RunInfo *y, double margin, int *wtl) {
    wtl[0] = wtl[1] = wtl[2] = 0;
    for (int j = 0; j < x->n_rows; j++) {
        const PromptInfo *q = run_prompt(y, x->prompts[j].prompt_index);
        double d = prompt_llpt(&x->prompts[j]) - (q ? prompt_llpt(q) : NAN);
        if (isnan(d)) continue;
        wtl[d > margin ? 0 : d >= -margin ? 1 : 2]++;
    }
}

static void quality_rows(Findings *F, const char *protocol, const char *dataset) {
    const Report *R = F->R;
    const RunAn *ar = find_run(R, DM_AR, protocol, dataset, NAN, NAN), *dr = find_run(R, DM_DRAFT, protocol, dataset, NAN, NAN);
    const RunAn *sd = find_run(R, DM_SD, protocol, dataset, NAN, NAN);
    const RunAn *sp = find_run(R, DM_SPRINTER, protocol, dataset, lambda_of(R, protocol), R->o->deployed_tau);
    if (!sd || !sp || !R->rs.has_outputs) return; /* draft-only is optional (make specbench runs ar, sd, sprinter) */
    char claim[160];
    snprintf(claim, sizeof claim, "SPRINTER (lambda %g, tau %g) keeps SD's quality; draft-only as the control",
             lambda_of(R, protocol), R->o->deployed_tau);
    FindRow *w = add_row(F, "4", claim, protocol, dataset);
    if (!w) return;
    const RunAn *each[4] = {ar, sd, dr, sp};
    const char *names[4] = {"ar", "sd", "draft", "sprinter"};
    cat(w->measured, sizeof w->measured, "target log-likelihood per token:");
    int n;
    for (int k = 0; k < 4; k++) {
        if (!each[k]) continue;
        Est e = paired(each[k]->ri, NULL, &n);
        cat(w->measured, sizeof w->measured, " %s %.3f [%.3f, %.3f];", names[k], e.v, e.lo, e.hi);
        add_run(w, each[k]);
        char q[32];
        snprintf(q, sizeof q, "llpt_%s", names[k]);
        tsv(F, w, NAN, NAN, q, e.v, e.lo, e.hi, each[k]->ri->hash);
    }
    const struct {
        const RunAn *x, *y;
        const char *name;
    } pairs[] = {{sp, sd, "sprinter - sd"}, {dr, sd, "draft - sd"}, {sp, dr, "sprinter - draft"}};
    cat(w->measured, sizeof w->measured, " paired by prompt:");
    Est d_sp_sd = {NAN, NAN, NAN}, d_sp_dr = {NAN, NAN, NAN};
    for (size_t k = 0; k < sizeof pairs / sizeof *pairs; k++) {
        if (!pairs[k].x || !pairs[k].y) continue;
        Est e = paired(pairs[k].x->ri, pairs[k].y->ri, &n);
        if (k == 0) d_sp_sd = e;
        if (k == 2) d_sp_dr = e;
        cat(w->measured, sizeof w->measured, " %s %+.3f [%+.3f, %+.3f] (%d prompts);", pairs[k].name, e.v, e.lo, e.hi, n);
        char q[64];
        snprintf(q, sizeof q, "llpt_diff_%s", k == 0 ? "sprinter_sd" : k == 1 ? "draft_sd" : "sprinter_draft");
        tsv(F, w, NAN, NAN, q, e.v, e.lo, e.hi, w->runs);
    }
    int wtl[3];
    win_tie_loss(sp->ri, sd->ri, R->o->tie_margin, wtl);
    cat(w->measured, sizeof w->measured, " sprinter vs sd: %d wins, %d ties (within %.2f nats/token), %d losses", wtl[0],
        wtl[1], R->o->tie_margin, wtl[2]);
    tsv(F, w, NAN, NAN, "wins_vs_sd", wtl[0], NAN, NAN, w->runs);
    tsv(F, w, NAN, NAN, "ties_vs_sd", wtl[1], NAN, NAN, w->runs);
    tsv(F, w, NAN, NAN, "losses_vs_sd", wtl[2], NAN, NAN, w->runs);
    if (sp->has_tc) {
        double dps = sp->tc.est.meas[TQ_DTV], se = sp->tc.se_meas[TQ_DTV];
        cat(w->measured, sizeof w->measured, "; d_TV(p, p_S) on the visited prefixes %.3f +- %.3f, d_TV(p, q) %.3f "
            "(the draft-only law's distance)", dps, FIND_Z95 * se, sp->tc.est.dtv_pq);
        Est e = normal_ci(dps, se);
        tsv(F, w, NAN, NAN, "dtv_p_ps_visited", e.v, e.lo, e.hi, sp->ri->hash);
        tsv(F, w, NAN, NAN, "dtv_p_q_visited", sp->tc.est.dtv_pq, NAN, NAN, sp->ri->hash);
    }
    snprintf(w->verdict, sizeof w->verdict, "sprinter %s sd; %s",
             isnan(d_sp_sd.hi) ? "not compared with" : d_sp_sd.hi < 0 ? "below" : d_sp_sd.lo > 0 ? "above" : "not separable from",
             !dr ? "no verdict against draft-only: no draft run in this cell"
             : isnan(d_sp_dr.hi) ? "sprinter not compared with draft-only"
             : d_sp_dr.hi < 0 ? "sprinter below draft-only" : d_sp_dr.lo > 0 ? "sprinter above draft-only"
             : "sprinter not separable from draft-only");
}

/* ------------------------------------------------------------------ (5) FLOPs, (6) speed */

static void flops_rows(Findings *F, const char *protocol, const char *dataset) {
    const Report *R = F->R;
    const RunAn *sp = find_run(R, DM_SPRINTER, protocol, dataset, lambda_of(R, protocol), R->o->deployed_tau);
    if (!sp) return;
    char claim[160];
    snprintf(claim, sizeof claim, "FLOPs for %d tokens (Table 3): draft-only convention vs with the target calls "
             "(lambda %g, tau %g)", FIND_TOKENS, sp->ri->lambda, sp->ri->tau);
    FindRow *w = add_row(F, "5", claim, protocol, dataset);
    if (!w) return;
    const RunAn *each[4] = {find_run(R, DM_AR, protocol, dataset, NAN, NAN), find_run(R, DM_DRAFT, protocol, dataset, NAN, NAN),
                            find_run(R, DM_SD, protocol, dataset, NAN, NAN), sp};
    const char *names[4] = {"ar", "draft", "sd", "sprinter"};
    double with_target[4] = {NAN, NAN, NAN, NAN};
    cat(w->measured, sizeof w->measured, "GFLOP per %d tokens, draft + verifier only / with the target:", FIND_TOKENS);
    for (int k = 0; k < 4; k++) {
        const RunAn *a = each[k];
        if (!a) continue;
        double dv = FIND_TOKENS * (a->flops_tok[0] + a->flops_tok[1]) / 1e9, all = FIND_TOKENS * a->flops_tok[3] / 1e9;
        with_target[k] = all;
        cat(w->measured, sizeof w->measured, " %s %.4f / %.4f;", names[k], dv, all);
        add_run(w, a);
        char q[64];
        snprintf(q, sizeof q, "gflop_%d_draft_only_%s", FIND_TOKENS, names[k]);
        tsv(F, w, NAN, NAN, q, dv, NAN, NAN, a->ri->hash);
        snprintf(q, sizeof q, "gflop_%d_with_target_%s", FIND_TOKENS, names[k]);
        tsv(F, w, NAN, NAN, q, all, NAN, NAN, a->ri->hash);
    }
    double vs_sd = with_target[3] / with_target[2], vs_ar = with_target[3] / with_target[0];
    if (isfinite(vs_sd) && isfinite(vs_ar))
        snprintf(w->verdict, sizeof w->verdict, "with the target counted, sprinter costs %.2fx sd and %.2fx ar", vs_sd,
                 vs_ar);
    else
        snprintf(w->verdict, sizeof w->verdict, "no verdict: %s", !each[2] || !each[0]
                 ? "no sd or no ar run in this cell" : "a FLOP count is zero or not a number");
}

static void speed_rows(Findings *F, const char *protocol, const char *dataset) {
    const Report *R = F->R;
    const RunAn *sp = find_run(R, DM_SPRINTER, protocol, dataset, lambda_of(R, protocol), R->o->deployed_tau);
    const RunAn *sd = find_run(R, DM_SD, protocol, dataset, NAN, NAN), *ar = find_run(R, DM_AR, protocol, dataset, NAN, NAN);
    if (!sp || !sd || !ar) return;
    char claim[160];
    snprintf(claim, sizeof claim, "SPRINTER (lambda %g, tau %g) is faster than SD (Table 2 latency)", sp->ri->lambda,
             sp->ri->tau);
    FindRow *w = add_row(F, "6", claim, protocol, dataset);
    if (!w) return;
    double med_sd, lo_sd, hi_sd, med_ar, lo_ar, hi_ar;
    int n_sd = paired_ratios(sd, sp, &med_sd, &lo_sd, &hi_sd), n_ar = paired_ratios(ar, sp, &med_ar, &lo_ar, &hi_ar);
    add_run(w, ar), add_run(w, sd), add_run(w, sp);
    if (n_sd >= TIMING_MIN_REPS && n_ar >= TIMING_MIN_REPS) {
        cat(w->measured, sizeof w->measured,
            "timed alone ([timing], %d paired repetitions, runs.sqlite timings): sprinter / sd speed %.2fx [%.2f, %.2f], "
            "/ ar %.2fx [%.2f, %.2f] (median [min, max] over the repetitions); target calls per token %.3f vs sd %.3f",
            n_sd, med_sd, lo_sd, hi_sd, med_ar, lo_ar, hi_ar, 1 / sp->tok_per_call, 1 / sd->tok_per_call);
        int faster, untied;
        double p = paired_sign_p(sd, sp, &faster, &untied);
        cat(w->measured, sizeof w->measured, "; sprinter faster than sd in %d of %d untied repetitions, two-sided sign "
            "test p = %.3g", faster, untied, p);
        if (p <= SPEED_VERDICT_P)
            snprintf(w->verdict, sizeof w->verdict, "%s than sd in %d of %d repetitions timed alone (sign test p = %.3g), "
                     "on this pair", 2 * faster > untied ? "faster" : "slower",
                     2 * faster > untied ? faster : untied - faster, untied, p);
        else
            snprintf(w->verdict, sizeof w->verdict, "no verdict: sprinter faster in %d of %d repetitions timed alone "
                     "(%.2f to %.2fx), sign test p = %.2g > %g (at least %d repetitions, all one way, can reach it)",
                     faster, untied, lo_sd, hi_sd, p, SPEED_VERDICT_P, TIMING_VERDICT_REPS);
        tsv(F, w, sp->ri->lambda, sp->ri->tau, "speedup_vs_sd_timed_alone", med_sd, lo_sd, hi_sd, w->runs);
        tsv(F, w, sp->ri->lambda, sp->ri->tau, "speedup_vs_sd_sign_test_p", p, NAN, NAN, w->runs);
        tsv(F, w, sp->ri->lambda, sp->ri->tau, "speedup_vs_ar_timed_alone", med_ar, lo_ar, hi_ar, w->runs);
        return;
    }
    double s_ar = ar->ms_per_token / sp->ms_per_token, s_sd = sd->ms_per_token / sp->ms_per_token;
    if (!(isfinite(s_sd) && isfinite(s_ar) && s_sd > 0 && s_ar > 0)) {
        cat(w->measured, sizeof w->measured, "sweep timings only: a run's time per token is zero or not a number");
        snprintf(w->verdict, sizeof w->verdict, "no verdict: speed needs runs timed alone ([timing] reps in the spec)");
        return;
    }
    cat(w->measured, sizeof w->measured,
        "sweep timings only (each run once, possibly beside other runs of a --jobs sweep): ms/token ar %.3f, sd %.3f, "
        "sprinter %.3f; sprinter / sd %.2fx, / ar %.2fx; target calls per token %.3f vs sd %.3f",
        ar->ms_per_token, sd->ms_per_token, sp->ms_per_token, s_sd, s_ar, 1 / sp->tok_per_call, 1 / sd->tok_per_call);
    snprintf(w->verdict, sizeof w->verdict,
             "no verdict: speed needs runs timed alone, at least %d repetitions ([timing] reps in the spec)", TIMING_MIN_REPS);
    tsv(F, w, sp->ri->lambda, sp->ri->tau, "speedup_vs_sd_sweep_timing", s_sd, NAN, NAN, w->runs);
    tsv(F, w, sp->ri->lambda, sp->ri->tau, "speedup_vs_ar_sweep_timing", s_ar, NAN, NAN, w->runs);
}

/* ------------------------------------------------------------------ (7) beta_SD = 1 - d_TV(p, q) */

void sd_identity_of(const TokenRows *t, SdIdentity *out) {
    memset(out, 0, sizeof *out);
    double sum_d = 0, sum_e = 0;
    /* per prompt: the sum of d_i = accepted_i - min(1, p_i/q_i) and the count (rows are in prompt order) */
    double *dj = malloc((size_t)(t->n ? t->n : 1) * sizeof *dj), *nj = malloc((size_t)(t->n ? t->n : 1) * sizeof *nj);
    if (!dj || !nj) {
        free(dj), free(nj);
        return;
    }
    int np = 0;
    for (int64_t i = 0; i < t->n; i++) {
        int kind = t->kind[i];
        double q = t->q[i], p = t->p[i];
        if ((kind != EV_SD_ACCEPT && kind != EV_SD_RESAMPLE) || t->draft_token[i] < 0 || !(q > 0) || isnan(p)) continue;
        if (np == 0 || t->prompt_index[i] != t->prompt_index[i - 1]) dj[np] = nj[np] = 0, np++;
        double e = fmin(1, p / q), d = (kind == EV_SD_ACCEPT) - e;
        out->n++, out->accepted += kind == EV_SD_ACCEPT, sum_e += e, sum_d += d;
        dj[np - 1] += d, nj[np - 1] += 1;
    }
    if (out->n) {
        double N = (double)out->n, mean = sum_d / N, v = 0;
        for (int j = 0; j < np; j++) v += (dj[j] - nj[j] * mean) * (dj[j] - nj[j] * mean);
        out->beta = (double)out->accepted / N, out->expect = sum_e / N, out->diff = mean;
        out->se_diff = np > 1 ? sqrt(v * np / (np - 1.0)) / N : NAN;
        out->n_prompts = np;
    }
    free(dj), free(nj);
}

void findings_sd_verdict(char *buf, size_t cap, double temperature, int64_t n, double diff, double se) {
    if (n == 0) snprintf(buf, cap, "no verdict: no checked SD draft in the token log");
    else if (!(temperature > 0))
        snprintf(buf, cap, "no verdict: greedy SD accepts iff the two argmaxes agree, so its acceptance is not 1 - "
                 "d_TV(p, q) of any sampling law; the review's reading does not apply to this protocol");
    else if (isnan(se)) snprintf(buf, cap, "no verdict: one prompt, no clustered SE");
    else if (fabs(diff) <= FIND_Z95 * se)
        snprintf(buf, cap, "beta_SD = 1 - d_TV(p, q) holds on SD's visited prefixes (difference %+.4f within +- %.4f), "
                 "so 1 - beta_SD reads the mean d_TV(p, q) over them", diff, FIND_Z95 * se);
    else snprintf(buf, cap, "outside: beta_SD - mean min(1, p/q) = %+.4f, beyond +- %.4f: the identity fails here "
                  "(the drafts are not sampled from the logged q)", diff, FIND_Z95 * se);
}

/* The dtv file of the dataset with the most prefixes (d_TV(p, q) does not depend on the verifier). */
static const DtvFile *dtv_of_data(const Report *R, const RunAn *a) {
    const DtvFile *best = NULL;
    for (int f = 0; f < R->n_dtv; f++)
        if (!strcmp(R->dtv[f].data_sha256, a->ri->dataset_sha256) && (!best || R->dtv[f].n > best->n)) best = &R->dtv[f];
    return best;
}

static void sd_identity_row(Findings *F, const char *protocol, const char *dataset) {
    const Report *R = F->R;
    const RunAn *sd = find_run(R, DM_SD, protocol, dataset, NAN, NAN);
    if (!sd) return;
    FindRow *w = add_row(F, "7", "the review's d_TV(p, q) ~ 0.45 from beta_SD = 1 - d_TV(p, q)", protocol, dataset);
    if (!w) return;
    const SdIdentity *s = &sd->sdid;
    Est diff = normal_ci(s->diff, s->se_diff);
    cat(w->measured, sizeof w->measured, "sd at temperature %g: beta_SD (accepted / checked drafts) %.3f (%lld of %lld, "
        "%d prompts); mean min(1, p/q) over the same drafts %.3f (= 1 - d_TV(p, q) averaged over the prefixes SD "
        "visited, in expectation); difference %+.4f [%+.4f, %+.4f] (SE clustered by prompt); 1 - beta_SD = %.3f",
        sd->ri->temperature, s->beta, (long long)s->accepted, (long long)s->n, s->n_prompts, s->expect, diff.v, diff.lo,
        diff.hi, 1 - s->beta);
    const DtvFile *d = dtv_of_data(R, sd);
    if (d)
        cat(w->measured, sizeof w->measured, "; exact d_TV(p, q) at temperature 1 on dtv's %d prefixes (prompt + up "
            "to k target tokens, not SD's path): %.3f, 1 - d_TV %.3f", d->n, d->dtv_pq, 1 - d->dtv_pq);
    else cat(w->measured, sizeof w->measured, "; no dtv file for this dataset");
    findings_sd_verdict(w->verdict, sizeof w->verdict, sd->ri->temperature, s->n, s->diff, s->se_diff);
    add_run(w, sd);
    tsv(F, w, NAN, NAN, "beta_sd", s->n ? s->beta : NAN, NAN, NAN, w->runs);
    tsv(F, w, NAN, NAN, "mean_min_1_p_over_q", s->n ? s->expect : NAN, NAN, NAN, w->runs);
    tsv(F, w, NAN, NAN, "beta_sd_minus_mean_min_1_p_over_q", s->n ? diff.v : NAN, diff.lo, diff.hi, w->runs);
    tsv(F, w, NAN, NAN, "dtv_pq_dtv_prefixes", d ? d->dtv_pq : NAN, NAN, NAN, w->runs);
}

/* ------------------------------------------------------------------ (8) the authors' evaluation overlap */

/* The held-out twin of a run on the verifier's training prompts: the same protocol, data, verifier,
 * lambda and tau, evaluated past the training prompts. */
static const RunAn *held_out_twin(const Findings *F, const RunAn *o) {
    const Report *R = F->R;
    for (int i = 0; i < R->rs.n; i++) {
        const RunAn *a = &R->an[i];
        if (a == o || a->ri->on_verifier_prompts || !method_name_eq(a->ri->method, DM_SPRINTER)) continue;
        if (!strcmp(protocol_of(F, a->ri), protocol_of(F, o->ri)) && !strcmp(a->ri->dataset_sha256, o->ri->dataset_sha256) &&
            !strcmp(a->ri->verifier_sha256, o->ri->verifier_sha256) && same(a->ri->lambda, o->ri->lambda) &&
            same(a->ri->tau, o->ri->tau))
            return a;
    }
    return NULL;
}

static void cat_point(FindRow *w, const char *name, const RunAn *a) {
    cat(w->measured, sizeof w->measured, "%s (prompts %d..%d): ", name, a->ri->prompt_offset,
        a->ri->prompt_offset + a->ri->n_prompts - 1);
    cat_est(w->measured, sizeof w->measured, "eta_FP", eta_of(a, 0));
    cat(w->measured, sizeof w->measured, ", ");
    cat_est(w->measured, sizeof w->measured, "eta_TP", eta_of(a, 1));
    cat(w->measured, sizeof w->measured, ", avg tokens %.2f", a->ri->avg_tokens_paper);
}

static void overlap_row(Findings *F, const RunAn *o) {
    const RunAn *h = held_out_twin(F, o);
    char claim[160];
    snprintf(claim, sizeof claim, "the authors evaluate on the verifier's training prompts (lambda %g, tau %g)",
             o->ri->lambda, o->ri->tau);
    FindRow *w = add_row(F, "8", claim, protocol_of(F, o->ri), o->dataset);
    if (!w) return;
    cat_point(w, "on the training prompts", o);
    add_run(w, o);
    tsv(F, w, o->ri->lambda, o->ri->tau, "eta_fp_training_prompts", eta_of(o, 0).v, eta_of(o, 0).lo, eta_of(o, 0).hi, o->ri->hash);
    tsv(F, w, o->ri->lambda, o->ri->tau, "eta_tp_training_prompts", eta_of(o, 1).v, eta_of(o, 1).lo, eta_of(o, 1).hi, o->ri->hash);
    tsv(F, w, o->ri->lambda, o->ri->tau, "avg_tokens_paper_training_prompts", o->ri->avg_tokens_paper, NAN, NAN, o->ri->hash);
    if (!h) {
        findings_overlap_verdict(w->verdict, sizeof w->verdict, 0, NAN, NAN, NAN);
        return;
    }
    cat(w->measured, sizeof w->measured, "; ");
    cat_point(w, "held out", h);
    add_run(w, h);
    Est fo = eta_of(o, 0), fh = eta_of(h, 0);
    tsv(F, w, h->ri->lambda, h->ri->tau, "eta_fp_held_out", fh.v, fh.lo, fh.hi, h->ri->hash);
    tsv(F, w, h->ri->lambda, h->ri->tau, "eta_tp_held_out", eta_of(h, 1).v, eta_of(h, 1).lo, eta_of(h, 1).hi, h->ri->hash);
    tsv(F, w, h->ri->lambda, h->ri->tau, "avg_tokens_paper_held_out", h->ri->avg_tokens_paper, NAN, NAN, h->ri->hash);
    /* the difference of the two eta_FP, its SE from the two intervals' half-widths (independent prompts) */
    double se = sqrt(pow((fo.hi - fo.lo) / (2 * FIND_Z95), 2) + pow((fh.hi - fh.lo) / (2 * FIND_Z95), 2));
    Est d = normal_ci(fo.v - fh.v, se);
    tsv(F, w, h->ri->lambda, h->ri->tau, "eta_fp_training_minus_held_out", d.v, d.lo, d.hi, w->runs);
    findings_overlap_verdict(w->verdict, sizeof w->verdict, 1, d.v, d.lo, d.hi);
}

void findings_overlap_verdict(char *buf, size_t cap, int has_twin, double diff, double lo, double hi) {
    if (!has_twin) snprintf(buf, cap, "no verdict: no held-out run with the same verifier, lambda and tau");
    else if (isnan(lo) || isnan(hi)) snprintf(buf, cap, "no verdict: eta_FP missing on one side");
    else
        snprintf(buf, cap, "eta_FP on the training prompts %s held out (difference %+.3f [%+.3f, %+.3f])",
                 hi < 0 ? "below" : lo > 0 ? "above" : "not separable from", diff, lo, hi);
}

static void overlap_cell(Findings *F, const char *protocol, const char *dataset) {
    const Report *R = F->R;
    for (int i = 0; i < R->rs.n; i++) {
        const RunAn *a = &R->an[i];
        if (a->ri->on_verifier_prompts && method_name_eq(a->ri->method, DM_SPRINTER) && in_cell(R, a, protocol, dataset) &&
            same(a->ri->tau, R->o->deployed_tau))
            overlap_row(F, a);
    }
}

/* ------------------------------------------------------------------ (9) the lossy peers at equal shift */

static const PeerPoint *point_of(const PeerPoint *pts, int n, const RunAn *a) {
    for (int i = 0; i < n; i++)
        if (pts[i].a == a) return &pts[i];
    return NULL;
}

static void cat_point_peer(FindRow *w, const char *what, const PeerPoint *p) {
    cat(w->measured, sizeof w->measured, "%s %s %s: d_TV %.4f +- %.4f, speed-up %.2fx", what, p->a->ri->method,
        p->a->setting, p->dtv_p, p->dtv_se, p->speedup);
    if (p->timed_reps) cat(w->measured, sizeof w->measured, " [%.2f, %.2f]", p->speedup_lo, p->speedup_hi);
    cat(w->measured, sizeof w->measured, ", %.2f tokens per target call, log-lik./token - sd %+.4f [%+.4f, %+.4f]",
        p->tok_per_call, p->llpt_vs_sd.mean, p->llpt_vs_sd.lo, p->llpt_vs_sd.hi);
}

/* Row 9: at SPRINTER's deployed shift, which lossy peer is fastest, and at what quality. */
static void peers_cell(Findings *F, const char *protocol, const char *dataset) {
    const Report *R = F->R;
    const RunAn *sp = find_run(R, DM_SPRINTER, protocol, dataset, lambda_of(R, protocol), R->o->deployed_tau);
    if (!sp || !peers_present(R)) return;
    PeerPoint *pts;
    int n;
    SpErr err;
    if (peer_points(R, sp, &pts, &n, &err)) return;
    int peers = 0;
    for (int i = 0; i < n; i++) peers += peer_method(pts[i].a->ri->method);
    const PeerPoint *s = point_of(pts, n, sp);
    FindRow *w = peers && s ? add_row(F, "9", "at SPRINTER's deployed shift, the fastest lossy verifier and its quality "
                                               "(the review's minor comment 7: Judge Decoding and its peers)",
                                      protocol, dataset)
                            : NULL;
    if (!w) {
        free(pts);
        return;
    }
    cat_point_peer(w, "", s);
    add_run(w, sp);
    const PeerPoint *fast = NULL, *most = NULL;
    for (int i = 0; i < n && !isnan(s->dtv_p); i++) {
        const PeerPoint *p = &pts[i];
        if (!peer_method(p->a->ri->method) || isnan(p->dtv_p) || p->dtv_p > s->dtv_p) continue;
        if (!fast || p->speedup > fast->speedup) fast = p;
        if (!most || p->tok_per_call > most->tok_per_call) most = p;
    }
    if (isnan(s->dtv_p)) {
        snprintf(w->verdict, sizeof w->verdict, "no verdict: no exact d_TV of SPRINTER's deployed point (no `sprinter dtv` "
                                                 "file of its configuration)");
    } else if (!fast) {
        snprintf(w->verdict, sizeof w->verdict, "no verdict: no lossy peer run has a measured shift at most SPRINTER's "
                                                 "(%.4f)", s->dtv_p);
    } else {
        cat_point_peer(w, "; fastest peer at d_TV <= SPRINTER's:", fast);
        if (most != fast) cat_point_peer(w, "; most tokens per target call there:", most);
        add_run(w, fast->a);
        if (!fast->timed_reps || !s->timed_reps)
            snprintf(w->verdict, sizeof w->verdict, "%s %s is fastest at SPRINTER's shift by the sweep's timings; no "
                     "verdict against SPRINTER without runs timed alone", fast->a->ri->method, fast->a->setting);
        else if (fast->speedup_lo > s->speedup_hi || fast->speedup_hi < s->speedup_lo)
            snprintf(w->verdict, sizeof w->verdict, "%s %s is %s than SPRINTER at no more shift, in every repetition "
                     "timed alone (quality vs sd %+.4f nats/token against SPRINTER's %+.4f)", fast->a->ri->method,
                     fast->a->setting, fast->speedup_lo > s->speedup_hi ? "faster" : "slower", fast->llpt_vs_sd.mean,
                     s->llpt_vs_sd.mean);
        else
            snprintf(w->verdict, sizeof w->verdict, "no verdict on speed: %s %s and SPRINTER overlap across the "
                     "repetitions timed alone", fast->a->ri->method, fast->a->setting);
        tsv(F, w, NAN, NAN, "peer_fastest_dtv", fast->dtv_p, NAN, NAN, fast->a->ri->hash);
        tsv(F, w, NAN, NAN, "peer_fastest_speedup_vs_ar", fast->speedup, fast->speedup_lo, fast->speedup_hi,
            fast->a->ri->hash);
        tsv(F, w, NAN, NAN, "peer_fastest_llpt_minus_sd", fast->llpt_vs_sd.mean, fast->llpt_vs_sd.lo,
            fast->llpt_vs_sd.hi, fast->a->ri->hash);
    }
    tsv(F, w, sp->ri->lambda, sp->ri->tau, "sprinter_dtv", s->dtv_p, NAN, NAN, sp->ri->hash);
    tsv(F, w, sp->ri->lambda, sp->ri->tau, "sprinter_speedup_vs_ar", s->speedup, s->speedup_lo, s->speedup_hi,
        sp->ri->hash);
    free(pts);
}

/* ------------------------------------------------------------------ writing */

/* (1) or (3) for every sprinter run of the cell at the deployed tau. */
static void deployed_cell(Findings *F, const char *protocol, const char *dataset, int which) {
    const Report *R = F->R;
    for (int i = 0; i < R->rs.n; i++) {
        const RunAn *a = &R->an[i];
        if (!method_name_eq(a->ri->method, DM_SPRINTER) || !in_cell(R, a, protocol, dataset) ||
            !same(a->ri->tau, R->o->deployed_tau))
            continue;
        if (which == 1) deployed_row(F, a);
        else iid_row(F, a);
    }
}

/* (2) for every lambda of the cell's sprinter runs. */
static void avg_tokens_cell(Findings *F, const char *protocol, const char *dataset) {
    const Report *R = F->R;
    double lambdas[8];
    int nl = 0;
    for (int i = 0; i < R->rs.n; i++) {
        const RunAn *a = &R->an[i];
        if (!method_name_eq(a->ri->method, DM_SPRINTER) || !in_cell(R, a, protocol, dataset)) continue;
        int seen = 0;
        for (int k = 0; k < nl; k++) seen |= same(lambdas[k], a->ri->lambda);
        if (!seen && nl < 8) lambdas[nl++] = a->ri->lambda;
    }
    for (int k = 0; k < nl; k++) avg_tokens_rows(F, protocol, dataset, lambdas[k]);
}

/* Rows 1-8, each over the cells protocol x dataset. */
static void collect(Findings *F) {
    const char *ds[16];
    int nd = datasets(F->R, ds, 16);
    for (int row = 1; row <= 9; row++)
        for (int p = 0; p < F->n_cells; p++)
            for (int d = 0; d < nd; d++) {
                const char *pr = F->cells[p].name;
                switch (row) {
                case 1: deployed_cell(F, pr, ds[d], 1); break;
                case 2: avg_tokens_cell(F, pr, ds[d]); break;
                case 3: deployed_cell(F, pr, ds[d], 3); break;
                case 4: quality_rows(F, pr, ds[d]); break;
                case 5: flops_rows(F, pr, ds[d]); break;
                case 6: speed_rows(F, pr, ds[d]); break;
                case 7: sd_identity_row(F, pr, ds[d]); break;
                case 8: overlap_cell(F, pr, ds[d]); break;
                default: peers_cell(F, pr, ds[d]); break;
                }
            }
}

static void table_md(FILE *f, const Findings *F) {
    if (F->n == 0) {
        fprintf(f, "Not computed: no sprinter run at the deployed tau in this results directory.\n\n");
        return;
    }
    fprintf(f, "| # | claim | protocol | dataset | measured [95%% interval] | verdict | runs |\n|---|---|---|---|---|---|---|\n");
    for (int i = 0; i < F->n; i++) {
        const FindRow *w = &F->rows[i];
        fprintf(f, "| %s | %s | %s | %s | %s | %s | %s |\n", w->id, w->claim, w->protocol, w->dataset, w->measured, w->verdict,
                w->runs);
    }
    fprintf(f, "\n");
}

static const char kDefinitions[] =
    "Definitions (every figure recomputable from runs.sqlite, the token logs and dtv/*.h5; results/README.md):\n\n"
    "- protocol: a label rule at a temperature, as the labelled runs (sprinter, the oracles) recorded them: "
    "`runs.label_rule` (before schema 6: paper-code at temperature 0, else sound) and `runs.temperature`. A run "
    "without labels (ar, draft, sd, ...) belongs to every protocol of its temperature: the ar, sd and sprinter runs "
    "of one sweep share a cell, greedy or not.\n"
    "- eta_FP = sum prompts.fp / sum prompts.audited_neg, eta_TP = sum prompts.tp / sum prompts.audited_pos (the "
    "audit's labels, every drafted token); interval: the bootstrap over prompts of the theorem checks (mean +- 1.96 "
    "SE), Wilson where there is none.\n"
    "- avg tokens (the paper's Table 2 metric): per prompt prompts.round_kept / prompts.rounds (drafts kept per target "
    "call that decided drafts, the resampled or bonus token excluded), averaged over prompts. tau*: linear "
    "interpolation between the two grid taus whose avg tokens bracket 11.10; the row's other figures are at the grid "
    "tau nearest tau*.\n"
    "- d_TV(p, p_S), d_TV(q, p_S): `sprinter dtv`, the exact law of SPRINTER's next token at temperature 1 from the "
    "same verifier, lambda and tau, averaged over prefixes from the run's own prompts (+- 1.96 SE). In row 4, d_TV(p, p_S) on the "
    "prefixes the decoder visited: the mean over decisions of decision (1 - p/q)^+ at the drafted token.\n"
    "- the review's bound: Thm 3.3, E[N] = (eta_TP - eta_TP^r)/(1 - eta_TP) + eta_TP^r/(1 - eta_FP); its first term "
    "is eta_TP + ... + eta_TP^(r-1) <= r - 1 and its second <= 1/(1 - eta_FP), so E[N] <= (r - 1) + 1/(1 - eta_FP), i.e. "
    "eta_FP >= 1 - 1/(E[N] - r + 1) (linear in r, so a random r enters by its mean; no constraint where E[N] <= r). "
    "The authors' avg tokens is N + 1{the target accepts the round's last draft}, so E[N] lies in [avg - 1, avg]: the "
    "bound is given at E[N] = 11.10 (the review's reading) and at 10.10, for r = 2..8 (row 2's measured text and "
    "FINDINGS.tsv review_bound_rR_en_avg[_minus_1]); the review's 0.86 is 1 - 1/(12.10 - r) at r = 5 only. Row 2's "
    "verdict uses r = the mean of the Kaplan-Meier law of the leading acceptable run (the paper's label model).\n"
    "- power (row 3): decisions for power 80% at level alpha / (the run's number of i.i.d. tests): lag-1 "
    "autocorrelation 0.1 needs ((z_{1-a/2} + z_{0.8}) / 0.1)^2 decisions; a 0.1 gap in eta between two difficulty "
    "quartiles needs 4 x the two-proportion sample size per quartile, per label class.\n"
    "- quality (row 4): outputs.target_logprob / outputs.n_tokens per prompt (`sprinter score`), means with t "
    "intervals over prompts; differences paired by prompt; wins / ties / losses against sd by that per-prompt "
    "figure, ties within the report's tie margin.\n"
    "- FLOPs (row 5): 20 x (prompts.flops_draft + flops_verifier) / tokens (draft-only convention) and 20 x (draft + "
    "verifier + target) / tokens, summed over the run's prompts.\n"
    "- cells: protocol x dataset, with each protocol's main verifier (the training data most of its sprinter runs "
    "used); runs with another (Table 4's other direction, PAPER_TRANSFER=1) are in tables.md only.\n"
    "- rows 4-6 use each protocol's own lambda: 1 for paper-code (the authors' labels are q <= 1 p; their verifier's "
    "file name says ratio 1.5, the paper's text 1.2), the paper's deployed 1.2 for sound (analyze --code-lambda, "
    "--deployed-lambda).\n"
    "- row 7: beta_SD = accepted / checked drafts of the sd run (token log kinds sd_accept, sd_resample); at a "
    "prefix, a draft x ~ q is accepted with probability min(1, p(x)/q(x)), whose mean over x ~ q is 1 - d_TV(p, q); "
    "so beta_SD - mean min(1, p/q) over the same drafts has mean 0 where the identity holds (interval: SE clustered "
    "by prompt). The exact d_TV(p, q) of the dtv files is on their own prefixes (prompt + target tokens), not "
    "SD's path. Under greedy decoding (paper-code) SD accepts iff the argmaxes agree: no verdict.\n"
    "- row 8: sprinter runs evaluated on the verifier's own training prompts ([data] eval_on_verifier_prompts, "
    "experiments/paper_code_overlap.ini: the authors' code evaluates on the first 100 of the 500 lm1b prompts it "
    "trains on) against the held-out run with the same verifier, lambda and tau; such runs form their own cell, "
    "\"DATA (verifier's training prompts)\", in every table. Difference of eta_FP: normal interval from the two "
    "intervals' half-widths.\n"
    "- speed (row 6): from the runs timed alone after the sweep (spec [timing], runs.sqlite table timings): per "
    "repetition, ms per token = t_total / tokens over the run's first [timing] prompts; the ratio of two runs' ms per "
    "token within each repetition (paired), median [min, max] over the repetitions; a verdict only when the exact "
    "two-sided sign test over the repetitions (H0: sprinter as likely slower as faster in a repetition) gives p <= "
    "0.05, which takes at least 6 repetitions all one way (the paper specs time 6). Without timings, the sweep's own ms per token (sum prompts.t_total / sum prompts.tokens, runs possibly "
    "timed beside each other) is shown, without a verdict. The audit's own time is kept apart in t_audit. A run "
    "swept with [decode] batch > 1 (runs.exec_batch, runs.tsv; its prompts decoded together, their forward passes "
    "batched) has no timings of its own: its speed comes only from the [timing] pass, which decodes one prompt at "
    "a time; its throughput is runs.tokens_per_s_batched, never a latency.\n"
    "- row 9 (the lossy peers; lossy.md): SPRINTER's deployed point and every run of typical, fsd, optimal-lossy and "
    "judge in the cell placed by exact shift, the mean over prefixes of d_TV(p, p_method) of the first-token law "
    "(`sprinter dtv --method`, matched to a run by method, data and the parameters that shape the law). Among "
    "the peers whose shift is at most SPRINTER's, the fastest (speed-up over ar, as row 6: timed alone, paired "
    "repetitions) and its quality (log-likelihood per token minus sd's, paired by prompt); a verdict on speed "
    "only from runs timed alone whose ranges over the repetitions do not overlap.\n\n";


int write_findings(Report *R, SpErr *err) {
    Findings F = {.R = R};
    if (!(F.rows = calloc(FIND_MAX_ROWS, sizeof *F.rows))) return sp_fail(err, "out of memory");
    F.tsv = report_open(R, "FINDINGS.tsv", err);
    if (!F.tsv) {
        free(F.rows);
        return -1;
    }
    find_cells(&F);
    fprintf(F.tsv, "row\tprotocol\tdataset\tlambda\ttau\tquantity\tvalue\tlo\thi\truns\n");
    collect(&F);
    withhold_verdicts(&F);
    int rc = report_close(F.tsv, R, "FINDINGS.tsv", err);
    FILE *f = rc ? NULL : report_open(R, "FINDINGS.md", err);
    if (f) {
        fprintf(f, "# FINDINGS: the SPRINTER paper's and its review's claims, measured on this pair\n\n"
                   "Results: %s (%d runs). Machine-readable: [FINDINGS.tsv](FINDINGS.tsv); the full report: "
                   "[index.md](index.md).\n\n",
                R->o->results_dir, R->rs.n);
        sec_models(f, R);
        table_md(f, &F);
        fputs(kDefinitions, f);
        rc = report_close(f, R, "FINDINGS.md", err);
    } else {
        rc = -1;
    }
    R->findings = F.rows, R->n_findings = F.n;
    return rc;
}

/* The distinct model directories the runs name (drafts and targets), at most cap; returns how many. */
static int report_model_dirs(const Report *R, const char **dirs, int cap) {
    int n = 0;
    for (int i = 0; i < R->rs.n; i++) {
        const RunInfo *ri = R->an[i].ri;
        const char *two[2] = {ri->draft_dir, ri->target_dir};
        for (int k = 0; k < 2; k++) {
            int seen = !two[k][0];
            for (int j = 0; j < n && !seen; j++) seen = !strcmp(dirs[j], two[k]);
            if (!seen && n < cap) dirs[n++] = two[k];
        }
    }
    return n;
}

/* How many of those models are random-init checkpoints (records/modelorigin.h). */
static int report_random_init_models(const Report *R) {
    const char *dirs[64];
    int n = report_model_dirs(R, dirs, 64), n_random = 0;
    for (int j = 0; j < n; j++) n_random += model_origin(dirs[j], NULL) == ORIGIN_RANDOM_INIT;
    return n_random;
}

/* With a random-init model among the runs no row's verdict stands: each is withheld, and the check it
 * would have made is kept in brackets (it still tests the harness's own arithmetic). */
static void withhold_verdicts(Findings *F) {
    if (!report_random_init_models(F->R)) return;
    for (int i = 0; i < F->n; i++) {
        FindRow *w = &F->rows[i];
        char was[sizeof w->verdict];
        snprintf(was, sizeof was, "%s", w->verdict);
        snprintf(w->verdict, sizeof w->verdict, "no verdict: random-init models [the check on these runs: %.440s]", was);
    }
}

void sec_models(FILE *f, const Report *R) {
    const char *dirs[64];
    int n = report_model_dirs(R, dirs, 64), n_random = report_random_init_models(R);
    if (n_random)
        fprintf(f, "**No verdict: random-init models.** %d of the %d models these runs name are random-init checkpoints "
                   "(`sprinter init-random`: model.safetensors carries `%s`): their acceptance, quality and speed "
                   "measure the harness on noise, not a model pair, so no figure below says anything about the paper's "
                   "claims. Every verdict is withheld; the check a row would have made is kept in brackets, where it "
                   "tests only the harness's own arithmetic.\n\n",
                n_random, n, SP_INIT_SEED_KEY);
    fprintf(f, "Models:");
    for (int j = 0; j < n; j++) {
        unsigned long long seed = 0;
        ModelOrigin o = model_origin(dirs[j], &seed);
        char dtype[160];
        int have = model_weights_dtype(dirs[j], dtype, sizeof dtype) == 0;
        fprintf(f, "%s `%s` (", j ? ";" : "", dirs[j]);
        if (o == ORIGIN_RANDOM_INIT) fprintf(f, "random-init, seed %llu", seed);
        else fprintf(f, "%s", o == ORIGIN_CHECKPOINT ? "checkpoint" : o == ORIGIN_GGUF_FILE ? "GGUF file"
                             : have ? "origin not recorded" : "not found here");
        fprintf(f, "%s%s)", have ? "; weights " : "", have ? dtype : "");
    }
    fprintf(f, "%s\n\n", n ? "" : " none named");
}

void sec_findings(FILE *f, const Report *R) {
    fprintf(f, "## The review's questions, answered on this pair\n\n"
               "The public review asks for the deployed (eta_FP, eta_TP) (row 1), what Table 2's avg tokens of %.2f "
               "implies under the review's bound for r = 2..8 and both readings of avg tokens (row 2), whether the i.i.d. "
               "tests have the power to see a violation (row 3), and a draft-only control (rows 4-5, at each "
               "protocol's own lambda); row 7 checks the identity beta_SD = 1 - d_TV(p, q) the review reads its d_TV "
               "from, row 8 the authors' evaluation on the verifier's training prompts. Definitions and the machine-readable table: [FINDINGS.md](FINDINGS.md), "
               "[FINDINGS.tsv](FINDINGS.tsv).\n\n",
            SP_PAPER_AVG_TOKENS);
    Findings F = {.R = R, .rows = R->findings, .n = R->n_findings};
    table_md(f, &F);
}
