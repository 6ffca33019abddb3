#!/usr/bin/env python3
"""Interrupted sweeps resume to exactly the uninterrupted result.

A reference sweep runs without interruption. A second sweep into another directory is killed with
SIGKILL at random times (at least 5 kills that land) and, deterministically, at every kind of
checkpoint (run started, prompt logged, token log renamed, run committed) via --test-crash-at,
then rerun to completion. After every kill the partial directory must be consistent (every run
marked done has all its prompt rows and a token log that opens). At the end sweep_dump of both
directories must be identical: same run hashes, same per-prompt rows and bit-identical token logs
(wall-clock columns excluded), nothing lost, nothing duplicated, no leftover files.
The kill times come from a fixed seed; the result does not depend on where the kills land, so the
test has no false-failure rate beyond a machine too slow for the timeouts.
"""
import argparse
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sweep_fixture as fx  # noqa: E402

N_RUNS, N_PROMPTS = 16, 3  # ar 2 + sd 2 + sprinter 2x2x2 + oracle-iid 2x2; 3 prompts each


def sweep(args, spec, out, *extra, timeout=300):
    cmd = [args.sprinter, "sweep", spec, "--out", out, "--quiet", "--verifier-cache", args.cache] + list(extra)
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=timeout)


def partial_ok(out):
    """Every done run has N_PROMPTS prompt rows and a token log that exists; returns (ok, n_done)."""
    db = os.path.join(out, "runs.sqlite")
    if not os.path.exists(db):
        return True, 0
    con = sqlite3.connect(db, timeout=30)
    if not con.execute("SELECT 1 FROM sqlite_master WHERE name = 'runs'").fetchone():
        con.close()
        return True, 0  # killed while the schema was being created
    done = [h for (h,) in con.execute("SELECT run_hash FROM runs WHERE status = 'done'")]
    ok = True
    for h in done:
        n = con.execute("SELECT COUNT(*) FROM prompts WHERE run_hash = ?", (h,)).fetchone()[0]
        ok &= n == N_PROMPTS and os.path.exists(os.path.join(out, "tokens", h + ".h5"))
    orphans = con.execute("SELECT COUNT(*) FROM prompts p WHERE NOT EXISTS "
                          "(SELECT 1 FROM runs r WHERE r.run_hash = p.run_hash AND r.status = 'done')").fetchone()[0]
    con.close()
    return ok and orphans == 0, len(done)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sprinter", required=True)
    ap.add_argument("--dump", required=True)
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    shutil.rmtree(args.work, ignore_errors=True)
    work = fx.make_models(args.sprinter, args.work)
    # one verifier cache: the collect file's bytes (hence the verifier's data_sha256 and its file
    # hash) change from one training to the next, its weights do not
    args.cache = os.path.join(work, "verifiers")
    spec = fx.write_spec(work)
    t = fx.Checks("sweep_resume")
    rng = random.Random(20250207)

    # reference
    ref = os.path.join(work, "ref")
    t0 = time.time()
    p = sweep(args, spec, ref, "--test-delay-ms", "10")
    t_ref = time.time() - t0
    t.check(p.returncode == 0, "reference sweep exits 0 (%s)" % p.stderr.strip()[-300:])
    rc, ref_dump, err = fx.dump(args.dump, ref)
    t.check(rc == 0, "reference directory is consistent (%s)" % err.strip()[:300])
    con = sqlite3.connect(os.path.join(ref, "runs.sqlite"))
    n_runs = con.execute("SELECT COUNT(*) FROM runs WHERE status='done'").fetchone()[0]
    n_rows = con.execute("SELECT COUNT(*) FROM prompts").fetchone()[0]
    con.close()
    t.check(n_runs == N_RUNS and n_rows == N_RUNS * N_PROMPTS,
            "reference has %d runs x %d prompts (got %d runs, %d rows)" % (N_RUNS, N_PROMPTS, n_runs, n_rows))

    # a rerun of a finished sweep does nothing and changes nothing
    p = sweep(args, spec, ref)
    rc, again, _ = fx.dump(args.dump, ref)
    t.check(p.returncode == 0 and again == ref_dump, "rerunning a finished sweep changes nothing")

    # random SIGKILLs from outside
    out = os.path.join(work, "killed")
    landed, attempts = 0, 0
    while landed < 6 and attempts < 30:
        attempts += 1
        cmd = [args.sprinter, "sweep", spec, "--out", out, "--quiet", "--test-delay-ms", "10",
               "--verifier-cache", args.cache]
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0.02, max(0.05, t_ref / 5)))
        proc.send_signal(signal.SIGKILL)
        rc = proc.wait(timeout=60)
        if rc == -signal.SIGKILL:
            landed += 1
            ok, n_done = partial_ok(out)
            t.check(ok, "after kill %d the partial directory is consistent (%d runs done)" % (landed, n_done))
        else:
            break  # the sweep finished before the kill
    t.check(landed >= 5, "at least 5 SIGKILLs landed mid-sweep (%d)" % landed)

    # deterministic self-kills at checkpoints; each run has 1 + N_PROMPTS + 2 checkpoints
    per_run = N_PROMPTS + 3
    for k in [1, 2, per_run - 1, per_run, per_run + 1, 2 * per_run - 2, 3, per_run + N_PROMPTS + 1]:
        p = sweep(args, spec, out, "--test-crash-at", str(k))
        if p.returncode == 0:
            break
        t.check(p.returncode == -signal.SIGKILL, "--test-crash-at %d ends with SIGKILL (rc %d)" % (k, p.returncode))
        ok, n_done = partial_ok(out)
        t.check(ok, "after crash at checkpoint %d the directory is consistent (%d runs done)" % (k, n_done))

    p = sweep(args, spec, out)
    t.check(p.returncode == 0, "final resume exits 0 (%s)" % p.stderr.strip()[-300:])
    rc, got, err = fx.dump(args.dump, out)
    t.check(rc == 0, "resumed directory is consistent: no lost runs, no leftovers (%s)" % err.strip()[:300])
    t.check(got == ref_dump, "resumed results equal the uninterrupted ones: " +
            ("same" if got == ref_dump else fx.first_difference(ref_dump, got)))

    # the acceptance counts the sweep stored equal what the token logs show (records/metrics.h): per run,
    # accepted - verifier_accepts = sd_accept events (kind 3), rejected = sd_resample events (kind 4)
    kinds, run = {}, None
    for line in got.splitlines():
        if line.startswith("tokens "):
            run = line.split()[1]
        elif run and line.strip().startswith("kind["):
            ks = [int(x) for x in line.split()[1:]]
            kinds[run] = (ks.count(3), ks.count(4))
    con = sqlite3.connect(os.path.join(out, "runs.sqlite"))
    stored = {h: (a - v, r) for h, a, v, r in con.execute(
        "SELECT run_hash, SUM(accepted), SUM(verifier_accepts), SUM(rejected) FROM prompts GROUP BY run_hash")}
    con.close()
    t.check(len(kinds) == len(stored) and all(stored[h] == kinds.get(h) for h in stored) and
            sum(r for _, r in stored.values()) > 0,
            "prompts.accepted - verifier_accepts and prompts.rejected equal the logs' sd_accept / sd_resample "
            "events in all %d runs (%d rejections)" % (len(stored), sum(r for _, r in stored.values())))
    s = subprocess.run([args.sprinter, "summary", out, "--tsv"], stdout=subprocess.PIPE, text=True)
    rows = [ln.split("\t") for ln in s.stdout.splitlines()]
    sd = [dict(zip(rows[0], r)) for r in rows[1:] if r[0] == "sd"]
    t.check(s.returncode == 0 and sd and all(0 < float(r["accept_rate"]) < 1 and
                                              float(r["accept_rate_lo"]) <= float(r["accept_rate"]) <=
                                              float(r["accept_rate_hi"]) for r in sd),
            "summary --tsv gives sd an acceptance rate inside its interval: %s" %
            [(r.get("accept_rate"), r.get("accept_rate_lo"), r.get("accept_rate_hi")) for r in sd])

    # a done run whose token log was deleted or damaged is redone by the next sweep (issue 18), and the
    # sweep says which: "missing" vs "corrupt"
    logs = sorted(os.listdir(os.path.join(out, "tokens")))
    os.unlink(os.path.join(out, "tokens", logs[0]))
    with open(os.path.join(out, "tokens", logs[1]), "r+b") as f:
        f.truncate(100)
    p = sweep(args, spec, out)
    rc, got2, err2 = fx.dump(args.dump, out)
    t.check(p.returncode == 0 and "missing; redoing it" in p.stderr and "is corrupt" in p.stderr and rc == 0 and
            got2 == ref_dump,
            "a deleted and a truncated token log: both runs redone, results equal the reference (exit %d) %r %s" %
            (p.returncode, p.stderr.strip()[-400:], "" if got2 == ref_dump else fx.first_difference(ref_dump, got2)))

    # summary from the database
    s = subprocess.run([args.sprinter, "summary", out], stdout=subprocess.PIPE, text=True)
    t.check(s.returncode == 0 and all(m in s.stdout for m in ("ar", "sd", "sprinter", "oracle-iid", "eta_FP")),
            "sprinter summary prints the per-method table")
    t.finish()


if __name__ == "__main__":
    main()
