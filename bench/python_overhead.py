#!/usr/bin/env python3
"""Per-step Python overhead of amp.compile's Step (issue 20's benchmark).

python_overhead.py [--steps N]: examples/mlp.mlir's MLP (784-256-128-10,
ReLU, batch 128) built in PyTorch, Adam(1e-3), compiled with amp.compile at
O0 and O1-f16, a batch as a DataLoader gives it (f32 images, int64 labels).
In one process, N times alternately: a call ``step(x, y)`` (what a user's
loop runs: batch checks, passing the batch, the learning rate, the step)
and a call of the compiled step alone (``step._native.step()`` on the
arguments already set); then N calls timing the Python side alone (each
call's time outside its compiled call). Prints the medians (call, step,
Python side), the Python side's share of the call (the target: <= 5%) and
the side-by-side difference call - step with its share, one JSON line per
opt level. On a 2-core machine shared with others the side-by-side
difference is noisy (tens of microseconds either way); the Python side's
time is measured within each call.
"""
import argparse
import json
import os
import statistics
import sys
import time

import torch
import torch.nn as nn

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "build", "python"))
import amp  # noqa: E402


def mlp() -> nn.Module:
    return nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(),
                         nn.Linear(256, 128), nn.ReLU(), nn.Linear(128, 10))


def alternating_ms(first, second, steps: int):
    """Per-call times (ms) of ``first`` and ``second``, called alternately
    so that the machine's drift hits both alike."""
    a, b = [], []
    for _ in range(steps):
        t0 = time.perf_counter_ns()
        first()
        t1 = time.perf_counter_ns()
        second()
        t2 = time.perf_counter_ns()
        a.append((t1 - t0) / 1e6)
        b.append((t2 - t1) / 1e6)
    return a, b


class _Timed:
    """Stands for the native step in a Step, timing its compiled calls."""

    def __init__(self, native):
        self._native = native
        self.inside: list = []

    def step_with(self, inputs):
        t0 = time.perf_counter_ns()
        result = self._native.step_with(inputs)
        self.inside.append((time.perf_counter_ns() - t0) / 1e6)
        return result

    def __getattr__(self, name):
        return getattr(self._native, name)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=2000)
    args = parser.parse_args()
    torch.manual_seed(0)
    x = torch.randn(128, 1, 28, 28)
    y = torch.randint(0, 10, (128,))
    for opt_level in ("O0", "O1"):
        model = mlp()
        opt = torch.optim.Adam(model.parameters(), lr=1e-3)
        step = amp.compile(model, nn.CrossEntropyLoss(), example_inputs=(x, y),
                           optimizer=opt, opt_level=opt_level, dtype=torch.float16)
        call = lambda: step(x, y)  # noqa: E731
        # The step alone computes on the same batch (set once, copied in).
        step._native.set(0, x.numpy())
        step._native.set(1, y.int().numpy())
        native = step._native.step
        for _ in range(20):  # warm-up
            call()
        calls, natives = alternating_ms(call, native, args.steps)
        c, n = statistics.median(calls), statistics.median(natives)
        # The Python side alone: each call's time outside the compiled call.
        timed = _Timed(step._native)
        step._native = timed
        outside = []
        for _ in range(args.steps):
            t0 = time.perf_counter_ns()
            call()
            outside.append((time.perf_counter_ns() - t0) / 1e6 - timed.inside[-1])
        step._native = timed._native
        python_ms = statistics.median(outside)
        print(json.dumps({"model": "mlp", "opt_level": opt_level, "batch": 128,
                          "call_ms": round(c, 4), "step_ms": round(n, 4),
                          "python_ms": round(python_ms, 4),
                          "python_share": round(python_ms / c, 4),
                          "call_minus_step_ms": round(c - n, 4),
                          "call_minus_step_share": round((c - n) / c, 4),
                          "threads": torch.get_num_threads()}))


if __name__ == "__main__":
    main()
