/* db.h - the sweep's writes to its results database, results/X/runs.sqlite: runs as they start,
 * finish or fail, merging shards, and the summary table. What the tables and columns are, the
 * schema version and the upgrades of older files are defined once in records/schema.h (documented
 * in results/README.md, which a test checks against it); this file only writes rows.
 *
 * The file is in WAL mode with a busy timeout, so several processes (--jobs, shards on one
 * filesystem) can write; each finished run is one transaction (db_run_finish). A Db is one
 * connection: use it from one thread, and never across fork() (open a new one in the child).
 */
#ifndef SP_DB_H
#define SP_DB_H

#include <stdint.h>
#include <stdio.h>

#include "decoding.h"
#include "error.h"
#include "schema.h"
#include "spec.h"

typedef struct Db Db;

/* Opens (creating the schema if the file is new, upgrading an older version) and checks
 * schema_version. SQLite errors here and in every function below read "PATH: [WHAT: ]MESSAGE (CODE)"
 * with SQLite's extended result code, plus the errno for I/O failures:
 * "OUT/runs.sqlite: COMMIT: disk I/O error (SQLITE_IOERR_FSYNC, errno 28: No space left on device)". */
Db *db_open(const char *path, SpErr *err);
/* Opens an existing file for reading only (read-only media work: records/sqlutil.h sql_open_read)
 * when its schema is this sprinter's; NULL otherwise. *older = 1 (NULL, err not set) when it is an
 * older schema that db_open would upgrade first (its files are then no longer the command's inputs:
 * records/sqlutil.h sql_forget_inputs). For the read-only commands (summary). */
Db *db_open_read(const char *path, int *older, SpErr *err);
void db_close(Db *db);
/* The connection itself, for a module that owns its own table's queries (score.c: outputs).
 * Borrowed: valid until db_close. */
struct sqlite3 *db_sqlite(Db *db);

/* Provenance of one run that is not part of its configuration. Strings are borrowed. */
typedef struct RunMeta {
    const char *verifier_path, *verifier_sha256; /* NULL when the method uses no verifier */
    const char *git_commit, *host;
    const char *token_log;  /* relative to the results directory: tokens/RUNHASH.h5 */
    const char *started_at; /* ISO 8601 UTC */
} RunMeta;

/* One (run, prompt) result. */
typedef struct PromptRow {
    int prompt_index;       /* in the dataset file, offset included */
    const char *example_id; /* borrowed */
    const char *category;   /* borrowed; NULL or "" = none */
    int turn;               /* 0-based turn of the example's conversation */
    int n_prompt_tokens, truncated;
    uint64_t rng_seed;
    DecodeStats st;
    int64_t verifier_accepts; /* tokens emitted on the verifier's word alone */
    int64_t longest_run;      /* most consecutive verifier accepts */
    int audited;              /* the counts below are valid (audit on and decisions made) */
    int64_t n_audited, pos, neg, tp, fp; /* decisions with a known label; acceptable, not; accepted of each */
    char *output_text;        /* owned by the caller; NULL when there is no tokenizer */
} PromptRow;

/* A run's status: no row, 'running', 'done', 'failed'. */
enum { DB_RUN_NONE = 0, DB_RUN_RUNNING = 1, DB_RUN_DONE = 2, DB_RUN_FAILED = 3 };
/* The run's DB_RUN_* status, -1 on error; a failed run's reason goes to failure[cap] (if non-NULL). */
int db_run_status(Db *db, const char *run_hash, char *failure, size_t cap, SpErr *err);
/* The tokens a done run's prompt rows say it emitted (what its token log must hold), -1 on error. */
int64_t db_run_tokens(Db *db, const char *run_hash, SpErr *err);
/* The same over its prompt rows with prompt_index < below_index. */
int64_t db_run_tokens_first(Db *db, const char *run_hash, int below_index, SpErr *err);
/* Deletes the run's row and its prompt (and outputs) rows (an unfinished run about to be redone, or a
 * failed one retried). */
int db_run_reset(Db *db, const char *run_hash, SpErr *err);
/* One transaction: replaces the run's row with status 'running' and deletes its prompt rows. */
int db_run_begin(Db *db, const SweepSpec *s, const RunConfig *r, const RunMeta *m, SpErr *err);
/* How a run was executed: batch prompts together, tokens over seconds of their batches' wall time. */
typedef struct RunThroughput {
    int batch;
    int64_t tokens;
    double seconds;
} RunThroughput;
/* One transaction: inserts the prompt rows and marks the run done with finished_at and its committed
 * token log's content digest (runs.token_log_fnv1a64, records/tokenlog.h TokenLog.content_hash); tp: a
 * batched run's runs.exec_batch and tokens_per_s_batched (NULL: a run of one prompt at a time,
 * exec_batch 1). */
int db_run_finish(Db *db, const char *run_hash, const PromptRow *rows, int n, const RunThroughput *tp,
                  const char *finished_at, const char *token_log_fnv1a64, SpErr *err);
/* One transaction: marks the 'running' run failed with the one-line reason and finished_at, and
 * deletes its prompt and outputs rows (a failed run keeps no partial results). */
int db_run_fail(Db *db, const char *run_hash, const char *reason, const char *finished_at, SpErr *err);

/* Numbers of done and failed runs (runs_failed may be NULL) and the done runs' emitted tokens (for
 * progress across worker processes). */
int db_progress(Db *db, int64_t *runs_done, int64_t *runs_failed, int64_t *tokens, SpErr *err);
/* Hashes of runs begun but not finished (status 'running'), comma-separated into buf. */
int db_unfinished(Db *db, char *buf, size_t cap, SpErr *err);

/* ---- timings: runs timed alone ([timing] of the spec; records/schema.h TIMINGS_COLUMNS) ---- */
/* 1 when the (run, rep) row exists, 0 when not, -1 on error. */
int db_timing_have(Db *db, const char *run_hash, int rep, SpErr *err);
/* Writes the (run, rep) row from the statistics of its decodes (summed over n_prompts prompts). */
int db_timing_add(Db *db, const char *run_hash, int rep, int n_prompts, const DecodeStats *st, const char *host,
                  SpErr *err);

/* ---- the grid a directory was swept from (meta keys 'grid' and 'shard') ---- */
/* Records, in one transaction, the spec's expanded grid: the hashes of runs[0..n) in run_index order
 * separated by ',' (meta key 'grid'), and the shard this directory holds, "I/N" (key 'shard'; "0/1"
 * unsharded). Every sweep writes them again; merge reads them to count the runs missing from the
 * shards. */
int db_set_grid(Db *db, const RunConfig *runs, int n, int shard_i, int shard_n, SpErr *err);
/* Sets meta key 'grid' to grid; NULL deletes it. */
int db_set_grid_text(Db *db, const char *grid, SpErr *err);

/* ---- merging ---- */
typedef struct MergeCounts {
    int runs_added;  /* done runs copied */
    int failed_added; /* failed runs copied (their rows only: a failed run has no prompts or token log) */
    int duplicates;  /* runs dst already had with the same status */
    int unfinished;  /* runs left out: 'running' in the source */
    int failed_superseded; /* runs left out: failed in the source, done in dst */
} MergeCounts;
/* What to copy from the database at src_path into dst: a done run replaces anything but a done
 * run (so a done run anywhere wins); a failed run is copied where dst has no row or a 'running'
 * one, never over a done run. hashes[0..n_done) are done runs, hashes[n_done..n) failed ones, in
 * the source's run order; the rest is counted. */
typedef struct MergePlan {
    char **hashes; /* malloc'd array of malloc'd strings */
    int n, n_done;
    int duplicates, unfinished, failed_superseded;
    char *grid;     /* the source's meta 'grid' (malloc'd); NULL when it records none (older sprinters) */
    char shard[32]; /* the source's meta 'shard' ("I/N"); "" when none */
} MergePlan;
int db_merge_plan(Db *dst, const char *src_path, MergePlan *plan, SpErr *err);
/* The source database's meta 'grid' (malloc'd into *grid; NULL when none), or *empty = 1 when the
 * database holds no tables at all (a sweep that failed as it created it, e.g. on a full disk). */
int db_source_grid(Db *dst, const char *src_path, char **grid, int *empty, SpErr *err);
/* db's own meta 'grid' (malloc'd; NULL when none). */
int db_grid(Db *db, char **grid, SpErr *err);
void db_merge_plan_free(MergePlan *plan);
/* One transaction: replaces dst's rows of hashes[0..n) by the source's runs and prompt rows (and
 * outputs and timings rows, when the source has the tables). */
int db_merge_rows(Db *dst, const char *src_path, char *const *hashes, int n, SpErr *err);

/* ---- reporting ---- */
/* Prints the summary table (per method and parameter setting, summed over seeds and prompts, or
 * per method only when by_method): runs, tokens, tokens/s, speed-up over ar, tokens per target call,
 * the acceptance figures of records/metrics.h (alpha with its Wilson interval, accepted / drafted),
 * eta_FP and eta_TP, of the done runs; then the number of failed runs with each one's reason (the
 * first 50) and the number of unfinished runs, when there are any. tsv: the same rows as
 * tab-separated columns (every parameter and figure its own column, NaN where none) and nothing else. */
int db_summary(Db *db, FILE *out, int by_method, int tsv, SpErr *err);
/* Spec-Bench's task table (records/metrics.h): per configuration (method, parameters, data,
 * temperature; seeds pooled) and task group, the speedup over the ar configuration on the same data
 * and temperature and the mean accepted tokens; tsv: one line per (configuration, group). */
int db_summary_tasks(Db *db, FILE *out, int tsv, SpErr *err);
/* One line when prompts of the first configuration were truncated to the context: how many turns
 * per Spec-Bench task group (overall for any data); nothing otherwise. */
int db_truncation_note(Db *db, FILE *out, SpErr *err);
/* The same per category (prompts.category; each category of the data once, in its order). */
int db_summary_categories(Db *db, FILE *out, int tsv, SpErr *err);

/* Current time as ISO 8601 UTC with milliseconds: buf of at least 32 bytes. */
void db_now_iso(char *buf, size_t cap);

#endif
