/* batch.c - decoder_run_batch: B independent decodes in lock step, their forward passes batched.
 *
 * Every forward a method family makes goes through lane_advance (lanes.c): that is where a step says
 * "I need these rows of this model" and then uses the logits. So the split of a step into what it
 * asks for and what it does with the answer is made there, once, for every family: each decode runs
 * decoder_run unchanged on a thread of its own, and a lane_advance of a batched decoder posts its
 * request (BatchLink) and waits; the scheduler (the caller's thread) lets the decodes run one at a
 * time, in index order, each up to its next request or its end, then runs all requests of a round
 * in one forward_batch per model (the draft's; the target's and the audit copy's together) and
 * resumes them, again one at a time in index order. A round mixes what the decodes need then: draft
 * rows of some, verification blocks of others, prefills. Only one thread runs at a time (a
 * semaphore hand-off), so the decodes share nothing unguarded, and as forward_batch's rows are
 * bit-identical to each session's own call (model.h), every decode's tokens, events and RNG draws
 * are those of decoder_run alone: only its timings differ (they include the wait for the others).
 * Each decode keeps its own Decoder (sessions, KV caches, rollbacks, buffers), method state and RNG.
 */
#include <pthread.h>
#include <semaphore.h>
#include <stdlib.h>
#include <string.h>

#include "decoder_int.h"

/* Rows a round's batch holds per decode before it runs in parts: a verification block of gamma <= 15
 * and its drafts (longer requests, prefills, run in parts or as their own calls: the same results). */
#define BATCH_ROWS_PER_DECODE 16

typedef enum { JOB_RUNNING, JOB_WAITING, JOB_DONE } JobState;

typedef struct JobSlot {
    DecodeJob *job;
    struct BatchLink *link;
    pthread_t thread;
    sem_t go;            /* posted by the scheduler: run (first turn, or the request's result is in) */
    JobState state;
    const Model *model;  /* the request's model */
    SessionRows req;     /* the request; logits / hidden filled in by the scheduler */
    int req_rc;          /* 0, or -1 with req_err */
    SpErr req_err;
} JobSlot;

struct BatchLink {
    JobSlot *slots;
    int n;
    SessionRows *reqs; /* [n] a round's requests of one model */
    int *req_slot;     /* [n] their decodes */
    sem_t sched; /* posted by a decode when it waits on a request or is done */
    const Model *models[3];
    ForwardBatch *batches[3]; /* one per distinct model */
    int n_models;
};

/* The decode's thread: decoder_run, then done. */
static void *job_main(void *arg) {
    JobSlot *slot = arg;
    DecodeJob *job = slot->job;
    sem_wait(&slot->go);
    job->rc = decoder_run(job->decoder, job->cfg, job->prompt, job->n_prompt, job->rng, &job->out, &job->err);
    slot->state = JOB_DONE;
    sem_post(&slot->link->sched);
    return NULL;
}

int batch_link_forward(struct BatchLink *link, int index, const Model *model, Session *session, const int32_t *tokens, int n,
                       int n_tail, const float **logits, const float **hidden, SpErr *err) {
    JobSlot *slot = &link->slots[index];
    slot->model = model;
    slot->req = (SessionRows){session, tokens, n, n_tail, NULL, NULL};
    slot->state = JOB_WAITING;
    sem_post(&link->sched);
    sem_wait(&slot->go);
    if (slot->req_rc) {
        *err = slot->req_err;
        return -1;
    }
    *logits = slot->req.logits;
    *hidden = slot->req.hidden;
    return 0;
}

/* Gives decode i the turn and waits until it waits on a request or is done. */
static void take_turn(struct BatchLink *link, int i) {
    link->slots[i].state = JOB_RUNNING;
    sem_post(&link->slots[i].go);
    sem_wait(&link->sched);
}

/* The batch of model m (made on first use), or NULL with err. */
static ForwardBatch *batch_of(struct BatchLink *link, const Model *m, SpErr *err) {
    for (int k = 0; k < link->n_models; k++)
        if (link->models[k] == m) return link->batches[k];
    ForwardBatch *b = forward_batch_new(m, link->n * BATCH_ROWS_PER_DECODE, err);
    if (!b) return NULL;
    link->models[link->n_models] = m;
    link->batches[link->n_models++] = b;
    return b;
}

/* Runs the waiting requests of model m in one forward_batch; if it refuses them, each alone, so that
 * every request gets the answer (or the error) its own call would give. */
static void run_model_requests(struct BatchLink *link, const Model *m) {
    SessionRows *reqs = link->reqs;
    int *idx = link->req_slot, nr = 0;
    for (int i = 0; i < link->n; i++) {
        JobSlot *slot = &link->slots[i];
        if (slot->state != JOB_WAITING || slot->model != m) continue;
        slot->req_rc = 0;
        reqs[nr] = slot->req;
        idx[nr++] = i;
    }
    SpErr err = {{0}};
    ForwardBatch *b = batch_of(link, m, &err);
    if (b && forward_batch(b, reqs, nr, &err) == 0) {
        for (int r = 0; r < nr; r++) link->slots[idx[r]].req = reqs[r];
        return;
    }
    for (int r = 0; r < nr; r++) {
        JobSlot *slot = &link->slots[idx[r]];
        SessionRows *q = &slot->req;
        slot->req_rc = session_forward_tail(q->session, q->tokens, q->n, q->n_tail, &q->logits, &q->hidden, &slot->req_err);
    }
}

int decoder_run_batch(DecodeJob *jobs, int n, SpErr *err) {
    if (n < 1) return sp_fail(err, "a decode batch needs at least one prompt");
    struct BatchLink link = {.n = n};
    link.slots = calloc((size_t)n, sizeof *link.slots);
    link.reqs = calloc((size_t)n, sizeof *link.reqs);
    link.req_slot = calloc((size_t)n, sizeof *link.req_slot);
    if (!link.slots || !link.reqs || !link.req_slot) {
        free(link.slots), free(link.reqs), free(link.req_slot);
        return sp_fail(err, "out of memory");
    }
    int rc = 0, started = 0;
    if (sem_init(&link.sched, 0, 0)) {
        free(link.slots), free(link.reqs), free(link.req_slot);
        return sp_fail(err, "sem_init failed");
    }
    for (int i = 0; i < n; i++) {
        JobSlot *slot = &link.slots[i];
        slot->job = &jobs[i];
        slot->link = &link;
        memset(&jobs[i].out, 0, sizeof jobs[i].out);
        jobs[i].err = (SpErr){{0}};
        jobs[i].rc = -1;
        jobs[i].decoder->link = &link;
        jobs[i].decoder->link_index = i;
        if (sem_init(&slot->go, 0, 0) || pthread_create(&slot->thread, NULL, job_main, slot)) {
            rc = sp_fail(err, "could not start decode thread %d of %d", i, n);
            break;
        }
        started++;
    }
    if (rc == 0) {
        for (int i = 0; i < n; i++) take_turn(&link, i);
        for (;;) {
            int waiting = 0;
            for (int i = 0; i < n; i++) waiting += link.slots[i].state == JOB_WAITING;
            if (!waiting) break;
            /* one forward_batch per model, in the order the models first appear among the decodes */
            const Model *done_models[3];
            int n_done = 0;
            for (int i = 0; i < n; i++) {
                JobSlot *slot = &link.slots[i];
                if (slot->state != JOB_WAITING) continue;
                int seen = 0;
                for (int k = 0; k < n_done; k++) seen |= done_models[k] == slot->model;
                if (seen) continue;
                done_models[n_done++] = slot->model;
                run_model_requests(&link, slot->model);
            }
            for (int i = 0; i < n; i++)
                if (link.slots[i].state == JOB_WAITING) take_turn(&link, i);
        }
    } else { /* release the started ones: each runs alone to its end */
        for (int i = 0; i < started; i++) jobs[i].decoder->link = NULL;
        for (int i = 0; i < started; i++) take_turn(&link, i);
    }
    for (int i = 0; i < started; i++) {
        pthread_join(link.slots[i].thread, NULL);
        sem_destroy(&link.slots[i].go);
    }
    for (int i = 0; i < n; i++) jobs[i].decoder->link = NULL;
    for (int k = 0; k < link.n_models; k++) forward_batch_free(link.batches[k]);
    sem_destroy(&link.sched);
    free(link.slots), free(link.reqs), free(link.req_slot);
    return rc;
}
