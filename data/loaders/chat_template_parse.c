/* chat_template_parse.c - the chat template's front end (see chat_template_int.h): the template cut
 * into segments with Jinja's whitespace rules, the expressions tokenized, and the segments parsed
 * into a tree of statements and expressions (recursive descent in Jinja's precedence). */
#include "chat_template_int.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH 200          /* nesting of expressions and blocks */

/* ------------------------------------------------------------------ segments (lexing) */

static int seg_push(Ctx *c, Segs *v, SegKind k, const char *text, size_t n, int line) {
    if (v->n == v->cap) {
        int cap = v->cap ? 2 * v->cap : 64;
        Seg *ns = ct_alloc(c, (size_t)cap * sizeof *ns);
        if (!ns) return ct_fail(c, 0, "out of memory");
        if (v->n) memcpy(ns, v->s, (size_t)v->n * sizeof *ns);
        v->s = ns, v->cap = cap;
    }
    char *t = ct_str_n(c, text, n);
    if (!t) return ct_fail(c, 0, "out of memory");
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
int ct_lex(Ctx *c, const char *tmpl, Segs *segs) { /* tmpl: normalize_source()'s */
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
        if (!close) return ct_fail(c, line, "unclosed %s", kind == '{' ? "{{" : kind == '%' ? "{%" : "{#");
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

/* Hex digits s[0..n) as a number, or -1 when one is not a hex digit. */
static long hex_value(const char *s, int n) {
    long v = 0;
    for (int i = 0; i < n; i++) {
        if (!isxdigit((unsigned char)s[i])) return -1;
        v = v * 16 + (isdigit((unsigned char)s[i]) ? s[i] - '0' : (tolower((unsigned char)s[i]) - 'a' + 10));
    }
    return v;
}

/* Code point cp as UTF-8 at *w (advanced); -1 for a surrogate or beyond U+10FFFF. */
static int put_utf8(unsigned long cp, char **w) {
    unsigned char *o = (unsigned char *)*w;
    if (cp < 0x80) *o++ = (unsigned char)cp;
    else if (cp < 0x800) *o++ = (unsigned char)(0xC0 | cp >> 6), *o++ = (unsigned char)(0x80 | (cp & 0x3F));
    else if (cp < 0x10000) {
        if (cp >= 0xD800 && cp < 0xE000) return -1;
        *o++ = (unsigned char)(0xE0 | cp >> 12), *o++ = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
        *o++ = (unsigned char)(0x80 | (cp & 0x3F));
    } else if (cp <= 0x10FFFF) {
        *o++ = (unsigned char)(0xF0 | cp >> 18), *o++ = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
        *o++ = (unsigned char)(0x80 | ((cp >> 6) & 0x3F)), *o++ = (unsigned char)(0x80 | (cp & 0x3F));
    } else {
        return -1;
    }
    *w = (char *)o;
    return 0;
}

/* One escape of a string literal, *p at its backslash (left at its last character), decoded into *w
 * as Jinja decodes it (Python's unicode-escape): \\ \' \" \a \b \f \n \r \t \v, \ooo (octal), \xHH,
 * \uHHHH, \UHHHHHHHH, a backslash before a newline drops both; any other is kept as written. A code
 * point 0 is refused (it would cut the text), and so is \N{name} (no name table here). */
static int unescape(Ctx *c, int line, const char **p, char **w) {
    const char *s = ++*p;
    static const char simple[] = "\\'\"abfnrtv", value[] = "\\'\"\a\b\f\n\r\t\v";
    const char *k = strchr(simple, *s);
    if (k && *s) {
        *(*w)++ = value[k - simple];
        return 0;
    }
    if (*s == '\n') return 0;
    unsigned long cp;
    int len;
    if (*s >= '0' && *s <= '7') {
        cp = 0, len = 0;
        while (len < 3 && s[len] >= '0' && s[len] <= '7') cp = cp * 8 + (unsigned long)(s[len++] - '0');
        *p = s + len - 1;
    } else if (*s == 'x' || *s == 'u' || *s == 'U') {
        len = *s == 'x' ? 2 : *s == 'u' ? 4 : 8;
        long v = (long)strnlen(s + 1, (size_t)len) == len ? hex_value(s + 1, len) : -1;
        if (v < 0) return ct_fail(c, line, "string escape \\%c needs %d hex digits", *s, len);
        cp = (unsigned long)v;
        *p = s + len;
    } else if (*s == 'N') {
        return ct_fail(c, line, "string escape \\N{...} (a Unicode character name) is outside the subset");
    } else {
        *(*w)++ = '\\', *(*w)++ = *s; /* Python keeps unknown escapes */
        return 0;
    }
    if (cp == 0) return ct_fail(c, line, "string escape decodes to a NUL character");
    if (put_utf8(cp, w)) return ct_fail(c, line, "string escape decodes to no valid character (U+%lX)", cp);
    return 0;
}


typedef struct Toks {
    Tok *t;
    int n, pos, line;
} Toks;

static int tokenize(Ctx *c, const char *src, int line, Toks *out) {
    int cap = 16;
    out->t = ct_alloc(c, (size_t)cap * sizeof *out->t);
    out->n = out->pos = 0;
    out->line = line;
    if (!out->t) return ct_fail(c, 0, "out of memory");
    static const char *const ops[] = {"==", "!=", "<=", ">=", "//", "**", "<", ">", "+", "-", "*", "/", "%", "~",
                                      "(", ")", "[", "]", "{", "}", ",", ".", ":", "|", "="};
    for (const char *p = src;;) {
        while (isspace((unsigned char)*p)) p++;
        if (out->n + 1 >= cap) {
            Tok *nt = ct_alloc(c, (size_t)(cap *= 2) * sizeof *nt);
            if (!nt) return ct_fail(c, 0, "out of memory");
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
            *t = (Tok){T_NAME, ct_str_n(c, b, (size_t)(p - b)), 0};
        } else if (isdigit((unsigned char)*p)) {
            char *end;
            errno = 0;
            long long v = strtoll(p, &end, 10);
            if (errno == ERANGE) return ct_fail(c, line, "integer literal out of range");
            if (*end == '.' && isdigit((unsigned char)end[1])) return ct_fail(c, line, "floating-point numbers are not supported");
            *t = (Tok){T_INT, NULL, v};
            p = end;
        } else if (*p == '\'' || *p == '"') {
            char quote = *p++;
            char *s = ct_alloc(c, strlen(p) + 1), *w = s;
            if (!s) return ct_fail(c, 0, "out of memory");
            for (; *p && *p != quote; p++) {
                if (*p != '\\' || !p[1]) {
                    *w++ = *p;
                    continue;
                }
                if (unescape(c, line, &p, &w)) return -1;
            }
            if (*p != quote) return ct_fail(c, line, "unterminated string");
            p++;
            *w = '\0';
            *t = (Tok){T_STR, s, 0};
        } else {
            size_t k = 0;
            while (k < sizeof ops / sizeof *ops && strncmp(p, ops[k], strlen(ops[k]))) k++;
            if (k == sizeof ops / sizeof *ops) return ct_fail(c, line, "unexpected character '%c'", *p);
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
    return ct_fail(c, t->line, "expected '%s'", op);
}

/* ------------------------------------------------------------------ expressions */

static Expr *node(Ctx *c, EKind k, int line) {
    Expr *e = ct_alloc(c, sizeof *e);
    if (!e) ct_fail(c, 0, "out of memory");
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
        if (n == 32) return ct_fail(c, t->line, "more than 32 arguments");
        const char *name = NULL;
        if (peek(t)->k == T_NAME && t->t[t->pos + 1].k == T_OP && !strcmp(t->t[t->pos + 1].s, "=")) {
            name = peek(t)->s;
            t->pos += 2;
        }
        Expr *a = parse_expr(c, t, depth + 1);
        if (!a) return -1;
        buf[n++] = (Arg){name, a};
    }
    e->args = ct_alloc(c, (size_t)(n ? n : 1) * sizeof *e->args);
    if (!e->args) return ct_fail(c, 0, "out of memory");
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
        ct_fail(c, t->line, "unexpected %s", k->k == T_END ? "end of expression" : k->k == T_OP ? k->s : "token");
    }
    return e;
}

/* One more link of a left-to-right chain (a + b + c, x | f | g, a.b.c): each link deepens the tree
 * the evaluator walks recursively, so a chain counts against MAX_DEPTH as nesting does. */
static int chain_link(Ctx *c, const Toks *t, int *depth) {
    if (++*depth > MAX_DEPTH)
        return ct_fail(c, t->line, "expression chained too long (more than %d operators, filters or postfixes in a row)",
                       MAX_DEPTH);
    return 0;
}

/* Postfix: .attr, [index], [a:b], (args). */
static Expr *parse_postfix(Ctx *c, Toks *t, int depth) {
    Expr *e = parse_primary(c, t, depth);
    while (e) {
        if ((is_op(t, ".") || is_op(t, "[") || is_op(t, "(")) && chain_link(c, t, &depth)) return NULL;
        if (accept_op(t, ".")) {
            if (peek(t)->k != T_NAME) return ct_fail(c, t->line, "expected a name after '.'"), NULL;
            Expr *a = node(c, E_ATTR, t->line);
            if (!a) return NULL;
            a->a = e, a->name = peek(t)->s, t->pos++;
            e = a;
        } else if (accept_op(t, "[")) {
            Expr *lo = NULL, *hi = NULL;
            if (!is_op(t, ":") && !(lo = parse_expr(c, t, depth + 1))) return NULL;
            if (accept_op(t, ":")) {
                Expr *step = NULL;
                if (!is_op(t, "]") && !is_op(t, ":") && !(hi = parse_expr(c, t, depth + 1))) return NULL;
                if (accept_op(t, ":") && !is_op(t, "]") && !(step = parse_expr(c, t, depth + 1))) return NULL;
                Expr *s = node(c, E_SLICE, t->line);
                if (!s) return NULL;
                s->a = e, s->b = lo, s->c = hi, s->d = step;
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
        if ((is_op(t, "|") || is_name(t, "is")) && chain_link(c, t, &depth)) return NULL;
        if (accept_op(t, "|")) {
            if (peek(t)->k != T_NAME) return ct_fail(c, t->line, "expected a filter name after '|'"), NULL;
            Expr *f = node(c, E_FILTER, t->line);
            if (!f) return NULL;
            f->a = e, f->name = peek(t)->s, t->pos++;
            if (accept_op(t, "(") && parse_args(c, t, f, depth, ")")) return NULL;
            e = f;
        } else if (accept_name(t, "is")) {
            Expr *f = node(c, E_TEST, t->line);
            if (!f) return NULL;
            f->negate = accept_name(t, "not");
            if (peek(t)->k != T_NAME) return ct_fail(c, t->line, "expected a test name after 'is'"), NULL;
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
    if (depth > MAX_DEPTH) return ct_fail(c, t->line, "expression nested too deeply"), NULL;
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
        if (chain_link(c, t, &depth)) return NULL;
        Expr *b = parse_unary(c, t, depth);
        e = b ? binary(c, op, e, b, t->line) : NULL;
    }
    return e;
}

static Expr *parse_concat(Ctx *c, Toks *t, int depth) {
    Expr *e = parse_mul(c, t, depth);
    while (e && accept_op(t, "~")) {
        if (chain_link(c, t, &depth)) return NULL;
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
        if (chain_link(c, t, &depth)) return NULL;
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
        if (chain_link(c, t, &depth)) return NULL;
        Expr *b = parse_add(c, t, depth);
        e = b ? binary(c, op, e, b, t->line) : NULL;
        if (e) e->negate = negate;
    }
    return e;
}

static Expr *parse_not(Ctx *c, Toks *t, int depth) {
    if (depth > MAX_DEPTH) return ct_fail(c, t->line, "expression nested too deeply"), NULL;
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
        if (chain_link(c, t, &depth)) return NULL;
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
        if (chain_link(c, t, &depth)) return NULL;
        Expr *o = node(c, E_OR, t->line);
        if (!o || !(o->b = parse_and(c, t, depth))) return NULL;
        o->a = e;
        e = o;
    }
    return e;
}

/* b if a else c (the else part optional: undefined when absent). */
static Expr *parse_expr(Ctx *c, Toks *t, int depth) {
    if (depth > MAX_DEPTH) return ct_fail(c, t->line, "expression nested too deeply"), NULL;
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
    if (e && peek(t)->k != T_END) return ct_fail(c, t->line, "unexpected text after the expression"), NULL;
    return e;
}

/* ------------------------------------------------------------------ statements */

static int body_push(Ctx *c, Body *b, int *cap, Node *n) {
    if (b->len == *cap) {
        int nc = *cap ? 2 * *cap : 8;
        Node **nn = ct_alloc(c, (size_t)nc * sizeof *nn);
        if (!nn) return ct_fail(c, 0, "out of memory");
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

static Node *parse_if(Ctx *c, const Segs *segs, int *i, int depth) {
    static const char *const ends[] = {"elif", "else", "endif", NULL};
    Node *n = ct_alloc(c, sizeof *n);
    if (!n) return ct_fail(c, 0, "out of memory"), NULL;
    n->k = N_IF, n->line = segs->s[*i].line;
    n->conds = ct_alloc(c, 64 * sizeof *n->conds);
    n->bodies = ct_alloc(c, 64 * sizeof *n->bodies);
    if (!n->conds || !n->bodies) return ct_fail(c, 0, "out of memory"), NULL;
    char word[16];
    for (;;) {
        const Seg *s = &segs->s[*i];
        if (n->n_branches == 64) return ct_fail(c, s->line, "more than 64 branches"), NULL;
        if (!strcmp(block_word(s, word, sizeof word), "else")) {
            n->conds[n->n_branches] = NULL;
        } else {
            Toks t;
            if (block_toks(c, s, &t) || !(n->conds[n->n_branches] = parse_full(c, &t))) return NULL;
        }
        (*i)++;
        if (ct_parse_body(c, segs, i, &n->bodies[n->n_branches], ends, depth + 1)) return NULL;
        n->n_branches++;
        if (*i >= segs->n) return ct_fail(c, n->line, "{%% if %%} without {%% endif %%}"), NULL;
        block_word(&segs->s[*i], word, sizeof word);
        if (!strcmp(word, "endif")) return n;
        if (n->conds[n->n_branches - 1] == NULL) return ct_fail(c, segs->s[*i].line, "'%s' after {%% else %%}", word), NULL;
    }
}

static Node *parse_for(Ctx *c, const Segs *segs, int *i, int depth) {
    static const char *const ends[] = {"endfor", NULL};
    const Seg *s = &segs->s[*i];
    Node *n = ct_alloc(c, sizeof *n);
    Toks t;
    if (!n) return ct_fail(c, 0, "out of memory"), NULL;
    n->k = N_FOR, n->line = s->line;
    if (block_toks(c, s, &t)) return NULL;
    if (peek(&t)->k != T_NAME) return ct_fail(c, s->line, "expected a loop variable after 'for'"), NULL;
    n->var = peek(&t)->s, t.pos++;
    if (accept_op(&t, ",")) { /* for a, b in pairs */
        if (peek(&t)->k != T_NAME) return ct_fail(c, s->line, "expected a second loop variable after ','"), NULL;
        n->var2 = peek(&t)->s, t.pos++;
        if (is_op(&t, ",")) return ct_fail(c, s->line, "unpacking more than two loop variables is not supported"), NULL;
    }
    if (!accept_name(&t, "in")) return ct_fail(c, s->line, "expected 'in' in a for loop"), NULL;
    if (!(n->e = parse_expr(c, &t, 0))) return NULL;
    if (is_name(&t, "if") || is_name(&t, "recursive")) return ct_fail(c, s->line, "loop filters and recursive loops are not supported"), NULL;
    if (peek(&t)->k != T_END) return ct_fail(c, s->line, "unexpected text after the loop's iterable"), NULL;
    (*i)++;
    if (ct_parse_body(c, segs, i, &n->body, ends, depth + 1)) return NULL;
    if (*i >= segs->n) return ct_fail(c, n->line, "{%% for %%} without {%% endfor %%}"), NULL;
    return n;
}

static Node *parse_set(Ctx *c, const Seg *s) {
    Node *n = ct_alloc(c, sizeof *n);
    Toks t;
    if (!n) return ct_fail(c, 0, "out of memory"), NULL;
    n->k = N_SET, n->line = s->line;
    if (block_toks(c, s, &t)) return NULL;
    if (peek(&t)->k != T_NAME) return ct_fail(c, s->line, "expected a name after 'set'"), NULL;
    n->var = peek(&t)->s, t.pos++;
    if (accept_op(&t, ".")) {
        if (peek(&t)->k != T_NAME) return ct_fail(c, s->line, "expected an attribute name after '.'"), NULL;
        n->attr = peek(&t)->s, t.pos++;
    }
    if (!accept_op(&t, "=")) return ct_fail(c, s->line, "block assignments ({%% set x %%}...{%% endset %%}) are not supported"), NULL;
    return (n->e = parse_full(c, &t)) ? n : NULL;
}

/* Parses segments from *i until a block tag whose first word is in ends (left at *i) or the end. */
int ct_parse_body(Ctx *c, const Segs *segs, int *i, Body *out, const char *const *ends, int depth) {
    if (depth > MAX_DEPTH) return ct_fail(c, segs->s[*i < segs->n ? *i : segs->n - 1].line, "blocks nested too deeply");
    int cap = 0;
    out->n = NULL, out->len = 0;
    char word[16];
    while (*i < segs->n) {
        const Seg *s = &segs->s[*i];
        Node *n = NULL;
        if (s->kind == SEG_TEXT) {
            if ((n = ct_alloc(c, sizeof *n))) n->k = N_TEXT, n->text = s->text, n->line = s->line;
            (*i)++;
        } else if (s->kind == SEG_VAR) {
            Toks t;
            if (tokenize(c, s->text, s->line, &t)) return -1;
            if ((n = ct_alloc(c, sizeof *n))) n->k = N_OUT, n->line = s->line;
            if (n && !(n->e = parse_full(c, &t))) return -1;
            (*i)++;
        } else {
            block_word(s, word, sizeof word);
            for (const char *const *e = ends; e && *e; e++)
                if (!strcmp(word, *e)) return 0;
            if (!strcmp(word, "if")) n = parse_if(c, segs, i, depth);
            else if (!strcmp(word, "for")) n = parse_for(c, segs, i, depth);
            else if (!strcmp(word, "set")) n = parse_set(c, s);
            else return ct_fail(c, s->line, "unsupported or unexpected tag {%% %s %%}", word[0] ? word : "?");
            if (!n) return -1;
            (*i)++;
        }
        if (!n || body_push(c, out, &cap, n)) return ct_fail(c, 0, "out of memory");
    }
    return 0;
}
