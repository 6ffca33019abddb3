#!/usr/bin/python3
"""Writes data/models/MANIFEST.json (--set default: the GPT-2 pair) or
data/models/regime/MANIFEST.json (--set regime: the Llama target/draft pair): sha256 of every
file of the model (and tokenizer) directories, the training settings and results (from each
train_result.json), the PyTorch test perplexities (perplexity.py on data/corpus/out/test.txt,
unless --no-test-ppl) and the commands that reproduce everything; for the regime set also the
route taken and why, sizes and the draft/target per-token FLOPs ratio.

  /usr/bin/python3 data/train/write_manifest.py [--set regime] [--wall-seconds S] [--no-test-ppl]
  /usr/bin/python3 data/train/write_manifest.py [--set regime] --verify   # re-hash, compare
"""
import argparse
import hashlib
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.dirname(HERE)
MODELS = os.path.join(DATA, "models")
MANIFEST = os.path.join(MODELS, "MANIFEST.json")
DIRS = ("tokenizer", "draft", "target")
REGIME = os.path.join(MODELS, "regime")
REGIME_ROUTE = (
    "Both models trained here from the corpus with the 2,048-token BPE (no pretrained weights "
    "can be downloaded). Target: a Llama (RMSNorm, rotate-half RoPE, SwiGLU, grouped-query "
    "attention, untied head, as Vicuna/Llama-2) trained from scratch with cross-entropy; "
    "growing the trained 4.5M GPT-2 target function-preservingly is not possible because "
    "the architecture differs (LayerNorm with bias vs RMSNorm, learned absolute positions vs "
    "RoPE, GELU MLP vs SwiGLU). Draft: a 2-layer Llama trained only by distillation from the "
    "finished target: forward KL(p_target || q_draft) at temperature 1 on corpus windows "
    "(teacher under no_grad), as DistillSpec; 1 - d_TV(p, q) is the per-token acceptance "
    "probability of speculative sampling and KL bounds d_TV (Pinsker), so the loss trains "
    "for acceptance directly rather than for the data.")
REGIME_WHY = (
    "The paper's regime: a target whose f32 weights (78 MB) are over twice the 32 MB last-level "
    "cache, so a target forward is memory-bound like a 7B model on a GPU, and a draft whose "
    "forward costs < 5% of the target's per token; the Llama family makes the trained weights "
    "exercise the engine's third architecture end to end. Shapes and step counts were chosen "
    "from measured 2-thread PyTorch throughput (data/train/measure_llama.py) to fit 150 min "
    "on 2 cores; see data/README.md.")
T0 = time.time()
SETS = {
    "default": dict(root=MODELS, manifest=MANIFEST, dirs=DIRS, models=("draft", "target")),
    "regime": dict(root=REGIME, manifest=os.path.join(REGIME, "MANIFEST.json"),
                   dirs=("target", "draft"), models=("target", "draft")),
}


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def hashes(root=MODELS, dirs=DIRS):
    out = {}
    for d in dirs:
        p = os.path.join(root, d)
        if not os.path.isdir(p):
            sys.exit(f"write_manifest: {p}: missing (run make tokenizer / make models"
                     f"{' / make models-regime' if root != MODELS else ''})")
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
    ap.add_argument("--set", choices=sorted(SETS), default="default")
    ap.add_argument("--threads", type=int, default=1, help="threads for the test perplexities")
    ap.add_argument("--phase-seconds", action="append", default=[], metavar="NAME=S",
                    help="wall seconds of one phase of the last invocation (repeatable)")
    a = ap.parse_args()
    S = SETS[a.set]
    if a.verify:
        with open(S["manifest"]) as f:
            man = json.load(f)
        got = hashes(S["root"], S["dirs"])
        for name, h in man["files"].items():
            if name.endswith("training_log.csv") or name.endswith("train_result.json"):
                continue  # contain wall-clock times
            if got.get(name) != h:
                sys.exit(f"write_manifest: {name}: sha256 {got.get(name)} != manifest {h}")
        print(f"write_manifest: verified {len(man['files'])} files")
        return
    models = {}
    for m in S["models"]:
        p = os.path.join(S["root"], m, "train_result.json")
        if not os.path.exists(p):
            sys.exit(f"write_manifest: {p}: missing (run make models"
                     f"{'-regime' if a.set == 'regime' else ''})")
        with open(p) as f:
            models[m] = json.load(f)
        if not a.no_test_ppl:
            t0 = time.time()
            r = subprocess.run([sys.executable, os.path.join(HERE, "perplexity.py"), "--model",
                                os.path.join(S["root"], m), "--data",
                                os.path.join(DATA, "corpus", "out", "test.txt")]
                               + (["--threads", str(a.threads)] if a.threads != 1 else []),
                               stdout=subprocess.PIPE, text=True)
            if r.returncode != 0:
                sys.exit(f"write_manifest: perplexity of {m} failed")
            models[m]["test_perplexity"] = json.loads(r.stdout)
            if a.set == "regime":
                models[m]["test_perplexity"]["seconds"] = round(time.time() - t0, 1)
            print(f"write_manifest: {m}: test {r.stdout.strip()}", flush=True)
    corpus_manifest = os.path.join(DATA, "corpus", "MANIFEST.json")
    if a.set == "regime":
        write_regime(a, S, models, corpus_manifest)
        return
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


def write_regime(a, S, models, corpus_manifest):
    t, d = models["target"], models["draft"]
    ft, fd = t["forward_flops_per_token_ctx_half"], d["forward_flops_per_token_ctx_half"]
    man = {
        "description": "Regime draft/target Llama pair (same tokenizer and corpus as the default "
                       "GPT-2 pair); see data/README.md, section 6",
        "route": REGIME_ROUTE,
        "why": REGIME_WHY,
        "reproduce": [
            "/usr/bin/python3 data/corpus/build_corpus.py",
            "(tokenizer: data/models/tokenizer/, as in data/models/MANIFEST.json)",
            "make models-regime   # = sh data/train/train_regime.sh",
            "/usr/bin/python3 data/train/train_llama.py --model target --threads 2",
            "/usr/bin/python3 data/train/train_llama.py --model draft --threads 2 "
            "--teacher data/models/regime/target",
            "/usr/bin/python3 data/train/write_manifest.py --set regime --threads 2",
        ],
        "reproduction_tolerance": "same machine, torch build and thread count: bit-identical "
                                  "weights and losses, also across checkpoint resumes; other "
                                  "CPUs / torch builds / thread counts: final validation losses "
                                  "within ~1% (float summation order differs)",
        "sizes": {
            "target_parameters": t["parameters"], "target_f32_MB": round(t["f32_bytes"] / 1e6, 1),
            "draft_parameters": d["parameters"], "draft_f32_MB": round(d["f32_bytes"] / 1e6, 2),
            "target_forward_flops_per_token_ctx128": ft,
            "draft_forward_flops_per_token_ctx128": fd,
            "draft_over_target_flops": round(fd / ft, 4),
        },
        "corpus_manifest_sha256": sha256_file(corpus_manifest) if os.path.exists(corpus_manifest) else None,
        "tokenizer_files": {f"tokenizer/{f}": sha256_file(os.path.join(MODELS, "tokenizer", f))
                            for f in sorted(os.listdir(os.path.join(MODELS, "tokenizer")))},
        "models": models,
        # --wall-seconds covers the training phases; this script's own time (test perplexities)
        # is added
        "wall_seconds_last_invocation": None if a.wall_seconds is None else
        round(a.wall_seconds + time.time() - T0, 1),
        "phase_seconds_last_invocation": dict(
            {k: float(v) for k, v in (x.split("=", 1) for x in a.phase_seconds)},
            manifest_and_test_ppl=round(time.time() - T0, 1)),
        "train_seconds_all_runs": {m: models[m]["train_seconds"] for m in S["models"]},
        "files": hashes(S["root"], S["dirs"]),
    }
    with open(S["manifest"] + ".tmp", "w") as f:
        json.dump(man, f, indent=1)
        f.write("\n")
    os.replace(S["manifest"] + ".tmp", S["manifest"])
    print(f"write_manifest: wrote {S['manifest']}")


if __name__ == "__main__":
    main()
