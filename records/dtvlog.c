/* dtvlog.c - the columns of a `sprinter dtv` file (see dtvlog.h). */
#include "dtvlog.h"

#include <math.h>

#include "params.h"

static const H5ColSpec kCols[DTVLOG_N_COLS] = {
#define DTVLOG_INT(name, units, doc) {#name, H5C_I32, 1, units, doc},
#define DTVLOG_REAL(name, units, doc) {#name, H5C_F64, 1, units, doc},
    DTVLOG_INT_COLUMNS(DTVLOG_INT) DTVLOG_REAL_COLUMNS(DTVLOG_REAL)
#undef DTVLOG_INT
#undef DTVLOG_REAL
};

void dtvlog_v1_params(double lambda, double tau, char *buf, int cap) {
    double values[RP_COUNT];
    unsigned applies = method_params(DM_SPRINTER);
    for (int k = 0; k < RP_COUNT; k++) values[k] = (applies & (1u << k)) ? run_param_info((RunParam)k)->dflt : NAN;
    values[RP_LAMBDA] = lambda, values[RP_TAU] = tau;
    run_params_format(values, buf, cap);
}

const H5ColSpec *dtvlog_columns(void) { return kCols; }

const char *dtvlog_real_name(int j) { return kCols[DTV_N_INT + (j >= 0 && j < DTV_N_REAL ? j : 0)].name; }
