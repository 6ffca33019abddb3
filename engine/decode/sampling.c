/* sampling.c - logits -> the probability vector actually sampled from (temperature, top-k,
 * top-p), and one inverse-CDF draw from it. See sampling.h for the contract.
 *
 * Ordering of tokens. Every "largest"/"most probable" below means the total order
 *     a before b  <=>  logit[a] > logit[b]  or  (logit[a] == logit[b] and a < b),
 * i.e. by logit descending with ties broken by the LOWER token id. For T > 0 this is the order
 * of softmax(logits / T) (exp is monotone), stated on the logits so that two tokens whose
 * probabilities round to the same float are still ordered deterministically. Top-k keeps the
 * first k tokens of this order; top-p walks this order.
 *
 * Cost per call (V = vocabulary size, k = top_k, n = nucleus size):
 *   top_k off, top_p off : one pass for the max, one for exp; no sorting at all.
 *   top_k = k (< V)      : bounded heap selection O(V log k) + O(k log k) to order the k;
 *                          exp only for the k kept tokens.
 *   top_k off, top_p < 1 : exp for all V (the threshold needs the total mass), then a
 *                          quickselect steered by mass finds the nucleus in O(V) expected
 *                          time without sorting it (worst case O(V log V)).
 * No allocation; the caller's work[V] holds the selected indices.
 */
#include "sampling.h"

#include <math.h>
#include <string.h>

int sampler_params_check(const SamplerParams *sp, SpErr *err) {
    if (!sp) return sp_fail(err, "sampler params: NULL");
    /* !(x >= 0) also rejects NaN; an infinite temperature is rejected too. */
    if (!(sp->temperature >= 0.0f) || isinf(sp->temperature))
        return sp_fail(err, "sampler params: temperature must be finite and >= 0, got %g",
                       (double)sp->temperature);
    if (sp->top_k < 0)
        return sp_fail(err, "sampler params: top_k must be >= 0, got %d", sp->top_k);
    if (!(sp->top_p > 0.0f && sp->top_p <= 1.0f))
        return sp_fail(err, "sampler params: top_p must be in (0, 1], got %g", (double)sp->top_p);
    return 0;
}

/* Returns 0 if all logits are finite, else fills err naming the first bad index. */
static int check_finite(const float *logits, int V, SpErr *err) {
    for (int i = 0; i < V; i++) {
        float x = logits[i];
        if (isnan(x)) return sp_fail(err, "logits contain NaN at index %d", i);
        if (isinf(x))
            return sp_fail(err, "logits contain %cInf at index %d", x > 0 ? '+' : '-', i);
    }
    return 0;
}

/* 1 if token a comes strictly before token b in the total order (logit desc, id asc). */
static inline int before(const float *key, int32_t a, int32_t b) {
    return key[a] > key[b] || (key[a] == key[b] && a < b);
}

int32_t sampler_argmax(const float *logits, int V) {
    int32_t best = 0;
    for (int32_t i = 1; i < V; i++)
        if (logits[i] > logits[best]) best = i;
    return best;
}

static inline void swap_i32(int32_t *a, int32_t *b) {
    int32_t t = *a;
    *a = *b;
    *b = t;
}

/* Restores the heap property below pos in h[0..n): every parent comes LATER in the order than
 * its children, so h[0] is the last (worst) of the held tokens. */
static void sift_down_worst(int32_t *h, int n, int pos, const float *key) {
    for (;;) {
        int c = 2 * pos + 1;
        if (c >= n) return;
        if (c + 1 < n && before(key, h[c], h[c + 1])) c++; /* c = the worse child */
        if (!before(key, h[pos], h[c])) return;
        swap_i32(&h[pos], &h[c]);
        pos = c;
    }
}

/* Sorts a heap h[0..n) (as built by sift_down_worst) into the order, best first: repeatedly
 * moves the worst held token to the end of the shrinking heap. */
static void heap_to_sorted(int32_t *h, int n, const float *key) {
    for (int m = n - 1; m > 0; m--) {
        swap_i32(&h[0], &h[m]);
        sift_down_worst(h, m, 0, key);
    }
}

/* Sorts the index array h[0..n) into the order: insertion sort when short, else heapsort
 * (O(n log n) worst case, no recursion, no allocation). */
static void sort_in_order(int32_t *h, int n, const float *key) {
    if (n <= 16) {
        for (int i = 1; i < n; i++)
            for (int j = i; j > 0 && before(key, h[j], h[j - 1]); j--) swap_i32(&h[j], &h[j - 1]);
        return;
    }
    for (int p = n / 2 - 1; p >= 0; p--) sift_down_worst(h, n, p, key);
    heap_to_sorted(h, n, key);
}

/* Puts the first m (1 <= m <= V) tokens of the order into out[0..m), sorted in that order
 * (out[0] = best). Bounded heap: O(V log m) worst case, O(V) comparisons when most tokens lose
 * against the current worst kept one. */
static void select_top_sorted(const float *key, int V, int m, int32_t *out) {
    for (int32_t i = 0; i < m; i++) out[i] = i;
    for (int p = m / 2 - 1; p >= 0; p--) sift_down_worst(out, m, p, key);
    for (int32_t i = m; i < V; i++) {
        if (before(key, i, out[0])) {
            out[0] = i;
            sift_down_worst(out, m, 0, key);
        }
    }
    heap_to_sorted(out, m, key);
}

/* exp((logit - mx) / T) in double: the unnormalised, max-subtracted softmax weight (in (0, 1]
 * for mx = the max logit, so it cannot overflow). */
static inline double weight(float logit, double mx, double T) {
    return exp(((double)logit - mx) / T);
}

/* Full softmax of logits/T into probs with no truncation (the no-sort path). */
static void softmax_all(const float *logits, int V, double T, float *probs) {
    double mx = logits[sampler_argmax(logits, V)];
    double sum = 0.0;
    for (int i = 0; i < V; i++) {
        probs[i] = (float)weight(logits[i], mx, T);
        sum += probs[i]; /* sum what is stored, so the renormalised floats sum to ~1 */
    }
    double inv = 1.0 / sum; /* sum >= 1: the max token has weight exactly 1 */
    for (int i = 0; i < V; i++) probs[i] = (float)(probs[i] * inv);
}

float sampler_top_prob(const float *logits, int V) {
    double mx = logits[sampler_argmax(logits, V)];
    double sum = 0.0;
    for (int i = 0; i < V; i++) sum += (float)weight(logits[i], mx, 1.0); /* as softmax_all sums */
    return (float)(1.0 / sum); /* the max token's weight is exactly 1 */
}

/* Writes the renormalised distribution over the kept tokens kept[0..n) into probs (mx = the
 * max logit, which is among them); every other entry becomes exactly 0. */
static void fill_kept(const float *logits, int V, double T, double mx, const int32_t *kept,
                      int n, float *probs) {
    memset(probs, 0, (size_t)V * sizeof *probs);
    double sum = 0.0;
    for (int j = 0; j < n; j++) {
        float w = (float)weight(logits[kept[j]], mx, T);
        probs[kept[j]] = w;
        sum += w;
    }
    double inv = 1.0 / sum;
    for (int j = 0; j < n; j++) probs[kept[j]] = (float)(probs[kept[j]] * inv);
}

/* Length of the shortest prefix of order[0..len) whose mass w[order[j]] brings acc up to
 * threshold, or -1 if even the whole of it falls short. Accumulates in double, in order. */
static int nucleus_len(const float *w, const int32_t *order, int len, double acc,
                       double threshold) {
    for (int j = 0; j < len; j++) {
        acc += w[order[j]];
        if (acc >= threshold) return j + 1;
    }
    return -1;
}

/* Lomuto partition of h[lo..hi) (hi - lo >= 3) around a median-of-three pivot: tokens before
 * the pivot in the order end in h[lo..a), the pivot at h[a], the rest after it. Returns a and
 * the mass of w over h[lo..a) in *mass_before. Keys are all distinct in the total order. */
static int partition(int32_t *h, int lo, int hi, const float *key, const float *w,
                     double *mass_before) {
    int a = lo, b = lo + (hi - lo) / 2, c = hi - 1, med;
    if (before(key, h[a], h[b]))
        med = before(key, h[b], h[c]) ? b : (before(key, h[a], h[c]) ? c : a);
    else
        med = before(key, h[a], h[c]) ? a : (before(key, h[b], h[c]) ? c : b);
    swap_i32(&h[med], &h[hi - 1]);
    int32_t pivot = h[hi - 1];
    int store = lo;
    double m = 0.0;
    for (int i = lo; i < hi - 1; i++) {
        if (before(key, h[i], pivot)) {
            swap_i32(&h[i], &h[store]);
            m += w[h[store]];
            store++;
        }
    }
    swap_i32(&h[store], &h[hi - 1]);
    *mass_before = m;
    return store;
}

/* Top-p over all V tokens (top-k off): finds the smallest n such that the first n tokens of the
 * order carry mass >= top_p * total, leaving them (in no particular order) in work[0..n).
 * Quickselect on the order, steered by mass instead of count: O(V) expected, no full sort.
 * The prefix masses are accumulated in partition order rather than sorted order, which can
 * only matter when a cumulative mass lies within double round-off (~1e-12 relative) of the
 * threshold. If partitioning degenerates (depth budget spent) the remaining range is heapsorted
 * and walked, so the worst case is O(V log V). probs receives the unnormalised weights. */
static int nucleus_of_all(const float *logits, int V, double T, double mx, double top_p,
                          float *probs, int32_t *work) {
    double total = 0.0;
    for (int i = 0; i < V; i++) {
        probs[i] = (float)weight(logits[i], mx, T);
        total += probs[i];
        work[i] = i;
    }
    double threshold = top_p * total, acc = 0.0; /* acc = mass of work[0..lo), all kept */
    int lo = 0, hi = V, budget = 16;
    for (int v = V; v > 1; v >>= 1) budget += 4; /* ~4 log2 V partitions before giving up */
    while (hi - lo > 16 && budget-- > 0) {
        double mass_before;
        int a = partition(work, lo, hi, logits, probs, &mass_before);
        if (acc + mass_before >= threshold) { /* the cut lies before the pivot */
            hi = a;
            continue;
        }
        acc += mass_before + probs[work[a]];
        if (acc >= threshold) return a + 1; /* the pivot completes the nucleus */
        lo = a + 1;
    }
    sort_in_order(work + lo, hi - lo, logits);
    int n = nucleus_len(probs, work + lo, hi - lo, acc, threshold);
    /* Falling short here is round-off only (the range's mass was seen to reach threshold, or
     * top_p ~ 1 and hi == V): keep the whole range. */
    return n > 0 ? lo + n : hi;
}

/* Top-p within the top-k set work[0..k) (already in order). Returns the nucleus length. */
static int nucleus_of_topk(const float *logits, double T, double top_p, int k,
                           const int32_t *work, float *probs) {
    double mx = logits[work[0]];
    double total = 0.0;
    for (int j = 0; j < k; j++) {
        probs[work[j]] = (float)weight(logits[work[j]], mx, T);
        total += probs[work[j]];
    }
    int n = nucleus_len(probs, work, k, 0.0, top_p * total);
    return n > 0 ? n : k;
}

int sampler_probs(const SamplerParams *sp, const float *logits, int V, float *probs, int32_t *work,
                  SpErr *err) {
    if (sampler_params_check(sp, err) < 0) return -1;
    if (V <= 0) return sp_fail(err, "sampler: vocabulary size must be > 0, got %d", V);
    if (!logits || !probs || !work) return sp_fail(err, "sampler: NULL logits/probs/work");
    if (check_finite(logits, V, err) < 0) return -1;

    if (sp->temperature == 0.0f) { /* greedy: one-hot, top-k/top-p irrelevant */
        memset(probs, 0, (size_t)V * sizeof *probs);
        probs[sampler_argmax(logits, V)] = 1.0f;
        return 0;
    }
    double T = sp->temperature;
    int topk_on = sp->top_k > 0 && sp->top_k < V;
    int topp_on = sp->top_p < 1.0f;

    if (!topk_on && !topp_on) {
        softmax_all(logits, V, T, probs);
        return 0;
    }
    int n;
    double mx;
    if (topk_on) {
        select_top_sorted(logits, V, sp->top_k, work);
        mx = logits[work[0]];
        n = topp_on ? nucleus_of_topk(logits, T, sp->top_p, sp->top_k, work, probs) : sp->top_k;
    } else {
        mx = logits[sampler_argmax(logits, V)];
        n = nucleus_of_all(logits, V, T, mx, sp->top_p, probs, work);
    }
    fill_kept(logits, V, T, mx, work, n, probs);
    return 0;
}

/* Inverse CDF: u ~ U[0,1), target = u * total, return the first token whose running sum exceeds
 * target. Entries <= 0 (or NaN) are skipped entirely, so they can never be returned; if
 * round-off lets target reach the end, the last positive token is returned. Returns -1 if no
 * entry is positive. */
int32_t sampler_draw(const float *probs, int V, gsl_rng *rng) {
    double total = 0.0;
    for (int i = 0; i < V; i++)
        if (probs[i] > 0.0f) total += probs[i];
    if (!(total > 0.0)) return -1;
    double target = gsl_rng_uniform(rng) * total;
    double cum = 0.0;
    int32_t last = -1;
    for (int32_t i = 0; i < V; i++) {
        if (!(probs[i] > 0.0f)) continue;
        cum += probs[i];
        last = i;
        if (target < cum) return i;
    }
    return last;
}

/* GSL's mt19937 seeds from the low 32 bits of an unsigned long only (and maps 0 to its default
 * 4357), so the 64-bit seed is folded by XOR of its halves: seeds below 2^32 are used as they
 * are, and the high half still changes the stream. */
gsl_rng *sampler_rng_new(uint64_t seed) {
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    if (!r) return NULL;
    uint32_t folded = (uint32_t)(seed ^ (seed >> 32));
    gsl_rng_set(r, (unsigned long)folded);
    return r;
}
