/* methods.h - the decoding methods: their ids, names and classes, defined once.
 * Header-only (no code to link), so the analysis may include it without linking model code;
 * what each method does is in decoding.h.
 *
 * Classes (each method's membership is its row of SP_METHODS below):
 *   USES_DRAFT        runs the draft model (every method but ar)
 *   USES_TARGET       runs the target model (every method but draft)
 *   NEEDS_VERIFIER    needs a trained verifier (sprinter, specdecpp)
 *   DECIDES           a verifier or stopping head makes a decision per drafted token, so the audit
 *                     counts its confusion (sprinter, specdecpp, oracle-iid, oracle-markov)
 *   SEQUENTIAL        SPRINTER's scheme: one draft token at a time, a verifier accept emits it
 *                     without the target, a reject calls the target; the decisions cut into blocks
 *                     (Theorems 3.1-3.4) (sprinter, oracle-iid, oracle-markov; not specdecpp, whose
 *                     decisions only stop drafting before a lossless verification)
 *   LOSSLESS          the output law is exactly the target's (ar, sd, pmin, specdecpp; not the lossy
 *                     block methods typical, fsd, optimal-lossy, whose law is exact but shifted:
 *                     decoding.h typical_next_token_law and its neighbours)
 *   CONFIDENCE        a rule on the draft's confidence, the top probability of its plain softmax
 *                     (sampling.h sampler_top_prob), whatever the decoding temperature (bild, pmin)
 *   NEEDS_JUDGE       needs a judge head: a verifier on the TARGET's hidden state (judge;
 *                     decoder_set_judge), unless tau_judge > 1 (the judge never accepts: plain sd)
 *   LOSSY_PEER        a lossy verifier of sd's blocks (one target call per block), compared with
 *                     SPRINTER at equal shift (analysis/peers.h): typical, fsd, optimal-lossy, judge
 */
#ifndef SP_METHODS_H
#define SP_METHODS_H

#include <string.h>

enum {
    MC_USES_DRAFT = 1u << 0,
    MC_USES_TARGET = 1u << 1,
    MC_NEEDS_VERIFIER = 1u << 2,
    MC_DECIDES = 1u << 3,
    MC_SEQUENTIAL = 1u << 4,
    MC_LOSSLESS = 1u << 5,
    MC_CONFIDENCE = 1u << 6,
    MC_NEEDS_JUDGE = 1u << 7,
    MC_LOSSY_PEER = 1u << 8,
};

#define MC_BOTH (MC_USES_DRAFT | MC_USES_TARGET)
/* The methods, one row each: X(ID, name, MC_* classes, family). The family names the file that runs
 * it: engine/decode/method_<family>.c defines kDecode<Family> (decoder_int.h), and a family's
 * methods differ by a rule inside that file (who decides, when drafting stops).
 *   Target, Draft  method_single.c      Bild        method_bild.c
 *   Block          method_sd.c          Sequential  method_sprinter.c
 * DecodeMethod values follow the row order; names are what specs, the CLI and the results use. */
#define SP_METHODS(X)                                                                                        \
    X(AR, "ar", MC_USES_TARGET | MC_LOSSLESS, Target)                                                          \
    X(DRAFT, "draft", MC_USES_DRAFT, Draft)                                                                    \
    X(SD, "sd", MC_BOTH | MC_LOSSLESS, Block)                                                                  \
    X(SPRINTER, "sprinter", MC_BOTH | MC_NEEDS_VERIFIER | MC_DECIDES | MC_SEQUENTIAL, Sequential)              \
    X(BILD, "bild", MC_BOTH | MC_CONFIDENCE, Bild)                                                             \
    X(PMIN, "pmin", MC_BOTH | MC_LOSSLESS | MC_CONFIDENCE, Block)                                              \
    X(SPECDECPP, "specdecpp", MC_BOTH | MC_NEEDS_VERIFIER | MC_DECIDES | MC_LOSSLESS, Block)                   \
    X(ORACLE_IID, "oracle-iid", MC_BOTH | MC_DECIDES | MC_SEQUENTIAL, Sequential)                              \
    /* verifier-data collection: every draft token goes to the target (SD, gamma 1) */                         \
    X(COLLECT, "collect", MC_BOTH, Sequential)                                                                 \
    /* oracle with correlated errors (see oracle_stay) */                                                      \
    X(ORACLE_MARKOV, "oracle-markov", MC_BOTH | MC_DECIDES | MC_SEQUENTIAL, Sequential)                        \
    /* lossy verification of an sd block (one target call per block; rules and laws in lossy_law.c): */        \
    /* Medusa's typical acceptance: accept x iff p(x) > min(typical_eps, typical_alpha exp(-H(p))) */          \
    X(TYPICAL, "typical", MC_BOTH | MC_LOSSY_PEER, Block)                                                      \
    /* fuzzy SD: accept x outright iff D(p, q) <= fsd_threshold, else the SD test */                           \
    X(FSD, "fsd", MC_BOTH | MC_LOSSY_PEER, Block)                                                              \
    /* Tran-Thien's mentored decoding: SD against r = argmax_r sum min(q, r) s.t. KL(r || p) <= lossy_kl */    \
    X(OPTIMAL_LOSSY, "optimal-lossy", MC_BOTH | MC_LOSSY_PEER, Block)                                          \
    /* Judge Decoding (Bachmann et al., ICLR 2025): sd whose rejected drafts a head on the target's */        \
    /* state may still keep (method_sd.c) */                                                                   \
    X(JUDGE, "judge", MC_BOTH | MC_LOSSY_PEER | MC_NEEDS_JUDGE | MC_DECIDES, Block)

#define SP_METHOD_ENUM_(id, name, classes, family) DM_##id,
typedef enum { SP_METHODS(SP_METHOD_ENUM_) DM_COUNT } DecodeMethod;
#undef SP_METHOD_ENUM_

typedef struct MethodInfo {
    const char *name;
    unsigned classes; /* MC_* bits */
} MethodInfo;

#define SP_METHOD_INFO_(id, name, classes, family) [DM_##id] = {name, classes},
static const MethodInfo kMethods[DM_COUNT] = {SP_METHODS(SP_METHOD_INFO_)};
#undef SP_METHOD_INFO_

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
