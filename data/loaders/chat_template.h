/* chat_template.h - Hugging Face chat templates: the Jinja2 subset they are written in, rendered the
 * way transformers' apply_chat_template does (trim_blocks and lstrip_blocks on; messages,
 * add_generation_prompt, bos_token, eos_token, unk_token, pad_token; raise_exception()).
 *
 * The subset (what the templates of Llama 2 / 3, Mistral, Gemma, Zephyr, ChatML, Command-R, Phi-3,
 * DeepSeek, Vicuna-style and the like use):
 *   text, {{ expr }}, {% if / elif / else / endif %}, {% for x in expr %} ... {% endfor %} (loop.index,
 *   index0, first, last, length, revindex, revindex0), {% set name = expr %}, {% set ns.attr = expr %},
 *   {# comments #}, whitespace control ({%- -%} {{- -}} {#- -#}, and + to keep it);
 *   literals (strings with \n \t \\ \' \" escapes, integers, true/false/none in either case, lists),
 *   names, x.attr, x['key'], x[i], x[a:b] (negative bounds too), calls: range(), namespace(k=v, ...),
 *   raise_exception(msg), string methods strip / lstrip / rstrip (optional chars), upper, lower,
 *   title, capitalize, startswith, endswith, split; filters trim, length, upper, lower, title,
 *   capitalize, first, last, string, default(v); tests defined, undefined, none, string, number,
 *   mapping, sequence, even, odd, true, false; operators or, and, not, == != < > <= >=, in, not in,
 *   + - * / // %, ~, unary -, and "a if c else b".
 * Anything else is an error that names the template's line, never silent output. Loop scoping as in
 * Jinja: a name set inside a for loop is gone after it (a namespace's attributes persist).
 *
 * Pure functions: all memory is freed before they return, except the result (malloc'd). */
#ifndef SP_CHAT_TEMPLATE_H
#define SP_CHAT_TEMPLATE_H

#include "error.h"

typedef struct ChatMessage {
    const char *role, *content;
} ChatMessage;

typedef struct ChatVars {
    const char *bos_token, *eos_token, *unk_token, *pad_token; /* NULL: undefined in the template */
    int add_generation_prompt;
} ChatVars;

/* The template rendered for messages[0..n); NULL with err ("chat_template: line L: ...", or
 * "chat_template raised: MSG" for raise_exception). */
char *chat_template_render(const char *tmpl, const ChatMessage *messages, int n, const ChatVars *vars, SpErr *err);

/* A model directory's chat template: chat_template.jinja when present, else tokenizer_config.json's
 * "chat_template" (a string, or a list of {"name", "template"} whose "default" entry is used), with
 * its bos_token / eos_token / unk_token / pad_token (strings or {"content": ...}). *tmpl NULL (0
 * returned) when the directory has none; strings malloc'd (chat_template_free). Errors name the
 * file and the field. A GGUF file alone (sp_is_gguf_file) in place of the directory: its
 * tokenizer.chat_template, and its bos / eos tokens' texts (gguf_chat_template). */
typedef struct ChatTemplate {
    char *tmpl, *bos_token, *eos_token, *unk_token, *pad_token;
    char source[64]; /* the file it came from, for messages */
} ChatTemplate;
int chat_template_load(const char *model_dir, ChatTemplate *t, SpErr *err);
void chat_template_free(ChatTemplate *t);

#endif
