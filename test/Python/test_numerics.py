"""check_numerics: where a step's first inf or NaN was born (docs/Numerics.md).

A transformer block whose FFN input projection overflows f16 for real inputs
(T5's failure: a Linear whose outputs pass 65504): at O1 f16 the report
names that Linear's module path and source line, forward, step 0, with the
largest finite magnitude of its inputs. A backward overflow (the loss scale
65536 times a large gradient) is named as backward, with its forward op's
module. Without overflow the reports stay empty on every step that updates,
and every loss equals the run without the option bit for bit.
"""

import inspect

import pytest
import torch
import torch.nn as nn

import amp


class FeedForward(nn.Module):
    def __init__(self, d: int, hidden: int) -> None:
        super().__init__()
        self.wi = nn.Linear(d, hidden)
        self.wo = nn.Linear(hidden, d)
        self.scale = 1.0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.wi(x)  # the line the report names
        return self.wo(torch.relu(h) * self.scale)


class Block(nn.Module):
    """An ordinary pre-norm transformer block (attention, then the FFN) with
    a mean-pooled classifier head."""

    def __init__(self, d: int = 32, heads: int = 4, hidden: int = 64, classes: int = 4) -> None:
        super().__init__()
        self.norm1 = nn.LayerNorm(d)
        self.attn = nn.MultiheadAttention(d, heads, batch_first=True)
        self.norm2 = nn.LayerNorm(d)
        self.ffn = FeedForward(d, hidden)
        self.head = nn.Linear(d, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.norm1(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        x = x + self.ffn(self.norm2(x))
        return self.head(x.mean(1))


WI_LINE = inspect.getsourcelines(FeedForward.forward)[1] + 1


def _data():
    torch.manual_seed(0)
    return torch.randn(8, 16, 32), torch.randint(0, 4, (8,))


def _block(overflow: bool) -> Block:
    torch.manual_seed(1)
    model = Block()
    if overflow:
        # Weights of ~3.5e4 (in f16's range) on layer-normed inputs: the
        # projection's sums pass 65504 (up to 4.7e5); the FFN scales them
        # back before its output projection, so in f32 the block is an
        # ordinary one.
        with torch.no_grad():
            model.ffn.wi.weight.mul_(2e5)
        model.ffn.scale = 1 / 2e5
    return model


def _compile(model, x, y, **options):
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    return amp.compile(model, nn.CrossEntropyLoss(), example_inputs=(x, y), optimizer=opt,
                       opt_level="O1", dtype=torch.float16, **options)


def test_forward_overflow_is_named_by_module_and_line():
    x, y = _data()
    step = _compile(_block(overflow=True), x, y, check_numerics=True)
    result = step(x, y)
    assert result.skipped
    report = result.numerics
    assert report is not None
    assert (report.stage, report.op, report.module, report.value, report.step) == \
        ("forward", "train.matmul", "ffn.wi", "inf", 0)
    assert report.file == __file__ and report.line == WI_LINE
    # Its inputs were finite and within f16's range: the GEMM's sums
    # overflowed, not its operands.
    assert 1e3 < report.input_magnitude <= 65504
    assert str(report).startswith(f"{__file__}:{WI_LINE}: step 0: train.matmul in the forward "
                                  "of ffn.wi made an inf from finite inputs")
    again = step(x, y)
    assert again.numerics is not None and again.numerics.step == 1


def test_raise_mode():
    x, y = _data()
    step = _compile(_block(overflow=True), x, y, check_numerics="raise")
    with pytest.raises(amp.NumericsError) as caught:
        step(x, y)
    assert caught.value.report.module == "ffn.wi"
    assert isinstance(caught.value, FloatingPointError)
    with pytest.raises(ValueError, match="check_numerics must be False, True or 'raise'"):
        _compile(_block(overflow=False), x, y, check_numerics="yes")


def test_backward_overflow_is_named_with_its_forward_module():
    """A loss 300x larger overflows the scaled f16 gradients at 65536 while
    the forward stays finite: the first op to make an inf is in the
    backward, and it carries its forward op's module."""
    x, y = _data()
    model = _block(overflow=False)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    step = amp.compile(model, lambda out, t: 300.0 * nn.functional.cross_entropy(out, t),
                       example_inputs=(x, y), optimizer=opt, opt_level="O1",
                       dtype=torch.float16, check_numerics=True)
    result = step(x, y)
    assert result.skipped and result.nonfinite.stage == "backward"
    report = result.numerics
    assert report is not None and report.stage == "backward" and report.value == "inf"
    assert report.module in {name for name, _ in model.named_modules()}, report
    assert report.line > 0 and report.file == __file__


def _run(model, x, y, steps, **options):
    step = _compile(model, x, y, **options)
    results = [step(x + 0.01 * i, y) for i in range(steps)]
    return results


@pytest.mark.parametrize("kind", ["block", "cnn"])
def test_no_overflow_no_report_and_the_same_losses(kind):
    if kind == "block":
        x, y = _data()
        make = lambda: _block(overflow=False)  # noqa: E731
    else:
        torch.manual_seed(0)
        x, y = torch.randn(8, 3, 16, 16), torch.randint(0, 10, (8,))

        def make():
            torch.manual_seed(1)
            return nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                                 nn.MaxPool2d(2), nn.Conv2d(8, 16, 3, padding=1),
                                 nn.BatchNorm2d(16), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
                                 nn.Flatten(), nn.Linear(16, 10))
    plain = _run(make(), x, y, 6)
    checked = _run(make(), x, y, 6, check_numerics=True)
    assert [r.loss for r in plain] == [r.loss for r in checked]
    assert [r.scale for r in plain] == [r.scale for r in checked]
    # A report exactly where the step was skipped (the scaler's backoffs
    # from 65536, if any: born in the backward), none on the steps that
    # updated.
    for r in checked:
        assert (r.numerics is not None) == r.skipped, r
        if r.numerics is not None:
            assert r.numerics.stage == "backward"
    assert any(not r.skipped for r in checked)


def test_a_nan_in_the_data_is_named_as_the_input():
    x, y = _data()
    step = _compile(_block(overflow=False), x, y, check_numerics=True)
    bad = x.clone()
    bad[0, 0, 0] = float("nan")
    report = step(bad, y).numerics
    assert report is not None
    assert (report.stage, report.argument, report.value) == ("argument", "input #0", "NaN")


class SqrtHead(nn.Module):
    """sqrt of a ReLU: finite forward (sqrt(0) = 0), but the gradient of
    sqrt at 0 is 1 / (2 sqrt(0)) = inf: a NaN-free forward whose backward
    makes an inf in f32, no loss scale involved."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(32, 8)
        self.head = nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.sqrt(torch.relu(self.fc(x)))  # the backward's inf: here
        return self.head(h.mean(1))


def _first_report_at_o0(model_class) -> "amp.NumericsReport":
    """The check_numerics report of the first O0 step of a fresh
    ``model_class`` (no loss scale: what the backward makes on its own)."""
    x, y = _data()
    torch.manual_seed(2)
    model = model_class()
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    step = amp.compile(model, nn.CrossEntropyLoss(), example_inputs=(x, y), optimizer=opt,
                       opt_level="O0", check_numerics=True)
    result = step(x, y)
    assert result.numerics is not None, result
    return result.numerics


def test_a_backward_inf_from_finite_inputs_is_named_at_its_forward_line():
    report = _first_report_at_o0(SqrtHead)
    assert (report.stage, report.value, report.step) == ("backward", "inf", 0)
    assert report.line == inspect.getsourcelines(SqrtHead.forward)[1] + 1
    assert report.module == ""  # torch.sqrt at the top level of the model
    assert "in the backward" in str(report)


class ZeroedSqrt(nn.Module):
    """A term the loss weighs by 0: its forward is finite (0 * sqrt(0)),
    but its backward computes 0 * (1 / (2 sqrt(0))) = 0 * inf = NaN in the
    gradient of sqrt, from finite inputs."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(32, 8)
        self.head = nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.fc(x)
        penalty = torch.sqrt(torch.relu(h)).mean() * 0.0  # the backward's NaN: here
        return self.head(h.mean(1)) + penalty


def test_a_backward_nan_is_named_as_backward_at_its_forward_line():
    report = _first_report_at_o0(ZeroedSqrt)
    assert (report.stage, report.value, report.step) == ("backward", "NaN", 0), report
    assert report.line == inspect.getsourcelines(ZeroedSqrt.forward)[1] + 2
    assert "made a NaN from finite inputs" in str(report)
