#include "dataset.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonutil.h"

#define MAX_FILE ((size_t)1 << 31)
#define PROMPT_FRACTION 0.3

/* Appends a copy of the example's strings (NULL reference/source/category: ""). */
static int push(Dataset *d, int *cap, const Example *x) {
    if (d->n == *cap) {
        int nc = *cap ? *cap * 2 : 256;
        Example *ne = realloc(d->ex, (size_t)nc * sizeof *ne);
        if (!ne) return -1;
        d->ex = ne;
        *cap = nc;
    }
    Example *e = &d->ex[d->n];
    e->id = strdup(x->id);
    e->prompt = strdup(x->prompt);
    e->reference = strdup(x->reference ? x->reference : "");
    e->source = strdup(x->source ? x->source : "");
    e->category = strdup(x->category ? x->category : "");
    e->turn = x->turn;
    if (!e->id || !e->prompt || !e->reference || !e->source || !e->category) {
        free(e->id), free(e->prompt), free(e->reference), free(e->source), free(e->category);
        return -1;
    }
    d->n++;
    return 0;
}

/* Splits text after the first ceil(fraction * words) words (at least one word in each part when
 * there are two or more). Writes NUL-terminated copies into *prompt and *ref (malloc'd). */
static int split_words(const char *text, double fraction, char **prompt, char **ref) {
    int words = 0;
    for (const char *p = text; *p;) {
        while (*p && isspace((unsigned char)*p)) p++;
        if (!*p) break;
        words++;
        while (*p && !isspace((unsigned char)*p)) p++;
    }
    int keep = (int)(fraction * words + 0.999999);
    if (keep < 1) keep = 1;
    if (words >= 2 && keep >= words) keep = words - 1;
    const char *p = text;
    for (int w = 0; *p && w < keep;) {
        while (*p && isspace((unsigned char)*p)) p++;
        while (*p && !isspace((unsigned char)*p)) p++;
        w++;
    }
    while (*text && isspace((unsigned char)*text)) text++;
    *prompt = strndup(text, (size_t)(p - text));
    *ref = strdup(p); /* keeps the leading space: the continuation as it follows the prompt */
    return *prompt && *ref ? 0 : -1;
}

static int push_split(Dataset *d, int *cap, const char *id, const char *text, const char *src) {
    char *pr, *rf;
    if (split_words(text, PROMPT_FRACTION, &pr, &rf)) return -1;
    int rc = push(d, cap, &(Example){.id = (char *)id, .prompt = pr, .reference = rf, .source = (char *)src});
    free(pr);
    free(rf);
    return rc;
}

static const char *text_key(const cJSON *o) {
    static const char *const keys[] = {"summary", "text", "article"};
    for (int i = 0; i < 3; i++)
        if (cJSON_IsString(cJSON_GetObjectItemCaseSensitive(o, keys[i]))) return keys[i];
    return NULL;
}

/* 1 if a JSON string in line holds the escape \u0000: cJSON (and C strings) would cut the text there. */
static int has_nul_escape(const char *line) {
    int in_string = 0;
    for (const char *p = line; *p; p++) {
        if (!in_string) {
            in_string = *p == '"';
        } else if (*p == '"') {
            in_string = 0;
        } else if (*p == '\\' && p[1]) {
            p++; /* the escaped character */
            if (*p == 'u' && !strncmp(p + 1, "0000", 4)) return 1;
        }
    }
    return 0;
}

/* A reference given as a list of acceptable answers: *joined = them joined by
 * DATASET_REFERENCE_SEPARATOR (malloc'd). -1 unless a non-empty array of strings (or out of memory). */
static int reference_alternatives(const cJSON *ref, char **joined) {
    int n = cJSON_GetArraySize(ref);
    size_t len = 1;
    if (!cJSON_IsArray(ref) || n == 0) return -1;
    for (int i = 0; i < n; i++) {
        const cJSON *alt = cJSON_GetArrayItem(ref, i);
        if (!cJSON_IsString(alt)) return -1;
        len += strlen(alt->valuestring) + 1;
    }
    char *out = malloc(len), *w = out;
    if (!out) return -1;
    for (int i = 0; i < n; i++) {
        const char *alt = cJSON_GetArrayItem(ref, i)->valuestring;
        if (i) *w++ = DATASET_REFERENCE_SEPARATOR;
        memcpy(w, alt, strlen(alt));
        w += strlen(alt);
    }
    *w = '\0';
    *joined = out;
    return 0;
}

/* A reference given as "": no reference for the example, counted (Dataset.n_empty_refs). */
static void count_empty_ref(Dataset *d, int line_no) {
    if (d->n_empty_refs++ == 0) d->first_empty_ref_line = line_no;
}

/* One Spec-Bench question (a parsed line): an example per turn, up to max_n examples in all.
 * "turns" must be a non-empty array of non-empty strings; "reference", when present, an array with
 * at most one entry per turn (reference[k] belongs to turn k), each a string or a list of acceptable
 * answers; "category" a string. */
static int push_specbench(const char *path, int line_no, const cJSON *o, int max_n, Dataset *d, int *cap, SpErr *err) {
    const cJSON *turns = cJSON_GetObjectItemCaseSensitive(o, "turns");
    const cJSON *refs = cJSON_GetObjectItemCaseSensitive(o, "reference");
    const cJSON *qid = cJSON_GetObjectItemCaseSensitive(o, "question_id");
    const cJSON *cat = cJSON_GetObjectItemCaseSensitive(o, "category");
    int n_turns = cJSON_GetArraySize(turns);
    if (!cJSON_IsArray(turns) || n_turns == 0)
        return sp_fail(err, "%s: line %d: field \"turns\" must be a non-empty array of strings", path, line_no);
    if (refs && (!cJSON_IsArray(refs) || cJSON_GetArraySize(refs) > n_turns))
        return sp_fail(err, "%s: line %d: field \"reference\" must be an array of at most one entry per turn", path,
                       line_no);
    if (cat && !cJSON_IsString(cat)) return sp_fail(err, "%s: line %d: field \"category\" must be a string", path, line_no);
    char idbuf[32];
    if (cJSON_IsNumber(qid)) snprintf(idbuf, sizeof idbuf, "%d", qid->valueint);
    else if (cJSON_IsString(qid) && qid->valuestring[0]) snprintf(idbuf, sizeof idbuf, "%s", qid->valuestring);
    else if (!qid) snprintf(idbuf, sizeof idbuf, "%d", d->n); /* no id: the example's index, as other formats */
    else return sp_fail(err, "%s: line %d: field \"question_id\" must be a number or a non-empty string", path, line_no);
    for (int k = 0; k < n_turns && (max_n <= 0 || d->n < max_n); k++) {
        const cJSON *turn = cJSON_GetArrayItem(turns, k), *ref = refs ? cJSON_GetArrayItem(refs, k) : NULL;
        if (!cJSON_IsString(turn) || !turn->valuestring[0])
            return sp_fail(err, "%s: line %d: field \"turns\"[%d] must be a non-empty string", path, line_no, k);
        char *joined = NULL;
        if (ref && !cJSON_IsString(ref) && reference_alternatives(ref, &joined))
            return sp_fail(err, "%s: line %d: field \"reference\"[%d] must be a string or a non-empty array of strings",
                           path, line_no, k);
        if (cJSON_IsString(ref) && !ref->valuestring[0]) count_empty_ref(d, line_no);
        Example x = {.id = idbuf, .prompt = turn->valuestring,
                     .reference = joined ? joined : ref ? ref->valuestring : NULL, .source = (char *)"spec-bench",
                     .category = cat ? cat->valuestring : NULL, .turn = k};
        int rc = push(d, cap, &x);
        free(joined);
        if (rc) return sp_fail(err, "out of memory");
    }
    return 0;
}

static int load_jsonl(const char *path, char *text, const char *fmt, int max_n, Dataset *d, SpErr *err) {
    int cap = 0, line_no = 0;
    for (char *save = NULL, *line = strtok_r(text, "\n", &save); line && (max_n <= 0 || d->n < max_n);
         line = strtok_r(NULL, "\n", &save)) {
        line_no++;
        while (*line && isspace((unsigned char)*line)) line++;
        if (!*line) continue;
        /* exactly one JSON value per line, as Python's json.loads: trailing content (a second object,
         * stray text) is an error, not silently dropped (it would shift every later prompt index) */
        const char *end = NULL;
        cJSON *o = cJSON_ParseWithOpts(line, &end, 0);
        if (o && end) {
            while (*end && isspace((unsigned char)*end)) end++;
            if (*end) {
                cJSON_Delete(o);
                return sp_fail(err, "%s: line %d: unexpected content after the JSON object at column %d", path, line_no,
                               (int)(end - line) + 1);
            }
        }
        if (!cJSON_IsObject(o)) {
            cJSON_Delete(o);
            return sp_fail(err, "%s: line %d is not a JSON object", path, line_no);
        }
        if (has_nul_escape(line)) {
            cJSON_Delete(o);
            return sp_fail(err, "%s: line %d: a string holds \\u0000 (NUL), which a prompt cannot hold", path, line_no);
        }
        char idbuf[32];
        snprintf(idbuf, sizeof idbuf, "%d", d->n);
        int rc = 0;
        if (!strcmp(fmt, "specbench")) {
            rc = push_specbench(path, line_no, o, max_n, d, &cap, err);
        } else if (!strcmp(fmt, "wikisum")) {
            const char *k = text_key(o);
            if (!k) rc = sp_fail(err, "%s: line %d: no \"summary\", \"text\" or \"article\" field", path, line_no);
            else if (push_split(d, &cap, idbuf, cJSON_GetObjectItemCaseSensitive(o, k)->valuestring, "wiki-summary"))
                rc = sp_fail(err, "out of memory");
        } else {
            const cJSON *id = cJSON_GetObjectItemCaseSensitive(o, "id");
            const cJSON *pr = cJSON_GetObjectItemCaseSensitive(o, "prompt");
            const cJSON *rf = cJSON_GetObjectItemCaseSensitive(o, "reference");
            const cJSON *sr = cJSON_GetObjectItemCaseSensitive(o, "source");
            const cJSON *ct = cJSON_GetObjectItemCaseSensitive(o, "category");
            if (!cJSON_IsString(pr) || !*pr->valuestring)
                rc = sp_fail(err, "%s: line %d: field \"prompt\" must be a non-empty string", path, line_no);
            else if (rf && !cJSON_IsString(rf))
                rc = sp_fail(err, "%s: line %d: field \"reference\" must be a string", path, line_no);
            else if (ct && !cJSON_IsString(ct))
                rc = sp_fail(err, "%s: line %d: field \"category\" must be a string", path, line_no);
            if (cJSON_IsString(id)) snprintf(idbuf, sizeof idbuf, "%s", id->valuestring);
            else if (cJSON_IsNumber(id)) snprintf(idbuf, sizeof idbuf, "%d", id->valueint);
            if (!rc && cJSON_IsString(rf) && !rf->valuestring[0]) count_empty_ref(d, line_no);
            Example x = {.id = idbuf, .prompt = rc ? NULL : pr->valuestring, .reference = rf ? rf->valuestring : NULL,
                         .source = cJSON_IsString(sr) ? sr->valuestring : NULL, .category = ct ? ct->valuestring : NULL};
            if (!rc && push(d, &cap, &x)) rc = sp_fail(err, "out of memory");
        }
        cJSON_Delete(o);
        if (rc) return -1;
    }
    return 0;
}

static int load_lm1b(const char *path, char *text, int max_n, Dataset *d, SpErr *err) {
    int cap = 0;
    for (char *save = NULL, *line = strtok_r(text, "\n", &save); line && (max_n <= 0 || d->n < max_n);
         line = strtok_r(NULL, "\n", &save)) {
        size_t l = strlen(line);
        while (l && (line[l - 1] == '\r' || isspace((unsigned char)line[l - 1]))) line[--l] = '\0';
        while (*line && isspace((unsigned char)*line)) line++;
        if (!*line) continue;
        char idbuf[32];
        snprintf(idbuf, sizeof idbuf, "%d", d->n);
        if (push_split(d, &cap, idbuf, line, "lm1b")) return sp_fail(err, "%s: out of memory", path);
    }
    return 0;
}

/* RFC 4180 CSV: reads one field starting at *p; returns malloc'd content, advances *p past the
 * separator; *eol set when the record ended. NULL on malformed quoting. */
static char *csv_field(const char **p, int *eol) {
    const char *s = *p;
    size_t cap = 64, n = 0;
    char *out = malloc(cap);
    if (!out) return NULL;
    int quoted = *s == '"';
    if (quoted) s++;
    for (;;) {
        char c = *s;
        if (!c) {
            if (quoted) { free(out); return NULL; }
            *eol = 1;
            break;
        }
        if (quoted && c == '"') {
            if (s[1] == '"') { c = '"'; s++; }
            else { quoted = 0; s++; continue; }
        } else if (!quoted && (c == ',' || c == '\n' || c == '\r')) {
            if (c == '\r' && s[1] == '\n') s++;
            *eol = c != ',';
            s++;
            break;
        }
        if (n + 2 > cap) {
            char *no = realloc(out, cap *= 2);
            if (!no) { free(out); return NULL; }
            out = no;
        }
        out[n++] = c;
        s++;
    }
    out[n] = '\0';
    *p = s;
    return out;
}

static int load_csv(const char *path, const char *text, int max_n, Dataset *d, SpErr *err) {
    const char *p = text;
    int col = -1, ncols = 0, eol = 0, cap = 0, rec = 1;
    while (!eol) {
        char *f = csv_field(&p, &eol);
        if (!f) return sp_fail(err, "%s: header: malformed quoting", path);
        if (col < 0 && (!strcmp(f, "summary") || !strcmp(f, "text") || !strcmp(f, "article"))) col = ncols;
        ncols++;
        free(f);
    }
    if (col < 0) return sp_fail(err, "%s: header has no \"summary\", \"text\" or \"article\" column", path);
    while (*p && (max_n <= 0 || d->n < max_n)) {
        rec++;
        eol = 0;
        for (int c = 0; !eol; c++) {
            char *f = csv_field(&p, &eol);
            if (!f) return sp_fail(err, "%s: record %d: malformed quoting", path, rec);
            if (c == col && *f) {
                char idbuf[32];
                snprintf(idbuf, sizeof idbuf, "%d", d->n);
                if (push_split(d, &cap, idbuf, f, "wiki-summary")) {
                    free(f);
                    return sp_fail(err, "%s: out of memory", path);
                }
            }
            free(f);
        }
    }
    return 0;
}

static const char *infer_format(const char *path, const char *text) {
    const char *dot = strrchr(path, '.');
    if (dot && !strcmp(dot, ".csv")) return "wikisum";
    if (dot && !strcmp(dot, ".txt")) return "lm1b";
    const char *nl = strchr(text, '\n');
    char *first = strndup(text, nl ? (size_t)(nl - text) : strlen(text));
    cJSON *o = first ? cJSON_Parse(first) : NULL;
    const char *fmt = "jsonl";
    if (cJSON_IsObject(o)) {
        if (cJSON_GetObjectItemCaseSensitive(o, "turns")) fmt = "specbench";
        else if (!cJSON_GetObjectItemCaseSensitive(o, "prompt") && text_key(o)) fmt = "wikisum";
    } else if (!dot || strcmp(dot, ".jsonl")) {
        fmt = "lm1b";
    }
    cJSON_Delete(o);
    free(first);
    return fmt;
}

int dataset_load(const char *path, const char *format, int max_n, Dataset *d, SpErr *err) {
    memset(d, 0, sizeof *d);
    size_t len;
    char *text = sp_read_file(path, MAX_FILE, &len, err);
    if (!text) return -1;
    const char *fmt = format ? format : infer_format(path, text);
    const char *dot = strrchr(path, '.');
    int rc;
    if (!strcmp(fmt, "jsonl") || !strcmp(fmt, "specbench")) rc = load_jsonl(path, text, fmt, max_n, d, err);
    else if (!strcmp(fmt, "lm1b")) rc = load_lm1b(path, text, max_n, d, err);
    else if (!strcmp(fmt, "wikisum"))
        rc = (dot && !strcmp(dot, ".csv")) ? load_csv(path, text, max_n, d, err) : load_jsonl(path, text, fmt, max_n, d, err);
    else rc = sp_fail(err, "%s: unknown dataset format \"%s\" (jsonl, specbench, lm1b, wikisum)", path, fmt);
    free(text);
    if (rc == 0) snprintf(d->format, sizeof d->format, "%s", fmt);
    if (rc == 0 && d->n == 0) rc = sp_fail(err, "%s: no examples", path);
    if (rc) dataset_free(d);
    return rc;
}

int dataset_questions(const Dataset *d) {
    int q = 0;
    for (int i = 0; i < d->n; i++) q += d->ex[i].turn == 0;
    return q;
}

int dataset_question_start(const Dataset *d, int q) {
    for (int i = 0; i < d->n; i++)
        if (d->ex[i].turn == 0 && q-- == 0) return i;
    return d->n;
}

int dataset_has_turns(const Dataset *d, int first, int n) {
    for (int i = first; i < first + n && i < d->n; i++)
        if (d->ex[i].turn > 0) return 1;
    return 0;
}

void dataset_free(Dataset *d) {
    for (int i = 0; i < d->n; i++) {
        free(d->ex[i].id), free(d->ex[i].prompt), free(d->ex[i].reference), free(d->ex[i].source);
        free(d->ex[i].category);
    }
    free(d->ex);
    memset(d, 0, sizeof *d);
}
