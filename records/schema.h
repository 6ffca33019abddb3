/* schema.h - the results database (RESULTS/runs.sqlite), defined once: its tables and columns, the
 * schema version and the in-place upgrades from every older version. The sweep's writer
 * (experiments/db.c), `sprinter score` (experiments/score.c), merge and the analysis's reader
 * (analysis/runsdb.c) all build their SQL from these tables and read result columns by the enums
 * below, never by a bare index. The documentation (results/README.md) is checked against these
 * tables by a test (tests/check_schema_doc.py).
 *
 * Schema versions:
 *   1  meta, runs, prompts, run_totals (the sweep runner)
 *   2  + table outputs (sprinter score)
 *   3  + runs.oracle_stay (REAL, NULL except for oracle-markov runs)
 *   4  + runs.status 'failed' and runs.failure (TEXT; CHECK: set exactly when status is 'failed')
 *   5  - prompts.quality_ppl, quality_rouge_l, quality_bleu, quality_json (never written: the
 *        quality figures live in outputs and in the report); + prompts.rejected (draft tokens the
 *        target checked and rejected: the per-token acceptance rate, records/metrics.h, needs it;
 *        NULL in rows of older files)
 *   6  + runs.bonus, runs.finish_round (the round structure of sprinter-type runs, issue 14; NULL for
 *        other methods and in rows of older files, where it was 0), runs.label_rule ('sound' or
 *        'paper-code' for sprinter-type runs, else NULL); + prompts.rounds and
 *        prompts.round_kept (the authors' "avg tokens" per prompt = round_kept / rounds)
 *   7  + runs.prompt_template ('none', 'vicuna' or 'chat_template'; NULL in rows of older files, where it was none);
 *        + prompts.category (Spec-Bench's category, or the jsonl "category"; NULL when the data has
 *        none) and prompts.turn (0-based turn of the example's conversation; NULL in older files,
 *        where it was 0) (issue 15)
 *   8  + runs.typical_eps, typical_alpha, fsd_divergence, fsd_threshold, lossy_kl (the parameters of the
 *        lossy block methods typical, fsd, optimal-lossy; NULL for other methods and in older rows); + table timings (runs timed alone: [timing]
 *        reps, prompts; one row per run and repetition)
 *      + runs.tau_judge, runs.judge_rho (the judge method's threshold and label; NULL for other methods)
 *   9  + runs.exec_batch (prompts decoded together: [decode] batch; NULL in older rows, where it was 1) and
 *        runs.tokens_per_s_batched (a batched run's throughput: its tokens over the wall time of its
 *        batches; NULL when exec_batch is 1: such a run's speed is its prompts' timings); a batched
 *        run's prompts.t_* are 0 (a prompt's share of a batch is not a latency)
 *  10  + runs.token_log_fnv1a64 (the token log's content digest, its root attribute content_fnv1a64,
 *        stored when the run is committed: every reader of the log checks the file against it; NULL
 *        in rows of older files and for failed runs)
 * Adding a column: its line at the END of the table's X-macro (ALTER TABLE appends, so a new and an
 * upgraded file then have the same column order) with the version that adds it (nullable, no
 * constraint: the upgrade adds it by ALTER TABLE), DB_SCHEMA_VERSION + 1, the README row. A grid
 * parameter's column is not written here: its row in engine/decode/params_table.h (RUN_PARAMS_ADDED)
 * makes it, at the end of runs, with the row's version.
 */
#ifndef SP_SCHEMA_H
#define SP_SCHEMA_H

#include <sqlite3.h>
#include <stddef.h>

#include "error.h"
#include "params.h"

#define DB_SCHEMA_VERSION 10
/* Every grid parameter's column exists in the current schema (a new row of params_table.h names the
 * version that adds its column: DB_SCHEMA_VERSION must be raised to it). */
#define RP_SINCE_CHECK_(ID, name, type, dflt, lo, hi, flags, methods, since) \
    _Static_assert((since) >= 1 && (since) <= DB_SCHEMA_VERSION, "params_table.h: " #name "'s schema version is above DB_SCHEMA_VERSION");
RUN_PARAMS(RP_SINCE_CHECK_)
#undef RP_SINCE_CHECK_
#define DB_SCHEMA_MIN 1
#define DB_FORMAT "sprinter-runs"

/* One column: name, SQL declaration, the version that added it and the one that removed it
 * (0: still there), and the grid parameter it stores (-1: none). */
typedef struct DbColumn {
    const char *name, *decl;
    int since, until, param;
} DbColumn;

typedef struct DbTable {
    const char *name;
    const DbColumn *cols;
    int n_cols;
    const char *constraints; /* table constraints after the columns ("" if none) */
    int since;
} DbTable;

#define NOPARAM (-1)
/* A grid parameter's row of params_table.h as a runs column. */
#define RUNS_PARAM_COLUMN_(X, ID, name, type, dflt, lo, hi, flags, methods, since) \
    X(name, RP_SQL_##type, since, 0, RP_##ID)
/* X(name, declaration, since, until, grid parameter) in table order. The grid parameters' columns of
 * schemas 1 to 7 (gamma .. eta_tp, oracle_stay, bonus, finish_round) are listed by hand in the places
 * those schemas gave them; every parameter added since comes from params_table.h RUN_PARAMS_ADDED,
 * expanded at the end. A test (test_spec) checks that each grid parameter has exactly one column, of
 * its row's type and schema version, and that `since` never decreases along a table (a column added
 * after a new parameter goes after that expansion). */
#define RUNS_COLUMNS(X)                                                                                       \
    X(run_hash, "TEXT PRIMARY KEY", 1, 0, NOPARAM)                                                            \
    X(run_index, "INTEGER NOT NULL", 1, 0, NOPARAM)                                                           \
    X(status, "TEXT NOT NULL CHECK(status IN ('running','done','failed'))", 1, 0, NOPARAM)                    \
    X(method, "TEXT NOT NULL", 1, 0, NOPARAM)                                                                 \
    X(seed, "INTEGER NOT NULL", 1, 0, NOPARAM)                                                                \
    X(dataset, "TEXT NOT NULL", 1, 0, NOPARAM)                                                                \
    X(dataset_sha256, "TEXT NOT NULL", 1, 0, NOPARAM)                                                         \
    X(data_format, "TEXT NOT NULL", 1, 0, NOPARAM)                                                            \
    X(prompt_offset, "INTEGER NOT NULL", 1, 0, NOPARAM)                                                       \
    X(n_prompts, "INTEGER NOT NULL", 1, 0, NOPARAM)                                                           \
    X(max_new, "INTEGER NOT NULL", 1, 0, NOPARAM)                                                             \
    X(temperature, "REAL NOT NULL", 1, 0, NOPARAM)                                                            \
    X(top_k, "INTEGER NOT NULL", 1, 0, NOPARAM)                                                               \
    X(top_p, "REAL NOT NULL", 1, 0, NOPARAM)                                                                  \
    X(stop_at_eos, "INTEGER NOT NULL", 1, 0, NOPARAM)                                                         \
    X(audit, "INTEGER NOT NULL", 1, 0, NOPARAM)                                                               \
    X(gamma, "INTEGER", 1, 0, RP_GAMMA)                                                                       \
    X(tau, "REAL", 1, 0, RP_TAU)                                                                              \
    X(lambda, "REAL", 1, 0, RP_LAMBDA)                                                                        \
    X(max_run, "INTEGER", 1, 0, RP_MAX_RUN)                                                                   \
    X(alpha, "REAL", 1, 0, RP_ALPHA)                                                                          \
    X(p_min, "REAL", 1, 0, RP_P_MIN)                                                                          \
    X(eta_fp, "REAL", 1, 0, RP_ETA_FP)                                                                        \
    X(eta_tp, "REAL", 1, 0, RP_ETA_TP)                                                                        \
    X(draft_dir, "TEXT", 1, 0, NOPARAM)                                                                       \
    X(draft_sha256, "TEXT", 1, 0, NOPARAM)                                                                    \
    X(target_dir, "TEXT", 1, 0, NOPARAM)                                                                      \
    X(target_sha256, "TEXT", 1, 0, NOPARAM)                                                                   \
    X(verifier_path, "TEXT", 1, 0, NOPARAM)                                                                   \
    X(verifier_sha256, "TEXT", 1, 0, NOPARAM)                                                                 \
    X(config, "TEXT NOT NULL", 1, 0, NOPARAM)                                                                 \
    X(spec_name, "TEXT NOT NULL", 1, 0, NOPARAM)                                                              \
    X(spec_path, "TEXT NOT NULL", 1, 0, NOPARAM)                                                              \
    X(spec_sha256, "TEXT NOT NULL", 1, 0, NOPARAM)                                                            \
    X(git_commit, "TEXT NOT NULL", 1, 0, NOPARAM)                                                             \
    X(host, "TEXT", 1, 0, NOPARAM)                                                                            \
    X(token_log, "TEXT NOT NULL", 1, 0, NOPARAM)                                                              \
    X(started_at, "TEXT NOT NULL", 1, 0, NOPARAM)                                                             \
    X(finished_at, "TEXT", 1, 0, NOPARAM)                                                                     \
    X(oracle_stay, "REAL", 3, 0, RP_ORACLE_STAY)                                                              \
    X(failure, "TEXT", 4, 0, NOPARAM)                                                                    \
    X(bonus, "INTEGER", 6, 0, RP_BONUS)                                                                       \
    X(finish_round, "INTEGER", 6, 0, RP_FINISH_ROUND)                                                         \
    X(label_rule, "TEXT", 6, 0, NOPARAM)                                                                     \
    X(prompt_template, "TEXT", 7, 0, NOPARAM)                                                                 \
    RUN_PARAMS_ADDED(RUNS_PARAM_COLUMN_, X)                                                                   \
    X(exec_batch, "INTEGER", 9, 0, NOPARAM)                                                                   \
    X(tokens_per_s_batched, "REAL", 9, 0, NOPARAM)                                                            \
    X(token_log_fnv1a64, "TEXT", 10, 0, NOPARAM)

#define PROMPTS_COLUMNS(X)                                                                                    \
    X(run_hash, "TEXT NOT NULL", 1, 0, NOPARAM)                                                               \
    X(prompt_index, "INTEGER NOT NULL", 1, 0, NOPARAM)                                                        \
    X(example_id, "TEXT", 1, 0, NOPARAM)                                                                      \
    X(n_prompt_tokens, "INTEGER NOT NULL", 1, 0, NOPARAM)                                                     \
    X(prompt_truncated, "INTEGER NOT NULL", 1, 0, NOPARAM)                                                    \
    X(rng_seed, "TEXT NOT NULL", 1, 0, NOPARAM)                                                               \
    X(tokens, "INTEGER NOT NULL", 1, 0, NOPARAM)                                                              \
    X(target_calls, "INTEGER NOT NULL", 1, 0, NOPARAM)                                                        \
    X(target_tokens, "INTEGER NOT NULL", 1, 0, NOPARAM)                                                       \
    X(draft_calls, "INTEGER NOT NULL", 1, 0, NOPARAM)                                                         \
    X(draft_tokens, "INTEGER NOT NULL", 1, 0, NOPARAM)                                                        \
    X(audit_calls, "INTEGER NOT NULL", 1, 0, NOPARAM)                                                         \
    X(audit_tokens, "INTEGER NOT NULL", 1, 0, NOPARAM)                                                        \
    X(verifier_evals, "INTEGER NOT NULL", 1, 0, NOPARAM)                                                      \
    X(drafted, "INTEGER NOT NULL", 1, 0, NOPARAM)                                                             \
    X(accepted, "INTEGER NOT NULL", 1, 0, NOPARAM)                                                            \
    X(verifier_accepts, "INTEGER NOT NULL", 1, 0, NOPARAM)                                                    \
    X(longest_run, "INTEGER NOT NULL", 1, 0, NOPARAM)                                                         \
    X(mean_accepted_run, "REAL", 1, 0, NOPARAM)                                                               \
    X(audited, "INTEGER", 1, 0, NOPARAM)                                                                      \
    X(audited_pos, "INTEGER", 1, 0, NOPARAM)                                                                  \
    X(audited_neg, "INTEGER", 1, 0, NOPARAM)                                                                  \
    X(tp, "INTEGER", 1, 0, NOPARAM)                                                                           \
    X(fp, "INTEGER", 1, 0, NOPARAM)                                                                           \
    X(eta_fp, "REAL", 1, 0, NOPARAM)                                                                          \
    X(eta_tp, "REAL", 1, 0, NOPARAM)                                                                          \
    X(t_total, "REAL NOT NULL", 1, 0, NOPARAM)                                                                \
    X(t_draft, "REAL NOT NULL", 1, 0, NOPARAM)                                                                \
    X(t_target, "REAL NOT NULL", 1, 0, NOPARAM)                                                               \
    X(t_verifier, "REAL NOT NULL", 1, 0, NOPARAM)                                                             \
    X(t_audit, "REAL NOT NULL", 1, 0, NOPARAM)                                                                \
    X(flops_draft, "REAL NOT NULL", 1, 0, NOPARAM)                                                            \
    X(flops_target, "REAL NOT NULL", 1, 0, NOPARAM)                                                           \
    X(flops_verifier, "REAL NOT NULL", 1, 0, NOPARAM)                                                         \
    X(output_text, "TEXT", 1, 0, NOPARAM)                                                                     \
    X(quality_ppl, "REAL", 1, 5, NOPARAM)                                                                     \
    X(quality_rouge_l, "REAL", 1, 5, NOPARAM)                                                                 \
    X(quality_bleu, "REAL", 1, 5, NOPARAM)                                                                    \
    X(quality_json, "TEXT", 1, 5, NOPARAM)                                                                    \
    X(rejected, "INTEGER", 5, 0, NOPARAM)                                                                     \
    X(rounds, "INTEGER", 6, 0, NOPARAM)                                                                       \
    X(round_kept, "INTEGER", 6, 0, NOPARAM)                                                                  \
    X(category, "TEXT", 7, 0, NOPARAM)                                                                        \
    X(turn, "INTEGER", 7, 0, NOPARAM)

#define OUTPUTS_COLUMNS(X)                                                                                    \
    X(run_hash, "TEXT NOT NULL", 2, 0, NOPARAM)                                                               \
    X(prompt_index, "INTEGER NOT NULL", 2, 0, NOPARAM)                                                        \
    X(n_prompt_tokens, "INTEGER NOT NULL", 2, 0, NOPARAM)                                                     \
    X(n_tokens, "INTEGER NOT NULL", 2, 0, NOPARAM)                                                            \
    X(text, "TEXT", 2, 0, NOPARAM)                                                                            \
    X(target_logprob, "REAL", 2, 0, NOPARAM)                                                                  \
    X(target_mean_logprob, "REAL", 2, 0, NOPARAM)                                                             \
    X(target_ppl, "REAL", 2, 0, NOPARAM)                                                                      \
    X(target_dir, "TEXT NOT NULL", 2, 0, NOPARAM)                                                             \
    X(target_sha256, "TEXT NOT NULL", 2, 0, NOPARAM)                                                          \
    X(scored_at, "TEXT NOT NULL", 2, 0, NOPARAM)

/* A run's decode timed again after the sweep's runs, alone (one process decoding; the runs of a
 * repetition one after the other, their order rotated between repetitions, so that the runs of one
 * repetition are paired): the speed figures come from here, not from the sweep's own timings, which
 * may run --jobs at a time. */
#define TIMINGS_COLUMNS(X)                                                                                    \
    X(run_hash, "TEXT NOT NULL", 8, 0, NOPARAM)                                                               \
    X(rep, "INTEGER NOT NULL", 8, 0, NOPARAM)                                                                 \
    X(n_prompts, "INTEGER NOT NULL", 8, 0, NOPARAM)                                                           \
    X(tokens, "INTEGER NOT NULL", 8, 0, NOPARAM)                                                              \
    X(t_total, "REAL NOT NULL", 8, 0, NOPARAM)                                                                \
    X(t_draft, "REAL NOT NULL", 8, 0, NOPARAM)                                                                \
    X(t_target, "REAL NOT NULL", 8, 0, NOPARAM)                                                               \
    X(t_verifier, "REAL NOT NULL", 8, 0, NOPARAM)                                                             \
    X(host, "TEXT", 8, 0, NOPARAM)                                                                            \
    X(finished_at, "TEXT NOT NULL", 8, 0, NOPARAM)

/* Column indexes in table order (every column ever defined, removed ones included: a statement
 * built by db_select_list() returns them all, NULL where the file lacks one). */
#define DB_COL_ENUM(table, name, decl, since, until, param) table##_##name,
#define RUNS_ENUM(n, d, s, u, p) DB_COL_ENUM(RUNS, n, d, s, u, p)
#define PROMPTS_ENUM(n, d, s, u, p) DB_COL_ENUM(PROMPTS, n, d, s, u, p)
#define OUTPUTS_ENUM(n, d, s, u, p) DB_COL_ENUM(OUTPUTS, n, d, s, u, p)
#define TIMINGS_ENUM(n, d, s, u, p) DB_COL_ENUM(TIMINGS, n, d, s, u, p)
enum { RUNS_COLUMNS(RUNS_ENUM) RUNS_N_COLS };
enum { PROMPTS_COLUMNS(PROMPTS_ENUM) PROMPTS_N_COLS };
enum { OUTPUTS_COLUMNS(OUTPUTS_ENUM) OUTPUTS_N_COLS };
enum { TIMINGS_COLUMNS(TIMINGS_ENUM) TIMINGS_N_COLS };
#undef RUNS_ENUM
#undef PROMPTS_ENUM
#undef OUTPUTS_ENUM
#undef TIMINGS_ENUM

extern const DbTable kRunsTable, kPromptsTable, kOutputsTable, kTimingsTable;

/* 1 if column c exists in a file of schema version v. */
static inline int db_col_in(const DbColumn *c, int version) {
    return c->since <= version && (c->until == 0 || version < c->until);
}

/* "a, b, c": the table's columns of the current version, in table order; buf of cap bytes. */
int db_column_list(const DbTable *t, char *buf, size_t cap);
/* "a, NULL, c": a SELECT list over the columns of t, with NULL for those missing in table
 * `schema`.`t` of connection h ("main", or an attached "src"); prefix ("" or "r.") goes before each
 * present name. current_only = 0: every column ever defined, removed ones included, so that result
 * column i is TABLE_column i (for readers); 1: the current columns, in the order of db_column_list
 * (for copying rows into a current table). */
int db_select_list(sqlite3 *h, const char *schema, const DbTable *t, const char *prefix, int current_only, char *buf,
                   size_t cap);

/* The grid parameter columns of runs in RunParam order, "r.lambda, r.tau, ..." (prefix "r." or ""):
 * a SELECT list whose column first + p holds parameter p. */
int db_param_columns(const char *prefix, char *buf, size_t cap);
/* "lambda=1.5 tau=0.3" from the RP_COUNT result columns of st starting at first (NULL = does not
 * apply), as run_params_format writes it. */
void db_params_label(sqlite3_stmt *st, int first, char *buf, int cap);

/* The text columns' rule (prompts.output_text, outputs.text): invalid UTF-8 in s is replaced, in
 * place and byte for byte, by '?', so every SQLite client can read the column. */
void db_text_sanitize(char *s);

/* Creates a new file's schema or upgrades an older file in place to DB_SCHEMA_VERSION, inside the
 * caller's transaction; refuses a newer or foreign file before writing anything. path is for
 * messages. */
int db_schema_prepare(sqlite3 *h, const char *path, SpErr *err);
/* The file's meta.schema_version (0 when there is no meta table), or -1 with err set. */
int db_schema_version(sqlite3 *h, const char *path, SpErr *err);

#endif
