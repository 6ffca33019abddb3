"""llama.cpp through npm node-llama-cpp, for tests/test_gguf.py and bench/bench_llamacpp.py: the pinned
packages, their install into a folder of one's own, and one run of llamacpp_run.mjs (a JSON job in,
its JSON answer out; the job format is in that script)."""
import json
import os
import shutil
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))
# the library and its linux-x64 CPU binaries; the optional GPU builds (~650 MB) are left out
NPM_PKGS = ["node-llama-cpp@3.21.1", "@node-llama-cpp/linux-x64@3.21.1"]


def sh(args, **kw):
    return subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace", **kw)


def install(npm_dir):
    """Copies llamacpp_run.mjs into npm_dir and installs NPM_PKGS there once. Returns "" on success,
    else why not (node below 20, which node-llama-cpp requires, or npm missing or failing)."""
    os.makedirs(npm_dir, exist_ok=True)
    shutil.copy(os.path.join(HERE, "llamacpp_run.mjs"), npm_dir)
    if os.path.exists(os.path.join(npm_dir, "node_modules", "node-llama-cpp", "package.json")):
        return ""
    if not shutil.which("node") or not shutil.which("npm"):
        return "node or npm missing"
    v = sh(["node", "--version"]).stdout.strip().lstrip("v").split(".")
    if not v[0].isdigit() or int(v[0]) < 20:  # node-llama-cpp 3.21.1: engines node >= 20
        return "node %s: node-llama-cpp needs >= 20" % ".".join(v)
    r = sh(["npm", "i", "-E", "--omit=optional", "--no-audit", "--no-fund", "--ignore-scripts", *NPM_PKGS], cwd=npm_dir)
    return "" if r.returncode == 0 else "npm install failed: " + r.stderr[-2000:]


def run(npm_dir, job, job_path, timeout=600):
    """llamacpp_run.mjs on job (written to job_path): its JSON answer; RuntimeError when it fails."""
    with open(job_path, "w") as f:
        json.dump(job, f)
    r = sh(["node", os.path.join(npm_dir, "llamacpp_run.mjs"), job_path], timeout=timeout)
    if r.returncode != 0:
        raise RuntimeError("llama.cpp run failed (rc %d): %s" % (r.returncode, r.stderr[-1500:]))
    return json.loads(r.stdout)
