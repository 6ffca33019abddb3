#include "h5util.h"

#include "clock.h"
#include "fsutil.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#if defined(__SANITIZE_ADDRESS__)
#define SP_H5_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SP_H5_SANITIZED 1
#endif
#endif
#ifdef SP_H5_SANITIZED
#include <sanitizer/common_interface_defs.h>
#endif

static hid_t mem_type(H5ColType t) {
    switch (t) {
    case H5C_F32: return H5T_NATIVE_FLOAT;
    case H5C_F64: return H5T_NATIVE_DOUBLE;
    case H5C_I32: return H5T_NATIVE_INT32;
    case H5C_I64: return H5T_NATIVE_INT64;
    case H5C_I8: return H5T_NATIVE_INT8;
    }
    return H5T_NATIVE_FLOAT;
}

/* Little-endian on-disk types, independent of the writing machine. */
static hid_t file_type(H5ColType t) {
    switch (t) {
    case H5C_F32: return H5T_IEEE_F32LE;
    case H5C_F64: return H5T_IEEE_F64LE;
    case H5C_I32: return H5T_STD_I32LE;
    case H5C_I64: return H5T_STD_I64LE;
    case H5C_I8: return H5T_STD_I8LE;
    }
    return H5T_IEEE_F32LE;
}

/* Error printing off. Also, before the library's first use, no atexit H5_term_library: libhdf5 1.10
 * crashes in it (H5F__close_cb) after an H5Fclose that failed on a full disk; every file is closed
 * explicitly here, so nothing is left for it to flush. */
static void silence(void) {
    static int first = 1;
    if (first) (void)H5dont_atexit(); /* fails harmlessly if something else initialized HDF5 already */
    first = 0;
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
}

static int str_attr(hid_t obj, const char *name, const char *value) {
    hid_t st = H5Tcopy(H5T_C_S1);
    H5Tset_size(st, strlen(value) + 1);
    H5Tset_strpad(st, H5T_STR_NULLTERM);
    hid_t sp = H5Screate(H5S_SCALAR);
    hid_t a = H5Acreate2(obj, name, st, sp, H5P_DEFAULT, H5P_DEFAULT);
    int rc = (a < 0 || H5Awrite(a, st, value) < 0) ? -1 : 0;
    if (a >= 0) H5Aclose(a);
    H5Sclose(sp);
    H5Tclose(st);
    return rc;
}

int h5t_create(H5Table *t, const char *path, const H5ColSpec *cols, int n_cols, int chunk_rows, SpErr *err) {
    silence();
    memset(t, 0, sizeof *t);
    t->file = -1;
    snprintf(t->path, sizeof t->path, "%s", path);
    /* the output rules (fsutil.h): PATH absent or a regular file; PATH.tmp created fresh, no link followed */
    int fd = sp_output_create_tmp(path, t->tmp, sizeof t->tmp, err);
    if (fd < 0) {
        t->tmp[0] = '\0';
        return -1;
    }
    close(fd);
    hid_t fcpl = H5Pcreate(H5P_FILE_CREATE);
    H5Pset_obj_track_times(fcpl, 0); /* the root group too */
    errno = 0;
    t->file = H5Fcreate(t->tmp, H5F_ACC_TRUNC, fcpl, H5P_DEFAULT);
    int e = errno;
    H5Pclose(fcpl);
    if (t->file < 0) {
        sp_output_discard(t->tmp); /* H5Fcreate may have created it before failing (a full disk) */
        return sp_fail(err, "%s: cannot create HDF5 file%s%s", t->tmp, e ? ": " : "", e ? strerror(e) : "");
    }
    t->n_cols = n_cols;
    t->dsets = calloc((size_t)n_cols, sizeof *t->dsets);
    t->cols = calloc((size_t)n_cols, sizeof *t->cols);
    if (!t->dsets || !t->cols) {
        h5t_abort(t);
        return sp_fail(err, "out of memory");
    }
    memcpy(t->cols, cols, (size_t)n_cols * sizeof *cols);
    for (int c = 0; c < n_cols; c++) {
        int rank = cols[c].width > 1 ? 2 : 1;
        hsize_t dims[2] = {0, (hsize_t)cols[c].width}, maxd[2] = {H5S_UNLIMITED, (hsize_t)cols[c].width};
        hsize_t chunk[2] = {(hsize_t)chunk_rows, (hsize_t)cols[c].width};
        hid_t sp = H5Screate_simple(rank, dims, maxd);
        hid_t pl = H5Pcreate(H5P_DATASET_CREATE);
        H5Pset_chunk(pl, rank, chunk);
        H5Pset_obj_track_times(pl, 0); /* no timestamps: same content, same bytes */
        H5Pset_shuffle(pl);
        H5Pset_deflate(pl, 4);
        t->dsets[c] = H5Dcreate2(t->file, cols[c].name, file_type(cols[c].type), sp, H5P_DEFAULT, pl, H5P_DEFAULT);
        H5Pclose(pl);
        H5Sclose(sp);
        if (t->dsets[c] < 0) {
            h5t_abort(t);
            return sp_fail(err, "%s: cannot create dataset %s", path, cols[c].name);
        }
        if ((cols[c].units && str_attr(t->dsets[c], "units", cols[c].units)) ||
            (cols[c].doc && str_attr(t->dsets[c], "description", cols[c].doc))) {
            h5t_abort(t);
            return sp_fail(err, "%s: cannot write attributes of %s", path, cols[c].name);
        }
    }
    return 0;
}

int h5t_append(H5Table *t, int64_t n, const void *const *data, SpErr *err) {
    if (n <= 0) return 0;
    for (int c = 0; c < t->n_cols; c++) {
        int rank = t->cols[c].width > 1 ? 2 : 1;
        hsize_t newd[2] = {(hsize_t)(t->rows + n), (hsize_t)t->cols[c].width};
        hsize_t start[2] = {(hsize_t)t->rows, 0}, count[2] = {(hsize_t)n, (hsize_t)t->cols[c].width};
        if (H5Dset_extent(t->dsets[c], newd) < 0) return sp_fail(err, "%s: cannot extend %s", t->tmp, t->cols[c].name);
        hid_t fs = H5Dget_space(t->dsets[c]);
        H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, count, NULL);
        hid_t ms = H5Screate_simple(rank, count, NULL);
        herr_t w = H5Dwrite(t->dsets[c], mem_type(t->cols[c].type), ms, fs, H5P_DEFAULT, data[c]);
        H5Sclose(ms);
        H5Sclose(fs);
        if (w < 0) return sp_fail(err, "%s: write to %s failed (disk full?)", t->tmp, t->cols[c].name);
    }
    t->rows += n;
    return 0;
}

int h5t_attr_str(H5Table *t, const char *name, const char *value, SpErr *err) {
    if (str_attr(t->file, name, value ? value : "")) return sp_fail(err, "%s: cannot write attribute %s", t->tmp, name);
    return 0;
}

static int num_attr(H5Table *t, const char *name, hid_t ftype, hid_t mtype, const void *v, SpErr *err) {
    hid_t sp = H5Screate(H5S_SCALAR);
    hid_t a = H5Acreate2(t->file, name, ftype, sp, H5P_DEFAULT, H5P_DEFAULT);
    int rc = (a < 0 || H5Awrite(a, mtype, v) < 0) ? sp_fail(err, "%s: cannot write attribute %s", t->tmp, name) : 0;
    if (a >= 0) H5Aclose(a);
    H5Sclose(sp);
    return rc;
}

int h5t_attr_f64(H5Table *t, const char *name, double value, SpErr *err) {
    return num_attr(t, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, &value, err);
}

int h5t_attr_i64(H5Table *t, const char *name, int64_t value, SpErr *err) {
    return num_attr(t, name, H5T_STD_I64LE, H5T_NATIVE_INT64, &value, err);
}

static void close_all(H5Table *t) {
    for (int c = 0; t->dsets && c < t->n_cols; c++)
        if (t->dsets[c] > 0) H5Dclose(t->dsets[c]);
    free(t->dsets);
    free(t->cols);
    t->dsets = NULL;
    t->cols = NULL;
}

int h5t_commit(H5Table *t, SpErr *err) {
    int rc = 0;
    if (H5Fflush(t->file, H5F_SCOPE_GLOBAL) < 0) rc = sp_fail(err, "%s: flush failed (disk full?)", t->tmp);
    close_all(t);
    if (H5Fclose(t->file) < 0 && rc == 0) rc = sp_fail(err, "%s: close failed (disk full?)", t->tmp);
    t->file = -1;
    if (rc == 0) rc = sp_output_commit(t->tmp, t->path, err); /* removes tmp on failure */
    else sp_output_discard(t->tmp);
    return rc;
}

void h5t_abort(H5Table *t) {
    close_all(t);
    if (t->file >= 0) H5Fclose(t->file);
    t->file = -1;
    sp_output_discard(t->tmp);
}

hid_t h5_open_read(const char *path, SpErr *err) {
    silence();
    /* "missing" is not "corrupt": only an existing regular file is handed to HDF5 (never a FIFO) */
    int fd = sp_open_input(path, err);
    if (fd < 0) return -1;
    close(fd);
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (f < 0) sp_fail(err, "%s: cannot open as HDF5 (corrupt or not an HDF5 file)", path);
    return f;
}

/* 1 when dataset `name` exists, 0 when it does not, -1 (err filled) when libhdf5 cannot complete the
 * lookup: an error is not "absent" (a damaged local heap; fuzz/RELIABILITY.md bug 15). */
static int dataset_exists(hid_t file, const char *path, const char *name, SpErr *err) {
    htri_t has = H5Lexists(file, name, H5P_DEFAULT);
    if (has < 0) return sp_fail(err, "%s: HDF5 cannot look up dataset %s: the file is damaged", path, name);
    return has > 0;
}

int h5_read_column(hid_t file, const char *path, const char *name, H5ColType type, void **out, int64_t *rows,
                   int *width, SpErr *err) {
    int has = dataset_exists(file, path, name, err);
    if (has < 0) return -1;
    if (has == 0) return sp_fail(err, "%s: missing dataset %s", path, name);
    hid_t d = H5Dopen2(file, name, H5P_DEFAULT);
    if (d < 0) return sp_fail(err, "%s: cannot open dataset %s", path, name);
    hid_t sp = H5Dget_space(d);
    int rank = H5Sget_simple_extent_ndims(sp);
    hsize_t dims[2] = {0, 1};
    int rc = 0;
    if (rank < 1 || rank > 2) {
        rc = sp_fail(err, "%s: dataset %s has rank %d, expected 1 or 2", path, name, rank);
    } else {
        H5Sget_simple_extent_dims(sp, dims, NULL);
        size_t esz = H5Tget_size(mem_type(type));
        size_t n = (size_t)dims[0] * (size_t)(rank == 2 ? dims[1] : 1);
        /* Bound the allocation by what the file holds: deflate expands at most ~1032x, so a dataset
         * claiming more values than that (unwritten chunks read as fill values) is refused rather than
         * allocated: a 30 kB file cannot make us allocate gigabytes. */
        double stored = (double)H5Dget_storage_size(d);
        hsize_t file_bytes = 0;
        if (H5Fget_filesize(file, &file_bytes) < 0) file_bytes = 0;
        hid_t ft = H5Dget_type(d);
        size_t fsz = ft >= 0 ? H5Tget_size(ft) : 1;
        if (ft >= 0) H5Tclose(ft);
        if (dims[0] > ((hsize_t)1 << 34) || (rank == 2 && dims[1] > ((hsize_t)1 << 20))) {
            rc = sp_fail(err, "%s: dataset %s is implausibly large", path, name);
        } else if (stored > (double)file_bytes) {
            /* a damaged chunk index: libhdf5 would allocate the claimed size to read the chunk (4 GB
             * seen from a 32 kB file) */
            rc = sp_fail(err, "%s: dataset %s claims %.0f stored bytes in a file of %llu bytes", path, name, stored,
                         (unsigned long long)file_bytes);
        } else if ((double)n * (double)(fsz ? fsz : 1) > 1100.0 * stored + (double)(1 << 20)) {
            rc = sp_fail(err, "%s: dataset %s claims %llu values but the file stores only %.0f bytes of it", path, name,
                         (unsigned long long)n, stored);
        } else if (!(*out = malloc(n ? n * esz : 1))) {
            rc = sp_fail(err, "out of memory reading %s", name);
        } else if (n && H5Dread(d, mem_type(type), H5S_ALL, H5S_ALL, H5P_DEFAULT, *out) < 0) {
            free(*out);
            *out = NULL;
            rc = sp_fail(err, "%s: cannot read dataset %s as the expected type", path, name);
        }
        *rows = (int64_t)dims[0];
        *width = rank == 2 ? (int)dims[1] : 1;
    }
    H5Sclose(sp);
    H5Dclose(d);
    return rc;
}

int h5_read_attr_f64(hid_t file, const char *path, const char *name, double *out, SpErr *err) {
    if (H5Aexists(file, name) <= 0) return sp_fail(err, "%s: missing attribute %s", path, name);
    hid_t a = H5Aopen(file, name, H5P_DEFAULT);
    int rc = (a < 0 || H5Aread(a, H5T_NATIVE_DOUBLE, out) < 0) ? sp_fail(err, "%s: attribute %s is not a number", path, name) : 0;
    if (a >= 0) H5Aclose(a);
    return rc;
}

int h5_read_attr_str(hid_t file, const char *path, const char *name, char *buf, size_t cap, SpErr *err) {
    if (H5Aexists(file, name) <= 0) return sp_fail(err, "%s: missing attribute %s", path, name);
    hid_t a = H5Aopen(file, name, H5P_DEFAULT);
    hid_t t = a >= 0 ? H5Aget_type(a) : -1;
    int rc = 0;
    if (a < 0 || t < 0 || H5Tget_class(t) != H5T_STRING || H5Tis_variable_str(t) > 0) {
        rc = sp_fail(err, "%s: attribute %s is not a fixed-length string", path, name);
    } else {
        size_t sz = H5Tget_size(t);
        char *tmp = malloc(sz + 1);
        if (!tmp || H5Aread(a, t, tmp) < 0) {
            rc = sp_fail(err, "%s: cannot read attribute %s", path, name);
        } else {
            tmp[sz] = '\0';
            snprintf(buf, cap, "%s", tmp);
        }
        free(tmp);
    }
    if (t >= 0) H5Tclose(t);
    if (a >= 0) H5Aclose(a);
    return rc;
}

/* ------------------------------------------------------------------ checked child */

static int write_all(int fd, const void *p, size_t n) {
    const char *c = p;
    while (n > 0) {
        ssize_t w = write(fd, c, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        c += w, n -= (size_t)w;
    }
    return 0;
}

#ifdef SP_H5_SANITIZED
#include <sys/resource.h>
/* libFuzzer's malloc hook (installed for -malloc_limit_mb, inherited across fork, not removable) also
 * records the parent's input as an out-of-memory finding when libhdf5 allocates what a damaged header
 * claims inside the child: 800 MB for a local heap under H5Lexists (H5HL_protect), 4 GB for a chunk
 * under H5Dread (fuzz/RELIABILITY.md bugs 13 and 15). The hook sees only allocations that succeed, so in
 * a sanitized build the child's address space may grow by at most this much beyond what it inherited:
 * such an allocation then fails (allocator_may_return_null=1 in the fuzz pass), libhdf5 returns an
 * error and the parent reports the file in one line. Below fuzz/Makefile's -malloc_limit_mb=512. */
#define SANITIZED_CHILD_GROWTH ((rlim_t)448 << 20)
static void cap_sanitized_child_growth(void) {
    unsigned long pages = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    int got = f && fscanf(f, "%lu", &pages) == 1;
    if (f) fclose(f);
    if (!got) return;
    rlim_t now = (rlim_t)pages * (rlim_t)sysconf(_SC_PAGESIZE);
    struct rlimit lim = {.rlim_cur = now + SANITIZED_CHILD_GROWTH, .rlim_max = RLIM_INFINITY};
    struct rlimit old;
    if (getrlimit(RLIMIT_AS, &old) == 0 && old.rlim_max != RLIM_INFINITY) lim.rlim_max = old.rlim_max;
    if (lim.rlim_cur > lim.rlim_max) lim.rlim_cur = lim.rlim_max;
    (void)setrlimit(RLIMIT_AS, &lim);
}
#endif

/* The child is a sandbox whose death the parent reports. What the parent installed to act on its
 * own crash must not act on the child's: libFuzzer's signal handlers and sanitizer death callback
 * would record the parent's current input as a finding (the fuzz pass counted libhdf5 crashes the
 * child had contained as crashes of ours, not reproducible on replay). Here a crash just ends it. */
static void drop_inherited_crash_handlers(void) {
    static const int kFatal[] = {SIGSEGV, SIGBUS, SIGABRT, SIGILL, SIGFPE};
    for (size_t i = 0; i < sizeof kFatal / sizeof *kFatal; i++) signal(kFatal[i], SIG_DFL);
#ifdef SP_H5_SANITIZED
    __sanitizer_set_death_callback(NULL);
    cap_sanitized_child_growth();
#endif
}

/* Answer over the pipe: 'B' + u64 length + blob, or 'E' + the message (to EOF). */
_Noreturn static void checked_child(int fd, H5CheckedFn fn, void *arg) {
    void *blob = NULL;
    size_t len = 0;
    SpErr e = {{0}};
    int ok;
    /* the pipe is the child's only channel: a sanitizer report of a libhdf5 crash would otherwise
     * reach the caller's stderr (and fail the fuzz pass, which counts any report in a log) */
    const char *keep = getenv("SPRINTER_H5_CHILD_STDERR"); /* "1": the child's reports reach stderr */
    int null = keep && !strcmp(keep, "1") ? -1 : open("/dev/null", O_WRONLY);
    if (null >= 0) dup2(null, STDERR_FILENO), close(null);
    drop_inherited_crash_handlers();
    if (fn(arg, &blob, &len, &e) == 0) {
        uint64_t n = len;
        ok = write_all(fd, "B", 1) == 0 && write_all(fd, &n, sizeof n) == 0 && write_all(fd, blob, len) == 0;
    } else {
        ok = write_all(fd, "E", 1) == 0 && write_all(fd, e.msg, strlen(e.msg)) == 0;
    }
    _exit(ok ? 0 : 3);
}

/* How long the parent waits for the checked child's answer: SPRINTER_H5_READ_TIMEOUT seconds when set
 * to a positive number (the fuzz pass sets 5, below libFuzzer's 10 s unit timeout), else
 * H5_READ_TIMEOUT_S. A child past it (libhdf5 looping on a crafted file, or stuck) is killed. */
#define H5_READ_TIMEOUT_S 600.0
static double read_timeout_s(void) {
    const char *v = getenv("SPRINTER_H5_READ_TIMEOUT");
    char *end;
    double t = v ? strtod(v, &end) : 0;
    return v && end != v && *end == '\0' && t > 0 ? t : H5_READ_TIMEOUT_S;
}

int h5_checked(const char *path, H5CheckedFn fn, void *arg, void **blob, size_t *len, SpErr *err) {
    *blob = NULL, *len = 0;
    double limit = read_timeout_s(), deadline = sp_now_s() + limit;
    int fds[2];
    if (pipe(fds) != 0) return sp_fail(err, "%s: pipe: %s", path, strerror(errno));
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]), close(fds[1]);
        return sp_fail(err, "%s: fork: %s", path, strerror(errno));
    }
    if (pid == 0) {
        close(fds[0]);
        checked_child(fds[1], fn, arg);
    }
    close(fds[1]);
    char *buf = NULL;
    size_t n = 0, cap = 0;
    int rc = 0;
    for (;;) {
        if (n == cap) {
            size_t nc = cap ? 2 * cap : 1 << 16;
            char *nb = realloc(buf, nc);
            if (!nb) {
                rc = sp_fail(err, "%s: out of memory", path);
                break;
            }
            buf = nb, cap = nc;
        }
        double left = deadline - sp_now_s();
        struct pollfd pf = {.fd = fds[0], .events = POLLIN};
        int ready = left > 0 ? poll(&pf, 1, (int)(left * 1000) + 1) : 0;
        if (ready < 0 && errno == EINTR) continue;
        if (ready == 0) {
            kill(pid, SIGKILL);
            rc = sp_fail(err, "%s: HDF5 did not finish reading it within %g s: the file is damaged (or set "
                              "SPRINTER_H5_READ_TIMEOUT)", path, limit);
            break;
        }
        ssize_t r = read(fds[0], buf + n, cap - n);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        n += (size_t)r;
    }
    close(fds[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (rc == 0 && WIFSIGNALED(status))
        rc = sp_fail(err, "%s: HDF5 crashed reading it (signal %d): the file is damaged", path, WTERMSIG(status));
    else if (rc == 0 && (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || n == 0))
        rc = sp_fail(err, "%s: HDF5 crashed reading it (exit status %d): the file is damaged", path,
                     WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    else if (rc == 0 && buf[0] == 'E') {
        size_t m = n - 1 < sizeof err->msg - 1 ? n - 1 : sizeof err->msg - 1;
        if (err) memcpy(err->msg, buf + 1, m), err->msg[m] = '\0';
        rc = -1;
    } else if (rc == 0) {
        uint64_t bl = 0;
        if (n >= 1 + sizeof bl) memcpy(&bl, buf + 1, sizeof bl);
        if (buf[0] != 'B' || n < 1 + sizeof bl || bl != n - 1 - sizeof bl)
            rc = sp_fail(err, "%s: the checked reader's answer is incomplete", path);
        else {
            memmove(buf, buf + 1 + sizeof bl, (size_t)bl);
            *blob = buf, *len = (size_t)bl;
            return 0;
        }
    }
    free(buf);
    return rc;
}

/* ------------------------------------------------------------------ checked pass */

typedef struct ProbeArg {
    const char *path;
    const char *const *attrs;
    int n_attrs;
    const H5Probe *dsets;
    int n_dsets;
} ProbeArg;

static int probe_in_child(void *arg, void **blob, size_t *len, SpErr *err) {
    const ProbeArg *a = arg;
    hid_t f = h5_open_read(a->path, err);
    if (f >= 0) {
        /* a lookup libhdf5 cannot complete (not "absent": an error) fails the checked pass, so that the
         * in-process reader never repeats it: on a damaged local heap it allocates what the heap header
         * claims (800 MB under H5Lexists; fuzz/RELIABILITY.md bug 15) */
        for (int k = 0; k < a->n_attrs; k++) {
            htri_t has = H5Aexists(f, a->attrs[k]);
            if (has < 0) {
                H5Fclose(f);
                return sp_fail(err, "%s: HDF5 cannot look up attribute %s: the file is damaged", a->path, a->attrs[k]);
            }
            if (has == 0) continue;
            hid_t at = H5Aopen(f, a->attrs[k], H5P_DEFAULT);
            hid_t t = at >= 0 ? H5Aget_type(at) : -1;
            int is_str = t >= 0 && H5Tget_class(t) == H5T_STRING;
            if (t >= 0) H5Tclose(t);
            if (at >= 0) H5Aclose(at);
            if (is_str) {
                char buf[4096];
                (void)h5_read_attr_str(f, a->path, a->attrs[k], buf, sizeof buf, NULL);
            } else {
                double v;
                (void)h5_read_attr_f64(f, a->path, a->attrs[k], &v, NULL);
            }
        }
        for (int k = 0; k < a->n_dsets; k++) {
            int has = dataset_exists(f, a->path, a->dsets[k].name, err);
            if (has < 0) {
                H5Fclose(f);
                return -1;
            }
            if (has == 0) continue;
            void *x = NULL;
            int64_t rows = 0;
            int width = 0;
            SpErr e = {{0}};
            (void)h5_read_column(f, a->path, a->dsets[k].name, a->dsets[k].type, &x, &rows, &width, &e);
            free(x);
        }
        H5Fclose(f);
    }
    /* not-a-crash errors (the open included) are the in-process reader's to report */
    if (!(*blob = malloc(1))) return sp_fail(err, "%s: out of memory", a->path);
    *(char *)*blob = 1, *len = 1;
    return 0;
}

int h5_checked_probe(const char *path, const char *const *attrs, int n_attrs, const H5Probe *dsets, int n_dsets,
                     SpErr *err) {
    ProbeArg a = {path, attrs, n_attrs, dsets, n_dsets};
    void *blob = NULL;
    size_t len = 0;
    int rc = h5_checked(path, probe_in_child, &a, &blob, &len, err);
    free(blob);
    return rc;
}
