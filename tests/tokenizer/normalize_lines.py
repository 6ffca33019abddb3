#!/usr/bin/python3
"""normalize_lines.py - the text a tokenizer's decode must give back: each line under the Unicode
normalization form of its tokenizer.json normalizer (Qwen2/3: NFC), by Python's unicodedata (an
oracle independent of the ICU the C side uses).

    normalize_lines.py TOKENIZER_JSON LINES OUT

LINES and OUT: one JSON string per line. A tokenizer without a normalizer copies the lines. As in
Hugging Face tokenizers, the added tokens (normalized: false) are split out of the raw text first and
only the stretches between them are normalized ("<tool_response>" + U+0338 keeps its ">", which NFC
of the whole line would fuse into U+226F).
"""
import json
import re
import sys
import unicodedata


def main():
    tok_path, lines, out = sys.argv[1:4]
    with open(tok_path, encoding="utf-8") as f:
        tok = json.load(f)
    norm = tok.get("normalizer")
    form = norm["type"] if norm else None
    added = sorted((a["content"] for a in tok.get("added_tokens", []) if not a.get("normalized")), key=len, reverse=True)
    split = re.compile("(" + "|".join(map(re.escape, added)) + ")") if added else None
    if form not in (None, "NFC", "NFD", "NFKC", "NFKD"):
        sys.exit(f"normalize_lines.py: {tok_path}: normalizer {form} is not a Unicode normalization form")
    with open(lines, encoding="utf-8") as f, open(out, "w", encoding="utf-8") as o:
        for line in f:
            text = json.loads(line)
            parts = split.split(text) if split else [text]  # odd indices: the added tokens
            if form:
                parts = [p if i % 2 else unicodedata.normalize(form, p) for i, p in enumerate(parts)]
            o.write(json.dumps("".join(parts)) + "\n")


if __name__ == "__main__":
    main()
