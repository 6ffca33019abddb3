/* dataset.h - evaluation prompts from the formats the harness meets:
 *   jsonl      our format, one {"id", "prompt", "reference", "source"} object per line
 *   specbench  Spec-Bench question.jsonl: {"question_id", "category", "turns": [first, ...]};
 *              prompt = first turn, reference empty, source = category
 *   lm1b       plain text, one sentence per line (LM1B); prompt = first ceil(30%) of the words,
 *              reference = the rest
 *   wikisum    Wiki-Summary: CSV with a header naming a text column ("summary", "text" or
 *              "article", RFC 4180 quoting) or JSONL with such a key; split like lm1b
 * A Dataset owns all its strings. Errors name the file, the line and the field. */
#ifndef SP_DATASET_H
#define SP_DATASET_H

#include "error.h"

typedef struct Example {
    char *id, *prompt, *reference, *source;
} Example;

typedef struct Dataset {
    Example *ex;
    int n;
} Dataset;

/* format: "jsonl", "specbench", "lm1b", "wikisum", or NULL to infer (".csv" -> wikisum, ".txt" ->
 * lm1b, ".jsonl"/".json": specbench when the first object has "turns", wikisum when it has a
 * summary/text/article key but no "prompt", else jsonl). max_n > 0 keeps the first max_n. */
int dataset_load(const char *path, const char *format, int max_n, Dataset *d, SpErr *err);
void dataset_free(Dataset *d);

#endif
