/* tables.c - report/tables.md: the paper's Tables 1-4 regenerated from the runs (rows: data set x
 * method x setting, means over seeds) and the deployed-point table the paper lacks. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "report_int.h"
#include "metrics.h"
#include "report_util.h"

enum {
    Q_R1, Q_R2, Q_RL, Q_PPL, Q_WT, Q_MS, Q_SAR, Q_SSD, Q_TPC, Q_ALPHA, Q_APD, Q_FD, Q_FV, Q_FT, Q_FTOT, Q_FSD, Q_EFP, Q_ETP, Q_AUC,
    Q_EN_IID, Q_EN_PAPER, Q_EN_MEAS, Q_DTV_PRED, Q_DTV_MEAS, Q_IID_REJ, Q_AVGTOK, Q_AVGTOK_SD, Q_N
};

typedef struct Row {
    char dataset[256], method[32], setting[256], ver_data[256];
    double lambda, tau;
    int runs, deployed;
    int in_domain, on_train; /* verifier trained on this data; evaluated on its training prompts */
    char protocol[16];       /* runs.label_rule, "" when none */
    double sum[Q_N];
    int cnt[Q_N];
} Row;

static void add(Row *r, int q, double v) {
    if (!isnan(v)) r->sum[q] += v, r->cnt[q]++;
}

static double val(const Row *r, int q) { return r->cnt[q] ? r->sum[q] / r->cnt[q] : NAN; }

/* The mean FLOPs per token of the sd runs on the same data. */
static double sd_flops(const Report *R, const RunAn *a) {
    double s = 0;
    int n = 0;
    for (int j = 0; j < R->rs.n; j++)
        if (method_name_eq(R->an[j].ri->method, DM_SD) && !strcmp(R->an[j].ri->dataset_sha256, a->ri->dataset_sha256) &&
            !isnan(R->an[j].flops_tok[3]))
            s += R->an[j].flops_tok[3], n++;
    return n ? s / n : NAN;
}

/* The standard deviation over prompts (rounds > 0) of the authors' avg tokens, round_kept / rounds
 * (their figure is the mean of the same per-prompt values: RunInfo.avg_tokens_paper); NaN under 2. */
static double avg_tokens_sd(const RunInfo *ri) {
    double s = 0, s2 = 0;
    int n = 0;
    for (int j = 0; j < ri->n_rows; j++) {
        const PromptInfo *p = &ri->prompts[j];
        if (p->rounds <= 0) continue;
        double x = (double)p->round_kept / (double)p->rounds;
        s += x, s2 += x * x, n++;
    }
    return n > 1 ? sqrt(fmax(0, (s2 - s * s / n) / (n - 1))) : NAN;
}

static void fill(const Report *R, Row *r, const RunAn *a) {
    const double q[] = {a->rouge[0],   a->rouge[1],     a->rouge[2],        a->ppl,          a->win_tie,
                        a->ms_per_token, a->speedup_ar, a->speedup_sd,      a->tok_per_call, a->acc.alpha,
                        a->acc_per_drafted, a->flops_tok[0], a->flops_tok[1], a->flops_tok[2], a->flops_tok[3]};
    for (int k = 0; k <= Q_FTOT; k++) add(r, k, q[k]);
    add(r, Q_FSD, a->flops_tok[3] / sd_flops(R, a));
    if (a->has_op) {
        add(r, Q_EFP, a->nneg ? (double)a->fp / (double)a->nneg : NAN);
        add(r, Q_ETP, a->npos ? (double)a->tp / (double)a->npos : NAN);
    }
    add(r, Q_AUC, a->auc);
    if (a->has_tc) {
        add(r, Q_EN_IID, a->tc.est.pred[TC_IID][TQ_MEAN_N]);
        add(r, Q_EN_PAPER, a->tc.est.pred[TC_PAPER][TQ_MEAN_N]);
        add(r, Q_EN_MEAS, a->tc.est.meas[TQ_MEAN_N]);
        add(r, Q_DTV_PRED, a->tc.est.pred[TC_IID][TQ_DTV]);
        add(r, Q_DTV_MEAS, a->tc.est.meas[TQ_DTV]);
    }
    if (a->has_iid) add(r, Q_IID_REJ, a->iid.rejected);
    add(r, Q_AVGTOK, a->ri->avg_tokens_paper);
    add(r, Q_AVGTOK_SD, avg_tokens_sd(a->ri));
}

/* Run a belongs to row r: the same (data, method, setting, verifier data). */
static int row_has(const Row *r, const RunAn *a) {
    return !strcmp(r->dataset, a->dataset) && !strcmp(r->method, a->ri->method) && !strcmp(r->setting, a->setting) &&
           !strcmp(r->ver_data, a->ver_data);
}

/* Rows grouped by (data, method, setting, verifier data), in first-seen order. */
static Row *group(const Report *R, int *n) {
    Row *rows = calloc((size_t)(R->rs.n ? R->rs.n : 1), sizeof *rows);
    *n = 0;
    if (!rows) return NULL;
    for (int i = 0; i < R->rs.n; i++) {
        const RunAn *a = &R->an[i];
        Row *r = NULL;
        for (int k = 0; k < *n && !r; k++)
            if (row_has(&rows[k], a)) r = &rows[k];
        if (!r) {
            r = &rows[(*n)++];
            snprintf(r->dataset, sizeof r->dataset, "%s", a->dataset);
            snprintf(r->method, sizeof r->method, "%s", a->ri->method);
            snprintf(r->setting, sizeof r->setting, "%s", a->setting);
            snprintf(r->ver_data, sizeof r->ver_data, "%s", a->ver_data);
            r->lambda = a->ri->lambda, r->tau = a->ri->tau, r->deployed = is_deployed(R, a);
            r->in_domain = !strcmp(a->ri->verifier_data_sha256, a->ri->dataset_sha256);
            r->on_train = a->ri->on_verifier_prompts;
            snprintf(r->protocol, sizeof r->protocol, "%s", a->ri->label_rule);
        }
        r->runs++;
        fill(R, r, a);
    }
    return rows;
}

static const char *fv(char *buf, const Row *r, int q, const char *fmt) { return fmt_num(buf, 48, val(r, q), fmt); }

static void table_cols(FILE *f, const char *title, const char *note, const char *const *cols, int n) {
    fprintf(f, "## %s\n\n%s\n\n| Dataset | Method | Setting | runs |", title, note);
    for (int i = 0; i < n; i++) fprintf(f, " %s |", cols[i]);
    fprintf(f, "\n|---|---|---|---|");
    for (int i = 0; i < n; i++) fprintf(f, "---|");
    fprintf(f, "\n");
}

static void table_rows(FILE *f, const Row *rows, int n, const int *qs, const char *const *fmts, int nq, int only_ver) {
    char b[24][48];
    for (int i = 0; i < n; i++) {
        const Row *r = &rows[i];
        if (only_ver && !method_name_eq(r->method, DM_SPRINTER)) continue;
        fprintf(f, "| %s | %s%s%s | %s%s%s%s | %d |", r->dataset, r->deployed ? "**" : "", r->method, r->deployed ? "**" : "",
                r->setting, r->ver_data[0] ? " (verifier trained on " : "", r->ver_data, r->ver_data[0] ? ")" : "", r->runs);
        for (int k = 0; k < nq; k++) fprintf(f, " %s |", fv(b[k % 24], r, qs[k], fmts[k]));
        fprintf(f, "\n");
    }
    fprintf(f, "\n");
}

static void table_transfer(FILE *f, const Row *rows, int n) {
    fprintf(f, "## Table 4: cross-dataset transfer\n\nThe verifier trained on one data set, evaluated on another "
               "(sprinter runs; in-domain rows for comparison; \"in-domain, training prompts\": evaluated on the prompts the "
               "verifier trained on, as the authors' code does). Both directions need a verifier trained on each data "
               "set (`make paper`: PAPER_TRANSFER=1).\n\n| Verifier trained on | Evaluated on | transfer | label rule | "
               "lambda | tau | runs | eta_FP | eta_TP | AUC | ROUGE-L | tokens per target call | speed-up vs SD |\n"
               "|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    char b[8][48];
    int any = 0;
    for (int i = 0; i < n; i++) {
        const Row *r = &rows[i];
        if (!method_name_eq(r->method, DM_SPRINTER) || !r->ver_data[0]) continue;
        any = 1;
        fprintf(f, "| %s | %s | %s | %s | %g | %g | %d | %s | %s | %s | %s | %s | %s |\n", r->ver_data, r->dataset,
                r->on_train ? "in-domain, training prompts" : r->in_domain ? "in-domain" : "cross",
                r->protocol[0] ? r->protocol : "-", r->lambda, r->tau, r->runs,
                fv(b[0], r, Q_EFP, "%.3f"), fv(b[1], r, Q_ETP, "%.3f"), fv(b[2], r, Q_AUC, "%.3f"),
                fv(b[3], r, Q_RL, "%.4f"), fv(b[4], r, Q_TPC, "%.2f"), fv(b[5], r, Q_SSD, "%.2fx"));
    }
    if (!any) fprintf(f, "| not computed: no sprinter runs | | | | | | | | | | | | |\n");
    fprintf(f, "\n");
}

static void table_deployed(FILE *f, const Report *R, const Row *rows, int n) {
    fprintf(f, "## Table 5 (not in the paper): verifier operating point -> theory vs measurement\n\n"
               "Per sprinter setting (the deployed lambda = %g, tau = %g in bold): the measured operating point, "
               "E[min(N, c)] (tokens accepted before the target is invoked, per-block caps) predicted by Thm 3.3 "
               "with the measured rates (`iid`: i.i.d. verifier on the measured label chain; `paper`: the paper's "
               "label model) and measured, and d_TV(p, p_SPRINTER) averaged over visited prefixes, predicted by "
               "Thm 3.1 (eta_FP d_TV(p, q)) and measured from the token log. Means over seeds.\n\n"
               "| lambda | tau | Setting | Dataset | runs | eta_FP | eta_TP | E[N] pred (iid) | E[N] pred (paper) | E[N] "
               "measured | d_TV pred | d_TV measured | share of runs with i.i.d. rejected |\n"
               "|---|---|---|---|---|---|---|---|---|---|---|---|---|\n",
            R->o->deployed_lambda, R->o->deployed_tau);
    char b[10][48];
    int any = 0;
    for (int i = 0; i < n; i++) {
        const Row *r = &rows[i];
        if (!method_name_eq(r->method, DM_SPRINTER)) continue;
        any = 1;
        const char *s = r->deployed ? "**" : "";
        fprintf(f, "| %s%g%s | %s%g%s | %s | %s | %d | %s | %s | %s | %s | %s | %s | %s | %s |\n", s, r->lambda, s, s, r->tau,
                s, r->setting, r->dataset, r->runs, fv(b[0], r, Q_EFP, "%.3f"), fv(b[1], r, Q_ETP, "%.3f"), fv(b[2], r, Q_EN_IID, "%.3f"),
                fv(b[3], r, Q_EN_PAPER, "%.3f"), fv(b[4], r, Q_EN_MEAS, "%.3f"), fv(b[5], r, Q_DTV_PRED, "%.4f"),
                fv(b[6], r, Q_DTV_MEAS, "%.4f"), r->cnt[Q_IID_REJ] ? fv(b[7], r, Q_IID_REJ, "%.2f") : "-");
    }
    if (!any) fprintf(f, "| not computed: no sprinter runs | | | | | | | | | | | | |\n");
    fprintf(f, "\n");
}

/* ---- Table 6: Spec-Bench's task groups (records/metrics.h) */

/* One row's questions (every run of it pooled) and its ROUGE-L per task group. */
typedef struct SbRow {
    SbQuestion *q;
    double *rl_sum; /* [n] per question: its turns' ROUGE-L summed over those with a reference */
    int *rl_n;      /* [n] how many */
    int n, cap;
    SbCell cells[SB_N_GROUPS];
    const RunInfo *first; /* the row's first run: its data and temperature pick the ar row */
} SbRow;

static int sb_add_question(SbRow *x, const PromptInfo *p) {
    if (x->n == x->cap) {
        int cap = x->cap ? 2 * x->cap : 64;
        SbQuestion *nq = realloc(x->q, (size_t)cap * sizeof *nq);
        if (nq) x->q = nq;
        double *ns = realloc(x->rl_sum, (size_t)cap * sizeof *ns);
        if (ns) x->rl_sum = ns;
        int *nn = realloc(x->rl_n, (size_t)cap * sizeof *nn);
        if (nn) x->rl_n = nn;
        if (!nq || !ns || !nn) return -1;
        x->cap = cap;
    }
    x->q[x->n] = (SbQuestion){p->category, 0, 0, 0, 0, 0};
    x->rl_sum[x->n] = 0, x->rl_n[x->n] = 0;
    x->n++;
    return 0;
}

static void sb_free(SbRow *x) { free(x->q), free(x->rl_sum), free(x->rl_n); }

/* The mean ROUGE-L over the turns with a reference of the questions in task group g (g >= 0) or of
 * category cat (g < 0); NaN when none has one. */
static double sb_rouge(const SbRow *x, int g, const char *cat) {
    double sum = 0;
    int n = 0;
    for (int i = 0; i < x->n; i++) {
        const char *c = x->q[i].category ? x->q[i].category : "";
        int in = g == SB_OVERALL || (g >= 0 ? specbench_group_of(c) == g : !strcmp(c, cat));
        if (in) sum += x->rl_sum[i], n += x->rl_n[i];
    }
    return n ? sum / n : NAN;
}

/* The questions of row r's runs (records/metrics.h: the rows sharing specbench_question_key, which
 * are consecutive), their counts summed. */
static int sb_collect(const Report *R, const Row *r, SbRow *x) {
    for (int i = 0; i < R->rs.n; i++) {
        const RunAn *a = &R->an[i];
        if (!row_has(r, a)) continue;
        if (!x->first) x->first = a->ri;
        for (int j = 0; j < a->ri->n_rows; j++) {
            const PromptInfo *p = &a->ri->prompts[j], *prev = j ? &a->ri->prompts[j - 1] : NULL;
            int same = prev && specbench_question_key(p->prompt_index, p->turn) ==
                                   specbench_question_key(prev->prompt_index, prev->turn);
            if (!same && sb_add_question(x, p)) return -1;
            SbQuestion *q = &x->q[x->n - 1];
            q->tokens += p->tokens, q->target_calls += p->target_calls, q->seconds += p->t_total;
            q->turns++, q->truncated += p->prompt_truncated;
            if (a->rouge_l && !isnan(a->rouge_l[j])) x->rl_sum[x->n - 1] += a->rouge_l[j], x->rl_n[x->n - 1]++;
        }
    }
    specbench_cells(x->q, x->n, x->cells);
    return 0;
}

static int has_specbench_categories(const Report *R) {
    for (int i = 0; i < R->rs.n; i++)
        for (int j = 0; j < R->rs.runs[i].n_rows; j++)
            if (specbench_group_of(R->rs.runs[i].prompts[j].category) >= 0) return 1;
    return 0;
}

/* The ar row whose first run has x's data and temperature, NULL when there is none. */
static const SbRow *sb_ar_of(const Row *rows, int n, const SbRow *sb, const SbRow *x) {
    for (int m = 0; m < n; m++)
        if (method_name_eq(rows[m].method, DM_AR) && sb[m].first && x->first && same_cell(sb[m].first, x->first))
            return &sb[m];
    return NULL;
}

static void table_specbench(FILE *f, const Row *rows, int n, const SbRow *sb) {
    fprintf(f, "## Table 6 (Spec-Bench): task groups\n\nSpec-Bench's own figures (its evaluation/speed.py), per task "
               "group (mt_bench = its 8 MT-bench categories; overall = every question): **speed-up** = the mean over "
               "questions of tokens / seconds (a question's turns summed) over the same mean of AR on the same data "
               "and temperature, and **MAT** = mean accepted tokens, tokens per target forward with the bonus (AR = "
               "1.00). Beside them the harness's own: Table 2's speed-up (pooled tokens / pooled seconds) and "
               "ROUGE-L F1 per group over the turns that have a reference (`-`: none). For scale, Spec-Bench's "
               "own SpS row (Vicuna-68M drafting for Vicuna-7B, greedy, fp16, one RTX 3090) reads MAT 2.28 and "
               "1.79x overall.\n\n"
               "| Dataset | Method | Setting | runs |");
    for (int g = 0; g < SB_N_GROUPS; g++) fprintf(f, " %s speed-up / MAT |", specbench_group_name(g));
    fprintf(f, " pooled speed-up (Table 2) |");
    for (int g = 0; g < SB_N_GROUPS; g++) fprintf(f, " %s ROUGE-L |", specbench_group_name(g));
    fprintf(f, "\n|---|---|---|---:|");
    for (int g = 0; g < 2 * SB_N_GROUPS + 1; g++) fprintf(f, "---:|");
    fprintf(f, "\n");
    for (int k = 0; k < n; k++) {
        const SbRow *x = &sb[k], *ar = sb_ar_of(rows, n, sb, x);
        fprintf(f, "| %s | %s | %s | %d |", rows[k].dataset, rows[k].method, rows[k].setting, rows[k].runs);
        char b1[48], b2[48];
        for (int g = 0; g < SB_N_GROUPS; g++) {
            const SbCell *c = &x->cells[g];
            double speedup = ar ? c->mean_rate / ar->cells[g].mean_rate : NAN;
            if (c->questions) fprintf(f, " %s / %s |", fmt_num(b1, sizeof b1, speedup, "%.2fx"),
                                      fmt_num(b2, sizeof b2, metric_ratio((double)c->tokens, (double)c->target_calls), "%.2f"));
            else fprintf(f, " - |");
        }
        fprintf(f, " %s |", fv(b1, &rows[k], Q_SAR, "%.2fx"));
        for (int g = 0; g < SB_N_GROUPS; g++) fprintf(f, " %s |", fmt_num(b1, sizeof b1, sb_rouge(x, g, NULL), "%.4f"));
        fprintf(f, "\n");
    }
    fprintf(f, "\nQuestions per group (the first row's runs):");
    for (int g = 0; g < SB_N_GROUPS; g++) fprintf(f, " %s %d%s", specbench_group_name(g), n ? sb[0].cells[g].questions : 0,
                                                  g + 1 < SB_N_GROUPS ? "," : ".\n\n");
    fprintf(f, "Truncated prompts per group (prompts.prompt_truncated: longer than the context, only their last part "
               "kept, their start, e.g. an instruction or a system prompt, lost), turns of each row's runs:\n\n");
    for (int k = 0; k < n; k++) {
        fprintf(f, "- %s %s %s:", rows[k].dataset, rows[k].method, rows[k].setting);
        for (int g = 0; g < SB_N_GROUPS; g++)
            fprintf(f, " %s %d of %d%s", specbench_group_name(g), sb[k].cells[g].truncated, sb[k].cells[g].turns,
                    g + 1 < SB_N_GROUPS ? "," : "\n");
    }
    fprintf(f, "\n");
}

/* Table 7: the same figures per category (Spec-Bench's 13 or the data's own), one line each. */
static void table_categories(FILE *f, const Row *rows, int n, const SbRow *sb) {
    fprintf(f, "## Table 7 (Spec-Bench): per category\n\nTable 6's figures for each category of the data "
               "(prompts.category), in the data's order: questions, speed-up over AR as Spec-Bench defines it, "
               "MAT, ROUGE-L over the turns with a reference, and the turns whose prompt was truncated to the context "
               "(its start lost) of all its turns.\n\n"
               "| Dataset | Method | Setting | Category | Task group | questions | speed-up | MAT | ROUGE-L | truncated |\n"
               "|---|---|---|---|---|---:|---:|---:|---:|---:|\n");
    for (int k = 0; k < n; k++) {
        const SbRow *x = &sb[k], *ar = sb_ar_of(rows, n, sb, x);
        for (int i = 0; i < x->n; i++) {
            if (!specbench_category_first(x->q, i)) continue;
            const char *cat = x->q[i].category ? x->q[i].category : "";
            SbCell c = specbench_category_cell(x->q, x->n, cat);
            SbCell a = ar ? specbench_category_cell(ar->q, ar->n, cat) : (SbCell){0};
            int g = specbench_group_of(cat);
            char b1[48], b2[48], b3[48];
            fprintf(f, "| %s | %s | %s | %s | %s | %d | %s | %s | %s | %d / %d |\n", rows[k].dataset, rows[k].method,
                    rows[k].setting, cat[0] ? cat : "(none)", g >= 0 ? specbench_group_name(g) : "-", c.questions,
                    fmt_num(b1, sizeof b1, ar && a.questions ? c.mean_rate / a.mean_rate : NAN, "%.2fx"),
                    fmt_num(b2, sizeof b2, metric_ratio((double)c.tokens, (double)c.target_calls), "%.2f"),
                    fmt_num(b3, sizeof b3, sb_rouge(x, -1, cat), "%.4f"), c.truncated, c.turns);
        }
    }
    fprintf(f, "\n");
}

static int write_specbench(FILE *f, const Report *R, const Row *rows, int n) {
    if (!has_specbench_categories(R)) return 0;
    SbRow *sb = calloc((size_t)(n ? n : 1), sizeof *sb);
    int rc = sb ? 0 : -1;
    for (int k = 0; k < n && !rc; k++) rc = sb_collect(R, &rows[k], &sb[k]);
    if (!rc) table_specbench(f, rows, n, sb);
    if (!rc) table_categories(f, rows, n, sb);
    for (int k = 0; sb && k < n; k++) sb_free(&sb[k]);
    free(sb);
    return rc;
}

int write_tables(Report *R, SpErr *err) {
    int n;
    Row *rows = group(R, &n);
    if (!rows) return sp_fail(err, "out of memory");
    FILE *f = report_open(R, "tables.md", err);
    if (!f) {
        free(rows);
        return -1;
    }
    fprintf(f, "# Paper tables, regenerated: %s\n\nRows: data set x method x setting (means over seeds; `runs` = runs "
               "averaged). The deployed SPRINTER setting is in bold. Definitions: see index.md.\n\n", R->o->results_dir);
    static const char *const c1[] = {"ROUGE-1", "ROUGE-2", "ROUGE-L", "PPL (target)",
                                     "Win-tie vs SD (judge: target log-likelihood, not GPT-4)"};
    static const int q1[] = {Q_R1, Q_R2, Q_RL, Q_PPL, Q_WT};
    static const char *const f1[] = {"%.4f", "%.4f", "%.4f", "%.2f", "%.3f"};
    table_cols(f, "Table 1: quality", "ROUGE F1 against the references; target perplexity and the win-tie rate against "
               "sd judged by the target's log-likelihood per token (the paper's judge is GPT-4; none runs here; `-`: "
               "sprinter score not run).", c1, 5);
    table_rows(f, rows, n, q1, f1, 5, 0);
    static const char *const c2[] = {"ms / token", "Speed-up vs AR", "Speed-up vs SD", "Tokens per target call",
                                     "Acceptance rate alpha", "Accepted / drafted", "Avg tokens (paper)",
                                     "Avg tokens, SD over prompts"};
    static const int q2[] = {Q_MS, Q_SAR, Q_SSD, Q_TPC, Q_ALPHA, Q_APD, Q_AVGTOK, Q_AVGTOK_SD};
    static const char *const f2[] = {"%.4f", "%.2fx", "%.2fx", "%.2f", "%.3f", "%.3f", "%.2f", "%.2f"};
    table_cols(f, "Table 2: latency", "Wall time per emitted token (audit excluded); emitted tokens per target forward "
               "call, bonus included (Spec-Bench's mean accepted tokens; AR = 1); alpha = accepted share of the draft "
               "tokens the target checked (per-token acceptance rate); accepted / drafted counts the unchecked drafts "
               "after a rejection as failures (not an acceptance rate); avg tokens (the paper's Table 2 column, the "
               "authors' definition) = drafts kept per round that decided drafts, round_kept / rounds of each prompt "
               "averaged over prompts (the resampled or bonus token excluded; `-` where the run has no rounds), with "
               "the standard deviation of that per-prompt figure over the prompts (mean over seeds).", c2, 8);
    table_rows(f, rows, n, q2, f2, 8, 0);
    static const char *const c3[] = {"Draft", "Verifier", "Target", "Total", "Total vs SD"};
    static const int q3[] = {Q_FD, Q_FV, Q_FT, Q_FTOT, Q_FSD};
    static const char *const f3[] = {"%.3g", "%.3g", "%.3g", "%.3g", "%.3fx"};
    table_cols(f, "Table 3: FLOPs per emitted token", "2 x parameters per processed position (+ 2d per verifier "
               "evaluation), divided by the tokens emitted.", c3, 5);
    table_rows(f, rows, n, q3, f3, 5, 0);
    table_transfer(f, rows, n);
    table_deployed(f, R, rows, n);
    if (write_specbench(f, R, rows, n)) {
        fclose(f);
        free(rows);
        return sp_fail(err, "out of memory");
    }
    free(rows);
    return report_close(f, R, "tables.md", err);
}
