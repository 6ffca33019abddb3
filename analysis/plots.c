/* plots.c - the report's plots: data files (*.dat), gnuplot scripts (*.gp) and their PNG + SVG
 * renderings, all in report/ (gnuplot runs there, so the scripts name their files relatively). */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <signal.h>
#include <sys/prctl.h>

#include "peers.h"
#include "report_int.h"
#include "report_util.h"
#include "stats.h"

#define MAX_SERIES 12

static const char *const kPlots[] = {"roc", "en", "pareto", "acf", "position", "design", "lossy"};

int plot_names(const char *const **names) {
    *names = kPlots;
    return (int)(sizeof kPlots / sizeof *kPlots);
}

/* Writes NAME.gp: the body (gnuplot commands that draw one figure) once for PNG and once for SVG. */
static int write_script(const Report *R, const char *name, const char *body, SpErr *err) {
    int h = !strcmp(name, "roc") || !strcmp(name, "pareto") || !strcmp(name, "lossy") ? 620 : !strcmp(name, "design") ? 1300 : 820;
    char fn[128];
    snprintf(fn, sizeof fn, "%s.gp", name);
    FILE *f = report_open(R, fn, err);
    if (!f) return -1;
    fprintf(f, "# %s.gp - written by sprinter analyze; run in this directory: gnuplot %s.gp\n"
               "set datafile missing 'nan'\nset grid\nset key outside right top\n"
               "set terminal pngcairo size 1000,%d noenhanced font 'sans,10'\nset output '%s.png'\n%s\n"
               "set terminal svg size 1000,%d noenhanced font 'sans,10'\nset output '%s.svg'\n%s\nunset output\n",
            name, name, h, name, body, h, name, body);
    return report_close(f, R, fn, err);
}

/* A growable string for script bodies. */
typedef struct Buf {
    char *s;
    size_t n;
    FILE *f;
} Buf;

static int buf_open(Buf *b) {
    memset(b, 0, sizeof *b);
    return (b->f = open_memstream(&b->s, &b->n)) ? 0 : -1;
}

static const char *buf_close(Buf *b) {
    fclose(b->f);
    return b->s ? b->s : "";
}

static int buf_fail(Buf *b) {
    buf_close(b);
    free(b->s);
    return -1;
}

static FILE *open_dat(const Report *R, const char *name, SpErr *err) { return report_open(R, name, err); }

/* ------------------------------------------------------------------ ROC per lambda */

static int roc_lambda(const Report *R, double lambda, const char *fn, SpErr *err) {
    int64_t n = 0;
    for (int i = 0; i < R->rs.n; i++)
        if (R->an[i].n_scored && R->an[i].ri->lambda == lambda) n += R->an[i].n_scored;
    float *s = malloc((size_t)(n ? n : 1) * sizeof *s);
    int8_t *y = malloc((size_t)(n ? n : 1));
    if (!s || !y) {
        free(s), free(y);
        return sp_fail(err, "out of memory");
    }
    int64_t k = 0;
    for (int i = 0; i < R->rs.n; i++)
        if (R->an[i].n_scored && R->an[i].ri->lambda == lambda) {
            memcpy(s + k, R->an[i].scores, (size_t)R->an[i].n_scored * sizeof *s);
            memcpy(y + k, R->an[i].labels, (size_t)R->an[i].n_scored);
            k += R->an[i].n_scored;
        }
    double *fpr, *tpr;
    int m;
    int rc = 0;
    FILE *f = open_dat(R, fn, err);
    if (!f) rc = -1;
    else if (roc_curve(s, y, (size_t)n, &fpr, &tpr, &m) == 0) {
        int step = m > 2000 ? m / 2000 : 1;
        fprintf(f, "# fpr tpr (lambda = %g, %lld labelled decisions pooled over runs)\n", lambda, (long long)n);
        for (int j = 0; j < m; j += step) fprintf(f, "%.6g %.6g\n", fpr[j], tpr[j]);
        fprintf(f, "%.6g %.6g\n", fpr[m - 1], tpr[m - 1]);
        free(fpr), free(tpr);
    } else {
        fprintf(f, "# one label class is empty: no curve\nnan nan\n");
    }
    if (f) rc = report_close(f, R, fn, err);
    free(s), free(y);
    return rc;
}

static int plot_roc(const Report *R, SpErr *err) {
    double lambdas[MAX_SERIES];
    int nl = 0;
    for (int i = 0; i < R->rs.n && nl < MAX_SERIES; i++) {
        if (!R->an[i].n_scored) continue;
        int seen = 0;
        for (int k = 0; k < nl; k++) seen |= lambdas[k] == R->an[i].ri->lambda;
        if (!seen) lambdas[nl++] = R->an[i].ri->lambda;
    }
    Buf b;
    if (buf_open(&b)) return sp_fail(err, "out of memory");
    fprintf(b.f, "set title 'ROC of the learned verifier (audit labels q/p <= lambda); points: operating points'\n"
                 "set xlabel 'false positive rate (eta_FP)'\nset ylabel 'true positive rate (eta_TP)'\n"
                 "set xrange [0:1]\nset yrange [0:1]\nset size ratio -1\n");
    if (nl == 0) fprintf(b.f, "set label 1 'not computed: no learned-verifier (sprinter) runs' at graph 0.5,0.5 center\n");
    fprintf(b.f, "plot x with lines dashtype 2 lc rgb 'gray' title 'chance'");
    int rc = 0;
    for (int k = 0; k < nl && rc == 0; k++) {
        char fn[64];
        snprintf(fn, sizeof fn, "roc_l%d.dat", k);
        rc = roc_lambda(R, lambdas[k], fn, err);
        fprintf(b.f, ", '%s' using 1:2 with lines lw 2 title 'lambda = %g'", fn, lambdas[k]);
    }
    FILE *f = rc == 0 ? open_dat(R, "roc_points.dat", err) : NULL;
    if (rc == 0 && !f) rc = -1;
    if (f) {
        fprintf(f, "# eta_fp eta_tp lambda tau (sprinter runs)\n");
        int any = 0;
        for (int i = 0; i < R->rs.n; i++) {
            const RunAn *a = &R->an[i];
            if (!a->n_scored || !a->nneg || !a->npos) continue;
            fprintf(f, "%.6g %.6g %g %g\n", (double)a->fp / a->nneg, (double)a->tp / a->npos, a->ri->lambda, a->ri->tau);
            any = 1;
        }
        if (!any) fprintf(f, "nan nan nan nan\n");
        rc = report_close(f, R, "roc_points.dat", err);
        if (nl) fprintf(b.f, ", 'roc_points.dat' using 1:2 with points pt 7 ps 1.2 title 'operating points'");
    }
    fprintf(b.f, "\n");
    const char *body = buf_close(&b);
    if (rc == 0) rc = write_script(R, "roc", body, err);
    free(b.s);
    return rc;
}

/* ------------------------------------------------------------------ E[N] over the eta grid */

static void series_key(const RunAn *a, char *buf, size_t cap) {
    int mr = isnan(a->ri->max_run) ? 0 : (int)a->ri->max_run;
    if (mr > 0) snprintf(buf, cap, "%s max_run=%d", a->ri->method, mr);
    else snprintf(buf, cap, "%s", a->ri->method);
}

static int plot_en(const Report *R, SpErr *err) {
    char keys[MAX_SERIES][96];
    int nk = 0, rc = 0;
    for (int i = 0; i < R->rs.n; i++) {
        if (!R->an[i].has_tc) continue;
        char k[96];
        series_key(&R->an[i], k, sizeof k);
        int seen = 0;
        for (int j = 0; j < nk; j++) seen |= !strcmp(keys[j], k);
        if (!seen && nk < MAX_SERIES) snprintf(keys[nk++], sizeof keys[0], "%s", k);
    }
    Buf b;
    if (buf_open(&b)) return sp_fail(err, "out of memory");
    fprintf(b.f, "set title 'Thm 3.3: E[min(N, c)] measured (95%% bootstrap interval) vs predicted with the measured rates'\n"
                 "set xlabel 'measured eta_FP'\nset ylabel 'tokens accepted before the target is invoked'\n"
                 "set key below maxrows 6 font ',9'\n");
    if (nk == 0) fprintf(b.f, "set label 1 'not computed: no audited verifier runs' at graph 0.5,0.5 center\nset xrange [0:1]\n"
                              "plot 0 with lines lc rgb 'gray' notitle\n");
    double z = z_of_conf(0.95);
    for (int s = 0; s < nk && rc == 0; s++) {
        char fn[64];
        snprintf(fn, sizeof fn, "en_%d.dat", s);
        FILE *f = open_dat(R, fn, err);
        if (!f) return buf_fail(&b);
        fprintf(f, "# %s: eta_fp_measured E_measured lo hi E_pred_iid E_pred_paper eta_fp_configured\n", keys[s]);
        for (int i = 0; i < R->rs.n; i++) {
            const RunAn *a = &R->an[i];
            char k[96];
            if (!a->has_tc) continue;
            series_key(a, k, sizeof k);
            if (strcmp(k, keys[s])) continue;
            const TcResult *t = &a->tc;
            double m = t->est.meas[TQ_MEAN_N], se = t->se_meas[TQ_MEAN_N];
            fprintf(f, "%.6g %.6g %.6g %.6g %.6g %.6g %.6g\n", t->est.eta_fp, m, m - z * se, m + z * se,
                    t->est.pred[TC_IID][TQ_MEAN_N], t->est.pred[TC_PAPER][TQ_MEAN_N], a->ri->eta_fp);
        }
        rc = report_close(f, R, fn, err);
        fprintf(b.f, "%s '%s' using 1:2:3:4 with yerrorbars pt 7 lc %d title '%s measured', "
                     "'' using 1:5 with points pt 4 ps 1.5 lc %d title '%s predicted (iid)', "
                     "'' using 1:6 with points pt 2 ps 1.2 lc %d title '%s predicted (paper)'",
                s ? "," : "plot", fn, s + 1, keys[s], s + 1, keys[s], s + 1, keys[s]);
    }
    fprintf(b.f, "\n");
    const char *body = buf_close(&b);
    if (rc == 0) rc = write_script(R, "en", body, err);
    free(b.s);
    return rc;
}

/* ------------------------------------------------------------------ speed-up vs quality */

/* The quality axis of the Pareto plot: run a's target log-likelihood per token minus that of the ar
 * run of its cell (same data and temperature) on the same prompts, with the paired 95% interval. */
static PairedMean quality_vs_ar(const Report *R, const RunAn *a) {
    for (int j = 0; j < R->rs.n; j++)
        if (method_name_eq(R->an[j].ri->method, DM_AR) && same_cell(R->an[j].ri, a->ri)) return paired_llpt(a->ri, R->an[j].ri);
    return (PairedMean){NAN, NAN, NAN, 0};
}

static int plot_pareto(const Report *R, SpErr *err) {
    const char *methods[MAX_SERIES];
    int nm = 0, rc = 0, any = 0;
    PairedMean *qa = malloc((size_t)(R->rs.n ? R->rs.n : 1) * sizeof *qa);
    if (!qa) return sp_fail(err, "out of memory");
    for (int i = 0; i < R->rs.n; i++) {
        int seen = 0;
        for (int j = 0; j < nm; j++) seen |= !strcmp(methods[j], R->an[i].ri->method);
        if (!seen && nm < MAX_SERIES) methods[nm++] = R->an[i].ri->method;
        qa[i] = quality_vs_ar(R, &R->an[i]);
        any |= !isnan(qa[i].mean) && !isnan(R->an[i].speedup_ar);
    }
    Buf b;
    if (buf_open(&b)) {
        free(qa);
        return sp_fail(err, "out of memory");
    }
    fprintf(b.f, "set title 'Speed-up over AR vs quality, one point per run (bars: paired 95%% t interval over prompts); "
                 "line: Pareto front'\nset logscale x\nset xlabel 'speed-up over ar (tokens/s ratio, log scale)'\n"
                 "set ylabel 'target log-likelihood per token minus ar on the same prompts (nats)'\n");
    if (!any) fprintf(b.f, "set label 1 'not computed: needs ar runs and sprinter score' at graph 0.5,0.5 center\n"
                           "set xrange [0.5:2]\nplot 0 with lines lc rgb 'gray' notitle\n");
    for (int s = 0; any && s < nm && rc == 0; s++) {
        char fn[64];
        snprintf(fn, sizeof fn, "pareto_%d.dat", s);
        FILE *f = open_dat(R, fn, err);
        if (!f) {
            rc = -1;
            break;
        }
        fprintf(f, "# %s: speedup_vs_ar llpt_minus_ar lo hi prompts setting\n", methods[s]);
        for (int i = 0; i < R->rs.n; i++)
            if (!strcmp(R->an[i].ri->method, methods[s]) && !isnan(qa[i].mean))
                fprintf(f, "%.6g %.6g %.6g %.6g %d \"%s\"\n", R->an[i].speedup_ar, qa[i].mean,
                        isnan(qa[i].lo) ? qa[i].mean : qa[i].lo, isnan(qa[i].hi) ? qa[i].mean : qa[i].hi, qa[i].n,
                        R->an[i].setting);
        rc = report_close(f, R, fn, err);
        fprintf(b.f, "%s '%s' using 1:2:3:4 with yerrorbars pt 7 ps 1.1 title '%s'", s ? "," : "plot", fn, methods[s]);
    }
    if (any && rc == 0) {
        /* the front: runs no other run beats on both axes, by increasing speed-up */
        FILE *f = open_dat(R, "pareto_front.dat", err);
        if (!f) rc = -1;
        else {
            fprintf(f, "# speedup_vs_ar llpt_minus_ar (non-dominated runs)\n");
            double last = INFINITY;
            for (int done = 0; !done;) {
                int best = -1;
                for (int i = 0; i < R->rs.n; i++) {
                    const RunAn *a = &R->an[i];
                    if (isnan(a->speedup_ar) || isnan(qa[i].mean) || a->speedup_ar >= last) continue;
                    if (best < 0 || a->speedup_ar > R->an[best].speedup_ar) best = i;
                }
                if (best < 0) break;
                last = R->an[best].speedup_ar;
                int dominated = 0;
                for (int i = 0; i < R->rs.n; i++)
                    dominated |= !isnan(qa[i].mean) && R->an[i].speedup_ar >= last && qa[i].mean > qa[best].mean;
                if (!dominated) fprintf(f, "%.6g %.6g\n", last, qa[best].mean);
            }
            rc = report_close(f, R, "pareto_front.dat", err);
            fprintf(b.f, ", 'pareto_front.dat' using 1:2 with lines lw 2 lc rgb 'black' title 'Pareto front'\n");
        }
    }
    free(qa);
    fprintf(b.f, "\n");
    const char *body = buf_close(&b);
    if (rc == 0) rc = write_script(R, "pareto", body, err);
    free(b.s);
    return rc;
}

/* ------------------------------------------------------------------ the lossy peers: speed-up vs exact shift */

/* One series per method, the points of every cell that holds a lossy peer (peers.h): x the exact
 * d_TV(p, p_method), y the speed-up over ar with its range over the repetitions timed alone. */
static int plot_lossy(const Report *R, SpErr *err) {
    Buf b;
    if (buf_open(&b)) return sp_fail(err, "out of memory");
    fprintf(b.f, "set title 'Speed-up over AR vs exact shift d_TV(p, p_method), one point per run (bars: range over "
                 "the repetitions timed alone; the Pareto front per cell is in lossy.md)'\nset xlabel 'exact d_TV(p, p_method) of "
                 "the first-token law (mean over prefixes)'\nset ylabel 'speed-up over ar'\n");
    int rc = 0;
    FILE *f = peers_present(R) ? open_dat(R, "lossy.dat", err) : NULL;
    if (peers_present(R) && !f) rc = -1;
    const char *series[MAX_SERIES]; /* the methods written, in index order */
    int ns = 0;
    if (f) {
        fprintf(f, "# one block per method (gnuplot index, in the order of the plot's titles): dtv speedup lo hi front\n");
        for (int i = 0; i < R->rs.n && rc == 0 && ns < MAX_SERIES; i++) {
            const char *m = R->an[i].ri->method;
            int seen = 0;
            for (int k = 0; k < ns; k++) seen |= !strcmp(series[k], m);
            if (seen) continue;
            int wrote = 0;
            for (int j = i; j < R->rs.n && rc == 0; j++) { /* every run of method m, each in its own cell */
                if (strcmp(R->an[j].ri->method, m)) continue;
                PeerPoint *pts;
                int n;
                if ((rc = peer_points(R, &R->an[j], &pts, &n, err))) break;
                for (int k = 0; k < n; k++) {
                    const PeerPoint *p = &pts[k];
                    if (p->a != &R->an[j] || isnan(p->dtv_p) || isnan(p->speedup)) continue;
                    if (!wrote) fprintf(f, "%s# %s\n", ns ? "\n\n" : "", m);
                    fprintf(f, "%.6g %.6g %.6g %.6g %d\n", p->dtv_p, p->speedup, isnan(p->speedup_lo) ? p->speedup : p->speedup_lo,
                            isnan(p->speedup_hi) ? p->speedup : p->speedup_hi, p->front);
                    wrote = 1;
                }
                free(pts);
            }
            if (wrote) series[ns++] = m;
        }
        if (report_close(f, R, "lossy.dat", err)) rc = -1;
    }
    if (ns == 0)
        fprintf(b.f, "set label 1 'not computed: needs lossy peer runs (typical, fsd, optimal-lossy, judge) and their "
                     "sprinter dtv files' at graph 0.5,0.5 center\nset xrange [0:1]\nplot 0 with lines lc rgb 'gray' notitle\n");
    for (int s = 0; s < ns; s++)
        fprintf(b.f, "%s 'lossy.dat' index %d using 1:2:3:4 with yerrorbars pt 7 ps 1.1 title '%s'", s ? "," : "plot", s,
                series[s]);
    fprintf(b.f, "\n");
    const char *body = buf_close(&b);
    if (rc == 0) rc = write_script(R, "lossy", body, err);
    free(b.s);
    return rc;
}

/* ------------------------------------------------------------------ ACF and position */

/* Up to MAX_SERIES runs with i.i.d. results, taken in turn from sprinter, oracle-markov and
 * oracle-iid (the deployed sprinter setting first), so that every method shows. */
static int pick_iid_runs(const Report *R, int *idx) {
    static const DecodeMethod order[] = {DM_SPRINTER, DM_ORACLE_MARKOV, DM_ORACLE_IID};
    int n = 0, next[3] = {0, 0, 0}, progress = 1;
    for (int i = 0; i < R->rs.n && n < MAX_SERIES; i++)
        if (R->an[i].has_iid && is_deployed(R, &R->an[i])) idx[n++] = i;
    while (n < MAX_SERIES && progress) {
        progress = 0;
        for (int o = 0; o < 3 && n < MAX_SERIES; o++) {
            while (next[o] < R->rs.n) {
                int i = next[o]++;
                if (R->an[i].has_iid && method_name_eq(R->an[i].ri->method, order[o]) && !is_deployed(R, &R->an[i])) {
                    idx[n++] = i, progress = 1;
                    break;
                }
            }
        }
    }
    return n;
}

static void short_name(const RunAn *a, char *buf, size_t cap) {
    snprintf(buf, cap, "%s %s", a->ri->method, a->setting);
}

static int plot_acf(const Report *R, SpErr *err) {
    int idx[MAX_SERIES], n = pick_iid_runs(R, idx), rc = 0;
    Buf b;
    if (buf_open(&b)) return sp_fail(err, "out of memory");
    double band = 0;
    for (int k = 0; k < n; k++)
        if (R->an[idx[k]].iid.h > 0 && R->an[idx[k]].iid.band > band) band = R->an[idx[k]].iid.band;
    fprintf(b.f, "set title 'ACF of the verifier errors (standardised residuals); dashed: white-noise band of the "
                 "smallest run (alpha %g)'\nset xlabel 'lag (decisions)'\nset ylabel 'autocorrelation'\n"
                 "set xrange [0.5:%d.5]\nset key below maxrows 7 font ',9'\n", R->o->alpha, IID_MAX_LAG);
    if (n == 0) fprintf(b.f, "set label 1 'not computed: no audited verifier runs' at graph 0.5,0.5 center\n");
    fprintf(b.f, "plot %g with lines dashtype 2 lc rgb 'gray' title 'band', %g with lines dashtype 2 lc rgb 'gray' notitle",
            band, -band);
    for (int k = 0; k < n && rc == 0; k++) {
        const IidResult *t = &R->an[idx[k]].iid;
        char fn[64], nm[300];
        snprintf(fn, sizeof fn, "acf_%d.dat", k);
        FILE *f = open_dat(R, fn, err);
        if (!f) return buf_fail(&b);
        short_name(&R->an[idx[k]], nm, sizeof nm);
        fprintf(f, "# %s: lag acf (n = %lld)\n", nm, (long long)t->n);
        for (int l = 0; l < t->h; l++) fprintf(f, "%d %.6g\n", l + 1, t->acf[l]);
        if (t->h == 0) fprintf(f, "nan nan\n");
        rc = report_close(f, R, fn, err);
        fprintf(b.f, ", '%s' using 1:2 with linespoints pt 7 ps 0.6 title '%s'", fn, nm);
    }
    fprintf(b.f, "\n");
    const char *body = buf_close(&b);
    if (rc == 0) rc = write_script(R, "acf", body, err);
    free(b.s);
    return rc;
}

static int plot_position(const Report *R, SpErr *err) {
    int idx[MAX_SERIES], n = pick_iid_runs(R, idx), rc = 0;
    Buf b;
    if (buf_open(&b)) return sp_fail(err, "out of memory");
    for (int k = 0; k < n && rc == 0; k++) {
        const IidResult *t = &R->an[idx[k]].iid;
        char fn[64], nm[300];
        snprintf(fn, sizeof fn, "position_%d.dat", k);
        FILE *f = open_dat(R, fn, err);
        if (!f) return buf_fail(&b);
        short_name(&R->an[idx[k]], nm, sizeof nm);
        fprintf(f, "# %s: position eta_tp eta_fp n_acceptable n_unacceptable (position %d = %d and later)\n", nm,
                IID_POS_BUCKETS, IID_POS_BUCKETS);
        for (int p = 0; p < IID_POS_BUCKETS; p++)
            fprintf(f, "%d %.6g %.6g %lld %lld\n", p + 1,
                    t->pos_n[1][p] ? (double)t->pos_acc[1][p] / (double)t->pos_n[1][p] : NAN,
                    t->pos_n[0][p] ? (double)t->pos_acc[0][p] / (double)t->pos_n[0][p] : NAN, (long long)t->pos_n[1][p],
                    (long long)t->pos_n[0][p]);
        rc = report_close(f, R, fn, err);
    }
    const char *panel[2] = {"eta_TP (acceptable tokens)", "eta_FP (unacceptable tokens)"};
    fprintf(b.f, "set multiplot layout 1,2 title 'Verifier acceptance by position in the run (1 = first draft after a "
                 "target call)'\nset xlabel 'position in the run'\nset yrange [0:1]\nset xrange [0.5:%d.5]\n"
                 "set key below font ',8'\n", IID_POS_BUCKETS);
    for (int c = 0; c < 2; c++) {
        fprintf(b.f, "set title '%s'\nset ylabel 'acceptance rate'\n", panel[c]);
        if (n == 0) fprintf(b.f, "set label 1 'not computed' at graph 0.5,0.5 center\nplot 0 with lines lc rgb 'gray' notitle\n");
        for (int k = 0; k < n; k++) {
            char nm[300];
            short_name(&R->an[idx[k]], nm, sizeof nm);
            fprintf(b.f, "%s 'position_%d.dat' using 1:%d with linespoints pt 7 ps 0.7 title '%s'%s", k ? "," : "plot", k,
                    c ? 3 : 2, nm, k + 1 == n ? "\n" : "");
        }
    }
    fprintf(b.f, "unset multiplot\n");
    const char *body = buf_close(&b);
    if (rc == 0) rc = write_script(R, "position", body, err);
    free(b.s);
    return rc;
}

/* ------------------------------------------------------------------ Figs. 5-6's design curves */

/* design_curves.dat: one index block per run with a theorem analysis (in run order), over the eta_FP
 * grid: eta_fp E[min(N,c)] E[T] E[FA] E[N]_uncapped E[FA]_uncapped latency_ms (theorycheck.h's TD_*;
 * latency = (E[T] c_step + c_target) / (E[T] + E[B]) with the run's measured costs and bonus share).
 * design_points.dat: the runs' measured points, block index first. Returns the number of runs. */
static int design_data(const Report *R, int *timed, SpErr *err) {
    FILE *c = open_dat(R, "design_curves.dat", err), *p = c ? open_dat(R, "design_points.dat", err) : NULL;
    if (!c || !p) {
        if (c) fclose(c);
        return -1;
    }
    fprintf(c, "# per run (gnuplot index = block): eta_fp en_capped steps_T false_accepts en_uncapped "
               "false_accepts_uncapped latency_ms; paper's label model at the run's eta_TP and r law\n");
    fprintf(p, "# index eta_fp_measured en_measured false_accepts_measured ms_per_token_measured steps_T_measured "
               "eta_tp run\n");
    int n = 0;
    for (int i = 0; i < R->rs.n; i++) {
        const RunAn *a = &R->an[i];
        if (!a->has_tc) continue;
        const TcResult *t = &a->tc;
        double eb = isnan(t->est.bonus_rate) ? 0 : t->est.bonus_rate;
        fprintf(c, "%s# %s %s %.8s eta_tp %.4g\n", n ? "\n\n" : "", a->ri->method, a->setting, a->ri->hash, t->est.eta_tp);
        for (int j = 0; j < TC_DESIGN; j++) {
            double T = t->design[TD_T][j], lat = T > 0 ? (T * a->c_step_ms + a->c_target_ms) / (T + eb) : NAN;
            fprintf(c, "%.4f %.6g %.6g %.6g %.6g %.6g %.6g\n", (double)j / TC_DESIGN, t->design[TD_EN][j], T,
                    t->design[TD_FA][j], t->design[TD_EN_UNCAPPED][j], t->design[TD_FA_UNCAPPED][j], lat);
        }
        fprintf(p, "%d %.6g %.6g %.6g %.6g %.6g %.6g \"%s %s\"\n", n, t->est.eta_fp, t->est.meas[TQ_MEAN_N],
                t->est.meas[TQ_FA], a->ms_per_token, t->est.meas[TQ_MEAN_T], t->est.eta_tp, a->ri->method, a->setting);
        *timed += !isnan(a->ms_per_token);
        n++;
    }
    if (n == 0) fprintf(c, "nan nan nan nan nan nan nan\n"), fprintf(p, "0 nan nan nan nan nan nan \"-\"\n");
    int rc = report_close(c, R, "design_curves.dat", err);
    if (report_close(p, R, "design_points.dat", err)) rc = -1;
    return rc ? -1 : n;
}

static int plot_design(const Report *R, SpErr *err) {
    int timed = 0; /* runs with timings of their own (a batched sweep's runs have none: runs.exec_batch) */
    int n = design_data(R, &timed, err);
    if (n < 0) return -1;
    Buf b;
    if (buf_open(&b)) return sp_fail(err, "out of memory");
    static const struct {
        const char *title, *ylabel;
        int curve, point;
    } kPanel[] = {
        {"Thm 3.3: E[min(N,c)] over eta_FP (lines: the paper's model at each run's eta_TP; points: measured)",
         "tokens accepted before the target call", 2, 3},
        {"Figs. 5-6: false accepts per block (dashed: uncapped eta_TP^r eta_FP/(1-eta_FP); gray: 1 token, eta_FP 0.5)",
         "false accepts per block", 4, 4},
        {"Thm 3.4: latency per token (lines: with each run's measured costs and bonus share; points: measured)",
         "ms per token", 7, 5},
    };
    fprintf(b.f, "set multiplot layout 3,1\nset xlabel 'eta_FP'\nset xrange [0:1]\nset key off\n");
    for (size_t k = 0; k < sizeof kPanel / sizeof *kPanel; k++) {
        fprintf(b.f, "set title \"%s\"\nset ylabel '%s'\n", kPanel[k].title, kPanel[k].ylabel);
        if (n == 0 || (k == 2 && timed == 0)) {
            fprintf(b.f, "set label 1 '%s' at graph 0.5,0.5 center\nplot 0 with lines lc rgb 'gray' notitle\nunset label 1\n",
                    n == 0 ? "not computed: no audited verifier runs"
                           : "not computed: no run timed in its sweep (swept with [decode] batch > 1)");
            continue;
        }
        if (k == 1) fprintf(b.f, "set yrange [0:5]\nset arrow 1 from 0.5, graph 0 to 0.5, graph 1 nohead dt 2 lc rgb 'gray'\n");
        fprintf(b.f, "plot for [i=0:%d] 'design_curves.dat' index i using 1:%d with lines lc i+1 notitle", n - 1,
                kPanel[k].curve);
        if (k == 1)
            fprintf(b.f, ", for [i=0:%d] 'design_curves.dat' index i using 1:6 with lines dt 2 lc i+1 notitle, "
                         "1 with lines dt 2 lc rgb 'gray' notitle", n - 1);
        fprintf(b.f, ", 'design_points.dat' using 2:%d:($1+1) with points pt 7 ps 1.2 lc variable notitle\n", kPanel[k].point);
        if (k == 1) fprintf(b.f, "unset arrow 1\nset yrange [*:*]\n");
    }
    fprintf(b.f, "unset multiplot\n");
    const char *body = buf_close(&b);
    int rc = write_script(R, "design", body, err);
    free(b.s);
    return rc;
}

/* ------------------------------------------------------------------ gnuplot */

/* Runs `gnuplot NAME.gp` in the report directory; its output goes to gnuplot.log. */
static int render(const Report *R, const char *name, SpErr *err) {
    char script[128], log[4400];
    snprintf(script, sizeof script, "%s.gp", name);
    snprintf(log, sizeof log, "%s/gnuplot.log", R->dir);
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) return sp_fail(err, "fork: %s", strerror(errno));
    if (pid == 0) {
        (void)prctl(PR_SET_PDEATHSIG, SIGKILL); /* gnuplot ends with sprinter, however sprinter ends */
        int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);
        if (fd >= 0) dup2(fd, 1), dup2(fd, 2);
        if (chdir(R->dir) != 0) _exit(126);
        execlp(R->o->gnuplot, R->o->gnuplot, script, (char *)NULL);
        _exit(127);
    }
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR) return sp_fail(err, "waitpid: %s", strerror(errno));
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        return sp_fail(err, "%s/%s: gnuplot failed (exit %d; see %s)", R->dir, script, WIFEXITED(st) ? WEXITSTATUS(st) : -1,
                       log);
    const char *ext[2] = {"png", "svg"};
    for (int k = 0; k < 2; k++) {
        char out[4400];
        struct stat sb;
        snprintf(out, sizeof out, "%s/%s.%s", R->dir, name, ext[k]);
        if (stat(out, &sb) != 0 || sb.st_size == 0) return sp_fail(err, "%s: gnuplot wrote no file (see %s)", out, log);
    }
    return 0;
}

int write_plots(Report *R, SpErr *err) {
    if (plot_roc(R, err) || plot_en(R, err) || plot_pareto(R, err) || plot_acf(R, err) || plot_position(R, err) ||
        plot_design(R, err) || plot_lossy(R, err))
        return -1;
    if (!R->o->plots) return 0;
    char log[4400];
    snprintf(log, sizeof log, "%s/gnuplot.log", R->dir);
    unlink(log);
    for (size_t i = 0; i < sizeof kPlots / sizeof *kPlots; i++)
        if (render(R, kPlots[i], err)) return -1;
    return 0;
}
