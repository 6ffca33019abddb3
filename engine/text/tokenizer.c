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
 *   Llama 3 / Qwen2: the same with a Split regex from tokenizer.json as the pre-tokenizer (its \s
 *   made Unicode White_Space, as Oniguruma's), after the normalizer (NFC, ICU) when there is one.
 * Llama: text -> "▁" prepended, ' ' -> "▁" -> one symbol per code point (id -1 when the code
 *   point is not a token) -> merges -> symbols still without a token become <0xNN> byte tokens
 *   (byte_fallback) or <unk>. Invalid UTF-8 bytes are single unknown symbols, so they come out
 *   as their byte tokens and decode back to the same bytes.
 * Added tokens ("<s>", "<|endoftext|>") are split out of the text first (encode_split), unless
 *   the caller asks for special tokens as plain text (TOK_ENC_SPECIAL_AS_TEXT).
 * Decode gives raw bytes: byte sequences that are not valid UTF-8 are passed through, not
 *   replaced by U+FFFD.
 * Files: this one (encode, decode); tokenizer_load.c (the file layouts, the decoded-bytes table);
 *   tokenizer_tables.c (buffers, UTF-8, the hash tables); tokenizer_int.h (what they share).
 */
#include "tokenizer_int.h"

#include <stdlib.h>
#include <string.h>
#include <unicode/unorm2.h>
#include <unicode/ustring.h>

/* ---------------------------------------------------------------- growable buffers */

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

/* ---------------------------------------------------------------- the tokenizer */

void tokenizer_free(Tokenizer *t) {
    if (!t) return;
    tok_vocab_free(&t->v);
    free(t->merges.slots);
    free(t->dec.p);
    free(t->dec_span);
    pcre2_code_free(t->re);
    free(t->split_regex);
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

const char *tokenizer_split_regex(const Tokenizer *t) { return t->split_regex; }

int tokenizer_is_added(const Tokenizer *t, int32_t id) {
    return id >= 0 && id < t->v.n_ids && (t->v.flags[id] & TF_SPLIT_OUT);
}

int tokenizer_is_special(const Tokenizer *t, int32_t id) {
    return id >= 0 && id < t->v.n_ids && (t->v.flags[id] & TF_SPECIAL);
}

const char *tokenizer_source(const Tokenizer *t) { return t->source[0] ? t->source : "tokenizer"; }

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
    const MergeSlot *ms = tok_merge_find(m, sym[i].id, sym[r].id);
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
            if (tok_buf_put(&w->tmp, u, tok_utf8_encode(t->byte_cp[s[i]], u)) < 0) return -1;
        }
        int32_t id = tok_vocab_find(&t->v, w->tmp.p, w->tmp.len);
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

/* Appends the Unicode normalization (t->norm: NFC...) of the valid UTF-8 s[0..n) to out; -1 out of
 * memory or an ICU failure. */
static int normalize_run(const Tokenizer *t, const char *s, size_t n, Buf *out) {
    int32_t n16 = 0, m16 = 0, n8 = 0;
    UErrorCode st = U_ZERO_ERROR;
    if (n > INT32_MAX / 4) return -1;
    UChar *in = malloc((n + 1) * sizeof *in), *norm = NULL;
    if (in) u_strFromUTF8(in, (int32_t)n + 1, &n16, s, (int32_t)n, &st);
    /* a normalization is at most 3x (NFC) / 18x (NFKD) longer in UTF-16: ask ICU for the size */
    if (in && U_SUCCESS(st)) m16 = unorm2_normalize(t->norm, in, n16, NULL, 0, &st);
    if (st == U_BUFFER_OVERFLOW_ERROR) st = U_ZERO_ERROR;
    if (in && U_SUCCESS(st) && (norm = malloc(((size_t)m16 + 1) * sizeof *norm)))
        unorm2_normalize(t->norm, in, n16, norm, m16 + 1, &st);
    if (norm && U_SUCCESS(st)) u_strToUTF8(NULL, 0, &n8, norm, m16, &st);
    if (st == U_BUFFER_OVERFLOW_ERROR) st = U_ZERO_ERROR;
    int rc = norm && U_SUCCESS(st) && tok_buf_reserve(out, (size_t)n8 + 1) == 0 ? 0 : -1;
    if (rc == 0) {
        u_strToUTF8(out->p + out->len, n8 + 1, NULL, norm, m16, &st);
        if (U_SUCCESS(st)) out->len += (size_t)n8, out->p[out->len] = '\0';
        else rc = -1;
    }
    free(in);
    free(norm);
    return rc;
}

/* out = text[0..len) under the tokenizer's Unicode normalizer: each maximal run of valid UTF-8 is
 * normalized, invalid bytes are kept as they are (Hugging Face takes only valid UTF-8). */
static int normalize_text(const Tokenizer *t, const char *text, size_t len, Buf *out) {
    out->len = 0;
    if (tok_buf_reserve(out, len + 1) < 0) return -1;
    size_t run = 0, i = 0;
    while (i <= len) {
        uint32_t cp;
        size_t k = i < len ? tok_utf8_decode((const unsigned char *)text + i, len - i, &cp) : 0;
        if (k > 0) {
            i += k;
            continue;
        }
        if (i > run && normalize_run(t, text + run, i - run, out) < 0) return -1;
        if (i < len && tok_buf_put(out, text + i, 1) < 0) return -1; /* an invalid byte */
        run = ++i;
    }
    return 0;
}

static int is_ascii(const char *s, size_t n) {
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] >= 0x80) return 0;
    return 1;
}

/* Byte-level BPE of one stretch of text: the normalizer (ASCII is left as it is by every Unicode
 * normalization form), ByteLevel add_prefix_space, the pre-tokenizer, the merges. */
static int gpt2_encode(const Tokenizer *t, const char *text, size_t len, IdVec *out, Work *w,
                       SpErr *err) {
    Buf norm = {0}, prefixed = {0};
    int rc = 0;
    if (t->norm && !is_ascii(text, len)) {
        if (normalize_text(t, text, len, &norm) < 0) goto fail;
        text = norm.p, len = norm.len;
    }
    if (t->add_prefix_space && len > 0 && text[0] != ' ') { /* " " + text */
        if (tok_buf_put(&prefixed, " ", 1) < 0 || tok_buf_put(&prefixed, text, len) < 0) goto fail;
        text = prefixed.p, len = prefixed.len;
    }
    rc = gpt2_encode_pieces(t, (const unsigned char *)text, len, out, w, err);
    free(norm.p);
    free(prefixed.p);
    return rc;
fail:
    free(norm.p);
    free(prefixed.p);
    return sp_fail(err, "tokenizer: out of memory (or a Unicode normalizer failure) while encoding %zu bytes", len);
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
        if (tok_buf_put(out, SP_SPACE, SP_SPACE_LEN) < 0) return -1;
    if (tok_buf_reserve(out, len + 1) < 0) return -1;
    size_t run = 0; /* start of the pending run without spaces */
    for (size_t i = 0; i <= len; i++) {
        if (i < len && !(text[i] == ' ' && t->replace_spaces)) continue;
        if (tok_buf_put(out, text + run, i - run) < 0) return -1;
        if (i < len && tok_buf_put(out, SP_SPACE, SP_SPACE_LEN) < 0) return -1;
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
                           tok_show(shown, text + s->start, s->len));
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
        size_t k = tok_utf8_decode(s + i, to - i, &cp);
        int32_t id = SYM_UNKNOWN;
        if (k == 0)
            k = 1; /* an invalid byte: a symbol of its own, never a token */
        else
            id = tok_vocab_find(&t->v, norm + i, k);
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
        if (tok_utf8_decode((const unsigned char *)s + end - back, back, &cp) == back) return end - back;
    }
    return end - 1;
}

/* Start of the whitespace run that ends at s[end], not before from (lstrip). */
static size_t space_run_start(const char *s, size_t from, size_t end) {
    while (end > from) {
        size_t k = prev_char(s, from, end);
        uint32_t cp;
        if (tok_utf8_decode((const unsigned char *)s + k, end - k, &cp) != end - k || !is_unicode_space(cp)) break;
        end = k;
    }
    return end;
}

/* End of the whitespace run that starts at s[start], not past len (rstrip). */
static size_t space_run_end(const char *s, size_t start, size_t len) {
    while (start < len) {
        uint32_t cp;
        size_t k = tok_utf8_decode((const unsigned char *)s + start, len - start, &cp);
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
        const char *c = tok_vocab_str(&t->v, t->added[i].id, &n);
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
 * also those marked normalized: the same for GPT-2 (no normalizer), for tokens without spaces
 * or "▁" under the Llama normalizers, and under a Unicode normalizer (Qwen's NFC) unless the
 * normalization of the text makes or unmakes the token's content (no token of Llama 3 or Qwen is
 * marked normalized). Each stretch between the tokens is normalized on its own, as Hugging Face
 * does it. */
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
        tok_vocab_str(&t->v, a->id, &n);
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

int tokenizer_encode_text(const Tokenizer *t, const char *text, size_t len, int32_t **ids, size_t *n, SpErr *err) {
    unsigned flags = (tokenizer_add_bos(t) ? TOK_ENC_BOS : 0) | (tokenizer_add_eos(t) ? TOK_ENC_EOS : 0);
    return tokenizer_encode_flags(t, text, len, flags, ids, n, err);
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
    if (tok_buf_reserve(&out, 1) < 0) return sp_fail(err, "tokenizer: out of memory");
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
        if (tok_buf_put(&out, t->dec.p + d.off, d.len) < 0) {
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
