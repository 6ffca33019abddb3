/* tokenizer.c - GPT-2 byte-level BPE and Llama (SentencePiece-style) BPE; see tokenizer.h.
 *
 * Shared machinery
 *   Vocab     token strings (one arena, NUL after each) indexed by id, plus a string -> id hash.
 *   MergeMap  (left id, right id) -> (rank, merged id), an open-addressing hash.
 *   bpe_merge a linked list of symbols and a binary heap of candidate pairs ordered by
 *             (rank, position): O(n log n) per word, and the same result as GPT-2's reference
 *             loop "merge every occurrence of the best-ranked pair, repeat".
 *
 * GPT-2: text -> pre-tokens (PCRE2 regex) -> bytes -> one symbol per byte (the byte's
 *   bytes_to_unicode character must be a vocab token) -> merges.
 *   Invalid UTF-8: the regex never matches inside invalid sequences, so each maximal run of
 *   invalid bytes becomes a pre-token of its own; its bytes are encoded like any others, and
 *   decode gives the original bytes back.
 * Llama: text -> "▁" prepended, ' ' -> "▁" -> one symbol per code point (id -1 when the code
 *   point is not a token) -> merges -> symbols still without a token become <0xNN> byte tokens
 *   (byte_fallback) or <unk>. Invalid UTF-8 bytes are single unknown symbols, so they come out
 *   as their byte tokens and decode back to the same bytes.
 * Added tokens ("<s>", "<|endoftext|>") are split out of the text first (encode_split), unless
 *   the caller asks for special tokens as plain text (TOK_ENC_SPECIAL_AS_TEXT).
 * Decode gives raw bytes: byte sequences that are not valid UTF-8 are passed through, not
 *   replaced by U+FFFD.
 */
#define PCRE2_CODE_UNIT_WIDTH 8

#include "tokenizer.h"

#include "jsonutil.h"

#include "fsutil.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <pcre2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ---------------------------------------------------------------- limits and constants */

enum {
    MAX_VOCAB = 1 << 22,        /* ids must lie in [0, MAX_VOCAB) */
    MAX_MERGES = 1 << 23,
    MAX_TOKEN_BYTES = 1 << 16,
    MAX_TEXT_BYTES = 1 << 30,   /* encode input bound; keeps symbol indices in int32 */
};
#define MAX_FILE_BYTES ((size_t)1 << 30)

enum { TF_PRESENT = 1, TF_SPECIAL = 2, TF_ADDED = 4 };

enum { SYM_UNKNOWN = -1, SYM_DEAD = -2 };

/* "▁" (U+2581), SentencePiece's space marker. */
static const char SP_SPACE[] = "\xE2\x96\x81";
enum { SP_SPACE_LEN = 3 };

/* JavaScript's \s (the oracle gpt-3-encoder uses a JS regex), spelled out because PCRE2's UCP \s
 * differs on a few code points (e.g. U+FEFF is \s in JS, not in PCRE2). */
#define JS_WS "\\t\\n\\x{0B}\\f\\r\\x{20}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}" \
              "\\x{202F}\\x{205F}\\x{3000}\\x{FEFF}"
/* GPT-2's pre-tokenizer: 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+ */
static const char GPT2_PATTERN[] = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+"
                                   "| ?[^" JS_WS "\\p{L}\\p{N}]+"
                                   "|[" JS_WS "]+(?![^" JS_WS "])"
                                   "|[" JS_WS "]+";

/* How the Llama normalizer / pre-tokenizer puts "▁" in front of the text. */
typedef enum {
    PREFIX_NONE,
    PREFIX_ALWAYS,     /* normalizer Prepend("▁") */
    PREFIX_IF_MISSING, /* Metaspace: only when the text does not already start with "▁" */
} PrefixMode;

/* ---------------------------------------------------------------- growable buffers */

typedef struct {
    char *p;
    size_t len, cap;
} Buf;

static int buf_reserve(Buf *b, size_t extra) {
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

static int buf_put(Buf *b, const void *s, size_t n) {
    if (buf_reserve(b, n + 1) < 0) return -1;
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0'; /* always NUL-terminated, not counted in len */
    return 0;
}

typedef struct {
    int32_t *p;
    size_t n, cap;
} IdVec;

static int ids_push(IdVec *v, int32_t id) {
    if (v->n == v->cap) {
        size_t cap = v->cap ? v->cap * 2 : 64;
        int32_t *p = realloc(v->p, cap * sizeof *p);
        if (!p) return -1;
        v->p = p;
        v->cap = cap;
    }
    v->p[v->n++] = id;
    return 0;
}

/* ---------------------------------------------------------------- UTF-8 */

/* Length of the well-formed UTF-8 sequence at s[0..n) and its code point in *cp, or 0 when s does
 * not start one (stray continuation byte, overlong form, surrogate, > U+10FFFF, truncated). */
static size_t utf8_decode(const unsigned char *s, size_t n, uint32_t *cp) {
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
static size_t utf8_encode(uint32_t cp, char *out) {
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

/* GPT-2's bytes_to_unicode: the printable Latin-1 bytes ('!'..'~', '¡'..'¬', '®'..'ÿ') stand for
 * themselves; the other 68 bytes map, in byte order, to U+0100..U+0143. */
enum { BYTE_CP_END = 256 + 68 };

static int byte_is_printable(int b) {
    return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

static void byte_unicode_table(uint32_t cp_of_byte[256]) {
    uint32_t next = 256;
    for (int b = 0; b < 256; b++) cp_of_byte[b] = byte_is_printable(b) ? (uint32_t)b : next++;
}

/* Printable form of a token for error messages: at most ~40 bytes, control bytes escaped. */
static const char *show(char out[96], const char *s, size_t n) {
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

typedef struct {
    uint32_t off, len; /* bytes [off, off+len) of an arena */
} Span;

typedef struct {
    Buf strs;          /* token strings, NUL after each */
    Span *span;        /* [cap_ids] string of each id */
    uint8_t *flags;    /* [cap_ids] TF_* bits; 0 = no token with this id */
    int32_t n_ids;     /* max id + 1 */
    int32_t cap_ids;
    int32_t *slots;    /* [n_slots] open addressing string -> id; -1 = empty */
    size_t n_slots;    /* power of two */
    size_t count;      /* tokens stored */
} Vocab;

typedef enum { VA_OK, VA_NOMEM, VA_DUP_STR, VA_DUP_ID, VA_TOO_LONG } VocabAdd;

static uint64_t hash_bytes(const char *s, size_t n) {
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211ULL;
    return h ^ (h >> 29);
}

static const char *vocab_str(const Vocab *v, int32_t id, size_t *len) {
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
static int32_t vocab_find(const Vocab *v, const char *s, size_t n) {
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
        const char *s = vocab_str(v, old[i], &len);
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
static VocabAdd vocab_add(Vocab *v, const char *s, size_t n, int32_t id, uint8_t flags) {
    if (n > MAX_TOKEN_BYTES) return VA_TOO_LONG;
    if (id < v->cap_ids && v->flags[id]) return VA_DUP_ID;
    if (vocab_find(v, s, n) >= 0) return VA_DUP_STR;
    if (id >= v->cap_ids && vocab_grow_ids(v, id) < 0) return VA_NOMEM;
    if ((v->count + 1) * 2 > v->n_slots && vocab_grow_slots(v) < 0) return VA_NOMEM;
    size_t off = v->strs.len;
    if (buf_put(&v->strs, s, n) < 0 || buf_put(&v->strs, "", 1) < 0) return VA_NOMEM;
    if (v->strs.len > UINT32_MAX) return VA_NOMEM;
    v->span[id] = (Span){(uint32_t)off, (uint32_t)n};
    v->flags[id] = (uint8_t)(TF_PRESENT | flags);
    v->slots[vocab_slot(v, s, n)] = id;
    v->count++;
    if (id >= v->n_ids) v->n_ids = id + 1;
    return VA_OK;
}

static void vocab_free(Vocab *v) {
    free(v->strs.p);
    free(v->span);
    free(v->flags);
    free(v->slots);
}

/* ---------------------------------------------------------------- merges: pair -> (rank, id) */

typedef struct {
    uint64_t key; /* left id << 32 | right id; UINT64_MAX = empty */
    int32_t rank, id;
} MergeSlot;

typedef struct {
    MergeSlot *slots;
    size_t n_slots; /* power of two */
    size_t count;
} MergeMap;

static uint64_t pair_key(int32_t a, int32_t b) { return ((uint64_t)(uint32_t)a << 32) | (uint32_t)b; }

static size_t merge_slot(const MergeMap *m, uint64_t key) {
    size_t mask = m->n_slots - 1;
    size_t i = (size_t)((key * 0x9E3779B97F4A7C15ULL) >> 17) & mask;
    while (m->slots[i].key != UINT64_MAX && m->slots[i].key != key) i = (i + 1) & mask;
    return i;
}

static const MergeSlot *merge_find(const MergeMap *m, int32_t a, int32_t b) {
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
static int merge_put(MergeMap *m, int32_t a, int32_t b, int32_t rank, int32_t id) {
    if ((m->count + 1) * 2 > m->n_slots && merge_grow(m) < 0) return -1;
    uint64_t key = pair_key(a, b);
    MergeSlot *s = &m->slots[merge_slot(m, key)];
    if (s->key == UINT64_MAX) m->count++;
    *s = (MergeSlot){key, rank, id};
    return 0;
}

/* ---------------------------------------------------------------- the tokenizer */

/* An added token (tokenizer.json added_tokens) that encode splits out of the text; its content is
 * the vocabulary string of id. */
typedef struct {
    int32_t id;
    uint8_t special, lstrip, rstrip, single_word;
} AddedTok;

struct Tokenizer {
    TokKind kind;
    char source[4096]; /* the file it was loaded from (tokenizer.json or vocab.json), for messages */
    Vocab v;
    MergeMap merges;
    Buf dec;           /* decoded bytes of each token, NUL after each */
    Span *dec_span;    /* [v.n_ids] */
    int32_t byte_id[256]; /* GPT-2: token of each byte's unicode char; Llama: <0xNN>; -1 absent */
    uint32_t byte_cp[256]; /* GPT-2 bytes_to_unicode */
    int32_t bos, eos, unk;
    AddedTok *added;   /* [n_added], longest content first (so the first match is the longest) */
    int n_added;
    pcre2_code *word_re; /* "\\w" (Unicode), for single_word tokens; NULL when none has it */
    int add_bos, add_eos; /* tokenizer_config.json add_bos_token / add_eos_token, or the default */
    /* GPT-2 */
    pcre2_code *re;    /* pre-tokenizer; NULL when ByteLevel use_regex is false */
    int add_prefix_space;
    int ignore_merges; /* a pre-token that is itself a token is not split */
    /* Llama */
    PrefixMode prefix;
    int prefix_first_only; /* Metaspace prepend_scheme "first": only the text's first segment */
    int replace_spaces;  /* ' ' -> "▁" */
    int split_words;     /* Metaspace split: BPE runs on each "▁word" separately */
    int byte_fallback;
    int fuse_unk;
    int strip_leading;   /* decode drops one leading space */
};

static Tokenizer *tok_new(TokKind kind, SpErr *err) {
    Tokenizer *t = calloc(1, sizeof *t);
    if (!t) {
        sp_fail(err, "tokenizer: out of memory");
        return NULL;
    }
    t->kind = kind;
    t->bos = t->eos = t->unk = -1;
    for (int b = 0; b < 256; b++) t->byte_id[b] = -1;
    byte_unicode_table(t->byte_cp);
    return t;
}

void tokenizer_free(Tokenizer *t) {
    if (!t) return;
    vocab_free(&t->v);
    free(t->merges.slots);
    free(t->dec.p);
    free(t->dec_span);
    pcre2_code_free(t->re);
    pcre2_code_free(t->word_re);
    free(t->added);
    free(t);
}

TokKind tokenizer_kind(const Tokenizer *t) { return t->kind; }
int tokenizer_vocab_size(const Tokenizer *t) { return t->v.n_ids; }
int tokenizer_bos_id(const Tokenizer *t) { return t->bos; }
int tokenizer_eos_id(const Tokenizer *t) { return t->eos; }
int tokenizer_add_bos(const Tokenizer *t) { return t->add_bos; }
int tokenizer_add_eos(const Tokenizer *t) { return t->add_eos; }

const char *tokenizer_token_str(const Tokenizer *t, int32_t id) {
    if (id < 0 || id >= t->v.n_ids || !t->v.flags[id]) return NULL;
    return t->dec.p + t->dec_span[id].off;
}

/* ---------------------------------------------------------------- BPE core */

typedef struct {
    int32_t id;          /* token id, SYM_UNKNOWN (no token), SYM_DEAD (merged into its left) */
    int32_t prev, next;  /* neighbours in the chain, -1 at the ends */
    uint32_t start, len; /* bytes of the source text */
} Sym;

typedef struct {
    int32_t rank;
    int32_t left, right; /* symbol indices; left < right */
    int32_t lid, rid;    /* their ids when the candidate was made; stale once either changed */
    int32_t id;          /* merged token */
} Cand;

/* Per-call scratch space (a Tokenizer is immutable, so this lives with the encode call). */
typedef struct {
    Sym *sym;
    size_t sym_cap;
    Cand *heap;
    size_t heap_n, heap_cap;
    Buf tmp;
    pcre2_match_data *md; /* for word_re (single_word tokens), made on first use */
} Work;

static void work_free(Work *w) {
    pcre2_match_data_free(w->md);
    free(w->sym);
    free(w->heap);
    free(w->tmp.p);
}

/* Room for n symbols and the at most 3n candidates their merging can create. */
static int work_reserve(Work *w, size_t n) {
    if (n > w->sym_cap) {
        size_t cap = n < 64 ? 64 : n;
        free(w->sym);
        free(w->heap);
        w->sym = malloc(cap * sizeof *w->sym);
        w->heap = malloc(3 * cap * sizeof *w->heap);
        if (!w->sym || !w->heap) {
            free(w->sym), free(w->heap);
            w->sym = NULL, w->heap = NULL, w->sym_cap = w->heap_cap = 0;
            return -1;
        }
        w->sym_cap = cap;
        w->heap_cap = 3 * cap;
    }
    return 0;
}

static int cand_less(const Cand *a, const Cand *b) {
    return a->rank != b->rank ? a->rank < b->rank : a->left < b->left;
}

static void heap_push(Work *w, Cand c) {
    size_t i = w->heap_n++;
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (!cand_less(&c, &w->heap[parent])) break;
        w->heap[i] = w->heap[parent];
        i = parent;
    }
    w->heap[i] = c;
}

static Cand heap_pop(Work *w) {
    Cand top = w->heap[0];
    Cand last = w->heap[--w->heap_n];
    size_t i = 0, n = w->heap_n;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && cand_less(&w->heap[c + 1], &w->heap[c])) c++;
        if (!cand_less(&w->heap[c], &last)) break;
        w->heap[i] = w->heap[c];
        i = c;
    }
    if (n > 0) w->heap[i] = last;
    return top;
}

/* Pushes the pair (sym[i], its next) when it has a merge. */
static void push_pair(const MergeMap *m, Work *w, int32_t i) {
    const Sym *sym = w->sym;
    int32_t r = sym[i].next;
    if (r < 0 || sym[i].id < 0 || sym[r].id < 0) return;
    const MergeSlot *ms = merge_find(m, sym[i].id, sym[r].id);
    if (ms) heap_push(w, (Cand){ms->rank, i, r, sym[i].id, sym[r].id, ms->id});
}

/* Merges the chain w->sym[0..n) (linked in text order) until no adjacent pair has a merge,
 * lowest rank first and leftmost first among equal ranks. Symbol 0 stays the head. */
static void bpe_merge(const MergeMap *m, Work *w, int32_t n) {
    Sym *sym = w->sym;
    w->heap_n = 0;
    for (int32_t i = 0; i + 1 < n; i++) push_pair(m, w, i);
    while (w->heap_n > 0) {
        Cand c = heap_pop(w);
        Sym *l = &sym[c.left], *r = &sym[c.right];
        if (l->id != c.lid || l->next != c.right || r->id != c.rid) continue; /* stale */
        l->id = c.id;
        l->len += r->len;
        l->next = r->next;
        if (r->next >= 0) sym[r->next].prev = c.left;
        r->id = SYM_DEAD;
        if (l->prev >= 0) push_pair(m, w, l->prev);
        push_pair(m, w, c.left);
    }
}

static void link_chain(Sym *sym, int32_t n) {
    for (int32_t i = 0; i < n; i++) {
        sym[i].prev = i - 1;
        sym[i].next = i + 1 < n ? i + 1 : -1;
    }
}

/* ---------------------------------------------------------------- GPT-2 encode */

/* Encodes one pre-token text[0..n) (any bytes). */
static int gpt2_encode_word(const Tokenizer *t, const unsigned char *s, size_t n, IdVec *out,
                            Work *w) {
    if (n == 0) return 0;
    if (t->ignore_merges) {
        w->tmp.len = 0;
        for (size_t i = 0; i < n; i++) {
            char u[4];
            if (buf_put(&w->tmp, u, utf8_encode(t->byte_cp[s[i]], u)) < 0) return -1;
        }
        int32_t id = vocab_find(&t->v, w->tmp.p, w->tmp.len);
        if (id >= 0) return ids_push(out, id);
    }
    if (work_reserve(w, n) < 0) return -1;
    for (size_t i = 0; i < n; i++) w->sym[i] = (Sym){t->byte_id[s[i]], 0, 0, (uint32_t)i, 1};
    link_chain(w->sym, (int32_t)n);
    bpe_merge(&t->merges, w, (int32_t)n);
    for (int32_t i = 0; i >= 0; i = w->sym[i].next)
        if (ids_push(out, w->sym[i].id) < 0) return -1;
    return 0;
}

/* Pre-tokenizes text[0..len) with the regex and encodes each piece. */
static int gpt2_encode_pieces(const Tokenizer *t, const unsigned char *s, size_t len, IdVec *out,
                              Work *w, SpErr *err) {
    if (!t->re) {
        if (gpt2_encode_word(t, s, len, out, w) < 0) goto nomem;
        return 0;
    }
    pcre2_match_data *md = pcre2_match_data_create(1, NULL);
    if (!md) goto nomem;
    size_t off = 0;
    int rc = 0;
    while (off < len && rc == 0) {
        int m = pcre2_match(t->re, s, len, off, 0, md, NULL);
        size_t ms = len, me = len;
        if (m >= 0) {
            PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
            ms = ov[0], me = ov[1];
        } else if (m != PCRE2_ERROR_NOMATCH) {
            PCRE2_UCHAR msg[160];
            pcre2_get_error_message(m, msg, sizeof msg);
            pcre2_match_data_free(md);
            return sp_fail(err, "tokenizer: pre-tokenizer regex failed at byte %zu: %s", off,
                           (const char *)msg);
        }
        if (me <= off) me = ms = off + 1; /* cannot happen (no empty matches); never loop */
        /* bytes the regex skipped (invalid UTF-8) form a pre-token of their own */
        if (ms > off) rc = gpt2_encode_word(t, s + off, ms - off, out, w);
        if (rc == 0) rc = gpt2_encode_word(t, s + ms, me - ms, out, w);
        off = me;
    }
    pcre2_match_data_free(md);
    if (rc < 0) goto nomem;
    return 0;
nomem:
    return sp_fail(err, "tokenizer: out of memory while encoding %zu bytes", len);
}

static int gpt2_encode(const Tokenizer *t, const char *text, size_t len, IdVec *out, Work *w,
                       SpErr *err) {
    if (!(t->add_prefix_space && len > 0 && text[0] != ' '))
        return gpt2_encode_pieces(t, (const unsigned char *)text, len, out, w, err);
    Buf prefixed = {0}; /* ByteLevel add_prefix_space: " " + text */
    if (buf_put(&prefixed, " ", 1) < 0 || buf_put(&prefixed, text, len) < 0) {
        free(prefixed.p);
        return sp_fail(err, "tokenizer: out of memory while encoding %zu bytes", len);
    }
    int rc = gpt2_encode_pieces(t, (const unsigned char *)prefixed.p, prefixed.len, out, w, err);
    free(prefixed.p);
    return rc;
}

/* ---------------------------------------------------------------- Llama encode */

/* The normalized text: optional "▁" prefix, spaces replaced by "▁". */
/* first: the text is the first segment of the input (Metaspace prepend_scheme "first"). */
static int llama_normalize(const Tokenizer *t, const char *text, size_t len, int first, Buf *out) {
    out->len = 0;
    int starts_marked = (len > 0 && text[0] == ' ' && t->replace_spaces) ||
                        (len >= SP_SPACE_LEN && memcmp(text, SP_SPACE, SP_SPACE_LEN) == 0);
    if (t->prefix == PREFIX_ALWAYS ||
        (t->prefix == PREFIX_IF_MISSING && !starts_marked && (first || !t->prefix_first_only)))
        if (buf_put(out, SP_SPACE, SP_SPACE_LEN) < 0) return -1;
    if (buf_reserve(out, len + 1) < 0) return -1;
    size_t run = 0; /* start of the pending run without spaces */
    for (size_t i = 0; i <= len; i++) {
        if (i < len && !(text[i] == ' ' && t->replace_spaces)) continue;
        if (buf_put(out, text + run, i - run) < 0) return -1;
        if (i < len && buf_put(out, SP_SPACE, SP_SPACE_LEN) < 0) return -1;
        run = i + 1;
    }
    return 0;
}

/* Appends the tokens of the merged chain; symbols without a token become byte tokens or <unk>. */
static int llama_emit(const Tokenizer *t, const Work *w, const char *text, IdVec *out, SpErr *err) {
    for (int32_t i = 0; i >= 0; i = w->sym[i].next) {
        const Sym *s = &w->sym[i];
        if (s->id >= 0) {
            if (ids_push(out, s->id) < 0) goto nomem;
        } else if (t->byte_fallback) {
            for (uint32_t k = 0; k < s->len; k++)
                if (ids_push(out, t->byte_id[(unsigned char)text[s->start + k]]) < 0) goto nomem;
        } else if (t->unk >= 0) {
            if (!(t->fuse_unk && out->n > 0 && out->p[out->n - 1] == t->unk))
                if (ids_push(out, t->unk) < 0) goto nomem;
        } else {
            char shown[96];
            return sp_fail(err, "tokenizer: '%s' has no token, and there is no unk_token",
                           show(shown, text + s->start, s->len));
        }
    }
    return 0;
nomem:
    return sp_fail(err, "tokenizer: out of memory while encoding");
}

/* BPE over norm[from..to) as one word. */
static int llama_encode_word(const Tokenizer *t, const char *norm, size_t from, size_t to,
                             IdVec *out, Work *w, SpErr *err) {
    if (work_reserve(w, to - from) < 0) return sp_fail(err, "tokenizer: out of memory");
    int32_t n = 0;
    const unsigned char *s = (const unsigned char *)norm;
    for (size_t i = from; i < to;) {
        uint32_t cp;
        size_t k = utf8_decode(s + i, to - i, &cp);
        int32_t id = SYM_UNKNOWN;
        if (k == 0)
            k = 1; /* an invalid byte: a symbol of its own, never a token */
        else
            id = vocab_find(&t->v, norm + i, k);
        w->sym[n++] = (Sym){id, 0, 0, (uint32_t)i, (uint32_t)k};
        i += k;
    }
    link_chain(w->sym, n);
    bpe_merge(&t->merges, w, n);
    return llama_emit(t, w, norm, out, err);
}

static int llama_encode(const Tokenizer *t, const char *text, size_t len, int first, IdVec *out,
                        Work *w, SpErr *err) {
    if (len == 0) return 0; /* the normalizer prepends nothing to empty text */
    Buf norm = {0};
    if (llama_normalize(t, text, len, first, &norm) < 0) {
        free(norm.p);
        return sp_fail(err, "tokenizer: out of memory while encoding %zu bytes", len);
    }
    int rc = 0;
    size_t from = 0;
    for (size_t i = 1; i <= norm.len && rc == 0; i++) {
        int boundary = i == norm.len ||
                       (t->split_words && norm.len - i >= SP_SPACE_LEN &&
                        memcmp(norm.p + i, SP_SPACE, SP_SPACE_LEN) == 0);
        if (!boundary) continue;
        rc = llama_encode_word(t, norm.p, from, i, out, w, err);
        from = i;
    }
    free(norm.p);
    return rc;
}

/* ---------------------------------------------------------------- added tokens in the text */

/* Unicode White_Space, the \s of the Rust regex crate that Hugging Face's lstrip / rstrip use. */
static int is_unicode_space(uint32_t c) {
    return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
           (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F ||
           c == 0x3000;
}

/* Start of the code point that ends at s[end] (end > from), or end - 1 when that is not valid UTF-8. */
static size_t prev_char(const char *s, size_t from, size_t end) {
    for (size_t back = 1; back <= 4 && back <= end - from; back++) {
        uint32_t cp;
        if (utf8_decode((const unsigned char *)s + end - back, back, &cp) == back) return end - back;
    }
    return end - 1;
}

/* Start of the whitespace run that ends at s[end], not before from (lstrip). */
static size_t space_run_start(const char *s, size_t from, size_t end) {
    while (end > from) {
        size_t k = prev_char(s, from, end);
        uint32_t cp;
        if (utf8_decode((const unsigned char *)s + k, end - k, &cp) != end - k || !is_unicode_space(cp)) break;
        end = k;
    }
    return end;
}

/* End of the whitespace run that starts at s[start], not past len (rstrip). */
static size_t space_run_end(const char *s, size_t start, size_t len) {
    while (start < len) {
        uint32_t cp;
        size_t k = utf8_decode((const unsigned char *)s + start, len - start, &cp);
        if (k == 0 || !is_unicode_space(cp)) break;
        start += k;
    }
    return start;
}

/* 1 when the code point at s[at] is a word character (Unicode \w), 0 if not, -1 out of memory. */
static int word_char_at(const Tokenizer *t, const char *s, size_t len, size_t at, Work *w) {
    if (!w->md && !(w->md = pcre2_match_data_create(1, NULL))) return -1;
    return pcre2_match(t->word_re, (PCRE2_SPTR)s, len, at, PCRE2_ANCHORED, w->md, NULL) >= 0;
}

/* single_word: the match s[start..stop) has no word character right before or after it.
 * 1 yes, 0 no, -1 out of memory. */
static int single_word_ok(const Tokenizer *t, const char *s, size_t len, size_t start, size_t stop, Work *w) {
    int before = start > 0 ? word_char_at(t, s, len, prev_char(s, 0, start), w) : 0;
    int after = stop < len ? word_char_at(t, s, len, stop, w) : 0;
    if (before < 0 || after < 0) return -1;
    return !before && !after;
}

/* The longest added token that s[pos..len) starts with, or NULL. */
static const AddedTok *added_at(const Tokenizer *t, const char *s, size_t len, size_t pos) {
    for (int i = 0; i < t->n_added; i++) {
        size_t n;
        const char *c = vocab_str(&t->v, t->added[i].id, &n);
        if (n > 0 && n <= len - pos && c[0] == s[pos] && memcmp(c, s + pos, n) == 0) return &t->added[i];
    }
    return NULL;
}

/* Encodes one stretch of text without added tokens; first: it starts the input. */
static int encode_segment(const Tokenizer *t, const char *s, size_t len, int first, IdVec *out, Work *w,
                          SpErr *err) {
    return t->kind == TOK_GPT2_BPE ? gpt2_encode(t, s, len, out, w, err)
                                   : llama_encode(t, s, len, first, out, w, err);
}

/* Hugging Face's added-token split: the leftmost, then longest, added token in the text becomes its
 * id, the text between such tokens is encoded on its own (so a Llama normalizer prepends "▁" to
 * each stretch). A match that is dropped (special_as_text on a special token, single_word next to
 * a word character) stays plain text as a whole, as in Hugging Face's matcher. lstrip / rstrip
 * make the token swallow the whitespace before / after it. Tokens are matched on the raw text,
 * also those marked normalized: the same for GPT-2 (no normalizer) and for tokens without spaces
 * or "▁" under the Llama normalizers. */
static int encode_split(const Tokenizer *t, const char *s, size_t len, int special_as_text, IdVec *out,
                        Work *w, SpErr *err) {
    size_t seg = 0; /* start of the pending plain-text stretch */
    for (size_t pos = 0; pos < len;) {
        const AddedTok *a = added_at(t, s, len, pos);
        if (!a) {
            pos++;
            continue;
        }
        size_t n;
        vocab_str(&t->v, a->id, &n);
        size_t start = pos, stop = pos + n;
        pos = stop;
        if (special_as_text && a->special) continue;
        if (a->single_word) {
            int ok = single_word_ok(t, s, len, start, stop, w);
            if (ok < 0) return sp_fail(err, "tokenizer: out of memory");
            if (!ok) continue;
        }
        if (a->lstrip) start = space_run_start(s, seg, start);
        if (a->rstrip) stop = space_run_end(s, stop, len);
        if (encode_segment(t, s + seg, start - seg, seg == 0, out, w, err) < 0) return -1;
        if (ids_push(out, a->id) < 0) return sp_fail(err, "tokenizer: out of memory");
        seg = pos = stop;
    }
    return encode_segment(t, s + seg, len - seg, seg == 0, out, w, err);
}

int tokenizer_encode_flags(const Tokenizer *t, const char *text, size_t len, unsigned flags, int32_t **ids,
                           size_t *n, SpErr *err) {
    *ids = NULL;
    *n = 0;
    if (len > MAX_TEXT_BYTES) return sp_fail(err, "tokenizer: text of %zu bytes is too long", len);
    if (len > 0 && !text) return sp_fail(err, "tokenizer: text is NULL");
    IdVec out = {0};
    Work w = {0};
    int rc = 0;
    if ((flags & TOK_ENC_BOS) && t->bos >= 0 && ids_push(&out, t->bos) < 0)
        rc = sp_fail(err, "tokenizer: out of memory");
    if (rc == 0) rc = encode_split(t, text, len, (flags & TOK_ENC_SPECIAL_AS_TEXT) != 0, &out, &w, err);
    if (rc == 0 && (flags & TOK_ENC_EOS) && t->eos >= 0 && ids_push(&out, t->eos) < 0)
        rc = sp_fail(err, "tokenizer: out of memory");
    work_free(&w);
    if (rc == 0 && !out.p && !(out.p = malloc(sizeof *out.p)))
        rc = sp_fail(err, "tokenizer: out of memory");
    if (rc < 0) {
        free(out.p);
        return -1;
    }
    *ids = out.p;
    *n = out.n;
    return 0;
}

int tokenizer_encode(const Tokenizer *t, const char *text, size_t len, int add_bos, int32_t **ids,
                     size_t *n, SpErr *err) {
    return tokenizer_encode_flags(t, text, len, add_bos ? TOK_ENC_BOS : 0u, ids, n, err);
}

/* ---------------------------------------------------------------- decode */

int tokenizer_decode(const Tokenizer *t, const int32_t *ids, size_t n, int skip_special, char **text,
                     size_t *len, SpErr *err) {
    *text = NULL;
    *len = 0;
    Buf out = {0};
    if (buf_reserve(&out, 1) < 0) return sp_fail(err, "tokenizer: out of memory");
    out.p[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        int32_t id = ids[i];
        if (id < 0 || id >= t->v.n_ids || !t->v.flags[id]) {
            free(out.p);
            return sp_fail(err, "%s: token id %d at position %zu is not in this tokenizer's vocabulary (%s)",
                           t->source[0] ? t->source : "tokenizer", (int)id, i,
                           id < 0 || id >= t->v.n_ids ? "ids beyond its size" : "an unused id");
        }
        if (skip_special && (t->v.flags[id] & TF_SPECIAL)) continue;
        Span d = t->dec_span[id];
        if (buf_put(&out, t->dec.p + d.off, d.len) < 0) {
            free(out.p);
            return sp_fail(err, "tokenizer: out of memory while decoding");
        }
    }
    size_t skip = t->strip_leading && out.len > 0 && out.p[0] == ' ';
    memmove(out.p, out.p + skip, out.len - skip + 1);
    *text = out.p;
    *len = out.len - skip;
    return 0;
}

/* Decoded bytes of a byte-level token: each char maps back to its byte (byte_of_cp, the inverse
 * of bytes_to_unicode); chars outside the mapping are kept as UTF-8. */
static int gpt2_token_bytes(const char *s, size_t n, const uint8_t byte_of_cp[BYTE_CP_END], Buf *out) {
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        size_t k = utf8_decode((const unsigned char *)s + i, n - i, &cp);
        if (k == 0) k = 1, cp = BYTE_CP_END; /* cannot happen: tokens come from JSON strings */
        if (cp < BYTE_CP_END) {
            char b = (char)byte_of_cp[cp];
            if (buf_put(out, &b, 1) < 0) return -1;
        } else if (buf_put(out, s + i, k) < 0) {
            return -1;
        }
        i += k;
    }
    return 0;
}

/* Byte value of a "<0xNN>" token, or -1. */
static int byte_token_value(const char *s, size_t n) {
    static const char hex[] = "0123456789ABCDEF";
    if (n != 6 || memcmp(s, "<0x", 3) != 0 || s[5] != '>') return -1;
    const char *hi = memchr(hex, s[3], 16), *lo = memchr(hex, s[4], 16);
    if (!hi || !lo || !s[3] || !s[4]) return -1;
    return (int)((hi - hex) * 16 + (lo - hex));
}

/* Decoded bytes of a Llama token: "▁" -> ' ', <0xNN> -> the byte. */
static int llama_token_bytes(const char *s, size_t n, Buf *out) {
    int b = byte_token_value(s, n);
    if (b >= 0) {
        char c = (char)b;
        return buf_put(out, &c, 1);
    }
    size_t run = 0;
    for (size_t i = 0; i <= n; i++) {
        int marker = i + SP_SPACE_LEN <= n && memcmp(s + i, SP_SPACE, SP_SPACE_LEN) == 0;
        if (i < n && !marker) continue;
        if (buf_put(out, s + run, i - run) < 0) return -1;
        if (marker) {
            if (buf_put(out, " ", 1) < 0) return -1;
            i += SP_SPACE_LEN - 1;
        }
        run = i + 1;
    }
    return 0;
}

/* Fills dec / dec_span from the vocabulary. */
static int build_decoded(Tokenizer *t, SpErr *err) {
    t->dec_span = calloc((size_t)t->v.n_ids + 1, sizeof *t->dec_span);
    if (!t->dec_span) return sp_fail(err, "tokenizer: out of memory");
    uint8_t byte_of_cp[BYTE_CP_END];
    for (int b = 0; b < 256; b++) byte_of_cp[t->byte_cp[b]] = (uint8_t)b;
    for (int32_t id = 0; id < t->v.n_ids; id++) {
        if (!t->v.flags[id]) continue;
        size_t n, off = t->dec.len;
        const char *s = vocab_str(&t->v, id, &n);
        int rc;
        if (t->v.flags[id] & TF_ADDED)
            rc = buf_put(&t->dec, s, n);
        else if (t->kind == TOK_GPT2_BPE)
            rc = gpt2_token_bytes(s, n, byte_of_cp, &t->dec);
        else
            rc = llama_token_bytes(s, n, &t->dec);
        if (rc < 0 || buf_put(&t->dec, "", 1) < 0 || t->dec.len > UINT32_MAX)
            return sp_fail(err, "tokenizer: out of memory");
        t->dec_span[id] = (Span){(uint32_t)off, (uint32_t)(t->dec.len - off - 1)};
    }
    return 0;
}

/* ---------------------------------------------------------------- file and JSON helpers */

static int file_exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* Reads a whole file (NUL appended, not counted in *len). */
static int read_file(const char *path, char **data, size_t *len, SpErr *err) {
    *data = NULL;
    *len = 0;
    FILE *f = sp_fopen_input(path, err);
    if (!f) return -1;
    Buf b = {0};
    for (;;) {
        if (buf_reserve(&b, 1 << 16) < 0) {
            fclose(f);
            free(b.p);
            return sp_fail(err, "%s: out of memory", path);
        }
        size_t got = fread(b.p + b.len, 1, b.cap - b.len - 1, f);
        b.len += got;
        if (b.len > MAX_FILE_BYTES) {
            fclose(f);
            free(b.p);
            return sp_fail(err, "%s: larger than %zu bytes", path, MAX_FILE_BYTES);
        }
        if (got == 0) break;
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        free(b.p);
        return sp_fail(err, "%s: read error", path);
    }
    b.p[b.len] = '\0';
    *data = b.p;
    *len = b.len;
    return 0;
}

static cJSON *parse_json_file(const char *path, SpErr *err) {
    char *data;
    size_t len;
    if (read_file(path, &data, &len, err) < 0) return NULL;
    cJSON *root = sp_json_parse(path, data, len, err);
    free(data);
    return root;
}

/* *out = integer value of a JSON number in [0, limit); -1 when not such a number. */
static int json_index(const cJSON *item, int64_t limit, int32_t *out) {
    if (!cJSON_IsNumber(item)) return -1;
    double d = item->valuedouble;
    if (!(d >= 0 && d < (double)limit) || d != (double)(int64_t)d) return -1;
    *out = (int32_t)d;
    return 0;
}

static const cJSON *field(const cJSON *obj, const char *name) {
    return cJSON_IsObject(obj) ? cJSON_GetObjectItemCaseSensitive(obj, name) : NULL;
}

static int is_type(const cJSON *obj, const char *type) {
    const cJSON *ty = field(obj, "type");
    return cJSON_IsString(ty) && strcmp(ty->valuestring, type) == 0;
}

/* Optional boolean field: def when absent or null, -1 when of another type. */
static int opt_bool(const cJSON *obj, const char *name, int def) {
    const cJSON *b = field(obj, name);
    if (!b || cJSON_IsNull(b)) return def;
    return cJSON_IsBool(b) ? cJSON_IsTrue(b) : -1;
}

/* The component of the given type: obj itself, or an element of a "Sequence" (searched
 * recursively through pretokenizers / normalizers / decoders). */
static const cJSON *find_component(const cJSON *obj, const char *type) {
    if (!cJSON_IsObject(obj)) return NULL;
    if (is_type(obj, type)) return obj;
    if (!is_type(obj, "Sequence")) return NULL;
    static const char *const lists[] = {"pretokenizers", "normalizers", "decoders"};
    for (size_t l = 0; l < sizeof lists / sizeof lists[0]; l++) {
        const cJSON *item;
        cJSON_ArrayForEach(item, field(obj, lists[l])) {
            const cJSON *found = find_component(item, type);
            if (found) return found;
        }
    }
    return NULL;
}

/* ---------------------------------------------------------------- loading tables */

static int vocab_add_checked(Vocab *v, const char *s, size_t n, int32_t id, uint8_t flags,
                             const char *file, const char *fieldname, SpErr *err) {
    char shown[96], shown2[96];
    switch (vocab_add(v, s, n, id, flags)) {
    case VA_OK:
        return 0;
    case VA_NOMEM:
        return sp_fail(err, "%s: %s: out of memory", file, fieldname);
    case VA_TOO_LONG:
        return sp_fail(err, "%s: %s: token '%s' is longer than %d bytes", file, fieldname,
                       show(shown, s, n), MAX_TOKEN_BYTES);
    case VA_DUP_STR:
        return sp_fail(err, "%s: %s: duplicate token '%s'", file, fieldname, show(shown, s, n));
    case VA_DUP_ID: {
        size_t len;
        const char *other = vocab_str(v, id, &len);
        return sp_fail(err, "%s: %s: duplicate id %d ('%s' and '%s')", file, fieldname, (int)id,
                       show(shown, other, len), show(shown2, s, n));
    }
    }
    return -1;
}

/* Loads a {"token": id, ...} object. */
static int load_vocab_object(Vocab *v, const cJSON *obj, const char *file, const char *fieldname,
                             SpErr *err) {
    if (!cJSON_IsObject(obj)) return sp_fail(err, "%s: %s: missing or not an object", file, fieldname);
    size_t count = 0;
    const cJSON *item;
    cJSON_ArrayForEach(item, obj) {
        char shown[96];
        int32_t id;
        if (++count > MAX_VOCAB)
            return sp_fail(err, "%s: %s: more than %d tokens", file, fieldname, MAX_VOCAB);
        if (json_index(item, MAX_VOCAB, &id) < 0)
            return sp_fail(err, "%s: %s: id of token '%s' is not an integer in [0, %d)", file,
                           fieldname, show(shown, item->string, strlen(item->string)), MAX_VOCAB);
        if (vocab_add_checked(v, item->string, strlen(item->string), id, 0, file, fieldname, err) < 0)
            return -1;
    }
    if (count == 0) return sp_fail(err, "%s: %s: empty vocabulary", file, fieldname);
    return 0;
}

/* Adds merge (a, b) with the given rank; a, b and their concatenation must be tokens.
 * where: "line 3" / "entry 17" for messages. */
static int add_merge(Tokenizer *t, const char *a, size_t an, const char *b, size_t bn, int32_t rank,
                     const char *file, const char *where, Buf *tmp, SpErr *err) {
    char shown[96];
    int32_t ia = vocab_find(&t->v, a, an), ib = vocab_find(&t->v, b, bn);
    if (ia < 0) return sp_fail(err, "%s: %s: '%s' is not in the vocabulary", file, where, show(shown, a, an));
    if (ib < 0) return sp_fail(err, "%s: %s: '%s' is not in the vocabulary", file, where, show(shown, b, bn));
    tmp->len = 0;
    if (buf_put(tmp, a, an) < 0 || buf_put(tmp, b, bn) < 0)
        return sp_fail(err, "%s: out of memory", file);
    int32_t iab = vocab_find(&t->v, tmp->p, tmp->len);
    if (iab < 0)
        return sp_fail(err, "%s: %s: merged token '%s' is not in the vocabulary", file, where,
                       show(shown, tmp->p, tmp->len));
    if (merge_put(&t->merges, ia, ib, rank, iab) < 0) return sp_fail(err, "%s: out of memory", file);
    return 0;
}

/* Splits "a b" at its one space; -1 unless exactly two non-empty parts. */
static int split_merge(const char *s, size_t n, size_t *an, const char **b, size_t *bn) {
    const char *sp = memchr(s, ' ', n);
    if (!sp || sp == s || sp + 1 == s + n || memchr(sp + 1, ' ', (size_t)(s + n - sp - 1))) return -1;
    *an = (size_t)(sp - s);
    *b = sp + 1;
    *bn = n - *an - 1;
    return 0;
}

/* merges.txt / vocab.bpe: optional "#version" first line, then "a b" per line. */
static int load_merges_text(Tokenizer *t, const char *path, SpErr *err) {
    char *data;
    size_t len;
    if (read_file(path, &data, &len, err) < 0) return -1;
    Buf tmp = {0};
    int32_t rank = 0;
    size_t lineno = 0;
    int rc = 0;
    for (size_t pos = 0; pos < len && rc == 0;) {
        const char *line = data + pos;
        const char *nl = memchr(line, '\n', len - pos);
        size_t n = nl ? (size_t)(nl - line) : len - pos;
        pos += n + 1;
        lineno++;
        if (n > 0 && line[n - 1] == '\r') n--;
        if (n == 0) continue;
        if (lineno == 1 && n >= 8 && memcmp(line, "#version", 8) == 0) continue;
        char where[48];
        snprintf(where, sizeof where, "line %zu", lineno);
        size_t an, bn;
        const char *b;
        if (rank >= MAX_MERGES)
            rc = sp_fail(err, "%s: more than %d merges", path, MAX_MERGES);
        else if (split_merge(line, n, &an, &b, &bn) < 0)
            rc = sp_fail(err, "%s: %s: expected two tokens separated by one space", path, where);
        else
            rc = add_merge(t, line, an, b, bn, rank++, path, where, &tmp, err);
    }
    free(tmp.p);
    free(data);
    return rc;
}

/* tokenizer.json model.merges: ["a b", ...] or [["a", "b"], ...]. */
static int load_merges_json(Tokenizer *t, const cJSON *merges, const char *path, SpErr *err) {
    if (!merges || cJSON_IsNull(merges)) return 0;
    if (!cJSON_IsArray(merges)) return sp_fail(err, "%s: model.merges: not an array", path);
    Buf tmp = {0};
    int32_t rank = 0;
    int rc = 0;
    const cJSON *item;
    cJSON_ArrayForEach(item, merges) {
        char where[64];
        snprintf(where, sizeof where, "model.merges: entry %d", (int)rank);
        const char *a = NULL, *b = NULL;
        size_t an = 0, bn = 0;
        if (rank >= MAX_MERGES) {
            rc = sp_fail(err, "%s: model.merges: more than %d merges", path, MAX_MERGES);
        } else if (cJSON_IsString(item)) {
            a = item->valuestring;
            if (split_merge(a, strlen(a), &an, &b, &bn) < 0)
                rc = sp_fail(err, "%s: %s: expected \"a b\" with one space", path, where);
        } else if (cJSON_IsArray(item) && cJSON_GetArraySize(item) == 2 &&
                   cJSON_IsString(item->child) && cJSON_IsString(item->child->next)) {
            a = item->child->valuestring, an = strlen(a);
            b = item->child->next->valuestring, bn = strlen(b);
        } else {
            rc = sp_fail(err, "%s: %s is not a string or pair", path, where);
        }
        if (rc == 0) rc = add_merge(t, a, an, b, bn, rank++, path, where, &tmp, err);
        if (rc < 0) break;
    }
    free(tmp.p);
    return rc;
}

/* Registers id as an added token that encode splits out of the text (one entry per id). */
static int push_added(Tokenizer *t, AddedTok a) {
    for (int i = 0; i < t->n_added; i++)
        if (t->added[i].id == a.id) {
            t->added[i] = a; /* a repeated entry: the later one wins */
            return 0;
        }
    AddedTok *p = realloc(t->added, ((size_t)t->n_added + 1) * sizeof *p);
    if (!p) return -1;
    t->added = p;
    t->added[t->n_added++] = a;
    return 0;
}

/* tokenizer.json added_tokens: [{"id": n, "content": "...", "special": bool, "lstrip": bool,
 * "rstrip": bool, "single_word": bool, "normalized": bool}, ...]. Tokens that are already in
 * model.vocab must have the same id there. */
static int load_added_tokens(Tokenizer *t, const cJSON *added, const char *path, SpErr *err) {
    if (!added || cJSON_IsNull(added)) return 0;
    if (!cJSON_IsArray(added)) return sp_fail(err, "%s: added_tokens: not an array", path);
    if (cJSON_GetArraySize(added) > MAX_VOCAB) return sp_fail(err, "%s: added_tokens: more than %d entries", path, MAX_VOCAB);
    int index = 0;
    const cJSON *item;
    cJSON_ArrayForEach(item, added) {
        char shown[96], fieldname[64];
        snprintf(fieldname, sizeof fieldname, "added_tokens: entry %d", index++);
        const cJSON *content = field(item, "content");
        int32_t id;
        if (!cJSON_IsString(content))
            return sp_fail(err, "%s: %s: content is missing or not a string", path, fieldname);
        if (json_index(field(item, "id"), MAX_VOCAB, &id) < 0)
            return sp_fail(err, "%s: %s: id is not an integer in [0, %d)", path, fieldname, MAX_VOCAB);
        static const char *const names[] = {"special", "lstrip", "rstrip", "single_word", "normalized"};
        int flag[5];
        for (int f = 0; f < 5; f++)
            if ((flag[f] = opt_bool(item, names[f], 0)) < 0)
                return sp_fail(err, "%s: %s: %s is not a boolean", path, fieldname, names[f]);
        int special = flag[0];
        const char *s = content->valuestring;
        size_t n = strlen(s);
        int32_t have = vocab_find(&t->v, s, n);
        if (have >= 0 && have != id)
            return sp_fail(err, "%s: %s: '%s' has id %d but model.vocab gives it %d", path,
                           fieldname, show(shown, s, n), (int)id, (int)have);
        uint8_t flags = (uint8_t)(special ? TF_SPECIAL : 0);
        if (have >= 0)
            t->v.flags[id] |= flags;
        else if (vocab_add_checked(&t->v, s, n, id, (uint8_t)(flags | TF_ADDED), path, fieldname, err) < 0)
            return -1;
        if (push_added(t, (AddedTok){id, (uint8_t)flag[0], (uint8_t)flag[1], (uint8_t)flag[2], (uint8_t)flag[3]}) < 0)
            return sp_fail(err, "%s: %s: out of memory", path, fieldname);
    }
    return 0;
}

/* Order of the added tokens: longer content first, then lower id. */
static int added_before(const AddedTok *x, const AddedTok *y, const Vocab *v) {
    size_t nx, ny;
    vocab_str(v, x->id, &nx);
    vocab_str(v, y->id, &ny);
    return nx != ny ? nx > ny : x->id < y->id;
}

/* Orders the added tokens longest first (ties: lower id) and compiles \w when a token is
 * single_word. */
static int finish_added(Tokenizer *t, SpErr *err) {
    for (int i = 1; i < t->n_added; i++) { /* insertion sort: the lists are short */
        AddedTok a = t->added[i];
        int j = i;
        while (j > 0 && added_before(&a, &t->added[j - 1], &t->v)) {
            t->added[j] = t->added[j - 1];
            j--;
        }
        t->added[j] = a;
    }
    int single = 0;
    for (int i = 0; i < t->n_added; i++) single |= t->added[i].single_word;
    if (!single) return 0;
    int code;
    PCRE2_SIZE at;
    t->word_re = pcre2_compile((PCRE2_SPTR) "\\w", PCRE2_ZERO_TERMINATED,
                               PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF, &code, &at, NULL);
    if (!t->word_re) return sp_fail(err, "tokenizer: cannot compile \\w for single_word tokens");
    return 0;
}


static void mark_special(Tokenizer *t, const char *s) {
    int32_t id = vocab_find(&t->v, s, strlen(s));
    if (id >= 0) t->v.flags[id] |= TF_SPECIAL;
}

/* GPT-2 tables after the vocabulary and merges: byte tokens, <|endoftext|>, the regex. */
static int finish_gpt2(Tokenizer *t, const char *vocab_file, int use_regex, SpErr *err) {
    for (int b = 0; b < 256; b++) {
        char u[4];
        t->byte_id[b] = vocab_find(&t->v, u, utf8_encode(t->byte_cp[b], u));
        if (t->byte_id[b] < 0)
            return sp_fail(err, "%s: vocabulary lacks the byte-level token for byte 0x%02X", vocab_file, b);
    }
    int32_t eot = vocab_find(&t->v, "<|endoftext|>", 13);
    if (eot >= 0) {
        t->v.flags[eot] |= TF_SPECIAL;
        t->bos = t->eos = eot;
    }
    if (use_regex) {
        int code;
        PCRE2_SIZE at;
        t->re = pcre2_compile((PCRE2_SPTR)GPT2_PATTERN, PCRE2_ZERO_TERMINATED,
                              PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF, &code, &at, NULL);
        if (!t->re) {
            PCRE2_UCHAR msg[160];
            pcre2_get_error_message(code, msg, sizeof msg);
            return sp_fail(err, "tokenizer: cannot compile the GPT-2 regex at %zu: %s", (size_t)at,
                           (const char *)msg);
        }
        (void)pcre2_jit_compile(t->re, PCRE2_JIT_COMPLETE); /* optional speed-up */
    }
    if (finish_added(t, err) < 0) return -1;
    return build_decoded(t, err);
}

/* Llama tables after vocabulary and merges: byte tokens, <s> </s> <unk>. */
static int finish_llama(Tokenizer *t, const char *file, const char *unk_token, SpErr *err) {
    for (int b = 0; b < 256; b++) {
        char name[8];
        snprintf(name, sizeof name, "<0x%02X>", b);
        t->byte_id[b] = vocab_find(&t->v, name, 6);
        if (t->byte_id[b] < 0 && t->byte_fallback)
            return sp_fail(err, "%s: model.vocab: byte_fallback is set but token %s is missing", file, name);
    }
    t->bos = vocab_find(&t->v, "<s>", 3);
    t->eos = vocab_find(&t->v, "</s>", 4);
    mark_special(t, "<s>");
    mark_special(t, "</s>");
    if (unk_token) {
        t->unk = vocab_find(&t->v, unk_token, strlen(unk_token));
        if (t->unk < 0) {
            char shown[96];
            return sp_fail(err, "%s: model.unk_token: '%s' is not in the vocabulary", file,
                           show(shown, unk_token, strlen(unk_token)));
        }
        t->v.flags[t->unk] |= TF_SPECIAL;
    }
    t->add_bos = 1; /* the Llama convention, unless tokenizer_config.json says otherwise */
    if (finish_added(t, err) < 0) return -1;
    return build_decoded(t, err);
}

/* ---------------------------------------------------------------- public loaders */

Tokenizer *tokenizer_load_gpt2_files(const char *vocab_path, const char *merges_path, SpErr *err) {
    Tokenizer *t = tok_new(TOK_GPT2_BPE, err);
    if (!t) return NULL;
    cJSON *root = parse_json_file(vocab_path, err);
    int rc = root ? load_vocab_object(&t->v, root, vocab_path, "vocabulary", err) : -1;
    cJSON_Delete(root);
    if (rc == 0) rc = load_merges_text(t, merges_path, err);
    /* no added_tokens list here: <|endoftext|> is split out of the text, as the added special token
     * that Hugging Face's GPT-2 tokenizer.json declares */
    int32_t eot = rc == 0 ? vocab_find(&t->v, "<|endoftext|>", 13) : -1;
    if (eot >= 0 && push_added(t, (AddedTok){eot, 1, 0, 0, 0}) < 0)
        rc = sp_fail(err, "%s: out of memory", vocab_path);
    if (rc == 0) rc = finish_gpt2(t, vocab_path, 1, err);
    if (rc < 0) {
        tokenizer_free(t);
        return NULL;
    }
    return t;
}

/* Which family a tokenizer.json describes: TOK_GPT2_BPE, TOK_LLAMA_BPE or 0. */
static int json_family(const cJSON *root) {
    const cJSON *pre = field(root, "pre_tokenizer"), *dec = field(root, "decoder");
    const cJSON *norm = field(root, "normalizer"), *model = field(root, "model");
    if (find_component(pre, "ByteLevel") || find_component(dec, "ByteLevel")) return TOK_GPT2_BPE;
    if (opt_bool(model, "byte_fallback", 0) == 1 || find_component(pre, "Metaspace") ||
        find_component(dec, "Metaspace") || find_component(norm, "Prepend"))
        return TOK_LLAMA_BPE;
    const cJSON *rep = find_component(norm, "Replace");
    const cJSON *content = field(rep, "content");
    if (cJSON_IsString(content) && strcmp(content->valuestring, SP_SPACE) == 0) return TOK_LLAMA_BPE;
    return 0;
}

/* Reads ByteLevel options; only a plain ByteLevel pre-tokenizer and no normalizer is supported. */
static int config_gpt2(Tokenizer *t, const cJSON *root, const char *path, int *use_regex, SpErr *err) {
    const cJSON *pre = field(root, "pre_tokenizer"), *norm = field(root, "normalizer");
    if (norm && !cJSON_IsNull(norm))
        return sp_fail(err, "%s: normalizer: not supported with a ByteLevel pre-tokenizer", path);
    if (!is_type(pre, "ByteLevel"))
        return sp_fail(err, "%s: pre_tokenizer: only a plain ByteLevel pre-tokenizer is supported",
                       path);
    t->add_prefix_space = opt_bool(pre, "add_prefix_space", 1);
    *use_regex = opt_bool(pre, "use_regex", 1);
    t->ignore_merges = opt_bool(field(root, "model"), "ignore_merges", 0);
    if (t->add_prefix_space < 0 || *use_regex < 0 || t->ignore_merges < 0)
        return sp_fail(err, "%s: pre_tokenizer: add_prefix_space/use_regex/ignore_merges must be "
                            "booleans", path);
    return 0;
}

/* Normalizer of the Llama family: null, Prepend("▁"), Replace(" " -> "▁"), or a Sequence. */
static int config_llama_normalizer(Tokenizer *t, const cJSON *norm, const char *path, SpErr *err) {
    if (!norm || cJSON_IsNull(norm)) return 0;
    if (is_type(norm, "Sequence")) {
        const cJSON *item, *list = field(norm, "normalizers");
        if (!cJSON_IsArray(list)) return sp_fail(err, "%s: normalizer.normalizers: not an array", path);
        cJSON_ArrayForEach(item, list) if (config_llama_normalizer(t, item, path, err) < 0) return -1;
        return 0;
    }
    if (is_type(norm, "Prepend")) {
        const cJSON *p = field(norm, "prepend");
        if (!cJSON_IsString(p) || strcmp(p->valuestring, SP_SPACE) != 0)
            return sp_fail(err, "%s: normalizer: Prepend of anything but \"\\u2581\" is not supported", path);
        t->prefix = PREFIX_ALWAYS;
        return 0;
    }
    if (is_type(norm, "Replace")) {
        const cJSON *from = field(field(norm, "pattern"), "String"), *to = field(norm, "content");
        if (!cJSON_IsString(from) || !cJSON_IsString(to) || strcmp(from->valuestring, " ") != 0 ||
            strcmp(to->valuestring, SP_SPACE) != 0)
            return sp_fail(err, "%s: normalizer: only Replace \" \" -> \"\\u2581\" is supported", path);
        t->replace_spaces = 1;
        return 0;
    }
    const cJSON *ty = field(norm, "type");
    return sp_fail(err, "%s: normalizer: type '%s' is not supported", path,
                   cJSON_IsString(ty) ? ty->valuestring : "?");
}

/* Pre-tokenizer of the Llama family: null or Metaspace. */
static int config_llama_pre(Tokenizer *t, const cJSON *pre, const char *path, SpErr *err) {
    if (!pre || cJSON_IsNull(pre)) return 0;
    if (!is_type(pre, "Metaspace"))
        return sp_fail(err, "%s: pre_tokenizer: only Metaspace is supported for this tokenizer", path);
    const cJSON *rep = field(pre, "replacement"), *scheme = field(pre, "prepend_scheme");
    if (rep && !(cJSON_IsString(rep) && strcmp(rep->valuestring, SP_SPACE) == 0))
        return sp_fail(err, "%s: pre_tokenizer.replacement: only \"\\u2581\" is supported", path);
    int add_prefix = opt_bool(pre, "add_prefix_space", 1);
    t->split_words = opt_bool(pre, "split", 1);
    if (add_prefix < 0 || t->split_words < 0)
        return sp_fail(err, "%s: pre_tokenizer: add_prefix_space/split must be booleans", path);
    if (cJSON_IsString(scheme)) {
        const char *s = scheme->valuestring;
        if (strcmp(s, "never") == 0)
            add_prefix = 0;
        else if (strcmp(s, "always") == 0 || strcmp(s, "first") == 0)
            add_prefix = 1;
        else
            return sp_fail(err, "%s: pre_tokenizer.prepend_scheme: unknown value '%s'", path, s);
        t->prefix_first_only = strcmp(s, "first") == 0;
    }
    t->replace_spaces = 1;
    if (add_prefix && t->prefix == PREFIX_NONE) t->prefix = PREFIX_IF_MISSING;
    return 0;
}

static int config_llama(Tokenizer *t, const cJSON *root, const char *path, const char **unk_token,
                        SpErr *err) {
    const cJSON *model = field(root, "model");
    if (config_llama_normalizer(t, field(root, "normalizer"), path, err) < 0) return -1;
    if (config_llama_pre(t, field(root, "pre_tokenizer"), path, err) < 0) return -1;
    t->byte_fallback = opt_bool(model, "byte_fallback", 0);
    t->fuse_unk = opt_bool(model, "fuse_unk", 0);
    if (t->byte_fallback < 0 || t->fuse_unk < 0)
        return sp_fail(err, "%s: model: byte_fallback/fuse_unk must be booleans", path);
    static const char *const unsupported[] = {"continuing_subword_prefix", "end_of_word_suffix"};
    for (int i = 0; i < 2; i++) {
        const cJSON *f = field(model, unsupported[i]);
        if (f && !cJSON_IsNull(f) && !(cJSON_IsString(f) && f->valuestring[0] == '\0'))
            return sp_fail(err, "%s: model.%s: not supported", path, unsupported[i]);
    }
    const cJSON *unk = field(model, "unk_token");
    if (unk && !cJSON_IsNull(unk) && !cJSON_IsString(unk))
        return sp_fail(err, "%s: model.unk_token: not a string", path);
    *unk_token = cJSON_IsString(unk) ? unk->valuestring : NULL;
    /* decoder: Strip(" ", start >= 1) or Metaspace drops the space the prefix introduced */
    const cJSON *dec = field(root, "decoder");
    const cJSON *strip = find_component(dec, "Strip");
    const cJSON *start = field(strip, "start"), *content = field(strip, "content");
    int strip_start = cJSON_IsNumber(start) && start->valuedouble >= 1 && cJSON_IsString(content) &&
                      strcmp(content->valuestring, " ") == 0;
    t->strip_leading = strip_start || (find_component(dec, "Metaspace") && t->prefix != PREFIX_NONE);
    return 0;
}

static Tokenizer *load_tokenizer_json(const char *path, SpErr *err) {
    cJSON *root = parse_json_file(path, err);
    if (!root) return NULL;
    Tokenizer *t = NULL;
    const cJSON *model = field(root, "model");
    const cJSON *dropout = field(model, "dropout");
    int family = json_family(root), use_regex = 1, rc = 0;
    const char *unk_token = NULL;
    if (!cJSON_IsObject(root)) {
        rc = sp_fail(err, "%s: top level is not an object", path);
    } else if (!cJSON_IsObject(model)) {
        rc = sp_fail(err, "%s: model: missing or not an object", path);
    } else if (field(model, "type") && !is_type(model, "BPE")) {
        const cJSON *ty = field(model, "type");
        rc = sp_fail(err, "%s: model.type: '%s' is not supported (only BPE)", path,
                     cJSON_IsString(ty) ? ty->valuestring : "?");
    } else if (dropout && !cJSON_IsNull(dropout) && !(cJSON_IsNumber(dropout) && dropout->valuedouble == 0)) {
        rc = sp_fail(err, "%s: model.dropout: BPE dropout is not supported", path);
    } else if (family == 0) {
        rc = sp_fail(err, "%s: pre_tokenizer: cannot tell the family (neither ByteLevel nor "
                          "byte_fallback / Metaspace / \"\\u2581\" normalizer)", path);
    } else if (!(t = tok_new((TokKind)family, err))) {
        rc = -1;
    }
    if (rc == 0 && family == TOK_GPT2_BPE) rc = config_gpt2(t, root, path, &use_regex, err);
    if (rc == 0 && family == TOK_LLAMA_BPE) rc = config_llama(t, root, path, &unk_token, err);
    if (rc == 0) rc = load_vocab_object(&t->v, field(model, "vocab"), path, "model.vocab", err);
    if (rc == 0) rc = load_added_tokens(t, field(root, "added_tokens"), path, err);
    if (rc == 0) rc = load_merges_json(t, field(model, "merges"), path, err);
    if (rc == 0)
        rc = family == TOK_GPT2_BPE ? finish_gpt2(t, path, use_regex, err)
                                    : finish_llama(t, path, unk_token, err);
    cJSON_Delete(root);
    if (rc < 0) {
        tokenizer_free(t);
        return NULL;
    }
    return t;
}

static int join_path(char *out, size_t cap, const char *dir, const char *name, SpErr *err) {
    int n = snprintf(out, cap, "%s/%s", dir, name);
    if (n < 0 || (size_t)n >= cap) return sp_fail(err, "%s: path too long", dir);
    return 0;
}

/* tokenizer_config.json, when the directory has one: add_bos_token / add_eos_token (booleans or
 * null; absent or null keeps the family's default). */
static int load_tokenizer_config(Tokenizer *t, const char *dir, SpErr *err) {
    char path[4096];
    if (join_path(path, sizeof path, dir, "tokenizer_config.json", err) < 0) return -1;
    if (!file_exists(path)) return 0;
    cJSON *root = parse_json_file(path, err);
    if (!root) return -1;
    int rc = 0;
    if (!cJSON_IsObject(root)) rc = sp_fail(err, "%s: top level is not an object", path);
    int bos = rc == 0 ? opt_bool(root, "add_bos_token", t->add_bos) : 0;
    int eos = rc == 0 ? opt_bool(root, "add_eos_token", t->add_eos) : 0;
    if (rc == 0 && bos < 0) rc = sp_fail(err, "%s: add_bos_token: not a boolean", path);
    if (rc == 0 && eos < 0) rc = sp_fail(err, "%s: add_eos_token: not a boolean", path);
    if (rc == 0) t->add_bos = bos, t->add_eos = eos;
    cJSON_Delete(root);
    return rc;
}

Tokenizer *tokenizer_load_dir(const char *dir, SpErr *err) {
    char a[4096], b[4096];
    Tokenizer *t = NULL;
    if (join_path(a, sizeof a, dir, "tokenizer.json", err) < 0) return NULL;
    if (file_exists(a)) {
        t = load_tokenizer_json(a, err);
    } else {
        static const char *const pairs[][2] = {{"vocab.json", "merges.txt"}, {"encoder.json", "vocab.bpe"}};
        int found = 0;
        for (int i = 0; i < 2 && !found; i++) {
            if (join_path(a, sizeof a, dir, pairs[i][0], err) < 0 || join_path(b, sizeof b, dir, pairs[i][1], err) < 0)
                return NULL;
            if (file_exists(a) && file_exists(b)) {
                found = 1;
                t = tokenizer_load_gpt2_files(a, b, err);
            }
        }
        if (!found) {
            sp_fail(err, "%s: no tokenizer found (tokenizer.json, vocab.json + merges.txt, or encoder.json + vocab.bpe)",
                    dir);
            return NULL;
        }
    }
    if (t) snprintf(t->source, sizeof t->source, "%s", a); /* the file messages name */
    if (t && load_tokenizer_config(t, dir, err) < 0) {
        tokenizer_free(t);
        return NULL;
    }
    return t;
}

const char *tokenizer_source(const Tokenizer *t) { return t->source[0] ? t->source : "tokenizer"; }
