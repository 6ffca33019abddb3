#!/usr/bin/env python3
"""Batched sweeps (issue 29): tokens per second of whole sweeps at [decode] batch 1 and B, paired, and
forward_batch's throughput over B = 1, 2, 4, 8, 16 against the roofline (bench_batch).

  /usr/bin/python3 bench/bench_batch.py --build build-bench [--reps 3] [--batch 8] [--prompts 16]

Sweeps (one thread, the verifier trained once into a cache before any timed sweep, so the timed
sweeps decode only):
  regime     the regime pair (data/models/regime), paper_sound's methods (ar, draft, sd, sprinter,
             specdecpp, pmin, bild), temperature 1, 20 new tokens
  gpt2-124m  a random GPT-2 124M target (the gpt2 preset's shape with a context of 96, GPT2_CTX, seed
             1; vocabulary 50257 from the GPT-2 BPE fixture padded with tokens no merge makes) with a
             random 2-layer GPT-2 draft of the same vocabulary; ar and sd (gamma 4), T = 1, 16 new tokens
Each repetition sweeps every setting once at batch 1, once at batch B and once at batch B with
--no-prefill-memo (every run runs its prompts' prefills, as batch 1 does) into fresh directories, in
rotating order (paired against the same machine state); tokens/s = the sweep's tokens over the
sweep command's wall time (process start, model loading and the database included). The ratio is
taken within each repetition; median [min, max] over repetitions. The two sweeps' runs must have the
same hashes and tokens (the sweep_batch test checks them column by column). Writes batch.json and
batch.md in --out-dir; every figure records the load average it was measured at.
"""
import argparse
import json
import os
import resource
import shutil
import sqlite3
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURE_TOK = os.path.join(ROOT, "tests", "tokenizer", "fixtures", "gpt2")
DATA = os.path.join(ROOT, "data", "datasets", "encyclopedic.jsonl")
# The gpt2-124m pair's context: the fixture tokenizer has 268 tokens (mostly bytes), so the dataset's
# prompts are ~4x longer in its tokens than in GPT-2's BPE; a context of 96 keeps each prompt's last
# 96 - 16 - gamma - 1 = 75 tokens, as long as a GPT-2 BPE prompt of these texts. The shape is gpt2's
# (124M) but for 928 rows fewer of the position table (2.9 MB of 498 MB).
GPT2_CTX = 96

SPEC = """[sweep]
name = {name}
methods = {methods}

[models]
draft = {draft}
target = {target}

[data]
datasets = {data}
n_prompts = {prompts}
offset = 500

[decode]
max_new_tokens = {max_new}
temperature = 1.0
audit = {audit}

[grid]
seeds = 1
lambda = 1.2
tau = 0.5
gamma = {gamma}
max_run = 0
alpha = 0.5
p_min = 0.5

[verifier]
data = {data}
n_prompts = 100
max_new = 20
seed = 0
"""


def load1():
    return os.getloadavg()[0]


def gpt2_tokenizer(out, vocab_size):
    """The GPT-2 BPE fixture (268 tokens + <|endoftext|>) padded to vocab_size: tokens no merge makes,
    <|endoftext|> last (id vocab_size - 1, GPT-2's eos)."""
    v = json.load(open(os.path.join(FIXTURE_TOK, "vocab.json")))
    eot = v.pop("<|endoftext|>")
    assert eot == len(v)
    for i in range(len(v), vocab_size - 1):
        v["<|pad%d|>" % i] = i
    v["<|endoftext|>"] = vocab_size - 1
    with open(os.path.join(out, "vocab.json"), "w") as f:
        json.dump(v, f)
    shutil.copy(os.path.join(FIXTURE_TOK, "merges.txt"), out)


def ensure_gpt2_pair(sprinter, models):
    target, draft = os.path.join(models, "gpt2-124m-ctx%d" % GPT2_CTX), os.path.join(models, "gpt2-draft-50257")
    if not os.path.exists(os.path.join(target, "vocab.json")):
        shutil.rmtree(target, ignore_errors=True)
        cfg = os.path.join(models, "gpt2-124m-ctx.json")
        with open(cfg, "w") as f:  # the preset's shape but n_positions (see GPT2_CTX)
            json.dump({"model_type": "gpt2", "vocab_size": 50257, "n_embd": 768, "n_layer": 12, "n_head": 12,
                       "n_positions": GPT2_CTX, "bos_token_id": 50256, "eos_token_id": 50256}, f)
        subprocess.run([sprinter, "init-random", "--arch", "gpt2", "--config", cfg, "--seed", "1", "--out", target],
                       check=True, stdout=subprocess.DEVNULL)
        gpt2_tokenizer(target, 50257)
    if not os.path.exists(os.path.join(draft, "vocab.json")):
        shutil.rmtree(draft, ignore_errors=True)
        cfg = os.path.join(models, "gpt2-draft-50257.json")
        with open(cfg, "w") as f:
            json.dump({"model_type": "gpt2", "vocab_size": 50257, "n_embd": 256, "n_layer": 2, "n_head": 4,
                       "n_positions": GPT2_CTX, "bos_token_id": 50256, "eos_token_id": 50256}, f)
        subprocess.run([sprinter, "init-random", "--arch", "gpt2", "--config", cfg, "--seed", "2", "--out", draft],
                       check=True, stdout=subprocess.DEVNULL)
        gpt2_tokenizer(draft, 50257)
    return draft, target


def sweep(sprinter, spec, out, batch, cache, memo=True):
    shutil.rmtree(out, ignore_errors=True)
    la = load1()
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.time()
    p = subprocess.run([sprinter, "sweep", spec, "--out", out, "--batch", str(batch), "--quiet", "--threads", "1",
                        "--verifier-cache", cache] + ([] if memo else ["--no-prefill-memo"]),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    secs = time.time() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    if p.returncode != 0:
        raise SystemExit("bench_batch: sweep %s --batch %d failed:\n%s" % (spec, batch, p.stderr[-2000:]))
    con = sqlite3.connect(os.path.join(out, "runs.sqlite"))
    runs = dict(con.execute("SELECT r.run_hash, SUM(p.tokens) FROM runs r JOIN prompts p ON p.run_hash = r.run_hash "
                            "GROUP BY r.run_hash").fetchall())
    tpsb = [x for (x,) in con.execute("SELECT tokens_per_s_batched FROM runs")]
    # per method: the decode's own throughput, audits included on both sides (batch 1: tokens over the
    # prompts' t_total + t_audit; batched: tokens_per_s_batched, the wall time of its batches, whose
    # audits cannot be told apart). Leaving the audit out at batch 1 only made an audited method
    # (SPRINTER) look slower batched than alone.
    per_method = {m: (b if b is not None else (tok / t if t else None)) for m, tok, t, b in con.execute(
        "SELECT r.method, SUM(p.tokens), SUM(p.t_total + p.t_audit), r.tokens_per_s_batched FROM runs r "
        "JOIN prompts p ON p.run_hash = r.run_hash GROUP BY r.run_hash")}
    prompt_tokens = con.execute("SELECT AVG(n_prompt_tokens) FROM prompts").fetchone()[0]
    con.close()
    return {"seconds": secs, "cpu_seconds": cpu, "tokens": sum(runs.values()), "runs": runs, "load1_before": la,
            "tokens_per_s": sum(runs.values()) / secs, "tokens_per_cpu_s": sum(runs.values()) / cpu,
            "tokens_per_s_batched_runs": tpsb, "decode_tokens_per_s_by_method": per_method,
            "mean_prompt_tokens": prompt_tokens}


def summary(xs):
    return {"median": statistics.median(xs), "min": min(xs), "max": max(xs), "n": len(xs)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build-bench"))
    ap.add_argument("--out-dir", default=os.path.join(ROOT, "results", "bench"))
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--prompts", type=int, default=16)
    ap.add_argument("--only", default="", help="comma-separated: regime, gpt2-124m, forward")
    a = ap.parse_args()
    sprinter = os.path.join(a.build, "sprinter")
    work = os.path.join(a.out_dir, "batch")
    models = os.path.join(a.out_dir, "models")
    os.makedirs(work, exist_ok=True)
    os.makedirs(models, exist_ok=True)
    only = set(a.only.split(",")) if a.only else {"regime", "gpt2-124m", "forward"}
    regime = os.path.join(ROOT, "data", "models", "regime")
    settings = []
    if "regime" in only:
        settings.append(("regime", os.path.join(regime, "draft"), os.path.join(regime, "target"),
                         "ar, draft, sd, sprinter, specdecpp, pmin, bild", 20, 5, "true"))
    if "gpt2-124m" in only:
        d, t = ensure_gpt2_pair(sprinter, models)
        settings.append(("gpt2-124m", d, t, "ar, sd", 16, 4, "false"))
    result = {"settings": {"reps": a.reps, "batch": a.batch, "prompts": a.prompts, "threads": 1},
              "cores": os.cpu_count(), "sweeps": {}, "forward": {}}
    for name, draft, target, methods, max_new, gamma, audit in settings:
        spec = os.path.join(work, name + ".ini")
        with open(spec, "w") as f:
            f.write(SPEC.format(name="batch-" + name, methods=methods, draft=draft, target=target, data=DATA,
                                prompts=a.prompts, max_new=max_new, gamma=gamma, audit=audit))
        cache = os.path.join(work, name + "-verifiers")
        sweep(sprinter, spec, os.path.join(work, name + "-warm"), 1, cache)  # trains the verifier into the cache
        reps = []
        # three sweeps per repetition, in rotating order: batch 1, batch B, batch B without the prefill memo
        # ("B-nomemo": every prompt's prefill run by every run, as batch 1 does)
        variants = {"1": (1, True), "B": (a.batch, True), "B-nomemo": (a.batch, False)}
        for r in range(a.reps):
            keys = list(variants)
            order = keys[r % 3:] + keys[:r % 3]
            got = {k: sweep(sprinter, spec, os.path.join(work, "%s-%s" % (name, k)), variants[k][0], cache,
                            variants[k][1]) for k in order}
            for k in ("B", "B-nomemo"):
                if got[k]["runs"] != got["1"]["runs"]:
                    raise SystemExit("bench_batch: %s: %s and batch 1 runs differ" % (name, k))
            reps.append({"batch1": {k: v for k, v in got["1"].items() if k != "runs"},
                         "batchB": {k: v for k, v in got["B"].items() if k != "runs"},
                         "batchB_nomemo": {k: v for k, v in got["B-nomemo"].items() if k != "runs"},
                         "ratio": got["B"]["tokens_per_s"] / got["1"]["tokens_per_s"],
                         "ratio_nomemo": got["B-nomemo"]["tokens_per_s"] / got["1"]["tokens_per_s"],
                         "cpu_ratio": got["B"]["tokens_per_cpu_s"] / got["1"]["tokens_per_cpu_s"], "order": order})
            print("%s rep %d: batch 1 %.1f tok/s (%.1f s, %.1f cpu s), batch %d %.1f tok/s (%.1f s, %.1f cpu s): %.2fx, "
                  "per cpu s %.2fx; without the prefill memo %.1f tok/s (%.1f s): %.2fx  (load %.1f)" % (
                      name, r, got["1"]["tokens_per_s"], got["1"]["seconds"], got["1"]["cpu_seconds"], a.batch,
                      got["B"]["tokens_per_s"], got["B"]["seconds"], got["B"]["cpu_seconds"],
                      reps[-1]["ratio"], reps[-1]["cpu_ratio"], got["B-nomemo"]["tokens_per_s"],
                      got["B-nomemo"]["seconds"], reps[-1]["ratio_nomemo"], load1()), flush=True)
        result["sweeps"][name] = {"methods": methods, "max_new": max_new, "reps": reps,
                                  "ratio": summary([x["ratio"] for x in reps]),
                                  "ratio_nomemo": summary([x["ratio_nomemo"] for x in reps]),
                                  "tokens_per_s_batchB_nomemo": summary([x["batchB_nomemo"]["tokens_per_s"] for x in reps]),
                                  "cpu_ratio": summary([x["cpu_ratio"] for x in reps]),
                                  "tokens_per_s_batch1": summary([x["batch1"]["tokens_per_s"] for x in reps]),
                                  "tokens_per_s_batchB": summary([x["batchB"]["tokens_per_s"] for x in reps]),
                                  "tokens": reps[0]["batch1"]["tokens"],
                                  "mean_prompt_tokens": reps[0]["batch1"]["mean_prompt_tokens"],
                                  "decode_ratio_by_method": {
                                      m: summary([x["batchB"]["decode_tokens_per_s_by_method"][m] /
                                                  x["batch1"]["decode_tokens_per_s_by_method"][m] for x in reps])
                                      for m in reps[0]["batch1"]["decode_tokens_per_s_by_method"]}}
    if "forward" in only:
        d, t = ensure_gpt2_pair(sprinter, models)
        for name, mdir in (("gpt2-124m", t), ("regime-target", os.path.join(regime, "target")),
                           ("regime-draft", os.path.join(regime, "draft"))):
            out = os.path.join(work, "forward_%s.json" % name)
            la = load1()
            subprocess.run([os.path.join(a.build, "bench_batch"), "--model", mdir, "--name", name, "--threads", "1",
                            "--reps", str(max(3, a.reps)), "--out", out], check=True)
            result["forward"][name] = json.load(open(out))
            result["forward"][name]["load1_before"] = la
    with open(os.path.join(a.out_dir, "batch.json"), "w") as f:
        json.dump(result, f, indent=1)
    with open(os.path.join(a.out_dir, "batch.md"), "w") as f:
        f.write("# Batched sweeps (issue 29)\n\n1 thread, %d cores; load average (1 min) beside each figure.\n\n"
                % (os.cpu_count() or 0))
        if result["sweeps"]:
            f.write("## Whole sweeps, batch %d vs 1 (paired, %d repetitions)\n\n" % (a.batch, a.reps))
            f.write("| setting | methods | tokens | batch 1 tok/s (median [min, max]) | batch %d tok/s | ratio "
                    "median [min, max] | ratio of tokens per CPU second | batch %d without the prefill memo: tok/s | "
                    "its ratio | load 1m |\n|---|---|---|---|---|---|---|---|---|---|\n" % (a.batch, a.batch))
            for name, s in result["sweeps"].items():
                b1, bb, r, c = s["tokens_per_s_batch1"], s["tokens_per_s_batchB"], s["ratio"], s["cpu_ratio"]
                bn, rn = s["tokens_per_s_batchB_nomemo"], s["ratio_nomemo"]
                loads = [x[k]["load1_before"] for x in s["reps"] for k in ("batch1", "batchB", "batchB_nomemo")]
                f.write("| %s | %s | %d | %.1f [%.1f, %.1f] | %.1f [%.1f, %.1f] | %.2fx [%.2f, %.2f] | %.2fx [%.2f, %.2f] "
                        "| %.1f [%.1f, %.1f] | %.2fx [%.2f, %.2f] | %.1f-%.1f |\n" % (
                            name, s["methods"], s["tokens"], b1["median"], b1["min"], b1["max"], bb["median"], bb["min"],
                            bb["max"], r["median"], r["min"], r["max"], c["median"], c["min"], c["max"], bn["median"],
                            bn["min"], bn["max"], rn["median"], rn["min"], rn["max"], min(loads), max(loads)))
            f.write("\nPer method, the decode's own throughput, audits included on both sides (batch 1: tokens / the "
                    "prompts' t_total + t_audit; batch %d: runs.tokens_per_s_batched, the batches' wall time), ratio median "
                    "[min, max]:\n\n| setting | mean prompt tokens | method | ratio |\n|---|---|---|---|\n" % a.batch)
            for name, s in result["sweeps"].items():
                for m, r in sorted(s["decode_ratio_by_method"].items()):
                    f.write("| %s | %.1f | %s | %.2fx [%.2f, %.2f] |\n" % (name, s["mean_prompt_tokens"], m, r["median"],
                                                                         r["min"], r["max"]))
        if result["forward"]:
            f.write("\n## forward_batch: B one-row requests per step (bench_batch), against the roofline\n\n"
                    "roofline = B x bandwidth / weight bytes (a step streams the weights once).\n\n"
                    "| model | weight MB | bandwidth GB/s | B | tok/s median [min, max] | roofline tok/s | fraction | "
                    "x B=1 |\n|---|---|---|---|---|---|---|---|\n")
            for name, fw in result["forward"].items():
                base = fw["batches"][0]["tokens_per_s_median"]
                for row in fw["batches"]:
                    f.write("| %s | %.1f | %.1f | %d | %.1f [%.1f, %.1f] | %.1f | %.2f | %.2f |\n" % (
                        name, fw["weight_bytes"] / 1e6, fw["bandwidth_gbs"], row["batch"], row["tokens_per_s_median"],
                        row["tokens_per_s_min"], row["tokens_per_s_max"], row["roofline_tokens_per_s"],
                        row["roofline_fraction"], row["tokens_per_s_median"] / base))
    print(open(os.path.join(a.out_dir, "batch.md")).read())


if __name__ == "__main__":
    main()
