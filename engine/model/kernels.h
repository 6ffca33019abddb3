/* kernels.h - the numeric building blocks of the forward pass. Row-major throughout.
 * Matrix products go to OpenBLAS (cblas_sgemm / cblas_sgemv); f16 and bf16 weights are widened
 * to f32 one tile at a time into caller-owned scratch, so nothing is expanded in memory as a whole.
 * No function here allocates. */
#ifndef SP_KERNELS_H
#define SP_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include "dtype.h"

/* Pins thread t of the engine's parallel regions of n threads (OpenMP thread t, the calling thread
 * being 0) to the t-th CPU this process may run on, for the rest of the process: 1 when done, 0 when
 * not (n < 2, fewer allowed CPUs than n, or a call failed). For a command that decodes in one process
 * with n > 1 threads: unbound, the regions' two threads of a small model's decode shared one vCPU in
 * about 4 of 5 runs on a 2-vCPU VM (regime target Q8_0: 537-743 tok/s against 1704-1758 bound). Not for
 * a process that forks workers afterwards: they would inherit the calling thread's CPU. */
int kernels_bind_threads(int n);

/* Widen n stored values of dtype t starting at element offset `off` of src into dst[n]. */
void widen(const void *src, DType t, size_t off, size_t n, float *dst);
/* The reverse: n floats to dtype t in dst, rounding to nearest even (f16: subnormals kept, overflow to
 * infinity). dst may alias src for DT_F32. */
void narrow(const float *src, size_t n, DType t, void *dst);

/* A weight matrix W with logical shape [in, out] for y = x W, stored either as
 * [out, in] (nn.Linear, out_major = 1) or [in, out] (GPT-2 Conv1D, out_major = 0). */
typedef struct LinearW {
    const void *w;
    DType dtype;
    int in, out;
    int out_major;
    const float *bias; /* [out] or NULL */
    int few_rows;      /* 1: out-major, of a dtype matmul_few_rows runs on this CPU (decided once, by the
                        * loader); linear() then takes that kernel for <= KERNEL_MAX_ROWS rows */
    int panels;        /* 1: packed into KERNEL_PANEL-wide panels of its dtype (panel_pack; the loader decides, on a
                        * CPU with AVX-512); linear() then takes matmul_panels for every row count */
    int q8_vnni;       /* 1 (Q8_0 panels, the loader decides): activations quantized to Q8_0, int8 dot products
                        * (panel_pack_q8_vnni layout), any n */
    int bf16_dot;      /* 1 (bf16 weights, the loader decides): activations rounded to bf16 and bf16 dot products,
                        * on out-major rows (few_rows) or pair panels (panels: panel_pack_bf16_dot), any n */
} LinearW;

/* y[n, out] (row stride ldy) = x[n, in] (row stride ldx) W + bias.
 * tile: scratch of tile_elems floats, used only for f16/bf16/Q8_0 widening and bf16-rounded or
 * Q8_0-quantized activations (bf16_dot: tile_elems >= bf16_dot_stride(in) / 2; q8_vnni: >= in / 3).
 * The row rule (what batching many sessions' rows in one call rests on, model.c): the arithmetic of a
 * row of x never depends on the other rows, except, where linear_rows_independent(L) is 0, on whether
 * n == 1 (the one-row kernel reduces its sums in another order) or n >= 2. So the few-row kernel takes
 * n > KERNEL_MAX_ROWS too, in passes of 2..KERNEL_MAX_ROWS rows, not sgemm (whose per-row sums may
 * depend on n); only weights no kernel takes (16-bit on a CPU without AVX2) go to BLAS, whose rows
 * are then not promised independent (linear_rows_independent 0, and the rule does not hold). */
void linear(const LinearW *L, const float *x, int n, int ldx, float *y, int ldy, float *tile, size_t tile_elems);
/* 1 when a row's arithmetic in linear(L, ...) is the same for every n (the panel kernels, bf16 and Q8_0 dot products). */
int linear_rows_independent(const LinearW *L);


/* One query head against m keys/values (rows of stride ldk / ldv, hd floats each):
 * scores[j] = scale * dot(q, K_j), the same arithmetic for a key whatever keys are scored with it;
 * out[0..hd) = sum_j w[j] V_j, accumulated in j order; V_(m-1) = last when last is not NULL. */
void attn_scores(const float *q, const float *K, size_t ldk, int m, int hd, float scale, float *scores);
void attn_mix(const float *w, const float *V, size_t ldv, int m, int hd, const float *last, float *out);

/* Instruction sets of the few-row kernel (x86-64: chosen at run time; elsewhere scalar only). */
typedef enum { ISA_AUTO = 0, ISA_SCALAR = 1, ISA_AVX2 = 2, ISA_AVX512 = 3 } KernelIsa;
#define KERNEL_MAX_ROWS 8
int kernel_isa_supported(KernelIsa isa);
KernelIsa kernel_isa_best(void);
const char *kernel_isa_name(KernelIsa isa);

/* 1 when matmul_few_rows runs weights of dtype dt at this ISA (f32: the ISA; bf16: AVX2; f16:
 * AVX2 + F16C; Q8_0: AVX-512 + F16C; scalar: all). */
int kernel_half_supported(KernelIsa isa, DType dt);

/* y[r, o] = x[r, :] . W[o, :] for r < n (1 <= n <= KERNEL_MAX_ROWS), o in [o0, o1).
 * W: out-major [out, in] of dtype dt (f32, bf16, f16 or Q8_0, widened in registers); x: [n, in] (row
 * stride ldx); y: [n, *] (row stride ldy). Every weight row is read from memory once for all n
 * rows. kernel_half_supported(isa, dt) must hold. */
void matmul_few_rows(KernelIsa isa, DType dt, const void *W, int in, const float *x, int n, int ldx, float *y, int ldy,
                     int o0, int o1);

/* ---- panels: f32 weights packed for the broadcast kernel (AVX-512) ----
 * Panel p holds outputs [p P, p P + P), P = KERNEL_PANEL: row i of the panel is the P weights
 * W[p P + j, i], j < P, contiguous (zero past out), so a panel is one sequential stream. For each i
 * the kernel loads the panel row once (4 vectors) and multiplies it by x[r, i] broadcast for every
 * input row r: no horizontal sums, and every row costs 4 FMAs per weight vector, so verifying
 * gamma + 1 tokens costs about one token while the weights stream (memory-bound) and the FMAs
 * (compute-bound, ~R x 0.17 of one token's time at one thread here) start to dominate past 7 rows. */
#define KERNEL_PANEL 64
#define KERNEL_PANEL_ROWS 9 /* input rows one pass holds in registers (8, 9 spill a few to L1) */
/* 1 when this CPU runs the panel kernel (AVX-512F). */
int kernel_panel_supported(void);
/* Bytes of the packed copy of an [out, in] matrix of dtype dt (Q8_0: in a multiple of Q8_0_BLOCK; its
 * panels hold, per block of 32 inputs, the 64 outputs' scales then 32 rows of 64 quants). */
size_t panel_bytes(DType dt, int in, int out);
/* Packs W (dtype dt, kept as it is: f32, f16, bf16 or Q8_0; Q8_0 only out-major) into panels: W out-major [out, in] (out_major
 * = 1) or in-major [in, out] (GPT-2 Conv1D). panels: 64-byte aligned. */
void panel_pack(const void *W, DType dt, int in, int out, int out_major, void *panels);
/* y[r, o] = x[r, :] . W[o, :] for r < n (any n >= 1; passes of <= KERNEL_PANEL_ROWS rows), outputs of
 * panels [p0, p1) (o < out). x: [n, in] (row stride ldx); y: [n, *] (row stride ldy). Needs
 * kernel_panel_supported(). */
void matmul_panels(const void *panels, DType dt, int in, int out, const float *x, int n, int ldx, float *y, int ldy,
                   int p0, int p1);

/* ---- bf16 weights by bf16 dot products (AVX512_BF16 vdpbf16ps), activations rounded to bf16 ----
 * The numerics of llama.cpp's bf16 path: each activation is rounded to bf16 (nearest even) and the
 * exact products of bf16 pairs are summed in f32. The exact path (kernels above) widens the weights
 * and keeps the activations f32. x rows are rounded once per product (round_rows_bf16) into
 * scratch rows of bf16_dot_stride(in) elements, zero-padded. */
#define BF16_DOT_PAD 32
int kernel_bf16_dot_supported(void); /* AVX-512F/BW and AVX512_BF16 */
int bf16_dot_stride(int in);
void round_rows_bf16(const float *x, int n, int ldx, int in, uint16_t *xb, int ldxb);
/* y[r, o] = xb[r, :] . W[o, :], W out-major bf16 [out, in], n <= KERNEL_MAX_ROWS, o in [o0, o1);
 * scalar: 1 runs the scalar reference (tests), else needs kernel_bf16_dot_supported(). */
void matmul_few_rows_bf16_dot(int scalar, const uint16_t *W, int in, const uint16_t *xb, int n, int ldxb, float *y,
                              int ldy, int o0, int o1);
/* Pair panels: pair k of panel p holds W[p P + j, 2k], W[p P + j, 2k + 1] for j < P (0 past `out` and
 * past an odd `in`); 64-byte aligned. */
size_t panel_bytes_bf16_dot(int in, int out);
void panel_pack_bf16_dot(const uint16_t *W, int in, int out, int out_major, uint16_t *panels);
/* Any n >= 1, panels [p0, p1); needs kernel_bf16_dot_supported(). */
void matmul_panels_bf16_dot(const uint16_t *panels, int in, int out, const uint16_t *xb, int n, int ldxb, float *y,
                            int ldy, int p0, int p1);

/* ---- Q8_0 weights times Q8_0-quantized activations (AVX512_VNNI), llama.cpp's numerics ----
 * quantize_rows_q8_act: x [n, in] (in a multiple of Q8_0_BLOCK) -> qx [n, in] (signed quants), dx
 * [n, in / 32] (each block's half-rounded scale) and xs [n, in / 32] (each block's -128 sum(q), where its
 * int32 sum starts): per block d = max|x| / 127, q = x 127 / max rounded to nearest even. Panels:
 * panel_bytes(DT_Q8_0, ..) bytes, packed by panel_pack_q8_vnni from out-major Q8_0 rows; y[r, o] = sum
 * over blocks of d_w d_x sum(q_w q_x), any n >= 1. */
int kernel_q8_vnni_supported(void); /* AVX-512F/BW and AVX512_VNNI */
void quantize_rows_q8_act(const float *x, int n, int ldx, int in, int8_t *qx, float *dx, int32_t *xs);
void panel_pack_q8_vnni(const void *W, int in, int out, void *panels);
void matmul_panels_q8_vnni(const void *panels, int in, int out, const int8_t *qx, const float *dx, const int32_t *xs,
                           int n, float *y, int ldy, int p0, int p1);

/* dst[cols, rows] = src[rows, cols]^T for elem-byte elements (the loader stores Conv1D weights
 * out-major). */
void transpose_elems(const void *src, int rows, int cols, size_t elem, void *dst);

/* out[n, d] = LayerNorm(x[n, d]) * g + b (biased variance, as torch). */
void layernorm(const float *x, const float *g, const float *b, int n, int d, float eps, float *out);
/* out[n, d] = x / sqrt(mean(x^2) + eps) * g (Llama RMSNorm). */
void rmsnorm(const float *x, const float *g, int n, int d, float eps, float *out);

void gelu_tanh_inplace(float *x, size_t n);
void gelu_erf_inplace(float *x, size_t n);
/* a[i] = silu(a[i]) * b[i] (SwiGLU gate). */
void swiglu_inplace(float *a, const float *b, size_t n);

/* Softmax over x[0..n) in place; entries at -INFINITY become 0. */
void softmax_inplace(float *x, int n);

/* Rotary embedding (rotate-half form) on vec[n_heads, hd] at one position: pairs (i, i + hd/2)
 * rotated by angle pos * inv_freq[i], given cos/sin rows [hd/2]. */
void rope_apply(float *vec, int n_heads, int hd, int stride_head, const float *cosr, const float *sinr);

#endif
