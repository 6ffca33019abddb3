/* cmd_score.c - `sprinter score`: the target model's log-likelihood and the text of every output
 * of a sweep, into the outputs table of the results database (experiments/score.h). */
#include <cblas.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "args.h"
#include "commands.h"
#include "score.h"

static const char kScoreHelp[] =
    "usage: sprinter score RESULTS_DIR [--jobs K] [--target DIR] [--quiet]\n"
    "For every finished run and prompt of RESULTS_DIR/runs.sqlite not scored yet: reads the output\n"
    "tokens back from the run's token log, re-tokenizes the prompt from the dataset, and stores in the\n"
    "table outputs the text (decoded with the target's tokenizer), the number of tokens, and the\n"
    "target's log-likelihood of the output given the prompt (sum, per-token mean, perplexity =\n"
    "exp(-mean); softmax of the raw logits, temperature 1). One transaction per run: rerunning adds\n"
    "only what is missing. Prints the mean log-probability per token by method. See results/README.md.\n"
    "  --jobs K           K worker processes (default 1); results do not depend on K\n"
    "  --target DIR       target model (default: the runs' target_dir; its hash must match theirs)\n"
    "  --threads N        OpenBLAS threads per process (default 1)\n"
    "  --quiet            no per-run lines on stderr, no table\n";

int cmd_score(int argc, char **argv) {
    const char *cmd = "score";
    static const struct option opts[] = {{"jobs", required_argument, 0, 'j'},   {"target", required_argument, 0, 't'},
                                         {"threads", required_argument, 0, 'T'}, {"quiet", no_argument, 0, 'q'},
                                         {"help", no_argument, 0, 'h'},          {0, 0, 0, 0}};
    long jobs = 1, threads = 1;
    int quiet = 0;
    ScoreOpts o = {0};
    optind = 1;
    for (int ch; (ch = getopt_long(argc, argv, "", opts, NULL)) != -1;) {
        switch (ch) {
        case 'j': if (arg_long(cmd, "jobs", optarg, 1, 256, &jobs)) return 2; break;
        case 't': o.target_dir = optarg; break;
        case 'T': if (arg_long(cmd, "threads", optarg, 1, 1024, &threads)) return 2; break;
        case 'q': quiet = 1; break;
        case 'h': fputs(kScoreHelp, stdout); return 0;
        default: return arg_bad_option("score", argv);
        }
    }
    if (optind != argc - 1) {
        fprintf(stderr, "sprinter score: need exactly one RESULTS_DIR (see sprinter score --help)\n");
        return 2;
    }
    openblas_set_num_threads((int)threads);
    o.results_dir = argv[optind];
    o.jobs = (int)jobs;
    o.progress = !quiet;
    SpErr err = {{0}};
    ScoreCounts c;
    if (score_results(&o, &c, &err)) {
        fprintf(stderr, "sprinter score: %s\n", err.msg);
        return 1;
    }
    printf("score: %d done runs, %d with prompts to score: %lld rows added, %lld were already scored\n", c.runs_done,
           c.runs_scored, (long long)c.rows_added, (long long)c.rows_present);
    if (!quiet && score_summary(o.results_dir, stdout, &err)) {
        fprintf(stderr, "sprinter score: %s\n", err.msg);
        return 1;
    }
    return 0;
}
