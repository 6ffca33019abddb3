#!/usr/bin/python3
"""make_llama2.py - a Hugging Face tokenizer.json for LLaMA-1/2 from llama-tokenizer-js's data.

    make_llama2.py LLAMA_TOKENIZER_JS OUT_DIR

llama-tokenizer-js@1.2.2 (npm) embeds the real LLaMA-1/2 32,000-token SentencePiece vocabulary
and its merges in llama-tokenizer.js, as two string constants (see its data-conversion.py):
  llama_vocab_base64   base64 of the tokens, UTF-8, joined by "\\n"; line i is token id i;
  llama_merges_binary  base64 of little-endian uint16 pairs (left id, right id), one merge per
                       4 bytes, in rank order.
This script decodes both and writes OUT_DIR/tokenizer.json laid out as Hugging Face's
meta-llama/Llama-2-7b-hf tokenizer.json (BPE, byte_fallback, fuse_unk, <unk> <s> </s> as
special added tokens, Prepend("▁") + Replace(" " -> "▁") normalizer, no pre-tokenizer,
Replace/ByteFallback/Fuse/Strip decoder) and OUT_DIR/tokenizer_config.json (add_bos_token true,
add_eos_token false, legacy true). Exit status 1 when the data does not look like LLaMA's.
"""
import base64
import json
import os
import re
import struct
import sys

SPACE = "\u2581"


def constant(src, name):
    m = re.search(r'const %s = "([A-Za-z0-9+/=]+)"' % name, src)
    if not m:
        sys.exit(f"make_llama2.py: constant {name} not found in llama-tokenizer.js")
    return base64.b64decode(m.group(1))


def decode(path):
    with open(path, encoding="utf-8") as f:
        src = f.read()
    vocab = constant(src, "llama_vocab_base64").decode("utf-8").split("\n")
    raw = constant(src, "llama_merges_binary")
    if len(raw) % 4:
        sys.exit("make_llama2.py: llama_merges_binary is not a whole number of uint16 pairs")
    ids = struct.unpack("<%dH" % (len(raw) // 2), raw)
    merges = [vocab[ids[i]] + " " + vocab[ids[i + 1]] for i in range(0, len(ids), 2)]
    return vocab, merges


def check(vocab, merges):
    """The facts of the LLaMA-1/2 vocabulary this test relies on (not Mistral's)."""
    want = {0: "<unk>", 1: "<s>", 2: "</s>", 3: "<0x00>", 13: "<0x0A>", 258: "<0xFF>",
            259: SPACE + SPACE, 29871: SPACE, 15043: SPACE + "Hello"}
    bad = [f"id {i}: want {w!r}, have {vocab[i]!r}" for i, w in want.items()
           if i >= len(vocab) or vocab[i] != w]
    if len(vocab) != 32000 or len(set(vocab)) != 32000:
        bad.append(f"{len(vocab)} tokens ({len(set(vocab))} distinct), want 32000")
    if bad:
        sys.exit("make_llama2.py: not the LLaMA-1/2 vocabulary: " + "; ".join(bad))
    tokens = set(vocab)
    for m in merges:
        a, b = m.split(" ")
        if a + b not in tokens:
            sys.exit(f"make_llama2.py: merge {m!r} gives no token")


def tokenizer_json(vocab, merges):
    special = [{"id": i, "content": vocab[i], "single_word": False, "lstrip": False,
                "rstrip": False, "normalized": False, "special": True} for i in range(3)]
    bos = {"SpecialToken": {"id": "<s>", "type_id": 0}}
    return {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": special,
        "normalizer": {"type": "Sequence", "normalizers": [
            {"type": "Prepend", "prepend": SPACE},
            {"type": "Replace", "pattern": {"String": " "}, "content": SPACE}]},
        "pre_tokenizer": None,
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [bos, {"Sequence": {"id": "A", "type_id": 0}}],
            "pair": [bos, {"Sequence": {"id": "A", "type_id": 0}},
                     {"SpecialToken": {"id": "<s>", "type_id": 1}},
                     {"Sequence": {"id": "B", "type_id": 1}}],
            "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}}},
        "decoder": {"type": "Sequence", "decoders": [
            {"type": "Replace", "pattern": {"String": SPACE}, "content": " "},
            {"type": "ByteFallback"}, {"type": "Fuse"},
            {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
        "model": {"type": "BPE", "dropout": None, "unk_token": "<unk>",
                  "continuing_subword_prefix": None, "end_of_word_suffix": None,
                  "fuse_unk": True, "byte_fallback": True,
                  "vocab": {t: i for i, t in enumerate(vocab)}, "merges": merges},
    }


def tokenizer_config():
    return {"add_bos_token": True, "add_eos_token": False, "bos_token": "<s>",
            "eos_token": "</s>", "unk_token": "<unk>", "legacy": True, "pad_token": None,
            "clean_up_tokenization_spaces": False, "tokenizer_class": "LlamaTokenizer",
            "model_max_length": 4096}


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    vocab, merges = decode(sys.argv[1])
    check(vocab, merges)
    os.makedirs(sys.argv[2], exist_ok=True)
    for name, data in (("tokenizer.json", tokenizer_json(vocab, merges)),
                       ("tokenizer_config.json", tokenizer_config())):
        with open(os.path.join(sys.argv[2], name), "w", encoding="utf-8") as f:
            json.dump(data, f, ensure_ascii=False)
    print(f"llama-2 tokenizer.json: {len(vocab)} tokens, {len(merges)} merges")


if __name__ == "__main__":
    main()
