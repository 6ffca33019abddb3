/* check.h - the one checking helper of the C tests (after check_tensor in karpathy/llm.c test_gpt2.c).
 *
 *   check(ok, fmt, ...)                           one assertion: "ok  : TEXT" or "FAIL: TEXT"
 *   check_close(got, want, atol, rtol, fmt, ...)  a scalar: passes iff |got - want| < atol + rtol |want|
 *                                                 (strict, as the tests' scalar assertions are written;
 *                                                 NaN fails); prints got, want, |diff| and the tolerance
 *   check_tensor(got, want, n, tol, fmt, ...)     n floats: passes iff every |got[i] - want[i]| <= tol
 *                                                 (as in llm.c; NaN fails); prints the max |diff| and,
 *                                                 on failure, how many are off and the first few
 *   check_summary(name)                           prints the final line "NAME: N passed, M failed" and
 *                                                 returns the exit status (1 if anything failed, else 0)
 *
 * Each counts one check and returns 1 if it passed, 0 if not. fmt/... is a printf description of what
 * is checked. Everything goes to stdout, flushed line by line (tests start subprocesses).
 *
 * State: `check_tally` below, one per test program (each test is one .c file that includes this header
 * once): the counts for the summary, and `quiet`, which a test with thousands of checks sets to 1 at
 * the start of main() so that only failures print. Header-only; C11 plus the printf format attribute. */
#ifndef SP_TESTS_CHECK_H
#define SP_TESTS_CHECK_H

#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

static struct CheckTally {
    int passed, failed;
    int quiet; /* 1: print failing checks only */
} check_tally;

/* Counts one check; prints "ok  : " or "FAIL: ", the description, then `detail` (may be ""). */
static inline int check_record_(int ok, const char *detail, const char *fmt, va_list ap) {
    if (ok) check_tally.passed++;
    else check_tally.failed++;
    if (ok && check_tally.quiet) return 1;
    fputs(ok ? "ok  : " : "FAIL: ", stdout);
    vprintf(fmt, ap);
    fputs(detail, stdout);
    fputc('\n', stdout);
    fflush(stdout);
    return ok;
}

static inline int check(int ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static inline int check(int ok, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    ok = check_record_(ok != 0, "", fmt, ap);
    va_end(ap);
    return ok;
}

static inline int check_close(double got, double want, double atol, double rtol, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static inline int check_close(double got, double want, double atol, double rtol, const char *fmt, ...) {
    double diff = fabs(got - want), tol = atol + rtol * fabs(want);
    int ok = diff < tol;
    char detail[160];
    snprintf(detail, sizeof detail, ": got %.10g, want %.10g, |diff| %.2e %s %.2e", got, want, diff, ok ? "<" : "not <",
             tol);
    va_list ap;
    va_start(ap, fmt);
    ok = check_record_(ok, detail, fmt, ap);
    va_end(ap);
    return ok;
}

enum { CHECK_TENSOR_SHOW = 5 }; /* mismatches listed on failure */

static inline int check_tensor(const float *got, const float *want, size_t n, float tol, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static inline int check_tensor(const float *got, const float *want, size_t n, float tol, const char *fmt, ...) {
    float max = 0;
    size_t bad = 0, first[CHECK_TENSOR_SHOW];
    for (size_t i = 0; i < n; i++) {
        float d = fabsf(got[i] - want[i]);
        if (!(d <= tol)) { /* NaN counts as a mismatch */
            if (bad < CHECK_TENSOR_SHOW) first[bad] = i;
            bad++;
        }
        if (!(d <= max) && !isnan(max)) max = d; /* a NaN, once seen, stays the max */
    }
    char detail[160];
    if (bad)
        snprintf(detail, sizeof detail, ": %zu of %zu values off by more than %.2e (max |diff| %.2e)", bad, n,
                 (double)tol, (double)max);
    else
        snprintf(detail, sizeof detail, ": max |diff| %.2e <= %.2e over %zu values", (double)max, (double)tol, n);
    va_list ap;
    va_start(ap, fmt);
    int ok = check_record_(bad == 0, detail, fmt, ap);
    va_end(ap);
    for (size_t k = 0; k < bad && k < CHECK_TENSOR_SHOW; k++)
        printf("      [%zu] got %.9g, want %.9g\n", first[k], (double)got[first[k]], (double)want[first[k]]);
    if (bad) fflush(stdout);
    return ok;
}

static inline int check_summary(const char *name) {
    printf("%s: %d passed, %d failed\n", name, check_tally.passed, check_tally.failed);
    fflush(stdout);
    return check_tally.failed ? 1 : 0;
}

#endif
