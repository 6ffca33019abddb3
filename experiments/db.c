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

struct Db {
    sqlite3 *h;
    char path[1024];
};

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

int db_run_finish(Db *db, const char *run_hash, const PromptRow *rows, int n, const char *finished_at, SpErr *err) {
    char sql[4096];
    sqlite3_stmt *st = NULL, *up = NULL;
    if (exec(db, "BEGIN IMMEDIATE", err)) return -1;
    int rc = 0;
    if (insert_sql(&kPromptsTable, sql, sizeof sql) || sqlite3_prepare_v2(db->h, sql, -1, &st, NULL) != SQLITE_OK)
        rc = sql_fail(db->h, db->path, "prepare insert into prompts", err);
    for (int i = 0; rc == 0 && i < n; i++) rc = insert_prompt(db, st, run_hash, &rows[i], err);
    if (rc == 0) {
        if (sqlite3_prepare_v2(db->h, "UPDATE runs SET status = 'done', finished_at = ? WHERE run_hash = ?", -1, &up,
                               NULL) != SQLITE_OK) {
            rc = sql_fail(db->h, db->path, "prepare update of runs", err);
        } else {
            sqlite3_bind_text(up, 1, finished_at, -1, SQLITE_STATIC);
            sqlite3_bind_text(up, 2, run_hash, -1, SQLITE_STATIC);
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

/* The model contents of a run (group key, result columns), and the number of distinct draft or
 * target contents among the done runs (the larger). */
static const char kModelKey[] = "COALESCE(r.draft_sha256, ''), COALESCE(r.target_sha256, '')";
static const char kModelCount[] =
    "SELECT MAX((SELECT COUNT(DISTINCT draft_sha256) FROM runs WHERE status = 'done'),"
    " (SELECT COUNT(DISTINCT target_sha256) FROM runs WHERE status = 'done'))";

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
    if (scalar_text(db, "SELECT COUNT(*) FROM runs WHERE status = 'failed'", n_failed, sizeof n_failed, err) ||
        scalar_text(db, "SELECT COUNT(*) FROM runs WHERE status = 'running'", n_running, sizeof n_running, err))
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
        if (shape.show_models)
            snprintf(models, sizeof models, "%s%.8s%s%.8s", rows[i].target_sha[0] ? "target=" : "", rows[i].target_sha,
                     rows[i].draft_sha[0] ? (rows[i].target_sha[0] ? " draft=" : "draft=") : "", rows[i].draft_sha);
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
    if (n && shape.show_models)
        fprintf(out, "note: these runs used several model contents; rows are split by them (target=, draft=: the first 8 "
                     "digits of the sha256 of the model files), and speed-ups are over the ar row of the same target\n");
    if (n)
        fprintf(out, "tok/call: tokens per target call incl. bonus (Spec-Bench's mean accepted tokens); accept: per-token "
                     "acceptance rate alpha = accepted share of the draft tokens the target checked; acc/dft: accepted / "
                     "drafted\n");
    free(labels);
    free(rows);
    return summary_not_done(db, out, err);
}

/* ------------------------------------------------------------------ Spec-Bench's task table */

/* One configuration (method, parameters, data, temperature) with its questions, every seed pooled. */
typedef struct TaskConfig {
    char method[32], label[160], dataset[256];
    double temperature;
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
    TASK_TRUNCATED, TASK_PARAMS
};

/* Every done run's questions (records/metrics.h: its prompt rows grouped by the first turn's
 * prompt_index, specbench_question_key), gathered per configuration in run order. */
static int task_configs(Db *db, TaskConfig **out, int *n_out, SpErr *err) {
    char params[512], sql[4096];
    db_param_columns("r.", params, sizeof params);
    snprintf(sql, sizeof sql,
             "SELECT r.method, r.dataset, r.temperature, MIN(p.category), SUM(p.tokens), SUM(p.target_calls),"
             " SUM(p.t_total), COUNT(*), SUM(p.prompt_truncated != 0), %s FROM runs r JOIN prompts p ON p.run_hash = r.run_hash WHERE r.status = 'done'"
             " GROUP BY r.run_hash, p.prompt_index - COALESCE(p.turn, 0)"
             " ORDER BY MIN(r.run_index), MIN(p.prompt_index)",
             params);
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
        int k = 0;
        while (k < n && (strcmp(c[k].method, method) || strcmp(c[k].label, label) || strcmp(c[k].dataset, dataset) ||
                         c[k].temperature != temperature))
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

/* The ar configuration on the same data at the same temperature, NULL when there is none. */
static const TaskConfig *task_ar_of(const TaskConfig *c, int n, const TaskConfig *x) {
    for (int k = 0; k < n; k++)
        if (!strcmp(c[k].method, decode_method_name(DM_AR)) && !strcmp(c[k].dataset, x->dataset) &&
            c[k].temperature == x->temperature)
            return &c[k];
    return NULL;
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
    int n = 0;
    if (task_configs(db, &c, &n, err)) {
        task_configs_free(c, n);
        return -1;
    }
    if (tsv) {
        fprintf(out, "method\tdataset\ttemperature\tparams\ttask\tquestions\ttokens\ttarget_calls\tmean_accepted_tokens"
                     "\tmean_tokens_per_s\tar_mean_tokens_per_s\tspeedup_specbench\tturns\ttruncated_turns\n");
        for (int k = 0; k < n; k++) {
            const TaskConfig *ar = task_ar_of(c, n, &c[k]);
            for (int g = 0; g < SB_N_GROUPS; g++) {
                const SbCell *x = &c[k].cells[g];
                double ar_rate = ar ? ar->cells[g].mean_rate : NAN;
                if (x->questions == 0) continue;
                fprintf(out, "%s\t%s\t%.9g\t%s\t%s\t%d\t%lld\t%lld\t%.9g\t%.9g\t%.9g\t%.9g\t%d\t%d\n", c[k].method,
                        c[k].dataset, c[k].temperature, c[k].label[0] ? c[k].label : "-", specbench_group_name(g),
                        x->questions, (long long)x->tokens, (long long)x->target_calls,
                        metric_ratio((double)x->tokens, (double)x->target_calls), x->mean_rate, ar_rate,
                        metric_ratio(x->mean_rate, ar_rate), x->turns, x->truncated);
            }
        }
        task_configs_free(c, n);
        return 0;
    }
    int wl = 6;
    for (int k = 0; k < n; k++) {
        int l = (int)(strlen(c[k].dataset) + strlen(c[k].label)) + 8;
        if (l > wl) wl = l;
    }
    fprintf(out, "Spec-Bench task groups: speedup over ar (mean of per-question tok/s, its evaluation/speed.py) and mean "
                 "accepted tokens (tokens per target forward, bonus included)\n");
    fprintf(out, "%-11s %-*s", "method", wl, "data T params");
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
        snprintf(lab, sizeof lab, "%s T=%g%s%s", c[k].dataset, c[k].temperature, c[k].label[0] ? " " : "", c[k].label);
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
    task_configs_free(c, n);
    return 0;
}

int db_summary_categories(Db *db, FILE *out, int tsv, SpErr *err) {
    TaskConfig *c = NULL;
    int n = 0;
    if (task_configs(db, &c, &n, err)) {
        task_configs_free(c, n);
        return -1;
    }
    if (tsv)
        fprintf(out, "method\tdataset\ttemperature\tparams\tcategory\ttask\tquestions\ttokens\ttarget_calls"
                     "\tmean_accepted_tokens\tmean_tokens_per_s\tar_mean_tokens_per_s\tspeedup_specbench\tturns"
                     "\ttruncated_turns\n");
    else
        fprintf(out, "%-11s %-40s %-16s %-14s %9s %8s %8s %9s\n", "method", "data T params", "category", "task",
                "questions", "speedup", "MAT", "truncated");
    for (int k = 0; k < n; k++) {
        const TaskConfig *ar = task_ar_of(c, n, &c[k]);
        char lab[512];
        snprintf(lab, sizeof lab, "%s T=%g%s%s", c[k].dataset, c[k].temperature, c[k].label[0] ? " " : "", c[k].label);
        for (int i = 0; i < c[k].n; i++) { /* each category once, in the data's order */
            if (!specbench_category_first(c[k].q, i)) continue;
            const char *cat = c[k].categories[i];
            SbCell x = specbench_category_cell(c[k].q, c[k].n, cat);
            double ar_rate = ar ? specbench_category_cell(ar->q, ar->n, cat).mean_rate : NAN;
            int g = specbench_group_of(cat);
            double mat = metric_ratio((double)x.tokens, (double)x.target_calls), speedup = metric_ratio(x.mean_rate, ar_rate);
            if (tsv) {
                fprintf(out, "%s\t%s\t%.9g\t%s\t%s\t%s\t%d\t%lld\t%lld\t%.9g\t%.9g\t%.9g\t%.9g\t%d\t%d\n", c[k].method,
                        c[k].dataset, c[k].temperature, c[k].label[0] ? c[k].label : "-", cat[0] ? cat : "-",
                        g >= 0 ? specbench_group_name(g) : "-", x.questions, (long long)x.tokens,
                        (long long)x.target_calls, mat, x.mean_rate, ar_rate, speedup, x.turns, x.truncated);
            } else {
                char sp[24], m[24];
                fmt_ratio(sp, sizeof sp, speedup, isnan(speedup) ? 0 : 1, "%.2fx"); /* "-" without ar */
                fmt_ratio(m, sizeof m, (double)x.tokens, (double)x.target_calls, "%.2f");
                char tr[32];
                snprintf(tr, sizeof tr, "%d/%d", x.truncated, x.turns);
                fprintf(out, "%-11s %-40s %-16s %-14s %9d %8s %8s %9s\n", c[k].method, lab, cat[0] ? cat : "(none)",
                        g >= 0 ? specbench_group_name(g) : "-", x.questions, sp, m, tr);
            }
        }
    }
    if (!tsv && n == 0) fprintf(out, "(no finished runs)\n");
    task_configs_free(c, n);
    return 0;
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
