#!/usr/bin/env python3
"""Fault injection: the results database is locked by someone else while a sweep writes (issue 8).

  1. A second process holds a write lock on OUT/runs.sqlite (`sqlite3` CLI: BEGIN EXCLUSIVE, or
     Python's sqlite3 when the CLI is missing) for HOLD seconds in the middle of a sweep. The sweep
     waits for it (SQLite busy timeout, 120 s in experiments/db.c) instead of failing or losing a run:
     exit 0, and the results are identical to an undisturbed sweep (sweep_dump).
  2. A second `sprinter sweep` on the same results directory while the first runs is refused at once
     (OUT/.sweep.lock): exit 1, one line naming the directory; the first sweep is unaffected.
  After both: PRAGMA integrity_check is ok and no *.tmp is left.
  (A lock held longer than the busy timeout makes the sweep fail with "database is locked", exit 1;
  not run here: it takes over two minutes.)

usage: fault_sqlite_locked.py --sprinter BIN --dump SWEEP_DUMP --work DIR [--shim LIB (unused)]
"""
import os
import shutil
import sqlite3
import subprocess
import sys
import time

from fault_common import SANITIZER, Checks, clean_failure, integrity_ok, leftovers, run, sweep_fixture, reference_sweep, fresh_dir, parse_args

HOLD = 2.0

LOCKER_PY = r"""
import sqlite3, sys, time
con = sqlite3.connect(sys.argv[1], timeout=30, isolation_level=None)
con.execute("BEGIN EXCLUSIVE")
print("locked", flush=True)
time.sleep(float(sys.argv[2]))
con.execute("COMMIT")
con.close()
print("released", flush=True)
"""


def wait_for(pred, timeout, step=0.02):
    t0 = time.time()
    while time.time() - t0 < timeout:
        if pred():
            return True
        time.sleep(step)
    return False


def runs_started(db):
    """Number of rows in runs (0 when the database or table is not there yet)."""
    if not os.path.exists(db):
        return 0
    try:
        con = sqlite3.connect("file:%s?mode=ro" % db, uri=True, timeout=0.1)
        n = con.execute("SELECT COUNT(*) FROM runs").fetchone()[0]
        con.close()
        return n
    except sqlite3.Error:
        return 0


def hold_lock(db, seconds):
    """Starts a process holding BEGIN EXCLUSIVE on db for `seconds`; returns it once it holds it."""
    cli = shutil.which("sqlite3")
    if cli:
        p = subprocess.Popen([cli, db], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
        p.stdin.write(".timeout 30000\nBEGIN EXCLUSIVE;\nSELECT 'locked';\n")
        p.stdin.flush()
        line = p.stdout.readline().strip()
        return p, line == "locked", lambda: (p.stdin.write("COMMIT;\n.quit\n"), p.stdin.flush())
    p = subprocess.Popen([sys.executable, "-c", LOCKER_PY, db, str(seconds)], stdout=subprocess.PIPE, text=True)
    line = p.stdout.readline().strip()
    return p, line == "locked", lambda: None


def main():
    a = parse_args()
    fresh_dir(a.work)
    ck = Checks("fault_sqlite_locked")
    m, spec, ref, ref_dump = reference_sweep(ck, a)

    # 1. a writer holds the database for HOLD seconds in the middle of the sweep
    out = os.path.join(a.work, "locked")
    db = os.path.join(out, "runs.sqlite")
    t0 = time.time()
    sweep = subprocess.Popen([a.sprinter, "sweep", spec, "--out", out, "--quiet", "--test-delay-ms", "100"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace")
    ck.check(wait_for(lambda: runs_started(db) >= 1, 60), "the sweep never wrote its first run row")
    locker, locked, release = hold_lock(db, HOLD)
    ck.check(locked, "could not take the exclusive lock on runs.sqlite")
    t_lock = time.time()
    time.sleep(HOLD)
    release()
    locker.wait(timeout=30)
    t_release = time.time()
    sout, serr = sweep.communicate(timeout=120)
    t_end = time.time()
    ck.check(sweep.returncode == 0, "sweep under a held lock exited %d:\n%s" % (sweep.returncode, serr[-2000:]))
    ck.check(not SANITIZER.search(serr), "sanitizer report:\n" + serr[-3000:])
    ck.check(t_end >= t_release - 0.05, "the sweep finished before the lock was released")
    rc, dump, derr = sweep_fixture.dump(a.dump, out)
    ck.check(rc == 0 and dump == ref_dump, "results after the lock differ from the undisturbed sweep: %s" %
             (derr[-500:] or sweep_fixture.first_difference(ref_dump, dump)))
    ck.check(integrity_ok(db) == "ok", "integrity_check after the lock: " + integrity_ok(db))
    ck.check(not leftovers(out), "*.tmp left: %s" % leftovers(out))
    print("  lock held %.1f s at %.1f s into the sweep; sweep waited and finished at %.1f s, results identical" %
          (t_release - t_lock, t_lock - t0, t_end - t0), flush=True)

    # 2. a second sweep on the same directory while the first one runs
    out2 = os.path.join(a.work, "twice")
    first = subprocess.Popen([a.sprinter, "sweep", spec, "--out", out2, "--quiet", "--test-delay-ms", "100"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace")
    ck.check(wait_for(lambda: runs_started(os.path.join(out2, "runs.sqlite")) >= 1, 60), "first sweep did not start")
    t1 = time.time()
    rc, _, err = run([a.sprinter, "sweep", spec, "--out", out2, "--quiet"], timeout=60)
    msg = clean_failure(ck, "second sweep on the same directory", rc, err, "sprinter sweep: ")
    ck.check(time.time() - t1 < 10, "the second sweep waited instead of failing at once")
    ck.check(out2 in msg or "lock" in msg, "the refusal %r names neither the directory nor the lock" % msg)
    _, ferr = first.communicate(timeout=120)
    ck.check(first.returncode == 0, "first sweep exited %d:\n%s" % (first.returncode, ferr[-2000:]))
    rc, dump, derr = sweep_fixture.dump(a.dump, out2)
    ck.check(rc == 0 and dump == ref_dump, "first sweep's results differ: %s" %
             (derr[-500:] or sweep_fixture.first_difference(ref_dump, dump)))
    print("  second sweep refused: %s" % msg[:160], flush=True)
    ck.finish()


if __name__ == "__main__":
    main()
