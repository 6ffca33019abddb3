#!/usr/bin/python3
"""Two builds of the engine side by side on one model: bench_forward of build A and of build B in paired
rounds (A then B, then B then A, ...), and for each figure the ratio B / A taken within each round.
On a shared machine whose memory bandwidth drifts by 10-20% over minutes, the within-round ratio is
what is comparable; the per-build medians are printed beside it.

  /usr/bin/python3 bench/bench_ab.py --a BUILD_A --b BUILD_B --model DIR [--rounds 8] [--threads 1]
        [--max-gamma 8] [--prefill 0] [--out FILE.json]

Figures: verify ms for g = 1 .. max-gamma tokens in one pass, decode tok/s, prefill rows/s (when
--prefill > 0), and each build's g7 / g1 (verification of 7 tokens against one). Ratios are printed
as median [first quartile, third quartile] over rounds."""
import argparse
import json
import os
import statistics
import subprocess
import sys


def bench(build, a):
    """One bench_forward run of a build; returns {figure: value}."""
    cmd = [os.path.join(build, "bench_forward"), "--model", a.model, "--threads", str(a.threads), "--steps", "8",
           "--reps", "2", "--max-gamma", str(a.max_gamma), "--verify-reps", "5", "--prefill", str(a.prefill),
           "--prefill-reps", "2", "--no-stream"]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit("bench_ab: %s failed: %s" % (" ".join(cmd), p.stderr.strip()[-500:]))
    j = json.loads(p.stdout)
    fig = {"verify_ms_g%d" % g: j["verify_ms"]["g%d" % g] for g in range(1, a.max_gamma + 1)}
    fig["decode_tok_s"] = j["tokens_per_s_median"]
    if a.prefill > 0:
        fig["prefill_rows_s"] = j["prefill_tokens_per_s"]
    if a.max_gamma >= 7:
        fig["g7_over_g1"] = fig["verify_ms_g7"] / fig["verify_ms_g1"]
    return fig


def quartiles(xs):
    xs = sorted(xs)
    n = len(xs)
    return {"median": statistics.median(xs), "q1": xs[n // 4], "q3": xs[(3 * n) // 4], "n": n}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--a", required=True, help="build directory A (holds bench_forward)")
    ap.add_argument("--b", required=True, help="build directory B")
    ap.add_argument("--model", required=True, help="model directory (config.json + weights or model.gguf)")
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--max-gamma", type=int, default=8)
    ap.add_argument("--prefill", type=int, default=0)
    ap.add_argument("--out", help="write the rounds and the summary as JSON")
    a = ap.parse_args()
    if a.rounds < 2 or not 1 <= a.max_gamma <= 8:
        sys.exit("bench_ab: --rounds must be >= 2 and --max-gamma 1..8")
    runs = []
    for r in range(a.rounds):
        order = ["a", "b"] if r % 2 == 0 else ["b", "a"]
        got = {k: bench(a.a if k == "a" else a.b, a) for k in order}
        runs.append(got)
        print("round %d of %d done; load %s" % (r + 1, a.rounds, open("/proc/loadavg").read().split()[0]),
              file=sys.stderr, flush=True)
    summary = {}
    for name in runs[0]["a"]:
        summary[name] = {"a": statistics.median(x["a"][name] for x in runs),
                         "b": statistics.median(x["b"][name] for x in runs),
                         "b_over_a": quartiles([x["b"][name] / x["a"][name] for x in runs])}
        s = summary[name]
        q = s["b_over_a"]
        print("%-16s A %9.3f  B %9.3f  B/A per round %.3f [%.3f, %.3f]" % (name, s["a"], s["b"], q["median"], q["q1"], q["q3"]))
    if a.out:
        with open(a.out, "w") as f:
            json.dump({"a": a.a, "b": a.b, "model": a.model, "threads": a.threads, "rounds": runs, "summary": summary}, f,
                      indent=1)


if __name__ == "__main__":
    main()
