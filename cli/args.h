/* args.h - checked conversion of command-line option values. Each returns 0, or prints
 * "sprinter CMD: --OPT: ..." on stderr and returns -1. */
#ifndef SP_ARGS_H
#define SP_ARGS_H

#include <stddef.h>
#include <stdint.h>

#include "params_table.h"

int arg_long(const char *cmd, const char *opt, const char *s, long lo, long hi, long *out);
int arg_u64(const char *cmd, const char *opt, const char *s, uint64_t *out);
int arg_float(const char *cmd, const char *opt, const char *s, double lo, double hi, double *out);
/* A value of grid parameter p (engine/decode/params_table.h) in p's range, a whole number when p takes
 * them: "sprinter decode: --tau: 1.5 is outside [0, 1]", "... --gamma: \"2.5\" is not an integer". */
int arg_param(const char *cmd, const char *opt, const char *s, RunParam p, double *out);
/* "1,2,3" -> malloc'd int32 array (at most max_n ids, each >= 0). */
int arg_ids(const char *cmd, const char *opt, const char *s, size_t max_n, int32_t **ids, size_t *n);

/* getopt_long returned '?' (opterr is 0: getopt prints nothing): prints one line naming the argument,
 * "sprinter CMD: --foo: unknown option (see sprinter CMD --help)" or "... --max-new: needs a value",
 * and returns 2 (usage error). */
int arg_bad_option(const char *cmd, char **argv);

#endif
