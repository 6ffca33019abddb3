#!/usr/bin/env bash
# run_llama2.sh - sprinter's Llama tokenizer on the real LLaMA-1/2 vocabulary, against npm oracles.
#
#   run_llama2.sh WORKDIR TOK_DRIVER_BIN
#
# 1. installs (once) llama-tokenizer-js@1.2.2 ("JS tokenizer for LLaMA-based LLMs", which embeds
#    LLaMA-1/2's 32,000 tokens and 61,249 merges) and @lenml/tokenizers@3.7.2 (transformers.js)
#    into WORKDIR/npm;
# 2. make_llama2.py decodes the package's embedded vocabulary and merges into a Hugging Face
#    Llama-2 tokenizer.json (+ tokenizer_config.json) in WORKDIR/llama2;
# 3. writes WORKDIR/corpus.jsonl: 12,000 varied texts (gen_corpus.py);
# 4. llama2_oracle.mjs: llama-tokenizer-js's encode(text, no BOS, preceding space) per text;
# 5. tok_driver loads WORKDIR/llama2 and encodes every text with --special-as-text (llama-tokenizer-js
#    has no added-token splitting: "<s>" in the text is plain text there), checking
#    decode(encode(x)) == x; every line's ids must be identical;
# 6. special_prompts.jsonl against transformers.js on the same tokenizer.json (added tokens split,
#    as Hugging Face does), e.g. "<s> </s> <unk>" -> 1 259 2 259 0.
#
# Exit status: 0 pass, 1 fail, 77 skipped (node/npm missing or the packages cannot be installed).
set -euo pipefail

if [ $# -lt 2 ]; then
    echo "usage: $0 WORKDIR TOK_DRIVER_BIN" >&2
    exit 2
fi
WORK=$1
DRIVER=$2
HERE=$(cd "$(dirname "$0")" && pwd)
PY=/usr/bin/python3
NPM_DIR=$WORK/npm
NM=$NPM_DIR/node_modules
LJS=$NM/llama-tokenizer-js/llama-tokenizer.js
L2=$WORK/llama2
START=$EPOCHREALTIME

# shellcheck source=oracle_common.sh
. "$HERE/oracle_common.sh"

mkdir -p "$WORK"
if [ ! -x "$DRIVER" ]; then
    echo "FAIL: tok_driver not found at $DRIVER" >&2
    exit 1
fi

# ---- 1. oracle packages
if [ ! -f "$LJS" ] || [ ! -d "$NM/@lenml/tokenizers" ]; then
    npm_oracles "$NPM_DIR" llama-tokenizer-js@1.2.2 @lenml/tokenizers@3.7.2
fi

# ---- 2. the Llama-2 tokenizer.json from the package's data
"$PY" "$HERE/make_llama2.py" "$LJS" "$L2"

# ---- 3. corpus
"$PY" "$HERE/gen_corpus.py" "$WORK/corpus.jsonl" --lines 12000
N=$(wc -l < "$WORK/corpus.jsonl")

# ---- 4. oracle ids
T=$EPOCHREALTIME
node "$HERE/llama2_oracle.mjs" "$LJS" "$WORK/corpus.jsonl" "$WORK/oracle_llama2.txt"
echo "oracle: $(elapsed "$T")"

# ---- 5. sprinter ids, round trips, agreement
status=0
T=$EPOCHREALTIME
"$DRIVER" --dir "$L2" --special-as-text --in "$WORK/corpus.jsonl" > "$WORK/sprinter_llama2.txt" ||
    { echo "FAIL: llama2 tok_driver (round trip or error)"; status=1; }
echo "sprinter: $N texts, $(elapsed "$T")"
"$PY" "$HERE/compare.py" "LLaMA-1/2 vocabulary (llama-tokenizer-js)" "$WORK/corpus.jsonl" \
    "$WORK/oracle_llama2.txt" "$WORK/sprinter_llama2.txt" || status=1
echo "ids compared: $(wc -w < "$WORK/oracle_llama2.txt") oracle ids, $(wc -w < "$WORK/sprinter_llama2.txt") sprinter ids"

# ---- 6. special tokens in the text, against transformers.js
SP=$HERE/special_prompts.jsonl
node "$HERE/special_oracle.js" "$NM" "$L2" "$SP" "$WORK/special_oracle_llama2.txt"
"$DRIVER" --dir "$L2" --in "$SP" > "$WORK/special_llama2.txt" || { echo "FAIL: llama2 special tok_driver"; status=1; }
"$PY" "$HERE/compare.py" "special tokens, LLaMA-1/2 vocabulary (transformers.js)" "$SP" \
    "$WORK/special_oracle_llama2.txt" "$WORK/special_llama2.txt" || status=1

echo "total: $(elapsed "$START")"
if [ $status -eq 0 ]; then echo "PASS"; else echo "FAIL"; fi
exit $status
