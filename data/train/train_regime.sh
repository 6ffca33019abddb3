#!/bin/sh
# Trains the regime pair: the Llama target (cross-entropy), then the Llama draft (distillation
# from the exported target), at $REGIME_THREADS (2) threads, then writes
# data/models/regime/MANIFEST.json (incl. PyTorch test perplexities). Each training resumes
# from its checkpoint in $REGIME_CKPT/regime-{target,draft} (default data/cache/train, which is
# git-ignored; point it outside the work tree to keep checkpoints across clean checkouts), so
# rerunning after an interruption continues where it stopped; a finished model is not redone.
# Run from anywhere; logs go to stdout. For a quick pipeline test, extra arguments can be
# appended with $REGIME_TARGET_ARGS / $REGIME_DRAFT_ARGS (train_llama.py) and
# $REGIME_MANIFEST_ARGS (write_manifest.py), e.g. "--steps 4" and "--no-test-ppl".
set -e
cd "$(dirname "$0")/../.."
PY=/usr/bin/python3
THREADS=${REGIME_THREADS:-2}
CK=${REGIME_CKPT:-data/cache/train}
if [ -z "${OPENBLAS_CORETYPE:-}" ] && grep -q ' avx512f' /proc/cpuinfo 2>/dev/null; then
  OPENBLAS_CORETYPE=SkylakeX; export OPENBLAS_CORETYPE   # Debian's OpenBLAS misdetects Zen 4
fi
start=$(date +%s)
# shellcheck disable=SC2086
$PY data/train/train_llama.py --model target --threads "$THREADS" --ckpt-dir "$CK/regime-target" \
    ${REGIME_TARGET_ARGS:-}
t1=$(date +%s)
# shellcheck disable=SC2086
$PY data/train/train_llama.py --model draft --threads "$THREADS" --ckpt-dir "$CK/regime-draft" \
    --teacher data/models/regime/target ${REGIME_DRAFT_ARGS:-}
t2=$(date +%s)
# shellcheck disable=SC2086
$PY data/train/write_manifest.py --set regime --threads "$THREADS" ${REGIME_MANIFEST_ARGS:-} \
    --phase-seconds target=$((t1 - start)) --phase-seconds draft=$((t2 - t1)) \
    --wall-seconds $((t2 - start))
