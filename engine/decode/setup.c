#include "setup.h"

#include <string.h>

#include "fsutil.h"
#include "gguf.h"

const Model *run_models_any(const RunModels *rm) { return rm->target ? rm->target : rm->draft; }

static int load_one(Model **m, const char *role, const char *dir, int both, SpErr *err) {
    if (!dir) return 0;
    if (!(*m = model_load(dir, err))) return both ? sp_err_prefix(err, "%s %s", role, dir) : sp_err_prefix(err, "%s", dir);
    return 0;
}

/* Where a model's vocab_size comes from, for messages: "/config.json" of a directory; nothing for a GGUF
 * file alone (its token_embd.weight rows). */
static const char *cfg_file(const char *path) { return sp_is_gguf_file(path) ? "" : "/config.json"; }

/* The models' vocab_size agree; max_pos and vocab_size of what is loaded. */
static int check_models(RunModels *rm, SpErr *err) {
    if (rm->draft && rm->target) {
        int vd = model_config(rm->draft)->vocab_size, vt = model_config(rm->target)->vocab_size;
        if (vd != vt)
            return sp_fail(err, "draft %s%s: vocab_size %d differs from target %s%s: vocab_size %d", rm->draft_dir,
                           cfg_file(rm->draft_dir), vd, rm->target_dir, cfg_file(rm->target_dir), vt);
    }
    const Model *ms[2] = {rm->target, rm->draft};
    for (int i = 0; i < 2; i++) {
        if (!ms[i]) continue;
        const ModelConfig *c = model_config(ms[i]);
        if (rm->max_pos == 0 || c->max_pos < rm->max_pos) rm->max_pos = c->max_pos;
        if (rm->vocab_size == 0) rm->vocab_size = c->vocab_size;
    }
    return 0;
}

/* The tokenizer's vocabulary fits into each loaded model's. */
static int check_tokenizer(const RunModels *rm, SpErr *err) {
    const Model *ms[2] = {rm->target, rm->draft};
    const char *dirs[2] = {rm->target_dir, rm->draft_dir};
    for (int i = 0; i < 2; i++) {
        if (!ms[i] || tokenizer_vocab_size(rm->tokenizer) <= model_config(ms[i])->vocab_size) continue;
        return sp_fail(err, "%s: the tokenizer has %d tokens but %s%s: vocab_size is %d", tokenizer_source(rm->tokenizer),
                       tokenizer_vocab_size(rm->tokenizer), dirs[i], cfg_file(dirs[i]), model_config(ms[i])->vocab_size);
    }
    return 0;
}

int run_models_open(RunModels *rm, const RunSetup *s, SpErr *err) {
    memset(rm, 0, sizeof *rm);
    if (!s->draft_dir && !s->target_dir) return sp_fail(err, "no model directory given");
    int both = s->draft_dir && s->target_dir;
    rm->draft_dir = s->draft_dir, rm->target_dir = s->target_dir;
    rm->tokenizer_dir = s->tokenizer_dir ? s->tokenizer_dir : s->target_dir ? s->target_dir : s->draft_dir;
    if (load_one(&rm->draft, "draft", s->draft_dir, both, err) || load_one(&rm->target, "target", s->target_dir, both, err) ||
        check_models(rm, err) ||
        (s->tokenizer && (!(rm->tokenizer = model_tokenizer_load(rm->tokenizer_dir, err)) || check_tokenizer(rm, err)))) {
        run_models_close(rm);
        return -1;
    }
    return 0;
}

void run_models_close(RunModels *rm) {
    tokenizer_free(rm->tokenizer);
    model_free(rm->draft);
    model_free(rm->target);
    rm->tokenizer = NULL, rm->draft = rm->target = NULL;
}
