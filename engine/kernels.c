#include "kernels.h"

#include <cblas.h>
#include <math.h>
#include <string.h>
#include <omp.h>
#if defined(__F16C__) && defined(__AVX__)
#include <immintrin.h>
#endif

/* IEEE half -> float by bit manipulation (handles subnormals, inf, NaN). */
static inline float half_to_float(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000) << 16;
    uint32_t exp = (h >> 10) & 0x1f, man = h & 0x3ff;
    uint32_t bits;
    if (exp == 0) {
        if (man == 0) {
            bits = sign;
        } else { /* subnormal: renormalise */
            int e = -1;
            do {
                e++;
                man <<= 1;
            } while (!(man & 0x400));
            bits = sign | ((uint32_t)(127 - 15 - e) << 23) | ((man & 0x3ff) << 13);
        }
    } else if (exp == 0x1f) {
        bits = sign | 0x7f800000u | (man << 13);
    } else {
        bits = sign | ((exp + 127 - 15) << 23) | (man << 13);
    }
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

static inline float bf16_to_float(uint16_t h) {
    uint32_t bits = (uint32_t)h << 16;
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

void widen(const void *src, DType t, size_t off, size_t n, float *dst) {
    switch (t) {
    case DT_F32: memcpy(dst, (const float *)src + off, n * sizeof(float)); break;
    case DT_F16: {
        const uint16_t *s = (const uint16_t *)src + off;
        size_t i = 0;
#if defined(__F16C__) && defined(__AVX__)
        for (; i + 8 <= n; i += 8) /* hardware conversion, exact like the scalar path */
            _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(s + i))));
#endif
        for (; i < n; i++) dst[i] = half_to_float(s[i]);
    } break;
    case DT_BF16: {
        const uint16_t *s = (const uint16_t *)src + off;
        for (size_t i = 0; i < n; i++) dst[i] = bf16_to_float(s[i]);
    } break;
    }
}

static void add_bias(float *y, int n, int out, int ldy, const float *bias) {
    if (!bias) return;
    for (int r = 0; r < n; r++) {
        float *row = y + (size_t)r * ldy;
        for (int j = 0; j < out; j++) row[j] += bias[j];
    }
}

/* dot(a, b) over n floats with 8 independent partial sums, so the compiler vectorises it
 * without reassociating a single running sum. */
static inline float dot8(const float *a, const float *b, int n) {
    float acc[8] = {0};
    int i = 0;
    for (; i + 8 <= n; i += 8)
        for (int k = 0; k < 8; k++) acc[k] += a[i + k] * b[i + k];
    float s = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
    for (; i < n; i++) s += a[i] * b[i];
    return s;
}

/* Few rows (speculative verification): BLAS sgemm packs the whole weight matrix for a handful of
 * rows, costing 3-5x a matrix-vector product. Here every weight element is read from memory
 * once, in storage order, and used for all n rows; the weight rows are split across OpenMP
 * threads (contiguous streams).
 *   out-major W[out, in]: y[r, o] = x[r, :] . W[o, :]        (threads own output columns)
 *   in-major  W[in, out]: y[r, :] = sum_i x[r, i] W[i, :]     (threads own input rows and
 *                         accumulate partial sums in acc[T, n, out], then reduce) */
#define LIN_FEW_ROWS 8
/* Only for matrices that stream from memory: cache-resident ones are compute-bound, and there
 * sgemm's packed kernel wins (measured 14x faster on the default target's 256x1024 layers). */
#define LIN_FEW_MIN ((size_t)1 << 20)
/* OpenMP only for large matrices: a parallel region's barrier costs more than small products,
 * and spins badly when the cores are shared. */
#define LIN_PAR_MIN ((size_t)1 << 22)

/* y[r, o] for o in [o0, o1): out-major rows of W dotted with every x row. */
static void few_out_major(const LinearW *L, const float *x, int n, int ldx, float *y, int ldy, int o0, int o1) {
    for (int o = o0; o < o1; o++) {
        const float *w = (const float *)L->w + (size_t)o * L->in;
        for (int r = 0; r < n; r++) y[(size_t)r * ldy + o] = dot8(x + (size_t)r * ldx, w, L->in);
    }
}

/* a[r, :] = sum_{i in [i0, i1)} x[r, i] W[i, :] for in-major W (a is [n, out], overwritten). */
static void few_in_major(const LinearW *L, const float *x, int n, int ldx, float *a, int i0, int i1) {
    int out = L->out;
    memset(a, 0, (size_t)n * (size_t)out * sizeof *a);
    for (int i = i0; i < i1; i++) {
        const float *w = (const float *)L->w + (size_t)i * out;
        for (int r = 0; r < n; r++) {
            float xi = x[(size_t)r * ldx + i], *ar = a + (size_t)r * out;
            for (int c = 0; c < out; c++) ar[c] += xi * w[c];
        }
    }
}

static int linear_few_rows(const LinearW *L, const float *x, int n, int ldx, float *y, int ldy, float *acc,
                           size_t acc_elems) {
    int in = L->in, out = L->out;
    int T = (size_t)in * (size_t)out >= LIN_PAR_MIN ? omp_get_max_threads() : 1;
    size_t part = (size_t)n * (size_t)out;
    if (!L->out_major && part * (size_t)(T > 1 ? T : 1) > acc_elems) return -1; /* caller falls back to BLAS */
    if (T <= 1) { /* no parallel region at all: small matrices (the default pair) */
        if (L->out_major) {
            few_out_major(L, x, n, ldx, y, ldy, 0, out);
        } else {
            few_in_major(L, x, n, ldx, acc, 0, in);
            for (int r = 0; r < n; r++) memcpy(y + (size_t)r * ldy, acc + (size_t)r * out, (size_t)out * sizeof *y);
        }
        return 0;
    }
#pragma omp parallel num_threads(T)
    {
        int t = omp_get_thread_num(), nt = omp_get_num_threads();
        if (L->out_major) {
            few_out_major(L, x, n, ldx, y, ldy, (int)((long)out * t / nt), (int)((long)out * (t + 1) / nt));
        } else {
            few_in_major(L, x, n, ldx, acc + part * (size_t)t, (int)((long)in * t / nt), (int)((long)in * (t + 1) / nt));
#pragma omp barrier
            /* reduce: thread t sums columns [c0, c1) over every thread's partial */
            int c0 = (int)((long)out * t / nt), c1 = (int)((long)out * (t + 1) / nt);
            for (int r = 0; r < n; r++)
                for (int c = c0; c < c1; c++) {
                    float s = 0;
                    for (int u = 0; u < nt; u++) s += acc[part * (size_t)u + (size_t)r * out + c];
                    y[(size_t)r * ldy + c] = s;
                }
        }
    }
    return 0;
}

/* f32 weights: one BLAS call (sgemv for one row, sgemm for many), or linear_few_rows. */
static void linear_f32(const LinearW *L, const float *x, int n, int ldx, float *y, int ldy, float *tile,
                       size_t tile_elems) {
    const float *W = L->w;
    if (n > 1 && n <= LIN_FEW_ROWS && (size_t)L->in * (size_t)L->out >= LIN_FEW_MIN &&
        linear_few_rows(L, x, n, ldx, y, ldy, tile, tile_elems) == 0)
        return;
    if (n == 1 && ldy >= L->out) {
        if (L->out_major) /* y[out] = W[out,in] x */
            cblas_sgemv(CblasRowMajor, CblasNoTrans, L->out, L->in, 1.0f, W, L->in, x, 1, 0.0f, y, 1);
        else /* y[out] = W[in,out]^T x */
            cblas_sgemv(CblasRowMajor, CblasTrans, L->in, L->out, 1.0f, W, L->out, x, 1, 0.0f, y, 1);
        return;
    }
    if (L->out_major)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, L->out, L->in, 1.0f, x, ldx, W, L->in, 0.0f, y, ldy);
    else
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, L->out, L->in, 1.0f, x, ldx, W, L->out, 0.0f, y, ldy);
}

/* f16/bf16 weights, widened tile by tile.
 * out_major: tile = rows [r0, r1) of W[out, in] -> y[:, r0:r1] = x W_tile^T.
 * in-major:  tile = rows [r0, r1) of W[in, out] -> y += x[:, r0:r1] W_tile. */
static void linear_tiled(const LinearW *L, const float *x, int n, int ldx, float *y, int ldy, float *tile,
                         size_t tile_elems) {
    int row_len = L->out_major ? L->in : L->out;
    int n_rows = L->out_major ? L->out : L->in;
    int rows_per = (int)(tile_elems / (size_t)row_len);
    if (rows_per < 1) rows_per = 1; /* session sizes tile_elems >= the longest row */
    for (int r0 = 0; r0 < n_rows; r0 += rows_per) {
        int rt = n_rows - r0 < rows_per ? n_rows - r0 : rows_per;
        widen(L->w, L->dtype, (size_t)r0 * row_len, (size_t)rt * row_len, tile);
        if (n == 1 && L->out_major) /* y[r0:r0+rt] = tile[rt, in] x */
            cblas_sgemv(CblasRowMajor, CblasNoTrans, rt, L->in, 1.0f, tile, L->in, x, 1, 0.0f, y + r0, 1);
        else if (n == 1) /* y += tile[rt, out]^T x[r0:r0+rt] */
            cblas_sgemv(CblasRowMajor, CblasTrans, rt, L->out, 1.0f, tile, L->out, x + r0, 1, r0 == 0 ? 0.0f : 1.0f, y, 1);
        else if (L->out_major)
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, rt, L->in, 1.0f, x, ldx, tile, L->in, 0.0f, y + r0,
                        ldy);
        else
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, L->out, rt, 1.0f, x + r0, ldx, tile, L->out,
                        r0 == 0 ? 0.0f : 1.0f, y, ldy);
    }
}

void linear(const LinearW *L, const float *x, int n, int ldx, float *y, int ldy, float *tile, size_t tile_elems) {
    if (L->dtype == DT_F32)
        linear_f32(L, x, n, ldx, y, ldy, tile, tile_elems);
    else
        linear_tiled(L, x, n, ldx, y, ldy, tile, tile_elems);
    add_bias(y, n, L->out, ldy, L->bias);
}

void layernorm(const float *x, const float *g, const float *b, int n, int d, float eps, float *out) {
    for (int r = 0; r < n; r++) {
        const float *xr = x + (size_t)r * d;
        float *o = out + (size_t)r * d;
        double mean = 0, var = 0;
        for (int i = 0; i < d; i++) mean += xr[i];
        mean /= d;
        for (int i = 0; i < d; i++) var += (xr[i] - mean) * (xr[i] - mean);
        var /= d;
        float inv = (float)(1.0 / sqrt(var + eps));
        for (int i = 0; i < d; i++) o[i] = ((float)(xr[i] - mean) * inv) * g[i] + b[i];
    }
}

void rmsnorm(const float *x, const float *g, int n, int d, float eps, float *out) {
    for (int r = 0; r < n; r++) {
        const float *xr = x + (size_t)r * d;
        float *o = out + (size_t)r * d;
        double ss = 0;
        for (int i = 0; i < d; i++) ss += (double)xr[i] * xr[i];
        float inv = (float)(1.0 / sqrt(ss / d + eps));
        for (int i = 0; i < d; i++) o[i] = g[i] * (xr[i] * inv);
    }
}

/* 0.5 x (1 + tanh(u)) = x sigmoid(2u) = x / (1 + exp(-2u)), u = sqrt(2/pi) (x + 0.044715 x^3):
 * one expf instead of tanhf (which glibc computes through expm1f, 3x slower here). */
void gelu_tanh_inplace(float *x, size_t n) {
    const float c2 = 2.0f * 0.7978845608028654f;
    for (size_t i = 0; i < n; i++) {
        float v = x[i];
        x[i] = v / (1.0f + expf(-c2 * (v + 0.044715f * v * v * v)));
    }
}

void gelu_erf_inplace(float *x, size_t n) {
    for (size_t i = 0; i < n; i++) x[i] = 0.5f * x[i] * (1.0f + erff(x[i] * 0.70710678118654752f));
}

void swiglu_inplace(float *a, const float *b, size_t n) {
    for (size_t i = 0; i < n; i++) a[i] = a[i] / (1.0f + expf(-a[i])) * b[i];
}

void softmax_inplace(float *x, int n) {
    float mx = -INFINITY;
    for (int i = 0; i < n; i++) mx = x[i] > mx ? x[i] : mx;
    double sum = 0;
    for (int i = 0; i < n; i++) {
        float e = x[i] == -INFINITY ? 0.0f : expf(x[i] - mx);
        x[i] = e;
        sum += e;
    }
    float inv = (float)(1.0 / sum);
    for (int i = 0; i < n; i++) x[i] *= inv;
}

void rope_apply(float *vec, int n_heads, int hd, int stride_head, const float *cosr, const float *sinr) {
    int half = hd / 2;
    for (int h = 0; h < n_heads; h++) {
        float *v = vec + (size_t)h * stride_head;
        for (int i = 0; i < half; i++) {
            float a = v[i], b = v[i + half];
            v[i] = a * cosr[i] - b * sinr[i];
            v[i + half] = b * cosr[i] + a * sinr[i];
        }
    }
}
