#!/usr/bin/env python3
"""Every subcommand's standard output is checked (issue 18, "writes to stdout are not checked"): each
subcommand the CLI lists (`sprinter help --commands`, so a new one is covered automatically and fails
here until it has typical arguments below) is run twice with its typical arguments: normally (exit 0,
and what it prints), then with standard output on /dev/full. A command that printed something must
then exit non-zero with one line on stderr naming standard output; one that prints nothing on success
has nothing to lose and must still exit 0. Also, for every listed subcommand, an unknown option and a
known option without its value are refused with exit 2 and exactly one stderr line naming the option
(issue 18: getopt's own line used to precede ours). Deterministic; no false-failure rate.

usage: test_stdout_full.py --sprinter BIN --work DIR
"""
import argparse
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sweep_fixture as fx  # noqa: E402


def typical(w):
    """Typical arguments per subcommand; {n} is replaced by the pass number (fresh output paths)."""
    d, t, data = os.path.join(w, "draft"), os.path.join(w, "target"), os.path.join(w, "data.jsonl")
    return {
        "generate": ["--model", t, "--prompt-ids", "1,2,3", "--max-new", "4"],
        "decode": ["--draft", d, "--target", t, "--prompt-ids", "1,2,3", "--max-new", "4", "--method", "ar,sd"],
        "collect": ["--lambda", "1", "--draft", d, "--target", t, "--data", data, "--n-prompts", "3", "--max-new", "4",
                    "--out", os.path.join(w, "c{n}.h5")],
        "train-verifier": ["--data", os.path.join(w, "c.h5"), "--out", os.path.join(w, "v{n}.safetensors")],
        "tokenize": ["--model", t, "--text", "hello world"],
        "logits": ["--model", t, "--ids", "1,2"],
        "init-random": ["--arch", "gpt2", "--preset", "tiny", "--seed", "1", "--out", os.path.join(w, "ir{n}")],
        "info": ["--model", t],
        "export-gguf": ["--model", t, "--out", os.path.join(w, "g{n}.gguf")],
        "sweep": [os.path.join(w, "s.ini"), "--out", os.path.join(w, "sw{n}")],
        "merge": ["--out", os.path.join(w, "merged{n}"), os.path.join(w, "res")],
        "summary": [os.path.join(w, "res")],
        "score": [os.path.join(w, "res{n}")],
        "dtv": ["--draft", d, "--target", t, "--verifier", os.path.join(w, "v.safetensors"), "--data", data,
                "--n-prefixes", "2", "--out", os.path.join(w, "d{n}.h5")],
        "analyze": [os.path.join(w, "res"), "--no-plots", "--bootstrap", "10"],
        "perplexity": ["--model", t, "--data", os.path.join(w, "text.txt")],
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sprinter", required=True)
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    S, w = a.sprinter, a.work
    shutil.rmtree(w, ignore_errors=True)
    fx.make_models(S, w)
    t = fx.Checks("stdout_full")
    spec = fx.write_spec(w, name="s", methods="ar, sd", n_prompts=2, max_new=4)
    with open(os.path.join(w, "text.txt"), "w") as f:
        f.write("hello world the test\nall well\n")
    setup = [[S, "sweep", spec, "--out", os.path.join(w, "res"), "--quiet"],
             [S, "collect", "--lambda", "1", "--draft", os.path.join(w, "draft"), "--target", os.path.join(w, "target"), "--data",
              os.path.join(w, "data.jsonl"), "--n-prompts", "6", "--max-new", "6", "--out", os.path.join(w, "c.h5")],
             [S, "train-verifier", "--data", os.path.join(w, "c.h5"), "--out", os.path.join(w, "v.safetensors")]]
    for cmd in setup:
        p = subprocess.run(cmd, capture_output=True, text=True)
        if not t.check(p.returncode == 0, "setup %s: %s" % (cmd[1], p.stderr.strip()[-300:])):
            t.finish()
    for n in (1, 2):  # score writes into its results directory: one copy per pass
        shutil.copytree(os.path.join(w, "res"), os.path.join(w, "res%d" % n))
    commands = subprocess.run([S, "help", "--commands"], capture_output=True, text=True).stdout.split()
    t.check(len(commands) >= 15, "the CLI lists its subcommands (%d)" % len(commands))
    args = typical(w)
    for c in commands:
        p = subprocess.run([S, c, "--no-such-option"], capture_output=True, text=True)
        lines = p.stderr.strip().splitlines()
        t.check(p.returncode == 2 and len(lines) == 1 and "--no-such-option: unknown option" in lines[0],
                "%s --no-such-option: exit 2, one line naming it: exit %d %r" % (c, p.returncode, lines))
        valued = [x for x in args.get(c, []) if x.startswith("--") and x not in ("--no-plots",)]
        if valued:  # a known option given last without its value
            p = subprocess.run([S, c, valued[0]], capture_output=True, text=True)
            lines = p.stderr.strip().splitlines()
            t.check(p.returncode == 2 and len(lines) == 1 and ("%s: needs a value" % valued[0]) in lines[0],
                    "%s %s (no value): exit 2, one line: exit %d %r" % (c, valued[0], p.returncode, lines))
    for c in commands:
        if not t.check(c in args, "%s: no typical arguments in tests/test_stdout_full.py (add them)" % c):
            continue
        normal = [x.replace("{n}", "1") for x in args[c]]
        p = subprocess.run([S, c] + normal, capture_output=True, text=True)
        if not t.check(p.returncode == 0, "%s with typical arguments exits 0: %s" % (c, p.stderr.strip()[-300:])):
            continue
        printed = len(p.stdout)
        full = [x.replace("{n}", "2") for x in args[c]]
        with open("/dev/full", "w") as devfull:
            q = subprocess.run([S, c] + full, stdout=devfull, stderr=subprocess.PIPE, text=True)
        lines = q.stderr.strip().splitlines()
        if printed:
            t.check(q.returncode != 0 and lines and "standard output" in lines[-1],
                    "%s (prints %d bytes) with stdout on /dev/full exits non-zero naming standard output: exit %d, %r"
                    % (c, printed, q.returncode, lines[-1:]))
        else:
            t.check(q.returncode == 0, "%s prints nothing, so stdout on /dev/full loses nothing: exit %d %r"
                    % (c, q.returncode, lines[-1:]))
    # outputs never clobber what they should not (issue 18, outputs): every file-output option a subcommand's
    # --help lists ("--out FILE", "--hidden-out FILE", ...; directory outputs "--out DIR" are left to their
    # own tests) is pointed at a symbolic link to a file of ours, a character device (a copy of /dev/null
    # made with mknod here, never the machine's own), a directory, a FIFO, and a file in a read-only
    # directory: each run fails with one line, and the thing named is left exactly as it was
    import re
    import stat
    def run_with_output(c, name, target, kind, n):
        """Runs subcommand c's typical arguments with output option name set to target; None (a failed
        check) when it blocks."""
        argv = [x.replace("{n}", n) for x in args[c]]
        if name in argv:
            argv[argv.index(name) + 1] = target
        else:
            argv += [name, target]
        try:
            return subprocess.run([S, c] + argv, capture_output=True, text=True, timeout=120)
        except subprocess.TimeoutExpired:
            t.check(False, "%s %s on a %s: blocked (120 s)" % (c, name, kind))
            return None

    victims = os.path.join(w, "victims")
    os.makedirs(victims)
    precious = os.path.join(victims, "precious.txt")
    with open(precious, "w") as f:
        f.write("keep me\n")
    can_mknod = True
    for c in commands:
        helptext = subprocess.run([S, c, "--help"], capture_output=True, text=True).stdout
        for opt in sorted(set(re.findall(r"(--[a-z-]*out[a-z-]*) ([A-Z][A-Za-z0-9._]*)", helptext))):
            name, meta = opt
            if "DIR" in meta or c not in args:
                continue
            for kind in ("symlink", "chardev", "directory", "fifo", "readonly"):
                target = os.path.join(victims, "%s_%s_%s" % (c, name.strip("-"), kind))
                if kind == "symlink":
                    os.symlink(precious, target)
                elif kind == "chardev":
                    try:
                        os.mknod(target, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
                    except PermissionError:
                        can_mknod = False
                        continue
                elif kind == "directory":
                    os.mkdir(target)
                elif kind == "fifo":
                    os.mkfifo(target)
                else:
                    ro = target + "_dir"
                    os.mkdir(ro)
                    os.chmod(ro, 0o555)
                    target = os.path.join(ro, "out")
                before = os.lstat(target) if kind != "readonly" else None
                p = run_with_output(c, name, target, kind, "3")
                if p is None:
                    continue
                lines = p.stderr.strip().splitlines()
                if kind == "readonly":
                    untouched = not os.path.exists(target) and os.listdir(os.path.dirname(target)) == []
                else:
                    after = os.lstat(target)
                    untouched = stat.S_IFMT(after.st_mode) == stat.S_IFMT(before.st_mode) and \
                        (kind != "symlink" or (os.readlink(target) == precious and open(precious).read() == "keep me\n"))
                if os.geteuid() == 0 and kind == "readonly":  # root writes anywhere: the check does not apply
                    t.check(untouched or p.returncode == 0, "%s %s in a read-only dir (root)" % (c, name))
                    continue
                t.check(p.returncode != 0 and len(lines) == 1 and untouched,
                        "%s %s on a %s: exit %d, one line, left as it was (%s): %r" %
                        (c, name, kind, p.returncode, untouched, lines[-1:]))
    # directory outputs ("--out DIR": sweep, merge, init-random, ...; the list comes from --help as above)
    # pointed at a regular file of ours, a symbolic link to it, a FIFO and a character device: each run
    # fails with one line naming the path, and the thing named is left exactly as it was
    n_dir_cases = 0
    for c in commands:
        helptext = subprocess.run([S, c, "--help"], capture_output=True, text=True).stdout
        for name, meta in sorted(set(re.findall(r"(--[a-z-]*out[a-z-]*) ([A-Z][A-Za-z0-9._]*)", helptext))):
            if "DIR" not in meta or c not in args:
                continue
            for kind in ("file", "symlink", "fifo", "chardev"):
                target = os.path.join(victims, "dir_%s_%s_%s" % (c, name.strip("-"), kind))
                if kind == "file":
                    with open(target, "w") as f:
                        f.write("keep me\n")
                elif kind == "symlink":
                    os.symlink(precious, target)
                elif kind == "fifo":
                    os.mkfifo(target)
                else:
                    try:
                        os.mknod(target, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
                    except PermissionError:
                        continue
                before = os.lstat(target)
                p = run_with_output(c, name, target, kind, "4")
                if p is None:
                    continue
                lines = p.stderr.strip().splitlines()
                after = os.lstat(target)
                untouched = (stat.S_IFMT(after.st_mode) == stat.S_IFMT(before.st_mode) and after.st_size == before.st_size
                             and (kind != "file" or open(target).read() == "keep me\n")
                             and (kind != "symlink" or (os.readlink(target) == precious and
                                                        open(precious).read() == "keep me\n")))
                n_dir_cases += 1
                t.check(p.returncode != 0 and len(lines) == 1 and target in lines[0] and untouched,
                        "%s %s DIR on a %s: exit %d, one line naming it, left as it was (%s): %r" %
                        (c, name, kind, p.returncode, untouched, lines[-1:]))
    t.check(n_dir_cases >= 9, "directory outputs tried: %d cases (sweep, merge, init-random x 3-4 kinds)" % n_dir_cases)
    if not can_mknod:
        print("note: mknod not permitted here; the character-device case was skipped", flush=True)

    # a command never writes its output over its own input (issue 27, class 3): every file-output option a
    # subcommand's --help lists, pointed at each file the command reads (config.json and model.safetensors
    # of the model directories it is given, every file it is given, and for export-gguf the tokenizer), and
    # at a hard link to its first input: each run fails with one line naming the path, before anything is
    # written, and the input keeps its bytes. The inputs are copies, restored after a case that broke one.
    import hashlib

    def digest(path):
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()

    selfin = os.path.join(w, "selfin")
    originals = {}
    os.makedirs(selfin)
    for x in ("draft", "target", "data.jsonl", "c.h5", "v.safetensors", "text.txt"):
        src, dst = os.path.join(w, x), os.path.join(selfin, x)
        shutil.copytree(src, dst) if os.path.isdir(src) else shutil.copy(src, dst)
    for root, _, files in os.walk(selfin):
        for fn in files:
            originals[os.path.join(root, fn)] = os.path.join(w, os.path.relpath(os.path.join(root, fn), selfin))
    n_self = 0
    for c in commands:
        if c not in args:
            continue
        helptext = subprocess.run([S, c, "--help"], capture_output=True, text=True).stdout
        outs = [n for n, meta in sorted(set(re.findall(r"(--[a-z-]*out[a-z-]*) ([A-Z][A-Za-z0-9._]*)", helptext)))
                if "DIR" not in meta]
        if not outs:
            continue
        argv = [x.replace("{n}", "5").replace(w + os.sep, selfin + os.sep) for x in args[c]]
        inputs = []
        for i, x in enumerate(argv):
            if i > 0 and argv[i - 1] in outs:
                continue
            if os.path.isdir(x):
                names = ["config.json", "model.safetensors"] + (["vocab.json"] if c == "export-gguf" else [])
                inputs += [os.path.join(x, n) for n in names]
            elif os.path.isfile(x):
                inputs.append(x)
        alias = os.path.join(selfin, "alias_%s" % c)
        os.link(inputs[0], alias)
        for name in outs:
            for victim in inputs + [alias]:
                before = {f: digest(f) for f in originals}
                a = list(argv)
                if name in a:
                    a[a.index(name) + 1] = victim
                else:
                    a += [name, victim]
                p = subprocess.run([S, c] + a, capture_output=True, text=True, timeout=120)
                lines = p.stderr.strip().splitlines()
                changed = [f for f in originals if digest(f) != before[f]]
                for f in changed:
                    shutil.copy(originals[f], f)
                left = [f for f in os.listdir(os.path.dirname(victim)) if f.endswith(".tmp")]
                n_self += 1
                t.check(p.returncode == 1 and len(lines) == 1 and victim in lines[0] and "input" in lines[0]
                        and not changed and not left,
                        "%s %s over its own input %s: exit 1, one line naming it, input intact (changed: %s, "
                        "left: %s): exit %d %r" % (c, name, os.path.relpath(victim, w), changed, left, p.returncode,
                                                   lines[-1:]))
    t.check(n_self >= 15, "outputs over inputs tried: %d cases" % n_self)

    # ... nor over the files SQLite opens itself (issue 27 item 4: the database, -wal, -journal, -shm are
    # under the same rule, records/sqlutil.h sql_check_output): a merge whose --out database is a hard link
    # or a symbolic link to the shard's database, a sweep whose --out database is a hard link to its data
    # set, a sweep whose runs.sqlite-wal / -journal is a symbolic link to a file: exit 1, one line naming
    # the path, before anything is written; the linked file keeps its bytes and the --out keeps its link.
    res_db = os.path.join(w, "res", "runs.sqlite")
    victim_data = os.path.join(w, "sqlvictim.jsonl")
    shutil.copy(os.path.join(w, "data.jsonl"), victim_data)
    spec_v = os.path.join(w, "sqlvictim.ini")
    with open(spec) as f, open(spec_v, "w") as g:
        g.write(f.read().replace(os.path.join(w, "data.jsonl"), victim_data))
    sql_cases = [("merge", "a hard link to the shard's database", "runs.sqlite", "link", res_db, "input",
                  ["merge", "--quiet", "--out", "{out}", os.path.join(w, "res")]),
                 ("merge", "a symbolic link to the shard's database", "runs.sqlite", "symlink", res_db, "symbolic link",
                  ["merge", "--quiet", "--out", "{out}", os.path.join(w, "res")]),
                 ("sweep", "a hard link to its data set", "runs.sqlite", "link", victim_data, "input",
                  ["sweep", spec_v, "--quiet", "--out", "{out}"]),
                 ("sweep", "a symbolic link to a file", "runs.sqlite-wal", "symlink", victim_data, "symbolic link",
                  ["sweep", spec_v, "--quiet", "--out", "{out}"]),
                 ("sweep", "a symbolic link to a file", "runs.sqlite-journal", "symlink", victim_data,
                  "symbolic link", ["sweep", spec_v, "--quiet", "--out", "{out}"])]
    for k, (c, what, fname, how, victim, why, argv) in enumerate(sql_cases):
        out = os.path.join(w, "sqlout%d" % k)
        os.makedirs(out)
        lk = os.path.join(out, fname)
        os.link(victim, lk) if how == "link" else os.symlink(victim, lk)
        before = digest(victim)
        try:  # before the check, the hard-linked merge waited on its own lock (SQLite's busy timeout, 120 s)
            p = subprocess.run([S] + [x.replace("{out}", out) for x in argv], capture_output=True, text=True,
                               timeout=30)
        except subprocess.TimeoutExpired:
            p = subprocess.CompletedProcess(argv, -1, "", "timed out after 30 s")
        lines = p.stderr.strip().splitlines()
        intact = digest(victim) == before and (os.path.islink(lk) if how == "symlink" else os.path.isfile(lk))
        t.check(p.returncode == 1 and len(lines) == 1 and lk in lines[0] and why in lines[0] and intact,
                "%s --out whose %s is %s: exit 1, one line naming it (%s), %s intact (%s): exit %d %r" %
                (c, fname, what, why, os.path.basename(victim), intact, p.returncode, lines[-1:]))

    # merge copies each shard log through PATH.tmp like every other output (fsutil sp_output_create_tmp):
    # a symbolic link planted at OUT/tokens/H.h5.tmp is removed, never followed; before, the copy
    # truncated and overwrote the link's target and renamed the link into place as the merged log.
    out = os.path.join(w, "tmplink_out")
    os.makedirs(os.path.join(out, "tokens"))
    victim = os.path.join(w, "tmplink_victim.bin")
    with open(victim, "wb") as f:
        f.write(b"not a token log\n")
    logs = [fn for fn in os.listdir(os.path.join(w, "res", "tokens")) if fn.endswith(".h5")]
    for fn in logs:
        os.symlink(victim, os.path.join(out, "tokens", fn + ".tmp"))
    before = digest(victim)
    p = subprocess.run([S, "merge", "--quiet", "--out", out, os.path.join(w, "res")], capture_output=True, text=True)
    merged_regular = all(os.path.isfile(os.path.join(out, "tokens", fn)) and
                         not os.path.islink(os.path.join(out, "tokens", fn)) for fn in logs)
    t.check(len(logs) > 0 and p.returncode == 0 and digest(victim) == before and merged_regular,
            "merge with links planted at tokens/H.h5.tmp (%d logs): exit 0 (%d %s), the links' target intact, "
            "every merged log a regular file (%s)" % (len(logs), p.returncode, p.stderr.strip()[-200:], merged_regular))

    # an empty output path is refused up front, naming the option's problem (issue 27, class 10)
    for c, name in (("export-gguf", "--out"), ("logits", "--out"), ("train-verifier", "--out")):
        a = [x.replace("{n}", "6") for x in args[c]]
        if name in a:
            a[a.index(name) + 1] = ""
        else:
            a += [name, ""]
        p = subprocess.run([S, c] + a, capture_output=True, text=True)
        lines = p.stderr.strip().splitlines()
        t.check(p.returncode == 1 and len(lines) == 1 and "output path is empty" in lines[0],
                "%s %s \"\": exit 1, one line saying the path is empty: exit %d %r" % (c, name, p.returncode, lines))

    # inputs that are not regular files are refused at once, never read or waited on (issue 18, inputs)
    for kind in ("FIFO", "directory"):
        mdir = os.path.join(w, "m_" + kind)
        shutil.copytree(os.path.join(w, "target"), mdir)
        cfg = os.path.join(mdir, "config.json")
        os.unlink(cfg)
        os.mkfifo(cfg) if kind == "FIFO" else os.mkdir(cfg)
        data = os.path.join(w, "data_" + kind)
        os.mkfifo(data) if kind == "FIFO" else os.mkdir(data)
        for what, cmd in (("config.json", [S, "info", "--model", mdir]),
                          ("dataset", [S, "collect", "--lambda", "1", "--draft", os.path.join(w, "draft"), "--target",
                                       os.path.join(w, "target"), "--data", data, "--out", os.path.join(w, "x.h5")])):
            try:
                p = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
                lines = p.stderr.strip().splitlines()
                t.check(p.returncode == 1 and len(lines) == 1 and ("not a regular file (a %s)" % kind) in lines[0],
                        "%s as a %s: exit 1, one line: exit %d %r" % (what, kind, p.returncode, lines))
            except subprocess.TimeoutExpired:
                t.check(False, "%s as a %s: the command blocked (60 s)" % (what, kind))

    # a tokenizer that does not fit the model is named (issue 18, messages): larger than vocab_size, and
    # smaller (the model then emits an id the tokenizer lacks)
    import json
    for vocab, want in ((200, "the tokenizer has 269 tokens but"), (4000, "is not in this tokenizer's vocabulary")):
        mdir = os.path.join(w, "v%d" % vocab)
        cfg = {"model_type": "gpt2", "vocab_size": vocab, "n_embd": 16, "n_layer": 1, "n_head": 2, "n_positions": 64,
               "initializer_range": 2.0, "bos_token_id": 0, "eos_token_id": 0}
        with open(mdir + ".json", "w") as f:
            json.dump(cfg, f)
        subprocess.run([S, "init-random", "--arch", "gpt2", "--config", mdir + ".json", "--seed", "5", "--out", mdir],
                       check=True, capture_output=True)
        for fn in ("vocab.json", "merges.txt"):
            shutil.copy(os.path.join(w, "target", fn), mdir)
        p = subprocess.run([S, "generate", "--model", mdir, "--prompt", "hello", "--max-new", "40", "--seed", "1",
                            "--ignore-eos"], capture_output=True, text=True)
        lines = p.stderr.strip().splitlines()
        t.check(p.returncode == 1 and len(lines) == 1 and want in lines[0] and
                os.path.join(mdir, "vocab.json") in lines[0],
                "vocab_size %d vs a 269-token tokenizer: one line naming the tokenizer file: %r" % (vocab, lines))

    # dataset lines hold exactly one JSON value (as Python's json.loads) and no \u0000 (issue 18, inputs)
    good = '{"id": "a", "prompt": "hello world", "reference": " x"}'
    for name, line, want in (("two objects", good + " " + good, "unexpected content after the JSON object"),
                             ("trailing text", good + " trailing text", "unexpected content after the JSON object"),
                             ("NUL", '{"id": "a", "prompt": "hello\\u0000world"}', "\\u0000 (NUL)")):
        path = os.path.join(w, "bad_%s.jsonl" % name.replace(" ", "_"))
        with open(path, "w") as f:
            f.write(good + "\n" + line + "\n" + good + "\n")
        p = subprocess.run([S, "collect", "--lambda", "1", "--draft", os.path.join(w, "draft"), "--target",
                            os.path.join(w, "target"), "--data", path, "--n-prompts", "3", "--max-new", "2", "--out",
                            os.path.join(w, "bad.h5")], capture_output=True, text=True)
        lines = p.stderr.strip().splitlines()
        t.check(p.returncode == 1 and len(lines) == 1 and want in lines[0] and "line 2" in lines[0] and
                not os.path.exists(os.path.join(w, "bad.h5")),
                "dataset with %s on line 2 refused in one line naming the line: exit %d %r" % (name, p.returncode, lines))
    t.finish()


if __name__ == "__main__":
    main()
