/* peers.h - SPRINTER beside its lossy peers at equal distribution shift (issue 26).
 *
 * SPRINTER trades shift from the target for fewer target calls; the lossy verifiers (typical
 * acceptance, fuzzy SD, the optimal lossy rule, Judge Decoding) trade it for more tokens per target
 * call. So they are compared at equal shift: for every run of a lossy method, its exact shift
 * d_TV(p, p_method) (the mean over the prefixes of the `sprinter dtv --method` file of its
 * configuration and data), its speed-up over ar (from runs timed alone when the sweep timed them,
 * else the sweep's own timings, marked), its tokens per target call, and its quality (the target's
 * log-likelihood per token, paired with sd by prompt). Reads the Report; writes lossy.md and
 * lossy.tsv; FINDINGS row 9 reads the same points.
 */
#ifndef SP_PEERS_H
#define SP_PEERS_H

#include "report_int.h"
#include "report_util.h"

typedef struct PeerPoint {
    const RunAn *a;
    const DtvFile *dtv;          /* the exact-shift file of its configuration; NULL: none */
    double dtv_p, dtv_se;        /* mean exact d_TV(p, p_method) over the file's prefixes and its SE;
                                  * 0 for ar and sd (lossless); NaN without a file */
    double speedup, speedup_lo, speedup_hi; /* over ar of the same cell: timed alone, the median and
                                              * range over paired repetitions; else the sweep's ratio */
    int timed_reps;              /* paired repetitions behind speedup (0: the sweep's own timings) */
    double tok_per_call;
    PairedMean llpt_vs_sd;       /* target log-likelihood per token minus sd's, paired by prompt */
    int front;                   /* on the Pareto front of (shift, speed-up) within its cell */
} PeerPoint;

/* 1 for a lossy peer method's name (typical, fsd, optimal-lossy, judge). */
int peer_method(const char *method);
/* 1 when the results hold runs of a lossy peer method (typical, fsd, optimal-lossy, judge). */
int peers_present(const Report *R);
/* The points of one cell (the runs of temperature T on data `dataset`, ar and sd included, the lossy
 * ones and sprinter), sorted by shift; *pts malloc'd (caller frees). */
int peer_points(const Report *R, const RunAn *any_of_cell, PeerPoint **pts, int *n, SpErr *err);
/* lossy.md and lossy.tsv (nothing when peers_present is 0). */
int write_peers(Report *R, SpErr *err);

#endif
