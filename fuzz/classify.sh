#!/usr/bin/env bash
# classify.sh REPORT FUZZER - whose bug is the first sanitizer or libFuzzer report in REPORT (the
# output of FUZZER replaying one artifact, printed with
# ASAN_OPTIONS=stack_trace_format='    #%n %p in %f %L {%m}' so that every frame names its module)?
#
# Prints one line, VERDICT<TAB>DESCRIPTION, VERDICT being always
#   ours            fails the run. A report whose every stack starts inside libhdf5 is ours too
#                   (issue 27): our code handed the library the bytes, so a crash there is a crash
#                   of ours; the reader must contain it (records/h5util.h h5_checked, the checked
#                   child every token-log read goes through). The description says where in libhdf5
#                   and whether it is one of the known library bugs (fuzz/pending/README.md).
#
# "Starts": the first frame that is neither the sanitizer or libFuzzer runtime (frames of FUZZER
# without source line information, whose code carries none: __interceptor_*, __asan*, fuzzer::...,
# malloc, ...) nor the C library (libc's memcpy under an interceptor). The stacks of a report are
# all of them: the access, and for a heap error also where the memory was allocated and freed, so
# a libhdf5 write past a buffer that our code allocated is ours. Fail-closed: a report without
# stacks (an RSS-limit OOM), an unsymbolized frame (no llvm-symbolizer), or no report at all (the
# artifact did not reproduce) is "ours".
set -euo pipefail
report=$1
fuzzer=$2
awk -v bin="$fuzzer" '
function frame_owner(line,    mod) {
    # returns "skip" (runtime, libc), "hdf5" or "other"
    if (!match(line, /\{[^{}]*\}[ \t]*$/)) return "other"
    mod = substr(line, RSTART + 1, RLENGTH - 2)
    sub(/[ \t]+$/, "", mod)
    if (line ~ /compiler-rt\/lib\//) return "skip"
    if (mod == bin) {
        if (line ~ / in <null> /) return "other"
        if (line ~ / in (__interceptor_|___interceptor_|__asan|__lsan|__ubsan|__sanitizer|__sancov|fuzzer::)/) return "skip"
        # a named function without file:line: the runtime (our code is compiled with -g)
        if (line ~ / in [A-Za-z_][A-Za-z0-9_]* \(/) return "skip"
        return "other"
    }
    if (mod ~ /\/(libc\.so|libc-[0-9.]*\.so|ld-linux[^\/]*\.so|libpthread\.so|libstdc\+\+\.so|libgcc_s\.so)[^\/]*$/) return "skip"
    if (mod ~ /\/libhdf5[^\/]*\.so[^\/]*$/) return "hdf5"
    return "other"
}
function fname(line,    f) {
    f = line
    sub(/^ *#[0-9]+ 0x[0-9a-f]+ in /, "", f)
    sub(/ .*/, "", f)
    return f
}
function end_stack(    what) {
    if (!in_stack) return
    in_stack = 0
    nstacks++
    if (owner != "hdf5") all_hdf5 = 0
    what = stack_hdr ~ /freed by/ ? "freed in " : stack_hdr ~ /allocated/ ? "allocated in " : "at "
    if (nstacks <= 3)
        where_all = where_all (where_all == "" ? "" : "; ") what (owner == "hdf5" ? "libhdf5 " owner_fn : owner == "" ? "(runtime/libc only)" : owner_at)
}
BEGIN { started = 0; done = 0; nstacks = 0; all_hdf5 = 1; in_stack = 0; kind = ""; inner = ""; entry = ""; hdr = "" }
done { next }
!started && /ERROR: (AddressSanitizer|LeakSanitizer|UndefinedBehaviorSanitizer|libFuzzer)|runtime error:/ {
    started = 1
    kind = $0
    sub(/^.*ERROR: /, "", kind)
    sub(/^.*runtime error: /, "UBSan: ", kind)
    sub(/ on (unknown )?address.*/, "", kind)
    sub(/ \(pc .*/, "", kind)
    next
}
!started { next }
/^SUMMARY: / { end_stack(); done = 1; next }
/^ *#[0-9]+ 0x[0-9a-f]+ / {
    n = $1; sub(/^#/, "", n)
    if (n == 0) { end_stack(); in_stack = 1; owner = ""; owner_fn = ""; owner_at = ""; leaving = 0; stack_hdr = hdr }
    if (!in_stack) next
    o = frame_owner($0)
    if (owner == "" && o != "skip") {
        owner = o
        owner_at = $0
        sub(/^ *#[0-9]+ 0x[0-9a-f]+ in /, "", owner_at)
        sub(/ \(BuildId: [0-9a-f]*\)/, "", owner_at)
        sub(/ *\{[^{}]*\}[ \t]*$/, "", owner_at)
    }
    if (owner == "hdf5" && owner_fn == "" && o == "hdf5" && fname($0) != "<null>") owner_fn = fname($0)
    # first stack: the innermost named libhdf5 function and the API entry (last libhdf5 frame
    # before our code)
    if (nstacks == 0 && owner == "hdf5" && !leaving) {
        if (o == "hdf5") {
            f = fname($0)
            if (f != "<null>") { if (inner == "") inner = f; entry = f }
        } else if (o != "skip") leaving = 1
    }
    next
}
{ end_stack(); hdr = $0 }
END {
    if (!started) { printf "ours\tno sanitizer report on replay (not reproduced)\n"; exit }
    end_stack()
    if (nstacks == 0) { printf "ours\t%s (no stack trace)\n", kind; exit }
    if (!all_hdf5) { printf "ours\t%s: %s\n", kind, where_all; exit }
    where = inner (entry != "" && entry != inner ? " under " entry : "")
    known = ""
    if (entry == "H5Aexists") known = "use-after-free under H5Aexists, fuzz/regressions/h5/libhdf5-use-after-free-H5Aexists.h5"
    else if (entry == "H5Dread" && inner == "H5VM_memcpyvv") known = "H5VM_memcpyvv under H5Dread, fuzz/regressions/h5/libhdf5-heap-overflow-H5Dread.h5"
    else if (kind ~ /^libFuzzer: out-of-memory \(malloc/) known = "huge malloc inside libhdf5, fuzz/regressions/h5/libhdf5-*malloc*"
    # never "does not fail": a libhdf5 crash on our inputs is ours to contain (h5_checked)
    if (known != "") printf "ours\t%s in libhdf5: %s (known library bug: %s; not contained by a checked reader)\n", kind, where, known
    else printf "ours\t%s in libhdf5: %s (not contained by a checked reader)\n", kind, where
}' "$report"
