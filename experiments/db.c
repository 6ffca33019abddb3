/* db.c - the SQLite results database (see db.h and results/README.md). */
#include "db.h"

#include <math.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#if SQLITE_VERSION_NUMBER < 3022000
#error "experiments/db.c needs SQLite >= 3.22 (sqlite3_system_errno, SQLITE_READONLY_DIRECTORY)"
#endif

struct Db {
    sqlite3 *h;
    char path[1024];
};

/* The runs table (schema v4), used by kSchema for a new file and by the v3 -> v4 rebuild. */
#define RUNS_TABLE_BODY                                                                                       \
    "(\n"                                                                                                     \
    "  run_hash TEXT PRIMARY KEY, run_index INTEGER NOT NULL,\n"                                              \
    "  status TEXT NOT NULL CHECK(status IN ('running','done','failed')),\n" /* v4: 'failed' */              \
    "  method TEXT NOT NULL, seed INTEGER NOT NULL,\n"                                                        \
    "  dataset TEXT NOT NULL, dataset_sha256 TEXT NOT NULL, data_format TEXT NOT NULL,\n"                     \
    "  prompt_offset INTEGER NOT NULL, n_prompts INTEGER NOT NULL,\n"                                         \
    "  max_new INTEGER NOT NULL, temperature REAL NOT NULL, top_k INTEGER NOT NULL, top_p REAL NOT NULL,\n"   \
    "  stop_at_eos INTEGER NOT NULL, audit INTEGER NOT NULL,\n"                                               \
    "  gamma INTEGER, tau REAL, lambda REAL, max_run INTEGER, alpha REAL, p_min REAL,\n"                      \
    "  eta_fp REAL, eta_tp REAL,\n"                                                                           \
    "  draft_dir TEXT, draft_sha256 TEXT, target_dir TEXT, target_sha256 TEXT,\n"                             \
    "  verifier_path TEXT, verifier_sha256 TEXT,\n"                                                           \
    "  config TEXT NOT NULL, spec_name TEXT NOT NULL, spec_path TEXT NOT NULL, spec_sha256 TEXT NOT NULL,\n"  \
    "  git_commit TEXT NOT NULL, host TEXT, token_log TEXT NOT NULL,\n"                                       \
    "  started_at TEXT NOT NULL, finished_at TEXT,\n"                                                         \
    "  oracle_stay REAL,\n" /* v3 */                                                                          \
    "  failure TEXT,\n"     /* v4: why a failed run failed (one line), NULL for every other status */         \
    "  CHECK((status = 'failed') = (failure IS NOT NULL)))"

#define RUN_TOTALS_VIEW                                                                                       \
    "CREATE VIEW IF NOT EXISTS run_totals AS SELECT r.run_hash, r.method, r.seed, r.gamma, r.tau, r.lambda,\n" \
    "  r.max_run, COUNT(*) AS prompts, SUM(p.tokens) AS tokens, SUM(p.target_calls) AS target_calls,\n"       \
    "  SUM(p.accepted) AS accepted, SUM(p.t_total) AS t_total, SUM(p.t_audit) AS t_audit,\n"                  \
    "  SUM(p.tokens) / SUM(p.t_total) AS tokens_per_s,\n"                                                     \
    "  CAST(SUM(p.target_calls) AS REAL) / SUM(p.tokens) AS target_calls_per_token,\n"                        \
    "  CAST(SUM(p.fp) AS REAL) / SUM(p.audited_neg) AS eta_fp,\n"                                             \
    "  CAST(SUM(p.tp) AS REAL) / SUM(p.audited_pos) AS eta_tp\n"                                              \
    "  FROM runs r JOIN prompts p ON p.run_hash = r.run_hash WHERE r.status = 'done' GROUP BY r.run_hash;\n"

static const char kSchema[] =
    "CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);\n"
    "CREATE TABLE IF NOT EXISTS runs" RUNS_TABLE_BODY ";\n"
    "CREATE TABLE IF NOT EXISTS prompts(\n"
    "  run_hash TEXT NOT NULL, prompt_index INTEGER NOT NULL, example_id TEXT,\n"
    "  n_prompt_tokens INTEGER NOT NULL, prompt_truncated INTEGER NOT NULL, rng_seed TEXT NOT NULL,\n"
    "  tokens INTEGER NOT NULL, target_calls INTEGER NOT NULL, target_tokens INTEGER NOT NULL,\n"
    "  draft_calls INTEGER NOT NULL, draft_tokens INTEGER NOT NULL,\n"
    "  audit_calls INTEGER NOT NULL, audit_tokens INTEGER NOT NULL, verifier_evals INTEGER NOT NULL,\n"
    "  drafted INTEGER NOT NULL, accepted INTEGER NOT NULL, verifier_accepts INTEGER NOT NULL,\n"
    "  longest_run INTEGER NOT NULL, mean_accepted_run REAL,\n"
    "  audited INTEGER, audited_pos INTEGER, audited_neg INTEGER, tp INTEGER, fp INTEGER,\n"
    "  eta_fp REAL, eta_tp REAL,\n"
    "  t_total REAL NOT NULL, t_draft REAL NOT NULL, t_target REAL NOT NULL, t_verifier REAL NOT NULL,\n"
    "  t_audit REAL NOT NULL,\n"
    "  flops_draft REAL NOT NULL, flops_target REAL NOT NULL, flops_verifier REAL NOT NULL,\n"
    "  output_text TEXT,\n"
    "  quality_ppl REAL, quality_rouge_l REAL, quality_bleu REAL, quality_json TEXT,\n"
    "  PRIMARY KEY(run_hash, prompt_index));\n"
    RUN_TOTALS_VIEW
    /* schema v2: written by `sprinter score` (experiments/score.c owns the queries on this table) */
    "CREATE TABLE IF NOT EXISTS outputs(\n"
    "  run_hash TEXT NOT NULL, prompt_index INTEGER NOT NULL,\n"
    "  n_prompt_tokens INTEGER NOT NULL, n_tokens INTEGER NOT NULL, text TEXT,\n"
    "  target_logprob REAL, target_mean_logprob REAL, target_ppl REAL,\n"
    "  target_dir TEXT NOT NULL, target_sha256 TEXT NOT NULL, scored_at TEXT NOT NULL,\n"
    "  PRIMARY KEY(run_hash, prompt_index));\n";

/* The outputs columns, in table order (merge copies them). */
static const char kOutputCols[] =
    "run_hash, prompt_index, n_prompt_tokens, n_tokens, text, target_logprob, target_mean_logprob, target_ppl, "
    "target_dir, target_sha256, scored_at";

/* The runs columns every schema version has (1 to 4), in table order. */
#define RUN_COLS_V1                                                                                             \
    "run_hash, run_index, status, method, seed, dataset, dataset_sha256, data_format, prompt_offset, n_prompts, " \
    "max_new, temperature, top_k, top_p, stop_at_eos, audit, gamma, tau, lambda, max_run, alpha, p_min, eta_fp, " \
    "eta_tp, draft_dir, draft_sha256, target_dir, target_sha256, verifier_path, verifier_sha256, config, "         \
    "spec_name, spec_path, spec_sha256, git_commit, host, token_log, started_at, finished_at"
/* The runs columns of schema v3, in table order (the v3 -> v4 rebuild copies them). */
#define RUN_COLS_V3 RUN_COLS_V1 ", oracle_stay"
/* The runs columns, in table order: the insert and the merge both use this list. */
static const char kRunCols[] = RUN_COLS_V3 ", failure";
#define N_RUN_COLS 41

static const char kPromptCols[] =
    "run_hash, prompt_index, example_id, n_prompt_tokens, prompt_truncated, rng_seed, tokens, target_calls, "
    "target_tokens, draft_calls, draft_tokens, audit_calls, audit_tokens, verifier_evals, drafted, accepted, "
    "verifier_accepts, longest_run, mean_accepted_run, audited, audited_pos, audited_neg, tp, fp, eta_fp, eta_tp, "
    "t_total, t_draft, t_target, t_verifier, t_audit, flops_draft, flops_target, flops_verifier, output_text, "
    "quality_ppl, quality_rouge_l, quality_bleu, quality_json";
#define N_PROMPT_COLS 39

/* ------------------------------------------------------------------ errors */

#define SQL_CODE(c) {c, #c},
/* Names of SQLite's result codes, extended ones included: sqlite3_errmsg says "disk I/O error" for
 * thirty different failures; the extended code says which (SQLITE_IOERR_WRITE, _FSYNC, _SHMSIZE, ...). */
static const struct {
    int code;
    const char *name;
} kSqlCodes[] = {
    SQL_CODE(SQLITE_ERROR) SQL_CODE(SQLITE_INTERNAL) SQL_CODE(SQLITE_PERM) SQL_CODE(SQLITE_ABORT)
    SQL_CODE(SQLITE_BUSY) SQL_CODE(SQLITE_LOCKED) SQL_CODE(SQLITE_NOMEM) SQL_CODE(SQLITE_READONLY)
    SQL_CODE(SQLITE_INTERRUPT) SQL_CODE(SQLITE_IOERR) SQL_CODE(SQLITE_CORRUPT) SQL_CODE(SQLITE_NOTFOUND)
    SQL_CODE(SQLITE_FULL) SQL_CODE(SQLITE_CANTOPEN) SQL_CODE(SQLITE_PROTOCOL) SQL_CODE(SQLITE_EMPTY)
    SQL_CODE(SQLITE_SCHEMA) SQL_CODE(SQLITE_TOOBIG) SQL_CODE(SQLITE_CONSTRAINT) SQL_CODE(SQLITE_MISMATCH)
    SQL_CODE(SQLITE_MISUSE) SQL_CODE(SQLITE_NOLFS) SQL_CODE(SQLITE_AUTH) SQL_CODE(SQLITE_FORMAT)
    SQL_CODE(SQLITE_RANGE) SQL_CODE(SQLITE_NOTADB) SQL_CODE(SQLITE_NOTICE) SQL_CODE(SQLITE_WARNING)
    SQL_CODE(SQLITE_IOERR_READ) SQL_CODE(SQLITE_IOERR_SHORT_READ) SQL_CODE(SQLITE_IOERR_WRITE)
    SQL_CODE(SQLITE_IOERR_FSYNC) SQL_CODE(SQLITE_IOERR_DIR_FSYNC) SQL_CODE(SQLITE_IOERR_TRUNCATE)
    SQL_CODE(SQLITE_IOERR_FSTAT) SQL_CODE(SQLITE_IOERR_UNLOCK) SQL_CODE(SQLITE_IOERR_RDLOCK)
    SQL_CODE(SQLITE_IOERR_DELETE) SQL_CODE(SQLITE_IOERR_BLOCKED) SQL_CODE(SQLITE_IOERR_NOMEM)
    SQL_CODE(SQLITE_IOERR_ACCESS) SQL_CODE(SQLITE_IOERR_CHECKRESERVEDLOCK) SQL_CODE(SQLITE_IOERR_LOCK)
    SQL_CODE(SQLITE_IOERR_CLOSE) SQL_CODE(SQLITE_IOERR_DIR_CLOSE) SQL_CODE(SQLITE_IOERR_SHMOPEN)
    SQL_CODE(SQLITE_IOERR_SHMSIZE) SQL_CODE(SQLITE_IOERR_SHMLOCK) SQL_CODE(SQLITE_IOERR_SHMMAP)
    SQL_CODE(SQLITE_IOERR_SEEK) SQL_CODE(SQLITE_IOERR_DELETE_NOENT) SQL_CODE(SQLITE_IOERR_MMAP)
    SQL_CODE(SQLITE_IOERR_GETTEMPPATH) SQL_CODE(SQLITE_IOERR_CONVPATH) SQL_CODE(SQLITE_IOERR_VNODE)
    SQL_CODE(SQLITE_IOERR_AUTH) SQL_CODE(SQLITE_IOERR_BEGIN_ATOMIC) SQL_CODE(SQLITE_IOERR_COMMIT_ATOMIC)
    SQL_CODE(SQLITE_IOERR_ROLLBACK_ATOMIC)
#ifdef SQLITE_IOERR_DATA
    SQL_CODE(SQLITE_IOERR_DATA)
#endif
#ifdef SQLITE_IOERR_CORRUPTFS
    SQL_CODE(SQLITE_IOERR_CORRUPTFS)
#endif
    SQL_CODE(SQLITE_LOCKED_SHAREDCACHE) SQL_CODE(SQLITE_LOCKED_VTAB) SQL_CODE(SQLITE_BUSY_RECOVERY)
    SQL_CODE(SQLITE_BUSY_SNAPSHOT)
#ifdef SQLITE_BUSY_TIMEOUT
    SQL_CODE(SQLITE_BUSY_TIMEOUT)
#endif
    SQL_CODE(SQLITE_CANTOPEN_NOTEMPDIR) SQL_CODE(SQLITE_CANTOPEN_ISDIR) SQL_CODE(SQLITE_CANTOPEN_FULLPATH)
    SQL_CODE(SQLITE_CANTOPEN_CONVPATH) SQL_CODE(SQLITE_CANTOPEN_DIRTYWAL)
#ifdef SQLITE_CANTOPEN_SYMLINK
    SQL_CODE(SQLITE_CANTOPEN_SYMLINK)
#endif
    SQL_CODE(SQLITE_CORRUPT_VTAB)
#ifdef SQLITE_CORRUPT_SEQUENCE
    SQL_CODE(SQLITE_CORRUPT_SEQUENCE)
#endif
#ifdef SQLITE_CORRUPT_INDEX
    SQL_CODE(SQLITE_CORRUPT_INDEX)
#endif
    SQL_CODE(SQLITE_READONLY_RECOVERY) SQL_CODE(SQLITE_READONLY_CANTLOCK) SQL_CODE(SQLITE_READONLY_ROLLBACK)
    SQL_CODE(SQLITE_READONLY_DBMOVED) SQL_CODE(SQLITE_READONLY_CANTINIT) SQL_CODE(SQLITE_READONLY_DIRECTORY)
    SQL_CODE(SQLITE_ABORT_ROLLBACK) SQL_CODE(SQLITE_CONSTRAINT_CHECK) SQL_CODE(SQLITE_CONSTRAINT_COMMITHOOK)
    SQL_CODE(SQLITE_CONSTRAINT_FOREIGNKEY) SQL_CODE(SQLITE_CONSTRAINT_FUNCTION) SQL_CODE(SQLITE_CONSTRAINT_NOTNULL)
    SQL_CODE(SQLITE_CONSTRAINT_PRIMARYKEY) SQL_CODE(SQLITE_CONSTRAINT_TRIGGER) SQL_CODE(SQLITE_CONSTRAINT_UNIQUE)
    SQL_CODE(SQLITE_CONSTRAINT_VTAB) SQL_CODE(SQLITE_CONSTRAINT_ROWID)
#ifdef SQLITE_CONSTRAINT_PINNED
    SQL_CODE(SQLITE_CONSTRAINT_PINNED)
#endif
#ifdef SQLITE_CONSTRAINT_DATATYPE
    SQL_CODE(SQLITE_CONSTRAINT_DATATYPE)
#endif
    SQL_CODE(SQLITE_NOTICE_RECOVER_WAL) SQL_CODE(SQLITE_NOTICE_RECOVER_ROLLBACK) SQL_CODE(SQLITE_WARNING_AUTOINDEX)
};
#undef SQL_CODE

/* " (SQLITE_IOERR_WRITE, errno 28: No space left on device)": the name of the connection's last
 * extended result code and, for the codes that come from a system call (I/O, open, full), the errno
 * SQLite saw (sqlite3_system_errno: SQLite >= 3.22; 0 = none, as for SQLITE_FULL from a short
 * write). "" when there is no error to describe. */
static void sql_detail(sqlite3 *h, char *buf, size_t cap) {
    buf[0] = '\0';
    if (!h) return;
    int ext = sqlite3_extended_errcode(h), prim = ext & 0xff;
    if (ext == SQLITE_OK || ext == SQLITE_ROW || ext == SQLITE_DONE) return;
    const char *name = NULL;
    for (size_t i = 0; i < sizeof kSqlCodes / sizeof *kSqlCodes && !name; i++)
        if (kSqlCodes[i].code == ext) name = kSqlCodes[i].name;
    char code[48];
    if (name) snprintf(code, sizeof code, "%s", name);
    else snprintf(code, sizeof code, "SQLite result code %d", ext);
    int sys = prim == SQLITE_IOERR || prim == SQLITE_CANTOPEN || prim == SQLITE_FULL ? sqlite3_system_errno(h) : 0;
    if (sys > 0) snprintf(buf, cap, " (%s, errno %d: %s)", code, sys, strerror(sys));
    else snprintf(buf, cap, " (%s)", code);
}

/* "PATH: WHAT: MESSAGE (CODE[, errno N: TEXT])" from the connection's last error. */
static int fail_sql(Db *db, SpErr *err, const char *what) {
    char detail[160];
    sql_detail(db->h, detail, sizeof detail);
    int ext = sqlite3_extended_errcode(db->h);
    const char *msg = ext == SQLITE_OK ? "unknown error" : sqlite3_errmsg(db->h);
    return sp_fail(err, "%s: %s: %s%s", db->path, what, msg, detail);
}

/* Runs sql (one or more statements); on error "PATH: [WHAT: ]MESSAGE (CODE...)". */
static int exec_what(Db *db, const char *sql, const char *what, SpErr *err) {
    char *msg = NULL;
    int rc = sqlite3_exec(db->h, sql, NULL, NULL, &msg);
    if (rc != SQLITE_OK) {
        char detail[160];
        sql_detail(db->h, detail, sizeof detail);
        sp_fail(err, "%s: %s%s%s%s", db->path, what ? what : "", what ? ": " : "", msg ? msg : sqlite3_errstr(rc),
                detail);
        sqlite3_free(msg);
        return -1;
    }
    return 0;
}

/* The same; a short single statement ("BEGIN IMMEDIATE", "COMMIT") names itself in the message. */
static int exec(Db *db, const char *sql, SpErr *err) {
    int short_one = strlen(sql) < 40 && !strpbrk(sql, ";\n");
    return exec_what(db, sql, short_one ? sql : NULL, err);
}

static int scalar_text(Db *db, const char *sql, char *buf, size_t cap, SpErr *err) {
    sqlite3_stmt *st;
    buf[0] = '\0';
    if (sqlite3_prepare_v2(db->h, sql, -1, &st, NULL) != SQLITE_OK) return fail_sql(db, err, "query");
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW && sqlite3_column_text(st, 0))
        snprintf(buf, cap, "%s", (const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    return (rc == SQLITE_ROW || rc == SQLITE_DONE) ? 0 : fail_sql(db, err, "query");
}

/* 1 if table `table` of schema `schema` ("main", "src") has column `col`, else 0. */
static int has_column(Db *db, const char *schema, const char *table, const char *col) {
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db->h, "SELECT 1 FROM pragma_table_info(?1, ?2) WHERE name = ?3", -1, &st, NULL) != SQLITE_OK)
        return 0;
    sqlite3_bind_text(st, 1, table, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, schema, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, col, -1, SQLITE_STATIC);
    int found = sqlite3_step(st) == SQLITE_ROW;
    sqlite3_finalize(st);
    return found;
}

/* upgrade 2 -> 3 (inside db_open's transaction): runs gains the nullable column oracle_stay. */
static int upgrade_to_v3(Db *db, SpErr *err) {
    if (!has_column(db, "main", "runs", "oracle_stay") && exec(db, "ALTER TABLE runs ADD COLUMN oracle_stay REAL", err))
        return -1;
    return exec(db, "UPDATE meta SET value = '3' WHERE key = 'schema_version' AND value = '2'", err);
}

/* upgrade 3 -> 4 (inside db_open's transaction): status may be 'failed', and runs gains the column
 * failure. SQLite cannot alter a CHECK constraint, so the table is rebuilt (SQLite's documented
 * procedure: new table, copy, drop, rename; legacy_alter_table keeps the rename from rewriting or
 * validating views, and run_totals is dropped and recreated around it). Every row is copied as it
 * is: a v3 file has only 'running' and 'done' runs, whose failure is NULL. */
static int upgrade_to_v4(Db *db, SpErr *err) {
    char ver[32];
    if (scalar_text(db, "SELECT value FROM meta WHERE key = 'schema_version'", ver, sizeof ver, err)) return -1;
    if (strcmp(ver, "3")) return 0;
    static const char kRebuild[] =
        "DROP VIEW IF EXISTS run_totals;\n"
        "DROP TABLE IF EXISTS runs_v4;\n"
        "CREATE TABLE runs_v4" RUNS_TABLE_BODY ";\n"
        "INSERT INTO runs_v4(" RUN_COLS_V3 ") SELECT " RUN_COLS_V3 " FROM runs;\n"
        "DROP TABLE runs;\n"
        "PRAGMA legacy_alter_table = ON;\n"
        "ALTER TABLE runs_v4 RENAME TO runs;\n"
        "PRAGMA legacy_alter_table = OFF;\n" RUN_TOTALS_VIEW
        "UPDATE meta SET value = '4' WHERE key = 'schema_version' AND value = '3';\n";
    if (exec_what(db, kRebuild, "cannot upgrade schema version 3 to 4 (the file is left as it was)", err)) {
        exec(db, "PRAGMA legacy_alter_table = OFF", NULL);
        return -1;
    }
    return 0;
}

/* The file's meta.schema_version before db_open touches it: "" for a new file (no meta table). */
static int stored_version(Db *db, char *ver, size_t cap, SpErr *err) {
    char name[16];
    ver[0] = '\0';
    if (scalar_text(db, "SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'meta'", name, sizeof name, err))
        return -1;
    if (!name[0]) return 0;
    return scalar_text(db, "SELECT value FROM meta WHERE key = 'schema_version'", ver, cap, err);
}

/* 1 if ver is a version db_open can read (upgrading it), else 0. */
static int version_readable(const char *ver) {
    char *end;
    long v = strtol(ver, &end, 10);
    return end != ver && *end == '\0' && v >= DB_SCHEMA_MIN && v <= DB_SCHEMA_VERSION;
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
    char ver[32], before[32] = "";
    /* WAL survives in the file; synchronous NORMAL is durable at each checkpoint under WAL. */
    int rc = exec_what(db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;", "set WAL mode", err) ||
             exec(db, "BEGIN IMMEDIATE", err) || stored_version(db, before, sizeof before, err);
    if (rc == 0 && before[0] && !version_readable(before)) {
        /* a newer sprinter's file (or not ours): refuse before writing anything */
        sp_fail(err, "%s: meta.schema_version is %s, this sprinter reads versions %d to %d%s", path, before,
                DB_SCHEMA_MIN, DB_SCHEMA_VERSION, atoi(before) > DB_SCHEMA_VERSION ? " (written by a newer sprinter)" : "");
        rc = -1;
    }
    if (rc || exec_what(db, kSchema, "create schema", err) ||
        exec(db, "INSERT OR IGNORE INTO meta VALUES('schema_version','" DB_SCHEMA_VERSION_STR "'),('format','sprinter-runs')",
             err) ||
        /* upgrade 1 -> 2: kSchema has just added the outputs table */
        exec(db, "UPDATE meta SET value = '2' WHERE key = 'schema_version' AND value = '1'", err) ||
        upgrade_to_v3(db, err) || upgrade_to_v4(db, err) || exec(db, "COMMIT", err) ||
        scalar_text(db, "SELECT value FROM meta WHERE key='schema_version'", ver, sizeof ver, err)) {
        exec(db, "ROLLBACK", NULL);
        db_close(db);
        return NULL;
    }
    if (atoi(ver) != DB_SCHEMA_VERSION) {
        sp_fail(err, "%s: meta.schema_version is %s, this sprinter reads versions %d to %d", path, ver, DB_SCHEMA_MIN,
                DB_SCHEMA_VERSION);
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
    if (sqlite3_prepare_v2(db->h, "SELECT status, failure FROM runs WHERE run_hash = ?", -1, &st, NULL) != SQLITE_OK)
        return fail_sql(db, err, "query runs");
    sqlite3_bind_text(st, 1, run_hash, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st), status = DB_RUN_NONE;
    if (rc == SQLITE_ROW) {
        const char *t = (const char *)sqlite3_column_text(st, 0);
        status = !t ? DB_RUN_RUNNING : !strcmp(t, "done") ? DB_RUN_DONE : !strcmp(t, "failed") ? DB_RUN_FAILED : DB_RUN_RUNNING;
        if (status == DB_RUN_FAILED && failure && cap && sqlite3_column_text(st, 1))
            snprintf(failure, cap, "%s", (const char *)sqlite3_column_text(st, 1));
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) return fail_sql(db, err, "query runs");
    return status;
}

static int exec_hash(Db *db, const char *sql, const char *hash, SpErr *err) {
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db->h, sql, -1, &st, NULL) != SQLITE_OK) return fail_sql(db, err, "prepare");
    sqlite3_bind_text(st, 1, hash, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : fail_sql(db, err, "delete");
}

static int delete_run(Db *db, const char *hash, SpErr *err) {
    return exec_hash(db, "DELETE FROM outputs WHERE run_hash = ?", hash, err) ||
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

static void bind_opt_text(sqlite3_stmt *st, int i, const char *s) {
    if (s && s[0]) sqlite3_bind_text(st, i, s, -1, SQLITE_TRANSIENT);
    else sqlite3_bind_null(st, i);
}


static int insert_run(Db *db, const SweepSpec *s, const RunConfig *r, const RunMeta *m, SpErr *err) {
    char sql[2048];
    int k = snprintf(sql, sizeof sql, "INSERT INTO runs(%s) VALUES(", kRunCols);
    for (int i = 0; i < N_RUN_COLS; i++) k += snprintf(sql + k, sizeof sql - (size_t)k, i ? ",?" : "?");
    snprintf(sql + k, sizeof sql - (size_t)k, ")");
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db->h, sql, -1, &st, NULL) != SQLITE_OK) return fail_sql(db, err, "prepare insert into runs");
    const DecodeConfig *c = &r->dc;
    int i = 1;
    sqlite3_bind_text(st, i++, r->hash, -1, SQLITE_STATIC);
    sqlite3_bind_int(st, i++, r->index);
    sqlite3_bind_text(st, i++, "running", -1, SQLITE_STATIC);
    sqlite3_bind_text(st, i++, decode_method_name(c->method), -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, i++, (sqlite3_int64)r->seed);
    sqlite3_bind_text(st, i++, s->datasets[r->dataset], -1, SQLITE_STATIC);
    sqlite3_bind_text(st, i++, s->data_sha256[r->dataset], -1, SQLITE_STATIC);
    sqlite3_bind_text(st, i++, s->data_format[0] ? s->data_format : "auto", -1, SQLITE_STATIC);
    sqlite3_bind_int(st, i++, s->prompt_offset);
    sqlite3_bind_int(st, i++, s->n_prompts);
    sqlite3_bind_int(st, i++, c->max_new);
    sqlite3_bind_double(st, i++, c->sampling.temperature);
    sqlite3_bind_int(st, i++, c->sampling.top_k);
    sqlite3_bind_double(st, i++, c->sampling.top_p);
    sqlite3_bind_int(st, i++, c->stop_at_eos);
    sqlite3_bind_int(st, i++, c->audit);
    /* gamma, tau, lambda, max_run, alpha, p_min, eta_fp, eta_tp: NULL where they do not apply */
    static const RunParam order[] = {RP_GAMMA, RP_TAU, RP_LAMBDA, RP_MAX_RUN, RP_ALPHA, RP_P_MIN, RP_ETA_FP, RP_ETA_TP};
    for (int j = 0; j < 8; j++, i++) {
        RunParam p = order[j];
        if (!(r->applies & (1u << p))) sqlite3_bind_null(st, i);
        else if (p == RP_GAMMA || p == RP_MAX_RUN) sqlite3_bind_int(st, i, (int)run_param_value(&r->dc, p));
        else sqlite3_bind_double(st, i, run_param_value(&r->dc, p));
    }
    int uses_draft = c->method != DM_AR, uses_target = c->method != DM_DRAFT;
    bind_opt_text(st, i++, uses_draft ? s->draft_dir : NULL);
    bind_opt_text(st, i++, uses_draft ? s->draft_sha256 : NULL);
    bind_opt_text(st, i++, uses_target ? s->target_dir : NULL);
    bind_opt_text(st, i++, uses_target ? s->target_sha256 : NULL);
    bind_opt_text(st, i++, m->verifier_path);
    bind_opt_text(st, i++, m->verifier_sha256);
    sqlite3_bind_text(st, i++, r->canon, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, i++, s->name, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, i++, s->path, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, i++, s->sha256, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, i++, m->git_commit ? m->git_commit : "unknown", -1, SQLITE_STATIC);
    bind_opt_text(st, i++, m->host);
    sqlite3_bind_text(st, i++, m->token_log, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, i++, m->started_at, -1, SQLITE_STATIC);
    sqlite3_bind_null(st, i++);
    if (r->applies & (1u << RP_ORACLE_STAY)) sqlite3_bind_double(st, i++, c->oracle_stay);
    else sqlite3_bind_null(st, i++);
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : fail_sql(db, err, "insert into runs");
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
    sqlite3_clear_bindings(st);
    int i = 1;
    sqlite3_bind_text(st, i++, hash, -1, SQLITE_STATIC);
    sqlite3_bind_int(st, i++, p->prompt_index);
    bind_opt_text(st, i++, p->example_id);
    sqlite3_bind_int(st, i++, p->n_prompt_tokens);
    sqlite3_bind_int(st, i++, p->truncated);
    sqlite3_bind_text(st, i++, seed, -1, SQLITE_TRANSIENT);
    const int64_t counts[] = {s->tokens,       s->target_forwards, s->target_tokens, s->draft_forwards, s->draft_tokens,
                              s->audit_forwards, s->audit_tokens,  s->verifier_evals, s->drafted,       s->accepted,
                              p->verifier_accepts, p->longest_run};
    for (size_t j = 0; j < sizeof counts / sizeof *counts; j++) sqlite3_bind_int64(st, i++, counts[j]);
    bind_ratio(st, i++, (double)s->accepted, (double)s->target_forwards);
    if (p->audited) {
        const int64_t a[] = {p->n_audited, p->pos, p->neg, p->tp, p->fp};
        for (int j = 0; j < 5; j++) sqlite3_bind_int64(st, i++, a[j]);
        bind_ratio(st, i++, (double)p->fp, (double)p->neg);
        bind_ratio(st, i++, (double)p->tp, (double)p->pos);
    } else {
        for (int j = 0; j < 7; j++) sqlite3_bind_null(st, i++);
    }
    const double t[] = {s->t_total, s->t_draft, s->t_target, s->t_verifier, s->t_audit,
                        s->flops_draft, s->flops_target, s->flops_verifier};
    for (int j = 0; j < 8; j++) sqlite3_bind_double(st, i++, t[j]);
    bind_opt_text(st, i++, p->output_text);
    for (int j = 0; j < 4; j++) sqlite3_bind_null(st, i++); /* quality: filled by the analysis */
    return sqlite3_step(st) == SQLITE_DONE ? 0 : fail_sql(db, err, "insert into prompts");
}

int db_run_finish(Db *db, const char *run_hash, const PromptRow *rows, int n, const char *finished_at, SpErr *err) {
    char sql[2048];
    int k = snprintf(sql, sizeof sql, "INSERT INTO prompts(%s) VALUES(", kPromptCols);
    for (int i = 0; i < N_PROMPT_COLS; i++) k += snprintf(sql + k, sizeof sql - (size_t)k, i ? ",?" : "?");
    snprintf(sql + k, sizeof sql - (size_t)k, ")");
    sqlite3_stmt *st = NULL, *up = NULL;
    if (exec(db, "BEGIN IMMEDIATE", err)) return -1;
    int rc = 0;
    if (sqlite3_prepare_v2(db->h, sql, -1, &st, NULL) != SQLITE_OK) rc = fail_sql(db, err, "prepare insert into prompts");
    for (int i = 0; rc == 0 && i < n; i++) rc = insert_prompt(db, st, run_hash, &rows[i], err);
    if (rc == 0) {
        if (sqlite3_prepare_v2(db->h, "UPDATE runs SET status = 'done', finished_at = ? WHERE run_hash = ?", -1, &up,
                               NULL) != SQLITE_OK) {
            rc = fail_sql(db, err, "prepare update of runs");
        } else {
            sqlite3_bind_text(up, 1, finished_at, -1, SQLITE_STATIC);
            sqlite3_bind_text(up, 2, run_hash, -1, SQLITE_STATIC);
            if (sqlite3_step(up) != SQLITE_DONE) rc = fail_sql(db, err, "mark run done");
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
        rc = fail_sql(db, err, "prepare update of runs");
    if (rc == 0) {
        sqlite3_bind_text(up, 1, reason && reason[0] ? reason : "unknown", -1, SQLITE_STATIC);
        sqlite3_bind_text(up, 2, finished_at, -1, SQLITE_STATIC);
        sqlite3_bind_text(up, 3, run_hash, -1, SQLITE_STATIC);
        if (sqlite3_step(up) != SQLITE_DONE) rc = fail_sql(db, err, "mark run failed");
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
    const char *sql = "SELECT (SELECT COUNT(*) FROM runs WHERE status='done'), "
                      "(SELECT COUNT(*) FROM runs WHERE status='failed'), "
                      "(SELECT COALESCE(SUM(p.tokens),0) FROM prompts p JOIN runs r ON r.run_hash = p.run_hash "
                      "WHERE r.status='done')";
    if (sqlite3_prepare_v2(db->h, sql, -1, &st, NULL) != SQLITE_OK) return fail_sql(db, err, "query progress");
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        *runs_done = sqlite3_column_int64(st, 0);
        if (runs_failed) *runs_failed = sqlite3_column_int64(st, 1);
        *tokens = sqlite3_column_int64(st, 2);
    }
    sqlite3_finalize(st);
    return rc == SQLITE_ROW ? 0 : fail_sql(db, err, "query progress");
}

/* ------------------------------------------------------------------ merge */

static int attach(Db *db, const char *src, SpErr *err) {
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db->h, "ATTACH DATABASE ? AS src", -1, &st, NULL) != SQLITE_OK)
        return fail_sql(db, err, "attach");
    sqlite3_bind_text(st, 1, src, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) return sp_fail(err, "%s: cannot attach: %s", src, sqlite3_errmsg(db->h));
    char ver[32];
    if (scalar_text(db, "SELECT value FROM src.meta WHERE key='schema_version'", ver, sizeof ver, err) ||
        atoi(ver) < DB_SCHEMA_MIN || atoi(ver) > DB_SCHEMA_VERSION) {
        exec(db, "DETACH DATABASE src", NULL);
        return sp_fail(err, "%s: not a sprinter results database of schema version %d to %d", src, DB_SCHEMA_MIN,
                       DB_SCHEMA_VERSION);
    }
    return 0;
}

/* 1 if the attached source database has an outputs table (schema v2), else 0. */
static int src_has_outputs(Db *db) {
    char name[32];
    return scalar_text(db, "SELECT name FROM src.sqlite_master WHERE type = 'table' AND name = 'outputs'", name,
                       sizeof name, NULL) == 0 &&
           name[0] != '\0';
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

void db_merge_plan_free(MergePlan *p) {
    for (int i = 0; i < p->n; i++) free(p->hashes[i]);
    free(p->hashes);
    memset(p, 0, sizeof *p);
}

int db_merge_plan(Db *dst, const char *src_path, MergePlan *p, SpErr *err) {
    memset(p, 0, sizeof *p);
    if (attach(dst, src_path, err)) return -1;
    sqlite3_stmt *st;
    const char *sql = "SELECT s.run_hash, s.status, (SELECT status FROM main.runs m WHERE m.run_hash = s.run_hash) "
                      "FROM src.runs s ORDER BY s.run_index, s.run_hash";
    char **failed = NULL;
    int n_failed = 0, cap = 0, cap_f = 0, rc = 0;
    if (sqlite3_prepare_v2(dst->h, sql, -1, &st, NULL) != SQLITE_OK) {
        rc = fail_sql(dst, err, "read source runs");
    } else {
        for (int s; rc == 0 && (s = sqlite3_step(st)) != SQLITE_DONE;) {
            if (s != SQLITE_ROW) {
                rc = fail_sql(dst, err, "read source runs");
                break;
            }
            const char *h = (const char *)sqlite3_column_text(st, 0), *status = (const char *)sqlite3_column_text(st, 1);
            const char *mine = (const char *)sqlite3_column_text(st, 2);
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
    char sql_r[2048], sql_p[2048];
    /* a source of schema version < 3 has no oracle_stay, one < 4 no failure: NULL is copied for them */
    snprintf(sql_r, sizeof sql_r, "INSERT INTO main.runs(%s) SELECT %s, %s, %s FROM src.runs WHERE run_hash = ?", kRunCols,
             RUN_COLS_V1, has_column(dst, "src", "runs", "oracle_stay") ? "oracle_stay" : "NULL",
             has_column(dst, "src", "runs", "failure") ? "failure" : "NULL");
    snprintf(sql_p, sizeof sql_p, "INSERT INTO main.prompts(%s) SELECT %s FROM src.prompts WHERE run_hash = ?",
             kPromptCols, kPromptCols);
    char sql_o[1024];
    snprintf(sql_o, sizeof sql_o, "INSERT INTO main.outputs(%s) SELECT %s FROM src.outputs WHERE run_hash = ?",
             kOutputCols, kOutputCols);
    int n_stmt = src_has_outputs(dst) ? 3 : 2; /* a version-1 source has no outputs */
    sqlite3_stmt *stmts[3] = {NULL, NULL, NULL};
    int rc = exec(dst, "BEGIN IMMEDIATE", err);
    const char *sqls[3] = {sql_r, sql_p, sql_o};
    for (int j = 0; rc == 0 && j < n_stmt; j++)
        if (sqlite3_prepare_v2(dst->h, sqls[j], -1, &stmts[j], NULL) != SQLITE_OK) rc = fail_sql(dst, err, "prepare merge");
    for (int i = 0; rc == 0 && i < n; i++) {
        if (delete_run(dst, hashes[i], err)) {
            rc = -1;
            break;
        }
        for (int j = 0; rc == 0 && j < n_stmt; j++) {
            sqlite3_reset(stmts[j]);
            sqlite3_bind_text(stmts[j], 1, hashes[i], -1, SQLITE_STATIC);
            if (sqlite3_step(stmts[j]) != SQLITE_DONE) rc = fail_sql(dst, err, "merge rows");
        }
    }
    for (int j = 0; j < 3; j++) sqlite3_finalize(stmts[j]);
    if (rc == 0) rc = exec(dst, "COMMIT", err);
    else exec(dst, "ROLLBACK", NULL);
    exec(dst, "DETACH DATABASE src", NULL);
    return rc;
}

/* ------------------------------------------------------------------ summary */

typedef struct SumRow {
    char method[32], label[160], dataset[256];
    int64_t runs, tokens, calls, accepted, neg, fp, pos, tp;
    double t_total, t_audit;
} SumRow;

static const char *base(const char *p) {
    const char *b = strrchr(p, '/');
    return b ? b + 1 : p;
}

static void fmt_ratio(char *buf, size_t cap, double num, double den, const char *fmt) {
    if (den > 0) snprintf(buf, cap, fmt, num / den);
    else snprintf(buf, cap, "-");
}

/* "lambda=1.5 tau=0.3 ..." from the 8 parameter columns starting at column `first` (lambda, tau, gamma,
 * max_run, alpha, p_min, eta_fp, eta_tp; NULL ones left out) and oracle_stay at column `stay`. */
static void label_from(sqlite3_stmt *st, int first, int stay, char *buf, size_t cap) {
    static const char *const names[] = {"lambda", "tau", "gamma", "max_run", "alpha", "p_min", "eta_fp", "eta_tp"};
    size_t k = 0;
    buf[0] = '\0';
    for (int j = 0; j < 8; j++) {
        if (sqlite3_column_type(st, first + j) == SQLITE_NULL) continue;
        int w = snprintf(buf + k, cap - k, "%s%s=%g", k ? " " : "", names[j], sqlite3_column_double(st, first + j));
        if (w > 0 && (size_t)w < cap - k) k += (size_t)w;
    }
    if (sqlite3_column_type(st, stay) != SQLITE_NULL && k < cap) /* oracle-markov */
        snprintf(buf + k, cap - k, "%soracle_stay=%g", k ? " " : "", sqlite3_column_double(st, stay));
}

static int summary_rows(Db *db, int by_method, SumRow **rows, int *n, int *n_datasets, SpErr *err) {
    const char *group = by_method ? "r.method" : "r.method, r.dataset, r.lambda, r.tau, r.gamma, r.max_run, r.alpha, "
                                                 "r.p_min, r.eta_fp, r.eta_tp, r.oracle_stay";
    char sql[2048];
    snprintf(sql, sizeof sql,
             "SELECT r.method, MIN(r.dataset), r.lambda, r.tau, r.gamma, r.max_run, r.alpha, r.p_min, r.eta_fp, r.eta_tp,"
             " COUNT(DISTINCT r.run_hash), SUM(p.tokens), SUM(p.t_total), SUM(p.target_calls), SUM(p.accepted),"
             " SUM(p.audited_neg), SUM(p.fp), SUM(p.audited_pos), SUM(p.tp), SUM(p.t_audit),"
             " (SELECT COUNT(DISTINCT dataset) FROM runs WHERE status = 'done'), r.oracle_stay"
             " FROM runs r JOIN prompts p ON p.run_hash = r.run_hash WHERE r.status = 'done'"
             " GROUP BY %s ORDER BY MIN(r.run_index), %s",
             group, group);
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db->h, sql, -1, &st, NULL) != SQLITE_OK) return fail_sql(db, err, "summary query");
    int cap = 0, rc = 0;
    *rows = NULL;
    *n = 0;
    *n_datasets = 1;
    for (int s; (s = sqlite3_step(st)) != SQLITE_DONE;) {
        if (s != SQLITE_ROW) {
            rc = fail_sql(db, err, "summary query");
            break;
        }
        if (*n == cap) {
            SumRow *nr = realloc(*rows, (size_t)(cap = cap ? cap * 2 : 32) * sizeof *nr);
            if (!nr) {
                rc = sp_fail(err, "out of memory");
                break;
            }
            *rows = nr;
        }
        SumRow *r = &(*rows)[(*n)++];
        memset(r, 0, sizeof *r);
        snprintf(r->method, sizeof r->method, "%s", (const char *)sqlite3_column_text(st, 0));
        snprintf(r->dataset, sizeof r->dataset, "%s", base((const char *)sqlite3_column_text(st, 1)));
        if (!by_method) label_from(st, 2, 21, r->label, sizeof r->label);
        r->runs = sqlite3_column_int64(st, 10);
        r->tokens = sqlite3_column_int64(st, 11);
        r->t_total = sqlite3_column_double(st, 12);
        r->calls = sqlite3_column_int64(st, 13);
        r->accepted = sqlite3_column_int64(st, 14);
        r->neg = sqlite3_column_int64(st, 15);
        r->fp = sqlite3_column_int64(st, 16);
        r->pos = sqlite3_column_int64(st, 17);
        r->tp = sqlite3_column_int64(st, 18);
        r->t_audit = sqlite3_column_double(st, 19);
        *n_datasets = sqlite3_column_int(st, 20);
    }
    sqlite3_finalize(st);
    return rc;
}

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
        sqlite3_stmt *st;
        if (sqlite3_prepare_v2(db->h,
                               "SELECT run_hash, method, lambda, tau, gamma, max_run, alpha, p_min, eta_fp, eta_tp, "
                               "oracle_stay, seed, failure FROM runs WHERE status = 'failed' ORDER BY run_index, run_hash",
                               -1, &st, NULL) != SQLITE_OK)
            return fail_sql(db, err, "query failed runs");
        int shown = 0, s;
        while (shown < SUMMARY_MAX_FAILED && (s = sqlite3_step(st)) == SQLITE_ROW) {
            char label[200];
            label_from(st, 2, 10, label, sizeof label);
            const char *reason = (const char *)sqlite3_column_text(st, 12);
            fprintf(out, "  %.12s %s%s%s seed=%lld: %s\n", (const char *)sqlite3_column_text(st, 0),
                    (const char *)sqlite3_column_text(st, 1), label[0] ? " " : "", label,
                    (long long)sqlite3_column_int64(st, 11), reason ? reason : "?");
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

int db_summary(Db *db, FILE *out, int by_method, SpErr *err) {
    SumRow *rows = NULL;
    int n = 0, n_ds = 1;
    if (summary_rows(db, by_method, &rows, &n, &n_ds, err)) {
        free(rows);
        return -1;
    }
    int show_ds = n_ds > 1 && !by_method, wl = 6;
    for (int i = 0; i < n; i++) {
        int l = (int)strlen(rows[i].label) + (show_ds ? (int)strlen(rows[i].dataset) + 1 : 0);
        if (l > wl) wl = l;
    }
    fprintf(out, "%-11s %-*s %5s %8s %9s %8s %9s %8s %7s %7s %8s\n", "method", wl, show_ds ? "data params" : "params",
            "runs", "tokens", "tok/s", "speedup", "calls/tok", "mean_run", "eta_FP", "eta_TP", "audit_s");
    for (int i = 0; i < n; i++) {
        const SumRow *r = &rows[i];
        double ar_rate = 0;
        for (int j = 0; j < n; j++)
            if (!strcmp(rows[j].method, "ar") && (!show_ds || !strcmp(rows[j].dataset, r->dataset)) && rows[j].t_total > 0)
                ar_rate = (double)rows[j].tokens / rows[j].t_total;
        char lab[512], rate[32], sp[32], cpt[32], run[32], efp[32], etp[32];
        snprintf(lab, sizeof lab, "%s%s%s", show_ds ? r->dataset : "", show_ds && r->label[0] ? " " : "", r->label);
        fmt_ratio(rate, sizeof rate, (double)r->tokens, r->t_total, "%.1f");
        fmt_ratio(sp, sizeof sp, ar_rate > 0 && r->t_total > 0 ? (double)r->tokens / r->t_total : 0, ar_rate, "%.2fx");
        fmt_ratio(cpt, sizeof cpt, (double)r->calls, (double)r->tokens, "%.3f");
        fmt_ratio(run, sizeof run, (double)r->accepted, (double)r->calls, "%.2f");
        fmt_ratio(efp, sizeof efp, (double)r->fp, (double)r->neg, "%.3f");
        fmt_ratio(etp, sizeof etp, (double)r->tp, (double)r->pos, "%.3f");
        fprintf(out, "%-11s %-*s %5lld %8lld %9s %8s %9s %8s %7s %7s %8.2f\n", r->method, wl, lab[0] ? lab : "-",
                (long long)r->runs, (long long)r->tokens, rate, sp, cpt, run, efp, etp, r->t_audit);
    }
    if (n == 0) fprintf(out, "(no finished runs)\n");
    free(rows);
    return summary_not_done(db, out, err);
}

int db_unfinished(Db *db, char *buf, size_t cap, SpErr *err) {
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db->h, "SELECT run_hash FROM runs WHERE status = 'running' ORDER BY run_index", -1, &st, NULL) !=
        SQLITE_OK)
        return fail_sql(db, err, "query unfinished runs");
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
