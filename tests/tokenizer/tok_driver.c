/* tok_driver - bulk encode for the tokenizer oracle test (tests/tokenizer/run_oracle.sh).
 *
 *   tok_driver (--dir DIR|FILE.gguf | --gpt2 VOCAB MERGES) --in LINES [--bos] [--special-as-text] [--expect TEXTS]
 *
 * LINES holds one JSON string per line (so texts may contain newlines and tabs). For each line,
 * prints the token ids, space-separated, on one stdout line. --special-as-text encodes special
 * added tokens in the text ("<s>", "<|endoftext|>") as plain text instead of splitting them out.
 * Also checks the round trip decode(encode(text), skip_special) == text (for Llama, with "▁" in
 * the text read as a space, since the decoder turns every "▁" into a space) on the lines whose
 * ids hold no special token besides BOS (a split-out "<s>" is dropped by skip_special, and the
 * Llama "▁" prefix of the stretch after it decodes as a space); byte-level tokenizers are checked on
 * every line, decoding all ids after the BOS with the special tokens kept. Reports on stderr:
 *   "roundtrip: N lines, M failures, E errors, S not checked (special tokens)"
 * --expect TEXTS: one JSON string per line of LINES, the text decode must give back instead of the
 * line itself (for a tokenizer with a normalizer: the NFC form of the line, made by the test).
 * Exit status 0 when every line encoded and round-tripped, 1 otherwise, 2 on usage errors.
 */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf.h" /* model_tokenizer_load: a directory or a GGUF file alone */
#include "tokenizer.h"

static void usage(void) {
    fprintf(stderr, "usage: tok_driver (--dir DIR | --gpt2 VOCAB MERGES) --in LINES [--bos] [--special-as-text] "
                    "[--expect TEXTS]\n");
}

/* The text decode should give back: Llama decodes every "▁" as a space. */
static char *expected_text(const Tokenizer *t, const char *s, size_t *len) {
    size_t n = strlen(s);
    char *out = malloc(n + 1);
    if (!out) return NULL;
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        if (tokenizer_kind(t) == TOK_LLAMA_BPE && strncmp(s + i, "\xE2\x96\x81", 3) == 0) {
            out[o++] = ' ';
            i += 2;
        } else {
            out[o++] = s[i];
        }
    }
    out[o] = '\0';
    *len = o;
    return out;
}

/* 1 when ids[0..n) hold a special token: decode with and without skip_special differ. */
static int has_special(const Tokenizer *t, const int32_t *ids, size_t n) {
    SpErr err = {{0}};
    char *a = NULL, *b = NULL;
    size_t an = 0, bn = 0;
    int rc = tokenizer_decode(t, ids, n, 1, &a, &an, &err) == 0 && tokenizer_decode(t, ids, n, 0, &b, &bn, &err) == 0 &&
             (an != bn || memcmp(a, b, an) != 0);
    free(a);
    free(b);
    return rc;
}

/* Encodes one text, prints its ids; returns 0 when the round trip holds, 1 if not, 2 when not
 * checked (special tokens in the ids), -1 on error. */
static int process(const Tokenizer *t, const char *text, const char *expect, unsigned flags, long lineno) {
    SpErr err = {{0}};
    int32_t *ids;
    size_t n;
    if (tokenizer_encode_flags(t, text, strlen(text), flags, &ids, &n, &err) < 0) {
        fprintf(stderr, "line %ld: encode: %s\n", lineno, err.msg);
        printf("ERROR\n");
        return -1;
    }
    for (size_t i = 0; i < n; i++) printf(i ? " %d" : "%d", (int)ids[i]);
    printf("\n");
    char *dec = NULL, *want = NULL;
    size_t dec_len = 0, want_len = 0;
    int rc = 0;
    size_t skip = (flags & TOK_ENC_BOS) && n > 0 && ids[0] == tokenizer_bos_id(t);
    /* byte-level: an added token decodes to its own text, so special tokens or not, decoding
     * everything after the BOS gives the text back */
    int whole = tokenizer_kind(t) == TOK_GPT2_BPE && !(flags & TOK_ENC_SPECIAL_AS_TEXT);
    if (!whole && has_special(t, ids + skip, n - skip)) {
        rc = 2;
    } else if (tokenizer_decode(t, ids + (whole ? skip : 0), n - (whole ? skip : 0), !whole, &dec, &dec_len, &err) < 0) {
        fprintf(stderr, "line %ld: decode: %s\n", lineno, err.msg);
        rc = -1;
    } else if (!(want = expected_text(t, expect ? expect : text, &want_len))) {
        rc = -1;
    } else if (dec_len != want_len || memcmp(dec, want, want_len) != 0) {
        rc = 1;
    }
    free(want);
    free(dec);
    free(ids);
    return rc;
}

int main(int argc, char **argv) {
    const char *dir = NULL, *vocab = NULL, *merges = NULL, *in = NULL, *expect_path = NULL;
    unsigned flags = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--dir") == 0 && i + 1 < argc) {
            dir = argv[++i];
        } else if (strcmp(argv[i], "--gpt2") == 0 && i + 2 < argc) {
            vocab = argv[++i];
            merges = argv[++i];
        } else if (strcmp(argv[i], "--in") == 0 && i + 1 < argc) {
            in = argv[++i];
        } else if (strcmp(argv[i], "--expect") == 0 && i + 1 < argc) {
            expect_path = argv[++i];
        } else if (strcmp(argv[i], "--bos") == 0) {
            flags |= TOK_ENC_BOS;
        } else if (strcmp(argv[i], "--special-as-text") == 0) {
            flags |= TOK_ENC_SPECIAL_AS_TEXT;
        } else {
            usage();
            return 2;
        }
    }
    if (!in || (!dir && !vocab)) {
        usage();
        return 2;
    }
    SpErr err = {{0}};
    Tokenizer *t = dir ? model_tokenizer_load(dir, &err) : tokenizer_load_gpt2_files(vocab, merges, &err);
    if (!t) {
        fprintf(stderr, "tok_driver: %s\n", err.msg);
        return 1;
    }
    FILE *f = fopen(in, "rb");
    if (!f) {
        perror(in);
        tokenizer_free(t);
        return 1;
    }
    FILE *fe = expect_path ? fopen(expect_path, "rb") : NULL;
    if (expect_path && !fe) {
        perror(expect_path);
        fclose(f);
        tokenizer_free(t);
        return 1;
    }
    char *line = NULL, *eline = NULL;
    size_t cap = 0, ecap = 0;
    long lineno = 0, failures = 0, errors = 0, unchecked = 0;
    ssize_t got;
    while ((got = getline(&line, &cap, f)) >= 0) {
        lineno++;
        cJSON *j = cJSON_ParseWithLength(line, (size_t)got), *e = NULL;
        ssize_t egot = fe ? getline(&eline, &ecap, fe) : 0;
        if (fe && egot >= 0) e = cJSON_ParseWithLength(eline, (size_t)egot);
        if (!cJSON_IsString(j) || (fe && !cJSON_IsString(e))) {
            fprintf(stderr, "%s:%ld: not a JSON string (or no such line in %s)\n", in, lineno,
                    fe ? expect_path : "--expect");
            printf("ERROR\n");
            errors++;
        } else {
            int rc = process(t, j->valuestring, e ? e->valuestring : NULL, flags, lineno);
            if (rc == 1 && failures < 5) fprintf(stderr, "line %ld: round trip differs\n", lineno);
            failures += rc == 1;
            unchecked += rc == 2;
            errors += rc < 0;
        }
        cJSON_Delete(j);
        cJSON_Delete(e);
    }
    free(line);
    free(eline);
    fclose(f);
    if (fe) fclose(fe);
    tokenizer_free(t);
    fprintf(stderr, "roundtrip: %ld lines, %ld failures, %ld errors, %ld not checked (special tokens)\n", lineno,
            failures, errors, unchecked);
    return failures || errors ? 1 : 0;
}
