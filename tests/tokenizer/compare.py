#!/usr/bin/python3
"""compare.py - compares token ids from the oracle and from sprinter, line by line.

    compare.py LABEL CORPUS ORACLE_IDS C_IDS

CORPUS has one JSON string per line, the two id files one line of space-separated ids per text.
Prints "LABEL: N lines, M mismatches" and the first few mismatches; exit status 1 when any line
differs or the files have different line counts.
"""
import json
import sys


def read_lines(path):
    with open(path, encoding="utf-8") as f:
        return f.read().split("\n")[:-1]


def main():
    label, corpus, oracle, mine = sys.argv[1:5]
    texts = [json.loads(line) for line in read_lines(corpus)]
    want, got = read_lines(oracle), read_lines(mine)
    if not (len(texts) == len(want) == len(got)):
        print(f"{label}: line counts differ: corpus {len(texts)}, oracle {len(want)}, "
              f"sprinter {len(got)}")
        return 1
    bad = [i for i in range(len(texts)) if want[i] != got[i]]
    print(f"{label}: {len(texts)} lines, {len(bad)} mismatches")
    for i in bad[:5]:
        print(f"  line {i + 1}: text {json.dumps(texts[i])[:160]}")
        print(f"    oracle:   {want[i][:160]}")
        print(f"    sprinter: {got[i][:160]}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
