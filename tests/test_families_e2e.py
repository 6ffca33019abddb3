"""A draft/target pair of each newer family end to end: Llama 3 (rope_scaling llama3), Qwen2.5 and
Qwen3 (issue 28), random-init tiny shapes sharing the GPT-2 BPE test tokenizer (vocab 269).

Per family: the target from its tiny preset, the draft from the same config with one layer and a
narrower MLP (another seed); then
1. collect + train-verifier, and `decode --method ar,sd,sprinter` at temperature 1 (every method
   produces the tokens asked for; sprinter consults its verifier);
2. a greedy sweep (ar, sd, sprinter; 4 prompts) and `summary`: every run done, and sd's output text
   equal to ar's prompt by prompt (greedy speculative decoding is lossless: any difference between
   the batched verification and one-token forwards of these architectures shows here);
3. `score` and `analyze`: FINDINGS.md and index.md open with "No verdict: random-init models" and
   name each model random-init with its seed; negative control: with runs.sqlite pointing at copies
   whose model.safetensors lacks the init-random mark, the same analysis calls them checkpoints and
   prints no such line. Each model's weight dtype is named beside it (f32 here; for llama, GGUF
   exports in q8_0 and bf16 and a safetensors copy with one F16 matrix, "mixed: N f32, 1 f16").
Also: eos_token_id as a list stops generation at any of its ids (Llama 3.1 Instruct's three).
usage: test_families_e2e.py --sprinter BIN --work DIR
"""
import argparse
import json
import os
import shutil
import sqlite3
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import sweep_fixture as fx  # noqa: E402

FAMILIES = [("llama", "llama-3-tiny"), ("qwen2", "tiny"), ("qwen3", "tiny")]
MARK = "sprinter_init_seed"  # engine/decode/rules.h SP_INIT_SEED_KEY

SPEC = """[sweep]
name = {name}
methods = ar, sd, sprinter

[models]
draft = {work}/draft
target = {work}/target

[data]
datasets = {work}/data.jsonl
n_prompts = 4
offset = 20

[decode]
max_new_tokens = 10
temperature = 0

[grid]
seeds = 1
lambda = 1.0
tau = 0.5
gamma = 3

[verifier]
data = {work}/data.jsonl
n_prompts = 8
max_new = 8
seed = 3
"""


def sh(args, **kw):
    return subprocess.run([str(a) for a in args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          errors="replace", **kw)


def make_pair(sp, work, arch, preset):
    """work/target (the preset), work/draft (1 layer, narrower MLP), both with the test tokenizer."""
    fx.make_models(sp, work)  # the fixture's data.jsonl (and GPT-2 models, replaced here)
    for d in ("target", "draft"):
        shutil.rmtree(os.path.join(work, d), ignore_errors=True)
    r = sh([sp, "init-random", "--arch", arch, "--preset", preset, "--seed", 1, "--out", os.path.join(work, "target")])
    if r.returncode != 0:
        raise RuntimeError("init-random target: " + r.stderr)
    with open(os.path.join(work, "target", "config.json")) as f:
        cfg = json.load(f)
    cfg["num_hidden_layers"], cfg["intermediate_size"] = 1, cfg["intermediate_size"] // 2
    with open(os.path.join(work, "draft.json"), "w") as f:
        json.dump(cfg, f)
    r = sh([sp, "init-random", "--arch", arch, "--config", os.path.join(work, "draft.json"), "--seed", 2,
            "--out", os.path.join(work, "draft")])
    if r.returncode != 0:
        raise RuntimeError("init-random draft: " + r.stderr)
    for d in ("target", "draft"):
        for fn in ("vocab.json", "merges.txt"):
            shutil.copy(os.path.join(fx.TOKENIZER, fn), os.path.join(work, d))


def unmarked_copy(src, dst):
    """src with the init-random mark in model.safetensors' header renamed (same length)."""
    shutil.rmtree(dst, ignore_errors=True)
    shutil.copytree(src, dst)
    p = os.path.join(dst, "model.safetensors")
    with open(p, "rb") as f:
        data = f.read()
    n = int.from_bytes(data[:8], "little")
    head = data[8:8 + n].replace(b'"' + MARK.encode() + b'"', b'"' + b"x" * len(MARK) + b'"')
    with open(p, "wb") as f:
        f.write(data[:8] + head + data[8 + n:])


def findings_rows(path):
    """The verdict cell of each row of FINDINGS.md's table (| # | claim | protocol | dataset | measured | verdict | runs |)."""
    verdicts = []
    with open(path) as f:
        for line in f:
            cells = [c.strip() for c in line.strip().split(" | ")]
            if line.startswith("| ") and len(cells) == 7 and cells[0] not in ("| #", "|---") and not cells[0].startswith("|---"):
                verdicts.append(cells[5])
    return verdicts


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sprinter", required=True)
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    sp = os.path.abspath(a.sprinter)
    t = fx.Checks("families_e2e")
    for arch, preset in FAMILIES:
        fam = "%s/%s" % (arch, preset)
        w = os.path.join(os.path.abspath(a.work), arch)
        shutil.rmtree(w, ignore_errors=True)
        os.makedirs(w)
        try:
            make_pair(sp, w, arch, preset)
        except Exception as e:  # noqa: BLE001
            t.check(False, "%s: %s" % (fam, e))
            continue
        D, T = os.path.join(w, "draft"), os.path.join(w, "target")
        # 1. decode
        r = sh([sp, "collect", "--draft", D, "--target", T, "--data", os.path.join(w, "data.jsonl"), "--lambda", 1,
                "--out", os.path.join(w, "c.h5"), "--n-prompts", 6, "--max-new", 8])
        r2 = sh([sp, "train-verifier", "--data", os.path.join(w, "c.h5"), "--out", os.path.join(w, "v.safetensors")])
        t.check(r.returncode == 0 and r2.returncode == 0, "%s: collect + train-verifier (%s%s)" % (
            fam, r.stderr.strip()[-200:], r2.stderr.strip()[-200:]))
        r = sh([sp, "decode", "--draft", D, "--target", T, "--prompt", "hello the test", "--max-new", 12, "--method",
                "ar,sd,sprinter", "--verifier", os.path.join(w, "v.safetensors"), "--seed", 4, "--json"])
        rows = [json.loads(x) for x in r.stdout.splitlines() if x.startswith("{")]
        t.check(r.returncode == 0 and [x["method"] for x in rows] == ["ar", "sd", "sprinter"] and
                all(x["tokens"] == 12 for x in rows) and rows[2]["verifier_evals"] > 0,
                "%s: decode ar, sd, sprinter give 12 tokens each, sprinter consults its verifier (rc=%d %s)" % (
                    fam, r.returncode, r.stderr.strip()[-300:]))
        # 2. greedy sweep
        spec = os.path.join(w, "e2e.ini")
        with open(spec, "w") as f:
            f.write(SPEC.format(name="e2e_" + arch, work=w))
        res = os.path.join(w, "res")
        r = sh([sp, "sweep", spec, "--out", res, "--verifier-cache", os.path.join(w, "vc"), "--quiet"])
        if not t.check(r.returncode == 0, "%s: sweep (rc=%d %s)" % (fam, r.returncode, r.stderr.strip()[-400:])):
            continue
        db = sqlite3.connect(os.path.join(res, "runs.sqlite"))
        status = dict(db.execute("SELECT method, status FROM runs").fetchall())
        out = {}
        for m, i, text in db.execute("SELECT r.method, p.prompt_index, p.output_text FROM prompts p "
                                     "JOIN runs r USING(run_hash) ORDER BY p.prompt_index"):
            out.setdefault(m, []).append(text)
        db.close()
        t.check(status == {"ar": "done", "sd": "done", "sprinter": "done"}, "%s: every run done: %s" % (fam, status))
        t.check(len(out.get("ar", [])) == 4 and out.get("sd") == out.get("ar"),
                "%s: greedy sd's output == ar's on all 4 prompts" % fam)
        r = sh([sp, "summary", res])
        t.check(r.returncode == 0 and "sprinter" in r.stdout, "%s: summary" % fam)
        # 3. score + analyze, and the random-init label
        r = sh([sp, "score", res, "--quiet"])
        r2 = sh([sp, "analyze", res, "--quiet", "--no-plots", "--bootstrap", 20])
        if not t.check(r.returncode == 0 and r2.returncode == 0, "%s: score + analyze (%s%s)" % (
                fam, r.stderr.strip()[-300:], r2.stderr.strip()[-300:])):
            continue
        for doc in ("FINDINGS.md", "index.md"):
            with open(os.path.join(res, "report", doc)) as f:
                text = f.read()
            t.check("No verdict: random-init models" in text and "`%s` (random-init, seed 1; weights f32)" % T in text
                    and "`%s` (random-init, seed 2; weights f32)" % D in text,
                    "%s: %s says no verdict for random-init models and names both with their seeds" % (fam, doc))
        rows = findings_rows(os.path.join(res, "report", "FINDINGS.md"))
        t.check(len(rows) > 0 and all(fx.unwrap_verdict(v)[0] for v in rows),
                "%s: every FINDINGS row's verdict is withheld (%d rows; first: %s)" % (fam, len(rows), rows[:1]))
        # negative control: the same runs pointing at unmarked copies are checkpoints
        unmarked_copy(D, D + "_ckpt")
        unmarked_copy(T, T + "_ckpt")
        db = sqlite3.connect(os.path.join(res, "runs.sqlite"))
        db.execute("UPDATE runs SET draft_dir = ?, target_dir = ?", (D + "_ckpt", T + "_ckpt"))
        db.commit()
        db.close()
        r = sh([sp, "analyze", res, "--quiet", "--no-plots", "--bootstrap", 20])
        with open(os.path.join(res, "report", "FINDINGS.md")) as f:
            text = f.read()
        rows = findings_rows(os.path.join(res, "report", "FINDINGS.md"))
        t.check(len(rows) > 0 and not any("random-init" in v for v in rows),
                "%s: negative control: checkpoint rows keep their verdicts (%d rows)" % (fam, len(rows)))
        t.check(r.returncode == 0 and "random-init" not in text and "`%s_ckpt` (checkpoint; weights f32)" % T in text,
                "%s: negative control: unmarked copies are checkpoints (f32 weights), no random-init line (rc=%d)"
                % (fam, r.returncode))
        if arch == FAMILIES[0][0]:
            weight_dtypes(sp, res, D, T, t)
    eos_list(sp, os.path.join(os.path.abspath(a.work), "eos"), t)
    t.finish()


def st_with_one_f16(src, dst):
    """A copy of the model dir src whose first matrix (by header order) is stored F16; returns the
    number of matrices (tensors of 2+ dimensions) in its model.safetensors."""
    import numpy as np
    shutil.rmtree(dst, ignore_errors=True)
    shutil.copytree(src, dst)
    p = os.path.join(dst, "model.safetensors")
    with open(p, "rb") as f:
        data = f.read()
    n = int.from_bytes(data[:8], "little")
    head, blob = json.loads(data[8:8 + n]), data[8 + n:]
    meta = head.pop("__metadata__", None)
    mats = [k for k, v in head.items() if len(v["shape"]) >= 2]
    out, new = b"", {}
    for k, v in head.items():
        raw = blob[v["data_offsets"][0]:v["data_offsets"][1]]
        if k == mats[0]:
            raw, v = np.frombuffer(raw, "<f4").astype("<f2").tobytes(), dict(v, dtype="F16")
        new[k] = dict(v, data_offsets=[len(out), len(out) + len(raw)])
        out += raw
    if meta is not None:
        new["__metadata__"] = meta
    h = json.dumps(new).encode()
    h += b" " * (-len(h) % 8)
    with open(p, "wb") as f:
        f.write(len(h).to_bytes(8, "little") + h + out)
    return len(mats)


def weight_dtypes(sp, res, D, T, t):
    """The report names each model's weight dtype, read from the file the model loads from: a GGUF
    export of the target (q8_0: every matrix of llama-3-tiny is whole 32-value blocks) and of the draft
    (bf16), then a safetensors draft with one matrix in F16 (mixed) beside the f32 target."""
    def gguf_copy(src, dst, dtype):
        shutil.rmtree(dst, ignore_errors=True)
        os.makedirs(dst)
        shutil.copy(os.path.join(src, "config.json"), dst)
        r = sh([sp, "export-gguf", "--model", src, "--out", os.path.join(dst, "model.gguf"), "--dtype", dtype])
        return r.returncode == 0

    def report(draft, target):
        db = sqlite3.connect(os.path.join(res, "runs.sqlite"))
        db.execute("UPDATE runs SET draft_dir = ?, target_dir = ?", (draft, target))
        db.commit()
        db.close()
        r = sh([sp, "analyze", res, "--quiet", "--no-plots", "--bootstrap", 20])
        with open(os.path.join(res, "report", "FINDINGS.md")) as f:
            return r.returncode, f.read()

    ok = gguf_copy(T, T + "_q8", "q8_0") and gguf_copy(D, D + "_bf16", "bf16")
    rc, text = report(D + "_bf16", T + "_q8")
    t.check(ok and rc == 0 and "`%s_q8` (origin not recorded; weights q8_0)" % T in text and
            "`%s_bf16` (origin not recorded; weights bf16)" % D in text,
            "weight dtype: GGUF exports named q8_0 and bf16 in FINDINGS.md (rc=%d)" % rc)
    n = st_with_one_f16(D, D + "_mixed")
    rc, text = report(D + "_mixed", T)
    t.check(rc == 0 and "`%s_mixed` (random-init, seed 2; weights mixed: %d f32, 1 f16)" % (D, n - 1) in text and
            "`%s` (random-init, seed 1; weights f32)" % T in text,
            "weight dtype: a safetensors draft with one F16 matrix of %d is mixed, the target f32 (rc=%d)" % (n, rc))


def eos_list(sp, w, t):
    """eos_token_id as a list (Llama-3.1 Instruct's [128001, 128008, 128009]): generation stops at any
    of its ids, not only the first; a list without the generated token does not stop it."""
    shutil.rmtree(w, ignore_errors=True)
    m = os.path.join(w, "m")
    r = sh([sp, "init-random", "--arch", "llama", "--preset", "llama-3-tiny", "--seed", 5, "--out", m])
    gen = [sp, "generate", "--model", m, "--prompt-ids", "1,2,3", "--max-new", 8, "--temperature", 0]
    free = sh(gen + ["--ignore-eos"])
    ids = [int(x) for x in free.stdout.strip().split(",") if x]
    if not t.check(r.returncode == 0 and len(ids) == 8, "eos list: a free greedy run of 8 tokens (%s)" % free.stderr):
        return
    k = max(i for i in range(len(ids)) if ids.index(ids[i]) == i)  # the last token making its first appearance
    stop = ids[k]
    absent = next(x for x in range(269) if x not in ids)
    with open(os.path.join(m, "config.json")) as f:
        cfg = json.load(f)
    for eos, want in (([absent, stop], ids[:k + 1]), ([absent], ids)):
        cfg["eos_token_id"] = eos
        with open(os.path.join(m, "config.json"), "w") as f:
            json.dump(cfg, f)
        r = sh(gen)
        got = [int(x) for x in r.stdout.strip().split(",") if x]
        t.check(r.returncode == 0 and got == want, "eos list %s: greedy generation gives %s (want %s)" % (eos, got, want))
    cfg["eos_token_id"] = [absent, 269]
    with open(os.path.join(m, "config.json"), "w") as f:
        json.dump(cfg, f)
    r = sh(gen)
    t.check(r.returncode == 1 and "eos_token_id" in r.stderr and r.stderr.count("\n") == 1,
            "eos list with an id outside the vocabulary refused in one line: %s" % r.stderr.strip())


if __name__ == "__main__":
    main()
