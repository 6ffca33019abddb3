/* methods.h - the decoding methods: their ids, names and classes, defined once.
 * Header-only (no code to link), so the analysis may include it without linking model code;
 * what each method does is in decoding.h.
 *
 * Classes (each method's membership is one line of kMethodClasses below):
 *   USES_DRAFT        runs the draft model (every method but ar)
 *   USES_TARGET       runs the target model (every method but draft)
 *   NEEDS_VERIFIER    needs a trained verifier (sprinter, specdecpp)
 *   DECIDES           a verifier or stopping head makes a decision per drafted token, so the audit
 *                     counts its confusion (sprinter, specdecpp, oracle-iid, oracle-markov)
 *   SEQUENTIAL        SPRINTER's scheme: one draft token at a time, a verifier accept emits it
 *                     without the target, a reject calls the target; the decisions cut into blocks
 *                     (Theorems 3.1-3.4) (sprinter, oracle-iid, oracle-markov; not specdecpp, whose
 *                     decisions only stop drafting before a lossless verification)
 *   LOSSLESS          the output law is exactly the target's (ar, sd, pmin, specdecpp)
 */
#ifndef SP_METHODS_H
#define SP_METHODS_H

#include <string.h>

typedef enum {
    DM_AR = 0,
    DM_DRAFT,
    DM_SD,
    DM_SPRINTER,
    DM_BILD,
    DM_PMIN,
    DM_SPECDECPP,
    DM_ORACLE_IID,
    DM_COLLECT, /* verifier-data collection: every draft token goes to the target (SD, gamma 1) */
    DM_ORACLE_MARKOV, /* oracle with correlated errors (see oracle_stay) */
    DM_COUNT
} DecodeMethod;

enum {
    MC_USES_DRAFT = 1u << 0,
    MC_USES_TARGET = 1u << 1,
    MC_NEEDS_VERIFIER = 1u << 2,
    MC_DECIDES = 1u << 3,
    MC_SEQUENTIAL = 1u << 4,
    MC_LOSSLESS = 1u << 5,
};

typedef struct MethodInfo {
    const char *name;
    unsigned classes; /* MC_* bits */
} MethodInfo;

#define MC_BOTH (MC_USES_DRAFT | MC_USES_TARGET)
static const MethodInfo kMethods[DM_COUNT] = {
    [DM_AR] = {"ar", MC_USES_TARGET | MC_LOSSLESS},
    [DM_DRAFT] = {"draft", MC_USES_DRAFT},
    [DM_SD] = {"sd", MC_BOTH | MC_LOSSLESS},
    [DM_SPRINTER] = {"sprinter", MC_BOTH | MC_NEEDS_VERIFIER | MC_DECIDES | MC_SEQUENTIAL},
    [DM_BILD] = {"bild", MC_BOTH},
    [DM_PMIN] = {"pmin", MC_BOTH | MC_LOSSLESS},
    [DM_SPECDECPP] = {"specdecpp", MC_BOTH | MC_NEEDS_VERIFIER | MC_DECIDES | MC_LOSSLESS},
    [DM_ORACLE_IID] = {"oracle-iid", MC_BOTH | MC_DECIDES | MC_SEQUENTIAL},
    [DM_COLLECT] = {"collect", MC_BOTH},
    [DM_ORACLE_MARKOV] = {"oracle-markov", MC_BOTH | MC_DECIDES | MC_SEQUENTIAL},
};
#undef MC_BOTH

static inline int method_valid(DecodeMethod m) { return m >= 0 && m < DM_COUNT; }
static inline const char *decode_method_name(DecodeMethod m) { return method_valid(m) ? kMethods[m].name : "?"; }
/* 0 and *m set when s names a method, else -1. */
static inline int decode_method_parse(const char *s, DecodeMethod *m) {
    for (int i = 0; i < DM_COUNT; i++)
        if (!strcmp(s, kMethods[i].name)) {
            *m = (DecodeMethod)i;
            return 0;
        }
    return -1;
}
/* 1 if method m is in every class of mask (MC_* bits). */
static inline int method_is(DecodeMethod m, unsigned mask) {
    return method_valid(m) && (kMethods[m].classes & mask) == mask;
}
/* The same for a method stored by name (the results database); 0 for an unknown name. */
static inline int method_name_is(const char *name, unsigned mask) {
    DecodeMethod m;
    return decode_method_parse(name, &m) == 0 && method_is(m, mask);
}

#endif
