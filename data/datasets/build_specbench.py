#!/usr/bin/python3
"""Builds specbench.jsonl: Spec-Bench's question.jsonl layout filled with Debian text.

  /usr/bin/python3 data/datasets/build_specbench.py

Spec-Bench (hemingkx/Spec-Bench, data/spec_bench/question.jsonl) mixes texts under several licences
(MT-bench, WMT14, CNN/DailyMail, Natural Questions, GSM8K, DPR), so the harness does not ship it.
This file has its exact structure instead, so that everything Spec-Bench's users run goes through
the same code: the same 480 question_ids (81..560), the same 13 categories in the same id ranges,
2 turns for the 80 MT-bench questions and 1 for the rest, and a "reference" list exactly where the
real file has one (359 questions: 39 of MT-bench's, one string per turn, and every translation,
summarization, math_reasoning and rag question; qa has none). The texts come from the held-out
TEST split (data/corpus/out/test.jsonl) and are continuation tasks, since the harness's models are
base models trained on that corpus:
  MT-bench categories  turn k = the first 30% of the words of a dictionary/encyclopedia entry
                       (40..150 words); reference[k] = the rest of it
  translation          the first 40% of a sentence of 8..30 words; reference = the rest
  summarization        the first 80% of a long document (150..700 words); reference = the rest
  qa                   the first half of a short sentence (8..16 words); no reference
  math_reasoning       a seeded arithmetic word problem; reference = "The answer is N."
  rag                  a retrieved entry, a blank line, then the first 30% of another entry;
                       reference = the rest of the second one
Selection is deterministic (candidates ordered by sha256 of "specbench:<kind>:<document id>"), and no
document is used twice. Fields are written in Spec-Bench's order: question_id, category, turns,
reference.
"""
import hashlib
import json
import math
import os
import random
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
TEST = os.path.join(os.path.dirname(HERE), "corpus", "out", "test.jsonl")
OUT = os.path.join(HERE, "specbench.jsonl")
ENTRY_SOURCES = {"dict-gcide", "dict-wn", "dict-foldoc", "dict-jargon", "dict-devil"}
# Spec-Bench's categories and their question_id ranges (inclusive), in file order
CATEGORIES = [("writing", 81, 90), ("roleplay", 91, 100), ("reasoning", 101, 110), ("math", 111, 120),
              ("coding", 121, 130), ("extraction", 131, 140), ("stem", 141, 150), ("humanities", 151, 160),
              ("translation", 161, 240), ("summarization", 241, 320), ("qa", 321, 400),
              ("math_reasoning", 401, 480), ("rag", 481, 560)]
MT_BENCH = {"writing", "roleplay", "reasoning", "math", "coding", "extraction", "stem", "humanities"}
# the MT-bench questions whose real entry carries a reference list
MT_WITH_REFERENCE = {95, *range(101, 123), *range(124, 132), 133, 134, 136, 140, 142, 143, 144, 145}


def key(kind, did):
    return hashlib.sha256(f"specbench:{kind}:{did}".encode("utf-8")).hexdigest()


def split_words(text, frac):
    """(prompt, reference) after the first ceil(frac * words) words; the reference keeps its space."""
    words = text.split(" ")
    k = max(1, min(len(words) - 1, math.ceil(frac * len(words))))
    prompt = " ".join(words[:k])
    return prompt, text[len(prompt):]


class Pool:
    """Documents of one kind in key order, each handed out once across all kinds."""

    def __init__(self, docs, kind, ok, used):
        self.items = sorted((d for d in docs if ok(d)), key=lambda d: key(kind, d["id"]))
        self.kind, self.used, self.i = kind, used, 0

    def take(self):
        while self.i < len(self.items) and self.items[self.i]["id"] in self.used:
            self.i += 1
        if self.i == len(self.items):
            sys.exit(f"build_specbench: {TEST}: too few documents for {self.kind}")
        d = self.items[self.i]
        self.used.add(d["id"])
        return d


def n_words(d):
    return len(d["text"].split(" "))


def first_sentence(d, lo, hi):
    s = d["text"].split(". ")[0].rstrip(".") + "."
    return s if lo <= len(s.split(" ")) <= hi and "://" not in s else None


def word_problem(rng):
    name = rng.choice(["Ada", "Ben", "Cleo", "Dev", "Eli", "Fay", "Gus", "Ines"])
    thing = rng.choice(["apples", "books", "coins", "pencils", "shells", "stamps", "tickets"])
    a, b, c = rng.randint(3, 60), rng.randint(2, 40), rng.randint(2, 9)
    if rng.random() < 0.5:
        text = (f"{name} has {a} {thing}. A friend gives {name} {b} more, and then {name} buys {c} boxes "
                f"with {c} {thing} in each. How many {thing} does {name} have now?")
        return text, a + b + c * c
    text = (f"{name} had {a + b} {thing} and gave {b} of them away. {name} then split the rest equally into "
            f"{c} bags and kept the leftover. How many {thing} are in each bag?")
    return text, a // c


def main():
    if not os.path.exists(TEST):
        sys.exit(f"build_specbench: {TEST}: missing (run make corpus)")
    with open(TEST, encoding="utf-8") as f:
        docs = [json.loads(line) for line in f]
    used = set()
    entries = Pool(docs, "entry", lambda d: d["source"] in ENTRY_SOURCES and 40 <= n_words(d) <= 150
                   and "://" not in d["text"], used)
    long_docs = Pool(docs, "long", lambda d: 150 <= n_words(d) <= 700 and "://" not in d["text"], used)
    sentences = Pool(docs, "sentence", lambda d: first_sentence(d, 8, 30) is not None, used)
    short = Pool(docs, "short", lambda d: first_sentence(d, 8, 16) is not None, used)
    rng = random.Random(15)
    rows = []
    for category, lo, hi in CATEGORIES:
        for qid in range(lo, hi + 1):
            turns, refs = [], []
            if category in MT_BENCH:
                for _ in range(2):
                    p, r = split_words(entries.take()["text"], 0.3)
                    turns.append(p)
                    refs.append(r)
            elif category == "translation":
                p, r = split_words(first_sentence(sentences.take(), 8, 30), 0.4)
                turns, refs = [p], [r]
            elif category == "summarization":
                p, r = split_words(long_docs.take()["text"], 0.8)
                turns, refs = [p], [r]
            elif category == "qa":
                turns = [split_words(first_sentence(short.take(), 8, 16), 0.5)[0]]
            elif category == "math_reasoning":
                text, answer = word_problem(rng)
                turns, refs = [text], [f"The answer is {answer}."]
            else:  # rag
                context = entries.take()["text"]
                p, r = split_words(entries.take()["text"], 0.3)
                turns, refs = [context + "\n\n" + p], [r]
            row = {"question_id": qid, "category": category, "turns": turns}
            if category not in MT_BENCH and category != "qa" or qid in MT_WITH_REFERENCE:
                row["reference"] = refs
            rows.append(row)
    with open(OUT + ".tmp", "w", encoding="utf-8", newline="\n") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    os.replace(OUT + ".tmp", OUT)
    n_ref = sum("reference" in r for r in rows)
    print(f"build_specbench: wrote {OUT} ({len(rows)} questions, {n_ref} with references)")


if __name__ == "__main__":
    main()
