/* cmd_dtv.c - `sprinter dtv`: exact per-prefix d_TV(p, p_SPRINTER) against Theorem 3.1's
 * prediction, the oracle verifier, and a sampling estimate (experiments/dtv.h); with --method, the
 * same exact and sampled d_TV of a lossy peer method (typical, fsd, optimal-lossy, judge). */
#include <cblas.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "args.h"
#include "commands.h"
#include "rules.h"
#include "dtv.h"
#include "fsutil.h"

static const char kDtvHelp[] =
    "usage: sprinter dtv --draft DIR --target DIR --verifier FILE --data FILE --n-prefixes N --out FILE.h5\n"
    "                    [options]\n"
    "       sprinter dtv --method typical|fsd|optimal-lossy|judge --draft DIR --target DIR --data FILE\n"
    "                    --n-prefixes N --out FILE.h5 [--judge FILE] [method options] [options]\n"
    "At N prefixes (dataset prompts continued by 0..K tokens sampled from the target) computes the EXACT\n"
    "law of SPRINTER's next token from p, q and the verifier's decision on every vocabulary token, and\n"
    "records per prefix d_TV(p, q), d_TV(p, p_SPRINTER), d_TV(q, p_SPRINTER), eta_FP / eta_TP at the\n"
    "prefix, Theorem 3.1's prediction eta_FP d_TV(p, q) (local and with the global eta_FP), the\n"
    "oracle verifier's exact d_TV (at lambda and at lambda = 1), and with --samples M a sampling\n"
    "estimate from M runs of the real decoder (naive, bootstrap bias-corrected, noise floor, chi-square\n"
    "against the exact law). One HDF5 row per prefix; see experiments/dtv.h and results/README.md.\n"
    "With --method M (not sprinter) the same for M's exact first-token law p_M: d_TV(p, p_M), d_TV(q, p_M),\n"
    "the probability that the drafted token is kept, and the sampled checks (chi-square of M's decoder\n"
    "draws against p_M); the SPRINTER columns are NaN. The file's attributes method and params name the\n"
    "method and its parameters as a sweep run of it is labelled.\n"
    "  --method M         sprinter (default), typical, fsd, optimal-lossy, judge\n"
    "  --gamma G          block methods: the draft block of the decoder draws and the params label (default\n"
    "                     " SP_STR(SP_DEFAULT_GAMMA) "; the first token's law does not depend on it)\n"
    ARG_METHOD_PARAM_HELP
    "  --format F         dataset format: jsonl, specbench, lm1b, wikisum (default: inferred)\n"
    "  --offset I         first prompt index (default 0; keep clear of the verifier's training prompts)\n"
    "  --max-continue K   continue each prompt by Uniform{0..K} target tokens (default 8)\n"
    "  --tau T[,T...]     sprinter: verifier threshold (default " SP_STR(SP_DEFAULT_TAU) "). Several: one pass\n"
    "                     computes every prefix, p, q and the verifier's scores once and writes one file per\n"
    "                     tau, --out naming them with {tau} (replaced by each value as written; also with\n"
    "                     one value), each file the same as a run at that tau alone\n"
    "  --lambda L         sprinter: acceptable iff q/p <= L (default: the verifier's lambda)\n"
    "  --temperature T --top-k K --top-p P   sampling, applied to p and q (defaults 1, 0, 1)\n"
    "  --seed S           prefix i draws from prompt_seed(S, i) (default 0)\n"
    "  --samples M        decoder draws of the first token per prefix (default 0: exact part only). Each\n"
    "                     draw is a full decoder_run (the prefix prefilled on both models), so this is\n"
    "                     the expensive part; the unbiased estimate needs only a few hundred draws, the\n"
    "                     histogram (naive) one is useless unless M >> vocab size\n"
    "  --bootstrap B      resamples for the bias correction (default 200)\n"
    "  --oracle-eta-fp F --oracle-eta-tp T   sprinter: oracle rates (default: the verifier's measured rates)\n"
    "  --threads N        OpenBLAS threads (default 1)\n"
    "  --quiet            no per-prefix lines on stderr\n";

/* The --tau option: values and their text as written (for --out's {tau}). */
typedef struct TauList {
    int n;
    double v[DTV_MAX_TAUS];
    char text[DTV_MAX_TAUS][32];
} TauList;

static int parse_taus(const char *arg, TauList *t) {
    char buf[4096];
    if (snprintf(buf, sizeof buf, "%s", arg) >= (int)sizeof buf) {
        fprintf(stderr, "sprinter dtv: --tau: the list is too long\n");
        return 2;
    }
    t->n = 0;
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        while (*tok == ' ') tok++;
        if (t->n == DTV_MAX_TAUS) {
            fprintf(stderr, "sprinter dtv: --tau: more than %d values\n", DTV_MAX_TAUS);
            return 2;
        }
        if (arg_param("dtv", "tau", tok, RP_TAU, &t->v[t->n])) return 2;
        if (snprintf(t->text[t->n], sizeof t->text[t->n], "%s", tok) >= (int)sizeof t->text[t->n]) {
            fprintf(stderr, "sprinter dtv: --tau: \"%s\" is too long\n", tok);
            return 2;
        }
        t->n++;
    }
    if (t->n == 0) {
        fprintf(stderr, "sprinter dtv: --tau: no value in \"%s\"\n", arg);
        return 2;
    }
    return 0;
}

static int parse(int argc, char **argv, DtvSpec *s, const char **out, long *threads, TauList *taus) {
    const char *cmd = "dtv";
    static const struct option opts[] = {
        {"draft", required_argument, 0, 'd'},        {"target", required_argument, 0, 't'},
        {"verifier", required_argument, 0, 'v'},     {"data", required_argument, 0, 'D'},
        {"format", required_argument, 0, 'f'},       {"n-prefixes", required_argument, 0, 'n'},
        {"offset", required_argument, 0, 'O'},       {"max-continue", required_argument, 0, 'K'},
        {"tau", required_argument, 0, 'T'},          {"lambda", required_argument, 0, 'l'},
        ARG_SAMPLING_OPTIONS,                        {"seed", required_argument, 0, 's'},
        {"samples", required_argument, 0, 'M'},      {"bootstrap", required_argument, 0, 'B'},
        {"oracle-eta-fp", required_argument, 0, 'F'}, {"oracle-eta-tp", required_argument, 0, 'P'},
        {"threads", required_argument, 0, 'j'},      {"quiet", no_argument, 0, 'q'},
        {"out", required_argument, 0, 'o'},          {"help", no_argument, 0, 'h'},
        {"method", required_argument, 0, 'm'},       {"gamma", required_argument, 0, 'g'},
        ARG_METHOD_PARAM_OPTIONS,                    {0, 0, 0, 0}};
    double pv;
    long l;
    optind = 1;
    for (int c; (c = getopt_long(argc, argv, "", opts, NULL)) != -1;) {
        switch (c) {
        case 'd': s->draft_dir = optarg; break;
        case 't': s->target_dir = optarg; break;
        case 'v': s->verifier_path = optarg; break;
        case 'D': s->data_path = optarg; break;
        case 'f': s->data_format = optarg; break;
        case 'n': if (arg_long(cmd, "n-prefixes", optarg, 1, 1 << 24, &l)) return 2; s->n_prefixes = (int)l; break;
        case 'O': if (arg_long(cmd, "offset", optarg, 0, 1 << 30, &l)) return 2; s->offset = (int)l; break;
        case 'K': if (arg_long(cmd, "max-continue", optarg, 0, 1 << 20, &l)) return 2; s->max_continue = (int)l; break;
        case 'T': if (parse_taus(optarg, taus)) return 2; break;
        case 'l': if (arg_param(cmd, "lambda", optarg, RP_LAMBDA, &s->lambda)) return 2; break;
        case 's': if (arg_u64(cmd, "seed", optarg, &s->seed)) return 2; break;
        case 'M': if (arg_long(cmd, "samples", optarg, 0, 1L << 30, &l)) return 2; s->samples = (int)l; break;
        case 'B': if (arg_long(cmd, "bootstrap", optarg, 0, 1 << 20, &l)) return 2; s->bootstrap = (int)l; break;
        case 'F': if (arg_param(cmd, "oracle-eta-fp", optarg, RP_ETA_FP, &s->oracle_eta_fp)) return 2; break;
        case 'P': if (arg_param(cmd, "oracle-eta-tp", optarg, RP_ETA_TP, &s->oracle_eta_tp)) return 2; break;
        case 'j': if (arg_long(cmd, "threads", optarg, 1, 1024, threads)) return 2; break;
        case 'q': s->progress = 0; break;
        case 'o': *out = optarg; break;
        case 'h': fputs(kDtvHelp, stdout); return 1;
        case 'm':
            if (decode_method_parse(optarg, &s->method) ||
                !(s->method == DM_SPRINTER || s->method == DM_TYPICAL || s->method == DM_FSD ||
                  s->method == DM_OPTIMAL_LOSSY || s->method == DM_JUDGE)) {
                fprintf(stderr, "sprinter dtv: --method: \"%s\" is not one of sprinter, typical, fsd, optimal-lossy, judge\n",
                        optarg);
                return 2;
            }
            break;
        case 'g': if (arg_param(cmd, "gamma", optarg, RP_GAMMA, &pv)) return 2; s->params.gamma = (int)pv; break;
        default: {
            int r = arg_sampling(cmd, c, optarg, &s->sampling);
            if (r == 0) r = arg_method_param(cmd, c, optarg, &s->params, &s->judge_path);
            if (r == 0) return arg_bad_option(cmd, argv);
            if (r < 0) return 2;
        }
        }
    }
    if (optind != argc) {
        fprintf(stderr, "sprinter dtv: unexpected argument \"%s\" (see sprinter dtv --help)\n", argv[optind]);
        return 2;
    }
    int sprinter = s->method == DM_SPRINTER;
    if (!s->draft_dir || !s->target_dir || (sprinter && !s->verifier_path) || !s->data_path || !*out) {
        fprintf(stderr, "sprinter dtv: need --draft, --target, %s--data, --n-prefixes and --out\n",
                sprinter ? "--verifier, " : "");
        return 2;
    }
    if (s->method == DM_JUDGE && !s->judge_path && s->params.tau_judge <= 1) {
        fprintf(stderr, "sprinter dtv: --method judge needs --judge FILE (unless --tau-judge > 1)\n");
        return 2;
    }
    if (taus->n > 1 && !sprinter) {
        fprintf(stderr, "sprinter dtv: several --tau values are for --method sprinter only\n");
        return 2;
    }
    if (taus->n > 1 && !strstr(*out, "{tau}")) {
        fprintf(stderr, "sprinter dtv: --out must contain {tau} when --tau lists several values (one file each)\n");
        return 2;
    }
    if (!sprinter && s->verifier_path) {
        fprintf(stderr, "sprinter dtv: --verifier is for --method sprinter only\n");
        return 2;
    }
    return 0;
}

/* path: pattern with each {tau} replaced by tau (as written); -1 when it does not fit. */
static int out_for_tau(const char *pattern, const char *tau, char *path, size_t cap) {
    size_t n = 0;
    for (const char *p = pattern; *p;) {
        const char *piece = strncmp(p, "{tau}", 5) ? p : tau;
        size_t len = piece == p ? 1 : strlen(tau);
        if (n + len >= cap) return -1;
        memcpy(path + n, piece, len);
        n += len;
        p += piece == p ? 1 : 5;
    }
    path[n] = '\0';
    return 0;
}

static void print_method_summary(const DtvSpec *s, const DtvSummary *m, const char *out) {
    const char *name = decode_method_name(s->method);
    printf("dtv: %s, %d prefixes, vocab %d -> %s\n", name, m->n, m->V, out);
    printf("  mean d_TV(p, q)                          %.5f\n", m->mean_dtv_pq);
    printf("  mean P(drafted token kept)               %.5f\n", m->mean_accept_mass);
    printf("  mean d_TV(p, p_method), exact            %.5f\n", m->mean_dtv_p_ps);
    if (!isnan(m->mean_emp_naive)) {
        printf("  sampled (mean, mean |error| against the exact value):\n");
        printf("    naive d_TV(p, histogram)    %.5f  %.5f  (noise floor %.5f)\n", m->mean_emp_naive,
               m->mean_abs_err_naive, m->mean_noise_floor);
        printf("    bootstrap bias-corrected    %.5f  %.5f\n", m->mean_emp_bc, m->mean_abs_err_bc);
        printf("  first tokens vs the exact law: min chi-square p-value %.4f over %d prefixes\n", m->min_chisq_p, m->n);
    }
}

static void print_summary(const DtvSummary *m, const char *out) {
    printf("dtv: %d prefixes, vocab %d, lambda %g -> %s\n", m->n, m->V, m->lambda, out);
    printf("  mean d_TV(p, q)                          %.5f\n", m->mean_dtv_pq);
    printf("  mean P(verifier accepts the draft token) %.5f\n", m->mean_accept_mass);
    printf("  global eta_FP / eta_TP (audit weighting) %.4f / %.4f\n", m->eta_fp_global, m->eta_tp_global);
    printf("  mean d_TV(p, p_SPRINTER), exact          %.5f\n", m->mean_dtv_p_ps);
    printf("  Thm 3.1 with each prefix's eta_FP        %.5f\n", m->mean_pred_local);
    printf("  Thm 3.1 with the global eta_FP           %.5f\n", m->mean_pred_global);
    printf("  mean eta_excess (exact: d_TV = eta_excess d_TV(p,q))  %.4f\n", m->mean_eta_excess);
    printf("  oracle (eta_FP %.4f, eta_TP %.4f): exact d_TV %.5f at lambda %g, %.5f at lambda 1; "
           "Thm 3.1 %.5f (max |error| at lambda 1: %.2e)\n",
           m->oracle_eta_fp, m->oracle_eta_tp, m->mean_oracle_dtv, m->lambda, m->mean_oracle_dtv_l1,
           m->mean_oracle_pred, m->max_oracle_l1_err);
    if (!isnan(m->mean_emp_naive)) {
        printf("  sampled (mean, mean |error| against the exact value):\n");
        printf("    unbiased E_q[a (1 - p/q)+]  %.5f  %.5f  (max |z| %.2f)\n", m->mean_emp_unbiased,
               m->mean_abs_err_unbiased, m->max_abs_z_unbiased);
        printf("    naive d_TV(p, histogram)    %.5f  %.5f  (noise floor %.5f)\n", m->mean_emp_naive,
               m->mean_abs_err_naive, m->mean_noise_floor);
        printf("    bootstrap bias-corrected    %.5f  %.5f\n", m->mean_emp_bc, m->mean_abs_err_bc);
        printf("  first tokens vs the exact law: min chi-square p-value %.4f over %d prefixes\n", m->min_chisq_p, m->n);
    }
}

int cmd_dtv(int argc, char **argv) {
    DtvSpec s;
    dtv_spec_default(&s);
    s.progress = 1;
    s.n_prefixes = 0;
    const char *out = NULL;
    long threads = 1;
    TauList taus = {.n = 0};
    int prc = parse(argc, argv, &s, &out, &threads, &taus);
    if (prc) return prc == 1 ? 0 : prc;
    if (s.n_prefixes < 1) {
        fprintf(stderr, "sprinter dtv: need --n-prefixes N (N >= 1)\n");
        return 2;
    }
    openblas_set_num_threads((int)threads);
    if (taus.n == 0) taus.n = 1, taus.v[0] = s.tau, snprintf(taus.text[0], sizeof taus.text[0], "%g", s.tau);
    char paths[DTV_MAX_TAUS][4096];
    const char *outs[DTV_MAX_TAUS];
    for (int k = 0; k < taus.n; k++) {
        if (out_for_tau(out, taus.text[k], paths[k], sizeof paths[k])) {
            fprintf(stderr, "sprinter dtv: --out: the path is too long\n");
            return 2;
        }
        outs[k] = paths[k];
    }
    SpErr err = {{0}};
    DtvSummary m[DTV_MAX_TAUS];
    const char *inputs[] = {s.draft_dir, s.target_dir, s.verifier_path, s.judge_path, s.data_path};
    /* before any work: each output must be new or a regular file, and none of the inputs */
    for (int k = 0; k < taus.n; k++)
        if (sp_output_check_inputs(outs[k], inputs, sizeof inputs / sizeof *inputs, &err)) {
            fprintf(stderr, "sprinter dtv: %s\n", err.msg);
            return 1;
        }
    if (dtv_run_taus(&s, taus.v, outs, taus.n, m, &err)) {
        fprintf(stderr, "sprinter dtv: %s\n", err.msg);
        return 1;
    }
    for (int k = 0; k < taus.n; k++) {
        if (s.method == DM_SPRINTER) print_summary(&m[k], outs[k]);
        else print_method_summary(&s, &m[k], outs[k]);
    }
    return 0;
}
