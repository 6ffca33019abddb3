"""End-to-end test of `make paper` (scripts/paper.sh) on tiny random models, and an independent
recomputation of FINDINGS.tsv from the record.

The shipped experiments/paper_code.ini and paper_sound.ini are copied with only their models, data
paths and sizes replaced (so the test runs the specs' real protocol settings), then scripts/paper.sh
sweeps both, merges, scores, runs `sprinter dtv` and analyses. Checks:
  1. report/FINDINGS.md has rows 1-6 and its definitions; index.md has the section "The review's
     questions, answered on this pair"; FINDINGS.tsv parses;
  2. the paper-code runs are what the spec promises: sprinter at temperature 0 with label_rule
     paper-code, bonus 1, finish_round 1, max_run 19, a verifier trained on padded batches, rounds
     recorded; the sound ones at temperature 1;
  3. recomputed here from runs.sqlite (SQL + Python, not the C code): eta_FP / eta_TP of row 1, the
     avg tokens and tau* of row 2 (linear interpolation at 11.10), the sample sizes of row 3 (normal
     quantiles from Python's statistics.NormalDist), the paired log-likelihood differences of row 4
     (outputs table) and the FLOPs of row 5 (prompts table);
     and, from the token logs with h5py, row 7's beta_SD; row 2's review bound for r = 2..8 under both
     readings of avg tokens; rows 5-6 at each protocol's own lambda (paper-code 1, sound 1.2); row 8's
     eta_FP on the verifier's training prompts (paper_code_overlap.ini, offset 0) and held out;
     Table 4 in both directions (PAPER_TRANSFER=1: a verifier trained on each dataset);
  4. rerunning scripts/paper.sh resumes: no run is swept again and FINDINGS.tsv is byte-identical.
usage: test_paper.py --sprinter BIN --source SRCDIR --work DIR
"""
import argparse
import csv
import math
import os
import re
import shutil
import sqlite3
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sweep_fixture as fx  # noqa: E402

PAPER_AVG_TOKENS = 11.10


def make_specs(src, work):
    """The shipped specs with the fixture's models, data and small sizes; returns the specs folder."""
    fix = fx.make_models(SPRINTER, os.path.join(work, "fix"))
    data2 = os.path.join(fix, "data2.jsonl")  # a second dataset: the first one's prompts reversed
    with open(os.path.join(fix, "data.jsonl")) as f, open(data2, "w") as g:
        g.writelines(reversed(f.readlines()))
    specs = os.path.join(work, "specs")
    os.makedirs(specs, exist_ok=True)
    for name in ("paper_code", "paper_sound", "paper_code_overlap", "paper_code_transfer", "paper_sound_transfer"):
        text = open(os.path.join(src, "experiments", name + ".ini")).read()
        text = text.replace("data/models/regime/draft", os.path.join(fix, "draft"))
        text = text.replace("data/models/regime/target", os.path.join(fix, "target"))
        text = text.replace("datasets = data/datasets/encyclopedic.jsonl, data/datasets/sentences.jsonl",
                            "datasets = %s, %s" % (os.path.join(fix, "data.jsonl"), data2))
        text = text.replace("datasets = data/datasets/encyclopedic.jsonl", "datasets = " + os.path.join(fix, "data.jsonl"))
        text = text.replace("data = data/datasets/encyclopedic.jsonl", "data = " + os.path.join(fix, "data.jsonl"))
        text = text.replace("data = data/datasets/sentences.jsonl", "data = " + data2)
        text = re.sub(r"(?m)^n_prompts = 100$", "n_prompts = 10", text)
        text = re.sub(r"(?m)^n_prompts = 500$", "n_prompts = 16", text)
        text = re.sub(r"(?m)^offset = 500$", "offset = 20", text)
        assert not re.search(r"(?m)^[a-z_]+ = .*\bdata/(models|datasets)/", text), name + ": a repository path is left"
        with open(os.path.join(specs, name + ".ini"), "w") as f:
            f.write(text)
    return specs


def paper(src, specs, out):
    env = dict(os.environ, PAPER_SPECS=specs, PAPER_DTV_PREFIXES="4", PAPER_TRANSFER="1")
    return subprocess.run(["bash", os.path.join(src, "scripts", "paper.sh"), SPRINTER, out, "2"], cwd=src, env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace")


def read_tsv(path):
    with open(path) as f:
        return list(csv.DictReader(f, delimiter="\t"))


def close(a, b, tol=1e-7):
    if isinstance(a, str):
        a = float(a)
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return abs(a - b) <= tol * max(1.0, abs(b))


def run_of(db, prefix):
    rows = db.execute("SELECT run_hash FROM runs WHERE run_hash LIKE ? AND status = 'done'", (prefix + "%",)).fetchall()
    return rows[0][0] if len(rows) == 1 else None


def protocol_of(db, h):
    rule, temp = db.execute("SELECT label_rule, temperature FROM runs WHERE run_hash = ?", (h,)).fetchone()
    return rule if rule else ("paper-code" if temp == 0 else "sound")


def avg_tokens(db, h):
    rows = db.execute("SELECT rounds, round_kept FROM prompts WHERE run_hash = ? AND rounds > 0", (h,)).fetchall()
    return sum(k / r for r, k in rows) / len(rows) if rows else float("nan")


def llpt(db, h):
    return {pi: lp / n for pi, lp, n in db.execute(
        "SELECT prompt_index, target_logprob, n_tokens FROM outputs WHERE run_hash = ? AND n_tokens > 0", (h,))}


def check_protocols(t, db):
    pc = db.execute("SELECT temperature, bonus, finish_round, max_run FROM runs WHERE method = 'sprinter' AND "
                    "label_rule = 'paper-code'").fetchall()
    ov = db.execute("SELECT prompt_offset, lambda, tau FROM runs WHERE method = 'sprinter' AND "
                    "config LIKE '%eval_on_verifier_prompts 1%' ORDER BY lambda").fetchall()
    t.check(len(pc) == 2 * 2 * 8 + 2 + 2 and all(r == (0.0, 1.0, 1.0, 19.0) for r in pc),
            "paper-code sprinter runs: 2 datasets x 2 lambdas x 8 taus + 2 on the verifier's training prompts + 2 "
            "with the verifier trained on the second dataset, "
            "temperature 0, bonus 1, finish_round 1, max_run 19 (%d runs, first %s)" % (len(pc), pc[:1]))
    t.check(ov == [(0, 1.0, 0.5), (0, 1.2, 0.5)], "the overlap runs: offset 0, lambda 1 and 1.2, tau 0.5: %s" % ov)
    padded = db.execute("SELECT COUNT(*) FROM runs WHERE method = 'sprinter' AND label_rule = 'paper-code' AND "
                        "config LIKE '%verifier_padded_batches 1%'").fetchone()[0]
    t.check(padded == len(pc), "paper-code sprinter runs name the padded-batch verifier training in their "
            "configuration (%d of %d)" % (padded, len(pc)))
    rounds = db.execute("SELECT COUNT(*) FROM prompts p JOIN runs r USING (run_hash) WHERE r.label_rule = "
                        "'paper-code' AND p.rounds > 0").fetchone()[0]
    t.check(rounds == len(pc) * 10, "every paper-code prompt row records its rounds (%d of %d)" % (rounds, len(pc) * 10))
    sound = db.execute("SELECT DISTINCT temperature FROM runs WHERE label_rule = 'sound'").fetchall()
    t.check(sound == [(1.0,)], "sound sprinter runs sample at temperature 1: %s" % sound)


def beta_sd(db, h, rep):
    """Accepted share of an sd run's checked drafts, from its token log (h5py, not the C reader)."""
    import h5py
    import numpy as np
    log = db.execute("SELECT token_log FROM runs WHERE run_hash = ?", (h,)).fetchone()[0]
    with h5py.File(os.path.join(os.path.dirname(rep), log), "r") as f:
        kind, q, p, dt = f["kind"][:], f["q"][:], f["p"][:], f["draft_token"][:]
    m = ((kind == 3) | (kind == 4)) & (dt >= 0) & (q > 0) & np.isfinite(p)
    return float((kind[m] == 3).sum()) / float(m.sum()) if m.sum() else float("nan")


def check_rows(t, db, rep):
    tables = open(os.path.join(rep, "tables.md")).read()
    for proto_lam in ("| paper-code | 1 | 0.5 |", "| sound | 1.2 | 0.5 |"):
        t.check(re.search(r"(?m)^\| data2\.jsonl \| data\.jsonl \| cross %s" % re.escape(proto_lam), tables) and
                re.search(r"(?m)^\| data\.jsonl \| data2\.jsonl \| cross %s" % re.escape(proto_lam), tables),
                "Table 4 has both directions at label rule, lambda, tau %s" % proto_lam)
    t.check(re.search(r"(?m)^\| data\.jsonl \| data\.jsonl \(verifier's training prompts\) \| in-domain, training "
                      r"prompts \| paper-code \| 1 \| 0\.5 \|", tables), "Table 4 files the overlap run as in-domain on the "
            "training prompts")
    md = open(os.path.join(rep, "FINDINGS.md")).read()
    for k in range(1, 9):
        t.check(re.search(r"(?m)^\| %d \| " % k, md), "FINDINGS.md has row %d" % k)
    t.check("Definitions" in md, "FINDINGS.md states its definitions")
    index = open(os.path.join(rep, "index.md")).read()
    t.check("## The review's questions, answered on this pair" in index and "(FINDINGS.md)" in index,
            "index.md has the review's-questions section linking FINDINGS.md")
    rows = read_tsv(os.path.join(rep, "FINDINGS.tsv"))
    iid = {r["run_hash"]: r for r in read_tsv(os.path.join(rep, "iid.tsv"))}
    seen = {q: 0 for q in ("eta", "avg", "tau", "need", "llpt", "flops", "speed", "bound", "lambda", "beta_sd", "overlap", "sign")}
    nd = statistics.NormalDist()
    for r in rows:
        q, runs = r["quantity"], r["runs"].split()
        hs = [run_of(db, p) for p in runs]
        if None in hs:
            t.check(False, "row %s %s: runs %s are done runs of runs.sqlite" % (r["row"], q, r["runs"]))
            continue
        if r["row"] == "1" and q in ("eta_fp", "eta_tp"):
            col, n = ("fp", "audited_neg") if q == "eta_fp" else ("tp", "audited_pos")
            k, m = db.execute("SELECT SUM(%s), SUM(%s) FROM prompts WHERE run_hash = ?" % (col, n), (hs[0],)).fetchone()
            seen["eta"] += t.check(close(r["value"], k / m), "row 1 %s of %s: %s == %d / %d" % (q, runs[0], r["value"], k, m))
        elif r["row"] == "2" and q == "avg_tokens_paper":
            seen["avg"] += t.check(close(r["value"], avg_tokens(db, hs[0])), "row 2 avg tokens of %s" % runs[0])
        elif r["row"] == "2" and q == "tau_star":
            h = hs[0]
            lam, ds = db.execute("SELECT lambda, dataset_sha256 FROM runs WHERE run_hash = ?", (h,)).fetchone()
            cell = db.execute("SELECT run_hash, tau FROM runs WHERE method = 'sprinter' AND status = 'done' AND "
                              "abs(lambda - ?) < 1e-9 AND dataset_sha256 = ? AND (instr(config, 'eval_on_verifier_prompts 1') > 0) = "
                              "(SELECT instr(config, 'eval_on_verifier_prompts 1') > 0 FROM runs WHERE run_hash = ?)",
                              (lam, ds, h)).fetchall()
            pts = sorted((tau, avg_tokens(db, x)) for x, tau in cell if protocol_of(db, x) == protocol_of(db, h))
            want = float("nan")
            for (t0, y0), (t1, y1) in zip(pts, pts[1:]):
                y0, y1 = y0 - PAPER_AVG_TOKENS, y1 - PAPER_AVG_TOKENS
                if y0 == 0:
                    want = t0
                    break
                if y0 * y1 < 0:
                    want = t0 + (t1 - t0) * y0 / (y0 - y1)
                    break
            seen["tau"] += t.check(close(r["value"], want), "row 2 tau* of %s (%s): %s vs %s from %d taus" %
                                   (runs[0], protocol_of(db, h), r["value"], want, len(pts)))
        elif r["row"] == "3" and q == "needed_lag1":
            a = 0.05 / max(1, int(iid[hs[0]]["n_tests"]))  # as the C code: no test run counts as one
            want = math.ceil(((nd.inv_cdf(1 - a / 2) + nd.inv_cdf(0.8)) / 0.1) ** 2)
            seen["need"] += t.check(close(r["value"], want), "row 3 decisions for lag-1 0.1: %s vs %d" % (r["value"], want))
        elif r["row"] == "4" and q.startswith("llpt_diff_"):
            by = {p: run_of(db, p) for p in runs}
            meth = {db.execute("SELECT method FROM runs WHERE run_hash = ?", (h,)).fetchone()[0]: h for h in by.values()}
            x, y = q[len("llpt_diff_"):].split("_")
            lx, ly = llpt(db, meth[x]), llpt(db, meth[y])
            d = [lx[p] - ly[p] for p in lx if p in ly]
            seen["llpt"] += t.check(close(r["value"], sum(d) / len(d)), "row 4 %s: %s vs %.6f over %d prompts" %
                                    (q, r["value"], sum(d) / len(d), len(d)))
        elif r["row"] == "6" and q.endswith("_timed_alone"):
            if q == "speedup_vs_sd_timed_alone":  # row 6 at the protocol's own lambda
                lam = db.execute("SELECT lambda FROM runs WHERE run_hash = ?", (hs[2],)).fetchone()[0]
                want_lam = 1.0 if r["protocol"].startswith("paper-code") else 1.2
                seen["lambda"] += t.check(close(lam, want_lam), "row 6 (%s) at the protocol's own lambda: %s vs %s" %
                                          (r["protocol"], lam, want_lam))
            # the runs are ar, sd, sprinter: the ratio of ms per token within each repetition, median/min/max
            slow = hs[0] if q.startswith("speedup_vs_ar") else hs[1]
            ms = lambda h: dict(db.execute("SELECT rep, 1000.0 * t_total / tokens FROM timings WHERE run_hash = ? "
                                           "AND tokens > 0", (h,)).fetchall())
            a, b = ms(slow), ms(hs[2])
            ratios = sorted(a[k] / b[k] for k in a if k in b)
            want = statistics.median(ratios) if ratios else float("nan")
            seen["speed"] += t.check(close(r["value"], want) and close(r["lo"], ratios[0]) and close(r["hi"], ratios[-1]),
                                     "row 6 %s: %s [%s, %s] vs %.6f [%.6f, %.6f] over %d repetitions" %
                                     (q, r["value"], r["lo"], r["hi"], want, ratios[0], ratios[-1], len(ratios)))
        elif r["row"] == "6" and q == "speedup_vs_sd_sign_test_p":
            # the exact two-sided sign test over the repetitions (ties dropped), from the timings table
            ms = lambda h: dict(db.execute("SELECT rep, 1000.0 * t_total / tokens FROM timings WHERE run_hash = ? "
                                           "AND tokens > 0", (h,)).fetchall())
            a, b = ms(hs[1]), ms(hs[2])
            signs = [a[k] > b[k] for k in a if k in b and b[k] > 0 and a[k] != b[k]]
            n, k = len(signs), min(sum(signs), len(signs) - sum(signs))
            want = min(1.0, 2 * sum(math.comb(n, i) for i in range(k + 1)) / 2 ** n) if n else 1.0
            seen["sign"] += t.check(close(r["value"], want), "row 6 sign test p: %s vs %.6g (%d of %d faster)" %
                                    (r["value"], want, sum(signs), n))
        elif r["row"] == "6" and q.endswith("_sweep_timing"):
            t.check(False, "row 6 %s: the speed row read the sweep's timings although the specs time runs alone" % q)
        elif r["row"] == "5" and q.startswith("gflop_20_"):
            fd, fv, ft, n = db.execute("SELECT SUM(flops_draft), SUM(flops_verifier), SUM(flops_target), SUM(tokens) "
                                       "FROM prompts WHERE run_hash = ?", (hs[0],)).fetchone()
            want = 20 * ((fd + fv) if "draft_only" in q else (fd + fv + ft)) / n / 1e9
            seen["flops"] += t.check(close(r["value"], want), "row 5 %s: %s vs %.9g" % (q, r["value"], want))
        elif r["row"] == "2" and re.match(r"review_bound_r\d_en_avg", q):
            rr = int(q[len("review_bound_r")])
            en = PAPER_AVG_TOKENS - (1 if q.endswith("_minus_1") else 0)
            want = 1 - 1 / (en - rr + 1) if en - rr + 1 > 1 else float("nan")
            seen["bound"] += t.check(close(r["value"], want), "row 2 %s: %s vs %.9g" % (q, r["value"], want))
        elif r["row"] in ("5", "6") and q in ("gflop_20_with_target_sprinter", "speedup_vs_sd"):
            h = [x for x in hs if db.execute("SELECT method FROM runs WHERE run_hash = ?", (x,)).fetchone()[0]
                 == "sprinter"][0]
            lam = db.execute("SELECT lambda FROM runs WHERE run_hash = ?", (h,)).fetchone()[0]
            want = 1.0 if r["protocol"].startswith("paper-code") else 1.2
            seen["lambda"] += t.check(close(lam, want), "row %s (%s) at the protocol's own lambda: %s vs %s" %
                                      (r["row"], r["protocol"], lam, want))
        elif r["row"] == "8" and q in ("eta_fp_training_prompts", "eta_fp_held_out"):
            k, m = db.execute("SELECT SUM(fp), SUM(audited_neg) FROM prompts WHERE run_hash = ?", (hs[0],)).fetchone()
            off = db.execute("SELECT prompt_offset FROM runs WHERE run_hash = ?", (hs[0],)).fetchone()[0]
            seen["overlap"] += t.check(close(r["value"], k / m) and (off == 0) == q.endswith("training_prompts"),
                                       "row 8 %s: %s == %d / %d (offset %d)" % (q, r["value"], k, m, off))
        elif r["row"] == "7" and q == "beta_sd":
            seen["beta_sd"] += t.check(close(r["value"], beta_sd(db, hs[0], rep)), "row 7 beta_sd of %s: %s" %
                                       (runs[0], r["value"]))
    for q, n in seen.items():
        t.check(n > 0, "FINDINGS.tsv figures of kind %s recomputed (%d)" % (q, n))


def check_shared_verifiers(t, db, out):
    """The sweeps share one verifier cache (OUT/verifiers): the overlap runs use paper_code's verifier
    files (the same [verifier] section: same path and sha256) and every verifier was collected once, so
    the cache holds one collect file per verifier file and no sweep folder has a cache of its own."""
    rows = db.execute("SELECT instr(config, 'eval_on_verifier_prompts 1') > 0, label_rule, verifier_path, "
                      "verifier_sha256 FROM runs WHERE method = 'sprinter'").fetchall()
    overlap = {(p, h) for o, _, p, h in rows if o}
    held_out = {(p, h) for o, rule, p, h in rows if not o and rule == "paper-code"}
    cache = os.path.join(out, "verifiers")
    names = sorted(os.listdir(cache)) if os.path.isdir(cache) else []
    n_collect = sum(n.startswith("collect-") and n.endswith(".h5") for n in names)
    n_ver = sum(n.startswith("verifier-") and n.endswith(".safetensors") for n in names)
    n_sha = len({h for _, _, _, h in rows})
    own = [d for d in os.listdir(os.path.join(out, "sweeps")) if os.path.isdir(os.path.join(out, "sweeps", d, "verifiers"))]
    t.check(len(overlap) == 2 and overlap <= held_out and all(os.path.realpath(os.path.dirname(p)) == os.path.realpath(cache) for _, _, p, _ in rows)
            and n_collect == n_sha and n_ver == n_sha and not own,
            "one verifier cache: the overlap runs use 2 of paper_code's verifier files; %d collect and %d verifier "
            "files for %d verifiers; sweep folders with their own cache: %s" % (n_collect, n_ver, n_sha, own or "none"))


def check_timed_subset(t, db):
    """[timing] lambda / tau in the paper specs: the runs timed alone are those the speed rows read (every
    run of a method without lambda and tau; sprinter and specdecpp at the protocol's own lambda and tau
    0.5), each with every repetition; the others have no timings."""
    rows = db.execute("SELECT r.method, r.label_rule, r.lambda, r.tau, r.spec_name IN ('paper-code', 'paper-sound'),"
                      " (SELECT COUNT(*) FROM timings m WHERE m.run_hash = r.run_hash) FROM runs r").fetchall()
    wrong = []
    for method, rule, lam, tau, timed_spec, reps in rows:
        if not timed_spec:
            want = 0  # the overlap and transfer specs have no [timing]
        elif lam is None and tau is None:
            want = 6
        else:
            want = 6 if close(lam, 1.0 if rule == "paper-code" else 1.2) and close(tau, 0.5) else 0
        if reps != want:
            wrong.append((method, rule, lam, tau, reps, want))
    timed = sum(1 for r in rows if r[5])
    t.check(not wrong and 0 < timed < len(rows), "the runs timed alone are the speed rows' (%d of %d runs, 6 repetitions "
            "each); wrong: %s" % (timed, len(rows), wrong[:4] or "none"))


def main():
    global SPRINTER
    ap = argparse.ArgumentParser()
    ap.add_argument("--sprinter", required=True)
    ap.add_argument("--source", required=True)
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    SPRINTER = os.path.abspath(a.sprinter)
    t = fx.Checks("paper")
    shutil.rmtree(a.work, ignore_errors=True)
    os.makedirs(a.work)
    specs = make_specs(a.source, a.work)
    out = os.path.join(a.work, "paper")
    p = paper(a.source, specs, out)
    ok = t.check(p.returncode == 0 and os.path.exists(os.path.join(out, "report", "FINDINGS.md")),
                 "scripts/paper.sh exits 0 and writes report/FINDINGS.md (rc %d): %s" % (p.returncode, p.stdout[-1500:]))
    if ok:
        db = sqlite3.connect("file:%s?mode=ro" % os.path.join(out, "runs.sqlite"), uri=True)
        check_protocols(t, db)
        check_rows(t, db, os.path.join(out, "report"))
        check_shared_verifiers(t, db, out)
        check_timed_subset(t, db)
        n_runs = db.execute("SELECT COUNT(*) FROM runs").fetchone()[0]
        db.close()
        before = open(os.path.join(out, "report", "FINDINGS.tsv")).read()
        p2 = paper(a.source, specs, out)
        db = sqlite3.connect("file:%s?mode=ro" % os.path.join(out, "runs.sqlite"), uri=True)
        t.check(p2.returncode == 0 and db.execute("SELECT COUNT(*) FROM runs").fetchone()[0] == n_runs,
                "a rerun exits 0 and adds no run (rc %d)" % p2.returncode)
        db.close()
        t.check(open(os.path.join(out, "report", "FINDINGS.tsv")).read() == before,
                "a rerun reproduces FINDINGS.tsv byte for byte")
    t.finish()


SPRINTER = None
if __name__ == "__main__":
    main()
