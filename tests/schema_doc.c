/* schema_doc.c - prints the on-disk record as records/ defines it, one line per item, for
 * tests/check_schema_doc.py to compare with results/README.md:
 *   version runs.sqlite N | version tokens N | version dtv N
 *   TABLE COLUMN            (runs, prompts, outputs, timings: the current schema's columns in table order)
 *   tokens DATASET | dtv DATASET   (the HDF5 columns in file order) */
#include <stdio.h>

#include "dtvlog.h"
#include "schema.h"
#include "tokenlog.h"

static void table(const DbTable *t) {
    for (int i = 0; i < t->n_cols; i++)
        if (db_col_in(&t->cols[i], DB_SCHEMA_VERSION)) printf("%s %s\n", t->name, t->cols[i].name);
}

int main(void) {
    printf("version runs.sqlite %d\nversion tokens %d\nversion dtv %d\n", DB_SCHEMA_VERSION, TOKENLOG_VERSION,
           DTVLOG_VERSION);
    table(&kRunsTable);
    table(&kPromptsTable);
    table(&kOutputsTable);
    table(&kTimingsTable);
    for (int c = 0; c < TOKENLOG_N_COLS; c++) printf("tokens %s\n", tokenlog_columns()[c].name);
    for (int c = 0; c < DTVLOG_N_COLS; c++) printf("dtv %s\n", dtvlog_columns()[c].name);
    return ferror(stdout) || fflush(stdout) ? 1 : 0;
}
