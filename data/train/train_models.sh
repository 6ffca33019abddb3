#!/bin/sh
# Trains the default draft then the target (one thread, sequentially), then writes
# data/models/MANIFEST.json. Run from anywhere; logs go to stdout.
set -e
cd "$(dirname "$0")/../.."
PY=/usr/bin/python3
start=$(date +%s)
$PY data/train/train_gpt2.py --model draft --threads 1
$PY data/train/train_gpt2.py --model target --threads 1
end=$(date +%s)
$PY data/train/write_manifest.py --wall-seconds $((end - start))
