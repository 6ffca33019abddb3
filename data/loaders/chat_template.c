/* chat_template.c - the Jinja2 subset of Hugging Face chat templates (see chat_template.h).
 *
 * Three stages: the template is cut into segments (text, {{ }}, {% %}, comments) with Jinja's
 * whitespace rules applied to the text (trim_blocks, lstrip_blocks, - and + markers); the segments
 * are parsed into a tree (statements; expressions by recursive descent in Jinja's precedence); the
 * tree is evaluated against the variables. Everything but the result lives in one arena.
 * Files: this one (values, output, evaluation, chat_template_render); chat_template_arena.c (the
 * arena and the first error); chat_template_parse.c (segments and the parser); chat_template_load.c
 * (the model directory's template); chat_template_int.h (what they share). */
#include "chat_template_int.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_OUTPUT (64u << 20) /* rendered bytes */
#define MAX_LOOP 100000        /* iterations of all loops together */

/* ------------------------------------------------------------------ values */

static int dict_set(Ctx *c, Dict *d, const char *key, Val v) {
    for (int i = 0; i < d->n; i++)
        if (!strcmp(d->keys[i], key)) return d->vals[i] = v, 0;
    if (d->n == d->cap) {
        int cap = d->cap ? 2 * d->cap : 8;
        const char **nk = ct_alloc(c, (size_t)cap * sizeof *nk);
        Val *nv = ct_alloc(c, (size_t)cap * sizeof *nv);
        if (!nk || !nv) return ct_fail(c, 0, "out of memory");
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
        if (c->out_n + n + 1 > MAX_OUTPUT) return ct_fail(c, 0, "chat_template: output longer than %u bytes", MAX_OUTPUT);
        size_t cap = c->out_cap ? c->out_cap : 1024;
        while (cap < c->out_n + n + 1) cap *= 2;
        char *no = realloc(c->out, cap);
        if (!no) return ct_fail(c, 0, "out of memory");
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
    case V_INT: snprintf(buf, sizeof buf, "%lld", v.i); return ct_str_n(c, buf, strlen(buf));
    case V_STR: return v.s;
    default: ct_fail(c, line, "cannot print a %s", v.k == V_LIST ? "list" : "mapping"); return NULL;
    }
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
    v.items = ct_alloc(c, (size_t)(n ? n : 1) * sizeof *v.items);
    if (!v.items) ct_fail(c, 0, "out of memory");
    return v;
}

static Val str_cat(Ctx *c, const char *a, const char *b) {
    size_t la = strlen(a), lb = strlen(b);
    char *s = ct_alloc(c, la + lb + 1);
    if (!s) return ct_fail(c, 0, "out of memory"), v_undef();
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
    return v_str(ct_str_n(c, (const char *)b, (size_t)(e - b)));
}

/* upper, lower, title, capitalize: ASCII only (what templates apply them to: role names); other
 * text is an error rather than a different result from Python's Unicode case mapping. */
static Val recase(Ctx *c, const char *s, const char *how) {
    for (const char *p = s; *p; p++)
        if ((unsigned char)*p >= 0x80) return ct_fail(c, 0, "chat_template: %s() of non-ASCII text is not supported", how), v_undef();
    char *r = ct_str_n(c, s, strlen(s));
    if (!r) return ct_fail(c, 0, "out of memory"), v_undef();
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
        return ct_fail(c, e->line, "%s takes %d to %d arguments, not %d", what, lo, hi, e->n_args);
    return 0;
}

static Val method(Ctx *c, Scope *sc, const Expr *call, Val obj, const char *name) {
    Val a[2] = {v_undef(), v_undef()};
    for (int k = 0; k < call->n_args && k < 2; k++)
        if ((a[k] = eval(c, sc, call->args[k].e)).k == V_UNDEF && c->failed) return v_undef();
    if (obj.k == V_DICT && !strcmp(name, "get")) {
        if (arg_count(c, call, 1, 2, "get()") || a[0].k != V_STR) return ct_fail(c, call->line, "get() takes a string key"), v_undef();
        Val v = dict_get(obj.d, a[0].s);
        return v.k == V_UNDEF ? (call->n_args == 2 ? a[1] : v_none()) : v;
    }
    if (obj.k != V_STR) return ct_fail(c, call->line, "no method %s() on a %s", name, kind_name(obj.k)), v_undef();
    if (!strcmp(name, "strip") || !strcmp(name, "lstrip") || !strcmp(name, "rstrip")) {
        if (arg_count(c, call, 0, 1, name)) return v_undef();
        const char *chars = call->n_args && a[0].k == V_STR ? a[0].s : NULL;
        return strip(c, obj.s, name[0] == 's' ? 3 : name[0] == 'l' ? 1 : 2, chars);
    }
    if (!strcmp(name, "upper") || !strcmp(name, "lower") || !strcmp(name, "title") || !strcmp(name, "capitalize"))
        return arg_count(c, call, 0, 0, name) ? v_undef() : recase(c, obj.s, name);
    if (!strcmp(name, "startswith") || !strcmp(name, "endswith")) {
        if (arg_count(c, call, 1, 1, name) || a[0].k != V_STR) return ct_fail(c, call->line, "%s() takes a string", name), v_undef();
        size_t ls = strlen(obj.s), lp = strlen(a[0].s);
        if (lp > ls) return v_bool(0);
        return v_bool(!memcmp(name[0] == 's' ? obj.s : obj.s + ls - lp, a[0].s, lp));
    }
    if (!strcmp(name, "split")) {
        if (arg_count(c, call, 1, 1, name) || a[0].k != V_STR || !a[0].s[0])
            return ct_fail(c, call->line, "split() takes a non-empty separator"), v_undef();
        int n = 1;
        size_t lp = strlen(a[0].s);
        for (const char *p = obj.s; (p = strstr(p, a[0].s)); p += lp) n++;
        Val l = make_list(c, n);
        if (!l.items) return v_undef();
        const char *p = obj.s;
        for (int k = 0; k < n; k++) {
            const char *q = k + 1 < n ? strstr(p, a[0].s) : p + strlen(p);
            l.items[k] = v_str(ct_str_n(c, p, (size_t)(q - p)));
            p = q + lp;
        }
        return l;
    }
    return ct_fail(c, call->line, "unsupported string method %s()", name), v_undef();
}

static Val call_fn(Ctx *c, Scope *sc, const Expr *e) {
    if (e->a->k == E_ATTR) {
        Val obj = eval(c, sc, e->a->a);
        return c->failed ? v_undef() : method(c, sc, e, obj, e->a->name);
    }
    if (e->a->k != E_NAME) return ct_fail(c, e->line, "only named functions can be called"), v_undef();
    const char *fn = e->a->name;
    if (!strcmp(fn, "raise_exception")) {
        Val m = e->n_args ? eval(c, sc, e->args[0].e) : v_str("");
        const char *msg = c->failed ? NULL : to_str(c, m, e->line);
        if (msg) ct_fail(c, 0, "chat_template raised: %s", msg);
        return v_undef();
    }
    if (!strcmp(fn, "namespace")) {
        Val v = {.k = V_DICT};
        if (!(v.d = ct_alloc(c, sizeof *v.d))) return ct_fail(c, 0, "out of memory"), v_undef();
        v.d->is_namespace = 1;
        for (int k = 0; k < e->n_args; k++) {
            if (!e->args[k].name) return ct_fail(c, e->line, "namespace() takes keyword arguments"), v_undef();
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
            if (x.k != V_INT) return ct_fail(c, e->line, "range() takes integers"), v_undef();
            b[e->n_args == 1 ? 1 : k] = x.i;
        }
        if (b[2] == 0) return ct_fail(c, e->line, "range() step is 0"), v_undef();
        __int128 span = (__int128)b[1] - b[0], step = b[2];
        __int128 n128 = step > 0 ? (span + step - 1) / step : (-span - step - 1) / -step;
        long long n = n128 < 0 ? 0 : n128 > MAX_LOOP ? MAX_LOOP + 1 : (long long)n128;
        if (n > MAX_LOOP) return ct_fail(c, e->line, "range() longer than %d", MAX_LOOP), v_undef();
        Val l = make_list(c, (int)n);
        for (long long k = 0; l.items && k < n; k++) l.items[k] = v_int((long long)((__int128)b[0] + (__int128)k * b[2]));
        return l;
    }
    return ct_fail(c, e->line, "unsupported function %s()", fn), v_undef();
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
    if (e->n_args) return ct_fail(c, e->line, "filter %s takes no arguments here", f), v_undef();
    if (!strcmp(f, "length") || !strcmp(f, "count")) {
        long long n = length_of(x);
        return n < 0 ? (ct_fail(c, e->line, "length of a %s", kind_name(x.k)), v_undef()) : v_int(n);
    }
    if (!strcmp(f, "string")) return v_str(to_str(c, x, e->line));
    if (!strcmp(f, "items")) { /* a mapping's (key, value) pairs, in insertion order */
        if (x.k != V_DICT) return ct_fail(c, e->line, "filter items needs a mapping, not a %s", kind_name(x.k)), v_undef();
        Val l = make_list(c, x.d->n);
        for (int k = 0; l.items && k < x.d->n; k++) {
            Val pair = make_list(c, 2);
            if (!pair.items) return v_undef();
            pair.items[0] = v_str(x.d->keys[k]), pair.items[1] = x.d->vals[k];
            l.items[k] = pair;
        }
        return l;
    }
    if (!strcmp(f, "first") || !strcmp(f, "last")) {
        if (x.k != V_LIST) return ct_fail(c, e->line, "filter %s needs a list", f), v_undef();
        return x.n ? x.items[f[0] == 'f' ? 0 : x.n - 1] : v_undef();
    }
    if (x.k != V_STR) return ct_fail(c, e->line, "filter %s needs a string, not a %s", f, kind_name(x.k)), v_undef();
    if (!strcmp(f, "trim")) return strip(c, x.s, 3, NULL);
    if (!strcmp(f, "upper") || !strcmp(f, "lower") || !strcmp(f, "title") || !strcmp(f, "capitalize"))
        return recase(c, x.s, f);
    return ct_fail(c, e->line, "unsupported filter %s", f), v_undef();
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
        if (x.k != V_INT) return ct_fail(c, e->line, "test %s needs an integer", t), v_undef();
        r = (x.i % 2 == 0) == (t[0] == 'e');
    } else return ct_fail(c, e->line, "unsupported test %s", t), v_undef();
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
        else return ct_fail(c, e->line, "'in' on a %s and a %s", kind_name(a.k), kind_name(b.k)), v_undef();
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
        if (l && times > MAX_OUTPUT / l) return ct_fail(c, e->line, "string repetition longer than %u bytes", MAX_OUTPUT), v_undef();
        char *r = ct_alloc(c, l * times + 1);
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
        if (over) return ct_fail(c, e->line, "integer overflow (Python's integers are unbounded, these are 64-bit)"), v_undef();
        if (!strcmp(op, "+") || !strcmp(op, "-") || !strcmp(op, "*")) return v_int(r);
        if (y == 0 && (!strcmp(op, "//") || !strcmp(op, "%"))) return ct_fail(c, e->line, "division by zero"), v_undef();
        if (x == LLONG_MIN && y == -1) return ct_fail(c, e->line, "integer overflow"), v_undef();
        if (!strcmp(op, "//")) return v_int(x / y - ((x % y != 0) && ((x < 0) != (y < 0))));
        if (!strcmp(op, "%")) { /* Python's: the sign of the divisor */
            long long m = x % y;
            return v_int(m != 0 && (m < 0) != (y < 0) ? m + y : m);
        }
        return ct_fail(c, e->line, "operator %s on integers is not supported (no floats)", op), v_undef();
    }
    if (a.k == V_STR && b.k == V_STR) {
        int r = strcmp(a.s, b.s);
        if (!strcmp(op, "<")) return v_bool(r < 0);
        if (!strcmp(op, ">")) return v_bool(r > 0);
        if (!strcmp(op, "<=")) return v_bool(r <= 0);
        if (!strcmp(op, ">=")) return v_bool(r >= 0);
    }
    return ct_fail(c, e->line, "operator %s on a %s and a %s", op, kind_name(a.k), kind_name(b.k)), v_undef();
}

/* Python's index normalisation for x[i] (negative from the end); -1 when out of range. */
static int norm_index(long long i, int n) { return i < 0 ? (i + n >= 0 ? (int)(i + n) : -1) : (i < n ? (int)i : -1); }

/* Python's slice(lo, hi, step).indices(n) (CPython's PySlice_AdjustIndices): the first index *a,
 * *count elements, each step after the last; lo / hi V_NONE for omitted bounds. */
static void slice_indices(Val lo, Val hi, long long step, int n, long long *a, long long *b, long long *count) {
    long long start = lo.k == V_INT ? lo.i : step < 0 ? n - 1 : 0, stop = hi.k == V_INT ? hi.i : step < 0 ? -1 : n;
    if (lo.k == V_INT) {
        if (start < 0) start = start + n < 0 ? (step < 0 ? -1 : 0) : start + n;
        else if (start >= n) start = step < 0 ? n - 1 : n;
    }
    if (hi.k == V_INT) {
        if (stop < 0) stop = stop + n < 0 ? (step < 0 ? -1 : 0) : stop + n;
        else if (stop >= n) stop = step < 0 ? n - 1 : n;
    }
    if (step < 0) *count = stop < start ? (start - stop - 1) / -step + 1 : 0;
    else *count = start < stop ? (stop - start - 1) / step + 1 : 0;
    *a = start, *b = stop;
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
            return v_str(ct_str_n(c, obj.s + off, (size_t)cp_len((const unsigned char *)obj.s + off)));
        }
        if (obj.k == V_UNDEF) return ct_fail(c, e->line, "'%s' of an undefined value", key.k == V_STR ? key.s : "[...]"), v_undef();
        return v_undef(); /* a missing attribute is undefined, as in Jinja */
    }
    case E_SLICE: {
        Val obj = eval(c, sc, e->a);
        Val lo = e->b ? eval(c, sc, e->b) : v_none(), hi = e->c ? eval(c, sc, e->c) : v_none();
        Val st = e->d ? eval(c, sc, e->d) : v_none();
        if (c->failed) return v_undef();
        if ((lo.k != V_NONE && lo.k != V_INT) || (hi.k != V_NONE && hi.k != V_INT) || (st.k != V_NONE && st.k != V_INT))
            return ct_fail(c, e->line, "slice bounds must be integers"), v_undef();
        if (st.k == V_INT && st.i == 0) return ct_fail(c, e->line, "slice step cannot be zero"), v_undef();
        int n = obj.k == V_LIST ? obj.n : obj.k == V_STR ? (int)utf8_count(obj.s) : -1;
        if (n < 0) return ct_fail(c, e->line, "slicing a %s", kind_name(obj.k)), v_undef();
        long long step = st.k == V_INT ? st.i : 1, a, b, count;
        slice_indices(lo, hi, step, n, &a, &b, &count);
        if (obj.k == V_STR && step == 1) {
            size_t from = utf8_offset(obj.s, a), to = utf8_offset(obj.s, a + count);
            return v_str(ct_str_n(c, obj.s + from, to - from));
        }
        if (obj.k == V_STR) { /* code points a, a + step, ... */
            char *out = ct_alloc(c, 4 * (size_t)count + 1);
            size_t len = 0;
            for (long long k = 0; out && k < count; k++) {
                size_t off = utf8_offset(obj.s, a + k * step), m = (size_t)cp_len((const unsigned char *)obj.s + off);
                memcpy(out + len, obj.s + off, m), len += m;
            }
            if (!out) return ct_fail(c, 0, "out of memory"), v_undef();
            out[len] = '\0';
            return v_str(out);
        }
        Val l = make_list(c, (int)count);
        for (long long k = 0; l.items && k < count; k++) l.items[k] = obj.items[a + k * step];
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
        if (x.k != V_INT) return ct_fail(c, e->line, "unary minus on a %s", kind_name(x.k)), v_undef();
        if (x.i == LLONG_MIN) return ct_fail(c, e->line, "integer overflow"), v_undef();
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

/* The loop variable, or the two of "for a, b in pairs": each item a list of two. */
static int bind_loop_vars(Ctx *c, Scope *inner, const Node *n, Val item) {
    if (!n->var2) return dict_set(c, &inner->vars, n->var, item);
    if (item.k != V_LIST || item.n != 2)
        return ct_fail(c, n->line, "cannot unpack a %s into the two loop variables %s, %s", kind_name(item.k), n->var,
                       n->var2);
    return dict_set(c, &inner->vars, n->var, item.items[0]) || dict_set(c, &inner->vars, n->var2, item.items[1]);
}

static int run_for(Ctx *c, Scope *sc, const Node *n) {
    Val it = eval(c, sc, n->e);
    if (c->failed) return -1;
    if (it.k == V_UNDEF || it.k == V_NONE) return 0; /* Jinja iterates an undefined value as empty */
    if (it.k == V_DICT) {                               /* a mapping iterates its keys */
        Val keys = make_list(c, it.d->n);
        for (int k = 0; keys.items && k < it.d->n; k++) keys.items[k] = v_str(it.d->keys[k]);
        it = keys;
    }
    if (it.k != V_LIST) return ct_fail(c, n->line, "cannot loop over a %s", kind_name(it.k));
    Dict *loop = ct_alloc(c, sizeof *loop);
    if (!loop) return ct_fail(c, 0, "out of memory");
    for (int k = 0; k < it.n; k++) {
        if (++c->iterations > MAX_LOOP) return ct_fail(c, n->line, "more than %d loop iterations", MAX_LOOP);
        Scope inner = {{0}, sc};
        Val lv = {.k = V_DICT, .d = loop};
        if (dict_set(c, loop, "index0", v_int(k)) || dict_set(c, loop, "index", v_int(k + 1)) ||
            dict_set(c, loop, "first", v_bool(k == 0)) || dict_set(c, loop, "last", v_bool(k == it.n - 1)) ||
            dict_set(c, loop, "length", v_int(it.n)) || dict_set(c, loop, "revindex", v_int(it.n - k)) ||
            dict_set(c, loop, "revindex0", v_int(it.n - k - 1)) || dict_set(c, &inner.vars, "loop", lv) ||
            bind_loop_vars(c, &inner, n, it.items[k]) || run_body(c, &inner, &n->body))
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
            return ct_fail(c, n->line, "set %s.%s: %s is not a namespace", n->var, n->attr, n->var);
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
        if (!(m.d = ct_alloc(c, sizeof *m.d))) return ct_fail(c, 0, "out of memory");
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
    char *out = ct_alloc(c, n + 1), *w = out;
    if (!out) return ct_fail(c, 0, "out of memory"), NULL;
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
    int rc = !source || ct_lex(&c, source, &segs) || ct_parse_body(&c, &segs, &i, &body, NULL, 0) || bind_vars(&c, &global, messages, n, vars);
    if (!rc && i < segs.n) rc = ct_fail(&c, segs.s[i].line, "unexpected {%% %s %%}", segs.s[i].text);
    if (!rc) rc = run_body(&c, &global, &body);
    if (!rc && !c.out) rc = emit(&c, "", 0);
    ct_arena_free(&c);
    if (rc || c.failed) {
        free(c.out);
        return NULL;
    }
    return c.out;
}
