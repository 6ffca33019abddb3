/* params.h - the grid parameters of a sweep: the functions that name runs by their values. The
 * parameters themselves (RunParam, ranges, defaults, methods, columns) are one table,
 * engine/decode/params_table.h; see there for how to add one. Writers (spec, runner, database) and
 * readers (summary, scoring, analysis) all take them from there. No engine code beyond header-only
 * headers.
 */
#ifndef SP_PARAMS_H
#define SP_PARAMS_H

#include "methods.h"
#include "params_table.h"

/* Is value v of parameter p part of a run's name (canonical text, label)? No for NaN (does not apply)
 * and for 0 of a zero_unnamed parameter. */
int run_param_named(RunParam p, double v);

/* "lambda=1.2 tau=0.5" from values[RP_COUNT], leaving out the values run_param_named() leaves out, in
 * RunParam order; buf of cap bytes. The one label every table uses. */
void run_params_format(const double values[RP_COUNT], char *buf, int cap);

#endif
