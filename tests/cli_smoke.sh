#!/usr/bin/env bash
# End-to-end checks of the CLI surface: every subcommand answers --help, usage errors exit 2,
# generate is reproducible under a seed, and greedy generation follows the argmax of `logits`.
# usage: cli_smoke.sh SPRINTER WORKDIR
set -uo pipefail
S=$1
W=$2
source "$(dirname "${BASH_SOURCE[0]}")/shell_common.sh"
fresh_workdir "$W"

for c in generate tokenize logits init-random info export-gguf; do
  out=$("$S" "$c" --help 2>&1); rc=$?
  expect "$c --help exits 0 and prints usage" '[[ $rc -eq 0 && $out == *usage* ]]'
done
"$S" frobnicate >/dev/null 2>&1; rc=$?
expect "unknown command exits 2" '[[ $rc -eq 2 ]]'
"$S" generate --model x >/dev/null 2>&1; rc=$?
expect "generate without a prompt exits 2" '[[ $rc -eq 2 ]]'
err=$("$S" generate --model x --prompt-ids 1 --max-new abc 2>&1); rc=$?
expect "bad --max-new names the option" '[[ $rc -eq 2 && $err == *--max-new* ]]'
err=$("$S" init-random --arch gpt2 --preset nope --out "$W/x" 2>&1); rc=$?
expect "unknown preset lists the presets" '[[ $rc -ne 0 && $err == *tiny* && ! -e $W/x/model.safetensors ]]'
echo '{"model_type": "gpt2", "n_embd": 16}' > "$W/bad_config.json"
err=$("$S" init-random --arch gpt2 --config "$W/bad_config.json" --out "$W/y" 2>&1); rc=$?
expect "a bad --config names its file first: $err" '[[ $rc -eq 1 && $err == "sprinter init-random: $W/bad_config.json: "* ]]'
out=$("$S" tokenize --help 2>&1)
expect "tokenize --help lists every tokenizer layout" '[[ $out == *tokenizer.json* && $out == *merges.txt* && $out == *vocab.bpe* ]]'

for arch in gpt2 gpt-neo llama qwen2 qwen3; do
  M=$W/$arch
  "$S" init-random --arch "$arch" --preset tiny --seed 3 --out "$M" || { bad "init-random $arch"; continue; }
  a=$("$S" generate --model "$M" --prompt-ids 1,2,3 --max-new 12 --seed 5 --ignore-eos 2>/dev/null)
  b=$("$S" generate --model "$M" --prompt-ids 1,2,3 --max-new 12 --seed 5 --ignore-eos 2>/dev/null)
  c=$("$S" generate --model "$M" --prompt-ids 1,2,3 --max-new 12 --seed 6 --ignore-eos 2>/dev/null)
  n=$(echo "$a" | tr ',' '\n' | grep -c .)
  expect "$arch: generate prints 12 ids" '[[ $n -eq 12 ]]'
  expect "$arch: same seed, same output" '[[ -n $a && $a == "$b" ]]'
  expect "$arch: another seed, another output" '[[ $a != "$c" ]]'
  # Greedy: the first generated token is the argmax of the last-position logits.
  g=$("$S" generate --model "$M" --prompt-ids 4,5,6 --max-new 1 --temperature 0 --ignore-eos 2>/dev/null)
  am=$("$S" logits --model "$M" --ids 4,5,6 | tr ' ' '\n' | awk 'NR==1||$1>m{m=$1;i=NR-1} END{print i}')
  expect "$arch: greedy token ($g) == argmax of logits ($am)" '[[ -n $g && $g == "$am" ]]'
  # Context limit: prompt + max-new beyond n_positions is refused up front.
  err=$("$S" generate --model "$M" --prompt-ids 1,2,3 --max-new 100000 2>&1); rc=$?
  expect "$arch: max-new beyond context refused" '[[ $rc -ne 0 && $err == *context* ]]'
done

# decode: incompatible inputs and out-of-range parameters are refused with a clear message
G=$W/gpt2; L=$W/llama
/usr/bin/python3 -c "
import sys; sys.path.insert(0, '$(dirname "$0")/../scripts/pylib')
import numpy as np, stio
stio.write('$W/v16.safetensors', {'weight': np.zeros(16, np.float32), 'bias': np.zeros(1, np.float32)},
           metadata={'format': 'sprinter-verifier', 'version': '1', 'lambda': '1.0'})
"
err=$("$S" decode --draft "$G" --target "$L" --prompt-ids 1,2 --method sd 2>&1); rc=$?
expect "decode: vocab mismatch refused" '[[ $rc -ne 0 && $err == *vocab_size* ]]'
# every method is checked before any work: no partial table (issue 18)
out=$("$S" decode --draft "$G" --target "$G" --prompt-ids 1,2 --method sd,bogus 2>"$W/err"); rc=$?
expect "decode --method sd,bogus: exit 2, nothing printed, one line" '[[ $rc -eq 2 && -z $out && $(wc -l < "$W/err") -eq 1 && $(cat "$W/err") == *bogus* ]]'
out=$("$S" decode --draft "$G" --target "$G" --prompt-ids 1,2 --method "" 2>"$W/err"); rc=$?
expect "decode --method '': exit 2, nothing printed" '[[ $rc -eq 2 && -z $out && $(cat "$W/err") == *empty* ]]'
out=$("$S" decode --draft "$G" --target "$G" --prompt-ids 1,2 --method ar,sprinter 2>"$W/err"); rc=$?
expect "decode --method ar,sprinter without --verifier: exit 2 before ar runs" '[[ $rc -eq 2 && -z $out && $(cat "$W/err") == *--verifier* ]]'
err=$("$S" decode --draft "$G" --target "$G" --verifier "$W/v16.safetensors" --prompt-ids 1,2 --method sprinter 2>&1); rc=$?
expect "decode: verifier dimension != draft hidden size refused" '[[ $rc -ne 0 && $err == *"d = 16"* && $err == *32* ]]'
for bad in "--lambda 0" "--lambda -1" "--tau 1.5" "--tau -0.1" "--gamma 0"; do
  err=$("$S" decode --draft "$G" --target "$G" --prompt-ids 1,2 $bad 2>&1); rc=$?
  opt=${bad%% *}
  expect "decode $bad refused naming $opt" '[[ $rc -eq 2 && $err == *"$opt"* ]]'
done
err=$("$S" decode --draft "$G" --target "$G" --prompt-ids 1,2 --method sprinter 2>&1); rc=$?
expect "decode: sprinter without a verifier refused" '[[ $rc -ne 0 && $err == *verifier* ]]'
out=$("$S" decode --draft "$G" --target "$G" --prompt-ids 1,2 --method ar,sd,draft --max-new 10 2>&1); rc=$?
expect "decode: table with one row per method" '[[ $rc -eq 0 && $(grep -cE "^(ar|sd|draft) " <<< "$out") -eq 3 ]]'

# a tokenizer whose vocabulary does not fit the model (the fixture's 269 tokens, the tiny preset's
# vocab_size 96) is refused by every command that loads one, in one line naming both directories
# (engine/decode/setup.h run_models_open)
T=$W/tok269
"$S" init-random --arch gpt2 --preset tiny --seed 1 --out "$T" >/dev/null || bad "init-random tok269"
cp "$(dirname "$0")/tokenizer/fixtures/gpt2/vocab.json" "$(dirname "$0")/tokenizer/fixtures/gpt2/merges.txt" "$T/"
echo "hello world" > "$W/lines.txt"
echo '{"id": "a", "prompt": "hello world"}' > "$W/one.jsonl"
for what in "decode --draft $G --target $T --prompt hello --method sd --max-new 2" \
            "collect --draft $G --target $T --data $W/one.jsonl --lambda 1 --max-new 2 --out $W/tok.h5" \
            "perplexity --model $T --data $W/lines.txt" \
            "generate --model $T --prompt hello --max-new 2"; do
  "$S" $what >/dev/null 2>"$W/err"; rc=$?
  e=$(cat "$W/err")
  expect "${what%% *}: tokenizer of 269 tokens vs vocab_size 96 refused in one line naming $T: rc=$rc $e" \
    '[[ $rc -eq 1 && $(wc -l < "$W/err") -eq 1 && $e == *"$T/vocab.json: the tokenizer has 269 tokens but $T/config.json: vocab_size is 96"* ]]'
done

# tokenizer_config.json's add_eos_token is applied where prompts are encoded (issue 27, class 4): the
# prompt gets one token more, the EOS
E=$W/eos; mkdir -p "$E/tok"
sed -e 's/"vocab_size":[[:space:]]*[0-9]*/"vocab_size": 279/' "$L/config.json" > "$W/eos_config.json"
"$S" init-random --arch llama --config "$W/eos_config.json" --seed 1 --out "$E/model" >/dev/null || bad "init-random eos"
cp "$(dirname "$0")/tokenizer/fixtures/llama/tokenizer.json" "$E/tok/"
n0=$("$S" generate --model "$E/model" --tokenizer "$E/tok" --prompt "hello world" --max-new 1 2>&1 >/dev/null | sed -n 's/^prompt \([0-9]*\) tokens.*/\1/p')
echo '{"add_eos_token": true}' > "$E/tok/tokenizer_config.json"
n1=$("$S" generate --model "$E/model" --tokenizer "$E/tok" --prompt "hello world" --max-new 1 2>&1 >/dev/null | sed -n 's/^prompt \([0-9]*\) tokens.*/\1/p')
expect "add_eos_token: true adds the EOS to the prompt ($n0 -> $n1 tokens)" '[[ -n $n0 && $n1 -eq $((n0 + 1)) ]]'

report cli_smoke
