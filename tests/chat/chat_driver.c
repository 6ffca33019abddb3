/* chat_driver.c - renders chat-template cases for tests/chat/test_chat_template.py:
 *   chat_driver CASES.json
 *   chat_driver --load MODEL_DIR     prints chat_template_load()'s fields as one JSON line (or the error)
 * CASES.json: [{"template", "messages": [{"role", "content"}], "bos_token", "eos_token",
 * "add_generation_prompt"}]. Prints one JSON line per case: {"ok": true, "text": ...} or
 * {"ok": false, "error": ...}. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chat_template.h"
#include "jsonutil.h"

static const char *str_or_null(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static int load(const char *dir) {
    ChatTemplate t;
    SpErr err = {{0}};
    cJSON *res = cJSON_CreateObject();
    if (chat_template_load(dir, &t, &err)) {
        cJSON_AddBoolToObject(res, "ok", 0);
        cJSON_AddStringToObject(res, "error", err.msg);
    } else {
        cJSON_AddBoolToObject(res, "ok", 1);
        const char *names[] = {"template", "bos_token", "eos_token", "unk_token", "pad_token", "source"};
        const char *vals[] = {t.tmpl, t.bos_token, t.eos_token, t.unk_token, t.pad_token, t.source};
        for (int k = 0; k < 6; k++)
            if (vals[k]) cJSON_AddStringToObject(res, names[k], vals[k]);
        chat_template_free(&t);
    }
    char *line = cJSON_PrintUnformatted(res);
    puts(line);
    free(line);
    cJSON_Delete(res);
    return 0;
}

int main(int argc, char **argv) {
    if (argc == 3 && !strcmp(argv[1], "--load")) return load(argv[2]);
    if (argc != 2) {
        fprintf(stderr, "usage: chat_driver CASES.json\n");
        return 2;
    }
    SpErr err = {{0}};
    size_t len;
    char *text = sp_read_file(argv[1], 1u << 28, &len, &err);
    cJSON *cases = text ? cJSON_ParseWithLength(text, len) : NULL;
    free(text);
    if (!cJSON_IsArray(cases)) {
        fprintf(stderr, "chat_driver: %s: %s\n", argv[1], text ? "not a JSON array" : err.msg);
        return 2;
    }
    const cJSON *cs;
    cJSON_ArrayForEach(cs, cases) {
        const cJSON *msgs = cJSON_GetObjectItemCaseSensitive(cs, "messages");
        int n = cJSON_GetArraySize(msgs);
        ChatMessage *m = calloc((size_t)(n ? n : 1), sizeof *m);
        for (int k = 0; k < n; k++) {
            const cJSON *x = cJSON_GetArrayItem(msgs, k);
            m[k] = (ChatMessage){str_or_null(x, "role"), str_or_null(x, "content")};
        }
        ChatVars vars = {str_or_null(cs, "bos_token"), str_or_null(cs, "eos_token"), NULL, NULL,
                         cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(cs, "add_generation_prompt"))};
        SpErr e = {{0}};
        char *out = chat_template_render(str_or_null(cs, "template"), m, n, &vars, &e);
        cJSON *res = cJSON_CreateObject();
        cJSON_AddBoolToObject(res, "ok", out != NULL);
        if (out) cJSON_AddStringToObject(res, "text", out);
        else cJSON_AddStringToObject(res, "error", e.msg);
        char *line = cJSON_PrintUnformatted(res);
        puts(line);
        free(line);
        cJSON_Delete(res);
        free(out);
        free(m);
    }
    cJSON_Delete(cases);
    return 0;
}
