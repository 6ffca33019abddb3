/* verseq.c - blocks and decisions of a verifier run (see verseq.h). */
#include "verseq.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Closes the block in progress (if it has decisions) and starts a new one at emitted-token count
 * `start` of the same prompt. */
static void close_block(VerSeq *v, VBlock *cur, int ended, int run_cap) {
    if (cur->n_dec == 0) return;
    cur->ended = ended;
    cur->run_cap = run_cap;
    v->blk[v->n_blk++] = *cur;
}

static void begin_block(const VerSeq *v, VBlock *cur, int prompt, int start) {
    memset(cur, 0, sizeof *cur);
    cur->prompt = prompt;
    cur->start = start;
    /* a finished round is never cut by max_new: only max_run (or, uncapped, the horizon) bounds N */
    cur->left = v->finish_round ? v->max_new : v->max_new - start;
    cur->first = (int)v->n_dec;
}

int verseq_build(const TokenRows *t, const char *path, int max_new, int max_run, int stop_at_eos, int finish_round,
                 VerSeq *v, SpErr *err) {
    memset(v, 0, sizeof *v);
    v->max_run = max_run, v->finish_round = finish_round;
    v->max_new = finish_round && max_run + 1 > max_new ? max_run + 1 : max_new;
    v->dec = malloc((size_t)(t->n ? t->n : 1) * sizeof *v->dec);
    v->blk = malloc((size_t)(t->n ? t->n : 1) * sizeof *v->blk);
    if (!v->dec || !v->blk) {
        verseq_free(v);
        return sp_fail(err, "%s: out of memory", path);
    }
    VBlock cur;
    int prompt = -1, emitted = 0;
    for (int64_t i = 0; i < t->n; i++) {
        if (i == 0 || t->prompt_index[i] != t->prompt_index[i - 1]) {
            if (prompt >= 0) {
                close_block(v, &cur, 0, 0);
                if (stop_at_eos && emitted < max_new && v->n_blk > 0 && v->blk[v->n_blk - 1].prompt == prompt)
                    v->blk[v->n_blk - 1].eos_cut = !v->blk[v->n_blk - 1].ended;
            }
            prompt++, emitted = 0;
            begin_block(v, &cur, prompt, 0);
        }
        if (t->decision[i] < 0 && t->kind[i] == EV_BONUS && cur.n_dec == 0) {
            /* the bonus token after a round whose last draft passed: the target's, no decision */
            if (v->n_blk > 0 && v->blk[v->n_blk - 1].prompt == prompt && v->blk[v->n_blk - 1].ended)
                v->blk[v->n_blk - 1].bonus = 1, v->n_bonus++;
            emitted++;
            begin_block(v, &cur, prompt, emitted);
            continue;
        }
        if (t->decision[i] < 0) {
            verseq_free(v);
            return sp_fail(err, "%s: row %lld has no verifier decision (decision = -1); not a sprinter/oracle log",
                           path, (long long)i);
        }
        VDecision *d = &v->dec[v->n_dec++];
        d->label = t->label[i], d->decision = t->decision[i], d->prompt = prompt;
        d->pos_in_block = cur.n_dec + 1;
        d->score = t->score[i];
        d->ratio = isnan(t->p[i]) || isnan(t->q[i]) ? NAN : t->p[i] > 0 ? t->q[i] / t->p[i] : INFINITY;
        v->n_unlabelled += d->label < 0;
        cur.n_dec++;
        emitted++;
        if (t->target_called[i]) {
            close_block(v, &cur, 1, t->capped[i] == 1);
            begin_block(v, &cur, prompt, emitted);
        } else {
            cur.n++;
        }
    }
    if (prompt >= 0) {
        close_block(v, &cur, 0, 0);
        if (stop_at_eos && emitted < max_new && v->n_blk > 0 && v->blk[v->n_blk - 1].prompt == prompt)
            v->blk[v->n_blk - 1].eos_cut = !v->blk[v->n_blk - 1].ended;
    }
    v->n_prompts = prompt + 1;
    return 0;
}

void verseq_free(VerSeq *v) {
    free(v->dec);
    free(v->blk);
    memset(v, 0, sizeof *v);
}
