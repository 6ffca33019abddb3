/* args.h - checked conversion of command-line option values. Each returns 0, or prints
 * "sprinter CMD: --OPT: ..." on stderr and returns -1. */
#ifndef SP_ARGS_H
#define SP_ARGS_H

#include <stddef.h>
#include <stdint.h>

#include "params_table.h"
#include "sampling.h"

int arg_long(const char *cmd, const char *opt, const char *s, long lo, long hi, long *out);
int arg_u64(const char *cmd, const char *opt, const char *s, uint64_t *out);
int arg_float(const char *cmd, const char *opt, const char *s, double lo, double hi, double *out);
/* A value of grid parameter p (engine/decode/params_table.h) in p's range, a whole number when p takes
 * them: "sprinter decode: --tau: 1.5 is outside [0, 1]", "... --gamma: \"2.5\" is not an integer". */
int arg_param(const char *cmd, const char *opt, const char *s, RunParam p, double *out);
/* "1,2,3" -> malloc'd int32 array (at most max_n ids, each >= 0). */
int arg_ids(const char *cmd, const char *opt, const char *s, size_t max_n, int32_t **ids, size_t *n);

/* The sampling options, one parser for every command that samples (generate, decode, collect, dtv):
 * --temperature T (0 = greedy, at most 1e6), --top-k K (0 = off), --top-p P (in (0, 1], 1 = off). They
 * have no short letters (no command takes short options: every getopt_long string is ""); their getopt
 * values lie above any character, so no command's own option values can collide with them. Put
 * ARG_SAMPLING_OPTIONS in the command's struct option list, and in the switch's default branch call
 * arg_sampling first. */
enum { ARG_TEMPERATURE = 0x100, ARG_TOP_K, ARG_TOP_P };
#define ARG_SAMPLING_OPTIONS                                                                              \
    {"temperature", required_argument, 0, ARG_TEMPERATURE}, {"top-k", required_argument, 0, ARG_TOP_K}, \
        {"top-p", required_argument, 0, ARG_TOP_P}
/* ch is getopt_long's value: 1 when it was a sampling option and optarg parsed into *sp, 0 when it is
 * none of them, -1 when optarg is bad (printed: "sprinter CMD: --top-p: ..."). */
int arg_sampling(const char *cmd, int ch, const char *optarg, SamplerParams *sp);

/* The options of the lossy peer methods' parameters (engine/decode/params_table.h rows), one parser
 * for every command that runs or analyses them (decode, dtv): --typical-eps E, --typical-alpha A,
 * --fsd-divergence kl|js|tv (or its code 0, 1, 2), --fsd-threshold T, --lossy-kl D, --tau-judge T,
 * --judge-rho R (into the DecodeConfig fields of the same names, each checked against its row's
 * range) and --judge FILE (the judge head's path, into *judge). Use like ARG_SAMPLING_OPTIONS: put
 * ARG_METHOD_PARAM_OPTIONS in the option list and call arg_method_param in the default branch. */
enum {
    ARG_TYPICAL_EPS = 0x120,
    ARG_TYPICAL_ALPHA,
    ARG_FSD_DIVERGENCE,
    ARG_FSD_THRESHOLD,
    ARG_LOSSY_KL,
    ARG_JUDGE,
    ARG_TAU_JUDGE,
    ARG_JUDGE_RHO
};
#define ARG_METHOD_PARAM_OPTIONS                                                                                 \
    {"typical-eps", required_argument, 0, ARG_TYPICAL_EPS}, {"typical-alpha", required_argument, 0, ARG_TYPICAL_ALPHA}, \
        {"fsd-divergence", required_argument, 0, ARG_FSD_DIVERGENCE},                                            \
        {"fsd-threshold", required_argument, 0, ARG_FSD_THRESHOLD}, {"lossy-kl", required_argument, 0, ARG_LOSSY_KL}, \
        {"judge", required_argument, 0, ARG_JUDGE}, {"tau-judge", required_argument, 0, ARG_TAU_JUDGE},           \
        {"judge-rho", required_argument, 0, ARG_JUDGE_RHO}
struct DecodeConfig;
/* 1 when ch was one of them and optarg parsed into c (or *judge), 0 when it is none of them, -1 when
 * optarg is bad (printed: "sprinter CMD: --lossy-kl: ..."). */
int arg_method_param(const char *cmd, int ch, const char *optarg, struct DecodeConfig *c, const char **judge);
/* The help lines of those options (for a command's --help). */
#define ARG_METHOD_PARAM_HELP                                                                                    \
    "  --judge FILE       judge head .safetensors (judge; `sprinter collect --judge` + train-verifier)\n"       \
    "  --tau-judge T      judge: keep an SD-rejected draft iff the judge's score >= T (default 0.5; > 1: sd)\n" \
    "  --judge-rho R      judge: its label p(x) >= R max p, for the events (default 0.5)\n"                    \
    "  --typical-eps E --typical-alpha A   typical: accept a draft x iff p(x) > min(E, A exp(-H(p)))\n"       \
    "                     (defaults 0.09, 0.3, Medusa's)\n"                                                    \
    "  --fsd-divergence D  fsd: kl (KL(p||q)), js (Jensen-Shannon) or tv, or its code 0, 1, 2 (default js)\n" \
    "  --fsd-threshold T  fsd: accept a draft outright where D(p, q) <= T, else SD's test (default 0.1; 0 = sd)\n" \
    "  --lossy-kl D       optimal-lossy: the bound on KL(r || p) of each position's law r (default 0.1; 0 = sd)\n"

/* getopt_long returned '?' (opterr is 0: getopt prints nothing): prints one line naming the argument,
 * "sprinter CMD: --foo: unknown option (see sprinter CMD --help)" or "... --max-new: needs a value",
 * and returns 2 (usage error). */
int arg_bad_option(const char *cmd, char **argv);

#endif
