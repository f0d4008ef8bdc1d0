#!/usr/bin/env python3
"""The roofline of the GPU benchmark's models (bench/gpu/run.sh's phase).

  roofline.py --models NAME... [--gemm DIR] --out FILE [--device cuda|cpu] [--tiny]

Measures, in this run: the peak of a large GEMM (8192^3 through
torch.matmul, which calls cuBLAS/cuBLASLt) in f16, bf16 and f32 (TF32 off,
as amp's O0 runs f32 GEMMs), and the device's copy bandwidth (a 1 GiB
copy: 2 GiB of traffic). Per model (bench/gpu/torch_models.py's, named as
bundle.sh names them): the GEMM FLOPs of one training step (forward and
backward matmuls and convolutions, counted by
torch.utils.flop_counter.FlopCounterMode), the parameters, and the minimum
bytes of a step: 28 bytes per parameter (Adam on f32 masters: read the
parameter, its gradient and two moments, write the parameter, the moments
and the f16 copy) plus the batch; activations are not counted, so this is a
floor. The floor time is max(FLOPs / GEMM peak, bytes / copy bandwidth);
report.py divides it by amp's measured step time. Runs add their models to
an existing --out file; each model keeps the peaks of its own run.
With --gemm DIR (the AMP_CUDA_GEMM_PROFILE files of run.sh's ours phase,
DIR/MODEL.jsonl): each GEMM shape amp ran, timed again calling cuBLASLt
directly through torch (same shape, transposes, input type and bias/ReLU/
GELU epilogue; the plain GEMM for the bias-gradient and GELU-gradient
epilogues, which torch has no call for; torch writes the input type where
amp may write f32), and amp's median vs it.
"""
import argparse
import json
import os
import statistics
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_models  # noqa: E402

DTYPES = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32}


def timed(fn, dev, repeats=20):
    """Median milliseconds of fn() over `repeats` runs after 3 warm-ups."""
    for _ in range(3):
        fn()
    times = []
    for _ in range(repeats):
        if dev == "cuda":
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            torch.cuda.synchronize()
            times.append(start.elapsed_time(end))
        else:
            import time
            t0 = time.perf_counter()
            fn()
            times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def peaks(dev, tiny):
    n = 256 if tiny else 8192
    out = {"gemm_n": n}
    torch.backends.cuda.matmul.allow_tf32 = False
    for name, dtype in DTYPES.items():
        if dev == "cpu" and name == "f16":
            continue
        a = torch.randn(n, n, device=dev, dtype=dtype)
        b = torch.randn(n, n, device=dev, dtype=dtype)
        ms = timed(lambda: torch.matmul(a, b), dev)
        out[f"gemm_{name}_tflops"] = 2 * n ** 3 / ms / 1e9
    count = (1 << 20 if tiny else 1 << 28)  # f32 elements: 4 MiB or 1 GiB
    src = torch.empty(count, device=dev)
    dst = torch.empty_like(src)
    ms = timed(lambda: dst.copy_(src), dev)
    out["copy_gb_per_s"] = 2 * src.numel() * 4 / ms / 1e6
    return out


def model_of(name, tiny):
    """(torch_models kind, batch) of a bundle model name."""
    if name.startswith("vgg16-b"):
        return "vgg16", int(name[len("vgg16-b"):])
    if tiny:
        return name, {"mlp": 8, "transformer": 2}[name]
    return name, {"mlp": 512, "transformer": 8}[name]


def model_costs(name, dev, tiny):
    kind, batch = model_of(name, tiny)
    model, x, y = torch_models.build(kind, batch, tiny, dev)
    params = sum(p.numel() for p in model.parameters())
    flops = None
    try:
        from torch.utils.flop_counter import FlopCounterMode
        with FlopCounterMode(display=False) as counter:
            model(x, y).backward()
        flops = counter.get_total_flops()
    except ImportError:  # torch < 2.1
        pass
    batch_bytes = x.numel() * x.element_size() + y.numel() * 4
    return {"params": params, "gemm_flops": flops,
            "min_bytes": 28 * params + batch_bytes, "batch": batch}


def gemm_efficiency(path, dev):
    rows = []
    for line in open(path):
        g = json.loads(line)
        dtype = DTYPES[g["dtype_ab"]]
        b, m, n, k = g["batch"], g["m"], g["n"], g["k"]
        shape_a = (k, m) if g["transpose_a"] else (m, k)
        shape_b = (n, k) if g["transpose_b"] else (k, n)
        lead = (b,) if b > 1 else ()
        a = torch.randn(*lead, *shape_a, device=dev, dtype=dtype)
        bb = torch.randn(*lead, *shape_b, device=dev, dtype=dtype)
        a = a.transpose(-1, -2) if g["transpose_a"] else a
        bb = bb.transpose(-1, -2) if g["transpose_b"] else bb
        bias = torch.randn(n, device=dev, dtype=dtype)
        ep = g["epilogue"]
        if ep in ("bias", "relu_bias", "relu_aux_bias", "gelu_bias",
                  "gelu_aux_bias") and b == 1:
            if ep == "bias":
                fn = lambda: torch.addmm(bias, a, bb)  # noqa: E731
            else:
                # cuBLASLt's bias + activation epilogue; torch keeps no GELU
                # input or ReLU mask (amp's *_aux_bias also write them).
                gelu = ep.startswith("gelu")
                fn = lambda: torch._addmm_activation(bias, a, bb, use_gelu=gelu)  # noqa: E731
        else:
            # Batched GEMMs, and the gradient epilogues (bgrad, dgelu, drelu)
            # torch has no direct call for: the plain GEMM of the same shape.
            fn = lambda: torch.matmul(a, bb)  # noqa: E731
        torch_ms = timed(fn, dev)
        flops = 2 * b * m * n * k
        rows.append({**g, "torch_ms": torch_ms,
                     "ours_tflops": flops / g["median_ms"] / 1e9 if g["median_ms"] else None,
                     "torch_tflops": flops / torch_ms / 1e9,
                     "efficiency": torch_ms / g["median_ms"] if g["median_ms"] else None})
    return rows


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--models", nargs="+", required=True)
    p.add_argument("--gemm")
    p.add_argument("--out", required=True)
    p.add_argument("--device", default="cuda")
    p.add_argument("--tiny", action="store_true")
    a = p.parse_args()
    if a.device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("roofline.py: no CUDA device (--device cpu for a smoke test)")
    # Several runs (one per device call) add their models to one file; each
    # model keeps the peaks measured in its own run.
    result = {"models": {}, "gemms": {}}
    if os.path.exists(a.out):
        with open(a.out) as f:
            result = json.load(f)
    measured = peaks(a.device, a.tiny)
    result.update(device=torch.cuda.get_device_name() if a.device == "cuda" else "cpu",
                  torch=torch.__version__, peaks=measured)
    print(json.dumps(measured))
    for name in a.models:
        result["models"][name] = dict(model_costs(name, a.device, a.tiny), peaks=measured)
        print(name, json.dumps(result["models"][name]))
        path = os.path.join(a.gemm, name + ".jsonl") if a.gemm else None
        if path and os.path.exists(path):
            result["gemms"][name] = gemm_efficiency(path, a.device)
    with open(a.out, "w") as f:
        json.dump(result, f, indent=2)


if __name__ == "__main__":
    main()
