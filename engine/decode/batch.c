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
 * rows of some, verification blocks of others, prefills. Each decode is a context of its own on the
 * caller's thread (ucontext: a stack each, swapcontext at a request; a thread per decode with a
 * semaphore hand-off cost ~0.1 ms per switch on a loaded machine, more than a draft step), so they
 * share nothing unguarded and nothing runs concurrently, and as forward_batch's rows are
 * bit-identical to each session's own call (model.h), every decode's tokens, events and RNG draws
 * are those of decoder_run alone: only its timings differ (they include the wait for the others).
 * Each decode keeps its own Decoder (sessions, KV caches, rollbacks, buffers), method state and RNG.
 * Not reentrant across threads: one decoder_run_batch per thread at a time (each its own link).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include "decoder_int.h"

/* AddressSanitizer must be told when the stack changes (its fake stacks and shadow of each context). */
#if defined(__SANITIZE_ADDRESS__)
#define SP_ASAN_FIBERS 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SP_ASAN_FIBERS 1
#endif
#endif
#ifdef SP_ASAN_FIBERS
void __sanitizer_start_switch_fiber(void **fake_stack_save, const void *bottom, size_t size);
void __sanitizer_finish_switch_fiber(void *fake_stack_save, const void **bottom_old, size_t *size_old);
#endif

/* Rows a round's batch holds per decode before it runs in parts: a verification block of gamma <= 15
 * and its drafts (longer requests, prefills, run in parts or as their own calls: the same results). */
#define BATCH_ROWS_PER_DECODE 16
/* Each decode's stack (mapped, so only the pages it touches are memory), with a guard page below. */
#define DECODE_STACK_BYTES ((size_t)1 << 20)

typedef enum { JOB_RUNNING, JOB_WAITING, JOB_DONE } JobState;

typedef struct JobSlot {
    DecodeJob *job;
    struct BatchLink *link;
    ucontext_t ctx;      /* the decode's context: it runs decoder_run on its own stack */
    char *stack;         /* [DECODE_STACK_BYTES + page] mapped, the lowest page a guard */
    size_t map_bytes;
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
    ucontext_t sched;  /* the scheduler's context (the caller's stack) */
    const void *sched_bottom; /* its stack, as AddressSanitizer reports it */
    size_t sched_size;
    const Model *models[3];
    ForwardBatch *batches[3]; /* one per distinct model */
    int n_models;
};

/* Switches from context `from` to `to` (to's stack: bottom, size; NULL for the scheduler's). */
static void switch_to(ucontext_t *from, ucontext_t *to, const void *bottom, size_t size) {
#ifdef SP_ASAN_FIBERS
    void *fake = NULL;
    __sanitizer_start_switch_fiber(&fake, bottom, size);
    swapcontext(from, to);
    __sanitizer_finish_switch_fiber(fake, NULL, NULL);
#else
    (void)bottom, (void)size;
    swapcontext(from, to);
#endif
}

/* The decode's context: decoder_run, then done (uc_link returns to the scheduler). The slot's address
 * comes in two halves: makecontext passes ints. */
static void job_main(unsigned lo, unsigned hi) {
    JobSlot *slot = (JobSlot *)(((uintptr_t)hi << 32) | (uintptr_t)lo);
#ifdef SP_ASAN_FIBERS
    __sanitizer_finish_switch_fiber(NULL, &slot->link->sched_bottom, &slot->link->sched_size);
#endif
    DecodeJob *job = slot->job;
    job->rc = decoder_run(job->decoder, job->cfg, job->prompt, job->n_prompt, job->rng, &job->out, &job->err);
    slot->state = JOB_DONE;
#ifdef SP_ASAN_FIBERS
    __sanitizer_start_switch_fiber(NULL, slot->link->sched_bottom, slot->link->sched_size); /* this stack ends */
#endif
}

int batch_link_forward(struct BatchLink *link, int index, const Model *model, Session *session, const int32_t *tokens, int n,
                       int n_tail, const float **logits, const float **hidden, SpErr *err) {
    JobSlot *slot = &link->slots[index];
    slot->model = model;
    slot->req = (SessionRows){session, tokens, n, n_tail, NULL, NULL};
    slot->state = JOB_WAITING;
    switch_to(&slot->ctx, &link->sched, link->sched_bottom, link->sched_size);
    if (slot->req_rc) {
        *err = slot->req_err;
        return -1;
    }
    *logits = slot->req.logits;
    *hidden = slot->req.hidden;
    return 0;
}

/* Gives decode i the turn; returns when it waits on a request or is done. */
static void take_turn(struct BatchLink *link, int i) {
    JobSlot *slot = &link->slots[i];
    slot->state = JOB_RUNNING;
    switch_to(&link->sched, &slot->ctx, slot->stack + getpagesize(), DECODE_STACK_BYTES);
}

/* The decode's context on a stack of its own, to start at job_main; -1 if out of memory. */
static int slot_start(JobSlot *slot, struct BatchLink *link) {
    size_t page = (size_t)getpagesize();
    slot->map_bytes = DECODE_STACK_BYTES + page;
    void *map = mmap(NULL, slot->map_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (map == MAP_FAILED) return -1;
    slot->stack = map;
    mprotect(slot->stack, page, PROT_NONE); /* an overflow faults instead of writing below */
    if (getcontext(&slot->ctx)) return -1;
    slot->ctx.uc_stack.ss_sp = slot->stack + page;
    slot->ctx.uc_stack.ss_size = DECODE_STACK_BYTES;
    slot->ctx.uc_link = &link->sched;
    uintptr_t p = (uintptr_t)slot;
    makecontext(&slot->ctx, (void (*)(void))job_main, 2, (unsigned)(p & 0xffffffffu), (unsigned)(p >> 32));
    return 0;
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
    int rc = !link.slots || !link.reqs || !link.req_slot ? sp_fail(err, "out of memory") : 0;
    for (int i = 0; i < n && !rc; i++) {
        JobSlot *slot = &link.slots[i];
        slot->job = &jobs[i];
        slot->link = &link;
        memset(&jobs[i].out, 0, sizeof jobs[i].out);
        jobs[i].err = (SpErr){{0}};
        jobs[i].rc = -1;
        if (slot_start(slot, &link)) rc = sp_fail(err, "out of memory for the stack of decode %d of %d", i, n);
    }
    if (rc == 0) {
        for (int i = 0; i < n; i++) {
            jobs[i].decoder->link = &link;
            jobs[i].decoder->link_index = i;
        }
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
        for (int i = 0; i < n; i++) jobs[i].decoder->link = NULL;
    }
    for (int i = 0; link.slots && i < n; i++)
        if (link.slots[i].stack) munmap(link.slots[i].stack, link.slots[i].map_bytes);
    for (int k = 0; k < link.n_models; k++) forward_batch_free(link.batches[k]);
    free(link.slots), free(link.reqs), free(link.req_slot);
    return rc;
}
