"""nn.Dropout in a compiled step: PyTorch's semantics with amp's own masks.

amp cannot draw PyTorch's random numbers, so the check is exact given the
mask: with a batch of one image, a hidden unit that dropout zeroed gets no
gradient, so its row of the first layer is unchanged by the step; that
recovers amp's mask, and PyTorch's loop with the same mask applied
(h * mask / (1 - p)) must give the same loss and parameters (1e-5). The
masks' statistics (the fraction dropped), their change from step to step,
resuming, and evaluation without dropout are checked as well.
"""

import copy

import torch
import torch.nn as nn

import amp
from models import batches

P, HIDDEN = 0.3, 2048


class DropoutMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(784, HIDDEN)
        self.drop = nn.Dropout(P)
        self.fc2 = nn.Linear(HIDDEN, 10)

    def forward(self, x):
        return self.fc2(self.drop(self.fc1(x.flatten(1))))


def compiled(model, lr=0.1, **options):
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    return amp.compile(model, nn.CrossEntropyLoss(), example_inputs=batches(1, batch=1)[0],
                       optimizer=opt, opt_level="O0", **options)


def test_dropout_matches_pytorch_given_the_mask():
    torch.manual_seed(0)
    model = DropoutMLP()
    ref = copy.deepcopy(model)
    ref_opt = torch.optim.SGD(ref.parameters(), lr=0.1)
    step = compiled(model)
    masks = []
    for x, y in batches(3, batch=1):
        before = step.state_dict()["fc1.bias"].clone()
        got = step(x, y)
        after = step.state_dict()["fc1.bias"]
        kept = (after != before).float()  # dropped units get no gradient
        masks.append(kept)
        fraction = 1 - kept.mean().item()
        # binomial(2048, 0.3): standard deviation 0.010; 5 of them
        assert abs(fraction - P) < 0.05, fraction
        ref_opt.zero_grad()
        h = ref.fc1(x.flatten(1)) * kept / (1 - P)
        loss = nn.functional.cross_entropy(ref.fc2(h), y)
        loss.backward()
        ref_opt.step()
        assert abs(got.loss - loss.item()) <= 1e-5 * abs(loss.item())
    # a new mask every step (agreeing on about 0.58 of the units by chance)
    assert (masks[0] != masks[1]).float().mean() > 0.3
    assert (masks[1] != masks[2]).float().mean() > 0.3
    step.copy_to(model)
    for name, value in model.state_dict().items():
        want = ref.state_dict()[name]
        assert (value - want).abs().max() <= 1e-5 * want.abs().max(), name


def test_two_dropouts_draw_different_masks():
    model = nn.Sequential(nn.Flatten(), nn.Dropout(0.5), nn.Dropout(0.5))
    text = amp.to_mlir(model, nn.CrossEntropyLoss(),
                       (torch.randn(2, 5), torch.zeros(2, dtype=torch.long)))
    assert "rate 0.5 seed 1 step %a2" in text and "rate 0.5 seed 2 step %a2" in text
    assert "train.increment %a2" in text


def test_resumed_dropout_run_is_bit_identical():
    torch.manual_seed(0)
    model = DropoutMLP()
    first = compiled(copy.deepcopy(model))
    data = batches(3, batch=1)
    start = first.state_dict()["amp.dropout_step"].item()
    first(*data[0])
    saved = first.state_dict()
    assert saved["amp.dropout_step"].item() == start + 1
    uninterrupted = [first(*b).loss for b in data[1:]]
    second = compiled(copy.deepcopy(model))
    second.load_state_dict(saved)
    assert [second(*b).loss for b in data[1:]] == uninterrupted


def test_dropout_masks_follow_torch_manual_seed():
    # The same model and data each time: only the seed set before
    # amp.compile changes, and with it the masks (so the losses).
    torch.manual_seed(0)
    model = DropoutMLP()
    data = batches(3, batch=1)

    def losses(seed):
        torch.manual_seed(seed)
        step = compiled(copy.deepcopy(model))
        return [step(*b).loss for b in data]

    first = losses(1)
    assert losses(1) == first
    second = losses(2)
    assert all(a != b for a, b in zip(first, second)), (first, second)
    # The masks' counter is drawn from PyTorch's default generator, as
    # PyTorch's own dropout draws from it: a second step made under the
    # same seed continues the stream rather than repeating its masks.
    torch.manual_seed(1)
    compiled(copy.deepcopy(model))
    step = compiled(copy.deepcopy(model))
    assert [step(*b).loss for b in data] != first


def test_evaluation_has_no_dropout():
    torch.manual_seed(0)
    model = DropoutMLP()
    step = compiled(model)
    for x, y in batches(2, batch=1):
        step(x, y)
    step.copy_to(model)
    x = batches(1, batch=1, seed=7)[0][0]
    want = model.eval()(x)
    got = step.predict(x)
    assert (got - want).abs().max() <= 1e-5 * want.abs().max()


def test_dropout_at_o1_trains():
    torch.manual_seed(0)
    model = DropoutMLP()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    data = batches(8)
    step = amp.compile(model, nn.CrossEntropyLoss(), example_inputs=data[0], optimizer=opt,
                       opt_level="O1", dtype=torch.float16)
    losses = [step(*data[0]).loss for _ in range(8)]
    assert all(l == l for l in losses) and losses[-1] < losses[0]


def test_dropout_of_one_zeroes_everything():
    """p=1 (PyTorch allows it): zeros, and the layers before it get no
    gradient."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Flatten(), nn.Linear(784, 10), nn.Dropout(1.0))
    before = copy.deepcopy(model.state_dict())
    step = compiled(model)
    x, y = batches(1, batch=1)[0]
    got = step(x, y)
    assert abs(got.loss - torch.log(torch.tensor(10.0)).item()) < 1e-6  # uniform logits
    step.copy_to(model)
    for name, value in model.state_dict().items():
        assert torch.equal(value, before[name]), name
