#!/usr/bin/env python3
"""Fault injection: the disk fills up during `sprinter sweep`, `sprinter collect` and
`sprinter init-random` (issue 8).

The full disk is a small tmpfs mounted on the output directory when this process may mount (root with
CAP_SYS_ADMIN), else the LD_PRELOAD shim tests/fault_shim.c (--shim), which fails writes under a
directory with ENOSPC after a byte budget; with neither the test skips (exit 77). SP_FAULT_MODE=shim
forces the shim.

Documented behaviour checked here:
  - exit 1, nothing from the sanitizers, and one last stderr line "sprinter CMD: FILE: ..." saying the
    disk is full ("No space left", "disk is full", "disk full", "write failed");
  - a message from SQLite names SQLite's extended result code, and the errno where SQLite saw one
    (experiments/db.c), instead of SQLite's vague text alone:
        runs.sqlite: BEGIN IMMEDIATE: disk I/O error (SQLITE_IOERR_SHMSIZE, errno 28: No space left on device)
        runs.sqlite: COMMIT: database or disk is full (SQLITE_FULL)
    (SQLite reports a short write as SQLITE_FULL and clears its errno, so that one has none);
  - no *.tmp left behind; a model or HDF5 file under its final name is complete;
  - sweep: runs.sqlite passes PRAGMA integrity_check, every run marked done has its token log and
    both match an uninterrupted sweep exactly (nothing lost among finished runs), and rerunning the
    sweep on the same directory with space again finishes it, identical to the uninterrupted sweep.
Scenarios: the results directory on a small disk (several sizes, so the disk fills while SQLite
creates its database, while a token log is written and while a run is committed); only tokens/ on a
small disk (HDF5 write failure with the database on a healthy disk); collect's HDF5 output; the
model directory of init-random.

usage: fault_disk_full.py --sprinter BIN --dump SWEEP_DUMP [--shim LIB] --work DIR
"""
import os
import re
import shutil
import subprocess

from fault_common import SANITIZER, Checks, Space, check_results_dir, clean_failure, leftovers, run, space_mode, sweep_fixture, reference_sweep, fresh_dir, parse_args

FULL = r"No space left|disk is full|disk full|write failed|flush failed|close failed|disk I/O error"
# SQLite's messages (runs.sqlite) and what each must carry: the extended result code, and errno 28 for
# an I/O error (SQLITE_FULL comes from a short write, for which SQLite keeps no errno)
SQLITE_MESSAGES = (
    ("disk I/O error", r"disk I/O error \(SQLITE_IOERR_[A-Z_]+, errno 28: No space left on device\)$"),
    ("database or disk is full", r"database or disk is full \(SQLITE_FULL\)$"),
    ("runs.sqlite: ", r"\((SQLITE_[A-Z_]+)(, errno \d+: [^)]+)?\)$"),
)


def check_sqlite_message(ck, what, msg):
    """A full-disk message from SQLite has the form its row of SQLITE_MESSAGES gives."""
    for text, form in SQLITE_MESSAGES:
        if text in msg:
            ck.check(re.search(form, msg) is not None, "%s: SQLite's message %r lacks the extended code / errno (%s)" %
                     (what, msg, form))
            return


def sweep_on_small_disk(ck, a, mode, spec, ref_lines, ref_dump, size, tokens_only=False):
    """One sweep whose results directory (or only its tokens/) sits on a disk of `size` bytes: its error
    message, or "" when the sweep fitted."""
    what = "sweep, %s on %d bytes" % ("tokens/" if tokens_only else "results dir", size)
    if tokens_only:
        res = os.path.join(a.work, "res-tokens")
        limited = os.path.join(res, "tokens")
        shutil.rmtree(res, ignore_errors=True)
    else:
        limited = os.path.join(a.work, "disk")
        res = os.path.join(limited, "res")
        shutil.rmtree(limited, ignore_errors=True)
    with Space(mode, limited, size, a.shim) as sp:
        rc, _, err = run([a.sprinter, "sweep", spec, "--out", res, "--quiet"], env=sp.env())
        saved = os.path.join(a.work, "saved")
        shutil.rmtree(saved, ignore_errors=True)
        if os.path.exists(res):
            shutil.copytree(res, saved, symlinks=True)
    if rc == 0:
        return ""  # it fitted: no fault this time
    msg = clean_failure(ck, what, rc, err, "sprinter sweep: ", reason=FULL)
    check_sqlite_message(ck, what, msg)
    done = check_results_dir(ck, what, saved, ref_lines, a.dump, a.work) if os.path.exists(saved) else 0
    # resume with space again: the finished runs are kept, the rest redone, same bytes as never failing
    rc, _, err = run([a.sprinter, "sweep", spec, "--out", saved, "--quiet"])
    ck.check(rc == 0, "%s: rerun with space exited %d:\n%s" % (what, rc, err[-2000:]))
    drc, out, derr = sweep_fixture.dump(a.dump, saved)
    ck.check(drc == 0 and out == ref_dump, "%s: rerun differs from the uninterrupted sweep: %s" %
             (what, derr[-500:] or sweep_fixture.first_difference(ref_dump, out)))
    print("  %-36s %d runs done, rerun ok; %s" % (what, done, msg[-150:]), flush=True)
    return msg


def main():
    a = parse_args()
    a.sprinter, a.dump = os.path.abspath(a.sprinter), os.path.abspath(a.dump)
    a.shim = os.path.abspath(a.shim) if a.shim else None
    for d in ("disk", "res-tokens/tokens", "collect-disk", "model-disk", "gguf-disk", "analyze-disk"):
        p = os.path.join(a.work, d)
        if os.path.ismount(p):
            subprocess.run(["umount", p], check=False)
    fresh_dir(a.work)
    mode = space_mode(a.work, a.shim)
    print("fault_disk_full: full disk simulated with %s" % mode, flush=True)
    ck = Checks("fault_disk_full")

    m, spec, ref, ref_dump = reference_sweep(ck, a)
    ref_lines = set(ref_dump.splitlines())
    total = sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(ref) for f in fs)
    logs = sorted(os.path.getsize(os.path.join(ref, "tokens", f)) for f in os.listdir(os.path.join(ref, "tokens")))

    # 1. the whole results directory on a small disk: the fault lands in SQLite's first pages, the
    #    token logs, and the commits of later runs
    faults = []
    sizes = [8 << 10, 120 << 10, int(total * 0.95)] if mode == "tmpfs" else \
            [2 << 10, int(total * 0.6), int(total * 0.9)]
    for size in sizes:
        msg = sweep_on_small_disk(ck, a, mode, spec, ref_lines, ref_dump, size)
        if msg:
            faults.append(msg)
    ck.check(len(faults) >= 2, "only %d of %d small-disk sweeps hit the full disk" % (len(faults), len(sizes)))
    ck.check(any(re.search(r"runs\.sqlite: .*\(SQLITE_[A-Z_]+", m) for m in faults),
             "no small-disk sweep failed inside SQLite (expected at %d bytes): %s" % (sizes[0], faults))

    # 2. HDF5 write failure: tokens/ on a disk with room for about one and a half token logs, the
    #    database on a healthy disk
    hit = sweep_on_small_disk(ck, a, mode, spec, ref_lines, ref_dump, logs[0] + logs[0] // 2, tokens_only=True)
    ck.check(bool(hit), "the tokens/-only small disk did not make the sweep fail")

    # 3. collect: its HDF5 output on a small disk
    cdir = os.path.join(a.work, "collect-disk")
    with Space(mode, cdir, 4096 if mode == "tmpfs" else 2048, a.shim) as sp:
        out = os.path.join(cdir, "c.h5")
        rc, _, err = run([a.sprinter, "collect", "--draft", m + "/draft", "--target", m + "/target", "--data",
                          m + "/data.jsonl", "--lambda", "1.5", "--n-prompts", "4", "--max-new", "8", "--out", out],
                         env=sp.env())
        clean_failure(ck, "collect on a full disk", rc, err, "sprinter collect: ", reason=FULL)
        ck.check(not os.path.exists(out), "collect on a full disk left %s" % out)
        ck.check(not leftovers(cdir), "collect on a full disk left %s" % leftovers(cdir))
        print("  %-40s exit %d: %s" % ("collect on a full disk", rc, err.strip().splitlines()[-1][:160]
                                       if err.strip() else ""), flush=True)

    # 4. init-random: the model directory on a small disk (config.json fits, the weights do not)
    mdir = os.path.join(a.work, "model-disk")
    cfg = os.path.join(m, "target.json")
    with Space(mode, mdir, 16 << 10, a.shim) as sp:
        out = os.path.join(mdir, "model")
        rc, _, err = run([a.sprinter, "init-random", "--arch", "gpt2", "--config", cfg, "--out", out], env=sp.env())
        clean_failure(ck, "init-random on a full disk", rc, err, "sprinter init-random: ", reason=FULL)
        ck.check(not os.path.exists(os.path.join(out, "model.safetensors")),
                 "init-random on a full disk left a model.safetensors")
        ck.check(not leftovers(mdir), "init-random on a full disk left %s" % leftovers(mdir))
        rc2, _, err2 = run([a.sprinter, "info", "--model", out])
        ck.check(rc2 == 1 and not SANITIZER.search(err2), "info on the half-written model: exit %d %s" %
                 (rc2, err2[-300:]))
        print("  %-40s exit %d: %s" % ("init-random on a full disk", rc, err.strip().splitlines()[-1][:160]
                                       if err.strip() else ""), flush=True)

    # 5. export-gguf and analyze on a full disk: the message gives the errno's text, not only "write
    #    failed" (issue 27, class 10); nothing partial is left
    ENOSPC = r"write failed.*: No space left on device"
    gdir = os.path.join(a.work, "gguf-disk")
    with Space(mode, gdir, 16 << 10 if mode == "tmpfs" else 8 << 10, a.shim) as sp:
        out = os.path.join(gdir, "t.gguf")
        rc, _, err = run([a.sprinter, "export-gguf", "--model", m + "/target", "--out", out], env=sp.env())
        clean_failure(ck, "export-gguf on a full disk", rc, err, "sprinter export-gguf: ", reason=ENOSPC)
        ck.check(not os.path.exists(out) and not leftovers(gdir), "export-gguf on a full disk left %s" %
                 os.listdir(gdir))
        print("  %-40s exit %d: %s" % ("export-gguf on a full disk", rc, err.strip().splitlines()[-1][:160]
                                       if err.strip() else ""), flush=True)
    adir = os.path.join(a.work, "analyze-disk")
    total_ref = sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(ref) for f in fs)
    with Space(mode, adir, (total_ref // 4096 + 6) * 4096 if mode == "tmpfs" else 1024, a.shim) as sp:
        res = os.path.join(adir, "res")
        shutil.copytree(ref, res)
        rc, _, err = run([a.sprinter, "analyze", res, "--no-plots", "--bootstrap", "10"], env=sp.env())
        clean_failure(ck, "analyze on a full disk", rc, err, "sprinter analyze: ", reason=ENOSPC)
        ck.check(not os.path.exists(os.path.join(res, "report")) and
                 not [f for f in os.listdir(res) if f.startswith(".report")],
                 "analyze on a full disk left %s" % os.listdir(res))
        print("  %-40s exit %d: %s" % ("analyze on a full disk", rc, err.strip().splitlines()[-1][:160]
                                       if err.strip() else ""), flush=True)
    ck.finish()


if __name__ == "__main__":
    main()
