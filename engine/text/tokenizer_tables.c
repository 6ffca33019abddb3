/* tokenizer_tables.c - the tokenizer's data structures: growable buffers, UTF-8, the Vocab
 * (id <-> string) and MergeMap (pair -> (rank, id)) hash tables; see tokenizer_int.h. */
#include "tokenizer_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fnv.h"

/* ---------------------------------------------------------------- growable buffers */

int tok_buf_reserve(Buf *b, size_t extra) {
    if (b->cap - b->len >= extra) return 0;
    size_t cap = b->cap ? b->cap : 256;
    while (cap - b->len < extra) {
        if (cap > SIZE_MAX / 2) return -1;
        cap *= 2;
    }
    char *p = realloc(b->p, cap);
    if (!p) return -1;
    b->p = p;
    b->cap = cap;
    return 0;
}

int tok_buf_put(Buf *b, const void *s, size_t n) {
    if (tok_buf_reserve(b, n + 1) < 0) return -1;
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0'; /* always NUL-terminated, not counted in len */
    return 0;
}

/* ---------------------------------------------------------------- UTF-8 */

/* Length of the well-formed UTF-8 sequence at s[0..n) and its code point in *cp, or 0 when s does
 * not start one (stray continuation byte, overlong form, surrogate, > U+10FFFF, truncated). */
size_t tok_utf8_decode(const unsigned char *s, size_t n, uint32_t *cp) {
    unsigned c = s[0];
    size_t k;
    uint32_t v, min;
    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    if (c >= 0xC2 && c <= 0xDF) {
        k = 2, v = c & 0x1F, min = 0x80;
    } else if ((c & 0xF0) == 0xE0) {
        k = 3, v = c & 0x0F, min = 0x800;
    } else if (c >= 0xF0 && c <= 0xF4) {
        k = 4, v = c & 0x07, min = 0x10000;
    } else {
        return 0;
    }
    if (n < k) return 0;
    for (size_t i = 1; i < k; i++) {
        if ((s[i] & 0xC0) != 0x80) return 0;
        v = (v << 6) | (s[i] & 0x3F);
    }
    if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) return 0;
    *cp = v;
    return k;
}

/* Writes code point cp (< 0x110000) as UTF-8 into out[0..4); returns the length. */
size_t tok_utf8_encode(uint32_t cp, char *out) {
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* Printable form of a token for error messages: at most ~40 bytes, control bytes escaped. */
const char *tok_show(char out[96], const char *s, size_t n) {
    size_t o = 0;
    for (size_t i = 0; i < n && o < 80; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x20 || c == 0x7F || c == '\'' || c == '\\')
            o += (size_t)snprintf(out + o, 96 - o, "\\x%02x", c);
        else
            out[o++] = (char)c;
    }
    if (o >= 80) o += (size_t)snprintf(out + o, 96 - o, "...");
    out[o] = '\0';
    return out;
}

/* ---------------------------------------------------------------- vocab: id <-> string */

static uint64_t hash_bytes(const char *s, size_t n) {
    uint64_t h = sp_fnv1a64(SP_FNV1A64_OFFSET, s, n);
    return h ^ (h >> 29);
}

const char *tok_vocab_str(const Vocab *v, int32_t id, size_t *len) {
    *len = v->span[id].len;
    return v->strs.p + v->span[id].off;
}

/* Slot where string s[0..n) is stored, or the empty slot where it would go. */
static size_t vocab_slot(const Vocab *v, const char *s, size_t n) {
    size_t mask = v->n_slots - 1;
    size_t i = (size_t)hash_bytes(s, n) & mask;
    for (;;) {
        int32_t id = v->slots[i];
        if (id < 0) return i;
        if (v->span[id].len == n && memcmp(v->strs.p + v->span[id].off, s, n) == 0) return i;
        i = (i + 1) & mask;
    }
}

/* Id of token s[0..n), or -1. */
int32_t tok_vocab_find(const Vocab *v, const char *s, size_t n) {
    if (v->n_slots == 0) return -1;
    return v->slots[vocab_slot(v, s, n)];
}

static int vocab_grow_slots(Vocab *v) {
    size_t n_slots = v->n_slots ? v->n_slots * 2 : 1024;
    int32_t *old = v->slots;
    size_t old_n = v->n_slots;
    v->slots = malloc(n_slots * sizeof *v->slots);
    if (!v->slots) {
        v->slots = old;
        return -1;
    }
    v->n_slots = n_slots;
    memset(v->slots, 0xFF, n_slots * sizeof *v->slots); /* all -1 */
    for (size_t i = 0; i < old_n; i++) {
        if (old[i] < 0) continue;
        size_t len;
        const char *s = tok_vocab_str(v, old[i], &len);
        v->slots[vocab_slot(v, s, len)] = old[i];
    }
    free(old);
    return 0;
}

static int vocab_grow_ids(Vocab *v, int32_t id) {
    int64_t cap = v->cap_ids ? v->cap_ids : 1024;
    while (cap <= id) cap *= 2;
    if (cap > MAX_VOCAB) cap = MAX_VOCAB;
    Span *span = realloc(v->span, (size_t)cap * sizeof *span);
    if (!span) return -1;
    v->span = span;
    uint8_t *flags = realloc(v->flags, (size_t)cap);
    if (!flags) return -1;
    v->flags = flags;
    memset(v->flags + v->cap_ids, 0, (size_t)(cap - v->cap_ids));
    v->cap_ids = (int32_t)cap;
    return 0;
}

/* Adds token s[0..n) with id (0 <= id < MAX_VOCAB, checked by the caller). */
VocabAdd tok_vocab_add(Vocab *v, const char *s, size_t n, int32_t id, uint8_t flags) {
    if (n > MAX_TOKEN_BYTES) return VA_TOO_LONG;
    if (id < v->cap_ids && v->flags[id]) return VA_DUP_ID;
    if (tok_vocab_find(v, s, n) >= 0) return VA_DUP_STR;
    if (id >= v->cap_ids && vocab_grow_ids(v, id) < 0) return VA_NOMEM;
    if ((v->count + 1) * 2 > v->n_slots && vocab_grow_slots(v) < 0) return VA_NOMEM;
    size_t off = v->strs.len;
    if (tok_buf_put(&v->strs, s, n) < 0 || tok_buf_put(&v->strs, "", 1) < 0) return VA_NOMEM;
    if (v->strs.len > UINT32_MAX) return VA_NOMEM;
    v->span[id] = (Span){(uint32_t)off, (uint32_t)n};
    v->flags[id] = (uint8_t)(TF_PRESENT | flags);
    v->slots[vocab_slot(v, s, n)] = id;
    v->count++;
    if (id >= v->n_ids) v->n_ids = id + 1;
    return VA_OK;
}

void tok_vocab_free(Vocab *v) {
    free(v->strs.p);
    free(v->span);
    free(v->flags);
    free(v->slots);
}

/* ---------------------------------------------------------------- merges: pair -> (rank, id) */

static uint64_t pair_key(int32_t a, int32_t b) { return ((uint64_t)(uint32_t)a << 32) | (uint32_t)b; }

static size_t merge_slot(const MergeMap *m, uint64_t key) {
    size_t mask = m->n_slots - 1;
    size_t i = (size_t)((key * 0x9E3779B97F4A7C15ULL) >> 17) & mask;
    while (m->slots[i].key != UINT64_MAX && m->slots[i].key != key) i = (i + 1) & mask;
    return i;
}

const MergeSlot *tok_merge_find(const MergeMap *m, int32_t a, int32_t b) {
    if (m->n_slots == 0) return NULL;
    const MergeSlot *s = &m->slots[merge_slot(m, pair_key(a, b))];
    return s->key == UINT64_MAX ? NULL : s;
}

static int merge_grow(MergeMap *m) {
    size_t n_slots = m->n_slots ? m->n_slots * 2 : 1024;
    MergeSlot *slots = malloc(n_slots * sizeof *slots);
    if (!slots) return -1;
    for (size_t i = 0; i < n_slots; i++) slots[i].key = UINT64_MAX;
    MergeMap grown = {slots, n_slots, m->count};
    for (size_t i = 0; i < m->n_slots; i++)
        if (m->slots[i].key != UINT64_MAX) slots[merge_slot(&grown, m->slots[i].key)] = m->slots[i];
    free(m->slots);
    *m = grown;
    return 0;
}

/* Sets pair (a, b) -> (rank, id). A repeated pair takes the later rank, as in the reference
 * implementations (a dict built from the merge list). */
int tok_merge_put(MergeMap *m, int32_t a, int32_t b, int32_t rank, int32_t id) {
    if ((m->count + 1) * 2 > m->n_slots && merge_grow(m) < 0) return -1;
    uint64_t key = pair_key(a, b);
    MergeSlot *s = &m->slots[merge_slot(m, key)];
    if (s->key == UINT64_MAX) m->count++;
    *s = (MergeSlot){key, rank, id};
    return 0;
}
