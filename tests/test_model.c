/* test_model.c - internal consistency of the forward pass and the KV cache, for every
 * architecture and dtype, on random models written by init_random_model():
 *   1. one batched forward of n tokens == n single-token forwards (logits and hidden);
 *   2. truncate the cache back to k, forward different tokens == a fresh session on that prefix;
 *   3. session_prefill in chunks (last position) == the batched forward's last row;
 *   4. f16/bf16 widening matches exact known values; safetensors round-trips;
 *   5. the few-row kernel (every instruction set this CPU has) == a float64 product, for
 *      1..8 rows, odd shapes, strided rows and output sub-ranges, and writes nothing else.
 * The PyTorch oracle (tests/oracle/check_forward.py) checks the numbers themselves.
 * usage: test_model WORKDIR */
#include <math.h>
#include <omp.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "kernels.h"
#include "jsonutil.h"
#include "model.h"
#include "presets.h"
#include "safetensors.h"

#include "check.h"
#include <cblas.h>

/* Tolerance for the same math done in a different order (batched sgemm vs gemv). */
#define TOL 1e-5f

static void test_model_dir(const char *dir, const char *label) {
    SpErr err = {{0}};
    Model *m = model_load(dir, &err);
    if (!check(m != NULL, "%s: load (%s)", label, err.msg)) return;
    const ModelConfig *c = model_config(m);
    enum { N = 20 };
    int32_t toks[N], alt[N];
    for (int i = 0; i < N; i++) {
        toks[i] = (int32_t)((i * 37 + 11) % c->vocab_size);
        alt[i] = (int32_t)((i * 53 + 5) % c->vocab_size);
    }
    size_t V = (size_t)c->vocab_size, d = (size_t)c->d_model;
    float *lb = malloc(N * V * sizeof *lb), *hb = malloc(N * d * sizeof *hb);
    float *ls = malloc(N * V * sizeof *ls), *hs = malloc(N * d * sizeof *hs);

    /* 1. batched vs stepwise */
    Session *sb = session_new(m, N, N, &err), *ss = session_new(m, N, 1, &err);
    const float *L, *H;
    int ok = sb && ss && session_forward(sb, toks, N, &L, &H, &err) == 0;
    if (ok) {
        memcpy(lb, L, N * V * sizeof *lb);
        memcpy(hb, H, N * d * sizeof *hb);
        for (int i = 0; ok && i < N; i++) {
            ok = session_forward(ss, toks + i, 1, &L, &H, &err) == 0;
            if (ok) {
                memcpy(ls + i * V, L, V * sizeof *ls);
                memcpy(hs + i * d, H, d * sizeof *hs);
            }
        }
    }
    if (ok) {
        check_tensor(ls, lb, N * V, TOL, "%s: batched == stepwise, logits", label);
        check_tensor(hs, hb, N * d, TOL, "%s: batched == stepwise, hidden", label);
    } else {
        check(0, "%s: batched == stepwise: %s", label, err.msg);
    }

    /* 1b. a block of 8 rows (attention's direct path, whose heads are split over the BLAS threads from
     * 2 rows on) gives the same bytes at 1 and 2 threads */
    {
        enum { NB = 8 };
        float *l1 = malloc(NB * V * sizeof *l1);
        int same = 0, ran = 0;
        for (int th = 1; th <= 2; th++) {
            openblas_set_num_threads(th);
            Session *st = session_new(m, N, NB, &err);
            if (st && session_forward(st, toks, 4, &L, NULL, &err) == 0 &&
                session_forward(st, toks + 4, NB, &L, NULL, &err) == 0) {
                if (th == 1) memcpy(l1, L, NB * V * sizeof *l1);
                else same = memcmp(l1, L, NB * V * sizeof *l1) == 0;
                ran++;
            }
            session_free(st);
        }
        openblas_set_num_threads(1);
        check(ran == 2 && same, "%s: 8 rows after 4 cached, 1 and 2 threads: the same logits bit for bit (%s)", label,
              err.msg);
        free(l1);
    }

    /* 2. truncate to k then forward alt tokens == fresh session on toks[0..k) + alt[k..N) */
    int k = 7;
    int32_t mixed[N];
    memcpy(mixed, toks, (size_t)k * sizeof *mixed);
    memcpy(mixed + k, alt + k, (size_t)(N - k) * sizeof *mixed);
    ok = session_truncate(sb, k, &err) == 0 && session_len(sb) == k &&
         session_forward(sb, mixed + k, N - k, &L, NULL, &err) == 0;
    float *ltr = malloc((N - k) * V * sizeof *ltr);
    if (ok) memcpy(ltr, L, (N - k) * V * sizeof *ltr);
    Session *sf = session_new(m, N, N, &err);
    ok = ok && sf && session_forward(sf, mixed, N, &L, NULL, &err) == 0;
    if (ok) check_tensor(ltr, L + k * V, (N - k) * V, TOL, "%s: truncate+reforward == fresh", label);
    else check(0, "%s: truncate+reforward == fresh: %s", label, err.msg);

    /* truncation out of range is an error, and leaves the cache alone */
    check(session_truncate(sb, N + 1, &err) != 0 && session_len(sb) == N, "truncate beyond length fails");

    /* 3. chunked prefill == last row of the batched forward */
    Session *sp = session_new(m, N, 3, &err);
    ok = sp && session_prefill(sp, toks, N, &L, &H, &err) == 0;
    if (ok) {
        check_tensor(L, lb + (N - 1) * V, V, TOL, "%s: chunked prefill == batched last row, logits", label);
        check_tensor(H, hb + (N - 1) * d, d, TOL, "%s: chunked prefill == batched last row, hidden", label);
    } else {
        check(0, "%s: chunked prefill == batched last row: %s", label, err.msg);
    }

    /* errors: bad token id, over capacity, batch too large */
    int32_t bad = c->vocab_size;
    check(session_forward(sp, toks, 1, &L, NULL, &err) != 0 && strstr(err.msg, "exceeds the context"), "context overflow rejected");
    session_truncate(sp, 0, &err);
    check(session_forward(sp, &bad, 1, &L, NULL, &err) != 0 && strstr(err.msg, "out of range"), "bad token id rejected");
    check(session_forward(sf, toks, 0, &L, NULL, &err) != 0, "empty forward rejected");

    session_free(sb);
    session_free(ss);
    session_free(sf);
    session_free(sp);
    free(lb);
    free(hb);
    free(ls);
    free(hs);
    free(ltr);
    model_free(m);
}

/* IEEE binary16 by its definition: (-1)^s 2^(e-15) (1 + m/1024), subnormal 2^-14 m/1024. */
static float half_by_definition(uint16_t h) {
    int sgn = h >> 15, e = (h >> 10) & 0x1f, m = h & 0x3ff;
    float v;
    if (e == 0) v = ldexpf((float)m / 1024.0f, -14);
    else if (e == 31) v = m ? NAN : INFINITY;
    else v = ldexpf(1.0f + (float)m / 1024.0f, e - 15);
    return sgn ? -v : v;
}

static void test_widen(void) {
    /* every one of the 65536 half values (the vectorised path too, when built with F16C) */
    static uint16_t all[65536];
    static float wide[65536];
    for (int i = 0; i < 65536; i++) all[i] = (uint16_t)i;
    widen(all, DT_F16, 0, 65536, wide);
    int bad = 0;
    for (int i = 0; i < 65536; i++) {
        float r = half_by_definition((uint16_t)i);
        if (isnan(r) ? !isnan(wide[i]) : (wide[i] != r || !!signbit(wide[i]) != !!signbit(r))) bad++;
    }
    check(bad == 0, "f16 widening == the binary16 definition on all 65536 values");
    /* IEEE half: 0x3c00 = 1, 0xc000 = -2, 0x0001 = 2^-24 (smallest subnormal), 0x7bff = 65504, 0x7c00 = inf */
    const uint16_t h[] = {0x3c00, 0xc000, 0x0001, 0x7bff, 0x3555, 0x0000, 0x8000, 0x7c00};
    const float want[] = {1.0f, -2.0f, 5.9604644775390625e-08f, 65504.0f, 0.333251953125f, 0.0f, -0.0f, INFINITY};
    float got[8];
    widen(h, DT_F16, 0, 8, got);
    int ok = 1;
    for (int i = 0; i < 8; i++) ok &= got[i] == want[i] && !!signbit(got[i]) == !!signbit(want[i]);
    check(ok, "f16 widening of exact values");
    /* bf16: 0x3f80 = 1, 0xc0a0 = -5, 0x3eab = 0.333984375 */
    const uint16_t b[] = {0x3f80, 0xc0a0, 0x3eab};
    const float wb[] = {1.0f, -5.0f, 0.333984375f};
    widen(b, DT_BF16, 0, 3, got);
    check(got[0] == wb[0] && got[1] == wb[1] && got[2] == wb[2], "bf16 widening of exact values");
    /* Q8_0 (ggml's quantize_row_q8_0_ref): max |x| = 127 gives d = 1 exactly, so q = roundf(x): halves
     * away from zero (2.5 -> 3, where round-to-even would give 2); an all-zero block gets d = 0, q = 0;
     * a block of max 2.54 gets d = half(0.02) and q = roundf(x / 0.02) */
    float xq[3 * Q8_0_BLOCK] = {127.0f, -127.0f, 63.5f, -63.5f, 0.5f, -0.5f, 2.5f, -2.5f, 1.49f, 100.0f};
    for (int j = 0; j < Q8_0_BLOCK; j++) xq[2 * Q8_0_BLOCK + j] = 0.02f * (float)j * (j % 2 ? -1.0f : 1.0f) + (j == 31 ? -1.92f : 0);
    BlockQ8_0 q[3];
    narrow(xq, 3 * Q8_0_BLOCK, DT_Q8_0, q);
    const int8_t wq[10] = {127, -127, 64, -64, 1, -1, 3, -3, 1, 100};
    int okq = q[0].d == 0x3c00 && memcmp(q[0].qs, wq, 10) == 0 && q[0].qs[10] == 0 && q[1].d == 0;
    for (int j = 0; j < Q8_0_BLOCK; j++) okq &= q[1].qs[j] == 0;
    /* block 2: values 0.02 j (sign alternating), the last -2.54: amax 2.54, d = 0.02 */
    okq &= q[2].d == 0x251f; /* half(0.02f) = 0x251f (0.0200042724609375) */
    okq &= q[2].qs[31] == -127 && q[2].qs[2] == 2 && q[2].qs[3] == -3;
    check(okq, "Q8_0 quantization: ggml's rounding (d = max/127 as half, q = roundf(x * 127 / max))");
    float back[Q8_0_BLOCK];
    widen(q, DT_Q8_0, 2 * Q8_0_BLOCK + 3, 2, back); /* elements 67, 68 = block 2's quants 3, 4 */
    check(back[0] == -3 * 0.0200042724609375f && back[1] == 4 * 0.0200042724609375f, "Q8_0 widening = d q at an offset");
}

/* splitmix64 -> uniform in [-1, 1) */
static float rnd_unit(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    return (float)((double)(z >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

/* A random finite value of dtype dt in about [-2, 2], as stored bits (f32: the float itself). */
static void rnd_weight(DType dt, uint64_t *seed, void *W, size_t i) {
    float v = rnd_unit(seed) * 2.0f;
    if (dt == DT_F32) {
        ((float *)W)[i] = v;
    } else if (dt == DT_BF16) {
        uint32_t bits;
        memcpy(&bits, &v, 4);
        ((uint16_t *)W)[i] = (uint16_t)(bits >> 16); /* truncation: any bf16 value is fine */
    } else { /* f16: sign, exponent 1..17 (2^-14 .. 2^2), random mantissa: finite normal halves */
        uint64_t z = (uint64_t)((rnd_unit(seed) + 1.0f) * 1e9f);
        ((uint16_t *)W)[i] = (uint16_t)(((z & 1) << 15) | ((1 + (z >> 1) % 17) << 10) | ((z >> 6) & 0x3ff));
    }
}

static void test_few_rows(void) {
    const int shapes[][2] = {{1, 1}, {3, 7}, {8, 16}, {17, 33}, {64, 96}, {130, 257}, {41, 768}, {523, 160}}; /* {out, in}; the last > 256 kB (prefetching blocks) */
    const KernelIsa isas[] = {ISA_SCALAR, ISA_AVX2, ISA_AVX512};
    const int q8_shapes[][2] = {{1, 32}, {3, 64}, {8, 96}, {17, 32}, {130, 256}, {41, 768}, {523, 160}, {9, 32}};
    const DType dts[] = {DT_F32, DT_BF16, DT_F16, DT_Q8_0};
    const char *dtn[] = {"f32", "bf16", "f16", "q8_0"};
    uint64_t seed = 42;
    for (size_t k = 0; k < sizeof isas / sizeof *isas; k++)
        for (int t = 0; t < 4; t++) {
            if (!kernel_half_supported(isas[k], dts[t])) {
                printf("few-row kernel: %s %s: no such kernel on this CPU, skipped\n", kernel_isa_name(isas[k]), dtn[t]);
                continue;
            }
            int q8 = dts[t] == DT_Q8_0;
            int bad = 0, cases = 0;
            for (size_t sh = 0; sh < sizeof shapes / sizeof *shapes; sh++)
                for (int n = 1; n <= KERNEL_MAX_ROWS; n++) {
                    int out = q8 ? q8_shapes[sh][0] : shapes[sh][0], in = q8 ? q8_shapes[sh][1] : shapes[sh][1];
                    int ldx = in + 3, ldy = out + 5;
                    int o0 = out > 4 ? 1 : 0, o1 = out > 4 ? out - 2 : out; /* a sub-range of outputs */
                    void *W = malloc(dtype_row_bytes(dts[t], (size_t)out * in));
                    float *Wf = malloc((size_t)out * in * sizeof *Wf), *x = malloc((size_t)n * ldx * sizeof *x);
                    float *y = malloc((size_t)n * ldy * sizeof *y);
                    if (q8) { /* random floats quantized: the kernel must use d q exactly */
                        for (size_t i = 0; i < (size_t)out * in; i++) Wf[i] = rnd_unit(&seed) * 2.0f;
                        narrow(Wf, (size_t)out * in, DT_Q8_0, W);
                    } else {
                        for (size_t i = 0; i < (size_t)out * in; i++) rnd_weight(dts[t], &seed, W, i);
                    }
                    widen(W, dts[t], 0, (size_t)out * in, Wf); /* exact (checked by test_widen) */
                    for (size_t i = 0; i < (size_t)n * ldx; i++) x[i] = rnd_unit(&seed);
                    for (size_t i = 0; i < (size_t)n * ldy; i++) y[i] = 12345.0f; /* sentinel */
                    matmul_few_rows(isas[k], dts[t], W, in, x, n, ldx, y, ldy, o0, o1);
                    for (int r = 0; r < n; r++)
                        for (int o = 0; o < ldy; o++) {
                            float got = y[(size_t)r * ldy + o];
                            if (o < o0 || o >= o1) {
                                bad += got != 12345.0f;
                                continue;
                            }
                            double ref = 0, mag = 0;
                            for (int i = 0; i < in; i++) {
                                ref += (double)Wf[(size_t)o * in + i] * x[(size_t)r * ldx + i];
                                mag += fabs((double)Wf[(size_t)o * in + i] * x[(size_t)r * ldx + i]);
                            }
                            bad += !(fabs(got - ref) <= 1e-6 * (1.0 + mag));
                        }
                    cases++;
                    free(W);
                    free(Wf);
                    free(x);
                    free(y);
                }
            check(bad == 0, "few-row kernel %s %s == float64 product (%d shapes x rows, %d bad values)",
                  kernel_isa_name(isas[k]), dtn[t], cases, bad);
        }
}

/* The panel kernel (AVX-512) against float64 for every row count up to 2 x KERNEL_PANEL_ROWS + 1 (one,
 * two and three passes per panel), in- and out-major sources, partial last panels, strides and a
 * sub-range of panels (outputs outside it keep their sentinel), for f32, f16, bf16 and Q8_0 panels (the
 * reference uses the weights as stored, widened exactly). */
static void test_panels(void) {
    if (!kernel_panel_supported()) {
        printf("panel kernel: no AVX-512 on this CPU, skipped\n");
        return;
    }
    const int shapes[][2] = {{1, 1}, {7, 3}, {64, 16}, {65, 33}, {130, 257}, {200, 768}, {1408, 96}}; /* {out, in} */
    const int q8_shapes[][2] = {{1, 32}, {7, 32}, {64, 64}, {65, 96}, {130, 256}, {200, 768}, {1408, 96}};
    const DType dts[] = {DT_F32, DT_F16, DT_BF16, DT_Q8_0};
    const char *dtn[] = {"f32", "f16", "bf16", "q8_0"};
    for (int t = 0; t < 4; t++) {
        uint64_t seed = 7;
        int bad = 0, cases = 0, q8 = dts[t] == DT_Q8_0;
        for (size_t sh = 0; sh < sizeof shapes / sizeof *shapes; sh++)
            for (int major = q8; major <= 1; major++) /* Q8_0 is stored out-major only */
                for (int n = 1; n <= 2 * KERNEL_PANEL_ROWS + 1; n++) {
                    int out = q8 ? q8_shapes[sh][0] : shapes[sh][0], in = q8 ? q8_shapes[sh][1] : shapes[sh][1];
                    int ldx = in + 3, ldy = out + 5;
                    int n_panels = (out + KERNEL_PANEL - 1) / KERNEL_PANEL;
                    int p0 = n_panels > 2 ? 1 : 0, p1 = n_panels; /* skip the first panel when there are three */
                    size_t nw = (size_t)out * in;
                    float *W = malloc(nw * sizeof *W), *x = malloc((size_t)n * ldx * sizeof *x);
                    void *Ws = malloc(dtype_row_bytes(dts[t], nw));
                    void *packed = aligned_alloc(64, (panel_bytes(dts[t], in, out) + 127) / 64 * 64);
                    float *y = malloc((size_t)n * ldy * sizeof *y);
                    for (size_t i = 0; i < nw; i++) W[i] = rnd_unit(&seed);
                    narrow(W, nw, dts[t], Ws);  /* as stored */
                    widen(Ws, dts[t], 0, nw, W); /* the values the kernel must use, exactly */
                    for (size_t i = 0; i < (size_t)n * ldx; i++) x[i] = rnd_unit(&seed);
                    for (size_t i = 0; i < (size_t)n * ldy; i++) y[i] = 12345.0f; /* sentinel */
                    panel_pack(Ws, dts[t], in, out, major, packed);
                    matmul_panels(packed, dts[t], in, out, x, n, ldx, y, ldy, p0, p1);
                    for (int r = 0; r < n; r++)
                        for (int o = 0; o < ldy; o++) {
                            float got = y[(size_t)r * ldy + o];
                            if (o < p0 * KERNEL_PANEL || o >= out) {
                                bad += got != 12345.0f;
                                continue;
                            }
                            double ref = 0, mag = 0;
                            for (int i = 0; i < in; i++) {
                                double w = major ? W[(size_t)o * in + i] : W[(size_t)i * out + o];
                                ref += w * x[(size_t)r * ldx + i];
                                mag += fabs(w * x[(size_t)r * ldx + i]);
                            }
                            bad += !(fabs(got - ref) <= 1e-6 * (1.0 + mag));
                        }
                    cases++;
                    free(W), free(Ws), free(x), free(packed), free(y);
                }
        check(bad == 0, "panel kernel %s == float64 product (%d shapes x layouts x rows, %d bad values)", dtn[t], cases, bad);
    }
}

/* The bf16 dot-product kernels (few rows: scalar reference and AVX512_BF16; pair panels, in- and
 * out-major, odd in, partial panels, 1 to 2 x KERNEL_PANEL_ROWS + 1 rows) against float64 over the
 * bf16 weights and the bf16-rounded activations: the kernels must use exactly those values. A
 * control: the same check against the unrounded activations fails (rounding is really applied). */
static void test_bf16_dot(void) {
    const int shapes[][2] = {{1, 1}, {7, 3}, {64, 33}, {65, 64}, {130, 257}, {200, 768}}; /* {out, in} */
    uint64_t seed = 11;
    int bad_few = 0, bad_few_scalar = 0, bad_pnl = 0, cases = 0, control_differs = 0, have = kernel_bf16_dot_supported();
    for (size_t sh = 0; sh < sizeof shapes / sizeof *shapes; sh++)
        for (int n = 1; n <= 2 * KERNEL_PANEL_ROWS + 1; n++) {
            int out = shapes[sh][0], in = shapes[sh][1], ldx = in + 3, ldy = out + 5, ldxb = bf16_dot_stride(in);
            size_t nw = (size_t)out * in;
            float *Wf = malloc(nw * sizeof *Wf), *x = malloc((size_t)n * ldx * sizeof *x), *xr = malloc((size_t)n * ldxb * sizeof *xr);
            uint16_t *W = malloc(nw * 2), *Wt = malloc(nw * 2), *xb = malloc((size_t)n * ldxb * 2);
            uint16_t *packed = aligned_alloc(64, (panel_bytes_bf16_dot(in, out) + 63) / 64 * 64);
            float *y = malloc((size_t)n * ldy * sizeof *y);
            for (size_t i = 0; i < nw; i++) Wf[i] = rnd_unit(&seed);
            narrow(Wf, nw, DT_BF16, W);
            widen(W, DT_BF16, 0, nw, Wf);
            transpose_elems(W, out, in, 2, Wt); /* [in, out] */
            for (size_t i = 0; i < (size_t)n * ldx; i++) x[i] = rnd_unit(&seed);
            round_rows_bf16(x, n, ldx, in, xb, ldxb);
            widen(xb, DT_BF16, 0, (size_t)n * ldxb, xr);
            for (int pass = 0; pass < 4; pass++) { /* few rows scalar, few rows AVX512_BF16, panels out-, in-major */
                if ((pass > 0 && !have) || (pass < 2 && n > KERNEL_MAX_ROWS)) continue;
                for (size_t i = 0; i < (size_t)n * ldy; i++) y[i] = 12345.0f;
                if (pass < 2) {
                    matmul_few_rows_bf16_dot(pass == 0, W, in, xb, n, ldxb, y, ldy, 0, out);
                } else {
                    panel_pack_bf16_dot(pass == 2 ? W : Wt, in, out, pass == 2, packed);
                    matmul_panels_bf16_dot(packed, in, out, xb, n, ldxb, y, ldy, 0, (out + KERNEL_PANEL - 1) / KERNEL_PANEL);
                }
                int bad = 0, far = 0;
                for (int r = 0; r < n; r++)
                    for (int o = 0; o < ldy; o++) {
                        float got = y[(size_t)r * ldy + o];
                        if (o >= out) {
                            bad += got != 12345.0f;
                            continue;
                        }
                        double ref = 0, raw = 0, mag = 0;
                        for (int i = 0; i < in; i++) {
                            ref += (double)Wf[(size_t)o * in + i] * xr[(size_t)r * ldxb + i];
                            raw += (double)Wf[(size_t)o * in + i] * x[(size_t)r * ldx + i];
                            mag += fabs((double)Wf[(size_t)o * in + i] * xr[(size_t)r * ldxb + i]);
                        }
                        bad += !(fabs(got - ref) <= 1e-6 * (1.0 + mag));
                        far += !(fabs(got - raw) <= 1e-6 * (1.0 + mag));
                    }
                if (pass == 0) bad_few_scalar += bad;
                else if (pass == 1) bad_few += bad;
                else bad_pnl += bad;
                control_differs += far > 0;
            }
            cases++;
            free(Wf), free(x), free(xr), free(W), free(Wt), free(xb), free(packed), free(y);
        }
    check(bad_few_scalar == 0, "bf16-dot few-row scalar reference == float64 of bf16 products (%d cases, %d bad)", cases, bad_few_scalar);
    if (!have) {
        printf("bf16-dot kernels: no AVX512_BF16 on this CPU, skipped\n");
        return;
    }
    check(bad_few == 0, "bf16-dot few-row kernel (AVX512_BF16) == float64 of bf16 products (%d bad)", bad_few);
    check(bad_pnl == 0, "bf16-dot pair panels (AVX512_BF16) == float64 of bf16 products (%d bad)", bad_pnl);
    check(control_differs > 0, "control: the bf16-dot results differ from the unrounded product (%d kernel runs differ)", control_differs);
}

/* The Q8_0 x Q8_0 panel kernel (AVX512_VNNI) against float64 of what it must compute: per block,
 * d_w d_x sum(q_w q_x) with the weights' quants and scales as stored and the activations quantized by
 * quantize_rows_q8_act (whose quants must reproduce each value within half a step and the scale's rounding). Out-major
 * sources, partial panels, 1 to 2 x KERNEL_PANEL_ROWS + 1 rows, a sub-range of panels. */
static void test_q8_vnni(void) {
    if (!kernel_q8_vnni_supported()) {
        printf("Q8_0 x Q8_0 panels: no AVX512_VNNI on this CPU, skipped\n");
        return;
    }
    /* {out, in}: last panels of 1, 7, 26, 40, 8 and 56 outputs (a VNNI panel goes in halves of 32) */
    const int shapes[][2] = {{1, 32}, {7, 64}, {26, 32}, {40, 64}, {64, 96}, {65, 256}, {120, 96}, {200, 768}};
    uint64_t seed = 5;
    int bad = 0, bad_q = 0, bad_rows = 0, cases = 0;
    for (size_t sh = 0; sh < sizeof shapes / sizeof *shapes; sh++)
        for (int n = 1; n <= 2 * KERNEL_PANEL_ROWS + 1; n++) {
            int out = shapes[sh][0], in = shapes[sh][1], nb = in / Q8_0_BLOCK, ldx = in + 3, ldy = out + 5;
            int n_panels = (out + KERNEL_PANEL - 1) / KERNEL_PANEL, p0 = n_panels > 2 ? 1 : 0;
            size_t nw = (size_t)out * in;
            float *Wf = malloc(nw * sizeof *Wf), *x = malloc((size_t)n * ldx * sizeof *x), *dx = malloc((size_t)n * nb * sizeof *dx);
            BlockQ8_0 *W = malloc(dtype_row_bytes(DT_Q8_0, nw));
            int8_t *qx = malloc((size_t)n * in);
            int32_t *xs = malloc((size_t)n * nb * sizeof *xs);
            void *packed = aligned_alloc(64, (panel_bytes(DT_Q8_0, in, out) + 63) / 64 * 64);
            float *y = malloc((size_t)n * ldy * sizeof *y);
            for (size_t i = 0; i < nw; i++) Wf[i] = rnd_unit(&seed);
            narrow(Wf, nw, DT_Q8_0, W);
            for (size_t i = 0; i < (size_t)n * ldx; i++) x[i] = rnd_unit(&seed) * (i % 7 == 0 ? 3.0f : 1.0f);
            quantize_rows_q8_act(x, n, ldx, in, qx, dx, xs);
            for (int r = 0; r < n; r++)
                for (int i = 0; i < in; i++) {
                    double v = (double)dx[(size_t)r * nb + i / Q8_0_BLOCK] * qx[(size_t)r * in + i];
                    /* half a step, plus 127 times the scale's rounding to half (<= 2^-11 relative), as llama.cpp's */
                    bad_q += !(fabs(v - x[(size_t)r * ldx + i]) <= (0.5 + 127.0 / 2048) * dx[(size_t)r * nb + i / Q8_0_BLOCK] + 1e-7);
                }
            for (size_t i = 0; i < (size_t)n * ldy; i++) y[i] = 12345.0f;
            panel_pack_q8_vnni(W, in, out, packed);
            for (int r = 0; r < n; r++) /* each block's start: -128 sum of its quants */
                for (int k = 0; k < nb; k++) {
                    long sum = 0;
                    for (int j = 0; j < Q8_0_BLOCK; j++) sum += qx[(size_t)r * in + (size_t)k * Q8_0_BLOCK + j];
                    bad_q += xs[(size_t)r * nb + k] != -128 * sum;
                }
            matmul_panels_q8_vnni(packed, in, out, qx, dx, xs, n, y, ldy, p0, n_panels);
            for (int r = 0; r < n; r++)
                for (int o = 0; o < ldy; o++) {
                    float got = y[(size_t)r * ldy + o];
                    if (o < p0 * KERNEL_PANEL || o >= out) {
                        bad += got != 12345.0f;
                        continue;
                    }
                    double ref = 0, mag = 0;
                    for (int k = 0; k < nb; k++) {
                        const BlockQ8_0 *b = &W[(size_t)o * nb + k];
                        float dw = half_by_definition(b->d); /* the block's scale */
                        long s = 0;
                        for (int j = 0; j < Q8_0_BLOCK; j++) s += (long)b->qs[j] * qx[(size_t)r * in + k * Q8_0_BLOCK + j];
                        ref += (double)dw * dx[(size_t)r * nb + k] * (double)s;
                        mag += fabs((double)dw * dx[(size_t)r * nb + k] * (double)s);
                    }
                    bad += !(fabs(got - ref) <= 1e-5 * (1.0 + mag));
                }
            /* rows are independent bit for bit (a batched decode must give a lone decode's logits): each
             * row alone, through the one-row kernel, against its row of the n-row passes */
            float *y1 = malloc((size_t)ldy * sizeof *y1);
            for (int r = 0; r < n; r++) {
                matmul_panels_q8_vnni(packed, in, out, qx + (size_t)r * in, dx + (size_t)r * nb, xs + (size_t)r * nb, 1, y1,
                                      ldy, p0, n_panels);
                size_t o0 = (size_t)p0 * KERNEL_PANEL;
                bad_rows += memcmp(y1 + o0, y + (size_t)r * ldy + o0, (size_t)(out - (int)o0) * sizeof *y1) != 0;
            }
            free(y1);
            cases++;
            free(Wf), free(x), free(dx), free(W), free(qx), free(xs), free(packed), free(y);
        }
    check(bad_q == 0, "Q8_0 activation quantization: every value within half a step (+ the scale's rounding), block starts -128 sum(q) (%d bad)", bad_q);
    check(bad == 0, "Q8_0 x Q8_0 panels (AVX512_VNNI) == float64 of d_w d_x sum(q_w q_x) (%d cases, %d bad)", cases, bad);
    check(bad_rows == 0, "Q8_0 x Q8_0 panels: every row of an n-row call == that row alone, bit for bit (%d bad)", bad_rows);
}

/* kernels_bind_threads: refused for one thread and for more threads than allowed CPUs; with n allowed
 * CPUs, each of n region threads ends on its own single CPU. Run last: it pins this process. */
static void test_bind_threads(void) {
    cpu_set_t allowed;
    if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) {
        check(0, "sched_getaffinity");
        return;
    }
    int n = CPU_COUNT(&allowed);
    check(kernels_bind_threads(1) == 0 && kernels_bind_threads(n + 1) == 0,
          "kernels_bind_threads: nothing for 1 thread or for %d threads on %d allowed CPUs", n + 1, n);
    if (n < 2) {
        printf("kernels_bind_threads: %d allowed CPU, the binding itself not tested here\n", n);
        return;
    }
    int bound = kernels_bind_threads(2), cpu_of[2] = {-1, -1}, single = 0;
#pragma omp parallel num_threads(2) reduction(+ : single)
    {
        cpu_set_t mine;
        int t = omp_get_thread_num();
        if (pthread_getaffinity_np(pthread_self(), sizeof mine, &mine) == 0 && CPU_COUNT(&mine) == 1) {
            single++;
            for (int c = 0; c < CPU_SETSIZE; c++)
                if (CPU_ISSET(c, &mine)) cpu_of[t] = c;
        }
    }
    check(bound == 1 && single == 2 && cpu_of[0] != cpu_of[1] && CPU_ISSET(cpu_of[0], &allowed) &&
              CPU_ISSET(cpu_of[1], &allowed),
          "kernels_bind_threads(2): the region's threads on CPUs %d and %d, one each", cpu_of[0], cpu_of[1]);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: test_model WORKDIR\n");
        return 2;
    }
    const char *work = argv[1];
    SpErr merr;
    if (sp_mkdir_p(work, &merr)) {
        fprintf(stderr, "%s\n", merr.msg);
        return 1;
    }
    test_widen();
    test_few_rows();
    test_panels();
    test_bf16_dot();
    test_q8_vnni();
    const char *archs[] = {"gpt2", "gpt-neo", "llama", "qwen2", "qwen3"};
    const DType dts[] = {DT_F32, DT_F16, DT_BF16};
    const char *dtn[] = {"f32", "f16", "bf16"};
    for (int a = 0; a < 5; a++)
        for (int t = 0; t < 3; t++) {
            char dir[1024], label[64];
            snprintf(dir, sizeof dir, "%s/model-%s-%s", work, archs[a], dtn[t]);
            snprintf(label, sizeof label, "%s/%s", archs[a], dtn[t]);
            SpErr err = {{0}};
            cJSON *cfg = preset_config(archs[a], "tiny", &err);
            /* a small window so GPT-Neo's local attention is exercised within 20 tokens */
            if (a == 1) cJSON_ReplaceItemInObject(cfg, "window_size", cJSON_CreateNumber(5));
            int ok = cfg && init_random_model(cfg, "config", dts[t], 1234 + (uint64_t)a, dir, &err) == 0;
            cJSON_Delete(cfg);
            if (check(ok, "%s: init-random (%s)", label, err.msg)) test_model_dir(dir, label);
        }
    test_bind_threads();
    return check_summary("model_consistency");
}
