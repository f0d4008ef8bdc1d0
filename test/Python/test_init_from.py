"""amp-run --init-from with the model's own names: a PyTorch state_dict, or
Step.state_dict(), saved as safetensors seeds a command-line run of the
model amp.to_mlir wrote (its arguments carry the module paths)."""

import os
import subprocess

import pytest
import torch
import torch.nn as nn
from safetensors.torch import load_file, save_file

import amp
from amp import _importer
from models import Net, batches


def amp_run() -> str:
    return os.path.join(os.path.dirname(amp._api._amp_compile()), "amp-run")


def write_model(tmp_path, model) -> list:
    """Writes model.mlir; returns the parameter names in the step's order."""
    example = batches(1)[0]
    (tmp_path / "model.mlir").write_text(amp.to_mlir(model, nn.CrossEntropyLoss(), example))
    imported = _importer.import_model(model, nn.CrossEntropyLoss(), example)
    return [a.name for a in imported.arguments if a.kind == "param"], \
        [a.name for a in imported.arguments if a.kind == "state"]


def start(tmp_path, source, *flags):
    """amp-run for no steps from ``source``; the state it starts from."""
    out = tmp_path / "started.safetensors"
    run = subprocess.run([amp_run(), str(tmp_path / "model.mlir"), "--dataset=synthetic",
                          "--steps=0", f"--init-from={source}", f"--save={out}", *flags],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    return load_file(str(out))


def assert_buffers(started, model, states) -> None:
    """The run's batch-norm state tensors are the model's buffers."""
    buffers = dict(model.named_buffers())
    for k, name in enumerate(states):
        assert torch.equal(started[f"state.{k}"], buffers[name]), name


def test_pytorch_state_dict_seeds_an_o2_run(tmp_path):
    torch.manual_seed(0)
    model = Net()
    with torch.no_grad():  # statistics that are not the defaults
        model.bn.running_mean.uniform_(-1, 1)
        model.bn.running_var.uniform_(0.5, 2)
    params, states = write_model(tmp_path, model)
    # num_batches_tracked is int64: amp counts it itself; it is skipped.
    save_file(model.state_dict(), str(tmp_path / "model.safetensors"))
    started = start(tmp_path, tmp_path / "model.safetensors", "--opt-level=O2", "--dtype=f16")
    tensors = dict(model.named_parameters())
    masters = 0
    for k, name in enumerate(params):
        value = tensors[name].detach()
        got = started[f"param.{k}"]
        if got.dtype == torch.float16:
            # The O2 parameter is the f16 rounding, its master the value itself.
            assert torch.equal(got, value.half()), name
            assert torch.equal(started[f"master.{masters}"], value), name
            masters += 1
        else:  # batch norm's weight and bias stay f32 at O2
            assert torch.equal(got, value), name
    assert masters > 0
    assert_buffers(started, model, states)


def test_step_state_dict_seeds_an_o0_run_with_its_masters(tmp_path):
    torch.manual_seed(0)
    model = Net()
    params, states = write_model(tmp_path, model)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    step = amp.compile(model, nn.CrossEntropyLoss(), example_inputs=batches(1)[0],
                       optimizer=opt, opt_level="O2", dtype=torch.bfloat16)
    for x, y in batches(3):
        step(x, y)
    state = step.state_dict()
    save_file(state, str(tmp_path / "step.safetensors"))
    started = start(tmp_path, tmp_path / "step.safetensors", "--opt-level=O0")
    step.copy_to(model)  # the f32 masters, as PyTorch would continue from
    tensors = dict(model.named_parameters())
    for k, name in enumerate(params):
        assert started[f"param.{k}"].dtype == torch.float32
        assert torch.equal(started[f"param.{k}"], tensors[name].detach()), name
    assert_buffers(started, model, states)


def test_a_missing_tensor_is_named_and_nothing_is_written(tmp_path):
    torch.manual_seed(0)
    model = Net()
    write_model(tmp_path, model)
    state = model.state_dict()
    del state["fc.bias"], state["bn.running_var"]
    save_file(state, str(tmp_path / "partial.safetensors"))
    out = tmp_path / "x.safetensors"
    run = subprocess.run([amp_run(), str(tmp_path / "model.mlir"), "--dataset=synthetic",
                          "--steps=1", f"--init-from={tmp_path / 'partial.safetensors'}",
                          f"--save={out}"], capture_output=True, text=True)
    assert run.returncode == 1
    assert "partial.safetensors: has no tensor 'fc.bias', 'bn.running_var' (the model's " \
           "parameters and buffers by name)" in run.stderr
    assert not out.exists()


def test_a_tensor_of_another_type_is_named_as_such(tmp_path):
    torch.manual_seed(0)
    model = Net()
    write_model(tmp_path, model)
    save_file(model.double().state_dict(), str(tmp_path / "f64.safetensors"))
    run = subprocess.run([amp_run(), str(tmp_path / "model.mlir"), "--dataset=synthetic",
                          "--steps=1", f"--init-from={tmp_path / 'f64.safetensors'}"],
                         capture_output=True, text=True)
    assert run.returncode == 1
    assert "has no tensor 'conv.weight' (of a type amp does not read: F32, F16, BF16 or " \
           "I32)" in run.stderr


class CumulativeNet(nn.Module):
    """A batch norm with momentum=None: its count is the step's f32 state."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3, stride=3)
        self.bn = nn.BatchNorm2d(4, momentum=None)
        self.fc = nn.Linear(4 * 81, 10)

    def forward(self, x):
        return self.fc(torch.relu(self.bn(self.conv(x))).flatten(1))


def test_a_cumulative_batch_norm_count_comes_from_the_state_dict(tmp_path):
    """PyTorch's int64 num_batches_tracked seeds the f32 count amp keeps for a
    momentum=None batch norm (the average continues from it)."""
    torch.manual_seed(0)
    model = CumulativeNet()
    model.bn.num_batches_tracked.fill_(12345)
    params, states = write_model(tmp_path, model)
    assert states == ["bn.running_mean", "bn.running_var", "bn.num_batches_tracked"]
    save_file(model.state_dict(), str(tmp_path / "model.safetensors"))
    started = start(tmp_path, tmp_path / "model.safetensors")
    assert started["state.2"].dtype == torch.float32 and started["state.2"].item() == 12345


def test_a_model_of_zeros_is_refused_without_init_from(tmp_path):
    """amp.to_mlir writes every parameter as #train.init<zeros> (the weights
    live in PyTorch): amp-run refuses to train that network of zeros, naming
    --init-from, and trains once the model's weights are given."""
    model = Net()
    params, _ = write_model(tmp_path, model)
    run = subprocess.run([amp_run(), str(tmp_path / "model.mlir"), "--dataset=synthetic",
                          "--steps=1"], capture_output=True, text=True)
    assert run.returncode != 0
    assert "starts at zero" in run.stderr and "--init-from=FILE" in run.stderr, run.stderr
    weights = tmp_path / "weights.safetensors"
    save_file({k: v.contiguous() for k, v in model.state_dict().items()}, str(weights))
    started = start(tmp_path, weights)
    k = params.index("fc.weight")
    assert torch.equal(started[f"param.{k}"], model.fc.weight.detach())
