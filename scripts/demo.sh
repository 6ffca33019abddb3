#!/usr/bin/env bash
# make demo: the regime draft/target pair (Llama architecture, trained on Debian-shipped text,
# committed under data/models/regime/; data/README.md) through the whole harness: generation from both models, the default sweep
# (AR, draft-only, SD, SPRINTER with a verifier trained on demand, the i.i.d. oracle), target-model
# scoring of every output, and the analysis report.
set -euo pipefail
SPRINTER=${1:-build/sprinter}
OUT=${2:-results/default}
PROMPT=$(head -1 data/datasets/encyclopedic.jsonl | /usr/bin/python3 -c 'import json,sys; print(json.loads(sys.stdin.readline())["prompt"])' 2>/dev/null ||
         echo "boardwalk n. a walkway made of wooden boards")

PAIR=data/models/regime
echo "== the regime pair ($PAIR)"
for m in draft target; do
  "$SPRINTER" info --model "$PAIR/$m" | grep -E "^(params|weight_bytes)" | paste -sd' ' | sed "s/^/$m: /"
done
echo "== sprinter generate (prompt: $PROMPT)"
for m in draft target; do
  printf '%s: ' "$m"
  "$SPRINTER" generate --model "$PAIR/$m" --prompt "$PROMPT" --max-new 40 --seed 1 --temperature 0.8 2>/dev/null
done

echo "== sprinter sweep experiments/default.ini (resumes if interrupted)"
"$SPRINTER" sweep experiments/default.ini --out "$OUT"
echo "== sprinter score (target log-likelihood of every output)"
"$SPRINTER" score "$OUT"
echo "== sprinter analyze"
"$SPRINTER" analyze "$OUT"
