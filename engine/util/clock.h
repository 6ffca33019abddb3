/* clock.h - the one monotonic wall clock of the harness (decoder latencies, sweep progress, the CLI's
 * timings, the benchmarks). Header-only (no code to link), so every part may include it.
 */
#ifndef SP_CLOCK_H
#define SP_CLOCK_H

#include <time.h>

/* Seconds since an arbitrary fixed point (CLOCK_MONOTONIC: not affected by changes of the system
 * time); only differences mean anything. */
static inline double sp_now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

#endif
