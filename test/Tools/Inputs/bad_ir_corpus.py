#!/usr/bin/env python3
"""Runs every case of a bad-IR corpus through amp-opt and amp-run.

usage: bad_ir_corpus.py BUILD_BIN_DIR TMP_DIR FILE...

Each FILE is split on `// -----` lines into cases (the -split-input-file
convention). Every case must make both tools exit with status 1 (never a
signal, never 0) and print an error: amp-opt (running amp-pipeline) a located
`file:line:col: error:`, amp-run either that or an `amp-run: error:` line.
Prints one line per bad case and a final `N cases, M bad`.
"""
import os
import re
import subprocess
import sys

LOCATED = re.compile(r":\d+:\d+: error: ")


def cases(path):
    text = open(path).read()
    for i, chunk in enumerate(re.split(r"^// -----\s*$", text, flags=re.M)):
        if chunk.strip():
            yield f"{os.path.basename(path)}#{i}", chunk


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    return p.returncode, p.stdout + p.stderr


def main():
    bindir, tmp = sys.argv[1], sys.argv[2]
    os.makedirs(tmp, exist_ok=True)
    total = bad = 0
    for path in sys.argv[3:]:
        for name, text in cases(path):
            total += 1
            case = os.path.join(tmp, f"case{total}.mlir")
            with open(case, "w") as f:
                f.write(text)
            problems = []
            code, out = run([os.path.join(bindir, "amp-opt"), case,
                             "--amp-pipeline"])
            if code != 1 or not LOCATED.search(out):
                problems.append(f"amp-opt exit {code}: {out.strip()[:200]!r}")
            code, out = run([os.path.join(bindir, "amp-run"), case,
                             "--dataset=synthetic", "--steps=1"])
            if code != 1 or not (LOCATED.search(out) or "amp-run: error: " in out):
                problems.append(f"amp-run exit {code}: {out.strip()[:200]!r}")
            if problems:
                bad += 1
                print(f"BAD {name}: " + "; ".join(problems))
    print(f"{total} cases, {bad} bad")


if __name__ == "__main__":
    main()
