"""The memory plan's predicted peak against the measured one.

For each model, amp-run's benchmark (--bench-steps) reports the counted
heap's peak over the timed steps (lib/Runtime/CPU/Memory.cpp's accounting of
every buffer and runtime scratch, not RSS) and the plan's arena, known
before the first step (`planned_step_bytes`). Each model also runs with
AMP_MEMORY_PLAN=0 (one heap allocation per buffer) beside it, in the same
run: the heap's own peak, which the plan should not exceed by much.

Models: examples/mlp.mlir and examples/cnn.mlir (batch 128), VGG16 with
batch norm at batch 32 (bench/gen_model.py vgg16 --batch 32), torchvision's
ResNet-50 (batch 4 of 64x64, from amp.to_mlir) and the GPT-style decoder of
bench/decoder_attention.py (batch 8, sequence 256, AdamW, from
amp.to_mlir). O1, --dtype bf16 and f16.

    PYTHONPATH=build/python python bench/memory_plan.py [--steps 3]
        [--models mlp,cnn,vgg16,resnet50,decoder] [--dtypes bf16,f16]
        [--seqs 256,512,1024]

With --seqs, a second table: the decoder's plan (Step.memory_plan of
amp.compile at O1-bf16, AdamW; nothing is run) at each sequence length,
with fused attention (the default) and decomposed (attention="decomposed"):
the arena and the bytes live at its peak by the kind of op that wrote them.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)


def write_models(names, directory, amp_run):
    """name -> (module path, extra amp-run flags)."""
    import torch
    import torch.nn as nn
    import amp
    models = {}
    for name in names:
        path = os.path.join(directory, name + ".mlir")
        flags = []
        if name in ("mlp", "cnn"):
            path = os.path.join(ROOT, "examples", name + ".mlir")
        elif name == "vgg16":
            with open(path, "w") as f:
                subprocess.run([sys.executable, os.path.join(HERE, "gen_model.py"), "vgg16",
                                "--batch", "32"], stdout=f, check=True)
        elif name == "resnet50":
            import torchvision
            torch.manual_seed(0)
            model = torchvision.models.resnet50(num_classes=10)
            x, y = torch.randn(4, 3, 64, 64), torch.randint(0, 10, (4,))
            with open(path, "w") as f:
                f.write(amp.to_mlir(model, nn.CrossEntropyLoss(), (x, y)))
        elif name == "decoder":
            import decoder_attention as d
            torch.manual_seed(0)
            model = d.Decoder(256)
            x = torch.randint(0, d.VOCAB, (8, 256))
            y = torch.randint(0, d.VOCAB, (8 * 256,))
            with open(path, "w") as f:
                f.write(amp.to_mlir(model, nn.CrossEntropyLoss(), (x, y)))
            flags = ["--optimizer=adamw"]
        else:
            raise SystemExit(f"unknown model {name}")
        models[name] = (path, flags)
    return models


def measure(amp_run, path, flags, dtype, steps, planned):
    """amp-run's metrics for one configuration."""
    env = dict(os.environ, AMP_MEMORY_PLAN="1" if planned else "0")
    with tempfile.NamedTemporaryFile(suffix=".json") as metrics:
        subprocess.run([amp_run, path, f"--dtype={dtype}", f"--bench-steps={steps}",
                        "--bench-warmup=1", f"--metrics={metrics.name}"] + flags,
                       env=env, check=True, stdout=subprocess.DEVNULL)
        with open(metrics.name) as f:
            return json.load(f)


def decoder_plans(seqs):
    """The decoder's plan at each sequence length, fused and decomposed."""
    import torch
    import torch.nn as nn
    import amp
    import decoder_attention as d
    mib = 1 << 20
    print("\n| seq | attention | arena MiB | at the peak MiB: attention | gemm | loops "
          "| workspace | other |")
    print("|---:|---|---:|---:|---:|---:|---:|---:|")
    for seq in seqs:
        for mode in ("fused", "decomposed"):
            torch.manual_seed(0)
            model = d.Decoder(seq)
            x = torch.randint(0, d.VOCAB, (8, seq))
            y = torch.randint(0, d.VOCAB, (8 * seq,))
            step = amp.compile(model, nn.CrossEntropyLoss(), example_inputs=(x, y),
                               optimizer=torch.optim.AdamW(model.parameters(), lr=1e-4),
                               opt_level="O1", dtype=torch.bfloat16, attention=mode)
            plan = step.memory_plan
            peak = dict(plan.at_peak)
            named = [peak.pop(k, 0) for k in ("attention", "gemm", "loops", "workspace")]
            print(f"| {seq} | {mode} | {plan.arena_bytes / mib:.1f} | "
                  + " | ".join(f"{b / mib:.1f}" for b in named)
                  + f" | {sum(peak.values()) / mib:.1f} |", flush=True)
            del step


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--models", default="mlp,cnn,vgg16,resnet50,decoder")
    parser.add_argument("--dtypes", default="bf16,f16")
    parser.add_argument("--seqs", default="",
                        help="also the decoder's plan at these sequence lengths")
    parser.add_argument("--amp-run", default=os.path.join(ROOT, "build", "bin", "amp-run"))
    args = parser.parse_args()
    from decoder_attention import cpu_name
    mib = 1 << 20
    print(f"CPU: {cpu_name()}; amp-run --bench-steps={args.steps} --bench-warmup=1, O1\n")
    print("| model | dtype | planned MiB | measured MiB | measured / planned "
          "| heap alone MiB | planned / heap | step ms planned | step ms heap |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    worst = 0.0
    with tempfile.TemporaryDirectory(prefix="amp-plan-") as directory:
        models = write_models(args.models.split(","), directory, args.amp_run)
        for name, (path, flags) in models.items():
            for dtype in args.dtypes.split(","):
                plan = measure(args.amp_run, path, flags, dtype, args.steps, True)
                heap = measure(args.amp_run, path, flags, dtype, args.steps, False)
                planned, measured = plan["planned_step_bytes"], plan["peak_step_bytes"]
                worst = max(worst, abs(measured - planned) / planned)
                print(f"| {name} | {dtype} | {planned / mib:.1f} | {measured / mib:.1f} "
                      f"| {measured / planned:.3f} | {heap['peak_step_bytes'] / mib:.1f} "
                      f"| {planned / heap['peak_step_bytes']:.2f} "
                      f"| {plan['step_ms_median']:.1f} | {heap['step_ms_median']:.1f} |",
                      flush=True)
    print(f"\nlargest |measured - planned| / planned: {100 * worst:.1f}%")
    if args.seqs:
        decoder_plans([int(s) for s in args.seqs.split(",")])


if __name__ == "__main__":
    main()
