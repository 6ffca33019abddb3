/* stream.h - STREAM-style memory bandwidth (McCalpin's copy and triad kernels, plus a read-only
 * sum), multi-threaded with POSIX threads so the thread count matches the engine's OpenBLAS
 * threads. Bytes counted as STREAM does: copy 2 x 8 B per element, triad 3 x 8 B, read 8 B
 * (write-allocate traffic is not counted). Owns its arrays only for the duration of the call. */
#ifndef SP_BENCH_STREAM_H
#define SP_BENCH_STREAM_H

#include <stddef.h>

typedef struct StreamResult {
    double copy_gbs, triad_gbs, read_gbs; /* best over the repetitions, 1e9 bytes per second */
    size_t n;                             /* elements per array (doubles) */
    int threads, reps;
} StreamResult;

/* Runs each kernel `reps` times over three arrays of n doubles (each at least 4x the last-level
 * cache for meaningful numbers) with `threads` threads; 0 on success, -1 when out of memory. */
int stream_run(size_t n, int threads, int reps, StreamResult *out);

#endif
