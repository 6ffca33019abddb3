"""The real-shape presets of the newer families against the parameter counts their publishers give.

`sprinter info --preset NAME` prints a preset's configuration and counts without writing weights
(params: every tensor of the config's tensor table, a tied embedding once; params_non_embedding:
without the token embedding and the LM head). Each count is checked against the published figure,
which carries k decimals in billions: the count must give that figure either rounded or truncated to
k decimals (model cards do both: Qwen2.5-7B's card says 7.61B and the Hugging Face Hub 7.62B for the
same 7,615,616,512 parameters). Negative control: for the tied presets, counting the embedding twice
(as an untied LM head would) must NOT give the published total, so the check sees the tying.
Also: the configuration lines the presets must carry (rope scaling, head_dim, tying), and that info
--preset writes nothing and fails in one line on an unknown or ambiguous name.
usage: test_presets.py --sprinter BIN
"""
import argparse
import math
import subprocess
import sys

# name: (published total, published non-embedding or None, source), figures in billions as printed
PUBLISHED = {
    "llama-3.2-1b": ("1.24", None, "Hugging Face Hub meta-llama/Llama-3.2-1B (Meta's card: 1.23B)"),
    "llama-3.1-8b": ("8.03", None, "Hugging Face Hub meta-llama/Llama-3.1-8B"),
    "qwen2.5-0.5b": ("0.49", "0.36", "Qwen/Qwen2.5-0.5B model card"),
    "qwen2.5-7b": ("7.61", "6.53", "Qwen/Qwen2.5-7B model card (Hub: 7.62B)"),
    "qwen3-0.6b": ("0.6", "0.44", "Qwen/Qwen3-0.6B model card"),
    "qwen3-8b": ("8.2", "6.95", "Qwen/Qwen3-8B model card"),
}
# what each config must say (the traits the families are known for)
TRAITS = {
    "llama-3.2-1b": {"arch": "llama", "tied_embeddings": "1", "rope_scaling": "llama3", "rope_scaling_factor": "32",
                     "rope_theta": "500000", "head_dim": "64", "n_kv_heads": "8", "vocab_size": "128256"},
    "llama-3.1-8b": {"arch": "llama", "tied_embeddings": "0", "rope_scaling": "llama3", "rope_scaling_factor": "8",
                     "rope_original_max_pos": "8192", "n_kv_heads": "8", "vocab_size": "128256"},
    "qwen2.5-0.5b": {"arch": "qwen2", "tied_embeddings": "1", "rope_theta": "1e+06", "vocab_size": "151936"},
    "qwen2.5-7b": {"arch": "qwen2", "tied_embeddings": "0", "vocab_size": "152064"},
    "qwen3-0.6b": {"arch": "qwen3", "tied_embeddings": "1", "head_dim": "128", "d_model": "1024", "n_heads": "16"},
    "qwen3-8b": {"arch": "qwen3", "tied_embeddings": "0", "head_dim": "128"},
}


def matches(count, figure):
    """count (parameters) gives figure (billions, k decimals) rounded half-up or truncated."""
    k = len(figure.split(".")[1]) if "." in figure else 0
    x = count / 1e9 * 10 ** k
    want = round(float(figure) * 10 ** k)
    return math.floor(x + 0.5) == want or math.floor(x) == want


def info(sprinter, *args):
    r = subprocess.run([sprinter, "info", *args], capture_output=True, text=True)
    return r, dict(line.split(" ", 1) for line in r.stdout.splitlines() if " " in line)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sprinter", required=True)
    a = ap.parse_args()
    passed = failed = 0

    def check(ok, what):
        nonlocal passed, failed
        print(("PASS " if ok else "FAIL ") + what, flush=True)
        passed += bool(ok)
        failed += not ok

    for name, (total, non_emb, source) in PUBLISHED.items():
        r, kv = info(a.sprinter, "--preset", name)
        if r.returncode != 0:
            check(False, "%s: info --preset rc=%d %s" % (name, r.returncode, r.stderr.strip()))
            continue
        n, ne = int(kv["params"]), int(kv["params_non_embedding"])
        check(matches(n, total), "%s: %d parameters give the published %sB (%s)" % (name, n, total, source))
        if non_emb:
            check(matches(ne, non_emb), "%s: %d non-embedding parameters give the published %sB" % (name, ne, non_emb))
        embed = int(kv["vocab_size"]) * int(kv["d_model"])
        if kv["tied_embeddings"] == "1":
            check(not matches(n + embed, total), "%s: negative control: with the tied embedding counted twice, "
                  "%d parameters do not give %sB" % (name, n + embed, total))
        check(int(kv["weight_bytes_bf16"]) == 2 * n, "%s: weight_bytes_bf16 = 2 x params" % name)
        bad = {k: (kv.get(k), v) for k, v in TRAITS[name].items() if kv.get(k) != v}
        check(not bad, "%s: configuration %s" % (name, "as published" if not bad else "differs: %s" % bad))

    r, _ = info(a.sprinter, "--preset", "tiny")
    check(r.returncode == 1 and r.stderr.count("\n") == 1 and "--arch" in r.stderr,
          "an ambiguous preset name asks for --arch in one line: %s" % r.stderr.strip())
    r, _ = info(a.sprinter, "--preset", "qwen9-1t")
    check(r.returncode == 1 and r.stderr.count("\n") == 1 and "qwen9-1t" in r.stderr,
          "an unknown preset is named in one line: %s" % r.stderr.strip())
    r, kv = info(a.sprinter, "--preset", "tiny", "--arch", "qwen3")
    check(r.returncode == 0 and kv.get("arch") == "qwen3" and int(kv["head_dim"]) * int(kv["n_heads"]) != int(kv["d_model"]),
          "qwen3 tiny: head_dim decoupled from hidden / heads (%s x %s vs %s)" % (
              kv.get("head_dim"), kv.get("n_heads"), kv.get("d_model")))
    print("presets: %d passed, %d failed" % (passed, failed))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
