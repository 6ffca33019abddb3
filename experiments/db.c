/* db.c - the SQLite results database (see db.h; tables and upgrades: records/schema.h). */
#include "db.h"

#include <limits.h>
#include <math.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#include "metrics.h"
#include "schema.h"
#include "sqlutil.h"

#include "db_int.h"

/* "PATH: WHAT: MESSAGE (CODE[, errno N: TEXT])" from the connection's last error. */

/* Runs sql; on error "PATH: [WHAT: ]MESSAGE (CODE...)" (a short statement names itself). */
static int exec(Db *db, const char *sql, SpErr *err) { return sql_exec(db->h, db->path, sql, NULL, err); }

static int scalar_text(Db *db, const char *sql, char *buf, size_t cap, SpErr *err) {
    return sql_scalar_text(db->h, db->path, sql, buf, cap, err);
}

Db *db_open(const char *path, SpErr *err) {
    Db *db = calloc(1, sizeof *db);
    if (!db) {
        sp_fail(err, "out of memory");
        return NULL;
    }
    snprintf(db->path, sizeof db->path, "%s", path);
    if (sql_check_output(path, err)) { /* SQLite writes these files itself: same rule as any output */
        free(db);
        return NULL;
    }
    int orc = sqlite3_open_v2(path, &db->h, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL);
    if (orc != SQLITE_OK) {
        char detail[160];
        sql_detail(db->h, detail, sizeof detail);
        sp_fail(err, "%s: cannot open database: %s%s", path, db->h ? sqlite3_errmsg(db->h) : sqlite3_errstr(orc), detail);
        db_close(db);
        return NULL;
    }
    sqlite3_busy_timeout(db->h, 120000);
    /* WAL survives in the file; synchronous NORMAL is durable at each checkpoint under WAL. The
     * schema is created or upgraded in one transaction: a failed upgrade leaves the file as it was. */
    if (sql_exec(db->h, path, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;", "set WAL mode", err) ||
        exec(db, "BEGIN IMMEDIATE", err)) {
        db_close(db);
        return NULL;
    }
    if (db_schema_prepare(db->h, path, err) || exec(db, "COMMIT", err)) {
        exec(db, "ROLLBACK", NULL);
        db_close(db);
        return NULL;
    }
    return db;
}

Db *db_open_read(const char *path, int *older, SpErr *err) {
    *older = 0;
    Db *db = calloc(1, sizeof *db);
    if (!db) {
        sp_fail(err, "out of memory");
        return NULL;
    }
    snprintf(db->path, sizeof db->path, "%s", path);
    if (!(db->h = sql_open_read(path, err))) {
        db_close(db);
        return NULL;
    }
    sqlite3_busy_timeout(db->h, 120000);
    int version = db_schema_version(db->h, path, err);
    if (version == 0) sp_fail(err, "%s: not a sprinter results database (no meta table)", path);
    else if (version > 0 && version < DB_SCHEMA_VERSION) *older = 1;
    else if (version > DB_SCHEMA_VERSION)
        sp_fail(err, "%s: meta.schema_version is %d, this sprinter reads versions %d to %d (written by a newer sprinter)",
                path, version, DB_SCHEMA_MIN, DB_SCHEMA_VERSION);
    if (version != DB_SCHEMA_VERSION) {
        db_close(db);
        if (*older) sql_forget_inputs(path); /* the caller's db_open upgrades this very file */
        return NULL;
    }
    return db;
}

struct sqlite3 *db_sqlite(Db *db) { return db->h; }

void db_close(Db *db) {
    if (!db) return;
    if (db->h) sqlite3_close(db->h);
    free(db);
}

void db_now_iso(char *buf, size_t cap) {
    struct timeval tv;
    gettimeofday(&tv, NULL);
    struct tm tm;
    gmtime_r(&tv.tv_sec, &tm);
    char b[32];
    strftime(b, sizeof b, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(buf, cap, "%s.%03dZ", b, (int)(tv.tv_usec / 1000));
}

/* ------------------------------------------------------------------ runs */

int db_run_status(Db *db, const char *run_hash, char *failure, size_t cap, SpErr *err) {
    sqlite3_stmt *st;
    if (failure && cap) failure[0] = '\0';
    enum { Q_STATUS, Q_FAILURE }; /* result columns */
    if (sqlite3_prepare_v2(db->h, "SELECT status, failure FROM runs WHERE run_hash = ?", -1, &st, NULL) != SQLITE_OK)
        return sql_fail(db->h, db->path, "query runs", err);
    sqlite3_bind_text(st, 1, run_hash, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st), status = DB_RUN_NONE;
    if (rc == SQLITE_ROW) {
        const char *t = (const char *)sqlite3_column_text(st, Q_STATUS);
        status = !t ? DB_RUN_RUNNING : !strcmp(t, "done") ? DB_RUN_DONE : !strcmp(t, "failed") ? DB_RUN_FAILED : DB_RUN_RUNNING;
        if (status == DB_RUN_FAILED && failure && cap && sqlite3_column_text(st, Q_FAILURE))
            snprintf(failure, cap, "%s", (const char *)sqlite3_column_text(st, Q_FAILURE));
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) return sql_fail(db->h, db->path, "query runs", err);
    return status;
}

int64_t db_run_tokens_first(Db *db, const char *run_hash, int below_index, SpErr *err) {
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db->h, "SELECT COALESCE(SUM(tokens), 0) FROM prompts WHERE run_hash = ? AND prompt_index < ?",
                           -1, &st, NULL) != SQLITE_OK)
        return sql_fail(db->h, db->path, "query prompts", err);
    sqlite3_bind_text(st, 1, run_hash, -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 2, below_index);
    int64_t n = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int64(st, 0) : -1;
    sqlite3_finalize(st);
    return n < 0 ? sql_fail(db->h, db->path, "query prompts", err) : n;
}

int64_t db_run_tokens(Db *db, const char *run_hash, SpErr *err) { return db_run_tokens_first(db, run_hash, INT_MAX, err); }

static int exec_hash(Db *db, const char *sql, const char *hash, SpErr *err) {
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db->h, sql, -1, &st, NULL) != SQLITE_OK) return sql_fail(db->h, db->path, "prepare", err);
    sqlite3_bind_text(st, 1, hash, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : sql_fail(db->h, db->path, "delete", err);
}

static int delete_run(Db *db, const char *hash, SpErr *err) {
    return exec_hash(db, "DELETE FROM timings WHERE run_hash = ?", hash, err) ||
                   exec_hash(db, "DELETE FROM outputs WHERE run_hash = ?", hash, err) ||
                   exec_hash(db, "DELETE FROM prompts WHERE run_hash = ?", hash, err) ||
                   exec_hash(db, "DELETE FROM runs WHERE run_hash = ?", hash, err)
               ? -1
               : 0;
}

int db_run_reset(Db *db, const char *run_hash, SpErr *err) {
    if (exec(db, "BEGIN IMMEDIATE", err)) return -1;
    if (delete_run(db, run_hash, err)) {
        exec(db, "ROLLBACK", NULL);
        return -1;
    }
    return exec(db, "COMMIT", err);
}



/* "INSERT INTO table(columns) VALUES(?,...)" over the table's current columns: placeholder
 * 1 + TABLE_column binds that column. */
static int insert_sql(const DbTable *t, char *sql, size_t cap) {
    char cols[4096];
    if (db_column_list(t, cols, sizeof cols)) return -1;
    size_t k = (size_t)snprintf(sql, cap, "INSERT INTO %s(%s) VALUES(", t->name, cols);
    const char *sep = "";
    for (int i = 0; i < t->n_cols && k < cap; i++)
        if (db_col_in(&t->cols[i], DB_SCHEMA_VERSION)) {
            k += (size_t)snprintf(sql + k, cap - k, "%s?%d", sep, i + 1);
            sep = ",";
        }
    if (k + 2 >= cap) return -1;
    snprintf(sql + k, cap - k, ")");
    return 0;
}

static void bind_opt_text(sqlite3_stmt *st, int i, const char *s) {
    if (s && s[0]) sqlite3_bind_text(st, i, s, -1, SQLITE_TRANSIENT);
    else sqlite3_bind_null(st, i);
}

/* Binds the grid parameter columns of the runs row: NULL where the method does not use one. */
static void bind_run_params(sqlite3_stmt *st, const RunConfig *r) {
    for (int i = 0; i < RUNS_N_COLS; i++) {
        const DbColumn *c = &kRunsTable.cols[i];
        if (c->param < 0 || !db_col_in(c, DB_SCHEMA_VERSION)) continue;
        RunParam p = (RunParam)c->param;
        if (!(r->applies & (1u << p))) sqlite3_bind_null(st, 1 + i);
        else if (run_param_info(p)->integer) sqlite3_bind_int64(st, 1 + i, (sqlite3_int64)run_param_value(&r->dc, p));
        else sqlite3_bind_double(st, 1 + i, run_param_value(&r->dc, p));
    }
}

static int insert_run(Db *db, const SweepSpec *s, const RunConfig *r, const RunMeta *m, SpErr *err) {
    char sql[4096];
    sqlite3_stmt *st;
    if (insert_sql(&kRunsTable, sql, sizeof sql) || sqlite3_prepare_v2(db->h, sql, -1, &st, NULL) != SQLITE_OK)
        return sql_fail(db->h, db->path, "prepare insert into runs", err);
    const DecodeConfig *c = &r->dc;
    int uses_draft = method_is(c->method, MC_USES_DRAFT), uses_target = method_is(c->method, MC_USES_TARGET);
#define AT(col) (1 + RUNS_##col)
    sqlite3_bind_text(st, AT(run_hash), r->hash, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, AT(prompt_template), prompt_template_name(s->prompt_template), -1, SQLITE_STATIC);
    bind_opt_text(st, AT(label_rule), method_is(c->method, MC_SEQUENTIAL) ? protocol_name(c->label_rule) : NULL);
    sqlite3_bind_int(st, AT(run_index), r->index);
    sqlite3_bind_text(st, AT(status), "running", -1, SQLITE_STATIC);
    sqlite3_bind_text(st, AT(method), decode_method_name(c->method), -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, AT(seed), (sqlite3_int64)r->seed);
    sqlite3_bind_text(st, AT(dataset), s->datasets[r->dataset], -1, SQLITE_STATIC);
    sqlite3_bind_text(st, AT(dataset_sha256), s->data_sha256[r->dataset], -1, SQLITE_STATIC);
    sqlite3_bind_text(st, AT(data_format), s->data_format[0] ? s->data_format : "auto", -1, SQLITE_STATIC);
    sqlite3_bind_int(st, AT(prompt_offset), s->prompt_offset);
    sqlite3_bind_int(st, AT(n_prompts), s->n_prompts);
    sqlite3_bind_int(st, AT(max_new), c->max_new);
    sqlite3_bind_double(st, AT(temperature), c->sampling.temperature);
    sqlite3_bind_int(st, AT(top_k), c->sampling.top_k);
    sqlite3_bind_double(st, AT(top_p), c->sampling.top_p);
    sqlite3_bind_int(st, AT(stop_at_eos), c->stop_at_eos);
    sqlite3_bind_int(st, AT(audit), c->audit);
    bind_run_params(st, r);
    bind_opt_text(st, AT(draft_dir), uses_draft ? s->draft_dir : NULL);
    bind_opt_text(st, AT(draft_sha256), uses_draft ? s->draft_sha256 : NULL);
    bind_opt_text(st, AT(target_dir), uses_target ? s->target_dir : NULL);
    bind_opt_text(st, AT(target_sha256), uses_target ? s->target_sha256 : NULL);
    bind_opt_text(st, AT(verifier_path), m->verifier_path);
    bind_opt_text(st, AT(verifier_sha256), m->verifier_sha256);
    sqlite3_bind_text(st, AT(config), r->canon, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, AT(spec_name), s->name, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, AT(spec_path), s->path, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, AT(spec_sha256), s->sha256, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, AT(git_commit), m->git_commit ? m->git_commit : "unknown", -1, SQLITE_STATIC);
    bind_opt_text(st, AT(host), m->host);
    sqlite3_bind_text(st, AT(token_log), m->token_log, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, AT(started_at), m->started_at, -1, SQLITE_STATIC);
    /* finished_at and failure: NULL while running */
#undef AT
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : sql_fail(db->h, db->path, "insert into runs", err);
}

int db_run_begin(Db *db, const SweepSpec *s, const RunConfig *r, const RunMeta *m, SpErr *err) {
    if (exec(db, "BEGIN IMMEDIATE", err)) return -1;
    if (delete_run(db, r->hash, err) || insert_run(db, s, r, m, err)) {
        exec(db, "ROLLBACK", NULL);
        return -1;
    }
    return exec(db, "COMMIT", err);
}

static void bind_ratio(sqlite3_stmt *st, int i, double num, double den) {
    if (den > 0) sqlite3_bind_double(st, i, num / den);
    else sqlite3_bind_null(st, i);
}

static int insert_prompt(Db *db, sqlite3_stmt *st, const char *hash, const PromptRow *p, SpErr *err) {
    const DecodeStats *s = &p->st;
    char seed[24];
    snprintf(seed, sizeof seed, "%llu", (unsigned long long)p->rng_seed);
    sqlite3_reset(st);
    sqlite3_clear_bindings(st); /* unbound columns are NULL */
#define AT(col) (1 + PROMPTS_##col)
    sqlite3_bind_text(st, AT(run_hash), hash, -1, SQLITE_STATIC);
    sqlite3_bind_int(st, AT(prompt_index), p->prompt_index);
    bind_opt_text(st, AT(example_id), p->example_id);
    bind_opt_text(st, AT(category), p->category && p->category[0] ? p->category : NULL);
    sqlite3_bind_int(st, AT(turn), p->turn);
    sqlite3_bind_int(st, AT(n_prompt_tokens), p->n_prompt_tokens);
    sqlite3_bind_int(st, AT(prompt_truncated), p->truncated);
    sqlite3_bind_text(st, AT(rng_seed), seed, -1, SQLITE_TRANSIENT);
    const struct {
        int col;
        int64_t v;
    } counts[] = {{AT(tokens), s->tokens},
                  {AT(target_calls), s->target_forwards},
                  {AT(target_tokens), s->target_tokens},
                  {AT(draft_calls), s->draft_forwards},
                  {AT(draft_tokens), s->draft_tokens},
                  {AT(audit_calls), s->audit_forwards},
                  {AT(audit_tokens), s->audit_tokens},
                  {AT(verifier_evals), s->verifier_evals},
                  {AT(drafted), s->drafted},
                  {AT(accepted), s->accepted},
                  {AT(rejected), s->rejected},
                  {AT(rounds), s->rounds},
                  {AT(round_kept), s->round_kept},
                  {AT(verifier_accepts), p->verifier_accepts},
                  {AT(longest_run), p->longest_run}};
    for (size_t j = 0; j < sizeof counts / sizeof *counts; j++) sqlite3_bind_int64(st, counts[j].col, counts[j].v);
    bind_ratio(st, AT(mean_accepted_run), (double)s->accepted, (double)s->target_forwards);
    if (p->audited) { /* else the audit columns stay NULL */
        sqlite3_bind_int64(st, AT(audited), p->n_audited);
        sqlite3_bind_int64(st, AT(audited_pos), p->pos);
        sqlite3_bind_int64(st, AT(audited_neg), p->neg);
        sqlite3_bind_int64(st, AT(tp), p->tp);
        sqlite3_bind_int64(st, AT(fp), p->fp);
        bind_ratio(st, AT(eta_fp), (double)p->fp, (double)p->neg);
        bind_ratio(st, AT(eta_tp), (double)p->tp, (double)p->pos);
    }
    const struct {
        int col;
        double v;
    } reals[] = {{AT(t_total), s->t_total},         {AT(t_draft), s->t_draft},           {AT(t_target), s->t_target},
                 {AT(t_verifier), s->t_verifier},   {AT(t_audit), s->t_audit},           {AT(flops_draft), s->flops_draft},
                 {AT(flops_target), s->flops_target}, {AT(flops_verifier), s->flops_verifier}};
    for (size_t j = 0; j < sizeof reals / sizeof *reals; j++) sqlite3_bind_double(st, reals[j].col, reals[j].v);
    bind_opt_text(st, AT(output_text), p->output_text);
#undef AT
    return sqlite3_step(st) == SQLITE_DONE ? 0 : sql_fail(db->h, db->path, "insert into prompts", err);
}

int db_run_finish(Db *db, const char *run_hash, const PromptRow *rows, int n, const RunThroughput *tp,
                  const char *finished_at, const char *token_log_fnv1a64, SpErr *err) {
    char sql[4096];
    sqlite3_stmt *st = NULL, *up = NULL;
    if (exec(db, "BEGIN IMMEDIATE", err)) return -1;
    int rc = 0;
    if (insert_sql(&kPromptsTable, sql, sizeof sql) || sqlite3_prepare_v2(db->h, sql, -1, &st, NULL) != SQLITE_OK)
        rc = sql_fail(db->h, db->path, "prepare insert into prompts", err);
    for (int i = 0; rc == 0 && i < n; i++) rc = insert_prompt(db, st, run_hash, &rows[i], err);
    if (rc == 0) {
        if (sqlite3_prepare_v2(db->h,
                               "UPDATE runs SET status = 'done', finished_at = ?, exec_batch = ?, tokens_per_s_batched = ?, "
                               "token_log_fnv1a64 = ? WHERE run_hash = ?",
                               -1, &up, NULL) != SQLITE_OK) {
            rc = sql_fail(db->h, db->path, "prepare update of runs", err);
        } else {
            sqlite3_bind_text(up, 1, finished_at, -1, SQLITE_STATIC);
            sqlite3_bind_int(up, 2, tp ? tp->batch : 1);
            if (tp && tp->seconds > 0) sqlite3_bind_double(up, 3, (double)tp->tokens / tp->seconds);
            else sqlite3_bind_null(up, 3);
            sqlite3_bind_text(up, 4, token_log_fnv1a64, -1, SQLITE_STATIC);
            sqlite3_bind_text(up, 5, run_hash, -1, SQLITE_STATIC);
            if (sqlite3_step(up) != SQLITE_DONE) rc = sql_fail(db->h, db->path, "mark run done", err);
            else if (sqlite3_changes(db->h) != 1) rc = sp_fail(err, "%s: run %.16s has no row to mark done", db->path, run_hash);
        }
    }
    sqlite3_finalize(st);
    sqlite3_finalize(up);
    if (rc) {
        exec(db, "ROLLBACK", NULL);
        return -1;
    }
    return exec(db, "COMMIT", err);
}

int db_run_fail(Db *db, const char *run_hash, const char *reason, const char *finished_at, SpErr *err) {
    sqlite3_stmt *up = NULL;
    if (exec(db, "BEGIN IMMEDIATE", err)) return -1;
    /* a failed run keeps no per-prompt results: the prompts it did finish are not a sample of the run */
    int rc = exec_hash(db, "DELETE FROM outputs WHERE run_hash = ?", run_hash, err) ||
                     exec_hash(db, "DELETE FROM prompts WHERE run_hash = ?", run_hash, err)
                 ? -1
                 : 0;
    if (rc == 0 && sqlite3_prepare_v2(db->h, "UPDATE runs SET status = 'failed', failure = ?, finished_at = ? "
                                               "WHERE run_hash = ? AND status = 'running'",
                                      -1, &up, NULL) != SQLITE_OK)
        rc = sql_fail(db->h, db->path, "prepare update of runs", err);
    if (rc == 0) {
        sqlite3_bind_text(up, 1, reason && reason[0] ? reason : "unknown", -1, SQLITE_STATIC);
        sqlite3_bind_text(up, 2, finished_at, -1, SQLITE_STATIC);
        sqlite3_bind_text(up, 3, run_hash, -1, SQLITE_STATIC);
        if (sqlite3_step(up) != SQLITE_DONE) rc = sql_fail(db->h, db->path, "mark run failed", err);
        else if (sqlite3_changes(db->h) != 1)
            rc = sp_fail(err, "%s: run %.16s has no running row to mark failed", db->path, run_hash);
    }
    sqlite3_finalize(up);
    if (rc) {
        exec(db, "ROLLBACK", NULL);
        return -1;
    }
    return exec(db, "COMMIT", err);
}

int db_progress(Db *db, int64_t *runs_done, int64_t *runs_failed, int64_t *tokens, SpErr *err) {
    sqlite3_stmt *st;
    enum { Q_DONE, Q_FAILED, Q_TOKENS }; /* result columns */
    const char *sql = "SELECT (SELECT COUNT(*) FROM runs WHERE status='done'), "
                      "(SELECT COUNT(*) FROM runs WHERE status='failed'), "
                      "(SELECT COALESCE(SUM(p.tokens),0) FROM prompts p JOIN runs r ON r.run_hash = p.run_hash "
                      "WHERE r.status='done')";
    if (sqlite3_prepare_v2(db->h, sql, -1, &st, NULL) != SQLITE_OK) return sql_fail(db->h, db->path, "query progress", err);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        *runs_done = sqlite3_column_int64(st, Q_DONE);
        if (runs_failed) *runs_failed = sqlite3_column_int64(st, Q_FAILED);
        *tokens = sqlite3_column_int64(st, Q_TOKENS);
    }
    sqlite3_finalize(st);
    return rc == SQLITE_ROW ? 0 : sql_fail(db->h, db->path, "query progress", err);
}

/* ------------------------------------------------------------------ the grid */

/* INSERT OR REPLACE (value non-NULL) or DELETE (NULL) of a meta key. */
static int meta_put(Db *db, const char *key, const char *value, SpErr *err) {
    sqlite3_stmt *st;
    const char *sql = value ? "INSERT OR REPLACE INTO meta(key, value) VALUES(?, ?)" : "DELETE FROM meta WHERE key = ?";
    if (sqlite3_prepare_v2(db->h, sql, -1, &st, NULL) != SQLITE_OK) return sql_fail(db->h, db->path, "write meta", err);
    sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
    if (value) sqlite3_bind_text(st, 2, value, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st) == SQLITE_DONE ? 0 : sql_fail(db->h, db->path, "write meta", err);
    sqlite3_finalize(st);
    return rc;
}

int db_set_grid(Db *db, const RunConfig *runs, int n, int shard_i, int shard_n, SpErr *err) {
    char *grid = malloc((size_t)(n > 0 ? n : 1) * SP_SHA256_HEX);
    if (!grid) return sp_fail(err, "out of memory");
    char *w = grid;
    *w = '\0';
    for (int i = 0; i < n; i++) w += sprintf(w, "%s%s", i ? "," : "", runs[i].hash);
    char shard[32];
    snprintf(shard, sizeof shard, "%d/%d", shard_i, shard_n);
    int rc = exec(db, "BEGIN IMMEDIATE", err);
    if (rc == 0) rc = meta_put(db, "grid", grid, err);
    if (rc == 0) rc = meta_put(db, "shard", shard, err);
    if (rc == 0) rc = exec(db, "COMMIT", err);
    else exec(db, "ROLLBACK", NULL);
    free(grid);
    return rc;
}

int db_set_grid_text(Db *db, const char *grid, SpErr *err) { return meta_put(db, "grid", grid, err); }

/* ------------------------------------------------------------------ merge */

/* Attaches src as "src" and checks it is a results database of a readable schema version; a
 * database without any table (its sweep failed as it created it, e.g. on a full disk) is attached
 * with *empty = 1 when empty is not NULL, else refused. */
static int attach_src(Db *db, const char *src, int *empty, SpErr *err) {
    sqlite3_stmt *st;
    if (empty) *empty = 0;
    if (sqlite3_prepare_v2(db->h, "ATTACH DATABASE ? AS src", -1, &st, NULL) != SQLITE_OK)
        return sql_fail(db->h, db->path, "attach", err);
    sqlite3_bind_text(st, 1, src, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) return sp_fail(err, "%s: cannot attach: %s", src, sqlite3_errmsg(db->h));
    char ver[32];
    if (scalar_text(db, "SELECT COUNT(*) FROM src.sqlite_master", ver, sizeof ver, err)) {
        exec(db, "DETACH DATABASE src", NULL);
        return sp_err_prefix(err, "%s", src);
    }
    if (atoi(ver) == 0) {
        exec(db, "DETACH DATABASE src", NULL);
        if (empty) return *empty = 1, 0;
        return sp_fail(err, "%s: the database holds no tables (its sweep failed as it created it)", src);
    }
    if (scalar_text(db, "SELECT value FROM src.meta WHERE key='schema_version'", ver, sizeof ver, err) ||
        atoi(ver) < DB_SCHEMA_MIN || atoi(ver) > DB_SCHEMA_VERSION) {
        exec(db, "DETACH DATABASE src", NULL);
        return sp_fail(err, "%s: not a sprinter results database of schema version %d to %d", src, DB_SCHEMA_MIN,
                       DB_SCHEMA_VERSION);
    }
    return 0;
}

static int attach(Db *db, const char *src, SpErr *err) { return attach_src(db, src, NULL, err); }
static int src_meta(Db *db, const char *key, char **value, SpErr *err);

int db_source_grid(Db *dst, const char *src_path, char **grid, int *empty, SpErr *err) {
    *grid = NULL;
    if (attach_src(dst, src_path, empty, err)) return -1;
    if (*empty) return 0;
    int rc = src_meta(dst, "grid", grid, err);
    exec(dst, "DETACH DATABASE src", NULL);
    return rc;
}

int db_grid(Db *db, char **grid, SpErr *err) {
    sqlite3_stmt *st;
    *grid = NULL;
    if (sqlite3_prepare_v2(db->h, "SELECT value FROM meta WHERE key = 'grid'", -1, &st, NULL) != SQLITE_OK)
        return sql_fail(db->h, db->path, "read meta", err);
    int s = sqlite3_step(st), rc = 0;
    if (s == SQLITE_ROW && sqlite3_column_text(st, 0)) {
        if (!(*grid = strdup((const char *)sqlite3_column_text(st, 0)))) rc = sp_fail(err, "out of memory");
    } else if (s != SQLITE_ROW && s != SQLITE_DONE) {
        rc = sql_fail(db->h, db->path, "read meta", err);
    }
    sqlite3_finalize(st);
    return rc;
}

/* "INSERT INTO main.T(current columns) SELECT (the same, NULL where src lacks one) FROM src.T WHERE
 * run_hash = ?": copies a run's rows from a shard of any readable version. */
static int copy_sql(Db *db, const DbTable *t, char *sql, size_t cap) {
    char cols[4096], sel[4096];
    if (db_column_list(t, cols, sizeof cols)) return -1;
    if (db_select_list(db->h, "src", t, "", 1, sel, sizeof sel)) return -1;
    int w = snprintf(sql, cap, "INSERT INTO main.%s(%s) SELECT %s FROM src.%s WHERE run_hash = ?", t->name, cols, sel,
                     t->name);
    return w < 0 || (size_t)w >= cap ? -1 : 0;
}

static int plan_add(char ***list, int *n, int *cap, const char *h, SpErr *err) {
    if (*n == *cap) {
        int nc = *cap ? *cap * 2 : 64;
        char **nl = realloc(*list, (size_t)nc * sizeof *nl);
        if (!nl) return sp_fail(err, "out of memory");
        *list = nl;
        *cap = nc;
    }
    if (!((*list)[*n] = strdup(h))) return sp_fail(err, "out of memory");
    (*n)++;
    return 0;
}

/* The attached source's meta value of key (malloc'd into *value; NULL when there is none). */
static int src_meta(Db *db, const char *key, char **value, SpErr *err) {
    sqlite3_stmt *st;
    *value = NULL;
    if (sqlite3_prepare_v2(db->h, "SELECT value FROM src.meta WHERE key = ?", -1, &st, NULL) != SQLITE_OK)
        return sql_fail(db->h, db->path, "read source meta", err);
    sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
    int s = sqlite3_step(st), rc = 0;
    if (s == SQLITE_ROW && sqlite3_column_text(st, 0)) {
        if (!(*value = strdup((const char *)sqlite3_column_text(st, 0)))) rc = sp_fail(err, "out of memory");
    } else if (s != SQLITE_ROW && s != SQLITE_DONE) {
        rc = sql_fail(db->h, db->path, "read source meta", err);
    }
    sqlite3_finalize(st);
    return rc;
}

void db_merge_plan_free(MergePlan *p) {
    for (int i = 0; i < p->n; i++) free(p->hashes[i]);
    free(p->hashes);
    free(p->grid);
    memset(p, 0, sizeof *p);
}

int db_merge_plan(Db *dst, const char *src_path, MergePlan *p, SpErr *err) {
    memset(p, 0, sizeof *p);
    if (attach(dst, src_path, err)) return -1;
    sqlite3_stmt *st;
    enum { Q_HASH, Q_STATUS, Q_STATUS_HERE }; /* result columns */
    const char *sql = "SELECT s.run_hash, s.status, (SELECT status FROM main.runs m WHERE m.run_hash = s.run_hash) "
                      "FROM src.runs s ORDER BY s.run_index, s.run_hash";
    char **failed = NULL;
    int n_failed = 0, cap = 0, cap_f = 0, rc = 0;
    if (sqlite3_prepare_v2(dst->h, sql, -1, &st, NULL) != SQLITE_OK) {
        rc = sql_fail(dst->h, dst->path, "read source runs", err);
    } else {
        for (int s; rc == 0 && (s = sqlite3_step(st)) != SQLITE_DONE;) {
            if (s != SQLITE_ROW) {
                rc = sql_fail(dst->h, dst->path, "read source runs", err);
                break;
            }
            const char *h = (const char *)sqlite3_column_text(st, Q_HASH);
            const char *status = (const char *)sqlite3_column_text(st, Q_STATUS);
            const char *mine = (const char *)sqlite3_column_text(st, Q_STATUS_HERE);
            int mine_done = mine && !strcmp(mine, "done"), mine_failed = mine && !strcmp(mine, "failed");
            if (!strcmp(status, "done")) { /* a done run wins over a failed or unfinished one */
                if (mine_done) p->duplicates++;
                else rc = plan_add(&p->hashes, &p->n, &cap, h, err);
            } else if (!strcmp(status, "failed")) { /* stays failed, unless the run is done elsewhere */
                if (mine_done) p->failed_superseded++;
                else if (mine_failed) p->duplicates++;
                else rc = plan_add(&failed, &n_failed, &cap_f, h, err);
            } else {
                p->unfinished++;
            }
        }
        sqlite3_finalize(st);
    }
    if (rc == 0) rc = src_meta(dst, "grid", &p->grid, err);
    char *shard = NULL;
    if (rc == 0 && (rc = src_meta(dst, "shard", &shard, err)) == 0 && shard)
        snprintf(p->shard, sizeof p->shard, "%s", shard);
    free(shard);
    exec(dst, "DETACH DATABASE src", NULL);
    p->n_done = p->n;
    for (int i = 0; i < n_failed; i++) { /* failed runs after the done ones */
        if (rc == 0) rc = plan_add(&p->hashes, &p->n, &cap, failed[i], err);
        free(failed[i]);
    }
    free(failed);
    if (rc) db_merge_plan_free(p);
    return rc;
}

int db_merge_rows(Db *dst, const char *src_path, char *const *hashes, int n, SpErr *err) {
    if (attach(dst, src_path, err)) return -1;
    /* a column the source's version lacks (oracle_stay before 3, failure before 4) is copied as NULL;
     * a table it lacks (outputs before 2, timings before 8) is not copied */
    const DbTable *tables[] = {&kRunsTable, &kPromptsTable, &kOutputsTable, &kTimingsTable};
    enum { N_TABLES = sizeof tables / sizeof *tables };
    char sqls[N_TABLES][8192];
    sqlite3_stmt *stmts[N_TABLES] = {NULL};
    int rc = 0;
    for (int j = 0; j < N_TABLES && rc == 0; j++)
        if (sql_has_table(dst->h, "src", tables[j]->name) && copy_sql(dst, tables[j], sqls[j], sizeof sqls[j]))
            rc = sp_fail(err, "%s: merge statement too long", dst->path);
    if (rc == 0) rc = exec(dst, "BEGIN IMMEDIATE", err);
    for (int j = 0; rc == 0 && j < N_TABLES; j++)
        if (sql_has_table(dst->h, "src", tables[j]->name) &&
            sqlite3_prepare_v2(dst->h, sqls[j], -1, &stmts[j], NULL) != SQLITE_OK)
            rc = sql_fail(dst->h, dst->path, "prepare merge", err);
    for (int i = 0; rc == 0 && i < n; i++) {
        if (delete_run(dst, hashes[i], err)) {
            rc = -1;
            break;
        }
        for (int j = 0; rc == 0 && j < N_TABLES; j++) {
            if (!stmts[j]) continue;
            sqlite3_reset(stmts[j]);
            sqlite3_bind_text(stmts[j], 1, hashes[i], -1, SQLITE_STATIC);
            if (sqlite3_step(stmts[j]) != SQLITE_DONE) rc = sql_fail(dst->h, dst->path, "merge rows", err);
        }
    }
    for (int j = 0; j < N_TABLES; j++) sqlite3_finalize(stmts[j]);
    if (rc == 0) rc = exec(dst, "COMMIT", err);
    else exec(dst, "ROLLBACK", NULL);
    exec(dst, "DETACH DATABASE src", NULL);
    return rc;
}

/* ------------------------------------------------------------------ timings */

int db_timing_have(Db *db, const char *run_hash, int rep, SpErr *err) {
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db->h, "SELECT 1 FROM timings WHERE run_hash = ? AND rep = ?", -1, &st, NULL) != SQLITE_OK)
        return sql_fail(db->h, db->path, "read timings", err);
    sqlite3_bind_text(st, 1, run_hash, -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 2, rep);
    int s = sqlite3_step(st);
    sqlite3_finalize(st);
    if (s != SQLITE_ROW && s != SQLITE_DONE) return sql_fail(db->h, db->path, "read timings", err);
    return s == SQLITE_ROW;
}

int db_timing_add(Db *db, const char *run_hash, int rep, int n_prompts, const DecodeStats *st, const char *host,
                  SpErr *err) {
    char cols[1024], sql[1400], at[40];
    if (db_column_list(&kTimingsTable, cols, sizeof cols)) return sp_fail(err, "query too long");
    snprintf(sql, sizeof sql, "INSERT OR REPLACE INTO timings(%s) VALUES(?,?,?,?,?,?,?,?,?,?)", cols);
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(db->h, sql, -1, &s, NULL) != SQLITE_OK) return sql_fail(db->h, db->path, "insert into timings", err);
    db_now_iso(at, sizeof at);
    sqlite3_bind_text(s, 1 + TIMINGS_run_hash, run_hash, -1, SQLITE_STATIC);
    sqlite3_bind_int(s, 1 + TIMINGS_rep, rep);
    sqlite3_bind_int(s, 1 + TIMINGS_n_prompts, n_prompts);
    sqlite3_bind_int64(s, 1 + TIMINGS_tokens, st->tokens);
    sqlite3_bind_double(s, 1 + TIMINGS_t_total, st->t_total);
    sqlite3_bind_double(s, 1 + TIMINGS_t_draft, st->t_draft);
    sqlite3_bind_double(s, 1 + TIMINGS_t_target, st->t_target);
    sqlite3_bind_double(s, 1 + TIMINGS_t_verifier, st->t_verifier);
    sqlite3_bind_text(s, 1 + TIMINGS_host, host, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 1 + TIMINGS_finished_at, at, -1, SQLITE_STATIC);
    int rc = sqlite3_step(s) == SQLITE_DONE ? 0 : sql_fail(db->h, db->path, "insert into timings", err);
    sqlite3_finalize(s);
    return rc;
}

int db_unfinished(Db *db, char *buf, size_t cap, SpErr *err) {
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db->h, "SELECT run_hash FROM runs WHERE status = 'running' ORDER BY run_index", -1, &st, NULL) !=
        SQLITE_OK)
        return sql_fail(db->h, db->path, "query unfinished runs", err);
    size_t k = 0;
    buf[0] = '\0';
    while (sqlite3_step(st) == SQLITE_ROW) {
        const char *h = (const char *)sqlite3_column_text(st, 0);
        int w = snprintf(buf + k, cap - k, "%s%s", k ? ", " : "", h ? h : "");
        if (w < 0 || (size_t)w >= cap - k) break;
        k += (size_t)w;
    }
    sqlite3_finalize(st);
    return 0;
}
