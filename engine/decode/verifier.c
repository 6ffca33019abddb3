#include "verifier.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "safetensors.h"

double verifier_score(const Verifier *v, const float *h) {
    double z = v->b;
    for (int i = 0; i < v->d; i++) z += (double)v->w[i] * h[i];
    return 1.0 / (1.0 + exp(-z));
}

/* The parsed header of an opened file (st_open_file validated it). Caller deletes. */
static cJSON *header_of(const StArchive *a) {
    const unsigned char *p = a->files[0].map;
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--) hlen = (hlen << 8) | p[i];
    return cJSON_ParseWithLength((const char *)p + 8, (size_t)hlen);
}

static const char *const kFeatureNames[] = {"token", "prefix"};

const char *verifier_feature_name(VerifierFeature f) { return f == VF_PREFIX ? kFeatureNames[1] : kFeatureNames[0]; }

int verifier_feature_parse(const char *s, VerifierFeature *f) {
    for (int i = 0; i < 2; i++)
        if (!strcmp(s, kFeatureNames[i])) {
            *f = (VerifierFeature)i;
            return 0;
        }
    return -1;
}

const char *verifier_source_name(VerifierSource s) { return s == VS_TARGET ? "target" : "draft"; }

int verifier_source_parse(const char *s, VerifierSource *out) {
    if (!strcmp(s, "draft")) *out = VS_DRAFT;
    else if (!strcmp(s, "target")) *out = VS_TARGET;
    else return -1;
    return 0;
}

/* Reads the __metadata__ "lambda" and "feature" of a verifier file (the archive API keeps no
 * metadata). */
static int read_meta(const StArchive *a, Verifier *v, SpErr *err) {
    cJSON *hdr = header_of(a);
    const cJSON *md = cJSON_GetObjectItemCaseSensitive(hdr, "__metadata__");
    const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(md, "format");
    const cJSON *lam = cJSON_GetObjectItemCaseSensitive(md, "lambda");
    const cJSON *feat = cJSON_GetObjectItemCaseSensitive(md, "feature");
    const cJSON *src = cJSON_GetObjectItemCaseSensitive(md, "source");
    int rc = 0;
    v->feature = VF_TOKEN;
    v->source = VS_DRAFT;
    if (!cJSON_IsString(fmt) || strcmp(fmt->valuestring, "sprinter-verifier") != 0)
        rc = sp_fail(err, "__metadata__.format is not \"sprinter-verifier\"");
    else if (!cJSON_IsString(lam) || sscanf(lam->valuestring, "%lf", &v->lambda) != 1 || !(v->lambda > 0))
        rc = sp_fail(err, "__metadata__.lambda is missing or not a positive number");
    else if (feat && (!cJSON_IsString(feat) || verifier_feature_parse(feat->valuestring, &v->feature)))
        rc = sp_fail(err, "__metadata__.feature is not \"token\" or \"prefix\"");
    else if (src && (!cJSON_IsString(src) || verifier_source_parse(src->valuestring, &v->source)))
        rc = sp_fail(err, "__metadata__.source is not \"draft\" or \"target\"");
    cJSON_Delete(hdr);
    return rc;
}

int verifier_load(const char *path, Verifier *v, SpErr *err) {
    memset(v, 0, sizeof *v);
    StArchive a = {0};
    if (st_open_file(&a, path, err)) {
        st_close(&a);
        return -1;
    }
    int rc = -1;
    const StEntry *w = st_find(&a, "weight"), *b = st_find(&a, "bias");
    if (read_meta(&a, v, err)) {
        sp_err_prefix(err, "%s", path);
    } else if (!w || w->dtype != ST_F32 || w->ndim != 1 || w->shape[0] < 1 || w->shape[0] > 1 << 20) {
        sp_fail(err, "%s: tensor weight must be F32 [d]", path);
    } else if (!b || b->dtype != ST_F32 || b->numel != 1) {
        sp_fail(err, "%s: tensor bias must be F32 [1]", path);
    } else if (!(v->w = malloc((size_t)w->shape[0] * sizeof *v->w))) {
        sp_fail(err, "out of memory");
    } else {
        v->d = (int)w->shape[0];
        memcpy(v->w, w->data, (size_t)v->d * sizeof *v->w);
        memcpy(&v->b, b->data, sizeof v->b);
        rc = 0;
        for (int i = 0; i < v->d && rc == 0; i++)
            if (!isfinite(v->w[i])) rc = sp_fail(err, "%s: tensor weight[%d] is not finite", path, i);
        if (rc == 0 && !isfinite(v->b)) rc = sp_fail(err, "%s: tensor bias is not finite", path);
    }
    st_close(&a);
    if (rc) verifier_free(v);
    return rc;
}

typedef struct {
    const Verifier *v;
} SaveCtx;

static int fill(void *ctx, int i, void *buf, size_t nbytes, SpErr *err) {
    (void)err;
    const Verifier *v = ((SaveCtx *)ctx)->v;
    if (i == 0) memcpy(buf, v->w, nbytes);
    else memcpy(buf, &v->b, sizeof v->b);
    return 0;
}

int verifier_save(const char *path, const Verifier *v, const char *const *meta, SpErr *err) {
    StWriteSpec specs[2] = {{"weight", ST_F32, 1, {v->d}}, {"bias", ST_F32, 1, {1}}};
    const char *all[64];
    char lam[64], dd[32];
    snprintf(lam, sizeof lam, "%.17g", v->lambda);
    snprintf(dd, sizeof dd, "%d", v->d);
    int k = 0;
    all[k++] = "format", all[k++] = "sprinter-verifier";
    all[k++] = "version", all[k++] = "1";
    all[k++] = "lambda", all[k++] = lam;
    all[k++] = "d", all[k++] = dd;
    all[k++] = "feature", all[k++] = verifier_feature_name(v->feature);
    if (v->source != VS_DRAFT) all[k++] = "source", all[k++] = verifier_source_name(v->source);
    for (int i = 0; meta && meta[i] && meta[i + 1] && k < 60; i += 2) all[k++] = meta[i], all[k++] = meta[i + 1];
    all[k] = all[k + 1] = NULL;
    SaveCtx ctx = {v};
    return st_write_file(path, specs, 2, all, fill, &ctx, err);
}

void verifier_free(Verifier *v) {
    free(v->w);
    v->w = NULL;
}

int verifier_read_meta(const char *path, const char *key, char *buf, size_t cap, SpErr *err) {
    StArchive a = {0};
    if (st_open_file(&a, path, err)) {
        st_close(&a);
        return -1;
    }
    cJSON *hdr = header_of(&a);
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(hdr, "__metadata__"), key);
    int rc = 0;
    if (!cJSON_IsString(v)) rc = sp_fail(err, "%s: __metadata__.%s is missing", path, key);
    else snprintf(buf, cap, "%s", v->valuestring);
    cJSON_Delete(hdr);
    st_close(&a);
    return rc;
}
