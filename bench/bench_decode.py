#!/usr/bin/python3
"""Decoding-method benchmark (issues 7, 13): one sweep of every method variant over
the first K prompts of a dataset (after the verifier's training prompts), run by the harness's
own runner (`sprinter sweep`), quality scored by `sprinter score`, aggregated from runs.sqlite into
results/bench/TAG.json and TAG.md (TAG = --tag, default decode). The pair is the regime pair
(data/models/regime, issue 13) when it exists, else the default pair; --draft / --target choose.

Variants: ar, draft, bild (alpha), sd, pmin (p_min) and specdecpp at every gamma of the grid (3..8;
for pmin and specdecpp the longest block), sprinter and specdecpp at every tau of the grid (lambda
1.2, the paper's deployed label). The sweep trains and caches the verifier itself ([verifier] section: the first
--verifier-prompts prompts of the dataset; evaluation prompts start after them).

Per variant: latency per token = sum over prompts of decode wall time (audit excluded) / tokens;
speedup vs AR and vs SD (gamma 5, and the best SD gamma of the same sweep); target calls per
token; FLOPs per token (draft + target + verifier forward FLOPs the decoder counts); the quality
cost = mean over prompts of (target log-likelihood per token of the output) minus the same for AR
on the same prompt, with a 95% interval from the paired differences (t quantile from
scipy-free table below). Exact methods (sd, pmin, specdecpp's rejected tokens...) should sit at 0
within the interval; draft-only shows the full cost. eta_FP / eta_TP come from the online audit.

The sweep runs in one process (--jobs 1) with --threads engine threads, methods one after another
on warm models, so every ratio in the table is measured side by side in one run.
"""
import argparse
import datetime
import json
import math
import os
import platform
import shutil
import sqlite3
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# two-sided 95% Student t quantiles by degrees of freedom (normal beyond 120)
T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262, 10: 2.228,
       12: 2.179, 15: 2.131, 20: 2.086, 25: 2.060, 30: 2.042, 40: 2.021, 60: 2.000, 120: 1.980}


def t95(df):
    if df <= 0:
        return float("nan")
    keys = sorted(T95)
    for k in keys:
        if df <= k:
            return T95[k]
    return 1.960


ALL_METHODS = "ar, draft, sd, sprinter, specdecpp, pmin, bild"


def default_pair_dir():
    """data/models/regime when its target exists (the pair in the paper's regime), else data/models."""
    regime = os.path.join(ROOT, "data", "models", "regime")
    return regime if os.path.exists(os.path.join(regime, "target", "model.safetensors")) \
        else os.path.join(ROOT, "data", "models")


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    pair = default_pair_dir()
    ap.add_argument("--sprinter", default=os.path.join(ROOT, "build-bench", "sprinter"))
    ap.add_argument("--draft", default=os.path.join(pair, "draft"))
    ap.add_argument("--target", default=os.path.join(pair, "target"))
    ap.add_argument("--data", default=os.path.join(ROOT, "data", "datasets", "encyclopedic.jsonl"))
    ap.add_argument("--out-dir", default=os.path.join(ROOT, "results", "bench"))
    ap.add_argument("--prompts", type=int, default=50, help="K: evaluate K prompts")
    ap.add_argument("--max-new", type=int, default=64)
    ap.add_argument("--threads", type=int, default=1, help="engine threads (the default pair is tiny: 1)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--temperature", type=float, default=1.0, help="0 = greedy")
    ap.add_argument("--methods", default=ALL_METHODS, help="comma-separated methods of the sweep")
    ap.add_argument("--tag", default="decode",
                    help="output names: TAG.json, TAG.md, TAG.log, TAG.ini, TAG_sweep*/ under --out-dir")
    ap.add_argument("--gammas", default="3,4,5,6,7,8")
    ap.add_argument("--taus", default="0.3,0.5,0.7,0.9")
    ap.add_argument("--lambda", dest="lam", type=float, default=1.2)
    ap.add_argument("--p-min", type=float, default=0.5)
    ap.add_argument("--alpha", type=float, default=0.5)
    ap.add_argument("--verifier-prompts", type=int, default=300)
    ap.add_argument("--fresh", action="store_true", help="delete the previous sweep directories first")
    ap.add_argument("--reps", type=int, default=3,
                    help="time the whole sweep R times (same runs, same outputs); latency = median over reps")
    return ap.parse_args()


def run(cmd, log):
    t0 = time.time()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    with open(log, "a") as f:
        f.write(f"$ {' '.join(cmd)}\n{p.stdout}(exit {p.returncode}, {time.time() - t0:.1f} s)\n")
    return p.returncode, p.stdout


def write_spec(a, path):
    gam = [int(g) for g in a.gammas.split(",")]
    spec = f"""# generated by bench/bench_decode.py
[sweep]
name = bench-{a.tag}
methods = {a.methods}

[models]
draft = {a.draft}
target = {a.target}

[data]
datasets = {a.data}
n_prompts = {a.prompts}
offset = {a.verifier_prompts + 100}

[decode]
max_new_tokens = {a.max_new}
temperature = {a.temperature}
top_k = 0
top_p = 1.0
stop_at_eos = false
audit = true

[grid]
seeds = {a.seed}
lambda = {a.lam}
tau = {a.taus}
gamma = {", ".join(str(g) for g in gam)}
max_run = 0
alpha = {a.alpha}
p_min = {a.p_min}

[verifier]
data = {a.data}
n_prompts = {a.verifier_prompts}
max_new = 20
seed = 0
l2 = 0.001
val_fraction = 0.2
"""
    with open(path, "w") as f:
        f.write(spec)


def variant_name(r):
    m = r["method"]
    if m == "sd":
        return f"sd gamma={r['gamma']}"
    if m == "sprinter":
        return f"sprinter lambda={r['lambda']:g} tau={r['tau']:g}"
    if m == "specdecpp":
        return f"specdecpp gamma={r['gamma']} tau={r['tau']:g}"
    if m == "pmin":
        return f"pmin gamma={r['gamma']} p_min={r['p_min']:g}"
    if m == "bild":
        return f"bild alpha={r['alpha']:g}"
    return m


def collect(db_path, prefixes):
    """Done runs of this spec (run-hash prefixes from `sprinter sweep --dry-run`: a reused directory may
    also hold runs of earlier settings)."""
    con = sqlite3.connect(db_path)
    con.row_factory = sqlite3.Row
    runs = [dict(r) for r in con.execute(
        "SELECT run_hash, method, gamma, tau, lambda, alpha, p_min FROM runs WHERE status = 'done' ORDER BY run_index")
        if any(r["run_hash"].startswith(p) for p in prefixes)]
    per_prompt = {}
    for r in runs:
        rows = con.execute(
            "SELECT p.prompt_index, p.tokens, p.t_total, p.target_calls, p.flops_draft, p.flops_target, "
            "p.flops_verifier, p.fp, p.tp, p.audited_neg, p.audited_pos, o.target_mean_logprob, "
            "p.t_draft, p.t_target, p.draft_calls "
            "FROM prompts p LEFT JOIN outputs o ON o.run_hash = p.run_hash AND o.prompt_index = p.prompt_index "
            "WHERE p.run_hash = ? ORDER BY p.prompt_index", (r["run_hash"],)).fetchall()
        per_prompt[r["run_hash"]] = [dict(x) for x in rows]
    failed = [dict(x) for x in con.execute("SELECT run_hash, method, failure FROM runs WHERE status = 'failed'")]
    con.close()
    return runs, per_prompt, failed


def acceptance_rows(sprinter, sweep_dir, log):
    """The acceptance figures as the harness defines them (records/metrics.h), from `sprinter summary
    --tsv`, keyed by (method, gamma, tau, lambda, alpha, p_min) (None where a parameter does not apply)."""
    rc, out = run([sprinter, "summary", sweep_dir, "--tsv"], log)
    if rc != 0:
        raise SystemExit(f"bench_decode: sprinter summary --tsv failed (exit {rc}); see {log}")
    lines = [ln.split("\t") for ln in out.splitlines() if ln]
    head, rows = lines[0], lines[1:]

    def num(x):
        v = float(x)
        return None if math.isnan(v) else v
    table = {}
    for r in rows:
        d = dict(zip(head, r))
        key = (d["method"],) + tuple(num(d[k]) for k in ("gamma", "tau", "lambda", "alpha", "p_min"))
        table[key] = {k: num(d[k]) for k in ("tokens_per_call", "accept_rate", "accept_rate_lo", "accept_rate_hi",
                                             "accepted_per_drafted", "accept_rate_from_tpc")}
    return table


def expected_tokens_per_call(alpha, gamma):
    """1 + a + ... + a^gamma: tokens per target call of full gamma-blocks at i.i.d. acceptance a."""
    return sum(alpha ** i for i in range(int(gamma) + 1))


def aggregate(runs, per_prompt, rep_times, accept):
    out = []
    ar = next((r for r in runs if r["method"] == "ar"), None)
    ar_lp = {p["prompt_index"]: p["target_mean_logprob"] for p in per_prompt[ar["run_hash"]]} if ar else {}
    for r in runs:
        ps = per_prompt[r["run_hash"]]
        tok = sum(p["tokens"] for p in ps)
        t = sum(p["t_total"] for p in ps)
        calls = sum(p["target_calls"] for p in ps)
        flops = sum(p["flops_draft"] + p["flops_target"] + p["flops_verifier"] for p in ps)
        neg = sum(p["audited_neg"] or 0 for p in ps)
        pos = sum(p["audited_pos"] or 0 for p in ps)
        d = [p["target_mean_logprob"] - ar_lp[p["prompt_index"]] for p in ps
             if p["target_mean_logprob"] is not None and ar_lp.get(p["prompt_index"]) is not None]
        lat = sorted(1e3 * rt / rtok for rt, rtok in rep_times.get(r["run_hash"], []) if rtok)
        med = lat[len(lat) // 2] if len(lat) % 2 else (0.5 * (lat[len(lat) // 2 - 1] + lat[len(lat) // 2]) if lat else None)
        row = {"variant": variant_name(r), "method": r["method"], "gamma": r["gamma"], "tau": r["tau"],
               "lambda": r["lambda"], "alpha": r["alpha"], "p_min": r["p_min"], "prompts": len(ps), "tokens": tok,
               "seconds": t, "latency_ms_per_token": med, "latency_ms_per_token_reps": lat,
               "latency_spread": (lat[-1] - lat[0]) / med if lat and med else None,
               "tokens_per_s": 1e3 / med if med else None,
               "target_calls_per_token": calls / tok if tok else None,
               "flops_per_token": flops / tok if tok else None,
               "eta_fp": (sum(p["fp"] or 0 for p in ps) / neg) if neg else None,
               "eta_tp": (sum(p["tp"] or 0 for p in ps) / pos) if pos else None,
               "mean_logprob": (sum(p["target_mean_logprob"] for p in ps if p["target_mean_logprob"] is not None)
                                / max(1, sum(p["target_mean_logprob"] is not None for p in ps)))}
        acc = accept.get((r["method"],) + tuple(None if r[k] is None else float(r[k])
                                                for k in ("gamma", "tau", "lambda", "alpha", "p_min")), {})
        row.update({"tokens_per_call": acc.get("tokens_per_call"), "accept_rate_alpha": acc.get("accept_rate"),
                    "accept_rate_ci95": [acc.get("accept_rate_lo"), acc.get("accept_rate_hi")]
                    if acc.get("accept_rate") is not None else None,
                    "accepted_per_drafted": acc.get("accepted_per_drafted"),
                    "accept_rate_from_tokens_per_call": acc.get("accept_rate_from_tpc"),
                    # per-call costs of this run, for the tokens-per-call speed model
                    "s_per_draft_forward": (sum(p["t_draft"] for p in ps) / sum(p["draft_calls"] for p in ps))
                    if sum(p["draft_calls"] for p in ps) else None,
                    "s_per_target_call": (sum(p["t_target"] for p in ps) / calls) if calls else None})
        if len(d) >= 2 and r["method"] != "ar":
            m = sum(d) / len(d)
            sd = math.sqrt(sum((x - m) ** 2 for x in d) / (len(d) - 1))
            h = t95(len(d) - 1) * sd / math.sqrt(len(d))
            row.update({"quality_delta_logprob": m, "quality_delta_ci95": [m - h, m + h]})
        else:
            row.update({"quality_delta_logprob": 0.0 if r["method"] == "ar" else None, "quality_delta_ci95": None})
        out.append(row)
    ar_row = next((x for x in out if x["method"] == "ar"), None)
    sd_rows = [x for x in out if x["method"] == "sd" and x["latency_ms_per_token"]]
    sd5 = next((x for x in sd_rows if x["gamma"] == 5), None)
    best_sd = min(sd_rows, key=lambda x: x["latency_ms_per_token"]) if sd_rows else None
    # the speed model for sd: S = E / (gamma c + v(gamma + 1)), E = expected tokens per call at the measured
    # alpha, c = draft forward / AR token, v = target call of gamma + 1 rows / AR token (this run's own costs)
    ar_call = ar_row["s_per_target_call"] if ar_row else None
    for x in out:
        if x["method"] == "sd" and ar_call and x["accept_rate_alpha"] is not None and x["s_per_draft_forward"] \
                and x["s_per_target_call"] and x["gamma"]:
            c, v = x["s_per_draft_forward"] / ar_call, x["s_per_target_call"] / ar_call
            e = expected_tokens_per_call(x["accept_rate_alpha"], x["gamma"])
            x["model"] = {"E_tokens_per_call": e, "c": c, "v": v, "predicted_speedup_vs_ar": e / (x["gamma"] * c + v)}
    for x in out:
        lat = x["latency_ms_per_token"]
        x["speedup_vs_ar"] = ar_row["latency_ms_per_token"] / lat if ar_row and lat else None
        x["speedup_vs_sd_g5"] = sd5["latency_ms_per_token"] / lat if sd5 and lat else None
        x["speedup_vs_best_sd"] = best_sd["latency_ms_per_token"] / lat if best_sd and lat else None
    return out, (best_sd["variant"] if best_sd else None)


def pair_name(draft, target):
    """'regime pair' / 'default pair' for the committed pairs, else the two directories."""
    for name, d in (("regime pair", os.path.join(ROOT, "data", "models", "regime")),
                    ("default pair", os.path.join(ROOT, "data", "models"))):
        if os.path.realpath(draft) == os.path.realpath(os.path.join(d, "draft")) and \
                os.path.realpath(target) == os.path.realpath(os.path.join(d, "target")):
            return name
    return f"draft {draft}, target {target}"


def fmt(x, f="{:.2f}"):
    return "–" if x is None else f.format(x)


def verdict(rows, best_sd):
    """The paper's qualitative claim: SPRINTER is faster than SD at a small quality cost. "Small" is
    judged against the draft-only cost (the whole gap between the models): a variant whose 95%
    interval contains 0 has no measurable cost."""
    spr = [x for x in rows if x["method"] == "sprinter" and x["latency_ms_per_token"]]
    sd = [x for x in rows if x["method"] == "sd" and x["latency_ms_per_token"]]
    ar = next((x for x in rows if x["method"] == "ar"), None)
    dr = next((x for x in rows if x["method"] == "draft"), None)
    if not sd or not ar:
        return "not enough variants finished to judge the claim"
    bsd = min(sd, key=lambda x: x["latency_ms_per_token"])
    if not spr:
        return (f"Best SD: {bsd['variant']} at {bsd['speedup_vs_ar']:.2f}x AR ({bsd['target_calls_per_token']:.3f} "
                "target calls/token); no SPRINTER variant in this sweep, so no verdict on the paper's claim.")
    gap = dr["quality_delta_logprob"] if dr and dr["quality_delta_logprob"] else None

    def describe(x):
        ci = x["quality_delta_ci95"]
        q = x["quality_delta_logprob"]
        frac = f", {100 * q / gap:.0f}% of the draft-only cost ({gap:+.3f})" if gap else ""
        return (f"{x['variant']}: {x['speedup_vs_ar']:.2f}x AR = {x['speedup_vs_best_sd']:.2f}x the best SD, "
                f"{x['target_calls_per_token']:.3f} target calls/token, quality cost {q:+.3f} nats/token"
                + (f" [{ci[0]:+.3f}, {ci[1]:+.3f}]" if ci else "") + frac)

    lossless = [x for x in spr if x["quality_delta_ci95"] and x["quality_delta_ci95"][0] <= 0 <= x["quality_delta_ci95"][1]]
    # faster = every rep of the variant beat every rep of the best SD (ranges do not overlap)
    faster = [x for x in spr if x["latency_ms_per_token_reps"] and bsd["latency_ms_per_token_reps"]
              and max(x["latency_ms_per_token_reps"]) < min(bsd["latency_ms_per_token_reps"])]
    fast_lossless = [x for x in lossless if x in faster]
    head = (f"Best SD: {bsd['variant']} at {bsd['speedup_vs_ar']:.2f}x AR "
            f"({bsd['target_calls_per_token']:.3f} target calls/token). \"Faster\" = slower in no timing rep. ")
    if fast_lossless:
        b = min(fast_lossless, key=lambda x: x["latency_ms_per_token"])
        return head + "The claim HOLDS on this pair: " + describe(b) + "."
    if faster:
        b = min(faster, key=lambda x: x["latency_ms_per_token"])
        out = head + ("The claim is REFUTED on this pair at no measurable quality cost: every SPRINTER setting "
                      "without a measurable cost is slower than the best SD")
        if lossless:
            best_l = min(lossless, key=lambda x: x["latency_ms_per_token"])
            out += f" (fastest such: {describe(best_l)})"
        return out + ("; the only faster settings buy speed with quality, fastest: " + describe(b) + ".")
    return head + ("The claim is REFUTED on this pair: no SPRINTER setting is faster than the best SD in every "
                   "timing rep.")


def write_md(path, doc):
    s = doc["settings"]
    lines = [f"# Decoding-method benchmark ({doc.get('pair', '?')}, temperature {s['temperature']:g})", "",
             f"Generated {doc['generated']} by `make -f Makefile.bench decode` (bench/bench_decode.py); "
             f"git {doc.get('git', '?')}.", "",
             f"Machine: {doc['machine'].get('cores')} cores, {doc['machine'].get('cpu_model')}; load average at "
             f"start {doc['machine'].get('loadavg_at_start')}; engine threads {s['threads']}.", "",
             f"One `sprinter sweep` (one process, methods one after another on warm models) over {s['prompts']} "
             f"prompts of `{os.path.relpath(s['data'], ROOT)}` (after the verifier's {s['verifier_prompts']} training "
             f"prompts), {s['max_new']} new tokens each, temperature {s['temperature']}, seed {s['seed']}; then "
             f"`sprinter score`. The sweep is timed {len(doc['rows'][0]['latency_ms_per_token_reps']) if doc['rows'] else 0} times (same runs, same outputs); latency = "
             "decode wall time / tokens summed over prompts, median over the reps, [spread] = (max - min) / median "
             "(the audit that measures eta is excluded). FLOPs = forward FLOPs counted by the decoder (draft + target + verifier). Quality "
             "cost = target log-likelihood per token of the output minus AR's on the same prompt (nats/token; "
             "mean and 95% t interval over prompts). Exact methods should be 0 within the interval.", "",
             "Acceptance (records/metrics.h, from `sprinter summary --tsv`): tok/call = tokens per target call incl. "
             "the bonus (Spec-Bench's mean accepted tokens); alpha = accepted share of the draft tokens the target "
             "checked, Wilson 95%; acc/drafted = accepted / drafted (not an acceptance rate). Model (sd): "
             "predicted speedup = E / (gamma c + v), E = 1 + alpha + ... + alpha^gamma, c and v the run's draft "
             "forward and target call in AR tokens.", "",
             "| variant | ms / token (median of reps) [spread] | speedup vs AR (model) | vs SD g5 | vs best SD "
             "| target calls / token | tok/call | accept rate alpha [95%] | acc/drafted "
             "| FLOPs / token | quality cost (nats/token) [95%] | eta_FP / eta_TP |",
             "|---|---:|---:|---:|---:|---:|---:|---|---:|---:|---|---|"]
    for r in doc["rows"]:
        ci = r["quality_delta_ci95"]
        q = fmt(r["quality_delta_logprob"], "{:+.3f}") + (f" [{ci[0]:+.3f}, {ci[1]:+.3f}]" if ci else "")
        eta = (f"{fmt(r['eta_fp'], '{:.3f}')} / {fmt(r['eta_tp'], '{:.3f}')}"
               if r["eta_fp"] is not None or r["eta_tp"] is not None else "–")
        spread = f" [{100 * r['latency_spread']:.0f}%]" if r.get("latency_spread") is not None else ""
        model = f" ({r['model']['predicted_speedup_vs_ar']:.2f}x)" if r.get("model") else ""
        ci_a = r.get("accept_rate_ci95")
        alpha = (fmt(r.get("accept_rate_alpha"), "{:.3f}") + (f" [{ci_a[0]:.3f}, {ci_a[1]:.3f}]" if ci_a else ""))
        lines.append(f"| {r['variant']} | {fmt(r['latency_ms_per_token'], '{:.3f}')}{spread} | {fmt(r['speedup_vs_ar'])}x"
                     f"{model} | {fmt(r['speedup_vs_sd_g5'])}x | {fmt(r['speedup_vs_best_sd'])}x | "
                     f"{fmt(r['target_calls_per_token'], '{:.3f}')} | {fmt(r.get('tokens_per_call'))} | {alpha} | "
                     f"{fmt(r.get('accepted_per_drafted'), '{:.3f}')} | "
                     f"{fmt(r['flops_per_token'], '{:.3g}')} | {q} | {eta} |")
    lines += ["", "**Verdict.** " + doc["verdict"], ""]
    if doc["notes"]:
        lines += ["Notes:", ""] + [f"- {n}" for n in doc["notes"]] + [""]
    with open(path, "w") as f:
        f.write("\n".join(lines))


def machine_facts():
    cpu = "?"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return {"cores": os.cpu_count(), "cpu_model": cpu, "loadavg_at_start": [round(x, 2) for x in os.getloadavg()],
            "platform": platform.platform(), "env": {k: v for k, v in os.environ.items() if k.startswith("OPENBLAS")}}


def main():
    a = parse_args()
    os.makedirs(a.out_dir, exist_ok=True)
    log = os.path.join(a.out_dir, f"{a.tag}.log")
    open(log, "w").close()
    doc = {"schema": "sprinter-bench-decode/3",
           "generated": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "settings": {k: getattr(a, k) for k in ("prompts", "max_new", "threads", "seed", "temperature", "gammas",
                                                    "taus", "lam", "p_min", "alpha", "verifier_prompts", "data",
                                                    "methods", "draft", "target")},
           "pair": pair_name(a.draft, a.target),
           "machine": machine_facts(), "rows": [], "notes": []}
    try:
        doc["git"] = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short=12", "HEAD"], capture_output=True,
                                    text=True).stdout.strip()
    except OSError:
        pass
    missing = [p for p in (os.path.join(a.draft, "model.safetensors"), os.path.join(a.target, "model.safetensors"),
                           a.data) if not os.path.exists(p)]
    if missing:
        doc["notes"].append("skipped: missing " + ", ".join(missing) + " (make models datasets)")
        doc["verdict"] = "not measured"
        with open(os.path.join(a.out_dir, f"{a.tag}.json"), "w") as f:
            json.dump(doc, f, indent=1)
        write_md(os.path.join(a.out_dir, f"{a.tag}.md"), doc)
        print("bench_decode: " + doc["notes"][0])
        return 0
    sweep_dir = os.path.join(a.out_dir, f"{a.tag}_sweep")
    rep_dirs = [sweep_dir] + [os.path.join(a.out_dir, f"{a.tag}_sweep_rep{r}") for r in range(2, a.reps + 1)]
    if a.fresh:
        for d in rep_dirs:
            if os.path.isdir(d):
                shutil.rmtree(d)
    spec = os.path.join(a.out_dir, f"{a.tag}.ini")
    write_spec(a, spec)
    t0 = time.time()
    for d in rep_dirs:  # rep 1 trains the verifier; the others reuse its cache
        rc, out = run([a.sprinter, "sweep", spec, "--out", d, "--jobs", "1", "--threads", str(a.threads), "--quiet",
                       "--verifier-cache", os.path.join(sweep_dir, "verifiers")], log)
        if rc not in (0, 3):
            sys.stderr.write(out[-3000:])
            raise SystemExit(f"bench_decode: sprinter sweep failed (exit {rc}); see {log}")
        if rc == 3 and d == sweep_dir:
            doc["notes"].append("some runs failed (see the log); they are left out of the table")
    rc, out = run([a.sprinter, "score", sweep_dir, "--quiet"], log)
    if rc != 0:
        raise SystemExit(f"bench_decode: sprinter score failed (exit {rc}); see {log}")
    doc["wall_s"] = time.time() - t0
    rc, out = run([a.sprinter, "sweep", spec, "--out", sweep_dir, "--dry-run"], log)
    prefixes = [ln.split()[1] for ln in out.splitlines()[1:] if len(ln.split()) > 1 and ln.split()[0].isdigit()]
    if rc != 0 or not prefixes:
        raise SystemExit(f"bench_decode: sprinter sweep --dry-run failed (exit {rc}); see {log}")
    runs, per_prompt, failed = collect(os.path.join(sweep_dir, "runs.sqlite"), prefixes)
    # timing of every rep: t_total per run; the outputs must be the same run for run
    rep_times, mismatch = {r["run_hash"]: [] for r in runs}, 0
    for d in rep_dirs:
        con = sqlite3.connect(os.path.join(d, "runs.sqlite"))
        for h, t, tok in con.execute("SELECT p.run_hash, SUM(p.t_total), SUM(p.tokens) FROM prompts p JOIN runs r "
                                     "ON r.run_hash = p.run_hash WHERE r.status = 'done' GROUP BY p.run_hash"):
            if h in rep_times:
                rep_times[h].append((t, tok))
        con.close()
    for r in runs:
        toks = {tok for _, tok in rep_times[r["run_hash"]]}
        mismatch += len(toks) > 1
    if mismatch:
        doc["notes"].append(f"{mismatch} runs emitted different token counts across reps (nondeterminism?)")
    doc["rows"], doc["best_sd"] = aggregate(runs, per_prompt, rep_times, acceptance_rows(a.sprinter, sweep_dir, log))
    doc["failed"] = failed
    doc["verdict"] = verdict(doc["rows"], doc["best_sd"])
    doc["notes"].append(f"A rerun reuses the finished sweeps in {os.path.relpath(sweep_dir, ROOT)}* (resume); "
                        "`make -f Makefile.bench decode FRESH=1` measures again from scratch.")
    doc["notes"].append("The machine is a shared VM: the same sweep timed twice in a row differed by up to 30% "
                        "per variant (see [spread]); differences smaller than the spread are not findings.")
    with open(os.path.join(a.out_dir, f"{a.tag}.json"), "w") as f:
        json.dump(doc, f, indent=1)
    write_md(os.path.join(a.out_dir, f"{a.tag}.md"), doc)
    with open(os.path.join(a.out_dir, f"{a.tag}.md")) as f:
        print(f.read())
    return 0


if __name__ == "__main__":
    sys.exit(main())
