#!/usr/bin/python3
"""The engine beside llama.cpp on the same weights (issue 17): `sprinter export-gguf` writes each model
as GGUF, llama.cpp runs it through npm node-llama-cpp 3.21.1 (prebuilt CPU backend, installed into
OUT/npm on first use), and in the same run, alternating rep by rep, the engine decodes the same
prompt with the same thread count.

Rows (median of --reps paired reps, [min, max] beside):
  decode   greedy batch-1 decoding of --n tokens after a 16-token prompt, tokens/s from the first to
           the last generated token (prefill excluded), for gpt2-124m shape (results/bench/models,
           made by `make -f Makefile.bench forward`), the regime target and draft; f32 and bf16 (a
           bf16 copy of the checkpoint, rounded to nearest even, for both engines); 1 and 2 threads.
           llama.cpp keeps its default F16 KV cache (what its users run).
  sd       the regime pair: AR and speculative decoding (engine: sd gamma G; llama.cpp: its draft-model
           token predictor with G tokens per round), temperature 0 and 1; speed-up = SD tok/s / AR tok/s
           of the same engine.
Output: OUT/llamacpp.json and OUT/llamacpp.md.
usage: bench_llamacpp.py [--sprinter build-bench/sprinter] [--out-dir results/bench] [--reps 3]
"""
import argparse
import datetime
import json
import os
import re
import shutil
import statistics
import struct
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "gguf"))
import llamacpp as lc  # noqa: E402
PROMPT = "The history of the city begins with a small settlement on the river, where traders met"


sh = lc.sh


def bf16_copy(src, dst):
    """dst: src with every F32 tensor of model.safetensors rounded to BF16 (nearest even)."""
    if os.path.exists(os.path.join(dst, "model.safetensors")):
        return dst
    os.makedirs(dst, exist_ok=True)
    for fn in os.listdir(src):
        if fn != "model.safetensors" and os.path.isfile(os.path.join(src, fn)):
            shutil.copy(os.path.join(src, fn), dst)
    with open(os.path.join(src, "model.safetensors"), "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        head = json.loads(f.read(n))
        data = f.read()
    out_head, chunks, off = {}, [], 0
    for name, e in head.items():
        if name == "__metadata__":
            out_head[name] = e
            continue
        b, t = e["data_offsets"]
        raw = data[b:t]
        if e["dtype"] == "F32":
            words = struct.unpack("<%dI" % (len(raw) // 4), raw)
            raw = struct.pack("<%dH" % len(words), *[((w + 0x7FFF + ((w >> 16) & 1)) >> 16) & 0xFFFF for w in words])
            e = dict(e, dtype="BF16")
        out_head[name] = dict(e, data_offsets=[off, off + len(raw)])
        chunks.append(raw)
        off += len(raw)
    hj = json.dumps(out_head).encode()
    hj += b" " * (-len(hj) % 8)
    with open(os.path.join(dst, "model.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(hj)) + hj + b"".join(chunks))
    return dst


def llamacpp(npm_dir, job, work):
    return lc.run(npm_dir, job, os.path.join(work, "bench_job.json"), timeout=900)["bench"]


def engine_decode(sprinter, target, draft, method, gamma, n, temperature, threads, ids):
    args = [sprinter, "decode", "--target", target, "--prompt-ids", ",".join(map(str, ids)), "--method", method,
            "--max-new", str(n),
            "--temperature", str(temperature), "--seed", "1", "--threads", str(threads)]
    if draft:
        args += ["--draft", draft, "--gamma", str(gamma)]
    r = sh(args)
    if r.returncode != 0:
        raise RuntimeError(r.stderr)
    rates = {}
    for line in r.stdout.splitlines():
        m = re.match(r"^(\w+)\s+\d+\s+([\d.]+)", line)
        if m:
            rates[m.group(1)] = float(m.group(2))
    return rates


def med(xs):
    return {"median": statistics.median(xs), "min": min(xs), "max": max(xs), "reps": xs}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sprinter", default=os.path.join(ROOT, "build-bench", "sprinter"))
    ap.add_argument("--out-dir", default=os.path.join(ROOT, "results", "bench"))
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--n", type=int, default=64)
    ap.add_argument("--gamma", type=int, default=3)
    ap.add_argument("--threads", default="1,2")
    a = ap.parse_args()
    work = os.path.join(a.out_dir, "llamacpp")
    npm_dir = os.path.join(work, "npm")
    os.makedirs(work, exist_ok=True)
    why = lc.install(npm_dir)
    if why:
        sys.exit(why)
    regime = os.path.join(ROOT, "data", "models", "regime")
    models = {"gpt2-124m": os.path.join(a.out_dir, "models", "gpt2-124m"), "regime-target": os.path.join(regime, "target"),
              "regime-draft": os.path.join(regime, "draft")}
    if not os.path.exists(os.path.join(models["gpt2-124m"], "config.json")):
        print("note: %s missing (make -f Makefile.bench forward makes it); skipped" % models["gpt2-124m"])
        del models["gpt2-124m"]
    tok_dir = os.path.join(regime, "target")
    prompt_ids = {}
    rows, t_start = [], datetime.datetime.now(datetime.timezone.utc)
    for name, d in models.items():
        for dtype in ("f32", "bf16"):
            mdir = d if dtype == "f32" else bf16_copy(d, os.path.join(work, name + "-bf16"))
            gguf = os.path.join(work, "%s-%s.gguf" % (name, dtype))
            tdir = mdir if os.path.exists(os.path.join(mdir, "vocab.json")) else tok_dir
            r = sh([a.sprinter, "export-gguf", "--model", mdir, "--out", gguf, "--dtype", dtype, "--tokenizer", tdir])
            if r.returncode != 0:
                sys.exit(r.stderr)
            llama = json.load(open(os.path.join(mdir, "config.json"))).get("model_type") == "llama"
            ids = [int(x) for x in sh([a.sprinter, "tokenize", "--model", tdir, "--text", PROMPT]).stdout.split()][:16]
            prompt_ids[name] = ([2047] if llama else []) + ids
            for th in map(int, a.threads.split(",")):
                eng, cpp = [], []
                for _ in range(a.reps):
                    eng.append(engine_decode(a.sprinter, mdir, None, "ar", 0, a.n, 0, th, prompt_ids[name])["ar"])
                    cpp.append(llamacpp(npm_dir, {"model": gguf, "threads": th, "kv": "F16",
                                                  "bench": {"prompt": prompt_ids[name], "n": a.n, "temperature": 0}},
                                        work)["tok_s"])
                rows.append({"kind": "decode", "model": name, "dtype": dtype, "threads": th, "engine_tok_s": med(eng),
                             "llamacpp_tok_s": med(cpp), "ratio": statistics.median(e / c if c > 0 else float("nan") for e, c in zip(eng, cpp))})
                print("decode %s %s t%d: engine %.1f, llama.cpp %.1f tok/s" % (name, dtype, th, rows[-1]["engine_tok_s"]["median"],
                                                                            rows[-1]["llamacpp_tok_s"]["median"]), flush=True)
    tg, dg = os.path.join(work, "regime-target-f32.gguf"), os.path.join(work, "regime-draft-f32.gguf")
    for temp in (0, 1):
        for th in map(int, a.threads.split(",")):
            eng_ar, eng_sd, cpp_ar, cpp_sd, preds = [], [], [], [], None
            for _ in range(a.reps):
                e = engine_decode(a.sprinter, models["regime-target"], models["regime-draft"], "ar,sd", a.gamma, a.n, temp, th,
                                  prompt_ids["regime-target"])
                eng_ar.append(e["ar"]), eng_sd.append(e["sd"])
                b = {"prompt": prompt_ids["regime-target"], "n": a.n, "temperature": temp, "seed": 1}
                cpp_ar.append(llamacpp(npm_dir, {"model": tg, "threads": th, "kv": "F16", "bench": b}, work)["tok_s"])
                s = llamacpp(npm_dir, {"model": tg, "threads": th, "kv": "F16",
                                       "bench": dict(b, draft=dg, draft_tokens=a.gamma)}, work)
                cpp_sd.append(s["tok_s"])
                preds = s["predictions"]
            rows.append({"kind": "sd", "temperature": temp, "threads": th, "gamma": a.gamma,
                         "engine_ar_tok_s": med(eng_ar), "engine_sd_tok_s": med(eng_sd),
                         "engine_speedup": statistics.median(s_ / r_ for s_, r_ in zip(eng_sd, eng_ar)),
                         "llamacpp_ar_tok_s": med(cpp_ar), "llamacpp_sd_tok_s": med(cpp_sd),
                         "llamacpp_speedup": statistics.median(s_ / r_ for s_, r_ in zip(cpp_sd, cpp_ar)),
                         "llamacpp_predictions": preds})
            print("sd T=%g t%d: engine %.2fx, llama.cpp %.2fx" % (temp, th, rows[-1]["engine_speedup"],
                                                                  rows[-1]["llamacpp_speedup"]), flush=True)
    res = {"generated": t_start.isoformat(timespec="seconds"), "n": a.n, "reps": a.reps, "prompt": PROMPT,
           "node_llama_cpp": lc.NPM_PKGS[0], "rows": rows}
    with open(os.path.join(a.out_dir, "llamacpp.json"), "w") as f:
        json.dump(res, f, indent=1)
    with open(os.path.join(a.out_dir, "llamacpp.md"), "w") as f:
        f.write("# The engine beside llama.cpp (%s), same GGUF-exported weights\n\n" % lc.NPM_PKGS[0])
        f.write("Generated %s by bench/bench_llamacpp.py; %d paired reps (median [min, max]); greedy decoding of %d "
                "tokens after a 16-token prompt, tok/s from the first to the last generated token; llama.cpp with "
                "its default F16 KV cache.\n\n" % (res["generated"], a.reps, a.n))
        f.write("| model | dtype | threads | engine tok/s | llama.cpp tok/s | engine / llama.cpp |\n|---|---|---:|---|---|---:|\n")
        for r in rows:
            if r["kind"] == "decode":
                e, c = r["engine_tok_s"], r["llamacpp_tok_s"]
                f.write("| %s | %s | %d | %.1f [%.1f, %.1f] | %.1f [%.1f, %.1f] | %.2fx |\n" % (
                    r["model"], r["dtype"], r["threads"], e["median"], e["min"], e["max"], c["median"], c["min"], c["max"],
                    r["ratio"]))
        f.write("\nSpeculative decoding on the regime pair (engine: sd gamma %d; llama.cpp: draft-model token predictor, "
                "%d tokens per round):\n\n| temperature | threads | engine AR / SD tok/s | engine speed-up | llama.cpp AR / "
                "SD tok/s | llama.cpp speed-up | llama.cpp predictions |\n|---:|---:|---|---:|---|---:|---|\n" % (a.gamma, a.gamma))
        for r in rows:
            if r["kind"] == "sd":
                f.write("| %g | %d | %.1f / %.1f | %.2fx | %.1f / %.1f | %.2fx | %s |\n" % (
                    r["temperature"], r["threads"], r["engine_ar_tok_s"]["median"], r["engine_sd_tok_s"]["median"],
                    r["engine_speedup"], r["llamacpp_ar_tok_s"]["median"], r["llamacpp_sd_tok_s"]["median"],
                    r["llamacpp_speedup"], json.dumps(r["llamacpp_predictions"])))
    print("wrote %s/llamacpp.json, llamacpp.md" % a.out_dir)


if __name__ == "__main__":
    main()
