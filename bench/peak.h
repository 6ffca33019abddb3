/* peak.h - the compute roofline of one core: how many multiply-accumulates per second the vector
 * instructions the engine's kernels use can retire, measured by timing a loop of 12 independent
 * accumulators (no memory operand, so nothing but the execution units limits it). Per instruction
 * set: f32 FMA (vfmadd231ps zmm: 16 MACs), int8 dot products (vpdpbusd zmm: 64), bf16 dot products
 * (vdpbf16ps zmm: 32). A CPU without the instruction reports 0. Single thread: bench_forward's compute
 * rows (prefill, verification) run on one. */
#ifndef SP_BENCH_PEAK_H
#define SP_BENCH_PEAK_H

typedef struct PeakResult {
    double f32_gmacs, int8_gmacs, bf16_gmacs; /* 1e9 multiply-accumulates per second, best of the repetitions */
} PeakResult;

/* About 0.1 s per instruction set and repetition. */
void peak_run(int reps, PeakResult *out);

#endif
