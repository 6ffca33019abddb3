/* tokenlog.c - per-token HDF5 logs (see tokenlog.h). */
#include "tokenlog.h"

#include <stdlib.h>
#include <string.h>

static const H5ColSpec kCols[TOKENLOG_N_COLS] = {
    {"run_id", H5C_I64, 1, NULL, "first 15 hex digits of the run hash as an integer"},
    {"prompt_index", H5C_I32, 1, NULL, "index of the prompt in the dataset file (offset included)"},
    {"pos", H5C_I32, 1, "position", "position of the emitted token in the full sequence (prompt included)"},
    {"token", H5C_I32, 1, "token id", "emitted token"},
    {"draft_token", H5C_I32, 1, "token id", "token the draft proposed here, -1 if none"},
    {"q", H5C_F32, 1, "probability", "draft probability of draft_token, NaN if none"},
    {"p", H5C_F32, 1, "probability", "target probability of draft_token, NaN if unknown"},
    {"score", H5C_F32, 1, "probability", "verifier score, NaN if no verifier ran"},
    {"decision", H5C_I8, 1, NULL, "verifier decision: 1 accept, 0 reject, -1 none"},
    {"label", H5C_I8, 1, NULL, "true label q/p <= lambda: 1, 0, -1 when p is unknown"},
    {"target_called", H5C_I8, 1, NULL, "1 if the target ran to decide this token"},
    {"kind", H5C_I8, 1, NULL,
     "0 target_sample, 1 draft_sample, 2 verifier_accept, 3 sd_accept, 4 sd_resample, 5 bonus"},
};

static const char kKinds[] =
    "0 target_sample, 1 draft_sample, 2 verifier_accept, 3 sd_accept, 4 sd_resample, 5 bonus";

const H5ColSpec *tokenlog_columns(void) { return kCols; }

int64_t tokenlog_run_id(const char *run_hash) {
    char h[16];
    memcpy(h, run_hash, 15);
    h[15] = '\0';
    return (int64_t)strtoll(h, NULL, 16);
}

int tokenlog_create(TokenLog *l, const char *path, const TokenLogMeta *m, SpErr *err) {
    memset(l, 0, sizeof *l);
    if (h5t_create(&l->t, path, kCols, TOKENLOG_N_COLS, 4096, err)) return -1;
    l->open = 1;
    l->run_id = tokenlog_run_id(m->run_hash);
    if (h5t_attr_str(&l->t, "format", "sprinter-tokens", err) || h5t_attr_i64(&l->t, "version", TOKENLOG_VERSION, err) ||
        h5t_attr_str(&l->t, "run_hash", m->run_hash, err) || h5t_attr_str(&l->t, "method", m->method, err) ||
        h5t_attr_str(&l->t, "config", m->config, err) || h5t_attr_str(&l->t, "spec_name", m->spec_name, err) ||
        h5t_attr_str(&l->t, "spec_sha256", m->spec_sha256, err) || h5t_attr_i64(&l->t, "n_prompts", m->n_prompts, err) ||
        h5t_attr_str(&l->t, "kinds", kKinds, err)) {
        tokenlog_abort(l);
        return -1;
    }
    return 0;
}

/* Column buffers for one batch of events: [n] each. */
typedef struct Batch {
    int64_t *run_id;
    int32_t *prompt, *pos, *token, *draft;
    float *q, *p, *score;
    int8_t *decision, *label, *called, *kind;
} Batch;

int tokenlog_append(TokenLog *l, int32_t prompt_index, const TokenEvent *ev, int n, SpErr *err) {
    if (n <= 0) return 0;
    size_t N = (size_t)n;
    Batch b = {malloc(N * 8), malloc(N * 4), malloc(N * 4), malloc(N * 4), malloc(N * 4), malloc(N * 4),
               malloc(N * 4), malloc(N * 4), malloc(N), malloc(N), malloc(N), malloc(N)};
    int rc = 0;
    if (!b.run_id || !b.prompt || !b.pos || !b.token || !b.draft || !b.q || !b.p || !b.score || !b.decision ||
        !b.label || !b.called || !b.kind) {
        rc = sp_fail(err, "%s: out of memory", l->t.tmp);
    } else {
        for (size_t i = 0; i < N; i++) {
            b.run_id[i] = l->run_id, b.prompt[i] = prompt_index, b.pos[i] = ev[i].pos, b.token[i] = ev[i].token;
            b.draft[i] = ev[i].draft_token, b.q[i] = ev[i].q, b.p[i] = ev[i].p, b.score[i] = ev[i].score;
            b.decision[i] = ev[i].decision, b.label[i] = ev[i].label, b.called[i] = ev[i].target_called;
            b.kind[i] = ev[i].kind;
        }
        const void *data[TOKENLOG_N_COLS] = {b.run_id, b.prompt, b.pos, b.token, b.draft, b.q,
                                             b.p, b.score, b.decision, b.label, b.called, b.kind};
        rc = h5t_append(&l->t, n, data, err);
    }
    free(b.run_id), free(b.prompt), free(b.pos), free(b.token), free(b.draft), free(b.q), free(b.p), free(b.score);
    free(b.decision), free(b.label), free(b.called), free(b.kind);
    return rc;
}

int tokenlog_commit(TokenLog *l, SpErr *err) {
    l->open = 0;
    return h5t_commit(&l->t, err);
}

void tokenlog_abort(TokenLog *l) {
    if (l->open) h5t_abort(&l->t);
    l->open = 0;
}
