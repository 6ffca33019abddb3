"""GPT-2 byte-level BPE: the pre-tokenizer regex, the byte<->unicode map, and an encoder/decoder.

Python's `re` has no \\p{L} / \\p{N}. PRETOKENIZE emulates them with explicit character classes
built from `unicodedata` (L = Lu Ll Lt Lm Lo, N = Nd Nl No) over every code point of the running
Python's Unicode database, so the pattern is the GPT-2 one:

    's|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+

`\\s` is Python's Unicode whitespace (str.isspace() characters), which can differ from other
engines only on a few control characters (U+001C..U+001F); the corpus contains no whitespace
other than ' ' (build_corpus.py collapses every run of whitespace into one space).

Encoding is GPT-2's: split text with PRETOKENIZE, map each pre-token's UTF-8 bytes to the
printable stand-ins of bytes_to_unicode(), then repeatedly merge the adjacent pair with the lowest
merge rank (all its occurrences, left to right) until no pair of the word is in merges.txt.
"""
import json
import os
import re
import sys
import unicodedata

# GPT-2's byte map is shared with the tokenizer tests (scripts/pylib/gpt2_bytes.py); importers of
# this module keep calling bpe.bytes_to_unicode().
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts", "pylib"))
from gpt2_bytes import bytes_to_unicode  # noqa: E402,F401

EOT = "<|endoftext|>"


def _class(pred):
    """A regex character-class body with every code point for which pred(cat) holds."""
    ranges, start, prev = [], None, None
    for cp in range(sys.maxunicode + 1):
        if pred(unicodedata.category(chr(cp))):
            if start is None:
                start = cp
            prev = cp
        elif start is not None:
            ranges.append((start, prev))
            start = None
    if start is not None:
        ranges.append((start, prev))
    out = []
    for a, b in ranges:
        out.append(re.escape(chr(a)) if a == b else re.escape(chr(a)) + "-" + re.escape(chr(b)))
    return "".join(out)


_L = _class(lambda c: c in ("Lu", "Ll", "Lt", "Lm", "Lo"))
_N = _class(lambda c: c in ("Nd", "Nl", "No"))
PRETOKENIZE = re.compile(
    r"'s|'t|'re|'ve|'m|'ll|'d| ?[" + _L + r"]+| ?[" + _N + r"]+| ?[^\s" + _L + _N + r"]+|\s+(?!\S)|\s+")

BYTE2CHAR = {b: c for b, c in bytes_to_unicode()}
CHAR2BYTE = {c: b for b, c in bytes_to_unicode()}


def pretokenize(text):
    return PRETOKENIZE.findall(text)


class Encoder:
    def __init__(self, vocab, merges):
        self.vocab = vocab                                  # token string -> id
        self.inv = {i: s for s, i in vocab.items()}
        self.ranks = {tuple(m): r for r, m in enumerate(merges)}
        self.eot = vocab.get(EOT, -1)
        self.cache = {}

    @classmethod
    def load(cls, d):
        with open(os.path.join(d, "vocab.json"), encoding="utf-8") as f:
            vocab = json.load(f)
        merges = []
        with open(os.path.join(d, "merges.txt"), encoding="utf-8") as f:
            for i, line in enumerate(f):
                line = line.rstrip("\n")
                if i == 0 and line.startswith("#version"):
                    continue
                if line:
                    a, b = line.split(" ")
                    merges.append((a, b))
        return cls(vocab, merges)

    def bpe(self, word):
        """word: a string of bytes_to_unicode characters -> list of token strings."""
        hit = self.cache.get(word)
        if hit is not None:
            return hit
        sym = list(word)
        ranks = self.ranks
        while len(sym) > 1:
            best, brank = None, None
            for p in zip(sym, sym[1:]):
                r = ranks.get(p)
                if r is not None and (brank is None or r < brank):
                    best, brank = p, r
            if best is None:
                break
            a, b = best
            out, i = [], 0
            while i < len(sym):
                if i + 1 < len(sym) and sym[i] == a and sym[i + 1] == b:
                    out.append(a + b)
                    i += 2
                else:
                    out.append(sym[i])
                    i += 1
            sym = out
        if len(self.cache) < 1_000_000:
            self.cache[word] = sym
        return sym

    def encode(self, text):
        ids = []
        v = self.vocab
        for tok in PRETOKENIZE.findall(text):
            w = "".join(BYTE2CHAR[b] for b in tok.encode("utf-8"))
            ids.extend(v[s] for s in self.bpe(w))
        return ids

    def decode(self, ids, skip_special=True):
        out = bytearray()
        for i in ids:
            s = self.inv[i]
            if s == EOT:
                if not skip_special:
                    out += s.encode("utf-8")
                continue
            out += bytes(CHAR2BYTE[c] for c in s)
        return out.decode("utf-8", errors="replace")
