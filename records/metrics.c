/* metrics.c - figures computed from the record (see metrics.h). */
#include "metrics.h"

#include <gsl/gsl_cdf.h>
#include <math.h>
#include <string.h>

Interval wilson_interval(int64_t k, int64_t n, double conf) {
    if (n <= 0) return (Interval){0, 1};
    double z = gsl_cdf_ugaussian_Pinv(0.5 + conf / 2), p = (double)k / (double)n, nn = (double)n;
    double denom = 1 + z * z / nn, centre = (p + z * z / (2 * nn)) / denom;
    double half = z * sqrt(p * (1 - p) / nn + z * z / (4 * nn * nn)) / denom;
    return (Interval){fmax(0, centre - half), fmin(1, centre + half)};
}

double metric_ratio(double num, double den) { return den > 0 ? num / den : NAN; }

Acceptance acceptance_of(int64_t accepted, int64_t verifier_accepts, int64_t rejected) {
    Acceptance a = {0};
    a.sd_accepted = accepted - verifier_accepts;
    a.checked = a.sd_accepted + rejected;
    a.alpha = metric_ratio((double)a.sd_accepted, (double)a.checked);
    a.ci95 = wilson_interval(a.sd_accepted, a.checked, 0.95);
    return a;
}

/* E[tokens per call] of full gamma-blocks with i.i.d. acceptance a: 1 + a + ... + a^gamma. */
static double tokens_per_call_of(double a, int gamma) {
    double s = 1, t = 1;
    for (int i = 0; i < gamma; i++) s += (t *= a);
    return s;
}

double alpha_from_tokens_per_call(double tpc, int gamma) {
    if (gamma < 1 || !(tpc >= 1) || !(tpc <= gamma + 1)) return NAN;
    double lo = 0, hi = 1; /* tokens_per_call_of is increasing in a */
    for (int it = 0; it < 60; it++) {
        double mid = 0.5 * (lo + hi);
        if (tokens_per_call_of(mid, gamma) < tpc) lo = mid;
        else hi = mid;
    }
    return 0.5 * (lo + hi);
}

static const char *const kSbGroups[SB_N_GROUPS] = {"mt_bench", "translation", "summarization", "qa",
                                                  "math_reasoning", "rag", "overall"};
static const char *const kMtBench[] = {"writing", "roleplay", "reasoning", "math",
                                       "coding", "extraction", "stem", "humanities"};

const char *specbench_group_name(int group) { return group >= 0 && group < SB_N_GROUPS ? kSbGroups[group] : "?"; }

int specbench_group_of(const char *category) {
    if (!category) return -1;
    for (size_t i = 0; i < sizeof kMtBench / sizeof *kMtBench; i++)
        if (!strcmp(category, kMtBench[i])) return SB_MT_BENCH;
    for (int g = SB_TRANSLATION; g < SB_OVERALL; g++)
        if (!strcmp(category, kSbGroups[g])) return g;
    return -1;
}

/* A cell being summed: mean_rate holds the sum of the timed questions' rates until cell_end. */
typedef struct CellSum {
    SbCell cell;
    int timed;
} CellSum;

static void cell_add(CellSum *c, const SbQuestion *q) {
    c->cell.questions++;
    c->cell.tokens += q->tokens;
    c->cell.target_calls += q->target_calls;
    c->cell.turns += q->turns, c->cell.truncated += q->truncated;
    if (q->seconds > 0) c->cell.mean_rate += (double)q->tokens / q->seconds, c->timed++;
}

static SbCell cell_end(CellSum c) {
    c.cell.mean_rate = c.timed ? c.cell.mean_rate / c.timed : NAN;
    return c.cell;
}

void specbench_cells(const SbQuestion *q, int n, SbCell cells[SB_N_GROUPS]) {
    CellSum sums[SB_N_GROUPS];
    memset(sums, 0, sizeof sums);
    for (int i = 0; i < n; i++) {
        int g = specbench_group_of(q[i].category);
        if (g >= 0) cell_add(&sums[g], &q[i]);
        cell_add(&sums[SB_OVERALL], &q[i]);
    }
    for (int g = 0; g < SB_N_GROUPS; g++) cells[g] = cell_end(sums[g]);
}

static const char *category_of(const SbQuestion *q) { return q->category ? q->category : ""; }

int specbench_category_first(const SbQuestion *q, int i) {
    for (int j = 0; j < i; j++)
        if (!strcmp(category_of(&q[j]), category_of(&q[i]))) return 0;
    return 1;
}

SbCell specbench_category_cell(const SbQuestion *q, int n, const char *category) {
    CellSum sum;
    memset(&sum, 0, sizeof sum);
    for (int i = 0; i < n; i++)
        if (!category || !strcmp(category_of(&q[i]), category)) cell_add(&sum, &q[i]);
    return cell_end(sum);
}
