/* tokenizer_int.h - what the tokenizer's source files share (private to engine/text; the public
 * contract is tokenizer.h):
 *   tokenizer_tables.c  growable buffers, UTF-8, show, the Vocab and MergeMap hash tables
 *   tokenizer.c         BPE merging, GPT-2 and Llama encoding, added tokens in the text, decode
 *   tokenizer_load.c    tokenizer.json, vocab.json + merges.txt, encoder.json + vocab.bpe,
 *                       tokenizer_config.json; the decoded-bytes table
 * Functions shared between those files carry the prefix tok_.
 */
#ifndef SPRINTER_TOKENIZER_INT_H
#define SPRINTER_TOKENIZER_INT_H

#define PCRE2_CODE_UNIT_WIDTH 8

#include "tokenizer.h"

#include <pcre2.h>
#include <stddef.h>
#include <stdint.h>

/* ---------------------------------------------------------------- limits and constants */

enum {
    MAX_VOCAB = 1 << 22,        /* ids must lie in [0, MAX_VOCAB) */
    MAX_MERGES = 1 << 23,
    MAX_TOKEN_BYTES = 1 << 16,
    MAX_TEXT_BYTES = 1 << 30,   /* encode input bound; keeps symbol indices in int32 */
};

/* TF_ADDED: an added token not in model.vocab (decodes to its own text); TF_SPLIT_OUT: an added token
 * that encode splits out of the text (tokenizer.json added_tokens, GPT-2's <|endoftext|>). */
enum { TF_PRESENT = 1, TF_SPECIAL = 2, TF_ADDED = 4, TF_SPLIT_OUT = 8 };

enum { SYM_UNKNOWN = -1, SYM_DEAD = -2 };

/* "▁" (U+2581), SentencePiece's space marker. */
static const char SP_SPACE[] = "\xE2\x96\x81";
enum { SP_SPACE_LEN = 3 };

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
    /* GPT-2 (byte-level) */
    pcre2_code *re;    /* pre-tokenizer: GPT-2's pattern (ByteLevel use_regex) or the pattern of a
                          Split pre-tokenizer (Llama 3, Qwen2); NULL when there is none */
    char *split_regex; /* the Split pattern as tokenizer.json spells it (Oniguruma syntax), or NULL */
    const struct UNormalizer2 *norm; /* normalizer NFC / NFD / NFKC / NFKD (ICU's, not owned), or NULL */
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

/* ---------------------------------------------------------------- tokenizer_tables.c */
/* (each is described where it is defined) */

int tok_buf_reserve(Buf *b, size_t extra);
/* Appends s[0..n); the buffer stays NUL-terminated (the NUL not counted in len). */
int tok_buf_put(Buf *b, const void *s, size_t n);

/* Length of the well-formed UTF-8 sequence at s[0..n) and its code point in *cp, or 0 when s does
 * not start one. */
size_t tok_utf8_decode(const unsigned char *s, size_t n, uint32_t *cp);
size_t tok_utf8_encode(uint32_t cp, char *out);

const char *tok_show(char out[96], const char *s, size_t n);

const char *tok_vocab_str(const Vocab *v, int32_t id, size_t *len);
int32_t tok_vocab_find(const Vocab *v, const char *s, size_t n);
VocabAdd tok_vocab_add(Vocab *v, const char *s, size_t n, int32_t id, uint8_t flags);
void tok_vocab_free(Vocab *v);

const MergeSlot *tok_merge_find(const MergeMap *m, int32_t a, int32_t b);
/* Sets pair (a, b) -> (rank, id); a repeated pair takes the later rank. */
int tok_merge_put(MergeMap *m, int32_t a, int32_t b, int32_t rank, int32_t id);

#endif
