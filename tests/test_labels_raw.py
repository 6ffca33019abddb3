"""Every paper-code label recomputed from the token log alone, by independent Python (h5py + numpy).

Sweeps the shipped experiments/paper_code.ini, with the fixture's tiny random models and data and a
small grid (its protocol settings untouched), and the sound spec beside it. Then, reading only
tokens/RUNHASH.h5 (its `config` attribute for lambda, its columns) and not runs.sqlite or the C code:
  1. the logs are format version 3 and have the columns q_raw and p_raw;
  2. every row of a paper-code sprinter log with label >= 0 has finite q_raw, p_raw and
     label == [float64(q_raw) <= lambda * float64(p_raw)] (records/tokenlog.h);
  3. the labels that [q <= lambda p] on the logged decoding q and p gets wrong are counted and printed
     (they are why q_raw, p_raw exist); a label flipped on purpose is caught by the same recomputation;
  4. a sound-protocol log has NaN q_raw, p_raw on every row, and its labels are [q <= lambda p].
usage: test_labels_raw.py --sprinter BIN --source SRCDIR --work DIR
"""
import argparse
import os
import re
import shutil
import subprocess
import sys

import h5py
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sweep_fixture as fx  # noqa: E402


def spec(src, fix, name, out_dir):
    text = open(os.path.join(src, "experiments", name + ".ini")).read()
    text = text.replace("data/models/regime/draft", os.path.join(fix, "draft"))
    text = text.replace("data/models/regime/target", os.path.join(fix, "target"))
    text = re.sub(r"(?m)^datasets = .*$", "datasets = " + os.path.join(fix, "data.jsonl"), text)
    text = re.sub(r"(?m)^data = .*$", "data = " + os.path.join(fix, "data.jsonl"), text)
    text = re.sub(r"(?m)^methods = .*$", "methods = sprinter", text)
    text = re.sub(r"(?m)^n_prompts = 100$", "n_prompts = 8", text)
    text = re.sub(r"(?m)^n_prompts = 500$", "n_prompts = 16", text)
    text = re.sub(r"(?m)^offset = 500$", "offset = 20", text)
    text = re.sub(r"(?m)^tau = .*$", "tau = 0.3, 0.5", text)
    path = os.path.join(out_dir, name + ".ini")
    with open(path, "w") as f:
        f.write(text)
    return path


def log_lambda(f):
    cfg = f.attrs["config"]
    cfg = cfg.decode() if isinstance(cfg, bytes) else str(cfg)
    m = re.search(r"(?m)^lambda ([0-9.eE+-]+)$", cfg)
    return float(m.group(1)) if m else None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sprinter", required=True)
    ap.add_argument("--source", required=True)
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    t = fx.Checks("labels_raw")
    sp = os.path.abspath(a.sprinter)
    shutil.rmtree(a.work, ignore_errors=True)
    os.makedirs(a.work)
    fix = fx.make_models(sp, os.path.join(a.work, "fix"))
    n_code = n_sound = rows_code = wrong_plain = 0
    for name in ("paper_code", "paper_sound"):
        out = os.path.join(a.work, name)
        p = subprocess.run([sp, "sweep", spec(a.source, fix, name, a.work), "--out", out, "--quiet"],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if not t.check(p.returncode == 0, "%s sweep exits 0: %s" % (name, p.stdout[-1500:])):
            continue
        tok = os.path.join(out, "tokens")
        for fn in sorted(os.listdir(tok)):
            with h5py.File(os.path.join(tok, fn), "r") as f:
                t.check(int(f.attrs["version"]) >= 3 and "q_raw" in f and "p_raw" in f,
                        "%s: version >= 3 with q_raw, p_raw" % fn)
                lam = log_lambda(f)
                if not t.check(lam is not None, "%s: lambda in the config attribute" % fn):
                    continue
                label = f["label"][:]
                q, p, qr, pr = (f[c][:].astype(np.float64) for c in ("q", "p", "q_raw", "p_raw"))
            has = label >= 0
            if name == "paper_code":
                n_code += 1
                rows_code += int(has.sum())
                t.check(has.sum() > 0 and np.isfinite(qr[has]).all() and np.isfinite(pr[has]).all(),
                        "%s: %d labelled rows, each with finite q_raw, p_raw" % (fn, has.sum()))
                recomputed = (qr <= lam * pr).astype(np.int8)
                bad = int((recomputed[has] != label[has]).sum())
                t.check(bad == 0, "%s: every label == [q_raw <= %g p_raw] (%d of %d differ)" % (fn, lam, bad, has.sum()))
                wrong_plain += int(((q <= lam * p).astype(np.int8)[has] != label[has]).sum())
                flipped = label.copy()
                i = int(np.flatnonzero(has)[0])
                flipped[i] = 1 - flipped[i]
                t.check(int((recomputed[has] != flipped[has]).sum()) == 1, "%s: a flipped label is caught" % fn)
            else:
                n_sound += 1
                t.check(np.isnan(qr).all() and np.isnan(pr).all(), "%s (sound): q_raw, p_raw NaN on every row" % fn)
                bad = int(((q <= lam * p).astype(np.int8)[has] != label[has]).sum())
                t.check(bad == 0, "%s (sound): labels == [q <= %g p] on the logged q, p (%d differ)" % (fn, lam, bad))
    t.check(n_code >= 4 and n_sound >= 4, "token logs read: %d paper-code, %d sound" % (n_code, n_sound))
    print("paper-code: %d labels recomputed from q_raw, p_raw; [q <= lambda p] on the logged decoding q, p would "
          "get %d of them wrong" % (rows_code, wrong_plain), flush=True)
    t.finish()


if __name__ == "__main__":
    main()
