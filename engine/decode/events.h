/* events.h - what the decoder records for every emitted token: the row of a token log.
 * Header-only, so the analysis may include it without linking model code. The on-disk layout of
 * these rows (records/tokenlog.h) is defined from this struct.
 */
#ifndef SP_EVENTS_H
#define SP_EVENTS_H

#include <stdint.h>

typedef enum {
    EV_TARGET_SAMPLE = 0,   /* sampled from p directly (ar, bild fallback, pmin with 0 drafts) */
    EV_DRAFT_SAMPLE = 1,    /* sampled from q, never checked (draft, bild confident) */
    EV_VERIFIER_ACCEPT = 2, /* draft token accepted by the verifier, no target */
    EV_SD_ACCEPT = 3,       /* draft token accepted by min(1, p/q) */
    EV_SD_RESAMPLE = 4,     /* draft token rejected, replacement drawn from norm(max(p - q, 0)) */
    EV_BONUS = 5,           /* all drafts accepted, extra token from p */
    /* the lossy block methods (typical, fsd, optimal-lossy; lossy_law.c). Each of them draws SD's
     * uniform u at every drafted token it checks, so SD's test u q(x) < p(x) is known beside the
     * method's own rule; a token both accept is EV_SD_ACCEPT. */
    EV_LOSSY_ACCEPT = 6,    /* draft token accepted by the lossy rule where SD's test with the same u rejects it */
    EV_LOSSY_RESAMPLE = 7,  /* draft token rejected by the lossy rule, replacement drawn from the rule's
                             * law (typical: p; optimal-lossy: norm(max(r - q, 0))), not SD's residual */
    EV_KIND_COUNT
} EventKind;

/* The legend of EventKind, as stored in the token log's "kinds" attribute. */
#define EV_KIND_LEGEND                                                                                       \
    "0 target_sample, 1 draft_sample, 2 verifier_accept, 3 sd_accept, 4 sd_resample, 5 bonus, 6 lossy_accept, " \
    "7 lossy_resample"

typedef struct TokenEvent {
    int32_t pos;          /* position of the emitted token in the full sequence */
    int32_t token;        /* emitted token */
    int32_t draft_token;  /* token the draft proposed here, -1 if none */
    float q;              /* q(draft_token), NaN if none */
    float p;              /* p(draft_token), NaN if unknown */
    float score;          /* verifier score, NaN if none */
    int8_t decision;      /* verifier / stopping head: 1 accept, 0 reject, -1 none */
    int8_t label;         /* true label q/p <= lambda: 1, 0, or -1 when p is unknown */
    int8_t target_called; /* the target ran to decide this token */
    int8_t kind;          /* EventKind */
    int8_t capped;        /* 1: a cap on consecutive verifier accepts (max_run) made the target decide
                           * this token whatever the verifier said; 0 otherwise */
    float q_raw, p_raw;   /* under the paper-code label rule: q and p of draft_token from the plain
                           * softmax at temperature 1, the figures label was computed from
                           * (label = [q_raw <= lambda p_raw]); NaN otherwise */
} TokenEvent;

#endif
