"""Shared fixture of the sweep tests: two tiny random GPT-2 models (vocab 269) carrying the GPT-2
BPE tokenizer fixture from tests/tokenizer/fixtures/gpt2 (256 byte tokens + merges + <|endoftext|>
= 269 ids), so the runner's text -> tokens path is exercised without a trained tokenizer, a small
JSONL dataset, and a spec writer. Also a tiny check counter that prints "NAME: N passed, M failed".
"""
import json
import re
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
TOKENIZER = os.path.join(HERE, "tokenizer", "fixtures", "gpt2")
VOCAB = 269


class Checks:
    def __init__(self, name):
        self.name, self.passed, self.failed = name, 0, 0

    def check(self, ok, what):
        if ok:
            self.passed += 1
        else:
            self.failed += 1
            print("FAIL: " + what, flush=True)
        return ok

    def finish(self):
        print("%s: %d passed, %d failed" % (self.name, self.passed, self.failed), flush=True)
        sys.exit(1 if self.failed else 0)


def make_models(sprinter, work):
    """Writes work/draft, work/target (with the tokenizer) and work/data.jsonl; returns work."""
    os.makedirs(work, exist_ok=True)
    cfgs = {
        "target": {"n_embd": 32, "n_layer": 2, "n_head": 4, "seed": 1},
        "draft": {"n_embd": 16, "n_layer": 1, "n_head": 2, "seed": 2},
    }
    for name, c in cfgs.items():
        cfg = {"model_type": "gpt2", "vocab_size": VOCAB, "n_embd": c["n_embd"], "n_layer": c["n_layer"],
               "n_head": c["n_head"], "n_positions": 128, "initializer_range": 0.1,
               "bos_token_id": VOCAB - 1, "eos_token_id": VOCAB - 1}
        cpath = os.path.join(work, name + ".json")
        with open(cpath, "w") as f:
            json.dump(cfg, f)
        out = os.path.join(work, name)
        shutil.rmtree(out, ignore_errors=True)
        subprocess.run([sprinter, "init-random", "--arch", "gpt2", "--config", cpath, "--seed", str(c["seed"]),
                        "--out", out], check=True, stdout=subprocess.DEVNULL)
        for fn in ("vocab.json", "merges.txt"):
            shutil.copy(os.path.join(TOKENIZER, fn), out)
    words = ["hello", "the", "test", "sprinter", "draft", "target", "token", "verifier", "all", "well"]
    with open(os.path.join(work, "data.jsonl"), "w") as f:
        for i in range(40):
            prompt = " ".join(words[(i * 7 + k) % len(words)] for k in range(2 + i % 4))
            f.write(json.dumps({"id": "ex%02d" % i, "prompt": prompt, "reference": " x", "source": "fixture"}) + "\n")
    return work


SPEC = """# sweep test spec (tiny random models)
[sweep]
name = {name}
methods = {methods}

[models]
draft = {work}/draft
target = {work}/target

[data]
datasets = {work}/data.jsonl
n_prompts = {n_prompts}
offset = 20

[decode]
max_new_tokens = {max_new}
temperature = 1.0

[grid]
seeds = 1, 2
lambda = 1.0, 1.5
tau = 0.3, 0.6
gamma = 3
max_run = 0
eta_fp = 0.2
eta_tp = 0.9

[verifier]
data = {work}/data.jsonl
n_prompts = 12
max_new = 8
seed = 3
"""


def write_spec(work, name="fixture", methods="ar, sd, sprinter, oracle-iid", n_prompts=3, max_new=8):
    path = os.path.join(work, name + ".ini")
    with open(path, "w") as f:
        f.write(SPEC.format(name=name, methods=methods, work=work, n_prompts=n_prompts, max_new=max_new))
    return path


def dump(dump_exe, out_dir):
    """(return code, canonical text, stderr) of sweep_dump on a results directory."""
    p = subprocess.run([dump_exe, out_dir], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       errors="replace")
    return p.returncode, p.stdout, p.stderr


def first_difference(a, b):
    la, lb = a.splitlines(), b.splitlines()
    for i, (x, y) in enumerate(zip(la, lb)):
        if x != y:
            return "line %d:\n  - %s\n  + %s" % (i + 1, x[:300], y[:300])
    return "lengths differ: %d vs %d lines" % (len(la), len(lb))


WITHHELD = re.compile(r"^no verdict: random-init models \[the check on these runs: (.*)\]$")


def unwrap_verdict(verdict):
    """(withheld, inner): a FINDINGS verdict withheld because the runs name random-init models
    (analysis/findings.c withhold_verdicts) and the check it wraps; (False, verdict) otherwise."""
    m = WITHHELD.match(verdict)
    return (True, m.group(1)) if m else (False, verdict)
