/* tokread.h - reads a per-token event log (results/X/tokens/RUNHASH.h5, format "sprinter-tokens"
 * version 1; layout in results/README.md) into memory for the analysis. Only the HDF5 library is
 * used (not experiments/, so the analysis stays free of engine code). Rows are in file order: the
 * prompts of the run one after another, each prompt's tokens in position order.
 * Not thread-safe (HDF5 serial build). */
#ifndef SP_TOKREAD_H
#define SP_TOKREAD_H

#include <stdint.h>

#include "error.h"

typedef struct TokenRows {
    int64_t n;
    int32_t *prompt_index, *pos, *token, *draft_token;
    float *q, *p, *score;
    int8_t *decision, *label, *target_called, *kind;
    char run_hash[80];
} TokenRows;

/* Reads every column; errors name the file and the dataset ("x.h5: dataset /label has 10 rows,
 * /token has 12"). */
int tokrows_read(const char *path, TokenRows *t, SpErr *err);
void tokrows_free(TokenRows *t);

#endif
