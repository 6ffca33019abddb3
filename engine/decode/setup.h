/* setup.h - a command's run setup, written once for every command that decodes, scores or samples
 * (sweep, decode, dtv, score, collect, generate, perplexity): load the draft and/or the target, load the
 * tokenizer, check that the vocabularies fit together, and know the context the models allow. The
 * context a decode needs is decoding.h's rule (decode_context_need, decode_prompt_room), capped here by
 * RunModels.max_pos. */
#ifndef SP_SETUP_H
#define SP_SETUP_H

#include "error.h"
#include "model.h"
#include "tokenizer.h"

typedef struct RunSetup {
    const char *draft_dir, *target_dir; /* model directories; NULL: that model is not loaded (not both) */
    int tokenizer;                      /* 1: load the tokenizer too */
    const char *tokenizer_dir;          /* where from; NULL: target_dir, else draft_dir */
} RunSetup;

typedef struct RunModels {
    Model *draft, *target;   /* NULL where the setup named no directory */
    Tokenizer *tokenizer;    /* NULL unless asked for */
    const char *draft_dir, *target_dir, *tokenizer_dir; /* as given (not copied); tokenizer_dir as resolved */
    int vocab_size;          /* the models' vocab_size (equal when both are loaded) */
    int max_pos;             /* the smallest context of the loaded models: what a decode's context may reach */
} RunModels;

/* Loads what s names into *rm (zeroed first) and checks, in one line naming the directories:
 *   - the draft's and the target's vocab_size are equal (both loaded);
 *   - the tokenizer's vocabulary fits into each loaded model's vocab_size (a model may have more rows
 *     than the tokenizer has tokens: padded vocabularies).
 * A model that fails to load is named "draft DIR: ..." / "target DIR: ..." when both are asked for, else
 * "DIR: ...". Returns 0, or -1 with err filled and everything loaded so far freed. */
int run_models_open(RunModels *rm, const RunSetup *s, SpErr *err);
void run_models_close(RunModels *rm);

/* The target, else the draft. */
const Model *run_models_any(const RunModels *rm);

#endif
