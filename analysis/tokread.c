/* tokread.c - token log reader (see tokread.h). */
#include "tokread.h"

#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct Col {
    const char *name;
    hid_t type; /* native memory type */
    size_t size;
    void **dst;
} Col;

/* Reads 1-D dataset `name` of f into a malloc'd buffer of *rows elements of the native type. */
static int read_col(hid_t f, const char *path, const Col *c, int64_t *rows, SpErr *err) {
    hid_t d = H5Dopen2(f, c->name, H5P_DEFAULT);
    if (d < 0) return sp_fail(err, "%s: dataset /%s missing (not a sprinter-tokens log?)", path, c->name);
    hid_t sp = H5Dget_space(d);
    hsize_t dims[2] = {0, 0};
    int nd = sp >= 0 ? H5Sget_simple_extent_ndims(sp) : -1;
    if (nd == 1) H5Sget_simple_extent_dims(sp, dims, NULL);
    if (sp >= 0) H5Sclose(sp);
    if (nd != 1) {
        H5Dclose(d);
        return sp_fail(err, "%s: dataset /%s has %d dimensions, expected 1", path, c->name, nd);
    }
    /* Bound the allocation by what the file stores (deflate expands at most ~1032x), as
     * h5_read_column does: a few-kB file claiming 2^30 unwritten rows is refused, not allocated. */
    double stored = (double)H5Dget_storage_size(d);
    hid_t ft = H5Dget_type(d);
    size_t fsz = ft >= 0 ? H5Tget_size(ft) : 1;
    if (ft >= 0) H5Tclose(ft);
    if (dims[0] > ((hsize_t)1 << 34) || (double)dims[0] * (double)(fsz ? fsz : 1) > 1100.0 * stored + (double)(1 << 20)) {
        H5Dclose(d);
        return sp_fail(err, "%s: dataset /%s claims %llu rows but the file stores only %.0f bytes of it", path, c->name,
                       (unsigned long long)dims[0], stored);
    }
    void *buf = malloc(dims[0] ? dims[0] * c->size : 1);
    if (!buf) {
        H5Dclose(d);
        return sp_fail(err, "%s: out of memory reading /%s", path, c->name);
    }
    herr_t rc = dims[0] ? H5Dread(d, c->type, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) : 0;
    H5Dclose(d);
    if (rc < 0) {
        free(buf);
        return sp_fail(err, "%s: cannot read dataset /%s", path, c->name);
    }
    *c->dst = buf;
    *rows = (int64_t)dims[0];
    return 0;
}

static void read_hash_attr(hid_t f, char *buf, size_t cap) {
    buf[0] = '\0';
    if (H5Aexists(f, "run_hash") <= 0) return;
    hid_t a = H5Aopen(f, "run_hash", H5P_DEFAULT), t = a >= 0 ? H5Aget_type(a) : -1;
    if (t >= 0 && H5Tget_class(t) == H5T_STRING && !H5Tis_variable_str(t)) {
        size_t n = H5Tget_size(t);
        char *tmp = calloc(n + 1, 1);
        if (tmp && H5Aread(a, t, tmp) >= 0) snprintf(buf, cap, "%s", tmp);
        free(tmp);
    } else if (t >= 0 && H5Tget_class(t) == H5T_STRING) {
        char *v = NULL;
        hid_t mt = H5Tcopy(H5T_C_S1);
        H5Tset_size(mt, H5T_VARIABLE);
        if (H5Aread(a, mt, &v) >= 0 && v) snprintf(buf, cap, "%s", v);
        if (v) H5free_memory(v);
        H5Tclose(mt);
    }
    if (t >= 0) H5Tclose(t);
    if (a >= 0) H5Aclose(a);
}

int tokrows_read(const char *path, TokenRows *t, SpErr *err) {
    memset(t, 0, sizeof *t);
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (f < 0) return sp_fail(err, "%s: cannot open as HDF5", path);
    const Col cols[] = {
        {"prompt_index", H5T_NATIVE_INT32, 4, (void **)&t->prompt_index},
        {"pos", H5T_NATIVE_INT32, 4, (void **)&t->pos},
        {"token", H5T_NATIVE_INT32, 4, (void **)&t->token},
        {"draft_token", H5T_NATIVE_INT32, 4, (void **)&t->draft_token},
        {"q", H5T_NATIVE_FLOAT, 4, (void **)&t->q},
        {"p", H5T_NATIVE_FLOAT, 4, (void **)&t->p},
        {"score", H5T_NATIVE_FLOAT, 4, (void **)&t->score},
        {"decision", H5T_NATIVE_INT8, 1, (void **)&t->decision},
        {"label", H5T_NATIVE_INT8, 1, (void **)&t->label},
        {"target_called", H5T_NATIVE_INT8, 1, (void **)&t->target_called},
        {"kind", H5T_NATIVE_INT8, 1, (void **)&t->kind},
    };
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < sizeof cols / sizeof *cols; i++) {
        int64_t rows = 0;
        rc = read_col(f, path, &cols[i], &rows, err);
        if (rc == 0 && i > 0 && rows != t->n)
            rc = sp_fail(err, "%s: dataset /%s has %lld rows, /prompt_index has %lld", path, cols[i].name,
                         (long long)rows, (long long)t->n);
        if (rc == 0) t->n = rows;
    }
    if (rc == 0) read_hash_attr(f, t->run_hash, sizeof t->run_hash);
    H5Fclose(f);
    if (rc) tokrows_free(t);
    return rc;
}

void tokrows_free(TokenRows *t) {
    void *p[] = {t->prompt_index, t->pos, t->token, t->draft_token, t->q, t->p, t->score,
                 t->decision, t->label, t->target_called, t->kind};
    for (size_t i = 0; i < sizeof p / sizeof *p; i++) free(p[i]);
    memset(t, 0, sizeof *t);
}
