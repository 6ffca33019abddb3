#!/usr/bin/env python3
"""Fault injection: SIGTERM / SIGINT during a sweep (issue 8). Written against the intended
behaviour, which experiments/runner.c is to implement (CTest fault_signals is DISABLED until then):

  - the sweep stops cleanly: exit 143 for SIGTERM, 130 for SIGINT (128 + signal number);
  - its last stderr line is
        sprinter sweep: interrupted by SIGTERM; run RUNHASH discarded; N of M runs done
    where RUNHASH (12 to 64 hex digits) names the run in progress, which is not marked done and whose
    token log is deleted, N counts the runs marked done in runs.sqlite and M is the number of runs in
    the grid (this shard);
  - no *.tmp is left, runs.sqlite passes PRAGMA integrity_check, every done run is identical to an
    uninterrupted sweep's, and rerunning the sweep finishes it with results identical to an
    uninterrupted sweep.
Cases: SIGTERM after the first run is done, SIGINT after the first run is done, SIGTERM during the
very first run (0 of M done), and SIGTERM with --jobs 2 (the parent forwards it to its workers;
the line names one of the runs in progress).

usage: fault_signals.py --sprinter BIN --dump SWEEP_DUMP --work DIR [--shim LIB (unused)]
"""
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import time

from fault_common import SANITIZER, Checks, check_results_dir, run, sweep_fixture, reference_sweep, fresh_dir, parse_args

LINE = re.compile(r"^sprinter sweep: interrupted by (SIGTERM|SIGINT); runs? ([0-9a-f]{12,64}(?:, [0-9a-f]{12,64})*) "
                  r"discarded; (\d+) of (\d+) runs done$")


def done_runs(db):
    try:
        con = sqlite3.connect("file:%s?mode=ro" % db, uri=True, timeout=0.2)
        n = con.execute("SELECT COUNT(*) FROM runs WHERE status = 'done'").fetchone()[0]
        con.close()
        return n
    except sqlite3.Error:
        return 0


def any_run(db):
    try:
        con = sqlite3.connect("file:%s?mode=ro" % db, uri=True, timeout=0.2)
        n = con.execute("SELECT COUNT(*) FROM runs").fetchone()[0]
        con.close()
        return n
    except sqlite3.Error:
        return 0


def grid_hashes(sprinter, spec, out):
    """Run hash prefixes (16 hex digits) of the spec's grid, from sweep --dry-run."""
    rc, so, _ = run([sprinter, "sweep", spec, "--out", out, "--dry-run"])
    return set(re.findall(r"^\s*\d+ ([0-9a-f]{16}) ", so, re.M)) if rc == 0 else set()


def in_grid(h, prefixes):
    return any(p.startswith(h) or h.startswith(p) for p in prefixes)


def interrupt(ck, a, spec, ref_dump, ref_lines, name, sig, after_done, jobs=1):
    what = "%s %s" % (name, "after %d run(s) done" % after_done if after_done else "during the first run")
    out = os.path.join(a.work, name)
    shutil.rmtree(out, ignore_errors=True)
    db = os.path.join(out, "runs.sqlite")
    p = subprocess.Popen([a.sprinter, "sweep", spec, "--out", out, "--quiet", "--test-delay-ms", "300",
                          "--jobs", str(jobs)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         errors="replace")
    t0 = time.time()
    while time.time() - t0 < 60 and p.poll() is None:
        if (done_runs(db) >= after_done) if after_done else any_run(db) >= 1:
            break
        time.sleep(0.02)
    time.sleep(0.1)  # inside a run: a prompt takes 300 ms
    ck.check(p.poll() is None, "%s: the sweep ended before the signal" % what)
    p.send_signal(sig)
    try:
        _, err = p.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        p.kill()
        _, err = p.communicate()
        ck.check(False, "%s: the sweep did not stop within 30 s of the signal" % what)
    want = 128 + int(sig)
    ck.check(p.returncode == want, "%s: exit %d, expected %d; stderr:\n%s" % (what, p.returncode, want, err[-1500:]))
    ck.check(not SANITIZER.search(err), "%s: sanitizer report:\n%s" % (what, err[-3000:]))
    lines = [l for l in err.splitlines() if l.strip()]
    last = lines[-1] if lines else ""
    m = LINE.match(last)
    ck.check(m is not None, "%s: last stderr line %r is not \"sprinter sweep: interrupted by SIG...; run RUNHASH "
                            "discarded; N of M runs done\"" % (what, last))
    n_done = check_results_dir(ck, what, out, ref_lines, a.dump, a.work)
    if m:
        sig_name, hs, n, total = m.group(1), m.group(2).split(", "), int(m.group(3)), int(m.group(4))
        ck.check(sig_name == signal.Signals(sig).name, "%s: the line names %s" % (what, sig_name))
        ck.check(n == n_done, "%s: the line says %d runs done, runs.sqlite has %d" % (what, n, n_done))
        ck.check(total == len(a.hashes), "%s: the line says %d runs, the grid has %d" % (what, total, len(a.hashes)))
        ck.check(len(hs) == 1 or jobs > 1, "%s: %d runs discarded with one worker" % (what, len(hs)))
        for h in hs:
            ck.check(in_grid(h, a.hashes), "%s: %s is not a run of the grid" % (what, h))
            con = sqlite3.connect(db)
            st = con.execute("SELECT status FROM runs WHERE run_hash LIKE ?", (h + "%",)).fetchall()
            con.close()
            ck.check(all(r[0] != "done" for r in st), "%s: the discarded run %s is marked done" % (what, h))
            tok = os.path.join(out, "tokens")
            ck.check(not (os.path.isdir(tok) and any(f.startswith(h) for f in os.listdir(tok))),
                     "%s: the discarded run %s still has a token log" % (what, h))
        ck.check(not after_done or n >= after_done, "%s: only %d runs done" % (what, n))
    rc, _, err2 = run([a.sprinter, "sweep", spec, "--out", out, "--quiet"])
    ck.check(rc == 0, "%s: rerun exited %d:\n%s" % (what, rc, err2[-1500:]))
    drc, dump, derr = sweep_fixture.dump(a.dump, out)
    ck.check(drc == 0 and dump == ref_dump, "%s: rerun differs from the uninterrupted sweep: %s" %
             (what, derr[-500:] or sweep_fixture.first_difference(ref_dump, dump)))
    print("  %-32s exit %d: %s" % (what, p.returncode, last[:160]), flush=True)


def main():
    a = parse_args()
    fresh_dir(a.work)
    ck = Checks("fault_signals")
    m, spec, ref, ref_dump = reference_sweep(ck, a)
    ref_lines = set(ref_dump.splitlines())
    a.hashes = grid_hashes(a.sprinter, spec, os.path.join(a.work, "dry"))
    ck.check(len(a.hashes) == 4, "the dry run lists %d runs, expected 4" % len(a.hashes))

    interrupt(ck, a, spec, ref_dump, ref_lines, "term", signal.SIGTERM, after_done=1)
    interrupt(ck, a, spec, ref_dump, ref_lines, "int", signal.SIGINT, after_done=1)
    interrupt(ck, a, spec, ref_dump, ref_lines, "term-first", signal.SIGTERM, after_done=0)
    interrupt(ck, a, spec, ref_dump, ref_lines, "term-jobs2", signal.SIGTERM, after_done=1, jobs=2)
    interrupt_export(ck, a, m, signal.SIGTERM)
    interrupt_export(ck, a, m, signal.SIGINT)
    ck.finish()


def interrupt_export(ck, a, m, sig):
    """SIGTERM / SIGINT while export-gguf writes OUT.tmp (issue 27, class 10): the process dies of the
    signal and leaves neither OUT nor OUT.tmp (engine/util/fsutil.h: pending PATH.tmp files are removed
    by the CLI's signal handler). The model is large enough (about 50 MB) that the write takes a while."""
    import json
    big = os.path.join(a.work, "big")
    if not os.path.isdir(big):
        with open(os.path.join(m, "target.json")) as f:
            cfg = json.load(f)
        cfg.update({"n_embd": 512, "n_layer": 4, "n_head": 8})
        with open(big + ".json", "w") as f:
            json.dump(cfg, f)
        rc, _, err = run([a.sprinter, "init-random", "--arch", "gpt2", "--config", big + ".json", "--out", big])
        for fn in ("vocab.json", "merges.txt"):
            if os.path.exists(os.path.join(m, "target", fn)):
                shutil.copy(os.path.join(m, "target", fn), big)
        ck.check(rc == 0, "init-random of the large model: %s" % err[-300:])
    out = os.path.join(a.work, "big-%d.gguf" % sig)
    p = subprocess.Popen([a.sprinter, "export-gguf", "--model", big, "--out", out], stderr=subprocess.PIPE, text=True)
    seen, t0 = False, time.time()
    while p.poll() is None and time.time() - t0 < 60:
        if os.path.exists(out + ".tmp"):
            seen = True
            p.send_signal(sig)
            break
        time.sleep(0.002)
    _, err = p.communicate(timeout=60)
    name = signal.Signals(sig).name
    if not ck.check(seen, "export-gguf %s: OUT.tmp never seen while it ran (exit %s): %s" % (name, p.returncode, err[-300:])):
        return
    ck.check(p.returncode == -sig and not SANITIZER.search(err), "export-gguf %s: died of the signal: %s %s" %
             (name, p.returncode, err[-300:]))
    ck.check(not os.path.exists(out + ".tmp") and not os.path.exists(out),
             "export-gguf %s: left %s" % (name, [f for f in os.listdir(a.work) if f.startswith("big-")]))
    print("  export-gguf %s: exit %s, nothing left" % (name, p.returncode), flush=True)


if __name__ == "__main__":
    main()
