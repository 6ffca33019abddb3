/* modelorigin.c - see modelorigin.h. */
#include "modelorigin.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A safetensors header is u64 n, then n bytes of JSON; random-init files keep it small, and a
 * header this long belongs to a checkpoint too big to be one (their metadata comes first anyway). */
#define HEADER_MAX ((uint64_t)64 << 20)

ModelOrigin model_origin(const char *dir, unsigned long long *seed) {
    char path[4200];
    if (snprintf(path, sizeof path, "%s/model.safetensors", dir) >= (int)sizeof path) return ORIGIN_UNKNOWN;
    FILE *f = fopen(path, "rb");
    if (!f) return ORIGIN_UNKNOWN;
    unsigned char len8[8];
    uint64_t n = 0;
    char *h = NULL;
    ModelOrigin o = ORIGIN_UNKNOWN;
    if (fread(len8, 1, 8, f) == 8) {
        for (int i = 7; i >= 0; i--) n = n << 8 | len8[i]; /* little-endian */
        if (n > 0 && n <= HEADER_MAX && (h = malloc((size_t)n + 1)) && fread(h, 1, (size_t)n, f) == (size_t)n) {
            h[n] = '\0';
            o = ORIGIN_CHECKPOINT;
            const char *k = strstr(h, "\"" SP_INIT_SEED_KEY "\"");
            if (k) { /* "sprinter_init_seed": "123" */
                k += strlen(SP_INIT_SEED_KEY) + 2;
                while (*k == ' ' || *k == ':' || *k == '"') k++;
                if (seed) *seed = strtoull(k, NULL, 10);
                o = ORIGIN_RANDOM_INIT;
            }
        }
    }
    free(h);
    fclose(f);
    return o;
}
