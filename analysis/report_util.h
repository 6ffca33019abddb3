/* report_util.h - the helpers the report's writers (report_md.c, tables.c, plots.c) share: output
 * files under RESULTS/report, number formatting, run classification. Not a public API.
 * report.c calls the writers, the writers call these; nothing here calls back into either. */
#ifndef SP_REPORT_UTIL_H
#define SP_REPORT_UTIL_H

#include <stddef.h>
#include <stdio.h>

#include "methods.h"
#include "report_int.h"

/* R->dir/name opened for writing, or NULL with err set. */
FILE *report_open(const Report *R, const char *name, SpErr *err);
/* Closes f; -1 with err set when any write to it or the close failed. */
int report_close(FILE *f, const Report *R, const char *name, SpErr *err);
const char *fmt_num(char *buf, size_t cap, double v, const char *fmt); /* "-" for NaN */
/* 1 if name (a method as the results database stores it) is method m: for picking the runs of one
 * specific method (ar as the speed and drift reference, sd for speed-up, FLOPs and win-tie, sprinter
 * for the deployed point and its tables); classes of methods go through method_name_is (methods.h). */
int method_name_eq(const char *name, DecodeMethod m);
/* 1 for a sprinter run at the deployed lambda and tau (R->o). */
int is_deployed(const Report *R, const RunAn *a);

#endif
