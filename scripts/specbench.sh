#!/usr/bin/env bash
# make specbench: Spec-Bench as its users run it (issue 15) on the regime pair:
# experiments/specbench.ini (all 480 questions, 560 turns, of data/datasets/specbench.jsonl, stopping at EOS; a question's second
# turn after the run's own answer to its first; ar, sd, sprinter, greedy), target scoring, the
# analysis report (report/tables.md Table 6: task groups) and Spec-Bench's task table.
# About 8 min with --jobs 1 on this project's 2-core VM (sweep 6, score and analysis 2); resumes if interrupted.
set -euo pipefail
SPRINTER=${1:-build/sprinter}
OUT=${2:-results/specbench}
JOBS=${3:-1}
echo "== sprinter sweep experiments/specbench.ini (resumes if interrupted)"
"$SPRINTER" sweep experiments/specbench.ini --out "$OUT" --jobs "$JOBS"
echo "== sprinter score (target log-likelihood of every output, conversations rebuilt)"
"$SPRINTER" score "$OUT" --jobs "$JOBS" --quiet
echo "== sprinter analyze"
"$SPRINTER" analyze "$OUT" --quiet
echo "== Spec-Bench's task table (sprinter summary $OUT --by task)"
"$SPRINTER" summary "$OUT" --by task
echo "report: $OUT/report/tables.md (Table 6)"
