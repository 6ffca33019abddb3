/* summary.c - the results database's tables for people (db.h db_summary, db_summary_tasks,
 * db_summary_categories): per configuration, and Spec-Bench's task groups and categories. */
#include <limits.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db.h"
#include "db_int.h"
#include "metrics.h"
#include "schema.h"
#include "sqlutil.h"

/* ------------------------------------------------------------------ summary */

typedef struct SumRow {
    char method[32], label[160], dataset[256];
    int64_t runs, tokens, calls, accepted, neg, fp, pos, tp;
    int64_t drafted, verifier_accepts, rejected;
    int has_rejected; /* every prompt row has prompts.rejected (schema 5 on) */
    double avg_tokens_paper; /* mean over prompt rows of round_kept / rounds (NaN: no such row) */
    double t_total, t_audit;
    double params[RP_COUNT]; /* NaN where the parameter does not apply (or differs: by_method) */
    double temperature;      /* [decode] temperature of the row's runs (NaN: by_method, pooled) */
    char draft_sha[SP_SHA256_HEX], target_sha[SP_SHA256_HEX]; /* the row's model contents ("" when unused) */
} SumRow;

/* What the rows of a summary differ in beyond method and parameters. */
typedef struct SumShape {
    int show_data, show_temperature; /* the done runs have several datasets / temperatures (by config) */
    int show_models; /* the done runs used several draft or target contents (sha256): rows are split by them */
} SumShape;

static const char *base(const char *p) {
    const char *b = strrchr(p, '/');
    return b ? b + 1 : p;
}

static void fmt_ratio(char *buf, size_t cap, double num, double den, const char *fmt) {
    if (den > 0) snprintf(buf, cap, fmt, num / den);
    else snprintf(buf, cap, "-");
}

/* Result columns of the summary query; the parameters follow at SUM_PARAMS. */
enum { SUM_METHOD, SUM_DATASET, SUM_RUNS, SUM_TOKENS, SUM_T_TOTAL, SUM_CALLS, SUM_ACCEPTED, SUM_NEG, SUM_FP, SUM_POS,
       SUM_TP, SUM_T_AUDIT, SUM_N_DATASETS, SUM_DRAFTED, SUM_VERIFIER_ACCEPTS, SUM_REJECTED, SUM_ALL_REJECTED,
       SUM_AVG_TOKENS_PAPER, SUM_TEMPERATURE, SUM_N_TEMPERATURES, SUM_DRAFT_SHA, SUM_TARGET_SHA, SUM_N_MODELS,
       SUM_PARAMS };

/* What read_summary_row needs besides the row. */
typedef struct SummaryRead {
    int by_method;
    SumShape *shape;
} SummaryRead;

/* One row of the summary query into a SumRow. */
static int read_summary_row(sqlite3_stmt *st, void *item, void *ctx, SpErr *err) {
    (void)err;
    const SummaryRead *read = ctx;
    SumRow *r = item;
    snprintf(r->method, sizeof r->method, "%s", (const char *)sqlite3_column_text(st, SUM_METHOD));
    snprintf(r->dataset, sizeof r->dataset, "%s", base((const char *)sqlite3_column_text(st, SUM_DATASET)));
    if (!read->by_method) db_params_label(st, SUM_PARAMS, r->label, sizeof r->label);
    for (int p = 0; p < RP_COUNT; p++)
        r->params[p] = read->by_method || sqlite3_column_type(st, SUM_PARAMS + p) == SQLITE_NULL
                           ? NAN
                           : sqlite3_column_double(st, SUM_PARAMS + p);
    r->runs = sqlite3_column_int64(st, SUM_RUNS);
    r->tokens = sqlite3_column_int64(st, SUM_TOKENS);
    r->t_total = sqlite3_column_double(st, SUM_T_TOTAL);
    r->calls = sqlite3_column_int64(st, SUM_CALLS);
    r->accepted = sqlite3_column_int64(st, SUM_ACCEPTED);
    r->neg = sqlite3_column_int64(st, SUM_NEG);
    r->fp = sqlite3_column_int64(st, SUM_FP);
    r->pos = sqlite3_column_int64(st, SUM_POS);
    r->tp = sqlite3_column_int64(st, SUM_TP);
    r->t_audit = sqlite3_column_double(st, SUM_T_AUDIT);
    read->shape->show_data = !read->by_method && sqlite3_column_int(st, SUM_N_DATASETS) > 1;
    read->shape->show_temperature = !read->by_method && sqlite3_column_int(st, SUM_N_TEMPERATURES) > 1;
    read->shape->show_models = sqlite3_column_int(st, SUM_N_MODELS) > 1;
    snprintf(r->draft_sha, sizeof r->draft_sha, "%s", (const char *)sqlite3_column_text(st, SUM_DRAFT_SHA));
    snprintf(r->target_sha, sizeof r->target_sha, "%s", (const char *)sqlite3_column_text(st, SUM_TARGET_SHA));
    r->temperature = read->by_method ? NAN : sqlite3_column_double(st, SUM_TEMPERATURE);
    r->drafted = sqlite3_column_int64(st, SUM_DRAFTED);
    r->verifier_accepts = sqlite3_column_int64(st, SUM_VERIFIER_ACCEPTS);
    r->rejected = sqlite3_column_int64(st, SUM_REJECTED);
    r->has_rejected = sqlite3_column_int(st, SUM_ALL_REJECTED);
    r->avg_tokens_paper = sqlite3_column_type(st, SUM_AVG_TOKENS_PAPER) == SQLITE_NULL
                              ? NAN
                              : sqlite3_column_double(st, SUM_AVG_TOKENS_PAPER);
    return 0;
}

/* "target=XXXXXXXX draft=YYYYYYYY": the first 8 digits of a row's model contents ("" when unused). */
static void models_label(char *buf, size_t cap, const char *target_sha, const char *draft_sha) {
    snprintf(buf, cap, "%s%.8s%s%.8s", target_sha[0] ? "target=" : "", target_sha,
             draft_sha[0] ? (target_sha[0] ? " draft=" : "draft=") : "", draft_sha);
}

/* The model contents of a run (group key, result columns), and the number of distinct draft or
 * target contents among the done runs (the larger). */
static const char kModelKey[] = "COALESCE(r.draft_sha256, ''), COALESCE(r.target_sha256, '')";
static const char kModelCount[] =
    "SELECT MAX((SELECT COUNT(DISTINCT draft_sha256) FROM runs WHERE status = 'done'),"
    " (SELECT COUNT(DISTINCT target_sha256) FROM runs WHERE status = 'done'))";
static const char kModelsNote[] =
    "note: these runs used several model contents; rows are split by them (target=, draft=: the first 8 digits of "
    "the sha256 of the model files), and speed-ups are over the ar row of the same target\n";

/* Rows per (method, data, temperature, parameters), or per method (by_method: pooled over those);
 * either way per draft and target content (sha256): runs of different models never share a row. */
static int summary_rows(Db *db, int by_method, SumRow **rows, int *n, SumShape *shape, SpErr *err) {
    char params[512], group[768], sql[4096];
    db_param_columns("r.", params, sizeof params);
    snprintf(group, sizeof group, by_method ? "r.method, %s" : "r.method, r.dataset, r.temperature, %s, %s", kModelKey,
             params);
    snprintf(sql, sizeof sql,
             "SELECT r.method, MIN(r.dataset), COUNT(DISTINCT r.run_hash), SUM(p.tokens), SUM(p.t_total),"
             " SUM(p.target_calls), SUM(p.accepted), SUM(p.audited_neg), SUM(p.fp), SUM(p.audited_pos), SUM(p.tp),"
             " SUM(p.t_audit), (SELECT COUNT(DISTINCT dataset) FROM runs WHERE status = 'done'),"
             " SUM(p.drafted), SUM(p.verifier_accepts), SUM(p.rejected), COUNT(p.rejected) = COUNT(*),"
             " AVG(CASE WHEN p.rounds > 0 THEN CAST(p.round_kept AS REAL) / p.rounds END), MIN(r.temperature),"
             " (SELECT COUNT(DISTINCT temperature) FROM runs WHERE status = 'done'), %s, (%s), %s"
             " FROM runs r JOIN prompts p ON p.run_hash = r.run_hash WHERE r.status = 'done'"
             " GROUP BY %s ORDER BY MIN(r.run_index), %s",
             kModelKey, kModelCount, params, group, group);
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db->h, sql, -1, &st, NULL) != SQLITE_OK) return sql_fail(db->h, db->path, "summary query", err);
    *rows = NULL;
    *n = 0;
    *shape = (SumShape){0, 0, 0};
    SummaryRead read = {by_method, shape};
    void *items = NULL;
    int rc = sql_read_rows(db->h, db->path, st, "summary query", sizeof **rows, &items, n, read_summary_row, &read, err);
    *rows = items;
    sqlite3_finalize(st);
    return rc;
}

/* Result columns of the failed-runs query; the parameters follow at FAILED_PARAMS. */
enum { FAILED_HASH, FAILED_METHOD, FAILED_SEED, FAILED_REASON, FAILED_PARAMS };

/* Below the table: how many runs failed, each with its reason (at most SUMMARY_MAX_FAILED of them),
 * and how many are unfinished. Neither kind is counted in the table. */
#define SUMMARY_MAX_FAILED 50
static int summary_not_done(Db *db, FILE *out, SpErr *err) {
    char n_failed[32], n_running[32];
    if (sql_scalar_text(db->h, db->path, "SELECT COUNT(*) FROM runs WHERE status = 'failed'", n_failed, sizeof n_failed, err) ||
        sql_scalar_text(db->h, db->path, "SELECT COUNT(*) FROM runs WHERE status = 'running'", n_running, sizeof n_running, err))
        return -1;
    int nf = atoi(n_failed), nr = atoi(n_running);
    if (nf > 0) {
        fprintf(out, "failed: %d run%s, not in the table (a rerun does not retry %s: sprinter sweep --retry-failed)\n", nf,
                nf == 1 ? "" : "s", nf == 1 ? "it" : "them");
        char params[512], sql[1024];
        db_param_columns("r.", params, sizeof params);
        snprintf(sql, sizeof sql,
                 "SELECT r.run_hash, r.method, r.seed, r.failure, %s FROM runs r WHERE r.status = 'failed'"
                 " ORDER BY r.run_index, r.run_hash",
                 params);
        sqlite3_stmt *st;
        if (sqlite3_prepare_v2(db->h, sql, -1, &st, NULL) != SQLITE_OK) return sql_fail(db->h, db->path, "query failed runs", err);
        int shown = 0, s;
        while (shown < SUMMARY_MAX_FAILED && (s = sqlite3_step(st)) == SQLITE_ROW) {
            char label[200];
            db_params_label(st, FAILED_PARAMS, label, sizeof label);
            const char *reason = (const char *)sqlite3_column_text(st, FAILED_REASON);
            fprintf(out, "  %.12s %s%s%s seed=%lld: %s\n", (const char *)sqlite3_column_text(st, FAILED_HASH),
                    (const char *)sqlite3_column_text(st, FAILED_METHOD), label[0] ? " " : "", label,
                    (long long)sqlite3_column_int64(st, FAILED_SEED), reason ? reason : "?");
            shown++;
        }
        sqlite3_finalize(st);
        if (nf > shown)
            fprintf(out, "  ... and %d more (sqlite3 runs.sqlite \"SELECT run_hash, method, failure FROM runs WHERE "
                         "status = 'failed'\")\n", nf - shown);
    }
    if (nr > 0)
        fprintf(out, "unfinished: %d run%s, not in the table (started, not finished: the next sweep redoes %s)\n", nr,
                nr == 1 ? "" : "s", nr == 1 ? "it" : "them");
    return 0;
}

/* The tokens/s of the ar row of r's data and temperature (where the summary tells them apart) and
 * of r's target content (0 when there is none): the reference of r's speed-up. */
static double ar_rate_of(const SumRow *rows, int n, const SumRow *r, SumShape shape) {
    for (int j = 0; j < n; j++)
        if (!strcmp(rows[j].method, decode_method_name(DM_AR)) && (!shape.show_data || !strcmp(rows[j].dataset, r->dataset)) &&
            (!shape.show_temperature || rows[j].temperature == r->temperature) &&
            !strcmp(rows[j].target_sha, r->target_sha) && rows[j].t_total > 0)
            return (double)rows[j].tokens / rows[j].t_total;
    return 0;
}

/* --tsv: one line per row, every figure a column (NaN where it does not apply), for scripts. */
static void summary_tsv(FILE *out, const SumRow *rows, int n, SumShape shape) {
    fprintf(out, "method\tdataset\tparams");
    /* the oracles' configured eta_fp / eta_tp are named oracle_*, the measured rates eta_fp / eta_tp:
     * every column name is unique (as examples/readers/summary_pandas.py names them) */
    for (int p = 0; p < RP_COUNT; p++)
        fprintf(out, "\t%s%s", p == RP_ETA_FP || p == RP_ETA_TP ? "oracle_" : "", run_param_info((RunParam)p)->name);
    fprintf(out, "\truns\ttokens\tseconds\ttokens_per_s\tspeedup_vs_ar\ttarget_calls\ttokens_per_call\taccept_rate"
                 "\taccept_rate_lo\taccept_rate_hi\tchecked\taccepted\tdrafted\taccepted_per_drafted"
                 "\taccept_rate_from_tpc\teta_fp\teta_tp\tavg_tokens_paper\ttemperature\tdraft_sha256\ttarget_sha256\n");
    for (int i = 0; i < n; i++) {
        const SumRow *r = &rows[i];
        Acceptance acc = acceptance_of(r->accepted, r->verifier_accepts, r->rejected);
        int known = r->has_rejected && acc.checked > 0;
        double rate = metric_ratio((double)r->tokens, r->t_total), ar = ar_rate_of(rows, n, r, shape);
        double tpc = metric_ratio((double)r->tokens, (double)r->calls);
        double g = r->params[RP_GAMMA];
        double a_tpc = !strcmp(r->method, decode_method_name(DM_SD)) && !isnan(g) ? alpha_from_tokens_per_call(tpc, (int)g)
                                                                                  : NAN;
        fprintf(out, "%s\t%s\t%s", r->method, r->dataset, r->label[0] ? r->label : "-");
        for (int p = 0; p < RP_COUNT; p++) fprintf(out, "\t%.17g", r->params[p]);
        fprintf(out, "\t%lld\t%lld\t%.9g\t%.9g\t%.9g\t%lld\t%.9g\t%.9g\t%.9g\t%.9g\t%lld\t%lld\t%lld\t%.9g\t%.9g\t%.9g\t%.9g"
                     "\t%.9g\t%.9g\t%s\t%s\n",
                (long long)r->runs, (long long)r->tokens, r->t_total, rate, metric_ratio(rate, ar), (long long)r->calls,
                tpc, known ? acc.alpha : NAN, known ? acc.ci95.lo : NAN, known ? acc.ci95.hi : NAN,
                (long long)acc.checked, (long long)r->accepted, (long long)r->drafted,
                metric_ratio((double)r->accepted, (double)r->drafted), a_tpc,
                metric_ratio((double)r->fp, (double)r->neg), metric_ratio((double)r->tp, (double)r->pos),
                r->avg_tokens_paper, r->temperature, r->draft_sha[0] ? r->draft_sha : "-",
                r->target_sha[0] ? r->target_sha : "-");
    }
}

int db_summary(Db *db, FILE *out, int by_method, int tsv, SpErr *err) {
    SumRow *rows = NULL;
    int n = 0, wl = 6;
    SumShape shape;
    if (summary_rows(db, by_method, &rows, &n, &shape, err)) {
        free(rows);
        return -1;
    }
    if (tsv) {
        summary_tsv(out, rows, n, shape);
        free(rows);
        return 0;
    }
    int show_ds = shape.show_data;
    char (*labels)[512] = calloc((size_t)(n ? n : 1), sizeof *labels); /* [models] [data] [T=t] params */
    if (!labels) {
        free(rows);
        return sp_fail(err, "out of memory");
    }
    for (int i = 0; i < n; i++) {
        char temp[32] = "";
        if (shape.show_temperature) snprintf(temp, sizeof temp, "T=%g", rows[i].temperature);
        char models[48] = "";
        if (shape.show_models) models_label(models, sizeof models, rows[i].target_sha, rows[i].draft_sha);
        const char *parts[4] = {models, show_ds ? rows[i].dataset : "", temp, rows[i].label};
        size_t k = 0;
        for (int p = 0; p < 4; p++)
            if (parts[p][0] && k < sizeof labels[i])
                k += (size_t)snprintf(labels[i] + k, sizeof labels[i] - k, "%s%s", k ? " " : "", parts[p]);
        int l = (int)strlen(labels[i]);
        if (l > wl) wl = l;
    }
    /* acceptance columns: records/metrics.h */
    char head[64];
    snprintf(head, sizeof head, "%s%s%sparams", shape.show_models ? "models " : "", show_ds ? "data " : "",
             shape.show_temperature ? "T " : "");
    if ((int)strlen(head) > wl) wl = (int)strlen(head);
    fprintf(out, "%-11s %-*s %5s %8s %9s %8s %8s %19s %8s %7s %7s %8s\n", "method", wl, head,
            "runs", "tokens", "tok/s", "speedup", "tok/call", "accept [95% CI]", "acc/dft", "eta_FP", "eta_TP", "audit_s");
    for (int i = 0; i < n; i++) {
        const SumRow *r = &rows[i];
        double ar_rate = ar_rate_of(rows, n, r, shape);
        const char *lab = labels[i];
        char rate[32], sp[32], tpc[32], alpha[48], apd[32], efp[32], etp[32];
        fmt_ratio(rate, sizeof rate, (double)r->tokens, r->t_total, "%.1f");
        fmt_ratio(sp, sizeof sp, ar_rate > 0 && r->t_total > 0 ? (double)r->tokens / r->t_total : 0, ar_rate, "%.2fx");
        fmt_ratio(tpc, sizeof tpc, (double)r->tokens, (double)r->calls, "%.2f");
        Acceptance acc = acceptance_of(r->accepted, r->verifier_accepts, r->rejected);
        if (r->has_rejected && acc.checked > 0)
            snprintf(alpha, sizeof alpha, "%.3f [%.3f,%.3f]", acc.alpha, acc.ci95.lo, acc.ci95.hi);
        else
            snprintf(alpha, sizeof alpha, "-");
        fmt_ratio(apd, sizeof apd, (double)r->accepted, (double)r->drafted, "%.3f");
        fmt_ratio(efp, sizeof efp, (double)r->fp, (double)r->neg, "%.3f");
        fmt_ratio(etp, sizeof etp, (double)r->tp, (double)r->pos, "%.3f");
        fprintf(out, "%-11s %-*s %5lld %8lld %9s %8s %8s %19s %8s %7s %7s %8.2f\n", r->method, wl, lab[0] ? lab : "-",
                (long long)r->runs, (long long)r->tokens, rate, sp, tpc, alpha, apd, efp, etp, r->t_audit);
    }
    if (n == 0) fprintf(out, "(no finished runs)\n");
    if (n && shape.show_models) fputs(kModelsNote, out);
    if (n)
        fprintf(out, "tok/call: tokens per target call incl. bonus (Spec-Bench's mean accepted tokens); accept: per-token "
                     "acceptance rate alpha = accepted share of the draft tokens the target checked; acc/dft: accepted / "
                     "drafted\n");
    free(labels);
    free(rows);
    return summary_not_done(db, out, err);
}

/* ------------------------------------------------------------------ Spec-Bench's task table */

/* One configuration (method, parameters, data, temperature, model contents) with its questions, every
 * seed pooled: runs of different draft or target contents (sha256) are never one configuration. */
typedef struct TaskConfig {
    char method[32], label[160], dataset[256];
    double temperature;
    char draft_sha[SP_SHA256_HEX], target_sha[SP_SHA256_HEX]; /* "" when unused */
    SbQuestion *q;
    char **categories; /* [n] owned copies (q[i].category points into them) */
    int n, cap;
    SbCell cells[SB_N_GROUPS];
} TaskConfig;

static void task_configs_free(TaskConfig *c, int n) {
    for (int i = 0; i < n; i++) {
        for (int k = 0; k < c[i].n; k++) free(c[i].categories[k]);
        free(c[i].categories);
        free(c[i].q);
    }
    free(c);
}

static int task_push(TaskConfig *c, const char *category, int64_t tokens, int64_t calls, double seconds, int turns,
                     int truncated) {
    if (c->n == c->cap) {
        int cap = c->cap ? 2 * c->cap : 64;
        SbQuestion *nq = realloc(c->q, (size_t)cap * sizeof *nq);
        if (!nq) return -1;
        c->q = nq;
        char **ncat = realloc(c->categories, (size_t)cap * sizeof *ncat);
        if (!ncat) return -1;
        c->categories = ncat;
        c->cap = cap;
    }
    if (!(c->categories[c->n] = strdup(category ? category : ""))) return -1;
    c->q[c->n] = (SbQuestion){c->categories[c->n], tokens, calls, seconds, turns, truncated};
    c->n++;
    return 0;
}

enum {
    TASK_METHOD, TASK_DATASET, TASK_TEMPERATURE, TASK_CATEGORY, TASK_TOKENS, TASK_CALLS, TASK_SECONDS, TASK_TURNS,
    TASK_TRUNCATED, TASK_DRAFT_SHA, TASK_TARGET_SHA, TASK_PARAMS
};

/* Every done run's questions (records/metrics.h: its prompt rows grouped by the first turn's
 * prompt_index, specbench_question_key), gathered per configuration in run order. */
static int task_configs(Db *db, TaskConfig **out, int *n_out, SpErr *err) {
    char params[512], sql[4096];
    db_param_columns("r.", params, sizeof params);
    snprintf(sql, sizeof sql,
             "SELECT r.method, r.dataset, r.temperature, MIN(p.category), SUM(p.tokens), SUM(p.target_calls),"
             " SUM(p.t_total), COUNT(*), SUM(p.prompt_truncated != 0), %s, %s FROM runs r JOIN prompts p ON p.run_hash = r.run_hash WHERE r.status = 'done'"
             " GROUP BY r.run_hash, p.prompt_index - COALESCE(p.turn, 0)"
             " ORDER BY MIN(r.run_index), MIN(p.prompt_index)",
             kModelKey, params);
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db->h, sql, -1, &st, NULL) != SQLITE_OK) return sql_fail(db->h, db->path, "task summary query", err);
    TaskConfig *c = NULL;
    int n = 0, cap = 0, rc = 0;
    for (int step; (step = sqlite3_step(st)) != SQLITE_DONE;) {
        if (step != SQLITE_ROW) {
            rc = sql_fail(db->h, db->path, "task summary query", err);
            break;
        }
        char label[160], dataset[256];
        db_params_label(st, TASK_PARAMS, label, sizeof label);
        snprintf(dataset, sizeof dataset, "%s", base((const char *)sqlite3_column_text(st, TASK_DATASET)));
        const char *method = (const char *)sqlite3_column_text(st, TASK_METHOD);
        double temperature = sqlite3_column_double(st, TASK_TEMPERATURE);
        const char *draft_sha = (const char *)sqlite3_column_text(st, TASK_DRAFT_SHA);
        const char *target_sha = (const char *)sqlite3_column_text(st, TASK_TARGET_SHA);
        int k = 0;
        while (k < n && (strcmp(c[k].method, method) || strcmp(c[k].label, label) || strcmp(c[k].dataset, dataset) ||
                         c[k].temperature != temperature || strcmp(c[k].draft_sha, draft_sha) ||
                         strcmp(c[k].target_sha, target_sha)))
            k++;
        if (k == n) {
            if (n == cap) {
                TaskConfig *nc = realloc(c, (size_t)(cap = cap ? 2 * cap : 16) * sizeof *nc);
                if (!nc) {
                    rc = sp_fail(err, "out of memory");
                    break;
                }
                c = nc;
            }
            memset(&c[n], 0, sizeof c[n]);
            snprintf(c[n].method, sizeof c[n].method, "%s", method);
            snprintf(c[n].label, sizeof c[n].label, "%s", label);
            snprintf(c[n].dataset, sizeof c[n].dataset, "%s", dataset);
            c[n].temperature = temperature;
            snprintf(c[n].draft_sha, sizeof c[n].draft_sha, "%s", draft_sha);
            snprintf(c[n].target_sha, sizeof c[n].target_sha, "%s", target_sha);
            n++;
        }
        if (task_push(&c[k], (const char *)sqlite3_column_text(st, TASK_CATEGORY), sqlite3_column_int64(st, TASK_TOKENS),
                      sqlite3_column_int64(st, TASK_CALLS), sqlite3_column_double(st, TASK_SECONDS),
                      sqlite3_column_int(st, TASK_TURNS), sqlite3_column_int(st, TASK_TRUNCATED))) {
            rc = sp_fail(err, "out of memory");
            break;
        }
    }
    sqlite3_finalize(st);
    for (int k = 0; k < n; k++) specbench_cells(c[k].q, c[k].n, c[k].cells);
    *out = c;
    *n_out = n;
    return rc;
}

/* The ar configuration on the same data at the same temperature with the same target content, NULL
 * when there is none. */
static const TaskConfig *task_ar_of(const TaskConfig *c, int n, const TaskConfig *x) {
    for (int k = 0; k < n; k++)
        if (!strcmp(c[k].method, decode_method_name(DM_AR)) && !strcmp(c[k].dataset, x->dataset) &&
            c[k].temperature == x->temperature && !strcmp(c[k].target_sha, x->target_sha))
            return &c[k];
    return NULL;
}

/* Whether the done runs used several draft or target contents (the task rows are split by them). */
static int task_show_models(Db *db, int *show, SpErr *err) {
    char count[32];
    if (sql_scalar_text(db->h, db->path, kModelCount, count, sizeof count, err)) return -1;
    *show = atoi(count) > 1;
    return 0;
}

/* A task row's label: "[target=... draft=...] data T=t [params]". */
static void task_label(const TaskConfig *c, int show_models, char *buf, size_t cap) {
    char models[48] = "";
    if (show_models) models_label(models, sizeof models, c->target_sha, c->draft_sha);
    snprintf(buf, cap, "%s%s%s T=%g%s%s", models, models[0] ? " " : "", c->dataset, c->temperature,
             c->label[0] ? " " : "", c->label);
}

/* "summarization 80 of 80 turns, ...; overall k of n": the groups of c with a truncated prompt. */
static void truncation_text(const TaskConfig *c, char *buf, size_t cap) {
    size_t k = 0;
    buf[0] = 0;
    for (int g = 0; g < SB_N_GROUPS && k < cap; g++) {
        const SbCell *x = &c->cells[g];
        if (x->truncated == 0 && g != SB_OVERALL) continue;
        int w = snprintf(buf + k, cap - k, "%s%s %d of %d turns", k ? (g == SB_OVERALL ? "; " : ", ") : "",
                         specbench_group_name(g), x->truncated, x->turns);
        if (w > 0) k += (size_t)w;
    }
}

int db_truncation_note(Db *db, FILE *out, SpErr *err) {
    TaskConfig *c = NULL;
    int n = 0, rc = task_configs(db, &c, &n, err);
    if (rc == 0 && n > 0 && c[0].cells[SB_OVERALL].truncated > 0) {
        char text[1024];
        truncation_text(&c[0], text, sizeof text);
        fprintf(out, "truncated prompts (longer than the context: only their last part kept, their start, e.g. an "
                     "instruction or system prompt, lost), %s %s: %s (per configuration: sprinter summary DIR --by "
                     "task --tsv)\n", c[0].method, c[0].dataset, text);
    }
    task_configs_free(c, n);
    return rc;
}

int db_summary_tasks(Db *db, FILE *out, int tsv, SpErr *err) {
    TaskConfig *c = NULL;
    int n = 0, show_models = 0;
    if (task_configs(db, &c, &n, err) || task_show_models(db, &show_models, err)) {
        task_configs_free(c, n);
        return -1;
    }
    if (tsv) {
        fprintf(out, "method\tdataset\ttemperature\tparams\ttask\tquestions\ttokens\ttarget_calls\tmean_accepted_tokens"
                     "\tmean_tokens_per_s\tar_mean_tokens_per_s\tspeedup_specbench\tturns\ttruncated_turns"
                     "\tdraft_sha256\ttarget_sha256\n");
        for (int k = 0; k < n; k++) {
            const TaskConfig *ar = task_ar_of(c, n, &c[k]);
            for (int g = 0; g < SB_N_GROUPS; g++) {
                const SbCell *x = &c[k].cells[g];
                double ar_rate = ar ? ar->cells[g].mean_rate : NAN;
                if (x->questions == 0) continue;
                fprintf(out, "%s\t%s\t%.9g\t%s\t%s\t%d\t%lld\t%lld\t%.9g\t%.9g\t%.9g\t%.9g\t%d\t%d\t%s\t%s\n",
                        c[k].method, c[k].dataset, c[k].temperature, c[k].label[0] ? c[k].label : "-",
                        specbench_group_name(g), x->questions, (long long)x->tokens, (long long)x->target_calls,
                        metric_ratio((double)x->tokens, (double)x->target_calls), x->mean_rate, ar_rate,
                        metric_ratio(x->mean_rate, ar_rate), x->turns, x->truncated,
                        c[k].draft_sha[0] ? c[k].draft_sha : "-", c[k].target_sha[0] ? c[k].target_sha : "-");
            }
        }
        task_configs_free(c, n);
        return 0;
    }
    int wl = 13; /* "data T params" */
    for (int k = 0; k < n; k++) {
        char lab[512];
        task_label(&c[k], show_models, lab, sizeof lab);
        int l = (int)strlen(lab);
        if (l > wl) wl = l;
    }
    fprintf(out, "Spec-Bench task groups: speedup over ar (mean of per-question tok/s, its evaluation/speed.py) and mean "
                 "accepted tokens (tokens per target forward, bonus included)\n");
    fprintf(out, "%-11s %-*s", "method", wl, show_models ? "models data T params" : "data T params");
    for (int g = 0; g < SB_N_GROUPS; g++) fprintf(out, " %15s", specbench_group_name(g));
    fputc('\n', out);
    if (n > 0) {
        fprintf(out, "%-11s %-*s", "questions", wl, "");
        for (int g = 0; g < SB_N_GROUPS; g++) fprintf(out, " %15d", c[0].cells[g].questions);
        fputc('\n', out);
        fprintf(out, "%-11s %-*s", "truncated", wl, "");
        for (int g = 0; g < SB_N_GROUPS; g++) {
            char t[32];
            snprintf(t, sizeof t, "%d/%d", c[0].cells[g].truncated, c[0].cells[g].turns);
            fprintf(out, " %15s", c[0].cells[g].questions ? t : "-");
        }
        fputc('\n', out);
    }
    for (int k = 0; k < n; k++) {
        const TaskConfig *ar = task_ar_of(c, n, &c[k]);
        char lab[512];
        task_label(&c[k], show_models, lab, sizeof lab);
        fprintf(out, "%-11s %-*s", c[k].method, wl, lab);
        for (int g = 0; g < SB_N_GROUPS; g++) {
            const SbCell *x = &c[k].cells[g];
            char cell[48], sp[24], mat[24];
            fmt_ratio(sp, sizeof sp, ar && x->questions ? x->mean_rate : 0, ar ? ar->cells[g].mean_rate : 0, "%.2fx");
            fmt_ratio(mat, sizeof mat, (double)x->tokens, (double)x->target_calls, "%.2f");
            snprintf(cell, sizeof cell, "%s %s", sp, mat);
            fprintf(out, " %15s", x->questions ? cell : "-");
        }
        fputc('\n', out);
    }
    if (n == 0) fprintf(out, "(no finished runs)\n");
    else
        fprintf(out, "cells: speedup, mean accepted tokens; questions: a question's turns are summed (the first "
                     "configuration's counts); truncated: turns whose prompt was longer than the context and kept only "
                     "its last part, losing its start (the first configuration's; --tsv: each one's); a category "
                     "outside Spec-Bench's 13 counts in overall only\n");
    if (n > 0 && show_models) fputs(kModelsNote, out);
    task_configs_free(c, n);
    return 0;
}

int db_summary_categories(Db *db, FILE *out, int tsv, SpErr *err) {
    TaskConfig *c = NULL;
    int n = 0, show_models = 0;
    if (task_configs(db, &c, &n, err) || task_show_models(db, &show_models, err)) {
        task_configs_free(c, n);
        return -1;
    }
    int wl = 40;
    for (int k = 0; k < n; k++) {
        char lab[512];
        task_label(&c[k], show_models, lab, sizeof lab);
        int l = (int)strlen(lab);
        if (l > wl) wl = l;
    }
    if (tsv)
        fprintf(out, "method\tdataset\ttemperature\tparams\tcategory\ttask\tquestions\ttokens\ttarget_calls"
                     "\tmean_accepted_tokens\tmean_tokens_per_s\tar_mean_tokens_per_s\tspeedup_specbench\tturns"
                     "\ttruncated_turns\tdraft_sha256\ttarget_sha256\n");
    else
        fprintf(out, "%-11s %-*s %-16s %-14s %9s %8s %8s %9s\n", "method", wl,
                show_models ? "models data T params" : "data T params", "category", "task", "questions", "speedup",
                "MAT", "truncated");
    for (int k = 0; k < n; k++) {
        const TaskConfig *ar = task_ar_of(c, n, &c[k]);
        char lab[512];
        task_label(&c[k], show_models, lab, sizeof lab);
        for (int i = 0; i < c[k].n; i++) { /* each category once, in the data's order */
            if (!specbench_category_first(c[k].q, i)) continue;
            const char *cat = c[k].categories[i];
            SbCell x = specbench_category_cell(c[k].q, c[k].n, cat);
            double ar_rate = ar ? specbench_category_cell(ar->q, ar->n, cat).mean_rate : NAN;
            int g = specbench_group_of(cat);
            double mat = metric_ratio((double)x.tokens, (double)x.target_calls), speedup = metric_ratio(x.mean_rate, ar_rate);
            if (tsv) {
                fprintf(out, "%s\t%s\t%.9g\t%s\t%s\t%s\t%d\t%lld\t%lld\t%.9g\t%.9g\t%.9g\t%.9g\t%d\t%d\t%s\t%s\n",
                        c[k].method, c[k].dataset, c[k].temperature, c[k].label[0] ? c[k].label : "-",
                        cat[0] ? cat : "-", g >= 0 ? specbench_group_name(g) : "-", x.questions, (long long)x.tokens,
                        (long long)x.target_calls, mat, x.mean_rate, ar_rate, speedup, x.turns, x.truncated,
                        c[k].draft_sha[0] ? c[k].draft_sha : "-", c[k].target_sha[0] ? c[k].target_sha : "-");
            } else {
                char sp[24], m[24];
                fmt_ratio(sp, sizeof sp, speedup, isnan(speedup) ? 0 : 1, "%.2fx"); /* "-" without ar */
                fmt_ratio(m, sizeof m, (double)x.tokens, (double)x.target_calls, "%.2f");
                char tr[32];
                snprintf(tr, sizeof tr, "%d/%d", x.truncated, x.turns);
                fprintf(out, "%-11s %-*s %-16s %-14s %9d %8s %8s %9s\n", c[k].method, wl, lab, cat[0] ? cat : "(none)",
                        g >= 0 ? specbench_group_name(g) : "-", x.questions, sp, m, tr);
            }
        }
    }
    if (!tsv && n == 0) fprintf(out, "(no finished runs)\n");
    if (!tsv && n > 0 && show_models) fputs(kModelsNote, out);
    task_configs_free(c, n);
    return 0;
}

