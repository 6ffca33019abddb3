#!/usr/bin/env python3
"""A sweep's results do not depend on [decode] batch (issue 29): prompts decoded in lock step with
their forward passes batched (decoder_run_batch, forward_batch) give the same runs as one prompt at a
time.

For every method of engine/decode/methods.h that a spec takes (collect is verifier collection, not a
sweep method), on random-init GPT-2, GPT-Neo and Llama pairs (tiny, GPT-2's BPE fixture tokenizer)
and on the committed regime pair, at temperature 0 and 1, `sprinter sweep --batch 1` and
`--batch 8` (9 prompts: a group of 8 in lock step, then one alone) must give identical sweep_dump output: every
runs and prompts row (run hashes and canonical configuration text included) and every token-log
dataset, floats as bit patterns; only wall-clock columns (t_*, timestamps) and how the run was
executed (runs.exec_batch, tokens_per_s_batched) are left out. The batched runs must say they were
batched (exec_batch 8, a positive tokens_per_s_batched, prompt timings 0: never a latency) and the
unbatched ones not (exec_batch 1, NULL). At T = 1, batch 8 with --no-prefill-memo (every prefill
run, none loaded from an earlier run of the process) gives the same dump too. A control shows the
dump sees content: T = 0 and T = 1 dumps differ. Deterministic (fixed seeds and prompts): no false failures.
"""
import argparse
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sweep_fixture as fx  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(HERE)


def sweep_methods():
    """Every method name of SP_METHODS but collect (not a sweep method)."""
    with open(os.path.join(SOURCE, "engine", "decode", "methods.h")) as f:
        names = re.findall(r'X\(\w+,\s*"([a-z-]+)"', f.read())
    return [n for n in names if n != "collect"]


SPEC = """[sweep]
name = {name}
methods = {methods}

[models]
draft = {draft}
target = {target}

[data]
datasets = {data}
n_prompts = 9
offset = 20

[decode]
max_new_tokens = 8
temperature = {temp}

[grid]
seeds = 1
lambda = 1.2
tau = 0.5
gamma = 4
max_run = 0
eta_fp = 0.2
eta_tp = 0.9
alpha = 0.5
p_min = 0.5

[verifier]
data = {data}
n_prompts = 8
max_new = 6
seed = 3
"""


def init_pair(sprinter, work, arch):
    """A tiny random draft/target pair of arch with the GPT-2 BPE fixture tokenizer (vocab 269)."""
    dims = {"target": (32, 2, 4, 1), "draft": (16, 2, 2, 2)}
    for name, (d, layers, heads, seed) in dims.items():
        if arch == "gpt2":
            cfg = {"model_type": "gpt2", "vocab_size": fx.VOCAB, "n_embd": d, "n_layer": layers, "n_head": heads,
                   "n_positions": 128}
        elif arch == "gpt-neo":
            cfg = {"model_type": "gpt_neo", "vocab_size": fx.VOCAB, "hidden_size": d, "num_layers": layers,
                   "num_heads": heads, "max_position_embeddings": 128, "window_size": 8,
                   "attention_types": [[["global", "local"], layers // 2]]}
        else:
            cfg = {"model_type": "llama", "vocab_size": fx.VOCAB, "hidden_size": d, "intermediate_size": 3 * d,
                   "num_hidden_layers": layers, "num_attention_heads": heads, "num_key_value_heads": max(1, heads // 2),
                   "max_position_embeddings": 128}
        cfg.update({"initializer_range": 0.1, "bos_token_id": fx.VOCAB - 1, "eos_token_id": fx.VOCAB - 1})
        cpath = os.path.join(work, "%s-%s.json" % (arch, name))
        with open(cpath, "w") as f:
            json.dump(cfg, f)
        out = os.path.join(work, arch, name)
        shutil.rmtree(out, ignore_errors=True)
        subprocess.run([sprinter, "init-random", "--arch", arch, "--config", cpath, "--seed", str(seed), "--out", out],
                       check=True, stdout=subprocess.DEVNULL)
        for fn in ("vocab.json", "merges.txt"):
            shutil.copy(os.path.join(fx.TOKENIZER, fn), out)
    return os.path.join(work, arch, "draft"), os.path.join(work, arch, "target")


def sweep(sprinter, spec, out, batch, cache, extra=()):
    shutil.rmtree(out, ignore_errors=True)
    t0 = time.time()
    p = subprocess.run([sprinter, "sweep", spec, "--out", out, "--batch", str(batch), "--quiet",
                        "--verifier-cache", cache] + list(extra), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True)
    return p, time.time() - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sprinter", required=True)
    ap.add_argument("--dump", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--regime", default=os.path.join(SOURCE, "data", "models", "regime"))
    ap.add_argument("--pairs", default="gpt2,gpt-neo,llama,regime",
                    help="which pairs (CTest runs the tiny ones and the regime pair as two tests, in parallel)")
    a = ap.parse_args()
    wanted = a.pairs.split(",")
    t = fx.Checks("sweep_batch")
    shutil.rmtree(a.work, ignore_errors=True)
    os.makedirs(a.work)
    fx.make_models(a.sprinter, a.work)  # data.jsonl (and the GPT-2 fixture pair, unused)
    data = os.path.join(a.work, "data.jsonl")
    methods = sweep_methods()
    t.check(len(methods) >= 13, "methods.h lists the sweep methods: %s" % ", ".join(methods))
    pairs = [(arch,) + init_pair(a.sprinter, a.work, arch) for arch in ("gpt2", "gpt-neo", "llama") if arch in wanted]
    if "regime" not in wanted:
        pass
    elif os.path.isdir(os.path.join(a.regime, "target")):
        pairs.append(("regime", os.path.join(a.regime, "draft"), os.path.join(a.regime, "target")))
    else:
        t.check(False, "the regime pair is at %s" % a.regime)
    for name, draft, target in pairs:
        dumps = {}
        for temp in ("0", "1"):
            tag = "%s-t%s" % (name, temp)
            spec = os.path.join(a.work, tag + ".ini")
            with open(spec, "w") as f:
                f.write(SPEC.format(name=tag, methods=", ".join(methods), draft=draft, target=target, data=data,
                                    temp=temp))
            cache = os.path.join(a.work, tag + "-verifiers")
            outs, secs = {}, {}
            for batch in (1, 8):
                out = os.path.join(a.work, "%s-b%d" % (tag, batch))
                p, secs[batch] = sweep(a.sprinter, spec, out, batch, cache)
                if not t.check(p.returncode == 0, "%s batch %d: sweep exit 0 (%d: %s)" % (tag, batch, p.returncode,
                                                                                          p.stderr.strip()[-400:])):
                    continue
                rc, text, err = fx.dump(a.dump, out)
                t.check(rc == 0, "%s batch %d: sweep_dump consistent (%s)" % (tag, batch, err.strip()[-300:]))
                outs[batch] = text
                con = sqlite3.connect(os.path.join(out, "runs.sqlite"))
                rows = con.execute("SELECT method, exec_batch, tokens_per_s_batched FROM runs").fetchall()
                t_sum = con.execute("SELECT SUM(t_total) FROM prompts").fetchone()[0]
                n_done = con.execute("SELECT COUNT(*) FROM runs WHERE status = 'done'").fetchone()[0]
                con.close()
                t.check(n_done == len(methods), "%s batch %d: %d runs done, one per method (%d)" % (tag, batch, n_done,
                                                                                                    len(methods)))
                if batch == 1:
                    t.check(all(r[1] == 1 and r[2] is None for r in rows),
                            "%s batch 1: exec_batch 1, no tokens_per_s_batched" % tag)
                    t.check(t_sum > 0, "%s batch 1: prompt timings recorded (sum t_total %.4g s)" % (tag, t_sum))
                else:
                    t.check(all(r[1] == 8 and r[2] is not None and r[2] > 0 for r in rows),
                            "%s batch 8: exec_batch 8 and tokens_per_s_batched > 0 in every run: %s" % (tag, rows[:2]))
                    t.check(t_sum == 0, "%s batch 8: no prompt timings (sum t_total %s): never a latency" % (tag, t_sum))
            if 1 in outs and 8 in outs:
                same = outs[1] == outs[8]
                t.check(same, "%s: batch 8 == batch 1, every row and token-log column (%d dump lines)%s" % (
                    tag, outs[1].count("\n"), "" if same else ": " + fx.first_difference(outs[1], outs[8])))
                dumps[temp] = outs[1]
            if temp == "1" and 8 in outs:  # the prefill memo only saves work: without it, the same dump
                out = os.path.join(a.work, "%s-b8-nomemo" % tag)
                p, _ = sweep(a.sprinter, spec, out, 8, cache, ["--no-prefill-memo"])
                if t.check(p.returncode == 0, "%s batch 8 --no-prefill-memo: sweep exit 0 (%s)" % (
                        tag, p.stderr.strip()[-400:])):
                    rc, text, err = fx.dump(a.dump, out)
                    same = rc == 0 and text == outs[8]
                    t.check(same, "%s: batch 8 without the prefill memo == with it (%d dump lines)%s" % (
                        tag, text.count("\n"), "" if same else ": " + (err.strip()[-300:] or
                                                                        fx.first_difference(outs[8], text))))
            print("%s: sweep %.1f s at batch 1, %.1f s at batch 8" % (tag, secs.get(1, 0), secs.get(8, 0)), flush=True)
        if "0" in dumps and "1" in dumps:
            t.check(dumps["0"] != dumps["1"], "%s: control: the T = 0 and T = 1 dumps differ" % name)
    # multi-turn conversations (Spec-Bench's two turns; a second turn is encoded after the run's answer to
    # the first): batch 8 decodes first turns together, then second turns, and logs in prompt order
    if pairs and pairs[0][0] != "regime":  # the tiny pairs' test (the regime one is the longer)
        name, draft, target = pairs[0]
        tag = "%s-turns" % name
        spec = os.path.join(a.work, tag + ".ini")
        text = SPEC.format(name=tag, methods="ar, sd, sprinter", draft=draft, target=target, data=data, temp="1")
        text = text.replace("datasets = %s\nn_prompts = 9\noffset = 20" % data,
                            "datasets = %s\nformat = specbench\nn_prompts = 14\noffset = 0" %
                            os.path.join(SOURCE, "data", "datasets", "specbench.jsonl"))
        with open(spec, "w") as f:
            f.write(text)
        outs = {}
        for batch in (1, 8):
            out = os.path.join(a.work, "%s-b%d" % (tag, batch))
            p, _ = sweep(a.sprinter, spec, out, batch, os.path.join(a.work, tag + "-verifiers"))
            if t.check(p.returncode == 0, "%s batch %d: sweep exit 0 (%s)" % (tag, batch, p.stderr.strip()[-400:])):
                rc, outs[batch], err = fx.dump(a.dump, out)
                con = sqlite3.connect(os.path.join(out, "runs.sqlite"))
                turns = con.execute("SELECT COUNT(*) FROM prompts WHERE turn > 0").fetchone()[0]
                con.close()
                t.check(rc == 0 and turns >= 3 * 6, "%s batch %d: dump consistent, %d later-turn prompt rows (%s)" %
                        (tag, batch, turns, err.strip()[-200:]))
        if 1 in outs and 8 in outs:
            t.check(outs[1] == outs[8], "%s: batch 8 == batch 1 over two-turn conversations (%d dump lines)%s" % (
                tag, outs[1].count("\n"), "" if outs[1] == outs[8] else ": " + fx.first_difference(outs[1], outs[8])))
    t.finish()


if __name__ == "__main__":
    main()
