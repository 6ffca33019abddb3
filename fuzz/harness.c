/* harness.c - parser harnesses for fuzzing and for the replay test; see harness.h. */
#include "harness.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "chat_template.h"
#include "dataset.h"
#include "error.h"
#include "dtype.h"
#include "gguf.h"
#include "h5util.h"
#include "model.h"
#include "safetensors.h"
#include "spec.h"
#include "tokenizer.h"
#include "tokenlog.h"

#ifndef SP_FIXTURES_DIR
#define SP_FIXTURES_DIR "tests/tokenizer/fixtures"
#endif

#define SP_FUZZ_CHECK(cond, ...)                                                               \
    do {                                                                                       \
        if (!(cond)) {                                                                         \
            fprintf(stderr, "fuzz harness: property violated at %s:%d: %s\n  ", __FILE__,      \
                    __LINE__, #cond);                                                          \
            fprintf(stderr, __VA_ARGS__);                                                      \
            fputc('\n', stderr);                                                               \
            abort();                                                                           \
        }                                                                                      \
    } while (0)

/* ------------------------------------------------------------------ temporary files */

static char g_root[256]; /* private temporary directory, created on first use */
static char g_fixtures[1024];

static void rm_tree(const char *path) {
    DIR *d = opendir(path);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d))) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
            char p[1024];
            snprintf(p, sizeof p, "%s/%s", path, e->d_name);
            rm_tree(p);
        }
        closedir(d);
        rmdir(path);
    } else {
        unlink(path);
    }
}

static void cleanup(void) {
    if (g_root[0]) rm_tree(g_root);
}

/* A process that dies on a sanitizer report or a signal (what a fuzzer is for) runs no atexit
 * handler and leaves its directory behind. The directory is named spfuzz.PID.XXXXXX, so the next
 * harness process removes those of dead processes of the same user in the same parent directory
 * (fuzz/Makefile also points TMPDIR at build-fuzz/tmp/TARGET and empties it around each run). */
static void remove_stale(const char *parent) {
    DIR *d = opendir(parent);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d))) {
        char *end;
        if (strncmp(e->d_name, "spfuzz.", 7) != 0) continue;
        long pid = strtol(e->d_name + 7, &end, 10);
        if (end == e->d_name + 7 || *end != '.' || strlen(end) != 7 || pid <= 0 || pid == (long)getpid()) continue;
        if (kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue; /* alive, or not ours to judge */
        char p[1024];
        struct stat st;
        snprintf(p, sizeof p, "%s/%s", parent, e->d_name);
        if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == getuid()) rm_tree(p);
    }
    closedir(d);
}

static const char *root_dir(void) {
    if (!g_root[0]) {
        const char *t = getenv("TMPDIR");
        const char *parent = t && *t ? t : "/tmp";
        remove_stale(parent);
        snprintf(g_root, sizeof g_root, "%s/spfuzz.%ld.XXXXXX", parent, (long)getpid());
        if (!mkdtemp(g_root)) {
            perror("fuzz harness: mkdtemp");
            abort();
        }
        atexit(cleanup);
    }
    return g_root;
}

/* A fresh, empty directory root/sub (its previous files removed). */
static const char *fresh_dir(const char *sub, char *buf, size_t cap) {
    snprintf(buf, cap, "%s/%s", root_dir(), sub);
    rm_tree(buf);
    if (mkdir(buf, 0700) != 0) {
        perror("fuzz harness: mkdir");
        abort();
    }
    return buf;
}

static void write_file(const char *dir, const char *name, const void *data, size_t size, char *path,
                       size_t cap) {
    snprintf(path, cap, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f || (size && fwrite(data, 1, size, f) != size) || fclose(f) != 0) {
        perror("fuzz harness: writing a temporary file");
        abort();
    }
}

/* Splits data at the first SP_FUZZ_SEP: [0, *n1) and [*off2, size). No separator: all of it is the
 * first part and the second is empty. */
static void split2(const uint8_t *data, size_t size, size_t *n1, size_t *off2) {
    const size_t k = sizeof SP_FUZZ_SEP - 1;
    for (size_t i = 0; i + k <= size; i++)
        if (memcmp(data + i, SP_FUZZ_SEP, k) == 0) {
            *n1 = i;
            *off2 = i + k;
            return;
        }
    *n1 = size;
    *off2 = size;
}

/* A rejected input: the error is one non-empty line. */
static void check_err(const SpErr *e, const char *what) {
    SP_FUZZ_CHECK(e->msg[0] != '\0', "%s failed without a message", what);
    SP_FUZZ_CHECK(strchr(e->msg, '\n') == NULL, "%s: error message spans lines: %s", what, e->msg);
}

/* Reads every byte of p[0..n) so ASan sees a too-short buffer. */
static void touch(const void *p, size_t n) {
    const volatile unsigned char *c = p;
    unsigned char x = 0;
    if (n) x ^= c[0], x ^= c[n - 1];
    (void)x;
}

/* ------------------------------------------------------------------ safetensors */

/* Input starting with '{': model.safetensors.index.json SEP shard file "a.safetensors" (st_open_dir);
 * otherwise the bytes of one model.safetensors (st_open_file). */
static int h_safetensors(const uint8_t *data, size_t size) {
    char dir[512], path[1024];
    fresh_dir("safetensors", dir, sizeof dir);
    StArchive a;
    memset(&a, 0, sizeof a);
    SpErr e = {{0}};
    int rc;
    if (size > 0 && data[0] == '{') {
        size_t n1, off2;
        split2(data, size, &n1, &off2);
        write_file(dir, "model.safetensors.index.json", data, n1, path, sizeof path);
        write_file(dir, "a.safetensors", data + off2, size - off2, path, sizeof path);
        rc = st_open_dir(dir, &a, &e);
    } else {
        write_file(dir, "model.safetensors", data, size, path, sizeof path);
        rc = st_open_file(&a, path, &e);
    }
    if (rc != 0) {
        check_err(&e, "st_open");
    } else {
        for (int i = 0; i < a.n_entries; i++) {
            const StEntry *t = &a.entries[i];
            SP_FUZZ_CHECK(t->ndim >= 0 && t->ndim <= ST_MAX_DIMS, "tensor %s: ndim %d", t->name, t->ndim);
            int64_t numel = 1;
            for (int k = 0; k < t->ndim; k++) {
                SP_FUZZ_CHECK(t->shape[k] >= 0, "tensor %s: negative dim", t->name);
                numel *= t->shape[k];
            }
            SP_FUZZ_CHECK(numel == t->numel && t->nbytes == (size_t)numel * st_dtype_size(t->dtype),
                          "tensor %s: numel/nbytes disagree with the shape", t->name);
            SP_FUZZ_CHECK(st_find(&a, t->name) == t, "tensor %s: st_find does not find it", t->name);
            SP_FUZZ_CHECK(t->file_index >= 0 && t->file_index < a.n_files, "tensor %s: bad file index", t->name);
            const unsigned char *base = a.files[t->file_index].map;
            const unsigned char *p = t->data;
            if (!t->owned)
                SP_FUZZ_CHECK(p >= base && p + t->nbytes <= base + a.files[t->file_index].size,
                              "tensor %s: data outside its file", t->name);
            SP_FUZZ_CHECK(((uintptr_t)p % st_dtype_size(t->dtype)) == 0, "tensor %s: misaligned", t->name);
            touch(p, t->nbytes);
        }
    }
    st_close(&a);
    return 0;
}

/* ------------------------------------------------------------------ config.json */

static int h_config(const uint8_t *data, size_t size) {
    cJSON *j = cJSON_ParseWithLength((const char *)data, size);
    if (!j) return 0;
    ModelConfig c;
    SpErr e = {{0}};
    if (config_parse(j, "config.json", &c, &e) != 0) {
        check_err(&e, "config_parse");
        SP_FUZZ_CHECK(c.layer_local == NULL, "config_parse failed but left layer_local allocated");
    } else {
        SP_FUZZ_CHECK(c.vocab_size >= 1 && c.d_model >= 1 && c.n_layers >= 1 && c.n_heads >= 1 && c.n_kv_heads >= 1 &&
                          c.head_dim >= 1 && c.d_ff >= 1 && c.max_pos >= 1,
                      "config_parse accepted a non-positive size");
        SP_FUZZ_CHECK(c.n_heads % c.n_kv_heads == 0, "heads %d not a multiple of kv heads %d", c.n_heads, c.n_kv_heads);
        SP_FUZZ_CHECK(c.bos_id < c.vocab_size && c.eos_id < c.vocab_size && c.bos_id >= -1 && c.eos_id >= -1,
                      "bos/eos outside the vocabulary");
        SP_FUZZ_CHECK(c.arch != ARCH_GPTNEO || c.layer_local != NULL, "gpt_neo without layer flags");
        TensorSpec *specs = NULL;
        int n = 0;
        SpErr e2 = {{0}};
        if (model_tensor_specs(&c, &specs, &n, &e2) == 0) {
            SP_FUZZ_CHECK(n > 0, "no tensors");
            for (int i = 0; i < n; i++)
                for (int k = 0; k < specs[i].ndim; k++)
                    SP_FUZZ_CHECK(specs[i].shape[k] >= 1, "tensor %s: dim %d < 1", specs[i].name, k);
            free(specs);
        } else {
            check_err(&e2, "model_tensor_specs");
        }
        config_free(&c);
    }
    cJSON_Delete(j);
    return 0;
}

/* config.json SEP the weights file `weights` (model.safetensors, model.gguf): model_load, then one
 * forward pass over two tokens. */
static int load_and_forward(const char *model_path);
static int h_model_files(const uint8_t *data, size_t size, const char *weights) {
    char dir[512], path[1024];
    fresh_dir("model", dir, sizeof dir);
    size_t n1, off2;
    split2(data, size, &n1, &off2);
    write_file(dir, "config.json", data, n1, path, sizeof path);
    write_file(dir, weights, data + off2, size - off2, path, sizeof path);
    return load_and_forward(dir);
}

/* model_load of a directory or a GGUF file alone, then one forward pass over two tokens. */
static int load_and_forward(const char *model_path) {
    SpErr e = {{0}};
    Model *m = model_load(model_path, &e);
    if (!m) {
        check_err(&e, "model_load");
        return 0;
    }
    const ModelConfig *c = model_config(m);
    int ctx = c->max_pos < 4 ? c->max_pos : 4;
    Session *s = session_new(m, ctx, 2, &e);
    if (!s) {
        check_err(&e, "session_new");
    } else {
        int32_t toks[2] = {0, c->vocab_size - 1};
        int n = ctx < 2 ? ctx : 2;
        const float *logits = NULL, *hidden = NULL;
        if (session_forward(s, toks, n, &logits, &hidden, &e) == 0) {
            touch(logits, (size_t)n * (size_t)c->vocab_size * sizeof *logits);
            touch(hidden, (size_t)n * (size_t)c->d_model * sizeof *hidden);
        } else {
            check_err(&e, "session_forward");
        }
        session_free(s);
    }
    model_free(m);
    return 0;
}

/* config.json SEP model.safetensors. */
static int h_model(const uint8_t *data, size_t size) { return h_model_files(data, size, "model.safetensors"); }

/* ------------------------------------------------------------------ GGUF */

/* Input starting with '{': config.json SEP model.gguf -> model_load, one forward pass over two tokens
 * (as h_model); otherwise the bytes of one model.gguf -> gguf_open, every entry's shape, numel, nbytes
 * and data range checked against the map; its metadata -> gguf_config_read; the file alone -> model_load
 * and a forward pass, and gguf_tokenizer_load and one encode. */
static int h_gguf(const uint8_t *data, size_t size) {
    if (size > 0 && data[0] == '{') return h_model_files(data, size, "model.gguf");
    char dir[512], path[1024];
    fresh_dir("gguf", dir, sizeof dir);
    write_file(dir, "model.gguf", data, size, path, sizeof path);
    StArchive a;
    SpErr e = {{0}};
    if (gguf_open(path, &a, &e) != 0) {
        check_err(&e, "gguf_open");
        SP_FUZZ_CHECK(a.entries == NULL && a.files == NULL, "gguf_open failed but left the archive allocated");
        return 0;
    }
    SP_FUZZ_CHECK(a.gguf == 1 && a.n_files == 1, "gguf_open: gguf %d, %d files", a.gguf, a.n_files);
    const unsigned char *base = a.files[0].map;
    for (int i = 0; i < a.n_entries; i++) {
        const StEntry *t = &a.entries[i];
        SP_FUZZ_CHECK(t->ndim >= 1 && t->ndim <= 4, "tensor %s: ndim %d", t->name, t->ndim);
        int64_t numel = 1;
        for (int k = 0; k < t->ndim; k++) {
            SP_FUZZ_CHECK(t->shape[k] >= 1, "tensor %s: dim %d < 1", t->name, k);
            numel *= t->shape[k];
        }
        int q8 = t->dtype == ST_Q8_0;
        SP_FUZZ_CHECK(t->dtype == ST_F32 || t->dtype == ST_F16 || t->dtype == ST_BF16 || q8, "tensor %s: dtype %s",
                      t->name, st_dtype_name(t->dtype));
        SP_FUZZ_CHECK(!q8 || t->shape[t->ndim - 1] % Q8_0_BLOCK == 0, "tensor %s: Q8_0 rows not whole blocks", t->name);
        size_t want = q8 ? (size_t)numel / Q8_0_BLOCK * sizeof(BlockQ8_0) : (size_t)numel * st_dtype_size(t->dtype);
        SP_FUZZ_CHECK(numel == t->numel && t->nbytes == want, "tensor %s: numel/nbytes disagree with the shape", t->name);
        SP_FUZZ_CHECK(st_find(&a, t->name) == t, "tensor %s: st_find does not find it", t->name);
        SP_FUZZ_CHECK(t->file_index == 0 && t->owned == NULL, "tensor %s: not borrowed from the one file", t->name);
        const unsigned char *p = t->data;
        SP_FUZZ_CHECK(p >= base && t->nbytes <= a.files[0].size && p - base <= (ptrdiff_t)(a.files[0].size - t->nbytes),
                      "tensor %s: data outside the file", t->name);
        size_t elem = q8 ? _Alignof(BlockQ8_0) : st_dtype_size(t->dtype);
        SP_FUZZ_CHECK((uintptr_t)p % elem == 0, "tensor %s: misaligned for its dtype", t->name);
        touch(p, t->nbytes);
    }
    GgufMeta meta;
    if (gguf_meta_read(&a, &meta, &e) == 0) { /* the metadata a file alone is read by */
        ModelConfig c;
        if (gguf_config_read(&a, &meta, &c, &e) == 0) config_free(&c);
        else check_err(&e, "gguf_config_read");
        gguf_meta_free(&meta);
    } else {
        check_err(&e, "gguf_meta_read");
    }
    st_close(&a);
    /* the file alone as a model (config from its metadata) and its tokenizer (tokenizer.ggml.*) */
    load_and_forward(path);
    Tokenizer *tk = gguf_tokenizer_load(path, &e);
    if (tk) {
        int32_t *ids = NULL;
        size_t n = 0;
        if (tokenizer_encode(tk, "a b<|endoftext|>", 16, 0, &ids, &n, &e) == 0) free(ids);
        else check_err(&e, "tokenizer_encode");
        tokenizer_free(tk);
    } else {
        check_err(&e, "gguf_tokenizer_load");
    }
    return 0;
}

/* ------------------------------------------------------------------ tokenizers */

static const char *const kSamples[] = {
    "Hello world", " leading space", "two  spaces\tand\nnewlines\r\n", "", "a", "\xff\xfe invalid \xc3",
    "\xe2\x96\x81marker", "<|endoftext|> <s> </s> <unk>", "caf\xc3\xa9 \xe4\xb8\xad\xe6\x96\x87 \xf0\x9f\x98\x80",
    "'s 're 've 123 4567 !!!",
};
#define N_SAMPLES (int)(sizeof kSamples / sizeof kSamples[0])

/* encode (TOK_ENC_* flags) -> every id in the vocabulary -> decode succeeds; returns the decoded
 * text (malloc'd). */
static char *encode_decode(const Tokenizer *t, const char *text, size_t len, unsigned flags, size_t *out_len) {
    int32_t *ids = NULL;
    size_t n = 0;
    SpErr e = {{0}};
    if (tokenizer_encode_flags(t, text, len, flags, &ids, &n, &e) != 0) {
        check_err(&e, "tokenizer_encode");
        return NULL;
    }
    int V = tokenizer_vocab_size(t);
    for (size_t i = 0; i < n; i++)
        SP_FUZZ_CHECK(ids[i] >= 0 && ids[i] < V && tokenizer_token_str(t, ids[i]) != NULL,
                      "encode produced id %d (vocab size %d) at %zu", (int)ids[i], V, i);
    char *out = NULL;
    size_t olen = 0;
    int rc = tokenizer_decode(t, ids, n, 0, &out, &olen, &e);
    SP_FUZZ_CHECK(rc == 0, "decode of encoded ids failed: %s", e.msg);
    SP_FUZZ_CHECK(strlen(out) <= olen && out[olen] == '\0', "decoded text not NUL-terminated");
    free(ids);
    *out_len = olen;
    return out;
}

/* GPT-2 byte-level BPE is lossless: decode(encode(x)) == x (" " + x with add_prefix_space when x does
 * not start with a space), special tokens encoded as text (a split-out one would start a stretch of
 * its own, with its own prefix space). */
static void check_gpt2_roundtrip(const Tokenizer *t, const char *text, size_t len, int prefix_space) {
    size_t olen;
    char *out = encode_decode(t, text, len, TOK_ENC_SPECIAL_AS_TEXT, &olen);
    if (!out) return;
    int pre = prefix_space && len > 0 && text[0] != ' ';
    SP_FUZZ_CHECK(olen == len + (size_t)pre && (!pre || out[0] == ' ') && memcmp(out + pre, text, len) == 0,
                  "GPT-2 round trip changed %zu bytes into %zu bytes", len, olen);
    free(out);
}

static void exercise(const Tokenizer *t) {
    SP_FUZZ_CHECK(tokenizer_vocab_size(t) >= 1, "empty vocabulary accepted");
    int V = tokenizer_vocab_size(t);
    SP_FUZZ_CHECK(tokenizer_bos_id(t) < V && tokenizer_eos_id(t) < V, "bos/eos outside the vocabulary");
    for (int i = 0; i < N_SAMPLES; i++) {
        size_t olen;
        unsigned flags = (i & 1 ? TOK_ENC_BOS : 0u) | (i & 2 ? TOK_ENC_SPECIAL_AS_TEXT : 0u);
        char *out = encode_decode(t, kSamples[i], strlen(kSamples[i]), flags, &olen);
        free(out);
    }
    char *text = NULL;
    size_t len;
    SpErr e = {{0}};
    int32_t bad[2] = {0, V};
    SP_FUZZ_CHECK(tokenizer_decode(t, bad, 2, 0, &text, &len, &e) != 0, "decode accepted id %d = vocab size", V);
    check_err(&e, "tokenizer_decode");
    int32_t neg = -1;
    SP_FUZZ_CHECK(tokenizer_decode(t, &neg, 1, 1, &text, &len, &e) != 0, "decode accepted id -1");
}

/* Any tokenizer.json (tokenizer_load_dir picks it up). */
static int h_tokenizer_json(const uint8_t *data, size_t size) {
    char dir[512], path[1024];
    fresh_dir("tokenizer_json", dir, sizeof dir);
    write_file(dir, "tokenizer.json", data, size, path, sizeof path);
    SpErr e = {{0}};
    Tokenizer *t = tokenizer_load_dir(dir, &e);
    if (!t) {
        check_err(&e, "tokenizer_load_dir");
        return 0;
    }
    exercise(t);
    tokenizer_free(t);
    return 0;
}

/* vocab.json SEP merges.txt. */
static int h_gpt2_files(const uint8_t *data, size_t size) {
    char dir[512], vpath[1024], mpath[1024];
    fresh_dir("gpt2_files", dir, sizeof dir);
    size_t n1, off2;
    split2(data, size, &n1, &off2);
    write_file(dir, "vocab.json", data, n1, vpath, sizeof vpath);
    write_file(dir, "merges.txt", data + off2, size - off2, mpath, sizeof mpath);
    SpErr e = {{0}};
    Tokenizer *t = tokenizer_load_gpt2_files(vpath, mpath, &e);
    if (!t) {
        check_err(&e, "tokenizer_load_gpt2_files");
        return 0;
    }
    exercise(t);
    for (int i = 0; i < N_SAMPLES; i++) check_gpt2_roundtrip(t, kSamples[i], strlen(kSamples[i]), 0);
    tokenizer_free(t);
    return 0;
}

/* Fixture tokenizers, loaded once. */
enum { FX_GPT2, FX_GPT2_JSON, FX_GPT2_PREFIX, FX_LLAMA, FX_LLAMA_METASPACE, FX_COUNT };
static Tokenizer *g_fx[FX_COUNT];

void sp_fuzz_set_fixtures(const char *dir) { snprintf(g_fixtures, sizeof g_fixtures, "%s", dir); }

static const Tokenizer *fixture(int which) {
    static const char *const kDirs[FX_COUNT] = {"gpt2", "gpt2_json", "gpt2_prefix", "llama", "llama_metaspace"};
    if (!g_fx[which]) {
        if (!g_fixtures[0]) {
            const char *env = getenv("SP_FIXTURES");
            sp_fuzz_set_fixtures(env && *env ? env : SP_FIXTURES_DIR);
        }
        char dir[1200];
        snprintf(dir, sizeof dir, "%s/%s", g_fixtures, kDirs[which]);
        SpErr e = {{0}};
        g_fx[which] = tokenizer_load_dir(dir, &e);
        if (!g_fx[which]) {
            fprintf(stderr, "fuzz harness: cannot load the fixture tokenizer: %s\n", e.msg);
            abort();
        }
    }
    return g_fx[which];
}

/* First byte picks the fixture (gpt2, gpt2_json, gpt2_prefix); the rest is the text. */
static int h_bpe_gpt2(const uint8_t *data, size_t size) {
    if (size == 0) return 0;
    int which = data[0] % 3;
    const Tokenizer *t = fixture(which == 0 ? FX_GPT2 : which == 1 ? FX_GPT2_JSON : FX_GPT2_PREFIX);
    check_gpt2_roundtrip(t, (const char *)data + 1, size - 1, which == 2);
    return 0;
}

/* Does s[0..n) contain "▁" (U+2581), which decodes to a space? */
static int has_marker(const char *s, size_t n) {
    for (size_t i = 0; i + 3 <= n; i++)
        if (memcmp(s + i, "\xE2\x96\x81", 3) == 0) return 1;
    return 0;
}

/* First byte picks the fixture (llama: Prepend + Replace normalizer, Strip decoder; llama_metaspace)
 * and add_bos; the rest is the text. Byte fallback makes both lossless except for text holding "▁"
 * (decodes to a space) and, with Metaspace, a leading space (the decoder strips it). */
static int h_bpe_llama(const uint8_t *data, size_t size) {
    if (size == 0) return 0;
    int meta = data[0] & 1, add_bos = (data[0] >> 1) & 1;
    const Tokenizer *t = fixture(meta ? FX_LLAMA_METASPACE : FX_LLAMA);
    const char *text = (const char *)data + 1;
    size_t len = size - 1;
    int32_t *ids = NULL;
    size_t n = 0;
    SpErr e = {{0}};
    /* special tokens as text: a split-out "<s>" would not decode back to the same text */
    if (tokenizer_encode_flags(t, text, len, (add_bos ? TOK_ENC_BOS : 0u) | TOK_ENC_SPECIAL_AS_TEXT, &ids, &n, &e) != 0) {
        check_err(&e, "tokenizer_encode");
        return 0;
    }
    int V = tokenizer_vocab_size(t);
    for (size_t i = 0; i < n; i++)
        SP_FUZZ_CHECK(ids[i] >= 0 && ids[i] < V, "encode produced id %d (vocab size %d)", (int)ids[i], V);
    size_t skip = 0;
    if (add_bos && tokenizer_bos_id(t) >= 0) {
        SP_FUZZ_CHECK(n >= 1 && ids[0] == tokenizer_bos_id(t), "add_bos without BOS first");
        skip = 1;
    }
    char *out = NULL;
    size_t olen = 0;
    int rc = tokenizer_decode(t, ids + skip, n - skip, 0, &out, &olen, &e);
    SP_FUZZ_CHECK(rc == 0, "decode of encoded ids failed: %s", e.msg);
    if (!has_marker(text, len)) {
        size_t drop = meta && len > 0 && text[0] == ' ';
        SP_FUZZ_CHECK(olen + drop == len && memcmp(out, text + drop, olen) == 0,
                      "Llama round trip changed %zu bytes into %zu bytes", len, olen);
    }
    free(out);
    free(ids);
    return 0;
}

/* ------------------------------------------------------------------ sweep spec (INI) */

/* Runs the grid would expand to (before duplicate removal), saturating at cap. */
static long grid_size(const SweepSpec *s, long cap) {
    long total = 0;
    for (int m = 0; m < s->n_methods; m++) {
        long k = (long)s->n_datasets * s->n_seeds;
        unsigned applies = method_params(s->methods[m]);
        for (int p = 0; p < RP_COUNT && k <= cap; p++)
            if ((applies & (1u << p)) && s->grid[p].n > 0) k *= s->grid[p].n;
        total += k;
        if (total > cap) return cap + 1;
    }
    return total;
}

static int h_spec(const uint8_t *data, size_t size) {
    char dir[512], path[1024];
    fresh_dir("spec", dir, sizeof dir);
    write_file(dir, "spec.ini", data, size, path, sizeof path);
    static SweepSpec s; /* large */
    SpErr e = {{0}};
    if (spec_load(path, &s, &e) != 0) {
        check_err(&e, "spec_load");
        return 0;
    }
    SP_FUZZ_CHECK(s.n_methods >= 1 && s.n_datasets >= 1 && s.n_prompts >= 1 && s.max_new >= 1,
                  "spec_load accepted a spec without methods/datasets/n_prompts/max_new");
    /* spec_expand without spec_resolve: fake content hashes. Grids over 100000 runs must be refused
     * (at once, before allocating: fuzz/regressions/spec/grid-64x64x64x64.ini); grids between 2000
     * and that limit are valid but too slow to expand on every fuzz input, so they are skipped. */
    snprintf(s.sha256, sizeof s.sha256, "%064d", 0);
    snprintf(s.draft_sha256, sizeof s.draft_sha256, "%064d", 1);
    snprintf(s.target_sha256, sizeof s.target_sha256, "%064d", 2);
    for (int i = 0; i < s.n_datasets; i++) snprintf(s.data_sha256[i], sizeof s.data_sha256[i], "%064d", 3 + i);
    snprintf(s.ver_data_sha256, sizeof s.ver_data_sha256, "%064d", 99);
    long grid = grid_size(&s, 100000);
    if (grid > 2000 && grid <= 100000) return 0;
    RunConfig *runs = NULL;
    int n = 0;
    if (spec_expand(&s, &runs, &n, &e) != 0) {
        check_err(&e, "spec_expand");
        return 0;
    }
    SP_FUZZ_CHECK(grid <= 100000, "spec_expand accepted a grid of more than 100000 runs");
    for (int i = 0; i < n; i++) {
        SP_FUZZ_CHECK(runs[i].index == i && strlen(runs[i].hash) == 64, "run %d: bad index or hash", i);
        SP_FUZZ_CHECK(runs[i].dc.max_new == s.max_new, "run %d: max_new changed", i);
        char label[256];
        run_params_label(&runs[i], label, sizeof label);
    }
    free(runs);
    return 0;
}

/* ------------------------------------------------------------------ HDF5 readers */

static const struct {
    const char *name;
    H5ColType type;
} kCols[] = {
    {"run_id", H5C_I64}, {"prompt_index", H5C_I32}, {"pos", H5C_I32}, {"token", H5C_I32},
    {"draft_token", H5C_I32}, {"q", H5C_F32}, {"p", H5C_F32}, {"score", H5C_F32},
    {"decision", H5C_I8}, {"label", H5C_I8}, {"target_called", H5C_I8}, {"kind", H5C_I8},
    {"hidden", H5C_F32}, {"dtv_pq", H5C_F64}, {"q", H5C_F64}, {"token", H5C_I64},
};

static size_t col_size(H5ColType t) {
    switch (t) {
    case H5C_F32: return 4;
    case H5C_F64: return 8;
    case H5C_I32: return 4;
    case H5C_I64: return 8;
    case H5C_I8: return 1;
    }
    return 1;
}

static int h_h5(const uint8_t *data, size_t size) {
    char dir[512], path[1024];
    fresh_dir("h5", dir, sizeof dir);
    write_file(dir, "x.h5", data, size, path, sizeof path);
    SpErr e = {{0}};
    static const char *const kStrAttrs[] = {"format", "run_hash", "method", "config", "draft_sha256", "kinds"};
    static const char *const kNumAttrs[] = {"lambda", "version", "n_prompts"};
    /* as every in-process reader of an HDF5 file does (experiments/verifier_train.c): the checked
     * pass first, where a libhdf5 crash is a one-line error, then the read */
    enum { kNAttrs = sizeof kStrAttrs / sizeof *kStrAttrs + sizeof kNumAttrs / sizeof *kNumAttrs,
           kNCols = sizeof kCols / sizeof *kCols };
    const char *attrs[kNAttrs];
    H5Probe probes[kNCols];
    for (size_t i = 0; i < sizeof kStrAttrs / sizeof *kStrAttrs; i++) attrs[i] = kStrAttrs[i];
    for (size_t i = 0; i < sizeof kNumAttrs / sizeof *kNumAttrs; i++) attrs[sizeof kStrAttrs / sizeof *kStrAttrs + i] = kNumAttrs[i];
    for (size_t i = 0; i < kNCols; i++) probes[i] = (H5Probe){kCols[i].name, kCols[i].type};
    if (h5_checked_probe(path, attrs, kNAttrs, probes, kNCols, &e) != 0) {
        check_err(&e, "h5_checked_probe");
        return 0;
    }
    hid_t f = h5_open_read(path, &e);
    if (f < 0) {
        check_err(&e, "h5_open_read");
        return 0;
    }
    char buf[256];
    double d;
    for (size_t i = 0; i < sizeof kStrAttrs / sizeof *kStrAttrs; i++) {
        memset(&e, 0, sizeof e);
        if (h5_read_attr_str(f, path, kStrAttrs[i], buf, sizeof buf, &e) != 0) check_err(&e, "h5_read_attr_str");
        else SP_FUZZ_CHECK(strlen(buf) < sizeof buf, "attribute overflows its buffer");
    }
    for (size_t i = 0; i < sizeof kNumAttrs / sizeof *kNumAttrs; i++) {
        memset(&e, 0, sizeof e);
        if (h5_read_attr_f64(f, path, kNumAttrs[i], &d, &e) != 0) check_err(&e, "h5_read_attr_f64");
    }
    for (size_t i = 0; i < sizeof kCols / sizeof *kCols; i++) {
        void *col = NULL;
        int64_t rows = -1;
        int width = -1;
        memset(&e, 0, sizeof e);
        if (h5_read_column(f, path, kCols[i].name, kCols[i].type, &col, &rows, &width, &e) != 0) {
            check_err(&e, "h5_read_column");
            continue;
        }
        SP_FUZZ_CHECK(rows >= 0 && width >= 1, "column %s: rows %lld width %d", kCols[i].name, (long long)rows, width);
        touch(col, (size_t)rows * (size_t)width * col_size(kCols[i].type));
        free(col);
    }
    H5Fclose(f);
    return 0;
}

/* The reader of token logs (records/tokenlog.c). */
static int h_tokread(const uint8_t *data, size_t size) {
    char dir[512], path[1024];
    fresh_dir("tokread", dir, sizeof dir);
    write_file(dir, "x.h5", data, size, path, sizeof path);
    TokenRows t;
    SpErr e = {{0}};
    if (tokrows_read(path, NULL, &t, &e) != 0) { /* the checked reader: a libhdf5 crash is an error */
        check_err(&e, "tokrows_read");
        SP_FUZZ_CHECK(t.n == 0 && !t.prompt_index && !t.q && !t.kind, "failed read left columns behind");
        return 0;
    }
    size_t n = (size_t)t.n;
    SP_FUZZ_CHECK(t.n >= 0, "negative row count");
    touch(t.prompt_index, 4 * n), touch(t.pos, 4 * n), touch(t.token, 4 * n), touch(t.draft_token, 4 * n);
    touch(t.q, 4 * n), touch(t.p, 4 * n), touch(t.score, 4 * n);
    touch(t.decision, n), touch(t.label, n), touch(t.target_called, n), touch(t.kind, n);
    SP_FUZZ_CHECK(strlen(t.run_hash) < sizeof t.run_hash, "run_hash overflows");
    tokrows_free(&t);
    return 0;
}

/* ------------------------------------------------------------------ datasets */

/* First byte: format (b % 5: inferred, jsonl, specbench, lm1b, wikisum), file extension
 * ((b / 5) % 4: .jsonl .csv .txt .json) and max_n ((b / 20) % 3: all, 1, 5); the rest is the file. */
static int h_dataset(const uint8_t *data, size_t size) {
    if (size == 0) return 0;
    static const char *const kFmt[] = {NULL, "jsonl", "specbench", "lm1b", "wikisum"};
    static const char *const kExt[] = {"d.jsonl", "d.csv", "d.txt", "d.json"};
    static const int kMax[] = {0, 1, 5};
    int b = data[0];
    char dir[512], path[1024];
    fresh_dir("dataset", dir, sizeof dir);
    write_file(dir, kExt[(b / 5) % 4], data + 1, size - 1, path, sizeof path);
    Dataset ds;
    SpErr e = {{0}};
    int max_n = kMax[(b / 20) % 3];
    if (dataset_load(path, kFmt[b % 5], max_n, &ds, &e) != 0) {
        check_err(&e, "dataset_load");
        SP_FUZZ_CHECK(ds.n == 0 && ds.ex == NULL, "failed load left examples behind");
        return 0;
    }
    SP_FUZZ_CHECK(ds.n >= 1 && (max_n == 0 || ds.n <= max_n), "%d examples with max_n %d", ds.n, max_n);
    for (int i = 0; i < ds.n; i++) {
        const Example *x = &ds.ex[i];
        SP_FUZZ_CHECK(x->id && x->prompt && x->reference && x->source && x->category, "example %d has a NULL field", i);
        touch(x->id, strlen(x->id) + 1);
        touch(x->prompt, strlen(x->prompt) + 1);
        touch(x->reference, strlen(x->reference) + 1);
        touch(x->category, strlen(x->category) + 1);
        /* a later turn continues the conversation that ends right before it */
        SP_FUZZ_CHECK(x->turn >= 0 && x->turn <= i && (x->turn == 0 || ds.ex[i - 1].turn == x->turn - 1),
                      "example %d: turn %d does not follow its conversation", i, x->turn);
    }
    dataset_free(&ds);
    return 0;
}

/* A chat template (the bytes) rendered for a fixed conversation: it renders or fails with one line. */
static int h_chat_template(const uint8_t *data, size_t size) {
    char *tmpl = malloc(size + 1);
    if (!tmpl) return 0;
    memcpy(tmpl, data, size);
    tmpl[size] = '\0';
    static const ChatMessage msgs[] = {{"system", "Be brief."}, {"user", "Hello \xc3\xa9"}, {"assistant", " Hi "},
                                       {"user", "Bye"}};
    ChatVars vars = {"<s>", "</s>", "<unk>", NULL, (int)(size & 1)};
    SpErr e = {{0}};
    char *out = chat_template_render(tmpl, msgs, 4, &vars, &e);
    if (!out) {
        SP_FUZZ_CHECK(e.msg[0] != '\0', "chat_template_render failed without a message");
        SP_FUZZ_CHECK(strchr(e.msg, '\n') == NULL, "chat_template error has a newline: %s", e.msg);
    }
    free(out);
    free(tmpl);
    return 0;
}

/* ------------------------------------------------------------------ the table */

const SpFuzzTarget sp_fuzz_targets[] = {
    {"safetensors", h_safetensors}, {"config", h_config},       {"model", h_model},
    {"tokenizer_json", h_tokenizer_json}, {"gpt2_files", h_gpt2_files}, {"bpe_gpt2", h_bpe_gpt2},
    {"bpe_llama", h_bpe_llama},     {"spec", h_spec},           {"h5", h_h5},
    {"tokread", h_tokread},         {"dataset", h_dataset},     {"chat_template", h_chat_template},
    {"gguf", h_gguf},
};
const int sp_fuzz_n_targets = (int)(sizeof sp_fuzz_targets / sizeof sp_fuzz_targets[0]);

const SpFuzzTarget *sp_fuzz_find(const char *name) {
    for (int i = 0; i < sp_fuzz_n_targets; i++)
        if (!strcmp(sp_fuzz_targets[i].name, name)) return &sp_fuzz_targets[i];
    return NULL;
}
