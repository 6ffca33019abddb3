#!/usr/bin/python3
"""make_fixtures.py - writes the tiny tokenizers used by tests/test_tokenizer.c.

    make_fixtures.py [OUT_DIR]   (default: tests/tokenizer/fixtures next to this script)

The files are committed; rerun only when changing the fixtures, and then re-derive the expected
encodings in test_tokenizer.c by hand. Layout (ids are what the unit test relies on):

GPT-2 (gpt2/vocab.json + merges.txt, openai/encoder.json + vocab.bpe, gpt2_json/tokenizer.json):
  ids 0..255   the 256 byte-level tokens in GPT-2's order: the printable bytes '!'..'~' (0..93),
               0xA1..0xAC (94..105), 0xAE..0xFF (106..187), then the other bytes 0x00..0x20,
               0x7F..0xA0, 0xAD (188..255); so ' ' ("Ġ") is 220 and '\\n' ("Ċ") is 198, as in GPT-2
  256.. merges, in rank order:
      0 Ġ t -> Ġt 256     4 e l -> el 260       8 aa aa -> aaaa 264
      1 h e -> he 257     5 ll o -> llo 261     9 Ġ Ġ -> ĠĠ 265
      2 Ġt he -> Ġthe 258 6 he llo -> hello 262 10 ' s -> 's 266
      3 l l -> ll 259     7 a a -> aa 263       11 1 2 -> 12 267
  268 <|endoftext|>
gpt2_json/tokenizer.json has the same tables, merges as [a, b] pairs, ByteLevel pre-tokenizer;
gpt2_prefix/tokenizer.json the same with add_prefix_space true.

Llama (llama/tokenizer.json, shaped like Llama-2's; llama_metaspace/tokenizer.json, the older
Metaspace form with merges as pairs):
  0 <unk>  1 <s>  2 </s>  3..258 <0x00>..<0xFF>
  259 ▁  260 h  261 e  262 l  263 o  264 w  265 r  266 d  267 t  268 a
  merges, in rank order:
      0 l l -> ll 269        4 ▁hell o -> ▁hello 273   8 ▁ ▁ -> ▁▁ 277
      1 ▁ h -> ▁h 270        5 ▁ w -> ▁w 274           9 a a -> aa 278
      2 e ll -> ell 271      6 o r -> or 275
      3 ▁h ell -> ▁hell 272  7 ▁w or -> ▁wor 276
"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts", "pylib"))
from gpt2_bytes import bytes_to_unicode  # noqa: E402  (in GPT-2's id order)


GPT2_MERGES = [("Ġ", "t"), ("h", "e"), ("Ġt", "he"), ("l", "l"), ("e", "l"), ("ll", "o"),
               ("he", "llo"), ("a", "a"), ("aa", "aa"), ("Ġ", "Ġ"), ("'", "s"), ("1", "2")]

LLAMA_CHARS = ["▁", "h", "e", "l", "o", "w", "r", "d", "t", "a"]
LLAMA_MERGES = [("l", "l"), ("▁", "h"), ("e", "ll"), ("▁h", "ell"), ("▁hell", "o"), ("▁", "w"),
                ("o", "r"), ("▁w", "or"), ("▁", "▁"), ("a", "a")]


def gpt2_vocab():
    vocab = {}
    for i, (_, ch) in enumerate(bytes_to_unicode()):
        vocab[ch] = i
    for a, b in GPT2_MERGES:
        vocab[a + b] = len(vocab)
    vocab["<|endoftext|>"] = len(vocab)
    return vocab


def llama_vocab():
    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2}
    for b in range(256):
        vocab["<0x%02X>" % b] = len(vocab)
    for ch in LLAMA_CHARS:
        vocab[ch] = len(vocab)
    for a, b in LLAMA_MERGES:
        vocab[a + b] = len(vocab)
    return vocab


def added(content, id_):
    return {"id": id_, "content": content, "single_word": False, "lstrip": False, "rstrip": False,
            "normalized": False, "special": True}


def gpt2_json(add_prefix_space):
    vocab = gpt2_vocab()
    level = {"type": "ByteLevel", "add_prefix_space": add_prefix_space, "trim_offsets": True,
             "use_regex": True}
    return {"version": "1.0", "truncation": None, "padding": None,
            "added_tokens": [added("<|endoftext|>", vocab["<|endoftext|>"])],
            "normalizer": None, "pre_tokenizer": level, "post_processor": level,
            "decoder": level,
            "model": {"type": "BPE", "dropout": None, "unk_token": None,
                      "continuing_subword_prefix": "", "end_of_word_suffix": "",
                      "fuse_unk": False, "byte_fallback": False, "vocab": vocab,
                      "merges": [[a, b] for a, b in GPT2_MERGES]}}


def llama_json():
    return {"version": "1.0", "truncation": None, "padding": None,
            "added_tokens": [added("<unk>", 0), added("<s>", 1), added("</s>", 2)],
            "normalizer": {"type": "Sequence", "normalizers": [
                {"type": "Prepend", "prepend": "▁"},
                {"type": "Replace", "pattern": {"String": " "}, "content": "▁"}]},
            "pre_tokenizer": None,
            "post_processor": {"type": "TemplateProcessing", "single": [
                {"SpecialToken": {"id": "<s>", "type_id": 0}},
                {"Sequence": {"id": "A", "type_id": 0}}]},
            "decoder": {"type": "Sequence", "decoders": [
                {"type": "Replace", "pattern": {"String": "▁"}, "content": " "},
                {"type": "ByteFallback"}, {"type": "Fuse"},
                {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
            "model": {"type": "BPE", "dropout": None, "unk_token": "<unk>",
                      "continuing_subword_prefix": None, "end_of_word_suffix": None,
                      "fuse_unk": True, "byte_fallback": True, "vocab": llama_vocab(),
                      "merges": [a + " " + b for a, b in LLAMA_MERGES]}}


def llama_metaspace_json():
    j = llama_json()
    j["normalizer"] = None
    j["pre_tokenizer"] = {"type": "Metaspace", "replacement": "▁", "add_prefix_space": True}
    j["decoder"] = {"type": "Metaspace", "replacement": "▁", "add_prefix_space": True}
    j["model"]["merges"] = [[a, b] for a, b in LLAMA_MERGES]
    return j


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "fixtures")
    vocab = json.dumps(gpt2_vocab(), ensure_ascii=False)
    merges = "#version: 0.2\n" + "".join(f"{a} {b}\n" for a, b in GPT2_MERGES)
    write(f"{out}/gpt2/vocab.json", vocab)
    write(f"{out}/gpt2/merges.txt", merges)
    write(f"{out}/openai/encoder.json", vocab)
    write(f"{out}/openai/vocab.bpe", merges)
    write(f"{out}/gpt2_json/tokenizer.json", json.dumps(gpt2_json(False), ensure_ascii=False, indent=1))
    write(f"{out}/gpt2_prefix/tokenizer.json", json.dumps(gpt2_json(True), ensure_ascii=False, indent=1))
    write(f"{out}/llama/tokenizer.json", json.dumps(llama_json(), ensure_ascii=False, indent=1))
    write(f"{out}/llama_metaspace/tokenizer.json",
          json.dumps(llama_metaspace_json(), ensure_ascii=False, indent=1))


if __name__ == "__main__":
    main()
