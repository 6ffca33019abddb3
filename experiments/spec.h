/* spec.h - sweep specifications (experiments/NAME.ini) and their expansion into runs.
 *
 * An INI file (parsed with inih) names the models, the evaluation data, the decoding settings, the
 * methods and a grid of method parameters. spec_load() parses and range-checks it without touching
 * any other file; spec_resolve() checks that the model directories and datasets exist and hashes
 * them; spec_expand() turns the grid into runs. Layout (every key is optional unless marked):
 *
 *   [sweep]    name (a name, not a path: see spec_name_ok); methods (required: ar,draft,sd,sprinter,bild,pmin,specdecpp,oracle-iid,
 *              oracle-markov)
 *   [models]   draft, target (directories; required: target, and draft unless only ar is run)
 *   [data]     datasets (required; list of files, each a grid value), format (jsonl, specbench,
 *              lm1b, wikisum; empty = infer), n_prompts (required), offset (first prompt index;
 *              in Spec-Bench data both count questions, as its users do (question.jsonl: 480
 *              questions, 560 turns): spec_resolve() turns them into the turns they span, which the
 *              sweep runs, hashes and stores as runs.n_prompts / prompt_offset; a spec whose datasets
 *              would then span different turns, or mix Spec-Bench with other data, is refused),
 *              prompt_template (none, the default, or vicuna: data/loaders/prompt.h; a Spec-Bench
 *              question's later turns are always generated after its earlier ones, in one
 *              conversation; or chat_template: the target's own, from chat_template.jinja or
 *              tokenizer_config.json), eval_on_verifier_prompts (false, the default: an offset
 *              that overlaps the verifier's training prompts of the same file is an error; true:
 *              allowed, as the SPRINTER authors' code evaluates on the first 100 of the 500 prompts
 *              it trains on: experiments/paper_code_overlap.ini; the canonical text then says so)
 *   [decode]   max_new_tokens (required), temperature, top_k, top_p, stop_at_eos, audit, protocol
 *              (sound, the default, or paper-code: what the SPRINTER authors' code runs, issue 14;
 *              it changes the defaults of the settings it differs in, each of which a spec may
 *              still set: temperature 0 (top_k = 1 there), [grid] bonus 1, finish_round 1 and
 *              max_run 19 (at most 20 drafts a round, only the last one tested, a bonus token after
 *              it, generation until >= max_new_tokens), label_rule paper-code, [verifier] feature
 *              prefix, [verifier] recipe paper-code and val_fraction 0.3), label_rule (sound, the default: q/p of the
 *              decoding distributions; paper-code: of the raw softmax, and the verifier data's
 *              context follows the label; sprinter-type runs and verifier collection only)
 *              batch (default 1: prompts of a run decoded together, their forward passes batched; not
 *              part of any run's configuration: see SweepSpec.batch)
 *   [grid]     lists: seeds, lambda, tau, gamma, max_run, alpha, p_min, eta_fp, eta_tp,
 *              oracle_stay (oracle-markov: lambda, max_run, eta_fp, eta_tp, oracle_stay in [0, 1)),
 *              bonus, finish_round (0/1: the round structure of the sprinter-type methods, see
 *              DecodeConfig; finish_round needs max_run >= 1)
 *   [verifier] needed by sprinter and specdecpp: data, format, n_prompts, max_new, seed, l2,
 *              val_fraction, tau (only for the reported training metrics), cache_dir, feature
 *              (token: the draft's state at the drafted token, default; prefix: the state before it),
 *              recipe (sound, default; paper-code: the authors' Adam recipe, verifier_train.h)
 *   [timing]   reps (0, the default: none), prompts (default: all n_prompts): the speed figures, from
 *              every done run decoded again alone after the sweep (runs.sqlite table timings); a grid
 *              parameter's name with values from its [grid] list (tau = 0.5) times only the runs with
 *              one of those values, and every run of a method the parameter does not apply to (ar, sd)
 *
 * Lists are comma- or space-separated. A grid parameter multiplies only the runs of methods it
 * applies to (tau does not multiply sd; gamma does not multiply sprinter); the others get the
 * engine's default and are stored as NULL. Each run is named by the SHA-256 of a canonical text
 * of everything that determines its output (model and data content hashes, not paths), so the
 * same configuration has the same name in every sweep, shard and machine. Relative paths are
 * relative to the working directory. A SweepSpec owns nothing on the heap; a RunConfig array
 * from spec_expand() is malloc'd (caller frees). Not thread-safe; no global state.
 */
#ifndef SP_SPEC_H
#define SP_SPEC_H

#include "prompt.h"

#include <stdint.h>

#include "decoding.h"
#include "error.h"
#include "hashutil.h"
#include "params.h"
#include "verifier.h"
#include "verifier_train.h"

#define SPEC_MAX_LIST 64
#define SPEC_MAX_DATASETS 8
#define SPEC_MAX_BATCH 64
#define SPEC_PATH 1024

/* The value of grid parameter p (engine/decode/params_table.h) in a decoding configuration. */
double run_param_value(const DecodeConfig *c, RunParam p);

typedef struct SpecList {
    double v[SPEC_MAX_LIST];
    int n; /* 0 = not given: the engine default is used */
} SpecList;


typedef struct SweepSpec {
    char path[SPEC_PATH];
    char sha256[SP_SHA256_HEX]; /* of the INI file's bytes */
    char name[128];
    char draft_dir[SPEC_PATH], target_dir[SPEC_PATH];
    char datasets[SPEC_MAX_DATASETS][SPEC_PATH];
    int n_datasets;
    char data_format[32]; /* "" = infer from the file name */
    int n_prompts, prompt_offset; /* in prompt rows (turns); for Spec-Bench data spec_resolve() sets them from: */
    int n_questions, question_offset; /* [data] n_prompts and offset as given in Spec-Bench data (questions; 0 else) */
    int eval_on_verifier_prompts; /* [data]: 1 allows evaluating on the verifier's training prompts */
    PromptTemplate prompt_template; /* [data] prompt_template */
    int max_new;
    SamplerParams sampling;
    int stop_at_eos, audit;
    DecodeMethod methods[DM_COUNT];
    int n_methods;
    SpecList grid[RP_COUNT];
    uint64_t seeds[SPEC_MAX_LIST];
    int n_seeds;
    /* [verifier] */
    int has_verifier;
    char ver_data[SPEC_PATH], ver_format[32], ver_cache_dir[SPEC_PATH];
    int ver_n_prompts, ver_max_new;
    uint64_t ver_seed;
    double ver_l2, ver_val_fraction, ver_tau;
    VerifierFeature ver_feature; /* token (default) or prefix: the hidden state the verifier scores */
    Protocol ver_recipe;      /* [verifier] recipe: sound (default) or paper-code (verifier_train.h) */
    int ver_padded_batches;      /* [verifier] padded_batches: the authors' right-padded batch features
                                  * (TrainSpec.padded_batches; recipe paper-code, feature prefix) */
    Protocol protocol;       /* [decode] protocol: which defaults the settings above started from */
    Protocol label_rule;        /* [decode] label_rule: the audit's and the verifier data's labels (rules.h) */
    /* [timing]: after its runs, the sweep decodes every done run's first timing_prompts prompts (0, or
     * more than n_prompts: all n_prompts) again timing_reps times, alone, in rotated order (runs.sqlite table timings): the
     * speed figures. Not part of any run's configuration or hash. */
    int timing_reps, timing_prompts;
    SpecList timing_only[RP_COUNT]; /* [timing] PARAM = values: the runs timed (none given: all) */
    /* [decode] batch (default 1): prompts of a run decoded together in lock step, their forward passes
     * batched (decoder_run_batch). How a run executes, not what it measures: the same tokens and events
     * whatever the batch, so it is in no run's configuration text or hash. A batched run's prompt rows
     * get no timings; its throughput is runs.tokens_per_s_batched. The sweep's --batch overrides it. */
    int batch;
    /* filled by spec_resolve() */
    char draft_sha256[SP_SHA256_HEX], target_sha256[SP_SHA256_HEX];
    char data_sha256[SPEC_MAX_DATASETS][SP_SHA256_HEX], ver_data_sha256[SP_SHA256_HEX];
} SweepSpec;

/* Parses and checks path. Errors are one line: "FILE:LINE: [section] key: what was expected" or
 * "FILE: [section] key: ..." for a missing key. A key is given once: the same key again on a line of
 * its own (adjacent or not, under a repeated [section] header or not) is "FILE:LINE: [grid] gamma:
 * given twice"; only an indented line continues the previous key's list. */
int spec_load(const char *path, SweepSpec *s, SpErr *err);

/* A sweep's name ([sweep] name, else the spec's file name up to its first '.') names its results
 * directory, results/NAME, and is stored in every token log: it is a name, never a path. Allowed:
 * 1-127 characters of [A-Za-z0-9._+-], the first a letter or a digit (so no '/', no "." or "..",
 * no hidden name, no white space or control character). spec_load refuses any other. */
#define SPEC_NAME_RULE "1-127 of the characters A-Z a-z 0-9 . _ + -, the first a letter or digit"
int spec_name_ok(const char *name);
/* Checks that the model directories and data files exist and hashes them (and the INI file). */
int spec_resolve(SweepSpec *s, SpErr *err);
/* Does the spec use a method that needs a verifier (or a judge head, which [verifier] also makes)? */
int spec_needs_verifier(const SweepSpec *s);

typedef struct RunConfig {
    int index;        /* position in the full expanded grid (the same in every shard) */
    int dataset;      /* index into spec->datasets */
    uint64_t seed;    /* run seed; prompt i draws from prompt_seed(seed, i) */
    unsigned applies; /* method_params(method) */
    DecodeConfig dc;  /* what decoder_run gets */
    char canon[2048]; /* canonical text: "key value" lines, what hash is the SHA-256 of */
    char hash[SP_SHA256_HEX];
} RunConfig;

/* Expands the grid of a resolved spec in a fixed order (method, dataset, seed, then the
 * parameters in RunParam order), drops duplicate hashes, numbers the runs 0..n-1. */
int spec_expand(const SweepSpec *s, RunConfig **runs, int *n, SpErr *err);

/* Whether [timing] times run r: each parameter [timing] lists and r's method takes has one of the
 * listed values (nothing listed: every run). */
int spec_run_timed(const SweepSpec *s, const RunConfig *r);

/* Deterministic sharding: run r belongs to shard i of n (0 <= i < n) iff r->index % n == i. */
int run_in_shard(const RunConfig *r, int shard_i, int shard_n);


/* "lambda=1.2 tau=0.5" for the parameters that apply (for tables); buf of cap bytes. */
void run_params_label(const RunConfig *r, char *buf, int cap);

#endif
