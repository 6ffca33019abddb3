#!/usr/bin/env bash
# The sweep CLI surface: --help of sweep/merge/summary; bad specs (unknown key, empty grid, missing
# model directory, tau out of range, unwritable --out, too few prompts, verifier/eval overlap) fail
# with one line on stderr naming the file and the field, a non-zero exit, and no run started; the
# shipped specs (experiments/default.ini, paper.ini) parse and expand to the expected grids.
# usage: test_sweep_cli.sh SPRINTER SOURCE_DIR WORKDIR
set -uo pipefail
S=$1
SRC=$2
W=$3
source "$(dirname "${BASH_SOURCE[0]}")/shell_common.sh"
fresh_workdir "$W"

for c in sweep merge summary; do
  out=$("$S" "$c" --help 2>&1); rc=$?
  expect "$c --help exits 0 and prints usage" '[[ $rc -eq 0 && $out == *usage* ]]'
done
"$S" sweep >/dev/null 2>&1; rc=$?
expect "sweep without a spec exits 2" '[[ $rc -eq 2 ]]'
err=$("$S" sweep x.ini --shard 3/3 2>&1); rc=$?
expect "--shard 3/3 is refused" '[[ $rc -eq 2 && $err == *--shard* ]]'

/usr/bin/python3 -c "
import sys; sys.path.insert(0, '$SRC/tests')
import sweep_fixture as fx
fx.make_models('$S', '$W')
fx.write_spec('$W', name='good', methods='ar, sd, sprinter', n_prompts=2, max_new=4)
" || bad "fixture"
GOOD=$W/good.ini

# Each bad spec: edit of good.ini (sed expression), what the error must mention.
check_bad() {
  local name=$1 sedexpr=$2 want=$3 extra=${4:-}
  sed -e "$sedexpr" "$GOOD" > "$W/$name.ini"
  local top=$W/out-$name out=$W/out-$name/a/b  # nested: every level the sweep creates must go
  err=$("$S" sweep "$W/$name.ini" --out "$out" --quiet $extra 2>&1 >/dev/null); rc=$?
  lines=$(printf '%s\n' "$err" | grep -c .)
  expect "$name: non-zero exit ($rc)" '[[ $rc -ne 0 ]]'
  expect "$name: one line on stderr (got $lines: $err)" '[[ $lines -eq 1 ]]'
  expect "$name: error names the file and \"$want\" (got: $err)" '[[ $err == *"$name.ini"* && $err == *"$want"* ]]'
  n_h5=$(ls "$out"/tokens/*.h5 2>/dev/null | wc -l)
  n_runs=0
  [[ -f $out/runs.sqlite ]] && n_runs=$(sqlite3 "$out/runs.sqlite" "select count(*) from runs" 2>/dev/null || echo 0)
  expect "$name: no run started ($n_h5 logs, $n_runs rows)" '[[ $n_h5 -eq 0 && $n_runs -eq 0 ]]'
  # a refused sweep leaves nothing in a results directory it created (issue 27, class 9), nor the
  # levels above it that it created (item 5)
  expect "$name: the new --out is not left behind, nor its new parents ($(find "$top" 2>/dev/null | tr '\n' ' '))" \
    '[[ ! -e $top ]]'
}
check_bad unknown_key 's/^\[grid\]/[grid]\nwarp = 9/' "[grid] warp: unknown key"
check_bad empty_grid 's/^tau = .*/tau =/' "[grid] tau: empty list"
check_bad tau_range 's/^tau = .*/tau = 0.5, 1.2/' "[grid] tau: 1.2 is out of range [0, 1]"
check_bad no_model_dir "s|^draft = .*|draft = $W/no-such-model|" "[models] draft: $W/no-such-model is not a directory"
check_bad no_config "s|^draft = .*|draft = $W|" "[models] draft: $W has no config.json"
check_bad few_prompts 's/^n_prompts = 2/n_prompts = 30/' "[data] n_prompts: "
check_bad overlap 's/^offset = 20/offset = 5/' "[data] offset: 5 overlaps the verifier's training prompts"
check_bad no_dataset "s|^datasets = .*|datasets = $W/nope.jsonl|" "[data] datasets"
check_bad overlap_bool 's/^offset = 20/offset = 5\neval_on_verifier_prompts = maybe/' "[data] eval_on_verifier_prompts"
check_bad no_room 's/^max_new_tokens = .*/max_new_tokens = 100000/' "[decode] max_new_tokens"
# ... and never a level that existed before: --out PRE/x/y with PRE there (empty) keeps PRE, removes x
mkdir -p "$W/pre-existing"
"$S" sweep "$W/few_prompts.ini" --out "$W/pre-existing/x/y" --quiet >/dev/null 2>&1; rc=$?
expect "refused sweep into PRE/x/y: PRE kept, x gone (rc $rc: $(find "$W/pre-existing" | tr '\n' ' '))" \
  '[[ $rc -ne 0 && -d $W/pre-existing && ! -e $W/pre-existing/x ]]'
# the authors' evaluation on the verifier's training prompts, when the spec asks for it
sed -e 's/^offset = 20/offset = 5\neval_on_verifier_prompts = true/' "$GOOD" > "$W/overlap_ok.ini"
d=$("$S" sweep "$W/overlap_ok.ini" --out "$W/overlap_ok" --dry-run 2>&1 | tail -1)
expect "eval_on_verifier_prompts = true allows the overlap ($d)" '[[ $d =~ ^[0-9]+\ runs ]]'
touch "$W/a-file"
sed -e 's/^name = good/name = unwritable/' "$GOOD" > "$W/unwritable.ini"
err=$("$S" sweep "$W/unwritable.ini" --out "$W/a-file/results" --quiet 2>&1 >/dev/null); rc=$?
lines=$(printf '%s\n' "$err" | grep -c .)
expect "unwritable --out: non-zero exit, one line naming --out (got: $err)" \
  '[[ $rc -ne 0 && $lines -eq 1 && $err == *--out* && $err == *a-file* ]]'

# A data file's flaw is named, never skipped silently (issue 27, class 9): a reference given as "".
sed -e '22s/"reference": "[^"]*"/"reference": ""/' "$W/data.jsonl" > "$W/emptyref.jsonl"
sed -e "s|^datasets = .*|datasets = $W/emptyref.jsonl|" -e 's/^methods = .*/methods = ar/' -e 's/^name = good/name = emptyref/' \
  "$GOOD" > "$W/emptyref.ini"
"$S" sweep "$W/emptyref.ini" --out "$W/emptyref" >/dev/null 2>"$W/emptyref.err"; rc=$?
expect "an empty-string reference is named on stderr with its line (rc $rc: $(grep -i 'empty string' "$W/emptyref.err"))" \
  '[[ $rc -eq 0 ]] && grep -q "emptyref.jsonl: 1 reference given as an empty string (the first at line 22)" "$W/emptyref.err"'

# A good sweep: table at the end, summary from the database, dry run, resume skips everything.
out=$("$S" sweep "$GOOD" --out "$W/res" --verifier-cache "$W/vcache" 2>"$W/sweep.err"); rc=$?
expect "good sweep exits 0 ($(tail -1 "$W/sweep.err"))" '[[ $rc -eq 0 ]]'
expect "sweep prints the summary table" '[[ $out == *tok/s* && $out == *tok/call* && $out == *accept* && $out == *eta_FP* && $out == *sprinter* ]]'
expect "progress lines go to stderr" 'grep -q "sweep: 12/12 runs" "$W/sweep.err"'
s=$("$S" summary "$W/res"); rc=$?
expect "summary prints the same table" '[[ $rc -eq 0 && $s == "$out" ]]'
s=$("$S" summary "$W/res" --by method); rc=$?
expect "summary --by method has one row per method" '[[ $rc -eq 0 && $(printf "%s\n" "$s" | grep -c "^sprinter") -eq 1 ]]'
err=$("$S" summary "$W/nothing" 2>&1); rc=$?
expect "summary of a missing directory fails in one line" '[[ $rc -ne 0 && $err == *runs.sqlite* ]]'

# Read-only media (issue 18): summary opens the database read-only and prints the same table; analyze,
# which must write its report, says that, not "not a sprinter results database". As root permissions
# do not bind, so the commands run as nobody (setpriv) on a copy under /tmp (binary included: the
# build directory may not be reachable by nobody).
ro_run() { if [[ $(id -u) -eq 0 ]]; then setpriv --reuid=nobody --regid=nogroup --clear-groups "$@"; else "$@"; fi; }
R=$(mktemp -d /tmp/sprinter-ro.XXXXXX)
cp "$S" "$R/sprinter" && cp -r "$W/res" "$R/res" && rm -f "$R"/res/runs.sqlite-* && chmod 755 "$R" &&
  chmod -R a-w "$R/res" && chmod -R a+rX "$R/res"
if ro_run test -r "$R/res/runs.sqlite" && ! ro_run test -w "$R/res"; then
  s=$(ro_run "$R/sprinter" summary "$R/res" 2>&1); rc=$?
  expect "summary of a read-only results directory: exit $rc, the same table as the sweep's ($s)" \
    '[[ $rc -eq 0 && $s == "$out" ]]'
  err=$(ro_run "$R/sprinter" analyze "$R/res" --no-plots --quiet 2>&1); rc=$?
  expect "analyze of a read-only results directory names what failed, in one line: exit $rc, $err" \
    '[[ $rc -ne 0 && $err != *"not a sprinter results database"* && $err == *report*denied* && $(printf "%s\n" "$err" | grep -c .) -eq 1 ]]'
  # a write-ahead log beside it (a writer killed before its checkpoint: committed rows only in the -wal)
  # cannot be read immutable: refused in one line naming the -wal, never the stale table (issue 27, class 8)
  mkdir "$R/wal" && python3 - "$R/res/runs.sqlite" "$R/wal" <<'PY'
import shutil, sqlite3, sys
src, dst = sys.argv[1], sys.argv[2]
shutil.copy(src, dst + "/work.sqlite")
con = sqlite3.connect(dst + "/work.sqlite", isolation_level=None)
con.execute("PRAGMA journal_mode=WAL"); con.execute("PRAGMA wal_autocheckpoint=0")
con.execute("DELETE FROM prompts WHERE run_hash IN (SELECT run_hash FROM runs WHERE method = 'ar')")
con.execute("DELETE FROM runs WHERE method = 'ar'")
shutil.copy(dst + "/work.sqlite", dst + "/runs.sqlite"); shutil.copy(dst + "/work.sqlite-wal", dst + "/runs.sqlite-wal")
con.close()
PY
  rm -f "$R"/wal/work.sqlite* && chmod -R a-w "$R/wal" && chmod -R a+rX "$R/wal"
  s=$(ro_run "$R/sprinter" summary "$R/wal" 2>&1); rc=$?
  expect "summary of a read-only directory with a -wal beside runs.sqlite: refused in one line naming it: exit $rc, $s" \
    '[[ $rc -ne 0 && $s == *runs.sqlite-wal* && $(printf "%s\n" "$s" | grep -c .) -eq 1 ]]'
else
  bad "read-only check: $R/res is not readable-but-not-writable for $(ro_run id -un 2>&1)"
fi
chmod -R u+w "$R" && rm -rf "$R"
"$S" sweep "$GOOD" --out "$W/res" --verifier-cache "$W/vcache" >/dev/null 2>"$W/again.err"; rc=$?
expect "rerun skips the 12 finished runs" '[[ $rc -eq 0 ]] && grep -q "12 already done, 0 run now" "$W/again.err"'
d=$("$S" sweep "$GOOD" --out "$W/res" --dry-run --shard 1/3); rc=$?
expect "dry run lists 12 runs, 4 in shard 1/3" '[[ $rc -eq 0 && $d == *"12 runs, 4 in this shard"* ]]'
n_ar=$(sqlite3 "$W/res/runs.sqlite" "select count(*) from runs where method='ar' and tau is null and gamma is null")
n_pr=$(sqlite3 "$W/res/runs.sqlite" "select count(*) from prompts where audited is not null and output_text is not null")
expect "parameters that do not apply are NULL ($n_ar ar runs)" '[[ $n_ar -eq 2 ]]'
expect "sprinter prompt rows carry audited eta and text ($n_pr)" '[[ $n_pr -eq 16 ]]'
# One sweep per directory at a time: a second one is refused while the first runs.
"$S" sweep "$GOOD" --out "$W/locked" --verifier-cache "$W/vcache" --quiet --test-delay-ms 300 >/dev/null 2>&1 &
first=$!
for _ in $(seq 50); do [[ -f $W/locked/runs.sqlite ]] && break; sleep 0.1; done
err=$("$S" sweep "$GOOD" --out "$W/locked" --verifier-cache "$W/vcache" --quiet 2>&1 >/dev/null); rc=$?
expect "a second sweep into a busy directory is refused (got: $err)" '[[ $rc -ne 0 && $err == *"another sweep"* ]]'
# a merge into it too (it used the same HASH.h5.tmp names and killed the sweep: issue 18)
err=$("$S" merge --quiet --out "$W/locked" "$W/res" 2>&1 >/dev/null); rc=$?
alive=0; kill -0 "$first" 2>/dev/null && alive=1
expect "a merge into a busy directory is refused, the sweep goes on (got: $err)" '[[ $rc -ne 0 && $err == *"another sweep or merge"* && $alive -eq 1 ]]'
kill -KILL "$first" 2>/dev/null; wait "$first" 2>/dev/null
# a model file rewritten during a sweep: the run in progress is discarded and the sweep stops, naming
# the file; nothing is recorded under a hash it was not computed with (issue 18, inputs)
# the runs of a sweep in progress (OUT dir) matching a WHERE clause, read-only; 0 while there is no database
runs_where() { local n; n=$(sqlite3 "file:$1/runs.sqlite?mode=ro" "select count(*) from runs where $2" 2>/dev/null); echo "${n:-0}"; }
"$S" sweep "$GOOD" --out "$W/changed" --verifier-cache "$W/vcache" --quiet --test-delay-ms 300 >/dev/null 2>"$W/changed.err" &
sweeper=$!
# touch only once a run has begun: the sweep stamps the model files after it creates runs.sqlite (while
# loading the models), so a touch between the two is stamped as the content and not seen as a change
for _ in $(seq 200); do
  [[ $(runs_where "$W/changed" 1) -gt 0 ]] && break
  sleep 0.1
done
sleep 0.3; touch "$W/target/model.safetensors"
wait "$sweeper"; rc=$?
last=$(tail -1 "$W/changed.err")
expect "a model file changed during the sweep stops it, naming the file (got: $last)" '[[ $rc -eq 1 && $last == *"target/model.safetensors changed during the sweep"* ]]'

# a --jobs worker killed by a signal is named as such (it could not say so itself: issue 18)
"$S" sweep "$GOOD" --out "$W/killed" --verifier-cache "$W/vcache" --quiet --jobs 2 --test-delay-ms 300 >/dev/null 2>"$W/killed.err" &
parent=$!
# Only once a run has begun: before that the sweep's forks may be its head preparation's (it waits for
# them, then forks the workers; a killed one is not an error, the sweep trains that head itself). A fork
# found may still end before the signal lands: look again until a kill lands on a live one.
find_worker() {
  /usr/bin/python3 -c "
import os
# a worker is a fork of the sweep: a child with the parent's own command line (not a git or popen child)
me = open('/proc/$parent/cmdline', 'rb').read()
for p in os.listdir('/proc'):
    if p.isdigit():
        try:
            f = open('/proc/%s/stat' % p).read().rsplit(')', 1)[1].split()
            same = open('/proc/%s/cmdline' % p, 'rb').read() == me
        except OSError:
            continue
        if f[1] == '$parent' and same: print(p); break" 2>/dev/null
}
worker=""; killed=""
for _ in $(seq 300); do
  kill -0 "$parent" 2>/dev/null || break
  [[ $(runs_where "$W/killed" "status = 'running'") -gt 0 ]] || { sleep 0.1; continue; }
  worker=$(find_worker)
  if [[ -n $worker ]]; then
    sleep 0.3
    kill -KILL "$worker" 2>/dev/null && { killed=$worker; break; }
  fi
  sleep 0.1
done
wait "$parent"; rc=$?
last=$(tail -1 "$W/killed.err")
expect "a killed worker is named (got: $last)" '[[ -n $killed && $rc -ne 0 && $last == *"killed by signal 9"* ]]'
"$S" sweep "$GOOD" --out "$W/locked" --verifier-cache "$W/vcache" --quiet >/dev/null 2>&1; rc=$?
expect "after the first is killed the directory is free again" '[[ $rc -eq 0 ]]'
err=$("$S" merge "$W/a-file" 2>&1); rc=$?
expect "merge of a non-directory fails in one line" '[[ $rc -ne 0 && $(printf "%s\n" "$err" | grep -c .) -eq 1 ]]'

# The shipped specs parse and expand to their grids (models and data swapped for the fixture's).
ship() {
  sed -e "s|^draft = .*|draft = $W/draft|" -e "s|^target = .*|target = $W/target|" \
      -e "s|^datasets = .*|datasets = $W/data.jsonl|" -e "s|^data = .*|data = $W/data.jsonl|" \
      -e "s|^offset = .*|offset = 5|" -e "s|^n_prompts = .*|n_prompts = 1|" "$SRC/experiments/$1.ini" > "$W/ship-$1.ini"
  "$S" sweep "$W/ship-$1.ini" --out "$W/ship-$1" --dry-run 2>&1 | tail -1
}
d=$(ship default)
expect "experiments/default.ini expands ($d)" '[[ $d =~ ^[0-9]+\ runs ]]'
for spec in paper_code paper_sound paper_code_overlap paper_code_transfer paper_sound_transfer; do
  d=$(ship $spec)
  expect "experiments/$spec.ini expands ($d)" '[[ $d =~ ^[0-9]+\ runs ]]'
done
p=$(ship paper)
expect "experiments/paper.ini expands ($p)" '[[ $p =~ ^[0-9]+\ runs ]]'
expect "paper grid: 4 lambdas x 5 taus x 2 caps of sprinter present" \
  '[[ $("$S" sweep "$W/ship-paper.ini" --out "$W/ship-paper" --dry-run | grep -c " sprinter lambda=") -eq $((40 * $(grep -E "^seeds" "$SRC/experiments/paper.ini" | tr "," "\n" | wc -l))) ]]'

report sweep_cli
