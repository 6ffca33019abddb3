/* params.c - naming runs by their grid parameters (see params.h; the table is params_table.h). */
#include "params.h"

#include <math.h>
#include <stdio.h>

int run_param_named(RunParam p, double v) {
    return !isnan(v) && !(run_param_info(p)->zero_unnamed && v == 0);
}

void run_params_format(const double values[RP_COUNT], char *buf, int cap) {
    int k = 0;
    if (cap > 0) buf[0] = '\0';
    for (int p = 0; p < RP_COUNT && k < cap; p++) {
        if (!run_param_named((RunParam)p, values[p])) continue;
        int w = snprintf(buf + k, (size_t)(cap - k), "%s%s=%g", k ? " " : "", run_param_info((RunParam)p)->name,
                         values[p]);
        if (w > 0) k += w;
    }
}
