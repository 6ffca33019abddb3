/* dtvread.h - reads the output files of `sprinter dtv` (format "sprinter-dtv", experiments/dtv.h)
 * that a results directory keeps as RESULTS/dtv.h5 or RESULTS/dtv/NAME.h5, for Theorem 3.1 in the report: per file
 * the method and its params (to match the file to runs by method, params, data sha256 and temperature;
 * the Theorem 3.1 fields are NaN unless the method is sprinter), the settings (tau, lambda, verifier
 * and data hashes) and the per-prefix columns dtv_p_ps, dtv_q_ps,
 * pred_global, oracle_dtv_l1, oracle_pred summarised as means with standard errors over prefixes.
 * HDF5 only; not thread-safe. */
#ifndef SP_DTVREAD_H
#define SP_DTVREAD_H

#include "error.h"

typedef struct DtvFile {
    char path[4200], verifier_sha256[72], data_sha256[72];
    int version;                             /* DTVLOG_VERSION of the file */
    char method[32];                         /* attribute method (version 1: "sprinter") */
    char params[512];                        /* attribute params, the sweep label of the method's parameters
                                              * (version 1: dtvlog_v1_params of the file's lambda and tau) */
    double temperature;                      /* sampling temperature */
    double tau, lambda, eta_fp_global, oracle_eta_fp;
    int n;                                   /* prefixes */
    double dtv_pq, dtv_p_ps, se_dtv_p_ps;    /* mean d_TV(p, q); mean exact d_TV(p, p_SPRINTER) and its SE */
    double dtv_q_ps, se_dtv_q_ps;            /* mean exact d_TV(q, p_SPRINTER) and its SE */
    double pred_global;                      /* mean eta_FP_global * d_TV(p, q) (Thm 3.1) */
    double se_diff;                          /* SE over prefixes of dtv_p_ps - pred_global */
    double oracle_l1, oracle_pred, oracle_max_err; /* the oracle at lambda = 1: exact vs Thm 3.1 */
} DtvFile;

/* Reads one file. */
int dtv_file_read(const char *path, DtvFile *d, SpErr *err);
/* Reads every .h5 file of dir (a missing dir gives n = 0 and no error). */
int dtv_files_read(const char *dir, DtvFile **files, int *n, SpErr *err);

#endif
