/* modelorigin.h - whether a model directory a run names (runs.draft_dir / target_dir) holds a
 * random-init checkpoint: `sprinter init-random` (engine/model/presets.c) writes its seed into
 * model.safetensors' __metadata__ as "sprinter_init_seed". The analysis says "no verdict:
 * random-init models" for such pairs: their acceptance measures the harness, not a model pair.
 * Reads the file's header only; needs no model code. */
#ifndef SP_MODELORIGIN_H
#define SP_MODELORIGIN_H

#include "rules.h" /* SP_INIT_SEED_KEY */

typedef enum { ORIGIN_UNKNOWN = 0 /* no readable model.safetensors */, ORIGIN_CHECKPOINT = 1, ORIGIN_RANDOM_INIT = 2 } ModelOrigin;

/* dir's origin; for ORIGIN_RANDOM_INIT *seed (if not NULL) is the seed init-random used. */
ModelOrigin model_origin(const char *dir, unsigned long long *seed);

#endif
