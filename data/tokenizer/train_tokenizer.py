#!/usr/bin/python3
"""Trains a GPT-2-format byte-level BPE tokenizer on the train split.

  /usr/bin/python3 data/tokenizer/train_tokenizer.py [--vocab-size 2048] [--input F] [--out DIR]

Algorithm (deterministic):
  1. Pre-tokenize every document (one per line) with the GPT-2 regex (bpe.PRETOKENIZE) and count
     the distinct pre-tokens; each becomes a sequence of byte symbols with its frequency.
  2. Count adjacent symbol pairs over that unique-word table (weighted by frequency) and keep, per
     pair, the set of words containing it.
  3. Repeat vocab_size - 257 times: take the most frequent pair (ties: the smaller pair of symbol
     ids, i.e. the earlier-created symbols), record it as the next merge, and rewrite only the
     words that contain it, updating the pair counts incrementally. A max-heap with lazy deletion
     finds the best pair.
Ids: 0..255 are the byte tokens in bytes_to_unicode() order (as GPT-2), 256.. the merges in
order, and <|endoftext|> is the last id (vocab_size - 1).

Writes vocab.json, merges.txt ("#version: 0.2" first line) and tokenizer.json (HF format, BPE
model + ByteLevel pre-tokenizer/decoder) via temporary files renamed at the end.
"""
import argparse
import collections
import heapq
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bpe  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.dirname(HERE)


def count_words(path):
    counts = collections.Counter()
    with open(path, encoding="utf-8") as f:
        buf = []
        size = 0
        for line in f:
            buf.append(line)
            size += len(line)
            if size > 4_000_000:
                counts.update(bpe.pretokenize("".join(buf)))
                buf, size = [], 0
        if buf:
            counts.update(bpe.pretokenize("".join(buf)))
    counts.pop("\n", None)  # the document separator; never part of a model input
    return counts


def train(counts, vocab_size, log=True):
    n_merges = vocab_size - 257
    # symbols: 0..255 = byte values; 256+k = k-th merge. sym_bytes[s] = its byte string.
    sym_bytes = [bytes([b]) for b in range(256)]
    words, freqs = [], []
    for w, c in sorted(counts.items()):
        words.append(list(w.encode("utf-8")))
        freqs.append(c)
    pair_count = collections.defaultdict(int)
    where = collections.defaultdict(set)
    for i, (w, f) in enumerate(zip(words, freqs)):
        for p in zip(w, w[1:]):
            pair_count[p] += f
            where[p].add(i)
    heap = [(-c, p) for p, c in pair_count.items()]
    heapq.heapify(heap)
    merges = []
    t0 = time.time()
    while len(merges) < n_merges and heap:
        negc, p = heapq.heappop(heap)
        if pair_count.get(p, 0) != -negc or negc == 0:
            continue  # stale heap entry
        a, b = p
        new = len(sym_bytes)
        sym_bytes.append(sym_bytes[a] + sym_bytes[b])
        merges.append(p)
        changed = set()
        for i in sorted(where.pop(p)):
            w, f = words[i], freqs[i]
            for q in zip(w, w[1:]):
                pair_count[q] -= f
                changed.add(q)
                s = where.get(q)
                if s is not None:
                    s.discard(i)
            out, j = [], 0
            while j < len(w):
                if j + 1 < len(w) and w[j] == a and w[j + 1] == b:
                    out.append(new)
                    j += 2
                else:
                    out.append(w[j])
                    j += 1
            words[i] = out
            for q in zip(out, out[1:]):
                pair_count[q] += f
                changed.add(q)
                where[q].add(i)
        pair_count.pop(p, None)
        for q in changed:
            c = pair_count.get(q, 0)
            if c > 0:
                heapq.heappush(heap, (-c, q))
            else:
                pair_count.pop(q, None)
                if not where.get(q):
                    where.pop(q, None)
        if log and (len(merges) % 500 == 0 or len(merges) == n_merges):
            print(f"train_tokenizer: {len(merges)}/{n_merges} merges, last {sym_bytes[new]!r} "
                  f"count {-negc}, {time.time() - t0:.0f}s", flush=True)
    if len(merges) < n_merges:
        raise SystemExit(f"train_tokenizer: only {len(merges)} merges possible, wanted {n_merges}")
    return sym_bytes, merges


def to_str(bs):
    return "".join(bpe.BYTE2CHAR[x] for x in bs)


def write(out, sym_bytes, merges):
    os.makedirs(out, exist_ok=True)
    order = [b for b, _ in bpe.bytes_to_unicode()]  # byte symbols in GPT-2 id order
    vocab = {}
    for b in order:
        vocab[to_str(bytes([b]))] = len(vocab)
    for s in range(256, len(sym_bytes)):
        t = to_str(sym_bytes[s])
        if t in vocab:
            raise SystemExit(f"train_tokenizer: duplicate token {t!r}")
        vocab[t] = len(vocab)
    vocab[bpe.EOT] = len(vocab)
    merge_lines = [to_str(sym_bytes[a]) + " " + to_str(sym_bytes[b]) for a, b in merges]
    tok_json = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [{"id": vocab[bpe.EOT], "content": bpe.EOT, "single_word": False,
                          "lstrip": False, "rstrip": False, "normalized": True, "special": True}],
        "normalizer": None,
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
                          "use_regex": True},
        "post_processor": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False,
                           "use_regex": True},
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True,
                    "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": "",
                  "end_of_word_suffix": "", "fuse_unk": False, "byte_fallback": False,
                  "vocab": vocab, "merges": merge_lines},
    }
    files = {
        "vocab.json": json.dumps(vocab, ensure_ascii=False),
        "merges.txt": "#version: 0.2\n" + "".join(m + "\n" for m in merge_lines),
        "tokenizer.json": json.dumps(tok_json, ensure_ascii=False, indent=1),
    }
    for name, text in files.items():
        with open(os.path.join(out, name + ".tmp"), "w", encoding="utf-8", newline="\n") as f:
            f.write(text)
    for name in files:
        os.replace(os.path.join(out, name + ".tmp"), os.path.join(out, name))
    return vocab


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--vocab-size", type=int, default=2048)
    ap.add_argument("--input", default=os.path.join(DATA, "corpus/out/train.txt"))
    ap.add_argument("--out", default=os.path.join(DATA, "models/tokenizer"))
    a = ap.parse_args()
    if not 257 < a.vocab_size <= 65536:
        raise SystemExit("train_tokenizer: --vocab-size must be in 258..65536")
    if not os.path.exists(a.input):
        raise SystemExit(f"train_tokenizer: {a.input}: missing (run make corpus)")
    t = time.time()
    counts = count_words(a.input)
    if not counts:
        raise SystemExit(f"train_tokenizer: {a.input}: no text")
    print(f"train_tokenizer: {sum(counts.values())} pre-tokens, {len(counts)} distinct, "
          f"{time.time() - t:.0f}s", flush=True)
    sym_bytes, merges = train(counts, a.vocab_size)
    write(a.out, sym_bytes, merges)
    print(f"train_tokenizer: wrote {a.out} (vocab {a.vocab_size}), {time.time() - t:.0f}s total")


if __name__ == "__main__":
    main()
