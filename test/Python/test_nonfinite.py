"""A non-finite forward never reaches the state, and a skipped step says
what first held an inf or NaN (docs/LossScaling.md).

A batch-norm network at O1 f16: a batch whose convolution overflows f16
(its outputs pass 65504) is skipped and every state tensor but the
scaler's and the call counts keeps its value bit for bit, running
statistics included (PyTorch's autocast + GradScaler writes NaN into them);
gradients that overflow alone skip the update but move the running
statistics as a clean step does, and name the parameter by its model name.
"""

import copy

import torch
import torch.nn as nn

import amp


class BatchNormNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.fc = nn.Linear(4 * 8 * 8, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(torch.relu(self.bn(self.conv(x))).flatten(1))


def _data():
    torch.manual_seed(0)
    x = torch.randn(8, 1, 8, 8).clamp(-2, 2)
    y = torch.randint(0, 10, (8,))
    return x, y


def _model() -> BatchNormNet:
    """Convolution weights in [0.2, 0.4]: a 3x3 sum of inputs of 45 000 or
    more (in f16's range) is at least 81 000 (out of it)."""
    torch.manual_seed(1)
    model = BatchNormNet()
    with torch.no_grad():
        model.conv.weight.uniform_(0.2, 0.4)
    return model


def _overflowing(x: torch.Tensor) -> torch.Tensor:
    big = (1.5 + 0.5 * torch.rand_like(x)) * 3e4
    assert big.max() < 65504
    return big


def _bits(state):
    return {k: v.numpy().tobytes() for k, v in state.items()}


def _counted(key: str) -> bool:
    """The scaler's state and the call counts change on a skip."""
    return key.startswith("amp.scaler") or key == "amp.calls" or \
        key.endswith("num_batches_tracked")


def test_f16_forward_overflow_keeps_every_state_tensor():
    x, y = _data()
    model = _model()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    step = amp.compile(model, nn.CrossEntropyLoss(), example_inputs=(x, y), optimizer=opt,
                       opt_level="O1", dtype=torch.float16)
    clean = step(x, y)
    assert not clean.skipped and clean.nonfinite is None
    before = _bits(step.state_dict())
    result = step(_overflowing(x), y)
    assert result.skipped
    assert result.nonfinite == amp.NonfiniteSource("forward", "the loss", "")
    after = _bits(step.state_dict())
    changed = sorted(k for k in before if before[k] != after[k] and not _counted(k))
    assert changed == []
    assert any(before[k] != after[k] for k in before if k.startswith("amp.scaler"))
    # The next clean step trains from there, as if the bad batch never came.
    again = step(x, y)
    assert not again.skipped and again.nonfinite is None
    running = step.state_dict()["bn.running_var"]
    assert torch.isfinite(running).all()


def test_pytorch_writes_the_overflow_into_running_statistics():
    """The flaw amp removes, shown on PyTorch's own loop (CPU autocast
    f16 + GradScaler): the step is skipped, the running variance is not
    finite any more."""
    x, y = _data()
    model = _model()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    scaler = torch.amp.GradScaler("cpu", init_scale=2.0**16)
    with torch.autocast("cpu", dtype=torch.float16):
        loss = nn.CrossEntropyLoss()(model(_overflowing(x)), y)
    scaler.scale(loss).backward()
    weight = model.conv.weight.detach().clone()
    scaler.step(opt)
    scaler.update()
    assert torch.equal(model.conv.weight, weight), "the update was skipped"
    assert not torch.isfinite(model.bn.running_var).all()


def test_gradient_overflow_names_the_parameter_and_updates_statistics():
    x, y = _data()
    model = _model()
    reference = copy.deepcopy(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    # A static scale so large that the scaled gradients overflow f32 while
    # the forward stays finite.
    step = amp.compile(model, nn.CrossEntropyLoss(), example_inputs=(x, y), optimizer=opt,
                       opt_level="O1", dtype=torch.float16, loss_scale=1e38)
    before = step.state_dict()
    result = step(x, y)
    assert result.skipped
    assert result.nonfinite is not None
    assert result.nonfinite.stage == "backward"
    assert result.nonfinite.what == "the gradient of " + result.nonfinite.name
    # The scaled gradient of the logits is rounded to f16 for the last
    # layer's GEMM, where 1e38 is inf: the last layer's gradients are the
    # first non-finite ones in backward's order.
    assert result.nonfinite.name in ("fc.weight", "fc.bias")
    after = step.state_dict()
    for name in ("conv.weight", "fc.weight"):
        assert torch.equal(after[name], before[name]), name
    # The running statistics moved as PyTorch's forward moves them.
    reference.train()
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.float16):
        reference(x)
    for name in ("bn.running_mean", "bn.running_var"):
        assert not torch.equal(after[name], before[name]), name
        torch.testing.assert_close(after[name], reference.state_dict()[name],
                                   rtol=2e-3, atol=2e-3)


def test_without_loss_scaling_nothing_is_reported():
    x, y = _data()
    model = BatchNormNet()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    step = amp.compile(model, nn.CrossEntropyLoss(), example_inputs=(x, y), optimizer=opt,
                       opt_level="O1", dtype=torch.bfloat16)
    result = step(x, y)
    assert result.nonfinite is None and not result.skipped
