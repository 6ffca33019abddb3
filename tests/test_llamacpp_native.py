"""Forward oracle: llama.cpp built natively from the source node-llama-cpp@3.21.1 ships
(scripts/llamacpp-native.sh, once, into a cache outside the checkout) against the engine and the
PyTorch reference (tests/oracle/ref_model.py), on random-init tiny checkpoints of the newer
architectures exported with `sprinter export-gguf`.

1. scripts/llamacpp-native.sh builds or finds the llama.cpp build (exit 77 = skipped only when that
   is impossible here: no C/C++ compiler, cmake, git or npm, or npm cannot fetch the package);
2. tests/gguf/llamacpp_logits.c is compiled against its static libraries (libllama.a, libggml*.a):
   llama.cpp's logits for every position of a token-id sequence, one batch or one token per call
   (its KV cache), F32 cache, no flash attention;
3. per model (init-random f32 -> export-gguf f32 with the GPT-2 test tokenizer): Llama 3 with
   rope_scaling llama3 (original_max_position_embeddings 64, sequences of 90 tokens), Llama with
   linear scaling, Qwen2.5 (q/k/v biases), Qwen3 (q/k norm, head_dim 16 != hidden / heads) and
   Qwen3 without a head_dim key (128): max |logit difference| <= 1e-4 between llama.cpp (batch and
   step) and the engine, and between llama.cpp and the float64 PyTorch reference;
4. negative controls, each of which must differ by more than 1e-2: llama.cpp on the Llama 3 model
   exported without its rope_scaling (no rope_freqs tensor) against the engine on the real one; the
   PyTorch reference with rope scaling dropped, q/k norm skipped or q/k/v biases dropped against
   llama.cpp;
5. export-gguf refuses what llama.cpp cannot express (llama3 scaling on qwen2) in one line.
usage: test_llamacpp_native.py --sprinter BIN --source SRCDIR --work DIR
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "oracle"))
import ref_model  # noqa: E402

TOL, NEG = 1e-4, 1e-2
TOKENIZER = os.path.join(HERE, "tokenizer", "fixtures", "gpt2")  # 269 ids, the tiny presets' vocabulary
N_IDS = 90  # past the Llama 3 tiny preset's original_max_position_embeddings (64)


def sh(args, **kw):
    return subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace", **kw)


def skip(why):
    print("SKIP: " + why, flush=True)
    sys.exit(77)


def llamacpp_build(source):
    """The build's root (its bin folder's parent's parent), building it if needed."""
    missing = [t for t in ("cc", "c++", "cmake", "git", "npm") if not shutil.which(t)]
    if missing:
        skip("cannot build llama.cpp here: %s missing (scripts/install-deps.sh --test)" % ", ".join(missing))
    t0 = time.time()
    r = sh(["bash", os.path.join(source, "scripts", "llamacpp-native.sh")])
    if r.returncode != 0:
        cache = os.environ.get("SPRINTER_CACHE") or os.path.join(
            os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "sprinter")
        bundle = os.path.join(cache, "npm-node-llama-cpp-3.21.1", "node_modules", "node-llama-cpp", "llama",
                              "gitRelease.bundle")
        if not os.path.exists(bundle):  # the script's own cache layout: npm could not fetch the source
            skip("npm could not fetch node-llama-cpp for its llama.cpp source: " + r.stderr.strip()[-300:])
        print(r.stderr[-3000:])
        raise SystemExit("FAIL: scripts/llamacpp-native.sh exited %d" % r.returncode)
    bin_dir = r.stdout.strip().splitlines()[-1]
    root = os.path.dirname(os.path.dirname(bin_dir))
    cold = os.path.join(root, "cold_build_seconds")
    print("# llama.cpp build %s (%.0f s now; cold build took %s s)" % (
        root, time.time() - t0, open(cold).read().strip() if os.path.exists(cold) else "?"), flush=True)
    return root


def compile_logits(root, work):
    out = os.path.join(work, "llamacpp_logits")
    libs = [os.path.join(root, "build", p) for p in ("src/libllama.a", "ggml/src/libggml.a",
                                                      "ggml/src/libggml-cpu.a", "ggml/src/libggml-base.a")]
    r = sh(["cc", "-O2", "-std=c11", "-Wall", "-Wextra", "-Werror", "-o", out,
            os.path.join(HERE, "gguf", "llamacpp_logits.c"), "-I", os.path.join(root, "src", "include"),
            "-I", os.path.join(root, "src", "ggml", "include"), *libs, "-lstdc++", "-lgomp", "-lm", "-lpthread"])
    if r.returncode != 0:
        raise SystemExit("FAIL: compiling llamacpp_logits.c: " + r.stderr[-2000:])
    return out


class Case:
    def __init__(self, sprinter, work, logits_bin):
        self.sp, self.work, self.bin = sprinter, work, logits_bin
        self.passed = self.failed = 0

    def check(self, ok, what):
        print(("PASS " if ok else "FAIL ") + what, flush=True)
        if ok:
            self.passed += 1
        else:
            self.failed += 1

    def model(self, key, arch, preset=None, config=None):
        out = os.path.join(self.work, key)
        shutil.rmtree(out, ignore_errors=True)
        args = [self.sp, "init-random", "--arch", arch, "--seed", "23", "--out", out]
        if preset:
            args += ["--preset", preset]
        else:
            cpath = out + ".json"
            with open(cpath, "w") as f:
                json.dump(config, f)
            args += ["--config", cpath]
        r = sh(args)
        if r.returncode != 0:
            raise RuntimeError("init-random: " + r.stderr)
        return out

    def export(self, model, name):
        g = os.path.join(self.work, name + ".gguf")
        r = sh([self.sp, "export-gguf", "--model", model, "--tokenizer", TOKENIZER, "--out", g])
        if r.returncode != 0:
            raise RuntimeError("export-gguf: " + r.stderr)
        return g

    def llamacpp(self, gguf, ids, step=False):
        out = gguf + (".step" if step else "") + ".f32"
        r = sh([self.bin, gguf, ",".join(map(str, ids)), out] + (["step"] if step else []), timeout=300)
        if r.returncode != 0:
            raise RuntimeError("llamacpp_logits: " + r.stderr[-1500:])
        return np.fromfile(out, "<f4").reshape(len(ids), -1)

    def engine(self, model, ids):
        out = os.path.join(self.work, os.path.basename(model) + ".engine.f32")
        r = sh([self.sp, "logits", "--model", model, "--ids", ",".join(map(str, ids)), "--all", "--out", out])
        if r.returncode != 0:
            raise RuntimeError("sprinter logits: " + r.stderr)
        return np.fromfile(out, "<f4").reshape(len(ids), -1)


def maxdiff(a, b):
    return float(np.abs(a.astype(np.float64) - b).max()) if a.shape == b.shape else float("inf")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sprinter", required=True)
    ap.add_argument("--source", required=True)
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    root = llamacpp_build(a.source)
    t0 = time.time()
    C = Case(os.path.abspath(a.sprinter), a.work, compile_logits(root, a.work))
    rng = np.random.default_rng(28)
    ids = [int(x) for x in rng.integers(0, 269, N_IDS)]

    cfgs = {
        "llama_linear": ("llama", None, {
            "model_type": "llama", "hidden_size": 48, "num_hidden_layers": 2, "num_attention_heads": 6,
            "num_key_value_heads": 2, "intermediate_size": 88, "vocab_size": 269, "max_position_embeddings": 128,
            "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "rope_scaling": {"type": "linear", "factor": 2.5},
            "hidden_act": "silu", "initializer_range": 0.1}),
        "qwen3_hd128": ("qwen3", None, {
            "model_type": "qwen3", "hidden_size": 48, "num_hidden_layers": 2, "num_attention_heads": 4,
            "num_key_value_heads": 2, "intermediate_size": 64, "vocab_size": 269, "max_position_embeddings": 128,
            "rms_norm_eps": 1e-6, "rope_theta": 1000000.0, "tie_word_embeddings": True, "initializer_range": 0.1}),
    }
    models = {"llama3_tiny": ("llama", "llama-3-tiny", None), "qwen2_tiny": ("qwen2", "tiny", None),
              "qwen3_tiny": ("qwen3", "tiny", None), **cfgs}
    lc = {}
    for key, (arch, preset, cfg) in models.items():
        try:
            m = C.model(key, arch, preset, cfg)
            g = C.export(m, key)
            batch, step = C.llamacpp(g, ids), C.llamacpp(g, ids, step=True)
            eng = C.engine(m, ids)
            ref, _ = ref_model.forward(m, ids)
        except Exception as e:  # noqa: BLE001
            C.check(False, "%s: %s" % (key, e))
            continue
        lc[key] = (m, batch)
        d_eng, d_step, d_ref = maxdiff(batch, eng), maxdiff(step, eng), maxdiff(batch, ref)
        C.check(max(d_eng, d_step, d_ref) <= TOL,
                "%s (%s): n=%d V=%d max|llama.cpp - engine| %.2e (step %.2e), max|llama.cpp - PyTorch| %.2e, "
                "max|logit| %.2f" % (key, arch, len(ids), batch.shape[1], d_eng, d_step, d_ref, np.abs(ref).max()))

    # negative controls: each must show the comparison can fail
    if "llama3_tiny" in lc:
        m, batch = lc["llama3_tiny"]
        nos = os.path.join(a.work, "llama3_tiny_noscale")
        shutil.rmtree(nos, ignore_errors=True)
        shutil.copytree(m, nos)
        with open(os.path.join(nos, "config.json")) as f:
            cfg = json.load(f)
        cfg["rope_scaling"] = None
        with open(os.path.join(nos, "config.json"), "w") as f:
            json.dump(cfg, f)
        try:
            d = maxdiff(C.llamacpp(C.export(nos, "llama3_tiny_noscale"), ids), C.engine(m, ids))
            C.check(d > NEG, "negative control: llama.cpp without rope_freqs vs the engine with llama3 scaling "
                    "differ by %.2e (> %g)" % (d, NEG))
        except Exception as e:  # noqa: BLE001
            C.check(False, "negative control (rope_scaling dropped): %s" % e)
    for key, mut in (("llama3_tiny", "no_rope_scaling"), ("llama_linear", "no_rope_scaling"),
                     ("qwen3_tiny", "no_qk_norm"), ("qwen2_tiny", "no_qkv_bias")):
        if key not in lc:
            C.check(False, "negative control %s[%s]: model missing" % (key, mut))
            continue
        m, batch = lc[key]
        d = maxdiff(batch, ref_model.forward(m, ids, mutate=(mut,))[0])
        C.check(d > NEG, "negative control: llama.cpp vs PyTorch[%s] on %s differ by %.2e (> %g)" % (mut, key, d, NEG))

    # what llama.cpp cannot express is refused in one line
    if "qwen2_tiny" in lc:
        bad = os.path.join(a.work, "qwen2_llama3")
        shutil.rmtree(bad, ignore_errors=True)
        shutil.copytree(lc["qwen2_tiny"][0], bad)
        with open(os.path.join(bad, "config.json")) as f:
            cfg = json.load(f)
        cfg["rope_scaling"] = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                               "original_max_position_embeddings": 64}
        with open(os.path.join(bad, "config.json"), "w") as f:
            json.dump(cfg, f)
        out = os.path.join(a.work, "qwen2_llama3.gguf")
        r = sh([C.sp, "export-gguf", "--model", bad, "--tokenizer", TOKENIZER, "--out", out])
        C.check(r.returncode == 1 and r.stderr.count("\n") == 1 and "config.json" in r.stderr
                and "llama3" in r.stderr and not os.path.exists(out),
                "export-gguf refuses llama3 rope scaling on qwen2: rc=%d %s" % (r.returncode, r.stderr.strip()))

    print("# %.1f s after the build" % (time.time() - t0))
    print("llamacpp_native_oracle: %d passed, %d failed" % (C.passed, C.failed))
    sys.exit(1 if C.failed else 0)


if __name__ == "__main__":
    main()
