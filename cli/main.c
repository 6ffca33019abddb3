/* sprinter - a harness for checking speculative-decoding claims. git-style subcommands. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "fsutil.h"
#include "mapguard.h"

typedef struct Command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} Command;

static const Command kCommands[] = {
    {"generate", cmd_generate, "sample a continuation of a prompt from one model"},
    {"decode", cmd_decode, "run decoding methods (ar, sd, sprinter, ...) on a prompt and report speed"},
    {"collect", cmd_collect, "record draft hidden states, q, p and labels for verifier training (HDF5)"},
    {"train-verifier", cmd_train_verifier, "fit the linear+sigmoid verifier on collected data"},
    {"tokenize", cmd_tokenize, "print the token ids of a text (or decode ids)"},
    {"logits", cmd_logits, "print or write the logits (and hidden states) for token ids"},
    {"init-random", cmd_init_random, "write a Hugging Face model directory with random weights"},
    {"info", cmd_info, "print a model's (or a preset's) configuration, parameter count and weight bytes"},
    {"export-gguf", cmd_export_gguf, "write a GPT-2 / Llama checkpoint as GGUF v3 for llama.cpp"},
    {"sweep", cmd_sweep, "run an experiment grid (experiments/*.ini) into results/ (SQLite + HDF5), resumable"},
    {"merge", cmd_merge, "merge the results directories of sweep shards"},
    {"summary", cmd_summary, "print the per-method table of a results directory"},
    {"score", cmd_score, "target log-likelihood and text of every sweep output (results/X/runs.sqlite: outputs)"},
    {"dtv", cmd_dtv, "exact per-prefix d_TV(p, p_SPRINTER) vs Theorem 3.1, oracle, sampling estimate (HDF5)"},
    {"analyze", cmd_analyze, "report of a results directory: theorem checks, i.i.d. tests, quality, paper tables, plots"},
    {"perplexity", cmd_perplexity, "perplexity of a model on a text file (one document per line)"},
};
#define N_COMMANDS (int)(sizeof kCommands / sizeof kCommands[0])

static void usage(FILE *f) {
    fprintf(f, "usage: sprinter <command> [options]   (sprinter <command> --help for its options)\n\ncommands:\n");
    for (int i = 0; i < N_COMMANDS; i++) fprintf(f, "  %-12s %s\n", kCommands[i].name, kCommands[i].summary);
}

/* Everything a command printed must have reached its destination: a full disk or a closed pipe on
 * standard output is an error (exit 1, one line), never a silent exit 0 with the output lost. */
static int finish_stdout(const char *name, int rc) {
    errno = 0;
    if (fflush(stdout) == 0 && !ferror(stdout)) return rc;
    fprintf(stderr, "sprinter%s%s: standard output: write failed: %s\n", name ? " " : "", name ? name : "",
            strerror(errno ? errno : EIO));
    return rc ? rc : 1;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        if (argc > 2 && !strcmp(argv[2], "--commands")) /* one name per line, for scripts and tests */
            for (int i = 0; i < N_COMMANDS; i++) printf("%s\n", kCommands[i].name);
        else
            usage(stdout);
        return finish_stdout(NULL, 0);
    }
    opterr = 0; /* the commands report bad options themselves, in one line (arg_bad_option) */
    for (int i = 0; i < N_COMMANDS; i++)
        if (!strcmp(argv[1], kCommands[i].name)) {
            char program[64];
            snprintf(program, sizeof program, "sprinter %s", kCommands[i].name);
            mapguard_set_program(program); /* names a model file truncated under a running command */
            sp_inputs_track();             /* no output over one of the command's inputs */
            sp_output_cleanup_on_signal(); /* an interrupted command leaves no PATH.tmp */
            return finish_stdout(kCommands[i].name, kCommands[i].run(argc - 1, argv + 1));
        }
    fprintf(stderr, "sprinter: unknown command \"%s\" (try sprinter --help)\n", argv[1]);
    return 2;
}
