/* kernels.h - the numeric building blocks of the forward pass. Row-major throughout.
 * Matrix products go to OpenBLAS (cblas_sgemm / cblas_sgemv); f16 and bf16 weights are widened
 * to f32 one tile at a time into caller-owned scratch, so nothing is expanded in memory as a whole.
 * No function here allocates. */
#ifndef SP_KERNELS_H
#define SP_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include "dtype.h"

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
} LinearW;

/* y[n, out] (row stride ldy) = x[n, in] (row stride ldx) W + bias.
 * tile: scratch of tile_elems floats, used only for f16/bf16.
 * The row rule (what batching many sessions' rows in one call rests on, model.c): the arithmetic of a
 * row of x never depends on the other rows, except, where linear_rows_independent(L) is 0, on whether
 * n == 1 (the one-row kernel reduces its sums in another order) or n >= 2. So the few-row kernel takes
 * n > KERNEL_MAX_ROWS too, in passes of 2..KERNEL_MAX_ROWS rows, not sgemm (whose per-row sums may
 * depend on n); only weights no kernel takes (16-bit on a CPU without AVX2) go to BLAS, whose rows
 * are then not promised independent (linear_rows_independent 0, and the rule does not hold). */
void linear(const LinearW *L, const float *x, int n, int ldx, float *y, int ldy, float *tile, size_t tile_elems);
/* 1 when a row's arithmetic in linear(L, ...) is the same for every n (the panel kernel). */
int linear_rows_independent(const LinearW *L);

/* sum_i a[i] b[i] with 8 independent partial sums (vectorised; a single running sum is a chain of
 * dependent adds the compiler may not reorder). */
float dot_f32(const float *a, const float *b, int n);

/* Instruction sets of the few-row kernel (x86-64: chosen at run time; elsewhere scalar only). */
typedef enum { ISA_AUTO = 0, ISA_SCALAR = 1, ISA_AVX2 = 2, ISA_AVX512 = 3 } KernelIsa;
#define KERNEL_MAX_ROWS 8
int kernel_isa_supported(KernelIsa isa);
KernelIsa kernel_isa_best(void);
const char *kernel_isa_name(KernelIsa isa);

/* 1 when matmul_few_rows runs weights of dtype dt at this ISA (f32: the ISA; bf16: AVX2; f16:
 * AVX2 + F16C; scalar: all). */
int kernel_half_supported(KernelIsa isa, DType dt);

/* y[r, o] = x[r, :] . W[o, :] for r < n (1 <= n <= KERNEL_MAX_ROWS), o in [o0, o1).
 * W: out-major [out, in] of dtype dt (f32, bf16 or f16, widened in registers); x: [n, in] (row
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
/* Elements of the packed copy of an [out, in] matrix: ceil(out / P) P in. */
size_t panel_elems(int in, int out);
/* Packs W (dtype dt, kept as it is: f32, f16 or bf16) into panels: W out-major [out, in] (out_major
 * = 1) or in-major [in, out] (GPT-2 Conv1D). panels: 64-byte aligned. */
void panel_pack(const void *W, DType dt, int in, int out, int out_major, void *panels);
/* y[r, o] = x[r, :] . W[o, :] for r < n (any n >= 1; passes of <= KERNEL_PANEL_ROWS rows), outputs of
 * panels [p0, p1) (o < out). x: [n, in] (row stride ldx); y: [n, *] (row stride ldy). Needs
 * kernel_panel_supported(). */
void matmul_panels(const void *panels, DType dt, int in, int out, const float *x, int n, int ldx, float *y, int ldy,
                   int p0, int p1);

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
