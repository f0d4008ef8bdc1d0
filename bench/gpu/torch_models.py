#!/usr/bin/env python3
"""PyTorch's side of the GPU training benchmark (bench/gpu/run.sh).

  torch_models.py MODEL [--batch B] [--modes M,...] [--steps N] [--warmup W]
                  [--device cuda|cpu] [--out FILE.jsonl] [--tiny]

MODEL is mlp (3 linear layers 4096x4096, ReLU, cross-entropy over 4096
classes, batch 512), transformer (bench/gen_model.py's: token + position
embeddings, one pre-LN block d=1024, 16 heads, causal softmax attention
written out as matmul-mask-softmax-matmul as ours is, GELU(tanh) MLP
1024-4096-1024, final layer norm, LM head over a 1024-token vocabulary,
sequence 1024, batch 8) or vgg16 (examples/vgg16_cifar.mlir: VGG16 with
batch norm on 3x32x32, dropout 0.5, batch --batch). The same model, batch
and optimizer (Adam, lr 1e-3, betas (0.9, 0.999), eps 1e-8; PyTorch's
default foreach implementation) as amp's artifacts, on one fixed random
batch held on the device (i32 inputs in [0, 10), as amp-train
--bench-steps draws them).

Modes: fp32 (eager), amp-f16 (eager autocast float16 + GradScaler, the
recipe of PyTorch's AMP docs), amp-bf16 (eager autocast bfloat16, no
scaler), compile-amp-f16 (torch.compile(model) with autocast + GradScaler;
default mode, no CUDA graphs). Each step is timed from its start until the
device is idle (torch.cuda.synchronize(): amp's steps also end with one host
sync); the median of --steps steps after --warmup untimed ones, and the peak
of torch.cuda.max_memory_allocated / max_memory_reserved over the timed
steps. Appends one JSON object per mode to --out (and prints it).
--tiny shrinks every size (a CPU smoke test of the script itself).
"""
import argparse
import json
import math
import statistics
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class Mlp(nn.Module):
    def __init__(self, width, layers):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(width, width) for _ in range(layers))

    def forward(self, x, y):
        for i, layer in enumerate(self.layers):
            x = layer(x)
            if i + 1 < len(self.layers):
                x = F.relu(x)
        return F.cross_entropy(x, y)


class Transformer(nn.Module):
    def __init__(self, d, heads, seq, vocab):
        super().__init__()
        self.heads = heads
        self.tok = nn.Parameter(torch.randn(vocab, d) * 0.02)
        self.pos = nn.Parameter(torch.randn(seq, d) * 0.02)
        self.ln1 = nn.LayerNorm(d)
        self.q, self.k, self.v, self.o = (nn.Linear(d, d) for _ in range(4))
        self.ln2 = nn.LayerNorm(d)
        self.fc1, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
        self.lnf = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)
        self.register_buffer("mask", torch.triu(torch.ones(seq, seq, dtype=torch.bool), 1))

    def forward(self, tokens, labels):
        b, s = tokens.shape
        d, h = self.tok.shape[1], self.heads
        x = (F.embedding(tokens, self.tok) + self.pos).reshape(b * s, d)
        a = self.ln1(x)

        def heads(t):
            return t.reshape(b, s, h, d // h).transpose(1, 2).reshape(b * h, s, d // h)

        q, k, v = heads(self.q(a)), heads(self.k(a)), heads(self.v(a))
        scores = torch.bmm(q, k.transpose(1, 2)) * (1.0 / math.sqrt(d // h))
        p = torch.softmax(scores.masked_fill(self.mask, float("-inf")), dim=-1)
        c = torch.bmm(p, v).reshape(b, h, s, d // h).transpose(1, 2).reshape(b * s, d)
        x = x + self.o(c)
        x = x + self.fc2(F.gelu(self.fc1(self.ln2(x)), approximate="tanh"))
        return F.cross_entropy(self.head(self.lnf(x)), labels)


class Vgg16(nn.Module):
    STAGES = [[64, 64], [128, 128], [256, 256, 256], [512, 512, 512], [512, 512, 512]]

    def __init__(self, scale=1):
        super().__init__()
        layers, cin = [], 3
        for widths in self.STAGES:
            for cout in widths:
                cout //= scale
                layers += [nn.Conv2d(cin, cout, 3, padding=1, bias=False),
                           nn.BatchNorm2d(cout), nn.ReLU()]
                cin = cout
            layers.append(nn.MaxPool2d(2, 2))
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Sequential(
            nn.Flatten(), nn.Dropout(0.5), nn.Linear(cin, cin), nn.ReLU(),
            nn.Dropout(0.5), nn.Linear(cin, cin), nn.ReLU(), nn.Linear(cin, 10))

    def forward(self, x, y):
        return F.cross_entropy(self.classifier(self.features(x)), y)


def build(name, batch, tiny, dev):
    """The model and its fixed batch (inputs, labels) on `dev`."""
    g = torch.Generator().manual_seed(0)
    if name == "mlp":
        width = 64 if tiny else 4096
        model = Mlp(width, 3)
        x = torch.rand(batch, width, generator=g)
        y = torch.randint(0, 10, (batch,), generator=g)
    elif name == "transformer":
        d, heads, seq, vocab = (64, 4, 16, 128) if tiny else (1024, 16, 1024, 1024)
        model = Transformer(d, heads, seq, vocab)
        x = torch.randint(0, 10, (batch, seq), generator=g)
        y = torch.randint(0, 10, (batch * seq,), generator=g)
    elif name == "vgg16":
        model = Vgg16(scale=16 if tiny else 1)
        x = torch.rand(batch, 3, 32, 32, generator=g)
        y = torch.randint(0, 10, (batch,), generator=g)
    else:
        raise SystemExit(f"torch_models.py: unknown model '{name}'")
    return model.to(dev), x.to(dev), y.to(dev)


def run(name, mode, a, dev):
    torch.manual_seed(0)
    model, x, y = build(name, a.batch, a.tiny, dev)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, betas=(0.9, 0.999), eps=1e-8)
    amp_dtype = {"amp-f16": torch.float16, "compile-amp-f16": torch.float16,
                 "amp-bf16": torch.bfloat16}.get(mode)
    scaler = (torch.amp.GradScaler(dev) if amp_dtype == torch.float16 else None)
    forward = torch.compile(model) if mode.startswith("compile") else model
    cuda = dev == "cuda"

    def step():
        opt.zero_grad(set_to_none=True)
        if amp_dtype is None:
            loss = forward(x, y)
        else:
            with torch.autocast(dev, dtype=amp_dtype):
                loss = forward(x, y)
        if scaler is None:
            loss.backward()
            opt.step()
        else:
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        return loss

    def sync():
        if cuda:
            torch.cuda.synchronize()

    for _ in range(a.warmup):
        step()
    sync()
    if cuda:
        torch.cuda.reset_peak_memory_stats()
    times = []
    for _ in range(a.steps):
        t0 = time.perf_counter()
        loss = step()
        sync()
        times.append((time.perf_counter() - t0) * 1e3)
    median = statistics.median(times)
    result = {
        "impl": "pytorch", "model": name, "mode": mode, "batch": a.batch,
        "device": torch.cuda.get_device_name() if cuda else "cpu",
        "torch": torch.__version__, "cuda_graphs": False,
        "warmup": a.warmup, "steps": a.steps, "step_ms": times,
        "step_ms_median": median, "steps_per_s": 1e3 / median,
        "peak_bytes_allocated": torch.cuda.max_memory_allocated() if cuda else None,
        "peak_bytes_reserved": torch.cuda.max_memory_reserved() if cuda else None,
        "last_loss": loss.item(),
        "params": sum(p.numel() for p in model.parameters()),
    }
    return result


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("model", choices=["mlp", "transformer", "vgg16"])
    p.add_argument("--batch", type=int)
    p.add_argument("--modes", default="fp32,amp-f16,amp-bf16,compile-amp-f16")
    p.add_argument("--steps", type=int, default=50)
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--device", default="cuda")
    p.add_argument("--out")
    p.add_argument("--tiny", action="store_true")
    a = p.parse_args()
    if a.batch is None:
        a.batch = {"mlp": 512, "transformer": 8, "vgg16": 128}[a.model]
    if a.device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("torch_models.py: no CUDA device (--device cpu for a smoke test)")
    for mode in a.modes.split(","):
        if mode not in ("fp32", "amp-f16", "amp-bf16", "compile-amp-f16"):
            raise SystemExit(f"torch_models.py: unknown mode '{mode}'")
        if a.device == "cpu" and mode in ("amp-f16", "compile-amp-f16"):
            continue  # GradScaler and float16 autocast are CUDA's
        try:
            result = run(a.model, mode, a, a.device)
        except torch.cuda.OutOfMemoryError as e:  # the large VGG batches
            result = {"impl": "pytorch", "model": a.model, "mode": mode,
                      "batch": a.batch, "error": f"out of memory: {e}".split("\n")[0]}
            torch.cuda.empty_cache()
        line = json.dumps(result)
        print(json.dumps({k: v for k, v in result.items() if k != "step_ms"}))
        if a.out:
            with open(a.out, "a") as f:
                f.write(line + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
