/* chat_template_int.h - what the chat template's source files share (private to data/loaders; the
 * public contract is chat_template.h):
 *   chat_template.c        the arena, values, output, the evaluator, chat_template_render
 *   chat_template_parse.c  the template cut into segments, expression tokens, the parser (the tree)
 *   chat_template_load.c   a model directory's template (chat_template_load / chat_template_free)
 * Functions shared between those files carry the prefix ct_.
 */
#ifndef SP_CHAT_TEMPLATE_INT_H
#define SP_CHAT_TEMPLATE_INT_H

#include "chat_template.h"

#include <stddef.h>

/* ------------------------------------------------------------------ arena */

typedef struct Block {
    struct Block *next;
    size_t used, cap;
    _Alignas(16) unsigned char data[];
} Block;

typedef struct Ctx {
    Block *blocks;
    size_t arena_bytes;
    SpErr *err;
    int failed;
    /* output */
    char *out;
    size_t out_n, out_cap;
    long iterations;
} Ctx;

int ct_fail(Ctx *c, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void *ct_alloc(Ctx *c, size_t n);
char *ct_str_n(Ctx *c, const char *s, size_t n);
/* Frees every block of the arena. */
void ct_arena_free(Ctx *c);

/* ------------------------------------------------------------------ values */

typedef enum { V_UNDEF, V_NONE, V_BOOL, V_INT, V_STR, V_LIST, V_DICT } VKind;

typedef struct Dict Dict;
typedef struct Val {
    VKind k;
    long long i;   /* V_BOOL, V_INT */
    const char *s; /* V_STR (NUL-terminated) */
    struct Val *items;
    int n;   /* V_LIST */
    Dict *d; /* V_DICT */
} Val;

struct Dict {
    const char **keys;
    Val *vals;
    int n, cap;
    int is_namespace; /* set ns.x = ... may write it */
};

static inline Val v_undef(void) { return (Val){.k = V_UNDEF}; }
static inline Val v_none(void) { return (Val){.k = V_NONE}; }
static inline Val v_bool(int b) { return (Val){.k = V_BOOL, .i = b != 0}; }
static inline Val v_int(long long i) { return (Val){.k = V_INT, .i = i}; }
static inline Val v_str(const char *s) { return s ? (Val){.k = V_STR, .s = s} : (Val){.k = V_UNDEF}; } /* NULL: out of memory */

/* ------------------------------------------------------------------ segments (lexing) */

typedef enum { SEG_TEXT, SEG_VAR, SEG_BLOCK } SegKind;

typedef struct Seg {
    SegKind kind;
    char *text; /* SEG_TEXT: the text; tags: the content between the delimiters */
    int line;
} Seg;

typedef struct Segs {
    Seg *s;
    int n, cap;
} Segs;

/* chat_template_parse.c: the segments, then the tree (both described where they are defined) */
int ct_lex(Ctx *c, const char *tmpl, Segs *segs);

/* ------------------------------------------------------------------ expressions */

typedef enum {
    E_LIT, E_NAME, E_LIST, E_ATTR, E_INDEX, E_SLICE, E_CALL, E_FILTER, E_TEST, E_NOT, E_NEG, E_BIN, E_AND, E_OR, E_COND
} EKind;

typedef struct Expr Expr;
typedef struct Arg {
    const char *name; /* keyword, NULL for a positional argument */
    Expr *e;
} Arg;

struct Expr {
    EKind k;
    Val lit;          /* E_LIT */
    const char *name; /* E_NAME, E_ATTR, E_FILTER, E_TEST; E_BIN: the operator */
    Expr *a, *b, *c;  /* operands; E_SLICE: a[b:c:d]; E_COND: b if a else c */
    Expr *d;          /* E_SLICE: the step, NULL when none */
    Arg *args;        /* E_LIST items, E_CALL / E_FILTER arguments */
    int n_args;
    int negate; /* E_TEST: is not; E_BIN "in": not in */
    int line;
};

/* ------------------------------------------------------------------ statements */

typedef enum { N_TEXT, N_OUT, N_IF, N_FOR, N_SET } NKind;

typedef struct Node Node;
typedef struct Body {
    Node **n;
    int len;
} Body;

struct Node {
    NKind k;
    const char *text; /* N_TEXT */
    Expr *e;          /* N_OUT, N_FOR iterable, N_SET value */
    /* N_IF: conds[i] guards bodies[i]; a final body without cond is the else */
    Expr **conds;
    Body *bodies;
    int n_branches;
    const char *var, *attr; /* N_FOR loop variable; N_SET name (attr: ns.attr) */
    const char *var2;       /* N_FOR: the second variable of "for a, b in pairs", else NULL */
    Body body;              /* N_FOR */
    int line;
};

int ct_parse_body(Ctx *c, const Segs *segs, int *i, Body *out, const char *const *ends, int depth);

#endif
