#!/usr/bin/env python3
"""Fault injection: a model file with a NaN (or Inf) weight, so the logits are not finite (issue 8).

Documented behaviour checked here:
  - `sprinter generate` and `sprinter decode` stop with exit 1 and one stderr line naming the problem
    ("logits contain NaN at index I" / "+Inf"), no sanitizer report, no output token invented;
  - `sprinter collect` on a NaN draft: exit 1, the same message, no output file or *.tmp left;
  - `sprinter sweep` with a NaN draft and methods ar, sd: the ar runs (which never touch the draft)
    finish and are identical to a sweep with a healthy draft; the first sd run fails with exit 1 and
    "sprinter sweep: run HASH (sd) prompt P: logits contain NaN ..."; it is not marked done, its token
    log is not kept, no *.tmp is left and runs.sqlite passes integrity_check.
  Not checked (reported): the runner has no 'failed' run status, so the failed run stays 'running'
  with no recorded reason, and the sweep stops at it instead of going on with the other runs.

usage: fault_nan_logits.py --sprinter BIN --dump SWEEP_DUMP --work DIR [--shim LIB (unused)]
"""
import argparse
import json
import os
import re
import shutil
import sqlite3
import struct

from fault_common import Checks, check_results_dir, clean_failure, integrity_ok, leftovers, run, sweep_fixture

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
    ap = argparse.ArgumentParser()
    ap.add_argument("--sprinter", required=True)
    ap.add_argument("--dump", required=True)
    ap.add_argument("--shim", default=None)
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    shutil.rmtree(a.work, ignore_errors=True)
    os.makedirs(a.work)
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

    # sweep: reference with the healthy draft, then the same spec with the NaN draft
    spec = sweep_fixture.write_spec(m, name="f", methods="ar, sd", n_prompts=2, max_new=6)
    ref = os.path.join(a.work, "ref")
    rc, _, err = run([a.sprinter, "sweep", spec, "--out", ref, "--quiet"])
    ck.check(rc == 0, "reference sweep exited %d:\n%s" % (rc, err[-2000:]))
    _, ref_dump, _ = sweep_fixture.dump(a.dump, ref)
    # the same spec and draft path, the draft now with a NaN weight
    os.rename(m + "/draft", m + "/draft-ok")
    os.rename(nan_draft, m + "/draft")
    out = os.path.join(a.work, "nan")
    rc, _, err = run([a.sprinter, "sweep", spec, "--out", out, "--quiet"])
    msg = clean_failure(ck, "sweep, NaN draft", rc, err, "sprinter sweep: ", reason=NONFINITE)
    hit = re.search(r"run ([0-9a-f]{12,64}) \((\w+)\) prompt \d+", msg)
    ck.check(hit is not None and hit.group(2) == "sd", "the sweep error %r does not name the sd run" % msg)
    done = check_results_dir(ck, "sweep, NaN draft", out, set(ref_dump.splitlines()), a.dump, a.work,
                             ignore=("draft_sha256",))
    ck.check(done == 2, "%d runs done before the NaN run, expected the 2 ar runs" % done)
    db = os.path.join(out, "runs.sqlite")
    ck.check(integrity_ok(db) == "ok", "integrity_check: " + integrity_ok(db))
    if hit:
        con = sqlite3.connect(db)
        rows = con.execute("SELECT status FROM runs WHERE run_hash LIKE ?", (hit.group(1) + "%",)).fetchall()
        con.close()
        ck.check(all(r[0] != "done" for r in rows), "the NaN run is marked done")
        ck.check(not any(f.startswith(hit.group(1)) for f in os.listdir(os.path.join(out, "tokens"))),
                 "the NaN run's token log was kept")
    ck.check(not leftovers(out), "*.tmp left: %s" % leftovers(out))
    print("  %-28s exit %d, %d runs done: %s" % ("sweep, NaN draft", rc, done, msg[:150]), flush=True)
    ck.finish()


if __name__ == "__main__":
    main()
