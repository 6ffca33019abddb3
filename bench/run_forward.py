#!/usr/bin/python3
"""Runs the forward benchmark over the model list and writes results/bench/forward_<model>.json,
results/bench/forward.json (all models + machine facts) and results/bench/forward.md.

For each model, in separate processes (so each peak RSS is that model's own):
  1. build/bench_forward   C engine: decode, verify-cost ratios, prefill, peak RSS, STREAM bandwidth
  2. bench/torch_models.py PyTorch 1.13 on the same weights, same thread count, best of its modes
Random-init models of real shapes are generated once into --models-dir by `sprinter init-random`
(cached; a stamp file records how). The default pair (data/models/draft, data/models/target) is
used as it is when present and skipped with a note otherwise.

Run through `make -f Makefile.bench forward` (which builds first), or directly:
  /usr/bin/python3 bench/run_forward.py --build build-bench [--only gpt2-124m] [--xl 0] [...]
"""
import argparse
import datetime
import json
import os
import platform
import shutil
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HERE = os.path.dirname(os.path.abspath(__file__))
SEED = 1  # init-random seed of every generated model (recorded in each result)

# name, arch, preset, stored dtype, PyTorch compute dtypes, large (reduced repetitions)
GENERATED = [
    ("gpt2-124m", "gpt2", "gpt2", "f32", "f32", False),
    ("gpt-neo-125m", "gpt-neo", "gpt-neo-125m", "f32", "f32", False),
    ("vicuna-68m", "llama", "vicuna-68m", "f32", "f32", False),
    ("gpt2-xl-f32", "gpt2", "gpt2-xl", "f32", "f32", True),
    ("gpt2-xl-bf16", "gpt2", "gpt2-xl", "bf16", "f32,bf16", True),
]


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build-bench"), help="folder with sprinter, bench_forward")
    ap.add_argument("--models-dir", default=os.path.join(ROOT, "results", "bench", "models"))
    ap.add_argument("--out-dir", default=os.path.join(ROOT, "results", "bench"))
    ap.add_argument("--draft", default=os.path.join(ROOT, "data", "models", "draft"))
    ap.add_argument("--target", default=os.path.join(ROOT, "data", "models", "target"))
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--xl", type=int, default=1, help="1: include gpt2-xl f32 and bf16 (9.3 GB of models)")
    ap.add_argument("--only", default="", help="comma-separated model names to run")
    ap.add_argument("--no-torch", action="store_true", help="skip the PyTorch comparison")
    ap.add_argument("--prompt", type=int, default=64)
    ap.add_argument("--steps", type=int, default=32, help="timed decode steps per rep (large models: half)")
    ap.add_argument("--reps", type=int, default=3, help="decode reps (large models: 2)")
    ap.add_argument("--verify-reps", type=int, default=7, help="(large models: 3)")
    ap.add_argument("--prefill", type=int, default=256)
    ap.add_argument("--torch-budget-s", type=float, default=240.0, help="per dtype, see torch_models.py")
    ap.add_argument("--torch-budget-large-s", type=float, default=90.0, help="the same for gpt2-xl")
    return ap.parse_args()


def run(cmd, env=None, log=None):
    t0 = time.time()
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if log:
        with open(log, "a") as f:
            f.write(f"$ {' '.join(cmd)}\n{p.stdout}(exit {p.returncode}, {time.time() - t0:.1f} s)\n")
    return p.returncode, p.stdout


def git_facts():
    def g(*args):
        try:
            return subprocess.run(["git", "-C", ROOT, *args], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                  text=True).stdout.strip()
        except OSError:
            return ""
    return {"commit": g("rev-parse", "HEAD"), "dirty": bool(g("status", "--porcelain", "--untracked-files=no"))}


def ensure_model(a, name, arch, preset, dtype, log):
    """The generated model directory, made once (into DIR.tmp, then renamed)."""
    d = os.path.join(a.models_dir, name)
    stamp = {"arch": arch, "preset": preset, "dtype": dtype, "seed": SEED}
    sp = os.path.join(d, "bench-stamp.json")
    if os.path.exists(sp):
        try:
            if json.load(open(sp)) == stamp:
                return d
        except ValueError:
            pass
    tmp = d + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(a.models_dir, exist_ok=True)
    print(f"  generating {name} ({arch} {preset} {dtype}) ...", flush=True)
    rc, out = run([os.path.join(a.build, "sprinter"), "init-random", "--arch", arch, "--preset", preset, "--seed",
                   str(SEED), "--dtype", dtype, "--out", tmp], log=log)
    if rc:
        raise SystemExit(f"run_forward: sprinter init-random for {name} failed:\n{out}")
    with open(os.path.join(tmp, "bench-stamp.json"), "w") as f:
        json.dump(stamp, f)
    os.rename(tmp, d)
    return d


def settings_for(a, model_dir, large):
    cfg = json.load(open(os.path.join(model_dir, "config.json")))
    max_pos = cfg.get("n_positions") or cfg.get("max_position_embeddings") or 2048
    s = {"prompt": a.prompt, "warmup": 8, "steps": a.steps, "reps": a.reps, "max_gamma": 9,
         "verify_reps": a.verify_reps, "prefill": a.prefill, "prefill_reps": 2}
    if large:
        s.update(warmup=4, steps=max(4, a.steps // 2), reps=min(a.reps, 2), verify_reps=min(a.verify_reps, 3),
                 prefill_reps=1)
    s["prefill"] = min(s["prefill"], max_pos)
    over = s["prompt"] + s["warmup"] + s["steps"] - max_pos
    if over > 0:
        s["steps"] = max(1, s["steps"] - over)
    return s


def stored_dtype(model_dir):
    import struct
    p = os.path.join(model_dir, "model.safetensors")
    if not os.path.exists(p):
        return "?"
    with open(p, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        h = json.loads(f.read(n))
    kinds = sorted({v["dtype"] for k, v in h.items() if k != "__metadata__"})
    return ",".join(k.lower() for k in kinds)


def bench_one(a, name, model_dir, torch_dtypes, large, log, source):
    s = settings_for(a, model_dir, large)
    c_json = os.path.join(a.out_dir, f"raw_c_{name}.json")
    cmd = [os.path.join(a.build, "bench_forward"), "--model", model_dir, "--name", name, "--threads", str(a.threads),
           "--out", c_json] + [x for k, v in s.items() for x in (f"--{k.replace('_', '-')}", str(v))]
    print(f"  {name}: C engine ...", flush=True)
    rc, out = run(cmd, log=log)
    if rc:
        return None, f"{name}: bench_forward failed (exit {rc}): {out.strip().splitlines()[-1] if out.strip() else ''}"
    c = json.load(open(c_json))
    t = None
    if not a.no_torch:
        t_json = os.path.join(a.out_dir, f"raw_torch_{name}.json")
        env = dict(os.environ, OPENBLAS_NUM_THREADS=str(a.threads), OMP_NUM_THREADS=str(a.threads))
        budget = min(a.torch_budget_s, a.torch_budget_large_s) if large else a.torch_budget_s
        tcmd = ["/usr/bin/python3", os.path.join(HERE, "torch_models.py"), "--model", model_dir, "--name", name,
                "--threads", str(a.threads), "--dtype", torch_dtypes, "--out", t_json, "--budget-s", str(budget)]
        tcmd += [x for k, v in s.items() for x in (f"--{k.replace('_', '-')}", str(v))]
        if large:  # freezing copies the weights (2 x 6 GB for gpt2-xl f32); fewer trial steps
            tcmd += ["--modes", "eager_no_grad,eager_inference_mode,jit_script", "--trial-steps", "4"]
        print(f"  {name}: PyTorch ({torch_dtypes}) ...", flush=True)
        rc, out = run(tcmd, env=env, log=log)
        if rc:
            print(f"  {name}: torch_models.py failed (exit {rc}); see forward.log", flush=True)
        else:
            t = json.load(open(t_json))
    return merge(name, source, c, t, s), None


def merge(name, source, c, t, s):
    r = {"model": name, "source": source, "model_dir": c.get("model_dir"), "arch": c.get("arch"),
         "params": c.get("params"), "dtype": stored_dtype(c.get("model_dir")), "weight_bytes": c.get("weight_bytes"),
         "threads": c.get("threads"), "settings": s}
    for k in ("tokens_per_s", "tokens_per_s_median", "decode_step_ms_median", "roofline_tokens_per_s",
              "roofline_fraction", "prefill_tokens_per_s", "peak_rss_mb", "bandwidth_gbs", "verify_ms", "stream"):
        r[k] = c.get(k)
    for g in range(1, s["max_gamma"] + 1):
        r[f"verify_cost_ratio_g{g}"] = c.get(f"verify_cost_ratio_g{g}")
    r["pytorch_tokens_per_s"] = r["speedup_vs_pytorch"] = None
    if t:
        best = t["best_dtype"]
        bt = t["by_dtype"][best]
        r["pytorch_tokens_per_s"] = bt["tokens_per_s"]
        r["pytorch_compute_dtype"] = best
        r["pytorch_mode"] = bt["mode"]
        r["speedup_vs_pytorch"] = r["tokens_per_s"] / bt["tokens_per_s"] if r["tokens_per_s"] else None
        r["pytorch_prefill_tokens_per_s"] = bt.get("prefill_tokens_per_s")
        r["pytorch_verify_cost_ratio_g5"] = bt.get("verify_cost_ratio_g5")
        r["pytorch_peak_rss_mb"] = t.get("peak_rss_mb")
        r["pytorch_by_dtype"] = {k: {kk: v.get(kk) for kk in ("tokens_per_s", "tokens_per_s_median", "mode",
                                                               "prefill_tokens_per_s", "verify_cost_ratio_g5",
                                                               "trials", "reduced")}
                                 for k, v in t["by_dtype"].items()}
        r["pytorch"] = {k: t.get(k) for k in ("torch_version", "torch_num_threads", "env", "openblas",
                                              "mkldnn_enabled", "settings")}
    r["machine"] = c.get("machine")
    return r


def fmt(x, f="{:.1f}"):
    return "–" if x is None else f.format(x)


def llamacpp_rows(path, doc):
    """llama.cpp beside the table, from `make -f Makefile.bench llamacpp` (bench/bench_llamacpp.py) when
    it has run: its and the engine's greedy decode at this run's thread count, measured there in paired
    reps (not in this process)."""
    if not os.path.exists(path):
        return []
    rows = [r for r in json.load(open(path))["rows"] if r["kind"] == "decode" and r["threads"] == doc["threads"]]
    if not rows:
        return []
    L = ["", f"llama.cpp on the same weights (GGUF export; llamacpp.json, {doc['threads']} thread(s), median of paired "
         "reps, greedy decode):", "", "| model | dtype | engine tok/s | llama.cpp tok/s | engine / llama.cpp |",
         "|---|---|---:|---:|---:|"]
    for r in rows:
        L.append(f"| {r['model']} | {r['dtype']} | {r['engine_tok_s']['median']:.1f} | {r['llamacpp_tok_s']['median']:.1f} "
                 f"| {r['ratio']:.2f}x |")
    return L


def write_md(path, doc):
    m = doc["machine"]
    L = ["# Forward-pass benchmark", "",
         f"Generated {doc['generated']} by `make -f Makefile.bench forward` (bench/run_forward.py); "
         f"git {doc['git']['commit'][:12]}{' (dirty)' if doc['git']['dirty'] else ''}.", "",
         f"Machine: {m.get('cores_online')} cores, {m.get('cpu_model')}; {m.get('openblas_config')}, "
         f"core `{m.get('openblas_corename')}`; threads {doc['threads']}; "
         f"env {', '.join(f'{k}={v}' for k, v in sorted(m.get('env', {}).items())) or 'no OPENBLAS_*/OMP_*'}; "
         f"load average at start {doc.get('loadavg_at_start')}. PyTorch {doc.get('torch_version', '–')} uses the "
         "same OpenBLAS (Debian's libblas.so.3 alternative) with the same OPENBLAS_* settings.", "",
         "Decode = batch-1 tokens/s after 64 prompt tokens and 8 warm-up steps (best rep). Roofline = "
         "max(STREAM copy, triad) bandwidth measured in the same process / model_weight_bytes() (weights that "
         "fit in cache can beat it). verify gK = time of one pass over K tokens / one token. "
         "Peak RSS = ru_maxrss of the C process (mmap'd weight pages that were touched count).", "",
         "| model | dtype | params | weights MB | decode tok/s | roofline tok/s | of roofline | PyTorch tok/s "
         "(compute dtype, mode) | speedup | verify g2 | g3 | g4 | g5 | g6 | g7 | g8 | g9 | prefill tok/s C / PyTorch "
         "| peak RSS MB C / PyTorch | bandwidth GB/s |",
         "|---|---|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|---:|"]
    for r in doc["models"]:
        pt = "–"
        if r.get("pytorch_tokens_per_s") is not None:
            pt = f"{r['pytorch_tokens_per_s']:.1f} ({r['pytorch_compute_dtype']}, {r['pytorch_mode']})"
        L.append(
            f"| {r['model']} | {r['dtype']} | {r['params'] / 1e6:.1f}M | {r['weight_bytes'] / 2**20:.0f} | "
            f"{fmt(r['tokens_per_s'])} | {fmt(r['roofline_tokens_per_s'])} | {fmt(r['roofline_fraction'], '{:.2f}')} "
            f"| {pt} | {fmt(r.get('speedup_vs_pytorch'), '{:.2f}x')} | "
            + "".join(f"{fmt(r.get(f'verify_cost_ratio_g{g}'), '{:.2f}')} | " for g in range(2, 10)) +
            f"{fmt(r['prefill_tokens_per_s'], '{:.0f}')} / {fmt(r.get('pytorch_prefill_tokens_per_s'), '{:.0f}')} | "
            f"{fmt(r['peak_rss_mb'], '{:.0f}')} / {fmt(r.get('pytorch_peak_rss_mb'), '{:.0f}')} | "
            f"{fmt(r['bandwidth_gbs'])} |")
    L += llamacpp_rows(os.path.join(os.path.dirname(path), "llamacpp.json"), doc)
    bf = [r for r in doc["models"] if len(r.get("pytorch_by_dtype", {})) > 1]
    if bf:
        L += ["", "PyTorch by compute dtype (for bf16 checkpoints; f32 widens the weights once at load):", ""]
        for r in bf:
            parts = [f"{k}: {fmt(v['tokens_per_s'])} tok/s ({v['mode']})" + (f", reduced: {'; '.join(v['reduced'])}"
                                                                             if v.get("reduced") else "")
                     for k, v in r["pytorch_by_dtype"].items()]
            L.append(f"- {r['model']}: " + "; ".join(parts) + f" -> compared against {r['pytorch_compute_dtype']}")
    if doc["notes"]:
        L += ["", "Notes:", ""] + [f"- {n}" for n in doc["notes"]]
    with open(path + ".tmp", "w") as f:
        f.write("\n".join(L) + "\n")
    os.replace(path + ".tmp", path)


def main():
    a = parse_args()
    os.makedirs(a.out_dir, exist_ok=True)
    log = os.path.join(a.out_dir, "forward.log")
    open(log, "w").close()
    if not os.access(os.path.join(a.build, "bench_forward"), os.X_OK):  # sprinter: only to generate models
        raise SystemExit(f"run_forward: {os.path.join(a.build, 'bench_forward')} missing (make -f Makefile.bench build)")
    only = set(x for x in a.only.split(",") if x)
    notes, models = [], []
    loadavg = open("/proc/loadavg").read().split()[:3]
    todo = []
    for name, arch, preset, dtype, tdt, large in GENERATED:
        if only and name not in only:
            continue
        if large and not a.xl:
            notes.append(f"{name}: skipped (XL=0)")
            continue
        todo.append((name, lambda n=name, ar=arch, p=preset, d=dtype: ensure_model(a, n, ar, p, d, log), tdt, large,
                     f"init-random --arch {arch} --preset {preset} --dtype {dtype} --seed {SEED}"))
    regime = os.path.join(ROOT, "data", "models", "regime")
    for name, d in (("pair-draft", a.draft), ("pair-target", a.target), ("regime-draft", os.path.join(regime, "draft")),
                    ("regime-target", os.path.join(regime, "target"))):
        if only and name not in only:
            continue
        if not all(os.path.exists(os.path.join(d, f)) for f in ("config.json", "model.safetensors")):
            notes.append(f"{name}: skipped, {os.path.relpath(d, ROOT)} has no config.json + model.safetensors yet")
            continue
        tdt = "f32,bf16" if "bf16" in stored_dtype(d) else "f32"
        todo.append((name, lambda d=d: d, tdt, False, os.path.relpath(d, ROOT)))
    t0 = time.time()
    for name, get_dir, tdt, large, source in todo:
        print(f"[{time.time() - t0:5.0f} s] {name}", flush=True)
        r, err = bench_one(a, name, get_dir(), tdt, large, log, source)
        if err:
            notes.append(err)
            print("  " + err, flush=True)
            continue
        with open(os.path.join(a.out_dir, f"forward_{name}.json"), "w") as f:
            json.dump(r, f, indent=1)
        models.append(r)
    notes.append("timings on a shared machine are only as good as its load: see loadavg_at_start per model "
                 "(machine.loadavg_at_start) and compare tokens_per_s (best rep) with tokens_per_s_median")
    machine = models[0]["machine"] if models else {}
    torch_version = next((r["pytorch"]["torch_version"] for r in models if r.get("pytorch")), None)
    doc = {"schema": "sprinter-bench-forward-summary/1",
           "generated": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "git": git_facts(), "threads": a.threads, "loadavg_at_start": [float(x) for x in loadavg],
           "python": platform.python_version(), "torch_version": torch_version, "machine": machine,
           "models": models, "notes": notes, "elapsed_s": time.time() - t0}
    with open(os.path.join(a.out_dir, "forward.json"), "w") as f:
        json.dump(doc, f, indent=1)
    write_md(os.path.join(a.out_dir, "forward.md"), doc)
    print(f"wrote {os.path.relpath(a.out_dir, ROOT)}/forward.json, forward.md ({time.time() - t0:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
