#!/usr/bin/env python3
"""A damaged collect file or dtv file never crashes its reader (issue 27, class 1).

The token logs' damage (tests/test_tokenlog_damage.py) applied to the two other HDF5 inputs: the
dimensionality byte of a chunked dataset's layout message zeroed (libhdf5 1.10 divides by zero under
H5Dopen2: SIGFPE). Both readers go through h5util.h's checked child:
  - a collect file with /label damaged: `sprinter train-verifier --data F` exits 1 with one line naming
    F ("HDF5 crashed reading it"), and writes no verifier;
  - a dtv file with /dtv_pq damaged in a results directory's dtv/: `sprinter analyze` exits 1 with one
    line naming it. dtv files are not optional to the analysis: one it cannot read is an error, the
    same as a token log, never skipped (the report's Theorem 3.1 section would silently lose a row).
The undamaged files are checked to work first (train-verifier, dtv, analyze exit 0).
"""
import argparse
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sweep_fixture as fx  # noqa: E402


def run(cmd, timeout=300):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace",
                          timeout=timeout)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sprinter", required=True)
    ap.add_argument("--damage", required=True)
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    S, t = a.sprinter, fx.Checks("h5_damage")
    shutil.rmtree(a.work, ignore_errors=True)
    W = fx.make_models(S, a.work)
    spec = fx.write_spec(W, name="h5d", methods="ar, sd", n_prompts=2, max_new=6)
    res, c, v, d = (os.path.join(W, x) for x in ("res", "c.h5", "v.safetensors", "d.h5"))
    m = lambda x: os.path.join(W, x)  # noqa: E731
    setup = [[S, "sweep", spec, "--out", res, "--quiet"],
             [S, "collect", "--lambda", "1", "--draft", m("draft"), "--target", m("target"), "--data", m("data.jsonl"),
              "--n-prompts", "6", "--max-new", "6", "--out", c],
             [S, "train-verifier", "--data", c, "--out", v],
             [S, "dtv", "--draft", m("draft"), "--target", m("target"), "--verifier", v, "--data", m("data.jsonl"),
              "--n-prefixes", "2", "--out", d]]
    for cmd in setup:
        p = run(cmd)
        if not t.check(p.returncode == 0, "setup %s exits 0: %s" % (cmd[1], p.stderr.strip()[-300:])):
            t.finish()
    analyze = lambda r: run([S, "analyze", r, "--quiet", "--no-plots", "--bootstrap", "10"])  # noqa: E731
    good = os.path.join(W, "res_good")
    shutil.copytree(res, good)
    os.makedirs(os.path.join(good, "dtv"))
    shutil.copy(d, os.path.join(good, "dtv", "d.h5"))
    p = analyze(good)
    t.check(p.returncode == 0, "analyze with an undamaged dtv/d.h5 exits 0: %s" % p.stderr.strip()[-300:])

    def damage(path, dset):
        q = run([a.damage, "dimbyte", path, dset])
        return t.check(q.returncode == 0, "damage_h5 dimbyte %s %s: %s" % (path, dset, q.stderr.strip()))

    def one_line(p, path, what):
        lines = p.stderr.strip().splitlines()
        t.check(p.returncode == 1 and len(lines) == 1 and path in p.stderr and "HDF5 crashed reading it" in p.stderr,
                "%s exits 1 (not a signal) with one line naming %s (exit %d): %r" % (what, path, p.returncode,
                                                                                     p.stderr.strip()[-500:]))

    bad_c, bad_v = os.path.join(W, "c_bad.h5"), os.path.join(W, "v_bad.safetensors")
    shutil.copy(c, bad_c)
    if damage(bad_c, "label"):
        p = run([S, "train-verifier", "--data", bad_c, "--out", bad_v])
        one_line(p, bad_c, "train-verifier on a collect file with /label damaged")
        t.check(not os.path.exists(bad_v) and not os.path.exists(bad_v + ".tmp"), "no verifier written")

    bad = os.path.join(W, "res_bad")
    shutil.copytree(good, bad)
    bad_d = os.path.join(bad, "dtv", "d.h5")
    if damage(bad_d, "dtv_pq"):
        p = analyze(bad)
        one_line(p, bad_d, "analyze with dtv/d.h5's /dtv_pq damaged")
    t.finish()


if __name__ == "__main__":
    main()
