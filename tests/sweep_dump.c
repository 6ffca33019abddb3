/* sweep_dump.c - test helper: prints a canonical text dump of a sweep results directory, so two
 * directories can be compared with diff, and checks its consistency.
 *
 *   usage: sweep_dump RESULTS_DIR
 *
 * Prints the meta rows but 'shard' (how the work was split: "I/N" of a shard, none in a merged
 * directory), every runs and prompts row (sorted by run hash and prompt index) except the columns
 * that measure wall-clock time or depend on when and where the sweep ran (started_at, finished_at,
 * t_*, git_commit, host; how a run was executed: exec_batch, tokens_per_s_batched), then every token log's datasets, floats as their bit patterns. Exits 1
 * (after printing "sweep_dump: ..." lines on stderr) when a run is neither done nor failed, a done
 * run's token log is missing or does not open, a failed run has prompt rows or no reason, a token
 * log has no done run, or a *.tmp file is left over. A failed run (schema v4) is a consistent state:
 * its runs row is dumped like any other. */
#include <dirent.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "h5util.h"
#include "tokenlog.h"

static void problem(int *count, const char *fmt, const char *a, const char *b) {
    fprintf(stderr, "sweep_dump: ");
    fprintf(stderr, fmt, a, b);
    fprintf(stderr, "\n");
    (*count)++;
}

static int excluded(const char *col) {
    static const char *const ex[] = {"started_at", "finished_at", "git_commit", "host", "t_total", "t_draft",
                                     "t_target",   "t_verifier",  "t_audit",    "exec_batch", "tokens_per_s_batched",
                                     NULL};
    for (int i = 0; ex[i]; i++)
        if (!strcmp(col, ex[i])) return 1;
    return 0;
}

static int dump_table(sqlite3 *db, const char *table, const char *where, const char *order, int *bad) {
    char sql[256];
    snprintf(sql, sizeof sql, "SELECT * FROM %s %s ORDER BY %s", table, where, order);
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
        problem(bad, "cannot read table %s: %s", table, sqlite3_errmsg(db));
        return -1;
    }
    int n = sqlite3_column_count(st);
    while (sqlite3_step(st) == SQLITE_ROW) {
        printf("%s", table);
        for (int i = 0; i < n; i++) {
            const char *name = sqlite3_column_name(st, i);
            if (excluded(name)) continue;
            switch (sqlite3_column_type(st, i)) {
            case SQLITE_NULL: printf(" %s=NULL", name); break;
            case SQLITE_INTEGER: printf(" %s=%lld", name, (long long)sqlite3_column_int64(st, i)); break;
            case SQLITE_FLOAT: printf(" %s=%a", name, sqlite3_column_double(st, i)); break;
            default: printf(" %s=\"%s\"", name, (const char *)sqlite3_column_text(st, i)); break;
            }
        }
        printf("\n");
    }
    sqlite3_finalize(st);
    return 0;
}

static void dump_log(const char *dir, const char *hash, int *bad) {
    char path[4200];
    snprintf(path, sizeof path, "%s/tokens/%s.h5", dir, hash);
    SpErr err = {{0}};
    hid_t f = h5_open_read(path, &err);
    if (f < 0) {
        problem(bad, "%s: %s", path, err.msg);
        return;
    }
    const H5ColSpec *cols = tokenlog_columns();
    printf("tokens %s\n", hash);
    for (int c = 0; c < TOKENLOG_N_COLS; c++) {
        void *data = NULL;
        int64_t rows;
        int width;
        if (h5_read_column(f, path, cols[c].name, cols[c].type, &data, &rows, &width, &err)) {
            problem(bad, "%s: %s", path, err.msg);
            continue;
        }
        printf("  %s[%lld]", cols[c].name, (long long)rows);
        for (int64_t i = 0; i < rows * width; i++) {
            switch (cols[c].type) {
            case H5C_I64: printf(" %lld", (long long)((int64_t *)data)[i]); break;
            case H5C_I32: printf(" %d", ((int32_t *)data)[i]); break;
            case H5C_I8: printf(" %d", ((int8_t *)data)[i]); break;
            case H5C_F32: {
                uint32_t u;
                memcpy(&u, (float *)data + i, 4);
                printf(" %08x", u);
                break;
            }
            case H5C_F64: {
                uint64_t u;
                memcpy(&u, (double *)data + i, 8);
                printf(" %016llx", (unsigned long long)u);
                break;
            }
            }
        }
        printf("\n");
        free(data);
    }
    char attr[128];
    if (h5_read_attr_str(f, path, "run_hash", attr, sizeof attr, &err) || strcmp(attr, hash))
        problem(bad, "%s: attribute run_hash is not %s", path, hash);
    H5Fclose(f);
}

/* Every file in DIR/tokens must be HASH.h5 of a done run; no leftovers. */
static void check_files(const char *dir, sqlite3 *db, int *bad) {
    char tdir[4200];
    snprintf(tdir, sizeof tdir, "%s/tokens", dir);
    DIR *d = opendir(tdir);
    if (!d) {
        problem(bad, "%s: %s", tdir, "cannot open");
        return;
    }
    sqlite3_stmt *st;
    sqlite3_prepare_v2(db, "SELECT status FROM runs WHERE run_hash = ?", -1, &st, NULL);
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.') continue;
        size_t n = strlen(e->d_name);
        if (n != 67 || strcmp(e->d_name + 64, ".h5")) {
            problem(bad, "%s/%s: unexpected file (leftover?)", tdir, e->d_name);
            continue;
        }
        char hash[65];
        memcpy(hash, e->d_name, 64);
        hash[64] = '\0';
        sqlite3_reset(st);
        sqlite3_bind_text(st, 1, hash, -1, SQLITE_TRANSIENT);
        if (sqlite3_step(st) != SQLITE_ROW || strcmp((const char *)sqlite3_column_text(st, 0), "done"))
            problem(bad, "%s/%s: token log of a run that is not done", tdir, e->d_name);
    }
    sqlite3_finalize(st);
    closedir(d);
}

/* A failed run has its reason and no prompt or outputs rows. */
static void check_failed(sqlite3 *db, const char *hash, int *bad) {
    sqlite3_stmt *st;
    const char *sql = "SELECT (SELECT failure FROM runs WHERE run_hash = ?1) IS NOT NULL, "
                      "(SELECT COUNT(*) FROM prompts WHERE run_hash = ?1)";
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
        problem(bad, "failed run %s: %s", hash, sqlite3_errmsg(db));
        return;
    }
    sqlite3_bind_text(st, 1, hash, -1, SQLITE_TRANSIENT);
    if (sqlite3_step(st) == SQLITE_ROW) {
        if (!sqlite3_column_int(st, 0)) problem(bad, "failed run %s has no failure reason%s", hash, "");
        if (sqlite3_column_int(st, 1)) problem(bad, "failed run %s has prompt rows%s", hash, "");
    }
    sqlite3_finalize(st);
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: sweep_dump RESULTS_DIR\n");
        return 2;
    }
    const char *dir = argv[1];
    char path[4200];
    snprintf(path, sizeof path, "%s/runs.sqlite", dir);
    sqlite3 *db;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
        fprintf(stderr, "sweep_dump: %s: cannot open\n", path);
        return 1;
    }
    sqlite3_busy_timeout(db, 10000);
    int n_bad = 0, *bad = &n_bad;
    dump_table(db, "meta", "WHERE key <> 'shard'", "key", bad);
    dump_table(db, "runs", "", "run_hash", bad);
    dump_table(db, "prompts", "", "run_hash, prompt_index", bad);
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, "SELECT run_hash, status FROM runs ORDER BY run_hash", -1, &st, NULL) == SQLITE_OK) {
        while (sqlite3_step(st) == SQLITE_ROW) {
            const char *h = (const char *)sqlite3_column_text(st, 0), *s = (const char *)sqlite3_column_text(st, 1);
            if (!strcmp(s, "done")) dump_log(dir, h, bad);
            else if (!strcmp(s, "failed")) check_failed(db, h, bad);
            else problem(bad, "run %s is %s", h, s);
        }
        sqlite3_finalize(st);
    }
    check_files(dir, db, bad);
    sqlite3_close(db);
    return n_bad ? 1 : 0;
}
