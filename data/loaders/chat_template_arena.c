/* chat_template_arena.c - the renderer's memory (one arena per render, freed whole) and its first
 * error (chat_template_int.h): what the parser and the evaluator both build on. */
#include "chat_template_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_MEMORY (256u << 20) /* bytes of the arena: the values a template builds */

/* ------------------------------------------------------------------ arena */

/* Zeroed arena memory; NULL (with the error set) when out of memory or over MAX_MEMORY. */
void *ct_alloc(Ctx *c, size_t n) {
    n = (n + 15) & ~(size_t)15;
    if (!c->blocks || c->blocks->used + n > c->blocks->cap) {
        size_t cap = n > 65536 ? n : 65536;
        if (c->arena_bytes + cap > MAX_MEMORY) return ct_fail(c, 0, "chat_template: needs more than %u MB", MAX_MEMORY >> 20), NULL;
        c->arena_bytes += cap;
        Block *b = malloc(sizeof *b + cap);
        if (!b) return NULL;
        b->next = c->blocks, b->used = 0, b->cap = cap;
        c->blocks = b;
    }
    void *p = c->blocks->data + c->blocks->used;
    c->blocks->used += n;
    memset(p, 0, n);
    return p;
}

void ct_arena_free(Ctx *c) {
    for (Block *b = c->blocks, *next; b; b = next) next = b->next, free(b);
    c->blocks = NULL;
}

char *ct_str_n(Ctx *c, const char *s, size_t n) {
    char *p = ct_alloc(c, n + 1);
    if (p) memcpy(p, s, n), p[n] = '\0';
    return p;
}

/* The first error wins; later ones are dropped. Always returns -1. */
int ct_fail(Ctx *c, int line, const char *fmt, ...) {
    if (c->failed) return -1;
    c->failed = 1;
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (line > 0) sp_fail(c->err, "chat_template: line %d: %s", line, msg);
    else sp_fail(c->err, "%s", msg);
    return -1;
}
