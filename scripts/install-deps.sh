#!/usr/bin/env bash
# Installs the Debian packages sprinter needs, skipping those already installed.
#   scripts/install-deps.sh          build + run dependencies
#   scripts/install-deps.sh --test   also the test oracles (PyTorch, numpy, Jinja2, Node.js for npm tokenizers),
#                                    pandas and h5py (the reader examples),
#                                    the fuzzers' toolchain (clang, libFuzzer, llvm-symbolizer), valgrind,
#                                    and Slurm + munge (a single-node cluster for the Slurm test)
# Runs as root (or via sudo when available). Safe to rerun.
set -euo pipefail

pkgs=(build-essential cmake pkg-config libopenblas-dev libcjson-dev libgsl-dev libpcre2-dev libicu-dev
      libhdf5-dev libsqlite3-dev libinih-dev sqlite3 nettle-dev hdf5-tools gnuplot-nox libsleef-dev)
if [[ "${1:-}" == "--test" ]]; then
  pkgs+=(python3 python3-torch python3-numpy)
  # the reader examples of results/README.md (tests/test_readers.py)
  pkgs+=(python3-pandas python3-h5py)
  # Jinja2 itself, the oracle of the chat-template renderer (tests/chat/test_chat_template.py)
  pkgs+=(python3-jinja2)
  # `make test` also runs the libFuzzer targets (fuzz/Makefile: clang; libclang-rt-14-dev holds
  # libFuzzer and the sanitizer runtimes; libomp-14-dev because clang's -fopenmp links LLVM's
  # libomp; llvm-14 for llvm-symbolizer, without which a sanitizer report names no function and
  # fuzz/classify.sh cannot tell libhdf5's bugs from ours) and the valgrind memcheck subset
  pkgs+=(clang libclang-rt-14-dev libomp-14-dev llvm-14 valgrind)
  # tests/test_slurm.py (ctest slurm_array) starts a single-node Slurm cluster (slurmctld, slurmd,
  # munged) to run the sharded sweep as a job array with its merge (experiments/slurm)
  pkgs+=(slurm-wlm munge)
  # Node.js and npm for the tokenizer oracles; keep an existing installation if there is one.
  command -v node >/dev/null 2>&1 || pkgs+=(nodejs)
  command -v npm >/dev/null 2>&1 || pkgs+=(npm)
fi

missing=()
for p in "${pkgs[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if ((${#missing[@]} == 0)); then
  echo "install-deps: all ${#pkgs[@]} packages present"
  exit 0
fi
SUDO=""
if [[ $(id -u) -ne 0 ]]; then
  command -v sudo >/dev/null 2>&1 || { echo "install-deps: need root to install: ${missing[*]}" >&2; exit 1; }
  SUDO=sudo
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
