/* prompt.h - what the model sees for one example: its conversation laid out by a prompt template,
 * then tokenized the one way the sweep runner and `sprinter score` both use.
 *
 * A Spec-Bench question with several turns is one conversation (dataset.h: examples [i - turn, i]
 * are its user turns): turn k's prompt holds the user turns 0..k and the model's own answers to
 * turns 0..k-1, as Spec-Bench's evaluation loop builds it (FastChat's conversation, the answer
 * being the decoded output stripped of surrounding whitespace).
 *
 * Templates:
 *   none    the base-model default: a single turn is its text unchanged; later turns join the
 *           conversation's non-empty messages with PROMPT_NONE_SEPARATOR.
 *   vicuna  FastChat's vicuna_v1.1 (Spec-Bench's template for Vicuna targets), separator style
 *           ADD_COLON_TWO: SYSTEM + " " + for each turn "USER: " + q + " " + "ASSISTANT:" and, for
 *           answered turns, " " + a + "</s>" (an empty answer leaves "ASSISTANT:" bare, as FastChat's
 *           `if message` does). The tokenizer adds BOS and, where it splits added special tokens,
 *           encodes "</s>" as EOS.
 *   chat_template  the target model's own chat template (chat_template.h: chat_template.jinja or
 *           tokenizer_config.json), rendered as transformers' apply_chat_template does for the
 *           messages user, assistant, ..., user with add_generation_prompt; bos_token / eos_token
 *           from tokenizer_config.json, else the tokenizer's own. The text is encoded without an
 *           added BOS (the template writes it), as apply_chat_template(tokenize=True) does.
 * A PromptFormat owns its chat template; prompt_text's result is malloc'd (the caller frees). */
#ifndef SP_PROMPT_H
#define SP_PROMPT_H

#include <stdint.h>

#include "chat_template.h"
#include "dataset.h"
#include "error.h"
#include "tokenizer.h"

typedef enum { PROMPT_TEMPLATE_NONE, PROMPT_TEMPLATE_VICUNA, PROMPT_TEMPLATE_CHAT, PROMPT_TEMPLATE_COUNT } PromptTemplate;

#define PROMPT_NONE_SEPARATOR "\n\n"
#define PROMPT_VICUNA_SYSTEM                                                                                   \
    "A chat between a curious user and an artificial intelligence assistant. The assistant gives helpful, " \
    "detailed, and polite answers to the user's questions."

/* "none" / "vicuna" / "chat_template" <-> PromptTemplate; parse returns -1 for other names. */
int prompt_template_parse(const char *name, PromptTemplate *t);
const char *prompt_template_name(PromptTemplate t);

/* A template ready to lay out prompts. */
typedef struct PromptFormat {
    PromptTemplate kind;
    ChatTemplate chat; /* PROMPT_TEMPLATE_CHAT: the model's template and special-token strings */
} PromptFormat;

/* For kind chat_template, loads model_dir's template (an error naming the directory when it has
 * none); the tokenizer's BOS / EOS strings stand in for tokens tokenizer_config.json does not give. */
int prompt_format_init(PromptFormat *f, PromptTemplate kind, const char *model_dir, const Tokenizer *tok, SpErr *err);
void prompt_format_free(PromptFormat *f);

/* The prompt text of example i of d: answers[0..d->ex[i].turn) are the model's answers to the
 * conversation's earlier turns (as prompt_answer() makes them; may be NULL when turn is 0).
 * Returns malloc'd text or NULL (err: out of memory, a template error, or example i's conversation
 * does not start in d). */
char *prompt_text(const PromptFormat *f, const Dataset *d, int i, const char *const *answers, SpErr *err);

/* A conversation's answer from the decoded output: a malloc'd copy without leading and trailing
 * white space (Python's str.strip() on ASCII white space), NULL when out of memory. */
char *prompt_answer(const char *output_text);

/* Encodes text as Hugging Face does (added special tokens split out of the text; BOS as the
 * tokenizer's add_bos_token says, tokenizer.h), an empty encoding becoming [bos_id] when the model
 * has a BOS (else it is an error), and keeps the last max_prompt tokens (*truncated = 1 when it cut
 * any). *ids malloc'd, *n tokens. */
int prompt_encode(const PromptFormat *f, const Tokenizer *tok, int bos_id, const char *text, int max_prompt,
                  int32_t **ids, int *n, int *truncated, SpErr *err);

#endif
