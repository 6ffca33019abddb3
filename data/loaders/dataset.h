/* dataset.h - evaluation prompts from the formats the harness meets:
 *   jsonl      our format, one {"id", "prompt", "reference", "source"[, "category"]} object per line
 *   specbench  Spec-Bench question.jsonl: {"question_id", "category", "turns": [...], "reference": [...]}
 *              (reference optional); one example per turn, in order: id = question_id, turn = its
 *              index in the conversation, prompt = that turn's user message, reference = reference[turn]
 *              when present (else ""; a list of acceptable answers, as its rag questions have, is
 *              joined by DATASET_REFERENCE_SEPARATOR), category = category, source = "spec-bench"
 *   lm1b       plain text, one sentence per line (LM1B); prompt = first ceil(30%) of the words,
 *              reference = the rest
 *   wikisum    Wiki-Summary: CSV with a header naming a text column ("summary", "text" or
 *              "article", RFC 4180 quoting) or JSONL with such a key; split like lm1b
 * A Dataset owns all its strings. Errors name the file, the line and the field. */
#ifndef SP_DATASET_H
#define SP_DATASET_H

#include "error.h"

/* Separates the acceptable answers of a reference that has several (ROUGE keeps the best). */
#define DATASET_REFERENCE_SEPARATOR '\x1e'

typedef struct Example {
    char *id, *prompt, *reference, *source;
    char *category; /* Spec-Bench's category (jsonl: optional "category"); "" when the format has none */
    int turn;       /* 0-based turn in its conversation: examples [i - turn, i] are the conversation's user
                       turns so far (always 0 outside Spec-Bench) */
} Example;

typedef struct Dataset {
    Example *ex;
    int n;
    /* references given as an empty string (Spec-Bench's question.jsonl has 8): kept as no reference
     * (no ROUGE for that turn), counted so that every reader can say so; the first one's line */
    int n_empty_refs, first_empty_ref_line;
    char format[16]; /* the format it was read as: "jsonl", "specbench", "lm1b" or "wikisum" */
} Dataset;

/* A conversation's later turns need the answers to its earlier ones, so they cannot stand alone:
 * 1 when examples [first, first + n) hold a turn > 0 (a multi-turn conversation). */
int dataset_has_turns(const Dataset *d, int first, int n);

/* Questions (conversations): an example with turn 0 starts one. dataset_questions: how many;
 * dataset_question_start: the example index where question q starts (d->n for q = the count). */
int dataset_questions(const Dataset *d);
int dataset_question_start(const Dataset *d, int q);

/* format: "jsonl", "specbench", "lm1b", "wikisum", or NULL to infer (".csv" -> wikisum, ".txt" ->
 * lm1b, ".jsonl"/".json": specbench when the first object has "turns", wikisum when it has a
 * summary/text/article key but no "prompt", else jsonl). max_n > 0 keeps the first max_n. */
int dataset_load(const char *path, const char *format, int max_n, Dataset *d, SpErr *err);
void dataset_free(Dataset *d);

#endif
