/* rouge.h - ROUGE-1, ROUGE-2 and ROUGE-L (F1) of a candidate text against one reference.
 *
 * Tokens are lowercased words: maximal runs of ASCII letters and digits (bytes >= 0x80 count as
 * letters, so UTF-8 words stay whole); every other byte separates words. (Google's rouge-score
 * with its default tokenizer and no stemming gives the same numbers on ASCII text.)
 *   ROUGE-N: overlap = sum over n-grams of min(count in candidate, count in reference);
 *            P = overlap / candidate n-grams, R = overlap / reference n-grams.
 *   ROUGE-L: L = length of the longest common subsequence of the two word sequences;
 *            P = L / candidate words, R = L / reference words.
 *   F1 = 2PR / (P + R), and 0 when the overlap is 0 or either side has no n-grams.
 * Pure functions; allocate temporary memory only. */
#ifndef SP_ROUGE_H
#define SP_ROUGE_H

#include "error.h"

typedef struct Rouge {
    double r1, r2, rl; /* F1 scores in [0, 1] */
} Rouge;

int rouge_f1(const char *candidate, const char *reference, Rouge *out, SpErr *err);
/* Against several acceptable answers joined by sep: each measure's best over them (as rouge-score's
 * score_multi keeps the best F1); one answer is rouge_f1. */
int rouge_f1_best(const char *candidate, const char *references, char sep, Rouge *out, SpErr *err);

#endif
