#!/usr/bin/env python3
"""PyTorch DistributedDataParallel on the CPU (gloo): bench/dp_vs_torch.sh's peer.

Run under torchrun: python -m torch.distributed.run --standalone
--nproc_per_node=N bench/torch_ddp.py MODEL MODE STEPS

Every process trains bench/torch_cpu.py's MODEL (its batch per process, one
thread, Adam 1e-3, one fixed random batch of its own) wrapped in
DistributedDataParallel over gloo, in MODE fp32 or autocast-bf16; 10 warm-up
steps, then STEPS timed ones. Rank 0 prints one JSON line: the median step
time (ms) and the samples per second of the whole job (ranks x batch /
median step).
"""
import json
import os
import statistics
import sys
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_cpu import model_and_batch  # noqa: E402


def main():
    kind, mode, steps = sys.argv[1], sys.argv[2], int(sys.argv[3])
    if mode not in ("fp32", "autocast-bf16"):
        raise SystemExit(f"unknown mode {mode!r}: fp32 or autocast-bf16")
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    net, x, y = model_and_batch(kind)
    torch.manual_seed(1 + rank)  # each rank's own batch
    x, y = torch.rand_like(x) if x.is_floating_point() else x, y
    net = DistributedDataParallel(net)
    opt = torch.optim.Adam(net.parameters(), lr=1e-3)
    bf16 = mode == "autocast-bf16"

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            loss = F.cross_entropy(net(x), y)
        loss.backward()
        opt.step()
        return loss

    for _ in range(10):
        step()
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        step()
        times.append((time.perf_counter() - t0) * 1e3)
    median = statistics.median(times)
    if rank == 0:
        print(json.dumps({"framework": "pytorch " + torch.__version__ + " DDP gloo",
                          "model": kind, "mode": mode, "ranks": world,
                          "median_step_ms": median,
                          "samples_per_s": world * x.shape[0] * 1e3 / median}),
              flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
