#!/usr/bin/env bash
# C perplexity (`sprinter perplexity`) vs the PyTorch implementation (data/train/perplexity.py,
# its own GPT-2 / Llama and its own Python BPE encoder) on the committed models (the default pair,
# and the regime pair of issue 13 when data/models/regime/MANIFEST.json exists), with text built
# from the committed evaluation sets (prompt + reference = one document per line). Required agreement:
# relative difference of perplexity <= 0.5% (issue 3's bar); the measured difference is printed.
# PAIR: default (data/models/draft, target), regime (data/models/regime/..., which must exist) or all
# (default: both, the regime pair when it exists); CTest runs the two pairs as two tests, side by side.
# usage: perplexity_oracle.sh SPRINTER SRCDIR WORKDIR [PAIR]
set -uo pipefail
S=$1; SRC=$2; W=$3; PAIR=${4:-all}
mkdir -p "$W"
/usr/bin/python3 -c "
import json, sys
with open('$W/docs.txt', 'w') as out:
    for name in ('encyclopedic', 'sentences'):
        for i, line in enumerate(open('$SRC/data/datasets/' + name + '.jsonl')):
            if i >= 150: break
            o = json.loads(line)
            out.write((o['prompt'] + o['reference']).replace('\n', ' ') + '\n')
"
pass=0; fail=0
declare -A ppl
case $PAIR in
  default) models="draft target" ;;
  regime) models="regime/draft regime/target" ;;
  all) models="draft target"
       [[ -f $SRC/data/models/regime/MANIFEST.json ]] && models="$models regime/draft regime/target" ;;
  *) echo "perplexity_oracle.sh: PAIR must be default, regime or all, not '$PAIR'" >&2; exit 2 ;;
esac
for m in $models; do
  M=$SRC/data/models/$m
  if [[ ! -f $M/model.safetensors ]]; then echo "FAIL: $M missing"; fail=$((fail+1)); continue; fi
  docs=$W/docs.txt
  if [[ $m == regime/* ]]; then  # 40x the default target's FLOPs per token: a third of the documents
    head -100 "$W/docs.txt" > "$W/docs_regime.txt"; docs=$W/docs_regime.txt
  fi
  c=$("$S" perplexity --model "$M" --data "$docs") || { echo "FAIL: sprinter perplexity $m"; fail=$((fail+1)); continue; }
  t=$(/usr/bin/python3 "$SRC/data/train/perplexity.py" --model "$M" --data "$docs" --threads 1 | tail -1)
  verdict=$(/usr/bin/python3 -c "
import json; c=json.loads('$c'); t=json.loads('$t')
rel=abs(c['ppl']-t['ppl'])/t['ppl']
ok = c['tokens']==t['tokens'] and rel <= 0.005
print(('ok' if ok else 'FAIL'), 'C ppl %.6f, PyTorch ppl %.6f, tokens %d/%d, relative diff %.2e' % (c['ppl'], t['ppl'], c['tokens'], t['tokens'], rel))")
  echo "$m: $verdict"
  [[ $verdict == ok* ]] && pass=$((pass+1)) || fail=$((fail+1))
  ppl[$m]=$(/usr/bin/python3 -c "import json; print(json.loads('$c')['ppl'])")
done
# each pair's target must model the text better than its draft (the point of a target)
for pair in "" regime/; do
  d=${ppl[${pair}draft]:-}; t=${ppl[${pair}target]:-}
  [[ -z $d || -z $t ]] && continue
  name=${pair%/}; name=${name:-default}
  if /usr/bin/python3 -c "import sys; sys.exit(0 if $t < $d else 1)"; then
    echo "ok: $name pair: target ppl $t < draft ppl $d"; pass=$((pass+1))
  else
    echo "FAIL: $name pair: target ppl $t is not below draft ppl $d"; fail=$((fail+1))
  fi
done
echo "perplexity_oracle: $pass passed, $fail failed"
[[ $fail -eq 0 ]]
