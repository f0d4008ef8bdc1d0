"""The compile cache's hit against a cold compile, through amp.compile:
for each model, one cold amp.compile (empty cache), then the time of
torch.export's capture alone (the cache key needs it) and of a warm
amp.compile (the same model and options again: a hit), medians of N runs
each. The hit's cost over the capture is what the cache leaves a user to
wait.

  python bench/cache_hit.py [--models resnet18,densenet121] [--repeats 3]

Results and the command: docs/benchmarks.md, "The compile cache".
"""

import argparse
import os
import statistics
import tempfile
import time

import torch
import torch.nn as nn
import torchvision

import amp
from amp._importer import import_model


def model_of(name: str) -> nn.Module:
    torch.manual_seed(0)
    return getattr(torchvision.models, name)(num_classes=10)


def timed(fn):
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--models", default="resnet18,densenet121")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    x, y = torch.randn(4, 3, 64, 64), torch.randint(0, 10, (4,))
    # torch.export's first capture in a process pays its own warm-up.
    import_model(nn.Sequential(nn.Flatten(), nn.Linear(12288, 10)), nn.CrossEntropyLoss(),
                 (x, y))
    print(f"{'model':<14} {'capture s':>10} {'cold s':>8} {'hit s':>8} {'hit - capture s':>16}")
    for name in args.models.split(","):
        with tempfile.TemporaryDirectory() as directory:
            os.environ["AMP_CACHE_DIR"] = directory
            model = model_of(name)
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            # one cold compile (minutes on big models), then the hits
            cold, step = timed(lambda: amp.compile(model, nn.CrossEntropyLoss(), (x, y),
                                                   optimizer=opt, opt_level="O0"))
            assert not step.cache_hit
            captures, hits = [], []
            for _ in range(args.repeats):
                t, _ = timed(lambda: import_model(model, nn.CrossEntropyLoss(), (x, y)))
                captures.append(t)
                t, step = timed(lambda: amp.compile(model, nn.CrossEntropyLoss(), (x, y),
                                                    optimizer=opt, opt_level="O0"))
                assert step.cache_hit
                hits.append(t)
        c, h = statistics.median(captures), statistics.median(hits)
        print(f"{name:<14} {c:>10.2f} {cold:>8.2f} {h:>8.2f} {h - c:>16.2f}", flush=True)


if __name__ == "__main__":
    main()
