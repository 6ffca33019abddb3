/* cmd_verifier.c - `sprinter collect` and `sprinter train-verifier`. */
#include <cblas.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "commands.h"
#include "fsutil.h"
#include "rules.h"
#include "verifier_train.h"

static const char kCollectHelp[] =
    "usage: sprinter collect --draft DIR --target DIR --data FILE --lambda L --out FILE.h5 [options]\n"
    "  For every token the draft proposes on the dataset's prompts, records the draft hidden state,\n"
    "  q(x), p(x) and the label q(x)/p(x) <= lambda; the context continues with the draft token when\n"
    "  the speculative-sampling rule accepts it, else with the target's replacement.\n"
    "  --format F        dataset format: jsonl, specbench, lm1b, wikisum (default: inferred)\n"
    "  --n-prompts N     use the first N prompts (default all)\n"
    "  --max-new M       tokens generated per prompt (default 20)\n"
    "  --temperature T --top-k K --top-p P   sampling (defaults 1, 0, 1)\n"
    "  --seed S          default 0\n"
    "  --label-rule R    sound (default): the label compares q and p as sampled above; paper-code: the\n"
    "                    plain softmax (temperature 1) of the raw logits, and the context continues\n"
    "                    with the draft token when its label is 1, else with the target's greedy token\n"
    "                    (the SPRINTER authors' dataset.py; with --temperature 0 for greedy drafts)\n"
    "  --judge           collect a JUDGE head's data instead (method judge; --lambda not needed): the\n"
    "                    TARGET's hidden state at each drafted token (the verification pass's row that\n"
    "                    has read it) and the judge label p(x) >= rho * max_v p(v); the context goes on\n"
    "                    by SD with gamma 1 (a bonus token after an accepted draft); label rule sound\n"
    "  --judge-rho R     the judge label's rho, in (0, 1] (default 0.5)\n"
    "  --batch B         decode B prompts at a time, their forward passes batched (default 1): the\n"
    "                    same file whatever B, faster on one core\n"
    "  --threads N       OpenBLAS / kernel threads (default 1)\n";

int cmd_collect(int argc, char **argv) {
    const char *cmd = "collect", *out = NULL;
    CollectSpec s = {0};
    s.max_new = 20;
    s.lambda = -1;
    s.sampling = (SamplerParams){1.0f, 0, 1.0f};
    static const struct option opts[] = {
        {"draft", required_argument, 0, 'd'},     {"target", required_argument, 0, 't'},
        {"data", required_argument, 0, 'D'},      {"format", required_argument, 0, 'f'},
        {"lambda", required_argument, 0, 'l'},    {"out", required_argument, 0, 'o'},
        {"n-prompts", required_argument, 0, 'n'}, {"max-new", required_argument, 0, 'm'},
        ARG_SAMPLING_OPTIONS,                     {"seed", required_argument, 0, 's'},
        {"label-rule", required_argument, 0, 'L'}, {"help", no_argument, 0, 'h'},
        {"judge", no_argument, 0, 'J'},           {"judge-rho", required_argument, 0, 'R'},
        {"batch", required_argument, 0, 'B'},     {"threads", required_argument, 0, 'T'},
        {0, 0, 0, 0}};
    s.judge_rho = run_param_info(RP_JUDGE_RHO)->dflt;
    long l, threads = 1;
    optind = 1;
    for (int c; (c = getopt_long(argc, argv, "", opts, NULL)) != -1;) {
        switch (c) {
        case 'd': s.draft_dir = optarg; break;
        case 't': s.target_dir = optarg; break;
        case 'D': s.data_path = optarg; break;
        case 'f': s.data_format = optarg; break;
        case 'l': if (arg_param(cmd, "lambda", optarg, RP_LAMBDA, &s.lambda)) return 2; break;
        case 'o': out = optarg; break;
        case 'n': if (arg_long(cmd, "n-prompts", optarg, 0, 1 << 30, &l)) return 2; s.n_prompts = (int)l; break;
        case 'm': if (arg_long(cmd, "max-new", optarg, 1, 1 << 20, &l)) return 2; s.max_new = (int)l; break;
        case 's': if (arg_u64(cmd, "seed", optarg, &s.seed)) return 2; break;
        case 'L':
            if (protocol_parse(optarg, &s.label_rule)) {
                fprintf(stderr, "sprinter collect: --label-rule: \"%s\" is not sound or paper-code\n", optarg);
                return 2;
            }
            break;
        case 'J': s.source = VS_TARGET; break;
        case 'R': if (arg_param(cmd, "judge-rho", optarg, RP_JUDGE_RHO, &s.judge_rho)) return 2; break;
        case 'B': if (arg_long(cmd, "batch", optarg, 1, COLLECT_MAX_BATCH, &l)) return 2; s.batch = (int)l; break;
        case 'T': if (arg_long(cmd, "threads", optarg, 1, 1024, &threads)) return 2; break;
        case 'h': fputs(kCollectHelp, stdout); return 0;
        default:
            switch (arg_sampling(cmd, c, optarg, &s.sampling)) {
            case 1: break;
            case 0: return arg_bad_option(cmd, argv);
            default: return 2;
            }
        }
    }
    if (s.source == VS_TARGET && s.lambda < 0) s.lambda = SP_DEFAULT_LAMBDA; /* unused by judge data */
    if (!s.draft_dir || !s.target_dir || !s.data_path || !out || s.lambda < 0) {
        fprintf(stderr, "sprinter collect: need --draft, --target, --data, --lambda and --out\n");
        return 2;
    }
    openblas_set_num_threads((int)threads);
    SpErr err = {{0}};
    CollectSummary sum;
    const char *inputs[] = {s.draft_dir, s.target_dir, s.data_path};
    if (sp_output_check_inputs(out, inputs, 3, &err) || collect_run(&s, out, &sum, &err)) {
        fprintf(stderr, "sprinter collect: %s\n", err.msg);
        return 1;
    }
    if (s.source == VS_TARGET)
        printf("collected %lld drafted tokens (target states) from %d prompts; %.1f%% acceptable to the judge label "
               "at rho %g -> %s\n", (long long)sum.n_tokens, sum.n_prompts,
               100.0 * (double)sum.n_acceptable / (double)sum.n_tokens, s.judge_rho, out);
    else
        printf("collected %lld draft tokens from %d prompts; %.1f%% acceptable at lambda %g -> %s\n", (long long)sum.n_tokens,
               sum.n_prompts, 100.0 * (double)sum.n_acceptable / (double)sum.n_tokens, s.lambda, out);
    return 0;
}

static const char kTrainHelp[] =
    "usage: sprinter train-verifier --data FILE.h5 --out VERIFIER.safetensors [options]\n"
    "  Fits score = sigmoid(w . h + b) by L2-regularised logistic regression (GSL BFGS2) on a\n"
    "  split by prompt, and reports validation accuracy, AUC, eta_FP and eta_TP at tau.\n"
    "  --l2 X            penalty on |w|^2 over standardised features (default 1e-3)\n"
    "  --val-fraction F  share of prompts held out (default 0.2)\n"
    "  --tau T           threshold for the reported operating point (default " SP_STR(SP_DEFAULT_TAU) ")\n"
    "  --seed S          split seed (default 0)\n"
    "  --feature F       token (default: the draft's state at the drafted token, /hidden) or prefix\n"
    "                    (the state before it, whose logits gave q: /hidden_prefix, as SPRINTER's code)\n"
    "  --recipe R        sound (default, above) or paper-code: the SPRINTER authors' train.py (Adam lr\n"
    "                    5e-4, 20 epochs, batches of 10, BCE on raw features, a token-level split, the\n"
    "                    epoch of best test accuracy kept; --l2 unused; use --val-fraction 0.3 as theirs)\n"
    "  --padded-batches  with --recipe paper-code --feature prefix: train on the features the authors'\n"
    "                    right-padded batches gave (a shorter row's state at its batch's last, padded,\n"
    "                    position; needs the draft named in the collect file)\n"
    "  A file of `sprinter collect --judge` trains a judge head (source target, for method judge) the\n"
    "  same way (--feature token only).\n";

int cmd_train_verifier(int argc, char **argv) {
    const char *cmd = "train-verifier", *data = NULL, *out = NULL;
    TrainSpec t;
    train_spec_default(&t);
    static const struct option opts[] = {
        {"data", required_argument, 0, 'D'}, {"out", required_argument, 0, 'o'}, {"l2", required_argument, 0, 'l'},
        {"val-fraction", required_argument, 0, 'v'}, {"tau", required_argument, 0, 't'},
        {"seed", required_argument, 0, 's'}, {"feature", required_argument, 0, 'f'},
        {"recipe", required_argument, 0, 'r'}, {"padded-batches", no_argument, 0, 'P'},
        {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    optind = 1;
    for (int c; (c = getopt_long(argc, argv, "", opts, NULL)) != -1;) {
        switch (c) {
        case 'f':
            if (verifier_feature_parse(optarg, &t.feature)) {
                fprintf(stderr, "sprinter train-verifier: --feature: \"%s\" is not token or prefix\n", optarg);
                return 2;
            }
            break;
        case 'r':
            if (protocol_parse(optarg, &t.recipe)) {
                fprintf(stderr, "sprinter train-verifier: --recipe: \"%s\" is not sound or paper-code\n", optarg);
                return 2;
            }
            break;
        case 'P': t.padded_batches = 1; break;
        case 'D': data = optarg; break;
        case 'o': out = optarg; break;
        case 'l': if (arg_float(cmd, "l2", optarg, 0, 1e6, &t.l2)) return 2; break;
        case 'v': if (arg_float(cmd, "val-fraction", optarg, 1e-6, 0.999999, &t.val_fraction)) return 2; break;
        case 't': if (arg_param(cmd, "tau", optarg, RP_TAU, &t.tau)) return 2; break;
        case 's': if (arg_u64(cmd, "seed", optarg, &t.seed)) return 2; break;
        case 'h': fputs(kTrainHelp, stdout); return 0;
        default: return arg_bad_option("train-verifier", argv);
        }
    }
    if (!data || !out) {
        fprintf(stderr, "sprinter train-verifier: need --data and --out\n");
        return 2;
    }
    SpErr err = {{0}};
    VerifierMetrics m;
    if (sp_output_check_inputs(out, &data, 1, &err) || verifier_train(data, &t, out, &m, &err)) {
        fprintf(stderr, "sprinter train-verifier: %s\n", err.msg);
        return 1;
    }
    printf("train %lld tokens (%.1f%% acceptable), validation %lld tokens (%.1f%% acceptable)\n", (long long)m.n_train,
           100 * m.pos_rate_train, (long long)m.n_val, 100 * m.pos_rate_val);
    printf("log loss train %.4f val %.4f; val accuracy %.4f, AUC %.4f\n", m.train_loss, m.val_loss, m.val_acc, m.val_auc);
    printf("at tau = %.2f: eta_TP = %.4f, eta_FP = %.4f\n", m.tau, m.eta_tp, m.eta_fp);
    printf("verifier parameters: d + 1 = %lld, feature %s -> %s\n", (long long)m.d + 1, verifier_feature_name(t.feature),
           out);
    return 0;
}
