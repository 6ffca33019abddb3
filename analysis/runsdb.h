/* runsdb.h - reads the done runs of a results directory (results/X/runs.sqlite, every schema version
 * records/schema.h reads, see results/README.md) for the analysis: each run's configuration, its per-prompt counters
 * summed, and per prompt the output text and, when `sprinter score` has filled the outputs table,
 * the target's log-likelihood of the output. Opens the database read-only; owns what it returns. */
#ifndef SP_RUNSDB_H
#define SP_RUNSDB_H

#include <stdint.h>

#include "error.h"
#include "params_table.h"

typedef struct PromptInfo {
    int prompt_index;
    int64_t tokens, target_calls;
    double t_total;
    char *output_text;     /* prompts.output_text, NULL if none */
    char *category;        /* prompts.category (schema 7), NULL if none */
    int turn;              /* prompts.turn (schema 7; 0 when NULL) */
    int prompt_truncated;  /* prompts.prompt_truncated: the prompt kept only its last context-sized part */
    int scored;            /* an outputs row exists (sprinter score) */
    double target_logprob; /* outputs.target_logprob: sum of ln p_target over the output */
    int64_t scored_tokens; /* outputs.n_tokens */
    int64_t rounds, round_kept; /* prompts.rounds, round_kept (schema 6; -1 when NULL) */
} PromptInfo;

/* One repetition of a run timed alone (runs.sqlite table timings, schema 8). */
typedef struct TimingInfo {
    int rep, n_prompts;
    int64_t tokens;
    double t_total; /* seconds, the audit excluded */
} TimingInfo;

/* One done run. Parameters that do not apply to the method are NaN (NULL in the database). */
typedef struct RunInfo {
    char hash[72], method[32], dataset[1024], dataset_sha256[72], data_format[32], token_log[1024];
    char token_log_fnv1a64[24]; /* runs.token_log_fnv1a64: the log's digest at commit ("": schema < 10) */
    char verifier_data_sha256[72]; /* the verifier's training data (from runs.config), "" if none */
    int verifier_n_prompts;        /* the verifier's training prompts 0..n-1 of that data (runs.config), 0 if none */
    int on_verifier_prompts;       /* 1: evaluated on some of them (same data, prompt_offset < verifier_n_prompts:
                                    * [data] eval_on_verifier_prompts, the authors' evaluation) */
    char verifier_sha256[72];      /* runs.verifier_sha256: the verifier file's hash, "" if none */
    char spec_name[64];            /* runs.spec_name: the sweep that ran it */
    char draft_dir[1024], target_dir[1024]; /* runs.draft_dir / target_dir ("" when the run has none) */
    char label_rule[16];           /* runs.label_rule: "sound", "paper-code" ("" when NULL: schema < 6, or no labels) */
    int exec_batch;                /* runs.exec_batch: prompts decoded together (1 when NULL); > 1: the run's t_* (and
                                    * its prompts' t_total) are NaN, its speed only from timings (the [timing] pass) */
    double tokens_per_s_batched;   /* runs.tokens_per_s_batched: throughput of a batched run, else NaN */
    int64_t seed;
    int max_new, n_prompts, prompt_offset, stop_at_eos, audit;
    double temperature;
    /* the grid parameters (NaN where one does not apply): a field per row of params_table.h, named as
     * its runs column (r->lambda), and the same values by RunParam (r->param[RP_LAMBDA]) */
    union {
        struct {
#define RP_RUNINFO_FIELD_(ID, name, ...) double name;
            RUN_PARAMS(RP_RUNINFO_FIELD_)
#undef RP_RUNINFO_FIELD_
        };
        double param[RP_COUNT];
    };
    /* sums over the run's prompts */
    int64_t tokens, target_calls, target_tokens, draft_calls, draft_tokens, verifier_evals, drafted, accepted;
    int64_t verifier_accepts, rejected; /* rejected: summed over the prompts that have it (schema 5 on) */
    int rejected_prompts;               /* prompts whose row has prompts.rejected */
    double t_total, t_draft, t_target, t_verifier, t_audit, flops_draft, flops_target, flops_verifier;
    /* the audit's confusion counts as the sweep stored them (prompts.audited ... fp), summed over the
     * audited_prompts prompts that have them (0: the run was not audited or makes no decisions) */
    int audited_prompts;
    int64_t audited, audited_pos, audited_neg, tp, fp;
    /* the authors' "avg tokens" (records/metrics.h avg_tokens_paper): mean over the prompts with
     * rounds > 0 of round_kept / rounds; NaN when no prompt has such a row */
    double avg_tokens_paper;
    PromptInfo *prompts; /* ordered by prompt_index */
    int n_rows;
    TimingInfo *timings; /* the table timings (schema 8): the run timed alone, by rep; NULL when none */
    int n_timings;
} RunInfo;

typedef struct RunSet {
    RunInfo *runs; /* ordered by run_index */
    int n;
    int schema_version;
    int has_outputs; /* the outputs table exists and has rows for some run */
} RunSet;

int runset_load(const char *db_path, RunSet *rs, SpErr *err);
void runset_free(RunSet *rs);

/* A short label of the run's parameters that apply ("lambda=1.2 tau=0.5"). */
void run_params_text(const RunInfo *r, char *buf, int cap);

#endif
