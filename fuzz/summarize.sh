#!/usr/bin/env bash
# summarize.sh BUILD OUT TARGET... - one Markdown table row per fuzz target from OUT/logs/T.log and
# OUT/artifacts/T/ (BUILD holds the fuzzers): executions, exec/s, coverage (edges, features), corpus
# size, peak RSS (in-process runs only; fork mode does not report it), and the findings, then one
# line per artifact saying whose bug it is.
#
# Each crash-*, leak-*, oom-* and timeout-* artifact is replayed by its fuzzer (report in OUT/replay/T/NAME.log)
# and classified by fuzz/classify.sh: every finding fails the run, one inside libhdf5 too (our code
# handed it the bytes; the column "of them in libhdf5" counts those). Timeouts are replayed too (for the stack) but always fail. Also fails on a missing log
# or a log without statistics, and on a sanitizer error in the log with no artifact to show for it.
# Exit 1 when anything fails.
#
# Run by fuzz/Makefile (fuzz-ci, fuzz-long, fuzz-one, fuzz-summary), which sets the sanitizer
# environment (ASAN_OPTIONS, LSAN_OPTIONS, ASAN_SYMBOLIZER_PATH) and SP_FUZZ_LIMITS (the libFuzzer
# -timeout and -rss_limit_mb of the runs, used again for the replays).
set -uo pipefail
build=$1
out=$2
shift 2
here=$(cd "$(dirname "$0")" && pwd)
limits=${SP_FUZZ_LIMITS:--timeout=10 -rss_limit_mb=2048}
fmt="stack_trace_format='    #%n %p in %f %L {%m}'"
bad=0
notes=()
keys=()
declare -A seen first
printf '| target | execs | exec/s | cov | ft | corpus | peak RSS MB | crashes | leaks | timeouts | OOMs | of them in libhdf5 |\n'
printf '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n'
for t in "$@"; do
    log=$out/logs/$t.log
    art=$out/artifacts/$t
    if [ ! -f "$log" ]; then
        printf '| %s | (no log) ||||||||||\n' "$t"
        bad=1
        continue
    fi
    # in-process runs end with stat:: lines and "#N DONE cov: ..."; fork mode prints
    # "#N: cov: C ft: F corp: K exec/s E oom/timeout/crash: ..." after each job
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    eps=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
    rss=$(sed -n 's/^stat::peak_rss_mb: *//p' "$log" | tail -1)
    last=$(grep -E '^#[0-9]+:?[[:space:]].*cov: [0-9]+' "$log" | tail -1)
    cov=$(sed -n 's/.*cov: \([0-9]*\).*/\1/p' <<<"$last")
    ft=$(sed -n 's/.*ft: \([0-9]*\).*/\1/p' <<<"$last")
    corp=$(sed -n 's/.*corp: \([0-9]*\(\/[0-9A-Za-z]*\)\{0,1\}\).*/\1/p' <<<"$last")
    if [ -z "$execs" ] && [[ $last =~ ^#([0-9]+): ]]; then
        execs=${BASH_REMATCH[1]}
        eps=$(sed -n 's/.*exec\/s \([0-9]*\).*/\1/p' <<<"$last")
    fi
    # findings in our code by kind, and those inside libhdf5
    c=0 l=0 to=0 o=0 up=0
    n_art=0
    while IFS= read -r a; do
        [ -n "$a" ] || continue
        n_art=$((n_art + 1))
        name=$(basename "$a")
        kind=${name%%-*}
        mkdir -p "$out/replay/$t" "$out/tmp/replay-$t"
        rep=$out/replay/$t/$name.log
        ( cd "$out/tmp/replay-$t" && TMPDIR=$out/tmp/replay-$t ASAN_OPTIONS="${ASAN_OPTIONS:-}:$fmt" \
            UBSAN_OPTIONS="${UBSAN_OPTIONS:-}:$fmt" timeout 300 "$build/fuzz_$t" $limits "$a" ) > "$rep" 2>&1
        rm -rf "$out/tmp/replay-$t"
        line=$(bash "$here/classify.sh" "$rep" "$build/fuzz_$t")
        verdict=${line%%$'\t'*}
        desc=${line#*$'\t'}
        # where the alarm found the process says little about whose loop is slow: a timeout is
        # always ours (the replay's stack is shown)
        if [ "$kind" = timeout ]; then
            verdict=ours
            desc="timeout (${limits%% *}); at the alarm: $desc"
        fi
        case $verdict in
        *)
            case $desc in *" in libhdf5: "*) up=$((up + 1)) ;; esac
            bad=1
            label="OURS, fails"
            case $kind in crash) c=$((c + 1)) ;; leak) l=$((l + 1)) ;; timeout) to=$((to + 1)) ;; oom) o=$((o + 1)) ;; *) c=$((c + 1)) ;; esac
            ;;
        esac
        # one line per distinct finding: count, first artifact, its replay
        key="$t: $label: $desc"
        if [ -z "${seen[$key]:-}" ]; then
            keys+=("$key")
            seen[$key]=1
            first[$key]="$out/artifacts/$t/$name (replay: $out/replay/$t/$name.log)"
        else
            seen[$key]=$((seen[$key] + 1))
        fi
    done < <(find "$art" -maxdepth 1 -type f \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' -o -name 'oom-*' \) 2>/dev/null | sort)
    # a sanitizer or libFuzzer error in the log without any artifact (an abort outside an input)
    if [ "$n_art" = 0 ] && grep -qE 'ERROR: (AddressSanitizer|LeakSanitizer|UndefinedBehaviorSanitizer|libFuzzer)|runtime error:' "$log"; then
        c="1 (log)"
        bad=1
        notes+=("$t: a sanitizer error in $log without an artifact, fails")
    fi
    [ -z "$execs" ] && bad=1 && execs="(no stats: see log)"
    printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$t" "${execs:-?}" "${eps:-?}" "${cov:-?}" \
        "${ft:-?}" "${corp:-?}" "${rss:--}" "$c" "$l" "$to" "$o" "$up"
done
for k in "${keys[@]}"; do
    notes+=("$k [${seen[$k]} artifact(s); first: ${first[$k]}]")
done
if ((${#notes[@]})); then
    printf '\n'
    printf -- '- %s\n' "${notes[@]}"
fi
if [ "$bad" = 0 ]; then
    printf '\nfuzz: no finding in our code\n'
else
    printf '\nfuzz: FAILED (see above)\n'
fi
exit $bad
