#!/usr/bin/python3
"""The engine beside llama.cpp built natively (scripts/llamacpp-native.sh: -DGGML_NATIVE=ON) on the same
GGUF files, per weight dtype (issue 30). Every file is written once by `sprinter export-gguf` (f32, bf16,
q8_0) into OUT/native/; the engine loads that very file (a model directory holding config.json and
model.gguf), llama.cpp's tools load it too.

Rows (paired: each rep runs the engine, then llama.cpp; median [min, max] over --reps):
  decode   greedy batch-1 decoding, 1 and 2 threads: engine `sprinter decode --method ar` (--n tokens
           after a 16-token prompt, tok/s of the generated tokens) against `llama-bench -p 0 -n N`
           (its tg tok/s; F16 KV cache, its default);
  verify   the engine's cost of verifying k = 1..8 tokens in one forward pass relative to one token
           (bench_forward, 1 thread): the median over --reps x 3 passes;
  roofline bytes of weights streamed per token (the GGUF file's tensor bytes) / the STREAM triad
           bandwidth at that thread count (bench_forward --stream-only): the tok/s a memory-bound
           decoder cannot beat;
  sd       the regime pair (target and draft in the same dtype), greedy, 1 thread, draft length G:
           engine `decode --method ar,sd --gamma G` against `llama-speculative-simple --spec-type
           draft-simple --spec-draft-n-max G --temp 0 --ignore-eos` on the same text prompt, with each
           engine's acceptance (accepted / drafted).
Output: OUT/native.json and OUT/native.md (with the load average before and after).
usage: bench_native.py [--sprinter build-bench/sprinter] [--bench-forward build-bench/bench_forward]
                       [--out-dir results/bench] [--reps 3] [--models gpt2-124m,regime-target,llama-1b]
"""
import argparse
import datetime
import json
import os
import re
import statistics
import struct
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The regime target's greedy 72-token continuation of this prompt has no end-of-text token at f32, bf16
# or Q8_0. It must not: the engine keeps that token and goes on, llama.cpp's --ignore-eos bans it, and
# the two would decode different texts (the previous prompt did, after 10 tokens; bench/README.md).
# On this one both accept the same 42 drafts in 64 tokens.
PROMPT = "In the early years of the century the town grew quickly around its harbour and market"
DTYPES = ("f32", "bf16", "q8_0")


def sh(args, **kw):
    return subprocess.run([str(a) for a in args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          errors="replace", **kw)


def must(r, what):
    if r.returncode != 0:
        sys.exit("%s failed: %s" % (what, (r.stderr or r.stdout)[-1500:]))
    return r


def med(xs):
    return {"median": statistics.median(xs), "min": min(xs), "max": max(xs), "reps": xs}


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def tensor_bytes(gguf):
    """Bytes of the tensor data of a GGUF file (every stored weight once, as bench_forward's roofline
    counts them): the file's size less its header, metadata and tensor infos."""
    with open(gguf, "rb") as f:
        b = f.read(1 << 24)  # the header of these files (a 32k-token vocabulary at most) fits
    pos = 24
    n_tensors, n_kv = struct.unpack_from("<QQ", b, 8)
    sizes = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}

    def skip_value(t):
        nonlocal pos
        if t == 8:
            pos += 8 + struct.unpack_from("<Q", b, pos)[0]
        elif t == 9:
            et, n = struct.unpack_from("<IQ", b, pos)
            pos += 12
            for _ in range(n):
                skip_value(et)
        else:
            pos += sizes[t]

    align = 32
    for _ in range(n_kv):
        kl = struct.unpack_from("<Q", b, pos)[0]
        key = b[pos + 8:pos + 8 + kl]
        pos += 8 + kl
        t = struct.unpack_from("<I", b, pos)[0]
        pos += 4
        if key == b"general.alignment":
            align = struct.unpack_from("<I", b, pos)[0]
        skip_value(t)
    for _ in range(n_tensors):
        pos += 8 + struct.unpack_from("<Q", b, pos)[0]
        nd = struct.unpack_from("<I", b, pos)[0]
        pos += 4 + 8 * nd + 4 + 8
    return os.path.getsize(gguf) - (pos + align - 1) // align * align


def export(sprinter, src, tok, dtype, dst):
    """dst/: src's config.json and `export-gguf --dtype` of src as model.gguf (once)."""
    g = os.path.join(dst, "model.gguf")
    if not os.path.exists(g):
        os.makedirs(dst, exist_ok=True)
        must(sh(["cp", os.path.join(src, "config.json"), dst]), "cp config.json")
        for fn in ("vocab.json", "merges.txt", "tokenizer.json", "tokenizer_config.json"):
            if os.path.exists(os.path.join(tok, fn)):
                must(sh(["cp", os.path.join(tok, fn), dst]), "cp " + fn)
        must(sh([sprinter, "export-gguf", "--model", src, "--out", g, "--dtype", dtype, "--tokenizer", tok]),
             "export-gguf %s %s" % (src, dtype))
    return dst


def engine_rates(sprinter, target, draft, methods, gamma, n, threads):
    args = [sprinter, "decode", "--target", target, "--prompt", PROMPT, "--method", methods, "--max-new", n,
            "--temperature", 0, "--seed", 1, "--threads", threads, "--json"]
    if draft:
        args += ["--draft", draft, "--gamma", gamma]
    r = must(sh(args), "sprinter decode")
    out = {}
    for line in r.stdout.splitlines():
        if line.startswith("{"):
            j = json.loads(line)
            out[j["method"]] = j
    return out


def rate_of(j):
    """Generated tokens per second of one method's DecodeStats line (what its tok/s column shows)."""
    return j["tokens"] / j["t_total"]


def accept_of(j):
    a, d = j.get("accepted"), j.get("drafted")
    return a / d if a is not None and d else float("nan")


# How llama.cpp holds its weights. The engine copies them into an arena advised as transparent huge pages
# (model.c relayout_weights); llama.cpp by default maps the GGUF file in 4 kB pages. On the AMD EPYC VM
# (2026-12-07, evening) that alone made llama-bench's bf16 decode of the gpt2-124m shape 57-67 tok/s
# against 94-103 with its weights in huge pages (read into memory, --mmap 0, with glibc's malloc told
# to advise its mappings as huge pages): the page walks of a 4 kB-paged stream, not the arithmetic.
# So the anchor gets huge pages too ("huge-pages", the default); "mmap" is llama.cpp's default loading.
HUGE_TUNABLE = "glibc.malloc.hugetlb=1"


def llama_env(memory):
    if memory != "huge-pages":
        return None
    env = dict(os.environ)
    prev = env.get("GLIBC_TUNABLES")
    env["GLIBC_TUNABLES"] = HUGE_TUNABLE + (":" + prev if prev else "")
    return env


def thp_mode():
    """The kernel's transparent huge page mode (the bracketed word), or 'unknown'."""
    try:
        m = re.search(r"\[(\w+)\]", open("/sys/kernel/mm/transparent_hugepage/enabled").read())
        return m.group(1) if m else "unknown"
    except OSError:
        return "unknown"


def llama_bench(tools, gguf, n, threads, memory):
    r = must(sh([os.path.join(tools, "llama-bench"), "-m", gguf, "-p", 0, "-n", n, "-t", threads, "-r", 1, "-o", "json"]
                + (["-mmp", 0] if memory == "huge-pages" else []), env=llama_env(memory)),
             "llama-bench")
    return float(json.loads(r.stdout)[0]["avg_ts"])


def llama_spec(tools, target, draft, gamma, n, memory):
    """tok/s and acceptance of llama-speculative-simple. Its logger thread can drop the last lines at
    exit (the statistics): the run is repeated until they come, at most 3 times."""
    for _ in range(3):
        got = llama_spec_once(tools, target, draft, gamma, n, memory)
        if got:
            return got
    sys.exit("llama-speculative-simple: no statistics in 3 runs")


def cpu_has_amx():
    """On CPUs with AMX (Intel Sapphire Rapids and later) the native build's AMX matrix kernels (an extra
    buffer type that repacks Q8_0 weights) crash with SIGSEGV in ggml_backend_amx_mul_mat on a
    multi-row Q8_0 product (measured 2026-12-04 on the regime target: llama-perplexity and llama-bench
    -p 128); --no-repack keeps llama.cpp on its AVX-512 paths there."""
    try:
        return " amx_int8" in open("/proc/cpuinfo").read()
    except OSError:
        return False


def llama_spec_once(tools, target, draft, gamma, n, memory):
    r = must(sh([os.path.join(tools, "llama-speculative-simple"), "-m", target, "-md", draft, "-p", PROMPT, "-n", n,
                 "--temp", 0, "-t", 1, "-td", 1, "--spec-type", "draft-simple", "--spec-draft-n-max", gamma,
                 "--ignore-eos", "-c", 512] + (["--no-repack"] if cpu_has_amx() else [])
                + (["--no-mmap"] if memory == "huge-pages" else []), env=llama_env(memory)), "llama-speculative-simple")
    text = r.stdout + r.stderr
    speed = re.search(r"decoded\s+\d+ tokens in\s+[\d.]+ seconds, speed:\s+([\d.]+) t/s", text)
    drafted, accepted = re.search(r"n_drafted = (\d+)", text), re.search(r"n_accept  = (\d+)", text)
    if not (speed and drafted and accepted):
        return None
    d, acc = int(drafted.group(1)), int(accepted.group(1))
    return float(speed.group(1)), acc / d if d else float("nan")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sprinter", default=os.path.join(ROOT, "build-bench", "sprinter"))
    ap.add_argument("--bench-forward", default=os.path.join(ROOT, "build-bench", "bench_forward"))
    ap.add_argument("--out-dir", default=os.path.join(ROOT, "results", "bench"))
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--n", type=int, default=64)
    ap.add_argument("--gamma", type=int, default=4)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--models", default="gpt2-124m,regime-target")
    ap.add_argument("--big-dir", default=os.path.join(os.path.expanduser("~"), ".cache", "sprinter", "quant"),
                    help="where the random-init >= 1B Llama (llama1b/) and gpt2-124m shape (gpt2/) live, generated once "
                         "by init-random (bench/README.md)")
    ap.add_argument("--no-sd", action="store_true")
    ap.add_argument("--llama-memory", choices=("huge-pages", "mmap"), default="huge-pages",
                    help="llama.cpp's weights: read into memory in transparent huge pages, as the engine's "
                         "(--mmap 0, GLIBC_TUNABLES=glibc.malloc.hugetlb=1; the default), or its default file map")
    a = ap.parse_args()
    r = sh(["bash", os.path.join(ROOT, "scripts", "llamacpp-native.sh")])
    tools = r.stdout.strip()
    if r.returncode != 0 or not os.path.exists(os.path.join(tools, "llama-bench")):
        sys.exit("llama.cpp native build: " + r.stderr[-800:])
    work = os.path.join(a.out_dir, "native")
    os.makedirs(work, exist_ok=True)
    regime = os.path.join(ROOT, "data", "models", "regime")
    tok = os.path.join(regime, "target")
    gpt2 = os.path.join(a.out_dir, "models", "gpt2-124m")  # make -f Makefile.bench forward's, else init-random's
    if not os.path.exists(os.path.join(gpt2, "config.json")):
        gpt2 = os.path.join(a.big_dir, "gpt2")
    sources = {"gpt2-124m": gpt2, "regime-target": os.path.join(regime, "target"),
               "regime-draft": os.path.join(regime, "draft"), "llama-1b": os.path.join(a.big_dir, "llama1b")}
    threads = [int(t) for t in a.threads.split(",")]
    load0, t0 = loadavg(), datetime.datetime.now(datetime.timezone.utc)
    bw = {}
    for th in threads:
        j = json.loads(must(sh([a.bench_forward, "--stream-only", "--threads", th]), "bench_forward --stream-only").stdout)
        bw[th] = j["bandwidth_gbs"]  # max(STREAM copy, triad), bench_forward's roofline bandwidth
    rows = []
    for name in a.models.split(","):
        src = sources[name]
        if not os.path.exists(os.path.join(src, "config.json")):
            print("note: %s missing (%s); skipped" % (name, src))
            continue
        for dt in DTYPES:
            if name == "llama-1b" and dt == "f32":
                continue  # 4.4 GB: bf16 and q8_0 are the rows the goal names
            mdir = export(a.sprinter, src, tok, dt, os.path.join(work, "%s-%s" % (name, dt)))
            gguf = os.path.join(mdir, "model.gguf")
            nbytes = tensor_bytes(gguf)
            for th in threads:
                if name == "llama-1b" and th > 1:
                    continue  # ~1 tok/s at 2 threads on the shared 2-vCPU VM: minutes per rep, nothing learned
                eng, cpp = [], []
                for _ in range(a.reps):
                    eng.append(rate_of(engine_rates(a.sprinter, mdir, None, "ar", 0, a.n, th)["ar"]))
                    cpp.append(llama_bench(tools, gguf, a.n, th, a.llama_memory))
                roof = bw[th] * 1e9 / nbytes
                rows.append({"kind": "decode", "model": name, "dtype": dt, "threads": th, "bytes": nbytes,
                             "roofline_tok_s": roof, "engine_tok_s": med(eng), "llamacpp_tok_s": med(cpp),
                             "ratio": statistics.median(e / c for e, c in zip(eng, cpp))})
                print("decode %s %s t%d: engine %.1f, llama.cpp %.1f tok/s (roofline %.1f); load %s" % (
                    name, dt, th, statistics.median(eng), statistics.median(cpp), roof, loadavg()), flush=True)
            ver = {}
            for _ in range(a.reps):
                j = json.loads(must(sh([a.bench_forward, "--model", mdir, "--threads", 1, "--steps", 8, "--reps", 1,
                                        "--max-gamma", 8, "--verify-reps", 3, "--prefill", 0, "--no-stream"]),
                                    "bench_forward").stdout)
                for g in range(1, 9):
                    ver.setdefault(g, []).append(j["verify_cost_ratio_g%d" % g])
            rows.append({"kind": "verify", "model": name, "dtype": dt, "cost": {g: med(v) for g, v in ver.items()}})
            print("verify %s %s: %s" % (name, dt, " ".join("k%d %.2f" % (g, statistics.median(v)) for g, v in ver.items())),
                  flush=True)
    if not a.no_sd:
        for dt in DTYPES:
            tdir = export(a.sprinter, sources["regime-target"], tok, dt, os.path.join(work, "regime-target-%s" % dt))
            ddir = export(a.sprinter, sources["regime-draft"], tok, dt, os.path.join(work, "regime-draft-%s" % dt))
            e_ar, e_sd, e_acc, c_sd, c_acc = [], [], [], [], []
            for _ in range(a.reps):
                e = engine_rates(a.sprinter, tdir, ddir, "ar,sd", a.gamma, a.n, 1)
                e_ar.append(rate_of(e["ar"])), e_sd.append(rate_of(e["sd"])), e_acc.append(accept_of(e["sd"]))
                s, acc = llama_spec(tools, os.path.join(tdir, "model.gguf"), os.path.join(ddir, "model.gguf"), a.gamma, a.n,
                                    a.llama_memory)
                c_sd.append(s), c_acc.append(acc)
            rows.append({"kind": "sd", "dtype": dt, "gamma": a.gamma, "engine_ar_tok_s": med(e_ar),
                         "engine_sd_tok_s": med(e_sd), "engine_accept": statistics.median(e_acc),
                         "llamacpp_sd_tok_s": med(c_sd), "llamacpp_accept": statistics.median(c_acc),
                         "ratio": statistics.median(e / c for e, c in zip(e_sd, c_sd))})
            print("sd %s: engine %.1f tok/s (accept %.2f), llama.cpp %.1f (accept %.2f); load %s" % (
                dt, statistics.median(e_sd), statistics.median(e_acc), statistics.median(c_sd), statistics.median(c_acc),
                loadavg()), flush=True)
    res = {"generated": t0.isoformat(timespec="seconds"), "load_before": load0, "load_after": loadavg(), "n": a.n,
           "reps": a.reps, "prompt": PROMPT, "stream_gbs": bw, "llamacpp_tools": tools,
           "llamacpp_memory": a.llama_memory, "thp": thp_mode(), "rows": rows}
    with open(os.path.join(a.out_dir, "native.json"), "w") as f:
        json.dump(res, f, indent=1)
    with open(os.path.join(a.out_dir, "native.md"), "w") as f:
        f.write("# The engine beside llama.cpp built natively, same GGUF files\n\nGenerated %s by bench/bench_native.py; "
                "%d paired reps, median [min, max]; load average %s before, %s after; STREAM triad %s GB/s by threads. "
                "llama.cpp's weights: %s; transparent huge pages: %s.\n\n"
                % (res["generated"], a.reps, load0, res["load_after"], ", ".join("%d: %.1f" % (k, v) for k, v in bw.items()),
                   "read into memory in huge pages (--mmap 0, GLIBC_TUNABLES=glibc.malloc.hugetlb=1), as the engine's"
                   if a.llama_memory == "huge-pages" else "its default file map (4 kB pages)", res["thp"]))
        f.write("| model | dtype | threads | MB/token | roofline tok/s | engine tok/s | llama.cpp tok/s | engine / llama.cpp |\n"
                "|---|---|---:|---:|---:|---|---|---:|\n")
        for r in rows:
            if r["kind"] == "decode":
                e, c = r["engine_tok_s"], r["llamacpp_tok_s"]
                f.write("| %s | %s | %d | %.1f | %.1f | %.1f [%.1f, %.1f] | %.1f [%.1f, %.1f] | %.2fx |\n" % (
                    r["model"], r["dtype"], r["threads"], r["bytes"] / 1e6, r["roofline_tok_s"], e["median"], e["min"],
                    e["max"], c["median"], c["min"], c["max"], r["ratio"]))
        f.write("\nVerification cost of k tokens in one pass / one token (engine, 1 thread):\n\n| model | dtype | "
                + " | ".join("k=%d" % g for g in range(2, 9)) + " |\n|---|---|" + "---:|" * 7 + "\n")
        for r in rows:
            if r["kind"] == "verify":
                f.write("| %s | %s | %s |\n" % (r["model"], r["dtype"], " | ".join(
                    "%.2f" % r["cost"][g]["median"] for g in range(2, 9))))
        f.write("\nSpeculative decoding, regime pair, greedy, 1 thread, draft length %d:\n\n| dtype | engine AR tok/s | "
                "engine SD tok/s | engine accept | llama.cpp SD tok/s | llama.cpp accept | engine / llama.cpp |\n"
                "|---|---|---|---:|---|---:|---:|\n" % a.gamma)
        for r in rows:
            if r["kind"] == "sd":
                f.write("| %s | %.1f | %.1f [%.1f, %.1f] | %.2f | %.1f [%.1f, %.1f] | %.2f | %.2fx |\n" % (
                    r["dtype"], r["engine_ar_tok_s"]["median"], r["engine_sd_tok_s"]["median"],
                    r["engine_sd_tok_s"]["min"], r["engine_sd_tok_s"]["max"], r["engine_accept"],
                    r["llamacpp_sd_tok_s"]["median"], r["llamacpp_sd_tok_s"]["min"], r["llamacpp_sd_tok_s"]["max"],
                    r["llamacpp_accept"], r["ratio"]))
    print("wrote %s/native.json, native.md" % a.out_dir)


if __name__ == "__main__":
    main()
