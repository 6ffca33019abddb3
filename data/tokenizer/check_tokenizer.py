#!/usr/bin/python3
"""Checks the trained tokenizer.

  /usr/bin/python3 data/tokenizer/check_tokenizer.py [--dir data/models/tokenizer]
        [--sprinter build/sprinter] [--lines 300]

1. Round trip: decode(encode(line)) == line for every line of the test split, plus a few edge
   cases (non-ASCII, digits, contractions, runs of spaces, tabs/newlines inside text).
2. Consistency: ids of tokenizer.json's vocab/merges == vocab.json/merges.txt; every merge's
   result is in the vocab; <|endoftext|> is the last id.
3. With --sprinter: `sprinter tokenize --model DIR --text LINE` must print the same ids as this
   encoder for the first --lines test lines and the edge cases, once with the directory as is
   (tokenizer.json is preferred by the engine) and once with only vocab.json + merges.txt.
Prints a summary; exits 1 on the first mismatch, naming it.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import bpe  # noqa: E402

EDGE = [
    "Hello world", "Hello  world  ", "  leading spaces", "it's they're we've I'm you'll he'd",
    "IT'S DON'T", "numbers 12345 and 3.14159, 1,000,000", "tabs\tand\nnewlines\n\nhere",
    "café naïve résumé Ærøskøbing — “quotes” ‘single’", "日本語のテキスト", "emoji 😀 ok",
    "punctuation!!! ??? ... --- (parens) [brackets] {braces}", "a", " ", "x  \n y",
    "Œuvre: Ωmega ß straße", "<|endoftext|>",
]


def die(msg):
    print("check_tokenizer: FAIL: " + msg)
    sys.exit(1)


def sprinter_ids(binary, d, text):
    r = subprocess.run([binary, "tokenize", "--model", d, "--text", text],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if r.returncode != 0:
        die(f"sprinter tokenize failed on {text[:60]!r}: {r.stderr.decode(errors='replace').strip()}")
    return [int(x) for x in r.stdout.decode().split()]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dir", default=os.path.join(DATA, "models", "tokenizer"))
    ap.add_argument("--test", default=os.path.join(DATA, "corpus", "out", "test.txt"))
    ap.add_argument("--sprinter")
    ap.add_argument("--lines", type=int, default=300)
    a = ap.parse_args()
    enc = bpe.Encoder.load(a.dir)
    V = len(enc.vocab)
    if enc.vocab.get(bpe.EOT) != V - 1:
        die(f"{bpe.EOT} is not the last id")
    if sorted(enc.vocab.values()) != list(range(V)):
        die("vocab ids are not 0..V-1")
    for (x, y) in enc.ranks:
        if x + y not in enc.vocab:
            die(f"merge {x} {y}: result not in vocab")
    tj = os.path.join(a.dir, "tokenizer.json")
    if os.path.exists(tj):
        with open(tj, encoding="utf-8") as f:
            t = json.load(f)
        if t["model"]["vocab"] != enc.vocab:
            die("tokenizer.json vocab differs from vocab.json")
        if [tuple(m.split(" ")) for m in t["model"]["merges"]] != sorted(enc.ranks, key=enc.ranks.get):
            die("tokenizer.json merges differ from merges.txt")

    with open(a.test, encoding="utf-8") as f:
        lines = [l.rstrip("\n") for l in f if l.strip()]
    nbytes = ntok = 0
    for line in lines + EDGE:
        ids = enc.encode(line)
        back = enc.decode(ids, skip_special=False)
        if back != line:
            die(f"round trip: {line[:80]!r} -> {back[:80]!r}")
        if line in lines:
            nbytes += len(line.encode("utf-8"))
            ntok += len(ids)
    print(f"check_tokenizer: round trip OK on {len(lines)} test lines + {len(EDGE)} edge cases; "
          f"vocab {V}, {nbytes / ntok:.3f} bytes/token on the test split")

    if a.sprinter:
        sample = lines[:a.lines] + [e for e in EDGE if e != bpe.EOT and e.strip()]
        tmp = tempfile.mkdtemp()
        try:
            for f in ("vocab.json", "merges.txt"):
                shutil.copyfile(os.path.join(a.dir, f), os.path.join(tmp, f))
            dirs = [(a.dir, "as shipped")] + [(tmp, "vocab.json + merges.txt only")]
            for d, what in dirs:
                for line in sample:
                    want, got = enc.encode(line), sprinter_ids(a.sprinter, d, line)
                    if want != got:
                        i = next((k for k in range(min(len(want), len(got))) if want[k] != got[k]),
                                 min(len(want), len(got)))
                        die(f"sprinter ({what}) differs on {line[:80]!r} at token {i}: "
                            f"python {want[i:i + 5]} vs C {got[i:i + 5]}")
                print(f"check_tokenizer: sprinter ids == python ids on {len(sample)} lines ({what})")
        finally:
            shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
