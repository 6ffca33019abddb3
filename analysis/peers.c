/* peers.c - SPRINTER beside its lossy peers at equal shift (peers.h). */
#include "peers.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "params_table.h"

int peer_method(const char *method) { return method_name_is(method, MC_LOSSY_PEER); }

/* The methods on the shift axis: the peers, sprinter, and ar / sd at shift 0. */
static int on_axis(const char *method) {
    return peer_method(method) || method_name_eq(method, DM_SPRINTER) || method_name_eq(method, DM_AR) ||
           method_name_eq(method, DM_SD);
}

int peers_present(const Report *R) {
    for (int i = 0; i < R->rs.n; i++)
        if (peer_method(R->rs.runs[i].method)) return 1;
    return 0;
}

/* A grid parameter that changes a method's first-token law (gamma, max_run and the round structure
 * do not: the law is that of the first token at a prefix). */
static int shapes_law(RunParam p) { return p != RP_GAMMA && p != RP_MAX_RUN && p != RP_BONUS && p != RP_FINISH_ROUND; }

/* The value of parameter `name` in a "k=v k=v" label, NaN when absent. */
static double label_value(const char *label, const char *name) {
    size_t n = strlen(name);
    for (const char *s = label; (s = strstr(s, name)); s += n)
        if ((s == label || s[-1] == ' ') && s[n] == '=') return strtod(s + n + 1, NULL);
    return NAN;
}

/* Is the dtv file d of run r's configuration: the same method, data, temperature, the same value of every
 * parameter that shapes the law, and for sprinter the same verifier file? */
static int dtv_matches(const DtvFile *d, const RunInfo *r) {
    DecodeMethod m;
    if (strcmp(d->method, r->method) || strcmp(d->data_sha256, r->dataset_sha256) || decode_method_parse(r->method, &m) ||
        !(fabs(d->temperature - r->temperature) <= 1e-6))
        return 0;
    if (method_name_eq(r->method, DM_SPRINTER) && strcmp(d->verifier_sha256, r->verifier_sha256)) return 0;
    unsigned uses = method_params(m);
    for (int p = 0; p < RP_COUNT; p++) {
        if (!(uses & (1u << p)) || !shapes_law((RunParam)p)) continue;
        double want = r->param[p], have = label_value(d->params, run_param_info((RunParam)p)->name);
        if (!(fabs(want - have) <= 1e-9 * fmax(1.0, fabs(want)))) return 0;
    }
    return 1;
}

static const RunAn *cell_run(const Report *R, const RunAn *like, DecodeMethod m) {
    for (int i = 0; i < R->rs.n; i++)
        if (method_name_eq(R->an[i].ri->method, m) && same_cell(R->an[i].ri, like->ri)) return &R->an[i];
    return NULL;
}

static void fill_point(const Report *R, const RunAn *a, const RunAn *ar, const RunAn *sd, PeerPoint *pt) {
    memset(pt, 0, sizeof *pt);
    pt->a = a;
    pt->dtv_p = pt->dtv_se = NAN;
    int lossless = method_name_eq(a->ri->method, DM_AR) || method_name_eq(a->ri->method, DM_SD);
    if (lossless) pt->dtv_p = pt->dtv_se = 0;
    for (int f = 0; !lossless && f < R->n_dtv; f++)
        if (dtv_matches(&R->dtv[f], a->ri)) {
            pt->dtv = &R->dtv[f];
            pt->dtv_p = R->dtv[f].dtv_p_ps, pt->dtv_se = R->dtv[f].se_dtv_p_ps;
            break;
        }
    pt->speedup = pt->speedup_lo = pt->speedup_hi = NAN;
    if (ar) {
        int n = paired_ratios(ar, a, &pt->speedup, &pt->speedup_lo, &pt->speedup_hi);
        if (n >= TIMING_MIN_REPS) pt->timed_reps = n;
        else pt->speedup = a->speedup_ar, pt->speedup_lo = pt->speedup_hi = NAN;
    }
    pt->tok_per_call = a->tok_per_call;
    pt->llpt_vs_sd = sd && sd != a ? paired_llpt(a->ri, sd->ri) : (PairedMean){sd ? 0 : NAN, NAN, NAN, 0};
}

static int cmp_shift(const void *x, const void *y) {
    const PeerPoint *a = x, *b = y;
    double u = isnan(a->dtv_p) ? INFINITY : a->dtv_p, v = isnan(b->dtv_p) ? INFINITY : b->dtv_p;
    return (u > v) - (u < v);
}

/* front: no other point of the cell has at most its shift and at least its speed-up, one of them
 * strictly. */
static void mark_front(PeerPoint *pts, int n) {
    for (int i = 0; i < n; i++) {
        pts[i].front = !isnan(pts[i].dtv_p) && !isnan(pts[i].speedup);
        for (int j = 0; j < n && pts[i].front; j++) {
            if (j == i || isnan(pts[j].dtv_p) || isnan(pts[j].speedup)) continue;
            int no_worse = pts[j].dtv_p <= pts[i].dtv_p && pts[j].speedup >= pts[i].speedup;
            int better = pts[j].dtv_p < pts[i].dtv_p || pts[j].speedup > pts[i].speedup;
            if (no_worse && better) pts[i].front = 0;
        }
    }
}

int peer_points(const Report *R, const RunAn *any_of_cell, PeerPoint **pts, int *n, SpErr *err) {
    *n = 0;
    if (!(*pts = calloc((size_t)(R->rs.n ? R->rs.n : 1), sizeof **pts))) return sp_fail(err, "out of memory");
    const RunAn *ar = cell_run(R, any_of_cell, DM_AR), *sd = cell_run(R, any_of_cell, DM_SD);
    for (int i = 0; i < R->rs.n; i++) {
        const RunAn *a = &R->an[i];
        if (on_axis(a->ri->method) && same_cell(a->ri, any_of_cell->ri)) fill_point(R, a, ar, sd, &(*pts)[(*n)++]);
    }
    qsort(*pts, (size_t)*n, sizeof **pts, cmp_shift);
    mark_front(*pts, *n);
    return 0;
}

/* ------------------------------------------------------------------ lossy.md, lossy.tsv */

static void point_md(FILE *f, const PeerPoint *p) {
    char b[6][48];
    const RunAn *a = p->a;
    fprintf(f, "| %s | %s | %s +- %s | %s", a->ri->method, a->setting, fmt_num(b[0], 48, p->dtv_p, "%.4f"),
            fmt_num(b[1], 48, p->dtv_se, "%.4f"), fmt_num(b[2], 48, p->speedup, "%.2fx"));
    if (p->timed_reps)
        fprintf(f, " [%s, %s] (alone, %d reps)", fmt_num(b[3], 48, p->speedup_lo, "%.2f"),
                fmt_num(b[4], 48, p->speedup_hi, "%.2f"), p->timed_reps);
    else
        fprintf(f, " (sweep timing)");
    fprintf(f, " | %s | %s [%s, %s] (%d) | %s |\n", fmt_num(b[5], 48, p->tok_per_call, "%.2f"),
            fmt_num(b[0], 48, p->llpt_vs_sd.mean, "%+.4f"), fmt_num(b[1], 48, p->llpt_vs_sd.lo, "%+.4f"),
            fmt_num(b[2], 48, p->llpt_vs_sd.hi, "%+.4f"), p->llpt_vs_sd.n, p->front ? "yes" : "");
}

static void point_tsv(FILE *f, const PeerPoint *p) {
    const RunAn *a = p->a;
    fprintf(f, "%s\t%s\t%s\t%g\t%.9g\t%.9g\t%.9g\t%.9g\t%.9g\t%d\t%.9g\t%.9g\t%.9g\t%.9g\t%d\t%d\t%s\n", a->ri->hash,
            a->ri->method, a->setting, a->ri->temperature, p->dtv_p, p->dtv_se, p->speedup, p->speedup_lo,
            p->speedup_hi, p->timed_reps, p->tok_per_call, p->llpt_vs_sd.mean, p->llpt_vs_sd.lo, p->llpt_vs_sd.hi,
            p->llpt_vs_sd.n, p->front, a->dataset);
}

/* The first run of each cell (data and temperature) that holds a lossy peer, into firsts[]. */
static int peer_cells(const Report *R, const RunAn **firsts, int cap) {
    int n = 0;
    for (int i = 0; i < R->rs.n && n < cap; i++) {
        if (!peer_method(R->an[i].ri->method)) continue;
        int seen = 0;
        for (int k = 0; k < n; k++) seen |= same_cell(firsts[k]->ri, R->an[i].ri);
        if (!seen) firsts[n++] = &R->an[i];
    }
    return n;
}

static const char kPeersIntro[] =
    "# SPRINTER beside its lossy peers, at equal shift\n\n"
    "SPRINTER trades shift from the target law for fewer target calls; typical acceptance (Medusa), fuzzy SD, "
    "the optimal lossy rule (mentored decoding) and Judge Decoding call the target once per block and trade it "
    "for more tokens per target call. Each run is placed by its **exact shift**: the mean over the prefixes of "
    "its configuration's `sprinter dtv --method` file of d_TV(p, p_method), the first-token law of the method "
    "against the target's, at the runs' temperature and on their held-out prompts (ar and sd: 0, lossless; `-`: "
    "no file). **Speed-up** over ar of the same data and temperature: from the runs timed alone after the sweep "
    "(the spec's `[timing]`: the median and range over paired repetitions) where there are at least 2, else "
    "the sweep's own timings (runs possibly timed beside each other; marked). **Quality**: the target's "
    "log-likelihood per token of the outputs minus sd's on the same prompts (nats; 95% t interval; prompts). "
    "**Front**: no other run of the cell has at most its shift and at least its speed-up. The plot lossy.png "
    "draws speed-up against shift, pareto.png speed-up against quality. Every figure is in lossy.tsv.\n\n";

int write_peers(Report *R, SpErr *err) {
    if (!peers_present(R)) return 0;
    FILE *md = report_open(R, "lossy.md", err), *tsv = md ? report_open(R, "lossy.tsv", err) : NULL;
    if (!md || !tsv) {
        if (md) fclose(md);
        return -1;
    }
    fputs(kPeersIntro, md);
    fprintf(tsv, "run_hash\tmethod\tsetting\ttemperature\tdtv_p_method\tdtv_se\tspeedup_vs_ar\tspeedup_lo\tspeedup_hi"
                 "\ttimed_reps\ttokens_per_call\tllpt_minus_sd\tllpt_lo\tllpt_hi\tllpt_prompts\tfront\tdataset\n");
    const RunAn *cells[32];
    int nc = peer_cells(R, cells, 32), rc = 0;
    for (int c = 0; c < nc && rc == 0; c++) {
        PeerPoint *pts;
        int n;
        if ((rc = peer_points(R, cells[c], &pts, &n, err))) break;
        fprintf(md, "## %s, temperature %g\n\n| method | setting | exact d_TV(p, p_method) +- SE | speed-up over ar | "
                    "tokens / target call | log-lik. / token - sd [95%%] (prompts) | front |\n|---|---|---|---|---|---|---|\n",
                cells[c]->dataset, cells[c]->ri->temperature);
        for (int i = 0; i < n; i++) point_md(md, &pts[i]), point_tsv(tsv, &pts[i]);
        fprintf(md, "\n");
        free(pts);
    }
    int rc_md = report_close(md, R, "lossy.md", err), rc_tsv = report_close(tsv, R, "lossy.tsv", err);
    return rc || rc_md || rc_tsv ? -1 : 0;
}
