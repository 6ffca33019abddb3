#!/usr/bin/env bash
# summarize.sh BUILD TARGET... - one Markdown table row per fuzz target from build-fuzz/logs/T.log
# and build-fuzz/artifacts/T/: executions, exec/s, coverage (edges, features), corpus size, peak RSS,
# and the artifacts (crash-*, leak-*, timeout-*, oom-*) that need a regression input.
# Exits 1 when any target has an artifact or a missing log.
build=$1
shift
bad=0
printf '| target | execs | exec/s | cov (edges) | ft | corpus | peak RSS MB | crashes | leaks | timeouts | OOMs |\n'
printf '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n'
for t in "$@"; do
    log=$build/logs/$t.log
    art=$build/artifacts/$t
    if [ ! -f "$log" ]; then
        printf '| %s | (no log) |||||||||\n' "$t"
        bad=1
        continue
    fi
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    eps=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
    rss=$(sed -n 's/^stat::peak_rss_mb: *//p' "$log" | tail -1)
    last=$(grep -E '^#[0-9]+.*cov: [0-9]+' "$log" | tail -1)
    cov=$(sed -n 's/.*cov: \([0-9]*\).*/\1/p' <<<"$last")
    ft=$(sed -n 's/.*ft: \([0-9]*\).*/\1/p' <<<"$last")
    corp=$(sed -n 's/.*corp: \([0-9]*\/[0-9A-Za-z]*\).*/\1/p' <<<"$last")
    count() { find "$art" -maxdepth 1 -name "$1-*" 2>/dev/null | wc -l; }
    c=$(count crash); l=$(count leak); to=$(count timeout); o=$(count oom)
    # an abort inside the harness or a sanitizer report without an artifact file still counts
    if [ "$c" = 0 ] && grep -qE 'ERROR: (AddressSanitizer|UndefinedBehaviorSanitizer|libFuzzer)|runtime error:' "$log"; then c="1 (log)"; fi
    [ "$c$l$to$o" != "0000" ] && bad=1
    [ -z "$execs" ] && bad=1 && execs="(no stats: see log)"
    printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$t" "${execs:-?}" "${eps:-?}" "${cov:-?}" \
        "${ft:-?}" "${corp:-?}" "${rss:-?}" "$c" "$l" "$to" "$o"
done
exit $bad
