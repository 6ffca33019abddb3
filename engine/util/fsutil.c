/* fsutil.c - file-system helpers (see fsutil.h). */
#include "fsutil.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int sp_mkdir_p(const char *path, SpErr *err) {
    char buf[4096];
    size_t n = strlen(path);
    if (n == 0) return sp_fail(err, "directory path is empty; give a directory");
    if (n >= sizeof buf) return sp_fail(err, "%s: directory path too long", path);
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

/* ---- the process's inputs (see fsutil.h): device, inode and the path as first opened ---- */
typedef struct Input {
    dev_t dev;
    ino_t ino;
    char *path;
} Input;
static pthread_mutex_t g_inputs_mu = PTHREAD_MUTEX_INITIALIZER;
static Input *g_inputs;
static size_t g_n_inputs, g_cap_inputs;

static volatile int g_track_inputs;

void sp_inputs_track(void) { g_track_inputs = 1; }

static void input_add(const struct stat *st, const char *path) {
    if (!g_track_inputs) return;
    pthread_mutex_lock(&g_inputs_mu);
    int known = 0;
    for (size_t i = 0; i < g_n_inputs && !known; i++) known = g_inputs[i].dev == st->st_dev && g_inputs[i].ino == st->st_ino;
    if (!known && g_n_inputs == g_cap_inputs) {
        size_t cap = g_cap_inputs ? 2 * g_cap_inputs : 16;
        Input *n = realloc(g_inputs, cap * sizeof *n);
        if (n) g_inputs = n, g_cap_inputs = cap;
    }
    /* out of memory: the input goes unnoted (the process fails on its next allocation anyway) */
    char *p = known || g_n_inputs == g_cap_inputs ? NULL : strdup(path);
    if (p) g_inputs[g_n_inputs++] = (Input){st->st_dev, st->st_ino, p};
    pthread_mutex_unlock(&g_inputs_mu);
}

void sp_input_forget(const char *path) {
    struct stat st;
    if (stat(path, &st) != 0) return;
    pthread_mutex_lock(&g_inputs_mu);
    for (size_t i = 0; i < g_n_inputs; i++)
        if (g_inputs[i].dev == st.st_dev && g_inputs[i].ino == st.st_ino) {
            free(g_inputs[i].path);
            g_inputs[i] = g_inputs[--g_n_inputs];
            break;
        }
    pthread_mutex_unlock(&g_inputs_mu);
}

void sp_input_note(const char *path) {
    struct stat st;
    if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) input_add(&st, path);
}

/* The path under which the file st was first read, copied into buf; 0 when it is no input. */
static int input_of(const struct stat *st, char *buf, size_t cap) {
    int found = 0;
    pthread_mutex_lock(&g_inputs_mu);
    for (size_t i = 0; i < g_n_inputs && !found; i++)
        if (g_inputs[i].dev == st->st_dev && g_inputs[i].ino == st->st_ino) {
            snprintf(buf, cap, "%s", g_inputs[i].path);
            found = 1;
        }
    pthread_mutex_unlock(&g_inputs_mu);
    return found;
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
    input_add(&st, path);
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

/* ---- pending PATH.tmp files, for the signal handler: a slot's name is written before it is marked
 * used, and unmarked after its rename or unlink, so the handler only ever unlinks whole names ---- */
#define N_PENDING 16
static char g_pending[N_PENDING][4352];
static volatile sig_atomic_t g_pending_used[N_PENDING];

static void pending_add(const char *tmp) {
    for (int i = 0; i < N_PENDING; i++)
        if (!g_pending_used[i] && strlen(tmp) < sizeof g_pending[i]) {
            memcpy(g_pending[i], tmp, strlen(tmp) + 1);
            g_pending_used[i] = 1;
            return;
        }
}

static void pending_remove(const char *tmp) {
    for (int i = 0; i < N_PENDING; i++)
        if (g_pending_used[i] && !strcmp(g_pending[i], tmp)) {
            g_pending_used[i] = 0;
            return;
        }
}

static void on_fatal_signal(int sig) { /* async-signal-safe: unlink, then the default action (SA_RESETHAND) */
    for (int i = 0; i < N_PENDING; i++)
        if (g_pending_used[i]) unlink(g_pending[i]);
    raise(sig);
}

void sp_output_cleanup_on_signal(void) {
    static const int kSignals[] = {SIGINT, SIGTERM, SIGHUP};
    for (size_t i = 0; i < sizeof kSignals / sizeof *kSignals; i++) {
        struct sigaction old, sa = {0};
        if (sigaction(kSignals[i], NULL, &old) != 0 || old.sa_handler != SIG_DFL) continue; /* ignored: keep */
        sa.sa_handler = on_fatal_signal;
        sa.sa_flags = SA_RESETHAND;
        sigemptyset(&sa.sa_mask);
        sigaction(kSignals[i], &sa, NULL);
    }
}

void sp_output_discard(const char *tmp) {
    unlink(tmp);
    pending_remove(tmp);
}

int sp_output_check(const char *path, SpErr *err) {
    if (!path[0]) return sp_fail(err, "output path is empty; give a file path");
    struct stat st;
    if (lstat(path, &st) != 0) {
        if (errno == ENOENT) return 0;
        return sp_fail(err, "%s: cannot check the output path: %s", path, strerror(errno));
    }
    if (S_ISREG(st.st_mode)) {
        char in[1024];
        if (input_of(&st, in, sizeof in)) return sp_fail(err, "%s: is the command's input (%s); give another path", path, in);
        return 0;
    }
    return sp_fail(err, "%s: output exists and is %s, not a regular file; give another path",
                   path, S_ISLNK(st.st_mode) ? "a symbolic link" : kind_of(st.st_mode));
}

int sp_output_check_inputs(const char *path, const char *const *inputs, size_t n, SpErr *err) {
    for (size_t i = 0; i < n; i++) {
        struct stat st;
        if (!inputs[i] || stat(inputs[i], &st) != 0) continue;
        if (S_ISREG(st.st_mode)) input_add(&st, inputs[i]);
        if (!S_ISDIR(st.st_mode)) continue;
        DIR *d = opendir(inputs[i]);
        for (struct dirent *e; d && (e = readdir(d));) {
            char f[4600];
            snprintf(f, sizeof f, "%s/%s", inputs[i], e->d_name);
            if (stat(f, &st) == 0 && S_ISREG(st.st_mode)) input_add(&st, f);
        }
        if (d) closedir(d);
    }
    return sp_output_check(path, err);
}

int sp_output_create_tmp(const char *path, char *tmp, size_t cap, SpErr *err) {
    if (sp_output_check(path, err)) return -1;
    int n = snprintf(tmp, cap, "%s.tmp", path);
    if (n < 0 || (size_t)n >= cap) return sp_fail(err, "%s: path too long", path);
    struct stat st;
    if (lstat(tmp, &st) == 0) {
        char in[1024];
        if (S_ISREG(st.st_mode) && input_of(&st, in, sizeof in))
            return sp_fail(err, "%s: is the command's input (%s), and %s would be written there first; give another path",
                           tmp, in, path);
        if (!S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode))
            return sp_fail(err, "%s: exists and is %s; remove it or give another output path", tmp, kind_of(st.st_mode));
        if (unlink(tmp) != 0) return sp_fail(err, "%s: cannot remove the stale file: %s", tmp, strerror(errno));
    }
    /* Pending before it exists: a signal between the open and the noting would leave PATH.tmp behind
     * (seen in CI: SIGTERM sent the moment the file appeared). Unlinking a name not created yet is
     * harmless. */
    pending_add(tmp);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0) {
        int e = errno;
        pending_remove(tmp);
        return sp_fail(err, "%s: cannot create: %s", tmp, strerror(e));
    }
    return fd;
}

FILE *sp_output_fopen_tmp(const char *path, char *tmp, size_t cap, SpErr *err) {
    int fd = sp_output_create_tmp(path, tmp, cap, err);
    if (fd < 0) return NULL;
    FILE *f = fdopen(fd, "wb");
    if (!f) {
        sp_fail(err, "%s: cannot open: %s", tmp, strerror(errno));
        close(fd);
        sp_output_discard(tmp);
    }
    return f;
}

int sp_output_commit(const char *tmp, const char *path, SpErr *err) {
    if (sp_output_check(path, err)) {
        sp_output_discard(tmp);
        return -1;
    }
    if (rename(tmp, path) != 0) {
        int e = errno;
        sp_output_discard(tmp);
        return sp_fail(err, "%s: rename from %s failed: %s", path, tmp, strerror(e));
    }
    pending_remove(tmp);
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

int sp_is_gguf_file(const char *path) {
    size_t n = strlen(path);
    struct stat st;
    return n > 5 && !strcmp(path + n - 5, ".gguf") && stat(path, &st) == 0 && S_ISREG(st.st_mode);
}
