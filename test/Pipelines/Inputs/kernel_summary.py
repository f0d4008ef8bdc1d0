"""Summarizes the kernels of one function after amp-map-linalg-to-gpu.

kernel_summary.py DUMP FUNCTION: DUMP holds the IR printed by
--mlir-print-ir-after=amp-map-linalg-to-gpu. Prints one line per top-level
gpu.launch of @FUNCTION, in order:
  launch N: blocks B, segments S, f32-sqrt Q, true-stores T
(segments: scf.if ops at the top of the launch body -- one per fused launch,
or the bounds guard of a single one), then a line with the number of
launches.
"""
import re
import sys


def main():
    text = open(sys.argv[1]).read()
    name = sys.argv[2]
    start = text.find("func.func @" + name + "(")
    if start < 0:
        sys.exit("no @" + name)
    lines = text[start:].split("\n")
    depth, body = 0, []
    for line in lines:
        body.append(line)
        depth += line.count("{") - line.count("}")
        if depth == 0 and len(body) > 1:
            break
    indent = None
    launches = []
    i = 0
    while i < len(body):
        m = re.match(r"^(\s*)(%\S+ = )?gpu\.launch ", body[i])
        if m and (indent is None or len(m.group(1)) == indent):
            indent = len(m.group(1))
            j, d, kernel = i, 0, []
            while True:
                kernel.append(body[j])
                d += body[j].count("{") - body[j].count("}")
                if d == 0:
                    break
                j += 1
            blocks = re.search(r"blocks\(.*?\) in \(%\S+ = %c(\d+)", body[i])
            inner = " " * (indent + 2)
            segments = sum(1 for k in kernel if k.startswith(inner + "scf.if "))
            sqrt = sum(1 for k in kernel if "math.sqrt" in k and ": f32" in k)
            trues = sum(1 for k in kernel if "memref.store %true" in k)
            launches.append((blocks.group(1) if blocks else "?", segments, sqrt, trues))
            i = j
        i += 1
    for n, (b, s, q, t) in enumerate(launches):
        print(f"launch {n}: blocks {b}, segments {s}, f32-sqrt {q}, true-stores {t}")
    print(f"{len(launches)} launches")


main()
