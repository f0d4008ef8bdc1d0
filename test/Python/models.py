"""Small models the Python tests share (PyTorch AMP tutorial style)."""

import torch
import torch.nn as nn


class Net(nn.Module):
    """conv (no bias) + batch norm + ReLU + max pooling + linear."""

    def __init__(self, channels: int = 8):
        super().__init__()
        self.conv = nn.Conv2d(1, channels, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(channels)
        self.fc = nn.Linear(channels * 7 * 7, 10)

    def forward(self, x):
        b, c, h, w = x.size()  # unpacked sizes are constants at import
        x = torch.relu(self.bn(self.conv(x)))
        x = nn.functional.max_pool2d(x, 4)
        return self.fc(x.view(b, -1))


def mlp() -> nn.Module:
    return nn.Sequential(nn.Flatten(), nn.Linear(784, 64), nn.ReLU(), nn.Linear(64, 10))


def batches(count: int, batch: int = 16, seed: int = 1):
    g = torch.Generator().manual_seed(seed)
    return [(torch.randn(batch, 1, 28, 28, generator=g),
             torch.randint(0, 10, (batch,), generator=g)) for _ in range(count)]
