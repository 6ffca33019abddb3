#!/usr/bin/env python3
"""A damaged token log never crashes a reader and is never taken as good (issue 27, class 1).

A reference sweep (ar, sd; 2 prompts); then, each on a copy of it, the exact corruptions of the
issue: the dimensionality byte of /prompt_index's chunked-layout message zeroed (libhdf5 1.10 divides
by zero: SIGFPE under H5Dopen2), the first key of /token's chunk index flipped (the chunk reads as
zeros, no HDF5 error), two runs' logs swapped; and two that pass every check of the file alone
(issue 27, item 3: runs.token_log_fnv1a64): the two logs swapped with their run_hash attributes
rewritten to match, and one log's /token rewritten with its content_fnv1a64 recomputed. For each:
score and analyze exit non-zero with a one-line error naming the log (never a signal), `sprinter
merge` of the damaged directory into a new --out exits 1 with one line naming the shard and the log
and leaves no --out (it copied nothing: the logs are verified in the checked child before anything is
merged), and the sweep redoes the runs whose log fails the check, ending with results identical to
the reference (sweep_dump).
"""
import argparse
import os
import struct
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sweep_fixture as fx  # noqa: E402


# the kept columns in file order (results/README.md, token log): the content digest runs over these
COLUMNS = ["prompt_index", "pos", "token", "draft_token", "q", "p", "score", "decision", "label", "target_called",
           "kind", "capped", "q_raw", "p_raw"]
FNV_OFFSET, FNV_PRIME, MASK = 0xcbf29ce484222325, 0x100000001b3, (1 << 64) - 1


def fnv1a(h, data):
    for b in data:
        h = ((h ^ b) * FNV_PRIME) & MASK
    return h


def content_digest(f):
    """content_fnv1a64 as results/README.md defines it (an independent writer of the digest)."""
    d = FNV_OFFSET
    for c in COLUMNS:
        d = fnv1a(d, struct.pack("<Q", fnv1a(FNV_OFFSET, f[c][()].astype(f[c].dtype.newbyteorder("<")).tobytes())))
    return "%016x" % d


def set_str_attr(f, name, value):
    """Rewrites a string attribute keeping its stored type (a fixed-length C string)."""
    import numpy as np
    f.attrs.modify(name, np.array(value.encode(), dtype=f.attrs.get_id(name).dtype))


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

    def relabel(tok):  # the swap made to pass every check of the file alone
        import h5py
        swap(tok)
        for lg in logs[:2]:
            with h5py.File(os.path.join(tok, lg), "r+") as f:
                set_str_attr(f, "run_hash", lg[:-3])

    def rewrite(tok):  # altered after the run, its digest recomputed to match
        import h5py
        with h5py.File(os.path.join(tok, logs[0]), "r+") as f:
            tk = f["token"][()]
            tk[0] = (tk[0] + 1) % 200
            f["token"][...] = tk
            set_str_attr(f, "content_fnv1a64", content_digest(f))

    recorded = "runs.token_log_fnv1a64 recorded"
    cases = [("dimbyte", tool("dimbyte", "prompt_index"), "HDF5 crashed reading it", 1),
             ("chunkkey", tool("chunkkey", "token"), "does not match its attribute content_fnv1a64", 1),
             ("swapped", swap, "attribute run_hash is", 2),
             ("relabeled", relabel, recorded, 2),
             ("rewritten", rewrite, recorded, 1)]
    # the Python digest is the writer's: it reproduces every reference log's attribute
    import h5py
    for lg in logs:
        with h5py.File(os.path.join(ref, "tokens", lg), "r") as f:
            a = f.attrs["content_fnv1a64"]
            a = a.decode() if isinstance(a, bytes) else str(a)
            t.check(content_digest(f) == a, "%s: the test's digest %s equals the attribute %s" %
                    (lg[:12], content_digest(f), a))
    for name, how, why, n_redone in cases:
        out = damaged(name, how)
        merged = os.path.join(W, name + "-merged", "a", "b")
        shutil.rmtree(os.path.join(W, name + "-merged"), ignore_errors=True)
        q = run([args.sprinter, "merge", "--quiet", "--out", merged, out])
        lines = q.stderr.strip().splitlines()
        t.check(q.returncode == 1 and why in q.stderr and out in q.stderr and logs[0][:12] in q.stderr and
                len(lines) == 1 and not os.path.exists(os.path.join(W, name + "-merged")),
                "%s: merge exits 1 with one line naming the shard, the log and '%s', no --out left (exit %d, "
                "--out %s): %r" % (name, why, q.returncode,
                                   "left" if os.path.exists(os.path.join(W, name + "-merged")) else "gone",
                                   q.stderr.strip()[-500:]))
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
