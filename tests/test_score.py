#!/usr/bin/python3
"""`sprinter score` (experiments/score.h) against an independent computation.

A sweep of the shared fixture (two tiny random GPT-2 models with the GPT-2 BPE tokenizer fixture;
methods ar, draft, sd, sprinter; 3 prompts x 8 tokens) is scored with --jobs 2. Then:
  - every done (run, prompt) has exactly one outputs row; n_tokens and n_prompt_tokens match the
    prompts row;
  - target_logprob equals the float64 PyTorch reference (tests/oracle/ref_model.py) of
    sum_t ln softmax(logits)[y_t] over the output, with the prompt re-encoded by `sprinter tokenize`
    and the output tokens read from the token log by sweep_dump, to 1e-4 (the C engine computes in
    float32); target_mean_logprob = sum / n and target_ppl = exp(-mean) to 1e-9 relative;
  - text equals a byte-level BPE decode written here (vocab.json + GPT-2's byte table, special
    tokens skipped, invalid UTF-8 bytes -> '?') and the runner's prompts.output_text;
  - rerunning adds nothing and changes no row; after deleting the rows of one run and one row of
    another, a rerun adds exactly those back with the same values; --jobs 1 on a copy gives the
    same numbers as --jobs 2;
  - a version-1 database (no outputs table, no oracle_stay) is upgraded in place and scored;
  - merge carries the outputs rows;
  - errors: no database, a --target whose hash differs from runs.target_sha256, a dataset changed
    since the sweep: exit 1 with one line naming the file and the field, nothing written.
Deterministic (fixed seeds); prints "score: N passed, M failed".
usage: /usr/bin/python3 tests/test_score.py --sprinter S --dump SWEEP_DUMP --work DIR
"""
import argparse
import json
import math
import os
import shutil
import sqlite3
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "oracle"))
sys.path.insert(0, os.path.join(HERE, "..", "scripts", "pylib"))
import sweep_fixture as fx  # noqa: E402
import ref_model  # noqa: E402
from gpt2_bytes import bytes_to_unicode  # noqa: E402

TOL = 1e-4
N_PROMPTS, MAX_NEW = 3, 8


class Checks(fx.Checks):
    """fx.Checks that also prints the passing checks (they carry the measured numbers)."""

    def check(self, ok, what):
        if ok:
            print("ok  : " + what, flush=True)
        return super().check(ok, what)


def run(cmd, **kw):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace", **kw)


def outputs(db):
    con = sqlite3.connect(db)
    rows = con.execute("SELECT * FROM outputs ORDER BY run_hash, prompt_index").fetchall()
    con.close()
    return rows


def log_tokens(dump_exe, res):
    """{(run_hash, prompt_index): [tokens in position order]} from sweep_dump's token-log dump."""
    p = run([dump_exe, res])
    toks, cur, cols = {}, None, {}

    def flush():
        if cur is not None:
            for pi, pos, t in sorted(zip(cols["prompt_index"], cols["pos"], cols["token"])):
                toks.setdefault((cur, pi), []).append(t)

    for line in p.stdout.splitlines():
        if line.startswith("tokens "):
            flush()
            cur, cols = line.split()[1], {}
        elif cur is not None and line.startswith("  "):
            name, *vals = line.split()
            name = name.split("[")[0]
            if name in ("prompt_index", "pos", "token"):
                cols[name] = [int(v) for v in vals]
    flush()
    return toks


def sanitize(raw):
    """Invalid UTF-8 bytes and NUL -> '?', the rule of score.c."""
    out, i = bytearray(), 0
    while i < len(raw):
        c = raw[i]
        n = 0 if c == 0 else 1 if c < 0x80 else 2 if c >> 5 == 6 else 3 if c >> 4 == 14 else 4 if c >> 3 == 30 else 0
        ok = n > 0 and i + n <= len(raw) and all(raw[i + k] & 0xC0 == 0x80 for k in range(1, n))
        if ok and n == 2:
            ok = c >= 0xC2
        if ok and n == 3:
            ok = not (c == 0xE0 and raw[i + 1] < 0xA0) and not (c == 0xED and raw[i + 1] >= 0xA0)
        if ok and n == 4:
            ok = not (c == 0xF0 and raw[i + 1] < 0x90) and c <= 0xF4 and not (c == 0xF4 and raw[i + 1] >= 0x90)
        if not ok:
            out += b"?"
            i += 1
        else:
            out += raw[i:i + n]
            i += n
    return out.decode("utf-8")


class Decoder:
    def __init__(self, model_dir):
        with open(os.path.join(model_dir, "vocab.json")) as f:
            vocab = json.load(f)
        self.inv = {i: s for s, i in vocab.items()}
        self.byte = {u: b for b, u in bytes_to_unicode()}

    def __call__(self, ids):
        raw = bytearray()
        for i in ids:
            s = self.inv[i]
            if s == "<|endoftext|>":
                continue  # special tokens are skipped
            raw += bytes(self.byte[ch] for ch in s)
        return sanitize(bytes(raw))


def ref_logprob(model, prompt, out):
    cfg, tensors = model
    logits, _ = ref_model.forward_tensors(cfg, tensors, prompt + out)
    lp = logits - logits.max(axis=1, keepdims=True)
    lp = lp - np.log(np.exp(lp).sum(axis=1, keepdims=True))
    n = len(prompt)
    return float(sum(lp[n - 1 + t, out[t]] for t in range(len(out))))


def score(args, res, *extra):
    return run([args.sprinter, "score", res, "--quiet"] + list(extra), timeout=600)


def one_line_error(p):
    lines = [x for x in p.stderr.splitlines() if x.strip()]
    return p.returncode == 1 and len(lines) == 1, (lines[0] if lines else "")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sprinter", required=True)
    ap.add_argument("--dump", required=True)
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    W = args.work
    shutil.rmtree(W, ignore_errors=True)
    c = Checks("score")
    fx.make_models(args.sprinter, W)
    spec = fx.write_spec(W, name="score", methods="ar, draft, sd, sprinter", n_prompts=N_PROMPTS, max_new=MAX_NEW)
    res = os.path.join(W, "res")
    p = run([args.sprinter, "sweep", spec, "--out", res, "--quiet", "--verifier-cache", os.path.join(W, "vc")],
            timeout=600)
    if not c.check(p.returncode == 0, "sweep of the fixture (%s)" % p.stderr.strip()[-300:]):
        c.finish()
    db = os.path.join(res, "runs.sqlite")
    con = sqlite3.connect(db)
    runs = con.execute("SELECT run_hash, method FROM runs WHERE status = 'done'").fetchall()
    prompts = {(h, i): (n, t, txt) for h, i, n, t, txt in
               con.execute("SELECT run_hash, prompt_index, n_prompt_tokens, tokens, output_text FROM prompts")}
    con.close()

    # ---- score with two workers
    p = run([args.sprinter, "score", res, "--jobs", "2"], timeout=600)
    c.check(p.returncode == 0 and "rows added" in p.stdout and "logp/token" in p.stdout,
            "score --jobs 2 exits 0 and prints the table (%s)" % (p.stdout.splitlines() or [p.stderr.strip()[-300:]])[0])
    rows = outputs(db)
    keys = [(r[0], r[1]) for r in rows]
    c.check(sorted(keys) == sorted(prompts) and len(rows) == len(runs) * N_PROMPTS,
            "one outputs row per done (run, prompt): %d rows for %d runs x %d prompts" % (len(rows), len(runs), N_PROMPTS))

    # ---- against the float64 reference
    target = os.path.join(W, "target")
    model = ref_model.load(target)
    dec = Decoder(target)
    toks = log_tokens(args.dump, res)
    data = [json.loads(line) for line in open(os.path.join(W, "data.jsonl"))]
    enc_cache = {}
    worst, worst_rel, bad_text, bad_counts, bad_runner_text, nul_rows = 0.0, 0.0, 0, 0, 0, 0
    for r in rows:
        h, pi, n_prompt, n_tok, text, lp_sum, lp_mean, ppl, tdir, tsha, _ = r
        if pi not in enc_cache:
            q = run([args.sprinter, "tokenize", "--model", target, "--text", data[pi]["prompt"]])
            enc_cache[pi] = [int(x) for x in q.stdout.split()]
        prompt = enc_cache[pi]
        out = toks[(h, pi)]
        bad_counts += n_prompt != len(prompt) or n_tok != len(out) or n_tok != prompts[(h, pi)][1]
        ref = ref_logprob(model, prompt, out)
        worst = max(worst, abs(ref - lp_sum))
        worst_rel = max(worst_rel, abs(lp_mean - lp_sum / n_tok) / abs(lp_mean), abs(ppl - math.exp(-lp_mean)) / ppl)
        bad_text += text != dec(out)
        # the runner's text stops at a NUL byte (a byte token); compare where there is none
        has_nul = any(dec.inv[i] == "\u0100" for i in out)  # GPT-2's printable stand-in for byte 0
        bad_runner_text += not has_nul and text != prompts[(h, pi)][2]
        nul_rows += has_nul
    c.check(bad_counts == 0, "n_prompt_tokens / n_tokens match the prompts rows and the token logs (%d bad)" % bad_counts)
    c.check(worst <= TOL, "target_logprob == float64 PyTorch reference to %g (max |diff| %.2e over %d rows)"
            % (TOL, worst, len(rows)))
    c.check(worst_rel < 1e-9, "target_mean_logprob = sum / n, target_ppl = exp(-mean) (max rel diff %.1e)" % worst_rel)
    c.check(bad_text == 0, "text == byte-level BPE decode of the logged tokens (%d differ)" % bad_text)
    c.check(bad_runner_text == 0, "text == the runner's prompts.output_text (%d differ; %d rows with a NUL byte, "
            "where the runner's text stops, not compared)" % (bad_runner_text, nul_rows))
    c.check(all(r[8] == target and len(r[9]) == 64 for r in rows), "target_dir and target_sha256 recorded")
    # negative control: the check above would see a one-token shift
    h, pi = keys[0]
    shifted = ref_logprob(model, enc_cache[pi], toks[(h, pi)][1:] + toks[(h, pi)][:1])
    c.check(abs(shifted - rows[0][5]) > 10 * TOL, "negative control: rotated output tokens differ from the stored "
            "log-likelihood by %.3f" % abs(shifted - rows[0][5]))

    # ---- idempotent, resumable, independent of --jobs
    p = score(args, res)
    c.check(p.returncode == 0 and "0 rows added" in p.stdout and outputs(db) == rows,
            "rerun adds nothing and changes no row (%s)" % p.stdout.strip())
    con = sqlite3.connect(db)
    con.execute("DELETE FROM outputs WHERE run_hash = ?", (keys[0][0],))
    con.execute("DELETE FROM outputs WHERE run_hash = ? AND prompt_index = ?", keys[-1])
    con.commit()
    con.close()
    p = score(args, res)
    again = outputs(db)
    same = [a[:10] for a in again] == [b[:10] for b in rows]
    c.check(p.returncode == 0 and ("%d rows added" % (N_PROMPTS + 1)) in p.stdout and same,
            "after deleting %d rows a rerun adds exactly those back, same values (%s)" % (N_PROMPTS + 1, p.stdout.strip()))
    copy = os.path.join(W, "copy")
    shutil.copytree(res, copy)
    con = sqlite3.connect(os.path.join(copy, "runs.sqlite"))
    con.execute("DELETE FROM outputs")
    con.commit()
    con.close()
    p = score(args, copy, "--jobs", "1")
    c.check(p.returncode == 0 and [a[:8] for a in outputs(os.path.join(copy, "runs.sqlite"))] == [b[:8] for b in rows],
            "--jobs 1 gives the same rows as --jobs 2")

    # ---- a version-1 database is upgraded and scored
    old = os.path.join(W, "old")
    shutil.copytree(res, old)
    con = sqlite3.connect(os.path.join(old, "runs.sqlite"))
    con.executescript("DROP TABLE outputs; ALTER TABLE runs DROP COLUMN oracle_stay;"
                      "UPDATE meta SET value = '1' WHERE key = 'schema_version';")
    con.close()
    p = score(args, old)
    con = sqlite3.connect(os.path.join(old, "runs.sqlite"))
    ver = con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0]
    n_old = con.execute("SELECT COUNT(*) FROM outputs").fetchone()[0]
    con.close()
    c.check(p.returncode == 0 and n_old == len(rows) and int(ver) >= 2,
            "a schema-1 database is upgraded in place (now version %s) and scored (%d rows) %s" % (ver, n_old, p.stderr))

    # ---- merge carries the outputs rows
    merged = os.path.join(W, "merged")
    p = run([args.sprinter, "merge", "--quiet", "--out", merged, res])
    n_m = len(outputs(os.path.join(merged, "runs.sqlite"))) if p.returncode == 0 else -1
    c.check(n_m == len(rows), "merge copies the outputs rows (%d of %d) %s" % (n_m, len(rows), p.stderr.strip()))

    # ---- errors: one line naming the file and the field, nothing written
    p = score(args, os.path.join(W, "nowhere"))
    ok, line = one_line_error(p)
    c.check(ok and "runs.sqlite" in line, "missing database: exit 1, one line (%s)" % line)
    con = sqlite3.connect(os.path.join(copy, "runs.sqlite"))
    con.execute("DELETE FROM outputs")
    con.commit()
    con.close()
    p = score(args, copy, "--target", os.path.join(W, "draft"))
    ok, line = one_line_error(p)
    c.check(ok and "target_sha256" in line and len(outputs(os.path.join(copy, "runs.sqlite"))) == 0,
            "--target of another model: exit 1, one line naming runs.target_sha256, nothing written (%s)" % line)
    data_path = os.path.join(W, "data.jsonl")
    saved = open(data_path, "rb").read()
    with open(data_path, "ab") as f:
        f.write(b'{"id": "extra", "prompt": "changed", "reference": ""}\n')
    p = score(args, copy)
    with open(data_path, "wb") as f:
        f.write(saved)
    ok, line = one_line_error(p)
    c.check(ok and "dataset_sha256" in line and "data.jsonl" in line,
            "dataset changed since the sweep: exit 1, one line naming the file and runs.dataset_sha256 (%s)" % line)
    p = run([args.sprinter, "score", "--help"])
    c.check(p.returncode == 0 and "usage" in p.stdout, "score --help exits 0")
    p = run([args.sprinter, "score"])
    c.check(p.returncode == 2, "score without a directory exits 2")
    c.finish()


if __name__ == "__main__":
    main()
