"""Loading GGUF checkpoints (DIR/model.gguf) without llama.cpp: the round trip through export-gguf.

1. f32: the engine's logits from an f32 GGUF export equal those from the safetensors checkpoint bit
   for bit, for Llama (GQA; q / k rows permuted by the export and un-permuted by the loader; untied
   and tied heads) and GPT-2 (Conv1D weights transposed by the export; tied head);
2. bf16 and q8_0 exports load and stay near the f32 logits (within 0.2 absolute: weight rounding
   only), and the q8_0 run on the int8 path differs from the widened one (SPRINTER_Q8=widen) while
   both stay near;
3. the model hash (`sprinter sweep --dry-run`'s run hashes) changes with the GGUF file's dtype;
4. damaged files: a truncated model.gguf, a wrong magic and a tensor of the wrong shape are each
   refused with one line naming model.gguf, exit 1.
usage: test_gguf_load.py --sprinter BIN --source SRCDIR --work DIR
"""
import argparse
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sweep_fixture as fx  # noqa: E402

IDS = "5,17,300,42,999,7,123,88,1000,2000,3,4"
NEAR = 0.2


def sh(args, env=None):
    return subprocess.run([str(a) for a in args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          errors="replace", env=dict(os.environ, **(env or {})))


def logits(sprinter, d, env=None):
    r = sh([sprinter, "logits", "--model", d, "--ids", IDS], env)
    if r.returncode != 0:
        raise RuntimeError("logits %s: %s" % (d, r.stderr))
    return [float(x) for x in r.stdout.split()]


def gguf_dir(sprinter, src, dtype, dst):
    shutil.rmtree(dst, ignore_errors=True)
    os.makedirs(dst)
    for fn in ("config.json", "vocab.json", "merges.txt", "tokenizer.json"):
        if os.path.exists(os.path.join(src, fn)):
            shutil.copy(os.path.join(src, fn), dst)
    r = sh([sprinter, "export-gguf", "--model", src, "--out", os.path.join(dst, "model.gguf"), "--dtype", dtype])
    if r.returncode != 0:
        raise RuntimeError("export-gguf: " + r.stderr)
    return dst


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sprinter", required=True)
    ap.add_argument("--source", required=True)
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    sprinter, src, work = os.path.abspath(a.sprinter), os.path.abspath(a.source), os.path.abspath(a.work)
    os.makedirs(work, exist_ok=True)
    t = fx.Checks("gguf_load")
    models = {"llama untied (GQA)": "regime/target", "llama tied": "regime/draft", "gpt2 tied": "target"}
    for label, rel in models.items():
        d = os.path.join(src, "data", "models", rel)
        ref = logits(sprinter, d)
        tag = rel.replace("/", "_")
        f32 = logits(sprinter, gguf_dir(sprinter, d, "f32", os.path.join(work, tag + "-f32")))
        t.check(f32 == ref, "%s: f32 GGUF logits == safetensors logits bit for bit (max diff %g)"
                % (label, max(abs(x - y) for x, y in zip(f32, ref))))
        for dt in ("bf16", "q8_0"):
            q = gguf_dir(sprinter, d, dt, os.path.join(work, "%s-%s" % (tag, dt)))
            got = logits(sprinter, q)
            diff = max(abs(x - y) for x, y in zip(got, ref))
            t.check(0 < diff <= NEAR, "%s: %s GGUF logits within %g of f32 and not equal (%.3g)" % (label, dt, NEAR, diff))
            if dt == "q8_0":
                wid = logits(sprinter, q, {"SPRINTER_Q8": "widen"})
                dw = max(abs(x - y) for x, y in zip(wid, ref))
                t.check(dw <= NEAR, "%s: q8_0 widened within %g of f32 (%.3g)" % (label, NEAR, dw))
    # 3. the model hash follows the file's dtype
    hashes = {}
    for dt in ("f32", "q8_0"):
        mdir = os.path.join(work, "target-%s" % dt)
        spec = os.path.join(work, "spec-%s.ini" % dt)
        with open(spec, "w") as f:
            f.write("[sweep]\nname = h\nmethods = ar\n[models]\ntarget = %s\ndraft = %s\n[data]\ndatasets = %s\n"
                    "n_prompts = 2\n[decode]\nmax_new_tokens = 4\n" % (mdir, os.path.join(src, "data", "models", "draft"),
                                                                  os.path.join(src, "data", "datasets", "encyclopedic.jsonl")))
        r = sh([sprinter, "sweep", spec, "--out", os.path.join(work, "sweep-" + dt), "--dry-run"])
        hashes[dt] = r.stdout if r.returncode == 0 else "error: " + r.stderr
    t.check(not hashes["f32"].startswith("error") and hashes["f32"] != hashes["q8_0"],
            "run hashes differ between the f32 and the q8_0 target (%s)" % hashes["f32"][:200].replace("\n", " | "))
    # 4. damaged files
    good = os.path.join(work, "target-q8_0", "model.gguf")
    with open(good, "rb") as f:
        data = f.read()
    cases = {"truncated": data[:len(data) // 2], "bad magic": b"GGUX" + data[4:]}
    for name, blob in cases.items():
        bad = os.path.join(work, "bad-" + name.replace(" ", "_"))
        shutil.rmtree(bad, ignore_errors=True)
        shutil.copytree(os.path.join(work, "target-q8_0"), bad)
        with open(os.path.join(bad, "model.gguf"), "wb") as f:
            f.write(blob)
        r = sh([sprinter, "logits", "--model", bad, "--ids", IDS])
        lines = r.stderr.strip().splitlines()
        t.check(r.returncode == 1 and len(lines) == 1 and "model.gguf" in lines[0] and not r.stdout,
                "%s model.gguf: one line naming it, exit 1 (rc %d: %s)" % (name, r.returncode, r.stderr.strip()))
    # a GGUF of another shape under this config: the tensor named with both shapes
    other = os.path.join(work, "bad-shape")
    shutil.rmtree(other, ignore_errors=True)
    shutil.copytree(os.path.join(work, "target-q8_0"), other)
    shutil.copy(os.path.join(work, "regime_target-q8_0", "model.gguf"), os.path.join(other, "model.gguf"))
    r = sh([sprinter, "logits", "--model", other, "--ids", IDS])
    t.check(r.returncode == 1 and "model.gguf" in r.stderr and "config says" in r.stderr or "missing tensor" in r.stderr,
            "a GGUF of another model: refused naming model.gguf (rc %d: %s)" % (r.returncode, r.stderr.strip()))
    t.finish()


if __name__ == "__main__":
    main()
