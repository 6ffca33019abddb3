#!/usr/bin/env python3
"""The layering the tree promises, checked from the code itself:
- includes: engine/ includes nothing from records/, experiments/, analysis/ or data/; records/ and
  analysis/ include no experiments/ or data/ header and no engine header but the header-only ones
  (methods.h, events.h, rules.h, params_table.h, clock.h, fnv.h) and the two helpers compiled into records/ (error.h, fsutil.h);
- no file-level cycle in the analysis or records library: from each static library's symbol table
  (nm), object A depends on object B when A uses a function or variable B defines; the dependency
  graph must have no strongly connected component of more than one file.
usage: check_layering.py SOURCE_DIR LIB.a [LIB.a ...]
"""
import os
import re
import subprocess
import sys

ENGINE_SHARED = {"error.h", "fsutil.h", "methods.h", "events.h", "rules.h", "params_table.h", "clock.h", "fnv.h"}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def files_of(src, folder, ends):
    """Files under folder (its sub-folders included: engine/ has model/, text/, decode/, util/), as
    paths relative to folder."""
    out = []
    for root, _, names in os.walk(os.path.join(src, folder)):
        out += [os.path.relpath(os.path.join(root, f), os.path.join(src, folder)) for f in names if f.endswith(ends)]
    return sorted(out)


def headers_of(src, folder):
    return {os.path.basename(f) for f in files_of(src, folder, ".h")}


def check_includes(src):
    where = {d: headers_of(src, d) for d in ("engine", "records", "experiments", "analysis", "data/loaders")}
    problems = []
    for folder, allowed_engine in (("engine", None), ("records", ENGINE_SHARED), ("analysis", ENGINE_SHARED)):
        for f in files_of(src, folder, (".c", ".h")):
            text = open(os.path.join(src, folder, f)).read()
            for inc in INCLUDE.findall(text):
                if inc in where[folder]:
                    continue  # its own folder
                if folder == "engine":
                    problems.append("%s/%s includes %s (not an engine header)" % (folder, f, inc))
                elif folder == "analysis" and inc in where["records"]:
                    continue
                elif inc in where["engine"] and inc in allowed_engine:
                    continue
                else:
                    owner = [d for d, hs in where.items() if inc in hs]
                    problems.append("%s/%s includes %s (%s)" % (folder, f, inc, "/".join(owner) or "unknown"))
    return problems


def object_graph(lib):
    out = subprocess.run(["nm", lib], capture_output=True, text=True, check=True).stdout
    defined, used, obj = {}, {}, None
    for line in out.split("\n"):
        if line.endswith(".o:"):
            obj = line[:-1]
            used[obj] = set()
            continue
        parts = line.split()
        if obj is None or len(parts) < 2:
            continue
        kind, sym = parts[-2], parts[-1]
        if kind == "U":
            used[obj].add(sym)
        elif kind in "TDBR":
            defined[sym] = obj
    return {o: {defined[s] for s in syms if s in defined and defined[s] != o} for o, syms in used.items()}


def cycles(graph):
    """Strongly connected components of more than one node (Tarjan)."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in graph:
        if v not in index:
            visit(v)
    return out


def main():
    src, libs = sys.argv[1], sys.argv[2:]
    passed = failed = 0
    problems = check_includes(src)
    for p in problems:
        print("FAIL: " + p)
    failed += bool(problems)
    passed += not problems
    if not problems:
        print("ok  : includes respect the layers (engine <- records <- experiments, analysis)")
    for lib in libs:
        comps = cycles(object_graph(lib))
        for c in comps:
            print("FAIL: %s: file-level cycle among %s" % (os.path.basename(lib), ", ".join(c)))
        if not comps:
            print("ok  : %s: no file-level cycle" % os.path.basename(lib))
        failed += bool(comps)
        passed += not comps
    print("layering: %d passed, %d failed" % (passed, failed))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
