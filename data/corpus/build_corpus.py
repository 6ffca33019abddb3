#!/usr/bin/python3
"""Builds the English training corpus from Debian packages, reproducibly.

Steps (all deterministic):
  1. `apt-get download` each package of PACKAGES into data/cache/debs/ (skipped when the .deb
     is already there), `dpkg -x` it into data/cache/x/<package>/ (nothing is installed).
  2. Extract documents: one dictionary entry (dictd .dict.dz + .index), one fortune cookie, or one
     Reuters article is one document. Clean markup, join lines, collapse whitespace (a document is
     one line of text), Unicode NFC.
  3. Dedup: exact (sha256 of the cleaned text) then normalised (lowercase, letters and digits
     only); the first occurrence in PACKAGES order wins.
  4. Split by a hash of the normalised text: sha256 -> first 8 bytes mod 100:
     < 90 train, < 95 valid, else test. Identical documents always land in the same split.
  5. Write data/corpus/out/{train,valid,test}.txt (one document per line, UTF-8, '\n'-terminated)
     and {train,valid,test}.jsonl ({"id","source","text"} per line; id = source:headword-or-index),
     then data/corpus/MANIFEST.json with the sha256 of every input .deb and every output file.
     Everything is written to temporary files first and renamed into place only at the end.

  --verify      checks the files on disk against MANIFEST.json (inputs and outputs) and exits
                non-zero naming the first mismatch; rebuilds nothing.
  --check-debs  with a build: fail if a downloaded .deb's sha256 differs from the manifest's
                (default when a manifest exists; --no-check-debs to accept a new Debian version).

Errors are one line on stderr, exit code 1.
"""
import argparse
import base64
import glob
import gzip
import hashlib
import html
import json
import os
import re
import shutil
import subprocess
import sys
import unicodedata

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.dirname(HERE)
CACHE = os.path.join(DATA, "cache")
OUT = os.path.join(HERE, "out")
MANIFEST = os.path.join(HERE, "MANIFEST.json")

# (package, extractor name). Order matters for dedup (first occurrence wins) and document order.
PACKAGES = [
    ("dict-gcide", "gcide"),       # GNU Collaborative International Dictionary of English (~1913 Webster)
    ("dict-wn", "wordnet"),        # WordNet 3.0 glosses
    ("dict-foldoc", "foldoc"),     # Free On-line Dictionary of Computing
    ("dict-jargon", "jargon"),     # The Jargon File
    ("dict-devil", "devil"),       # Ambrose Bierce, The Devil's Dictionary
    ("fortunes", "fortunes"),      # fortune cookies (quotations, jokes, poems)
    ("fortunes-min", "fortunes"),
    ("r-cran-tm", "reuters"),      # Reuters-21578 sample articles (acq, crude) shipped with R tm
]
SPLITS = ("train", "valid", "test")
MIN_WORDS = 4


def die(msg):
    sys.stderr.write("build_corpus: " + msg + "\n")
    sys.exit(1)


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


# ------------------------------------------------------------------ fetching
def fetch(pkg):
    """-> (path of the .deb, extraction dir). Downloads and extracts only when missing."""
    debdir = os.path.join(CACHE, "debs")
    os.makedirs(debdir, exist_ok=True)
    debs = sorted(glob.glob(os.path.join(debdir, pkg + "_*.deb")))
    if not debs:
        r = subprocess.run(["apt-get", "download", pkg], cwd=debdir,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        debs = sorted(glob.glob(os.path.join(debdir, pkg + "_*.deb")))
        if r.returncode != 0 or not debs:
            last = (r.stderr.strip().splitlines() or ["no output"])[-1]
            die(f"package {pkg}: apt-get download failed ({last})")
    if len(debs) > 1:
        die(f"package {pkg}: several .deb files in {debdir}: {', '.join(map(os.path.basename, debs))}"
            " (remove the stale ones)")
    deb = debs[0]
    xdir = os.path.join(CACHE, "x", pkg)
    stamp = os.path.join(xdir, ".extracted-from")
    want = os.path.basename(deb) + " " + sha256_file(deb)
    if not (os.path.exists(stamp) and open(stamp).read() == want):
        shutil.rmtree(xdir, ignore_errors=True)
        os.makedirs(xdir)
        r = subprocess.run(["dpkg", "-x", deb, xdir], stderr=subprocess.PIPE, text=True)
        if r.returncode != 0:
            die(f"package {pkg}: dpkg -x {os.path.basename(deb)} failed: {r.stderr.strip()}")
        with open(stamp, "w") as f:
            f.write(want)
    return deb, xdir


# ------------------------------------------------------------------ helpers
WS = re.compile(r"\s+")


def squash(text):
    return WS.sub(" ", unicodedata.normalize("NFC", text)).strip()


def b64num(s):
    """dictd index numbers: base64 digits, most significant first."""
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    v = 0
    for ch in s:
        v = v * 64 + alphabet.index(ch)
    return v


def dictd_entries(xdir, name):
    """Yields (headword, raw entry text) from a dictd database, one per distinct byte range,
    in file order. Database metadata entries (00-database-*) are skipped."""
    dz = glob.glob(os.path.join(xdir, "usr/share/dictd", name + ".dict.dz"))
    idx = glob.glob(os.path.join(xdir, "usr/share/dictd", name + ".index"))
    if not dz or not idx:
        die(f"{name}: .dict.dz / .index not found under {xdir}/usr/share/dictd")
    with gzip.open(dz[0], "rb") as f:  # dictzip is gzip-compatible
        blob = f.read()
    seen = {}
    with open(idx[0], "r", encoding="utf-8", errors="replace") as f:
        for line in f:
            parts = line.rstrip("\n").split("\t")
            if len(parts) < 3:
                continue
            head, off, ln = parts[0], b64num(parts[1]), b64num(parts[2])
            if head.startswith("00-database") or head.startswith("00database"):
                continue
            if (off, ln) not in seen:
                seen[(off, ln)] = head
    for (off, ln), head in sorted(seen.items()):
        yield head, blob[off:off + ln].decode("utf-8", errors="replace")


# ------------------------------------------------------------------ extractors
GCIDE_ATTR = re.compile(r"^\s*\[[^\]]*(Webster|PJC|WordNet|Century|Suppl|\bRB\b|\bMW\b|\bDC\b|"
                        r"\bNet\b|\bJS\b)[^\]]*\]\s*$")
GCIDE_PRON = re.compile(r"\\[^\\\n]{1,80}\\,?")


def ex_gcide(xdir):
    for head, raw in dictd_entries(xdir, "gcide"):
        lines = [l for l in raw.split("\n") if not GCIDE_ATTR.match(l)]
        text = "\n".join(lines)
        # "Abdication \Ab`di*ca"tion\, n." -> "Abdication, n."
        text = GCIDE_PRON.sub(lambda m: "," if m.group(0).endswith(",") else "", text)
        text = text.replace("{", "").replace("}", "")
        yield head, squash(text)


WN_LIST = re.compile(r"\[(syn|ant|also):[^\]]*\]")


def ex_wordnet(xdir):
    for head, raw in dictd_entries(xdir, "wn"):
        lines = raw.split("\n")
        body = " ".join(lines[1:]) if len(lines) > 1 else ""
        body = WN_LIST.sub("", body).replace("{", "").replace("}", "")
        yield head, squash(lines[0] + ": " + body)


DATE_LINE = re.compile(r"^\s*\(\d{4}-\d{2}-\d{2}\)\s*$")


def ex_foldoc(xdir):
    for head, raw in dictd_entries(xdir, "foldoc"):
        lines = [l for l in raw.split("\n") if not DATE_LINE.match(l)]
        text = "\n".join(lines).replace("{", "").replace("}", "")
        yield head, squash(text)


def ex_jargon(xdir):
    for head, raw in dictd_entries(xdir, "jargon"):
        yield head, squash(raw.replace("{", "").replace("}", ""))


def ex_devil(xdir):
    for head, raw in dictd_entries(xdir, "devil"):
        yield head, squash(raw)


FORTUNE_SKIP = {"ascii-art", "translate-me"}  # pictures / non-prose


def ex_fortunes(xdir):
    files = sorted(glob.glob(os.path.join(xdir, "usr/share/games/fortunes/*")))
    files = [p for p in files if not os.path.splitext(p)[1] and os.path.isfile(p)
             and not os.path.islink(p) and os.path.basename(p) not in FORTUNE_SKIP]
    if not files:
        die(f"fortunes: no fortune files under {xdir}/usr/share/games/fortunes")
    for path in files:
        with open(path, "r", encoding="utf-8", errors="replace") as f:
            cookies = re.split(r"^%\s*$", f.read(), flags=re.M)
        for i, c in enumerate(cookies):
            yield f"{os.path.basename(path)}/{i}", squash(c)


REUT_BODY = re.compile(r"<BODY>(.*?)</BODY>", re.S)
REUT_TITLE = re.compile(r"<TITLE>(.*?)</TITLE>", re.S)


def ex_reuters(xdir):
    files = sorted(glob.glob(os.path.join(xdir, "usr/lib/R/site-library/tm/texts/*/reut-*.xml")))
    if not files:
        die(f"reuters: no reut-*.xml files under {xdir}")
    for path in files:
        with open(path, "r", encoding="utf-8", errors="replace") as f:
            s = f.read()
        m = REUT_BODY.search(s)
        if not m:
            continue
        body = html.unescape(m.group(1)).replace("Reuter\n&#3;", "")
        body = re.sub(r"\s*Reuter\s*$", "", html.unescape(body).replace("\x03", ""))
        yield os.path.relpath(path, xdir).split("texts/")[-1], squash(body)


EXTRACTORS = {"gcide": ex_gcide, "wordnet": ex_wordnet, "foldoc": ex_foldoc, "jargon": ex_jargon,
              "devil": ex_devil, "fortunes": ex_fortunes, "reuters": ex_reuters}


def normalise(text):
    return " ".join(re.findall(r"\w+", text.lower()))


def split_of(norm):
    h = int.from_bytes(hashlib.sha256(norm.encode("utf-8")).digest()[:8], "big")
    p = h % 100
    return "train" if p < 90 else ("valid" if p < 95 else "test")


# ------------------------------------------------------------------ verify
def verify():
    if not os.path.exists(MANIFEST):
        die(f"{MANIFEST}: missing (run a build first)")
    with open(MANIFEST) as f:
        man = json.load(f)
    for pkg, info in man["inputs"].items():
        p = os.path.join(CACHE, "debs", info["deb"])
        if not os.path.exists(p):
            die(f"input {pkg}: {p} missing")
        got = sha256_file(p)
        if got != info["sha256"]:
            die(f"input {pkg}: {info['deb']} sha256 {got} != manifest {info['sha256']}")
    for name, info in man["outputs"].items():
        p = os.path.join(HERE, name)
        if not os.path.exists(p):
            die(f"output {name}: missing")
        got = sha256_file(p)
        if got != info["sha256"]:
            die(f"output {name}: sha256 {got} != manifest {info['sha256']}")
    print(f"build_corpus: verified {len(man['inputs'])} inputs and {len(man['outputs'])} outputs")


# ------------------------------------------------------------------ build
def build(check_debs):
    old = None
    if os.path.exists(MANIFEST):
        with open(MANIFEST) as f:
            old = json.load(f)
    inputs, docs = {}, []
    seen_exact, seen_norm = set(), set()
    stats = {}
    for pkg, kind in PACKAGES:
        deb, xdir = fetch(pkg)
        digest = sha256_file(deb)
        if check_debs and old and pkg in old.get("inputs", {}):
            want = old["inputs"][pkg]
            if want["sha256"] != digest:
                die(f"input {pkg}: {os.path.basename(deb)} sha256 {digest} != manifest "
                    f"{want['deb']} {want['sha256']} (use --no-check-debs to accept it)")
        inputs[pkg] = {"deb": os.path.basename(deb), "sha256": digest, "extractor": kind}
        st = stats.setdefault(pkg, {"raw": 0, "short": 0, "dup": 0, "kept": 0, "bytes": 0})
        for key, text in EXTRACTORS[kind](xdir):
            st["raw"] += 1
            if len(text.split()) < MIN_WORDS:
                st["short"] += 1
                continue
            ex = hashlib.sha256(text.encode("utf-8")).digest()
            norm = normalise(text)
            if ex in seen_exact or norm in seen_norm:
                st["dup"] += 1
                continue
            seen_exact.add(ex)
            seen_norm.add(norm)
            st["kept"] += 1
            st["bytes"] += len(text.encode("utf-8")) + 1
            docs.append((split_of(norm), f"{pkg}:{key}", pkg, text))
        if st["kept"] == 0:
            die(f"package {pkg}: no documents extracted")
        print(f"build_corpus: {pkg}: {st['kept']} documents ({st['bytes'] / 1e6:.1f} MB), "
              f"{st['dup']} duplicates, {st['short']} too short", flush=True)

    os.makedirs(OUT, exist_ok=True)
    tmp = {}
    outputs = {}
    try:
        for split in SPLITS:
            rows = [d for d in docs if d[0] == split]
            if not rows:
                die(f"split {split}: empty")
            ptxt, pjs = os.path.join(OUT, split + ".txt"), os.path.join(OUT, split + ".jsonl")
            tmp[ptxt], tmp[pjs] = ptxt + ".tmp", pjs + ".tmp"
            with open(tmp[ptxt], "w", encoding="utf-8", newline="\n") as ft, \
                    open(tmp[pjs], "w", encoding="utf-8", newline="\n") as fj:
                for _, did, src, text in rows:
                    ft.write(text + "\n")
                    fj.write(json.dumps({"id": did, "source": src, "text": text},
                                        ensure_ascii=False) + "\n")
            for p in (ptxt, pjs):
                outputs["out/" + os.path.basename(p)] = {
                    "sha256": sha256_file(tmp[p]), "bytes": os.path.getsize(tmp[p])}
            outputs["out/" + split + ".txt"]["documents"] = len(rows)
        man = {
            "description": "English corpus from Debian bookworm packages; see data/README.md",
            "command": "/usr/bin/python3 data/corpus/build_corpus.py",
            "split_rule": "sha256(normalised text)[:8] as big-endian int mod 100: <90 train, <95 valid, else test",
            "inputs": inputs,
            "per_package": stats,
            "outputs": outputs,
        }
        with open(MANIFEST + ".tmp", "w") as f:
            json.dump(man, f, indent=1, sort_keys=True)
            f.write("\n")
        for p, t in tmp.items():
            os.replace(t, p)
        os.replace(MANIFEST + ".tmp", MANIFEST)
    finally:
        for t in list(tmp.values()) + [MANIFEST + ".tmp"]:
            if os.path.exists(t):
                os.remove(t)
    total = sum(v["bytes"] for k, v in outputs.items() if k.endswith(".txt"))
    print(f"build_corpus: wrote {len(docs)} documents, {total / 1e6:.1f} MB of text to {OUT}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--verify", action="store_true", help="check files against MANIFEST.json")
    ap.add_argument("--no-check-debs", action="store_true",
                    help="accept .deb files whose sha256 differs from the manifest")
    a = ap.parse_args()
    if a.verify:
        verify()
    else:
        build(check_debs=not a.no_check_debs)


if __name__ == "__main__":
    main()
