#include "args.h"

#include "decoding.h"

#include <errno.h>
#include <getopt.h>
#include <string.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

int arg_long(const char *cmd, const char *opt, const char *s, long lo, long hi, long *out) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end) {
        fprintf(stderr, "sprinter %s: --%s: \"%s\" is not an integer\n", cmd, opt, s);
        return -1;
    }
    if (v < lo || v > hi) {
        fprintf(stderr, "sprinter %s: --%s: %ld is outside [%ld, %ld]\n", cmd, opt, v, lo, hi);
        return -1;
    }
    *out = v;
    return 0;
}

int arg_u64(const char *cmd, const char *opt, const char *s, uint64_t *out) {
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || *end || *s == '-') {
        fprintf(stderr, "sprinter %s: --%s: \"%s\" is not a non-negative integer\n", cmd, opt, s);
        return -1;
    }
    *out = (uint64_t)v;
    return 0;
}

int arg_float(const char *cmd, const char *opt, const char *s, double lo, double hi, double *out) {
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !isfinite(v)) {
        fprintf(stderr, "sprinter %s: --%s: \"%s\" is not a number\n", cmd, opt, s);
        return -1;
    }
    if (v < lo || v > hi) {
        fprintf(stderr, "sprinter %s: --%s: %g is outside [%g, %g]\n", cmd, opt, v, lo, hi);
        return -1;
    }
    *out = v;
    return 0;
}

int arg_param(const char *cmd, const char *opt, const char *s, RunParam p, double *out) {
    char *end, range[48];
    errno = 0;
    double v = run_param_info(p)->integer ? (double)strtol(s, &end, 10) : strtod(s, &end);
    if (errno || end == s || *end || !isfinite(v)) {
        fprintf(stderr, "sprinter %s: --%s: \"%s\" is not %s\n", cmd, opt, s,
                run_param_info(p)->integer ? "an integer" : "a number");
        return -1;
    }
    if (!run_param_in_range(p, v)) {
        fprintf(stderr, "sprinter %s: --%s: %g is outside %s\n", cmd, opt, v, run_param_range(p, range));
        return -1;
    }
    *out = v;
    return 0;
}

int arg_ids(const char *cmd, const char *opt, const char *s, size_t max_n, int32_t **ids, size_t *n) {
    size_t cap = 16, k = 0;
    int32_t *v = malloc(cap * sizeof *v);
    if (!v) return -1;
    const char *p = s;
    while (*p) {
        char *end;
        errno = 0;
        long x = strtol(p, &end, 10);
        if (errno || end == p || x < 0 || x > INT32_MAX || (*end && *end != ',')) {
            fprintf(stderr, "sprinter %s: --%s: entry %zu is not a non-negative token id\n", cmd, opt, k);
            free(v);
            return -1;
        }
        if (k == max_n) {
            fprintf(stderr, "sprinter %s: --%s: more than %zu ids\n", cmd, opt, max_n);
            free(v);
            return -1;
        }
        if (k == cap) {
            int32_t *nv = realloc(v, (cap *= 2) * sizeof *v);
            if (!nv) {
                free(v);
                return -1;
            }
            v = nv;
        }
        v[k++] = (int32_t)x;
        p = *end ? end + 1 : end;
    }
    if (k == 0) {
        fprintf(stderr, "sprinter %s: --%s: no token ids given\n", cmd, opt);
        free(v);
        return -1;
    }
    *ids = v;
    *n = k;
    return 0;
}

int arg_sampling(const char *cmd, int ch, const char *optarg, SamplerParams *sp) {
    double f;
    long l;
    switch (ch) {
    case ARG_TEMPERATURE:
        if (arg_float(cmd, "temperature", optarg, 0, 1e6, &f)) return -1;
        sp->temperature = (float)f;
        return 1;
    case ARG_TOP_K:
        if (arg_long(cmd, "top-k", optarg, 0, 1 << 30, &l)) return -1;
        sp->top_k = (int)l;
        return 1;
    case ARG_TOP_P:
        if (arg_float(cmd, "top-p", optarg, 1e-9, 1, &f)) return -1;
        sp->top_p = (float)f;
        return 1;
    default: return 0;
    }
}

int arg_bad_option(const char *cmd, char **argv) {
    const char *arg = optind > 0 ? argv[optind - 1] : "?";
    if (optopt != 0 && arg[0] == '-' && arg[1] == '-' && !strchr(arg, '=')) /* a known option without its value */
        fprintf(stderr, "sprinter %s: %s: needs a value (see sprinter %s --help)\n", cmd, arg, cmd);
    else
        fprintf(stderr, "sprinter %s: %s: unknown option (see sprinter %s --help)\n", cmd, arg, cmd);
    return 2;
}

/* --fsd-divergence: kl, js, tv or the code 0, 1, 2 (params_table.h fsd_divergence). */
static int arg_fsd_divergence(const char *cmd, const char *s, int *out) {
    static const char *const names[] = {"kl", "js", "tv"};
    for (int i = 0; i < 3; i++)
        if (!strcmp(s, names[i])) {
            *out = i;
            return 0;
        }
    double pv;
    if (arg_param(cmd, "fsd-divergence", s, RP_FSD_DIVERGENCE, &pv)) return -1;
    *out = (int)pv;
    return 0;
}

int arg_method_param(const char *cmd, int ch, const char *optarg, struct DecodeConfig *c, const char **judge) {
    switch (ch) {
    case ARG_TYPICAL_EPS: return arg_param(cmd, "typical-eps", optarg, RP_TYPICAL_EPS, &c->typical_eps) ? -1 : 1;
    case ARG_TYPICAL_ALPHA: return arg_param(cmd, "typical-alpha", optarg, RP_TYPICAL_ALPHA, &c->typical_alpha) ? -1 : 1;
    case ARG_FSD_DIVERGENCE: return arg_fsd_divergence(cmd, optarg, &c->fsd_divergence) ? -1 : 1;
    case ARG_FSD_THRESHOLD: return arg_param(cmd, "fsd-threshold", optarg, RP_FSD_THRESHOLD, &c->fsd_threshold) ? -1 : 1;
    case ARG_LOSSY_KL: return arg_param(cmd, "lossy-kl", optarg, RP_LOSSY_KL, &c->lossy_kl) ? -1 : 1;
    case ARG_JUDGE: *judge = optarg; return 1;
    case ARG_TAU_JUDGE: return arg_param(cmd, "tau-judge", optarg, RP_TAU_JUDGE, &c->tau_judge) ? -1 : 1;
    case ARG_JUDGE_RHO: return arg_param(cmd, "judge-rho", optarg, RP_JUDGE_RHO, &c->judge_rho) ? -1 : 1;
    default: return 0;
    }
}
