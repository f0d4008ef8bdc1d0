"""Train a PyTorch-defined model on Fashion-MNIST with amp.compile.

    PYTHONPATH=build/python $(scripts/setup.sh --print-python) \
        examples/python/fashion_mnist.py [--model net|resnet18] [--epochs 1] \
        [--opt-level O1] [--dtype f16] [--augment] [--schedule constant|cosine]

The training loop is PyTorch's AMP loop with its four lines changed: the
step is compiled once and called per batch; afterwards the trained weights
are copied back into the model and PyTorch itself evaluates it, next to
amp's own evaluation (step.predict) of the same weights.

--model resnet18 is torchvision's ResNet-18 with its first convolution taking
one channel (docs/benchmarks.md has its run: 12 epochs, --augment, cosine).
"""

import argparse
import gzip
import os
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

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


def resnet18() -> nn.Module:
    """torchvision's ResNet-18 for 10 classes, its stem taking 1 channel."""
    import torchvision
    model = torchvision.models.resnet18(num_classes=10)
    model.conv1 = nn.Conv2d(1, 64, kernel_size=7, stride=2, padding=3, bias=False)
    return model


def augment(x: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """Random horizontal flips and shifts of up to 2 pixels (zero-padded crops)."""
    flip = torch.rand(len(x), generator=generator) < 0.5
    x = torch.where(flip[:, None, None, None], x.flip(3), x)
    padded = F.pad(x, (2, 2, 2, 2), value=float(x.min()))
    dy, dx = torch.randint(0, 5, (2,), generator=generator).tolist()
    return padded[:, :, dy:dy + 28, dx:dx + 28].contiguous()


def accuracy(predict, x: torch.Tensor, y: torch.Tensor, batch: int) -> float:
    """Percentage of ``x`` that ``predict`` (a batch of ``batch`` rows -> logits)
    classifies as ``y``; the last batch is padded with rows that are not counted."""
    correct = 0
    for k in range(0, len(x), batch):
        chunk = x[k:k + batch]
        rows = len(chunk)
        if rows < batch:
            chunk = torch.cat([chunk, x[:batch - rows]])
        correct += (predict(chunk)[:rows].argmax(1) == y[k:k + rows]).sum().item()
    return 100.0 * correct / len(x)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="net", choices=["net", "resnet18"])
    parser.add_argument("--epochs", type=float, default=1.0)
    parser.add_argument("--opt-level", default="O1")
    parser.add_argument("--dtype", default="f16", choices=["f16", "bf16"])
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--schedule", default="constant", choices=["constant", "cosine"],
                        help="cosine: one epoch of linear warm-up, then cosine decay to 0 "
                             "(torch.optim.lr_scheduler, read by the step at every call)")
    parser.add_argument("--augment", action="store_true",
                        help="random flips and 2-pixel shifts of the training images")
    args = parser.parse_args()
    torch.manual_seed(0)
    train_x, train_y = load("train")
    test_x, test_y = load("t10k")
    model = Net() if args.model == "net" else resnet18()
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9, weight_decay=5e-4)
    b = args.batch
    per_epoch = len(train_x) // b
    steps = int(args.epochs * per_epoch)
    scheduler = None
    if args.schedule == "cosine":
        warmup = min(per_epoch, steps // 2)
        scheduler = torch.optim.lr_scheduler.SequentialLR(opt, [
            torch.optim.lr_scheduler.LinearLR(opt, 0.01, 1.0, total_iters=warmup),
            torch.optim.lr_scheduler.CosineAnnealingLR(opt, steps - warmup)], [warmup])
    start = time.time()
    step = amp.compile(model, nn.CrossEntropyLoss(), example_inputs=(train_x[:b], train_y[:b]),
                       optimizer=opt, opt_level=args.opt_level,
                       dtype=torch.float16 if args.dtype == "f16" else torch.bfloat16)
    print(f"compiled in {time.time() - start:.1f} s")
    generator = torch.Generator().manual_seed(0)
    start = time.time()
    for i in range(steps):
        if i % per_epoch == 0:
            order = torch.randperm(len(train_x), generator=generator)
        j = order[(i % per_epoch) * b:][:b]
        x = augment(train_x[j], generator) if args.augment else train_x[j]
        r = step(x, train_y[j])
        if scheduler is not None:
            scheduler.step()
        if i % 100 == 0 or i == steps - 1:
            print(f"step {i:5d}  loss {r.loss:.4f}  scale {r.scale:g}  skipped {r.skipped}",
                  flush=True)
        if (i + 1) % per_epoch == 0 and args.epochs > 1:
            print(f"epoch {(i + 1) // per_epoch}: {time.time() - start:.0f} s, test accuracy "
                  f"(amp) {accuracy(step.predict, test_x, test_y, b):.2f}%", flush=True)
    print(f"{steps} steps in {time.time() - start:.1f} s "
          f"({1000 * (time.time() - start) / max(steps, 1):.0f} ms/step)")
    amp_accuracy = accuracy(step.predict, test_x, test_y, b)
    step.copy_to(model)  # the CPU step trains model in place; needed for O3 and CUDA
    model.eval()
    with torch.no_grad():
        torch_accuracy = accuracy(model, test_x, test_y, 1000)
    print(f"test accuracy, amp's evaluation (step.predict, {args.opt_level} {args.dtype}): "
          f"{amp_accuracy:.2f}%")
    print(f"test accuracy (PyTorch's eval of the trained model): {torch_accuracy:.2f}%")


if __name__ == "__main__":
    main()
