/* dtvread.c - summaries of `sprinter dtv` output files (see dtvread.h). */
#include "dtvread.h"

#include <dirent.h>
#include <errno.h>
#include <hdf5.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int attr_f64(hid_t f, const char *name, double *v) {
    *v = NAN;
    if (H5Aexists(f, name) <= 0) return -1;
    hid_t a = H5Aopen(f, name, H5P_DEFAULT);
    int rc = a >= 0 && H5Aread(a, H5T_NATIVE_DOUBLE, v) >= 0 ? 0 : -1;
    if (a >= 0) H5Aclose(a);
    return rc;
}

static int attr_str(hid_t f, const char *name, char *buf, size_t cap) {
    buf[0] = '\0';
    if (H5Aexists(f, name) <= 0) return -1;
    hid_t a = H5Aopen(f, name, H5P_DEFAULT), t = a >= 0 ? H5Aget_type(a) : -1;
    int rc = -1;
    if (t >= 0 && H5Tget_class(t) == H5T_STRING && H5Tis_variable_str(t) <= 0) {
        size_t n = H5Tget_size(t);
        char *tmp = calloc(n + 1, 1);
        if (tmp && H5Aread(a, t, tmp) >= 0) rc = 0, snprintf(buf, cap, "%s", tmp);
        free(tmp);
    }
    if (t >= 0) H5Tclose(t);
    if (a >= 0) H5Aclose(a);
    return rc;
}

/* Reads 1-D double column name; malloc'd, *n rows. */
static double *column(hid_t f, const char *name, int *n) {
    *n = 0;
    hid_t d = H5Dopen2(f, name, H5P_DEFAULT);
    if (d < 0) return NULL;
    hid_t sp = H5Dget_space(d);
    hsize_t dims[1] = {0};
    double *x = NULL;
    if (sp >= 0 && H5Sget_simple_extent_ndims(sp) == 1 && H5Sget_simple_extent_dims(sp, dims, NULL) == 1 &&
        (x = malloc((dims[0] ? dims[0] : 1) * sizeof *x)) &&
        (dims[0] == 0 || H5Dread(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, x) >= 0)) {
        *n = (int)dims[0];
    } else {
        free(x);
        x = NULL;
    }
    if (sp >= 0) H5Sclose(sp);
    H5Dclose(d);
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

int dtv_file_read(const char *path, DtvFile *d, SpErr *err) {
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    memset(d, 0, sizeof *d);
    snprintf(d->path, sizeof d->path, "%s", path);
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (f < 0) return sp_fail(err, "%s: cannot open as HDF5", path);
    char fmt[64];
    int rc = 0;
    if (attr_str(f, "format", fmt, sizeof fmt) || strcmp(fmt, "sprinter-dtv")) {
        rc = sp_fail(err, "%s: attribute format is \"%s\", expected \"sprinter-dtv\"", path, fmt);
    } else {
        attr_str(f, "verifier_sha256", d->verifier_sha256, sizeof d->verifier_sha256);
        attr_str(f, "data_sha256", d->data_sha256, sizeof d->data_sha256);
        attr_f64(f, "tau", &d->tau), attr_f64(f, "lambda", &d->lambda);
        attr_f64(f, "eta_fp_global", &d->eta_fp_global), attr_f64(f, "oracle_eta_fp", &d->oracle_eta_fp);
        int n[5];
        double *pq = column(f, "dtv_pq", &n[0]), *ps = column(f, "dtv_p_ps", &n[1]);
        double *pg = column(f, "pred_global", &n[2]), *l1 = column(f, "oracle_dtv_l1", &n[3]);
        double *op = column(f, "oracle_pred", &n[4]);
        if (!pq || !ps || !pg || !l1 || !op || n[1] != n[0] || n[2] != n[0] || n[3] != n[0] || n[4] != n[0]) {
            rc = sp_fail(err, "%s: columns dtv_pq, dtv_p_ps, pred_global, oracle_dtv_l1, oracle_pred missing or of "
                              "different lengths", path);
        } else {
            double se;
            d->n = n[0];
            mean_se(pq, NULL, d->n, &d->dtv_pq, &se);
            mean_se(ps, NULL, d->n, &d->dtv_p_ps, &d->se_dtv_p_ps);
            mean_se(pg, NULL, d->n, &d->pred_global, &se);
            double md;
            mean_se(ps, pg, d->n, &md, &d->se_diff);
            mean_se(l1, NULL, d->n, &d->oracle_l1, &se);
            mean_se(op, NULL, d->n, &d->oracle_pred, &se);
            for (int i = 0; i < d->n; i++)
                if (fabs(l1[i] - op[i]) > d->oracle_max_err) d->oracle_max_err = fabs(l1[i] - op[i]);
        }
        free(pq), free(ps), free(pg), free(l1), free(op);
    }
    H5Fclose(f);
    return rc;
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
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
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
