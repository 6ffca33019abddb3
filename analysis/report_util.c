/* report_util.c - the helpers the report's writers share (report_util.h). */
#include "report_util.h"

#include <errno.h>
#include <math.h>
#include <string.h>

const char *fmt_num(char *buf, size_t cap, double v, const char *fmt) {
    if (isnan(v)) snprintf(buf, cap, "-");
    else snprintf(buf, cap, fmt, v);
    return buf;
}

FILE *report_open(const Report *R, const char *name, SpErr *err) {
    char path[4400];
    snprintf(path, sizeof path, "%s/%s", R->dir, name);
    FILE *f = fopen(path, "w");
    if (!f) sp_fail(err, "%s: cannot create: %s", path, strerror(errno));
    return f;
}

int report_close(FILE *f, const Report *R, const char *name, SpErr *err) {
    int bad = ferror(f);
    if (fclose(f) != 0 || bad) return sp_fail(err, "%s/%s: write failed", R->dir, name);
    return 0;
}

int method_name_eq(const char *name, DecodeMethod m) { return !strcmp(name, decode_method_name(m)); }

int is_deployed(const Report *R, const RunAn *a) {
    return method_name_eq(a->ri->method, DM_SPRINTER) && fabs(a->ri->lambda - R->o->deployed_lambda) < 1e-9 &&
           fabs(a->ri->tau - R->o->deployed_tau) < 1e-9;
}
