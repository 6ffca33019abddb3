/* merge.c - sprinter merge (runner.h runner_merge): the shards' databases and token logs into one
 * results directory, the grids they were swept from checked against each other. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "db.h"
#include "fsutil.h"
#include "resultsdir.h"
#include "runner.h"
#include "sqlutil.h"
#include "tokenlog.h"

/* Copies src to dst via dst.tmp + rename (src was verified by verify_shard_logs: this process never
 * opens an untrusted log with libhdf5). */
static int copy_log(const char *src, const char *dst, SpErr *err) {
    char tmp[4400];
    int in = open(src, O_RDONLY), rc = 0;
    if (in < 0) return sp_fail(err, "%s: cannot open: %s", src, strerror(errno));
    int out = sp_output_create_tmp(dst, tmp, sizeof tmp, err); /* refuses a link or device at dst or dst.tmp */
    if (out < 0) {
        close(in);
        return -1;
    }
    char buf[1 << 16];
    for (ssize_t k; rc == 0 && (k = read(in, buf, sizeof buf)) != 0;) {
        if (k < 0 || write(out, buf, (size_t)k) != k) rc = sp_fail(err, "%s: copy to %s failed: %s", src, tmp, strerror(errno));
    }
    close(in);
    if ((fsync(out) != 0 || close(out) != 0) && rc == 0) rc = sp_fail(err, "%s: write failed: %s", tmp, strerror(errno));
    if (rc == 0) return sp_output_commit(tmp, dst, err);
    sp_output_discard(tmp);
    return rc;
}

static int same_dir(const char *a, const char *b) {
    struct stat sa, sb;
    return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

/* The grids the shards record (distinct texts of meta 'grid'), with the shard count of the first
 * shard that records each ("I/N": N; 0 when unknown). */
typedef struct Grids {
    char **text;
    int *shard_n;
    int n, cap;
} Grids;

static void grids_free(Grids *g) {
    for (int i = 0; i < g->n; i++) free(g->text[i]);
    free(g->text);
    free(g->shard_n);
    memset(g, 0, sizeof *g);
}

/* Takes plan->grid (when new) into g. */
static int grids_add(Grids *g, MergePlan *p, SpErr *err) {
    for (int i = 0; i < g->n; i++)
        if (!strcmp(g->text[i], p->grid)) return 0;
    if (g->n == g->cap) {
        int nc = g->cap ? g->cap * 2 : 4;
        char **nt = realloc(g->text, (size_t)nc * sizeof *nt);
        if (nt) g->text = nt;
        int *ns = nt ? realloc(g->shard_n, (size_t)nc * sizeof *ns) : NULL;
        if (!ns) return sp_fail(err, "out of memory");
        g->shard_n = ns;
        g->cap = nc;
    }
    const char *slash = strchr(p->shard, '/');
    g->shard_n[g->n] = slash ? atoi(slash + 1) : 0;
    if (g->shard_n[g->n] < 0) g->shard_n[g->n] = 0;
    g->text[g->n++] = p->grid;
    p->grid = NULL;
    return 0;
}

/* Whether the 64-digit hash h occurs in one of the grids before grid k (counted there already). */
static int seen_before(const Grids *g, int k, const char *h) {
    for (int i = 0; i < k; i++)
        if (strstr(g->text[i], h)) return 1;
    return 0;
}

/* Counts the runs of the grids (their union) that are failed, or neither done nor failed, in dst. */
static int check_grids(Db *dst, const Grids *g, GridReport *r, SpErr *err) {
    r->grids = g->n;
    r->shard_n = g->n == 1 ? g->shard_n[0] : 0;
    if (r->shard_n > 1 && !(r->missing_per_shard = calloc((size_t)r->shard_n, sizeof *r->missing_per_shard)))
        return sp_fail(err, "out of memory");
    for (int k = 0; k < g->n; k++) {
        const char *t = g->text[k];
        for (int index = 0; *t; index++) {
            char h[SP_SHA256_HEX];
            size_t len = strcspn(t, ",");
            snprintf(h, sizeof h, "%.*s", (int)(len < sizeof h ? len : sizeof h - 1), t);
            t += len + (t[len] == ',');
            if (seen_before(g, k, h)) continue;
            int st = db_run_status(dst, h, NULL, 0, err);
            if (st < 0) return -1;
            r->runs++;
            if (st == DB_RUN_FAILED) r->failed++;
            if (st == DB_RUN_DONE || st == DB_RUN_FAILED) continue;
            if (g->n == 1 && r->missing < (int)(sizeof r->first_missing / sizeof *r->first_missing))
                r->first_missing[r->missing] = index;
            if (r->missing_per_shard) r->missing_per_shard[index % r->shard_n]++;
            r->missing++;
        }
    }
    return 0;
}

void grid_report_free(GridReport *r) {
    free(r->missing_per_shard);
    r->missing_per_shard = NULL;
    free(r->empty);
    r->empty = NULL;
}

/* Every done run's token log of the shard, read as the sweep's resume, score and analyze read it
 * (records/tokenlog.h tokrows_read: in a checked child, its content digest, and against the shard's
 * database: run hash, rows per prompt, runs.token_log_fnv1a64). A log that fails is the one-line
 * error naming the shard, the run and the file. */
static int verify_shard_logs(const char *shard, SpErr *err) {
    char src_db[4200];
    snprintf(src_db, sizeof src_db, "%s/runs.sqlite", shard);
    sqlite3 *h = sql_open_read(src_db, err);
    if (!h) return -1;
    sqlite3_stmt *st = NULL;
    int rc = 0;
    if (sqlite3_prepare_v2(h, "SELECT run_hash FROM runs WHERE status = 'done' ORDER BY run_index", -1, &st, NULL) !=
        SQLITE_OK)
        rc = sql_fail(h, src_db, "read runs", err);
    for (int s; rc == 0 && (s = sqlite3_step(st)) != SQLITE_DONE;) {
        const unsigned char *hv = s == SQLITE_ROW ? sqlite3_column_text(st, 0) : NULL;
        if (!hv) {
            rc = sql_fail(h, src_db, "read runs", err);
            break;
        }
        char hash[80], log[4400];
        snprintf(hash, sizeof hash, "%s", (const char *)hv);
        snprintf(log, sizeof log, "%s/tokens/%s.h5", shard, hash);
        TokenLogExpect x;
        TokenRows t;
        if ((rc = tokenlog_expect_db(h, src_db, hash, &x, err)) != 0) break;
        rc = tokrows_read(log, &x, &t, err);
        tokenlog_expect_free(&x);
        if (rc == 0) tokrows_free(&t);
        else sp_err_prefix(err, "shard %s: run %.12s is done but its token log fails the check", shard, hash);
    }
    sqlite3_finalize(st);
    sqlite3_close(h);
    return rc;
}

/* Before anything is merged: the shards whose database holds no tables (into g->empty), unless
 * allow_specs a refusal when two of the grids recorded by out_dir and the shards differ, and every
 * shard's token logs verified (verify_shard_logs). */
static int merge_precheck(Db *db, const char *out_dir, char *const *shard_dirs, int n, int allow_specs, GridReport *g,
                          SpErr *err) {
    if (!(g->empty = calloc((size_t)(n ? n : 1), sizeof *g->empty))) return sp_fail(err, "out of memory");
    char *first = NULL;
    const char *first_from = out_dir;
    int rc = db_grid(db, &first, err);
    for (int i = 0; rc == 0 && i < n; i++) {
        if (same_dir(shard_dirs[i], out_dir)) continue;
        char src_db[4200], *grid = NULL;
        snprintf(src_db, sizeof src_db, "%s/runs.sqlite", shard_dirs[i]);
        if (access(src_db, R_OK) != 0) {
            rc = sp_fail(err, "%s: no runs.sqlite (not a sweep output directory)", shard_dirs[i]);
            break;
        }
        if ((rc = db_source_grid(db, src_db, &grid, &g->empty[i], err)) != 0) break;
        g->n_empty += g->empty[i];
        if (grid && first && strcmp(grid, first) && !allow_specs)
            rc = sp_fail(err, "%s and %s were swept from different specs (their grids differ: other models, data or "
                              "parameters); merge them on purpose with --allow-specs",
                         first_from, shard_dirs[i]);
        if (grid && !first) {
            first = grid;
            first_from = shard_dirs[i];
        } else {
            free(grid);
        }
    }
    free(first);
    for (int i = 0; rc == 0 && i < n; i++)
        if (!same_dir(shard_dirs[i], out_dir) && !g->empty[i]) rc = verify_shard_logs(shard_dirs[i], err);
    return rc;
}

static int merge_one(Db *dst, const char *out_dir, const char *shard, MergeCounts *mc, Grids *grids, int *with_grid,
                     SpErr *err) {
    char src_db[4200];
    snprintf(src_db, sizeof src_db, "%s/runs.sqlite", shard);
    if (access(src_db, R_OK) != 0) return sp_fail(err, "%s: no runs.sqlite (not a sweep output directory)", shard);
    MergePlan p;
    if (db_merge_plan(dst, src_db, &p, err)) return -1;
    int rc = 0;
    for (int i = 0; rc == 0 && i < p.n; i++) {
        char src[4400], dstp[4400];
        snprintf(dstp, sizeof dstp, "%s/tokens/%s.h5", out_dir, p.hashes[i]);
        if (i >= p.n_done) { /* a failed run has no token log: a stale one of an unfinished try in dst goes */
            unlink(dstp);
            continue;
        }
        snprintf(src, sizeof src, "%s/tokens/%s.h5", shard, p.hashes[i]);
        rc = copy_log(src, dstp, err);
    }
    if (rc == 0) rc = db_merge_rows(dst, src_db, p.hashes, p.n, err);
    if (rc == 0 && p.grid) {
        rc = grids_add(grids, &p, err);
        (*with_grid)++;
    }
    if (rc == 0) {
        mc->runs_added += p.n_done;
        mc->failed_added += p.n - p.n_done;
        mc->duplicates += p.duplicates;
        mc->unfinished += p.unfinished;
        mc->failed_superseded += p.failed_superseded;
    }
    db_merge_plan_free(&p);
    return rc;
}

/* What runner_merge created in out_dir (each 1 when it was not there before the merge opened it;
 * dir: the levels of out_dir it created, resultsdir.h). */
typedef struct Created {
    size_t dir;
    int db, tokens, lock;
} Created;

static int exists(const char *dir, const char *name) {
    char path[4400];
    struct stat st;
    snprintf(path, sizeof path, "%s%s%s", dir, name[0] ? "/" : "", name);
    return stat(path, &st) == 0;
}

/* A merge refused before it merged anything leaves out_dir as it found it: what it created there (the
 * database, tokens/, the lock, the directory itself and the levels above it that it created) goes;
 * what was there before stays, and the directories go only when empty. db is closed by the caller
 * first. */
static void undo_created(const char *out_dir, const Created *c) {
    char path[4400];
    if (c->db) {
        const char *const files[] = {"runs.sqlite", "runs.sqlite-wal", "runs.sqlite-shm", "runs.sqlite-journal"};
        for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
            snprintf(path, sizeof path, "%s/%s", out_dir, files[i]);
            unlink(path);
        }
    }
    if (c->tokens) {
        snprintf(path, sizeof path, "%s/tokens", out_dir);
        rmdir(path); /* only when empty */
    }
    if (c->lock) {
        snprintf(path, sizeof path, "%s/.sweep.lock", out_dir);
        unlink(path);
    }
    results_dir_remove_created(out_dir, c->dir); /* only when empty */
}

int runner_merge(const char *out_dir, char *const *shard_dirs, int n, int allow_specs, MergeCounts *mc, GridReport *gr,
                 SpErr *err) {
    memset(mc, 0, sizeof *mc);
    memset(gr, 0, sizeof *gr);
    char db_path[4200];
    snprintf(db_path, sizeof db_path, "%s/runs.sqlite", out_dir);
    for (int i = 0; i < n; i++) {
        struct stat st;
        if (stat(shard_dirs[i], &st) != 0 || !S_ISDIR(st.st_mode)) return sp_fail(err, "%s: not a directory", shard_dirs[i]);
    }
    Created created = {0, !exists(out_dir, "runs.sqlite"), !exists(out_dir, "tokens"), !exists(out_dir, ".sweep.lock")};
    int lock_fd = -1; /* a sweep writing out_dir uses the same lock and the same HASH.h5.tmp names */
    Db *db = NULL;
    for (int i = 0; i < n; i++) { /* the shards' databases are inputs: out_dir's may not be one of them */
        char src_db[4200];
        snprintf(src_db, sizeof src_db, "%s/runs.sqlite", shard_dirs[i]);
        if (!same_dir(shard_dirs[i], out_dir)) sql_note_inputs(src_db);
    }
    int rc = results_dir_open(out_dir, &created.dir, &lock_fd, err);
    if (rc == 0 && !(db = db_open(db_path, err))) rc = -1;
    if (rc == 0) rc = merge_precheck(db, out_dir, shard_dirs, n, allow_specs, gr, err);
    if (rc) { /* refused before anything was merged: nothing of this merge stays in out_dir */
        grid_report_free(gr);
        int64_t done = 0, failed = 0, toks = 0;
        if (!db || db_progress(db, &done, &failed, &toks, NULL) || done || failed)
            created.db = 0; /* not ours after all (a sweep between the look and the lock): kept */
        db_close(db);
        /* only while holding the lock (no sweep or merge is writing out_dir); a lock held by another
         * process means out_dir is theirs, left alone */
        if (lock_fd >= 0 && flock(lock_fd, LOCK_EX | LOCK_NB) == 0) undo_created(out_dir, &created);
        if (lock_fd >= 0) close(lock_fd);
        return rc;
    }
    Grids grids = {0};
    for (int i = 0; rc == 0 && i < n; i++) {
        if (same_dir(shard_dirs[i], out_dir) || gr->empty[i]) continue;
        rc = merge_one(db, out_dir, shard_dirs[i], mc, &grids, &gr->shards_with_grid, err);
    }
    if (rc == 0 && grids.n) { /* the merged directory holds the shards' grid (none when they differ) */
        rc = check_grids(db, &grids, gr, err);
        if (rc == 0) rc = db_set_grid_text(db, grids.n == 1 ? grids.text[0] : NULL, err);
    } else if (rc == 0) { /* no grid known: every failed run of the merged directory */
        int64_t done, failed, toks;
        rc = db_progress(db, &done, &failed, &toks, err);
        gr->failed = (int)failed;
    }
    if (rc) grid_report_free(gr);
    grids_free(&grids);
    db_close(db);
    close(lock_fd);
    return rc;
}
