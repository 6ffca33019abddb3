/* params.c - the grid parameter table (see params.h). */
#include "params.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "rules.h"

static const ParamInfo kRunParams[RP_COUNT] = {
    [RP_LAMBDA] = {"lambda", 0, 1e9, 0, 1, 0},
    [RP_TAU] = {"tau", 0, 1, 0, 0, 0},
    [RP_GAMMA] = {"gamma", 1, SP_GAMMA_MAX, 1, 0, 0},
    [RP_MAX_RUN] = {"max_run", 0, 1 << 20, 1, 0, 0},
    [RP_ALPHA] = {"alpha", 0, 1, 0, 0, 0},
    [RP_P_MIN] = {"p_min", 0, 1, 0, 0, 0},
    [RP_ETA_FP] = {"eta_fp", 0, 1, 0, 0, 0},
    [RP_ETA_TP] = {"eta_tp", 0, 1, 0, 0, 0},
    [RP_ORACLE_STAY] = {"oracle_stay", 0, 1, 0, 0, 1},
    [RP_BONUS] = {"bonus", 0, 1, 1, 0, 0, 1},
    [RP_FINISH_ROUND] = {"finish_round", 0, 1, 1, 0, 0, 1},
};

const ParamInfo *run_param_info(RunParam p) { return &kRunParams[(p >= 0 && p < RP_COUNT) ? p : 0]; }

int run_param_by_name(const char *name) {
    for (int p = 0; p < RP_COUNT; p++)
        if (!strcmp(name, kRunParams[p].name)) return p;
    return -1;
}

#define B(p) (1u << (p))

unsigned method_params(DecodeMethod m) {
    switch (m) {
    case DM_SD: return B(RP_GAMMA);
    case DM_SPRINTER: return B(RP_LAMBDA) | B(RP_TAU) | B(RP_MAX_RUN) | B(RP_BONUS) | B(RP_FINISH_ROUND);
    case DM_BILD: return B(RP_ALPHA);
    case DM_PMIN: return B(RP_GAMMA) | B(RP_P_MIN);
    case DM_SPECDECPP: return B(RP_GAMMA) | B(RP_LAMBDA) | B(RP_TAU);
    case DM_ORACLE_IID: return B(RP_LAMBDA) | B(RP_MAX_RUN) | B(RP_ETA_FP) | B(RP_ETA_TP) | B(RP_BONUS) | B(RP_FINISH_ROUND);
    case DM_ORACLE_MARKOV:
        return B(RP_LAMBDA) | B(RP_MAX_RUN) | B(RP_ETA_FP) | B(RP_ETA_TP) | B(RP_ORACLE_STAY) | B(RP_BONUS) |
               B(RP_FINISH_ROUND);
    default: return 0;
    }
}

int run_param_named(RunParam p, double v) {
    return !isnan(v) && !(run_param_info(p)->zero_unnamed && v == 0);
}

void run_params_format(const double values[RP_COUNT], char *buf, int cap) {
    int k = 0;
    if (cap > 0) buf[0] = '\0';
    for (int p = 0; p < RP_COUNT && k < cap; p++) {
        if (!run_param_named((RunParam)p, values[p])) continue;
        int w = snprintf(buf + k, (size_t)(cap - k), "%s%s=%g", k ? " " : "", kRunParams[p].name, values[p]);
        if (w > 0) k += w;
    }
}
