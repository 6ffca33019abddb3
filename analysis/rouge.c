/* rouge.c - ROUGE-1/2/L F1 (see rouge.h). */
#include "rouge.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* A text split into words, each word an integer id shared by both texts. */
typedef struct Words {
    char **w; /* lowercased copies */
    int n;
    int *id;
} Words;

static int word_byte(unsigned char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c >= 0x80;
}

static void words_free(Words *t) {
    for (int i = 0; t->w && i < t->n; i++) free(t->w[i]);
    free(t->w);
    free(t->id);
    memset(t, 0, sizeof *t);
}

static int split(const char *s, Words *t) {
    memset(t, 0, sizeof *t);
    size_t len = strlen(s), cap = len / 2 + 1;
    t->w = malloc(cap * sizeof *t->w);
    t->id = malloc(cap * sizeof *t->id);
    if (!t->w || !t->id) return -1;
    for (size_t i = 0; i < len;) {
        if (!word_byte((unsigned char)s[i])) {
            i++;
            continue;
        }
        size_t j = i;
        while (j < len && word_byte((unsigned char)s[j])) j++;
        char *w = malloc(j - i + 1);
        if (!w) return -1;
        for (size_t k = i; k < j; k++) {
            unsigned char c = (unsigned char)s[k];
            w[k - i] = (char)(c >= 'A' && c <= 'Z' ? c + 32 : c);
        }
        w[j - i] = '\0';
        t->w[t->n++] = w;
        i = j;
    }
    return 0;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Gives every word of a and b an id: its index in the sorted union. */
static int assign_ids(Words *a, Words *b) {
    int n = a->n + b->n;
    char **all = malloc((size_t)(n ? n : 1) * sizeof *all);
    if (!all) return -1;
    memcpy(all, a->w, (size_t)a->n * sizeof *all);
    memcpy(all + a->n, b->w, (size_t)b->n * sizeof *all);
    qsort(all, (size_t)n, sizeof *all, cmp_str);
    Words *both[2] = {a, b};
    for (int s = 0; s < 2; s++)
        for (int i = 0; i < both[s]->n; i++) {
            char **hit = bsearch(&both[s]->w[i], all, (size_t)n, sizeof *all, cmp_str);
            while (hit > all && !strcmp(hit[-1], *hit)) hit--; /* the first of equal strings */
            both[s]->id[i] = (int)(hit - all);
        }
    free(all);
    return 0;
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* n-gram keys of t (n = 1 or 2), sorted; *m keys. */
static uint64_t *ngrams(const Words *t, int n, int *m) {
    *m = t->n >= n ? t->n - n + 1 : 0;
    uint64_t *k = malloc((size_t)(*m ? *m : 1) * sizeof *k);
    if (!k) return NULL;
    for (int i = 0; i < *m; i++)
        k[i] = n == 1 ? (uint64_t)t->id[i] : ((uint64_t)t->id[i] << 32) | (uint64_t)t->id[i + 1];
    qsort(k, (size_t)*m, sizeof *k, cmp_u64);
    return k;
}

static double f1(double overlap, double n_cand, double n_ref) {
    if (overlap <= 0 || n_cand <= 0 || n_ref <= 0) return 0;
    double p = overlap / n_cand, r = overlap / n_ref;
    return 2 * p * r / (p + r);
}

/* ROUGE-N F1; -1 on allocation failure. */
static double rouge_n(const Words *c, const Words *r, int n) {
    int mc, mr;
    uint64_t *kc = ngrams(c, n, &mc), *kr = ngrams(r, n, &mr);
    if (!kc || !kr) {
        free(kc), free(kr);
        return -1;
    }
    double overlap = 0; /* merge of two sorted multisets = sum of min counts */
    for (int i = 0, j = 0; i < mc && j < mr;) {
        if (kc[i] == kr[j]) overlap++, i++, j++;
        else if (kc[i] < kr[j]) i++;
        else j++;
    }
    free(kc), free(kr);
    return f1(overlap, mc, mr);
}

static double rouge_l(const Words *c, const Words *r) {
    int *prev = calloc((size_t)r->n + 1, sizeof *prev), *cur = calloc((size_t)r->n + 1, sizeof *cur);
    if (!prev || !cur) {
        free(prev), free(cur);
        return -1;
    }
    for (int i = 1; i <= c->n; i++) {
        for (int j = 1; j <= r->n; j++)
            cur[j] = c->id[i - 1] == r->id[j - 1] ? prev[j - 1] + 1 : (prev[j] > cur[j - 1] ? prev[j] : cur[j - 1]);
        int *t = prev;
        prev = cur, cur = t;
    }
    double lcs = prev[r->n];
    free(prev), free(cur);
    return f1(lcs, c->n, r->n);
}

int rouge_f1(const char *candidate, const char *reference, Rouge *out, SpErr *err) {
    Words c = {0}, r = {0};
    int rc = 0;
    if (split(candidate ? candidate : "", &c) || split(reference ? reference : "", &r) || assign_ids(&c, &r)) {
        rc = sp_fail(err, "rouge: out of memory");
    } else {
        out->r1 = rouge_n(&c, &r, 1);
        out->r2 = rouge_n(&c, &r, 2);
        out->rl = rouge_l(&c, &r);
        if (out->r1 < 0 || out->r2 < 0 || out->rl < 0) rc = sp_fail(err, "rouge: out of memory");
    }
    words_free(&c);
    words_free(&r);
    return rc;
}

int rouge_f1_best(const char *candidate, const char *references, char sep, Rouge *out, SpErr *err) {
    *out = (Rouge){0, 0, 0};
    for (const char *alt = references;;) {
        const char *end = strchr(alt, sep);
        size_t len = end ? (size_t)(end - alt) : strlen(alt);
        char *one = strndup(alt, len);
        Rouge g;
        int rc = one ? rouge_f1(candidate, one, &g, err) : sp_fail(err, "out of memory");
        free(one);
        if (rc) return -1;
        out->r1 = fmax(out->r1, g.r1), out->r2 = fmax(out->r2, g.r2), out->rl = fmax(out->rl, g.rl);
        if (!end) return 0;
        alt = end + 1;
    }
}
