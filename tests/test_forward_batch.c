/* test_forward_batch.c - forward_batch (model.h): one call over rows of many Sessions of one Model
 * gives, bit for bit, what each session's own session_forward_tail calls give.
 *
 * For random-init GPT-2, GPT-Neo (local window 5), Llama, Qwen2, Qwen3 and Llama 3 (tiny presets: every matrix takes the
 * few-row kernel, whose one-row sums are reduced in another order than its many-row sums) and the
 * committed regime pair (its target's matrices are packed panels), SESSIONS sessions run the same
 * schedule twice, once alone and once batched: ragged prefills (logits for the last row, or for
 * every row), drafts of one row each, ragged verification blocks of 1..10 rows, a rollback
 * (session_truncate) and more rows after it. Every logit and hidden value is compared with memcmp.
 * The batch is also run with room for fewer rows than a step holds (consecutive parts).
 * Negative control: the same comparison after one token of one request is changed must fail.
 * usage: test_forward_batch WORKDIR [REGIME_DIR] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsutil.h"
#include "jsonutil.h"
#include "model.h"
#include "presets.h"

#include "check.h"

enum { SESSIONS = 5, MAX_N = 24, CTX = 64 };

/* One step of the schedule: each session's rows (0: the session sits this step out) and tails. */
typedef struct Step {
    int n[SESSIONS], n_tail[SESSIONS];
    int truncate_to[SESSIONS]; /* > 0: truncate to this before the step */
} Step;

static const Step kSteps[] = {
    {{3, 1, 9, 12, 2}, {1, 1, 1, 12, 2}, {0}},          /* prefill, ragged; two want every row */
    {{1, 1, 1, 1, 1}, {1, 1, 1, 1, 1}, {0}},            /* a draft step of every session */
    {{1, 1, 0, 1, 1}, {1, 1, 0, 1, 1}, {0}},            /* one sits out */
    {{4, 1, 6, 2, 10}, {4, 1, 6, 2, 10}, {0}},          /* verification blocks, ragged */
    {{2, 3, 1, 5, 1}, {2, 3, 1, 1, 1}, {5, 3, 14, 0, 0}}, /* after a rollback; one long row wants one tail */
    {{1, 1, 1, 1, 1}, {1, 1, 1, 1, 1}, {0}},
};
enum { N_STEPS = sizeof kSteps / sizeof kSteps[0] };

static int32_t token_at(int session, int pos, int V) { return (int32_t)((session * 131 + pos * 37 + 11) % V); }

/* Results of one schedule: per step and session, logits [n_tail, V] then hidden [n, d]. */
typedef struct Trace {
    float *v[N_STEPS][SESSIONS];
} Trace;

static void trace_free(Trace *t) {
    for (int k = 0; k < N_STEPS; k++)
        for (int i = 0; i < SESSIONS; i++) free(t->v[k][i]);
}

static int keep(Trace *t, int k, int i, const float *logits, int n_tail, const float *hidden, int n, size_t V, size_t d) {
    float *v = malloc(((size_t)n_tail * V + (size_t)n * d) * sizeof *v);
    if (!v) return -1;
    memcpy(v, logits, (size_t)n_tail * V * sizeof *v);
    memcpy(v + (size_t)n_tail * V, hidden, (size_t)n * d * sizeof *v);
    t->v[k][i] = v;
    return 0;
}

/* Runs the schedule: alone (batch NULL) or through batch; poison: change one token of step 3, session 2. */
static int run_schedule(const Model *m, ForwardBatch *batch, int poison, Trace *t, SpErr *err) {
    const ModelConfig *c = model_config(m);
    size_t V = (size_t)c->vocab_size, d = (size_t)c->d_model;
    Session *s[SESSIONS] = {0};
    int32_t toks[SESSIONS][MAX_N];
    int rc = 0;
    memset(t, 0, sizeof *t);
    for (int i = 0; i < SESSIONS && !rc; i++)
        if (!(s[i] = session_new(m, CTX, MAX_N, err))) rc = -1;
    for (int k = 0; k < N_STEPS && !rc; k++) {
        const Step *st = &kSteps[k];
        SessionRows req[SESSIONS];
        int idx[SESSIONS], nr = 0;
        for (int i = 0; i < SESSIONS && !rc; i++) {
            if (st->truncate_to[i] > 0) rc = session_truncate(s[i], st->truncate_to[i], err);
            if (st->n[i] == 0) continue;
            int p0 = session_len(s[i]);
            for (int j = 0; j < st->n[i]; j++) toks[i][j] = token_at(i, p0 + j, (int)V);
            if (poison && k == 3 && i == 2) toks[i][1] = (toks[i][1] + 1) % (int32_t)V;
            req[nr] = (SessionRows){s[i], toks[i], st->n[i], st->n_tail[i], NULL, NULL};
            idx[nr++] = i;
        }
        if (rc) break;
        if (batch) {
            rc = forward_batch(batch, req, nr, err);
        } else {
            for (int r = 0; r < nr && !rc; r++)
                rc = session_forward_tail(req[r].session, req[r].tokens, req[r].n, req[r].n_tail, &req[r].logits,
                                          &req[r].hidden, err);
            /* each session's own buffers: read now, before anything else runs on it (nothing does) */
        }
        for (int r = 0; r < nr && !rc; r++)
            rc = keep(t, k, idx[r], req[r].logits, req[r].n_tail, req[r].hidden, req[r].n, V, d);
    }
    for (int i = 0; i < SESSIONS; i++) session_free(s[i]);
    return rc;
}

/* 1 if every kept value of a and b is the same bits. */
static int same(const Trace *a, const Trace *b, size_t V, size_t d, int *first_step) {
    for (int k = 0; k < N_STEPS; k++)
        for (int i = 0; i < SESSIONS; i++) {
            const Step *st = &kSteps[k];
            if (!st->n[i]) continue;
            size_t bytes = ((size_t)st->n_tail[i] * V + (size_t)st->n[i] * d) * sizeof(float);
            if (!a->v[k][i] || !b->v[k][i] || memcmp(a->v[k][i], b->v[k][i], bytes) != 0) {
                *first_step = k;
                return 0;
            }
        }
    return 1;
}

static void test_model_dir(const char *dir, const char *label) {
    SpErr err = {{0}};
    Model *m = model_load(dir, &err);
    if (!check(m != NULL, "%s: load (%s)", label, err.msg)) return;
    const ModelConfig *c = model_config(m);
    size_t V = (size_t)c->vocab_size, d = (size_t)c->d_model;
    Trace alone, batched, parts, poisoned;
    ForwardBatch *big = forward_batch_new(m, SESSIONS * MAX_N, &err), *small = forward_batch_new(m, MAX_N / 3, &err);
    int ok = big && small && run_schedule(m, NULL, 0, &alone, &err) == 0;
    ok = ok && run_schedule(m, big, 0, &batched, &err) == 0;
    ok = ok && run_schedule(m, small, 0, &parts, &err) == 0;
    ok = ok && run_schedule(m, big, 1, &poisoned, &err) == 0;
    if (check(ok, "%s: schedules ran (%s)", label, err.msg)) {
        int k = -1, eq = same(&alone, &batched, V, d, &k);
        check(eq, "%s: batched == alone, bit for bit (first difference at step %d)", label, k);
        k = -1, eq = same(&alone, &parts, V, d, &k);
        check(eq, "%s: batched in parts of <= %d rows (longer requests alone) == alone (first difference at step %d)",
              label, MAX_N / 3, k);
        k = -1, eq = same(&alone, &poisoned, V, d, &k);
        check(!eq && k == 3, "%s: negative control: a changed token is seen (first difference at step %d, want 3)", label, k);
    }
    /* a request the session itself would refuse is refused, and nothing runs */
    Session *s = session_new(m, CTX, 2, &err);
    int32_t t3[3] = {1, 2, 3};
    SessionRows bad[2] = {{s, t3, 1, 1, NULL, NULL}, {s, t3, 1, 1, NULL, NULL}};
    check(s && forward_batch(big, bad, 2, &err) != 0 && session_len(s) == 0, "%s: one session twice is refused: %s", label,
          err.msg);
    SessionRows wide = {s, t3, 3, 1, NULL, NULL};
    check(s && forward_batch(big, &wide, 1, &err) != 0 && session_len(s) == 0,
          "%s: more rows than the session's batch is refused: %s", label, err.msg);
    session_free(s);
    if (ok) {
        trace_free(&alone), trace_free(&batched), trace_free(&parts), trace_free(&poisoned);
    }
    forward_batch_free(big);
    forward_batch_free(small);
    model_free(m);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: test_forward_batch WORKDIR [REGIME_DIR]\n");
        return 2;
    }
    const char *work = argv[1];
    SpErr merr;
    if (sp_mkdir_p(work, &merr)) {
        fprintf(stderr, "%s\n", merr.msg);
        return 1;
    }
    /* and the newer families: Qwen2 (q/k/v biases), Qwen3 (per-head q/k norm), Llama 3 (rope scaling) */
    const char *archs[] = {"gpt2", "gpt-neo", "llama", "qwen2", "qwen3", "llama"};
    const char *presets[] = {"tiny", "tiny", "tiny", "tiny", "tiny", "llama-3-tiny"};
    for (int a = 0; a < 6; a++) {
        char dir[1024];
        snprintf(dir, sizeof dir, "%s/model-%s-%s", work, archs[a], presets[a]);
        SpErr err = {{0}};
        cJSON *cfg = preset_config(archs[a], presets[a], &err);
        if (cfg && a == 1) cJSON_ReplaceItemInObject(cfg, "window_size", cJSON_CreateNumber(5));
        int ok = cfg && init_random_model(cfg, "config", DT_F32, 4321 + (uint64_t)a, dir, &err) == 0;
        cJSON_Delete(cfg);
        char label[64];
        snprintf(label, sizeof label, "%s/%s", archs[a], presets[a]);
        if (check(ok, "%s: init-random (%s)", label, err.msg)) test_model_dir(dir, label);
    }
    if (argc > 2) {
        char dir[1024];
        snprintf(dir, sizeof dir, "%s/draft", argv[2]);
        test_model_dir(dir, "regime draft");
        snprintf(dir, sizeof dir, "%s/target", argv[2]);
        test_model_dir(dir, "regime target");
    }
    return check_summary("forward_batch");
}
