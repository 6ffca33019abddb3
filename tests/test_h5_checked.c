/* test_h5_checked - the checked child of records/h5util.c is a sandbox whose death the parent reports.
 *
 * A crash inside the child (libhdf5 on a damaged file) must end the child and come back as the one-line
 * error "PATH: HDF5 crashed reading it (signal N) ...". What the parent installed to act on its own
 * crash must not run in the child: under libFuzzer those are its signal handlers and its sanitizer
 * death callback, which write the parent's current input as a crash artifact (the fuzz pass of
 * 2026-12-03 counted 8 such artifacts, libhdf5 crashes the child had contained, as findings of ours).
 * Here the parent installs the same kinds of hooks, each writing a byte to a marker pipe; the child
 * then crashes in several ways, and the marker must stay empty. */
#include "check.h"
#include "clock.h"
#include "h5util.h"
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#if defined(__SANITIZE_ADDRESS__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SANITIZED 1
#endif
#endif
#ifdef SANITIZED
#include <sanitizer/common_interface_defs.h>
#endif

static int marker_w = -1; /* write end of the marker pipe: a parent hook ran (in whichever process) */

static void parent_hook_signal(int sig) {
    (void)sig;
    if (write(marker_w, "S", 1) < 0) _exit(90);
    _exit(91);
}

#ifdef SANITIZED
static void parent_hook_death(void) {
    if (write(marker_w, "D", 1) < 0) _exit(92);
}
#endif

static void install_parent_hooks(void) {
    static const int kFatal[] = {SIGSEGV, SIGBUS, SIGABRT, SIGILL, SIGFPE};
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = parent_hook_signal;
    for (size_t i = 0; i < sizeof kFatal / sizeof *kFatal; i++) sigaction(kFatal[i], &sa, NULL);
#ifdef SANITIZED
    __sanitizer_set_death_callback(parent_hook_death);
#endif
}

static int child_segv(void *arg, void **blob, size_t *len, SpErr *err) {
    (void)arg, (void)blob, (void)len, (void)err;
    raise(SIGSEGV);
    return -1;
}

static int child_abort(void *arg, void **blob, size_t *len, SpErr *err) {
    (void)arg, (void)blob, (void)len, (void)err;
    abort();
}

#ifdef SANITIZED
/* a heap read one past the end: the sanitizer reports it and dies through its death callback */
static int child_heap_overflow(void *arg, void **blob, size_t *len, SpErr *err) {
    (void)arg, (void)blob, (void)len, (void)err;
    static volatile int past_end = 8; /* volatile: the compiler cannot see the read is out of bounds */
    char *p = calloc(8, 1);
    volatile char c = p[past_end];
    (void)c;
    free(p);
    return -1;
}
#endif

static int child_hang(void *arg, void **blob, size_t *len, SpErr *err) {
    (void)arg, (void)blob, (void)len, (void)err;
    for (;;) pause();
    return -1; /* not reached */
}

static int child_ok(void *arg, void **blob, size_t *len, SpErr *err) {
    (void)err;
    *len = strlen(arg);
    *blob = malloc(*len);
    memcpy(*blob, arg, *len);
    return 0;
}

static int child_error(void *arg, void **blob, size_t *len, SpErr *err) {
    (void)arg, (void)blob, (void)len;
    return sp_fail(err, "x.h5: dataset \"q\": wrong type");
}

static int marker_bytes(int marker_r) {
    char buf[64];
    ssize_t n = read(marker_r, buf, sizeof buf);
    return n > 0 ? (int)n : 0;
}

static void check_crash(const char *what, H5CheckedFn fn, const char *want, int marker_r) {
    void *blob = NULL;
    size_t len = 0;
    SpErr e = {{0}};
    int rc = h5_checked("x.h5", fn, NULL, &blob, &len, &e);
    check(rc == -1 && blob == NULL && len == 0, "%s: h5_checked fails", what);
    check(strstr(e.msg, want) != NULL, "%s: the error names the child's death (%s): \"%s\"", what, want, e.msg);
    check(strchr(e.msg, '\n') == NULL, "%s: the error is one line", what);
    check(marker_bytes(marker_r) == 0, "%s: no hook the parent installed ran in the child", what);
}

/* A child that allocates what a damaged header claims: 600 MB. In a sanitized build the checked child's
 * address space may not grow that much (under libFuzzer the allocation would be recorded as the
 * parent's out-of-memory finding), so it gets NULL; elsewhere it gets the memory. */
static int child_big_alloc(void *arg, void **blob, size_t *len, SpErr *err) {
    (void)arg, (void)err;
    void *big = malloc((size_t)600 << 20);
    *blob = malloc(1), *len = 1;
    if (!*blob) return -1;
    *(char *)*blob = big ? 'y' : 'n';
    free(big);
    return 0;
}

/* Damaged files whose root group's local heap claims 800 MB (fuzz pass of 2026-12-07): the checked pass
 * must fail on libhdf5's failed lookup instead of passing and leaving the lookup (and its allocation) to
 * the in-process reader. */
static void check_damaged_heaps(int n, char **paths) {
    static const H5Probe kCols[] = {{"token", H5C_I32}, {"q", H5C_F32}};
    static const char *const kAttrs[] = {"format"};
    for (int i = 0; i < n; i++) {
        SpErr e = {{0}};
        int rc = h5_checked_probe(paths[i], kAttrs, 1, kCols, 2, &e);
        const char *base = strrchr(paths[i], '/') ? strrchr(paths[i], '/') + 1 : paths[i];
        check(rc == -1 && strstr(e.msg, ": HDF5 cannot look up dataset token: the file is damaged") != NULL &&
                  strchr(e.msg, '\n') == NULL,
              "%s: the checked pass fails in one line naming the lookup: \"%s\"", base, e.msg);
    }
}

int main(int argc, char **argv) {
    int fds[2];
    if (pipe(fds) != 0) return 2;
    fcntl(fds[0], F_SETFL, O_NONBLOCK);
    marker_w = fds[1];
    install_parent_hooks();

    check_crash("SIGSEGV", child_segv, "x.h5: HDF5 crashed reading it (signal 11)", fds[0]);
    check_crash("abort", child_abort, "x.h5: HDF5 crashed reading it (signal 6)", fds[0]);
#ifdef SANITIZED
    check_crash("sanitizer report", child_heap_overflow, "x.h5: HDF5 crashed reading it", fds[0]);
#else
    printf("skip: sanitizer report (not a sanitizer build)\n");
#endif

    /* a child that never answers is killed at the deadline, and the error says so */
    setenv("SPRINTER_H5_READ_TIMEOUT", "1", 1);
    void *blob = NULL;
    size_t len = 0;
    SpErr e = {{0}};
    double t0 = sp_now_s();
    int rc = h5_checked("x.h5", child_hang, NULL, &blob, &len, &e);
    double took = sp_now_s() - t0;
    check(rc == -1 && strstr(e.msg, "x.h5: HDF5 did not finish reading it within 1 s") != NULL,
          "a child that hangs: the one-line timeout error: \"%s\"", e.msg);
    check(took >= 0.9 && took < 10, "a child that hangs: h5_checked returns at the deadline (%.2f s)", took);
    check(waitpid(-1, NULL, WNOHANG) < 0 && errno == ECHILD, "a child that hangs: it was killed and reaped");
    unsetenv("SPRINTER_H5_READ_TIMEOUT");

    memset(&e, 0, sizeof e);
    rc = h5_checked("x.h5", child_ok, "the answer", &blob, &len, &e);
    check(rc == 0 && len == 10 && blob && memcmp(blob, "the answer", 10) == 0, "a child that succeeds: its blob comes back");
    free(blob);
    memset(&e, 0, sizeof e);
    rc = h5_checked("x.h5", child_error, NULL, &blob, &len, &e);
    check(rc == -1 && strcmp(e.msg, "x.h5: dataset \"q\": wrong type") == 0, "a child that fails: its error comes back: \"%s\"", e.msg);

    memset(&e, 0, sizeof e);
    rc = h5_checked("x.h5", child_big_alloc, NULL, &blob, &len, &e);
#ifdef SANITIZED
    check(rc == 0 && len == 1 && *(char *)blob == 'n', "a sanitized child cannot grow by 600 MB (malloc gives NULL)");
#else
    check(rc == 0 && len == 1 && *(char *)blob == 'y', "an unsanitized child can allocate 600 MB");
#endif
    free(blob);
    check_damaged_heaps(argc - 1, argv + 1);
    check(argc > 1, "damaged local heap files given (%d)", argc - 1);

    /* the negative control: the same hooks do fire in this process (so an empty marker above means
     * something) */
    pid_t pid = fork();
    if (pid == 0) raise(SIGSEGV), _exit(3);
    int status = 0;
    waitpid(pid, &status, 0);
    check(marker_bytes(fds[0]) == 1, "control: a plain fork that crashes runs the parent's hook");
    return check_summary("h5_checked_sandbox");
}
