#include "kernels.h"

#include <pthread.h>
#include <sched.h>

#include <cblas.h>
#include <math.h>
#include <string.h>
#include <omp.h>
#if (defined(__x86_64__) && defined(__GNUC__)) || (defined(__F16C__) && defined(__AVX__))
#include <immintrin.h>
#endif

/* A Q8_0 panel block (32 inputs x KERNEL_PANEL outputs): the outputs' half scales, then the quants. */
#define Q8_PANEL_SCALES (KERNEL_PANEL * 2)
#define Q8_PANEL_BLOCK (Q8_PANEL_SCALES + Q8_0_BLOCK * KERNEL_PANEL)

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

static uint16_t float_to_bf16(float f) {
    uint32_t b;
    memcpy(&b, &f, 4);
    b += 0x7fff + ((b >> 16) & 1); /* round to nearest even (finite values) */
    return (uint16_t)(b >> 16);
}

static uint16_t float_to_half(float f) {
    uint32_t b;
    memcpy(&b, &f, 4);
    uint32_t sign = (b >> 16) & 0x8000;
    int32_t exp = (int32_t)((b >> 23) & 0xff) - 127 + 15;
    uint32_t man = b & 0x7fffff;
    if (exp >= 31) return (uint16_t)(sign | 0x7c00);
    if (exp <= 0) {
        if (exp < -10) return (uint16_t)sign;
        man |= 0x800000;
        uint32_t shift = (uint32_t)(14 - exp);
        uint32_t half = man >> shift, rem = man & ((1u << shift) - 1), mid = 1u << (shift - 1);
        if (rem > mid || (rem == mid && (half & 1))) half++;
        return (uint16_t)(sign | half);
    }
    uint32_t h = sign | ((uint32_t)exp << 10) | (man >> 13);
    uint32_t rem = man & 0x1fff;
    if (rem > 0x1000 || (rem == 0x1000 && (h & 1))) h++; /* may carry into the exponent: correct */
    return (uint16_t)h;
}

/* ggml's quantize_row_q8_0_ref: n (a multiple of Q8_0_BLOCK) floats -> n / Q8_0_BLOCK blocks. The
 * products x id are plain f32 multiplies (no contraction: nothing here is fused) and roundf rounds
 * halves away from zero, as ggml's reference does. */
static void quantize_q8_0(const float *x, size_t n, BlockQ8_0 *y) {
    for (size_t b = 0; b < n / Q8_0_BLOCK; b++) {
        const float *xb = x + b * Q8_0_BLOCK;
        float amax = 0.0f;
        for (int j = 0; j < Q8_0_BLOCK; j++) amax = fmaxf(amax, fabsf(xb[j]));
        const float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
        y[b].d = float_to_half(d);
        for (int j = 0; j < Q8_0_BLOCK; j++) y[b].qs[j] = (int8_t)roundf(xb[j] * id);
    }
}

void narrow(const float *src, size_t n, DType t, void *dst) {
    uint16_t *h = dst;
    switch (t) {
    case DT_Q8_0: quantize_q8_0(src, n, dst); break;
    case DT_F32: memmove(dst, src, n * sizeof *src); break;
    case DT_F16: for (size_t i = 0; i < n; i++) h[i] = float_to_half(src[i]); break;
    case DT_BF16: for (size_t i = 0; i < n; i++) h[i] = float_to_bf16(src[i]); break;
    }
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
    case DT_Q8_0: { /* element e is quant e % 32 of block e / 32, times that block's scale */
        const BlockQ8_0 *blk = src;
        for (size_t i = 0; i < n; i++) {
            size_t e = off + i;
            const BlockQ8_0 *b = &blk[e / Q8_0_BLOCK];
            dst[i] = half_to_float(b->d) * (float)b->qs[e % Q8_0_BLOCK];
        }
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

/* ---- few-row products y[n, out] = x[n, in] W^T for out-major W[out, in], n <= KERNEL_MAX_ROWS ----
 * Batch-1 decode (n = 1) and speculative verification (n = gamma + 1) are matrix-vector-like:
 * BLAS sgemm packs the whole weight matrix for a handful of rows (3-5x a matrix-vector product).
 * Here each weight row is read from memory once, in storage order, and used for every x row while
 * it sits in registers: a block of O weight rows x R input rows keeps O*R vector accumulators
 * (R <= 6; n = 7, 8 run as two row groups over the same weights, which are then in L1). The ISA
 * variants are compiled with target attributes and chosen at run time, so a portable build still
 * gets them. */
/* OpenMP only for matrices big enough (1 MB of f32, ~20 us of streaming) that a parallel region's
 * barrier (~1-2 us on idle cores) is noise; GPT-Neo's 768 x 768 projections (2.4 MB) need it. */
#define LIN_PAR_MIN ((size_t)1 << 18)

/* Scalar reference: y[r, o] for o in [o0, o1). */
static void rows_scalar(const float *W, int in, const float *x, int n, int ldx, float *y, int ldy, int o0, int o1) {
    for (int o = o0; o < o1; o++) {
        const float *w = W + (size_t)o * in;
        for (int r = 0; r < n; r++) y[(size_t)r * ldy + o] = dot8(x + (size_t)r * ldx, w, in);
    }
}

#if defined(__x86_64__) && defined(__GNUC__)
#define SP_HAVE_X86_KERNELS 1

/* One block: outputs [o, o + O) for R rows of x. acc[a][b] = sum over lanes of W[o + a, i] x[b, i].
 * WT: stored weight element (float, or uint16_t for bf16/f16 widened by LDW in registers). */
#define SP_BLOCK(NAME, TGT, WT, VT, LANES, LDW, WIDEN1, LD, FMA, ZERO, HSUM, R, O)                  \
    __attribute__((target(TGT))) static void NAME(const void *Wv, int in, const float *x, int ldx, float *y, \
                                                  int ldy, int o) {                                  \
        const WT *W = Wv;                                                                            \
        VT acc[O][R];                                                                                \
        _Pragma("GCC unroll 8") for (int a = 0; a < O; a++)                                           \
            _Pragma("GCC unroll 8") for (int b = 0; b < R; b++) acc[a][b] = ZERO();                  \
        const WT *w0 = W + (size_t)o * in;                                                           \
        int i = 0;                                                                                   \
        for (; i + LANES <= in; i += LANES) {                                                        \
            VT wv[O];                                                                                \
            _Pragma("GCC unroll 8") for (int a = 0; a < O; a++) wv[a] = LDW(w0 + (size_t)a * in + i); \
            /* the next block's lines at the same offset: one block of lookahead (never faults) */    \
            _Pragma("GCC unroll 8") for (int a = 0; a < O; a++)                                       \
                _mm_prefetch((const char *)(w0 + (size_t)(O + a) * in + i), _MM_HINT_T0);            \
            _Pragma("GCC unroll 8") for (int b = 0; b < R; b++) {                                    \
                VT xv = LD(x + (size_t)b * ldx + i);                                                 \
                _Pragma("GCC unroll 8") for (int a = 0; a < O; a++) acc[a][b] = FMA(wv[a], xv, acc[a][b]); \
            }                                                                                        \
        }                                                                                            \
        for (int a = 0; a < O; a++)                                                                  \
            for (int b = 0; b < R; b++) {                                                            \
                float s = HSUM(acc[a][b]);                                                           \
                for (int j = i; j < in; j++) s += WIDEN1(w0[(size_t)a * in + j]) * x[(size_t)b * ldx + j]; \
                y[(size_t)b * ldy + o + a] = s;                                                      \
            }                                                                                        \
    }

typedef void (*BlockFn)(const void *W, int in, const float *x, int ldx, float *y, int ldy, int o);

/* DEF(R, O) for R = 1..6, and the table {NULL, blk_P_r1_oO, ..., blk_P_r6_oO} indexed by R. */
#define SP_FOR_ROWS(DEF, O) DEF(1, O) DEF(2, O) DEF(3, O) DEF(4, O) DEF(5, O) DEF(6, O)
#define SP_ROW_TABLE(P, O)                                                                                 \
    { NULL, blk_##P##_r1_o##O, blk_##P##_r2_o##O, blk_##P##_r3_o##O, blk_##P##_r4_o##O, blk_##P##_r5_o##O, \
      blk_##P##_r6_o##O }

__attribute__((target("avx2,fma"))) static inline float hsum8(__m256 v) {
    __m128 a = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    a = _mm_add_ps(a, _mm_movehl_ps(a, a));
    a = _mm_add_ss(a, _mm_movehdup_ps(a));
    return _mm_cvtss_f32(a);
}
__attribute__((target("avx512f"))) static inline float hsum16(__m512 v) { return _mm512_reduce_add_ps(v); }
/* 8 stored 16-bit weights -> 8 floats: bf16 is the high half of an f32; f16 by F16C (exact). */
__attribute__((target("avx2,fma"))) static inline __m256 ld_bf16x8(const uint16_t *p) {
    __m256i v = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)p));
    return _mm256_castsi256_ps(_mm256_slli_epi32(v, 16));
}
__attribute__((target("avx2,fma,f16c"))) static inline __m256 ld_f16x8(const uint16_t *p) {
    return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p));
}
static inline float id_f32(float v) { return v; }

/* AVX2 + FMA: 16 ymm registers -> O*R + O + 1 <= 16: O = 2 for R <= 6 (O = 4 for one row). */
#define SP_AVX2(R, O)                                                                                      \
    SP_BLOCK(blk_avx2_r##R##_o##O, "avx2,fma", float, __m256, 8, _mm256_loadu_ps, id_f32, _mm256_loadu_ps,      \
             _mm256_fmadd_ps, _mm256_setzero_ps, hsum8, R, O)
SP_AVX2(1, 4) SP_FOR_ROWS(SP_AVX2, 2) SP_FOR_ROWS(SP_AVX2, 1)
/* AVX-512: 32 zmm registers -> O = 4 for R <= 6 (24 + 4 + 1), O = 8 for one row. Measured on the
 * 2-core AMD EPYC here (huge-page weights, 64-byte aligned x): verify 5 / 1 rows of a 3072 x 768
 * matrix 1.43x and 768 x 3072 1.30x, against 1.37x / 1.59x with the AVX2 O = 2 blocks. */
#define SP_AVX512(R, O)                                                                                    \
    SP_BLOCK(blk_avx512_r##R##_o##O, "avx512f", float, __m512, 16, _mm512_loadu_ps, id_f32, _mm512_loadu_ps,    \
             _mm512_fmadd_ps, _mm512_setzero_ps, hsum16, R, O)
SP_FOR_ROWS(SP_AVX512, 4) SP_FOR_ROWS(SP_AVX512, 1)

/* One row, 8 outputs (batch-1 decode): the 8 accumulators are reduced together (halves, then a
 * transpose-add) instead of one horizontal sum each, which cost ~1/3 of the block on short rows
 * (the default draft: in = 96). PF: prefetch the next block (off for cache-resident matrices). */
#define SP_AVX512_R1O8(NAME, PF)                                                                           \
    __attribute__((target("avx512f"))) static void NAME(const void *Wv, int in, const float *x, int ldx,    \
                                                        float *y, int ldy, int o) {                        \
        (void)ldx;                                                                                         \
        (void)ldy;                                                                                         \
        const float *w0 = (const float *)Wv + (size_t)o * in;                                              \
        __m512 acc[8];                                                                                     \
        _Pragma("GCC unroll 8") for (int a = 0; a < 8; a++) acc[a] = _mm512_setzero_ps();                  \
        int i = 0;                                                                                         \
        for (; i + 16 <= in; i += 16) {                                                                    \
            __m512 xv = _mm512_loadu_ps(x + i);                                                            \
            _Pragma("GCC unroll 8") for (int a = 0; a < 8; a++) {                                          \
                acc[a] = _mm512_fmadd_ps(_mm512_loadu_ps(w0 + (size_t)a * in + i), xv, acc[a]);            \
                if (PF) _mm_prefetch((const char *)(w0 + (size_t)(8 + a) * in + i), _MM_HINT_T0);         \
            }                                                                                              \
        }                                                                                                  \
        __m256 h[8];                                                                                       \
        _Pragma("GCC unroll 8") for (int a = 0; a < 8; a++)                                                \
            h[a] = _mm256_add_ps(_mm512_castps512_ps256(acc[a]),                                          \
                                 _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(acc[a]), 1)));   \
        __m256 s01 = _mm256_hadd_ps(h[0], h[1]), s23 = _mm256_hadd_ps(h[2], h[3]);                        \
        __m256 s45 = _mm256_hadd_ps(h[4], h[5]), s67 = _mm256_hadd_ps(h[6], h[7]);                        \
        __m256 lo = _mm256_hadd_ps(s01, s23), hi = _mm256_hadd_ps(s45, s67);                               \
        /* lo = [o0..o3 of the low 128-bit lanes | o0..o3 of the high], hi likewise for o4..o7 */          \
        __m256 sum = _mm256_add_ps(_mm256_permute2f128_ps(lo, hi, 0x20), _mm256_permute2f128_ps(lo, hi, 0x31)); \
        float out[8];                                                                                      \
        _mm256_storeu_ps(out, sum);                                                                        \
        for (int a = 0; a < 8; a++) {                                                                      \
            for (int j = i; j < in; j++) out[a] += w0[(size_t)a * in + j] * x[j];                          \
            y[o + a] = out[a];                                                                             \
        }                                                                                                  \
    }
SP_AVX512_R1O8(blk_avx512_r1_o8, 1)
SP_AVX512_R1O8(blk_avx512_r1_o8_np, 0)

/* 16-bit weights (AVX2 + FMA; f16 also F16C): half the bytes per weight, widened in registers. */
#define SP_BF16(R, O)                                                                                      \
    SP_BLOCK(blk_bf16_r##R##_o##O, "avx2,fma", uint16_t, __m256, 8, ld_bf16x8, bf16_to_float, _mm256_loadu_ps,  \
             _mm256_fmadd_ps, _mm256_setzero_ps, hsum8, R, O)
#define SP_F16(R, O)                                                                                       \
    SP_BLOCK(blk_f16_r##R##_o##O, "avx2,fma,f16c", uint16_t, __m256, 8, ld_f16x8, half_to_float, _mm256_loadu_ps, \
             _mm256_fmadd_ps, _mm256_setzero_ps, hsum8, R, O)
SP_BF16(1, 4) SP_FOR_ROWS(SP_BF16, 2) SP_FOR_ROWS(SP_BF16, 1)
SP_F16(1, 4) SP_FOR_ROWS(SP_F16, 2) SP_FOR_ROWS(SP_F16, 1)

/* Q8_0 weights (AVX-512F): each block of 32 quants is widened in registers (int8 -> int32 -> f32) and
 * multiplied by its half scale, then used for every x row: the same arithmetic as the widened
 * reference (d q exactly, then products summed in f32). A weight row is in / 32 blocks of 34 bytes. */
__attribute__((target("avx512f,f16c"))) static inline __m512 q8_half(const int8_t *q, __m512 d) {
    return _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)q))), d);
}
__attribute__((target("avx512f,f16c"))) static inline __m512 q8_scale(uint16_t h) {
    return _mm512_set1_ps(_mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(h))));
}
#define SP_Q8(R, O)                                                                                        \
    __attribute__((target("avx512f,f16c"))) static void blk_q8_r##R##_o##O(const void *Wv, int in, const float *x, \
                                                                          int ldx, float *y, int ldy, int o) { \
        int nb = in / Q8_0_BLOCK;                                                                          \
        const BlockQ8_0 *w0 = (const BlockQ8_0 *)Wv + (size_t)o * nb;                                      \
        __m512 acc[O][R];                                                                                  \
        _Pragma("GCC unroll 8") for (int a = 0; a < O; a++)                                                \
            _Pragma("GCC unroll 8") for (int b = 0; b < R; b++) acc[a][b] = _mm512_setzero_ps();          \
        for (int k = 0; k < nb; k++) {                                                                     \
            __m512 lo[O], hi[O];                                                                           \
            _Pragma("GCC unroll 8") for (int a = 0; a < O; a++) {                                          \
                const BlockQ8_0 *blk = w0 + (size_t)a * nb + k;                                            \
                __m512 d = q8_scale(blk->d);                                                               \
                lo[a] = q8_half(blk->qs, d);                                                               \
                hi[a] = q8_half(blk->qs + 16, d);                                                          \
                _mm_prefetch((const char *)(blk + (size_t)O * nb), _MM_HINT_T0);                          \
            }                                                                                              \
            _Pragma("GCC unroll 8") for (int b = 0; b < R; b++) {                                          \
                const float *xb = x + (size_t)b * ldx + (size_t)k * Q8_0_BLOCK;                           \
                __m512 xl = _mm512_loadu_ps(xb), xh = _mm512_loadu_ps(xb + 16);                            \
                _Pragma("GCC unroll 8") for (int a = 0; a < O; a++)                                        \
                    acc[a][b] = _mm512_fmadd_ps(hi[a], xh, _mm512_fmadd_ps(lo[a], xl, acc[a][b]));        \
            }                                                                                              \
        }                                                                                                  \
        for (int a = 0; a < O; a++)                                                                        \
            for (int b = 0; b < R; b++) y[(size_t)b * ldy + o + a] = _mm512_reduce_add_ps(acc[a][b]);     \
    }
SP_Q8(1, 4) SP_FOR_ROWS(SP_Q8, 2) SP_FOR_ROWS(SP_Q8, 1)

typedef struct BlockSet {
    int o_one, o_many;        /* outputs per block for n = 1 and for n >= 2 */
    BlockFn one;              /* R = 1, O = o_one */
    BlockFn one_small;        /* the same without prefetch, for cache-resident matrices (or NULL) */
    BlockFn many[7], tail[7]; /* [R]: O = o_many and O = 1, R = 1..6 */
} BlockSet;

static const BlockSet kAvx2 = {4, 2, blk_avx2_r1_o4, NULL, SP_ROW_TABLE(avx2, 2), SP_ROW_TABLE(avx2, 1)};
static const BlockSet kAvx512 = {8, 4, blk_avx512_r1_o8, blk_avx512_r1_o8_np, SP_ROW_TABLE(avx512, 4),
                                 SP_ROW_TABLE(avx512, 1)};
static const BlockSet kBf16 = {4, 2, blk_bf16_r1_o4, NULL, SP_ROW_TABLE(bf16, 2), SP_ROW_TABLE(bf16, 1)};
static const BlockSet kF16 = {4, 2, blk_f16_r1_o4, NULL, SP_ROW_TABLE(f16, 2), SP_ROW_TABLE(f16, 1)};
static const BlockSet kQ8 = {4, 2, blk_q8_r1_o4, NULL, SP_ROW_TABLE(q8, 2), SP_ROW_TABLE(q8, 1)};

/* Rows [0, n) as at most two groups of <= 6 (n <= 8), every group over the same output block. */
static void rows_blocked(const BlockSet *k, const void *W, int in, const float *x, int n, int ldx, float *y, int ldy,
                         int o0, int o1) {
    int g0 = n <= 6 ? n : (n + 1) / 2, g1 = n - g0; /* group sizes */
    int O = n == 1 ? k->o_one : k->o_many;
    /* a slice under 256 kB stays in L2 between calls: prefetching it only costs issue slots */
    int small = (size_t)in * (size_t)(o1 - o0) * sizeof(float) <= ((size_t)256 << 10);
    BlockFn f0 = n == 1 ? (small && k->one_small ? k->one_small : k->one) : k->many[g0], f1 = g1 ? k->many[g1] : NULL;
    int o = o0;
    for (; o + O <= o1; o += O) {
        f0(W, in, x, ldx, y, ldy, o);
        if (f1) f1(W, in, x + (size_t)g0 * ldx, ldx, y + (size_t)g0 * ldy, ldy, o);
    }
    for (; o < o1; o++) {
        k->tail[g0](W, in, x, ldx, y, ldy, o);
        if (g1) k->tail[g1](W, in, x + (size_t)g0 * ldx, ldx, y + (size_t)g0 * ldy, ldy, o);
    }
}
#endif

#ifdef SP_HAVE_X86_KERNELS
/* One pass of the panel kernel: R input rows against one panel (KERNEL_PANEL = 4 x 16 outputs);
 * writes y[r, 0 .. nout) (the caller offsets y to the panel's first output). The panel holds f32,
 * or bf16 / f16 widened to f32 in registers (exact: a bf16 is the top half of its f32; vcvtph2ps), so
 * a 16-bit panel streams half the bytes for the same arithmetic. LOAD(w, v) gives the 16 floats of
 * panel-row elements 16 v .. 16 v + 15; ROW_BYTES is one panel row's size (the prefetch stride). */
#define PNL_LOAD_F32(w, v) _mm512_load_ps((const float *)(w) + 16 * (v))
#define PNL_LOAD_BF16(w, v)                                                                                 \
    _mm512_castsi512_ps(_mm512_slli_epi32(                                                                  \
        _mm512_cvtepu16_epi32(_mm256_load_si256((const __m256i *)((const uint16_t *)(w) + 16 * (v)))), 16))
#define PNL_LOAD_F16(w, v) _mm512_cvtph_ps(_mm256_load_si256((const __m256i *)((const uint16_t *)(w) + 16 * (v))))
/* the lanes of the 16 floats from i on that lie below n (a masked tail) */
static inline __mmask16 lanes_below(size_t i, size_t n) {
    return n - i >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - i)) - 1u);
}

/* The end of every panel pass: acc[r][v] holds row r's outputs 16 v .. 16 v + 15; stores y[r, 0 .. nout)
 * (a short last panel masked). Inlined into each pass, whose rows count is a compile-time constant. */
__attribute__((target("avx512f"), always_inline)) static inline void panel_store(float *y, int ldy, int nout, int rows,
                                                                                 __m512 (*acc)[4]) {
    for (int r = 0; r < rows; r++)
        for (int v = 0; v < 4; v++) {
            if (nout <= 16 * v) break;
            _mm512_mask_storeu_ps(y + (size_t)r * ldy + 16 * v, lanes_below((size_t)(16 * v), (size_t)nout), acc[r][v]);
        }
}
#define SP_PANEL(NAME, R, ELEM, LOAD)                                                                       \
    __attribute__((target("avx512f"))) static void NAME##_r##R(const void *panel_v, int in, const float *x, int ldx, \
                                                              float *y, int ldy, int nout) {                \
        const ELEM *panel = panel_v;                                                                        \
        __m512 acc[R][4];                                                                                   \
        _Pragma("GCC unroll 16") for (int r = 0; r < R; r++)                                               \
            _Pragma("GCC unroll 4") for (int v = 0; v < 4; v++) acc[r][v] = _mm512_setzero_ps();          \
        for (int i = 0; i < in; i++) {                                                                      \
            const ELEM *w = panel + (size_t)i * KERNEL_PANEL;                                               \
            __m512 wv[4];                                                                                   \
            _Pragma("GCC unroll 4") for (int v = 0; v < 4; v++) wv[v] = LOAD(w, v);                        \
            /* 16 panel rows ahead; prefetching past the end never faults */                               \
            for (size_t b = 0; b < KERNEL_PANEL * sizeof(ELEM); b += 64)                                    \
                _mm_prefetch((const char *)(w + 16 * KERNEL_PANEL) + b, _MM_HINT_T0);                      \
            _Pragma("GCC unroll 16") for (int r = 0; r < R; r++) {                                         \
                __m512 xb = _mm512_set1_ps(x[(size_t)r * ldx + i]);                                         \
                _Pragma("GCC unroll 4") for (int v = 0; v < 4; v++) acc[r][v] = _mm512_fmadd_ps(wv[v], xb, acc[r][v]); \
            }                                                                                               \
        }                                                                                                   \
        panel_store(y, ldy, nout, R, acc);                                                                  \
    }
#define SP_PANEL_ALL(NAME, ELEM, LOAD)                                                                      \
    SP_PANEL(NAME, 1, ELEM, LOAD) SP_PANEL(NAME, 2, ELEM, LOAD) SP_PANEL(NAME, 3, ELEM, LOAD)               \
    SP_PANEL(NAME, 4, ELEM, LOAD) SP_PANEL(NAME, 5, ELEM, LOAD) SP_PANEL(NAME, 6, ELEM, LOAD)               \
    SP_PANEL(NAME, 7, ELEM, LOAD) SP_PANEL(NAME, 8, ELEM, LOAD) SP_PANEL(NAME, 9, ELEM, LOAD)
/* Q8_0 panels: per block of 32 inputs, the 64 outputs' half scales (128 bytes), then 32 panel rows of
 * 64 int8 quants (one cache line each): 2176 bytes, a sequential stream like the other panels. Each
 * quant vector is widened and multiplied by its outputs' scales (d q exactly), then broadcast-FMA'd. */
#define SP_PANEL_Q8(R)                                                                                      \
    __attribute__((target("avx512f"))) static void pnl_q8_r##R(const void *panel_v, int in, const float *x, int ldx, \
                                                               float *y, int ldy, int nout) {               \
        const unsigned char *panel = panel_v;                                                               \
        __m512 acc[R][4];                                                                                   \
        _Pragma("GCC unroll 16") for (int r = 0; r < R; r++)                                               \
            _Pragma("GCC unroll 4") for (int v = 0; v < 4; v++) acc[r][v] = _mm512_setzero_ps();          \
        for (int k = 0; k < in / Q8_0_BLOCK; k++) {                                                         \
            const unsigned char *blk = panel + (size_t)k * Q8_PANEL_BLOCK;                                  \
            __m512 dv[4];                                                                                   \
            _Pragma("GCC unroll 4") for (int v = 0; v < 4; v++) dv[v] =                                     \
                _mm512_cvtph_ps(_mm256_load_si256((const __m256i *)(blk + 32 * v)));                        \
            const int8_t *qs = (const int8_t *)(blk + Q8_PANEL_SCALES);                                     \
            const float *xk = x + (size_t)k * Q8_0_BLOCK;                                                   \
            for (int i = 0; i < Q8_0_BLOCK; i++) {                                                          \
                const int8_t *w = qs + (size_t)i * KERNEL_PANEL;                                            \
                __m512 wv[4];                                                                               \
                _Pragma("GCC unroll 4") for (int v = 0; v < 4; v++) wv[v] = _mm512_mul_ps(                 \
                    _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_load_si128((const __m128i *)(w + 16 * v)))), dv[v]); \
                _mm_prefetch((const char *)w + 1024, _MM_HINT_T0); /* 16 panel rows ahead */               \
                _Pragma("GCC unroll 16") for (int r = 0; r < R; r++) {                                     \
                    __m512 xb = _mm512_set1_ps(xk[(size_t)r * ldx + i]);                                    \
                    _Pragma("GCC unroll 4") for (int v = 0; v < 4; v++) acc[r][v] = _mm512_fmadd_ps(wv[v], xb, acc[r][v]); \
                }                                                                                           \
            }                                                                                               \
        }                                                                                                   \
        panel_store(y, ldy, nout, R, acc);                                                                  \
    }
SP_PANEL_Q8(1) SP_PANEL_Q8(2) SP_PANEL_Q8(3) SP_PANEL_Q8(4) SP_PANEL_Q8(5) SP_PANEL_Q8(6) SP_PANEL_Q8(7)
SP_PANEL_Q8(8) SP_PANEL_Q8(9)
SP_PANEL_ALL(pnl, float, PNL_LOAD_F32)
SP_PANEL_ALL(pnl_bf16, uint16_t, PNL_LOAD_BF16)
SP_PANEL_ALL(pnl_f16, uint16_t, PNL_LOAD_F16)
typedef void (*PanelFn)(const void *panel, int in, const float *x, int ldx, float *y, int ldy, int nout);
#define SP_PANEL_TABLE(NAME) {NULL, NAME##_r1, NAME##_r2, NAME##_r3, NAME##_r4, NAME##_r5, NAME##_r6, NAME##_r7, NAME##_r8, NAME##_r9}
static const PanelFn kPanelPass[DT_COUNT][KERNEL_PANEL_ROWS + 1] = {
    SP_PANEL_TABLE(pnl), SP_PANEL_TABLE(pnl_f16), SP_PANEL_TABLE(pnl_bf16), SP_PANEL_TABLE(pnl_q8)}; /* by DType */
#endif

int kernel_panel_supported(void) {
#ifdef SP_HAVE_X86_KERNELS
    return kernel_isa_supported(ISA_AVX512);
#else
    return 0;
#endif
}

size_t panel_bytes(DType dt, int in, int out) {
    return (size_t)((out + KERNEL_PANEL - 1) / KERNEL_PANEL) * dtype_row_bytes(dt, (size_t)KERNEL_PANEL * (size_t)in);
}

/* Q8_0 panels from out-major Q8_0 rows (see SP_PANEL_Q8); outputs past `out` get scale 0, quants 0. */
static void panel_pack_q8(const BlockQ8_0 *W, int in, int out, unsigned char *dst) {
    int nb = in / Q8_0_BLOCK, n_panels = (out + KERNEL_PANEL - 1) / KERNEL_PANEL;
    for (int p = 0; p < n_panels; p++)
        for (int k = 0; k < nb; k++) {
            unsigned char *blk = dst + ((size_t)p * nb + (size_t)k) * Q8_PANEL_BLOCK;
            uint16_t *d = (uint16_t *)blk;
            int8_t *qs = (int8_t *)(blk + Q8_PANEL_SCALES);
            for (int j = 0; j < KERNEL_PANEL; j++) {
                int o = p * KERNEL_PANEL + j;
                const BlockQ8_0 *b = o < out ? &W[(size_t)o * nb + k] : NULL;
                d[j] = b ? b->d : 0;
                for (int i = 0; i < Q8_0_BLOCK; i++) qs[(size_t)i * KERNEL_PANEL + j] = b ? b->qs[i] : 0;
            }
        }
}

void panel_pack(const void *W, DType dt, int in, int out, int out_major, void *panels) {
    if (dt == DT_Q8_0) { /* Q8_0 is only ever stored out-major (its blocks run along a row) */
        panel_pack_q8(W, in, out, panels);
        return;
    }
    int n_panels = (out + KERNEL_PANEL - 1) / KERNEL_PANEL;
    size_t es = dt == DT_F32 ? sizeof(float) : sizeof(uint16_t);
    const char *src = W;
    char *dst = panels;
    for (int p = 0; p < n_panels; p++)
        for (int i = 0; i < in; i++)
            for (int j = 0; j < KERNEL_PANEL; j++) {
                int o = p * KERNEL_PANEL + j;
                char *d = dst + (((size_t)p * in + (size_t)i) * KERNEL_PANEL + (size_t)j) * es;
                if (o >= out) memset(d, 0, es); /* 0.0 in every dtype */
                else memcpy(d, src + (out_major ? (size_t)o * in + i : (size_t)i * out + o) * es, es);
            }
}

void matmul_panels(const void *panels, DType dt, int in, int out, const float *x, int n, int ldx, float *y, int ldy,
                   int p0, int p1) {
#ifdef SP_HAVE_X86_KERNELS
    size_t panel_size = dtype_row_bytes(dt, (size_t)KERNEL_PANEL * (size_t)in);
    const PanelFn *pass = kPanelPass[dt];
    int passes = (n + KERNEL_PANEL_ROWS - 1) / KERNEL_PANEL_ROWS; /* balanced: 10 rows -> 5 + 5 */
    for (int p = p0; p < p1; p++) {
        int nout = out - p * KERNEL_PANEL < KERNEL_PANEL ? out - p * KERNEL_PANEL : KERNEL_PANEL;
        const char *panel = (const char *)panels + (size_t)p * panel_size;
        for (int g = 0, r0 = 0; g < passes; g++) { /* the panel stays in L2 between passes */
            int rows = (n - r0 + (passes - g) - 1) / (passes - g);
            pass[rows](panel, in, x + (size_t)r0 * ldx, ldx, y + (size_t)r0 * ldy + (size_t)p * KERNEL_PANEL, ldy, nout);
            r0 += rows;
        }
    }
#else
    (void)panels, (void)dt, (void)in, (void)out, (void)x, (void)n, (void)ldx, (void)y, (void)ldy, (void)p0, (void)p1;
#endif
}

/* ---- bf16 weights by the CPU's bf16 dot products (AVX512_BF16 vdpbf16ps) ----
 * vdpbf16ps multiplies bf16 pairs and adds both products to an f32 lane: the activations must be bf16
 * too, so each x row is rounded to bf16 (to nearest even, as llama.cpp rounds them) once per product
 * into caller scratch, zero-padded to a multiple of BF16_DOT_PAD. */
void round_rows_bf16(const float *x, int n, int ldx, int in, uint16_t *xb, int ldxb) {
    for (int r = 0; r < n; r++) {
        const float *xr = x + (size_t)r * ldx;
        uint16_t *o = xb + (size_t)r * ldxb;
        for (int i = 0; i < in; i++) o[i] = float_to_bf16(xr[i]);
        for (int i = in; i < ldxb; i++) o[i] = 0;
    }
}

int bf16_dot_stride(int in) { return (in + BF16_DOT_PAD - 1) / BF16_DOT_PAD * BF16_DOT_PAD; }

size_t panel_bytes_bf16_dot(int in, int out) {
    return (size_t)((out + KERNEL_PANEL - 1) / KERNEL_PANEL) * KERNEL_PANEL * (size_t)((in + 1) / 2 * 2) * 2;
}

/* Pair panels: pair k of a panel holds, for j < KERNEL_PANEL, W[p P + j, 2k] and W[p P + j, 2k + 1]
 * side by side (256 bytes, 4 vectors); an odd last input and outputs past `out` are 0. */
void panel_pack_bf16_dot(const uint16_t *W, int in, int out, int out_major, uint16_t *panels) {
    int n_panels = (out + KERNEL_PANEL - 1) / KERNEL_PANEL, pairs = (in + 1) / 2;
    for (int p = 0; p < n_panels; p++)
        for (int k = 0; k < pairs; k++)
            for (int j = 0; j < KERNEL_PANEL; j++)
                for (int t = 0; t < 2; t++) {
                    int o = p * KERNEL_PANEL + j, i = 2 * k + t;
                    uint16_t *d = panels + (((size_t)p * pairs + (size_t)k) * KERNEL_PANEL + (size_t)j) * 2 + t;
                    *d = o < out && i < in ? W[out_major ? (size_t)o * in + i : (size_t)i * out + o] : 0;
                }
}

/* Scalar reference: sum over i of bf16 products in f32 (tests; CPUs without AVX512_BF16). */
static void rows_scalar_bf16_dot(const uint16_t *W, int in, const uint16_t *xb, int n, int ldxb, float *y, int ldy,
                                 int o0, int o1) {
    for (int o = o0; o < o1; o++)
        for (int r = 0; r < n; r++) {
            float s = 0;
            for (int i = 0; i < in; i++) s += bf16_to_float(W[(size_t)o * in + i]) * bf16_to_float(xb[(size_t)r * ldxb + i]);
            y[(size_t)r * ldy + o] = s;
        }
}

#ifdef SP_HAVE_X86_KERNELS
#define SP_BF16DOT_TGT "avx512f,avx512bw,avx512bf16"
/* Few rows: a block of O weight rows x R activation rows, 32 inputs per step (the last step masked). */
#define SP_BF16DOT(R, O)                                                                                    \
    __attribute__((target(SP_BF16DOT_TGT))) static void bd_r##R##_o##O(const uint16_t *W, int in, const uint16_t *xb, \
                                                                      int ldxb, float *y, int ldy, int o) {    \
        const uint16_t *w0 = W + (size_t)o * in;                                                            \
        __m512 acc[O][R];                                                                                   \
        _Pragma("GCC unroll 8") for (int a = 0; a < O; a++)                                                 \
            _Pragma("GCC unroll 8") for (int b = 0; b < R; b++) acc[a][b] = _mm512_setzero_ps();           \
        for (int i = 0; i < in; i += 32) {                                                                  \
            __mmask32 m = in - i >= 32 ? (__mmask32)0xFFFFFFFFu : (__mmask32)((1u << (in - i)) - 1);       \
            __m512i wv[O];                                                                                  \
            _Pragma("GCC unroll 8") for (int a = 0; a < O; a++) {                                           \
                wv[a] = _mm512_maskz_loadu_epi16(m, w0 + (size_t)a * in + i);                               \
                _mm_prefetch((const char *)(w0 + (size_t)(O + a) * in + i), _MM_HINT_T0);                  \
            }                                                                                               \
            _Pragma("GCC unroll 8") for (int b = 0; b < R; b++) {                                           \
                __m512i xv = _mm512_loadu_si512(xb + (size_t)b * ldxb + i);                                 \
                _Pragma("GCC unroll 8") for (int a = 0; a < O; a++)                                         \
                    acc[a][b] = _mm512_dpbf16_ps(acc[a][b], (__m512bh)wv[a], (__m512bh)xv);                 \
            }                                                                                               \
        }                                                                                                   \
        for (int a = 0; a < O; a++)                                                                         \
            for (int b = 0; b < R; b++) y[(size_t)b * ldy + o + a] = _mm512_reduce_add_ps(acc[a][b]);      \
    }
SP_BF16DOT(1, 8) SP_BF16DOT(1, 1)
SP_BF16DOT(2, 4) SP_BF16DOT(3, 4) SP_BF16DOT(4, 4) SP_BF16DOT(5, 4) SP_BF16DOT(6, 4)
SP_BF16DOT(2, 1) SP_BF16DOT(3, 1) SP_BF16DOT(4, 1) SP_BF16DOT(5, 1) SP_BF16DOT(6, 1)
typedef void (*BdFn)(const uint16_t *W, int in, const uint16_t *xb, int ldxb, float *y, int ldy, int o);
static const BdFn kBdMany[7] = {NULL, bd_r1_o8, bd_r2_o4, bd_r3_o4, bd_r4_o4, bd_r5_o4, bd_r6_o4};
static const BdFn kBdOne[7] = {NULL, bd_r1_o1, bd_r2_o1, bd_r3_o1, bd_r4_o1, bd_r5_o1, bd_r6_o1};

/* Panels: per input pair, 4 pair vectors (64 outputs) times the row's pair broadcast. No software
 * prefetch: the hardware prefetchers alone stream the pairs fastest at every row count measured on a
 * Zen 4 EPYC (bench/README.md; 4 pairs ahead into L1, the earlier choice, cost one-row decode 10% on
 * gpt2-124m and 30% on the regime target; 32 pairs ahead into L2 made a 1.1 B Llama's two-row pass
 * 100 ms instead of 71). */
#define SP_PANEL_BD(R)                                                                                      \
    __attribute__((target(SP_BF16DOT_TGT))) static void pbd_r##R(const uint16_t *panel, int pairs, const uint16_t *xb, \
                                                                int ldxb, float *y, int ldy, int nout) {       \
        __m512 acc[R][4];                                                                                   \
        _Pragma("GCC unroll 16") for (int r = 0; r < R; r++)                                               \
            _Pragma("GCC unroll 4") for (int v = 0; v < 4; v++) acc[r][v] = _mm512_setzero_ps();          \
        for (int k = 0; k < pairs; k++) {                                                                   \
            const uint16_t *w = panel + (size_t)k * 2 * KERNEL_PANEL;                                       \
            __m512i wv[4];                                                                                  \
            _Pragma("GCC unroll 4") for (int v = 0; v < 4; v++) wv[v] = _mm512_load_si512(w + 32 * v);     \
            _Pragma("GCC unroll 16") for (int r = 0; r < R; r++) {                                         \
                uint32_t pr;                                                                                \
                memcpy(&pr, xb + (size_t)r * ldxb + 2 * k, 4);                                              \
                __m512i xv = _mm512_set1_epi32((int)pr);                                                    \
                _Pragma("GCC unroll 4") for (int v = 0; v < 4; v++)                                         \
                    acc[r][v] = _mm512_dpbf16_ps(acc[r][v], (__m512bh)wv[v], (__m512bh)xv);                 \
            }                                                                                               \
        }                                                                                                   \
        panel_store(y, ldy, nout, R, acc);                                                                  \
    }
SP_PANEL_BD(1) SP_PANEL_BD(2) SP_PANEL_BD(3) SP_PANEL_BD(4) SP_PANEL_BD(5) SP_PANEL_BD(6) SP_PANEL_BD(7)
SP_PANEL_BD(8) SP_PANEL_BD(9)
typedef void (*PbdFn)(const uint16_t *panel, int pairs, const uint16_t *xb, int ldxb, float *y, int ldy, int nout);
static const PbdFn kPbd[KERNEL_PANEL_ROWS + 1] = {NULL, pbd_r1, pbd_r2, pbd_r3, pbd_r4, pbd_r5, pbd_r6, pbd_r7, pbd_r8, pbd_r9};
#endif

void matmul_few_rows_bf16_dot(int scalar, const uint16_t *W, int in, const uint16_t *xb, int n, int ldxb, float *y,
                              int ldy, int o0, int o1) {
#ifdef SP_HAVE_X86_KERNELS
    if (!scalar) {
        int g0 = n <= 6 ? n : (n + 1) / 2, g1 = n - g0; /* at most two groups of <= 6 rows */
        int O = g0 == 1 ? 8 : 4;
        int o = o0;
        for (; o + O <= o1; o += O) {
            kBdMany[g0](W, in, xb, ldxb, y, ldy, o);
            if (g1) kBdMany[g1](W, in, xb + (size_t)g0 * ldxb, ldxb, y + (size_t)g0 * ldy, ldy, o);
        }
        for (; o < o1; o++) {
            kBdOne[g0](W, in, xb, ldxb, y, ldy, o);
            if (g1) kBdOne[g1](W, in, xb + (size_t)g0 * ldxb, ldxb, y + (size_t)g0 * ldy, ldy, o);
        }
        return;
    }
#endif
    (void)scalar;
    rows_scalar_bf16_dot(W, in, xb, n, ldxb, y, ldy, o0, o1);
}

void matmul_panels_bf16_dot(const uint16_t *panels, int in, int out, const uint16_t *xb, int n, int ldxb, float *y,
                            int ldy, int p0, int p1) {
#ifdef SP_HAVE_X86_KERNELS
    int pairs = (in + 1) / 2;
    int passes = (n + KERNEL_PANEL_ROWS - 1) / KERNEL_PANEL_ROWS;
    for (int p = p0; p < p1; p++) {
        int nout = out - p * KERNEL_PANEL < KERNEL_PANEL ? out - p * KERNEL_PANEL : KERNEL_PANEL;
        const uint16_t *panel = panels + (size_t)p * KERNEL_PANEL * 2 * pairs;
        for (int g = 0, r0 = 0; g < passes; g++) {
            int rows = (n - r0 + (passes - g) - 1) / (passes - g);
            kPbd[rows](panel, pairs, xb + (size_t)r0 * ldxb, ldxb, y + (size_t)r0 * ldy + (size_t)p * KERNEL_PANEL, ldy, nout);
            r0 += rows;
        }
    }
#else
    (void)panels, (void)in, (void)out, (void)xb, (void)n, (void)ldxb, (void)y, (void)ldy, (void)p0, (void)p1;
#endif
}

/* ---- Q8_0 weights times Q8_0 activations (AVX512_VNNI vpdpbusd), llama.cpp's numerics ----
 * Each activation row is quantized per 32-value block as llama.cpp quantizes it before its Q8_0 dot
 * products: d = max|x| / 127 rounded to half (the scale the product then uses), q = x / d rounded to
 * nearest even (its SIMD quantizer's rounding). vpdpbusd multiplies unsigned by signed bytes: the
 * weight quants are stored as q_w + 128 (unsigned; the panel holds them so), the activation quants
 * stay signed (broadcast 4 at a time), and each block's int32 sum starts from -128 sum(q_x) (the
 * quantizer's third output), so it ends at sum(q_w q_x) exactly. Panels: Q8_0 panel blocks
 * (SP_PANEL_Q8's size) whose quants are in groups of 4 inputs: group g of a block holds, for output j,
 * inputs 4g .. 4g + 3 side by side (one 32-bit lane), so 16 outputs x 4 inputs are one vector. */
#ifdef SP_HAVE_X86_KERNELS
/* One block of 32 activations (AVX-512): the same values as the scalar loop below (vcvtps2dq rounds to
 * nearest even, as nearbyintf does in the default rounding mode; a NaN or infinite product, which only a
 * non-finite activation gives, converts to INT_MIN, whose low byte 0 is what is stored); *sum: the sum of
 * the stored quants (|sum| <= 32 x 128). Returns max |x|. */
__attribute__((target("avx512f,avx512bw"))) static float quantize_block_q8_act(const float *xb, int8_t *q, int32_t *sum) {
    __m512 lo = _mm512_loadu_ps(xb), hi = _mm512_loadu_ps(xb + 16);
    float amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(lo), _mm512_abs_ps(hi)));
    __m512 id = _mm512_set1_ps(amax != 0.0f ? 127.0f / amax : 0.0f);
    __m128i bl = _mm512_cvtepi32_epi8(_mm512_cvtps_epi32(_mm512_mul_ps(lo, id)));
    __m128i bh = _mm512_cvtepi32_epi8(_mm512_cvtps_epi32(_mm512_mul_ps(hi, id)));
    _mm_storeu_si128((__m128i *)q, bl);
    _mm_storeu_si128((__m128i *)(q + 16), bh);
    *sum = _mm512_reduce_add_epi32(_mm512_add_epi32(_mm512_cvtepi8_epi32(bl), _mm512_cvtepi8_epi32(bh)));
    return amax;
}
#endif

/* x 127 / max|x| of one activation, rounded to nearest even, as an int8: within [-127, 127] for finite
 * activations; a NaN or infinite product gives 0, as the AVX-512 path stores (no out-of-range cast). */
static int8_t q8_act_round(float v) {
    return v >= -128.0f && v <= 127.0f ? (int8_t)(int)nearbyintf(v) : 0;
}

void quantize_rows_q8_act(const float *x, int n, int ldx, int in, int8_t *qx, float *dx, int32_t *xs) {
    int nb = in / Q8_0_BLOCK;
    for (int r = 0; r < n; r++)
        for (int k = 0; k < nb; k++) {
            const float *xb = x + (size_t)r * ldx + (size_t)k * Q8_0_BLOCK;
            int8_t *q = qx + ((size_t)r * nb + (size_t)k) * Q8_0_BLOCK;
            float amax = 0.0f;
            int32_t sum = 0;
#ifdef SP_HAVE_X86_KERNELS
            if (kernel_q8_vnni_supported()) {
                amax = quantize_block_q8_act(xb, q, &sum);
            } else
#endif
            {
                for (int j = 0; j < Q8_0_BLOCK; j++) amax = fabsf(xb[j]) > amax ? fabsf(xb[j]) : amax;
                float id = amax != 0.0f ? 127.0f / amax : 0.0f;
                for (int j = 0; j < Q8_0_BLOCK; j++) q[j] = q8_act_round(xb[j] * id), sum += q[j];
            }
            dx[(size_t)r * nb + k] = half_to_float(float_to_half(amax / 127.0f));
            xs[(size_t)r * nb + k] = -128 * sum;
        }
}

/* A VNNI panel (panel_pack_q8_vnni): the panel's 64 outputs as two halves of 32, each a run of nb blocks
 * of Q8H_BLOCK bytes: the 32 outputs' half scales, then 8 groups of 4 inputs x 32 outputs as two vectors
 * ([g][v][16 outputs][4 inputs], q_w + 128 as unsigned bytes). A panel is as long as a Q8_PANEL_BLOCK
 * one, and a product reads it front to back. */
#define Q8H_OUT (KERNEL_PANEL / 2)
#define Q8H_SCALES (Q8H_OUT * 2)
#define Q8H_BLOCK (Q8H_SCALES + Q8_0_BLOCK * Q8H_OUT)
_Static_assert(2 * Q8H_BLOCK == Q8_PANEL_BLOCK, "a VNNI panel is as long as panel_bytes(DT_Q8_0, ..) says");

void panel_pack_q8_vnni(const void *W_v, int in, int out, void *panels) {
    const BlockQ8_0 *W = W_v;
    int nb = in / Q8_0_BLOCK, n_panels = (out + KERNEL_PANEL - 1) / KERNEL_PANEL;
    for (int p = 0; p < n_panels; p++)
        for (int h = 0; h < 2; h++)
            for (int k = 0; k < nb; k++) {
                unsigned char *blk = (unsigned char *)panels + (((size_t)p * 2 + (size_t)h) * nb + (size_t)k) * Q8H_BLOCK;
                uint16_t *d = (uint16_t *)blk;
                uint8_t *qs = blk + Q8H_SCALES;
                for (int j = 0; j < Q8H_OUT; j++) { /* outputs past `out`: scale 0, quants 0 */
                    int o = p * KERNEL_PANEL + h * Q8H_OUT + j;
                    const BlockQ8_0 *b = o < out ? &W[(size_t)o * nb + k] : NULL;
                    d[j] = b ? b->d : 0;
                    for (int i = 0; i < Q8_0_BLOCK; i++)
                        qs[((i / 4) * Q8H_OUT + j) * 4 + i % 4] = (uint8_t)((uint8_t)(b ? b->qs[i] : 0) ^ 0x80u);
                }
            }
}

#ifdef SP_HAVE_X86_KERNELS
/* acc + the 16 lanes' dot products of u8 (4 unsigned bytes a lane) with the 4 signed bytes at s8x4,
 * broadcast by the instruction itself ({1to16}): GCC would broadcast into a register first, one more
 * 512-bit instruction per 4 vpdpbusd (bench/README.md: on Zen 4 those instructions are the limit). */
__attribute__((target("avx512f,avx512vnni"), always_inline)) static inline __m512i dpbusd_bcst(__m512i acc, __m512i u8,
                                                                                             const int32_t *s8x4) {
    __asm__("vpdpbusd %2%{1to16%}, %1, %0" : "+v"(acc) : "v"(u8), "m"(*s8x4));
    return acc;
}
/* How a Q8_0 VNNI product goes over its rows (measured on a Zen 4 EPYC, bench/README.md): half panel by
 * half panel, so that the weights stream from memory once, front to back;
 * - up to Q8V_PASS_ROWS rows in one pass over each half (2R int32 and 2R f32 sums and two weight vectors
 *   fit the 32 registers; with a whole panel's four vectors, 4 or more rows spilled), more in balanced
 *   passes, the later ones reading the half from L1 / L2;
 * - fewer than Q8_PF_MIN_ROWS rows stream fastest with the hardware prefetchers alone (on a 1.1 B Llama,
 *   two rows took 55 ms with a software prefetch and 37 without, one row 40; five rows of gpt2-124m and
 *   of the 1.1 B Llama 0.92x and 0.95x the time without it, though 1.07x on the in-cache regime target);
 * - from Q8_PF_MIN_ROWS rows on, the passes over a half prefetch the next half into L2, each pass its
 *   share, so that the memory streams while the rows compute. */
#define Q8V_PASS_ROWS 7
#define Q8_PF_MIN_ROWS 6
/* One half panel, R rows: y[r, 0 .. nout), nout <= 32. Per block: R x 2 int32 sums that start from the
 * row's -128 sum(q_x); each group's 2 weight vectors loaded into registers once and multiplied with the R
 * rows (their 4 inputs broadcast by the instruction); then converted and scaled by d_w d_x into the f32
 * sums acc. Each block also prefetches pf_lines cache lines from pf + k pf_lines 64 on into L2, spread
 * over its 8 groups (group g takes lines g, g + 8, ...). */
#define SP_Q8V(R)                                                                                           \
    __attribute__((target("avx512f,avx512bw,avx512vnni"))) static void pq8v_r##R(                          \
        const unsigned char *half, int in, const int8_t *qx, const float *dx, const int32_t *xs, float *y,  \
        int ldy, int nout, const unsigned char *pf, int pf_lines) {                                         \
        int nb = in / Q8_0_BLOCK;                                                                           \
        __m512 acc[R][2];                                                                                   \
        _Pragma("GCC unroll 8") for (int r = 0; r < R; r++) acc[r][0] = acc[r][1] = _mm512_setzero_ps();   \
        for (int k = 0; k < nb; k++) {                                                                      \
            const unsigned char *blk = half + (size_t)k * Q8H_BLOCK;                                        \
            const __m512i *qs = (const __m512i *)(blk + Q8H_SCALES); /* [g][v] */                           \
            __m512i s[R][2];                                                                                \
            _Pragma("GCC unroll 8") for (int t = 0; t < R; t++) s[t][0] = s[t][1] =                        \
                _mm512_set1_epi32(xs[(size_t)t * nb + k]);                                                  \
            _Pragma("GCC unroll 8") for (int g = 0; g < 8; g++) {                                           \
                __m512i w0 = _mm512_load_si512(qs + 2 * g), w1 = _mm512_load_si512(qs + 2 * g + 1);         \
                __asm__ volatile("" : "+v"(w0), "+v"(w1)); /* no memory operands */                          \
                for (int l = g; l < pf_lines; l += 8)                                                       \
                    _mm_prefetch((const char *)pf + ((size_t)k * pf_lines + l) * 64, _MM_HINT_T1);          \
                _Pragma("GCC unroll 8") for (int t = 0; t < R; t++) {                                      \
                    const int32_t *xq = (const int32_t *)(qx + ((size_t)t * nb + (size_t)k) * Q8_0_BLOCK);  \
                    s[t][0] = dpbusd_bcst(s[t][0], w0, xq + g);                                             \
                    s[t][1] = dpbusd_bcst(s[t][1], w1, xq + g);                                             \
                }                                                                                           \
            }                                                                                               \
            _Pragma("GCC unroll 2") for (int v = 0; v < 2; v++) {                                           \
                __m512 dw = _mm512_cvtph_ps(_mm256_load_si256((const __m256i *)(blk + 32 * v)));            \
                _Pragma("GCC unroll 8") for (int t = 0; t < R; t++)                                        \
                    acc[t][v] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s[t][v]),                                \
                                                _mm512_mul_ps(dw, _mm512_set1_ps(dx[(size_t)t * nb + k])), acc[t][v]); \
            }                                                                                               \
        }                                                                                                   \
        __mmask16 m0 = lanes_below(0, (size_t)nout), m1 = nout > 16 ? lanes_below(16, (size_t)nout) : 0;  \
        _Pragma("GCC unroll 8") for (int r = 0; r < R; r++) { /* unrolled: acc stays in registers */       \
            _mm512_mask_storeu_ps(y + (size_t)r * ldy, m0, acc[r][0]);                                      \
            _mm512_mask_storeu_ps(y + (size_t)r * ldy + 16, m1, acc[r][1]);                                 \
        }                                                                                                   \
    }
SP_Q8V(1) SP_Q8V(2) SP_Q8V(3) SP_Q8V(4) SP_Q8V(5) SP_Q8V(6) SP_Q8V(7)
typedef void (*Pq8vFn)(const unsigned char *half, int in, const int8_t *qx, const float *dx, const int32_t *xs,
                       float *y, int ldy, int nout, const unsigned char *pf, int pf_lines);
static const Pq8vFn kPq8v[Q8V_PASS_ROWS + 1] = {NULL, pq8v_r1, pq8v_r2, pq8v_r3, pq8v_r4, pq8v_r5, pq8v_r6, pq8v_r7};
#endif

void matmul_panels_q8_vnni(const void *panels, int in, int out, const int8_t *qx, const float *dx, const int32_t *xs,
                           int n, float *y, int ldy, int p0, int p1) {
    int nb = in / Q8_0_BLOCK;
    size_t half_size = (size_t)nb * Q8H_BLOCK;
#ifdef SP_HAVE_X86_KERNELS
    int passes = (n + Q8V_PASS_ROWS - 1) / Q8V_PASS_ROWS; /* balanced */
    /* a pass's share of the next half, per block */
    int pf_lines = n >= Q8_PF_MIN_ROWS ? (Q8H_BLOCK / 64 + passes - 1) / passes : 0;
    for (int p = p0; p < p1; p++)
        for (int h = 0; h < 2; h++) {
            int nout = out - p * KERNEL_PANEL - h * Q8H_OUT; /* a short last panel's second half may be empty */
            if (nout <= 0) break;
            if (nout > Q8H_OUT) nout = Q8H_OUT;
            const unsigned char *half = (const unsigned char *)panels + ((size_t)p * 2 + (size_t)h) * half_size;
            for (int g = 0, r0 = 0; g < passes; g++) {
                int rows = (n - r0 + (passes - g) - 1) / (passes - g);
                const unsigned char *next = half + half_size + (size_t)g * nb * pf_lines * 64; /* never faults */
                kPq8v[rows](half, in, qx + (size_t)r0 * in, dx + (size_t)r0 * nb, xs + (size_t)r0 * nb,
                            y + (size_t)r0 * ldy + (size_t)p * KERNEL_PANEL + h * Q8H_OUT, ldy, nout, next,
                            h == 0 || p + 1 < p1 ? pf_lines : 0); /* the last half of the range: nothing next */
                r0 += rows;
            }
        }
#else
    (void)panels, (void)in, (void)out, (void)qx, (void)dx, (void)xs, (void)n, (void)y, (void)ldy, (void)p0, (void)p1,
        (void)nb, (void)half_size;
#endif
}

#ifdef SP_HAVE_X86_KERNELS
#include <cpuid.h>
/* CPUID leaf 1, ECX bit 29 (clang 14's __builtin_cpu_supports does not know "f16c"). */
static int cpu_has_f16c(void) {
    unsigned a, b, c, d;
    return __get_cpuid(1, &a, &b, &c, &d) && (c & (1u << 29));
}
#endif

int kernel_q8_vnni_supported(void) {
#ifdef SP_HAVE_X86_KERNELS
    return kernel_isa_supported(ISA_AVX512) && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vnni");
#else
    return 0;
#endif
}

int kernel_bf16_dot_supported(void) {
#ifdef SP_HAVE_X86_KERNELS
    unsigned a, b, c, d; /* CPUID leaf 7 subleaf 1, EAX bit 5: AVX512_BF16 */
    return kernel_isa_supported(ISA_AVX512) && __builtin_cpu_supports("avx512bw") &&
           __get_cpuid_count(7, 1, &a, &b, &c, &d) && (a & (1u << 5));
#else
    return 0;
#endif
}

int kernel_isa_supported(KernelIsa isa) {
    switch (isa) {
    case ISA_AUTO:
    case ISA_SCALAR: return 1;
#ifdef SP_HAVE_X86_KERNELS
    case ISA_AVX2: return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case ISA_AVX512: return __builtin_cpu_supports("avx512f") && kernel_isa_supported(ISA_AVX2);
#endif
    default: return 0;
    }
}

const char *kernel_isa_name(KernelIsa isa) {
    static const char *names[] = {"auto", "scalar", "avx2", "avx512"};
    return isa >= ISA_AUTO && isa <= ISA_AVX512 ? names[isa] : "?";
}

KernelIsa kernel_isa_best(void) {
    if (kernel_isa_supported(ISA_AVX512)) return ISA_AVX512;
    if (kernel_isa_supported(ISA_AVX2)) return ISA_AVX2;
    return ISA_SCALAR;
}

int kernel_half_supported(KernelIsa isa, DType dt) {
    if (isa == ISA_AUTO) isa = kernel_isa_best();
    if (dt == DT_F32 || isa == ISA_SCALAR) return kernel_isa_supported(isa);
#ifdef SP_HAVE_X86_KERNELS
    if (dt == DT_BF16) return kernel_isa_supported(isa);
    if (dt == DT_F16) return kernel_isa_supported(isa) && cpu_has_f16c();
    if (dt == DT_Q8_0) return isa == ISA_AVX512 && kernel_isa_supported(isa) && cpu_has_f16c();
#endif
    return 0;
}

/* Scalar reference for 16-bit and Q8_0 weights (tests; CPUs without AVX2 / AVX-512): each weight row
 * widened exactly (widen), then summed in order. */
static void rows_scalar_widened(DType dt, const void *W, int in, const float *x, int n, int ldx, float *y, int ldy,
                                int o0, int o1) {
    enum { CHUNK = 256 }; /* a multiple of Q8_0_BLOCK */
    float wf[CHUNK];
    for (int o = o0; o < o1; o++)
        for (int r = 0; r < n; r++) {
            const float *xr = x + (size_t)r * ldx;
            float s = 0;
            for (int i0 = 0; i0 < in; i0 += CHUNK) {
                int len = in - i0 < CHUNK ? in - i0 : CHUNK;
                widen(W, dt, (size_t)o * in + (size_t)i0, (size_t)len, wf);
                for (int i = 0; i < len; i++) s += wf[i] * xr[i0 + i];
            }
            y[(size_t)r * ldy + o] = s;
        }
}

void matmul_few_rows(KernelIsa isa, DType dt, const void *W, int in, const float *x, int n, int ldx, float *y, int ldy,
                     int o0, int o1) {
    if (isa == ISA_AUTO) isa = kernel_isa_best();
#ifdef SP_HAVE_X86_KERNELS
    if (isa == ISA_AVX512 && dt == DT_Q8_0) {
        rows_blocked(&kQ8, W, in, x, n, ldx, y, ldy, o0, o1);
        return;
    }
    if (isa != ISA_SCALAR && (dt == DT_BF16 || dt == DT_F16)) { /* 16-bit weights: the AVX2 blocks at either level */
        rows_blocked(dt == DT_BF16 ? &kBf16 : &kF16, W, in, x, n, ldx, y, ldy, o0, o1);
        return;
    }
    if (isa == ISA_AVX512) {
        rows_blocked(&kAvx512, W, in, x, n, ldx, y, ldy, o0, o1);
        return;
    }
    if (isa == ISA_AVX2) {
        rows_blocked(&kAvx2, W, in, x, n, ldx, y, ldy, o0, o1);
        return;
    }
#endif
    if (dt == DT_F32)
        rows_scalar(W, in, x, n, ldx, y, ldy, o0, o1);
    else
        rows_scalar_widened(dt, W, in, x, n, ldx, y, ldy, o0, o1);
}

/* Out-major W, n <= KERNEL_MAX_ROWS: output rows split across the BLAS thread count for big
 * matrices (contiguous weight streams per thread). */
static void linear_few_rows(const LinearW *L, const float *x, int n, int ldx, float *y, int ldy) {
    int T = (size_t)L->in * (size_t)L->out >= LIN_PAR_MIN ? openblas_get_num_threads() : 1;
    KernelIsa isa = kernel_isa_best();
    if (T <= 1) { /* no parallel region at all (small matrices, one thread) */
        matmul_few_rows(isa, L->dtype, L->w, L->in, x, n, ldx, y, ldy, 0, L->out);
        return;
    }
#pragma omp parallel num_threads(T)
    {
        int t = omp_get_thread_num(), nt = omp_get_num_threads();
        /* split on multiples of 8 outputs so every thread runs whole blocks */
        int blocks = (L->out + 7) / 8;
        int o0 = (int)((long)blocks * t / nt) * 8, o1 = (int)((long)blocks * (t + 1) / nt) * 8;
        if (o1 > L->out) o1 = L->out;
        if (o0 < o1) matmul_few_rows(isa, L->dtype, L->w, L->in, x, n, ldx, y, ldy, o0, o1);
    }
}

/* f32 weights, many rows (prefill), or a layout the few-row kernel does not take: one BLAS call. */
static void linear_f32(const LinearW *L, const float *x, int n, int ldx, float *y, int ldy) {
    const float *W = L->w;
    if (n == 1 && ldy >= L->out && !L->out_major) { /* y[out] = W[in,out]^T x */
        cblas_sgemv(CblasRowMajor, CblasTrans, L->in, L->out, 1.0f, W, L->out, x, 1, 0.0f, y, 1);
        return;
    }
    if (L->out_major)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, L->out, L->in, 1.0f, x, ldx, W, L->in, 0.0f, y, ldy);
    else
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, L->out, L->in, 1.0f, x, ldx, W, L->out, 0.0f, y, ldy);
}

/* Transposes a [rows, cols] matrix of elem-byte elements into [cols, rows], in 32 x 32 tiles. */
void transpose_elems(const void *src, int rows, int cols, size_t elem, void *dst) {
    enum { TB = 32 };
    const char *s = src;
    char *d = dst;
    for (int r0 = 0; r0 < rows; r0 += TB)
        for (int c0 = 0; c0 < cols; c0 += TB) {
            int r1 = r0 + TB < rows ? r0 + TB : rows, c1 = c0 + TB < cols ? c0 + TB : cols;
            for (int c = c0; c < c1; c++)
                for (int r = r0; r < r1; r++) {
                    size_t from = ((size_t)r * cols + c) * elem, to = ((size_t)c * rows + r) * elem;
                    if (elem == 4)
                        memcpy(d + to, s + from, 4);
                    else if (elem == 2)
                        memcpy(d + to, s + from, 2);
                    else
                        memcpy(d + to, s + from, elem);
                }
        }
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

/* Packed panels, any row count: panels split across the BLAS thread count for big matrices. */
static void linear_panels(const LinearW *L, const float *x, int n, int ldx, float *y, int ldy) {
    int n_panels = (L->out + KERNEL_PANEL - 1) / KERNEL_PANEL;
    int T = (size_t)L->in * (size_t)L->out >= LIN_PAR_MIN ? openblas_get_num_threads() : 1;
    if (T <= 1 || n_panels < 2) {
        matmul_panels(L->w, L->dtype, L->in, L->out, x, n, ldx, y, ldy, 0, n_panels);
        return;
    }
#pragma omp parallel num_threads(T)
    {
        int t = omp_get_thread_num(), nt = omp_get_num_threads();
        int p0 = (int)((long)n_panels * t / nt), p1 = (int)((long)n_panels * (t + 1) / nt);
        if (p0 < p1) matmul_panels(L->w, L->dtype, L->in, L->out, x, n, ldx, y, ldy, p0, p1);
    }
}

/* One slice of a bf16-dot product: outputs [o0, o1) (few rows: in groups of KERNEL_MAX_ROWS) or
 * panels [o0, o1). */
static void bf16_dot_slice(const LinearW *L, const uint16_t *xb, int n, int ldxb, float *y, int ldy, int o0, int o1) {
    if (L->panels) {
        matmul_panels_bf16_dot(L->w, L->in, L->out, xb, n, ldxb, y, ldy, o0, o1);
        return;
    }
    for (int r0 = 0; r0 < n; r0 += KERNEL_MAX_ROWS) {
        int rows = n - r0 < KERNEL_MAX_ROWS ? n - r0 : KERNEL_MAX_ROWS;
        matmul_few_rows_bf16_dot(0, L->w, L->in, xb + (size_t)r0 * ldxb, rows, ldxb, y + (size_t)r0 * ldy, ldy, o0, o1);
    }
}

/* bf16 weights by dot products: x rounded to bf16 in the tile (as many rows at a time as it holds),
 * outputs (few rows, multiples of 8) or panels split across the BLAS thread count for big matrices. */
static void linear_bf16_dot(const LinearW *L, const float *x, int n, int ldx, float *y, int ldy, float *tile,
                            size_t tile_elems) {
    int ldxb = bf16_dot_stride(L->in), chunk = (int)(tile_elems * 2 / (size_t)ldxb);
    uint16_t *xb = (uint16_t *)tile;
    int units = L->panels ? (L->out + KERNEL_PANEL - 1) / KERNEL_PANEL : (L->out + 7) / 8, unit = L->panels ? 1 : 8;
    int T = (size_t)L->in * (size_t)L->out >= LIN_PAR_MIN ? openblas_get_num_threads() : 1;
    for (int r0 = 0; r0 < n; r0 += chunk) {
        int rows = n - r0 < chunk ? n - r0 : chunk;
        round_rows_bf16(x + (size_t)r0 * ldx, rows, ldx, L->in, xb, ldxb);
        float *yr = y + (size_t)r0 * ldy;
        int last = L->panels ? units : L->out;
        if (T <= 1 || units < 2) {
            bf16_dot_slice(L, xb, rows, ldxb, yr, ldy, 0, last);
            continue;
        }
#pragma omp parallel num_threads(T)
        {
            int t = omp_get_thread_num(), nt = omp_get_num_threads();
            int u0 = (int)((long)units * t / nt) * unit, u1 = (int)((long)units * (t + 1) / nt) * unit;
            if (u1 > last) u1 = last;
            if (u0 < u1) bf16_dot_slice(L, xb, rows, ldxb, yr, ldy, u0, u1);
        }
    }
}

/* Q8_0 panels by int8 dot products: x quantized into the tile (qx rows, then their block scales), as
 * many rows at a time as it holds; panels split across the BLAS thread count for big matrices. */
static void linear_q8_vnni(const LinearW *L, const float *x, int n, int ldx, float *y, int ldy, float *tile,
                           size_t tile_elems) {
    int nb = L->in / Q8_0_BLOCK, n_panels = (L->out + KERNEL_PANEL - 1) / KERNEL_PANEL;
    size_t row_bytes = (size_t)L->in + (size_t)nb * (sizeof(float) + sizeof(int32_t));
    int chunk = (int)(tile_elems * sizeof(float) / row_bytes);
    int T = (size_t)L->in * (size_t)L->out >= LIN_PAR_MIN ? openblas_get_num_threads() : 1;
    for (int r0 = 0; r0 < n; r0 += chunk) {
        int rows = n - r0 < chunk ? n - r0 : chunk;
        float *dx = tile;                                           /* [rows, nb] */
        int32_t *xs = (int32_t *)(tile + (size_t)rows * nb);         /* [rows, nb] */
        int8_t *qx = (int8_t *)(tile + 2 * (size_t)rows * nb);       /* [rows, in] */
        quantize_rows_q8_act(x + (size_t)r0 * ldx, rows, ldx, L->in, qx, dx, xs);
        float *yr = y + (size_t)r0 * ldy;
        if (T <= 1 || n_panels < 2) {
            matmul_panels_q8_vnni(L->w, L->in, L->out, qx, dx, xs, rows, yr, ldy, 0, n_panels);
            continue;
        }
#pragma omp parallel num_threads(T)
        {
            int t = omp_get_thread_num(), nt = omp_get_num_threads();
            int p0 = (int)((long)n_panels * t / nt), p1 = (int)((long)n_panels * (t + 1) / nt);
            if (p0 < p1) matmul_panels_q8_vnni(L->w, L->in, L->out, qx, dx, xs, rows, yr, ldy, p0, p1);
        }
    }
}

/* bf16 by dot products and Q8_0 by int8 dot products compute each row alone (activations rounded or
 * quantized per row, the same instruction sequence for every row count), like the panel kernel. */
int linear_rows_independent(const LinearW *L) { return L->panels || L->bf16_dot; }

void linear(const LinearW *L, const float *x, int n, int ldx, float *y, int ldy, float *tile, size_t tile_elems) {
    if (L->q8_vnni) {
        linear_q8_vnni(L, x, n, ldx, y, ldy, tile, tile_elems);
    } else if (L->bf16_dot) {
        linear_bf16_dot(L, x, n, ldx, y, ldy, tile, tile_elems);
    } else if (L->panels) {
        linear_panels(L, x, n, ldx, y, ldy);
    } else if (L->few_rows) { /* balanced passes of <= KERNEL_MAX_ROWS rows: 9 -> 5 + 4, never a one-row pass */
        int passes = (n + KERNEL_MAX_ROWS - 1) / KERNEL_MAX_ROWS;
        for (int g = 0, r0 = 0; g < passes; g++) {
            int rows = (n - r0 + (passes - g) - 1) / (passes - g);
            linear_few_rows(L, x + (size_t)r0 * ldx, rows, ldx, y + (size_t)r0 * ldy, ldy);
            r0 += rows;
        }
    } else if (L->dtype == DT_F32) {
        linear_f32(L, x, n, ldx, y, ldy);
    } else {
        linear_tiled(L, x, n, ldx, y, ldy, tile, tile_elems);
    }
    add_bias(y, n, L->out, ldy, L->bias);
}

/* sum_i (x[i] - shift)^p in double, p = 1 or 2, over 8 interleaved partial sums (lane k takes
 * i = k, k + 8, ...; combined ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7)), the tail last): eight
 * independent chains instead of one d-long chain of dependent adds. */
static double sum_pow_f64(const float *x, int d, double shift, int p) {
    double acc[8] = {0};
    int i = 0;
    for (; i + 8 <= d; i += 8)
        for (int k = 0; k < 8; k++) {
            double v = (double)x[i + k] - shift;
            acc[k] += p == 2 ? v * v : v;
        }
    double s = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
    for (; i < d; i++) {
        double v = (double)x[i] - shift;
        s += p == 2 ? v * v : v;
    }
    return s;
}

void layernorm(const float *x, const float *g, const float *b, int n, int d, float eps, float *out) {
    for (int r = 0; r < n; r++) {
        const float *xr = x + (size_t)r * d;
        float *o = out + (size_t)r * d;
        double mean = sum_pow_f64(xr, d, 0.0, 1) / d;
        double var = sum_pow_f64(xr, d, mean, 2) / d;
        float inv = (float)(1.0 / sqrt(var + eps));
        for (int i = 0; i < d; i++) o[i] = ((float)(xr[i] - mean) * inv) * g[i] + b[i];
    }
}

void rmsnorm(const float *x, const float *g, int n, int d, float eps, float *out) {
    for (int r = 0; r < n; r++) {
        const float *xr = x + (size_t)r * d;
        float *o = out + (size_t)r * d;
        float inv = (float)(1.0 / sqrt(sum_pow_f64(xr, d, 0.0, 2) / d + eps));
        for (int i = 0; i < d; i++) o[i] = g[i] * (xr[i] * inv);
    }
}

/* ---- attention of one query head over m keys (decode and short verification blocks) ----
 * scores[j] = scale * q . K_j and out = sum_j w_j V_j (each element accumulated in j order; V_(m-1) is
 * `last` when that is given: a candidate's own value, outside the cache). The arithmetic of a key never
 * depends on the keys scored with it (keys go 4 at a time, a short group repeating its last key), so a
 * candidate's own key, scored alone, matches the cached key of a one-token step. By instruction set:
 *   AVX-512, hd a multiple of 64: 16 lane sums per key by FMA, folded 16 -> 8, then the AVX2 tree;
 *   AVX2, hd a multiple of 8: dot8's arithmetic (8 lane sums: multiply, then add; reduced
 *     ((l0 + l1) + (l2 + l3)) + ((l4 + l5) + (l6 + l7)), by hadd for 4 keys at once);
 *   otherwise dot8 itself. */
#ifdef SP_HAVE_X86_KERNELS
/* 4 keys' 8 lane sums -> their 4 sums, in dot8's tree */
__attribute__((target("avx2"))) static inline __m128 sum8x4(__m256 a0, __m256 a1, __m256 a2, __m256 a3) {
    __m256 h = _mm256_hadd_ps(_mm256_hadd_ps(a0, a1), _mm256_hadd_ps(a2, a3));
    return _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
}

__attribute__((target("avx2"))) static void attn_scores_avx2(const float *q, const float *K, size_t ldk, int m, int hd,
                                                          float scale, float *scores) {
    for (int j0 = 0; j0 < m; j0 += 4) {
        const float *k[4];
        for (int t = 0; t < 4; t++) k[t] = K + (size_t)(j0 + t < m ? j0 + t : m - 1) * ldk; /* a short group repeats its last key */
        __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
        for (int i = 0; i < hd; i += 8) {
            __m256 qv = _mm256_loadu_ps(q + i);
            for (int t = 0; t < 4; t++) acc[t] = _mm256_add_ps(acc[t], _mm256_mul_ps(qv, _mm256_loadu_ps(k[t] + i)));
        }
        float out[4];
        _mm_storeu_ps(out, _mm_mul_ps(sum8x4(acc[0], acc[1], acc[2], acc[3]), _mm_set1_ps(scale)));
        for (int t = 0; t < 4 && j0 + t < m; t++) scores[j0 + t] = out[t];
    }
}

__attribute__((target("avx2"))) static void attn_mix_avx2(const float *w, const float *V, size_t ldv, int m, int hd,
                                                       const float *last, float *out) {
    for (int i0 = 0; i0 < hd; i0 += 64) { /* 8 accumulators of 8 elements */
        int nv = (hd - i0) / 8 < 8 ? (hd - i0) / 8 : 8;
        __m256 acc[8];
        for (int v = 0; v < 8; v++) acc[v] = _mm256_setzero_ps();
        for (int j = 0; j < m; j++) {
            __m256 wj = _mm256_set1_ps(w[j]);
            const float *vj = (last && j == m - 1 ? last : V + (size_t)j * ldv) + i0;
            for (int v = 0; v < nv; v++) acc[v] = _mm256_add_ps(acc[v], _mm256_mul_ps(wj, _mm256_loadu_ps(vj + 8 * v)));
        }
        for (int v = 0; v < nv; v++) _mm256_storeu_ps(out + i0 + 8 * v, acc[v]);
    }
}
#endif

#ifdef SP_HAVE_X86_KERNELS
__attribute__((target("avx512f,avx2"))) static inline __m256 fold16(__m512 a) {
    return _mm256_add_ps(_mm512_castps512_ps256(a), _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(a), 1)));
}

__attribute__((target("avx512f,avx2"))) static void attn_scores_avx512(const float *q, const float *K, size_t ldk, int m,
                                                                   int hd, float scale, float *scores) {
    for (int j0 = 0; j0 < m; j0 += 4) {
        const float *k[4];
        for (int t = 0; t < 4; t++) k[t] = K + (size_t)(j0 + t < m ? j0 + t : m - 1) * ldk;
        __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
        for (int i = 0; i < hd; i += 16) {
            __m512 qv = _mm512_loadu_ps(q + i);
            for (int t = 0; t < 4; t++) acc[t] = _mm512_fmadd_ps(qv, _mm512_loadu_ps(k[t] + i), acc[t]);
        }
        float out[4];
        _mm_storeu_ps(out, _mm_mul_ps(sum8x4(fold16(acc[0]), fold16(acc[1]), fold16(acc[2]), fold16(acc[3])), _mm_set1_ps(scale)));
        for (int t = 0; t < 4 && j0 + t < m; t++) scores[j0 + t] = out[t];
    }
}

__attribute__((target("avx512f"))) static void attn_mix_avx512(const float *w, const float *V, size_t ldv, int m, int hd,
                                                           const float *last, float *out) {
    for (int i0 = 0; i0 < hd; i0 += 64) {
        __m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps(), a2 = _mm512_setzero_ps(), a3 = _mm512_setzero_ps();
        for (int j = 0; j < m; j++) {
            __m512 wj = _mm512_set1_ps(w[j]);
            const float *vj = (last && j == m - 1 ? last : V + (size_t)j * ldv) + i0;
            a0 = _mm512_fmadd_ps(wj, _mm512_loadu_ps(vj), a0);
            a1 = _mm512_fmadd_ps(wj, _mm512_loadu_ps(vj + 16), a1);
            a2 = _mm512_fmadd_ps(wj, _mm512_loadu_ps(vj + 32), a2);
            a3 = _mm512_fmadd_ps(wj, _mm512_loadu_ps(vj + 48), a3);
        }
        _mm512_storeu_ps(out + i0, a0), _mm512_storeu_ps(out + i0 + 16, a1);
        _mm512_storeu_ps(out + i0 + 32, a2), _mm512_storeu_ps(out + i0 + 48, a3);
    }
}
#endif

#ifdef SP_HAVE_X86_KERNELS
/* The attention paths' instruction set for head size hd (the rule of the comment above). */
static KernelIsa attn_isa(int hd) {
    if (hd % 64 == 0 && kernel_isa_supported(ISA_AVX512)) return ISA_AVX512;
    if (hd % 8 == 0 && kernel_isa_supported(ISA_AVX2)) return ISA_AVX2;
    return ISA_SCALAR;
}
#endif

void attn_scores(const float *q, const float *K, size_t ldk, int m, int hd, float scale, float *scores) {
#ifdef SP_HAVE_X86_KERNELS
    switch (attn_isa(hd)) {
    case ISA_AVX512: attn_scores_avx512(q, K, ldk, m, hd, scale, scores); return;
    case ISA_AVX2: attn_scores_avx2(q, K, ldk, m, hd, scale, scores); return;
    default: break;
    }
#endif
    for (int j = 0; j < m; j++) scores[j] = dot8(q, K + (size_t)j * ldk, hd) * scale;
}

void attn_mix(const float *w, const float *V, size_t ldv, int m, int hd, const float *last, float *out) {
#ifdef SP_HAVE_X86_KERNELS
    switch (attn_isa(hd)) {
    case ISA_AVX512: attn_mix_avx512(w, V, ldv, m, hd, last, out); return;
    case ISA_AVX2: attn_mix_avx2(w, V, ldv, m, hd, last, out); return;
    default: break;
    }
#endif
    memset(out, 0, (size_t)hd * sizeof *out);
    for (int j = 0; j < m; j++) {
        const float *vj = last && j == m - 1 ? last : V + (size_t)j * ldv;
        for (int t = 0; t < hd; t++) out[t] += w[j] * vj[t];
    }
}

/* ---- elementwise activations, exp through SLEEF ----
 * On AVX-512, every element goes through SLEEF's 16-lane expf (max error 1.0 ulp), the last partial
 * vector too (masked), so an element's value does not depend on where it sits in the buffer: rows
 * stacked in a batch come out bit-identical to rows run alone. Elsewhere (and under valgrind, which
 * hides AVX-512) glibc's expf. sleef.h declares the AVX-512 entry points only when the translation unit
 * is compiled with -mavx512f; this one is not (its kernels are chosen at run time), hence the
 * prototype here, of libsleef 3's exported symbol. */
#ifdef SP_HAVE_X86_KERNELS
__attribute__((target("avx512f"))) __m512 Sleef_expf16_u10avx512f(__m512 x);

/* GELU (tanh form): x / (1 + exp(-2 sqrt(2/pi) (x + 0.044715 x^3))) */
__attribute__((target("avx512f"))) static void gelu_tanh_avx512(float *x, size_t n) {
    const __m512 c = _mm512_set1_ps(-2.0f * 0.7978845608028654f), k = _mm512_set1_ps(0.044715f);
    const __m512 one = _mm512_set1_ps(1.0f);
    for (size_t i = 0; i < n; i += 16) {
        __mmask16 m = lanes_below(i, n);
        __m512 v = _mm512_maskz_loadu_ps(m, x + i);
        __m512 u = _mm512_mul_ps(c, _mm512_fmadd_ps(_mm512_mul_ps(k, v), _mm512_mul_ps(v, v), v));
        _mm512_mask_storeu_ps(x + i, m, _mm512_div_ps(v, _mm512_add_ps(one, Sleef_expf16_u10avx512f(u))));
    }
}

/* SwiGLU: a = a / (1 + exp(-a)) * b */
__attribute__((target("avx512f"))) static void swiglu_avx512(float *a, const float *b, size_t n) {
    const __m512 one = _mm512_set1_ps(1.0f);
    for (size_t i = 0; i < n; i += 16) {
        __mmask16 m = lanes_below(i, n);
        __m512 va = _mm512_maskz_loadu_ps(m, a + i), vb = _mm512_maskz_loadu_ps(m, b + i);
        __m512 e = Sleef_expf16_u10avx512f(_mm512_sub_ps(_mm512_setzero_ps(), va));
        _mm512_mask_storeu_ps(a + i, m, _mm512_mul_ps(_mm512_div_ps(va, _mm512_add_ps(one, e)), vb));
    }
}

/* x = exp(x - mx) */
__attribute__((target("avx512f"))) static void exp_shifted_avx512(float *x, float mx, size_t n) {
    const __m512 vmx = _mm512_set1_ps(mx);
    for (size_t i = 0; i < n; i += 16) {
        __mmask16 m = lanes_below(i, n);
        __m512 v = _mm512_maskz_loadu_ps(m, x + i);
        _mm512_mask_storeu_ps(x + i, m, Sleef_expf16_u10avx512f(_mm512_sub_ps(v, vmx)));
    }
}

static int elementwise_avx512(void) { return kernel_isa_supported(ISA_AVX512); }
#endif

/* 0.5 x (1 + tanh(u)) = x sigmoid(2u) = x / (1 + exp(-2u)), u = sqrt(2/pi) (x + 0.044715 x^3):
 * one exp instead of tanhf (which glibc computes through expm1f, 3x slower here). */
void gelu_tanh_inplace(float *x, size_t n) {
#ifdef SP_HAVE_X86_KERNELS
    if (elementwise_avx512()) {
        gelu_tanh_avx512(x, n);
        return;
    }
#endif
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
#ifdef SP_HAVE_X86_KERNELS
    if (elementwise_avx512()) {
        swiglu_avx512(a, b, n);
        return;
    }
#endif
    for (size_t i = 0; i < n; i++) a[i] = a[i] / (1.0f + expf(-a[i])) * b[i];
}

/* x[0..n) = softmax(x): exp(x - max) (exp(-inf) = 0), summed in double in index order. */
void softmax_inplace(float *x, int n) {
    float mx = -INFINITY;
    for (int i = 0; i < n; i++) mx = x[i] > mx ? x[i] : mx;
#ifdef SP_HAVE_X86_KERNELS
    if (elementwise_avx512()) exp_shifted_avx512(x, mx, (size_t)n);
    else
#endif
        for (int i = 0; i < n; i++) x[i] = x[i] == -INFINITY ? 0.0f : expf(x[i] - mx);
    double sum = 0;
    for (int i = 0; i < n; i++) sum += x[i];
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

int kernels_bind_threads(int n) {
    cpu_set_t allowed;
    if (n < 2 || sched_getaffinity(0, sizeof allowed, &allowed) != 0 || CPU_COUNT(&allowed) < n) return 0;
    int cpus[CPU_SETSIZE], k = 0; /* the allowed CPUs in order */
    for (int c = 0; c < CPU_SETSIZE && k < n; c++)
        if (CPU_ISSET(c, &allowed)) cpus[k++] = c;
    int bound = 0;
#pragma omp parallel num_threads(n) reduction(+ : bound)
    {
        int t = omp_get_thread_num();
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(cpus[t], &one);
        bound = omp_get_num_threads() == n && pthread_setaffinity_np(pthread_self(), sizeof one, &one) == 0;
    }
    return bound == n;
}
