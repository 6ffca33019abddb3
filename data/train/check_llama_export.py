#!/usr/bin/python3
"""Checks data/train/llama.py's export against two independent forwards: the C engine
(`sprinter logits --all --out`) and tests/oracle/ref_model.py's llama_forward (float64).

  /usr/bin/python3 data/train/check_llama_export.py [--sprinter build/sprinter] [--model DIR ...]

Without --model: random-initialised tiny Llamas (GQA and MHA, tied and untied head, default and
non-default rope_theta / rms_norm_eps, head_dim 8..32) are built with llama.py, saved with
save_hf_dir() and their logits at every position of a 64-token sequence compared. Weights are
drawn larger than the training init (norm weights 1 + N(0, 0.1)) so logits are O(1-10) and a wrong
RoPE / GQA mapping / norm would show. With --model DIR: the given exported directories instead.
Passes when max |logit difference| <= --tol (1e-4) for PyTorch-vs-C, PyTorch-vs-reference and
C-vs-reference; exits 1 naming the first mismatch. Also checks the safetensors file names are
exactly HF LlamaForCausalLM's and that load_hf_dir() round-trips the weights bit-exactly.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "oracle"))
import llama  # noqa: E402
import ref_model  # noqa: E402

CONFIGS = [
    # (name, hidden, inter, layers, heads, kv, tied, rope_theta, eps, vocab)
    ("gqa-untied", 64, 172, 2, 4, 2, False, 10000.0, 1e-5, 2048),
    ("gqa-tied-theta", 96, 256, 3, 6, 2, True, 500000.0, 1e-6, 2048),
    ("mha-untied", 64, 128, 2, 2, 2, False, 10000.0, 1e-5, 300),
    ("mqa-tied", 128, 344, 2, 4, 1, True, 10000.0, 1e-5, 2048),
]
NAME_RE = re.compile(r"^(lm_head\.weight|model\.embed_tokens\.weight|model\.norm\.weight|"
                     r"model\.layers\.\d+\.(input_layernorm|post_attention_layernorm)\.weight|"
                     r"model\.layers\.\d+\.self_attn\.[qkvo]_proj\.weight|"
                     r"model\.layers\.\d+\.mlp\.(gate|up|down)_proj\.weight)$")


def fail(msg):
    sys.exit(f"check_llama_export: {msg}")


def random_model(spec, seed):
    name, d, inter, L, H, KV, tied, theta, eps, V = spec
    cfg = llama.make_config(V, d, inter, L, H, KV, 128, V - 1, tie_word_embeddings=tied,
                            rms_norm_eps=eps, rope_theta=theta)
    torch.manual_seed(seed)
    m = llama.LlamaForCausalLM(cfg)
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for n, p in m.named_parameters():
            if n.endswith("norm.weight"):
                p.copy_(1.0 + 0.1 * torch.randn(p.shape, generator=g))
            elif "embed_tokens" in n or n == "lm_head.weight":
                p.copy_(0.5 * torch.randn(p.shape, generator=g))
            else:
                p.copy_(torch.randn(p.shape, generator=g) / p.shape[1] ** 0.5)
    m.eval()
    return cfg, m


def c_logits(sprinter, d, ids, V, step=False):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "logits.f32")
        cmd = [sprinter, "logits", "--model", d, "--ids", ",".join(map(str, ids)), "--all",
               "--out", out] + (["--step"] if step else [])
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if r.returncode != 0:
            fail(f"{d}: sprinter logits failed: {r.stderr.strip()}")
        return np.fromfile(out, dtype="<f4").reshape(len(ids), V).astype(np.float64)


def check_dir(d, model, cfg, sprinter, tol, seed, n_ids=64):
    V = cfg["vocab_size"]
    names = set(llama.load_safetensors(os.path.join(d, "model.safetensors")))
    bad = sorted(n for n in names if not NAME_RE.match(n))
    if bad:
        fail(f"{d}: tensor names not HF LlamaForCausalLM's: {bad[:3]}")
    if ("lm_head.weight" in names) == bool(cfg.get("tie_word_embeddings")):
        fail(f"{d}: lm_head.weight presence does not match tie_word_embeddings")
    back = llama.load_hf_dir(d)
    for (k, a), (k2, b) in zip(model.state_dict().items(), back.state_dict().items()):
        if k != k2 or not torch.equal(a, b):
            fail(f"{d}: load_hf_dir round trip differs at {k}")
    rng = np.random.default_rng(seed)
    n = min(n_ids, cfg["max_position_embeddings"])
    ids = [int(x) for x in rng.integers(0, V, n)]
    with torch.no_grad():
        pt = model(torch.tensor([ids])).double().numpy()[0]
    ref, _ = ref_model.forward(d, ids)
    res = {"pytorch-vs-ref": np.abs(pt - ref).max()}
    if sprinter:
        c = c_logits(sprinter, d, ids, V)
        cs = c_logits(sprinter, d, ids[:24], V, step=True)
        res["c-vs-ref"] = np.abs(c - ref).max()
        res["pytorch-vs-c"] = np.abs(pt - c).max()
        res["c-step-vs-ref"] = np.abs(cs - ref[:24]).max()
    scale = np.abs(ref).max()
    line = ", ".join(f"{k} {v:.2e}" for k, v in res.items())
    print(f"check_llama_export: {os.path.basename(d)}: max|logit| {scale:.2f}; {line}", flush=True)
    for k, v in res.items():
        if not v <= tol:
            fail(f"{d}: {k} max abs difference {v:.3e} > {tol:g}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sprinter", default=os.path.join(ROOT, "build", "sprinter"))
    ap.add_argument("--model", action="append", help="check an exported directory instead")
    ap.add_argument("--tol", type=float, default=1e-4)
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    t0 = time.time()
    sprinter = a.sprinter if os.path.exists(a.sprinter) else None
    if sprinter is None:
        print(f"check_llama_export: {a.sprinter} missing: C engine comparison SKIPPED "
              "(build it: cmake --build build --target sprinter)", flush=True)
    if a.model:
        for i, d in enumerate(a.model):
            m = llama.load_hf_dir(d)
            check_dir(d, m, m.cfg, sprinter, a.tol, 100 + i, n_ids=128)
    else:
        with tempfile.TemporaryDirectory() as tmp:
            for i, spec in enumerate(CONFIGS):
                cfg, m = random_model(spec, 10 + i)
                d = os.path.join(tmp, spec[0])
                llama.save_hf_dir(m, cfg, d)
                check_dir(d, m, cfg, sprinter, a.tol, 100 + i)
    print(f"check_llama_export: OK ({time.time() - t0:.1f}s)")
    if sprinter is None:
        sys.exit(0)


if __name__ == "__main__":
    main()
