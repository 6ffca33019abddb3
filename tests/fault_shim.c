/* fault_shim.c - LD_PRELOAD library for the fault-injection tests (tests/fault_disk_full.py) where a
 * small tmpfs cannot be mounted (a container without CAP_SYS_ADMIN): it simulates a full disk.
 *
 *   SP_FAULT_DIR=/abs/dir SP_FAULT_BUDGET=BYTES LD_PRELOAD=libfault_shim.so sprinter ...
 *
 * Writes to files under SP_FAULT_DIR (write, pwrite, pwrite64, writev, fwrite, fputc, fputs,
 * fallocate, posix_fallocate) succeed until BYTES bytes have been written there in total; after
 * that they fail with ENOSPC (a write that straddles the limit is cut short, as on a real file
 * system). Other files are untouched. Buffered stdio data that fflush/fclose push out later goes
 * through glibc's internal write and is not counted: the budget is approximate, which is all the
 * tests need (they only need some write to fail). Built without sanitizers; an ASan-built sprinter
 * needs ASAN_OPTIONS=verify_asan_link_order=0 to accept the preload. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

static long long g_budget = -1; /* -1: not configured, pass everything through */
static long long g_used;
static char g_dir[4096];
static size_t g_dir_len;

__attribute__((constructor)) static void shim_init(void) {
    const char *d = getenv("SP_FAULT_DIR"), *b = getenv("SP_FAULT_BUDGET");
    if (!d || !b || !*d) return;
    snprintf(g_dir, sizeof g_dir, "%s", d);
    g_dir_len = strlen(g_dir);
    while (g_dir_len > 1 && g_dir[g_dir_len - 1] == '/') g_dir[--g_dir_len] = '\0';
    g_budget = atoll(b);
}

/* Is fd a file under g_dir? */
static int watched(int fd) {
    if (g_budget < 0 || fd < 0) return 0;
    char link[64], path[4096];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, path, sizeof path - 1);
    if (n <= 0) return 0;
    path[n] = '\0';
    return (size_t)n > g_dir_len && !strncmp(path, g_dir, g_dir_len) && path[g_dir_len] == '/';
}

/* How many of n bytes may be written to fd now (n when not watched); 0 sets errno = ENOSPC. */
static size_t allow(int fd, size_t n) {
    if (!watched(fd)) return n;
    long long left = g_budget - g_used;
    if (left <= 0) {
        errno = ENOSPC;
        return 0;
    }
    return (long long)n > left ? (size_t)left : n;
}

static void used(int fd, ssize_t k) {
    if (k > 0 && watched(fd)) g_used += k;
}

#define REAL(ret, name, ...)                                                                   \
    static ret (*real_##name)(__VA_ARGS__);                                                    \
    if (!real_##name) real_##name = (ret(*)(__VA_ARGS__))dlsym(RTLD_NEXT, #name)

ssize_t write(int fd, const void *buf, size_t n) {
    REAL(ssize_t, write, int, const void *, size_t);
    size_t k = allow(fd, n);
    if (n && !k) return -1;
    ssize_t r = real_write(fd, buf, k);
    used(fd, r);
    return r;
}

ssize_t pwrite(int fd, const void *buf, size_t n, off_t off) {
    REAL(ssize_t, pwrite, int, const void *, size_t, off_t);
    size_t k = allow(fd, n);
    if (n && !k) return -1;
    ssize_t r = real_pwrite(fd, buf, k, off);
    used(fd, r);
    return r;
}

ssize_t pwrite64(int fd, const void *buf, size_t n, off64_t off) {
    REAL(ssize_t, pwrite64, int, const void *, size_t, off64_t);
    size_t k = allow(fd, n);
    if (n && !k) return -1;
    ssize_t r = real_pwrite64(fd, buf, k, off);
    used(fd, r);
    return r;
}

ssize_t writev(int fd, const struct iovec *iov, int cnt) {
    REAL(ssize_t, writev, int, const struct iovec *, int);
    size_t n = 0;
    for (int i = 0; i < cnt; i++) n += iov[i].iov_len;
    if (n && allow(fd, n) < n) {
        errno = ENOSPC;
        return -1;
    }
    ssize_t r = real_writev(fd, iov, cnt);
    used(fd, r);
    return r;
}

int fallocate(int fd, int mode, off_t off, off_t len) {
    REAL(int, fallocate, int, int, off_t, off_t);
    if (len > 0 && allow(fd, (size_t)len) < (size_t)len) {
        errno = ENOSPC;
        return -1;
    }
    return real_fallocate(fd, mode, off, len);
}

int posix_fallocate(int fd, off_t off, off_t len) {
    REAL(int, posix_fallocate, int, off_t, off_t);
    if (len > 0 && allow(fd, (size_t)len) < (size_t)len) return ENOSPC;
    return real_posix_fallocate(fd, off, len);
}

size_t fwrite(const void *buf, size_t size, size_t nmemb, FILE *f) {
    REAL(size_t, fwrite, const void *, size_t, size_t, FILE *);
    size_t n = size * nmemb;
    if (n && size) {
        int fd = fileno(f);
        size_t k = allow(fd, n);
        if (k < n) {
            size_t items = k / size;
            size_t w = items ? real_fwrite(buf, size, items, f) : 0;
            used(fd, (ssize_t)(w * size));
            errno = ENOSPC;
            return w;
        }
        size_t w = real_fwrite(buf, size, nmemb, f);
        used(fd, (ssize_t)(w * size));
        return w;
    }
    return real_fwrite(buf, size, nmemb, f);
}

int fputc(int c, FILE *f) {
    REAL(int, fputc, int, FILE *);
    int fd = fileno(f);
    if (!allow(fd, 1)) return EOF;
    int r = real_fputc(c, f);
    if (r != EOF) used(fd, 1);
    return r;
}

int fputs(const char *s, FILE *f) {
    REAL(int, fputs, const char *, FILE *);
    int fd = fileno(f);
    size_t n = strlen(s);
    if (n && allow(fd, n) < n) {
        errno = ENOSPC;
        return EOF;
    }
    int r = real_fputs(s, f);
    if (r != EOF) used(fd, (ssize_t)n);
    return r;
}
