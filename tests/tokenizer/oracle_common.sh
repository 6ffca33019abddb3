# oracle_common.sh - what the npm tokenizer-oracle scripts (run_oracle.sh, run_llama2.sh) share;
# sourced, not run.

# elapsed START: seconds since START (an $EPOCHREALTIME value), "12.3 s".
elapsed() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f s", b - a }'; }

# npm_oracles DIR PACKAGE@VERSION...: installs the packages into DIR (npm --prefix); exits the
# script with 77 (CTest's skip) when node/npm is missing or the registry cannot be reached.
npm_oracles() {
    local dir=$1
    shift
    if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
        echo "SKIP: node/npm not installed" >&2
        exit 77
    fi
    echo "installing $* into $dir"
    if ! npm install --prefix "$dir" --no-audit --no-fund --loglevel=error "$@" >&2; then
        echo "SKIP: npm install failed (no registry access?)" >&2
        exit 77
    fi
}
