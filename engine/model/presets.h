/* presets.h - Hugging Face config.json objects for named model shapes, and random initialisation
 * of a full model directory (config.json + model.safetensors) for any config. */
#ifndef SP_PRESETS_H
#define SP_PRESETS_H

#include <cjson/cJSON.h>
#include <stdint.h>

#include "error.h"
#include "model.h"

/* Architectures are named here by init-random's --arch spelling ("gpt2", "gpt-neo", "llama"); the
 * table is in presets.c (add a row there for a new architecture of arch.c's table). */
/* Names of the presets for an architecture, NULL-terminated; NULL if the architecture is unknown. */
const char *const *preset_names(const char *arch);
/* The config.json model_type of an --arch spelling, or NULL. */
const char *preset_model_type(const char *arch);
/* "gpt2, gpt-neo, llama": the --arch spellings, for messages (a static string). */
const char *preset_arch_list(void);

/* The --arch spelling whose presets include `preset` (arch NULL: any; a name two architectures
 * share, as "tiny", then needs arch), or NULL with err naming the choices. */
const char *preset_arch_of(const char *preset, const char *arch, SpErr *err);

/* Parameters a config implies, from its tensor table (model_tensor_specs) without weights: all of
 * them (a tied embedding counted once), and those outside the token embedding and the LM head. */
typedef struct ParamCount {
    int64_t total, non_embedding;
} ParamCount;
int config_param_count(const ModelConfig *cfg, ParamCount *out, SpErr *err);

/* A new config object (caller deletes) for arch + preset, or NULL with err. */
cJSON *preset_config(const char *arch, const char *preset, SpErr *err);

/* Writes out_dir/config.json and out_dir/model.safetensors (dtype F32/F16/BF16) with weights drawn
 * from the seeded RNG: matrices and biases ~ N(0, initializer_range^2), norm weights
 * 1 + N(0, initializer_range^2). Creates out_dir if needed; each file is written atomically. */
/* name: what errors call the configuration (its file path, or "preset NAME"). */
int init_random_model(const cJSON *config, const char *name, DType dtype, uint64_t seed, const char *out_dir, SpErr *err);

#endif
