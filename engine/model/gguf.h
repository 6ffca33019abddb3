/* gguf.h - export a Hugging Face checkpoint directory (config.json, safetensors, a byte-level BPE
 * tokenizer) to a GGUF v3 file that llama.cpp loads (`sprinter export-gguf`).
 *
 * GGUF v3 (ggml's gguf.h / gguf.cpp): "GGUF", u32 version 3, i64 tensor count, i64 key count; keys
 * as (string, i32 type, value), arrays as (i32 element type, u64 count, elements); strings as u64
 * length + bytes; tensor infos as (name, u32 n_dims, i64 ne[n_dims] with ne[0] the contiguous row
 * length, i32 ggml type, u64 offset from the data section); then zero padding to 32 bytes and the
 * data, each tensor padded to 32 and placed at the offset its info names.
 *
 * Architectures (llama.cpp's own names and shapes):
 *   llama  token_embd, blk.N.{attn_norm, attn_q, attn_k, attn_v, attn_output, ffn_norm, ffn_gate,
 *          ffn_up, ffn_down}, output_norm, output (absent when tied). HF's q_proj / k_proj rows are
 *          permuted from rotate_half to llama.cpp's adjacent-pair RoPE: within each head (k: each
 *          KV head) of dimension d, output row 2i + j is HF row j d/2 + i (i < d/2, j in {0, 1}).
 *   gpt2   token_embd, position_embd, blk.N.{attn_norm, attn_qkv, attn_output, ffn_norm, ffn_up,
 *          ffn_down} with biases, output_norm, output (absent when tied); HF's Conv1D weights
 *          ([in, out]) are transposed to [out, in].
 *   qwen2  as llama, with blk.N.attn_{q,k,v}.bias, no q/k permutation (llama.cpp's qwen2 rotates halves
 *          as Hugging Face does).
 *   qwen3  as qwen2 without biases, with blk.N.attn_q_norm / attn_k_norm [head_dim]; key_length /
 *          value_length = head_dim when head_dim x heads != hidden.
 *   rope_scaling: linear as <arch>.rope.scaling.type "linear" + rope.scaling.factor (llama.cpp's
 *          freq_scale = 1 / factor); llama3 as the tensor rope_freqs.weight [head_dim / 2] f32, the
 *          divisor of each inverse frequency (rope_freq_divisor, config.h), as llama.cpp's converter
 *          writes it; refused for qwen2 / qwen3, whose llama.cpp graphs apply no such factors.
 *   GPT-Neo is refused: llama.cpp has no GPT-Neo architecture.
 * Norm weights and biases are stored as F32 whatever the dtype; matrices in the chosen dtype (f32,
 * f16 or bf16, rounded to nearest even from the checkpoint's values; or Q8_0, quantized from the f32
 * values after the transposition / permutation exactly as llama-quantize quantizes the f32 file:
 * ggml's quantize_row_q8_0_ref, the position embedding left F32, rows that are not whole 32-value
 * blocks F16, general.quantization_version 2).
 * Tokenizer: tokenizer.ggml.model "gpt2"; pre from the engine tokenizer's pre-tokenizer ("gpt-2" for
 * GPT-2's regex, "llama-bpe" / "qwen2" for the Split regex of Llama 3.x / Qwen2-3's tokenizer.json,
 * any other regex refused); tokens and merges as the byte-level strings of vocab.json + merges.txt
 * (else tokenizer.json); token types 1 normal, 3 control (special added tokens, bos, eos),
 * 4 user-defined (added tokens that are not special: Qwen's <think>), 5 unused (ids the vocabulary
 * lacks, named [PADn]); bos from config.json, else the tokenizer's (post_processor,
 * tokenizer_config.json); the end-of-sequence ids, config.json's eos_token_id (an id or a list) and the
 * tokenizer's eos, under llama.cpp's three keys eos / eot / eom_token_id (gguf.c eos_keys: Llama 3.1
 * Instruct's [128001, 128008, 128009] with eos <|eot_id|> as eos 128001, eot 128009, eom 128008; more
 * than three ids refused, naming config.json's eos_token_id); add_bos_token / add_eos_token as the engine's tokenizer of that directory adds them
 * (tokenizer_add_bos / tokenizer_add_eos: tokenizer_config.json, else the post_processor's
 * TemplateProcessing, else the family's default), never from the architecture. A
 * SentencePiece-style vocabulary (tokenizer.json with "▁" spaces and <0xNN> byte tokens) is refused:
 * it is not GPT-2 BPE. tokenizer.chat_template: the template the caller passes (the CLI: chat_template_load's,
 * the one the engine renders for that model; of a tokenizer_config.json list of named templates, the one
 * named "default": llama.cpp's converter writes the others as tokenizer.chat_template.NAME, not done here).
 * Re-export (model_path a GGUF file alone, or a directory holding model.gguf, loaded by model_open as
 * every command loads it): tensors under their GGUF names, already in llama.cpp's layout, converted to the
 * dtype (a Q8_0 source widened first; an f32 source gives the tensors a directory's export gives);
 * rope_freqs.weight, tokens, token types, merges and general.name copied; the rest of the metadata written
 * again from what the engine read (config, tokenizer, chat template): for export-gguf's own files the
 * source's but general.file_type and general.quantization_version, as llama-quantize gives; keys of another
 * writer's file that the engine does not read (llama.cpp converter's general.* extras, named chat templates)
 * are not carried over, unlike llama-quantize, which copies every key.
 * The file is written to OUT.tmp and renamed; nothing is left behind on error. */
#ifndef SP_GGUF_H
#define SP_GGUF_H

#include <stdint.h>

#include "error.h"
#include "model.h"

typedef struct GgufSummary {
    int n_tensors, n_tokens, n_merges;
    int64_t bytes;
} GgufSummary;

/* model_path: a model directory or a GGUF file (model_open); tok_path: where the tokenizer is, a directory
 * or a GGUF file (NULL: model_path); ids of the model's vocabulary it lacks become unused [PADn] entries
 * (random-init checkpoints of real shapes carry no tokenizer); chat_template: tokenizer.chat_template's
 * text, NULL for none. */
int gguf_export(const char *model_path, const char *tok_path, const char *chat_template, const char *out_path,
                DType dtype, GgufSummary *sum, SpErr *err);

/* Opens the GGUF file at path (v2 or v3; tensors of type F32, F16, BF16 or Q8_0) as an archive whose
 * entries carry llama.cpp's tensor names ("blk.0.attn_q.weight") and row-major shapes (ne reversed:
 * every matrix [out, in], GPT-2's included; Llama's q / k rows in llama.cpp's RoPE order), data
 * borrowed from the file map until st_close. a->gguf = 1. Errors name the file and the field. */
struct StArchive;
int gguf_open(const char *path, struct StArchive *a, SpErr *err);

/* The format's numbers, for the writer (gguf.c) and the reader (gguf_read.c): metadata value types
 * (ggml's gguf_type) and the tensor types read and written (ggml_type). */
enum {
    GGUF_T_U8, GGUF_T_I8, GGUF_T_U16, GGUF_T_I16, GGUF_T_U32, GGUF_T_I32, GGUF_T_F32,
    GGUF_T_BOOL, GGUF_T_STRING, GGUF_T_ARRAY, GGUF_T_U64, GGUF_T_I64, GGUF_T_F64
};
enum { GGML_T_F32 = 0, GGML_T_F16 = 1, GGML_T_Q8_0 = 8, GGML_T_BF16 = 30 };

/* ---- GGUF metadata (gguf_read.c), borrowed from an archive gguf_open made ----
 * Each pair as stored: the key (not NUL-terminated), its GGUF value type (GGUF_T_*), where its value
 * lies in the map (a scalar's bytes; a string's u64 length and bytes; an array's first element) and,
 * for an array, its element type and count. Accessors fail with one line naming the file and the key
 * ("model.gguf: metadata key llama.block_count is missing"); an absent key that is not required
 * leaves *out as it was. */
typedef struct GgufKv {
    const char *key;
    size_t keylen;
    uint32_t type;
    const unsigned char *val;
    uint32_t arr_type;
    uint64_t arr_n;
} GgufKv;
typedef struct GgufMeta {
    const char *file; /* the file's path as it was given, for messages (borrowed from the archive) */
    GgufKv *kv;
    int n;
} GgufMeta;
int gguf_meta_read(const struct StArchive *a, GgufMeta *m, SpErr *err);
void gguf_meta_free(GgufMeta *m);
const GgufKv *gguf_meta_find(const GgufMeta *m, const char *key);
/* any integer type, within [lo, hi] */
int gguf_meta_int(const GgufMeta *m, const char *key, int required, int64_t lo, int64_t hi, int64_t *out, SpErr *err);
/* f32 or f64, within [lo, hi] */
int gguf_meta_float(const GgufMeta *m, const char *key, int required, double lo, double hi, double *out, SpErr *err);
int gguf_meta_bool(const GgufMeta *m, const char *key, int required, int *out, SpErr *err);
/* *s points into the map (not NUL-terminated), NULL when absent */
int gguf_meta_str(const GgufMeta *m, const char *key, int required, const char **s, size_t *len, SpErr *err);
/* an array of element type elem; *out NULL when absent */
int gguf_meta_array(const GgufMeta *m, const char *key, int required, uint32_t elem, const GgufKv **out, SpErr *err);
/* Walks an array of strings: the string at p into *s / *len; returns where the next one starts. */
const unsigned char *gguf_next_str(const unsigned char *p, const char **s, size_t *len);

/* ---- a GGUF file alone as a model (gguf_meta.c) ----
 * The engine's config from the metadata export-gguf (and llama.cpp's converter) writes:
 * general.architecture (gpt2, llama, qwen2, qwen3: ArchInfo.gguf_arch), <arch>.context_length,
 * embedding_length, block_count, feed_forward_length, attention.head_count, attention.head_count_kv
 * (default head_count), attention.layer_norm_rms_epsilon (RMSNorm) or attention.layer_norm_epsilon,
 * rope.freq_base (default 10000), rope.dimension_count (must be head_dim: no partial rotary),
 * attention.key_length / value_length (head_dim; default hidden / heads), rope.scaling.type "none" or
 * "linear" with rope.scaling.factor; vocab_size from token_embd.weight's rows; tied embeddings when
 * output.weight is absent; bos / eos from tokenizer.ggml.bos_token_id / eos_token_id, with
 * tokenizer.ggml.eot_token_id and eom_token_id further end-of-sequence ids (config_is_eos: as llama.cpp
 * stops at each). llama3
 * scaling is the tensor rope_freqs.weight (F32 [head_dim / 2], each frequency's divisor, as export-gguf
 * and llama.cpp's converter write it): rope_scaling ROPE_SCALE_FREQS, the model dividing by the table
 * (the directory form computes the same divisors in double from config.json's parameters). */
#define GGUF_ROPE_FREQS "rope_freqs.weight"
struct ModelConfig;
int gguf_config_read(const struct StArchive *a, const GgufMeta *m, struct ModelConfig *cfg, SpErr *err);

/* The tokenizer of a GGUF file (tokenizer.ggml.*): model "gpt2" (byte-level BPE) with pre "gpt-2",
 * "llama-bpe" or "qwen2" (tokenizer_from_tables, tokenizer.h), tokens, token_type (control:
 * special added tokens; user-defined: added tokens; unused: no token), merges, bos / eos ids and
 * add_bos_token / add_eos_token. Anything else (model "llama", an unknown pre) is refused with one line
 * naming the file and the key. */
struct Tokenizer;
struct Tokenizer *gguf_tokenizer_load(const char *path, SpErr *err);
/* A GGUF file's tokenizer.chat_template (NULL when absent) and the texts of its bos / eos tokens (NULL
 * when it names none), each malloc'd and NUL-terminated, for chat_template_load. */
int gguf_chat_template(const char *path, char **tmpl, char **bos, char **eos, SpErr *err);

/* The tokenizer of a model path: a GGUF file's own (sp_is_gguf_file: gguf_tokenizer_load), else the
 * directory's (tokenizer_load_dir). */
struct Tokenizer *model_tokenizer_load(const char *path, SpErr *err);

#endif
