#!/usr/bin/python3
"""gen_corpus.py - deterministic, varied test texts for the tokenizer oracle test.

    gen_corpus.py OUT [--lines N] [--seed S] [--added-tokens TOKENIZER_JSON] [--exclude HEX,...]

Writes N (default 12000) texts, one JSON string per line (texts may contain newlines and tabs).
The mix: lines of the license texts every Debian system has (/usr/share/common-licenses), prose
with contractions, code, whitespace runs (spaces, tabs, newlines, CR, VT, FF, Unicode spaces),
numbers, punctuation runs, and Unicode (accents, combining marks, Greek, Cyrillic, Hebrew and
Arabic (RTL), Devanagari, Thai, CJK, kana, Hangul, emoji with ZWJ and skin tones, flags,
zero-width characters, BOM, fullwidth forms, other-script digits, "▁"), plus a few long lines.

--added-tokens: the added tokens of that tokenizer.json ("<|eot_id|>", "<think>", ...) join the
special-token texts, and a tenth of the lines are chat-like text with them (and near misses such as
"<|eot_id" or "<|reserved_special_token_999|>") between words, code and Unicode.
--exclude: code points (hex) that no line may contain (run_llama3_qwen.sh: U+0085 and U+FEFF, where
the JavaScript oracles' \\s differs from the Oniguruma / tiktoken \\s of the Llama 3 and Qwen files).

Left out on purpose:
  - NUL (the C side reads texts as C strings) and lone surrogates (not valid UTF-8);
  - unassigned code points and scripts added after Unicode 14: PCRE2 10.42 (Debian 12) knows
    Unicode 14, Node 20 knows 15.1, so \\p{L} could differ there. Every character drawn from a
    range is checked to be assigned in Python's Unicode database.
"""
import glob
import json
import random
import sys
import unicodedata

def assigned_chars(ranges):
    """The assigned, non-surrogate characters of the given (first, last) code point ranges."""
    out = []
    for lo, hi in ranges:
        for cp in range(lo, hi + 1):
            ch = chr(cp)
            if unicodedata.category(ch) not in ("Cn", "Cs", "Co") and cp != 0:
                out.append(ch)
    return out


POOLS = {
    "latin_accents": assigned_chars([(0xC0, 0xFF), (0x100, 0x17F), (0x180, 0x24F)]),
    "combining": assigned_chars([(0x300, 0x36F)]),
    "greek": assigned_chars([(0x391, 0x3C9)]),
    "cyrillic": assigned_chars([(0x410, 0x44F), (0x400, 0x40F)]),
    "hebrew": assigned_chars([(0x5D0, 0x5EA), (0x591, 0x5C7)]),
    "arabic": assigned_chars([(0x621, 0x64A), (0x64B, 0x652), (0x660, 0x669)]),
    "devanagari": assigned_chars([(0x905, 0x939), (0x93E, 0x94D), (0x966, 0x96F)]),
    "thai": assigned_chars([(0xE01, 0xE3A), (0xE40, 0xE5B)]),
    "cjk": assigned_chars([(0x4E00, 0x4FFF), (0x6000, 0x60FF), (0x3000, 0x303F)]),
    "kana": assigned_chars([(0x3041, 0x3096), (0x30A1, 0x30FA)]),
    "hangul": assigned_chars([(0xAC00, 0xAD00)]),
    "emoji": assigned_chars([(0x1F600, 0x1F64F), (0x1F300, 0x1F3FF), (0x2600, 0x26FF),
                             (0x1F900, 0x1F9FF)]),
    "symbols": assigned_chars([(0x2190, 0x21FF), (0x2200, 0x22FF), (0x2500, 0x257F),
                               (0x20A0, 0x20BF), (0x2100, 0x214F)]),
    "fullwidth": assigned_chars([(0xFF01, 0xFF5E)]),
    "other_digits": assigned_chars([(0x660, 0x669), (0x966, 0x96F), (0xFF10, 0xFF19),
                                    (0x2070, 0x2079), (0x2160, 0x2188), (0x2460, 0x249B),
                                    (0xB2, 0xB3), (0xBC, 0xBE)]),
    "controls": [chr(c) for c in list(range(1, 32)) + [0x7F, 0x85]],
}
ZERO_WIDTH = ["\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00ad", "\u180e", "\u200e",
              "\u200f"]
UNICODE_SPACES = ["\u00a0", "\u1680", "\u2000", "\u2001", "\u2002", "\u2003", "\u2006", "\u2009",
                  "\u200a", "\u2028", "\u2029", "\u202f", "\u205f", "\u3000", "\u0085", "\ufeff"]
ASCII_WS = [" ", " ", " ", "\t", "\n", "\r", "\r\n", "\x0b", "\x0c"]
CONTRACTIONS = ["'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'T", "'RE", "'x", "’s", "'"]
PUNCT = list("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~") + ["...", "--", "->", "=>", "!=", "::", "«",
                                                   "»", "“", "”", "‘", "’", "—", "–", "…", "¿",
                                                   "¡", "§", "¶", "•", "·"]
EMOJI_SEQS = ["👍🏽", "👨‍👩‍👧‍👦", "🏳️‍🌈", "🇫🇷", "🇯🇵", "❤️", "🧑🏿‍💻", "👩‍🔬", "✋🏻", "1️⃣", "#️⃣"]
# special tokens: transformers.js and sprinter split "<s>" "</s>" "<unk>" out of the text for
# the Llama family; gpt-3-encoder and llama-tokenizer-js keep them (and "<|endoftext|>") as plain
# text, and run_oracle.sh / run_llama2.sh run sprinter likewise (--special-as-text) there
SPECIAL_TEXT = ["<|endoftext|>", "<s>", "</s>", "<unk>", "<0x41>", "<0xFF>", "▁", "▁▁", "<|im_start|>", "<pad>", "[CLS]"]
CODE_LINES = [
    "for (int i = 0; i < n; i++) {{ sum += a[i] * {n}; }}",
    "def {w}(self, x, y={n}):\n    return x ** 2 + y  # {w}",
    "    if ({w} != NULL && {w}->len > {n}) return -1;",
    "const {w} = require('{w}'); // {w}",
    "{{\"{w}\": [{n}, {n}.5, null, true], \"k\": \"{w}\\n\"}}",
    "SELECT {w}, COUNT(*) FROM t WHERE id >= {n} GROUP BY {w};",
    "<div class=\"{w}\">{w} &amp; {w}</div>",
    "x = np.zeros(({n}, {n}), dtype=np.float32)\t# shape",
    "$ grep -rn '{w}' src/ | wc -l  # {n}",
    "#include <stdio.h>\nint main(void) {{ printf(\"%d\\n\", {n}); }}",
    "fn {w}(&mut self) -> Result<(), Box<dyn Error>> {{ Ok(()) }}",
    "\t\t{w}[{n}] = {w}[{n}-1] + {w}[{n}-2];",
    "    \n        \n{w}:\n  - {n}\n  - '{w}'",
]


def license_lines():
    lines = []
    for path in sorted(glob.glob("/usr/share/common-licenses/*")):
        try:
            with open(path, encoding="utf-8") as f:
                lines.extend(line.rstrip("\n") for line in f)
        except (OSError, UnicodeDecodeError):
            continue
    return lines


class Gen:
    def __init__(self, seed, added=()):
        self.r = random.Random(seed)
        self.added = list(added)
        self.lic = license_lines() or ["The quick brown fox jumps over the lazy dog."]
        words = " ".join(self.lic).split()
        self.words = [w for w in words if w.isalpha()] or ["word"]

    def pick(self, seq):
        return self.r.choice(seq)

    def word(self):
        w = self.pick(self.words)
        k = self.r.random()
        return w.upper() if k < 0.05 else w.capitalize() if k < 0.2 else w

    def number(self):
        k = self.r.randrange(7)
        n = self.r.randrange(10 ** self.r.randrange(1, 12))
        return [str(n), f"{n:,}", f"{n}.{self.r.randrange(100)}", f"0x{n:x}", f"-{n}",
                f"{n}e-{self.r.randrange(20)}", f"{self.r.randrange(1, 29)}/{self.r.randrange(1, 13)}/19{self.r.randrange(10, 99)}"][k]

    def ws(self, unicode_ok=True):
        n = self.r.choice([1, 1, 1, 2, 3, 4, 8])
        pool = ASCII_WS + (UNICODE_SPACES if unicode_ok and self.r.random() < 0.3 else [])
        return "".join(self.pick(pool) for _ in range(n))

    def chars(self, pool, lo=1, hi=8):
        return "".join(self.pick(POOLS[pool]) for _ in range(self.r.randint(lo, hi)))

    # ---- line kinds

    def license(self):
        i = self.r.randrange(len(self.lic))
        return "\n".join(self.lic[i:i + self.r.choice([1, 1, 1, 2, 5])])

    def prose(self):
        out = []
        for _ in range(self.r.randint(3, 25)):
            w = self.word()
            k = self.r.random()
            if k < 0.15:
                w += self.pick(CONTRACTIONS)
            elif k < 0.25:
                w += self.pick(",.;:!?")
            elif k < 0.3:
                w = self.number()
            out.append(w)
        sep = " " if self.r.random() < 0.7 else None
        return "".join(x + (sep or self.ws(False)) for x in out).rstrip(" ") + self.pick(["", ".", "\n", " "])

    def code(self):
        t = self.pick(CODE_LINES)
        return t.format(w=self.pick(self.words).lower(), n=self.r.randrange(1000))

    def whitespace(self):
        parts = []
        for _ in range(self.r.randint(1, 8)):
            parts.append(self.ws())
            if self.r.random() < 0.7:
                parts.append(self.pick([self.word(), self.number(), self.pick(PUNCT),
                                        self.chars("cjk", 1, 3)]))
        return "".join(parts)

    def numbers(self):
        return self.pick([" ", "", ", ", "\t"]).join(self.number() for _ in range(self.r.randint(1, 8)))

    def punct(self):
        return "".join(self.pick(PUNCT) + (self.pick(["", "", " ", "  "]))
                       for _ in range(self.r.randint(1, 12)))

    def script(self):
        pools = [p for p in POOLS if p not in ("controls",)]
        out = []
        for _ in range(self.r.randint(1, 10)):
            k = self.r.random()
            if k < 0.6:
                out.append(self.chars(self.pick(pools)))
            elif k < 0.7:
                out.append(self.pick(EMOJI_SEQS))
            elif k < 0.8:
                out.append(self.word() + self.pick(POOLS["combining"]))
            elif k < 0.9:
                out.append(self.pick(ZERO_WIDTH))
            else:
                out.append(self.number())
            out.append(self.pick([" ", " ", "", self.ws()]))
        return "".join(out)

    def accents(self):
        # the same words precomposed (NFC) and decomposed (NFD)
        w = " ".join(self.word() + self.chars("latin_accents", 1, 2) for _ in range(self.r.randint(1, 6)))
        return unicodedata.normalize(self.pick(["NFC", "NFD"]), w)

    def rtl(self):
        parts = [self.chars(self.pick(["hebrew", "arabic"]), 2, 9) for _ in range(self.r.randint(1, 6))]
        if self.r.random() < 0.5:
            parts.insert(self.r.randrange(len(parts) + 1), self.word() + " " + self.number())
        return " ".join(parts)

    def mixed(self):
        out = []
        for _ in range(self.r.randint(1, 30)):
            k = self.r.random()
            if k < 0.2:
                out.append(self.word())
            elif k < 0.3:
                out.append(self.pick(SPECIAL_TEXT))
            elif k < 0.4:
                out.append(self.pick(POOLS["controls"]))
            elif k < 0.5:
                out.append(self.ws())
            elif k < 0.6:
                out.append(self.pick(ZERO_WIDTH + UNICODE_SPACES))
            elif k < 0.7:
                out.append(self.pick(CONTRACTIONS))
            else:
                out.append(self.chars(self.pick(list(POOLS)), 1, 3))
        return "".join(out)

    def long(self):
        k = self.r.randrange(6)
        n = self.r.randint(500, 4000)
        if k == 0:
            return self.pick("aZé日") * n
        if k == 1:
            return " " * n + "x"
        if k == 2:
            return "".join(self.r.choice("0123456789") for _ in range(n))
        if k == 3:
            return " ".join(self.word() for _ in range(n // 6))
        if k == 4:
            return "".join(self.pick(self.pick(list(POOLS.values()))) for _ in range(n // 4))
        return self.pick(["\n", "\t", "!", "ab"]) * (n // 2)

    def chat(self):
        # added tokens between pieces of text, as in a rendered chat template, and near misses
        near = [a[:-1] for a in self.added] + [a[1:] for a in self.added] + [a.upper() for a in self.added]
        out = []
        for _ in range(self.r.randint(1, 12)):
            k = self.r.random()
            if k < 0.35:
                out.append(self.pick(self.added))
            elif k < 0.45:
                out.append(self.pick(near + ["<|reserved_special_token_999|>", "<|", "|>", "<||>"]))
            else:
                out.append(self.pick([self.prose, self.code, self.script, self.whitespace, self.numbers,
                                      lambda: self.pick(["\n", "\n\n", " ", "", "assistant\n\n"])])())
        return "".join(out)

    def line(self):
        kinds = [(self.license, 20), (self.prose, 20), (self.code, 10), (self.whitespace, 10),
                 (self.numbers, 6), (self.punct, 6), (self.script, 12), (self.accents, 5),
                 (self.rtl, 4), (self.mixed, 12), (self.long, 0.5)]
        if self.added:
            kinds.append((self.chat, 12))
        f = self.r.choices([k for k, _ in kinds], weights=[w for _, w in kinds])[0]
        return f()


def clean(text, exclude=()):
    text = text.replace("\0", "")
    for ch in exclude:
        text = text.replace(ch, "")
    return text


def added_tokens(path):
    """The contents of a tokenizer.json's added_tokens."""
    with open(path, encoding="utf-8") as f:
        return [a["content"] for a in json.load(f).get("added_tokens", [])]


def main():
    args = sys.argv[1:]
    if not args:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    out, n, seed = args[0], 12000, 20240611
    if "--lines" in args:
        n = int(args[args.index("--lines") + 1])
    if "--seed" in args:
        seed = int(args[args.index("--seed") + 1])
    added = added_tokens(args[args.index("--added-tokens") + 1]) if "--added-tokens" in args else []
    exclude = ([chr(int(h, 16)) for h in args[args.index("--exclude") + 1].split(",")]
               if "--exclude" in args else [])
    global SPECIAL_TEXT
    SPECIAL_TEXT = SPECIAL_TEXT + added
    g = Gen(seed, added)
    fixed = ["", " ", "  ", "\n", "\t", "a", "Hello world", " Hello", "Hello ", "I'm", "don't",
             "<|endoftext|>", "▁", " ▁x", "\r\n", "1234567890", "日本", "😀", "e\u0301",
             "\ufeff", "\u200b", "a\u00a0b", "x\u0085y", "\u3000\u3000z"]
    with open(out, "w", encoding="utf-8") as f:
        for text in fixed:
            f.write(json.dumps(clean(text, exclude)) + "\n")
        for _ in range(n - len(fixed)):
            f.write(json.dumps(clean(g.line(), exclude)) + "\n")


if __name__ == "__main__":
    main()
