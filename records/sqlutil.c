/* sqlutil.c - SQLite errors and introspection (see sqlutil.h). */
#include "sqlutil.h"

#include <errno.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsutil.h"

#if SQLITE_VERSION_NUMBER < 3035000
#error "records/ needs SQLite >= 3.35 (sqlite3_system_errno, SQLITE_READONLY_DIRECTORY, ALTER TABLE DROP COLUMN)"
#endif

#define SQL_CODE(c) {c, #c},
/* Names of SQLite's result codes, extended ones included: sqlite3_errmsg says "disk I/O error" for
 * thirty different failures; the extended code says which (SQLITE_IOERR_WRITE, _FSYNC, _SHMSIZE, ...). */
static const struct {
    int code;
    const char *name;
} kSqlCodes[] = {
    SQL_CODE(SQLITE_ERROR) SQL_CODE(SQLITE_INTERNAL) SQL_CODE(SQLITE_PERM) SQL_CODE(SQLITE_ABORT)
    SQL_CODE(SQLITE_BUSY) SQL_CODE(SQLITE_LOCKED) SQL_CODE(SQLITE_NOMEM) SQL_CODE(SQLITE_READONLY)
    SQL_CODE(SQLITE_INTERRUPT) SQL_CODE(SQLITE_IOERR) SQL_CODE(SQLITE_CORRUPT) SQL_CODE(SQLITE_NOTFOUND)
    SQL_CODE(SQLITE_FULL) SQL_CODE(SQLITE_CANTOPEN) SQL_CODE(SQLITE_PROTOCOL) SQL_CODE(SQLITE_EMPTY)
    SQL_CODE(SQLITE_SCHEMA) SQL_CODE(SQLITE_TOOBIG) SQL_CODE(SQLITE_CONSTRAINT) SQL_CODE(SQLITE_MISMATCH)
    SQL_CODE(SQLITE_MISUSE) SQL_CODE(SQLITE_NOLFS) SQL_CODE(SQLITE_AUTH) SQL_CODE(SQLITE_FORMAT)
    SQL_CODE(SQLITE_RANGE) SQL_CODE(SQLITE_NOTADB) SQL_CODE(SQLITE_NOTICE) SQL_CODE(SQLITE_WARNING)
    SQL_CODE(SQLITE_IOERR_READ) SQL_CODE(SQLITE_IOERR_SHORT_READ) SQL_CODE(SQLITE_IOERR_WRITE)
    SQL_CODE(SQLITE_IOERR_FSYNC) SQL_CODE(SQLITE_IOERR_DIR_FSYNC) SQL_CODE(SQLITE_IOERR_TRUNCATE)
    SQL_CODE(SQLITE_IOERR_FSTAT) SQL_CODE(SQLITE_IOERR_UNLOCK) SQL_CODE(SQLITE_IOERR_RDLOCK)
    SQL_CODE(SQLITE_IOERR_DELETE) SQL_CODE(SQLITE_IOERR_BLOCKED) SQL_CODE(SQLITE_IOERR_NOMEM)
    SQL_CODE(SQLITE_IOERR_ACCESS) SQL_CODE(SQLITE_IOERR_CHECKRESERVEDLOCK) SQL_CODE(SQLITE_IOERR_LOCK)
    SQL_CODE(SQLITE_IOERR_CLOSE) SQL_CODE(SQLITE_IOERR_DIR_CLOSE) SQL_CODE(SQLITE_IOERR_SHMOPEN)
    SQL_CODE(SQLITE_IOERR_SHMSIZE) SQL_CODE(SQLITE_IOERR_SHMLOCK) SQL_CODE(SQLITE_IOERR_SHMMAP)
    SQL_CODE(SQLITE_IOERR_SEEK) SQL_CODE(SQLITE_IOERR_DELETE_NOENT) SQL_CODE(SQLITE_IOERR_MMAP)
    SQL_CODE(SQLITE_IOERR_GETTEMPPATH) SQL_CODE(SQLITE_IOERR_CONVPATH) SQL_CODE(SQLITE_IOERR_VNODE)
    SQL_CODE(SQLITE_IOERR_AUTH) SQL_CODE(SQLITE_IOERR_BEGIN_ATOMIC) SQL_CODE(SQLITE_IOERR_COMMIT_ATOMIC)
    SQL_CODE(SQLITE_IOERR_ROLLBACK_ATOMIC)
#ifdef SQLITE_IOERR_DATA
    SQL_CODE(SQLITE_IOERR_DATA)
#endif
#ifdef SQLITE_IOERR_CORRUPTFS
    SQL_CODE(SQLITE_IOERR_CORRUPTFS)
#endif
    SQL_CODE(SQLITE_LOCKED_SHAREDCACHE) SQL_CODE(SQLITE_LOCKED_VTAB) SQL_CODE(SQLITE_BUSY_RECOVERY)
    SQL_CODE(SQLITE_BUSY_SNAPSHOT)
#ifdef SQLITE_BUSY_TIMEOUT
    SQL_CODE(SQLITE_BUSY_TIMEOUT)
#endif
    SQL_CODE(SQLITE_CANTOPEN_NOTEMPDIR) SQL_CODE(SQLITE_CANTOPEN_ISDIR) SQL_CODE(SQLITE_CANTOPEN_FULLPATH)
    SQL_CODE(SQLITE_CANTOPEN_CONVPATH) SQL_CODE(SQLITE_CANTOPEN_DIRTYWAL)
#ifdef SQLITE_CANTOPEN_SYMLINK
    SQL_CODE(SQLITE_CANTOPEN_SYMLINK)
#endif
    SQL_CODE(SQLITE_CORRUPT_VTAB)
#ifdef SQLITE_CORRUPT_SEQUENCE
    SQL_CODE(SQLITE_CORRUPT_SEQUENCE)
#endif
#ifdef SQLITE_CORRUPT_INDEX
    SQL_CODE(SQLITE_CORRUPT_INDEX)
#endif
    SQL_CODE(SQLITE_READONLY_RECOVERY) SQL_CODE(SQLITE_READONLY_CANTLOCK) SQL_CODE(SQLITE_READONLY_ROLLBACK)
    SQL_CODE(SQLITE_READONLY_DBMOVED) SQL_CODE(SQLITE_READONLY_CANTINIT) SQL_CODE(SQLITE_READONLY_DIRECTORY)
    SQL_CODE(SQLITE_ABORT_ROLLBACK) SQL_CODE(SQLITE_CONSTRAINT_CHECK) SQL_CODE(SQLITE_CONSTRAINT_COMMITHOOK)
    SQL_CODE(SQLITE_CONSTRAINT_FOREIGNKEY) SQL_CODE(SQLITE_CONSTRAINT_FUNCTION) SQL_CODE(SQLITE_CONSTRAINT_NOTNULL)
    SQL_CODE(SQLITE_CONSTRAINT_PRIMARYKEY) SQL_CODE(SQLITE_CONSTRAINT_TRIGGER) SQL_CODE(SQLITE_CONSTRAINT_UNIQUE)
    SQL_CODE(SQLITE_CONSTRAINT_VTAB) SQL_CODE(SQLITE_CONSTRAINT_ROWID)
#ifdef SQLITE_CONSTRAINT_PINNED
    SQL_CODE(SQLITE_CONSTRAINT_PINNED)
#endif
#ifdef SQLITE_CONSTRAINT_DATATYPE
    SQL_CODE(SQLITE_CONSTRAINT_DATATYPE)
#endif
    SQL_CODE(SQLITE_NOTICE_RECOVER_WAL) SQL_CODE(SQLITE_NOTICE_RECOVER_ROLLBACK) SQL_CODE(SQLITE_WARNING_AUTOINDEX)
};
#undef SQL_CODE

/* " (SQLITE_IOERR_WRITE, errno 28: No space left on device)": the name of the connection's last
 * extended result code and, for the codes that come from a system call (I/O, open, full), the errno
 * SQLite saw (sqlite3_system_errno: SQLite >= 3.22; 0 = none, as for SQLITE_FULL from a short
 * write). "" when there is no error to describe. */
void sql_detail(sqlite3 *h, char *buf, size_t cap) {
    buf[0] = '\0';
    if (!h) return;
    int ext = sqlite3_extended_errcode(h), prim = ext & 0xff;
    if (ext == SQLITE_OK || ext == SQLITE_ROW || ext == SQLITE_DONE) return;
    const char *name = NULL;
    for (size_t i = 0; i < sizeof kSqlCodes / sizeof *kSqlCodes && !name; i++)
        if (kSqlCodes[i].code == ext) name = kSqlCodes[i].name;
    char code[48];
    if (name) snprintf(code, sizeof code, "%s", name);
    else snprintf(code, sizeof code, "SQLite result code %d", ext);
    int sys = prim == SQLITE_IOERR || prim == SQLITE_CANTOPEN || prim == SQLITE_FULL ? sqlite3_system_errno(h) : 0;
    if (sys > 0) snprintf(buf, cap, " (%s, errno %d: %s)", code, sys, strerror(sys));
    else snprintf(buf, cap, " (%s)", code);
}

int sql_fail(sqlite3 *h, const char *path, const char *what, SpErr *err) {
    char detail[160];
    sql_detail(h, detail, sizeof detail);
    int ext = h ? sqlite3_extended_errcode(h) : SQLITE_OK;
    const char *msg = ext == SQLITE_OK ? "unknown error" : sqlite3_errmsg(h);
    return sp_fail(err, "%s: %s: %s%s", path, what, msg, detail);
}

int sql_exec(sqlite3 *h, const char *path, const char *sql, const char *what, SpErr *err) {
    if (!what && strlen(sql) < 40 && !strpbrk(sql, ";\n")) what = sql;
    char *msg = NULL;
    int rc = sqlite3_exec(h, sql, NULL, NULL, &msg);
    if (rc == SQLITE_OK) return 0;
    char detail[160];
    sql_detail(h, detail, sizeof detail);
    sp_fail(err, "%s: %s%s%s%s", path, what ? what : "", what ? ": " : "", msg ? msg : sqlite3_errstr(rc), detail);
    sqlite3_free(msg);
    return -1;
}

int sql_scalar_text(sqlite3 *h, const char *path, const char *sql, char *buf, size_t cap, SpErr *err) {
    sqlite3_stmt *st;
    buf[0] = '\0';
    if (sqlite3_prepare_v2(h, sql, -1, &st, NULL) != SQLITE_OK) return sql_fail(h, path, "query", err);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW && sqlite3_column_text(st, 0)) snprintf(buf, cap, "%s", (const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    return (rc == SQLITE_ROW || rc == SQLITE_DONE) ? 0 : sql_fail(h, path, "query", err);
}

/* The directory part of path ("." for a bare name) is writable by this process. */
static int dir_writable(const char *path) {
    char dir[4200];
    const char *slash = strrchr(path, '/');
    if (!slash) snprintf(dir, sizeof dir, ".");
    else snprintf(dir, sizeof dir, "%.*s", (int)(slash - path) ? (int)(slash - path) : 1, path);
    return access(dir, W_OK) == 0;
}

/* Opens path with flags and reads the schema once; NULL with err set ("what" names the attempt). */
static sqlite3 *open_probe(const char *path, const char *uri, int flags, SpErr *err) {
    sqlite3 *h = NULL;
    int rc = sqlite3_open_v2(uri ? uri : path, &h, flags, NULL);
    if (rc == SQLITE_OK) rc = sqlite3_exec(h, "SELECT count(*) FROM sqlite_master", NULL, NULL, NULL);
    if (rc == SQLITE_OK) return h;
    char detail[160];
    detail[0] = '\0';
    if (h) sql_detail(h, detail, sizeof detail);
    sp_fail(err, "%s: open for reading%s: %s%s", path, uri ? " (immutable)" : "",
            h ? sqlite3_errmsg(h) : sqlite3_errstr(rc), detail);
    sqlite3_close(h);
    return NULL;
}

/* The database's files: path and its sidecars (sqlite3's own names). */
static const char *const kSqlSuffixes[] = {"", "-wal", "-journal", "-shm"};
#define SQL_N_FILES (sizeof kSqlSuffixes / sizeof *kSqlSuffixes)

void sql_note_inputs(const char *path) {
    char f[4300];
    for (size_t i = 0; i < SQL_N_FILES; i++) {
        snprintf(f, sizeof f, "%s%s", path, kSqlSuffixes[i]);
        sp_input_note(f);
    }
}

void sql_forget_inputs(const char *path) {
    char f[4300];
    for (size_t i = 0; i < SQL_N_FILES; i++) {
        snprintf(f, sizeof f, "%s%s", path, kSqlSuffixes[i]);
        sp_input_forget(f);
    }
}

int sql_check_output(const char *path, SpErr *err) {
    char f[4300];
    for (size_t i = 0; i < SQL_N_FILES; i++) {
        snprintf(f, sizeof f, "%s%s", path, kSqlSuffixes[i]);
        if (sp_output_check(f, err)) return -1;
    }
    return 0;
}

static sqlite3 *open_read(const char *path, SpErr *err);

sqlite3 *sql_open_read(const char *path, SpErr *err) {
    sqlite3 *h = open_read(path, err);
    if (h) sql_note_inputs(path);
    return h;
}

static sqlite3 *open_read(const char *path, SpErr *err) {
    if (access(path, F_OK) != 0) {
        sp_fail(err, "%s: cannot open for reading: %s", path, strerror(errno));
        return NULL;
    }
    SpErr first = {{0}};
    sqlite3 *h = open_probe(path, NULL, SQLITE_OPEN_READONLY, &first);
    if (h || dir_writable(path)) {
        if (!h && err) *err = first;
        return h;
    }
    /* immutable=1 reads the main file only: a write-ahead log beside it (a writer killed before its
     * checkpoint) holds committed rows that would silently be missing */
    char wal[4300];
    struct stat ws;
    snprintf(wal, sizeof wal, "%s-wal", path);
    if (stat(wal, &ws) == 0 && ws.st_size > 0) {
        sp_fail(err, "%s: its write-ahead log %s (%lld bytes) holds commits not yet in the database, and the directory "
                     "is not writable, so SQLite can only read the database without them: copy both files to a "
                     "writable directory, or open it once where it is writable",
                path, wal, (long long)ws.st_size);
        return NULL;
    }
    char uri[4300];
    size_t k = (size_t)snprintf(uri, sizeof uri, "file:"); /* in a URI path '%', '?' and '#' are escaped */
    for (const char *c = path; *c && k + 4 < sizeof uri; c++)
        k += (size_t)(strchr("%?#", *c) ? snprintf(uri + k, sizeof uri - k, "%%%02X", (unsigned char)*c)
                                         : snprintf(uri + k, sizeof uri - k, "%c", *c));
    snprintf(uri + k, sizeof uri - k, "?immutable=1");
    return open_probe(path, uri, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, err);
}

int sql_has_table(sqlite3 *h, const char *schema, const char *table) {
    char sql[128];
    snprintf(sql, sizeof sql, "SELECT 1 FROM \"%s\".sqlite_master WHERE type = 'table' AND name = ?", schema);
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(h, sql, -1, &st, NULL) != SQLITE_OK) return 0;
    sqlite3_bind_text(st, 1, table, -1, SQLITE_STATIC);
    int found = sqlite3_step(st) == SQLITE_ROW;
    sqlite3_finalize(st);
    return found;
}

int sql_has_column(sqlite3 *h, const char *schema, const char *table, const char *col) {
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(h, "SELECT 1 FROM pragma_table_info(?1, ?2) WHERE name = ?3", -1, &st, NULL) != SQLITE_OK)
        return 0;
    sqlite3_bind_text(st, 1, table, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, schema, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, col, -1, SQLITE_STATIC);
    int found = sqlite3_step(st) == SQLITE_ROW;
    sqlite3_finalize(st);
    return found;
}

int sql_read_rows(sqlite3 *h, const char *path, sqlite3_stmt *st, const char *what, size_t item_size, void **items,
                  int *n, SqlReadRow read_row, void *ctx, SpErr *err) {
    int cap = *n;
    for (int s; (s = sqlite3_step(st)) != SQLITE_DONE;) {
        if (s != SQLITE_ROW) return sql_fail(h, path, what, err);
        if (*n == cap) {
            cap = cap ? 2 * cap : 16;
            void *grown = realloc(*items, (size_t)cap * item_size);
            if (!grown) return sp_fail(err, "out of memory");
            *items = grown;
        }
        void *item = (char *)*items + (size_t)(*n)++ * item_size;
        memset(item, 0, item_size);
        if (read_row(st, item, ctx, err)) return -1;
    }
    return 0;
}
