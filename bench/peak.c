/* peak.c - see peak.h. */
#include "peak.h"

#include "clock.h"

#if defined(__x86_64__) && defined(__GNUC__)
/* 12 independent accumulators, each instruction reads zmm1 twice and updates one of zmm2..zmm13 */
#define SP_PEAK_LOOP(INSN)                                                                                     \
    __asm__ volatile("vpxord %%zmm1, %%zmm1, %%zmm1\n\t"                                                     \
                     "1:\n\t" INSN " %%zmm1, %%zmm1, %%zmm2\n\t" INSN " %%zmm1, %%zmm1, %%zmm3\n\t" INSN       \
                     " %%zmm1, %%zmm1, %%zmm4\n\t" INSN " %%zmm1, %%zmm1, %%zmm5\n\t" INSN                      \
                     " %%zmm1, %%zmm1, %%zmm6\n\t" INSN " %%zmm1, %%zmm1, %%zmm7\n\t" INSN                      \
                     " %%zmm1, %%zmm1, %%zmm8\n\t" INSN " %%zmm1, %%zmm1, %%zmm9\n\t" INSN                      \
                     " %%zmm1, %%zmm1, %%zmm10\n\t" INSN " %%zmm1, %%zmm1, %%zmm11\n\t" INSN                    \
                     " %%zmm1, %%zmm1, %%zmm12\n\t" INSN " %%zmm1, %%zmm1, %%zmm13\n\t"                         \
                     "dec %0\n\t"                                                                            \
                     "jnz 1b\n\t"                                                                            \
                     : "+r"(iters)                                                                           \
                     :                                                                                       \
                     : "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11",  \
                       "xmm12", "xmm13", "cc")

__attribute__((target("avx512f"))) static void loop_f32(long iters) { SP_PEAK_LOOP("vfmadd231ps"); }
__attribute__((target("avx512f,avx512vnni"))) static void loop_int8(long iters) { SP_PEAK_LOOP("vpdpbusd"); }
__attribute__((target("avx512f,avx512bf16"))) static void loop_bf16(long iters) { SP_PEAK_LOOP("vdpbf16ps"); }

/* best rate over reps of `iters` loop iterations, in 1e9 MACs per second */
static double best_gmacs(void (*loop)(long), long iters, int macs_per_insn, int reps) {
    double best = 0;
    for (int r = 0; r < reps; r++) {
        double t0 = sp_now_s();
        loop(iters);
        double s = sp_now_s() - t0;
        double g = s > 0 ? (double)iters * 12.0 * macs_per_insn / s / 1e9 : 0;
        best = g > best ? g : best;
    }
    return best;
}
#endif

void peak_run(int reps, PeakResult *out) {
    out->f32_gmacs = out->int8_gmacs = out->bf16_gmacs = 0;
#if defined(__x86_64__) && defined(__GNUC__)
    const long iters = 20 * 1000 * 1000; /* 240 M instructions: about 0.04 s at 2 per cycle and 3 GHz */
    if (__builtin_cpu_supports("avx512f")) out->f32_gmacs = best_gmacs(loop_f32, iters, 16, reps);
    if (__builtin_cpu_supports("avx512vnni")) out->int8_gmacs = best_gmacs(loop_int8, iters, 64, reps);
    if (__builtin_cpu_supports("avx512bf16")) out->bf16_gmacs = best_gmacs(loop_bf16, iters, 32, reps);
#else
    (void)reps;
#endif
}
