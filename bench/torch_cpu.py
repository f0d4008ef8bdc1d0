#!/usr/bin/env python3
"""PyTorch on the CPU: the same models and training step as amp's examples.

torch_cpu.py MODEL MODE STEPS THREADS

MODEL is one of
  mlp          examples/mlp.mlir: 784-256-128-10, ReLU, batch 128
  cnn          examples/cnn.mlir: 2 x (conv3x3 no bias + batch norm + ReLU +
               max-pool), 3136-128-10, batch 128
  transformer  examples/transformer_block.mlir: token + learned position
               embeddings, one pre-LN block (d 256, 4 heads, causal
               scaled-dot-product attention, GELU-tanh MLP 1024), final
               layer norm, LM head without bias; batch 8 x 128 tokens,
               vocabulary 1024
  vgg16        bench/gen_model.py vgg16 --batch 32: 13 x (conv3x3 no bias +
               batch norm + ReLU) with 5 max-pools on 32x32 images, dropout
               0.5, 512-512-512-10
MODE is fp32, autocast-bf16, autocast-f16 (torch.autocast("cpu", dtype)) or
compile-fp32 (torch.compile, Inductor, of the whole step: forward, backward
and the optimizer), or roofline: no timing of the step; the GEMM and
convolution FLOPs of one fp32 training step (forward and backward, counted
by torch.utils.flop_counter.FlopCounterMode) and the machine's peak f32 GEMM
rate at THREADS (the best of STEPS products of 2048 x 2048 matrices
through torch.matmul, after 3 warm-ups). Cross-entropy, Adam(1e-3), one fixed random batch; 10
warm-up steps, then STEPS timed ones. Prints one JSON line: the median step
time (ms), the final loss, and the step's working memory as the process's
peak RSS growth (KiB): its peak RSS after the steps, less its RSS before
the first one (the model, its parameters and the batch exist then) and
less Adam's state (made by the first step, kept between steps: amp holds it
in the step's arguments, outside its step memory too). It is an upper bound
on what the step's tensors need (the heap's slack and the first call's
library set-up are in it); null for compile-fp32, whose compiler runs in
the same process. Run each mode in a process of its own.
"""
import json
import resource
import statistics
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

VGG16_STAGES = [[64, 64], [128, 128], [256, 256, 256], [512, 512, 512], [512, 512, 512]]


class Block(nn.Module):
    """examples/transformer_block.mlir's model."""

    def __init__(self, vocab=1024, seq=128, d=256, heads=4):
        super().__init__()
        self.heads = heads
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Parameter(torch.randn(seq, d) * 0.02)
        self.ln1, self.ln2, self.lnf = nn.LayerNorm(d), nn.LayerNorm(d), nn.LayerNorm(d)
        self.q, self.k, self.v, self.o = (nn.Linear(d, d) for _ in range(4))
        self.fc1, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
        self.head = nn.Linear(d, vocab, bias=False)

    def forward(self, tokens):
        b, s = tokens.shape
        x = self.tok(tokens) + self.pos
        h = self.ln1(x)
        split = lambda t: t.view(b, s, self.heads, -1).transpose(1, 2)
        a = F.scaled_dot_product_attention(split(self.q(h)), split(self.k(h)),
                                           split(self.v(h)), is_causal=True)
        x = x + self.o(a.transpose(1, 2).reshape(b, s, -1))
        x = x + self.fc2(F.gelu(self.fc1(self.ln2(x)), approximate="tanh"))
        return self.head(self.lnf(x)).view(b * s, -1)


def vgg16():
    layers, cin = [], 3
    for widths in VGG16_STAGES:
        for cout in widths:
            layers += [nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout),
                       nn.ReLU()]
            cin = cout
        layers.append(nn.MaxPool2d(2))
    return nn.Sequential(*layers, nn.Flatten(), nn.Dropout(0.5), nn.Linear(512, 512), nn.ReLU(),
                         nn.Dropout(0.5), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))


def model_and_batch(kind):
    if kind == "mlp":
        net = nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(),
                            nn.Linear(256, 128), nn.ReLU(), nn.Linear(128, 10))
        return net, torch.rand(128, 1, 28, 28), torch.randint(0, 10, (128,))
    if kind == "cnn":
        net = nn.Sequential(
            nn.Conv2d(1, 32, 3, padding=1, bias=False), nn.BatchNorm2d(32), nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(32, 64, 3, padding=1, bias=False), nn.BatchNorm2d(64), nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Flatten(), nn.Linear(3136, 128), nn.ReLU(), nn.Linear(128, 10))
        return net, torch.rand(128, 1, 28, 28), torch.randint(0, 10, (128,))
    if kind == "transformer":
        return Block(), torch.randint(0, 10, (8, 128)), torch.randint(0, 10, (1024,))
    if kind == "vgg16":
        return vgg16(), torch.rand(32, 3, 32, 32), torch.randint(0, 10, (32,))
    raise SystemExit(f"unknown model {kind!r}: mlp, cnn, transformer or vgg16")


def rss_kib():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize() // 1024


def roofline(kind, net, x, y, repeats, threads):
    """Prints the step's GEMM/convolution FLOPs and the peak f32 GEMM rate."""
    from torch.utils.flop_counter import FlopCounterMode
    counter = FlopCounterMode(display=False)
    with counter:
        F.cross_entropy(net(x), y).backward()
    n = 2048
    a, b = torch.rand(n, n), torch.rand(n, n)
    for _ in range(3):
        torch.matmul(a, b)
    times = []
    for _ in range(max(repeats, 3)):
        t0 = time.perf_counter()
        torch.matmul(a, b)
        times.append(time.perf_counter() - t0)
    print(json.dumps({"model": kind, "threads": threads, "step_gflop": counter.get_total_flops() / 1e9,
                      "peak_f32_gemm_gflops": 2 * n ** 3 / min(times) / 1e9}),
          flush=True)


def main():
    kind, mode, steps, threads = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    if mode not in ("fp32", "autocast-bf16", "autocast-f16", "compile-fp32", "roofline"):
        raise SystemExit(f"unknown mode {mode!r}")
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    net, x, y = model_and_batch(kind)
    if mode == "roofline":
        roofline(kind, net, x, y, steps, threads)
        return
    opt = torch.optim.Adam(net.parameters(), lr=1e-3)
    dtype = {"autocast-bf16": torch.bfloat16, "autocast-f16": torch.float16}.get(mode)

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=dtype or torch.bfloat16, enabled=dtype is not None):
            loss = F.cross_entropy(net(x), y)
        loss.backward()
        opt.step()
        return loss

    if mode == "compile-fp32":
        step = torch.compile(step)
    before = rss_kib()
    compile_start = time.perf_counter()
    for _ in range(10):
        loss = step()
    warmup_s = time.perf_counter() - compile_start
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        loss = step()
        times.append((time.perf_counter() - t0) * 1e3)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    state_kib = sum(t.numel() * t.element_size() for s in opt.state.values()
                    for t in s.values() if torch.is_tensor(t)) // 1024
    growth = None if mode == "compile-fp32" else max(peak - before - state_kib, 0)
    print(json.dumps({"framework": "pytorch " + torch.__version__, "model": kind,
                      "mode": mode, "threads": threads,
                      "median_step_ms": statistics.median(times),
                      "final_loss": float(loss.detach()), "warmup_s": warmup_s,
                      "peak_rss_growth_kib": growth}), flush=True)


if __name__ == "__main__":
    main()
