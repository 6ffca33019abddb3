/* runsdb.c - read-only access to runs.sqlite for the analysis (see runsdb.h). */
#include "runsdb.h"

#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "params.h"
#include "schema.h"
#include "sqlutil.h"

typedef struct Rdb {
    sqlite3 *h;
    const char *path;
} Rdb;


static double col_opt(sqlite3_stmt *st, int i) {
    return sqlite3_column_type(st, i) == SQLITE_NULL ? NAN : sqlite3_column_double(st, i);
}

static void col_str(sqlite3_stmt *st, int i, char *buf, size_t cap) {
    const unsigned char *s = sqlite3_column_text(st, i);
    snprintf(buf, cap, "%s", s ? (const char *)s : "");
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

/* One row of SELECT <every runs column> (records/schema.h: result column i is RUNS column i). */
static void read_run_row(sqlite3_stmt *st, RunInfo *r) {
    col_str(st, RUNS_run_hash, r->hash, sizeof r->hash);
    col_str(st, RUNS_method, r->method, sizeof r->method);
    r->seed = sqlite3_column_int64(st, RUNS_seed);
    col_str(st, RUNS_dataset, r->dataset, sizeof r->dataset);
    col_str(st, RUNS_dataset_sha256, r->dataset_sha256, sizeof r->dataset_sha256);
    col_str(st, RUNS_data_format, r->data_format, sizeof r->data_format);
    r->prompt_offset = sqlite3_column_int(st, RUNS_prompt_offset);
    r->n_prompts = sqlite3_column_int(st, RUNS_n_prompts);
    r->max_new = sqlite3_column_int(st, RUNS_max_new);
    r->temperature = sqlite3_column_double(st, RUNS_temperature);
    r->stop_at_eos = sqlite3_column_int(st, RUNS_stop_at_eos);
    r->audit = sqlite3_column_int(st, RUNS_audit);
    for (int i = 0; i < RUNS_N_COLS; i++)
        if (kRunsTable.cols[i].param >= 0) r->param[kRunsTable.cols[i].param] = col_opt(st, i);
    col_str(st, RUNS_token_log, r->token_log, sizeof r->token_log);
    col_str(st, RUNS_token_log_fnv1a64, r->token_log_fnv1a64, sizeof r->token_log_fnv1a64);
    col_str(st, RUNS_label_rule, r->label_rule, sizeof r->label_rule);
    col_str(st, RUNS_verifier_sha256, r->verifier_sha256, sizeof r->verifier_sha256);
    col_str(st, RUNS_spec_name, r->spec_name, sizeof r->spec_name);
    col_str(st, RUNS_draft_dir, r->draft_dir, sizeof r->draft_dir);
    col_str(st, RUNS_target_dir, r->target_dir, sizeof r->target_dir);
    /* schema 9: how the run was executed (NULL in older rows: one prompt at a time) */
    r->exec_batch = sqlite3_column_type(st, RUNS_exec_batch) == SQLITE_NULL ? 1 : sqlite3_column_int(st, RUNS_exec_batch);
    r->tokens_per_s_batched = col_opt(st, RUNS_tokens_per_s_batched);
    const char *config = (const char *)sqlite3_column_text(st, RUNS_config);
    verifier_data_of(config, r->verifier_data_sha256, sizeof r->verifier_data_sha256);
    const char *vn = config ? strstr(config, "\nverifier data_sha256=") : NULL;
    vn = vn ? strstr(vn, " n_prompts=") : NULL;
    r->verifier_n_prompts = vn ? atoi(vn + strlen(" n_prompts=")) : 0;
    r->on_verifier_prompts = r->verifier_data_sha256[0] && !strcmp(r->verifier_data_sha256, r->dataset_sha256) &&
                             r->prompt_offset < r->verifier_n_prompts;
}

static int read_run_item(sqlite3_stmt *st, void *item, void *ctx, SpErr *err) {
    (void)ctx, (void)err;
    read_run_row(st, item);
    return 0;
}

static int load_runs(const Rdb *d, RunSet *rs, SpErr *err) {
    char cols[4096], sql[4400];
    if (db_select_list(d->h, "main", &kRunsTable, "", 0, cols, sizeof cols)) return sp_fail(err, "query too long");
    snprintf(sql, sizeof sql, "SELECT %s FROM runs WHERE status = 'done' ORDER BY run_index, run_hash", cols);
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(d->h, sql, -1, &st, NULL) != SQLITE_OK) return sql_fail(d->h, d->path, "read runs", err);
    void *runs = rs->runs;
    int rc = sql_read_rows(d->h, d->path, st, "read runs", sizeof *rs->runs, &runs, &rs->n, read_run_item, NULL, err);
    rs->runs = runs;
    sqlite3_finalize(st);
    return rc;
}

/* Adds one prompts row (SELECT <every prompts column>) to the run's sums and its prompt list. */
static void add_prompt_row(sqlite3_stmt *st, RunInfo *r, PromptInfo *p) {
    p->prompt_index = sqlite3_column_int(st, PROMPTS_prompt_index);
    p->tokens = sqlite3_column_int64(st, PROMPTS_tokens);
    p->target_calls = sqlite3_column_int64(st, PROMPTS_target_calls);
    p->t_total = sqlite3_column_double(st, PROMPTS_t_total);
    p->prompt_truncated = sqlite3_column_int(st, PROMPTS_prompt_truncated) != 0;
    p->rounds = sqlite3_column_type(st, PROMPTS_rounds) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, PROMPTS_rounds);
    p->round_kept =
        sqlite3_column_type(st, PROMPTS_round_kept) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, PROMPTS_round_kept);
    r->tokens += p->tokens, r->target_calls += p->target_calls;
    r->target_tokens += sqlite3_column_int64(st, PROMPTS_target_tokens);
    r->draft_calls += sqlite3_column_int64(st, PROMPTS_draft_calls);
    r->draft_tokens += sqlite3_column_int64(st, PROMPTS_draft_tokens);
    r->verifier_evals += sqlite3_column_int64(st, PROMPTS_verifier_evals);
    r->drafted += sqlite3_column_int64(st, PROMPTS_drafted);
    r->accepted += sqlite3_column_int64(st, PROMPTS_accepted);
    r->verifier_accepts += sqlite3_column_int64(st, PROMPTS_verifier_accepts);
    if (sqlite3_column_type(st, PROMPTS_rejected) != SQLITE_NULL) {
        r->rejected += sqlite3_column_int64(st, PROMPTS_rejected);
        r->rejected_prompts++;
    }
    r->t_total += p->t_total;
    r->t_draft += sqlite3_column_double(st, PROMPTS_t_draft);
    r->t_target += sqlite3_column_double(st, PROMPTS_t_target);
    r->t_verifier += sqlite3_column_double(st, PROMPTS_t_verifier);
    r->t_audit += sqlite3_column_double(st, PROMPTS_t_audit);
    r->flops_draft += sqlite3_column_double(st, PROMPTS_flops_draft);
    r->flops_target += sqlite3_column_double(st, PROMPTS_flops_target);
    r->flops_verifier += sqlite3_column_double(st, PROMPTS_flops_verifier);
    if (sqlite3_column_type(st, PROMPTS_audited) != SQLITE_NULL) { /* the audit's confusion counts */
        r->audited_prompts++;
        r->audited += sqlite3_column_int64(st, PROMPTS_audited);
        r->audited_pos += sqlite3_column_int64(st, PROMPTS_audited_pos);
        r->audited_neg += sqlite3_column_int64(st, PROMPTS_audited_neg);
        r->tp += sqlite3_column_int64(st, PROMPTS_tp);
        r->fp += sqlite3_column_int64(st, PROMPTS_fp);
    }
}

/* records/metrics.h avg_tokens_paper: the mean over prompts with rounds > 0 of round_kept / rounds. */
static double avg_tokens_paper_of(const RunInfo *r) {
    double sum = 0;
    int n = 0;
    for (int j = 0; j < r->n_rows; j++)
        if (r->prompts[j].rounds > 0) sum += (double)r->prompts[j].round_kept / (double)r->prompts[j].rounds, n++;
    return n ? sum / n : NAN;
}

/* One prompts row into p (ctx: its run), its text columns copied. */
static int read_prompt_item(sqlite3_stmt *st, void *item, void *ctx, SpErr *err) {
    RunInfo *r = ctx;
    PromptInfo *p = item;
    add_prompt_row(st, r, p);
    p->turn = sqlite3_column_int(st, PROMPTS_turn);
    const int text_cols[] = {PROMPTS_output_text, PROMPTS_category};
    char **texts[] = {&p->output_text, &p->category};
    for (int k = 0; k < 2; k++) {
        const unsigned char *txt = sqlite3_column_text(st, text_cols[k]);
        if (txt && !(*texts[k] = strdup((const char *)txt))) return sp_fail(err, "out of memory");
    }
    return 0;
}

static int load_prompts(const Rdb *d, RunInfo *r, SpErr *err) {
    char cols[4096], sql[4400];
    if (db_select_list(d->h, "main", &kPromptsTable, "", 0, cols, sizeof cols)) return sp_fail(err, "query too long");
    snprintf(sql, sizeof sql, "SELECT %s FROM prompts WHERE run_hash = ? ORDER BY prompt_index", cols);
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(d->h, sql, -1, &st, NULL) != SQLITE_OK) return sql_fail(d->h, d->path, "read prompts", err);
    sqlite3_bind_text(st, 1, r->hash, -1, SQLITE_STATIC);
    void *prompts = r->prompts;
    int rc = sql_read_rows(d->h, d->path, st, "read prompts", sizeof *r->prompts, &prompts, &r->n_rows,
                           read_prompt_item, r, err);
    r->prompts = prompts;
    sqlite3_finalize(st);
    r->avg_tokens_paper = avg_tokens_paper_of(r);
    if (r->exec_batch > 1) { /* its prompt rows hold no timings (0): no latency, no speed from them */
        r->t_total = r->t_draft = r->t_target = r->t_verifier = r->t_audit = NAN;
        for (int j = 0; j < r->n_rows; j++) r->prompts[j].t_total = NAN;
    }
    return rc;
}

/* Joins the outputs rows (sprinter score) of run r into its prompts. */
static int load_outputs(const Rdb *d, RunInfo *r, int *any, SpErr *err) {
    enum { O_PROMPT_INDEX, O_LOGPROB, O_N_TOKENS }; /* result columns */
    const char *sql = "SELECT prompt_index, target_logprob, n_tokens FROM outputs WHERE run_hash = ?"
                      " AND target_logprob IS NOT NULL";
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(d->h, sql, -1, &st, NULL) != SQLITE_OK) return sql_fail(d->h, d->path, "read outputs", err);
    sqlite3_bind_text(st, 1, r->hash, -1, SQLITE_STATIC);
    int s;
    while ((s = sqlite3_step(st)) == SQLITE_ROW) {
        int pi = sqlite3_column_int(st, O_PROMPT_INDEX);
        for (int j = 0; j < r->n_rows; j++)
            if (r->prompts[j].prompt_index == pi) {
                r->prompts[j].scored = 1;
                r->prompts[j].target_logprob = sqlite3_column_double(st, O_LOGPROB);
                r->prompts[j].scored_tokens = sqlite3_column_int64(st, O_N_TOKENS);
                *any = 1;
            }
    }
    sqlite3_finalize(st);
    return s == SQLITE_DONE ? 0 : sql_fail(d->h, d->path, "read outputs", err);
}

static int read_timing_item(sqlite3_stmt *st, void *item, void *ctx, SpErr *err) {
    (void)ctx, (void)err;
    TimingInfo *ti = item;
    ti->rep = sqlite3_column_int(st, 0);
    ti->n_prompts = sqlite3_column_int(st, 1);
    ti->tokens = sqlite3_column_int64(st, 2);
    ti->t_total = sqlite3_column_double(st, 3);
    return 0;
}

/* The run's rows of the timings table, by rep. */
static int load_timings(const Rdb *d, RunInfo *r, SpErr *err) {
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(d->h, "SELECT rep, n_prompts, tokens, t_total FROM timings WHERE run_hash = ? ORDER BY rep", -1,
                           &st, NULL) != SQLITE_OK)
        return sql_fail(d->h, d->path, "read timings", err);
    sqlite3_bind_text(st, 1, r->hash, -1, SQLITE_STATIC);
    void *items = NULL;
    int rc = sql_read_rows(d->h, d->path, st, "read timings", sizeof *r->timings, &items, &r->n_timings,
                           read_timing_item, NULL, err);
    r->timings = items;
    sqlite3_finalize(st);
    return rc;
}

/* The analysis pools runs by method, data and parameters: runs of different model contents (draft
 * or target sha256) in one directory would share its rows, tables and FINDINGS cells, so they are
 * refused (sprinter summary splits them instead). */
static int one_model_pair(const Rdb *d, SpErr *err) {
    enum { M_N_DRAFT, M_N_TARGET, M_DRAFT_A, M_DRAFT_B, M_TARGET_A, M_TARGET_B }; /* result columns */
    const char *sql = "SELECT COUNT(DISTINCT draft_sha256), COUNT(DISTINCT target_sha256), MIN(draft_sha256),"
                      " MAX(draft_sha256), MIN(target_sha256), MAX(target_sha256) FROM runs WHERE status = 'done'";
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(d->h, sql, -1, &st, NULL) != SQLITE_OK) return sql_fail(d->h, d->path, "read runs", err);
    int rc = 0;
    if (sqlite3_step(st) != SQLITE_ROW) {
        rc = sql_fail(d->h, d->path, "read runs", err);
    } else {
        for (int k = 0; k < 2 && rc == 0; k++) {
            int n = sqlite3_column_int(st, k ? M_N_TARGET : M_N_DRAFT);
            if (n > 1)
                rc = sp_fail(err, "%s: the done runs used %d different %s model contents (sha256 %.12s..., %.12s...); "
                                  "the analysis would pool them: analyze one draft/target pair per results directory",
                             d->path, n, k ? "target" : "draft",
                             (const char *)sqlite3_column_text(st, k ? M_TARGET_A : M_DRAFT_A),
                             (const char *)sqlite3_column_text(st, k ? M_TARGET_B : M_DRAFT_B));
        }
    }
    sqlite3_finalize(st);
    return rc;
}

int runset_load(const char *db_path, RunSet *rs, SpErr *err) {
    memset(rs, 0, sizeof *rs);
    Rdb d = {NULL, db_path};
    if (!(d.h = sql_open_read(db_path, err))) return -1; /* works on read-only media */
    sqlite3_busy_timeout(d.h, 60000);
    int rc = 0;
    if (!sql_has_table(d.h, "main", "runs") || !sql_has_table(d.h, "main", "prompts")) {
        rc = sp_fail(err, "%s: not a sprinter results database (no meta/runs/prompts tables)", db_path);
    } else if ((rs->schema_version = db_schema_version(d.h, db_path, err)) < 0) {
        rc = -1;
    } else if (rs->schema_version < DB_SCHEMA_MIN || rs->schema_version > DB_SCHEMA_VERSION) {
        rc = sp_fail(err, "%s: meta.schema_version is %d, the analysis reads versions %d to %d", db_path,
                     rs->schema_version, DB_SCHEMA_MIN, DB_SCHEMA_VERSION);
    }
    if (rc == 0) rc = one_model_pair(&d, err);
    if (rc == 0) rc = load_runs(&d, rs, err);
    int outputs = sql_has_table(d.h, "main", "outputs"), timings = sql_has_table(d.h, "main", "timings");
    for (int i = 0; rc == 0 && i < rs->n; i++) {
        rc = load_prompts(&d, &rs->runs[i], err);
        if (rc == 0 && outputs) rc = load_outputs(&d, &rs->runs[i], &rs->has_outputs, err);
        if (rc == 0 && timings) rc = load_timings(&d, &rs->runs[i], err);
    }
    sqlite3_close(d.h);
    if (rc) runset_free(rs);
    return rc;
}

void runset_free(RunSet *rs) {
    for (int i = 0; i < rs->n; i++) {
        for (int j = 0; j < rs->runs[i].n_rows; j++) {
            const PromptInfo *p = &rs->runs[i].prompts[j];
            free(p->output_text), free(p->category);
        }
        free(rs->runs[i].prompts);
        free(rs->runs[i].timings);
    }
    free(rs->runs);
    memset(rs, 0, sizeof *rs);
}

void run_params_text(const RunInfo *r, char *buf, int cap) {
    run_params_format(r->param, buf, cap);
}
