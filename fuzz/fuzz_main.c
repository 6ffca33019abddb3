/* fuzz_main.c - the libFuzzer entry point of one harness (fuzz/harness.h), chosen at compile time:
 * clang -fsanitize=fuzzer,address,undefined -DSP_FUZZ_TARGET=safetensors ... (see fuzz/Makefile). */
#include <stdio.h>
#include <stdlib.h>

#include "harness.h"

#define SP_STR2(x) #x
#define SP_STR(x) SP_STR2(x)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static const SpFuzzTarget *t;
    if (!t && !(t = sp_fuzz_find(SP_STR(SP_FUZZ_TARGET)))) {
        fprintf(stderr, "fuzz: no harness named %s\n", SP_STR(SP_FUZZ_TARGET));
        abort();
    }
    return t->fn(data, size);
}
