"""Compares the state after a few training steps on the GPU with the CPU's.

compare_steps.py INIT CPU GPU [--tolerance T]: the three safetensors files
of the same run's initial state, its end state on the CPU backend and on the
GPU. For every f32 tensor, the change from INIT on the GPU is compared with
the change on the CPU: normwise relative error |d_gpu - d_cpu| / |d_cpu|
(T, default 2e-2: fp16 products summed in another order; use 1e-4 for O0's
f32 path). Tensors stored in f16/bf16 are compared directly, to 2 ulps of
their type relative to their norm; integer tensors (step counts, the scale
tracker) must be equal. Prints one line per tensor and exits 1 if any
differs by more.
"""
import json
import struct
import sys

import numpy as np

DTYPES = {"F32": np.float32, "F16": np.float16, "I32": np.int32,
          "BOOL": np.bool_, "BF16": np.uint16}


def load(path):
    data = open(path, "rb").read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        raw = np.frombuffer(data[8 + n + begin:8 + n + end],
                            dtype=DTYPES[info["dtype"]])
        if info["dtype"] == "BF16":  # widen exactly: bf16 is f32's top half
            raw = (raw.astype(np.uint32) << 16).view(np.float32)
        tensors[name] = (info["dtype"], raw.reshape(info["shape"]))
    return tensors


def main():
    args = sys.argv[1:]
    tolerance = 2e-2
    if "--tolerance" in args:
        i = args.index("--tolerance")
        tolerance = float(args[i + 1])
        del args[i:i + 2]
    init, cpu, gpu = (load(p) for p in args[:3])
    worst, failed = 0.0, []
    for name, (dtype, c) in cpu.items():
        if name not in gpu:
            failed.append(name)
            print(f"{name}: missing on the GPU")
            continue
        g = gpu[name][1]
        if dtype in ("I32", "BOOL"):
            ok = np.array_equal(c, g)
            print(f"{name:24s} {dtype:4s} {'equal' if ok else 'DIFFERENT'}")
            if not ok:
                failed.append(name)
            continue
        c64, g64 = c.astype(np.float64), g.astype(np.float64)
        if dtype == "F32":
            d_cpu = c64 - init[name][1].astype(np.float64)
            d_gpu = g64 - init[name][1].astype(np.float64)
            scale = np.linalg.norm(d_cpu)
            err = np.linalg.norm(d_gpu - d_cpu) / max(scale, 1e-30)
            limit = tolerance if scale > 0 else 0.0
            what = "change"
        else:
            ulp = 2.0 ** (-10 if dtype == "F16" else -7)
            err = np.linalg.norm(g64 - c64) / max(np.linalg.norm(c64), 1e-30)
            limit = 2 * ulp
            what = "value"
        worst = max(worst, err / limit if limit else (0 if err == 0 else 1e9))
        ok = err <= limit if limit else err == 0
        print(f"{name:24s} {dtype:4s} {what} rel. error {err:.2e} "
              f"(limit {limit:.1e}) {'ok' if ok else 'TOO LARGE'}")
        if not ok:
            failed.append(name)
    print(f"{len(cpu)} tensors, {len(failed)} over their limit; "
          f"worst error / limit {worst:.3f}")
    sys.exit(1 if failed else 0)


main()
