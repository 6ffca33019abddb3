/* bench_forward.c - forward-pass benchmark of one model with the sprinter engine.
 *
 * Measures, in one process (so ru_maxrss is this model's peak):
 *   decode     batch-1 tokens/s in steady state: prefill `prompt` random tokens, `warmup` decode
 *              steps untimed, then `steps` timed decode steps; repeated `reps` times from the same
 *              prompt (the cache is truncated back), best and median rep reported.
 *   verify     time of one batched forward of g tokens (logits for all g rows, as a speculative
 *              verification pass) at context `prompt`, for g = 1..max_gamma, median of
 *              `verify_reps` interleaved repetitions; verify_cost_ratio_gK = t(K) / t(1).
 *   prefill    `prefill` tokens from an empty cache in one batched pass (logits of the last row
 *              only, as session_prefill), best of `prefill_reps`.
 *   peak RSS   getrusage ru_maxrss after the model measurements (mmap'd weight pages that were
 *              touched count), before the bandwidth arrays are allocated.
 *   bandwidth  STREAM copy / triad / read with the same thread count (bench/stream.c), after the
 *              model is freed; roofline_tokens_per_s = max(copy, triad) / model_weight_bytes().
 *   compute    one core's peak multiply-accumulates per second by f32 FMA, int8 and bf16 dot
 *              products (bench/peak.c), the roofline of compute-bound rows (prefill, verification,
 *              batched steps): compute_peak_1_thread.*_gmacs, with the bandwidth (not with --no-stream).
 * Tokens are drawn uniformly from the vocabulary with a fixed seed: cost does not depend on them.
 * Writes one JSON object (to --out or stdout) with the measurements and the machine's facts.
 */
#include <cblas.h>
#include <cjson/cJSON.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/resource.h>
#include <unistd.h>

#include "clock.h"
#include "model.h"
#include "peak.h"
#include "stream.h"

#define MAX_GAMMA 16

typedef struct Opts {
    const char *model_dir, *name, *out;
    int threads, prompt, warmup, steps, reps, max_gamma, verify_reps, prefill, prefill_reps;
    int stream_mb, stream_reps, no_stream, stream_only;
    int cpu_clock; /* --cpu-clock: time by the process's CPU clock (A/B rounds on a loaded machine) */
    uint64_t seed;
} Opts;

/* Seconds by the wall clock, or by the process's CPU-time clock (all threads' time summed: at one
 * thread it leaves out the time other processes hold the core, not the memory stalls). */
static double tick(const Opts *o) {
    if (!o->cpu_clock) return sp_now_s();
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static const char kHelp[] =
    "usage: bench_forward --model DIR [options]     (or --stream-only)\n"
    "  --name NAME          label in the output (default: the directory)\n"
    "  --threads T          OpenBLAS threads and STREAM threads (default: online cores)\n"
    "  --prompt P           context before decode / verify (default 64)\n"
    "  --warmup W           untimed decode steps (default 8)\n"
    "  --steps N            timed decode steps per rep (default 32)\n"
    "  --reps R             decode repetitions (default 3)\n"
    "  --max-gamma G        verify g = 1..G tokens in one pass (default 8)\n"
    "  --verify-reps R      repetitions per g (default 7)\n"
    "  --prefill M          prefill length (default 256; 0 skips)\n"
    "  --prefill-reps R     (default 2)\n"
    "  --stream-mb MB       size of each STREAM array (default 256)\n"
    "  --stream-reps R      (default 5)\n"
    "  --no-stream          skip the bandwidth measurement\n"
    "  --cpu-clock          time decode / verify / prefill by the process's CPU clock, not the wall clock\n"
    "  --seed S             token seed (default 1)\n"
    "  --out FILE           JSON output (default stdout)\n";

static uint64_t rng_next(uint64_t *s) { /* splitmix64 */
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static int parse_int(const char *opt, const char *s, int lo, int hi, int *out) {
    char *end;
    long v = strtol(s, &end, 10);
    if (*s == '\0' || *end != '\0' || v < lo || v > hi) {
        fprintf(stderr, "bench_forward: --%s %s: expected an integer in [%d, %d]\n", opt, s, lo, hi);
        return -1;
    }
    *out = (int)v;
    return 0;
}

static int parse(int argc, char **argv, Opts *o) {
    static const struct option opts[] = {
        {"model", required_argument, 0, 'm'},       {"name", required_argument, 0, 'N'},
        {"threads", required_argument, 0, 't'},     {"prompt", required_argument, 0, 'p'},
        {"warmup", required_argument, 0, 'w'},      {"steps", required_argument, 0, 's'},
        {"reps", required_argument, 0, 'r'},        {"max-gamma", required_argument, 0, 'g'},
        {"verify-reps", required_argument, 0, 'v'}, {"prefill", required_argument, 0, 'P'},
        {"prefill-reps", required_argument, 0, 'R'}, {"stream-mb", required_argument, 0, 'M'},
        {"stream-reps", required_argument, 0, 'S'}, {"no-stream", no_argument, 0, 'x'},
        {"stream-only", no_argument, 0, 'X'},       {"seed", required_argument, 0, 'e'},
        {"out", required_argument, 0, 'o'},         {"help", no_argument, 0, 'h'},
        {"cpu-clock", no_argument, 0, 'C'},
        {0, 0, 0, 0}};
    for (int c; (c = getopt_long(argc, argv, "", opts, NULL)) != -1;) {
        int rc = 0;
        switch (c) {
        case 'm': o->model_dir = optarg; break;
        case 'N': o->name = optarg; break;
        case 't': rc = parse_int("threads", optarg, 1, 64, &o->threads); break;
        case 'p': rc = parse_int("prompt", optarg, 1, 1 << 16, &o->prompt); break;
        case 'w': rc = parse_int("warmup", optarg, 0, 1 << 16, &o->warmup); break;
        case 's': rc = parse_int("steps", optarg, 1, 1 << 16, &o->steps); break;
        case 'r': rc = parse_int("reps", optarg, 1, 1000, &o->reps); break;
        case 'g': rc = parse_int("max-gamma", optarg, 1, MAX_GAMMA, &o->max_gamma); break;
        case 'v': rc = parse_int("verify-reps", optarg, 1, 1000, &o->verify_reps); break;
        case 'P': rc = parse_int("prefill", optarg, 0, 1 << 16, &o->prefill); break;
        case 'R': rc = parse_int("prefill-reps", optarg, 1, 1000, &o->prefill_reps); break;
        case 'M': rc = parse_int("stream-mb", optarg, 1, 1 << 16, &o->stream_mb); break;
        case 'S': rc = parse_int("stream-reps", optarg, 1, 1000, &o->stream_reps); break;
        case 'x': o->no_stream = 1; break;
        case 'X': o->stream_only = 1; break;
        case 'C': o->cpu_clock = 1; break;
        case 'e': o->seed = strtoull(optarg, NULL, 10); break;
        case 'o': o->out = optarg; break;
        case 'h': fputs(kHelp, stdout); return 1;
        default: fputs(kHelp, stderr); return 2;
        }
        if (rc) return 2;
    }
    if (!o->model_dir && !o->stream_only) {
        fprintf(stderr, "bench_forward: need --model DIR (or --stream-only)\n");
        return 2;
    }
    if (!o->name) o->name = o->model_dir ? o->model_dir : "stream";
    return 0;
}

/* ------------------------------------------------------------------ machine facts */

static void add_machine(cJSON *root, int threads) {
    cJSON *m = cJSON_AddObjectToObject(root, "machine");
    cJSON_AddNumberToObject(m, "cores_online", (double)sysconf(_SC_NPROCESSORS_ONLN));
    char line[512], model[256] = "unknown";
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (f) {
        while (fgets(line, sizeof line, f)) {
            if (!strncmp(line, "model name", 10)) {
                char *p = strchr(line, ':');
                if (p) {
                    p++;
                    while (*p == ' ' || *p == '\t') p++;
                    snprintf(model, sizeof model, "%s", p);
                    model[strcspn(model, "\n")] = '\0';
                }
                break;
            }
        }
        fclose(f);
    }
    cJSON_AddStringToObject(m, "cpu_model", model);
    f = fopen("/proc/loadavg", "r");
    if (f) {
        double l1 = 0, l5 = 0, l15 = 0;
        if (fscanf(f, "%lf %lf %lf", &l1, &l5, &l15) == 3) {
            cJSON *la = cJSON_AddArrayToObject(m, "loadavg_at_start");
            cJSON_AddItemToArray(la, cJSON_CreateNumber(l1));
            cJSON_AddItemToArray(la, cJSON_CreateNumber(l5));
            cJSON_AddItemToArray(la, cJSON_CreateNumber(l15));
        }
        fclose(f);
    }
    cJSON_AddStringToObject(m, "openblas_config", openblas_get_config());
    cJSON_AddStringToObject(m, "openblas_corename", openblas_get_corename());
    cJSON_AddNumberToObject(m, "openblas_threads", openblas_get_num_threads());
    cJSON_AddNumberToObject(m, "threads", threads);
    cJSON *env = cJSON_AddObjectToObject(m, "env");
    extern char **environ;
    for (char **e = environ; *e; e++) {
        if (strncmp(*e, "OPENBLAS_", 9) && strncmp(*e, "OMP_", 4) && strncmp(*e, "GOTO_", 5)) continue;
        const char *eq = strchr(*e, '=');
        if (!eq) continue;
        char key[128];
        snprintf(key, sizeof key, "%.*s", (int)(eq - *e), *e);
        cJSON_AddStringToObject(env, key, eq + 1);
    }
}

/* ------------------------------------------------------------------ measurements */

typedef struct Results {
    double decode_best, decode_median; /* tokens/s */
    double decode_step_ms_median;
    double verify_ms[MAX_GAMMA + 1]; /* median ms for g tokens */
    double prefill_tps, prefill_s;
    long peak_rss_kb;
    double load_s;
} Results;

static int fill_tokens(int32_t *t, int n, int V, uint64_t *rng) {
    for (int i = 0; i < n; i++) t[i] = (int32_t)(rng_next(rng) % (uint64_t)V);
    return 0;
}

static int bench_model(const Opts *o, Results *r, cJSON *root, SpErr *err) {
    double t0 = tick(o);
    Model *m = model_load(o->model_dir, err);
    if (!m) return -1;
    r->load_s = tick(o) - t0;
    const ModelConfig *c = model_config(m);
    int ctx_needed = o->prompt + o->warmup + o->steps;
    if (o->prompt + o->max_gamma > ctx_needed) ctx_needed = o->prompt + o->max_gamma;
    if (o->prefill > ctx_needed) ctx_needed = o->prefill;
    if (ctx_needed > c->max_pos) {
        model_free(m);
        return sp_fail(err, "the benchmark needs %d positions, the model has %d (lower --prompt/--steps/--prefill)",
                       ctx_needed, c->max_pos);
    }
    int max_batch = o->prefill > o->prompt ? o->prefill : o->prompt;
    if (o->max_gamma > max_batch) max_batch = o->max_gamma;
    Session *s = session_new(m, ctx_needed, max_batch, err);
    if (!s) {
        model_free(m);
        return -1;
    }
    int ntok = ctx_needed + max_batch;
    int32_t *tok = malloc((size_t)ntok * sizeof *tok);
    double *rates = malloc((size_t)o->reps * sizeof(double));
    double *steps_ms = malloc((size_t)o->reps * (size_t)o->steps * sizeof(double));
    double *vt = malloc((size_t)o->verify_reps * (MAX_GAMMA + 1) * sizeof(double));
    uint64_t rng = o->seed;
    int rc = -1;
    const float *logits;
    if (!tok || !rates || !steps_ms || !vt) {
        sp_fail(err, "out of memory");
        goto done;
    }
    fill_tokens(tok, ntok, c->vocab_size, &rng);

    cJSON_AddStringToObject(root, "arch", arch_name(c->arch));
    cJSON_AddNumberToObject(root, "params", (double)model_n_params(m));
    cJSON_AddNumberToObject(root, "weight_bytes", (double)model_weight_bytes(m));
    cJSON_AddNumberToObject(root, "n_layers", c->n_layers);
    cJSON_AddNumberToObject(root, "d_model", c->d_model);
    cJSON_AddNumberToObject(root, "vocab_size", c->vocab_size);

    /* decode: prefill the prompt once, then reps x (warmup + steps) from that point */
    if (session_prefill(s, tok, o->prompt, &logits, NULL, err)) goto done;
    for (int rep = 0; rep < o->reps; rep++) {
        if (session_truncate(s, o->prompt, err)) goto done;
        for (int i = 0; i < o->warmup; i++)
            if (session_forward(s, &tok[o->prompt + i], 1, &logits, NULL, err)) goto done;
        double ts = tick(o);
        for (int i = 0; i < o->steps; i++) {
            double t1 = tick(o);
            if (session_forward(s, &tok[o->prompt + o->warmup + i], 1, &logits, NULL, err)) goto done;
            steps_ms[rep * o->steps + i] = 1e3 * (tick(o) - t1);
        }
        rates[rep] = o->steps / (tick(o) - ts);
    }
    r->decode_step_ms_median = median(steps_ms, o->reps * o->steps);
    r->decode_best = 0;
    for (int i = 0; i < o->reps; i++) r->decode_best = rates[i] > r->decode_best ? rates[i] : r->decode_best;
    r->decode_median = median(rates, o->reps);

    /* verify: g tokens at context `prompt`, interleaved over g, median per g */
    for (int rep = 0; rep < o->verify_reps; rep++) {
        for (int k = 0; k < o->max_gamma; k++) {
            int g = rep % 2 ? o->max_gamma - k : k + 1; /* alternate the order to spread drift */
            if (session_truncate(s, o->prompt, err)) goto done;
            double t1 = tick(o);
            if (session_forward(s, &tok[o->prompt], g, &logits, NULL, err)) goto done;
            vt[rep * (MAX_GAMMA + 1) + g] = tick(o) - t1;
        }
    }
    for (int g = 1; g <= o->max_gamma; g++) {
        double col[1000];
        for (int rep = 0; rep < o->verify_reps; rep++) col[rep] = vt[rep * (MAX_GAMMA + 1) + g];
        r->verify_ms[g] = 1e3 * median(col, o->verify_reps);
    }

    /* prefill from an empty cache */
    r->prefill_s = 0;
    if (o->prefill > 0) {
        double best = 1e30;
        for (int rep = 0; rep < o->prefill_reps; rep++) {
            if (session_truncate(s, 0, err)) goto done;
            double t1 = tick(o);
            if (session_prefill(s, tok, o->prefill, &logits, NULL, err)) goto done;
            double t = tick(o) - t1;
            best = t < best ? t : best;
        }
        r->prefill_s = best;
        r->prefill_tps = o->prefill / best;
    }
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    r->peak_rss_kb = ru.ru_maxrss;
    rc = 0;
done:
    free(tok);
    free(rates);
    free(steps_ms);
    free(vt);
    session_free(s);
    model_free(m);
    return rc;
}

int main(int argc, char **argv) {
    Opts o = {0};
    o.threads = (int)sysconf(_SC_NPROCESSORS_ONLN);
    o.prompt = 64, o.warmup = 8, o.steps = 32, o.reps = 3, o.max_gamma = 8, o.verify_reps = 7;
    o.prefill = 256, o.prefill_reps = 2, o.stream_mb = 256, o.stream_reps = 5, o.seed = 1;
    int prc = parse(argc, argv, &o);
    if (prc) return prc == 1 ? 0 : prc;
    openblas_set_num_threads(o.threads);

    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "schema", "sprinter-bench-forward/1");
    cJSON_AddStringToObject(root, "name", o.name);
    if (o.model_dir) cJSON_AddStringToObject(root, "model_dir", o.model_dir);
    add_machine(root, o.threads);
    cJSON *set = cJSON_AddObjectToObject(root, "settings");
    cJSON_AddNumberToObject(set, "prompt", o.prompt);
    cJSON_AddNumberToObject(set, "warmup", o.warmup);
    cJSON_AddNumberToObject(set, "steps", o.steps);
    cJSON_AddNumberToObject(set, "reps", o.reps);
    cJSON_AddNumberToObject(set, "max_gamma", o.max_gamma);
    cJSON_AddNumberToObject(set, "verify_reps", o.verify_reps);
    cJSON_AddNumberToObject(set, "prefill", o.prefill);
    cJSON_AddNumberToObject(set, "prefill_reps", o.prefill_reps);
    cJSON_AddNumberToObject(set, "seed", (double)o.seed);
    cJSON_AddNumberToObject(root, "threads", o.threads);

    int rc = 0;
    if (!o.stream_only) {
        Results r = {0};
        SpErr err = {{0}};
        if (bench_model(&o, &r, root, &err)) {
            fprintf(stderr, "bench_forward: %s: %s\n", o.model_dir, err.msg);
            cJSON_Delete(root);
            return 1;
        }
        cJSON_AddNumberToObject(root, "load_s", r.load_s);
        cJSON_AddNumberToObject(root, "tokens_per_s", r.decode_best);
        cJSON_AddNumberToObject(root, "tokens_per_s_median", r.decode_median);
        cJSON_AddNumberToObject(root, "decode_step_ms_median", r.decode_step_ms_median);
        cJSON *vms = cJSON_AddObjectToObject(root, "verify_ms");
        for (int g = 1; g <= o.max_gamma; g++) {
            char key[32];
            snprintf(key, sizeof key, "g%d", g);
            cJSON_AddNumberToObject(vms, key, r.verify_ms[g]);
            snprintf(key, sizeof key, "verify_cost_ratio_g%d", g);
            cJSON_AddNumberToObject(root, key, r.verify_ms[g] / r.verify_ms[1]);
        }
        if (o.prefill > 0) {
            cJSON_AddNumberToObject(root, "prefill_tokens_per_s", r.prefill_tps);
            cJSON_AddNumberToObject(root, "prefill_s", r.prefill_s);
        } else {
            cJSON_AddNullToObject(root, "prefill_tokens_per_s");
        }
        cJSON_AddNumberToObject(root, "peak_rss_mb", r.peak_rss_kb / 1024.0);
    }
    if (!o.no_stream) {
        StreamResult sr;
        size_t n = (size_t)o.stream_mb * 1024 * 1024 / sizeof(double);
        if (stream_run(n, o.threads, o.stream_reps, &sr)) {
            fprintf(stderr, "bench_forward: out of memory for STREAM arrays of %d MB\n", o.stream_mb);
            rc = 1;
        } else {
            cJSON *b = cJSON_AddObjectToObject(root, "stream");
            cJSON_AddNumberToObject(b, "copy_gbs", sr.copy_gbs);
            cJSON_AddNumberToObject(b, "triad_gbs", sr.triad_gbs);
            cJSON_AddNumberToObject(b, "read_gbs", sr.read_gbs);
            cJSON_AddNumberToObject(b, "array_mb", o.stream_mb);
            cJSON_AddNumberToObject(b, "threads", sr.threads);
            cJSON_AddNumberToObject(b, "reps", sr.reps);
            double bw = sr.copy_gbs > sr.triad_gbs ? sr.copy_gbs : sr.triad_gbs;
            cJSON_AddNumberToObject(root, "bandwidth_gbs", bw);
            cJSON *wb = cJSON_GetObjectItem(root, "weight_bytes");
            cJSON *tps = cJSON_GetObjectItem(root, "tokens_per_s");
            if (wb && tps) {
                double roof = bw * 1e9 / wb->valuedouble;
                cJSON_AddNumberToObject(root, "roofline_tokens_per_s", roof);
                cJSON_AddNumberToObject(root, "roofline_fraction", tps->valuedouble / roof);
            }
        }
    }
    if (!o.no_stream) { /* the compute roofline beside the bandwidth one (peak.h) */
        PeakResult pk;
        peak_run(3, &pk);
        cJSON *c = cJSON_AddObjectToObject(root, "compute_peak_1_thread");
        cJSON_AddNumberToObject(c, "f32_fma_gmacs", pk.f32_gmacs);
        cJSON_AddNumberToObject(c, "int8_vnni_gmacs", pk.int8_gmacs);
        cJSON_AddNumberToObject(c, "bf16_dot_gmacs", pk.bf16_gmacs);
    }
    char *txt = cJSON_Print(root);
    FILE *f = o.out ? fopen(o.out, "w") : stdout;
    if (!f || !txt) {
        fprintf(stderr, "bench_forward: cannot write %s\n", o.out ? o.out : "stdout");
        rc = 1;
    } else {
        fprintf(f, "%s\n", txt);
        if (o.out) fclose(f);
    }
    free(txt);
    cJSON_Delete(root);
    return rc;
}
