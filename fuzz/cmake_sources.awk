# cmake_sources.awk - what fuzz/Makefile takes from CMakeLists.txt, so that the library sources and
# the pkg-config modules are listed in one place only (CMakeLists.txt):
#   awk -f fuzz/cmake_sources.awk CMakeLists.txt             the C sources of every STATIC library
#                                                            (add_library(NAME STATIC ...) and its
#                                                            target_sources(NAME ...)), one a line
#   awk -v what=pkgs -f fuzz/cmake_sources.awk CMakeLists.txt  the modules of every pkg_check_modules
# A library added to CMakeLists.txt is picked up without editing fuzz/Makefile.
{
    sub(/#.*/, "")          # comments (no '#' appears inside a quoted argument of those commands)
    text = text " " $0
}
END {
    n_out = 0
    # pass 1: add_library(NAME STATIC src...) and pkg_check_modules(PREFIX [REQUIRED] [IMPORTED_TARGET] module...)
    rest = text
    while (match(rest, /(add_library|pkg_check_modules|target_sources)[ \t]*\([^)]*\)/)) {
        cmd = substr(rest, RSTART, RLENGTH)
        rest = substr(rest, RSTART + RLENGTH)
        kind = cmd
        sub(/[ \t]*\(.*/, "", kind)
        args = cmd
        sub(/^[^(]*\(/, "", args)
        sub(/\)$/, "", args)
        n = split(args, a, /[ \t]+/)
        first = 1
        while (first <= n && a[first] == "") first++
        if (kind == "add_library" && a[first + 1] == "STATIC") {
            static[a[first]] = 1
            for (i = first + 2; i <= n; i++) add_source(a[i])
        } else if (kind == "target_sources" && (a[first] in static)) {
            for (i = first + 1; i <= n; i++) add_source(a[i])
        } else if (kind == "pkg_check_modules") {
            for (i = first + 1; i <= n; i++)
                if (a[i] != "" && a[i] != "REQUIRED" && a[i] != "QUIET" && a[i] != "IMPORTED_TARGET" && a[i] != "GLOBAL")
                    add_pkg(a[i])
        }
    }
    if (what == "pkgs") for (i = 1; i <= n_pkg; i++) print pkg[i]
    else for (i = 1; i <= n_src; i++) print src[i]
}
function add_source(s) {
    if (s !~ /\.c$/ || (s in seen)) return
    seen[s] = 1
    src[++n_src] = s
}
function add_pkg(s) {
    if (s in seen_pkg) return
    seen_pkg[s] = 1
    pkg[++n_pkg] = s
}
