/* fsutil.c - file-system helpers (see fsutil.h). */
#include "fsutil.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int sp_mkdir_p(const char *path, SpErr *err) {
    char buf[4096];
    size_t n = strlen(path);
    if (n == 0 || n >= sizeof buf) return sp_fail(err, "%s: bad directory path", path);
    memcpy(buf, path, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (buf[i] != '/' && buf[i] != '\0') continue;
        char c = buf[i];
        buf[i] = '\0';
        if (mkdir(buf, 0755) != 0 && errno != EEXIST) return sp_fail(err, "%s: cannot create directory: %s", buf, strerror(errno));
        buf[i] = c;
    }
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode)) return sp_fail(err, "%s: not a directory", path);
    return 0;
}

static const char *kind_of(mode_t m) {
    return S_ISDIR(m)    ? "a directory"
           : S_ISFIFO(m) ? "a FIFO"
           : S_ISCHR(m)  ? "a character device"
           : S_ISBLK(m)  ? "a block device"
           : S_ISSOCK(m) ? "a socket"
                         : "not a file";
}

int sp_open_input(const char *path, SpErr *err) {
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return sp_fail(err, "%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return sp_fail(err, "%s: cannot stat: %s", path, strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return sp_fail(err, "%s: not a regular file (%s)", path, kind_of(st.st_mode));
    }
    int flags = fcntl(fd, F_GETFL);
    if (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) < 0) {
        int e = errno;
        close(fd);
        return sp_fail(err, "%s: cannot set blocking reads: %s", path, strerror(e));
    }
    return fd;
}

FILE *sp_fopen_input(const char *path, SpErr *err) {
    int fd = sp_open_input(path, err);
    if (fd < 0) return NULL;
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        sp_fail(err, "%s: cannot open: %s", path, strerror(errno));
        close(fd);
    }
    return f;
}

int sp_output_check(const char *path, SpErr *err) {
    struct stat st;
    if (lstat(path, &st) != 0) {
        if (errno == ENOENT) return 0;
        return sp_fail(err, "%s: cannot check the output path: %s", path, strerror(errno));
    }
    if (S_ISREG(st.st_mode)) return 0;
    return sp_fail(err, "%s: output exists and is %s, not a regular file; give another path",
                   path, S_ISLNK(st.st_mode) ? "a symbolic link" : kind_of(st.st_mode));
}

int sp_output_create_tmp(const char *path, char *tmp, size_t cap, SpErr *err) {
    if (sp_output_check(path, err)) return -1;
    int n = snprintf(tmp, cap, "%s.tmp", path);
    if (n < 0 || (size_t)n >= cap) return sp_fail(err, "%s: path too long", path);
    struct stat st;
    if (lstat(tmp, &st) == 0) {
        if (!S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode))
            return sp_fail(err, "%s: exists and is %s; remove it or give another output path", tmp, kind_of(st.st_mode));
        if (unlink(tmp) != 0) return sp_fail(err, "%s: cannot remove the stale file: %s", tmp, strerror(errno));
    }
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0) return sp_fail(err, "%s: cannot create: %s", tmp, strerror(errno));
    return fd;
}

FILE *sp_output_fopen_tmp(const char *path, char *tmp, size_t cap, SpErr *err) {
    int fd = sp_output_create_tmp(path, tmp, cap, err);
    if (fd < 0) return NULL;
    FILE *f = fdopen(fd, "wb");
    if (!f) {
        sp_fail(err, "%s: cannot open: %s", tmp, strerror(errno));
        close(fd);
        unlink(tmp);
    }
    return f;
}

int sp_output_commit(const char *tmp, const char *path, SpErr *err) {
    if (sp_output_check(path, err)) {
        unlink(tmp);
        return -1;
    }
    if (rename(tmp, path) != 0) {
        int e = errno;
        unlink(tmp);
        return sp_fail(err, "%s: rename from %s failed: %s", path, tmp, strerror(e));
    }
    return 0;
}

int sp_remove_flat_dir(const char *path, SpErr *err) {
    DIR *d = opendir(path);
    if (!d) return errno == ENOENT ? 0 : sp_fail(err, "%s: cannot open directory: %s", path, strerror(errno));
    int rc = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        char f[4600];
        snprintf(f, sizeof f, "%s/%s", path, e->d_name);
        if (unlink(f) != 0 && rc == 0) rc = sp_fail(err, "%s: cannot remove: %s", f, strerror(errno));
    }
    closedir(d);
    if (rc == 0 && rmdir(path) != 0) rc = sp_fail(err, "%s: cannot remove: %s", path, strerror(errno));
    return rc;
}
