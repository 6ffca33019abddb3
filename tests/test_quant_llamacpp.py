"""Q8_0 and GGUF loading against llama.cpp built natively (scripts/llamacpp-native.sh; exit 77 =
skipped when that build is absent: `scripts/llamacpp-native.sh` builds it once, 10-15 minutes).

Models: the trained regime target (Llama, GQA, untied), regime draft (Llama, tied) and default target
(GPT-2, tied), each exported by `sprinter export-gguf` as f32 and as q8_0, and quantized by
`llama-quantize F32.gguf Q8.gguf Q8_0` from the f32 export.

1. bytes: the engine's q8_0 file equals llama-quantize's tensor for tensor (names, ggml types, shapes
   and data bytes); the metadata may differ (llama-quantize rewrites general.* keys).
2. forward pass and perplexity on the same file and tokens: `llama-perplexity --kl-divergence-base`
   (KV cache f32, CTX-token chunks, the second half of each chunk scored) writes llama.cpp's tokens and
   its log-probabilities at every scored position (16-bit quantized over the top 16 nats; resolution
   <= 16 / 65535 = 2.4e-4); the engine loads the same GGUF file (a model directory holding
   config.json, the tokenizer and model.gguf) and runs the same chunks (BOS first where the file says
   add_bos_token, as llama-perplexity does). Flash attention off: llama.cpp's CPU flash attention
   rounds to f16 (its own log-probabilities move by up to 1e-2 between -fa on and off).
   - f32: max |log p_engine - log p_llama.cpp| <= F32_TOL over the top-16-nats entries;
   - q8_0 (llama-quantize's file): mean |log p_engine - log p_llama.cpp| no more than llama.cpp's own
     Q8_0 error, the mean |log p_llama.cpp(q8_0) - log p_llama.cpp(f32)| on the same positions (the
     engine keeps activations f32 where llama.cpp rounds them to Q8_0 too: each side's distance is one
     rounding of comparable size), and the max within Q8_MAX_TOL;
   - perplexity: |ppl_engine - ppl_llama.cpp| / ppl_llama.cpp <= 0.5% for every file, the engine's
     computed on llama.cpp's tokens and positions, llama.cpp's its "Final estimate".
   Control: the engine's f32 log-probabilities against llama.cpp's q8_0 ones differ by more than
   F32_TOL (the comparison sees a quantization).
usage: test_quant_llamacpp.py --sprinter BIN --source SRCDIR --work DIR
"""
import argparse
import json
import math
import os
import re
import shutil
import struct
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "gguf"))
import sweep_fixture as fx  # noqa: E402
from gguf_file import GGML_Q8_0, gguf_read  # noqa: E402

CTX, CHUNKS = 128, 4
# f32: llama.cpp's GELU (GPT-2) looks its input up in an f16 table (ggml-cpu vec.h GGML_GELU_FP16), which
# moves GPT-2's log-probabilities by ~2e-3 at most; Llama's agree to ~1.4e-4 (the 16-bit storage of its
# logits file is 2.4e-4 per step)
F32_TOL, Q8_MAX_TOL, PPL_REL = 5e-3, 0.25, 0.005


def sh(args, **kw):
    return subprocess.run([str(a) for a in args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          errors="replace", **kw)


def read_kld_base(path):
    """llama-perplexity --kl-divergence-base: n_ctx, n_vocab, tokens [n_chunk * n_ctx] and, per chunk,
    [n_ctx - 1 - n_ctx / 2] rows of log-probabilities (NaN below the top-16-nats window)."""
    with open(path, "rb") as f:
        b = f.read()
    assert b[:8] == b"_logits_", path + ": not a logits file"
    n_ctx, n_vocab, n_chunk = struct.unpack_from("<iii", b, 8)
    pos = 20
    tokens = np.frombuffer(b, dtype="<i4", count=n_chunk * n_ctx, offset=pos)
    pos += 4 * n_chunk * n_ctx
    nv = 2 * ((n_vocab + 1) // 2) + 4
    rows = n_ctx - 1 - n_ctx // 2
    raw = np.frombuffer(b, dtype="<u2", count=n_chunk * rows * nv, offset=pos).reshape(n_chunk, rows, nv)
    head = raw[:, :, :4].copy().view("<f4")  # [chunk, row, 2]: scale, min log-prob
    q = raw[:, :, 4:4 + n_vocab].astype(np.float64)
    lp = head[:, :, 1:2].astype(np.float64) + head[:, :, 0:1].astype(np.float64) * q
    lp[q == 0] = np.nan
    return n_ctx, n_vocab, tokens, lp


def llama_perplexity(tools, gguf, text, out):
    """llama-perplexity's estimate over the first CHUNKS chunks (its logits file, CHUNKS + 1 chunks, written
    to out). Its logger thread drops the lines still queued at exit (measured: the last chunk's running
    estimate and the final line missing in 2 of 8 runs under load, and 3 runs in a row in CI), so it runs
    one chunk more than is scored: the running estimate after chunk CHUNKS is written while the extra
    chunk is computed. Repeated (deterministic) if that line is still missing, at most 5 times; likewise
    when it exits non-zero with nothing on stderr (seen once in CI: the logger lost its error too), so
    that a failure is reported with its exit status and whatever it printed."""
    failures = []
    for _ in range(5):
        r = sh([os.path.join(tools, "llama-perplexity"), "-m", gguf, "-f", text, "-c", CTX, "-b", CTX, "-t", 2,
                "--chunks", CHUNKS + 1, "-ctk", "f32", "-ctv", "f32", "-fa", "off", "--no-repack", "--kl-divergence-base", out])
        if r.returncode != 0:
            failures.append("exit %d, stderr %r, stdout %r" % (r.returncode, r.stderr[-800:], r.stdout[-300:]))
            if r.stderr.strip():
                break
            continue
        running = dict(re.findall(r"\[(\d+)\]([\d.]+),", r.stdout))  # the running estimate after each chunk
        if str(CHUNKS) in running:
            return float(running[str(CHUNKS)])
        failures.append("exit 0, no running estimate after chunk %d" % CHUNKS)
    raise RuntimeError("llama-perplexity %s: %d runs failed: %s" % (gguf, len(failures), " | ".join(failures)))


def engine_logprobs(sprinter, model_dir, tokens, n_chunk, bos, work):
    """log softmax of the engine's logits at the scored positions of every chunk: [chunk, rows, V]."""
    out = []
    for c in range(n_chunk):
        ids = [int(t) for t in tokens[c * CTX:(c + 1) * CTX]]
        if bos is not None:
            ids[0] = bos
        f = os.path.join(work, "logits.f32")
        r = sh([sprinter, "logits", "--model", model_dir, "--ids", ",".join(map(str, ids)), "--all", "--out", f])
        if r.returncode != 0:
            raise RuntimeError("sprinter logits %s: %s" % (model_dir, r.stderr))
        lg = np.fromfile(f, dtype="<f4").astype(np.float64).reshape(CTX, -1)[CTX // 2:CTX - 1]
        m = lg.max(axis=1, keepdims=True)
        out.append(lg - m - np.log(np.exp(lg - m).sum(axis=1, keepdims=True)))
    return np.stack(out)


def nll_ppl(lp, tokens, n_chunk):
    nll, n = 0.0, 0
    for c in range(n_chunk):
        for i in range(lp.shape[1]):
            nll -= lp[c, i, tokens[c * CTX + CTX // 2 + i + 1]]
            n += 1
    return math.exp(nll / n)


def model_dir_with(src, gguf, dst):
    """dst: src's config.json and tokenizer files beside gguf as model.gguf."""
    shutil.rmtree(dst, ignore_errors=True)
    os.makedirs(dst)
    for fn in ("config.json", "vocab.json", "merges.txt", "tokenizer.json", "tokenizer_config.json"):
        if os.path.exists(os.path.join(src, fn)):
            shutil.copy(os.path.join(src, fn), dst)
    shutil.copy(gguf, os.path.join(dst, "model.gguf"))
    return dst


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sprinter", required=True)
    ap.add_argument("--source", required=True)
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    sprinter, src, work = os.path.abspath(a.sprinter), os.path.abspath(a.source), os.path.abspath(a.work)
    r = sh(["bash", os.path.join(src, "scripts", "llamacpp-native.sh"), "--where"])
    tools = r.stdout.strip()
    if r.returncode != 0 or not os.path.exists(os.path.join(tools, "llama-quantize")):
        print("SKIP: llama.cpp's native build is absent (scripts/llamacpp-native.sh builds it)")
        sys.exit(77)
    os.makedirs(work, exist_ok=True)
    t = fx.Checks("quant_llamacpp")
    text = os.path.join(work, "docs.txt")
    with open(text, "w") as out:
        for name in ("encyclopedic", "sentences"):
            with open(os.path.join(src, "data", "datasets", name + ".jsonl")) as f:
                for i, line in enumerate(f):
                    if i >= 60:
                        break
                    o = json.loads(line)
                    out.write((o["prompt"] + o["reference"]).replace("\n", " ") + "\n")
    models = {"regime-target": "regime/target", "regime-draft": "regime/draft", "default-target": "target"}
    for label, rel in models.items():
        d = os.path.join(src, "data", "models", rel)
        f32, eq8, lq8 = (os.path.join(work, "%s-%s.gguf" % (label, k)) for k in ("f32", "engine-q8_0", "llama-q8_0"))
        ok = True
        for path, dt in ((f32, "f32"), (eq8, "q8_0")):
            r = sh([sprinter, "export-gguf", "--model", d, "--out", path, "--dtype", dt])
            ok &= t.check(r.returncode == 0, "%s: export-gguf --dtype %s: %s" % (label, dt, r.stderr.strip()))
        r = sh([os.path.join(tools, "llama-quantize"), f32, lq8, "Q8_0", "2"])
        ok &= t.check(r.returncode == 0, "%s: llama-quantize: %s" % (label, r.stderr[-800:]))
        if not ok:
            continue
        # 1. bytes
        _, te = gguf_read(eq8)
        _, tl = gguf_read(lq8)
        differ = [n for n in tl if n not in te or te[n] != tl[n]]
        n_q8 = sum(1 for v in tl.values() if v[0] == GGML_Q8_0)
        t.check(set(te) == set(tl) and not differ and n_q8 > 0,
                "%s: engine q8_0 == llama-quantize tensor for tensor (%d tensors, %d Q8_0; differing: %s)"
                % (label, len(tl), n_q8, ", ".join(differ[:5]) or "none"))
        print("%s: %d tensors (%d Q8_0) byte-identical to llama-quantize's: %s" % (label, len(tl), n_q8, not differ))
        # 2. forward pass and perplexity on the same files and tokens
        res = {}
        for kind, g in (("f32", f32), ("q8_0", lq8)):
            base = os.path.join(work, "%s-%s.kld" % (label, kind))
            ppl_l = llama_perplexity(tools, g, text, base)
            n_ctx, V, tokens, lp_l = read_kld_base(base)
            lp_l = lp_l[:CHUNKS]  # the extra chunk llama_perplexity ran is not scored
            kv, _ = gguf_read(g)
            bos = kv.get("tokenizer.ggml.bos_token_id") if kv.get("tokenizer.ggml.add_bos_token") else None
            mdir = model_dir_with(d, g, os.path.join(work, "%s-%s" % (label, kind)))
            lp_e = engine_logprobs(sprinter, mdir, tokens, lp_l.shape[0], bos, work)
            ppl_e = nll_ppl(lp_e, tokens, lp_l.shape[0])
            res[kind] = (lp_l, lp_e)
            rel_diff = abs(ppl_e - ppl_l) / ppl_l
            t.check(rel_diff <= PPL_REL, "%s %s: perplexity engine %.5f, llama.cpp %.5f: relative %.2e > %g"
                    % (label, kind, ppl_e, ppl_l, rel_diff, PPL_REL))
            print("%s %s: ppl engine %.5f llama.cpp %.5f (relative %.2e), %d chunks of %d"
                  % (label, kind, ppl_e, ppl_l, rel_diff, lp_l.shape[0], n_ctx))
        lf, ef = res["f32"]
        lq, eq = res["q8_0"]
        mask = ~np.isnan(lf) & ~np.isnan(lq)
        d_f32 = np.abs(ef - lf)[mask]
        d_q8 = np.abs(eq - lq)[mask]
        own = np.abs(lq - lf)[mask]
        ctrl = np.abs(ef - lq)[mask]
        print("%s: |dlogp| f32 max %.2e; q8_0 engine vs llama.cpp mean %.2e max %.2e; llama.cpp q8_0 vs its f32 "
              "mean %.2e max %.2e (%d entries)" % (label, d_f32.max(), d_q8.mean(), d_q8.max(), own.mean(), own.max(),
                                                   mask.sum()))
        t.check(d_f32.max() <= F32_TOL, "%s: f32 log-probs max diff %.2e > %g" % (label, d_f32.max(), F32_TOL))
        t.check(d_q8.mean() <= own.mean() and d_q8.max() <= Q8_MAX_TOL,
                "%s: q8_0 log-probs engine vs llama.cpp mean %.2e (llama.cpp's own Q8_0 error %.2e), max %.2e (<= %g)"
                % (label, d_q8.mean(), own.mean(), d_q8.max(), Q8_MAX_TOL))
        t.check(ctrl.max() > F32_TOL, "%s: control: engine f32 vs llama.cpp q8_0 max %.2e must exceed %g"
                % (label, ctrl.max(), F32_TOL))
    t.finish()


if __name__ == "__main__":
    main()
