/* score.c - `sprinter score`: target log-likelihood and text of every sweep output (see score.h). */
#include "score.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dataset.h"
#include "db.h"
#include "schema.h"
#include "setup.h"
#include "sqlutil.h"
#include "tokenlog.h"
#include "hashutil.h"
#include "tokenizer.h"

enum { SCORE_MAX_DATASETS = 64, SCORE_BATCH = 128 };

/* ------------------------------------------------------------------ the forward pass */

/* ln softmax(logits)[target], in double. */
static double log_softmax_at(const float *logits, int V, int32_t target) {
    float mx = logits[0];
    for (int i = 1; i < V; i++) mx = logits[i] > mx ? logits[i] : mx;
    double z = 0;
    for (int i = 0; i < V; i++) z += exp((double)logits[i] - mx);
    return (double)logits[target] - mx - log(z);
}

/* Token at position t of the virtual sequence prompt ++ out. */
static int32_t seq_at(const int32_t *prompt, int n_prompt, const int32_t *out, int t) {
    return t < n_prompt ? prompt[t] : out[t - n_prompt];
}

int score_logprobs(Session *s, int V, const int32_t *prompt, int n_prompt, const int32_t *out, int n_out, double *lp,
                   SpErr *err) {
    if (n_prompt < 1) return sp_fail(err, "score: empty prompt");
    if (n_out == 0) return 0;
    int T = n_prompt + n_out - 1; /* positions fed: 0 .. T-1; position t predicts the token at t + 1 */
    if (T > session_max_ctx(s))
        return sp_fail(err, "score: prompt %d + output %d tokens exceed the context of %d", n_prompt, n_out,
                       session_max_ctx(s));
    for (int t = 0; t < n_prompt + n_out; t++) {
        int32_t x = seq_at(prompt, n_prompt, out, t);
        if (x < 0 || x >= V) return sp_fail(err, "score: token %d at position %d is out of the vocabulary [0, %d)", x, t, V);
    }
    if (session_truncate(s, 0, err)) return -1;
    int32_t chunk[SCORE_BATCH];
    int max_b = session_max_batch(s) < SCORE_BATCH ? session_max_batch(s) : SCORE_BATCH;
    for (int a = 0; a < T; a += max_b) {
        int b = a + max_b < T ? a + max_b : T;
        for (int t = a; t < b; t++) chunk[t - a] = seq_at(prompt, n_prompt, out, t);
        int first = a > n_prompt - 1 ? a : n_prompt - 1; /* first position whose logits are needed */
        int n_tail = b - first > 0 ? b - first : 1;
        const float *L;
        if (session_forward_tail(s, chunk, b - a, n_tail, &L, NULL, err)) return -1;
        for (int t = b - n_tail; t < b; t++)
            if (t >= n_prompt - 1)
                lp[t - (n_prompt - 1)] =
                    log_softmax_at(L + (size_t)(t - (b - n_tail)) * V, V, seq_at(prompt, n_prompt, out, t + 1));
    }
    return 0;
}

/* ------------------------------------------------------------------ what to score */

typedef struct ScoreRun {
    char hash[SP_SHA256_HEX], method[32];
    char dataset[1024], dataset_sha[SP_SHA256_HEX], format[32];
    char target_sha[SP_SHA256_HEX]; /* "" when the run used no target */
    char token_log[256];
    PromptTemplate prompt_template; /* runs.prompt_template (NULL in files before schema 7: none) */
    int n_todo, n_have, max_index;
    int data; /* index into Ctx.data */
} ScoreRun;

typedef struct DataEntry {
    char path[1024], format[32];
    int max_index;
    Dataset ds;
} DataEntry;

typedef struct Ctx {
    const ScoreOpts *o;
    char db_path[4200], target_dir[4096], target_sha[SP_SHA256_HEX];
    ScoreRun *runs;
    int n_runs;
    int *todo, n_todo;
    DataEntry data[SCORE_MAX_DATASETS];
    int n_data;
    RunModels m; /* the target and its tokenizer (engine/decode/setup.h) */
    PromptFormat fmt[PROMPT_TEMPLATE_COUNT]; /* by PromptTemplate: what the runs to score used (when fmt_ready) */
    int fmt_ready[PROMPT_TEMPLATE_COUNT];
} Ctx;


static void copy_col(sqlite3_stmt *st, int i, char *buf, size_t cap) {
    const unsigned char *t = sqlite3_column_text(st, i);
    snprintf(buf, cap, "%s", t ? (const char *)t : "");
}

/* Result columns of plan_runs' query. */
enum { R_HASH, R_METHOD, R_DATASET, R_DATASET_SHA, R_FORMAT, R_TARGET_SHA, R_TOKEN_LOG, R_TEMPLATE, R_TODO, R_HAVE,
       R_MAX_INDEX };

/* One row of plan_runs' query into a ScoreRun (ctx: the Ctx, for messages). */
static int read_plan_row(sqlite3_stmt *st, void *item, void *ctx, SpErr *err) {
    const Ctx *c = ctx;
    ScoreRun *r = item;
    copy_col(st, R_HASH, r->hash, sizeof r->hash);
    copy_col(st, R_METHOD, r->method, sizeof r->method);
    copy_col(st, R_DATASET, r->dataset, sizeof r->dataset);
    copy_col(st, R_DATASET_SHA, r->dataset_sha, sizeof r->dataset_sha);
    copy_col(st, R_FORMAT, r->format, sizeof r->format);
    copy_col(st, R_TARGET_SHA, r->target_sha, sizeof r->target_sha);
    copy_col(st, R_TOKEN_LOG, r->token_log, sizeof r->token_log);
    const char *tpl = (const char *)sqlite3_column_text(st, R_TEMPLATE);
    if (prompt_template_parse(tpl ? tpl : "", &r->prompt_template))
        return sp_fail(err, "%s: runs.prompt_template of run %.12s is \"%s\", not none, vicuna or chat_template",
                       c->db_path, r->hash, tpl ? tpl : "");
    r->n_todo = sqlite3_column_int(st, R_TODO);
    r->n_have = sqlite3_column_int(st, R_HAVE);
    r->max_index = sqlite3_column_int(st, R_MAX_INDEX);
    return 0;
}

/* Every done run, with its count of prompts still to score and of rows already scored. */
static int plan_runs(Ctx *c, Db *db, SpErr *err) {
    sqlite3 *h = db_sqlite(db);
    const char *sql =
        "SELECT r.run_hash, r.method, r.dataset, r.dataset_sha256, r.data_format, r.target_sha256, r.token_log,"
        " COALESCE(r.prompt_template, 'none'),"
        " (SELECT COUNT(*) FROM prompts p WHERE p.run_hash = r.run_hash AND NOT EXISTS"
        "   (SELECT 1 FROM outputs o WHERE o.run_hash = p.run_hash AND o.prompt_index = p.prompt_index)),"
        " (SELECT COUNT(*) FROM outputs o WHERE o.run_hash = r.run_hash),"
        " (SELECT COALESCE(MAX(p.prompt_index), -1) FROM prompts p WHERE p.run_hash = r.run_hash)"
        " FROM runs r WHERE r.status = 'done' ORDER BY r.run_index, r.run_hash";
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(h, sql, -1, &st, NULL) != SQLITE_OK) return sql_fail(h, c->db_path, "read runs", err);
    void *runs = c->runs;
    int rc = sql_read_rows(h, c->db_path, st, "read runs", sizeof *c->runs, &runs, &c->n_runs, read_plan_row, c, err);
    c->runs = runs;
    sqlite3_finalize(st);
    return rc;
}

/* The target directory: the option, else the single runs.target_dir of the done runs. */
static int resolve_target(Ctx *c, Db *db, SpErr *err) {
    if (c->o->target_dir) {
        snprintf(c->target_dir, sizeof c->target_dir, "%s", c->o->target_dir);
        return 0;
    }
    sqlite3 *h = db_sqlite(db);
    sqlite3_stmt *st;
    const char *sql = "SELECT DISTINCT target_dir FROM runs WHERE status = 'done' AND target_dir IS NOT NULL";
    if (sqlite3_prepare_v2(h, sql, -1, &st, NULL) != SQLITE_OK) return sql_fail(h, c->db_path, "read runs", err);
    int n = 0, rc = 0;
    for (int s; (s = sqlite3_step(st)) == SQLITE_ROW;)
        if (n++ == 0) copy_col(st, 0, c->target_dir, sizeof c->target_dir);
    sqlite3_finalize(st);
    if (n == 0) rc = sp_fail(err, "%s: runs.target_dir: no done run names a target model (pass --target DIR)", c->db_path);
    else if (n > 1) rc = sp_fail(err, "%s: runs.target_dir: the done runs use %d target directories (pass --target DIR)", c->db_path, n);
    return rc;
}

/* The target's hash must be the one every run that used a target recorded. */
static int check_target(Ctx *c, SpErr *err) {
    if (sha256_model_dir(c->target_dir, c->target_sha, err)) return sp_err_prefix(err, "target %s", c->target_dir);
    for (int k = 0; k < c->n_todo; k++) {
        const ScoreRun *r = &c->runs[c->todo[k]];
        if (r->target_sha[0] && strcmp(r->target_sha, c->target_sha))
            return sp_fail(err, "%s: runs.target_sha256 of run %.12s is %.16s..., but target %s hashes to %.16s... "
                                "(the target changed since the sweep?)",
                           c->db_path, r->hash, r->target_sha, c->target_dir, c->target_sha);
    }
    return 0;
}

/* Loads each dataset the runs to score need (checking its hash) once. */
static int load_datasets(Ctx *c, SpErr *err) {
    for (int k = 0; k < c->n_todo; k++) {
        ScoreRun *r = &c->runs[c->todo[k]];
        int d = 0;
        while (d < c->n_data && (strcmp(c->data[d].path, r->dataset) || strcmp(c->data[d].format, r->format))) d++;
        if (d == c->n_data) {
            if (c->n_data == SCORE_MAX_DATASETS) return sp_fail(err, "%s: more than %d datasets", c->db_path, SCORE_MAX_DATASETS);
            DataEntry *e = &c->data[c->n_data++];
            snprintf(e->path, sizeof e->path, "%s", r->dataset);
            snprintf(e->format, sizeof e->format, "%s", r->format);
            e->max_index = -1;
        }
        if (r->max_index > c->data[d].max_index) c->data[d].max_index = r->max_index;
        r->data = d;
    }
    for (int d = 0; d < c->n_data; d++) {
        DataEntry *e = &c->data[d];
        char sha[SP_SHA256_HEX];
        if (sha256_file(e->path, sha, err)) return sp_err_prefix(err, "%s: runs.dataset", c->db_path);
        for (int k = 0; k < c->n_todo; k++) {
            const ScoreRun *r = &c->runs[c->todo[k]];
            if (r->data == d && strcmp(r->dataset_sha, sha))
                return sp_fail(err, "%s: runs.dataset_sha256 of run %.12s is %.16s..., but %s hashes to %.16s... "
                                    "(the dataset changed since the sweep?)",
                               c->db_path, r->hash, r->dataset_sha, e->path, sha);
        }
        const char *fmt = strcmp(e->format, "auto") && e->format[0] ? e->format : NULL;
        if (dataset_load(e->path, fmt, e->max_index + 1, &e->ds, err)) return -1;
        if (e->ds.n <= e->max_index)
            return sp_fail(err, "%s: has %d prompts, the runs need prompt %d", e->path, e->ds.n, e->max_index);
    }
    return 0;
}

/* ------------------------------------------------------------------ one run */

typedef struct TodoPrompt {
    int prompt_index, n_prompt_tokens, truncated, turn;
    int64_t tokens;
    char **answers; /* [turn] the run's answers to the conversation's earlier turns (prompt_answer() of
                       their prompts.output_text, as the runner made them); NULL for a first turn */
} TodoPrompt;

static void todo_free(TodoPrompt *todo, int n) {
    for (int i = 0; todo && i < n; i++) {
        for (int k = 0; todo[i].answers && k < todo[i].turn; k++) free(todo[i].answers[k]);
        free(todo[i].answers);
    }
    free(todo);
}

/* p->answers from the run's prompt rows p->prompt_index - p->turn .. p->prompt_index - 1. */
static int earlier_answers(sqlite3 *h, const char *db_path, const char *hash, TodoPrompt *p, SpErr *err) {
    if (p->turn == 0) return 0;
    if (!(p->answers = calloc((size_t)p->turn, sizeof *p->answers))) return sp_fail(err, "out of memory");
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(h, "SELECT output_text FROM prompts WHERE run_hash = ? AND prompt_index = ?", -1, &st, NULL) !=
        SQLITE_OK)
        return sql_fail(h, db_path, "read prompts", err);
    int rc = 0;
    for (int k = 0; k < p->turn && !rc; k++) {
        int index = p->prompt_index - p->turn + k;
        sqlite3_reset(st);
        sqlite3_bind_text(st, 1, hash, -1, SQLITE_STATIC);
        sqlite3_bind_int(st, 2, index);
        int step = sqlite3_step(st);
        if (step == SQLITE_DONE)
            rc = sp_fail(err, "%s: run %.12s: prompt %d is turn %d, but the run has no row for prompt %d (its turn %d)",
                         db_path, hash, p->prompt_index, p->turn + 1, index, k + 1);
        else if (step != SQLITE_ROW) rc = sql_fail(h, db_path, "read prompts", err);
        else if (!(p->answers[k] = prompt_answer((const char *)sqlite3_column_text(st, 0)))) rc = sp_fail(err, "out of memory");
    }
    sqlite3_finalize(st);
    return rc;
}

typedef struct OutRow {
    int prompt_index, n_prompt, n_tokens;
    double lp_sum;
    char *text;
} OutRow;

/* The run's token log (records/tokenlog.h), checked to be this run's and to hold what its prompts
 * rows say (tokrows_read). */
static int read_log(const Ctx *c, sqlite3 *h, const ScoreRun *r, TokenRows *l, SpErr *err) {
    char path[4600];
    snprintf(path, sizeof path, "%s/%s", c->o->results_dir, r->token_log);
    TokenLogExpect x;
    if (tokenlog_expect_db(h, c->db_path, r->hash, &x, err)) return -1;
    int rc = tokrows_read(path, &x, l, err);
    tokenlog_expect_free(&x);
    return rc ? sp_err_prefix(err, "run %.12s: runs.token_log", r->hash) : 0;
}

/* The prompts of the run without an outputs row. */
static int todo_prompts(sqlite3 *h, const char *db_path, const char *hash, TodoPrompt **out, int *n, SpErr *err) {
    const char *sql = "SELECT p.prompt_index, p.n_prompt_tokens, p.prompt_truncated, p.tokens, COALESCE(p.turn, 0)"
                      " FROM prompts p"
                      " WHERE p.run_hash = ? AND NOT EXISTS (SELECT 1 FROM outputs o WHERE o.run_hash = p.run_hash"
                      " AND o.prompt_index = p.prompt_index) ORDER BY p.prompt_index";
    enum { P_INDEX, P_N_PROMPT_TOKENS, P_TRUNCATED, P_TOKENS, P_TURN };
    sqlite3_stmt *st;
    *out = NULL;
    *n = 0;
    if (sqlite3_prepare_v2(h, sql, -1, &st, NULL) != SQLITE_OK) return sql_fail(h, db_path, "read prompts", err);
    sqlite3_bind_text(st, 1, hash, -1, SQLITE_STATIC);
    int cap = 0, rc = 0;
    for (int s; (s = sqlite3_step(st)) != SQLITE_DONE;) {
        if (s != SQLITE_ROW) {
            rc = sql_fail(h, db_path, "read prompts", err);
            break;
        }
        if (*n == cap) {
            TodoPrompt *np = realloc(*out, (size_t)(cap = cap ? 2 * cap : 64) * sizeof *np);
            if (!np) {
                rc = sp_fail(err, "out of memory");
                break;
            }
            *out = np;
        }
        TodoPrompt *p = &(*out)[(*n)++];
        p->prompt_index = sqlite3_column_int(st, P_INDEX);
        p->n_prompt_tokens = sqlite3_column_int(st, P_N_PROMPT_TOKENS);
        p->truncated = sqlite3_column_int(st, P_TRUNCATED);
        p->tokens = sqlite3_column_int64(st, P_TOKENS);
        p->turn = sqlite3_column_int(st, P_TURN);
        p->answers = NULL;
    }
    sqlite3_finalize(st);
    for (int i = 0; i < *n && !rc; i++) rc = earlier_answers(h, db_path, hash, &(*out)[i], err);
    return rc;
}

/* The prompt's token ids as the runner made them (data/loaders/prompt.h: its conversation, this
 * run's earlier answers, the run's template): *ids malloc'd, p->n_prompt_tokens of them. */
static int prompt_ids(const Ctx *c, const ScoreRun *r, const TodoPrompt *p, int32_t **ids, SpErr *err) {
    const DataEntry *e = &c->data[r->data];
    *ids = NULL;
    if (p->prompt_index < 0 || p->prompt_index >= e->ds.n)
        return sp_fail(err, "%s: prompts.prompt_index %d of run %.12s is not in the dataset", c->db_path, p->prompt_index, r->hash);
    if (e->ds.ex[p->prompt_index].turn != p->turn)
        return sp_fail(err, "%s: prompt %d is turn %d, prompts.turn of run %.12s says %d (dataset changed since the sweep?)",
                       e->path, p->prompt_index, e->ds.ex[p->prompt_index].turn + 1, r->hash, p->turn + 1);
    const ModelConfig *mc = model_config(c->m.target);
    int n, truncated;
    /* the runner's cut is max_prompt; any cut at or above n_prompt_tokens finds the same last tokens */
    const PromptFormat *f = &c->fmt[r->prompt_template];
    char *text = prompt_text(f, &e->ds, p->prompt_index, (const char *const *)p->answers, err);
    int rc = text ? prompt_encode(f, c->m.tokenizer, mc->bos_id, text, INT_MAX, ids, &n, &truncated, err) : -1;
    free(text);
    if (rc) return sp_err_prefix(err, "%s: prompt %d", e->path, p->prompt_index);
    int want = p->n_prompt_tokens;
    if (want < 1 || (p->truncated ? n <= want : n != want)) {
        free(*ids);
        *ids = NULL;
        return sp_fail(err, "%s: prompt %d encodes to %d tokens, prompts.n_prompt_tokens of run %.12s is %d%s "
                            "(dataset or tokenizer changed since the sweep?)",
                       e->path, p->prompt_index, n, r->hash, p->n_prompt_tokens, p->truncated ? " (truncated)" : "");
    }
    if (n > want) memmove(*ids, *ids + (n - want), (size_t)want * sizeof **ids); /* keep the last tokens */
    return 0;
}

/* The output tokens of one prompt from the log: *start, *n rows (positions checked). */
static int find_output(const TokenRows *l, const char *log_path, const TodoPrompt *p, int64_t *start, int *n, SpErr *err) {
    int64_t a = 0;
    while (a < l->n && l->prompt_index[a] != p->prompt_index) a++;
    int64_t b = a;
    while (b < l->n && l->prompt_index[b] == p->prompt_index) b++;
    for (int64_t i = b; i < l->n; i++)
        if (l->prompt_index[i] == p->prompt_index)
            return sp_fail(err, "%s: rows of prompt %d are not contiguous", log_path, p->prompt_index);
    if (b - a != p->tokens)
        return sp_fail(err, "%s: prompt %d has %lld token rows, prompts.tokens says %lld", log_path, p->prompt_index,
                       (long long)(b - a), (long long)p->tokens);
    for (int64_t i = a; i < b; i++)
        if (l->pos[i] != p->n_prompt_tokens + (i - a))
            return sp_fail(err, "%s: prompt %d: row %lld has pos %d, expected %lld (n_prompt_tokens %d + offset)", log_path,
                           p->prompt_index, (long long)i, l->pos[i], (long long)(p->n_prompt_tokens + (i - a)),
                           p->n_prompt_tokens);
    *start = a;
    *n = (int)(b - a);
    return 0;
}

static int score_prompt(const Ctx *c, Session *s, const ScoreRun *r, const TokenRows *l, const TodoPrompt *p,
                        double *lp, OutRow *row, SpErr *err) {
    char log_path[4600];
    snprintf(log_path, sizeof log_path, "%s/%s", c->o->results_dir, r->token_log);
    int64_t start = 0;
    int n = 0;
    int32_t *ids = NULL;
    if (find_output(l, log_path, p, &start, &n, err) || prompt_ids(c, r, p, &ids, err)) return -1;
    const int32_t *out = l->token + start;
    int rc = score_logprobs(s, model_config(c->m.target)->vocab_size, ids, p->n_prompt_tokens, out, n, lp, err);
    free(ids);
    if (rc) return sp_err_prefix(err, "run %.12s prompt %d", r->hash, p->prompt_index);
    row->prompt_index = p->prompt_index;
    row->n_prompt = p->n_prompt_tokens;
    row->n_tokens = n;
    row->lp_sum = 0;
    for (int t = 0; t < n; t++) row->lp_sum += lp[t];
    size_t len;
    if (tokenizer_decode(c->m.tokenizer, out, (size_t)n, 1, &row->text, &len, err))
        return sp_err_prefix(err, "%s: prompt %d: decode", log_path, p->prompt_index);
    for (size_t i = 0; i < len; i++) /* a NUL byte (a byte token) would end the SQLite text early */
        if (row->text[i] == '\0') row->text[i] = '?';
    db_text_sanitize(row->text);
    return 0;
}

static void bind_opt_double(sqlite3_stmt *st, int i, int ok, double v) {
    if (ok && isfinite(v)) sqlite3_bind_double(st, i, v);
    else sqlite3_bind_null(st, i);
}

/* One transaction: INSERT OR IGNORE of the rows; *added counts the new ones. */
static int insert_rows(const Ctx *c, sqlite3 *h, const char *hash, const OutRow *rows, int n, int64_t *added, SpErr *err) {
    const char *sql = "INSERT OR IGNORE INTO outputs(run_hash, prompt_index, n_prompt_tokens, n_tokens, text,"
                      " target_logprob, target_mean_logprob, target_ppl, target_dir, target_sha256, scored_at)"
                      " VALUES(?,?,?,?,?,?,?,?,?,?,?)";
    char now[40];
    db_now_iso(now, sizeof now);
    if (sqlite3_exec(h, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK) return sql_fail(h, c->db_path, "begin", err);
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(h, sql, -1, &st, NULL) == SQLITE_OK ? 0 : sql_fail(h, c->db_path, "prepare insert into outputs", err);
    for (int i = 0; rc == 0 && i < n; i++) {
        const OutRow *o = &rows[i];
        double mean = o->n_tokens > 0 ? o->lp_sum / o->n_tokens : NAN;
        sqlite3_reset(st);
        sqlite3_clear_bindings(st);
        sqlite3_bind_text(st, 1, hash, -1, SQLITE_STATIC);
        sqlite3_bind_int(st, 2, o->prompt_index);
        sqlite3_bind_int(st, 3, o->n_prompt);
        sqlite3_bind_int(st, 4, o->n_tokens);
        sqlite3_bind_text(st, 5, o->text, -1, SQLITE_STATIC);
        bind_opt_double(st, 6, 1, o->lp_sum);
        bind_opt_double(st, 7, o->n_tokens > 0, mean);
        bind_opt_double(st, 8, o->n_tokens > 0, exp(-mean));
        sqlite3_bind_text(st, 9, c->target_dir, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 10, c->target_sha, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 11, now, -1, SQLITE_STATIC);
        if (sqlite3_step(st) != SQLITE_DONE) rc = sql_fail(h, c->db_path, "insert into outputs", err);
        else *added += sqlite3_changes(h);
    }
    sqlite3_finalize(st);
    if (rc == 0 && sqlite3_exec(h, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) rc = sql_fail(h, c->db_path, "commit", err);
    if (rc) sqlite3_exec(h, "ROLLBACK", NULL, NULL, NULL);
    return rc;
}

static int score_run(const Ctx *c, Db *db, Session *s, const ScoreRun *r, int64_t *added, SpErr *err) {
    sqlite3 *h = db_sqlite(db);
    TodoPrompt *todo = NULL;
    OutRow *rows = NULL;
    TokenRows l = {0};
    double *lp = NULL;
    int n = 0, rc = -1;
    if (todo_prompts(h, c->db_path, r->hash, &todo, &n, err)) goto done;
    if (n == 0) {
        rc = 0;
        goto done;
    }
    int64_t max_tok = 1;
    for (int i = 0; i < n; i++) max_tok = todo[i].tokens > max_tok ? todo[i].tokens : max_tok;
    rows = calloc((size_t)n, sizeof *rows);
    lp = malloc((size_t)max_tok * sizeof *lp);
    if (!rows || !lp) {
        sp_fail(err, "out of memory");
        goto done;
    }
    if (read_log(c, h, r, &l, err)) goto done;
    for (int i = 0; i < n; i++)
        if (score_prompt(c, s, r, &l, &todo[i], lp, &rows[i], err)) goto done;
    rc = insert_rows(c, h, r->hash, rows, n, added, err);
    if (rc == 0 && c->o->progress) {
        double sum = 0;
        int64_t tok = 0;
        for (int i = 0; i < n; i++) sum += rows[i].lp_sum, tok += rows[i].n_tokens;
        fprintf(stderr, "score: %-13s [%.12s] %d prompts, %lld tokens, mean log p %.4f\n", r->method, r->hash, n,
                (long long)tok, tok ? sum / (double)tok : NAN);
    }
done:
    for (int i = 0; rows && i < n; i++) free(rows[i].text);
    free(rows);
    todo_free(todo, n);
    free(lp);
    tokrows_free(&l);
    return rc;
}

/* Scores the runs todo[k] with k % n_workers == worker. */
static int score_share(const Ctx *c, Db *db, int worker, int n_workers, int64_t *added, SpErr *err) {
    int ctx = model_config(c->m.target)->max_pos;
    Session *s = session_new(c->m.target, ctx, ctx < SCORE_BATCH ? ctx : SCORE_BATCH, err);
    if (!s) return -1;
    int rc = 0;
    for (int k = worker; rc == 0 && k < c->n_todo; k += n_workers) rc = score_run(c, db, s, &c->runs[c->todo[k]], added, err);
    session_free(s);
    return rc;
}

/* ------------------------------------------------------------------ workers */

static int run_workers(Ctx *c, int jobs, SpErr *err) {
    fflush(NULL);
    pid_t parent = getpid();
    int n = 0, failed = 0;
    for (int w = 0; w < jobs; w++) {
        pid_t pid = fork();
        if (pid < 0) {
            sp_fail(err, "fork: %s", strerror(errno));
            failed = 1;
            break;
        }
        if (pid == 0) {
            prctl(PR_SET_PDEATHSIG, SIGKILL); /* a killed score takes its workers with it */
            if (getppid() != parent) _exit(1);
            SpErr e = {{0}};
            int64_t added = 0;
            int rc = 1;
            Db *db = db_open(c->db_path, &e);
            if (db) {
                rc = score_share(c, db, w, jobs, &added, &e) ? 1 : 0;
                db_close(db);
            }
            if (rc) fprintf(stderr, "sprinter score: worker %d: %s\n", w, e.msg);
            fflush(NULL);
            _exit(rc);
        }
        n++;
    }
    for (int alive = n; alive > 0;) {
        int st;
        pid_t p = waitpid(-1, &st, 0);
        if (p < 0) {
            if (errno == EINTR) continue;
            break;
        }
        alive--;
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) failed = 1;
    }
    if (failed) return err->msg[0] ? -1 : sp_fail(err, "a worker process failed (its error is above)");
    return 0;
}

static int64_t count_outputs(Db *db) {
    sqlite3_stmt *st;
    int64_t n = -1;
    if (sqlite3_prepare_v2(db_sqlite(db), "SELECT COUNT(*) FROM outputs", -1, &st, NULL) != SQLITE_OK) return -1;
    if (sqlite3_step(st) == SQLITE_ROW) n = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return n;
}

static void ctx_free(Ctx *c) {
    for (int d = 0; d < c->n_data; d++) dataset_free(&c->data[d].ds);
    for (int k = 0; k < PROMPT_TEMPLATE_COUNT; k++)
        if (c->fmt_ready[k]) prompt_format_free(&c->fmt[k]);
    run_models_close(&c->m);
    free(c->runs);
    free(c->todo);
}

/* Opens the database, finds the runs with prompts to score, and everything that can fail before
 * the first run: target, its hash, the tokenizer, the datasets. */
static int prepare(Ctx *c, Db **db, SpErr *err) {
    snprintf(c->db_path, sizeof c->db_path, "%s/runs.sqlite", c->o->results_dir);
    if (access(c->db_path, R_OK | W_OK) != 0)
        return sp_fail(err, "%s: no writable results database (run sprinter sweep first)", c->db_path);
    if (!(*db = db_open(c->db_path, err)) || plan_runs(c, *db, err)) return -1;
    if (!(c->todo = malloc((size_t)(c->n_runs ? c->n_runs : 1) * sizeof *c->todo))) return sp_fail(err, "out of memory");
    for (int i = 0; i < c->n_runs; i++)
        if (c->runs[i].n_todo > 0) c->todo[c->n_todo++] = i;
    if (c->n_todo == 0) return 0;
    if (resolve_target(c, *db, err) || check_target(c, err)) return -1;
    RunSetup rs = {NULL, c->target_dir, 1, NULL};
    if (run_models_open(&c->m, &rs, err)) return -1;
    for (int k = 0; k < c->n_todo; k++) { /* each prompt template the runs used, once */
        PromptTemplate t = c->runs[c->todo[k]].prompt_template;
        if (c->fmt_ready[t]) continue;
        if (prompt_format_init(&c->fmt[t], t, c->target_dir, c->m.tokenizer, err)) return sp_err_prefix(err, "target %s", c->target_dir);
        c->fmt_ready[t] = 1;
    }
    return load_datasets(c, err);
}

int score_results(const ScoreOpts *o, ScoreCounts *cnt, SpErr *err) {
    memset(cnt, 0, sizeof *cnt);
    Ctx c = {0};
    c.o = o;
    Db *db = NULL;
    int rc = prepare(&c, &db, err);
    int64_t before = rc == 0 ? count_outputs(db) : -1;
    if (rc == 0 && c.n_todo > 0) {
        if (o->jobs <= 1) {
            int64_t added = 0;
            rc = score_share(&c, db, 0, 1, &added, err);
        } else {
            db_close(db); /* an SQLite connection must not cross fork() */
            db = NULL;
            rc = run_workers(&c, o->jobs < c.n_todo ? o->jobs : c.n_todo, err);
            if (!(db = db_open(c.db_path, rc ? NULL : err)) && rc == 0) rc = -1;
        }
    }
    if (db) {
        int64_t after = count_outputs(db);
        cnt->runs_done = c.n_runs;
        cnt->runs_scored = c.n_todo;
        cnt->rows_present = before;
        cnt->rows_added = after >= 0 && before >= 0 ? after - before : 0;
    }
    db_close(db);
    ctx_free(&c);
    return rc;
}

/* ------------------------------------------------------------------ summary */

int score_summary(const char *results_dir, FILE *out, SpErr *err) {
    char path[4200];
    snprintf(path, sizeof path, "%s/runs.sqlite", results_dir);
    Db *db = db_open(path, err);
    if (!db) return -1;
    sqlite3 *h = db_sqlite(db);
    enum { S_METHOD, S_PROMPTS, S_TOKENS, S_LOGPROB, S_PARAMS }; /* result columns; parameters from S_PARAMS */
    char params[512], sql[2048];
    db_param_columns("r.", params, sizeof params);
    snprintf(sql, sizeof sql,
             "SELECT r.method, COUNT(*), SUM(o.n_tokens), SUM(o.target_logprob), %s"
             " FROM runs r JOIN outputs o ON o.run_hash = r.run_hash WHERE r.status = 'done'"
             " GROUP BY r.method, %s ORDER BY MIN(r.run_index)",
             params, params);
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(h, sql, -1, &st, NULL) != SQLITE_OK) {
        sql_fail(h, path, "summary query", err);
        db_close(db);
        return -1;
    }
    fprintf(out, "%-13s %-44s %7s %8s %12s %10s\n", "method", "params", "prompts", "tokens", "logp/token", "target_ppl");
    int rows = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        char lab[256];
        db_params_label(st, S_PARAMS, lab, sizeof lab);
        int64_t tok = sqlite3_column_int64(st, S_TOKENS);
        double lp = sqlite3_column_double(st, S_LOGPROB), mean = tok > 0 ? lp / (double)tok : NAN;
        fprintf(out, "%-13s %-44s %7d %8lld %12.4f %10.3f\n", (const char *)sqlite3_column_text(st, S_METHOD),
                lab[0] ? lab : "-", sqlite3_column_int(st, S_PROMPTS), (long long)tok, mean, exp(-mean));
        rows++;
    }
    if (rows == 0) fprintf(out, "(no scored runs)\n");
    sqlite3_finalize(st);
    db_close(db);
    return 0;
}
