#!/usr/bin/env python3
"""Results do not depend on how the work is split.

- 3 shards (--shard I/3) partition the runs, and `sprinter merge` of their directories equals one
  unsharded sweep (sweep_dump identical: run hashes, prompt rows, token logs); merging again adds
  nothing.
- a shard left out of the merge: exit 4 and one line on stderr counting the runs of the grid that
  are missing, naming the shard; merging that shard afterwards completes the directory (exit 0,
  equal to the unsharded sweep). Shards of two specs: refused unless --allow-specs, then the grid
  is the union of theirs, and a refused merge leaves nothing in --out (no --out where it created
  one; an --out that existed kept as it was). A shard whose database holds no tables: exit 4, named.
- runs of two target contents (swept into one --out, or merged) never share a summary row, and
  analyze refuses to pool them.
- --jobs 2 (two worker processes) equals --jobs 1; killing a --jobs 2 sweep with SIGKILL takes its
  workers down too, and the resumed sweep still equals the reference.
Deterministic (fixed seeds); no false-failure rate beyond a machine too slow for the timeouts.
"""
import argparse
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sweep_fixture as fx  # noqa: E402


def run(cmd, timeout=300):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=timeout)


def hashes(out):
    con = sqlite3.connect(os.path.join(out, "runs.sqlite"))
    h = {r for (r,) in con.execute("SELECT run_hash FROM runs WHERE status='done'")}
    con.close()
    return h


def procs_with(needle):
    """Pids whose command line contains needle (read-only scan of /proc, for the orphan check)."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                if needle.encode() in f.read():
                    found.append(int(pid))
        except OSError:
            pass
    return found


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sprinter", required=True)
    ap.add_argument("--dump", required=True)
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    shutil.rmtree(args.work, ignore_errors=True)
    work = fx.make_models(args.sprinter, args.work)
    spec = fx.write_spec(work, methods="ar, draft, sd, sprinter, oracle-iid, pmin, bild")
    cache = os.path.join(work, "verifiers")
    t = fx.Checks("sweep_shard")

    def sweep(out, *extra):
        return run([args.sprinter, "sweep", spec, "--out", out, "--quiet", "--verifier-cache", cache] + list(extra))

    ref = os.path.join(work, "ref")
    p = sweep(ref)
    t.check(p.returncode == 0, "unsharded sweep exits 0 (%s)" % p.stderr.strip()[-300:])
    rc, ref_dump, err = fx.dump(args.dump, ref)
    t.check(rc == 0, "reference directory is consistent (%s)" % err.strip()[:300])
    all_runs = hashes(ref)

    base = os.path.join(work, "sharded")
    parts = []
    for i in range(3):
        p = sweep(base, "--shard", "%d/3" % i)
        t.check(p.returncode == 0, "shard %d/3 exits 0 (%s)" % (i, p.stderr.strip()[-300:]))
        parts.append(hashes(os.path.join(base, "shard-%d" % i)))
    t.check(all(parts) and set().union(*parts) == all_runs and sum(len(x) for x in parts) == len(all_runs),
            "3 shards partition the %d runs (%s)" % (len(all_runs), [len(x) for x in parts]))

    shard_dirs = [os.path.join(base, "shard-%d" % i) for i in range(3)]
    m = run([args.sprinter, "merge", "--quiet"] + shard_dirs)
    t.check(m.returncode == 0 and ("merged %d runs" % len(all_runs)) in m.stdout,
            "merge adds every run once (%s%s)" % (m.stdout.strip(), m.stderr.strip()))
    rc, got, err = fx.dump(args.dump, base)
    t.check(rc == 0, "merged directory is consistent (%s)" % err.strip()[:300])
    t.check(got == ref_dump, "3 merged shards equal one unsharded sweep: " +
            ("same" if got == ref_dump else fx.first_difference(ref_dump, got)))
    m = run([args.sprinter, "merge", "--out", base, "--quiet"] + shard_dirs)
    rc, again, _ = fx.dump(args.dump, base)
    t.check(m.returncode == 0 and "merged 0 runs" in m.stdout and ("%d duplicates" % len(all_runs)) in m.stdout
            and again == ref_dump, "merging again adds nothing (%s)" % m.stdout.strip())

    # a shard left out: the runs of the grid it holds are reported missing (exit 4), not merged silently
    con = sqlite3.connect(os.path.join(ref, "runs.sqlite"))
    idx = [i for (i,) in con.execute("SELECT run_index FROM runs ORDER BY run_index")]
    con.close()
    in2 = [i for i in idx if i % 3 == 2]
    part = os.path.join(work, "partial")
    m = run([args.sprinter, "merge", "--quiet", "--out", part] + shard_dirs[:2])
    lines = [x for x in m.stderr.splitlines() if "missing" in x]
    want = "sprinter merge: %d of %d runs of the grid are missing" % (len(in2), len(idx))
    t.check(m.returncode == 4 and len(lines) == 1 and lines[0].startswith(want) and
            ("%d in shard 2/3 (run indexes %s" % (len(in2), ", ".join(map(str, in2[:8])))) in lines[0],
            "merge without shard 2: exit 4 (%d), one line: %s ...: %s" % (m.returncode, want, m.stderr.strip()))
    m = run([args.sprinter, "merge", "--quiet", "--out", part, shard_dirs[2]])
    rc, got, err = fx.dump(args.dump, part)
    t.check(m.returncode == 0 and not m.stderr and rc == 0 and got == ref_dump,
            "merging the missing shard afterwards completes it (exit %d %s): " % (m.returncode, m.stderr.strip()) +
            ("same" if got == ref_dump else err[:200] + fx.first_difference(ref_dump, got)))
    # shards of two specs: the union of their grids (spec 2's ar runs are spec 1's)
    spec2 = fx.write_spec(work, name="other", methods="ar")
    other = os.path.join(work, "other")
    p = run([args.sprinter, "sweep", spec2, "--out", other, "--quiet"])
    mixed = os.path.join(work, "mixed")
    m = run([args.sprinter, "merge", "--quiet", "--out", mixed, other] + shard_dirs[:2])
    t.check(p.returncode == 0 and m.returncode == 1 and len(m.stderr.splitlines()) == 1 and
            "different specs" in m.stderr and other in m.stderr and "--allow-specs" in m.stderr and
            not os.path.exists(mixed),
            "merge of two specs' shards without --allow-specs: exit 1 (%d), one line naming both, nothing merged "
            "(no --out left): %s"
            % (m.returncode, m.stderr.strip()))
    m = run([args.sprinter, "merge", "--quiet", "--allow-specs", "--out", mixed, other] + shard_dirs[:2])
    lines = [x for x in m.stderr.splitlines() if "missing" in x]
    t.check(p.returncode == 0 and m.returncode == 4 and len(lines) == 1 and lines[0].startswith(want) and
            "swept from 2 different grids" in lines[0],
            "merge of two specs' shards, one shard missing: exit 4 (%d): %s" % (m.returncode, m.stderr.strip()))
    m = run([args.sprinter, "merge", "--quiet", "--allow-specs", "--out", mixed, other] + shard_dirs)
    t.check(m.returncode == 0 and "missing" not in m.stderr and "swept from 2 different grids" in m.stderr,
            "... and with every shard: exit 0 (%d), a note: %s" % (m.returncode, m.stderr.strip()))

    # a shard whose database holds no tables (its sweep failed as it created it: a full disk): exit 4,
    # one line naming it, the other shards merged, its runs counted missing
    emp = os.path.join(work, "empty-shard")
    shutil.rmtree(emp, ignore_errors=True)
    edirs = [os.path.join(emp, "shard-%d" % i) for i in range(3)]
    for i in range(3):
        shutil.copytree(shard_dirs[i], edirs[i])
    for f in os.listdir(edirs[2]):
        if f.startswith("runs.sqlite"):
            os.unlink(os.path.join(edirs[2], f))
    con = sqlite3.connect(os.path.join(edirs[2], "runs.sqlite"))
    con.execute("CREATE TABLE x(a)")
    con.execute("DROP TABLE x")
    con.close()
    m = run([args.sprinter, "merge", "--quiet", "--out", emp] + edirs)
    named = [x for x in m.stderr.splitlines() if os.path.join(edirs[2], "runs.sqlite") in x and "no tables" in x]
    t.check(m.returncode == 4 and len(named) == 1 and hashes(emp) == parts[0] | parts[1] and
            ("%d in shard 2/3" % len(in2)) in m.stderr,
            "merge with a shard whose database has no tables: exit 4 (%d), one line naming it, shards 0 and 1 "
            "merged (%d runs): %s" % (m.returncode, len(hashes(emp)) if os.path.exists(os.path.join(emp, "runs.sqlite"))
                                       else -1, m.stderr.strip()))
    open(os.path.join(edirs[2], "runs.sqlite"), "w").close()  # a 0-byte database: the same
    m = run([args.sprinter, "merge", "--quiet", "--out", emp, edirs[2]])
    t.check(m.returncode == 4 and "no tables" in m.stderr and edirs[2] in m.stderr,
            "... a 0-byte runs.sqlite alone: exit 4 (%d): %s" % (m.returncode, m.stderr.strip()))

    # runs of two target contents never share a row: a spec with another target swept into the same
    # --out (ar runs of seeds 1, 2 each), and shards of the two targets merged
    t2 = os.path.join(work, "target2")
    shutil.rmtree(t2, ignore_errors=True)
    subprocess.run([args.sprinter, "init-random", "--arch", "gpt2", "--config", os.path.join(work, "target.json"),
                    "--seed", "7", "--out", t2], check=True, stdout=subprocess.DEVNULL)
    for fn in ("vocab.json", "merges.txt"):
        shutil.copy(os.path.join(work, "target", fn), t2)
    spec_t2 = fx.write_spec(work, name="other_t2", methods="ar")
    with open(spec_t2) as f:
        txt = f.read().replace("target = %s/target\n" % work, "target = %s\n" % t2)
    with open(spec_t2, "w") as f:
        f.write(txt)
    both = os.path.join(work, "two-targets")
    shutil.rmtree(both, ignore_errors=True)
    shutil.copytree(other, both)
    p = run([args.sprinter, "sweep", spec_t2, "--out", both, "--quiet"])

    def ar_rows(d):
        s = run([args.sprinter, "summary", d, "--tsv"])
        head = s.stdout.splitlines()[0].split("\t") if s.stdout else []
        rows = [dict(zip(head, x.split("\t"))) for x in s.stdout.splitlines()[1:]]
        return s.returncode, [r for r in rows if r.get("method") == "ar"]

    rc, rows = ar_rows(both)
    t.check(p.returncode == 0 and rc == 0 and len(rows) == 2 and all(r["runs"] == "2" for r in rows) and
            len({r.get("target_sha256") for r in rows}) == 2,
            "two targets swept into one --out: two ar rows of 2 runs, one per target sha256 (%s)" %
            [(r.get("runs"), r.get("target_sha256", "?")[:8]) for r in rows])
    s = run([args.sprinter, "summary", both])
    t.check(s.returncode == 0 and "several model contents" in s.stdout and "target=" in s.stdout,
            "... the table shows the target of each row and a note (%s)" % s.stdout.strip()[-300:])
    a = run([args.sprinter, "analyze", both, "--quiet", "--no-plots"])
    t.check(a.returncode != 0 and len(a.stderr.strip().splitlines()) == 1 and "different target model contents"
            in a.stderr, "... analyze refuses to pool them: exit %d, %s" % (a.returncode, a.stderr.strip()[-300:]))
    t2s = os.path.join(work, "t2-sharded")
    p = [run([args.sprinter, "sweep", spec_t2, "--out", t2s, "--quiet", "--shard", "%d/2" % i]) for i in range(2)]
    t2dirs = [os.path.join(t2s, "shard-%d" % i) for i in range(2)]
    mt = os.path.join(work, "two-targets-merged")
    m = run([args.sprinter, "merge", "--quiet", "--out", mt, other] + t2dirs)
    t.check(all(x.returncode == 0 for x in p) and m.returncode == 1 and "different specs" in m.stderr,
            "shards of two targets: merge refused without --allow-specs (%d): %s" % (m.returncode, m.stderr.strip()))
    t.check(not os.path.exists(mt), "... the refused merge leaves no --out behind (it created none): %s" %
            (sorted(os.listdir(mt)) if os.path.isdir(mt) else "exists" if os.path.exists(mt) else "absent"))
    pre = os.path.join(work, "two-targets-pre")
    shutil.rmtree(pre, ignore_errors=True)
    os.makedirs(pre)
    with open(os.path.join(pre, "keep.txt"), "w") as f:
        f.write("mine\n")
    m = run([args.sprinter, "merge", "--quiet", "--out", pre, other] + t2dirs)
    t.check(m.returncode == 1 and sorted(os.listdir(pre)) == ["keep.txt"],
            "... refused into an --out that held a file: the directory kept as it was (%d): %s" %
            (m.returncode, sorted(os.listdir(pre)) if os.path.isdir(pre) else "gone"))
    os.makedirs(os.path.join(work, "two-targets-empty"), exist_ok=True)
    m = run([args.sprinter, "merge", "--quiet", "--out", os.path.join(work, "two-targets-empty"), other] + t2dirs)
    t.check(m.returncode == 1 and os.path.isdir(os.path.join(work, "two-targets-empty")) and
            not os.listdir(os.path.join(work, "two-targets-empty")),
            "... refused into an empty --out that existed: left there, empty (%d)" % m.returncode)
    m = run([args.sprinter, "merge", "--quiet", "--allow-specs", "--out", mt, other] + t2dirs)
    rc, rows = ar_rows(mt)
    t.check(m.returncode == 0 and rc == 0 and len(rows) == 2 and all(r["runs"] == "2" for r in rows),
            "... merged with --allow-specs: still two ar rows of 2 runs (%s)" % [r.get("runs") for r in rows])

    j2 = os.path.join(work, "jobs2")
    p = sweep(j2, "--jobs", "2")
    t.check(p.returncode == 0, "--jobs 2 exits 0 (%s)" % p.stderr.strip()[-300:])
    rc, got, err = fx.dump(args.dump, j2)
    t.check(rc == 0 and got == ref_dump, "--jobs 2 equals --jobs 1: " +
            ("same" if got == ref_dump else err[:200] + fx.first_difference(ref_dump, got)))

    j2k = os.path.join(work, "jobs2-killed")
    proc = subprocess.Popen([args.sprinter, "sweep", spec, "--out", j2k, "--quiet", "--verifier-cache", cache,
                             "--jobs", "2", "--test-delay-ms", "30"], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    time.sleep(0.6)
    proc.send_signal(signal.SIGKILL)
    rc = proc.wait(timeout=60)
    t.check(rc == -signal.SIGKILL, "the --jobs 2 sweep was killed mid-way (rc %d)" % rc)
    left = []
    for _ in range(50):
        left = procs_with(j2k)
        if not left:
            break
        time.sleep(0.1)
    t.check(not left, "its worker processes died with it (left: %s)" % left)
    p = sweep(j2k, "--jobs", "2")
    rc, got, err = fx.dump(args.dump, j2k)
    t.check(p.returncode == 0 and rc == 0 and got == ref_dump, "resumed --jobs 2 sweep equals the reference: " +
            ("same" if got == ref_dump else err[:200] + fx.first_difference(ref_dump, got)))
    t.finish()


if __name__ == "__main__":
    main()
