"""F.scaled_dot_product_attention through amp.compile: train.attention and
the CPU runtime's flash-style kernels (lib/Runtime/CPU/Attention.cpp)
against PyTorch's own loop.

O0, 4 SGD-momentum steps from the same weights on the same batches: every
loss within 1e-4 relative of PyTorch's f32 run, then every parameter within
1e-4 relative of its largest magnitude (test_parity.py's bar), for each
mask PyTorch's SDPA takes: causal (square and, with cross-attention, not),
a boolean padding mask, a boolean mask hiding every key of some queries
(zero rows, no NaN: PyTorch's convention), an additive float mask, and
grouped-query heads (enable_gqa). At O1-bf16 the fused kernels follow the
decomposed form (batch_matmul, softmax, batch_matmul: what PyTorch's math
backend does) to bf16's resolution.
"""

import copy
import math

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import amp
from models import reference_losses
from test_parity import assert_close_state

B, S, S2, E, HEADS, CLASSES = 4, 24, 17, 32, 4, 5


class Attention(nn.Module):
    """One attention layer (q/k/v projections, SDPA, output projection),
    mean-pooled, then a classifier; ``variant`` says which mask."""

    def __init__(self, variant: str):
        super().__init__()
        self.variant = variant
        kv_heads = HEADS // 2 if variant == "gqa" else HEADS
        self.head = E // HEADS
        self.q = nn.Linear(E, E)
        self.kv = nn.Linear(E, 2 * kv_heads * self.head)
        self.out = nn.Linear(E, E)
        self.cls = nn.Linear(E, CLASSES)

    def split(self, x: torch.Tensor) -> torch.Tensor:
        return x.reshape(x.shape[0], x.shape[1], -1, self.head).transpose(1, 2)

    def forward(self, x: torch.Tensor, extra: torch.Tensor) -> torch.Tensor:
        source = extra if self.variant == "cross-causal" else x
        q = self.split(self.q(x))
        k, v = self.split(self.kv(source)).chunk(2, dim=1)
        kwargs = {}
        if self.variant in ("causal", "cross-causal", "gqa"):
            kwargs["is_causal"] = True
        if self.variant == "gqa":
            kwargs["enable_gqa"] = True
        if self.variant in ("padding", "hidden-rows"):
            kwargs["attn_mask"] = extra  # boolean: True attends
        if self.variant == "additive":
            kwargs["attn_mask"] = extra  # a float bias per (query, key)
        o = F.scaled_dot_product_attention(q, k, v, **kwargs)
        o = self.out(o.transpose(1, 2).reshape(x.shape[0], x.shape[1], E))
        return self.cls(o.mean(dim=1))


def extra_input(variant: str, g: torch.Generator) -> torch.Tensor:
    """The model's second input for ``variant``."""
    if variant == "cross-causal":
        return torch.randn(B, S2, E, generator=g)
    if variant == "padding":
        lengths = torch.tensor([S, S - 3, 9, 1])
        return (torch.arange(S)[None, :] < lengths[:, None])[:, None, None, :]
    if variant == "hidden-rows":
        keep = torch.rand(B, 1, S, S, generator=g) < 0.7
        keep[:, :, 2] = False  # every key of query 2 hidden
        keep[1, :, 5:9] = False
        return keep
    if variant == "additive":
        return torch.randn(B, 1, S, S, generator=g)
    return torch.zeros(1)  # unused


def batches(variant: str, count: int, seed: int = 1):
    g = torch.Generator().manual_seed(seed)
    return [(torch.randn(B, S, E, generator=g), extra_input(variant, g),
             torch.randint(0, CLASSES, (B,), generator=g)) for _ in range(count)]


def sgd(params):
    return torch.optim.SGD(params, lr=0.05, momentum=0.9)


VARIANTS = ["causal", "cross-causal", "padding", "hidden-rows", "additive", "gqa"]


@pytest.mark.parametrize("variant", VARIANTS)
def test_o0_matches_pytorch(variant):
    torch.manual_seed(0)
    model = Attention(variant)
    ref = copy.deepcopy(model)
    data = batches(variant, 4)
    step = amp.compile(model, nn.CrossEntropyLoss(), example_inputs=data[0],
                       optimizer=sgd(model.parameters()), opt_level="O0")
    # The fused op, with no [S, S] softmax left in the step.
    assert "train.attention" in step.mlir and "train.softmax" not in step.mlir
    theirs = [loss for loss, _ in reference_losses(ref, sgd(ref.parameters()), data)]
    for i, batch in enumerate(data):
        got = step(*batch)
        assert not got.skipped
        assert abs(got.loss - theirs[i]) <= 1e-4 * abs(theirs[i]), (i, got.loss, theirs[i])
    step.copy_to(model)
    assert_close_state(model, ref, 1e-4)


@pytest.mark.parametrize("variant", ["causal", "hidden-rows"])
def test_o1_bf16_fused_follows_decomposed(variant):
    """The fused kernels and the decomposed form at O1-bf16: the same
    losses to bf16's resolution over 4 steps (the forms round differently:
    the fused kernel keeps the scores in f32, the decomposed one rounds them
    to bf16 after the first product, as PyTorch's math backend does)."""
    torch.manual_seed(0)
    model = Attention(variant)
    data = batches(variant, 4)
    losses = {}
    for form in ("fused", "decomposed"):
        m = copy.deepcopy(model)
        step = amp.compile(m, nn.CrossEntropyLoss(), example_inputs=data[0],
                           optimizer=sgd(m.parameters()), opt_level="O1",
                           dtype=torch.bfloat16, attention=form)
        assert ("train.attention" in step.mlir) and ("train.softmax" not in step.mlir)
        losses[form] = [step(*batch).loss for batch in data]
    for a, b in zip(losses["fused"], losses["decomposed"]):
        assert abs(a - b) <= 2e-2 * abs(b), losses
    # and both follow PyTorch's autocast-bf16 loop
    ref = copy.deepcopy(model)
    theirs = [loss for loss, _ in reference_losses(ref, sgd(ref.parameters()), data,
                                                  dtype=torch.bfloat16)]
    for a, b in zip(losses["fused"], theirs):
        assert abs(a - b) <= 2e-2 * abs(b), (losses["fused"], theirs)


def test_dropout_keeps_the_math_form():
    """SDPA with dropout is the decomposed form with train.dropout (the fused
    kernels have no dropout yet)."""

    class WithDropout(Attention):
        def forward(self, x, extra):
            q = self.split(self.q(x))
            k, v = self.split(self.kv(x)).chunk(2, dim=1)
            o = F.scaled_dot_product_attention(q, k, v, dropout_p=0.1, is_causal=True)
            return self.cls(o.transpose(1, 2).reshape(x.shape[0], x.shape[1], E).mean(dim=1))

    model = WithDropout("causal")
    data = batches("causal", 1)
    step = amp.compile(model, nn.CrossEntropyLoss(), example_inputs=data[0],
                       optimizer=sgd(model.parameters()), opt_level="O0", cache=False)
    assert "train.attention" not in step.mlir
    assert "train.softmax" in step.mlir and "train.dropout" in step.mlir
    assert math.isfinite(step(*data[0]).loss)


def test_attention_option_is_checked():
    model = Attention("causal")
    with pytest.raises(ValueError, match="attention must be 'fused' or 'decomposed'"):
        amp.compile(model, nn.CrossEntropyLoss(), example_inputs=batches("causal", 1)[0],
                    optimizer=sgd(model.parameters()), attention="flash")


def test_learned_mask_keeps_its_gradient():
    """A float mask computed from a parameter (a learned relative bias) gets
    its gradient: SDPA takes the math form there (train.attention gives its
    mask none), and the bias trains as in PyTorch's loop."""

    class LearnedBias(Attention):
        def __init__(self):
            super().__init__("additive")
            self.bias = nn.Parameter(0.1 * torch.randn(S, S))

        def forward(self, x, extra):
            q = self.split(self.q(x))
            k, v = self.split(self.kv(x)).chunk(2, dim=1)
            o = F.scaled_dot_product_attention(q, k, v, attn_mask=self.bias + extra)
            o = self.out(o.transpose(1, 2).reshape(x.shape[0], x.shape[1], E))
            return self.cls(o.mean(dim=1))

    torch.manual_seed(0)
    model = LearnedBias()
    ref = copy.deepcopy(model)
    initial = model.bias.detach().clone()
    data = batches("additive", 3)
    step = amp.compile(model, nn.CrossEntropyLoss(), example_inputs=data[0],
                       optimizer=sgd(model.parameters()), opt_level="O0")
    # the math form, without a dropout of rate 0 (and its step counter)
    assert "train.attention" not in step.mlir and "train.dropout" not in step.mlir
    theirs = [loss for loss, _ in reference_losses(ref, sgd(ref.parameters()), data)]
    for i, batch in enumerate(data):
        got = step(*batch)
        assert abs(got.loss - theirs[i]) <= 1e-4 * abs(theirs[i]), (i, got.loss, theirs[i])
    step.copy_to(model)
    assert (model.bias - initial).abs().max() > 1e-4  # it trained
    assert_close_state(model, ref, 1e-4)


def test_math_form_gives_hidden_rows_zeros():
    """Key/value batch dims that broadcast over the queries' keep SDPA's
    math form (train.attention takes one batch for all three); a boolean
    mask hiding every key of some queries still gives those rows zeros
    there, as PyTorch's math backend does (_safe_softmax), not NaN: the
    losses and parameters follow PyTorch's loop at O0."""

    class SharedKeys(Attention):
        def forward(self, x, extra):
            q = self.split(self.q(x))
            # one set of keys and values (the first example's) for the batch
            k, v = self.split(self.kv(x[:1])).chunk(2, dim=1)
            o = F.scaled_dot_product_attention(q, k, v, attn_mask=extra)
            o = self.out(o.transpose(1, 2).reshape(x.shape[0], x.shape[1], E))
            return self.cls(o.mean(dim=1))

    torch.manual_seed(0)
    model = SharedKeys("hidden-rows")
    ref = copy.deepcopy(model)
    data = batches("hidden-rows", 3)
    step = amp.compile(model, nn.CrossEntropyLoss(), example_inputs=data[0],
                       optimizer=sgd(model.parameters()), opt_level="O0")
    assert "train.attention" not in step.mlir and "train.softmax" in step.mlir
    theirs = [loss for loss, _ in reference_losses(ref, sgd(ref.parameters()), data)]
    for i, batch in enumerate(data):
        got = step(*batch)
        assert math.isfinite(got.loss) and not got.skipped
        assert abs(got.loss - theirs[i]) <= 1e-4 * abs(theirs[i]), (i, got.loss, theirs[i])
    step.copy_to(model)
    assert_close_state(model, ref, 1e-4)
