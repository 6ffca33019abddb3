#!/usr/bin/python3
"""Broken-input checks for `sprinter logits`.

usage: /usr/bin/python3 tests/bad_input.py --sprinter build/sprinter --work /tmp/bad

Builds broken model directories from valid tiny ones (made by
`sprinter init-random --preset tiny`) and checks, for each, that
`sprinter logits --model D --ids ...`:
  * exits non-zero and is not killed by a signal,
  * prints no sanitizer report,
  * prints exactly one non-empty line on stderr,
  * that line names the offending file and, where meaningful, the field
    (tensor name or config key).
Final line "bad_input: N passed, M failed"; exit non-zero on any failure.
"""
import argparse
import json
import os
import shutil
import struct
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "scripts", "pylib"))
import stio  # noqa: E402

SANITIZER_MARKS = ("AddressSanitizer", "LeakSanitizer", "UndefinedBehaviorSanitizer",
                   "runtime error", "ThreadSanitizer", "MemorySanitizer")
ST = "model.safetensors"
CFG = "config.json"
INDEX = "model.safetensors.index.json"


# ------------------------------------------------------------------ helpers
def read_cfg(d):
    with open(os.path.join(d, CFG)) as f:
        return json.load(f)


def write_cfg(d, cfg):
    with open(os.path.join(d, CFG), "w") as f:
        json.dump(cfg, f, indent=2)


def split_file(path):
    """-> (header dict incl. __metadata__, data buffer bytes)."""
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    return json.loads(raw[8:8 + n]), raw[8 + n:]


def join_file(path, header, data, header_bytes=None, length=None):
    hj = header_bytes if header_bytes is not None else json.dumps(header).encode()
    if header_bytes is None:
        hj += b" " * ((-(8 + len(hj))) % 8)
    n = len(hj) if length is None else length
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", n) + hj + data)


def edit_header(d, fn, fname=ST):
    p = os.path.join(d, fname)
    h, data = split_file(p)
    fn(h)
    join_file(p, h, data)


def find_tensor(d, suffix, fname=ST):
    h, _ = split_file(os.path.join(d, fname))
    return next(k for k in h if k != "__metadata__" and k.endswith(suffix))


def drop_tensor(d, name, fname=ST):
    p = os.path.join(d, fname)
    raw, meta, order = stio.read_raw(p)
    items = [(k, raw[k][0], raw[k][1], raw[k][2].tobytes()) for k in order if k != name]
    with open(p, "wb") as f:
        f.write(stio.build_bytes(items, meta))


def shard(d, nshards=2):
    """Turn the single-file model in d into an HF sharded checkpoint."""
    p = os.path.join(d, ST)
    raw, meta, order = stio.read_raw(p)
    per = (len(order) + nshards - 1) // nshards
    wm = {}
    for k in range(nshards):
        part = order[k * per:(k + 1) * per]
        fn = f"model-{k + 1:05d}-of-{nshards:05d}.safetensors"
        items = [(x, raw[x][0], raw[x][1], raw[x][2].tobytes()) for x in part]
        with open(os.path.join(d, fn), "wb") as f:
            f.write(stio.build_bytes(items, {"format": "pt"}))
        for x in part:
            wm[x] = fn
    os.remove(p)
    with open(os.path.join(d, INDEX), "w") as f:
        json.dump({"metadata": {"total_size": 0}, "weight_map": wm}, f, indent=2)
    return wm


# ------------------------------------------------------------------ runner
class Runner:
    def __init__(self, binary, work):
        self.bin = binary
        self.work = work
        self.passed = 0
        self.failed = 0
        self.bases = {}
        self.n = 0

    def sp(self, *args, timeout=60):
        return subprocess.run([self.bin, *map(str, args)], capture_output=True,
                              text=True, errors="replace", timeout=timeout)

    def make_base(self, arch, key):
        out = os.path.join(self.work, "base_" + key)
        shutil.rmtree(out, ignore_errors=True)
        r = self.sp("init-random", "--arch", arch, "--preset", "tiny", "--seed", "5",
                    "--out", out, "--dtype", "f32")
        if r.returncode != 0:
            raise RuntimeError(f"init-random --arch {arch} failed: {r.stderr.strip()}")
        r = self.sp("logits", "--model", out, "--ids", "1,2")
        if r.returncode != 0:
            raise RuntimeError(f"valid base model {arch} rejected: {r.stderr.strip()}")
        self.bases[key] = out

    def copy(self, key, name):
        d = os.path.join(self.work, name)
        shutil.rmtree(d, ignore_errors=True)
        shutil.copytree(self.bases[key], d)
        return d

    def case(self, name, base, build, files, fields=None, ids="1,2", model=None):
        """build(d) breaks the copy d of base; files/fields: the stderr line must
        contain one of `files` and (if given) one of `fields`."""
        # neutral directory names, and the directory path is blanked out of the
        # message before matching, so a path can never satisfy a file/field check
        self.n += 1
        try:
            d = self.copy(base, f"case{self.n:03d}")
            if build is not None:
                extra = build(d)
                if isinstance(extra, dict):
                    files = extra.get("files", files)
                    fields = extra.get("fields", fields)
            if model is not None:
                d = model(d)
            r = self.sp("logits", "--model", d, "--ids", ids)
        except subprocess.TimeoutExpired:
            return self.report(name, False, "timeout (60 s)")
        except Exception as e:  # noqa: BLE001
            return self.report(name, False, f"harness error {type(e).__name__}: {e}")
        err = r.stderr
        lines = [ln for ln in err.splitlines()]
        problems = []
        if r.returncode == 0:
            problems.append("exit 0")
        elif r.returncode < 0:
            problems.append(f"killed by signal {-r.returncode}")
        if any(m in err or m in r.stdout for m in SANITIZER_MARKS):
            problems.append("sanitizer report")
        if len(lines) != 1 or not lines[0].strip():
            problems.append(f"{len(lines)} stderr lines")
        line = err.strip().splitlines()[0] if err.strip() else ""
        line = line.replace(os.path.abspath(d), "<DIR>").replace(d, "<DIR>")
        if line and not any(f in line for f in files):
            problems.append(f"no file name (want one of {files})")
        if line and fields and not any(f in line for f in fields):
            problems.append(f"no field (want one of {fields})")
        msg = f"rc={r.returncode} stderr={err.strip()[:300]!r}"
        return self.report(name, not problems, ("; ".join(problems) + " | " if problems else "") + msg)

    def report(self, name, ok, detail):
        print(f"{'PASS' if ok else 'FAIL'} {name}: {detail}", flush=True)
        if ok:
            self.passed += 1
        else:
            self.failed += 1


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sprinter", required=True)
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    R = Runner(os.path.abspath(a.sprinter), a.work)
    try:
        R.make_base("gpt2", "gpt2")
        R.make_base("llama", "llama")
        R.make_base("gpt-neo", "neo")
        R.make_base("qwen2", "qwen2")
        R.make_base("qwen3", "qwen3")
    except Exception as e:  # noqa: BLE001
        R.report("setup", False, str(e))
        print(f"bad_input: {R.passed} passed, {R.failed} failed")
        sys.exit(1)

    g = R.bases["gpt2"]
    gcfg = read_cfg(g)
    V, D, L = gcfg["vocab_size"], gcfg["n_embd"], gcfg["n_layer"]
    fc = find_tensor(g, "h.0.mlp.c_fc.weight")          # [d, inner]
    fc_short = "h.0.mlp.c_fc.weight"
    st_size = os.path.getsize(os.path.join(g, ST))
    hlen = struct.unpack("<Q", open(os.path.join(g, ST), "rb").read(8))[0]
    F = [ST]

    # ---------------- safetensors container
    def truncate(nbytes):
        def b(d):
            with open(os.path.join(d, ST), "r+b") as f:
                f.truncate(nbytes)
        return b

    R.case("st/truncated-data", "gpt2", truncate(8 + hlen + (st_size - 8 - hlen) // 2), F)
    R.case("st/truncated-last-byte", "gpt2", truncate(st_size - 1), F)
    R.case("st/truncated-in-header", "gpt2", truncate(8 + hlen // 2), F)
    R.case("st/shorter-than-8-bytes", "gpt2", truncate(5), F)
    R.case("st/empty-file", "gpt2", truncate(0), F)

    def set_len(n):
        def b(d):
            with open(os.path.join(d, ST), "r+b") as f:
                f.write(struct.pack("<Q", n))
        return b
    R.case("st/header-len>file", "gpt2", set_len(st_size + 100), F)
    R.case("st/header-len-2^64-1", "gpt2", set_len(2 ** 64 - 1), F)
    R.case("st/header-len-2^63", "gpt2", set_len(2 ** 63), F)
    R.case("st/header-len-0", "gpt2", set_len(0), F)

    def garbage_header(d):
        p = os.path.join(d, ST)
        h, data = split_file(p)
        hb = json.dumps(h).encode()
        join_file(p, None, data, header_bytes=b"\x00not json{{" + b"x" * (len(hb) - 11))
    R.case("st/header-not-json", "gpt2", garbage_header, F)

    def header_array(d):
        p = os.path.join(d, ST)
        _, data = split_file(p)
        join_file(p, None, data, header_bytes=b"[1,2,3]" + b" " * 9)
    R.case("st/header-json-array", "gpt2", header_array, F)

    def header_trailing_junk(d):
        p = os.path.join(d, ST)
        h, data = split_file(p)
        join_file(p, None, data, header_bytes=json.dumps(h).encode() + b"}]junk  ")
    R.case("st/header-trailing-junk", "gpt2", header_trailing_junk, F)

    def offs(fn):
        def b(d):
            def e(h):
                h[fc]["data_offsets"] = fn(h[fc]["data_offsets"], h)
            edit_header(d, e)
        return b
    buflen = st_size - 8 - hlen
    TF = [fc_short]
    R.case("st/offsets-end-beyond-buffer", "gpt2",
           offs(lambda o, h: [o[0], buflen + 4 * 16]), F, TF)
    R.case("st/offsets-both-beyond-buffer", "gpt2",
           offs(lambda o, h: [buflen + 64, buflen + 64 + (o[1] - o[0])]), F, TF)
    R.case("st/offsets-end<begin", "gpt2", offs(lambda o, h: [o[1], o[0]]), F, TF)
    R.case("st/offsets-size-mismatch", "gpt2", offs(lambda o, h: [o[0], o[1] - 4]), F, TF)
    R.case("st/offsets-huge", "gpt2",
           offs(lambda o, h: [2 ** 62, 2 ** 62 + (o[1] - o[0])]), F, TF)
    R.case("st/offsets-negative", "gpt2", offs(lambda o, h: [-16, o[1] - o[0] - 16]), F, TF)
    R.case("st/offsets-not-ints", "gpt2", offs(lambda o, h: ["0", "x"]), F, TF)
    R.case("st/offsets-wrap-2^64", "gpt2",
           offs(lambda o, h: [2 ** 64 - 16, 2 ** 64 - 16 + (o[1] - o[0])]), F, TF)

    # the tensors must tile the data buffer exactly, as the format's reference loader requires (issue 18)
    TILE = ["overlap", "unused bytes"]
    R.case("st/offsets-fractional", "gpt2", offs(lambda o, h: [o[0] + 0.5, o[1] + 0.5]), F, ["not integers"])

    def same_bytes(d):  # a second tensor of the same size on the first one's bytes: overlap + a gap
        def e(h):
            ts = sorted((k for k in h if k != "__metadata__"), key=lambda k: h[k]["data_offsets"][0])
            size = {k: h[k]["data_offsets"][1] - h[k]["data_offsets"][0] for k in ts}
            a, b = next((x, y) for x in ts for y in ts if x != y and size[x] == size[y])
            h[b]["data_offsets"] = list(h[a]["data_offsets"])
        edit_header(d, e)
    R.case("st/two-tensors-same-bytes", "gpt2", same_bytes, F, TILE)

    def tail_bytes(d):
        path = os.path.join(d, ST)
        h, data = split_file(path)
        join_file(path, h, data + b"\0" * 64)
    R.case("st/unused-bytes-after-data", "gpt2", tail_bytes, F, TILE)

    def head_gap(d):  # every tensor moved 64 bytes on: unused bytes before the first
        path = os.path.join(d, ST)
        h, data = split_file(path)
        for k in h:
            if k != "__metadata__":
                h[k]["data_offsets"] = [h[k]["data_offsets"][0] + 64, h[k]["data_offsets"][1] + 64]
        join_file(path, h, b"\0" * 64 + data)
    R.case("st/unused-bytes-before-data", "gpt2", head_gap, F, TILE)

    R.case("st/missing-tensor", "gpt2", lambda d: drop_tensor(d, fc), F, TF)
    wte = find_tensor(g, "wte.weight")
    R.case("st/missing-wte", "gpt2", lambda d: drop_tensor(d, wte), F, ["wte.weight"])

    def shape(fn):
        def b(d):
            def e(h):
                h[fc]["shape"] = fn(h[fc]["shape"])
            edit_header(d, e)
        return b
    R.case("st/wrong-shape-transposed", "gpt2", shape(lambda s: [s[1], s[0]]), F, TF)
    R.case("st/wrong-shape-rank1", "gpt2", shape(lambda s: [s[0] * s[1]]), F, TF)
    R.case("st/wrong-shape-negative", "gpt2", shape(lambda s: [-s[0], -s[1]]), F, TF)
    R.case("st/wrong-shape-huge", "gpt2", shape(lambda s: [2 ** 40, 2 ** 40]), F, TF)

    def dtype(dt, halve=False):
        def b(d):
            def e(h):
                h[fc]["dtype"] = dt
                if halve:  # keep the byte count consistent for 8-byte dtypes
                    s = h[fc]["shape"]
                    h[fc]["shape"] = [s[0], s[1] // 2]
            edit_header(d, e)
        return b
    R.case("st/dtype-I64", "gpt2", dtype("I64", halve=True), F, TF)
    R.case("st/dtype-I64-same-shape", "gpt2", dtype("I64"), F, TF)
    R.case("st/dtype-unknown", "gpt2", dtype("Q4_K"), F, TF)
    R.case("st/dtype-not-string", "gpt2", dtype(32), F, TF)

    # ---------------- files missing
    R.case("files/missing-model.safetensors", "gpt2",
           lambda d: os.remove(os.path.join(d, ST)), [ST])
    R.case("files/missing-config.json", "gpt2",
           lambda d: os.remove(os.path.join(d, CFG)), [CFG])

    def empty_dir(d):
        shutil.rmtree(d)
        os.makedirs(d)
    R.case("files/empty-directory", "gpt2", empty_dir, [CFG])
    R.case("files/nonexistent-directory", "gpt2", None, [CFG, "nonexistent"],
           model=lambda d: os.path.join(d, "nonexistent"))

    # ---------------- sharded checkpoints
    def shard_missing(d):
        wm = shard(d, 3)
        victim = sorted(set(wm.values()))[1]
        os.remove(os.path.join(d, victim))
        return {"files": [victim, INDEX]}
    R.case("shard/index-names-missing-shard", "gpt2", shard_missing, [])

    def shard_index_bad_json(d):
        shard(d, 2)
        with open(os.path.join(d, INDEX), "w") as f:
            f.write('{"metadata": {}, "weight_map": {')
    R.case("shard/index-malformed-json", "gpt2", shard_index_bad_json, [INDEX])

    def shard_index_no_map(d):
        shard(d, 2)
        with open(os.path.join(d, INDEX), "w") as f:
            json.dump({"metadata": {}}, f)
    R.case("shard/index-no-weight_map", "gpt2", shard_index_no_map, [INDEX], ["weight_map"])

    def shard_missing_tensor2(d):
        wm = shard(d, 2)
        fn = wm.pop(fc)
        with open(os.path.join(d, INDEX), "w") as f:
            json.dump({"metadata": {}, "weight_map": wm}, f)
        drop_tensor(d, fc, fname=fn)
        return {"files": [INDEX, fn, ST]}
    R.case("shard/tensor-missing-everywhere", "gpt2", shard_missing_tensor2, [], TF)

    # ---------------- config.json
    C = [CFG]

    def cfg_edit(fn):
        def b(d):
            c = read_cfg(d)
            fn(c)
            write_cfg(d, c)
        return b

    def cfg_text(text):
        def b(d):
            with open(os.path.join(d, CFG), "w") as f:
                f.write(text)
        return b
    R.case("cfg/malformed-json", "gpt2", cfg_text('{"model_type": "gpt2", "n_embd": 64,'), C)
    R.case("cfg/not-an-object", "gpt2", cfg_text('[1, 2, 3]'), C)
    # issue 18: a depth limit is named as such (was "malformed JSON"); text after the object is an error
    R.case("cfg/nested-2000-deep", "gpt2", cfg_text('{"a": ' + "[" * 2000 + "]" * 2000 + "}"), C,
           ["nested 2001 levels deep"])
    R.case("cfg/trailing-text", "gpt2", cfg_text('{"model_type": "gpt2"} trailing'), C, ["malformed JSON at line 1"])
    R.case("cfg/empty-file", "gpt2", cfg_text(''), C)
    R.case("cfg/missing-n_embd", "gpt2", cfg_edit(lambda c: c.pop("n_embd")), C, ["n_embd"])
    R.case("cfg/missing-n_layer", "gpt2", cfg_edit(lambda c: c.pop("n_layer")), C, ["n_layer"])
    R.case("cfg/missing-vocab_size", "gpt2", cfg_edit(lambda c: c.pop("vocab_size")), C,
           ["vocab_size"])
    R.case("cfg/unknown-model_type-mamba", "gpt2",
           cfg_edit(lambda c: c.update(model_type="mamba")), C, ["model_type"])
    R.case("cfg/missing-model_type", "gpt2", cfg_edit(lambda c: c.pop("model_type")), C,
           ["model_type"])
    R.case("cfg/model_type-number", "gpt2", cfg_edit(lambda c: c.update(model_type=2)), C,
           ["model_type"])
    R.case("cfg/n_layer=-1", "gpt2", cfg_edit(lambda c: c.update(n_layer=-1)), C, ["n_layer"])
    R.case("cfg/n_embd=-64", "gpt2", cfg_edit(lambda c: c.update(n_embd=-64)), C, ["n_embd"])
    R.case("cfg/n_embd-string", "gpt2", cfg_edit(lambda c: c.update(n_embd="64")), C,
           ["n_embd"])
    R.case("cfg/n_embd-float", "gpt2", cfg_edit(lambda c: c.update(n_embd=64.5)), C, ["n_embd"])
    R.case("cfg/vocab_size=1e12", "gpt2", cfg_edit(lambda c: c.update(vocab_size=10 ** 12)),
           C + F, ["vocab_size", "wte.weight"])
    R.case("cfg/n_embd=2^40", "gpt2", cfg_edit(lambda c: c.update(n_embd=2 ** 40)),
           C + F, ["n_embd", "wte.weight"])
    R.case("cfg/n_layer=1e9", "gpt2", cfg_edit(lambda c: c.update(n_layer=10 ** 9)),
           C + F, ["n_layer", "h.%d." % L])
    R.case("cfg/n_head=0", "gpt2", cfg_edit(lambda c: c.update(n_head=0)), C, ["n_head"])
    bad_heads = next(h for h in range(3, 100) if D % h)
    R.case(f"cfg/n_head={bad_heads}-does-not-divide-n_embd={D}", "gpt2",
           cfg_edit(lambda c: c.update(n_head=bad_heads)), C, ["n_head"])
    R.case("cfg/n_layer+1-more-than-tensors", "gpt2",
           cfg_edit(lambda c: c.update(n_layer=L + 1)), F + C, [f"h.{L}."])
    def shrink_vocab(c):
        c["vocab_size"] = V - 1
        for k in ("bos_token_id", "eos_token_id", "pad_token_id"):
            if isinstance(c.get(k), int) and c[k] >= V - 1:
                c[k] = 0  # keep these valid: the wte shape is what is under test
    R.case("cfg/vocab_size-1 (wte shape mismatch)", "gpt2", cfg_edit(shrink_vocab),
           F + C, ["wte.weight", "vocab_size"])

    # Llama / GPT-Neo specific config errors
    lcfg = read_cfg(R.bases["llama"])
    nh = lcfg["num_attention_heads"]
    bad_kv = next(k for k in range(2, 64) if nh % k and k < nh) if nh > 2 else nh + 1
    R.case(f"cfg/llama-num_key_value_heads={bad_kv}-does-not-divide-{nh}", "llama",
           cfg_edit(lambda c: c.update(num_key_value_heads=bad_kv)), C,
           ["num_key_value_heads"])
    R.case("cfg/llama-missing-intermediate_size", "llama",
           cfg_edit(lambda c: c.pop("intermediate_size")), C, ["intermediate_size"])
    R.case("cfg/llama-rms_norm_eps-string", "llama",
           cfg_edit(lambda c: c.update(rms_norm_eps="1e-6")), C, ["rms_norm_eps"])

    # rope_scaling: llama3 needs all four keys and high > low; dynamic, yarn and unknown types are refused
    l3 = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
          "original_max_position_embeddings": 16}
    for key in ("factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings"):
        R.case(f"cfg/llama-rope_scaling-llama3-missing-{key}", "llama",
               cfg_edit(lambda c, key=key: c.update(rope_scaling={k: v for k, v in l3.items() if k != key})), C,
               [key])
    R.case("cfg/llama-rope_scaling-llama3-high<=low", "llama",
           cfg_edit(lambda c: c.update(rope_scaling=dict(l3, high_freq_factor=1.0))), C, ["high_freq_factor"])
    for kind in ("dynamic", "yarn", "longrope", "su-per"):
        R.case(f"cfg/llama-rope_scaling-{kind}", "llama",
               cfg_edit(lambda c, kind=kind: c.update(rope_scaling={"rope_type": kind, "factor": 2.0})), C, [kind])
    R.case("cfg/llama-rope_scaling-not-an-object", "llama", cfg_edit(lambda c: c.update(rope_scaling=4)), C,
           ["rope_scaling"])
    R.case("cfg/llama-rope_scaling-linear-no-factor", "llama",
           cfg_edit(lambda c: c.update(rope_scaling={"type": "linear"})), C, ["factor"])
    R.case("cfg/qwen2-use_sliding_window", "qwen2", cfg_edit(lambda c: c.update(use_sliding_window=True)), C,
           ["use_sliding_window"])
    R.case("cfg/qwen2-layer_types-sliding", "qwen2",
           cfg_edit(lambda c: c.update(layer_types=["full_attention", "sliding_attention"])), C, ["layer_types"])
    R.case("cfg/qwen3-attention_bias", "qwen3", cfg_edit(lambda c: c.update(attention_bias=True)), C,
           ["attention_bias"])
    R.case("st/qwen3-missing-q_norm", "qwen3", lambda d: drop_tensor(d, "model.layers.1.self_attn.q_norm.weight"),
           F, ["q_norm"])
    R.case("st/qwen2-missing-q_proj.bias", "qwen2", lambda d: drop_tensor(d, "model.layers.0.self_attn.q_proj.bias"),
           F, ["q_proj.bias"])
    R.case("cfg/qwen3-head_dim-odd", "qwen3", cfg_edit(lambda c: c.update(head_dim=15)), C, ["head_dim"])

    def untie_without_head(d):
        c = read_cfg(d)
        c["tie_word_embeddings"] = False
        write_cfg(d, c)
        try:
            drop_tensor(d, "lm_head.weight")
        except KeyError:
            pass
    R.case("st/llama-untied-missing-lm_head", "llama", untie_without_head, F + C,
           ["lm_head.weight"])
    ncfg = read_cfg(R.bases["neo"])
    nl = ncfg["num_layers"]
    R.case("cfg/neo-attention_types-wrong-count", "neo",
           cfg_edit(lambda c: c.update(attention_types=[[["global", "local"], nl + 1]],
                                       attention_layers=["global", "local"] * (nl + 1))),
           C, ["attention_types", "attention_layers", "num_layers"])
    R.case("cfg/neo-attention-kind-sparse", "neo",
           cfg_edit(lambda c: c.update(attention_types=[[["sparse"], nl]],
                                       attention_layers=["sparse"] * nl)),
           C, ["attention_types", "attention_layers", "sparse"])
    R.case("cfg/neo-window_size=0", "neo", cfg_edit(lambda c: c.update(window_size=0)), C,
           ["window_size"])

    # ---------------- --ids (the line must name the ids / token ids)
    IDS = ["ids", "id ", "id=", "id:", "token", "vocab"]
    R.case(f"ids/id=vocab_size({V})", "gpt2", None, IDS, None, ids=f"1,{V}")
    R.case("ids/id-huge", "gpt2", None, IDS, None, ids="1,99999999999999")
    R.case("ids/empty", "gpt2", None, IDS, None, ids="")
    R.case("ids/negative", "gpt2", None, IDS, None, ids="1,-1")
    R.case("ids/not-a-number", "gpt2", None, IDS, None, ids="1,abc")
    P = gcfg.get("n_positions")
    if P:
        R.case(f"ids/longer-than-n_positions({P})", "gpt2", None,
               IDS + ["n_positions"], None, ids=",".join(["1"] * (P + 1)))

    print(f"bad_input: {R.passed} passed, {R.failed} failed")
    sys.exit(1 if R.failed else 0)


if __name__ == "__main__":
    main()
