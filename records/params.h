/* params.h - the grid parameters of a sweep, defined once: their names (INI key, SQLite column,
 * label), ranges and which methods use them. Writers (spec, runner, database) and readers (summary,
 * scoring, analysis) all take them from here. No engine code beyond the header-only methods.h.
 *
 * Adding a parameter: a RunParam value here, its row in kRunParams (params.c), its field in
 * DecodeConfig with the two accessors in experiments/spec.c, its bit in method_params(), and its
 * column at the end of the runs table (records/schema.c, with the schema version that added it).
 */
#ifndef SP_PARAMS_H
#define SP_PARAMS_H

#include "methods.h"

/* The grid parameters besides the seed, in the order the grid is expanded and labels are written. */
typedef enum {
    RP_LAMBDA = 0, RP_TAU, RP_GAMMA, RP_MAX_RUN, RP_ALPHA, RP_P_MIN, RP_ETA_FP, RP_ETA_TP,
    RP_ORACLE_STAY, /* oracle-markov only */
    RP_BONUS,        /* sprinter-type: 0/1, DecodeConfig.bonus (the authors' round: 1) */
    RP_FINISH_ROUND, /* sprinter-type: 0/1, DecodeConfig.finish_round (the authors' stopping rule: 1) */
    RP_COUNT
} RunParam;

typedef struct ParamInfo {
    const char *name; /* INI key in [grid], runs column, label key */
    double lo, hi;    /* allowed range, inclusive unless open below */
    int integer;      /* values must be whole numbers (stored as INTEGER) */
    int lo_open;      /* lo itself is excluded */
    int hi_open;      /* hi itself is excluded */
    int zero_unnamed; /* a value of 0 is left out of the run's canonical text and of labels: parameters
                       * added later whose 0 is the behaviour before them, so runs keep their names */
} ParamInfo;

/* The row of parameter p (p in [0, RP_COUNT)). */
const ParamInfo *run_param_info(RunParam p);
/* The parameter named name (INI key / column), or -1. */
int run_param_by_name(const char *name);
/* Bit mask (1u << RunParam) of the parameters method m uses. */
unsigned method_params(DecodeMethod m);

/* Is value v of parameter p part of a run's name (canonical text, label)? No for NaN (does not apply)
 * and for 0 of a zero_unnamed parameter. */
int run_param_named(RunParam p, double v);

/* "lambda=1.2 tau=0.5" from values[RP_COUNT], leaving out the values run_param_named() leaves out, in
 * RunParam order; buf of cap bytes. The one label every table uses. */
void run_params_format(const double values[RP_COUNT], char *buf, int cap);

#endif
