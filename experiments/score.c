/* score.c - `sprinter score`: target log-likelihood and text of every sweep output (see score.h). */
#include "score.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dataset.h"
#include "proc.h"
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

/* Feeds tokens[0..n) at the session's next positions in chunks of max_b rows; the logits of every
 * row into lp as ln softmax[next[t]] when next is non-NULL (t in [0, n)). */
static int feed(Session *s, int V, const int32_t *tokens, int n, const int32_t *next, double *lp, SpErr *err) {
    int max_b = session_max_batch(s) < SCORE_BATCH ? session_max_batch(s) : SCORE_BATCH;
    for (int a = 0; a < n; a += max_b) {
        int b = a + max_b < n ? a + max_b : n;
        const float *L;
        if (session_forward_tail(s, tokens + a, b - a, next ? b - a : 1, &L, NULL, err)) return -1;
        for (int t = a; next && t < b; t++) lp[t] = log_softmax_at(L + (size_t)(t - a) * V, V, next[t]);
    }
    return 0;
}

/* The prompt's first n_prompt - 1 tokens into the cache (no logits needed): what every output of the
 * prompt shares. */
static int score_prefix(Session *s, int V, const int32_t *prompt, int n_prompt, SpErr *err) {
    if (session_truncate(s, 0, err)) return -1;
    return n_prompt > 1 ? feed(s, V, prompt, n_prompt - 1, NULL, NULL, err) : 0;
}

/* lp[0..n_out) of out after the prompt, the cache holding score_prefix's positions: positions
 * n_prompt - 1 .. n_prompt + n_out - 2 (the prompt's last token, then out[0..n_out - 1)) fed again
 * from there. tail[n_out] is scratch. The chunks depend only on n_prompt and n_out, so an output's
 * figures are the same whichever outputs shared its prefix. */
static int score_tail(Session *s, int V, const int32_t *prompt, int n_prompt, const int32_t *out, int n_out,
                      int32_t *tail, double *lp, SpErr *err) {
    if (n_out == 0) return 0;
    if (session_truncate(s, n_prompt - 1, err)) return -1;
    tail[0] = prompt[n_prompt - 1];
    memcpy(tail + 1, out, (size_t)(n_out - 1) * sizeof *out);
    return feed(s, V, tail, n_out, out, lp, err);
}

/* Every token id in [0, V) and the context big enough. */
static int check_sequence(int max_ctx, int V, const int32_t *prompt, int n_prompt, const int32_t *out, int n_out,
                          SpErr *err) {
    if (n_prompt < 1) return sp_fail(err, "score: empty prompt");
    if (n_prompt + n_out - 1 > max_ctx)
        return sp_fail(err, "score: prompt %d + output %d tokens exceed the context of %d", n_prompt, n_out, max_ctx);
    for (int t = 0; t < n_prompt + n_out; t++) {
        int32_t x = t < n_prompt ? prompt[t] : out[t - n_prompt];
        if (x < 0 || x >= V) return sp_fail(err, "score: token %d at position %d is out of the vocabulary [0, %d)", x, t, V);
    }
    return 0;
}

int score_logprobs(Session *s, int V, const int32_t *prompt, int n_prompt, const int32_t *out, int n_out, double *lp,
                   SpErr *err) {
    if (check_sequence(session_max_ctx(s), V, prompt, n_prompt, out, n_out, err)) return -1;
    if (n_out == 0) return 0;
    int32_t *tail = malloc((size_t)n_out * sizeof *tail);
    if (!tail) return sp_fail(err, "out of memory");
    int rc = score_prefix(s, V, prompt, n_prompt, err) || score_tail(s, V, prompt, n_prompt, out, n_out, tail, lp, err);
    free(tail);
    return rc ? -1 : 0;
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
    const char *hash; /* the run's */
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

static void bind_opt_double(sqlite3_stmt *st, int i, int ok, double v) {
    if (ok && isfinite(v)) sqlite3_bind_double(st, i, v);
    else sqlite3_bind_null(st, i);
}

/* rows[0..n) (of any runs) in one transaction. */
static int insert_rows(const Ctx *c, sqlite3 *h, const OutRow *rows, int n, int64_t *added, SpErr *err) {
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
        sqlite3_bind_text(st, 1, o->hash, -1, SQLITE_STATIC);
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

/* ------------------------------------------------------------------ a worker's share, by prompt */

/* One output to score: prompt p of run k (index into c->todo), its prompt ids and its output tokens. */
typedef struct Item {
    int k;
    const TodoPrompt *p;
    int32_t *ids;       /* [p->n_prompt_tokens], owned */
    const int32_t *out; /* [n_out], in run k's token log */
    int n_out;
} Item;

/* What a worker reads: every run's prompts to score and token log; its items. */
typedef struct Share {
    TodoPrompt **todo; /* [n_todo runs] */
    int *n_prompts;
    TokenRows *logs;
    Item *items;
    int n_items;
} Share;

static void share_free(const Ctx *c, Share *w) {
    for (int k = 0; k < c->n_todo; k++) {
        if (w->todo && w->n_prompts) todo_free(w->todo[k], w->n_prompts[k]);
        if (w->logs) tokrows_free(&w->logs[k]);
    }
    for (int i = 0; i < w->n_items; i++) free(w->items[i].ids);
    free(w->todo), free(w->n_prompts), free(w->logs), free(w->items);
}

/* The worker that scores the outputs of a prompt: by dataset and prompt index, so that every run's
 * output of a prompt lands with the same worker and shares its prefix. */
static int owner_of(const ScoreRun *r, const TodoPrompt *p, int n_workers) {
    uint64_t h = (uint64_t)(unsigned)r->data * 0x9E3779B97F4A7C15ull ^ (uint64_t)(unsigned)p->prompt_index * 0xC2B2AE3D27D4EB4Full;
    return (int)((h ^ (h >> 29)) % (uint64_t)n_workers);
}

/* Reads every run's prompts and log and makes the items this worker owns (prompt ids included). */
static int share_read(const Ctx *c, sqlite3 *h, int worker, int n_workers, Share *w, SpErr *err) {
    memset(w, 0, sizeof *w);
    const ModelConfig *mc = model_config(c->m.target);
    int n = c->n_todo, cap = 0;
    w->todo = calloc((size_t)n, sizeof *w->todo);
    w->n_prompts = calloc((size_t)n, sizeof *w->n_prompts);
    w->logs = calloc((size_t)n, sizeof *w->logs);
    if (!w->todo || !w->n_prompts || !w->logs) return sp_fail(err, "out of memory");
    for (int k = 0; k < n; k++) {
        const ScoreRun *r = &c->runs[c->todo[k]];
        if (todo_prompts(h, c->db_path, r->hash, &w->todo[k], &w->n_prompts[k], err)) return -1;
        int mine = 0;
        for (int i = 0; i < w->n_prompts[k]; i++) mine += owner_of(r, &w->todo[k][i], n_workers) == worker;
        if (mine == 0) continue;
        if (read_log(c, h, r, &w->logs[k], err)) return -1;
        char log_path[4600];
        snprintf(log_path, sizeof log_path, "%s/%s", c->o->results_dir, r->token_log);
        for (int i = 0; i < w->n_prompts[k]; i++) {
            const TodoPrompt *p = &w->todo[k][i];
            if (owner_of(r, p, n_workers) != worker) continue;
            if (w->n_items == cap) {
                Item *ni = realloc(w->items, (size_t)(cap = cap ? 2 * cap : 256) * sizeof *ni);
                if (!ni) return sp_fail(err, "out of memory");
                w->items = ni;
            }
            Item *it = &w->items[w->n_items];
            int64_t start = 0;
            memset(it, 0, sizeof *it);
            if (find_output(&w->logs[k], log_path, p, &start, &it->n_out, err) || prompt_ids(c, r, p, &it->ids, err))
                return -1;
            w->n_items++;
            it->k = k, it->p = p, it->out = w->logs[k].token + start;
            if (check_sequence(mc->max_pos, mc->vocab_size, it->ids, p->n_prompt_tokens, it->out, it->n_out, err))
                return sp_err_prefix(err, "run %.12s prompt %d", r->hash, p->prompt_index);
        }
    }
    return 0;
}

/* Token sequences by length, then lexicographically. */
static int cmp_ids(const int32_t *a, int na, const int32_t *b, int nb) {
    if (na != nb) return na < nb ? -1 : 1;
    for (int i = 0; i < na; i++)
        if (a[i] != b[i]) return a[i] < b[i] ? -1 : 1;
    return 0;
}

static int same_prompt(const Item *a, const Item *b) {
    return cmp_ids(a->ids, a->p->n_prompt_tokens, b->ids, b->p->n_prompt_tokens) == 0;
}

/* Items in prompt order (cmp_ids of the prompts), the same prompt's outputs by output: a prompt's
 * outputs are adjacent, identical outputs next to each other. */
static int cmp_item(const void *x, const void *y) {
    const Item *a = x, *b = y;
    int c = cmp_ids(a->ids, a->p->n_prompt_tokens, b->ids, b->p->n_prompt_tokens);
    if (c == 0) c = cmp_ids(a->out, a->n_out, b->out, b->n_out);
    if (c == 0) c = (a->k > b->k) - (a->k < b->k);
    return c;
}

/* The row of item it: lp_sum of its lp (or the previous identical output's), the decoded text. */
static int item_row(const Ctx *c, const Item *it, double lp_sum, OutRow *row, SpErr *err) {
    const ScoreRun *r = &c->runs[c->todo[it->k]];
    row->hash = r->hash;
    row->prompt_index = it->p->prompt_index;
    row->n_prompt = it->p->n_prompt_tokens;
    row->n_tokens = it->n_out;
    row->lp_sum = lp_sum;
    size_t len;
    if (tokenizer_decode(c->m.tokenizer, it->out, (size_t)it->n_out, 1, &row->text, &len, err))
        return sp_err_prefix(err, "%s/%s: prompt %d: decode", c->o->results_dir, r->token_log, it->p->prompt_index);
    for (size_t i = 0; i < len; i++) /* a NUL byte (a byte token) would end the SQLite text early */
        if (row->text[i] == '\0') row->text[i] = '?';
    db_text_sanitize(row->text);
    return 0;
}

/* Scores items[a..b), one prompt's outputs: its prefix once, each distinct output's tail, one
 * transaction for the rows. */
static int score_group(const Ctx *c, Db *db, Session *s, const Item *items, int a, int b, int32_t *tail, double *lp,
                       OutRow *rows, int64_t *added, int *reused, SpErr *err) {
    int V = model_config(c->m.target)->vocab_size, n_prompt = items[a].p->n_prompt_tokens, rc = 0;
    const int32_t *ids = items[a].ids;
    if (score_prefix(s, V, ids, n_prompt, err)) rc = -1;
    double lp_sum = 0;
    for (int i = a; rc == 0 && i < b; i++) {
        const Item *it = &items[i];
        int again = i > a && cmp_ids(it->out, it->n_out, items[i - 1].out, items[i - 1].n_out) == 0;
        if (!again) {
            if (score_tail(s, V, ids, n_prompt, it->out, it->n_out, tail, lp, err))
                rc = sp_err_prefix(err, "run %.12s prompt %d", c->runs[c->todo[it->k]].hash, it->p->prompt_index);
            lp_sum = 0;
            for (int t = 0; rc == 0 && t < it->n_out; t++) lp_sum += lp[t];
        }
        *reused += again;
        if (rc == 0) rc = item_row(c, it, lp_sum, &rows[i - a], err);
    }
    if (rc == 0) rc = insert_rows(c, db_sqlite(db), rows, b - a, added, err);
    for (int i = 0; i < b - a; i++) free(rows[i].text), rows[i].text = NULL;
    return rc;
}

/* Scores the outputs of the prompts this worker owns (owner_of), prompt by prompt. */
static int score_share(const Ctx *c, Db *db, int worker, int n_workers, int64_t *added, SpErr *err) {
    Share w;
    int ctx = model_config(c->m.target)->max_pos, rc = share_read(c, db_sqlite(db), worker, n_workers, &w, err);
    Session *s = rc ? NULL : session_new(c->m.target, ctx, ctx < SCORE_BATCH ? ctx : SCORE_BATCH, err);
    int32_t *tail = malloc((size_t)(ctx + 1) * sizeof *tail);
    double *lp = malloc((size_t)(ctx + 1) * sizeof *lp);
    OutRow *rows = calloc((size_t)(w.n_items ? w.n_items : 1), sizeof *rows);
    if (rc == 0 && (!s || !tail || !lp || !rows)) rc = s ? sp_fail(err, "out of memory") : -1;
    if (rc == 0) qsort(w.items, (size_t)w.n_items, sizeof *w.items, cmp_item);
    int prompts = 0, reused = 0;
    int64_t tokens = 0;
    for (int a = 0, b; rc == 0 && a < w.n_items; a = b, prompts++) {
        for (b = a + 1; b < w.n_items && same_prompt(&w.items[a], &w.items[b]);) b++;
        rc = score_group(c, db, s, w.items, a, b, tail, lp, rows, added, &reused, err);
        for (int i = a; i < b; i++) tokens += w.items[i].n_out;
    }
    if (rc == 0 && c->o->progress)
        fprintf(stderr, "score: worker %d: %d outputs of %d prompts (%d identical to the one before, not recomputed), "
                        "%lld tokens\n", worker, w.n_items, prompts, reused, (long long)tokens);
    session_free(s);
    free(tail), free(lp), free(rows);
    share_free(c, &w);
    return rc;
}

/* ------------------------------------------------------------------ workers */

static int run_workers(Ctx *c, int jobs, SpErr *err) {
    fflush(NULL);
    pid_t parent = getpid();
    int n = 0, failed = 0;
    for (int w = 0; w < jobs; w++) {
        pid_t pid = sp_fork_worker(parent); /* a killed score takes its workers with it */
        if (pid < 0) {
            sp_fail(err, "fork: %s", strerror(errno));
            failed = 1;
            break;
        }
        if (pid == 0) {
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
