"""The training state a compiled step holds: in place (the default) against
the old scheme of a second buffer per state tensor (AMP_STATE_IN_PLACE=0),
and PyTorch's own loop, on a wide MLP whose memory is almost all state.

The model (--model mlp): LAYERS x nn.Linear(WIDTH, WIDTH) with ReLU between,
batch 8 (its activations are a few MiB); or (--model cnn) the Fashion-MNIST
CNN of examples/cnn.mlir's shape (two 3x3 convolutions with batch norm and
pooling, two linear layers), batch 64. AdamW; amp at O2 (f16 parameters, f32 masters,
f32 moments: 14 bytes of state per parameter) and O0 (f32: 12 bytes);
PyTorch eager: f32 parameters, gradients and moments (16 bytes). amp trains
the model's own f32 tensors (amp.compile's train_in_place, the default: the
f32 parameters at O0, the masters at O2, are the model's, in `base`);
`-copy` rows pass train_in_place=False (the step's own copy beside the
model's).

Memory (issue 39's definition): `base` is the process's RSS after the model
and optimizer are built; the kernel's RSS high-water mark (VmHWM) is reset
after amp.compile returns (PyTorch: before its first step) and read after
the steps: peak = VmHWM - base. `held` is the RSS between steps, after
malloc_trim(0) hands the freed heap back: what the run keeps. Each
configuration runs in a process of its own.

    python bench/state_memory.py [--model mlp|cnn] [--width 2048] [--layers 6]
        [--steps 3]
"""

import argparse
import ctypes
import json
import os
import subprocess
import sys
import tempfile

import torch
import torch.nn as nn

# The same measurements as the decoder's table (its script is beside this).
from decoder_attention import cpu_name, reset_peak, rss_kib


def build(model_name, width, layers):
    """The model and a batch maker."""
    if model_name == "cnn":
        model = nn.Sequential(
            nn.Conv2d(1, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(32, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(2),
            nn.Flatten(), nn.Linear(64 * 7 * 7, 128), nn.ReLU(), nn.Linear(128, 10))
        return model, lambda g: (torch.randn(64, 1, 28, 28, generator=g),
                                 torch.randint(0, 10, (64,), generator=g))
    body = []
    for _ in range(layers):
        body += [nn.Linear(width, width), nn.ReLU()]
    return nn.Sequential(*body[:-1]), lambda g: (torch.randn(8, width, generator=g),
                                                torch.randint(0, width, (8,), generator=g))


def child(mode, model_name, width, layers, steps):
    torch.manual_seed(0)
    model, batch = build(model_name, width, layers)
    params = sum(p.numel() for p in model.parameters())
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    g = torch.Generator().manual_seed(1)
    data = [batch(g) for _ in range(steps)]
    loss_fn = nn.CrossEntropyLoss()
    libc = ctypes.CDLL("libc.so.6")
    base = rss_kib("VmRSS")
    losses = []
    if mode == "torch":
        reset_peak()
        for x, y in data:
            value = loss_fn(model(x), y)
            value.backward()
            opt.step()
            opt.zero_grad(set_to_none=False)
            losses.append(value.item())
    else:
        import amp
        level, _, apart = mode.partition("-")
        step = amp.compile(model, loss_fn, example_inputs=data[0], optimizer=opt,
                           opt_level=level, dtype=torch.float16,
                           train_in_place=not apart.endswith("-copy"))
        reset_peak()
        for x, y in data:
            losses.append(step(x, y).loss)
    peak = rss_kib("VmHWM")
    libc.malloc_trim(0)
    held = rss_kib("VmRSS")
    return {"params": params, "peak_mib": (peak - base) / 1024,
            "held_mib": (held - base) / 1024, "loss": losses[-1]}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="mlp", choices=["mlp", "cnn"])
    parser.add_argument("--width", type=int, default=2048)
    parser.add_argument("--layers", type=int, default=6)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.model, args.width, args.layers, args.steps)))
        return
    what = ("Fashion-MNIST CNN, batch 64" if args.model == "cnn" else
            f"MLP {args.layers} x Linear({args.width}, {args.width}), batch 8")
    params = sum(p.numel() for p in build(args.model, args.width, args.layers)[0].parameters())
    print(f"{what}, {params} parameters, AdamW; CPU: {cpu_name()}; {args.steps} steps")
    print("| run | state scheme | held MiB | held B/param | peak MiB | peak B/param | last loss |")
    print("|---|---|---|---|---|---|---|")
    runs = [("O2-f16", "1", "in place, the model's tensors"),
            ("O2-f16-copy", "1", "in place, a copy (train_in_place=False)"),
            ("O2-f16-copy", "0", "two buffers, a copy"),
            ("O0-f32", "1", "in place, the model's tensors"),
            ("O0-f32-copy", "1", "in place, a copy (train_in_place=False)"),
            ("O0-f32-copy", "0", "two buffers, a copy"),
            ("torch", "1", "PyTorch eager f32")]
    for mode, in_place, scheme in runs:
        with tempfile.TemporaryDirectory() as cache:
            env = dict(os.environ, AMP_STATE_IN_PLACE=in_place, AMP_CACHE_DIR=cache)
            out = subprocess.run([sys.executable, __file__, "--child", mode,
                                  "--model", args.model, "--width", str(args.width), "--layers", str(args.layers),
                                  "--steps", str(args.steps)],
                                 capture_output=True, text=True, env=env)
        if out.returncode != 0:
            print(f"| {mode} | {scheme} | failed: {out.stderr.strip().splitlines()[-1]} | | | | |")
            continue
        r = json.loads(out.stdout.strip().splitlines()[-1])
        mib = 1024 * 1024
        print(f"| {mode.removesuffix('-copy')} | {scheme} | {r['held_mib']:.0f} | {r['held_mib'] * mib / r['params']:.1f} | "
              f"{r['peak_mib']:.0f} | {r['peak_mib'] * mib / r['params']:.1f} | {r['loss']:.4f} |",
              flush=True)


if __name__ == "__main__":
    main()
