"""Calibrated autocast (docs/Numerics.md): precision from measured ranges.

The T5-like block of test_numerics.py (an FFN input projection whose outputs
pass 65504 for real inputs, scaled back before the output projection, in an
otherwise ordinary transformer block), 50 SGD steps:

- PyTorch's torch.autocast f16 + GradScaler loses every step (NaN loss);
- amp's plain O1 f16 does the same (every step skipped for a forward
  overflow);
- amp with autocast="calibrated", after amp.calibrate on 4 batches, skips no
  step and its losses stay within 1% of amp O0's.

A saved calibration compiles the same decisions in a new process, and one of
another model is refused with the op it does not find.
"""

import copy
import json
import os
import subprocess
import sys

import pytest
import torch
import torch.nn as nn

import amp
from test_numerics import Block, _block

STEPS = 50


def _batches(n: int, seed: int = 5):
    g = torch.Generator().manual_seed(seed)
    return [(torch.randn(8, 16, 32, generator=g), torch.randint(0, 4, (8,), generator=g))
            for _ in range(n)]


def _saved(calibration) -> str:
    import tempfile
    path = os.path.join(tempfile.mkdtemp(), "calibration.json")
    calibration.save(path)
    return path


def _amp_run(model, batches, **options):
    model = copy.deepcopy(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    step = amp.compile(model, nn.CrossEntropyLoss(), batches[0], optimizer=opt, **options)
    return [step(x, y) for x, y in batches]


@pytest.fixture(scope="module")
def overflow():
    model = _block(overflow=True)
    batches = _batches(STEPS)
    calibration = amp.calibrate(model, nn.CrossEntropyLoss(), batches[:4])
    return model, batches, calibration


def test_calibration_measures_the_overflowing_projection(overflow):
    model, batches, calibration = overflow
    ops = {(o.module, o.op, o.index): o for o in calibration.ops}
    wi = ops[("ffn.wi", "train.matmul", 0)]
    # The measured range is the f32 one: compare with PyTorch's own forward.
    with torch.no_grad():
        h = max(model.ffn.wi(model.norm2(x + model.attn(model.norm1(x), model.norm1(x),
                                                      model.norm1(x), need_weights=False)[0]))
                .abs().max().item() for x, _ in batches[:4])
    assert wi.output == pytest.approx(h, rel=1e-5)
    assert wi.output > 65504 and wi.headroom(torch.float16) < 1
    assert wi.line > 0 and wi.file.endswith("test_numerics.py")
    overflowing = {(o.module, o.op) for o in calibration.overflowing(torch.float16)}
    # The projection, and the scaling that reads it; nothing else.
    assert overflowing == {("ffn.wi", "train.matmul"), ("ffn", "train.mul")}
    assert calibration.overflowing(torch.bfloat16) == []
    assert 0 < calibration.largest_gradient < 65504
    assert calibration.max_loss_scale() == pytest.approx(65504 / calibration.largest_gradient)
    text = calibration.report()
    assert "ffn.wi" in text and "-> f32" in text and "loss scales up to" in text
    # Underflow: the smallest nonzero magnitudes (f32: nothing flushed), and
    # the loss scales that keep the smallest gradient a normal f16 value.
    assert all(o.smallest > 0 for o in calibration.ops if o.op != "train.cross_entropy")
    assert wi.smallest <= wi.output and wi.underflow_headroom() > 0
    assert 0 < calibration.smallest_gradient <= calibration.largest_gradient
    assert calibration.min_loss_scale() == pytest.approx(2.0 ** -14 / calibration.smallest_gradient)
    assert "smallest gradient" in text
    assert amp.Calibration.load(_saved(calibration)).smallest_gradient == \
        calibration.smallest_gradient


def test_pytorch_autocast_loses_every_step(overflow):
    model, batches, _ = overflow
    model = copy.deepcopy(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    scaler = torch.amp.GradScaler("cpu")
    nonfinite = skipped = 0
    for x, y in batches:
        opt.zero_grad()
        with torch.autocast("cpu", dtype=torch.float16):
            loss = nn.CrossEntropyLoss()(model(x), y)
        nonfinite += not torch.isfinite(loss).item()
        scaler.scale(loss).backward()
        before = scaler.get_scale()
        scaler.step(opt)
        scaler.update()
        skipped += scaler.get_scale() < before
    assert (nonfinite, skipped) == (STEPS, STEPS)


def test_calibrated_autocast_trains_where_o1_cannot(overflow):
    model, batches, calibration = overflow
    o0 = _amp_run(model, batches, opt_level="O0")
    o1 = _amp_run(model, batches)
    calibrated = _amp_run(model, batches, autocast="calibrated", calibration=calibration)
    # Plain O1 f16 behaves as PyTorch's autocast: every step's forward
    # overflows and is skipped.
    assert all(r.skipped and r.nonfinite.stage == "forward" for r in o1)
    # Calibrated: no step skipped for a forward overflow (nor any other here),
    # and the losses within 1% of O0's.
    assert not any(r.nonfinite is not None and r.nonfinite.stage == "forward"
                   for r in calibrated)
    assert sum(r.skipped for r in calibrated) == 0
    worst = max(abs(c.loss - f.loss) / abs(f.loss) for c, f in zip(calibrated, o0))
    assert worst < 0.01, worst
    # The losses move: it trains.
    assert len({round(r.loss, 4) for r in calibrated}) > 10


def test_explain_shows_the_calibrated_decisions(overflow):
    model, batches, calibration = overflow
    report = amp.explain(model, nn.CrossEntropyLoss(), batches[0], calibration=calibration)
    calibrated = {(n.module, op.op): op for n in report.nodes for op in n.train_ops
                  if op.reason.startswith("calibrated")}
    assert set(calibrated) == {("ffn.wi", "train.matmul"), ("ffn", "train.mul")}
    assert calibrated[("ffn.wi", "train.matmul")].precision == "f32"
    assert "measured 4." in calibrated[("ffn.wi", "train.matmul")].reason
    measured = amp.explain(model, nn.CrossEntropyLoss(), batches[0], calibrate=batches[:4])
    assert [(n.module, op) for n in measured.nodes for op in n.train_ops] == \
        [(n.module, op) for n in report.nodes for op in n.train_ops]
    plain = amp.explain(model, nn.CrossEntropyLoss(), batches[0])
    assert not any(op.reason.startswith("calibrated") for n in plain.nodes for op in n.train_ops)


_NEW_PROCESS = r"""
import json, sys
import torch, torch.nn as nn
import amp
from test_numerics import _block
from test_calibration import _batches
calibration = amp.Calibration.load(sys.argv[1])
report = amp.explain(_block(overflow=True), nn.CrossEntropyLoss(), _batches(1)[0],
                     calibration=calibration)
print(json.dumps(sorted([n.module, op.op, op.precision, op.reason]
                        for n in report.nodes for op in n.train_ops)))
"""


def test_a_saved_calibration_compiles_the_same_decisions_in_a_new_process(overflow, tmp_path):
    model, batches, calibration = overflow
    path = str(tmp_path / "block.calibration.json")
    calibration.save(path)
    assert json.load(open(path))["format"] == "amp-calibration-1"
    loaded = amp.Calibration.load(path)
    assert loaded.ops == calibration.ops
    here = amp.explain(model, nn.CrossEntropyLoss(), batches[0], calibration=calibration)
    expected = sorted([n.module, op.op, op.precision, op.reason]
                      for n in here.nodes for op in n.train_ops)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [os.path.dirname(__file__)] + os.environ.get("PYTHONPATH", "").split(os.pathsep)))
    run = subprocess.run([sys.executable, "-c", _NEW_PROCESS, path], capture_output=True,
                         text=True, env=env)
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout.strip().splitlines()[-1]) == expected
    # And a step compiled from the loaded file trains as the in-memory one.
    a = _amp_run(model, batches[:3], autocast="calibrated", calibration=calibration)
    b = _amp_run(model, batches[:3], autocast="calibrated", calibration=loaded)
    assert [r.loss for r in a] == [r.loss for r in b]


class Other(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.encoder = nn.Linear(32, 32)
        self.classifier = nn.Linear(32, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(torch.relu(self.encoder(x)).mean(1))


def test_a_calibration_of_another_model_is_refused(overflow):
    model, batches, calibration = overflow
    other = Other()
    opt = torch.optim.SGD(other.parameters(), lr=0.05)
    with pytest.raises(amp.CompileError, match="measured train.layer_norm #0 of module norm1 "
                       r"\(.*test_numerics.py:\d+\), which this model does not have"):
        amp.compile(other, nn.CrossEntropyLoss(), batches[0], optimizer=opt,
                    autocast="calibrated", calibration=calibration)


def test_options_are_checked(overflow):
    model, batches, calibration = overflow
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    with pytest.raises(ValueError, match="autocast='calibrated' needs calibration="):
        amp.compile(model, nn.CrossEntropyLoss(), batches[0], optimizer=opt,
                    autocast="calibrated")
    with pytest.raises(ValueError, match="calibration= is used with autocast='calibrated'"):
        amp.compile(model, nn.CrossEntropyLoss(), batches[0], optimizer=opt,
                    calibration=calibration)
    with pytest.raises(ValueError, match="autocast must be 'default' or 'calibrated'"):
        amp.compile(model, nn.CrossEntropyLoss(), batches[0], optimizer=opt, autocast="auto")
    with pytest.raises(ValueError, match="at least one batch"):
        amp.calibrate(model, nn.CrossEntropyLoss(), [])


def test_calibrate_leaves_the_model_unchanged():
    model = _block(overflow=False)
    before = copy.deepcopy(model.state_dict())
    amp.calibrate(model, nn.CrossEntropyLoss(), _batches(2))
    after = model.state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before)


class TwoLayers(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(32, 64)
        self.fc2 = nn.Linear(64, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(torch.relu(self.fc1(x)))


def test_an_op_that_outgrows_its_calibration_is_named_to_recalibrate():
    """Calibrated on the model as it was, fc1 stays in f16; once its weights
    have grown 100000x (as training can), its outputs overflow, and
    check_numerics' report says it measured less when calibrated. Inputs
    beyond f16's range overflow the cast of the input itself, which the
    report names as such."""
    torch.manual_seed(0)
    model = TwoLayers()
    batches = [(torch.randn(16, 32), torch.randint(0, 4, (16,))) for _ in range(2)]
    calibration = amp.calibrate(model, nn.CrossEntropyLoss(), batches)
    assert calibration.overflowing() == []
    fc1 = next(o for o in calibration.ops if o.module == "fc1")
    with torch.no_grad():
        model.fc1.weight.mul_(1e5)
    assert model.fc1.weight.abs().max() < 65504
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    step = amp.compile(model, nn.CrossEntropyLoss(), batches[0], optimizer=opt,
                       autocast="calibrated", calibration=calibration, check_numerics=True)
    report = step(*batches[0]).numerics
    assert report is not None and (report.module, report.stage) == ("fc1", "forward"), report
    assert report.calibrated == pytest.approx(max(fc1.output, fc1.inputs), rel=1e-6)
    assert "when calibrated: its range outgrew the calibration, calibrate again" in str(report)
    x, y = batches[1]
    cast = step(x * 1e5, y).numerics
    assert (cast.op, cast.argument, cast.value, cast.line) == ("train.cast", "input #0", "inf", 0)
    assert str(cast).startswith("step 1: input #0 became an inf when cast to the low type")


class Masked(nn.Module):
    """Causal self-attention written by hand, its mask -inf above the
    diagonal (a constant of the model)."""

    def __init__(self) -> None:
        super().__init__()
        self.q = nn.Linear(32, 32)
        self.head = nn.Linear(32, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q = self.q(x)
        mask = torch.full((16, 16), float("-inf")).triu(1)
        p = torch.softmax(q @ q.transpose(1, 2) + mask, -1)
        return self.head((p @ q).mean(1))


def test_a_mask_of_the_model_is_not_an_overflow(tmp_path):
    """The masked scores hold -inf already in f32: the calibration marks
    them, keeps nothing in f32 for them, and a saved and loaded calibration
    says so too; check_numerics reports nothing (the -inf is the model's
    own constant)."""
    torch.manual_seed(0)
    model = Masked()
    batches = [(torch.randn(8, 16, 32), torch.randint(0, 4, (8,))) for _ in range(2)]
    calibration = amp.calibrate(model, nn.CrossEntropyLoss(), batches)
    masked = next(o for o in calibration.ops if o.op == "train.add")
    assert masked.output == float("inf")
    assert calibration.overflowing() == []
    assert "not finite in f32" in calibration.report()
    path = str(tmp_path / "masked.json")
    calibration.save(path)
    assert amp.Calibration.load(path).overflowing() == []
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    step = amp.compile(model, nn.CrossEntropyLoss(), batches[0], optimizer=opt,
                       autocast="calibrated", calibration=amp.Calibration.load(path),
                       check_numerics=True)
    result = step(*batches[0])
    assert not result.skipped and result.numerics is None
