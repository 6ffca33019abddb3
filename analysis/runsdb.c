/* runsdb.c - read-only access to runs.sqlite for the analysis (see runsdb.h). */
#include "runsdb.h"

#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct Rdb {
    sqlite3 *h;
    const char *path;
} Rdb;

static int fail_sql(const Rdb *d, SpErr *err, const char *what) {
    return sp_fail(err, "%s: %s: %s", d->path, what, sqlite3_errmsg(d->h));
}

static double col_opt(sqlite3_stmt *st, int i) {
    return sqlite3_column_type(st, i) == SQLITE_NULL ? NAN : sqlite3_column_double(st, i);
}

static void col_str(sqlite3_stmt *st, int i, char *buf, size_t cap) {
    const unsigned char *s = sqlite3_column_text(st, i);
    snprintf(buf, cap, "%s", s ? (const char *)s : "");
}

static int has_table(const Rdb *d, const char *name) {
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(d->h, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", -1, &st, NULL))
        return 0;
    sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
    int found = sqlite3_step(st) == SQLITE_ROW;
    sqlite3_finalize(st);
    return found;
}

static int has_column(const Rdb *d, const char *table, const char *col) {
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(d->h, "SELECT 1 FROM pragma_table_info(?) WHERE name = ?", -1, &st, NULL)) return 0;
    sqlite3_bind_text(st, 1, table, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, col, -1, SQLITE_STATIC);
    int found = sqlite3_step(st) == SQLITE_ROW;
    sqlite3_finalize(st);
    return found;
}

/* "verifier data_sha256=HEX ..." line of the canonical configuration text. */
static void verifier_data_of(const char *config, char *out, size_t cap) {
    out[0] = '\0';
    const char *k = config ? strstr(config, "\nverifier data_sha256=") : NULL;
    if (!k) return;
    k += strlen("\nverifier data_sha256=");
    size_t n = strcspn(k, " \n");
    snprintf(out, cap, "%.*s", (int)(n < cap - 1 ? n : cap - 1), k);
}

static void read_run_row(sqlite3_stmt *st, RunInfo *r) {
    int i = 0;
    col_str(st, i++, r->hash, sizeof r->hash);
    col_str(st, i++, r->method, sizeof r->method);
    r->seed = sqlite3_column_int64(st, i++);
    col_str(st, i++, r->dataset, sizeof r->dataset);
    col_str(st, i++, r->dataset_sha256, sizeof r->dataset_sha256);
    col_str(st, i++, r->data_format, sizeof r->data_format);
    r->prompt_offset = sqlite3_column_int(st, i++);
    r->n_prompts = sqlite3_column_int(st, i++);
    r->max_new = sqlite3_column_int(st, i++);
    r->temperature = sqlite3_column_double(st, i++);
    r->stop_at_eos = sqlite3_column_int(st, i++);
    r->audit = sqlite3_column_int(st, i++);
    double *params[] = {&r->gamma, &r->tau, &r->lambda, &r->max_run, &r->alpha, &r->p_min, &r->eta_fp, &r->eta_tp,
                        &r->oracle_stay};
    for (size_t j = 0; j < sizeof params / sizeof *params; j++) *params[j] = col_opt(st, i++);
    col_str(st, i++, r->token_log, sizeof r->token_log);
    verifier_data_of((const char *)sqlite3_column_text(st, i++), r->verifier_data_sha256, sizeof r->verifier_data_sha256);
}

static int load_runs(const Rdb *d, RunSet *rs, SpErr *err) {
    char sql[1024];
    snprintf(sql, sizeof sql,
             "SELECT run_hash, method, seed, dataset, dataset_sha256, data_format, prompt_offset, n_prompts, max_new,"
             " temperature, stop_at_eos, audit, gamma, tau, lambda, max_run, alpha, p_min, eta_fp, eta_tp, %s,"
             " token_log, config FROM runs WHERE status = 'done' ORDER BY run_index, run_hash",
             has_column(d, "runs", "oracle_stay") ? "oracle_stay" : "NULL");
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(d->h, sql, -1, &st, NULL) != SQLITE_OK) return fail_sql(d, err, "read runs");
    int cap = 0, rc = 0;
    for (int s; (s = sqlite3_step(st)) != SQLITE_DONE;) {
        if (s != SQLITE_ROW) {
            rc = fail_sql(d, err, "read runs");
            break;
        }
        if (rs->n == cap) {
            RunInfo *nr = realloc(rs->runs, (size_t)(cap = cap ? 2 * cap : 16) * sizeof *nr);
            if (!nr) {
                rc = sp_fail(err, "out of memory");
                break;
            }
            rs->runs = nr;
        }
        RunInfo *r = &rs->runs[rs->n++];
        memset(r, 0, sizeof *r);
        read_run_row(st, r);
    }
    sqlite3_finalize(st);
    return rc;
}

static int load_prompts(const Rdb *d, RunInfo *r, SpErr *err) {
    const char *sql = "SELECT prompt_index, tokens, target_calls, target_tokens, draft_calls, draft_tokens,"
                      " verifier_evals, drafted, accepted, t_total, t_draft, t_target, t_verifier, t_audit,"
                      " flops_draft, flops_target, flops_verifier, output_text FROM prompts WHERE run_hash = ?"
                      " ORDER BY prompt_index";
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(d->h, sql, -1, &st, NULL) != SQLITE_OK) return fail_sql(d, err, "read prompts");
    sqlite3_bind_text(st, 1, r->hash, -1, SQLITE_STATIC);
    int cap = 0, rc = 0;
    for (int s; (s = sqlite3_step(st)) != SQLITE_DONE;) {
        if (s != SQLITE_ROW) {
            rc = fail_sql(d, err, "read prompts");
            break;
        }
        if (r->n_rows == cap) {
            PromptInfo *np = realloc(r->prompts, (size_t)(cap = cap ? 2 * cap : 16) * sizeof *np);
            if (!np) {
                rc = sp_fail(err, "out of memory");
                break;
            }
            r->prompts = np;
        }
        PromptInfo *p = &r->prompts[r->n_rows++];
        memset(p, 0, sizeof *p);
        p->prompt_index = sqlite3_column_int(st, 0);
        int64_t c[8];
        for (int j = 0; j < 8; j++) c[j] = sqlite3_column_int64(st, 1 + j);
        p->tokens = c[0], p->target_calls = c[1];
        r->tokens += c[0], r->target_calls += c[1], r->target_tokens += c[2], r->draft_calls += c[3];
        r->draft_tokens += c[4], r->verifier_evals += c[5], r->drafted += c[6], r->accepted += c[7];
        double t[8];
        for (int j = 0; j < 8; j++) t[j] = sqlite3_column_double(st, 9 + j);
        p->t_total = t[0];
        r->t_total += t[0], r->t_draft += t[1], r->t_target += t[2], r->t_verifier += t[3], r->t_audit += t[4];
        r->flops_draft += t[5], r->flops_target += t[6], r->flops_verifier += t[7];
        const unsigned char *txt = sqlite3_column_text(st, 17);
        if (txt && !(p->output_text = strdup((const char *)txt))) {
            rc = sp_fail(err, "out of memory");
            break;
        }
    }
    sqlite3_finalize(st);
    return rc;
}

/* Joins the outputs rows (sprinter score) of run r into its prompts. */
static int load_outputs(const Rdb *d, RunInfo *r, int *any, SpErr *err) {
    const char *sql = "SELECT prompt_index, target_logprob, n_tokens FROM outputs WHERE run_hash = ?"
                      " AND target_logprob IS NOT NULL";
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(d->h, sql, -1, &st, NULL) != SQLITE_OK) return fail_sql(d, err, "read outputs");
    sqlite3_bind_text(st, 1, r->hash, -1, SQLITE_STATIC);
    int s;
    while ((s = sqlite3_step(st)) == SQLITE_ROW) {
        int pi = sqlite3_column_int(st, 0);
        for (int j = 0; j < r->n_rows; j++)
            if (r->prompts[j].prompt_index == pi) {
                r->prompts[j].scored = 1;
                r->prompts[j].target_logprob = sqlite3_column_double(st, 1);
                r->prompts[j].scored_tokens = sqlite3_column_int64(st, 2);
                *any = 1;
            }
    }
    sqlite3_finalize(st);
    return s == SQLITE_DONE ? 0 : fail_sql(d, err, "read outputs");
}

int runset_load(const char *db_path, RunSet *rs, SpErr *err) {
    memset(rs, 0, sizeof *rs);
    Rdb d = {NULL, db_path};
    if (sqlite3_open_v2(db_path, &d.h, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
        sp_fail(err, "%s: cannot open database: %s", db_path, d.h ? sqlite3_errmsg(d.h) : "out of memory");
        sqlite3_close(d.h);
        return -1;
    }
    sqlite3_busy_timeout(d.h, 60000);
    int rc = 0;
    sqlite3_stmt *st;
    if (!has_table(&d, "runs") || !has_table(&d, "prompts") ||
        sqlite3_prepare_v2(d.h, "SELECT value FROM meta WHERE key = 'schema_version'", -1, &st, NULL) != SQLITE_OK) {
        rc = sp_fail(err, "%s: not a sprinter results database (no meta/runs/prompts tables)", db_path);
    } else {
        if (sqlite3_step(st) == SQLITE_ROW) rs->schema_version = sqlite3_column_int(st, 0);
        sqlite3_finalize(st);
        if (rs->schema_version < 1 || rs->schema_version > 4) /* 4: runs.status may be 'failed' (not read) */
            rc = sp_fail(err, "%s: meta.schema_version is %d, the analysis reads versions 1 to 4", db_path,
                         rs->schema_version);
    }
    if (rc == 0) rc = load_runs(&d, rs, err);
    int outputs = has_table(&d, "outputs");
    for (int i = 0; rc == 0 && i < rs->n; i++) {
        rc = load_prompts(&d, &rs->runs[i], err);
        if (rc == 0 && outputs) rc = load_outputs(&d, &rs->runs[i], &rs->has_outputs, err);
    }
    sqlite3_close(d.h);
    if (rc) runset_free(rs);
    return rc;
}

void runset_free(RunSet *rs) {
    for (int i = 0; i < rs->n; i++) {
        for (int j = 0; j < rs->runs[i].n_rows; j++) free(rs->runs[i].prompts[j].output_text);
        free(rs->runs[i].prompts);
    }
    free(rs->runs);
    memset(rs, 0, sizeof *rs);
}

void run_label(const RunInfo *r, char *buf, int cap) {
    const char *names[] = {"lambda", "tau", "gamma", "max_run", "alpha", "p_min", "eta_fp", "eta_tp", "stay"};
    const double vals[] = {r->lambda, r->tau, r->gamma, r->max_run, r->alpha, r->p_min, r->eta_fp, r->eta_tp,
                           r->oracle_stay};
    int k = 0;
    buf[0] = '\0';
    for (int j = 0; j < 9 && k < cap; j++) {
        if (isnan(vals[j])) continue;
        int w = snprintf(buf + k, (size_t)(cap - k), "%s%s=%g", k ? " " : "", names[j], vals[j]);
        if (w > 0) k += w;
    }
}
