#!/usr/bin/env python3
"""runs.sqlite schema upgrades (experiments/db.h): a file written by an older sprinter is upgraded in
place by the first command that opens it, nothing lost; a newer file is refused untouched.

- schema 3 -> 10 (4: runs.status may be 'failed', new column runs.failure; 5: the never-written
  prompts.quality_* columns dropped; 6: runs.bonus, finish_round, prompts.rounds, round_kept;
  7: runs.prompt_template, prompts.category, turn; 8: the lossy and judge parameters, timings;
  9: runs.exec_batch, tokens_per_s_batched; 10: runs.token_log_fnv1a64): a database built with the exact schema SQL of the version-3
  binary (V3_SCHEMA below, copied from experiments/db.c before the change), holding done runs, an
  unfinished ('running') run, an outputs row and a user's own view on runs, is opened by
  `sprinter summary`: schema_version becomes 9, the runs table is rebuilt with the new CHECK
  constraints, the quality columns are gone, every row of runs / prompts / outputs is unchanged
  otherwise (failure NULL), the views (run_totals and the user's) give the same rows,
  integrity_check passes and a second open changes nothing. The new constraints hold: 'failed'
  needs a reason, other statuses must not have one. A sweep then finishes the directory, identical
  to a sweep that never saw version 3;
- schema 1 -> 10 in one open;
- schema 11 (a newer sprinter) is refused by summary and sweep with one line naming the file and the
  version, and the file is left as it was;
- merge reads a version-3 shard without upgrading it (failure NULL in the copy).
Deterministic; no false-failure rate.

usage: test_sweep_schema.py --sprinter BIN --dump SWEEP_DUMP --work DIR
"""
import argparse
import os
import re
import shutil
import sqlite3
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sweep_fixture as fx  # noqa: E402

# The schema SQL of the version-3 sprinter (experiments/db.c kSchema), verbatim.
V3_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS runs(
  run_hash TEXT PRIMARY KEY, run_index INTEGER NOT NULL,
  status TEXT NOT NULL CHECK(status IN ('running','done')),
  method TEXT NOT NULL, seed INTEGER NOT NULL,
  dataset TEXT NOT NULL, dataset_sha256 TEXT NOT NULL, data_format TEXT NOT NULL,
  prompt_offset INTEGER NOT NULL, n_prompts INTEGER NOT NULL,
  max_new INTEGER NOT NULL, temperature REAL NOT NULL, top_k INTEGER NOT NULL, top_p REAL NOT NULL,
  stop_at_eos INTEGER NOT NULL, audit INTEGER NOT NULL,
  gamma INTEGER, tau REAL, lambda REAL, max_run INTEGER, alpha REAL, p_min REAL,
  eta_fp REAL, eta_tp REAL,
  draft_dir TEXT, draft_sha256 TEXT, target_dir TEXT, target_sha256 TEXT,
  verifier_path TEXT, verifier_sha256 TEXT,
  config TEXT NOT NULL, spec_name TEXT NOT NULL, spec_path TEXT NOT NULL, spec_sha256 TEXT NOT NULL,
  git_commit TEXT NOT NULL, host TEXT, token_log TEXT NOT NULL,
  started_at TEXT NOT NULL, finished_at TEXT,
  oracle_stay REAL);
CREATE TABLE IF NOT EXISTS prompts(
  run_hash TEXT NOT NULL, prompt_index INTEGER NOT NULL, example_id TEXT,
  n_prompt_tokens INTEGER NOT NULL, prompt_truncated INTEGER NOT NULL, rng_seed TEXT NOT NULL,
  tokens INTEGER NOT NULL, target_calls INTEGER NOT NULL, target_tokens INTEGER NOT NULL,
  draft_calls INTEGER NOT NULL, draft_tokens INTEGER NOT NULL,
  audit_calls INTEGER NOT NULL, audit_tokens INTEGER NOT NULL, verifier_evals INTEGER NOT NULL,
  drafted INTEGER NOT NULL, accepted INTEGER NOT NULL, verifier_accepts INTEGER NOT NULL,
  longest_run INTEGER NOT NULL, mean_accepted_run REAL,
  audited INTEGER, audited_pos INTEGER, audited_neg INTEGER, tp INTEGER, fp INTEGER,
  eta_fp REAL, eta_tp REAL,
  t_total REAL NOT NULL, t_draft REAL NOT NULL, t_target REAL NOT NULL, t_verifier REAL NOT NULL,
  t_audit REAL NOT NULL,
  flops_draft REAL NOT NULL, flops_target REAL NOT NULL, flops_verifier REAL NOT NULL,
  output_text TEXT,
  quality_ppl REAL, quality_rouge_l REAL, quality_bleu REAL, quality_json TEXT,
  PRIMARY KEY(run_hash, prompt_index));
CREATE VIEW IF NOT EXISTS run_totals AS SELECT r.run_hash, r.method, r.seed, r.gamma, r.tau, r.lambda,
  r.max_run, COUNT(*) AS prompts, SUM(p.tokens) AS tokens, SUM(p.target_calls) AS target_calls,
  SUM(p.accepted) AS accepted, SUM(p.t_total) AS t_total, SUM(p.t_audit) AS t_audit,
  SUM(p.tokens) / SUM(p.t_total) AS tokens_per_s,
  CAST(SUM(p.target_calls) AS REAL) / SUM(p.tokens) AS target_calls_per_token,
  CAST(SUM(p.fp) AS REAL) / SUM(p.audited_neg) AS eta_fp,
  CAST(SUM(p.tp) AS REAL) / SUM(p.audited_pos) AS eta_tp
  FROM runs r JOIN prompts p ON p.run_hash = r.run_hash WHERE r.status = 'done' GROUP BY r.run_hash;
CREATE TABLE IF NOT EXISTS outputs(
  run_hash TEXT NOT NULL, prompt_index INTEGER NOT NULL,
  n_prompt_tokens INTEGER NOT NULL, n_tokens INTEGER NOT NULL, text TEXT,
  target_logprob REAL, target_mean_logprob REAL, target_ppl REAL,
  target_dir TEXT NOT NULL, target_sha256 TEXT NOT NULL, scored_at TEXT NOT NULL,
  PRIMARY KEY(run_hash, prompt_index));
"""
V3_COLS = ("run_hash, run_index, status, method, seed, dataset, dataset_sha256, data_format, prompt_offset, "
           "n_prompts, max_new, temperature, top_k, top_p, stop_at_eos, audit, gamma, tau, lambda, max_run, alpha, "
           "p_min, eta_fp, eta_tp, draft_dir, draft_sha256, target_dir, target_sha256, verifier_path, "
           "verifier_sha256, config, spec_name, spec_path, spec_sha256, git_commit, host, token_log, started_at, "
           "finished_at, oracle_stay")


def run(cmd):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=300)


def make_v3(ref, out):
    """A results directory with ref's runs in a database of the version-3 schema: every run done except
    the last one, which is left 'running' (no prompt rows, no token log), plus one outputs row and a
    user's view. Returns the unfinished run's hash."""
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    shutil.copytree(os.path.join(ref, "tokens"), os.path.join(out, "tokens"))
    con = sqlite3.connect(os.path.join(out, "runs.sqlite"))
    con.execute("PRAGMA journal_mode=WAL")
    con.executescript(V3_SCHEMA)
    con.execute("INSERT INTO meta VALUES('schema_version','3'),('format','sprinter-runs')")
    con.execute("ATTACH DATABASE ? AS ref", (os.path.join(ref, "runs.sqlite"),))
    con.execute("INSERT INTO runs(%s) SELECT %s FROM ref.runs" % (V3_COLS, V3_COLS))
    v3_cols = {r[1] for r in con.execute("PRAGMA main.table_info(prompts)")}
    cols = ", ".join(r[1] for r in con.execute("PRAGMA ref.table_info(prompts)") if r[1] in v3_cols)
    con.execute("INSERT INTO prompts(%s) SELECT %s FROM ref.prompts" % (cols, cols))
    con.commit()
    con.execute("DETACH DATABASE ref")
    last = con.execute("SELECT run_hash FROM runs ORDER BY run_index DESC LIMIT 1").fetchone()[0]
    con.execute("UPDATE runs SET status = 'running', finished_at = NULL WHERE run_hash = ?", (last,))
    con.execute("DELETE FROM prompts WHERE run_hash = ?", (last,))
    first = con.execute("SELECT run_hash FROM runs ORDER BY run_index LIMIT 1").fetchone()[0]
    con.execute("INSERT INTO outputs VALUES(?, 20, 3, 6, 'text', -7.5, -1.25, 3.49, 'tdir', 'tsha', "
                "'2024-01-01T00:00:00.000Z')", (first,))
    con.execute("CREATE VIEW my_done AS SELECT run_hash, method FROM runs WHERE status = 'done'")
    con.commit()
    con.close()
    os.unlink(os.path.join(out, "tokens", last + ".h5"))
    return last


# The prompts columns every version has (5 dropped quality_ppl, quality_rouge_l, quality_bleu, quality_json).
V5_PROMPT_COLS = (
    "run_hash, prompt_index, example_id, n_prompt_tokens, prompt_truncated, rng_seed, tokens, target_calls, "
    "target_tokens, draft_calls, draft_tokens, audit_calls, audit_tokens, verifier_evals, drafted, accepted, "
    "verifier_accepts, longest_run, mean_accepted_run, audited, audited_pos, audited_neg, tp, fp, eta_fp, eta_tp, "
    "t_total, t_draft, t_target, t_verifier, t_audit, flops_draft, flops_target, flops_verifier, output_text")


def contents(db):
    """Everything the upgrade must keep: rows of runs (version-3 columns), prompts, outputs, and both views."""
    con = sqlite3.connect(db)
    r = {
        "runs": con.execute("SELECT %s FROM runs ORDER BY run_hash" % V3_COLS).fetchall(),
        "prompts": con.execute("SELECT %s FROM prompts ORDER BY run_hash, prompt_index" % V5_PROMPT_COLS).fetchall(),
        "outputs": con.execute("SELECT * FROM outputs ORDER BY run_hash, prompt_index").fetchall(),
        "run_totals": con.execute("SELECT * FROM run_totals ORDER BY run_hash").fetchall(),
        "my_done": con.execute("SELECT * FROM my_done ORDER BY run_hash").fetchall(),
    }
    con.close()
    return r


def schema(db):
    con = sqlite3.connect(db)
    ver = con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0]
    sql = con.execute("SELECT name, sql FROM sqlite_master ORDER BY name").fetchall()
    cols = [r[1] for r in con.execute("PRAGMA table_info(runs)")]
    cols += ["prompts." + r[1] for r in con.execute("PRAGMA table_info(prompts)") if r[1].startswith("quality")]
    ok = con.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    con.close()
    return ver, sql, cols, ok


def check_constraints(t, db):
    """On a copy: 'failed' needs a reason, and only 'failed' may have one."""
    copy = db + ".check"
    con0 = sqlite3.connect(db)
    con0.execute("VACUUM INTO ?", (copy,))
    con0.close()
    con = sqlite3.connect(copy)
    h = con.execute("SELECT run_hash FROM runs WHERE status = 'done' LIMIT 1").fetchone()[0]
    verdicts = []
    for sql in ("UPDATE runs SET status = 'failed' WHERE run_hash = ?",
                "UPDATE runs SET failure = 'why' WHERE run_hash = ?",
                "UPDATE runs SET status = 'lost' WHERE run_hash = ?"):
        try:
            con.execute(sql, (h,))
            verdicts.append("accepted")
        except sqlite3.IntegrityError:
            verdicts.append("refused")
    con.execute("UPDATE runs SET status = 'failed', failure = 'why' WHERE run_hash = ?", (h,))
    con.close()
    os.unlink(copy)
    t.check(verdicts == ["refused"] * 3, "v4 CHECKs: failed without reason / reason on done / unknown status: %s"
            % verdicts)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sprinter", required=True)
    ap.add_argument("--dump", required=True)
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    shutil.rmtree(a.work, ignore_errors=True)
    os.makedirs(a.work)
    t = fx.Checks("sweep_schema")
    S = a.sprinter
    m = fx.make_models(S, os.path.join(a.work, "m"))
    spec = fx.write_spec(m, name="s", methods="ar, sd", n_prompts=2, max_new=6)
    ref = os.path.join(a.work, "ref")
    p = run([S, "sweep", spec, "--out", ref, "--quiet"])
    if not t.check(p.returncode == 0, "reference sweep: " + p.stderr[-1000:]):
        t.finish()
    _, ref_dump, _ = fx.dump(a.dump, ref)

    # ---- 3 -> 10
    v3 = os.path.join(a.work, "v3")
    unfinished = make_v3(ref, v3)
    pristine = os.path.join(a.work, "v3-pristine")
    shutil.copytree(v3, pristine)
    db = os.path.join(v3, "runs.sqlite")
    before = contents(db)
    t.check(len(before["runs"]) == 4 and len(before["run_totals"]) == 3 and len(before["outputs"]) == 1,
            "the version-3 fixture has 4 runs (3 done), 1 outputs row: %d, %d, %d" %
            (len(before["runs"]), len(before["run_totals"]), len(before["outputs"])))
    p = run([S, "summary", v3])
    t.check(p.returncode == 0 and "unfinished: 1 run" in p.stdout and "failed:" not in p.stdout,
            "summary of a version-3 file: exit %d\n%s%s" % (p.returncode, p.stdout, p.stderr))
    ver, sql, cols, ok = schema(db)
    runs_sql = dict(sql).get("runs", "")
    t.check(ver == "10", "schema_version after the upgrade: %s" % ver)
    later = cols[cols.index("oracle_stay"):][:16] if "oracle_stay" in cols else []
    t.check("'failed'" in runs_sql and later == ["oracle_stay", "failure", "bonus", "finish_round",
                                                "label_rule", "prompt_template", "typical_eps", "typical_alpha",
                                                "fsd_divergence", "fsd_threshold", "lossy_kl", "tau_judge", "judge_rho",
                                                "exec_batch", "tokens_per_s_batched", "token_log_fnv1a64"],
            "the runs table is the version-10 one (4: failure, CHECK; 6: bonus, finish_round, label_rule; "
            "7: prompt_template; 8: the lossy methods' and judge's parameters; 9: exec_batch, "
            "tokens_per_s_batched; 10: token_log_fnv1a64): columns ...%s\n%s" % (later, runs_sql))
    t.check("timings" in dict(sql), "version 8: the timings table was created by the upgrade")
    t.check(ok, "integrity_check after the upgrade")
    t.check(not any(n == "runs_v4" for n, _ in sql), "the rebuild left its temporary table")
    after = contents(db)
    for k in before:
        t.check(after[k] == before[k], "%s differs after the upgrade (%d rows before, %d after)" %
                (k, len(before[k]), len(after[k])))
    con = sqlite3.connect(db)
    n_reason = con.execute("SELECT COUNT(*) FROM runs WHERE failure IS NOT NULL").fetchone()[0]
    con.close()
    t.check(n_reason == 0, "%d upgraded runs have a failure reason" % n_reason)
    check_constraints(t, db)
    p = run([S, "summary", v3])
    t.check(p.returncode == 0 and schema(db)[:3] == (ver, sql, cols), "a second open changes the upgraded file")
    p = run([S, "sweep", spec, "--out", v3, "--quiet"])
    rc, dump, err = fx.dump(a.dump, v3)
    # prompts.rejected (schema 5) is NULL in the rows written before the upgrade and set in the redone run's
    con = sqlite3.connect(db)
    rej = dict(con.execute("SELECT run_hash, COUNT(rejected) = COUNT(*) FROM prompts GROUP BY run_hash").fetchall())
    con.close()
    t.check(rej.get(unfinished) == 1 and sum(rej.values()) == 1,
            "prompts.rejected: set for the redone run only, NULL in the upgraded rows: %s" % rej)
    # columns added after version 3 (NULL in the upgraded rows): compared as present, not by value
    dump, ref_dump_cmp = (re.sub(r" (rejected|rounds|round_kept|bonus|finish_round|label_rule|prompt_template|category|turn|tau_judge|judge_rho|token_log_fnv1a64)=\S+", r" \1=?", x)
                          for x in (dump, ref_dump))
    t.check(p.returncode == 0 and rc == 0 and dump == ref_dump_cmp,
            "sweeping the upgraded directory redoes run %s and equals the reference: exit %d %s %s" %
            (unfinished[:12], p.returncode, p.stderr[-500:], err[-300:] or fx.first_difference(ref_dump_cmp, dump)))
    print("  3 -> 10: rows kept, quality columns dropped, views kept, constraints hold, sweep resumes", flush=True)

    # ---- 1 -> 10
    v1 = os.path.join(a.work, "v1")
    shutil.copytree(pristine, v1)
    con = sqlite3.connect(os.path.join(v1, "runs.sqlite"))
    con.executescript("DROP TABLE outputs; ALTER TABLE runs DROP COLUMN oracle_stay;"
                      "UPDATE meta SET value = '1' WHERE key = 'schema_version';")
    con.close()
    p = run([S, "summary", v1])
    ver, _, cols, ok = schema(os.path.join(v1, "runs.sqlite"))
    n = len(contents(os.path.join(v1, "runs.sqlite"))["runs"])
    t.check(p.returncode == 0 and ver == "10" and "oracle_stay" in cols and cols[cols.index("oracle_stay") + 1] == "failure" and ok and n == 4,
            "1 -> 10: exit %d, version %s, columns ...%s, %d runs %s" % (p.returncode, ver, cols[-2:], n, p.stderr))

    # ---- a newer file is refused and left alone
    v5 = os.path.join(a.work, "v11")
    shutil.copytree(pristine, v5)
    db5 = os.path.join(v5, "runs.sqlite")
    con = sqlite3.connect(db5)
    con.execute("UPDATE meta SET value = '11' WHERE key = 'schema_version'")
    con.commit()
    con.close()
    s5 = schema(db5)
    want = "%s: meta.schema_version is 11, this sprinter reads versions 1 to 10 (written by a newer sprinter)" % db5
    for cmd, args in (("summary", [v5]), ("sweep", [spec, "--out", v5, "--quiet"])):
        p = run([S, cmd] + args)
        lines = p.stderr.strip().splitlines()
        t.check(p.returncode == 1 and lines and lines[-1] == "sprinter %s: %s" % (cmd, want),
                "%s of a version-11 file: exit %d, %r" % (cmd, p.returncode, lines[-1:] if lines else p.stderr))
        t.check(schema(db5) == s5, "%s changed the version-11 file" % cmd)

    # ---- merge reads a version-3 shard as it is
    merged = os.path.join(a.work, "merged")
    p = run([S, "merge", "--quiet", "--out", merged, pristine])
    con = sqlite3.connect(os.path.join(merged, "runs.sqlite"))
    rows = con.execute("SELECT status, failure FROM runs").fetchall()
    con.close()
    t.check(p.returncode == 0 and "merged 3 runs" in p.stdout and rows == [("done", None)] * 3 and
            schema(os.path.join(pristine, "runs.sqlite"))[0] == "3",
            "merge of a version-3 shard: exit %d, rows %s, %s%s" % (p.returncode, rows, p.stdout, p.stderr))
    t.finish()


if __name__ == "__main__":
    main()
