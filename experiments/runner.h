/* runner.h - runs a sweep (a SweepSpec expanded into runs) and merges shard results.
 *
 * Layout of a results directory OUT (see results/README.md):
 *   OUT/runs.sqlite        the database (db.h)
 *   OUT/tokens/HASH.h5     per-token log of each finished run (tokenlog.h)
 *   OUT/verifiers/         verifier cache (verifier_ensure), unless another cache is named
 *
 * Per run, in this order: the run's row is written with status 'running'; every prompt is decoded
 * with its own RNG (prompt_seed(run seed, prompt index)) and its events appended to HASH.h5.tmp;
 * the log is renamed to HASH.h5; one transaction inserts the prompt rows and marks the run done.
 * A run not marked done is redone from scratch by the next sweep (its rows and files are removed
 * first), so killing a sweep at any point loses at most the runs in progress and duplicates nothing.
 *
 * Run failures: when decoding fails with non-finite logits (decoder_run's DECODE_ERR_NONFINITE, a
 * property of the run's models and inputs, so a retry fails the same way), the run's HASH.h5.tmp is
 * deleted and one transaction marks it 'failed' with the one-line reason ("prompt P: draft model:
 * logits at position I contain NaN at index J"); the sweep goes on with the other runs. A later
 * sweep does not retry a failed run unless retry_failed is set. Every other error (I/O, disk full,
 * database, memory) stops the sweep at once, as does a signal: those are not run failures.
 *
 * Everything that can fail before the first run (spec, models, data, output directory, prompts that
 * do not fit the context, verifier training) fails before it starts. With jobs > 1 the pending runs
 * are dealt round-robin to that many forked worker processes, each with its own decoder and
 * database connection; the models are loaded once before the fork and shared read-only.
 */
#ifndef SP_RUNNER_H
#define SP_RUNNER_H

#include "db.h"
#include "error.h"
#include "spec.h"

typedef struct RunnerOpts {
    const char *out_dir;        /* this process's results directory */
    const char *verifier_cache; /* verifier cache directory */
    int shard_i, shard_n;       /* 0 <= shard_i < shard_n; shard_n = 1 runs every run */
    int jobs;                   /* worker processes (>= 1) */
    int progress;               /* progress lines on stderr */
    int test_delay_ms;          /* tests: sleep this long after each prompt */
    int test_crash_at;          /* tests: SIGKILL itself at the K-th checkpoint (0 = never) */
    int retry_failed;           /* reset and rerun the runs marked failed (default: leave them failed) */
    int prefill_memo_off;       /* batched runs run every first forward call (no prefill memo; the same bits) */
    const char *test_nan_method; /* tests: runs of this method fail as if their logits were NaN (NULL = none) */
} RunnerOpts;

/* A failed run of this shard (strings owned by SweepCounts). */
typedef struct SweepFailure {
    char hash[65];
    char method[32];
    char *reason; /* runs.failure */
} SweepFailure;

/* Counts of one sweep invocation. */
typedef struct SweepCounts {
    int total;   /* runs in the grid */
    int mine;    /* runs in this shard */
    int skipped; /* already done (and their token logs whole) */
    int redone;  /* marked done, but the token log was missing or corrupt: run again */
    int ran;     /* finished (done) now */
    int failed_now;  /* run now and failed */
    int failed_kept; /* failed in an earlier sweep, not retried (no retry_failed) */
    int retried;     /* failed in an earlier sweep, run again (retry_failed) */
    int timed;       /* (run, repetition) timings made now ([timing] of the spec) */
    int failed;      /* failed runs of this shard after the sweep (failed_now + failed_kept), each in failures */
    SweepFailure *failures; /* [failed] in grid order, when runner_sweep succeeds; sweep_counts_free */
    int stop_signal;       /* SIGINT / SIGTERM that stopped the sweep, else 0 */
    char discarded[1024];  /* hashes of the runs in progress then (not marked done, logs deleted) */
} SweepCounts;

/* Resolves s (hashes models and data), expands it and runs what is neither done nor failed (failed
 * ones too with o->retry_failed). Returns 0 when every run of the shard was tried, even if some
 * failed (c->failed > 0: the caller reports them), -1 on an error that stopped the sweep. */
int runner_sweep(SweepSpec *s, const RunnerOpts *o, SweepCounts *c, SpErr *err);
void sweep_counts_free(SweepCounts *c);

/* Lists the expanded runs (index, hash, shard, status, method, parameters) without running them. */
int runner_dry_run(SweepSpec *s, const RunnerOpts *o, SpErr *err);

/* What a merge found of the grid its shards were swept from (each sweep records its grid: meta keys
 * 'grid' and 'shard', db_set_grid). Counted over the union of the shards' grids, in out_dir after
 * the merge. */
typedef struct GridReport {
    int shards_with_grid; /* shard directories that record their grid (older sprinters did not) */
    int grids;            /* distinct grids among them (> 1: shards swept from different specs) */
    int runs;             /* runs of the grid(s) */
    int failed;           /* of those, failed in out_dir; with no grid known, every failed run there */
    int missing;          /* of those, neither done nor failed in out_dir (not run, unfinished, lost) */
    int shard_n;          /* N of the shards' "I/N" (one grid only; 0: unknown) */
    int *missing_per_shard; /* [shard_n] missing runs by run_index % shard_n (shard_n > 1), else NULL; grid_report_free */
    int first_missing[8];   /* run indexes of the first missing runs (one grid only) */
    int *empty;             /* [n shards] 1 where the shard's database holds no tables (not merged); grid_report_free */
    int n_empty;            /* how many */
} GridReport;

/* Merges the done runs of each shard directory into out_dir (database rows and token logs),
 * skipping runs out_dir already has done, and carries failed runs (their rows) where out_dir has no
 * done run of the same hash: a done run anywhere wins, a failed one stays failed (db_merge_plan).
 * Then counts, into g, the runs of the shards' grid that failed or are missing in out_dir, and
 * records that grid in out_dir's meta (deletes it when the shards' grids differ). */
/* Shards (or out_dir) whose recorded grids differ were swept from different specs (other models,
 * data or parameters): refused before anything is merged unless allow_specs. A shard whose database
 * holds no tables (its sweep failed as it created it) is not merged and is named in g->empty. */
int runner_merge(const char *out_dir, char *const *shard_dirs, int n, int allow_specs, MergeCounts *c, GridReport *g,
                 SpErr *err);
void grid_report_free(GridReport *g);

#endif
