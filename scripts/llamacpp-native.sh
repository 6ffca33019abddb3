#!/usr/bin/env bash
# Builds llama.cpp from the source that npm's node-llama-cpp@3.21.1 ships (llama/gitRelease.bundle),
# natively (-DGGML_NATIVE=ON), once, into a cache folder outside the checkout keyed by the bundle's
# SHA-256; later calls reuse it. Prints the folder holding the tools (llama-simple, llama-completion,
# llama-bench, llama-speculative-simple, llama-quantize, llama-perplexity, llama-tokenize) on stdout,
# its only output. A tool added to TOOLS later is built incrementally into an existing build.
#
#   scripts/llamacpp-native.sh            build if needed, print the bin folder
#   scripts/llamacpp-native.sh --where    print the bin folder if built, else exit 1 (builds nothing)
#
# Cache: $SPRINTER_CACHE, else ${XDG_CACHE_HOME:-$HOME/.cache}/sprinter. Concurrent callers wait on
# one lock; a build that fails or is interrupted leaves no "done" stamp, so the next call rebuilds.
# Needs node/npm (to fetch the bundle), git, cmake and a C++ compiler (scripts/install-deps.sh --test).
set -euo pipefail

NPM_PKG="node-llama-cpp@3.21.1"
TOOLS=(llama-simple llama-completion llama-bench llama-speculative-simple llama-quantize llama-perplexity llama-tokenize)
cache="${SPRINTER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/sprinter}"
mkdir -p "$cache"
log() { echo "llamacpp-native: $*" >&2; }

# The bundle: the npm package installed once into the cache (scripts only, no prebuilt binaries).
npm_dir="$cache/npm-node-llama-cpp-3.21.1"
bundle="$npm_dir/node_modules/node-llama-cpp/llama/gitRelease.bundle"
exec 9>"$cache/llamacpp.lock"
flock 9
if [[ ! -s "$bundle" ]]; then
  [[ "${1:-}" == "--where" ]] && exit 1
  command -v npm >/dev/null || { log "npm missing: run scripts/install-deps.sh --test"; exit 1; }
  mkdir -p "$npm_dir"
  log "fetching $NPM_PKG for its llama.cpp source bundle"
  (cd "$npm_dir" && npm i -E --omit=optional --no-audit --no-fund --ignore-scripts "$NPM_PKG" >&2)
  [[ -s "$bundle" ]] || { log "$bundle: not in $NPM_PKG"; exit 1; }
fi

key=$(sha256sum "$bundle" | cut -c1-16)
root="$cache/llamacpp-$key"
bin="$root/build/bin"
missing_tools() { for t in "${TOOLS[@]}"; do [[ -x "$bin/$t" ]] || echo "$t"; done; }
if [[ -f "$root/done" ]]; then
  mapfile -t missing < <(missing_tools)
  if ((${#missing[@]})); then
    [[ "${1:-}" == "--where" ]] && exit 1
    log "building ${missing[*]} into the existing build"
    cmake --build "$root/build" -j "$(nproc)" --target "${missing[@]}" >&2
  fi
  echo "$bin"
  exit 0
fi
[[ "${1:-}" == "--where" ]] && exit 1

t0=$(date +%s)
# An earlier build that stopped part-way (no "done" stamp) is resumed: cmake rebuilds only what is
# missing. Only a source checkout that never completed is started afresh.
if [[ ! -f "$root/src/.cloned" ]]; then
  log "cold build into $root (10-15 min on 2 cores)"
  rm -rf "$root"
  mkdir -p "$root"
  git clone -q "$bundle" "$root/src" >&2
  # the bundle's only ref may be a tag rather than a branch: check out whatever HEAD names, else the first ref
  if ! git -C "$root/src" rev-parse -q --verify HEAD >/dev/null; then
    ref=$(git -C "$root/src" for-each-ref --format='%(refname)' | head -1)
    git -C "$root/src" checkout -q "$ref" >&2
  fi
  touch "$root/src/.cloned"
else
  log "resuming the build in $root"
fi
cmake -S "$root/src" -B "$root/build" -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON -DLLAMA_CURL=OFF \
  -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_SERVER=OFF -DBUILD_SHARED_LIBS=OFF >&2
cmake --build "$root/build" -j "$(nproc)" --target "${TOOLS[@]}" >&2
for t in "${TOOLS[@]}"; do
  [[ -x "$bin/$t" ]] || { log "$bin/$t was not built"; exit 1; }
done
git -C "$root/src" rev-parse HEAD >"$root/commit"
[[ -f "$root/cold_build_seconds" ]] || echo "$(($(date +%s) - t0))" >"$root/cold_build_seconds"
touch "$root/done"
log "built in $(cat "$root/cold_build_seconds") s (llama.cpp $(cut -c1-12 "$root/commit"))"
echo "$bin"
