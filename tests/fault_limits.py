#!/usr/bin/env python3
"""Limits (issue 8): inputs that claim more than they hold, or ask for more than the model can do, get
one clear error line and exit 1, and never an allocation of the size they claim (peak RSS of every
command stays under RSS_MB; the model files here are a few kB). Broken model files in general are
covered by tests/bad_input.py; this adds:

  - model.safetensors claiming a tensor of 4 TB in a 4 kB file, and shapes whose product overflows;
  - config.json with an absurd vocab_size (1e12) and one at the accepted maximum (2^22) over tiny
    weights (the shape check refuses it before anything of that size is allocated);
  - tokenizer.json with a token id of 2^31; merges.txt naming unknown tokens; a merges.txt of a million
    lines (accepted: the table grows with the file, not with anything it claims);
  - a verifier collect file (HDF5) whose columns claim 2^26 x 16 floats that were never written
    (fuzz/corpus/h5/bad-huge-unwritten-collect.h5): train-verifier refuses it;
  - prompts longer than the context window and max_new beyond it: generate and decode refuse; a
    sweep refuses max_new_tokens >= the context before any run, and truncates over-long prompts to
    their last tokens (flagged prompt_truncated = 1 in the prompts table), as documented in runner.c.

usage: fault_limits.py --sprinter BIN --dump SWEEP_DUMP --work DIR [--shim LIB (unused)]
"""
import json
import os
import shutil
import sqlite3
import struct
import subprocess
import sys

from fault_common import Checks, clean_failure, sweep_fixture, fresh_dir, parse_args

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
RSS_MB = 600  # ASan's shadow memory included; an allocation of the claimed size would be GBs


def run_measured(cmd):
    """Runs cmd in a child that reports its own child's peak RSS (ru_maxrss of RUSAGE_CHILDREN)."""
    code = ("import resource, subprocess, sys\n"
            "p = subprocess.run(sys.argv[1:], stdout=subprocess.PIPE, stderr=subprocess.PIPE)\n"
            "sys.stdout.buffer.write(p.stdout); sys.stderr.buffer.write(p.stderr)\n"
            "sys.stderr.write('\\nRSS_KB %d\\n' % resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
            "sys.exit(p.returncode if p.returncode >= 0 else 128 - p.returncode)\n")
    p = subprocess.run([sys.executable, "-c", code] + cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       errors="replace", timeout=120)
    err, rss = p.stderr, 0
    if "\nRSS_KB " in err:
        err, tail = err.rsplit("\nRSS_KB ", 1)
        rss = int(tail.split()[0]) // 1024
    return p.returncode, p.stdout, err.rstrip("\n") + "\n", rss


def refuse(ck, what, cmd, prefix, reason, expect_rc=1):
    rc, out, err, rss = run_measured(cmd)
    msg = clean_failure(ck, what, rc, err, prefix, expect_rc=expect_rc, reason=reason)
    ck.check(rss < RSS_MB, "%s: peak RSS %d MB (limit %d)" % (what, rss, RSS_MB))
    print("  %-36s exit %d, %4d MB: %s" % (what, rc, rss, msg[:140]), flush=True)


def st_bytes(header, data=b""):
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    return struct.pack("<Q", len(h)) + h + data


def model_dir(base, name, cfg, st):
    d = os.path.join(base, name)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(cfg, f)
    with open(os.path.join(d, "model.safetensors"), "wb") as f:
        f.write(st)
    return d


def main():
    a = parse_args()
    S = a.sprinter
    fresh_dir(a.work)
    ck = Checks("fault_limits")
    m = os.path.join(a.work, "m")
    sweep_fixture.make_models(S, m)  # vocab 269, n_positions 128, GPT-2 BPE fixture tokenizer
    with open(os.path.join(m, "target", "config.json")) as f:
        cfg = json.load(f)

    # safetensors claiming more than the file holds
    big = model_dir(a.work, "claims-4tb", cfg, st_bytes(
        {"transformer.wte.weight": {"dtype": "F32", "shape": [1 << 20, 1 << 20], "data_offsets": [0, 1 << 42]}},
        b"\0" * 4096))
    refuse(ck, "tensor of 4 TB in a 4 kB file", [S, "info", "--model", big], "sprinter info: ",
           r"model\.safetensors.*(outside|exceeds|larger)")
    ovf = model_dir(a.work, "shape-overflow", cfg, st_bytes(
        {"transformer.wte.weight": {"dtype": "F32", "shape": [1 << 40, 1 << 40, 1 << 40], "data_offsets": [0, 16]}},
        b"\0" * 16))
    refuse(ck, "shape product overflows", [S, "info", "--model", ovf], "sprinter info: ",
           r"model\.safetensors.*(overflow|not a non-negative)")
    with open(os.path.join(m, "target", "model.safetensors"), "rb") as f:
        tiny = f.read()
    absurd = model_dir(a.work, "vocab-1e12", dict(cfg, vocab_size=10 ** 12), tiny)
    refuse(ck, "config vocab_size 1e12", [S, "info", "--model", absurd], "sprinter info: ",
           r"config\.json.*vocab_size.*out of range")
    maxv = model_dir(a.work, "vocab-2e22", dict(cfg, vocab_size=1 << 22), tiny)
    refuse(ck, "config vocab_size 2^22, tiny weights", [S, "generate", "--model", maxv, "--prompt-ids", "1,2",
                                                        "--max-new", "2"], "sprinter generate: ",
           r"model\.safetensors.*wte.*shape")

    # tokenizers claiming absurd sizes
    tj = json.load(open(os.path.join(ROOT, "tests", "tokenizer", "fixtures", "gpt2_json", "tokenizer.json")))
    t1 = os.path.join(a.work, "tok-id")
    os.makedirs(t1)
    tj["model"]["vocab"]["zz"] = 1 << 31
    json.dump(tj, open(os.path.join(t1, "tokenizer.json"), "w"))
    refuse(ck, "tokenizer id 2^31", [S, "tokenize", "--model", t1, "--text", "hi"], "sprinter tokenize: ",
           r"tokenizer\.json.*zz.*\[0, 4194304\)")
    t2 = os.path.join(a.work, "tok-merges")
    os.makedirs(t2)
    shutil.copy(os.path.join(m, "target", "vocab.json"), t2)
    with open(os.path.join(t2, "merges.txt"), "w") as f:
        f.write("#version: 0.2\n" + "\u0120 t\n" * 1000000)
    rc, out, err, rss = run_measured([S, "tokenize", "--model", t2, "--text", "hi there"])
    ck.check(rc == 0 and rss < RSS_MB, "merges.txt of a million lines: exit %d, %d MB:\n%s" % (rc, rss, err[-500:]))
    print("  %-36s exit %d, %4d MB: the merge table grows with the file only" % ("merges.txt of a million lines", rc,
                                                                                rss), flush=True)
    with open(os.path.join(t2, "merges.txt"), "w") as f:
        f.write("#version: 0.2\n" + "\u00ff\u00ff \u00fe\n" * 100000)
    refuse(ck, "merges of unknown tokens", [S, "tokenize", "--model", t2, "--text", "hi"],
           "sprinter tokenize: ", r"merges\.txt: line 2: .*not in the vocabulary")

    # HDF5 columns claiming 2^26 x 16 floats, nothing written
    refuse(ck, "collect file claiming 4 GB", [S, "train-verifier", "--data",
                                              os.path.join(ROOT, "fuzz", "corpus", "h5", "bad-huge-unwritten-collect.h5"),
                                              "--out", os.path.join(a.work, "v.safetensors")],
           "sprinter train-verifier: ", r"hidden.*claims \d+ values")

    # context window
    long_ids = ",".join(str(i % 200) for i in range(200))
    refuse(ck, "generate: prompt of 200 > 128 ids", [S, "generate", "--model", m + "/target", "--prompt-ids",
                                                     long_ids, "--max-new", "1"], "sprinter generate: ",
           r"exceed.*context of 128")
    refuse(ck, "generate: max_new 1000 > context", [S, "generate", "--model", m + "/target", "--prompt-ids", "1,2",
                                                    "--max-new", "1000"], "sprinter generate: ",
           r"exceeds the context of 128")
    refuse(ck, "decode: max_new 1000 > context", [S, "decode", "--draft", m + "/draft", "--target", m + "/target",
                                                  "--prompt-ids", "1,2", "--max-new", "1000"], "sprinter decode: ",
           r"exceeds the context of 128")
    refuse(ck, "decode: prompt of 200 > 128 ids", [S, "decode", "--draft", m + "/draft", "--target", m + "/target",
                                                   "--prompt-ids", long_ids, "--max-new", "2"], "sprinter decode: ",
           r"exceeds the context of 128")
    spec = sweep_fixture.write_spec(m, name="big", methods="ar, sd", n_prompts=2, max_new=1000)
    out = os.path.join(a.work, "res-big")
    refuse(ck, "sweep: max_new_tokens 1000 > context", [S, "sweep", spec, "--out", out, "--quiet"],
           "sprinter sweep: ", r"max_new|context|positions")
    con_ok = not os.path.exists(os.path.join(out, "runs.sqlite")) or sqlite3.connect(
        os.path.join(out, "runs.sqlite")).execute("SELECT COUNT(*) FROM runs").fetchone()[0] == 0
    ck.check(con_ok, "sweep with max_new beyond the context started runs")
    # over-long prompts in a sweep: truncated to their last tokens and flagged
    long_data = os.path.join(m, "long.jsonl")
    with open(long_data, "w") as f:
        for i in range(24):
            f.write(json.dumps({"id": "l%d" % i, "prompt": " ".join(["hello"] * (300 if i >= 20 else 3))}) + "\n")
    spec = sweep_fixture.write_spec(m, name="long", methods="ar", n_prompts=2, max_new=6)
    with open(spec) as f:
        text = f.read().replace("datasets = %s/data.jsonl" % m, "datasets = %s" % long_data)
    with open(spec, "w") as f:
        f.write(text)
    out = os.path.join(a.work, "res-long")
    rc, _, err, rss = run_measured([S, "sweep", spec, "--out", out, "--quiet"])
    ck.check(rc == 0, "sweep with over-long prompts exited %d:\n%s" % (rc, err[-1500:]))
    if rc == 0:
        con = sqlite3.connect(os.path.join(out, "runs.sqlite"))
        rows = con.execute("SELECT prompt_truncated, n_prompt_tokens FROM prompts").fetchall()
        con.close()
        ck.check(rows and all(t == 1 and 0 < n < 128 for t, n in rows),
                 "over-long prompts not truncated and flagged: %s" % rows)
        print("  %-36s exit 0, %4d MB: prompts (truncated, tokens) %s" % ("sweep: prompts of 300 words", rss, rows),
              flush=True)
    ck.finish()


if __name__ == "__main__":
    main()
