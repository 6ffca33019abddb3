/* dtype.h - the element types a stored matrix may have (safetensors / GGUF), shared by the
 * checkpoint readers (model.h) and the matrix kernels (kernels.h), which need nothing else of a model.
 */
#ifndef SP_DTYPE_H
#define SP_DTYPE_H

typedef enum { DT_F32 = 0, DT_F16 = 1, DT_BF16 = 2 } DType;

#endif
