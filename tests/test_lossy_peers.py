"""End-to-end test of `make lossy` (scripts/lossy.sh) on tiny random models, and an independent
recomputation of its figures from the record.

The shipped experiments/lossy.ini is copied with only its models, data paths and sizes replaced, so
the test runs the spec's real methods and grids; scripts/lossy.sh sweeps it (with its runs timed
alone), scores, writes one `sprinter dtv --method` file per lossy configuration and analyses. Checks:
  1. report/lossy.md and lossy.tsv exist, every lossy run (sprinter, typical, fsd, optimal-lossy,
     judge) has an exact shift (a dtv file matched to it), ar and sd are at shift 0;
  2. each run's shift in lossy.tsv equals the mean of dtv_p_ps of the file whose attributes name its
     method and parameters (h5py), and its speed-up the median of ar's ms per token over its own in
     the paired repetitions of the timings table (SQL);
  3. the Pareto front is the set of non-dominated points of (shift, speed-up) per cell;
  4. FINDINGS.md has row 9 in every cell, naming a peer or saying "no verdict" and why;
  5. lossy.png is drawn (gnuplot) and index.md links lossy.md.
usage: test_lossy_peers.py --sprinter BIN --source SRCDIR --work DIR
"""
import argparse
import csv
import os
import re
import shutil
import sqlite3
import statistics
import subprocess
import sys

import h5py
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sweep_fixture as fx  # noqa: E402

PEERS = ("typical", "fsd", "optimal-lossy", "judge")


def make_spec(sprinter, src, work):
    fix = fx.make_models(sprinter, os.path.join(work, "fix"))
    data2 = os.path.join(work, "data2.jsonl")
    with open(os.path.join(fix, "data.jsonl")) as f, open(data2, "w") as g:
        g.writelines(reversed(f.readlines()))
    text = open(os.path.join(src, "experiments", "lossy.ini")).read()
    text = text.replace("data/models/regime/draft", os.path.join(fix, "draft"))
    text = text.replace("data/models/regime/target", os.path.join(fix, "target"))
    text = text.replace("datasets = data/datasets/encyclopedic.jsonl, data/datasets/sentences.jsonl",
                        "datasets = %s, %s" % (os.path.join(fix, "data.jsonl"), data2))
    text = text.replace("data = data/datasets/encyclopedic.jsonl", "data = " + os.path.join(fix, "data.jsonl"))
    text = re.sub(r"(?m)^n_prompts = 100$", "n_prompts = 6", text)
    text = re.sub(r"(?m)^n_prompts = 300$", "n_prompts = 16", text)
    text = re.sub(r"(?m)^offset = 500$", "offset = 20", text)
    text = re.sub(r"(?m)^max_new_tokens = 20$", "max_new_tokens = 10", text)
    text = re.sub(r"(?m)^prompts = 10$", "prompts = 3", text)
    assert not re.search(r"(?m)^[a-z_]+ = .*\bdata/(models|datasets)/", text), "a repository path is left"
    path = os.path.join(work, "lossy.ini")
    with open(path, "w") as f:
        f.write(text)
    return path


def read_tsv(path):
    with open(path) as f:
        return list(csv.DictReader(f, delimiter="\t"))


def close(a, b, tol=1e-6):
    a, b = float(a), float(b)
    if a != a or b != b:
        return a != a and b != b
    return abs(a - b) <= tol * max(1.0, abs(b))


def params_of(label):
    return {k: float(v) for k, v in (kv.split("=") for kv in label.split())}


SHAPES = {"sprinter": ("lambda", "tau"), "typical": ("typical_eps", "typical_alpha"),
          "fsd": ("fsd_divergence", "fsd_threshold"), "optimal-lossy": ("lossy_kl",),
          "judge": ("tau_judge", "judge_rho")}


def dtv_files(out):
    files = []
    for name in sorted(os.listdir(os.path.join(out, "dtv"))):
        with h5py.File(os.path.join(out, "dtv", name), "r") as f:
            a = {k: (v.decode() if isinstance(v, bytes) else v) for k, v in f.attrs.items()}
            files.append((a, np.asarray(f["dtv_p_ps"][()], dtype=float)))
    return files


def shift_of(files, db, h, method, setting):
    sha = db.execute("SELECT dataset_sha256 FROM runs WHERE run_hash = ?", (h,)).fetchone()[0]
    want = params_of(setting)
    for a, col in files:
        if str(a.get("method")) != method or str(a.get("data_sha256")) != sha:
            continue
        have = params_of(str(a.get("params", "")))
        if all(abs(have.get(k, float("nan")) - want[k]) <= 1e-9 for k in SHAPES[method]):
            return float(col.mean())
    return float("nan")


def speedup_of(db, h, ar):
    ms = lambda x: dict(db.execute("SELECT rep, 1000.0 * t_total / tokens FROM timings WHERE run_hash = ? AND "
                                   "tokens > 0", (x,)).fetchall())
    a, b = ms(ar), ms(h)
    r = sorted(a[k] / b[k] for k in a if k in b)
    return statistics.median(r) if r else float("nan")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sprinter", required=True)
    ap.add_argument("--source", required=True)
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    sprinter = os.path.abspath(a.sprinter)
    t = fx.Checks("lossy_peers")
    shutil.rmtree(a.work, ignore_errors=True)
    os.makedirs(a.work)
    spec = make_spec(sprinter, a.source, a.work)
    out = os.path.join(a.work, "lossy")
    env = dict(os.environ, LOSSY_SPEC=spec, LOSSY_DTV_PREFIXES="4")
    p = subprocess.run(["bash", os.path.join(a.source, "scripts", "lossy.sh"), sprinter, out, "2"], cwd=a.source,
                       env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace")
    rep = os.path.join(out, "report")
    if not t.check(p.returncode == 0 and os.path.exists(os.path.join(rep, "lossy.tsv")),
                   "scripts/lossy.sh exits 0 and writes report/lossy.tsv (rc %d): %s" % (p.returncode, p.stdout[-2000:])):
        t.finish()
    db = sqlite3.connect("file:%s?mode=ro" % os.path.join(out, "runs.sqlite"), uri=True)
    rows = read_tsv(os.path.join(rep, "lossy.tsv"))
    files = dtv_files(out)
    methods = {r["method"] for r in rows}
    t.check(set(PEERS) | {"sprinter", "ar", "sd"} <= methods, "lossy.tsv has every method of the spec: %s" % sorted(methods))
    n_shift = n_speed = 0
    for r in rows:
        h = db.execute("SELECT run_hash FROM runs WHERE run_hash = ?", (r["run_hash"],)).fetchone()[0]
        if r["method"] in ("ar", "sd"):
            t.check(float(r["dtv_p_method"]) == 0, "%s is at shift 0" % r["method"])
        else:
            want = shift_of(files, db, h, r["method"], r["setting"])
            n_shift += t.check(close(r["dtv_p_method"], want),
                               "%s %s: shift %s == mean dtv_p_ps %.6g of its file" % (r["method"], r["setting"],
                                                                                     r["dtv_p_method"], want))
        ar = db.execute("SELECT r2.run_hash FROM runs r1 JOIN runs r2 ON r2.dataset_sha256 = r1.dataset_sha256 AND "
                        "r2.temperature = r1.temperature AND r2.method = 'ar' WHERE r1.run_hash = ?", (h,)).fetchone()[0]
        if int(r["timed_reps"]) >= 2:
            n_speed += t.check(close(r["speedup_vs_ar"], speedup_of(db, h, ar)),
                               "%s %s: speed-up %s == the paired median of the timings" % (r["method"], r["setting"],
                                                                                          r["speedup_vs_ar"]))
    t.check(n_shift >= 2 * (3 + 3 + 4 + 4 + 3), "every lossy run's shift recomputed (%d)" % n_shift)
    t.check(n_speed == len(rows), "every run's speed-up is from runs timed alone and recomputed (%d of %d)" %
            (n_speed, len(rows)))
    for ds in {r["dataset"] for r in rows}:
        pts = [r for r in rows if r["dataset"] == ds]
        for r in pts:
            x, y = float(r["dtv_p_method"]), float(r["speedup_vs_ar"])
            dominated = any(float(o["dtv_p_method"]) <= x and float(o["speedup_vs_ar"]) >= y and
                            (float(o["dtv_p_method"]) < x or float(o["speedup_vs_ar"]) > y) for o in pts if o is not r)
            t.check(int(r["front"]) == (0 if dominated or x != x or y != y else 1),
                    "%s %s %s: front flag %s" % (ds, r["method"], r["setting"], r["front"]))
    md = open(os.path.join(rep, "FINDINGS.md")).read()
    nine = re.findall(r"(?m)^\| 9 \| .*", md)
    t.check(len(nine) == 2, "FINDINGS.md has row 9 for each dataset: %d" % len(nine))
    for line in nine:
        withheld, verdict = fx.unwrap_verdict(line.split(" | ")[5])
        t.check(withheld, "row 9's verdict is withheld (random-init models): %s" % line.split(" | ")[5])
        t.check(any(m in verdict for m in PEERS) or verdict.startswith("no verdict"),
                "row 9's check names a peer or gives no verdict and why: %s" % verdict)
    t.check(os.path.getsize(os.path.join(rep, "lossy.png")) > 0, "lossy.png drawn")
    t.check("(lossy.md)" in open(os.path.join(rep, "index.md")).read(), "index.md links lossy.md")
    t.finish()


if __name__ == "__main__":
    main()
