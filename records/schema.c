/* schema.c - the results database's tables, creation and upgrades (see schema.h). */
#include "schema.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sqlutil.h"

#define DB_COL_ROW(name, decl, since, until, param) {#name, decl, since, until, param},
static const DbColumn kRunsCols[] = {RUNS_COLUMNS(DB_COL_ROW)};
/* Every grid parameter has a runs column (test_spec checks that each has exactly one, of its type). */
#define RP_COL_COUNT_(name, decl, since, until, param) +((param) >= 0)
_Static_assert(0 RUNS_COLUMNS(RP_COL_COUNT_) == RP_COUNT, "records/schema.h: a grid parameter lacks its runs column");
#undef RP_COL_COUNT_
static const DbColumn kPromptsCols[] = {PROMPTS_COLUMNS(DB_COL_ROW)};
static const DbColumn kOutputsCols[] = {OUTPUTS_COLUMNS(DB_COL_ROW)};
static const DbColumn kTimingsCols[] = {TIMINGS_COLUMNS(DB_COL_ROW)};
#undef DB_COL_ROW

const DbTable kRunsTable = {"runs", kRunsCols, RUNS_N_COLS, "CHECK((status = 'failed') = (failure IS NOT NULL))", 1};
const DbTable kPromptsTable = {"prompts", kPromptsCols, PROMPTS_N_COLS, "PRIMARY KEY(run_hash, prompt_index)", 1};
const DbTable kOutputsTable = {"outputs", kOutputsCols, OUTPUTS_N_COLS, "PRIMARY KEY(run_hash, prompt_index)", 2};
const DbTable kTimingsTable = {"timings", kTimingsCols, TIMINGS_N_COLS, "PRIMARY KEY(run_hash, rep)", 8};

/* Per done run, its prompts summed (schema v1 on). */
static const char kRunTotalsView[] =
    "CREATE VIEW IF NOT EXISTS run_totals AS SELECT r.run_hash, r.method, r.seed, r.gamma, r.tau, r.lambda,\n"
    "  r.max_run, COUNT(*) AS prompts, SUM(p.tokens) AS tokens, SUM(p.target_calls) AS target_calls,\n"
    "  SUM(p.accepted) AS accepted, SUM(p.t_total) AS t_total, SUM(p.t_audit) AS t_audit,\n"
    "  SUM(p.tokens) / SUM(p.t_total) AS tokens_per_s,\n"
    "  CAST(SUM(p.target_calls) AS REAL) / SUM(p.tokens) AS target_calls_per_token,\n"
    "  CAST(SUM(p.fp) AS REAL) / SUM(p.audited_neg) AS eta_fp,\n"
    "  CAST(SUM(p.tp) AS REAL) / SUM(p.audited_pos) AS eta_tp\n"
    "  FROM runs r JOIN prompts p ON p.run_hash = r.run_hash WHERE r.status = 'done' GROUP BY r.run_hash;\n";

/* Appends printf-formatted text at *k of buf[cap]; -1 when it does not fit. */
static int put(char *buf, size_t cap, size_t *k, const char *fmt, const char *a, const char *b) {
    int w = snprintf(buf + *k, cap - *k, fmt, a, b);
    if (w < 0 || (size_t)w >= cap - *k) return -1;
    *k += (size_t)w;
    return 0;
}

/* The columns of version `version` joined by ", " (with prefix before each). */
static int column_list_v(const DbTable *t, int version, const char *prefix, char *buf, size_t cap) {
    size_t k = 0;
    buf[0] = '\0';
    for (int i = 0; i < t->n_cols; i++)
        if (db_col_in(&t->cols[i], version) && put(buf, cap, &k, k ? ", %s%s" : "%s%s", prefix, t->cols[i].name))
            return -1;
    return 0;
}

int db_column_list(const DbTable *t, char *buf, size_t cap) { return column_list_v(t, DB_SCHEMA_VERSION, "", buf, cap); }

int db_select_list(sqlite3 *h, const char *schema, const DbTable *t, const char *prefix, int current_only, char *buf,
                   size_t cap) {
    size_t k = 0;
    buf[0] = '\0';
    for (int i = 0; i < t->n_cols; i++) {
        if (current_only && !db_col_in(&t->cols[i], DB_SCHEMA_VERSION)) continue;
        int present = sql_has_column(h, schema, t->name, t->cols[i].name);
        if (put(buf, cap, &k, k ? ", %s%s" : "%s%s", present ? prefix : "", present ? t->cols[i].name : "NULL")) return -1;
    }
    return 0;
}

/* "CREATE TABLE [IF NOT EXISTS] NAME(\n  col decl,\n ...  constraints)" of the current version. */
static int create_sql(const DbTable *t, const char *name, int if_not_exists, char *buf, size_t cap) {
    size_t k = 0;
    if (put(buf, cap, &k, "CREATE TABLE %s%s(\n", if_not_exists ? "IF NOT EXISTS " : "", name)) return -1;
    for (int i = 0; i < t->n_cols; i++)
        if (db_col_in(&t->cols[i], DB_SCHEMA_VERSION) && put(buf, cap, &k, "  %s %s,\n", t->cols[i].name, t->cols[i].decl))
            return -1;
    return put(buf, cap, &k, "  %s%s);\n", t->constraints, "");
}

static int exec_create(sqlite3 *h, const char *path, const DbTable *t, SpErr *err) {
    char sql[8192];
    if (create_sql(t, t->name, 1, sql, sizeof sql)) return sp_fail(err, "%s: schema text too long", path);
    return sql_exec(h, path, sql, "create schema", err);
}

int db_param_columns(const char *prefix, char *buf, size_t cap) {
    size_t k = 0;
    buf[0] = '\0';
    for (int p = 0; p < RP_COUNT; p++)
        if (put(buf, cap, &k, k ? ", %s%s" : "%s%s", prefix, run_param_info((RunParam)p)->name)) return -1;
    return 0;
}

void db_params_label(sqlite3_stmt *st, int first, char *buf, int cap) {
    double values[RP_COUNT];
    for (int p = 0; p < RP_COUNT; p++)
        values[p] = sqlite3_column_type(st, first + p) == SQLITE_NULL ? NAN : sqlite3_column_double(st, first + p);
    run_params_format(values, buf, cap);
}

void db_text_sanitize(char *s) {
    unsigned char *p = (unsigned char *)s;
    while (*p) {
        int n = *p < 0x80 ? 1 : (*p >> 5) == 6 ? 2 : (*p >> 4) == 14 ? 3 : (*p >> 3) == 30 ? 4 : 0;
        int ok = n > 0;
        for (int k = 1; ok && k < n; k++) ok = (p[k] & 0xC0) == 0x80;
        if (ok && n == 2) ok = *p >= 0xC2; /* overlong */
        if (ok && n == 3) ok = !(*p == 0xE0 && p[1] < 0xA0) && !(*p == 0xED && p[1] >= 0xA0); /* overlong, surrogate */
        if (ok && n == 4) ok = !(*p == 0xF0 && p[1] < 0x90) && *p <= 0xF4 && !(*p == 0xF4 && p[1] >= 0x90);
        if (!ok) {
            *p++ = '?';
            continue;
        }
        p += n;
    }
}

int db_schema_version(sqlite3 *h, const char *path, SpErr *err) {
    if (!sql_has_table(h, "main", "meta")) return 0;
    char ver[32];
    if (sql_scalar_text(h, path, "SELECT value FROM meta WHERE key = 'schema_version'", ver, sizeof ver, err)) return -1;
    char *end;
    long v = strtol(ver, &end, 10);
    if (end == ver || *end || v < 1 || v > 1000000)
        return sp_fail(err, "%s: meta.schema_version is \"%s\", not a version number", path, ver);
    return (int)v;
}

/* To v3: runs gains oracle_stay (and any other nullable column added by ALTER TABLE from v3 on). */
static int add_columns(sqlite3 *h, const char *path, const DbTable *t, int from, int upto, SpErr *err) {
    for (int i = 0; i < t->n_cols; i++) {
        const DbColumn *c = &t->cols[i];
        if (c->since <= from || c->since > upto || c->until || sql_has_column(h, "main", t->name, c->name)) continue;
        char sql[512], what[128];
        snprintf(sql, sizeof sql, "ALTER TABLE %s ADD COLUMN %s %s", t->name, c->name, c->decl);
        snprintf(what, sizeof what, "add column %s.%s", t->name, c->name);
        if (sql_exec(h, path, sql, what, err)) return -1;
    }
    return 0;
}

/* To v4: status may be 'failed' and runs gains failure with a CHECK. SQLite cannot alter a CHECK
 * constraint, so the table is rebuilt (SQLite's documented procedure: new table, copy, drop,
 * rename; legacy_alter_table keeps the rename from rewriting or validating views, and run_totals is
 * dropped and recreated around it). A v3 file has only 'running' and 'done' runs: failure NULL. */
static int rebuild_runs_v4(sqlite3 *h, const char *path, SpErr *err) {
    char create[8192], cols[4096], sql[16384];
    if (create_sql(&kRunsTable, "runs_v4", 0, create, sizeof create) || column_list_v(&kRunsTable, 3, "", cols, sizeof cols))
        return sp_fail(err, "%s: schema text too long", path);
    snprintf(sql, sizeof sql,
             "DROP VIEW IF EXISTS run_totals;\nDROP TABLE IF EXISTS runs_v4;\n%s"
             "INSERT INTO runs_v4(%s) SELECT %s FROM runs;\nDROP TABLE runs;\nPRAGMA legacy_alter_table = ON;\n"
             "ALTER TABLE runs_v4 RENAME TO runs;\nPRAGMA legacy_alter_table = OFF;\n%s",
             create, cols, cols, kRunTotalsView);
    if (sql_exec(h, path, sql, "cannot upgrade schema version 3 to 4 (the file is left as it was)", err)) {
        sql_exec(h, path, "PRAGMA legacy_alter_table = OFF", NULL, NULL);
        return -1;
    }
    return 0;
}

/* To v5 (and any later removal): drops the columns a version removed. */
static int drop_columns(sqlite3 *h, const char *path, const DbTable *t, int from, SpErr *err) {
    for (int i = 0; i < t->n_cols; i++) {
        const DbColumn *c = &t->cols[i];
        if (!c->until || c->until <= from || !sql_has_column(h, "main", t->name, c->name)) continue;
        char sql[256], what[128];
        snprintf(sql, sizeof sql, "ALTER TABLE %s DROP COLUMN %s", t->name, c->name);
        snprintf(what, sizeof what, "drop column %s.%s", t->name, c->name);
        if (sql_exec(h, path, sql, what, err)) return -1;
    }
    return 0;
}

int db_schema_prepare(sqlite3 *h, const char *path, SpErr *err) {
    int before = db_schema_version(h, path, err);
    if (before < 0) return -1;
    if (before > DB_SCHEMA_VERSION || (before == 0 && sql_has_table(h, "main", "runs")))
        return sp_fail(err, "%s: meta.schema_version is %d, this sprinter reads versions %d to %d%s", path, before,
                       DB_SCHEMA_MIN, DB_SCHEMA_VERSION, before > DB_SCHEMA_VERSION ? " (written by a newer sprinter)" : "");
    if (before > 0 && before < DB_SCHEMA_MIN)
        return sp_fail(err, "%s: meta.schema_version is %d, this sprinter reads versions %d to %d", path, before,
                       DB_SCHEMA_MIN, DB_SCHEMA_VERSION);
    char meta[160];
    snprintf(meta, sizeof meta, "INSERT OR IGNORE INTO meta VALUES('schema_version','%d'),('format','%s')",
             before ? before : DB_SCHEMA_VERSION, DB_FORMAT);
    if (sql_exec(h, path, "CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL)", "create schema",
                 err) ||
        exec_create(h, path, &kRunsTable, err) || exec_create(h, path, &kPromptsTable, err) ||
        sql_exec(h, path, kRunTotalsView, "create schema", err) || exec_create(h, path, &kOutputsTable, err) ||
        exec_create(h, path, &kTimingsTable, err) || sql_exec(h, path, meta, "create schema", err))
        return -1;
    if (before == 0 || before == DB_SCHEMA_VERSION) return 0;
    /* upgrade an older file: 1 -> 2 is the outputs table just created, 7 -> 8 the timings table */
    if ((before < 3 && add_columns(h, path, &kRunsTable, before, 3, err)) || (before < 4 && rebuild_runs_v4(h, path, err)) ||
        drop_columns(h, path, &kPromptsTable, before, err) ||
        add_columns(h, path, &kRunsTable, before > 4 ? before : 4, DB_SCHEMA_VERSION, err) ||
        add_columns(h, path, &kPromptsTable, before > 4 ? before : 4, DB_SCHEMA_VERSION, err) ||
        add_columns(h, path, &kOutputsTable, before > 4 ? before : 4, DB_SCHEMA_VERSION, err))
        return -1;
    char up[128];
    snprintf(up, sizeof up, "UPDATE meta SET value = '%d' WHERE key = 'schema_version'", DB_SCHEMA_VERSION);
    return sql_exec(h, path, up, "upgrade schema version", err);
}
