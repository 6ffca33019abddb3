#!/usr/bin/env bash
# make demo: the default draft/target pair (trained on Debian-shipped text, committed under
# data/models/) through the whole harness: generation from both models, the default sweep
# (AR, draft-only, SD, SPRINTER with a verifier trained on demand, the i.i.d. oracle), target-model
# scoring of every output, and the analysis report.
set -euo pipefail
SPRINTER=${1:-build/sprinter}
OUT=${2:-results/default}
PROMPT=$(head -1 data/datasets/encyclopedic.jsonl | /usr/bin/python3 -c 'import json,sys; print(json.loads(sys.stdin.readline())["prompt"])' 2>/dev/null ||
         echo "boardwalk n. a walkway made of wooden boards")

echo "== the default pair"
for m in draft target; do
  "$SPRINTER" info --model "data/models/$m" | grep -E "^(params|weight_bytes)" | paste -sd' ' | sed "s/^/$m: /"
done
echo "== sprinter generate (prompt: $PROMPT)"
for m in draft target; do
  printf '%s: ' "$m"
  "$SPRINTER" generate --model "data/models/$m" --prompt "$PROMPT" --max-new 40 --seed 1 --temperature 0.8 2>/dev/null
done

echo "== sprinter sweep experiments/default.ini (resumes if interrupted)"
"$SPRINTER" sweep experiments/default.ini --out "$OUT"
echo "== sprinter score (target log-likelihood of every output)"
"$SPRINTER" score "$OUT"
echo "== sprinter analyze"
"$SPRINTER" analyze "$OUT"
