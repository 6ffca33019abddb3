#!/usr/bin/python3
"""Builds the evaluation prompt sets from the held-out TEST split only (data/corpus/out/test.jsonl).

  /usr/bin/python3 data/datasets/build_datasets.py [--n 1000]

Outputs (JSONL, one {"id","prompt","reference","source"} per line, ids in file order):
  encyclopedic.jsonl  Wiki-Summary analogue: whole dictionary/encyclopedia entries (GCIDE,
                      WordNet, FOLDOC, Jargon File, Devil's Dictionary) of 40..150 words, mostly
                      words (>= 80% of the whitespace tokens contain a letter, no URL);
                      prompt = first ceil(30%) of the words, reference = the rest.
  sentences.jsonl     LM1B analogue: single sentences of 8..30 words cut from test documents
                      (any source) that start with a capital letter and end in . ! or ?
                      (optionally followed by a closing quote), mostly words; at most one sentence
                      per document, not ending in "X." or "3." (abbreviation / list number),
                      at most one ';'; documents used by encyclopedic.jsonl are excluded;
                      prose sources (fortunes, FOLDOC, Jargon File, Devil's Dictionary, Reuters)
                      come first, GCIDE/WordNet definition phrases only fill up to N;
                      prompt = first round(40%) of the words, reference = the rest.
Words are the single-space-separated tokens of the (whitespace-normalised) text, and
prompt + reference == text exactly: the reference starts with the space that separated it.
Selection is deterministic: candidates are ordered by sha256 of "<set>:<document id>" and the
first N are taken (then written in that order). "source" is the document id in the corpus
("package:headword-or-file").
"""
import argparse
import hashlib
import json
import math
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.dirname(HERE)
TEST = os.path.join(DATA, "corpus", "out", "test.jsonl")
ENTRY_SOURCES = {"dict-gcide", "dict-wn", "dict-foldoc", "dict-jargon", "dict-devil"}
DEFINITION_SOURCES = {"dict-gcide", "dict-wn"}  # mostly definition phrases, not sentences
SENT_SPLIT = re.compile(r"(?<=[.!?])(?:[\"'”’])? (?=[\"'“]?[A-Z])")
SENT_OK = re.compile(r"^[\"'“]?[A-Z][^<>{}|\\_=~^*#@]*[.!?][\"'”’]?$")


def wordy(words, frac):
    alpha = sum(1 for w in words if re.search(r"[A-Za-z]", w))
    return alpha >= frac * len(words)


def key(tag, did):
    return hashlib.sha256(f"{tag}:{did}".encode("utf-8")).hexdigest()


def split_prompt(text, frac, rounding):
    words = text.split(" ")
    k = max(1, min(len(words) - 1, rounding(frac * len(words))))
    prompt = " ".join(words[:k])
    ref = text[len(prompt):]
    assert prompt + ref == text and ref.startswith(" ")
    return prompt, ref


def sentences_of(text):
    # split after . ! ? (and a closing quote) followed by a space and a capital letter
    out, start = [], 0
    for m in SENT_SPLIT.finditer(text):
        end = m.start() + len(m.group(0)) - 1  # keep the closing quote, drop the space
        out.append(text[start:end])
        start = m.end()
    out.append(text[start:])
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=1000, help="prompts per set")
    ap.add_argument("--out", default=HERE)
    a = ap.parse_args()
    if not os.path.exists(TEST):
        sys.exit(f"build_datasets: {TEST}: missing (run make corpus)")
    docs = []
    with open(TEST, encoding="utf-8") as f:
        for line in f:
            docs.append(json.loads(line))
    if not docs:
        sys.exit(f"build_datasets: {TEST}: empty")

    enc = []
    for d in docs:
        if d["source"] not in ENTRY_SOURCES:
            continue
        words = d["text"].split(" ")
        if 40 <= len(words) <= 150 and wordy(words, 0.8) and "://" not in d["text"]:
            enc.append(d)
    enc.sort(key=lambda d: key("encyclopedic", d["id"]))
    enc = enc[:a.n]
    used = {d["id"] for d in enc}

    sents = []
    for d in docs:
        if d["id"] in used:
            continue
        best = None
        for s in sentences_of(d["text"]):
            w = s.split(" ")
            if 8 <= len(w) <= 30 and SENT_OK.match(s) and wordy(w, 0.9) and "://" not in s \
                    and not re.search(r"(\b[A-Za-z]|\d)\.$", s) and s.count(";") <= 1:
                k = key("sentences", d["id"] + "#" + s)
                if best is None or k < best[0]:
                    best = (k, s)
        if best:
            tier = 1 if d["source"] in DEFINITION_SOURCES else 0
            sents.append(((tier, key("sentences", d["id"])), d, best[1]))
    sents.sort(key=lambda t: t[0])
    seen, picked = set(), []
    for _, d, s in sents:
        if s not in seen:
            seen.add(s)
            picked.append((d, s))
        if len(picked) == a.n:
            break

    for name, items, frac, rnd, tag in (
            ("encyclopedic", [(d, d["text"]) for d in enc], 0.3, math.ceil, "enc"),
            ("sentences", picked, 0.4, round, "sent")):
        if len(items) < a.n:
            sys.exit(f"build_datasets: {name}: only {len(items)} candidates in the test split, "
                     f"wanted {a.n}")
        path = os.path.join(a.out, name + ".jsonl")
        with open(path + ".tmp", "w", encoding="utf-8", newline="\n") as f:
            for i, (d, text) in enumerate(items):
                p, r = split_prompt(text, frac, rnd)
                f.write(json.dumps({"id": f"{tag}-{i:04d}", "prompt": p, "reference": r,
                                    "source": d["id"]}, ensure_ascii=False) + "\n")
        os.replace(path + ".tmp", path)
        print(f"build_datasets: wrote {path} ({len(items)} prompts)")


if __name__ == "__main__":
    main()
