#!/usr/bin/env bash
# make lossy: SPRINTER beside its lossy peers (experiments/lossy.ini) on the regime pair: the sweep
# (runs timed alone after it, [timing]), the target's log-likelihood of every output, the exact
# d_TV(p, p_method) of every lossy run's first-token law, and the analysis: OUT/report/lossy.md
# (Pareto tables: speed-up over ar and tokens per target call against exact d_TV and against the
# target log-likelihood) and FINDINGS row 9. Every step resumes.
#   scripts/lossy.sh [SPRINTER] [OUT] [JOBS]
set -euo pipefail
SPRINTER=${1:-build/sprinter}
OUT=${2:-results/lossy}
JOBS=${3:-$(nproc)}
SPEC=${LOSSY_SPEC:-experiments/lossy.ini}   # tests: a small copy
PREFIXES=${LOSSY_DTV_PREFIXES:-64}          # prefixes per dtv file
t0=$(date +%s)
stamp() { echo "== [$(( $(date +%s) - t0 )) s] $*"; }

stamp "sprinter sweep $SPEC --out $OUT --jobs $JOBS"
"$SPRINTER" sweep "$SPEC" --out "$OUT" --jobs "$JOBS" --quiet

stamp "sprinter score $OUT --jobs $JOBS"
"$SPRINTER" score "$OUT" --jobs "$JOBS" --quiet

# exact d_TV(p, p_method) at the runs' own temperature and held-out prompts: one file per (method,
# setting, dataset) of the lossy runs; the analysis matches a file to its runs by method, setting and
# data hash (its attributes)
stamp "sprinter dtv --method: one file per lossy configuration and dataset, $PREFIXES prefixes each, $JOBS at a time"
mkdir -p "$OUT/dtv"
sqlite3 -separator ' ' "file:$OUT/runs.sqlite?mode=ro" \
  "SELECT DISTINCT method, draft_dir, target_dir, COALESCE(verifier_path, '-'), dataset, prompt_offset, temperature,
          substr(run_hash, 1, 12), COALESCE(lambda, 1), COALESCE(tau, 0.5), COALESCE(typical_eps, 0.09),
          COALESCE(typical_alpha, 0.3), COALESCE(fsd_divergence, 1), COALESCE(fsd_threshold, 0.1),
          COALESCE(lossy_kl, 0.1), COALESCE(tau_judge, 0.5), COALESCE(judge_rho, 0.5)
     FROM runs WHERE status = 'done' AND method IN ('sprinter', 'typical', 'fsd', 'optimal-lossy', 'judge')
     ORDER BY run_index" |
while read -r method draft target ver data offset temp hash lambda tau teps talpha fdiv fthr lkl tj jrho; do
  out="$OUT/dtv/$hash.h5"
  [ -e "$out" ] && continue
  case $method in
    sprinter) extra="--verifier $ver --lambda $lambda --tau $tau" ;;
    typical) extra="--typical-eps $teps --typical-alpha $talpha" ;;
    fsd) extra="--fsd-divergence $fdiv --fsd-threshold $fthr" ;;
    optimal-lossy) extra="--lossy-kl $lkl" ;;
    judge) extra="--judge $ver --tau-judge $tj --judge-rho $jrho" ;;
  esac
  echo "$SPRINTER dtv --method $method --draft $draft --target $target --data $data --offset $offset" \
       "--n-prefixes $PREFIXES --temperature $temp --seed 1 $extra --quiet --out $out"
done | xargs -P "$JOBS" -I CMD sh -c 'CMD > /dev/null'

stamp "sprinter analyze $OUT"
"$SPRINTER" analyze "$OUT"
stamp "done: $OUT/report/lossy.md, $OUT/report/FINDINGS.md"
