/* cmd_analyze.c - `sprinter analyze RESULTS`: the report of a results directory (analysis/report.h).
 * The only part here is the glue the analysis must not own: the dataset references for ROUGE,
 * read with the dataset loaders (data/loaders). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "args.h"
#include "commands.h"
#include "dataset.h"
#include "hashutil.h"
#include "report.h"
#include "rules.h"


static const char kHelp[] =
    "usage: sprinter analyze RESULTS [options]\n"
    "Reads RESULTS/runs.sqlite and RESULTS/tokens/RUNHASH.h5 (and the outputs table of `sprinter score`,\n"
    "RESULTS/dtv.h5 and RESULTS/dtv/NAME.h5 of `sprinter dtv`, when present) and writes RESULTS/report/:\n"
    "index.md (operating points, Theorem 3.1/3.3/3.4 checks, i.i.d. tests, quality, drift), tables.md (the\n"
    "paper's tables),\n"
    "checks.tsv, iid.tsv, runs.tsv, n_dist.tsv and the plots (gnuplot: PNG + SVG). Prints the report's\n"
    "path. See analysis/report.h and results/README.md.\n"
    "  --alpha A            family-wise level of the checks and of each run's i.i.d. verdict (default 0.05)\n"
    "  --bootstrap B        bootstrap replicates over prompts (default 200)\n"
    "  --seed S             bootstrap seed (default 1)\n"
    "  --deployed-lambda L  --deployed-tau T   the deployed setting to report (default " SP_STR(SP_PAPER_LAMBDA) ", "
    SP_STR(SP_PAPER_TAU) ")\n"
    "  --code-lambda L      the paper-code protocol's lambda for FINDINGS rows 4-6 (default 1: the authors'\n"
    "                       label rule q <= p; --deployed-lambda applies to the sound protocol)\n"
    "  --tie-margin M       win-tie: a tie is within M nats per token (default 0.05)\n"
    "  --gnuplot PROG       the gnuplot program (default gnuplot, from PATH)\n"
    "  --no-plots           write the plot data and scripts but do not run gnuplot\n"
    "  --quiet              no progress lines on stderr\n"
    "  --test-shift X       testing: add X to every predicted E[N] / E[T] (the checks must then fail)\n";

/* The datasets the runs name, loaded on first use. A relative path is as the sweep saw it (from its
 * working directory), so it is tried as given, then from the results directory's parent and
 * grandparent; the file used must have the SHA-256 the run recorded. */
typedef struct Refs {
    struct {
        char path[1024], format[32];
        Dataset ds;
        int ok;
    } set[16];
    int n;
    int quiet;
    const char *results_dir;
} Refs;

static int find_dataset(const Refs *r, const char *dataset, const char *sha256, char *out, size_t cap) {
    char cand[3][4200];
    int n = 0;
    snprintf(cand[n++], sizeof cand[0], "%s", dataset);
    if (dataset[0] != '/') {
        snprintf(cand[n++], sizeof cand[0], "%s/../%s", r->results_dir, dataset);
        snprintf(cand[n++], sizeof cand[0], "%s/../../%s", r->results_dir, dataset);
    }
    for (int i = 0; i < n; i++) {
        char h[SP_SHA256_HEX];
        if (access(cand[i], R_OK) == 0 && sha256_file(cand[i], h, NULL) == 0 && !strcmp(h, sha256)) {
            snprintf(out, cap, "%s", cand[i]);
            return 0;
        }
    }
    return -1;
}

/* the dataset's joined answers go to the report unchanged */
_Static_assert(DATASET_REFERENCE_SEPARATOR == REPORT_REFERENCE_SEPARATOR, "reference separators differ");

static const char *lookup(void *ctx, const char *dataset, const char *format, const char *sha256, int prompt_index) {
    Refs *r = ctx;
    int k = 0;
    while (k < r->n && (strcmp(r->set[k].path, dataset) || strcmp(r->set[k].format, format))) k++;
    if (k == r->n) {
        if (r->n == 16) return NULL;
        snprintf(r->set[k].path, sizeof r->set[k].path, "%s", dataset);
        snprintf(r->set[k].format, sizeof r->set[k].format, "%s", format);
        SpErr err = {{0}};
        char path[4200];
        if (find_dataset(r, dataset, sha256, path, sizeof path))
            sp_fail(&err, "%s: not found with SHA-256 %.12s... (as given, or next to %s)", dataset, sha256, r->results_dir);
        else
            r->set[k].ok = dataset_load(path, strcmp(format, "auto") ? format : NULL, 0, &r->set[k].ds, &err) == 0;
        if (!r->set[k].ok && !r->quiet) fprintf(stderr, "analyze: no references for ROUGE: %s\n", err.msg);
        const Dataset *ds = &r->set[k].ds;
        if (r->set[k].ok && ds->n_empty_refs && !r->quiet) /* named, never skipped silently */
            fprintf(stderr, "analyze: %s: %d reference%s given as an empty string (the first at line %d): no ROUGE for %s\n",
                    path, ds->n_empty_refs, ds->n_empty_refs > 1 ? "s" : "", ds->first_empty_ref_line,
                    ds->n_empty_refs > 1 ? "those turns" : "that turn");
        r->n++;
    }
    if (!r->set[k].ok || prompt_index < 0 || prompt_index >= r->set[k].ds.n) return NULL;
    const char *ref = r->set[k].ds.ex[prompt_index].reference;
    return ref && ref[0] ? ref : NULL;
}

static int parse(int argc, char **argv, ReportOpts *o, int *quiet) {
    const char *cmd = "analyze";
    static const struct option opts[] = {
        {"alpha", required_argument, 0, 'a'},           {"bootstrap", required_argument, 0, 'b'},
        {"seed", required_argument, 0, 's'},            {"deployed-lambda", required_argument, 0, 'l'},
        {"deployed-tau", required_argument, 0, 't'},    {"tie-margin", required_argument, 0, 'm'},
        {"gnuplot", required_argument, 0, 'g'},         {"no-plots", no_argument, 0, 'n'},
        {"quiet", no_argument, 0, 'q'},                 {"test-shift", required_argument, 0, 'X'},
        {"code-lambda", required_argument, 0, 'c'},
        {"help", no_argument, 0, 'h'},                  {0, 0, 0, 0}};
    long l;
    optind = 1;
    for (int c; (c = getopt_long(argc, argv, "", opts, NULL)) != -1;) {
        switch (c) {
        case 'a': if (arg_float(cmd, "alpha", optarg, 1e-9, 0.5, &o->alpha)) return 2; break;
        case 'b': if (arg_long(cmd, "bootstrap", optarg, 2, 100000, &l)) return 2; o->bootstrap = (int)l; break;
        case 's': if (arg_long(cmd, "seed", optarg, 0, 2147483647L, &l)) return 2; o->seed = (unsigned long)l; break;
        case 'l': if (arg_param(cmd, "deployed-lambda", optarg, RP_LAMBDA, &o->deployed_lambda)) return 2; break;
        case 'c': if (arg_param(cmd, "code-lambda", optarg, RP_LAMBDA, &o->code_lambda)) return 2; break;
        case 't': if (arg_param(cmd, "deployed-tau", optarg, RP_TAU, &o->deployed_tau)) return 2; break;
        case 'm': if (arg_float(cmd, "tie-margin", optarg, 0, 1e6, &o->tie_margin)) return 2; break;
        case 'g': o->gnuplot = optarg; break;
        case 'n': o->plots = 0; break;
        case 'q': *quiet = 1; break;
        case 'X': if (arg_float(cmd, "test-shift", optarg, -1e6, 1e6, &o->shift)) return 2; break;
        case 'h': fputs(kHelp, stdout); return 1;
        default: return arg_bad_option("analyze", argv);
        }
    }
    if (optind != argc - 1) {
        fprintf(stderr, "sprinter analyze: need exactly one RESULTS directory (see sprinter analyze --help)\n");
        return 2;
    }
    o->results_dir = argv[optind];
    return 0;
}

int cmd_analyze(int argc, char **argv) {
    ReportOpts o;
    report_opts_default(&o);
    int quiet = 0, prc = parse(argc, argv, &o, &quiet);
    if (prc) return prc == 1 ? 0 : prc;
    Refs *refs = calloc(1, sizeof *refs);
    if (!refs) {
        fprintf(stderr, "sprinter analyze: out of memory\n");
        return 1;
    }
    refs->quiet = quiet;
    refs->results_dir = o.results_dir;
    o.refs = lookup, o.refs_ctx = refs, o.log = quiet ? NULL : stderr;
    SpErr err = {{0}};
    ReportSummary s;
    int rc = report_write(&o, &s, &err);
    for (int k = 0; k < refs->n; k++)
        if (refs->set[k].ok) dataset_free(&refs->set[k].ds);
    free(refs);
    if (rc) {
        fprintf(stderr, "sprinter analyze: %s\n", err.msg);
        return 1;
    }
    printf("analyze: %d runs (%d with a verifier): %d of %d theorem checks inside their intervals; i.i.d. rejected in "
           "%d of %d verifier runs\n", s.runs, s.verifier_runs, s.checks - s.checks_failed, s.checks, s.iid_rejected,
           s.iid_runs);
    printf("report: %s\n", s.index_path);
    return 0;
}
