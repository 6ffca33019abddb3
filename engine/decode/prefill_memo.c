/* prefill_memo.c - first forward calls of decodes, kept and loaded again (prefill_memo.h). */
#include "prefill_memo.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

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

/* The entries' arrays live in chunks of at least MEMO_CHUNK bytes, aligned to and advised as 2 MB huge
 * pages (as the model's weight arena): a kept gpt2-124m prefill is ~5 MB, which in 4 kB pages takes
 * ~1,300 page faults on first write (~10 us each on this VM). */
#define MEMO_CHUNK ((size_t)64 << 20)
#define MEMO_HUGE_PAGE ((size_t)1 << 21)
#define MEMO_ALIGN ((size_t)64)

typedef struct MemoChunk {
    char *base;
    size_t size, used;
} MemoChunk;

/* A call made once and not kept: (model, hash of n, n_tail and the tokens). A hash collision only keeps
 * a call at its first making; what is kept and loaded is always compared token by token. */
typedef struct SeenCall {
    const Model *model;
    uint64_t hash;
} SeenCall;

struct PrefillMemo {
    MemoEntry *entries;
    int n, cap;
    SeenCall *seen; /* calls made once */
    int n_seen, cap_seen;
    MemoChunk *chunks; /* owned; the last one is filled */
    int n_chunks;
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
    for (int i = 0; i < memo->n_chunks; i++) free(memo->chunks[i].base);
    free(memo->chunks);
    free(memo->entries);
    free(memo->seen);
    free(memo);
}

/* bytes (rounded up to MEMO_ALIGN) from the last chunk, or from a new one; NULL when out of memory */
static void *memo_alloc(PrefillMemo *memo, size_t bytes) {
    bytes = (bytes + MEMO_ALIGN - 1) / MEMO_ALIGN * MEMO_ALIGN;
    MemoChunk *last = memo->n_chunks ? &memo->chunks[memo->n_chunks - 1] : NULL;
    if (!last || last->size - last->used < bytes) {
        size_t size = bytes > MEMO_CHUNK ? (bytes + MEMO_HUGE_PAGE - 1) / MEMO_HUGE_PAGE * MEMO_HUGE_PAGE : MEMO_CHUNK;
        MemoChunk *grown = realloc(memo->chunks, (size_t)(memo->n_chunks + 1) * sizeof *grown);
        if (!grown) return NULL;
        memo->chunks = grown;
        char *base = aligned_alloc(MEMO_HUGE_PAGE, size);
        if (!base) return NULL;
        (void)madvise(base, size, MADV_HUGEPAGE);
        last = &memo->chunks[memo->n_chunks++];
        *last = (MemoChunk){base, size, 0};
    }
    void *at = last->base + last->used;
    last->used += bytes;
    return at;
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

/* 1 if (model, hash) was noted before; else notes it (when memory allows) and returns 0. */
static int seen_before(PrefillMemo *memo, const Model *model, uint64_t hash) {
    for (int i = 0; i < memo->n_seen; i++)
        if (memo->seen[i].hash == hash && memo->seen[i].model == model) return 1;
    if (memo->n_seen == memo->cap_seen) {
        int cap = memo->cap_seen ? 2 * memo->cap_seen : 256;
        SeenCall *grown = realloc(memo->seen, (size_t)cap * sizeof *grown);
        if (!grown) return 0;
        memo->seen = grown, memo->cap_seen = cap;
    }
    memo->seen[memo->n_seen++] = (SeenCall){model, hash};
    return 0;
}

void prefill_memo_keep(PrefillMemo *memo, const Model *model, const Session *s, const int32_t *tokens, int n,
                       int n_tail, const float *logits, const float *hidden) {
    uint64_t hash = call_hash(tokens, n, n_tail);
    if (session_len(s) < n || find(memo, model, tokens, n, n_tail, hash) || !seen_before(memo, model, hash)) return;
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
    /* an allocation that fails leaves the memo as it was but for unused chunk bytes: the call is not kept */
    MemoEntry e = {model, hash, n, n_tail, memo_alloc(memo, (size_t)n * sizeof(int32_t)),
                   memo_alloc(memo, n_kv * sizeof(float)), memo_alloc(memo, n_logits * sizeof(float)),
                   memo_alloc(memo, n_hidden * sizeof(float))};
    if (!e.tokens || !e.kv || !e.logits || !e.hidden) return;
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
