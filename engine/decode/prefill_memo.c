/* prefill_memo.c - first forward calls of decodes, kept and loaded again (prefill_memo.h). */
#include "prefill_memo.h"

#include <stdlib.h>
#include <string.h>

#include "fnv.h"

typedef struct MemoEntry {
    const Model *model;
    uint64_t hash; /* of (n, n_tail, tokens): compared before the tokens */
    int n, n_tail;
    int32_t *tokens; /* [n] */
    float *kv;       /* [session_kv_floats(n)] keys and values of positions [0, n) */
    float *logits;   /* [n_tail, V] */
    float *hidden;   /* [n_tail, d] */
} MemoEntry;

struct PrefillMemo {
    MemoEntry *entries;
    int n, cap;
    size_t bytes, max_bytes;
    int64_t hits, misses;
};

PrefillMemo *prefill_memo_new(size_t max_bytes) {
    PrefillMemo *memo = calloc(1, sizeof *memo);
    if (memo) memo->max_bytes = max_bytes;
    return memo;
}

void prefill_memo_free(PrefillMemo *memo) {
    if (!memo) return;
    for (int i = 0; i < memo->n; i++) {
        MemoEntry *e = &memo->entries[i];
        free(e->tokens), free(e->kv), free(e->logits), free(e->hidden);
    }
    free(memo->entries);
    free(memo);
}

/* FNV-1a 64 over n, n_tail and the tokens' bytes. */
static uint64_t call_hash(const int32_t *tokens, int n, int n_tail) {
    int32_t head[2] = {n, n_tail};
    return sp_fnv1a64(sp_fnv1a64(SP_FNV1A64_OFFSET, head, sizeof head), tokens, (size_t)n * sizeof *tokens);
}

static MemoEntry *find(const PrefillMemo *memo, const Model *model, const int32_t *tokens, int n, int n_tail,
                       uint64_t hash) {
    for (int i = 0; i < memo->n; i++) {
        MemoEntry *e = &memo->entries[i];
        if (e->hash == hash && e->model == model && e->n == n && e->n_tail == n_tail &&
            !memcmp(e->tokens, tokens, (size_t)n * sizeof *tokens))
            return e;
    }
    return NULL;
}

int prefill_memo_load(PrefillMemo *memo, const Model *model, Session *s, const int32_t *tokens, int n, int n_tail,
                      const float **logits, const float **hidden, SpErr *err) {
    MemoEntry *e = find(memo, model, tokens, n, n_tail, call_hash(tokens, n, n_tail));
    if (!e) {
        memo->misses++;
        return 0;
    }
    if (session_kv_load(s, e->kv, n, err)) return -1;
    *logits = e->logits;
    *hidden = e->hidden;
    memo->hits++;
    return 1;
}

void prefill_memo_keep(PrefillMemo *memo, const Model *model, const Session *s, const int32_t *tokens, int n,
                       int n_tail, const float *logits, const float *hidden) {
    uint64_t hash = call_hash(tokens, n, n_tail);
    if (session_len(s) < n || find(memo, model, tokens, n, n_tail, hash)) return;
    const ModelConfig *c = model_config(model);
    size_t n_kv = session_kv_floats(s, n), n_logits = (size_t)n_tail * c->vocab_size, n_hidden = (size_t)n_tail * c->d_model;
    size_t bytes = (size_t)n * sizeof(int32_t) + (n_kv + n_logits + n_hidden) * sizeof(float) + sizeof(MemoEntry);
    if (memo->bytes + bytes > memo->max_bytes) return;
    if (memo->n == memo->cap) {
        int cap = memo->cap ? 2 * memo->cap : 64;
        MemoEntry *grown = realloc(memo->entries, (size_t)cap * sizeof *grown);
        if (!grown) return;
        memo->entries = grown, memo->cap = cap;
    }
    MemoEntry e = {model, hash, n, n_tail, malloc((size_t)n * sizeof(int32_t)), malloc(n_kv * sizeof(float)),
                   malloc(n_logits * sizeof(float)), malloc(n_hidden * sizeof(float))};
    if (!e.tokens || !e.kv || !e.logits || !e.hidden) {
        free(e.tokens), free(e.kv), free(e.logits), free(e.hidden);
        return;
    }
    memcpy(e.tokens, tokens, (size_t)n * sizeof *tokens);
    session_kv_save(s, n, e.kv);
    memcpy(e.logits, logits, n_logits * sizeof *logits);
    memcpy(e.hidden, hidden, n_hidden * sizeof *hidden);
    memo->entries[memo->n++] = e;
    memo->bytes += bytes;
}

void prefill_memo_counts(const PrefillMemo *memo, int64_t *hits, int64_t *misses) {
    *hits = memo->hits;
    *misses = memo->misses;
}
