#!/usr/bin/env python3
"""`sprinter export-gguf` writes metadata that tells the truth (issue 27, class 7), without llama.cpp.

- tokenizer.ggml.add_bos_token / add_eos_token are what the engine's tokenizer does (tokenizer_config.json
  add_bos_token / add_eos_token, else the tokenizer family's default), not the architecture's habit: a
  Llama checkpoint with a GPT-2 byte-level tokenizer gets false (the engine adds no BOS), true when its
  tokenizer_config.json says so; add_eos_token: true is written as true;
- a SentencePiece-style tokenizer.json ("▁" spaces, <0xNN> byte tokens), which export-gguf would
  write as tokenizer.ggml.model "gpt2" with byte tokens typed normal, is refused with one line naming
  tokenizer.json, and no file is left.
The GGUF key-value section is read by the small reader below (GGUF v3: ggml's gguf.cpp).
usage: test_gguf_meta.py --sprinter BIN --source SRCDIR --work DIR
"""
import argparse
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "gguf"))
import sweep_fixture as fx  # noqa: E402
from gguf_file import gguf_kv  # noqa: E402,F401 (test_gguf_tokenizer imports it from here)

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sprinter", required=True)
    ap.add_argument("--source", required=True)
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    S, work = os.path.abspath(a.sprinter), os.path.abspath(a.work)
    fixtures = os.path.join(os.path.abspath(a.source), "tests", "tokenizer", "fixtures")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    t = fx.Checks("gguf_metadata")

    def model(name, arch, files, config=None):
        d = os.path.join(work, name)
        cfg = {"model_type": "llama", "vocab_size": 300, "hidden_size": 32, "intermediate_size": 64,
               "num_hidden_layers": 1, "num_attention_heads": 2, "num_key_value_heads": 2,
               "max_position_embeddings": 64, "rms_norm_eps": 1e-5, "tie_word_embeddings": False,
               "bos_token_id": 1, "eos_token_id": 2} if arch == "llama" else \
              {"model_type": "gpt2", "vocab_size": 300, "n_embd": 32, "n_layer": 1, "n_head": 2, "n_positions": 64,
               "bos_token_id": 268, "eos_token_id": 268}
        cpath = d + ".json"
        with open(cpath, "w") as f:
            json.dump(cfg, f)
        r = subprocess.run([S, "init-random", "--arch", arch, "--config", cpath, "--seed", "1", "--out", d],
                           capture_output=True, text=True)
        if r.returncode:
            raise RuntimeError(r.stderr)
        for fn in files:
            shutil.copy(os.path.join(fixtures, fn), d)
        if config is not None:
            with open(os.path.join(d, "tokenizer_config.json"), "w") as f:
                json.dump(config, f)
        return d

    def export(d):
        out = d + ".gguf"
        r = subprocess.run([S, "export-gguf", "--model", d, "--out", out], capture_output=True, text=True)
        return r, out

    cases = [  # name, arch, tokenizer files, tokenizer_config.json, add_bos_token, add_eos_token
        ("llama-gpt2tok", "llama", ["gpt2/vocab.json", "gpt2/merges.txt"], None, False, False),
        ("llama-gpt2tok-bos", "llama", ["gpt2/vocab.json", "gpt2/merges.txt"], {"add_bos_token": True}, True, False),
        ("llama-gpt2tok-eos", "llama", ["gpt2/vocab.json", "gpt2/merges.txt"], {"add_eos_token": True}, False, True),
        ("gpt2", "gpt2", ["gpt2/vocab.json", "gpt2/merges.txt"], None, False, False),
        ("gpt2-bos", "gpt2", ["gpt2/vocab.json", "gpt2/merges.txt"], {"add_bos_token": True}, True, False),
    ]
    for name, arch, files, cfg, bos, eos in cases:
        d = model(name, arch, files, cfg)
        r, out = export(d)
        kv = gguf_kv(out) if r.returncode == 0 else {}
        got = (kv.get("tokenizer.ggml.add_bos_token"), kv.get("tokenizer.ggml.add_eos_token"))
        t.check(r.returncode == 0 and got == (bos, eos),
                "%s (tokenizer_config %s): add_bos_token, add_eos_token = %s, want %s %s" %
                (name, cfg, got, (bos, eos), r.stderr.strip()))

    for fixture in ("llama", "llama_metaspace"):
        d = model("llama-spm-" + fixture, "llama", [fixture + "/tokenizer.json"])
        r, out = export(d)
        lines = r.stderr.strip().splitlines()
        t.check(r.returncode == 1 and len(lines) == 1 and os.path.join(d, "tokenizer.json") in lines[0] and
                "SentencePiece" in lines[0] and not os.path.exists(out) and not os.path.exists(out + ".tmp"),
                "SentencePiece-style tokenizer.json (%s) refused with one line naming it, no file: exit %d %r" %
                (fixture, r.returncode, r.stderr.strip()))
    t.finish()


if __name__ == "__main__":
    main()
