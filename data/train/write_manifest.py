#!/usr/bin/python3
"""Writes data/models/MANIFEST.json: sha256 of every file of the tokenizer, draft and target
directories, the training settings and results (from each train_result.json), the PyTorch test
perplexities (perplexity.py on data/corpus/out/test.txt, unless --no-test-ppl) and the commands
that reproduce everything.

  /usr/bin/python3 data/train/write_manifest.py [--wall-seconds S] [--no-test-ppl]
  /usr/bin/python3 data/train/write_manifest.py --verify     # re-hash the files, compare
"""
import argparse
import hashlib
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.dirname(HERE)
MODELS = os.path.join(DATA, "models")
MANIFEST = os.path.join(MODELS, "MANIFEST.json")
DIRS = ("tokenizer", "draft", "target")


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def hashes():
    out = {}
    for d in DIRS:
        p = os.path.join(MODELS, d)
        if not os.path.isdir(p):
            sys.exit(f"write_manifest: {p}: missing (run make tokenizer / make models)")
        for f in sorted(os.listdir(p)):
            if f.endswith(".tmp"):
                continue
            out[f"{d}/{f}"] = sha256_file(os.path.join(p, f))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--wall-seconds", type=float)
    ap.add_argument("--no-test-ppl", action="store_true")
    ap.add_argument("--verify", action="store_true")
    a = ap.parse_args()
    if a.verify:
        with open(MANIFEST) as f:
            man = json.load(f)
        got = hashes()
        for name, h in man["files"].items():
            if name.endswith("training_log.csv") or name.endswith("train_result.json"):
                continue  # contain wall-clock times
            if got.get(name) != h:
                sys.exit(f"write_manifest: {name}: sha256 {got.get(name)} != manifest {h}")
        print(f"write_manifest: verified {len(man['files'])} files")
        return
    models = {}
    for m in ("draft", "target"):
        p = os.path.join(MODELS, m, "train_result.json")
        if not os.path.exists(p):
            sys.exit(f"write_manifest: {p}: missing (run make models)")
        with open(p) as f:
            models[m] = json.load(f)
        if not a.no_test_ppl:
            r = subprocess.run([sys.executable, os.path.join(HERE, "perplexity.py"), "--model",
                                os.path.join(MODELS, m), "--data",
                                os.path.join(DATA, "corpus", "out", "test.txt")],
                               stdout=subprocess.PIPE, text=True)
            if r.returncode != 0:
                sys.exit(f"write_manifest: perplexity of {m} failed")
            models[m]["test_perplexity"] = json.loads(r.stdout)
            print(f"write_manifest: {m}: test {r.stdout.strip()}", flush=True)
    corpus_manifest = os.path.join(DATA, "corpus", "MANIFEST.json")
    man = {
        "description": "Default draft/target GPT-2 pair and tokenizer; see data/README.md",
        "reproduce": [
            "/usr/bin/python3 data/corpus/build_corpus.py",
            "/usr/bin/python3 data/tokenizer/train_tokenizer.py --vocab-size 2048",
            "/usr/bin/python3 data/train/train_gpt2.py --model draft --threads 1",
            "/usr/bin/python3 data/train/train_gpt2.py --model target --threads 1",
            "/usr/bin/python3 data/train/write_manifest.py",
        ],
        "reproduction_tolerance": "same machine, torch build and 1 thread: bit-identical weights "
                                  "and losses; other CPUs / torch builds: final validation loss "
                                  "within 1% (float summation order differs)",
        "corpus_manifest_sha256": sha256_file(corpus_manifest) if os.path.exists(corpus_manifest) else None,
        "models": models,
        "training_wall_seconds": a.wall_seconds,
        "files": hashes(),
    }
    with open(MANIFEST + ".tmp", "w") as f:
        json.dump(man, f, indent=1)
        f.write("\n")
    os.replace(MANIFEST + ".tmp", MANIFEST)
    print(f"write_manifest: wrote {MANIFEST}")


if __name__ == "__main__":
    main()
