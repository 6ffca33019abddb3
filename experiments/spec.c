/* spec.c - parse, check, resolve and expand sweep specifications (see spec.h). */
#include "spec.h"

#include "dataset.h"
#include "fsutil.h"

#include "verifier_train.h"

#include <ctype.h>
#include <errno.h>
#include <ini.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

/* ------------------------------------------------------------------ parameters */

#define B(p) (1u << (p))
#define STR_(x) #x
#define STR(x) STR_(x)
static const char kMaxListText[] = STR(SPEC_MAX_LIST); /* "64", for messages */

/* The DecodeConfig field of each grid parameter (params_table.h names it). */
static void param_set(DecodeConfig *c, RunParam p, double v) {
    switch (p) {
#define RP_SET_(ID, name, type, ...) \
    case RP_##ID: c->name = (type)v; break;
        RUN_PARAMS(RP_SET_)
#undef RP_SET_
    default: break;
    }
}

double run_param_value(const DecodeConfig *c, RunParam p) {
    switch (p) {
#define RP_GET_(ID, name, ...) \
    case RP_##ID: return c->name;
        RUN_PARAMS(RP_GET_)
#undef RP_GET_
    default: return 0;
    }
}

/* ------------------------------------------------------------------ value parsing */

/* Parser state: inih calls handler() once per key (and again for continuation lines). */
typedef struct Parse {
    SweepSpec *s;
    SpErr first;       /* first error, without the "FILE:LINE: " prefix */
    int failed;
    char seen[64][48]; /* "section.key" already given, for duplicate detection */
    int n_seen;
    char last[48];     /* the previous key, so a continuation line extends a list */
    int line;          /* the line inih is parsing (counted by read_line) */
    int indented;      /* it starts with white space: inih passes it as a continuation of the previous key */
} Parse;

static int fail(Parse *P, const char *sec, const char *key, const char *fmt, const char *val) {
    if (!P->failed) {
        char what[512];
        snprintf(what, sizeof what, fmt, val);
        snprintf(P->first.msg, sizeof P->first.msg, "[%s] %s: %s", sec, key, what);
    }
    P->failed = 1;
    return 0; /* inih: error on this line */
}

/* "[grid] tau: 1.5 is out of range [0, 1]": value text v of parameter p is outside the table's range. */
static int fail_range(Parse *P, const char *sec, const char *key, RunParam p, const char *v) {
    char range[48], fmt[64];
    snprintf(fmt, sizeof fmt, "%%s is out of range %s", run_param_range(p, range));
    return fail(P, sec, key, fmt, v);
}

/* 0 and *out set; -1: not a number; -2: a number outside double precision (overflow, or below
 * the smallest normal double, as 1e-320) */
static int parse_double(const char *v, double *out) {
    char *end;
    errno = 0;
    double d = strtod(v, &end);
    while (*end == ' ' || *end == '\t') end++;
    if (end == v || *end) return -1;
    if (errno == ERANGE || !isfinite(d)) return -2;
    *out = d;
    return 0;
}

static int parse_int(const char *v, long lo, long hi, int *out) {
    char *end;
    errno = 0;
    long l = strtol(v, &end, 10);
    while (*end == ' ' || *end == '\t') end++;
    if (end == v || *end || errno || l < lo || l > hi) return -1;
    *out = (int)l;
    return 0;
}

static int parse_bool(const char *v, int *out) {
    if (!strcmp(v, "1") || !strcasecmp(v, "true") || !strcasecmp(v, "yes") || !strcasecmp(v, "on")) *out = 1;
    else if (!strcmp(v, "0") || !strcasecmp(v, "false") || !strcasecmp(v, "no") || !strcasecmp(v, "off")) *out = 0;
    else return -1;
    return 0;
}

static int copy_str(char *dst, size_t cap, const char *v) {
    size_t n = strlen(v);
    if (n == 0 || n >= cap) return -1;
    memcpy(dst, v, n + 1);
    return 0;
}

/* Splits a list on commas and blanks; calls item() for each token. Returns the number of items or
 * -1 when item() fails (it has recorded the error). */
typedef int (*ItemFn)(Parse *P, const char *sec, const char *key, const char *tok, void *ctx);
static int each_item(Parse *P, const char *sec, const char *key, const char *val, ItemFn item, void *ctx) {
    char buf[1024];
    if (strlen(val) >= sizeof buf) return fail(P, sec, key, "%s", "list too long"), -1;
    strcpy(buf, val);
    int n = 0;
    for (char *save = NULL, *t = strtok_r(buf, ", \t", &save); t; t = strtok_r(NULL, ", \t", &save), n++)
        if (item(P, sec, key, t, ctx)) return -1;
    return n;
}

static int item_param(Parse *P, const char *sec, const char *key, const char *tok, void *ctx) {
    RunParam p = (RunParam)(intptr_t)ctx;
    SpecList *L = strcmp(sec, "timing") ? &P->s->grid[p] : &P->s->timing_only[p];
    double d;
    int prc = parse_double(tok, &d);
    if (prc == -2) return fail(P, sec, key, "%s is outside the range of a double", tok), -1;
    if (prc) return fail(P, sec, key, "\"%s\" is not a number", tok), -1;
    if (!run_param_in_range(p, d)) return fail_range(P, sec, key, p, tok), -1;
    if (!run_param_whole(p, d)) return fail(P, sec, key, "%s must be a whole number", tok), -1;
    if (L->n == SPEC_MAX_LIST) return fail(P, sec, key, "more than %s values", kMaxListText), -1;
    L->v[L->n++] = d;
    return 0;
}

static int item_seed(Parse *P, const char *sec, const char *key, const char *tok, void *ctx) {
    (void)ctx;
    char *end;
    errno = 0;
    unsigned long long u = strtoull(tok, &end, 10);
    if (end == tok || *end || errno || tok[0] == '-' || u > (unsigned long long)INT64_MAX)
        return fail(P, sec, key, "\"%s\" is not a seed in [0, 2^63)", tok), -1;
    if (P->s->n_seeds == SPEC_MAX_LIST) return fail(P, sec, key, "more than %s seeds", kMaxListText), -1;
    P->s->seeds[P->s->n_seeds++] = (uint64_t)u;
    return 0;
}

static int item_method(Parse *P, const char *sec, const char *key, const char *tok, void *ctx) {
    (void)ctx;
    SweepSpec *s = P->s;
    DecodeMethod m;
    if (decode_method_parse(tok, &m) || m == DM_COLLECT)
        return fail(P, sec, key,
                    "unknown method \"%s\" (ar, draft, sd, sprinter, bild, pmin, specdecpp, oracle-iid, "
                    "oracle-markov)",
                    tok),
               -1;
    for (int i = 0; i < s->n_methods; i++)
        if (s->methods[i] == m) return 0; /* listed twice: once is enough */
    s->methods[s->n_methods++] = m;
    return 0;
}

static int item_dataset(Parse *P, const char *sec, const char *key, const char *tok, void *ctx) {
    (void)ctx;
    SweepSpec *s = P->s;
    if (s->n_datasets == SPEC_MAX_DATASETS) return fail(P, sec, key, "%s", "more than 8 datasets"), -1;
    if (copy_str(s->datasets[s->n_datasets], SPEC_PATH, tok)) return fail(P, sec, key, "%s", "path too long"), -1;
    s->n_datasets++;
    return 0;
}

static int list_key(Parse *P, const char *sec, const char *key, const char *val, ItemFn item, void *ctx) {
    int n = each_item(P, sec, key, val, item, ctx);
    if (n < 0) return 0;
    if (n == 0) return fail(P, sec, key, "%s", "empty list");
    return 1;
}

static int format_ok(const char *v) {
    return !strcmp(v, "jsonl") || !strcmp(v, "specbench") || !strcmp(v, "lm1b") || !strcmp(v, "wikisum");
}

/* ------------------------------------------------------------------ the handler */

static int scalar(Parse *P, const char *sec, const char *key, const char *v) {
    SweepSpec *s = P->s;
    double d;
    int i;
#define IS(S, K) (!strcmp(sec, S) && !strcmp(key, K))
    if (IS("sweep", "name")) {
        if (!spec_name_ok(v)) return fail(P, sec, key, "\"%s\" is not a name (" SPEC_NAME_RULE ")", v);
        if (copy_str(s->name, sizeof s->name, v)) return fail(P, sec, key, "%s", "must be 1-127 characters");
    } else if (IS("models", "draft")) {
        if (copy_str(s->draft_dir, SPEC_PATH, v)) return fail(P, sec, key, "%s", "empty or too long");
    } else if (IS("models", "target")) {
        if (copy_str(s->target_dir, SPEC_PATH, v)) return fail(P, sec, key, "%s", "empty or too long");
    } else if (IS("data", "format") || IS("verifier", "format")) {
        if (!format_ok(v)) return fail(P, sec, key, "\"%s\" is not one of jsonl, specbench, lm1b, wikisum", v);
        snprintf(!strcmp(sec, "data") ? s->data_format : s->ver_format, 32, "%s", v);
    } else if (IS("data", "n_prompts")) {
        if (parse_int(v, 1, 1 << 24, &s->n_prompts)) return fail(P, sec, key, "\"%s\" is not an integer >= 1", v);
    } else if (IS("data", "prompt_template")) {
        if (prompt_template_parse(v, &s->prompt_template))
            return fail(P, sec, key, "\"%s\" is not none, vicuna or chat_template", v);
    } else if (IS("data", "eval_on_verifier_prompts")) {
        if (parse_bool(v, &s->eval_on_verifier_prompts)) return fail(P, sec, key, "\"%s\" is not true or false", v);
    } else if (IS("data", "offset")) {
        if (parse_int(v, 0, 1 << 30, &s->prompt_offset)) return fail(P, sec, key, "\"%s\" is not an integer >= 0", v);
    } else if (IS("decode", "max_new_tokens")) {
        if (parse_int(v, 1, 1 << 20, &s->max_new)) return fail(P, sec, key, "\"%s\" is not an integer >= 1", v);
    } else if (IS("decode", "temperature")) {
        if (parse_double(v, &d) || d < 0 || d > 1e6) return fail(P, sec, key, "\"%s\" is not a number in [0, 1e6]", v);
        s->sampling.temperature = (float)d;
    } else if (IS("decode", "top_k")) {
        if (parse_int(v, 0, 1 << 30, &s->sampling.top_k)) return fail(P, sec, key, "\"%s\" is not an integer >= 0", v);
    } else if (IS("decode", "top_p")) {
        if (parse_double(v, &d) || d <= 0 || d > 1) return fail(P, sec, key, "\"%s\" is not a number in (0, 1]", v);
        s->sampling.top_p = (float)d;
    } else if (IS("decode", "stop_at_eos") || IS("decode", "audit")) {
        if (parse_bool(v, !strcmp(key, "audit") ? &s->audit : &s->stop_at_eos))
            return fail(P, sec, key, "\"%s\" is not a boolean (true/false)", v);
    } else if (IS("decode", "batch")) {
        if (parse_int(v, 1, SPEC_MAX_BATCH, &s->batch))
            return fail(P, sec, key, "\"%s\" is not an integer in [1, " STR(SPEC_MAX_BATCH) "]", v);
    } else if (IS("decode", "protocol")) {
        if (protocol_parse(v, &s->protocol)) return fail(P, sec, key, "\"%s\" is not sound or paper-code", v);
    } else if (IS("decode", "label_rule")) {
        if (protocol_parse(v, &s->label_rule)) return fail(P, sec, key, "\"%s\" is not sound or paper-code", v);
    } else if (IS("verifier", "data")) {
        if (copy_str(s->ver_data, SPEC_PATH, v)) return fail(P, sec, key, "%s", "empty or too long");
    } else if (IS("verifier", "cache_dir")) {
        if (copy_str(s->ver_cache_dir, SPEC_PATH, v)) return fail(P, sec, key, "%s", "empty or too long");
    } else if (IS("verifier", "n_prompts")) {
        if (parse_int(v, 1, 1 << 24, &s->ver_n_prompts)) return fail(P, sec, key, "\"%s\" is not an integer >= 1", v);
    } else if (IS("verifier", "max_new")) {
        if (parse_int(v, 1, 1 << 20, &s->ver_max_new)) return fail(P, sec, key, "\"%s\" is not an integer >= 1", v);
    } else if (IS("verifier", "seed")) {
        if (parse_int(v, 0, INT32_MAX, &i)) return fail(P, sec, key, "\"%s\" is not an integer in [0, 2^31)", v);
        s->ver_seed = (uint64_t)i;
    } else if (IS("verifier", "l2")) {
        if (parse_double(v, &s->ver_l2) || s->ver_l2 < 0) return fail(P, sec, key, "\"%s\" is not a number >= 0", v);
    } else if (IS("verifier", "val_fraction")) {
        if (parse_double(v, &d) || d <= 0 || d >= 1) return fail(P, sec, key, "\"%s\" is not a number in (0, 1)", v);
        s->ver_val_fraction = d;
    } else if (IS("verifier", "tau")) {
        /* the grid's tau: the same threshold, the same range */
        if (parse_double(v, &d) || !run_param_in_range(RP_TAU, d)) return fail_range(P, sec, key, RP_TAU, v);
        s->ver_tau = d;
    } else if (IS("verifier", "recipe")) {
        if (protocol_parse(v, &s->ver_recipe)) return fail(P, sec, key, "\"%s\" is not sound or paper-code", v);
    } else if (IS("verifier", "padded_batches")) {
        if (parse_bool(v, &s->ver_padded_batches)) return fail(P, sec, key, "\"%s\" is not true or false", v);
    } else if (IS("verifier", "feature")) {
        if (verifier_feature_parse(v, &s->ver_feature)) return fail(P, sec, key, "\"%s\" is not token or prefix", v);
    } else if (IS("timing", "reps")) {
        if (parse_int(v, 0, 1000, &s->timing_reps)) return fail(P, sec, key, "\"%s\" is not an integer in [0, 1000]", v);
    } else if (IS("timing", "prompts")) {
        if (parse_int(v, 1, 1 << 24, &s->timing_prompts)) return fail(P, sec, key, "\"%s\" is not an integer >= 1", v);
    } else {
        return -1; /* not a scalar key */
    }
#undef IS
    return 1;
}

static int list(Parse *P, const char *sec, const char *key, const char *v) {
    if (!strcmp(sec, "sweep") && !strcmp(key, "methods")) return list_key(P, sec, key, v, item_method, NULL);
    if (!strcmp(sec, "data") && !strcmp(key, "datasets")) return list_key(P, sec, key, v, item_dataset, NULL);
    if (!strcmp(sec, "grid") && !strcmp(key, "seeds")) return list_key(P, sec, key, v, item_seed, NULL);
    if (!strcmp(sec, "grid") || !strcmp(sec, "timing")) /* [timing] tau = ...: which runs are timed */
        for (int p = 0; p < RP_COUNT; p++)
            if (!strcmp(key, run_param_info((RunParam)p)->name))
                return list_key(P, sec, key, v, item_param, (void *)(intptr_t)p);
    return -1;
}

static int handler(void *user, const char *sec, const char *key, const char *val) {
    Parse *P = user;
    char id[48];
    snprintf(id, sizeof id, "%s.%s", sec, key);
    /* inih calls the handler with the previous key for an indented line that continues it (multiline),
     * and the same way for that key repeated on a line of its own: only the indentation tells them
     * apart. A repeat on its own line, adjacent or not, under a repeated [section] header or not, is
     * "given twice". */
    int continuation = P->indented && !strcmp(id, P->last);
    snprintf(P->last, sizeof P->last, "%s", id);
    if (!continuation) {
        for (int i = 0; i < P->n_seen; i++)
            if (!strcmp(P->seen[i], id)) return fail(P, sec, key, "%s", "given twice");
        if (P->n_seen < 64) snprintf(P->seen[P->n_seen++], sizeof P->seen[0], "%s", id);
    }
    int r = list(P, sec, key, val);
    if (r >= 0) return r;
    if (continuation) return fail(P, sec, key, "%s", "given twice");
    r = scalar(P, sec, key, val);
    if (r >= 0) return r;
    static const char *const kSections[] = {"sweep", "models", "data", "decode", "grid", "verifier", "timing"};
    for (size_t i = 0; i < sizeof kSections / sizeof *kSections; i++)
        if (!strcmp(sec, kSections[i])) return fail(P, sec, key, "%s", "unknown key");
    return fail(P, sec, key, "%s", "unknown section");
}

/* ------------------------------------------------------------------ load and check */

static void spec_default(SweepSpec *s) {
    memset(s, 0, sizeof *s);
    DecodeConfig d;
    decode_config_default(&d);
    s->sampling = d.sampling;
    s->audit = 1;
    s->batch = 1;
    s->ver_n_prompts = 100;
    s->ver_max_new = 20;
    TrainSpec t; /* the verifier's training defaults, defined once there */
    train_spec_default(&t);
    s->ver_l2 = t.l2;
    s->ver_val_fraction = t.val_fraction;
    s->ver_tau = t.tau;
    s->ver_feature = t.feature;
    s->ver_recipe = t.recipe;
    s->ver_padded_batches = t.padded_batches;
}

/* Whether v is one of L's values. */
static int list_has(const SpecList *L, double v) {
    for (int k = 0; k < L->n; k++)
        if (L->v[k] == v) return 1;
    return 0;
}

static int check_required(const SweepSpec *s, const char *f, SpErr *err) {
    int only_ar = 1, only_draft = 1;
    for (int i = 0; i < s->n_methods; i++) {
        only_ar &= !method_is(s->methods[i], MC_USES_DRAFT);
        only_draft &= !method_is(s->methods[i], MC_USES_TARGET);
    }
    if (s->n_methods == 0) return sp_fail(err, "%s: [sweep] methods: missing (e.g. methods = ar, sd, sprinter)", f);
    if (!s->target_dir[0] && !only_draft) return sp_fail(err, "%s: [models] target: missing", f);
    if (!s->draft_dir[0] && !only_ar) return sp_fail(err, "%s: [models] draft: missing", f);
    if (s->n_datasets == 0) return sp_fail(err, "%s: [data] datasets: missing", f);
    if (s->n_prompts == 0) return sp_fail(err, "%s: [data] n_prompts: missing", f);
    if (s->max_new == 0) return sp_fail(err, "%s: [decode] max_new_tokens: missing", f);
    if (spec_needs_verifier(s) && !s->has_verifier)
        return sp_fail(err, "%s: [verifier]: missing, but sprinter/specdecpp need a trained verifier (judge: its judge head)", f);
    if (s->has_verifier && !s->ver_data[0]) return sp_fail(err, "%s: [verifier] data: missing", f);
    if (s->ver_padded_batches && (s->ver_recipe != PROTOCOL_PAPER_CODE || s->ver_feature != VF_PREFIX))
        return sp_fail(err, "%s: [verifier] padded_batches: needs recipe = paper-code and feature = prefix", f);
    for (int p = 0; p < RP_COUNT; p++)
        for (int k = 0; k < s->timing_only[p].n; k++) {
            if (!list_has(&s->grid[p], s->timing_only[p].v[k]))
                return sp_fail(err, "%s: [timing] %s: %g is not a value of [grid] %s, so no run would be timed for it", f,
                               run_param_info((RunParam)p)->name, s->timing_only[p].v[k], run_param_info((RunParam)p)->name);
        }
    for (int i = 0; i < s->n_methods && s->ver_feature != VF_TOKEN; i++)
        if (s->methods[i] == DM_SPECDECPP)
            return sp_fail(err, "%s: [verifier] feature: prefix does not apply to specdecpp (its stopping head scores "
                                "the drafted token)", f);
    return 0;
}

int spec_needs_verifier(const SweepSpec *s) {
    for (int i = 0; i < s->n_methods; i++)
        if (method_is(s->methods[i], MC_NEEDS_VERIFIER) || method_is(s->methods[i], MC_NEEDS_JUDGE)) return 1;
    return 0;
}

static int section_seen(const Parse *P, const char *sec) {
    size_t n = strlen(sec);
    for (int i = 0; i < P->n_seen; i++)
        if (!strncmp(P->seen[i], sec, n) && P->seen[i][n] == '.') return 1;
    return 0;
}

static int key_seen(const Parse *P, const char *id) {
    for (int i = 0; i < P->n_seen; i++)
        if (!strcmp(P->seen[i], id)) return 1;
    return 0;
}


/* The authors' code (github MeiyuZhong/SPRINTER, sprinter.py): top_k = 1 (greedy), a round drafts
 * until the verifier rejects or 20 tokens were drafted, only the last is tested, a bonus token
 * follows an accepted one, generation runs until >= max_new tokens; the verifier reads the prefix
 * state and trains as train.py does, on right-padded batches. Every setting the spec gives itself
 * stays as given. */
static void apply_paper_code_defaults(Parse *P) {
    SweepSpec *s = P->s;
    if (!key_seen(P, "decode.temperature")) s->sampling.temperature = 0.0f;
    static const struct {
        RunParam p;
        double v;
    } kGrid[] = {{RP_BONUS, 1}, {RP_FINISH_ROUND, 1}, {RP_MAX_RUN, 19}};
    for (size_t i = 0; i < sizeof kGrid / sizeof *kGrid; i++)
        if (s->grid[kGrid[i].p].n == 0) {
            s->grid[kGrid[i].p].v[0] = kGrid[i].v;
            s->grid[kGrid[i].p].n = 1;
        }
    if (!key_seen(P, "verifier.feature")) s->ver_feature = VF_PREFIX;
    if (!key_seen(P, "decode.label_rule")) s->label_rule = PROTOCOL_PAPER_CODE;
    if (!key_seen(P, "verifier.recipe")) s->ver_recipe = PROTOCOL_PAPER_CODE;
    /* their batches were right-padded; the setting exists only for their recipe on the prefix feature */
    if (!key_seen(P, "verifier.padded_batches"))
        s->ver_padded_batches = s->ver_feature == VF_PREFIX && s->ver_recipe == PROTOCOL_PAPER_CODE;
    if (!key_seen(P, "verifier.val_fraction")) s->ver_val_fraction = 0.3; /* train_test_split(test_size=0.3) */
}

int spec_name_ok(const char *name) {
    size_t n = strlen(name);
    if (n == 0 || n > 127 || !isalnum((unsigned char)name[0])) return 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)name[i];
        if (!(c < 128 && (isalnum(c) || c == '.' || c == '_' || c == '+' || c == '-'))) return 0;
    }
    return 1;
}

/* inih's line reader (fgets), counting lines and noting whether each starts with white space (inih's
 * test for a continuation line), for the handler. */
typedef struct LineReader {
    FILE *f;
    Parse *P;
} LineReader;

static char *read_line(char *str, int num, void *stream) {
    LineReader *r = stream;
    char *got = fgets(str, num, r->f);
    if (got) {
        r->P->line++;
        r->P->indented = isspace((unsigned char)str[0]) != 0;
    }
    return got;
}

/* inih reads at most INI_MAX_LINE - 3 characters a line and would call the rest a syntax error. */
static int check_line_lengths(FILE *f, const char *path, SpErr *err) {
    int line = 1, len = 0;
    for (int ch; (ch = fgetc(f)) != EOF;) {
        if (ch == '\n') {
            line++, len = 0;
        } else if (++len > INI_MAX_LINE - 3) {
            return sp_fail(err, "%s:%d: line longer than %d characters (continue a list on indented lines)", path,
                           line, INI_MAX_LINE - 3);
        }
    }
    rewind(f);
    return 0;
}

int spec_load(const char *path, SweepSpec *s, SpErr *err) {
    spec_default(s);
    if (copy_str(s->path, sizeof s->path, path)) return sp_fail(err, "spec path empty or too long");
    FILE *f = sp_fopen_input(path, err); /* a directory or a FIFO is named as such, never read or waited on */
    if (!f) return -1;
    if (check_line_lengths(f, path, err)) {
        fclose(f);
        return -1;
    }
    Parse P = {.s = s};
    LineReader lr = {f, &P};
    int line = ini_parse_stream(read_line, &lr, handler, &P);
    fclose(f);
    if (line != 0 || P.failed) {
        if (!P.failed) return sp_fail(err, "%s:%d: syntax error (expected [section] or key = value)", path, line);
        if (line > 0) return sp_fail(err, "%s:%d: %s", path, line, P.first.msg);
        return sp_fail(err, "%s: %s", path, P.first.msg);
    }
    s->has_verifier = section_seen(&P, "verifier");
    if (s->protocol == PROTOCOL_PAPER_CODE) apply_paper_code_defaults(&P);
    if (!s->name[0]) {
        const char *b = strrchr(path, '/');
        b = b ? b + 1 : path;
        snprintf(s->name, sizeof s->name, "%.*s", (int)(strcspn(b, ".") ? strcspn(b, ".") : strlen(b)), b);
        if (!spec_name_ok(s->name))
            return sp_fail(err, "%s: [sweep] name: missing, and the file name's \"%s\" is not a name (" SPEC_NAME_RULE
                                "); set one", path, s->name);
    }
    if (s->n_seeds == 0) s->seeds[s->n_seeds++] = 0;
    if (check_required(s, path, err)) return -1;
    return 0;
}

static int check_model(const char *f, const char *key, const char *dir, char *sha, SpErr *err) {
    struct stat st;
    char cfg[SPEC_PATH + 16];
    int alone = sp_is_gguf_file(dir); /* a GGUF file alone: its metadata is the config */
    if (!alone && (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)))
        return sp_fail(err, "%s: [models] %s: %s is not a directory nor a .gguf file", f, key, dir);
    snprintf(cfg, sizeof cfg, "%s/config.json", dir);
    if (!alone && stat(cfg, &st) != 0) return sp_fail(err, "%s: [models] %s: %s has no config.json", f, key, dir);
    if (sha256_model_dir(dir, sha, err)) return sp_err_prefix(err, "%s: [models] %s", f, key);
    return 0;
}

static int hash_data(const char *f, const char *what, const char *path, char *out, SpErr *err) {
    if (sha256_file(path, out, err)) return sp_err_prefix(err, "%s: %s", f, what);
    return 0;
}

/* The turns [*first, *first + *n) that questions [q0, q0 + qn) of Spec-Bench data span; 1 when path
 * is not Spec-Bench data, -1 on error (too few questions: named with the spec's file and key). */
static int question_span(const SweepSpec *s, const char *path, int q0, int qn, int *first, int *n, SpErr *err) {
    const char *fmt = s->data_format[0] ? s->data_format : NULL;
    if (fmt && strcmp(fmt, "specbench")) return 1;
    Dataset d;
    if (!fmt) { /* inferred: one example tells */
        if (dataset_load(path, NULL, 1, &d, err)) return sp_err_prefix(err, "%s: [data] datasets", s->path);
        int sb = !strcmp(d.format, "specbench");
        dataset_free(&d);
        if (!sb) return 1;
    }
    if (dataset_load(path, "specbench", 0, &d, err)) return sp_err_prefix(err, "%s: [data] datasets", s->path);
    int nq = dataset_questions(&d), rc = 0;
    if (q0 + qn > nq)
        rc = sp_fail(err, "%s: [data] n_prompts: %s has %d questions (%d turns); in Spec-Bench data offset and n_prompts "
                          "count questions: offset %d + n_prompts %d needs %d", s->path, path, nq, d.n, q0, qn, q0 + qn);
    else *first = dataset_question_start(&d, q0), *n = dataset_question_start(&d, q0 + qn) - *first;
    dataset_free(&d);
    return rc;
}

/* Spec-Bench data: [data] offset and n_prompts count questions; from here on (hash, sweep, runs
 * table) prompt_offset and n_prompts count the turns they span. Idempotent. */
static int questions_to_turns(SweepSpec *s, SpErr *err) {
    if (s->n_questions) return 0;
    int first = -1, n = -1, q0 = s->prompt_offset, qn = s->n_prompts;
    for (int i = 0; i < s->n_datasets; i++) {
        int f1 = 0, n1 = 0, rc = question_span(s, s->datasets[i], q0, qn, &f1, &n1, err);
        if (rc < 0) return -1;
        if (i > 0 && (rc == 1) != (first < 0))
            return sp_fail(err, "%s: [data] datasets: %s and %s: one is Spec-Bench data (offset and n_prompts count "
                                "questions), the other not; give each its own spec", s->path, s->datasets[0], s->datasets[i]);
        if (rc == 1) continue;
        if (i > 0 && (f1 != first || n1 != n))
            return sp_fail(err, "%s: [data] n_prompts: questions %d..%d are turns %d..%d of %s but %d..%d of %s; give each "
                                "its own spec", s->path, q0, q0 + qn - 1, first, first + n - 1, s->datasets[0], f1,
                           f1 + n1 - 1, s->datasets[i]);
        first = f1, n = n1;
    }
    if (first < 0) return 0;
    s->question_offset = q0, s->n_questions = qn;
    s->prompt_offset = first, s->n_prompts = n;
    return 0;
}

int spec_resolve(SweepSpec *s, SpErr *err) {
    const char *f = s->path;
    if (sha256_file(f, s->sha256, err)) return -1;
    if (s->draft_dir[0] && check_model(f, "draft", s->draft_dir, s->draft_sha256, err)) return -1;
    if (s->target_dir[0] && check_model(f, "target", s->target_dir, s->target_sha256, err)) return -1;
    for (int i = 0; i < s->n_datasets; i++)
        if (hash_data(f, "[data] datasets", s->datasets[i], s->data_sha256[i], err)) return -1;
    if (questions_to_turns(s, err)) return -1;
    if (!s->has_verifier) return 0;
    if (hash_data(f, "[verifier] data", s->ver_data, s->ver_data_sha256, err)) return -1;
    /* the verifier trains on the first ver_n_prompts prompts: they must not be evaluated on */
    for (int i = 0; i < s->n_datasets && spec_needs_verifier(s) && !s->eval_on_verifier_prompts; i++)
        if (!strcmp(s->data_sha256[i], s->ver_data_sha256) && s->prompt_offset < s->ver_n_prompts)
            return sp_fail(err, "%s: [data] offset: %d overlaps the verifier's training prompts 0..%d of %s (need >= %d, "
                           "or eval_on_verifier_prompts = true)", f, s->prompt_offset, s->ver_n_prompts - 1, s->datasets[i], s->ver_n_prompts);
    return 0;
}

/* ------------------------------------------------------------------ expansion */

static void canon_add(char *buf, size_t cap, size_t *k, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void canon_add(char *buf, size_t cap, size_t *k, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf + *k, *k < cap ? cap - *k : 0, fmt, ap);
    va_end(ap);
    if (n > 0) *k += (size_t)n;
}

static int make_canon(const SweepSpec *s, RunConfig *r, SpErr *err) {
    const DecodeConfig *c = &r->dc;
    char *b = r->canon;
    size_t cap = sizeof r->canon, k = 0;
    canon_add(b, cap, &k, "sprinter-run 1\nmethod %s\n", decode_method_name(c->method));
    if (method_is(c->method, MC_USES_DRAFT)) canon_add(b, cap, &k, "draft_sha256 %s\n", s->draft_sha256);
    if (method_is(c->method, MC_USES_TARGET)) canon_add(b, cap, &k, "target_sha256 %s\n", s->target_sha256);
    canon_add(b, cap, &k, "dataset_sha256 %s\ndata_format %s\nprompt_offset %d\nn_prompts %d\n", s->data_sha256[r->dataset],
              s->data_format[0] ? s->data_format : "auto", s->prompt_offset, s->n_prompts);
    if (s->eval_on_verifier_prompts) canon_add(b, cap, &k, "eval_on_verifier_prompts 1\n");
    canon_add(b, cap, &k, "max_new %d\ntemperature %.9g\ntop_k %d\ntop_p %.9g\nstop_at_eos %d\naudit %d\nseed %llu\n",
              c->max_new, (double)c->sampling.temperature, c->sampling.top_k, (double)c->sampling.top_p,
              c->stop_at_eos, c->audit, (unsigned long long)r->seed);
    for (int p = 0; p < RP_COUNT; p++)
        if ((r->applies & B(p)) && run_param_named((RunParam)p, run_param_value(c, (RunParam)p)))
            canon_add(b, cap, &k, "%s %.17g\n", run_param_info((RunParam)p)->name, run_param_value(c, (RunParam)p));
    if (method_is(c->method, MC_NEEDS_VERIFIER))
        canon_add(b, cap, &k, "verifier data_sha256=%s format=%s n_prompts=%d max_new=%d seed=%llu l2=%.17g val=%.17g tau=%.17g\n",
                  s->ver_data_sha256, s->ver_format[0] ? s->ver_format : "auto", s->ver_n_prompts, s->ver_max_new,
                  (unsigned long long)s->ver_seed, s->ver_l2, s->ver_val_fraction, s->ver_tau);
    if (method_is(c->method, MC_NEEDS_JUDGE)) /* the judge head: [verifier]'s data and settings, recipe sound, token */
        canon_add(b, cap, &k, "judge data_sha256=%s format=%s n_prompts=%d max_new=%d seed=%llu l2=%.17g val=%.17g tau=%.17g\n",
                  s->ver_data_sha256, s->ver_format[0] ? s->ver_format : "auto", s->ver_n_prompts, s->ver_max_new,
                  (unsigned long long)s->ver_seed, s->ver_l2, s->ver_val_fraction, s->ver_tau);
    if (s->prompt_template != PROMPT_TEMPLATE_NONE) /* absent for the default (hashes as before) */
        canon_add(b, cap, &k, "prompt_template %s\n", prompt_template_name(s->prompt_template));
    if (c->label_rule != PROTOCOL_SOUND) /* set for sprinter-type runs only; absent by default (hashes as before) */
        canon_add(b, cap, &k, "label_rule %s\n", protocol_name(c->label_rule));
    if (method_is(c->method, MC_NEEDS_VERIFIER) && s->ver_recipe != PROTOCOL_SOUND) /* absent by default */
        canon_add(b, cap, &k, "verifier_recipe %s\n", protocol_name(s->ver_recipe));
    if (method_is(c->method, MC_NEEDS_VERIFIER) && s->ver_feature != VF_TOKEN) /* absent for the token default */
        canon_add(b, cap, &k, "verifier_feature %s\n", verifier_feature_name(s->ver_feature));
    if (method_is(c->method, MC_NEEDS_VERIFIER) && s->ver_padded_batches) /* absent by default */
        canon_add(b, cap, &k, "verifier_padded_batches 1\n");
    if (method_is(c->method, MC_CONFIDENCE)) /* since the confidence is the plain softmax's (issue 25) */
        canon_add(b, cap, &k, "draft_confidence softmax-t1\n");
    if (k >= cap) return sp_fail(err, "%s: run configuration text too long", s->path);
    sha256_str(b, k, r->hash);
    return 0;
}

typedef struct Expand {
    const SweepSpec *s;
    RunConfig *runs;
    int n, cap;
    SpErr *err;
} Expand;

static int add_run(Expand *E, const RunConfig *r) {
    for (int i = 0; i < E->n; i++)
        if (!strcmp(E->runs[i].hash, r->hash)) return 0; /* same configuration listed twice */
    if (E->n == E->cap) {
        int nc = E->cap ? E->cap * 2 : 64;
        RunConfig *nr = realloc(E->runs, (size_t)nc * sizeof *nr);
        if (!nr) return sp_fail(E->err, "out of memory expanding the grid");
        E->runs = nr;
        E->cap = nc;
    }
    E->runs[E->n] = *r;
    E->runs[E->n].index = E->n;
    E->n++;
    return 0;
}

/* Recursively assigns parameter p and the ones after it. */
static int expand_params(Expand *E, RunConfig *r, int p) {
    if (p == RP_COUNT) {
        if (decode_config_check(&r->dc, E->err)) return sp_err_prefix(E->err, "%s", E->s->path);
        if (make_canon(E->s, r, E->err)) return -1;
        return add_run(E, r);
    }
    const SpecList *L = &E->s->grid[p];
    if (!(r->applies & B(p)) || L->n == 0) return expand_params(E, r, p + 1);
    for (int i = 0; i < L->n; i++) {
        param_set(&r->dc, (RunParam)p, L->v[i]);
        if (expand_params(E, r, p + 1)) return -1;
    }
    return 0;
}

/* Refuse grids whose expansion would not fit in memory or in any sensible sweep. */
#define SPEC_MAX_RUNS 100000

/* Upper bound on the runs the grid expands to (before removing duplicates). */
static double grid_size(const SweepSpec *s) {
    double total = 0;
    for (int m = 0; m < s->n_methods; m++) {
        double per = (double)s->n_datasets * (double)s->n_seeds;
        unsigned ap = method_params(s->methods[m]);
        for (int p = 0; p < RP_COUNT; p++)
            if ((ap & B(p)) && s->grid[p].n > 0) per *= s->grid[p].n;
        total += per;
    }
    return total;
}

int spec_expand(const SweepSpec *s, RunConfig **runs, int *n, SpErr *err) {
    Expand E = {s, NULL, 0, 0, err};
    *runs = NULL;
    *n = 0;
    double size = grid_size(s);
    if (size > SPEC_MAX_RUNS)
        return sp_fail(err, "%s: [grid]: the grid expands to %.0f runs (limit %d)", s->path, size, SPEC_MAX_RUNS);
    for (int m = 0; m < s->n_methods; m++)
        for (int d = 0; d < s->n_datasets; d++)
            for (int k = 0; k < s->n_seeds; k++) {
                RunConfig *r = calloc(1, sizeof *r);
                if (!r) {
                    free(E.runs);
                    return sp_fail(err, "out of memory");
                }
                decode_config_default(&r->dc);
                r->dc.method = s->methods[m];
                r->dc.sampling = s->sampling;
                r->dc.max_new = s->max_new;
                r->dc.stop_at_eos = s->stop_at_eos;
                r->dc.audit = s->audit;
                if (method_is(s->methods[m], MC_SEQUENTIAL)) r->dc.label_rule = s->label_rule; /* where it applies */
                r->dataset = d;
                r->seed = s->seeds[k];
                r->applies = method_params(s->methods[m]);
                int rc = expand_params(&E, r, 0);
                free(r);
                if (rc) {
                    free(E.runs);
                    return -1;
                }
            }
    *runs = E.runs;
    *n = E.n;
    return 0;
}

int spec_run_timed(const SweepSpec *s, const RunConfig *r) {
    for (int p = 0; p < RP_COUNT; p++) {
        const SpecList *L = &s->timing_only[p];
        if (L->n > 0 && (r->applies & B(p)) && !list_has(L, run_param_value(&r->dc, (RunParam)p))) return 0;
    }
    return 1;
}

int run_in_shard(const RunConfig *r, int shard_i, int shard_n) { return shard_n <= 1 || r->index % shard_n == shard_i; }

void run_params_label(const RunConfig *r, char *buf, int cap) {
    double values[RP_COUNT];
    for (int p = 0; p < RP_COUNT; p++) values[p] = (r->applies & B(p)) ? run_param_value(&r->dc, (RunParam)p) : NAN;
    run_params_format(values, buf, cap);
}
