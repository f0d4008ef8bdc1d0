#!/usr/bin/env python3
"""PyTorch on the CPU, the same models and step as amp's examples.

torch_cpu.py MODEL STEPS THREADS: MODEL is mlp (examples/mlp.mlir:
784-256-128-10, ReLU) or cnn (examples/cnn.mlir: 2 x conv3x3 + batch norm +
ReLU + max-pool, 3136-128-10), batch 128, cross-entropy, Adam(1e-3), random
data. Runs eager fp32 and torch.autocast("cpu", bfloat16) (PyTorch's CPU
autocast has no float16), 10 warm-up steps then STEPS timed ones each, and
prints one JSON line per mode with the median step time in ms.
"""
import json
import statistics
import sys
import time

import torch
import torch.nn as nn


def model(kind):
    if kind == "mlp":
        return nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(),
                             nn.Linear(256, 128), nn.ReLU(), nn.Linear(128, 10))
    return nn.Sequential(
        nn.Conv2d(1, 32, 3, padding=1, bias=False), nn.BatchNorm2d(32), nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1, bias=False), nn.BatchNorm2d(64), nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(3136, 128), nn.ReLU(), nn.Linear(128, 10))


def main():
    kind, steps, threads = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    x = torch.rand(128, 1, 28, 28)
    y = torch.randint(0, 10, (128,))
    for mode in ("fp32", "autocast-bf16"):
        net = model(kind)
        opt = torch.optim.Adam(net.parameters(), lr=1e-3)

        def step():
            opt.zero_grad(set_to_none=True)
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=mode != "fp32"):
                loss = nn.functional.cross_entropy(net(x), y)
            loss.backward()
            opt.step()
            return loss

        for _ in range(10):
            step()
        times = []
        for _ in range(steps):
            t0 = time.perf_counter()
            loss = step()
            times.append((time.perf_counter() - t0) * 1e3)
        print(json.dumps({"framework": "pytorch " + torch.__version__, "model": kind,
                          "mode": mode, "threads": threads,
                          "median_step_ms": statistics.median(times),
                          "final_loss": float(loss)}), flush=True)


main()
