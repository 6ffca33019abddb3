"""Shared pieces of the fault-injection tests (tests/fault_*.py): a directory where the disk fills
up (a small tmpfs when mount works, else the LD_PRELOAD shim tests/fault_shim.c), consistency checks
of a results directory, and command helpers.

Every test prints "NAME: N passed, M failed" and exits 0/1, or 77 (CTest SKIP_RETURN_CODE) with the
reason when the fault cannot be injected here.
"""
import argparse
import os
import re
import shutil
import sqlite3
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import sweep_fixture  # noqa: E402  (make_models, write_spec, dump, Checks)

Checks = sweep_fixture.Checks
SANITIZER = re.compile(r"ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:|SUMMARY: UndefinedBehaviorSanitizer")


def parse_args():
    """The command line every fault_*.py test takes (CMakeLists.txt passes the same four options to all)."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--sprinter", required=True)
    ap.add_argument("--dump", required=True)
    ap.add_argument("--shim", default=None)
    ap.add_argument("--work", required=True)
    return ap.parse_args()


def fresh_dir(path):
    """Start from an empty work directory, whatever an earlier run left there."""
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)


def skip(reason):
    print("SKIP: " + reason, flush=True)
    sys.exit(77)


def run(cmd, env=None, timeout=120, **kw):
    """(returncode, stdout, stderr) of cmd."""
    e = dict(os.environ)
    if env:
        e.update(env)
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace", env=e,
                       timeout=timeout, **kw)
    return p.returncode, p.stdout, p.stderr


def clean_failure(ck, what, rc, err, prefix, expect_rc=1, reason=None):
    """The documented failure: exit expect_rc, no sanitizer report, the last stderr line is one line
    starting with prefix ("sprinter sweep: ") and matching reason (a regex), if given."""
    lines = [l for l in err.splitlines() if l.strip()]
    last = lines[-1] if lines else ""
    ck.check(rc == expect_rc, "%s: exit %d, expected %d; stderr:\n%s" % (what, rc, expect_rc, err[-2000:]))
    ck.check(not SANITIZER.search(err), "%s: sanitizer report:\n%s" % (what, err[-3000:]))
    ck.check(last.startswith(prefix), "%s: last stderr line %r does not start with %r" % (what, last, prefix))
    if reason:
        ck.check(re.search(reason, last) is not None, "%s: message %r does not say %s" % (what, last, reason))
    return last


class Space:
    """A directory where writes fail with ENOSPC after about `size` bytes.

    mode "tmpfs": a tmpfs of that size mounted on the directory (needs CAP_SYS_ADMIN: root outside an
    unprivileged container); mode "shim": a plain directory, and env() gives the LD_PRELOAD settings
    of tests/fault_shim.c to pass to the process under test."""

    def __init__(self, mode, path, size, shim=None):
        self.mode, self.path, self.size, self.shim = mode, path, size, shim

    def __enter__(self):
        os.makedirs(self.path, exist_ok=True)
        if self.mode == "tmpfs":
            subprocess.run(["mount", "-t", "tmpfs", "-o", "size=%d" % self.size, "tmpfs", self.path], check=True)
        return self

    def __exit__(self, *exc):
        if self.mode == "tmpfs":
            subprocess.run(["umount", self.path], check=False)

    def env(self):
        if self.mode != "shim":
            return {}
        return {"LD_PRELOAD": self.shim, "SP_FAULT_DIR": os.path.abspath(self.path),
                "SP_FAULT_BUDGET": str(self.size),
                "ASAN_OPTIONS": "verify_asan_link_order=0:" + os.environ.get("ASAN_OPTIONS", "")}


def space_mode(work, shim):
    """"tmpfs" when this process may mount one, else "shim" when the shim library exists; else skips
    (exit 77). SP_FAULT_MODE=shim|tmpfs forces one."""
    forced = os.environ.get("SP_FAULT_MODE")
    probe = os.path.join(work, "mount-probe")
    os.makedirs(probe, exist_ok=True)
    if forced != "shim":
        ok = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=65536", "tmpfs", probe],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0
        if ok:
            subprocess.run(["umount", probe], check=False)
            return "tmpfs"
        if forced == "tmpfs":
            skip("SP_FAULT_MODE=tmpfs but mount -t tmpfs failed (needs root with CAP_SYS_ADMIN)")
    if shim and os.path.exists(shim):
        return "shim"
    skip("cannot mount a tmpfs (needs CAP_SYS_ADMIN) and no LD_PRELOAD shim (--shim libfault_shim.so) to "
         "simulate a full disk")


def integrity_ok(db_path):
    """PRAGMA integrity_check of a database copy on a normal disk: 'ok' or the problem."""
    try:
        con = sqlite3.connect(db_path, timeout=5)
        r = con.execute("PRAGMA integrity_check").fetchall()
        con.close()
        return "ok" if r == [("ok",)] else repr(r[:5])
    except sqlite3.Error as e:
        return "sqlite error: %s" % e


def leftovers(d):
    """*.tmp files anywhere under d."""
    out = []
    for root, _, files in os.walk(d):
        out += [os.path.join(root, f) for f in files if f.endswith(".tmp")]
    return out


def strip_fields(line, fields):
    """A dump line without the given ' name=value' fields (values unquoted or "quoted")."""
    for f in fields:
        line = re.sub(r' %s=("[^"]*"|\S*)' % re.escape(f), "", line)
    return line


def check_results_dir(ck, what, res, ref_lines, dump_exe, work, ignore=()):
    """A results directory left by a failed sweep (copied to a normal disk first): the database passes
    integrity_check, no *.tmp is left, and its finished runs are intact: after dropping the unfinished
    runs (rows and token logs), sweep_dump succeeds (every done run has a token log that opens) and
    prints only lines of the reference dump (compared without the fields named in ignore; the meta
    'grid' line lists the runs of the spec as swept, not finished runs, and is left out). Returns the
    number of done runs."""
    copy = os.path.join(work, "pruned")
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(res, copy, symlinks=True)
    tmp = leftovers(copy)
    ck.check(not tmp, "%s: *.tmp left behind: %s" % (what, tmp))
    db = os.path.join(copy, "runs.sqlite")
    if not os.path.exists(db):
        return 0
    ok = integrity_ok(db)
    ck.check(ok == "ok", "%s: runs.sqlite integrity_check: %s" % (what, ok))
    if ok != "ok":
        return 0
    con = sqlite3.connect(db)
    tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if "runs" not in tables:
        con.close()
        return 0
    undone = [r[0] for r in con.execute("SELECT run_hash FROM runs WHERE status != 'done'")]
    done = con.execute("SELECT COUNT(*) FROM runs WHERE status = 'done'").fetchone()[0]
    for h in undone:
        for t in ("prompts", "outputs"):
            if t in tables:
                con.execute("DELETE FROM %s WHERE run_hash = ?" % t, (h,))
        con.execute("DELETE FROM runs WHERE run_hash = ?", (h,))
        for ext in (".h5", ".h5.tmp"):
            p = os.path.join(copy, "tokens", h + ext)
            if os.path.exists(p):
                os.unlink(p)
    con.commit()
    con.close()
    for p in tmp:
        if os.path.exists(p):
            os.unlink(p)
    rc, out, err = sweep_fixture.dump(dump_exe, copy)
    ck.check(rc == 0, "%s: sweep_dump of the finished runs failed:\n%s" % (what, err[-2000:]))
    if ignore:
        ref_lines = {strip_fields(l, ignore) for l in ref_lines}
    extra = [l for l in out.splitlines()
             if not l.startswith('meta key="grid" ') and strip_fields(l, ignore) not in ref_lines]
    ck.check(not extra, "%s: %d dump lines differ from the uninterrupted sweep, first: %s" %
             (what, len(extra), extra[0][:300] if extra else ""))
    return done


def reference_sweep(ck, a):
    """The fixture every sweep fault test starts from: tiny models in WORK/m, a 2-prompt ar+sd spec,
    and an undisturbed sweep of it in WORK/ref. Returns (models dir, spec, ref dir, ref dump)."""
    m = os.path.join(a.work, "m")
    sweep_fixture.make_models(a.sprinter, m)
    spec = sweep_fixture.write_spec(m, name="f", methods="ar, sd", n_prompts=2, max_new=6)
    ref = os.path.join(a.work, "ref")
    rc, _, err = run([a.sprinter, "sweep", spec, "--out", ref, "--quiet"])
    if not ck.check(rc == 0, "reference sweep exited %d:\n%s" % (rc, err[-2000:])):
        ck.finish()
    rc, ref_dump, err = sweep_fixture.dump(a.dump, ref)
    ck.check(rc == 0, "sweep_dump of the reference failed: " + err)
    return m, spec, ref, ref_dump
