#!/usr/bin/python3
"""Decoding-method benchmark on the default pair: runs `sprinter decode` over the first K prompts of
data/datasets/encyclopedic.jsonl for every method variant and aggregates latency per token,
speedup vs AR and vs SD, target calls per token (and FLOPs per token when `sprinter decode`
prints them) into results/bench/decode.json and decode.md.

Variants: ar, draft, bild (alpha), pmin (p_min, gamma_max), sd at gamma 3..8, sprinter at every tau
of the grid, specdecpp at every tau (gamma_max). sprinter and specdecpp need a verifier: unless
--verifier is given, one is trained once and cached (results/bench/verifier/): `sprinter collect`
on held-out prompts (the dataset lines after the K evaluated ones, so no evaluated prompt is seen
in training), then `sprinter train-verifier`. The cache key is the sha256 of both model files plus
the collection settings.

Every `sprinter decode` call first runs one untimed "sd" pass (it pages in both models and warms
the caches), then the measured methods; `sprinter decode` builds a fresh RNG from --seed for
each method, so the warm-up does not change what the measured methods sample. Prompt i uses seed
SEED + i. Latency per token of a variant = (sum over prompts of decode wall time) / (sum of tokens).

If the pair or the dataset is missing, writes decode.json / decode.md with a note and exits 0.
"""
import argparse
import datetime
import hashlib
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sprinter", default=os.path.join(ROOT, "build-bench", "sprinter"))
    ap.add_argument("--draft", default=os.path.join(ROOT, "data", "models", "draft"))
    ap.add_argument("--target", default=os.path.join(ROOT, "data", "models", "target"))
    ap.add_argument("--data", default=os.path.join(ROOT, "data", "datasets", "encyclopedic.jsonl"))
    ap.add_argument("--out-dir", default=os.path.join(ROOT, "results", "bench"))
    ap.add_argument("--prompts", type=int, default=20, help="K: evaluate the first K prompts")
    ap.add_argument("--max-new", type=int, default=64)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--temperature", type=float, default=1.0)
    ap.add_argument("--gammas", default="3,4,5,6,7,8")
    ap.add_argument("--taus", default="0.3,0.5,0.7,0.9")
    ap.add_argument("--gamma-max", type=int, default=8, help="pmin and specdecpp: longest draft block")
    ap.add_argument("--p-min", type=float, default=0.5)
    ap.add_argument("--alpha", type=float, default=0.5)
    ap.add_argument("--sd-ref-gamma", type=int, default=5, help="the SD of speedup_vs_sd_g (also vs best SD)")
    ap.add_argument("--verifier", help="verifier .safetensors (default: train and cache one)")
    ap.add_argument("--collect-prompts", type=int, default=200, help="held-out prompts for verifier data")
    ap.add_argument("--collect-max-new", type=int, default=32)
    ap.add_argument("--lambda", dest="lam", type=float, default=1.0, help="label threshold q/p <= lambda")
    ap.add_argument("--audit", action="store_true", help="also measure eta_TP / eta_FP (sprinter, specdecpp)")
    return ap.parse_args()


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for b in iter(lambda: f.read(1 << 20), b""):
            h.update(b)
    return h.hexdigest()


def run(cmd, log):
    t0 = time.time()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    with open(log, "a") as f:
        f.write(f"$ {' '.join(cmd)}\n{p.stdout}(exit {p.returncode}, {time.time() - t0:.1f} s)\n")
    return p.returncode, p.stdout


def variants(a):
    """(label, method, extra args) in run order."""
    v = [("ar", "ar", []), ("draft", "draft", []), (f"bild alpha={a.alpha:g}", "bild", ["--alpha", str(a.alpha)]),
         (f"pmin p_min={a.p_min:g} gamma<={a.gamma_max}", "pmin",
          ["--p-min", str(a.p_min), "--gamma", str(a.gamma_max)])]
    v += [(f"sd gamma={g}", "sd", ["--gamma", str(g)]) for g in (int(x) for x in a.gammas.split(","))]
    for t in (float(x) for x in a.taus.split(",")):
        v.append((f"sprinter tau={t:g}", "sprinter", ["--tau", str(t)]))
    for t in (float(x) for x in a.taus.split(",")):
        v.append((f"specdecpp tau={t:g} gamma<={a.gamma_max}", "specdecpp",
                  ["--tau", str(t), "--gamma", str(a.gamma_max)]))
    return v


def parse_decode(out, method):
    """The measured row of `sprinter decode` output (the last one: the first row is the sd warm-up).
    Columns: method tokens tok/s t_calls tok/t_call mean_run [eta_TP x (a/b) eta_FP y (c/d)];
    a JSON object line per method, if the CLI prints one, is preferred (all DecodeStats fields)."""
    js = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    rows = [line.split() for line in out.splitlines() if line.split() and line.split()[0] == method]
    if len(rows) < (2 if method == "sd" else 1):
        return None
    r = rows[-1]
    d = {"method": r[0], "tokens": int(r[1]), "tokens_per_s": float(r[2]), "target_forwards": int(r[3])}
    if "eta_TP" in r:
        d["eta_tp_counts"] = r[r.index("eta_TP") + 2].strip("()")
        d["eta_fp_counts"] = r[r.index("eta_FP") + 2].strip("()")
    if len(js) >= 2:
        d.update(js[-1])
    return d


def ensure_verifier(a, prompts_all, vdir, log):
    if a.verifier:
        return a.verifier, {"given": a.verifier}
    os.makedirs(vdir, exist_ok=True)
    held = prompts_all[a.prompts:a.prompts + a.collect_prompts]
    if not held:
        raise SystemExit("bench_decode: no held-out prompts left for verifier data (lower --prompts)")
    key = {"draft": sha256(os.path.join(a.draft, "model.safetensors")),
           "target": sha256(os.path.join(a.target, "model.safetensors")),
           "data": hashlib.sha256("\n".join(held).encode()).hexdigest(), "lambda": a.lam,
           "max_new": a.collect_max_new, "temperature": a.temperature, "seed": a.seed}
    kh = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]
    ver = os.path.join(vdir, f"verifier-{kh}.safetensors")
    if os.path.exists(ver):
        return ver, dict(key, cache=os.path.relpath(ver, ROOT), reused=True)
    pj = os.path.join(vdir, f"collect-{kh}.jsonl")
    with open(pj, "w") as f:
        f.write("\n".join(held) + "\n")
    h5 = os.path.join(vdir, f"collect-{kh}.h5")
    print(f"  verifier: collect on {len(held)} held-out prompts ...", flush=True)
    rc, out = run([a.sprinter, "collect", "--draft", a.draft, "--target", a.target, "--data", pj, "--format", "jsonl",
                   "--lambda", str(a.lam), "--out", h5, "--max-new", str(a.collect_max_new),
                   "--temperature", str(a.temperature), "--seed", str(a.seed)], log)
    if rc:
        raise SystemExit(f"bench_decode: sprinter collect failed:\n{out}")
    rc, tout = run([a.sprinter, "train-verifier", "--data", h5, "--out", ver + ".tmp"], log)
    if rc:
        raise SystemExit(f"bench_decode: sprinter train-verifier failed:\n{tout}")
    os.replace(ver + ".tmp", ver)
    return ver, dict(key, cache=os.path.relpath(ver, ROOT), reused=False, collect=out.strip(), train=tout.strip())


def write_outputs(a, doc):
    with open(os.path.join(a.out_dir, "decode.json"), "w") as f:
        json.dump(doc, f, indent=1)
    L = ["# Decoding-method benchmark", "",
         f"Generated {doc['generated']} by `make -f Makefile.bench decode` (bench/bench_decode.py).", ""]
    if doc.get("rows"):
        s = doc["settings"]
        L += [f"Pair: draft `{s['draft']}`, target `{s['target']}`; first {s['prompts']} prompts of "
              f"`{s['data']}`, {s['max_new']} new tokens each, temperature {s['temperature']}, seed {s['seed']}+i, "
              f"{s['threads']} threads. Latency = decode wall time / tokens summed over prompts (warm: each call "
              "runs one untimed pass first).", "",
              "| variant | tokens | ms / token | tokens/s | speedup vs AR | vs SD g" + str(a.sd_ref_gamma) +
              " | vs best SD | target calls / token | FLOPs / token | eta_TP / eta_FP |",
              "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
        for r in doc["rows"]:
            f = lambda x, p="{:.2f}": "–" if x is None else p.format(x)  # noqa: E731
            L.append(f"| {r['variant']} | {r['tokens']} | {f(r['latency_ms_per_token'], '{:.3f}')} | "
                     f"{f(r['tokens_per_s'], '{:.1f}')} | {f(r['speedup_vs_ar'])} | {f(r['speedup_vs_sd_ref'])} | "
                     f"{f(r['speedup_vs_best_sd'])} | {f(r['target_calls_per_token'], '{:.3f}')} | "
                     f"{f(r['flops_per_token'], '{:.3g}')} | {r.get('eta', '–')} |")
    if doc.get("notes"):
        L += ["", "Notes:", ""] + [f"- {n}" for n in doc["notes"]]
    with open(os.path.join(a.out_dir, "decode.md"), "w") as f:
        f.write("\n".join(L) + "\n")


def main():
    a = parse_args()
    os.makedirs(a.out_dir, exist_ok=True)
    log = os.path.join(a.out_dir, "decode.log")
    open(log, "w").close()
    doc = {"schema": "sprinter-bench-decode/1",
           "generated": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"), "notes": []}
    missing = [p for p in (os.path.join(a.draft, "model.safetensors"), os.path.join(a.target, "model.safetensors"),
                           a.data) if not os.path.exists(p)]
    if missing:
        doc["notes"].append("skipped: missing " + ", ".join(os.path.relpath(p, ROOT) for p in missing))
        write_outputs(a, doc)
        print("bench_decode: " + doc["notes"][0])
        return 0
    lines = [ln for ln in open(a.data).read().splitlines() if ln.strip()]
    prompts = [json.loads(ln)["prompt"] for ln in lines[:a.prompts]]
    t0 = time.time()
    ver, vinfo = ensure_verifier(a, lines, os.path.join(a.out_dir, "verifier"), log)
    doc["verifier"] = vinfo
    V = variants(a)
    _, helptext = run([a.sprinter, "decode", "--help"], log)
    json_flag = ["--json"] if "--json" in helptext else []  # all DecodeStats fields, when the CLI has it
    per = {label: [] for label, _, _ in V}
    for i, prompt in enumerate(prompts):
        print(f"[{time.time() - t0:5.0f} s] prompt {i + 1}/{len(prompts)}", flush=True)
        for label, method, extra in V:
            cmd = [a.sprinter, "decode", "--draft", a.draft, "--target", a.target, "--prompt", prompt,
                   "--method", f"sd,{method}", "--max-new", str(a.max_new), "--temperature", str(a.temperature),
                   "--seed", str(a.seed + i), "--threads", str(a.threads)] + extra + json_flag
            if method in ("sprinter", "specdecpp"):
                cmd += ["--verifier", ver] + (["--audit"] if a.audit else [])
            rc, out = run(cmd, log)
            d = parse_decode(out, method) if rc == 0 else None
            if d is None:
                doc["notes"].append(f"{label}, prompt {i}: sprinter decode failed (exit {rc}), see decode.log")
                continue
            per[label].append(d)
    rows = []
    for label, method, extra in V:
        ds = per[label]
        if not ds:
            continue
        tok = sum(d["tokens"] for d in ds)
        secs = sum(d["t_total"] if "t_total" in d else d["tokens"] / d["tokens_per_s"] for d in ds)
        calls = sum(d["target_forwards"] for d in ds)
        r = {"variant": label, "method": method, "args": extra, "prompts": len(ds), "tokens": tok,
             "seconds": secs, "latency_ms_per_token": 1e3 * secs / tok, "tokens_per_s": tok / secs,
             "target_calls_per_token": calls / tok, "flops_per_token": None}
        if all(k in ds[0] for k in ("flops_draft", "flops_target")):
            r["flops_per_token"] = sum(d["flops_draft"] + d["flops_target"] + d.get("flops_verifier", 0)
                                       for d in ds) / tok
        if "eta_tp_counts" in ds[0]:
            tp = [sum(int(d[k].split("/")[j]) for d in ds) for k in ("eta_tp_counts",) for j in (0, 1)]
            fp = [sum(int(d[k].split("/")[j]) for d in ds) for k in ("eta_fp_counts",) for j in (0, 1)]
            r["eta"] = (f"{tp[0] / tp[1]:.3f} / {fp[0] / fp[1]:.3f}" if tp[1] and fp[1] else "–")
        rows.append(r)
    lat = {r["variant"]: r["latency_ms_per_token"] for r in rows}
    ar = lat.get("ar")
    sds = {r["variant"]: r["latency_ms_per_token"] for r in rows if r["method"] == "sd"}
    sd_ref = lat.get(f"sd gamma={a.sd_ref_gamma}")
    best_sd = min(sds.values()) if sds else None
    for r in rows:
        x = r["latency_ms_per_token"]
        r["speedup_vs_ar"] = ar / x if ar else None
        r["speedup_vs_sd_ref"] = sd_ref / x if sd_ref else None
        r["speedup_vs_best_sd"] = best_sd / x if best_sd else None
    doc["best_sd"] = min(sds, key=sds.get) if sds else None
    doc["rows"] = rows
    doc["settings"] = {"draft": os.path.relpath(a.draft, ROOT), "target": os.path.relpath(a.target, ROOT),
                       "data": os.path.relpath(a.data, ROOT), "prompts": len(prompts), "max_new": a.max_new,
                       "temperature": a.temperature, "seed": a.seed, "threads": a.threads, "gammas": a.gammas,
                       "taus": a.taus, "gamma_max": a.gamma_max, "p_min": a.p_min, "alpha": a.alpha,
                       "lambda": a.lam, "audit": a.audit}
    doc["model_sha256"] = {"draft": sha256(os.path.join(a.draft, "model.safetensors")),
                           "target": sha256(os.path.join(a.target, "model.safetensors"))}
    doc["loadavg_at_end"] = [float(x) for x in open("/proc/loadavg").read().split()[:3]]
    if rows and rows[0].get("flops_per_token") is None:
        doc["notes"].append("FLOPs per token: `sprinter decode` does not print DecodeStats' flops_* / *_tokens "
                            "fields yet; the column fills in once it prints one JSON object per method")
    doc["elapsed_s"] = time.time() - t0
    write_outputs(a, doc)
    print(f"wrote {os.path.relpath(a.out_dir, ROOT)}/decode.json, decode.md ({time.time() - t0:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
