/* dtvread.c - summaries of `sprinter dtv` output files (see dtvread.h). */
#include "dtvread.h"

#include "dtvlog.h"

#include <dirent.h>
#include <errno.h>
#include <hdf5.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Reads float64 column j (DTV_dtv_pq, ...) of f: malloc'd, *n rows. */
static double *column(hid_t f, const char *path, int j, int *n, SpErr *err) {
    void *x = NULL;
    int64_t rows = 0;
    int width = 0;
    *n = 0;
    if (h5_read_column(f, path, dtvlog_real_name(j), H5C_F64, &x, &rows, &width, err)) return NULL;
    if (width != 1 || rows > (1 << 30)) {
        free(x);
        sp_fail(err, "%s: dataset %s is not a column", path, dtvlog_real_name(j));
        return NULL;
    }
    *n = (int)rows;
    return x;
}

/* mean and standard error of a[i] - (b ? b[i] : 0) over the finite entries. */
static void mean_se(const double *a, const double *b, int n, double *mean, double *se) {
    double s = 0, ss = 0;
    int k = 0;
    for (int i = 0; i < n; i++) {
        double x = a[i] - (b ? b[i] : 0);
        if (isfinite(x)) s += x, ss += x * x, k++;
    }
    *mean = k ? s / k : NAN;
    *se = k > 1 ? sqrt(fmax(0, (ss - s * s / k) / (k - 1)) / k) : NAN;
}

static int read_direct(const char *path, DtvFile *d, SpErr *err) {
    memset(d, 0, sizeof *d);
    snprintf(d->path, sizeof d->path, "%s", path);
    hid_t f = h5_open_read(path, err);
    if (f < 0) return -1;
    char fmt[64] = "";
    int rc = 0;
    (void)h5_read_attr_str(f, path, "format", fmt, sizeof fmt, NULL);
    if (strcmp(fmt, DTVLOG_FORMAT)) {
        rc = sp_fail(err, "%s: attribute format is \"%s\", expected \"%s\"", path, fmt, DTVLOG_FORMAT);
    } else {
        /* settings the report shows; a missing one reads as "" / NaN */
        (void)h5_read_attr_str(f, path, "verifier_sha256", d->verifier_sha256, sizeof d->verifier_sha256, NULL);
        (void)h5_read_attr_str(f, path, "data_sha256", d->data_sha256, sizeof d->data_sha256, NULL);
        double version = NAN;
        const struct {
            const char *name;
            double *v;
        } attrs[] = {{"tau", &d->tau}, {"lambda", &d->lambda}, {"eta_fp_global", &d->eta_fp_global},
                     {"oracle_eta_fp", &d->oracle_eta_fp}, {"temperature", &d->temperature}, {"version", &version}};
        for (size_t k = 0; k < sizeof attrs / sizeof *attrs; k++)
            if (h5_read_attr_f64(f, path, attrs[k].name, attrs[k].v, NULL)) *attrs[k].v = NAN;
        d->version = isnan(version) ? 1 : (int)version;
        if (d->version < 2) { /* sprinter only, before the attributes method and params */
            snprintf(d->method, sizeof d->method, "sprinter");
            dtvlog_v1_params(d->lambda, d->tau, d->params, sizeof d->params);
        } else if (h5_read_attr_str(f, path, "method", d->method, sizeof d->method, err) ||
                   h5_read_attr_str(f, path, "params", d->params, sizeof d->params, err)) {
            H5Fclose(f);
            return -1;
        }
        int n[6];
        double *pq = column(f, path, DTV_dtv_pq, &n[0], err), *ps = pq ? column(f, path, DTV_dtv_p_ps, &n[1], err) : NULL;
        double *pg = ps ? column(f, path, DTV_pred_global, &n[2], err) : NULL;
        double *l1 = pg ? column(f, path, DTV_oracle_dtv_l1, &n[3], err) : NULL;
        double *op = l1 ? column(f, path, DTV_oracle_pred, &n[4], err) : NULL;
        double *qs = op ? column(f, path, DTV_dtv_q_ps, &n[5], err) : NULL;
        if (!qs) {
            rc = -1;
        } else if (n[1] != n[0] || n[2] != n[0] || n[3] != n[0] || n[4] != n[0] || n[5] != n[0]) {
            rc = sp_fail(err, "%s: columns dtv_pq, dtv_p_ps, pred_global, oracle_dtv_l1, oracle_pred, dtv_q_ps have "
                              "different lengths", path);
        } else {
            double se;
            d->n = n[0];
            mean_se(pq, NULL, d->n, &d->dtv_pq, &se);
            mean_se(ps, NULL, d->n, &d->dtv_p_ps, &d->se_dtv_p_ps);
            mean_se(qs, NULL, d->n, &d->dtv_q_ps, &d->se_dtv_q_ps);
            mean_se(pg, NULL, d->n, &d->pred_global, &se);
            double md;
            mean_se(ps, pg, d->n, &md, &d->se_diff);
            mean_se(l1, NULL, d->n, &d->oracle_l1, &se);
            mean_se(op, NULL, d->n, &d->oracle_pred, &se);
            for (int i = 0; i < d->n; i++)
                if (fabs(l1[i] - op[i]) > d->oracle_max_err) d->oracle_max_err = fabs(l1[i] - op[i]);
        }
        free(pq), free(ps), free(pg), free(l1), free(op), free(qs);
    }
    H5Fclose(f);
    return rc;
}

/* In a checked child (h5util.h h5_checked): the file is read there and its DtvFile (plain data) comes
 * back, so libhdf5 crashing on a damaged file (issue 27, class 1) is a one-line error naming it. */
static int read_in_child(void *arg, void **blob, size_t *len, SpErr *err) {
    const char *path = arg;
    DtvFile *d = malloc(sizeof *d);
    if (!d) return sp_fail(err, "%s: out of memory", path);
    if (read_direct(path, d, err)) {
        free(d);
        return -1;
    }
    *blob = d, *len = sizeof *d;
    return 0;
}

int dtv_file_read(const char *path, DtvFile *d, SpErr *err) {
    memset(d, 0, sizeof *d);
    snprintf(d->path, sizeof d->path, "%s", path);
    void *blob = NULL;
    size_t len = 0;
    if (h5_checked(path, read_in_child, (void *)path, &blob, &len, err)) return -1;
    if (len != sizeof *d) {
        free(blob);
        return sp_fail(err, "%s: the checked reader's answer is incomplete", path);
    }
    memcpy(d, blob, sizeof *d);
    free(blob);
    d->path[sizeof d->path - 1] = d->verifier_sha256[sizeof d->verifier_sha256 - 1] = '\0';
    d->data_sha256[sizeof d->data_sha256 - 1] = d->method[sizeof d->method - 1] = d->params[sizeof d->params - 1] = '\0';
    return 0;
}

static int cmp_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

int dtv_files_read(const char *dir, DtvFile **files, int *n, SpErr *err) {
    *files = NULL, *n = 0;
    DIR *dp = opendir(dir);
    if (!dp) return errno == ENOENT ? 0 : sp_fail(err, "%s: cannot open directory: %s", dir, strerror(errno));
    char *names[256];
    int k = 0;
    for (struct dirent *de; (de = readdir(dp)) && k < 256;) {
        size_t l = strlen(de->d_name);
        if (l > 3 && !strcmp(de->d_name + l - 3, ".h5")) names[k++] = strdup(de->d_name);
    }
    closedir(dp);
    qsort(names, (size_t)k, sizeof *names, cmp_name);
    int rc = 0;
    if (k && !(*files = calloc((size_t)k, sizeof **files))) rc = sp_fail(err, "out of memory");
    for (int i = 0; rc == 0 && i < k; i++) {
        char path[4200];
        if (!names[i]) {
            rc = sp_fail(err, "out of memory");
            break;
        }
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        rc = dtv_file_read(path, &(*files)[*n], err);
        if (rc == 0) (*n)++;
    }
    for (int i = 0; i < k; i++) free(names[i]);
    if (rc) {
        free(*files);
        *files = NULL, *n = 0;
    }
    return rc;
}
