/* report_util.c - the helpers the report's writers share (report_util.h). */
#include "report_util.h"

#include <errno.h>
#include <gsl/gsl_cdf.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

const char *fmt_num(char *buf, size_t cap, double v, const char *fmt) {
    if (isnan(v)) snprintf(buf, cap, "-");
    else snprintf(buf, cap, fmt, v);
    return buf;
}

FILE *report_open(const Report *R, const char *name, SpErr *err) {
    char path[4400];
    snprintf(path, sizeof path, "%s/%s", R->dir, name);
    FILE *f = fopen(path, "w");
    if (!f) sp_fail(err, "%s: cannot create: %s", path, strerror(errno));
    return f;
}

int report_close(FILE *f, const Report *R, const char *name, SpErr *err) {
    /* the errno of the write that failed: an earlier one left it (stdio keeps no other record), a
     * failing flush or close sets it afresh */
    int e = errno, bad = ferror(f);
    if (fflush(f) != 0) e = errno, bad = 1;
    if (fclose(f) != 0) e = errno, bad = 1;
    if (bad) return sp_fail(err, "%s/%s: write failed: %s", R->dir, name, e ? strerror(e) : "I/O error");
    return 0;
}

int method_name_eq(const char *name, DecodeMethod m) { return !strcmp(name, decode_method_name(m)); }

int is_deployed(const Report *R, const RunAn *a) {
    return method_name_eq(a->ri->method, DM_SPRINTER) && fabs(a->ri->lambda - R->o->deployed_lambda) < 1e-9 &&
           fabs(a->ri->tau - R->o->deployed_tau) < 1e-9;
}

int same_cell(const RunInfo *x, const RunInfo *y) {
    return !strcmp(x->dataset_sha256, y->dataset_sha256) && x->temperature == y->temperature;
}

double prompt_llpt(const PromptInfo *p) {
    return p->scored && p->scored_tokens > 0 ? p->target_logprob / (double)p->scored_tokens : NAN;
}

const PromptInfo *run_prompt(const RunInfo *r, int prompt_index) {
    for (int j = 0; j < r->n_rows; j++)
        if (r->prompts[j].prompt_index == prompt_index) return &r->prompts[j];
    return NULL;
}

PairedMean paired_llpt(const RunInfo *x, const RunInfo *y) {
    double s = 0, ss = 0;
    int n = 0;
    for (int j = 0; j < x->n_rows; j++) {
        const PromptInfo *p = &x->prompts[j], *q = y ? run_prompt(y, p->prompt_index) : NULL;
        double d = prompt_llpt(p) - (y ? (q ? prompt_llpt(q) : NAN) : 0);
        if (isnan(d)) continue;
        s += d, ss += d * d, n++;
    }
    PairedMean m = {n ? s / n : NAN, NAN, NAN, n};
    if (n >= 2) {
        double var = (ss - n * m.mean * m.mean) / (n - 1);
        double h = gsl_cdf_tdist_Pinv(0.975, n - 1) * sqrt(fmax(var, 0) / n);
        m.lo = m.mean - h, m.hi = m.mean + h;
    }
    return m;
}

/* ms per token of run a in its timing of repetition rep (the table timings), NaN when it has none. */
double timed_ms(const RunAn *a, int rep) {
    for (int k = 0; k < a->ri->n_timings; k++) {
        const TimingInfo *ti = &a->ri->timings[k];
        if (ti->rep == rep && ti->tokens > 0) return 1000 * ti->t_total / (double)ti->tokens;
    }
    return NAN;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Speed ratios slow / fast over the repetitions both runs were timed in alone (paired: one
 * repetition times every run in one stretch of time): their count, and the median, min and max. */
int paired_ratios(const RunAn *slow, const RunAn *fast, double *median, double *lo, double *hi) {
    double r[TIMING_MAX_REPS];
    int n = 0;
    for (int rep = 0; rep < TIMING_MAX_REPS; rep++) {
        double a = timed_ms(slow, rep), b = timed_ms(fast, rep);
        if (!isnan(a) && !isnan(b) && b > 0) r[n++] = a / b;
    }
    if (n == 0) return 0;
    qsort(r, (size_t)n, sizeof *r, cmp_double);
    *median = n % 2 ? r[n / 2] : 0.5 * (r[n / 2 - 1] + r[n / 2]);
    *lo = r[0], *hi = r[n - 1];
    return n;
}

double paired_sign_p(const RunAn *slow, const RunAn *fast, int *above, int *n) {
    *above = *n = 0;
    for (int rep = 0; rep < TIMING_MAX_REPS; rep++) {
        double a = timed_ms(slow, rep), b = timed_ms(fast, rep);
        if (isnan(a) || isnan(b) || !(b > 0) || a == b) continue;
        *above += a > b, (*n)++;
    }
    if (*n == 0) return 1.0;
    int k = *above < *n - *above ? *above : *n - *above;
    double p = 2.0 * gsl_cdf_binomial_P((unsigned)k, 0.5, (unsigned)*n);
    return p < 1.0 ? p : 1.0;
}
