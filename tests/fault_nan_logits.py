#!/usr/bin/env python3
"""Fault injection: a model file with a NaN (or Inf) weight, so the logits are not finite (issue 8).

Documented behaviour checked here:
  - `sprinter generate` and `sprinter decode` stop with exit 1 and one stderr line naming the problem
    ("logits contain NaN at index I" / "+Inf"), no sanitizer report, no output token invented;
  - `sprinter collect` on a NaN draft: exit 1, the same message, no output file or *.tmp left;
  - `sprinter sweep` with a NaN draft and methods ar, sd (2 seeds): a run whose logits are not
    finite is a *run failure*, not a sweep failure. The sd runs are marked status 'failed' in
    runs.sqlite with failure = "prompt P: draft model: logits at position I contain NaN at index J"
    and finished_at set, no prompt rows, no token log, no *.tmp; the sweep goes on, the ar runs (which
    never touch the draft) finish identical to a sweep with a healthy draft; stderr ends with one line
    per failed run "sprinter sweep: run HASH (sd) failed: REASON" and "sprinter sweep: finished, but 2
    of 4 runs failed ..."; exit 3. runs.sqlite passes integrity_check, sweep_dump accepts it, and
    `sprinter summary` lists the 2 failed runs with their reasons and counts none of them as done;
  - rerunning does not retry the failed runs: exit 3 again, the same lines, runs.sqlite unchanged;
    --retry-failed runs them again (they fail again, later finished_at);
  - --jobs 2 gives the same database and exit code as --jobs 1;
  - repairing the model file changes its content hash, hence the sd runs' hashes: the next sweep runs
    the new sd runs (exit 0) and equals the healthy sweep; the old failed rows stay, listed by summary;
  - the same run hashes failing and then repaired (--test-nan-logits sd: the decoder reports NaN
    logits, the configuration is unchanged): exit 3; a plain rerun changes nothing (exit 3);
    --retry-failed without the fault finishes them and the directory equals the healthy sweep's;
  - merge: a shard's failed run is carried into the merged directory as failed (merge exits 3 with
    one line counting the failed runs of the grid; the merged directory then sweeps with exit 3); a
    done run wins over a failed one, whichever directory comes first.

usage: fault_nan_logits.py --sprinter BIN --dump SWEEP_DUMP --work DIR [--shim LIB (unused)]
"""
import json
import os
import re
import shutil
import sqlite3
import struct

from fault_common import SANITIZER, Checks, check_results_dir, clean_failure, integrity_ok, leftovers, run, sweep_fixture, fresh_dir, parse_args

NONFINITE = r"logits (at position \d+ )?contain (NaN|[+-]Inf) at index \d+"


def poison(model_dir, tensor, index, value):
    """Overwrites element `index` of an F32 tensor of model_dir/model.safetensors with value."""
    path = os.path.join(model_dir, "model.safetensors")
    with open(path, "r+b") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        hdr = json.loads(f.read(n))
        e = hdr[tensor]
        assert e["dtype"] == "F32"
        f.seek(8 + n + e["data_offsets"][0] + 4 * index)
        f.write(struct.pack("<f", value))


def copy_model(src, dst, tensor, value):
    shutil.rmtree(dst, ignore_errors=True)
    shutil.copytree(src, dst)
    poison(dst, tensor, 0, value)
    return dst


def main():
    a = parse_args()
    fresh_dir(a.work)
    ck = Checks("fault_nan_logits")
    m = os.path.join(a.work, "m")
    sweep_fixture.make_models(a.sprinter, m)
    # a NaN in the first layer norm poisons every hidden state; an Inf in one embedding row of the
    # tied LM head poisons one logit
    nan_target = copy_model(m + "/target", m + "/target-nan", "transformer.h.0.ln_1.weight", float("nan"))
    inf_target = copy_model(m + "/target", m + "/target-inf", "transformer.wte.weight", float("inf"))
    nan_draft = copy_model(m + "/draft", m + "/draft-nan", "transformer.h.0.ln_1.weight", float("nan"))

    for what, model in (("generate, NaN weight", nan_target), ("generate, Inf weight", inf_target)):
        rc, out, err = run([a.sprinter, "generate", "--model", model, "--prompt-ids", "1,2,3", "--max-new", "4",
                            "--seed", "1"])
        msg = clean_failure(ck, what, rc, err, "sprinter generate: ", reason=NONFINITE)
        ck.check(out.strip() == "", "%s: printed tokens: %r" % (what, out[:200]))
        ck.check(model in msg and "logits at position 2" in msg,  # as decode: the model and the position
                 "%s: the message names the model and the position: %r" % (what, msg[:300]))
        print("  %-28s exit %d: %s" % (what, rc, msg[:150]), flush=True)

    for method in ("ar", "sd"):
        what = "decode --method %s, NaN target" % method
        rc, out, err = run([a.sprinter, "decode", "--draft", m + "/draft", "--target", nan_target, "--prompt-ids",
                            "1,2,3", "--method", method, "--max-new", "4"])
        msg = clean_failure(ck, what, rc, err, "sprinter decode: ", reason=NONFINITE)
        print("  %-28s exit %d: %s" % (what, rc, msg[:150]), flush=True)

    cout = os.path.join(a.work, "collect.h5")
    rc, _, err = run([a.sprinter, "collect", "--draft", nan_draft, "--target", m + "/target", "--data",
                      m + "/data.jsonl", "--lambda", "1.5", "--n-prompts", "2", "--max-new", "4", "--out", cout])
    msg = clean_failure(ck, "collect, NaN draft", rc, err, "sprinter collect: ", reason=NONFINITE)
    ck.check(not os.path.exists(cout) and not os.path.exists(cout + ".tmp"), "collect left its output behind")
    print("  %-28s exit %d: %s" % ("collect, NaN draft", rc, msg[:150]), flush=True)

    sweeps(ck, a, m, nan_draft)
    ck.finish()


FAILED_LINE = re.compile(r"^sprinter sweep: run ([0-9a-f]{64}) \(([\w-]+)\) failed: (.*)$")
REASON = r"^prompt \d+: draft model: " + NONFINITE + "$"
FINISHED = re.compile(r"^sprinter sweep: finished, but (\d+) of (\d+) runs failed \((\d+) now, (\d+) in an earlier "
                      r"sweep\); a rerun does not retry them, --retry-failed does$")


def failed_sweep(ck, what, rc, err, n_failed, n_now, method="sd"):
    """The documented exit of a sweep with failed runs: exit 3, no sanitizer report, one line per
    failed run, then the count line. Returns {hash: reason} from the lines."""
    lines = [l for l in err.splitlines() if l.strip()]
    ck.check(rc == 3, "%s: exit %d, expected 3; stderr:\n%s" % (what, rc, err[-2000:]))
    ck.check(not SANITIZER.search(err), "%s: sanitizer report:\n%s" % (what, err[-3000:]))
    fin = FINISHED.match(lines[-1]) if lines else None
    ck.check(fin is not None and [int(x) for x in fin.groups()] == [n_failed, 4, n_now, n_failed - n_now],
             "%s: last stderr line %r is not \"finished, but %d of 4 runs failed (%d now, ...)\"" %
             (what, lines[-1] if lines else "", n_failed, n_now))
    got = {}
    for l in lines[-1 - n_failed:-1]:
        f = FAILED_LINE.match(l)
        ck.check(f is not None, "%s: %r is not \"sprinter sweep: run HASH (METHOD) failed: REASON\"" % (what, l))
        if f:
            ck.check(f.group(2) == method and re.search(REASON, f.group(3)) is not None,
                     "%s: failed run line %r: expected method %s and reason %s" % (what, l, method, REASON))
            got[f.group(1)] = f.group(3)
    ck.check(len(got) == n_failed, "%s: %d failed-run lines, expected %d:\n%s" % (what, len(got), n_failed, err[-2000:]))
    return got


def db_rows(out, sql, args=()):
    con = sqlite3.connect(os.path.join(out, "runs.sqlite"))
    rows = con.execute(sql, args).fetchall()
    con.close()
    return rows


def failed_rows(out):
    """{hash: (failure, started_at, finished_at, n prompt rows, n outputs rows)} of the failed runs."""
    return {h: rest for h, *rest in db_rows(
        out, "SELECT run_hash, failure, started_at, finished_at, "
             "(SELECT COUNT(*) FROM prompts p WHERE p.run_hash = r.run_hash), "
             "(SELECT COUNT(*) FROM outputs o WHERE o.run_hash = r.run_hash) FROM runs r WHERE status = 'failed'")}


def snapshot(out):
    """Everything a rerun could change: every runs row (times included), prompt rows, file names."""
    files = sorted(os.listdir(os.path.join(out, "tokens")))
    return (db_rows(out, "SELECT * FROM runs ORDER BY run_hash"), db_rows(out, "SELECT COUNT(*) FROM prompts"), files)


def without_runs(dump, hashes):
    """A sweep_dump text without the records (runs / prompts rows, token logs) of the given runs. A record
    starts with "meta ", "runs ", "prompts " or "tokens "; other lines continue it (a config text's
    lines, a token log's columns)."""
    recs = []
    for line in dump.splitlines():
        if not recs or line.split(" ", 1)[0] in ("meta", "runs", "prompts", "tokens"):
            recs.append([])
        recs[-1].append(line)
    keep = [r for r in recs if not any(h in r[0] for h in hashes)]
    return "".join(l + "\n" for r in keep for l in r)


def check_failed_db(ck, what, out, lines):
    """runs.sqlite agrees with the failed-run lines: status, reason, times, no rows or logs left."""
    rows = failed_rows(out)
    ck.check(set(rows) == set(lines), "%s: failed runs in runs.sqlite %s, stderr named %s" %
             (what, sorted(h[:12] for h in rows), sorted(h[:12] for h in lines)))
    for h, (failure, started, finished, n_p, n_o) in rows.items():
        ck.check(failure == lines.get(h), "%s: runs.failure %r differs from the line's reason %r" %
                 (what, failure, lines.get(h)))
        ck.check(finished is not None and started <= finished, "%s: finished_at %r of a failed run (started %r)" %
                 (what, finished, started))
        ck.check(n_p == 0 and n_o == 0, "%s: failed run %s kept %d prompt / %d outputs rows" % (what, h[:12], n_p, n_o))
        ck.check(not any(f.startswith(h) for f in os.listdir(os.path.join(out, "tokens"))),
                 "%s: the failed run %s kept a token log" % (what, h[:12]))
    db = os.path.join(out, "runs.sqlite")
    ck.check(integrity_ok(db) == "ok", "%s: integrity_check: %s" % (what, integrity_ok(db)))
    ck.check(not leftovers(out), "%s: *.tmp left: %s" % (what, leftovers(out)))
    n_view = db_rows(out, "SELECT COUNT(*) FROM run_totals WHERE run_hash IN (SELECT run_hash FROM runs "
                          "WHERE status = 'failed')")[0][0]
    ck.check(n_view == 0, "%s: run_totals counts %d failed runs" % (what, n_view))


def sweeps(ck, a, m, nan_draft):
    S = a.sprinter
    # reference with the healthy draft
    spec = sweep_fixture.write_spec(m, name="f", methods="ar, sd", n_prompts=2, max_new=6)
    ref = os.path.join(a.work, "ref")
    rc, _, err = run([S, "sweep", spec, "--out", ref, "--quiet"])
    ck.check(rc == 0, "reference sweep exited %d:\n%s" % (rc, err[-2000:]))
    _, ref_dump, _ = sweep_fixture.dump(a.dump, ref)
    ref_hash = dict(db_rows(ref, "SELECT run_hash, method FROM runs"))
    ref_ar = {h for h, meth in ref_hash.items() if meth == "ar"}
    ref_sd = {h for h, meth in ref_hash.items() if meth == "sd"}

    # 1. the same spec and draft path, the draft now with a NaN weight: the sd runs fail, the ar runs finish
    os.rename(m + "/draft", m + "/draft-ok")
    os.rename(nan_draft, m + "/draft")
    out = os.path.join(a.work, "nan")
    rc, so, err = run([S, "sweep", spec, "--out", out, "--quiet"])
    lines = failed_sweep(ck, "sweep, NaN draft", rc, err, 2, 2)
    check_failed_db(ck, "sweep, NaN draft", out, lines)
    ck.check(not set(lines) & ref_sd, "the NaN draft's sd runs have the healthy draft's hashes")
    ck.check("failed: 2 runs" in so and all(r in so for r in lines.values()),
             "the sweep's summary does not list the 2 failed runs with their reasons:\n" + so)
    done = check_results_dir(ck, "sweep, NaN draft", out, set(ref_dump.splitlines()), a.dump, a.work)
    done_hashes = {h for (h,) in db_rows(out, "SELECT run_hash FROM runs WHERE status = 'done'")}
    ck.check(done == 2 and done_hashes == ref_ar, "done runs %s, expected the 2 ar runs" % sorted(done_hashes))
    drc, nan_dump, derr = sweep_fixture.dump(a.dump, out)
    ck.check(drc == 0, "sweep_dump rejects a directory with failed runs: " + derr[-500:])
    ck.check(without_runs(nan_dump, lines) == without_runs(ref_dump, ref_sd),
             "the ar runs differ from the healthy sweep's: " +
             sweep_fixture.first_difference(without_runs(ref_dump, ref_sd), without_runs(nan_dump, lines)))
    rc, so, err = run([S, "summary", out])
    table = so.split("failed:")[0]
    ck.check(rc == 0 and "failed: 2 runs" in so and all(r in so for r in lines.values()) and
             all(h[:12] in so for h in lines) and not re.search(r"^sd ", table, re.M),
             "summary: exit %d, expected the 2 failed runs with reasons and no sd row:\n%s%s" % (rc, so, err))
    print("  %-28s exit 3, %d done, %d failed: %s" % ("sweep, NaN draft", done, len(lines),
                                                       next(iter(lines.values()), "")[:100]), flush=True)

    # 2. rerun: failed runs are not retried; same exit, same lines, nothing changes
    before = snapshot(out)
    rc, _, err = run([S, "sweep", spec, "--out", out, "--quiet"])
    again = failed_sweep(ck, "rerun, NaN draft", rc, err, 2, 0)
    ck.check(again == lines, "the rerun reports other failures: %s" % again)
    ck.check(snapshot(out) == before, "the rerun changed runs.sqlite or tokens/")
    rc, so, _ = run([S, "sweep", spec, "--out", out, "--dry-run"])
    ck.check(rc == 0 and len(re.findall(r"^\s*\d+ [0-9a-f]{16} yes\s+failed ", so, re.M)) == 2,
             "dry run does not show the 2 failed runs:\n" + so)

    # 3. --jobs 2: the same database, the same exit
    out2 = os.path.join(a.work, "nan-j2")
    rc, _, err = run([S, "sweep", spec, "--out", out2, "--quiet", "--jobs", "2"])
    lines2 = failed_sweep(ck, "sweep --jobs 2, NaN draft", rc, err, 2, 2)
    check_failed_db(ck, "sweep --jobs 2, NaN draft", out2, lines2)
    _, dump2, _ = sweep_fixture.dump(a.dump, out2)
    ck.check(lines2 == lines and dump2 == nan_dump, "--jobs 2 differs from --jobs 1: " +
             sweep_fixture.first_difference(nan_dump, dump2))

    # 4. --retry-failed with the model still broken: they run again and fail again
    prev = failed_rows(out)
    rc, _, err = run([S, "sweep", spec, "--out", out, "--quiet", "--retry-failed"])
    retried = failed_sweep(ck, "--retry-failed, NaN draft", rc, err, 2, 2)
    check_failed_db(ck, "--retry-failed, NaN draft", out, retried)
    after = failed_rows(out)
    ck.check(retried == lines and set(after) == set(prev) and all(after[h][2] > prev[h][2] for h in prev),
             "--retry-failed did not run the failed runs again (finished_at %s, before %s)" %
             ([r[2] for r in after.values()], [r[2] for r in prev.values()]))
    print("  %-28s exit 3 (not retried), --jobs 2 identical, --retry-failed fails again" % "rerun", flush=True)

    # 5. the model repaired: its hash changes, so do the sd runs'; they run (exit 0) and the directory
    #    equals the healthy sweep apart from the stale failed rows, which summary keeps listing
    os.rename(m + "/draft", nan_draft)
    os.rename(m + "/draft-ok", m + "/draft")
    rc, _, err = run([S, "sweep", spec, "--out", out, "--quiet"])
    ck.check(rc == 0 and not SANITIZER.search(err), "sweep with the repaired draft: exit %d\n%s" % (rc, err[-2000:]))
    drc, dump, derr = sweep_fixture.dump(a.dump, out)
    ck.check(drc == 0 and without_runs(dump, lines) == ref_dump, "repaired: differs from the healthy sweep: %s" %
             (derr[-500:] or sweep_fixture.first_difference(ref_dump, without_runs(dump, lines))))
    rc, so, _ = run([S, "summary", out])
    ck.check(rc == 0 and "failed: 2 runs" in so, "summary after the repair does not list the 2 old failed runs:\n" + so)
    print("  %-28s exit 0, equals the healthy sweep (+ 2 stale failed rows)" % "repaired model", flush=True)

    # 6. same hashes: the decoder reports NaN logits for sd (--test-nan-logits), then the fault is gone
    inj = os.path.join(a.work, "inj")
    rc, _, err = run([S, "sweep", spec, "--out", inj, "--quiet", "--test-nan-logits", "sd"])
    lines = failed_sweep(ck, "sweep --test-nan-logits sd", rc, err, 2, 2)
    check_failed_db(ck, "sweep --test-nan-logits sd", inj, lines)
    ck.check(set(lines) == ref_sd, "--test-nan-logits changed the run hashes")
    before = snapshot(inj)
    rc, _, err = run([S, "sweep", spec, "--out", inj, "--quiet"])
    failed_sweep(ck, "rerun after --test-nan-logits", rc, err, 2, 0)
    ck.check(snapshot(inj) == before, "a plain rerun changed runs.sqlite or tokens/")
    inj_failed = os.path.join(a.work, "inj-inj_failed")
    shutil.copytree(inj, inj_failed)
    rc, _, err = run([S, "sweep", spec, "--out", inj, "--quiet", "--retry-failed"])
    ck.check(rc == 0 and not SANITIZER.search(err), "--retry-failed, fault gone: exit %d\n%s" % (rc, err[-2000:]))
    drc, dump, derr = sweep_fixture.dump(a.dump, inj)
    ck.check(drc == 0 and dump == ref_dump, "--retry-failed: differs from the healthy sweep: %s" %
             (derr[-500:] or sweep_fixture.first_difference(ref_dump, dump)))
    print("  %-28s exit 3, rerun exit 3, --retry-failed exit 0 = healthy sweep" % "same-hash failure", flush=True)

    # 7. merge: shards where one sd run fails; failed stays failed, done wins
    sh = os.path.join(a.work, "sh")
    rc0, _, err0 = run([S, "sweep", spec, "--out", sh, "--shard", "0/2", "--quiet", "--test-nan-logits", "sd"])
    rc1, _, err1 = run([S, "sweep", spec, "--out", sh, "--shard", "1/2", "--quiet", "--test-nan-logits", "sd"])
    n0 = len(failed_rows(os.path.join(sh, "shard-0")))
    n1 = len(failed_rows(os.path.join(sh, "shard-1")))
    ck.check(rc0 == 3 and rc1 == 3 and n0 == 1 and n1 == 1, "shards: exits %d, %d with %d, %d failed runs:\n%s%s" %
             (rc0, rc1, n0, n1, err0[-800:], err1[-800:]))
    merged = os.path.join(a.work, "merged")
    rc, so, err = run([S, "merge", "--out", merged, os.path.join(sh, "shard-0"), os.path.join(sh, "shard-1")])
    mf = failed_rows(merged)
    ck.check(rc == 3 and "merged 2 runs" in so and "2 failed runs carried" in so and set(mf) == ref_sd and
             re.search(r"^sprinter merge: 2 of \d+ runs of the grid failed", err, re.M) and "missing" not in err,
             "merge of the shards: exit %d (3: finished, runs failed), failed %s:\n%s%s" %
             (rc, sorted(h[:12] for h in mf), so, err))
    check_failed_db(ck, "merged shards", merged, {h: r[0] for h, r in mf.items()})
    rc, _, err = run([S, "sweep", spec, "--out", merged, "--quiet"])
    failed_sweep(ck, "sweep of the merged directory", rc, err, 2, 0)
    rc, so, err = run([S, "merge", "--out", merged, ref])  # the healthy sweep: done wins
    drc, dump, derr = sweep_fixture.dump(a.dump, merged)
    ck.check(rc == 0 and "merged 2 runs" in so and drc == 0 and dump == ref_dump,
             "merging done runs over failed ones: exit %d %s%s %s" %
             (rc, so[:300], err[-300:], derr[-300:] or sweep_fixture.first_difference(ref_dump, dump)))
    ref2 = os.path.join(a.work, "ref-copy")
    shutil.copytree(ref, ref2)
    rc, so, err = run([S, "merge", "--out", ref2, inj_failed])  # failed runs into a directory where they are done
    drc, dump, derr = sweep_fixture.dump(a.dump, ref2)
    ck.check(rc == 0 and "2 failed runs left out as done elsewhere" in so and drc == 0 and dump == ref_dump,
             "merging failed runs over done ones: exit %d %s%s %s" %
             (rc, so[:300], err[-300:], derr[-300:] or sweep_fixture.first_difference(ref_dump, dump)))
    print("  %-28s failed carried, done wins both ways" % "merge", flush=True)


if __name__ == "__main__":
    main()
