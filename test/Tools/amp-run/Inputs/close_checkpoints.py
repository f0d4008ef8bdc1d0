"""Compares two amp checkpoints (safetensors) tensor by tensor.

close_checkpoints.py A B RTOL [PREFIX]: both files hold the same tensors
(names, types, shapes; with PREFIX, those whose names start with it), and
each float tensor of A is within RTOL of B relative to B's largest
magnitude (integer tensors equal); RTOL 0 asks for equal values. Exits 1 naming the first
tensor that differs; prints the largest relative difference. Plain Python
(lit's interpreter has no NumPy).
"""
import json
import struct
import sys
from array import array


def values(dtype, raw):
    if dtype == "F32":
        return array("f", raw).tolist()
    if dtype == "F16":
        return list(struct.unpack(f"<{len(raw) // 2}e", raw))
    if dtype == "BF16":  # the upper half of an f32
        return [struct.unpack("<f", struct.pack("<I", h << 16))[0]
                for h in array("H", raw)]
    if dtype == "I32":
        return array("i", raw).tolist()
    if dtype == "I64":
        return array("q", raw).tolist()
    sys.exit(f"unexpected dtype {dtype}")


def read(path):
    with open(path, "rb") as f:
        data = f.read()
    (size,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + size])
    header.pop("__metadata__", None)
    body = data[8 + size:]
    return {name: (info["dtype"], tuple(info["shape"]),
                   values(info["dtype"], body[info["data_offsets"][0]:info["data_offsets"][1]]))
            for name, info in header.items()}


def main():
    a, b = read(sys.argv[1]), read(sys.argv[2])
    rtol = float(sys.argv[3])
    if len(sys.argv) > 4:
        a = {k: v for k, v in a.items() if k.startswith(sys.argv[4])}
        b = {k: v for k, v in b.items() if k.startswith(sys.argv[4])}
        if not a:
            sys.exit(f"no tensor named {sys.argv[4]}*")
    if a.keys() != b.keys():
        sys.exit(f"tensors differ: {sorted(a.keys() ^ b.keys())}")
    worst = 0.0
    for name, (dtype, shape, x) in sorted(a.items()):
        dtype_b, shape_b, y = b[name]
        if (dtype, shape) != (dtype_b, shape_b):
            sys.exit(f"{name}: {dtype} {shape} vs {dtype_b} {shape_b}")
        if dtype in ("I32", "I64"):
            if x != y:
                sys.exit(f"{name}: integer values differ")
            continue
        scale = max((abs(v) for v in y), default=0.0)
        diff = max((abs(u - v) for u, v in zip(x, y)), default=0.0)
        relative = diff / scale if scale else diff
        worst = max(worst, relative)
        if relative > rtol:
            sys.exit(f"{name}: relative difference {relative:.3g} > {rtol}")
    print(f"largest relative difference {worst:.3g}")


if __name__ == "__main__":
    main()
