/* commands.h - the subcommands of the sprinter binary. Each takes argc/argv starting at the
 * subcommand name, parses its own options (getopt_long), prints errors as one line on stderr and
 * returns the process exit code (0 ok, 1 runtime error, 2 usage error). */
#ifndef SP_COMMANDS_H
#define SP_COMMANDS_H

int cmd_generate(int argc, char **argv);
int cmd_tokenize(int argc, char **argv);
int cmd_logits(int argc, char **argv);
int cmd_init_random(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_export_gguf(int argc, char **argv);
int cmd_perplexity(int argc, char **argv);
int cmd_decode(int argc, char **argv);
int cmd_sweep(int argc, char **argv);
int cmd_merge(int argc, char **argv);
int cmd_summary(int argc, char **argv);
int cmd_collect(int argc, char **argv);
int cmd_train_verifier(int argc, char **argv);
/* score + dtv (experiments/score.h, experiments/dtv.h) */
int cmd_score(int argc, char **argv);
int cmd_dtv(int argc, char **argv);

/* analysis report (analysis/report.h) */
int cmd_analyze(int argc, char **argv);

#endif
