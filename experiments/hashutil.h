/* hashutil.h - SHA-256 (nettle) of files, model directories and strings, as lowercase hex; and the
 * per-prompt RNG seed every command derives from a run's seed. */
#ifndef SP_HASHUTIL_H
#define SP_HASHUTIL_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"

#define SP_SHA256_HEX 65 /* 64 hex digits + NUL */

int sha256_file(const char *path, char out[SP_SHA256_HEX], SpErr *err);
void sha256_str(const char *s, size_t len, char out[SP_SHA256_HEX]);
/* Hash over config.json and every *.safetensors / *.gguf / index / tokenizer file of a model directory
 * in name order (file names included), so any change to what the loader reads changes it. A GGUF file
 * alone (sp_is_gguf_file) hashes as sha256_file of its content, whatever its path. */
int sha256_model_dir(const char *dir, char out[SP_SHA256_HEX], SpErr *err);

/* The RNG seed of prompt index i of a run with seed `seed` (splitmix64 mix): independent of the
 * order of work, --jobs and sharding. */
uint64_t prompt_seed(uint64_t seed, int prompt_index);

#endif
