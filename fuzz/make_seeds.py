#!/usr/bin/env python3
"""Regenerates the seed corpora fuzz/corpus/<target>/ (small: real-looking valid files and a few
broken ones). Uses a built sprinter for the model files, token logs and verifier data:

    python3 fuzz/make_seeds.py --sprinter build/sprinter

Two-file inputs are joined with SEP (fuzz/harness.h SP_FUZZ_SEP). Inputs of bpe_* and dataset start
with one selector byte (see fuzz/harness.c).
"""
import argparse
import json
import os
import shutil
import struct
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIX = os.path.join(ROOT, "tests", "tokenizer", "fixtures")
SEP = b"\n=====\n"


def put(target, name, data):
    d = os.path.join(ROOT, "fuzz", "corpus", target)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def read(*p):
    with open(os.path.join(*p), "rb") as f:
        return f.read()


def st_file(tensors, pad=True, meta=None):
    """safetensors bytes: tensors = [(name, dtype, shape, raw bytes)]."""
    hdr, off, blob = {}, 0, b""
    if meta:
        hdr["__metadata__"] = meta
    for name, dt, shape, raw in tensors:
        hdr[name] = {"dtype": dt, "shape": shape, "data_offsets": [off, off + len(raw)]}
        off += len(raw)
        blob += raw
    h = json.dumps(hdr, separators=(",", ":")).encode()
    if pad:
        h += b" " * (-len(h) % 8)
    return struct.pack("<Q", len(h)) + h + blob


def st_raw_header(h, blob=b""):
    h = h.encode() if isinstance(h, str) else h
    return struct.pack("<Q", len(h)) + h + blob


def tiny_models(sprinter, work):
    """Tiny random models of each architecture: {arch: (config bytes, safetensors bytes)}."""
    cfgs = {
        "gpt2": {"model_type": "gpt2", "vocab_size": 16, "n_embd": 8, "n_layer": 1, "n_head": 2,
                 "n_positions": 8, "bos_token_id": 15, "eos_token_id": 15},
        "gpt-neo": {"model_type": "gpt_neo", "vocab_size": 16, "hidden_size": 8, "num_layers": 2, "num_heads": 2,
                    "max_position_embeddings": 8, "window_size": 4,
                    "attention_types": [[["global", "local"], 1]]},
        "llama": {"model_type": "llama", "vocab_size": 16, "hidden_size": 8, "num_hidden_layers": 1,
                  "num_attention_heads": 2, "num_key_value_heads": 1, "intermediate_size": 12,
                  "max_position_embeddings": 8, "bos_token_id": 1, "eos_token_id": 2},
    }
    out = {}
    for arch, cfg in cfgs.items():
        cpath = os.path.join(work, arch + ".json")
        with open(cpath, "w") as f:
            json.dump(cfg, f)
        d = os.path.join(work, arch)
        subprocess.run([sprinter, "init-random", "--arch", arch, "--config", cpath, "--out", d], check=True,
                       stdout=subprocess.DEVNULL)
        out[arch] = (read(d, "config.json"), read(d, "model.safetensors"))
    d = os.path.join(work, "gpt2-f16")
    subprocess.run([sprinter, "init-random", "--arch", "gpt2", "--config", os.path.join(work, "gpt2.json"),
                    "--dtype", "f16", "--out", d], check=True, stdout=subprocess.DEVNULL)
    out["gpt2-f16"] = (read(d, "config.json"), read(d, "model.safetensors"))
    return out


def seeds_safetensors(models):
    t = "safetensors"
    for arch, (_, st) in models.items():
        put(t, "valid-%s.safetensors" % arch, st)
    f4 = struct.pack("<4f", 1, 2, 3, 4)
    put(t, "valid-one.safetensors", st_file([("w", "F32", [2, 2], f4)], meta={"format": "pt"}))
    put(t, "valid-misaligned.safetensors", st_file([("w", "F32", [4], f4)], pad=False))
    put(t, "valid-dtypes.safetensors", st_file([("a", "F16", [2], b"\0" * 4), ("b", "BF16", [1], b"\0" * 2),
                                                ("c", "I64", [1], b"\0" * 8), ("d", "BOOL", [3], b"\1" * 3),
                                                ("e", "F8_E4M3", [0], b""), ("s", "F64", [], b"\0" * 8)]))
    put(t, "valid-empty.safetensors", st_raw_header("{}"))
    put(t, "bad-larger-than-file.safetensors",
        st_raw_header('{"w":{"dtype":"F32","shape":[1000000],"data_offsets":[0,4000000]}}', f4))
    put(t, "bad-negative-shape.safetensors",
        st_raw_header('{"w":{"dtype":"F32","shape":[-1,4],"data_offsets":[0,16]}}', f4))
    put(t, "bad-overflow-shape.safetensors",
        st_raw_header('{"w":{"dtype":"F32","shape":[4294967296,4294967296,16],"data_offsets":[0,16]}}', f4))
    put(t, "bad-huge-offset.safetensors",
        st_raw_header('{"w":{"dtype":"F32","shape":[4],"data_offsets":[1e300,1e301]}}', f4))
    put(t, "bad-header-length.safetensors", struct.pack("<Q", 1 << 62) + b"{}")
    put(t, "bad-dtype.safetensors", st_raw_header('{"w":{"dtype":"Q4","shape":[4],"data_offsets":[0,16]}}', f4))
    put(t, "bad-duplicate.safetensors",
        st_raw_header('{"w":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},'
                      '"w":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}}', b"ab"))
    put(t, "bad-trailing.safetensors", st_raw_header('{} x'))
    put(t, "bad-short", b"\x02\0\0")
    # sharded: index JSON SEP the shard "a.safetensors"
    one = st_file([("w", "F32", [2, 2], f4), ("b", "F32", [1], f4[:4])])
    put(t, "valid-sharded", json.dumps({"metadata": {"total_size": 20},
                                         "weight_map": {"w": "a.safetensors", "b": "a.safetensors"}}).encode()
        + SEP + one)
    put(t, "bad-sharded-missing", json.dumps({"weight_map": {"w": "a.safetensors", "x": "a.safetensors"}}).encode()
        + SEP + one)
    put(t, "bad-sharded-path", json.dumps({"weight_map": {"w": "../a.safetensors"}}).encode() + SEP + one)


def seeds_config(models):
    t = "config"
    for arch, (cfg, _) in models.items():
        put(t, "valid-%s.json" % arch, cfg)
    put(t, "valid-gpt2-hf.json", json.dumps({
        "activation_function": "gelu_new", "architectures": ["GPT2LMHeadModel"], "bos_token_id": 50256,
        "eos_token_id": 50256, "initializer_range": 0.02, "layer_norm_epsilon": 1e-05, "model_type": "gpt2",
        "n_ctx": 1024, "n_embd": 768, "n_head": 12, "n_layer": 12, "n_positions": 1024, "vocab_size": 50257}))
    put(t, "valid-llama-hf.json", json.dumps({
        "model_type": "llama", "hidden_size": 768, "intermediate_size": 3072, "num_attention_heads": 12,
        "num_hidden_layers": 2, "max_position_embeddings": 2048, "rms_norm_eps": 1e-06, "vocab_size": 32000,
        "bos_token_id": 1, "eos_token_id": 2, "hidden_act": "silu", "rope_scaling": None, "tie_word_embeddings": False}))
    put(t, "valid-llama3-hf.json", json.dumps({  # Llama-3.2-1B's config.json
        "architectures": ["LlamaForCausalLM"], "attention_bias": False, "bos_token_id": 128000,
        "eos_token_id": [128001, 128008, 128009], "head_dim": 64, "hidden_act": "silu", "hidden_size": 2048,
        "intermediate_size": 8192, "max_position_embeddings": 131072, "mlp_bias": False, "model_type": "llama",
        "num_attention_heads": 32, "num_hidden_layers": 16, "num_key_value_heads": 8, "rms_norm_eps": 1e-05,
        "rope_scaling": {"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                         "original_max_position_embeddings": 8192, "rope_type": "llama3"},
        "rope_theta": 500000.0, "tie_word_embeddings": True, "vocab_size": 128256}))
    put(t, "valid-qwen2-hf.json", json.dumps({  # Qwen2.5-0.5B's
        "architectures": ["Qwen2ForCausalLM"], "bos_token_id": 151643, "eos_token_id": 151643, "hidden_act": "silu",
        "hidden_size": 896, "intermediate_size": 4864, "max_position_embeddings": 32768, "max_window_layers": 24,
        "model_type": "qwen2", "num_attention_heads": 14, "num_hidden_layers": 24, "num_key_value_heads": 2,
        "rms_norm_eps": 1e-06, "rope_theta": 1000000.0, "sliding_window": 32768, "tie_word_embeddings": True,
        "use_sliding_window": False, "vocab_size": 151936}))
    put(t, "valid-qwen3-hf.json", json.dumps({  # Qwen3-0.6B's, with transformers 5's rope_parameters
        "architectures": ["Qwen3ForCausalLM"], "attention_bias": False, "bos_token_id": 151643,
        "eos_token_id": 151645, "head_dim": 128, "hidden_act": "silu", "hidden_size": 1024,
        "intermediate_size": 3072, "max_position_embeddings": 40960, "model_type": "qwen3",
        "num_attention_heads": 16, "num_hidden_layers": 28, "num_key_value_heads": 8, "rms_norm_eps": 1e-06,
        "rope_parameters": {"rope_theta": 1000000.0, "rope_type": "default"}, "tie_word_embeddings": True,
        "use_sliding_window": False, "vocab_size": 151936}))
    put(t, "bad-absurd-vocab.json", json.dumps({"model_type": "gpt2", "vocab_size": 1e12, "n_embd": 8, "n_layer": 1,
                                                "n_head": 2, "n_positions": 8}))
    put(t, "bad-negative.json", json.dumps({"model_type": "llama", "vocab_size": 16, "hidden_size": -8,
                                            "num_hidden_layers": 1, "num_attention_heads": 2, "intermediate_size": 4}))
    put(t, "bad-heads.json", json.dumps({"model_type": "gpt2", "vocab_size": 16, "n_embd": 10, "n_layer": 1,
                                         "n_head": 3, "n_positions": 8}))
    put(t, "bad-neo-layers.json", json.dumps({"model_type": "gpt_neo", "vocab_size": 16, "hidden_size": 8,
                                              "num_layers": 2, "num_heads": 2, "max_position_embeddings": 8,
                                              "attention_types": [[["global", "local"], 1000]]}))
    put(t, "bad-type.json", '{"model_type": "bert"}')
    put(t, "bad-syntax.json", '{"model_type": "gpt2", ')


def seeds_model(models):
    t = "model"
    for arch, (cfg, st) in models.items():
        put(t, "valid-%s" % arch, cfg + SEP + st)
    cfg, st = models["gpt2"]
    big = json.loads(cfg)
    big["n_positions"] = 1 << 20
    put(t, "bad-shape-mismatch", json.dumps(dict(big, n_embd=16)).encode() + SEP + st)
    put(t, "valid-big-context", json.dumps(big).encode() + SEP + st)
    put(t, "bad-truncated", cfg + SEP + st[: len(st) // 2])


def byte_level_vocab():
    """A GPT-2 byte-level vocabulary of the 256 byte tokens, "ab" and <|endoftext|> (export-gguf needs
    every byte's token): (vocab.json bytes, merges.txt bytes)."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    cs = bs[:]
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + len(cs) - 188)
    u = dict(zip(bs, map(chr, cs)))
    v = {u[b]: b for b in range(256)}
    v["ab"], v["<|endoftext|>"] = 256, 257
    return json.dumps(v, ensure_ascii=False).encode(), b"#version: 0.2\na b\n"


def seeds_gguf(sprinter, work):
    """`sprinter export-gguf` of tiny init-random models: Llama (hidden 32, so its matrices have whole
    Q8_0 blocks; tied head) in f32, f16, bf16 and q8_0, and GPT-2 (Conv1D weights transposed, rows of 8
    values: F16 in the q8_0 file) in f32 and q8_0; config.json SEP model.gguf for model_load. Each
    under MAXLEN_gguf (65536)."""
    t = "gguf"
    tok = os.path.join(work, "gguf-tok")
    os.makedirs(tok, exist_ok=True)
    vocab, merges = byte_level_vocab()
    with open(os.path.join(tok, "vocab.json"), "wb") as f:
        f.write(vocab)
    with open(os.path.join(tok, "merges.txt"), "wb") as f:
        f.write(merges)
    cfgs = {
        "llama": {"model_type": "llama", "vocab_size": 258, "hidden_size": 32, "num_hidden_layers": 1,
                  "num_attention_heads": 2, "num_key_value_heads": 1, "intermediate_size": 32,
                  "max_position_embeddings": 8, "bos_token_id": 257, "eos_token_id": 257,
                  "tie_word_embeddings": True},
        "gpt2": {"model_type": "gpt2", "vocab_size": 258, "n_embd": 8, "n_layer": 1, "n_head": 2,
                 "n_positions": 8, "bos_token_id": 257, "eos_token_id": 257},
    }
    dtypes = {"llama": ("f32", "f16", "bf16", "q8_0"), "gpt2": ("f32", "q8_0")}
    for arch, cfg in cfgs.items():
        cpath = os.path.join(work, "gguf-%s.json" % arch)
        with open(cpath, "w") as f:
            json.dump(cfg, f)
        d = os.path.join(work, "gguf-" + arch)
        subprocess.run([sprinter, "init-random", "--arch", arch, "--config", cpath, "--out", d], check=True,
                       stdout=subprocess.DEVNULL)
        for dt in dtypes[arch]:
            g = os.path.join(work, "%s-%s.gguf" % (arch, dt))
            subprocess.run([sprinter, "export-gguf", "--model", d, "--tokenizer", tok, "--out", g, "--dtype", dt],
                           check=True, stdout=subprocess.DEVNULL)
            put(t, "valid-%s-%s.gguf" % (arch, dt), read(g))
            if dt != "f32":
                put(t, "valid-model-%s-%s" % (arch, dt), read(d, "config.json") + SEP + read(g))
    g = read(work, "llama-q8_0.gguf")
    put(t, "bad-truncated.gguf", g[: len(g) // 2])
    put(t, "bad-version.gguf", g[:4] + struct.pack("<I", 4) + g[8:64])
    put(t, "bad-header-only.gguf", b"GGUF" + struct.pack("<IQQ", 3, 1 << 40, 0))
    put(t, "bad-many-tensors.gguf", b"GGUF" + struct.pack("<IQQ", 3, 1 << 20, 0) + bytes(64))


def seeds_tokenizers():
    for d in ("gpt2_json", "gpt2_prefix", "llama", "llama_metaspace"):
        put("tokenizer_json", "valid-%s.json" % d, read(FIX, d, "tokenizer.json"))
    j = json.loads(read(FIX, "llama", "tokenizer.json"))
    j["model"]["merges"] = [m.split(" ") if isinstance(m, str) else m for m in j["model"]["merges"]]
    put("tokenizer_json", "valid-llama-pair-merges.json", json.dumps(j))
    j = json.loads(read(FIX, "gpt2_json", "tokenizer.json"))
    j["model"]["vocab"]["x"] = 4194303
    put("tokenizer_json", "valid-sparse-id.json", json.dumps(j))
    j = json.loads(read(FIX, "gpt2_json", "tokenizer.json"))
    j["model"]["vocab"]["y"] = 4194304
    put("tokenizer_json", "bad-absurd-id.json", json.dumps(j))
    j = json.loads(read(FIX, "llama", "tokenizer.json"))
    del j["model"]["vocab"]["<0x41>"]
    put("tokenizer_json", "bad-missing-byte.json", json.dumps(j))
    # the Llama 3 / Qwen2 layout: NFC, a Split regex before ByteLevel, BOS from the post-processor
    j = json.loads(read(FIX, "gpt2_json", "tokenizer.json"))
    j["normalizer"] = {"type": "NFC"}
    j["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}|"
                                               " ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"},
         "behavior": "Isolated", "invert": False},
        {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}]}
    j["model"]["ignore_merges"] = True
    j["post_processor"] = {"type": "TemplateProcessing", "single": [
        {"SpecialToken": {"id": "<|endoftext|>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}]}
    put("tokenizer_json", "valid-split-nfc.json", json.dumps(j))
    j["pre_tokenizer"]["pretokenizers"][0]["behavior"] = "Removed"
    put("tokenizer_json", "bad-split-removed.json", json.dumps(j))
    put("tokenizer_json", "bad-unigram.json", '{"model": {"type": "Unigram", "vocab": []}}')
    put("tokenizer_json", "bad-syntax.json", '{"model": {"type": "BPE", "vocab": {"a": 0,')

    vocab, merges = read(FIX, "gpt2", "vocab.json"), read(FIX, "gpt2", "merges.txt")
    put("gpt2_files", "valid-gpt2", vocab + SEP + merges)
    put("gpt2_files", "valid-openai", read(FIX, "openai", "encoder.json") + SEP + read(FIX, "openai", "vocab.bpe"))
    put("gpt2_files", "bad-merge-unknown", vocab + SEP + b"#version: 0.2\nzz qq\n")
    put("gpt2_files", "bad-merge-spaces", vocab + SEP + b"a  b\n")
    put("gpt2_files", "bad-duplicate-id", b'{"a": 0, "b": 0}' + SEP)
    put("gpt2_files", "bad-no-bytes", b'{"a": 0}' + SEP)

    texts = [b"Hello world", b" The quick brown fox jumps over the lazy dog.\n\n", b"I'm   you'll 1234 !!",
             "caf\u00e9 \u4e2d\u6587 \U0001F600".encode(), b"\xff\xfe\xc3 invalid", b"<|endoftext|>a",
             b"\t\r\n \xe2\x80\xa8", b"hellohellohello the the the"]
    for i, x in enumerate(texts):
        put("bpe_gpt2", "text-%d" % i, bytes([i % 3]) + x)
        put("bpe_llama", "text-%d" % i, bytes([i % 4]) + x)
    put("bpe_llama", "text-marker", b"\x01" + "\u2581x \u2581".encode())


def seeds_spec():
    for name in ("default.ini", "paper.ini", "theory_oracle.ini"):
        put("spec", "valid-" + name, read(ROOT, "experiments", name))
    put("spec", "valid-small.ini", """[sweep]
name = small
methods = ar, sd, sprinter, oracle-iid, oracle-markov
[models]
draft = d
target = t
[data]
datasets = a.jsonl, b.txt
format = jsonl
n_prompts = 3
offset = 20
[decode]
max_new_tokens = 8
temperature = 0.7
top_k = 40
top_p = 0.9
stop_at_eos = true
[grid]
seeds = 1, 2
lambda = 1.0, 1.5
tau = 0.3
   0.6
gamma = 3
max_run = 0
eta_fp = 0.2
eta_tp = 0.9
oracle_stay = 0.5
[verifier]
data = v.jsonl
n_prompts = 12
max_new = 8
seed = 3
""")
    put("spec", "bad-unknown-key.ini", "[sweep]\nmethods = ar\nfoo = 1\n")
    put("spec", "bad-range.ini", "[sweep]\nmethods = sd\n[grid]\ngamma = 0, 65\n")
    put("spec", "bad-twice.ini", "[decode]\nmax_new_tokens = 1\nmax_new_tokens = 2\n")
    put("spec", "bad-syntax.ini", "[sweep\nmethods = ar\n")
    put("spec", "bad-long-line.ini", "[grid]\nseeds = " + ", ".join(str(i) for i in range(400)) + "\n")
    put("spec", "bad-missing.ini", "[sweep]\nmethods = ar\n[models]\ntarget = t\n")


def seeds_dataset():
    jl = "\n".join(json.dumps({"id": "ex%d" % i, "prompt": "the prompt %d" % i, "reference": " ref",
                               "source": "s"}) for i in range(3)) + "\n"
    put("dataset", "valid-jsonl", b"\x00" + jl.encode())
    put("dataset", "valid-jsonl-max1", b"\x15" + jl.encode())
    sb = "\n".join(json.dumps({"question_id": 81 + i, "category": "writing", "turns": ["Write %d." % i, "More."]})
                   for i in range(3)) + "\n"
    put("dataset", "valid-specbench", b"\x02" + sb.encode())
    sbr = "\n".join(json.dumps(q) for q in (
        {"question_id": 111, "category": "math", "turns": ["What is 2 + 3?", "And times 4?"], "reference": ["5", "20"]},
        {"question_id": 481, "category": "rag", "turns": ["Context. Question?"], "reference": [["a", "b c"]]},
        {"question_id": 321, "category": "qa", "turns": ["who wrote it"]})) + "\n"
    put("dataset", "valid-specbench-refs", b"\x02" + sbr.encode())
    put("dataset", "valid-lm1b", b"\x0b" + b"The cat sat on the mat .\n  \nA b c d e f g h i j\nshort\n")
    put("dataset", "valid-wikisum-csv", b"\x05" + b'id,summary,title\n1,"A long, quoted summary with ""quotes"" here",t\n'
        b'2,plain summary text here,u\r\n')
    put("dataset", "valid-wikisum-jsonl", b"\x04" + (json.dumps({"text": "one two three four five"}) + "\n").encode())
    put("dataset", "bad-not-json", b"\x01" + b"{\"prompt\": \n")
    put("dataset", "bad-empty-prompt", b"\x01" + b'{"prompt": ""}\n')
    put("dataset", "bad-csv-quote", b"\x05" + b'summary\n"unterminated\n')
    put("dataset", "bad-csv-no-column", b"\x05" + b"a,b\n1,2\n")
    put("dataset", "bad-turns", b"\x02" + b'{"turns": [1]}\n')
    put("dataset", "bad-empty", b"\x03")


def seeds_h5(sprinter, work, models):
    """A token log from a tiny sweep and a verifier collect file, plus broken copies."""
    tok = os.path.join(FIX, "gpt2")
    for name, cfg in (("target", {"n_embd": 16, "n_layer": 1, "n_head": 2, "seed": 1}),
                      ("draft", {"n_embd": 8, "n_layer": 1, "n_head": 2, "seed": 2})):
        c = {"model_type": "gpt2", "vocab_size": 269, "n_embd": cfg["n_embd"], "n_layer": cfg["n_layer"],
             "n_head": cfg["n_head"], "n_positions": 64, "bos_token_id": 268, "eos_token_id": 268}
        cp = os.path.join(work, name + "-cfg.json")
        with open(cp, "w") as f:
            json.dump(c, f)
        subprocess.run([sprinter, "init-random", "--arch", "gpt2", "--config", cp, "--seed", str(cfg["seed"]),
                        "--out", os.path.join(work, name)], check=True, stdout=subprocess.DEVNULL)
        for fn in ("vocab.json", "merges.txt"):
            shutil.copy(os.path.join(tok, fn), os.path.join(work, name))
    data = os.path.join(work, "data.jsonl")
    with open(data, "w") as f:
        for i in range(4):
            f.write(json.dumps({"id": str(i), "prompt": "hello the test %d" % i, "reference": " x"}) + "\n")
    spec = os.path.join(work, "s.ini")
    with open(spec, "w") as f:
        f.write("[sweep]\nname = s\nmethods = sd\n[models]\ndraft = %s/draft\ntarget = %s/target\n"
                "[data]\ndatasets = %s\nn_prompts = 2\n[decode]\nmax_new_tokens = 4\n[grid]\ngamma = 2\n"
                % (work, work, data))
    out = os.path.join(work, "res")
    subprocess.run([sprinter, "sweep", spec, "--out", out, "--quiet"], check=True, stdout=subprocess.DEVNULL)
    logs = sorted(os.listdir(os.path.join(out, "tokens")))
    tl = read(out, "tokens", logs[0])
    put("h5", "valid-tokenlog.h5", tl)
    col = os.path.join(work, "collect.h5")
    subprocess.run([sprinter, "collect", "--draft", work + "/draft", "--target", work + "/target", "--data", data,
                    "--lambda", "1.5", "--out", col, "--n-prompts", "2", "--max-new", "3"], check=True,
                   stdout=subprocess.DEVNULL)
    put("h5", "valid-collect.h5", read(col))
    put("h5", "bad-truncated.h5", tl[: len(tl) // 2])
    put("h5", "bad-not-hdf5.h5", b"\x89HDF\r\n\x1a\n" + b"\0" * 64)
    put("h5", "bad-empty.h5", b"")
    for name in ("valid-tokenlog.h5", "bad-truncated.h5", "bad-not-hdf5.h5"):
        put("tokread", name, read(ROOT, "fuzz", "corpus", "h5", name))
    # bad-huge-unwritten-2e30.h5 (h5, tokread) is hand-made, kept as is: chunked datasets claiming 2^30
    # rows with nothing written (HDF5 C API: H5Dcreate2 with dims {1 << 30}, no H5Dwrite)
    return tl


def seeds_chat_template():
    """The published and construct templates of tests/chat/test_chat_template.py (valid-*) and the
    ones outside the subset (bad-*)."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("ctt", os.path.join(ROOT, "tests", "chat", "test_chat_template.py"))
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    slug = lambda name: re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")  # noqa: E731
    for name, t in list(m.PUBLISHED.items()) + list(m.CONSTRUCTS.items()):
        put("chat_template", "valid-" + slug(name), t)
    for name, t in m.OUTSIDE.items():
        put("chat_template", "bad-" + slug(name), t)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sprinter", default=os.path.join(ROOT, "build", "sprinter"))
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="spseeds.")
    try:
        models = tiny_models(a.sprinter, work)
        seeds_safetensors(models)
        seeds_config(models)
        seeds_model(models)
        seeds_tokenizers()
        seeds_spec()
        seeds_dataset()
        seeds_chat_template()
        seeds_h5(a.sprinter, work, models)
        seeds_gguf(a.sprinter, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for t in sorted(os.listdir(os.path.join(ROOT, "fuzz", "corpus"))):
        d = os.path.join(ROOT, "fuzz", "corpus", t)
        print("%-16s %3d files %8d bytes" % (t, len(os.listdir(d)),
                                              sum(os.path.getsize(os.path.join(d, f)) for f in os.listdir(d))))


if __name__ == "__main__":
    sys.exit(main())
