/* test_tokenizer.c - unit tests of engine/text/tokenizer.c on the tiny tokenizers in
 * tests/tokenizer/fixtures (written by tests/tokenizer/make_fixtures.py; its docstring lists the
 * ids). Expected encodings are derived by hand in the comments next to them; those of texts with
 * added tokens ("<s>", "<|endoftext|>") are transformers.js's (tests/tokenizer/special_oracle.js
 * on these fixtures), as noted where they are used.
 *
 * Usage: test_tokenizer [FIXTURES_DIR]   (default: the fixtures next to this source file)
 * Prints "tokenizer_unit: N passed, M failed"; exit status 1 if anything failed.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "clock.h"
#include "tokenizer.h"

#include "check.h"

typedef struct {
    const char *fixtures;
    char tmp[64]; /* scratch directory for malformed files */
} T;

static Tokenizer *load(T *t, const char *sub) {
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/%s", t->fixtures, sub);
    SpErr err = {{0}};
    Tokenizer *tok = tokenizer_load_dir(dir, &err);
    check(tok != NULL, "load %s: %s", sub, err.msg);
    return tok;
}

static void print_ids(const char *label, const int32_t *ids, size_t n) {
    printf("      %s:", label);
    for (size_t i = 0; i < n; i++) printf(" %d", (int)ids[i]);
    printf("\n");
}

/* Encodes text[0..len) with TOK_ENC_* flags (1 = TOK_ENC_BOS) and compares with want[0..n_want). */
static void expect_ids_n(const Tokenizer *tok, const char *name, const char *text, size_t len,
                         unsigned flags, const int32_t *want, size_t n_want) {
    SpErr err = {{0}};
    int32_t *ids = NULL;
    size_t n = 0;
    int rc = tokenizer_encode_flags(tok, text, len, flags, &ids, &n, &err);
    int ok = rc == 0 && n == n_want && (n == 0 || (want && memcmp(ids, want, n * sizeof *ids) == 0));
    check(ok, "%s: encode gives the hand-derived ids (%s)", name, rc ? err.msg : "");
    if (!ok && rc == 0) {
        print_ids("got ", ids, n);
        print_ids("want", want, n_want);
    }
    free(ids);
}
#define EXPECT_IDS(tok, name, text, bos, ...)                                                  \
    do {                                                                                          \
        const int32_t want_[] = {__VA_ARGS__};                                                    \
        expect_ids_n(tok, name, text, sizeof(text) - 1, bos, want_, sizeof want_ / sizeof want_[0]); \
    } while (0)

static const int32_t NO_IDS[1] = {0}; /* want for "no ids" */

static void expect_decode(const Tokenizer *tok, const char *name, const int32_t *ids, size_t n,
                          int skip, const char *want) {
    SpErr err = {{0}};
    char *text = NULL;
    size_t len = 0;
    int rc = tokenizer_decode(tok, ids, n, skip, &text, &len, &err);
    int ok = rc == 0 && len == strlen(want) && memcmp(text, want, len) == 0 && text[len] == '\0';
    check(ok, "%s: decode gives \"%s\", got \"%s\" %s", name, want, text ? text : "", err.msg);
    free(text);
}

/* decode(encode(text)) == text, with and without BOS, special tokens encoded as plain text.
 * Returns 1 if both round trips passed. */
static int expect_roundtrip(const Tokenizer *tok, const char *name, const char *text, size_t len) {
    int all = 1;
    for (int bos = 0; bos < 2; bos++) {
        SpErr err = {{0}};
        int32_t *ids = NULL;
        size_t n = 0;
        char *back = NULL;
        size_t back_len = 0;
        unsigned flags = TOK_ENC_SPECIAL_AS_TEXT | (bos ? TOK_ENC_BOS : 0u);
        int rc = tokenizer_encode_flags(tok, text, len, flags, &ids, &n, &err);
        if (rc == 0) rc = tokenizer_decode(tok, ids, n, 1, &back, &back_len, &err);
        all &= check(rc == 0 && back_len == len && memcmp(back, text, len) == 0,
                     "%s: round trip of %zu bytes (bos %d) %s", name, len, bos, err.msg);
        free(ids);
        free(back);
    }
    return all;
}

/* ---------------------------------------------------------------- GPT-2 */

static void test_gpt2_encodings(const Tokenizer *tok, const char *name) {
    char label[128];
#define L(what) (snprintf(label, sizeof label, "%s %s", name, what), label)
    /* h e l l o: he (rank 1) first, then ll (3), llo (5), hello (6); "el" (4) never applies */
    EXPECT_IDS(tok, L("hello"), "hello", 0, 262);
    /* "hello" + " there": Ġt (0), he (1), Ġthe (2), then r=81 e=68 stay */
    EXPECT_IDS(tok, L("hello there"), "hello there", 0, 262, 258, 81, 68);
    /* 5 a's: the leftmost a-a pair first: aa a a a -> aa aa a -> aaaa a */
    EXPECT_IDS(tok, L("aaaaa"), "aaaaa", 0, 264, 64);
    EXPECT_IDS(tok, L("aaa"), "aaa", 0, 263, 64);
    /* "  the": \s+(?!\S) takes one space, the other goes with "the" */
    EXPECT_IDS(tok, L("two spaces"), "  the", 0, 220, 258);
    /* trailing run of 3 spaces is one pre-token: ĠĠ (9) leftmost, then Ġ */
    EXPECT_IDS(tok, L("trailing spaces"), "a   ", 0, 64, 265, 220);
    /* \s is JavaScript's: U+0085 (C2 85) is not a space, so "  \u0085" splits into " " and
     * " \u0085" (0xC2 = id 126, 0x85 = id 227); PCRE2's own \s would keep "  \u0085" together and
     * merge ĠĠ */
    EXPECT_IDS(tok, L("nel not space"), "a  \xC2\x85", 0, 64, 220, 220, 126, 227);
    /* ... and U+FEFF (EF BB BF, ids 171 119 123) is a space: "  \ufeff" is one trailing run */
    EXPECT_IDS(tok, L("bom is space"), "a  \xEF\xBB\xBF", 0, 64, 265, 171, 119, 123);
    /* "it" + "'s" (contraction is its own pre-token, merged by rank 10) */
    EXPECT_IDS(tok, L("contraction"), "it's", 0, 72, 83, 266);
    /* digits: "123" -> 12 (11) + 3 (id 18) */
    EXPECT_IDS(tok, L("digits"), "123", 0, 267, 18);
    /* special token as plain text: "<|" "endoftext" "|>" byte by byte */
    EXPECT_IDS(tok, L("eot as text"), "<|endoftext|>", TOK_ENC_SPECIAL_AS_TEXT, 27, 91, 68, 77, 67, 78, 69, 83, 68, 87,
               83, 91, 29);
    /* é = C3 A9: printable Latin-1 bytes, ids 106 + (0xC3 - 0xAE) and 94 + (0xA9 - 0xA1) */
    EXPECT_IDS(tok, L("e acute"), "\xC3\xA9", 0, 127, 102);
    /* newline (198) and 0x01 (189) are remapped bytes */
    EXPECT_IDS(tok, L("controls"), "\n\x01", 0, 198, 189);
    /* invalid UTF-8: 0xFF (id 187) is a pre-token of its own between "a" and "b" */
    EXPECT_IDS(tok, L("invalid utf8"), "a\xFF" "b", 0, 64, 187, 65);
    /* by default the special token is split out */
    EXPECT_IDS(tok, L("eot"), "<|endoftext|>", 0, 268);
    /* BOS is <|endoftext|> (HF's GPT-2 with add_bos_token), not added by default */
    EXPECT_IDS(tok, L("bos"), "hello", TOK_ENC_BOS, 268, 262);
    EXPECT_IDS(tok, L("eos"), "hello", TOK_ENC_EOS, 262, 268);
    check(!tokenizer_add_bos(tok) && !tokenizer_add_eos(tok), "%s: no BOS/EOS by default", name);
    expect_ids_n(tok, L("empty"), "", 0, 0, NO_IDS, 0);

    const int32_t hello_there[] = {262, 258, 81, 68};
    expect_decode(tok, L("decode"), hello_there, 4, 1, "hello there");
    const int32_t with_eot[] = {268, 262, 268};
    expect_decode(tok, L("decode eot kept"), with_eot, 3, 0, "<|endoftext|>hello<|endoftext|>");
    expect_decode(tok, L("decode eot skipped"), with_eot, 3, 1, "hello");
    check(tokenizer_kind(tok) == TOK_GPT2_BPE, "%s: kind", name);
    check(tokenizer_vocab_size(tok) == 269, "%s: vocab size 269", name);
    check(tokenizer_bos_id(tok) == 268 && tokenizer_eos_id(tok) == 268, "%s: bos/eos 268", name);
    const char *s = tokenizer_token_str(tok, 258);
    check(s && strcmp(s, " the") == 0, "%s: token_str(258) == \" the\"", name);
    s = tokenizer_token_str(tok, 198);
    check(s && strcmp(s, "\n") == 0, "%s: token_str(198) == newline", name);
    check(tokenizer_token_str(tok, 269) == NULL && tokenizer_token_str(tok, -1) == NULL,
          "%s: token_str out of range is NULL", name);
#undef L
}

static void test_gpt2(T *t) {
    static const char *const dirs[] = {"gpt2", "openai", "gpt2_json"};
    for (int i = 0; i < 3; i++) {
        Tokenizer *tok = load(t, dirs[i]);
        if (!tok) continue;
        test_gpt2_encodings(tok, dirs[i]);
        tokenizer_free(tok);
    }
    /* explicit file pair */
    char v[1024], m[1024];
    snprintf(v, sizeof v, "%s/gpt2/vocab.json", t->fixtures);
    snprintf(m, sizeof m, "%s/gpt2/merges.txt", t->fixtures);
    SpErr err = {{0}};
    Tokenizer *tok = tokenizer_load_gpt2_files(v, m, &err);
    check(tok != NULL, "load_gpt2_files: %s", err.msg);
    if (tok) {
        EXPECT_IDS(tok, "gpt2 files hello", "hello", 0, 262);
        tokenizer_free(tok);
    }
    /* ByteLevel add_prefix_space: "hello" is encoded as " hello": Ġ, then hello */
    tok = load(t, "gpt2_prefix");
    if (tok) {
        EXPECT_IDS(tok, "gpt2_prefix hello", "hello", 0, 220, 262);
        EXPECT_IDS(tok, "gpt2_prefix the", " the", 0, 258);
        tokenizer_free(tok);
    }
}

/* ---------------------------------------------------------------- Llama */

static void test_llama_encodings(const Tokenizer *tok, const char *name) {
    char label[128];
#define L(what) (snprintf(label, sizeof label, "%s %s", name, what), label)
    /* "▁hello▁world": ll (0), ▁h (1), ell (2), ▁hell (3), ▁hello (4); ▁w (5), or (6), ▁wor (7);
     * l d stay */
    EXPECT_IDS(tok, L("hello world"), "hello world", 1, 1, 273, 276, 262, 266);
    EXPECT_IDS(tok, L("no bos"), "hello world", 0, 273, 276, 262, 266);
    /* "▁hi": i is not a token -> <0x69> = 3 + 0x69 */
    EXPECT_IDS(tok, L("byte fallback"), "hi", 1, 1, 270, 108);
    /* "▁日": 日 = E6 97 A5 is not a token -> three byte tokens */
    EXPECT_IDS(tok, L("cjk"), "\xE6\x97\xA5", 1, 1, 259, 3 + 0xE6, 3 + 0x97, 3 + 0xA5);
    /* "▁aaa": the leftmost a-a pair merges */
    EXPECT_IDS(tok, L("aaa"), "aaa", 0, 259, 278, 268);
    /* invalid UTF-8 byte -> its byte token */
    EXPECT_IDS(tok, L("invalid utf8"), "\xFF", 0, 259, 258);
    /* special token as plain text: "▁<s>" -> ▁ then bytes of "<", "s", ">" */
    EXPECT_IDS(tok, L("special as text"), "<s>", TOK_ENC_SPECIAL_AS_TEXT, 259, 3 + '<', 3 + 's', 3 + '>');
    EXPECT_IDS(tok, L("special split"), "<s>", 0, 1);
    check(tokenizer_add_bos(tok) && !tokenizer_add_eos(tok), "%s: BOS, no EOS by default", name);
    expect_ids_n(tok, L("empty"), "", 0, 0, NO_IDS, 0);
    EXPECT_IDS(tok, L("empty bos"), "", 1, 1);

    const int32_t ids[] = {1, 273, 276, 262, 266};
    expect_decode(tok, L("decode skip"), ids, 5, 1, "hello world");
    expect_decode(tok, L("decode keep"), ids, 5, 0, "<s> hello world");
    const int32_t bytes[] = {259, 3 + 0xE6, 3 + 0x97, 3 + 0xA5, 2};
    expect_decode(tok, L("decode bytes"), bytes, 5, 1, "\xE6\x97\xA5");
    const int32_t bad[] = {273, 279};
    char *text = NULL;
    size_t len;
    SpErr err = {{0}};
    check(tokenizer_decode(tok, bad, 2, 0, &text, &len, &err) < 0 && strstr(err.msg, "279"),
          "%s: decode of an out-of-range id fails (%s)", name, err.msg);
    free(text);
    check(tokenizer_kind(tok) == TOK_LLAMA_BPE, "%s: kind", name);
    check(tokenizer_vocab_size(tok) == 279, "%s: vocab size 279", name);
    check(tokenizer_bos_id(tok) == 1 && tokenizer_eos_id(tok) == 2, "%s: bos 1, eos 2", name);
    const char *s = tokenizer_token_str(tok, 273);
    check(s && strcmp(s, " hello") == 0, "%s: token_str(273) == \" hello\"", name);
    s = tokenizer_token_str(tok, 3 + 'A');
    check(s && strcmp(s, "A") == 0, "%s: token_str(<0x41>) == \"A\"", name);
#undef L
}

static void test_llama(T *t) {
    Tokenizer *tok = load(t, "llama");
    if (tok) {
        test_llama_encodings(tok, "llama");
        /* Prepend always adds ▁: " hello" -> "▁▁hello"; ▁h (1) beats ▁▁ (8) -> ▁ ▁hello */
        EXPECT_IDS(tok, "llama leading space", " hello", 0, 259, 273);
        /* one word "▁a▁▁a": the ▁▁ merge (8) applies */
        EXPECT_IDS(tok, "llama double space", "a  a", 0, 259, 268, 277, 268);
        tokenizer_free(tok);
    }
    tok = load(t, "llama_metaspace");
    if (tok) {
        test_llama_encodings(tok, "llama_metaspace");
        /* Metaspace prepends only when the text does not start with ▁ already */
        EXPECT_IDS(tok, "llama_metaspace leading space", " hello", 0, 273);
        /* split into "▁a", "▁", "▁a": no ▁▁ merge across words */
        EXPECT_IDS(tok, "llama_metaspace split", "a  a", 0, 259, 268, 259, 259, 268);
        tokenizer_free(tok);
    }
}

/* ---------------------------------------------------------------- round trips and speed */

static const char *const SAMPLES[] = {
    "Hello, world!", " leading and trailing  ", "tabs\tnew\nlines\r\n\n", "I'm sure it's fine, y'all'd",
    "12345 6.78 -9e10", "caf\xC3\xA9 na\xC3\xAFve", "e\xCC\x81", "\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E",
    "\xF0\x9F\x98\x80\xF0\x9F\x91\x8D\xF0\x9F\x8F\xBD", "\xD7\xA9\xD7\x9C\xD7\x95\xD7\x9D", "\xE2\x80\x8B\xEF\xBB\xBF",
    "   ", "\x01\x02\x7F", "<|endoftext|> <s> </s>", "a", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
};

static void test_roundtrips(const Tokenizer *tok, const char *name) {
    for (size_t i = 0; i < sizeof SAMPLES / sizeof SAMPLES[0]; i++)
        expect_roundtrip(tok, name, SAMPLES[i], strlen(SAMPLES[i]));
    /* invalid UTF-8: lone continuation, truncated sequence, overlong, surrogate, > U+10FFFF */
    static const char invalid[] = "a\x80 b\xE6\x97 c\xC0\xAF d\xED\xA0\x80 e\xF4\x90\x80\x80 \xFF\xFE";
    expect_roundtrip(tok, name, invalid, sizeof invalid - 1);
    /* random bytes (a fixed LCG), mostly invalid UTF-8, without NUL */
    uint32_t state = 12345;
    char buf[257];
    int bad = 0;
    for (int iter = 0; iter < 300; iter++) {
        size_t len = (size_t)(iter % 256) + 1;
        for (size_t i = 0; i < len; i++) {
            state = state * 1664525u + 1013904223u;
            buf[i] = (char)((state >> 24) % 255 + 1);
        }
        bad += !expect_roundtrip(tok, name, buf, len);
        if (bad > 3) break;
    }
}

/* A 200k-character word must not take quadratic time. */
static void test_speed(const Tokenizer *tok, const char *name) {
    size_t len = 200000;
    char *text = malloc(len);
    if (!text) return;
    const char *patterns[] = {"a", "ab", "l"};
    for (int p = 0; p < 3; p++) {
        for (size_t i = 0; i < len; i++) text[i] = patterns[p][i % strlen(patterns[p])];
        double t0 = sp_now_s();
        SpErr err = {{0}};
        int32_t *ids = NULL;
        size_t n = 0;
        int rc = tokenizer_encode(tok, text, len, 0, &ids, &n, &err);
        double dt = sp_now_s() - t0;
        check(rc == 0 && n > 0 && dt < 3.0, "%s: 200k-char run of '%s' took %.2f s", name,
              patterns[p], dt);
        free(ids);
    }
    free(text);
}

/* ---------------------------------------------------------------- malformed files */

static void write_file(T *t, const char *name, const char *content, size_t len) {
    char path[256];
    snprintf(path, sizeof path, "%s/%s", t->tmp, name);
    FILE *f = fopen(path, "wb");
    if (!f) {
        check(0, "cannot write %s", path);
        return;
    }
    fwrite(content, 1, len, f);
    fclose(f);
}

static void clear_tmp(T *t) {
    static const char *const names[] = {"tokenizer.json", "vocab.json", "merges.txt",
                                        "encoder.json", "vocab.bpe", "tokenizer_config.json"};
    for (int i = 0; i < 6; i++) {
        char path[256];
        snprintf(path, sizeof path, "%s/%s", t->tmp, names[i]);
        unlink(path);
    }
}

/* Loads t->tmp and expects an error naming `file` and containing `what`, on one line. */
static void expect_dir_error(T *t, const char *label, const char *file, const char *what) {
    SpErr err = {{0}};
    Tokenizer *tok = tokenizer_load_dir(t->tmp, &err);
    check(tok == NULL && strstr(err.msg, file) && strstr(err.msg, what) && !strchr(err.msg, '\n'),
          "%s: expected an error naming %s and '%s', got '%s'", label, file, what,
          tok ? "(loaded)" : err.msg);
    tokenizer_free(tok);
    clear_tmp(t);
}

/* A GPT-2 vocab.json with the 256 byte tokens plus `extra` (a JSON fragment, may be empty). */
static char *gpt2_vocab_json(const char *extra) {
    char *out = malloc(8192);
    if (!out) return NULL;
    size_t o = 0;
    int id = 0, next = 256;
    out[o++] = '{';
    for (int b = 0; b < 256; b++) {
        int printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
        int cp = printable ? b : next++;
        o += (size_t)snprintf(out + o, 8192 - o, "%s\"\\u%04x\": %d", b ? ", " : "", cp, id++);
    }
    snprintf(out + o, 8192 - o, "%s%s}", *extra ? ", " : "", extra);
    return out;
}

static void test_errors(T *t) {
    /* no files at all */
    expect_dir_error(t, "empty dir", t->tmp, "no tokenizer found");

    /* tokenizer.json: truncated copy of the Llama fixture */
    char path[1024];
    snprintf(path, sizeof path, "%s/llama/tokenizer.json", t->fixtures);
    FILE *f = fopen(path, "rb");
    char *full = malloc(1 << 16);
    size_t n = f && full ? fread(full, 1, 1 << 16, f) : 0;
    if (f) fclose(f);
    check(n > 1000, "read the llama fixture");
    static const size_t cuts[] = {0, 1, 100, 3000};
    for (int i = 0; i < 4 && n > 3000; i++) {
        write_file(t, "tokenizer.json", full, cuts[i]);
        expect_dir_error(t, "truncated tokenizer.json", "tokenizer.json", "malformed JSON");
    }
    free(full);

    struct { const char *label, *json, *what; } bad_json[] = {
        {"trailing garbage", "{\"model\": {}} x", "malformed JSON"},
        {"not an object", "[1, 2, 3]", "top level"},
        {"no model", "{\"pre_tokenizer\": {\"type\": \"ByteLevel\"}}", "model"},
        {"unigram", "{\"model\": {\"type\": \"Unigram\", \"vocab\": []}}", "model.type"},
        {"unknown family", "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": []}}",
         "cannot tell"},
        {"vocab not object",
         "{\"model\": {\"type\": \"BPE\", \"byte_fallback\": true, \"vocab\": [1], \"merges\": []}}",
         "model.vocab"},
        {"negative id",
         "{\"model\": {\"type\": \"BPE\", \"byte_fallback\": true, \"vocab\": {\"a\": -1}}}",
         "model.vocab"},
        {"fractional id",
         "{\"model\": {\"type\": \"BPE\", \"byte_fallback\": true, \"vocab\": {\"a\": 1.5}}}",
         "not an integer"},
        {"absurd id",
         "{\"model\": {\"type\": \"BPE\", \"byte_fallback\": true, \"vocab\": {\"a\": 1e12}}}",
         "not an integer"},
        {"string id",
         "{\"model\": {\"type\": \"BPE\", \"byte_fallback\": true, \"vocab\": {\"a\": \"0\"}}}",
         "not an integer"},
        {"duplicate id",
         "{\"model\": {\"type\": \"BPE\", \"byte_fallback\": true, \"vocab\": {\"a\": 0, \"b\": 0}}}",
         "duplicate id 0"},
        {"duplicate token",
         "{\"model\": {\"type\": \"BPE\", \"byte_fallback\": true, \"vocab\": {\"a\": 0, \"a\": 1}}}",
         "duplicate token"},
        {"merge entry number",
         "{\"model\": {\"type\": \"BPE\", \"unk_token\": \"a\", \"vocab\": {\"a\": 0, \"aa\": 1},"
         " \"merges\": [\"a a\", 17]}, \"pre_tokenizer\": {\"type\": \"Metaspace\"}}",
         "model.merges: entry 1 is not a string or pair"},
        {"merge not in vocab",
         "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 1}, \"merges\": [\"a b\"]},"
         " \"pre_tokenizer\": {\"type\": \"Metaspace\"}}",
         "model.merges: entry 0: merged token 'ab'"},
        {"merge with two spaces",
         "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": [\"a  a\"]},"
         " \"pre_tokenizer\": {\"type\": \"Metaspace\"}}",
         "model.merges: entry 0"},
        {"byte fallback without byte tokens",
         "{\"model\": {\"type\": \"BPE\", \"byte_fallback\": true, \"vocab\": {\"a\": 0}, \"merges\": []}}",
         "<0x00> is missing"},
        {"added token id clash",
         "{\"added_tokens\": [{\"id\": 0, \"content\": \"<s>\"}], \"model\": {\"type\": \"BPE\","
         " \"vocab\": {\"a\": 0}, \"merges\": []}, \"pre_tokenizer\": {\"type\": \"Metaspace\"}}",
         "added_tokens: entry 0"},
        {"added token moved",
         "{\"added_tokens\": [{\"id\": 5, \"content\": \"a\"}], \"model\": {\"type\": \"BPE\","
         " \"vocab\": {\"a\": 0}, \"merges\": []}, \"pre_tokenizer\": {\"type\": \"Metaspace\"}}",
         "added_tokens: entry 0"},
        {"unk not in vocab",
         "{\"model\": {\"type\": \"BPE\", \"unk_token\": \"<unk>\", \"vocab\": {\"a\": 0}, \"merges\": []},"
         " \"pre_tokenizer\": {\"type\": \"Metaspace\"}}",
         "model.unk_token"},
        {"byte level without byte tokens",
         "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": []},"
         " \"pre_tokenizer\": {\"type\": \"ByteLevel\"}}",
         "byte-level token for byte 0x00"},
        {"byte level with unsupported normalizer",
         "{\"normalizer\": {\"type\": \"Lowercase\"}, \"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}},"
         " \"pre_tokenizer\": {\"type\": \"ByteLevel\"}}",
         "normalizer: type 'Lowercase'"},
        {"split with a string pattern",
         "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}}, \"pre_tokenizer\": {\"type\": \"Sequence\", \"pretokenizers\": ["
         "{\"type\": \"Split\", \"pattern\": {\"String\": \" \"}, \"behavior\": \"Isolated\"}, {\"type\": \"ByteLevel\", \"add_prefix_space\": false, \"use_regex\": false}]}}",
         "Split.pattern: only a Regex"},
        {"split removing its matches",
         "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}}, \"pre_tokenizer\": {\"type\": \"Sequence\", \"pretokenizers\": ["
         "{\"type\": \"Split\", \"pattern\": {\"Regex\": \"a+\"}, \"behavior\": \"Removed\"}, {\"type\": \"ByteLevel\", \"add_prefix_space\": false, \"use_regex\": false}]}}",
         "Split.behavior"},
        {"split inverted",
         "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}}, \"pre_tokenizer\": {\"type\": \"Sequence\", \"pretokenizers\": ["
         "{\"type\": \"Split\", \"pattern\": {\"Regex\": \"a+\"}, \"behavior\": \"Isolated\", \"invert\": true}, {\"type\": \"ByteLevel\", \"add_prefix_space\": false, \"use_regex\": false}]}}",
         "Split.invert"},
        {"split regex with Oniguruma's \\h (a hex digit there)",
         "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}}, \"pre_tokenizer\": {\"type\": \"Sequence\", \"pretokenizers\": ["
         "{\"type\": \"Split\", \"pattern\": {\"Regex\": \"\\\\h+\"}, \"behavior\": \"Isolated\"}, {\"type\": \"ByteLevel\", \"add_prefix_space\": false, \"use_regex\": false}]}}",
         "Split.pattern: \\h is not supported"},
        {"split regex with \\S in a class",
         "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}}, \"pre_tokenizer\": {\"type\": \"Sequence\", \"pretokenizers\": ["
         "{\"type\": \"Split\", \"pattern\": {\"Regex\": \"[\\\\Sa]\"}, \"behavior\": \"Isolated\"}, {\"type\": \"ByteLevel\", \"add_prefix_space\": false, \"use_regex\": false}]}}",
         "\\S is not supported inside a class"},
        {"split regex that does not compile",
         "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}}, \"pre_tokenizer\": {\"type\": \"Sequence\", \"pretokenizers\": ["
         "{\"type\": \"Split\", \"pattern\": {\"Regex\": \"(a\"}, \"behavior\": \"Isolated\"}, {\"type\": \"ByteLevel\", \"add_prefix_space\": false, \"use_regex\": false}]}}",
         "Split.pattern: cannot compile the regex at offset 2"},
        {"byte level after split with its own regex",
         "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}}, \"pre_tokenizer\": {\"type\": \"Sequence\", \"pretokenizers\": ["
         "{\"type\": \"Split\", \"pattern\": {\"Regex\": \"a+\"}, \"behavior\": \"Isolated\"}, {\"type\": \"ByteLevel\", \"add_prefix_space\": false}]}}",
         "ByteLevel after a Split must have use_regex and add_prefix_space false"},
        {"three pre-tokenizers",
         "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}}, \"pre_tokenizer\": {\"type\": \"Sequence\", \"pretokenizers\": ["
         "{\"type\": \"Split\", \"pattern\": {\"Regex\": \"a+\"}, \"behavior\": \"Isolated\"}, {\"type\": \"Digits\"}, {\"type\": \"ByteLevel\", \"add_prefix_space\": false, \"use_regex\": false}]}}",
         "only as [Split, ByteLevel]"},
    };
    for (size_t i = 0; i < sizeof bad_json / sizeof bad_json[0]; i++) {
        write_file(t, "tokenizer.json", bad_json[i].json, strlen(bad_json[i].json));
        expect_dir_error(t, bad_json[i].label, "tokenizer.json", bad_json[i].what);
    }

    /* deep nesting must not overflow the stack */
    size_t deep = 100000;
    char *nest = malloc(deep);
    if (nest) {
        memset(nest, '[', deep);
        write_file(t, "tokenizer.json", nest, deep);
        expect_dir_error(t, "deep nesting", "tokenizer.json", "levels deep; the parser's limit is");
        free(nest);
    }

    /* vocab.json + merges.txt */
    char *vocab = gpt2_vocab_json("\"ab\": 256");
    if (!vocab) return;
    struct { const char *label, *vocab, *merges, *file, *what; } bad_pair[] = {
        {"merges: one token", vocab, "#version: 0.2\na\n", "merges.txt", "line 2"},
        {"merges: three tokens", vocab, "a b c\n", "merges.txt", "line 1"},
        {"merges: not in vocab", vocab, "a b\nx yz\n", "merges.txt", "line 2: 'yz'"},
        {"merges: result not in vocab", vocab, "a b\nb c\n", "merges.txt", "merged token 'bc'"},
        {"vocab: truncated", "{\"a\": 0, \"b\"", "a b\n", "vocab.json", "malformed JSON"},
        {"vocab: byte token missing", "{\"a\": 0, \"b\": 1, \"ab\": 2}", "a b\n", "vocab.json",
         "byte 0x00"},
        {"vocab: empty", "{}", "", "vocab.json", "empty vocabulary"},
        {"vocab: binary garbage", "\x89PNG\r\n\x1a\n", "", "vocab.json", "malformed JSON"},
    };
    for (size_t i = 0; i < sizeof bad_pair / sizeof bad_pair[0]; i++) {
        write_file(t, "vocab.json", bad_pair[i].vocab, strlen(bad_pair[i].vocab));
        write_file(t, "merges.txt", bad_pair[i].merges, strlen(bad_pair[i].merges));
        expect_dir_error(t, bad_pair[i].label, bad_pair[i].file, bad_pair[i].what);
    }
    /* the same tables load when well-formed (so the cases above fail for their stated reason) */
    write_file(t, "vocab.json", vocab, strlen(vocab));
    static const char crlf[] = "#version: 0.2\r\na b\r\n\r\n";
    write_file(t, "merges.txt", crlf, strlen(crlf));
    SpErr err = {{0}};
    Tokenizer *tok = tokenizer_load_dir(t->tmp, &err);
    check(tok != NULL, "well-formed vocab.json + merges.txt (CRLF) loads: %s", err.msg);
    if (tok) EXPECT_IDS(tok, "tmp ab", "ab", 0, 256);
    tokenizer_free(tok);
    clear_tmp(t);
    free(vocab);

    /* explicit missing files */
    tok = tokenizer_load_gpt2_files("/nonexistent/vocab.json", "/nonexistent/merges.txt", &err);
    check(tok == NULL && strstr(err.msg, "/nonexistent/vocab.json"), "missing file: %s", err.msg);
    tokenizer_free(tok);
}

/* Random edits of the fixture files: every load must either succeed or fail with a one-line
 * message naming the file; a loaded tokenizer must encode and decode without crashing. */
/* ---------------------------------------------------------------- added tokens in the text */

/* Texts with added tokens; the ids are transformers.js's (@lenml/tokenizers 3.7.2, which splits
 * added tokens as Hugging Face does: tests/tokenizer/special_oracle.js on these fixtures, no BOS). */
static void test_added_tokens(T *t) {
    Tokenizer *tok = load(t, "llama");
    if (tok) {
        /* each stretch between added tokens gets the Prepend "▁": " " -> "▁▁" (277) */
        EXPECT_IDS(tok, "llama split spaced", "<s> </s> <unk>", 0, 1, 277, 2, 277, 0);
        EXPECT_IDS(tok, "llama split around", "<s>hello world</s>", 0, 1, 273, 276, 262, 266, 2);
        EXPECT_IDS(tok, "llama split inside", "hello<s>world", 0, 273, 1, 276, 262, 266);
        EXPECT_IDS(tok, "llama split spaces", "hello <s> world", 0, 273, 259, 1, 259, 276, 262, 266);
        EXPECT_IDS(tok, "llama split leading", " <s>hello", 0, 277, 1, 273);
        EXPECT_IDS(tok, "llama split adjacent", "<s><s></s>", 0, 1, 1, 2);
        EXPECT_IDS(tok, "llama split unk", "a<unk>a", 0, 259, 268, 0, 259, 268);
        EXPECT_IDS(tok, "llama split bos", "a<s>", TOK_ENC_BOS, 1, 259, 268, 1);
        tokenizer_free(tok);
    }
    if ((tok = load(t, "llama_metaspace"))) {
        /* Metaspace: a stretch that starts with a space needs no extra "▁" */
        EXPECT_IDS(tok, "llama_metaspace split spaces", "hello <s> world", 0, 273, 259, 1, 276, 262, 266);
        EXPECT_IDS(tok, "llama_metaspace split leading", " <s>hello", 0, 259, 1, 273);
        tokenizer_free(tok);
    }
    static const char *const gpt2[] = {"gpt2", "gpt2_json", "openai"};
    for (int i = 0; i < 3; i++) {
        if (!(tok = load(t, gpt2[i]))) continue;
        char label[96];
        snprintf(label, sizeof label, "%s split eot", gpt2[i]);
        EXPECT_IDS(tok, label, "hello <|endoftext|> there", 0, 262, 220, 268, 258, 81, 68);
        EXPECT_IDS(tok, label, "hello<|endoftext|>world", 0, 262, 268, 86, 78, 81, 75, 67);
        EXPECT_IDS(tok, label, "<|endoftext|><|endoftext|>", 0, 268, 268);
        EXPECT_IDS(tok, label, "  <|endoftext|>\n", 0, 265, 268, 198);
        tokenizer_free(tok);
    }
    if ((tok = load(t, "gpt2_prefix"))) {
        /* add_prefix_space applies to each stretch */
        EXPECT_IDS(tok, "gpt2_prefix split", "<|endoftext|>hello there", 0, 268, 220, 262, 258, 81, 68);
        EXPECT_IDS(tok, "gpt2_prefix split inside", "hello<|endoftext|>world", 0, 220, 262, 268, 220, 86, 78,
                   81, 75, 67);
        tokenizer_free(tok);
    }
}

/* The llama fixture with its added tokens' flags changed, written to t->tmp; NULL on failure. */
static Tokenizer *load_llama_flags(T *t, const char *flag_s, const char *flag_eos) {
    char path[1024];
    snprintf(path, sizeof path, "%s/llama/tokenizer.json", t->fixtures);
    FILE *f = fopen(path, "rb");
    char *text = malloc(1 << 16);
    size_t n = f && text ? fread(text, 1, (1 << 16) - 1, f) : 0;
    if (f) fclose(f);
    cJSON *root = n ? cJSON_ParseWithLength(text, n) : NULL;
    free(text);
    const cJSON *item;
    cJSON_ArrayForEach(item, cJSON_GetObjectItem(root, "added_tokens")) {
        const char *content = cJSON_GetStringValue(cJSON_GetObjectItem(item, "content"));
        const char *flag = strcmp(content, "<s>") == 0 ? flag_s : strcmp(content, "</s>") == 0 ? flag_eos : NULL;
        if (flag) cJSON_ReplaceItemInObject((cJSON *)item, flag, cJSON_CreateTrue());
    }
    char *out = root ? cJSON_PrintUnformatted(root) : NULL;
    cJSON_Delete(root);
    if (!check(out != NULL, "llama fixture with %s/%s flags", flag_s, flag_eos)) return NULL;
    write_file(t, "tokenizer.json", out, strlen(out));
    free(out);
    SpErr err = {{0}};
    Tokenizer *tok = tokenizer_load_dir(t->tmp, &err);
    check(tok != NULL, "load llama fixture with %s/%s: %s", flag_s, flag_eos, err.msg);
    return tok;
}

static void test_added_token_flags(T *t) {
    /* <s> lstrip, </s> rstrip; ids from transformers.js on that tokenizer.json */
    Tokenizer *tok = load_llama_flags(t, "lstrip", "rstrip");
    if (tok) {
        EXPECT_IDS(tok, "lstrip", "hello <s> world", 0, 273, 1, 259, 276, 262, 266);
        EXPECT_IDS(tok, "rstrip", "hello  </s>  world", 0, 273, 277, 2, 276, 262, 266);
        EXPECT_IDS(tok, "rstrip then lstrip", "hello </s><s> world", 0, 273, 259, 2, 1, 259, 276, 262, 266);
        EXPECT_IDS(tok, "lstrip tab newline", "a \t<s>\n b", 0, 259, 268, 1, 259, 13, 259, 101);
        tokenizer_free(tok);
    }
    clear_tmp(t);
    /* single_word (no oracle implements it): next to a word character the token stays plain
     * text, exactly as with TOK_ENC_SPECIAL_AS_TEXT; between spaces it is split out */
    if ((tok = load_llama_flags(t, "single_word", "single_word"))) {
        static const char *const texts[] = {"a<s>", "<s>b", "x</s>y", "_<s>"};
        for (int i = 0; i < 4; i++) {
            SpErr err = {{0}};
            int32_t *a = NULL, *b = NULL;
            size_t na = 0, nb = 0;
            int rc = tokenizer_encode_flags(tok, texts[i], strlen(texts[i]), 0, &a, &na, &err) |
                     tokenizer_encode_flags(tok, texts[i], strlen(texts[i]), TOK_ENC_SPECIAL_AS_TEXT, &b, &nb, &err);
            check(rc == 0 && na == nb && memcmp(a, b, na * sizeof *a) == 0, "single_word '%s' stays text", texts[i]);
            free(a);
            free(b);
        }
        EXPECT_IDS(tok, "single_word alone", "<s>", 0, 1);
        EXPECT_IDS(tok, "single_word spaced", "a <s>.", 0, 259, 268, 259, 1, 259, 3 + '.');
        tokenizer_free(tok);
    }
    clear_tmp(t);
}

/* tokenizer_config.json: add_bos_token / add_eos_token override the family's default. */
static void test_tokenizer_config(T *t) {
    char path[1024];
    snprintf(path, sizeof path, "%s/llama/tokenizer.json", t->fixtures);
    FILE *f = fopen(path, "rb");
    char *json = malloc(1 << 16);
    size_t n = f && json ? fread(json, 1, 1 << 16, f) : 0;
    if (f) fclose(f);
    static const char cfg[] = "{\"add_bos_token\": false, \"add_eos_token\": true, \"legacy\": true}";
    write_file(t, "tokenizer.json", json, n);
    write_file(t, "tokenizer_config.json", cfg, sizeof cfg - 1);
    SpErr err = {{0}};
    Tokenizer *tok = tokenizer_load_dir(t->tmp, &err);
    if (check(tok != NULL, "load with tokenizer_config.json: %s", err.msg)) {
        check(!tokenizer_add_bos(tok) && tokenizer_add_eos(tok), "config: add_bos false, add_eos true");
        unsigned flags = (tokenizer_add_bos(tok) ? TOK_ENC_BOS : 0u) | (tokenizer_add_eos(tok) ? TOK_ENC_EOS : 0u);
        /* "hello world" as in test_llama_encodings, then </s> (2) and no <s> */
        expect_ids_n(tok, "config: no bos, eos", "hello world", 11, flags, (const int32_t[]){273, 276, 262, 266, 2}, 5);
        tokenizer_free(tok);
    }
    static const char *const bad[][3] = {
        {"{\"add_bos_token\": tru", "tokenizer_config.json", "tokenizer_config.json"},
        {"{\"add_bos_token\": \"yes\"}", "tokenizer_config.json", "add_bos_token"},
        {"{\"add_eos_token\": 1}", "tokenizer_config.json", "add_eos_token"},
        {"[]", "tokenizer_config.json", "not an object"},
    };
    for (int i = 0; i < 4; i++) {
        write_file(t, "tokenizer.json", json, n);
        write_file(t, "tokenizer_config.json", bad[i][0], strlen(bad[i][0]));
        expect_dir_error(t, bad[i][0], bad[i][1], bad[i][2]);
    }
    /* null or absent keys keep the default */
    write_file(t, "tokenizer.json", json, n);
    write_file(t, "tokenizer_config.json", "{\"add_bos_token\": null}", 23);
    if ((tok = tokenizer_load_dir(t->tmp, &err))) {
        check(tokenizer_add_bos(tok) && !tokenizer_add_eos(tok), "config: null keeps Llama's BOS default");
        tokenizer_free(tok);
    }
    clear_tmp(t);
    free(json);
}

static void test_fuzzed_files(T *t, const char *sub) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s/tokenizer.json", t->fixtures, sub);
    FILE *f = fopen(path, "rb");
    char *orig = malloc(1 << 16), *buf = malloc(1 << 16);
    size_t n = f && orig ? fread(orig, 1, 1 << 16, f) : 0;
    if (f) fclose(f);
    check(n > 1000 && buf, "read %s", path);
    static const char edits[] = "{}[],:\"0123456789-.e \\nx\xE2\x80\xFF";
    uint32_t state = 777;
    int loaded = 0, clean_errors = 0, bad = 0;
    for (int iter = 0; n > 1000 && buf && iter < 400; iter++) {
        memcpy(buf, orig, n);
        size_t len = n;
        for (int e = 0; e < 1 + iter % 3; e++) {
            state = state * 1664525u + 1013904223u;
            size_t at = (state >> 8) % len;
            state = state * 1664525u + 1013904223u;
            if (iter % 7 == 0)
                len = at + 1; /* truncate */
            else
                buf[at] = edits[(state >> 8) % (sizeof edits - 1)];
        }
        write_file(t, "tokenizer.json", buf, len);
        SpErr err = {{0}};
        Tokenizer *tok = tokenizer_load_dir(t->tmp, &err);
        if (tok) {
            int32_t *ids = NULL;
            size_t m = 0;
            char *text = NULL;
            size_t tl;
            static const char sample[] = "hello world \xE6\x97\xA5 \xFF aaa";
            if (tokenizer_encode(tok, sample, sizeof sample - 1, 1, &ids, &m, &err) == 0)
                tokenizer_decode(tok, ids, m, 0, &text, &tl, &err);
            free(ids);
            free(text);
            tokenizer_free(tok);
            loaded++;
        } else if (strstr(err.msg, "tokenizer.json") && !strchr(err.msg, '\n')) {
            clean_errors++;
        } else if (bad++ < 3) {
            printf("      fuzz %s iteration %d: bad error '%s'\n", sub, iter, err.msg);
        }
        clear_tmp(t);
    }
    check(bad == 0 && loaded + clean_errors == 400 && clean_errors > 100,
          "%s fuzz: %d loaded, %d clean errors, %d bad", sub, loaded, clean_errors, bad);
    free(orig);
    free(buf);
}

/* A byte-level tokenizer as Llama 3 / Qwen2 lay theirs out, built here: NFC normalizer, Split regex
 * "\S+|\s+" before ByteLevel, merges "a á" (bytes 61 E1) and "a Â" (61 C2), a special and a
 * non-special added token, BOS from the post_processor. The byte-level token of byte b has id b. */
static void split_nfc_json(char *json, size_t cap, int ignore_merges) {
    char *vocab = gpt2_vocab_json("\"a\\u00e1\": 256, \"a\\u00c2\": 257, \"xyz\": 260, \"xy\": 261");
    if (!vocab) {
        json[0] = '\0';
        return;
    }
    snprintf(json, cap,
             "{\"normalizer\": {\"type\": \"NFC\"},"
             " \"pre_tokenizer\": {\"type\": \"Sequence\", \"pretokenizers\": ["
             "{\"type\": \"Split\", \"pattern\": {\"Regex\": \"\\\\S+|\\\\s+\"}, \"behavior\": \"Isolated\", \"invert\": false},"
             " {\"type\": \"ByteLevel\", \"add_prefix_space\": false, \"use_regex\": false}]},"
             " \"post_processor\": {\"type\": \"Sequence\", \"processors\": [{\"type\": \"ByteLevel\"},"
             " {\"type\": \"TemplateProcessing\", \"single\": [{\"SpecialToken\": {\"id\": \"<b>\", \"type_id\": 0}},"
             " {\"Sequence\": {\"id\": \"A\", \"type_id\": 0}}]}]},"
             " \"added_tokens\": [{\"id\": 258, \"content\": \"<b>\", \"special\": true},"
             " {\"id\": 259, \"content\": \"<t>\", \"special\": false}],"
             " \"model\": {\"type\": \"BPE\", \"ignore_merges\": %s, \"vocab\": %s,"
             " \"merges\": [\"a \\u00e1\", \"a \\u00c2\", \"x y\"]}}",
             ignore_merges ? "true" : "false", vocab);
    free(vocab);
}

static void test_split_nfc(T *t) {
    char json[16384];
    split_nfc_json(json, sizeof json, 1);
    clear_tmp(t);
    write_file(t, "tokenizer.json", json, strlen(json));
    SpErr err = {{0}};
    Tokenizer *tok = tokenizer_load_dir(t->tmp, &err);
    if (!check(tok != NULL, "split_nfc: load: %s", err.msg)) return;
    check(tokenizer_split_regex(tok) && !strcmp(tokenizer_split_regex(tok), "\\S+|\\s+"), "split_nfc: the Split regex as written");
    /* ignore_merges (Llama 3): a piece that is a token is that token, whatever the merges make */
    EXPECT_IDS(tok, "split_nfc: ignore_merges takes the piece", "xyz", 0, 260);
    EXPECT_IDS(tok, "split_nfc: ignore_merges, not a token", "xyzx", 0, 261, 'z', 'x');
    /* U+0085 is White_Space (Oniguruma, tiktoken): its own piece, no merge with the "a" before it */
    EXPECT_IDS(tok, "split_nfc: U+0085 is \\s", "a\xC2\x85" "b", 0, 'a', 0xC2, 0x85, 'b');
    /* U+180E is not (PCRE2's own \s says it is): one piece, "a" + E1 merge */
    EXPECT_IDS(tok, "split_nfc: U+180E is not \\s", "a\xE1\xA0\x8E" "b", 0, 256, 0xA0, 0x8E, 'b');
    EXPECT_IDS(tok, "split_nfc: U+00A0 is \\s", "a\xC2\xA0" "b", 0, 'a', 0xC2, 0xA0, 'b');
    /* NFC: e + U+0301 is U+00E9 (C3 A9); a lone combining mark stays; invalid bytes are kept */
    EXPECT_IDS(tok, "split_nfc: NFD to NFC", "e\xCC\x81", 0, 0xC3, 0xA9);
    EXPECT_IDS(tok, "split_nfc: NFC stays", "\xC3\xA9", 0, 0xC3, 0xA9);
    EXPECT_IDS(tok, "split_nfc: a lone mark", "\xCC\x81", 0, 0xCC, 0x81);
    EXPECT_IDS(tok, "split_nfc: invalid bytes kept", "\xFF" "e\xCC\x81\xC3", 0, 0xFF, 0xC3, 0xA9, 0xC3);
    /* added tokens are split out of the raw text; the special one is skipped by decode */
    EXPECT_IDS(tok, "split_nfc: added tokens", "<t>x<b>", 0, 259, 'x', 258);
    const int32_t ids[] = {259, 'x', 258};
    expect_decode(tok, "split_nfc: decode keeps <t>, skips <b>", ids, 3, 1, "<t>x");
    check(tokenizer_is_added(tok, 259) && !tokenizer_is_special(tok, 259) && tokenizer_is_special(tok, 258) &&
              !tokenizer_is_added(tok, 'x'), "split_nfc: added / special flags");
    /* BOS from TemplateProcessing */
    check(tokenizer_add_bos(tok) && !tokenizer_add_eos(tok) && tokenizer_bos_id(tok) == 258,
          "split_nfc: the post_processor adds <b> (258) as BOS");
    int32_t *got = NULL;
    size_t n = 0;
    check(tokenizer_encode_text(tok, "x", 1, &got, &n, &err) == 0 && n == 2 && got[0] == 258 && got[1] == 'x',
          "split_nfc: encode_text puts BOS first");
    free(got);
    tokenizer_free(tok);
    /* tokenizer_config.json: bos_token null (Qwen), eos_token by name; an unknown name is refused */
    const char *cfg = "{\"bos_token\": null, \"eos_token\": {\"content\": \"<t>\"}}";
    write_file(t, "tokenizer_config.json", cfg, strlen(cfg));
    if ((tok = tokenizer_load_dir(t->tmp, &err))) {
        check(tokenizer_bos_id(tok) == -1 && tokenizer_eos_id(tok) == 259, "split_nfc: bos_token null, eos_token <t>");
        tokenizer_free(tok);
    } else {
        check(0, "split_nfc: load with tokenizer_config.json: %s", err.msg);
    }
    cfg = "{\"eos_token\": \"<nope>\"}";
    write_file(t, "tokenizer_config.json", cfg, strlen(cfg));
    expect_dir_error(t, "eos_token not in the vocabulary", "tokenizer_config.json", "eos_token: '<nope>' is not in the vocabulary");
    /* without ignore_merges the merges decide: x y -> xy, then z */
    clear_tmp(t);
    split_nfc_json(json, sizeof json, 0);
    write_file(t, "tokenizer.json", json, strlen(json));
    if ((tok = tokenizer_load_dir(t->tmp, &err))) {
        EXPECT_IDS(tok, "split_nfc: merges without ignore_merges", "xyz", 0, 261, 'z');
        tokenizer_free(tok);
    } else {
        check(0, "split_nfc: load without ignore_merges: %s", err.msg);
    }
}

int main(int argc, char **argv) {
    check_tally.quiet = 1; /* over a thousand checks: print the failures only */
    T t = {0};
    char fixtures[1024];
    if (argc > 1) {
        t.fixtures = argv[1];
    } else { /* the fixtures next to this source file */
        snprintf(fixtures, sizeof fixtures, "%s", __FILE__);
        char *slash = strrchr(fixtures, '/');
        if (slash)
            snprintf(slash, sizeof fixtures - (size_t)(slash - fixtures), "/tokenizer/fixtures");
        else
            snprintf(fixtures, sizeof fixtures, "tokenizer/fixtures");
        t.fixtures = fixtures;
    }
    struct stat st;
    if (!check(stat(t.fixtures, &st) == 0 && S_ISDIR(st.st_mode), "fixtures at %s (else pass the directory as argument)",
               t.fixtures))
        return check_summary("tokenizer_unit");
    snprintf(t.tmp, sizeof t.tmp, "/tmp/test_tokenizer_XXXXXX");
    if (!mkdtemp(t.tmp)) {
        check(0, "mkdtemp %s: %s", t.tmp, strerror(errno));
        return check_summary("tokenizer_unit");
    }

    test_gpt2(&t);
    test_llama(&t);
    static const char *const all[] = {"gpt2", "gpt2_json", "gpt2_prefix", "llama", "llama_metaspace"};
    for (int i = 0; i < 5; i++) {
        Tokenizer *tok = load(&t, all[i]);
        if (!tok) continue;
        /* gpt2_prefix adds a space, llama_metaspace merges a leading space into the prefix */
        if (i != 2 && i != 4) test_roundtrips(tok, all[i]);
        test_speed(tok, all[i]);
        tokenizer_free(tok);
    }
    test_errors(&t);
    test_added_tokens(&t);
    test_added_token_flags(&t);
    test_tokenizer_config(&t);
    test_split_nfc(&t);
    test_fuzzed_files(&t, "llama");
    test_fuzzed_files(&t, "gpt2_json");

    rmdir(t.tmp);
    return check_summary("tokenizer_unit");
}
