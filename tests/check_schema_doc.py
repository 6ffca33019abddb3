#!/usr/bin/env python3
"""results/README.md documents exactly the on-disk record records/ defines: the runs.sqlite schema
version and the columns of runs, prompts and outputs in table order, and the token-log and dtv
format versions and datasets in file order. The definitions come from tests/schema_doc (built from
records/), the documentation from the README's tables (the backticked names in each row's first
cell) and section titles. A column added, removed or renamed on one side only fails here.

usage: check_schema_doc.py SCHEMA_DOC_BIN README
"""
import re
import subprocess
import sys


def defined(binary):
    out = subprocess.run([binary], capture_output=True, text=True, check=True).stdout.split("\n")
    cols, versions = {}, {}
    for line in filter(None, out):
        a, b = line.split(" ", 1)
        if a == "version":
            name, v = b.split(" ")
            versions[name] = int(v)
        else:
            cols.setdefault(a, []).append(b)
    return cols, versions


def table_after(lines, i):
    """The backticked names of the first cells of the Markdown table that starts after line i."""
    names, j = [], i + 1
    while j < len(lines) and not lines[j].startswith("|"):
        j += 1
    for line in lines[j:]:
        if not line.startswith("|"):
            break
        cell = line.split("|")[1]
        if set(cell.strip()) <= set("-: ") or cell.strip() in ("column", "dataset", "key"):
            continue
        names += [n.lstrip("/") for n in re.findall(r"`([^`]+)`", cell)]
    return names


def documented(readme):
    lines = open(readme).read().split("\n")
    cols, versions = {}, {}
    heads = {"runs": r"^### `runs`", "prompts": r"^### `prompts`", "outputs": r"^### `outputs`", "timings": r"^### `timings`",
             "tokens": r"^## tokens/RUNHASH\.h5", "dtv": r"^## dtv\.h5"}
    for i, line in enumerate(lines):
        for key, pat in heads.items():
            if re.match(pat, line):
                cols[key] = table_after(lines, i)
        m = re.match(r"^## runs\.sqlite \(schema_version (\d+)", line)
        if m:
            versions["runs.sqlite"] = int(m.group(1))
        m = re.match(r"^## (tokens|dtv)\S* \(format `sprinter-\w+`, version (\d+)\)", line)
        if m:
            versions[m.group(1)] = int(m.group(2))
    return cols, versions


def main():
    want_cols, want_versions = defined(sys.argv[1])
    doc_cols, doc_versions = documented(sys.argv[2])
    failed = 0
    for name, v in sorted(want_versions.items()):
        ok = doc_versions.get(name) == v
        failed += not ok
        print("%s  %s version: defined %d, documented %s" % ("ok  " if ok else "FAIL", name, v, doc_versions.get(name)))
    for key, cols in want_cols.items():
        doc = doc_cols.get(key, [])
        ok = doc == cols
        failed += not ok
        detail = ""
        if not ok:
            detail = "; only defined: %s; only documented: %s%s" % (
                [c for c in cols if c not in doc], [c for c in doc if c not in cols],
                "; same names in another order" if set(cols) == set(doc) else "")
        print("%s  %s: %d columns defined, %d documented%s" % ("ok  " if ok else "FAIL", key, len(cols), len(doc), detail))
    passed = len(want_versions) + len(want_cols) - failed
    print("schema_doc: %d passed, %d failed" % (passed, failed))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
