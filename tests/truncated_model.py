#!/usr/bin/env python3
"""A model file truncated while a command has it mapped (issue 18, inputs): the next read of a vanished
page raises SIGBUS, which engine/util/mapguard.c must turn into one line on stderr naming the file, and exit 1
(before: killed by SIGBUS, exit 135, no message). `sprinter perplexity` over a few hundred documents
runs for seconds; the copy of the model it reads is cut to 100 kB one second after it starts.
A negative control: the same command (on 20 documents) on an intact copy exits 0.

usage: truncated_model.py --sprinter BIN --src REPO_ROOT --work DIR
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sprinter", required=True)
    ap.add_argument("--src", required=True)
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    shutil.rmtree(a.work, ignore_errors=True)
    os.makedirs(a.work)
    docs = {}
    for n in (20, 400):  # the intact control reads 20 documents; the truncation hits a 400-document run
        docs[n] = os.path.join(a.work, "docs%d.txt" % n)
        with open(docs[n], "w") as out:
            for i, line in enumerate(open(os.path.join(a.src, "data", "datasets", "encyclopedic.jsonl"))):
                if i >= n:
                    break
                o = json.loads(line)
                out.write((o["prompt"] + o["reference"]).replace("\n", " ") + "\n")
    env = dict(os.environ)
    # AddressSanitizer would take SIGBUS itself (a multi-line report): let mapguard's handler act
    env["ASAN_OPTIONS"] = (env.get("ASAN_OPTIONS", "") + ":handle_sigbus=0").lstrip(":")
    failed = 0
    for truncate in (False, True):
        model = os.path.join(a.work, "model-truncated" if truncate else "model-intact")
        shutil.copytree(os.path.join(a.src, "data", "models", "target"), model)
        p = subprocess.Popen([a.sprinter, "perplexity", "--model", model, "--data", docs[400 if truncate else 20]], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env=env)
        if truncate:
            time.sleep(1.0)
            os.truncate(os.path.join(model, "model.safetensors"), 100000)
        out, err = p.communicate(timeout=600)
        lines = err.strip().splitlines()
        if not truncate:
            ok = p.returncode == 0 and '"ppl"' in out
            what = "intact model: exit %d" % p.returncode
        else:
            want = "sprinter perplexity: %s: the file was truncated while in use" % os.path.join(model, "model.safetensors")
            ok = p.returncode == 1 and len(lines) == 1 and lines[0].startswith(want) and out == ""
            what = "truncated model: exit %d, stderr %r (want exit 1 and one line starting %r)" % (
                p.returncode, err[-400:], want)
        print(("ok  : " if ok else "FAIL: ") + what)
        failed += not ok
    print("truncated_model: %d failed" % failed)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
