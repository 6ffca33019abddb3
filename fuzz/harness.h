/* harness.h - the parser harnesses shared by the libFuzzer targets (fuzz/fuzz_main.c, built by
 * fuzz/Makefile with clang) and the CTest replay of fuzz/regressions and fuzz/corpus
 * (tests/replay_inputs.c, built normally, under ASan in the sanitizer build).
 *
 * Each harness takes arbitrary bytes, writes them to a file in a private temporary directory when
 * the API wants a path, runs the parser and frees what it got. A parser may accept or reject the
 * input; rejecting it must give a one-line error naming a file. A harness calls abort() (via
 * SP_FUZZ_CHECK) only when a property is violated (a crash or a sanitizer report is the other
 * failure), so every input in fuzz/regressions must replay to a clean return.
 *
 * Not thread-safe (a static temporary directory and fixture cache). */
#ifndef SP_FUZZ_HARNESS_H
#define SP_FUZZ_HARNESS_H

#include <stddef.h>
#include <stdint.h>

typedef int (*SpFuzzFn)(const uint8_t *data, size_t size);

typedef struct SpFuzzTarget {
    const char *name; /* also the directory name under fuzz/corpus and fuzz/regressions */
    SpFuzzFn fn;
} SpFuzzTarget;

extern const SpFuzzTarget sp_fuzz_targets[];
extern const int sp_fuzz_n_targets;

/* The target called name, or NULL. */
const SpFuzzTarget *sp_fuzz_find(const char *name);

/* Directory of tests/tokenizer/fixtures (default: the compile-time SP_FIXTURES_DIR, overridden by
 * the environment variable SP_FIXTURES). */
void sp_fuzz_set_fixtures(const char *dir);

/* Separator of the two files in a two-file input (vocab.json / merges.txt, config.json /
 * model.safetensors): everything before the first occurrence is the first file. */
#define SP_FUZZ_SEP "\n=====\n"

#endif
