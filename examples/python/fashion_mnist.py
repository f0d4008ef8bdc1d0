"""Train a PyTorch-defined CNN on Fashion-MNIST with amp.compile.

    PYTHONPATH=build/python $(scripts/setup.sh --print-python) \
        examples/python/fashion_mnist.py [--epochs 1] [--opt-level O1] [--dtype f16]

The training loop is PyTorch's AMP loop with its four lines changed: the
step is compiled once and called per batch; afterwards the trained weights
are copied back into the model and PyTorch itself evaluates it.
"""

import argparse
import gzip
import os
import time

import numpy as np
import torch
import torch.nn as nn

import amp

DATA = "/usr/share/datasets/fashion-mnist"


def load(split: str):
    with gzip.open(os.path.join(DATA, f"{split}-images-idx3-ubyte.gz")) as f:
        images = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 1, 28, 28)
    with gzip.open(os.path.join(DATA, f"{split}-labels-idx1-ubyte.gz")) as f:
        labels = np.frombuffer(f.read(), np.uint8, offset=8)
    x = torch.from_numpy(images.astype(np.float32) / 255.0)
    return (x - 0.2860) / 0.3530, torch.from_numpy(labels.astype(np.int64))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(32)
        self.conv2 = nn.Conv2d(32, 64, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(64)
        self.fc1 = nn.Linear(64 * 7 * 7, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
        x = nn.functional.max_pool2d(torch.relu(self.bn1(self.conv1(x))), 2)
        x = nn.functional.max_pool2d(torch.relu(self.bn2(self.conv2(x))), 2)
        return self.fc2(torch.relu(self.fc1(torch.flatten(x, 1))))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=float, default=1.0)
    parser.add_argument("--opt-level", default="O1")
    parser.add_argument("--dtype", default="f16", choices=["f16", "bf16"])
    parser.add_argument("--batch", type=int, default=128)
    args = parser.parse_args()
    torch.manual_seed(0)
    train_x, train_y = load("train")
    test_x, test_y = load("t10k")
    model = Net()
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=5e-4)
    b = args.batch
    start = time.time()
    step = amp.compile(model, nn.CrossEntropyLoss(), example_inputs=(train_x[:b], train_y[:b]),
                       optimizer=opt, opt_level=args.opt_level,
                       dtype=torch.float16 if args.dtype == "f16" else torch.bfloat16)
    print(f"compiled in {time.time() - start:.1f} s")
    steps = int(args.epochs * (len(train_x) // b))
    start = time.time()
    for i in range(steps):
        if i % (len(train_x) // b) == 0:
            order = torch.randperm(len(train_x))
        j = order[(i % (len(train_x) // b)) * b:][:b]
        r = step(train_x[j], train_y[j])
        if i % 100 == 0 or i == steps - 1:
            print(f"step {i:5d}  loss {r.loss:.4f}  scale {r.scale:g}  skipped {r.skipped}")
    print(f"{steps} steps in {time.time() - start:.1f} s")
    step.copy_to(model)
    model.eval()
    with torch.no_grad():
        correct = sum((model(test_x[k:k + 1000]).argmax(1) == test_y[k:k + 1000]).sum().item()
                      for k in range(0, len(test_x), 1000))
    print(f"test accuracy (PyTorch's eval of the trained model): {100.0 * correct / len(test_x):.2f}%")


if __name__ == "__main__":
    main()
