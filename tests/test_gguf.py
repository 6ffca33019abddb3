"""`sprinter export-gguf` against llama.cpp (npm node-llama-cpp 3.21.1, its prebuilt CPU backend: a
production implementation written apart from this engine, a second forward-pass oracle beside
tests/oracle/ref_model.py).

1. installs node-llama-cpp@3.21.1 and its linux-x64 binaries (optional GPU builds left out) into
   WORK/npm (once; exit 77 = skipped when node >= 20 or npm is missing or the install fails);
2. exports to GGUF (f32): the trained regime pair (Llama, GQA, untied / tied), the trained default
   target (GPT-2), and random-init Llama (GQA, head_dim 32) and GPT-2 (untied head) checkpoints
   carrying the same 2048-token tokenizer;
3. tokenisation: llama.cpp's ids == the engine's on 300 dataset prompts (no BOS on either side);
4. for 5 prompts per model (the engine's ids, BOS first for Llama, as the engine's decoder does):
   llama.cpp's next-token distribution == softmax of the engine's logits within 1e-3 (max absolute
   difference over the vocabulary), and 12 greedy tokens equal the engine's greedy tokens (a
   difference is tolerated only at a near tie: the engine's top-2 probabilities within 1e-3; llama.cpp
   stops at EOS, so its sequence may be the engine's cut before an EOS); llama.cpp's KV cache in F32;
5. negative control: llama.cpp's distribution of one model against the engine's of another differs
   by more than 1e-2 (the comparison can fail); a bf16 export loads and stays within 5e-2;
6. GPT-Neo is refused with one line naming config.json.
usage: test_gguf.py --sprinter BIN --source SRCDIR --work DIR
"""
import argparse
import json
import math
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "gguf"))
import llamacpp as lc  # noqa: E402
import sweep_fixture as fx  # noqa: E402

PROB_TOL, TIE, N_GREEDY = 1e-3, 1e-3, 12
EOS = 2047  # <|endoftext|> of the 2048-token tokenizer every model here carries


sh = lc.sh


def llamacpp(npm_dir, job, work):
    return lc.run(npm_dir, job, os.path.join(work, "job.json"))


def softmax(logits):
    m = max(logits)
    e = [math.exp(x - m) for x in logits]
    z = sum(e)
    return [x / z for x in e]


def engine_probs(sprinter, model, ids):
    r = sh([sprinter, "logits", "--model", model, "--ids", ",".join(map(str, ids))])
    if r.returncode != 0:
        raise RuntimeError("sprinter logits: " + r.stderr)
    return softmax([float(x) for x in r.stdout.split()])


def engine_greedy(sprinter, model, ids, n):
    """Greedy tokens and, per step, the gap between the two most likely tokens."""
    ids, out, gaps = list(ids), [], []
    for _ in range(n):
        p = engine_probs(sprinter, model, ids)
        top = sorted(range(len(p)), key=lambda i: -p[i])[:2]
        out.append(top[0])
        gaps.append(p[top[0]] - p[top[1]])
        ids.append(top[0])
    return out, gaps


def make_random(sprinter, work, src, arch, cfg, seed):
    out = os.path.join(work, "random_" + arch)
    cpath = out + ".json"
    with open(cpath, "w") as f:
        json.dump(cfg, f)
    shutil.rmtree(out, ignore_errors=True)
    r = sh([sprinter, "init-random", "--arch", arch, "--config", cpath, "--seed", str(seed), "--out", out])
    if r.returncode != 0:
        raise RuntimeError("init-random: " + r.stderr)
    tok = os.path.join(src, "data", "models", "regime", "target")
    for fn in ("vocab.json", "merges.txt", "tokenizer.json"):
        shutil.copy(os.path.join(tok, fn), out)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sprinter", required=True)
    ap.add_argument("--source", required=True)
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    sprinter, src, work = os.path.abspath(a.sprinter), os.path.abspath(a.source), os.path.abspath(a.work)
    os.makedirs(work, exist_ok=True)
    npm_dir = os.path.join(work, "npm")
    why = lc.install(npm_dir)
    if why:
        print("SKIP: " + why)
        sys.exit(77)
    t = fx.Checks("gguf_llamacpp")
    models = {
        "regime-target (llama, GQA, untied)": os.path.join(src, "data", "models", "regime", "target"),
        "regime-draft (llama, tied)": os.path.join(src, "data", "models", "regime", "draft"),
        "default-target (gpt2)": os.path.join(src, "data", "models", "target"),
        "random llama (GQA, head_dim 32)": make_random(sprinter, work, src, "llama", {
            "model_type": "llama", "vocab_size": 2048, "hidden_size": 128, "intermediate_size": 256,
            "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 32,
            "max_position_embeddings": 128, "rms_norm_eps": 1e-5, "rope_theta": 10000.0,
            "tie_word_embeddings": False, "initializer_range": 0.05, "bos_token_id": 2047, "eos_token_id": 2047}, 3),
        "random gpt2 (untied)": make_random(sprinter, work, src, "gpt2", {
            "model_type": "gpt2", "vocab_size": 2048, "n_embd": 96, "n_layer": 2, "n_head": 4, "n_positions": 128,
            "tie_word_embeddings": False, "initializer_range": 0.05, "bos_token_id": 2047, "eos_token_id": 2047}, 4),
    }
    with open(os.path.join(src, "data", "datasets", "encyclopedic.jsonl")) as f:
        texts = [json.loads(line)["prompt"] for line in f][:300]
    ggufs = {}
    for name, d in models.items():
        out = os.path.join(work, "".join(c if c.isalnum() else "_" for c in name) + ".gguf")
        r = sh([sprinter, "export-gguf", "--model", d, "--out", out])
        t.check(r.returncode == 0 and os.path.getsize(out) > 0, "export-gguf %s: %s" % (name, (r.stdout + r.stderr).strip()))
        ggufs[name] = out
    # 3. tokenisation (every model carries the same tokenizer: once, on the regime target)
    name = "regime-target (llama, GQA, untied)"
    res = llamacpp(npm_dir, {"model": ggufs[name], "threads": 1, "texts": texts}, work)
    bad = 0
    for text, ids in zip(texts, res["tokens"]):
        r = sh([sprinter, "tokenize", "--model", models[name], "--text", text])
        bad += [int(x) for x in r.stdout.split()] != ids
    t.check(bad == 0 and len(res["tokens"]) == len(texts),
            "tokenisation: llama.cpp == engine on %d dataset prompts (%d differ)" % (len(texts), bad))
    # 4. next-token distributions and greedy tokens
    prompts_text = texts[:5]
    base = {}
    for name, d in models.items():
        llama = "llama" in name
        prompts = []
        for text in prompts_text:
            r = sh([sprinter, "tokenize", "--model", d, "--text", text])
            ids = [int(x) for x in r.stdout.split()][:40]
            prompts.append(([2047] if llama else []) + ids)
        res = llamacpp(npm_dir, {"model": ggufs[name], "threads": 1, "prompts": prompts, "n_greedy": N_GREEDY}, work)
        worst, greedy_bad, ties = 0.0, 0, 0
        for ids, p_cpp, g_cpp in zip(prompts, res["probs"], res["greedy"]):
            p = engine_probs(sprinter, d, ids)
            worst = max(worst, max(abs(x - y) for x, y in zip(p, p_cpp)) if len(p) == len(p_cpp) else 1.0)
            g, gaps = engine_greedy(sprinter, d, ids, N_GREEDY)
            if len(g_cpp) < len(g) and g[len(g_cpp)] == EOS:  # llama.cpp's generation ends at EOS, the engine's not
                g = g[:len(g_cpp)]
            k = next((i for i, (x, y) in enumerate(zip(g, g_cpp)) if x != y), None)
            if k is not None or len(g_cpp) != len(g):
                if k is not None and gaps[k] < TIE:
                    ties += 1
                else:
                    greedy_bad += 1
        base[name] = (prompts, res["probs"])
        t.check(worst <= PROB_TOL, "%s: llama.cpp next-token probabilities == engine softmax within %g on 5 prompts "
                "(max |diff| %.2e)" % (name, PROB_TOL, worst))
        t.check(greedy_bad == 0, "%s: %d greedy tokens equal on 5 prompts (%d prompts differ, %d at a near tie)" %
                (name, N_GREEDY, greedy_bad, ties))
    # 5. negative control and bf16
    (prompts, probs_cpp) = base["regime-target (llama, GQA, untied)"]
    p_other = engine_probs(sprinter, models["regime-draft (llama, tied)"], prompts[0])
    diff = max(abs(x - y) for x, y in zip(p_other, probs_cpp[0]))
    t.check(diff > 1e-2, "negative control: the target's llama.cpp distribution vs the draft's engine one differs "
            "(max |diff| %.3f)" % diff)
    bf = os.path.join(work, "regime-target.bf16.gguf")
    r = sh([sprinter, "export-gguf", "--model", models["regime-target (llama, GQA, untied)"], "--out", bf, "--dtype", "bf16"])
    ok = r.returncode == 0
    if ok:
        res = llamacpp(npm_dir, {"model": bf, "threads": 1, "prompts": prompts[:2], "n_greedy": 0}, work)
        d16 = max(max(abs(x - y) for x, y in zip(res["probs"][i], probs_cpp[i])) for i in range(2))
        ok = d16 <= 5e-2
    t.check(ok, "bf16 export loads in llama.cpp and stays within 5e-2 of the f32 distribution (%s)" %
            (("max |diff| %.3f" % d16) if r.returncode == 0 else r.stderr.strip()))
    # 6. GPT-Neo refused
    neo = os.path.join(work, "neo")
    shutil.rmtree(neo, ignore_errors=True)
    sh([sprinter, "init-random", "--arch", "gpt-neo", "--preset", "tiny", "--out", neo])
    r = sh([sprinter, "export-gguf", "--model", neo, "--out", os.path.join(work, "neo.gguf")])
    t.check(r.returncode == 1 and "GPT-Neo" in r.stderr and "config.json" in r.stderr and len(r.stderr.strip().splitlines()) == 1
            and not os.path.exists(os.path.join(work, "neo.gguf")),
            "GPT-Neo is refused with one line naming config.json, no file left: %r" % r.stderr.strip())
    t.finish()


if __name__ == "__main__":
    main()
