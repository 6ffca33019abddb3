/* runner.c - sweep execution, resume, worker processes, progress, merge (see runner.h). */
#include "runner.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "proc.h"
#include "dataset.h"
#include "schema.h"
#include "setup.h"
#include "fsutil.h"
#include "resultsdir.h"
#include "hashutil.h"
#include "model.h"
#include "prefill_memo.h"
#include "tokenizer.h"
#include "tokenlog.h"
#include "verifier.h"
#include "verifier_train.h"

/* What run_one returns besides -1 (an error that stops the sweep). */
enum { RUN_DONE = 0, RUN_FAILED = 1 };

/* ------------------------------------------------------------------ small helpers */

static void sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}


/* `git -C dir rev-parse HEAD` (+ "-dirty" when tracked files differ from it); 0 or -1. */
static int git_commit_in(const char *dir, char *out, size_t cap) {
    char cmd[8300], line[128] = "";
    if (strchr(dir, '\'')) return -1;
    snprintf(cmd, sizeof cmd, "git -C '%s' rev-parse HEAD 2>/dev/null", dir);
    FILE *p = popen(cmd, "r");
    if (!p) return -1;
    int ok = fgets(line, sizeof line, p) != NULL;
    if (pclose(p) != 0 || !ok) return -1;
    line[strcspn(line, "\r\n")] = '\0';
    if (strlen(line) != 40) return -1;
    snprintf(cmd, sizeof cmd, "git -C '%s' diff --quiet HEAD -- 2>/dev/null", dir);
    int dirty = system(cmd) != 0;
    snprintf(out, cap, "%s%s", line, dirty ? "-dirty" : "");
    return 0;
}

/* The commit of the source tree: tried from the spec's directory, then the executable's, then the
 * working directory; "unknown" outside a git checkout. */
static void git_commit(const char *spec_path, char *out, size_t cap) {
    char dirs[3][4096];
    snprintf(dirs[0], sizeof dirs[0], "%s", spec_path);
    char *slash = strrchr(dirs[0], '/');
    if (slash) *slash = '\0';
    else snprintf(dirs[0], sizeof dirs[0], ".");
    ssize_t n = readlink("/proc/self/exe", dirs[1], sizeof dirs[1] - 1);
    dirs[1][n > 0 ? n : 0] = '\0';
    if ((slash = strrchr(dirs[1], '/'))) *slash = '\0';
    snprintf(dirs[2], sizeof dirs[2], ".");
    for (int i = 0; i < 3; i++)
        if (dirs[i][0] && git_commit_in(dirs[i], out, cap) == 0) return;
    snprintf(out, cap, "unknown");
}

/* ------------------------------------------------------------------ progress */

typedef struct Progress {
    int enabled, tty;
    int total, done;          /* runs of this shard; done includes those skipped */
    int64_t tokens;           /* emitted in this invocation */
    int64_t expected;         /* tokens this invocation will emit at most */
    double t0, last;
} Progress;

static void progress_print(Progress *p, int final, const char *what) {
    if (!p->enabled) return;
    double t = sp_now_s(), el = t - p->t0;
    if (p->tty && !final && t - p->last < 0.25) return;
    p->last = t;
    double rate = el > 0 ? (double)p->tokens / el : 0;
    char eta[32] = "-";
    if (rate > 0 && p->expected > p->tokens) {
        int s = (int)((double)(p->expected - p->tokens) / rate + 0.5);
        snprintf(eta, sizeof eta, "%d:%02d:%02d", s / 3600, s / 60 % 60, s % 60);
    } else if (p->done == p->total) {
        snprintf(eta, sizeof eta, "0:00:00");
    }
    if (p->tty)
        fprintf(stderr, "\rsweep: %d/%d runs  %lld tokens  %.1f tok/s  ETA %s\033[K%s", p->done, p->total,
                (long long)p->tokens, rate, eta, final ? "\n" : "");
    else if (final || what)
        fprintf(stderr, "sweep: %d/%d runs  %lld tokens  %.1f tok/s  ETA %s%s%s\n", p->done, p->total,
                (long long)p->tokens, rate, eta, what && *what ? "  " : "", what ? what : "");
    fflush(stderr);
}

/* ------------------------------------------------------------------ prepared inputs */

typedef struct Prompts {
    Dataset ds;
    int32_t **ids; /* [n_prompts] token ids (truncated to max_prompt); NULL for a conversation's later
                      turn, whose prompt holds the run's own earlier answers (made in decode_prompts) */
    int *n, *truncated;
    int n_max;      /* longest prompt (max_prompt when later turns are made at run time) */
    int max_prompt; /* the most prompt tokens a context leaves room for */
} Prompts;

typedef struct VerEntry {
    double lambda;
    char path[4096], sha256[SP_SHA256_HEX];
    Verifier v;
} VerEntry;

/* What identifies a file's content cheaply: a file replaced or rewritten in place (cp, safetensors'
 * save_file) changes its size, mtime or inode. */
typedef struct FileStamp {
    char path[4400];
    dev_t dev;
    ino_t ino;
    off_t size;
    struct timespec mtime;
} FileStamp;

typedef struct Ctx {
    SweepSpec *s;
    const RunnerOpts *o;
    RunConfig *runs;
    int n_runs;
    int *pending, n_pending;
    RunModels m; /* the models the methods use, the tokenizer (engine/decode/setup.h) */
    PromptFormat fmt; /* [data] prompt_template, with the chat template of the tokenizer's model */
    Prompts prompts[SPEC_MAX_DATASETS];
    VerEntry vers[SPEC_MAX_LIST];
    int n_vers;
    VerEntry judges[SPEC_MAX_LIST]; /* judge heads, one per judge_rho (VerEntry.lambda holds the rho) */
    int n_judges;
    char git[64], host[256], db_path[4200];
    Db *db;
    int lock_fd; /* -1 or the locked OUT/.sweep.lock */
    Progress prog;
    int checkpoints;
    FileStamp *stamps; /* every file of the model directories as loaded (changed_input checks them) */
    int n_stamps;
    int inputs_loaded; /* load_inputs has run */
    size_t created_out; /* the levels of the results directory this sweep created (resultsdir.h; 0: none) */
    /* the batched statistics runs' first forward calls, kept across this process's runs (run_decoders_open;
     * made on first use, after a worker's fork) */
    PrefillMemo *prefill_memo;
} Ctx;

/* SIGINT / SIGTERM: the handler only records the signal (the one piece of process-global state
 * here, as signal handlers require); the sweep checks it after each prompt, discards the run in
 * progress (token log deleted, run left 'running' so the next sweep redoes it) and stops. */
static volatile sig_atomic_t g_stop_signal;

static void on_stop_signal(int sig) { g_stop_signal = sig; }

/* Tests: kill this process at the K-th checkpoint to exercise every interruption point. */
static void checkpoint(Ctx *c) {
    if (c->o->test_crash_at > 0 && ++c->checkpoints == c->o->test_crash_at) {
        fflush(NULL);
        raise(SIGKILL);
    }
}

/* Stamps path into c->stamps when it is a regular file (0 and nothing stamped otherwise). */
static int stamp_file(Ctx *c, const char *path, SpErr *err) {
    FileStamp f = {0};
    struct stat st;
    snprintf(f.path, sizeof f.path, "%s", path);
    if (stat(f.path, &st) != 0 || !S_ISREG(st.st_mode)) return 0;
    f.dev = st.st_dev, f.ino = st.st_ino, f.size = st.st_size, f.mtime = st.st_mtim;
    FileStamp *grown = realloc(c->stamps, (size_t)(c->n_stamps + 1) * sizeof *grown);
    if (!grown) return sp_fail(err, "out of memory");
    (c->stamps = grown)[c->n_stamps++] = f;
    return 0;
}

/* Stamps every regular file of dir (a model directory), or the file itself when it is a GGUF file alone. */
static int stamp_dir(Ctx *c, const char *dir, SpErr *err) {
    if (sp_is_gguf_file(dir)) return stamp_file(c, dir, err);
    DIR *d = opendir(dir);
    if (!d) return sp_fail(err, "%s: cannot list: %s", dir, strerror(errno));
    int rc = 0;
    for (struct dirent *e; rc == 0 && (e = readdir(d));) {
        char path[sizeof c->stamps->path];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        rc = stamp_file(c, path, err);
    }
    closedir(d);
    return rc;
}

/* The first model file whose stamp changed since the models were loaded, or NULL. */
static const char *changed_input(const Ctx *c) {
    for (int i = 0; i < c->n_stamps; i++) {
        const FileStamp *f = &c->stamps[i];
        struct stat st;
        if (stat(f->path, &st) != 0 || st.st_dev != f->dev || st.st_ino != f->ino || st.st_size != f->size ||
            st.st_mtim.tv_sec != f->mtime.tv_sec || st.st_mtim.tv_nsec != f->mtime.tv_nsec)
            return f->path;
    }
    return NULL;
}

static int load_models(Ctx *c, SpErr *err) {
    SweepSpec *s = c->s;
    int need_draft = 0, need_target = 0;
    for (int i = 0; i < s->n_methods; i++) {
        need_draft |= method_is(s->methods[i], MC_USES_DRAFT);
        need_target |= method_is(s->methods[i], MC_USES_TARGET);
    }
    RunSetup rs = {need_draft ? s->draft_dir : NULL, need_target ? s->target_dir : NULL, 1, NULL};
    if (run_models_open(&c->m, &rs, err)) return sp_err_prefix(err, "%s: [models]", s->path);
    if ((c->m.draft && stamp_dir(c, s->draft_dir, err)) || (c->m.target && stamp_dir(c, s->target_dir, err))) return -1;
    if (prompt_format_init(&c->fmt, s->prompt_template, c->m.tokenizer_dir, c->m.tokenizer, err))
        return sp_err_prefix(err, "%s", s->path);
    return 0;
}

/* Loads dataset d and tokenizes the prompts that do not depend on a run: every first turn, laid out
 * by [data] prompt_template (data/loaders/prompt.h). Prompts longer than max_prompt keep their last
 * max_prompt tokens (the part that conditions the continuation), as verifier collection does. */
static int load_prompts(Ctx *c, int d, int max_prompt, SpErr *err) {
    SweepSpec *s = c->s;
    Prompts *P = &c->prompts[d];
    const char *path = s->datasets[d];
    int need = s->prompt_offset + s->n_prompts;
    if (dataset_load(path, s->data_format[0] ? s->data_format : NULL, need, &P->ds, err)) return -1;
    if (P->ds.n_empty_refs && c->o->progress) /* a data flaw is named, never skipped silently */
        fprintf(stderr, "sweep: %s: %d reference%s given as an empty string (the first at line %d): no ROUGE for %s\n",
                path, P->ds.n_empty_refs, P->ds.n_empty_refs > 1 ? "s" : "", P->ds.first_empty_ref_line,
                P->ds.n_empty_refs > 1 ? "those turns" : "that turn");
    if (P->ds.n < need)
        return sp_fail(err, "%s: [data] n_prompts: %s has %d prompts, offset %d + n_prompts %d needs %d", s->path, path,
                       P->ds.n, s->prompt_offset, s->n_prompts, need);
    const Example *first = &P->ds.ex[s->prompt_offset];
    if (first->turn > 0)
        return sp_fail(err, "%s: [data] offset: prompt %d of %s is turn %d of question %s, whose earlier turns the "
                            "sweep would not run (start the offset at its turn 1)",
                       s->path, s->prompt_offset, path, first->turn + 1, first->id);
    P->ids = calloc((size_t)s->n_prompts, sizeof *P->ids);
    P->n = calloc((size_t)s->n_prompts, sizeof *P->n);
    P->truncated = calloc((size_t)s->n_prompts, sizeof *P->truncated);
    if (!P->ids || !P->n || !P->truncated) return sp_fail(err, "out of memory");
    P->max_prompt = max_prompt;
    if (dataset_has_turns(&P->ds, s->prompt_offset, s->n_prompts)) P->n_max = max_prompt;
    const ModelConfig *mc = model_config(run_models_any(&c->m));
    for (int i = 0; i < s->n_prompts; i++) {
        int index = s->prompt_offset + i;
        if (P->ds.ex[index].turn > 0) continue;
        char *text = prompt_text(&c->fmt, &P->ds, index, NULL, err);
        if (!text || prompt_encode(&c->fmt, c->m.tokenizer, mc->bos_id, text, max_prompt, &P->ids[i], &P->n[i],
                                   &P->truncated[i], err)) {
            free(text);
            return sp_err_prefix(err, "%s: prompt %d (id %s)", path, index, P->ds.ex[index].id);
        }
        free(text);
        if (P->n[i] > P->n_max) P->n_max = P->n[i];
    }
    return 0;
}

static void prompts_free(Prompts *P, int n_prompts) {
    for (int i = 0; P->ids && i < n_prompts; i++) free(P->ids[i]);
    free(P->ids);
    free(P->n);
    free(P->truncated);
    dataset_free(&P->ds);
}

static VerEntry *find_verifier(Ctx *c, double lambda) {
    for (int i = 0; i < c->n_vers; i++)
        if (c->vers[i].lambda == lambda) return &c->vers[i];
    return NULL;
}

static VerEntry *find_judge(Ctx *c, double rho) {
    for (int i = 0; i < c->n_judges; i++)
        if (c->judges[i].lambda == rho) return &c->judges[i];
    return NULL;
}

/* The training settings of [verifier] (for a verifier and for a judge head alike). */
static void spec_train(const SweepSpec *s, TrainSpec *ts) {
    train_spec_default(ts);
    ts->l2 = s->ver_l2;
    ts->val_fraction = s->ver_val_fraction;
    ts->tau = s->ver_tau;
    ts->seed = s->ver_seed;
}

/* Trains (or finds in the cache) the head cs and ts describe into v, for the runs whose `what`
 * ("lambda", "judge_rho") is key; one progress line before and one with its metrics after. */
static int ensure_head(Ctx *c, const char *head, const char *what, double key, const CollectSpec *cs,
                       const TrainSpec *ts, VerEntry *v, SpErr *err) {
    VerifierMetrics m;
    if (c->o->progress) fprintf(stderr, "sweep: %s for %s = %g (cache %s)\n", head, what, key, c->o->verifier_cache);
    if (verifier_ensure(cs, ts, c->o->verifier_cache, v->path, sizeof v->path, &m, err))
        return sp_err_prefix(err, "%s for %s %g", head, what, key);
    if (sha256_file(v->path, v->sha256, err) || verifier_load(v->path, &v->v, err)) return -1;
    v->lambda = key;
    if (c->o->progress)
        fprintf(stderr, "sweep: %s %s = %g: %s (val AUC %.3f, eta_FP %.3f, eta_TP %.3f at tau %g)\n", head, what, key,
                v->path, m.val_auc, m.eta_fp, m.eta_tp, m.tau);
    return 0;
}

/* A head to prepare: a verifier (the key is lambda) or a judge head (judge_rho), and what it is
 * collected and trained from. */
typedef struct HeadNeed {
    int judge;
    double key;
    CollectSpec cs;
    TrainSpec ts;
} HeadNeed;

/* The heads the runs idx[0..n) need that are not loaded yet, one per lambda (method with
 * MC_NEEDS_VERIFIER) and one per judge_rho (MC_NEEDS_JUDGE, collected on [verifier]'s data and settings
 * with the target's states, CollectSpec.source, and trained by the sound recipe on the token feature),
 * into need[0..return); -1 (err) past SPEC_MAX_LIST of either. */
static int heads_needed(Ctx *c, const int *idx, int n, HeadNeed *need, SpErr *err) {
    const SweepSpec *s = c->s;
    int m = 0, n_ver = c->n_vers, n_judge = c->n_judges;
    for (int k = 0; k < n; k++)
        for (int judge = 0; judge < 2; judge++) {
            const RunConfig *r = &c->runs[idx[k]];
            if (!method_is(r->dc.method, judge ? MC_NEEDS_JUDGE : MC_NEEDS_VERIFIER)) continue;
            double key = judge ? r->dc.judge_rho : r->dc.lambda;
            if (judge ? find_judge(c, key) != NULL : find_verifier(c, key) != NULL) continue;
            int seen = 0;
            for (int j = 0; j < m; j++) seen |= need[j].judge == judge && need[j].key == key;
            if (seen) continue;
            if ((judge ? ++n_judge : ++n_ver) > SPEC_MAX_LIST)
                return sp_fail(err, "%s: more than %d %s", s->path, SPEC_MAX_LIST,
                               judge ? "judge_rho values" : "lambdas");
            HeadNeed *h = &need[m++];
            h->judge = judge;
            h->key = key;
            h->cs = (CollectSpec){s->draft_dir, s->target_dir, s->ver_data, s->ver_format[0] ? s->ver_format : NULL,
                                  s->ver_n_prompts, s->ver_max_new, judge ? SP_DEFAULT_LAMBDA : key, s->sampling,
                                  s->ver_seed, judge ? PROTOCOL_SOUND : s->label_rule, judge ? VS_TARGET : VS_DRAFT,
                                  judge ? key : 0, s->batch};
            spec_train(s, &h->ts);
            if (!judge) {
                h->ts.recipe = s->ver_recipe;
                h->ts.feature = s->ver_feature;
                h->ts.padded_batches = s->ver_padded_batches;
            }
        }
    return m;
}

/* With --jobs above 1 and several heads to make: collects and trains them into the cache in up to
 * `jobs` processes at once (head i in process i % jobs), so that the loading that follows finds
 * them. Only a speed-up: a process that fails leaves its heads to that loading, which redoes them and
 * reports the error. The sweep's database connection is closed across the fork and opened again
 * (-1 only when that fails). */
static int heads_fill_cache(Ctx *c, const HeadNeed *need, int m, SpErr *err) {
    int jobs = c->o->jobs < m ? c->o->jobs : m, had_db = c->db != NULL;
    if (jobs < 2) return 0;
    if (had_db) { /* an SQLite connection must not cross fork() */
        db_close(c->db);
        c->db = NULL;
    }
    fflush(NULL);
    pid_t parent = getpid(), pids[256];
    int n = 0;
    for (int w = 0; w < jobs && w < 256; w++) {
        pid_t pid = sp_fork_worker(parent); /* killed with the sweep */
        if (pid < 0) break;
        if (pid == 0) {
            int rc = 0;
            for (int i = w; i < m; i += jobs) {
                char path[4096];
                VerifierMetrics vm;
                SpErr e = {{0}};
                if (c->o->progress)
                    fprintf(stderr, "sweep: %s for %s = %g (process %d of %d, cache %s)\n",
                            need[i].judge ? "judge head" : "verifier", need[i].judge ? "judge_rho" : "lambda",
                            need[i].key, w + 1, jobs, c->o->verifier_cache);
                rc |= verifier_ensure(&need[i].cs, &need[i].ts, c->o->verifier_cache, path, sizeof path, &vm, &e) != 0;
            }
            fflush(NULL);
            _exit(rc);
        }
        pids[n++] = pid;
    }
    for (int i = 0; i < n; i++)
        while (waitpid(pids[i], NULL, 0) < 0 && errno == EINTR) {}
    return had_db && !(c->db = db_open(c->db_path, err)) ? -1 : 0;
}

/* A head for every lambda and judge_rho the runs idx[0..n) need (trained once, cached by a hash of
 * what it is trained from), loaded into c->vers and c->judges. */
static int prepare_heads(Ctx *c, const int *idx, int n, SpErr *err) {
    HeadNeed *need = calloc(2 * SPEC_MAX_LIST + 1, sizeof *need);
    if (!need) return sp_fail(err, "out of memory");
    int m = heads_needed(c, idx, n, need, err), rc = m < 0 ? -1 : 0;
    if (m > 1 && heads_fill_cache(c, need, m, err)) rc = -1;
    for (int i = 0; i < m && rc == 0; i++) {
        const HeadNeed *h = &need[i];
        VerEntry *v = h->judge ? &c->judges[c->n_judges] : &c->vers[c->n_vers];
        rc = ensure_head(c, h->judge ? "judge head" : "verifier", h->judge ? "judge_rho" : "lambda", h->key, &h->cs,
                         &h->ts, v, err);
        if (rc == 0) h->judge ? c->n_judges++ : c->n_vers++;
    }
    free(need);
    return rc;
}

/* ------------------------------------------------------------------ one run */

static void fill_row(PromptRow *row, const RunConfig *r, const DecodeOutput *o) {
    row->st = o->stats;
    int64_t streak = 0;
    for (int i = 0; i < o->n_events; i++) {
        const TokenEvent *e = &o->events[i];
        if (e->kind == EV_VERIFIER_ACCEPT) {
            row->verifier_accepts++;
            if (++streak > row->longest_run) row->longest_run = streak;
        } else {
            streak = 0;
        }
        if (e->decision < 0 || e->label < 0) continue;
        row->n_audited++;
        if (e->label == 1) row->pos++, row->tp += e->decision == 1;
        else row->neg++, row->fp += e->decision == 1;
    }
    /* without the audit only the target-called decisions have labels: a biased sample, not stored */
    row->audited = r->dc.audit && method_is(r->dc.method, MC_DECIDES);
    if (!row->audited) row->n_audited = row->pos = row->neg = row->tp = row->fp = 0;
}

static void token_paths(const Ctx *c, const RunConfig *r, char *rel, size_t rcap, char *abs, size_t acap) {
    snprintf(rel, rcap, "tokens/%s.h5", r->hash);
    snprintf(abs, acap, "%s/%s", c->o->out_dir, rel);
}

static void remove_run_files(const Ctx *c, const RunConfig *r) {
    char rel[128], abs[4400], tmp[4500];
    token_paths(c, r, rel, sizeof rel, abs, sizeof abs);
    snprintf(tmp, sizeof tmp, "%s.tmp", abs);
    unlink(abs);
    unlink(tmp);
}

/* The token ids of prompt i of run r: the shared ones of a first turn (*owned NULL), or, for a later
 * turn, its conversation with this run's answers[] to the earlier turns, encoded now (*owned: the
 * caller frees it). */
static int run_prompt_ids(const Ctx *c, const RunConfig *r, int i, const char *const *answers, const int32_t **ids,
                          int32_t **owned, int *n, int *truncated, SpErr *err) {
    const Prompts *P = &c->prompts[r->dataset];
    const SweepSpec *s = c->s;
    int index = s->prompt_offset + i, turn = P->ds.ex[index].turn;
    *owned = NULL;
    if (turn == 0) {
        *ids = P->ids[i];
        *n = P->n[i];
        *truncated = P->truncated[i];
        return 0;
    }
    const ModelConfig *mc = model_config(run_models_any(&c->m));
    char *text = prompt_text(&c->fmt, &P->ds, index, answers + (i - turn), err);
    int rc = text ? prompt_encode(&c->fmt, c->m.tokenizer, mc->bos_id, text, P->max_prompt, owned, n, truncated, err)
                  : -1;
    free(text);
    *ids = *owned;
    return rc ? sp_err_prefix(err, "%s: prompt %d (id %s, turn %d)", s->datasets[r->dataset], index, P->ds.ex[index].id, turn + 1)
              : 0;
}

/* The decoders a run's prompts are decoded with: batch of them ([decode] batch; the first is the run's
 * own), made for the run, freed after it. */
typedef struct RunDecoders {
    Decoder *dec[SPEC_MAX_BATCH];
    int n;
} RunDecoders;

/* Where a prompt of decode_prompts stands. */
enum { PS_WAITING, PS_DECODED, PS_LOGGED };

/* A prompt of a group: its row's identity, ids, RNG and decode. */
typedef struct PromptJob {
    const int32_t *ids;
    int32_t *owned;
    gsl_rng *rng;
    DecodeJob job;
} PromptJob;

/* Prompt i's row fields, ids and RNG (its own stream, seeded by prompt_seed). */
static int prompt_begin(Ctx *c, const RunConfig *r, int i, char **answers, PromptRow *row, PromptJob *pj, SpErr *err) {
    const SweepSpec *s = c->s;
    const Prompts *P = &c->prompts[r->dataset];
    row->prompt_index = s->prompt_offset + i;
    const Example *ex = &P->ds.ex[row->prompt_index];
    row->example_id = ex->id;
    row->category = ex->category;
    row->turn = ex->turn;
    if (run_prompt_ids(c, r, i, (const char *const *)answers, &pj->ids, &pj->owned, &row->n_prompt_tokens,
                       &row->truncated, err))
        return -1;
    row->rng_seed = prompt_seed(r->seed, row->prompt_index);
    if (!(pj->rng = sampler_rng_new(row->rng_seed))) return sp_fail(err, "out of memory");
    return 0;
}

/* Prompt i decoded: its row, its text, and the answer a later turn of its conversation sees. */
static int prompt_end(Ctx *c, const RunConfig *r, int i, char **answers, PromptRow *row, const DecodeOutput *out,
                      SpErr *err) {
    fill_row(row, r, out);
    size_t len;
    if (tokenizer_decode(c->m.tokenizer, out->tokens, (size_t)out->n_tokens, 1, &row->output_text, &len, NULL) == 0)
        db_text_sanitize(row->output_text);
    else
        row->output_text = NULL;
    /* the answer a later turn sees: what `sprinter score` rebuilds from prompts.output_text */
    if (!(answers[i] = prompt_answer(row->output_text))) return sp_fail(err, "out of memory");
    return 0;
}

/* Prompt i may start once the turn before it in its conversation (prompt i - 1) has ended: it is
 * encoded after that turn's answer. */
static int prompt_ready(const Prompts *P, int offset, int i, const char *state) {
    return state[i] == PS_WAITING && (P->ds.ex[offset + i].turn == 0 || i == 0 || state[i - 1] != PS_WAITING);
}

/* The next group: up to batch prompts that are ready, lowest index first, into group[]; their count. */
static int next_group(const Prompts *P, int offset, int n, int batch, const char *state, int *group) {
    int g = 0;
    for (int i = 0; i < n && g < batch; i++)
        if (prompt_ready(P, offset, i, state)) group[g++] = i;
    return g;
}

/* Decodes the run's first n prompts into rows[0..n) and, when log is not NULL, their events into the
 * token log (a timing decode passes NULL: the run's log is already whole), with dc (r->dc, maybe with a
 * test fault): 0, RUN_FAILED (non-finite logits; err: "prompt P: draft model: logits ... contain NaN
 * ...") or -1. Prompts are decoded in groups of up to rd->n, one decoder each, in lock step
 * (decoder_run_batch): each group takes the lowest-numbered prompts that can start (a conversation's
 * later turn only after the turn before it has ended, with the run's answer to it), so a batch of
 * multi-turn conversations decodes their first turns together, then their second turns. Each prompt's
 * tokens and events are those of its decode alone, and they reach the token log in prompt order (a
 * prompt decoded early waits for the ones before it), so the results do not depend on the group size.
 * With rd->n > 1 no prompt row gets timings (a prompt's share of a batch's wall time is not its
 * latency: t_* are 0); the groups' wall time adds to *batched_s (the run's runs.tokens_per_s_batched).
 * With rd->n == 1 the prompts run one after the other in order. */
static int decode_prompts(Ctx *c, const RunConfig *r, const DecodeConfig *dc, RunDecoders *rd, TokenLog *log,
                          PromptRow *rows, int n, double *batched_s, SpErr *err) {
    const SweepSpec *s = c->s;
    const Prompts *P = &c->prompts[r->dataset];
    char **answers = calloc((size_t)n, sizeof *answers); /* [n] this run's answers */
    char *state = calloc((size_t)n, 1);                  /* [n] PS_* */
    DecodeOutput *outs = calloc((size_t)n, sizeof *outs); /* [n] decoded, not yet in the log */
    if (!answers || !state || !outs) {
        free(answers), free(state), free(outs);
        return sp_fail(err, "out of memory");
    }
    int rc = 0, logged = 0; /* prompts [0, logged) are in the log */
    while (logged < n && !rc) {
        int group[SPEC_MAX_BATCH];
        int g = next_group(P, s->prompt_offset, n, rd->n, state, group);
        if (g == 0) {
            rc = sp_fail(err, "run %.12s: no prompt can start (a turn whose conversation's earlier turn is missing)", r->hash);
            break;
        }
        PromptJob pj[SPEC_MAX_BATCH];
        memset(pj, 0, sizeof pj);
        int ready = 0;
        for (; ready < g && !rc; ready++) rc = prompt_begin(c, r, group[ready], answers, &rows[group[ready]], &pj[ready], err);
        for (int k = 0; k < g && !rc; k++)
            pj[k].job = (DecodeJob){.decoder = rd->dec[k], .cfg = dc, .prompt = pj[k].ids,
                                    .n_prompt = rows[group[k]].n_prompt_tokens, .rng = pj[k].rng};
        double t0 = sp_now_s();
        if (!rc && g == 1) {
            pj[0].job.rc = decoder_run(rd->dec[0], dc, pj[0].ids, rows[group[0]].n_prompt_tokens, pj[0].rng, &pj[0].job.out,
                                       &pj[0].job.err);
        } else if (!rc) {
            DecodeJob jobs[SPEC_MAX_BATCH];
            for (int k = 0; k < g; k++) jobs[k] = pj[k].job;
            rc = decoder_run_batch(jobs, g, err);
            for (int k = 0; k < g; k++) pj[k].job = jobs[k];
        }
        *batched_s += sp_now_s() - t0;
        /* the group's prompts in order; the first that failed ends the run, as it would alone */
        for (int k = 0; k < g && !rc; k++) {
            int i = group[k];
            PromptRow *row = &rows[i];
            DecodeJob *job = &pj[k].job;
            if (job->rc) {
                *err = job->err;
                if (job->rc == DECODE_ERR_NONFINITE) { /* the run fails (the same configuration fails again) */
                    sp_err_prefix(err, "prompt %d", row->prompt_index);
                    rc = RUN_FAILED;
                } else {
                    rc = sp_err_prefix(err, "run %.12s (%s) prompt %d", r->hash, decode_method_name(r->dc.method),
                                       row->prompt_index);
                }
                break;
            }
            rc = prompt_end(c, r, i, answers, row, &job->out, err);
            if (rd->n > 1) row->st.t_total = row->st.t_draft = row->st.t_target = row->st.t_verifier = row->st.t_audit = 0;
            outs[i] = job->out; /* the log takes it in prompt order, below */
            memset(&job->out, 0, sizeof job->out);
            state[i] = PS_DECODED;
        }
        for (; !rc && logged < n && state[logged] == PS_DECODED; logged++) {
            if (log) {
                rc = tokenlog_append(log, rows[logged].prompt_index, outs[logged].events, outs[logged].n_events, err);
                c->prog.tokens += outs[logged].n_tokens;
                if (!rc) {
                    progress_print(&c->prog, 0, NULL);
                    if (c->o->test_delay_ms > 0) sleep_ms(c->o->test_delay_ms);
                    checkpoint(c);
                }
            }
            decode_output_free(&outs[logged]);
            state[logged] = PS_LOGGED;
        }
        for (int k = 0; k < g; k++) {
            decode_output_free(&pj[k].job.out);
            if (pj[k].rng) gsl_rng_free(pj[k].rng);
            free(pj[k].owned);
        }
        if (!rc && g_stop_signal) rc = sp_fail(err, "interrupted by signal %d", (int)g_stop_signal);
    }
    for (int i = 0; i < n; i++) free(answers[i]), decode_output_free(&outs[i]);
    free(answers), free(state), free(outs);
    return rc;
}

/* Runs r from scratch: RUN_DONE (0), RUN_FAILED (marked failed in the database: decoding hit non-finite
 * logits; its token log deleted) or -1 (anything else: the sweep stops). */
/* The head run r's method needs, prepared by prepare_heads: the verifier, or the
 * judge head (a judge run records it as the run's verifier file), or NULL when it needs none. */
static int run_head(Ctx *c, const RunConfig *r, VerEntry **head, SpErr *err) {
    *head = NULL;
    if (method_is(r->dc.method, MC_NEEDS_VERIFIER) && !(*head = find_verifier(c, r->dc.lambda)))
        return sp_fail(err, "run %.12s: no verifier prepared", r->hash);
    if (method_is(r->dc.method, MC_NEEDS_JUDGE) && !(*head = find_judge(c, r->dc.judge_rho)))
        return sp_fail(err, "run %.12s: no judge head prepared", r->hash);
    return 0;
}

/* A decoder for run r: its models, its head, a context for its longest prompt. */
static Decoder *run_decoder(Ctx *c, const RunConfig *r, const VerEntry *head, SpErr *err) {
    int judged = method_is(r->dc.method, MC_NEEDS_JUDGE);
    int max_ctx = decode_context_of(&r->dc, c->prompts[r->dataset].n_max);
    Decoder *dec = decoder_new(method_is(r->dc.method, MC_USES_DRAFT) ? c->m.draft : NULL,
                               method_is(r->dc.method, MC_USES_TARGET) ? c->m.target : NULL,
                               head && !judged ? &head->v : NULL, max_ctx, err);
    if (dec && head && judged && decoder_set_judge(dec, &head->v, err)) {
        decoder_free(dec);
        return NULL;
    }
    return dec;
}

static void run_decoders_close(RunDecoders *rd) {
    for (int k = 0; k < rd->n; k++) decoder_free(rd->dec[k]);
    rd->n = 0;
}

/* The bytes of first forward calls a sweep process keeps (prefill_memo.h): the regime pair's 200 prompts
 * take about 120 MB per model, gpt2-124m's 5 MB a prompt. */
#define PREFILL_MEMO_BYTES ((size_t)1 << 30)

/* batch decoders for run r (run_decoder each), or -1 with none left open. With batch > 1 (a batched
 * statistics run: its prompt rows carry no latencies, decode_prompts) they share the process's prefill
 * memo (unless RunnerOpts.prefill_memo_off): a prompt's prefill that an earlier run made is loaded, not
 * run again (the same bits). A run decoded one prompt at a time (its latencies recorded, or a [timing]
 * repetition) runs every call. */
static int run_decoders_open(Ctx *c, const RunConfig *r, const VerEntry *head, int batch, RunDecoders *rd, SpErr *err) {
    rd->n = 0;
    int memo = batch > 1 && !c->o->prefill_memo_off;
    if (memo && !c->prefill_memo && !(c->prefill_memo = prefill_memo_new(PREFILL_MEMO_BYTES)))
        return sp_fail(err, "out of memory");
    for (int k = 0; k < batch; k++) {
        if (!(rd->dec[k] = run_decoder(c, r, head, err))) {
            run_decoders_close(rd);
            return -1;
        }
        if (memo) decoder_set_prefill_memo(rd->dec[k], c->prefill_memo);
        rd->n++;
    }
    return 0;
}

static int run_one(Ctx *c, const RunConfig *r, SpErr *err) {
    const SweepSpec *s = c->s;
    VerEntry *v;
    if (run_head(c, r, &v, err)) return -1;
    char rel[128], abs[4400], started[40], finished[40];
    token_paths(c, r, rel, sizeof rel, abs, sizeof abs);
    db_now_iso(started, sizeof started);
    RunMeta meta = {v ? v->path : NULL, v ? v->sha256 : NULL, c->git, c->host, rel, started};
    remove_run_files(c, r);
    if (db_run_begin(c->db, s, r, &meta, err)) return -1;
    checkpoint(c);
    RunDecoders rd;
    int batch = s->batch < s->n_prompts ? s->batch : s->n_prompts;
    if (run_decoders_open(c, r, v, batch, &rd, err)) return -1;
    PromptRow *rows = calloc((size_t)s->n_prompts, sizeof *rows);
    TokenLog log = {0};
    double batched_s = 0;
    int rc = -1;
    if (!rows) {
        sp_fail(err, "out of memory");
        goto done;
    }
    TokenLogMeta lm = {r->hash, decode_method_name(r->dc.method), r->canon, s->name, s->sha256, s->n_prompts};
    DecodeConfig dc = r->dc; /* the test fault below is not part of the configuration (nor of its hash) */
    dc.fault_nan_logits = c->o->test_nan_method && !strcmp(c->o->test_nan_method, decode_method_name(r->dc.method));
    if (tokenlog_create(&log, abs, &lm, err)) goto done;
    int drc = decode_prompts(c, r, &dc, &rd, &log, rows, s->n_prompts, &batched_s, err);
    if (drc == RUN_FAILED) {
        char reason[sizeof err->msg];
        snprintf(reason, sizeof reason, "%s", err->msg);
        tokenlog_abort(&log); /* no token log of a failed run, not even a partial one */
        db_now_iso(finished, sizeof finished);
        if (db_run_fail(c->db, r->hash, reason, finished, err)) goto done;
        sp_fail(err, "%s", reason); /* for the progress line */
        checkpoint(c);
        rc = RUN_FAILED;
        goto done;
    }
    /* the results stand for the content hashes the run is named by only if no model file changed */
    const char *changed = drc ? NULL : changed_input(c);
    if (changed) {
        sp_fail(err, "%s changed during the sweep (size, mtime or inode): run %.12s discarded; rerun the sweep (the "
                     "new content gets new run hashes)", changed, r->hash);
        goto done;
    }
    if (drc || tokenlog_commit(&log, err)) goto done;
    checkpoint(c);
    db_now_iso(finished, sizeof finished);
    RunThroughput tp = {batch, 0, batched_s};
    for (int i = 0; i < s->n_prompts; i++) tp.tokens += rows[i].st.tokens;
    if (db_run_finish(c->db, r->hash, rows, s->n_prompts, batch > 1 ? &tp : NULL, finished, log.content_hash, err)) goto done;
    checkpoint(c);
    rc = 0;
done:
    tokenlog_abort(&log);
    for (int i = 0; rows && i < s->n_prompts; i++) free(rows[i].output_text);
    free(rows);
    run_decoders_close(&rd);
    return rc;
}

/* "sprinter lambda=1.2 tau=0.5 seed=1 [0123456789ab]": a run as the sweep's progress and failure lines name it. */
static void run_progress_name(const RunConfig *r, char *buf, size_t cap) {
    char params[256];
    run_params_label(r, params, sizeof params);
    snprintf(buf, cap, "%s%s%s seed=%llu [%.12s]", decode_method_name(r->dc.method), params[0] ? " " : "", params,
             (unsigned long long)r->seed, r->hash);
}

/* Runs pending[k] for k % n_workers == worker; a run that fails (RUN_FAILED, recorded in the
 * database) does not stop the others. *ran counts the runs done, *failed those failed. */
static int run_share(Ctx *c, int worker, int n_workers, int *ran, int *failed, SpErr *err) {
    for (int k = worker; k < c->n_pending; k += n_workers) {
        const RunConfig *r = &c->runs[c->pending[k]];
        int rc = run_one(c, r, err);
        if (rc < 0) return -1;
        if (rc == RUN_FAILED) (*failed)++;
        else (*ran)++;
        c->prog.done++;
        char what[1500];
        run_progress_name(r, what, sizeof what);
        if (rc == RUN_FAILED) {
            size_t k2 = strlen(what);
            snprintf(what + k2, sizeof what - k2, " FAILED: %s", err->msg);
        }
        progress_print(&c->prog, 0, what);
    }
    return 0;
}

/* ------------------------------------------------------------------ worker processes */

static int run_workers(Ctx *c, int jobs, int *ran, int *n_failed, SpErr *err) {
    db_close(c->db); /* an SQLite connection must not cross fork() */
    c->db = NULL;
    fflush(NULL);
    pid_t parent = getpid();
    pid_t pids[256];
    int n = 0, forwarded = 0;
    for (int w = 0; w < jobs; w++) {
        pid_t pid = sp_fork_worker(parent); /* a killed sweep takes its workers with it */
        if (pid < 0) {
            sp_fail(err, "fork: %s", strerror(errno));
            break;
        }
        if (pid == 0) {
            SpErr e = {{0}};
            int k = 0, f = 0, rc = 1;
            c->prog.enabled = 0;
            if ((c->db = db_open(c->db_path, &e))) {
                rc = run_share(c, w, jobs, &k, &f, &e) ? 1 : 0; /* failed runs are in the database */
                db_close(c->db);
            }
            if (rc && !g_stop_signal) fprintf(stderr, "sprinter sweep: worker %d: %s\n", w, e.msg);
            fflush(NULL);
            _exit(rc);
        }
        pids[n++] = pid;
    }
    int64_t done0 = 0, failed0 = 0, tok0 = 0, done, failed_runs, tok;
    Db *db = db_open(c->db_path, err);
    if (db) db_progress(db, &done0, &failed0, &tok0, NULL);
    int alive = n, failed = n < jobs;
    int base = c->prog.done;
    while (alive > 0) {
        if (g_stop_signal && !forwarded) { /* each worker discards its run in progress and exits */
            for (int w = 0; w < n; w++) kill(pids[w], (int)g_stop_signal);
            forwarded = 1;
        }
        int st;
        pid_t p = waitpid(-1, &st, WNOHANG);
        if (p > 0) {
            alive--;
            if (WIFSIGNALED(st) && !g_stop_signal && !err->msg[0]) /* it could not say so itself */
                sp_fail(err, "worker process %d was killed by signal %d (%s); its run in progress is redone by the next "
                             "sweep", (int)p, WTERMSIG(st), strsignal(WTERMSIG(st)));
            if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) failed = 1;
            continue;
        }
        if (p < 0 && errno != EINTR) break;
        if (db && db_progress(db, &done, &failed_runs, &tok, NULL) == 0) {
            int d = base + (int)(done - done0) + (int)(failed_runs - failed0);
            c->prog.tokens = tok - tok0;
            if (d != c->prog.done) {
                c->prog.done = d;
                progress_print(&c->prog, 0, "");
            } else {
                progress_print(&c->prog, 0, NULL);
            }
        }
        sleep_ms(200);
    }
    if (db && db_progress(db, &done, &failed_runs, &tok, NULL) == 0) {
        *ran = (int)(done - done0);
        *n_failed = (int)(failed_runs - failed0);
        c->prog.done = base + *ran + *n_failed;
        c->prog.tokens = tok - tok0;
    }
    db_close(db);
    if (g_stop_signal) return sp_fail(err, "interrupted by signal %d", (int)g_stop_signal);
    if (failed) return err->msg[0] ? -1 : sp_fail(err, "a worker process failed (its error is above)");
    return 0;
}

/* ------------------------------------------------------------------ the sweep */

static void ctx_free(Ctx *c) {
    for (int d = 0; d < SPEC_MAX_DATASETS; d++) prompts_free(&c->prompts[d], c->s->n_prompts);
    for (int i = 0; i < c->n_vers; i++) verifier_free(&c->vers[i].v);
    for (int i = 0; i < c->n_judges; i++) verifier_free(&c->judges[i].v);
    prompt_format_free(&c->fmt);
    prefill_memo_free(c->prefill_memo); /* before the models its entries name */
    run_models_close(&c->m);
    db_close(c->db);
    if (c->lock_fd >= 0) close(c->lock_fd);
    free(c->pending);
    free(c->runs);
    free(c->stamps);
}


/* Expands the grid and opens the output directory and database. */
static int prepare(Ctx *c, SpErr *err) {
    SweepSpec *s = c->s;
    const RunnerOpts *o = c->o;
    if (spec_resolve(s, err) || spec_expand(s, &c->runs, &c->n_runs, err)) return -1;
    snprintf(c->db_path, sizeof c->db_path, "%s/runs.sqlite", o->out_dir);
    if (results_dir_open(o->out_dir, &c->created_out, &c->lock_fd, err) || !(c->db = db_open(c->db_path, err))) return -1;
    /* the grid, for merge to count the runs missing from the shards (written before any run) */
    return db_set_grid(c->db, c->runs, c->n_runs, o->shard_i, o->shard_n, err);
}

/* Finds the runs of this shard that are to run: neither done nor failed (failed ones too with
 * retry_failed), and clears their leftovers. */
static int find_pending(Ctx *c, SweepCounts *cnt, SpErr *err) {
    if (!(c->pending = malloc((size_t)(c->n_runs ? c->n_runs : 1) * sizeof *c->pending))) return sp_fail(err, "out of memory");
    cnt->total = c->n_runs;
    for (int i = 0; i < c->n_runs; i++) {
        const RunConfig *r = &c->runs[i];
        if (!run_in_shard(r, c->o->shard_i, c->o->shard_n)) continue;
        cnt->mine++;
        int status = db_run_status(c->db, r->hash, NULL, 0, err);
        if (status < 0) return -1;
        if (status == DB_RUN_DONE) {
            /* done in the database: its token log must be there, whole and this run's (tokrows_read:
             * read in a checked child, content digest, run hash and rows per prompt against the
             * prompts rows), else the run is redone */
            char log[4400];
            snprintf(log, sizeof log, "%s/tokens/%s.h5", c->o->out_dir, r->hash);
            TokenLogExpect x;
            if (tokenlog_expect_db(db_sqlite(c->db), c->db_path, r->hash, &x, err)) return -1;
            SpErr why = {{0}};
            TokenRows t;
            int bad = tokrows_read(log, &x, &t, &why);
            sp_input_forget(log); /* read to check this sweep's own output, which a redo rewrites */
            tokenlog_expect_free(&x);
            if (!bad) {
                tokrows_free(&t);
                cnt->skipped++;
                continue;
            }
            if (access(log, F_OK) != 0) sp_fail(&why, "its token log %s is missing", log);
            else sp_err_prefix(&why, "its token log is corrupt");
            fprintf(stderr, "sprinter sweep: run %.12s is done but %s; redoing it\n", r->hash, why.msg);
            cnt->redone++;
        }
        if (status == DB_RUN_FAILED && !c->o->retry_failed) { /* it would fail the same way again */
            cnt->failed_kept++;
            continue;
        }
        if (status == DB_RUN_FAILED) cnt->retried++;
        if (db_run_reset(c->db, r->hash, err)) return -1;
        remove_run_files(c, r);
        c->pending[c->n_pending++] = i;
    }
    return 0;
}

static int load_inputs(Ctx *c, SpErr *err) {
    SweepSpec *s = c->s;
    if (c->inputs_loaded) return 0;
    if (load_models(c, err)) return -1;
    c->inputs_loaded = 1;
    int max_gamma = 1, max_out = s->max_new; /* max_out: a round may run past max_new (finish_round) */
    for (int k = 0; k < c->n_runs; k++) {
        if (c->runs[k].dc.gamma > max_gamma) max_gamma = c->runs[k].dc.gamma;
        if (decode_max_tokens(&c->runs[k].dc) > max_out) max_out = decode_max_tokens(&c->runs[k].dc);
    }
    int max_prompt = decode_prompt_room(c->m.max_pos, max_out, max_gamma);
    if (max_prompt < 1)
        return sp_fail(err, "%s: [decode] max_new_tokens: %d (at most %d with a finishing round) + gamma %d + 1 leaves no room "
                       "for a prompt in a context of %d", s->path, s->max_new, max_out, max_gamma, c->m.max_pos);
    for (int d = 0; d < s->n_datasets; d++)
        if (load_prompts(c, d, max_prompt, err)) return -1;
    return 0;
}

/* Lists the failed runs of this shard (failed now, or earlier and not retried) into cnt, grid order. */
static int collect_failures(Ctx *c, SweepCounts *cnt, SpErr *err) {
    Db *db = c->db ? c->db : db_open(c->db_path, err);
    if (!db) return -1;
    int rc = 0, cap = 0;
    for (int i = 0; rc == 0 && i < c->n_runs; i++) {
        const RunConfig *r = &c->runs[i];
        if (!run_in_shard(r, c->o->shard_i, c->o->shard_n)) continue;
        char reason[1024];
        int status = db_run_status(db, r->hash, reason, sizeof reason, err);
        if (status < 0) rc = -1;
        if (status != DB_RUN_FAILED) continue;
        if (cnt->failed == cap) {
            int nc = cap ? cap * 2 : 16;
            SweepFailure *nf = realloc(cnt->failures, (size_t)nc * sizeof *nf);
            if (!nf) {
                rc = sp_fail(err, "out of memory");
                break;
            }
            cnt->failures = nf;
            cap = nc;
        }
        SweepFailure *f = &cnt->failures[cnt->failed];
        snprintf(f->hash, sizeof f->hash, "%s", r->hash);
        snprintf(f->method, sizeof f->method, "%s", decode_method_name(r->dc.method));
        if (!(f->reason = strdup(reason))) rc = sp_fail(err, "out of memory");
        else cnt->failed++;
    }
    if (db != c->db) db_close(db);
    return rc;
}

void sweep_counts_free(SweepCounts *cnt) {
    for (int i = 0; i < cnt->failed; i++) free(cnt->failures[i].reason);
    free(cnt->failures);
    cnt->failures = NULL;
    cnt->failed = 0;
}

/* ------------------------------------------------------------------ timing ([timing] of the spec) */

/* The done runs of this shard, as indexes into c->runs, into *idx (malloc'd); their count, or -1. */
static int done_runs(Ctx *c, int **idx, SpErr *err) {
    if (!(*idx = malloc((size_t)(c->n_runs ? c->n_runs : 1) * sizeof **idx))) return sp_fail(err, "out of memory");
    int n = 0;
    for (int i = 0; i < c->n_runs; i++) {
        if (!run_in_shard(&c->runs[i], c->o->shard_i, c->o->shard_n)) continue;
        int status = db_run_status(c->db, c->runs[i].hash, NULL, 0, err);
        if (status < 0) return -1;
        if (status == DB_RUN_DONE) (*idx)[n++] = i;
    }
    return n;
}

/* The (run, rep) rows the spec asks for and the database lacks, over the runs idx[0..n). */
static int timings_missing(Ctx *c, const int *idx, int n, SpErr *err) {
    int missing = 0;
    for (int rep = 0; rep < c->s->timing_reps; rep++)
        for (int k = 0; k < n; k++) {
            int have = db_timing_have(c->db, c->runs[idx[k]].hash, rep, err);
            if (have < 0) return -1;
            missing += !have;
        }
    return missing;
}

/* Decodes run r's first n_prompts prompts once more, in this process alone, and stores the timing as
 * (r, rep). The tokens must be the run's own (its prompt rows say how many): the same prompts, seeds
 * and settings decode the same way. */
static int time_run(Ctx *c, const RunConfig *r, int rep, int n_prompts, SpErr *err) {
    VerEntry *v;
    if (run_head(c, r, &v, err)) return -1;
    RunDecoders rd; /* one: the timings are of prompts decoded one at a time */
    if (run_decoders_open(c, r, v, 1, &rd, err)) return -1;
    PromptRow *rows = calloc((size_t)n_prompts, sizeof *rows);
    double batched_s = 0;
    /* no audit: its time is not in t_total (decoding.h) and its labels are the statistics run's; the
     * decisions, and so the tokens, do not depend on it (checked below) */
    DecodeConfig dc = r->dc;
    dc.audit = 0;
    int rc = rows ? decode_prompts(c, r, &dc, &rd, NULL, rows, n_prompts, &batched_s, err) : sp_fail(err, "out of memory");
    DecodeStats sum = {0};
    for (int i = 0; rows && i < n_prompts; i++) {
        sum.tokens += rows[i].st.tokens;
        sum.t_total += rows[i].st.t_total, sum.t_draft += rows[i].st.t_draft;
        sum.t_target += rows[i].st.t_target, sum.t_verifier += rows[i].st.t_verifier;
        free(rows[i].output_text);
    }
    free(rows);
    run_decoders_close(&rd);
    if (rc) return sp_err_prefix(err, "timing run %.12s", r->hash);
    int64_t want = db_run_tokens_first(c->db, r->hash, c->s->prompt_offset + n_prompts, err);
    if (want < 0) return -1;
    if (want != sum.tokens)
        return sp_fail(err, "timing run %.12s: %lld tokens over its first %d prompts, its prompt rows say %lld: the "
                       "decode is not reproducible here", r->hash, (long long)sum.tokens, n_prompts, (long long)want);
    return db_timing_add(c->db, r->hash, rep, n_prompts, &sum, c->host, err);
}

/* [timing]: every done run of this shard that [timing] selects (spec_run_timed) decoded again,
 * timing_reps times; repetition k takes the runs in their grid order rotated by k, so that a
 * repetition times every run in one stretch of time. Only the missing (run, rep) rows are made. Runs
 * one at a time, whatever --jobs: the timings are alone. */
static int time_runs(Ctx *c, int *timed, SpErr *err) {
    const SweepSpec *s = c->s;
    *timed = 0;
    if (s->timing_reps == 0) return 0;
    if (!c->db && !(c->db = db_open(c->db_path, err))) return -1; /* closed for the --jobs workers */
    int *idx = NULL;
    int n = done_runs(c, &idx, err), rc = n < 0 ? -1 : 0, timed_n = 0;
    for (int k = 0; k < n; k++) /* [timing] PARAM = values: those runs only */
        if (spec_run_timed(s, &c->runs[idx[k]])) idx[timed_n++] = idx[k];
    n = timed_n;
    int missing = rc ? 0 : timings_missing(c, idx, n, err);
    if (missing < 0) rc = -1;
    if (rc == 0 && missing > 0 && load_inputs(c, err)) rc = -1;
    if (rc == 0 && missing > 0) rc = prepare_heads(c, idx, n, err) ? -1 : 0;
    int n_prompts = s->timing_prompts && s->timing_prompts < s->n_prompts ? s->timing_prompts : s->n_prompts;
    if (rc == 0 && missing > 0 && c->o->progress)
        fprintf(stderr, "sweep: timing %d runs x %d reps alone, their first %d prompts (%d to do)\n", n, s->timing_reps,
                n_prompts, missing);
    for (int rep = 0; rc == 0 && rep < s->timing_reps; rep++)
        for (int k = 0; rc == 0 && k < n; k++) {
            const RunConfig *r = &c->runs[idx[(k + rep) % n]];
            int have = db_timing_have(c->db, r->hash, rep, err);
            if (have < 0) rc = -1;
            else if (!have && (rc = time_run(c, r, rep, n_prompts, err)) == 0) ++*timed;
            if (rc == 0 && g_stop_signal) rc = sp_fail(err, "interrupted by signal %d", (int)g_stop_signal);
        }
    free(idx);
    return rc;
}

/* A sweep refused before any run (models, data or verifiers failed their checks) leaves nothing in a
 * results directory it created: its database, tokens/ and lock go, then the directory itself and the
 * levels above it that the sweep created (`a/b` of `--out a/b/c`), each when empty. A directory that
 * existed before is left as it was found but for the database's schema. */
static void undo_created_out(Ctx *c) {
    if (!c->created_out) return;
    int64_t done = 0, failed = 0, tokens = 0;
    Db *db = c->db ? c->db : db_open(c->db_path, NULL);
    int busy = !db || db_progress(db, &done, &failed, &tokens, NULL) || done || failed;
    if (db != c->db) db_close(db);
    if (busy) return; /* something of value is there */
    db_close(c->db);
    c->db = NULL;
    const char *const files[] = {"runs.sqlite", "runs.sqlite-wal", "runs.sqlite-shm", ".sweep.lock"};
    char path[4400];
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        snprintf(path, sizeof path, "%s/%s", c->o->out_dir, files[i]);
        unlink(path);
    }
    const char *const dirs[] = {"tokens", "verifiers"};
    for (size_t i = 0; i < sizeof dirs / sizeof *dirs; i++) {
        snprintf(path, sizeof path, "%s/%s", c->o->out_dir, dirs[i]);
        rmdir(path); /* only when empty */
    }
    results_dir_remove_created(c->o->out_dir, c->created_out);
}

int runner_sweep(SweepSpec *s, const RunnerOpts *o, SweepCounts *cnt, SpErr *err) {
    Ctx c = {.s = s, .o = o, .lock_fd = -1};
    memset(cnt, 0, sizeof *cnt);
    int rc = -1;
    if (prepare(&c, err) || find_pending(&c, cnt, err)) goto done;
    git_commit(s->path, c.git, sizeof c.git);
    if (gethostname(c.host, sizeof c.host) != 0) snprintf(c.host, sizeof c.host, "unknown");
    c.prog = (Progress){o->progress, isatty(2), cnt->mine, cnt->skipped + cnt->failed_kept, 0, 0, sp_now_s(), 0};
    if (o->progress && (cnt->skipped || cnt->failed_kept || cnt->retried))
        fprintf(stderr, "sweep: %d of %d runs already done, %d failed before%s, %d to run\n", cnt->skipped, cnt->mine,
                cnt->failed_kept + cnt->retried,
                cnt->retried ? " (retried: --retry-failed)" : cnt->failed_kept ? " (not retried without --retry-failed)" : "",
                c.n_pending);
    if (c.n_pending == 0) {
        rc = time_runs(&c, &cnt->timed, err);
        if (rc == 0) rc = collect_failures(&c, cnt, err);
        goto done;
    }
    if (load_inputs(&c, err) || prepare_heads(&c, c.pending, c.n_pending, err))
        goto done;
    c.prog.expected = (int64_t)c.n_pending * s->n_prompts * s->max_new;
    c.prog.t0 = sp_now_s();
    int jobs = o->jobs < 1 ? 1 : o->jobs > 256 ? 256 : o->jobs;
    if (jobs > c.n_pending) jobs = c.n_pending;
    struct sigaction sa = {0}, old_int, old_term;
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    g_stop_signal = 0;
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    rc = jobs > 1 ? run_workers(&c, jobs, &cnt->ran, &cnt->failed_now, err)
                  : run_share(&c, 0, 1, &cnt->ran, &cnt->failed_now, err);
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    progress_print(&c.prog, 1, NULL);
    if (rc && g_stop_signal) {
        cnt->stop_signal = (int)g_stop_signal;
        Db *db = c.db ? c.db : db_open(c.db_path, NULL);
        if (db) db_unfinished(db, cnt->discarded, sizeof cnt->discarded, NULL);
        if (db && db != c.db) db_close(db);
    }
    if (rc == 0) rc = time_runs(&c, &cnt->timed, err);
    if (rc == 0) rc = collect_failures(&c, cnt, err);
done:
    if (rc && !g_stop_signal && cnt->ran == 0 && cnt->failed_now == 0) undo_created_out(&c);
    ctx_free(&c);
    return rc;
}

int runner_dry_run(SweepSpec *s, const RunnerOpts *o, SpErr *err) {
    RunConfig *runs;
    int n;
    if (spec_resolve(s, err) || spec_expand(s, &runs, &n, err)) return -1;
    char db_path[4200];
    snprintf(db_path, sizeof db_path, "%s/runs.sqlite", o->out_dir);
    Db *db = access(db_path, F_OK) == 0 ? db_open(db_path, err) : NULL;
    printf("%5s %-16s %-6s %-7s %s\n", "index", "run", "shard", "status", "configuration");
    int mine = 0;
    for (int i = 0; i < n; i++) {
        const RunConfig *r = &runs[i];
        int in = run_in_shard(r, o->shard_i, o->shard_n), st = db ? db_run_status(db, r->hash, NULL, 0, NULL) : 0;
        static const char *const names[] = {"-", "running", "done", "failed"};
        char what[400];
        run_progress_name(r, what, sizeof what);
        mine += in;
        printf("%5d %.16s %-6s %-7s %s\n", r->index, r->hash, in ? "yes" : "no", st >= 0 && st <= 3 ? names[st] : "?",
               what);
    }
    printf("%d runs, %d in this shard\n", n, mine);
    db_close(db);
    free(runs);
    return 0;
}
