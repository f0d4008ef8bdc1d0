#!/usr/bin/env python3
"""Checks a checkpoint written right after --init-from (--steps=0 --save).

usage: check_init_from.py SOURCE.safetensors STARTED.safetensors

SOURCE is the checkpoint --init-from read, STARTED the new run's state before
its first step. Each parameter of STARTED must be SOURCE's f32 value of that
parameter (its master where SOURCE has one) rounded to STARTED's type, each
f32 master of STARTED that same f32 value exactly, each batch-norm state
tensor SOURCE's; the optimizer state must be zero (a fresh optimizer).
Prints one summary line; exits 1 on the first difference.
"""
import json
import struct
import sys

SIZES = {"F32": ("f", 4), "F16": ("e", 2), "BF16": (None, 2), "I32": ("i", 4)}


def read(path):
    data = open(path, "rb").read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    body = data[8 + n:]
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        fmt, size = SIZES[info["dtype"]]
        raw = body[info["data_offsets"][0]:info["data_offsets"][1]]
        count = len(raw) // size
        if fmt is None:  # bf16: the high half of an f32
            values = [struct.unpack("<f", b"\0\0" + raw[2 * i:2 * i + 2])[0] for i in range(count)]
        else:
            values = list(struct.unpack(f"<{count}{fmt}", raw))
        tensors[name] = (info["dtype"], values)
    return tensors


def rounded(values, dtype):
    if dtype == "F32":
        return [struct.unpack("<f", struct.pack("<f", v))[0] for v in values]
    if dtype == "F16":
        return [struct.unpack("<e", struct.pack("<e", v))[0] for v in values]
    # bf16, round to nearest even
    out = []
    for v in values:
        bits = struct.unpack("<I", struct.pack("<f", v))[0]
        bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
        out.append(struct.unpack("<f", struct.pack("<I", bits))[0])
    return out


def main():
    source, started = read(sys.argv[1]), read(sys.argv[2])

    def fail(message):
        print("FAIL:", message)
        sys.exit(1)

    def f32_value(tensors, k, masters):
        dtype, values = tensors[f"param.{k}"]
        if dtype != "F32" and f"master.{masters[0]}" in tensors:
            values = tensors[f"master.{masters[0]}"][1]
            masters[0] += 1
        return values

    source_masters, started_masters = [0], [0]
    k = 0
    while f"param.{k}" in started:
        want = f32_value(source, k, source_masters)
        dtype, got = started[f"param.{k}"]
        if got != rounded(want, dtype):
            fail(f"param.{k} ({dtype}) is not the source's value rounded")
        if dtype != "F32":
            name = f"master.{started_masters[0]}"
            started_masters[0] += 1
            if started[name][1] != want:
                fail(f"{name} is not the source's f32 value")
        k += 1
    s = 0
    while f"state.{s}" in started:
        if started[f"state.{s}"][1] != source[f"state.{s}"][1]:
            fail(f"state.{s} differs from the source's")
        s += 1
    moments = [n for n in started if n.startswith("opt_state.")]
    if any(any(v != 0 for v in started[n][1]) for n in moments):
        fail("the optimizer state is not fresh")
    print(f"ok: {k} parameters ({started_masters[0]} with f32 masters), {s} state tensors, "
          f"{len(moments)} fresh optimizer tensors")


if __name__ == "__main__":
    main()
