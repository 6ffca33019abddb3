/* bench_batch.c - throughput of forward_batch (model.h) over B sessions of one model, against the
 * roofline, one process.
 *
 * For each B of --batches: B sessions, each prefilled with `prompt` random tokens; then `steps`
 * decode steps, each one forward_batch of B one-row requests (what B drafts, or B autoregressive
 * decodes, of a lock-step sweep ask for), `warmup` steps untimed first; the caches are truncated
 * back between repetitions. tokens_per_s = B steps / time (median over `reps`; the B values are
 * interleaved within each repetition, so they are paired against the same machine state).
 * Roofline: a step streams the weights once, whatever B: roofline_tokens_per_s = B x bandwidth /
 * model_weight_bytes() (bandwidth = max(STREAM copy, triad) measured in the same process after the
 * model); a B past which the FMAs, not the weights, dominate falls below it.
 * Writes one JSON object (--out or stdout). */
#include <cblas.h>
#include <cjson/cJSON.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "model.h"
#include "stream.h"

#define MAX_B 64
#define MAX_REPS 64

typedef struct Opts {
    const char *model_dir, *name, *out;
    int threads, prompt, warmup, steps, reps, stream_mb;
    int batches[16], n_batches;
} Opts;

static const char kHelp[] =
    "usage: bench_batch --model DIR [options]\n"
    "  --name NAME       label (default: the directory)\n"
    "  --threads T       OpenBLAS and STREAM threads (default 1)\n"
    "  --batches LIST    comma-separated B values (default 1,2,4,8,16; each <= 64)\n"
    "  --prompt P        tokens prefilled per session (default 32)\n"
    "  --warmup W        untimed steps per repetition (default 2)\n"
    "  --steps N         timed steps per repetition (default 16)\n"
    "  --reps R          repetitions (default 5)\n"
    "  --stream-mb MB    STREAM array size (default 256)\n"
    "  --out FILE        JSON (default stdout)\n";

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int parse_opts(int argc, char **argv, Opts *o) {
    *o = (Opts){.threads = 1, .prompt = 32, .warmup = 2, .steps = 16, .reps = 5, .stream_mb = 256,
                .batches = {1, 2, 4, 8, 16}, .n_batches = 5};
    static const struct option opts[] = {{"model", required_argument, 0, 'm'},   {"name", required_argument, 0, 'n'},
                                         {"threads", required_argument, 0, 't'}, {"batches", required_argument, 0, 'b'},
                                         {"prompt", required_argument, 0, 'p'},  {"warmup", required_argument, 0, 'w'},
                                         {"steps", required_argument, 0, 's'},   {"reps", required_argument, 0, 'r'},
                                         {"stream-mb", required_argument, 0, 'M'}, {"out", required_argument, 0, 'o'},
                                         {"help", no_argument, 0, 'h'},          {0, 0, 0, 0}};
    for (int ch; (ch = getopt_long(argc, argv, "", opts, NULL)) != -1;) {
        switch (ch) {
        case 'm': o->model_dir = optarg; break;
        case 'n': o->name = optarg; break;
        case 't': o->threads = atoi(optarg); break;
        case 'b': {
            o->n_batches = 0;
            for (char *s = strtok(optarg, ","); s && o->n_batches < 16; s = strtok(NULL, ",")) o->batches[o->n_batches++] = atoi(s);
            break;
        }
        case 'p': o->prompt = atoi(optarg); break;
        case 'w': o->warmup = atoi(optarg); break;
        case 's': o->steps = atoi(optarg); break;
        case 'r': o->reps = atoi(optarg); break;
        case 'M': o->stream_mb = atoi(optarg); break;
        case 'o': o->out = optarg; break;
        case 'h': fputs(kHelp, stdout); exit(0);
        default: return -1;
        }
    }
    if (!o->model_dir || o->threads < 1 || o->prompt < 1 || o->steps < 1 || o->reps < 1 || o->reps > MAX_REPS ||
        o->warmup < 0 || o->n_batches < 1)
        return -1;
    for (int i = 0; i < o->n_batches; i++)
        if (o->batches[i] < 1 || o->batches[i] > MAX_B) return -1;
    if (!o->name) o->name = o->model_dir;
    return 0;
}

/* One repetition at batch B: steps of B one-row requests after the prefill; seconds of the timed steps. */
static int one_rep(ForwardBatch *fb, Session **s, int B, const Opts *o, int V, uint64_t *seed, double *secs, SpErr *err) {
    int32_t *prompt = malloc((size_t)o->prompt * sizeof *prompt), tok[MAX_B];
    SessionRows req[MAX_B];
    if (!prompt) return sp_fail(err, "out of memory");
    int rc = 0;
    for (int b = 0; b < B && !rc; b++) {
        for (int i = 0; i < o->prompt; i++) prompt[i] = (int32_t)((*seed = *seed * 6364136223846793005ull + 1) >> 33) % V;
        rc = session_truncate(s[b], 0, err) || session_prefill(s[b], prompt, o->prompt, NULL, NULL, err);
    }
    double t0 = 0;
    for (int step = 0; step < o->warmup + o->steps && !rc; step++) {
        if (step == o->warmup) t0 = sp_now_s();
        for (int b = 0; b < B; b++) {
            tok[b] = (int32_t)((*seed = *seed * 6364136223846793005ull + 1) >> 33) % V;
            req[b] = (SessionRows){s[b], &tok[b], 1, 1, NULL, NULL};
        }
        rc = forward_batch(fb, req, B, err);
    }
    *secs = sp_now_s() - t0;
    free(prompt);
    return rc;
}

int main(int argc, char **argv) {
    Opts o;
    if (parse_opts(argc, argv, &o)) {
        fputs(kHelp, stderr);
        return 2;
    }
    openblas_set_num_threads(o.threads);
    SpErr err = {{0}};
    Model *m = model_load(o.model_dir, &err);
    if (!m) {
        fprintf(stderr, "bench_batch: %s\n", err.msg);
        return 1;
    }
    int maxB = 0;
    for (int i = 0; i < o.n_batches; i++)
        if (o.batches[i] > maxB) maxB = o.batches[i];
    int ctx = o.prompt + o.warmup + o.steps + 1, V = model_config(m)->vocab_size;
    Session *s[MAX_B] = {0};
    ForwardBatch *fb = forward_batch_new(m, maxB, &err);
    int rc = fb ? 0 : 1;
    for (int b = 0; b < maxB && !rc; b++)
        if (!(s[b] = session_new(m, ctx, o.prompt, &err))) rc = 1;
    double secs[16][MAX_REPS];
    uint64_t seed = 1;
    for (int r = 0; r < o.reps && !rc; r++)
        for (int i = 0; i < o.n_batches && !rc; i++) { /* interleaved: each repetition visits every B */
            int B = o.batches[(i + r) % o.n_batches];
            int k = (i + r) % o.n_batches;
            if (one_rep(fb, s, B, &o, V, &seed, &secs[k][r], &err)) rc = 1;
        }
    int64_t wbytes = model_weight_bytes(m);
    for (int b = 0; b < maxB; b++) session_free(s[b]);
    forward_batch_free(fb);
    model_free(m);
    if (rc) {
        fprintf(stderr, "bench_batch: %s\n", err.msg);
        return 1;
    }
    StreamResult sr;
    size_t n = (size_t)o.stream_mb * (1u << 20) / sizeof(double);
    if (stream_run(n, o.threads, 5, &sr)) {
        fprintf(stderr, "bench_batch: STREAM out of memory\n");
        return 1;
    }
    double bw = (sr.copy_gbs > sr.triad_gbs ? sr.copy_gbs : sr.triad_gbs) * 1e9;
    double load[3] = {0};
    if (getloadavg(load, 3) < 0) load[0] = -1;
    cJSON *root = cJSON_CreateObject(), *rows = cJSON_AddArrayToObject(root, "batches");
    cJSON_AddStringToObject(root, "model", o.name);
    cJSON_AddNumberToObject(root, "weight_bytes", (double)wbytes);
    cJSON_AddNumberToObject(root, "threads", o.threads);
    cJSON_AddNumberToObject(root, "bandwidth_gbs", bw / 1e9);
    cJSON_AddNumberToObject(root, "load_avg_1m_after", load[0]);
    cJSON_AddNumberToObject(root, "steps", o.steps);
    cJSON_AddNumberToObject(root, "reps", o.reps);
    cJSON_AddNumberToObject(root, "prompt", o.prompt);
    for (int i = 0; i < o.n_batches; i++) {
        int B = o.batches[i];
        double v[MAX_REPS];
        for (int r = 0; r < o.reps; r++) v[r] = (double)B * o.steps / secs[i][r];
        qsort(v, (size_t)o.reps, sizeof *v, cmp_double);
        double med = o.reps % 2 ? v[o.reps / 2] : 0.5 * (v[o.reps / 2 - 1] + v[o.reps / 2]);
        double roof = (double)B * bw / (double)wbytes;
        cJSON *row = cJSON_CreateObject();
        cJSON_AddNumberToObject(row, "batch", B);
        cJSON_AddNumberToObject(row, "tokens_per_s_median", med);
        cJSON_AddNumberToObject(row, "tokens_per_s_min", v[0]);
        cJSON_AddNumberToObject(row, "tokens_per_s_max", v[o.reps - 1]);
        cJSON_AddNumberToObject(row, "step_ms_median", 1000.0 * B / med);
        cJSON_AddNumberToObject(row, "roofline_tokens_per_s", roof);
        cJSON_AddNumberToObject(row, "roofline_fraction", med / roof);
        cJSON_AddItemToArray(rows, row);
    }
    char *txt = cJSON_Print(root);
    FILE *f = o.out ? fopen(o.out, "w") : stdout;
    if (!f || fprintf(f, "%s\n", txt) < 0) {
        fprintf(stderr, "bench_batch: cannot write %s\n", o.out ? o.out : "stdout");
        return 1;
    }
    if (f != stdout) fclose(f);
    free(txt);
    cJSON_Delete(root);
    return 0;
}
