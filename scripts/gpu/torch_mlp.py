"""PyTorch's AMP on the same MLP step, for a side-by-side time on the GPU.

torch_mlp.py [STEPS]: examples/mlp.mlir's model (784-256-128-10, ReLU,
cross-entropy, batch 128) trained with torch.autocast(float16) +
GradScaler + Adam(1e-3) on random data, eager and torch.compile'd; prints
the median step time of each in ms (CUDA events, after 50 warm-up steps).
"""
import statistics
import sys

import torch


def main():
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 300
    dev = "cuda"
    torch.manual_seed(0)
    x = torch.rand(128, 784, device=dev)
    y = torch.randint(0, 10, (128,), device=dev)
    for mode in ("eager", "compiled"):
        model = torch.nn.Sequential(
            torch.nn.Linear(784, 256), torch.nn.ReLU(),
            torch.nn.Linear(256, 128), torch.nn.ReLU(),
            torch.nn.Linear(128, 10)).to(dev)
        opt = torch.optim.Adam(model.parameters(), lr=1e-3)
        scaler = torch.amp.GradScaler("cuda")

        def step():
            opt.zero_grad(set_to_none=True)
            with torch.autocast("cuda", dtype=torch.float16):
                loss = torch.nn.functional.cross_entropy(model(x), y)
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
            return loss

        if mode == "compiled":
            step = torch.compile(step)
        for _ in range(50):
            step()
        torch.cuda.synchronize()
        times = []
        for _ in range(steps):
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            start.record()
            loss = step()
            end.record()
            torch.cuda.synchronize()
            times.append(start.elapsed_time(end))
        print(f"torch {mode}: median step {statistics.median(times):.3f} ms "
              f"over {steps} steps, final loss {loss.item():.4f}")


main()
