/* dtype.h - the element types a stored matrix may have (safetensors / GGUF), shared by the
 * checkpoint readers (model.h) and the matrix kernels (kernels.h), which need nothing else of a model.
 *
 * DT_Q8_0 is ggml's Q8_0 (ggml-common.h block_q8_0): a row is cut into blocks of Q8_0_BLOCK values,
 * each stored as an IEEE half scale d followed by Q8_0_BLOCK int8 quants q, value = d q. Quantizing
 * follows ggml's quantize_row_q8_0_ref exactly: d = max|x| / 127 (f32, then rounded to half), q =
 * roundf(x / d) with 1/d taken from the f32 d (0 when d is 0). Rows of a Q8_0 matrix have a multiple
 * of Q8_0_BLOCK elements; offsets into one are multiples of Q8_0_BLOCK. */
#ifndef SP_DTYPE_H
#define SP_DTYPE_H

#include <stddef.h>
#include <stdint.h>

typedef enum { DT_F32 = 0, DT_F16 = 1, DT_BF16 = 2, DT_Q8_0 = 3 } DType;
#define DT_COUNT 4

#define Q8_0_BLOCK 32
typedef struct BlockQ8_0 {
    uint16_t d; /* IEEE half */
    int8_t qs[Q8_0_BLOCK];
} BlockQ8_0;
_Static_assert(sizeof(BlockQ8_0) == 2 + Q8_0_BLOCK, "block_q8_0 is 34 bytes, unpadded");

/* Bytes of n consecutive elements of dtype t (Q8_0: n a multiple of Q8_0_BLOCK). */
static inline size_t dtype_row_bytes(DType t, size_t n) {
    return t == DT_F32 ? 4 * n : t == DT_Q8_0 ? n / Q8_0_BLOCK * sizeof(BlockQ8_0) : 2 * n;
}
/* The dtype's name as the CLI and the reports spell it. */
static inline const char *dtype_name(DType t) {
    static const char *const names[DT_COUNT] = {"f32", "f16", "bf16", "q8_0"};
    return (unsigned)t < DT_COUNT ? names[t] : "?";
}

#endif
