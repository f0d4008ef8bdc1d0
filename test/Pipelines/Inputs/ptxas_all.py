#!/usr/bin/env python3
"""Assembles every PTX kernel module embedded in a lowered MLIR file.

usage: ptxas_all.py PTXAS ARCH LOWERED.mlir TMP_DIR

Finds each `assembly = "..."` of the gpu.binary ops (PTX, MLIR-escaped),
writes it out and runs `ptxas -arch=ARCH` on it. Prints one line per module
ptxas rejects and `N kernel modules, M rejected by ptxas`.
"""
import os
import re
import subprocess
import sys

ptxas, arch, path, tmp = sys.argv[1:5]
os.makedirs(tmp, exist_ok=True)
text = open(path).read()
modules = re.findall(r'assembly = "((?:[^"\\]|\\.)*)"', text)
rejected = 0
for i, escaped in enumerate(modules):
    ptx = re.sub(r'\\([0-9A-Fa-f]{2})', lambda m: chr(int(m.group(1), 16)), escaped)
    ptx = ptx.replace('\\\\', '\\')
    src = os.path.join(tmp, f"kernel{i}.ptx")
    open(src, "w").write(ptx)
    p = subprocess.run([ptxas, f"-arch={arch}", src, "-o", src + ".cubin"],
                       capture_output=True, text=True)
    if p.returncode != 0:
        rejected += 1
        print(f"REJECTED kernel{i}: {p.stderr.strip()[:300]}")
print(f"{len(modules)} kernel modules, {rejected} rejected by ptxas")
