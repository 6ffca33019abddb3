#include "prompt.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const kTemplateNames[PROMPT_TEMPLATE_COUNT] = {"none", "vicuna", "chat_template"};

int prompt_template_parse(const char *name, PromptTemplate *t) {
    for (int k = 0; k < PROMPT_TEMPLATE_COUNT; k++)
        if (!strcmp(name, kTemplateNames[k])) return *t = (PromptTemplate)k, 0;
    return -1;
}

const char *prompt_template_name(PromptTemplate t) { return kTemplateNames[t >= 0 && t < PROMPT_TEMPLATE_COUNT ? t : 0]; }

int prompt_format_init(PromptFormat *f, PromptTemplate kind, const char *model_dir, const Tokenizer *tok, SpErr *err) {
    memset(f, 0, sizeof *f);
    f->kind = kind;
    if (kind != PROMPT_TEMPLATE_CHAT) return 0;
    if (chat_template_load(model_dir, &f->chat, err)) return -1;
    if (!f->chat.tmpl)
        return sp_fail(err, "%s: [data] prompt_template = chat_template, but the model has no chat template "
                            "(chat_template.jinja, or \"chat_template\" in tokenizer_config.json)", model_dir);
    const struct {
        char **field;
        int id;
    } fill[] = {{&f->chat.bos_token, tokenizer_bos_id(tok)}, {&f->chat.eos_token, tokenizer_eos_id(tok)}};
    for (int k = 0; k < 2; k++) {
        const char *s = !*fill[k].field && fill[k].id >= 0 ? tokenizer_token_str(tok, fill[k].id) : NULL;
        if (s && !(*fill[k].field = strdup(s))) return prompt_format_free(f), sp_fail(err, "out of memory");
    }
    return 0;
}

void prompt_format_free(PromptFormat *f) { chat_template_free(&f->chat); }

/* A growing string. */
typedef struct Text {
    char *s;
    size_t n, cap;
    int oom;
} Text;

static void text_add(Text *b, const char *piece) {
    size_t l = strlen(piece);
    if (b->oom) return;
    if (b->n + l + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + l + 1) cap *= 2;
        char *ns = realloc(b->s, cap);
        if (!ns) {
            b->oom = 1;
            return;
        }
        b->s = ns;
        b->cap = cap;
    }
    memcpy(b->s + b->n, piece, l + 1);
    b->n += l;
}

/* FastChat's ADD_COLON_TWO with vicuna_v1.1's roles and separators. */
static void vicuna(Text *b, const Example *turns, int n_turns, const char *const *answers) {
    text_add(b, PROMPT_VICUNA_SYSTEM " ");
    for (int k = 0; k < n_turns; k++) {
        text_add(b, "USER: ");
        text_add(b, turns[k].prompt);
        text_add(b, " ASSISTANT:");
        if (k < n_turns - 1 && answers[k][0]) { /* FastChat's `if message:` skips an empty answer */
            text_add(b, " ");
            text_add(b, answers[k]);
            text_add(b, "</s>");
        }
    }
}

static void plain(Text *b, const Example *turns, int n_turns, const char *const *answers) {
    for (int k = 0; k < n_turns; k++) {
        if (k > 0 && answers[k - 1][0]) {
            text_add(b, PROMPT_NONE_SEPARATOR);
            text_add(b, answers[k - 1]);
        }
        if (k > 0) text_add(b, PROMPT_NONE_SEPARATOR);
        text_add(b, turns[k].prompt);
    }
}

/* The conversation as chat messages: user, assistant, ..., user. */
static char *chat(const PromptFormat *f, const Example *turns, int n_turns, const char *const *answers, SpErr *err) {
    ChatMessage *m = malloc((size_t)(2 * n_turns) * sizeof *m);
    if (!m) return sp_fail(err, "out of memory"), NULL;
    int n = 0;
    for (int k = 0; k < n_turns; k++) {
        m[n++] = (ChatMessage){"user", turns[k].prompt};
        if (k < n_turns - 1) m[n++] = (ChatMessage){"assistant", answers[k]};
    }
    ChatVars vars = {f->chat.bos_token, f->chat.eos_token, f->chat.unk_token, f->chat.pad_token, 1};
    char *text = chat_template_render(f->chat.tmpl, m, n, &vars, err);
    free(m);
    if (!text) sp_err_prefix(err, "%s", f->chat.source);
    return text;
}

char *prompt_text(const PromptFormat *f, const Dataset *d, int i, const char *const *answers, SpErr *err) {
    const Example *ex = &d->ex[i];
    int first = i - ex->turn;
    if (first < 0 || d->ex[first].turn != 0 || strcmp(d->ex[first].id, ex->id))
        return sp_fail(err, "example %d (id %s) is turn %d of a conversation that does not start in the dataset", i,
                       ex->id, ex->turn + 1),
               NULL;
    if (f->kind == PROMPT_TEMPLATE_CHAT) return chat(f, &d->ex[first], ex->turn + 1, answers, err);
    Text b = {0};
    if (f->kind == PROMPT_TEMPLATE_VICUNA) vicuna(&b, &d->ex[first], ex->turn + 1, answers);
    else plain(&b, &d->ex[first], ex->turn + 1, answers);
    if (b.oom || !b.s) {
        free(b.s);
        return sp_fail(err, "out of memory"), NULL;
    }
    return b.s;
}

static int is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

char *prompt_answer(const char *output_text) {
    const char *s = output_text ? output_text : "";
    while (*s && is_space(*s)) s++;
    size_t l = strlen(s);
    while (l && is_space(s[l - 1])) l--;
    return strndup(s, l);
}

int prompt_encode(const PromptFormat *f, const Tokenizer *tok, int bos_id, const char *text, int max_prompt,
                  int32_t **ids, int *n, int *truncated, SpErr *err) {
    size_t len;
    *truncated = 0;
    /* a chat template writes its own special tokens (apply_chat_template encodes without adding any);
     * any other prompt is encoded as tokenizer(text) does, with the tokenizer's BOS and EOS rules */
    int rc = f->kind == PROMPT_TEMPLATE_CHAT ? tokenizer_encode_flags(tok, text, strlen(text), 0, ids, &len, err)
                                             : tokenizer_encode_text(tok, text, strlen(text), ids, &len, err);
    if (rc) return -1;
    if (len == 0) { /* an empty prompt conditions on BOS alone */
        free(*ids);
        *ids = NULL;
        if (bos_id < 0) return sp_fail(err, "encodes to no tokens and the model has no BOS token");
        if (!(*ids = malloc(sizeof **ids))) return sp_fail(err, "out of memory");
        (*ids)[0] = bos_id;
        len = 1;
    }
    if (len > (size_t)max_prompt) { /* keep the part that conditions the continuation */
        memmove(*ids, *ids + (len - (size_t)max_prompt), (size_t)max_prompt * sizeof **ids);
        len = (size_t)max_prompt;
        *truncated = 1;
    }
    *n = (int)len;
    return 0;
}
