"""Vision models of today's mixed-precision training through amp.compile at
O0, against PyTorch's loop: timm's ViT and torchvision's MobileNetV3 here
(one per family in CI), ConvNeXt and EfficientNet in slow/ (the same
check). Built from configs (no download), 10 classes, 5 steps.

Stochastic depth (torchvision's StochasticDepth, timm's DropPath) is off for
parity (amp's masks are its own random numbers); with it on, the rate and
scaling of amp's masks are measured (test_stochastic_depth_masks).
"""

import copy

import pytest
import torch
import torch.nn as nn

import amp
from test_transformers import OPTIMIZERS, check_o0


def image_batches(size: int, count: int = 5, batch: int = 4):
    g = torch.Generator().manual_seed(1)
    return [(torch.randn(batch, 3, size, size, generator=g),
             torch.randint(0, 10, (batch,), generator=g)) for _ in range(count)]


def vit_tiny(**options) -> nn.Module:
    import timm  # pinned by scripts/setup.sh
    return timm.create_model("vit_tiny_patch16_224", img_size=32, patch_size=4,
                             num_classes=10, **options)


def test_timm_vit_tiny_o0_matches_pytorch():
    """timm's vit_tiny_patch16_224 at img_size 32, patch 4 (64 tokens + the
    class token, 12 blocks): unbind of the fused qkv, the class token and
    position table parameters, SDPA; SGD-momentum (AdamW meets the key
    bias's zero gradient: test_transformers' GPT-2)."""
    torch.manual_seed(0)
    check_o0(vit_tiny(), OPTIMIZERS["sgd-momentum"], image_batches(32))


def test_torchvision_mobilenet_v3_small_o0_matches_pytorch():
    """Hardswish, squeeze-excitation (adaptive pooling, hardsigmoid), the
    classifier's in-place dropout (p=0 here), 64x64 inputs, batch 8.

    Against the f64 envelope: 22 of its tensors are zero in exact arithmetic
    (the batch norms after each block's projection, where the next block's
    1x1 convolution and batch norm remove a per-channel constant: their
    biases' gradients and their running means' updates), so both f32 runs
    hold 1e-12-1e-9 of rounding noise there, which no relative tolerance
    against PyTorch's f32 run can compare (measured: every other tensor of
    amp's within 1e-4 of the f64 run)."""
    import torchvision
    torch.manual_seed(0)
    model = torchvision.models.mobilenet_v3_small(num_classes=10, dropout=0.0)
    check_o0(model, lambda p: torch.optim.SGD(p, lr=1e-3, momentum=0.9, weight_decay=5e-4),
             image_batches(64, batch=8), envelope=True)


N, RATE = 256, 0.25


class DropPathNet(nn.Module):
    """A residual block whose branch stochastic depth drops per example. The
    inputs are one-hot rows, so column i of the branch's weight serves
    example i alone: it gets no gradient exactly when example i's branch is
    dropped, which recovers amp's mask from the step's update."""

    def __init__(self, kind: str):
        super().__init__()
        if kind == "timm":
            from timm.layers import DropPath
            self.drop = DropPath(RATE)
        else:
            from torchvision.ops import StochasticDepth
            self.drop = StochasticDepth(RATE, "row")
        self.branch = nn.Linear(N, 16, bias=False)
        self.skip = nn.Linear(N, 16)
        self.head = nn.Linear(16, 10)

    def forward(self, x, mask=None):
        branch = self.branch(x)
        branch = self.drop(branch) if mask is None else branch * mask[:, None] / (1 - RATE)
        return self.head(self.skip(x) + branch)


@pytest.mark.parametrize("kind", ["timm", "torchvision"])
def test_stochastic_depth_matches_pytorch_given_the_mask(kind):
    """Stochastic depth at rate 0.25 (timm's DropPath: bernoulli_ of
    new_empty, div_ by the keep probability; torchvision's
    StochasticDepth(mode="row"): empty + bernoulli_): amp's masks are its
    own, so, as test_dropout.py checks dropout, each step's mask is read off
    its update and PyTorch's loop given the same mask must give the same
    loss and parameters (1e-5); the dropped fraction is 0.25 within 4.5
    standard deviations (binomial, 256 examples per call); a new mask every
    call; predict keeps every branch (eval mode)."""
    torch.manual_seed(0)
    model = DropPathNet(kind)
    ref = copy.deepcopy(model)
    x = torch.eye(N)
    g = torch.Generator().manual_seed(2)
    labels = [torch.randint(0, 10, (N,), generator=g) for _ in range(3)]
    step = amp.compile(model, nn.CrossEntropyLoss(), example_inputs=(x, labels[0]),
                       optimizer=torch.optim.SGD(model.parameters(), lr=0.1), opt_level="O0")
    assert "train.dropout" in step.mlir
    ref_opt = torch.optim.SGD(ref.parameters(), lr=0.1)
    masks = []
    for y in labels:
        before = step.state_dict()["branch.weight"].clone()
        got = step(x, y)
        kept = (step.state_dict()["branch.weight"] != before).any(dim=0).float()
        masks.append(kept)
        assert abs((1 - kept.mean().item()) - RATE) < 4.5 * (RATE * (1 - RATE) / N) ** 0.5
        ref_opt.zero_grad()
        loss = nn.functional.cross_entropy(ref(x, kept), y)
        loss.backward()
        ref_opt.step()
        assert abs(got.loss - loss.item()) <= 1e-5 * loss.item()
    assert not torch.equal(masks[0], masks[1]) and not torch.equal(masks[1], masks[2])
    theirs = ref.state_dict()
    for name, value in step.state_dict().items():
        if not name.startswith("amp."):
            assert torch.allclose(value, theirs[name], rtol=1e-5, atol=1e-6), name
    ref.eval()
    with torch.no_grad():
        assert torch.allclose(step.predict(x), ref(x), rtol=1e-5, atol=1e-6)


class ShiftedWindows(nn.Module):
    """What Swin computes beside its attention: a strided slice of both
    parities (patch merging), padding to a multiple (and a crop), a roll,
    and an attention mask built from shapes by filling slices of a zero
    tensor (folded at import: in place, but no step op reads it before its
    last write)."""

    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)
        self.head = nn.Linear(8, 10)

    def forward(self, x):  # [N, 6, 6, 8]
        x = self.proj(x)
        merged = torch.cat([x[:, 0::2, 0::2], x[:, 1::2, 1::2], x[:, 0::2, 1::2]], dim=-1)
        thirds = x[:, 1::3, ::3]  # rows 1 and 4, columns 0 and 3
        padded = nn.functional.pad(merged, (0, 0, 1, 2, 0, 1))  # [N, 4, 6, 24]
        cropped = nn.functional.pad(padded, (0, 0, -1, 0))  # [N, 4, 5, 24]
        rolled = torch.roll(cropped, shifts=(-1, 2), dims=(1, 2))
        mask = x.new_zeros((4, 5))
        for i, rows in enumerate((slice(0, 2), slice(2, 4))):
            mask[rows, :] = i
        scores = rolled.mean(-1) + mask.masked_fill(mask != 0, -3.0)
        h = (rolled * torch.softmax(scores, dim=-1)[..., None]).sum(dim=(1, 2))
        return self.head(h[:, :8] + h[:, 8:16] + h[:, 16:] + thirds.mean(dim=(1, 2)))


def test_shifted_window_ops_o0_match_pytorch():
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(1)
    data = [(torch.randn(4, 6, 6, 8, generator=g), torch.randint(0, 10, (4,), generator=g))
            for _ in range(5)]
    step = check_o0(ShiftedWindows(), OPTIMIZERS["sgd-momentum"], data)
    assert "train.concat" in step.mlir
