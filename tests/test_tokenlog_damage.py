#!/usr/bin/env python3
"""A damaged token log never crashes a reader and is never taken as good (issue 27, class 1).

A reference sweep (ar, sd; 2 prompts); then, each on a copy of it, the exact corruptions of the
issue: the dimensionality byte of /prompt_index's chunked-layout message zeroed (libhdf5 1.10 divides
by zero: SIGFPE under H5Dopen2), the first key of /token's chunk index flipped (the chunk reads as
zeros, no HDF5 error), two runs' logs swapped. For each: score and analyze exit non-zero with a
one-line error naming the log (never a signal), and the sweep redoes the runs whose log fails the
check, ending with results identical to the reference (sweep_dump).
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
    ap.add_argument("--dump", required=True)
    ap.add_argument("--damage", required=True)
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    t = fx.Checks("tokenlog_damage")
    shutil.rmtree(args.work, ignore_errors=True)
    W = fx.make_models(args.sprinter, args.work)
    spec = fx.write_spec(W, name="damage", methods="ar, sd", n_prompts=2, max_new=8)
    ref = os.path.join(W, "ref")
    sweep = lambda out: run([args.sprinter, "sweep", spec, "--out", out, "--quiet"])  # noqa: E731
    p = sweep(ref)
    if not t.check(p.returncode == 0, "reference sweep exits 0: %s" % p.stderr.strip()[-300:]):
        t.finish()
    rc, ref_dump, _ = fx.dump(args.dump, ref)
    logs = sorted(f for f in os.listdir(os.path.join(ref, "tokens")) if f.endswith(".h5"))
    t.check(rc == 0 and len(logs) >= 2, "reference: %d token logs" % len(logs))

    def damaged(name, how):
        out = os.path.join(W, name)
        shutil.rmtree(out, ignore_errors=True)
        shutil.copytree(ref, out)
        how(os.path.join(out, "tokens"))
        return out

    def tool(mode, dset):
        def how(tok):
            q = run([args.damage, mode, os.path.join(tok, logs[0]), dset])
            t.check(q.returncode == 0, "damage_h5 %s %s: %s" % (mode, dset, q.stderr.strip()))
        return how

    def swap(tok):
        a, b = os.path.join(tok, logs[0]), os.path.join(tok, logs[1])
        os.rename(a, a + ".x")
        os.rename(b, a)
        os.rename(a + ".x", b)

    cases = [("dimbyte", tool("dimbyte", "prompt_index"), "HDF5 crashed reading it", 1),
             ("chunkkey", tool("chunkkey", "token"), "does not match its attribute content_fnv1a64", 1),
             ("swapped", swap, "attribute run_hash is", 2)]
    for name, how, why, n_redone in cases:
        out = damaged(name, how)
        for cmd in (["score", out, "--quiet"], ["analyze", out, "--quiet", "--no-plots", "--bootstrap", "20"]):
            q = run([args.sprinter] + cmd)
            lines = q.stderr.strip().splitlines()
            t.check(q.returncode > 0 and why in q.stderr and logs[0][:12] in q.stderr and len(lines) == 1,
                    "%s: %s exits non-zero (not a signal) with one line naming the log and '%s' (exit %d): %r" %
                    (name, cmd[0], why, q.returncode, q.stderr.strip()[-500:]))
        q = sweep(out)
        redone = q.stderr.count("redoing it")
        rc, got, _ = fx.dump(args.dump, out)
        t.check(q.returncode == 0 and redone == n_redone and why in q.stderr and rc == 0 and got == ref_dump,
                "%s: the sweep redoes %d run(s) (%d) saying why, and ends equal to the reference (exit %d) %r %s" %
                (name, n_redone, redone, q.returncode, q.stderr.strip()[-500:],
                 "" if got == ref_dump else fx.first_difference(ref_dump, got)))
        q = run([args.sprinter, "score", out, "--quiet"])
        t.check(q.returncode == 0, "%s: after the redo, score exits 0: %r" % (name, q.stderr.strip()[-300:]))
    t.finish()


if __name__ == "__main__":
    main()
