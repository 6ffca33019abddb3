#!/usr/bin/python3
"""The verifier's features on a draft/target pair (issue 13): SPRINTER's verifier is one linear layer +
sigmoid on a draft hidden state; this harness scores the state at the drafted token ("token"), the
authors' code the state at the last prefix position before it ("prefix", whose logits gave q). For
lambda in {1, 1.2}: `sprinter collect` labels every draft-proposed token of the first N prompts
(q/p <= lambda; SD with gamma 1), then `sprinter train-verifier --feature F` fits the verifier on a
split by prompt (held-out prompts: --val-fraction) and reports validation AUC, log loss, eta_TP and
eta_FP at tau. Output: results/bench/verifier_auc.json and .md (one row per lambda x feature).

usage: verifier_auc.py [--sprinter build-bench/sprinter] [--draft D --target T] [--prompts 1000]
"""
import argparse
import json
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sprinter", default=os.path.join(ROOT, "build-bench", "sprinter"))
    regime = os.path.join(ROOT, "data", "models", "regime")
    have_regime = os.path.exists(os.path.join(regime, "target", "model.safetensors"))
    ap.add_argument("--draft", default=os.path.join(regime if have_regime else os.path.join(ROOT, "data", "models"), "draft"))
    ap.add_argument("--target", default=os.path.join(regime if have_regime else os.path.join(ROOT, "data", "models"), "target"))
    ap.add_argument("--data", default=os.path.join(ROOT, "data", "datasets", "encyclopedic.jsonl"))
    ap.add_argument("--prompts", type=int, default=1000, help="prompts (x max_new drafted tokens each)")
    ap.add_argument("--max-new", type=int, default=20)
    ap.add_argument("--val-fraction", type=float, default=0.2)
    ap.add_argument("--out-dir", default=os.path.join(ROOT, "results", "bench"))
    a = ap.parse_args()
    os.makedirs(a.out_dir, exist_ok=True)
    rows = []
    for lam in (1.0, 1.2):
        coll = os.path.join(a.out_dir, f"verifier_collect_l{lam:g}.h5")  # rewritten every run (the pair may differ)
        p = subprocess.run([a.sprinter, "collect", "--draft", a.draft, "--target", a.target, "--data", a.data,
                            "--lambda", f"{lam:g}", "--n-prompts", str(a.prompts), "--max-new", str(a.max_new),
                            "--out", coll], capture_output=True, text=True)
        if p.returncode:
            sys.exit(f"verifier_auc: collect failed: {p.stderr.strip()}")
        for feat in ("token", "prefix"):
            out = os.path.join(a.out_dir, f"verifier_l{lam:g}_{feat}.safetensors")
            p = subprocess.run([a.sprinter, "train-verifier", "--data", coll, "--out", out, "--feature", feat,
                                "--val-fraction", str(a.val_fraction)], capture_output=True, text=True)
            if p.returncode:
                sys.exit(f"verifier_auc: train-verifier failed: {p.stderr.strip()}")
            t = p.stdout
            num = lambda pat: float(re.search(pat, t).group(1))  # noqa: E731
            rows.append({"lambda": lam, "feature": feat,
                         "n_train": int(num(r"train (\d+) tokens")), "n_val": int(num(r"validation (\d+) tokens")),
                         "acceptable_val": num(r"validation \d+ tokens \(([\d.]+)% acceptable") / 100,
                         "val_auc": num(r"AUC ([\d.]+)"), "val_log_loss": num(r"val ([\d.]+);"),
                         "eta_tp": num(r"eta_TP = ([\d.]+)"), "eta_fp": num(r"eta_FP = ([\d.]+)")})
    doc = {"draft": os.path.relpath(a.draft, ROOT), "target": os.path.relpath(a.target, ROOT),
           "data": os.path.relpath(a.data, ROOT), "prompts": a.prompts, "max_new": a.max_new,
           "val_fraction": a.val_fraction, "rows": rows}
    with open(os.path.join(a.out_dir, "verifier_auc.json"), "w") as f:
        json.dump(doc, f, indent=1)
    md = [f"# Verifier features: {doc['draft']} / {doc['target']}", "",
          f"`bench/verifier_auc.py`: {a.prompts} prompts of `{doc['data']}` x {a.max_new} drafted tokens, split by "
          f"prompt ({a.val_fraction:g} held out); AUC, log loss and the operating point at tau = 0.5 on the held-out "
          "prompts. token = the draft's state at the drafted token (this harness); prefix = the state before it "
          "(the authors' code).", "",
          "| lambda | feature | train / val tokens | acceptable (val) | val AUC | val log loss | eta_TP | eta_FP |",
          "|---:|---|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        md.append(f"| {r['lambda']:g} | {r['feature']} | {r['n_train']} / {r['n_val']} | {100 * r['acceptable_val']:.1f}% "
                  f"| {r['val_auc']:.4f} | {r['val_log_loss']:.4f} | {r['eta_tp']:.3f} | {r['eta_fp']:.3f} |")
    with open(os.path.join(a.out_dir, "verifier_auc.md"), "w") as f:
        f.write("\n".join(md) + "\n")
    print("\n".join(md))


if __name__ == "__main__":
    main()
