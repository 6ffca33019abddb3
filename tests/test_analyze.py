"""End-to-end test of `sprinter analyze` (analysis/report.h) on experiments/theory_oracle.ini.

Tiny random GPT-2 models with the GPT-2 BPE fixture (tests/sweep_fixture.py) and 140 short prompts
with references; the sweep runs ar, draft, sd, sprinter, oracle-iid at 5 values of eta_FP and
oracle-markov (oracle_stay 0.8, the same configured rates), each uncapped and with max_run 4. Then:
  1. the report: index.md, tables.md (Tables 1-5), checks.md/.tsv, iid.tsv, runs.tsv, n_dist.tsv and
     every plot as PNG and SVG rendered by gnuplot (with its .gp script); index.md links each plot;
     ROUGE is computed from the references; the report path is printed last;
  2. every oracle-iid check under the i.i.d.-verifier model (configured rates, Thm 3.3 E[min(N,c)],
     P(N=0), law of N, Kaplan-Meier mean, Thm 3.4 E[T], Thm 3.1 d_TV) passes;
  3. the i.i.d. tests reject every oracle-markov run, and Thm 3.3's law of N misses every
     oracle-markov run with eta_FP >= 0.2 (at 0.05 blocks end too soon for the correlation to show);
     at most 2 of the 10 oracle-iid runs are rejected (each verdict is family-wise 5%);
  4. `--test-shift 0.5` (a deliberately wrong formula: +0.5 on every predicted mean) fails every
     oracle-iid E[min(N,c)] and E[T] check;
  5. a directory without runs.sqlite, a missing directory and a missing gnuplot fail with one line;
  7. false accepts per block (the overshoot): every oracle-iid run whose i.i.d. tests do not reject
     gets a verdict and passes; every oracle-markov row has no verdict ("i.i.d. rejected");
  8. a small greedy sweep (oracle-iid at temperature 0, rounds with and without the bonus token):
     Thm 3.1 has no verdict there (its estimate equals eta_FP times the mismatch share by
     construction, which the test confirms), the bonus runs' tokens per target call have no verdict
     and exceed E[T] (the bonus happened), and E[T] (steps) keeps its verdict;
  6. a schema-version-1 database (no outputs table, no runs.oracle_stay) is analysed, and
     `sprinter summary` upgrades it to version 5; runs.oracle_stay holds 0.8 for oracle-markov and
     NULL for every other method; `oracle_stay = 1` is refused by the spec parser.
False failures: the checks of step 2 are simultaneous 95% intervals (Bonferroni over every check of
the report, <= 5% for a fresh seed); step 3's oracle-iid bound fails with probability < 1.2%. The
sweep's seeds are fixed, so the outcome is deterministic for a given build.
usage: test_analyze.py --sprinter BIN --source SRCDIR --work DIR
       test_analyze.py --sprinter BIN --make-fixture DIR   (only writes DIR/theory_fixture)
"""
import argparse
import csv
import json
import os
import shutil
import sqlite3
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sweep_fixture as fx  # noqa: E402

PLOTS = ("roc", "en", "pareto", "acf", "position", "design")
WORDS = ["the", "model", "draft", "token", "target", "verifier", "accepts", "a", "sequence", "of", "words",
         "quickly", "and", "then", "rejects", "it", "again", "with", "care", "speed"]


def make_fixture(sprinter, work):
    fix = os.path.join(work, "theory_fixture")
    fx.make_models(sprinter, fix)
    with open(os.path.join(fix, "data.jsonl"), "w") as f:
        for i in range(140):
            prompt = " ".join(WORDS[(i * 7 + k * 3) % len(WORDS)] for k in range(2 + i % 3))
            ref = " ".join(WORDS[(i * 11 + k * 5) % len(WORDS)] for k in range(6 + i % 5))
            f.write(json.dumps({"id": "th%03d" % i, "prompt": prompt, "reference": " " + ref,
                                "source": "fixture"}) + "\n")
    return fix


def read_tsv(path):
    with open(path) as f:
        return list(csv.DictReader(f, delimiter="\t"))


def run(args, cwd=None):
    return subprocess.run(args, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace")


def check_files(t, rep, stdout):
    t.check("report: " in stdout and stdout.strip().endswith("report/index.md"),
            "analyze prints the report path last: %r" % stdout[-200:])
    for fn in ("index.md", "tables.md", "checks.md", "checks.tsv", "iid.tsv", "runs.tsv", "n_dist.tsv"):
        t.check(os.path.getsize(os.path.join(rep, fn)) > 0, "report/%s exists and is not empty" % fn)
    index = open(os.path.join(rep, "index.md")).read()
    for name in PLOTS:
        png, svg = os.path.join(rep, name + ".png"), os.path.join(rep, name + ".svg")
        ok = os.path.exists(png) and open(png, "rb").read(8) == b"\x89PNG\r\n\x1a\n"
        t.check(ok, "%s.png is a PNG" % name)
        t.check(os.path.exists(svg) and "<svg" in open(svg, errors="replace").read(4096), "%s.svg is an SVG" % name)
        t.check(os.path.exists(os.path.join(rep, name + ".gp")), "%s.gp (the gnuplot script) is kept" % name)
        t.check("(%s.png)" % name in index and "(%s.svg)" % name in index, "index.md links %s.png and %s.svg" % (name, name))
    tables = open(os.path.join(rep, "tables.md")).read()
    for k in range(1, 6):
        t.check("## Table %d" % k in tables, "tables.md has Table %d" % k)
    t.check("Deployed operating point" in index and "Are the verifier's errors i.i.d.?" in index,
            "index.md has the deployed-point and i.i.d. sections")
    rows = read_tsv(os.path.join(rep, "runs.tsv"))
    ar = [r for r in rows if r["method"] == "ar"]
    t.check(ar and ar[0]["rougeL"] not in ("nan", "") and float(ar[0]["rougeL"]) >= 0,
            "ROUGE-L of the ar run computed from the references")


def eta_of(setting):
    for kv in setting.split():
        if kv.startswith("eta_fp="):
            return float(kv.split("=")[1])
    return None


def check_theory(t, rep):
    checks = read_tsv(os.path.join(rep, "checks.tsv"))
    iid_rows = [c for c in checks if c["method"] == "oracle-iid" and c["model"] in ("iid", "oracle", "-")]
    runs = set(c["run_hash"] for c in iid_rows)
    etas = set(eta_of(c["setting"]) for c in iid_rows)
    t.check(len(runs) == 10 and len(etas) >= 5, "%d oracle-iid runs over %d eta_FP values" % (len(runs), len(etas)))
    # false accepts have a verdict only where the run's i.i.d. tests do not reject (<= 2 of 10 oracle-iid runs may)
    bad = [c for c in iid_rows if c["pass"] != "1" and not
           (c["check"] == "Thm3.3 false accepts/block" and "i.i.d. rejected" in c["no_verdict_reason"])]
    t.check(len(iid_rows) >= 70 and not bad, "oracle-iid: all %d theorem checks pass (failed: %s)" %
            (len(iid_rows), ", ".join("%s %s %s" % (c["setting"], c["check"], c["model"]) for c in bad[:6])))
    names = set(c["check"] for c in iid_rows)
    for want in ("Thm3.3 E[min(N,c)]", "Thm3.3 law of N (chi-square)", "Thm3.3 KM E[min(N,H)]", "Thm3.4 E[T]",
                 "Thm3.1 d_TV(p,p_S)", "eta_FP = configured", "Thm3.3 false accepts/block"):
        t.check(want in names, "check %s is made" % want)
    iid = read_tsv(os.path.join(rep, "iid.tsv"))
    mk = [r for r in iid if r["method"] == "oracle-markov"]
    t.check(len(mk) == 10 and all(r["rejected"] == "1" for r in mk),
            "oracle-markov: the i.i.d. tests reject every run (%d of %d)" % (sum(r["rejected"] == "1" for r in mk), len(mk)))
    oi = [r for r in iid if r["method"] == "oracle-iid"]
    # per-run verdicts are family-wise at alpha = 0.05: P(3 or more of 10 false rejections) < 1.2%
    t.check(len(oi) == 10 and sum(r["rejected"] == "1" for r in oi) <= 2,
            "oracle-iid: i.i.d. rejected in %d of %d runs (at most 2 expected)" % (sum(r["rejected"] == "1" for r in oi), len(oi)))
    fa_iid = [c for c in iid_rows if c["check"] == "Thm3.3 false accepts/block" and c["pass"] == "1"]
    # model iid, one row per run: 10 runs, of which at most 2 may have i.i.d. rejected (step 3)
    t.check(len(fa_iid) >= 8, "false accepts per block: %d oracle-iid rows (model iid) with a verdict, all inside" %
            len(fa_iid))
    fa_mk = [c for c in checks if c["method"] == "oracle-markov" and c["check"] == "Thm3.3 false accepts/block"]
    t.check(len(fa_mk) == 20 and all(c["pass"] == "-1" and "i.i.d. rejected" in c["no_verdict_reason"] for c in fa_mk),
            "oracle-markov: every false-accepts row has no verdict, i.i.d. rejected (%s)" %
            sorted(set((c["pass"], c["no_verdict_reason"][:40]) for c in fa_mk)))
    for h in sorted(set(c["run_hash"] for c in checks if c["method"] == "oracle-markov")):
        mine = [c for c in checks if c["run_hash"] == h and c["model"] == "iid"]
        eta = eta_of(mine[0]["setting"])
        law = [c for c in mine if c["check"] == "Thm3.3 law of N (chi-square)"]
        if eta >= 0.2:
            t.check(law and law[0]["pass"] == "0", "oracle-markov %s: Thm 3.3's law of N misses (p = %s)" %
                    (mine[0]["setting"], law[0]["p_value"] if law else "?"))


def check_oracle_stay(t, sprinter, work, spec, out):
    """The grid parameter oracle_stay: stored for oracle-markov only, range-checked in the spec."""
    db = sqlite3.connect(os.path.join(out, "runs.sqlite"))
    rows = db.execute("SELECT method, oracle_stay FROM runs").fetchall()
    ver = db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0]
    db.close()
    t.check(ver == "10" and all((m == "oracle-markov") == (v is not None) for m, v in rows) and
            all(v == 0.8 for m, v in rows if m == "oracle-markov"),
            "runs.oracle_stay is 0.8 for oracle-markov and NULL otherwise (schema %s)" % ver)
    bad = os.path.join(work, "bad_stay.ini")
    with open(spec) as f, open(bad, "w") as g:
        g.write(f.read().replace("oracle_stay = 0.8", "oracle_stay = 1"))
    p = run([sprinter, "sweep", bad, "--out", os.path.join(work, "bad"), "--dry-run"], cwd=work)
    t.check(p.returncode == 2 and "[grid] oracle_stay: 1 is out of range [0, 1)" in p.stderr,
            "oracle_stay = 1 is refused: %r" % p.stderr.strip()[:200])


# {draft}: the fixture's draft (labels of both kinds, lambda 1), or its target (draft = target: every
# greedy draft is the target's token, so the tested draft is accepted and a bonus follows; lambda 0.5
# makes every label unacceptable, q = 1 > 0.5 p = 0.5, so that eta_FP is defined)
GREEDY_SPEC = """# greedy oracle-iid rounds with and without the bonus token (tests/test_analyze.py)
[sweep]
name = greedy_rounds
methods = oracle-iid

[models]
draft = theory_fixture/{draft}
target = theory_fixture/target

[data]
datasets = theory_fixture/data.jsonl
n_prompts = 12
offset = 60

[decode]
max_new_tokens = 24
temperature = 0
stop_at_eos = false
audit = true

[grid]
seeds = 7
lambda = {lam}
max_run = 4
finish_round = 1
bonus = 0, 1
eta_fp = 0.3
eta_tp = 0.9
"""


def sweep_greedy(t, sprinter, work, draft):
    """Sweeps and analyses GREEDY_SPEC with the given draft model; returns the results dir or None."""
    spec = os.path.join(work, "greedy_%s.ini" % draft)
    with open(spec, "w") as f:
        f.write(GREEDY_SPEC.format(draft=draft, lam=1.0 if draft == "draft" else 0.5))
    out = os.path.join(work, "greedy_" + draft)
    p = run([sprinter, "sweep", spec, "--out", out, "--quiet", "--jobs", "2"], cwd=work)
    if not t.check(p.returncode == 0, "sweep of the greedy rounds (%s): %s" % (draft, p.stderr[-1500:])):
        return None
    p = run([sprinter, "analyze", out, "--quiet", "--bootstrap", "50"])
    if not t.check(p.returncode == 0, "analyze of the greedy rounds (%s): %s" % (draft, p.stderr[-1500:])):
        return None
    return out


def check_greedy_bonus(t, sprinter, work):
    """Thm 3.1 under greedy decoding and Thm 3.4's tokens in bonus rounds: no verdict, with the reason."""
    out = sweep_greedy(t, sprinter, work, "draft")
    if not out:
        return
    checks = read_tsv(os.path.join(out, "report", "checks.tsv"))
    dtv = [c for c in checks if c["check"] == "Thm3.1 d_TV(p,p_S)"]
    t.check(len(dtv) == 2 and all(c["pass"] == "-1" and "greedy" in c["no_verdict_reason"] for c in dtv),
            "greedy runs: Thm 3.1 has no verdict, reason names greedy decoding (%s)" %
            [(c["pass"], c["no_verdict_reason"][:30]) for c in dtv])
    # sound labels at lambda 1 under greedy: unacceptable <=> the target's greedy token differs, so the
    # 'prediction' eta_FP * share of mismatches is the measurement itself: a check that cannot fail
    t.check(dtv and all(abs(float(c["predicted"]) - float(c["measured"])) < 1e-9 for c in dtv),
            "greedy runs: Thm 3.1's predicted == measured by construction (%s)" %
            [(c["predicted"], c["measured"]) for c in dtv])
    index = open(os.path.join(out, "report", "index.md")).read()
    t.check("Theorem 3.2 is not checked" in index and "design.png" in index,
            "index.md says Theorem 3.2 is not checked and links the design curves")
    out = sweep_greedy(t, sprinter, work, "target")
    if not out:
        return
    checks = read_tsv(os.path.join(out, "report", "checks.tsv"))
    runs = {r["run_hash"]: r for r in read_tsv(os.path.join(out, "report", "runs.tsv"))}
    tok = [c for c in checks if c["check"] == "Thm3.4 tokens/target call"]
    steps = {c["run_hash"]: c for c in checks if c["check"] == "Thm3.4 E[T]" and c["model"] == "iid"}
    t.check(len(tok) == 1 and tok[0]["pass"] == "-1" and "bonus" in tok[0]["no_verdict_reason"] and
            "bonus=1" in runs[tok[0]["run_hash"]]["setting"],
            "the bonus run (only) has a tokens-per-target-call row, without a verdict (%s)" %
            [(c["setting"], c["pass"], c["no_verdict_reason"][:30]) for c in tok])
    if tok:
        h = tok[0]["run_hash"]
        t.check(float(tok[0]["measured"]) > float(steps[h]["measured"]) + 0.05,
                "bonus rounds emit more tokens per target call (%s) than draft steps E[T] (%s): T = N + 1 tokens "
                "would be wrong" % (tok[0]["measured"], steps[h]["measured"]))
    t.check(len(steps) == 2 and all(c["pass"] in ("0", "1") for c in steps.values()),
            "Thm 3.4's E[T] (draft steps) keeps its verdict in both runs")


def check_shift(t, sprinter, out):
    p = run([sprinter, "analyze", out, "--quiet", "--no-plots", "--test-shift", "0.5"])
    t.check(p.returncode == 0, "analyze --test-shift runs: " + p.stderr[-500:])
    checks = read_tsv(os.path.join(out, "report", "checks.tsv"))
    mean = [c for c in checks if c["method"] == "oracle-iid" and c["model"] == "iid" and
            c["check"] in ("Thm3.3 E[min(N,c)]", "Thm3.4 E[T]")]
    t.check(len(mean) == 20 and all(c["pass"] == "0" for c in mean),
            "a formula shifted by +0.5 fails every oracle-iid E[N] / E[T] check (%d of %d fail)" %
            (sum(c["pass"] == "0" for c in mean), len(mean)))


def check_errors(t, sprinter, work, out):
    empty = os.path.join(work, "empty")
    os.makedirs(empty, exist_ok=True)
    for args, want in (([empty], "no runs.sqlite"), ([os.path.join(work, "missing")], "not a results directory"),
                       ([out, "--gnuplot", "/nonexistent/gnuplot"], "gnuplot-nox")):
        p = run([sprinter, "analyze", "--quiet"] + args)
        lines = p.stderr.strip().splitlines()
        t.check(p.returncode == 1 and len(lines) == 1 and want in lines[0],
                "analyze %s fails with one line naming %r: %r" % (args[0], want, p.stderr.strip()[:300]))


def parent_of(pid):
    """The parent pid of /proc/PID, None when the process ended while /proc was read (other processes
    come and go on a shared machine)."""
    try:
        with open("/proc/%s/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[1]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return None


def check_killed(t, sprinter, out):
    """analyze killed midway (SIGKILL, at several moments) leaves the previous report exactly as it was,
    no gnuplot child behind, and the next analyze clears the dead run's staging directory (issue 18)."""
    import signal
    import time
    rep = os.path.join(out, "report")
    before = {f: open(os.path.join(rep, f), "rb").read() for f in sorted(os.listdir(rep))}
    for delay in (0.2, 0.8, 1.5):
        p = subprocess.Popen([sprinter, "analyze", out, "--quiet"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(delay)
        p.send_signal(signal.SIGKILL)
        p.wait()
        time.sleep(0.3)
        now = {f: open(os.path.join(rep, f), "rb").read() for f in sorted(os.listdir(rep))}
        children = [d for d in os.listdir("/proc") if d.isdigit() and parent_of(d) == str(p.pid)] \
            if os.path.exists("/proc") else []
        t.check(now == before and not children, "analyze killed after %.1f s: report/ unchanged (%d files), %d "
                "children left" % (delay, len(now), len(children)))
    q = run([sprinter, "analyze", out, "--quiet", "--no-plots", "--bootstrap", "20"])
    stale = [d for d in os.listdir(out) if d.startswith(".report.")]
    t.check(q.returncode == 0 and not stale, "the next analyze succeeds and clears the staging dirs: %r %s" %
            (stale, q.stderr[-300:]))


def check_old_schema(t, sprinter, work, out):
    """A schema-version-1 database (no outputs table, no runs.oracle_stay) is still read."""
    old = os.path.join(work, "old")
    shutil.rmtree(old, ignore_errors=True)
    shutil.copytree(out, old, ignore=shutil.ignore_patterns("report", "verifiers"))
    db = sqlite3.connect(os.path.join(old, "runs.sqlite"))
    db.execute("DELETE FROM runs WHERE method = 'oracle-markov'")
    db.execute("ALTER TABLE runs DROP COLUMN oracle_stay")
    db.execute("DROP TABLE IF EXISTS outputs")
    db.execute("UPDATE meta SET value = '1' WHERE key = 'schema_version'")
    db.commit()
    db.close()
    p = run([sprinter, "analyze", old, "--quiet", "--no-plots", "--bootstrap", "20"])
    t.check(p.returncode == 0 and "schema version 1" in open(os.path.join(old, "report", "index.md")).read(),
            "a version-1 database is analysed: " + p.stderr[-300:])
    p = run([sprinter, "summary", old])
    db = sqlite3.connect(os.path.join(old, "runs.sqlite"))
    ver = db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0]
    cols = [r[1] for r in db.execute("PRAGMA table_info(runs)")]
    db.close()
    t.check(p.returncode == 0 and ver == "10" and "oracle_stay" in cols and "failure" in cols,
            "sprinter summary upgrades a version-1 database to 10 (got %s, oracle_stay %s, failure %s)" %
            (ver, "oracle_stay" in cols, "failure" in cols))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sprinter", required=True)
    ap.add_argument("--source")
    ap.add_argument("--work")
    ap.add_argument("--make-fixture")
    a = ap.parse_args()
    if a.make_fixture:
        make_fixture(a.sprinter, a.make_fixture)
        return
    t = fx.Checks("analyze")
    shutil.rmtree(a.work, ignore_errors=True)
    os.makedirs(a.work)
    make_fixture(a.sprinter, a.work)
    spec = os.path.join(a.source, "experiments", "theory_oracle.ini")
    out = os.path.join(a.work, "results")
    p = run([a.sprinter, "sweep", spec, "--out", out, "--quiet", "--jobs", "2"], cwd=a.work)
    if not t.check(p.returncode == 0, "sweep of experiments/theory_oracle.ini: " + p.stderr[-2000:]):
        t.finish()
    p = run([a.sprinter, "analyze", out, "--quiet"])
    if not t.check(p.returncode == 0, "analyze: " + p.stderr[-2000:]):
        t.finish()
    print(p.stdout.strip())
    rep = os.path.join(out, "report")
    check_files(t, rep, p.stdout)
    check_theory(t, rep)
    check_oracle_stay(t, a.sprinter, a.work, spec, out)
    check_errors(t, a.sprinter, a.work, out)
    check_killed(t, a.sprinter, out)
    check_old_schema(t, a.sprinter, a.work, out)
    check_shift(t, a.sprinter, out)
    check_greedy_bonus(t, a.sprinter, a.work)
    t.finish()


if __name__ == "__main__":
    main()
