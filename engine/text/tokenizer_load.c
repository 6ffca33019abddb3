/* tokenizer_load.c - building a Tokenizer from files (see tokenizer.h): tokenizer.json,
 * vocab.json + merges.txt or GPT-2's encoder.json + vocab.bpe, and tokenizer_config.json; also the
 * table of each token's decoded bytes. The encoder itself is in tokenizer.c. */
#include "tokenizer_int.h"

#include "jsonutil.h"

#include "fsutil.h"

#include <cjson/cJSON.h>
#include <unicode/unorm2.h>
#include <unicode/utypes.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MAX_FILE_BYTES ((size_t)1 << 30)

/* JavaScript's \s (the oracle gpt-3-encoder uses a JS regex), spelled out because PCRE2's UCP \s
 * differs on a few code points (e.g. U+FEFF is \s in JS, not in PCRE2). */
#define JS_WS "\\t\\n\\x{0B}\\f\\r\\x{20}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}" \
              "\\x{202F}\\x{205F}\\x{3000}\\x{FEFF}"
/* GPT-2's pre-tokenizer: 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+ */
static const char GPT2_PATTERN[] = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+"
                                   "| ?[^" JS_WS "\\p{L}\\p{N}]+"
                                   "|[" JS_WS "]+(?![^" JS_WS "])"
                                   "|[" JS_WS "]+";

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

/* ---------------------------------------------------------------- the tokenizer */

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

/* ---------------------------------------------------------------- decoded bytes of each token */

/* Decoded bytes of a byte-level token: each char maps back to its byte (byte_of_cp, the inverse
 * of bytes_to_unicode); chars outside the mapping are kept as UTF-8. */
static int gpt2_token_bytes(const char *s, size_t n, const uint8_t byte_of_cp[BYTE_CP_END], Buf *out) {
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        size_t k = tok_utf8_decode((const unsigned char *)s + i, n - i, &cp);
        if (k == 0) k = 1, cp = BYTE_CP_END; /* cannot happen: tokens come from JSON strings */
        if (cp < BYTE_CP_END) {
            char b = (char)byte_of_cp[cp];
            if (tok_buf_put(out, &b, 1) < 0) return -1;
        } else if (tok_buf_put(out, s + i, k) < 0) {
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
        return tok_buf_put(out, &c, 1);
    }
    size_t run = 0;
    for (size_t i = 0; i <= n; i++) {
        int marker = i + SP_SPACE_LEN <= n && memcmp(s + i, SP_SPACE, SP_SPACE_LEN) == 0;
        if (i < n && !marker) continue;
        if (tok_buf_put(out, s + run, i - run) < 0) return -1;
        if (marker) {
            if (tok_buf_put(out, " ", 1) < 0) return -1;
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
        const char *s = tok_vocab_str(&t->v, id, &n);
        int rc;
        if (t->v.flags[id] & TF_ADDED)
            rc = tok_buf_put(&t->dec, s, n);
        else if (t->kind == TOK_GPT2_BPE)
            rc = gpt2_token_bytes(s, n, byte_of_cp, &t->dec);
        else
            rc = llama_token_bytes(s, n, &t->dec);
        if (rc < 0 || tok_buf_put(&t->dec, "", 1) < 0 || t->dec.len > UINT32_MAX)
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
        if (tok_buf_reserve(&b, 1 << 16) < 0) {
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
    static const char *const lists[] = {"pretokenizers", "normalizers", "decoders", "processors"};
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
    switch (tok_vocab_add(v, s, n, id, flags)) {
    case VA_OK:
        return 0;
    case VA_NOMEM:
        return sp_fail(err, "%s: %s: out of memory", file, fieldname);
    case VA_TOO_LONG:
        return sp_fail(err, "%s: %s: token '%s' is longer than %d bytes", file, fieldname,
                       tok_show(shown, s, n), MAX_TOKEN_BYTES);
    case VA_DUP_STR:
        return sp_fail(err, "%s: %s: duplicate token '%s'", file, fieldname, tok_show(shown, s, n));
    case VA_DUP_ID: {
        size_t len;
        const char *other = tok_vocab_str(v, id, &len);
        return sp_fail(err, "%s: %s: duplicate id %d ('%s' and '%s')", file, fieldname, (int)id,
                       tok_show(shown, other, len), tok_show(shown2, s, n));
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
                           fieldname, tok_show(shown, item->string, strlen(item->string)), MAX_VOCAB);
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
    int32_t ia = tok_vocab_find(&t->v, a, an), ib = tok_vocab_find(&t->v, b, bn);
    if (ia < 0) return sp_fail(err, "%s: %s: '%s' is not in the vocabulary", file, where, tok_show(shown, a, an));
    if (ib < 0) return sp_fail(err, "%s: %s: '%s' is not in the vocabulary", file, where, tok_show(shown, b, bn));
    tmp->len = 0;
    if (tok_buf_put(tmp, a, an) < 0 || tok_buf_put(tmp, b, bn) < 0)
        return sp_fail(err, "%s: out of memory", file);
    int32_t iab = tok_vocab_find(&t->v, tmp->p, tmp->len);
    if (iab < 0)
        return sp_fail(err, "%s: %s: merged token '%s' is not in the vocabulary", file, where,
                       tok_show(shown, tmp->p, tmp->len));
    if (tok_merge_put(&t->merges, ia, ib, rank, iab) < 0) return sp_fail(err, "%s: out of memory", file);
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
    t->v.flags[a.id] |= TF_SPLIT_OUT;
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
        int32_t have = tok_vocab_find(&t->v, s, n);
        if (have >= 0 && have != id)
            return sp_fail(err, "%s: %s: '%s' has id %d but model.vocab gives it %d", path,
                           fieldname, tok_show(shown, s, n), (int)id, (int)have);
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
    tok_vocab_str(v, x->id, &nx);
    tok_vocab_str(v, y->id, &ny);
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
    int32_t id = tok_vocab_find(&t->v, s, strlen(s));
    if (id >= 0) t->v.flags[id] |= TF_SPECIAL;
}

/* Compiles the pre-tokenizer regex into t->re (Unicode: \\p{L}, \\s and (?i) as in Oniguruma,
 * which Hugging Face tokenizers uses); what: "the GPT-2 regex", "file: pre_tokenizer Split.pattern". */
static int compile_pre_regex(Tokenizer *t, const char *pattern, const char *what, SpErr *err) {
    int code;
    PCRE2_SIZE at;
    t->re = pcre2_compile((PCRE2_SPTR)pattern, PCRE2_ZERO_TERMINATED,
                          PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF, &code, &at, NULL);
    if (!t->re) {
        PCRE2_UCHAR msg[160];
        pcre2_get_error_message(code, msg, sizeof msg);
        return sp_fail(err, "%s: cannot compile the regex at offset %zu: %s", what, (size_t)at,
                       (const char *)msg);
    }
    (void)pcre2_jit_compile(t->re, PCRE2_JIT_COMPLETE); /* optional speed-up */
    return 0;
}

/* GPT-2 tables after the vocabulary and merges: byte tokens, <|endoftext|>, the regex. */
static int finish_gpt2(Tokenizer *t, const char *vocab_file, int use_regex, SpErr *err) {
    for (int b = 0; b < 256; b++) {
        char u[4];
        t->byte_id[b] = tok_vocab_find(&t->v, u, tok_utf8_encode(t->byte_cp[b], u));
        if (t->byte_id[b] < 0)
            return sp_fail(err, "%s: vocabulary lacks the byte-level token for byte 0x%02X", vocab_file, b);
    }
    int32_t eot = tok_vocab_find(&t->v, "<|endoftext|>", 13);
    if (eot >= 0) {
        t->v.flags[eot] |= TF_SPECIAL;
        t->bos = t->eos = eot;
    }
    if (use_regex && compile_pre_regex(t, GPT2_PATTERN, "the GPT-2 regex", err) < 0) return -1;
    if (finish_added(t, err) < 0) return -1;
    return build_decoded(t, err);
}

/* Llama tables after vocabulary and merges: byte tokens, <s> </s> <unk>. */
static int finish_llama(Tokenizer *t, const char *file, const char *unk_token, SpErr *err) {
    for (int b = 0; b < 256; b++) {
        char name[8];
        snprintf(name, sizeof name, "<0x%02X>", b);
        t->byte_id[b] = tok_vocab_find(&t->v, name, 6);
        if (t->byte_id[b] < 0 && t->byte_fallback)
            return sp_fail(err, "%s: model.vocab: byte_fallback is set but token %s is missing", file, name);
    }
    t->bos = tok_vocab_find(&t->v, "<s>", 3);
    t->eos = tok_vocab_find(&t->v, "</s>", 4);
    mark_special(t, "<s>");
    mark_special(t, "</s>");
    if (unk_token) {
        t->unk = tok_vocab_find(&t->v, unk_token, strlen(unk_token));
        if (t->unk < 0) {
            char shown[96];
            return sp_fail(err, "%s: model.unk_token: '%s' is not in the vocabulary", file,
                           tok_show(shown, unk_token, strlen(unk_token)));
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
    int32_t eot = rc == 0 ? tok_vocab_find(&t->v, "<|endoftext|>", 13) : -1;
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

/* The byte-level family's normalizer: null or one Unicode normalization form (Qwen2: NFC), done
 * by ICU. */
static int config_unicode_normalizer(Tokenizer *t, const cJSON *norm, const char *path, SpErr *err) {
    if (!norm || cJSON_IsNull(norm)) return 0;
    static const struct {
        const char *type;
        const UNormalizer2 *(*get)(UErrorCode *);
    } forms[] = {{"NFC", unorm2_getNFCInstance}, {"NFD", unorm2_getNFDInstance},
                 {"NFKC", unorm2_getNFKCInstance}, {"NFKD", unorm2_getNFKDInstance}};
    for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
        if (!is_type(norm, forms[i].type)) continue;
        UErrorCode status = U_ZERO_ERROR;
        t->norm = forms[i].get(&status);
        if (U_FAILURE(status) || !t->norm)
            return sp_fail(err, "%s: normalizer: ICU has no %s normalizer (%s)", path, forms[i].type,
                           u_errorName(status));
        return 0;
    }
    const cJSON *ty = field(norm, "type");
    return sp_fail(err, "%s: normalizer: type '%s' is not supported with a ByteLevel pre-tokenizer "
                        "(only NFC, NFD, NFKC, NFKD)", path, cJSON_IsString(ty) ? ty->valuestring : "?");
}

/* Unicode White_Space: \s of Oniguruma (Hugging Face tokenizers' regex engine) and of tiktoken's
 * fancy-regex. PCRE2's own \s also takes U+180E, so \s is spelled out for it. */
#define WHITE_SPACE "\\t\\n\\x{0B}\\f\\r\\x{20}\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}" \
                    "\\x{2029}\\x{202F}\\x{205F}\\x{3000}"

/* The PCRE2 spelling of a tokenizer.json regex (Oniguruma syntax): \s and \S become explicit
 * White_Space classes; the escapes whose meaning differs between the two engines (\h is a hex
 * digit in Oniguruma, \w and \b differ on marks) and nested classes are refused; the rest is the
 * same syntax. what names the field for messages. */
static int onig_to_pcre2(const char *re, Buf *out, const char *what, SpErr *err) {
    int in_class = 0;
    for (size_t i = 0; re[i]; i++) {
        char c = re[i];
        const char *put = NULL;
        char two[3] = {c, 0, 0};
        size_t n = 1;
        if (c == '\\' && re[i + 1]) {
            char e = re[++i];
            two[1] = e, n = 2;
            if (e == 's') put = in_class ? WHITE_SPACE : "[" WHITE_SPACE "]";
            else if (e == 'S' && !in_class) put = "[^" WHITE_SPACE "]";
            else if (strchr("ShHwWbB", e))
                return sp_fail(err, "%s: \\%c is not supported%s", what, e, e == 'S' ? " inside a class" : "");
        } else if (c == '[' && in_class && re[i + 1] != ':') {
            return sp_fail(err, "%s: nested character classes are not supported", what);
        } else if (c == '[' && !in_class) {
            in_class = 1;
            if (re[i + 1] == '^') two[1] = '^', n = 2, i++;
            if (re[i + 1] == ']') two[n++] = ']', i++; /* a leading ']' is a literal */
        } else if (c == ']' && in_class) {
            in_class = 0;
        }
        if (tok_buf_put(out, put ? put : two, put ? strlen(put) : n) < 0) return sp_fail(err, "%s: out of memory", what);
    }
    return 0;
}

/* A Split pre-tokenizer that keeps its matches as pieces (behavior "Isolated", invert false) with
 * a regex pattern: compiled into t->re. */
static int config_split(Tokenizer *t, const cJSON *split, const char *path, SpErr *err) {
    const cJSON *re = field(field(split, "pattern"), "Regex"), *behavior = field(split, "behavior");
    int invert = opt_bool(split, "invert", 0);
    if (!cJSON_IsString(re))
        return sp_fail(err, "%s: pre_tokenizer Split.pattern: only a Regex pattern is supported", path);
    if (!cJSON_IsString(behavior) || strcmp(behavior->valuestring, "Isolated") != 0)
        return sp_fail(err, "%s: pre_tokenizer Split.behavior: only \"Isolated\" is supported, not '%s'", path,
                       cJSON_IsString(behavior) ? behavior->valuestring : "?");
    if (invert != 0) return sp_fail(err, "%s: pre_tokenizer Split.invert: only false is supported", path);
    if (!(t->split_regex = strdup(re->valuestring))) return sp_fail(err, "%s: out of memory", path);
    char what[4200];
    snprintf(what, sizeof what, "%s: pre_tokenizer Split.pattern", path);
    Buf pcre = {0};
    int rc = onig_to_pcre2(re->valuestring, &pcre, what, err);
    if (rc == 0) rc = compile_pre_regex(t, pcre.p ? pcre.p : "", what, err);
    free(pcre.p);
    return rc;
}

/* The byte-level family: a normalizer (none or NFC...), and the pre-tokenizer ByteLevel alone (GPT-2;
 * use_regex: GPT-2's pattern) or Sequence [Split(Regex, Isolated), ByteLevel(use_regex false)]
 * (Llama 3, Qwen2). Anything else is refused. */
static int config_gpt2(Tokenizer *t, const cJSON *root, const char *path, int *use_regex, SpErr *err) {
    const cJSON *pre = field(root, "pre_tokenizer");
    if (config_unicode_normalizer(t, field(root, "normalizer"), path, err) < 0) return -1;
    const cJSON *byte_level = pre, *list = field(pre, "pretokenizers");
    if (is_type(pre, "Sequence")) {
        const cJSON *split = cJSON_GetArrayItem(list, 0);
        byte_level = cJSON_GetArrayItem(list, 1);
        if (cJSON_GetArraySize(list) != 2 || !is_type(split, "Split") || !is_type(byte_level, "ByteLevel"))
            return sp_fail(err, "%s: pre_tokenizer: a Sequence is supported only as [Split, ByteLevel]", path);
        if (config_split(t, split, path, err) < 0) return -1;
    } else if (!is_type(pre, "ByteLevel")) {
        return sp_fail(err, "%s: pre_tokenizer: only ByteLevel or Sequence [Split, ByteLevel] is supported", path);
    }
    t->add_prefix_space = opt_bool(byte_level, "add_prefix_space", 1);
    *use_regex = opt_bool(byte_level, "use_regex", 1);
    t->ignore_merges = opt_bool(field(root, "model"), "ignore_merges", 0);
    if (t->add_prefix_space < 0 || *use_regex < 0 || t->ignore_merges < 0)
        return sp_fail(err, "%s: pre_tokenizer: add_prefix_space/use_regex/ignore_merges must be "
                            "booleans", path);
    if (t->re && (*use_regex || t->add_prefix_space))
        return sp_fail(err, "%s: pre_tokenizer: ByteLevel after a Split must have use_regex and "
                            "add_prefix_space false", path);
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

/* BPE options neither family supports: a non-empty continuing_subword_prefix / end_of_word_suffix. */
static int check_bpe_options(const cJSON *model, const char *path, SpErr *err) {
    static const char *const unsupported[] = {"continuing_subword_prefix", "end_of_word_suffix"};
    for (int i = 0; i < 2; i++) {
        const cJSON *f = field(model, unsupported[i]);
        if (f && !cJSON_IsNull(f) && !(cJSON_IsString(f) && f->valuestring[0] == '\0'))
            return sp_fail(err, "%s: model.%s: not supported", path, unsupported[i]);
    }
    return 0;
}

/* The id of a special token named in a file (post_processor, tokenizer_config.json); where names
 * the field for the message. */
static int special_id(Tokenizer *t, const char *s, const char *path, const char *where, int32_t *id, SpErr *err) {
    char shown[96];
    *id = tok_vocab_find(&t->v, s, strlen(s));
    if (*id < 0)
        return sp_fail(err, "%s: %s: '%s' is not in the vocabulary", path, where, tok_show(shown, s, strlen(s)));
    t->v.flags[*id] |= TF_SPECIAL;
    return 0;
}

/* post_processor TemplateProcessing (alone or in a Sequence): its "single" template
 * [SpecialToken*, Sequence A, SpecialToken*] says which BOS / EOS the tokenizer adds (Llama 3:
 * <|begin_of_text|> $A). At most one special token on each side. Other processors add nothing. */
static int config_post_processor(Tokenizer *t, const cJSON *post, const char *path, SpErr *err) {
    const cJSON *tp = find_component(post, "TemplateProcessing");
    if (!tp) return 0;
    const cJSON *single = field(tp, "single"), *item;
    if (!cJSON_IsArray(single)) return sp_fail(err, "%s: post_processor.single: not an array", path);
    int seen_a = 0, before = 0, after = 0;
    cJSON_ArrayForEach(item, single) {
        const cJSON *seq = field(item, "Sequence"), *sp = field(field(item, "SpecialToken"), "id");
        if (seq && !seen_a) {
            seen_a = 1;
            continue;
        }
        if (!cJSON_IsString(sp))
            return sp_fail(err, "%s: post_processor.single: only [SpecialToken*, Sequence, SpecialToken*] "
                                "is supported", path);
        int32_t id;
        if (special_id(t, sp->valuestring, path, "post_processor.single", &id, err) < 0) return -1;
        if (!seen_a) t->bos = id, before++;
        else t->eos = id, after++;
    }
    if (!seen_a || before > 1 || after > 1)
        return sp_fail(err, "%s: post_processor.single: expected one Sequence and at most one special "
                            "token before and after it", path);
    t->add_bos = before, t->add_eos = after;
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
    if (rc == 0) rc = check_bpe_options(model, path, err);
    if (rc == 0) rc = load_vocab_object(&t->v, field(model, "vocab"), path, "model.vocab", err);
    if (rc == 0) rc = load_added_tokens(t, field(root, "added_tokens"), path, err);
    if (rc == 0) rc = load_merges_json(t, field(model, "merges"), path, err);
    if (rc == 0)
        rc = family == TOK_GPT2_BPE ? finish_gpt2(t, path, use_regex, err)
                                    : finish_llama(t, path, unk_token, err);
    if (rc == 0) rc = config_post_processor(t, field(root, "post_processor"), path, err);
    cJSON_Delete(root);
    if (rc < 0) {
        tokenizer_free(t);
        return NULL;
    }
    return t;
}

/* ---------------------------------------------------------------- byte-level BPE from tables */

/* llama.cpp's names (tokenizer.ggml.pre, llama-vocab.cpp) of the byte-level pre-tokenizers the engine
 * reads, and what each implies of a tokenizer.json: its Split regex as the file spells it (NULL: GPT-2's
 * own ByteLevel regex), model.ignore_merges and the normalizer (Llama 3.x: none, ignore_merges true;
 * Qwen2/2.5/3: NFC, ignore_merges false), as the published tokenizer.json files of those families have
 * them. llama.cpp does not apply the normalizer: text that is not NFC tokenizes differently there. */
static const struct {
    const char *pre, *split_regex;
    int ignore_merges, nfc;
} kPre[] = {
    {"gpt-2", NULL, 0, 0},
    {"llama-bpe",
     "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
     "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+", 1, 0}, /* Llama 3.x */
    {"qwen2",
     "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
     "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+", 0, 1}, /* Qwen2, Qwen2.5, Qwen3 */
};

const char *tokenizer_pre_name(const Tokenizer *t) {
    if (t->kind != TOK_GPT2_BPE) return NULL;
    const char *re = t->split_regex;
    for (size_t i = 0; i < sizeof kPre / sizeof kPre[0]; i++)
        if (re ? kPre[i].split_regex && !strcmp(re, kPre[i].split_regex) : !kPre[i].split_regex) return kPre[i].pre;
    return NULL;
}

/* The pre-tokenizer a table names: regex, normalizer, ignore_merges; *use_regex for GPT-2's own. */
static int tables_pre(Tokenizer *t, const TokTables *tt, int *use_regex, SpErr *err) {
    size_t i = 0, n = sizeof kPre / sizeof kPre[0];
    while (i < n && strcmp(tt->pre, kPre[i].pre)) i++;
    if (i == n)
        return sp_fail(err, "%s: tokenizer.ggml.pre \"%.40s\" is not one the engine reads (gpt-2, llama-bpe, qwen2)",
                       tt->source, tt->pre);
    t->ignore_merges = kPre[i].ignore_merges;
    *use_regex = !kPre[i].split_regex;
    if (kPre[i].nfc) {
        UErrorCode status = U_ZERO_ERROR;
        t->norm = unorm2_getNFCInstance(&status);
        if (U_FAILURE(status) || !t->norm)
            return sp_fail(err, "%s: tokenizer.ggml.pre %s: ICU has no NFC normalizer (%s)", tt->source, tt->pre,
                           u_errorName(status));
    }
    if (!kPre[i].split_regex) return 0;
    if (!(t->split_regex = strdup(kPre[i].split_regex))) return sp_fail(err, "%s: out of memory", tt->source);
    char what[4200];
    snprintf(what, sizeof what, "%s: tokenizer.ggml.pre %s", tt->source, tt->pre);
    Buf pcre = {0};
    int rc = onig_to_pcre2(kPre[i].split_regex, &pcre, what, err);
    if (rc == 0) rc = compile_pre_regex(t, pcre.p ? pcre.p : "", what, err);
    free(pcre.p);
    return rc;
}

/* The tokens by type: normal ones into the vocabulary; control (special) and user-defined ones also as
 * added tokens split out of the text (no lstrip / rstrip / single_word: GGUF has no such flags);
 * unused ones left out. */
static int tables_vocab(Tokenizer *t, const TokTables *tt, SpErr *err) {
    for (int i = 0; i < tt->n_tokens; i++) {
        int32_t ty = tt->types ? tt->types[i] : TOK_TYPE_NORMAL;
        if (ty == TOK_TYPE_UNUSED) continue;
        if (ty != TOK_TYPE_NORMAL && ty != TOK_TYPE_CONTROL && ty != TOK_TYPE_USER_DEFINED)
            return sp_fail(err, "%s: tokenizer.ggml.token_type[%d] = %d is not normal (1), control (3), user-defined (4) "
                                "or unused (5)", tt->source, i, (int)ty);
        int added = ty != TOK_TYPE_NORMAL, special = ty == TOK_TYPE_CONTROL;
        uint8_t flags = (uint8_t)((added ? TF_ADDED : 0) | (special ? TF_SPECIAL : 0));
        if (vocab_add_checked(&t->v, tt->tokens[i].s, tt->tokens[i].n, i, flags, tt->source, "tokenizer.ggml.tokens", err) < 0)
            return -1;
        if (added && push_added(t, (AddedTok){i, (uint8_t)special, 0, 0, 0}) < 0)
            return sp_fail(err, "%s: out of memory", tt->source);
    }
    if (t->v.count == 0) return sp_fail(err, "%s: tokenizer.ggml.tokens: empty vocabulary", tt->source);
    return 0;
}

static int tables_merges(Tokenizer *t, const TokTables *tt, SpErr *err) {
    Buf tmp = {0};
    int rc = tt->n_merges > MAX_MERGES ? sp_fail(err, "%s: tokenizer.ggml.merges: more than %d merges", tt->source, MAX_MERGES) : 0;
    for (int32_t r = 0; rc == 0 && r < tt->n_merges; r++) {
        char where[64];
        snprintf(where, sizeof where, "tokenizer.ggml.merges[%d]", (int)r);
        size_t an, bn;
        const char *b;
        if (split_merge(tt->merges[r].s, tt->merges[r].n, &an, &b, &bn) < 0)
            rc = sp_fail(err, "%s: %s: expected \"a b\" with one space", tt->source, where);
        else
            rc = add_merge(t, tt->merges[r].s, an, b, bn, r, tt->source, where, &tmp, err);
    }
    free(tmp.p);
    return rc;
}

/* A special token id of the tables: -1 (none) or a token of the vocabulary, then marked special. */
static int tables_special(Tokenizer *t, const TokTables *tt, int32_t id, const char *key, int32_t *out, SpErr *err) {
    if (id < 0) return 0;
    if (id >= t->v.n_ids || !t->v.flags[id])
        return sp_fail(err, "%s: %s = %d is not a token of tokenizer.ggml.tokens", tt->source, key, (int)id);
    t->v.flags[id] |= TF_SPECIAL;
    *out = id;
    return 0;
}

Tokenizer *tokenizer_from_tables(const TokTables *tt, SpErr *err) {
    Tokenizer *t = tok_new(TOK_GPT2_BPE, err);
    if (!t) return NULL;
    snprintf(t->source, sizeof t->source, "%s", tt->source);
    int use_regex = 0;
    int rc = tables_pre(t, tt, &use_regex, err);
    if (rc == 0) rc = tables_vocab(t, tt, err);
    if (rc == 0) rc = tables_merges(t, tt, err);
    if (rc == 0) rc = finish_gpt2(t, tt->source, use_regex, err);
    if (rc == 0) { /* the file's ids, not <|endoftext|>'s (finish_gpt2's GPT-2 default) */
        t->bos = t->eos = -1;
        rc = tables_special(t, tt, tt->bos, "tokenizer.ggml.bos_token_id", &t->bos, err) ||
             tables_special(t, tt, tt->eos, "tokenizer.ggml.eos_token_id", &t->eos, err);
    }
    t->add_bos = tt->add_bos, t->add_eos = tt->add_eos;
    if (rc) {
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

/* tokenizer_config.json's bos_token / eos_token: a string, an AddedToken object {"content": ...},
 * or null (the tokenizer has none: Qwen2's bos_token). Absent keeps *id. */
static int config_token(Tokenizer *t, const cJSON *root, const char *name, const char *path, int32_t *id,
                        SpErr *err) {
    const cJSON *v = field(root, name);
    if (!v) return 0;
    if (cJSON_IsNull(v)) {
        *id = -1;
        return 0;
    }
    if (cJSON_IsObject(v)) v = field(v, "content");
    if (!cJSON_IsString(v)) return sp_fail(err, "%s: %s: not a string, an object with content, or null", path, name);
    return special_id(t, v->valuestring, path, name, id, err);
}

/* tokenizer_config.json, when the directory has one: bos_token / eos_token, add_bos_token /
 * add_eos_token (booleans or null; absent or null keeps the family's default or the post
 * processor's). */
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
    if (rc == 0) rc = config_token(t, root, "bos_token", path, &t->bos, err);
    if (rc == 0) rc = config_token(t, root, "eos_token", path, &t->eos, err);
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
