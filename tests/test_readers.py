#!/usr/bin/env python3
"""The reader examples of results/README.md (examples/readers/: pandas on runs.sqlite, h5py on the token
logs) against the harness's own figures (issue 16): a small sweep of the test fixture (ar, sd, sprinter,
oracle-iid, two seeds), then
  - summary_pandas.py's rows equal `sprinter summary --tsv`'s: the same groups, and tokens, tokens_per_s,
    tokens_per_call, accept_rate, eta_fp and eta_tp equal to 1e-9 relative (both print 9 digits);
  - tokens_h5py.py's per-run counts from the token logs equal the prompts table's sums (tokens,
    verifier_accepts, rejected);
  - the README holds each example verbatim (they cannot drift apart).
usage: test_readers.py --sprinter BIN --src REPO_ROOT --work DIR
"""
import argparse
import math
import os
import shutil
import sqlite3
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import sweep_fixture as fx  # noqa: E402


def tsv(text):
    lines = [ln.split("\t") for ln in text.splitlines() if ln]
    return lines[0], lines[1:]


def num(x):
    return float("nan") if x in ("", "nan") else float(x)


def same(a, b):
    return (math.isnan(a) and math.isnan(b)) or abs(a - b) <= 1e-9 * max(1.0, abs(a), abs(b))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sprinter", required=True)
    ap.add_argument("--src", required=True)
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    t = fx.Checks("readers")
    shutil.rmtree(a.work, ignore_errors=True)
    os.makedirs(a.work)
    fx.make_models(a.sprinter, a.work)
    spec = fx.write_spec(a.work, name="readers", n_prompts=4, max_new=8)
    res = os.path.join(a.work, "res")
    p = subprocess.run([a.sprinter, "sweep", spec, "--out", res, "--quiet"], capture_output=True, text=True)
    if not t.check(p.returncode == 0, "fixture sweep: exit %d %s" % (p.returncode, p.stderr[-300:])):
        t.finish()
    ex = os.path.join(a.src, "examples", "readers")
    summ = subprocess.run([a.sprinter, "summary", res, "--tsv"], capture_output=True, text=True).stdout
    pan = subprocess.run([sys.executable, os.path.join(ex, "summary_pandas.py"), res], capture_output=True, text=True)
    t.check(pan.returncode == 0, "summary_pandas.py: exit %d %s" % (pan.returncode, pan.stderr[-500:]))
    sh, srows = tsv(summ)
    ph, prows = tsv(pan.stdout) if pan.returncode == 0 else ([], [])
    params = ["lambda", "tau", "gamma", "max_run", "alpha", "p_min", "eta_fp", "eta_tp", "oracle_stay", "bonus",
              "finish_round"]
    # the summary's parameter columns come first (as named in engine/decode/params_table.h; the oracles'
    # eta_fp / eta_tp as oracle_eta_fp / oracle_eta_tp), its measured eta_fp / eta_tp last
    names = [("oracle_" + k if k in ("eta_fp", "eta_tp") else k) for k in params]
    t.check(len(set(sh)) == len(sh), "summary --tsv column names are unique: %s" %
            sorted({n for n in sh if sh.count(n) > 1}))

    def key_s(r):
        d = dict(zip(sh, r))
        return (d["method"], d["dataset"]) + tuple(round(num(d[k]), 9) if not math.isnan(num(d[k])) else None
                                                   for k in names)

    def key_p(r):
        d = dict(zip(ph, r))
        return (d["method"], d["dataset"]) + tuple(round(num(d[k]), 9) if k in d and not math.isnan(num(d[k]))
                                                   else None for k in names)
    figures = ["tokens", "tokens_per_s", "tokens_per_call", "accept_rate", "eta_fp", "eta_tp"]
    s_by = {key_s(r): r for r in srows}
    p_by = {key_p(r): r for r in prows}
    t.check(len(srows) >= 4 and set(s_by) == set(p_by),
            "pandas groups == summary groups (%d): only summary %s, only pandas %s" %
            (len(srows), sorted(set(s_by) - set(p_by), key=str)[:3], sorted(set(p_by) - set(s_by), key=str)[:3]))
    bad = []
    for k in set(s_by) & set(p_by):
        s_row, p_row = s_by[k], dict(zip(ph, p_by[k]))
        s_col = {n: s_row[sh.index(n)] for n in figures}
        for n in figures:
            if not same(num(s_col[n]), num(p_row[n])):
                bad.append("%s %s: summary %s, pandas %s" % (k[0], n, s_col[n], p_row[n]))
    t.check(not bad and p_by, "pandas figures == summary --tsv figures (%d rows x %d figures)%s" %
            (len(p_by), len(figures), ": " + "; ".join(bad[:5]) if bad else ""))
    h5 = subprocess.run([sys.executable, os.path.join(ex, "tokens_h5py.py"), res], capture_output=True, text=True)
    t.check(h5.returncode == 0, "tokens_h5py.py: exit %d %s" % (h5.returncode, h5.stderr[-500:]))
    hh, hrows = tsv(h5.stdout) if h5.returncode == 0 else ([], [])
    con = sqlite3.connect(os.path.join(res, "runs.sqlite"))
    want = {h: (tok, va, rej) for h, tok, va, rej in con.execute(
        "SELECT run_hash, SUM(tokens), SUM(verifier_accepts), SUM(rejected) FROM prompts GROUP BY run_hash")}
    con.close()
    got = {r[0]: tuple(int(x) for x in r[2:5]) for r in hrows}
    t.check(got == want and len(got) >= 8, "token-log counts (tokens, verifier accepts, rejected) == prompts sums "
            "for %d runs%s" % (len(got), "" if got == want else ": got %s want %s" % (
                list(got.items())[:2], list(want.items())[:2])))
    readme = open(os.path.join(a.src, "results", "README.md")).read()
    for name in ("summary_pandas.py", "tokens_h5py.py"):
        body = open(os.path.join(ex, name)).read()
        t.check(body in readme, "results/README.md holds examples/readers/%s verbatim" % name)
    t.finish()


if __name__ == "__main__":
    sys.exit(main())
