#!/usr/bin/python3
"""Measures PyTorch training throughput of candidate Llama shapes for the regime pair (what
train_llama.py's presets were chosen from). Each measurement runs in its own process (so the
OpenBLAS environment can differ), on random token windows of the train stream, batch 16 x 256.

  /usr/bin/python3 data/train/measure_llama.py [--threads 2] [--steps 20] [--only NAME ...]

Precision: bf16 autocast forward passes (train_llama.py's default; for "distill" both the
draft's and the teacher's) unless the name ends in -f32.
Kinds: "train" = one CE training step (forward + backward + AdamW); "teacher" = a no_grad forward
of a target shape (the distillation teacher's cost per token); "distill" = one draft distillation
step including the (random-init) teacher's forward. Reports tokens/s over --steps steps after 2
warm-up steps, the 1-minute load average before/after (the machine is shared: a load above the
thread count means the numbers are pessimistic), and the per-token forward FLOPs. One JSON line
per measurement on stdout.
"""
import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import train_llama  # noqa: E402  (imports no torch at module level)

T_A = dict(hidden=512, intermediate=1376, layers=6, heads=8, kv_heads=4, tied=False)
T_B = dict(T_A, layers=8)
T_C = dict(hidden=640, intermediate=1728, layers=4, heads=10, kv_heads=5, tied=False)
D_A = dict(hidden=128, intermediate=344, layers=2, heads=4, kv_heads=2, tied=True)
D_B = dict(D_A, layers=3)
D_C = dict(hidden=96, intermediate=256, layers=2, heads=3, kv_heads=1, tied=True)
# name -> (kind, shape, teacher shape); a "-f32" suffix: plain float32 instead of bf16 autocast;
# "-nocoretype": without OPENBLAS_CORETYPE=SkylakeX
SHAPES = {}
for _p in ("", "-f32"):
    SHAPES.update({
        "target-512x6" + _p: ("train", T_A, None),
        "target-512x8" + _p: ("train", T_B, None),
        "target-640x4" + _p: ("train", T_C, None),
        "teacher-512x6" + _p: ("teacher", T_A, None),
        "draft-128x2" + _p: ("distill", D_A, T_A),
        "draft-128x3" + _p: ("distill", D_B, T_A),
        "draft-96x2" + _p: ("distill", D_C, T_A),
        "draft-128x2-alone" + _p: ("train", D_A, None),
    })
SHAPES["target-512x6-f32-nocoretype"] = ("train", T_A, None)


def one(name, threads, steps):
    train_llama.env_setup(threads, coretype=not name.endswith("nocoretype"))
    import numpy as np
    import torch
    sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tokenizer"))
    import llama
    from train_gpt2 import token_stream
    torch.set_num_threads(threads)
    kind, shape, tshape = SHAPES[name]
    stream = token_stream("train", os.path.join(os.path.dirname(HERE), "models", "tokenizer"))
    P = dict(shape, steps=1000, batch=16, lr=1e-3, warmup=10, seed=1)
    cfg = train_llama.model_config(P, 2048, 2047)
    model, opt = train_llama.build(P, cfg)
    sched = train_llama.make_sched(opt, P)
    teacher = None
    if tshape is not None:
        tcfg = train_llama.model_config(dict(tshape, seed=2), 2048, 2047)
        teacher = llama.LlamaForCausalLM(tcfg)
        teacher.init_weights(2)
        teacher.eval()
    g = torch.Generator().manual_seed(5)
    t = torch.from_numpy(stream.astype(np.int64))
    ctx = train_llama.CTX

    def batch():
        offs = torch.randint(0, len(t) - ctx - 1, (16,), generator=g)
        return torch.stack([t[o:o + ctx + 1] for o in offs.tolist()])
    load0 = os.getloadavg()[0]
    t0 = c0 = 0.0
    precision = "f32" if "-f32" in name else "bf16"
    for i in range(steps + 2):
        if i == 2:
            t0, c0 = time.perf_counter(), time.process_time()
        x = batch()
        if kind == "teacher":
            with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16,
                                                 enabled=precision == "bf16"):
                model.eval()
                model(x[:, :-1])
        else:
            train_llama.train_step(model, opt, sched, x, teacher, precision=precision,
                                   teacher_precision=precision)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    tok = steps * 16 * ctx
    return {"name": name, "kind": kind, "params": llama.count_params(model),
            "f32_MB": round(4 * llama.count_params(model) / 1e6, 1),
            "fwd_MFLOP_per_token_ctx128": round(llama.forward_flops_per_token(cfg, 128) / 1e6, 3),
            "threads": threads, "steps": steps, "tokens_per_s": round(tok / wall, 1),
            "s_per_step": round(wall / steps, 3), "cpu_s_per_step": round(cpu / steps, 3),
            "cpu_s_per_wall_s": round(cpu / wall, 2),
            "loadavg_before": round(load0, 2), "loadavg_after": round(os.getloadavg()[0], 2),
            "precision": precision, "coretype": os.environ.get("OPENBLAS_CORETYPE")}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--only", nargs="*")
    ap.add_argument("--one", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.one:
        print(json.dumps(one(a.one, a.threads, a.steps)), flush=True)
        return
    for name in a.only or SHAPES:
        if name not in SHAPES:
            sys.exit(f"measure_llama: unknown shape {name} (known: {', '.join(SHAPES)})")
        env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_CORETYPE"}
        r = subprocess.run([sys.executable, __file__, "--one", name, "--threads", str(a.threads),
                            "--steps", str(a.steps)], env=env, stdout=subprocess.PIPE, text=True)
        if r.returncode != 0:
            sys.exit(f"measure_llama: {name} failed")
        sys.stdout.write(r.stdout)
        sys.stdout.flush()


if __name__ == "__main__":
    main()
