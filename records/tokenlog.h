/* tokenlog.h - the per-token event log of one run, results/X/tokens/RUNHASH.h5: its layout, its
 * writer (the sweep) and its reader (scoring, the analysis), defined once here.
 *
 * One row per emitted token (one TokenEvent, engine/decode/events.h), all prompts of the run one after
 * another in prompt order, each prompt's tokens in position order. Columns are 1-D chunked,
 * deflate-compressed datasets at the file root with an unlimited first dimension, written through
 * h5util (to RUNHASH.h5.tmp, renamed by tokenlog_commit, so a file named RUNHASH.h5 is complete):
 *
 *   run_id        i64  first 15 hex digits of the run hash as an integer (same in every row)
 *   prompt_index  i32  index of the prompt in the dataset file (offset included)
 *   then one column per TokenEvent field, TOKENLOG_EVENT_COLUMNS below (pos ... kind, capped)
 *
 * Root attributes: format "sprinter-tokens", version (TOKENLOG_VERSION), run_hash, method, config
 * (the run's canonical configuration text, what run_hash hashes), spec_name, spec_sha256,
 * n_prompts, kinds (the EventKind legend).
 * Versions: 1 = run_id ... kind; 2 = + capped; 3 = + q_raw, p_raw (under the paper-code label rule
 * the plain temperature-1 softmax figures the label is computed from: label = [q_raw <= lambda p_raw]
 * in double, lambda = runs.lambda; NaN otherwise). The reader takes all three: for a version-1 log of a
 * sequential method (engine/decode/methods.h MC_SEQUENTIAL) capped is derived as the writer of version 1
 * implied it (a target-called token the verifier had accepted), and TokenRows.capped_derived says so;
 * before version 3, q_raw and p_raw read as NaN (TokenRows.raw_missing).
 * 4 = + root attribute content_fnv1a64, the content digest (FNV-1a 64 over each column's bytes from
 * prompt_index on, then over those 14 digests; written at commit, checked by every read: a damaged
 * chunk index that reads as fill values is caught).
 * Not thread-safe (HDF5 serial build); one TokenLog per process at a time.
 */
#ifndef SP_TOKENLOG_H
#define SP_TOKENLOG_H

#include <sqlite3.h>
#include <stdint.h>

#include "error.h"
#include "events.h"
#include "h5util.h"

#define TOKENLOG_FORMAT "sprinter-tokens"
#define TOKENLOG_VERSION 4

/* X(field of TokenEvent, C type, column type, units, description), in file order. */
#define TOKENLOG_EVENT_COLUMNS(X)                                                                             \
    X(pos, int32_t, H5C_I32, "position", "position of the emitted token in the full sequence (prompt included)") \
    X(token, int32_t, H5C_I32, "token id", "emitted token")                                                   \
    X(draft_token, int32_t, H5C_I32, "token id", "token the draft proposed here, -1 if none")                 \
    X(q, float, H5C_F32, "probability", "draft probability of draft_token, NaN if none")                      \
    X(p, float, H5C_F32, "probability", "target probability of draft_token, NaN if unknown")                  \
    X(score, float, H5C_F32, "probability", "verifier score, NaN if no verifier ran")                          \
    X(decision, int8_t, H5C_I8, NULL, "verifier decision: 1 accept, 0 reject, -1 none")                       \
    X(label, int8_t, H5C_I8, NULL, "true label q/p <= lambda: 1, 0, -1 when p is unknown")                   \
    X(target_called, int8_t, H5C_I8, NULL, "1 if the target ran to decide this token")                       \
    X(kind, int8_t, H5C_I8, NULL, EV_KIND_LEGEND)                                                             \
    X(capped, int8_t, H5C_I8, NULL,                                                                           \
      "version 2: 1 if the max_run cap made the target decide this token whatever the verifier said")        \
    X(q_raw, float, H5C_F32, "probability",                                                                   \
      "version 3: paper-code label rule: draft softmax probability of draft_token at temperature 1, NaN otherwise") \
    X(p_raw, float, H5C_F32, "probability",                                                                   \
      "version 3: paper-code label rule: target softmax probability of draft_token at temperature 1 (label = "  \
      "[q_raw <= lambda p_raw]), NaN otherwise")

enum {
    TOKENLOG_COL_RUN_ID = 0,
    TOKENLOG_COL_PROMPT_INDEX,
#define TOKENLOG_ENUM(field, ctype, type, units, doc) TOKENLOG_COL_##field,
    TOKENLOG_EVENT_COLUMNS(TOKENLOG_ENUM)
#undef TOKENLOG_ENUM
    TOKENLOG_N_COLS
};

/* Names, types, units and descriptions of the columns, in file order ([TOKENLOG_N_COLS]). */
const H5ColSpec *tokenlog_columns(void);
/* The columns a log of `version` has (12 for version 1, 13 for 2, TOKENLOG_N_COLS for 3). */
int tokenlog_n_cols(int version);

/* ---- writing ---- */
typedef struct TokenLog {
    H5Table t;
    uint64_t col_hash[TOKENLOG_N_COLS]; /* running FNV-1a 64 of each column (the content digest) */
    int64_t run_id;
    int open;
    char content_hash[17]; /* after tokenlog_commit: the digest written (runs.token_log_fnv1a64) */
} TokenLog;

/* run_id from a run hash (64 hex digits). */
int64_t tokenlog_run_id(const char *run_hash);

/* What the root attributes say about the run (strings borrowed). */
typedef struct TokenLogMeta {
    const char *run_hash, *method, *config; /* config: the run's canonical configuration text */
    const char *spec_name, *spec_sha256;
    int n_prompts;
} TokenLogMeta;

/* Creates path.tmp with the columns and attributes above. */
int tokenlog_create(TokenLog *l, const char *path, const TokenLogMeta *m, SpErr *err);
/* Appends the n events of one prompt. */
int tokenlog_append(TokenLog *l, int32_t prompt_index, const TokenEvent *ev, int n, SpErr *err);
/* Writes the content digest (attribute content_fnv1a64, also into l->content_hash), closes and
 * renames path.tmp -> path. */
int tokenlog_commit(TokenLog *l, SpErr *err);
/* Closes and deletes path.tmp (no-op when not open). */
void tokenlog_abort(TokenLog *l);

/* ---- reading ---- */
/* Every row of a log, column by column (malloc'd [n] arrays, owned). */
typedef struct TokenRows {
    int64_t n;
    int32_t *prompt_index;
#define TOKENLOG_FIELD(field, ctype, type, units, doc) ctype *field;
    TOKENLOG_EVENT_COLUMNS(TOKENLOG_FIELD)
#undef TOKENLOG_FIELD
    int version;        /* the file's format version */
    int capped_derived; /* capped was not stored (version 1) and was derived; see above */
    int raw_missing;    /* q_raw, p_raw were not stored (version < 3) and read as NaN */
    char run_hash[80], method[32];
    char content_hash[24]; /* attribute content_fnv1a64 (version 4), "" before */
} TokenRows;

/* What the database says about a run's log: its hash (NULL: not checked), per prompt (ascending
 * prompt_index) its number of tokens (n_prompts -1: not checked), and the content digest recorded
 * when the run was committed (runs.token_log_fnv1a64; "": none recorded, not checked). */
typedef struct TokenLogExpect {
    const char *run_hash;
    int n_prompts;
    int32_t *prompt_index;
    int64_t *tokens;
    char content_hash[24];
} TokenLogExpect;

/* x from runs.sqlite's prompts rows of run_hash and its runs.token_log_fnv1a64 (x->run_hash =
 * run_hash, borrowed). */
int tokenlog_expect_db(sqlite3 *h, const char *db_path, const char *run_hash, TokenLogExpect *x, SpErr *err);
void tokenlog_expect_free(TokenLogExpect *x);

/* The one reader of token logs: reads every column in a checked child (h5util.h h5_checked: a crash
 * of libhdf5 on damaged bytes is the one-line error "PATH: HDF5 crashed reading it (signal N): the
 * file is damaged"), checks the content digest (version 4 on) and, with x, the log against the
 * database (check_expect: run hash, rows per prompt, the digest recorded at commit: a log swapped with
 * another run's, or rewritten after the run with a self-consistent digest, is refused). Errors name the file and the dataset or
 * attribute ("x.h5: dataset /label has 10 rows, /prompt_index has 12"; "x.h5: missing" when there is
 * no file). On error t holds nothing. */
int tokrows_read(const char *path, const TokenLogExpect *x, TokenRows *t, SpErr *err);
void tokrows_free(TokenRows *t);

#endif
