/* model.h - a Hugging Face checkpoint (an architecture of arch.c's table) and its forward pass.
 *
 * A Model is read-only after model_load(): its weights point into mmap'd model.safetensors files
 * (f32, f16 or bf16 kept as stored; f16/bf16 are widened to f32 tile by tile inside the matmul).
 * A Session owns everything that changes during decoding: the KV cache and the activations,
 * all allocated once in session_new(). Several Sessions may share one Model across threads;
 * one Session is used by one thread at a time. Threads inside matmuls come from OpenBLAS.
 */
#ifndef SP_MODEL_H
#define SP_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "dtype.h"
#include "error.h"

/* A read-only view of one stored matrix. */
typedef struct Tensor {
    const void *data;
    DType dtype;
    int ndim;
    int64_t shape[4];
} Tensor;

typedef struct Model Model;
typedef struct Session Session;

/* The tensors a config implies, in Hugging Face naming, with the role init-random uses to pick
 * an initial value. The loader and init-random share this table, so they cannot disagree. */
typedef enum { TR_MATRIX = 0, TR_NORM_WEIGHT = 1, TR_BIAS = 2 } TensorRole;
typedef struct TensorSpec {
    char name[96];
    int ndim;
    int64_t shape[2];
    TensorRole role;
    char gguf_name[64]; /* llama.cpp's name for it ("blk.0.attn_q.weight") */
    int conv1d;         /* a Conv1D matrix stored [in, out] (GGUF wants it transposed) */
    int rope_heads;     /* q / k under RoPE: its heads (GGUF permutes their rows); else 0 */
} TensorSpec;

/* Fills *out (malloc'd, caller frees) with the n tensors the config needs. */
int model_tensor_specs(const ModelConfig *cfg, TensorSpec **out, int *n, SpErr *err);
/* A TensorSpec's tensor in an opened checkpoint: the exact name, else without its "transformer." /
 * "model." prefix (checkpoints saved from the base model class); NULL if absent. */
struct StArchive;
struct StEntry;
const struct StEntry *model_find_tensor(const struct StArchive *st, const char *name);

/* Loads dir/config.json and the weights: dir/model.gguf when it exists (a GGUF file as export-gguf or
 * llama-quantize writes it: f32, f16, bf16 or Q8_0 matrices under llama.cpp's names), else
 * dir/model.safetensors (or the sharded form named by dir/model.safetensors.index.json). Shapes are
 * checked against the config. dir may also be a GGUF file alone (sp_is_gguf_file: a regular file named
 * *.gguf): the config is then read from its metadata (gguf_config_read, gguf.h) and its tokenizer is
 * model_tokenizer_load's. */
#define GGUF_MODEL_FILE "model.gguf"
/* bf16 matrices: on a CPU with AVX512_BF16 the activations are rounded to bf16 and multiplied by bf16
 * dot products (kernels.h; llama.cpp's numerics and speed), unless the environment sets
 * SPRINTER_BF16=exact: then (and on other CPUs) the weights are widened exactly and the activations
 * stay f32. Read once per model_load. */
#define BF16_ENV "SPRINTER_BF16"
int model_bf16_dot_default(void);
/* Q8_0 matrices: on a CPU with AVX512_VNNI every one of them, whatever its size, is packed into panels
 * and its activations are quantized to Q8_0 per row and multiplied by int8 dot products (kernels.h;
 * llama.cpp's numerics), unless the environment sets SPRINTER_Q8=widen: then (and on other CPUs) the
 * quants are widened exactly and the activations stay f32 (panels from PANEL_MIN_BYTES on, the
 * few-row kernel under). */
#define Q8_ENV "SPRINTER_Q8"
int model_q8_vnni_default(void);
/* The config and the opened weights of a model path, as model_load reads them (export-gguf too): a GGUF
 * file alone (its metadata as the config), else path/config.json with path/model.gguf when it exists,
 * else path's safetensors. The caller st_close's and config_free's both, on error too. */
int model_open(const char *path, ModelConfig *cfg, struct StArchive *st, SpErr *err);
Model *model_load(const char *dir, SpErr *err);
void model_free(Model *m);
const ModelConfig *model_config(const Model *m);
/* Total parameter count, and bytes of weights streamed per decoded token. */
int64_t model_n_params(const Model *m);
int64_t model_weight_bytes(const Model *m);

/* A BLAS thread count for decoding models of this many weight bytes on n_cores: below
 * SMALL_MODEL_BYTES one thread (thread hand-offs cost more than the arithmetic; measured 5.8x
 * faster single-threaded on the 0.4M-parameter default draft), else n_cores. */
#define SMALL_MODEL_BYTES ((int64_t)32 << 20)
int suggest_threads(int64_t weight_bytes, int n_cores);

/* max_ctx: KV-cache capacity in positions (0 = the model's max_pos);
 * max_batch: the most tokens one session_forward call may take. */
Session *session_new(const Model *m, int max_ctx, int max_batch, SpErr *err);
void session_free(Session *s);
int session_max_ctx(const Session *s);
int session_max_batch(const Session *s);

/* Runs tokens[0..n) at positions [pos, pos+n), where pos == the current cache length
 * (session_len), appending their keys/values to the cache. On success *logits points at [n, V]
 * and *hidden (if non-NULL) at [n, d] (the last layer's hidden state after the final norm), both
 * owned by the session and valid until the next call. 1 <= n <= max_batch. */
int session_forward(Session *s, const int32_t *tokens, int n, const float **logits,
                    const float **hidden, SpErr *err);

/* Like session_forward, but computes logits only for the last n_tail rows (*logits is
 * [n_tail, V]); hidden still covers all n rows. Saves the LM head on rows nobody reads. */
int session_forward_tail(Session *s, const int32_t *tokens, int n, int n_tail, const float **logits,
                         const float **hidden, SpErr *err);

/* Like session_forward for any n: feeds tokens in chunks of max_batch; logits/hidden refer to the
 * last position only ([V] and [d]). */
int session_prefill(Session *s, const int32_t *tokens, int n, const float **logits,
                    const float **hidden, SpErr *err);

/* One token at position pos >= session_len whose query attends to the cached positions
 * [0, session_len) only, neither to itself nor to anything between: what a Hugging Face model
 * computes at a right-padding position of a padded batch (attention_mask 0 from session_len on,
 * position ids counting on through the padding). The cache is left as it was. *hidden [d] (the
 * final-norm state) is owned by the session until its next call. Needs session_len >= 1 and
 * pos < max_ctx; GPT-Neo local layers need a cached key within the window. */
int session_probe(Session *s, int32_t token, int pos, const float **hidden, SpErr *err);

/* n candidate tokens, each at position session_len as if it alone came next: every row attends to
 * the cached positions [0, session_len) and to itself, never to another candidate (n one-token
 * forwards in one batch). The cache is left as it was. *hidden [n, d] (final-norm states) and, when
 * logits is not NULL, *logits [n, V] are owned by the session until its next call.
 * 1 <= n <= max_batch; needs session_len < max_ctx. */
int session_candidates(Session *s, const int32_t *tokens, int n, const float **logits, const float **hidden,
                       SpErr *err);

/* ---- one forward call over rows of many Sessions of one Model ----
 * Each request is what session_forward_tail(session, tokens, n, n_tail) would run: n tokens at the
 * session's next positions, logits for the last n_tail rows. The matrices run once over all requests'
 * rows stacked; embedding positions, keys/values and attention are each session's own. Results land in
 * each session's own buffers, as its own call leaves them (the same pointers, valid until that session's
 * next call), and are bit-identical to them: a row's arithmetic never depends on the other requests
 * (model.c, "forward"). A ForwardBatch owns the stacked activations of at most max_rows rows (one
 * call of more is run in consecutive parts, a request of more rows as its own session call); it
 * borrows the sessions for the call only. Not
 * thread-safe; a session may appear in one request of a call. */
typedef struct SessionRows {
    Session *session;
    const int32_t *tokens; /* [n] */
    int n, n_tail;         /* 1 <= n_tail <= n <= the session's max_batch */
    const float *logits;   /* out: [n_tail, V] */
    const float *hidden;   /* out: [n, d] final-norm states of all n rows */
} SessionRows;
typedef struct ForwardBatch ForwardBatch;
ForwardBatch *forward_batch_new(const Model *m, int max_rows, SpErr *err);
void forward_batch_free(ForwardBatch *b);
int forward_batch_rows(const ForwardBatch *b);
/* Runs req[0..n) (checked first, each as its own call would be; nothing runs if one is refused). */
int forward_batch(ForwardBatch *b, SessionRows *req, int n, SpErr *err);

/* Number of positions in the cache. */
int session_len(const Session *s);
/* ---- a session's cached keys/values, copied out and back in (decoding.h: the prefill memo) ----
 * session_kv_floats: the floats of a copy of positions [0, n): 2 * n_layers * n * n_kv_heads * head_dim.
 * session_kv_save: positions [0, n) (n <= session_len) into out [2 (keys, values)][n_layers][n][kvd].
 * session_kv_load: an empty session (session_len 0, context >= n) takes positions [0, n) from such a
 * copy of a session of the same Model, as if it had computed them; session_len becomes n. A key or value
 * depends only on the tokens at and before its position (model.c, "forward"), so a copy serves any
 * session of that Model whose first n tokens are the same. */
size_t session_kv_floats(const Session *s, int n);
void session_kv_save(const Session *s, int n, float *out);
int session_kv_load(Session *s, const float *in, int n, SpErr *err);
/* Drops cached positions >= pos (speculative rollback). 0 <= pos <= session_len. */
int session_truncate(Session *s, int pos, SpErr *err);

#endif
