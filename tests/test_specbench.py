#!/usr/bin/env python3
"""Spec-Bench as its users run it (issue 15), end to end on tiny random GPT-2 models:

- a file in Spec-Bench's exact question.jsonl format (question_id, category, turns, reference; two
  MT-bench questions with 2 turns, one of them with references, a translation question with a
  reference, a qa question without) is swept with the vicuna template, greedy, by ar and sd;
- every prompt row keeps its question_id, category and turn;
- the oracle for the conversation: FastChat's vicuna_v1.1 prompt built here in Python (system + " "
  + "USER: q ASSISTANT:" turns, the answer to an earlier turn being that row's output_text stripped,
  followed by "</s>") is fed to `sprinter generate` (greedy, same max_new): its continuation must be
  the run's output for that turn, and `sprinter tokenize` of it must have the row's n_prompt_tokens;
  greedy sd's outputs must equal ar's turn for turn (lossless, so both see the same conversation);
- `sprinter score` rebuilds every prompt (it checks n_prompt_tokens) and scores it;
- `summary --by task --tsv` equals Spec-Bench's speed.py recomputed here from the rows: speedup =
  mean over questions of tokens / seconds (turns summed) over ar's, mean accepted tokens = tokens /
  target calls per task group;
- `analyze` writes Table 6 with ROUGE-L where references exist and `-` for qa;
- the committed data/datasets/specbench.jsonl has the real file's structure (480 questions, the 13
  categories in their id ranges, 80 two-turn questions, 359 with references) and loads whole;
- prompt_template = chat_template: the target's tokenizer_config.json template, rendered here by
  Jinja2 as transformers does (trim_blocks, lstrip_blocks), is what `sprinter generate` must continue
  into each turn's output; score rebuilds those prompts too;
- a directory holding the same grid at two temperatures: `summary` keeps them apart, each speed-up
  over the ar row of its own temperature (the task table matches on temperature too);
- a directory holding the same grid with two targets: `summary --by task` and `--by category` keep
  them apart (a row per target sha256, labelled target= with a note), never pooled;
- a greedy directory with ar, sd and sprinter (temperature 0, the sound label rule, as make specbench
  runs them): `analyze` writes FINDINGS rows 4, 5 and 6 for it, all in one protocol cell, with numbers:
  no "nan" in any verdict nor in rows 4-6;
- [data] n_prompts and offset count questions (the main sweep: 5 questions, 7 turns; the committed
  file: offset 400, n_prompts 80 are its 80 rag questions); experiments/specbench.ini runs all 480
  questions and stops at EOS;
- truncated prompts (a summarization question longer than the context): the sweep's output, summary
  --by task / --by category (text and tsv), Table 6 and Table 7 count them per group and category;
- bad input: more questions than the file has, Spec-Bench data beside other data, a malformed "turns", chat_template on a model without
  one, each a one-line error naming the file and field, nothing written.
Deterministic; no false-failure rate.
"""
import argparse
import codecs
import configparser
import csv
import io
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sweep_fixture as fx  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
VICUNA_SYSTEM = ("A chat between a curious user and an artificial intelligence assistant. The assistant gives "
                 "helpful, detailed, and polite answers to the user's questions.")
MAX_NEW = 6
# Spec-Bench's format, as data/spec_bench/question.jsonl writes it (texts invented)
QUESTIONS = [
    {"question_id": 81, "category": "writing", "turns": ["Write a short note about tea.", "Now make it rhyme."]},
    {"question_id": 111, "category": "math", "turns": ["What is 2 + 3?", "And times 4?"],
     "reference": ["5", "20"]},
    {"question_id": 161, "category": "translation", "turns": ["Translate German to English: Guten Morgen"],
     "reference": ["Good morning"]},
    {"question_id": 321, "category": "qa", "turns": ["who wrote the odyssey"]},
    # rag: a list of acceptable answers per turn (ROUGE keeps the best)
    {"question_id": 481, "category": "rag", "turns": ["Context: tea is brewed. Question: what is brewed?"],
     "reference": [["tea", "green tea leaves"]]},
]
SPEC = """[sweep]
name = sb
methods = ar, sd

[models]
draft = {work}/draft
target = {work}/target

[data]
datasets = {data}
format = specbench
n_prompts = {n}
offset = {offset}
prompt_template = {template}

[decode]
max_new_tokens = {max_new}
temperature = 0
stop_at_eos = true

[grid]
seeds = 1
gamma = 3
"""


def run(cmd, **kw):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace", **kw)


def make_models(sprinter, work):
    """Tiny random GPT-2 target and draft with the GPT-2 fixture tokenizer and room for the template."""
    for name, dims, seed in (("target", (32, 2, 4), 1), ("draft", (16, 1, 2), 2)):
        cfg = {"model_type": "gpt2", "vocab_size": fx.VOCAB, "n_embd": dims[0], "n_layer": dims[1], "n_head": dims[2],
               "n_positions": 1024, "initializer_range": 0.1, "bos_token_id": fx.VOCAB - 1,
               "eos_token_id": fx.VOCAB - 1}
        path = os.path.join(work, name + ".json")
        with open(path, "w") as f:
            json.dump(cfg, f)
        out = os.path.join(work, name)
        shutil.rmtree(out, ignore_errors=True)
        subprocess.run([sprinter, "init-random", "--arch", "gpt2", "--config", path, "--seed", str(seed), "--out", out],
                       check=True, stdout=subprocess.DEVNULL)
        for fn in ("vocab.json", "merges.txt"):
            shutil.copy(os.path.join(fx.TOKENIZER, fn), out)


def sanitized(raw):
    """The text as the runner stores it: each byte of an invalid UTF-8 sequence becomes '?'."""
    return raw.decode("utf-8", errors="sb_question_marks")


codecs.register_error("sb_question_marks", lambda e: ("?" * (e.end - e.start), e.end))


def vicuna_prompt(turns, answers):
    """FastChat's Conversation.get_prompt() for vicuna_v1.1 (sep_style ADD_COLON_TWO, sep " ", sep2 "</s>")."""
    messages = []
    for k, q in enumerate(turns):
        messages += [("USER", q), ("ASSISTANT", answers[k] if k < len(answers) else None)]
    seps, ret = [" ", "</s>"], VICUNA_SYSTEM + " "
    for i, (role, message) in enumerate(messages):
        ret += role + ": " + message + seps[i % 2] if message else role + ":"
    return ret


def spec_file(work, name, data, n, offset=0, template="vicuna"):
    path = os.path.join(work, name + ".ini")
    with open(path, "w") as f:
        f.write(SPEC.format(work=work, data=data, n=n, offset=offset, template=template, max_new=MAX_NEW))
    return path


def rows_of(db):
    con = sqlite3.connect(db)
    con.row_factory = sqlite3.Row
    out = [dict(r) for r in con.execute(
        "SELECT r.method, r.run_hash, r.prompt_template, p.* FROM runs r JOIN prompts p ON p.run_hash = r.run_hash "
        "WHERE r.status = 'done' ORDER BY r.run_index, p.prompt_index")]
    con.close()
    return out


def check_rows(t, a, rows):
    expect = [(str(q["question_id"]), q["category"], k) for q in QUESTIONS for k in range(len(q["turns"]))]
    for method in ("ar", "sd"):
        got = [(r["example_id"], r["category"], r["turn"]) for r in rows if r["method"] == method]
        t.check(got == expect, "%s rows keep question_id, category, turn: %s" % (method, got))
        t.check(all(r["prompt_template"] == "vicuna" for r in rows if r["method"] == method),
                "runs.prompt_template is vicuna")
    ar = [r for r in rows if r["method"] == "ar"]
    sd = [r for r in rows if r["method"] == "sd"]
    t.check([r["output_text"] for r in ar] == [r["output_text"] for r in sd],
            "greedy sd answers every turn as ar does (the same conversations)")
    # the conversation oracle
    i = 0
    for q in QUESTIONS:
        answers = []
        for k in range(len(q["turns"])):
            row = ar[i]
            i += 1
            text = vicuna_prompt(q["turns"][:k + 1], answers)
            ids = run([a.sprinter, "tokenize", "--model", os.path.join(a.work, "target"), "--text", text])
            n_ids = len(ids.stdout.split())
            t.check(ids.returncode == 0 and n_ids == row["n_prompt_tokens"],
                    "question %s turn %d: the vicuna prompt has %d tokens, the row %d" %
                    (q["question_id"], k + 1, n_ids, row["n_prompt_tokens"]))
            gen = subprocess.run([a.sprinter, "generate", "--model", os.path.join(a.work, "target"), "--prompt", text,
                                  "--temperature", "0", "--max-new", str(MAX_NEW)],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            cont = sanitized(gen.stdout).replace("<|endoftext|>", "")
            if cont.endswith("\n") and not row["output_text"].endswith("\n"):
                cont = cont[:-1]
            t.check(gen.returncode == 0 and cont == row["output_text"],
                    "question %s turn %d: generate on the oracle's conversation %r, the run %r" %
                    (q["question_id"], k + 1, cont, row["output_text"]))
            answers.append(row["output_text"].strip())


def specbench_reference(rows):
    """Spec-Bench's speed.py per task group, from the prompt rows: {(method, group): (speedup, mat, questions)}."""
    mt = {"writing", "roleplay", "reasoning", "math", "coding", "extraction", "stem", "humanities"}
    per = {}
    for r in rows:
        key = (r["method"], r["run_hash"], r["example_id"])
        q = per.setdefault(key, {"cat": r["category"], "tok": 0, "calls": 0, "sec": 0.0})
        q["tok"] += r["tokens"]
        q["calls"] += r["target_calls"]
        q["sec"] += r["t_total"]
    groups = {}
    for (method, _, _), q in per.items():
        g = "mt_bench" if q["cat"] in mt else q["cat"]
        for name in (g, "overall"):
            groups.setdefault((method, name), []).append(q)
    out = {}
    for (method, g), qs in groups.items():
        rate = sum(q["tok"] / q["sec"] for q in qs) / len(qs)
        ar_qs = groups[("ar", g)]
        ar_rate = sum(q["tok"] / q["sec"] for q in ar_qs) / len(ar_qs)
        out[(method, g)] = (rate / ar_rate, sum(q["tok"] for q in qs) / sum(q["calls"] for q in qs), len(qs))
    return out


def check_summary(t, a, out, rows):
    p = run([a.sprinter, "summary", out, "--by", "task", "--tsv"])
    got = {}
    for rec in csv.DictReader(io.StringIO(p.stdout), delimiter="\t"):
        got[(rec["method"], rec["task"])] = (float(rec["speedup_specbench"]), float(rec["mean_accepted_tokens"]),
                                             int(rec["questions"]))
    want = specbench_reference(rows)
    t.check(p.returncode == 0 and set(got) == set(want), "summary --by task groups: %s vs %s %s" %
            (sorted(got), sorted(want), p.stderr))
    for k in want:
        g, w = got.get(k), want[k]
        t.check(g is not None and abs(g[0] - w[0]) <= 1e-6 * w[0] and abs(g[1] - w[1]) <= 1e-9 and g[2] == w[2],
                "%s %s: speedup, MAT, questions %s, Spec-Bench's definition gives %s" % (k[0], k[1], g, w))
    t.check(want.get(("ar", "overall"), (0, 0))[1] == 1.0, "ar's mean accepted tokens is 1.00")
    p = run([a.sprinter, "summary", out, "--by", "category", "--tsv"])
    cat = {(r["method"], r["category"]): r for r in csv.DictReader(io.StringIO(p.stdout), delimiter="\t")}
    t.check(p.returncode == 0 and sorted(cat) == sorted((m, q["category"]) for m in ("ar", "sd") for q in QUESTIONS),
            "summary --by category: a line per (configuration, category): %s %s" % (sorted(cat), p.stderr))
    for (method, c), r in cat.items():
        g = want.get((method, "mt_bench" if c in ("writing", "math") else c))
        if c in ("translation", "qa", "rag"):  # one question each: the category is its task group
            t.check(g is not None and abs(float(r["speedup_specbench"]) - g[0]) <= 1e-6 * g[0],
                    "summary --by category %s %s equals the task group's %s" % (method, c, g))
    p = run([a.sprinter, "summary", out, "--by", "task"])
    t.check(p.returncode == 0 and "mt_bench" in p.stdout and "1.00x 1.00" in p.stdout,
            "summary --by task prints the table: %s %s" % (p.stdout[-600:], p.stderr))


def check_report(t, a, out):
    p = run([a.sprinter, "analyze", out, "--no-plots", "--quiet"])
    path = os.path.join(out, "report", "tables.md")
    text = open(path).read() if os.path.exists(path) else ""
    t.check(p.returncode == 0 and "## Table 6 (Spec-Bench): task groups" in text, "analyze writes Table 6: %s" %
            p.stderr[-300:])
    all_lines = text.splitlines()
    head = [ln for ln in all_lines if ln.startswith("| Dataset | Method | Setting | runs | mt_bench")]
    after = all_lines[all_lines.index(head[0]):] if head else []
    lines = [ln for ln in after if ln.startswith("| sb.jsonl | ar |")][:1]
    if t.check(len(lines) == 1 and len(head) == 1, "Table 6 has an ar row and a header: %s" % lines):
        cells = dict(zip([c.strip() for c in head[0].split("|")], [c.strip() for c in lines[0].split("|")]))
        t.check(cells.get("mt_bench speed-up / MAT") == "1.00x / 1.00", "ar's mt_bench cell: %s" % cells)
        t.check(cells.get("qa ROUGE-L") == "-", "qa has no reference: ROUGE-L '-' (%s)" % cells.get("qa ROUGE-L"))
        for g in ("mt_bench", "translation", "rag", "overall"):
            v = cells.get(g + " ROUGE-L", "-")
            t.check(v != "-" and 0 <= float(v) <= 1, "%s ROUGE-L filled from the references: %s" % (g, v))


def check_categories(t, a, out, rows):
    """Table 7: one line per (row, category) with Spec-Bench's speed-up recomputed here."""
    text = open(os.path.join(out, "report", "tables.md")).read()
    body = text[text.find("## Table 7 (Spec-Bench): per category"):]
    got = {}
    for ln in body.splitlines():
        c = [x.strip() for x in ln.split("|")[1:-1]]
        if len(c) == 10 and c[0] == "sb.jsonl":
            got[(c[1], c[3])] = c
    per = {}
    for r in rows:
        q = per.setdefault((r["method"], r["category"], r["example_id"]), [0, 0.0])
        q[0] += r["tokens"]
        q[1] += r["t_total"]
    cats = [q["category"] for q in QUESTIONS]
    for method in ("ar", "sd"):
        for cat in cats:
            rate = [v[0] / v[1] for k, v in per.items() if k[0] == method and k[1] == cat]
            ar_rate = [v[0] / v[1] for k, v in per.items() if k[0] == "ar" and k[1] == cat]
            want = "%.2fx" % ((sum(rate) / len(rate)) / (sum(ar_rate) / len(ar_rate)))
            c = got.get((method, cat))
            t.check(c is not None and c[5] == "1" and c[6] == want,
                    "Table 7 %s %s: questions, speed-up %s (Spec-Bench's: %s)" % (method, cat, c, want))
            has_ref = any("reference" in q for q in QUESTIONS if q["category"] == cat)
            t.check(c is not None and (c[8] != "-") == has_ref, "Table 7 %s %s: ROUGE-L %s where references %s" %
                    (method, cat, c and c[8], "exist" if has_ref else "do not"))


CHAT_TEMPLATE = ("{{ bos_token }}{% for message in messages %}\n{% if message['role'] == 'user' %}\n"
                 "{{ '<|user|>\\n' + message['content'] + eos_token }}\n{% else %}\n"
                 "{{ '<|assistant|>\\n' + message['content'] | trim + eos_token }}\n{% endif %}\n{% endfor %}\n"
                 "{% if add_generation_prompt %}{{ '<|assistant|>\\n' }}{% endif %}")


def check_chat_template(t, a, data):
    from jinja2.sandbox import ImmutableSandboxedEnvironment
    chat_dir = os.path.join(a.work, "target_chat")
    shutil.rmtree(chat_dir, ignore_errors=True)
    shutil.copytree(os.path.join(a.work, "target"), chat_dir)
    with open(os.path.join(chat_dir, "tokenizer_config.json"), "w") as f:
        json.dump({"chat_template": CHAT_TEMPLATE, "bos_token": {"content": "<|endoftext|>"},
                   "eos_token": "<|endoftext|>"}, f)
    spec = spec_file(a.work, "chat", data, len(QUESTIONS), template="chat_template")
    with open(spec) as f:
        text = f.read().replace("methods = ar, sd", "methods = ar").replace("/target\n", "/target_chat\n")
    with open(spec, "w") as f:
        f.write(text)
    out = os.path.join(a.work, "chat")
    shutil.rmtree(out, ignore_errors=True)
    p = run([a.sprinter, "sweep", spec, "--out", out, "--quiet"])
    if not t.check(p.returncode == 0, "chat_template sweep: exit %d %s" % (p.returncode, p.stderr)):
        return
    rows = rows_of(os.path.join(out, "runs.sqlite"))
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    tmpl = env.from_string(CHAT_TEMPLATE)
    i = 0
    for q in QUESTIONS:
        messages = []
        for k, turn in enumerate(q["turns"]):
            row = rows[i]
            i += 1
            messages.append({"role": "user", "content": turn})
            text = tmpl.render(messages=messages, add_generation_prompt=True, bos_token="<|endoftext|>",
                               eos_token="<|endoftext|>")
            ids = run([a.sprinter, "tokenize", "--model", chat_dir, "--text", text])
            gen = subprocess.run([a.sprinter, "generate", "--model", chat_dir, "--prompt", text, "--temperature", "0",
                                  "--max-new", str(MAX_NEW)], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            cont = sanitized(gen.stdout).replace("<|endoftext|>", "")
            if cont.endswith("\n") and not row["output_text"].endswith("\n"):
                cont = cont[:-1]
            t.check(row["prompt_template"] == "chat_template" and len(ids.stdout.split()) == row["n_prompt_tokens"] and
                    ids.stdout.split()[0] == str(fx.VOCAB - 1) and cont == row["output_text"],
                    "chat_template question %s turn %d: Jinja2's prompt (%d tokens, BOS split out) continues into "
                    "the run's output: %r vs %r (row: %d tokens)" % (q["question_id"], k + 1, len(ids.stdout.split()),
                                                                     cont, row["output_text"], row["n_prompt_tokens"]))
            messages.append({"role": "assistant", "content": row["output_text"].strip()})
    p = run([a.sprinter, "score", out, "--quiet"])
    t.check(p.returncode == 0, "score rebuilds the chat_template prompts: %s" % p.stderr[-300:])


def check_temperatures(t, a, out):
    """The same grid again at temperature 1 in a copy of out: two ar rows, each speed-up against its own."""
    both = os.path.join(a.work, "both_temperatures")
    shutil.rmtree(both, ignore_errors=True)
    shutil.copytree(out, both)
    spec = os.path.join(a.work, "sb.ini")
    hot = os.path.join(a.work, "sb_t1.ini")
    with open(spec) as f, open(hot, "w") as g:
        g.write(f.read().replace("temperature = 0", "temperature = 1.0"))
    p = run([a.sprinter, "sweep", hot, "--out", both, "--quiet"])
    s = run([a.sprinter, "summary", both, "--tsv"])
    rows = list(csv.DictReader(io.StringIO(s.stdout), delimiter="\t"))
    ar = {r["temperature"]: float(r["tokens_per_s"]) for r in rows if r["method"] == "ar"}
    t.check(p.returncode == 0 and sorted(ar) == ["0", "1"] and len(rows) == 4,
            "summary keeps two temperatures apart: %s %s" % ([(r["method"], r["temperature"]) for r in rows], p.stderr))
    for r in rows:
        want = float(r["tokens_per_s"]) / ar.get(r["temperature"], float("nan"))
        t.check(abs(float(r["speedup_vs_ar"]) - want) <= 1e-6 * want,
                "%s T=%s: speedup_vs_ar %s, against its own temperature's ar %.6f" %
                (r["method"], r["temperature"], r["speedup_vs_ar"], want))
    s = run([a.sprinter, "summary", both, "--by", "task", "--tsv"])
    temps = sorted({r["temperature"] for r in csv.DictReader(io.StringIO(s.stdout), delimiter="\t")})
    t.check(temps == ["0", "1"], "the task table keeps the temperatures apart too: %s" % temps)


def check_targets(t, a, out):
    """The same grid with another target swept into a copy of out: the task and category tables keep the
    two targets apart (a row per target sha256, the text tables labelled target= with a note), each
    speed-up over the ar of its own target, never pooled."""
    t2 = os.path.join(a.work, "target2")
    shutil.rmtree(t2, ignore_errors=True)
    subprocess.run([a.sprinter, "init-random", "--arch", "gpt2", "--config", os.path.join(a.work, "target.json"),
                    "--seed", "7", "--out", t2], check=True, stdout=subprocess.DEVNULL)
    for fn in ("vocab.json", "merges.txt"):
        shutil.copy(os.path.join(fx.TOKENIZER, fn), t2)
    both = os.path.join(a.work, "both_targets")
    shutil.rmtree(both, ignore_errors=True)
    shutil.copytree(out, both)
    spec = os.path.join(a.work, "sb.ini")
    other = os.path.join(a.work, "sb_t2.ini")
    with open(spec) as f, open(other, "w") as g:
        g.write(f.read().replace("target = %s/target\n" % a.work, "target = %s\n" % t2).replace("name = sb\n",
                                                                                               "name = sbt2\n"))
    p = run([a.sprinter, "sweep", other, "--out", both, "--quiet"])
    for by in ("task", "category"):
        s = run([a.sprinter, "summary", both, "--by", by, "--tsv"])
        rows = list(csv.DictReader(io.StringIO(s.stdout), delimiter="\t"))
        key = "task" if by == "task" else "category"
        per = {}
        for r in rows:
            per.setdefault((r["method"], r[key]), []).append(r.get("target_sha256"))
        t.check(p.returncode == 0 and s.returncode == 0 and per and
                all(len(v) == 2 and len(set(v)) == 2 and None not in v for v in per.values()),
                "two targets in one --out: summary --by %s --tsv has a row per target sha256 for each method and "
                "%s, never pooled: %s %s" % (by, key, {k: len(v) for k, v in per.items()}, (p.stderr + s.stderr)[-300:]))
        for r in rows:
            if r["method"] == "ar" and r["speedup_specbench"] not in ("nan", ""):
                t.check(abs(float(r["speedup_specbench"]) - 1) < 1e-9,
                        "... ar's speed-up is over its own target's ar (%s %s: %s)" %
                        (r[key], r.get("target_sha256", "?")[:8], r["speedup_specbench"]))
        s = run([a.sprinter, "summary", both, "--by", by])
        t.check(s.returncode == 0 and "target=" in s.stdout and "several model contents" in s.stdout,
                "... summary --by %s labels the rows target= with a note: %s" % (by, s.stdout.strip()[-400:]))


def check_committed(t, a):
    path = os.path.join(ROOT, "data", "datasets", "specbench.jsonl")
    qs = [json.loads(line) for line in open(path, encoding="utf-8")]
    ranges = [("writing", 81, 90), ("roleplay", 91, 100), ("reasoning", 101, 110), ("math", 111, 120),
              ("coding", 121, 130), ("extraction", 131, 140), ("stem", 141, 150), ("humanities", 151, 160),
              ("translation", 161, 240), ("summarization", 241, 320), ("qa", 321, 400),
              ("math_reasoning", 401, 480), ("rag", 481, 560)]
    want_cat = {qid: c for c, lo, hi in ranges for qid in range(lo, hi + 1)}
    t.check([q["question_id"] for q in qs] == list(range(81, 561)) and
            all(q["category"] == want_cat[q["question_id"]] for q in qs),
            "specbench.jsonl: question_ids 81..560 in Spec-Bench's category ranges")
    t.check(sum(len(q["turns"]) == 2 for q in qs) == 80 and sum(len(q["turns"]) for q in qs) == 560 and
            sum("reference" in q for q in qs) == 359,
            "specbench.jsonl: 80 two-turn questions, 560 turns, 359 with references")
    t.check(all(list(q) == ["question_id", "category", "turns"] + (["reference"] if "reference" in q else [])
                for q in qs), "specbench.jsonl: Spec-Bench's field order")
    # the whole file loads, and n_prompts counts questions as Spec-Bench's users do: offset 400 +
    # n_prompts 80 are the 80 rag questions (counted in turns, 480 prompts left all of them out)
    spec = spec_file(a.work, "whole", path, 80, offset=400, template="none")
    with open(spec) as f:
        text = f.read().replace("methods = ar, sd", "methods = ar")
    with open(spec, "w") as f:
        f.write(text)
    out = os.path.join(a.work, "whole")
    shutil.rmtree(out, ignore_errors=True)
    p = run([a.sprinter, "sweep", spec, "--out", out, "--quiet"])
    cats = [r["category"] for r in rows_of(os.path.join(out, "runs.sqlite"))] if p.returncode == 0 else []
    t.check(p.returncode == 0 and cats == ["rag"] * 80,
            "the committed file loads whole; offset 400, n_prompts 80 are its 80 rag questions: %d rows, %s %s" %
            (len(cats), sorted(set(cats)), p.stderr))
    ini = configparser.ConfigParser()
    ini.read(os.path.join(ROOT, "experiments", "specbench.ini"))
    t.check(ini.get("data", "n_prompts") == "480" and ini.get("decode", "stop_at_eos") == "true" and
            ini.get("decode", "temperature") == "0",
            "experiments/specbench.ini: n_prompts = 480 (every question, 560 turns), stop_at_eos = true, greedy")


GREEDY_SPEC = """[sweep]
name = sbgreedy
methods = ar, sd, sprinter

[models]
draft = {work}/draft
target = {work}/target

[data]
datasets = {data}
format = specbench
n_prompts = {n}
prompt_template = none

[decode]
max_new_tokens = {max_new}
temperature = 0
audit = true

[grid]
seeds = 1
gamma = 3
lambda = 1.2
tau = 0.5
max_run = 0

[verifier]
data = {work}/verifier.jsonl
n_prompts = 12
max_new = 8
seed = 3
"""


def check_greedy_findings(t, a, data, n):
    """make specbench's shape: ar, sd, sprinter at temperature 0 must give FINDINGS rows 4-6, no nan."""
    with open(os.path.join(a.work, "verifier.jsonl"), "w") as f:
        for i in range(12):
            f.write(json.dumps({"id": "v%d" % i, "prompt": "tea and water number %d is" % i, "reference": "x",
                                "source": "fixture"}) + "\n")
    spec = os.path.join(a.work, "greedy.ini")
    with open(spec, "w") as f:
        f.write(GREEDY_SPEC.format(work=a.work, data=data, n=n, max_new=MAX_NEW))
    out = os.path.join(a.work, "greedy")
    shutil.rmtree(out, ignore_errors=True)
    p = run([a.sprinter, "sweep", spec, "--out", out, "--quiet"])
    if not t.check(p.returncode == 0, "greedy sweep with sprinter: exit %d %s" % (p.returncode, p.stderr[-400:])):
        return
    p = run([a.sprinter, "score", out, "--quiet"])
    t.check(p.returncode == 0, "greedy directory scored: %s" % p.stderr[-300:])
    p = run([a.sprinter, "analyze", out, "--no-plots", "--quiet"])
    rep = os.path.join(out, "report")
    md_path = os.path.join(rep, "FINDINGS.md")
    if not t.check(p.returncode == 0 and os.path.exists(md_path), "analyze the greedy directory: %s" % p.stderr[-300:]):
        return
    md = open(md_path).read()
    rows = {}
    for ln in md.splitlines():
        c = [x.strip() for x in ln.split("|")[1:-1]]
        if len(c) == 7 and c[0].isdigit():
            rows.setdefault(c[0], []).append(c)
    for k in ("4", "5", "6"):
        t.check(len(rows.get(k, [])) == 1, "greedy FINDINGS has row %s once: %s" % (k, rows.get(k)))
    protocols = {c[2] for v in rows.values() for c in v}
    t.check(len(protocols) == 1, "ar, sd and sprinter of one greedy sweep share one protocol cell: %s" % protocols)
    nan = re.compile(r"(?i)(^|[^a-z])nan(x|[^a-z]|$)")
    bad = [c[0] + ": " + c[4][:60] + " / " + c[5] for v in rows.values() for c in v
           if nan.search(c[5]) or (c[0] in ("4", "5", "6") and nan.search(c[4]))]
    t.check(not bad, "no nan in FINDINGS.md's verdicts, nor in rows 4-6: %s" % bad)
    r5 = rows.get("5", [[""] * 7])[0]
    t.check("sprinter costs" in r5[5] and "x sd and" in r5[5], "row 5 compares sprinter with sd and ar: %s" % r5[5])
    r6 = rows.get("6", [[""] * 7])[0]
    # this sweep times no run alone ([timing] absent): row 6 shows the sweep's figures without a verdict;
    # its models are random-init, so every verdict is withheld and the row's own check is in brackets
    withheld, inner = fx.unwrap_verdict(r6[5])
    t.check(withheld, "row 6's verdict is withheld (random-init models): %s" % r6[5])
    t.check(inner.startswith("no verdict: speed needs runs timed alone") and "sweep timings only" in r6[4],
            "row 6 gives no speed verdict from the sweep's own timings: %s / %s" % (r6[4][:80], inner))
    r4 = rows.get("4", [[""] * 7])[0]
    t.check("sprinter" in r4[5] and "sd" in r4[5], "row 4 compares sprinter with sd: %s" % r4[5])


def check_truncation(t, a):
    """A prompt longer than the context keeps its last part: the sweep's output, summary --by task and
    --by category, Table 6 and Table 7 count such turns per task group, as prompts.prompt_truncated."""
    data = os.path.join(a.work, "long.jsonl")
    words = " ".join("tea water cup%d" % i for i in range(900))
    with open(data, "w") as f:
        f.write(json.dumps({"question_id": 241, "category": "summarization", "turns": ["Summarize: " + words]}) + "\n")
        f.write(json.dumps({"question_id": 321, "category": "qa", "turns": ["who brews tea"]}) + "\n")
    spec = spec_file(a.work, "long", data, 2, template="none")
    with open(spec) as f:
        text = f.read().replace("methods = ar, sd", "methods = ar")
    with open(spec, "w") as f:
        f.write(text)
    out = os.path.join(a.work, "long")
    shutil.rmtree(out, ignore_errors=True)
    p = run([a.sprinter, "sweep", spec, "--out", out, "--quiet"])
    rows = rows_of(os.path.join(out, "runs.sqlite")) if p.returncode == 0 else []
    flags = [(r["category"], r["prompt_truncated"]) for r in rows]
    if not t.check(flags == [("summarization", 1), ("qa", 0)], "the long prompt is truncated, the short one not: %s %s"
                   % (flags, p.stderr[-300:])):
        return
    t.check("truncated prompts" in p.stdout and "summarization 1 of 1 turns" in p.stdout and "overall 1 of 2 turns"
            in p.stdout, "the sweep's output counts truncated prompts per task group: %s" % p.stdout[-500:])
    s = run([a.sprinter, "summary", out, "--by", "task", "--tsv"])
    got = {r["task"]: (r["truncated_turns"], r["turns"]) for r in csv.DictReader(io.StringIO(s.stdout), delimiter="\t")}
    t.check(got == {"summarization": ("1", "1"), "qa": ("0", "1"), "overall": ("1", "2")},
            "summary --by task --tsv: truncated_turns / turns per group %s" % got)
    s = run([a.sprinter, "summary", out, "--by", "task"])
    line = [ln for ln in s.stdout.splitlines() if ln.startswith("truncated")]
    t.check(len(line) == 1 and line[0].split()[1:] == ["-", "-", "1/1", "0/1", "-", "-", "1/2"],
            "summary --by task prints a truncated line per group: %s" % line)
    s = run([a.sprinter, "summary", out, "--by", "category", "--tsv"])
    got = {r["category"]: (r["truncated_turns"], r["turns"]) for r in csv.DictReader(io.StringIO(s.stdout), delimiter="\t")}
    t.check(got == {"summarization": ("1", "1"), "qa": ("0", "1")}, "summary --by category --tsv: %s" % got)
    p = run([a.sprinter, "analyze", out, "--no-plots", "--quiet"])
    path = os.path.join(out, "report", "tables.md")
    text = open(path).read() if p.returncode == 0 and os.path.exists(path) else ""
    t.check("- long.jsonl ar " in text and "summarization 1 of 1, qa 0 of 1, math_reasoning 0 of 0, rag 0 of 0, "
            "overall 1 of 2" in text, "Table 6 lists the truncated turns per group: %s" %
            [ln for ln in text.splitlines() if ln.startswith("- long")])
    body = text[text.find("## Table 7"):]
    t7 = [[x.strip() for x in ln.split("|")[1:-1]] for ln in body.splitlines() if ln.startswith("| long.jsonl | ar |")]
    t7 = {c[3]: c[9] for c in t7 if len(c) == 10}
    t.check(t7 == {"summarization": "1 / 1", "qa": "0 / 1"}, "Table 7's truncated column: %s" % t7)


def check_bad_input(t, a, data):
    cases = []
    cases.append(("more questions than the file has", spec_file(a.work, "toomany", data, len(QUESTIONS), offset=1),
                  "toomany.ini: [data] n_prompts: %s has %d questions (%d turns); in Spec-Bench data offset and n_prompts "
                  "count questions: offset 1 + n_prompts %d needs %d" %
                  (data, len(QUESTIONS), sum(len(q["turns"]) for q in QUESTIONS), len(QUESTIONS), len(QUESTIONS) + 1)))
    plain = os.path.join(a.work, "plain.jsonl")
    with open(plain, "w") as f:
        f.write(json.dumps({"id": "p0", "prompt": "tea", "reference": "x", "source": "fixture"}) + "\n")
    mixed = spec_file(a.work, "mixed", data + ", " + plain, 1)
    with open(mixed) as f:
        text = f.read().replace("format = specbench\n", "")  # each file's format inferred
    with open(mixed, "w") as f:
        f.write(text)
    cases.append(("Spec-Bench beside other data", mixed,
                  "mixed.ini: [data] datasets: %s and %s: one is Spec-Bench data" % (data, plain)))
    bad = os.path.join(a.work, "bad.jsonl")
    with open(bad, "w") as f:
        f.write(json.dumps(QUESTIONS[0]) + "\n" + json.dumps({"question_id": 9, "category": "qa", "turns": "x"}) + "\n")
    cases.append(("turns not a list", spec_file(a.work, "badturns", bad, 3), "%s: line 2: field \"turns\"" % bad))
    cases.append(("chat_template without one", spec_file(a.work, "nochat", data, 2, template="chat_template"),
                  "/target: [data] prompt_template = chat_template, but the model has no chat template"))
    for what, spec, want in cases:
        out = os.path.join(a.work, "bad-" + what.replace(" ", "_"))
        shutil.rmtree(out, ignore_errors=True)
        p = run([a.sprinter, "sweep", spec, "--out", out, "--quiet"])
        lines = p.stderr.strip().splitlines()
        t.check(p.returncode != 0 and len(lines) == 1 and want in lines[0],
                "%s: exit %d, one line naming it (%r): %r" % (what, p.returncode, want, lines))
        t.check(not os.path.exists(os.path.join(out, "runs.sqlite")) or not rows_of(os.path.join(out, "runs.sqlite")),
                "%s: no result rows written" % what)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sprinter", required=True)
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    t = fx.Checks("specbench")
    shutil.rmtree(a.work, ignore_errors=True)
    os.makedirs(a.work)
    make_models(a.sprinter, a.work)
    data = os.path.join(a.work, "sb.jsonl")
    with open(data, "w") as f:
        for q in QUESTIONS:
            f.write(json.dumps(q) + "\n")
    n = sum(len(q["turns"]) for q in QUESTIONS)
    out = os.path.join(a.work, "out")
    # n_prompts counts questions (5), the sweep runs their 7 turns (check_rows: every turn, in order)
    p = run([a.sprinter, "sweep", spec_file(a.work, "sb", data, len(QUESTIONS)), "--out", out, "--quiet"])
    if not t.check(p.returncode == 0, "sweep: exit %d %s" % (p.returncode, p.stderr)):
        t.finish()
    rows = rows_of(os.path.join(out, "runs.sqlite"))
    check_rows(t, a, rows)
    p = run([a.sprinter, "score", out, "--target", os.path.join(a.work, "target"), "--quiet"])
    con = sqlite3.connect(os.path.join(out, "runs.sqlite"))
    n_scored = con.execute("SELECT COUNT(*) FROM outputs").fetchone()[0]
    con.close()
    t.check(p.returncode == 0 and n_scored == 2 * n, "score rebuilds every conversation: exit %d, %d rows %s" %
            (p.returncode, n_scored, p.stderr[-300:]))
    check_summary(t, a, out, rows)
    check_report(t, a, out)
    check_categories(t, a, out, rows)
    check_chat_template(t, a, data)
    check_temperatures(t, a, out)
    check_targets(t, a, out)
    check_committed(t, a)
    check_greedy_findings(t, a, data, len(QUESTIONS))
    check_truncation(t, a)
    check_bad_input(t, a, data)
    t.finish()


if __name__ == "__main__":
    main()
