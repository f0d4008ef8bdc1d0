"""Small models the Python tests share (PyTorch AMP tutorial style)."""

import torch
import torch.nn as nn


class Net(nn.Module):
    """conv (no bias) + batch norm + ReLU + max pooling + linear; or, with
    ``bias``, a biased conv and no batch norm (before batch norm a conv
    bias's gradient is exactly zero)."""

    def __init__(self, channels: int = 8, bias: bool = False):
        super().__init__()
        self.conv = nn.Conv2d(1, channels, 3, padding=1, bias=bias)
        self.bn = nn.Identity() if bias else nn.BatchNorm2d(channels)
        self.fc = nn.Linear(channels * 7 * 7, 10)

    def forward(self, x):
        b, c, h, w = x.size()  # unpacked sizes are constants at import
        x = torch.relu(self.bn(self.conv(x)))
        x = nn.functional.max_pool2d(x, 4)
        return self.fc(x.view(b, -1))


class TransformerClassifier(nn.Module):
    """Token embedding + learned positions, one nn.TransformerEncoderLayer,
    mean over the sequence, a linear head (dropout 0 for parity)."""

    def __init__(self, vocab: int = 64, d: int = 32, heads: int = 4, seq: int = 16,
                 norm_first: bool = False, activation: str = "relu"):
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.pos = nn.Parameter(torch.randn(1, seq, d) * 0.02)
        self.encoder = nn.TransformerEncoderLayer(
            d, heads, dim_feedforward=2 * d, dropout=0.0, activation=activation,
            batch_first=True, norm_first=norm_first)
        self.head = nn.Linear(d, 10)

    def forward(self, tokens):
        h = self.encoder(self.embed(tokens) + self.pos)
        return self.head(h.mean(dim=1))


def token_batches(count: int, batch: int = 8, seq: int = 16, vocab: int = 64, seed: int = 1):
    g = torch.Generator().manual_seed(seed)
    return [(torch.randint(0, vocab, (batch, seq), generator=g),
             torch.randint(0, 10, (batch,), generator=g)) for _ in range(count)]


def reference_losses(model, optimizer, data, dtype=None, loss=nn.functional.cross_entropy,
                     accumulate: int = 1, clip=None, scaler_options=None):
    """PyTorch's own AMP training loop, as the tutorials write it: per batch
    (inputs..., target), (loss, scale after it). ``dtype``:
    torch.autocast("cpu", dtype), with a GradScaler (of ``scaler_options``)
    for f16; ``accumulate``: ``loss / N`` and one optimizer step per N
    batches; ``clip``: ``scaler.unscale_`` then ``clip_grad_norm_``."""
    scaler = torch.amp.GradScaler("cpu", enabled=dtype == torch.float16,
                                  **(scaler_options or {}))
    out = []
    optimizer.zero_grad()
    for i, (*inputs, y) in enumerate(data):
        with torch.autocast("cpu", dtype=dtype or torch.bfloat16, enabled=dtype is not None):
            value = loss(model(*inputs), y)
        scaler.scale(value / accumulate).backward()
        if (i + 1) % accumulate == 0:
            if clip is not None:
                scaler.unscale_(optimizer)
                nn.utils.clip_grad_norm_(model.parameters(), clip)
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad()
        out.append((value.item(), scaler.get_scale() if scaler.is_enabled() else 1.0))
    return out


def mlp() -> nn.Module:
    return nn.Sequential(nn.Flatten(), nn.Linear(784, 64), nn.ReLU(), nn.Linear(64, 10))


def batches(count: int, batch: int = 16, seed: int = 1):
    g = torch.Generator().manual_seed(seed)
    return [(torch.randn(batch, 1, 28, 28, generator=g),
             torch.randint(0, 10, (batch,), generator=g)) for _ in range(count)]
