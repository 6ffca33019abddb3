/* test_spec.c - sweep spec parsing, checking and grid expansion (experiments/spec.h).
 *
 *   usage: test_spec WORKDIR
 *
 * Checks: the grid multiplies each method only by the parameters it uses; run hashes are stable,
 * change with every parameter that applies and with nothing that does not; duplicate values do
 * not duplicate runs; sharding partitions the runs; bad specs fail with a one-line error that
 * names the file and the key. Deterministic: no false failures. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "schema.h"
#include "spec.h"

#include "check.h"

typedef struct T {
    const char *dir;
} T;

static const char kBase[] =
    "[sweep]\nmethods = ar, sd, sprinter\n"
    "[models]\ndraft = d\ntarget = t\n"
    "[data]\ndatasets = x.jsonl\nn_prompts = 4\noffset = 10\n"
    "[decode]\nmax_new_tokens = 8\n"
    "[grid]\nseeds = 1, 2\nlambda = 1.0, 1.2\ntau = 0.3 0.5\ngamma = 3, 5\n"
    "[verifier]\ndata = v.jsonl\nn_prompts = 10\n";

/* Writes text to DIR/name.ini and loads it. */
static int load(T *t, const char *name, const char *text, SweepSpec *s, SpErr *err) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s.ini", t->dir, name);
    FILE *f = fopen(path, "w");
    if (!f) return sp_fail(err, "cannot write %s", path);
    fputs(text, f);
    fclose(f);
    memset(err, 0, sizeof *err);
    return spec_load(path, s, err);
}

static int count_method(const RunConfig *r, int n, DecodeMethod m) {
    int k = 0;
    for (int i = 0; i < n; i++) k += r[i].dc.method == m;
    return k;
}

static const RunConfig *find(const RunConfig *r, int n, DecodeMethod m, uint64_t seed, double lambda, double tau,
                             int gamma) {
    for (int i = 0; i < n; i++)
        if (r[i].dc.method == m && r[i].seed == seed && (m != DM_SPRINTER || (r[i].dc.lambda == lambda && r[i].dc.tau == tau)) &&
            (m != DM_SD || r[i].dc.gamma == gamma))
            return &r[i];
    return NULL;
}

/* Replaces the first occurrence of `from` in kBase by `to`. */
static void variant(char *out, size_t cap, const char *from, const char *to) {
    const char *p = strstr(kBase, from);
    if (!p) {
        snprintf(out, cap, "%s", kBase);
        return;
    }
    snprintf(out, cap, "%.*s%s%s", (int)(p - kBase), kBase, to, p + strlen(from));
}

static void test_expand(T *t) {
    SweepSpec *s = calloc(1, sizeof *s), *s2 = calloc(1, sizeof *s2);
    SpErr err;
    RunConfig *r = NULL, *r2 = NULL;
    int n = 0, n2 = 0;
    check(load(t, "base", kBase, s, &err) == 0, "load base (%s)", err.msg);
    check(spec_expand(s, &r, &n, &err) == 0, "expand base");
    /* ar: 2 seeds; sd: 2 gammas x 2 seeds; sprinter: 2 lambdas x 2 taus x 2 seeds */
    check(n == 14, "base grid has 2 + 4 + 8 = 14 runs");
    check(count_method(r, n, DM_AR) == 2, "ar is not multiplied by lambda, tau, gamma");
    check(count_method(r, n, DM_SD) == 4, "sd is multiplied by gamma only");
    check(count_method(r, n, DM_SPRINTER) == 8, "sprinter is multiplied by lambda and tau, not gamma");
    int idx_ok = 1;
    for (int i = 0; i < n; i++) idx_ok &= r[i].index == i && strlen(r[i].hash) == 64;
    check(idx_ok, "runs are numbered 0..n-1 and hashed");
    int uniq = 1;
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++) uniq &= strcmp(r[i].hash, r[j].hash) != 0;
    check(uniq, "run hashes are distinct");
    const RunConfig *sp = find(r, n, DM_SPRINTER, 2, 1.2, 0.3, 0);
    check(sp && sp->dc.lambda == 1.2 && sp->dc.tau == 0.3 && sp->dc.gamma == 5, "sprinter run keeps the default gamma");
    check(sp && strstr(sp->canon, "tau 0.29999") && !strstr(sp->canon, "gamma"), "canonical text lists only what applies");

    /* [timing] tau = 0.5, lambda = 1.2: sprinter at (1.2, 0.5) and every ar and sd run are timed */
    {
        char tt[2048];
        snprintf(tt, sizeof tt, "%s[timing]\nreps = 2\ntau = 0.5\nlambda = 1.2\n", kBase);
        SweepSpec *st = calloc(1, sizeof *st);
        RunConfig *rt = NULL;
        int nt = 0, timed = 0, wrong = 0;
        check(st && load(t, "timed", tt, st, &err) == 0 && spec_expand(st, &rt, &nt, &err) == 0, "load [timing] tau (%s)",
              err.msg);
        for (int i = 0; i < nt; i++) {
            int want = rt[i].dc.method != DM_SPRINTER || (rt[i].dc.tau == 0.5 && rt[i].dc.lambda == 1.2);
            timed += spec_run_timed(st, &rt[i]);
            wrong += spec_run_timed(st, &rt[i]) != want;
        }
        check(nt == n && timed == 2 + 4 + 2 && wrong == 0, "[timing] tau 0.5, lambda 1.2 times %d of %d runs (ar, sd and "
              "sprinter at (1.2, 0.5): 8), %d wrong; the runs are the same %d", timed, nt, wrong, nt);
        int all = 1;
        for (int i = 0; i < n; i++) all &= spec_run_timed(s, &r[i]);
        check(all, "without [timing] parameters every run is timed");
        free(rt);
        free(st);
    }

    /* the same spec again: the same hashes */
    check(load(t, "base2", kBase, s2, &err) == 0 && spec_expand(s2, &r2, &n2, &err) == 0 && n2 == n, "reload");
    int same = n2 == n;
    for (int i = 0; same && i < n; i++) same = !strcmp(r[i].hash, r2[i].hash);
    check(same, "the same spec gives the same run hashes");
    free(r2);

    /* changing tau leaves sd's and ar's hashes alone; changes sprinter's */
    char txt[2048];
    variant(txt, sizeof txt, "tau = 0.3 0.5", "tau = 0.4 0.5");
    check(load(t, "tau", txt, s2, &err) == 0 && spec_expand(s2, &r2, &n2, &err) == 0 && n2 == n, "tau variant");
    const RunConfig *a = find(r, n, DM_SD, 1, 0, 0, 3), *b = find(r2, n2, DM_SD, 1, 0, 0, 3);
    check(a && b && !strcmp(a->hash, b->hash), "tau does not change sd's run hash");
    a = find(r, n, DM_SPRINTER, 1, 1.0, 0.5, 0), b = find(r2, n2, DM_SPRINTER, 1, 1.0, 0.5, 0);
    check(a && b && !strcmp(a->hash, b->hash), "an unchanged sprinter setting keeps its hash");
    check(find(r2, n2, DM_SPRINTER, 1, 1.0, 0.3, 0) == NULL, "tau 0.3 is gone");
    free(r2);

    /* changing gamma leaves sprinter alone */
    variant(txt, sizeof txt, "gamma = 3, 5", "gamma = 4");
    check(load(t, "gamma", txt, s2, &err) == 0 && spec_expand(s2, &r2, &n2, &err) == 0 && n2 == 12, "gamma variant");
    a = find(r, n, DM_SPRINTER, 2, 1.2, 0.5, 0), b = find(r2, n2, DM_SPRINTER, 2, 1.2, 0.5, 0);
    check(a && b && !strcmp(a->hash, b->hash), "gamma does not change sprinter's run hash");
    free(r2);

    /* [verifier] feature = prefix changes sprinter's hashes only; the token default leaves them as before */
    variant(txt, sizeof txt, "n_prompts = 10\n", "n_prompts = 10\nfeature = prefix\n");
    check(load(t, "feature", txt, s2, &err) == 0 && spec_expand(s2, &r2, &n2, &err) == 0 && n2 == n, "feature variant");
    a = find(r, n, DM_SPRINTER, 2, 1.2, 0.5, 0), b = find(r2, n2, DM_SPRINTER, 2, 1.2, 0.5, 0);
    const RunConfig *sd_a = find(r, n, DM_SD, 1, NAN, NAN, 3), *sd_b = find(r2, n2, DM_SD, 1, NAN, NAN, 3);
    check(a && b && strcmp(a->hash, b->hash) && strstr(b->canon, "verifier_feature prefix") &&
              !strstr(a->canon, "verifier_feature") && sd_a && sd_b && !strcmp(sd_a->hash, sd_b->hash),
          "the prefix feature changes sprinter's run hash (and canonical text), not sd's");
    free(r2);

    /* [decode] protocol = paper-code: the authors' defaults for what the spec leaves unset; explicit
     * settings win; the sound default names no round setting (run hashes as before schema 6) */
    check(sp && !strstr(sp->canon, "bonus") && !strstr(sp->canon, "finish_round") && !strstr(sp->canon, "label_rule"),
          "sound protocol: bonus / finish_round 0 are not in the canonical text");
    variant(txt, sizeof txt, "[decode]\n", "[decode]\nprotocol = paper-code\n");
    check(load(t, "paper", txt, s2, &err) == 0 && spec_expand(s2, &r2, &n2, &err) == 0 && n2 == n, "paper-code (%s)",
          err.msg);
    a = find(r2, n2, DM_SPRINTER, 2, 1.2, 0.5, 0), b = find(r2, n2, DM_SD, 1, NAN, NAN, 3);
    check(a && b && a->dc.sampling.temperature == 0 && b->dc.sampling.temperature == 0 && a->dc.bonus == 1 &&
              a->dc.finish_round == 1 && a->dc.max_run == 19 && s2->ver_feature == VF_PREFIX &&
              strstr(a->canon, "bonus 1\nfinish_round 1\n") && !strstr(b->canon, "bonus") &&
              a->dc.label_rule == PROTOCOL_PAPER_CODE && strstr(a->canon, "label_rule paper-code") &&
              s2->ver_recipe == PROTOCOL_PAPER_CODE && s2->ver_val_fraction == 0.3 &&
              strstr(a->canon, "verifier_recipe paper-code") && s2->ver_padded_batches == 1 &&
              strstr(a->canon, "verifier_padded_batches 1") &&
              b->dc.label_rule == PROTOCOL_SOUND && !strstr(b->canon, "label_rule"),
          "paper-code: greedy, bonus 1, finish_round 1, max_run 19, prefix feature, padded batches, the authors' "
          "label rule (the round and the label rule for sprinter only)");
    free(r2);
    static const char kPaperOwn[] =
        "[sweep]\nmethods = ar, sd, sprinter\n[models]\ndraft = d\ntarget = t\n"
        "[data]\ndatasets = x.jsonl\nn_prompts = 4\noffset = 10\n"
        "[decode]\nmax_new_tokens = 8\nprotocol = paper-code\ntemperature = 1\n"
        "[grid]\nseeds = 1, 2\nlambda = 1.2\ntau = 0.5\nmax_run = 5\nbonus = 0\n"
        "[verifier]\ndata = v.jsonl\nn_prompts = 10\nfeature = token\n";
    check(load(t, "paper2", kPaperOwn, s2, &err) == 0 && spec_expand(s2, &r2, &n2, &err) == 0, "paper-code, overridden (%s)",
          err.msg);
    a = find(r2, n2, DM_SPRINTER, 2, 1.2, 0.5, 0);
    check(a && a->dc.sampling.temperature == 1 && a->dc.bonus == 0 && a->dc.finish_round == 1 && a->dc.max_run == 5 &&
              s2->ver_feature == VF_TOKEN && s2->ver_padded_batches == 0,
          "paper-code: the spec's own temperature, max_run, bonus and feature are kept (no padded batches on the "
          "token feature)");
    free(r2);
    variant(txt, sizeof txt, "n_prompts = 10\n", "n_prompts = 10\npadded_batches = true\n");
    check(load(t, "padded", txt, s2, &err) != 0 && strstr(err.msg, "padded_batches") && strstr(err.msg, "paper-code"),
          "padded_batches on the sound recipe is refused: %s", err.msg);
    variant(txt, sizeof txt, "gamma = 3, 5", "gamma = 3, 5\nfinish_round = 1");
    check(load(t, "finish", txt, s2, &err) == 0 && spec_expand(s2, &r2, &n2, &err) != 0 && strstr(err.msg, "max_run"),
          "finish_round without a cap is refused at expansion: %s", err.msg);

    /* duplicates in lists do not duplicate runs */
    variant(txt, sizeof txt, "tau = 0.3 0.5", "tau = 0.5, 0.5, 0.3");
    check(load(t, "dup", txt, s2, &err) == 0 && spec_expand(s2, &r2, &n2, &err) == 0 && n2 == 14,
          "repeated values are deduplicated");
    free(r2);

    /* sharding partitions the runs */
    for (int N = 1; N <= 4; N++) {
        int ok = 1;
        for (int i = 0; i < n; i++) {
            int owners = 0;
            for (int k = 0; k < N; k++) owners += run_in_shard(&r[i], k, N);
            ok &= owners == 1;
        }
        check(ok, "%d shards: every run in exactly one", N);
    }
    check(prompt_seed(1, 0) != prompt_seed(1, 1) && prompt_seed(1, 0) != prompt_seed(2, 0) &&
                 prompt_seed(7, 3) == prompt_seed(7, 3),
          "prompt seeds differ by prompt and seed, and are repeatable");
    char lab[128];
    run_params_label(sp, lab, sizeof lab);
    check(!strcmp(lab, "lambda=1.2 tau=0.3 max_run=0"), "parameter label");
    free(r);
    free(s);
    free(s2);
}

typedef struct Bad {
    const char *from, *to; /* edit of kBase */
    const char *want;      /* substring of the error */
} Bad;

static void test_bad(T *t) {
    static const Bad cases[] = {
        {"[grid]\n", "[grid]\nfrobnicate = 3\n", "[grid] frobnicate: unknown key"},
        {"[grid]\n", "[gird]\nx = 1\n[grid]\n", "[gird] x: unknown section"},
        {"tau = 0.3 0.5", "tau =", "[grid] tau: empty list"},
        {"tau = 0.3 0.5", "tau = 0.3, 1.5", "[grid] tau: 1.5 is out of range [0, 1]"},
        {"tau = 0.3 0.5", "tau = -0.1", "tau: -0.1 is out of range"},
        {"lambda = 1.0, 1.2", "lambda = 0", "lambda: 0 is out of range (0,"},
        {"lambda = 1.0, 1.2", "lambda = 1e-320", "lambda: 1e-320 is outside the range of a double"},
        {"gamma = 3, 5", "gamma = 2.5", "gamma: 2.5 must be a whole number"},
        {"gamma = 3, 5", "gamma = 0", "gamma: 0 is out of range [1, 64]"},
        {"gamma = 3, 5", "gamma = x", "gamma: \"x\" is not a number"},
        {"seeds = 1, 2", "seeds = -1", "seeds: \"-1\" is not a seed"},
        {"seeds = 1, 2", "seeds = ", "[grid] seeds: empty list"},
        {"methods = ar, sd, sprinter", "methods = ar, fast", "unknown method \"fast\""},
        {"methods = ar, sd, sprinter", "methods =", "[sweep] methods: empty list"},
        {"methods = ar, sd, sprinter\n", "", "[sweep] methods: missing"},
        {"target = t\n", "", "[models] target: missing"},
        {"datasets = x.jsonl\n", "", "[data] datasets: missing"},
        {"n_prompts = 4\n", "n_prompts = 0\n", "[data] n_prompts: \"0\" is not an integer >= 1"},
        {"max_new_tokens = 8", "max_new_tokens = 8\nmax_new_tokens = 9", "[decode] max_new_tokens: given twice"},
        /* a list key repeated on the next line is a repeat, not a continuation (issue 27, class 5) */
        {"gamma = 3, 5", "gamma = 3\ngamma = 4", ".ini:17: [grid] gamma: given twice"},
        {"seeds = 1, 2", "seeds = 1\nseeds = 2", ".ini:14: [grid] seeds: given twice"},
        {"gamma = 3, 5", "gamma = 3\n[grid]\ngamma = 4", ".ini:18: [grid] gamma: given twice"},
        {"tau = 0.3 0.5", "tau = 0.3,\n  0.5\ntau = 0.7", ".ini:17: [grid] tau: given twice"},
        {"methods = ar, sd, sprinter", "methods = ar\nmethods = sd", ".ini:3: [sweep] methods: given twice"},
        /* a name is a name, not a path (issue 27, class 6) */
        {"methods = ar, sd, sprinter", "name = ../../escaped\nmethods = ar, sd", "[sweep] name: \"../../escaped\" is not a name"},
        {"methods = ar, sd, sprinter", "name = ..\nmethods = ar, sd", "[sweep] name: \"..\" is not a name"},
        {"methods = ar, sd, sprinter", "name = a/b\nmethods = ar, sd", "[sweep] name: \"a/b\" is not a name"},
        {"methods = ar, sd, sprinter", "name = .hidden\nmethods = ar, sd", "[sweep] name: \".hidden\" is not a name"},
        {"methods = ar, sd, sprinter", "name = a\tb\nmethods = ar, sd", "[sweep] name: \"a b\" is not a name"},
        {"methods = ar, sd, sprinter", "name = a\x01z\nmethods = ar, sd", "[sweep] name: \"a z\" is not a name"},
        {"[verifier]\ndata = v.jsonl\nn_prompts = 10\n", "", "[verifier]: missing, but sprinter/specdecpp need"},
        {"[decode]\n", "[decode]\ntemperature = -1\n", "[decode] temperature: \"-1\" is not a number in [0, 1e6]"},
        {"[decode]\n", "[decode]\ntop_p = 0\n", "[decode] top_p"},
        {"[decode]\n", "[decode]\naudit = maybe\n", "[decode] audit: \"maybe\" is not a boolean"},
        {"[decode]\n", "[decode]\nthis line has no equals sign\n", "syntax error"},
        {"[data]\n", "[data]\nformat = xml\n", "[data] format: \"xml\" is not one of"},
        {"[decode]\n", "[decode]\nprotocol = paper\n", "[decode] protocol: \"paper\" is not sound or paper-code"},
        {"[decode]\n", "[decode]\nlabel_rule = raw\n", "[decode] label_rule: \"raw\" is not sound or paper-code"},
        {"gamma = 3, 5", "bonus = 2", "[grid] bonus: 2 is out of range [0, 1]"},
        {"n_prompts = 10\n", "n_prompts = 10\nfeature = middle\n", "[verifier] feature: \"middle\" is not token or prefix"},
        {"methods = ar, sd, sprinter", "methods = ar, specdecpp\n[verifier]\nfeature = prefix",
         "[verifier] feature: prefix does not apply to specdecpp"},
        {"n_prompts = 10\n", "n_prompts = 10\n[timing]\nreps = 2\ntau = 0.4\n",
         "[timing] tau: 0.4 is not a value of [grid] tau"},
        {"n_prompts = 10\n", "n_prompts = 10\n[timing]\ntau = 7\n", "[timing] tau: "},
    };
    SweepSpec *s = calloc(1, sizeof *s);
    SpErr err;
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char txt[2048], name[32];
        variant(txt, sizeof txt, cases[i].from, cases[i].to);
        snprintf(name, sizeof name, "bad%zu", i);
        int rc = load(t, name, txt, s, &err);
        int ok = rc != 0 && strstr(err.msg, cases[i].want) && strstr(err.msg, name) && !strchr(err.msg, '\n');
        check(ok, "bad spec %zu: want \"%s\", got \"%s\"", i, cases[i].want, rc ? err.msg : "(accepted)");
    }
    /* an over-long line is named as such, not as a syntax error; continuation lines extend lists */
    char longer[400] = "tau = 0.3";
    for (int i = 0; i < 40; i++) strcat(longer, ", 0.5");
    char txt2[2400];
    variant(txt2, sizeof txt2, "tau = 0.3 0.5", longer);
    check(load(t, "long", txt2, s, &err) != 0 && strstr(err.msg, "long.ini:15: line longer than"), "over-long line");
    variant(txt2, sizeof txt2, "tau = 0.3 0.5", "tau = 0.3,\n  0.5,\n  0.7");
    check(load(t, "cont", txt2, s, &err) == 0 && s->grid[RP_TAU].n == 3, "a list continues on indented lines");
    /* a line number points at the offending line */
    char txt[2048];
    variant(txt, sizeof txt, "tau = 0.3 0.5", "tau = 7");
    check(load(t, "line", txt, s, &err) != 0 && strstr(err.msg, "line.ini:15:"), "error names the line");
    /* a spec path that is a directory is named as such (it read as an empty spec: "[sweep] methods: missing") */
    char dir[1100];
    snprintf(dir, sizeof dir, "%s/a_directory.ini", t->dir);
    mkdir(dir, 0755);
    check(spec_load(dir, s, &err) != 0 && strstr(err.msg, "not a regular file (a directory)"),
          "a directory as the spec: %s", err.msg);
    /* spec_resolve: missing model directory */
    check(load(t, "resolve", kBase, s, &err) == 0, "load for resolve");
    memset(&err, 0, sizeof err);
    check(spec_resolve(s, &err) != 0 && strstr(err.msg, "[models] draft: d is not a directory"),
          "missing model directory is named");
    free(s);
}

/* mkdir -p */
/* The one grid-parameter table (params_table.h) and what it drives: runs columns, defaults, ranges,
 * the accessors and the canonical text's parameter lines. */
static void test_param_table(T *t) {
    /* every parameter: exactly one runs column, named as the row, of its type and schema version */
    int cols_ok = 1;
    for (int p = 0; p < RP_COUNT; p++) {
        const ParamInfo *pi = run_param_info((RunParam)p);
        int found = 0;
        for (int i = 0; i < kRunsTable.n_cols; i++) {
            const DbColumn *c = &kRunsTable.cols[i];
            if (c->param != p) continue;
            found++;
            if (strcmp(c->name, pi->name) || strcmp(c->decl, pi->integer ? "INTEGER" : "REAL") || c->since != pi->since ||
                c->until != 0) {
                printf("  column %s: decl %s since %d, row %s integer %d since %d\n", c->name, c->decl, c->since, pi->name,
                       pi->integer, pi->since);
                cols_ok = 0;
            }
        }
        if (found != 1) printf("  %s: %d runs columns\n", pi->name, found), cols_ok = 0;
    }
    check(cols_ok, "each grid parameter has one runs column of its row's name, type and schema version");
    /* ALTER TABLE appends: a new and an upgraded file agree on the order only if since never decreases */
    const DbTable *tables[] = {&kRunsTable, &kPromptsTable, &kOutputsTable};
    int order_ok = 1;
    for (int k = 0; k < 3; k++)
        for (int i = 1; i < tables[k]->n_cols; i++)
            if (tables[k]->cols[i].since < tables[k]->cols[i - 1].since) {
                printf("  %s.%s (since %d) after %s (since %d)\n", tables[k]->name, tables[k]->cols[i].name,
                       tables[k]->cols[i].since, tables[k]->cols[i - 1].name, tables[k]->cols[i - 1].since);
                order_ok = 0;
            }
    check(order_ok, "columns' schema versions never decrease along a table");

    /* defaults: the row's, readable through the generated accessors, and in range */
    DecodeConfig c;
    decode_config_default(&c);
    int def_ok = 1;
    for (int p = 0; p < RP_COUNT; p++) def_ok &= run_param_value(&c, (RunParam)p) == run_param_info((RunParam)p)->dflt;
    SpErr err = {{0}};
    check(def_ok && c.gamma == SP_DEFAULT_GAMMA && c.tau == SP_DEFAULT_TAU && c.lambda == SP_DEFAULT_LAMBDA &&
              c.eta_tp == 1.0 && c.max_run == 0 && decode_config_check(&c, &err) == 0,
          "decode_config_default sets each parameter to its row's default, which passes the check");

    /* the engine's check takes the row's range */
    char range[48];
    c.tau = 1.5;
    check(decode_config_check(&c, &err) != 0 && !strcmp(err.msg, "tau = 1.5 must be in [0, 1]"),
          "decode_config_check: tau 1.5 refused as the table says (%s)", err.msg);
    decode_config_default(&c);
    c.oracle_stay = 1;
    check(decode_config_check(&c, &err) != 0 && !strcmp(err.msg, "oracle_stay = 1 must be in [0, 1)"),
          "decode_config_check: oracle_stay 1 refused (%s)", err.msg);
    decode_config_default(&c);
    c.lambda = 0;
    check(decode_config_check(&c, &err) != 0 && strstr(err.msg, "lambda = 0 must be in (0, "),
          "decode_config_check: lambda 0 refused (%s)", err.msg);
    check(!strcmp(run_param_range(RP_GAMMA, range), "[1, 64]") && !strcmp(run_param_range(RP_MAX_RUN, range), "[0, 1048576]"),
          "range text of gamma and max_run");
    check(run_param_check(RP_GAMMA, 2.5, &err) != 0 && !strcmp(err.msg, "gamma = 2.5 must be a whole number") &&
              run_param_check(RP_TAU, NAN, &err) != 0 && run_param_check(RP_BONUS, 1, &err) == 0,
          "run_param_check: whole numbers, NaN");
    check(method_params(DM_SD) == (1u << RP_GAMMA) && method_params(DM_AR) == 0 &&
              method_params(DM_ORACLE_MARKOV) == ((1u << RP_LAMBDA) | (1u << RP_MAX_RUN) | (1u << RP_ETA_FP) |
                                                  (1u << RP_ETA_TP) | (1u << RP_ORACLE_STAY) | (1u << RP_BONUS) |
                                                  (1u << RP_FINISH_ROUND)),
          "method_params from the rows' methods");

    /* the canonical text's parameter lines: RunParam order, "name %.17g" (run hashes depend on it) */
    SweepSpec *s = calloc(1, sizeof *s);
    RunConfig *r = NULL;
    int n = 0;
    const char *txt = "[sweep]\nmethods = sprinter, oracle-markov\n"
                      "[models]\ndraft = d\ntarget = t\n"
                      "[data]\ndatasets = x.jsonl\nn_prompts = 4\noffset = 10\n"
                      "[decode]\nmax_new_tokens = 8\n"
                      "[grid]\nseeds = 1\nlambda = 1.2\ntau = 0.3\nmax_run = 19\neta_fp = 0.1\noracle_stay = 0.5\n"
                      "bonus = 1\nfinish_round = 1\n"
                      "[verifier]\ndata = v.jsonl\nn_prompts = 10\n";
    int ok = load(t, "table", txt, s, &err) == 0 && spec_expand(s, &r, &n, &err) == 0 && n == 2;
    check(ok && strstr(r[0].canon, "\nlambda 1.2\ntau 0.29999999999999999\nmax_run 19\nbonus 1\nfinish_round 1\n") &&
              strstr(r[1].canon, "\nlambda 1.2\nmax_run 19\neta_fp 0.10000000000000001\neta_tp 1\noracle_stay 0.5\n"
                                 "bonus 1\nfinish_round 1\n"),
          "canonical text: parameter lines in table order, %%.17g (%s)", ok ? "" : err.msg);
    free(r);
    free(s);
}

static void mkdirs(const char *path) {
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            mkdir(buf, 0755);
            *p = '/';
        }
    mkdir(buf, 0755);
}

int main(int argc, char **argv) {
    T t = {argc > 1 ? argv[1] : "/tmp/test_spec"};
    mkdirs(t.dir);
    test_expand(&t);
    test_bad(&t);
    test_param_table(&t);
    return check_summary("test_spec");
}
