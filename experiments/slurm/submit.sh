#!/bin/bash
# experiments/slurm/submit.sh - submits a sweep as a Slurm job array of N shards
# (experiments/slurm/sweep.sbatch) and the merge that runs once every task has ended, whatever its
# state (experiments/slurm/merge.sbatch, --dependency=afterany), and prints both job ids.
#
#   usage: experiments/slurm/submit.sh SPEC.ini N [OUT [SWEEP_OPTION...]]
#     SBATCH_OPTS="..."  extra sbatch options for both jobs (a partition, an account, --mem=...),
#                        split at spaces
#     SPRINTER=PATH      the sprinter binary the jobs run (default build/sprinter: submit from the
#                        repository root)
#
# Then: squeue -j ARRAY,MERGE; the merge's output file (results/slurm-merge-MERGE.out) ends with the
# merge's report, and its exit status says whether every run is done (0), some failed (3) or some
# are missing (4): see experiments/slurm/README.md.
set -euo pipefail
usage="usage: experiments/slurm/submit.sh SPEC.ini N [OUT [SWEEP_OPTION...]]"
SPEC=${1:?$usage}
N=${2:?$usage}
if ! [[ $N =~ ^[1-9][0-9]{0,4}$ ]]; then
  echo "submit.sh: N: \"$N\" is not a number of shards from 1 to 99999" >&2
  exit 2
fi
[[ -r $SPEC ]] || { echo "submit.sh: $SPEC: cannot read the spec" >&2; exit 2; }
NAME=$(basename "$SPEC" .ini)
OUT=${3:-results/$NAME}
shift $(( $# < 3 ? $# : 3 ))
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
read -r -a opts <<< "${SBATCH_OPTS:-}"
array=$(sbatch --parsable "${opts[@]}" --array="0-$((N - 1))" "$HERE/sweep.sbatch" "$SPEC" "$OUT" "$@")
array=${array%%;*} # --parsable prints JOBID[;CLUSTER]
merge=$(sbatch --parsable "${opts[@]}" --dependency="afterany:$array" "$HERE/merge.sbatch" "$SPEC" "$OUT")
merge=${merge%%;*}
echo "submitted: sweep array $array ($N tasks: $OUT/shard-0..$((N - 1))), merge $merge (after the array, into $OUT)"
