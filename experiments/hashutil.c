#include "hashutil.h"

#include "fsutil.h"

#include <dirent.h>
#include <errno.h>
#include <nettle/sha2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void to_hex(const uint8_t *d, char out[SP_SHA256_HEX]) {
    for (int i = 0; i < SHA256_DIGEST_SIZE; i++) sprintf(out + 2 * i, "%02x", d[i]);
    out[64] = '\0';
}

static int hash_into(struct sha256_ctx *c, const char *path, SpErr *err) {
    FILE *f = sp_fopen_input(path, err);
    if (!f) return -1;
    static const size_t kBuf = 1 << 20;
    uint8_t *buf = malloc(kBuf);
    if (!buf) {
        fclose(f);
        return sp_fail(err, "out of memory");
    }
    size_t n;
    while ((n = fread(buf, 1, kBuf, f)) > 0) sha256_update(c, n, buf);
    int bad = ferror(f);
    free(buf);
    fclose(f);
    return bad ? sp_fail(err, "%s: read error: %s", path, strerror(errno ? errno : EIO)) : 0;
}

int sha256_file(const char *path, char out[SP_SHA256_HEX], SpErr *err) {
    struct sha256_ctx c;
    sha256_init(&c);
    if (hash_into(&c, path, err)) return -1;
    uint8_t d[SHA256_DIGEST_SIZE];
    sha256_digest(&c, sizeof d, d);
    to_hex(d, out);
    return 0;
}

void sha256_str(const char *s, size_t len, char out[SP_SHA256_HEX]) {
    struct sha256_ctx c;
    sha256_init(&c);
    sha256_update(&c, len, (const uint8_t *)s);
    uint8_t d[SHA256_DIGEST_SIZE];
    sha256_digest(&c, sizeof d, d);
    to_hex(d, out);
}

static int wanted(const char *name) {
    size_t n = strlen(name);
    static const char *const exact[] = {"config.json", "tokenizer.json", "vocab.json", "merges.txt",
                                        "encoder.json", "vocab.bpe", "model.safetensors.index.json",
                                        "tokenizer_config.json", "chat_template.jinja"};
    for (size_t i = 0; i < sizeof exact / sizeof exact[0]; i++)
        if (!strcmp(name, exact[i])) return 1;
    return (n > 12 && !strcmp(name + n - 12, ".safetensors")) || (n > 5 && !strcmp(name + n - 5, ".gguf"));
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

int sha256_model_dir(const char *dir, char out[SP_SHA256_HEX], SpErr *err) {
    if (sp_is_gguf_file(dir)) return sha256_file(dir, out, err); /* its content alone: not its path */
    DIR *dh = opendir(dir);
    if (!dh) return sp_fail(err, "%s: cannot open directory: %s", dir, strerror(errno));
    char **names = NULL;
    int n = 0, cap = 0, rc = 0;
    for (struct dirent *e; (e = readdir(dh));) {
        if (!wanted(e->d_name)) continue;
        if (n == cap) {
            char **nn = realloc(names, (size_t)(cap = cap ? cap * 2 : 16) * sizeof *nn);
            if (!nn) { rc = sp_fail(err, "out of memory"); break; }
            names = nn;
        }
        if (!(names[n] = strdup(e->d_name))) { rc = sp_fail(err, "out of memory"); break; }
        n++;
    }
    closedir(dh);
    if (rc == 0 && n == 0) rc = sp_fail(err, "%s: no model files to hash", dir);
    struct sha256_ctx c;
    sha256_init(&c);
    if (rc == 0) qsort(names, (size_t)n, sizeof *names, cmp_str);
    for (int i = 0; rc == 0 && i < n; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        sha256_update(&c, strlen(names[i]) + 1, (const uint8_t *)names[i]);
        rc = hash_into(&c, path, err);
    }
    for (int i = 0; i < n; i++) free(names[i]);
    free(names);
    if (rc) return -1;
    uint8_t d[SHA256_DIGEST_SIZE];
    sha256_digest(&c, sizeof d, d);
    to_hex(d, out);
    return 0;
}

uint64_t prompt_seed(uint64_t seed, int prompt_index) {
    uint64_t z = seed + 0x9E3779B97F4A7C15ull * (uint64_t)(prompt_index + 1);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
