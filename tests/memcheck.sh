#!/usr/bin/env bash
# memcheck.sh BUILD SOURCE [WORKDIR] - a subset of the test suite under valgrind memcheck, on a build
# without sanitizers (`make test` uses build-memcheck/: RelWithDebInfo, no -march=native).
#
# Runs under `valgrind --leak-check=full --errors-for-leak-kinds=definite --error-exitcode=97`:
#   - the quick C unit tests: test_model, test_tokenizer, test_sampling, test_spec, test_stats,
#     test_analysis;
#   - replay_inputs on fuzz/regressions and fuzz/corpus (every parser on every hostile input we keep);
#   - the CLI on two tiny random GPT-2 models (tests/sweep_fixture.py) and a tiny Llama: info,
#     tokenize (both ways), logits, generate, init-random, collect, train-verifier, decode (ar, sd,
#     sprinter, oracle-iid with --audit), a 4-run sweep (and again with 2 prompts batched), summary,
#     score, dtv, analyze; and error
#     paths (missing model, context overflow, bad spec, sprinter without a verifier), where cleanup
#     code is least exercised.
# A step fails when valgrind reports an invalid access, a use of uninitialised memory that decides a
# branch, an invalid free, or a definite leak (exit status 97), or when the program's own exit
# status is not the expected one. The fixture is made without valgrind.
#
# Environment for the run: one OpenMP and one OpenBLAS thread (valgrind serialises threads anyway;
# thread pools only add time and noise), and OPENBLAS_CORETYPE=Haswell: Debian's OpenBLAS picks its
# kernels at run time (DYNAMIC_ARCH), and valgrind 3.19 cannot execute AVX-512 (SIGILL). Valgrind's
# virtual CPU hides AVX-512 from CPUID, so OpenBLAS picks Haswell under it anyway on the machines
# tried (an AVX-512 host included); the variable makes that choice explicit instead of depending on
# how a given OpenBLAS detects the CPU. Our own kernels choose by __builtin_cpu_supports, which sees
# the same virtual CPU (AVX2 at most).
# Suppressions (narrow, by library, with the reason): tests/memcheck.supp.
# Prints one line per step and "memcheck: N passed, M failed"; exit 1 if anything failed.
set -uo pipefail
B=$(cd "$1" && pwd)
SRC=$(cd "$2" && pwd)
W=${3:-$B/testdata/memcheck}
S=$B/sprinter
rm -rf "$W" && mkdir -p "$W/logs"
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 OPENBLAS_CORETYPE=Haswell
VG=(valgrind -q --error-exitcode=97 --leak-check=full --errors-for-leak-kinds=definite
    --show-leak-kinds=definite --num-callers=40 --suppressions="$SRC/tests/memcheck.supp")
pass=0
fail=0

# step NAME WANT CMD...: run CMD under valgrind; WANT is the expected exit status, or "fail" for any
# status other than 0 and 97
step() {
    local name=$1 want=$2
    shift 2
    local t0=$SECONDS
    "${VG[@]}" --log-file="$W/logs/$name.vg" "$@" >"$W/logs/$name.out" 2>"$W/logs/$name.err"
    local rc=$?
    local ok=1 why=""
    if [[ $rc -eq 97 ]]; then
        ok=0 why="valgrind reported errors"
    elif [[ $want == fail && $rc -eq 0 ]] || [[ $want != fail && $rc -ne $want ]]; then
        ok=0 why="exit status $rc, expected $want"
    fi
    if ((ok)); then
        pass=$((pass + 1))
        printf 'ok    %-22s %3ds\n' "$name" $((SECONDS - t0))
    else
        fail=$((fail + 1))
        printf 'FAIL  %-22s %3ds  %s\n' "$name" $((SECONDS - t0)) "$why"
        echo "  command: $*"
        sed 's/^/  valgrind: /' "$W/logs/$name.vg" | head -60
        tail -5 "$W/logs/$name.err" | sed 's/^/  stderr: /'
    fi
}

# ---- unit tests
step test_model 0 "$B/test_model" "$W/unit_model"
step test_tokenizer 0 "$B/test_tokenizer"
step test_sampling 0 "$B/test_sampling"
step test_spec 0 "$B/test_spec" "$W/unit_spec"
step test_stats 0 "$B/test_stats"
step test_analysis 0 "$B/test_analysis"

# ---- every kept fuzz input through the parsers
step replay_inputs 0 "$B/replay_inputs" "$SRC/fuzz/regressions" "$SRC/fuzz/corpus"

# ---- CLI. Fixture (no valgrind): models draft/target (vocab 269, GPT-2 BPE tokenizer) + data.jsonl
/usr/bin/python3 -c "
import sys; sys.path.insert(0, '$SRC/tests')
import sweep_fixture as fx
fx.make_models('$S', '$W')
fx.write_spec('$W', name='mc', methods='ar, sd, sprinter', n_prompts=2, max_new=4)
" || { echo "memcheck: fixture failed"; exit 1; }
# one value per grid parameter and a smaller verifier training set: one run per method
sed -i -e 's/^seeds = .*/seeds = 1/' -e 's/^lambda = .*/lambda = 1.0/' -e 's/^tau = .*/tau = 0.5/' \
    -e 's/^n_prompts = 12/n_prompts = 6/' "$W/mc.ini"
D=$W/draft
T=$W/target
step info 0 "$S" info --model "$T"
step tokenize 0 "$S" tokenize --model "$T" --text $'hello the test, caf\xc3\xa9'
step tokenize_decode 0 "$S" tokenize --model "$T" --decode 104,101,108,108,111
step logits 0 "$S" logits --model "$T" --ids 1,2,3
step generate 0 "$S" generate --model "$T" --prompt "hello the" --max-new 6 --seed 1
step init_random_llama 0 "$S" init-random --arch llama --preset tiny --seed 3 --out "$W/llama"
step generate_llama 0 "$S" generate --model "$W/llama" --prompt-ids 1,2,3 --max-new 6 --temperature 0 --ignore-eos
step init_random_qwen3 0 "$S" init-random --arch qwen3 --preset tiny --seed 3 --out "$W/qwen3"
step generate_qwen3 0 "$S" generate --model "$W/qwen3" --prompt-ids 1,2,3 --max-new 6 --temperature 0 --ignore-eos
step init_random_llama3 0 "$S" init-random --arch llama --preset llama-3-tiny --seed 3 --out "$W/llama3"
step generate_llama3 0 "$S" generate --model "$W/llama3" --prompt-ids 1,2,3 --max-new 6 --temperature 0 --ignore-eos
step info_preset 0 "$S" info --preset qwen3-8b
step collect 0 "$S" collect --draft "$D" --target "$T" --data "$W/data.jsonl" --lambda 1 --out "$W/c.h5" \
    --n-prompts 3 --max-new 6
step train_verifier 0 "$S" train-verifier --data "$W/c.h5" --out "$W/v.safetensors"
step decode 0 "$S" decode --draft "$D" --target "$T" --prompt "hello the test" --max-new 8 \
    --method ar,sd,sprinter,oracle-iid --verifier "$W/v.safetensors" --audit --seed 2
step sweep 0 "$S" sweep "$W/mc.ini" --out "$W/res" --verifier-cache "$W/vc" --quiet
step sweep_batch 0 "$S" sweep "$W/mc.ini" --out "$W/res-batch" --batch 2 --verifier-cache "$W/vc" --quiet
step summary 0 "$S" summary "$W/res"
step score 0 "$S" score "$W/res" --quiet
step dtv 0 "$S" dtv --draft "$D" --target "$T" --verifier "$W/v.safetensors" --data "$W/data.jsonl" \
    --n-prefixes 2 --offset 30 --out "$W/res/dtv.h5"
step analyze 0 "$S" analyze "$W/res" --quiet --no-plots --bootstrap 20
# ---- error paths
step err_no_model fail "$S" info --model "$W/no-such-model"
step err_context fail "$S" generate --model "$T" --prompt-ids 1,2,3 --max-new 100000
sed -e 's/^tau = .*/tau = 0.5, 1.2/' "$W/mc.ini" > "$W/bad.ini"
step err_bad_spec 2 "$S" sweep "$W/bad.ini" --out "$W/bad" --quiet
step err_no_verifier fail "$S" decode --draft "$D" --target "$T" --prompt-ids 1,2 --method sprinter

echo "memcheck: $pass passed, $fail failed"
[[ $fail -eq 0 ]]
