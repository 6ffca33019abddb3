/* stream.c - see stream.h. Each thread owns a contiguous slice of every array and touches it
 * first (so its pages are placed where it runs); all threads start each kernel together behind a
 * barrier and the wall time of the slowest one is the kernel's time. */
#include "stream.h"

#include <pthread.h>
#include <stdlib.h>

#include "clock.h"

enum { K_COPY = 0, K_TRIAD = 1, K_READ = 2, K_INIT = 3, K_QUIT = 4 };

typedef struct Shared {
    double *a, *b, *c;
    size_t n;
    int threads;
    int kernel;
    pthread_barrier_t start, done;
    double sink[64]; /* per-thread read-kernel sums, so the loop is not dropped */
} Shared;

typedef struct Worker {
    Shared *sh;
    int id;
} Worker;

static void run_kernel(Shared *sh, int id) {
    size_t per = (sh->n + (size_t)sh->threads - 1) / (size_t)sh->threads;
    size_t lo = per * (size_t)id, hi = lo + per > sh->n ? sh->n : lo + per;
    double *restrict a = sh->a, *restrict b = sh->b, *restrict c = sh->c;
    const double s = 3.0;
    switch (sh->kernel) {
    case K_INIT:
        for (size_t i = lo; i < hi; i++) a[i] = 1.0, b[i] = 2.0, c[i] = 0.0;
        break;
    case K_COPY: /* c = a */
        for (size_t i = lo; i < hi; i++) c[i] = a[i];
        break;
    case K_TRIAD: /* a = b + s c */
        for (size_t i = lo; i < hi; i++) a[i] = b[i] + s * c[i];
        break;
    case K_READ: { /* sum(b), 16 independent accumulators so it is not add-latency bound */
        double acc[16] = {0};
        size_t i = lo;
        for (; i + 16 <= hi; i += 16)
            for (int j = 0; j < 16; j++) acc[j] += b[i + j];
        for (; i < hi; i++) acc[0] += b[i];
        double t = 0;
        for (int j = 0; j < 16; j++) t += acc[j];
        sh->sink[id & 63] += t;
    } break;
    }
}

static void *worker_main(void *arg) {
    Worker *w = arg;
    Shared *sh = w->sh;
    for (;;) {
        pthread_barrier_wait(&sh->start);
        if (sh->kernel == K_QUIT) return NULL;
        run_kernel(sh, w->id);
        pthread_barrier_wait(&sh->done);
    }
}

/* Runs the current kernel on all threads (the caller is thread 0); returns wall seconds. */
static double timed(Shared *sh, int kernel) {
    sh->kernel = kernel;
    double t0 = sp_now_s();
    pthread_barrier_wait(&sh->start);
    run_kernel(sh, 0);
    pthread_barrier_wait(&sh->done);
    return sp_now_s() - t0;
}

int stream_run(size_t n, int threads, int reps, StreamResult *out) {
    if (threads < 1) threads = 1;
    if (threads > 64) threads = 64;
    if (reps < 1) reps = 1;
    Shared sh = {0};
    sh.n = n;
    sh.threads = threads;
    sh.a = malloc(n * sizeof(double));
    sh.b = malloc(n * sizeof(double));
    sh.c = malloc(n * sizeof(double));
    Worker w[64];
    pthread_t tid[64];
    if (!sh.a || !sh.b || !sh.c) {
        free(sh.a), free(sh.b), free(sh.c);
        return -1;
    }
    pthread_barrier_init(&sh.start, NULL, (unsigned)threads);
    pthread_barrier_init(&sh.done, NULL, (unsigned)threads);
    for (int i = 1; i < threads; i++) {
        w[i] = (Worker){&sh, i};
        pthread_create(&tid[i], NULL, worker_main, &w[i]);
    }
    timed(&sh, K_INIT);
    double best[3] = {1e30, 1e30, 1e30};
    for (int r = 0; r < reps; r++) {
        const int ks[3] = {K_COPY, K_TRIAD, K_READ};
        for (int k = 0; k < 3; k++) {
            double t = timed(&sh, ks[k]);
            if (t < best[k]) best[k] = t;
        }
    }
    sh.kernel = K_QUIT;
    pthread_barrier_wait(&sh.start);
    for (int i = 1; i < threads; i++) pthread_join(tid[i], NULL);
    pthread_barrier_destroy(&sh.start);
    pthread_barrier_destroy(&sh.done);
    double bytes = (double)n * sizeof(double);
    out->copy_gbs = 2.0 * bytes / best[0] / 1e9;
    out->triad_gbs = 3.0 * bytes / best[1] / 1e9;
    out->read_gbs = bytes / best[2] / 1e9;
    out->n = n;
    out->threads = threads;
    out->reps = reps;
    /* keep the read kernel's result observable */
    volatile double keep = sh.sink[0];
    (void)keep;
    free(sh.a), free(sh.b), free(sh.c);
    return 0;
}
