/* cmd_decode.c - `sprinter decode`: run one or more decoding methods on one prompt and report what
 * a user of speculative decoding asks about: speed, target calls, tokens per call, the per-token
 * acceptance rate (records/metrics.h), and (with --audit) the verifier's measured operating point. */
#include <cblas.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "args.h"
#include "commands.h"
#include "rules.h"
#include "decoding.h"
#include "kernels.h"
#include "metrics.h"
#include "setup.h"
#include "tokenizer.h"

static const char kDecodeHelp[] =
    "usage: sprinter decode --draft DIR --target DIR (--prompt TEXT | --prompt-ids IDS) [options]\n"
    "  --method LIST      comma-separated: ar,draft,sd,sprinter,bild,pmin,specdecpp,oracle-iid,\n"
    "                     oracle-markov,typical,fsd,optimal-lossy,judge (default sd)\n"
    "  --verifier FILE    verifier .safetensors (sprinter, specdecpp)\n"
    "  --max-new N        tokens to generate (default 20)\n"
    "  --gamma G          draft block length for sd, pmin, specdecpp, typical, fsd, optimal-lossy (default " SP_STR(SP_DEFAULT_GAMMA) ", at most " SP_STR(SP_GAMMA_MAX) ")\n"
    "  --tau T            verifier threshold (default " SP_STR(SP_DEFAULT_TAU) ")\n"
    "  --max-run R        sprinter: at most R verifier accepts in a row, 0 = uncapped (default 0)\n"
    "  --lambda L         label threshold q/p <= L for oracle-iid and --audit (default 1)\n"
    "  --eta-fp F --eta-tp T   oracle-iid rates (defaults 0, 1)\n"
    "  --alpha A          bild: fall back to the target when the draft's top prob < A (default 0.5)\n"
    "  --p-min P          pmin: stop drafting when the draft's top prob < P (default 0.5)\n"
    ARG_METHOD_PARAM_HELP
    "  --temperature T --top-k K --top-p P --seed S   sampling (defaults 1, 0, 1, 0)\n"
    "  --audit            also compute p(x) for every verifier decision (eta_FP, eta_TP)\n"
    "  --stop-at-eos      stop at the end-of-sequence token\n"
    "  --json             after each method's row, one JSON line with every DecodeStats field\n"
    "  --threads N        OpenBLAS threads (default: 1 when the larger model is under 32 MB, else all cores)\n"
    "Per method prints: tokens/s (audit excluded), target calls, tokens per target call (bonus\n"
    "included: Spec-Bench's mean accepted tokens), accept (the per-token acceptance rate alpha:\n"
    "accepted share of the draft tokens the target checked, Wilson 95% interval), accepted /\n"
    "drafted, and with --audit eta_FP / eta_TP.\n";

typedef struct Opts {
    const char *draft, *target, *verifier, *prompt, *prompt_ids, *methods, *judge;
    long threads;
    uint64_t seed;
    int print_text;
    int json;
} Opts;

static int parse(int argc, char **argv, Opts *o, DecodeConfig *c) {
    const char *cmd = "decode";
    static const struct option opts[] = {
        {"draft", required_argument, 0, 'd'},     {"target", required_argument, 0, 't'},
        {"verifier", required_argument, 0, 'v'},  {"prompt", required_argument, 0, 'p'},
        {"prompt-ids", required_argument, 0, 'i'}, {"method", required_argument, 0, 'm'},
        {"max-new", required_argument, 0, 'n'},   {"gamma", required_argument, 0, 'g'},
        {"tau", required_argument, 0, 'T'},       {"max-run", required_argument, 0, 'r'},
        {"lambda", required_argument, 0, 'l'},    {"eta-fp", required_argument, 0, 'F'},
        {"eta-tp", required_argument, 0, 'P'},    {"alpha", required_argument, 0, 'a'},
        {"p-min", required_argument, 0, 'M'},     ARG_SAMPLING_OPTIONS,
        ARG_METHOD_PARAM_OPTIONS,
        {"seed", required_argument, 0, 's'},      {"audit", no_argument, 0, 'A'},
        {"stop-at-eos", no_argument, 0, 'E'},     {"threads", required_argument, 0, 'j'},
        {"text", no_argument, 0, 'x'},            {"json", no_argument, 0, 'J'},
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0}};
    double pv;
    long l;
    optind = 1;
    for (int ch; (ch = getopt_long(argc, argv, "", opts, NULL)) != -1;) {
        switch (ch) {
        case 'd': o->draft = optarg; break;
        case 't': o->target = optarg; break;
        case 'v': o->verifier = optarg; break;
        case 'p': o->prompt = optarg; break;
        case 'i': o->prompt_ids = optarg; break;
        case 'm': o->methods = optarg; break;
        case 'n': if (arg_long(cmd, "max-new", optarg, 1, 1 << 20, &l)) return 2; c->max_new = (int)l; break;
        case 'g': if (arg_param(cmd, "gamma", optarg, RP_GAMMA, &pv)) return 2; c->gamma = (int)pv; break;
        case 'T': if (arg_param(cmd, "tau", optarg, RP_TAU, &c->tau)) return 2; break;
        case 'r': if (arg_param(cmd, "max-run", optarg, RP_MAX_RUN, &pv)) return 2; c->max_run = (int)pv; break;
        case 'l': if (arg_param(cmd, "lambda", optarg, RP_LAMBDA, &c->lambda)) return 2; break;
        case 'F': if (arg_param(cmd, "eta-fp", optarg, RP_ETA_FP, &c->eta_fp)) return 2; break;
        case 'P': if (arg_param(cmd, "eta-tp", optarg, RP_ETA_TP, &c->eta_tp)) return 2; break;
        case 'a': if (arg_param(cmd, "alpha", optarg, RP_ALPHA, &c->alpha)) return 2; break;
        case 'M': if (arg_param(cmd, "p-min", optarg, RP_P_MIN, &c->p_min)) return 2; break;
        case 's': if (arg_u64(cmd, "seed", optarg, &o->seed)) return 2; break;
        case 'A': c->audit = 1; break;
        case 'E': c->stop_at_eos = 1; break;
        case 'j': if (arg_long(cmd, "threads", optarg, 1, 1024, &o->threads)) return 2; break;
        case 'x': o->print_text = 1; break;
        case 'J': o->json = 1; break;
        case 'h': fputs(kDecodeHelp, stdout); return 1;
        default: {
            int r = arg_sampling(cmd, ch, optarg, &c->sampling);
            if (r == 0) r = arg_method_param(cmd, ch, optarg, c, &o->judge);
            if (r == 0) return arg_bad_option(cmd, argv);
            if (r < 0) return 2;
        }
        }
    }
    if ((!o->draft && !o->target) || (!o->prompt == !o->prompt_ids)) {
        fprintf(stderr, "sprinter decode: need --draft and/or --target, and exactly one of --prompt, --prompt-ids\n");
        return 2;
    }
    return 0;
}

/* One JSON object with every counter (times in seconds, FLOPs at 2 * params per position). */
static void report_json(const DecodeConfig *c, const DecodeOutput *o) {
    const DecodeStats *s = &o->stats;
    printf("{\"method\": \"%s\", \"tokens\": %lld, \"draft_forwards\": %lld, \"draft_tokens\": %lld, "
           "\"target_forwards\": %lld, \"target_tokens\": %lld, \"audit_forwards\": %lld, \"audit_tokens\": %lld, "
           "\"verifier_evals\": %lld, \"drafted\": %lld, \"accepted\": %lld, \"rejected\": %lld, \"t_total\": %.9g, "
           "\"t_draft\": %.9g, "
           "\"t_target\": %.9g, \"t_verifier\": %.9g, \"t_audit\": %.9g, \"flops_draft\": %.9g, "
           "\"flops_target\": %.9g, \"flops_verifier\": %.9g}\n",
           decode_method_name(c->method), (long long)s->tokens, (long long)s->draft_forwards, (long long)s->draft_tokens,
           (long long)s->target_forwards, (long long)s->target_tokens, (long long)s->audit_forwards,
           (long long)s->audit_tokens, (long long)s->verifier_evals, (long long)s->drafted, (long long)s->accepted,
           (long long)s->rejected, s->t_total, s->t_draft, s->t_target, s->t_verifier, s->t_audit, s->flops_draft, s->flops_target,
           s->flops_verifier);
}

static void report(const DecodeConfig *c, const DecodeOutput *o) {
    const DecodeStats *s = &o->stats;
    long tp = 0, fp = 0, pos = 0, neg = 0, verifier_accepts = 0;
    for (int i = 0; i < o->n_events; i++) {
        const TokenEvent *e = &o->events[i];
        verifier_accepts += e->kind == EV_VERIFIER_ACCEPT;
        if (e->decision < 0 || e->label < 0) continue;
        if (e->label == 1) pos++, tp += e->decision == 1;
        else neg++, fp += e->decision == 1;
    }
    /* the acceptance figures of records/metrics.h */
    Acceptance acc = acceptance_of(s->accepted, verifier_accepts, s->rejected);
    char alpha[48] = "-", per_call[32] = "-", per_drafted[32] = "-";
    if (acc.checked > 0) snprintf(alpha, sizeof alpha, "%.3f [%.3f,%.3f]", acc.alpha, acc.ci95.lo, acc.ci95.hi);
    if (s->target_forwards > 0) snprintf(per_call, sizeof per_call, "%.2f", (double)s->tokens / (double)s->target_forwards);
    if (s->drafted > 0) snprintf(per_drafted, sizeof per_drafted, "%.3f", (double)s->accepted / (double)s->drafted);
    printf("%-13s %6lld %9.1f %8lld %9s %19s %8s", decode_method_name(c->method), (long long)s->tokens,
           s->t_total > 0 ? (double)s->tokens / s->t_total : 0.0, (long long)s->target_forwards, per_call, alpha,
           per_drafted);
    if (pos + neg > 0) printf("   eta_TP %.3f (%ld/%ld)  eta_FP %.3f (%ld/%ld)", pos ? (double)tp / pos : NAN, tp, pos,
                              neg ? (double)fp / neg : NAN, fp, neg);
    printf("\n");
}

int cmd_decode(int argc, char **argv) {
    Opts o = {0};
    o.methods = "sd";
    DecodeConfig base;
    decode_config_default(&base);
    int prc = parse(argc, argv, &o, &base);
    if (prc) return prc == 1 ? 0 : prc;
    /* every method named and runnable with the given models before any work (no partial table) */
    DecodeMethod methods[64];
    int n_methods = 0;
    {
        char list[1024];
        snprintf(list, sizeof list, "%s", o.methods);
        for (char *save = NULL, *m = strtok_r(list, ",", &save); m; m = strtok_r(NULL, ",", &save)) {
            DecodeMethod dm_id;
            if (decode_method_parse(m, &dm_id) || dm_id == DM_COLLECT || n_methods == 64) {
                fprintf(stderr, "sprinter decode: --method: unknown method \"%s\"\n", m);
                return 2;
            }
            const char *missing = method_is(dm_id, MC_USES_DRAFT) && !o.draft     ? "--draft"
                                  : method_is(dm_id, MC_USES_TARGET) && !o.target ? "--target"
                                  : method_is(dm_id, MC_NEEDS_VERIFIER) && !o.verifier ? "--verifier"
                                  : method_is(dm_id, MC_NEEDS_JUDGE) && !o.judge && base.tau_judge <= 1 ? "--judge"
                                                                                      : NULL;
            if (missing) {
                fprintf(stderr, "sprinter decode: --method %s needs %s\n", m, missing);
                return 2;
            }
            methods[n_methods++] = dm_id;
        }
        if (n_methods == 0) {
            fprintf(stderr, "sprinter decode: --method: empty list (e.g. --method ar,sd,sprinter)\n");
            return 2;
        }
    }
    SpErr err = {{0}};
    int rc = 1;
    RunModels rm = {0};
    Decoder *dec = NULL;
    gsl_rng *rng = NULL;
    int32_t *ids = NULL;
    size_t n = 0;
    Verifier ver = {0}, judge = {0};
    int have_ver = 0, have_judge = 0;
    RunSetup rs = {o.draft, o.target, o.prompt || o.print_text, NULL}; /* the tokenizer: the target's, else the draft's */
    if (run_models_open(&rm, &rs, &err)) goto done;
    Model *dm = rm.draft, *tm = rm.target;
    Tokenizer *tok = rm.tokenizer;
    if (o.verifier) {
        if (verifier_load(o.verifier, &ver, &err)) goto done;
        have_ver = 1;
    }
    if (o.judge) {
        if (verifier_load(o.judge, &judge, &err)) goto done;
        have_judge = 1;
    }
    int64_t biggest = tm ? model_weight_bytes(tm) : model_weight_bytes(dm);
    if (dm && model_weight_bytes(dm) > biggest) biggest = model_weight_bytes(dm);
    int n_threads = o.threads ? (int)o.threads : suggest_threads(biggest, (int)sysconf(_SC_NPROCESSORS_ONLN));
    openblas_set_num_threads(n_threads);
    kernels_bind_threads(n_threads); /* one process: each thread on its own CPU (kernels.h) */
    if (o.prompt) {
        if (tokenizer_encode_text(tok, o.prompt, strlen(o.prompt), &ids, &n, &err)) goto done;
    } else if (arg_ids("decode", "prompt-ids", o.prompt_ids, 1 << 20, &ids, &n)) {
        rc = 2;
        goto done;
    }
    if (n == 0) {
        sp_fail(&err, "--prompt encodes to no tokens");
        goto done;
    }
    int max_ctx = decode_context_of(&base, (int)n);
    if (max_ctx > rm.max_pos) {
        sp_fail(&err, "prompt (%zu tokens) + --max-new %d + --gamma %d + 1 exceeds the context of %d positions", n,
                base.max_new, base.gamma, rm.max_pos);
        goto done;
    }
    if (!(dec = decoder_new(dm, tm, have_ver ? &ver : NULL, max_ctx, &err))) goto done;
    if (have_judge && decoder_set_judge(dec, &judge, &err)) {
        sp_err_prefix(&err, "%s", o.judge);
        goto done;
    }
    printf("%-13s %6s %9s %8s %9s %19s %8s\n", "method", "tokens", "tok/s", "t_calls", "tok/call", "accept [95% CI]",
           "acc/dft");
    for (int mi = 0; mi < n_methods; mi++) {
        DecodeConfig c = base;
        c.method = methods[mi];
        const char *m = decode_method_name(c.method);
        if (rng) gsl_rng_free(rng);
        rng = sampler_rng_new(o.seed);
        DecodeOutput out;
        if (decoder_run(dec, &c, ids, (int)n, rng, &out, &err)) {
            sp_err_prefix(&err, "%s", m);
            goto done;
        }
        report(&c, &out);
        if (o.json) report_json(&c, &out);
        if (o.print_text && tok) {
            char *text;
            size_t len;
            if (tokenizer_decode(tok, out.tokens, (size_t)out.n_tokens, 1, &text, &len, &err) == 0) {
                printf("  %.*s\n", (int)len, text);
                free(text);
            }
        }
        decode_output_free(&out);
    }
    rc = 0;
done:
    if (rc == 1) fprintf(stderr, "sprinter decode: %s\n", err.msg);
    if (rng) gsl_rng_free(rng);
    free(ids);
    decoder_free(dec);
    if (have_ver) verifier_free(&ver);
    if (have_judge) verifier_free(&judge);
    run_models_close(&rm);
    return rc;
}
