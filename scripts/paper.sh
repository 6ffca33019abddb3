#!/usr/bin/env bash
# make paper: SPRINTER as its authors' code ran it (experiments/paper_code.ini) beside the sound
# protocol (experiments/paper_sound.ini) on the regime pair, both datasets, 100 prompts per cell, then
# one analysis of both: results/paper/report/index.md (section "The review's questions") and
# results/paper/report/FINDINGS.md. Every step resumes: a rerun skips finished runs, scored outputs
# and finished dtv files, and rewrites the merge and the report.
#   [PAPER_TRANSFER=1] scripts/paper.sh [SPRINTER] [OUT] [JOBS]
set -euo pipefail
SPRINTER=${1:-build/sprinter}
OUT=${2:-results/paper}
JOBS=${3:-$(nproc)}
PREFIXES=${PAPER_DTV_PREFIXES:-64}    # prefixes per dtv file
SPECS=${PAPER_SPECS:-experiments}      # the folder of paper_code.ini and paper_sound.ini (tests: small copies)
t0=$(date +%s)
stamp() { echo "== [$(( $(date +%s) - t0 )) s] $*"; }

# 1. the sweeps, each into its own directory (runs.sqlite, tokens/, verifiers/): the two protocols,
# and the authors' evaluation overlap (paper_code_overlap.ini: the paper-code verifier on its own
# training prompts, FINDINGS row 8); with PAPER_TRANSFER=1 also Table 4's other direction (a verifier
# trained on sentences.jsonl per protocol: paper_code_transfer.ini, paper_sound_transfer.ini)
SWEEPS="paper_code paper_sound paper_code_overlap"
[ "${PAPER_TRANSFER:-0}" = 1 ] && SWEEPS="$SWEEPS paper_code_transfer paper_sound_transfer"
# One verifier cache for all of them ($OUT/verifiers): a verifier's file name is a hash of everything
# it is collected and trained from, so the overlap sweep finds paper_code's verifiers instead of
# collecting and training them again.
for spec in $SWEEPS; do
  stamp "sprinter sweep $SPECS/$spec.ini --out $OUT/sweeps/$spec --jobs $JOBS --verifier-cache $OUT/verifiers"
  "$SPRINTER" sweep "$SPECS/$spec.ini" --out "$OUT/sweeps/$spec" --jobs "$JOBS" --verifier-cache "$OUT/verifiers" --quiet
done

# 2. one results directory over both, asked for on purpose (--allow-specs: the protocols are different
# specs of the same models; a run's hash names its protocol settings, so none collide)
stamp "sprinter merge --allow-specs --out $OUT"
dirs=()
for spec in $SWEEPS; do dirs+=("$OUT/sweeps/$spec"); done
"$SPRINTER" merge --quiet --allow-specs --out "$OUT" "${dirs[@]}"

# 3. target log-likelihood of every output (the quality axis, paired across methods by prompt)
stamp "sprinter score $OUT --jobs $JOBS"
"$SPRINTER" score "$OUT" --jobs "$JOBS" --quiet

# 4. exact d_TV(p, p_SPRINTER) and d_TV(q, p_SPRINTER) at temperature 1 (Theorem 3.1's setting) for
# every verifier, lambda, tau and dataset the sprinter runs used, on the runs' own (held-out) prompts
# (the overlap runs of paper_code_overlap.ini have none of their own): one `sprinter dtv` file each in
# OUT/dtv/, matched to the runs by verifier and data sha256, lambda, tau. One dtv process per (verifier,
# lambda, dataset) writes the files of all its taus (--tau T1,T2,... --out ...-t{tau}.h5): the prefixes,
# p, q and the verifier's scores do not depend on tau and are computed once.
stamp "sprinter dtv: one file per (verifier, lambda, tau, dataset), one process per (verifier, lambda, dataset), $PREFIXES prefixes each, $JOBS at a time"
mkdir -p "$OUT/dtv"
sqlite3 -separator ' ' "file:$OUT/runs.sqlite?mode=ro" \
  "SELECT draft_dir, target_dir, verifier_path, substr(verifier_sha256, 1, 12), lambda, dataset,
          substr(dataset_sha256, 1, 8), prompt_offset, group_concat(DISTINCT tau) FROM runs
   WHERE method = 'sprinter' AND status = 'done' AND instr(config, 'eval_on_verifier_prompts 1') = 0
   GROUP BY draft_dir, target_dir, verifier_path, verifier_sha256, lambda, dataset, dataset_sha256, prompt_offset
   ORDER BY verifier_path, lambda, dataset" |
while read -r draft target ver sha lambda data dsha offset taus; do
  todo=()
  for tau in ${taus//,/ }; do
    [ -e "$OUT/dtv/$sha-$dsha-l$lambda-t$tau.h5" ] || todo+=("$tau")
  done
  [ ${#todo[@]} -eq 0 ] && continue
  list=$(IFS=,; echo "${todo[*]}")
  echo "$SPRINTER dtv --draft $draft --target $target --verifier $ver --data $data --offset $offset" \
       "--n-prefixes $PREFIXES --lambda $lambda --tau $list --temperature 1 --seed 1 --quiet" \
       "--out $OUT/dtv/$sha-$dsha-l$lambda-t{tau}.h5"
done | xargs -P "$JOBS" -I CMD sh -c 'CMD > /dev/null'

# 5. the analysis of both protocols together
stamp "sprinter analyze $OUT"
"$SPRINTER" analyze "$OUT"
stamp "done: $OUT/report/index.md, $OUT/report/FINDINGS.md"
