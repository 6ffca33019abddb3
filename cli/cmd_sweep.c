/* cmd_sweep.c - `sprinter sweep`, `sprinter merge`, `sprinter summary`: run a grid of decoding
 * experiments from an INI spec into a results directory (SQLite + per-token HDF5 logs), merge the
 * directories of shards, and print the per-method summary table. */
#include <cblas.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "args.h"
#include "commands.h"
#include "db.h"
#include "runner.h"
#include "spec.h"

static const char kSweepHelp[] =
    "usage: sprinter sweep SPEC.ini [--out DIR] [--shard I/N] [--jobs K] [options]\n"
    "Expands the spec's grid into runs (each named by the SHA-256 of its configuration), runs those\n"
    "not yet done and prints the summary table. Rerunning resumes: finished runs are skipped and\n"
    "unfinished ones redone. A run whose model produces NaN/Inf logits is marked failed in\n"
    "runs.sqlite with the reason (no token log kept) and the sweep goes on with the others; a rerun\n"
    "does not retry failed runs (the same configuration fails the same way; a repaired model file\n"
    "has another hash, hence new runs). See experiments/default.ini for the spec format,\n"
    "results/README.md for the output.\n"
    "  --out DIR          results directory (default results/NAME, NAME from [sweep] name or the file)\n"
    "  --shard I/N        run only the runs with index % N == I (0 <= I < N), into DIR/shard-I; merge the\n"
    "                     shards with `sprinter merge DIR/shard-*`\n"
    "  --jobs K           K worker processes, each with its own decoder (default 1); results do not\n"
    "                     depend on K\n"
    "  --threads N        OpenBLAS threads per process (default 1)\n"
    "  --batch B          decode B prompts of a run together, their forward passes batched (overrides\n"
    "                     [decode] batch; default 1); tokens, events and run hashes do not depend on B,\n"
    "                     and a batched run records throughput (runs.tokens_per_s_batched), not latency\n"
    "  --no-prefill-memo  batched runs run every prompt's prefill themselves instead of loading the one an\n"
    "                     earlier run of this process made (the same bits either way; for timing the memo)\n"
    "  --verifier-cache DIR   verifier cache (default [verifier] cache_dir, else DIR/verifiers)\n"
    "  --retry-failed     reset the runs marked failed and run them again (after fixing what failed\n"
    "                     outside the configuration, e.g. a sprinter or BLAS bug)\n"
    "  --dry-run          list the runs (index, hash, shard, status) and exit\n"
    "  --quiet            no progress on stderr\n"
    "  --test-delay-ms MS     testing: sleep MS after each prompt\n"
    "  --test-crash-at K      testing: SIGKILL itself at the K-th checkpoint (run start, each\n"
    "                     prompt, token log renamed, run committed, run marked failed)\n"
    "  --test-nan-logits METHOD  testing: runs of METHOD fail as if their logits were NaN (same hashes)\n"
    "exit status: 0 every run of the grid (this shard) is done; 1 error (the sweep stopped: I/O, disk\n"
    "full, database, models); 2 bad usage or spec; 3 finished, but some runs failed (one line each on\n"
    "stderr: \"sprinter sweep: run HASH (METHOD) failed: REASON\", then a count); 128+N stopped by\n"
    "signal N (SIGINT 130, SIGTERM 143; the runs in progress are discarded and redone by a rerun).\n";

typedef struct SweepArgs {
    const char *spec, *out, *ver_cache, *nan_method;
    long shard_i, shard_n, jobs, threads, delay_ms, crash_at, batch;
    int dry_run, quiet, retry_failed, no_prefill_memo;
} SweepArgs;

static int parse_shard(const char *s, long *i, long *n) {
    char *end;
    *i = strtol(s, &end, 10);
    if (end == s || *end != '/') return -1;
    const char *b = end + 1;
    *n = strtol(b, &end, 10);
    if (end == b || *end || *n < 1 || *n > 100000 || *i < 0 || *i >= *n) return -1;
    return 0;
}

static int parse_sweep(int argc, char **argv, SweepArgs *a) {
    const char *cmd = "sweep";
    static const struct option opts[] = {
        {"out", required_argument, 0, 'o'},        {"shard", required_argument, 0, 's'},
        {"jobs", required_argument, 0, 'j'},       {"threads", required_argument, 0, 't'},
        {"verifier-cache", required_argument, 0, 'v'}, {"dry-run", no_argument, 0, 'n'},
        {"quiet", no_argument, 0, 'q'},            {"test-delay-ms", required_argument, 0, 'D'},
        {"test-crash-at", required_argument, 0, 'C'}, {"help", no_argument, 0, 'h'},
        {"retry-failed", no_argument, 0, 'R'},     {"test-nan-logits", required_argument, 0, 'N'},
        {"batch", required_argument, 0, 'B'},      {"no-prefill-memo", no_argument, 0, 'M'},
        {0, 0, 0, 0}};
    optind = 1;
    for (int ch; (ch = getopt_long(argc, argv, "", opts, NULL)) != -1;) {
        switch (ch) {
        case 'o': a->out = optarg; break;
        case 's':
            if (parse_shard(optarg, &a->shard_i, &a->shard_n)) {
                fprintf(stderr, "sprinter sweep: --shard: \"%s\" is not I/N with 0 <= I < N\n", optarg);
                return 2;
            }
            break;
        case 'j': if (arg_long(cmd, "jobs", optarg, 1, 256, &a->jobs)) return 2; break;
        case 't': if (arg_long(cmd, "threads", optarg, 1, 1024, &a->threads)) return 2; break;
        case 'B': if (arg_long(cmd, "batch", optarg, 1, SPEC_MAX_BATCH, &a->batch)) return 2; break;
        case 'v': a->ver_cache = optarg; break;
        case 'n': a->dry_run = 1; break;
        case 'q': a->quiet = 1; break;
        case 'D': if (arg_long(cmd, "test-delay-ms", optarg, 0, 600000, &a->delay_ms)) return 2; break;
        case 'C': if (arg_long(cmd, "test-crash-at", optarg, 0, 1L << 30, &a->crash_at)) return 2; break;
        case 'R': a->retry_failed = 1; break;
        case 'M': a->no_prefill_memo = 1; break;
        case 'N': {
            DecodeMethod m;
            if (decode_method_parse(optarg, &m)) {
                fprintf(stderr, "sprinter sweep: --test-nan-logits: \"%s\" is not a decoding method\n", optarg);
                return 2;
            }
            a->nan_method = decode_method_name(m);
            break;
        }
        case 'h': fputs(kSweepHelp, stdout); return 1;
        default: return arg_bad_option("sweep", argv);
        }
    }
    if (optind != argc - 1) {
        fprintf(stderr, "sprinter sweep: need exactly one SPEC.ini (see sprinter sweep --help)\n");
        return 2;
    }
    a->spec = argv[optind];
    return 0;
}

/* The summary table grouped by configuration (SUMMARY_BY_CONFIG), method, or Spec-Bench task group. */
enum { SUMMARY_BY_CONFIG, SUMMARY_BY_METHOD, SUMMARY_BY_TASK, SUMMARY_BY_CATEGORY };

static int print_summary(const char *dir, int by, int tsv, SpErr *err) {
    char path[4200];
    snprintf(path, sizeof path, "%s/runs.sqlite", dir);
    int older; /* read-only unless the file needs db_open's upgrade first */
    Db *db = db_open_read(path, &older, err);
    if (!db && older) db = db_open(path, err);
    if (!db) return -1;
    int rc = by == SUMMARY_BY_TASK       ? db_summary_tasks(db, stdout, tsv, err)
             : by == SUMMARY_BY_CATEGORY ? db_summary_categories(db, stdout, tsv, err)
                                         : db_summary(db, stdout, by == SUMMARY_BY_METHOD, tsv, err);
    if (rc == 0 && !tsv && by != SUMMARY_BY_TASK) rc = db_truncation_note(db, stdout, err);
    db_close(db);
    return rc;
}

int cmd_sweep(int argc, char **argv) {
    SweepArgs a = {.shard_n = 1, .jobs = 1, .threads = 1};
    int prc = parse_sweep(argc, argv, &a);
    if (prc) return prc == 1 ? 0 : prc;
    openblas_set_num_threads((int)a.threads);
    SpErr err = {{0}};
    SweepSpec *s = calloc(1, sizeof *s);
    if (!s) {
        fprintf(stderr, "sprinter sweep: out of memory\n");
        return 1;
    }
    int rc = 2;
    if (spec_load(a.spec, s, &err)) goto done;
    if (a.batch > 0) s->batch = (int)a.batch;
    char base[4096], out[4200], cache[4200];
    if (a.out) snprintf(base, sizeof base, "%s", a.out);
    else snprintf(base, sizeof base, "results/%s", s->name);
    if (a.shard_n > 1) snprintf(out, sizeof out, "%s/shard-%ld", base, a.shard_i);
    else snprintf(out, sizeof out, "%s", base);
    if (a.ver_cache) snprintf(cache, sizeof cache, "%s", a.ver_cache);
    else if (s->ver_cache_dir[0]) snprintf(cache, sizeof cache, "%s", s->ver_cache_dir);
    else snprintf(cache, sizeof cache, "%s/verifiers", base);
    RunnerOpts o = {.out_dir = out,
                    .verifier_cache = cache,
                    .shard_i = (int)a.shard_i,
                    .shard_n = (int)a.shard_n,
                    .jobs = (int)a.jobs,
                    .progress = !a.quiet,
                    .test_delay_ms = (int)a.delay_ms,
                    .test_crash_at = (int)a.crash_at,
                    .retry_failed = a.retry_failed,
                    .prefill_memo_off = a.no_prefill_memo,
                    .test_nan_method = a.nan_method};
    if (a.dry_run) {
        rc = runner_dry_run(s, &o, &err) ? 2 : 0;
        goto done;
    }
    SweepCounts c;
    if (runner_sweep(s, &o, &c, &err)) {
        rc = 1;
        if (c.stop_signal) { /* documented: exit 128 + signal number, one line naming what was lost */
            fprintf(stderr, "sprinter sweep: interrupted by %s; run%s %s discarded; %d of %d runs done\n",
                    c.stop_signal == SIGINT ? "SIGINT" : "SIGTERM", strchr(c.discarded, ',') ? "s" : "",
                    c.discarded[0] ? c.discarded : "none", c.skipped + c.ran, c.mine);
            err.msg[0] = '\0';
            rc = 128 + c.stop_signal;
        }
        sweep_counts_free(&c);
        goto done;
    }
    if (!a.quiet) {
        char failed[160] = "";
        if (c.failed_now || c.failed_kept)
            snprintf(failed, sizeof failed, ", %d failed now, %d failed before and not retried", c.failed_now,
                     c.failed_kept);
        char timed[64] = "";
        if (c.timed) snprintf(timed, sizeof timed, ", %d timed alone", c.timed);
        fprintf(stderr, "sweep: %d runs in the grid, %d in this shard: %d already done, %d run now%s%s -> %s\n", c.total,
                c.mine, c.skipped, c.ran, failed, timed, out);
    }
    rc = print_summary(out, SUMMARY_BY_CONFIG, 0, &err) ? 1 : 0;
    if (rc == 0 && c.failed > 0) { /* documented: exit 3, one line per failed run, then the count */
        fflush(stdout);
        for (int i = 0; i < c.failed; i++)
            fprintf(stderr, "sprinter sweep: run %s (%s) failed: %s\n", c.failures[i].hash, c.failures[i].method,
                    c.failures[i].reason);
        fprintf(stderr, "sprinter sweep: finished, but %d of %d runs failed (%d now, %d in an earlier sweep); a rerun "
                        "does not retry them, --retry-failed does\n",
                c.failed, c.mine, c.failed_now, c.failed_kept);
        err.msg[0] = '\0'; /* reported above */
        if (!rc) rc = 3;
    }
    sweep_counts_free(&c);
done:
    if (rc && err.msg[0]) fprintf(stderr, "sprinter sweep: %s\n", err.msg);
    free(s);
    return rc;
}

/* ------------------------------------------------------------------ merge */

static const char kMergeHelp[] =
    "usage: sprinter merge [--out DIR] [--allow-specs] SHARD_DIR...\n"
    "Merges the finished runs of shard results directories (database rows and token logs) into DIR\n"
    "(default: the directory above the first shard). A run already in DIR, or in an earlier shard,\n"
    "is not added twice; unfinished runs are left out. Failed runs are carried (their rows, with the\n"
    "reason) unless the run is done in DIR or another shard: a done run wins. Prints the summary table.\n"
    "Each sweep records its grid (the run hashes of the spec) in its database; merge then checks DIR\n"
    "against the shards' grid: one line on stderr for the runs of the grid that failed, one for those\n"
    "missing (neither done nor failed in any shard: a shard not run, cancelled or not given).\n"
    "Before anything is merged, every done run's token log of every shard is read as score and analyze\n"
    "read it (a checked child process, its content digest, against the shard's database); one that\n"
    "fails is an error naming the shard and the log (exit 1, nothing merged: sweep that shard again).\n"
    "  --out DIR          merged results directory\n"
    "  --allow-specs      merge directories swept from different specs (their recorded grids differ: other\n"
    "                     models, data or parameters); without it such a merge is refused before anything\n"
    "                     is merged. Runs of different model contents never share a summary row.\n"
    "  --quiet            print only the one-line report\n"
    "exit status: 0 every run of the grid is done; 1 error; 2 bad usage; 3 merged, every run of the grid\n"
    "finished but some failed; 4 merged, but runs of the grid are missing (whether or not others\n"
    "failed, or a shard's database holds no tables: its sweep failed as it created it). Shards swept from\n"
    "different specs (--allow-specs): the grid is the union of theirs.\n";

/* "6 in shard 2/3 (run indexes 2, 5, 8, ...)" into buf: where the missing runs of the grid belong. */
static void missing_where(const GridReport *g, char *buf, size_t cap) {
    size_t w = 0;
    buf[0] = '\0';
    for (int i = 0; g->missing_per_shard && i < g->shard_n && w < cap; i++)
        if (g->missing_per_shard[i])
            w += (size_t)snprintf(buf + w, cap - w, "%s%d in shard %d/%d", w ? ", " : "", g->missing_per_shard[i], i,
                                  g->shard_n);
    int shown = g->missing < 8 ? g->missing : 8;
    if (g->grids != 1 || !shown || w >= cap) return;
    w += (size_t)snprintf(buf + w, cap - w, "%srun index%s", w ? " (" : "", g->missing > 1 ? "es" : "");
    for (int i = 0; i < shown && w < cap; i++)
        w += (size_t)snprintf(buf + w, cap - w, "%s %d", i ? "," : "", g->first_missing[i]);
    if (w < cap) snprintf(buf + w, cap - w, "%s%s", g->missing > shown ? ", ..." : "", g->missing_per_shard ? ")" : "");
}

/* The lines on stderr about the grid after a merge; returns the exit status (0, 3 or 4). */
static int report_grid(const GridReport *g, char *const *shards, int n, const char *out) {
    int rc = 0;
    for (int i = 0; g->empty && i < n; i++)
        if (g->empty[i]) {
            fprintf(stderr, "sprinter merge: %s/runs.sqlite holds no tables (its sweep failed as it created the database, "
                            "e.g. on a full disk): shard missing, nothing merged from it; sweep it again and merge again\n",
                    shards[i]);
            rc = 4;
        }
    if (!g->shards_with_grid && g->n_empty < n)
        fprintf(stderr, "sprinter merge: note: no shard records its grid (swept by an older sprinter): runs missing "
                        "from the shards cannot be counted\n");
    if (g->failed) {
        if (g->shards_with_grid)
            fprintf(stderr, "sprinter merge: %d of %d runs of the grid failed (reasons: sprinter summary %s)\n",
                    g->failed, g->runs, out);
        else
            fprintf(stderr, "sprinter merge: %d runs in %s failed (reasons: sprinter summary %s)\n", g->failed, out, out);
        if (!rc) rc = 3;
    }
    if (g->missing) {
        char where[512];
        if (g->grids > 1) snprintf(where, sizeof where, "the shards were swept from %d different grids", g->grids);
        else missing_where(g, where, sizeof where);
        fprintf(stderr, "sprinter merge: %d of %d runs of the grid are missing (neither done nor failed in any shard)%s%s"
                        "; sweep them and merge again\n", g->missing, g->runs, where[0] ? ": " : "", where);
        rc = 4;
    } else if (g->grids > 1) {
        fprintf(stderr, "sprinter merge: note: the shards were swept from %d different grids (specs), every run of "
                        "each is there; %s records no grid\n", g->grids, out);
    }
    return rc;
}

int cmd_merge(int argc, char **argv) {
    static const struct option opts[] = {{"out", required_argument, 0, 'o'}, {"quiet", no_argument, 0, 'q'},
                                         {"allow-specs", no_argument, 0, 'a'}, {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    const char *out = NULL;
    int quiet = 0, allow_specs = 0;
    optind = 1;
    for (int ch; (ch = getopt_long(argc, argv, "", opts, NULL)) != -1;) {
        switch (ch) {
        case 'o': out = optarg; break;
        case 'q': quiet = 1; break;
        case 'a': allow_specs = 1; break;
        case 'h': fputs(kMergeHelp, stdout); return 0;
        default: return arg_bad_option("merge", argv);
        }
    }
    if (optind >= argc) {
        fprintf(stderr, "sprinter merge: need at least one SHARD_DIR (see sprinter merge --help)\n");
        return 2;
    }
    char dflt[4096];
    if (!out) {
        snprintf(dflt, sizeof dflt, "%s", argv[optind]);
        size_t n = strlen(dflt);
        while (n > 1 && dflt[n - 1] == '/') dflt[--n] = '\0';
        char *slash = strrchr(dflt, '/');
        if (slash == dflt) slash[1] = '\0';
        else if (slash) *slash = '\0';
        else snprintf(dflt, sizeof dflt, ".");
        out = dflt;
    }
    SpErr err = {{0}};
    MergeCounts mc;
    GridReport g;
    if (runner_merge(out, argv + optind, argc - optind, allow_specs, &mc, &g, &err)) {
        fprintf(stderr, "sprinter merge: %s\n", err.msg);
        return 1;
    }
    printf("merged %d runs from %d directories into %s/runs.sqlite (%d duplicates skipped, %d unfinished left out, "
           "%d failed runs carried, %d failed runs left out as done elsewhere)\n",
           mc.runs_added, argc - optind, out, mc.duplicates, mc.unfinished, mc.failed_added, mc.failed_superseded);
    int rc = 0;
    if (!quiet && print_summary(out, SUMMARY_BY_CONFIG, 0, &err)) {
        fprintf(stderr, "sprinter merge: %s\n", err.msg);
        rc = 1;
    }
    fflush(stdout);
    int grc = report_grid(&g, argv + optind, argc - optind, out);
    grid_report_free(&g);
    return rc ? rc : grc;
}

/* ------------------------------------------------------------------ summary */

static const char kSummaryHelp[] =
    "usage: sprinter summary RESULTS_DIR [--by config|method|task|category] [--tsv]\n"
    "Prints, from RESULTS_DIR/runs.sqlite, one row per method, data, temperature and parameter setting\n"
    "(default; data and temperature shown when the runs have several) or per method, summed over seeds\n"
    "and prompts of finished runs: runs, tokens, tokens/s (audit excluded),\n"
    "speed-up over ar (the ar row of the same data and temperature), tokens per target call (bonus\n"
    "included: Spec-Bench's mean accepted tokens),\n"
    "accept = the per-token acceptance rate alpha: accepted share of the draft tokens the target\n"
    "checked, with its Wilson 95% interval,\n"
    "accepted / drafted (not an acceptance rate: unchecked drafts count as failures),\n"
    "eta_FP = P(accept | q/p > lambda), eta_TP = P(accept | q/p <= lambda) from the audit,\n"
    "and the audit's own seconds (never part of tok/s). Below it: the number of failed runs with\n"
    "each one's reason, and the number of unfinished runs (neither is counted in the table).\n"
    "--tsv: the rows as tab-separated columns for scripts (each parameter its own column, NaN where\n"
    "it does not apply; adds accept_rate_from_tpc, the alpha that sd's tokens per call imply at its\n"
    "gamma; the temperature last).\n"
    "--by task: Spec-Bench's table instead (its evaluation/speed.py): per configuration (method,\n"
    "parameters, data, temperature; seeds pooled) and task group (mt_bench = its 8 MT-bench categories,\n"
    "translation, summarization, qa, math_reasoning, rag, overall; from prompts.category), the speedup\n"
    "over ar on the same data and temperature as Spec-Bench defines it (the mean over questions of\n"
    "tokens/s, a question's turns summed, over the same mean of ar) and the mean accepted tokens\n"
    "(tokens per target forward, bonus included; ar = 1.00).\n"
    "--by category: the same figures per category of the data (prompts.category), one line each.\n";

int cmd_summary(int argc, char **argv) {
    static const struct option opts[] = {
        {"by", required_argument, 0, 'b'}, {"tsv", no_argument, 0, 't'}, {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    int by = SUMMARY_BY_CONFIG, tsv = 0;
    optind = 1;
    for (int ch; (ch = getopt_long(argc, argv, "", opts, NULL)) != -1;) {
        switch (ch) {
        case 'b':
            if (!strcmp(optarg, "method")) by = SUMMARY_BY_METHOD;
            else if (!strcmp(optarg, "config")) by = SUMMARY_BY_CONFIG;
            else if (!strcmp(optarg, "task")) by = SUMMARY_BY_TASK;
            else if (!strcmp(optarg, "category")) by = SUMMARY_BY_CATEGORY;
            else {
                fprintf(stderr, "sprinter summary: --by: \"%s\" is not config, method, task or category\n", optarg);
                return 2;
            }
            break;
        case 't': tsv = 1; break;
        case 'h': fputs(kSummaryHelp, stdout); return 0;
        default: return arg_bad_option("summary", argv);
        }
    }
    if (optind != argc - 1) {
        fprintf(stderr, "sprinter summary: need exactly one RESULTS_DIR (see sprinter summary --help)\n");
        return 2;
    }
    const char *dir = argv[optind];
    char path[4200];
    snprintf(path, sizeof path, "%s/runs.sqlite", dir);
    if (access(path, R_OK) != 0) {
        fprintf(stderr, "sprinter summary: %s: no results database (run sprinter sweep first)\n", path);
        return 1;
    }
    SpErr err = {{0}};
    if (print_summary(dir, by, tsv, &err)) {
        fprintf(stderr, "sprinter summary: %s\n", err.msg);
        return 1;
    }
    return 0;
}
