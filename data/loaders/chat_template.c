/* chat_template.c - the Jinja2 subset of Hugging Face chat templates (see chat_template.h).
 *
 * Three stages: the template is cut into segments (text, {{ }}, {% %}, comments) with Jinja's
 * whitespace rules applied to the text (trim_blocks, lstrip_blocks, - and + markers); the segments
 * are parsed into a tree (statements; expressions by recursive descent in Jinja's precedence); the
 * tree is evaluated against the variables. Everything but the result lives in one arena. */
#include "chat_template.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "jsonutil.h"

#define MAX_DEPTH 200          /* nesting of expressions and blocks */
#define MAX_OUTPUT (64u << 20) /* rendered bytes */
#define MAX_LOOP 100000        /* iterations of all loops together */
#define MAX_MEMORY (256u << 20) /* bytes of the arena: the values a template builds */

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

static int fail(Ctx *c, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Zeroed arena memory; NULL (with the error set) when out of memory or over MAX_MEMORY. */
static void *alloc(Ctx *c, size_t n) {
    n = (n + 15) & ~(size_t)15;
    if (!c->blocks || c->blocks->used + n > c->blocks->cap) {
        size_t cap = n > 65536 ? n : 65536;
        if (c->arena_bytes + cap > MAX_MEMORY) return fail(c, 0, "chat_template: needs more than %u MB", MAX_MEMORY >> 20), NULL;
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

static void arena_free(Ctx *c) {
    for (Block *b = c->blocks, *next; b; b = next) next = b->next, free(b);
    c->blocks = NULL;
}

static char *str_n(Ctx *c, const char *s, size_t n) {
    char *p = alloc(c, n + 1);
    if (p) memcpy(p, s, n), p[n] = '\0';
    return p;
}

/* The first error wins; later ones are dropped. Always returns -1. */
static int fail(Ctx *c, int line, const char *fmt, ...) {
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

static Val v_undef(void) { return (Val){.k = V_UNDEF}; }
static Val v_none(void) { return (Val){.k = V_NONE}; }
static Val v_bool(int b) { return (Val){.k = V_BOOL, .i = b != 0}; }
static Val v_int(long long i) { return (Val){.k = V_INT, .i = i}; }
static Val v_str(const char *s) { return s ? (Val){.k = V_STR, .s = s} : (Val){.k = V_UNDEF}; } /* NULL: out of memory */

static int dict_set(Ctx *c, Dict *d, const char *key, Val v) {
    for (int i = 0; i < d->n; i++)
        if (!strcmp(d->keys[i], key)) return d->vals[i] = v, 0;
    if (d->n == d->cap) {
        int cap = d->cap ? 2 * d->cap : 8;
        const char **nk = alloc(c, (size_t)cap * sizeof *nk);
        Val *nv = alloc(c, (size_t)cap * sizeof *nv);
        if (!nk || !nv) return fail(c, 0, "out of memory");
        if (d->n) memcpy(nk, d->keys, (size_t)d->n * sizeof *nk), memcpy(nv, d->vals, (size_t)d->n * sizeof *nv);
        d->keys = nk, d->vals = nv, d->cap = cap;
    }
    d->keys[d->n] = key, d->vals[d->n] = v, d->n++;
    return 0;
}

static Val dict_get(const Dict *d, const char *key) {
    for (int i = 0; i < d->n; i++)
        if (!strcmp(d->keys[i], key)) return d->vals[i];
    return v_undef();
}

static int truthy(Val v) {
    switch (v.k) {
    case V_BOOL:
    case V_INT: return v.i != 0;
    case V_STR: return v.s[0] != '\0';
    case V_LIST: return v.n > 0;
    case V_DICT: return v.d->n > 0 || v.d->is_namespace;
    default: return 0;
    }
}

/* ------------------------------------------------------------------ output */

static int emit(Ctx *c, const char *s, size_t n) {
    if (c->out_n + n + 1 > c->out_cap) {
        if (c->out_n + n + 1 > MAX_OUTPUT) return fail(c, 0, "chat_template: output longer than %u bytes", MAX_OUTPUT);
        size_t cap = c->out_cap ? c->out_cap : 1024;
        while (cap < c->out_n + n + 1) cap *= 2;
        char *no = realloc(c->out, cap);
        if (!no) return fail(c, 0, "out of memory");
        c->out = no, c->out_cap = cap;
    }
    memcpy(c->out + c->out_n, s, n);
    c->out_n += n;
    c->out[c->out_n] = '\0';
    return 0;
}

/* Python's str() of a value, as Jinja prints it. */
static const char *to_str(Ctx *c, Val v, int line) {
    char buf[32];
    switch (v.k) {
    case V_UNDEF: return "";
    case V_NONE: return "None";
    case V_BOOL: return v.i ? "True" : "False";
    case V_INT: snprintf(buf, sizeof buf, "%lld", v.i); return str_n(c, buf, strlen(buf));
    case V_STR: return v.s;
    default: fail(c, line, "cannot print a %s", v.k == V_LIST ? "list" : "mapping"); return NULL;
    }
}

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

static int seg_push(Ctx *c, Segs *v, SegKind k, const char *text, size_t n, int line) {
    if (v->n == v->cap) {
        int cap = v->cap ? 2 * v->cap : 64;
        Seg *ns = alloc(c, (size_t)cap * sizeof *ns);
        if (!ns) return fail(c, 0, "out of memory");
        if (v->n) memcpy(ns, v->s, (size_t)v->n * sizeof *ns);
        v->s = ns, v->cap = cap;
    }
    char *t = str_n(c, text, n);
    if (!t) return fail(c, 0, "out of memory");
    v->s[v->n++] = (Seg){k, t, line};
    return 0;
}

static int count_lines(const char *a, const char *b) {
    int n = 0;
    for (; a < b; a++) n += *a == '\n';
    return n;
}

/* Cuts tmpl into segments. Whitespace: a tag opened with '-' strips the white space before it, one
 * closed with '-' the white space after it; a block or comment tag not opened with '+' strips the
 * spaces and tabs before it back to the start of its line (lstrip_blocks), and one not closed with
 * '+' drops the single newline after it (trim_blocks). Comments leave no segment. */
static int lex(Ctx *c, const char *tmpl, Segs *segs) { /* tmpl: normalize_source()'s */
    const char *p = tmpl;
    int line = 1, strip_next = 0, trim_newline = 0;
    for (;;) {
        const char *open = p;
        while ((open = strchr(open, '{')) && open[1] != '{' && open[1] != '%' && open[1] != '#') open++;
        const char *text_end = open ? open : p + strlen(p);
        const char *ts = p;
        if (strip_next)
            while (ts < text_end && isspace((unsigned char)*ts)) ts++;
        else if (trim_newline && ts < text_end && *ts == '\n')
            ts++;
        const char *te = text_end;
        if (open) {
            char kind = open[1];
            char mark = open[2];
            if (mark == '-') {
                while (te > ts && isspace((unsigned char)te[-1])) te--;
            } else if (kind != '{' && mark != '+') { /* lstrip_blocks */
                const char *q = te;
                while (q > ts && (q[-1] == ' ' || q[-1] == '\t')) q--;
                if (q == tmpl || q[-1] == '\n') te = q; /* the tag starts its line */
            }
        }
        if (te > ts && seg_push(c, segs, SEG_TEXT, ts, (size_t)(te - ts), line + count_lines(p, ts))) return -1;
        if (!open) return 0;
        line += count_lines(p, open);
        char kind = open[1];
        const char *body = open + 2;
        if (*body == '-' || *body == '+') body++;
        const char *close = NULL;
        if (kind == '#') {
            close = strstr(body, "#}");
        } else { /* the closing delimiter outside string literals */
            char want = kind == '{' ? '}' : '%';
            for (const char *q = body; *q && !close; q++) {
                if (*q == '\'' || *q == '"') {
                    char quote = *q;
                    for (q++; *q && *q != quote; q++)
                        if (*q == '\\' && q[1]) q++;
                    if (!*q) break;
                } else if (*q == want && q[1] == '}') {
                    close = q;
                }
            }
        }
        if (!close) return fail(c, line, "unclosed %s", kind == '{' ? "{{" : kind == '%' ? "{%" : "{#");
        const char *body_end = close;
        char end_mark = close > body ? close[-1] : 0;
        if (end_mark == '-' || end_mark == '+') body_end--;
        if (kind != '#' && seg_push(c, segs, kind == '{' ? SEG_VAR : SEG_BLOCK, body, (size_t)(body_end - body), line))
            return -1;
        line += count_lines(open, close);
        strip_next = end_mark == '-';
        trim_newline = kind != '{' && end_mark != '+';
        p = close + 2;
    }
}

/* ------------------------------------------------------------------ expression tokens */

typedef enum { T_END, T_NAME, T_INT, T_STR, T_OP } TKind;

typedef struct Tok {
    TKind k;
    const char *s; /* T_NAME, T_STR (unescaped), T_OP (the operator) */
    long long i;
} Tok;

typedef struct Toks {
    Tok *t;
    int n, pos, line;
} Toks;

static int tokenize(Ctx *c, const char *src, int line, Toks *out) {
    int cap = 16;
    out->t = alloc(c, (size_t)cap * sizeof *out->t);
    out->n = out->pos = 0;
    out->line = line;
    if (!out->t) return fail(c, 0, "out of memory");
    static const char *const ops[] = {"==", "!=", "<=", ">=", "//", "**", "<", ">", "+", "-", "*", "/", "%", "~",
                                      "(", ")", "[", "]", "{", "}", ",", ".", ":", "|", "="};
    for (const char *p = src;;) {
        while (isspace((unsigned char)*p)) p++;
        if (out->n + 1 >= cap) {
            Tok *nt = alloc(c, (size_t)(cap *= 2) * sizeof *nt);
            if (!nt) return fail(c, 0, "out of memory");
            memcpy(nt, out->t, (size_t)out->n * sizeof *nt);
            out->t = nt;
        }
        Tok *t = &out->t[out->n];
        if (!*p) {
            t->k = T_END;
            return 0;
        }
        if (isalpha((unsigned char)*p) || *p == '_') {
            const char *b = p;
            while (isalnum((unsigned char)*p) || *p == '_') p++;
            *t = (Tok){T_NAME, str_n(c, b, (size_t)(p - b)), 0};
        } else if (isdigit((unsigned char)*p)) {
            char *end;
            errno = 0;
            long long v = strtoll(p, &end, 10);
            if (errno == ERANGE) return fail(c, line, "integer literal out of range");
            if (*end == '.' && isdigit((unsigned char)end[1])) return fail(c, line, "floating-point numbers are not supported");
            *t = (Tok){T_INT, NULL, v};
            p = end;
        } else if (*p == '\'' || *p == '"') {
            char quote = *p++;
            char *s = alloc(c, strlen(p) + 1), *w = s;
            if (!s) return fail(c, 0, "out of memory");
            for (; *p && *p != quote; p++) {
                if (*p != '\\' || !p[1]) {
                    *w++ = *p;
                    continue;
                }
                p++;
                switch (*p) {
                case 'n': *w++ = '\n'; break;
                case 't': *w++ = '\t'; break;
                case 'r': *w++ = '\r'; break;
                case '\\': *w++ = '\\'; break;
                case '\'': *w++ = '\''; break;
                case '"': *w++ = '"'; break;
                default: *w++ = '\\', *w++ = *p; break; /* Python keeps unknown escapes */
                }
            }
            if (*p != quote) return fail(c, line, "unterminated string");
            p++;
            *w = '\0';
            *t = (Tok){T_STR, s, 0};
        } else {
            size_t k = 0;
            while (k < sizeof ops / sizeof *ops && strncmp(p, ops[k], strlen(ops[k]))) k++;
            if (k == sizeof ops / sizeof *ops) return fail(c, line, "unexpected character '%c'", *p);
            *t = (Tok){T_OP, ops[k], 0};
            p += strlen(ops[k]);
        }
        out->n++;
    }
}

static const Tok *peek(const Toks *t) { return &t->t[t->pos]; }
static int is_op(const Toks *t, const char *op) { return peek(t)->k == T_OP && !strcmp(peek(t)->s, op); }
static int is_name(const Toks *t, const char *name) { return peek(t)->k == T_NAME && !strcmp(peek(t)->s, name); }
static int accept_op(Toks *t, const char *op) { return is_op(t, op) ? (t->pos++, 1) : 0; }
static int accept_name(Toks *t, const char *name) { return is_name(t, name) ? (t->pos++, 1) : 0; }

static int expect_op(Ctx *c, Toks *t, const char *op) {
    if (accept_op(t, op)) return 0;
    return fail(c, t->line, "expected '%s'", op);
}

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
    Expr *a, *b, *c;  /* operands; E_SLICE: a[b:c]; E_COND: b if a else c */
    Arg *args;        /* E_LIST items, E_CALL / E_FILTER arguments */
    int n_args;
    int negate; /* E_TEST: is not; E_BIN "in": not in */
    int line;
};

static Expr *node(Ctx *c, EKind k, int line) {
    Expr *e = alloc(c, sizeof *e);
    if (!e) fail(c, 0, "out of memory");
    else e->k = k, e->line = line;
    return e;
}

static Expr *parse_expr(Ctx *c, Toks *t, int depth);

/* ( args ) after the '(' was read; keyword arguments name=expr. */
static int parse_args(Ctx *c, Toks *t, Expr *e, int depth, const char *close) {
    Arg buf[32];
    int n = 0;
    while (!accept_op(t, close)) {
        if (n && expect_op(c, t, ",")) return -1;
        if (accept_op(t, close)) break; /* trailing comma */
        if (n == 32) return fail(c, t->line, "more than 32 arguments");
        const char *name = NULL;
        if (peek(t)->k == T_NAME && t->t[t->pos + 1].k == T_OP && !strcmp(t->t[t->pos + 1].s, "=")) {
            name = peek(t)->s;
            t->pos += 2;
        }
        Expr *a = parse_expr(c, t, depth + 1);
        if (!a) return -1;
        buf[n++] = (Arg){name, a};
    }
    e->args = alloc(c, (size_t)(n ? n : 1) * sizeof *e->args);
    if (!e->args) return fail(c, 0, "out of memory");
    memcpy(e->args, buf, (size_t)n * sizeof *buf);
    e->n_args = n;
    return 0;
}

static Expr *parse_primary(Ctx *c, Toks *t, int depth) {
    const Tok *k = peek(t);
    Expr *e = NULL;
    if (k->k == T_INT || k->k == T_STR) {
        if ((e = node(c, E_LIT, t->line))) e->lit = k->k == T_INT ? v_int(k->i) : v_str(k->s);
        t->pos++;
    } else if (k->k == T_NAME) {
        const char *n = k->s;
        t->pos++;
        if (!strcmp(n, "true") || !strcmp(n, "True") || !strcmp(n, "false") || !strcmp(n, "False")) {
            if ((e = node(c, E_LIT, t->line))) e->lit = v_bool(n[0] == 't' || n[0] == 'T');
        } else if (!strcmp(n, "none") || !strcmp(n, "None")) {
            if ((e = node(c, E_LIT, t->line))) e->lit = v_none();
        } else if ((e = node(c, E_NAME, t->line))) {
            e->name = n;
        }
    } else if (accept_op(t, "(")) {
        e = parse_expr(c, t, depth + 1);
        if (e && expect_op(c, t, ")")) return NULL;
    } else if (accept_op(t, "[")) {
        if ((e = node(c, E_LIST, t->line)) && parse_args(c, t, e, depth, "]")) return NULL;
    } else {
        fail(c, t->line, "unexpected %s", k->k == T_END ? "end of expression" : k->k == T_OP ? k->s : "token");
    }
    return e;
}

/* Postfix: .attr, [index], [a:b], (args). */
static Expr *parse_postfix(Ctx *c, Toks *t, int depth) {
    Expr *e = parse_primary(c, t, depth);
    while (e) {
        if (accept_op(t, ".")) {
            if (peek(t)->k != T_NAME) return fail(c, t->line, "expected a name after '.'"), NULL;
            Expr *a = node(c, E_ATTR, t->line);
            if (!a) return NULL;
            a->a = e, a->name = peek(t)->s, t->pos++;
            e = a;
        } else if (accept_op(t, "[")) {
            Expr *lo = NULL, *hi = NULL;
            if (!is_op(t, ":") && !(lo = parse_expr(c, t, depth + 1))) return NULL;
            if (accept_op(t, ":")) {
                if (!is_op(t, "]") && !(hi = parse_expr(c, t, depth + 1))) return NULL;
                Expr *s = node(c, E_SLICE, t->line);
                if (!s) return NULL;
                s->a = e, s->b = lo, s->c = hi;
                e = s;
            } else {
                Expr *s = node(c, E_INDEX, t->line);
                if (!s) return NULL;
                s->a = e, s->b = lo;
                e = s;
            }
            if (expect_op(c, t, "]")) return NULL;
        } else if (accept_op(t, "(")) {
            Expr *call = node(c, E_CALL, t->line);
            if (!call) return NULL;
            call->a = e;
            if (parse_args(c, t, call, depth, ")")) return NULL;
            e = call;
        } else {
            break;
        }
    }
    return e;
}

/* Filters (x | f, x | f(args)) and tests (x is [not] t), left to right. */
static Expr *parse_filtered(Ctx *c, Toks *t, int depth) {
    Expr *e = parse_postfix(c, t, depth);
    while (e) {
        if (accept_op(t, "|")) {
            if (peek(t)->k != T_NAME) return fail(c, t->line, "expected a filter name after '|'"), NULL;
            Expr *f = node(c, E_FILTER, t->line);
            if (!f) return NULL;
            f->a = e, f->name = peek(t)->s, t->pos++;
            if (accept_op(t, "(") && parse_args(c, t, f, depth, ")")) return NULL;
            e = f;
        } else if (accept_name(t, "is")) {
            Expr *f = node(c, E_TEST, t->line);
            if (!f) return NULL;
            f->negate = accept_name(t, "not");
            if (peek(t)->k != T_NAME) return fail(c, t->line, "expected a test name after 'is'"), NULL;
            f->a = e, f->name = peek(t)->s, t->pos++;
            e = f;
        } else {
            break;
        }
    }
    return e;
}

static Expr *binary(Ctx *c, const char *op, Expr *a, Expr *b, int line) {
    Expr *e = node(c, E_BIN, line);
    if (e) e->name = op, e->a = a, e->b = b;
    return e;
}

static Expr *parse_unary(Ctx *c, Toks *t, int depth) {
    if (depth > MAX_DEPTH) return fail(c, t->line, "expression nested too deeply"), NULL;
    if (accept_op(t, "-")) {
        Expr *e = node(c, E_NEG, t->line);
        if (e && !(e->a = parse_unary(c, t, depth + 1))) return NULL;
        return e;
    }
    if (accept_op(t, "+")) return parse_unary(c, t, depth + 1);
    return parse_filtered(c, t, depth);
}

static Expr *parse_mul(Ctx *c, Toks *t, int depth) {
    Expr *e = parse_unary(c, t, depth);
    while (e && (is_op(t, "*") || is_op(t, "/") || is_op(t, "//") || is_op(t, "%"))) {
        const char *op = peek(t)->s;
        t->pos++;
        Expr *b = parse_unary(c, t, depth);
        e = b ? binary(c, op, e, b, t->line) : NULL;
    }
    return e;
}

static Expr *parse_concat(Ctx *c, Toks *t, int depth) {
    Expr *e = parse_mul(c, t, depth);
    while (e && accept_op(t, "~")) {
        Expr *b = parse_mul(c, t, depth);
        e = b ? binary(c, "~", e, b, t->line) : NULL;
    }
    return e;
}

static Expr *parse_add(Ctx *c, Toks *t, int depth) {
    Expr *e = parse_concat(c, t, depth);
    while (e && (is_op(t, "+") || is_op(t, "-"))) {
        const char *op = peek(t)->s;
        t->pos++;
        Expr *b = parse_concat(c, t, depth);
        e = b ? binary(c, op, e, b, t->line) : NULL;
    }
    return e;
}

static Expr *parse_compare(Ctx *c, Toks *t, int depth) {
    Expr *e = parse_add(c, t, depth);
    static const char *const cmp[] = {"==", "!=", "<", ">", "<=", ">="};
    while (e) {
        const char *op = NULL;
        int negate = 0;
        for (size_t k = 0; k < sizeof cmp / sizeof *cmp && !op; k++)
            if (is_op(t, cmp[k])) op = cmp[k];
        if (op) {
            t->pos++;
        } else if (is_name(t, "in")) {
            op = "in", t->pos++;
        } else if (is_name(t, "not") && t->t[t->pos + 1].k == T_NAME && !strcmp(t->t[t->pos + 1].s, "in")) {
            op = "in", negate = 1, t->pos += 2;
        } else {
            break;
        }
        Expr *b = parse_add(c, t, depth);
        e = b ? binary(c, op, e, b, t->line) : NULL;
        if (e) e->negate = negate;
    }
    return e;
}

static Expr *parse_not(Ctx *c, Toks *t, int depth) {
    if (depth > MAX_DEPTH) return fail(c, t->line, "expression nested too deeply"), NULL;
    if (accept_name(t, "not")) {
        Expr *e = node(c, E_NOT, t->line);
        if (e && !(e->a = parse_not(c, t, depth + 1))) return NULL;
        return e;
    }
    return parse_compare(c, t, depth);
}

static Expr *parse_and(Ctx *c, Toks *t, int depth) {
    Expr *e = parse_not(c, t, depth);
    while (e && accept_name(t, "and")) {
        Expr *a = node(c, E_AND, t->line);
        if (!a || !(a->b = parse_not(c, t, depth))) return NULL;
        a->a = e;
        e = a;
    }
    return e;
}

static Expr *parse_or(Ctx *c, Toks *t, int depth) {
    Expr *e = parse_and(c, t, depth);
    while (e && accept_name(t, "or")) {
        Expr *o = node(c, E_OR, t->line);
        if (!o || !(o->b = parse_and(c, t, depth))) return NULL;
        o->a = e;
        e = o;
    }
    return e;
}

/* b if a else c (the else part optional: undefined when absent). */
static Expr *parse_expr(Ctx *c, Toks *t, int depth) {
    if (depth > MAX_DEPTH) return fail(c, t->line, "expression nested too deeply"), NULL;
    Expr *e = parse_or(c, t, depth + 1);
    if (e && accept_name(t, "if")) {
        Expr *k = node(c, E_COND, t->line);
        if (!k || !(k->a = parse_or(c, t, depth + 1))) return NULL;
        k->b = e;
        if (accept_name(t, "else") && !(k->c = parse_expr(c, t, depth + 1))) return NULL;
        e = k;
    }
    return e;
}

/* A whole tag's expression: nothing may follow it. */
static Expr *parse_full(Ctx *c, Toks *t) {
    Expr *e = parse_expr(c, t, 0);
    if (e && peek(t)->k != T_END) return fail(c, t->line, "unexpected text after the expression"), NULL;
    return e;
}

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
    Body body;              /* N_FOR */
    int line;
};

static int body_push(Ctx *c, Body *b, int *cap, Node *n) {
    if (b->len == *cap) {
        int nc = *cap ? 2 * *cap : 8;
        Node **nn = alloc(c, (size_t)nc * sizeof *nn);
        if (!nn) return fail(c, 0, "out of memory");
        if (b->len) memcpy(nn, b->n, (size_t)b->len * sizeof *nn);
        b->n = nn, *cap = nc;
    }
    b->n[b->len++] = n;
    return 0;
}

/* The first word of a block tag. */
static const char *block_word(const Seg *s, char *buf, size_t cap) {
    const char *p = s->text;
    while (isspace((unsigned char)*p)) p++;
    size_t n = 0;
    while ((isalnum((unsigned char)p[n]) || p[n] == '_') && n + 1 < cap) buf[n] = p[n], n++;
    buf[n] = '\0';
    return buf;
}

/* Tokens of a block tag after its first word. */
static int block_toks(Ctx *c, const Seg *s, Toks *t) {
    if (tokenize(c, s->text, s->line, t)) return -1;
    t->pos = 1;
    return 0;
}

static int parse_body(Ctx *c, const Segs *segs, int *i, Body *out, const char *const *ends, int depth);

static Node *parse_if(Ctx *c, const Segs *segs, int *i, int depth) {
    static const char *const ends[] = {"elif", "else", "endif", NULL};
    Node *n = alloc(c, sizeof *n);
    if (!n) return fail(c, 0, "out of memory"), NULL;
    n->k = N_IF, n->line = segs->s[*i].line;
    n->conds = alloc(c, 64 * sizeof *n->conds);
    n->bodies = alloc(c, 64 * sizeof *n->bodies);
    if (!n->conds || !n->bodies) return fail(c, 0, "out of memory"), NULL;
    char word[16];
    for (;;) {
        const Seg *s = &segs->s[*i];
        if (n->n_branches == 64) return fail(c, s->line, "more than 64 branches"), NULL;
        if (!strcmp(block_word(s, word, sizeof word), "else")) {
            n->conds[n->n_branches] = NULL;
        } else {
            Toks t;
            if (block_toks(c, s, &t) || !(n->conds[n->n_branches] = parse_full(c, &t))) return NULL;
        }
        (*i)++;
        if (parse_body(c, segs, i, &n->bodies[n->n_branches], ends, depth + 1)) return NULL;
        n->n_branches++;
        if (*i >= segs->n) return fail(c, n->line, "{%% if %%} without {%% endif %%}"), NULL;
        block_word(&segs->s[*i], word, sizeof word);
        if (!strcmp(word, "endif")) return n;
        if (n->conds[n->n_branches - 1] == NULL) return fail(c, segs->s[*i].line, "'%s' after {%% else %%}", word), NULL;
    }
}

static Node *parse_for(Ctx *c, const Segs *segs, int *i, int depth) {
    static const char *const ends[] = {"endfor", NULL};
    const Seg *s = &segs->s[*i];
    Node *n = alloc(c, sizeof *n);
    Toks t;
    if (!n) return fail(c, 0, "out of memory"), NULL;
    n->k = N_FOR, n->line = s->line;
    if (block_toks(c, s, &t)) return NULL;
    if (peek(&t)->k != T_NAME) return fail(c, s->line, "expected a loop variable after 'for'"), NULL;
    n->var = peek(&t)->s, t.pos++;
    if (is_op(&t, ",")) return fail(c, s->line, "unpacking loop variables is not supported"), NULL;
    if (!accept_name(&t, "in")) return fail(c, s->line, "expected 'in' in a for loop"), NULL;
    if (!(n->e = parse_expr(c, &t, 0))) return NULL;
    if (is_name(&t, "if") || is_name(&t, "recursive")) return fail(c, s->line, "loop filters and recursive loops are not supported"), NULL;
    if (peek(&t)->k != T_END) return fail(c, s->line, "unexpected text after the loop's iterable"), NULL;
    (*i)++;
    if (parse_body(c, segs, i, &n->body, ends, depth + 1)) return NULL;
    if (*i >= segs->n) return fail(c, n->line, "{%% for %%} without {%% endfor %%}"), NULL;
    return n;
}

static Node *parse_set(Ctx *c, const Seg *s) {
    Node *n = alloc(c, sizeof *n);
    Toks t;
    if (!n) return fail(c, 0, "out of memory"), NULL;
    n->k = N_SET, n->line = s->line;
    if (block_toks(c, s, &t)) return NULL;
    if (peek(&t)->k != T_NAME) return fail(c, s->line, "expected a name after 'set'"), NULL;
    n->var = peek(&t)->s, t.pos++;
    if (accept_op(&t, ".")) {
        if (peek(&t)->k != T_NAME) return fail(c, s->line, "expected an attribute name after '.'"), NULL;
        n->attr = peek(&t)->s, t.pos++;
    }
    if (!accept_op(&t, "=")) return fail(c, s->line, "block assignments ({%% set x %%}...{%% endset %%}) are not supported"), NULL;
    return (n->e = parse_full(c, &t)) ? n : NULL;
}

/* Parses segments from *i until a block tag whose first word is in ends (left at *i) or the end. */
static int parse_body(Ctx *c, const Segs *segs, int *i, Body *out, const char *const *ends, int depth) {
    if (depth > MAX_DEPTH) return fail(c, segs->s[*i < segs->n ? *i : segs->n - 1].line, "blocks nested too deeply");
    int cap = 0;
    out->n = NULL, out->len = 0;
    char word[16];
    while (*i < segs->n) {
        const Seg *s = &segs->s[*i];
        Node *n = NULL;
        if (s->kind == SEG_TEXT) {
            if ((n = alloc(c, sizeof *n))) n->k = N_TEXT, n->text = s->text, n->line = s->line;
            (*i)++;
        } else if (s->kind == SEG_VAR) {
            Toks t;
            if (tokenize(c, s->text, s->line, &t)) return -1;
            if ((n = alloc(c, sizeof *n))) n->k = N_OUT, n->line = s->line;
            if (n && !(n->e = parse_full(c, &t))) return -1;
            (*i)++;
        } else {
            block_word(s, word, sizeof word);
            for (const char *const *e = ends; e && *e; e++)
                if (!strcmp(word, *e)) return 0;
            if (!strcmp(word, "if")) n = parse_if(c, segs, i, depth);
            else if (!strcmp(word, "for")) n = parse_for(c, segs, i, depth);
            else if (!strcmp(word, "set")) n = parse_set(c, s);
            else return fail(c, s->line, "unsupported or unexpected tag {%% %s %%}", word[0] ? word : "?");
            if (!n) return -1;
            (*i)++;
        }
        if (!n || body_push(c, out, &cap, n)) return fail(c, 0, "out of memory");
    }
    return 0;
}

/* ------------------------------------------------------------------ evaluation */

typedef struct Scope {
    Dict vars;
    struct Scope *up;
} Scope;

static Val lookup(const Scope *s, const char *name) {
    for (; s; s = s->up) {
        Val v = dict_get(&s->vars, name);
        if (v.k != V_UNDEF) return v;
    }
    return v_undef();
}

static Val eval(Ctx *c, Scope *sc, const Expr *e);

static const char *kind_name(VKind k) {
    static const char *const names[] = {"undefined", "none", "boolean", "integer", "string", "list", "mapping"};
    return names[k];
}

static Val make_list(Ctx *c, int n) {
    Val v = {.k = V_LIST, .n = n};
    v.items = alloc(c, (size_t)(n ? n : 1) * sizeof *v.items);
    if (!v.items) fail(c, 0, "out of memory");
    return v;
}

static Val str_cat(Ctx *c, const char *a, const char *b) {
    size_t la = strlen(a), lb = strlen(b);
    char *s = alloc(c, la + lb + 1);
    if (!s) return fail(c, 0, "out of memory"), v_undef();
    memcpy(s, a, la), memcpy(s + la, b, lb + 1);
    return v_str(s);
}

/* ---- strings are UTF-8; Python counts, indexes and strips them by code point */

/* Bytes of the code point starting at s (1 for a stray byte). */
static int cp_len(const unsigned char *s) {
    int n = s[0] < 0x80 ? 1 : (s[0] >> 5) == 6 ? 2 : (s[0] >> 4) == 14 ? 3 : (s[0] >> 3) == 30 ? 4 : 1;
    for (int k = 1; k < n; k++)
        if ((s[k] & 0xC0) != 0x80) return 1;
    return n;
}

static unsigned cp_at(const unsigned char *s, int n) {
    if (n == 1) return s[0];
    unsigned cp = s[0] & (0xFF >> (n + 1));
    for (int k = 1; k < n; k++) cp = (cp << 6) | (s[k] & 0x3F);
    return cp;
}

static long long utf8_count(const char *s) {
    long long n = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p; p += cp_len(p)) n++;
    return n;
}

/* Byte offset of code point k (k <= count). */
static size_t utf8_offset(const char *s, long long k) {
    const unsigned char *p = (const unsigned char *)s;
    for (; k > 0 && *p; k--) p += cp_len(p);
    return (size_t)(p - (const unsigned char *)s);
}

/* Python's str.isspace() for one code point. */
static int is_space_cp(unsigned cp) {
    return (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x20) || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
           (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

/* The code point at p (n bytes) is stripped: in chars (a set of code points) or white space. */
static int strippable(const unsigned char *p, int n, const char *chars) {
    if (!chars) return is_space_cp(cp_at(p, n));
    for (const unsigned char *q = (const unsigned char *)chars; *q; q += cp_len(q))
        if (cp_len(q) == n && !memcmp(q, p, (size_t)n)) return 1;
    return 0;
}

/* Python's strip family: which = 1 left, 2 right, 3 both; chars NULL = white space. */
static Val strip(Ctx *c, const char *s, int which, const char *chars) {
    const unsigned char *b = (const unsigned char *)s, *e = b + strlen(s);
    if (which & 1)
        while (b < e && strippable(b, cp_len(b), chars)) b += cp_len(b);
    if (which & 2)
        while (e > b) {
            const unsigned char *q = e - 1;
            while (q > b && (*q & 0xC0) == 0x80 && e - q < 4) q--;
            if (cp_len(q) != e - q) q = e - 1;
            if (!strippable(q, (int)(e - q), chars)) break;
            e = q;
        }
    return v_str(str_n(c, (const char *)b, (size_t)(e - b)));
}

/* upper, lower, title, capitalize: ASCII only (what templates apply them to: role names); other
 * text is an error rather than a different result from Python's Unicode case mapping. */
static Val recase(Ctx *c, const char *s, const char *how) {
    for (const char *p = s; *p; p++)
        if ((unsigned char)*p >= 0x80) return fail(c, 0, "chat_template: %s() of non-ASCII text is not supported", how), v_undef();
    char *r = str_n(c, s, strlen(s));
    if (!r) return fail(c, 0, "out of memory"), v_undef();
    int start = 1;
    for (char *p = r; *p; p++) {
        unsigned char ch = (unsigned char)*p;
        if (!strcmp(how, "upper")) *p = (char)toupper(ch);
        else if (!strcmp(how, "lower")) *p = (char)tolower(ch);
        else if (!strcmp(how, "title")) *p = (char)(start ? toupper(ch) : tolower(ch)), start = !isalpha(ch);
        else *p = (char)(p == r ? toupper(ch) : tolower(ch)); /* capitalize */
    }
    return v_str(r);
}

static int arg_count(Ctx *c, const Expr *e, int lo, int hi, const char *what) {
    if (e->n_args < lo || e->n_args > hi)
        return fail(c, e->line, "%s takes %d to %d arguments, not %d", what, lo, hi, e->n_args);
    return 0;
}

static Val method(Ctx *c, Scope *sc, const Expr *call, Val obj, const char *name) {
    Val a[2] = {v_undef(), v_undef()};
    for (int k = 0; k < call->n_args && k < 2; k++)
        if ((a[k] = eval(c, sc, call->args[k].e)).k == V_UNDEF && c->failed) return v_undef();
    if (obj.k == V_DICT && !strcmp(name, "get")) {
        if (arg_count(c, call, 1, 2, "get()") || a[0].k != V_STR) return fail(c, call->line, "get() takes a string key"), v_undef();
        Val v = dict_get(obj.d, a[0].s);
        return v.k == V_UNDEF ? (call->n_args == 2 ? a[1] : v_none()) : v;
    }
    if (obj.k != V_STR) return fail(c, call->line, "no method %s() on a %s", name, kind_name(obj.k)), v_undef();
    if (!strcmp(name, "strip") || !strcmp(name, "lstrip") || !strcmp(name, "rstrip")) {
        if (arg_count(c, call, 0, 1, name)) return v_undef();
        const char *chars = call->n_args && a[0].k == V_STR ? a[0].s : NULL;
        return strip(c, obj.s, name[0] == 's' ? 3 : name[0] == 'l' ? 1 : 2, chars);
    }
    if (!strcmp(name, "upper") || !strcmp(name, "lower") || !strcmp(name, "title") || !strcmp(name, "capitalize"))
        return arg_count(c, call, 0, 0, name) ? v_undef() : recase(c, obj.s, name);
    if (!strcmp(name, "startswith") || !strcmp(name, "endswith")) {
        if (arg_count(c, call, 1, 1, name) || a[0].k != V_STR) return fail(c, call->line, "%s() takes a string", name), v_undef();
        size_t ls = strlen(obj.s), lp = strlen(a[0].s);
        if (lp > ls) return v_bool(0);
        return v_bool(!memcmp(name[0] == 's' ? obj.s : obj.s + ls - lp, a[0].s, lp));
    }
    if (!strcmp(name, "split")) {
        if (arg_count(c, call, 1, 1, name) || a[0].k != V_STR || !a[0].s[0])
            return fail(c, call->line, "split() takes a non-empty separator"), v_undef();
        int n = 1;
        size_t lp = strlen(a[0].s);
        for (const char *p = obj.s; (p = strstr(p, a[0].s)); p += lp) n++;
        Val l = make_list(c, n);
        if (!l.items) return v_undef();
        const char *p = obj.s;
        for (int k = 0; k < n; k++) {
            const char *q = k + 1 < n ? strstr(p, a[0].s) : p + strlen(p);
            l.items[k] = v_str(str_n(c, p, (size_t)(q - p)));
            p = q + lp;
        }
        return l;
    }
    return fail(c, call->line, "unsupported string method %s()", name), v_undef();
}

static Val call_fn(Ctx *c, Scope *sc, const Expr *e) {
    if (e->a->k == E_ATTR) {
        Val obj = eval(c, sc, e->a->a);
        return c->failed ? v_undef() : method(c, sc, e, obj, e->a->name);
    }
    if (e->a->k != E_NAME) return fail(c, e->line, "only named functions can be called"), v_undef();
    const char *fn = e->a->name;
    if (!strcmp(fn, "raise_exception")) {
        Val m = e->n_args ? eval(c, sc, e->args[0].e) : v_str("");
        const char *msg = c->failed ? NULL : to_str(c, m, e->line);
        if (msg) fail(c, 0, "chat_template raised: %s", msg);
        return v_undef();
    }
    if (!strcmp(fn, "namespace")) {
        Val v = {.k = V_DICT};
        if (!(v.d = alloc(c, sizeof *v.d))) return fail(c, 0, "out of memory"), v_undef();
        v.d->is_namespace = 1;
        for (int k = 0; k < e->n_args; k++) {
            if (!e->args[k].name) return fail(c, e->line, "namespace() takes keyword arguments"), v_undef();
            Val x = eval(c, sc, e->args[k].e);
            if (c->failed || dict_set(c, v.d, e->args[k].name, x)) return v_undef();
        }
        return v;
    }
    if (!strcmp(fn, "range")) {
        long long b[3] = {0, 0, 1};
        if (arg_count(c, e, 1, 3, "range()")) return v_undef();
        for (int k = 0; k < e->n_args; k++) {
            Val x = eval(c, sc, e->args[k].e);
            if (x.k != V_INT) return fail(c, e->line, "range() takes integers"), v_undef();
            b[e->n_args == 1 ? 1 : k] = x.i;
        }
        if (b[2] == 0) return fail(c, e->line, "range() step is 0"), v_undef();
        __int128 span = (__int128)b[1] - b[0], step = b[2];
        __int128 n128 = step > 0 ? (span + step - 1) / step : (-span - step - 1) / -step;
        long long n = n128 < 0 ? 0 : n128 > MAX_LOOP ? MAX_LOOP + 1 : (long long)n128;
        if (n > MAX_LOOP) return fail(c, e->line, "range() longer than %d", MAX_LOOP), v_undef();
        Val l = make_list(c, (int)n);
        for (long long k = 0; l.items && k < n; k++) l.items[k] = v_int((long long)((__int128)b[0] + (__int128)k * b[2]));
        return l;
    }
    return fail(c, e->line, "unsupported function %s()", fn), v_undef();
}

static long long length_of(Val v) { return v.k == V_STR ? utf8_count(v.s) : v.k == V_LIST ? v.n : v.k == V_DICT ? v.d->n : -1; }

static Val filter(Ctx *c, Scope *sc, const Expr *e) {
    Val x = eval(c, sc, e->a);
    if (c->failed) return v_undef();
    const char *f = e->name;
    if (!strcmp(f, "default") || !strcmp(f, "d")) {
        if (arg_count(c, e, 0, 2, "default")) return v_undef();
        Val fallback = e->n_args ? eval(c, sc, e->args[0].e) : v_str("");
        int boolean = e->n_args == 2 && truthy(eval(c, sc, e->args[1].e)); /* also replace false values */
        return x.k == V_UNDEF || (boolean && !truthy(x)) ? fallback : x;
    }
    if (e->n_args) return fail(c, e->line, "filter %s takes no arguments here", f), v_undef();
    if (!strcmp(f, "length") || !strcmp(f, "count")) {
        long long n = length_of(x);
        return n < 0 ? (fail(c, e->line, "length of a %s", kind_name(x.k)), v_undef()) : v_int(n);
    }
    if (!strcmp(f, "string")) return v_str(to_str(c, x, e->line));
    if (!strcmp(f, "first") || !strcmp(f, "last")) {
        if (x.k != V_LIST) return fail(c, e->line, "filter %s needs a list", f), v_undef();
        return x.n ? x.items[f[0] == 'f' ? 0 : x.n - 1] : v_undef();
    }
    if (x.k != V_STR) return fail(c, e->line, "filter %s needs a string, not a %s", f, kind_name(x.k)), v_undef();
    if (!strcmp(f, "trim")) return strip(c, x.s, 3, NULL);
    if (!strcmp(f, "upper") || !strcmp(f, "lower") || !strcmp(f, "title") || !strcmp(f, "capitalize"))
        return recase(c, x.s, f);
    return fail(c, e->line, "unsupported filter %s", f), v_undef();
}

static Val test(Ctx *c, Scope *sc, const Expr *e) {
    Val x = eval(c, sc, e->a);
    if (c->failed) return v_undef();
    const char *t = e->name;
    int r;
    if (!strcmp(t, "defined")) r = x.k != V_UNDEF;
    else if (!strcmp(t, "undefined")) r = x.k == V_UNDEF;
    else if (!strcmp(t, "none")) r = x.k == V_NONE;
    else if (!strcmp(t, "string")) r = x.k == V_STR;
    else if (!strcmp(t, "number") || !strcmp(t, "integer")) r = x.k == V_INT;
    else if (!strcmp(t, "boolean")) r = x.k == V_BOOL;
    else if (!strcmp(t, "mapping")) r = x.k == V_DICT;
    else if (!strcmp(t, "sequence") || !strcmp(t, "iterable")) r = x.k == V_LIST || x.k == V_STR || x.k == V_DICT;
    else if (!strcmp(t, "true")) r = x.k == V_BOOL && x.i;
    else if (!strcmp(t, "false")) r = x.k == V_BOOL && !x.i;
    else if (!strcmp(t, "even") || !strcmp(t, "odd")) {
        if (x.k != V_INT) return fail(c, e->line, "test %s needs an integer", t), v_undef();
        r = (x.i % 2 == 0) == (t[0] == 'e');
    } else return fail(c, e->line, "unsupported test %s", t), v_undef();
    return v_bool(r != e->negate);
}

/* Python's ==, for the kinds templates compare. */
static int equal(Val a, Val b) {
    if ((a.k == V_INT || a.k == V_BOOL) && (b.k == V_INT || b.k == V_BOOL)) return a.i == b.i;
    if (a.k != b.k) return 0;
    switch (a.k) {
    case V_UNDEF:
    case V_NONE: return 1;
    case V_STR: return !strcmp(a.s, b.s);
    case V_LIST:
        if (a.n != b.n) return 0;
        for (int k = 0; k < a.n; k++)
            if (!equal(a.items[k], b.items[k])) return 0;
        return 1;
    default: return a.d == b.d;
    }
}

static Val binop(Ctx *c, const Expr *e, Val a, Val b) {
    const char *op = e->name;
    if (!strcmp(op, "==")) return v_bool(equal(a, b));
    if (!strcmp(op, "!=")) return v_bool(!equal(a, b));
    if (!strcmp(op, "~")) {
        const char *sa = to_str(c, a, e->line), *sb = sa ? to_str(c, b, e->line) : NULL;
        return sb ? str_cat(c, sa, sb) : v_undef();
    }
    if (!strcmp(op, "in")) {
        int r;
        if (b.k == V_STR && a.k == V_STR) r = strstr(b.s, a.s) != NULL;
        else if (b.k == V_LIST) {
            r = 0;
            for (int k = 0; k < b.n && !r; k++) r = equal(a, b.items[k]);
        } else if (b.k == V_DICT && a.k == V_STR) r = dict_get(b.d, a.s).k != V_UNDEF;
        else return fail(c, e->line, "'in' on a %s and a %s", kind_name(a.k), kind_name(b.k)), v_undef();
        return v_bool(r != e->negate);
    }
    if (!strcmp(op, "+") && a.k == V_STR && b.k == V_STR) return str_cat(c, a.s, b.s);
    if (!strcmp(op, "+") && a.k == V_LIST && b.k == V_LIST) {
        Val l = make_list(c, a.n + b.n);
        if (l.items) memcpy(l.items, a.items, (size_t)a.n * sizeof *a.items), memcpy(l.items + a.n, b.items, (size_t)b.n * sizeof *b.items);
        return l;
    }
    if (!strcmp(op, "*") && a.k == V_STR && b.k == V_INT) { /* repetition */
        size_t l = strlen(a.s), times = b.i > 0 ? (size_t)b.i : 0;
        if (l && times > MAX_OUTPUT / l) return fail(c, e->line, "string repetition longer than %u bytes", MAX_OUTPUT), v_undef();
        char *r = alloc(c, l * times + 1);
        for (size_t k = 0; r && k < times; k++) memcpy(r + k * l, a.s, l);
        return r ? v_str(r) : v_undef();
    }
    if ((a.k == V_INT || a.k == V_BOOL) && (b.k == V_INT || b.k == V_BOOL)) {
        long long x = a.i, y = b.i;
        if (!strcmp(op, "<")) return v_bool(x < y);
        if (!strcmp(op, ">")) return v_bool(x > y);
        if (!strcmp(op, "<=")) return v_bool(x <= y);
        if (!strcmp(op, ">=")) return v_bool(x >= y);
        long long r;
        int over = 0;
        if (!strcmp(op, "+")) over = __builtin_add_overflow(x, y, &r);
        else if (!strcmp(op, "-")) over = __builtin_sub_overflow(x, y, &r);
        else if (!strcmp(op, "*")) over = __builtin_mul_overflow(x, y, &r);
        if (over) return fail(c, e->line, "integer overflow (Python's integers are unbounded, these are 64-bit)"), v_undef();
        if (!strcmp(op, "+") || !strcmp(op, "-") || !strcmp(op, "*")) return v_int(r);
        if (y == 0 && (!strcmp(op, "//") || !strcmp(op, "%"))) return fail(c, e->line, "division by zero"), v_undef();
        if (x == LLONG_MIN && y == -1) return fail(c, e->line, "integer overflow"), v_undef();
        if (!strcmp(op, "//")) return v_int(x / y - ((x % y != 0) && ((x < 0) != (y < 0))));
        if (!strcmp(op, "%")) { /* Python's: the sign of the divisor */
            long long m = x % y;
            return v_int(m != 0 && (m < 0) != (y < 0) ? m + y : m);
        }
        return fail(c, e->line, "operator %s on integers is not supported (no floats)", op), v_undef();
    }
    if (a.k == V_STR && b.k == V_STR) {
        int r = strcmp(a.s, b.s);
        if (!strcmp(op, "<")) return v_bool(r < 0);
        if (!strcmp(op, ">")) return v_bool(r > 0);
        if (!strcmp(op, "<=")) return v_bool(r <= 0);
        if (!strcmp(op, ">=")) return v_bool(r >= 0);
    }
    return fail(c, e->line, "operator %s on a %s and a %s", op, kind_name(a.k), kind_name(b.k)), v_undef();
}

/* Python's index normalisation for x[i] (negative from the end); -1 when out of range. */
static int norm_index(long long i, int n) { return i < 0 ? (i + n >= 0 ? (int)(i + n) : -1) : (i < n ? (int)i : -1); }

static long long clamp_bound(long long i, int n) {
    if (i < 0) i += n;
    return i < 0 ? 0 : i > n ? n : i;
}

static Val eval(Ctx *c, Scope *sc, const Expr *e) {
    if (c->failed) return v_undef();
    switch (e->k) {
    case E_LIT: return e->lit;
    case E_NAME: return lookup(sc, e->name);
    case E_LIST: {
        Val l = make_list(c, e->n_args);
        for (int k = 0; l.items && k < e->n_args; k++) l.items[k] = eval(c, sc, e->args[k].e);
        return l;
    }
    case E_ATTR:
    case E_INDEX: {
        Val obj = eval(c, sc, e->a);
        if (c->failed) return v_undef();
        Val key = e->k == E_ATTR ? v_str(e->name) : eval(c, sc, e->b);
        if (obj.k == V_DICT && key.k == V_STR) return dict_get(obj.d, key.s);
        if ((obj.k == V_LIST || obj.k == V_STR) && key.k == V_INT) {
            int i = norm_index(key.i, obj.k == V_LIST ? obj.n : (int)utf8_count(obj.s));
            if (i < 0) return v_undef();
            if (obj.k == V_LIST) return obj.items[i];
            size_t off = utf8_offset(obj.s, i);
            return v_str(str_n(c, obj.s + off, (size_t)cp_len((const unsigned char *)obj.s + off)));
        }
        if (obj.k == V_UNDEF) return fail(c, e->line, "'%s' of an undefined value", key.k == V_STR ? key.s : "[...]"), v_undef();
        return v_undef(); /* a missing attribute is undefined, as in Jinja */
    }
    case E_SLICE: {
        Val obj = eval(c, sc, e->a);
        Val lo = e->b ? eval(c, sc, e->b) : v_none(), hi = e->c ? eval(c, sc, e->c) : v_none();
        if (c->failed) return v_undef();
        if ((lo.k != V_NONE && lo.k != V_INT) || (hi.k != V_NONE && hi.k != V_INT))
            return fail(c, e->line, "slice bounds must be integers"), v_undef();
        int n = obj.k == V_LIST ? obj.n : obj.k == V_STR ? (int)utf8_count(obj.s) : -1;
        if (n < 0) return fail(c, e->line, "slicing a %s", kind_name(obj.k)), v_undef();
        long long a = lo.k == V_INT ? clamp_bound(lo.i, n) : 0, b = hi.k == V_INT ? clamp_bound(hi.i, n) : n;
        if (b < a) b = a;
        if (obj.k == V_STR) {
            size_t from = utf8_offset(obj.s, a), to = utf8_offset(obj.s, b);
            return v_str(str_n(c, obj.s + from, to - from));
        }
        Val l = make_list(c, (int)(b - a));
        if (l.items && b > a) memcpy(l.items, obj.items + a, (size_t)(b - a) * sizeof *l.items);
        return l;
    }
    case E_CALL: return call_fn(c, sc, e);
    case E_FILTER: return filter(c, sc, e);
    case E_TEST: return test(c, sc, e);
    case E_NOT: {
        Val x = eval(c, sc, e->a);
        return c->failed ? v_undef() : v_bool(!truthy(x));
    }
    case E_NEG: {
        Val x = eval(c, sc, e->a);
        if (x.k != V_INT) return fail(c, e->line, "unary minus on a %s", kind_name(x.k)), v_undef();
        if (x.i == LLONG_MIN) return fail(c, e->line, "integer overflow"), v_undef();
        return v_int(-x.i);
    }
    case E_AND: {
        Val a = eval(c, sc, e->a);
        return truthy(a) ? eval(c, sc, e->b) : a;
    }
    case E_OR: {
        Val a = eval(c, sc, e->a);
        return truthy(a) ? a : eval(c, sc, e->b);
    }
    case E_COND: {
        Val cond = eval(c, sc, e->a);
        return truthy(cond) ? eval(c, sc, e->b) : e->c ? eval(c, sc, e->c) : v_undef();
    }
    case E_BIN: {
        Val a = eval(c, sc, e->a), b = eval(c, sc, e->b);
        return c->failed ? v_undef() : binop(c, e, a, b);
    }
    }
    return v_undef();
}

static int run_body(Ctx *c, Scope *sc, const Body *b);

static int run_for(Ctx *c, Scope *sc, const Node *n) {
    Val it = eval(c, sc, n->e);
    if (c->failed) return -1;
    if (it.k == V_UNDEF || it.k == V_NONE) return 0; /* Jinja iterates an undefined value as empty */
    if (it.k == V_DICT) {                               /* a mapping iterates its keys */
        Val keys = make_list(c, it.d->n);
        for (int k = 0; keys.items && k < it.d->n; k++) keys.items[k] = v_str(it.d->keys[k]);
        it = keys;
    }
    if (it.k != V_LIST) return fail(c, n->line, "cannot loop over a %s", kind_name(it.k));
    Dict *loop = alloc(c, sizeof *loop);
    if (!loop) return fail(c, 0, "out of memory");
    for (int k = 0; k < it.n; k++) {
        if (++c->iterations > MAX_LOOP) return fail(c, n->line, "more than %d loop iterations", MAX_LOOP);
        Scope inner = {{0}, sc};
        Val lv = {.k = V_DICT, .d = loop};
        if (dict_set(c, loop, "index0", v_int(k)) || dict_set(c, loop, "index", v_int(k + 1)) ||
            dict_set(c, loop, "first", v_bool(k == 0)) || dict_set(c, loop, "last", v_bool(k == it.n - 1)) ||
            dict_set(c, loop, "length", v_int(it.n)) || dict_set(c, loop, "revindex", v_int(it.n - k)) ||
            dict_set(c, loop, "revindex0", v_int(it.n - k - 1)) || dict_set(c, &inner.vars, "loop", lv) ||
            dict_set(c, &inner.vars, n->var, it.items[k]) || run_body(c, &inner, &n->body))
            return -1;
    }
    return 0;
}

static int run_node(Ctx *c, Scope *sc, const Node *n) {
    switch (n->k) {
    case N_TEXT: return emit(c, n->text, strlen(n->text));
    case N_OUT: {
        Val v = eval(c, sc, n->e);
        const char *s = c->failed ? NULL : to_str(c, v, n->line);
        return s ? emit(c, s, strlen(s)) : -1;
    }
    case N_IF:
        for (int k = 0; k < n->n_branches; k++) {
            int take = !n->conds[k];
            if (!take) {
                Val v = eval(c, sc, n->conds[k]);
                if (c->failed) return -1;
                take = truthy(v);
            }
            if (take) return run_body(c, sc, &n->bodies[k]);
        }
        return 0;
    case N_FOR: return run_for(c, sc, n);
    case N_SET: {
        Val v = eval(c, sc, n->e);
        if (c->failed) return -1;
        if (!n->attr) return dict_set(c, &sc->vars, n->var, v);
        Val ns = lookup(sc, n->var);
        if (ns.k != V_DICT || !ns.d->is_namespace)
            return fail(c, n->line, "set %s.%s: %s is not a namespace", n->var, n->attr, n->var);
        return dict_set(c, ns.d, n->attr, v);
    }
    }
    return 0;
}

static int run_body(Ctx *c, Scope *sc, const Body *b) {
    for (int k = 0; k < b->len; k++)
        if (run_node(c, sc, b->n[k])) return -1;
    return 0;
}

/* ------------------------------------------------------------------ the entry points */

static int bind_vars(Ctx *c, Scope *g, const ChatMessage *messages, int n, const ChatVars *vars) {
    Val list = make_list(c, n);
    if (!list.items) return -1;
    for (int k = 0; k < n; k++) {
        Val m = {.k = V_DICT};
        if (!(m.d = alloc(c, sizeof *m.d))) return fail(c, 0, "out of memory");
        if (dict_set(c, m.d, "role", v_str(messages[k].role)) || dict_set(c, m.d, "content", v_str(messages[k].content)))
            return -1;
        list.items[k] = m;
    }
    const struct {
        const char *name, *value;
    } tokens[] = {{"bos_token", vars->bos_token}, {"eos_token", vars->eos_token}, {"unk_token", vars->unk_token},
                  {"pad_token", vars->pad_token}};
    for (size_t k = 0; k < sizeof tokens / sizeof *tokens; k++)
        if (tokens[k].value && dict_set(c, &g->vars, tokens[k].name, v_str(tokens[k].value))) return -1;
    return dict_set(c, &g->vars, "messages", list) ||
           dict_set(c, &g->vars, "add_generation_prompt", v_bool(vars->add_generation_prompt));
}

/* Jinja reads the source as '\n'.join(source.splitlines()): every line boundary Python knows (\r\n,
 * \r, \v, \f, \x1c-\x1e, U+0085, U+2028, U+2029) becomes \n, and one final newline is dropped
 * (keep_trailing_newline off). */
static char *normalize_source(Ctx *c, const char *src) {
    size_t n = strlen(src);
    char *out = alloc(c, n + 1), *w = out;
    if (!out) return fail(c, 0, "out of memory"), NULL;
    for (const unsigned char *p = (const unsigned char *)src; *p;) {
        size_t skip = 0;
        if (p[0] == '\r' && p[1] == '\n') skip = 2;
        else if (p[0] == '\r' || p[0] == '\v' || p[0] == '\f' || (p[0] >= 0x1c && p[0] <= 0x1e)) skip = 1;
        else if (p[0] == 0xC2 && p[1] == 0x85) skip = 2;
        else if (p[0] == 0xE2 && p[1] == 0x80 && (p[2] == 0xA8 || p[2] == 0xA9)) skip = 3;
        if (skip) *w++ = '\n', p += skip;
        else *w++ = (char)*p++;
    }
    if (w > out && w[-1] == '\n') w--;
    *w = '\0';
    return out;
}

char *chat_template_render(const char *tmpl, const ChatMessage *messages, int n, const ChatVars *vars, SpErr *err) {
    Ctx c = {.err = err};
    Segs segs = {0};
    Body body;
    Scope global = {{0}, NULL};
    int i = 0;
    const char *source = normalize_source(&c, tmpl);
    int rc = !source || lex(&c, source, &segs) || parse_body(&c, &segs, &i, &body, NULL, 0) || bind_vars(&c, &global, messages, n, vars);
    if (!rc && i < segs.n) rc = fail(&c, segs.s[i].line, "unexpected {%% %s %%}", segs.s[i].text);
    if (!rc) rc = run_body(&c, &global, &body);
    if (!rc && !c.out) rc = emit(&c, "", 0);
    arena_free(&c);
    if (rc || c.failed) {
        free(c.out);
        return NULL;
    }
    return c.out;
}

/* A special token in tokenizer_config.json: a string or an AddedToken {"content": ...}. */
static int token_field(const cJSON *cfg, const char *key, char **out, const char *path, SpErr *err) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(cfg, key);
    if (cJSON_IsObject(v)) v = cJSON_GetObjectItemCaseSensitive(v, "content");
    if (!v || cJSON_IsNull(v)) return 0;
    if (!cJSON_IsString(v)) return sp_fail(err, "%s: field \"%s\" must be a string or {\"content\": string}", path, key);
    return (*out = strdup(v->valuestring)) ? 0 : sp_fail(err, "out of memory");
}

int chat_template_load(const char *model_dir, ChatTemplate *t, SpErr *err) {
    memset(t, 0, sizeof *t);
    char path[4200];
    struct stat st;
    size_t len;
    snprintf(path, sizeof path, "%s/chat_template.jinja", model_dir);
    if (stat(path, &st) == 0) {
        if (!(t->tmpl = sp_read_file(path, 1u << 24, &len, err))) return -1;
        snprintf(t->source, sizeof t->source, "chat_template.jinja");
    }
    snprintf(path, sizeof path, "%s/tokenizer_config.json", model_dir);
    if (stat(path, &st) != 0) return 0;
    char *text = sp_read_file(path, 1u << 26, &len, err);
    if (!text) return chat_template_free(t), -1;
    cJSON *cfg = cJSON_ParseWithLength(text, len);
    free(text);
    int rc = 0;
    if (!cJSON_IsObject(cfg)) rc = sp_fail(err, "%s: not a JSON object", path);
    const cJSON *ct = rc ? NULL : cJSON_GetObjectItemCaseSensitive(cfg, "chat_template");
    if (!rc && !t->tmpl && ct && !cJSON_IsNull(ct)) {
        if (cJSON_IsArray(ct)) { /* [{"name": ..., "template": ...}]: the default one */
            const cJSON *item;
            cJSON_ArrayForEach(item, ct) {
                const cJSON *name = cJSON_GetObjectItemCaseSensitive(item, "name");
                if (cJSON_IsString(name) && !strcmp(name->valuestring, "default")) ct = cJSON_GetObjectItemCaseSensitive(item, "template");
            }
            if (cJSON_IsArray(ct)) rc = sp_fail(err, "%s: field \"chat_template\" lists no template named \"default\"", path);
        }
        if (!rc && !cJSON_IsString(ct)) rc = sp_fail(err, "%s: field \"chat_template\" must be a string", path);
        if (!rc && !(t->tmpl = strdup(ct->valuestring))) rc = sp_fail(err, "out of memory");
        snprintf(t->source, sizeof t->source, "tokenizer_config.json");
    }
    if (!rc)
        rc = token_field(cfg, "bos_token", &t->bos_token, path, err) || token_field(cfg, "eos_token", &t->eos_token, path, err) ||
             token_field(cfg, "unk_token", &t->unk_token, path, err) || token_field(cfg, "pad_token", &t->pad_token, path, err);
    cJSON_Delete(cfg);
    if (rc) chat_template_free(t);
    return rc ? -1 : 0;
}

void chat_template_free(ChatTemplate *t) {
    free(t->tmpl), free(t->bos_token), free(t->eos_token), free(t->unk_token), free(t->pad_token);
    memset(t, 0, sizeof *t);
}
