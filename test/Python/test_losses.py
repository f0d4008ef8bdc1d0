"""Losses beyond plain cross-entropy: nn.MSELoss, L1Loss, SmoothL1Loss
(beta, and beta = 0), BCEWithLogitsLoss (a regression model), cross-entropy
with label smoothing or ignored labels (ignore_index, -100 by default),
NLLLoss after log_softmax.

O0 against PyTorch's loop (SGD-momentum and AdamW, 5 steps): losses and
state within 1e-4; predict is the model's eval output (1e-5); O1 f16
against torch.autocast + GradScaler over 20 steps: losses within 1%, the
same loss scale.
"""

import copy

import pytest
import torch
import torch.nn as nn

import amp
from models import reference_losses


def regressor() -> nn.Module:
    return nn.Sequential(nn.Flatten(), nn.Linear(784, 32), nn.ReLU(), nn.Linear(32, 1))


def regression_batches(count: int, batch: int = 16):
    g = torch.Generator().manual_seed(3)
    return [(torch.randn(batch, 1, 28, 28, generator=g), torch.randn(batch, 1, generator=g))
            for _ in range(count)]


OPTIMIZERS = {
    "sgd-momentum": lambda p: torch.optim.SGD(p, lr=0.01, momentum=0.9, weight_decay=5e-4),
    "adamw": lambda p: torch.optim.AdamW(p, lr=1e-3, weight_decay=0.01),
}


def probability_batches(count: int, batch: int = 16):
    """Targets in [0, 1] (BCEWithLogitsLoss's)."""
    return [(x, torch.sigmoid(3 * t)) for x, t in regression_batches(count, batch)]


# name -> (loss module, PyTorch's functional form, data)
REGRESSION = {
    "mse": (nn.MSELoss, nn.functional.mse_loss, regression_batches),
    "l1": (nn.L1Loss, nn.functional.l1_loss, regression_batches),
    "smooth-l1": (lambda: nn.SmoothL1Loss(beta=0.5),
                  lambda out, y: nn.functional.smooth_l1_loss(out, y, beta=0.5),
                  regression_batches),
    "smooth-l1-beta0": (lambda: nn.SmoothL1Loss(beta=0.0),
                        lambda out, y: nn.functional.smooth_l1_loss(out, y, beta=0.0),
                        regression_batches),
    "huber-default": (nn.SmoothL1Loss, nn.functional.smooth_l1_loss, regression_batches),
    "bce-with-logits": (nn.BCEWithLogitsLoss, nn.functional.binary_cross_entropy_with_logits,
                        probability_batches),
}


@pytest.mark.parametrize("optimizer", sorted(OPTIMIZERS))
@pytest.mark.parametrize("case", sorted(REGRESSION))
def test_regression_losses_o0_match_pytorch(case, optimizer):
    loss_fn, functional, make_data = REGRESSION[case]
    torch.manual_seed(0)
    model = regressor()
    ref = copy.deepcopy(model)
    opt, ref_opt = (OPTIMIZERS[optimizer](m.parameters()) for m in (model, ref))
    data = make_data(5)
    step = amp.compile(model, loss_fn(), example_inputs=data[0], optimizer=opt,
                       opt_level="O0")
    for (x, y), (want, _) in zip(data, reference_losses(ref, ref_opt, data, loss=functional)):
        assert abs(step(x, y).loss - want) <= 1e-4 * abs(want)
    step.copy_to(model)
    for (name, a), b in zip(model.state_dict().items(), ref.state_dict().values()):
        assert (a - b).abs().max() <= 1e-4 * b.abs().max(), name
    # predict: the model's output (not the loss's), in eval mode.
    x = make_data(1)[0][0]
    want = model.eval()(x)
    assert (step.predict(x) - want).abs().max() <= 1e-5 * want.abs().max()


@pytest.mark.parametrize("case", sorted(REGRESSION))
def test_regression_losses_o1_f16_match_autocast(case):
    """The losses are fp32-listed under autocast: amp computes them in f32
    from the f16 model output, as PyTorch does; 20 steps within 1%."""
    loss_fn, functional, make_data = REGRESSION[case]
    torch.manual_seed(0)
    model = regressor()
    ref = copy.deepcopy(model)
    opt, ref_opt = (torch.optim.SGD(m.parameters(), lr=0.01, momentum=0.9) for m in (model, ref))
    data = make_data(20)
    step = amp.compile(model, loss_fn(), example_inputs=data[0], optimizer=opt,
                       opt_level="O1", dtype=torch.float16)
    for (x, y), (want, scale) in zip(data, reference_losses(ref, ref_opt, data, torch.float16,
                                                            loss=functional)):
        got = step(x, y)
        assert abs(got.loss - want) <= 1e-2 * abs(want)
        assert got.scale == scale


@pytest.mark.parametrize("loss_fn", [nn.MSELoss(reduction="sum"), nn.L1Loss(reduction="none"),
                                     nn.BCEWithLogitsLoss(pos_weight=torch.ones(1))],
                         ids=["mse-sum", "l1-none", "bce-pos-weight"])
def test_unsupported_loss_options_are_refused(loss_fn):
    with pytest.raises(amp.UnsupportedModelError, match="reduction|pos_weight"):
        amp.to_mlir(regressor(), loss_fn, regression_batches(1)[0])


def classifier() -> nn.Module:
    return nn.Sequential(nn.Flatten(), nn.Linear(784, 32), nn.ReLU(), nn.Linear(32, 10))


class LogSoftmaxNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = classifier()

    def forward(self, x):
        return nn.functional.log_softmax(self.net(x), dim=1)


def ignored(value: int):
    """Labels with every third one replaced by ``value`` (an ignore_index)."""
    def relabel(y):
        y = y.clone()
        y[::3] = value
        return y
    return relabel


# name -> (model, loss module, PyTorch's functional form[, label transform])
CLASSIFICATION = {
    "label-smoothing": (classifier, lambda: nn.CrossEntropyLoss(label_smoothing=0.1),
                        lambda out, y: nn.functional.cross_entropy(out, y, label_smoothing=0.1)),
    "nll-after-log-softmax": (LogSoftmaxNet, nn.NLLLoss, nn.functional.nll_loss),
    # PyTorch's default ignore_index=-100 (padding labels), and another one.
    "ignore-index-default": (classifier, nn.CrossEntropyLoss, nn.functional.cross_entropy,
                             ignored(-100)),
    "ignore-index-3": (classifier, lambda: nn.CrossEntropyLoss(ignore_index=3),
                       lambda out, y: nn.functional.cross_entropy(out, y, ignore_index=3),
                       ignored(3)),
    "nll-ignore-index": (LogSoftmaxNet, nn.NLLLoss, nn.functional.nll_loss, ignored(-100)),
    # Smoothing and padding labels together (a language model's loss):
    # ignored rows are left out of the smoothing term as well.
    "label-smoothing-ignore-index": (
        classifier, lambda: nn.CrossEntropyLoss(label_smoothing=0.2),
        lambda out, y: nn.functional.cross_entropy(out, y, label_smoothing=0.2),
        ignored(-100)),
}


@pytest.mark.parametrize("case", sorted(CLASSIFICATION))
def test_classification_losses_o0_match_pytorch(case):
    make, loss_fn, functional, *relabel = CLASSIFICATION[case]
    relabel = relabel[0] if relabel else (lambda y: y)
    torch.manual_seed(0)
    model = make()
    ref = copy.deepcopy(model)
    opt, ref_opt = (torch.optim.SGD(m.parameters(), lr=0.05, momentum=0.9) for m in (model, ref))
    g = torch.Generator().manual_seed(5)
    data = [(torch.randn(16, 1, 28, 28, generator=g),
             relabel(torch.randint(0, 10, (16,), generator=g))) for _ in range(5)]
    step = amp.compile(model, loss_fn(), example_inputs=data[0], optimizer=opt, opt_level="O0")
    for (x, y), (want, _) in zip(data, reference_losses(ref, ref_opt, data, loss=functional)):
        assert abs(step(x, y).loss - want) <= 1e-4 * abs(want)
    step.copy_to(model)
    for (name, a), b in zip(model.state_dict().items(), ref.state_dict().values()):
        assert (a - b).abs().max() <= 1e-4 * b.abs().max(), name
