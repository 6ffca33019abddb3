/* chat_template_load.c - a model directory's chat template and special tokens (see chat_template.h:
 * chat_template_load, chat_template_free). */
#include "chat_template.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fsutil.h"
#include "gguf.h"
#include "jsonutil.h"

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
    if (sp_is_gguf_file(model_dir)) { /* a GGUF file alone: tokenizer.chat_template, bos / eos texts */
        if (gguf_chat_template(model_dir, &t->tmpl, &t->bos_token, &t->eos_token, err)) return -1;
        if (t->tmpl) snprintf(t->source, sizeof t->source, "tokenizer.chat_template");
        return 0;
    }
    char path[4200];
    struct stat st;
    size_t len;
    snprintf(path, sizeof path, "%s/chat_template.jinja", model_dir);
    if (stat(path, &st) == 0) {
        if (!(t->tmpl = sp_read_file(path, 1u << 24, &len, err))) return -1;
        if (strlen(t->tmpl) != len) { /* a template is text: a NUL would silently cut it */
            sp_fail(err, "%s: a NUL byte at offset %zu: a template is text", path, strlen(t->tmpl));
            return chat_template_free(t), -1;
        }
        snprintf(t->source, sizeof t->source, "chat_template.jinja");
    }
    snprintf(path, sizeof path, "%s/tokenizer_config.json", model_dir);
    if (stat(path, &st) != 0) return 0;
    /* the one JSON parser: malformed JSON is named as such, with its line and byte; a \u0000 escape
     * is refused (a NUL would cut the template) */
    cJSON *cfg = sp_json_load(path, 1u << 26, err);
    if (!cfg) return chat_template_free(t), -1;
    int rc = 0;
    if (!cJSON_IsObject(cfg)) rc = sp_fail(err, "%s: valid JSON, but not an object", path);
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
