#!/usr/bin/env python3
"""`--model FILE.gguf` alone (issue 30): a GGUF file without config.json or tokenizer files is a model.

1. per architecture (gpt2, llama, qwen2, qwen3: tiny random-init shapes with the GPT-2 BPE test
   tokenizer, vocab 269), export-gguf at f32 and q8_0 into a directory with config.json and the
   tokenizer files; then the file alone gives byte-identical output to that directory for `logits --all`,
   `generate` (seeded sampling), `info` (the config read from the metadata) and `tokenize`; Llama 3's
   llama3 RoPE scaling (the file's rope_freqs.weight, f32 divisors; the directory's from config.json in
   double) within 1e-4 over 200 positions, and farther without the scaling (control);
2. tokenization through the GGUF tokenizer (tokenizer.ggml.*) equals tokenizer.json's on 300 varied lines
   (tests/tokenizer/gen_corpus.py with the added tokens, special ones in the text) for tiny variants of
   the three pre-tokenizers export-gguf names: gpt-2 (GPT-2's tokenizer.json), llama-bpe (Llama 3's Split
   regex, ignore_merges) and qwen2 (Qwen's Split regex, NFC), each with special (control) and
   non-special (user-defined) added tokens;
3. the model hash (`sweep --dry-run`'s run hash) of a file alone is its content's: a renamed copy
   elsewhere gives the same hash, the q8_0 file another; a sweep over files alone runs, and analyze's
   report calls them "GGUF file" with their weights' dtype;
4. negative controls, GGUF files rewritten by the small writer below: a required key removed, a key
   of the wrong type, an unknown architecture, tokenizer.ggml.model "llama", an unknown
   tokenizer.ggml.pre, an unsupported rope scaling type: each exit 1 with one line naming the key.
5. tokenizer.chat_template and the bos / eos token texts through chat_template_load (tests/chat/chat_driver).
6. export-gguf writes the chat template the engine renders for the directory (tokenizer_config.json's,
   chat_template.jinja, the "default" of a named list): a sweep with prompt_template = chat_template over
   the file alone gives the directory's prompts and outputs;
7. a 3-id eos_token_id list (Llama 3.1 Instruct's shape: eos, eom, and the tokenizer's eos as eot) is
   written under tokenizer.ggml.eos / eot / eom_token_id and read back: `info`'s eos_ids of the file alone
   are the directory's; 4 ids are refused with one line naming config.json's eos_token_id, no file left;
8. re-export of a GGUF file alone (`export-gguf --model F.gguf`, as llama-quantize): f32 file -> q8_0 and
   bf16 byte-identical to the directory's q8_0 / bf16 export (tensor infos, data, metadata), and f32 -> f32
   the file itself; against the f32 source only general.file_type / quantization_version differ; --out
   the input file itself is refused, the file untouched.
usage: test_gguf_alone.py --sprinter BIN --tok-driver BIN --chat-driver BIN --source SRCDIR --work DIR
"""
import argparse
import json
import os
import shutil
import struct
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sweep_fixture as fx  # noqa: E402

IDS = "5,17,200,42,99,7,123,88,260,3,4,268"
LINES = 300
ARCHS = ("gpt2", "llama", "qwen2", "qwen3")
LLAMA3_RE = ("(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
             "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+")
QWEN2_RE = ("(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
            "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+")
L3_NEAR = 1e-4  # f32 divisors (rope_freqs.weight) against double ones: float rounding of inv_freq only
ADDED = [("<|im_start|>", True), ("<|im_end|>", True), ("<think>", False), ("</think>", False)]


def sh(args, env=None):
    return subprocess.run([str(a) for a in args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          env=dict(os.environ, **(env or {})))


def must(r, what):
    if r.returncode != 0:
        raise RuntimeError("%s: %s" % (what, r.stderr.decode(errors="replace")))
    return r.stdout


# ---------------------------------------------------------------- GGUF rewriting (format: engine/model/gguf.h)

SCALAR = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}


def gguf_split(b):
    """(version, n_tensors, [(key, type, value bytes)], tensor info bytes, data section bytes)."""
    pos = 4
    version, n_t, n_kv = struct.unpack_from("<IQQ", b, pos)
    pos += 20

    def skip_value(t, p):
        if t == 8:
            return p + 8 + struct.unpack_from("<Q", b, p)[0]
        if t == 9:
            et, n = struct.unpack_from("<IQ", b, p)
            p += 12
            for _ in range(n):
                p = skip_value(et, p)
            return p
        return p + SCALAR[t]

    kvs = []
    for _ in range(n_kv):
        kl = struct.unpack_from("<Q", b, pos)[0]
        key = b[pos + 8:pos + 8 + kl].decode()
        t = struct.unpack_from("<I", b, pos + 8 + kl)[0]
        start = pos + 12 + kl
        pos = skip_value(t, start)
        kvs.append((key, t, b[start:pos]))
    info_start = pos
    for _ in range(n_t):
        kl = struct.unpack_from("<Q", b, pos)[0]
        nd = struct.unpack_from("<I", b, pos + 8 + kl)[0]
        pos += 8 + kl + 4 + 8 * nd + 4 + 8
    data = (pos + 31) // 32 * 32
    return version, n_t, kvs, b[info_start:pos], b[data:]


def gguf_join(version, n_t, kvs, infos, data):
    h = b"GGUF" + struct.pack("<IQQ", version, n_t, len(kvs))
    for key, t, val in kvs:
        k = key.encode()
        h += struct.pack("<Q", len(k)) + k + struct.pack("<I", t) + val
    h += infos
    return h + b"\0" * ((-len(h)) % 32) + data


def gstr(s):
    s = s.encode()
    return struct.pack("<Q", len(s)) + s


def rewrite(src, dst, drop=None, set_kv=None):
    """src with the key drop removed and/or set_kv = (key, type, value bytes) replacing (or adding) one."""
    with open(src, "rb") as f:
        version, n_t, kvs, infos, data = gguf_split(f.read())
    kvs = [kv for kv in kvs if kv[0] != drop]
    if set_kv:
        kvs = [kv for kv in kvs if kv[0] != set_kv[0]] + [set_kv]
    with open(dst, "wb") as f:
        f.write(gguf_join(version, n_t, kvs, infos, data))
    return dst


# ---------------------------------------------------------------- models

def make_model(sp, work, name, arch, tokdir, vocab, preset="tiny"):
    """work/name: init-random of arch's tiny preset's config with the given vocabulary size, and the tokenizer."""
    d = os.path.join(work, name)
    shutil.rmtree(d, ignore_errors=True)
    probe = os.path.join(work, "probe-" + arch)
    shutil.rmtree(probe, ignore_errors=True)
    must(sh([sp, "init-random", "--arch", arch, "--preset", preset, "--out", probe]), "init-random " + arch)
    with open(os.path.join(probe, "config.json")) as f:
        cfg = json.load(f)
    shutil.rmtree(probe)
    cfg["vocab_size"] = vocab
    for k in ("bos_token_id", "eos_token_id"):
        if k in cfg:
            cfg[k] = 268
    cfg_path = os.path.join(work, "config-%s.json" % arch)
    with open(cfg_path, "w") as f:
        json.dump(cfg, f)
    must(sh([sp, "init-random", "--arch", arch, "--config", cfg_path, "--seed", 3, "--out", d]), "init-random " + arch)
    for fn in os.listdir(tokdir):
        shutil.copy(os.path.join(tokdir, fn), d)
    return d


def export(sp, model, dtype, dst):
    """dst/: config.json, the tokenizer files and model.gguf; returns (dst, dst/model.gguf)."""
    shutil.rmtree(dst, ignore_errors=True)
    os.makedirs(dst)
    for fn in os.listdir(model):
        if not fn.endswith(".safetensors"):
            shutil.copy(os.path.join(model, fn), dst)
    g = os.path.join(dst, "model.gguf")
    must(sh([sp, "export-gguf", "--model", model, "--out", g, "--dtype", dtype]), "export-gguf %s %s" % (model, dtype))
    return dst, g


def tokenizer_variant(src_json, dst, pre_re, ignore_merges, nfc):
    """A tokenizer.json like Llama 3's (pre_re, ignore_merges) or Qwen's (and NFC) over the test vocabulary,
    with ADDED after it; tokenizer_config.json with add_bos_token and <|im_start|> as BOS for Llama's."""
    with open(src_json) as f:
        j = json.load(f)
    n = len(j["model"]["vocab"])
    j["added_tokens"] += [{"id": n + i, "content": c, "single_word": False, "lstrip": False, "rstrip": False,
                           "normalized": False, "special": s} for i, (c, s) in enumerate(ADDED)]
    if pre_re:
        j["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": pre_re}, "behavior": "Isolated", "invert": False},
            {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}]}
    j["model"]["ignore_merges"] = ignore_merges
    j["normalizer"] = {"type": "NFC"} if nfc else None
    os.makedirs(dst, exist_ok=True)
    with open(os.path.join(dst, "tokenizer.json"), "w") as f:
        json.dump(j, f)
    return dst, n + len(ADDED)


def kv_of(path):
    """{key: (type, value bytes)} of a GGUF file."""
    with open(path, "rb") as f:
        return {k: (t, v) for k, t, v in gguf_split(f.read())[2]}


def kv_int(kv, key):
    t, v = kv.get(key, (None, b""))
    return struct.unpack("<I", v)[0] if t == 4 else None


def kv_text(kv, key):
    t, v = kv.get(key, (None, b""))
    return v[8:].decode() if t == 8 else None


def kv_diff(p1, p2):
    """The keys whose type or value differ between two GGUF files (or that one lacks)."""
    a, b = kv_of(p1), kv_of(p2)
    return sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))


CHAT_TEMPLATE = ("{{ bos_token }}{% for m in messages %}<|{{ m['role'] }}|>\n{{ m['content'] }}{{ eos_token }}\n"
                 "{% endfor %}{% if add_generation_prompt %}<|assistant|>\n{% endif %}")


def prompts_of(out):
    import sqlite3
    con = sqlite3.connect(os.path.join(out, "runs.sqlite"))
    rows = con.execute("SELECT r.prompt_template, p.prompt_index, p.n_prompt_tokens, p.output_text FROM runs r "
                       "JOIN prompts p ON p.run_hash = r.run_hash ORDER BY r.run_index, p.prompt_index").fetchall()
    con.close()
    return rows


def check_chat_template(t, sp, chat, work, src, fixtures):
    """6. the exported file's tokenizer.chat_template is the directory's; the same chat prompts in a sweep."""
    m = make_model(sp, work, "chat-src", "qwen2", os.path.join(fixtures, "gpt2"), 269)
    variants = {"tokenizer_config.json": ({"chat_template": CHAT_TEMPLATE}, None, CHAT_TEMPLATE),
                "chat_template.jinja": ({}, "{{ messages[0]['content'] }}", "{{ messages[0]['content'] }}"),
                "named list": ({"chat_template": [{"name": "tool_use", "template": "tools"},
                                                  {"name": "default", "template": CHAT_TEMPLATE}]}, None, CHAT_TEMPLATE)}
    for label, (cfg, jinja, want) in variants.items():
        for fn in ("tokenizer_config.json", "chat_template.jinja"):
            if os.path.exists(os.path.join(m, fn)):
                os.remove(os.path.join(m, fn))
        with open(os.path.join(m, "tokenizer_config.json"), "w") as f:
            json.dump(cfg, f)
        if jinja:
            with open(os.path.join(m, "chat_template.jinja"), "w") as f:
                f.write(jinja)
        d, g = export(sp, m, "f32", os.path.join(work, "chat-f32"))
        rd, rf = json.loads(sh([chat, "--load", d]).stdout or "{}"), json.loads(sh([chat, "--load", g]).stdout or "{}")
        got = kv_text(kv_of(g), "tokenizer.chat_template")
        t.check(got == want and rd.get("template") == rf.get("template") == want,
                "chat template from %s: tokenizer.chat_template is the one the directory renders (%r)" % (label, got))
    # the sweep's chat-formatted prompts: the file alone == the directory (the last export: the named list)
    res = {}
    for label, target in (("dir", d), ("file", g)):
        spec = os.path.join(work, "spec-chat-%s.ini" % label)
        with open(spec, "w") as f:
            f.write("[sweep]\nname = c\nmethods = ar\n[models]\ntarget = %s\ndraft = %s\n[data]\ndatasets = %s\n"
                    "n_prompts = 2\nprompt_template = chat_template\n[decode]\nmax_new_tokens = 4\n"
                    % (target, target, os.path.join(src, "data", "datasets", "encyclopedic.jsonl")))
        out = os.path.join(work, "sweep-chat-" + label)
        shutil.rmtree(out, ignore_errors=True)
        r = sh([sp, "sweep", spec, "--out", out])
        res[label] = prompts_of(out) if r.returncode == 0 else "rc %d: %s" % (r.returncode, r.stderr.decode()[-300:])
    t.check(isinstance(res["dir"], list) and len(res["dir"]) == 2 and res["dir"][0][0] == "chat_template" and
            res["dir"] == res["file"],
            "sweep with prompt_template = chat_template: the file alone's prompts (tokens) and outputs == the "
            "directory's (%s / %s)" % (str(res["dir"])[:150], str(res["file"])[:150]))


def check_eos_list(t, sp, work, fixtures):
    """7. config.json's 3-id eos_token_id list under eos / eot / eom, read back; 4 ids refused."""
    tokdir, vocab = tokenizer_variant(os.path.join(fixtures, "gpt2_json", "tokenizer.json"), os.path.join(work, "tok-eos"),
                                      LLAMA3_RE, True, False)
    im_start, im_end, think = vocab - 4, vocab - 3, vocab - 2
    with open(os.path.join(tokdir, "tokenizer_config.json"), "w") as f:
        json.dump({"eos_token": "<|im_end|>"}, f)  # the tokenizer's eos, the last of the list (Llama 3.1's <|eot_id|>)
    m = make_model(sp, work, "eos3", "llama", tokdir, vocab)

    def set_eos(ids):
        with open(os.path.join(m, "config.json")) as f:
            cfg = json.load(f)
        cfg["eos_token_id"] = ids
        with open(os.path.join(m, "config.json"), "w") as f:
            json.dump(cfg, f)

    set_eos([268, im_start, im_end])
    d, g = export(sp, m, "f32", os.path.join(work, "eos3-f32"))
    kv = kv_of(g)
    keys = tuple(kv_int(kv, "tokenizer.ggml.%s_token_id" % k) for k in ("eos", "eot", "eom"))
    t.check(keys == (268, im_end, im_start), "eos list [268, %d, %d], tokenizer eos %d: eos / eot / eom keys %s"
            % (im_start, im_end, im_end, keys))

    def eos_ids(target):
        r = sh([sp, "info", "--model", target])
        lines = r.stdout.decode().splitlines()
        ids = [set(x.split(" ", 1)[1].split(",")) for x in lines if x.startswith("eos_ids ")]
        return ids, [x for x in lines if not x.startswith("eos_ids ")]

    (ed, rest_d), (ef, rest_f) = eos_ids(d), eos_ids(g)
    t.check(ed == ef == [{"268", str(im_start), str(im_end)}] and rest_d == rest_f,
            "info: the file alone stops at the directory's eos ids %s (file: %s), the rest of info equal" % (ed, ef))
    set_eos([268, im_start, im_end, think])
    out = os.path.join(work, "eos4.gguf")
    r = sh([sp, "export-gguf", "--model", m, "--out", out])
    err = r.stderr.decode(errors="replace").strip()
    t.check(r.returncode == 1 and len(err.splitlines()) == 1 and "config.json" in err and "eos_token_id" in err and
            not os.path.exists(out) and not os.path.exists(out + ".tmp"),
            "4 end-of-sequence ids refused with one line naming config.json's eos_token_id, no file (rc %d: %s)"
            % (r.returncode, err))


def check_reexport(t, sp, work, files):
    """8. export-gguf --model F.gguf: from the f32 file, the directory's q8_0 / bf16 files byte for byte."""
    for arch, f32 in sorted((a, g) for (a, dt), g in files.items() if dt == "f32"):
        src_dir = os.path.join(work, arch)
        for dt in ("q8_0", "bf16", "f32"):
            direct = files.get((arch, dt)) or export(sp, src_dir, dt, os.path.join(work, "%s-%s" % (arch, dt)))[1]
            again = os.path.join(work, "re-%s-%s.gguf" % (arch, dt))
            r = sh([sp, "export-gguf", "--model", f32, "--out", again, "--dtype", dt])
            if not t.check(r.returncode == 0, "re-export %s f32 -> %s (rc %d: %s)"
                           % (arch, dt, r.returncode, r.stderr.decode(errors="replace").strip()[:300])):
                continue
            with open(direct, "rb") as f1, open(again, "rb") as f2:
                a, b = gguf_split(f1.read()), gguf_split(f2.read())
            t.check(a[1] == b[1] and a[3] == b[3] and a[4] == b[4],
                    "re-export %s f32 -> %s: %d tensors' infos and data == the directory's %s export" % (arch, dt, b[1], dt))
            t.check(a[2] == b[2], "re-export %s f32 -> %s: metadata == the directory's, in order (differ: %s)"
                    % (arch, dt, kv_diff(direct, again)))
            want = [] if dt == "f32" else ["general.file_type"] + (["general.quantization_version"] if dt == "q8_0" else [])
            differ = kv_diff(f32, again)
            t.check(differ == want, "re-export %s f32 -> %s: against the source only %s differ (%s)"
                    % (arch, dt, want or "nothing", differ))
    f32 = files["llama", "f32"]
    with open(f32, "rb") as f:
        before = f.read()
    r = sh([sp, "export-gguf", "--model", f32, "--out", f32, "--dtype", "q8_0"])
    err = r.stderr.decode(errors="replace").strip()
    with open(f32, "rb") as f:
        same = f.read() == before
    t.check(r.returncode != 0 and len(err.splitlines()) == 1 and same and not os.path.exists(f32 + ".tmp"),
            "re-export onto the input file itself refused, the file untouched (rc %d: %s)" % (r.returncode, err))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sprinter", required=True)
    ap.add_argument("--tok-driver", required=True)
    ap.add_argument("--chat-driver", required=True)
    ap.add_argument("--source", required=True)
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    sp, driver, src, work = (os.path.abspath(x) for x in (a.sprinter, a.tok_driver, a.source, a.work))
    chat = os.path.abspath(a.chat_driver)
    os.makedirs(work, exist_ok=True)
    t = fx.Checks("gguf_alone")
    fixtures = os.path.join(src, "tests", "tokenizer", "fixtures")
    # 1. each architecture, f32 and q8_0: the file alone == the directory holding it
    files = {}
    for arch in ARCHS:
        m = make_model(sp, work, arch, arch, os.path.join(fixtures, "gpt2"), 269)
        for dt in ("f32", "q8_0"):
            d, g = export(sp, m, dt, os.path.join(work, "%s-%s" % (arch, dt)))
            files[arch, dt] = g
            runs = {"logits --all": ["logits", "--ids", IDS, "--all"],
                    "generate": ["generate", "--prompt", "Hello world, it's 2024!", "--max-new", 12, "--seed", 7, "--ignore-eos",
                                 "--temperature", 1.0],
                    "info": ["info"],
                    "tokenize": ["tokenize", "--text", "a <|endoftext|> b\n\tcafé 12345 don't"]}
            for label, args in runs.items():
                rd, rf = sh([sp, args[0], "--model", d] + args[1:]), sh([sp, args[0], "--model", g] + args[1:])
                t.check(rd.returncode == 0 and rf.returncode == 0 and rd.stdout == rf.stdout and rd.stdout,
                        "%s %s: %s of the file alone == of the directory (rc %d / %d, %d / %d bytes) %s"
                        % (arch, dt, label, rd.returncode, rf.returncode, len(rd.stdout), len(rf.stdout),
                           rf.stderr.decode(errors="replace").strip()[:300]))
    # 1b. Llama 3 (llama3 RoPE scaling, stored as rope_freqs.weight: f32 divisors): near the directory, whose
    # divisors come from config.json's parameters in double; 200 positions, past original_max_position_embeddings
    # 64; control: the directory without its rope_scaling is farther
    l3 = make_model(sp, work, "llama3", "llama", os.path.join(fixtures, "gpt2"), 269, preset="llama-3-tiny")
    ids = ",".join(str(i * 37 % 269) for i in range(200))
    for dt in ("f32", "q8_0"):
        d, g = export(sp, l3, dt, os.path.join(work, "llama3-%s" % dt))
        ref = [float(x) for x in must(sh([sp, "logits", "--model", d, "--ids", ids, "--all"]), "logits").split()]
        got = [float(x) for x in must(sh([sp, "logits", "--model", g, "--ids", ids, "--all"]), "logits").split()]
        diff = max(abs(x - y) for x, y in zip(ref, got))
        t.check(len(ref) == len(got) == 200 * 269 and diff <= L3_NEAR,
                "llama3 %s: logits of the file alone within %g of the directory's (%.3g)" % (dt, L3_NEAR, diff))
        plain = os.path.join(work, "llama3-%s-unscaled" % dt)
        shutil.rmtree(plain, ignore_errors=True)
        shutil.copytree(d, plain)
        with open(os.path.join(plain, "config.json")) as f:
            cfg = json.load(f)
        cfg["rope_scaling"] = None
        with open(os.path.join(plain, "config.json"), "w") as f:
            json.dump(cfg, f)
        unscaled = [float(x) for x in must(sh([sp, "logits", "--model", plain, "--ids", ids, "--all"]), "logits").split()]
        dc = max(abs(x - y) for x, y in zip(unscaled, got))
        t.check(dc > 100 * L3_NEAR, "llama3 %s control: without rope scaling the logits differ by %.3g" % (dt, dc))
    # 2. tokenization through the GGUF tokenizer == tokenizer.json's
    variants = {"gpt-2": ("qwen2", None, False, False), "llama-bpe": ("llama", LLAMA3_RE, True, False),
                "qwen2": ("qwen2", QWEN2_RE, False, True)}
    prev = None
    for pre, (arch, pre_re, ignore_merges, nfc) in variants.items():
        tokdir, vocab = tokenizer_variant(os.path.join(fixtures, "gpt2_json", "tokenizer.json"),
                                          os.path.join(work, "tok-" + pre), pre_re, ignore_merges, nfc)
        m = make_model(sp, work, "tokmodel-" + pre, arch, tokdir, vocab)
        d, g = export(sp, m, "f32", os.path.join(work, "tokexp-" + pre))
        corpus = os.path.join(work, "corpus-%s.jsonl" % pre)
        must(sh([sys.executable, os.path.join(src, "tests", "tokenizer", "gen_corpus.py"), corpus, "--lines", LINES,
                 "--seed", 5, "--added-tokens", os.path.join(tokdir, "tokenizer.json")]), "gen_corpus")
        for flags in ([], ["--bos"]):
            rd = sh([driver, "--dir", d, "--in", corpus] + flags)
            rf = sh([driver, "--dir", g, "--in", corpus] + flags)
            n = len(rd.stdout.splitlines())
            diff = sum(x != y for x, y in zip(rd.stdout.splitlines(), rf.stdout.splitlines()))
            t.check(n == LINES and rd.stdout == rf.stdout and rd.returncode == rf.returncode,
                    "pre %s%s: the GGUF tokenizer's ids == tokenizer.json's on %d lines (%d differ; rc %d / %d) %s"
                    % (pre, " --bos" if flags else "", n, diff, rd.returncode, rf.returncode,
                       rf.stderr.decode(errors="replace").strip()[:300]))
        if prev:  # control: another pre-tokenizer's GGUF gives other ids on the same lines
            ro = sh([driver, "--dir", prev, "--in", corpus])
            ndiff = sum(x != y for x, y in zip(rd.stdout.splitlines(), ro.stdout.splitlines()))
            t.check(ro.returncode in (0, 1) and ndiff > 0, "control: pre %s's lines through %s differ on %d lines"
                    % (pre, os.path.basename(os.path.dirname(prev)), ndiff))
        prev = g
        special = sum(c in open(corpus).read() for c, _ in ADDED)
        t.check(special == len(ADDED), "pre %s: the lines hold the added tokens (%d of %d)" % (pre, special, len(ADDED)))
    # 3. the model hash of a file alone is its content's
    def run_hash(target):
        spec = os.path.join(work, "spec-hash.ini")
        with open(spec, "w") as f:
            f.write("[sweep]\nname = h\nmethods = ar\n[models]\ntarget = %s\ndraft = %s\n[data]\ndatasets = %s\n"
                    "n_prompts = 2\n[decode]\nmax_new_tokens = 4\n"
                    % (target, files["qwen3", "q8_0"], os.path.join(src, "data", "datasets", "encyclopedic.jsonl")))
        r = sh([sp, "sweep", spec, "--out", os.path.join(work, "sweep-hash"), "--dry-run"])
        return r.stdout.decode() if r.returncode == 0 else "error: " + r.stderr.decode(errors="replace")
    other = os.path.join(work, "elsewhere", "renamed.gguf")
    os.makedirs(os.path.dirname(other), exist_ok=True)
    shutil.copy(files["qwen3", "f32"], other)
    h_f32, h_copy, h_q8 = run_hash(files["qwen3", "f32"]), run_hash(other), run_hash(files["qwen3", "q8_0"])
    t.check(not h_f32.startswith("error") and h_f32 == h_copy and h_f32 != h_q8,
            "run hash: a renamed copy of the file == the file, the q8_0 file differs (%s)" % h_f32.strip()[-120:])
    # 3b. a sweep over files alone, and its report naming each model's origin and weight dtype
    spec = os.path.join(work, "spec-run.ini")
    with open(spec, "w") as f:
        f.write("[sweep]\nname = g\nmethods = ar\n[models]\ntarget = %s\ndraft = %s\n[data]\ndatasets = %s\n"
                "n_prompts = 2\n[decode]\nmax_new_tokens = 4\n"
                % (files["qwen3", "q8_0"], files["qwen3", "f32"], os.path.join(src, "data", "datasets", "encyclopedic.jsonl")))
    out = os.path.join(work, "sweep-run")
    shutil.rmtree(out, ignore_errors=True)
    r1 = sh([sp, "sweep", spec, "--out", out])
    r2 = sh([sp, "analyze", out]) if r1.returncode == 0 else r1
    report = open(os.path.join(out, "report", "index.md")).read() if r2.returncode == 0 else ""
    t.check("`%s` (GGUF file; weights q8_0)" % files["qwen3", "q8_0"] in report,
            "sweep + analyze over GGUF files alone: the report names the origin \"GGUF file\" and the dtype (rc %d / %d: %s)"
            % (r1.returncode, r2.returncode, (r2.stderr.decode(errors="replace") or report[:0]).strip()[:300]))
    # 5. tokenizer.chat_template (export-gguf writes none; llama.cpp's converter does) with the bos / eos texts
    tmpl = "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
    with_tmpl = rewrite(files["qwen2", "f32"], os.path.join(work, "chat.gguf"),
                        set_kv=("tokenizer.chat_template", 8, gstr(tmpl)))
    r = sh([chat, "--load", with_tmpl])
    got = json.loads(r.stdout.decode() or "{}")
    t.check(got.get("ok") and got.get("template") == tmpl and got.get("bos_token") == "<|endoftext|>" and
            got.get("eos_token") == "<|endoftext|>" and got.get("source") == "tokenizer.chat_template",
            "chat template, bos / eos texts read from the GGUF file (%s)" % r.stdout.decode()[:300])
    r = sh([chat, "--load", files["qwen2", "f32"]])
    got = json.loads(r.stdout.decode() or "{}")
    t.check(got.get("ok") and got.get("template") is None, "no tokenizer.chat_template: no template (%s)" % r.stdout.decode()[:200])
    check_chat_template(t, sp, chat, work, src, fixtures)
    check_eos_list(t, sp, work, fixtures)
    files["llama3", "f32"] = os.path.join(work, "llama3-f32", "model.gguf")
    check_reexport(t, sp, work, files)
    # 4. negative controls: one line naming the key, exit 1
    good = files["llama", "q8_0"]
    cases = [
        ("llama.block_count removed", dict(drop="llama.block_count"), "logits", "llama.block_count"),
        ("llama.embedding_length removed", dict(drop="llama.embedding_length"), "logits", "llama.embedding_length"),
        ("general.architecture removed", dict(drop="general.architecture"), "logits", "general.architecture"),
        ("llama.attention.layer_norm_rms_epsilon removed", dict(drop="llama.attention.layer_norm_rms_epsilon"), "logits",
         "llama.attention.layer_norm_rms_epsilon"),
        ("general.architecture = mamba", dict(set_kv=("general.architecture", 8, gstr("mamba"))), "logits",
         "general.architecture"),
        ("llama.attention.head_count a string", dict(set_kv=("llama.attention.head_count", 8, gstr("4"))), "logits",
         "llama.attention.head_count"),
        ("llama.attention.head_count = 0", dict(set_kv=("llama.attention.head_count", 4, struct.pack("<I", 0))), "logits",
         "llama.attention.head_count"),
        ("llama.rope.scaling.type = yarn", dict(set_kv=("llama.rope.scaling.type", 8, gstr("yarn"))), "logits",
         "llama.rope.scaling.type"),
        ("llama.rope.dimension_count = 2", dict(set_kv=("llama.rope.dimension_count", 4, struct.pack("<I", 2))), "logits",
         "llama.rope.dimension_count"),
        ("tokenizer.ggml.tokens removed", dict(drop="tokenizer.ggml.tokens"), "tokenize", "tokenizer.ggml.tokens"),
        ("tokenizer.ggml.merges removed", dict(drop="tokenizer.ggml.merges"), "tokenize", "tokenizer.ggml.merges"),
        ("tokenizer.ggml.model = llama", dict(set_kv=("tokenizer.ggml.model", 8, gstr("llama"))), "tokenize",
         "tokenizer.ggml.model"),
        ("tokenizer.ggml.pre = deepseek-llm", dict(set_kv=("tokenizer.ggml.pre", 8, gstr("deepseek-llm"))), "tokenize",
         "tokenizer.ggml.pre"),
        ("tokenizer.ggml.bos_token_id = 99999", dict(set_kv=("tokenizer.ggml.bos_token_id", 4, struct.pack("<I", 99999))),
         "tokenize", "tokenizer.ggml.bos_token_id"),
        ("tokenizer.ggml.pre removed, generate", dict(drop="tokenizer.ggml.pre"), "generate", "tokenizer.ggml.pre"),
    ]
    args = {"logits": ["--ids", IDS], "tokenize": ["--text", "hello"], "generate": ["--prompt", "hi", "--max-new", 2]}
    for i, (label, how, cmd, key) in enumerate(cases):
        bad = rewrite(good, os.path.join(work, "bad-%d.gguf" % i), **how)
        r = sh([sp, cmd, "--model", bad] + args[cmd])
        err = r.stderr.decode(errors="replace").strip()
        t.check(r.returncode == 1 and len(err.splitlines()) == 1 and key in err and err.count("bad-%d.gguf" % i) == 1
                and bad in err and not r.stdout,
                "%s: %s refused with one line naming the file once, by its path, and the key (rc %d: %s)"
                % (label, cmd, r.returncode, err))
    # the unchanged rewrite loads (the writer above is not what fails)
    same = rewrite(good, os.path.join(work, "same.gguf"))
    r = sh([sp, "logits", "--model", same, "--ids", IDS])
    t.check(r.returncode == 0 and r.stdout == sh([sp, "logits", "--model", good, "--ids", IDS]).stdout,
            "control: the file rewritten unchanged gives the same logits (rc %d)" % r.returncode)
    t.finish()


if __name__ == "__main__":
    main()
