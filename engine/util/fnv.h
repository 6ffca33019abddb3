/* fnv.h - FNV-1a 64, the one byte hash the project writes by hand (token-log digests, the tokenizer's
 * vocabulary table, the prefill memo's keys): h = (h ^ byte) * prime over the bytes, from
 * SP_FNV1A64_OFFSET. */
#ifndef SP_FNV_H
#define SP_FNV_H

#include <stddef.h>
#include <stdint.h>

#define SP_FNV1A64_OFFSET 0xcbf29ce484222325ULL
#define SP_FNV1A64_PRIME 0x100000001b3ULL

/* h carried on over p[0..n). */
static inline uint64_t sp_fnv1a64(uint64_t h, const void *p, size_t n) {
    const unsigned char *c = p;
    for (size_t i = 0; i < n; i++) h = (h ^ c[i]) * SP_FNV1A64_PRIME;
    return h;
}

#endif
