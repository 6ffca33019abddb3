/* modelorigin.h - what the report says of a model directory a run names (runs.draft_dir / target_dir):
 * its weights' storage type, and whether it holds a
 * random-init checkpoint: `sprinter init-random` (engine/model/presets.c) writes its seed into
 * model.safetensors' __metadata__ as "sprinter_init_seed". The analysis says "no verdict:
 * random-init models" for such pairs: their acceptance measures the harness, not a model pair.
 * Reads the file's header only; needs no model code. */
#ifndef SP_MODELORIGIN_H
#define SP_MODELORIGIN_H

#include <stddef.h>

#include "rules.h" /* SP_INIT_SEED_KEY */

typedef enum {
    ORIGIN_UNKNOWN = 0 /* no readable model.safetensors */,
    ORIGIN_CHECKPOINT = 1,
    ORIGIN_RANDOM_INIT = 2,
    ORIGIN_GGUF_FILE = 3 /* a GGUF file alone (sp_is_gguf_file): no init-random mark can be read from it */
} ModelOrigin;

/* dir's origin; for ORIGIN_RANDOM_INIT *seed (if not NULL) is the seed init-random used. */
ModelOrigin model_origin(const char *dir, unsigned long long *seed);

/* The weights' storage type, from the tensor infos of dir itself when it is a GGUF file alone, of
 * dir/model.gguf when dir holds one (the file model_load
 * reads then), else from model.safetensors' header; nothing else is read. Counted over the matrices
 * (tensors of 2 or more dimensions: norm weights and biases, which GGUF files keep F32 whatever the
 * matrices' type, are left out; every tensor when there is no matrix): "f32", "f16", "bf16", "q8_0"
 * (another type by its safetensors name in lower case, or "ggml type N") when they all agree, else
 * "mixed: N1 t1, N2 t2, ..." most common first (GPT-2 small exported as Q8_0: "mixed: 49 q8_0, 1 f32", its
 * position embedding). Writes buf (cap bytes) and returns 0; -1 with buf "" when there is no readable
 * weights file. */
int model_weights_dtype(const char *dir, char *buf, size_t cap);

#endif
