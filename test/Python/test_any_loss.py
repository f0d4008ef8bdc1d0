"""Any loss the user writes: several loss terms (an auxiliary head:
``CE(o[0], y) + 0.3 * CE(o[1], y)``), a loss plus a penalty, a term on a
detached output, and a loss the model computes itself (``loss_fn=None``,
HuggingFace's ``labels=`` and ``.loss``).

O0 against PyTorch's own loop, 5 steps from the same weights on the same
batches (SGD-momentum and AdamW): every loss within 1e-4 relative of
PyTorch's, then every parameter and buffer within 1e-4 (of the tensor's
largest magnitude), as test_parity.py holds the CNNs (docs/Numerics.md).
``predict`` returns the model's output as the model does (a tuple, a
ModelOutput), each tensor within 1e-5 of the model's own eval-mode output.
"""

import copy

import pytest
import torch
import torch.nn as nn

import amp
from test_parity import assert_close_state

F = nn.functional

OPTIMIZERS = {
    "sgd-momentum": lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9, weight_decay=5e-4),
    "adamw": lambda p: torch.optim.AdamW(p, lr=1e-3, weight_decay=0.01),
}


class TwoHeads(nn.Module):
    """A trunk with batch norm (running statistics: eval differs from
    training) and two classifier heads, as an auxiliary-loss network
    (GoogLeNet, Inception) has. No bias before batch norm (its gradient is
    zero but for rounding, which Adam turns into steps: docs/Numerics.md)."""

    def __init__(self):
        super().__init__()
        self.trunk = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8), nn.ReLU(),
                                   nn.AdaptiveAvgPool2d(2), nn.Flatten())
        self.main = nn.Linear(32, 10)
        self.aux = nn.Linear(32, 10)

    def forward(self, x):
        h = self.trunk(x)
        return self.main(h), self.aux(h)


class OwnLoss(TwoHeads):
    """The model computes its loss from the target (``loss_fn=None``)."""

    def forward(self, x, y):
        main, aux = super().forward(x)
        return F.cross_entropy(main, y) + 0.3 * F.cross_entropy(aux, y)


LOSSES = {
    "aux-head": lambda o, y: F.cross_entropy(o[0], y) + 0.3 * F.cross_entropy(o[1], y),
    "ce-plus-penalty": lambda o, y: F.cross_entropy(o[0], y) + 1e-2 * o[1].pow(2).mean(),
    # the second head regressed on the first's detached logits: no gradient
    # reaches the main head through that term
    "ce-plus-mse-detached": lambda o, y: F.cross_entropy(o[0], y) +
    F.mse_loss(o[1], o[0].detach()),
}


def batches(count: int, seed: int = 1):
    g = torch.Generator().manual_seed(seed)
    return [(torch.randn(8, 3, 8, 8, generator=g), torch.randint(0, 10, (8,), generator=g))
            for _ in range(count)]


def side_by_side(model, loss_fn, make_optimizer, data):
    """amp's O0 step and PyTorch's loop: losses, then state, within 1e-4.
    Returns (amp's step, the model PyTorch trained)."""
    ref = copy.deepcopy(model)
    opt, ref_opt = make_optimizer(model.parameters()), make_optimizer(ref.parameters())
    step = amp.compile(model, loss_fn, example_inputs=data[0], optimizer=opt, opt_level="O0")
    for i, (x, y) in enumerate(data):
        ref_opt.zero_grad()
        want = (ref(x, y) if loss_fn is None else loss_fn(ref(x), y))
        want = getattr(want, "loss", want)
        want.backward()
        ref_opt.step()
        got = step(x, y)
        assert not got.skipped
        assert abs(got.loss - want.item()) <= 1e-4 * abs(want.item()), (i, got.loss, want.item())
    step.copy_to(model)
    assert_close_state(model, ref, 1e-4)
    return step, ref


@pytest.mark.parametrize("optimizer", sorted(OPTIMIZERS))
@pytest.mark.parametrize("loss", sorted(LOSSES))
def test_sum_of_losses_o0_matches_pytorch(loss, optimizer):
    torch.manual_seed(0)
    data = batches(5)
    step, ref = side_by_side(TwoHeads(), LOSSES[loss], OPTIMIZERS[optimizer], data)
    # predict: both heads, as the model returns them, in eval mode
    ref.eval()
    with torch.no_grad():
        want = ref(data[0][0])
    got = step.predict(data[0][0])
    assert isinstance(got, tuple) and len(got) == 2
    for a, b in zip(got, want):
        assert torch.allclose(a, b, rtol=1e-5, atol=1e-5), (a - b).abs().max()


@pytest.mark.parametrize("optimizer", sorted(OPTIMIZERS))
def test_model_computing_its_own_loss_o0_matches_pytorch(optimizer):
    torch.manual_seed(0)
    data = batches(5)
    step, ref = side_by_side(OwnLoss(), None, OPTIMIZERS[optimizer], data)
    # predict takes the target too and gives the model's eval-mode loss
    ref.eval()
    with torch.no_grad():
        want = ref(*data[1]).item()
    got = step.predict(*data[1])
    assert abs(got.item() - want) <= 1e-5 * abs(want), (got.item(), want)
    with pytest.raises(ValueError, match=r"predict takes the model's 2 input\(s\) and the target"):
        step.predict(data[0][0])


class CausalLM(nn.Module):
    """HuggingFace's own loss: ``labels=`` shifted inside the model
    (ForCausalLMLoss: padded with -100, ignored), ``.loss`` of its
    ModelOutput."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model

    def forward(self, ids, labels):
        return self.model(input_ids=ids, labels=labels, use_cache=False)


def test_huggingface_model_loss_o0_matches_pytorch():
    from test_transformers import gpt2, lm_batches
    torch.manual_seed(0)
    data = []
    for ids, _ in lm_batches(5):
        labels = ids.clone()
        labels[:, :3] = -100  # a prompt the loss ignores
        data.append((ids, labels))
    step, ref = side_by_side(CausalLM(gpt2()), None, OPTIMIZERS["sgd-momentum"], data)
    # predict: the model's own output type, loss and logits in it
    ref.eval()
    with torch.no_grad():
        want = ref(*data[0])
    got = step.predict(*data[0])
    assert type(got) is type(want) and list(got.keys()) == ["loss", "logits"]
    assert abs(got.loss.item() - want.loss.item()) <= 1e-5 * want.loss.item()
    assert torch.allclose(got.logits, want.logits, rtol=1e-4, atol=1e-5)
    # a label outside the vocabulary (other than -100): nothing changes
    before = step.state_dict()
    bad = data[1][1].clone()
    bad[0, 5] = 512
    with pytest.raises(IndexError):
        step(data[1][0], bad)
    after = step.state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before)


def test_loss_that_is_not_a_scalar_is_an_error():
    model = TwoHeads()
    with pytest.raises(amp.UnsupportedModelError, match="the loss must be a scalar float tensor"):
        amp.compile(model, lambda o, y: F.cross_entropy(o[0], y, reduction="none"),
                    batches(1)[0], optimizer=torch.optim.SGD(model.parameters(), lr=0.1))


def test_model_without_its_own_loss_is_an_error():
    class NoLoss(TwoHeads):
        def forward(self, x, y):
            return {"logits": super().forward(x)[0]}

    model = NoLoss()
    with pytest.raises(TypeError, match=r"loss_fn=None: the model must return its loss"):
        amp.compile(model, None, batches(1)[0],
                    optimizer=torch.optim.SGD(model.parameters(), lr=0.1))
