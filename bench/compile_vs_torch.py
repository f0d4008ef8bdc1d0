"""Time to the first completed training step, amp against torch.compile,
with cold caches for both.

For each model and each repeat, two fresh Python processes (nothing kept
in memory between runs), each with empty cache directories of its own
(``AMP_CACHE_DIR``; ``TORCHINDUCTOR_CACHE_DIR`` and ``TRITON_CACHE_DIR``):

  amp    ``amp.compile(model, CrossEntropyLoss(), (x, y), optimizer=SGD,
         opt_level="O0")`` and the first ``step(x, y)``;
  torch  ``torch.compile(model)`` and ``torch.compile`` of the optimizer
         step (PyTorch's compiled-optimizer recipe), default Inductor
         settings, until the first forward, backward and ``opt.step()``
         return.

The clock starts once the model and the batch exist (imports and model
construction are not counted for either) and stops when the first step's
loss is known. Models: torchvision ResNet-50, DenseNet-121 and
mobilenet_v2 (10 classes, batch 4 of 64x64) and the byte-level GPT-2 of
examples/python/gpt2_bytes.py (HuggingFace GPT2LMHeadModel: 4 layers,
4 heads, hidden 128; batch 2, sequence 64). FP32 (O0) SGD for both.

  PYTHONPATH=build/python $(scripts/setup.sh --print-python) \\
      bench/compile_vs_torch.py [--models resnet50,densenet121,mobilenet_v2,gpt2]
                                [--repeats 3] [--json out.json]

Prints the medians and the ratio amp / torch.compile (below 1: amp is
first). Results and the command: docs/benchmarks.md, "Time to the first
step".
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

MODELS = ("resnet50", "densenet121", "mobilenet_v2", "gpt2")
GPT2_VOCAB, GPT2_SEQ, GPT2_BATCH = 256, 64, 2


def build(name: str):
    """The model and one batch (x, y) for ``name``."""
    import torch
    import torch.nn as nn
    torch.manual_seed(0)
    if name == "gpt2":
        from transformers import GPT2Config, GPT2LMHeadModel

        class Logits(nn.Module):
            """The logits of every position, flattened for cross entropy."""

            def __init__(self, model: nn.Module):
                super().__init__()
                self.model = model

            def forward(self, ids):
                return self.model(ids, use_cache=False).logits.reshape(-1, GPT2_VOCAB)

        model = Logits(GPT2LMHeadModel(GPT2Config(
            vocab_size=GPT2_VOCAB, n_positions=GPT2_SEQ, n_embd=128, n_layer=4, n_head=4,
            resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, bos_token_id=0, eos_token_id=0)))
        x = torch.randint(0, GPT2_VOCAB, (GPT2_BATCH, GPT2_SEQ))
        y = torch.randint(0, GPT2_VOCAB, (GPT2_BATCH * GPT2_SEQ,))
        return model, x, y
    import torchvision
    model = getattr(torchvision.models, name)(num_classes=10)
    return model, torch.randn(4, 3, 64, 64), torch.randint(0, 10, (4,))


def first_step_amp(name: str) -> dict:
    """Seconds from amp.compile's call to the first step's loss."""
    import torch
    import torch.nn as nn
    import amp
    model, x, y = build(name)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    start = time.perf_counter()
    step = amp.compile(model, nn.CrossEntropyLoss(), (x, y), optimizer=opt, opt_level="O0")
    compiled = time.perf_counter()
    loss = step(x, y).loss
    done = time.perf_counter()
    assert not step.cache_hit, "the cache was not cold"
    return {"seconds": done - start, "compile": compiled - start,
            "first_step": done - compiled, "loss": loss}


def first_step_torch(name: str) -> dict:
    """Seconds from torch.compile's call to the first opt.step()'s return."""
    import torch
    import torch.nn as nn
    model, x, y = build(name)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    start = time.perf_counter()
    compiled = torch.compile(model)

    @torch.compile(fullgraph=False)
    def opt_step():
        opt.step()

    opt.zero_grad()
    loss = nn.functional.cross_entropy(compiled(x), y)
    loss.backward()
    opt_step()
    value = loss.item()
    done = time.perf_counter()
    return {"seconds": done - start, "loss": value}


def measure(system: str, name: str) -> dict:
    """One cold run of ``system`` on ``name`` in a fresh process."""
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ,
                   AMP_CACHE_DIR=os.path.join(cache, "amp"),
                   TORCHINDUCTOR_CACHE_DIR=os.path.join(cache, "inductor"),
                   TRITON_CACHE_DIR=os.path.join(cache, "triton"))
        env.pop("AMP_CACHE", None)
        run = subprocess.run([sys.executable, os.path.abspath(__file__), "--one", system, name],
                             env=env, capture_output=True, text=True)
        if run.returncode != 0:
            sys.exit(f"{system} {name} failed:\n{run.stderr[-4000:]}")
        return json.loads(run.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", help="write every run's figures here")
    parser.add_argument("--one", nargs=2, metavar=("SYSTEM", "MODEL"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        system, name = args.one
        result = (first_step_amp if system == "amp" else first_step_torch)(name)
        print(json.dumps(result))
        return
    models = args.models.split(",")
    for name in models:
        if name not in MODELS:
            sys.exit(f"unknown model '{name}' (one of {', '.join(MODELS)})")
    results = {}
    print(f"{'model':<13} {'amp s':>8} {'(compile':>9} {'step)':>7} {'torch.compile s':>16} "
          f"{'amp / torch':>12}", flush=True)
    for name in models:
        runs = {"amp": [], "torch": []}
        for _ in range(args.repeats):  # interleaved: drift hits both alike
            for system in ("amp", "torch"):
                runs[system].append(measure(system, name))
        med = {s: statistics.median(r["seconds"] for r in runs[s]) for s in runs}
        compile_s = statistics.median(r["compile"] for r in runs["amp"])
        step_s = statistics.median(r["first_step"] for r in runs["amp"])
        results[name] = {"runs": runs, "median": med, "ratio": med["amp"] / med["torch"]}
        print(f"{name:<13} {med['amp']:>8.1f} {compile_s:>9.1f} {step_s:>7.2f} "
              f"{med['torch']:>16.1f} {med['amp'] / med['torch']:>12.2f}", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
